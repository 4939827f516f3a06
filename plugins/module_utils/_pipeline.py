# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The provisioning pipeline: the one ordered stage list, the OS id, and which stages a host gets.

``playbooks/provision.yml`` imports the stages in this order (a unit test holds it to ``STAGES``),
``fleet_upgrade`` runs them through the ``gpulab.dlstack.stages`` lookup, and ``preflight`` decides per
host which of them apply with ``plan_stages`` (filter ``gpulab.dlstack.stage_plan``).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from ansible_collections.gpulab.dlstack.plugins.module_utils._resolve import normalize_os


class Stage(NamedTuple):
    """One stage: a role of the collection; ``nvidia`` stages run only for a GPU profile.

    ``default_on`` is the default of its ``dlstack_<stage>_enabled`` switch (opt-in stages have false).
    """

    name: str
    nvidia: bool
    stack_key: Optional[str]
    purpose: str
    default_on: bool = True


STAGES: Tuple[Stage, ...] = (
    Stage("preflight", False, None, "check the host and resolve its stack; changes nothing but the stack fact"),
    Stage("common", False, None, "directories, login environment, CA certificates"),
    Stage("nvidia_driver", True, "driver_min", "NVIDIA driver (userspace only in containers), pinned and held"),
    Stage("cuda_toolkit", True, "cuda", "the stack's CUDA toolkit as /usr/local/cuda-X.Y and /usr/local/cuda"),
    Stage("cudnn", True, "cudnn", "the stack's cuDNN for its CUDA major"),
    Stage("tensorrt", True, "tensorrt", "TensorRT, only when the stack has one (TF-TRT asked for, TensorFlow <= 2.17)"),
    Stage("nvidia_container_toolkit", True, None, "GPU access for Docker/containerd (daemon.json, CDI)"),
    Stage("python_env", False, "python", "Python environments; the default one hosts the stack"),
    Stage("tensorflow", False, "tensorflow", "TensorFlow for the stack: tensorflow[and-cuda] on GPU hosts, else CPU"),
    Stage(
        "env_modules",
        False,
        None,
        "environment modules (Lmod or environment-modules) for the toolkits, libraries and Python environments",
        default_on=False,
    ),
    Stage("verify", False, None, "measure the host against its GPU's spec and store the verdict"),
)

_NO_TENSORRT = "no TensorRT in the stack (set dlstack_want_tensorrt: true for TF-TRT, TensorFlow <= 2.17)"

STAGE_NAMES: Tuple[str, ...] = tuple(s.name for s in STAGES)


def os_id(facts: Mapping[str, Any]) -> str:
    """The matrix's OS id for a host's facts: 'debian12', 'ubuntu2204', 'rhel9' (EL rebuilds map to rhel).

    Ubuntu keeps year and month (22.04 -> 2204) because its releases are only unique that way; the others
    are named by their major version.
    """
    distribution = str(facts.get("distribution") or "").strip()
    if not distribution:
        raise ValueError("os_id needs the distribution fact; gather facts (gather_subset: min) first.")
    family = str(facts.get("os_family") or "")
    name = distribution.lower()
    if name == "ubuntu":
        version = str(facts.get("distribution_version") or "")
        digits = "".join(re.findall(r"\d+", version)[:2])
        return f"ubuntu{digits}"
    major = str(facts.get("distribution_major_version") or "")
    if family == "RedHat":
        return f"rhel{major}"
    return normalize_os(f"{name}{major}") or name


def _enabled(switches: Mapping[str, Any], name: str) -> bool:
    value = switches.get(name, next((s.default_on for s in STAGES if s.name == name), True))
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def plan_stages(
    stack: Optional[Mapping[str, Any]], gpu_profile: bool, switches: Optional[Mapping[str, Any]] = None
) -> List[Dict[str, Any]]:
    """Every stage in order with ``run`` (true or false) and the one-sentence reason.

    ``switches`` maps a stage name to its ``dlstack_<stage>_enabled`` value (missing means enabled). preflight
    always runs: switched off, it resolves nothing and reads the recorded stack back, which is still its stage.
    A stage keyed to a stack entry (cudnn, tensorrt) is skipped when the stack has none.
    """
    stack = stack or {}
    switches = switches or {}
    gpu_stack = bool(gpu_profile) and not stack.get("cpu_only", False) and bool(stack.get("cuda"))
    plan = []
    for stage in STAGES:
        run, reason = True, stage.purpose
        if stage.name != "preflight" and not _enabled(switches, stage.name):
            run, reason = False, f"dlstack_{stage.name}_enabled is false"
        elif stage.nvidia and not gpu_profile:
            run, reason = False, "CPU profile: no NVIDIA stage"
        elif stage.nvidia and not gpu_stack:
            run, reason = False, "the resolved stack is CPU-only: no NVIDIA stage"
        elif stage.name == "tensorrt" and not stack.get("tensorrt"):
            run, reason = False, _NO_TENSORRT
        elif stage.name == "cudnn" and not stack.get("cudnn"):
            run, reason = False, "no cuDNN in the stack"
        plan.append(
            {
                "stage": stage.name,
                "run": run,
                "reason": reason,
                "version": _version(stack, stage) if run else None,
            }
        )
    return plan


def _version(stack: Mapping[str, Any], stage: Stage) -> Optional[str]:
    if stage.stack_key is None:
        return None
    value = stack.get(stage.stack_key)
    if value is None or value == "":
        return None
    prefix = ">= " if stage.stack_key == "driver_min" else ""
    return f"{prefix}{value}"


def stages_to_run(plan: List[Mapping[str, Any]]) -> List[str]:
    """The names of the stages a plan runs, in pipeline order."""
    return [str(p["stage"]) for p in plan if p.get("run")]


def record_stages(
    plan: List[Mapping[str, Any]],
    previous: Optional[Mapping[str, Any]],
    ran: List[str],
    installed: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Dict[str, Any]]:
    """Stage states for the local fact after a run.

    ``previous`` is the stages mapping already on the host, ``ran`` the stages this run went through
    (the tag selection taken into account) and ``installed`` versions reported by the roles that ran.
    A stage this run did not reach keeps its recorded state unless its wanted version changed.
    """
    previous = previous or {}
    installed = installed or {}
    out: Dict[str, Dict[str, Any]] = {}
    for item in plan:
        name = str(item["stage"])
        before = dict(previous.get(name) or {})
        wanted = item.get("version")
        if not item.get("run"):
            out[name] = {"state": "skipped", "reason": item.get("reason"), "wanted": None, "installed": None}
            continue
        if name in ran:
            found = installed.get(name)
            out[name] = {
                "state": "done",
                "reason": item.get("reason"),
                "wanted": wanted,
                "installed": str(found) if found not in (None, "") else before.get("installed"),
            }
        elif before.get("state") == "done" and before.get("wanted") == wanted:
            out[name] = before
        else:
            out[name] = {"state": "pending", "reason": item.get("reason"), "wanted": wanted, "installed": None}
    return out


def stages_ran(plan: List[Mapping[str, Any]], run_tags: List[str], skip_tags: List[str]) -> List[str]:
    """The planned stages that a run with these --tags/--skip-tags went through (a stage's tag is its name)."""
    wanted = set(run_tags or ["all"])
    skipped = set(skip_tags or [])
    names = stages_to_run(plan)
    return [n for n in names if ("all" in wanted or n in wanted) and n not in skipped]
