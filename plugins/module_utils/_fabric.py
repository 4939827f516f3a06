# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVSwitch systems and their fabric manager: detection from the PCI bus, package names and versions, the verdict.

Detection reads sysfs only (no driver needed): NVIDIA bridge-class devices with a known NVSwitch device id, or GPUs
sold only on fourth-generation NVSwitch baseboards, whose switches are not on the host's PCI bus. The rows are in
``_matrix`` (NVSWITCH_DEVICES, NVSWITCH_GPUS, FABRIC_MANAGER) with their sources.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpulab.dlstack.plugins.module_utils._matrix import (
    FABRIC_MANAGER,
    NVSWITCH_CLASS_PREFIX,
    NVSWITCH_DEVICES,
    NVSWITCH_GPUS,
)

NVIDIA = "10de"
_VERSION = re.compile(r"^(?:\d+:)?(\d+\.\d+(?:\.\d+)?)(?:-.*)?$")


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip().lower()
    except OSError:
        return ""


def scan_pci(root: str) -> List[Dict[str, str]]:
    """NVIDIA devices in a sysfs PCI devices folder: address, device id and class (hex, without 0x)."""
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return []
    found = []
    for entry in entries:
        base = os.path.join(root, entry)
        if _read(os.path.join(base, "vendor")).replace("0x", "") != NVIDIA:
            continue
        found.append(
            {
                "address": entry.lower(),
                "device_id": _read(os.path.join(base, "device")).replace("0x", ""),
                "class": _read(os.path.join(base, "class")).replace("0x", ""),
            }
        )
    return found


def detect(
    devices: List[Mapping[str, str]],
    switch_rows: Optional[List[Dict[str, Any]]] = None,
    gpu_rows: Optional[List[Dict[str, Any]]] = None,
) -> Dict[str, Any]:
    """Whether the host is an NVSwitch system, which generation and board, whether NVLSM is needed, and why."""
    switch_rows = NVSWITCH_DEVICES if switch_rows is None else switch_rows
    gpu_rows = NVSWITCH_GPUS if gpu_rows is None else gpu_rows
    by_switch = {row["device_id"]: row for row in switch_rows}
    by_gpu = {row["device_id"]: row for row in gpu_rows}
    bridges = [d for d in devices if str(d.get("class", "")).startswith(NVSWITCH_CLASS_PREFIX)]
    switches = [d for d in bridges if d.get("device_id") in by_switch]
    unknown = [d for d in bridges if d.get("device_id") not in by_switch]
    boards = [d for d in devices if str(d.get("class", "")).startswith("03") and d.get("device_id") in by_gpu]
    result: Dict[str, Any] = {
        "nvswitch": False,
        "generation": None,
        "board": None,
        "nvlsm_required": False,
        "switches": [d["address"] for d in switches],
        "unknown_bridges": [f"{d['address']} (10de:{d.get('device_id')})" for d in unknown],
    }
    if switches:
        row = by_switch[switches[0]["device_id"]]
        result.update(nvswitch=True, generation=row["generation"], board=row["board"])
        result["nvlsm_required"] = bool(row.get("nvlsm"))
        result["reason"] = "{} NVSwitch(es) 10de:{} ({}, generation {}) on the PCI bus".format(
            len(switches), row["device_id"], row["board"], row["generation"]
        )
    elif boards:
        row = by_gpu[boards[0]["device_id"]]
        result.update(nvswitch=True, generation=row["generation"], board=row["board"])
        result["nvlsm_required"] = bool(row.get("nvlsm"))
        result["reason"] = (
            "{} GPU(s) 10de:{} of an {} baseboard, whose generation-{} NVSwitches are not on the host's PCI bus".format(
                len(boards), row["device_id"], row["board"], row["generation"]
            )
        )
    else:
        result["reason"] = "no NVSwitch on the PCI bus and no GPU of an NVSwitch-only baseboard"
        if unknown:
            result["reason"] += (
                "; NVIDIA bridge devices of unknown id "
                + ", ".join(result["unknown_bridges"])
                + " were seen: if they are NVSwitches, set nvidia_driver_fabricmanager: always"
            )
    return result


def upstream_version(version: str) -> Optional[str]:
    """The driver version without epoch or packaging revision: '1:535.261.03-1~deb12u1' -> '535.261.03'."""
    match = _VERSION.match(str(version or "").strip())
    return match.group(1) if match else None


def packages(
    manager: str, driver_version: str, nvlsm: bool, table: Optional[Mapping[str, Any]] = None
) -> List[Dict[str, str]]:
    """The fabric manager packages for a driver version: name, version pattern and install spec per package manager.

    apt: ``nvidia-fabricmanager-<branch>`` (``nvidia-fabricmanager`` from branch 590), ``<version>-*``; dnf:
    ``nvidia-fabric-manager-<version>``. NVLSM (``nvlsm``) follows its own versions and is installed unpinned.
    """
    table = FABRIC_MANAGER if table is None else table
    version = upstream_version(driver_version)
    if version is None:
        raise ValueError(
            f"driver version {driver_version!r} is not one like 535.161.08; set nvidia_driver_version to the exact "
            "driver version the fabric manager must match."
        )
    branch = int(version.split(".")[0])
    out: List[Dict[str, str]] = []
    if manager == "apt":
        name = table["apt_name"] if branch >= table["apt_unversioned_from_branch"] else table["apt_versioned_name"]
        name = name.format(branch=branch)
        out.append({"name": name, "version": f"{version}-*", "spec": f"{name}={version}-*"})
    elif manager == "dnf":
        name = table["dnf_name"]
        out.append({"name": name, "version": version, "spec": f"{name}-{version}"})
    else:
        raise ValueError(f"package manager {manager!r} is neither apt nor dnf.")
    if nvlsm:
        out.append({"name": table["nvlsm_package"], "version": "", "spec": table["nvlsm_package"]})
    return out


def verdict(found: Mapping[str, Any], service_state: Optional[str], service: str) -> Dict[str, str]:
    """pass when the fabric manager runs on an NVSwitch system, fail when it does not, skip elsewhere."""
    if not found.get("nvswitch"):
        return {"verdict": "skip", "reason": f"not an NVSwitch system: {found.get('reason')}"}
    if service_state == "active":
        return {"verdict": "pass", "reason": f"{service} is running on this NVSwitch system ({found.get('reason')})"}
    state = service_state or "unknown (systemctl did not answer)"
    return {
        "verdict": "fail",
        "reason": (
            f"{service} is {state} on an NVSwitch system ({found.get('reason')}): CUDA cannot initialise the GPUs "
            f"(error 802, system not yet initialized) until it runs at the driver's exact version; start it with "
            f"`systemctl enable --now {service}` and read `journalctl -u {service}` if it stops"
        ),
    }
