"""The cudnn role's pip requirement (vars/main.yml rendered by ansible-playbook): the stack's exact wheel build when
cuDNN and CUDA come from the stack, the version given otherwise."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import yaml
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook

ROOT = Path(__file__).resolve().parents[3]
STACK = {"cudnn": "9.3.0", "cuda": "12.5", "cudnn_wheel": "9.3.0.75"}
CASES: List[Dict[str, Any]] = [
    {"dlstack_stack": STACK},
    {"dlstack_stack": STACK, "cudnn_version": "9.10"},
    {"dlstack_stack": STACK, "cudnn_version": "9.10.2.21"},
    {"dlstack_stack": {"cudnn": "9.3.0", "cuda": "12.5"}},
]
EXPECTED = [
    "nvidia-cudnn-cu12==9.3.0.75",
    "nvidia-cudnn-cu12==9.10.*",
    "nvidia-cudnn-cu12==9.10.2.21",
    "nvidia-cudnn-cu12==9.3.0.*",
]


def test_pip_requirement(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    role = ROOT / "roles" / "cudnn"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    plays = [
        {
            "name": f"case {i}",
            "hosts": "all",
            "gather_facts": False,
            "vars_files": [str(role / "vars" / "main.yml")],
            "vars": {**defaults, **case},
            "tasks": [{"name": "Show", "ansible.builtin.debug": {"msg": "PIN={{ __cudnn_pip_requirement }}"}}],
        }
        for i, case in enumerate(CASES)
    ]
    playbook = tmp_path / "pin.yml"
    playbook.write_text(yaml.safe_dump(plays))
    done = ansible_playbook.run(playbook)
    assert done.rc == 0, done.output[-3000:]
    assert re.findall(r'"msg": "PIN=([^"]+)"', done.stdout) == EXPECTED
