# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: stages
short_description: The provisioning pipeline's stages, in order
version_added: 0.1.0
description:
  - The one ordered stage list of the collection - preflight, common, nvidia_driver, cuda_toolkit, cudnn, tensorrt,
    nvidia_container_toolkit, python_env, tensorflow, env_modules, verify - that C(playbooks/provision.yml) imports and
    P(gpulab.dlstack.fleet_upgrade#role) runs.
  - Which of them a host gets is decided by P(gpulab.dlstack.preflight#role) (C(dlstack_pipeline)).
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
options:
  _terms:
    description: Not used.
    required: false
  qualified:
    description: Return fully qualified role names (V(gpulab.dlstack.common)) instead of stage names.
    type: bool
    default: false
  exclude:
    description: Stage names to leave out.
    type: list
    elements: str
    default: []
seealso:
  - plugin: gpulab.dlstack.stage_plan
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Roles of the upgrade, verification left to the upgrade's own verify step
  ansible.builtin.debug:
    msg: "{{ query('gpulab.dlstack.stages', qualified=true, exclude=['verify']) }}"
"""

RETURN = r"""
_raw:
  description: Stage (or role) names in pipeline order.
  type: list
  elements: str
"""

from typing import Any, Dict, List, Optional  # noqa: E402

from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.gpulab.dlstack.plugins.module_utils._pipeline import STAGE_NAMES  # noqa: E402

COLLECTION = "gpulab.dlstack"


class LookupModule(LookupBase):
    def run(self, terms: List[Any], variables: Optional[Dict[str, Any]] = None, **kwargs: Any) -> List[str]:
        self.set_options(var_options=variables, direct=kwargs)
        exclude = set(self.get_option("exclude") or [])
        prefix = f"{COLLECTION}." if self.get_option("qualified") else ""
        return [prefix + name for name in STAGE_NAMES if name not in exclude]
