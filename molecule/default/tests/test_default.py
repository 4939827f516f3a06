"""Assertions on a host converged by the default scenario (CPU profile)."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

PREFIX = "/opt/dlstack"


@pytest.mark.parametrize(
    "path",
    [PREFIX, f"{PREFIX}/bin", f"{PREFIX}/envs", "/var/lib/dlstack", "/var/lib/dlstack/verify", "/var/cache/dlstack"],
)
def test_layout(host, path):
    d = host.file(path)
    assert d.is_directory
    assert d.user == "root"
    assert d.mode == 0o755


def test_login_environment(host):
    out = host.check_output("bash -lc 'echo $DLSTACK_PREFIX:$PATH'")
    prefix, path = out.split(":", 1)
    assert prefix == PREFIX
    assert f"{PREFIX}/bin" in path.split(":")


def test_local_facts(host):
    fact = json.loads(host.file("/etc/ansible/facts.d/dlstack.fact").content_string)
    assert fact["prefix"] == PREFIX
    assert fact["state_dir"] == "/var/lib/dlstack"


def test_preflight_resolved_a_cpu_only_stack(host):
    """No GPU in the container: preflight goes on with the CPU profile and the newest TensorFlow for the OS Python."""
    fact = json.loads(host.file("/etc/ansible/facts.d/dlstack.fact").content_string)
    stack = fact["stack"]
    assert fact["gpu_present"] is False
    assert stack["cuda"] is None
    assert stack["tensorflow"] == "2.21"
    assert stack["pip_requirements"][0] == "tensorflow-cpu==2.21.*"
    assert stack["compute_capabilities"] == []


def test_check_mode_changes_nothing_on_a_converged_host(host):
    """`ansible-playbook --check` against the converged host must report changed=0."""
    name = host.backend.get_hostname()
    scenario = os.environ["MOLECULE_SCENARIO_DIRECTORY"]
    proc = subprocess.run(
        [
            "ansible-playbook",
            "-i",
            os.environ["MOLECULE_INVENTORY_FILE"],
            "--check",
            "--limit",
            name,
            os.path.join(scenario, "converge.yml"),
        ],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    recap = re.search(rf"^{re.escape(name)}\s*:.*$", proc.stdout, flags=re.MULTILINE)
    assert recap, proc.stdout[-3000:]
    assert re.search(r"\bchanged=0\b", recap.group(0)), recap.group(0)


def _verify_record(host):
    return json.loads(host.file("/var/lib/dlstack/verify/latest.json").content_string)


def test_verification_stored_with_honest_skips(host):
    """No GPU here: gpu_smoke and trt_smoke skip with a reason, gpu_info reports no GPUs; nothing claims a pass."""
    record = _verify_record(host)
    assert host.file("/var/lib/dlstack/verify").listdir(), "no timestamped results kept"
    modules = record["modules"]
    assert modules["gpu_info"]["gpus"] == []
    assert modules["gpu_info"]["reason"]
    for name in ("gpu_smoke", "trt_smoke"):
        assert record["verdicts"][name] == "skip"
        assert modules[name]["reason"]
    assert record["verdicts"]["gpu_info"] == "skip"
    assert record["verdict"] in {"pass", "warn", "skip"}
