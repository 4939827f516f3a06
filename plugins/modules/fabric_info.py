#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fabric_info
short_description: Detect an NVSwitch system and report its fabric manager packages and service
version_added: 0.1.0
description:
  - Reads the PCI bus from sysfs (no driver needed). A host is an NVSwitch system when NVIDIA bridge-class (0x0680)
    devices with a known NVSwitch id are on it (HGX-2, HGX A100, HGX H100/H200), or GPUs sold only on a
    fourth-generation NVSwitch baseboard (HGX B200), whose switches are not on the host's PCI bus; those also need
    NVLSM.
  - With O(driver_version), returns the fabric manager packages at exactly that driver version for O(manager).
  - With O(check_service), asks systemd whether the fabric manager runs and gives a verdict - V(pass) when it runs
    on an NVSwitch system, V(fail) with the reason when it does not, V(skip) with the reason on other hosts.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
options:
  pci_devices_path:
    description: The sysfs folder of PCI devices (tests point it at a stand-in tree).
    type: path
    default: /sys/bus/pci/devices
  driver_version:
    description: The exact driver version (C(535.161.08); an epoch and packaging revision are dropped).
    type: str
  manager:
    description: Package manager whose names are returned.
    type: str
    choices: [apt, dnf]
    default: apt
  force:
    description: Treat the host as an NVSwitch system (V(true)) or as none (V(false)) whatever the PCI bus shows.
    type: bool
  check_service:
    description: Ask systemd for the fabric manager's state and return a verdict.
    type: bool
    default: false
  dest:
    description: Also write the result as JSON to this file; the module then reports a change when the file changes.
    type: path
"""

EXAMPLES = r"""
- name: Detect the NVSwitch system and the packages for the installed driver
  gpulab.dlstack.fabric_info:
    driver_version: 535.161.08-1
  register: fabric
"""

RETURN = r"""
nvswitch:
  description: Whether the host is an NVSwitch system.
  returned: always
  type: bool
generation:
  description: NVSwitch generation (1-4), or null.
  returned: always
  type: int
board:
  description: The baseboard the devices belong to, such as C(HGX H100/H200/H800/H20), or null.
  returned: always
  type: str
nvlsm_required:
  description: Whether NVLSM must run beside the fabric manager (fourth-generation NVSwitch).
  returned: always
  type: bool
switches:
  description: PCI addresses of the NVSwitch devices seen.
  returned: always
  type: list
  elements: str
reason:
  description: One sentence on what was found (and, with O(check_service), on the verdict).
  returned: always
  type: str
packages:
  description: Fabric manager packages (name, version pattern, install spec); empty without O(driver_version).
  returned: always
  type: list
  elements: dict
  sample: [{name: nvidia-fabricmanager-535, version: 535.161.08-*, spec: nvidia-fabricmanager-535=535.161.08-*}]
service:
  description: The fabric manager's systemd unit name.
  returned: always
  type: str
service_state:
  description: C(systemctl is-active) answer, or null when not asked or systemctl is missing.
  returned: always
  type: str
verdict:
  description: V(pass), V(fail) or V(skip) with O(check_service); null otherwise.
  returned: always
  type: str
"""

from typing import Any, Dict, Optional

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _fabric, _smoke
from ansible_collections.gpulab.dlstack.plugins.module_utils._matrix import FABRIC_MANAGER


def service_state(module: AnsibleModule, service: str) -> Optional[str]:
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return None
    _rc, out, _err = module.run_command([systemctl, "is-active", service])
    return out.strip().splitlines()[0] if out.strip() else None


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            pci_devices_path=dict(type="path", default="/sys/bus/pci/devices"),
            driver_version=dict(type="str"),
            manager=dict(type="str", choices=["apt", "dnf"], default="apt"),
            force=dict(type="bool"),
            check_service=dict(type="bool", default=False),
            dest=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    found = _fabric.detect(_fabric.scan_pci(p["pci_devices_path"]))
    if p["force"] is not None:
        found["nvswitch"] = p["force"]
        found["reason"] = f"force={p['force']} ({found['reason']})"
    result: Dict[str, Any] = dict(changed=False, packages=[], service=FABRIC_MANAGER["service"], service_state=None)
    result["verdict"] = None
    result.update(found)
    if p["driver_version"] and found["nvswitch"]:
        try:
            result["packages"] = _fabric.packages(p["manager"], p["driver_version"], found["nvlsm_required"])
        except ValueError as err:
            module.fail_json(msg=str(err), **result)
    if p["check_service"]:
        state = service_state(module, result["service"]) if found["nvswitch"] else None
        result["service_state"] = state
        result.update(_fabric.verdict(found, state, result["service"]))
    result["changed"] = _smoke.write_dest(module, p["dest"], result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
