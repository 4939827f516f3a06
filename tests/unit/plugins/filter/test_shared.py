"""The shared filters (spec_violations, python_spec, proxy_env, carries_credentials, in_container) and that the roles
use them instead of pasted logic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.filter.shared import (
    FilterModule,
    carries_credentials,
    in_container,
    os_vars_files,
    proxy_env,
    python_spec,
    spec_violations,
)

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(
    ("version", "spec", "violated"),
    [
        ("3.11", "==3.11", []),
        ("3.12", "==3.11", ["==3.11"]),
        ("3.11", "3.11", []),
        ("3.13", ">=3.9,<=3.12", ["<=3.12"]),
        ("3.8", ">=3.9,<=3.12", [">=3.9"]),
        ("2.0.2", ">=1.26.0,<2.2", []),
        ("2.2.0", ">=1.26.0,<2.2", ["<2.2"]),
        ("1.26.4", "~=1.26.0", []),
        ("1.27.0", "~=1.26.0", ["~=1.26.0"]),
        ("2.1", "~=2.0", []),
        ("1.26.4", "==1.26.*", []),
        ("1.27.0", "==1.26.*", ["==1.26.*"]),
        ("1.26.4", "!=1.26.*", ["!=1.26.*"]),
        ("2.0.0rc1", ">=1.26", []),
        ("1.26", ">=1.26, <2 ,", []),
        ("1.26", ">=banana", [">=banana"]),
        ("1.26", "", []),
    ],
)
def test_spec_violations(version: str, spec: str, violated: list[str]) -> None:
    assert spec_violations(version, spec) == violated


def test_spec_violations_refuses_a_non_version() -> None:
    with pytest.raises(AnsibleFilterError, match="not a version"):
        spec_violations("three", ">=3.9")


@pytest.mark.parametrize(
    ("raw", "spec"),
    [("3.11", "==3.11"), ("3.10-3.13", ">=3.10,<=3.13"), ("3.9 - 3.12", ">=3.9,<=3.12"), (">=3.9", ">=3.9"), ("", "")],
)
def test_python_spec(raw: str, spec: str) -> None:
    assert python_spec(raw) == spec


def test_proxy_env_sets_both_spellings_and_leaves_out_unset_ones() -> None:
    assert proxy_env("", "", "") == {}
    assert proxy_env("http://p:3128", "", "localhost,.lab") == {
        "http_proxy": "http://p:3128",
        "HTTP_PROXY": "http://p:3128",
        "no_proxy": "localhost,.lab",
        "NO_PROXY": "localhost,.lab",
    }
    assert proxy_env(None, "http://s:3128") == {"https_proxy": "http://s:3128", "HTTPS_PROXY": "http://s:3128"}


@pytest.mark.parametrize(
    ("proxy", "expected"),
    [
        ("http://user:secret@proxy.lab:3128", True),
        ("https://user@proxy.lab", True),
        ("http://:token@proxy.lab:3128/", True),
        ("user:secret@proxy.lab:3128", True),  # no scheme: what tools read as host:port still names a user
        ("http://user%40corp:p%40ss@proxy.lab:3128", True),
        ("http://user%3Asecret%40proxy.lab:3128", True),  # the @ percent-encoded
        ("http%3A%2F%2Fuser%3Asecret%40proxy.lab%3A3128", True),  # the whole URL percent-encoded
        ("http%253A%252F%252Fuser%253Asecret%2540proxy.lab", True),  # encoded twice
        ("http://user%2Fx:secret@proxy.lab", True),  # an encoded / in the user name does not end the authority
        ("http://proxy.lab:3128", False),
        ("http://proxy.lab:3128/path@x", False),
        ("http://proxy.lab:3128/?who=a@b", False),
        ("http://proxy.lab:3128#a@b", False),
        ("localhost,127.0.0.1,.lab", False),
        ("", False),
        (None, False),
    ],
)
def test_carries_credentials_of_one_url(proxy: object, expected: bool) -> None:
    assert carries_credentials(proxy) is expected


def test_carries_credentials_of_an_environment() -> None:
    assert carries_credentials({}) is False
    assert carries_credentials(proxy_env("http://proxy.lab:3128", "http://proxy.lab:3128", "localhost")) is False
    assert carries_credentials(proxy_env("", "http://u:p@proxy.lab:3128")) is True
    assert carries_credentials({"GIT_HTTP_LOW_SPEED_TIME": 600, "http_proxy": "http://proxy.lab"}) is False
    assert carries_credentials({"x": None, "y": ["http://u:p@h"], "https_proxy": "http://u:p@h"}) is True
    assert carries_credentials(["http://proxy.lab", "http://u:p@h"]) is True
    assert carries_credentials(b"http://u:p@h") is True


def test_carries_credentials_refuses_what_is_no_proxy_setting() -> None:
    with pytest.raises(AnsibleFilterError, match="expects a proxy environment"):
        carries_credentials(3128)


def test_filters_are_registered() -> None:
    assert set(FilterModule().filters()) == {
        "spec_violations",
        "python_spec",
        "proxy_env",
        "carries_credentials",
        "in_container",
        "os_vars_files",
    }


def _role_yaml() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "roles").rglob("*.yml"))}


def test_no_role_builds_the_proxy_environment_by_hand() -> None:
    pasted = [name for name, text in _role_yaml().items() if re.search(r"['\"]https?_proxy['\"]\s*:", text)]
    assert pasted == [], "use gpulab.dlstack.proxy_env"


def test_every_role_that_downloads_honours_the_proxy() -> None:
    roles = ("bazel", "mirror", "tensorflow_build", "python_env", "tensorflow", "cuda_toolkit", "cudnn", "tensorrt")
    files = _role_yaml()
    for role in roles:
        assert "gpulab.dlstack.proxy_env" in files[f"roles/{role}/vars/main.yml"], role
        tasks = "\n".join(t for n, t in files.items() if n.startswith(f"roles/{role}/tasks/"))
        assert re.search(rf"environment:.*__{role}_(proxy|pip|uv)_env|combine\(__{role}_proxy_env\)", tasks), role


def test_no_role_evaluates_version_specifiers_in_jinja() -> None:
    pasted = [name for name, text in _role_yaml().items() if "version_type='pep440'" in text]
    assert pasted == [], "use gpulab.dlstack.spec_violations"


def _stats(*exists: bool) -> dict[str, list[dict[str, dict[str, bool]]]]:
    return {"results": [{"stat": {"exists": e}} for e in exists]}


@pytest.mark.parametrize(
    ("facts", "markers", "expected"),
    [
        ({"virtualization_role": "guest", "virtualization_type": "docker"}, None, True),
        ({"virtualization_role": "guest", "virtualization_type": "systemd-nspawn"}, None, True),
        ({"virtualization_role": "host", "virtualization_type": "docker"}, None, False),
        ({"virtualization_role": "guest", "virtualization_type": "kvm"}, _stats(False, False), False),
        ({"virtualization_role": "guest", "virtualization_type": "kvm"}, _stats(False, True), True),
        ({}, _stats(True, False), True),
        ({}, {"skipped": True}, False),
        # one find over the markers' folders (preflight): only a listed marker path counts
        ({}, {"files": [{"path": "/run/.containerenv"}]}, True),
        ({}, {"files": [{"path": "/.containerenv"}]}, False),
        ({}, {"files": []}, False),
    ],
)
def test_in_container(facts: dict[str, str], markers: object, expected: bool) -> None:
    assert in_container(facts, markers) is expected


def test_container_markers_lookup_is_gpu_infos_list() -> None:
    from ansible_collections.gpulab.dlstack.plugins.lookup.container_markers import LookupModule  # noqa: PLC0415
    from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import CONTAINER_MARKERS  # noqa: PLC0415

    assert LookupModule().run([]) == list(CONTAINER_MARKERS) == ["/.dockerenv", "/run/.containerenv"]


def test_no_role_keeps_its_own_container_detection() -> None:
    pasted = [
        name
        for name, text in _role_yaml().items()
        if "/.dockerenv" in text or re.search(r"virtualization_type'\]\s*(\|[^}]*)?\s*in\b", text)
    ]
    assert pasted == [], "use query('gpulab.dlstack.container_markers') and the gpulab.dlstack.in_container filter"


@pytest.mark.parametrize(
    ("facts", "names"),
    [
        (
            {"distribution": "Debian", "os_family": "Debian", "distribution_major_version": "12"},
            ["Debian-12.yml", "Debian.yml", "default.yml"],
        ),
        (
            {"distribution": "Ubuntu", "os_family": "Debian", "distribution_major_version": "22"},
            ["Ubuntu-22.yml", "Debian-22.yml", "Ubuntu.yml", "Debian.yml", "default.yml"],
        ),
        (
            {"distribution": "Rocky", "os_family": "RedHat", "distribution_major_version": "9"},
            ["Rocky-9.yml", "RedHat-9.yml", "Rocky.yml", "RedHat.yml", "default.yml"],
        ),
        ({"distribution": "Archlinux", "os_family": "Archlinux"}, ["Archlinux.yml", "default.yml"]),
        ({}, ["default.yml"]),
    ],
)
def test_os_vars_files(facts: dict[str, str], names: list[str]) -> None:
    assert os_vars_files(facts) == names
    assert os_vars_files(facts, "/roles/x/vars/") == [f"/roles/x/vars/{n}" for n in names]


def test_os_vars_files_refuses_what_is_not_facts() -> None:
    with pytest.raises(AnsibleFilterError, match="expects ansible_facts"):
        os_vars_files("Debian")


def test_no_role_keeps_its_own_per_os_search_order() -> None:
    pasted = [name for name, text in _role_yaml().items() if "distribution_major_version'] }}.yml" in text]
    assert pasted == [], "use gpulab.dlstack.os_vars_files"
    users = [name for name, text in _role_yaml().items() if "gpulab.dlstack.os_vars_files(role_path ~ '/vars')" in text]
    assert len(users) == 8, users


@pytest.mark.parametrize("role", sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/vars/default.yml")))
def test_every_per_os_file_of_a_role_has_the_keys_of_its_default(role: str) -> None:
    """first_found loads one file: a key missing from it would be undefined on that OS."""
    folder = ROOT / "roles" / role / "vars"
    keys = set(yaml.safe_load((folder / "default.yml").read_text()))
    for path in sorted(folder.glob("*.yml")):
        if path.name != "main.yml":
            assert set(yaml.safe_load(path.read_text())) == keys, path.name
