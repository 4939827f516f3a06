"""The one change of apt holds (common's holds.yml, used by nvidia_driver, nvidia_repo, nvidia_container_toolkit and
fleet_upgrade), run for real: the real apt-mark and dpkg, on a private dpkg database (APT_CONFIG points apt at it and
passes dpkg --admindir), so this machine's own holds are never touched. A held dpkg lock (a real fcntl lock, as an
unattended upgrade takes it) is waited out; one held past the timeout fails the run and changes nothing."""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook, PlaybookRun

pytestmark = pytest.mark.skipif(
    not (shutil.which("apt-mark") and shutil.which("dpkg")), reason="apt-mark and dpkg are needed (Debian family)"
)

PACKAGES = ("probe-a", "probe-b", "probe-c")


@dataclass(frozen=True)
class Dpkg:
    """A private dpkg database and the apt configuration that points apt-mark (and, through it, dpkg) at it."""

    admindir: Path
    apt_config: Path

    def holds(self) -> set[str]:
        """The packages whose status says hold, read from the database itself."""
        held, name = set(), ""
        for line in (self.admindir / "status").read_text().splitlines():
            if line.startswith("Package: "):
                name = line.split(": ", 1)[1]
            elif line.startswith("Status: hold "):
                held.add(name)
        return held

    def lock(self) -> int:
        """Take dpkg's frontend lock as apt and unattended-upgrades do (fcntl); returns the descriptor to close."""
        fd = os.open(self.admindir / "lock-frontend", os.O_RDWR | os.O_CREAT, 0o640)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd


@pytest.fixture(name="dpkg")
def _dpkg(tmp_path: Path) -> Iterator[Dpkg]:
    admindir = tmp_path / "dpkg"
    (admindir / "updates").mkdir(parents=True)
    (admindir / "info").mkdir()
    (admindir / "available").touch()
    (admindir / "status").write_text(
        "".join(
            f"Package: {name}\nStatus: install ok installed\nPriority: optional\nSection: misc\n"
            f"Installed-Size: 1\nMaintainer: Test <test@example.invalid>\nArchitecture: all\nVersion: 1.0-1\n"
            f"Description: a package of the test's private dpkg database\n\n"
            for name in PACKAGES
        )
    )
    for folder in ("state/lists/partial", "cache", "sources.list.d"):
        (tmp_path / "apt" / folder).mkdir(parents=True)
    apt_config = tmp_path / "apt" / "apt.conf"
    apt_config.write_text(
        f'Dir::State "{tmp_path}/apt/state";\n'
        f'Dir::State::status "{admindir}/status";\n'
        f'Dir::Cache "{tmp_path}/apt/cache";\n'
        'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
        'Dir::Etc::sourcelist "/dev/null";\n'
        f'Dir::Etc::sourceparts "{tmp_path}/apt/sources.list.d";\n'
        f'DPkg::Options:: "--admindir={admindir}";\n'
    )
    yield Dpkg(admindir, apt_config)


def _run(ansible_playbook: AnsiblePlaybook, tmp_path: Path, dpkg: Dpkg, *args: str, **holds: Any) -> PlaybookRun:
    playbook = tmp_path / "holds.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Holds",
                    "hosts": "all",
                    "gather_facts": False,
                    "environment": {"APT_CONFIG": str(dpkg.apt_config)},
                    "tasks": [
                        {
                            "name": "Change the holds",
                            "ansible.builtin.include_role": {"name": "gpulab.dlstack.common", "tasks_from": "holds"},
                            "vars": {"common_holds_what": "the probe packages", **holds},
                        }
                    ],
                }
            ]
        )
    )
    return ansible_playbook.run(playbook, *args)


def test_holds_are_set_once_and_released(ansible_playbook: AnsiblePlaybook, tmp_path: Path, dpkg: Dpkg) -> None:
    first = _run(ansible_playbook, tmp_path, dpkg, common_holds_hold=["probe-a", "probe-b=1.0-1"])
    assert first.rc == 0 and first.changed() == 1, first.output[-3000:]
    assert dpkg.holds() == {"probe-a", "probe-b"}
    again = _run(ansible_playbook, tmp_path, dpkg, common_holds_hold=["probe-a", "probe-b=1.0-1"])
    assert again.rc == 0 and again.changed() == 0, again.output[-3000:]
    swap = _run(
        ansible_playbook, tmp_path, dpkg, common_holds_hold=["probe-c"], common_holds_release=["probe-a", "probe-c"]
    )
    assert swap.rc == 0, swap.output[-3000:]
    # probe-c is both released (it was not held: nothing to do) and held; probe-b is not the caller's and stays held.
    assert dpkg.holds() == {"probe-b", "probe-c"}


def test_check_mode_reports_the_change_and_makes_none(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path, dpkg: Dpkg
) -> None:
    # A package that the check run would install before holding it is not known yet: not an error in check mode.
    run = _run(ansible_playbook, tmp_path, dpkg, "--check", common_holds_hold=["probe-a", "installed-by-this-run"])
    assert run.rc == 0 and run.changed() == 1, run.output[-3000:]
    assert dpkg.holds() == set()


def test_a_held_dpkg_lock_is_waited_out(ansible_playbook: AnsiblePlaybook, tmp_path: Path, dpkg: Dpkg) -> None:
    fd = dpkg.lock()
    release = threading.Timer(3, os.close, (fd,))
    release.start()
    try:
        run = _run(ansible_playbook, tmp_path, dpkg, common_holds_hold=["probe-a"], common_holds_lock_timeout=60)
    finally:
        release.cancel()
        release.join()
    assert run.rc == 0, run.output[-3000:]
    assert "FAILED - RETRYING" in run.output, "the lock was never met: the test proves nothing"
    assert dpkg.holds() == {"probe-a"}


def test_a_lock_held_past_the_timeout_fails_and_changes_nothing(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path, dpkg: Dpkg
) -> None:
    fd = dpkg.lock()
    try:
        run = _run(ansible_playbook, tmp_path, dpkg, common_holds_hold=["probe-a"], common_holds_lock_timeout=5)
    finally:
        os.close(fd)
    assert run.rc != 0, run.output[-3000:]
    assert "lock" in run.output and "hold probe-a" in run.output
    assert dpkg.holds() == set()


def test_an_unknown_package_fails_at_once(ansible_playbook: AnsiblePlaybook, tmp_path: Path, dpkg: Dpkg) -> None:
    run = _run(ansible_playbook, tmp_path, dpkg, common_holds_hold=["no-such-package"])
    assert run.rc != 0, run.output[-3000:]
    assert "FAILED - RETRYING" not in run.output
    assert "no-such-package" in run.output
