# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters resolve_stack and stack_resolution: the stack resolver of gpulab.dlstack as Jinja filters (docs in
resolve_stack.yml and stack_resolution.yml)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import (
    ResolveError,
    conflict_message,
    resolve_stack,
)


def _request(request: Any, name: str) -> Dict[str, Any]:
    if not isinstance(request, Mapping):
        raise AnsibleFilterError(
            f"{name} expects a mapping such as {{'tensorflow': '2.17'}}; got {type(request).__name__}."
        )
    return dict(request)


def resolve_stack_filter(request: Mapping[str, Any], overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Resolve a request mapping to a stack; ``overrides`` is merged into the request's own overrides."""
    merged = _request(request, "resolve_stack")
    if overrides:
        combined = dict(merged.get("overrides") or {})
        for table, rows in overrides.items():
            combined[table] = list(combined.get(table) or []) + list(rows or [])
        merged["overrides"] = combined
    try:
        return resolve_stack(merged)
    except ResolveError as err:
        raise AnsibleFilterError(conflict_message(err.conflicts)) from err


def stack_resolution_filter(request: Mapping[str, Any]) -> Dict[str, Any]:
    """The stack_resolve module's result, computed in the calling process: {'stack': ...}, or for an impossible
    request {'failed': True, 'msg': ..., 'conflicts': [...]} instead of an error."""
    try:
        return {"changed": False, "stack": resolve_stack(_request(request, "stack_resolution"))}
    except ResolveError as err:
        conflicts = list(err.conflicts)
        return {"changed": False, "failed": True, "msg": conflict_message(conflicts), "conflicts": conflicts}


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {"resolve_stack": resolve_stack_filter, "stack_resolution": stack_resolution_filter}
