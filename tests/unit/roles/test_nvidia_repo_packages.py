"""The one install of pinned packages from NVIDIA's repository (nvidia_repo's packages.yml, used by cuda_toolkit,
cudnn and tensorrt), run for real against this machine's apt: a package no repository carries fails with the
package, the repository and the calling role's fix, and changes nothing; in check mode the same package is not an
error (the repository may only be configured by that run) and nothing is held."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook, PlaybookRun

SYSTEM_PYTHON = "/usr/bin/python3"
PACKAGE = "dlstack-no-such-package"
FIX = "check that Probe 9.3 exists there, or use probe_source pip."


def _apt_python() -> None:
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import apt"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"{SYSTEM_PYTHON} has no apt bindings (python3-apt): apt cannot be driven on this machine")


def _run(ansible_playbook: AnsiblePlaybook, tmp_path: Path, *args: str) -> PlaybookRun:
    _apt_python()
    playbook = tmp_path / "packages.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Packages from NVIDIA's repository",
                    "hosts": "all",
                    "gather_facts": True,
                    "gather_subset": ["min"],
                    "tasks": [
                        {
                            "name": "Install",
                            "ansible.builtin.include_role": {
                                "name": "gpulab.dlstack.nvidia_repo",
                                "tasks_from": "packages",
                            },
                            "vars": {
                                "nvidia_repo_packages": [f"{PACKAGE}=9.3.0.75-1"],
                                "nvidia_repo_packages_hold": True,
                                "nvidia_repo_packages_what": "Probe 9.3",
                                "nvidia_repo_packages_fix": FIX,
                            },
                        }
                    ],
                }
            ]
        )
    )
    return ansible_playbook.run(playbook, "-e", f"ansible_python_interpreter={SYSTEM_PYTHON}", *args)


def test_a_missing_package_fails_with_the_repository_and_the_fix(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path
) -> None:
    run = _run(ansible_playbook, tmp_path)
    assert run.rc != 0, run.output[-3000:]
    message = " ".join(run.output.split())
    assert (
        f"Installing {PACKAGE}=9.3.0.75-1 from NVIDIA's CUDA repository (the URL the nvidia_repo role derives) failed:"
        in message
    ), message[-3000:]
    assert f"No package matching '{PACKAGE}'" in message
    assert f"Set nvidia_repo_base_url to a reachable mirror (dlstack_https_proxy for a proxy); {FIX}" in message


def test_check_mode_passes_over_a_package_the_repository_does_not_carry_yet(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path
) -> None:
    run = _run(ansible_playbook, tmp_path, "--check")
    assert run.rc == 0, run.output[-3000:]
    assert "Hold at their pinned versions the packages of Probe 9.3" in run.output
    # The hold the run would set is reported (apt-mark --simulate), and nothing is held.
    assert run.changed() == 1, run.output[-3000:]
    assert PACKAGE not in subprocess.run(["apt-mark", "showhold"], capture_output=True, text=True, check=True).stdout
