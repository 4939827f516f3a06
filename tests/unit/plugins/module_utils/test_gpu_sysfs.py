"""The one GPU parser on stub PCI trees of real machines (fixtures/sysfs): multi-GPU, NVSwitch, no driver.

These are the trees preflight reads through gpu_info (tests/unit/roles/test_preflight_gpu.py runs the role).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info as gi
from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix

from .sysfs_stub import SYSFS_FIXTURES, build, load, machines

NVSMI = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia-smi"


def no_driver(root: Path) -> dict:
    """gather() on a host without nvidia-smi or NVML, reading `root` as its PCI bus."""
    return gi.gather(lambda cmd: (0, "", ""), None, None, str(root), container=False, proc_version=str(root / "none"))


@pytest.mark.parametrize("name", machines())
def test_recorded_tree_is_taken_from_its_excerpt(name: str) -> None:
    data = load(name)
    for dev in data["devices"]:
        # Every address of the stub tree appears in the recorded output (lspci may drop the 0000: domain).
        assert dev["address"] in data["excerpt"] or dev["address"][5:] in data["excerpt"], dev["address"]
        if dev["vendor"] != "0x10de" or not dev["class"].startswith("0x0680"):
            assert dev["device"][2:] in data["excerpt"] or "pci.ids" in (SYSFS_FIXTURES / name).read_text()


@pytest.mark.parametrize("name", machines())
def test_gpus_and_nvswitches_of_a_recorded_machine(name: str, tmp_path: Path) -> None:
    data = load(name)
    root = build(tmp_path / "devices", data["devices"])
    result = no_driver(root)
    expected: List[Tuple[str, str]] = [tuple(g) for g in data["expect"]["gpus"]]  # type: ignore[misc]
    assert [(g["pci_bus_id"], g["pci_device_id"]) for g in result["host_gpus"]] == expected
    assert all(g["source"] == "pci" and g["driver_version"] is None for g in result["host_gpus"])
    # An NVSwitch (class 0680) is on the bus but is never a GPU.
    assert len(result["pci_nvswitches"]) == data["expect"]["nvswitches"]
    assert result["count"] == 0 and result["pci_nvidia_present"] is True
    drivers = {d["address"]: d.get("driver") for d in data["devices"]}
    assert [g["kernel_driver"] for g in result["host_gpus"]] == [drivers[a] for a, _drv in expected]
    assert f"{len(expected)} NVIDIA GPU(s) on the PCI bus" in result["reason"]
    row = _matrix.find_gpu(pci_device_id=expected[0][1])
    assert (row or {}).get("compute_capability") == data["expect"]["compute_capability"]


def test_driver_list_wins_and_carries_the_bound_driver(tmp_path: Path) -> None:
    """With a driver answering, the GPUs are the driver's, each with the kernel driver sysfs shows for it."""
    csv = (NVSMI / "a100-sxm4-8gpu.csv").read_text()
    # Seven of the eight on the stub bus: the eighth (missing there) gets no kernel driver.
    devices = [
        {
            "address": g["pci_bus_id_short"],
            "vendor": "0x10de",
            "device": "0x20b0",
            "class": "0x030200",
            "driver": "nvidia",
        }
        for g in gi.parse_csv(csv)[:7]
    ]
    root = build(tmp_path / "devices", devices)
    result = gi.gather(lambda cmd: (0, csv if len(cmd) > 1 else "", ""), "/usr/bin/nvidia-smi", None, str(root))
    gpus = result["host_gpus"]
    assert len(gpus) == 8 and {g["source"] for g in gpus} == {"nvidia-smi"}
    assert all(g["compute_capability"] == "8.0" and g["driver_version"] for g in gpus)
    assert [g["kernel_driver"] for g in gpus] == ["nvidia"] * 7 + [None]


def test_a_lost_gpu_stays_listed_from_the_pci_bus(tmp_path: Path) -> None:
    """gpu_lost: the healthy GPUs from nvidia-smi and the lost one from sysfs, so preflight still counts it."""
    out = (NVSMI / "composed-8gpu-one-lost.csv").read_text()
    lost = gi.lost_gpus(out)
    assert lost
    healthy = gi.parse_csv(out)
    addresses = [g["pci_bus_id_short"] for g in healthy] + [gi.short_bus_id(g["pci_bus_id"]) for g in lost]
    devices = [{"address": a, "vendor": "0x10de", "device": "0x20b0", "class": "0x030200"} for a in addresses]
    root = build(tmp_path / "devices", devices)
    result = gi.gather(
        lambda cmd: (15, out, "") if len(cmd) > 1 else (15, "", ""), "/usr/bin/nvidia-smi", None, str(root)
    )
    assert result["failure"] == "gpu_lost"
    sources = [g["source"] for g in result["host_gpus"]]
    assert sources == ["nvidia-smi"] * len(healthy) + ["pci"] * len(lost)
    assert result["host_gpus"][-1]["pci_bus_id"] == gi.short_bus_id(lost[0]["pci_bus_id"])


def test_a_container_lists_only_the_gpus_passed_to_it(tmp_path: Path) -> None:
    """sysfs in a container shows every GPU of the host; the driver's list (one GPU passed) is the answer."""
    data = load("hgx-h100-nccl-topo.yml")
    root = build(tmp_path / "devices", data["devices"])
    line = "0, GPU-x, NVIDIA H100 80GB HBM3, 00000000:B8:00.0, 0x233010DE, 9.0, 81559, 550.54.15" + ", [N/A]" * 9
    result = gi.gather(lambda cmd: (0, line if len(cmd) > 1 else "", ""), "/usr/bin/nvidia-smi", None, str(root))
    assert [(g["pci_bus_id"], g["source"]) for g in result["host_gpus"]] == [("0000:b8:00.0", "nvidia-smi")]


def test_every_stub_tree_has_a_source_and_a_test() -> None:
    table = (SYSFS_FIXTURES / "SOURCES.md").read_text()
    listed = set(re.findall(r"^\| ([\w.-]+\.yml) \|", table, re.MULTILINE))
    assert listed == set(machines())
    for name in machines():
        assert load(name)["source"].split(" ")[0] in table
