"""gpu_info module: nvidia-smi path, no driver, dest writing and check mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info, _host_probe
from ansible_collections.gpulab.dlstack.plugins.modules import gpu_info

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia-smi"
Runner = Callable[..., Tuple[bool, dict]]


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> List[List[str]]:
    """A host without NVML, whose nvidia-smi prints the 8-GPU fixture; returns the commands run."""
    calls: List[List[str]] = []
    csv = (FIXTURES / "a100-sxm4-8gpu.csv").read_text()

    def run_command(self: Any, cmd: List[str], **kwargs: Any) -> Tuple[int, str, str]:
        calls.append(cmd)
        if cmd[0].endswith("/timeout"):
            cmd = cmd[4:]
        if len(cmd) == 1:
            return 0, "| NVIDIA-SMI 535.183.01   Driver Version: 535.183.01   CUDA Version: 12.2 |", ""
        return 0, csv, ""

    monkeypatch.setattr(_host_probe, "pynvml", None)
    monkeypatch.setattr(_gpu_info, "scan_sysfs", lambda root="": [])
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    return calls


def test_reads_every_gpu(run_module: Runner, host: List[List[str]]) -> None:
    failed, result = run_module(gpu_info.main, {})
    assert not failed and result["changed"] is False
    assert result["count"] == 8 and result["source"] == "nvidia-smi"
    assert result["driver_version"] == "535.183.01"
    assert result["cuda_driver_version"] == "12.2"
    assert result["gpus"][6]["mig_mode"] == "enabled"
    # Every command runs under coreutils timeout: a hung GPU must not hang the play.
    assert all(cmd[:4] == ["/usr/bin/timeout", "-k", "5", str(_gpu_info.COMMAND_TIMEOUT_S)] for cmd in host)
    assert host[0][5].startswith("--query-gpu=index,uuid,name,pci.bus_id")


@pytest.mark.parametrize(
    ("args", "verdict"),
    [
        ({}, "skip"),
        ({"profile": "cpu"}, "skip"),
        ({"profile": "gpu"}, "fail"),
        ({"profile": "gpu", "required": False}, "skip"),
    ],
)
def test_no_driver_succeeds_with_reason(
    run_module: Runner, monkeypatch: pytest.MonkeyPatch, args: Dict[str, Any], verdict: str
) -> None:
    monkeypatch.setattr(_host_probe, "pynvml", None)
    monkeypatch.setattr(_gpu_info, "scan_sysfs", lambda root="": [])
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(
        basic.AnsibleModule,
        "run_command",
        lambda self, cmd, **k: (255, "Failed to initialize NVML: Unknown Error\n", ""),
    )
    failed, result = run_module(gpu_info.main, args)
    assert not failed
    assert result["gpus"] == [] and result["count"] == 0
    assert "Failed to initialize NVML" in result["reason"]
    assert result["reboot_required"] is False
    assert result["verdict"] == verdict


def test_gpus_listed_is_a_pass(run_module: Runner, host: List[List[str]]) -> None:
    failed, result = run_module(gpu_info.main, {"profile": "gpu"})
    assert not failed and result["verdict"] == "pass" and result["reason"] == ""


def test_nvml_source_needs_the_library(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_host_probe, "pynvml", None)
    failed, result = run_module(gpu_info.main, {"source": "nvml"})
    assert failed and "nvidia-ml-py" in result["msg"]


def test_dest_is_written_once(run_module: Runner, host: List[List[str]], tmp_path: Path) -> None:
    dest = tmp_path / "sub" / "gpu_info.json"
    failed, first = run_module(gpu_info.main, {"dest": str(dest)})
    assert not failed and first["changed"] is True
    assert json.loads(dest.read_text())["count"] == 8
    failed, second = run_module(gpu_info.main, {"dest": str(dest)})
    assert not failed and second["changed"] is False


def test_check_mode_reads_but_writes_nothing(run_module: Runner, host: List[List[str]], tmp_path: Path) -> None:
    dest = tmp_path / "gpu_info.json"
    failed, result = run_module(gpu_info.main, {"dest": str(dest)}, check_mode=True)
    assert not failed and result["changed"] is True and result["count"] == 8
    assert not dest.exists()
