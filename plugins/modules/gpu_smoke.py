#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_smoke
short_description: Measure GPU matmul, memory and PCIe throughput against spec and give verdicts
version_added: 0.1.0
description:
  - For every GPU, measures matrix-multiply throughput in fp32, tf32, bf16 and fp16 where the GPU
    has them, checks each product against a float64 reference on a 256x256 slice, measures device
    memory bandwidth with a copy kernel and host-to-device and device-to-host copies from pinned
    memory.
  - Runs a 3x3 convolution through cuDNN in fp32 (TF32 off) and fp16 (C(conv_fp32), C(conv_fp16); torch
    C(conv2d), C(jax.lax.conv_general_dilated), C(cupy.cudnn), C(tf.nn.conv2d)), checks 8 output channels of
    the first image against a float64 numpy convolution and judges its TFLOP/s against the spec peak of
    that precision (O(thresholds.conv_pass)). A cuDNN that does not match the framework fails here, at the
    first convolution, as it would in training. The figure names the library that ran it (C(library)).
  - Each figure is divided by the GPU's spec peak (looked up by PCI device id in the collection's
    GPU table, which O(peaks) can extend) and graded V(pass), V(warn), V(fail) or V(skip).
    Copies are compared with the theoretical one-way rate of the PCIe link the driver reports
    (generation x lanes; 4, 8, 16, 32, 64 GB/s at x16 for gen1 to gen5).
  - Each check runs in synchronised rounds of about 20 ms for its share of O(time_budget). The
    figure judged against spec is the fastest round (the GPU at full clocks, as the usual "warm up,
    then time a few calls" benchmark measures it); C(sustained) is the rate over the whole run. A
    GPU that holds less than O(thresholds.sustain_warn) of its fastest rate (power or thermal
    capping, a lowered power limit) is at most V(warn). On an H200 at its 700 W cap a long bf16
    8192^3 GEMM sustains about 85 % of its first rounds.
  - A figure judged against a spec value the GPU table marks unverified (C([U])) says so and is at most
    V(warn); so is a figure from a GPU in MIG mode, which measured one MIG instance, not the whole GPU.
  - A numerical mismatch fails outright. The overall verdict is the worst check; a host with
    several GPUs is gated on its slowest GPU, and checks whose GPUs differ by more than
    O(thresholds.spread_pct) are flagged and at least V(warn).
  - The workload runs with the Python interpreter of the environment under test (O(python)), not
    with the one Ansible uses, so results describe the framework the users will run.
  - When the GPUs cannot be tested (no driver, reboot pending, GPU lost, no device in the container,
    framework without GPU) the verdict is V(fail) with that reason on a host that must have GPUs (see
    O(profile)) and V(skip) with the reason elsewhere; nothing is reported as passed that did not run.
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
      - Framework that runs the workload. V(auto) takes the first importable GPU build of
        torch, jax, cupy, tensorflow.
    type: str
    choices: [auto, tensorflow, jax, torch, cupy]
    default: auto
  checks:
    description: Checks to run.
    type: list
    elements: str
    choices: [matmul_fp32, matmul_tf32, matmul_bf16, matmul_fp16, memory_bw, h2d, d2h, conv_fp32, conv_fp16]
    default: [matmul_fp32, matmul_tf32, matmul_bf16, matmul_fp16, memory_bw, h2d, d2h, conv_fp32, conv_fp16]
  time_budget:
    description:
      - Seconds of measurement for all GPUs together; loops shorten to fit. Interpreter start and
        framework import come on top (up to 240 s more before the workload is stopped).
      - Above 0 and at most 86400; C(nan), C(inf) and other values are refused.
    type: float
    default: 60
  matmul_size:
    description: Side of the square matrices (GPUs under 12 GiB use at most 4096), 256 to 65536.
    type: int
    default: 8192
  memory_mib:
    description: Size of the buffer the device copy kernel reads and writes, 1 to 262144.
    type: int
    default: 1024
  copy_mib:
    description: Size of the pinned host buffer for host/device copies, 1 to 65536.
    type: int
    default: 256
  conv_batch:
    description:
      - Images per call of the convolution checks (C(conv_fp32), C(conv_fp16)), 1 to 4096. Each image is
        O(conv_channels) x 56 x 56, convolved with O(conv_channels) 3x3 filters (stride 1, padding 1).
    type: int
    default: 32
  conv_channels:
    description: Input and output channels of the convolution checks, 8 to 4096.
    type: int
    default: 256
  thresholds:
    description:
      - Fractions of spec that pass or warn; below the warn fraction a check fails.
      - Pass fractions are above 0 and at most 1, warn fractions 0 to 1 and at or below their pass fraction;
        other values are refused before anything runs.
    type: dict
    default: {}
    suboptions:
      matmul_pass:
        description: Matmul throughput fraction of spec peak that passes.
        type: float
        default: 0.70
      matmul_warn:
        description: Matmul throughput fraction of spec peak below which the check fails.
        type: float
        default: 0.60
      memory_pass:
        description: Device memory bandwidth fraction of spec that passes.
        type: float
        default: 0.80
      memory_warn:
        description: Device memory bandwidth fraction below which the check fails.
        type: float
        default: 0.70
      pcie_pass:
        description: Host/device copy fraction of the theoretical one-way link rate that passes.
        type: float
        default: 0.70
      pcie_warn:
        description: Host/device copy fraction below which the check fails.
        type: float
        default: 0.60
      spread_pct:
        description: Percent difference between the fastest and slowest GPU of a host that is flagged.
        type: float
        default: 5.0
      sustain_warn:
        description:
          - Fraction of its fastest-round rate a check must hold over the whole run; below it a
            passing check becomes V(warn) (power or thermal capping).
        type: float
        default: 0.70
      conv_pass:
        description:
          - Convolution throughput fraction of the spec peak of its precision (fp32, fp16) that passes.
          - A judgment, not a published figure [U] (cuDNN convolutions of this shape reach less of the peak
            than a large GEMM); adjust it to what a known-good board of yours measures.
        type: float
        default: 0.35
      conv_warn:
        description: Convolution throughput fraction of spec below which the check fails.
        type: float
        default: 0.25
  peaks:
    description:
      - GPU spec rows merged over the collection's table. A row with a known name or PCI device id
        updates that entry (keys given only); any other row is added.
      - Keys as in the table, for example C(name), C(aliases), C(pci_device_ids) (4 hex digits),
        C(compute_capability), C(peak_tflops) (C(fp32), C(tf32), C(bf16), C(fp16)),
        C(mem_bw_gbs), C(pcie_gen), C(source).
      - Each row needs C(name) or C(pci_device_ids); peaks must be positive numbers.
    type: list
    elements: dict
    default: []
requirements:
  - One of torch, jax, cupy or tensorflow (GPU build) and numpy in the environment of O(python).
notes:
  - The matmul figures are dense throughput; C(tf32) with the cupy backend and host copies with the
    jax and tensorflow backends are skipped, since those frameworks cannot select them per call.
seealso:
  - module: gpulab.dlstack.gpu_info
  - module: gpulab.dlstack.xla_smoke
"""

EXAMPLES = r"""
- name: Smoke-test the GPUs with the default environment's framework
  gpulab.dlstack.gpu_smoke:
    python: /opt/dlstack/envs/default/bin/python
  register: smoke

- name: Quick bf16-only check with stricter limits, and a card the table lacks
  gpulab.dlstack.gpu_smoke:
    backend: torch
    checks: [matmul_bf16, memory_bw]
    time_budget: 20
    thresholds:
      matmul_pass: 0.75
    peaks:
      - name: NVIDIA RTX 6000 Ada Generation
        pci_device_ids: ["26b1"]
        peak_tflops: {fp32: 91.1, tf32: 91.1, bf16: 182.2, fp16: 182.2}
        mem_bw_gbs: 960
        pcie_gen: 4
"""

RETURN = r"""
verdict:
  description: Worst status over all checks and GPUs; V(skip) only when nothing ran.
  returned: always
  type: str
  sample: pass
reason:
  description: Why the module skipped or failed as a whole; empty otherwise.
  returned: always
  type: str
  sample: "No NVIDIA driver is loaded or reachable (nvidia-smi rc=255: Failed to initialize NVML: Unknown Error)."
backend:
  description: Framework that ran the workload, V(null) when none ran.
  returned: always
  type: str
  sample: torch
versions:
  description: Versions of the framework, CUDA and numpy that produced the figures.
  returned: always
  type: dict
  sample: {torch: 2.5.1, cuda: "12.4", numpy: 2.1.3}
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
  description:
    - Host view per check, gated on the slowest GPU; the figure is that GPU's, status the worst.
  returned: always
  type: dict
  sample:
    matmul_bf16:
      status: pass
      value: 785.2
      unit: TFLOP/s
      fraction: 0.79
      peak: 989.0
      sustained: 671.6
      sustained_fraction: 0.85
      slowest_gpu: 0
      spread_pct: 0.0
      gpus: 1
      reason: "79 % of spec (pass at 70 %)."
gpus:
  description: Per-GPU figures and verdicts.
  returned: always
  type: list
  elements: dict
  sample:
    - index: 0
      name: NVIDIA H200
      pci_device_id: "2335"
      spec: {name: NVIDIA H200, source: NVIDIA H200 datasheet}
      link: {gen: 5, width: 16, gbs: 64.0, basis: PCIe gen5 x16 theoretical one-way 64 GB/s (driver)}
      verdict: pass
      checks:
        matmul_bf16:
          status: pass
          value: 785.2
          unit: TFLOP/s
          fraction: 0.79
          peak: 989.0
          sustained: 671.6
          sustained_fraction: 0.85
          max_rel_err: 0.0011
          tolerance: 0.01
          n: 8192
          reason: "79 % of spec (pass at 70 %)."
thresholds:
  description: Thresholds in effect.
  returned: always
  type: dict
  sample:
    matmul_pass: 0.7
    matmul_warn: 0.6
    memory_pass: 0.8
    memory_warn: 0.7
    pcie_pass: 0.7
    pcie_warn: 0.6
    spread_pct: 5.0
    sustain_warn: 0.7
    conv_pass: 0.35
    conv_warn: 0.25
time_budget:
  description: Measurement budget in seconds.
  returned: always
  type: float
  sample: 60.0
elapsed_s:
  description: Wall time of the module, workload included.
  returned: always
  type: float
  sample: 71.4
gpu_facts:
  description: Short GPU facts read before the run (source, count, driver version, reason).
  returned: always
  type: dict
  sample: {source: nvidia-smi, count: 1, driver_version: 570.124.06, reason: ""}
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
would_run:
  description: In check mode, what the module would run; nothing is executed.
  returned: in check mode
  type: dict
  sample:
    {python: /opt/dlstack/envs/default/bin/python, backend: auto, checks: [matmul_bf16], gpus: 1, time_budget: 60.0}
"""

import time
from typing import Any, Dict, List, Optional

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _smoke, _validate, _verdict
from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import gather

try:
    import pynvml
except ImportError:
    pynvml = None

BACKEND_ORDER = ["torch", "jax", "cupy", "tensorflow"]


def argument_spec() -> Dict[str, Any]:
    return {
        "python": {"type": "str"},
        "backend": {"type": "str", "choices": ["auto", "tensorflow", "jax", "torch", "cupy"], "default": "auto"},
        "checks": {
            "type": "list",
            "elements": "str",
            "choices": list(_verdict.GPU_CHECKS),
            "default": list(_verdict.GPU_CHECKS),
        },
        "time_budget": {"type": "float", "default": 60},
        "matmul_size": {"type": "int", "default": 8192},
        "memory_mib": {"type": "int", "default": 1024},
        "copy_mib": {"type": "int", "default": 256},
        "conv_batch": {"type": "int", "default": 32},
        "conv_channels": {"type": "int", "default": 256},
        "thresholds": {
            "type": "dict",
            "default": {},
            # no_log=False: the "*_pass" names are fractions that pass, not passwords.
            "options": {
                name: {"type": "float", "default": value, "no_log": False}
                for name, value in _verdict.DEFAULT_THRESHOLDS.items()
            },
        },
        "peaks": {"type": "list", "elements": "dict", "default": []},
        "dest": {"type": "path"},
        **_verdict.REQUIREMENT_SPEC,
    }


def match_facts(raw: Dict[str, Any], facts: List[Dict[str, Any]], position: int) -> Optional[Dict[str, Any]]:
    """The gpu_info entry for a GPU the workload saw: by PCI address, else by (PCI-ordered) index."""
    bus = raw.get("pci_bus_id_short")
    if bus:
        for fact in facts:
            if fact.get("pci_bus_id_short") == bus:
                return fact
    index = raw.get("index", position)
    for fact in facts:
        if fact.get("index") == index:
            return fact
    return facts[position] if position < len(facts) else None


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    started = time.monotonic()
    params = module.params
    thresholds = dict(_verdict.DEFAULT_THRESHOLDS)
    thresholds.update({k: v for k, v in (params["thresholds"] or {}).items() if v is not None})
    problems = _smoke.threshold_problems(thresholds, _verdict.DEFAULT_THRESHOLDS)
    problems += _validate.gpu_rows("peaks", params["peaks"])
    numeric = ("time_budget", "matmul_size", "memory_mib", "copy_mib", "conv_batch", "conv_channels")
    python, result = _smoke.start(module, numeric, problems)
    specs = _verdict.merge_specs(params["peaks"])

    def run(cmd: List[str]) -> Any:
        return module.run_command(cmd, environ_update={"LC_ALL": "C"})

    facts = gather(run, module.get_bin_path("nvidia-smi"), pynvml, timeout_bin=module.get_bin_path("timeout"))
    result.update(
        gpus=[],
        thresholds=thresholds,
        time_budget=params["time_budget"],
        gpu_facts={k: facts.get(k) for k in ("source", "count", "driver_version", "cuda_driver_version", "reason")},
    )

    def finish() -> None:
        _smoke.finish(module, result, started, "The GPU check did not pass.")

    if module.check_mode:
        would_run = {key: params[key] for key in ("backend", "checks", "time_budget")}
        _smoke.exit_check_mode(module, result, dict(would_run, python=python, gpus=facts["count"]))

    needed = _smoke.requirement(module, facts)
    result["gpu_requirement"] = needed
    if not facts["gpus"]:
        _smoke.set_unavailable(result, needed, "No GPU to test: %s" % (facts.get("reason") or "the driver lists none."))
        finish()

    probe, error = _smoke.run_probe(module, python, result)
    if probe is None or error:
        result["verdict"] = "fail"
        result["reason"] = error or "The backend probe failed."
        finish()
    backend, why = _smoke.choose_backend(probe or {}, params["backend"], BACKEND_ORDER, True)
    if backend is None:
        _smoke.set_unavailable(result, needed, why)
        finish()
    config = {
        "backend": backend,
        "checks": params["checks"],
        "time_budget": params["time_budget"],
        "matmul_size": params["matmul_size"],
        "memory_mib": params["memory_mib"],
        "copy_mib": params["copy_mib"],
        "conv_batch": params["conv_batch"],
        "conv_channels": params["conv_channels"],
    }
    doc, error = _smoke.run_script(module, python, "gpu", config, params["time_budget"] + _smoke.STARTUP_ALLOWANCE)
    result["backend"] = backend
    result["backend_choice"] = why
    if doc:
        result["versions"] = doc.get("versions", {})
    if error or doc is None:
        result["verdict"] = "fail"
        result["reason"] = error or "The workload returned nothing."
        finish()
        return
    if not doc.get("gpus"):
        seen = doc.get("reason", "The backend sees no GPU.")
        _smoke.set_unavailable(
            result, needed, f"{seen} The driver lists {facts['count']} GPU(s); check the framework's CUDA build."
        )
        finish()
    judged = [
        _verdict.judge_gpu(raw, match_facts(raw, facts["gpus"], pos), specs, thresholds)
        for pos, raw in enumerate(doc["gpus"])
    ]
    result["gpus"] = judged
    result["checks"] = _verdict.judge_host(judged, thresholds)
    result["verdict"] = _verdict.worst(c["status"] for c in result["checks"].values())
    failing = [name for name, c in result["checks"].items() if c["status"] == "fail"]
    if failing:
        result["reason"] = "Failed: {}.".format(", ".join(failing))
    elif result["verdict"] == "skip":
        _smoke.set_unavailable(result, needed, "No check ran on the GPU(s): every one was skipped.")
    finish()


if __name__ == "__main__":
    main()
