"""Fixtures shared by the scenarios' testinfra tests."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable

import pytest


@pytest.fixture
def check_mode_recap(host) -> Callable[..., str]:
    """Run the scenario's converge.yml in --check against this host; return its PLAY RECAP line."""

    def run(*extra_args: str) -> str:
        name = host.backend.get_hostname()
        proc = subprocess.run(
            [
                "ansible-playbook",
                "-i",
                os.environ["MOLECULE_INVENTORY_FILE"],
                "--check",
                "--limit",
                name,
                *extra_args,
                os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "converge.yml"),
            ],
            capture_output=True,
            text=True,
            env=os.environ.copy(),
            check=False,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        recap = re.search(rf"^{re.escape(name)}\s*:.*$", proc.stdout, flags=re.MULTILINE)
        assert recap, proc.stdout[-3000:]
        return recap.group(0)

    return run
