"""Assertions on hosts converged by the cuda_distro scenario: Debian's nvidia-cuda-toolkit through the roles."""

from __future__ import annotations

import json
import re

import pytest

# Per platform: the CUDA release its non-free component carries and the runtime's soname.
RELEASES = {"debian12": ("11.8", "libcudart.so.11.0"), "debian13": ("12.4", "libcudart.so.12")}

PROBE = r"""
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  int count = -1;
  cudaError_t err = cudaGetDeviceCount(&count);
  std::printf("CUDART_VERSION %d count %d %s\n", CUDART_VERSION, count, cudaGetErrorName(err));
  return 0;
}
"""


@pytest.fixture
def release(host) -> tuple[str, str]:
    return next(value for key, value in RELEASES.items() if key in host.backend.get_hostname())


def test_toolkit_installed_from_debian_non_free(host, release):
    version = release[0]
    pkg = host.package("nvidia-cuda-toolkit")
    assert pkg.is_installed
    assert pkg.version.startswith(version + "."), pkg.version
    policy = host.check_output("apt-cache policy nvidia-cuda-toolkit")
    assert re.search(r"/debian \S+/non-free amd64 Packages", policy), policy


def test_non_free_enabled_by_the_driver_role_keeping_the_mirror(host):
    sources = host.file("/etc/apt/sources.list.d/debian.sources").content_string
    assert "Components: main contrib non-free non-free-firmware" in sources
    assert "URIs: " in sources


def test_toolkit_laid_out_under_usr_local(host, release):
    version, soname = release
    prefix = f"/usr/local/cuda-{version}"
    assert host.file(prefix).is_directory
    assert host.file(f"{prefix}/bin/nvcc").mode & 0o111
    assert host.file(f"{prefix}/include/cuda_runtime.h").is_file
    major, minor = version.split(".")
    header = host.file(f"{prefix}/include/cuda.h").content_string
    assert re.search(rf"#define\s+CUDA_VERSION\s+{int(major) * 1000 + int(minor) * 10}\b", header)
    assert host.file(f"{prefix}/lib64/libcudart.so").exists
    assert host.file(f"{prefix}/lib64/{soname}").exists
    assert host.check_output(f"readlink {prefix}/lib") == "lib64"


def test_nvcc_from_the_toolkit_path_reports_the_release(host, release):
    version = release[0]
    out = host.check_output(f"/usr/local/cuda-{version}/bin/nvcc --version")
    assert f"release {version}," in out, out


def test_cuda_alternative_points_at_the_toolkit(host, release):
    version = release[0]
    assert host.file("/usr/local/cuda").linked_to == f"/usr/local/cuda-{version}"
    query = host.check_output("update-alternatives --query cuda")
    assert f"Value: /usr/local/cuda-{version}" in query


def test_login_shell_gets_path_and_cuda_home(host, release):
    version = release[0]
    out = host.check_output("bash -lc 'echo $CUDA_HOME; echo $CUDA_PATH; command -v nvcc; nvcc --version'")
    home, path, nvcc, *rest = out.splitlines()
    assert home == path == "/usr/local/cuda"
    assert nvcc == "/usr/local/cuda/bin/nvcc"
    assert f"release {version}," in "\n".join(rest)


def test_dynamic_linker_finds_the_runtime(host, release):
    soname = release[1]
    conf = host.file("/etc/ld.so.conf.d/dlstack-cuda.conf").content_string
    assert "/usr/local/cuda/lib64" in conf
    assert re.search(
        rf"{re.escape(soname)} .*=> /usr/local/cuda/lib64/{re.escape(soname)}$", host.check_output("ldconfig -p"), re.M
    )


def test_nvcc_builds_a_program_against_the_runtime(host, release):
    """A login shell's nvcc builds a program on the shared runtime; without a GPU it runs and finds no device."""
    version, soname = release
    work = "/root/cuda-probe"  # /tmp is a noexec tmpfs in these containers
    host.run(f"rm -rf {work} && mkdir {work}")
    assert host.run(f"cat > {work}/probe.cu <<'EOF'\n{PROBE}EOF").rc == 0
    build = host.run(f"bash -lc 'cd {work} && nvcc -cudart shared -o probe probe.cu'")
    assert build.rc == 0, build.stdout + build.stderr
    assert f"{soname} => /usr/local/cuda/lib64/{soname}" in host.check_output(f"ldd {work}/probe")
    run = host.run(f"{work}/probe")
    major, minor = version.split(".")
    assert run.rc == 0, run.stdout + run.stderr
    assert f"CUDART_VERSION {int(major) * 1000 + int(minor) * 10} count " in run.stdout, run.stdout
    assert "cudaSuccess" not in run.stdout, run.stdout


def test_marker_records_the_distro_source(host, release):
    version = release[0]
    marker = host.file(f"/usr/local/cuda-{version}/.dlstack-source-distro")
    assert marker.is_file
    assert f"installed CUDA {version} from distro" in marker.content_string
    assert not host.file(f"/usr/local/cuda-{version}/.dlstack-source-pip").exists


def test_check_mode_changes_nothing_on_a_converged_host(check_mode_recap):
    recap = check_mode_recap()
    assert re.search(r"\bchanged=0\b", recap), recap


def test_version_the_distribution_does_not_carry_fails_before_any_change(host, release, scenario_playbook):
    version = release[0]
    proc = scenario_playbook("bad_input.yml", "-e", "molecule_bad_cuda_version=12.6")
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert "does not carry CUDA 12.6" in out, out[-3000:]
    assert f'request "{version}" in cuda_toolkit_versions' in out, out[-3000:]
    assert re.search(r"\bchanged=0\b.*\bfailed=1\b", out), out[-3000:]
    assert not host.file("/usr/local/cuda-12.6").exists
    assert host.file("/usr/local/cuda").linked_to == f"/usr/local/cuda-{version}"


# Environment modules: Lmod on Debian 12 (with a second toolkit, CUDA 12.5 from NVIDIA's wheels), environment-modules
# on Debian 13.
MODULES = {
    "debian12": ("lmod", "/etc/lmod/modules", ".lua"),
    "debian13": ("environment-modules", "/etc/environment-modules/modules", ""),
}


@pytest.fixture
def modules(host) -> tuple[str, str, str]:
    return next(value for key, value in MODULES.items() if key in host.backend.get_hostname())


def _login(host, script: str):
    return host.run("bash -lc " + "'" + script.replace("'", "'\\''") + "'")


def test_module_system_installed_with_a_modulefile_per_toolkit(host, release, modules):
    package, folder, suffix = modules
    assert host.package(package).is_installed
    text = host.file(f"{folder}/cuda/{release[0]}{suffix}").content_string
    assert "Managed by gpulab.dlstack (env_modules)" in text
    assert ('family("cuda")' if suffix else "conflict cuda") in text, text


def test_module_load_cuda_sets_nvcc_and_cuda_home(host, release):
    version = release[0]
    run = _login(
        host,
        f"module load cuda/{version} && echo $CUDA_HOME && command -v nvcc && nvcc --version && echo $LD_LIBRARY_PATH",
    )
    assert run.rc == 0, run.stdout + run.stderr
    home, nvcc, *rest = run.stdout.splitlines()
    assert home == f"/usr/local/cuda-{version}"
    assert nvcc == f"/usr/local/cuda-{version}/bin/nvcc"
    assert f"release {version}," in "\n".join(rest)
    assert rest[-1].split(":")[0] == f"/usr/local/cuda-{version}/lib64"


def test_second_cuda_module_swaps_under_lmod(host, release, modules):
    if modules[0] != "lmod":
        pytest.skip("Lmod platform only (Debian 12); environment-modules is checked by the conflict test")
    distro = release[0]
    run = _login(
        host,
        f"module load cuda/{distro} && module load cuda/12.5 && echo $CUDA_HOME && command -v ptxas "
        "&& module -t list 2>&1",
    )
    assert run.rc == 0, run.stdout + run.stderr
    home, ptxas, *loaded = run.stdout.splitlines()
    assert home == "/usr/local/cuda-12.5"
    assert ptxas == "/usr/local/cuda-12.5/bin/ptxas"
    assert "cuda/12.5" in loaded and f"cuda/{distro}" not in loaded, loaded
    assert re.search(r"automatically replacing|reloaded with a version change", run.stderr), run.stderr


def test_second_cuda_module_conflicts_under_environment_modules(host, release, modules):
    """Another cuda module (a throwaway one on a private module path) is refused while cuda/X.Y is loaded."""
    if modules[0] != "environment-modules":
        pytest.skip("environment-modules platform only (Debian 13); Lmod is checked by the swap test")
    version = release[0]
    other = "/root/other-modules"
    host.run(
        f"rm -rf {other} && mkdir -p {other}/cuda && printf '#%%Module1.0\\nsetenv CUDA_HOME /nowhere\\n' "
        f"> {other}/cuda/0.0"
    )
    run = _login(
        host,
        f"module use {other}; module load cuda/{version} && module load cuda/0.0; "
        "echo rc=$? $CUDA_HOME; module -t list 2>&1",
    )
    assert f"rc=1 /usr/local/cuda-{version}" in run.stdout, run.stdout + run.stderr
    assert "conflict" in (run.stdout + run.stderr).lower()
    assert "cuda/0.0" not in run.stdout.split("rc=1", 1)[1]


# The fabric manager on the stand-in HGX H100 bus: the stand-in packages (tests/standins/fake_fabricmanager.yml) hold
# one version at the driver's (the libcuda1 Debian's non-free offers) and a newer decoy.


@pytest.fixture
def driver(host) -> str:
    version = host.check_output("dpkg-query -W -f='${Version}' libcuda1")
    return re.sub(r"^(\d+:)?([0-9.]+)-.*$", r"\2", version)


def test_fabric_manager_installed_at_the_driver_version_pinned_and_held(host, driver):
    name = f"nvidia-fabricmanager-{driver.split('.')[0]}"
    pkg = host.package(name)
    assert pkg.is_installed and pkg.version == f"{driver}-1", pkg.version
    assert host.check_output(f"dpkg-query -W -f='${{Status}}' {name}").startswith("hold ")
    policy = host.check_output(f"apt-cache policy {name}")
    decoy = f"{driver.split('.')[0]}.999.01-1"
    assert re.search(rf"{re.escape(decoy)} -1\b", policy), policy
    assert re.search(rf"\*\*\* {re.escape(driver)}-1 1001\b", policy), policy


def test_fabric_manager_enabled_but_waits_for_the_kernel_module(host):
    service = host.service("nvidia-fabricmanager")
    assert service.is_enabled
    assert not service.is_running, "a container has no NVIDIA kernel module, so the role must not start it"


def test_fabric_manager_check_fails_when_not_running_and_passes_when_running(host, scenario_playbook):
    host.run("systemctl stop nvidia-fabricmanager")
    proc = scenario_playbook("fabric_check.yml")
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = json.loads(host.file("/root/fabric_check.json").content_string)
    assert result["nvswitch"] and result["generation"] == 3 and len(result["switches"]) == 4, result
    assert result["verdict"] == "fail", result
    assert "nvidia-fabricmanager is inactive on an NVSwitch system" in result["reason"], result["reason"]
    assert "error 802" in result["reason"]
    assert host.run("systemctl start nvidia-fabricmanager").rc == 0
    try:
        proc = scenario_playbook("fabric_check.yml")
        assert proc.returncode == 0, proc.stdout[-3000:]
        result = json.loads(host.file("/root/fabric_check.json").content_string)
        assert result["verdict"] == "pass" and result["service_state"] == "active", result
    finally:
        host.run("systemctl stop nvidia-fabricmanager")


# MIG through the optional nvidia_mig role, at the nvidia-smi boundary (tests/standins/fake_nvidia_smi_mig.py keeps the
# GPUs' state in /opt/dlstack-standin/smi.json and records its calls).
SMI_STATE = "/opt/dlstack-standin/smi.json"


def _smi_state(host) -> dict:
    return json.loads(host.file(SMI_STATE).content_string)


def test_mig_mode_switched_on_pending_a_reset_and_the_boot_unit_installed(host):
    state = _smi_state(host)
    assert [g["mig_pending"] for g in state["gpus"]] == ["Enabled", "Enabled", "N/A"], state["gpus"]
    assert [c for c in state["calls"] if "-mig" in c] == [["-i", "0", "-mig", "1"], ["-i", "1", "-mig", "1"]]
    unit = host.file("/etc/systemd/system/dlstack-mig.service").content_string
    assert "Before=nvidia-persistenced.service nvidia-fabricmanager.service" in unit
    assert host.service("dlstack-mig.service").is_enabled
    assert '"NVIDIA A100-SXM4-80GB"' in host.file("/etc/dlstack/mig-layout.json").content_string


def test_the_boot_unit_builds_the_instances_after_the_reset(host):
    state = _smi_state(host)
    for gpu in state["gpus"][:2]:
        gpu["mig_current"] = "Enabled"  # what the reset or reboot does
    host.run(f"cat > {SMI_STATE} <<'EOF'\n{json.dumps(state)}\nEOF")
    run = host.run("systemctl restart dlstack-mig.service")
    assert run.rc == 0, host.run("journalctl -u dlstack-mig.service --no-pager | tail -20").stdout
    state = _smi_state(host)
    for gpu in ("0", "1"):
        assert [i["profile"] for i in state["instances"][gpu]] == ["3g.40gb", "2g.20gb", "1g.10gb"], state["instances"]
    assert ["mig", "-cgi", "9,14,19", "-C", "-i", "0"] in state["calls"]
    assert "2" not in state["instances"], "the L40S is left alone"
    calls = len(state["calls"])
    assert host.run("systemctl restart dlstack-mig.service").rc == 0
    after = _smi_state(host)["calls"][calls:]
    assert after and not any("-cgi" in c or "-dgi" in c for c in after), (
        "a second boot with the layout in place changes nothing"
    )
