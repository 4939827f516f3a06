"""multigpu_smoke: topology parsing, link specs and verdicts from constructed topologies and workload documents.

The topologies are written in the layout `nvidia-smi topo -m` prints (its legend: X, NV#, PIX, PXB, PHB, NODE, SYS);
they are constructed for these tests, not recorded on hardware: no multi-GPU host was at hand.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info, _multigpu, _report, _smoke
from ansible_collections.gpulab.dlstack.plugins.modules import multigpu_smoke

Runner = Callable[..., Tuple[bool, dict]]

HGX_H100_TOPO = (
    "\t"
    + "\t".join(f"GPU{i}" for i in range(8))
    + "\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    + "".join(
        f"GPU{i}\t" + "\t".join("X" if i == j else "NV18" for j in range(8)) + f"\tPXB\t0-55\t{i // 4}\t\tN/A\n"
        for i in range(8)
    )
    + "\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n"
)
PCIE_PAIR_TOPO = """\x1b[4m\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m
GPU0\t X \tSYS\t0-31\t0\t\tN/A
GPU1\tSYS\t X \t32-63\t1\t\tN/A

Legend:
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
"""


def _h100(i: int) -> Dict[str, Any]:
    return {
        "index": i,
        "name": "NVIDIA H100 80GB HBM3",
        "pci_device_id": "2330",
        "pcie_gen_max": 5,
        "pcie_width_max": 16,
    }


def _l40s(i: int) -> Dict[str, Any]:
    return {"index": i, "name": "NVIDIA L40S", "pci_device_id": "26b9", "pcie_gen_current": 4, "pcie_width_current": 16}


def _doc(n: int, gbs: float, busbw: float, access: bool = True, correct: bool = True) -> Dict[str, Any]:
    grid = [[None if i == j else gbs for j in range(n)] for i in range(n)]
    return {
        "backend": "torch",
        "versions": {"torch": "2.5.1"},
        "gpus": [{"index": i, "name": "x"} for i in range(n)],
        "p2p": {
            "bandwidth_gbs": grid,
            "latency_us": [[None if i == j else 2.5 for j in range(n)] for i in range(n)],
            "access": [[None if i == j else access for j in range(n)] for i in range(n)],
        },
        "allreduce": {
            "ranks": n,
            "bytes": 1 << 28,
            "algbw_gbs": busbw * n / (2 * (n - 1)),
            "busbw_gbs": busbw,
            "correct": correct,
        },
    }


def test_parse_topology_of_an_hgx_board_and_a_pcie_pair() -> None:
    matrix = _multigpu.parse_topology(HGX_H100_TOPO)
    assert len(matrix) == 8 and matrix[0][0] == "X" and matrix[3][5] == "NV18"
    assert _multigpu.parse_topology(PCIE_PAIR_TOPO) == [["X", "SYS"], ["SYS", "X"]]
    assert _multigpu.parse_topology("No devices were found\n") == []


@pytest.mark.parametrize(
    "kind, gpu, gbs, basis",
    [
        ("NV18", _h100(0), 450.0, "18 x NVLink4 at 25 GB/s one way = 450 GB/s"),
        ("NV12", {"name": "NVIDIA A100-SXM4-80GB"}, 300.0, "12 x NVLink3"),
        ("SYS", _l40s(0), 32.0, "PCIe (SYS) gen4 x16 one way = 32 GB/s"),
        ("NV4", _l40s(0), None, "no NVLink spec for NVIDIA L40S"),
        ("PHB", {"name": "unknown"}, None, "gen unknown"),
        ("?", _h100(0), None, "not understood"),
    ],
)
def test_link_spec(kind: str, gpu: Dict[str, Any], gbs: Optional[float], basis: str) -> None:
    spec = _multigpu.link_spec(kind, gpu, gpu)
    assert spec["gbs"] == gbs and basis in spec["basis"], spec


def test_an_hgx_board_at_its_link_rate_passes() -> None:
    got = _multigpu.judge(
        _doc(8, 380.0, 360.0),
        _multigpu.parse_topology(HGX_H100_TOPO),
        [_h100(i) for i in range(8)],
        _multigpu.DEFAULT_THRESHOLDS,
    )
    assert got["verdict"] == "pass", got["checks"]
    assert len(got["pairs"]) == 56 and got["checks"]["p2p"]["fraction"] == pytest.approx(380 / 450, abs=1e-3)
    assert got["checks"]["allreduce_busbw"]["fraction"] == pytest.approx(0.8)


@pytest.mark.parametrize(
    "doc, verdict, words",
    [
        (_doc(8, 200.0, 360.0), "fail", "44% of the link"),
        (_doc(8, 300.0, 200.0), "warn", "44% of the link (pass at 60%)"),
        (_doc(8, 400.0, 400.0, access=False), "fail", "no peer access between NVLink-connected GPUs"),
        (_doc(8, 400.0, 400.0, correct=False), "fail", "the all-reduce sum was wrong"),
    ],
)
def test_slow_links_no_peer_access_and_wrong_sums(doc: Dict[str, Any], verdict: str, words: str) -> None:
    got = _multigpu.judge(
        doc, _multigpu.parse_topology(HGX_H100_TOPO), [_h100(i) for i in range(8)], _multigpu.DEFAULT_THRESHOLDS
    )
    assert got["verdict"] == verdict, got["checks"]
    assert any(words in c["reason"] for c in got["checks"].values()), got["checks"]


def test_pcie_pair_without_peer_access_is_at_most_warn() -> None:
    got = _multigpu.judge(
        _doc(2, 26.0, 22.0, access=False),
        [["X", "SYS"], ["SYS", "X"]],
        [_l40s(0), _l40s(1)],
        _multigpu.DEFAULT_THRESHOLDS,
    )
    assert got["checks"]["p2p"]["status"] == "warn" and "copies go through the host" in got["checks"]["p2p"]["reason"]
    assert got["checks"]["allreduce_busbw"]["status"] == "pass"


def test_unknown_links_never_pass() -> None:
    got = _multigpu.judge(_doc(2, 400.0, 400.0), [], [_h100(0), _h100(1)], _multigpu.DEFAULT_THRESHOLDS)
    assert got["verdict"] == "warn"


def _facts(gpus: List[Dict[str, Any]]) -> Dict[str, Any]:
    result = _gpu_info.empty_result("" if gpus else "driver not loaded", "nvidia-smi")
    result.update(gpus=gpus, count=len(gpus), pci_devices=[], pci_nvidia_present=bool(gpus))
    return result


def _fake(
    monkeypatch: pytest.MonkeyPatch, gpus: List[Dict[str, Any]], doc: Optional[Dict[str, Any]], topo: str
) -> List[str]:
    ran: List[str] = []
    monkeypatch.setattr(multigpu_smoke, "gather", lambda *a, **k: _facts(gpus))

    def run_script(
        module: Any, python: str, name: str, config: Dict[str, Any], limit: float, *, source: Any = None
    ) -> Any:
        ran.append(name)
        if name == "probe":
            return {"python": sys.executable, "backends": {"torch": {"importable": True, "gpu_build": True}}}, None
        assert source == _multigpu.SCRIPT and config["backend"] == "torch"
        return doc, None

    monkeypatch.setattr(_smoke, "run_script", run_script)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: f"/usr/bin/{name}")
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, cmd, **k: (0, topo, ""))
    return ran


def test_one_gpu_skips_with_the_reason(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _fake(monkeypatch, [_h100(0)], None, "")
    failed, result = run_module(multigpu_smoke.main, {"profile": "gpu"})
    assert not failed and result["verdict"] == "skip" and "One GPU" in result["reason"] and ran == []


def test_no_gpu_on_a_gpu_profile_fails(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, [], None, "")
    failed, result = run_module(multigpu_smoke.main, {"profile": "gpu"})
    assert not failed and result["verdict"] == "fail" and "driver not loaded" in result["reason"]
    failed, result = run_module(multigpu_smoke.main, {"profile": "cpu"})
    assert not failed and result["verdict"] == "skip"


def test_an_hgx_board_through_the_module(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _fake(monkeypatch, [_h100(i) for i in range(8)], _doc(8, 380.0, 360.0), HGX_H100_TOPO)
    failed, result = run_module(multigpu_smoke.main, {"profile": "gpu", "time_budget": 5})
    assert not failed and ran == ["probe", "multigpu"], result
    assert result["verdict"] == "pass" and result["topology"][0][1] == "NV18"
    assert "p2p: slowest pair" in result["reason"] and "allreduce_busbw: 80% of the link" in result["reason"]


def test_check_mode_runs_nothing(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _fake(monkeypatch, [_h100(0), _h100(1)], None, "")
    failed, result = run_module(multigpu_smoke.main, {}, check_mode=True)
    assert not failed and ran == [] and result["would_run"]["gpus"] == 2


def test_thresholds_out_of_order_are_refused(run_module: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, [_h100(0), _h100(1)], None, "")
    failed, result = run_module(multigpu_smoke.main, {"thresholds": {"p2p_pass": 0.4, "p2p_warn": 0.6}})
    assert failed and "p2p_warn" in result["msg"], result


def test_the_host_record_carries_the_new_checks() -> None:
    judged = _multigpu.judge(
        _doc(8, 380.0, 360.0),
        _multigpu.parse_topology(HGX_H100_TOPO),
        [_h100(i) for i in range(8)],
        _multigpu.DEFAULT_THRESHOLDS,
    )
    modules = {
        "multigpu_smoke": {"verdict": judged["verdict"], "checks": judged["checks"]},
        "fabric_info": {"verdict": "fail", "reason": "nvidia-fabricmanager is inactive on an NVSwitch system"},
        "dcgm_diag": {"verdict": "skip", "reason": "DCGM is not installed"},
    }
    record = _report.host_record("gpu01", "t", modules, None, 10.0)
    assert record["verdict"] == "fail" and record["verdicts"]["multigpu_smoke"] == "pass"
    assert record["figures"]["multigpu_smoke.allreduce_busbw"] == pytest.approx(360.0)
    assert any("fabric_info: fail" in line for line in _report.summary_lines(record))
