"""Every recorded public output in fixtures/nvidia-smi, with its correct parse (sources in SOURCES.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info as gi
from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia-smi"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# file, rc (nvidia-smi) or None (an NVML error text), failure class, reboot flagged, lost GPU bus ids
FAILURES: List[Tuple[str, Optional[int], str, bool, List[str]]] = [
    ("fail-gpu-lost-owod.txt", 15, "gpu_lost", True, ["0000:02:00.0"]),
    ("fail-gpu-lost-marian.txt", 15, "gpu_lost", True, ["0000:03:00.0"]),
    ("fail-handle-unknown-2080ti.txt", 15, "gpu_lost", True, ["0000:0B:00.0"]),
    ("fail-handle-unknown-nospace.txt", 15, "gpu_lost", True, ["0000:07:00.0"]),
    ("fail-handle-unknown-container.txt", 15, "gpu_lost", True, ["0000:09:00.0"]),
    ("fail-libnvidia-ml-container.txt", 127, "nvml_library_missing", False, []),
    ("fail-couldnt-communicate-wsl.txt", 9, "no_driver", False, []),
    ("fail-couldnt-communicate-old.txt", 9, "no_driver", False, []),
    ("fail-mismatch-580.txt", 18, "driver_library_mismatch", True, []),
    ("fail-mismatch-plain.txt", 18, "driver_library_mismatch", True, []),
    ("fail-nvml-unknown-container.txt", 255, "no_driver", False, []),
    ("fail-container-cli-driver-not-loaded.txt", 1, "no_driver", False, []),
    ("nvml-library-not-found.txt", None, "nvml_library_missing", False, []),
    ("nvml-driver-not-loaded.txt", None, "no_driver", False, []),
    ("nvml-gpu-is-lost.txt", None, "gpu_lost", True, []),
    # nvidia-smi exits 6 (NVML_ERROR_NOT_FOUND) when the driver is loaded but initialised no GPU.
    ("fail-no-devices-rtx5090.txt", 6, "no_devices", False, []),
]


@pytest.mark.parametrize(("name", "rc", "failure", "reboot", "lost"), FAILURES, ids=[f[0] for f in FAILURES])
def test_failure_corpus(name: str, rc: Optional[int], failure: str, reboot: bool, lost: List[str]) -> None:
    text = fixture(name)
    info = gi.classify_failure(rc or 0, text, "", tool="nvml" if rc is None else "nvidia-smi")
    assert info["failure"] == failure
    assert info["reboot_required"] is reboot
    assert info["driver_library_mismatch"] is (failure == "driver_library_mismatch")
    assert [g["pci_bus_id"] for g in info["lost_gpus"]] == lost
    if rc is None:
        # nvidia-smi never ran: its name and an exit status must not appear.
        assert "nvidia-smi" not in info["reason"] and "rc=" not in info["reason"]
    assert "failed (rc=" not in info["reason"]


@pytest.mark.parametrize("name", [f[0] for f in FAILURES if f[1] is None])
def test_nvml_only_failure_through_gather(name: str, tmp_path: Path) -> None:
    message = fixture(name).strip()

    class Error(Exception):
        pass

    class Nvml:
        NVMLError = Error

        @staticmethod
        def nvmlInit() -> None:
            raise Error(message)

    result = gi.gather(lambda cmd: (0, "", ""), None, Nvml(), str(tmp_path), proc_version=str(tmp_path / "none"))
    assert result["source"] == "nvml"
    assert "nvidia-smi failed" not in result["reason"]
    assert result["failure"] in ("nvml_library_missing", "no_driver", "gpu_lost")


def test_one_lost_gpu_keeps_the_healthy_ones(tmp_path: Path) -> None:
    out = fixture("composed-8gpu-one-lost.csv")
    banner = fixture("banner-450-host.txt")
    calls: List[List[str]] = []

    def run(cmd: List[str]) -> Tuple[int, str, str]:
        calls.append(cmd)
        return (15, banner, "") if len(cmd) == 1 else (15, out, "")

    result = gi.gather(run, "/usr/bin/nvidia-smi", None, str(tmp_path), proc_version=str(tmp_path / "none"))
    assert result["count"] == 7
    assert [g["index"] for g in result["gpus"]] == [0, 1, 2, 3, 5, 6, 7]
    assert result["failure"] == "gpu_lost"
    assert result["reboot_required"] is True
    assert result["lost_gpus"] == [
        {"pci_bus_id": "0000:87:00.0", "error": "GPU is lost. Reboot the system to recover this GPU"}
    ]
    assert result["driver_version"] == "535.183.01"
    assert "install" not in result["reason"].lower()


def test_gpu_requires_reset_is_no_mode_value() -> None:
    (gpu,) = gi.parse_csv(fixture("composed-h100-requires-reset.csv"))
    assert gpu["ecc_mode"] is None and gpu["persistence_mode"] is None and gpu["mig_mode"] is None
    assert gpu["reset_required"] is True
    (healthy,) = gi.parse_csv(fixture("h100-sxm-single.csv"))
    assert healthy["reset_required"] is False


def test_timeout_is_its_own_class() -> None:
    info = gi.classify_failure(gi.TIMEOUT_RC, "", "")
    assert info["failure"] == "timeout"
    assert "did not answer" in info["reason"]


def test_commands_run_under_timeout(tmp_path: Path) -> None:
    calls: List[List[str]] = []

    def run(cmd: List[str]) -> Tuple[int, str, str]:
        calls.append(cmd)
        return 0, fixture("h100-sxm-single.csv") if len(cmd) > 5 else fixture("banner-450-host.txt"), ""

    gi.gather(run, "/usr/bin/nvidia-smi", None, str(tmp_path), timeout_bin="/usr/bin/timeout")
    assert len(calls) == 2
    assert all(cmd[:4] == ["/usr/bin/timeout", "-k", "5", str(gi.COMMAND_TIMEOUT_S)] for cmd in calls)


# file, kernel module version, open kernel module, arch
PROC: List[Tuple[str, str, bool, str]] = [
    ("proc-version-384-proprietary.txt", "384.98", False, "x86_64"),
    ("proc-version-565-open.txt", "565.57.01", True, "x86_64"),
    ("proc-version-525-open-arch.txt", "525.60.11", True, "x86_64"),
    ("proc-version-jetson-orin.txt", "35.3.1", True, "aarch64"),
    ("proc-version-580-mismatch.txt", "580.173.02", False, "x86_64"),
    ("h200-580-recorded-proc-version.txt", "580.159.04", True, "x86_64"),
]


@pytest.mark.parametrize(("name", "version", "is_open", "arch"), PROC, ids=[p[0] for p in PROC])
def test_proc_version_corpus(name: str, version: str, is_open: bool, arch: str, tmp_path: Path) -> None:
    parsed = gi.parse_proc_version(fixture(name))
    assert parsed == {"kernel_module_version": version, "open_kernel_module": is_open, "arch": arch}
    assert gi.read_proc_version(str(FIXTURES / name)) == version
    assert gi.read_proc_version(str(tmp_path / "absent")) is None


def test_mismatch_pair_differs() -> None:
    kernel = gi.parse_proc_version(fixture("proc-version-580-mismatch.txt"))["kernel_module_version"]
    library = re.search(r"NVML library version: (\S+)", fixture("fail-mismatch-580.txt"))
    assert library is not None and kernel is not None and not kernel.startswith(library.group(1))


# file, nvidia-smi version, driver version, CUDA version
BANNERS: List[Tuple[str, Optional[str], Optional[str], Optional[str]]] = [
    ("banner-wsl-cuda-err.txt", "545.46", "546.80", None),
    ("banner-wsl-555.txt", "555.52.01", "555.99", "12.5"),
    ("banner-369-windows.txt", "369.30", "369.30", None),
    ("banner-450-host.txt", "450.66", "450.66", "11.0"),
    ("banner-517-windows-2gpu.txt", "517.48", "517.48", "11.7"),
    ("banner-535-quadro-2gpu.txt", "535.129.03", "535.129.03", "12.2"),
    ("banner-550-hgx-h100.txt", "550.54.15", "550.54.15", "12.4"),
    ("q-wsl-gtx1650ti.txt", None, "510.06", "11.6"),
    ("q-wsl-rtx3060ti.txt", None, "516.94", "11.7"),
    ("h200-580-recorded-q.txt", None, "580.159.04", "13.0"),
    ("h200-580-recorded-q-performance.txt", None, "580.159.04", "13.0"),
    ("banner-384-titanxp.txt", "384.66", "384.66", None),
    ("banner-435-kvm-passthrough.txt", "435.21", "435.21", "10.1"),
    ("banner-520-a100-mig.txt", "520.61.05", "520.61.05", "11.8"),
    ("banner-535-a100-mig-container.txt", "535.216.01", "535.216.01", "12.2"),
]


@pytest.mark.parametrize(("name", "smi", "driver", "cuda"), BANNERS, ids=[b[0] for b in BANNERS])
def test_banner_corpus(name: str, smi: Optional[str], driver: Optional[str], cuda: Optional[str]) -> None:
    assert gi.parse_banner(fixture(name)) == {"smi_version": smi, "driver_version": driver, "cuda_version": cuda}


# file, expected GPUs of nvidia-smi -q
QUERY: List[Tuple[str, List[Dict[str, Any]]]] = [
    (
        "q-wsl-gtx1650ti.txt",
        [
            {
                "pci_bus_id": "00000000:01:00.0",
                "pci_bus_id_short": "0000:01:00.0",
                "name": "NVIDIA GeForce GTX 1650 Ti with Max-Q Design",
                "persistence_mode": True,
                "mig_mode": None,
                "driver_model": "WDDM",
            }
        ],
    ),
    (
        "q-wsl-rtx3060ti.txt",
        [
            {
                "pci_bus_id": "00000000:01:00.0",
                "pci_bus_id_short": "0000:01:00.0",
                "name": "NVIDIA GeForce RTX 3060 Ti",
                "persistence_mode": True,
                "mig_mode": None,
                "driver_model": "WDDM",
            }
        ],
    ),
    (
        "h200-580-recorded-q.txt",
        [
            {
                "pci_bus_id": "00000000:00:06.0",
                "pci_bus_id_short": "0000:00:06.0",
                "name": "NVIDIA H200",
                "persistence_mode": True,
                "mig_mode": "disabled",
                "driver_model": None,
            }
        ],
    ),
]


@pytest.mark.parametrize(("name", "gpus"), QUERY, ids=[q[0] for q in QUERY])
def test_query_text_corpus(name: str, gpus: List[Dict[str, Any]]) -> None:
    assert gi.parse_query_text(fixture(name)) == gpus


def test_h100_nvl_csv_maps_to_its_matrix_row() -> None:
    (gpu,) = gi.parse_csv(fixture("csv-h100nvl-name-device-id.csv"), ["name", "pci.device_id"])
    assert gpu["name"] == "NVIDIA H100 NVL" and gpu["pci_device_id"] == "2321"
    by_id = _matrix.find_gpu(pci_device_id=gpu["pci_device_id"])
    assert by_id is not None and by_id is _matrix.find_gpu(name=gpu["name"])
    assert by_id["compute_capability"] == "9.0"


def test_every_fixture_has_a_source_and_a_test() -> None:
    table = fixture("SOURCES.md")
    listed = set(re.findall(r"^\| ([\w.-]+\.(?:txt|csv)) \|", table, re.MULTILINE))
    recorded = {p.name for p in FIXTURES.iterdir() if p.suffix in (".txt", ".csv")}
    first_release = {
        "a100-sxm4-8gpu.csv",
        "h100-sxm-single.csv",
        "h200-domain-0001.csv",
        "legacy-base-fields.csv",
        "rtx4090-not-supported.csv",
        "t4-na.csv",
    }
    assert recorded - first_release == listed
    tested = {f[0] for f in FAILURES} | {p[0] for p in PROC} | {b[0] for b in BANNERS} | {q[0] for q in QUERY}
    tested |= {"composed-8gpu-one-lost.csv", "composed-h100-requires-reset.csv", "csv-h100nvl-name-device-id.csv"}
    # The H200 recordings' CSV, -L and topo files are checked against each other in test_gpu_info.py.
    tested |= {f"h200-580-recorded{suffix}" for suffix in (".csv", "-header.csv", "-L.txt", "-topo.txt")}
    tested |= {entry[0] for entry in LISTS}
    assert listed <= tested


# file, per GPU of nvidia-smi -L: (index, name, number of MIG devices, their profiles)
LISTS: List[Tuple[str, List[Tuple[int, str, int, List[str]]]]] = [
    ("L-mig-a100-7x1g.txt", [(0, "NVIDIA A100-SXM4-80GB", 7, ["1g.10gb"])]),
    (
        "L-mig-a100-4gpu-one-split.txt",
        [
            (0, "NVIDIA A100-SXM4-80GB", 4, ["1g.20gb"]),
            (1, "NVIDIA A100-SXM4-80GB", 0, []),
            (2, "NVIDIA A100-SXM4-80GB", 0, []),
            (3, "NVIDIA A100-SXM4-80GB", 0, []),
        ],
    ),
    ("L-mig-a100-pcie-2x3g.txt", [(0, "NVIDIA A100 80GB PCIe", 2, ["3g.40gb"])]),
    ("h200-580-recorded-L.txt", [(0, "NVIDIA H200", 0, [])]),
]


@pytest.mark.parametrize(("name", "gpus"), LISTS, ids=[entry[0] for entry in LISTS])
def test_list_corpus(name: str, gpus: List[Tuple[int, str, int, List[str]]]) -> None:
    parsed = gi.parse_list(fixture(name))
    assert [
        (g["index"], g["name"], len(g["mig_devices"]), sorted({m["profile"] for m in g["mig_devices"]})) for g in parsed
    ] == gpus
    assert all(g["uuid"].startswith("GPU-") for g in parsed)
    assert all(m["uuid"].startswith("MIG-") for g in parsed for m in g["mig_devices"])
    # -L output is no CSV: the CSV parser takes no GPU from it.
    assert gi.parse_csv(fixture(name)) == []


def test_mig_gpus_get_their_mig_devices(tmp_path: Path) -> None:
    """gpu_info on a host with MIG on GPU 0 only: nvidia-smi -L is asked, GPU 0 carries its four MIG devices."""
    listing = fixture("L-mig-a100-4gpu-one-split.txt")
    uuids = [g["uuid"] for g in gi.parse_list(listing)]
    rows = [
        f"{i}, {u}, NVIDIA A100-SXM4-80GB, 00000000:{bus}:00.0, 0x20B210DE, 8.0, 81920, 535.216.01, Enabled, Enabled, "
        f"{'Enabled' if i == 0 else 'Disabled'}, 1410, 1593, 4, 4, 16, 16"
        for i, (u, bus) in enumerate(zip(uuids, ("07", "0F", "47", "4E")))
    ]
    calls: List[List[str]] = []

    def run(cmd: List[str]) -> Tuple[int, str, str]:
        calls.append(cmd)
        if cmd[-1] == "-L":
            return 0, listing, ""
        return 0, ("\n".join(rows) if len(cmd) > 1 else fixture("banner-535-a100-mig-container.txt")), ""

    result = gi.gather(run, "/usr/bin/nvidia-smi", None, str(tmp_path), proc_version=str(tmp_path / "none"))
    assert [len(g.get("mig_devices", [])) for g in result["gpus"]] == [4, 0, 0, 0]
    assert "mig_devices" not in result["gpus"][1]
    assert calls[-1][-1] == "-L"
    # Without MIG nobody asks for -L.
    calls.clear()
    gi.gather(lambda cmd: (calls.append(cmd), (0, rows[1], ""))[1], "/usr/bin/nvidia-smi", None, str(tmp_path))
    assert not any(cmd[-1] == "-L" for cmd in calls)
