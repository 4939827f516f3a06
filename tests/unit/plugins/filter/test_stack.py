"""Unit tests of the gpulab.dlstack.resolve_stack and stack_resolution filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.filter.stack import (
    FilterModule,
    resolve_stack_filter,
    stack_resolution_filter,
)
from ansible_collections.gpulab.dlstack.plugins.modules import stack_resolve

DOCS = Path(__file__).resolve().parents[4] / "plugins" / "filter" / "resolve_stack.yml"


def test_filter_is_registered() -> None:
    assert FilterModule().filters()["resolve_stack"] is resolve_stack_filter


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ({"tensorflow": "2.17"}, {"cuda": "12.3", "cudnn": "8.9.7"}),
        ({"tensorflow": "2.10", "gpus": ["8.6"]}, {"cuda": "11.2", "compute_capabilities": ["8.6"]}),
        ({"tensorflow": "2.21", "build_from_source": True}, {"hermetic_cuda": True}),
    ],
)
def test_filter_resolves(request_: Dict[str, Any], expected: Dict[str, Any]) -> None:
    stack = resolve_stack_filter(request_)
    for key, value in expected.items():
        assert stack[key] == value


def test_filter_overrides_argument_adds_to_request_overrides() -> None:
    request = {
        "tensorflow": "2.17+acme",
        "gpus": ["ACME X"],
        "overrides": {"gpus": [{"name": "ACME X", "compute_capability": "8.9"}]},
    }
    stack = resolve_stack_filter(request, overrides={"tensorflow": [{"version": "2.17+acme", "based_on": "2.17"}]})
    assert stack["tensorflow"] == "2.17+acme"
    assert stack["compute_capabilities"] == ["8.9"]


@pytest.mark.parametrize(
    ("request_", "needle"),
    [
        ({"tensorflow": "2.18", "want_tensorrt": True}, "TensorFlow 2.18 has no TF-TRT"),
        ({"tensorflow": "2.6", "cuda": "11.0", "gpus": ["8.6"]}, "sm_86; CUDA 11.0 cannot target it"),
    ],
)
def test_filter_fails_with_conflicts(request_: Dict[str, Any], needle: str) -> None:
    with pytest.raises(AnsibleFilterError, match="impossible") as info:
        resolve_stack_filter(request_)
    assert needle in str(info.value)


def test_filter_rejects_non_mapping() -> None:
    with pytest.raises(AnsibleFilterError, match="expects a mapping"):
        resolve_stack_filter("2.17")


def test_filter_docs_file_is_complete() -> None:
    docs = yaml.safe_load(DOCS.read_text())
    assert docs["DOCUMENTATION"]["name"] == "resolve_stack"
    assert docs["DOCUMENTATION"]["version_added"] == "0.1.0"
    assert "_input" in docs["DOCUMENTATION"]["options"]
    assert "resolve_stack" in docs["EXAMPLES"]
    assert docs["RETURN"]["_value"]["type"] == "dict"


# stack_resolution: what preflight resolves every host's stack with, in the task's own process. It must give what
# the stack_resolve module gives, for a possible and an impossible request alike.


@pytest.mark.parametrize(
    "request_",
    [
        {"tensorflow": "2.21", "os": "debian12", "cpu_only": True, "gpus": [], "cuda": None, "overrides": {}},
        {"tensorflow": "2.17", "gpus": ["9.0"], "python": "3.11", "want_xla": True},
        {"tensorflow": "2.18", "want_tensorrt": True},
        {"tensorflow": "2.6", "cuda": "11.0", "gpus": ["8.6"]},
        {"tensorflow": "2.17", "cuda": "v12"},
    ],
)
def test_stack_resolution_is_the_modules_result(run_module: Any, request_: Dict[str, Any]) -> None:
    failed, module = run_module(stack_resolve.main, {k: v for k, v in request_.items() if v is not None})
    result = stack_resolution_filter(request_)
    assert bool(result.get("failed")) is failed
    if failed:
        assert result["conflicts"] == module["conflicts"] and result["msg"] == module["msg"]
    else:
        assert result["stack"] == module["stack"]


def test_stack_resolution_is_registered_and_documented() -> None:
    assert FilterModule().filters()["stack_resolution"] is stack_resolution_filter
    docs = yaml.safe_load((DOCS.parent / "stack_resolution.yml").read_text())
    assert docs["DOCUMENTATION"]["name"] == "stack_resolution"
    with pytest.raises(AnsibleFilterError, match="stack_resolution expects a mapping"):
        stack_resolution_filter(["2.17"])
