# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Merge keys into a JSON configuration file (Docker's daemon.json) without changing the values already there.

Ansible's from_json/to_nice_json round trip goes through Python floats: 1e400 becomes Infinity (which Docker
refuses), 1.10 becomes 1.1. Here every number is kept as the token the file holds; only the merged keys change.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping


class RawNumber(str):
    """A JSON number token, written back exactly as read."""


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON (Docker refuses it)")


def loads_exact(text: str) -> Any:
    """Parse JSON keeping every number as its token; NaN and Infinity are refused."""
    return json.loads(text, parse_float=RawNumber, parse_int=RawNumber, parse_constant=_no_constant)


def dumps_exact(value: Any, indent: int = 4, level: int = 0) -> str:
    """JSON text of loads_exact's result, keys sorted, indented like to_nice_json."""
    pad, inner = " " * (indent * level), " " * (indent * (level + 1))
    if isinstance(value, RawNumber):
        return str(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {dumps_exact(value[k], indent, level + 1)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + dumps_exact(v, indent, level + 1) for v in value) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=False)


def _merge(base: Dict[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def docker_runtime_merge(text: str, runtime_path: str, set_default: bool) -> Dict[str, Any]:
    """What registering the nvidia runtime does to a daemon.json text.

    Returns error (a sentence, or "" when the text is a JSON object or empty), configured (the runtime, and the
    default runtime when asked, are there already), changed (the merge changes the file) and content (the new text).
    """
    result: Dict[str, Any] = {"error": "", "configured": False, "changed": False, "content": ""}
    try:
        current = loads_exact(text) if text.strip() else {}
    except ValueError as err:
        result["error"] = f"it is not valid JSON ({err})"
        return result
    if not isinstance(current, dict):
        result["error"] = f"it holds a JSON {type(current).__name__}, not an object"
        return result
    runtimes = current.get("runtimes")
    has_runtime = isinstance(runtimes, dict) and "nvidia" in runtimes
    result["configured"] = has_runtime and (not set_default or current.get("default-runtime") == "nvidia")
    extra: Dict[str, Any] = {"runtimes": {"nvidia": {"path": runtime_path, "args": []}}}
    if set_default:
        extra["default-runtime"] = "nvidia"
    wanted = _merge(current, extra)
    result["content"] = dumps_exact(wanted) + "\n"
    result["changed"] = dumps_exact(wanted) != dumps_exact(current)
    return result
