"""The tensorflow_build progress loop (tasks/poll.yml), run for real by ansible-playbook against localhost.

A stand-in build (a shell loop writing Bazel-like progress lines, not Bazel) runs in the background; the role's
loop follows it. The first test lets it outlast 1,000 looks at a short interval (the recursive include it replaces
stopped with RecursionError after ~246), the second lets it run past tensorflow_build_timeout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "tests" / "unit" / "fixtures" / "tfbuild_poll" / "playbook.yml"
LOOK = re.compile(r"\(item=look (\d+): ")


def _env() -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        "ANSIBLE_FACT_CACHING": "memory",
    }


def _playbook(tmp_path: Path, timeout: int, interval: float) -> subprocess.Popen[str]:
    ansible_playbook = Path(sys.executable).parent / "ansible-playbook"
    if not ansible_playbook.exists():
        pytest.skip(f"ansible-playbook is not next to {sys.executable}; run through `nox -s units`")
    return subprocess.Popen(
        [
            str(ansible_playbook),
            "-i",
            "localhost,",
            str(PLAYBOOK),
            "-e",
            f"poll_dir={tmp_path} tensorflow_build_timeout={timeout} tensorflow_build_progress_interval={interval}"
            f" ansible_python_interpreter={sys.executable}",
        ],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_build_that_outlasts_1000_looks_is_followed_to_its_end(tmp_path: Path) -> None:
    proc = _playbook(tmp_path, timeout=3600, interval=0.01)
    assert proc.stdout is not None
    looks = 0
    out = []
    for line in proc.stdout:
        out.append(line)
        found = LOOK.search(line)
        if found:
            looks = int(found.group(1))
            if looks == 1005:
                # Past 1,000 looks: let the stand-in build end with exit status 0.
                (tmp_path / "stop").write_text("0\n")
    proc.wait(timeout=120)
    tail = "".join(out[-40:])
    assert proc.returncode == 0, tail
    assert looks > 1005, tail
    assert "RecursionError" not in "".join(out)
    summary = re.search(r"poll-result looks=(\d+) rc=(\d+)", "".join(out))
    assert summary is not None, tail
    assert int(summary.group(1)) == looks and summary.group(2) == "0"
    # Each look printed the build's latest progress line.
    assert re.search(r"\(item=look 1000: \d+s: \[\d+ / 100,000\] Compiling stand-in/step_\d+\.cc\)", "".join(out)), tail


def test_a_build_past_its_timeout_fails_with_a_clear_message(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = _playbook(tmp_path, timeout=4, interval=0.5)
    output, _err = proc.communicate(timeout=300)
    assert proc.returncode == 2, output[-3000:]
    assert "did not finish within tensorflow_build_timeout (4 s" in output, output[-3000:]
    assert "raise tensorflow_build_timeout" in output
    assert f"log {tmp_path}/logs/build.log" in output
    assert time.monotonic() - started < 120, "the loop went on long after the timeout"
