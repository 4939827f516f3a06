# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render the full plan of a TensorFlow source build from a resolved stack.

Input: the stack returned by ``_resolve.resolve_stack`` (its ``build`` entry holds the
era's configure environment, Bazel flags and wheel target), facts of the build host
(cores, memory, free disk, CPU flags, which key the wheel of a -march=native build), the
CPU flags of every host that will run the wheel, and build options (paths, caches,
limits). Output: the configure environment, the ``.tf_configure.bazelrc`` lines
configure.py is expected to write, the Bazel command line with resource limits, the wheel
location and a hash of everything that changes the wheel. Pure functions; no I/O.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shlex
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpulab.dlstack.plugins.module_utils import _validate
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import sm_label, vtuple
from ansible_collections.gpulab.dlstack.plugins.module_utils._validate import Range

# Build mechanics, not compatibility data (that lives in _matrix.py).
#   cpu_flag_copts: /proc/cpuinfo flag -> GCC/Clang option, in the order they are emitted (SSE3 is "pni").
#   default_ram_mb_per_job: one C++ compile of TensorFlow peaks near 2-2.5 GB (tensorflow#35051).
#   default_reserve_ram_mb: memory left to the OS, the Bazel server (JVM) and the linker.
#   always_copts: appended to CC_OPT_FLAGS the way TensorFlow's configure.py default does.
MECHANICS: Dict[str, Any] = {
    "cpu_flag_copts": [
        ("pni", "-msse3"),
        ("ssse3", "-mssse3"),
        ("sse4_1", "-msse4.1"),
        ("sse4_2", "-msse4.2"),
        ("popcnt", "-mpopcnt"),
        ("avx", "-mavx"),
        ("f16c", "-mf16c"),
        ("fma", "-mfma"),
        ("avx2", "-mavx2"),
        ("bmi2", "-mbmi2"),
        ("avx512f", "-mavx512f"),
        ("avx512cd", "-mavx512cd"),
        ("avx512bw", "-mavx512bw"),
        ("avx512dq", "-mavx512dq"),
        ("avx512vl", "-mavx512vl"),
        ("avx512_vnni", "-mavx512vnni"),
    ],
    "always_copts": ["-Wno-sign-compare"],
    "default_ram_mb_per_job": 2560,
    "default_reserve_ram_mb": 2048,
    "source": "TF install docs (--local_ram_resources, -march=native advice); tensorflow#35051 (cc1plus killed); "
    "Spack/EasyBuild TensorFlow recipes (--jobs cap, --output_user_root, stdin closed)",
}

# Settings that change where and how fast Bazel works but not the wheel: left out of the hash.
_UNHASHED_FLAG_PREFIXES = (
    "--jobs",
    "--local_ram_resources",
    "--local_cpu_resources",
    "--disk_cache",
    "--remote_cache",
    "--repository_cache",
    "--distdir",
    "--curses",
    "--color",
    "--show_progress_rate_limit",
    "--verbose_failures",
)

OPTION_DEFAULTS: Dict[str, Any] = {
    "source_dir": "/var/tmp/dlstack-tfbuild/src",
    "source_ref": None,
    "python_bin": None,
    "cpu_target": "native",
    "fleet_cpu_flags": [],
    "cc_opt_flags": None,
    "compute_capabilities": None,
    "cuda_paths": None,
    "tensorrt_path": None,
    "local_cuda_path": None,
    "local_cudnn_path": None,
    "local_nccl_path": None,
    "extra_env": {},
    "output_user_root": "/var/tmp/dlstack-tfbuild/bazel-root",
    "disk_cache": None,
    "remote_cache": None,
    "repository_cache": None,
    "distdir": None,
    "jobs": 0,
    "ram_mb_per_job": MECHANICS["default_ram_mb_per_job"],
    "reserve_ram_mb": MECHANICS["default_reserve_ram_mb"],
    "min_disk_gb": None,
    "bazel_binary": "bazel",
    "bazel_version": None,
    "wheel_target": None,
    "wheel_dir": None,
    "extra_bazel_flags": [],
    "progress_rate_limit": 30,
    "want_tensorrt": None,
}


# Accepted values of the numeric inputs (the build host's facts and the resource options).
INPUT_LIMITS: Dict[str, Range] = {
    "cores": Range(1, 4096, "CPU cores, from ansible_facts['processor_vcpus']", integer=True),
    "memory_mb": Range(1, 1 << 24, "MB, from ansible_facts['memtotal_mb']", integer=True),
    "disk_free_gb": Range(0, 1 << 20, "GB"),
    "min_disk_gb": Range(0, 1 << 20, "GB"),
    "jobs": Range(0, 4096, "Bazel jobs; 0 derives it from cores and memory", integer=True),
    "ram_mb_per_job": Range(1, 1 << 20, "MB", integer=True),
    "reserve_ram_mb": Range(0, 1 << 20, "MB", integer=True),
    "progress_rate_limit": Range(1, 86400, "seconds", integer=True),
}
_STACK_FIX = "pass the stack returned by gpulab.dlstack.stack_resolve (dlstack_stack) unchanged"


def stack_problems(stack: Any) -> List[str]:
    """Shape problems of the stack's build section that would stop the plan with a traceback."""
    if not isinstance(stack, Mapping):
        return [f"stack is {_validate.kind(stack)}, not a dict; {_STACK_FIX}."]
    build = stack.get("build")
    if build is None:
        return []
    if not isinstance(build, Mapping):
        return [f"stack.build is {_validate.kind(build)}, not a dict; {_STACK_FIX}."]
    problems: List[str] = []
    env = build.get("env")
    if env is not None and not isinstance(env, Mapping):
        problems.append(f"stack.build.env is {_validate.kind(env)}, not a dict of configure variables; {_STACK_FIX}.")
    elif env:
        problems += _validate.env_names("stack.build.env", env)
    flags = build.get("bazel_flags")
    if flags is not None and not (isinstance(flags, list) and all(isinstance(f, str) for f in flags)):
        problems.append(f"stack.build.bazel_flags is {_validate.kind(flags)}, not a list of strings; {_STACK_FIX}.")
    for key in ("bazel_target", "wheel_dir", "era"):
        value = build.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"stack.build.{key} is {_validate.kind(value)}, not a string; {_STACK_FIX}.")
    ccs = stack.get("compute_capabilities")
    if ccs is not None and not isinstance(ccs, list):
        problems.append(f"stack.compute_capabilities is {_validate.kind(ccs)}, not a list; {_STACK_FIX}.")
    resources = stack.get("resources")
    if resources is not None and not isinstance(resources, Mapping):
        problems.append(f"stack.resources is {_validate.kind(resources)}, not a dict; {_STACK_FIX}.")
    return problems


def input_problems(stack: Any, host: Mapping[str, Any], options: Mapping[str, Any]) -> List[str]:
    """Every problem with the inputs that must stop the plan before anything else is computed."""
    problems = stack_problems(stack)
    problems += _validate.numbers(
        host, {k: v for k, v in INPUT_LIMITS.items() if k in ("cores", "memory_mb", "disk_free_gb")}
    )
    problems += _validate.numbers(options, {k: v for k, v in INPUT_LIMITS.items() if k in options})
    extra_env = options.get("extra_env")
    if extra_env is not None and not isinstance(extra_env, Mapping):
        problems.append(f"extra_env is {_validate.kind(extra_env)}; give a dict of variable name to value.")
    elif extra_env:
        problems += _validate.env_names("extra_env", extra_env)
    for flag in options.get("extra_bazel_flags") or []:
        text = str(flag)
        if not text.startswith("--") or any(ch in text for ch in "\n\r\0"):
            problems.append(
                f"extra_bazel_flags entry {_validate.show(text)} is not a Bazel build flag; write each as "
                "--name or --name=value on one line."
            )
    for position, flags in enumerate(options.get("fleet_cpu_flags") or []):
        if not isinstance(flags, list):
            problems.append(
                f"fleet_cpu_flags[{position}] is {_validate.kind(flags)}, not a list; give one list of "
                "/proc/cpuinfo flags per host."
            )
    return problems


class BuildPlanError(Exception):
    """The build cannot start; ``problems`` holds one sentence per problem, each with a fix."""

    def __init__(self, problems: List[str]) -> None:
        self.problems = list(problems)
        super().__init__(" ".join(self.problems))


def parse_cpuinfo_flags(text: str) -> List[str]:
    """CPU flags from the first 'flags' line of /proc/cpuinfo text."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return sorted(set(value.split()))
    return []


def portable_copts(fleet_cpu_flags: Sequence[Sequence[str]]) -> List[str]:
    """Compiler options for the instruction sets every host of the fleet has."""
    sets = [{str(f) for f in flags} for flags in fleet_cpu_flags]
    common = set.intersection(*sets) if sets else set()
    return [opt for flag, opt in MECHANICS["cpu_flag_copts"] if flag in common]


def cc_opt_flags(options: Mapping[str, Any]) -> str:
    """CC_OPT_FLAGS: explicit value, -march=native for this host, or the fleet's common instruction sets."""
    explicit = options.get("cc_opt_flags")
    if explicit:
        return " ".join(str(explicit).split())
    always = list(MECHANICS["always_copts"])
    if options.get("cpu_target") == "fleet":
        fleet = options.get("fleet_cpu_flags") or []
        if not fleet:
            raise BuildPlanError(
                [
                    "cpu_target is 'fleet' but no CPU flags of the fleet were given; pass fleet_cpu_flags "
                    "(one list of /proc/cpuinfo flags per host) or set cpu_target: native."
                ]
            )
        return " ".join(portable_copts(fleet) + always)
    return " ".join(["-march=native", *always])


def resource_limits(host: Mapping[str, Any], options: Mapping[str, Any]) -> Dict[str, Any]:
    """--jobs and --local_ram_resources from the build host's cores and memory, or a clear error."""
    cores = int(host.get("cores") or 1)
    memory_mb = int(host.get("memory_mb") or 0)
    per_job = int(options.get("ram_mb_per_job") or MECHANICS["default_ram_mb_per_job"])
    reserve_opt = options.get("reserve_ram_mb")
    reserve = int(reserve_opt) if reserve_opt is not None else 0
    usable = memory_mb - reserve
    by_ram = usable // per_job if per_job > 0 else cores
    wanted = int(options.get("jobs") or 0)
    problems = []
    if memory_mb <= 0:
        problems.append("The build host's memory is unknown; pass host.memory_mb (ansible_facts['memtotal_mb']).")
    elif by_ram < 1:
        problems.append(
            f"The build host has {memory_mb} MB of memory; one compile job needs {per_job} MB plus {reserve} MB "
            f"for the OS and Bazel; build on a host with at least {per_job + reserve} MB or lower ram_mb_per_job "
            "if your build is smaller."
        )
    elif wanted > by_ram:
        problems.append(
            f"jobs={wanted} needs about {wanted * per_job + reserve} MB of memory ({per_job} MB per job plus "
            f"{reserve} MB reserve) but the build host has {memory_mb} MB; set jobs to {by_ram} or less "
            "(or 0 to derive it), or compile jobs die with 'cc1plus killed'."
        )
    if problems:
        raise BuildPlanError(problems)
    jobs = wanted if wanted > 0 else max(1, min(cores, by_ram))
    return {
        "cores": cores,
        "memory_mb": memory_mb,
        "ram_mb_per_job": per_job,
        "reserve_ram_mb": reserve,
        "jobs": jobs,
        "jobs_by_ram": by_ram,
        "local_ram_resources": usable,
        "local_cpu_resources": cores,
    }


def check_disk(host: Mapping[str, Any], stack: Mapping[str, Any], options: Mapping[str, Any]) -> Optional[float]:
    """Needed GB; raise when the host reports less free space."""
    needed = options.get("min_disk_gb")
    if needed is None:
        needed = (stack.get("resources") or {}).get("disk_gb")
    free = host.get("disk_free_gb")
    if needed is not None and free is not None and float(free) < float(needed):
        raise BuildPlanError(
            [
                f"The build needs about {float(needed):g} GB free under the Bazel output root but "
                f"{float(free):g} GB are free; free space or point output_user_root at a larger disk."
            ]
        )
    return float(needed) if needed is not None else None


def bazel_range(stack: Mapping[str, Any]) -> Tuple[str, str]:
    """The Bazel versions a TensorFlow release accepts: its configure range, else exactly .bazelversion."""
    declared = stack.get("bazel_range") or (stack.get("build") or {}).get("bazel_range")
    if declared:
        return str(declared[0]), str(declared[1])
    exact = str(stack.get("bazel") or (stack.get("build") or {}).get("bazel_version"))
    return exact, exact


def check_bazel_version(stack: Mapping[str, Any], version: Optional[str]) -> Optional[str]:
    """Raise when the Bazel that will run is outside the release's range."""
    if not version:
        return None
    low, high = bazel_range(stack)
    have = vtuple(version)
    if not have or vtuple(low) <= have <= vtuple(high):
        return None
    wanted = low if low == high else f"{low} to {high}"
    raise BuildPlanError(
        [
            f"TensorFlow {stack.get('tensorflow')} needs Bazel {wanted}; Bazel {version} would run; install "
            f"Bazel {stack.get('bazel') or low} (bazel role, bazel_version) or point bazel_binary at it."
        ]
    )


def _capabilities(stack: Mapping[str, Any], options: Mapping[str, Any]) -> List[str]:
    wanted = options.get("compute_capabilities")
    ccs = [str(c) for c in (wanted if wanted is not None else stack.get("compute_capabilities") or [])]
    result = []
    for cc in ccs:
        parts = vtuple(cc)
        if len(parts) < 2:
            raise BuildPlanError(
                [f"Compute capability '{cc}' is not understood; write it as major.minor (8.6) or sm_86."]
            )
        result.append("{}.{}".format(*parts[:2]))
    return sorted(set(result), key=vtuple)


def check_capabilities(stack: Mapping[str, Any], ccs: Sequence[str], cuda_rows: Sequence[Mapping[str, Any]]) -> None:
    """Raise when the build's CUDA cannot target a compute capability of the fleet."""
    cuda = stack.get("cuda")
    row = next((r for r in cuda_rows if str(r.get("version")) == str(cuda)), None)
    if row is None:
        return
    bad = [cc for cc in ccs if not (vtuple(row["min_sm"]) <= vtuple(cc) <= vtuple(row["max_sm"]))]
    if bad:
        raise BuildPlanError(
            [
                "CUDA {} targets {} to {}; it cannot build for {} ({}); drop them from compute_capabilities or "
                "build a TensorFlow whose CUDA targets them.".format(
                    cuda,
                    sm_label(row["min_sm"]),
                    sm_label(row["max_sm"]),
                    ", ".join(bad),
                    ", ".join(sm_label(c) for c in bad),
                )
            ]
        )


def configure_env(stack: Mapping[str, Any], options: Mapping[str, Any], ccs: List[str], copts: str) -> Dict[str, str]:
    """The configure.py environment for the release's era, every variable set and non-empty."""
    build = stack.get("build") or {}
    env: Dict[str, str] = {str(k): str(v) for k, v in (build.get("env") or {}).items()}
    gpu = env.get("TF_NEED_CUDA") == "1"
    hermetic = bool(build.get("hermetic_cuda"))
    if options.get("python_bin"):
        env["PYTHON_BIN_PATH"] = str(options["python_bin"])
    env["CC_OPT_FLAGS"] = copts
    if gpu and ccs:
        if hermetic:
            last = sm_label(ccs[-1])
            env["HERMETIC_CUDA_COMPUTE_CAPABILITIES"] = ",".join([sm_label(c) for c in ccs] + ["compute_" + last[3:]])
        else:
            env["TF_CUDA_COMPUTE_CAPABILITIES"] = ",".join(ccs)
    if gpu and not hermetic:
        paths = options.get("cuda_paths")
        if paths:
            env["TF_CUDA_PATHS"] = ",".join(str(p) for p in paths)
        if stack.get("tensorrt") and options.get("tensorrt_path"):
            env["TF_CUDA_PATHS"] += "," + str(options["tensorrt_path"])
    if gpu and hermetic:
        for key in ("local_cuda_path", "local_cudnn_path", "local_nccl_path"):
            if options.get(key):
                env[key.upper()] = str(options[key])
    for key, value in (options.get("extra_env") or {}).items():
        env[str(key)] = str(value)
    multiline = sorted(k for k, v in env.items() if any(ch in v for ch in "\n\r\0"))
    if multiline:
        raise BuildPlanError(
            [
                "The configure environment has values on several lines ({}); give python_bin, the paths and "
                "extra_env values on one line.".format(", ".join(multiline))
            ]
        )
    empty = sorted(k for k, v in env.items() if v == "")
    if empty:
        raise BuildPlanError(
            [
                "configure.py prompts for empty variables ({}); give them a value (extra_env) so it runs "
                "with stdin closed.".format(", ".join(empty))
            ]
        )
    return dict(sorted(env.items()))


def tf_configure_lines(env: Mapping[str, str], era: str) -> List[str]:
    """The .tf_configure.bazelrc lines configure.py writes for this environment (the settings that matter)."""
    lines = [
        'build --action_env PYTHON_BIN_PATH="{}"'.format(env["PYTHON_BIN_PATH"]),
        'build --python_path="{}"'.format(env["PYTHON_BIN_PATH"]),
    ]
    if env.get("TF_ENABLE_XLA") == "1" and era == "configure_gcc":
        lines += ["build:xla --define with_xla_support=true", "build --config=xla"]
    if env.get("TF_NEED_CLANG") == "1" and env.get("TF_NEED_CUDA") != "1":
        lines.append('build --action_env CLANG_COMPILER_PATH="{}"'.format(env["CLANG_COMPILER_PATH"]))
    if env.get("TF_NEED_CUDA") == "1":
        if era == "hermetic_cuda":
            for key in (
                "HERMETIC_CUDA_VERSION",
                "HERMETIC_CUDNN_VERSION",
                "HERMETIC_CUDA_COMPUTE_CAPABILITIES",
                "LOCAL_CUDA_PATH",
                "LOCAL_CUDNN_PATH",
                "LOCAL_NCCL_PATH",
            ):
                if env.get(key):
                    lines.append(f'build:cuda --repo_env {key}="{env[key]}"')
        else:
            for key in (
                "TF_CUDA_VERSION",
                "TF_CUDNN_VERSION",
                "TF_NCCL_VERSION",
                "TF_TENSORRT_VERSION",
                "TF_CUDA_PATHS",
                "TF_CUDA_COMPUTE_CAPABILITIES",
            ):
                if env.get(key):
                    lines.append(f'build --action_env {key}="{env[key]}"')
            if env.get("TF_NEED_TENSORRT") == "1":
                lines.append("build --config=tensorrt")
        if env.get("TF_CUDA_CLANG") == "1":
            lines.append('build --action_env CLANG_CUDA_COMPILER_PATH="{}"'.format(env["CLANG_CUDA_COMPILER_PATH"]))
            lines.append("build --config=cuda_clang")
        else:
            lines.append('build --action_env GCC_HOST_COMPILER_PATH="{}"'.format(env["GCC_HOST_COMPILER_PATH"]))
            lines.append("build --config=cuda")
    for flag in env.get("CC_OPT_FLAGS", "").split():
        lines.append(f"build:opt --copt={flag}")
        lines.append(f"build:opt --host_copt={flag}")
    lines.append("build:opt --define with_default_optimizations=true")
    return lines


def verify_lines(env: Mapping[str, str], era: str) -> List[str]:
    """Lines of .tf_configure.bazelrc that prove configure.py took our values instead of its defaults."""
    lines = ['build --action_env PYTHON_BIN_PATH="{}"'.format(env["PYTHON_BIN_PATH"])]
    if env.get("TF_NEED_CUDA") == "1":
        if era == "hermetic_cuda":
            key = "HERMETIC_CUDA_COMPUTE_CAPABILITIES"
            lines.append(f'build:cuda --repo_env {key}="{env[key]}"')
        else:
            key = "TF_CUDA_COMPUTE_CAPABILITIES"
            lines.append(f'build --action_env {key}="{env[key]}"')
    lines += [f"build:opt --copt={flag}" for flag in env.get("CC_OPT_FLAGS", "").split()]
    return lines


def bazel_command(
    stack: Mapping[str, Any], options: Mapping[str, Any], limits: Mapping[str, Any]
) -> Tuple[List[str], List[str], List[str], str]:
    """(startup flags, build flags, full argv, target) of the Bazel run."""
    build = stack.get("build") or {}
    target = str(options.get("wheel_target") or build.get("bazel_target"))
    startup = [f"--output_user_root={options['output_user_root']}"]
    flags = [str(f) for f in build.get("bazel_flags") or []]
    flags += [
        f"--jobs={limits['jobs']}",
        f"--local_ram_resources={limits['local_ram_resources']}",
        f"--local_cpu_resources={limits['local_cpu_resources']}",
    ]
    for key in ("disk_cache", "remote_cache", "repository_cache", "distdir"):
        if options.get(key):
            flags.append(f"--{key}={options[key]}")
    flags += [
        "--curses=no",
        "--color=no",
        "--verbose_failures",
        "--show_progress_rate_limit={}".format(options.get("progress_rate_limit") or 30),
    ]
    flags += [str(f) for f in options.get("extra_bazel_flags") or []]
    argv = [str(options.get("bazel_binary") or "bazel"), *startup, "build", *flags, target]
    return startup, flags, argv, target


def config_hash(config: Mapping[str, Any]) -> str:
    """First 16 hex digits of the SHA-256 of the canonical JSON of the configuration."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _hashed_flags(flags: Sequence[str]) -> List[str]:
    return [f for f in flags if not f.startswith(_UNHASHED_FLAG_PREFIXES)]


def build_plan(
    stack: Mapping[str, Any],
    host: Mapping[str, Any],
    options: Optional[Mapping[str, Any]] = None,
    cuda_rows: Optional[Sequence[Mapping[str, Any]]] = None,
) -> Dict[str, Any]:
    """The full build plan, or BuildPlanError listing every problem found."""
    opts: Dict[str, Any] = copy.deepcopy(OPTION_DEFAULTS)
    opts.update({k: v for k, v in (options or {}).items() if v is not None})
    bad_input = input_problems(stack, host, opts)
    if bad_input:
        raise BuildPlanError(bad_input)
    build = stack.get("build") or {}
    if not build.get("env") or not build.get("bazel_target"):
        raise BuildPlanError(
            ["The stack has no build section; pass the dict returned by gpulab.dlstack.stack_resolve (dlstack_stack)."]
        )
    era = str(build.get("era"))
    gpu = (build.get("env") or {}).get("TF_NEED_CUDA") == "1"
    problems: List[str] = []

    def attempt(func: Any, *args: Any) -> Any:
        try:
            return func(*args)
        except BuildPlanError as err:
            problems.extend(err.problems)
            return None

    if opts.get("want_tensorrt") and not stack.get("tensorrt"):
        problems.append(
            f"TensorRT was requested but TensorFlow {stack.get('tensorflow')} builds without TF-TRT "
            "(disabled in CUDA builds since 2.18, or not resolved); drop the TensorRT request or build "
            "TensorFlow <= 2.17 with want_tensorrt in the stack."
        )
    if gpu and era == "hermetic_cuda" and stack.get("tensorrt"):
        problems.append(
            f"TensorFlow {stack.get('tensorflow')} uses hermetic CUDA and has no TF-TRT; drop tensorrt from the stack."
        )
    ccs = attempt(_capabilities, stack, opts) or []
    if gpu and cuda_rows is not None:
        attempt(check_capabilities, stack, ccs, cuda_rows)
    if gpu and not ccs:
        problems.append(
            "A CUDA build needs the compute capabilities of the fleet's GPUs; pass compute_capabilities "
            "(e.g. ['8.0', '9.0']) or resolve the stack with the GPUs."
        )
    copts = attempt(cc_opt_flags, opts)
    limits = attempt(resource_limits, host, opts)
    disk_gb = attempt(check_disk, host, stack, opts)
    attempt(check_bazel_version, stack, opts.get("bazel_version"))
    env = attempt(configure_env, stack, opts, ccs, copts or "-Wno-sign-compare") if copts else None
    if problems:
        raise BuildPlanError(problems)
    if env is None or limits is None or copts is None:
        raise AssertionError("a plan step returned nothing without recording a problem")

    startup, flags, argv, target = bazel_command(stack, opts, limits)
    lines = tf_configure_lines(env, era)
    legacy = target.endswith(":build_pip_package")
    source_dir = str(opts["source_dir"]).rstrip("/")
    if opts.get("wheel_dir"):
        wheel_dir = str(opts["wheel_dir"])
    elif opts.get("wheel_target"):
        package = target.lstrip("/").split(":", 1)[0]
        wheel_dir = "/".join(p for p in (source_dir, "bazel-bin", package, "wheel_house") if p)
    else:
        wheel_dir = "{}/{}".format(source_dir, build.get("wheel_dir") or "dist")
    post_build = [f"{source_dir}/bazel-bin/tensorflow/tools/pip_package/build_pip_package", wheel_dir] if legacy else []
    compiler = stack.get("compiler") or {}
    config = {
        "tensorflow": str(stack.get("tensorflow")),
        "source_ref": opts.get("source_ref"),
        "python": stack.get("python"),
        "numpy": stack.get("numpy"),
        "cuda": stack.get("cuda_full") or stack.get("cuda") if gpu else None,
        "cudnn": stack.get("cudnn") if gpu else None,
        "tensorrt": stack.get("tensorrt") if gpu else None,
        "compiler": {"family": compiler.get("family"), "version": compiler.get("version")},
        "compute_capabilities": ccs if gpu else [],
        "cc_opt_flags": copts,
        "bazel": stack.get("bazel"),
        "env": env,
        "bazel_flags": _hashed_flags(flags),
        "target": target,
    }
    if "-march=native" in copts.split():
        config["native_cpu_flags"] = sorted({str(f) for f in host.get("cpu_flags") or []})
    digest = config_hash(config)
    return {
        "tensorflow": str(stack.get("tensorflow")),
        "era": era,
        "gpu": gpu,
        "config_hash": digest,
        "config": config,
        "env": env,
        "cc_opt_flags": copts,
        "compute_capabilities": ccs if gpu else [],
        "configure": {
            "argv": [env["PYTHON_BIN_PATH"], "configure.py"],
            "stdin": "/dev/null",
            "command": "{} configure.py < /dev/null".format(shlex.quote(env["PYTHON_BIN_PATH"])),
            "verify_lines": verify_lines(env, era),
        },
        "tf_configure_bazelrc": "\n".join(lines) + "\n",
        "tf_configure_lines": lines,
        "bazel": {
            "version_range": list(bazel_range(stack)),
            "startup_flags": startup,
            "build_flags": flags,
            "target": target,
            "argv": argv,
            "command": " ".join(shlex.quote(a) for a in argv),
        },
        "post_build_argv": post_build,
        "wheel_dir": wheel_dir,
        "wheel_glob": "*.whl",
        "resources": {**limits, "disk_gb": disk_gb},
    }


def missing_lines(expected_lines: Sequence[str], written: str) -> List[str]:
    """Expected lines that the written .tf_configure.bazelrc lacks (whitespace-insensitive)."""
    present = {re.sub(r"\s+", " ", line.strip()) for line in written.splitlines()}
    return [line for line in expected_lines if re.sub(r"\s+", " ", line.strip()) not in present]
