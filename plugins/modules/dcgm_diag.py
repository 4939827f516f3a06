#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dcgm_diag
short_description: Run DCGM's diagnostic (dcgmi diag) and give a pass/warn/fail verdict
version_added: 0.1.0
description:
  - Runs C(dcgmi diag -r <level> -j) when DCGM is installed and reads its JSON - every test result of every category
    (deployment checks at level 1; PCIe, memory and bandwidth tests at 2; stress tests at 3 and 4).
  - V(fail) when a test failed, DCGM reported a runtime error or the run gave no readable result; V(warn) on warnings;
    V(pass) only when a test passed, none failed and dcgmi exited with 0.
  - A diagnostic that did not run (no C(dcgmi), no host engine, every test skipped) is never V(pass) - it is V(skip)
    with the reason where the GPU checks need not run (see O(profile)), and V(fail) (V(warn) with O(missing=warn) when
    DCGM is absent) where they must.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
  - gpulab.dlstack.smoke.gpu_requirement
options:
  level:
    description: Diagnostic level - 1 (seconds), 2 (about 2 minutes), 3 and 4 (about 15 minutes and more).
    type: int
    choices: [1, 2, 3, 4]
    default: 1
  timeout:
    description: Seconds before the diagnostic is stopped (and judged V(fail)).
    type: int
    default: 600
  missing:
    description: Verdict where the GPU checks must run but DCGM is not installed.
    type: str
    choices: [fail, warn]
    default: fail
  dcgmi:
    description: Path of C(dcgmi); found on C(PATH) when omitted.
    type: path
  pci_devices_path:
    description: The sysfs folder scanned for NVIDIA GPUs when O(profile=auto).
    type: path
    default: /sys/bus/pci/devices
  dest:
    description: Also write the result as JSON to this file; the module then reports a change when the file changes.
    type: path
"""

EXAMPLES = r"""
- name: DCGM level-1 diagnostic on a GPU host
  gpulab.dlstack.dcgm_diag:
    profile: gpu
  register: dcgm
"""

RETURN = r"""
verdict:
  description: V(pass), V(warn), V(fail) or V(skip).
  returned: always
  type: str
reason:
  description: Why, in one sentence (the failing tests and DCGM's own warning).
  returned: always
  type: str
ran:
  description: Whether dcgmi produced a diagnostic result.
  returned: always
  type: bool
tests:
  description: Every test result (category, name, status, raw_status, gpus, warnings).
  returned: always
  type: list
  elements: dict
dcgm_version:
  description: DCGM version the result reports.
  returned: always
  type: str
command:
  description: The command run (or that would run, in check mode).
  returned: always
  type: list
  elements: str
gpu_requirement:
  description: Whether the GPU checks had to run, and why.
  returned: always
  type: dict
"""

from typing import Any, Dict

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _dcgm, _smoke
from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import scan_sysfs
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import (
    REQUIREMENT_SPEC,
    gpu_requirement,
    unavailable,
)


def finish(module: AnsibleModule, result: Dict[str, Any], verdict: str, reason: str) -> None:
    result.update(verdict=verdict, reason=reason)
    result["changed"] = _smoke.write_dest(module, module.params["dest"], result)
    module.exit_json(**result)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            level=dict(type="int", choices=[1, 2, 3, 4], default=1),
            timeout=dict(type="int", default=600),
            missing=dict(type="str", choices=["fail", "warn"], default="fail"),
            dcgmi=dict(type="path"),
            pci_devices_path=dict(type="path", default="/sys/bus/pci/devices"),
            dest=dict(type="path"),
            **REQUIREMENT_SPEC,
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not 1 <= p["timeout"] <= 86400:
        module.fail_json(msg=f"timeout={p['timeout']} is not 1 to 86400 seconds; the default is 600.")
    present = bool(scan_sysfs(p["pci_devices_path"]))
    needed = gpu_requirement(p["required"], p["profile"], present, p["gpu_seen"])
    dcgmi = p["dcgmi"] or module.get_bin_path("dcgmi")
    command = [dcgmi or "dcgmi", "diag", "-r", str(p["level"]), "-j"]
    result: Dict[str, Any] = dict(
        changed=False, ran=False, tests=[], dcgm_version=None, command=command, gpu_requirement=needed
    )
    if not dcgmi:
        outcome = unavailable(needed, "DCGM is not installed (no dcgmi on PATH), so its diagnostic did not run.")
        if outcome["status"] == "fail" and p["missing"] == "warn":
            outcome["status"] = "warn"
        finish(module, result, outcome["status"], outcome["reason"])
    if module.check_mode:
        module.exit_json(verdict="skip", reason="Check mode: dcgmi diag was not run.", **result)
    timeout = module.get_bin_path("timeout")
    cmd = [timeout, "--kill-after=15", str(p["timeout"]), *command] if timeout else command
    rc, out, err = module.run_command(cmd, environ_update={"LC_ALL": "C"})
    if timeout and rc in (124, 137):
        finish(module, result, "fail", f"dcgmi diag ran past {p['timeout']} s and was stopped.")
    parsed = _dcgm.parse(out)
    judged = _dcgm.verdict(parsed, rc, err or out)
    result.update(tests=parsed["tests"], dcgm_version=parsed["version"], ran=parsed["readable"])
    if judged["verdict"] == "not_run":
        outcome = unavailable(needed, judged["reason"])
        judged = {"verdict": outcome["status"], "reason": outcome["reason"]}
    finish(module, result, judged["verdict"], judged["reason"])


if __name__ == "__main__":
    main()
