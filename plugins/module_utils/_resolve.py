# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resolve a requested deep-learning stack against the compatibility matrix.

Pure functions over the rows in ``_matrix.py``: no I/O, no Ansible objects. The module
``stack_resolve``, the lookup ``stack`` and the filter ``resolve_stack`` all call
``resolve_stack``.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix

REQUEST_KEYS = (
    "tensorflow",
    "cuda",
    "cudnn",
    "tensorrt",
    "driver_version",
    "gpus",
    "python",
    "os",
    "build_from_source",
    "want_tensorrt",
    "want_xla",
    "overrides",
    "cpu_only",
    "compiler",
)

# Override tables: request key -> (matrix attribute, identifying field, required fields of a new row).
OVERRIDE_TABLES: Dict[str, Tuple[str, Optional[str], Tuple[str, ...]]] = {
    "tensorflow": (
        "TENSORFLOW",
        "version",
        ("version", "python", "compiler", "bazel", "cuda", "cudnn", "numpy", "era", "wheel_target"),
    ),
    "cuda": ("CUDA", "version", ("version", "driver_min", "min_sm", "max_sm")),
    "cudnn": ("CUDNN", "version", ("version", "cuda_min", "cuda_max")),
    "gpus": ("GPUS", "name", ("name", "compute_capability")),
    "os": ("OPERATING_SYSTEMS", "id", ("id", "python")),
    "compiler_conflicts": ("COMPILER_CONFLICTS", None, ("family",)),
}

_PYTHONS = [f"3.{minor}" for minor in range(6, 20)]

_OS_ALIASES = {"rocky": "rhel", "almalinux": "rhel", "centos": "rhel", "redhat": "rhel", "ol": "rhel"}

_ROW_DEFAULTS: Dict[str, Any] = {
    "bazel_range": None,
    "bazel_flags": [],
    "wheel_cuda": "system",
    "wheel_compute_capabilities": [],
    "tensorrt": None,
    "numpy_by_python": {},
}


# Request values that must be versions: key -> (pattern, example written the way the key expects it).
_VERSION_FORMS: Dict[str, Tuple[str, str]] = {
    "cuda": (r"^v?\d+\.\d+(\.\d+)?$", "'12.5' or '12.5.1'"),
    "cudnn": (r"^\d+(\.\d+){0,3}$", "'9.3' or '9.3.0'"),
    "tensorrt": (r"^\d+(\.\d+){0,3}$", "'8.6' or '8.6.1'"),
    "driver_version": (r"^\d{3}(\.\d+){1,2}$", "'535.261.03' or '570.26'"),
    "python": (r"^\d+\.\d+(\.\d+)?$", "'3.11'"),
}

# Override row fields with a fixed form, per table: field -> kind (see _field_problem).
_ROW_FORMS: Dict[str, Dict[str, str]] = {
    "tensorflow": {
        "python": "range",
        "cuda": "version",
        "cudnn": "version",
        "wheel_compute_capabilities": "codes",
    },
    "cuda": {
        "driver_min": "version",
        "driver_min_compat": "version",
        "full_driver_min": "version",
        "full": "version",
        "min_sm": "cc",
        "max_sm": "cc",
    },
    "cudnn": {"cuda_min": "version", "cuda_max": "version"},
    "gpus": {"compute_capability": "cc"},
    "os": {"python": "version"},
}
_FORM_HELP = {
    "version": "a version such as '12.5' or '535.54.03' (quote it in YAML)",
    "cc": "a compute capability such as '8.6' or '12.0' (quote it in YAML)",
    "range": "a [low, high] pair of Python versions such as ['3.10', '3.13']",
    "codes": "a list of sm_XY / compute_XY codes such as [sm_80, compute_90]",
}


class ResolveError(Exception):
    """The request cannot be satisfied; ``conflicts`` holds one sentence per problem, each with a fix."""

    def __init__(self, conflicts: List[str]) -> None:
        self.conflicts = list(conflicts)
        super().__init__(" ".join(self.conflicts))


def conflict_message(conflicts: List[str]) -> str:
    """One message listing every conflict, numbered."""
    count = len(conflicts)
    body = " ".join(f"({i}) {c}" for i, c in enumerate(conflicts, 1))
    plural = "" if count == 1 else "s"
    return f"The requested stack is impossible ({count} conflict{plural}): {body}"


def vtuple(version: Any) -> Tuple[int, ...]:
    """Turn '12.5.1', '570.26' or 'sm_86' style text into a comparable tuple of ints."""
    text = str(version).strip().lower()
    if text.startswith(("sm_", "compute_")):
        digits = text.split("_", 1)[1].rstrip("af")
        return (int(digits[:-1]), int(digits[-1])) if digits.isdigit() and len(digits) >= 2 else ()
    parts: List[int] = []
    for piece in text.lstrip("v").split("."):
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group(0)))
        if match.group(0) != piece:
            break
    return tuple(parts)


def _mm(version: Any) -> str:
    """Major.minor of a version string."""
    parts = vtuple(version)
    return ".".join(str(p) for p in parts[:2])


def _major(version: Any) -> int:
    parts = vtuple(version)
    return parts[0] if parts else -1


def _cmp_le(a: Any, b: Any) -> bool:
    """a <= b comparing only as many components as b gives ('9.4' <= '9' is True)."""
    ta, tb = vtuple(a), vtuple(b)
    return ta[: len(tb)] <= tb


def _cmp_ge(a: Any, b: Any) -> bool:
    ta, tb = vtuple(a), vtuple(b)
    return ta[: len(tb)] >= tb


def sm_label(cc: str) -> str:
    """'8.6' -> 'sm_86'."""
    major, minor = vtuple(cc)[:2]
    return f"sm_{major}{minor}"


def merged_matrix(overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, List[Dict[str, Any]]]:
    """Return copies of the matrix tables with user rows merged in (same key: fields replaced; new key: added).

    A new row may name ``based_on`` (an existing key) to start from a copy of that row.
    """
    tables: Dict[str, List[Dict[str, Any]]] = {
        name: copy.deepcopy(getattr(_matrix, attr)) for name, (attr, _key, _req) in OVERRIDE_TABLES.items()
    }
    if not overrides:
        return tables
    if not isinstance(overrides, Mapping):
        raise ResolveError([f"overrides must be a mapping of table name to a list of rows; got {overrides}."])
    conflicts: List[str] = []
    for table, rows in overrides.items():
        if table not in OVERRIDE_TABLES:
            conflicts.append(
                "overrides has an unknown table '{}'; use one of: {}.".format(table, ", ".join(sorted(OVERRIDE_TABLES)))
            )
            continue
        if not isinstance(rows, list):
            conflicts.append(f"overrides.{table} must be a list of rows (mappings); got {rows!r}.")
            continue
        _attr, key, required = OVERRIDE_TABLES[table]
        for row in rows:
            if not isinstance(row, Mapping):
                conflicts.append(f"overrides.{table} has a row that is not a mapping: {row!r}; give a mapping.")
                continue
            _merge_row(tables[table], row=dict(row), table=table, key=key, required=required, conflicts=conflicts)
    if conflicts:
        raise ResolveError(conflicts)
    return tables


def _merge_row(
    target: List[Dict[str, Any]],
    *,
    table: str,
    key: Optional[str],
    required: Tuple[str, ...],
    row: Dict[str, Any],
    conflicts: List[str],
) -> None:
    row.setdefault("source", "user override (dlstack_matrix_overrides)")
    if key is None:
        target.append(row)
        return
    if key not in row:
        conflicts.append(f"overrides.{table} row {row!r} lacks '{key}'; add it so the row can be matched.")
        return
    row[key] = str(row[key])
    for existing in target:
        if existing.get(key) == row[key]:
            bad = _row_problems(table, row, key)
            if bad:
                conflicts.extend(bad)
                return
            existing.update(row)
            return
    base_key = row.pop("based_on", None)
    if base_key is not None:
        base = next((r for r in target if r.get(key) == str(base_key)), None)
        if base is None:
            conflicts.append(
                f"overrides.{table} row '{row[key]}' is based_on '{base_key}', which is not in the matrix; "
                f"use an existing {key}."
            )
            return
        merged = copy.deepcopy(base)
        merged.update(row)
        row = merged
    missing = [f for f in required if f not in row]
    if missing:
        conflicts.append(
            "overrides.{} row '{}' lacks {}; add them or set based_on to an existing row.".format(
                table, row[key], ", ".join(missing)
            )
        )
        return
    bad = _row_problems(table, row, key)
    if bad:
        conflicts.extend(bad)
        return
    if table == "tensorflow":
        for field, default in _ROW_DEFAULTS.items():
            row.setdefault(field, copy.deepcopy(default))
    target.append(row)


def _field_problem(kind: str, value: Any) -> bool:
    """True when an override field does not have the form its kind asks for."""
    if kind == "version":
        return not re.match(r"^\d+(\.\d+){0,3}$", str(value))
    if kind == "cc":
        return not re.match(r"^\d{1,2}\.\d$", str(value))
    if kind == "range":
        return not (
            isinstance(value, (list, tuple))
            and len(value) == 2
            and all(re.match(r"^\d+\.\d+$", str(v)) for v in value)
            and vtuple(value[0]) <= vtuple(value[1])
        )
    if kind == "codes":
        return not (
            isinstance(value, (list, tuple)) and all(re.match(r"^(sm|compute)_\d{2,3}[af]?$", str(v)) for v in value)
        )
    return False


def _row_problems(table: str, row: Mapping[str, Any], key: Optional[str]) -> List[str]:
    """One sentence per override field whose value has the wrong form."""
    problems = []
    for field, kind in _ROW_FORMS.get(table, {}).items():
        if field in row and row[field] is not None and _field_problem(kind, row[field]):
            problems.append(
                "overrides.{} row '{}' has {}: {!r}; give {}.".format(
                    table, row.get(key, "?") if key else "?", field, row[field], _FORM_HELP[kind]
                )
            )
    return problems


def yaml_number_hint(value: str, known: List[str]) -> str:
    """A hint when a version looks like an unquoted YAML number that lost its trailing zero (2.10 -> 2.1)."""
    if re.match(r"^\d+\.\d$", value) and f"{value}0" in known and value not in known:
        return f" (an unquoted YAML {value}0 is read as the number {value}: write '{value}0' in quotes)"
    return ""


def normalize_os(value: Optional[str]) -> Optional[str]:
    """'Debian-12', 'ubuntu22.04', 'Rocky9' -> 'debian12', 'ubuntu2204', 'rhel9'."""
    if not value:
        return None
    text = re.sub(r"[\s._-]", "", str(value).lower())
    match = re.match(r"([a-z]+)(\d*)", text)
    if not match:
        return text
    name, num = match.group(1), match.group(2)
    return _OS_ALIASES.get(name, name) + num


def parse_gpu(value: Any, gpus: List[Dict[str, Any]]) -> Tuple[Optional[str], Optional[str]]:
    """Return (compute capability 'X.Y', model name or None) for '8.6', 'sm_86', '86', a model name or a PCI id."""
    text = str(value).strip()
    low = text.lower()
    if re.match(r"^(sm_|compute_)\d{2,3}[af]?$", low):
        parts = vtuple(low)
        return "{}.{}".format(*parts), None
    if re.match(r"^\d{1,2}\.\d$", text):
        return text, None
    if re.match(r"^\d{2,3}$", text):
        return f"{text[:-1]}.{text[-1]}", None
    if re.match(r"^(0x)?(10de:?)?[0-9a-f]{4}$", low):
        row = _matrix.find_gpu(pci_device_id=low, gpus=gpus)
        if row:
            return str(row["compute_capability"]), str(row["name"])
        return None, None
    row = _matrix.find_gpu(name=text, gpus=gpus)
    if row:
        return str(row["compute_capability"]), str(row["name"])
    return None, None


def _gpu_label(name: Optional[str], cc: str) -> str:
    if name:
        return f"{name} is {sm_label(cc)}"
    return f"A GPU of compute capability {cc} is {sm_label(cc)}"


def _cuda_targets(cuda_row: Mapping[str, Any], cc: str) -> bool:
    return vtuple(cuda_row["min_sm"]) <= vtuple(cc) <= vtuple(cuda_row["max_sm"])


def _numeric_tf(row: Mapping[str, Any]) -> bool:
    return bool(re.match(r"^\d+\.\d+$", str(row["version"])))


def _py_ok(row: Mapping[str, Any], python: str) -> bool:
    low, high = row["python"]
    return vtuple(low) <= vtuple(python) <= vtuple(high)


def _find_tf(tables: Mapping[str, List[Dict[str, Any]]], wanted: str) -> Tuple[Optional[Dict[str, Any]], str]:
    """Return (row, display version) for a requested TensorFlow version."""
    text = str(wanted).strip()
    if text.lower().startswith("v"):
        text = text[1:]
    row = _matrix.tensorflow_row(text, tables["tensorflow"])
    if row:
        return row, text
    match = re.match(r"^(\d+)\.(\d+)(?:\.\d+)?(?:\.\*)?$", text)
    if match:
        row = _matrix.tensorflow_row(f"{match.group(1)}.{match.group(2)}", tables["tensorflow"])
        if row:
            return row, text.replace(".*", "")
    return None, text


def _normalize_request(request: Mapping[str, Any]) -> Dict[str, Any]:
    unknown = sorted(set(request) - set(REQUEST_KEYS))
    if unknown:
        raise ResolveError(
            ["Unknown request key(s) {}; use only: {}.".format(", ".join(unknown), ", ".join(REQUEST_KEYS))]
        )
    req: Dict[str, Any] = {k: request.get(k) for k in REQUEST_KEYS}
    for key in ("tensorflow", "cuda", "cudnn", "tensorrt", "driver_version", "python", "os", "compiler"):
        value = req[key]
        req[key] = None if value is None or str(value).strip() == "" else str(value).strip()
    bad = []
    for key, (pattern, example) in _VERSION_FORMS.items():
        if req[key] is not None and not re.match(pattern, req[key], re.IGNORECASE):
            bad.append(f"{key} {req[key]!r} is not a version; write it like {example}, or leave {key} unset.")
    if bad:
        raise ResolveError(bad)
    req["tensorflow"] = req["tensorflow"] or "latest"
    req["gpus"] = [str(g) for g in (req["gpus"] or []) if str(g).strip()]
    req["build_from_source"] = bool(req["build_from_source"])
    req["want_tensorrt"] = bool(req["want_tensorrt"])
    req["want_xla"] = True if req["want_xla"] is None else bool(req["want_xla"])
    req["cpu_only"] = bool(req["cpu_only"])
    req["overrides"] = req["overrides"] or {}
    if req["python"]:
        req["python"] = _mm(req["python"]) or req["python"]
    if req["cuda"] and req["cuda"].lower().startswith("v"):
        req["cuda"] = req["cuda"][1:]
    return req


def resolve_stack(request: Mapping[str, Any]) -> Dict[str, Any]:
    """Resolve a request (any subset of REQUEST_KEYS) to a full stack dict, or raise ResolveError."""
    req = _normalize_request(request)
    tables = merged_matrix(req["overrides"])
    conflicts: List[str] = []
    notes: List[str] = []

    os_id = normalize_os(req["os"])
    os_info: Optional[Dict[str, Any]] = None
    if os_id:
        os_info = _matrix.os_row(os_id, tables["os"])
        if os_info is None:
            conflicts.append(
                "Operating system '{}' is not in the matrix; use one of {} or add it via overrides.os.".format(
                    req["os"], ", ".join(r["id"] for r in tables["os"])
                )
            )
    python = req["python"]
    python_from_os = False
    if python is None and os_info is not None:
        python = str(os_info["python"])
        python_from_os = True
        notes.append(f"Python {python} is the default of {os_id}.")

    gpus: List[Dict[str, Any]] = []
    for query in req["gpus"]:
        cc, name = parse_gpu(query, tables["gpus"])
        if cc is None:
            conflicts.append(
                f"GPU '{query}' is not in the matrix; give its compute capability (e.g. '8.6') "
                "or add the model via overrides.gpus."
            )
        else:
            gpus.append({"query": query, "name": name, "compute_capability": cc})
    if conflicts:
        raise ResolveError(conflicts)

    ctx = {"req": req, "tables": tables, "os_id": os_id, "os_info": os_info, "gpus": gpus}

    if req["tensorflow"].lower() == "latest":
        candidates = sorted(
            (r for r in tables["tensorflow"] if _numeric_tf(r)), key=lambda r: vtuple(r["version"]), reverse=True
        )
        if python is not None:
            fitting = [r for r in candidates if _py_ok(r, python)]
            if not fitting:
                newest = candidates[0]
                raise ResolveError(
                    [
                        "Python {0}{1} is supported by no TensorFlow in the matrix (newest {2} supports {3}-{4}); "
                        "use Python {3}-{4}.".format(
                            python,
                            f" (default of {os_id})" if python_from_os else yaml_number_hint(python, _PYTHONS),
                            newest["version"],
                            newest["python"][0],
                            newest["python"][1],
                        )
                    ]
                )
            candidates = fitting
        skipped: List[str] = []
        first_error: Optional[ResolveError] = None
        for row in candidates:
            try:
                stack = _resolve_row(row, row["version"], python, python_from_os, ctx)
            except ResolveError as err:
                first_error = first_error or err
                skipped.append("{} ({})".format(row["version"], err.conflicts[0]))
                continue
            stack["notes"] = [
                *notes,
                "tensorflow 'latest' resolved to {}{}.".format(
                    row["version"], " for Python {}".format(stack["python"]) if python else ""
                ),
            ]
            stack["notes"] += [f"Skipped TensorFlow {s}" for s in skipped] + stack.pop("_notes")
            return stack
        if first_error is None:
            raise ResolveError(["No TensorFlow row in the matrix; add one via overrides.tensorflow."])
        raise first_error

    wanted_row, display = _find_tf(tables, req["tensorflow"])
    if wanted_row is None:
        known = [r["version"] for r in tables["tensorflow"]]
        raise ResolveError(
            [
                "TensorFlow '{}' is not in the matrix ({}){}; use one of them, 'latest', "
                "or add a row via overrides.tensorflow.".format(
                    req["tensorflow"], ", ".join(known), yaml_number_hint(req["tensorflow"], known)
                )
            ]
        )
    stack = _resolve_row(wanted_row, display, python, python_from_os, ctx)
    stack["notes"] = notes + stack.pop("_notes")
    return stack


def _resolve_row(
    row: Dict[str, Any], display: str, python: Optional[str], python_from_os: bool, ctx: Mapping[str, Any]
) -> Dict[str, Any]:
    req = ctx["req"]
    tables = ctx["tables"]
    gpus: List[Dict[str, Any]] = ctx["gpus"]
    conflicts: List[str] = []
    notes: List[str] = []
    tf = str(row["version"])
    gpu_build = not req["cpu_only"]
    source = req["build_from_source"]

    if python is None:
        python = str(row["python"][1])
        notes.append(f"Python {python} is the newest TensorFlow {tf} supports.")
    elif not _py_ok(row, python):
        newer = [r["version"] for r in tables["tensorflow"] if _numeric_tf(r) and _py_ok(r, python)]
        hint = f", or TensorFlow {newer[0]}-{newer[-1]}" if newer else ""
        conflicts.append(
            "Python {0}{1} is outside TensorFlow {2}'s supported range {3}-{4}; use Python {3}-{4} "
            "(e.g. an interpreter from uv or the distribution's alternatives){5}.".format(
                python,
                " (default of {})".format(ctx["os_id"]) if python_from_os else yaml_number_hint(python, _PYTHONS),
                tf,
                row["python"][0],
                row["python"][1],
                hint,
            )
        )
    numpy = str((row.get("numpy_by_python") or {}).get(python, row["numpy"]))

    if req["cpu_only"] and gpus:
        notes.append("cpu_only is set: the GPUs given are ignored for the build and the wheel.")

    cuda: Optional[str] = None
    cuda_full: Optional[str] = None
    tf_cuda: Optional[str] = None
    cudnn: Optional[str] = None
    driver_min: Optional[str] = None
    driver_min_compat: Optional[str] = None
    ptx_jit = False
    ccs = sorted({g["compute_capability"] for g in gpus}, key=vtuple)

    if gpu_build:
        cuda, cuda_full, tf_cuda = _resolve_cuda(row, req, tables, conflicts, notes)
        cudnn = _resolve_cudnn(row, req, tables, tf_cuda or cuda, ccs, conflicts=conflicts, notes=notes)
        ptx_jit = _check_architectures(
            row, req, tables, gpus, tf_cuda=tf_cuda, host_cuda=cuda, conflicts=conflicts, notes=notes
        )
        full = cuda_full if source and row["era"] == "hermetic_cuda" else None
        driver_min, driver_min_compat = _driver_floors(tables, gpus, [tf_cuda, cuda], full=full)
        _check_driver(
            req,
            tf,
            full or cuda,
            floor=driver_min,
            compat=driver_min_compat,
            ptx_jit=ptx_jit,
            conflicts=conflicts,
            notes=notes,
        )
    else:
        for key in ("cuda", "cudnn", "driver_version"):
            if req[key]:
                notes.append(f"cpu_only is set: {key} {req[key]} is not used.")
        ccs = []

    tensorrt = _resolve_tensorrt(row, req, conflicts, notes)
    compiler = _resolve_compiler(
        row, req, tables, os_id=ctx["os_id"], os_info=ctx["os_info"], cuda=cuda, conflicts=conflicts, notes=notes
    )

    if conflicts:
        raise ResolveError(conflicts)

    stack: Dict[str, Any] = {
        "tensorflow": display,
        "tensorflow_minor": tf,
        "python": python,
        "numpy": numpy,
        "cuda": cuda,
        "cuda_full": cuda_full,
        "tf_cuda": tf_cuda,
        "cudnn": cudnn,
        "tensorrt": tensorrt,
        "bazel": row["bazel"],
        "bazel_range": row.get("bazel_range"),
        "compiler": compiler,
        "driver_min": driver_min,
        "driver_min_compat": driver_min_compat,
        "compute_capabilities": ccs,
        "gpu_models": gpus,
        "cpu_only": req["cpu_only"],
        "build_from_source": source,
        "hermetic_cuda": row["era"] == "hermetic_cuda",
        "xla": req["want_xla"],
        "os": ctx["os_id"],
        "pip_package": row.get("pip_package", "tensorflow"),
        "pip_package_cpu": row.get("pip_package_cpu", "tensorflow-cpu"),
        "pip_version": row.get("pip_version"),
        "wheel_cuda": row.get("wheel_cuda", "system"),
        "source": row.get("source", ""),
    }
    stack["build"] = _build(row, stack, ccs, notes)
    stack["resources"] = _resources(stack)
    stack["pip_requirements"] = tf_wheel_requirement(stack, gpu_build)
    if not req["want_xla"]:
        notes.append("want_xla is false: only source builds change (TF_ENABLE_XLA=0); wheels always carry XLA.")
    stack["unverified"] = _unverified_facts(row, tables, [tf_cuda, cuda], cudnn, stack)
    if stack["unverified"]:
        notes.append(
            "Facts behind this stack that no primary source confirmed ([U] in the matrix): {}.".format(
                "; ".join(stack["unverified"])
            )
        )
    stack["_notes"] = notes
    return stack


def _u_clauses(source: Any) -> List[str]:
    """The clauses of a row's source string that carry the [U] (unverified) marker."""
    return [part.strip() for part in str(source or "").split(";") if "[U]" in part]


def _unverified_facts(
    row: Mapping[str, Any],
    tables: Mapping[str, List[Dict[str, Any]]],
    cudas: List[Optional[str]],
    cudnn: Optional[str],
    stack: Mapping[str, Any],
) -> List[str]:
    """What the resolved stack rests on that the matrix marks unverified, one "row: clause" entry each.

    A TensorFlow row's clauses about TensorRT count only for a stack with TensorRT, and those about the
    source build (Bazel range, USE_PYWRAP_RULES) only for a source build; a CUDA row's update floor
    (full_driver_min) only for a hermetic source build.

    GPU rows are not listed: the resolver uses only their compute capability, which every row has from a
    primary source; their unverified peaks cap verify's verdicts instead (_verdict.cap_unverified).
    """

    def relevant(clause: str) -> bool:
        if "TensorRT" in clause and not stack.get("tensorrt"):
            return False
        if "full_driver_min" in clause and not (stack.get("build_from_source") and stack.get("hermetic_cuda")):
            return False  # the update's floor counts only where it is the hermetic version built against
        return stack.get("build_from_source") or not ("bazel" in clause.lower() or "USE_PYWRAP_RULES" in clause)

    found: List[str] = [f"TensorFlow {row['version']}: {c}" for c in _u_clauses(row.get("source")) if relevant(c)]
    for cuda in dict.fromkeys(c for c in cudas if c):
        crow = _matrix.cuda_row(cuda, tables["cuda"])
        found += [f"CUDA {cuda}: {c}" for c in _u_clauses((crow or {}).get("source")) if relevant(c)]
    crow = _cudnn_row(tables, cudnn) if cudnn else None
    found += [f"cuDNN {cudnn}: {c}" for c in _u_clauses((crow or {}).get("source"))]
    return list(dict.fromkeys(found))


def _resolve_cuda(
    row: Mapping[str, Any],
    req: Mapping[str, Any],
    tables: Mapping[str, List[Dict[str, Any]]],
    conflicts: List[str],
    notes: List[str],
) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """Return (system/build CUDA, its full version, the CUDA TensorFlow's kernels and libraries come from)."""
    tf = row["version"]
    tested = str(row["cuda"])
    user = req["cuda"]
    cuda = _mm(user) if user else tested
    crow = _matrix.cuda_row(cuda, tables["cuda"])
    if crow is None:
        known = [r["version"] for r in tables["cuda"]]
        conflicts.append(
            "CUDA {} is not in the matrix ({}){}; use one of them or add a row via overrides.cuda.".format(
                user, ", ".join(known), yaml_number_hint(str(user), known)
            )
        )
        return None, None, None
    full = user if user and len(vtuple(user)) >= 3 else str(crow.get("full") or cuda)
    if req["build_from_source"]:
        if _major(cuda) != _major(tested):
            conflicts.append(
                f"TensorFlow {tf} builds against CUDA {_major(tested)}.x (tested {tested}); "
                f"CUDA {cuda} is another major; "
                f"use CUDA {_major(tested)}.x, e.g. {tested}."
            )
        elif cuda != tested:
            notes.append(f"CUDA {cuda} differs from TensorFlow {tf}'s tested CUDA {tested}: untested build.")
        return cuda, full, cuda
    mode = row.get("wheel_cuda", "system")
    if mode == "system":
        if user and (_major(cuda) != _major(tested) or vtuple(cuda) < vtuple(tested)):
            conflicts.append(
                f"TensorFlow {tf} wheels load the host's CUDA {_major(tested)}.x libraries "
                f"and were built with CUDA {tested}; "
                f"CUDA {cuda} cannot serve them; use CUDA {_major(tested)}.x >= {tested} or build_from_source."
            )
        elif cuda != tested:
            notes.append(
                f"CUDA {cuda} is newer than TensorFlow {tf}'s tested {tested}; "
                "same-major minor versions are compatible."
            )
        return cuda, full, cuda
    if mode == "range":
        if user and (_major(cuda) != _major(tested) or vtuple(cuda) < vtuple(tested)):
            conflicts.append(
                f"TensorFlow {tf} wheels accept CUDA {_major(tested)}.x >= {tested} from pip (and-cuda extra); "
                f"CUDA {cuda} is outside that; "
                f"use CUDA {_major(tested)}.x >= {tested} or build_from_source."
            )
            return cuda, full, tested
        if user and cuda != tested:
            notes.append(f"The pip CUDA {cuda} libraries are pinned for TensorFlow {tf} (tested with {tested}).")
        return cuda, full, cuda
    if user and cuda != tested:
        notes.append(
            f"TensorFlow {tf} wheels bring their own CUDA {tested} libraries from pip (and-cuda extra); "
            f"the host toolkit CUDA {cuda} is not used by TensorFlow."
        )
    return cuda, full, tested


def _resolve_cudnn(
    row: Mapping[str, Any],
    req: Mapping[str, Any],
    tables: Mapping[str, List[Dict[str, Any]]],
    cuda: Optional[str],
    ccs: List[str],
    *,
    conflicts: List[str],
    notes: List[str],
) -> Optional[str]:
    """The cuDNN of the stack, checked against its CUDA and GPUs whether the user named it or not."""
    tf = row["version"]
    tested = str(row["cudnn"])
    user = req["cudnn"]
    source = req["build_from_source"]
    pinned_wheel = not source and row.get("wheel_cuda", "system") == "pinned"
    cudnn = tested
    if user:
        known = [r for r in tables["cudnn"] if str(r["version"]).startswith(user)]
        known.sort(key=lambda r: vtuple(r["version"]))
        cudnn = str(known[-1]["version"]) if known and vtuple(user) != vtuple(known[-1]["version"]) else user
        if len(vtuple(cudnn)) < 3:
            cudnn = ".".join(str(p) for p in ((*vtuple(cudnn), 0, 0))[:3])
        if pinned_wheel:
            if vtuple(cudnn) != vtuple(tested):
                notes.append(
                    f"TensorFlow {tf} wheels bring cuDNN {tested} from pip; "
                    f"the host cuDNN {cudnn} is not used by TensorFlow."
                )
            return cudnn
        if _major(cudnn) != _major(tested):
            conflicts.append(
                f"TensorFlow {tf} needs cuDNN {_major(tested)}.x (tested {tested}); cuDNN {cudnn} is another major; "
                f"use cuDNN {_major(tested)}.x >= {tested}."
            )
            return cudnn
        if not source and vtuple(cudnn) < vtuple(tested):
            conflicts.append(
                f"TensorFlow {tf} wheels were built with cuDNN {tested}; cuDNN {cudnn} is older; "
                f"use cuDNN {_major(tested)}.x >= {tested}."
            )
            return cudnn
    elif pinned_wheel:
        return cudnn
    crow = _cudnn_row(tables, cudnn)
    if crow is None:
        notes.append(f"cuDNN {cudnn} is not in the matrix: its CUDA range and GPUs are not checked.")
        return cudnn
    cuda_row = _matrix.cuda_row(cuda, tables["cuda"]) if cuda else None
    targeted = [cc for cc in ccs if cuda_row is None or _cuda_targets(cuda_row, cc)]
    problem = _cudnn_problem(crow, cuda, targeted)
    if problem is None:
        return cudnn
    floor = None if source else tested
    alt = _cudnn_alternative(tables, _major(tested), floor, cuda, targeted, exclude=cudnn)
    if not user and alt is not None:
        notes.append(f"cuDNN {alt} is used instead of TensorFlow {tf}'s tested {tested}: {problem}.")
        return alt
    fix = f"use cuDNN {alt}" if alt else f"add a cuDNN {_major(tested)}.x row that supports them via overrides.cudnn"
    conflicts.append(f"{problem}; {fix}.")
    return cudnn


def _cudnn_row(tables: Mapping[str, List[Dict[str, Any]]], version: str) -> Optional[Dict[str, Any]]:
    return next((r for r in tables["cudnn"] if vtuple(r["version"]) == vtuple(version)), None)


def _cudnn_max_sm(crow: Mapping[str, Any], cuda: Optional[str]) -> Optional[str]:
    """The newest compute capability cuDNN's support matrix lists for this row's build for `cuda`."""
    top: Optional[str] = None
    for cuda_min, max_sm in sorted(crow.get("sm_max") or [], key=lambda pair: vtuple(pair[0])):
        if cuda is None or vtuple(cuda) >= vtuple(cuda_min):
            top = str(max_sm)
    return top


def _cudnn_problem(crow: Mapping[str, Any], cuda: Optional[str], ccs: List[str]) -> Optional[str]:
    """Why a cuDNN row cannot serve a CUDA version and GPUs, or None."""
    version = crow["version"]
    if cuda and not (vtuple(crow["cuda_min"]) <= vtuple(cuda) <= vtuple(crow["cuda_max"])):
        return "cuDNN {} supports CUDA {}-{}, not CUDA {}".format(version, crow["cuda_min"], crow["cuda_max"], cuda)
    top = _cudnn_max_sm(crow, cuda)
    unlisted = [cc for cc in ccs if top is not None and vtuple(cc) > vtuple(top)]
    if unlisted:
        return "cuDNN {}{} lists GPUs up to compute capability {}, not {} (NVIDIA's cuDNN support matrix)".format(
            version, f" for CUDA {cuda}" if cuda else "", top, ", ".join(unlisted)
        )
    return None


def _cudnn_alternative(
    tables: Mapping[str, List[Dict[str, Any]]],
    major: int,
    floor: Optional[str],
    cuda: Optional[str],
    ccs: List[str],
    *,
    exclude: str,
) -> Optional[str]:
    """The oldest cuDNN of a major (>= floor) that serves the CUDA version and GPUs, never `exclude`."""
    for crow in sorted(tables["cudnn"], key=lambda r: vtuple(r["version"])):
        version = str(crow["version"])
        if _major(version) != major or vtuple(version) == vtuple(exclude):
            continue
        if floor is not None and vtuple(version) < vtuple(floor):
            continue
        if _cudnn_problem(crow, cuda, ccs) is None:
            return version
    return None


def _first_cuda_for(tables: Mapping[str, List[Dict[str, Any]]], cc: str) -> Optional[Dict[str, Any]]:
    rows = sorted(tables["cuda"], key=lambda r: vtuple(r["version"]))
    return next((r for r in rows if _cuda_targets(r, cc)), None)


def _last_cuda_for(tables: Mapping[str, List[Dict[str, Any]]], cc: str) -> Optional[Dict[str, Any]]:
    rows = sorted(tables["cuda"], key=lambda r: vtuple(r["version"]), reverse=True)
    return next((r for r in rows if _cuda_targets(r, cc)), None)


def _tf_tested_for(tables: Mapping[str, List[Dict[str, Any]]], cc: str, newest: bool) -> Optional[Dict[str, Any]]:
    rows = sorted(
        (r for r in tables["tensorflow"] if _numeric_tf(r)), key=lambda r: vtuple(r["version"]), reverse=newest
    )
    for row in rows:
        crow = _matrix.cuda_row(str(row["cuda"]), tables["cuda"])
        if crow and _cuda_targets(crow, cc):
            return row
    return None


def _cuda_fix(tables: Mapping[str, List[Dict[str, Any]]], cc: str, too_new: bool) -> str:
    if not too_new:
        last = _last_cuda_for(tables, cc)
        return "use CUDA <= {}".format(last["version"]) if last else "use an older GPU-capable CUDA"
    first = _first_cuda_for(tables, cc)
    if first is None:
        return "no CUDA in the matrix targets it; add a CUDA row via overrides.cuda"
    tf_row = _tf_tested_for(tables, cc, newest=False)
    if tf_row is not None:
        return "use CUDA >= {}, i.e. TensorFlow >= {} with its tested CUDA {}".format(
            first["version"], tf_row["version"], tf_row["cuda"]
        )
    ranged = [
        r["version"]
        for r in sorted(tables["tensorflow"], key=lambda r: vtuple(r["version"]))
        if _numeric_tf(r) and r.get("wheel_cuda") == "range" and _major(r["cuda"]) == _major(first["version"])
    ]
    hermetic = [
        r["version"]
        for r in sorted(tables["tensorflow"], key=lambda r: vtuple(r["version"]))
        if _numeric_tf(r) and r["era"] == "hermetic_cuda" and _major(r["cuda"]) == _major(first["version"])
    ]
    ways = []
    if ranged:
        ways.append("TensorFlow >= {} wheels with cuda: '{}'".format(ranged[0], first["version"]))
    if hermetic:
        ways.append("build_from_source of TensorFlow >= {} with cuda: '{}'".format(hermetic[0], first["version"]))
    return "use CUDA >= {}, which no TensorFlow release is tested with: {}".format(
        first["version"], " or ".join(ways) if ways else "add a TensorFlow row via overrides.tensorflow"
    )


def _check_architectures(
    row: Mapping[str, Any],
    req: Mapping[str, Any],
    tables: Mapping[str, List[Dict[str, Any]]],
    gpus: List[Dict[str, Any]],
    *,
    tf_cuda: Optional[str],
    host_cuda: Optional[str],
    conflicts: List[str],
    notes: List[str],
) -> bool:
    """Check each GPU against the CUDAs and (for wheels) the shipped kernels; return True when PTX JIT is needed."""
    ptx_jit = False
    seen = set()
    for gpu in gpus:
        cc = gpu["compute_capability"]
        if cc in seen:
            continue
        seen.add(cc)
        label = _gpu_label(gpu["name"], cc)
        limits = [_cuda_limit(tables, c, cc, label) for c in (tf_cuda, host_cuda) if c]
        problems = sorted({p for p in limits if p})
        if problems:
            conflicts.extend(problems)
            continue
        if req["build_from_source"]:
            continue
        codes = [str(c) for c in row.get("wheel_compute_capabilities") or []]
        if not codes:
            continue
        native, ptx = wheel_code(codes)
        want = vtuple(cc)
        if any(n[0] == want[0] and n[1] <= want[1] for n in native):
            continue
        if any(p <= want for p in ptx):
            ptx_jit = True
            notes.append(
                "{}: TensorFlow {} wheels carry no native kernels for it ({}); it runs through the driver's "
                "PTX JIT (slow first start).".format(label, row["version"], ",".join(codes))
            )
            continue
        older = [
            r["version"]
            for r in sorted(tables["tensorflow"], key=lambda r: vtuple(r["version"]), reverse=True)
            if _numeric_tf(r) and _wheel_runs(r, want)
        ]
        conflicts.append(
            "{}; TensorFlow {} wheels carry kernels for {} only; {}build_from_source with this "
            "compute capability.".format(
                label,
                row["version"],
                ",".join(codes),
                f"use TensorFlow <= {older[0]} or " if older else "",
            )
        )
    return ptx_jit


def _cuda_limit(tables: Mapping[str, List[Dict[str, Any]]], cuda: str, cc: str, label: str) -> Optional[str]:
    crow = _matrix.cuda_row(cuda, tables["cuda"])
    if crow is None:
        return None
    if vtuple(cc) > vtuple(crow["max_sm"]):
        return f"{label}; CUDA {cuda} cannot target it; {_cuda_fix(tables, cc, too_new=True)}."
    if vtuple(cc) < vtuple(crow["min_sm"]):
        return "{}; CUDA {} dropped it (minimum {}); {}.".format(
            label, cuda, sm_label(crow["min_sm"]), _cuda_fix(tables, cc, too_new=False)
        )
    return None


def wheel_code(codes: List[str]) -> Tuple[List[Tuple[int, ...]], List[Tuple[int, ...]]]:
    """(SASS architectures, PTX architectures) of a TensorFlow capability list.

    In TensorFlow's build ``compute_XY`` embeds SASS for XY and PTX for XY (``cuda_configure.bzl``:
    ``--cuda-gpu-arch=sm_XY`` plus ``--cuda-include-ptx=sm_XY``; ``.bazelrc``: "compute_XY enables PTX
    embedding in addition to SASS"); ``sm_XY`` is SASS only.
    """
    native = [vtuple(c) for c in codes if c.startswith(("sm_", "compute_"))]
    ptx = [vtuple(c) for c in codes if c.startswith("compute_")]
    return native, ptx


def _wheel_runs(row: Mapping[str, Any], want: Tuple[int, ...]) -> bool:
    codes = [str(c) for c in row.get("wheel_compute_capabilities") or []]
    native, ptx = wheel_code(codes)
    return any(n[0] == want[0] and n[1] <= want[1] for n in native) or any(p <= want for p in ptx)


def _driver_floors(
    tables: Mapping[str, List[Dict[str, Any]]],
    gpus: List[Dict[str, Any]],
    cudas: List[Optional[str]],
    full: Optional[str] = None,
) -> Tuple[Optional[str], Optional[str]]:
    """Driver floors (plain, with minor-version compatibility); `full` is the exact update release used.

    Table 3 gives the GA release of a toolkit one floor and each update its own, higher one: a stack that
    uses the row's ``full`` update (hermetic builds) needs ``full_driver_min``.
    """
    floor: Optional[str] = None
    compat: Optional[str] = None
    for cuda in cudas:
        crow = _matrix.cuda_row(cuda, tables["cuda"]) if cuda else None
        if crow is None:
            continue
        own = str(crow["driver_min"])
        if full and crow.get("full_driver_min") and vtuple(full) == vtuple(crow.get("full") or ""):
            own = str(crow["full_driver_min"])
        if floor is None or vtuple(own) > vtuple(floor):
            floor = own
        own_compat = str(crow.get("driver_min_compat") or crow["driver_min"])
        if compat is None or vtuple(own_compat) > vtuple(compat):
            compat = own_compat
    for gpu in gpus:
        first = _first_cuda_for(tables, gpu["compute_capability"])
        if first is None:
            continue
        for attr in ("floor", "compat"):
            current = floor if attr == "floor" else compat
            if current is not None and vtuple(first["driver_min"]) > vtuple(current):
                if attr == "floor":
                    floor = str(first["driver_min"])
                else:
                    compat = str(first["driver_min"])
    return floor, compat


def _check_driver(
    req: Mapping[str, Any],
    tf: str,
    cuda: Optional[str],
    *,
    floor: Optional[str],
    compat: Optional[str],
    ptx_jit: bool,
    conflicts: List[str],
    notes: List[str],
) -> None:
    have = req["driver_version"]
    if not have or floor is None:
        return
    if vtuple(have) >= vtuple(floor):
        return
    compat = compat or floor
    if vtuple(have) < vtuple(compat):
        extra = "" if compat == floor else f" (>= {compat} suffices with CUDA minor-version compatibility)"
        conflicts.append(
            f"NVIDIA driver {have} is older than {floor} required by CUDA {cuda} (TensorFlow {tf}); "
            f"upgrade the driver to >= {floor}{extra}."
        )
    elif ptx_jit:
        conflicts.append(
            f"NVIDIA driver {have} reaches CUDA {cuda} only through minor-version compatibility, "
            "which cannot JIT newer PTX "
            f"that this GPU needs; upgrade the driver to >= {floor}."
        )
    else:
        notes.append(
            f"NVIDIA driver {have} is below {floor}; CUDA {cuda} runs through minor-version compatibility "
            "(no JIT of newer PTX)."
        )


def _resolve_tensorrt(
    row: Mapping[str, Any], req: Mapping[str, Any], conflicts: List[str], notes: List[str]
) -> Optional[str]:
    tf = row["version"]
    wheel_spec = None if req["build_from_source"] else row.get("wheel_tensorrt")
    spec = wheel_spec or row.get("tensorrt")
    wanted = req["want_tensorrt"] or bool(req["tensorrt"])
    if not wanted:
        if spec is None:
            notes.append(
                f"tensorrt is null: TensorFlow {tf} has no TF-TRT (disabled in CUDA builds since 2.18); "
                "use TensorRT through its own Python API."
            )
        else:
            notes.append("tensorrt is null: not requested (set want_tensorrt to use TF-TRT).")
        return None
    if req["cpu_only"]:
        conflicts.append("TensorRT needs a GPU stack but cpu_only is set; drop want_tensorrt/tensorrt or cpu_only.")
        return None
    if spec is None:
        conflicts.append(
            f"TensorFlow {tf} has no TF-TRT (TensorRT support is disabled in CUDA builds since 2.18); "
            "use TensorFlow <= 2.17 with TensorRT 8.x, or drop want_tensorrt and use TensorRT through "
            "its own Python API."
        )
        return None
    trt = req["tensorrt"] or str(spec["default"])
    if not (_cmp_ge(trt, spec["min"]) and _cmp_le(trt, spec["max"])):
        if wheel_spec is not None:
            conflicts.append(
                "TensorFlow {} wheels load {} ({}); TensorRT {} cannot serve them; use TensorRT {} "
                "or build_from_source.".format(tf, spec["links"], spec["source"], trt, spec["default"])
            )
            return None
        why = " (TensorRT 9 and 10 are not supported by TF-TRT, tensorflow#68360)" if _major(trt) >= 9 else ""
        conflicts.append(
            "TensorRT {} is outside what TF-TRT in TensorFlow {} supports ({}-{}){}; use TensorRT {}.".format(
                trt, tf, spec["min"], spec["max"], why, spec["default"]
            )
        )
        return None
    notes.append(
        f"TensorRT {trt} comes from NVIDIA's repositories (not the Python index); provide a mirror or local packages."
    )
    return trt


def _parse_compiler(text: str) -> Tuple[Optional[str], Optional[str]]:
    match = re.match(r"^\s*(gcc|g\+\+|clang|llvm)[\s_-]*([\d.]*)\s*$", text.lower())
    if not match:
        return None, None
    family = "gcc" if match.group(1) in ("gcc", "g++") else "clang"
    return family, match.group(2) or None


def _compiler_problems(
    tables: Mapping[str, List[Dict[str, Any]]], tf: str, family: str, version: str, *, cuda: Optional[str], gpu: bool
) -> List[str]:
    """Reasons why a compiler cannot build a TensorFlow version (empty when fine)."""
    problems = []
    for rule in tables["compiler_conflicts"]:
        if rule.get("family") != family:
            continue
        if rule.get("tf_min") and vtuple(tf) < vtuple(rule["tf_min"]):
            continue
        if rule.get("tf_max") and vtuple(tf) > vtuple(rule["tf_max"]):
            continue
        if rule.get("compiler_min") and not _cmp_ge(version, rule["compiler_min"]):
            continue
        if rule.get("compiler_max") and not _cmp_le(version, rule["compiler_max"]):
            continue
        problems.append(rule.get("source", "compiler conflict"))
    if family == "gcc" and gpu and cuda:
        crow = _matrix.cuda_row(cuda, tables["cuda"])
        if crow and crow.get("gcc_max") and _major(version) > _major(crow["gcc_max"]):
            problems.append("nvcc of CUDA {} accepts GCC <= {}".format(cuda, crow["gcc_max"]))
    return problems


def _compiler_path(family: str, version: str, os_id: Optional[str]) -> str:
    major = str(_major(version))
    if os_id and os_id.startswith("rhel"):
        if family == "clang":
            return "/usr/bin/clang"
        return "/usr/bin/gcc" if major == "11" else f"/opt/rh/gcc-toolset-{major}/root/usr/bin/gcc"
    if family == "clang":
        return f"/usr/lib/llvm-{major}/bin/clang"
    return f"/usr/bin/gcc-{major}"


def _resolve_compiler(
    row: Mapping[str, Any],
    req: Mapping[str, Any],
    tables: Mapping[str, List[Dict[str, Any]]],
    *,
    os_id: Optional[str],
    os_info: Optional[Mapping[str, Any]],
    cuda: Optional[str],
    conflicts: List[str],
    notes: List[str],
) -> Dict[str, Any]:
    tf = str(row["version"])
    tested = row["compiler"]
    era_family = _matrix.ERAS.get(row["era"], {}).get("compiler_family", tested["family"])
    gpu = not req["cpu_only"]
    source = req["build_from_source"]
    tested_major = str(_major(tested["version"]))

    if req["compiler"]:
        family, version = _parse_compiler(req["compiler"])
        if family is None:
            conflicts.append(
                "compiler '{}' is not understood; write it as gcc-<major> or clang-<major>, e.g. {}-{}.".format(
                    req["compiler"], tested["family"], tested_major
                )
            )
            return {"family": None, "version": None, "tested": tested, "path": None}
        if version is None:
            available = [str(v) for v in (os_info or {}).get(family, [])]
            version = available[-1] if available else tested_major
        problems = _compiler_problems(tables, tf, family, version, cuda=cuda, gpu=gpu)
        if problems and source:
            conflicts.append(
                "{} {} cannot build TensorFlow {} ({}); use {} {} (tested) or another version without "
                "this conflict.".format(
                    family.upper() if family == "gcc" else "Clang",
                    version,
                    tf,
                    "; ".join(problems),
                    tested["family"],
                    tested["version"],
                )
            )
        if os_info is not None and str(_major(version)) not in [str(v) for v in os_info.get(family, [])] and source:
            notes.append(f"{family}-{version} is not in {os_id}'s own archive: install it before the build.")
        return {
            "family": family,
            "version": version,
            "tested": tested,
            "path": _compiler_path(family, version, os_id),
        }

    if not source or os_info is None:
        if source:
            notes.append(
                "No os given: the compiler is TensorFlow {}'s tested {} {}, not checked against a distribution.".format(
                    tf, tested["family"], tested["version"]
                )
            )
        return {
            "family": tested["family"],
            "version": tested_major,
            "tested": tested,
            "path": _compiler_path(tested["family"], tested_major, os_id),
        }

    def pick(family: str) -> Optional[str]:
        versions = sorted((str(v) for v in os_info.get(family, [])), key=vtuple)
        good = [v for v in versions if not _compiler_problems(tables, tf, family, v, cuda=cuda, gpu=gpu)]
        if not good:
            return None
        want = vtuple(tested_major) if family == tested["family"] else ()
        if want:
            if tested_major in good:
                return tested_major
            newer = [v for v in good if vtuple(v) > want]
            return newer[0] if newer else good[-1]
        return good[-1]

    chosen = pick(era_family)
    family = era_family
    if chosen is None:
        other = "clang" if era_family == "gcc" else "gcc"
        alt = pick(other)
        offered = ", ".join(str(v) for v in os_info.get(era_family, [])) or "none"
        reasons = sorted(
            {
                p
                for v in os_info.get(era_family, [])
                for p in _compiler_problems(tables, tf, era_family, str(v), cuda=cuda, gpu=gpu)
            }
        )
        conflicts.append(
            "No {0} in {1}'s archive ({2}) can build TensorFlow {3} ({4}); install {0} {5} (tested){6}.".format(
                era_family,
                os_id,
                offered,
                tf,
                "; ".join(reasons) or "none offered",
                tested["version"] if tested["family"] == era_family else "",
                f", or set compiler: {other}-{alt} (untested for this era)" if alt else "",
            )
        )
        return {"family": era_family, "version": None, "tested": tested, "path": None}
    if family != tested["family"] or chosen != tested_major:
        notes.append(
            "Compiler {}-{} from {} is used instead of the tested {} {}.".format(
                family, chosen, os_id, tested["family"], tested["version"]
            )
        )
    return {"family": family, "version": chosen, "tested": tested, "path": _compiler_path(family, chosen, os_id)}


def _capability_list(row: Mapping[str, Any], ccs: List[str], hermetic: bool) -> str:
    if not ccs:
        return ",".join(str(c) for c in row.get("wheel_compute_capabilities") or [])
    if hermetic:
        return ",".join([sm_label(c) for c in ccs] + ["compute_" + sm_label(ccs[-1])[3:]])
    return ",".join(ccs)


def _build(row: Mapping[str, Any], stack: Mapping[str, Any], ccs: List[str], notes: List[str]) -> Dict[str, Any]:
    """Configure environment, Bazel flags and wheel target for the TensorFlow source tree's era."""
    era = str(row["era"])
    tf = str(row["version"])
    gpu = not stack["cpu_only"]
    hermetic = era == "hermetic_cuda"
    compiler = stack["compiler"]
    python_bin = "/usr/bin/python{}".format(stack["python"])
    wheel_name = "tensorflow" if gpu else "tensorflow_cpu"
    env: Dict[str, str] = {
        "PYTHON_BIN_PATH": python_bin,
        "USE_DEFAULT_PYTHON_LIB_PATH": "1",
        "TF_NEED_CUDA": "1" if gpu else "0",
        "TF_NEED_ROCM": "0",
        "TF_ENABLE_XLA": "1" if stack["xla"] else "0",
        "TF_SET_ANDROID_WORKSPACE": "0",
        "TF_CONFIGURE_IOS": "0",
        "CC_OPT_FLAGS": "-march=native -Wno-sign-compare",
    }
    if vtuple(tf) >= (2, 14):
        env["TF_PYTHON_VERSION"] = str(stack["python"])
    path = compiler.get("path") or ""
    if compiler.get("family") == "clang":
        env["TF_NEED_CLANG"] = "1"
        env["CLANG_COMPILER_PATH"] = path
        if gpu:
            env["TF_CUDA_CLANG"] = "1"
            env["CLANG_CUDA_COMPILER_PATH"] = path
            env["TF_DOWNLOAD_CLANG"] = "0"
    else:
        if vtuple(tf) >= (2, 13):
            env["TF_NEED_CLANG"] = "0"
        if gpu:
            env["TF_CUDA_CLANG"] = "0"
            env["GCC_HOST_COMPILER_PATH"] = path
    if gpu and hermetic:
        env["HERMETIC_CUDA_VERSION"] = str(stack["cuda_full"])
        env["HERMETIC_CUDNN_VERSION"] = str(stack["cudnn"])
        env["HERMETIC_CUDA_COMPUTE_CAPABILITIES"] = _capability_list(row, ccs, hermetic=True)
    elif gpu:
        env["TF_CUDA_VERSION"] = str(stack["cuda"])
        env["TF_CUDNN_VERSION"] = str(_major(stack["cudnn"]))
        env["TF_NCCL_VERSION"] = "2"
        env["TF_CUBLAS_VERSION"] = str(_major(stack["cuda"]))
        env["TF_CUDA_PATHS"] = "/usr/local/cuda-{},/usr".format(stack["cuda"])
        env["TF_CUDA_COMPUTE_CAPABILITIES"] = _capability_list(row, ccs, hermetic=False)
        env["TF_NEED_TENSORRT"] = "1" if stack["tensorrt"] else "0"
        if stack["tensorrt"]:
            env["TF_TENSORRT_VERSION"] = str(_major(stack["tensorrt"]))
    flags = ["--config=opt"]
    if gpu:
        flags.append("--config=cuda")
    for flag in row.get("bazel_flags") or []:
        text = str(flag).replace("{wheel_name}", wheel_name)
        if text == "--config=cuda_wheel" and not gpu:
            continue
        flags.append(text)
    target = str(row["wheel_target"])
    legacy = target.endswith(":build_pip_package")
    wheel_dir = "dist" if legacy else "bazel-bin/tensorflow/tools/pip_package/wheel_house"
    if stack["build_from_source"]:
        if hermetic and gpu:
            notes.append(
                "Hermetic CUDA: Bazel downloads CUDA {}/cuDNN {} redistributables from NVIDIA; for offline builds "
                "set LOCAL_CUDA_PATH, LOCAL_CUDNN_PATH and LOCAL_NCCL_PATH or a mirrored redistrib JSON.".format(
                    stack["cuda_full"], stack["cudnn"]
                )
            )
        notes.append(
            "configure.py treats an empty variable as unset and prompts: run it with stdin from /dev/null "
            "and every variable in build.env set."
        )
    return {
        "from_source": bool(stack["build_from_source"]),
        "era": era,
        "configure_command": f"{python_bin} configure.py < /dev/null",
        "env": env,
        "bazel_version": row["bazel"],
        "bazel_range": row.get("bazel_range"),
        "bazel_target": target,
        "bazel_flags": flags,
        "bazel_command": "bazel build {} {}".format(" ".join(flags), target),
        "post_build_command": "./bazel-bin/tensorflow/tools/pip_package/build_pip_package dist" if legacy else None,
        "wheel_dir": wheel_dir,
        "wheel_name": wheel_name,
        "hermetic_cuda": hermetic,
    }


def _resources(stack: Mapping[str, Any]) -> Dict[str, Any]:
    res = _matrix.RESOURCES
    gpu = not stack["cpu_only"]
    disk = float(res["wheel_gpu_gb"] if gpu else res["wheel_cpu_gb"])
    if gpu and stack.get("wheel_cuda") == "system" and not stack["build_from_source"]:
        disk += float(res["cuda_toolkit_gb"])
    ram_per_job: Optional[float] = None
    if stack["build_from_source"]:
        disk += float(res["source_build_gb"])
        if gpu and not stack["hermetic_cuda"]:
            disk += float(res["cuda_toolkit_gb"])
        ram_per_job = float(res["ram_gb_per_bazel_job"])
    return {"disk_gb": disk, "ram_gb_per_bazel_job": ram_per_job, "source": res["source"]}


def _spec(stack: Mapping[str, Any]) -> str:
    if stack.get("pip_version"):
        return "=={}".format(stack["pip_version"])
    version = str(stack["tensorflow"])
    if re.match(r"^\d+\.\d+$", version):
        return f"=={version}.*"
    return f"=={version}"


def tf_wheel_requirement(stack: Mapping[str, Any], gpu: bool) -> List[str]:
    """Pip requirement strings for the TensorFlow wheel of a resolved stack (and the numpy pin).

    ``gpu`` says whether the host should get the GPU build; a cpu_only stack always gets the CPU wheel.
    """
    spec = _spec(stack)
    numpy = "numpy{}".format(stack["numpy"]) if stack.get("numpy") else "numpy"
    if not gpu or stack.get("cpu_only"):
        return [str(stack.get("pip_package_cpu", "tensorflow-cpu")) + spec, numpy]
    package = str(stack.get("pip_package", "tensorflow"))
    mode = stack.get("wheel_cuda", "system")
    if mode == "system":
        return [package + spec, numpy]
    reqs = [f"{package}[and-cuda]{spec}", numpy]
    if mode == "range" and stack.get("tf_cuda") and stack.get("cudnn"):
        cuda = str(stack["tf_cuda"])
        suffix = f"cu{_major(cuda)}"
        for lib in ("cuda-runtime", "cuda-nvcc", "cuda-nvrtc", "cuda-cupti", "cublas"):
            reqs.append(f"nvidia-{lib}-{suffix}=={cuda}.*")
        reqs.append("nvidia-cudnn-{}=={}.*".format(suffix, stack["cudnn"]))
    return reqs
