"""fabric_info: NVSwitch detection from a stand-in PCI tree, package names and versions, and the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from ansible.module_utils import basic
from ansible_collections.gpulab.dlstack.plugins.module_utils import _fabric
from ansible_collections.gpulab.dlstack.plugins.modules import fabric_info

Runner = Callable[..., Tuple[bool, Dict[str, Any]]]

HGX_H100 = (
    [("0000:05:00.0", "0x10de", "0x22a3", "0x068000")] * 1
    + [(f"0000:0{i}:00.0", "0x10de", "0x22a3", "0x068000") for i in range(6, 9)]
    + [(f"0000:{0x18 + 0x10 * i:02x}:00.0", "0x10de", "0x2330", "0x030200") for i in range(8)]
)
PCIE_H100 = [("0000:82:00.0", "0x10de", "0x2331", "0x030200"), ("0000:00:1f.0", "0x8086", "0x1d41", "0x060100")]
HGX_B200 = [(f"0000:{0x18 + 0x10 * i:02x}:00.0", "0x10de", "0x2901", "0x030200") for i in range(8)]
UNKNOWN_BRIDGE = [*PCIE_H100, ("0000:90:00.0", "0x10de", "0x9999", "0x068000")]


def _tree(tmp_path: Path, devices: List[Tuple[str, str, str, str]]) -> str:
    for slot, vendor, device, pci_class in devices:
        base = tmp_path / slot
        base.mkdir(parents=True, exist_ok=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", pci_class)):
            (base / name).write_text(value + "\n")
    return str(tmp_path)


@pytest.mark.parametrize(
    "devices, expected, reason",
    [
        (HGX_H100, (True, 3, False), "4 NVSwitch(es) 10de:22a3 (HGX H100/H200/H800/H20, generation 3) on the PCI bus"),
        (
            HGX_B200,
            (True, 4, True),
            "8 GPU(s) 10de:2901 of an HGX B200 baseboard, whose generation-4 NVSwitches are not",
        ),
        (PCIE_H100, (False, None, False), "no NVSwitch on the PCI bus and no GPU of an NVSwitch-only baseboard"),
        (UNKNOWN_BRIDGE, (False, None, False), "0000:90:00.0 (10de:9999) were seen: if they are NVSwitches, set"),
        ([], (False, None, False), "no NVSwitch"),
    ],
)
def test_detect_from_the_pci_bus(tmp_path: Path, devices, expected, reason) -> None:
    found = _fabric.detect(_fabric.scan_pci(_tree(tmp_path, devices)))
    assert (found["nvswitch"], found["generation"], found["nvlsm_required"]) == expected
    assert reason in found["reason"], found["reason"]


def test_scan_of_a_missing_folder_finds_nothing(tmp_path: Path) -> None:
    assert _fabric.scan_pci(str(tmp_path / "absent")) == []


@pytest.mark.parametrize(
    "manager, version, nvlsm, expected",
    [
        (
            "apt",
            "535.161.08",
            False,
            [("nvidia-fabricmanager-535", "535.161.08-*", "nvidia-fabricmanager-535=535.161.08-*")],
        ),
        (
            "apt",
            "1:535.261.03-1~deb12u1",
            False,
            [("nvidia-fabricmanager-535", "535.261.03-*", "nvidia-fabricmanager-535=535.261.03-*")],
        ),
        (
            "apt",
            "580.95.05",
            True,
            [
                ("nvidia-fabricmanager-580", "580.95.05-*", "nvidia-fabricmanager-580=580.95.05-*"),
                ("nvlsm", "", "nvlsm"),
            ],
        ),
        ("apt", "590.44.01", False, [("nvidia-fabricmanager", "590.44.01-*", "nvidia-fabricmanager=590.44.01-*")]),
        ("dnf", "570.124.06", False, [("nvidia-fabric-manager", "570.124.06", "nvidia-fabric-manager-570.124.06")]),
    ],
)
def test_package_names_and_versions(manager, version, nvlsm, expected) -> None:
    got = [(p["name"], p["version"], p["spec"]) for p in _fabric.packages(manager, version, nvlsm)]
    assert got == expected


@pytest.mark.parametrize("version", ["", "latest", "r535"])
def test_a_version_that_is_not_one_is_refused(version) -> None:
    with pytest.raises(ValueError, match="set nvidia_driver_version"):
        _fabric.packages("apt", version, False)


def test_verdicts_never_pass_without_a_running_service() -> None:
    nvswitch = {"nvswitch": True, "reason": "4 NVSwitch(es)"}
    assert _fabric.verdict(nvswitch, "active", "nvidia-fabricmanager")["verdict"] == "pass"
    for state in ("inactive", "failed", "activating", None):
        got = _fabric.verdict(nvswitch, state, "nvidia-fabricmanager")
        assert got["verdict"] == "fail" and "error 802" in got["reason"], got
    got = _fabric.verdict({"nvswitch": False, "reason": "no NVSwitch"}, None, "nvidia-fabricmanager")
    assert got == {"verdict": "skip", "reason": "not an NVSwitch system: no NVSwitch"}


def test_module_reports_packages_and_the_service_verdict(run_module: Runner, tmp_path: Path, monkeypatch) -> None:
    root = _tree(tmp_path, HGX_H100)
    calls: List[List[str]] = []

    def run_command(self: Any, args: List[str], **kwargs: Any) -> Tuple[int, str, str]:
        calls.append(args)
        return 3, "inactive\n", ""

    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: f"/usr/bin/{name}")
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    failed, result = run_module(
        fabric_info.main, {"pci_devices_path": root, "driver_version": "535.161.08-1", "check_service": True}
    )
    assert not failed and not result["changed"], result
    assert [p["spec"] for p in result["packages"]] == ["nvidia-fabricmanager-535=535.161.08-*"]
    assert calls == [["/usr/bin/systemctl", "is-active", "nvidia-fabricmanager"]]
    assert result["verdict"] == "fail" and result["service_state"] == "inactive"


def test_module_skips_a_host_without_nvswitch_and_forces_on_request(run_module: Runner, tmp_path: Path) -> None:
    root = _tree(tmp_path, PCIE_H100)
    failed, result = run_module(
        fabric_info.main, {"pci_devices_path": root, "driver_version": "550.1.2", "check_service": True}
    )
    assert not failed and result["verdict"] == "skip" and result["packages"] == [], result
    failed, result = run_module(
        fabric_info.main, {"pci_devices_path": root, "driver_version": "550.1.2", "force": True}
    )
    assert not failed and result["nvswitch"] and result["packages"][0]["name"] == "nvidia-fabricmanager-550", result
    assert result["verdict"] is None


def test_module_fails_on_a_bad_driver_version(run_module: Runner, tmp_path: Path) -> None:
    failed, result = run_module(
        fabric_info.main, {"pci_devices_path": _tree(tmp_path, HGX_H100), "driver_version": "x"}
    )
    assert failed and "set nvidia_driver_version" in result["msg"]
