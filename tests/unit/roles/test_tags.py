"""Tags select what they name.

`ansible-playbook --list-tasks` lists provision.yml's tasks with their tags, and for every tag the playbook
declares (`--list-tags`), the tasks `--tags TAG` selects must hold at least one task of the role the tag names
(`preflight_gpu` -> a preflight task carrying that tag). `--list-tasks` does not open dynamic
includes, so a tag that sits on an include_tasks/include_role must also be applied to the included tasks
(`apply: {tags: ...}`); without it `--tags preflight_gpu` runs the include and skips every task in it. The second
test holds every tagged include in roles/ and playbooks/ to that.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
TASK_LINE = re.compile(r"^\s+(?:(?P<role>[\w.]+) : )?(?P<name>.*?)\tTAGS: \[(?P<tags>[^\]]*)\]$")
INCLUDES = {"include_tasks", "include_role", "ansible.builtin.include_tasks", "ansible.builtin.include_role"}


def _playbook(*args: str) -> str:
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
            "ANSIBLE_CACHE_PLUGIN": "memory",
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", *args, "provision.yml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _tasks(output: str) -> list[tuple[str, str, set[str]]]:
    tasks = []
    for line in output.splitlines():
        match = TASK_LINE.match(line)
        if match and "TASK TAGS" not in line and not match.group("name").startswith("play #"):
            role = (match.group("role") or "").rsplit(".", 1)[-1]
            tags = {t.strip() for t in match.group("tags").split(",") if t.strip()}
            tasks.append((role, match.group("name"), tags))
    return tasks


@cache
def _all_tasks() -> list[tuple[str, str, set[str]]]:
    return _tasks(_playbook("--list-tasks"))


@cache
def _declared_tags() -> list[str]:
    output = _playbook("--list-tags")
    tags: set[str] = set()
    for found in re.findall(r"TAGS: \[([^\]]*)\]", output):
        tags |= {t.strip() for t in found.split(",") if t.strip()}
    return sorted(tags - {"always", "never"})


def _named_role(tag: str, roles: set[str]) -> str:
    return max((r for r in roles if tag == r or tag.startswith(r + "_")), key=len, default="")


def test_every_tag_selects_a_task_of_what_it_names() -> None:
    tasks = _all_tasks()
    roles = {role for role, _name, _tags in tasks if role}
    assert len(_declared_tags()) > 40
    empty = {}
    for tag in _declared_tags():
        role = _named_role(tag, roles)
        own = [
            name
            for r, name, tags in tasks
            if tag in tags and (r == role or not role) and not name.startswith("Validating")
        ]
        if not own:
            empty[tag] = role or "(no role of that name)"
    assert empty == {}, "these tags select no task of their own"


def test_the_selection_model_matches_ansible_playbook() -> None:
    """`--tags preflight_gpu` lists exactly the tasks tagged preflight_gpu or always, as the first test assumes."""
    listed = {(role, name) for role, name, _tags in _tasks(_playbook("--list-tasks", "--tags", "preflight_gpu"))}
    expected = {(role, name) for role, name, tags in _all_tasks() if tags & {"preflight_gpu", "always"}}
    assert listed == expected
    assert any(role == "preflight" and "GPU" in name for role, name in listed)


def _task_lists(node: object):
    if isinstance(node, list):
        for item in node:
            if isinstance(item, dict):
                yield item
                for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
                    yield from _task_lists(item.get(key))


def _yaml_files() -> list[Path]:
    return sorted(
        p
        for folder in ("roles", "playbooks")
        for p in (ROOT / folder).rglob("*.yml")
        if "tasks" in p.parts or "handlers" in p.parts or folder == "playbooks"
    )


@pytest.mark.parametrize("path", _yaml_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_tagged_includes_apply_their_tags(path: Path) -> None:
    missing = []
    for task in _task_lists(yaml.safe_load(path.read_text())):
        key = next((k for k in task if k in INCLUDES), None)
        tags = task.get("tags")
        if key is None or not tags:
            continue
        tags = [tags] if isinstance(tags, str) else list(tags)
        args = task[key] if isinstance(task[key], dict) else {}
        applied = (args.get("apply") or {}).get("tags") or []
        applied = [applied] if isinstance(applied, str) else list(applied)
        if not set(tags) <= set(applied):
            missing.append(f"{task.get('name')}: tags {tags}, apply tags {applied}")
    assert missing == [], "add apply: {tags: [...]} (or use import_tasks) so the tags reach the included tasks"
