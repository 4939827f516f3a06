# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter resolve_stack: the stack resolver of gpulab.dlstack as a Jinja filter (docs in resolve_stack.yml)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import (
    ResolveError,
    conflict_message,
    resolve_stack,
)


def resolve_stack_filter(request: Mapping[str, Any], overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Resolve a request mapping to a stack; ``overrides`` is merged into the request's own overrides."""
    if not isinstance(request, Mapping):
        raise AnsibleFilterError(
            f"resolve_stack expects a mapping such as {{'tensorflow': '2.17'}}; got {type(request).__name__}."
        )
    merged = dict(request)
    if overrides:
        combined = dict(merged.get("overrides") or {})
        for table, rows in overrides.items():
            combined[table] = list(combined.get(table) or []) + list(rows or [])
        merged["overrides"] = combined
    try:
        return resolve_stack(merged)
    except ResolveError as err:
        raise AnsibleFilterError(conflict_message(err.conflicts)) from err


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {"resolve_stack": resolve_stack_filter}
