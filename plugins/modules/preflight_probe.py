#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight_probe
short_description: Read in one call everything the preflight role checks on a host
version_added: 0.1.0
description:
  - Used by the C(preflight) role, which runs on every host at the start of every run; one call on the host instead
    of one per check keeps a re-run of an unchanged fleet fast.
  - Returns the host's GPU facts as M(gpulab.dlstack.gpu_info) does (RV(gpu)), the container marker files present
    (RV(container_markers)), the stack recorded by an earlier run (RV(recorded)), the free space on the filesystem
    that holds or will hold O(space) (RV(space)) and whether the pending-reboot marker O(reboot_marker) exists
    (RV(reboot_pending)).
  - A missing record or GPU is not an error; a record that is not a JSON object is returned as empty, with the
    reason in RV(recorded_error).
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
  - gpulab.dlstack.smoke.gpu_requirement
options:
  gpu:
    description: Read the GPU facts; V(false) leaves RV(gpu) empty (C(preflight_gpu_enabled=false)).
    type: bool
    default: true
  nvidia_smi:
    description: The C(nvidia-smi) to run, a name looked up on the E(PATH) or a path.
    type: str
    default: nvidia-smi
  sysfs_root:
    description: The sysfs folder of PCI devices scanned for NVIDIA GPUs, which needs no driver.
    type: path
    default: /sys/bus/pci/devices
  record:
    description: The JSON file an earlier run recorded the stack in (C(preflight_fact_path)).
    type: path
  space:
    description: The path whose filesystem's free space is measured; a path that does not exist yet is measured at
      its nearest existing parent.
    type: path
  reboot_marker:
    description: The file whose existence means a reboot is pending (C(/var/run/reboot-required) on Debian).
    type: path
seealso:
  - module: gpulab.dlstack.gpu_info
"""

EXAMPLES = r"""
- name: Read what preflight checks
  gpulab.dlstack.preflight_probe:
    profile: gpu
    record: /etc/ansible/facts.d/dlstack.fact
    space: /opt/dlstack
    reboot_marker: /var/run/reboot-required
  register: probe
"""

RETURN = r"""
gpu:
  description: What M(gpulab.dlstack.gpu_info) returns (C(gpus), C(host_gpus), C(count), C(verdict), C(reason)...);
    empty with O(gpu=false).
  returned: always
  type: dict
container_markers:
  description: The container marker files that exist on the host.
  returned: always
  type: list
  elements: str
  sample: [/.dockerenv]
recorded:
  description: The object recorded in O(record); empty when there is none.
  returned: always
  type: dict
recorded_error:
  description: Why O(record) exists but could not be read as a JSON object.
  returned: when the record is unreadable
  type: str
space:
  description: Free space on the filesystem of O(space) (C(free_kb), what df calls Available), its size
    (C(total_kb)), the existing C(path) measured and the C(mount) point.
  returned: when O(space) is given
  type: dict
  sample: {path: /opt, mount: /, free_kb: 51200000, total_kb: 102400000}
reboot_pending:
  description: Whether O(reboot_marker) exists.
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _host_probe
from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import container_markers
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import REQUIREMENT_SPEC


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "gpu": {"type": "bool", "default": True},
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
            "sysfs_root": {"type": "path", "default": "/sys/bus/pci/devices"},
            "record": {"type": "path"},
            "space": {"type": "path"},
            "reboot_marker": {"type": "path"},
            **REQUIREMENT_SPEC,
        },
        supports_check_mode=True,
    )
    params = module.params
    gpu = _host_probe.gpu_facts(module, "auto", params["nvidia_smi"], params["sysfs_root"]) if params["gpu"] else {}
    result = {
        "changed": False,
        "gpu": gpu,
        "container_markers": container_markers(),
        "reboot_pending": bool(params["reboot_marker"]) and os.path.lexists(params["reboot_marker"]),
        "recorded": {},
    }
    if params["record"]:
        result["recorded"], error = _host_probe.read_record(params["record"])
        if error:
            result["recorded_error"] = error
    if params["space"]:
        result["space"] = _host_probe.free_space(params["space"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
