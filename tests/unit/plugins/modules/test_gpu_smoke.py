"""gpu_smoke module: check mode, honest skip without GPU, verdicts from a recorded workload result."""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info, _smoke
from ansible_collections.gpulab.dlstack.plugins.modules import gpu_smoke

Runner = Callable[..., Tuple[bool, dict]]
H100 = {
    "index": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "pci_bus_id": "00000000:18:00.0",
    "pci_bus_id_short": "0000:18:00.0",
    "pci_device_id": "2330",
    "compute_capability": "9.0",
    "pcie_gen_max": 5,
    "pcie_width_max": 16,
}
PROBE = {"python": sys.executable, "backends": {"torch": {"importable": True, "version": "2.5.1", "gpu_build": True}}}


def facts(gpus: List[Dict[str, Any]], reason: str = "") -> Dict[str, Any]:
    result = _gpu_info.empty_result(reason, "nvidia-smi")
    result.update(gpus=gpus, count=len(gpus), pci_devices=[], pci_nvidia_present=bool(gpus))
    return result


def workload(bf16_err: float = 1e-3) -> Dict[str, Any]:
    return {
        "backend": "torch",
        "versions": {"torch": "2.5.1", "cuda": "12.4"},
        "gpus": [
            {
                "index": 0,
                "name": "NVIDIA H100 80GB HBM3",
                "compute_capability": "9.0",
                "pci_bus_id_short": "0000:18:00.0",
                "checks": {
                    "matmul_bf16": {"tflops": 780.0, "max_rel_err": bf16_err, "n": 8192, "iterations": 40},
                    "memory_bw": {"gbs": 2900.0, "bytes": 1 << 30, "copy_ok": True},
                    "h2d": {"gbs": 52.0, "bytes": 1 << 28, "pinned": True},
                },
            }
        ],
    }


@pytest.fixture
def no_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(self: Any, cmd: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"no command may run here: {cmd}")

    monkeypatch.setattr(basic.AnsibleModule, "run_command", forbidden)


def fake_scripts(
    monkeypatch: pytest.MonkeyPatch, gpu_doc: Optional[Dict[str, Any]], error: Optional[str] = None
) -> List[Dict[str, Any]]:
    configs: List[Dict[str, Any]] = []

    def run_script(module: Any, python: str, name: str, config: Dict[str, Any], limit: float) -> Any:
        configs.append(dict(config, _name=name))
        if name == "probe":
            return PROBE, None
        return gpu_doc, error

    monkeypatch.setattr(_smoke, "run_script", run_script)
    return configs


def test_check_mode_runs_nothing(run_module: Runner, monkeypatch: pytest.MonkeyPatch, no_commands: None) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([H100]))
    failed, result = run_module(gpu_smoke.main, {"checks": ["matmul_bf16"]}, check_mode=True)
    assert not failed and result["changed"] is False
    assert result["would_run"]["checks"] == ["matmul_bf16"]
    assert result["would_run"]["python"] == sys.executable
    assert result["verdict"] == "skip" and result["checks"] == {}


def test_no_gpu_is_an_honest_skip(run_module: Runner, monkeypatch: pytest.MonkeyPatch, no_commands: None) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([], "No NVIDIA driver is loaded or reachable."))
    failed, result = run_module(gpu_smoke.main, {})
    assert not failed
    assert result["verdict"] == "skip"
    assert result["reason"].startswith("No GPU to test: No NVIDIA driver is loaded or reachable. No NVIDIA GPU is")
    assert result["checks"] == {} and result["gpus"] == []
    assert result["gpu_requirement"]["required"] is False


@pytest.mark.parametrize(
    ("args", "verdict"),
    [({"profile": "gpu"}, "fail"), ({"profile": "auto", "gpu_seen": True}, "fail"), ({"profile": "cpu"}, "skip")],
)
def test_no_gpu_on_a_gpu_host_is_a_fail_not_a_skip(
    run_module: Runner, monkeypatch: pytest.MonkeyPatch, no_commands: None, args: Dict[str, Any], verdict: str
) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([], "No NVIDIA driver is loaded or reachable."))
    failed, result = run_module(gpu_smoke.main, args)
    assert not failed, "only an explicit required=true fails the task; the verdict is the record"
    assert result["verdict"] == verdict
    assert "No NVIDIA driver is loaded or reachable." in result["reason"]


def test_no_gpu_on_a_gpu_host_after_the_opt_out_is_a_skip(
    run_module: Runner, monkeypatch: pytest.MonkeyPatch, no_commands: None
) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([], "no driver"))
    failed, result = run_module(gpu_smoke.main, {"profile": "gpu", "required": False})
    assert not failed and result["verdict"] == "skip"
    assert "required=false was set explicitly." in result["reason"]


def test_no_gpu_fails_when_required(run_module: Runner, monkeypatch: pytest.MonkeyPatch, no_commands: None) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([], "no driver"))
    failed, result = run_module(gpu_smoke.main, {"required": True})
    assert failed and result["verdict"] == "fail"
    assert "No GPU to test" in result["msg"]


def test_bad_python_fails_early(run_module: Runner) -> None:
    failed, result = run_module(gpu_smoke.main, {"python": "/nonexistent/bin/python"})
    assert failed and "does not exist" in result["msg"]


def test_verdicts_from_workload(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([H100]))
    configs = fake_scripts(monkeypatch, workload())
    failed, result = run_module(gpu_smoke.main, {"checks": ["matmul_bf16", "memory_bw", "h2d"], "time_budget": 5})
    assert not failed and result["changed"] is False
    assert result["backend"] == "torch" and result["versions"]["torch"] == "2.5.1"
    assert configs[1]["_name"] == "gpu" and configs[1]["backend"] == "torch" and configs[1]["time_budget"] == 5
    checks = result["checks"]
    assert checks["matmul_bf16"]["status"] == "pass"
    assert checks["matmul_bf16"]["fraction"] == pytest.approx(780.0 / 989.0)
    assert checks["memory_bw"]["status"] == "pass"
    assert checks["h2d"]["peak"] == 64.0
    assert result["gpus"][0]["spec"]["name"] == "NVIDIA H100 80GB HBM3"
    assert result["verdict"] == "pass"


def test_mismatch_fails_overall(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([H100]))
    fake_scripts(monkeypatch, workload(bf16_err=0.5))
    failed, result = run_module(gpu_smoke.main, {})
    assert not failed
    assert result["verdict"] == "fail"
    assert result["reason"] == "Failed: matmul_bf16."


def test_custom_thresholds_and_peaks(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([H100]))
    fake_scripts(monkeypatch, workload())
    args = {"thresholds": {"matmul_pass": 0.9}, "peaks": [{"pci_device_ids": ["2330"], "mem_bw_gbs": 5000.0}]}
    failed, result = run_module(gpu_smoke.main, args)
    assert not failed
    assert result["thresholds"]["matmul_pass"] == 0.9 and result["thresholds"]["matmul_warn"] == 0.6
    assert result["checks"]["matmul_bf16"]["status"] == "warn"
    assert result["checks"]["memory_bw"]["status"] == "fail"


@pytest.mark.parametrize(("profile", "verdict"), [("auto", "fail"), ("gpu", "fail"), ("cpu", "skip")])
def test_backend_without_gpu(run_module: Runner, monkeypatch: pytest.MonkeyPatch, profile: str, verdict: str) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([H100]))
    fake_scripts(
        monkeypatch,
        {
            "backend": "torch",
            "versions": {"torch": "2.5.1+cpu"},
            "gpus": [],
            "reason": "The torch backend sees no GPU.",
        },
    )
    failed, result = run_module(gpu_smoke.main, {"profile": profile})
    assert not failed and result["verdict"] == verdict
    assert "driver lists 1 GPU(s)" in result["reason"]


def test_workload_error_fails(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_smoke, "gather", lambda *a, **k: facts([H100]))
    fake_scripts(
        monkeypatch, {"error": "RuntimeError: CUDA error"}, "The gpu workload failed: RuntimeError: CUDA error"
    )
    failed, result = run_module(gpu_smoke.main, {})
    assert not failed and result["verdict"] == "fail"
    assert "CUDA error" in result["reason"]


def test_match_facts_prefers_pci_address() -> None:
    other = dict(H100, index=1, pci_bus_id_short="0000:19:00.0")
    assert gpu_smoke.match_facts({"index": 0, "pci_bus_id_short": "0000:19:00.0"}, [H100, other], 0) is other
    assert gpu_smoke.match_facts({"index": 1}, [H100, other], 1) is other
    assert gpu_smoke.match_facts({"index": 5}, [H100], 3) is None
