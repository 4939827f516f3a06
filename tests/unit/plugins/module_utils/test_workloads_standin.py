"""The gpu workload's real torch and jax code run on CPU, through a GPU stand-in (gpu_standin.py).

Set DLSTACK_TEST_TORCH_PYTHON to an interpreter with a CPU build of torch and numpy, and
DLSTACK_TEST_JAX_PYTHON to one with jax[cpu] (`nox -s backends` makes both and sets them); without
them these tests skip and say so. What runs for real: device enumeration, matmul in each precision
with its float64 check, device-memory copies, torch's H2D/D2H copies, the result document, and the
verdicts gpu_smoke gives it. The stand-in's devices match no GPU spec and its host buffers are not
pinned, so its result must never read as a GPU pass; these tests check that too.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info, _smoke, _verdict, _workloads
from ansible_collections.gpulab.dlstack.plugins.modules import gpu_smoke

from .gpu_standin import STANDIN_NAME, STANDIN_PCI_BUS

Runner = Callable[..., Tuple[bool, dict]]
STANDIN = Path(__file__).with_name("gpu_standin.py")
PYTHONS = {
    "torch": os.environ.get("DLSTACK_TEST_TORCH_PYTHON", ""),
    "jax": os.environ.get("DLSTACK_TEST_JAX_PYTHON", ""),
}
BACKENDS = sorted(PYTHONS)
ALL_CHECKS = list(_verdict.GPU_CHECKS)
# The smallest matmul_size gpu_smoke accepts (256), kept small for the CPU.
MATMUL_SIZE, MEMORY_MIB, COPY_MIB = 256, 8, 4
# The smallest convolution gpu_smoke accepts is 1 image of 8 channels; 16 keeps fp16 on the CPU in seconds.
CONV_BATCH, CONV_CHANNELS = 1, 16
# The float64 check must see each precision's own rounding, not fp32's: a bf16 or fp16 run whose
# error is down at fp32 level ran in the wrong dtype.
LOWEST_ERROR = {"bf16": 2.0**-14, "fp16": 2.0**-18}


def python_for(backend: str) -> str:
    python = PYTHONS[backend]
    if not python:
        pytest.skip(f"DLSTACK_TEST_{backend.upper()}_PYTHON is not set to an interpreter with a CPU build of {backend}")
    return python


def gpu_config(backend: str, checks: List[str]) -> Dict[str, Any]:
    return {
        "backend": backend,
        "checks": checks,
        "time_budget": 2,
        "matmul_size": MATMUL_SIZE,
        "memory_mib": MEMORY_MIB,
        "copy_mib": COPY_MIB,
        "conv_batch": CONV_BATCH,
        "conv_channels": CONV_CHANNELS,
    }


def run_on_standin(tmp_path: Path, backend: str, config: Dict[str, Any], *options: str) -> Dict[str, Any]:
    script = tmp_path / "dlstack_gpu.py"
    script.write_text(_workloads.GPU)
    settings = tmp_path / "dlstack_gpu.json"
    settings.write_text(json.dumps(config))
    done = subprocess.run(
        [python_for(backend), str(STANDIN), *options, backend, str(script), str(settings)],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, **_smoke.WORKLOAD_ENV),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    doc = _smoke.parse_document(done.stdout)
    assert doc.get("error") is None, doc.get("traceback")
    return doc


def check_measured(backend: str, checks: Dict[str, Dict[str, Any]]) -> None:
    fp32_err = checks["matmul_fp32"]["max_rel_err"]
    for kind in _verdict.MATMUL_KINDS:
        raw = checks[f"matmul_{kind}"]
        assert "skipped" not in raw, raw
        assert raw["n"] == MATMUL_SIZE and raw["iterations"] >= 3 and raw["tflops"] > 0
        assert 0 <= raw["max_rel_err"] <= _verdict.TOLERANCES[kind], (kind, raw)
        if kind in LOWEST_ERROR:
            assert raw["max_rel_err"] > LOWEST_ERROR[kind] > fp32_err, (kind, raw, fp32_err)
    memory = checks["memory_bw"]
    assert memory["gbs"] > 0 and memory["bytes"] == MEMORY_MIB << 20 and memory["copy_ok"] is True
    for direction in ("h2d", "d2h"):
        raw = checks[direction]
        if backend == "jax":
            assert "no pinned host buffers" in raw["skipped"]
            continue
        assert raw["gbs"] > 0 and raw["bytes"] == COPY_MIB << 20 and raw["iterations"] >= 3
        assert raw["pinned"] is False, "the stand-in cannot pin host memory, and the result must say so"
    for kind in _verdict.CONV_KINDS:
        raw = checks[f"conv_{kind}"]
        assert "skipped" not in raw, raw
        assert (raw["batch"], raw["channels"]) == (CONV_BATCH, CONV_CHANNELS)
        assert raw["iterations"] >= 3 and raw["tflops"] > 0
        assert 0 <= raw["max_rel_err"] <= _verdict.CONV_TOLERANCES[kind], (kind, raw)
        # On the CPU no cuDNN ran, and the figure must not say it did.
        assert "not cuDNN" in raw["library"], raw
    # The fp16 convolution's error shows fp16 rounding: it ran in fp16, checked against the float64 reference.
    assert checks["conv_fp16"]["max_rel_err"] > LOWEST_ERROR["fp16"] > checks["conv_fp32"]["max_rel_err"]
    assert all(raw["seconds"] >= 0 for raw in checks.values())


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_check_runs_on_two_standin_gpus(tmp_path: Path, backend: str) -> None:
    doc = run_on_standin(tmp_path, backend, gpu_config(backend, ALL_CHECKS), "--devices", "2")
    assert doc["backend"] == backend
    assert doc["python"] == python_for(backend)
    assert doc["versions"][backend] and doc["versions"]["numpy"]
    assert [g["index"] for g in doc["gpus"]] == [0, 1]
    for gpu in doc["gpus"]:
        assert gpu["name"] == STANDIN_NAME and gpu["compute_capability"] == "9.0"
        assert list(gpu["checks"]) == ALL_CHECKS
        check_measured(backend, gpu["checks"])
    if backend == "torch":
        assert [g["pci_bus_id_short"] for g in doc["gpus"]] == ["0000:e0:00.0", "0000:e1:00.0"]
        assert doc["gpus"][0]["memory_total_mib"] > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_compute_capability_gates_tensor_core_precisions(tmp_path: Path, backend: str) -> None:
    doc = run_on_standin(tmp_path, backend, gpu_config(backend, ALL_CHECKS[:4]), "--cc", "7.0")
    checks = doc["gpus"][0]["checks"]
    for kind in ("tf32", "bf16"):
        assert (
            checks[f"matmul_{kind}"]["skipped"] == f"Compute capability 7.0 has no {kind} tensor-core path (needs 8.0)."
        )
    for kind in ("fp32", "fp16"):
        assert checks[f"matmul_{kind}"]["max_rel_err"] <= _verdict.TOLERANCES[kind]


@pytest.mark.parametrize("backend", BACKENDS)
def test_standin_verdict_is_never_a_gpu_pass(tmp_path: Path, backend: str) -> None:
    doc = run_on_standin(tmp_path, backend, gpu_config(backend, ALL_CHECKS))
    raw = doc["gpus"][0]
    thresholds = dict(_verdict.DEFAULT_THRESHOLDS)
    judged = _verdict.judge_gpu(raw, None, _verdict.merge_specs([]), thresholds)
    assert judged["name"] == STANDIN_NAME and judged["spec"] is None and judged["link"] is None
    for kind in _verdict.MATMUL_KINDS:
        entry = judged["checks"][f"matmul_{kind}"]
        assert entry["status"] == "warn" and "no spec entry for this GPU" in entry["reason"]
        assert entry["unit"] == "TFLOP/s" and entry["value"] > 0 and "fraction" not in entry
    memory = judged["checks"]["memory_bw"]
    assert memory["status"] == "warn" and memory["unit"] == "GB/s" and memory["value"] > 0
    for kind in _verdict.CONV_KINDS:
        entry = judged["checks"][f"conv_{kind}"]
        assert entry["status"] == "warn" and "no spec entry for this GPU" in entry["reason"]
        assert (
            entry["unit"] == "TFLOP/s" and entry["value"] > 0 and entry["tolerance"] == _verdict.CONV_TOLERANCES[kind]
        )
    for direction in ("h2d", "d2h"):
        entry = judged["checks"][direction]
        assert entry["status"] == "skip"
        if backend == "torch":
            assert entry["unit"] == "GB/s" and entry["value"] > 0
            assert entry["reason"] == "Copied from pageable memory; not comparable to the link rate."
    assert judged["verdict"] == "warn"
    assert _verdict.worst(c["status"] for c in _verdict.judge_host([judged], thresholds).values()) == "warn"

    # A peak given for the stand-in by name (the peaks option) puts real figures through the fractions.
    measured = raw["checks"]
    peaks = {kind: measured[f"matmul_{kind}"]["tflops"] / 0.65 for kind in _verdict.MATMUL_KINDS}
    mem_peak = measured["memory_bw"]["gbs"] * 2
    specs = _verdict.merge_specs([{"name": STANDIN_NAME, "peak_tflops": peaks, "mem_bw_gbs": mem_peak}])
    judged = _verdict.judge_gpu(raw, None, specs, thresholds)
    assert judged["spec"] == {"name": STANDIN_NAME, "source": "user override"}
    for kind in _verdict.MATMUL_KINDS:
        entry = judged["checks"][f"matmul_{kind}"]
        assert entry["peak"] == peaks[kind] and entry["fraction"] == pytest.approx(0.65)
        assert entry["status"] == "warn" and entry["reason"] == "Only 65 % of spec (pass at 70 %)."
    memory = judged["checks"]["memory_bw"]
    assert memory["fraction"] == pytest.approx(0.5) and memory["status"] == "fail"


def standin_facts(count: int) -> Dict[str, Any]:
    result = _gpu_info.empty_result("", "nvidia-smi")
    gpus = [
        {
            "index": index,
            "name": STANDIN_NAME,
            "pci_bus_id": f"00000000:{STANDIN_PCI_BUS + index:02x}:00.0",
            "pci_bus_id_short": f"0000:{STANDIN_PCI_BUS + index:02x}:00.0",
            "pci_device_id": None,
            "compute_capability": "9.0",
        }
        for index in range(count)
    ]
    result.update(gpus=gpus, count=count, pci_devices=[], pci_nvidia_present=False)
    return result


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpu_smoke_module_on_standin(
    run_module: Runner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str
) -> None:
    wrapper = tmp_path / "python"
    command = shlex.join([python_for(backend), str(STANDIN), "--devices", "2", backend])
    wrapper.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: standin_facts(2))
    args = {
        "python": str(wrapper),
        "backend": backend,
        "time_budget": 2,
        "matmul_size": MATMUL_SIZE,
        "memory_mib": MEMORY_MIB,
        "copy_mib": COPY_MIB,
        "conv_batch": CONV_BATCH,
        "conv_channels": CONV_CHANNELS,
        "required": True,
    }
    failed, result = run_module(gpu_smoke.main, args)
    assert not failed, result
    assert result["backend"] == backend and result["versions"][backend]
    assert result["verdict"] == "warn" and result["reason"] == ""
    assert [g["name"] for g in result["gpus"]] == [STANDIN_NAME, STANDIN_NAME]
    assert [g["pci_bus_id"] for g in result["gpus"]] == ["00000000:e0:00.0", "00000000:e1:00.0"]
    for name, check in result["checks"].items():
        assert check["gpus"] == 2 and check["status"] in ("warn", "skip"), (name, check)
        if "value" in check:
            assert check["value"] > 0 and check["unit"] in ("TFLOP/s", "GB/s")
    assert result["checks"]["matmul_bf16"]["unit"] == "TFLOP/s"
    assert result["checks"]["memory_bw"]["unit"] == "GB/s"
