#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: xla_smoke
short_description: Check that XLA compiles and gives the same numbers as the framework without it
version_added: 0.1.0
description:
  - Runs a fusion-friendly element-wise chain (gelu and tanh, O(steps) rounds on an
    O(size) x O(size) float32 tensor) once compiled by XLA and once without it, on CPU or GPU.
  - TensorFlow compares C(tf.function(jit_compile=True)) with the same C(tf.function) without XLA;
    JAX compares C(jax.jit) (lowered and compiled ahead, so compile time is separate) with
    op-by-op dispatch. C(torch.compile) is not XLA, so the torch backend reports a skip, as does cupy.
  - Inputs are made outside the compiled function. Outputs are compared element by element with
    O(rtol) and O(atol) (as C(numpy.allclose)); TF32 is switched off so both paths run in float32.
  - The verdict is V(pass) when the numbers agree and V(fail) when they do not. The speedup is
    reported, never judged.
  - On a host that must have GPUs (see O(profile)) with O(device=auto), a framework that sees no GPU
    and runs XLA on the CPU only is a V(fail) with that reason (the CPU figures are kept); elsewhere
    it is a V(pass) on the CPU.
  - The workload runs with the Python interpreter of the environment under test (O(python)).
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
  - gpulab.dlstack.smoke
  - gpulab.dlstack.smoke.gpu_requirement
options:
  backend:
    description: Framework to test. V(auto) takes the first importable of tensorflow, jax.
    type: str
    choices: [auto, tensorflow, jax, torch, cupy]
    default: auto
  device:
    description: Where to run. V(auto) uses a GPU when the framework sees one, else the CPU.
    type: str
    choices: [auto, cpu, gpu]
    default: auto
  size:
    description: Side of the square input tensor, 1 to 32768.
    type: int
    default: 2048
  steps:
    description: Rounds of the gelu/tanh chain, 1 to 1000.
    type: int
    default: 8
  rtol:
    description: Relative tolerance of the element-wise comparison, 0 to 1.
    type: float
    default: 1.0e-5
  atol:
    description: Absolute tolerance of the element-wise comparison, 0 to 1.
    type: float
    default: 1.0e-4
  time_budget:
    description:
      - Seconds of steady-state timing, split between the two paths; framework import and compile
        come on top.
      - Above 0 and at most 86400.
    type: float
    default: 20
requirements:
  - tensorflow or jax, and numpy, in the environment of O(python).
seealso:
  - module: gpulab.dlstack.gpu_smoke
"""

EXAMPLES = r"""
- name: XLA on whatever device the default environment has
  gpulab.dlstack.xla_smoke:
    python: /opt/dlstack/envs/default/bin/python
  register: xla

- name: Compare JAX on CPU with a looser tolerance
  gpulab.dlstack.xla_smoke:
    backend: jax
    device: cpu
    atol: 1.0e-3
"""

RETURN = r"""
verdict:
  description: V(pass) when XLA and the reference agree, V(fail) when not, V(skip) when nothing ran.
  returned: always
  type: str
  sample: pass
reason:
  description: Why the module skipped or failed; empty on pass.
  returned: always
  type: str
  sample: ""
backend:
  description: Framework that ran the workload.
  returned: always
  type: str
  sample: tensorflow
versions:
  description: Versions of the framework and numpy.
  returned: always
  type: dict
  sample: {tensorflow: 2.21.0, numpy: 2.1.3}
python:
  description: Interpreter that ran (or would run) the workload.
  returned: always
  type: str
  sample: /opt/dlstack/envs/default/bin/python
user:
  description: User the module and its workload ran as (the verify role runs them as an unprivileged user, not root).
  returned: always
  type: str
  sample: dlstack-smoke
device:
  description: Device the chain ran on (V(cpu) or V(gpu)).
  returned: when the workload ran
  type: str
  sample: cpu
checks:
  description: The XLA check with its figures.
  returned: always
  type: dict
  sample:
    xla:
      status: pass
      reason: "XLA and the reference agree element-wise (max abs error 2.4e-07)."
      shape: [2048, 2048]
      steps: 8
      compile_s: 0.41
      steady_xla_s: 0.021
      steady_reference_s: 0.035
      speedup: 1.67
      max_abs_err: 2.4e-07
      rtol: 1.0e-05
      atol: 0.0001
gpu_requirement:
  description: Whether the XLA check had to run on a GPU (so that one which could not is V(fail)), and why.
  returned: always
  type: dict
  sample: {required: false, explicit: false, basis: "The host's profile is cpu."}
python_version:
  description: Version of the interpreter that ran the workload.
  returned: when the backend probe ran
  type: str
  sample: 3.11.2
elapsed_s:
  description: Wall time of the module.
  returned: always
  type: float
  sample: 14.2
would_run:
  description: In check mode, what the module would run; nothing is executed.
  returned: in check mode
  type: dict
  sample: {python: /usr/bin/python3, backend: auto, device: auto, size: 2048, steps: 8, time_budget: 20.0}
"""

import time
from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _smoke, _verdict
from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import gather

try:
    import pynvml
except ImportError:
    pynvml = None

BACKEND_ORDER = ["tensorflow", "jax"]


def judge(doc: Dict[str, Any], needed: Dict[str, Any], device: str = "auto") -> Dict[str, Any]:
    """The xla check entry from the workload's document; on a GPU host, XLA on the CPU only is not a pass."""
    if doc.get("skipped"):
        return _verdict.unavailable(needed, str(doc["skipped"]))
    found = dict(doc.get("result") or {})
    if not found:
        return {"status": "fail", "reason": "The workload returned no comparison."}
    tolerance = f"rtol {found.get('rtol')}, atol {found.get('atol')}"
    if found.get("allclose"):
        found["status"] = "pass"
        found["reason"] = (
            f"XLA and the reference agree element-wise (max abs error {found.get('max_abs_err')}, {tolerance})."
        )
    else:
        found["status"] = "fail"
        found["reason"] = (
            f"Numerical mismatch between XLA and the reference (max abs error {found.get('max_abs_err')}, {tolerance})."
        )
    if found["status"] == "pass" and device == "auto" and doc.get("device") == "cpu" and needed["required"]:
        seen = "{} sees no GPU, so XLA ran on the CPU only.".format(doc.get("backend") or "The framework")
        found.update(_verdict.unavailable(needed, seen))
    return found


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "python": {"type": "str"},
            "backend": {"type": "str", "choices": ["auto", "tensorflow", "jax", "torch", "cupy"], "default": "auto"},
            "device": {"type": "str", "choices": ["auto", "cpu", "gpu"], "default": "auto"},
            "size": {"type": "int", "default": 2048},
            "steps": {"type": "int", "default": 8},
            "rtol": {"type": "float", "default": 1.0e-5},
            "atol": {"type": "float", "default": 1.0e-4},
            "time_budget": {"type": "float", "default": 20},
            "dest": {"type": "path"},
            **_verdict.REQUIREMENT_SPEC,
        },
        supports_check_mode=True,
    )
    started = time.monotonic()
    params = module.params
    python, result = _smoke.start(module, ("time_budget", "size", "steps", "rtol", "atol"))

    def finish() -> None:
        _smoke.finish(module, result, started, "The XLA check did not pass.")

    if module.check_mode:
        would_run = {key: params[key] for key in ("backend", "device", "size", "steps", "time_budget", "rtol", "atol")}
        _smoke.exit_check_mode(module, result, dict(would_run, python=python))

    def run(cmd: List[str]) -> Any:
        return module.run_command(cmd, environ_update={"LC_ALL": "C"})

    facts = gather(run, module.get_bin_path("nvidia-smi"), pynvml, timeout_bin=module.get_bin_path("timeout"))
    gpu_present = bool(facts["gpus"])
    needed = _smoke.requirement(module, facts)
    if params["device"] == "cpu" and not needed["explicit"]:
        needed = _verdict.not_required("device=cpu was asked for.")
    result["gpu_requirement"] = needed
    probe, error = _smoke.run_probe(module, python, result)
    if probe is None or error:
        result["verdict"] = "fail"
        result["reason"] = error or "The backend probe failed."
        finish()
    backend, why = _smoke.choose_backend(
        probe or {}, params["backend"], BACKEND_ORDER, gpu_present and params["device"] != "cpu"
    )
    if backend is None:
        _smoke.set_unavailable(result, needed, why)
        finish()
        return
    config = {key: params[key] for key in ("device", "size", "steps", "rtol", "atol", "time_budget")}
    config["backend"] = backend
    doc, error = _smoke.run_script(module, python, "xla", config, params["time_budget"] + _smoke.STARTUP_ALLOWANCE)
    result["backend"] = backend
    result["backend_choice"] = why
    if doc:
        result["versions"] = doc.get("versions", {})
        if doc.get("device"):
            result["device"] = doc["device"]
    if error or doc is None:
        result["verdict"] = "fail"
        result["reason"] = error or "The workload returned nothing."
        finish()
        return
    result["checks"] = {"xla": judge(doc, needed, params["device"])}
    result["verdict"] = result["checks"]["xla"]["status"]
    if result["verdict"] != "pass":
        result["reason"] = result["checks"]["xla"]["reason"]
    finish()


if __name__ == "__main__":
    main()
