"""Repository keys are checked against pinned fingerprints with the roles' own gpg call (#14).

Runs the exact argv of the roles' listing task on a throwaway key made here with the real gpg, then the filter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest
import yaml
from ansible_collections.gpulab.dlstack.plugins.filter.gpg import gpg_primary_fingerprints

ROLES = Path(__file__).resolve().parents[4] / "roles"
GPG = shutil.which("gpg")


def _tasks(role: str, tasks_file: str) -> List[dict]:
    """The file's tasks, those inside blocks included."""
    flat: List[dict] = []
    for task in yaml.safe_load((ROLES / role / "tasks" / tasks_file).read_text()):
        flat.extend([task, *task.get("block", [])])
    return flat


def _listing_argv(role: str, tasks_file: str) -> List[str]:
    task = next(t for t in _tasks(role, tasks_file) if t["name"] == "List the fingerprints of the signing key")
    return list(task["ansible.builtin.command"]["argv"])


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    if GPG is None:
        pytest.skip("gpg is not installed")
    home = tmp_path_factory.mktemp("gnupg")
    os.chmod(home, 0o700)
    env = {**os.environ, "GNUPGHOME": str(home)}

    def run(*a: str) -> subprocess.CompletedProcess:
        return subprocess.run([GPG, "--batch", *a], env=env, capture_output=True, text=True, check=True)

    run("--passphrase", "", "--quick-gen-key", "dlstack test <test@example.invalid>", "ed25519", "sign", "1d")
    listing = run("--with-colons", "--list-keys").stdout
    fpr = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))
    run("--passphrase", "", "--quick-add-key", fpr, "cv25519", "encr", "1d")
    armored = home / "key.asc"
    armored.write_text(run("--armor", "--export", fpr).stdout)
    return armored, fpr


@pytest.mark.parametrize(("role", "tasks_file"), [("common", "keyring.yml")])
def test_the_roles_gpg_call_and_the_filter_give_the_primary_fingerprint(
    key: tuple, tmp_path: Path, role: str, tasks_file: str
) -> None:
    armored, fpr = key
    argv = _listing_argv(role, tasks_file)
    assert argv[0] == "gpg" and "show-only" in argv
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    out = subprocess.run(
        [GPG, *argv[1:-1], str(armored)],
        env={**os.environ, "GNUPGHOME": str(scratch)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.count("\nfpr:") + out.startswith("fpr:") >= 2  # the primary key and its subkey
    assert gpg_primary_fingerprints(out) == [fpr.upper()]


def test_not_a_key_gives_no_fingerprint() -> None:
    assert gpg_primary_fingerprints("") == []


def test_the_pinned_fingerprints_are_those_of_the_key_files_named() -> None:
    data = yaml.safe_load((ROLES / "nvidia_repo" / "vars" / "main.yml").read_text())
    table = data["__nvidia_repo_key_fingerprint_table"]
    assert set(table) == set(data["__nvidia_repo_key_files"])
    for distro, fingerprints in table.items():
        key_id = data["__nvidia_repo_key_files"][distro].split(".")[0].upper()
        for fpr in fingerprints:
            assert len(fpr) == 40 and fpr.endswith(key_id), (distro, fpr)
    toolkit = yaml.safe_load((ROLES / "nvidia_container_toolkit" / "vars" / "main.yml").read_text())
    assert toolkit["__nvidia_container_toolkit_published_fingerprints"] == ["C95B321B61E88C1809C4F759DDCAE044F796ECB0"]


def test_a_distro_without_a_pinned_fingerprint_is_refused_until_one_is_given() -> None:
    refuse = next(t for t in _tasks("common", "keyring.yml") if t["name"].startswith("Refuse to use a key without"))
    assert refuse["ansible.builtin.assert"]["that"] == "common_keyring_fingerprints | length > 0"
    assert "{{ common_keyring_fingerprint_var }}" in refuse["ansible.builtin.assert"]["fail_msg"]
    # every caller hands over its role's fingerprints and the variable that overrides them
    for role, tasks_file, var in [
        ("nvidia_repo", "apt.yml", "nvidia_repo_key_fingerprints"),
        ("nvidia_repo", "dnf.yml", "nvidia_repo_key_fingerprints"),
        ("nvidia_container_toolkit", "install_repo.yml", "nvidia_container_toolkit_key_fingerprints"),
    ]:
        calls = _tasks(role, tasks_file)
        call = next(t for t in calls if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "keyring")
        assert call["vars"]["common_keyring_fingerprint_var"] == var
        assert call["vars"]["common_keyring_fingerprints"].startswith("{{ __")
