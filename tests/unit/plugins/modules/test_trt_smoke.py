"""trt_smoke module: check mode, honest skip without GPU or TensorRT, backend choice and verdicts."""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info, _smoke, _verdict
from ansible_collections.gpulab.dlstack.plugins.modules import trt_smoke

Runner = Callable[..., Tuple[bool, dict]]


def facts(count: int) -> Dict[str, Any]:
    result = _gpu_info.empty_result("" if count else "no driver", "nvidia-smi")
    result["gpus"] = [{"index": i, "pci_device_id": "2330"} for i in range(count)]
    result["count"] = count
    return result


def probe(tf: str = "", trt: bool = False) -> Dict[str, Any]:
    return {
        "python": "/env/bin/python",
        "backends": {
            "tensorflow": {"importable": bool(tf), "version": tf or None},
            "tensorrt": {"importable": trt, "version": "10.3.0" if trt else None},
        },
    }


def test_check_mode(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trt_smoke, "gather", lambda *a, **k: pytest.fail("read GPU facts in check mode"))
    failed, result = run_module(trt_smoke.main, {"precisions": ["fp16"]}, check_mode=True)
    assert not failed and result["changed"] is False
    assert result["would_run"] == {
        "backend": "auto",
        "precisions": ["fp16"],
        "batch": 256,
        "time_budget": 20.0,
        "python": sys.executable,
    }


def test_no_gpu_skip_and_required_fail(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trt_smoke, "gather", lambda *a, **k: facts(0))
    failed, result = run_module(trt_smoke.main, {})
    assert not failed and result["verdict"] == "skip" and result["reason"].startswith("No GPU to test")
    failed, result = run_module(trt_smoke.main, {"required": True})
    assert failed and "No GPU to test" in result["msg"]


@pytest.mark.parametrize(
    ("args", "verdict"),
    [
        ({}, "skip"),
        ({"profile": "gpu"}, "fail"),
        ({"profile": "gpu", "want_tensorrt": False}, "skip"),
        ({"profile": "gpu", "required": False}, "skip"),
    ],
)
def test_no_tensorrt(run_module: Runner, monkeypatch: pytest.MonkeyPatch, args: Dict[str, Any], verdict: str) -> None:
    monkeypatch.setattr(trt_smoke, "gather", lambda *a, **k: facts(1))
    monkeypatch.setattr(_smoke, "run_script", lambda *a, **k: (probe(tf="2.21.0"), None))
    failed, result = run_module(trt_smoke.main, args)
    assert not failed and result["verdict"] == verdict
    assert "TensorRT is not importable" in result["reason"] and "2.21.0" in result["reason"]


def test_no_gpu_on_a_gpu_host_fails_even_without_tensorrt(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trt_smoke, "gather", lambda *a, **k: facts(0))
    failed, result = run_module(trt_smoke.main, {"profile": "gpu", "want_tensorrt": False})
    assert not failed and result["verdict"] == "fail" and result["reason"].startswith("No GPU to test: no driver")


@pytest.mark.parametrize(
    ("found", "wanted", "expected"),
    [
        (probe(tf="2.17.1"), "auto", "tf-trt"),
        (probe(tf="2.18.0", trt=True), "auto", "tensorrt"),
        (probe(tf="2.15.0", trt=True), "tensorrt", "tensorrt"),
        (probe(tf="2.18.0", trt=True), "tf-trt", None),
        (probe(), "auto", None),
    ],
)
def test_choose(found: Dict[str, Any], wanted: str, expected: Any) -> None:
    assert trt_smoke.choose(found, wanted)[0] == expected


def test_judge() -> None:
    doc = {
        "baseline": {"framework": "torch", "latency_ms": 0.4},
        "precisions": {
            "fp32": {"latency_ms": 0.2, "max_rel_err": 1e-3},
            "fp16": {"latency_ms": 0.1, "max_rel_err": 0.5},
        },
    }
    checks = trt_smoke.judge(doc, _verdict.gpu_requirement(None, "cpu"))
    assert checks["fp32"]["status"] == "pass" and checks["fp32"]["speedup"] == pytest.approx(2.0)
    assert checks["fp16"]["status"] == "fail"
    skipped = {"precisions": {"fp16": {"skipped": "no fast fp16"}}}
    assert trt_smoke.judge(skipped, _verdict.gpu_requirement(None, "cpu"))["fp16"]["status"] == "skip"
    assert trt_smoke.judge(skipped, _verdict.gpu_requirement(None, "gpu"))["fp16"]["status"] == "fail"


def test_verdict_from_workload(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trt_smoke, "gather", lambda *a, **k: facts(1))
    doc = {
        "backend": "tensorrt",
        "versions": {"tensorrt": "10.3.0"},
        "baseline": {"framework": "torch", "latency_ms": 0.4},
        "precisions": {"fp32": {"latency_ms": 0.2, "max_rel_err": 1e-3}},
    }
    answers = iter([(probe(trt=True), None), (doc, None)])
    monkeypatch.setattr(_smoke, "run_script", lambda *a, **k: next(answers))
    failed, result = run_module(trt_smoke.main, {"precisions": ["fp32"]})
    assert not failed and result["verdict"] == "pass"
    assert result["backend"] == "tensorrt" and result["versions"]["tensorrt"] == "10.3.0"
    assert result["baseline"]["framework"] == "torch"
