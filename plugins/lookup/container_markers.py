# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: container_markers
short_description: The files whose presence marks a container
version_added: 0.1.0
description:
  - The marker files (C(/.dockerenv), C(/run/.containerenv)) the collection looks for on a host to tell a container,
    for a M(ansible.builtin.stat) loop whose result goes to the P(gpulab.dlstack.in_container#filter) filter.
  - The same list M(gpulab.dlstack.gpu_info) reads.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
options:
  _terms:
    description: Not used.
    required: false
"""

EXAMPLES = r"""
- name: Look for container marker files
  ansible.builtin.stat:
    path: "{{ item }}"
  loop: "{{ query('gpulab.dlstack.container_markers') }}"
  register: markers
"""

RETURN = r"""
_raw:
  description: Absolute paths of the marker files.
  type: list
  elements: str
"""

from typing import Any, Dict, List, Optional  # noqa: E402

from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import CONTAINER_MARKERS  # noqa: E402


class LookupModule(LookupBase):
    def run(self, terms: List[Any], variables: Optional[Dict[str, Any]] = None, **kwargs: Any) -> List[str]:
        return list(CONTAINER_MARKERS)
