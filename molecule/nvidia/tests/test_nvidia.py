"""Assertions on hosts converged by the nvidia scenario, after the side effect switched the default CUDA to 13.0."""

from __future__ import annotations

import json
import re

import pytest

CUDA = {"12.4": 12040, "12.6": 12060, "13.0": 13000}


def _is_debian12(host):
    return "debian12" in host.backend.get_hostname()


@pytest.mark.parametrize(("version", "cuda_version"), sorted(CUDA.items()))
def test_toolkits_side_by_side(host, version, cuda_version):
    prefix = f"/usr/local/cuda-{version}"
    assert host.file(prefix).is_directory
    header = host.file(f"{prefix}/include/cuda.h").content_string
    assert re.search(rf"#define\s+CUDA_VERSION\s+{cuda_version}\b", header)
    # The -cu12 wheels carry ptxas but no nvcc; CUDA 13's wheels carry nvcc.
    tool = "nvcc" if host.file(f"{prefix}/bin/nvcc").exists else "ptxas"
    out = host.check_output(f"{prefix}/bin/{tool} --version")
    assert f"release {version}" in out


def test_default_switched_by_one_variable(host):
    assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-13.0"
    query = host.check_output("update-alternatives --query cuda")
    assert "Value: /usr/local/cuda-13.0" in query
    for version in CUDA:
        assert f"Alternative: /usr/local/cuda-{version}" in query


def test_login_shell_finds_the_default_nvcc(host):
    out = host.check_output("bash -lc 'echo $CUDA_HOME; command -v nvcc; nvcc --version'")
    home, nvcc, *version = out.splitlines()
    assert home == "/usr/local/cuda"
    assert nvcc == "/usr/local/cuda/bin/nvcc"
    assert "release 13.0" in "\n".join(version)


def test_linker_cache_has_the_default_runtime(host):
    assert host.file("/etc/ld.so.conf.d/dlstack-cuda.conf").exists
    assert re.search(r"libcudart\.so\.13 .*=> /usr/local/cuda/lib64/", host.check_output("ldconfig -p"))


def test_cudnn_version_read_from_its_header(host):
    if not _is_debian12(host):
        pytest.skip("cuDNN (577 MB wheel) is installed on the Debian 12 platform only, to keep CI short")
    prefix = "/opt/dlstack/cudnn/9.3-cuda12"
    header = host.file(f"{prefix}/include/cudnn_version.h").content_string
    found = {k: int(v) for k, v in re.findall(r"#define CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)", header)}
    assert found == {"MAJOR": 9, "MINOR": 3, "PATCHLEVEL": 0}
    assert host.file("/etc/ld.so.conf.d/dlstack-cudnn.conf").exists
    assert re.search(rf"libcudnn\.so\.9 .*=> {prefix}/lib/", host.check_output("ldconfig -p"))


def test_check_mode_changes_nothing_on_a_converged_host(check_mode_recap):
    recap = check_mode_recap("-e", "molecule_cuda_default=13.0")
    assert re.search(r"\bchanged=0\b", recap), recap


DRIVER_PACKAGES = ("nvidia-smi", "libcuda1", "libnvidia-ml1")


def _driver_branch(host):
    return "535" if _is_debian12(host) else "550"


@pytest.mark.parametrize("name", DRIVER_PACKAGES)
def test_driver_userspace_from_debian_non_free_is_installed_and_held(host, name):
    pkg = host.package(name)
    assert pkg.is_installed
    assert pkg.version.startswith(_driver_branch(host) + "."), pkg.version
    assert re.search(rf"^{re.escape(name)}(:amd64)?\s+hold$", host.check_output("dpkg --get-selections"), re.MULTILINE)


def test_driver_branch_pinned_and_kept_from_unattended_upgrades(host):
    pref = host.file("/etc/apt/preferences.d/dlstack-nvidia-driver").content_string
    assert f"Pin: version {_driver_branch(host)}.*" in pref
    assert "Pin-Priority: 1001" in pref
    assert "^nvidia-" in host.check_output("apt-config dump Unattended-Upgrade::Package-Blacklist")


def test_non_free_components_added_without_touching_the_mirror(host):
    sources = host.file("/etc/apt/sources.list.d/debian.sources").content_string
    assert "Components: main contrib non-free non-free-firmware" in sources
    assert "URIs: " in sources


def test_driver_libraries_are_found_and_nvidia_smi_reports_no_driver(host):
    libs = host.check_output("ldconfig -p")
    assert "libcuda.so.1" in libs
    assert "libnvidia-ml.so.1" in libs
    smi = host.run("nvidia-smi")
    assert smi.rc == 255
    assert "Failed to initialize NVML" in smi.stdout + smi.stderr


def test_container_gets_no_kernel_module_pieces(host):
    assert not host.package("nvidia-kernel-dkms").is_installed
    assert not host.package("dkms").is_installed
    assert not host.file("/etc/modprobe.d/dlstack-blacklist-nouveau.conf").exists


def test_daemon_json_merged_without_losing_other_keys(host):
    daemon = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert daemon["log-driver"] == "json-file"
    assert daemon["log-opts"] == {"max-size": "10m"}
    assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"
    assert daemon["default-runtime"] == "nvidia"
    assert not host.file("/etc/cdi/nvidia.yaml").exists


def test_gpu_info_with_the_driver_userspace_and_no_driver_loaded(host):
    """gpu_info succeeds with no GPUs and says why: nvidia-smi is installed but no kernel driver answers."""
    result = host.ansible("gpulab.dlstack.gpu_info", check=False)
    assert result["gpus"] == []
    assert "No NVIDIA driver is loaded or reachable (nvidia-smi rc=255" in result["reason"], result["reason"]
    assert result["driver_library_mismatch"] is False
