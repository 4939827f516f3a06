# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: stack
short_description: Resolve a consistent deep-learning stack from the compatibility matrix
version_added: 0.1.0
description:
  - Same resolver as the M(gpulab.dlstack.stack_resolve) module, run on the controller.
  - Takes the request as keyword arguments; a positional term, when given, is the TensorFlow version.
  - Returns one dictionary, the resolved stack. An impossible request fails with every conflict listed.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
options:
  _terms:
    description: Optional TensorFlow version (same as O(tensorflow)).
    required: false
  tensorflow:
    description: TensorFlow version (V(2.17), V(2.6.5)) or V(latest).
    type: str
    default: latest
  cuda:
    description: CUDA toolkit version.
    type: str
  cudnn:
    description: cuDNN version.
    type: str
  tensorrt:
    description: TensorRT version for TF-TRT; implies O(want_tensorrt).
    type: str
  driver_version:
    description: NVIDIA driver version to check against the driver floors.
    type: str
  gpus:
    description: Compute capabilities, model names or PCI device ids of the GPUs.
    type: list
    elements: str
    default: []
  python:
    description: Python version.
    type: str
  os:
    description: Target operating system id (V(debian12), V(ubuntu2404), V(rhel9), ...).
    type: str
  compiler:
    description: Compiler for a source build, V(gcc-<major>) or V(clang-<major>).
    type: str
  build_from_source:
    description: Resolve for a source build.
    type: bool
    default: false
  want_tensorrt:
    description: Ask for TF-TRT.
    type: bool
    default: false
  want_xla:
    description: Build with XLA.
    type: bool
    default: true
  cpu_only:
    description: Resolve a CPU-only stack.
    type: bool
    default: false
  overrides:
    description: Matrix rows merged over the built-in data (see M(gpulab.dlstack.stack_resolve)).
    type: dict
    default: {}
seealso:
  - module: gpulab.dlstack.stack_resolve
  - plugin: gpulab.dlstack.resolve_stack
    plugin_type: filter
"""

EXAMPLES = r"""
- name: CUDA and cuDNN for TensorFlow 2.17 on an RTX 3090
  ansible.builtin.debug:
    msg: "{{ lookup('gpulab.dlstack.stack', tensorflow='2.17', gpus=['8.6']) }}"

- name: Pip requirements of the newest TensorFlow for Debian 12
  ansible.builtin.debug:
    msg: "{{ lookup('gpulab.dlstack.stack', 'latest', os='debian12')['pip_requirements'] }}"
"""

RETURN = r"""
_raw:
  description: The resolved stack, the same dictionary as RV(gpulab.dlstack.stack_resolve#module:stack).
  type: list
  elements: dict
"""

from typing import Any, Dict, List, Optional  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import (  # noqa: E402
    REQUEST_KEYS,
    ResolveError,
    conflict_message,
    resolve_stack,
)


class LookupModule(LookupBase):
    def run(self, terms: List[Any], variables: Optional[Dict[str, Any]] = None, **kwargs: Any) -> List[Dict[str, Any]]:
        self.set_options(var_options=variables, direct=kwargs)
        request = {key: self.get_option(key) for key in REQUEST_KEYS}
        if terms:
            if len(terms) > 1:
                raise AnsibleLookupError(
                    f"lookup gpulab.dlstack.stack takes at most one term (the TensorFlow version); got {terms!r}."
                )
            request["tensorflow"] = str(terms[0])
        try:
            return [resolve_stack(request)]
        except ResolveError as err:
            raise AnsibleLookupError(conflict_message(err.conflicts)) from err
