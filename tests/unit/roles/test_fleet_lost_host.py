"""fleet_upgrade when a host of a batch is lost, run for real by ansible-playbook on three local hosts.

The host is lost at the connection boundary (its connection is pointed at a closed local port; stand-in for a
container killed with docker kill or a reboot that never returns): either the task under way fails first (the
rescue runs and cannot write the host) or the next task finds it unreachable (no rescue). Both must stop the run
before batch 2, record the host as failed and lost on the controller, restore nothing on it, and let the batch
report run and name it. The fleet Molecule scenario kills a real container for the same path.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "tests" / "unit" / "fixtures" / "fleet_lost" / "playbook.yml"


def _run(ansible_playbook: AnsiblePlaybook, tmp_path: Path, how: str) -> tuple[int, str]:
    if os.geteuid() != 0:
        pytest.skip("the role writes its progress record owned by root; run as root (the nox units session does)")
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(
        "[fleet]\n"
        + "".join(
            f"fleet-{i} ansible_connection=local ansible_python_interpreter={sys.executable}\n" for i in (1, 2, 3)
        )
    )
    run = ansible_playbook.run(
        PLAYBOOK,
        "-e",
        f"lost_dir={tmp_path} lost_host=fleet-2 lost_how={how}",
        inventory=str(inventory),
        local=False,
        env={"ANSIBLE_HOST_KEY_CHECKING": "0"},
    )
    return run.rc, run.output


@pytest.mark.parametrize("how", ["failed", "unreachable"])
def test_a_lost_host_stops_the_run_and_is_recorded_on_the_controller(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path, how: str
) -> None:
    rc, out = _run(ansible_playbook, tmp_path, how)
    assert rc in (2, 4), out[-3000:]
    assert "fleet-1: upgraded to stack-t-" in out, out[-3000:]
    assert "fleet-2: LOST (unreachable) upgrading to stack-t-" in out, out[-3000:]
    assert "Stopping before the next batch: fleet-2 became unreachable" in out, out[-3000:]
    assert "fleet-3: not reached in this run (untouched)" in out, out[-3000:]
    assert not (tmp_path / "fleet-3").exists(), "fleet-3 (batch 2) was touched"
    # Nothing more ran on the lost host: no restore of its paused unit.
    assert "item=dlstack-standin.timer" not in out, out[-3000:]
    record = json.loads((tmp_path / "controller" / "fleet-2.json").read_text())
    assert record["state"] == "failed" and record["lost"] is True
    assert record["paused_units"] == ["dlstack-standin.timer"]
    assert "unreachable during upgrade: " in record["last_failure"]["reason"]
    if how == "failed":
        assert record["reason"].startswith("The task under way fails as the host dies: killed mid-task"), record
    assert json.loads((tmp_path / "controller" / "fleet-1.json").read_text())["state"] == "verified"
