"""`--check` of the python_env role on a fresh host, with each installer.

A real run of the role (ansible-playbook --check, local connection) against an empty prefix under the test's
temporary directory: nothing of it exists yet, which is the fresh host. It once failed with uv on an undefined
register (the uv tool stat read its own result in its condition). The OS package step is switched off so the
run needs no root; every other task of the role runs as on a host.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
            "ANSIBLE_CACHE_PLUGIN": "memory",
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
            "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-tmp"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_STRATEGY": "linear",
        }
    )
    return env


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_check_mode_on_a_fresh_host(tmp_path: Path, installer: str) -> None:
    prefix = tmp_path / "prefix"
    playbook = tmp_path / "check.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "python_env in check mode",
                    "hosts": "all",
                    "gather_facts": True,
                    "roles": [{"role": "gpulab.dlstack.python_env"}],
                }
            ]
        )
    )
    extra = {
        "dlstack_prefix": str(prefix),
        "dlstack_state_dir": str(tmp_path / "state"),
        "python_env_installer": installer,
        "python_env_os_packages_enabled": False,
        "python_env_python_search_paths": [str(Path(sys.executable).parent), "/usr/bin", "/usr/local/bin"],
        "python_env_environments": [{"name": "checked", "packages": ["six"]}],
    }
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(extra))
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-e",
            f"@{tmp_path / 'vars.yml'}",
            "--check",
            str(playbook),
        ],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "failed=0" in output, output[-4000:]
    # The role planned the environment (check mode reports the venv it would create) and wrote nothing.
    assert "Create venv checked" in output
    assert not prefix.exists(), f"--check created {prefix}"
