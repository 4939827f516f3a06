"""The shared input checks: each bad value gives one sentence with the value and the fix, good values none."""

from __future__ import annotations

import math
from typing import Any, List

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _validate
from ansible_collections.gpulab.dlstack.plugins.module_utils._tfbuild import BuildPlanError, build_plan, input_problems
from ansible_collections.gpulab.dlstack.plugins.module_utils._validate import Range

SECONDS = Range(0, 86400, "seconds", low_open=True)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (60, []),
        (0.5, []),
        (86400, []),
        (None, []),
        (True, ["t=true is a boolean, not a number; set it to a number above 0 and at most 86400 (seconds)."]),
        ("60", ["t='60' is a string, not a number; set it to a number above 0 and at most 86400 (seconds)."]),
        (math.nan, ["t=nan is not a finite number; set it to a number above 0 and at most 86400 (seconds)."]),
        (-math.inf, ["t=-inf is not a finite number; set it to a number above 0 and at most 86400 (seconds)."]),
        (0, ["t=0 is out of range; set it to a number above 0 and at most 86400 (seconds)."]),
        (86401, ["t=86401 is out of range; set it to a number above 0 and at most 86400 (seconds)."]),
    ],
)
def test_number(value: Any, expected: List[str]) -> None:
    assert _validate.number("t", value, SECONDS) == expected


@pytest.mark.parametrize(
    ("hosts", "count"),
    [(["h1", "h2"], 0), (["gpu-01.example"], 0), ([], 1), (["h1", "h1"], 1), (["..", "/etc", " h1", ""], 4)],
)
def test_host_names(hosts: List[str], count: int) -> None:
    assert len(_validate.host_names("hosts", hosts)) == count


@pytest.mark.parametrize(
    ("stamp", "ok"),
    [(None, True), ("20261130T090000Z", True), ("20261130T090000", False), ("20260230T090000Z", False)],
)
def test_timestamp(stamp: Any, ok: bool) -> None:
    assert (_validate.timestamp("timestamp", stamp) == []) is ok


def test_env_names() -> None:
    assert _validate.env_names("e", {"TF_NEED_CUDA": "1", "_X1": 2, "FLAG": True}) == []
    found = _validate.env_names("e", {"A-B": "1", "X": None, "Y": "a\rb"})
    assert [p.split(" ", 2)[:2] for p in found] == [["e", "key"], ["e.X", "is"], ["e.Y='a\\rb'", "spans"]]


def test_record_shapes() -> None:
    assert _validate.host_record("f", {"host": "h1", "verdict": "warn", "figures": {"a": 1}}, "h1") == []
    assert _validate.host_record("f", {"host": "h1", "verdict": "pass", "flags": "slow"}, "h1") == [
        "f has flags that are a string, not a list"
    ]
    assert _validate.host_record("f", {"host": "h1", "verdict": "pass", "figures": {"a": math.inf}}, "h1") == [
        "f has figures that are not finite numbers (a)"
    ]


def test_summary_numbers_several_problems() -> None:
    assert _validate.summary(["One.", "Two."]) == "2 problems with the input: (1) One. (2) Two."
    assert _validate.summary(["One."]) == "One."


def test_tfbuild_input_problems_list_every_problem() -> None:
    found = input_problems({"build": {"env": {}}}, {"cores": -4, "memory_mb": 0}, {"jobs": -3, "extra_env": {"A B": 1}})
    assert [p.split("=", maxsplit=1)[0].split(" ", maxsplit=1)[0] for p in found] == [
        "cores",
        "memory_mb",
        "jobs",
        "extra_env",
    ]


def test_build_plan_refuses_before_reading_the_stack() -> None:
    with pytest.raises(BuildPlanError) as err:
        build_plan({"build": "x"}, {"cores": 4, "memory_mb": 8192})
    assert err.value.problems[0].startswith("stack.build is a string, not a dict;")
