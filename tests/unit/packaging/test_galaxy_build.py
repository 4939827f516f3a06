"""The built collection carries the collection, not the development tree around it."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = (".nox/", ".cache/", ".ansible/", "collections/", "molecule/", "tests/", ".git/", "reports/", "__pycache__")


@pytest.mark.skipif(shutil.which("ansible-galaxy") is None, reason="ansible-galaxy is not on PATH")
def test_build_leaves_out_caches_tests_and_environments(tmp_path: Path) -> None:
    subprocess.run(
        ["ansible-galaxy", "collection", "build", "--output-path", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    (tarball,) = tmp_path.glob("gpulab-dlstack-*.tar.gz")
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
        links = [m.name for m in tar.getmembers() if m.issym() or m.islnk()]
    assert "galaxy.yml" not in names
    assert "MANIFEST.json" in names
    assert any(n.startswith("plugins/modules/") for n in names)
    assert any(n.startswith("roles/preflight/") for n in names)
    leaked = [n for n in names if any(n.startswith(p) or f"/{p}" in f"/{n}/" for p in FORBIDDEN)]
    assert leaked == []
    assert links == []
