#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mig_layout
short_description: Apply a declarative MIG layout per GPU model through nvidia-smi
version_added: 0.1.0
description:
  - Used by the gpulab.dlstack.nvidia_mig role, which also runs the same logic at boot from a systemd unit.
  - O(layout) maps a GPU model name, as C(nvidia-smi) prints it, to the GPU instance profiles each GPU of that model
    gets (one compute instance fills each). GPUs of other models are left alone.
  - A layout is refused before any change when the collection's MIG profile table (NVIDIA MIG user guide) says the
    model does not offer a profile or the profiles do not fit one GPU, and when the GPU's own C(nvidia-smi mig -lgip)
    does not list a profile.
  - Idempotent - a GPU whose instances already match is not touched; otherwise its compute and GPU instances are
    destroyed and the wanted ones created. A GPU whose MIG mode is off gets it switched on; that takes effect after a
    GPU reset or reboot (RV(pending)), after which the boot unit creates the instances.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode the GPUs are read and the commands that would run are returned; none runs.
  diff_mode:
    support: none
options:
  layout:
    description:
      - GPU model name to the list of GPU instance profiles,
      - 'for example C({"NVIDIA A100-SXM4-80GB": ["3g.40gb", "3g.40gb"]}).'
    type: dict
    required: true
  nvidia_smi:
    description: Path of C(nvidia-smi); found on C(PATH) when omitted.
    type: path
"""

EXAMPLES = r"""
- name: Two 3g.40gb instances on every A100 80GB
  gpulab.dlstack.mig_layout:
    layout:
      NVIDIA A100-SXM4-80GB: [3g.40gb, 3g.40gb]
"""

RETURN = r"""
gpus:
  description:
    - Per GPU of a model in the layout - index, name, wanted, current, commands (run or would run), pending, problem.
  returned: always
  type: list
  elements: dict
pending:
  description: GPUs whose MIG mode waits for a GPU reset or reboot.
  returned: always
  type: list
  elements: str
applied:
  description: Whether nvidia-smi was there to read and apply the layout (false on hosts without it).
  returned: always
  type: bool
reason:
  description: Why nothing was applied, when nothing was.
  returned: always
  type: str
"""

import os
from typing import Any, Dict, List, Tuple

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _mig
from ansible_collections.gpulab.dlstack.plugins.module_utils._matrix import MIG_PROFILES


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(layout=dict(type="dict", required=True), nvidia_smi=dict(type="path")),
        supports_check_mode=True,
    )
    layout = module.params["layout"]
    bad = [k for k, v in layout.items() if not (isinstance(v, list) and all(isinstance(p, str) for p in v))]
    if bad:
        module.fail_json(
            msg=f"nvidia_mig_layout[{bad[0]!r}] must be a list of profile names such as [3g.40gb, 3g.40gb]."
        )
    problems = _mig.table_problems(layout, MIG_PROFILES)
    if problems:
        module.fail_json(msg=" ".join(problems))
    result: Dict[str, Any] = dict(changed=False, gpus=[], pending=[], applied=False, reason="")
    smi = module.params["nvidia_smi"] or module.get_bin_path("nvidia-smi")
    if not smi or not os.access(smi, os.X_OK):
        where = f"{smi} is not an executable" if smi else "No nvidia-smi on this host"
        result["reason"] = f"{where}: the layout is written for the boot unit but not applied now."
        module.exit_json(**result)

    def run(cmd: List[str]) -> Tuple[int, str, str]:
        return module.run_command(cmd, environ_update={"LC_ALL": "C"})

    plans, error = _mig.plan(run, smi, layout)
    if error:
        result["reason"] = error
        module.exit_json(**result)
    refused = [p["problem"] for p in plans if p["problem"]]
    if refused:
        module.fail_json(msg=" ".join(refused) + " Change nvidia_mig_layout to profiles this GPU lists.", gpus=plans)
    result.update(gpus=plans, applied=True, pending=[p["pending"] for p in plans if p["pending"]])
    result["changed"] = any(p["commands"] for p in plans)
    if not plans:
        result["reason"] = "No GPU of a model in the layout on this host."
    if result["changed"] and not module.check_mode:
        error = _mig.apply(run, smi, plans)
        if error:
            module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
