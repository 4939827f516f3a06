"""The one repository-key flow (common's keyring.yml, used by nvidia_repo and nvidia_container_toolkit), run for
real on this machine against a temporary folder: an armored key is dearmored with gpg, a binary one copied, a
second run changes nothing, and --check on a fresh folder writes nothing.

The key is any armored data (gpg --enarmor): --dearmor only removes the armor, which is what the flow relies on.
The apt step that installs gpg is skipped (no facts gathered), so the run needs no root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed on this machine")


def _run(tmp_path: Path, key: Path, armored: bool, *extra: str) -> tuple[str, int]:
    playbook = tmp_path / "keyring.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Repository key",
                    "hosts": "all",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Keyring",
                            "ansible.builtin.include_role": {"name": "gpulab.dlstack.common", "tasks_from": "keyring"},
                            "vars": {
                                "common_keyring_url": "",
                                "common_keyring_src": str(key),
                                "common_keyring_stage": str(tmp_path / "stage" / key.name),
                                "common_keyring_path": str(tmp_path / "keyrings" / "repo.gpg"),
                                "common_keyring_armored": armored,
                                "common_keyring_timeout": 5,
                            },
                        },
                        {"name": "Report", "ansible.builtin.debug": {"msg": "changed={{ __common_keyring_changed }}"}},
                    ],
                }
            ]
        )
    )
    (tmp_path / "keyrings").mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
            "ANSIBLE_CACHE_PLUGIN": "memory",
            "ANSIBLE_NOCOLOR": "1",
            "GNUPGHOME": str(tmp_path / "gnupg"),
        }
    )
    (tmp_path / "gnupg").mkdir(mode=0o700, exist_ok=True)
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            *extra,
            str(playbook),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    changed = re.search(r"localhost\s*:\s*ok=\d+\s+changed=(\d+)", output)
    assert changed is not None, output[-3000:]
    return output, int(changed.group(1))


def test_armored_key_becomes_the_binary_keyring_once(tmp_path: Path) -> None:
    data = os.urandom(300)
    (tmp_path / "key.bin").write_bytes(data)
    subprocess.run(
        ["gpg", "--batch", "--yes", "--enarmor", "--output", str(tmp_path / "key.asc"), str(tmp_path / "key.bin")],
        check=True,
        capture_output=True,
        env={**os.environ, "GNUPGHOME": str(tmp_path)},
    )
    output, changed = _run(tmp_path, tmp_path / "key.asc", True)
    assert changed >= 2 and "changed=True" in output
    assert (tmp_path / "keyrings" / "repo.gpg").read_bytes() == data
    output, changed = _run(tmp_path, tmp_path / "key.asc", True)
    assert changed == 0 and "changed=False" in output, output[-2000:]


def test_binary_key_is_copied_and_check_mode_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "key.gpg").write_bytes(b"\x99binary-key")
    output, changed = _run(tmp_path, tmp_path / "key.gpg", False, "--check")
    assert not (tmp_path / "keyrings" / "repo.gpg").exists() and not (tmp_path / "stage").exists()
    output, changed = _run(tmp_path, tmp_path / "key.gpg", False)
    assert (tmp_path / "keyrings" / "repo.gpg").read_bytes() == b"\x99binary-key"
    output, changed = _run(tmp_path, tmp_path / "key.gpg", False)
    assert changed == 0, output[-2000:]
