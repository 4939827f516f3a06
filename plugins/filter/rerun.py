# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter whole_stage: whether this run's tag selection runs every task of a stage (docs in whole_stage.yml)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.module_utils._fingerprint import whole_stage


def whole_stage_filter(stage: str, run_tags: Optional[List[Any]] = None, skip_tags: Optional[List[Any]] = None) -> bool:
    if not isinstance(stage, str) or not stage:
        raise AnsibleFilterError(f"whole_stage expects a stage name (its tag), e.g. 'common'; got {stage!r}.")
    return whole_stage(stage, [str(t) for t in run_tags or []], [str(t) for t in skip_tags or []])


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {"whole_stage": whole_stage_filter}
