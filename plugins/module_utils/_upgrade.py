# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet upgrade helpers: the target id of an upgrade, and which held packages an upgrade must release."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Dict, List, Mapping, Optional

# Length of the hex digest kept in a target id (48 bits: ample for the upgrades of one fleet).
DIGEST_CHARS = 12
_LABEL_OK = re.compile(r"[^A-Za-z0-9._+-]+")


def _canonical(value: Any) -> Any:
    """A JSON-ready copy with mapping keys sorted and every scalar that is not a bool or None as text."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    return str(value)


def stack_label(stack: Optional[Mapping[str, Any]]) -> str:
    """The readable part of a target id from the resolved stack: tf<ver>-py<ver>-cuda<ver>-cudnn<ver>-trt<ver>."""
    if not stack:
        return ""
    parts = [("tf", "tensorflow"), ("py", "python"), ("cuda", "cuda"), ("cudnn", "cudnn"), ("trt", "tensorrt")]
    return "-".join(f"{short}{stack.get(key) or 'none'}" for short, key in parts)


def target_id(inputs: Mapping[str, Any], label: str = "") -> str:
    """``<label>-<digest>``: the digest covers every input (any change is a new target); the label is for people.

    ``inputs`` holds every effective input of the upgrade stages (resolved stack, driver branch and version, toolkit
    and package versions, environment specs...). The label defaults to the stack label of ``inputs['stack']``.
    """
    if not isinstance(inputs, Mapping):
        raise TypeError(f"the upgrade inputs must be a mapping; got {type(inputs).__name__}")
    text = json.dumps(_canonical(inputs), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]
    stack = inputs.get("stack")
    readable = _LABEL_OK.sub("_", str(label or stack_label(stack if isinstance(stack, Mapping) else None))).strip("_")
    return f"{readable}-{digest}" if readable else digest


def hold_changes(held: List[str], installed: Mapping[str, str], wanted: Mapping[str, str]) -> Dict[str, Any]:
    """The holds an upgrade releases: exactly the held packages whose installed version differs from the wanted one.

    ``held`` is what ``apt-mark showhold`` lists, ``installed`` maps package to installed version and ``wanted`` maps
    package to the exact target version. Returns ``release`` (packages to unhold, upgrade to their wanted version and
    hold again), ``install`` (wanted but not installed: installed at the wanted version and held) and ``keep``
    (held and already at the wanted version, or held and not part of the upgrade: left held and untouched).
    """
    held_set = set(held)
    release = sorted(p for p in wanted if p in held_set and p in installed and installed[p] != wanted[p])
    install = sorted(p for p in wanted if p not in installed)
    keep = sorted(held_set - set(release))
    return {"release": release, "install": install, "keep": keep}


def parse_progress(text: Optional[str]) -> Dict[str, Any]:
    """The progress record in ``text`` as ``{'record': {...}, 'error': ''}``; a record that is not a JSON object
    (a corrupted or truncated file) gives an empty record and the reason in ``error``, so the host is upgraded again."""
    if text is None or not text.strip():
        return {"record": {}, "error": ""}
    try:
        record = json.loads(text)
    except ValueError as err:
        return {"record": {}, "error": f"not JSON ({err})"}
    if not isinstance(record, dict):
        return {"record": {}, "error": f"not a JSON object but {type(record).__name__}"}
    return {"record": record, "error": ""}
