"""daemon.json merges keep every value Docker accepted, exactly as written (#14)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Dict

import jinja2
import pytest
import yaml
from ansible.plugins.filter.core import b64decode, to_bool
from ansible_collections.gpulab.dlstack.plugins.filter.docker_daemon import docker_daemon_merge_filter
from ansible_collections.gpulab.dlstack.plugins.module_utils._jsonmerge import (
    docker_runtime_merge,
    dumps_exact,
    loads_exact,
)
from jinja2.nativetypes import NativeEnvironment

DOCKER_YML = Path(__file__).resolve().parents[4] / "roles" / "nvidia_container_toolkit" / "tasks" / "docker.yml"
ORIGINAL = (
    '{"max-concurrent-downloads": 3, "weird": 1e400, "ratio": 1.10, "big": 123456789012345678901234567890,\n'
    ' "log-opts": {"max-size": "10m"}, "runtimes": {"runc": {"path": "runc"}}}'
)


def test_numbers_survive_the_merge_as_written() -> None:
    result = docker_runtime_merge(ORIGINAL, "nvidia-container-runtime", False)
    assert result["error"] == "" and result["changed"] and not result["configured"]
    text = result["content"]
    assert '"weird": 1e400' in text and "Infinity" not in text
    assert '"ratio": 1.10' in text
    assert '"big": 123456789012345678901234567890' in text
    merged = json.loads(text)
    assert merged["runtimes"] == {"runc": {"path": "runc"}, "nvidia": {"path": "nvidia-container-runtime", "args": []}}
    assert merged["log-opts"] == {"max-size": "10m"}


def test_a_second_merge_changes_nothing() -> None:
    first = docker_runtime_merge(ORIGINAL, "nvidia-container-runtime", True)["content"]
    again = docker_runtime_merge(first, "nvidia-container-runtime", True)
    assert again["configured"] and not again["changed"] and again["content"] == first


def test_empty_file_gets_the_runtime() -> None:
    result = docker_runtime_merge("", "nvidia-container-runtime", True)
    assert json.loads(result["content"]) == {
        "default-runtime": "nvidia",
        "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}},
    }


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[1, 2]", "JSON list, not an object"),
        ("{", "not valid JSON"),
        ('{"a": NaN}', "NaN is not JSON"),
        ("null", "JSON NoneType"),
    ],
)
def test_what_is_not_an_object_is_refused(text: str, error: str) -> None:
    assert error in docker_runtime_merge(text, "x", False)["error"]


def test_round_trip_is_exact_for_nested_values() -> None:
    text = '{\n    "a": [\n        1e-7,\n        true,\n        null,\n        "\\u00e9"\n    ],\n    "b": {}\n}'
    assert dumps_exact(loads_exact(text)) == text.replace("\\u00e9", "é")


def test_the_filter_refuses_what_is_not_text() -> None:
    with pytest.raises(Exception, match=r"expects the text of daemon\.json"):
        docker_daemon_merge_filter({"a": 1}, "x")


def test_the_role_writes_what_the_merge_computed() -> None:
    """The role's tasks, templated as Ansible does: 1e400 in, 1e400 out (from_json/to_nice_json gave Infinity)."""
    tasks = yaml.safe_load(DOCKER_YML.read_text())
    parse = next(t for t in tasks if t["name"].startswith("Parse Docker's daemon.json"))
    write = next(t for t in tasks if t["name"].startswith("Merge the nvidia runtime into daemon.json"))
    variables: Dict[str, Any] = {
        "__nvidia_container_toolkit_daemon_raw": {"content": base64.b64encode(ORIGINAL.encode()).decode()},
        "nvidia_container_toolkit_runtime_path": "nvidia-container-runtime",
        "nvidia_container_toolkit_set_default_runtime": False,
    }
    env = NativeEnvironment()
    env.filters.update(
        {"b64decode": b64decode, "bool": to_bool, "gpulab.dlstack.docker_daemon_merge": docker_daemon_merge_filter}
    )
    for name, expr in parse["ansible.builtin.set_fact"].items():
        variables[name] = env.from_string(expr).render(**variables)
    content = jinja2.Environment().from_string(write["ansible.builtin.copy"]["content"]).render(**variables)
    assert '"weird": 1e400' in content and "Infinity" not in content
