"""The library doctor: judging (pure), activation and kernel env (real bash), and the whole module over fake
library trees (small shared libraries built here with the C compiler, laid out like NVIDIA's wheels)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _libdoctor as d
from ansible_collections.gpulab.dlstack.plugins.modules import kernel_spec, lib_doctor

Runner = Callable[..., Any]
GPU_HOST = {"required": True, "explicit": False, "basis": "The host's profile is gpu, so its GPU checks must run."}
CPU_HOST = {"required": False, "explicit": False, "basis": "The host's profile is cpu."}
STACK = {"cuda": "12.5", "cudnn": "9.3.0", "tensorrt": None}
TF = {"tensorflow": {"version": "2.21.0", "cuda": "12.5.1", "cudnn": "9", "tensorrt": None}}


def judge(lib: str, found: Dict[str, Any], **given: Any) -> Dict[str, Any]:
    args: Dict[str, Any] = {
        "stack": STACK,
        "driver_cuda": None,
        "driver_version": "535.261.03",
        "requirement": GPU_HOST,
        "frameworks": TF,
    }
    args.update(given)
    return d.judge_library(lib, found, **args)


def entry(soname: str, version: str | None, **extra: Any) -> Dict[str, Any]:
    found = {"wanted": soname, "why": "test", "path": f"/x/{soname}", "via": "ld.so.cache", "version": version}
    found.update(extra)
    return found


@pytest.mark.parametrize(
    ("lib", "found", "driver_cuda", "frameworks", "status", "words"),
    [
        ("libcudart", entry("libcudart.so.12", "12.5"), "12.8", TF, "pass", "libcudart.so.12 12.5 from"),
        ("libcudart", entry("libcudart.so.12", "12.6"), "12.8", TF, "warn", "differs from the resolved stack's CUDA"),
        ("libcudart", entry("libcudart.so.13", "13.0"), "13.0", {}, "fail", "is CUDA 13, the resolved stack is CUDA"),
        ("libcudart", entry("libcudart.so.12", "12.5"), "12.2", TF, "warn", "minor-version compatibility"),
        ("libcudart", entry("libcudart.so.13", "13.5"), "12.2", {}, "fail", "CUDA 13 needs driver >= 580"),
        ("libcudnn", entry("libcudnn.so.8", "8.9.0"), None, TF, "fail", "Loaded runtime cuDNN 8.9.0 but tensorflow"),
        ("libcudnn", entry("libcudnn.so.9", "9.1.0"), None, {}, "warn", "differs from the resolved stack's cuDNN"),
        ("libcudnn", entry("libcudnn.so.9", "9.3.0"), None, TF, "pass", "9.3.0 from"),
        ("libcublas", entry("libcublas.so.13", "13.1.0"), None, {}, "fail", "belongs to CUDA 13"),
        ("libcudnn", entry("libcudnn.so.9", None, path=None), None, TF, "fail", "libcudnn.so.9 would not load"),
        ("libcudnn", entry("libcudnn.so.9", None, load_error="libcublasLt.so.12"), None, TF, "fail", "does not load"),
        ("libnvinfer", entry(None, None, path=None), None, {}, "skip", "Not needed"),  # type: ignore[arg-type]
    ],
)
def test_judge_library(lib, found, driver_cuda, frameworks, status, words) -> None:  # noqa: PLR0917
    judged = judge(lib, found, driver_cuda=driver_cuda, frameworks=frameworks)
    assert judged["status"] == status, judged
    assert words in judged["reason"], judged["reason"]
    if status in ("warn", "fail"):
        assert judged["fix"].endswith("."), judged


def test_a_runtime_beyond_the_driver_below_the_compat_floor_fails() -> None:
    judged = judge("libcudart", entry("libcudart.so.12", "12.5"), driver_cuda="12.0", driver_version="520.61.05")
    assert judged["status"] == "fail"
    assert "525.60.13" in judged["reason"]


@pytest.mark.parametrize(("requirement", "status"), [(GPU_HOST, "fail"), (CPU_HOST, "skip")])
def test_missing_driver_library_fails_only_where_gpus_must_be(requirement, status) -> None:
    judged = judge("libcuda", entry("libcuda.so.1", None, path=None), requirement=requirement)
    assert judged["status"] == status
    assert "libcuda.so.1 would not load" in judged["reason"]
    assert "nvidia_driver role" in judged["fix"]


def test_a_shadowed_wheel_of_another_version_warns() -> None:
    wheel = {
        "path": "/env/site/nvidia/cudnn/lib/libcudnn.so.9",
        "via": "RUNPATH",
        "wheel": "nvidia-cudnn-cu12 9.3.0.75",
    }
    found = entry("libcudnn.so.9", "9.1.0", via="LD_LIBRARY_PATH", shadowed=[wheel])
    judged = judge("libcudnn", found, stack={"cudnn": "9.1.0"}, frameworks={})
    assert judged["status"] == "warn"
    assert "shadows the environment's wheel nvidia-cudnn-cu12 9.3.0.75" in judged["reason"]


def test_flags_name_environment_library_and_fix() -> None:
    doc = {"libraries": {"libcudart": entry("libcudart.so.13", "13.5")}, "frameworks": {}}
    env = dict(d.judge_environment(doc, STACK, GPU_HOST), name="broken")
    gone = {"name": "gone", "error": "Activating /x failed (rc=3): boom; fix the activation script."}
    flag, failed = d.flags([env, gone])
    assert failed.startswith("gone: Activating /x failed")
    assert flag.startswith("broken: libcudart fail: libcudart 13.5 is CUDA 13") and "Fix: Remove" in flag
    assert env["verdict"] == "fail"


def test_kernel_env_keeps_the_servers_path_after_the_environments() -> None:
    changes = {"PATH": f"/e/bin:{d.BASE_PATH}", "VIRTUAL_ENV": "/e", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
    env = d.kernel_env(changes)
    assert env == {"PATH": "/e/bin:${PATH}", "VIRTUAL_ENV": "/e", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
    assert d.expand_kernel_env(env, {"PATH": "/usr/bin"})["PATH"] == "/e/bin:/usr/bin"


def test_read_kernel_refuses_a_spec_without_argv(tmp_path: Path) -> None:
    (tmp_path / "kernel.json").write_text('{"display_name": "x"}')
    spec, error = d.read_kernel(str(tmp_path))
    assert spec is None and "has no argv" in str(error)


# Real trees: a venv whose activation sources a hook, fake CUDA libraries built with the C compiler.

CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc/gcc) to build the fake CUDA libraries")


def build_lib(path: Path, source: str, *flags: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_suffix(".c")
    src.write_text(source)
    subprocess.run([str(CC), "-shared", "-fPIC", "-o", str(path), str(src), *flags], check=True)
    src.unlink()


def fake_dist(site: Path, name: str, version: str, files: list[str]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))


def cudnn_source(value: int) -> str:
    return f"unsigned long cudnnGetVersion(void) {{ return {value}; }}\n"


def rt_source(value: int) -> str:
    return f"int cudaRuntimeGetVersion(int *v) {{ *v = {value}; return 0; }}\n"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """A venv with a fake TensorFlow (build info CUDA 12.5.1 / cuDNN 9, RUNPATH into its wheels), a cuDNN 8 wheel
    where its cuDNN 9 should be, its runtime wheel 12.5, and a hook that puts a CUDA 12.6 runtime first."""
    if CC is None:
        pytest.skip("no C compiler (cc/gcc) to build the fake CUDA libraries")
    root = tmp_path_factory.mktemp("libdoctor")
    env = root / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    purelib = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    site = Path(purelib)
    build_lib(site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12", rt_source(12050))
    fake_dist(site, "nvidia-cuda-runtime-cu12", "12.5.82", ["nvidia/cuda_runtime/lib/libcudart.so.12"])
    # The wrong major where TensorFlow looks for cuDNN 9: the broken part of this environment.
    build_lib(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.8", cudnn_source(8900))
    fake_dist(site, "nvidia-cudnn-cu11", "8.9.0.131", ["nvidia/cudnn/lib/libcudnn.so.8"])
    runpath = "$ORIGIN/../nvidia/cudnn/lib:$ORIGIN/../nvidia/cuda_runtime/lib"
    build_lib(site / "tensorflow" / "libtensorflow_framework.so.2", "int tf(void) { return 0; }\n",
              f"-Wl,-rpath,{runpath}", "-Wl,--enable-new-dtags")  # fmt: skip
    info = site / "tensorflow" / "python" / "platform"
    info.mkdir(parents=True)
    (info / "build_info.py").write_text(
        "import collections\nbuild_info = collections.OrderedDict([('cuda_version', '12.5.1'), "
        "('cudnn_version', '9'), ('is_cuda_build', True), ('is_tensorrt_build', False)])\n"
    )
    fake_dist(site, "tensorflow", "2.21.0", ["tensorflow/python/platform/build_info.py"])
    cuda = root / "cuda-12.6" / "lib64"
    build_lib(cuda / "libcudart.so.12", rt_source(12060))
    hook = env / "etc" / "dlstack" / "tf-env.sh"
    hook.parent.mkdir(parents=True)
    hook.write_text(f'LD_LIBRARY_PATH="{cuda}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"; export LD_LIBRARY_PATH\n')
    with (env / "bin" / "activate").open("a") as handle:
        handle.write(f'\nif [ -f "{hook}" ]; then . "{hook}"; fi\n')
    return {"root": root, "env": env, "site": site, "cuda": cuda}


def run(cmd: list[str]) -> tuple[int, str, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


@needs_cc
def test_activation_reads_what_the_hook_sets(tree: Dict[str, Path]) -> None:
    changes, error = d.activate(run, str(tree["env"]))
    assert error is None and changes is not None
    assert changes["LD_LIBRARY_PATH"] == str(tree["cuda"])
    assert changes["VIRTUAL_ENV"] == str(tree["env"])
    assert changes["PATH"].startswith(f"{tree['env']}/bin:")
    assert "PS1" not in changes and not any(k.startswith("_OLD_VIRTUAL") for k in changes)


def test_a_failing_activation_is_an_error_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "activate").write_text("return 3\n")
    changes, error = d.activate(run, str(tmp_path))
    assert changes is None and "fix the activation script" in str(error)


@needs_cc
def test_module_over_the_env_and_its_kernel(tree: Dict[str, Path], run_module: Runner, tmp_path: Path) -> None:
    kernels = tmp_path / "kernels" / "dlstack-env"
    failed, written = run_module(
        kernel_spec.main, {"env_path": str(tree["env"]), "kernel_dir": str(kernels), "display_name": "Python (env)"}
    )
    assert not failed and written["changed"], written
    assert written["spec"]["env"]["LD_LIBRARY_PATH"] == str(tree["cuda"])
    again = run_module(kernel_spec.main, {"env_path": str(tree["env"]), "kernel_dir": str(kernels)})[1]
    assert again["changed"] is False and again["spec"]["display_name"] == "Python (env)"

    failed, result = run_module(
        lib_doctor.main,
        {"environments": [str(tree["env"])], "kernels": [str(kernels)], "stack": STACK, "profile": "cpu"},
    )
    assert not failed, result
    env, kernel = result["environments"]
    assert (env["kind"], kernel["kind"]) == ("env", "kernel")
    libs = env["libraries"]
    # LD_LIBRARY_PATH (the hook) comes before TensorFlow's RUNPATH: the 12.6 runtime shadows the wheel's 12.5.
    rt = libs["libcudart"]
    assert (rt["path"], rt["via"], rt["version"]) == (str(tree["cuda"] / "libcudart.so.12"), "LD_LIBRARY_PATH", "12.6")
    assert rt["status"] == "warn" and "shadows the environment's wheel nvidia-cuda-runtime-cu12 12.5.82" in rt["reason"]
    dnn = libs["libcudnn"]
    assert dnn["soname"] == "libcudnn.so.9" and dnn["status"] == "fail" and dnn["path"] is None
    assert "Only other majors are present" in dnn["reason"] and "libcudnn.so.8" in dnn["reason"]
    assert "nvidia-cudnn-cu12==9.*" in dnn["fix"]
    assert libs["libcuda"]["status"] in ("skip", "pass")
    assert env["frameworks"]["tensorflow"]["cudnn"] == "9"
    assert any(s["via"] == "RUNPATH of tensorflow/libtensorflow_framework.so.2" for s in env["search"]), env["search"]
    keys = ("soname", "path", "via", "version", "status")
    for lib in ("libcudart", "libcudnn", "libcublas"):
        assert {k: kernel["libraries"][lib][k] for k in keys} == {k: libs[lib][k] for k in keys}, lib
    assert result["verdict"] == "fail"
    assert any(f.startswith("env: libcudnn fail:") for f in result["flags"])


@needs_cc
def test_the_right_cudnn_in_the_wheel_passes(tree: Dict[str, Path], run_module: Runner, tmp_path: Path) -> None:
    good = tmp_path / "good"
    shutil.copytree(tree["env"], good, symlinks=True)
    site = Path(str(tree["site"]).replace(str(tree["env"]), str(good)))
    build_lib(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9", cudnn_source(90300))
    hook = good / "etc" / "dlstack" / "tf-env.sh"
    hook.write_text("")
    activate = (good / "bin" / "activate").read_text().replace(str(tree["env"]), str(good))
    (good / "bin" / "activate").write_text(activate)
    failed, result = run_module(lib_doctor.main, {"environments": [str(good)], "stack": STACK, "profile": "cpu"})
    assert not failed
    libs = result["environments"][0]["libraries"]
    assert (libs["libcudnn"]["status"], libs["libcudnn"]["version"]) == ("pass", "9.3.0"), libs["libcudnn"]
    assert libs["libcudnn"]["wheel"] is None or "cudnn" in libs["libcudnn"]["wheel"]
    assert (libs["libcudart"]["status"], libs["libcudart"]["version"]) == ("pass", "12.5"), libs["libcudart"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"environments": ["relative/env"]}, "environments entry 'relative/env' is not an absolute path"),
        ({"environments": ["/nonexistent/env"]}, "has no bin/python"),
        ({"stack": {"cuda": "twelve"}}, "stack.cuda='twelve' is not a version"),
        ({"timeout": 0}, "timeout=0 is out of range"),
    ],
)
def test_bad_input_is_refused(run_module: Runner, args: Dict[str, Any], words: str) -> None:
    failed, result = run_module(lib_doctor.main, args)
    assert failed and words in result["msg"], result["msg"]


def test_nothing_to_examine_is_a_skip_with_the_reason(run_module: Runner, tmp_path: Path) -> None:
    dest = tmp_path / "out" / "lib_doctor.json"
    args = {"env_root": str(tmp_path), "kernel_root": str(tmp_path), "dest": str(dest)}
    failed, result = run_module(lib_doctor.main, args)
    assert not failed and result["verdict"] == "skip"
    assert "nothing was examined" in result["reason"]
    assert result["changed"] is True and json.loads(dest.read_text())["verdict"] == "skip"


def test_kernel_spec_without_display_name_leaves_a_missing_spec_alone(run_module: Runner, tmp_path: Path) -> None:
    failed, result = run_module(kernel_spec.main, {"env_path": str(tmp_path), "kernel_dir": str(tmp_path / "k")})
    assert not failed and result["changed"] is False and result["spec"] is None
    assert not os.path.exists(tmp_path / "k")


def test_kernel_spec_check_mode_writes_nothing(run_module: Runner, tmp_path: Path) -> None:
    args = {"env_path": str(tmp_path), "kernel_dir": str(tmp_path / "k"), "display_name": "x"}
    failed, result = run_module(kernel_spec.main, args, check_mode=True)
    assert not failed and result["changed"] is True
    assert not os.path.exists(tmp_path / "k")
    assert json.loads(d.render_kernel(result["spec"]))["argv"][0] == f"{tmp_path}/bin/python"
