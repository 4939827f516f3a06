"""The exact nvidia-* wheels of TensorFlow's and-cuda extra: the recorded data, the resolver's pins (the stack's
`constraints`) and its refusals of a cuDNN or CUDA that contradicts them."""

from __future__ import annotations

import re
from typing import Any, Dict

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _matrix
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import resolve_stack, vtuple
from ansible_collections.gpulab.dlstack.tests.unit.plugins.module_utils.test_resolve import conflicts_of

AND_CUDA_ROWS = [r for r in _matrix.TENSORFLOW if r.get("wheel_cuda") in ("pinned", "range")]
CUDNN_WHEEL = re.compile(r"^nvidia-cudnn-cu(\d+)$")
EXACT = re.compile(r"^\d+(\.\d+){2,3}$")

# TensorFlow 2.21's default stack (CUDA 12.5, cuDNN 9.3.0): the floors of its and-cuda ranges.
TF_2_21_DEFAULT = [
    "nvidia-cublas-cu12==12.5.3.2",
    "nvidia-cuda-cupti-cu12==12.5.82",
    "nvidia-cuda-nvcc-cu12==12.5.82",
    "nvidia-cuda-nvrtc-cu12==12.5.82",
    "nvidia-cuda-runtime-cu12==12.5.82",
    "nvidia-cudnn-cu12==9.3.0.75",
    "nvidia-cufft-cu12==11.2.3.61",
    "nvidia-curand-cu12==10.3.6.82",
    "nvidia-cusolver-cu12==11.6.3.83",
    "nvidia-cusparse-cu12==12.5.1.3",
    "nvidia-nccl-cu12==2.27.7",
    "nvidia-nvjitlink-cu12==12.5.82",
]


def _cuda_set(cuda: str) -> Dict[str, str]:
    row = next(r for r in _matrix.CUDA_WHEELS if r["cuda"] == cuda)
    return dict(row["wheels"])


def test_every_and_cuda_release_from_2_14_has_a_wheel_set() -> None:
    versions = [r["version"] for r in AND_CUDA_ROWS]
    assert versions == ["2.14", "2.15", "2.16", "2.17", "2.18", "2.19", "2.20", "2.21"]
    for row in AND_CUDA_ROWS:
        assert row["wheel_pins"], row["version"]
        assert "and-cuda extra" in row["source"], row["version"]


@pytest.mark.parametrize("row", AND_CUDA_ROWS, ids=lambda r: r["version"])
def test_wheel_set_matches_the_rows_cuda_and_cudnn(row: Dict[str, Any]) -> None:
    pins = row["wheel_pins"]
    major = row["cuda"].partition(".")[0]
    for name, version in pins.items():
        assert EXACT.match(version), f"{name}=={version} is not an exact wheel version"
        if name.startswith("nvidia-"):
            assert name.endswith(f"-cu{major}"), f"{name} is not a CUDA {major} wheel"
    cudnn = next(v for n, v in pins.items() if CUDNN_WHEEL.match(n))
    assert vtuple(cudnn)[:3] == vtuple(row["cudnn"]), "the extra's cuDNN is the row's cuDNN"
    assert pins[f"nvidia-cuda-runtime-cu{major}"].startswith(row["cuda"] + ".")
    cuda_part = {n: v for n, v in pins.items() if not n.startswith(("nvidia-cudnn-", "nvidia-nccl-", "tensorrt"))}
    assert cuda_part == _cuda_set(row["cuda"]), "the CUDA libraries are the recorded set of the row's CUDA"


@pytest.mark.parametrize("row", [r for r in AND_CUDA_ROWS if r["wheel_cuda"] == "range"], ids=lambda r: r["version"])
def test_range_rows_choose_the_floor_of_every_range(row: Dict[str, Any]) -> None:
    ranges = row["wheel_ranges"]
    assert set(ranges) == set(row["wheel_pins"])
    for name, spec in ranges.items():
        low = re.search(r">=([0-9.]+)", spec)
        assert low is not None, spec
        assert row["wheel_pins"][name] == low.group(1)


def test_cuda_wheel_sets_are_one_cuda_update_each() -> None:
    for entry in _matrix.CUDA_WHEELS:
        major = entry["cuda"].partition(".")[0]
        for name, version in entry["wheels"].items():
            assert name.endswith(f"-cu{major}") and EXACT.match(version), (entry["cuda"], name, version)
        for lib in ("runtime", "nvcc", "nvrtc", "cupti"):
            version = entry["wheels"].get(f"nvidia-cuda-{lib}-cu{major}", entry["cuda"] + ".")
            assert version.startswith(entry["cuda"] + "."), (entry["cuda"], lib, version)
        assert entry["source"]


def test_cudnn_wheels_are_builds_of_their_release() -> None:
    for row in _matrix.CUDNN:
        for cuda_major, version in (row.get("wheels") or {}).items():
            assert version.startswith(row["version"] + "."), (row["version"], cuda_major, version)
            assert len(vtuple(version)) == 4
    assert _matrix.CUDNN[0]["version"] == "8.1.0" and "wheels" not in _matrix.CUDNN[0]


def test_default_tf_2_21_stack_pins_the_range_floors() -> None:
    stack = resolve_stack({"tensorflow": "2.21", "gpus": ["9.0"]})
    assert stack["constraints"] == TF_2_21_DEFAULT
    assert stack["wheel_pins"]["nvidia-cudnn-cu12"] == "9.3.0.75"
    assert stack["cudnn_wheel"] == "9.3.0.75"
    assert stack["pip_requirements"] == ["tensorflow[and-cuda]==2.21.*", "numpy>=1.26.0"]


@pytest.mark.parametrize("row", AND_CUDA_ROWS, ids=lambda r: r["version"])
def test_each_release_resolves_to_its_recorded_pins(row: Dict[str, Any]) -> None:
    stack = resolve_stack({"tensorflow": row["version"]})
    assert stack["constraints"] == [f"{n}=={v}" for n, v in sorted(row["wheel_pins"].items())]


@pytest.mark.parametrize(
    "request_",
    [
        {"tensorflow": "2.21", "cpu_only": True},
        {"tensorflow": "2.21", "build_from_source": True},
        {"tensorflow": "2.12"},
    ],
    ids=["cpu", "source", "system-cuda"],
)
def test_no_pins_where_pip_brings_no_cuda(request_: Dict[str, Any]) -> None:
    stack = resolve_stack(request_)
    assert stack["constraints"] == [] and stack["wheel_pins"] == {}


def test_cudnn_8_9_with_tf_2_21_is_refused_naming_the_value_and_fix() -> None:
    assert conflicts_of({"tensorflow": "2.21", "cudnn": "8.9"}) == [
        "cuDNN 8.9.7 contradicts TensorFlow 2.21's and-cuda wheels, which need nvidia-cudnn-cu12>=9.3.0.75,<10.0 "
        "(cuDNN 9); set cudnn to a 9.x >= 9.3 or leave it unset (cuDNN 9.3.0), or build_from_source."
    ]


def test_cudnn_8_9_with_tf_2_18_is_refused() -> None:
    assert conflicts_of({"tensorflow": "2.18", "cudnn": "8.9"}) == [
        "cuDNN 8.9.7 contradicts TensorFlow 2.18's and-cuda wheels, which install nvidia-cudnn-cu12==9.3.0.75 "
        "(cuDNN 9.3.0); set cudnn to '9.3' or leave it unset, or build_from_source to build against cuDNN 8.9.7."
    ]


def test_cudnn_8_9_with_a_source_build_of_2_17_is_fine() -> None:
    stack = resolve_stack({"tensorflow": "2.17", "cudnn": "8.9", "build_from_source": True})
    assert stack["cudnn"] == "8.9.7" and stack["constraints"] == []


def test_newer_cudnn_inside_the_range_pins_its_own_wheel() -> None:
    stack = resolve_stack({"tensorflow": "2.21", "cudnn": "9.10"})
    assert stack["cudnn"] == "9.10.2"
    assert "nvidia-cudnn-cu12==9.10.2.21" in stack["constraints"]
    assert "nvidia-cuda-runtime-cu12==12.5.82" in stack["constraints"]


def test_cuda_without_a_recorded_wheel_set_is_refused() -> None:
    assert conflicts_of({"tensorflow": "2.21", "cuda": "12.6"}) == [
        "TensorFlow 2.21's and-cuda wheels are pinned to exact versions, and the matrix has no nvidia-*-cu12 wheel "
        "set for CUDA 12.6 (it has 12.5, 12.8); use cuda '12.5' or another CUDA with a set, add the set via "
        "overrides.cuda_wheels, or build_from_source."
    ]


def test_a_wheel_set_given_in_overrides_is_used() -> None:
    wheels = _cuda_set("12.5")
    wheels.update(
        {
            "nvidia-cuda-runtime-cu12": "12.6.77",
            "nvidia-cuda-nvcc-cu12": "12.6.85",
            "nvidia-cuda-nvrtc-cu12": "12.6.85",
            "nvidia-cuda-cupti-cu12": "12.6.80",
        }
    )
    overrides = {"cuda_wheels": [{"cuda": "12.6", "wheels": wheels, "source": "site lock file"}]}
    stack = resolve_stack({"tensorflow": "2.21", "cuda": "12.6", "overrides": overrides})
    assert "nvidia-cuda-runtime-cu12==12.6.77" in stack["constraints"]
    assert any("CUDA 12.6's set (site lock file)" in n for n in stack["notes"])


def test_a_cudnn_without_a_recorded_wheel_is_refused() -> None:
    overrides = {"cudnn": [{"version": "9.5.1", "cuda_min": "12.0", "cuda_max": "12.6"}]}
    assert conflicts_of({"tensorflow": "2.21", "cudnn": "9.5.1", "overrides": overrides}) == [
        "cuDNN 9.5.1 has no nvidia-cudnn-cu12 wheel in the matrix, and TensorFlow 2.21's and-cuda wheels are pinned "
        "to exact versions; use cudnn '9.3' or add its wheels (per CUDA major) via overrides.cudnn."
    ]


def test_a_cuda_set_outside_the_extras_range_is_refused() -> None:
    overrides = {"cuda_wheels": [{"cuda": "12.8", "wheels": {**_cuda_set("12.8"), "nvidia-cufft-cu12": "12.0.0.1"}}]}
    conflicts = conflicts_of({"tensorflow": "2.21", "cuda": "12.8", "overrides": overrides})
    assert conflicts == [
        "TensorFlow 2.21's and-cuda extra does not allow nvidia-cufft-cu12==12.0.0.1 (allowed >=11.2.3.61,<12.0); "
        "use cuda '12.5' and cudnn '9.3' or leave them unset."
    ]


def test_fork_that_changes_cuda_drops_the_inherited_wheel_set() -> None:
    overrides = {"tensorflow": [{"version": "2.21+cu13", "based_on": "2.21", "cuda": "13.0", "cudnn": "9.17.0"}]}
    stack = resolve_stack({"tensorflow": "2.21+cu13", "overrides": overrides})
    assert stack["constraints"] == []
    assert any("records no wheel set for this row" in n for n in stack["notes"])


def test_fork_that_keeps_the_wheel_facts_keeps_the_set() -> None:
    overrides = {"tensorflow": [{"version": "2.21+site", "based_on": "2.21", "source": "site build of 2.21"}]}
    assert resolve_stack({"tensorflow": "2.21+site", "overrides": overrides})["constraints"] == TF_2_21_DEFAULT


def test_override_wheel_pins_must_be_exact_versions() -> None:
    overrides = {"tensorflow": [{"version": "2.21", "wheel_pins": {"nvidia-cudnn-cu12": ">=9"}}]}
    conflicts = conflicts_of({"tensorflow": "2.21", "overrides": overrides})
    assert conflicts == [
        "overrides.tensorflow row '2.21' has wheel_pins: {'nvidia-cudnn-cu12': '>=9'}; give a mapping of wheel name "
        "(or CUDA major) to its exact version, such as {nvidia-cudnn-cu12: '9.3.0.75'}."
    ]


def test_cudnn_wheel_for_the_cudnn_role_follows_the_host_cuda() -> None:
    assert resolve_stack({"tensorflow": "2.12"})["cudnn_wheel"] == "8.6.0.163"
    assert resolve_stack({"tensorflow": "2.6"})["cudnn_wheel"] is None
    assert resolve_stack({"tensorflow": "2.21", "cpu_only": True})["cudnn_wheel"] is None
