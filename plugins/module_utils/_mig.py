# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A declarative MIG layout applied through nvidia-smi, idempotently.

Standard library only: the nvidia_mig role also installs this file as the script its systemd unit runs at boot
(``python3 dlstack-mig-apply /etc/dlstack/mig-layout.json``), before the GPU services start. The layout file holds,
per GPU model name, the GPU instance profiles wanted (``["3g.40gb", "3g.40gb"]``); each GPU of that model gets them,
with one compute instance filling each GPU instance (``-C``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

Runner = Callable[[List[str]], Tuple[int, str, str]]
_LGIP = re.compile(r"^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)/(\d+)\s")
_LGI = re.compile(r"^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s")
QUERY = "index,name,mig.mode.current,mig.mode.pending"


def parse_gpus(text: str) -> List[Dict[str, Any]]:
    """``nvidia-smi --query-gpu=index,name,mig.mode.current,mig.mode.pending --format=csv,noheader``."""
    gpus = []
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 4 and cells[0].isdigit():
            gpus.append({"index": int(cells[0]), "name": cells[1], "mig_current": cells[2], "mig_pending": cells[3]})
    return gpus


def parse_profiles(text: str) -> Dict[int, Dict[str, Dict[str, int]]]:
    """``nvidia-smi mig -lgip``: per GPU index, profile name -> id, free and total instances."""
    found: Dict[int, Dict[str, Dict[str, int]]] = {}
    for line in (text or "").splitlines():
        match = _LGIP.match(line)
        if match:
            gpu, name, pid, free, total = match.groups()
            found.setdefault(int(gpu), {})[name] = {"id": int(pid), "free": int(free), "total": int(total)}
    return found


def parse_instances(text: str) -> Dict[int, List[Dict[str, Any]]]:
    """``nvidia-smi mig -lgi``: per GPU index, its GPU instances (profile name and id, instance id, placement)."""
    found: Dict[int, List[Dict[str, Any]]] = {}
    for line in (text or "").splitlines():
        match = _LGI.match(line)
        if match:
            gpu, name, pid, iid, start, size = match.groups()
            found.setdefault(int(gpu), []).append(
                {"profile": name, "profile_id": int(pid), "instance_id": int(iid), "placement": f"{start}:{size}"}
            )
    return found


def table_problems(layout: Mapping[str, Sequence[str]], table: Sequence[Mapping[str, Any]]) -> List[str]:
    """Layouts a GPU model cannot hold, from the profile table (slices, memory slices, most instances per profile)."""
    problems: List[str] = []
    rows: Dict[str, Mapping[str, Any]] = {}
    for entry in table:
        for name in [entry["gpu"], *entry.get("aliases", [])]:
            rows[name] = entry
    for model, wanted in layout.items():
        row = rows.get(model)
        if row is None:
            problems.append(
                f"nvidia_mig_layout has {model!r}, which is no MIG-capable GPU model known to the collection "
                f"({', '.join(sorted(r['gpu'] for r in table))}); use the name nvidia-smi prints."
            )
            continue
        counts = Counter(wanted)
        unknown = sorted(p for p in counts if p not in row["profiles"])
        if unknown:
            problems.append(
                f"nvidia_mig_layout[{model!r}] asks for {', '.join(unknown)}, which {model} does not offer "
                f"(profiles: {', '.join(row['profiles'])})."
            )
            continue
        too_many = [
            f"{p} x{n} (at most {row['profiles'][p][2]})" for p, n in counts.items() if n > row["profiles"][p][2]
        ]
        compute = sum(row["profiles"][p][0] for p in wanted)
        memory = sum(row["profiles"][p][1] for p in wanted)
        if too_many or compute > row["slices"] or memory > row["memory_slices"]:
            problems.append(
                f"nvidia_mig_layout[{model!r}] = {list(wanted)} does not fit one {model}: "
                + "; ".join(
                    too_many
                    + [f"{compute}/{row['slices']} compute slices"] * (compute > row["slices"])
                    + [f"{memory}/{row['memory_slices']} memory slices"] * (memory > row["memory_slices"])
                )
                + "; choose profiles that add up to at most the whole GPU (NVIDIA MIG user guide, supported profiles)."
            )
    return problems


def plan_gpu(
    gpu: Mapping[str, Any],
    wanted: Sequence[str],
    offered: Mapping[str, Mapping[str, int]],
    current: Sequence[Mapping[str, Any]],
) -> Dict[str, Any]:
    """What one GPU needs: nothing, MIG mode on (pending a reset), or its instances rebuilt to the wanted profiles."""
    index = gpu["index"]
    out: Dict[str, Any] = {
        "index": index,
        "name": gpu["name"],
        "wanted": list(wanted),
        "current": [i["profile"] for i in current],
        "commands": [],
        "pending": None,
        "problem": None,
    }
    missing = sorted({p for p in wanted if p not in offered}) if offered else []
    if missing:
        out["problem"] = (
            f"GPU {index} ({gpu['name']}) does not offer {', '.join(missing)} "
            f"(nvidia-smi mig -lgip lists {', '.join(offered)})."
        )
        return out
    if str(gpu.get("mig_current", "")).lower() != "enabled":
        if str(gpu.get("mig_pending", "")).lower() != "enabled":
            out["commands"].append(["-i", str(index), "-mig", "1"])
        out["pending"] = f"GPU {index}: MIG mode is enabled only after a GPU reset or reboot; instances follow then."
        return out
    if Counter(out["current"]) == Counter(wanted):
        return out
    if current:
        out["commands"] += [["mig", "-dci", "-i", str(index)], ["mig", "-dgi", "-i", str(index)]]
    if wanted:
        ids = ",".join(str(offered[p]["id"]) for p in wanted)
        out["commands"].append(["mig", "-cgi", ids, "-C", "-i", str(index)])
    return out


def plan(run: Runner, smi: str, layout: Mapping[str, Sequence[str]]) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """One plan per GPU of a model in the layout, read through nvidia-smi; (plans, error sentence)."""
    rc, out, err = run([smi, f"--query-gpu={QUERY}", "--format=csv,noheader"])
    if rc != 0:
        return [], f"nvidia-smi could not list the GPUs (rc={rc}): {(err or out).strip()[:300]}"
    gpus = [g for g in parse_gpus(out) if g["name"] in layout]
    if not gpus:
        return [], None
    rc, profiles_out, err = run([smi, "mig", "-lgip"])
    offered = parse_profiles(profiles_out) if rc == 0 else {}
    _rc, instances_out, _err = run([smi, "mig", "-lgi"])
    instances = parse_instances(instances_out)
    plans = [plan_gpu(g, layout[g["name"]], offered.get(g["index"], {}), instances.get(g["index"], [])) for g in gpus]
    return plans, None


def apply(run: Runner, smi: str, plans: List[Dict[str, Any]]) -> Optional[str]:
    """Run every plan's commands in order; the first failure stops with its sentence."""
    for item in plans:
        for args in item["commands"]:
            rc, out, err = run([smi, *args])
            if rc != 0:
                return f"nvidia-smi {' '.join(args)} failed (rc={rc}): {(err or out).strip()[:300]}"
    return None


def _subprocess(cmd: List[str]) -> Tuple[int, str, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def main(argv: Sequence[str]) -> int:
    """Boot entry point: ``dlstack-mig-apply LAYOUT.json [NVIDIA_SMI]``; exit 1 with the reason on a problem."""
    with open(argv[1]) as handle:
        layout = json.load(handle)
    smi = argv[2] if len(argv) > 2 else "nvidia-smi"
    plans, error = plan(_subprocess, smi, layout)
    problems = [p["problem"] for p in plans if p["problem"]]
    if error or problems:
        print("dlstack-mig: " + (error or " ".join(problems)), file=sys.stderr)  # pylint: disable=ansible-bad-function
        return 1
    error = apply(_subprocess, smi, plans)
    for item in plans:
        print(  # pylint: disable=ansible-bad-function
            f"dlstack-mig: GPU {item['index']} ({item['name']}): {item['wanted']}"
            + (f" - {item['pending']}" if item["pending"] else "")
        )
    if error:
        print("dlstack-mig: " + error, file=sys.stderr)  # pylint: disable=ansible-bad-function
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))  # pylint: disable=ansible-bad-function
