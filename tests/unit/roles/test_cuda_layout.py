"""The shell helpers and data tables of the cuda_toolkit, cudnn and tensorrt roles.

The helpers lay out NVIDIA's wheels as toolkit prefixes and read versions back from headers; they run
here against small trees shaped like the real wheels and archives (nvidia-cuda-nvcc-cu12 12.4 ships
ptxas, libnvvm and libdevice but no nvcc; CUDA 13 wheels share one nvidia/cu13 prefix; TensorRT 10
headers define NV_TENSORRT_MAJOR through TRT_MAJOR_ENTERPRISE). The data tests keep each role's
argument_specs, defaults and version tables consistent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
OUR_ROLES = ("cuda_toolkit", "cudnn", "tensorrt")

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="the role helpers are POSIX shell scripts")


def _script(role: str, name: str) -> Path:
    return ROLES / role / "files" / name


def _run(role: str, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(_script(role, name)), *args], capture_output=True, text=True, check=False)


def _write(path: Path, text: str = "", mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _yaml(role: str, rel: str) -> Any:
    return yaml.safe_load((ROLES / role / rel).read_text())


def _fake_cu12_wheels(root: Path) -> None:
    _write(root / "nvidia/__init__.py")
    _write(root / "nvidia/cuda_nvcc/__init__.py")
    _write(
        root / "nvidia/cuda_nvcc/bin/ptxas",
        "#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n",
        0o755,
    )
    _write(root / "nvidia/cuda_nvcc/include/__init__.py")
    _write(root / "nvidia/cuda_nvcc/include/crt/host_config.h", "/* crt */\n")
    _write(root / "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc", "bc")
    _write(root / "nvidia/cuda_runtime/include/cuda.h", "#define CUDA_VERSION 12040\n")
    _write(root / "nvidia/cuda_runtime/lib/__init__.py")
    _write(root / "nvidia/cuda_runtime/lib/libcudart.so.12", "elf")


def test_wheel_layout_builds_a_toolkit_prefix(tmp_path: Path) -> None:
    wheels, prefix = tmp_path / "wheels", tmp_path / "cuda-12.4"
    _fake_cu12_wheels(wheels)
    _write(prefix / "stale-file", "left over from an older layout")

    result = _run("cuda_toolkit", "dlstack-wheel-layout.sh", str(wheels), str(prefix), ".dlstack-layout-abc")

    assert result.returncode == 0, result.stderr
    assert (prefix / "bin/ptxas").is_symlink()
    assert (prefix / "bin/ptxas").resolve() == (wheels / "nvidia/cuda_nvcc/bin/ptxas").resolve()
    assert (prefix / "include/cuda.h").read_text() == "#define CUDA_VERSION 12040\n"
    assert (prefix / "include/crt/host_config.h").exists()
    assert (prefix / "nvvm/libdevice/libdevice.10.bc").exists()
    assert (prefix / "lib64/libcudart.so").is_symlink()
    assert str((prefix / "lib64/libcudart.so").readlink()) == "libcudart.so.12"
    assert str((prefix / "lib").readlink()) == "lib64"
    assert not list(prefix.rglob("__init__.py"))
    assert not (prefix / "stale-file").exists()
    assert (prefix / ".dlstack-layout-abc").exists()
    assert (prefix / ".dlstack-source-pip").exists()
    assert not (tmp_path / "cuda-12.4.dlstack-new").exists()


def test_wheel_layout_fails_without_wheels(tmp_path: Path) -> None:
    result = _run("cuda_toolkit", "dlstack-wheel-layout.sh", str(tmp_path / "none"), str(tmp_path / "p"), "m")
    assert result.returncode != 0
    assert "no wheel components" in result.stderr
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    "case",
    [
        {"tool": "nvcc", "release": "13.0", "cuda_h": "13000", "version_json": ""},
        {"tool": "ptxas", "release": "12.4", "cuda_h": "12040", "version_json": ""},
        {"tool": "nvcc", "release": "12.2", "cuda_h": "", "version_json": "12.2.2"},
    ],
)
def test_cuda_probe_reads_tool_header_and_version_json(tmp_path: Path, case: dict[str, str]) -> None:
    prefix = tmp_path / "cuda-x"
    release = case["release"]
    _write(
        prefix / "bin" / case["tool"],
        f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.1'\n",
        0o755,
    )
    if case["cuda_h"]:
        _write(prefix / "include/cuda.h", f"#define CUDA_VERSION {case['cuda_h']}\n")
    if case["version_json"]:
        _write(
            prefix / "version.json",
            json.dumps({"cuda": {"name": "CUDA SDK", "version": case["version_json"]}}, indent=2),
        )

    result = _run("cuda_toolkit", "dlstack-cuda-probe.sh", str(tmp_path), "x", "missing")

    assert result.returncode == 0, result.stderr
    found, missing = json.loads(result.stdout)
    assert {key: found[key] for key in case} == case
    assert found["exists"] is True
    assert missing == {
        "version": "missing",
        "exists": False,
        "tool": "",
        "release": "",
        "cuda_h": "",
        "version_json": "",
    }


def test_cudnn_layout_and_probe(tmp_path: Path) -> None:
    wheel, prefix = tmp_path / "9.3-cuda12.wheel", tmp_path / "9.3-cuda12"
    _write(wheel / "nvidia/cudnn/include/__init__.py")
    _write(
        wheel / "nvidia/cudnn/include/cudnn_version.h",
        "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 3\n#define CUDNN_PATCHLEVEL 0\n",
    )
    _write(wheel / "nvidia/cudnn/lib/libcudnn.so.9", "elf")

    layout = _run("cudnn", "dlstack-cudnn-layout.sh", str(wheel), str(prefix), ".dlstack-layout-x")
    probe = _run("cudnn", "dlstack-cudnn-probe.sh", str(prefix))

    assert layout.returncode == 0, layout.stderr
    assert str((prefix / "lib/libcudnn.so").readlink()) == "libcudnn.so.9"
    assert not (prefix / "include/__init__.py").exists()
    assert json.loads(probe.stdout) == {
        "exists": True,
        "header": f"{prefix}/include/cudnn_version.h",
        "major": "9",
        "minor": "3",
        "patch": "0",
        "library": True,
    }


def test_cudnn_probe_without_library(tmp_path: Path) -> None:
    _write(
        tmp_path / "include/cudnn_version.h",
        "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n",
    )
    found = json.loads(_run("cudnn", "dlstack-cudnn-probe.sh", str(tmp_path)).stdout)
    assert (found["major"], found["minor"], found["patch"], found["library"]) == ("8", "9", "7", False)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            "#define TRT_MAJOR_ENTERPRISE 10\n#define TRT_MINOR_ENTERPRISE 3\n#define TRT_PATCH_ENTERPRISE 0\n"
            "#define TRT_BUILD_ENTERPRISE 26\n"
            "#define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE //!< TensorRT major version.\n"
            "#define NV_TENSORRT_MINOR TRT_MINOR_ENTERPRISE //!< TensorRT minor version.\n"
            "#define NV_TENSORRT_PATCH TRT_PATCH_ENTERPRISE //!< TensorRT patch version.\n"
            "#define NV_TENSORRT_BUILD TRT_BUILD_ENTERPRISE //!< TensorRT build number.\n",
            "10.3.0.26",
        ),
        (
            "#define NV_TENSORRT_MAJOR 8 //!< TensorRT major version.\n#define NV_TENSORRT_MINOR 6\n"
            "#define NV_TENSORRT_PATCH 1\n#define NV_TENSORRT_BUILD 6\n",
            "8.6.1.6",
        ),
    ],
)
def test_tensorrt_probe_reads_nvinferversion(tmp_path: Path, header: str, expected: str) -> None:
    prefix = tmp_path / "trt"
    _write(prefix / "include/NvInferVersion.h", header)
    _write(prefix / f"lib/libnvinfer.so.{expected.split('.', maxsplit=1)[0]}", "elf")
    found = json.loads(_run("tensorrt", "dlstack-tensorrt-probe.sh", str(prefix), str(tmp_path / "none")).stdout)
    assert found["version"] == expected
    assert found["library"] is True


def test_tensorrt_probe_falls_back_to_wheel_metadata(tmp_path: Path) -> None:
    wheel = tmp_path / "w"
    (wheel / "tensorrt_cu12_libs-10.3.0.dist-info").mkdir(parents=True)
    found = json.loads(_run("tensorrt", "dlstack-tensorrt-probe.sh", str(tmp_path / "p"), str(wheel)).stdout)
    assert (found["version"], found["exists"], found["library"]) == ("10.3.0", False, False)


@pytest.mark.parametrize("role", OUR_ROLES)
def test_argument_specs_match_defaults(role: str) -> None:
    defaults = _yaml(role, "defaults/main.yml")
    options = _yaml(role, "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert spec["default"] == defaults[name], name
        assert spec["version_added"] == "0.1.0", name
        assert name.startswith(f"{role}_"), name


def test_cuda_version_tables() -> None:
    data = _yaml("cuda_toolkit", "vars/main.yml")
    known = data["__cuda_toolkit_known_versions"]
    assert "12.7" not in known
    assert set(data["__cuda_toolkit_pip_versions"]) <= set(known)
    assert _yaml("cuda_toolkit", "vars/Debian-12.yml")["__cuda_toolkit_distro_version"] == "11.8"
    assert _yaml("cuda_toolkit", "vars/Debian-13.yml")["__cuda_toolkit_distro_version"] == "12.4"
    for distro in ("Debian-12", "Debian-13", "Ubuntu-22", "Ubuntu-24"):
        assert _yaml("cuda_toolkit", f"vars/{distro}.yml")["__cuda_toolkit_distro_version"] in known


@pytest.mark.parametrize(
    ("role", "table"), [("cudnn", "__cudnn_cuda_support"), ("tensorrt", "__tensorrt_cuda_support")]
)
def test_support_ranges_do_not_overlap(role: str, table: str) -> None:
    rows = sorted(_yaml(role, "vars/main.yml")[table], key=lambda row: row["from"])
    for row in rows:
        assert row["from"] <= row["to"]
        assert row["cuda"]
    for left, right in zip(rows, rows[1:]):
        assert left["to"] < right["from"]


def test_tensorrt_8_6_pairs_only_with_cuda_11_and_12_0_12_1() -> None:
    rows = _yaml("tensorrt", "vars/main.yml")["__tensorrt_cuda_support"]
    row = next(r for r in rows if r["from"] <= 806 <= r["to"])
    assert row["cuda"] == ["11", "12.0", "12.1"]
