"""The mirror role collects each fleet host's TensorFlow requirements together with the exact and-cuda wheels the
tensorflow role pins (dlstack_stack.constraints), rendered by ansible-playbook from the role's vars."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook

ROOT = Path(__file__).resolve().parents[3]
STACK = {
    "pip_requirements": ["tensorflow[and-cuda]==2.21.*", "numpy>=1.26.0"],
    "constraints": ["nvidia-cudnn-cu12==9.3.0.75", "nvidia-nccl-cu12==2.27.7"],
}


def test_fleet_requirements_carry_the_pins(ansible_playbook: AnsiblePlaybook, tmp_path: Path) -> None:
    role = ROOT / "roles" / "mirror"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    play = {
        "name": "mirror requirements",
        "hosts": "all",
        "gather_facts": False,
        "vars_files": [str(role / "vars" / "main.yml")],
        "vars": {**defaults, "mirror_fleet_hosts": ["localhost"], "mirror_pip_requirements": ["six"]},
        "tasks": [
            {"name": "Stack", "ansible.builtin.set_fact": {"dlstack_stack": STACK}},
            {"name": "Show", "ansible.builtin.debug": {"msg": "REQS={{ __mirror_pip_all | to_json }}"}},
        ],
    }
    playbook = tmp_path / "mirror.yml"
    playbook.write_text(yaml.safe_dump([play]))
    done = ansible_playbook.run(playbook)
    assert done.rc == 0, done.output[-3000:]
    found = re.search(r'"msg": "REQS=(.*)"\n', done.stdout)
    assert found is not None, done.stdout[-3000:]
    assert json.loads(found.group(1).replace('\\"', '"')) == sorted(
        [*STACK["pip_requirements"], *STACK["constraints"], "six"]
    )
