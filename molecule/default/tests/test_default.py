"""Assertions on a host converged by the default scenario (CPU profile)."""

from __future__ import annotations

import json
import re

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
    fact = json.loads(host.file("/etc/ansible/facts.d/dlstack_stack.fact").content_string)
    stack = fact["stack"]
    assert fact["gpus"] == []
    assert fact["profile"] == "cpu"
    assert stack["cuda"] is None
    assert stack["tensorflow"] == "2.21"
    assert stack["pip_requirements"][0] == "tensorflow-cpu==2.21.*"
    assert stack["compute_capabilities"] == []


def test_stage_states_recorded_for_the_cpu_profile(host):
    """The CPU profile runs no NVIDIA stage; the fact says which stages ran and why the others did not."""
    stages = json.loads(host.file("/etc/ansible/facts.d/dlstack_stack.fact").content_string)["stages"]
    for name in ("preflight", "common", "python_env", "tensorflow"):
        assert stages[name]["state"] == "done", (name, stages[name])
    assert stages["tensorflow"]["installed"].startswith("2.21"), stages["tensorflow"]
    for name in ("nvidia_driver", "cuda_toolkit", "cudnn", "tensorrt", "nvidia_container_toolkit"):
        assert stages[name] == {
            "state": "skipped",
            "reason": "CPU profile: no NVIDIA stage",
            "wanted": None,
            "installed": None,
        }, (name, stages[name])


def test_check_mode_changes_nothing_on_a_converged_host(check_mode_recap):
    """`ansible-playbook --check` against the converged host must report changed=0."""
    recap = check_mode_recap()
    assert re.search(r"\bchanged=0\b", recap), recap


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
        assert modules[name]["gpu_requirement"]["required"] is False, modules[name]["gpu_requirement"]
    assert record["verdicts"]["gpu_info"] == "skip"


def test_verification_records_the_installed_stack(host):
    """The stack columns of the fleet report: measured versions where the checks ran, nothing invented."""
    stack = _verify_record(host)["stack"]
    assert stack["tensorflow"].startswith("2.21"), stack
    assert stack["python"] and stack["numpy"], stack
    assert stack["driver"] is None and stack["cuda"] is None and stack["tensorrt"] is None, stack


def test_xla_smoke_ran_for_real_on_cpu_with_tensorflow(host):
    record = _verify_record(host)
    xla = record["modules"]["xla_smoke"]
    assert xla["backend"] == "tensorflow", xla
    assert xla["checks"]["xla"]["status"] == "pass", xla
    assert record["verdict"] in {"pass", "warn"}


def test_smoke_workloads_ran_as_the_unprivileged_smoke_user(host):
    """Never root: each smoke module reports the user it ran as; that user has no login shell."""
    modules = _verify_record(host)["modules"]
    for name in ("gpu_smoke", "xla_smoke", "trt_smoke"):
        assert modules[name]["user"] == "dlstack-smoke", (name, modules[name].get("user"))
    user = host.user("dlstack-smoke")
    assert user.exists and user.uid != 0
    assert user.shell == "/usr/sbin/nologin"
    assert "video" in user.groups, user.groups


ENV = f"{PREFIX}/envs/default"


def test_default_environment_uses_the_distribution_python(host):
    env_py = host.check_output(f"{ENV}/bin/python -c 'import sys; print(sys.version_info[:2])'")
    sys_py = host.check_output("python3 -c 'import sys; print(sys.version_info[:2])'")
    assert env_py == sys_py
    assert host.file("/var/lib/dlstack/python_env/default.requirements.txt").exists


def test_tensorflow_cpu_wheel_matches_the_resolved_stack(host):
    show = host.check_output(f"{ENV}/bin/pip show tensorflow-cpu")
    assert re.search(r"^Version: 2\.21\.", show, flags=re.MULTILINE), show


def test_tensorflow_imports_and_runs_an_xla_function_in_the_environment(host):
    out = host.check_output(f"bash -c '. {ENV}/bin/activate && python {ENV}/share/dlstack/tf_probe.py --xla'")
    probe = json.loads(out.strip().splitlines()[-1])
    assert probe["imported"] is True
    assert probe["version"].startswith("2.21")
    assert probe["gpus"] == []
    assert probe["xla"]["ok"] is True


def test_activation_hook_is_installed(host):
    assert "# BEGIN gpulab.dlstack tensorflow hook" in host.file(f"{ENV}/bin/activate").content_string
    assert host.file(f"{ENV}/etc/dlstack/tf-env.sh").exists


def test_numpy_pin_outside_the_resolved_range_fails_before_install(host, scenario_playbook):
    proc = scenario_playbook("bad_input.yml", "-e", "molecule_numpy=1.25.0")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "numpy==1.25.0" in out
    assert "numpy>=1.26.0" in out
    assert not host.file(f"{PREFIX}/envs/badinput").exists


def test_python_tensorflow_does_not_support_fails_in_preflight(host, scenario_playbook):
    proc = scenario_playbook(
        "bad_input.yml", "-e", "dlstack_tensorflow_version=2.21", "-e", "dlstack_python_version=3.9"
    )
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert "Python 3.9" in out
    assert "3.10-3.13" in out
    assert not host.file(f"{PREFIX}/envs/badinput").exists
