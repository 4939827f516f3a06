"""Shared fixtures for the unit tests.

The collection's Python code imports itself as ``ansible_collections.gpulab.dlstack``;
this file lays out that import path once per test run (a symbolic link in a temporary
directory pointing at the repository root) so the tests run from a plain checkout.

The ``ansible_playbook`` fixture is the one way the tests run a real ``ansible-playbook``
(tests/unit/playbook_run.py).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

ROOT = Path(__file__).resolve().parents[2]


def _collection_root() -> Path:
    digest = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    base = Path(tempfile.gettempdir()) / f"gpulab-dlstack-{digest}"
    link = base / "ansible_collections" / "gpulab" / "dlstack"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(ROOT, target_is_directory=True)
    return base


_BASE = str(_collection_root())
if _BASE not in sys.path:
    sys.path.insert(0, _BASE)
# Ansible's own collection loader over the same path, as ansible-playbook and ansible-test have it: a Templar in a test
# then finds the collection's filters and lookups by their FQCN (gpulab.dlstack.carries_credentials).
_AnsibleCollectionFinder(paths=[_BASE])._install()

from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import (  # noqa: E402 (the import path is laid out above)
    ANSIBLE_PLAYBOOK,
    AnsiblePlaybook,
)


class AnsibleExitJson(Exception):
    """Raised in place of AnsibleModule.exit_json."""


class AnsibleFailJson(Exception):
    """Raised in place of AnsibleModule.fail_json."""


@contextmanager
def set_module_args(args: dict[str, Any]) -> Iterator[None]:
    """Give a module its arguments the way AnsiballZ does, for the length of a block."""
    try:
        from ansible.module_utils.testing import patch_module_args  # noqa: PLC0415 (ansible-core >= 2.19 only)
    except ImportError:
        old = getattr(basic, "_ANSIBLE_ARGS", None)
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = old
    else:
        with patch_module_args(args):
            yield


@pytest.fixture
def run_module(monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[bool, dict[str, Any]]]:
    """Run a module's main() with args; return (failed, result)."""

    def exit_json(self: Any, **kwargs: Any) -> None:
        raise AnsibleExitJson(kwargs)

    def fail_json(self: Any, msg: str = "", **kwargs: Any) -> None:
        kwargs["msg"] = msg
        raise AnsibleFailJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)

    def _run(main: Callable[[], None], args: dict[str, Any], check_mode: bool = False) -> tuple[bool, dict[str, Any]]:
        full = dict(args)
        if check_mode:
            full["_ansible_check_mode"] = True
        with set_module_args(full):
            try:
                main()
            except AnsibleExitJson as exc:
                return False, exc.args[0]
            except AnsibleFailJson as exc:
                return True, exc.args[0]
        raise AssertionError("module returned without exit_json or fail_json")

    return _run


@pytest.fixture(scope="session")
def ansible_playbook() -> AnsiblePlaybook:
    """Runs ansible-playbook the one way the tests do (tests/unit/playbook_run.py)."""
    if not ANSIBLE_PLAYBOOK.exists():
        pytest.skip(f"ansible-playbook is not next to {sys.executable}; run the tests through `nox -s units`")
    return AnsiblePlaybook()
