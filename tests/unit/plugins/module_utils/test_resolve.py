"""Table-driven tests of the stack resolver."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import (
    ResolveError,
    conflict_message,
    merged_matrix,
    normalize_os,
    parse_gpu,
    resolve_stack,
    tf_wheel_requirement,
    vtuple,
)

STACK_KEYS = {
    "tensorflow",
    "python",
    "numpy",
    "cuda",
    "cudnn",
    "tensorrt",
    "bazel",
    "compiler",
    "driver_min",
    "compute_capabilities",
    "build",
    "notes",
}


def conflicts_of(request: Dict[str, Any]) -> List[str]:
    with pytest.raises(ResolveError) as info:
        resolve_stack(request)
    assert info.value.conflicts, "a ResolveError must carry at least one conflict"
    return info.value.conflicts


def fork(version: str, **fields: Any) -> Dict[str, Any]:
    """Overrides adding a TensorFlow fork row based on 2.21."""
    row = {"version": version, "based_on": "2.21"}
    row.update(fields)
    return {"tensorflow": [row]}


# tf, python (newest), cuda, cudnn, bazel, numpy, era, wheel target, GPU pip requirement
WHEEL_CASES = [
    ("2.6", "3.9", "11.2", "8.1.0", "3.7.2", ">=1.19.2,<1.20", "configure_gcc", "tensorflow==2.6.*"),
    ("2.7", "3.9", "11.2", "8.1.0", "3.7.2", ">=1.14.5,<2", "configure_gcc", "tensorflow==2.7.*"),
    ("2.8", "3.10", "11.2", "8.1.0", "4.2.1", ">=1.20,<2", "configure_gcc", "tensorflow==2.8.*"),
    ("2.9", "3.10", "11.2", "8.1.0", "5.0.0", ">=1.20,<2", "configure_gcc", "tensorflow==2.9.*"),
    ("2.10", "3.10", "11.2", "8.1.0", "5.1.1", ">=1.20,<2", "configure_gcc", "tensorflow==2.10.*"),
    ("2.11", "3.10", "11.2", "8.1.0", "5.3.0", ">=1.20,<2", "configure_gcc", "tensorflow==2.11.*"),
    ("2.12", "3.11", "11.8", "8.6.0", "5.3.0", ">=1.22,<1.24", "configure_gcc", "tensorflow==2.12.*"),
    ("2.13", "3.11", "11.8", "8.6.0", "5.3.0", ">=1.22,<=1.24.3", "configure_clang", "tensorflow==2.13.*"),
    ("2.14", "3.11", "11.8", "8.7.0", "6.1.0", ">=1.23.5,<2", "configure_clang", "tensorflow[and-cuda]==2.14.*"),
    ("2.15", "3.11", "12.2", "8.9.4", "6.1.0", ">=1.23.5,<2", "configure_clang", "tensorflow[and-cuda]==2.15.*"),
    ("2.16", "3.12", "12.3", "8.9.7", "6.5.0", ">=1.26.0,<2", "configure_clang", "tensorflow[and-cuda]==2.16.*"),
    ("2.17", "3.12", "12.3", "8.9.7", "6.5.0", ">=1.26.0,<2", "configure_clang", "tensorflow[and-cuda]==2.17.*"),
    ("2.18", "3.12", "12.5", "9.3.0", "6.5.0", ">=1.26.0,<2.1.0", "hermetic_cuda", "tensorflow[and-cuda]==2.18.*"),
    ("2.19", "3.12", "12.5", "9.3.0", "6.5.0", ">=1.26.0,<2.2.0", "hermetic_cuda", "tensorflow[and-cuda]==2.19.*"),
    ("2.20", "3.13", "12.5", "9.3.0", "7.4.1", ">=1.26.0", "hermetic_cuda", "tensorflow[and-cuda]==2.20.*"),
    ("2.21", "3.13", "12.5", "9.3.0", "7.4.1", ">=1.26.0", "hermetic_cuda", "tensorflow[and-cuda]==2.21.*"),
]


@pytest.mark.parametrize("case", WHEEL_CASES, ids=[c[0] for c in WHEEL_CASES])
def test_wheel_path_every_minor(case: Tuple[str, ...]) -> None:
    tf, python, cuda, cudnn, bazel, numpy, era, pip = case
    stack = resolve_stack({"tensorflow": tf, "gpus": ["8.0"]})
    assert set(stack) >= STACK_KEYS
    assert stack["tensorflow"] == tf
    assert stack["python"] == python
    assert stack["cuda"] == cuda
    assert stack["cudnn"] == cudnn
    assert stack["bazel"] == bazel
    assert stack["numpy"] == numpy
    assert stack["build"]["era"] == era
    assert stack["build"]["from_source"] is False
    assert stack["compute_capabilities"] == ["8.0"]
    assert stack["driver_min"] == _matrix.cuda_row(cuda)["driver_min"]
    assert stack["tensorrt"] is None
    assert stack["pip_requirements"] == tf_wheel_requirement(stack, True)
    assert stack["pip_requirements"][0] == pip
    assert stack["pip_requirements"][1] == "numpy" + numpy
    assert all(isinstance(n, str) and n for n in stack["notes"])


# tf, era, wheel target, extra flags expected, post-build command present
SOURCE_CASES = [
    (v, r["era"], r["wheel_target"], vtuple(v) <= (2, 16))
    for v, r in ((row["version"], row) for row in _matrix.TENSORFLOW)
]


@pytest.mark.parametrize(("tf", "era", "target", "legacy"), SOURCE_CASES, ids=[c[0] for c in SOURCE_CASES])
def test_source_path_every_minor(tf: str, era: str, target: str, legacy: bool) -> None:
    stack = resolve_stack({"tensorflow": tf, "build_from_source": True, "gpus": ["8.6", "8.0"]})
    build = stack["build"]
    env = build["env"]
    assert build["from_source"] is True
    assert build["era"] == era
    assert build["bazel_target"] == target
    assert build["bazel_command"].startswith("bazel build --config=opt --config=cuda ")
    assert build["bazel_command"].endswith(" " + target)
    assert env["TF_NEED_CUDA"] == "1"
    assert env["TF_NEED_ROCM"] == "0"
    assert env["PYTHON_BIN_PATH"] == "/usr/bin/python" + stack["python"]
    assert build["configure_command"].endswith("configure.py < /dev/null")
    assert ("TF_PYTHON_VERSION" in env) == (vtuple(tf) >= (2, 14))
    assert (build["post_build_command"] is not None) == legacy
    assert ("--repo_env=WHEEL_NAME=tensorflow" in build["bazel_flags"]) == (vtuple(tf) >= (2, 17))
    assert ("--config=cuda_wheel" in build["bazel_flags"]) == (vtuple(tf) >= (2, 18))
    assert ("--repo_env=USE_PYWRAP_RULES=True" in build["bazel_flags"]) == (vtuple(tf) >= (2, 20))
    if era == "hermetic_cuda":
        assert env["HERMETIC_CUDA_VERSION"] == "12.5.1"
        assert env["HERMETIC_CUDNN_VERSION"] == "9.3.0"
        assert env["HERMETIC_CUDA_COMPUTE_CAPABILITIES"] == "sm_80,sm_86,compute_86"
        assert "TF_CUDA_VERSION" not in env and "TF_NEED_TENSORRT" not in env
        assert stack["hermetic_cuda"] is True
    else:
        assert env["TF_CUDA_VERSION"] == stack["cuda"]
        assert env["TF_CUDNN_VERSION"] == stack["cudnn"].split(".")[0]
        assert env["TF_CUDA_COMPUTE_CAPABILITIES"] == "8.0,8.6"
        assert env["TF_CUDA_PATHS"].startswith("/usr/local/cuda-" + stack["cuda"])
        assert env["TF_NEED_TENSORRT"] == "0"
        assert "HERMETIC_CUDA_VERSION" not in env
    if era == "configure_gcc":
        assert env["TF_CUDA_CLANG"] == "0"
        assert env["GCC_HOST_COMPILER_PATH"].startswith("/usr/bin/gcc-")
        assert stack["compiler"]["family"] == "gcc"
    else:
        assert env["TF_NEED_CLANG"] == "1"
        assert env["TF_CUDA_CLANG"] == "1"
        assert env["CLANG_CUDA_COMPILER_PATH"] == stack["compiler"]["path"]
        assert stack["compiler"]["family"] == "clang"
    assert any("stdin from /dev/null" in n for n in stack["notes"])


@pytest.mark.parametrize("tf", [r["version"] for r in _matrix.TENSORFLOW])
def test_cpu_only_every_minor(tf: str) -> None:
    stack = resolve_stack({"tensorflow": tf, "cpu_only": True, "build_from_source": True})
    assert stack["cuda"] is None and stack["cudnn"] is None and stack["driver_min"] is None
    assert stack["tensorrt"] is None
    assert stack["compute_capabilities"] == []
    assert stack["pip_requirements"][0] == f"tensorflow-cpu=={tf}.*"
    assert stack["build"]["env"]["TF_NEED_CUDA"] == "0"
    assert "--config=cuda" not in stack["build"]["bazel_flags"]
    assert "--config=cuda_wheel" not in stack["build"]["bazel_flags"]
    assert "TF_CUDA_VERSION" not in stack["build"]["env"]
    assert "HERMETIC_CUDA_VERSION" not in stack["build"]["env"]
    assert stack["build"]["wheel_name"] == "tensorflow_cpu"


@pytest.mark.parametrize(
    ("tf", "os_id", "family", "version"),
    [
        ("2.17", "ubuntu2404", "clang", "17"),
        ("2.21", "debian13", "clang", "18"),
        ("2.18", "debian12", "clang", "16"),
        ("2.12", "ubuntu2204", "gcc", "10"),
        ("2.13", "ubuntu2204", "clang", "15"),
        ("2.20", "rhel9", "clang", "19"),
    ],
)
def test_source_compiler_picked_from_os(tf: str, os_id: str, family: str, version: str) -> None:
    stack = resolve_stack({"tensorflow": tf, "build_from_source": True, "os": os_id})
    assert stack["compiler"]["family"] == family
    assert stack["compiler"]["version"] == version
    assert stack["compiler"]["path"]
    env = stack["build"]["env"]
    key = "CLANG_CUDA_COMPILER_PATH" if family == "clang" else "GCC_HOST_COMPILER_PATH"
    assert env[key] == stack["compiler"]["path"]


def test_source_compiler_none_in_os_archive() -> None:
    conflicts = conflicts_of({"tensorflow": "2.11", "build_from_source": True, "os": "debian12", "python": "3.10"})
    assert len(conflicts) == 1
    assert "No gcc in debian12's archive (11, 12) can build TensorFlow 2.11" in conflicts[0]
    assert "nvcc of CUDA 11.2 accepts GCC <= 10" in conflicts[0]
    assert "set compiler: clang-16" in conflicts[0]


CUDA_VERSIONS = [r["version"] for r in _matrix.CUDA]


def _cudnn_for(cuda: str) -> Tuple[str, List[Dict[str, Any]]]:
    """A cuDNN of the matrix for this CUDA, or a stand-in row where the matrix has none (e.g. 13.1)."""
    rows = [r for r in _matrix.CUDNN if vtuple(r["cuda_min"]) <= vtuple(cuda) <= vtuple(r["cuda_max"])]
    if rows:
        return rows[-1]["version"], []
    return "9.99.0", [{"version": "9.99.0", "cuda_min": cuda, "cuda_max": cuda}]


@pytest.mark.parametrize("cuda", CUDA_VERSIONS)
def test_every_cuda_floor(cuda: str) -> None:
    row = _matrix.cuda_row(cuda)
    assert row is not None
    cudnn, cudnn_rows = _cudnn_for(cuda)
    overrides = fork("2.21+cu", cuda=cuda, cudnn=cudnn, wheel_cuda="system", wheel_compute_capabilities=[])
    overrides["cudnn"] = cudnn_rows
    request = {"tensorflow": "2.21+cu", "overrides": overrides}
    at_floor = resolve_stack(dict(request, driver_version=row["driver_min"]))
    assert at_floor["cuda"] == cuda
    assert at_floor["driver_min"] == row["driver_min"]
    assert at_floor["driver_min_compat"] == row["driver_min_compat"]
    major = vtuple(row["driver_min_compat"])[0]
    conflicts = conflicts_of(dict(request, driver_version=f"{major - 1}.99.99"))
    assert conflicts == [
        conflict
        for conflict in conflicts
        if f"NVIDIA driver {major - 1}.99.99 is older than {row['driver_min']} required by CUDA {cuda}" in conflict
    ]
    if row["driver_min_compat"] != row["driver_min"]:
        compat = resolve_stack(dict(request, driver_version=row["driver_min_compat"]))
        assert any("minor-version compatibility" in n for n in compat["notes"])


@pytest.mark.parametrize("cuda", ["11.0", "11.1", "11.2", "11.3", "11.4", "11.5", "11.6", "11.7"])
def test_sm90_needs_cuda_11_8(cuda: str) -> None:
    conflicts = conflicts_of(
        {"tensorflow": "2.11", "cuda": cuda, "build_from_source": True, "gpus": ["NVIDIA H100 PCIe"]}
    )
    assert (
        f"NVIDIA H100 PCIe is sm_90; CUDA {cuda} cannot target it; use CUDA >= 11.8, "
        "i.e. TensorFlow >= 2.12 with its tested CUDA 11.8." in conflicts
    )


def test_sm86_on_cuda_11_0() -> None:
    conflicts = conflicts_of({"tensorflow": "2.6", "cuda": "11.0", "gpus": ["NVIDIA GeForce RTX 3090"]})
    assert (
        "NVIDIA GeForce RTX 3090 is sm_86; CUDA 11.0 cannot target it; use CUDA >= 11.1, "
        "i.e. TensorFlow >= 2.6 with its tested CUDA 11.2." in conflicts
    )
    assert any("CUDA 11.0 cannot serve them" in c for c in conflicts), "both conflicts are reported"


def test_sm86_on_cuda_11_1_source_is_fine() -> None:
    stack = resolve_stack({"tensorflow": "2.6", "cuda": "11.1", "gpus": ["8.6"], "build_from_source": True})
    assert stack["cuda"] == "11.1"
    assert stack["build"]["env"]["TF_CUDA_VERSION"] == "11.1"


@pytest.mark.parametrize("cuda", ["12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6"])
def test_sm120_needs_cuda_12_8(cuda: str) -> None:
    conflicts = conflicts_of({"tensorflow": "2.18", "cuda": cuda, "build_from_source": True, "gpus": ["12.0"]})
    assert len(conflicts) == 1
    assert conflicts[0].startswith(f"A GPU of compute capability 12.0 is sm_120; CUDA {cuda} cannot target it; ")
    assert "use CUDA >= 12.8" in conflicts[0]


@pytest.mark.parametrize("cuda", ["12.8", "12.9"])
def test_sm120_with_cuda_12_8_plus_builds(cuda: str) -> None:
    stack = resolve_stack({"tensorflow": "2.18", "cuda": cuda, "build_from_source": True, "gpus": ["12.0"]})
    assert stack["build"]["env"]["HERMETIC_CUDA_VERSION"] == _matrix.cuda_row(cuda)["full"]
    assert stack["build"]["env"]["HERMETIC_CUDA_COMPUTE_CAPABILITIES"] == "sm_120,compute_120"
    # The hermetic version is the row's last update, whose Table 3 floor is above the GA floor.
    assert stack["driver_min"] == _matrix.cuda_row(cuda)["full_driver_min"]


def test_sm120_default_wheel_refused_with_both_ways_out() -> None:
    conflicts = conflicts_of({"tensorflow": "2.21", "gpus": ["NVIDIA GeForce RTX 5090"]})
    assert conflicts == [
        "NVIDIA GeForce RTX 5090 is sm_120; CUDA 12.5 cannot target it; use CUDA >= 12.8, which no TensorFlow "
        "release is tested with: TensorFlow >= 2.20 wheels with cuda: '12.8' or build_from_source of "
        "TensorFlow >= 2.18 with cuda: '12.8'."
    ]


def test_sm120_wheel_with_cuda_12_8_pins_pip_cuda() -> None:
    stack = resolve_stack({"tensorflow": "2.21", "cuda": "12.8", "gpus": ["2b85"]})
    assert stack["tf_cuda"] == "12.8"
    assert "nvidia-cuda-runtime-cu12==12.8.*" in stack["pip_requirements"]
    # cuDNN 9.3.0's matrix lists CUDA <= 12.6 and GPUs <= 9.0: a Blackwell-capable 9.x is picked instead.
    assert stack["cudnn"] == "9.8.0"
    assert "nvidia-cudnn-cu12==9.8.0.*" in stack["pip_requirements"]
    assert stack["driver_min"] == "570.26"
    assert any("PTX JIT" in n for n in stack["notes"])


def test_pinned_wheel_cannot_take_cuda_12_8() -> None:
    conflicts = conflicts_of({"tensorflow": "2.19", "cuda": "12.8", "gpus": ["12.0"]})
    assert any("CUDA 12.5 cannot target it" in c for c in conflicts)


def test_sm70_on_cuda_13_0() -> None:
    conflicts = conflicts_of(
        {"tensorflow": "2.21+cu13", "gpus": ["Tesla V100-SXM2-16GB"], "overrides": fork("2.21+cu13", cuda="13.0")}
    )
    assert conflicts == ["Tesla V100-SXM2-16GB is sm_70; CUDA 13.0 dropped it (minimum sm_75); use CUDA <= 12.9."]


def test_sm70_with_host_cuda_13_next_to_pinned_wheel() -> None:
    conflicts = conflicts_of({"tensorflow": "2.18", "cuda": "13.0", "gpus": ["7.0"]})
    assert conflicts == [
        "A GPU of compute capability 7.0 is sm_70; CUDA 13.0 dropped it (minimum sm_75); use CUDA <= 12.9."
    ]


def test_sm75_on_cuda_13_0_is_fine() -> None:
    stack = resolve_stack(
        {"tensorflow": "2.21+cu13", "gpus": ["Tesla T4"], "overrides": fork("2.21+cu13", cuda="13.0")}
    )
    assert stack["cuda"] == "13.0"
    assert stack["driver_min"] == "580.65.06"


@pytest.mark.parametrize(
    ("tf", "cc", "ok"),
    [
        ("2.16", "5.2", True),
        ("2.17", "5.2", False),
        ("2.14", "3.5", True),
        ("2.15", "3.7", False),
        ("2.17", "8.6", True),
        ("2.6", "8.6", True),
    ],
)
def test_wheel_kernel_coverage(tf: str, cc: str, ok: bool) -> None:
    request = {"tensorflow": tf, "gpus": [cc]}
    if ok:
        resolve_stack(request)
        return
    conflicts = conflicts_of(request)
    assert any(("build_from_source" in c or "CUDA" in c) and f"sm_{cc.replace('.', '')}" in c for c in conflicts)


def test_wheel_below_kernels_suggests_older_tensorflow() -> None:
    conflicts = conflicts_of({"tensorflow": "2.17", "gpus": ["5.2"]})
    assert conflicts == [
        "A GPU of compute capability 5.2 is sm_52; TensorFlow 2.17 wheels carry kernels for "
        "sm_60,sm_70,sm_80,sm_89,compute_90 only; use TensorFlow <= 2.16 or build_from_source with this "
        "compute capability."
    ]


@pytest.mark.parametrize("tf", ["2.18", "2.19", "2.20", "2.21"])
def test_tf_trt_refused_from_2_18(tf: str) -> None:
    conflicts = conflicts_of({"tensorflow": tf, "want_tensorrt": True})
    assert conflicts == [
        f"TensorFlow {tf} has no TF-TRT (TensorRT support is disabled in CUDA builds since 2.18); use TensorFlow "
        "<= 2.17 with TensorRT 8.x, or drop want_tensorrt and use TensorRT through its own Python API."
    ]


@pytest.mark.parametrize("tf", ["2.18", "2.21"])
def test_tensorrt_null_with_reason_when_not_requested(tf: str) -> None:
    stack = resolve_stack({"tensorflow": tf})
    assert stack["tensorrt"] is None
    assert any("has no TF-TRT" in n for n in stack["notes"])


@pytest.mark.parametrize(
    ("tf", "trt", "expected"),
    [
        ("2.6", None, "7.2.3"),
        ("2.7", None, "7.2.3"),
        ("2.14", None, "8.5.3"),
        ("2.15", None, "8.6.1"),
        ("2.17", None, "8.6.1"),
        ("2.17", "8.5", "8.5"),
        ("2.6", "8.6", None),
        ("2.17", "10.0", None),
        ("2.17", "9.2", None),
    ],
)
def test_tensorrt_ranges(tf: str, trt: Optional[str], expected: Optional[str]) -> None:
    request: Dict[str, Any] = {"tensorflow": tf, "want_tensorrt": True}
    if trt:
        request["tensorrt"] = trt
    if expected is None:
        conflicts = conflicts_of(request)
        assert len(conflicts) == 1 and f"TensorRT {trt} is outside" in conflicts[0]
        if vtuple(trt) >= (9,):
            assert "tensorflow#68360" in conflicts[0]
        return
    stack = resolve_stack(request)
    assert stack["tensorrt"] == expected


def test_tensorrt_version_implies_want_and_sets_configure() -> None:
    stack = resolve_stack({"tensorflow": "2.15", "tensorrt": "8.6.1", "build_from_source": True})
    assert stack["tensorrt"] == "8.6.1"
    assert stack["build"]["env"]["TF_NEED_TENSORRT"] == "1"
    assert stack["build"]["env"]["TF_TENSORRT_VERSION"] == "8"


def test_tensorrt_needs_gpu() -> None:
    conflicts = conflicts_of({"tensorflow": "2.17", "want_tensorrt": True, "cpu_only": True})
    assert conflicts == ["TensorRT needs a GPU stack but cpu_only is set; drop want_tensorrt/tensorrt or cpu_only."]


@pytest.mark.parametrize(
    ("tf", "compiler", "fails"),
    [
        ("2.14", "gcc-13", "GCC 13 cannot build TensorFlow 2.14"),
        ("2.15", "gcc-13", "nvcc of CUDA 12.2 accepts GCC <= 12"),
        ("2.16", "gcc-12", None),
        ("2.18", "gcc-13", None),
        ("2.17", "gcc-11", "GCC 11 cannot build TensorFlow 2.17"),
        ("2.17", "gcc-12", None),
        ("2.10", "gcc-9.3.0", "GCC 9.3.0 cannot build TensorFlow 2.10"),
        ("2.8", "gcc-9.3.0", None),
        ("2.18", "clang-15", "Clang 15 cannot build TensorFlow 2.18"),
        ("2.18", "clang-16", None),
        ("2.14", "clang-17", "Clang 17 cannot build TensorFlow 2.14"),
        ("2.15", "clang-17", None),
        ("2.11", "gcc-11", "nvcc of CUDA 11.2 accepts GCC <= 10"),
    ],
)
def test_compiler_conflicts(tf: str, compiler: str, fails: Optional[str]) -> None:
    request = {"tensorflow": tf, "build_from_source": True, "compiler": compiler}
    if fails is None:
        stack = resolve_stack(request)
        assert stack["compiler"]["family"] == compiler.split("-", maxsplit=1)[0]
        return
    conflicts = conflicts_of(request)
    assert len(conflicts) == 1
    assert fails in conflicts[0]
    assert "(tested)" in conflicts[0]


def test_compiler_conflict_ignored_for_wheels() -> None:
    stack = resolve_stack({"tensorflow": "2.14", "compiler": "gcc-13"})
    assert stack["compiler"]["version"] == "13"


def test_compiler_nvcc_limit_does_not_apply_to_cpu_builds() -> None:
    stack = resolve_stack({"tensorflow": "2.11", "build_from_source": True, "compiler": "gcc-11", "cpu_only": True})
    assert stack["build"]["env"]["TF_NEED_CUDA"] == "0"


def test_compiler_unparsable() -> None:
    conflicts = conflicts_of({"tensorflow": "2.17", "build_from_source": True, "compiler": "icc-2024"})
    assert conflicts == [
        "compiler 'icc-2024' is not understood; write it as gcc-<major> or clang-<major>, e.g. clang-17."
    ]


@pytest.mark.parametrize(
    ("driver", "gpus", "outcome"),
    [
        ("470.82.01", [], "conflict"),
        ("535.261.03", [], "compat"),
        # compute_90 carries SASS for sm_90 (TF .bazelrc, cuda_configure.bzl): no PTX JIT, so
        # minor-version compatibility holds (NVIDIA CUDA compatibility guide).
        ("535.261.03", ["9.0"], "compat"),
        ("545.23.06", ["9.0"], "ok"),
        ("550.163.01", [], "ok"),
    ],
)
def test_driver_checks(driver: str, gpus: List[str], outcome: str) -> None:
    request = {"tensorflow": "2.17", "driver_version": driver, "gpus": gpus}
    if outcome == "conflict":
        assert conflicts_of(request) == [
            f"NVIDIA driver {driver} is older than 545.23.06 required by CUDA 12.3 (TensorFlow 2.17); upgrade the "
            "driver to >= 545.23.06 (>= 525.60.13 suffices with CUDA minor-version compatibility)."
        ]
    elif outcome == "conflict-ptx":
        conflicts = conflicts_of(request)
        assert len(conflicts) == 1 and "cannot JIT newer PTX" in conflicts[0]
    else:
        stack = resolve_stack(request)
        assert stack["driver_min"] == "545.23.06"
        assert any("minor-version compatibility" in n for n in stack["notes"]) == (outcome == "compat")


def test_driver_compat_refused_when_only_ptx_reaches_the_gpu() -> None:
    overrides = {
        "tensorflow": [
            {"version": "2.17+ptx", "based_on": "2.17", "wheel_compute_capabilities": ["sm_70", "compute_80"]}
        ]
    }
    conflicts = conflicts_of(
        {"tensorflow": "2.17+ptx", "driver_version": "535.261.03", "gpus": ["9.0"], "overrides": overrides}
    )
    assert len(conflicts) == 1 and "cannot JIT newer PTX" in conflicts[0]


def test_gpu_raises_driver_floor() -> None:
    stack = resolve_stack({"tensorflow": "2.21", "cuda": "12.8", "gpus": ["NVIDIA B200"]})
    assert stack["driver_min"] == "570.26"
    assert stack["driver_min_compat"] == "570.26"


@pytest.mark.parametrize(
    ("request_", "numpy"),
    [
        ({"tensorflow": "2.6"}, ">=1.19.2,<1.20"),
        ({"tensorflow": "2.12"}, ">=1.22,<1.24"),
        ({"tensorflow": "2.16", "python": "3.12"}, ">=1.26.0,<2"),
        ({"tensorflow": "2.16", "python": "3.11"}, ">=1.23.5,<2"),
        ({"tensorflow": "2.17", "os": "debian12"}, ">=1.23.5,<2"),
        ({"tensorflow": "2.18"}, ">=1.26.0,<2.1.0"),
        ({"tensorflow": "2.19"}, ">=1.26.0,<2.2.0"),
        ({"tensorflow": "2.21"}, ">=1.26.0"),
    ],
)
def test_numpy_pin(request_: Dict[str, Any], numpy: str) -> None:
    stack = resolve_stack(request_)
    assert stack["numpy"] == numpy
    assert "numpy" + numpy in stack["pip_requirements"]


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (
            {"tensorflow": "2.21", "python": "3.9"},
            "Python 3.9 is outside TensorFlow 2.21's supported range 3.10-3.13; use Python 3.10-3.13",
        ),
        (
            {"tensorflow": "2.6", "os": "debian12"},
            "Python 3.11 (default of debian12) is outside TensorFlow 2.6's supported range 3.6-3.9",
        ),
        (
            {"tensorflow": "2.17", "python": "3.13"},
            "use Python 3.9-3.12 (e.g. an interpreter from uv or the distribution's alternatives), "
            "or TensorFlow 2.20-2.21.",
        ),
        (
            {"tensorflow": "latest", "python": "3.14"},
            "Python 3.14 is supported by no TensorFlow in the matrix (newest 2.21 supports 3.10-3.13); "
            "use Python 3.10-3.13.",
        ),
    ],
)
def test_python_outside_range(request_: Dict[str, Any], expected: str) -> None:
    conflicts = conflicts_of(request_)
    assert len(conflicts) == 1
    assert expected in conflicts[0]


@pytest.mark.parametrize(
    ("request_", "tf", "python"),
    [
        ({"os": "debian12"}, "2.21", "3.11"),
        ({"os": "debian13"}, "2.21", "3.13"),
        ({"os": "ubuntu2204"}, "2.21", "3.10"),
        ({"os": "ubuntu2404"}, "2.21", "3.12"),
        ({"os": "rhel9"}, "2.20", "3.9"),
        ({"os": "Rocky-9"}, "2.20", "3.9"),
        ({"python": "3.6"}, "2.6", "3.6"),
        ({"python": "3.8.10"}, "2.13", "3.8"),
        ({}, "2.21", "3.13"),
        ({"tensorflow": "latest", "want_tensorrt": True}, "2.17", "3.12"),
        ({"tensorflow": "latest", "os": "debian12", "gpus": ["5.2"]}, "2.16", "3.11"),
    ],
)
def test_latest_and_default_python(request_: Dict[str, Any], tf: str, python: str) -> None:
    stack = resolve_stack(request_)
    assert stack["tensorflow"] == tf
    assert stack["python"] == python
    assert any(f"'latest' resolved to {tf}" in n for n in stack["notes"])


def test_latest_notes_why_newer_releases_were_skipped() -> None:
    stack = resolve_stack({"want_tensorrt": True})
    skipped = [n for n in stack["notes"] if n.startswith("Skipped TensorFlow")]
    assert [s.split()[2] for s in skipped] == ["2.21", "2.20", "2.19", "2.18"]


def test_latest_reports_newest_candidate_conflicts_when_nothing_fits() -> None:
    conflicts = conflicts_of({"os": "debian12", "cuda": "11.0", "gpus": ["8.6"]})
    assert any("TensorFlow 2.21" in c for c in conflicts)


def test_full_release_version_is_kept() -> None:
    stack = resolve_stack({"tensorflow": "2.6.5", "gpus": ["7.5"]})
    assert stack["tensorflow"] == "2.6.5"
    assert stack["tensorflow_minor"] == "2.6"
    assert stack["pip_requirements"][0] == "tensorflow==2.6.5"


def test_conflicts_are_all_collected() -> None:
    conflicts = conflicts_of(
        {
            "tensorflow": "2.18",
            "python": "3.13",
            "want_tensorrt": True,
            "driver_version": "470.82.01",
            "cuda": "12.0",
            "gpus": ["12.0"],
            "build_from_source": True,
            "compiler": "clang-14",
        }
    )
    assert len(conflicts) == 5
    joined = " ".join(conflicts)
    for needle in ("Python 3.13", "sm_120", "NVIDIA driver 470.82.01", "no TF-TRT", "Clang 14 cannot build"):
        assert needle in joined


@pytest.mark.parametrize(
    ("request_", "needle"),
    [
        ({"tensorflow": "1.15"}, "TensorFlow '1.15' is not in the matrix"),
        ({"tensorflow": "2.17", "os": "windows11"}, "Operating system 'windows11' is not in the matrix"),
        ({"tensorflow": "2.17", "gpus": ["Voodoo 3"]}, "GPU 'Voodoo 3' is not in the matrix"),
        ({"tensorflow": "2.17", "cuda": "10.2"}, "CUDA 10.2 is not in the matrix"),
        ({"tensorflow": "2.17", "colour": "blue"}, "Unknown request key(s) colour"),
        ({"tensorflow": "2.17", "cudnn": "9.3", "build_from_source": True}, "cuDNN 9.3.0 is another major"),
        ({"tensorflow": "2.10", "cudnn": "8.0"}, "cuDNN 8.0.0 is older"),
        ({"tensorflow": "2.12", "cudnn": "8.9.7", "cuda": "11.8", "build_from_source": True}, None),
        ({"tensorflow": "2.20", "cuda": "11.8"}, "TensorFlow 2.20 wheels accept CUDA 12.x >= 12.5"),
        ({"tensorflow": "2.17", "cuda": "11.8", "build_from_source": True}, "CUDA 11.8 is another major"),
    ],
)
def test_bad_inputs(request_: Dict[str, Any], needle: Optional[str]) -> None:
    if needle is None:
        assert resolve_stack(request_)["cudnn"] == "8.9.7"
        return
    conflicts = conflicts_of(request_)
    assert any(needle in c for c in conflicts), conflicts


def test_cudnn_outside_cuda_range() -> None:
    conflicts = conflicts_of({"tensorflow": "2.11", "cuda": "11.8", "cudnn": "8.1.0", "build_from_source": True})
    assert conflicts == ["cuDNN 8.1.0 supports CUDA 11.0-11.2, not CUDA 11.8; use cuDNN 8.6.0."]


def test_pinned_wheel_ignores_host_cudnn_with_note() -> None:
    stack = resolve_stack({"tensorflow": "2.17", "cudnn": "9.3.0"})
    assert any("wheels bring cuDNN 8.9.7 from pip" in n for n in stack["notes"])


@pytest.mark.parametrize(
    ("value", "cc", "name"),
    [
        ("8.6", "8.6", None),
        ("sm_86", "8.6", None),
        ("compute_90", "9.0", None),
        ("sm_90a", "9.0", None),
        ("120", "12.0", None),
        ("86", "8.6", None),
        ("10de:2335", "9.0", "NVIDIA H200"),
        ("0x2204", "8.6", "NVIDIA GeForce RTX 3090"),
        ("NVIDIA L40S", "8.9", "NVIDIA L40S"),
        ("nope", None, None),
        ("ffff", None, None),
    ],
)
def test_parse_gpu(value: str, cc: Optional[str], name: Optional[str]) -> None:
    assert parse_gpu(value, _matrix.GPUS) == (cc, name)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("debian12", "debian12"),
        ("Debian-12", "debian12"),
        ("ubuntu22.04", "ubuntu2204"),
        ("Ubuntu 24.04", "ubuntu2404"),
        ("AlmaLinux9", "rhel9"),
        ("RedHat9", "rhel9"),
        (None, None),
        ("", None),
    ],
)
def test_normalize_os(value: Optional[str], expected: Optional[str]) -> None:
    assert normalize_os(value) == expected


def test_override_adds_gpu() -> None:
    overrides = {"gpus": [{"name": "ACME Accelerator X", "compute_capability": "8.9", "pci_device_ids": ["abcd"]}]}
    stack = resolve_stack({"tensorflow": "2.17", "gpus": ["ACME Accelerator X", "10de:abcd"], "overrides": overrides})
    assert stack["compute_capabilities"] == ["8.9"]
    assert stack["gpu_models"][0]["name"] == "ACME Accelerator X"


def test_override_gpu_is_checked_like_builtin_ones() -> None:
    overrides = {"gpus": [{"name": "ACME Blackwell", "compute_capability": "12.0"}]}
    conflicts = conflicts_of({"tensorflow": "2.17", "gpus": ["ACME Blackwell"], "overrides": overrides})
    assert conflicts[0].startswith("ACME Blackwell is sm_120; CUDA 12.3 cannot target it;")


def test_override_adds_tensorflow_fork() -> None:
    overrides = {
        "tensorflow": [
            {
                "version": "2.17+acme",
                "based_on": "2.17",
                "pip_package": "acme-tensorflow",
                "pip_version": "2.17.1+acme3",
            }
        ]
    }
    stack = resolve_stack({"tensorflow": "2.17+acme", "gpus": ["8.6"], "overrides": overrides})
    assert stack["tensorflow"] == "2.17+acme"
    assert stack["cuda"] == "12.3"
    assert stack["pip_requirements"][0] == "acme-tensorflow[and-cuda]==2.17.1+acme3"
    assert stack["source"] == "user override (dlstack_matrix_overrides)"
    assert _matrix.tensorflow_row("2.17+acme") is None, "overrides must not change the built-in data"


def test_override_replaces_fields_of_existing_row() -> None:
    stack = resolve_stack(
        {"tensorflow": "2.17", "overrides": {"tensorflow": [{"version": "2.17", "cuda": "12.4"}]}, "cpu_only": False}
    )
    assert stack["cuda"] == "12.4"
    assert _matrix.tensorflow_row("2.17")["cuda"] == "12.3"


def test_override_new_complete_row_without_base() -> None:
    row = dict(_matrix.tensorflow_row("2.21"))
    row.update({"version": "2.22", "source": "internal build notes"})
    for key in ("bazel_range", "bazel_flags", "wheel_cuda", "wheel_compute_capabilities", "tensorrt"):
        row.pop(key)
    stack = resolve_stack({"overrides": {"tensorflow": [row]}})
    assert stack["tensorflow"] == "2.22"
    assert stack["pip_requirements"][0] == "tensorflow==2.22.*"


def test_bad_overrides_are_all_reported() -> None:
    with pytest.raises(ResolveError) as info:
        merged_matrix(
            {
                "drivers": [],
                "gpus": [{"compute_capability": "8.9"}, "text"],
                "tensorflow": [{"version": "3.0"}, {"version": "3.1", "based_on": "1.0"}],
                "cuda": {"version": "14.0"},
            }
        )
    assert len(info.value.conflicts) == 6
    joined = " ".join(info.value.conflicts)
    for needle in ("unknown table 'drivers'", "lacks 'name'", "not a mapping", "lacks python", "based_on '1.0'"):
        assert needle in joined


def test_overrides_must_be_mapping() -> None:
    with pytest.raises(ResolveError):
        merged_matrix(["not", "a", "mapping"])


@pytest.mark.parametrize(
    ("stack", "gpu", "expected"),
    [
        (
            {"tensorflow": "2.17", "numpy": ">=1.23.5,<2", "wheel_cuda": "pinned"},
            True,
            ["tensorflow[and-cuda]==2.17.*", "numpy>=1.23.5,<2"],
        ),
        (
            {"tensorflow": "2.21", "numpy": ">=1.26.0", "cpu_only": True},
            True,
            ["tensorflow-cpu==2.21.*", "numpy>=1.26.0"],
        ),
        (
            {"tensorflow": "2.17", "numpy": ">=1.23.5,<2", "wheel_cuda": "pinned"},
            False,
            ["tensorflow-cpu==2.17.*", "numpy>=1.23.5,<2"],
        ),
        (
            {"tensorflow": "2.10", "numpy": ">=1.20,<2", "wheel_cuda": "system"},
            True,
            ["tensorflow==2.10.*", "numpy>=1.20,<2"],
        ),
        ({"tensorflow": "2.6.5", "numpy": None}, True, ["tensorflow==2.6.5", "numpy"]),
    ],
)
def test_tf_wheel_requirement(stack: Dict[str, Any], gpu: bool, expected: List[str]) -> None:
    assert tf_wheel_requirement(stack, gpu) == expected


def test_conflict_message_numbers_each_conflict() -> None:
    assert conflict_message(["A is wrong; fix A.", "B is wrong; fix B."]) == (
        "The requested stack is impossible (2 conflicts): (1) A is wrong; fix A. (2) B is wrong; fix B."
    )
    assert conflict_message(["Only one."]).startswith("The requested stack is impossible (1 conflict): ")


def test_resources_for_source_builds() -> None:
    wheel = resolve_stack({"tensorflow": "2.17"})
    source = resolve_stack({"tensorflow": "2.17", "build_from_source": True})
    assert wheel["resources"]["ram_gb_per_bazel_job"] is None
    assert source["resources"]["ram_gb_per_bazel_job"] == _matrix.RESOURCES["ram_gb_per_bazel_job"]
    assert source["resources"]["disk_gb"] > wheel["resources"]["disk_gb"]


def test_want_xla_false_only_changes_configure() -> None:
    stack = resolve_stack({"tensorflow": "2.17", "want_xla": False, "build_from_source": True})
    assert stack["build"]["env"]["TF_ENABLE_XLA"] == "0"
    assert stack["xla"] is False
