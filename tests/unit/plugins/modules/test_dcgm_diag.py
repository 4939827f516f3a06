"""dcgm_diag: dcgmi diag outputs (tests/unit/fixtures/dcgm) read into verdicts; never pass when it did not run."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _dcgm
from ansible_collections.gpulab.dlstack.plugins.modules import dcgm_diag

Runner = Callable[..., Tuple[bool, Dict[str, Any]]]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "dcgm"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    "name, rc, verdict, words",
    [
        ("r1_pass_dcgm3.json", 0, "pass", "passed 9 test result(s)"),
        ("r1_pass_dcgm4.json", 0, "pass", "passed 2 test result(s)"),
        (
            "r1_fail_persistence_dcgm3.json",
            226,
            "fail",
            "Deployment/Persistence Mode (Persistence mode for GPU 0 is disabled",
        ),
        ("r1_warn_dcgm3.json", 0, "warn", "Deployment/Graphics Processes"),
        ("r1_all_skipped_dcgm3.json", 0, "not_run", "ran no test"),
        ("r1_runtime_error_dcgm4.json", 226, "fail", "unsupported GPU 0"),
        ("no_hostengine.txt", 255, "not_run", "no diagnostic result"),
        ("r1_pass_dcgm3.json", 1, "fail", "rc=1 though no test failed"),
    ],
)
def test_verdicts_from_dcgmi_outputs(name: str, rc: int, verdict: str, words: str) -> None:
    text = _read(name)
    got = _dcgm.verdict(_dcgm.parse(text), rc, "" if text.startswith("{") else text)
    assert got["verdict"] == verdict and words in got["reason"], got


def test_text_before_the_json_and_null_tests_are_tolerated() -> None:
    parsed = _dcgm.parse("WARNING: THIS SHOULD NOT HAPPEN\n" + _read("r1_pass_dcgm3.json"))
    assert parsed["readable"] and len(parsed["tests"]) == 9 and parsed["version"] == "3.3.5"


def _fake(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dcgmi: bool, answer: Tuple[int, str, str]
) -> List[List[str]]:
    calls: List[List[str]] = []
    monkeypatch.setattr(
        basic.AnsibleModule,
        "get_bin_path",
        lambda self, name, *a, **k: f"/usr/bin/{name}" if dcgmi or name != "dcgmi" else None,
    )

    def run_command(self: Any, cmd: List[str], **kwargs: Any) -> Tuple[int, str, str]:
        calls.append(cmd)
        return answer

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    return calls


@pytest.mark.parametrize(
    "case",
    [("cpu", "fail", "skip"), ("gpu", "fail", "fail"), ("gpu", "warn", "warn"), ("auto", "fail", "skip")],
)
def test_dcgm_absent_never_passes(run_module: Runner, monkeypatch, tmp_path: Path, case: Tuple[str, str, str]) -> None:
    profile, missing, verdict = case
    calls = _fake(monkeypatch, tmp_path, False, (0, "", ""))
    failed, result = run_module(
        dcgm_diag.main, {"profile": profile, "missing": missing, "pci_devices_path": str(tmp_path)}
    )
    assert not failed and result["verdict"] == verdict and not result["ran"] and calls == []
    assert "DCGM is not installed" in result["reason"]


def test_a_passing_run_through_the_module(run_module: Runner, monkeypatch, tmp_path: Path) -> None:
    calls = _fake(monkeypatch, tmp_path, True, (0, _read("r1_pass_dcgm3.json"), ""))
    failed, result = run_module(dcgm_diag.main, {"profile": "gpu", "pci_devices_path": str(tmp_path)})
    assert not failed and result["verdict"] == "pass" and result["ran"], result
    assert calls == [["/usr/bin/timeout", "--kill-after=15", "600", "/usr/bin/dcgmi", "diag", "-r", "1", "-j"]]


def test_no_host_engine_fails_on_a_gpu_host_and_skips_on_a_cpu_host(
    run_module: Runner, monkeypatch, tmp_path: Path
) -> None:
    _fake(monkeypatch, tmp_path, True, (255, _read("no_hostengine.txt"), ""))
    failed, result = run_module(dcgm_diag.main, {"profile": "gpu", "pci_devices_path": str(tmp_path)})
    assert not failed and result["verdict"] == "fail" and "Unable to connect to host engine" in result["reason"]
    failed, result = run_module(dcgm_diag.main, {"profile": "cpu", "pci_devices_path": str(tmp_path)})
    assert not failed and result["verdict"] == "skip"


def test_timeout_fails(run_module: Runner, monkeypatch, tmp_path: Path) -> None:
    _fake(monkeypatch, tmp_path, True, (124, "", ""))
    failed, result = run_module(dcgm_diag.main, {"profile": "gpu", "timeout": 30, "pci_devices_path": str(tmp_path)})
    assert not failed and result["verdict"] == "fail" and "ran past 30 s" in result["reason"]


def test_check_mode_runs_nothing(run_module: Runner, monkeypatch, tmp_path: Path) -> None:
    calls = _fake(monkeypatch, tmp_path, True, (0, "", ""))
    failed, result = run_module(dcgm_diag.main, {"pci_devices_path": str(tmp_path)}, check_mode=True)
    assert not failed and calls == [] and result["verdict"] == "skip"


def test_a_bad_timeout_is_refused(run_module: Runner, monkeypatch, tmp_path: Path) -> None:
    _fake(monkeypatch, tmp_path, True, (0, "", ""))
    failed, result = run_module(dcgm_diag.main, {"timeout": 0})
    assert failed and "timeout=0" in result["msg"]
