#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stack_resolve
short_description: Resolve a consistent TensorFlow, CUDA, cuDNN, TensorRT, compiler and driver stack
version_added: 0.1.0
description:
  - Resolves any subset of TensorFlow, CUDA, cuDNN, TensorRT, driver, GPU, Python and operating system
    wishes against the collection's compatibility matrix and returns one consistent stack.
  - The matrix covers TensorFlow 2.6 to 2.21 (Python range, compiler, Bazel, CUDA, cuDNN, numpy, configure
    era, wheel target, TF-TRT), CUDA driver floors with and without minor-version compatibility, the
    compute capabilities each CUDA can target, GCC/Clang conflicts and GPU models; each row names its
    public source.
  - When the request cannot be satisfied the module fails and lists every conflict, one sentence each,
    each with a concrete fix.
  - Changes nothing on the target; pure computation, so C(connection=local) is enough.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
options:
  tensorflow:
    description:
      - TensorFlow version, V(major.minor) (V(2.17)), a full release (V(2.6.5)) or V(latest).
      - V(latest) picks the newest TensorFlow that supports the Python in use and satisfies the other wishes.
    type: str
    default: latest
  cuda:
    description:
      - CUDA toolkit version (V(12.3) or V(12.3.2)). Default is the CUDA TensorFlow was tested with.
    type: str
  cudnn:
    description:
      - cuDNN version (V(8.9) or V(8.9.7)). Default is the cuDNN TensorFlow was tested with.
    type: str
  tensorrt:
    description:
      - TensorRT version for TF-TRT (TensorFlow 2.17 and older only). Implies O(want_tensorrt).
    type: str
  driver_version:
    description:
      - NVIDIA driver version that is or will be installed (for example V(535.261.03)); checked against the
        driver floors.
    type: str
  gpus:
    description:
      - GPUs of the host, as compute capabilities (V(8.6), V(sm_86)), model names as nvidia-smi prints them
        (V(NVIDIA H200)) or PCI device ids (V(10de:2335)).
    type: list
    elements: str
    default: []
  python:
    description:
      - Python version (V(3.11)). Default is the default Python of O(os), else the newest the TensorFlow supports.
    type: str
  os:
    description:
      - Target operating system id, for example V(debian12), V(debian13), V(ubuntu2204), V(ubuntu2404), V(rhel9).
      - Gives the default Python and the compilers a source build can use.
    type: str
  compiler:
    description:
      - Compiler for a source build, V(gcc-<major>) or V(clang-<major>). Default is picked from O(os).
    type: str
  build_from_source:
    description:
      - Build the TensorFlow wheel from source; RV(stack.build) then carries the configure environment,
        Bazel flags and wheel target for the TensorFlow era.
    type: bool
    default: false
  want_tensorrt:
    description:
      - Ask for TF-TRT; fails for TensorFlow 2.18 and newer, which dropped it.
    type: bool
    default: false
  want_xla:
    description:
      - Build with XLA (V(TF_ENABLE_XLA)); wheels always carry it.
    type: bool
    default: true
  cpu_only:
    description:
      - Resolve a CPU-only stack (no CUDA, cuDNN, TensorRT or driver).
    type: bool
    default: false
  overrides:
    description:
      - Matrix rows merged over the built-in data, keyed by table
        (V(tensorflow), V(cuda), V(cudnn), V(gpus), V(os), V(compiler_conflicts)).
      - A row with an existing key replaces those fields; a new row is added; a new row may name
        C(based_on) to start from a copy of an existing row (for example an internal TensorFlow fork).
    type: dict
    default: {}
seealso:
  - plugin: gpulab.dlstack.stack
    plugin_type: lookup
  - plugin: gpulab.dlstack.resolve_stack
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Resolve TensorFlow 2.17 for an H200 with TF-TRT
  gpulab.dlstack.stack_resolve:
    tensorflow: "2.17"
    gpus: ["9.0"]
    want_tensorrt: true
  register: resolved

- name: Newest TensorFlow for this host, built from source
  gpulab.dlstack.stack_resolve:
    os: "{{ ansible_facts | gpulab.dlstack.os_id }}"
    gpus: "{{ dlstack_gpus | map(attribute='compute_capability') | list }}"
    build_from_source: true
  register: resolved

- name: Add an internal TensorFlow fork and a GPU the matrix does not know
  gpulab.dlstack.stack_resolve:
    tensorflow: "2.17+acme"
    gpus: ["ACME Accelerator X"]
    overrides:
      tensorflow:
        - version: "2.17+acme"
          based_on: "2.17"
          pip_package: acme-tensorflow
      gpus:
        - name: ACME Accelerator X
          compute_capability: "8.9"
"""

RETURN = r"""
stack:
  description: The resolved stack.
  returned: success
  type: dict
  contains:
    tensorflow:
      description: TensorFlow version as requested (V(major.minor) or full).
      type: str
      sample: "2.17"
    python:
      description: Python major.minor.
      type: str
      sample: "3.11"
    numpy:
      description: numpy version specifier.
      type: str
      sample: ">=1.23.5,<2"
    cuda:
      description: CUDA toolkit major.minor for the host or the build; null for CPU-only.
      type: str
      sample: "12.3"
    cudnn:
      description: cuDNN X.Y.Z; null for CPU-only.
      type: str
      sample: "8.9.7"
    tensorrt:
      description: TensorRT version for TF-TRT, or null when not requested or impossible (reason in notes).
      type: str
      sample: "8.6.1"
    bazel:
      description: Bazel version of the TensorFlow tree (C(.bazelversion)).
      type: str
      sample: "6.5.0"
    compiler:
      description: Compiler family, major version, the tested one and its path.
      type: dict
      sample: {"family": "clang", "version": "17", "tested": {"family": "clang", "version": "17.0.6"},
               "path": "/usr/lib/llvm-17/bin/clang"}
    driver_min:
      description: Lowest NVIDIA driver for the CUDA in use without minor-version compatibility; null for CPU-only.
      type: str
      sample: "545.23.06"
    driver_min_compat:
      description: Lowest NVIDIA driver through CUDA minor-version compatibility.
      type: str
      sample: "525.60.13"
    compute_capabilities:
      description: Compute capabilities of the GPUs given.
      type: list
      elements: str
      sample: ["9.0"]
    build:
      description: Configure era, configure environment, Bazel flags, command and wheel target.
      type: dict
      sample: {"era": "configure_clang", "bazel_target": "//tensorflow/tools/pip_package:wheel"}
    pip_requirements:
      description: Pip requirement strings for the TensorFlow wheel and numpy.
      type: list
      elements: str
      sample: ["tensorflow[and-cuda]==2.17.*", "numpy>=1.26.0,<2"]
    notes:
      description: Explanations of defaults, untested combinations and null values.
      type: list
      elements: str
    unverified:
      description:
        - The facts this stack rests on that the matrix marks unverified (C([U]), no primary source confirmed
          them), one entry per fact naming its row and clause; empty when every fact used is sourced. A note
          repeats them.
      type: list
      elements: str
      sample: ["TensorFlow 2.17: TensorRT ceiling 8.6 and default 8.6.1 [U]"]
conflicts:
  description: One sentence per conflict, each with a fix.
  returned: failure
  type: list
  elements: str
  sample: ["TensorFlow 2.18 has no TF-TRT (TensorRT support is disabled in CUDA builds since 2.18); ..."]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import (
    ResolveError,
    conflict_message,
    resolve_stack,
)

ARGUMENT_SPEC = {
    "tensorflow": {"type": "str", "default": "latest"},
    "cuda": {"type": "str"},
    "cudnn": {"type": "str"},
    "tensorrt": {"type": "str"},
    "driver_version": {"type": "str"},
    "gpus": {"type": "list", "elements": "str", "default": []},
    "python": {"type": "str"},
    "os": {"type": "str"},
    "compiler": {"type": "str"},
    "build_from_source": {"type": "bool", "default": False},
    "want_tensorrt": {"type": "bool", "default": False},
    "want_xla": {"type": "bool", "default": True},
    "cpu_only": {"type": "bool", "default": False},
    "overrides": {"type": "dict", "default": {}},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        stack = resolve_stack(dict(module.params))
    except ResolveError as err:
        module.fail_json(msg=conflict_message(err.conflicts), conflicts=err.conflicts)
        return
    module.exit_json(changed=False, stack=stack)


if __name__ == "__main__":
    main()
