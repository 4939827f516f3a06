#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: multigpu_smoke
short_description: Measure peer-to-peer bandwidth and latency between GPUs and NCCL all-reduce bus bandwidth
version_added: 0.1.0
description:
  - On a host with two or more GPUs, copies O(copy_mib) MiB between every ordered pair of GPUs (the fastest round of
    each pair is its bandwidth; 4-byte copies give its latency) and runs an NCCL all-reduce of O(allreduce_mib) MiB
    over all GPUs, checking the sum, through the framework of the environment under test - C(torch.cuda.nccl) or
    C(cupy.cuda.nccl), one process driving all GPUs.
  - Each pair is judged against its link from C(nvidia-smi topo -m) - C(NV<n>) is n bonded NVLinks at the GPU's
    NVLink rate from the collection's data file, C(PIX)/C(PXB)/C(PHB)/C(NODE)/C(SYS) a PCIe path at the slower GPU's
    link rate. The all-reduce bus bandwidth (C(algbw x 2(n-1)/n), as nccl-tests reports it) is judged against the
    slowest link. A pair without a link spec is at most V(warn); NVLink-connected GPUs without peer access fail.
  - On a host with one GPU the verdict is V(skip) with that reason; when the GPUs cannot be tested the verdict is
    V(fail) or V(skip) as for M(gpulab.dlstack.gpu_smoke) (see O(profile)). Nothing is reported as passed that did
    not run.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
  - gpulab.dlstack.smoke
  - gpulab.dlstack.smoke.gpu_requirement
options:
  backend:
    description: Framework that runs the workload; V(auto) takes the first importable GPU build of torch, cupy.
    type: str
    choices: [auto, torch, cupy]
    default: auto
  time_budget:
    description: Seconds of measurement for all pairs and the all-reduce together (60 % pairs, 30 % all-reduce).
    type: float
    default: 30
  copy_mib:
    description: MiB copied per pair and round.
    type: int
    default: 256
  allreduce_mib:
    description: MiB all-reduced per GPU.
    type: int
    default: 256
  thresholds:
    description: Fractions of the link rate.
    type: dict
    default: {}
    suboptions:
      p2p_pass:
        description: A pair's copy rate at or above this fraction of its link passes.
        type: float
        default: 0.7
      p2p_warn:
        description: Below this fraction a pair fails; between the two it warns.
        type: float
        default: 0.5
      allreduce_pass:
        description: All-reduce bus bandwidth at or above this fraction of the slowest link passes.
        type: float
        default: 0.6
      allreduce_warn:
        description: Below this fraction the all-reduce fails; between the two it warns.
        type: float
        default: 0.4
"""

EXAMPLES = r"""
- name: Peer-to-peer and all-reduce on a multi-GPU host
  gpulab.dlstack.multigpu_smoke:
    python: /opt/dlstack/envs/default/bin/python
    profile: gpu
  register: multigpu
"""

RETURN = r"""
verdict:
  description: V(pass), V(warn), V(fail) or V(skip) - the worst of RV(checks).
  returned: always
  type: str
reason:
  description: Why the verdict is what it is.
  returned: always
  type: str
checks:
  description: C(p2p) (the slowest pair) and C(allreduce_busbw) with value, unit, fraction and status.
  returned: always
  type: dict
  sample:
    p2p: {status: pass, value: 372.1, unit: GB/s, fraction: 0.827, reason: "slowest pair 3->5: 83% of the link"}
    allreduce_busbw: {status: pass, value: 361.0, unit: GB/s, fraction: 0.802, ranks: 8}
pairs:
  description: Every ordered pair with its link, copy bandwidth, latency, peer access and status.
  returned: always
  type: list
  elements: dict
topology:
  description: The link matrix read from C(nvidia-smi topo -m).
  returned: always
  type: list
  elements: list
backend:
  description: Framework that ran the workload.
  returned: always
  type: str
versions:
  description: Framework versions the workload imported.
  returned: always
  type: dict
thresholds:
  description: Thresholds in effect.
  returned: always
  type: dict
gpu_facts:
  description: Short GPU facts read before the run.
  returned: always
  type: dict
gpu_requirement:
  description: Whether the GPU checks had to run, and why.
  returned: when GPU facts were read outside check mode
  type: dict
elapsed_s:
  description: Wall time of the module.
  returned: always
  type: float
would_run:
  description: In check mode, what the module would run.
  returned: in check mode
  type: dict
"""

import time
from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _multigpu, _smoke, _validate
from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import gather
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import REQUIREMENT_SPEC

try:
    import pynvml
except ImportError:
    pynvml = None

BACKEND_ORDER = ["torch", "cupy"]
PAIRS = {"p2p_warn": "p2p_pass", "allreduce_warn": "allreduce_pass"}


def argument_spec() -> Dict[str, Any]:
    return {
        "python": {"type": "str"},
        "dest": {"type": "path"},
        "backend": {"type": "str", "choices": ["auto", "torch", "cupy"], "default": "auto"},
        "time_budget": {"type": "float", "default": 30},
        "copy_mib": {"type": "int", "default": 256},
        "allreduce_mib": {"type": "int", "default": 256},
        "thresholds": {
            "type": "dict",
            "default": {},
            "options": {
                name: {"type": "float", "default": value, "no_log": False}
                for name, value in _multigpu.DEFAULT_THRESHOLDS.items()
            },
        },
        **REQUIREMENT_SPEC,
    }


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    started = time.monotonic()
    params = module.params
    thresholds = dict(_multigpu.DEFAULT_THRESHOLDS)
    thresholds.update({k: v for k, v in (params["thresholds"] or {}).items() if v is not None})
    limits = {k: _validate.Range(0, 1, "fraction of the link rate", low_open=k in PAIRS.values()) for k in thresholds}
    problems = _validate.thresholds_problems(thresholds, _multigpu.DEFAULT_THRESHOLDS, limits, PAIRS)
    problems += _validate.number("allreduce_mib", params["allreduce_mib"], _smoke.LIMITS["copy_mib"], "default 256")
    python, result = _smoke.start(module, ("time_budget", "copy_mib"), problems)

    def run(cmd: List[str]) -> Any:
        return module.run_command(cmd, environ_update={"LC_ALL": "C"})

    smi = module.get_bin_path("nvidia-smi")
    facts = gather(run, smi, pynvml, timeout_bin=module.get_bin_path("timeout"))
    result.update(
        pairs=[],
        topology=[],
        thresholds=thresholds,
        gpu_facts={k: facts.get(k) for k in ("source", "count", "driver_version", "reason")},
    )

    def finish() -> None:
        _smoke.finish(module, result, started, "The multi-GPU check did not pass.")

    if module.check_mode:
        would_run = {key: params[key] for key in ("backend", "time_budget", "copy_mib", "allreduce_mib")}
        _smoke.exit_check_mode(module, result, dict(would_run, python=python, gpus=facts["count"]))

    needed = _smoke.requirement(module, facts)
    result["gpu_requirement"] = needed
    if not facts["gpus"]:
        _smoke.set_unavailable(result, needed, "No GPU to test: %s" % (facts.get("reason") or "the driver lists none."))
        finish()
    if len(facts["gpus"]) < 2:
        result["verdict"] = "skip"
        result["reason"] = "One GPU on this host: no peer-to-peer copy or all-reduce to measure."
        finish()
    probe, error = _smoke.run_probe(module, python, result)
    if probe is None or error:
        result["verdict"], result["reason"] = "fail", error or "The backend probe failed."
        finish()
    backend, why = _smoke.choose_backend(probe or {}, params["backend"], BACKEND_ORDER, True)
    if backend is None:
        _smoke.set_unavailable(result, needed, why + " The multi-GPU checks need torch or CuPy with NCCL.")
        finish()
    _rc, topo_out, _err = run([smi, "topo", "-m"]) if smi else (1, "", "")
    result["topology"] = _multigpu.parse_topology(topo_out)
    config = {key: params[key] for key in ("time_budget", "copy_mib", "allreduce_mib")}
    config["backend"] = backend
    limit = params["time_budget"] + _smoke.STARTUP_ALLOWANCE
    doc, error = _smoke.run_script(module, python, "multigpu", config, limit, source=_multigpu.SCRIPT)
    result.update(backend=backend, backend_choice=why, versions=(doc or {}).get("versions", {}))
    if error or doc is None:
        result["verdict"], result["reason"] = "fail", error or "The workload returned nothing."
        finish()
        return
    if "p2p" not in doc:
        _smoke.set_unavailable(result, needed, doc.get("reason") or "The framework measured no GPU pair.")
        finish()
    if not result["topology"]:
        result["reason"] = "nvidia-smi topo -m gave no link matrix: links unknown, so at most warn. "
    judged = _multigpu.judge(doc, result["topology"], facts["gpus"], thresholds)
    result.update(pairs=judged["pairs"], checks=judged["checks"], verdict=judged["verdict"])
    result["reason"] += " ".join(f"{name}: {c['reason']}." for name, c in judged["checks"].items())
    finish()


if __name__ == "__main__":
    main()
