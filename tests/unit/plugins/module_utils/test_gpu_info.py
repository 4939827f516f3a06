"""Parsing of nvidia-smi CSV output, NVML results, failure classification and the sysfs scan."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info as gi

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia-smi"
BANNER = """Mon Nov 30 08:53:47 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
"""


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_single_h100_every_field() -> None:
    (gpu,) = gi.parse_csv(fixture("h100-sxm-single.csv"))
    assert gpu == {
        "index": 0,
        "uuid": "GPU-6f1c3b9e-2a4d-8e51-93b7-0c4e2d1a7f55",
        "name": "NVIDIA H100 80GB HBM3",
        "pci_bus_id": "00000000:18:00.0",
        "pci_bus_id_short": "0000:18:00.0",
        "pci_device_id": "2330",
        "compute_capability": "9.0",
        "memory_total_mib": 81559,
        "driver_version": "550.54.15",
        "ecc_mode": "enabled",
        "persistence_mode": True,
        "mig_mode": "disabled",
        "clocks_max_sm_mhz": 1980,
        "clocks_max_mem_mhz": 2619,
        "pcie_gen_current": 5,
        "pcie_gen_max": 5,
        "pcie_width_current": 16,
        "pcie_width_max": 16,
        "reset_required": False,
    }


def test_eight_gpus_keep_order_and_per_gpu_values() -> None:
    gpus = gi.parse_csv(fixture("a100-sxm4-8gpu.csv"))
    assert [g["index"] for g in gpus] == list(range(8))
    assert {g["pci_device_id"] for g in gpus} == {"20b2"}
    assert [g["pci_bus_id_short"] for g in gpus][:3] == ["0000:07:00.0", "0000:0f:00.0", "0000:47:00.0"]
    assert gpus[4]["pcie_gen_current"] == 1 and gpus[4]["pcie_gen_max"] == 4
    assert gpus[6]["mig_mode"] == "enabled"
    assert gpus[7]["pcie_width_current"] == 8


def test_na_becomes_none() -> None:
    (gpu,) = gi.parse_csv(fixture("t4-na.csv"))
    assert gpu["mig_mode"] is None
    assert gpu["persistence_mode"] is False
    assert gpu["pci_device_id"] == "1eb8"
    assert gpu["compute_capability"] == "7.5"


def test_not_supported_becomes_none() -> None:
    first, second = gi.parse_csv(fixture("rtx4090-not-supported.csv"))
    assert first["ecc_mode"] is None and first["clocks_max_sm_mhz"] == 3120
    assert second["clocks_max_sm_mhz"] is None
    assert second["clocks_max_mem_mhz"] is None
    assert second["pcie_gen_max"] is None
    assert second["pcie_width_max"] == 16


def test_eight_digit_domain_other_than_zero() -> None:
    gpus = gi.parse_csv(fixture("h200-domain-0001.csv"))
    assert [g["pci_bus_id"] for g in gpus] == ["00000001:1B:00.0", "00000001:43:00.0"]
    assert [g["pci_bus_id_short"] for g in gpus] == ["0001:1b:00.0", "0001:43:00.0"]
    assert gpus[0]["memory_total_mib"] == 143771


def test_legacy_field_list() -> None:
    (gpu,) = gi.parse_csv(fixture("legacy-base-fields.csv"), gi.BASE_QUERY_FIELDS)
    assert gpu["compute_capability"] is None
    assert gpu["mig_mode"] is None
    assert gpu["pci_device_id"] == "1db1"
    assert gpu["memory_total_mib"] == 16160


def test_short_lines_and_header_are_ignored() -> None:
    text = ", ".join(gi.QUERY_FIELDS) + "\n\n0, GPU-x, broken\n" + fixture("h100-sxm-single.csv")
    assert len(gi.parse_csv(text)) == 1


def test_name_with_comma_is_rejoined() -> None:
    line = fixture("h100-sxm-single.csv").replace("NVIDIA H100 80GB HBM3", "Odd, Name")
    (gpu,) = gi.parse_csv(line)
    assert gpu["name"] == "Odd, Name"
    assert gpu["pci_device_id"] == "2330"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0x233510DE", "2335"),
        ("0x20B210de", "20b2"),
        (0x233010DE, "2330"),
        ("10de:2331", "2331"),
        ("10de2684", "2684"),
        ("2335", "2335"),
        ("[N/A]", None),
        (None, None),
    ],
)
def test_norm_device_id(value: Any, expected: Any) -> None:
    assert gi.norm_device_id(value) == expected


def test_cuda_versions() -> None:
    assert gi.parse_cuda_version(BANNER) == "12.4"
    assert gi.parse_cuda_version("no banner") is None
    assert gi.cuda_from_int(12040) == "12.4"
    assert gi.cuda_from_int(11080) == "11.8"


def test_failed_to_initialize_nvml_is_no_driver() -> None:
    info = gi.classify_failure(255, "Failed to initialize NVML: Unknown Error\n", "")
    assert info["driver_library_mismatch"] is False
    assert "No NVIDIA driver" in info["reason"]
    assert "rc=255" in info["reason"]


def test_driver_library_mismatch_needs_reboot() -> None:
    out = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.163\n"
    info = gi.classify_failure(18, out, "")
    assert info["driver_library_mismatch"] is True
    assert info["reboot_required"] is True
    assert "reboot" in info["reason"]


class FakeRun:
    def __init__(self, answers: List[Tuple[int, str, str]]) -> None:
        self.answers = list(answers)
        self.calls: List[List[str]] = []

    def __call__(self, cmd: List[str]) -> Tuple[int, str, str]:
        self.calls.append(cmd)
        return self.answers.pop(0)


def test_gather_without_nvidia_smi_or_nvml(tmp_path: Path) -> None:
    result = gi.gather(FakeRun([]), None, None, str(tmp_path))
    assert result["gpus"] == [] and result["count"] == 0
    assert "not installed" in result["reason"]
    assert result["pci_nvidia_present"] is False


def test_gather_container_userspace_without_driver(tmp_path: Path) -> None:
    run = FakeRun([(255, "Failed to initialize NVML: Unknown Error\n", "")])
    result = gi.gather(run, "/usr/bin/nvidia-smi", None, str(tmp_path))
    assert result["gpus"] == []
    assert result["source"] == "nvidia-smi"
    assert "Failed to initialize NVML" in result["reason"]
    assert result["reboot_required"] is False


def test_gather_retries_with_base_fields(tmp_path: Path) -> None:
    run = FakeRun(
        [
            (2, 'Field "compute_cap" is not a valid field to query.\n', ""),
            (0, fixture("legacy-base-fields.csv"), ""),
            (0, BANNER, ""),
        ]
    )
    result = gi.gather(run, "/usr/bin/nvidia-smi", None, str(tmp_path))
    assert result["count"] == 1
    assert result["driver_version"] == "470.256.02"
    assert result["cuda_driver_version"] == "12.4"
    assert "compute_cap" not in run.calls[1][1]


def test_gather_mismatch(tmp_path: Path) -> None:
    run = FakeRun([(18, "Failed to initialize NVML: Driver/library version mismatch\n", "")])
    result = gi.gather(run, "/usr/bin/nvidia-smi", None, str(tmp_path))
    assert result["driver_library_mismatch"] is True and result["gpus"] == []


def make_sysfs(root: Path, entries: Dict[str, Tuple[str, str, str]]) -> None:
    for address, (vendor, device, pci_class) in entries.items():
        node = root / address
        node.mkdir(parents=True)
        (node / "vendor").write_text(vendor + "\n")
        (node / "device").write_text(device + "\n")
        (node / "class").write_text(pci_class + "\n")


def test_sysfs_lists_only_nvidia_gpus(tmp_path: Path) -> None:
    make_sysfs(
        tmp_path,
        {
            "0000:18:00.0": ("0x10de", "0x2330", "0x030200"),
            "0000:19:00.0": ("0x10de", "0x22a3", "0x068000"),
            "0000:00:02.0": ("0x8086", "0x3e92", "0x030000"),
        },
    )
    found = gi.scan_sysfs(str(tmp_path))
    assert found == [{"address": "0000:18:00.0", "device_id": "2330", "class": "030200", "driver": None}]
    result = gi.gather(FakeRun([]), None, None, str(tmp_path))
    assert result["pci_nvidia_present"] is True
    assert result["gpus"] == []


class FakeNVMLError(Exception):
    pass


def fake_pynvml(fail_init: bool = False) -> Any:
    handle = object()

    def not_supported(*_args: Any) -> Any:
        raise FakeNVMLError("Not Supported")

    def init() -> None:
        if fail_init:
            raise FakeNVMLError("RM has detected an NVML/RM version mismatch.")

    return SimpleNamespace(
        NVMLError=FakeNVMLError,
        NVML_CLOCK_SM=1,
        NVML_CLOCK_MEM=2,
        nvmlInit=init,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: b"570.124.06",
        nvmlSystemGetCudaDriverVersion_v2=lambda: 12080,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: handle,
        nvmlDeviceGetName=lambda h: "NVIDIA H200",
        nvmlDeviceGetUUID=lambda h: "GPU-1",
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=b"00000000:1B:00.0", pciDeviceId=0x233510DE),
        nvmlDeviceGetCudaComputeCapability=lambda h: (9, 0),
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=143771 * 1048576),
        nvmlDeviceGetEccMode=lambda h: (1, 1),
        nvmlDeviceGetMigMode=not_supported,
        nvmlDeviceGetPersistenceMode=lambda h: 1,
        nvmlDeviceGetMaxClockInfo=lambda h, kind: 1980 if kind == 1 else 3201,
        nvmlDeviceGetCurrPcieLinkGeneration=lambda h: 1,
        nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16,
        nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16,
    )


def test_nvml_path(tmp_path: Path) -> None:
    result = gi.gather(FakeRun([]), None, fake_pynvml(), str(tmp_path))
    assert result["source"] == "nvml"
    assert result["cuda_driver_version"] == "12.8"
    (gpu,) = result["gpus"]
    assert gpu["pci_device_id"] == "2335"
    assert gpu["pci_bus_id_short"] == "0000:1b:00.0"
    assert gpu["mig_mode"] is None
    assert gpu["ecc_mode"] == "enabled"
    assert gpu["memory_total_mib"] == 143771
    assert gpu["pcie_gen_max"] == 5


def test_nvml_mismatch_falls_back_to_nvidia_smi(tmp_path: Path) -> None:
    run = FakeRun([(18, "Failed to initialize NVML: Driver/library version mismatch\n", "")])
    result = gi.gather(run, "/usr/bin/nvidia-smi", fake_pynvml(fail_init=True), str(tmp_path))
    assert result["reboot_required"] is True
    assert len(run.calls) == 1


def test_nvml_mismatch_without_nvidia_smi(tmp_path: Path) -> None:
    result = gi.gather(FakeRun([]), None, fake_pynvml(fail_init=True), str(tmp_path))
    assert result["driver_library_mismatch"] is True
    assert result["failure"] == "driver_library_mismatch"
    assert "nvidia-smi" not in result["reason"]


RECORDED_H200 = {
    "index": 0,
    "name": "NVIDIA H200",
    "pci_bus_id": "00000000:00:06.0",
    "pci_bus_id_short": "0000:00:06.0",
    "pci_device_id": "2335",
    "compute_capability": "9.0",
    "memory_total_mib": 143771,
    "driver_version": "580.159.04",
    "ecc_mode": "enabled",
    "persistence_mode": True,
    "mig_mode": "disabled",
    "clocks_max_sm_mhz": 1980,
    "clocks_max_mem_mhz": 3201,
    "pcie_gen_max": 5,
    "pcie_width_max": 16,
}


@pytest.mark.parametrize("name", ["h200-580-recorded.csv", "h200-580-recorded-header.csv"])
def test_recorded_h200_csv_with_and_without_header_and_units(name: str) -> None:
    (gpu,) = gi.parse_csv(fixture(name))
    assert {k: gpu[k] for k in RECORDED_H200} == RECORDED_H200


def test_recorded_h200_q_and_proc_agree_with_the_csv() -> None:
    (gpu,) = gi.parse_csv(fixture("h200-580-recorded.csv"))
    q = fixture("h200-580-recorded-q.txt")
    lines = {tuple(part.strip() for part in line.split(" : ", 1)) for line in q.splitlines() if " : " in line}
    assert ("Driver Version", gpu["driver_version"]) in lines
    assert ("Product Name", gpu["name"]) in lines
    assert f"GPU {gpu['pci_bus_id']}" in q
    assert gi.parse_cuda_version(q) == "13.0"
    assert gpu["driver_version"] in fixture("h200-580-recorded-proc-version.txt")
    assert gpu["uuid"] in fixture("h200-580-recorded-L.txt")


def test_recorded_h200_nvml_and_nvidia_smi_give_the_same_facts() -> None:
    base = FIXTURES.parent / "gpu_info"
    nvml = json.loads((base / "h200-580-nvml.json").read_text())
    smi = json.loads((base / "h200-580-nvidia-smi.json").read_text())
    assert (nvml["source"], smi["source"]) == ("nvml", "nvidia-smi")
    assert {k: v for k, v in nvml.items() if k != "source"} == {k: v for k, v in smi.items() if k != "source"}
    assert nvml["count"] == 1 and nvml["cuda_driver_version"] == "13.0" and not nvml["reboot_required"]
    assert {k: nvml["gpus"][0][k] for k in RECORDED_H200} == RECORDED_H200
