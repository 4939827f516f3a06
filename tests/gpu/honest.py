"""Check the GPU-requirement verdicts against a real GPU host, without Ansible.

Reads the host's real sysfs and nvidia-smi, decides what a verify run would say for each profile,
then breaks the driver on purpose (a stand-in nvidia-smi that answers like a broken one, or none at
all, over the real PCI bus) and checks that a GPU host fails with the specific reason while a CPU
host skips. With torch importable it also runs the gpu workload briefly and prints the fleet.md row
with the stack columns. Prints one JSON document; exits 1 when any expectation does not hold.

Usage: python3 tests/gpu/honest.py [python-with-frameworks]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BROKEN_SMI = {
    "driver not loaded": (255, "Failed to initialize NVML: Unknown Error", "No NVIDIA driver"),
    "reboot pending": (18, "Failed to initialize NVML: Driver/library version mismatch", "reboot the host"),
    "GPU lost": (15, "Unable to determine the device handle for GPU0000:18:00.0: GPU is lost.", "A GPU is lost"),
}


def collection_path(work: str) -> None:
    link = os.path.join(work, "ansible_collections", "gpulab", "dlstack")
    os.makedirs(os.path.dirname(link))
    os.symlink(ROOT, link)
    sys.path.insert(0, work)


def run(cmd: List[str]) -> Tuple[int, str, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def stand_in(work: str, name: str, rc: int, text: str) -> str:
    path = os.path.join(work, name.replace(" ", "_"))
    with open(path, "w") as handle:
        handle.write(f"#!/bin/sh\necho '{text}'\nexit {rc}\n")
    os.chmod(path, 0o755)
    return path


def main() -> int:
    work = tempfile.mkdtemp(prefix="dlstack-honest-")
    collection_path(work)
    from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info, _report, _verdict  # noqa: PLC0415
    from ansible_collections.gpulab.dlstack.plugins.module_utils._workloads import SCRIPTS  # noqa: PLC0415

    problems: List[str] = []
    out: Dict[str, Any] = {"container": _gpu_info.in_container(), "dev_nvidiactl": os.path.exists("/dev/nvidiactl")}
    facts = _gpu_info.gather(run, shutil.which("nvidia-smi"))
    out["real"] = {k: facts.get(k) for k in ("count", "driver_version", "cuda_driver_version", "reason", "source")}
    out["real"]["pci"] = facts["pci_devices"]
    for profile in ("auto", "gpu", "cpu"):
        needed = _verdict.gpu_requirement(None, profile, facts["pci_nvidia_present"])
        out["real"][profile] = _verdict.gpu_info_verdict(facts, needed)
        if out["real"][profile]["status"] != "pass":
            problems.append(f"real GPUs, profile {profile}: {out['real'][profile]}")
    if not facts["pci_nvidia_present"]:
        problems.append("no NVIDIA GPU found in sysfs on a GPU host")

    out["broken"] = {}
    cases = {name: stand_in(work, name, rc, text) for name, (rc, text, _words) in BROKEN_SMI.items()}
    cases["nvidia-smi missing"] = None  # type: ignore[assignment]
    for name, smi in cases.items():
        broken = _gpu_info.gather(run, smi)
        words = BROKEN_SMI[name][2] if name in BROKEN_SMI else "bound to:"
        for profile, status in (("auto", "fail"), ("gpu", "fail"), ("cpu", "skip")):
            needed = _verdict.gpu_requirement(None, profile, broken["pci_nvidia_present"])
            got = _verdict.gpu_info_verdict(broken, needed)
            expected = "warn" if profile == "cpu" and broken["reboot_required"] else status
            out["broken"][f"{name} / {profile}"] = got
            if got["status"] != expected or words not in got["reason"]:
                problems.append(f"{name} / {profile}: expected {expected} with '{words}', got {got}")

    python = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    script = os.path.join(work, "gpu.py")
    with open(script, "w") as handle:
        handle.write(SCRIPTS["gpu"])
    settings = os.path.join(work, "gpu.json")
    config = {"backend": "torch", "checks": ["matmul_bf16", "memory_bw"], "time_budget": 8}
    config.update(matmul_size=8192, memory_mib=1024, copy_mib=256)
    with open(settings, "w") as handle:
        json.dump(config, handle)
    rc, stdout, stderr = run([python, "-c", "import torch"])
    if rc == 0:
        rc, stdout, stderr = run([python, script, settings])
        doc = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {"error": stderr[-500:]}
        specs = _verdict.merge_specs(None)
        judged = [
            _verdict.judge_gpu(g, facts["gpus"][0] if facts["gpus"] else None, specs, _verdict.DEFAULT_THRESHOLDS)
            for g in doc.get("gpus", [])
        ]
        checks = _verdict.judge_host(judged, _verdict.DEFAULT_THRESHOLDS)
        smoke = {
            "verdict": _verdict.worst(c["status"] for c in checks.values()),
            "checks": checks,
            "versions": doc.get("versions", {}),
            "python_version": sys.version.split()[0],
        }
        info = dict(facts, verdict=out["real"]["auto"]["status"])
        record = _report.host_record("h200", "now", {"gpu_info": info, "gpu_smoke": smoke}, None, 10.0)
        out["record_stack"] = record["stack"]
        page = _report.render_markdown([record], _report.fleet_stats([record], 10.0), "now")
        out["fleet_md"] = page.splitlines()[4:7]
        out["smoke"] = {k: {x: c.get(x) for x in ("status", "value", "fraction")} for k, c in checks.items()}
        if not record["stack"]["driver"] or not record["stack"]["cuda"]:
            problems.append(f"stack columns missing measured driver/CUDA: {record['stack']}")
    else:
        out["torch"] = "not importable: " + (stderr.strip().splitlines() or ["?"])[-1]
    out["problems"] = problems
    print(json.dumps(out, indent=1, default=str))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
