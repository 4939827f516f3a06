"""The collection-wide path defaults: held once by the gpulab.dlstack.defaults lookup, read by every role through it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml
from ansible.errors import AnsibleLookupError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.gpulab.dlstack.plugins.lookup.defaults import DEFAULTS, LookupModule

ROOT = Path(__file__).resolve().parents[4]
ROLES = ROOT / "roles"


def test_the_defaults() -> None:
    assert LookupModule().run(["dlstack_prefix", "dlstack_cache_dir"]) == ["/opt/dlstack", "/var/cache/dlstack"]
    assert LookupModule().run(["dlstack_state_dir"]) == ["/var/lib/dlstack"]


def test_an_unknown_setting_is_refused_with_the_known_ones() -> None:
    with pytest.raises(AnsibleLookupError, match="no default for dlstack_prefx; ask for one of dlstack_prefix"):
        LookupModule().run(["dlstack_prefx"])


def _role_data() -> Dict[str, str]:
    """The YAML and templates of the roles that run (documentation - READMEs, argument specs - left out)."""
    return {
        str(path.relative_to(ROLES)): path.read_text()
        for path in sorted(ROLES.rglob("*"))
        if path.is_file() and path.parent.name in ("defaults/vars/tasks", "handlers", "templates")
    }


def test_no_role_keeps_its_own_copy_of_a_default() -> None:
    pasted = [name for name, text in _role_data().items() for value in DEFAULTS.values() if f"'{value}'" in text]
    assert pasted == [], "read it as dlstack_x | default(lookup('gpulab.dlstack.defaults', 'dlstack_x'))"


def test_common_sets_the_settings_from_the_lookup_and_documents_its_values() -> None:
    defaults = yaml.safe_load((ROLES / "common" / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLES / "common" / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    for name, value in DEFAULTS.items():
        assert defaults[name] == f"{{{{ lookup('gpulab.dlstack.defaults', '{name}') }}}}", name
        assert options[name]["default"] == value, name
    preflight = yaml.safe_load((ROLES / "preflight" / "meta" / "argument_specs.yml").read_text())
    assert preflight["argument_specs"]["main"]["options"]["dlstack_prefix"]["default"] == DEFAULTS["dlstack_prefix"]


def test_only_common_defines_the_settings() -> None:
    owners = [
        str(path.relative_to(ROLES))
        for path in sorted(ROLES.glob("*/defaults/main.yml"))
        if set(yaml.safe_load(path.read_text()) or {}) & set(DEFAULTS)
    ]
    assert owners == ["common/defaults/main.yml"]


def _value(where: str) -> Any:
    role, folder, key = where.split("/")
    return yaml.safe_load((ROLES / role / folder / "main.yml").read_text())[key]


# A role's own setting that reads a collection-wide one: (role/defaults-or-vars/name, the other variables it needs, what
# it is by default, what it is with the collection-wide settings under /srv/dl).
READERS = [
    ("bazel/vars/__bazel_prefix", {"bazel_prefix": ""}, "/opt/dlstack/bazel", "/srv/dl/opt/bazel"),
    (
        "bazel/vars/__bazel_repository_cache",
        {"bazel_repository_cache": ""},
        "/var/cache/dlstack/bazel/repository",
        "/srv/dl/cache/bazel/repository",
    ),
    ("cuda_toolkit/vars/__cuda_toolkit_cache", {"cuda_toolkit_cache_dir": ""}, "/var/cache/dlstack/cuda", None),
    ("env_modules/vars/__env_modules_prefix", {}, "/opt/dlstack", "/srv/dl/opt"),
    ("nvidia_repo/vars/__nvidia_repo_stage_dir", {}, "/var/cache/dlstack/nvidia_repo", None),
    ("preflight/vars/__preflight_prefix", {}, "/opt/dlstack", "/srv/dl/opt"),
    ("python_env/defaults/python_env_root", {}, "/opt/dlstack/envs", "/srv/dl/opt/envs"),
    ("python_env/defaults/python_env_conda_prefix", {}, "/opt/dlstack/conda", "/srv/dl/opt/conda"),
    ("python_env/defaults/python_env_spec_dir", {}, "/var/lib/dlstack/python_env", "/srv/dl/state/python_env"),
    ("python_env/vars/__python_env_uv_root", {}, "/opt/dlstack/tools/uv", "/srv/dl/opt/tools/uv"),
    ("tensorflow/defaults/tensorflow_env_root", {}, "/opt/dlstack/envs", "/srv/dl/opt/envs"),
    ("verify/defaults/verify_state_dir", {}, "/var/lib/dlstack/verify", "/srv/dl/state/verify"),
    ("verify/defaults/verify_lib_doctor_env_root", {}, "/opt/dlstack/envs", "/srv/dl/opt/envs"),
    ("verify/vars/__verify_default_python", {}, "/opt/dlstack/envs/default/bin/python", None),
]
SETTINGS = {"dlstack_prefix": "/srv/dl/opt", "dlstack_state_dir": "/srv/dl/state", "dlstack_cache_dir": "/srv/dl/cache"}


@pytest.mark.parametrize(("where", "given", "alone", "set_"), READERS, ids=[r[0] for r in READERS])
def test_a_role_alone_uses_the_collection_default_and_follows_the_setting(
    where: str, given: Dict[str, str], alone: str, set_: str | None
) -> None:
    expression = _value(where)
    assert "gpulab.dlstack.defaults" in expression, f"{where} no longer reads a collection-wide setting"
    templar = Templar(loader=DataLoader())
    templar.available_variables = dict(given)
    assert templar.template(trust_as_template(expression)).strip() == alone
    if set_ is not None:
        templar.available_variables = {**given, **SETTINGS}
        assert templar.template(trust_as_template(expression)).strip() == set_


def test_every_reader_outside_common_falls_back_to_the_lookup() -> None:
    bare = []
    for name, text in _role_data().items():
        if name.startswith("common/"):
            continue
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            # The name in prose (a message's 'move dlstack_prefix.') is followed by a full stop or a quote.
            for found in re.finditer(r"\b(dlstack_(?:prefix|state_dir|cache_dir))\b(?![.'\w])", line):
                after = line[found.end() :]
                if not after.startswith(f" | default(lookup('gpulab.dlstack.defaults', '{found.group(1)}'))"):
                    bare.append(f"{name}: {line.strip()}")
    assert bare == []
