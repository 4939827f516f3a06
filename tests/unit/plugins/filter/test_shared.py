"""The shared filters (spec_violations, python_spec, proxy_env) and that the roles use them instead of pasted logic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.filter.shared import (
    FilterModule,
    in_container,
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


def test_filters_are_registered() -> None:
    assert set(FilterModule().filters()) == {"spec_violations", "python_spec", "proxy_env", "in_container"}


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
