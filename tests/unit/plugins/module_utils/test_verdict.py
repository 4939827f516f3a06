"""Spec lookup, fractions of peak, thresholds and multi-GPU gating."""

from __future__ import annotations

import copy
from typing import Any, Dict, List

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _verdict as v
from ansible_collections.gpulab.dlstack.plugins.module_utils._matrix import GPUS

TH = dict(v.DEFAULT_THRESHOLDS)
H100_FACTS = {"pci_device_id": "2330", "name": "NVIDIA H100 80GB HBM3", "pcie_gen_max": 5, "pcie_width_max": 16}


def test_worst_orders_statuses_and_skip_only_when_nothing_ran() -> None:
    assert v.worst(["pass", "skip", "warn"]) == "warn"
    assert v.worst(["pass", "fail", "warn"]) == "fail"
    assert v.worst(["skip", "pass"]) == "pass"
    assert v.worst(["skip"]) == "skip"
    assert v.worst([]) == "skip"


@pytest.mark.parametrize(
    ("fraction", "expected"),
    [(0.80, "pass"), (0.70, "pass"), (0.6999, "warn"), (0.60, "warn"), (0.5999, "fail"), (0.0, "fail")],
)
def test_grade_boundaries(fraction: float, expected: str) -> None:
    assert v.grade(fraction, 0.70, 0.60) == expected


def test_link_rates_are_theoretical_one_way() -> None:
    assert v.link_gbs(3, 16) == 16.0
    assert v.link_gbs(4, 16) == 32.0
    assert v.link_gbs(5, 16) == 64.0
    assert v.link_gbs(4, 8) == 16.0
    assert v.link_gbs(None, 16) is None
    assert v.link_gbs(9, 16) is None


def test_lookup_by_pci_id_then_name() -> None:
    specs = v.merge_specs([])
    assert v.lookup_spec(specs, "2335", None)["name"] == "NVIDIA H200"
    assert v.lookup_spec(specs, None, "nvidia h100 80gb hbm3")["peak_tflops"]["bf16"] == 989.0
    assert v.lookup_spec(specs, "ffff", "Unknown GPU") is None


def test_merge_updates_known_row_without_touching_the_table() -> None:
    specs = v.merge_specs([{"pci_device_ids": ["2330"], "peak_tflops": {"bf16": 900.0}}])
    row = v.lookup_spec(specs, "2330", None)
    assert row["peak_tflops"]["bf16"] == 900.0
    assert row["peak_tflops"]["fp16"] == 989.0
    assert row["source"].startswith("user override")
    original = next(g for g in GPUS if "2330" in g["pci_device_ids"])
    assert original["peak_tflops"]["bf16"] == 989.0


def test_merge_adds_new_row() -> None:
    new = {"name": "NVIDIA RTX 6000 Ada Generation", "pci_device_ids": ["26B1"], "peak_tflops": {"bf16": 182.2}}
    specs = v.merge_specs([new])
    assert len(specs) == len(GPUS) + 1
    assert v.lookup_spec(specs, "26b1", None)["peak_tflops"]["bf16"] == 182.2


def matmul(tflops: float, err: Any = 1e-3, n: int = 8192) -> Dict[str, Any]:
    return {"tflops": tflops, "max_rel_err": err, "n": n, "iterations": 10}


def h100() -> Dict[str, Any]:
    return v.lookup_spec(v.merge_specs([]), "2330", None)


def test_matmul_fraction_and_verdicts() -> None:
    spec = h100()
    good = v.judge_check("matmul_bf16", matmul(790.0), spec, None, TH)
    assert good["status"] == "pass"
    assert good["fraction"] == pytest.approx(790.0 / 989.0)
    assert v.judge_check("matmul_bf16", matmul(650.0), spec, None, TH)["status"] == "warn"
    assert v.judge_check("matmul_bf16", matmul(500.0), spec, None, TH)["status"] == "fail"


# Figures of one H200 run (tests/bench/results/2026-12-01-h200.json): torch bf16 8192^3 at 700 W cap.
H200_BEST, H200_SUSTAINED = 788.2, 671.6


@pytest.mark.parametrize(
    ("sustained", "expected"),
    [(H200_SUSTAINED, "pass"), (0.705 * H200_BEST, "pass"), (0.695 * H200_BEST, "warn"), (300.0, "warn")],
)
def test_sustained_rate_below_threshold_downgrades_a_pass(sustained: float, expected: str) -> None:
    raw = dict(matmul(H200_BEST), tflops_sustained=sustained)
    entry = v.judge_check("matmul_bf16", raw, h100(), None, TH)
    assert entry["status"] == expected
    assert entry["sustained"] == sustained
    assert entry["sustained_fraction"] == pytest.approx(sustained / H200_BEST)
    assert ("power or thermal capping" in entry["reason"]) is (expected == "warn")


def test_sustained_rate_never_upgrades_and_reaches_the_host_view() -> None:
    slow = v.judge_check("matmul_bf16", dict(matmul(500.0), tflops_sustained=100.0), h100(), None, TH)
    assert slow["status"] == "fail"
    copy = v.judge_check("memory_bw", {"gbs": 3000.0, "gbs_sustained": 2900.0, "copy_ok": True}, h100(), None, TH)
    host = v.judge_host([{"index": 0, "checks": {"memory_bw": copy}}], TH)
    assert host["memory_bw"]["sustained"] == 2900.0
    assert host["memory_bw"]["sustained_fraction"] == pytest.approx(2900.0 / 3000.0)


def test_numerical_mismatch_fails_even_when_fast() -> None:
    entry = v.judge_check("matmul_fp16", matmul(900.0, err=0.2), h100(), None, TH)
    assert entry["status"] == "fail"
    assert "Numerical mismatch" in entry["reason"]
    nan = v.judge_check("matmul_fp32", matmul(60.0, err=None), h100(), None, TH)
    assert nan["status"] == "fail" and "NaN" in nan["reason"]


def test_tolerance_depends_on_precision() -> None:
    assert v.judge_check("matmul_bf16", matmul(790.0, err=5e-3), h100(), None, TH)["status"] == "pass"
    assert v.judge_check("matmul_fp32", matmul(60.0, err=5e-3), h100(), None, TH)["status"] == "fail"


def test_unknown_gpu_is_never_pass() -> None:
    entry = v.judge_check("matmul_bf16", matmul(100.0), None, None, TH)
    assert entry["status"] == "warn"
    assert "peaks" in entry["reason"]


def test_skip_and_error_pass_through() -> None:
    assert v.judge_check("matmul_tf32", {"skipped": "no TF32"}, h100(), None, TH) == {
        "status": "skip",
        "reason": "no TF32",
    }
    assert v.judge_check("memory_bw", {"error": "RuntimeError: boom"}, h100(), None, TH)["status"] == "fail"
    assert v.judge_check("h2d", None, h100(), None, TH)["status"] == "skip"


def test_memory_bandwidth() -> None:
    spec = h100()
    assert v.judge_check("memory_bw", {"gbs": 2900.0, "copy_ok": True}, spec, None, TH)["status"] == "pass"
    assert v.judge_check("memory_bw", {"gbs": 2500.0, "copy_ok": True}, spec, None, TH)["status"] == "warn"
    assert v.judge_check("memory_bw", {"gbs": 2900.0, "copy_ok": False}, spec, None, TH)["status"] == "fail"


def test_host_copies_against_the_driver_link() -> None:
    link = v.link_for(H100_FACTS, h100())
    assert link is not None and link["gbs"] == 64.0 and "(driver)" in link["basis"]
    assert v.judge_check("h2d", {"gbs": 50.0, "pinned": True}, h100(), link, TH)["status"] == "pass"
    assert v.judge_check("d2h", {"gbs": 30.0, "pinned": True}, h100(), link, TH)["status"] == "fail"
    pageable = v.judge_check("h2d", {"gbs": 50.0, "pinned": False}, h100(), link, TH)
    assert pageable["status"] == "skip"


def test_link_falls_back_to_spec_table_and_then_to_warn() -> None:
    link = v.link_for({"pcie_gen_max": None}, h100())
    assert link is not None and "(spec table)" in link["basis"] and link["gbs"] == 64.0
    assert v.judge_check("h2d", {"gbs": 20.0, "pinned": True}, None, None, TH)["status"] == "warn"


def gpu(index: int, bf16: float, h2d: float = 50.0) -> Dict[str, Any]:
    return {
        "index": index,
        "name": "NVIDIA H100 80GB HBM3",
        "compute_capability": "9.0",
        "checks": {
            "matmul_bf16": matmul(bf16),
            "matmul_tf32": {"skipped": "not asked"},
            "h2d": {"gbs": h2d, "pinned": True, "bytes": 1},
        },
    }


def test_judge_gpu_uses_facts_for_spec_and_link() -> None:
    judged = v.judge_gpu(gpu(0, 800.0), H100_FACTS, v.merge_specs([]), TH)
    assert judged["spec"]["name"] == "NVIDIA H100 80GB HBM3"
    assert judged["link"]["gen"] == 5
    assert judged["verdict"] == "pass"
    assert judged["checks"]["matmul_tf32"]["status"] == "skip"


def test_host_is_gated_on_slowest_gpu() -> None:
    specs = v.merge_specs([])
    gpus = [v.judge_gpu(gpu(i, bf16), H100_FACTS, specs, TH) for i, bf16 in enumerate([800.0, 795.0, 640.0])]
    host = v.judge_host(gpus, TH)
    assert host["matmul_bf16"]["status"] == "warn"
    assert host["matmul_bf16"]["slowest_gpu"] == 2
    assert host["matmul_bf16"]["value"] == 640.0
    assert host["matmul_bf16"]["spread_flagged"] is True
    assert v.worst(c["status"] for c in host.values()) == "warn"


def test_spread_between_passing_gpus_turns_warn() -> None:
    specs = v.merge_specs([])
    gpus = [v.judge_gpu(gpu(i, bf16), H100_FACTS, specs, TH) for i, bf16 in enumerate([850.0, 790.0])]
    host = v.judge_host(gpus, TH)
    assert all(g["checks"]["matmul_bf16"]["status"] == "pass" for g in gpus)
    assert host["matmul_bf16"]["spread_pct"] == pytest.approx(7.06, abs=0.01)
    assert host["matmul_bf16"]["status"] == "warn"
    assert "differ" in host["matmul_bf16"]["reason"]


def test_even_gpus_stay_pass() -> None:
    specs = v.merge_specs([])
    gpus = [v.judge_gpu(gpu(i, bf16), H100_FACTS, specs, TH) for i, bf16 in enumerate([800.0, 790.0])]
    host = v.judge_host(gpus, TH)
    assert host["matmul_bf16"]["status"] == "pass"
    assert "spread_flagged" not in host["matmul_bf16"]
    assert host["matmul_tf32"]["status"] == "skip"


def test_compare_figures_flags_only_drops_beyond_pct() -> None:
    current = {"a": 90.0, "b": 50.0, "c": 120.0, "d": 1.0}
    previous = {"a": 100.0, "b": 100.0, "c": 100.0}
    regressions = v.compare_figures(current, previous, 20.0)
    assert [r["figure"] for r in regressions] == ["b"]
    assert regressions[0]["change_pct"] == -50.0


# nvidia-smi shows GH200's host link as a narrow PCIe link (x1 here, as in issue 15's capture); its host
# copies cross NVLink-C2C, 900 GB/s both ways (NVIDIA GH200 datasheet).
GH200_FACTS = {"pci_device_id": "2342", "name": "NVIDIA GH200 480GB", "pcie_gen_max": 5, "pcie_width_max": 1}


def test_gh200_host_copies_are_judged_against_nvlink_c2c() -> None:
    raw = {"index": 0, "checks": {"h2d": {"gbs": 200.0, "pinned": True}, "d2h": {"gbs": 400.0, "pinned": True}}}
    judged = v.judge_gpu(raw, GH200_FACTS, GPUS, TH)
    assert judged["link"]["gbs"] == 450.0
    assert "NVLink-C2C" in judged["link"]["basis"]
    assert judged["checks"]["h2d"]["status"] == "fail"
    assert judged["checks"]["d2h"]["status"] == "pass"
    assert judged["checks"]["h2d"]["fraction"] < 0.5


def _one_check(spec_name: str, check: str, raw: Dict[str, Any], gpus: Any = None) -> Dict[str, Any]:
    rows = GPUS if gpus is None else gpus
    return v.judge_gpu({"index": 0, "checks": {check: raw}}, {"name": spec_name}, rows, TH)["checks"][check]


def _marked(name: str, fields: List[str]) -> List[Dict[str, Any]]:
    """The table with one row's fields marked unverified, as an override or a future [U] row would be."""
    rows = copy.deepcopy(GPUS)
    for row in rows:
        if row["name"] == name:
            row["unverified"] = list(fields)
    return rows


# Since the audit of issue 15 no table row carries [U]: the cap is exercised on rows marked here.
U_GPUS = _marked("NVIDIA B200", ["fp32", "pcie_gen"])
U_GPUS_BW = _marked("NVIDIA H100 NVL", ["mem_bw_gbs"])


def test_no_gpu_row_of_the_table_rests_on_an_unverified_value() -> None:
    assert [g["name"] for g in GPUS if g.get("unverified") or "[U]" in g["source"]] == []


@pytest.mark.parametrize(
    ("spec_name", "check", "raw", "status", "flagged"),
    [
        # B200's fp32 peak marked [U]: a slow figure is a warning that says so, never a fail.
        ("NVIDIA B200", "matmul_fp32", {"tflops": 10.0, "max_rel_err": 1e-6}, "warn", True),
        ("NVIDIA B200", "matmul_fp32", {"tflops": 70.0, "max_rel_err": 1e-6}, "pass", True),
        # B200's bf16 peak is not marked: a slow figure fails as before.
        ("NVIDIA B200", "matmul_bf16", {"tflops": 100.0, "max_rel_err": 1e-4}, "fail", False),
        # A numerical mismatch is not computed from the spec: it fails whatever the row says.
        ("NVIDIA B200", "matmul_fp32", {"tflops": 70.0, "max_rel_err": 0.5}, "fail", False),
        ("NVIDIA H100 NVL", "memory_bw", {"gbs": 100.0, "bytes": 1, "copy_ok": True}, "warn", True),
        ("NVIDIA A30", "memory_bw", {"gbs": 100.0, "bytes": 1, "copy_ok": True}, "fail", False),
    ],
)
def test_unverified_spec_gives_at_most_warn(
    spec_name: str, check: str, raw: Dict[str, Any], status: str, flagged: bool
) -> None:
    entry = _one_check(spec_name, check, raw, U_GPUS_BW if check == "memory_bw" else U_GPUS)
    assert entry["status"] == status
    assert bool(entry.get("spec_unverified")) == flagged
    assert ("unverified [U]" in entry["reason"]) == flagged


def test_a_user_peak_replaces_the_unverified_table_value() -> None:
    """peaks: {B200 fp32} is the user's value: a slow fp32 figure fails again; other [U] fields stay capped."""
    specs = v.merge_specs([{"name": "NVIDIA B200", "peak_tflops": {"fp32": 80.0}}], U_GPUS)
    row = v.lookup_spec(specs, None, "NVIDIA B200")
    assert row is not None and "fp32" not in row["unverified"] and "pcie_gen" in row["unverified"]
    slow = {"tflops": 10.0, "max_rel_err": 1e-6}
    judged = v.judge_gpu({"index": 0, "checks": {"matmul_fp32": slow}}, {"name": "NVIDIA B200"}, specs, TH)
    assert judged["checks"]["matmul_fp32"]["status"] == "fail"
    assert "spec_unverified" not in judged["checks"]["matmul_fp32"]
    # The table itself is untouched: without the override the same figure is capped at warn.
    assert _one_check("NVIDIA B200", "matmul_fp32", slow, U_GPUS)["status"] == "warn"
    # An override that names unverified itself keeps what it says.
    kept = v.merge_specs([{"name": "NVIDIA B200", "peak_tflops": {"fp32": 80.0}, "unverified": ["fp32"]}], GPUS)
    assert v.lookup_spec(kept, None, "NVIDIA B200")["unverified"] == ["fp32"]


def test_the_host_line_says_when_its_figure_rests_on_an_unverified_peak() -> None:
    gpus = [
        v.judge_gpu(
            {"index": i, "checks": {"matmul_fp32": {"tflops": t, "max_rel_err": 1e-6}}},
            {"name": "NVIDIA B200"},
            U_GPUS,
            TH,
        )
        for i, t in enumerate((10.0, 70.0))
    ]
    line = v.judge_host(gpus, TH)["matmul_fp32"]
    assert line["status"] == "warn" and line["spec_unverified"] is True and "unverified [U]" in line["reason"]


def test_a_gpu_in_mig_mode_is_not_judged_against_the_whole_gpu() -> None:
    """One 1g.10gb slice of an A100 measures ~1/7 of the GPU: a warning that says why, never a fail."""
    slow = {"tflops": 20.0, "max_rel_err": 1e-4}
    facts = {"name": "NVIDIA A100-SXM4-80GB", "mig_mode": "enabled", "mig_devices": [{"profile": "1g.10gb"}] * 7}
    judged = v.judge_gpu({"index": 0, "checks": {"matmul_bf16": slow}}, facts, GPUS, TH)["checks"]["matmul_bf16"]
    assert judged["status"] == "warn" and judged["mig"] is True
    assert "MIG mode is enabled on this GPU (7 MIG devices)" in judged["reason"]
    whole = v.judge_gpu({"index": 0, "checks": {"matmul_bf16": slow}}, dict(facts, mig_mode="disabled"), GPUS, TH)
    assert whole["checks"]["matmul_bf16"]["status"] == "fail"


# Spec rows whose figures no primary source gave carry none: a speed check against them is a warning that
# names the missing figure, never a fail (NVIDIA publishes no A10G, H20 or H100 96GB datasheet).
@pytest.mark.parametrize(
    ("spec_name", "check", "raw", "needle"),
    [
        ("NVIDIA H20", "memory_bw", {"gbs": 100.0, "bytes": 1, "copy_ok": True}, "no memory-bandwidth spec"),
        ("NVIDIA A10G", "matmul_fp32", {"tflops": 1.0, "max_rel_err": 1e-6}, "has no fp32 peak"),
        ("NVIDIA H100 96GB HBM3", "matmul_bf16", {"tflops": 1.0, "max_rel_err": 1e-4}, "has no bf16 peak"),
        ("NVIDIA H200 NVL", "matmul_bf16", {"tflops": 1.0, "max_rel_err": 1e-4}, "has no bf16 peak"),
        ("NVIDIA GeForce RTX 5090", "matmul_fp32", {"tflops": 1.0, "max_rel_err": 1e-6}, "has no fp32 peak"),
    ],
)
def test_a_figure_left_out_of_the_table_is_not_judged(
    spec_name: str, check: str, raw: Dict[str, Any], needle: str
) -> None:
    entry = _one_check(spec_name, check, raw)
    assert entry["status"] == "warn" and needle in entry["reason"]
    assert "peak" not in entry and not entry.get("spec_unverified")


def test_b200_memory_bandwidth_is_judged_against_the_hgx_table_7_7_tbs() -> None:
    """NVIDIA's HGX table: 7.7 TB/s per HGX B200 GPU; 7.0 TB/s measured is 91 % of it."""
    entry = _one_check("NVIDIA B200", "memory_bw", {"gbs": 7000.0, "bytes": 1, "copy_ok": True})
    assert entry["peak"] == 7700.0 and entry["fraction"] == pytest.approx(7000.0 / 7700.0)


def conv(tflops: float, err: Any = 1e-4) -> Dict[str, Any]:
    return {"tflops": tflops, "max_rel_err": err, "batch": 32, "channels": 256, "library": "cuDNN 90300"}


@pytest.mark.parametrize(
    ("check", "tflops", "err", "status", "words"),
    [
        # H100 SXM fp16 (dense) peak 989 TFLOP/s, fp32 67: conv_pass 0.35, conv_warn 0.25.
        ("conv_fp16", 400.0, 2e-3, "pass", "40 % of spec (pass at 35 %)."),
        ("conv_fp16", 300.0, 2e-3, "warn", "Only 30 % of spec"),
        ("conv_fp16", 200.0, 2e-3, "fail", "Only 20 % of spec"),
        ("conv_fp32", 30.0, 5e-4, "pass", "45 % of spec"),
        # A cuDNN that computes wrong answers fails however fast it is; fp32 is held to 1e-3, not fp16's 1e-2.
        ("conv_fp32", 60.0, 5e-3, "fail", "Numerical mismatch against the float64 reference"),
        ("conv_fp16", 900.0, None, "fail", "NaN/Inf in the result"),
    ],
)
def test_convolution_is_judged_against_the_peak_of_its_precision(
    check: str, tflops: float, err: Any, status: str, words: str
) -> None:
    entry = v.judge_check(check, conv(tflops, err), h100(), None, TH)
    assert entry["status"] == status, entry
    assert words in entry["reason"], entry["reason"]
    assert entry["unit"] == "TFLOP/s" and entry["library"] == "cuDNN 90300"
    assert (entry["batch"], entry["channels"]) == (32, 256)
    assert entry["tolerance"] == v.CONV_TOLERANCES[check.split("_")[1]]


def test_convolution_error_or_skip_from_the_workload() -> None:
    missing = v.judge_check(
        "conv_fp16", {"error": "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"}, h100(), None, TH
    )
    assert missing["status"] == "fail" and "CUDNN_STATUS_NOT_INITIALIZED" in missing["reason"]
    cupy = v.judge_check("conv_fp32", {"skipped": "CuPy cannot reach cuDNN (cupy.cudnn: ...)"}, h100(), None, TH)
    assert cupy["status"] == "skip"
