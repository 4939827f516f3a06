# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpu_info and preflight_probe read from a host (modules ``gpulab.dlstack.gpu_info`` and
``gpulab.dlstack.preflight_probe``): the GPU facts with their verdict, and the host checks preflight makes before
anything is installed (the recorded stack, free space; container markers come from _gpu_info), so that preflight needs
one call on the host instead of one per check."""

from __future__ import annotations

import json
import os
import traceback
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import gather
from ansible_collections.gpulab.dlstack.plugins.module_utils._smoke import requirement
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import gpu_info_verdict

try:
    import pynvml
except ImportError:
    pynvml = None
    PYNVML_IMPORT_ERROR: Optional[str] = traceback.format_exc()
else:
    PYNVML_IMPORT_ERROR = None


def gpu_facts(module: Any, source: str, nvidia_smi: str, sysfs_root: str) -> Dict[str, Any]:
    """The GPU facts of the host (NVML first with source auto, else nvidia-smi, and the PCI bus) with their verdict:
    the result gpu_info returns. The caller checks that NVML is importable when source is nvml."""
    nvml = pynvml if source in ("auto", "nvml") else None
    smi = module.get_bin_path(nvidia_smi) if source in ("auto", "nvidia-smi") else None

    def run(cmd: List[str]) -> Tuple[int, str, str]:
        rc, out, err = module.run_command(cmd, environ_update={"LC_ALL": "C"})
        return rc, out, err

    result: Dict[str, Any] = gather(run, smi, nvml, sysfs_root, timeout_bin=module.get_bin_path("timeout"))
    result["gpu_requirement"] = requirement(module, result)
    outcome = gpu_info_verdict(result, result["gpu_requirement"])
    result["verdict"] = outcome["status"]
    if outcome["status"] != "pass":
        result["reason"] = outcome["reason"]
    return result


def read_record(path: str) -> Tuple[Dict[str, Any], Optional[str]]:
    """The JSON object recorded at path ({} when there is none) and why it could not be read, if it could not."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as exc:
        return {}, f"{path} could not be read as JSON: {exc}"
    if not isinstance(data, dict):
        return {}, f"{path} holds {type(data).__name__}, not a JSON object"
    return data, None


def free_space(path: str) -> Dict[str, Any]:
    """Free space (what an unprivileged user may use, as df's Available) on the filesystem that holds or will hold
    path: its nearest existing ancestor is measured; mount is that filesystem's mount point."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    mount = os.path.realpath(existing)
    while not os.path.ismount(mount):
        mount = os.path.dirname(mount)
    fs = os.statvfs(existing)
    return {
        "path": existing,
        "mount": mount,
        "free_kb": fs.f_bavail * fs.f_frsize // 1024,
        "total_kb": fs.f_blocks * fs.f_frsize // 1024,
    }
