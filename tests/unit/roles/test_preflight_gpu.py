"""The preflight role's GPU detection, run by ansible-playbook on stub PCI trees and a stub nvidia-smi.

preflight reads GPUs through gpulab.dlstack.preflight_probe (gpu_info's parser and failure classes, as verify);
each case is one local host of a single run: the recorded machines of fixtures/sysfs without a driver,
the fake-PCI stand-in's tree (tests/standins/fake_gpu_pci.yml), a host with no GPU, a driver that lists
eight A100s, and one with a lost GPU.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml
from ansible_collections.gpulab.dlstack.tests.unit.playbook_run import AnsiblePlaybook
from ansible_collections.gpulab.dlstack.tests.unit.plugins.module_utils.sysfs_stub import build, load, machines

ROOT = Path(__file__).resolve().parents[3]
NVSMI = ROOT / "tests" / "unit" / "fixtures" / "nvidia-smi"
PLAYBOOK = """
- hosts: all
  gather_facts: false
  vars:
    __preflight_findings: []
    __preflight_notes: []
  tasks:
    - name: Probe the host as preflight does
      ansible.builtin.include_role:
        name: gpulab.dlstack.preflight
        tasks_from: probe
    - name: Detect GPUs as preflight does
      ansible.builtin.include_role:
        name: gpulab.dlstack.preflight
        tasks_from: gpu
    - name: Keep what preflight concluded
      ansible.builtin.copy:
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        content: "{{ {'gpus': dlstack_gpus, 'present': dlstack_gpu_present, 'driver_ok': __preflight_smi_ok,
          'failure': __preflight_gpu_failure, 'queries': __preflight_gpu_queries,
          'gpu_profile': __preflight_gpu_profile, 'findings': __preflight_findings,
          'notes': __preflight_notes} | to_json }}"
        mode: "0644"
"""
STUB_SMI = """#!/bin/sh
# Stub nvidia-smi (test stand-in): prints a recorded CSV for --query-gpu and exits with the recorded status.
case "$1" in --query-gpu=*) cat "{csv}"; exit {rc} ;; esac
echo "| NVIDIA-SMI 535.183.01   Driver Version: 535.183.01   CUDA Version: 12.2 |"
exit {rc}
"""

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="the stub nvidia-smi is a POSIX shell script")


def _standin_devices() -> list:
    """The fake H100 tree exactly as tests/standins/fake_gpu_pci.yml lays it out (no driver link)."""
    play = yaml.safe_load((ROOT / "tests" / "standins" / "fake_gpu_pci.yml").read_text())[0]
    return [
        {"address": d["slot"], "vendor": d["vendor"], "device": d["device"], "class": d["class"]}
        for d in play["vars"]["standin_pci_default_devices"]
    ]


def _stub_smi(path: Path, csv: str, rc: int) -> str:
    path.write_text(STUB_SMI.format(csv=NVSMI / csv, rc=rc))
    path.chmod(0o755)
    return str(path)


@pytest.fixture(scope="module")
def preflight(ansible_playbook: AnsiblePlaybook, tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Dict[str, Any]]:
    """Run the role's GPU detection once for every case; returns each host's conclusions."""
    base = tmp_path_factory.mktemp("preflight-gpu")
    missing = str(base / "no-nvidia-smi")
    hosts: Dict[str, Dict[str, Any]] = {}
    for name in machines():
        root = build(base / name / "devices", load(name)["devices"])
        hosts[name.replace(".yml", "").replace("-", "_")] = {"preflight_pci_devices_path": str(root)}
    hosts["standin"] = {
        "preflight_pci_devices_path": str(build(base / "standin" / "devices", _standin_devices())),
        "dlstack_profile": "gpu",
    }
    hosts["no_gpu"] = {
        "preflight_pci_devices_path": str(build(base / "empty" / "devices", [])),
        "dlstack_profile": "gpu",
    }
    a100 = [
        {
            "address": f"0000:{bus}:00.0",
            "vendor": "0x10de",
            "device": "0x20b2",
            "class": "0x030200",
            "driver": "nvidia",
        }
        for bus in ("07", "0f", "47", "4e", "87", "90", "b7", "bd")
    ]
    hosts["driver_a100"] = {
        "preflight_pci_devices_path": str(build(base / "a100" / "devices", a100)),
        "preflight_nvidia_smi": _stub_smi(base / "smi-ok", "a100-sxm4-8gpu.csv", 0),
    }
    hosts["lost_gpu"] = {
        "preflight_pci_devices_path": str(build(base / "lost" / "devices", a100)),
        "preflight_nvidia_smi": _stub_smi(base / "smi-lost", "composed-8gpu-one-lost.csv", 15),
    }
    for host in hosts.values():
        host.setdefault("preflight_nvidia_smi", missing)
        host.update({"ansible_connection": "local", "ansible_python_interpreter": sys.executable})
    (base / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (base / "play.yml").write_text(PLAYBOOK)
    run = ansible_playbook.run(
        base / "play.yml",
        "-e",
        "out_dir=" + str(base),
        inventory=str(base / "hosts.yml"),
        local=False,
        cwd=base,
        # No ansible.cfg (none.cfg does not exist): the role's own defaults, twelve hosts at once.
        env={"ANSIBLE_CONFIG": str(base / "none.cfg"), "ANSIBLE_FORKS": "12"},
        timeout=900,
    )
    assert run.rc == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return {name: json.loads((base / f"{name}.json").read_text()) for name in hosts}


@pytest.mark.parametrize("name", machines())
def test_recorded_machine_without_a_driver(preflight: Dict[str, Dict[str, Any]], name: str) -> None:
    seen = preflight[name.replace(".yml", "").replace("-", "_")]
    expect = load(name)["expect"]
    assert [[g["pci_bus_id"], g["pci_device_id"]] for g in seen["gpus"]] == expect["gpus"]
    assert seen["present"] is True and seen["driver_ok"] is False and seen["gpu_profile"] is True
    assert seen["queries"] == ["10de:" + g[1] for g in expect["gpus"]]
    # No NVSwitch is taken for a GPU, and a host with GPUs but no driver is told the driver role installs one.
    assert any("no driver answers" in n and "the nvidia_driver role installs one" in n for n in seen["notes"])
    assert seen["findings"] == []


def test_the_fake_pci_standin_is_one_h100(preflight: Dict[str, Dict[str, Any]]) -> None:
    seen = preflight["standin"]
    assert seen["gpus"] == [
        {
            "pci_bus_id": "0000:18:00.0",
            "pci_device_id": "2330",
            "name": None,
            "compute_capability": None,
            "driver_version": None,
            "kernel_driver": None,
            "class": "030200",
            "source": "pci",
        }
    ]
    assert seen["queries"] == ["10de:2330"] and seen["findings"] == []


def test_no_gpu_on_a_gpu_profile_host_fails(preflight: Dict[str, Dict[str, Any]]) -> None:
    seen = preflight["no_gpu"]
    assert seen["gpus"] == [] and seen["present"] is False
    assert [f["level"] for f in seen["findings"]] == ["fail"]
    assert "dlstack_profile is gpu but no NVIDIA GPU is seen" in seen["findings"][0]["message"]


def test_a_driver_that_answers_names_every_gpu(preflight: Dict[str, Dict[str, Any]]) -> None:
    seen = preflight["driver_a100"]
    assert len(seen["gpus"]) == 8 and seen["driver_ok"] is True and seen["failure"] is None
    assert {g["source"] for g in seen["gpus"]} == {"nvidia-smi"}
    assert seen["queries"] == ["8.0"] * 8
    assert {g["driver_version"] for g in seen["gpus"]} == {"535.183.01"}
    assert seen["notes"] == [] and seen["findings"] == []


def test_a_lost_gpu_is_a_reboot_not_a_driver_install(preflight: Dict[str, Dict[str, Any]]) -> None:
    seen = preflight["lost_gpu"]
    assert seen["failure"] == "gpu_lost" and len(seen["gpus"]) == 8
    assert [g["source"] for g in seen["gpus"]].count("pci") == 1
    assert [f["level"] for f in seen["findings"]] == ["warn"]
    assert "0000:87:00.0" in seen["findings"][0]["message"] and "reboot" in seen["findings"][0]["message"]
    assert not any("installs one" in n for n in seen["notes"])
