# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters upgrade_target_id, hold_changes and progress_record for the fleet upgrade (docs in the .yml files)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.module_utils._upgrade import hold_changes, parse_progress, target_id


def upgrade_target_id_filter(inputs: Mapping[str, Any], label: Optional[str] = None) -> str:
    if not isinstance(inputs, Mapping):
        raise AnsibleFilterError(
            "upgrade_target_id expects the upgrade inputs (a mapping such as {'stack': ...}); "
            f"got {type(inputs).__name__}."
        )
    return target_id(inputs, label or "")


def hold_changes_filter(held: List[str], installed: Mapping[str, str], wanted: Mapping[str, str]) -> Dict[str, Any]:
    if not isinstance(installed, Mapping) or not isinstance(wanted, Mapping):
        raise AnsibleFilterError(
            "hold_changes expects the held list, then installed and wanted package-to-version mappings."
        )
    return hold_changes(list(held or []), installed, wanted)


def progress_record_filter(text: Optional[str]) -> Dict[str, Any]:
    return parse_progress(text if isinstance(text, str) else None)


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {
            "upgrade_target_id": upgrade_target_id_filter,
            "hold_changes": hold_changes_filter,
            "progress_record": progress_record_filter,
        }
