#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trt_smoke
short_description: Check that TensorRT builds and runs an engine with correct numbers
version_added: 0.1.0
description:
  - Builds a small multilayer perceptron (four 1024-wide dense layers with ReLU) with TensorRT in
    fp32 and fp16, runs it, compares the output with a float64 numpy reference and reports the
    latency and the speedup over the same network run by the framework.
  - With TensorFlow 2.17 or older built with TensorRT, uses TF-TRT (C(TrtGraphConverterV2) on a
    SavedModel). Otherwise uses TensorRT's own Python API, with torch or cupy holding the device
    buffers (TF-TRT ended with TensorFlow 2.17).
  - The verdict is V(pass) when every precision agrees with the reference within its tolerance and
    V(fail) on a mismatch or error. Without a GPU it is V(fail) on a host that must have GPUs (see
    O(profile)), else V(skip); without TensorRT the same holds when O(want_tensorrt=true), and it is
    V(skip) when TensorRT is not part of the host's stack. Speedups are reported, never judged.
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
    description:
      - V(tf-trt) uses TensorFlow's converter, V(tensorrt) the TensorRT Python API. V(auto) takes
        TF-TRT when TensorFlow 2.17 or older is importable, else TensorRT.
    type: str
    choices: [auto, tf-trt, tensorrt]
    default: auto
  precisions:
    description: Engine precisions to build and check.
    type: list
    elements: str
    choices: [fp32, fp16]
    default: [fp32, fp16]
  batch:
    description: Rows of the input batch, 1 to 65536.
    type: int
    default: 256
  time_budget:
    description: Seconds of latency measurement, above 0 and at most 86400; engine builds come on top.
    type: float
    default: 20
  want_tensorrt:
    description:
      - TensorRT is part of this host's stack (C(dlstack_want_tensorrt)). With V(false), a missing TensorRT
        is a V(skip) even on a GPU host; a missing GPU still counts as O(required) says.
    type: bool
    default: true
requirements:
  - TensorRT (C(tensorrt) Python package) with torch or cupy, or TensorFlow <= 2.17 built with TensorRT.
notes:
  - TensorRT allows TF32 for fp32 layers on Ampere and newer GPUs by default, so the fp32 tolerance
    is that of TF32.
seealso:
  - module: gpulab.dlstack.gpu_smoke
"""

EXAMPLES = r"""
- name: TensorRT check in the default environment
  gpulab.dlstack.trt_smoke:
    python: /opt/dlstack/envs/default/bin/python
  register: trt

- name: Insist on TensorRT being there
  gpulab.dlstack.trt_smoke:
    backend: tensorrt
    precisions: [fp16]
    required: true
"""

RETURN = r"""
verdict:
  description: V(pass), V(fail), or V(skip) when nothing ran.
  returned: always
  type: str
  sample: skip
reason:
  description: Why the module skipped or failed; empty on pass.
  returned: always
  type: str
  sample: "No GPU to test: nvidia-smi is not installed and nvidia-ml-py is not importable: no NVIDIA driver here."
backend:
  description: V(tf-trt) or V(tensorrt); V(null) when nothing ran.
  returned: always
  type: str
  sample: tensorrt
versions:
  description: Versions of TensorRT, the framework and numpy.
  returned: always
  type: dict
  sample: {tensorrt: 10.3.0, numpy: 1.26.4}
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
checks:
  description: One entry per precision.
  returned: always
  type: dict
  sample:
    fp16:
      status: pass
      reason: "Agrees with the float64 reference (max relative error 0.0012 <= 0.02)."
      latency_ms: 0.09
      baseline_ms: 0.21
      speedup: 2.3
      build_s: 8.1
      max_rel_err: 0.0012
      tolerance: 0.02
baseline:
  description: Latency of the same network run by the framework without TensorRT.
  returned: when the workload ran
  type: dict
  sample: {framework: torch, latency_ms: 0.21, iterations: 5000}
gpu_requirement:
  description: Whether the GPU checks had to run (so that one which could not is V(fail)), and why.
  returned: always
  type: dict
  sample: {required: true, explicit: false, basis: "The host's profile is gpu, so its GPU checks must run."}
python_version:
  description: Version of the interpreter that ran the workload.
  returned: when the backend probe ran
  type: str
  sample: 3.11.2
elapsed_s:
  description: Wall time of the module.
  returned: always
  type: float
  sample: 40.2
would_run:
  description: In check mode, what the module would run; nothing is executed.
  returned: in check mode
  type: dict
  sample: {python: /usr/bin/python3, backend: auto, precisions: [fp32, fp16], batch: 256, time_budget: 20.0}
"""

import time
from typing import Any, Dict, List, Optional, Tuple

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _smoke, _verdict
from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import gather

try:
    import pynvml
except ImportError:
    pynvml = None

# TensorRT keeps TF32 on for fp32 layers by default, hence the TF32-sized fp32 bound.
TOLERANCES = {"fp32": 5e-3, "fp16": 2e-2}
TF_TRT_LAST = (2, 17)


def version_tuple(text: Optional[str]) -> Tuple[int, ...]:
    parts = []
    for piece in str(text or "").split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def choose(probe: Dict[str, Any], wanted: str) -> Tuple[Optional[str], str]:
    """tf-trt, tensorrt or None, with the reason."""
    backends = probe.get("backends", {})
    tf = backends.get("tensorflow", {})
    trt = backends.get("tensorrt", {})
    tf_ok = bool(tf.get("importable")) and version_tuple(tf.get("version")) <= TF_TRT_LAST
    if wanted == "tf-trt":
        if tf_ok:
            return "tf-trt", "asked for"
        return None, "backend=tf-trt needs TensorFlow <= 2.17 in {} (found {}).".format(
            probe.get("python"),
            tf.get("version"),
        )
    if wanted == "tensorrt" or not tf_ok:
        if trt.get("importable"):
            return (
                "tensorrt",
                "asked for" if wanted == "tensorrt" else "TensorRT Python API (TF-TRT needs TensorFlow <= 2.17)",
            )
        return None, "TensorRT is not importable by {} and TF-TRT needs TensorFlow <= 2.17 (found {}).".format(
            probe.get("python"),
            tf.get("version") or "none",
        )
    return "tf-trt", "TensorFlow {} can use TF-TRT".format(tf.get("version"))


def judge(doc: Dict[str, Any], needed: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    checks: Dict[str, Dict[str, Any]] = {}
    baseline = (doc.get("baseline") or {}).get("latency_ms")
    for precision, raw in (doc.get("precisions") or {}).items():
        entry = dict(raw)
        tol = TOLERANCES[precision]
        entry["tolerance"] = tol
        if raw.get("skipped"):
            entry.update(_verdict.unavailable(needed, str(raw["skipped"])))
        elif raw.get("error"):
            entry.update(status="fail", reason=str(raw["error"]))
        else:
            err = raw.get("max_rel_err")
            if err is None or err > tol:
                entry.update(
                    status="fail",
                    reason=f"Numerical mismatch against the float64 reference (max relative error {err} > {tol:g}).",
                )
            else:
                entry.update(
                    status="pass",
                    reason=f"Agrees with the float64 reference (max relative error {err:.3g} <= {tol:g}).",
                )
            if baseline and raw.get("latency_ms"):
                entry["baseline_ms"] = baseline
                entry["speedup"] = baseline / raw["latency_ms"]
        checks[precision] = entry
    return checks


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "python": {"type": "str"},
            "backend": {"type": "str", "choices": ["auto", "tf-trt", "tensorrt"], "default": "auto"},
            "precisions": {"type": "list", "elements": "str", "choices": ["fp32", "fp16"], "default": ["fp32", "fp16"]},
            "batch": {"type": "int", "default": 256},
            "time_budget": {"type": "float", "default": 20},
            "want_tensorrt": {"type": "bool", "default": True},
            "dest": {"type": "path"},
            **_verdict.REQUIREMENT_SPEC,
        },
        supports_check_mode=True,
    )
    started = time.monotonic()
    params = module.params
    python, result = _smoke.start(module, ("time_budget", "batch"))

    def finish() -> None:
        _smoke.finish(module, result, started, "The TensorRT check did not pass.")

    if module.check_mode:
        would_run = {key: params[key] for key in ("backend", "precisions", "batch", "time_budget")}
        _smoke.exit_check_mode(module, result, dict(would_run, python=python))

    def run(cmd: List[str]) -> Any:
        return module.run_command(cmd, environ_update={"LC_ALL": "C"})

    facts = gather(run, module.get_bin_path("nvidia-smi"), pynvml, timeout_bin=module.get_bin_path("timeout"))
    needed = _smoke.requirement(module, facts)
    result["gpu_requirement"] = needed
    if not facts["gpus"]:
        _smoke.set_unavailable(result, needed, "No GPU to test: %s" % (facts.get("reason") or "the driver lists none."))
        finish()
        return
    if not params["want_tensorrt"] and not needed["explicit"]:
        needed = _verdict.not_required("TensorRT is not part of this host's stack (want_tensorrt=false).")
    probe, error = _smoke.run_probe(module, python, result)
    if probe is None or error:
        result["verdict"] = "fail"
        result["reason"] = error or "The backend probe failed."
        finish()
        return
    backend, why = choose(probe, params["backend"])
    if backend is None:
        _smoke.set_unavailable(result, needed, why)
        finish()
        return
    config = {
        "backend": backend,
        "precisions": params["precisions"],
        "batch": params["batch"],
        "time_budget": params["time_budget"],
    }
    doc, error = _smoke.run_script(
        module, python, "trt", config, params["time_budget"] + _smoke.STARTUP_ALLOWANCE + 300
    )
    result["backend"] = backend
    result["backend_choice"] = why
    if doc:
        result["versions"] = doc.get("versions", {})
        if doc.get("baseline"):
            result["baseline"] = doc["baseline"]
    if error or doc is None:
        result["verdict"] = "fail"
        result["reason"] = error or "The workload returned nothing."
        finish()
        return
    if doc.get("skipped"):
        _smoke.set_unavailable(result, needed, str(doc["skipped"]))
        finish()
        return
    result["checks"] = judge(doc, needed)
    result["verdict"] = _verdict.worst(c["status"] for c in result["checks"].values())
    bad = [name for name, c in result["checks"].items() if c["status"] == "fail"]
    if bad:
        result["reason"] = "; ".join("{}: {}".format(name, result["checks"][name]["reason"]) for name in bad)
    finish()


if __name__ == "__main__":
    main()
