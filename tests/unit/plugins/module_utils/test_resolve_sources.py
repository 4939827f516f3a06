"""Resolver cases derived from public sources, one source per case, and answers to bad values."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix, _tfbuild
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import ResolveError, resolve_stack, wheel_code

TF_BAZELRC = "tensorflow .bazelrc: compute_XY enables PTX embedding in addition to SASS; cuda_configure.bzl"
CUDA_COMPAT = "NVIDIA CUDA compatibility guide: minor-version compatibility cannot JIT newer PTX"
TABLE3 = "NVIDIA CUDA Toolkit release notes, Table 3 (GA and update driver floors)"
CUDNN_810 = "NVIDIA cuDNN 8.1.0-8.1.1 support matrix (CUDA 11.0-11.2)"
CUDNN_9 = "NVIDIA cuDNN 9.5.1 and 9.10.2 support matrices (Blackwell only in builds for CUDA 12.8/12.9)"
TRT_SO7 = "tensorflow#53529, #57671, #57679: 2.7-2.11 wheels load libnvinfer.so.7"
TRT_2_16 = "tensorflow#64809: the 2.16 wheel loads libnvinfer.so.8.6.1"
TRT_8 = "tensorflow#49150: TensorRT 8 needs TF >= 2.7 (source builds)"
TRT_2_18 = "TF 2.18 release notes: TensorRT support is disabled in CUDA builds"
TF_TESTED = "tensorflow/docs site/en/install/source.md (tested build configurations)"
ARCH = "NVIDIA CUDA release notes: 11.1 adds sm_86 (tensorflow#45590), 13.0 drops sm_50-sm_72"
CUDNN_81_FORUM = "NVIDIA developer forum: cuDNN 8.1 is one binary for every CUDA 11 minor (CUDART 11.2, static)"
CUDNN_917 = "NVIDIA cuDNN 9.17.0 support matrix: for CUDA 13.x, CUDA 13.0-13.1, compute capability 7.5-12.0"
RUNFILE_1232 = "NVIDIA runfile cuda_12.3.2_545.23.08_linux.run (12.3 Update 2 bundles driver 545.23.08)"
PYWRAP_220 = "TF 2.20.0 .bazelrc: build --repo_env=USE_PYWRAP_RULES=True (Arch Linux PKGBUILD 2.20.0 removes it)"

# id, request, expected stack fields (None when refused), needle of the one conflict (None when accepted), source
CASES: List[Any] = [
    (
        "hopper-tf217-wheel-driver535-compat",
        {"tensorflow": "2.17", "gpus": ["NVIDIA H100 80GB HBM3"], "driver_version": "535.261.03"},
        {"driver_min": "545.23.06", "driver_min_compat": "525.60.13"},
        None,
        TF_BAZELRC + "; " + CUDA_COMPAT,
    ),
    (
        "a100-tf212-wheel-native",
        {"tensorflow": "2.12", "gpus": ["NVIDIA A100-SXM4-80GB"], "driver_version": "520.61.05"},
        {"cuda": "11.8"},
        None,
        TF_BAZELRC + "; " + TF_TESTED,
    ),
    (
        "tf29-wheel-tensorrt-default-is-7",
        {"tensorflow": "2.9", "want_tensorrt": True},
        {"tensorrt": "7.2.3"},
        None,
        TRT_SO7,
    ),
    (
        "tf29-wheel-tensorrt-8-refused",
        {"tensorflow": "2.9", "tensorrt": "8.6.1"},
        None,
        "TensorFlow 2.9 wheels load libnvinfer.so.7",
        TRT_SO7,
    ),
    (
        "tf29-source-tensorrt-8",
        {"tensorflow": "2.9", "tensorrt": "8.6.1", "build_from_source": True},
        {"tensorrt": "8.6.1"},
        None,
        TRT_8,
    ),
    (
        "tf216-wheel-tensorrt-853-refused",
        {"tensorflow": "2.16", "tensorrt": "8.5.3"},
        None,
        "wheels load libnvinfer.so.8.6.1",
        TRT_2_16,
    ),
    (
        "tf216-wheel-tensorrt-default",
        {"tensorflow": "2.16", "want_tensorrt": True},
        {"tensorrt": "8.6.1"},
        None,
        TRT_2_16,
    ),
    (
        "tf218-no-tf-trt",
        {"tensorflow": "2.18", "want_tensorrt": True},
        None,
        "has no TF-TRT",
        TRT_2_18,
    ),
    (
        "tf211-source-cuda118-default-cudnn",
        {"tensorflow": "2.11", "cuda": "11.8", "build_from_source": True},
        {"cudnn": "8.6.0"},
        None,
        CUDNN_810,
    ),
    (
        "tf211-source-cuda118-cudnn81-refused",
        {"tensorflow": "2.11", "cuda": "11.8", "cudnn": "8.1.0", "build_from_source": True},
        None,
        "cuDNN 8.1.0 supports CUDA 11.0-11.2, not CUDA 11.8; use cuDNN 8.6.0.",
        CUDNN_810,
    ),
    (
        "tf211-wheel-cuda118-default-cudnn",
        {"tensorflow": "2.11", "cuda": "11.8"},
        {"cudnn": "8.6.0"},
        None,
        CUDNN_810,
    ),
    (
        "rtx5090-tf221-wheel-cuda128",
        {"tensorflow": "2.21", "cuda": "12.8", "gpus": ["NVIDIA GeForce RTX 5090"]},
        {"cudnn": "9.8.0", "tf_cuda": "12.8", "ptx_jit": True},
        None,
        CUDNN_9,
    ),
    (
        "b200-tf221-source-cudnn93-refused",
        {"tensorflow": "2.21", "cuda": "12.8", "cudnn": "9.3.0", "gpus": ["NVIDIA B200"], "build_from_source": True},
        None,
        "cuDNN 9.3.0 supports CUDA 11.8-12.6, not CUDA 12.8; use cuDNN 9.8.0.",
        CUDNN_9,
    ),
    (
        "b200-tf221-source-cudnn9102",
        {"tensorflow": "2.21", "cuda": "12.8", "cudnn": "9.10.2", "gpus": ["NVIDIA B200"], "build_from_source": True},
        {"cudnn": "9.10.2", "driver_min": "570.124.06"},
        None,
        CUDNN_9 + "; " + TABLE3 + " (12.8 Update 1 >= 570.124.06)",
    ),
    (
        "tf218-hermetic-needs-update-floor",
        {"tensorflow": "2.18", "build_from_source": True},
        {"driver_min": "555.42.06", "cuda_full": "12.5.1"},
        None,
        TABLE3 + " (12.5 GA >= 555.42.02, 12.5 Update 1 >= 555.42.06)",
    ),
    (
        "tf218-wheel-ga-floor",
        {"tensorflow": "2.18", "driver_version": "555.42.02"},
        {"driver_min": "555.42.02"},
        None,
        TABLE3,
    ),
    (
        "sm86-on-cuda110-refused",
        {"tensorflow": "2.6", "cuda": "11.0", "gpus": ["8.6"], "build_from_source": True},
        None,
        "CUDA 11.0 cannot target it",
        ARCH,
    ),
    (
        "tf26-wheel-cudnn81-on-cuda110",
        {"tensorflow": "2.6", "cuda": "11.0", "cudnn": "8.1.0", "gpus": ["8.0"], "build_from_source": True},
        {"cudnn": "8.1.0", "cuda": "11.0"},
        None,
        CUDNN_81_FORUM,
    ),
    (
        "tf212-wheel-cudnn86-cuda118",
        {"tensorflow": "2.12", "cuda": "11.8", "cudnn": "8.6.0"},
        {"cudnn": "8.6.0"},
        None,
        TF_TESTED + " (2.12: CUDA 11.8, cuDNN 8.6)",
    ),
    (
        "cudnn86-on-cuda112-refused-no-matrix",
        {"tensorflow": "2.9", "cuda": "11.2", "cudnn": "8.6.0", "build_from_source": True},
        None,
        "cuDNN 8.6.0 supports CUDA 11.8-11.8, not CUDA 11.2",
        TF_TESTED + " (cuDNN 8.6 only seen with CUDA 11.8; its support matrix was not found)",
    ),
    (
        "tf218-hermetic-cuda123-update-floor",
        {"tensorflow": "2.18", "cuda": "12.3", "build_from_source": True},
        {"cuda_full": "12.3.2", "driver_min": "545.23.08"},
        None,
        RUNFILE_1232,
    ),
    (
        "tf216-local-cuda123-ga-floor",
        {"tensorflow": "2.16", "build_from_source": True},
        {"cuda_full": "12.3.2", "driver_min": "545.23.06"},
        None,
        TF_TESTED + " (2.16: CUDA 12.3); " + TABLE3 + " (12.3 GA >= 545.23.06)",
    ),
    (
        "a30-tf215-wheel",
        {"tensorflow": "2.15", "gpus": ["NVIDIA A30"]},
        {"compute_capabilities": ["8.0"]},
        None,
        TF_TESTED + "; NVIDIA A30 datasheet (Ampere, 8.0)",
    ),
    (
        "gh200-tf221-wheel",
        {"tensorflow": "2.21", "gpus": ["NVIDIA GH200 480GB"]},
        {"compute_capabilities": ["9.0"]},
        None,
        TF_BAZELRC + "; NVIDIA GH200 datasheet (Hopper, 9.0)",
    ),
]


@pytest.mark.parametrize(
    ("request_", "expected", "needle", "source"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_sourced_case(
    request_: Dict[str, Any], expected: Optional[Dict[str, Any]], needle: Optional[str], source: str
) -> None:
    assert source
    if expected is None:
        with pytest.raises(ResolveError) as info:
            resolve_stack(request_)
        assert len(info.value.conflicts) == 1, info.value.conflicts
        assert needle in info.value.conflicts[0]
        return
    stack = resolve_stack(request_)
    wanted = dict(expected)
    ptx_jit = wanted.pop("ptx_jit", False)
    for key, value in wanted.items():
        assert stack[key] == value, key
    assert any("PTX JIT" in n for n in stack["notes"]) == ptx_jit, stack["notes"]


def test_compute_code_is_sass_and_ptx() -> None:
    native, ptx = wheel_code(["sm_80", "compute_90"])
    assert native == [(8, 0), (9, 0)]
    assert ptx == [(9, 0)]


def test_a_refusal_never_offers_the_version_it_refused() -> None:
    for cudnn in ("8.1.0", "9.3.0"):
        request = {"tensorflow": "2.11" if cudnn == "8.1.0" else "2.21", "build_from_source": True, "cudnn": cudnn}
        request["cuda"] = "11.8" if cudnn == "8.1.0" else "12.8"
        with pytest.raises(ResolveError) as info:
            resolve_stack(request)
        fix = info.value.conflicts[0].split(";", 1)[1]
        assert cudnn not in fix


def test_every_cuda_row_separates_ga_and_update_floors() -> None:
    for row in _matrix.CUDA:
        assert row["full_driver_min"], row["version"]
        assert tuple(int(p) for p in row["full_driver_min"].split(".")) >= tuple(
            int(p) for p in row["driver_min"].split(".")
        ), row["version"]


@pytest.mark.parametrize(
    ("request_", "needles"),
    [
        ({"driver_version": "banana"}, ["driver_version 'banana' is not a version", "'535.261.03'"]),
        ({"cudnn": "banana"}, ["cudnn 'banana' is not a version", "'9.3.0'"]),
        ({"cuda": "twelve"}, ["cuda 'twelve' is not a version"]),
        ({"tensorrt": "8.x"}, ["tensorrt '8.x' is not a version"]),
        ({"python": "three"}, ["python 'three' is not a version"]),
        ({"tensorflow": 2.1}, ["TensorFlow '2.1' is not in the matrix", "unquoted YAML 2.10", "'2.10' in quotes"]),
        (
            {"tensorflow": "2.15", "python": 3.1},
            ["Python 3.1 (an unquoted YAML 3.10", "'3.10' in quotes", "is outside"],
        ),
        (
            {"gpus": ["x"], "overrides": {"gpus": [{"name": "x", "compute_capability": "8"}]}},
            ["overrides.gpus row 'x' has compute_capability: '8'", "such as '8.6'"],
        ),
        (
            {
                "tensorflow": "2.21+f",
                "overrides": {"tensorflow": [{"version": "2.21+f", "based_on": "2.21", "python": "3.12"}]},
            },
            ["overrides.tensorflow row '2.21+f' has python: '3.12'", "['3.10', '3.13']"],
        ),
        (
            {"tensorflow": "2.21", "overrides": {"tensorflow": [{"version": "2.21", "cuda": "twelve"}]}},
            ["overrides.tensorflow row '2.21' has cuda"],
        ),
        (
            {"overrides": {"cuda": [{"version": "12.5", "driver_min": "new"}]}},
            ["overrides.cuda row '12.5' has driver_min: 'new'"],
        ),
        (
            {
                "tensorflow": "2.21+f",
                "overrides": {
                    "tensorflow": [{"version": "2.21+f", "based_on": "2.21", "wheel_compute_capabilities": ["8.0"]}]
                },
            },
            ["has wheel_compute_capabilities"],
        ),
    ],
)
def test_bad_values_get_one_clear_sentence(request_: Dict[str, Any], needles: List[str]) -> None:
    with pytest.raises(ResolveError) as info:
        resolve_stack(request_)
    text = " ".join(info.value.conflicts)
    for needle in needles:
        assert needle in text, text


def test_cudnn_whose_matrix_lists_no_blackwell_is_refused_for_it() -> None:
    # A cuDNN build for CUDA 12.8 whose matrix stops at Hopper, like 9.5.1's (CUDNN_9): B200 is refused.
    row = {"version": "9.5.1", "cuda_min": "12.0", "cuda_max": "12.8", "sm_max": [["12.0", "9.0"]]}
    request = {
        "tensorflow": "2.21",
        "cuda": "12.8",
        "cudnn": "9.5.1",
        "gpus": ["NVIDIA B200"],
        "build_from_source": True,
        "overrides": {"cudnn": [row]},
    }
    with pytest.raises(ResolveError) as info:
        resolve_stack(request)
    assert info.value.conflicts == [
        "cuDNN 9.5.1 for CUDA 12.8 lists GPUs up to compute capability 9.0, not 10.0 (NVIDIA's cuDNN support "
        "matrix); use cuDNN 9.8.0."
    ]
    assert resolve_stack(dict(request, gpus=["NVIDIA H100 80GB HBM3"]))["cudnn"] == "9.5.1"


@pytest.mark.parametrize(
    ("request_", "unverified"),
    [
        # A stack that rests only on sourced rows says nothing.
        ({"tensorflow": "2.21", "gpus": ["9.0"]}, []),
        ({"tensorflow": "2.17", "cpu_only": True}, []),
        # cuDNN 8.1.0's CUDA range is sourced now (NVIDIA forum, TF tested configurations): nothing to say.
        ({"tensorflow": "2.6", "gpus": ["8.0"]}, []),
        # USE_PYWRAP_RULES is sourced for 2.20 (its .bazelrc sets it).
        ({"tensorflow": "2.20", "gpus": ["9.0"], "build_from_source": True}, []),
        # The TF-TRT ceiling is [U]: only a stack with TensorRT rests on it.
        ({"tensorflow": "2.17", "gpus": ["9.0"], "want_tensorrt": True}, ["TensorFlow 2.17: TensorRT ceiling"]),
        # USE_PYWRAP_RULES is [U]: only a source build rests on it.
        ({"tensorflow": "2.21", "gpus": ["9.0"], "build_from_source": True}, ["TensorFlow 2.21: USE_PYWRAP_RULES"]),
    ],
)
def test_a_stack_says_which_unverified_facts_it_rests_on(request_: Dict[str, Any], unverified: List[str]) -> None:
    stack = resolve_stack(request_)
    assert len(stack["unverified"]) == len(unverified)
    for entry, start in zip(stack["unverified"], unverified):
        assert entry.startswith(start) and "[U]" in entry
    noted = [n for n in stack["notes"] if "no primary source confirmed" in n]
    assert len(noted) == (1 if unverified else 0)


def test_cuda13_fork_gets_cudnn_917_from_its_support_matrix() -> None:
    """CUDNN_917: the CUDA 13.x build lists Turing to Blackwell (7.5-12.0); 9.13.0 had no matrix and is gone."""
    fork = {"version": "2.21+cu13", "based_on": "2.21", "cuda": "13.0"}
    stack = resolve_stack(
        {"tensorflow": "2.21+cu13", "gpus": ["NVIDIA B200", "Tesla T4"], "overrides": {"tensorflow": [fork]}}
    )
    assert (stack["cuda"], stack["cudnn"]) == ("13.0", "9.17.0")
    assert [r["version"] for r in _matrix.CUDNN if r["version"].startswith("9.13")] == []


def test_tf_2_20_source_build_passes_the_bazelrc_pywrap_value() -> None:
    """PYWRAP_220: the flag repeats the value of 2.20's own .bazelrc, True (not 1)."""
    stack = resolve_stack({"tensorflow": "2.20", "gpus": ["9.0"], "build_from_source": True})
    assert "--repo_env=USE_PYWRAP_RULES=True" in stack["build"]["bazel_flags"]


@pytest.mark.parametrize(("tf", "bazel"), [("2.6", "3.7.2"), ("2.7", "3.7.2"), ("2.8", "4.2.1")])
def test_bazel_of_2_6_to_2_8_is_exactly_the_tested_one(tf: str, bazel: str) -> None:
    """TF_TESTED lists these Bazel versions; configure.py's ranges for r2.6-r2.8 were not read, so none is used."""
    stack = resolve_stack({"tensorflow": tf, "build_from_source": True})
    assert _tfbuild.bazel_range(stack) == (bazel, bazel)
