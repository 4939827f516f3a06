"""Tests of the tf_build_plan module (argument handling, failures, check mode)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import resolve_stack
from ansible_collections.gpulab.dlstack.plugins.modules import tf_build_plan

RunModule = Callable[..., tuple[bool, dict[str, Any]]]


@pytest.fixture
def stack() -> dict[str, Any]:
    return resolve_stack({"tensorflow": "2.17", "os": "debian12", "gpus": ["8.0", "9.0"], "build_from_source": True})


@pytest.mark.parametrize("check_mode", [False, True])
def test_returns_plan_and_changes_nothing(run_module: RunModule, stack: dict[str, Any], check_mode: bool) -> None:
    failed, result = run_module(
        tf_build_plan.main,
        {"stack": stack, "cores": 16, "memory_mb": 65536, "disk_free_gb": 200.0, "bazel_version": "6.5.0"},
        check_mode=check_mode,
    )
    assert not failed, result
    assert result["changed"] is False
    plan = result["plan"]
    assert plan["bazel"]["target"] == "//tensorflow/tools/pip_package:wheel"
    assert "--jobs=16" in plan["bazel"]["build_flags"]
    assert plan["env"]["TF_CUDA_COMPUTE_CAPABILITIES"] == "8.0,9.0"
    assert len(plan["config_hash"]) == 16


def test_fleet_flags_become_portable_copts(run_module: RunModule, stack: dict[str, Any]) -> None:
    failed, result = run_module(
        tf_build_plan.main,
        {
            "stack": stack,
            "cores": 4,
            "memory_mb": 32768,
            "cpu_target": "fleet",
            "fleet_cpu_flags": [["avx", "avx2", "fma"], ["avx", "avx2", "fma", "avx512f"]],
        },
    )
    assert not failed, result
    assert result["plan"]["env"]["CC_OPT_FLAGS"] == "-mavx -mfma -mavx2 -Wno-sign-compare"


def test_failure_lists_every_problem(run_module: RunModule, stack: dict[str, Any]) -> None:
    failed, result = run_module(
        tf_build_plan.main,
        {"stack": stack, "cores": 8, "memory_mb": 8192, "jobs": 8, "bazel_version": "4.2.3", "want_tensorrt": True},
    )
    assert failed
    assert result["msg"].startswith("The TensorFlow build cannot start (3 problems): (1) ")
    assert "needs Bazel 6.5.0; Bazel 4.2.3 would run" in result["msg"]
    assert "set jobs to 2 or less" in result["msg"]
    assert len(result["problems"]) == 3


def test_fleet_capability_beyond_cuda_fails(run_module: RunModule, stack: dict[str, Any]) -> None:
    failed, result = run_module(
        tf_build_plan.main,
        {"stack": stack, "cores": 8, "memory_mb": 65536, "compute_capabilities": ["9.0", "10.0"]},
    )
    assert failed
    assert "CUDA 12.3 targets sm_50 to sm_90; it cannot build for 10.0 (sm_100)" in result["msg"]
