# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters os_id, stage_plan and stage_record: the provisioning pipeline for YAML (docs in the .yml files)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.module_utils._pipeline import (
    os_id,
    plan_stages,
    record_stages,
    stages_ran,
)


def os_id_filter(facts: Mapping[str, Any]) -> str:
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(f"os_id expects ansible_facts (a mapping); got {type(facts).__name__}.")
    try:
        return os_id(facts)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from err


def stage_plan_filter(
    stack: Optional[Mapping[str, Any]], gpu_profile: bool, switches: Optional[Mapping[str, Any]] = None
) -> List[Dict[str, Any]]:
    if stack is not None and not isinstance(stack, Mapping):
        raise AnsibleFilterError(f"stage_plan expects the resolved stack (a mapping); got {type(stack).__name__}.")
    return plan_stages(stack, bool(gpu_profile), switches)


def stage_record_filter(
    plan: List[Mapping[str, Any]],
    previous: Optional[Mapping[str, Any]] = None,
    run_tags: Optional[List[str]] = None,
    skip_tags: Optional[List[str]] = None,
    installed: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Dict[str, Any]]:
    ran = stages_ran(plan, list(run_tags or ["all"]), list(skip_tags or []))
    return record_stages(plan, previous, ran, installed)


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {"os_id": os_id_filter, "stage_plan": stage_plan_filter, "stage_record": stage_record_filter}
