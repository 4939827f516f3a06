"""Target id of a fleet upgrade (a hash of every input) and the holds an upgrade releases."""

from __future__ import annotations

from typing import Any, Dict

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.filter.upgrade import FilterModule
from ansible_collections.gpulab.dlstack.plugins.module_utils._upgrade import hold_changes, stack_label, target_id

STACK = {"tensorflow": "2.17", "python": "3.11", "cuda": "12.3", "cudnn": "8.9", "tensorrt": None, "driver_min": "525"}


def inputs(**changes: Any) -> Dict[str, Any]:
    base: Dict[str, Any] = {
        "stack": dict(STACK),
        "stages": ["gpulab.dlstack.common", "gpulab.dlstack.nvidia_driver"],
        "packages": {},
        "vars": {
            "nvidia_driver_branch": "550",
            "nvidia_driver_version": "550.127.05",
            "nvidia_container_toolkit_version": "1.17.8-1",
            "python_env_environments": [{"name": "default", "packages": ["numpy==2.1.3"]}],
        },
    }
    for key, value in changes.items():
        if key in base:
            base[key] = value
        else:
            base["vars"] = {**base["vars"], key: value}
    return base


def test_the_id_is_the_stack_label_and_a_digest() -> None:
    tid = target_id(inputs())
    label, digest = tid.rsplit("-", 1)
    assert label == "tf2.17-py3.11-cuda12.3-cudnn8.9-trtnone"
    assert len(digest) == 12 and int(digest, 16) >= 0


@pytest.mark.parametrize(
    "change",
    [
        {"nvidia_driver_version": "550.135"},  # a driver-only change within the branch
        {"nvidia_driver_branch": "560"},
        {"nvidia_container_toolkit_version": "1.17.9-1"},
        {"python_env_environments": [{"name": "default", "packages": ["numpy==2.1.4"]}]},
        {"packages": {"dlstack-test-driver": "2.0"}},
        {"stages": ["gpulab.dlstack.common"]},
        {"stack": {**STACK, "cudnn": "9.1"}},
    ],
    ids=["driver-version", "driver-branch", "toolkit", "env-spec", "package", "stages", "stack"],
)
def test_any_changed_input_is_a_new_target(change: Dict[str, Any]) -> None:
    assert target_id(inputs(**change)) != target_id(inputs())


def test_a_driver_only_change_keeps_the_label_but_not_the_id() -> None:
    before, after = target_id(inputs()), target_id(inputs(nvidia_driver_version="550.135"))
    assert before.rsplit("-", 1)[0] == after.rsplit("-", 1)[0]
    assert before != after


def test_the_id_does_not_depend_on_key_order_or_number_types() -> None:
    a = inputs()
    b = {"vars": dict(reversed(list(a["vars"].items()))), "packages": {}, "stages": a["stages"], "stack": a["stack"]}
    assert target_id(a) == target_id(b)
    assert target_id({"vars": {"x": 1}}) == target_id({"vars": {"x": "1"}})
    assert target_id({"vars": {"x": True}}) != target_id({"vars": {"x": "True"}})


def test_a_given_label_is_kept_readable_and_safe() -> None:
    tid = target_id(inputs(), "stack 2/new")
    assert tid.startswith("stack_2_new-")
    assert target_id({"vars": {}}, "") == target_id({"vars": {}})
    assert stack_label(None) == ""


def test_the_filter_refuses_a_non_mapping() -> None:
    flt = FilterModule().filters()["upgrade_target_id"]
    with pytest.raises(AnsibleFilterError, match="upgrade_target_id expects the upgrade inputs"):
        flt(["not", "a", "mapping"])
    assert flt(inputs(), "stack-2").startswith("stack-2-")


def test_holds_released_are_exactly_the_held_packages_that_change() -> None:
    held = ["dlstack-test-driver", "dlstack-test-utils", "other-held"]
    installed = {"dlstack-test-driver": "1.0", "dlstack-test-utils": "1.0", "other-held": "3.0", "free": "1.0"}
    wanted = {"dlstack-test-driver": "2.0", "dlstack-test-utils": "1.0", "dlstack-test-new": "2.0"}
    plan = hold_changes(held, installed, wanted)
    assert plan == {
        "release": ["dlstack-test-driver"],
        "install": ["dlstack-test-new"],
        "keep": ["dlstack-test-utils", "other-held"],
    }


def test_hold_changes_filter_checks_its_arguments() -> None:
    flt = FilterModule().filters()["hold_changes"]
    with pytest.raises(AnsibleFilterError, match="hold_changes expects"):
        flt([], [], {})
    assert flt(None, {}, {}) == {"release": [], "install": [], "keep": []}


@pytest.mark.parametrize(
    ("text", "error"),
    [('{"state": "verified"', "not JSON"), ("[1, 2]", "not a JSON object but list"), ("\x00\x01garbage", "not JSON")],
)
def test_a_corrupted_progress_record_reads_as_none_with_the_reason(text: str, error: str) -> None:
    parsed = FilterModule().filters()["progress_record"](text)
    assert parsed["record"] == {}
    assert parsed["error"].startswith(error)


def test_a_progress_record_reads_back() -> None:
    flt = FilterModule().filters()["progress_record"]
    assert flt('{"state": "verified", "current": "x"}') == {
        "record": {"state": "verified", "current": "x"},
        "error": "",
    }
    assert flt("") == {"record": {}, "error": ""}
    assert flt(None) == {"record": {}, "error": ""}
