"""The one pip --target install with its error report (common's pip_target.yml, used by cuda_toolkit, cudnn and
tensorrt), run for real on this machine: a local wheel is installed once (a second run changes nothing), and a
requirement pip cannot find fails with pip's own error line and the calling role's fix."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def _wheel(folder: Path) -> None:
    """A minimal pure-Python wheel, dlstackprobe 0.1, built by hand (no build backend or index needed)."""
    folder.mkdir()
    files = {
        "dlstackprobe/__init__.py": "VALUE = 42\n",
        "dlstackprobe-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: dlstackprobe\nVersion: 0.1\n",
        "dlstackprobe-0.1.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + "dlstackprobe-0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(folder / "dlstackprobe-0.1-py3-none-any.whl", "w") as wheel:
        for name, text in {**files, "dlstackprobe-0.1.dist-info/RECORD": record}.items():
            wheel.writestr(name, text)


def _run(tmp_path: Path, requirement: str) -> tuple[int, str]:
    playbook = tmp_path / "pip.yml"
    target = tmp_path / "target"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "pip --target",
                    "hosts": "all",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Wheels",
                            "ansible.builtin.include_role": {
                                "name": "gpulab.dlstack.common",
                                "tasks_from": "pip_target",
                            },
                            "vars": {
                                "common_pip_what": requirement,
                                "common_pip_python": sys.executable,
                                "common_pip_requirements": [requirement],
                                "common_pip_target": str(target),
                                "common_pip_marker": str(target / ".dlstack-installed-test"),
                                "common_pip_index_url": "",
                                "common_pip_extra_args": ["--no-index", "--find-links", str(tmp_path / "wheels")],
                                "common_pip_timeout": 5,
                                "common_pip_fix": "Set test_pip_index_url to a reachable mirror.",
                            },
                        }
                    ],
                }
            ]
        )
    )
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
            "ANSIBLE_CACHE_PLUGIN": "memory",
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
        env={**env, "ANSIBLE_PYTHON_INTERPRETER": sys.executable},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = done.stdout + done.stderr
    changed = re.search(r"localhost\s*:\s*ok=\d+\s+changed=(\d+)", output)
    return (int(changed.group(1)) if changed else -1), output if done.returncode == 0 else "FAILED\n" + output


def test_installs_once_then_changes_nothing(tmp_path: Path) -> None:
    _wheel(tmp_path / "wheels")
    changed, output = _run(tmp_path, "dlstackprobe==0.1")
    assert not output.startswith("FAILED") and changed == 2, output[-3000:]
    assert (tmp_path / "target" / "dlstackprobe" / "__init__.py").read_text() == "VALUE = 42\n"
    assert (tmp_path / "target" / ".dlstack-installed-test").read_text() == "dlstackprobe==0.1\n"
    changed, output = _run(tmp_path, "dlstackprobe==0.1")
    assert not output.startswith("FAILED") and changed == 0, output[-3000:]


def test_failure_names_pips_error_and_the_fix(tmp_path: Path) -> None:
    _wheel(tmp_path / "wheels")
    _changed, output = _run(tmp_path, "dlstackprobe==9.9")
    assert output.startswith("FAILED"), output[-3000:]
    message = " ".join(output.split())
    assert "Installing dlstackprobe==9.9 from the index configured for pip on the host failed:" in message, message
    assert "No matching distribution found for dlstackprobe==9.9" in message
    assert "Set test_pip_index_url to a reachable mirror." in message
