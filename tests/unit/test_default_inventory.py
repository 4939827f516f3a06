"""A playbook run with no inventory stops with a message saying how to choose hosts, touching nothing.

ansible.cfg's default inventory (inventories/unset) names no machine; it once was the controller itself, so a plain
`ansible-playbook provision.yml` provisioned the machine it ran on as root.
"""

from __future__ import annotations

import pytest
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook


@pytest.mark.parametrize("playbook", ["provision.yml", "playbooks/upgrade.yml"])
def test_no_inventory_stops_with_how_to_choose_hosts(ansible_playbook: AnsiblePlaybook, playbook: str) -> None:
    result = ansible_playbook.run(playbook, inventory=None, local=False)
    output = result.output
    assert result.rc == 2, output
    assert "No inventory was chosen" in output and "-i inventories/lab" in output, output
    assert "ok=0    changed=0" in output or "changed=0" in output, output
    assert "localhost" not in output.split("PLAY RECAP")[-1], "the controller must not be a target"
