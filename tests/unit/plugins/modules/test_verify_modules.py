"""verify_store and verify_report on good input: what one writes, the other reads and reports."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

from ansible_collections.gpulab.dlstack.plugins.modules import verify_report, verify_store

Runner = Callable[..., Tuple[bool, Dict[str, Any]]]


def smoke(bf16: float) -> Dict[str, Any]:
    return {
        "changed": False,
        "verdict": "pass",
        "checks": {"matmul_bf16": {"status": "pass", "value": bf16, "unit": "TFLOP/s", "fraction": bf16 / 989}},
    }


def test_records_written_by_verify_store_make_the_fleet_report(run_module: Runner, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    for host, bf16 in (("gpu01", 780.0), ("gpu02", 790.0), ("gpu03", 600.0)):
        state = tmp_path / host
        args = {"host": host, "dir": str(state), "timestamp": "20261130T090000Z", "results": {"gpu_smoke": smoke(bf16)}}
        failed, result = run_module(verify_store.main, args)
        assert not failed, result
        (reports / host).mkdir(parents=True)
        shutil.copy(result["latest"], reports / host / "latest.json")
    failed, result = run_module(
        verify_report.main, {"src": str(reports), "hosts": ["gpu01", "gpu02", "gpu03", "gpu04"]}
    )
    assert not failed, result
    assert result["verdicts"] == {"gpu01": "pass", "gpu02": "pass", "gpu03": "warn"}
    assert result["missing"] == ["gpu04"]
    assert (reports / "fleet.md").exists() and (reports / "fleet.html").exists()


def test_check_mode_writes_nothing(run_module: Runner, tmp_path: Path) -> None:
    failed, result = run_module(
        verify_report.main, {"src": str(tmp_path / "none"), "hosts": ["gpu01"]}, check_mode=True
    )
    assert not failed, result
    assert result["missing"] == ["gpu01"] and not (tmp_path / "none").exists()
