# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-host records of a verify run, comparison with earlier runs and the fleet, and the fleet report.

A host record is a plain dict: host, timestamp, verdict, modules (the four module results),
figures (flat name -> number, higher is better), regressions, flags, and the installed stack
(driver, CUDA, cuDNN, TensorRT, TensorFlow, Python, numpy) with where each version came from. The
fleet report is written as Markdown and as one self-contained HTML page (inline CSS and SVG, nothing
fetched); every value a host provided is escaped in the page.
"""

from __future__ import annotations

import html
import statistics
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpulab.dlstack.plugins.module_utils._validate import RECORD_MODULES
from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import RANK, compare_figures, worst

# The modules a host record holds, in report order: the one list verify_store checks records against.
MODULES = RECORD_MODULES
CHART_CHECKS = ("matmul_fp32", "matmul_tf32", "matmul_bf16", "matmul_fp16", "memory_bw", "h2d", "d2h")
COLOURS = {"pass": "#2e7d32", "warn": "#ef6c00", "fail": "#c62828", "skip": "#9e9e9e"}
# Stack columns of the report: record key and heading.
STACK_COLUMNS = (
    ("driver", "Driver"),
    ("cuda", "CUDA"),
    ("cudnn", "cuDNN"),
    ("tensorrt", "TensorRT"),
    ("tensorflow", "TF"),
    ("python", "Python"),
    ("numpy", "numpy"),
)
ABSENT = "\u2014"


def figures(modules: Dict[str, Any]) -> Dict[str, float]:
    """Flat figures of one run where higher is better: gpu_smoke checks, XLA and TensorRT rates."""
    found: Dict[str, float] = {}
    for check, entry in ((modules.get("gpu_smoke") or {}).get("checks") or {}).items():
        value = entry.get("value")
        if isinstance(value, (int, float)) and entry.get("status") != "skip":
            found[f"gpu_smoke.{check}"] = float(value)
    xla = ((modules.get("xla_smoke") or {}).get("checks") or {}).get("xla") or {}
    if isinstance(xla.get("steady_xla_s"), (int, float)) and xla["steady_xla_s"] > 0:
        found["xla_smoke.calls_per_s"] = 1.0 / xla["steady_xla_s"]
    for precision, entry in ((modules.get("trt_smoke") or {}).get("checks") or {}).items():
        latency = entry.get("latency_ms")
        if isinstance(latency, (int, float)) and latency > 0:
            found[f"trt_smoke.{precision}_calls_per_s"] = 1000.0 / latency
    for check, entry in ((modules.get("multigpu_smoke") or {}).get("checks") or {}).items():
        value = entry.get("value")
        if isinstance(value, (int, float)) and entry.get("status") != "skip":
            found[f"multigpu_smoke.{check}"] = float(value)
    return found


def measured_stack(modules: Dict[str, Any]) -> Dict[str, str]:
    """Versions the verification modules reported: the driver gpu_info read, what the workloads imported."""
    found: Dict[str, str] = {}
    info = modules.get("gpu_info") or {}
    smoke = modules.get("gpu_smoke") or {}
    driver = info.get("driver_version") or (smoke.get("gpu_facts") or {}).get("driver_version")
    if driver:
        found["driver"] = str(driver)
    for name in ("gpu_smoke", "trt_smoke", "xla_smoke"):
        result = modules.get(name) or {}
        versions = dict(result.get("versions") or {})
        versions["python"] = result.get("python_version")
        for key, _title in STACK_COLUMNS:
            value = versions.get(key)
            if key not in found and isinstance(value, (str, int, float)) and str(value):
                found[key] = str(value)
    return found


def fact_stacks(local_facts: Optional[Dict[str, Any]]) -> List[Tuple[str, Dict[str, Any]]]:
    """(name, stack) pairs from the host's dlstack* local facts, the common role's dlstack fact last.

    A fact may hold the stack itself or under a `stack` key; anything else is ignored.
    """
    pairs: List[Tuple[str, Dict[str, Any]]] = []
    facts = local_facts if isinstance(local_facts, dict) else {}
    names = sorted((n for n in facts if str(n).startswith("dlstack")), key=lambda n: (n == "dlstack", n))
    for name in names:
        fact = facts[name]
        if not isinstance(fact, dict):
            continue
        inner = fact.get("stack")
        pairs.append((f"local fact {name}", inner if isinstance(inner, dict) else fact))
    return pairs


def installed_stack(
    modules: Dict[str, Any], recorded: Optional[List[Tuple[str, Dict[str, Any]]]] = None
) -> Dict[str, Dict[str, Optional[str]]]:
    """Each stack column's version and its source: what verify measured, else the first recorded stack with it."""
    measured = measured_stack(modules)
    stack: Dict[str, Optional[str]] = {}
    sources: Dict[str, Optional[str]] = {}
    for key, _title in STACK_COLUMNS:
        stack[key], sources[key] = None, None
        if key in measured:
            stack[key], sources[key] = measured[key], "verify"
            continue
        for source, values in recorded or []:
            value = (values.get("driver_version") or values.get("driver")) if key == "driver" else values.get(key)
            if isinstance(value, (str, int, float)) and str(value):
                stack[key], sources[key] = str(value), source
                break
    return {"stack": stack, "sources": sources}


def module_verdict(name: str, result: Optional[Dict[str, Any]]) -> str:
    if not result:
        return "skip"
    if result.get("verdict"):
        return str(result["verdict"])
    if name == "gpu_info":
        # Reading facts verifies nothing by itself: with no GPU seen there is nothing to pass.
        if result.get("reboot_required") or result.get("driver_library_mismatch"):
            return "warn"
        return "pass" if result.get("gpus") or result.get("count") else "skip"
    return str(result.get("verdict") or "skip")


def host_record(
    host: str,
    timestamp: str,
    modules: Dict[str, Any],
    previous: Optional[Dict[str, Any]],
    regression_pct: float,
    *,
    recorded: Optional[List[Tuple[str, Dict[str, Any]]]] = None,
) -> Dict[str, Any]:
    """The record stored for one host, compared with that host's previous record.

    `recorded` lists (source, stack) pairs the stack columns fall back to, best first.
    """
    record: Dict[str, Any] = {
        "host": host,
        "timestamp": timestamp,
        "modules": {name: modules.get(name) for name in MODULES if modules.get(name) is not None},
        "verdicts": {
            name: module_verdict(name, modules.get(name)) for name in MODULES if modules.get(name) is not None
        },
        "figures": figures(modules),
        "flags": [],
    }
    found = installed_stack(modules, recorded)
    record["stack"], record["stack_sources"] = found["stack"], found["sources"]
    record["regressions"] = []
    if previous:
        record["previous_timestamp"] = previous.get("timestamp")
        record["regressions"] = compare_figures(record["figures"], previous.get("figures") or {}, regression_pct)
    for reg in record["regressions"]:
        record["flags"].append(
            "{} fell {:.1f} % since {} ({:.4g} -> {:.4g}).".format(
                reg["figure"], -reg["change_pct"], record.get("previous_timestamp"), reg["previous"], reg["current"]
            )
        )
    record["verdict"] = worst(record["verdicts"].values())
    if record["regressions"] and record["verdict"] == "pass":
        record["verdict"] = "warn"
    return record


def fleet_stats(records: List[Dict[str, Any]], slow_pct: float) -> Dict[str, Any]:
    """Median of every figure over the fleet and the hosts more than slow_pct below it."""
    names = sorted({name for r in records for name in r.get("figures", {})})
    medians: Dict[str, float] = {}
    slow: List[Dict[str, Any]] = []
    for name in names:
        values = [r["figures"][name] for r in records if name in r.get("figures", {})]
        median = statistics.median(values)
        medians[name] = median
        if len(values) < 2 or median <= 0:
            continue
        for r in records:
            value = r.get("figures", {}).get(name)
            if value is None:
                continue
            below = (median - value) / median * 100.0
            if below > slow_pct:
                slow.append(
                    {"host": r["host"], "figure": name, "value": value, "median": median, "below_pct": round(below, 2)}
                )
    return {"medians": medians, "slow": slow, "hosts": len(records), "slow_pct": slow_pct}


def apply_fleet(records: List[Dict[str, Any]], stats: Dict[str, Any]) -> None:
    """Flag each host that is slower than the fleet median; a passing host becomes warn."""
    by_host = {r["host"]: r for r in records}
    for item in stats["slow"]:
        record = by_host[item["host"]]
        record.setdefault("fleet_flags", []).append(
            "{} is {:.1f} % below the fleet median ({:.4g} vs {:.4g}).".format(
                item["figure"], item["below_pct"], item["value"], item["median"]
            )
        )
        if record.get("verdict") == "pass":
            record["verdict"] = "warn"


def _fmt(value: Any, digits: int = 4) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if value is None:
        return "-"
    return str(value)


def summary_lines(record: Dict[str, Any]) -> List[str]:
    """A few readable lines for one host: overall verdict, then each check with figure and verdict."""
    lines = ["{}: {}".format(record["host"], str(record["verdict"]).upper())]
    if isinstance(record.get("stack"), dict):
        shown = zip((title for _key, title in STACK_COLUMNS), stack_cells(record))
        lines.append("  stack: " + ", ".join(f"{title} {value}" for title, value in shown))
    info = (record.get("modules") or {}).get("gpu_info") or {}
    if info:
        count = info.get("count") or 0
        why = "" if count else " ({})".format(info.get("reason") or "no GPU")
        lines.append("  gpu_info: {} GPU(s), driver {}{}".format(count, info.get("driver_version") or "none", why))
    for name in ("gpu_smoke", "xla_smoke", "trt_smoke", "fabric_info", "multigpu_smoke", "dcgm_diag"):
        result = (record.get("modules") or {}).get(name)
        if not result:
            continue
        checks = result.get("checks") or {}
        if not checks:
            lines.append("  {}: {} ({})".format(name, result.get("verdict"), result.get("reason") or "nothing ran"))
            continue
        for check, entry in checks.items():
            lines.append(f"  {name}.{check}: {_check_text(entry)}")
    lines.extend(doctor_lines((record.get("modules") or {}).get("lib_doctor")))
    lines.extend(f"  regression: {flag}" for flag in record.get("flags", []))
    lines.extend(f"  fleet: {flag}" for flag in record.get("fleet_flags", []))
    return lines


def doctor_lines(result: Optional[Dict[str, Any]]) -> List[str]:
    """Per environment and kernel: what each library resolves to, then each problem with its fix."""
    if not result:
        return []
    envs = result.get("environments") or []
    if not envs:
        return ["  lib_doctor: {} ({})".format(result.get("verdict"), result.get("reason") or "nothing examined")]
    lines: List[str] = []
    for env in envs:
        head = "  lib_doctor[{} {}]: {}".format(env.get("kind"), env.get("name"), env.get("verdict"))
        if env.get("error"):
            lines.append(f"{head}, {env['error']}")
            continue
        found = []
        for lib, entry in (env.get("libraries") or {}).items():
            if entry.get("path"):
                where = entry.get("wheel") or entry.get("via")
                found.append("{} {} ({})".format(lib, entry.get("version") or "?", where))
            elif entry.get("soname"):
                found.append(f"{lib} missing")
        lines.append(head + (", " + "; ".join(found) if found else ""))
    lines.extend(f"    {flag}" for flag in result.get("flags") or [])
    return lines


def _check_text(entry: Dict[str, Any]) -> str:
    parts = [str(entry.get("status"))]
    if entry.get("value") is not None:
        parts.append("{} {}".format(_fmt(entry["value"]), entry.get("unit") or ""))
    if entry.get("fraction") is not None:
        parts.append("{:.0f} % of spec".format(entry["fraction"] * 100))
    if entry.get("speedup") is not None:
        parts.append("speedup {:.2f}x".format(entry["speedup"]))
    if entry.get("status") in ("skip", "fail", "warn") and entry.get("reason"):
        parts.append(str(entry["reason"]))
    return ", ".join(p.strip() for p in parts if p.strip())


STACK_NOTE = (
    "Stack: the versions the checks reported (the driver gpu_info read, what the workloads imported), "
    "else the host's recorded stack (local facts); \u2014 means unknown."
)


def stack_cells(record: Dict[str, Any]) -> List[str]:
    """The stack columns of one host as text, "\u2014" where unknown (also for records from older runs)."""
    found = record.get("stack")
    stack: Dict[str, Any] = found if isinstance(found, dict) else {}
    return [str(stack.get(key)) if stack.get(key) not in (None, "") else ABSENT for key, _title in STACK_COLUMNS]


def render_markdown(records: List[Dict[str, Any]], stats: Dict[str, Any], generated: str) -> str:
    out = ["# gpulab.dlstack fleet verification", "", f"Generated {generated} for {len(records)} host(s).", ""]
    heads = ["Host", "Verdict", "GPUs", *MODULES, *(title for _key, title in STACK_COLUMNS), "Flags"]
    out += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for r in records:
        info = (r.get("modules") or {}).get("gpu_info") or {}
        flags = len(r.get("flags", [])) + len(r.get("fleet_flags", []))
        verdicts = [r.get("verdicts", {}).get(m, "-") for m in MODULES]
        cells = [r["host"], r.get("verdict"), info.get("count", "-"), *verdicts, *stack_cells(r), flags]
        out.append("| " + " | ".join(_md(c) for c in cells) + " |")
    out += ["", STACK_NOTE]
    out += [
        "",
        "## Fleet medians",
        "",
        "| Figure | Median | Hosts below by more than {:g} % |".format(stats["slow_pct"]),
        "|---|---|---|",
    ]
    for name, median in stats["medians"].items():
        slow = sorted({s["host"] for s in stats["slow"] if s["figure"] == name})
        out.append("| {} | {} | {} |".format(name, _fmt(median), ", ".join(_md(h) for h in slow) or "-"))
    for r in records:
        out += ["", "## {}".format(_md(r["host"])), "", "```", *summary_lines(r), "```"]
    return "\n".join(out) + "\n"


def _md(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def chart_svg(records: List[Dict[str, Any]]) -> str:
    """Grouped bars: each host's gpu_smoke figures as a fraction of spec, with 70 % and 100 % lines."""
    rows = []
    for r in records:
        checks = (((r.get("modules") or {}).get("gpu_smoke") or {}).get("checks")) or {}
        rows.append((r["host"], {c: checks.get(c) or {} for c in CHART_CHECKS}))
    bar_h, gap, label_w, top, scale_max = 10, 14, 150, 30, 1.2
    group_h = bar_h * len(CHART_CHECKS) + gap
    width, plot_w = 760, 560
    height = top + group_h * max(len(rows), 1) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        'aria-label="Fraction of spec peak per host and check">'
    ]
    for mark in (0.0, 0.5, 0.7, 1.0):
        x = label_w + plot_w * mark / scale_max
        solid = mark in (0.0, 1.0)
        stroke, dash = ("#333", "") if solid else ("#999", "4 3")
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 10}" x2="{x:.1f}" y2="{height - 30}" stroke="{stroke}" '
            f'stroke-dasharray="{dash}"/>'
        )
        parts.append(f'<text x="{x:.1f}" y="{top - 14}" font-size="10" text-anchor="middle">{mark * 100:.0f} %</text>')
    for position, (host, checks) in enumerate(rows):
        y0 = top + position * group_h
        name = html.escape(str(host))
        parts.append(f'<text x="{label_w - 8}" y="{y0 + group_h // 2}" font-size="12" text-anchor="end">{name}</text>')
        for offset, check in enumerate(CHART_CHECKS):
            entry = checks[check]
            frac = entry.get("fraction")
            y = y0 + offset * bar_h
            if not isinstance(frac, (int, float)):
                shown = html.escape(str(entry.get("status") or "not run"))
                parts.append(
                    f'<text x="{label_w + 4}" y="{y + bar_h - 2}" font-size="8" fill="#777">{check}: {shown}</text>'
                )
                continue
            w = plot_w * min(float(frac), scale_max) / scale_max
            colour = COLOURS.get(str(entry.get("status")), "#9e9e9e")
            shown = html.escape(f"{_fmt(entry.get('value'))} {entry.get('unit') or ''}")
            title = f"{name} {check}: {shown}"
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{colour}">'
                f"<title>{title}, {frac * 100:.0f} % of spec</title></rect>"
            )
            parts.append(f'<text x="{label_w + w + 3:.1f}" y="{y + bar_h - 2}" font-size="8">{check}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(records: List[Dict[str, Any]], stats: Dict[str, Any], generated: str) -> str:
    style = (
        "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        ".pass{color:#2e7d32}.warn{color:#ef6c00}.fail{color:#c62828}.skip{color:#757575}"
        "pre{background:#f6f6f6;padding:8px}"
    )
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>gpulab.dlstack fleet verification</title>',
        f"<style>{style}</style></head><body>",
        "<h1>gpulab.dlstack fleet verification</h1>",
        f"<p>Generated {html.escape(generated)} for {len(records)} host(s).</p>",
        "<table><tr><th>Host</th><th>Verdict</th><th>GPUs</th>"
        + "".join(f"<th>{m}</th>" for m in MODULES)
        + "".join(f"<th>{title}</th>" for _key, title in STACK_COLUMNS)
        + "</tr>",
    ]
    for r in records:
        info = (r.get("modules") or {}).get("gpu_info") or {}
        verdicts = "".join(_verdict_cell(r.get("verdicts", {}).get(m, "skip")) for m in MODULES)
        stack = "".join(f"<td>{html.escape(cell)}</td>" for cell in stack_cells(r))
        out.append(
            "<tr><td>{}</td>{}<td>{}</td>{}{}</tr>".format(
                html.escape(str(r["host"])),
                _verdict_cell(r.get("verdict")),
                html.escape(str(info.get("count", "-"))),
                verdicts,
                stack,
            )
        )
    out.append("</table>")
    out.append(f"<p>{html.escape(STACK_NOTE)}</p>")
    out.append("<h2>Fraction of spec peak (gpu_smoke, slowest GPU per host)</h2>")
    out.append(chart_svg(records))
    out.append("<h2>Fleet medians</h2><table><tr><th>Figure</th><th>Median</th><th>Slow hosts</th></tr>")
    for name, median in stats["medians"].items():
        slow = sorted({s["host"] for s in stats["slow"] if s["figure"] == name})
        out.append(
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                html.escape(name), _fmt(median), html.escape(", ".join(slow)) or "-"
            )
        )
    out.append("</table>")
    for r in records:
        out.append(
            "<h2>{}</h2><pre>{}</pre>".format(html.escape(str(r["host"])), html.escape("\n".join(summary_lines(r))))
        )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _verdict_cell(verdict: Any) -> str:
    """A table cell for a verdict: escaped text, coloured only for the four known verdicts."""
    text = str(verdict)
    css = text if text in RANK else "unknown"
    return f'<td class="{css}">{html.escape(text)}</td>'


def fleet_verdict(records: List[Dict[str, Any]]) -> str:
    return worst(r.get("verdict", "skip") for r in records)


def should_fail(verdict: str, fail_on: str) -> bool:
    """Whether a verdict stops the play: fail_on is fail, warn or never."""
    if fail_on == "never":
        return False
    return RANK.get(verdict, 0) >= RANK[fail_on]
