"""The provisioning pipeline: one ordered stage list, the per-host plan, the recorded states and the OS id.

The stage list is the one source for playbooks/provision.yml, the fleet_upgrade role and the README; these tests
fail when any of them diverges from it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from ansible import constants as C
from ansible_collections.gpulab.dlstack.plugins.filter import pipeline as pipeline_filters
from ansible_collections.gpulab.dlstack.plugins.lookup import stages as stages_plugin
from ansible_collections.gpulab.dlstack.plugins.module_utils._matrix import OPERATING_SYSTEMS
from ansible_collections.gpulab.dlstack.plugins.module_utils._pipeline import (
    STAGE_NAMES,
    STAGES,
    os_id,
    plan_stages,
    record_stages,
    stages_ran,
    stages_to_run,
)
from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import resolve_stack

ROOT = Path(__file__).resolve().parents[4]
NVIDIA = ["nvidia_driver", "cuda_toolkit", "cudnn", "tensorrt", "nvidia_container_toolkit"]


def _yaml(rel: str) -> Any:
    return yaml.safe_load((ROOT / rel).read_text())


def _stages_lookup(**kwargs: Any) -> List[str]:
    name = "gpulab.dlstack.stages"
    C.config.initialize_plugin_configuration_definitions(
        "lookup", name, yaml.safe_load(stages_plugin.DOCUMENTATION)["options"]
    )
    plugin = stages_plugin.LookupModule()
    plugin._load_name = name
    return plugin.run([], {}, **kwargs)


def test_the_pipeline_order() -> None:
    assert STAGE_NAMES == (
        "preflight",
        "common",
        "nvidia_driver",
        "cuda_toolkit",
        "cudnn",
        "tensorrt",
        "nvidia_container_toolkit",
        "python_env",
        "tensorflow",
        "env_modules",
        "verify",
    )
    assert [s.name for s in STAGES if s.nvidia] == NVIDIA
    assert [s.name for s in STAGES if not s.default_on] == ["env_modules"]


def test_every_stage_is_a_role_with_a_switch_documented_by_preflight() -> None:
    options = _yaml("roles/preflight/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    defaults = _yaml("roles/preflight/defaults/main.yml")
    for stage in STAGES:
        name = stage.name
        assert (ROOT / "roles" / name / "tasks" / "main.yml").exists(), name
        assert options[f"dlstack_{name}_enabled"]["default"] is stage.default_on, name
        assert defaults[f"dlstack_{name}_enabled"] is stage.default_on, name


def test_provision_playbook_imports_exactly_the_stage_list() -> None:
    """provision.yml: the stages in order, each tagged with its name and gated on preflight's plan."""
    plays = _yaml("playbooks/provision.yml")
    roles = plays[0]["roles"]
    names = [r["role"].split(".")[-1] for r in roles]
    verify_play = _yaml("playbooks/verify.yml")[0]["roles"][0]
    assert plays[1]["ansible.builtin.import_playbook"] == "verify.yml"
    assert [*names, verify_play["role"].split(".")[-1]] == list(STAGE_NAMES)
    for role, name in zip(roles, names):
        assert role["tags"] == [name]
        if name != "preflight":
            assert role["when"] == f"'{name}' in dlstack_stages"
    assert "dlstack_stages" in verify_play["when"]


def test_upgrade_runs_the_same_list_as_provision() -> None:
    """fleet_upgrade's default stages come from the stages lookup, so they cannot diverge from provision.yml."""
    default = _yaml("roles/fleet_upgrade/defaults/main.yml")["fleet_upgrade_stages"]
    assert default == "{{ query('gpulab.dlstack.stages', qualified=true, exclude=['verify']) }}"
    upgrade = _stages_lookup(qualified=True, exclude=["verify"])
    provision = [r["role"] for r in _yaml("playbooks/provision.yml")[0]["roles"]]
    assert upgrade == provision
    gate = (ROOT / "roles/fleet_upgrade/tasks/stage.yml").read_text()
    assert "dlstack_stages" in gate


def test_stages_lookup_plain_names() -> None:
    assert _stages_lookup() == list(STAGE_NAMES)
    assert _stages_lookup(exclude=["preflight", "verify"]) == list(STAGE_NAMES[1:-1])


def test_readme_lists_what_runs_in_order() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("## What `provision.yml` runs", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| \d+ \| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert rows == list(STAGE_NAMES)


def _plan(stack: Dict[str, Any], gpu: bool, **switches: Any) -> Dict[str, Dict[str, Any]]:
    return {p["stage"]: p for p in plan_stages(stack, gpu, switches)}


GPU_STACK = resolve_stack({"tensorflow": "2.21", "gpus": ["10de:2330"], "os": "debian12"})
CPU_STACK = resolve_stack({"tensorflow": "2.21", "cpu_only": True, "os": "debian12"})
TRT_STACK = resolve_stack({"tensorflow": "2.17", "gpus": ["8.6"], "want_tensorrt": True, "os": "debian12"})


def test_cpu_profile_gets_no_nvidia_stage() -> None:
    plan = _plan(CPU_STACK, False)
    assert stages_to_run(list(plan.values())) == ["preflight", "common", "python_env", "tensorflow", "verify"]
    for name in NVIDIA:
        assert plan[name]["reason"] == "CPU profile: no NVIDIA stage"
        assert plan[name]["version"] is None


def test_gpu_profile_gets_the_nvidia_stages_its_stack_needs() -> None:
    plan = _plan(GPU_STACK, True)
    assert [n for n in NVIDIA if plan[n]["run"]] == [
        "nvidia_driver",
        "cuda_toolkit",
        "cudnn",
        "nvidia_container_toolkit",
    ]
    assert plan["cuda_toolkit"]["version"] == "12.5"
    assert plan["cudnn"]["version"] == "9.3.0"
    assert plan["nvidia_driver"]["version"] == ">= 555.42.02"
    assert "dlstack_want_tensorrt" in plan["tensorrt"]["reason"]


def test_tensorrt_only_when_wanted() -> None:
    plan = _plan(TRT_STACK, True)
    assert plan["tensorrt"]["run"] is True
    assert plan["tensorrt"]["version"] == TRT_STACK["tensorrt"]


def test_gpu_profile_with_a_cpu_only_stack_gets_no_nvidia_stage() -> None:
    plan = _plan(CPU_STACK, True)
    assert not any(plan[n]["run"] for n in NVIDIA)
    assert plan["cuda_toolkit"]["reason"] == "the resolved stack is CPU-only: no NVIDIA stage"


@pytest.mark.parametrize("value", [False, "false", "no", 0])
def test_switch_turns_a_stage_off(value: Any) -> None:
    plan = _plan(GPU_STACK, True, cudnn=value, verify=value)
    assert plan["cudnn"] == {
        "stage": "cudnn",
        "run": False,
        "reason": "dlstack_cudnn_enabled is false",
        "version": None,
    }
    assert plan["verify"]["run"] is False
    assert plan["cuda_toolkit"]["run"] is True


def test_stages_ran_follows_the_tag_selection() -> None:
    plan = plan_stages(GPU_STACK, True)
    assert stages_ran(plan, ["all"], []) == stages_to_run(plan)
    assert stages_ran(plan, ["cuda_toolkit", "tensorrt"], []) == ["cuda_toolkit"]
    assert stages_ran(plan, ["all"], ["tensorflow"]) == [n for n in stages_to_run(plan) if n != "tensorflow"]


def test_record_keeps_states_the_run_did_not_reach() -> None:
    plan = plan_stages(GPU_STACK, True)
    first = record_stages(plan, {}, stages_to_run(plan), {"cuda_toolkit": "12.5", "tensorflow": "2.21.0"})
    assert first["cuda_toolkit"] == {
        "state": "done",
        "reason": plan[3]["reason"],
        "wanted": "12.5",
        "installed": "12.5",
    }
    assert first["tensorrt"]["state"] == "skipped"
    # A --tags tensorflow run: the other stages keep what was recorded.
    second = record_stages(plan, first, ["tensorflow"], {"tensorflow": "2.21.0"})
    assert second == first
    # Preflight's own write (nothing ran yet) changes nothing on a provisioned host.
    assert record_stages(plan, first, []) == first
    # A new CUDA in the stack makes the toolkit stage pending until it runs again.
    newer = [dict(p, version="12.6") if p["stage"] == "cuda_toolkit" else p for p in plan]
    assert record_stages(newer, first, [])["cuda_toolkit"]["state"] == "pending"
    # Nothing reported by the role: the installed version recorded before stays.
    assert record_stages(plan, first, ["cuda_toolkit"])["cuda_toolkit"]["installed"] == "12.5"


FACTS = {
    "debian12": {
        "distribution": "Debian",
        "distribution_version": "12.8",
        "distribution_major_version": "12",
        "os_family": "Debian",
    },
    "debian13": {
        "distribution": "Debian",
        "distribution_version": "13.1",
        "distribution_major_version": "13",
        "os_family": "Debian",
    },
    "ubuntu2204": {
        "distribution": "Ubuntu",
        "distribution_version": "22.04",
        "distribution_major_version": "22",
        "os_family": "Debian",
    },
    "ubuntu2404": {
        "distribution": "Ubuntu",
        "distribution_version": "24.04",
        "distribution_major_version": "24",
        "os_family": "Debian",
    },
    "rhel9": {
        "distribution": "Rocky",
        "distribution_version": "9.4",
        "distribution_major_version": "9",
        "os_family": "RedHat",
    },
}


@pytest.mark.parametrize(("expected", "facts"), sorted(FACTS.items()))
def test_os_id(expected: str, facts: Dict[str, str]) -> None:
    assert os_id(facts) == expected
    assert pipeline_filters.os_id_filter(facts) == expected


def test_os_ids_are_the_matrix_ids() -> None:
    """Every OS row of the compatibility matrix is reachable from some host's facts (no 'ubuntu22')."""
    assert sorted(FACTS) == sorted(row["id"] for row in OPERATING_SYSTEMS)


def test_no_role_computes_its_own_os_id() -> None:
    pattern = re.compile(r"distribution'\]\s*\|\s*lower\s*}}\s*{{\s*ansible_facts\['distribution_major_version")
    offenders = [
        str(p.relative_to(ROOT))
        for p in list((ROOT / "roles").rglob("*.yml")) + list((ROOT / "plugins").rglob("*.py"))
        if pattern.search(p.read_text())
    ]
    assert offenders == []


def test_os_id_needs_facts() -> None:
    with pytest.raises(ValueError, match="gather facts"):
        os_id({})
    with pytest.raises(pipeline_filters.AnsibleFilterError):
        pipeline_filters.os_id_filter("debian12")  # type: ignore[arg-type]


def test_filters_are_registered() -> None:
    filters = pipeline_filters.FilterModule().filters()
    assert set(filters) == {"os_id", "stage_plan", "stage_record"}
    plan = filters["stage_plan"](GPU_STACK, True, {"tensorrt": False})
    recorded = filters["stage_record"](plan, {}, ["all"], [], {"tensorflow": "2.21.0"})
    assert recorded["tensorflow"]["installed"] == "2.21.0"
    assert recorded["tensorrt"]["reason"] == "dlstack_tensorrt_enabled is false"
    with pytest.raises(pipeline_filters.AnsibleFilterError):
        filters["stage_plan"]("2.21", True)
