# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of module input that an argument_spec cannot express, shared by the modules.

Every check is a pure function that returns error sentences (what was given, what is expected
and how to fix it), an empty list when the input is fine. Modules run them before they read,
write or run anything and fail with all the sentences at once.
"""

from __future__ import annotations

import datetime
import math
import os
import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence

VERDICTS = ("pass", "warn", "fail", "skip")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TIMESTAMP = re.compile(r"^\d{8}T\d{6}Z$")
RECORD_MODULES = (
    "gpu_info",
    "gpu_smoke",
    "xla_smoke",
    "trt_smoke",
    "lib_doctor",
    "fabric_info",
    "multigpu_smoke",
    "dcgm_diag",
)


class Range(NamedTuple):
    """Accepted values of a number: low to high, what it counts, and whether low itself is allowed."""

    low: float
    high: float
    what: str
    low_open: bool = False
    integer: bool = False


def show(value: Any) -> str:
    """A value as the user wrote it, short: 'text', 4, 0.5, nan, a list."""
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "null"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (int, str)):
        return repr(value) if isinstance(value, str) else str(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def kind(value: Any) -> str:
    """The JSON name of a value's type, for 'is a list, not a dict' sentences."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a dict"
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bound(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def expected(limits: Range, hint: str = "") -> str:
    """'an integer from 1 to 4096 (CPU cores; default 8)' for a range and an optional hint."""
    kind_text = "an integer" if limits.integer else "a number"
    low, high = _bound(limits.low), _bound(limits.high)
    span = f"above {low} and at most {high}" if limits.low_open else f"from {low} to {high}"
    notes = "; ".join(n for n in (limits.what, hint) if n)
    return f"{kind_text} {span}" + (f" ({notes})" if notes else "")


def number(name: str, value: Any, limits: Range, hint: str = "") -> List[str]:
    """[] when value is a finite number within limits (None means unset); else one sentence."""
    if value is None:
        return []
    want = expected(limits, hint)
    if not is_number(value):
        return [f"{name}={show(value)} is {kind(value)}, not a number; set it to {want}."]
    if not math.isfinite(value):
        return [f"{name}={show(value)} is not a finite number; set it to {want}."]
    too_low = value <= limits.low if limits.low_open else value < limits.low
    if too_low or value > limits.high:
        return [f"{name}={show(value)} is out of range; set it to {want}."]
    return []


def numbers(params: Mapping[str, Any], limits: Mapping[str, Range]) -> List[str]:
    """number() over several options; each name is looked up in params."""
    problems: List[str] = []
    for name, rng in limits.items():
        problems += number(name, params.get(name), rng)
    return problems


def ordered(
    low_name: str, low: float, high_name: str, high: float, *, defaults: Sequence[float], meaning: str
) -> List[str]:
    """[] when low <= high; else a sentence naming both values and their defaults."""
    if low <= high:
        return []
    return [
        f"{low_name}={_bound(low)} is above {high_name}={_bound(high)}, {meaning}; set {low_name} at or below "
        f"{high_name} (defaults {_bound(defaults[0])} and {_bound(defaults[1])})."
    ]


def dest_file(name: str, path: Optional[str], example: str) -> List[str]:
    """[] when path is unset or can be a file; a sentence when it is an existing directory or empty."""
    if path is None:
        return []
    if not str(path).strip():
        return [f"{name} is empty; give a file path such as {example}, or leave it out."]
    if os.path.isdir(path):
        return [f"{name}={show(path)} is a directory; give the path of a file in it, such as {example}."]
    return []


def directory(name: str, path: Optional[str], example: str) -> List[str]:
    """[] when path is a directory or does not exist yet; a sentence when it is empty or something else."""
    if path is None or not str(path).strip():
        return [f"{name} is empty; give a directory such as {example}."]
    if os.path.lexists(path) and not os.path.isdir(path):
        return [f"{name}={show(path)} exists and is not a directory; point {name} at a directory such as {example}."]
    return []


def host_names(name: str, hosts: Sequence[Any]) -> List[str]:
    """Inventory names that can be path components of a reports directory, each listed once."""
    problems: List[str] = []
    if not hosts:
        return [f'{name} is empty; list the hosts to report on, e.g. {name}: "{{{{ ansible_play_hosts }}}}".']
    seen = set()
    for host in hosts:
        text = str(host)
        if not text.strip():
            problems.append(f"{name} has an empty entry; remove it or give an inventory host name.")
        elif text != text.strip():
            problems.append(
                f"{name} entry {show(text)} has spaces around it; write {name} as a YAML list "
                f"([h1, h2]) or a comma list without spaces (h1,h2)."
            )
        elif text in (".", "..") or "/" in text or "\0" in text:
            problems.append(
                f"{name} entry {show(text)} is not a host name (it would leave the reports directory); "
                "list inventory host names."
            )
        elif text in seen:
            problems.append(f"{name} lists {show(text)} twice; list each host once.")
        seen.add(text)
    return problems


def timestamp(name: str, value: Optional[str]) -> List[str]:
    """[] when value is unset or a real UTC time written YYYYMMDDTHHMMSSZ."""
    if value is None:
        return []
    fix = "write it as YYYYMMDDTHHMMSSZ (e.g. 20261130T090000Z) or leave it out for now"
    if not TIMESTAMP.match(str(value)):
        return [f"{name}={show(value)} is not a UTC timestamp; {fix}."]
    try:
        datetime.datetime.strptime(str(value), "%Y%m%dT%H%M%SZ")
    except ValueError:
        return [f"{name}={show(value)} is not a real date and time; {fix}."]
    return []


def _checks(where: str, result: Mapping[str, Any], numeric: Sequence[str]) -> List[str]:
    checks = result.get("checks")
    if checks is None:
        return []
    if not isinstance(checks, dict):
        return [f"{where}.checks is {kind(checks)}, not a dict of check name to result"]
    problems: List[str] = []
    for check, entry in checks.items():
        if not isinstance(entry, dict):
            problems.append(f"{where}.checks.{check} is {kind(entry)}, not a dict")
            continue
        for key in numeric:
            value = entry.get(key)
            if value is not None and not (is_number(value) and math.isfinite(value)):
                problems.append(f"{where}.checks.{check}.{key}={show(value)} is not a finite number")
        status = entry.get("status")
        if status is not None and status not in VERDICTS:
            problems.append(f"{where}.checks.{check}.status={show(status)} is none of {', '.join(VERDICTS)}")
    return problems


# Numbers of each module's checks that the record and the report compute with.
CHECK_NUMBERS = {
    "gpu_smoke": ("value", "fraction", "speedup", "sustained"),
    "xla_smoke": ("steady_xla_s", "speedup"),
    "trt_smoke": ("latency_ms", "speedup"),
    "lib_doctor": (),
    "fabric_info": (),
    "multigpu_smoke": ("value", "fraction"),
    "dcgm_diag": (),
}


def module_results(where: str, results: Mapping[str, Any]) -> List[str]:
    """Shape problems of the module results a host record is built from (no fix; callers add it)."""
    problems: List[str] = []
    for name, result in results.items():
        if name not in RECORD_MODULES:
            problems.append(f"{where} has {show(name)}, which is none of {', '.join(RECORD_MODULES)}")
            continue
        if result is None or (isinstance(result, dict) and (not result or result.get("skipped"))):
            continue
        if not isinstance(result, dict):
            problems.append(f"{where}.{name} is {kind(result)}, not the dict the module returned")
            continue
        verdict = result.get("verdict")
        if verdict is not None and verdict not in VERDICTS:
            problems.append(f"{where}.{name}.verdict={show(verdict)} is none of {', '.join(VERDICTS)}")
        if name == "gpu_info":
            count = result.get("count")
            if count is not None and not (isinstance(count, int) and not isinstance(count, bool) and count >= 0):
                problems.append(f"{where}.{name}.count={show(count)} is not a GPU count")
            continue
        problems += _checks(f"{where}.{name}", result, CHECK_NUMBERS[name])
    return problems


def host_record(where: str, record: Any, host: str) -> List[str]:
    """Shape problems of a stored host record (latest.json) that the fleet report reads."""
    if not isinstance(record, dict):
        return [f"{where} holds {kind(record)}, not a host record (a JSON object with host and verdict)"]
    if not record:
        return [f"{where} holds an empty object, not a host record (a JSON object with host and verdict)"]
    problems: List[str] = []
    if "host" not in record:
        problems.append(f"{where} has no host")
    elif record["host"] != host:
        problems.append(f"{where} is the record of host {show(record['host'])}, not of {show(host)}")
    if "verdict" not in record:
        problems.append(f"{where} has no verdict")
    elif record["verdict"] not in VERDICTS:
        problems.append(f"{where} has verdict={show(record['verdict'])}, none of {', '.join(VERDICTS)}")
    figures = record.get("figures", {})
    if not isinstance(figures, dict):
        problems.append(f"{where} has figures that are {kind(figures)}, not a dict of name to number")
    else:
        bad = sorted(str(k) for k, v in figures.items() if not (is_number(v) and math.isfinite(v)))
        if bad:
            problems.append(f"{where} has figures that are not finite numbers ({', '.join(bad)})")
    for key in ("verdicts", "modules"):
        value = record.get(key, {})
        if value is not None and not isinstance(value, dict):
            problems.append(f"{where} has {key} that are {kind(value)}, not a dict")
    if isinstance(record.get("modules"), dict):
        problems += module_results(f"{where} modules", record["modules"])
    for key in ("flags", "fleet_flags"):
        value = record.get(key, [])
        if not isinstance(value, list):
            problems.append(f"{where} has {key} that are {kind(value)}, not a list")
    return problems


def env_names(name: str, env: Mapping[Any, Any]) -> List[str]:
    """Keys that are shell variable names and scalar values on one line, for `export KEY=value`."""
    problems: List[str] = []
    for key, value in env.items():
        if not isinstance(key, str) or not ENV_NAME.match(key):
            problems.append(
                f"{name} key {show(key)} is not an environment variable name; use letters, digits and "
                "underscores, not starting with a digit (e.g. TF_CUDA_PATHS)."
            )
        elif value is None or isinstance(value, (dict, list, tuple)):
            problems.append(f"{name}.{key} is {kind(value)}; give a string, number or boolean (configure reads text).")
        elif any(ch in str(value) for ch in "\n\r\0"):
            problems.append(f"{name}.{key}={show(value)} spans several lines; give it on one line.")
    return problems


def fix_for(problems: Sequence[str], fix: str) -> List[str]:
    """Shape problems turned into sentences that end with the fix."""
    return [f"{problem}; {fix}." for problem in problems]


def summary(problems: Sequence[str]) -> str:
    """One message for one or more problems."""
    if len(problems) == 1:
        return problems[0]
    return "{} problems with the input: {}".format(
        len(problems), " ".join(f"({i}) {p}" for i, p in enumerate(problems, 1))
    )


def fail_on(module: Any, problems: Sequence[str]) -> None:
    """Fail the module with every problem found, before it touches anything."""
    if problems:
        module.fail_json(msg=summary(problems), problems=list(problems))


def thresholds_problems(
    merged: Mapping[str, float], defaults: Mapping[str, float], limits: Mapping[str, Range], pairs: Dict[str, str]
) -> List[str]:
    """Every threshold within its range, and each warn fraction at or below its pass fraction."""
    problems: List[str] = []
    for name, rng in limits.items():
        problems += number(f"thresholds.{name}", merged.get(name), rng, f"default {_bound(defaults[name])}")
    if problems:
        return problems
    for warn, passing in pairs.items():
        problems += ordered(
            f"thresholds.{warn}",
            merged[warn],
            f"thresholds.{passing}",
            merged[passing],
            defaults=(defaults[warn], defaults[passing]),
            meaning="so a check would fail before it could warn",
        )
    return problems


PEAK_KINDS = ("fp32", "tf32", "bf16", "fp16")
PCI_ID = re.compile(r"^[0-9a-fA-F]{4}$")


def gpu_rows(name: str, rows: Sequence[Any]) -> List[str]:
    """GPU spec rows given to merge over the table: a name or PCI ids, and positive finite peaks."""
    problems: List[str] = []
    for position, row in enumerate(rows):
        where = f"{name}[{position}]"
        if not isinstance(row, dict):
            problems.append(f"{where} is {kind(row)}; give a dict with name or pci_device_ids and the peaks.")
            continue
        ids = row.get("pci_device_ids")
        if ids is not None and (not isinstance(ids, list) or not all(PCI_ID.match(str(i)) for i in ids)):
            problems.append(
                f"{where}.pci_device_ids={show(ids)} is not a list of PCI device ids; write each as 4 hex "
                "digits, e.g. ['2330']."
            )
        if not row.get("name") and not ids:
            problems.append(f"{where} has neither name nor pci_device_ids; give one so the row matches a GPU.")
        peaks = row.get("peak_tflops")
        if peaks is not None:
            if not isinstance(peaks, dict):
                problems.append(
                    f"{where}.peak_tflops is {kind(peaks)}; give a dict of {', '.join(PEAK_KINDS)} to TFLOP/s."
                )
            else:
                for key, value in peaks.items():
                    if key not in PEAK_KINDS:
                        problems.append(
                            f"{where}.peak_tflops has {show(key)}, none of {', '.join(PEAK_KINDS)}; rename or drop it."
                        )
                    else:
                        problems += number(f"{where}.peak_tflops.{key}", value, Range(0, 100000, "TFLOP/s", True))
        problems += number(f"{where}.mem_bw_gbs", row.get("mem_bw_gbs"), Range(0, 100000, "GB/s", True))
        problems += number(f"{where}.pcie_gen", row.get("pcie_gen"), Range(1, 7, "PCIe generation", integer=True))
    return problems


VERSION_TEXT = re.compile(r"^[0-9]+(\.[0-9]+){0,3}$")


def absolute_paths(name: str, paths: Sequence[Any], example: str) -> List[str]:
    """[] when every entry is an absolute path; a sentence per entry that is not."""
    return [
        f"{name} entry {show(path)} is not an absolute path; give it as {example}."
        for path in paths or []
        if not str(path).startswith("/")
    ]


def stack_versions(name: str, stack: Mapping[str, Any], keys: Sequence[str]) -> List[str]:
    """[] when each of `keys` in stack is unset or a dotted version such as 12.5 or 9.3.0."""
    problems: List[str] = []
    for key in keys:
        value = stack.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, bool) or not VERSION_TEXT.match(str(value)):
            problems.append(
                f"{name}.{key}={show(value)} is not a version; give it as digits and dots (e.g. 12.5 or 9.3.0), "
                "or pass dlstack_stack unchanged."
            )
    return problems
