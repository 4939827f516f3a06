"""preflight_probe: everything preflight reads from a host in one call. The GPU part is gpu_info's (tested there);
here the record, the free space, the reboot marker and what a host without GPU or driver returns, on real files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info, _host_probe
from ansible_collections.gpulab.dlstack.plugins.modules import preflight_probe
from ansible_collections.gpulab.dlstack.tests.unit.plugins.module_utils.sysfs_stub import build, load

Runner = Callable[..., Tuple[bool, dict]]


@pytest.fixture(autouse=True)
def no_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """No NVML and no nvidia-smi: what the GPU part sees comes from the sysfs tree it is given."""
    monkeypatch.setattr(_host_probe, "pynvml", None)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)


def _probe(run_module: Runner, tmp_path: Path, **args: Any) -> Dict[str, Any]:
    failed, result = run_module(preflight_probe.main, {"sysfs_root": str(tmp_path / "no-pci"), **args})
    assert not failed, result
    assert result["changed"] is False
    return result


def test_a_recorded_stack_is_read_back(run_module: Runner, tmp_path: Path) -> None:
    record = tmp_path / "dlstack.fact"
    record.write_text(json.dumps({"profile": "cpu", "stack": {"tensorflow": "2.21"}}))
    result = _probe(run_module, tmp_path, record=str(record))
    assert result["recorded"] == {"profile": "cpu", "stack": {"tensorflow": "2.21"}}
    assert "recorded_error" not in result


@pytest.mark.parametrize(("content", "why"), [("{not json", "could not be read as JSON"), ("[1, 2]", "holds list")])
def test_an_unreadable_record_is_empty_with_the_reason(
    run_module: Runner, tmp_path: Path, content: str, why: str
) -> None:
    record = tmp_path / "dlstack.fact"
    record.write_text(content)
    result = _probe(run_module, tmp_path, record=str(record))
    assert result["recorded"] == {} and why in result["recorded_error"] and str(record) in result["recorded_error"]


def test_no_record_is_empty_without_error(run_module: Runner, tmp_path: Path) -> None:
    result = _probe(run_module, tmp_path, record=str(tmp_path / "missing.fact"))
    assert result["recorded"] == {} and "recorded_error" not in result


def test_free_space_is_measured_where_the_prefix_will_be(run_module: Runner, tmp_path: Path) -> None:
    result = _probe(run_module, tmp_path, space=str(tmp_path / "opt" / "dlstack"))
    space = result["space"]
    fs = os.statvfs(tmp_path)
    assert space["path"] == str(tmp_path)
    # What df calls Available, in KiB, give or take what other processes wrote in between.
    assert abs(space["free_kb"] - fs.f_bavail * fs.f_frsize // 1024) < 64 * 1024
    assert 0 < space["free_kb"] <= space["total_kb"]
    assert os.path.ismount(space["mount"]) and str(tmp_path).startswith(space["mount"])


def test_the_reboot_marker(run_module: Runner, tmp_path: Path) -> None:
    marker = tmp_path / "reboot-required"
    assert _probe(run_module, tmp_path, reboot_marker=str(marker))["reboot_pending"] is False
    marker.touch()
    assert _probe(run_module, tmp_path, reboot_marker=str(marker))["reboot_pending"] is True
    assert _probe(run_module, tmp_path)["reboot_pending"] is False


def test_gpus_on_the_pci_bus_without_a_driver(run_module: Runner, tmp_path: Path) -> None:
    name = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "fixtures" / "sysfs").glob("*.yml"))[0]
    root = build(tmp_path / "devices", load(name)["devices"])
    result = _probe(run_module, tmp_path, sysfs_root=str(root), profile="gpu")
    gpu = result["gpu"]
    assert gpu["count"] == 0 and len(gpu["host_gpus"]) > 0
    assert gpu["verdict"] == "fail" and gpu["reason"]


def test_gpu_false_reads_no_gpu(run_module: Runner, tmp_path: Path) -> None:
    assert _probe(run_module, tmp_path, gpu=False)["gpu"] == {}


def test_container_markers_are_those_present(tmp_path: Path) -> None:
    (tmp_path / ".dockerenv").touch()
    assert _gpu_info.container_markers(root=str(tmp_path)) == ["/.dockerenv"]
    assert _gpu_info.container_markers(root=str(tmp_path / "nothing")) == []
