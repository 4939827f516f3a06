"""Tests of the TensorFlow build plan renderer.

The golden files under tests/unit/fixtures/tfbuild/ hold the configure environment, the
.tf_configure.bazelrc lines, the Bazel command line and the wheel location for six releases,
one per build era and corner (GCC/nvcc, Clang, CPU-only, TF-TRT, hermetic CUDA), written
against TensorFlow's documented procedure (install/source.md, configure.py's writers).
Regenerate after a deliberate change with DLSTACK_REGEN_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import resolve_stack
from ansible_collections.gpulab.dlstack.plugins.module_utils._tfbuild import (
    BuildPlanError,
    build_plan,
    cc_opt_flags,
    config_hash,
    missing_lines,
    parse_cpuinfo_flags,
    portable_copts,
    resource_limits,
)

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "tfbuild"
HOST = {"cores": 32, "memory_mb": 131072, "disk_free_gb": 500.0}
SKYLAKE = ["fpu", "sse", "sse2", "ssse3", "sse4_1", "sse4_2", "popcnt", "avx", "f16c", "fma", "avx2", "bmi2", "avx512f"]
HASWELL = ["fpu", "sse", "sse2", "ssse3", "sse4_1", "sse4_2", "popcnt", "avx", "f16c", "fma", "avx2", "bmi2"]
SANDY = ["fpu", "sse", "sse2", "ssse3", "sse4_1", "sse4_2", "popcnt", "avx"]

CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "2.6": (
        {"tensorflow": "2.6", "python": "3.9", "gpus": ["7.0", "8.0"], "want_tensorrt": True},
        {
            "cpu_target": "fleet",
            "fleet_cpu_flags": [SKYLAKE, HASWELL],
            "cuda_paths": ["/usr/local/cuda-11.2", "/usr"],
            "tensorrt_path": "/opt/tensorrt",
        },
    ),
    "2.12": ({"tensorflow": "2.12", "os": "ubuntu2204", "gpus": ["8.6"]}, {}),
    "2.15": (
        {"tensorflow": "2.15", "os": "debian12", "cpu_only": True},
        {"cpu_target": "fleet", "fleet_cpu_flags": [SANDY, SKYLAKE]},
    ),
    "2.17": (
        {"tensorflow": "2.17", "os": "ubuntu2404", "gpus": ["8.9", "9.0"], "want_tensorrt": True},
        {"tensorrt_path": "/opt/tensorrt", "disk_cache": "/var/cache/dlstack/bazel-disk"},
    ),
    "2.18": (
        {"tensorflow": "2.18", "os": "debian12", "gpus": ["8.0", "9.0"]},
        {"local_cuda_path": "/opt/cuda-redist/12.5.1", "repository_cache": "/var/cache/dlstack/bazel/repository"},
    ),
    "2.21": (
        {"tensorflow": "2.21", "os": "debian13", "gpus": ["8.6", "9.0"]},
        {
            "cpu_target": "fleet",
            "fleet_cpu_flags": [SKYLAKE, HASWELL],
            "remote_cache": "grpc://cache.example.invalid:9092",
        },
    ),
}


def _plan(version: str) -> dict[str, Any]:
    request, options = CASES[version]
    stack = resolve_stack({**request, "build_from_source": True})
    opts = {"source_dir": "/var/tmp/dlstack-tfbuild/src", "source_ref": f"v{version}.0", **options}
    return build_plan(stack, HOST, opts, cuda_rows=_matrix.CUDA)


def _golden_view(plan: dict[str, Any]) -> dict[str, Any]:
    return {
        "env": plan["env"],
        "configure": plan["configure"],
        "tf_configure_bazelrc": plan["tf_configure_lines"],
        "bazel_argv": plan["bazel"]["argv"],
        "post_build_argv": plan["post_build_argv"],
        "wheel_dir": plan["wheel_dir"],
        "resources": plan["resources"],
        "config_hash": plan["config_hash"],
    }


@pytest.mark.parametrize("version", sorted(CASES, key=lambda v: tuple(int(p) for p in v.split("."))))
def test_golden(version: str) -> None:
    view = _golden_view(_plan(version))
    path = GOLDEN / f"tf-{version}.json"
    if os.environ.get("DLSTACK_REGEN_GOLDEN") == "1":
        path.write_text(json.dumps(view, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert view == json.loads(path.read_text(encoding="utf-8"))


def test_golden_files_cover_the_issue_releases() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("tf-*.json")) == sorted(f"tf-{v}" for v in CASES)


@pytest.mark.parametrize(
    ("version", "target", "legacy"),
    [
        ("2.6", "//tensorflow/tools/pip_package:build_pip_package", True),
        ("2.15", "//tensorflow/tools/pip_package:build_pip_package", True),
        ("2.17", "//tensorflow/tools/pip_package:wheel", False),
        ("2.21", "//tensorflow/tools/pip_package:wheel", False),
    ],
)
def test_wheel_target_by_era(version: str, target: str, legacy: bool) -> None:
    plan = _plan(version)
    assert plan["bazel"]["target"] == target
    assert plan["bazel"]["argv"][-1] == target
    assert bool(plan["post_build_argv"]) is legacy
    if not legacy:
        assert plan["wheel_dir"].endswith("bazel-bin/tensorflow/tools/pip_package/wheel_house")


def test_hermetic_era_sets_hermetic_variables_and_no_local_cuda_ones() -> None:
    env = _plan("2.18")["env"]
    assert env["HERMETIC_CUDA_VERSION"] == "12.5.1"
    assert env["HERMETIC_CUDA_COMPUTE_CAPABILITIES"] == "sm_80,sm_90,compute_90"
    assert not {"TF_CUDA_VERSION", "TF_CUDA_PATHS", "TF_NEED_TENSORRT"} & set(env)
    assert "--config=cuda_wheel" in _plan("2.18")["bazel"]["build_flags"]


def test_local_era_sets_cuda_paths_and_tensorrt() -> None:
    env = _plan("2.17")["env"]
    assert env["TF_NEED_TENSORRT"] == "1"
    assert env["TF_CUDA_PATHS"].endswith(",/opt/tensorrt")
    assert env["TF_CUDA_COMPUTE_CAPABILITIES"] == "8.9,9.0"


def test_every_configure_variable_is_non_empty() -> None:
    for version in CASES:
        assert all(value != "" for value in _plan(version)["env"].values()), version


def test_parse_cpuinfo_flags() -> None:
    text = "processor\t: 0\nflags\t\t: fpu pni avx2 fma avx\nbugs\t\t: spectre\n"
    assert parse_cpuinfo_flags(text) == ["avx", "avx2", "fma", "fpu", "pni"]
    assert parse_cpuinfo_flags("nothing here") == []


def test_portable_copts_are_the_fleet_intersection() -> None:
    assert portable_copts([SKYLAKE, HASWELL]) == [
        "-mssse3",
        "-msse4.1",
        "-msse4.2",
        "-mpopcnt",
        "-mavx",
        "-mf16c",
        "-mfma",
        "-mavx2",
        "-mbmi2",
    ]
    assert "-mavx2" not in portable_copts([SKYLAKE, SANDY])
    assert portable_copts([["pni", "avx"]]) == ["-msse3", "-mavx"]


def test_cc_opt_flags_modes() -> None:
    assert cc_opt_flags({"cpu_target": "native"}) == "-march=native -Wno-sign-compare"
    assert cc_opt_flags({"cc_opt_flags": " -mavx2   -O3 "}) == "-mavx2 -O3"
    with pytest.raises(BuildPlanError, match="fleet_cpu_flags"):
        cc_opt_flags({"cpu_target": "fleet", "fleet_cpu_flags": []})


@pytest.mark.parametrize(
    ("cores", "memory_mb", "jobs"),
    [(2, 7800, 2), (64, 16384, 5), (8, 4608, 1), (16, 65536, 16)],
)
def test_jobs_follow_cores_and_memory(cores: int, memory_mb: int, jobs: int) -> None:
    limits = resource_limits({"cores": cores, "memory_mb": memory_mb}, {"ram_mb_per_job": 2560, "reserve_ram_mb": 2048})
    assert limits["jobs"] == jobs
    assert limits["local_ram_resources"] == memory_mb - 2048


def test_too_many_jobs_for_memory_fail_before_the_build() -> None:
    with pytest.raises(BuildPlanError, match=r"jobs=8 needs about 22528 MB .* set jobs to 2 or less"):
        resource_limits({"cores": 8, "memory_mb": 8000}, {"jobs": 8, "ram_mb_per_job": 2560, "reserve_ram_mb": 2048})


def test_too_little_memory_for_one_job_fails() -> None:
    with pytest.raises(BuildPlanError, match="at least 4608 MB"):
        resource_limits({"cores": 2, "memory_mb": 3000}, {"ram_mb_per_job": 2560, "reserve_ram_mb": 2048})


def _stack(version: str, **request: Any) -> dict[str, Any]:
    return resolve_stack({"tensorflow": version, "build_from_source": True, **request})


def test_bazel_outside_range_fails_naming_the_versions() -> None:
    stack = _stack("2.17", os="debian12", gpus=["9.0"])
    with pytest.raises(BuildPlanError, match=r"TensorFlow 2\.17 needs Bazel 6\.5\.0; Bazel 4\.2\.3 would run"):
        build_plan(stack, HOST, {"bazel_version": "4.2.3"})
    assert build_plan(stack, HOST, {"bazel_version": "6.5.0"})["bazel"]["version_range"] == ["6.5.0", "6.5.0"]


def test_bazel_range_of_configure_era_admits_debian_bootstrap() -> None:
    stack = _stack("2.9", python="3.10", cpu_only=True)
    plan = build_plan(stack, HOST, {"bazel_version": "4.2.3"})
    assert plan["bazel"]["version_range"] == ["4.2.2", "5.99.0"]


def test_capability_the_cuda_cannot_target_fails() -> None:
    stack = _stack("2.18", os="debian12", gpus=["9.0"])
    with pytest.raises(BuildPlanError, match=r"CUDA 12.5 targets sm_50 to sm_90; it cannot build for 12.0 \(sm_120\)"):
        build_plan(stack, HOST, {"compute_capabilities": ["9.0", "12.0"]}, cuda_rows=_matrix.CUDA)


def test_tensorrt_request_for_hermetic_release_fails() -> None:
    stack = _stack("2.18", os="debian12", gpus=["9.0"])
    with pytest.raises(BuildPlanError, match=r"TensorFlow 2\.18 builds without TF-TRT"):
        build_plan(stack, HOST, {"want_tensorrt": True})


def test_all_problems_are_reported_together() -> None:
    stack = _stack("2.18", os="debian12", gpus=["9.0"])
    with pytest.raises(BuildPlanError) as err:
        build_plan(
            stack,
            {"cores": 4, "memory_mb": 4000, "disk_free_gb": 10.0},
            {"want_tensorrt": True, "bazel_version": "7.4.1"},
        )
    assert len(err.value.problems) == 4
    assert any("GB free" in p for p in err.value.problems)


def test_cuda_build_without_capabilities_fails() -> None:
    stack = _stack("2.17", os="debian12")
    with pytest.raises(BuildPlanError, match="needs the compute capabilities"):
        build_plan(stack, HOST, {})


def test_stack_without_build_section_fails() -> None:
    with pytest.raises(BuildPlanError, match="no build section"):
        build_plan({"tensorflow": "2.17"}, HOST, {})


def test_hash_ignores_resources_and_caches_but_not_configuration() -> None:
    stack = _stack("2.17", os="debian12", gpus=["9.0"])
    base = build_plan(stack, HOST, {})
    small = build_plan(stack, {"cores": 4, "memory_mb": 16384}, {"disk_cache": "/x", "output_user_root": "/y"})
    assert base["config_hash"] == small["config_hash"]
    assert base["bazel"]["argv"] != small["bazel"]["argv"]
    changed = [
        build_plan(stack, HOST, {"compute_capabilities": ["8.0", "9.0"]}),
        build_plan(stack, HOST, {"cc_opt_flags": "-mavx2"}),
        build_plan(stack, HOST, {"python_bin": "/opt/dlstack/envs/tf/bin/python"}),
        build_plan(stack, HOST, {"source_ref": "v2.17.1"}),
        build_plan(_stack("2.17", os="debian12", gpus=["9.0"], compiler="clang-17"), HOST, {}),
    ]
    hashes = {p["config_hash"] for p in changed}
    assert base["config_hash"] not in hashes
    assert len(hashes) == len(changed)


def test_config_hash_is_order_independent() -> None:
    assert config_hash({"a": 1, "b": [1, 2]}) == config_hash({"b": [1, 2], "a": 1})
    assert len(config_hash({})) == 16


def test_missing_lines_reports_prompt_defaults() -> None:
    plan = _plan("2.17")
    written = plan["tf_configure_bazelrc"].replace("8.9,9.0", "3.5,7.0")
    missing = missing_lines(plan["configure"]["verify_lines"], written)
    assert missing == ['build --action_env TF_CUDA_COMPUTE_CAPABILITIES="8.9,9.0"']
    assert missing_lines(plan["configure"]["verify_lines"], plan["tf_configure_bazelrc"]) == []


def test_custom_target_for_test_workspace() -> None:
    stack = _stack("2.9", python="3.10", cpu_only=True)
    plan = build_plan(stack, HOST, {"source_dir": "/srv/ws/", "wheel_target": "//:wheel"})
    assert plan["bazel"]["argv"][-1] == "//:wheel"
    assert plan["wheel_dir"] == "/srv/ws/bazel-bin/wheel_house"
    assert plan["post_build_argv"] == []


def test_native_builds_are_keyed_by_the_build_hosts_cpu() -> None:
    stack = _stack("2.17", os="debian12", gpus=["9.0"])
    skylake = build_plan(stack, {**HOST, "cpu_flags": SKYLAKE}, {})
    haswell = build_plan(stack, {**HOST, "cpu_flags": HASWELL}, {})
    assert skylake["config_hash"] != haswell["config_hash"]
    fleet = {"cpu_target": "fleet", "fleet_cpu_flags": [SKYLAKE, HASWELL]}
    fleet_a = build_plan(stack, {**HOST, "cpu_flags": SKYLAKE}, fleet)
    fleet_b = build_plan(stack, {**HOST, "cpu_flags": HASWELL}, fleet)
    assert fleet_a["config_hash"] == fleet_b["config_hash"]
