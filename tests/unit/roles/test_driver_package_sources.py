"""Every driver package name the nvidia_driver role installs, per distribution, against a recorded public list.

Only Debian installs in the test bed; Ubuntu's and EL's names are checked here against what their public
package lists and NVIDIA's guides print (tests/unit/fixtures/packages/, each file names its source).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, List

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "nvidia_driver"
RECORDED = ROOT / "tests" / "unit" / "fixtures" / "packages"


def _vars(name: str) -> Any:
    return yaml.safe_load((ROLE / "vars" / name).read_text())


TABLE = _vars("main.yml")["__nvidia_driver_package_table"]
OPEN_MIN = int(_vars("main.yml")["__nvidia_driver_open_min_branch"])


def _record(name: str) -> str:
    return (RECORDED / name).read_text()


def _listed(text: str, package: str) -> bool:
    """The name as a whole package name in the recorded text (not a prefix of a longer one)."""
    return re.search(r"(?<![\w.+-])" + re.escape(package) + r"(?![\w.+-])", text) is not None


def _names(flavour: str, kind: str, branch: str) -> List[str]:
    return [n.replace("{branch}", branch) for n in TABLE[flavour]["distro"][kind]]


@pytest.mark.parametrize(
    ("vars_file", "record"), [("Debian-12.yml", "debian-bookworm.txt"), ("Debian-13.yml", "debian-trixie.txt")]
)
def test_debian_names_are_in_the_archive_at_the_branch_offered(vars_file: str, record: str) -> None:
    text = _record(record)
    branches = _vars(vars_file)["__nvidia_driver_distro_branches"]
    assert len(branches) == 1
    for kind in ("proprietary", "open", "userspace"):
        for name in _names("debian", kind, branches[0]):
            block = re.search(r"Package: " + re.escape(name) + r"\n(?:Source: .*\n)?Version: (\S+)", text)
            assert block, f"{name} is not in {record}"
            if name != "nvidia-persistenced":  # its own source package, versioned apart from the driver
                assert block.group(1).startswith(branches[0] + "."), (name, block.group(1))
    persistenced = _vars("main.yml")["__nvidia_driver_persistenced_package"]["debian"]
    assert _listed(text, persistenced)


# Ubuntu release -> its record and the vars file; each branch offered must have a -server driver there.
UBUNTU = [("Ubuntu-22.yml", "ubuntu-jammy.txt"), ("Ubuntu-24.yml", "ubuntu-noble.txt")]


@pytest.mark.parametrize(("vars_file", "record"), UBUNTU)
def test_ubuntu_branches_have_a_server_driver_in_that_release(vars_file: str, record: str) -> None:
    text = _record(record)
    for branch in _vars(vars_file)["__nvidia_driver_distro_branches"]:
        server = [
            f"nvidia-headless-{branch}-server",
            f"nvidia-graphics-drivers-{branch}-server",
            f"nvidia-utils-{branch}-server",
            f"libnvidia-compute-{branch}-server",
        ]
        assert any(_listed(text, name) for name in server), f"no {branch}-server driver in {record}"
        # A transitional package is no branch to pin.
        assert not re.search(rf"nvidia-headless-{branch}-server \(.*\n?.*transitional", text), branch


def test_ubuntu_uses_the_headless_server_packages() -> None:
    """Servers get the headless -server metapackage (no X stack), its utils and the compute library."""
    both = _record("ubuntu-jammy.txt") + _record("ubuntu-noble.txt")
    for kind in ("proprietary", "open", "userspace"):
        for pattern in TABLE["ubuntu"]["distro"][kind]:
            assert pattern.endswith(("-server", "-server-open")), pattern
            # The name pattern, for some branch, as the public lists print it.
            regex = re.escape(pattern).replace(re.escape("{branch}"), r"[0-9]{3}")
            assert re.search(r"(?<![\w.+-])" + regex + r"(?![\w.+-])", both), pattern
    assert not any("nvidia-driver-" in n for k in ("proprietary", "open") for n in TABLE["ubuntu"]["distro"][k])


def test_ubuntu_jammy_headless_names_per_branch() -> None:
    """jammy's recorded nvidia-headless list is complete up to 570: each branch's names are in it."""
    text = _record("ubuntu-jammy.txt")
    for branch in [b for b in _vars("Ubuntu-22.yml")["__nvidia_driver_distro_branches"] if int(b) <= 570]:
        kinds = ["proprietary"] + (["open"] if int(branch) >= OPEN_MIN else [])
        for kind in kinds:
            headless = _names("ubuntu", kind, branch)[0]
            assert _listed(text, headless), headless


def test_el_nvidia_streams_are_the_published_ones() -> None:
    text = _record("el-nvidia-driver-streams.txt")
    proprietary = TABLE["el"]["nvidia"]["proprietary"]
    open_ = TABLE["el"]["nvidia"]["open"]
    assert proprietary == ["@nvidia-driver:{branch}-dkms"] and open_ == ["@nvidia-driver:{branch}-open"]
    # The stream names: XXX-dkms (proprietary, DKMS), XXX-open (open modules, 515+), as NVIDIA documents them.
    assert "XXX-dkms" in text and "XXX-open" in text and "nvidia-driver:580-open" in text
    assert "515 and newer" in text and OPEN_MIN == 515
    # The role builds modules with DKMS; NVIDIA's precompiled streams (XXX, latest) are not used.
    assert not any(n.endswith(":{branch}") for n in proprietary + open_)


def test_el_rpmfusion_names() -> None:
    text = _record("el-rpmfusion.txt")
    for name in TABLE["el"]["distro"]["proprietary"]:
        assert _listed(text, name), name


def test_every_record_has_a_source() -> None:
    table = _record("SOURCES.md")
    listed = set(re.findall(r"^\| ([\w.-]+\.txt) \|", table, re.MULTILINE))
    assert listed == {p.name for p in RECORDED.glob("*.txt")}
    for name in listed:
        assert _record(name).startswith("# "), f"{name} does not say where it comes from"
