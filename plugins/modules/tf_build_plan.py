#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tf_build_plan
short_description: Plan a TensorFlow source build (configure environment, Bazel command, limits, hash)
version_added: 0.1.0
description:
  - Renders the full plan of a TensorFlow source build from a stack resolved by
    M(gpulab.dlstack.stack_resolve) and facts of the build host.
  - Returns the configure environment for the release's era (local CUDA up to 2.17, hermetic CUDA from
    2.18), the C(.tf_configure.bazelrc) lines configure.py should write, the Bazel command line with
    C(--jobs) and C(--local_ram_resources) derived from the host's cores and memory, the wheel directory and a
    hash of everything that changes the wheel (the wheelhouse key).
  - Fails before any build with one sentence per problem when the Bazel version is outside the release's
    range, the CUDA cannot target a requested compute capability, TensorRT is asked of a release without
    TF-TRT, or the host has too little memory or disk for the build.
  - Changes nothing on the target.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
options:
  stack:
    description:
      - The resolved stack (RV(gpulab.dlstack.stack_resolve#module:stack), the C(dlstack_stack) fact).
    type: dict
    required: true
  cores:
    description:
      - CPU cores of the build host (C(ansible_facts['processor_vcpus'])).
    type: int
    required: true
  memory_mb:
    description:
      - Memory of the build host in MB (C(ansible_facts['memtotal_mb'])).
    type: int
    required: true
  disk_free_gb:
    description:
      - Free space under the Bazel output root in GB; checked against O(min_disk_gb) when given.
    type: float
  cpu_flags:
    description:
      - C(/proc/cpuinfo) flags of the build host. With C(-march=native) they are part of the configuration hash,
        so a wheel built on another CPU model is not taken for this one.
    type: list
    elements: str
    default: []
  min_disk_gb:
    description:
      - Free space the build needs in GB. Default is the stack's C(resources.disk_gb).
    type: float
  source_dir:
    description:
      - Directory of the TensorFlow source tree on the build host.
    type: path
    default: /var/tmp/dlstack-tfbuild/src
  source_ref:
    description:
      - Identity of the source (git commit, tarball checksum or directory tree hash); part of the configuration hash.
    type: str
  python_bin:
    description:
      - Python interpreter for configure.py and the build (C(PYTHON_BIN_PATH)). Default is the stack's.
    type: path
  cpu_target:
    description:
      - V(native) compiles for the build host (C(-march=native)); V(fleet) for the instruction sets every host
        in O(fleet_cpu_flags) has.
    type: str
    choices: [native, fleet]
    default: native
  fleet_cpu_flags:
    description:
      - One list of C(/proc/cpuinfo) flags per host that will run the wheel (used with O(cpu_target=fleet)).
    type: list
    elements: list
    default: []
  cc_opt_flags:
    description:
      - Explicit C(CC_OPT_FLAGS); overrides O(cpu_target).
    type: str
  compute_capabilities:
    description:
      - Compute capabilities of the whole fleet's GPUs (V(8.0), V(sm_90)). Default is the stack's.
    type: list
    elements: str
  cuda_paths:
    description:
      - Prefixes of CUDA, cuDNN and NCCL for C(TF_CUDA_PATHS) (local-CUDA eras, up to TensorFlow 2.17).
    type: list
    elements: path
  tensorrt_path:
    description:
      - Prefix of TensorRT, appended to C(TF_CUDA_PATHS) when the stack has TensorRT.
    type: path
  local_cuda_path:
    description:
      - C(LOCAL_CUDA_PATH) for hermetic CUDA (2.18+), a directory laid out like the NVIDIA redistributable.
    type: path
  local_cudnn_path:
    description:
      - C(LOCAL_CUDNN_PATH) for hermetic CUDA.
    type: path
  local_nccl_path:
    description:
      - C(LOCAL_NCCL_PATH) for hermetic CUDA.
    type: path
  extra_env:
    description:
      - More configure variables, for example mirrored redistributable settings; they win over computed ones.
      - Keys are environment variable names (letters, digits and underscores, not starting with a digit); values
        are strings, numbers or booleans on one line.
    type: dict
    default: {}
  output_user_root:
    description:
      - Bazel C(--output_user_root).
    type: path
    default: /var/tmp/dlstack-tfbuild/bazel-root
  disk_cache:
    description:
      - Bazel C(--disk_cache) directory.
    type: path
  remote_cache:
    description:
      - Bazel C(--remote_cache) URL.
    type: str
  repository_cache:
    description:
      - Bazel C(--repository_cache) directory (offline builds).
    type: path
  distdir:
    description:
      - Bazel C(--distdir) directory of pre-downloaded archives (offline builds).
    type: path
  jobs:
    description:
      - Bazel C(--jobs); V(0) derives it from cores and memory. Negative values are refused.
    type: int
    default: 0
  ram_mb_per_job:
    description:
      - Memory one compile job may take, in MB.
    type: int
    default: 2560
  reserve_ram_mb:
    description:
      - Memory left to the system and the Bazel server, in MB.
    type: int
    default: 2048
  bazel_binary:
    description:
      - Bazel executable to run.
    type: path
    default: bazel
  bazel_version:
    description:
      - Version of O(bazel_binary); checked against the release's range.
    type: str
  wheel_target:
    description:
      - Bazel target that builds the wheel. Default is the era's target from the stack.
    type: str
  wheel_dir:
    description:
      - Directory the wheel appears in. Default follows the target.
    type: path
  extra_bazel_flags:
    description:
      - More Bazel build flags, each starting with C(--).
    type: list
    elements: str
    default: []
  progress_rate_limit:
    description:
      - Seconds between Bazel progress lines in the log.
    type: int
    default: 30
  want_tensorrt:
    description:
      - Fail unless the stack builds TF-TRT.
    type: bool
    default: false
seealso:
  - module: gpulab.dlstack.stack_resolve
"""

EXAMPLES = r"""
- name: Plan a portable build for the fleet
  gpulab.dlstack.tf_build_plan:
    stack: "{{ dlstack_stack }}"
    cores: "{{ ansible_facts['processor_vcpus'] }}"
    memory_mb: "{{ ansible_facts['memtotal_mb'] }}"
    cpu_target: fleet
    fleet_cpu_flags: "{{ groups['gpu'] | map('extract', hostvars, ['ansible_facts', 'cpu_flags']) | list }}"
    compute_capabilities: ["8.0", "9.0"]
  register: plan
"""

RETURN = r"""
plan:
  description: The build plan.
  returned: success
  type: dict
  contains:
    config_hash:
      description: Hash of everything that changes the wheel; the wheelhouse key.
      type: str
      sample: 3f2a9c0d1e4b5a67
    env:
      description: configure.py environment, every variable set.
      type: dict
      sample: {"TF_NEED_CUDA": "1", "CC_OPT_FLAGS": "-march=native -Wno-sign-compare"}
    configure:
      description: configure.py argv, stdin and lines that must appear in C(.tf_configure.bazelrc) afterwards.
      type: dict
      sample: {"argv": ["/usr/bin/python3", "configure.py"], "stdin": "/dev/null"}
    tf_configure_bazelrc:
      description: The C(.tf_configure.bazelrc) lines configure.py writes for this environment.
      type: str
      sample: "build --action_env PYTHON_BIN_PATH=\"/usr/bin/python3\"\n"
    bazel:
      description: Bazel startup flags, build flags, target, argv and command line.
      type: dict
      sample: {"target": "//tensorflow/tools/pip_package:wheel", "argv": ["bazel", "build"]}
    post_build_argv:
      description: Command that writes the wheel after the build (TensorFlow 2.15 and older), else empty.
      type: list
      elements: str
      sample: []
    wheel_dir:
      description: Directory the wheel appears in.
      type: str
      sample: /var/tmp/dlstack-tfbuild/src/bazel-bin/tensorflow/tools/pip_package/wheel_house
    resources:
      description: Cores, memory, jobs and RAM budget used, and the disk the build needs.
      type: dict
      sample: {"jobs": 6, "local_ram_resources": 14336, "disk_gb": 74.0}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix
from ansible_collections.gpulab.dlstack.plugins.module_utils._tfbuild import BuildPlanError, build_plan

_HOST_KEYS = ("cores", "memory_mb", "disk_free_gb", "cpu_flags")


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "stack": {"type": "dict", "required": True},
            "cores": {"type": "int", "required": True},
            "memory_mb": {"type": "int", "required": True},
            "disk_free_gb": {"type": "float"},
            "cpu_flags": {"type": "list", "elements": "str", "default": []},
            "min_disk_gb": {"type": "float"},
            "source_dir": {"type": "path", "default": "/var/tmp/dlstack-tfbuild/src"},
            "source_ref": {"type": "str"},
            "python_bin": {"type": "path"},
            "cpu_target": {"type": "str", "choices": ["native", "fleet"], "default": "native"},
            "fleet_cpu_flags": {"type": "list", "elements": "list", "default": []},
            "cc_opt_flags": {"type": "str"},
            "compute_capabilities": {"type": "list", "elements": "str"},
            "cuda_paths": {"type": "list", "elements": "path"},
            "tensorrt_path": {"type": "path"},
            "local_cuda_path": {"type": "path"},
            "local_cudnn_path": {"type": "path"},
            "local_nccl_path": {"type": "path"},
            "extra_env": {"type": "dict", "default": {}},
            "output_user_root": {"type": "path", "default": "/var/tmp/dlstack-tfbuild/bazel-root"},
            "disk_cache": {"type": "path"},
            "remote_cache": {"type": "str"},
            "repository_cache": {"type": "path"},
            "distdir": {"type": "path"},
            "jobs": {"type": "int", "default": 0},
            "ram_mb_per_job": {"type": "int", "default": 2560},
            "reserve_ram_mb": {"type": "int", "default": 2048},
            "bazel_binary": {"type": "path", "default": "bazel"},
            "bazel_version": {"type": "str"},
            "wheel_target": {"type": "str"},
            "wheel_dir": {"type": "path"},
            "extra_bazel_flags": {"type": "list", "elements": "str", "default": []},
            "progress_rate_limit": {"type": "int", "default": 30},
            "want_tensorrt": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    params = dict(module.params)
    host = {key: params.pop(key) for key in _HOST_KEYS}
    stack = params.pop("stack")
    try:
        plan = build_plan(stack, host, params, cuda_rows=_matrix.CUDA)
    except BuildPlanError as err:
        count = len(err.problems)
        module.fail_json(
            msg="The TensorFlow build cannot start ({} problem{}): {}".format(
                count, "" if count == 1 else "s", " ".join(f"({i}) {p}" for i, p in enumerate(err.problems, 1))
            ),
            problems=err.problems,
        )
    module.exit_json(changed=False, plan=plan)


if __name__ == "__main__":
    main()
