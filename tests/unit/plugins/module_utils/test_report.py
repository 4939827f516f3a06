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


def gpu_modules() -> Dict[str, Any]:
    mods = modules(800.0)
    mods["gpu_info"]["verdict"] = "pass"
    mods["gpu_smoke"]["versions"] = {"tensorflow": "2.17.1", "cuda": "12.3", "cudnn": "8", "numpy": "1.26.4"}
    mods["gpu_smoke"]["python_version"] = "3.12.3"
    mods["trt_smoke"]["versions"] = {"tensorrt": "8.6.1"}
    return mods


@pytest.mark.parametrize(
    ("mods", "recorded", "stack", "sources"),
    [
        (
            gpu_modules(),
            [],
            {
                "driver": "570.124.06",
                "cuda": "12.3",
                "cudnn": "8",
                "tensorrt": "8.6.1",
                "tensorflow": "2.17.1",
                "python": "3.12.3",
                "numpy": "1.26.4",
            },
            {"driver": "verify", "tensorrt": "verify", "python": "verify"},
        ),
        (
            {"gpu_info": {"count": 0, "driver_version": None}, "xla_smoke": {"versions": {"numpy": "2.1.3"}}},
            r.fact_stacks(
                {
                    "dlstack": {"stack": {"cuda": None, "cudnn": "9.3.0", "python": "3.11", "tensorflow": "2.21"}},
                    "dlstack_stack": {"tensorflow": "2.21.0", "driver_version": "535.261.03", "numpy": [1]},
                    "other": {"stack": {"tensorrt": "10"}},
                    "dlstack_broken": "not a dict",
                }
            ),
            {
                "driver": "535.261.03",
                "cuda": None,
                "cudnn": "9.3.0",
                "tensorrt": None,
                "tensorflow": "2.21.0",
                "python": "3.11",
                "numpy": "2.1.3",
            },
            {"driver": "local fact dlstack_stack", "cuda": None, "cudnn": "local fact dlstack", "numpy": "verify"},
        ),
    ],
    ids=["measured", "local facts, defensively"],
)
def test_installed_stack(
    mods: Dict[str, Any], recorded: List[Any], stack: Dict[str, Any], sources: Dict[str, Any]
) -> None:
    record = r.host_record("gpu01", "t", mods, None, 10.0, recorded=recorded)
    assert record["stack"] == stack
    assert {k: record["stack_sources"][k] for k in sources} == sources


def test_report_shows_the_stack_beside_the_verdicts() -> None:
    records = [r.host_record("gpu01", "t", gpu_modules(), None, 10.0), {"host": "old", "verdict": "pass"}]
    stats = r.fleet_stats(records, 10.0)
    text = r.render_markdown(records, stats, "g")
    assert (
        "| Host | Verdict | GPUs | gpu_info | gpu_smoke | xla_smoke | trt_smoke | lib_doctor | fabric_info"
        " | multigpu_smoke | dcgm_diag | Driver | CUDA | cuDNN |"
    ) in text
    assert (
        "| gpu01 | pass | 1 | pass | pass | pass | skip | - | - | - | - "
        "| 570.124.06 | 12.3 | 8 | 8.6.1 | 2.17.1 | 3.12.3 |" in text
    )
    assert "| old | pass | - | - | - | - | - | - | - | - | - | " + " | ".join([r.ABSENT] * 7) + " | 0 |" in text
    page = r.render_html(records, stats, "g")
    assert "<th>TensorRT</th><th>TF</th><th>Python</th><th>numpy</th>" in page
    assert "<td>8.6.1</td><td>2.17.1</td><td>3.12.3</td><td>1.26.4</td>" in page
    assert "  stack: Driver 570.124.06, CUDA 12.3, cuDNN 8, TensorRT 8.6.1, TF 2.17.1" in "\n".join(
        r.summary_lines(records[0])
    )


def test_html_escapes_every_host_provided_value() -> None:
    evil = "<script>alert(1)</script>"
    mods = gpu_modules()
    mods["gpu_smoke"]["checks"]["matmul_bf16"]["unit"] = evil
    mods["gpu_smoke"]["versions"]["tensorflow"] = evil
    record = r.host_record(evil, "t", mods, None, 10.0)
    record["verdict"] = evil
    record["verdicts"]["gpu_smoke"] = evil
    page = r.render_html([record], r.fleet_stats([record], 10.0), "g")
    assert "<script" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5
    assert '<td class="unknown">&lt;script&gt;' in page
    text = r.render_markdown([record], r.fleet_stats([record], 10.0), "g")
    assert "| <script>alert(1)</script> |" in text


def test_gpu_info_verdict_comes_from_the_module() -> None:
    mods = modules(800.0)
    mods["gpu_info"].update(count=0, verdict="fail", reason="No NVIDIA driver is loaded or reachable.")
    record = r.host_record("gpu01", "t", mods, None, 10.0)
    assert record["verdicts"]["gpu_info"] == "fail" and record["verdict"] == "fail"


def test_report_shows_the_library_doctor_per_environment() -> None:
    libs = {
        "libcudnn": {"soname": "libcudnn.so.9", "path": "/e/nvidia/cudnn/lib/libcudnn.so.9", "version": "9.3.0",
                     "via": "RUNPATH of tensorflow/libtensorflow_framework.so.2", "wheel": "nvidia-cudnn-cu12 9.3.0.75",
                     "status": "pass"},
        "libcudart": {"soname": "libcudart.so.13", "path": None, "status": "fail"},
    }  # fmt: skip
    doctor = {
        "verdict": "fail",
        "environments": [
            {"kind": "env", "name": "default", "verdict": "fail", "libraries": libs},
            {"kind": "kernel", "name": "dlstack-x", "verdict": "fail", "error": "kernel.json cannot be read"},
        ],
        "flags": ["default: libcudart fail: libcudart.so.13 would not load. Fix: Install nvidia-cuda-runtime."],
    }
    record = r.host_record("gpu01", "t", dict(gpu_modules(), lib_doctor=doctor), None, 10.0)
    assert record["verdicts"]["lib_doctor"] == "fail" and record["verdict"] == "fail"
    lines = r.summary_lines(record)
    assert "  lib_doctor[env default]: fail, libcudnn 9.3.0 (nvidia-cudnn-cu12 9.3.0.75); libcudart missing" in lines
    assert "  lib_doctor[kernel dlstack-x]: fail, kernel.json cannot be read" in lines
    assert "    default: libcudart fail: libcudart.so.13 would not load. Fix: Install nvidia-cuda-runtime." in lines
    page = r.render_html([record], r.fleet_stats([record], 10.0), "g")
    assert "lib_doctor[env default]" in page and '<td class="fail">fail</td>' in page
