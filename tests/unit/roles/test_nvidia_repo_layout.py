"""Render the NVIDIA repository, pin and runtime templates of the driver roles and compare them with
NVIDIA's published layout (cuda-keyring 1.1-1, NVIDIA/cuda-repo-management "GPG keys", the CUDA and
container-toolkit installation guides). The network repositories are not reachable from CI, so this is
the boundary the roles are tested at; the Debian non-free path is installed for real in Molecule.

The key file per distro and the driver branches each distribution carries are data (nvidia_repo and nvidia_driver
vars, each with its source); a test that compared them with a copy of themselves could not catch a wrong fact, so
there is none: Molecule's nvidia scenario installs Debian's branch from the archive, which checks that one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from ansible.plugins.filter.core import regex_replace, regex_search
from ansible.plugins.filter.urlsplit import split_url
from ansible_collections.gpulab.dlstack.plugins.filter.pipeline import os_id_filter

ROLES = Path(__file__).resolve().parents[3] / "roles"
NVIDIA_ROOT = "https://developer.download.nvidia.com/compute/cuda/repos"


def _env(role: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(ROLES / role / "templates")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
    )
    env.filters["regex_replace"] = regex_replace
    env.filters["gpulab.dlstack.os_id"] = os_id_filter
    env.filters["regex_search"] = regex_search
    env.filters["urlsplit"] = split_url
    return env


def _render(role: str, template: str, **variables: Any) -> str:
    return _env(role).get_template(template).render(ansible_managed="Ansible managed", **variables)


def _yaml(role: str, rel: str) -> Any:
    return yaml.safe_load((ROLES / role / rel).read_text())


def _expr(text: str, **variables: Any) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["regex_replace"] = regex_replace
    env.filters["gpulab.dlstack.os_id"] = os_id_filter
    return env.from_string(text).render(**variables).strip()


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (
            {
                "os_family": "Debian",
                "distribution": "Debian",
                "distribution_major_version": "12",
                "distribution_version": "12.8",
            },
            "debian12",
        ),
        (
            {
                "os_family": "Debian",
                "distribution": "Debian",
                "distribution_major_version": "13",
                "distribution_version": "13.1",
            },
            "debian13",
        ),
        (
            {
                "os_family": "Debian",
                "distribution": "Ubuntu",
                "distribution_major_version": "22",
                "distribution_version": "22.04",
            },
            "ubuntu2204",
        ),
        (
            {
                "os_family": "Debian",
                "distribution": "Ubuntu",
                "distribution_major_version": "24",
                "distribution_version": "24.04",
            },
            "ubuntu2404",
        ),
        (
            {
                "os_family": "RedHat",
                "distribution": "Rocky",
                "distribution_major_version": "9",
                "distribution_version": "9.4",
            },
            "rhel9",
        ),
    ],
)
def test_detected_distro_matches_nvidia_directory_names(facts: dict[str, str], expected: str) -> None:
    expression = _yaml("nvidia_repo", "vars/main.yml")["__nvidia_repo_detected_distro"]
    assert _expr(expression, ansible_facts=facts) == expected


def test_arm64_servers_use_the_sbsa_directory() -> None:
    assert _yaml("nvidia_repo", "vars/main.yml")["__nvidia_repo_arch_map"] == {"x86_64": "x86_64", "aarch64": "sbsa"}


def test_defaults_keep_nvidia_keyring_path_and_root() -> None:
    defaults = _yaml("nvidia_repo", "defaults/main.yml")
    assert defaults["nvidia_repo_root_url"] == NVIDIA_ROOT
    assert defaults["nvidia_repo_keyring_path"] == "/usr/share/keyrings/cuda-archive-keyring.gpg"


@pytest.mark.parametrize("distro", ["debian12", "debian13", "ubuntu2204", "ubuntu2404"])
def test_apt_source_line_is_the_one_cuda_keyring_writes(distro: str) -> None:
    url = f"{NVIDIA_ROOT}/{distro}/x86_64/"
    text = _render(
        "nvidia_repo",
        "cuda.list.j2",
        nvidia_repo_keyring_path="/usr/share/keyrings/cuda-archive-keyring.gpg",
        nvidia_repo_layout={"url": url},
    )
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == [f"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] {url} /"]


def test_apt_source_follows_a_mirror() -> None:
    text = _render(
        "nvidia_repo",
        "cuda.list.j2",
        nvidia_repo_keyring_path="/usr/share/keyrings/cuda-archive-keyring.gpg",
        nvidia_repo_layout={"url": "http://mirror.internal/cuda/debian12/x86_64/"},
    )
    assert "] http://mirror.internal/cuda/debian12/x86_64/ /" in text


def test_pin_file_pins_the_repository_host_at_600() -> None:
    text = _render(
        "nvidia_repo",
        "cuda-repository-pin.j2",
        nvidia_repo_pin_priority=600,
        nvidia_repo_layout={"url": f"{NVIDIA_ROOT}/debian12/x86_64/"},
    )
    assert "Package: *\n" in text
    assert 'Pin: origin "developer.download.nvidia.com"\n' in text
    assert "Pin-Priority: 600\n" in text


def test_dnf_repo_file_matches_cuda_rhel9_repo() -> None:
    text = _render(
        "nvidia_repo",
        "cuda.repo.j2",
        nvidia_repo_rpm_key_path="/etc/pki/rpm-gpg/RPM-GPG-KEY-NVIDIA-CUDA",
        nvidia_repo_layout={"distro": "rhel9", "arch": "x86_64", "url": f"{NVIDIA_ROOT}/rhel9/x86_64/"},
    )
    assert "[cuda-rhel9-x86_64]\n" in text
    assert "name=cuda-rhel9-x86_64\n" in text
    assert f"baseurl={NVIDIA_ROOT}/rhel9/x86_64\n" in text
    assert "gpgcheck=1\n" in text
    assert "enabled=1\n" in text


def _packages(flavour: str, source: str, kind: str, branch: str) -> list[str]:
    table = _yaml("nvidia_driver", "vars/main.yml")["__nvidia_driver_package_table"]
    return [name.replace("{branch}", branch) for name in table[flavour][source][kind]]


@pytest.mark.parametrize(
    ("flavour", "source", "kind", "branch", "expected"),
    [
        ("debian", "nvidia", "proprietary", "550", ["cuda-drivers-550"]),
        ("debian", "nvidia", "open", "580", ["nvidia-kernel-open-dkms", "cuda-drivers-580"]),
        ("ubuntu", "nvidia", "proprietary", "550", ["cuda-drivers-550"]),
        ("ubuntu", "nvidia", "open", "550", ["nvidia-driver-550-open", "cuda-drivers-550"]),
        ("ubuntu", "distro", "open", "570", ["nvidia-headless-570-server-open", "nvidia-utils-570-server"]),
        ("ubuntu", "distro", "userspace", "535", ["nvidia-utils-535-server", "libnvidia-compute-535-server"]),
        ("el", "nvidia", "proprietary", "550", ["@nvidia-driver:550-dkms"]),
        ("el", "nvidia", "open", "565", ["@nvidia-driver:565-open"]),
        ("debian", "distro", "userspace", "535", ["nvidia-smi", "libcuda1", "libnvidia-ml1"]),
    ],
)
def test_driver_package_names(flavour: str, source: str, kind: str, branch: str, expected: list[str]) -> None:
    assert _packages(flavour, source, kind, branch) == expected


def test_debian_open_distro_packages_use_debian_names() -> None:
    names = _packages("debian", "distro", "open", "550")
    assert "nvidia-open-kernel-dkms" in names
    assert "nvidia-kernel-dkms" not in names


def _pref(version: str, branch: str) -> str:
    return _render(
        "nvidia_driver",
        "dlstack-nvidia-driver.pref.j2",
        nvidia_driver_version=version,
        __nvidia_driver_branch_effective=branch,
        __nvidia_driver_apt_name_patterns=_yaml("nvidia_driver", "vars/main.yml")["__nvidia_driver_apt_name_patterns"],
    )


def _pin_regex(text: str) -> re.Pattern[str]:
    """The pin's globs as one regex. Globs, not an apt regex: apt matches a regex pin against every package on every
    run (about 6 s of CPU per apt call on Debian 12 with non-free), globs cost a fraction of that."""
    match = re.search(r"^Package: ([^/].*)$", text, re.MULTILINE)
    assert match is not None
    globs = match.group(1).split()
    assert all(g.endswith("*") and "*" not in g[:-1] for g in globs), globs
    return re.compile("^(" + "|".join(re.escape(g[:-1]) for g in globs) + ")")


def test_branch_pin_covers_driver_packages_only() -> None:
    text = _pref("", "535")
    assert "Pin: version 535.*\n" in text
    assert "Pin-Priority: 1001\n" in text
    pattern = _pin_regex(text)
    for name in ["nvidia-driver", "nvidia-smi", "libcuda1", "libnvidia-ml1", "firmware-nvidia-gsp", "cuda-drivers-535"]:
        assert pattern.match(name), name
    for name in ["cuda-toolkit-12-4", "libcudnn9-cuda-12", "linux-headers-amd64", "dkms"]:
        assert not pattern.match(name), name


def test_exact_version_pin_keeps_the_revision_open() -> None:
    assert "Pin: version 535.261.03-*\n" in _pref("535.261.03", "535")


def test_unattended_upgrades_blacklist_names_driver_packages() -> None:
    patterns = _yaml("nvidia_driver", "vars/main.yml")["__nvidia_driver_unattended_blacklist"]
    text = _render("nvidia_driver", "51dlstack-nvidia.j2", __nvidia_driver_unattended_blacklist=patterns)
    assert text.count("Unattended-Upgrade::Package-Blacklist {") == 1
    entries = re.findall(r'^\s+"(\^[^"]+)";$', text, re.MULTILINE)
    assert entries == ["^" + p for p in patterns]
    assert text.rstrip().endswith("};")


def _components_rules() -> tuple[dict[str, Any], dict[str, Any]]:
    tasks = _yaml("nvidia_driver", "tasks/repo_distro.yml")
    deb822 = next(t for t in tasks if t["name"].startswith("Add the driver components to the deb822"))
    oneline = next(t for t in tasks if t["name"].startswith("Add the driver components to the one-line"))
    return deb822, oneline


def _apply(task: dict[str, Any], text: str, components: list[str], release: str = "bookworm") -> str:
    for item in components:
        context: dict[str, Any] = {"item": item, "ansible_facts": {"distribution_release": release}}
        for name, value in task.get("vars", {}).items():
            context[name] = _expr(value, **context)
        rendered = _expr(task["ansible.builtin.replace"]["regexp"], **context)
        replacement = _expr(task["ansible.builtin.replace"]["replace"], **context)
        text = re.sub(rendered, replacement, text, flags=re.MULTILINE)
    return text


DEB822 = """Types: deb
URIs: http://mirror.example.invalid/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.invalid/debian-security
Suites: bookworm-security
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def test_deb822_components_are_added_without_touching_mirrors() -> None:
    task = _components_rules()[0]
    wanted = ["contrib", "non-free", "non-free-firmware"]
    once = _apply(task, DEB822, wanted)
    assert once.count("Components: main contrib non-free non-free-firmware\n") == 1
    assert once.count("Components: main non-free-firmware contrib non-free\n") == 1
    assert [line for line in once.splitlines() if not line.startswith("Components:")] == [
        line for line in DEB822.splitlines() if not line.startswith("Components:")
    ]
    assert _apply(task, once, wanted) == once


SOURCES_LIST = """deb http://mirror.example.invalid/debian bookworm main
deb [arch=amd64] http://mirror.example.invalid/debian-security bookworm-security main contrib
deb https://download.example.invalid/other stable main
"""


def test_one_line_components_are_added_to_the_release_lines_only() -> None:
    task = _components_rules()[1]
    wanted = ["contrib", "non-free", "non-free-firmware"]
    once = _apply(task, SOURCES_LIST, wanted)
    lines = once.splitlines()
    assert lines[0] == "deb http://mirror.example.invalid/debian bookworm main contrib non-free non-free-firmware"
    assert lines[1] == (
        "deb [arch=amd64] http://mirror.example.invalid/debian-security bookworm-security main contrib"
        " non-free non-free-firmware"
    )
    assert lines[2] == "deb https://download.example.invalid/other stable main"
    assert _apply(task, once, wanted) == once


def test_container_toolkit_apt_source_matches_nvidia_layout() -> None:
    text = _render(
        "nvidia_container_toolkit",
        "nvidia-container-toolkit.list.j2",
        nvidia_container_toolkit_keyring_path="/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg",
        nvidia_container_toolkit_repo_url="https://nvidia.github.io/libnvidia-container/stable/",
    )
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == [
        "deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] "
        "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /"
    ]


def test_container_toolkit_dnf_repo_matches_nvidia_layout() -> None:
    text = _render(
        "nvidia_container_toolkit",
        "nvidia-container-toolkit.repo.j2",
        nvidia_container_toolkit_repo_url="https://nvidia.github.io/libnvidia-container/stable",
        nvidia_container_toolkit_keyring_url="https://nvidia.github.io/libnvidia-container/gpgkey",
        nvidia_container_toolkit_keyring_src="",
        __nvidia_container_toolkit_stage_dir="/var/cache/dlstack/nvidia_container_toolkit",
    )
    assert "[nvidia-container-toolkit]\n" in text
    assert "baseurl=https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch\n" in text
    assert "repo_gpgcheck=1\n" in text
    assert "\ngpgcheck=1\n" in text  # packages checked too, not only the signed metadata (#14)
    assert "gpgkey=https://nvidia.github.io/libnvidia-container/gpgkey\n" in text


def test_container_toolkit_packages_install_in_dependency_order() -> None:
    packages = _yaml("nvidia_container_toolkit", "vars/main.yml")["__nvidia_container_toolkit_packages"]
    assert packages == [
        "libnvidia-container1",
        "libnvidia-container-tools",
        "nvidia-container-toolkit-base",
        "nvidia-container-toolkit",
    ]
