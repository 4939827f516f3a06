"""Render the tensorflow_build role's build.sh.j2 and check that no plan value can become shell code.

The module refuses such values first (test_bad_input.py); these tests check the second line of defence:
the template quotes every exported name and value, so even a plan built elsewhere cannot inject a command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict

import jinja2
import pytest
from ansible.plugins.filter.core import quote, to_bool
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import resolve_stack
from ansible_collections.gpulab.dlstack.plugins.module_utils._tfbuild import build_plan

TEMPLATES = Path(__file__).resolve().parents[3] / "roles" / "tensorflow_build" / "templates"


def render(plan: Dict[str, Any]) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
    )
    env.filters.update(quote=quote, bool=to_bool, dirname=os.path.dirname)
    return env.get_template("build.sh.j2").render(
        ansible_managed="Ansible managed",
        __tensorflow_build_release="2.17",
        __tensorflow_build_plan=plan,
        __tensorflow_build_log="/tmp/build.log",
        __tensorflow_build_rc_file="/tmp/build.rc",
        __tensorflow_build_src="/tmp/src",
        tensorflow_build_dir="/tmp/tfbuild",
        tensorflow_build_shutdown_server=False,
    )


@pytest.fixture
def plan() -> Dict[str, Any]:
    stack = resolve_stack({"tensorflow": "2.17", "os": "debian12", "gpus": ["8.0", "9.0"], "build_from_source": True})
    return build_plan(stack, {"cores": 8, "memory_mb": 65536}, {"extra_env": {"TF_EXTRA": "a b; $(touch x)"}})


def exports(script: str) -> str:
    return "\n".join(line for line in script.splitlines() if line.startswith("export "))


def test_names_and_values_are_quoted(plan: Dict[str, Any]) -> None:
    lines = exports(render(plan)).splitlines()
    assert "export TF_NEED_CUDA=1" in lines
    assert "export TF_EXTRA='a b; $(touch x)'" in lines


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_a_hostile_name_that_bypassed_the_module_runs_nothing(plan: Dict[str, Any], tmp_path: Path) -> None:
    plan["env"] = {"A;touch pwned;B": "1", "TF_EXTRA": "$(touch pwned2)"}
    script = exports(render(plan))
    assert "export 'A;touch pwned;B'=1" in script
    run = subprocess.run(["bash", "-ec", script], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode != 0 and "not a valid identifier" in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_bare_bazel_name_leaves_path_alone(plan: Dict[str, Any]) -> None:
    plan["bazel"]["argv"] = ["bazel", *plan["bazel"]["argv"][1:]]
    script = render(plan)
    assert "export PATH=''" not in script
    assert not [line for line in script.splitlines() if line.startswith("export PATH=")]


def test_a_bazel_path_puts_its_directory_first(plan: Dict[str, Any]) -> None:
    plan["bazel"]["argv"] = ["/opt/dlstack/bazel/6.5.0/bin/bazel", *plan["bazel"]["argv"][1:]]
    assert 'export PATH=/opt/dlstack/bazel/6.5.0/bin:"$PATH"' in render(plan).splitlines()
