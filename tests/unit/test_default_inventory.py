"""A playbook run with no inventory stops with a message saying how to choose hosts, touching nothing.

ansible.cfg's default inventory (inventories/unset) names no machine; it once was the controller itself, so a plain
`ansible-playbook provision.yml` provisioned the machine it ran on as root.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("playbook", ["provision.yml", "playbooks/upgrade.yml"])
def test_no_inventory_stops_with_how_to_choose_hosts(playbook: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        {
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
            "ANSIBLE_CACHE_PLUGIN": "memory",
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), playbook],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "No inventory was chosen" in output and "-i inventories/lab" in output, output
    assert "ok=0    changed=0" in output or "changed=0" in output, output
    assert "localhost" not in output.split("PLAY RECAP")[-1], "the controller must not be a target"
