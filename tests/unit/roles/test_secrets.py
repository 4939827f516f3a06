"""Proxy credentials stay out of logs and world-readable files (#14).

A proxy URL may carry user:pass@. Every task that hands a proxy to a tool hides its result (no_log) when the URL
carries credentials, decided by the one filter gpulab.dlstack.carries_credentials; a file that holds them (the conda
.condarc with proxy_servers) is root's alone.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROLES = Path(__file__).resolve().parents[3] / "roles"
FILTER = "gpulab.dlstack.carries_credentials"
# The environments handed to tools: each role's __<role>_proxy_env, and what callers give common's shared task files.
PROXY_VAR = re.compile(r"(__\w+_proxy_env|common_(?:pip|keyring)_environment)")
CASES = (
    ("http://user:secret@proxy:3128", True),
    ("http://user%3Asecret%40proxy:3128", True),
    ("http://proxy:3128", False),
    ("http://proxy:3128/path@x", False),
    ("", False),
)


def _tasks(items: Any) -> Iterator[Dict[str, Any]]:
    for task in items or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _proxy_tasks() -> List[Tuple[str, Dict[str, Any]]]:
    found = []
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text())):
            if PROXY_VAR.search(str(task.get("environment", ""))):
                found.append((f"{path.relative_to(ROLES)}: {task.get('name')}", task))
    return found


def test_the_roles_hand_proxies_to_tools() -> None:
    assert len(_proxy_tasks()) > 30


@pytest.mark.parametrize(("where", "task"), _proxy_tasks(), ids=[w for w, _task in _proxy_tasks()])
def test_every_task_with_a_proxy_hides_its_result_when_the_proxy_has_credentials(
    where: str, task: Dict[str, Any]
) -> None:
    var = PROXY_VAR.search(str(task["environment"])).group(1)  # type: ignore[union-attr]
    assert "no_log" in task, where
    assert re.fullmatch(rf"{{{{ {var}( \| default\(\{{\}}\))? \| {FILTER} }}}}", task["no_log"]), (
        f"{where}: no_log must be {{{{ {var} | {FILTER} }}}}, not {task['no_log']}"
    )
    templar = Templar(loader=DataLoader())
    for proxy, hidden in CASES:
        templar.available_variables = {var: {"https_proxy": proxy} if proxy else {}}
        assert templar.template(trust_as_template(task["no_log"])) is hidden, (where, proxy)


def test_common_task_files_hide_what_their_callers_hand_them() -> None:
    wheres = [where for where, _task in _proxy_tasks()]
    assert any(w.startswith("common/tasks/pip_target.yml") for w in wheres)
    assert sum(w.startswith("common/tasks/keyring.yml") for w in wheres) == 2


def test_no_role_decides_by_hand_whether_a_proxy_carries_credentials() -> None:
    pasted = [
        str(path.relative_to(ROLES))
        for path in sorted(ROLES.rglob("*.yml"))
        if re.search(r"select\(\s*'(search|match)'\s*,\s*'@'", path.read_text())
    ]
    assert pasted == [], f"use {FILTER}"


def test_condarc_with_proxy_credentials_is_root_only() -> None:
    tasks = list(_tasks(yaml.safe_load((ROLES / "python_env" / "tasks" / "conda.yml").read_text())))
    task = next(t for t in tasks if t.get("ansible.builtin.template", {}).get("src") == "condarc.j2")
    templar = Templar(loader=DataLoader())
    mode = task["ansible.builtin.template"]["mode"]
    assert FILTER in mode
    for proxy, hidden in CASES:
        templar.available_variables = {"__python_env_proxy_env": {"https_proxy": proxy} if proxy else {}}
        assert templar.template(trust_as_template(mode)) == ("0600" if hidden else "0644"), proxy
    assert "no_log" in task
