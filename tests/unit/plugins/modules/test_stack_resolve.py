"""Unit tests of the stack_resolve module (argument handling, results, failures)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import REQUEST_KEYS
from ansible_collections.gpulab.dlstack.plugins.modules import stack_resolve

RunModule = Callable[..., Tuple[bool, Dict[str, Any]]]


@pytest.mark.parametrize("check_mode", [False, True])
def test_resolves_without_change(run_module: RunModule, check_mode: bool) -> None:
    failed, result = run_module(
        stack_resolve.main, {"tensorflow": "2.17", "gpus": ["9.0"], "want_tensorrt": True}, check_mode=check_mode
    )
    assert not failed
    assert result["changed"] is False
    stack = result["stack"]
    assert stack["tensorflow"] == "2.17"
    assert stack["cuda"] == "12.3"
    assert stack["cudnn"] == "8.9.7"
    assert stack["tensorrt"] == "8.6.1"
    assert stack["compute_capabilities"] == ["9.0"]
    assert stack["driver_min"] == "545.23.06"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"os": "debian12"}, ("2.21", "3.11")),
        ({"os": "rhel9", "cpu_only": True}, ("2.20", "3.9")),
        ({"tensorflow": "2.6.5", "python": "3.8"}, ("2.6.5", "3.8")),
        ({"tensorflow": "2.18", "gpus": ["NVIDIA H200"], "build_from_source": True}, ("2.18", "3.12")),
    ],
)
def test_defaults_and_options(run_module: RunModule, args: Dict[str, Any], expected: Tuple[str, str]) -> None:
    failed, result = run_module(stack_resolve.main, args)
    assert not failed, result.get("msg")
    assert (result["stack"]["tensorflow"], result["stack"]["python"]) == expected
    assert result["stack"]["build"]["from_source"] is bool(args.get("build_from_source"))


def test_impossible_request_lists_every_conflict(run_module: RunModule) -> None:
    failed, result = run_module(
        stack_resolve.main,
        {"tensorflow": "2.18", "want_tensorrt": True, "python": "3.13", "driver_version": "470.82.01"},
    )
    assert failed
    conflicts: List[str] = result["conflicts"]
    assert len(conflicts) == 3
    assert result["msg"].startswith("The requested stack is impossible (3 conflicts): (1) ")
    for conflict in conflicts:
        assert conflict in result["msg"]


def test_overrides_option(run_module: RunModule) -> None:
    failed, result = run_module(
        stack_resolve.main,
        {
            "tensorflow": "2.17+acme",
            "gpus": ["ACME X"],
            "overrides": {
                "tensorflow": [{"version": "2.17+acme", "based_on": "2.17"}],
                "gpus": [{"name": "ACME X", "compute_capability": "8.9"}],
            },
        },
    )
    assert not failed, result.get("msg")
    assert result["stack"]["compute_capabilities"] == ["8.9"]


def test_bad_type_is_rejected_by_argument_spec(run_module: RunModule) -> None:
    failed, result = run_module(stack_resolve.main, {"want_tensorrt": "perhaps"})
    assert failed
    assert "want_tensorrt" in result["msg"]


def test_argument_spec_matches_resolver_keys() -> None:
    assert set(stack_resolve.ARGUMENT_SPEC) == set(REQUEST_KEYS)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        ({"driver_version": "banana"}, ["driver_version 'banana' is not a version"]),
        ({"cudnn": "banana"}, ["cudnn 'banana' is not a version"]),
        # YAML reads an unquoted 2.10 as the float 2.1; the module's str option keeps "2.1".
        ({"tensorflow": 2.1}, ["TensorFlow '2.1' is not in the matrix", "'2.10' in quotes"]),
        (
            {"gpus": ["x"], "overrides": {"gpus": [{"name": "x", "compute_capability": "8"}]}},
            ["overrides.gpus row 'x' has compute_capability: '8'"],
        ),
        (
            {"tensorflow": "f", "overrides": {"tensorflow": [{"version": "f", "based_on": "2.21", "python": "3.12"}]}},
            ["overrides.tensorflow row 'f' has python: '3.12'"],
        ),
    ],
)
def test_bad_values_fail_with_a_sentence(run_module: RunModule, args: Dict[str, Any], needles: List[str]) -> None:
    failed, result = run_module(stack_resolve.main, args)
    assert failed
    assert "exception" not in result
    for needle in needles:
        assert needle in result["msg"], result["msg"]
