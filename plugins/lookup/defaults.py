# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: defaults
short_description: The collection's default for a collection-wide path setting
version_added: 0.1.0
description:
  - The default of C(dlstack_prefix) (V(/opt/dlstack)), C(dlstack_state_dir) (V(/var/lib/dlstack)) or
    C(dlstack_cache_dir) (V(/var/cache/dlstack)), held in this one place.
  - P(gpulab.dlstack.common#role) sets the three variables to these values in its defaults; every other role reads
    them as C(dlstack_prefix | default(lookup('gpulab.dlstack.defaults', 'dlstack_prefix'))), so a role used on its
    own, without common in the play, installs where the whole pipeline would.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
options:
  _terms:
    description: Names of the settings, V(dlstack_prefix), V(dlstack_state_dir) or V(dlstack_cache_dir).
    required: true
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Where the managed Python environments go, the host's setting or else the collection's default
  ansible.builtin.debug:
    msg: "{{ dlstack_prefix | default(lookup('gpulab.dlstack.defaults', 'dlstack_prefix')) }}/envs"
"""

RETURN = r"""
_raw:
  description: The default of each setting named, in order.
  type: list
  elements: str
"""

from typing import Any, Dict, List, Optional  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402

DEFAULTS = {
    "dlstack_prefix": "/opt/dlstack",
    "dlstack_state_dir": "/var/lib/dlstack",
    "dlstack_cache_dir": "/var/cache/dlstack",
}


class LookupModule(LookupBase):
    def run(self, terms: List[Any], variables: Optional[Dict[str, Any]] = None, **kwargs: Any) -> List[str]:
        unknown = [str(term) for term in terms if term not in DEFAULTS]
        if unknown:
            raise AnsibleLookupError(
                f"gpulab.dlstack.defaults holds no default for {', '.join(unknown)}; "
                f"ask for one of {', '.join(DEFAULTS)}."
            )
        return [DEFAULTS[term] for term in terms]
