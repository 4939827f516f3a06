"""The tensorflow role's pip call with the stack's exact and-cuda wheels, run for real with ansible-playbook on this
machine: the role's install.yml against an environment whose pip is a stand-in that records its arguments and answers
like pip. Checked: the constraints file (content, mode 0644), the arguments pip gets (-c, the pins named), nothing
written or installed in check mode, an unchanged re-run, no pins on a CPU host, and hash-checking mode."""

from __future__ import annotations

import json
import re
import stat
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook

ROOT = Path(__file__).resolve().parents[3]

PINS = ["nvidia-cublas-cu12==12.5.3.2", "nvidia-cudnn-cu12==9.3.0.75", "nvidia-nccl-cu12==2.27.7"]
STACK = {"tensorflow": "2.21", "numpy": ">=1.26.0", "constraints": PINS}

# pip's stand-in: logs argv as one JSON line; `install` prints pip's success line the first time a requirement set is
# installed and "already satisfied" afterwards; `list`/`freeze` print what was installed.
PIP_STANDIN = """#!{python}
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "pip-calls.jsonl"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
state = os.path.join(here, "pip-installed.txt")
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("pip 24.0 from {here} (python 3.12)")
elif args[:1] in (["list"], ["freeze"]):
    if os.path.exists(state):
        sys.stdout.write(open(state).read())
elif args[:1] == ["install"]:
    wanted = " ".join(args)
    if os.path.exists(state + ".args") and open(state + ".args").read() == wanted:
        print("Requirement already satisfied: tensorflow")
    else:
        open(state + ".args", "w").write(wanted)
        print("Successfully installed tensorflow-2.21.0")
"""


def _env(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "envs" / "default" / "bin"
    bin_dir.mkdir(parents=True)
    pip = bin_dir / "pip"
    pip.write_text(PIP_STANDIN.replace("{python}", sys.executable).replace("{here}", str(bin_dir)))
    pip.chmod(0o755)
    return bin_dir


def _run(ansible_playbook: AnsiblePlaybook, tmp_path: Path, role_vars: Dict[str, Any], *extra: str) -> Tuple[int, str]:
    playbook = tmp_path / "tf.yml"
    base = {
        "tensorflow_env_root": str(tmp_path / "envs"),
        "tensorflow_env": "default",
        "tensorflow_gpu": True,
        "dlstack_stack": STACK,
    }
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "tensorflow install",
                    "hosts": "all",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Install",
                            "ansible.builtin.include_role": {
                                "name": "gpulab.dlstack.tensorflow",
                                "tasks_from": "install",
                            },
                            "vars": {**base, **role_vars},
                        }
                    ],
                }
            ]
        )
    )
    done = ansible_playbook.run(playbook, *extra)
    output = done.output
    assert done.rc == 0, output[-3000:]
    return done.changed(), output


def _installs(bin_dir: Path) -> List[List[str]]:
    log = bin_dir / "pip-calls.jsonl"
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [c for c in calls if c[:1] == ["install"]]


def test_pins_go_to_pip_as_constraints_and_names(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    bin_dir = _env(tmp_path)
    changed, output = _run(ansible_playbook, tmp_path, {})
    assert changed == 3, output[-3000:]  # folder, constraints file, pip
    constraints = tmp_path / "envs" / "default" / "share" / "dlstack" / "tf-constraints.txt"
    assert [line for line in constraints.read_text().splitlines() if not line.startswith("#")] == PINS
    assert stat.S_IMODE(constraints.stat().st_mode) == 0o644
    (call,) = _installs(bin_dir)
    assert call[call.index("-c") + 1] == str(constraints)
    names = [a for a in call[1:] if not a.startswith("-") and a != str(constraints)]
    assert names == ["tensorflow[and-cuda]==2.21.*", "numpy>=1.26.0", *PINS]


def test_rerun_changes_nothing(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    _env(tmp_path)
    _run(ansible_playbook, tmp_path, {})
    changed, output = _run(ansible_playbook, tmp_path, {})
    assert changed == 0, output[-3000:]


def test_check_mode_writes_and_installs_nothing(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    bin_dir = _env(tmp_path)
    changed, output = _run(ansible_playbook, tmp_path, {}, "--check")
    assert changed >= 1, output[-3000:]
    assert not (tmp_path / "envs" / "default" / "share").exists()
    assert _installs(bin_dir) == []


@pytest.mark.parametrize(
    "role_vars",
    [
        {"tensorflow_gpu": False},
        {"tensorflow_pin_cuda_wheels": False},
        {"tensorflow_version": "2.20"},
        {"tensorflow_package": "acme-tensorflow[and-cuda]"},
    ],
    ids=["cpu-host", "switched-off", "other-version", "own-package"],
)
def test_no_stack_pins_outside_the_stacks_own_gpu_wheel(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path, role_vars: Dict[str, Any]
) -> None:
    bin_dir = _env(tmp_path)
    _run(ansible_playbook, tmp_path, role_vars)
    (call,) = _installs(bin_dir)
    assert "-c" not in call and not any(a.startswith("nvidia-") for a in call), call
    assert not (tmp_path / "envs" / "default" / "share" / "dlstack" / "tf-constraints.txt").exists()


def test_hash_checking_mode_installs_the_hashed_file(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    bin_dir = _env(tmp_path)
    hashes = {
        "tensorflow==2.21.0": ["sha256:" + "a" * 64],
        "numpy==2.2.6": ["sha256:" + "b" * 64, "sha256:" + "c" * 64],
    }
    _run(ansible_playbook, tmp_path, {"tensorflow_pip_hashes": hashes})
    state = tmp_path / "envs" / "default" / "share" / "dlstack"
    assert (state / "tf-requirements.txt").read_text().splitlines() == [
        f"numpy==2.2.6 --hash=sha256:{'b' * 64} --hash=sha256:{'c' * 64}",
        f"tensorflow==2.21.0 --hash=sha256:{'a' * 64}",
    ]
    assert stat.S_IMODE((state / "tf-requirements.txt").stat().st_mode) == 0o644
    (call,) = _installs(bin_dir)
    assert call[call.index("-r") + 1] == str(state / "tf-requirements.txt")
    assert "--require-hashes" in call
    assert call[call.index("-c") + 1] == str(state / "tf-constraints.txt")


def test_drift_lists_the_pinned_wheels_held_at_another_version(
    ansible_playbook: AnsiblePlaybook, tmp_path: Path
) -> None:
    role = ROOT / "roles" / "tensorflow"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    held = {"nvidia-cublas-cu12": "12.5.3.2", "nvidia-cudnn-cu12": "9.10.2.21"}
    play = {
        "name": "drift",
        "hosts": "all",
        "gather_facts": False,
        "vars_files": [str(role / "vars" / "main.yml")],
        "vars": {
            **defaults,
            "tensorflow_gpu": True,
            "dlstack_stack": STACK,
            "tensorflow_pip_constraints": ["protobuf==4.25.3"],
        },
        "tasks": [
            {"name": "Report", "ansible.builtin.set_fact": {"tensorflow_report": {"cuda_wheels": held}}},
            {"name": "Show", "ansible.builtin.debug": {"msg": "DRIFT={{ __tensorflow_wheel_drift | to_json }}"}},
        ],
    }
    playbook = tmp_path / "drift.yml"
    playbook.write_text(yaml.safe_dump([play]))
    done = ansible_playbook.run(playbook)
    assert done.rc == 0, done.output[-3000:]
    found = re.search(r'"msg": "DRIFT=(.*)"\n', done.stdout)
    assert found is not None, done.stdout[-3000:]
    # protobuf is no and-cuda wheel (the probe does not read it back), so it is not judged here.
    assert json.loads(found.group(1).replace('\\"', '"')) == [
        "nvidia-cudnn-cu12 9.10.2.21 (pinned 9.3.0.75)",
        "nvidia-nccl-cu12 missing (pinned 2.27.7)",
    ]
