"""xla_smoke module: check mode, skip without a framework, verdict logic, and a real CPU run when possible.

The real run needs DLSTACK_TEST_XLA_PYTHON pointing at an interpreter with TensorFlow or JAX.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import sys
from typing import Callable, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import gpu_requirement
from ansible_collections.gpulab.dlstack.plugins.modules import xla_smoke

Runner = Callable[..., Tuple[bool, dict]]
XLA_PYTHON = os.environ.get("DLSTACK_TEST_XLA_PYTHON", "")
CPU_HOST = gpu_requirement(None, "cpu")
GPU_HOST = gpu_requirement(None, "gpu")
AGREE = {"allclose": True, "max_abs_err": 2e-7, "rtol": 1e-5, "atol": 1e-4, "speedup": 0.7}
NO_FRAMEWORK = all(importlib.util.find_spec(m) is None for m in ("tensorflow", "jax"))


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xla_smoke, "gather", lambda *a, **k: _gpu_info.empty_result("no driver"))


def test_check_mode_runs_nothing(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda *a, **k: pytest.fail("ran a command"))
    failed, result = run_module(xla_smoke.main, {"backend": "jax", "device": "cpu"}, check_mode=True)
    assert not failed and result["changed"] is False
    assert result["would_run"]["backend"] == "jax" and result["would_run"]["device"] == "cpu"
    assert result["checks"] == {} and result["verdict"] == "skip"


@pytest.mark.skipif(not NO_FRAMEWORK, reason="this interpreter has TensorFlow or JAX, so it cannot show the skip")
def test_skip_without_framework(run_module: Runner) -> None:
    failed, result = run_module(xla_smoke.main, {"python": sys.executable})
    assert not failed
    assert result["verdict"] == "skip"
    assert "None of tensorflow, jax is importable" in result["reason"]
    failed, result = run_module(xla_smoke.main, {"python": sys.executable, "required": True})
    assert failed and result["verdict"] == "fail"


def test_bad_sizes_fail(run_module: Runner) -> None:
    failed, result = run_module(xla_smoke.main, {"size": 0})
    assert failed and result["msg"].startswith("size=0 is out of range; set it to an integer from 1 to 32768")


def test_judge() -> None:
    agree = xla_smoke.judge({"result": dict(AGREE)}, CPU_HOST)
    assert agree["status"] == "pass" and agree["speedup"] == 0.7
    differ = xla_smoke.judge({"result": {"allclose": False, "max_abs_err": 0.3, "rtol": 1e-5, "atol": 1e-4}}, CPU_HOST)
    assert differ["status"] == "fail" and "mismatch" in differ["reason"]
    assert xla_smoke.judge({"skipped": "torch.compile is not XLA"}, CPU_HOST)["status"] == "skip"
    assert xla_smoke.judge({"skipped": "no torch_xla"}, GPU_HOST)["status"] == "fail"
    assert xla_smoke.judge({}, CPU_HOST)["status"] == "fail"


@pytest.mark.parametrize(
    ("needed", "device", "expected"),
    [(GPU_HOST, "auto", "fail"), (CPU_HOST, "auto", "pass"), (GPU_HOST, "gpu", "pass")],
)
def test_xla_on_the_cpu_only_is_not_a_pass_on_a_gpu_host(needed: dict, device: str, expected: str) -> None:
    doc = {"backend": "tensorflow", "device": "cpu" if device == "auto" else "gpu", "result": dict(AGREE)}
    found = xla_smoke.judge(doc, needed, device)
    assert found["status"] == expected
    assert found["speedup"] == 0.7
    if expected == "fail":
        assert found["reason"].startswith("tensorflow sees no GPU, so XLA ran on the CPU only.")


@pytest.mark.skipif(not XLA_PYTHON, reason="DLSTACK_TEST_XLA_PYTHON is not set to an interpreter with TensorFlow/JAX")
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_real_cpu_run(run_module: Runner, backend: str) -> None:
    args = {"python": XLA_PYTHON, "backend": backend, "device": "auto", "size": 512, "steps": 4, "time_budget": 1}
    failed, result = run_module(xla_smoke.main, args)
    if failed and "not importable" in result.get("msg", ""):
        pytest.skip(f"{backend} is not importable by {XLA_PYTHON}")
    assert not failed, result
    assert result["verdict"] == "pass", result["reason"]
    assert result["device"] == "cpu"
    assert result["backend"] == backend and result["versions"][backend]
    assert result["checks"]["xla"]["speedup"] > 0


def test_the_result_names_the_user_it_ran_as(run_module: Runner) -> None:
    """The verify role runs the smoke modules as an unprivileged user; the result says which, for the record."""
    failed, result = run_module(xla_smoke.main, {"backend": "jax", "device": "cpu"}, check_mode=True)
    assert not failed
    assert result["user"] == pwd.getpwuid(os.geteuid()).pw_name
