"""Bad input to every module: a clear message naming the option, the value and the fix, before anything runs.

Each row is one bad input and the exact message the module fails with. ``{tmp}`` in the arguments
and in the message stands for the test's temporary directory. Nothing may be read from the GPU, run
or written before the module fails.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _smoke
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import resolve_stack
from ansible_collections.gpulab.dlstack.plugins.modules import (
    gpu_smoke,
    tf_build_plan,
    trt_smoke,
    verify_report,
    verify_store,
    xla_smoke,
)

Runner = Callable[..., Tuple[bool, Dict[str, Any]]]
NAN = math.nan
INF = math.inf
SMOKE = {"gpu_smoke": gpu_smoke, "xla_smoke": xla_smoke, "trt_smoke": trt_smoke}


def ids(cases: List[Tuple[Any, ...]]) -> List[str]:
    """Test ids: the start of each expected message (what was wrong)."""
    prefix = [f"{case[0]}: " if isinstance(case[0], str) else "" for case in cases]
    return [p + str(case[-1]).split(";", maxsplit=1)[0].replace("{tmp}/", "")[:80] for p, case in zip(prefix, cases)]


def fill(value: Any, tmp: Path) -> Any:
    """Replace {tmp} in strings, lists and dicts with the temporary directory."""
    if isinstance(value, str):
        return value.replace("{tmp}", str(tmp))
    if isinstance(value, list):
        return [fill(v, tmp) for v in value]
    if isinstance(value, dict):
        return {fill(k, tmp): fill(v, tmp) for k, v in value.items()}
    return value


@pytest.fixture
def untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any GPU query, workload or command fails the test: bad input must be refused before them."""

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the module went on with bad input")

    for module in SMOKE.values():
        monkeypatch.setattr(module, "gather", forbidden)
    monkeypatch.setattr(_smoke, "run_script", forbidden)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", forbidden)


SMOKE_CASES: List[Tuple[str, Dict[str, Any], str]] = [
    (
        "gpu_smoke",
        {"time_budget": NAN},
        "time_budget=nan is not a finite number; set it to a number above 0 and at most 86400 (seconds; default 60).",
    ),
    (
        "gpu_smoke",
        {"time_budget": INF},
        "time_budget=inf is not a finite number; set it to a number above 0 and at most 86400 (seconds; default 60).",
    ),
    (
        "gpu_smoke",
        {"time_budget": 0},
        "time_budget=0 is out of range; set it to a number above 0 and at most 86400 (seconds; default 60).",
    ),
    (
        "gpu_smoke",
        {"time_budget": 1000000.0},
        "time_budget=1e+06 is out of range; set it to a number above 0 and at most 86400 (seconds; default 60).",
    ),
    (
        "gpu_smoke",
        {"matmul_size": -8192},
        "matmul_size=-8192 is out of range; set it to an integer from 256 to 65536 (matrix side; default 8192).",
    ),
    (
        "gpu_smoke",
        {"matmul_size": 1000000},
        "matmul_size=1000000 is out of range; set it to an integer from 256 to 65536 (matrix side; default 8192).",
    ),
    (
        "gpu_smoke",
        {"matmul_size": 16},
        "matmul_size=16 is out of range; set it to an integer from 256 to 65536 (matrix side; default 8192).",
    ),
    (
        "gpu_smoke",
        {"memory_mib": 0},
        "memory_mib=0 is out of range; set it to an integer from 1 to 262144 (MiB; default 1024).",
    ),
    (
        "gpu_smoke",
        {"memory_mib": 10000000},
        "memory_mib=10000000 is out of range; set it to an integer from 1 to 262144 (MiB; default 1024).",
    ),
    (
        "gpu_smoke",
        {"copy_mib": -1},
        "copy_mib=-1 is out of range; set it to an integer from 1 to 65536 (MiB; default 256).",
    ),
    (
        "gpu_smoke",
        {"thresholds": {"matmul_warn": 0.8}},
        (
            "thresholds.matmul_warn=0.8 is above thresholds.matmul_pass=0.7, so a check would fail before it could "
            "warn; set thresholds.matmul_warn at or below thresholds.matmul_pass (defaults 0.6 and 0.7)."
        ),
    ),
    (
        "gpu_smoke",
        {"thresholds": {"memory_pass": 0.5, "memory_warn": 0.6}},
        (
            "thresholds.memory_warn=0.6 is above thresholds.memory_pass=0.5, so a check would fail before it could "
            "warn; set thresholds.memory_warn at or below thresholds.memory_pass (defaults 0.7 and 0.8)."
        ),
    ),
    (
        "gpu_smoke",
        {"thresholds": {"pcie_pass": 1.5}},
        (
            "thresholds.pcie_pass=1.5 is out of range; set it to a number above 0 and at most 1 (fraction of the "
            "link rate; default 0.7)."
        ),
    ),
    (
        "gpu_smoke",
        {"thresholds": {"matmul_pass": NAN}},
        (
            "thresholds.matmul_pass=nan is not a finite number; set it to a number above 0 and at most 1 (fraction "
            "of spec; default 0.7)."
        ),
    ),
    (
        "gpu_smoke",
        {"thresholds": {"spread_pct": -5}},
        "thresholds.spread_pct=-5 is out of range; set it to a number from 0 to 100 (percent; default 5).",
    ),
    (
        "gpu_smoke",
        {"thresholds": {"sustain_warn": 2}},
        (
            "thresholds.sustain_warn=2 is out of range; set it to a number from 0 to 1 (fraction of the fastest "
            "round; default 0.7)."
        ),
    ),
    (
        "gpu_smoke",
        {"thresholds": {"matmul_pass": 0, "matmul_warn": 0}},
        (
            "thresholds.matmul_pass=0 is out of range; set it to a number above 0 and at most 1 (fraction of spec; "
            "default 0.7)."
        ),
    ),
    (
        "gpu_smoke",
        {"peaks": [{"name": "X", "peak_tflops": {"bf16": -1}}]},
        "peaks[0].peak_tflops.bf16=-1 is out of range; set it to a number above 0 and at most 100000 (TFLOP/s).",
    ),
    (
        "gpu_smoke",
        {"peaks": [{"name": "X", "peak_tflops": {"fp8": 1000}}]},
        "peaks[0].peak_tflops has 'fp8', none of fp32, tf32, bf16, fp16; rename or drop it.",
    ),
    (
        "gpu_smoke",
        {"peaks": [{"pci_device_ids": ["23x0"]}]},
        (
            "peaks[0].pci_device_ids=['23x0'] is not a list of PCI device ids; write each as 4 hex digits, e.g. "
            "['2330']."
        ),
    ),
    (
        "gpu_smoke",
        {"peaks": [{"name": "X", "mem_bw_gbs": "fast"}]},
        "peaks[0].mem_bw_gbs='fast' is a string, not a number; set it to a number above 0 and at most 100000 (GB/s).",
    ),
    (
        "gpu_smoke",
        {"peaks": [{"name": "X", "peak_tflops": 5}]},
        "peaks[0].peak_tflops is a number; give a dict of fp32, tf32, bf16, fp16 to TFLOP/s.",
    ),
    (
        "gpu_smoke",
        {"peaks": [{"aliases": ["X"]}]},
        "peaks[0] has neither name nor pci_device_ids; give one so the row matches a GPU.",
    ),
    (
        "gpu_smoke",
        {"dest": "{tmp}"},
        "dest='{tmp}' is a directory; give the path of a file in it, such as /var/lib/dlstack/verify/result.json.",
    ),
    (
        "gpu_smoke",
        {"time_budget": NAN, "matmul_size": 0},
        (
            "2 problems with the input: (1) time_budget=nan is not a finite number; set it to a number above 0 and "
            "at most 86400 (seconds; default 60). (2) matmul_size=0 is out of range; set it to an integer from 256 "
            "to 65536 (matrix side; default 8192)."
        ),
    ),
    (
        "xla_smoke",
        {"time_budget": NAN},
        "time_budget=nan is not a finite number; set it to a number above 0 and at most 86400 (seconds; default 20).",
    ),
    (
        "xla_smoke",
        {"time_budget": INF},
        "time_budget=inf is not a finite number; set it to a number above 0 and at most 86400 (seconds; default 20).",
    ),
    (
        "xla_smoke",
        {"size": -1},
        "size=-1 is out of range; set it to an integer from 1 to 32768 (tensor side; default 2048).",
    ),
    (
        "xla_smoke",
        {"size": 100000},
        "size=100000 is out of range; set it to an integer from 1 to 32768 (tensor side; default 2048).",
    ),
    (
        "xla_smoke",
        {"steps": 0},
        "steps=0 is out of range; set it to an integer from 1 to 1000 (rounds; default 8).",
    ),
    (
        "xla_smoke",
        {"steps": 1000000},
        "steps=1000000 is out of range; set it to an integer from 1 to 1000 (rounds; default 8).",
    ),
    (
        "xla_smoke",
        {"rtol": -1e-05},
        "rtol=-1e-05 is out of range; set it to a number from 0 to 1 (relative tolerance; default 1e-05).",
    ),
    (
        "xla_smoke",
        {"atol": NAN},
        "atol=nan is not a finite number; set it to a number from 0 to 1 (absolute tolerance; default 0.0001).",
    ),
    (
        "xla_smoke",
        {"rtol": 5},
        "rtol=5 is out of range; set it to a number from 0 to 1 (relative tolerance; default 1e-05).",
    ),
    (
        "xla_smoke",
        {"dest": "{tmp}"},
        "dest='{tmp}' is a directory; give the path of a file in it, such as /var/lib/dlstack/verify/result.json.",
    ),
    (
        "trt_smoke",
        {"time_budget": NAN},
        "time_budget=nan is not a finite number; set it to a number above 0 and at most 86400 (seconds; default 20).",
    ),
    (
        "trt_smoke",
        {"time_budget": 1000000000.0},
        "time_budget=1e+09 is out of range; set it to a number above 0 and at most 86400 (seconds; default 20).",
    ),
    (
        "trt_smoke",
        {"batch": 10000000},
        "batch=10000000 is out of range; set it to an integer from 1 to 65536 (rows; default 256).",
    ),
    (
        "trt_smoke",
        {"batch": -256},
        "batch=-256 is out of range; set it to an integer from 1 to 65536 (rows; default 256).",
    ),
]


@pytest.mark.usefixtures("untouched")
@pytest.mark.parametrize(("name", "args", "message"), SMOKE_CASES, ids=ids(SMOKE_CASES))
def test_smoke_modules_refuse(
    run_module: Runner, tmp_path: Path, name: str, args: Dict[str, Any], message: str
) -> None:
    failed, result = run_module(SMOKE[name].main, fill(args, tmp_path))
    assert failed, result
    assert result["msg"] == fill(message, tmp_path)
    assert os.listdir(tmp_path) == []


@pytest.fixture
def stack() -> Dict[str, Any]:
    return resolve_stack({"tensorflow": "2.17", "os": "debian12", "gpus": ["8.0", "9.0"], "build_from_source": True})


def with_build(stack: Dict[str, Any], **build: Any) -> Dict[str, Any]:
    changed = json.loads(json.dumps(stack))
    changed["build"].update(build)
    return changed


PLAN_CASES: List[Tuple[Dict[str, Any], Dict[str, Any], str]] = [
    (
        {"cores": -4},
        {},
        (
            "cores=-4 is out of range; set it to an integer from 1 to 4096 (CPU cores, from "
            "ansible_facts['processor_vcpus'])."
        ),
    ),
    (
        {"cores": 0},
        {},
        (
            "cores=0 is out of range; set it to an integer from 1 to 4096 (CPU cores, from "
            "ansible_facts['processor_vcpus'])."
        ),
    ),
    (
        {"memory_mb": -1},
        {},
        (
            "memory_mb=-1 is out of range; set it to an integer from 1 to 16777216 (MB, from "
            "ansible_facts['memtotal_mb'])."
        ),
    ),
    (
        {"jobs": -3},
        {},
        (
            "jobs=-3 is out of range; set it to an integer from 0 to 4096 (Bazel jobs; 0 derives it from cores and "
            "memory)."
        ),
    ),
    (
        {"ram_mb_per_job": 0},
        {},
        "ram_mb_per_job=0 is out of range; set it to an integer from 1 to 1048576 (MB).",
    ),
    (
        {"reserve_ram_mb": -1},
        {},
        "reserve_ram_mb=-1 is out of range; set it to an integer from 0 to 1048576 (MB).",
    ),
    (
        {"disk_free_gb": NAN},
        {},
        "disk_free_gb=nan is not a finite number; set it to a number from 0 to 1048576 (GB).",
    ),
    (
        {"min_disk_gb": -5.0},
        {},
        "min_disk_gb=-5 is out of range; set it to a number from 0 to 1048576 (GB).",
    ),
    (
        {"progress_rate_limit": 0},
        {},
        "progress_rate_limit=0 is out of range; set it to an integer from 1 to 86400 (seconds).",
    ),
    (
        {"extra_env": {"A;touch /tmp/pwned": "1"}},
        {},
        (
            "extra_env key 'A;touch /tmp/pwned' is not an environment variable name; use letters, digits and "
            "underscores, not starting with a digit (e.g. TF_CUDA_PATHS)."
        ),
    ),
    (
        {"extra_env": {"1ABC": "x"}},
        {},
        (
            "extra_env key '1ABC' is not an environment variable name; use letters, digits and underscores, not "
            "starting with a digit (e.g. TF_CUDA_PATHS)."
        ),
    ),
    (
        {"extra_env": {"TF_X": {"a": 1}}},
        {},
        "extra_env.TF_X is a dict; give a string, number or boolean (configure reads text).",
    ),
    (
        {"extra_env": {"TF_X": "a\nb"}},
        {},
        "extra_env.TF_X='a\\nb' spans several lines; give it on one line.",
    ),
    (
        {"extra_bazel_flags": ["; rm -rf /"]},
        {},
        (
            "extra_bazel_flags entry '; rm -rf /' is not a Bazel build flag; write each as --name or --name=value on "
            "one line."
        ),
    ),
    (
        {"python_bin": "/usr/bin/python3\nDLSTACK_EXPECTED"},
        {},
        (
            "The configure environment has values on several lines (PYTHON_BIN_PATH); give python_bin, the paths and "
            "extra_env values on one line."
        ),
    ),
    (
        {},
        {"env": "TF_NEED_CUDA=1"},
        (
            "stack.build.env is a string, not a dict of configure variables; pass the stack returned by "
            "gpulab.dlstack.stack_resolve (dlstack_stack) unchanged."
        ),
    ),
    (
        {},
        {"bazel_flags": "--config=cuda"},
        (
            "stack.build.bazel_flags is a string, not a list of strings; pass the stack returned by "
            "gpulab.dlstack.stack_resolve (dlstack_stack) unchanged."
        ),
    ),
    (
        {},
        {"env": {"TF_NEED_CUDA": "1", "A B": "1"}},
        (
            "stack.build.env key 'A B' is not an environment variable name; use letters, digits and underscores, not "
            "starting with a digit (e.g. TF_CUDA_PATHS)."
        ),
    ),
    (
        {},
        {"bazel_target": ["//tensorflow/tools/pip_package:wheel"]},
        (
            "stack.build.bazel_target is a list, not a string; pass the stack returned by "
            "gpulab.dlstack.stack_resolve (dlstack_stack) unchanged."
        ),
    ),
]
STACK_CASES: List[Tuple[Dict[str, Any], str]] = [
    (
        {"tensorflow": "2.17", "build": "from source"},
        (
            "stack.build is a string, not a dict; pass the stack returned by gpulab.dlstack.stack_resolve "
            "(dlstack_stack) unchanged."
        ),
    ),
    (
        {"tensorflow": "2.17", "build": {"env": ["TF_NEED_CUDA=1"], "bazel_target": "//t:wheel"}},
        (
            "stack.build.env is a list, not a dict of configure variables; pass the stack returned by "
            "gpulab.dlstack.stack_resolve (dlstack_stack) unchanged."
        ),
    ),
    (
        {
            "tensorflow": "2.17",
            "compute_capabilities": "8.0",
            "build": {"env": {"TF_NEED_CUDA": "1"}, "bazel_target": "//t:w"},
        },
        (
            "stack.compute_capabilities is a string, not a list; pass the stack returned by "
            "gpulab.dlstack.stack_resolve (dlstack_stack) unchanged."
        ),
    ),
]


@pytest.mark.parametrize(("args", "build", "message"), PLAN_CASES, ids=ids(PLAN_CASES))
def test_tf_build_plan_refuses(
    run_module: Runner, stack: Dict[str, Any], args: Dict[str, Any], build: Dict[str, Any], message: str
) -> None:
    full = {"stack": with_build(stack, **build) if build else stack, "cores": 16, "memory_mb": 65536}
    full.update(args)
    failed, result = run_module(tf_build_plan.main, full)
    assert failed, result
    assert result["msg"] == "The TensorFlow build cannot start (1 problem): (1) " + message


@pytest.mark.parametrize(("stack_value", "message"), STACK_CASES, ids=ids(STACK_CASES))
def test_tf_build_plan_refuses_a_stack_that_is_not_resolved(
    run_module: Runner, stack_value: Dict[str, Any], message: str
) -> None:
    failed, result = run_module(tf_build_plan.main, {"stack": stack_value, "cores": 16, "memory_mb": 65536})
    assert failed, result
    assert result["msg"] == "The TensorFlow build cannot start (1 problem): (1) " + message


GOOD_RECORD = {"host": "h1", "verdict": "pass", "figures": {"gpu_smoke.matmul_bf16": 780.0}}
REPORT_CASES: List[Tuple[Dict[str, Any], Dict[str, Any], str]] = [
    (
        {"h1/latest.json": "[]"},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json holds a list, not a host record (a JSON object with host and "
            "verdict); re-run the verify role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": "null"},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json holds null, not a host record (a JSON object with host and "
            "verdict); re-run the verify role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": "{}"},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json holds an empty object, not a host record (a JSON object with host "
            "and verdict); re-run the verify role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": {"host": "h1"}},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json has no verdict; re-run the verify role on h1 "
            "(gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": {"host": "h1", "verdict": "great"}},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json has verdict='great', none of pass, warn, fail, skip; re-run the "
            "verify role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": {"host": "h2", "verdict": "pass"}},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json is the record of host 'h2', not of 'h1'; re-run the verify role on "
            "h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": '{"host": '},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json cannot be read as JSON (Expecting value: line 1 column 10 (char "
            "9)); re-run the verify role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": {"host": "h1", "verdict": "pass", "figures": [1, 2]}},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json has figures that are a list, not a dict of name to number; re-run "
            "the verify role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": {"host": "h1", "verdict": "pass", "figures": {"x": "fast"}}},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json has figures that are not finite numbers (x); re-run the verify "
            "role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1/latest.json": {"host": "h1", "verdict": "pass", "modules": {"gpu_smoke": {"checks": [1]}}}},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json modules.gpu_smoke.checks is a list, not a dict of check name to "
            "result; re-run the verify role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {
            "h1/latest.json": {
                "host": "h1",
                "verdict": "pass",
                "modules": {"trt_smoke": {"checks": {"fp16": {"latency_ms": "0.1"}}}},
            }
        },
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json modules.trt_smoke.checks.fp16.latency_ms='0.1' is not a finite "
            "number; re-run the verify role on h1 (gpulab.dlstack.verify_store writes it) or delete the file."
        ),
    ),
    (
        {"h1": "not a directory"},
        {},
        (
            "hosts entry h1: {tmp}/h1/latest.json cannot be read as JSON ([Errno 20] Not a directory: "
            "'{tmp}/h1/latest.json'); re-run the verify role on h1 (gpulab.dlstack.verify_store writes it) or delete "
            "the file."
        ),
    ),
    (
        {"fleet": "a file"},
        {"src": "{tmp}/fleet"},
        (
            "src='{tmp}/fleet' exists and is not a directory; point src at a directory such as the verify role's "
            "verify_report_dir."
        ),
    ),
    (
        {"h1/latest.json": GOOD_RECORD, "h2/latest.json": dict(GOOD_RECORD, host="h2")},
        {"hosts": "h1, h2"},
        (
            "hosts entry ' h2' has spaces around it; write hosts as a YAML list ([h1, h2]) or a comma list without "
            "spaces (h1,h2)."
        ),
    ),
    (
        {},
        {"hosts": ["../etc"]},
        "hosts entry '../etc' is not a host name (it would leave the reports directory); list inventory host names.",
    ),
    (
        {},
        {"hosts": ["h1", "h1"]},
        "hosts lists 'h1' twice; list each host once.",
    ),
    (
        {},
        {"hosts": []},
        'hosts is empty; list the hosts to report on, e.g. hosts: "{{ ansible_play_hosts }}".',
    ),
    (
        {},
        {"hosts": ["h1", ""]},
        "hosts has an empty entry; remove it or give an inventory host name.",
    ),
    (
        {"h1/latest.json": GOOD_RECORD},
        {"slow_pct": NAN},
        (
            "slow_pct=nan is not a finite number; set it to a number from 0 to 99 (percent below the fleet median; "
            "default 10)."
        ),
    ),
    (
        {"h1/latest.json": GOOD_RECORD},
        {"slow_pct": -5},
        "slow_pct=-5 is out of range; set it to a number from 0 to 99 (percent below the fleet median; default 10).",
    ),
    (
        {"h1/latest.json": GOOD_RECORD},
        {"slow_pct": 150},
        "slow_pct=150 is out of range; set it to a number from 0 to 99 (percent below the fleet median; default 10).",
    ),
]


@pytest.mark.parametrize(("files", "args", "message"), REPORT_CASES, ids=ids(REPORT_CASES))
def test_verify_report_refuses(
    run_module: Runner, tmp_path: Path, files: Dict[str, Any], args: Dict[str, Any], message: str
) -> None:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    full = {"src": str(tmp_path), "hosts": ["h1"]}
    full.update(fill(args, tmp_path))
    failed, result = run_module(verify_report.main, full)
    assert failed, result
    assert result["msg"] == fill(message, tmp_path)
    assert not (tmp_path / "fleet.md").exists() and not (tmp_path / "fleet.html").exists()


STORE_CASES: List[Tuple[Dict[str, Any], str]] = [
    (
        {"results": {"gpu_smoke": {"verdict": "pass", "checks": [1, 2]}}},
        (
            "results.gpu_smoke.checks is a list, not a dict of check name to result; pass each module's registered "
            "result unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"gpu_smoke": {"verdict": "pass", "checks": {"matmul_bf16": "fast"}}}},
        (
            "results.gpu_smoke.checks.matmul_bf16 is a string, not a dict; pass each module's registered result "
            "unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"gpu_smoke": {"verdict": "pass", "checks": {"matmul_bf16": {"status": "pass", "value": "fast"}}}}},
        (
            "results.gpu_smoke.checks.matmul_bf16.value='fast' is not a finite number; pass each module's registered "
            "result unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"gpu_smoke": {"verdict": "pass", "checks": {"matmul_bf16": {"status": "great", "value": 1.0}}}}},
        (
            "results.gpu_smoke.checks.matmul_bf16.status='great' is none of pass, warn, fail, skip; pass each "
            "module's registered result unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"gpu_smoke": "pass"}},
        (
            "results.gpu_smoke is a string, not the dict the module returned; pass each module's registered result "
            "unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"gpu_smok": {"verdict": "pass"}}},
        (
            "results has 'gpu_smok', which is none of gpu_info, gpu_smoke, xla_smoke, trt_smoke, lib_doctor, "
            "fabric_info, multigpu_smoke, dcgm_diag; pass each module's "
            "registered result unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"gpu_smoke": {"verdict": "great"}}},
        (
            "results.gpu_smoke.verdict='great' is none of pass, warn, fail, skip; pass each module's registered "
            "result unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"xla_smoke": {"verdict": "pass", "checks": {"xla": {"steady_xla_s": "0.1"}}}}},
        (
            "results.xla_smoke.checks.xla.steady_xla_s='0.1' is not a finite number; pass each module's registered "
            "result unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"trt_smoke": {"verdict": "pass", "checks": {"fp16": {"latency_ms": NAN}}}}},
        (
            "results.trt_smoke.checks.fp16.latency_ms=nan is not a finite number; pass each module's registered "
            "result unchanged, keyed by module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"results": {"gpu_info": {"count": -1}}},
        (
            "results.gpu_info.count=-1 is not a GPU count; pass each module's registered result unchanged, keyed by "
            "module name (gpu_info, gpu_smoke, ...)."
        ),
    ),
    (
        {"dir": "{tmp}/file"},
        "dir='{tmp}/file' exists and is not a directory; point dir at a directory such as /var/lib/dlstack/verify.",
    ),
    (
        {"keep": 0},
        (
            "keep=0 is out of range; set it to an integer from 1 to 100000 (timestamped copies, the one written now "
            "included; default 20)."
        ),
    ),
    (
        {"keep": -1},
        (
            "keep=-1 is out of range; set it to an integer from 1 to 100000 (timestamped copies, the one written now "
            "included; default 20)."
        ),
    ),
    (
        {"regression_pct": NAN},
        (
            "regression_pct=nan is not a finite number; set it to a number from 0 to 99 (percent drop since the "
            "previous run; default 10)."
        ),
    ),
    (
        {"regression_pct": -10},
        (
            "regression_pct=-10 is out of range; set it to a number from 0 to 99 (percent drop since the previous "
            "run; default 10)."
        ),
    ),
    (
        {"timestamp": "../../etc/cron.d/x"},
        (
            "timestamp='../../etc/cron.d/x' is not a UTC timestamp; write it as YYYYMMDDTHHMMSSZ (e.g. "
            "20261130T090000Z) or leave it out for now."
        ),
    ),
    (
        {"timestamp": "20261340T250000Z"},
        (
            "timestamp='20261340T250000Z' is not a real date and time; write it as YYYYMMDDTHHMMSSZ (e.g. "
            "20261130T090000Z) or leave it out for now."
        ),
    ),
    (
        {"host": " "},
        'host is empty; give the host\'s inventory name, e.g. host: "{{ inventory_hostname }}".',
    ),
]


@pytest.mark.parametrize(("args", "message"), STORE_CASES, ids=ids(STORE_CASES))
def test_verify_store_refuses(run_module: Runner, tmp_path: Path, args: Dict[str, Any], message: str) -> None:
    state = tmp_path / "state"
    (tmp_path / "file").write_text("not a directory\n")
    full = {"host": "gpu01", "dir": str(state), "timestamp": "20261130T090000Z", "results": {}}
    full.update(fill(args, tmp_path))
    failed, result = run_module(verify_store.main, full)
    assert failed, result
    assert result["msg"] == fill(message, tmp_path)
    assert not state.exists()


def test_verify_store_never_prunes_the_copy_it_returns(run_module: Runner, tmp_path: Path) -> None:
    for stamp in ("20261201T000000Z", "20261202T000000Z"):
        (tmp_path / f"result-{stamp}.json").write_text("{}\n")
    args = {"host": "gpu01", "dir": str(tmp_path), "timestamp": "20261130T090000Z", "results": {}, "keep": 1}
    failed, result = run_module(verify_store.main, args)
    assert not failed, result
    assert os.path.exists(result["snapshot"])
    assert sorted(os.listdir(tmp_path)) == ["latest.json", "result-20261130T090000Z.json"]


def test_verify_store_replaces_a_previous_record_it_cannot_compare(run_module: Runner, tmp_path: Path) -> None:
    (tmp_path / "latest.json").write_text(json.dumps({"host": "gpu01", "figures": [1, 2]}))
    smoke = {"verdict": "pass", "checks": {"matmul_bf16": {"status": "pass", "value": 780.0}}}
    args = {"host": "gpu01", "dir": str(tmp_path), "timestamp": "20261130T090000Z", "results": {"gpu_smoke": smoke}}
    failed, result = run_module(verify_store.main, args)
    assert not failed, result
    assert result["record"]["regressions"] == []
    assert json.loads((tmp_path / "latest.json").read_text())["timestamp"] == "20261130T090000Z"
