"""galaxy.yml's dependencies (and the execution environment's collections) are exactly the collections the content
names: every module, plugin or callback referenced by its fully qualified name in roles/, playbooks/, plugins/ and
ansible.cfg must come from ansible-core, this collection or a declared dependency, and nothing is declared unused.

A name counts as a collection reference when its first two parts name a collection the installed Ansible package
carries (so ``item.stat.exists`` is not one); tests/unit/packaging has a case that shows an undeclared module fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import ansible_collections
import yaml

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("roles", "playbooks", "plugins")
ALWAYS_THERE = {"ansible.builtin", "ansible.legacy", "gpulab.dlstack"}
FQCN = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)(?![\w])")


def _known_collections() -> set[str]:
    found: set[str] = set()
    for base in ansible_collections.__path__:
        for path in Path(base).glob("*/*/MANIFEST.json"):
            found.add(f"{path.parent.parent.name}.{path.parent.name}")
    return found | ALWAYS_THERE


def _content_files() -> list[Path]:
    files = [ROOT / "ansible.cfg", ROOT / "provision.yml"]
    for folder in SCANNED:
        files += [p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in {".yml", ".yaml", ".py", ".j2"}]
    return files


def used_collections(texts: dict[str, str], known: set[str]) -> dict[str, set[str]]:
    """Collections referenced by fully qualified names in the given texts, each with the files that name it."""
    used: dict[str, set[str]] = {}
    for name, text in texts.items():
        for match in FQCN.finditer(text):
            collection = f"{match.group(1)}.{match.group(2)}"
            if collection in known:
                used.setdefault(collection, set()).add(name)
    return used


def _declared() -> dict[str, str]:
    return dict(yaml.safe_load((ROOT / "galaxy.yml").read_text())["dependencies"] or {})


def test_every_collection_used_is_declared_and_every_declared_one_used() -> None:
    texts = {str(p.relative_to(ROOT)): p.read_text(errors="replace") for p in _content_files()}
    used = used_collections(texts, _known_collections())
    undeclared = {c: sorted(files) for c, files in used.items() if c not in ALWAYS_THERE and c not in _declared()}
    assert undeclared == {}, "add these collections to galaxy.yml's dependencies and execution-environment.yml"
    unused = sorted(set(_declared()) - set(used))
    assert unused == [], "galaxy.yml declares collections that nothing uses"


def test_an_undeclared_module_is_found() -> None:
    """The scanner sees a module of another collection in a task, and ignores attribute chains."""
    task = "- name: Mount\n  ansible.posix.mount:\n    path: /x\n  when: item.stat.exists and ansible_facts.a.b\n"
    used = used_collections({"tasks.yml": task}, _known_collections())
    assert used == {"ansible.posix": {"tasks.yml"}}


def test_the_execution_environment_installs_the_same_collections() -> None:
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    collections = {
        c["name"]: c.get("version", "*") for c in ee["dependencies"]["galaxy"]["collections"] if c.get("type") != "file"
    }
    assert collections == _declared()


def test_repository_is_no_made_up_address() -> None:
    repository = yaml.safe_load((ROOT / "galaxy.yml").read_text())["repository"]
    assert repository
    assert ".invalid" not in repository and "example." not in repository
