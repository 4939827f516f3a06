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
    assert fact["target"] == "stack-2"
    assert fact["current"] == "stack-2"
    assert fact["state"] == "verified"
    assert fact["stage"] == "done"
    assert fact["drained"] is False
    assert not host.file(DRAIN_MARKER).exists
    assert host.file("/opt/dlstack/stack-version").content_string.strip() == "stack-2"


def test_failure_is_recorded_only_on_the_failed_host(host: Any) -> None:
    fact = _fact(host)
    if _name(host) == FAILED:
        failure = fact["last_failure"]
        assert failure["target"] == "stack-2"
        assert failure["stage"] == "verify"
        assert "injected fault: GPU 0 reports uncorrectable ECC errors" in failure["reason"]
    else:
        assert "last_failure" not in fact


def test_failed_run_stopped_at_the_failing_batch(host: Any) -> None:
    name = _name(host)
    state = _snapshot()[name]
    after, before = state["after"], state["before"]
    if name in UPGRADED_BEFORE_FAILURE:
        assert (after["current"], after["state"], after["drained"]) == ("stack-2", "verified", False)
        assert not state["drain_marker"]
    elif name == FAILED:
        observed = (after["current"], after["state"], after["stage"], after["drained"])
        assert observed == ("stack-1", "failed", "verify", True)
        assert state["drain_marker"], "the host that failed verification must stay drained"
    else:
        assert name in UNTOUCHED_BY_FAILED_RUN
        assert after == before, "a host in a later batch was touched by the failed run"
        assert after["current"] == "stack-1"
        assert not state["drain_marker"]


def test_upgrade_waited_for_the_running_job(host: Any) -> None:
    if _name(host) != "fleet-1":
        pytest.skip("the demo job runs on fleet-1 only")
    finished = int(host.file("/var/lib/dlstack/job-finished").content_string.strip())
    assert host.file("/opt/dlstack/stack-version").mtime.timestamp() >= finished
