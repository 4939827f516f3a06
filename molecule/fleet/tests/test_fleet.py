"""Assertions on each host after the fleet scenario: a failed rolling upgrade, the fix, and the resumed run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

FACT = "/etc/ansible/facts.d/dlstack_upgrade.fact"
DRAIN_MARKER = "/var/lib/dlstack/drained"
UPGRADED_BEFORE_FAILURE = {"fleet-1", "fleet-2", "fleet-3"}
FAILED = "fleet-4"
UNTOUCHED_BY_FAILED_RUN = {"fleet-5", "fleet-6"}


def _name(host: Any) -> str:
    return str(host.backend.get_hostname())


def _fact(host: Any) -> dict[str, Any]:
    return json.loads(host.file(FACT).content_string)


def _snapshot() -> dict[str, Any]:
    path = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "after-failure.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: the side_effect step did not run or did not reach its snapshot")
    return json.loads(path.read_text())


def test_every_host_ends_on_the_new_stack_and_in_service(host: Any) -> None:
    fact = _fact(host)
    assert fact["target"].startswith("stack-2-")
    assert fact["current"] == fact["target"]
    assert fact["state"] == "verified"
    assert fact["stage"] == "done"
    assert fact["drained"] is False
    assert not host.file(DRAIN_MARKER).exists
    assert host.file("/opt/dlstack/stack-version").content_string.strip() == fact["target"]


def test_failure_is_recorded_only_on_the_failed_host(host: Any) -> None:
    fact = _fact(host)
    if _name(host) == FAILED:
        failure = fact["last_failure"]
        assert failure["target"].startswith("stack-2-")
        assert failure["stage"] == "verify"
        assert "injected fault: GPU 0 reports uncorrectable ECC errors" in failure["reason"]
    else:
        assert "last_failure" not in fact


def test_failed_run_stopped_at_the_failing_batch(host: Any) -> None:
    name = _name(host)
    state = _snapshot()[name]
    after, before = state["after"], state["before"]
    if name in UPGRADED_BEFORE_FAILURE:
        assert after["current"].startswith("stack-2-")
        assert (after["state"], after["drained"]) == ("verified", False)
        assert not state["drain_marker"]
    elif name == FAILED:
        assert after["current"].startswith("stack-1-")
        assert (after["state"], after["stage"], after["drained"]) == ("failed", "verify", True)
        assert state["drain_marker"], "the host that failed verification must stay drained"
    else:
        assert name in UNTOUCHED_BY_FAILED_RUN
        assert after == before, "a host in a later batch was touched by the failed run"
        assert after["current"].startswith("stack-1-")
        assert not state["drain_marker"]


def test_upgrade_waited_for_the_running_job(host: Any) -> None:
    if _name(host) != "fleet-1":
        pytest.skip("the demo job runs on fleet-1 only")
    finished = int(host.file("/var/lib/dlstack/job-finished").content_string.strip())
    assert host.file("/opt/dlstack/stack-version").mtime.timestamp() >= finished


def _faults() -> dict[str, Any]:
    path = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "faults.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: the side_effect step did not reach its fault table")
    return json.loads(path.read_text())


def test_held_packages_end_at_stack_2_versions_and_stay_held(host: Any) -> None:
    versions = host.check_output("dpkg-query -W -f='${Package}=${Version}\\n' '*-dlstacktest'").splitlines()
    assert sorted(versions) == [
        "nvidia-container-toolkit-dlstacktest=1.17.9-1",
        "nvidia-driver-dlstacktest=550.120-1",
        "other-held-dlstacktest=1.0-1",
    ]
    held = set(host.check_output("apt-mark showhold").split())
    assert {"nvidia-driver-dlstacktest", "nvidia-container-toolkit-dlstacktest", "other-held-dlstacktest"} <= held


def test_the_driver_only_change_was_an_upgrade(host: Any) -> None:
    before = _snapshot()[_name(host)]["after"]
    fact = _fact(host)
    if before["state"] == "verified":
        assert fact["current"] != before["current"], "nvidia_driver_version changed but the target id did not"


def test_the_corrupted_record_was_kept_aside(host: Any) -> None:
    corrupt = host.file(FACT + ".corrupt")
    if _name(host) == "fleet-5":
        assert corrupt.exists and corrupt.content_string.startswith('{"target": "stack-2-tru')
    else:
        assert not corrupt.exists


def test_the_fault_table_has_a_row_per_fault(host: Any) -> None:
    rows = _faults()["rows"]
    assert [r["fault"].split(" (")[0] for r in rows] == [
        "verify failing",
        "apt lock held by another process for 20 s after the drain",
        "container killed mid-batch, docker kill",
        "corrupted progress record",
        "reboot that never returns, a systemd container that stops",
    ]
    assert rows[0]["stopped_before_next_batch"] is True and rows[0]["rerun_resumed"] is True
    assert rows[2]["stopped_before_next_batch"] is True and rows[2]["rerun_resumed"] is True
    # The killed task fails (rc 137) before the host is found unreachable: the reason names both.
    assert rows[2]["state_recorded"].startswith("controller: failed - ")
    assert "; then unreachable during upgrade" in rows[2]["state_recorded"]
    # The reboot that never returned failed its host at the reboot stage, stopped the run and was resumed.
    assert rows[4]["stopped_before_next_batch"] is True and rows[4]["rerun_resumed"] is True
    assert rows[4]["state_recorded"].startswith("controller: failed at reboot - ")
