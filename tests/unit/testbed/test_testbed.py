"""The test bed's reading of the host's apt configuration and the images it writes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("testbed", Path(__file__).parents[2] / "testbed" / "testbed.py")
assert _SPEC and _SPEC.loader
testbed = importlib.util.module_from_spec(_SPEC)
sys.modules["testbed"] = testbed
_SPEC.loader.exec_module(testbed)

DEB822 = """Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def _apt(tmp_path: Path, sources_list: str = "", parts: dict[str, str] | None = None) -> Path:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(sources_list)
    for name, text in (parts or {}).items():
        (tmp_path / "sources.list.d" / name).write_text(text)
    return tmp_path


def test_deb822_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DLSTACK_TESTBED_MIRROR", raising=False)
    apt = _apt(tmp_path, parts={"debian.sources": DEB822})
    assert testbed.host_debian_mirrors(apt) == ("http://mirror.example/debian", "http://mirror.example/debian-security")


def test_one_line_sources_with_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DLSTACK_TESTBED_MIRROR", raising=False)
    apt = _apt(tmp_path, "deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian/ bookworm main\n")
    assert testbed.host_debian_mirrors(apt) == ("http://m.example/debian", None)


def test_disabled_files_are_ignored_and_override_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    apt = _apt(tmp_path, parts={"other.list.disabled": "deb http://wrong.example/debian bookworm main\n"})
    monkeypatch.delenv("DLSTACK_TESTBED_MIRROR", raising=False)
    with pytest.raises(testbed.TestbedError, match="DLSTACK_TESTBED_MIRROR"):
        testbed.host_debian_mirrors(apt)
    monkeypatch.setenv("DLSTACK_TESTBED_MIRROR", "http://override.example/debian")
    assert testbed.host_debian_mirrors(apt)[0] == "http://override.example/debian"


def test_image_sources_file_uses_the_suite_and_both_archives() -> None:
    text = testbed.sources_file(
        testbed.DISTROS["debian13"], "http://m.example/debian", "http://m.example/debian-security"
    )
    assert "Suites: trixie trixie-updates" in text
    assert "Suites: trixie-security" in text
    assert "URIs: http://m.example/debian\n" in text


def test_recipe_hash_changes_with_the_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    before = testbed.recipe_hash(testbed.DISTROS["debian12"])
    assert before != testbed.recipe_hash(testbed.DISTROS["debian13"])
    monkeypatch.setattr(testbed, "PACKAGES", [*testbed.PACKAGES, "curl"])
    assert testbed.recipe_hash(testbed.DISTROS["debian12"]) != before


def test_images_point_pip_and_uv_at_the_package_proxy() -> None:
    config = testbed.package_index_config()
    assert f"index-url = {testbed.PROXY_URL}/simple/" in config["etc/pip.conf"].splitlines()
    assert f'url = "{testbed.PROXY_URL}/simple/"' in config["etc/uv/uv.toml"]


def test_proxy_summary_counts_hits_and_downloads_after_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(testbed, "PROXY_DIR", tmp_path)
    lines = [
        {"kind": "pip-file", "hit": False, "bytes": 2**20, "what": "old.whl"},
        {"kind": "pip-file", "hit": True, "bytes": 3 * 2**20, "what": "a.whl"},
        {"kind": "pip-file", "hit": False, "bytes": 2**20, "what": "b.whl"},
        {"kind": "apt", "hit": True, "bytes": 2**20, "what": "c.deb"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (tmp_path / "access.jsonl").write_text(text)
    offset = len(json.dumps(lines[0])) + 1
    assert testbed.proxy_summary(offset) == [
        "proxy pip-file: served from the host cache 1 (3.0 MiB); downloaded 1 (1.0 MiB)",
        "proxy apt: served from the host cache 1 (1.0 MiB); downloaded 0 (0.0 MiB)",
    ]
