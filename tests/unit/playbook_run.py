"""ansible-playbook as the unit tests run it, for real, on this machine (the conftest fixture ansible_playbook)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
RECAP = re.compile(r"^(?P<host>\S+)\s*:\s*ok=\d+\s+changed=(?P<changed>\d+)", flags=re.MULTILINE)


@dataclass(frozen=True)
class PlaybookRun:
    """What one ansible-playbook run printed and its exit status."""

    rc: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def changed(self, host: str = "localhost") -> int:
        """The changed count of the host's PLAY RECAP line; -1 when there is none."""
        found = [int(m.group("changed")) for m in RECAP.finditer(self.output) if m.group("host") == host]
        return found[-1] if found else -1


class AnsiblePlaybook:
    """ansible-playbook as every test runs it.

    Its environment is the caller's without any ANSIBLE_* setting, then this checkout's ansible.cfg and collection,
    facts cached in memory (nothing written to the checkout), no colour and no warnings about an implicit localhost.
    By default the inventory is ``localhost,`` over the local connection with this Python as the interpreter.
    """

    def env(self, **extra: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
        env.update(
            {
                "PATH": f"{ANSIBLE_PLAYBOOK.parent}{os.pathsep}{os.environ.get('PATH', '')}",
                "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
                "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
                "ANSIBLE_CACHE_PLUGIN": "memory",
                "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_FORCE_COLOR": "0",
                "ANSIBLE_LOCALHOST_WARNING": "0",
                "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
            }
        )
        env.update(extra)
        return env

    def argv(
        self, playbook: str | Path, *args: str, inventory: str | None = "localhost,", local: bool = True
    ) -> list[str]:
        """The command line; inventory None leaves the choice to ansible.cfg, local False to the inventory."""
        argv = [str(ANSIBLE_PLAYBOOK)]
        if inventory is not None:
            argv += ["-i", inventory]
        if local:
            argv += ["-c", "local", "-e", f"ansible_python_interpreter={sys.executable}"]
        return [*argv, *args, str(playbook)]

    def popen(
        self,
        playbook: str | Path,
        *args: str,
        inventory: str | None = "localhost,",
        local: bool = True,
        cwd: str | Path = ROOT,
        env: dict[str, str] | None = None,
        merge_stderr: bool = True,
    ) -> subprocess.Popen[str]:
        """A run to follow line by line; stderr comes with stdout unless merge_stderr is false."""
        return subprocess.Popen(
            self.argv(playbook, *args, inventory=inventory, local=local),
            cwd=cwd,
            env=self.env(**(env or {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            text=True,
        )

    def run(self, playbook: str | Path, *args: str, timeout: float = 300, **options: Any) -> PlaybookRun:
        """A whole run (options as for popen), killed after timeout seconds."""
        with self.popen(playbook, *args, merge_stderr=False, **options) as proc:
            try:
                stdout, stderr = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        return PlaybookRun(proc.returncode, stdout, stderr)
