"""Proxy credentials stay out of logs and world-readable files (#14).

A proxy URL may carry user:pass@. Every task that hands a proxy to a tool hides its result (no_log) when the URL
carries credentials; a file that holds them (the conda .condarc with proxy_servers) is root's alone.
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
            if re.search(r"__\w+_proxy_env", str(task.get("environment", ""))):
                found.append((f"{path.relative_to(ROLES)}: {task.get('name')}", task))
    return found


def test_the_roles_hand_proxies_to_tools() -> None:
    assert len(_proxy_tasks()) > 30


@pytest.mark.parametrize(("where", "task"), _proxy_tasks(), ids=[w for w, _task in _proxy_tasks()])
def test_every_task_with_a_proxy_hides_its_result_when_the_proxy_has_credentials(
    where: str, task: Dict[str, Any]
) -> None:
    var = re.search(r"(__\w+_proxy_env)", str(task["environment"])).group(1)  # type: ignore[union-attr]
    assert "no_log" in task, where
    templar = Templar(loader=DataLoader())
    for proxy, hidden in (("http://user:secret@proxy:3128", True), ("http://proxy:3128", False), ("", False)):
        templar.available_variables = {var: {"https_proxy": proxy} if proxy else {}}
        assert templar.template(trust_as_template(task["no_log"])) is hidden, (where, proxy)


def test_condarc_with_proxy_credentials_is_root_only() -> None:
    tasks = list(_tasks(yaml.safe_load((ROLES / "python_env" / "tasks" / "conda.yml").read_text())))
    task = next(t for t in tasks if t.get("ansible.builtin.template", {}).get("src") == "condarc.j2")
    templar = Templar(loader=DataLoader())
    mode = task["ansible.builtin.template"]["mode"]
    templar.available_variables = {"__python_env_proxy_env": {"https_proxy": "http://u:p@proxy:3128"}}
    assert templar.template(trust_as_template(mode)) == "0600"
    templar.available_variables = {"__python_env_proxy_env": {}}
    assert templar.template(trust_as_template(mode)) == "0644"
    assert "no_log" in task
