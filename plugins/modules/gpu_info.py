#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_info
short_description: Report NVIDIA GPUs and driver facts
version_added: 0.1.0
description:
  - Reads every NVIDIA GPU through NVML (C(nvidia-ml-py)) when it is importable, otherwise through
    C(nvidia-smi --query-gpu) in CSV form.
  - Reports index, UUID, name, PCI bus and device id, compute capability, memory, driver and CUDA
    driver version, ECC, persistence and MIG mode, maximum clocks, PCIe generation and width.
  - Detects the C(Driver/library version mismatch) left by a driver upgrade without reboot.
  - A host without GPU or driver is not an error; the module succeeds with RV(gpus=[]) and a
    RV(reason) (driver not loaded, driver/library mismatch with a reboot pending, GPU lost, no device
    node in a container, GPUs on the PCI bus with no driver bound).
  - RV(verdict) is V(pass) when the driver lists GPUs. When it lists none it is V(fail) on a host that
    must have GPUs (see O(profile)) and V(skip) elsewhere (V(warn) for a pending reboot); the task
    itself never fails.
  - Also lists the NVIDIA display/3D controllers and NVSwitches visible in sysfs, which does not need a driver.
  - RV(host_gpus) is the host's GPU list in one shape (the driver's GPUs, else those on the PCI bus); the
    C(preflight) role reads GPUs through this module and takes that list as C(dlstack_gpus).
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
  - gpulab.dlstack.smoke.gpu_requirement
options:
  source:
    description:
      - Where to read the facts from. V(auto) tries NVML first and falls back to C(nvidia-smi).
    type: str
    choices: [auto, nvml, nvidia-smi]
    default: auto
  nvidia_smi:
    description:
      - The C(nvidia-smi) to run, a name looked up on the E(PATH) or a path.
    type: str
    default: nvidia-smi
  sysfs_root:
    description:
      - The sysfs folder of PCI devices scanned for NVIDIA GPUs and NVSwitches, which needs no driver.
      - A test points it at a stub tree (the fake-PCI stand-in of C(nox -s demo -- gpu)).
    type: path
    default: /sys/bus/pci/devices
  dest:
    description:
      - Also write the result as JSON to this file on the target. Only then can the module report
        a change (when the file content differs).
    type: path
requirements:
  - C(nvidia-ml-py) (optional; C(nvidia-smi) is used without it)
notes:
  - C(nvidia-smi) prints C([N/A]) or C([Not Supported]) for fields a GPU lacks; they are returned
    as V(null).
seealso:
  - module: gpulab.dlstack.gpu_smoke
"""

EXAMPLES = r"""
- name: Read GPU facts
  gpulab.dlstack.gpu_info:
  register: gpu

- name: Stop when the driver needs a reboot
  ansible.builtin.fail:
    msg: "{{ gpu.reason }}"
  when: gpu.reboot_required

- name: Force nvidia-smi and keep a copy of the result
  gpulab.dlstack.gpu_info:
    source: nvidia-smi
    dest: /var/lib/dlstack/verify/gpu_info.json
"""

RETURN = r"""
gpus:
  description:
    - One entry per GPU, in driver (PCI bus) order. Unknown values are V(null).
    - A GPU in MIG mode also has C(mig_devices), the MIG devices C(nvidia-smi -L) lists under it (profile,
      index, UUID); CUDA sees those, and gpu_smoke's verdicts on such a GPU are at most V(warn).
  returned: always
  type: list
  elements: dict
  sample:
    - index: 0
      uuid: GPU-6f1c3b9e-2a4d-8e51-93b7-0c4e2d1a7f55
      name: NVIDIA H100 80GB HBM3
      pci_bus_id: "00000000:18:00.0"
      pci_bus_id_short: "0000:18:00.0"
      pci_device_id: "2330"
      compute_capability: "9.0"
      memory_total_mib: 81559
      driver_version: 550.54.15
      ecc_mode: enabled
      persistence_mode: true
      mig_mode: disabled
      clocks_max_sm_mhz: 1980
      clocks_max_mem_mhz: 2619
      pcie_gen_current: 5
      pcie_gen_max: 5
      pcie_width_current: 16
      pcie_width_max: 16
      reset_required: false
      mig_devices:
        - {profile: 1g.10gb, index: 0, uuid: MIG-feb88891-0321-5fef-9c87-d4af3b54259e}
count:
  description: Number of GPUs the driver lists.
  returned: always
  type: int
  sample: 1
driver_version:
  description: NVIDIA driver version, V(null) without a working driver.
  returned: always
  type: str
  sample: 550.54.15
cuda_driver_version:
  description: Highest CUDA version the driver supports.
  returned: always
  type: str
  sample: "12.4"
source:
  description: Where the facts came from (V(nvml), V(nvidia-smi) or V(none)).
  returned: always
  type: str
  sample: nvidia-smi
verdict:
  description: V(pass) when the driver lists GPUs, else V(fail), V(warn) or V(skip) as described above.
  returned: always
  type: str
  sample: pass
gpu_requirement:
  description: Whether GPUs had to answer (so that none answering is V(fail)), and why.
  returned: always
  type: dict
  sample: {required: true, explicit: false, basis: "The host's profile is gpu, so its GPU checks must run."}
reason:
  description:
    - Why no GPU, or not every GPU, is listed, and on a host that must have GPUs why that fails.
    - Empty when all were found.
  returned: always
  type: str
  sample: "No NVIDIA driver is loaded or reachable (nvidia-smi rc=255: Failed to initialize NVML: Unknown Error)."
failure:
  description:
    - Class of the failure when no or not every GPU could be read, V(null) otherwise.
    - One of V(driver_library_mismatch), V(gpu_lost), V(nvml_library_missing), V(no_driver), V(no_devices),
      V(timeout) or V(unknown).
  returned: always
  type: str
  sample: gpu_lost
lost_gpus:
  description: GPUs the driver could not reach (fell off the bus, "GPU is lost"); the other GPUs are still listed.
  returned: always
  type: list
  elements: dict
  sample:
    - pci_bus_id: "0000:02:00.0"
      error: GPU is lost. Reboot the system to recover this GPU
kernel_module_version:
  description: Version of the loaded NVIDIA kernel module (C(/proc/driver/nvidia/version)), V(null) without one.
  returned: always
  type: str
  sample: 550.163.01
driver_library_mismatch:
  description: The kernel module and user-space driver libraries have different versions.
  returned: always
  type: bool
  sample: false
reboot_required:
  description:
    - A reboot is needed before every GPU can be used (after a driver upgrade, a lost GPU or one that requires a reset).
  returned: always
  type: bool
  sample: false
pci_devices:
  description: NVIDIA display/3D controllers seen in sysfs, with the kernel driver bound to each.
  returned: always
  type: list
  elements: dict
  sample:
    - address: "0000:18:00.0"
      device_id: "2330"
      class: "030200"
      driver: nvidia
pci_nvidia_present:
  description: Whether sysfs shows at least one NVIDIA GPU, driver or not.
  returned: always
  type: bool
  sample: true
pci_nvswitches:
  description: NVIDIA NVSwitches (PCI class 0680) seen in sysfs, as RV(pci_devices); an HGX/DGX baseboard has them.
  returned: always
  type: list
  elements: dict
  sample:
    - address: "0000:05:00.0"
      device_id: "22a3"
      class: "068000"
      driver: nvidia-nvswitch
host_gpus:
  description:
    - The GPUs in one shape whatever answered, as the C(preflight) role records them (C(dlstack_gpus)).
    - The driver's GPUs when it lists any (plus, for a lost GPU, its PCI entry), else the PCI bus's.
  returned: always
  type: list
  elements: dict
  sample:
    - pci_bus_id: "0000:18:00.0"
      pci_device_id: "2330"
      name: null
      compute_capability: null
      driver_version: null
      kernel_driver: null
      class: "030200"
      source: pci
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.gpulab.dlstack.plugins.module_utils import _host_probe
from ansible_collections.gpulab.dlstack.plugins.module_utils._smoke import write_dest
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import REQUIREMENT_SPEC


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "source": {"type": "str", "choices": ["auto", "nvml", "nvidia-smi"], "default": "auto"},
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
            "sysfs_root": {"type": "path", "default": "/sys/bus/pci/devices"},
            "dest": {"type": "path"},
            **REQUIREMENT_SPEC,
        },
        supports_check_mode=True,
    )
    source = module.params["source"]
    if source == "nvml" and _host_probe.pynvml is None:
        module.fail_json(msg=missing_required_lib("nvidia-ml-py"), exception=_host_probe.PYNVML_IMPORT_ERROR)
    result = _host_probe.gpu_facts(module, source, module.params["nvidia_smi"], module.params["sysfs_root"])
    changed = write_dest(module, module.params["dest"], result)
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
