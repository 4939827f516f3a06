# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts about NVIDIA GPUs and their driver, from NVML or from nvidia-smi's CSV output.

Parsing is kept in pure functions so it can be tested against recorded outputs.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

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

# Seconds any wrapped command may run; nvidia-smi hangs on a GPU in a bad state (its rc is then 124).
COMMAND_TIMEOUT_S = 60
TIMEOUT_RC = 124
PROC_VERSION = "/proc/driver/nvidia/version"

_MISSING = {"", "[n/a]", "[not supported]", "n/a", "not supported", "[unknown error]", "[insufficient permissions]"}
MISMATCH_MARKERS = ("driver/library version mismatch", "nvml/rm version mismatch")
LOST_MARKERS = ("gpu is lost", "fallen off the bus", "unable to determine the device handle")
# The collection's one definition of "in a container": marker files (Docker, Podman) and the virtualization_type
# values Ansible's facts give a container guest. gpu_info reads the markers itself; the roles through
# query('gpulab.dlstack.container_markers') and the gpulab.dlstack.in_container filter.
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")
CONTAINER_TYPES = ("docker", "podman", "container", "containerd", "lxc", "systemd-nspawn", "openvz")


def clean(value: Optional[str]) -> Optional[str]:
    """Return a CSV cell stripped, or None for the placeholders nvidia-smi prints for unknown values."""
    if value is None:
        return None
    text = value.strip()
    if text.lower() in _MISSING:
        return None
    if text.startswith("[") and text.endswith("]"):
        # nvidia-smi prints an NVML error in brackets where a value is missing: [GPU requires reset], [Unknown Error].
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
        "reset_required": any("requires reset" in cell.lower() for cell in cells),
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
    """Return the 'CUDA Version: X.Y' of nvidia-smi's banner or -q output, if printed (WSL may print ERR!)."""
    match = re.search(r"CUDA Version\s*:\s*([0-9]+\.[0-9]+)", text or "")
    return match.group(1) if match else None


def parse_banner(text: str) -> Dict[str, Optional[str]]:
    """nvidia-smi's own version, the driver version and the CUDA version from its table banner or -q output.

    Under WSL the Windows driver (Driver Version) differs from the Linux nvidia-smi (NVIDIA-SMI).
    """
    smi = re.search(r"NVIDIA-SMI\s+([0-9][0-9.]+)", text or "")
    driver = re.search(r"Driver Version\s*:\s*([0-9][0-9.]+)", text or "")
    return {
        "smi_version": smi.group(1) if smi else None,
        "driver_version": driver.group(1) if driver else None,
        "cuda_version": parse_cuda_version(text),
    }


def parse_query_text(text: str) -> List[Dict[str, Any]]:
    """The GPUs of `nvidia-smi -q`: bus id, name, MIG mode, persistence mode and driver model per GPU."""
    gpus: List[Dict[str, Any]] = []
    section = ""
    for line in (text or "").splitlines():
        header = re.match(r"^GPU\s+([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$", line.strip())
        if header and not line.startswith(" "):
            bus_id = header.group(1)
            gpus.append({"pci_bus_id": bus_id, "pci_bus_id_short": short_bus_id(bus_id)})
            section = ""
            continue
        if not gpus or ":" not in line:
            if line.strip():
                section = line.strip()
            continue
        key, _sep, value = (part.strip() for part in line.partition(":"))
        gpu = gpus[-1]
        if key == "Product Name":
            gpu["name"] = clean(value)
        elif key == "Persistence Mode":
            gpu["persistence_mode"] = to_bool(value)
        elif key == "Current" and section == "MIG Mode":
            gpu["mig_mode"] = to_mode(value)
        elif key == "Current" and section == "Driver Model":
            gpu["driver_model"] = clean(value)
        elif key == "Width" and section == "Max":
            gpu.setdefault("pcie_width_max", to_int(value.rstrip("x")))
        if not value and key:
            section = key
    return gpus


_LIST_GPU = re.compile(r"^GPU\s+(\d+):\s+(.+?)\s+\(UUID:\s*(GPU-[0-9A-Fa-f-]+)\)\s*$")
_LIST_MIG = re.compile(r"^\s+MIG\s+(\S+)\s+Device\s+(\d+):\s+\(UUID:\s*(MIG-[^)\s]+)\)\s*$")


def parse_list(text: str) -> List[Dict[str, Any]]:
    """The GPUs of `nvidia-smi -L`, each with the MIG devices listed under it (profile, index, UUID)."""
    gpus: List[Dict[str, Any]] = []
    for line in (text or "").splitlines():
        gpu = _LIST_GPU.match(line)
        if gpu:
            gpus.append({"index": int(gpu.group(1)), "name": gpu.group(2), "uuid": gpu.group(3), "mig_devices": []})
            continue
        mig = _LIST_MIG.match(line)
        if mig and gpus:
            gpus[-1]["mig_devices"].append({"profile": mig.group(1), "index": int(mig.group(2)), "uuid": mig.group(3)})
    return gpus


def parse_proc_version(text: str) -> Dict[str, Any]:
    """The kernel module's version from /proc/driver/nvidia/version (proprietary, open, Jetson formats)."""
    match = re.search(
        r"NVRM version:\s*NVIDIA UNIX\s+(?:(Open)\s+)?(?:(\S+)\s+)?Kernel Module(?:\s+for\s+(\S+))?\s+([0-9][0-9.]+)",
        text or "",
    )
    if not match:
        return {"kernel_module_version": None, "open_kernel_module": None, "arch": None}
    return {
        "kernel_module_version": match.group(4),
        "open_kernel_module": bool(match.group(1)),
        "arch": match.group(3) or match.group(2),
    }


_HANDLE_RE = re.compile(
    r"unable to determine the device handle for gpu\s*([0-9a-f]+:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\s*:\s*([^\n]+)",
    re.IGNORECASE,
)


def lost_gpus(text: str) -> List[Dict[str, str]]:
    """GPUs nvidia-smi could not reach ("Unable to determine the device handle for GPU ...: GPU is lost ...")."""
    return [{"pci_bus_id": m.group(1), "error": " ".join(m.group(2).split())} for m in _HANDLE_RE.finditer(text or "")]


def with_timeout(cmd: List[str], timeout_bin: Optional[str], seconds: int = COMMAND_TIMEOUT_S) -> List[str]:
    """Prefix a command with coreutils timeout (TERM after `seconds`, KILL 5 s later) when it is at hand."""
    if not timeout_bin:
        return list(cmd)
    return [timeout_bin, "-k", "5", str(seconds), *cmd]


def cuda_from_int(value: Optional[int]) -> Optional[str]:
    """12040 -> '12.4' (NVML's integer encoding)."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def classify_failure(rc: int, out: str, err: str, tool: str = "nvidia-smi") -> Dict[str, Any]:
    """Turn a failed nvidia-smi or NVML call into a failure class, a reason and the flags gpu_info returns.

    Classes: driver_library_mismatch, gpu_lost, nvml_library_missing, no_driver, no_devices, timeout,
    unknown. `tool` is "nvidia-smi" (rc is its exit status) or "nvml" (the text is the NVMLError).
    """
    text = ("{}\n{}".format(out or "", err or "")).strip()
    lower = text.lower()
    first = text.splitlines()[0].strip() if text else "no output"
    where = f"nvidia-smi rc={rc}" if tool == "nvidia-smi" else "NVML"
    lost = lost_gpus(text)
    reboot = False
    if any(marker in lower for marker in MISMATCH_MARKERS):
        failure = "driver_library_mismatch"
        reboot = True
        reason = (
            f"The NVIDIA kernel module and user-space libraries differ ({first}): the driver was upgraded "
            "without reloading the module; reboot the host."
        )
    elif lost or any(marker in lower for marker in LOST_MARKERS):
        failure = "gpu_lost"
        reboot = True
        which = ", ".join("{} ({})".format(g["pci_bus_id"], g["error"]) for g in lost) or first
        reason = (
            f"GPU {which} fell off the bus or is lost; the driver itself works and the other GPUs are listed; "
            "reboot the host (reseat the GPU if it recurs) to recover it."
        )
    elif (
        "couldn't find libnvidia-ml.so" in lower
        or "nvml shared library not found" in lower
        or "libnvidia-ml.so.1: cannot open shared object file" in lower
    ):
        failure = "nvml_library_missing"
        reason = (
            f"The NVIDIA management library libnvidia-ml.so is not found ({where}: {first}): install the "
            "driver's user-space libraries, or inside a container run it with the NVIDIA container runtime."
        )
    elif (
        "driver not loaded" in lower
        or "failed to initialize nvml" in lower
        or "couldn't communicate with the nvidia driver" in lower
    ):
        failure = "no_driver"
        reason = f"No NVIDIA driver is loaded or reachable ({where}: {first})."
    elif "no devices were found" in lower:
        failure = "no_devices"
        reason = f"The NVIDIA driver is loaded but reports no devices ({first})."
    elif tool == "nvidia-smi" and rc == TIMEOUT_RC:
        failure = "timeout"
        reason = (
            f"nvidia-smi did not answer within {COMMAND_TIMEOUT_S} s (rc={rc}): a GPU or the driver may be hung; "
            "look for Xid errors in the kernel log and reboot the host if they are there."
        )
    else:
        failure = "unknown"
        reason = f"nvidia-smi failed (rc={rc}: {first})." if tool == "nvidia-smi" else f"NVML failed ({first})."
    return {
        "reason": reason,
        "failure": failure,
        "driver_library_mismatch": failure == "driver_library_mismatch",
        "reboot_required": reboot,
        "lost_gpus": lost,
    }


NVSWITCH_CLASS_PREFIX = "0680"  # PCI class "bridge, other": how an NVSwitch shows on the bus (NCCL's tclass 0x068000)


def _scan_pci(root: str, class_prefix: str) -> List[Dict[str, Any]]:
    """NVIDIA PCI functions under a sysfs devices folder whose class starts with `class_prefix`."""
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
        if not pci_class.startswith(class_prefix):
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


def scan_sysfs(root: str = "/sys/bus/pci/devices") -> List[Dict[str, Any]]:
    """List NVIDIA display/3D controllers (class 03xx) visible in sysfs (works without any driver)."""
    return _scan_pci(root, "03")


def scan_nvswitches(root: str = "/sys/bus/pci/devices") -> List[Dict[str, Any]]:
    """List NVIDIA NVSwitches (class 0680) in sysfs: HGX/DGX baseboards; they are never GPUs."""
    return _scan_pci(root, NVSWITCH_CLASS_PREFIX)


def host_gpus(result: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The host's GPUs in one shape for preflight (dlstack_gpus): the driver's list, else the PCI bus.

    Each entry: pci_bus_id (sysfs form), pci_device_id, name, compute_capability, driver_version,
    kernel_driver and source (nvml, nvidia-smi or pci). A GPU the driver lost (failure gpu_lost) is
    still on the PCI bus and is listed from there; other PCI-only GPUs are left out when the driver
    answers (a container sees every GPU of its host in sysfs but only those passed to it).
    """
    pci = {dev["address"]: dev for dev in result.get("pci_devices") or []}
    listed: List[Dict[str, Any]] = []
    for gpu in result.get("gpus") or []:
        address = gpu.get("pci_bus_id_short") or short_bus_id(gpu.get("pci_bus_id"))
        listed.append(
            {
                "pci_bus_id": address,
                "pci_device_id": gpu.get("pci_device_id"),
                "name": gpu.get("name"),
                "compute_capability": gpu.get("compute_capability"),
                "driver_version": gpu.get("driver_version"),
                "kernel_driver": (pci.get(address or "") or {}).get("driver"),
                "source": result.get("source"),
            }
        )
    if listed and result.get("failure") != "gpu_lost":
        return listed
    seen = {gpu["pci_bus_id"] for gpu in listed}
    for address, dev in pci.items():
        if address in seen:
            continue
        listed.append(
            {
                "pci_bus_id": address,
                "pci_device_id": dev.get("device_id"),
                "name": None,
                "compute_capability": None,
                "driver_version": None,
                "kernel_driver": dev.get("driver"),
                "class": dev.get("class"),
                "source": "pci",
            }
        )
    return listed


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
        "reset_required": False,
    }


def empty_result(reason: str, source: str = "none") -> Dict[str, Any]:
    return {
        "failure": None,
        "lost_gpus": [],
        "kernel_module_version": None,
        "gpus": [],
        "count": 0,
        "driver_version": None,
        "cuda_driver_version": None,
        "source": source,
        "reason": reason,
        "driver_library_mismatch": False,
        "reboot_required": False,
    }


def container_markers(markers: Tuple[str, ...] = CONTAINER_MARKERS, root: str = "/") -> List[str]:
    """The container marker files (/.dockerenv, /run/.containerenv) present on the host (under root)."""
    return [path for path in markers if os.path.exists(os.path.join(root, path.lstrip("/")))]


def in_container(markers: Tuple[str, ...] = CONTAINER_MARKERS) -> bool:
    return bool(container_markers(markers))


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


def _apply(result: Dict[str, Any], info: Mapping[str, Any]) -> Dict[str, Any]:
    for key in ("failure", "driver_library_mismatch", "reboot_required", "lost_gpus"):
        result[key] = info[key]
    return result


def read_proc_version(path: str = PROC_VERSION) -> Optional[str]:
    """The loaded kernel module's version, or None without one."""
    try:
        with open(path) as handle:
            return parse_proc_version(handle.read())["kernel_module_version"]
    except OSError:
        return None


def gather(
    run: Callable[[List[str]], Tuple[int, str, str]],
    nvidia_smi: Optional[str],
    pynvml: Any = None,
    sysfs_root: str = "/sys/bus/pci/devices",
    *,
    container: Optional[bool] = None,
    device_node: str = "/dev/nvidiactl",
    timeout_bin: Optional[str] = None,
    proc_version: str = PROC_VERSION,
) -> Dict[str, Any]:
    """Collect GPU facts: NVML when given, else nvidia-smi through `run`; never raises for a missing driver.

    Every command goes through `timeout_bin` (coreutils timeout) when it is given.
    """
    pci = scan_sysfs(sysfs_root)
    switches = scan_nvswitches(sysfs_root)

    def timed(cmd: List[str]) -> Tuple[int, str, str]:
        return run(with_timeout(cmd, timeout_bin))

    result = _gather(timed, nvidia_smi, pynvml)
    result["pci_devices"] = pci
    result["pci_nvidia_present"] = bool(pci)
    result["pci_nvswitches"] = switches
    result["kernel_module_version"] = read_proc_version(proc_version)
    result["count"] = len(result["gpus"])
    if not result["gpus"]:
        container = in_container() if container is None else container
        result["reason"] = explain_missing(result, container, os.path.exists(device_node))
    result["host_gpus"] = host_gpus(result)
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
            info = classify_failure(0, nvml_error, "", tool="nvml")
            return _apply(empty_result(info["reason"], "nvml"), info)
        return empty_result("nvidia-smi is not installed and nvidia-ml-py is not importable: no NVIDIA driver here.")
    fields = QUERY_FIELDS
    rc, out, err = run([nvidia_smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
    if rc != 0 and "not a valid field" in (f"{out} {err}").lower():
        fields = BASE_QUERY_FIELDS
        rc, out, err = run([nvidia_smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
    lost = lost_gpus(f"{out}\n{err}")
    if rc != 0 or lost:
        info = classify_failure(rc if rc != 0 else 15, out, err)
        result = _apply(empty_result(info["reason"], "nvidia-smi"), info)
        if info["failure"] != "gpu_lost":
            return result
        # One GPU off the bus: nvidia-smi still prints the healthy ones; keep them.
        gpus = parse_csv(out, fields)
    else:
        gpus = parse_csv(out, fields)
        result = empty_result("" if gpus else "nvidia-smi lists no GPUs.", "nvidia-smi")
    result["gpus"] = gpus
    result["driver_version"] = next((g["driver_version"] for g in gpus if g["driver_version"]), None)
    brc, bout, _berr = run([nvidia_smi])
    if brc == 0 or result["failure"] == "gpu_lost":
        result["cuda_driver_version"] = parse_cuda_version(bout)
    if any(g.get("reset_required") for g in gpus):
        result["reboot_required"] = True
    if any(g.get("mig_mode") == "enabled" for g in gpus):
        _add_mig_devices(run, nvidia_smi, gpus)
    return result


def _add_mig_devices(
    run: Callable[[List[str]], Tuple[int, str, str]], nvidia_smi: str, gpus: List[Dict[str, Any]]
) -> None:
    """On a GPU in MIG mode, the MIG devices `nvidia-smi -L` lists under it (CUDA sees those, not the GPU)."""
    rc, out, _err = run([nvidia_smi, "-L"])
    listed = {g["uuid"]: g["mig_devices"] for g in parse_list(out)} if rc == 0 else {}
    for gpu in gpus:
        if gpu.get("mig_mode") == "enabled":
            gpu["mig_devices"] = listed.get(gpu.get("uuid") or "", [])
