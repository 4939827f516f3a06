"""Fixtures shared by the scenarios' testinfra tests."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable

import pytest


@pytest.fixture
def scenario_playbook(host) -> Callable[..., subprocess.CompletedProcess]:
    """Run one of the scenario's playbooks against this host only; return the finished process."""

    def run(playbook: str, *extra_args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                "ansible-playbook",
                "-i",
                os.environ["MOLECULE_INVENTORY_FILE"],
                "--limit",
                host.backend.get_hostname(),
                *extra_args,
                os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], playbook),
            ],
            capture_output=True,
            text=True,
            env=os.environ.copy(),
            check=False,
        )

    return run


@pytest.fixture
def check_mode_recap(host, scenario_playbook) -> Callable[..., str]:
    """Run the scenario's converge.yml in --check against this host; return its PLAY RECAP line."""

    def run(*extra_args: str) -> str:
        proc = scenario_playbook("converge.yml", "--check", *extra_args)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        recap = re.search(rf"^{re.escape(host.backend.get_hostname())}\s*:.*$", proc.stdout, flags=re.MULTILINE)
        assert recap, proc.stdout[-3000:]
        return recap.group(0)

    return run
