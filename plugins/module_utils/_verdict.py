# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verdicts for the smoke modules: spec lookup, fractions of peak, thresholds, multi-GPU gating.

Thresholds follow REFERENCE.md section 6: matmul >= 0.70 of spec pass and 0.60-0.70 warn;
device memory >= 0.80; host<->device copies >= 0.70 of the PCIe link; any numerical mismatch
fails; a multi-GPU host is gated on its slowest GPU and GPUs that differ by >= 5 % are flagged.
Figures are the fastest round of a run (full clocks, as the usual benchmarks report); a device that
sustains less than 0.70 of that over the whole run (power or thermal capping) is at most a warn.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.gpulab.dlstack.plugins.module_utils._matrix import GPUS, find_gpu

RANK: Dict[str, int] = {"skip": 0, "pass": 1, "warn": 2, "fail": 3}

DEFAULT_THRESHOLDS: Dict[str, float] = {
    "matmul_pass": 0.70,
    "matmul_warn": 0.60,
    "memory_pass": 0.80,
    "memory_warn": 0.70,
    "pcie_pass": 0.70,
    "pcie_warn": 0.60,
    "spread_pct": 5.0,
    "sustain_warn": 0.70,
    "conv_pass": 0.35,
    "conv_warn": 0.25,
}

# Largest accepted max|C - C64| / max|C64| on a 256x256 slice of an n x n product (n ~ 8192, fp32
# accumulation): output rounding is 2^-24 (fp32), 2^-11 (fp16), 2^-8 (bf16); TF32 rounds inputs to
# 10 mantissa bits. Each bound is about ten times what a healthy GPU shows; broken results are ~1.
TOLERANCES: Dict[str, float] = {"fp32": 1e-4, "tf32": 5e-3, "bf16": 1e-2, "fp16": 5e-3}
# The same bound for the convolution (2304-term sums per output at 256 channels): cuDNN may pick Winograd or FFT
# algorithms, whose fp32 error is about ten times a direct sum's, and some fp16 algorithms accumulate in fp16.
CONV_TOLERANCES: Dict[str, float] = {"fp32": 1e-3, "fp16": 1e-2}

# Theoretical one-way x1 rate in GB/s per PCIe generation (x16: 4, 8, 16, 32, 64, 128).
PCIE_LANE_GBS: Dict[int, float] = {1: 0.25, 2: 0.5, 3: 1.0, 4: 2.0, 5: 4.0, 6: 8.0}

MATMUL_KINDS = ("fp32", "tf32", "bf16", "fp16")
# Convolutions through cuDNN: fp32 with TF32 off (judged against the fp32 peak) and fp16 (tensor cores).
CONV_KINDS = ("fp32", "fp16")
GPU_CHECKS = (
    *tuple(f"matmul_{k}" for k in MATMUL_KINDS),
    "memory_bw",
    "h2d",
    "d2h",
    *tuple(f"conv_{k}" for k in CONV_KINDS),
)
UNITS = {"matmul": "TFLOP/s", "conv": "TFLOP/s", "memory_bw": "GB/s", "h2d": "GB/s", "d2h": "GB/s"}


PROFILES = ("auto", "gpu", "cpu")

# Module options every verification module shares to decide whether its GPU checks must run.
REQUIREMENT_SPEC: Dict[str, Dict[str, Any]] = {
    "required": {"type": "bool"},
    "profile": {"type": "str", "choices": list(PROFILES), "default": "auto"},
    "gpu_seen": {"type": "bool", "default": False},
}


def gpu_requirement(
    required: Optional[bool], profile: str, pci_nvidia_present: bool = False, gpu_seen: bool = False
) -> Dict[str, Any]:
    """Whether a GPU check that cannot run fails (a GPU host) or skips (a CPU host), and why.

    An explicit `required` wins (the user's opt-in or opt-out). Otherwise profile gpu requires the
    GPUs, profile cpu never does, and profile auto does when NVIDIA GPUs are on the PCI bus or an
    earlier run (preflight's local fact) saw them.
    """
    if required is not None:
        setting = "true" if required else "false"
        return {"required": bool(required), "explicit": True, "basis": f"required={setting} was set explicitly."}
    if profile == "gpu":
        return {"required": True, "explicit": False, "basis": "The host's profile is gpu, so its GPU checks must run."}
    if profile == "cpu":
        return {"required": False, "explicit": False, "basis": "The host's profile is cpu."}
    if pci_nvidia_present:
        basis = "NVIDIA GPUs are on the PCI bus (profile auto), so the GPU checks must run."
        return {"required": True, "explicit": False, "basis": basis}
    if gpu_seen:
        basis = "An earlier run saw NVIDIA GPUs on this host (profile auto), so the GPU checks must run."
        return {"required": True, "explicit": False, "basis": basis}
    return not_required("No NVIDIA GPU is expected (profile auto, none on the PCI bus).")


def not_required(basis: str) -> Dict[str, Any]:
    return {"required": False, "explicit": False, "basis": basis}


def unavailable(requirement: Dict[str, Any], reason: str) -> Dict[str, str]:
    """Status and reason for a check that could not run: fail on a host that must have GPUs, else skip."""
    if not requirement["required"]:
        return {"status": "skip", "reason": f"{reason} {requirement['basis']}"}
    opt_out = "" if requirement["explicit"] else " Set required=false (verify_require_gpu: false) to skip instead."
    return {"status": "fail", "reason": f"{reason} {requirement['basis']}{opt_out}"}


def gpu_info_verdict(facts: Dict[str, Any], requirement: Dict[str, Any]) -> Dict[str, str]:
    """gpu_info's own verdict: pass when the driver lists GPUs, all healthy, else why not (fail on a GPU host)."""
    gpus = facts.get("gpus") or []
    resets = [g.get("pci_bus_id") or str(g.get("index")) for g in gpus if g.get("reset_required")]
    if gpus and not facts.get("driver_library_mismatch") and not facts.get("lost_gpus") and not resets:
        return {"status": "pass", "reason": ""}
    reason = facts.get("reason") or "The driver lists no GPU."
    if resets:
        reason = (
            reason + " " if facts.get("reason") else ""
        ) + "GPU(s) {} need a reset (nvidia-smi -r, or reboot).".format(", ".join(resets))
    if facts.get("reboot_required") and not requirement["required"]:
        return {"status": "warn", "reason": reason}
    return unavailable(requirement, reason)


def worst(statuses: Iterable[str]) -> str:
    """The most severe status; 'skip' only when nothing ran."""
    found = [s for s in statuses if s in RANK]
    return max(found, key=lambda s: RANK[s]) if found else "skip"


def grade(fraction: float, pass_at: float, warn_at: float) -> str:
    if fraction >= pass_at:
        return "pass"
    if fraction >= warn_at:
        return "warn"
    return "fail"


def link_gbs(gen: Optional[int], width: Optional[int]) -> Optional[float]:
    """Theoretical one-way PCIe bandwidth in GB/s for a generation and lane count."""
    if not gen or gen not in PCIE_LANE_GBS:
        return None
    return PCIE_LANE_GBS[gen] * (width or 16)


def merge_specs(
    overrides: Optional[List[Dict[str, Any]]], base: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """GPU spec rows with user rows merged over the table: same name or PCI id updates, else appends."""
    rows = copy.deepcopy(GPUS if base is None else base)
    for override in overrides or []:
        target = None
        for pci_id in override.get("pci_device_ids") or []:
            target = find_gpu(pci_device_id=pci_id, gpus=rows)
            if target:
                break
        if target is None and override.get("name"):
            target = find_gpu(name=override["name"], gpus=rows)
        if target is None:
            row = {"aliases": [], "pci_device_ids": [], "peak_tflops": {}, "source": "user override"}
            row.update(copy.deepcopy(override))
            row["pci_device_ids"] = [str(i).lower() for i in row.get("pci_device_ids") or []]
            rows.append(row)
            continue
        given: List[str] = []
        for key, value in override.items():
            if value is None:
                continue
            if key == "peak_tflops" and isinstance(value, dict):
                target.setdefault("peak_tflops", {}).update(value)
                given.extend(kind for kind, peak in value.items() if peak is not None)
            else:
                target[key] = copy.deepcopy(value)
                given.append(key)
        if "unverified" not in override:
            # A value the user gives is theirs to vouch for: it no longer counts as the table's unverified [U] one.
            target["unverified"] = [f for f in target.get("unverified") or [] if f not in given]
        target["source"] = "user override over: {}".format(target.get("source", "table"))
    return rows


def lookup_spec(
    specs: List[Dict[str, Any]], pci_device_id: Optional[str], name: Optional[str]
) -> Optional[Dict[str, Any]]:
    return find_gpu(pci_device_id=pci_device_id, name=name, gpus=specs)


def _entry(status: str, reason: str = "", **figures: Any) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"status": status, "reason": reason}
    entry.update(figures)
    return entry


def judge_check(
    check: str,
    raw: Optional[Dict[str, Any]],
    spec: Optional[Dict[str, Any]],
    link: Optional[Dict[str, Any]],
    thresholds: Dict[str, float],
) -> Dict[str, Any]:
    """Verdict for one measured check of one GPU, its sustained rate included."""
    entry = _judge_best(check, raw, spec, link, thresholds)
    key = "tflops_sustained" if check.startswith(("matmul_", "conv_")) else "gbs_sustained"
    sustained, value = (raw or {}).get(key), entry.get("value")
    if not sustained or not value:
        return entry
    held = sustained / value
    entry.update(sustained=sustained, sustained_fraction=held)
    if entry["status"] == "pass" and held < thresholds["sustain_warn"]:
        entry["status"] = "warn"
        entry["reason"] += (
            f" But it holds only {held * 100:.0f} % of that rate over the whole run (warn below"
            f" {thresholds['sustain_warn'] * 100:.0f} %): power or thermal capping; see nvidia-smi -q -d PERFORMANCE."
        )
    return entry


def _judge_best(
    check: str,
    raw: Optional[Dict[str, Any]],
    spec: Optional[Dict[str, Any]],
    link: Optional[Dict[str, Any]],
    thresholds: Dict[str, float],
) -> Dict[str, Any]:
    """Verdict for one measured check of one GPU, on its fastest round."""
    if raw is None:
        return _entry("skip", "Not run: the workload returned nothing for this check.")
    if raw.get("skipped"):
        return _entry("skip", str(raw["skipped"]))
    if raw.get("error"):
        return _entry("fail", "The check raised {}".format(raw["error"]))
    gpu_name = (spec or {}).get("name", "this GPU")
    if check.startswith(("matmul_", "conv_")):
        op, kind = check.split("_", 1)
        value = raw.get("tflops")
        err = raw.get("max_rel_err")
        tol = (TOLERANCES if op == "matmul" else CONV_TOLERANCES)[kind]
        figures = {"value": value, "unit": UNITS[op], "max_rel_err": err, "tolerance": tol}
        if op == "matmul":
            figures["n"] = raw.get("n")
        else:
            figures.update(batch=raw.get("batch"), channels=raw.get("channels"), library=raw.get("library"))
        if err is None or err > tol:
            shown = "NaN/Inf in the result" if err is None else f"max relative error {err:.3g} > {tol:.3g}"
            return _entry("fail", f"Numerical mismatch against the float64 reference: {shown}.", **figures)
        peak = ((spec or {}).get("peak_tflops") or {}).get(kind)
        if not peak:
            why = "no spec entry for this GPU" if spec is None else f"the spec table has no {kind} peak for {gpu_name}"
            return _entry(
                "warn", f"Correct, but not judged for speed: {why} (add it with the peaks option).", **figures
            )
        fraction = value / peak
        status = grade(fraction, thresholds[f"{op}_pass"], thresholds[f"{op}_warn"])
        return _entry(status, _why(status, fraction, thresholds[f"{op}_pass"]), peak=peak, fraction=fraction, **figures)
    if check == "memory_bw":
        value = raw.get("gbs")
        figures = {"value": value, "unit": UNITS["memory_bw"], "bytes": raw.get("bytes")}
        if raw.get("copy_ok") is False:
            return _entry("fail", "The copied data differs from the source.", **figures)
        peak = (spec or {}).get("mem_bw_gbs")
        if not peak:
            return _entry(
                "warn",
                f"Measured, but no memory-bandwidth spec for {gpu_name} (add it with the peaks option).",
                **figures,
            )
        fraction = value / peak
        status = grade(fraction, thresholds["memory_pass"], thresholds["memory_warn"])
        return _entry(
            status, _why(status, fraction, thresholds["memory_pass"]), peak=peak, fraction=fraction, **figures
        )
    value = raw.get("gbs")
    figures = {"value": value, "unit": UNITS[check], "bytes": raw.get("bytes"), "pinned": raw.get("pinned")}
    if raw.get("pinned") is False:
        return _entry("skip", "Copied from pageable memory; not comparable to the link rate.", **figures)
    if not link or not link.get("gbs"):
        return _entry(
            "warn", "Measured, but the PCIe generation is unknown, so there is no link rate to compare.", **figures
        )
    fraction = value / link["gbs"]
    status = grade(fraction, thresholds["pcie_pass"], thresholds["pcie_warn"])
    reason = _why(status, fraction, thresholds["pcie_pass"]) + " Link: {}.".format(link["basis"])
    return _entry(status, reason, peak=link["gbs"], fraction=fraction, **figures)


def _why(status: str, fraction: float, pass_at: float) -> str:
    if status == "pass":
        return f"{fraction * 100:.0f} % of spec (pass at {pass_at * 100:.0f} %)."
    return f"Only {fraction * 100:.0f} % of spec (pass at {pass_at * 100:.0f} %)."


def link_for(facts: Optional[Dict[str, Any]], spec: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The link rate host copies are compared with, and how it was found.

    A GPU whose spec row names a host_link (GH200: NVLink-C2C) is judged by it, not by the narrow
    PCIe link the driver reports for it.
    """
    host = (spec or {}).get("host_link")
    if host and host.get("gbs"):
        rate = float(host["gbs"])
        return {
            "gen": None,
            "width": None,
            "gbs": rate,
            "basis": "{} one-way {:.0f} GB/s (spec table)".format(host.get("kind", "host link"), rate),
            "spec_field": "host_link",
        }
    if facts and facts.get("pcie_gen_max"):
        gen, width = facts["pcie_gen_max"], facts.get("pcie_width_max") or 16
        gbs = link_gbs(gen, width)
        if gbs:
            return {
                "gen": gen,
                "width": width,
                "gbs": gbs,
                "basis": f"PCIe gen{gen} x{width} theoretical one-way {gbs:.0f} GB/s (driver)",
            }
    if spec and spec.get("pcie_gen"):
        gen = int(spec["pcie_gen"])
        gbs = link_gbs(gen, 16)
        if gbs:
            return {
                "gen": gen,
                "width": 16,
                "gbs": gbs,
                "basis": f"PCIe gen{gen} x16 theoretical one-way {gbs:.0f} GB/s (spec table)",
                "spec_field": "pcie_gen",
            }
    return None


def cap_unverified(
    check: str, entry: Dict[str, Any], spec: Optional[Dict[str, Any]], link: Optional[Dict[str, Any]]
) -> Dict[str, Any]:
    """A speed verdict computed from a spec value marked unverified says so and is at most warn."""
    if spec is None or entry.get("peak") is None:
        return entry
    if check.startswith(("matmul_", "conv_")):
        field = check.split("_", 1)[1]
    elif check == "memory_bw":
        field = "mem_bw_gbs"
    else:
        field = (link or {}).get("spec_field", "")
    if field not in (spec.get("unverified") or []):
        return entry
    capped = dict(entry)
    capped["spec_unverified"] = True
    if capped["status"] == "fail":
        capped["status"] = "warn"
    capped["reason"] = "{} The spec value ({}) for {} is unverified [U], so this is at most a warning.".format(
        entry.get("reason", ""), field, spec.get("name", "this GPU")
    ).strip()
    return capped


def cap_mig(entry: Dict[str, Any], facts: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A speed verdict on a GPU in MIG mode measured one MIG slice, not the GPU its spec row describes."""
    if (facts or {}).get("mig_mode") != "enabled" or entry.get("peak") is None:
        return entry
    capped = dict(entry)
    capped["mig"] = True
    if capped["status"] == "fail":
        capped["status"] = "warn"
    slices = len((facts or {}).get("mig_devices") or [])
    capped["reason"] = (
        "{} MIG mode is enabled on this GPU{}: the figure is one MIG instance's, so it is not judged against the"
        " whole GPU's spec (at most a warning); disable MIG to measure the GPU.".format(
            entry.get("reason", ""), f" ({slices} MIG devices)" if slices else ""
        ).strip()
    )
    return capped


def judge_gpu(
    raw_gpu: Dict[str, Any],
    facts: Optional[Dict[str, Any]],
    specs: List[Dict[str, Any]],
    thresholds: Dict[str, float],
) -> Dict[str, Any]:
    """Verdicts for every check of one GPU; `facts` is the matching gpu_info entry when known."""
    pci_id = (facts or {}).get("pci_device_id")
    name = (facts or {}).get("name") or raw_gpu.get("name")
    spec = lookup_spec(specs, pci_id, name)
    link = link_for(facts, spec)
    checks = {
        check: cap_mig(cap_unverified(check, judge_check(check, raw, spec, link, thresholds), spec, link), facts)
        for check, raw in raw_gpu.get("checks", {}).items()
    }
    return {
        "index": raw_gpu.get("index"),
        "name": name,
        "pci_bus_id": (facts or {}).get("pci_bus_id") or raw_gpu.get("pci_bus_id_short"),
        "pci_device_id": pci_id,
        "compute_capability": raw_gpu.get("compute_capability") or (facts or {}).get("compute_capability"),
        "spec": {"name": spec.get("name"), "source": spec.get("source")} if spec else None,
        "link": link,
        "checks": checks,
        "verdict": worst(c["status"] for c in checks.values()),
    }


def judge_host(gpus: List[Dict[str, Any]], thresholds: Dict[str, float]) -> Dict[str, Dict[str, Any]]:
    """One line per check for the host: the slowest GPU's figure, worst status, spread across GPUs."""
    summary: Dict[str, Dict[str, Any]] = {}
    names: List[str] = []
    for gpu in gpus:
        names.extend(c for c in gpu["checks"] if c not in names)
    for check in names:
        rows = [(g["index"], g["checks"][check]) for g in gpus if check in g["checks"]]
        status = worst(r["status"] for _i, r in rows)
        measured = [(i, r) for i, r in rows if isinstance(r.get("value"), (int, float))]
        entry: Dict[str, Any] = {"status": status, "gpus": len(rows)}
        if measured:
            slow_index, slow = min(measured, key=lambda item: item[1]["value"])
            fastest = max(r["value"] for _i, r in measured)
            spread = (fastest - slow["value"]) / fastest * 100.0 if fastest > 0 else 0.0
            entry.update(
                {
                    "value": slow["value"],
                    "unit": slow.get("unit"),
                    "fraction": slow.get("fraction"),
                    "peak": slow.get("peak"),
                    "sustained": slow.get("sustained"),
                    "sustained_fraction": slow.get("sustained_fraction"),
                    "slowest_gpu": slow_index,
                    "spread_pct": round(spread, 2),
                }
            )
            reasons = [slow.get("reason", "")]
            if len(measured) > 1 and spread >= thresholds["spread_pct"]:
                entry["spread_flagged"] = True
                reasons.append(
                    "GPUs differ by {:.1f} % (flagged at {:.1f} %).".format(spread, thresholds["spread_pct"])
                )
                if status == "pass":
                    entry["status"] = "warn"
            entry["reason"] = " ".join(r for r in reasons if r)
            if any(r.get("spec_unverified") for _i, r in rows):
                entry["spec_unverified"] = True
        else:
            entry["reason"] = rows[0][1].get("reason", "") if rows else ""
        summary[check] = entry
    return summary


def compare_figures(current: Dict[str, Any], previous: Dict[str, Any], pct: float) -> List[Dict[str, Any]]:
    """Figures (higher is better) that dropped by more than `pct` percent since `previous`."""
    regressions = []
    for key, now in sorted(current.items()):
        before = previous.get(key)
        if not isinstance(now, (int, float)) or not isinstance(before, (int, float)) or before <= 0:
            continue
        change = (now - before) / before * 100.0
        if change < -pct:
            regressions.append({"figure": key, "previous": before, "current": now, "change_pct": round(change, 2)})
    return regressions
