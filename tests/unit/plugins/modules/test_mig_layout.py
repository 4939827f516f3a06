"""mig_layout and the boot script: a declarative MIG layout applied at the nvidia-smi boundary.

nvidia-smi is the test stand-in tests/standins/fake_nvidia_smi_mig.py, which keeps the GPUs' MIG state in a JSON file
and records every call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _mig
from ansible_collections.gpulab.dlstack.plugins.module_utils._matrix import MIG_PROFILES
from ansible_collections.gpulab.dlstack.plugins.modules import mig_layout

Runner = Callable[..., Tuple[bool, Dict[str, Any]]]
ROOT = Path(__file__).resolve().parents[4]
STANDIN = ROOT / "tests" / "standins" / "fake_nvidia_smi_mig.py"
A100 = "NVIDIA A100-SXM4-80GB"


@pytest.fixture
def smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Dict[str, Any]]:
    state = tmp_path / "smi.json"
    monkeypatch.setenv("DLSTACK_STANDIN_SMI_STATE", str(state))

    def write(mig: str = "Enabled", instances: Any = None) -> Dict[str, Any]:
        gpus = [
            {"index": i, "name": name, "mig_current": mig, "mig_pending": mig}
            for i, name in enumerate([A100, A100, "NVIDIA L40S"])
        ]
        state.write_text(json.dumps({"gpus": gpus, "instances": instances or {}}))
        return {"path": str(STANDIN), "state": state}

    return write


def _state(setup: Dict[str, Any]) -> Dict[str, Any]:
    return json.loads(setup["state"].read_text())


def _calls(setup: Dict[str, Any]) -> List[List[str]]:
    return _state(setup)["calls"]


def test_parsers_read_the_stand_in_tables(smi) -> None:
    setup = smi(instances={"0": [{"profile": "3g.40gb", "profile_id": 9, "instance_id": 1, "placement": "0:4"}]})

    def run(args: List[str]) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, setup["path"], *args], capture_output=True, text=True, check=False)

    profiles = _mig.parse_profiles(run(["mig", "-lgip"]).stdout)
    assert profiles[0]["3g.40gb"] == {"id": 9, "free": 1, "total": 2} and profiles[1]["7g.80gb"]["id"] == 0
    assert 2 not in profiles, "the L40S has no MIG"
    assert _mig.parse_instances(run(["mig", "-lgi"]).stdout) == {
        0: [{"profile": "3g.40gb", "profile_id": 9, "instance_id": 1, "placement": "0:4"}]
    }
    assert _mig.parse_instances("No GPU instances found: Not Found\n") == {}


@pytest.mark.parametrize(
    "layout, words",
    [
        ({"NVIDIA GeForce RTX 4090": ["1g.5gb"]}, "no MIG-capable GPU model known"),
        ({A100: ["3g.20gb"]}, "asks for 3g.20gb, which NVIDIA A100-SXM4-80GB does not offer"),
        ({A100: ["4g.40gb", "4g.40gb"]}, "4g.40gb x2 (at most 1)"),
        ({A100: ["4g.40gb", "3g.40gb", "1g.10gb"]}, "8/7 compute slices"),
        ({A100: ["3g.40gb", "3g.40gb", "1g.20gb"]}, "10/8 memory slices"),
    ],
)
def test_layouts_the_gpu_cannot_hold_are_refused(layout, words) -> None:
    problems = _mig.table_problems(layout, MIG_PROFILES)
    assert len(problems) == 1 and words in problems[0], problems


@pytest.mark.parametrize(
    "layout",
    [
        {A100: ["3g.40gb", "3g.40gb"]},
        {A100: ["4g.40gb", "2g.20gb", "1g.10gb"]},
        {A100: ["1g.10gb"] * 7},
        {"NVIDIA H200": ["7g.141gb"]},
        {A100: []},
    ],
)
def test_layouts_that_fit_are_accepted(layout) -> None:
    assert _mig.table_problems(layout, MIG_PROFILES) == []


def test_module_enables_mig_then_builds_instances_then_changes_nothing(run_module: Runner, smi) -> None:
    setup = smi(mig="Disabled")
    args = {"layout": {A100: ["3g.40gb", "3g.40gb"]}, "nvidia_smi": setup["path"]}
    failed, result = run_module(mig_layout.main, args, check_mode=True)
    assert not failed and result["changed"] and not any("-mig" in c for c in _calls(setup)), result
    failed, result = run_module(mig_layout.main, args)
    assert not failed and result["changed"] and len(result["pending"]) == 2, result
    assert [c for c in _calls(setup) if "-mig" in c] == [["-i", "0", "-mig", "1"], ["-i", "1", "-mig", "1"]]
    failed, result = run_module(mig_layout.main, args)
    assert not failed and not result["changed"] and len(result["pending"]) == 2, "pending a reset: nothing more to do"
    state = _state(setup)
    for gpu in state["gpus"][:2]:
        gpu["mig_current"] = "Enabled"  # the reset or reboot
    setup["state"].write_text(json.dumps(state))
    failed, result = run_module(mig_layout.main, args)
    assert not failed and result["changed"] and result["pending"] == [], result
    assert ["mig", "-cgi", "9,9", "-C", "-i", "0"] in _calls(setup)
    assert [i["profile"] for i in _state(setup)["instances"]["1"]] == ["3g.40gb", "3g.40gb"]
    before = len(_calls(setup))
    failed, result = run_module(mig_layout.main, args)
    assert not failed and not result["changed"], result
    assert all(c[:2] != ["mig", "-cgi"] for c in _calls(setup)[before:]), "a matching layout is not rebuilt"
    assert all(c[0] != "-i" and "2" not in c[-1:] for c in _calls(setup)[before:] if "-cgi" in c), (
        "the L40S is left alone"
    )


def test_a_changed_layout_rebuilds_the_instances(run_module: Runner, smi) -> None:
    old = [{"profile": "7g.80gb", "profile_id": 0, "instance_id": 1, "placement": "0:8"}]
    setup = smi(instances={"0": old, "1": old})
    failed, result = run_module(
        mig_layout.main, {"layout": {A100: ["4g.40gb", "2g.20gb", "1g.10gb"]}, "nvidia_smi": setup["path"]}
    )
    assert not failed and result["changed"], result
    calls = _calls(setup)
    assert (
        calls.index(["mig", "-dci", "-i", "0"])
        < calls.index(["mig", "-dgi", "-i", "0"])
        < calls.index(["mig", "-cgi", "5,14,19", "-C", "-i", "0"])
    )
    assert [i["profile"] for i in _state(setup)["instances"]["0"]] == ["4g.40gb", "2g.20gb", "1g.10gb"]


def test_a_refused_layout_changes_nothing(run_module: Runner, smi) -> None:
    setup = smi()
    failed, result = run_module(mig_layout.main, {"layout": {A100: ["3g.20gb"]}, "nvidia_smi": setup["path"]})
    assert failed and "does not offer" in result["msg"]
    assert "calls" not in _state(setup), "refused from the table before nvidia-smi was asked anything"


def test_the_gpus_own_profile_list_has_the_last_word(run_module: Runner, smi, monkeypatch) -> None:
    setup = smi()
    table = [dict(row, profiles=dict(row["profiles"], **{"9g.99gb": [1, 1, 1]})) for row in MIG_PROFILES]
    monkeypatch.setattr(mig_layout, "MIG_PROFILES", table)
    failed, result = run_module(mig_layout.main, {"layout": {A100: ["9g.99gb"]}, "nvidia_smi": setup["path"]})
    assert failed and "nvidia-smi mig -lgip lists" in result["msg"], result
    assert not any("-cgi" in c for c in _calls(setup))


def test_no_nvidia_smi_reports_and_changes_nothing(run_module: Runner, monkeypatch) -> None:
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, *a, **k: None)
    failed, result = run_module(mig_layout.main, {"layout": {A100: ["7g.80gb"]}})
    assert not failed and not result["changed"] and not result["applied"] and "boot unit" in result["reason"]


def test_the_boot_script_applies_the_layout_file(smi, tmp_path: Path) -> None:
    setup = smi()
    layout = tmp_path / "mig-layout.json"
    layout.write_text(json.dumps({A100: ["1g.10gb"] * 7}))
    script = ROOT / "plugins" / "module_utils" / "_mig.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(layout), setup["path"]], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert len(_state(setup)["instances"]["0"]) == 7 and "GPU 1 (NVIDIA A100-SXM4-80GB)" in proc.stdout
    layout.write_text(json.dumps({A100: ["3g.20gb"]}))
    proc = subprocess.run(
        [sys.executable, str(script), str(layout), setup["path"]], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1 and "does not offer 3g.20gb" in proc.stderr
