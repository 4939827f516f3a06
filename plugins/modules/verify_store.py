#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_store
short_description: Record a host's verification results and compare them with its previous run
version_added: 0.1.0
description:
  - Used by the gpulab.dlstack.verify role; runs on the verified host.
  - Records the installed stack (driver, CUDA, cuDNN, TensorRT, TensorFlow, Python, numpy) from the versions
    the modules reported, else O(stack), else the host's C(dlstack*) local facts (O(local_facts)). A
    version found nowhere is left V(null) and shown as a dash in the report.
  - Builds the host record from the gpu_info, gpu_smoke, xla_smoke, trt_smoke and lib_doctor results, compares
    its figures with the C(latest.json) already in O(dir) and writes the new C(latest.json) plus a
    timestamped copy, keeping the newest O(keep) copies.
  - When the new record differs from the stored C(latest.json) only in its times (when it was made, how long
    each module took; same results, verdicts, figures and stack), nothing is written, the stored record is
    returned and the task reports no change; otherwise the task reports a change (also in check mode, where
    nothing is written).
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode the record is built and returned but nothing is written.
  diff_mode:
    support: none
options:
  results:
    description:
      - Registered results of the verification modules, keyed by module name (C(gpu_info), C(gpu_smoke),
        C(xla_smoke), C(trt_smoke), C(lib_doctor)); other keys and results of the wrong shape are refused.
    type: dict
    required: true
  host:
    description: Name of the host in the report.
    type: str
    required: true
  dir:
    description: Directory for C(latest.json) and the timestamped copies.
    type: path
    default: /var/lib/dlstack/verify
  regression_pct:
    description: Percent drop of a figure since the previous run that is flagged, 0 to 99.
    type: float
    default: 10
  keep:
    description: Timestamped copies to keep, the one written by this run included; at least 1.
    type: int
    default: 20
  timestamp:
    description: UTC timestamp of the run (C(YYYYMMDDTHHMMSSZ)); now when omitted.
    type: str
  stack:
    description: The stack resolved for this host in this run (C(dlstack_stack) from preflight).
    type: dict
    default: {}
  local_facts:
    description:
      - The host's local facts (C(ansible_local)). Only the C(dlstack*) ones are read, each holding a stack
        itself or under a C(stack) key; missing or malformed ones are ignored.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Store the results
  gpulab.dlstack.verify_store:
    host: "{{ inventory_hostname }}"
    results:
      gpu_info: "{{ gpu_info_result }}"
"""

RETURN = r"""
record:
  description:
    - The stored host record (host, timestamp, verdict, verdicts, modules, figures, regressions, flags,
      stack, stack_sources).
  returned: always
  type: dict
  sample:
    host: gpu01
    timestamp: 20261130T090000Z
    verdict: pass
    figures: {gpu_smoke.matmul_bf16: 785.2}
    regressions: []
    stack:
      {driver: 570.124.06, cuda: "12.5", cudnn: "9.3", tensorrt: null, tensorflow: 2.21.0, python: 3.12.3, numpy: 2.1.3}
    stack_sources: {driver: verify, cuda: verify, cudnn: local fact dlstack, tensorrt: null}
summary:
  description: Readable lines, the verdict first, then each check with figure, fraction of spec and status.
  returned: always
  type: list
  elements: str
  sample: ["gpu01: PASS", "  gpu_smoke.matmul_bf16: pass, 785.2 TFLOP/s, 79 % of spec"]
latest:
  description: Path of C(latest.json).
  returned: always
  type: str
  sample: /var/lib/dlstack/verify/latest.json
snapshot:
  description:
    - Path of the timestamped copy written by this run (would be written, in check mode).
    - When nothing but the time changed, the stored copy of the previous record, which is kept.
  returned: always
  type: str
  sample: /var/lib/dlstack/verify/result-20261130T090000Z.json
"""

import datetime
import json
import os
from typing import Any, Dict, List, Optional

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _report, _validate
from ansible_collections.gpulab.dlstack.plugins.module_utils._validate import Range

BOOKKEEPING = ("invocation", "changed", "failed", "warnings", "deprecations", "_ansible_no_log")
LIMITS = {
    "regression_pct": Range(0, 99, "percent drop since the previous run"),
    "keep": Range(1, 100000, "timestamped copies, the one written now included", integer=True),
}


def clean(result: Any) -> Optional[Dict[str, Any]]:
    """A registered result without Ansible's bookkeeping; None for a task that did not run."""
    if not isinstance(result, dict) or result.get("skipped") or not result:
        return None
    return {k: v for k, v in result.items() if k not in BOOKKEEPING and not k.startswith("_ansible")}


def option_problems(params: Dict[str, Any]) -> List[str]:
    """Problems with every option, found before anything is read or written."""
    problems: List[str] = []
    if not str(params["host"]).strip():
        problems.append('host is empty; give the host\'s inventory name, e.g. host: "{{ inventory_hostname }}".')
    problems += _validate.directory("dir", params["dir"], "/var/lib/dlstack/verify")
    for name, hint in (("regression_pct", "default 10"), ("keep", "default 20")):
        problems += _validate.number(name, params[name], LIMITS[name], hint)
    problems += _validate.timestamp("timestamp", params["timestamp"])
    shape = _validate.module_results("results", params["results"])
    problems += _validate.fix_for(
        shape, "pass each module's registered result unchanged, keyed by module name (gpu_info, gpu_smoke, ...)"
    )
    return problems


def read_json(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def previous_record(module: Any, path: str) -> Optional[Dict[str, Any]]:
    """The host's previous record, or None (with a warning) when the file is not one this module wrote."""
    previous = read_json(path)
    if previous is None:
        return None
    figures = previous.get("figures", {})
    if not isinstance(figures, dict):
        module.warn(
            f"{path} has figures that are {_validate.kind(figures)}; it is replaced and no regressions are computed."
        )
        return None
    return previous


# Keys that hold only when the record was made or how long a module took, at any depth.
TIME_KEYS = ("timestamp", "previous_timestamp", "elapsed_s")


def _comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in TIME_KEYS}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return json.loads(json.dumps(value, default=str))


def unchanged_copy(directory: str, record: Dict[str, Any], previous: Optional[Dict[str, Any]]) -> Optional[str]:
    """The stored copy of the previous record when the new one differs from it only in its times, else None."""
    if previous is None or _comparable(record) != _comparable(previous):
        return None
    stamp = str(previous.get("timestamp", ""))
    copy = os.path.join(directory, f"result-{stamp}.json")
    if _validate.timestamp("timestamp", stamp) or not os.path.isfile(copy):
        return None
    return copy


def prune(directory: str, keep: int, written: str) -> List[str]:
    """Delete the oldest timestamped copies so that `keep` remain, never the one just written."""
    name = os.path.basename(written)
    copies = sorted(n for n in os.listdir(directory) if n.startswith("result-") and n.endswith(".json") and n != name)
    doomed = copies[: max(len(copies) - (keep - 1), 0)]
    for old in doomed:
        os.unlink(os.path.join(directory, old))
    return doomed


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "results": {"type": "dict", "required": True},
            "host": {"type": "str", "required": True},
            "dir": {"type": "path", "default": "/var/lib/dlstack/verify"},
            "regression_pct": {"type": "float", "default": 10},
            "keep": {"type": "int", "default": 20},
            "timestamp": {"type": "str"},
            "stack": {"type": "dict", "default": {}},
            "local_facts": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    params = module.params
    _validate.fail_on(module, option_problems(params))
    stamp = params["timestamp"] or datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    modules = {name: clean(value) for name, value in params["results"].items()}
    modules = {name: value for name, value in modules.items() if value is not None}
    latest = os.path.join(params["dir"], "latest.json")
    copy = os.path.join(params["dir"], f"result-{stamp}.json")
    previous = previous_record(module, latest)
    recorded = [("resolved stack", params["stack"]), *_report.fact_stacks(params["local_facts"])]
    record = _report.host_record(params["host"], stamp, modules, previous, params["regression_pct"], recorded=recorded)
    text = json.dumps(record, indent=2, sort_keys=True, default=str) + "\n"
    kept = unchanged_copy(params["dir"], record, previous)
    if kept and previous is not None:
        # Nothing but the time differs from the stored record: keep it, write nothing, report no change.
        summary = _report.summary_lines(previous)
        module.exit_json(changed=False, record=previous, summary=summary, latest=latest, snapshot=kept)
    if not module.check_mode:
        os.makedirs(params["dir"], 0o755, exist_ok=True)
        for path in (copy, latest):
            staging = os.path.join(module.tmpdir, "record.json")
            with open(staging, "w") as handle:
                handle.write(text)
            module.atomic_move(staging, path)
        prune(params["dir"], params["keep"], copy)
    module.exit_json(changed=True, record=record, summary=_report.summary_lines(record), latest=latest, snapshot=copy)


if __name__ == "__main__":
    main()
