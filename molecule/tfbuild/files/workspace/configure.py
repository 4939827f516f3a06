"""Stand-in for TensorFlow's configure.py with the same contract.

Every setting comes from an environment variable; a missing or empty one makes it ask on
stdin, as TensorFlow's does, so a run with stdin closed fails instead of hanging. It writes
.tf_configure.bazelrc in the line format TensorFlow's configure.py uses (plus CC_OPT_FLAGS as an
action_env, because this workspace compiles in a genrule).
"""

from __future__ import annotations

import os
import sys

REQUIRED = ("PYTHON_BIN_PATH", "TF_NEED_CUDA", "TF_NEED_ROCM", "TF_ENABLE_XLA", "CC_OPT_FLAGS")
CUDA_LOCAL = ("TF_CUDA_VERSION", "TF_CUDNN_VERSION", "TF_CUDA_PATHS", "TF_CUDA_COMPUTE_CAPABILITIES")


def ask(name: str) -> str:
    value = os.environ.get(name, "")
    if value:
        return value
    sys.stdout.write(f"Please specify {name}: ")
    sys.stdout.flush()
    answer = sys.stdin.readline().strip()
    if not answer:
        sys.exit(f"configure.py: {name} is not set and no answer was given on stdin")
    return answer


def main() -> None:
    lines = []
    python = ask("PYTHON_BIN_PATH")
    lines.append(f'build --action_env PYTHON_BIN_PATH="{python}"')
    lines.append(f'build --python_path="{python}"')
    values = {name: ask(name) for name in REQUIRED[1:]}
    if values["TF_ENABLE_XLA"] == "1":
        lines.append("build:xla --define with_xla_support=true")
        lines.append("build --config=xla")
    if values["TF_NEED_CUDA"] == "1":
        for name in CUDA_LOCAL:
            lines.append(f'build --action_env {name}="{ask(name)}"')
    for flag in values["CC_OPT_FLAGS"].split():
        lines.append(f"build:opt --copt={flag}")
        lines.append(f"build:opt --host_copt={flag}")
    # The probe is compiled by a genrule, which sees action_env but not --copt.
    lines.append('build:opt --action_env CC_OPT_FLAGS="{}"'.format(values["CC_OPT_FLAGS"]))
    lines.append("build:opt --define with_default_optimizations=true")
    with open(".tf_configure.bazelrc", "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print("Configuration finished")


if __name__ == "__main__":
    main()
