# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts about NVIDIA GPUs and their driver, from NVML or from nvidia-smi's CSV output.

Parsing is kept in pure functions so it can be tested against recorded outputs.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

NVIDIA_VENDOR_ID = "10de"

# Order matters: parse_csv() maps columns by position.
QUERY_FIELDS: List[str] = [
    "index",
    "uuid",
    "name",
    "pci.bus_id",
    "pci.device_id",
    "compute_cap",
    "memory.total",
    "driver_version",
    "ecc.mode.current",
    "persistence_mode",
    "mig.mode.current",
    "clocks.max.sm",
    "clocks.max.memory",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
]
# Fields every nvidia-smi since the 4xx branches knows; used when an old one rejects the full list.
BASE_QUERY_FIELDS: List[str] = [
    "index",
    "uuid",
    "name",
    "pci.bus_id",
    "pci.device_id",
    "memory.total",
    "driver_version",
    "ecc.mode.current",
    "persistence_mode",
    "clocks.max.sm",
    "clocks.max.memory",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
]

_MISSING = {"", "[n/a]", "[not supported]", "n/a", "not supported", "[unknown error]", "[insufficient permissions]"}
MISMATCH_MARKERS = ("driver/library version mismatch", "nvml/rm version mismatch")
LOST_MARKERS = ("gpu is lost", "fallen off the bus", "unable to determine the device handle")
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")


def clean(value: Optional[str]) -> Optional[str]:
    """Return a CSV cell stripped, or None for the placeholders nvidia-smi prints for unknown values."""
    if value is None:
        return None
    text = value.strip()
    if text.lower() in _MISSING:
        return None
    return text


def to_int(value: Optional[str]) -> Optional[int]:
    text = clean(value)
    if text is None:
        return None
    match = re.match(r"^(\d+)", text)
    return int(match.group(1)) if match else None


def to_mode(value: Optional[str]) -> Optional[str]:
    text = clean(value)
    return text.lower() if text is not None else None


def to_bool(value: Optional[str]) -> Optional[bool]:
    text = to_mode(value)
    if text in ("enabled", "on", "1", "true"):
        return True
    if text in ("disabled", "off", "0", "false"):
        return False
    return None


def norm_device_id(value: Any) -> Optional[str]:
    """Return the 4-hex PCI device id from '0x233510DE', 0x233510DE (int), '10de:2335' or '2335'."""
    if value is None:
        return None
    if isinstance(value, int):
        return "%04x" % ((value >> 16) & 0xFFFF) if value > 0xFFFF else f"{value:04x}"
    text = clean(str(value))
    if text is None:
        return None
    text = text.lower()
    if text.startswith("0x"):
        text = text[2:]
    if ":" in text:
        return text.rpartition(":")[2][-4:]
    if len(text) == 8:
        return text[4:] if text.startswith(NVIDIA_VENDOR_ID) else text[:4]
    return text[-4:].rjust(4, "0") if text else None


def short_bus_id(bus_id: Optional[str]) -> Optional[str]:
    """Return a PCI address with the 4-digit domain sysfs and lspci use, lower-case."""
    text = clean(bus_id)
    if text is None:
        return None
    text = text.lower()
    match = re.match(r"^([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$", text)
    if not match:
        return text
    domain = int(match.group(1), 16)
    return f"{domain:04x}:{match.group(2)}:{match.group(3)}.{match.group(4)}"


def split_csv_line(line: str) -> List[str]:
    """Split one nvidia-smi CSV line; fields are joined by ', ' and are never quoted."""
    return [cell.strip() for cell in line.split(",")]


def gpu_from_cells(fields: List[str], cells: List[str]) -> Dict[str, Any]:
    """Build one normalised GPU dict from the CSV cells of one line."""
    raw = dict(zip(fields, cells))
    if len(cells) > len(fields):
        # A GPU name containing a comma: fold the surplus back into the name column.
        extra = len(cells) - len(fields)
        name_pos = fields.index("name")
        cells = [*cells[:name_pos], ", ".join(cells[name_pos : name_pos + extra + 1]), *cells[name_pos + extra + 1 :]]
        raw = dict(zip(fields, cells))
    bus_id = clean(raw.get("pci.bus_id"))
    memory = to_int(raw.get("memory.total"))
    return {
        "index": to_int(raw.get("index")),
        "uuid": clean(raw.get("uuid")),
        "name": clean(raw.get("name")),
        "pci_bus_id": bus_id,
        "pci_bus_id_short": short_bus_id(bus_id),
        "pci_device_id": norm_device_id(raw.get("pci.device_id")),
        "compute_capability": clean(raw.get("compute_cap")),
        "memory_total_mib": memory,
        "driver_version": clean(raw.get("driver_version")),
        "ecc_mode": to_mode(raw.get("ecc.mode.current")),
        "persistence_mode": to_bool(raw.get("persistence_mode")),
        "mig_mode": to_mode(raw.get("mig.mode.current")),
        "clocks_max_sm_mhz": to_int(raw.get("clocks.max.sm")),
        "clocks_max_mem_mhz": to_int(raw.get("clocks.max.memory")),
        "pcie_gen_current": to_int(raw.get("pcie.link.gen.current")),
        "pcie_gen_max": to_int(raw.get("pcie.link.gen.max")),
        "pcie_width_current": to_int(raw.get("pcie.link.width.current")),
        "pcie_width_max": to_int(raw.get("pcie.link.width.max")),
    }


def parse_csv(text: str, fields: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` output."""
    wanted = list(fields or QUERY_FIELDS)
    gpus: List[Dict[str, Any]] = []
    for line in text.splitlines():
        cells = split_csv_line(line)
        if len(cells) < len(wanted) or cells[0].lower() == wanted[0]:
            continue
        gpus.append(gpu_from_cells(wanted, cells))
    for position, gpu in enumerate(gpus):
        if gpu["index"] is None:
            gpu["index"] = position
    return gpus


def parse_cuda_version(text: str) -> Optional[str]:
    """Return the 'CUDA Version: X.Y' of nvidia-smi's banner, if printed."""
    match = re.search(r"CUDA Version\s*:\s*([0-9]+\.[0-9]+)", text or "")
    return match.group(1) if match else None


def cuda_from_int(value: Optional[int]) -> Optional[str]:
    """12040 -> '12.4' (NVML's integer encoding)."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def classify_failure(rc: int, out: str, err: str) -> Dict[str, Any]:
    """Turn a failed nvidia-smi/NVML call into the reason and flags gpu_info returns."""
    text = ("{}\n{}".format(out or "", err or "")).strip()
    lower = text.lower()
    mismatch = any(marker in lower for marker in MISMATCH_MARKERS)
    first = text.splitlines()[0].strip() if text else "no output"
    if mismatch:
        reason = (
            f"The NVIDIA kernel module and user-space libraries differ ({first}): the driver was upgraded "
            "without reloading the module; reboot the host."
        )
    elif any(marker in lower for marker in LOST_MARKERS):
        reason = (
            f"A GPU is lost ({first}): it fell off the bus or stopped answering the driver; reboot the host, "
            "and reseat or replace the GPU if it happens again."
        )
    elif "failed to initialize nvml" in lower or "couldn't communicate with the nvidia driver" in lower:
        reason = f"No NVIDIA driver is loaded or reachable (nvidia-smi rc={rc}: {first})."
    elif "no devices were found" in lower:
        reason = f"The NVIDIA driver is loaded but reports no devices ({first})."
    else:
        reason = f"nvidia-smi failed (rc={rc}: {first})."
    return {"reason": reason, "driver_library_mismatch": mismatch, "reboot_required": mismatch}


def scan_sysfs(root: str = "/sys/bus/pci/devices") -> List[Dict[str, Any]]:
    """List NVIDIA display/3D controllers visible in sysfs (works without any driver)."""
    found: List[Dict[str, Any]] = []
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return found

    def read(path: str) -> str:
        try:
            with open(path) as handle:
                return handle.read().strip().lower()
        except OSError:
            return ""

    for entry in entries:
        base = os.path.join(root, entry)
        vendor = read(os.path.join(base, "vendor"))
        if vendor.replace("0x", "") != NVIDIA_VENDOR_ID:
            continue
        pci_class = read(os.path.join(base, "class")).replace("0x", "")
        if not pci_class.startswith("03"):
            continue
        driver_link = os.path.join(base, "driver")
        driver = os.path.basename(os.path.realpath(driver_link)) if os.path.islink(driver_link) else None
        found.append(
            {
                "address": entry.lower(),
                "device_id": read(os.path.join(base, "device")).replace("0x", ""),
                "class": pci_class,
                "driver": driver,
            }
        )
    return found


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def query_nvml(pynvml: Any) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """Read every GPU through an imported pynvml module; raises pynvml.NVMLError on failure."""
    pynvml.nvmlInit()
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda: Optional[str] = None
        try:
            cuda = cuda_from_int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        except (pynvml.NVMLError, AttributeError):
            cuda = None
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            gpus.append(_nvml_device(pynvml, handle, index, driver))
        return gpus, {"driver_version": driver, "cuda_driver_version": cuda}
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()


def _nvml_device(pynvml: Any, handle: Any, index: int, driver: str) -> Dict[str, Any]:
    def get(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except (pynvml.NVMLError, AttributeError, TypeError):
            return None

    pci = get(lambda: pynvml.nvmlDeviceGetPciInfo(handle))
    bus_id = _text(pci.busId) if pci is not None else None
    cc = get(lambda: pynvml.nvmlDeviceGetCudaComputeCapability(handle))
    memory = get(lambda: pynvml.nvmlDeviceGetMemoryInfo(handle))
    ecc = get(lambda: pynvml.nvmlDeviceGetEccMode(handle))
    mig = get(lambda: pynvml.nvmlDeviceGetMigMode(handle))
    persistence = get(lambda: pynvml.nvmlDeviceGetPersistenceMode(handle))

    def mode(pair: Any) -> Optional[str]:
        if pair is None:
            return None
        current = pair[0] if isinstance(pair, (list, tuple)) else pair
        return "enabled" if current else "disabled"

    return {
        "index": index,
        "uuid": get(lambda: _text(pynvml.nvmlDeviceGetUUID(handle))),
        "name": get(lambda: _text(pynvml.nvmlDeviceGetName(handle))),
        "pci_bus_id": bus_id,
        "pci_bus_id_short": short_bus_id(bus_id),
        "pci_device_id": norm_device_id(int(pci.pciDeviceId)) if pci is not None else None,
        "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
        "memory_total_mib": int(memory.total // (1024 * 1024)) if memory is not None else None,
        "driver_version": driver,
        "ecc_mode": mode(ecc),
        "persistence_mode": bool(persistence) if persistence is not None else None,
        "mig_mode": mode(mig),
        "clocks_max_sm_mhz": get(lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)),
        "clocks_max_mem_mhz": get(lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
        "pcie_gen_current": get(lambda: pynvml.nvmlDeviceGetCurrPcieLinkGeneration(handle)),
        "pcie_gen_max": get(lambda: pynvml.nvmlDeviceGetMaxPcieLinkGeneration(handle)),
        "pcie_width_current": get(lambda: pynvml.nvmlDeviceGetCurrPcieLinkWidth(handle)),
        "pcie_width_max": get(lambda: pynvml.nvmlDeviceGetMaxPcieLinkWidth(handle)),
    }


def empty_result(reason: str, source: str = "none") -> Dict[str, Any]:
    return {
        "gpus": [],
        "count": 0,
        "driver_version": None,
        "cuda_driver_version": None,
        "source": source,
        "reason": reason,
        "driver_library_mismatch": False,
        "reboot_required": False,
    }


def in_container(markers: Tuple[str, ...] = CONTAINER_MARKERS) -> bool:
    return any(os.path.exists(path) for path in markers)


def explain_missing(result: Dict[str, Any], container: bool, device_node: bool) -> str:
    """The reason gpu_info gives when the driver lists no GPU, with what the PCI bus and /dev show.

    The container hint is only given where NVIDIA user space or GPUs on the PCI bus suggest GPUs were meant.
    """
    reason = result.get("reason") or "The driver lists no GPU."
    pci = result.get("pci_devices") or []
    driver_side = result.get("source") != "none" or bool(pci)
    if container and not device_node and driver_side:
        reason += (
            " No NVIDIA device is visible in this container (/dev/nvidiactl is missing): start it with the GPUs"
            " passed through (--gpus, device_requests or CDI)."
        )
    if pci:
        bound = sorted({dev.get("driver") or "no driver" for dev in pci})
        reason += " {} NVIDIA GPU(s) on the PCI bus, bound to: {}.".format(len(pci), ", ".join(bound))
    return reason


def gather(
    run: Callable[[List[str]], Tuple[int, str, str]],
    nvidia_smi: Optional[str],
    pynvml: Any = None,
    sysfs_root: str = "/sys/bus/pci/devices",
    *,
    container: Optional[bool] = None,
    device_node: str = "/dev/nvidiactl",
) -> Dict[str, Any]:
    """Collect GPU facts: NVML when given, else nvidia-smi through `run`; never raises for a missing driver."""
    pci = scan_sysfs(sysfs_root)
    result = _gather(run, nvidia_smi, pynvml)
    result["pci_devices"] = pci
    result["pci_nvidia_present"] = bool(pci)
    result["count"] = len(result["gpus"])
    if not result["gpus"]:
        container = in_container() if container is None else container
        result["reason"] = explain_missing(result, container, os.path.exists(device_node))
    return result


def _gather(
    run: Callable[[List[str]], Tuple[int, str, str]],
    nvidia_smi: Optional[str],
    pynvml: Any,
) -> Dict[str, Any]:
    nvml_error: Optional[str] = None
    if pynvml is not None:
        try:
            gpus, system = query_nvml(pynvml)
        except Exception as exc:  # pynvml raises NVMLError subclasses, or OSError when libnvidia-ml is absent
            nvml_error = str(exc) or exc.__class__.__name__
        else:
            result = empty_result("" if gpus else "NVML reports no GPUs.", "nvml")
            result.update(system)
            result["gpus"] = gpus
            return result
    if nvidia_smi is None:
        if nvml_error is not None:
            info = classify_failure(255, nvml_error, "")
            result = empty_result("NVML failed: {}".format(info["reason"]), "nvml")
            result["driver_library_mismatch"] = info["driver_library_mismatch"]
            result["reboot_required"] = info["reboot_required"]
            return result
        return empty_result("nvidia-smi is not installed and nvidia-ml-py is not importable: no NVIDIA driver here.")
    fields = QUERY_FIELDS
    rc, out, err = run([nvidia_smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
    if rc != 0 and "not a valid field" in (f"{out} {err}").lower():
        fields = BASE_QUERY_FIELDS
        rc, out, err = run([nvidia_smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
    if rc != 0:
        info = classify_failure(rc, out, err)
        result = empty_result(info["reason"], "nvidia-smi")
        result["driver_library_mismatch"] = info["driver_library_mismatch"]
        result["reboot_required"] = info["reboot_required"]
        return result
    gpus = parse_csv(out, fields)
    result = empty_result("" if gpus else "nvidia-smi lists no GPUs.", "nvidia-smi")
    result["gpus"] = gpus
    result["driver_version"] = next((g["driver_version"] for g in gpus if g["driver_version"]), None)
    brc, bout, _berr = run([nvidia_smi])
    if brc == 0:
        result["cuda_driver_version"] = parse_cuda_version(bout)
    return result
