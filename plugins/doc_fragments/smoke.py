# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Options shared by the smoke modules (gpu_smoke, xla_smoke, trt_smoke)."""

    DOCUMENTATION = r"""
options:
  python:
    description:
      - Absolute path of the Python interpreter that runs the workload, usually an environment's
        C(bin/python). Defaults to the interpreter running this module.
    type: str
  dest:
    description: Also write the result as JSON to this file; the module then reports a change when the file changes.
    type: path
"""

    # Options of every verification module that decide whether its GPU checks must run.
    GPU_REQUIREMENT = r"""
options:
  required:
    description:
      - Whether the GPU checks must run. V(true) turns a check that cannot run (no driver, reboot pending,
        GPU lost, no device in the container, framework without GPU) into V(fail), and the smoke modules
        then fail the task; V(false) makes it V(skip).
      - Unset, O(profile) decides, and a V(fail) verdict is returned without failing the task.
    type: bool
  profile:
    description:
      - The host's C(dlstack_profile). V(gpu) means the GPU checks must run; V(cpu) means they skip;
        V(auto) means they must run when NVIDIA GPUs are on the PCI bus or O(gpu_seen=true).
    type: str
    choices: [auto, gpu, cpu]
    default: auto
  gpu_seen:
    description:
      - An earlier run saw NVIDIA GPUs on this host (the C(gpu_present) local fact preflight records), so with
        O(profile=auto) the GPU checks must run even when no GPU answers now.
    type: bool
    default: false
"""
