"""Host records, regressions, fleet statistics and the Markdown/HTML report."""

from __future__ import annotations

import re
from typing import Any, Dict, List

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _report as r


def smoke(bf16: float, status: str = "pass", fraction: float = 0.8) -> Dict[str, Any]:
    return {
        "verdict": status,
        "checks": {
            "matmul_bf16": {"status": status, "value": bf16, "unit": "TFLOP/s", "fraction": fraction, "peak": 989.0},
            "matmul_tf32": {"status": "skip", "reason": "not asked"},
            "h2d": {"status": "pass", "value": 50.0, "unit": "GB/s", "fraction": 0.78},
        },
    }


def modules(bf16: float, status: str = "pass") -> Dict[str, Any]:
    return {
        "gpu_info": {"count": 1, "driver_version": "570.124.06", "reboot_required": False},
        "gpu_smoke": smoke(bf16, status, bf16 / 989.0),
        "xla_smoke": {"verdict": "pass", "checks": {"xla": {"status": "pass", "steady_xla_s": 0.02, "speedup": 1.5}}},
        "trt_smoke": {"verdict": "skip", "reason": "TensorRT is not importable", "checks": {}},
    }


def test_figures_skip_unmeasured_checks() -> None:
    found = r.figures(modules(800.0))
    assert found == {"gpu_smoke.matmul_bf16": 800.0, "gpu_smoke.h2d": 50.0, "xla_smoke.calls_per_s": 50.0}


def test_host_record_verdict_is_worst_module() -> None:
    record = r.host_record("gpu01", "20261130T090000Z", modules(800.0), None, 10.0)
    assert record["verdict"] == "pass"
    assert record["verdicts"] == {"gpu_info": "pass", "gpu_smoke": "pass", "xla_smoke": "pass", "trt_smoke": "skip"}
    assert record["regressions"] == []
    failing = r.host_record("gpu01", "t", modules(500.0, "fail"), None, 10.0)
    assert failing["verdict"] == "fail"


def test_reboot_required_is_warn() -> None:
    mods = modules(800.0)
    mods["gpu_info"]["reboot_required"] = True
    assert r.host_record("gpu01", "t", mods, None, 10.0)["verdict"] == "warn"


def test_regression_against_previous_run_is_flagged() -> None:
    before = r.host_record("gpu01", "20261129T090000Z", modules(800.0), None, 10.0)
    after = r.host_record("gpu01", "20261130T090000Z", modules(680.0), before, 10.0)
    assert [g["figure"] for g in after["regressions"]] == ["gpu_smoke.matmul_bf16"]
    assert after["verdict"] == "warn"
    assert "20261129T090000Z" in after["flags"][0]
    steady = r.host_record("gpu01", "20261130T090000Z", modules(760.0), before, 10.0)
    assert steady["regressions"] == [] and steady["verdict"] == "pass"


def fleet() -> List[Dict[str, Any]]:
    return [
        r.host_record(h, "t", modules(bf16), None, 10.0) for h, bf16 in (("a", 800.0), ("b", 790.0), ("c<x>", 600.0))
    ]


def test_fleet_median_and_slow_host() -> None:
    records = fleet()
    stats = r.fleet_stats(records, 10.0)
    assert stats["medians"]["gpu_smoke.matmul_bf16"] == 790.0
    assert [(s["host"], s["figure"]) for s in stats["slow"]] == [("c<x>", "gpu_smoke.matmul_bf16")]
    r.apply_fleet(records, stats)
    assert [rec["verdict"] for rec in records] == ["pass", "pass", "warn"]
    assert "below the fleet median" in records[2]["fleet_flags"][0]


def test_single_host_is_never_slow() -> None:
    records = fleet()[:1]
    assert r.fleet_stats(records, 10.0)["slow"] == []


def test_summary_lines() -> None:
    lines = r.summary_lines(r.host_record("gpu01", "t", modules(800.0), None, 10.0))
    assert lines[0] == "gpu01: PASS"
    assert any(line.startswith("  gpu_smoke.matmul_bf16: pass, 800 TFLOP/s, 81 % of spec") for line in lines)
    assert any("trt_smoke: skip (TensorRT is not importable)" in line for line in lines)
    assert any("xla_smoke.xla: pass" in line and "speedup 1.50x" in line for line in lines)


def test_markdown_lists_every_host() -> None:
    records = fleet()
    stats = r.fleet_stats(records, 10.0)
    text = r.render_markdown(records, stats, "2026-11-30 09:00 UTC")
    for host in ("a", "b", "c<x>"):
        assert f"## {host}" in text
    assert "| gpu_smoke.matmul_bf16 | 790 | c<x> |" in text


def test_html_is_self_contained_and_escaped() -> None:
    records = fleet()
    stats = r.fleet_stats(records, 10.0)
    page = r.render_html(records, stats, "2026-11-30 09:00 UTC")
    assert page.startswith("<!DOCTYPE html>")
    assert "<svg" in page and "</svg>" in page
    assert "c&lt;x&gt;" in page and "c<x>" not in page
    links = set(re.findall(r"(?:src|href)=[\"']([^\"']+)", page))
    assert links == set()
    assert set(re.findall(r"https?://[^\"'\s<]+", page)) == {"http://www.w3.org/2000/svg"}
    assert page.count("<rect ") == 3 * 2


def test_chart_marks_unmeasured_checks() -> None:
    svg = r.chart_svg(fleet()[:1])
    assert "matmul_tf32: skip" in svg
    assert "matmul_fp16: not run" in svg


@pytest.mark.parametrize(
    ("verdict", "fail_on", "expected"),
    [
        ("fail", "fail", True),
        ("warn", "fail", False),
        ("warn", "warn", True),
        ("pass", "warn", False),
        ("skip", "warn", False),
        ("fail", "never", False),
    ],
)
def test_should_fail(verdict: str, fail_on: str, expected: bool) -> None:
    assert r.should_fail(verdict, fail_on) is expected


def test_fleet_verdict() -> None:
    records = fleet()
    r.apply_fleet(records, r.fleet_stats(records, 10.0))
    assert r.fleet_verdict(records) == "warn"


def test_gpu_info_without_gpus_is_skip_not_pass() -> None:
    """Reading facts on a host with no GPU verifies nothing; only the checks that ran decide the verdict."""
    mods = {"gpu_info": {"count": 0, "gpus": [], "reason": "no driver"}, "trt_smoke": modules(1.0)["trt_smoke"]}
    record = r.host_record("cpu01", "20261130T090000Z", mods, None, 10.0)
    assert record["verdicts"]["gpu_info"] == "skip"
    assert record["verdict"] == "skip"
    mods["xla_smoke"] = modules(1.0)["xla_smoke"]
    assert r.host_record("cpu01", "20261130T090000Z", mods, None, 10.0)["verdict"] == "pass"
