"""verify_store and verify_report on good input: what one writes, the other reads and reports."""

from __future__ import annotations

import json
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


def test_store_reports_a_change_only_when_the_record_changes(run_module: Runner, tmp_path: Path) -> None:
    state = tmp_path / "state"
    args: Dict[str, Any] = {"host": "gpu01", "dir": str(state), "results": {"gpu_smoke": smoke(780.0)}}
    failed, first = run_module(verify_store.main, {**args, "timestamp": "20261130T090000Z"})
    assert not failed and first["changed"], first
    latest = (state / "latest.json").read_text()
    slower = {"gpu_smoke": {**smoke(780.0), "elapsed_s": 12.5}}
    failed, again = run_module(verify_store.main, {**args, "results": slower, "timestamp": "20261130T100000Z"})
    assert not failed and not again["changed"], again
    assert again["snapshot"] == first["snapshot"]
    assert (state / "latest.json").read_text() == latest
    assert sorted(p.name for p in state.iterdir()) == ["latest.json", "result-20261130T090000Z.json"]
    changed_args = {**args, "results": {"gpu_smoke": smoke(700.0)}, "timestamp": "20261130T110000Z"}
    failed, third = run_module(verify_store.main, changed_args)
    assert not failed and third["changed"], third
    assert (state / "result-20261130T110000Z.json").exists()
    assert '"timestamp": "20261130T110000Z"' in (state / "latest.json").read_text()


def test_store_writes_again_when_the_kept_copy_is_gone(run_module: Runner, tmp_path: Path) -> None:
    state = tmp_path / "state"
    args: Dict[str, Any] = {"host": "gpu01", "dir": str(state), "results": {"gpu_smoke": smoke(780.0)}}
    run_module(verify_store.main, {**args, "timestamp": "20261130T090000Z"})
    (state / "result-20261130T090000Z.json").unlink()
    failed, again = run_module(verify_store.main, {**args, "timestamp": "20261130T100000Z"})
    assert not failed and again["changed"], again
    assert (state / "result-20261130T100000Z.json").exists()


def test_report_is_rewritten_only_when_its_content_changes(run_module: Runner, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    failed, stored = run_module(
        verify_store.main,
        {
            "host": "gpu01",
            "dir": str(tmp_path / "s"),
            "timestamp": "20261130T090000Z",
            "results": {"gpu_smoke": smoke(780.0)},
        },
    )
    assert not failed, stored
    (reports / "gpu01").mkdir(parents=True)
    shutil.copy(stored["latest"], reports / "gpu01" / "latest.json")
    failed, first = run_module(verify_report.main, {"src": str(reports), "hosts": ["gpu01"]})
    assert not failed and first["changed"], first
    # Made an hour earlier: the same content under another generation time is left alone.
    for name in ("fleet.md", "fleet.html"):
        path = reports / name
        text = path.read_text()
        old = verify_report.GENERATED.search(text)
        assert old is not None
        path.write_text(text.replace(old.group(1), "2020-01-01 00:00 UTC"))
    before = (reports / "fleet.md").read_text()
    failed, again = run_module(verify_report.main, {"src": str(reports), "hosts": ["gpu01"]})
    assert not failed and not again["changed"], again
    assert (reports / "fleet.md").read_text() == before
    failed, more = run_module(verify_report.main, {"src": str(reports), "hosts": ["gpu01", "gpu02"]}, check_mode=True)
    assert not failed and not more["changed"], "a missing host is reported in the result, not in the files"
    record = json.loads((reports / "gpu01" / "latest.json").read_text())
    record["verdict"] = "warn"
    (reports / "gpu01" / "latest.json").write_text(json.dumps(record))
    failed, checked = run_module(verify_report.main, {"src": str(reports), "hosts": ["gpu01"]}, check_mode=True)
    assert not failed and checked["changed"], checked
    assert (reports / "fleet.md").read_text() == before
