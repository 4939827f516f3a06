# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a workload script with the Python of another environment, and what the modules share."""

from __future__ import annotations

import json
import os
import pwd
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpulab.dlstack.plugins.module_utils import _validate
from ansible_collections.gpulab.dlstack.plugins.module_utils._validate import Range
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import gpu_requirement, unavailable
from ansible_collections.gpulab.dlstack.plugins.module_utils._workloads import SCRIPTS

WORKLOAD_ENV: Dict[str, str] = {
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    "PYTHONDONTWRITEBYTECODE": "1",
    "LC_ALL": "C",
}
# Seconds allowed on top of the time budget for interpreter start, framework import and device setup.
STARTUP_ALLOWANCE = 240
# Accepted option values: a budget beyond a day or a buffer beyond the largest GPU is a typo, not a test.
LIMITS: Dict[str, Range] = {
    "time_budget": Range(0, 86400, "seconds", low_open=True),
    "matmul_size": Range(256, 65536, "matrix side", integer=True),
    "memory_mib": Range(1, 262144, "MiB", integer=True),
    "copy_mib": Range(1, 65536, "MiB", integer=True),
    "conv_batch": Range(1, 4096, "images per convolution", integer=True),
    "conv_channels": Range(8, 4096, "input and output channels", integer=True),
    "size": Range(1, 32768, "tensor side", integer=True),
    "steps": Range(1, 1000, "rounds", integer=True),
    "rtol": Range(0, 1, "relative tolerance"),
    "atol": Range(0, 1, "absolute tolerance"),
    "batch": Range(1, 65536, "rows", integer=True),
}
THRESHOLD_LIMITS: Dict[str, Range] = {
    "matmul_pass": Range(0, 1, "fraction of spec", low_open=True),
    "matmul_warn": Range(0, 1, "fraction of spec"),
    "memory_pass": Range(0, 1, "fraction of spec", low_open=True),
    "memory_warn": Range(0, 1, "fraction of spec"),
    "pcie_pass": Range(0, 1, "fraction of the link rate", low_open=True),
    "pcie_warn": Range(0, 1, "fraction of the link rate"),
    "spread_pct": Range(0, 100, "percent"),
    "sustain_warn": Range(0, 1, "fraction of the fastest round"),
    "conv_pass": Range(0, 1, "fraction of spec", low_open=True),
    "conv_warn": Range(0, 1, "fraction of spec"),
}
# Each warn fraction (below it a check fails) must be at or below its pass fraction.
THRESHOLD_PAIRS = {
    "matmul_warn": "matmul_pass",
    "memory_warn": "memory_pass",
    "pcie_warn": "pcie_pass",
    "conv_warn": "conv_pass",
}


def default_python() -> str:
    return sys.executable


def check_python(python: str) -> Optional[str]:
    """Return an error sentence when `python` cannot be run, else None."""
    if not os.path.isabs(python):
        return f"python={python} must be an absolute path to an interpreter, e.g. /opt/dlstack/envs/default/bin/python."
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return f"python={python} does not exist or is not executable; point it at the environment's bin/python."
    return None


def parse_document(stdout: str) -> Dict[str, Any]:
    """Return the single JSON object a workload printed; raise ValueError otherwise."""
    text = (stdout or "").strip()
    if not text:
        raise ValueError("the workload printed nothing on standard output")
    try:
        doc = json.loads(text)
    except ValueError:
        start = text.rfind("\n{")
        doc = json.loads(text[start + 1 :] if start >= 0 else text[text.index("{") :])
    if not isinstance(doc, dict):
        raise ValueError(f"the workload printed {type(doc).__name__}, not a JSON object")
    return doc


def run_script(
    module: Any, python: str, name: str, config: Dict[str, Any], limit_s: float, *, source: Optional[str] = None
) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """Run workload `name` (or the script `source`) with `python`; return (document, None) or (None, error sentence)."""
    tmpdir = module.tmpdir
    script = os.path.join(tmpdir, f"dlstack_{name}.py")
    settings = os.path.join(tmpdir, f"dlstack_{name}.json")
    with open(script, "w") as handle:
        handle.write(SCRIPTS[name] if source is None else source)
    with open(settings, "w") as handle:
        json.dump(config, handle)
    cmd: List[str] = [python, script, settings]
    timeout_bin = module.get_bin_path("timeout")
    if timeout_bin:
        cmd = [timeout_bin, "--kill-after=15", str(int(limit_s)), *cmd]
    rc, out, err = module.run_command(cmd, environ_update=dict(WORKLOAD_ENV), cwd=tmpdir)
    if rc in (124, 137) and timeout_bin:
        return None, f"The {name} workload ran past its {int(limit_s)} s limit and was stopped."
    try:
        doc = parse_document(out)
    except ValueError as exc:
        tail = (err or "").strip().splitlines()[-5:]
        return None, "The {} workload (rc={}) gave no result: {}. Last stderr lines: {}".format(
            name,
            rc,
            exc,
            " | ".join(tail) or "none",
        )
    if doc.get("error"):
        return doc, "The {} workload failed: {}".format(name, doc["error"])
    return doc, None


def run_probe(module: Any, python: str, result: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """Run the backend probe and record the interpreter's version in `result`."""
    probe, error = run_script(module, python, "probe", {}, 120)
    if probe:
        result["python_version"] = probe.get("python_version")
    return probe, error


def choose_backend(
    probe: Dict[str, Any], wanted: str, order: List[str], gpu_present: bool
) -> Tuple[Optional[str], str]:
    """Pick the backend for a workload from the probe document; return (name or None, why)."""
    backends = probe.get("backends", {})
    if wanted != "auto":
        if backends.get(wanted, {}).get("importable"):
            return wanted, "asked for"
        return None, "backend={} was asked for but it is not importable by {}.".format(wanted, probe.get("python"))
    present = [b for b in order if backends.get(b, {}).get("importable")]
    if not present:
        return None, "None of {} is importable by {}.".format(", ".join(order), probe.get("python"))
    if gpu_present:
        gpu_builds = [b for b in present if backends[b].get("gpu_build") is not False]
        if gpu_builds:
            return gpu_builds[0], "first importable GPU build of {}".format(", ".join(order))
    return present[0], "first importable of {}".format(", ".join(order))


def write_dest(module: Any, dest: Optional[str], result: Dict[str, Any]) -> bool:
    """Write `result` as JSON to `dest` when given; return whether the file changed (check mode: would)."""
    if not dest:
        return False
    text = json.dumps(result, indent=2, sort_keys=True, default=str) + "\n"
    try:
        with open(dest) as handle:
            if handle.read() == text:
                return False
    except OSError:
        pass
    if module.check_mode:
        return True
    parent = os.path.dirname(dest)
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, 0o755)
    staging = os.path.join(module.tmpdir, "result.json")
    with open(staging, "w") as handle:
        handle.write(text)
    module.atomic_move(staging, dest)
    return True


def requirement(module: Any, facts: Dict[str, Any]) -> Dict[str, Any]:
    """Whether this host's GPU checks must run, from the module's options and the GPU facts it read."""
    params = module.params
    return gpu_requirement(
        params["required"], params["profile"], bool(facts.get("pci_nvidia_present")), params["gpu_seen"]
    )


def set_unavailable(result: Dict[str, Any], needed: Dict[str, Any], reason: str) -> None:
    """Record a check that could not run: fail on a host that must have GPUs, else skip."""
    outcome = unavailable(needed, reason)
    result["verdict"] = outcome["status"]
    result["reason"] = outcome["reason"]


def start(module: Any, options: Tuple[str, ...], extra: Optional[List[str]] = None) -> Tuple[str, Dict[str, Any]]:
    """Check the parameters every smoke module shares; return the interpreter and a result that says nothing ran.

    `options` names the numeric options of the module (checked against LIMITS); `extra` holds the
    module's own problems. All problems fail the module together, before anything is read or run.
    """
    params = module.params
    python = params["python"] or default_python()
    problems = [p for p in [check_python(python)] if p]
    for key in options:
        problems += _validate.number(key, params[key], LIMITS[key], f"default {default_of(module, key):g}")
    problems += _validate.dest_file("dest", params.get("dest"), "/var/lib/dlstack/verify/result.json")
    problems += extra or []
    _validate.fail_on(module, problems)
    result: Dict[str, Any] = {
        "changed": False,
        "verdict": "skip",
        "reason": "",
        "backend": None,
        "versions": {},
        "python": python,
        "user": _user(),
        "checks": {},
    }
    return python, result


def _user() -> str:
    """Name of the user this process runs as (the uid when it has no name)."""
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def threshold_problems(merged: Dict[str, float], defaults: Dict[str, float]) -> List[str]:
    """Thresholds in range and in order (warn at or below pass)."""
    return _validate.thresholds_problems(merged, defaults, THRESHOLD_LIMITS, THRESHOLD_PAIRS)


def default_of(module: Any, key: str) -> float:
    """The argument_spec default of an option, for the hint in an error sentence."""
    return float(module.argument_spec[key]["default"])


def exit_check_mode(module: Any, result: Dict[str, Any], would_run: Dict[str, Any]) -> None:
    """In check mode a smoke module runs nothing and says what it would run."""
    result["would_run"] = would_run
    result["reason"] = "Check mode: nothing was run."
    module.exit_json(**result)


def finish(module: Any, result: Dict[str, Any], started: float, failure: str) -> None:
    """Record the elapsed time, write dest, and exit; with required, a skip or a fail fails the task."""
    params = module.params
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    result["changed"] = write_dest(module, params["dest"], result)
    if params["required"] and result["verdict"] in ("skip", "fail"):
        module.fail_json(msg=result["reason"] or failure, **result)
    module.exit_json(**result)
