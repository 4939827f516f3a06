"""Which NVIDIA packages are held back from updates, and which get them (#14).

Held and kept from unattended-upgrades: exactly the packages built from the driver release, whose version must
match the loaded kernel module. Updated: the container toolkit (the container-escape boundary; CVE-2024-0132,
CVE-2025-23266 were fixed by package updates) and CUDA userland, unless the user holds a toolkit package by name.
unattended-upgrades matches each Package-Blacklist entry as a Python regular expression from the start of the name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

import jinja2
import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROLES = Path(__file__).resolve().parents[3] / "roles"

# Binary package names from Debian's nvidia-graphics-drivers (bookworm, trixie), Ubuntu's
# nvidia-graphics-drivers-<branch> and NVIDIA's CUDA repository.
DRIVER = [
    "nvidia-driver",
    "nvidia-driver-bin",
    "nvidia-driver-libs",
    "nvidia-driver-535",
    "nvidia-driver-580-open",
    "nvidia-kernel-dkms",
    "nvidia-kernel-support",
    "nvidia-open-kernel-dkms",
    "nvidia-kernel-open-dkms",
    "nvidia-kernel-common-535",
    "nvidia-dkms-535",
    "nvidia-utils-535",
    "nvidia-compute-utils-535",
    "nvidia-smi",
    "nvidia-persistenced",
    "nvidia-modprobe",
    "nvidia-settings",
    "nvidia-alternative",
    "nvidia-suspend-common",
    "nvidia-vdpau-driver",
    "nvidia-egl-icd",
    "nvidia-vulkan-icd",
    "nvidia-opencl-icd",
    "nvidia-firmware-535",
    "nvidia-fabricmanager-535",
    "libcuda1",
    "libcudadebugger1",
    "libnvidia-ml1",
    "libnvidia-ptxjitcompiler1",
    "libnvidia-glcore",
    "libnvidia-eglcore",
    "libnvidia-cfg1",
    "libnvidia-encode1",
    "libnvidia-compute-535",
    "libnvidia-decode-535",
    "libnvidia-nvvm4",
    "libnvcuvid1",
    "libnvoptix1",
    "libgl1-nvidia-glvnd-glx",
    "libglx-nvidia0",
    "libegl-nvidia0",
    "libgles-nvidia2",
    "firmware-nvidia-gsp",
    "xserver-xorg-video-nvidia",
    "cuda-drivers",
    "cuda-drivers-580",
    "linux-modules-nvidia-535-generic",
]
TOOLKIT = [
    "nvidia-container-toolkit",
    "nvidia-container-toolkit-base",
    "libnvidia-container1",
    "libnvidia-container-tools",
    "libnvidia-container-dev",
    "nvidia-container-runtime",
    "nvidia-docker2",
]
CUDA_USERLAND = [
    "nvidia-cuda-toolkit",
    "nvidia-cuda-dev",
    "nvidia-cuda-gdb",
    "nvidia-cuda-toolkit-doc",
    "nvidia-profiler",
    "nvidia-visual-profiler",
    "nvidia-opencl-dev",
    "nvidia-openjdk-8-jre",
    "nvidia-cudnn",
    "libcudart12",
    "libcudart11.0",
    "libcublas12",
    "libcufft11",
    "libcupti12",
    "cuda-toolkit-12-4",
    "libcudnn9-cuda-12",
    "libnvidia-egl-wayland1",
]


def _render(role: str, template: str, **variables: Any) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(ROLES / role / "templates")),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
    )
    env.filters["regex_escape"] = re.escape
    return env.get_template(template).render(ansible_managed="Ansible managed", **variables)


def _blacklist(text: str) -> List[re.Pattern[str]]:
    body = text.split("Unattended-Upgrade::Package-Blacklist {", 1)[1]
    return [re.compile(p) for p in re.findall(r'^\s+"([^"]+)";$', body, re.MULTILINE)]


def _driver_blacklist() -> List[re.Pattern[str]]:
    data = yaml.safe_load((ROLES / "nvidia_driver" / "vars" / "main.yml").read_text())
    return _blacklist(_render("nvidia_driver", "51dlstack-nvidia.j2", **data))


@pytest.mark.parametrize("name", DRIVER)
def test_driver_packages_tied_to_the_kernel_module_are_kept_from_unattended_upgrades(name: str) -> None:
    assert any(p.match(name) for p in _driver_blacklist()), name


@pytest.mark.parametrize("name", TOOLKIT + CUDA_USERLAND)
def test_container_toolkit_and_cuda_userland_get_security_updates(name: str) -> None:
    assert not [p.pattern for p in _driver_blacklist() if p.match(name)], name


def _toolkit_vars(updates: Dict[str, Any]) -> Dict[str, Any]:
    data = yaml.safe_load((ROLES / "nvidia_container_toolkit" / "vars" / "main.yml").read_text())
    trusted = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in data.items()}
    variables = {**trusted, "nvidia_container_toolkit_updates": updates}
    templar = Templar(loader=DataLoader(), variables=variables)
    return {
        "held": templar.template(trust_as_template("{{ __nvidia_container_toolkit_held }}")),
        "packages": data["__nvidia_container_toolkit_packages"],
    }


def test_the_toolkit_is_not_held_by_default() -> None:
    defaults = yaml.safe_load((ROLES / "nvidia_container_toolkit" / "defaults" / "main.yml").read_text())
    assert "nvidia_container_toolkit_hold" not in defaults
    assert _toolkit_vars(defaults["nvidia_container_toolkit_updates"])["held"] == []


def test_a_package_named_false_is_held_and_blacklisted_alone() -> None:
    result = _toolkit_vars({"libnvidia-container1": False, "nvidia-container-toolkit": True})
    assert result["held"] == ["libnvidia-container1"]
    text = _render(
        "nvidia_container_toolkit",
        "51dlstack-nvidia-container-toolkit.j2",
        __nvidia_container_toolkit_held=result["held"],
    )
    patterns = _blacklist(text)
    assert [p.pattern for p in patterns] == [r"^libnvidia\-container1$"]
    assert not any(p.match("libnvidia-container-tools") for p in patterns)


def test_the_hold_task_releases_what_updates_allow() -> None:
    tasks = yaml.safe_load((ROLES / "nvidia_container_toolkit" / "tasks" / "hold.yml").read_text())
    include = next(t for t in tasks if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "holds")
    result = _toolkit_vars({"libnvidia-container1": False, "nvidia-container-toolkit": True})
    variables = {
        "__nvidia_container_toolkit_held": result["held"],
        "__nvidia_container_toolkit_packages": result["packages"],
    }
    templar = Templar(loader=DataLoader(), variables=variables)
    hold = templar.template(trust_as_template(include["vars"]["common_holds_hold"]))
    release = templar.template(trust_as_template(include["vars"]["common_holds_release"]))
    assert hold == ["libnvidia-container1"]
    assert sorted(release) == sorted(set(result["packages"]) - {"libnvidia-container1"})
