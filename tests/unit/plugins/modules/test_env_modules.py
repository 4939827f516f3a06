"""env_modules: what it finds on a laid-out tree, the modulefiles it renders, and what it writes and removes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _envmodules
from ansible_collections.gpulab.dlstack.plugins.modules import env_modules

Runner = Callable[..., Tuple[bool, Dict[str, Any]]]


def _tree(tmp_path: Path) -> Dict[str, str]:
    for sub in ("cuda-11.8/bin", "cuda-11.8/lib64", "cuda-11.8/include", "cuda-12.4/bin", "cuda-12.4/lib64"):
        (tmp_path / "local" / sub).mkdir(parents=True)
    (tmp_path / "local" / "cuda").mkdir()  # the alternative's link target name, not a versioned toolkit
    (tmp_path / "local" / "cuda-x").mkdir()
    for sub in ("9.3-cuda12/lib", "9.3-cuda12/include", "notes"):
        (tmp_path / "cudnn" / sub).mkdir(parents=True)
    venv = tmp_path / "envs" / "default"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "python3.11" / "site-packages" / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    conda = tmp_path / "envs" / "tf"
    (conda / "bin").mkdir(parents=True)
    (conda / "bin" / "python").write_text("")
    (conda / "conda-meta").mkdir()
    (tmp_path / "envs" / "broken").mkdir()
    return {
        "cuda_root": str(tmp_path / "local"),
        "cudnn_root": str(tmp_path / "cudnn"),
        "tensorrt_root": str(tmp_path / "tensorrt"),
        "env_root": str(tmp_path / "envs"),
    }


def test_scan_finds_toolkits_prefixes_and_environments(tmp_path: Path) -> None:
    roots = _tree(tmp_path)
    found = _envmodules.scan(**roots, kinds=_envmodules.KINDS)
    assert [m.name for m in found] == ["cuda/11.8", "cuda/12.4", "cudnn/9.3-cuda12", "dlenv/default", "dlenv/tf"]
    cuda = found[0]
    assert dict(cuda.setenv) == {
        "CUDA_HOME": roots["cuda_root"] + "/cuda-11.8",
        "CUDA_PATH": roots["cuda_root"] + "/cuda-11.8",
    }
    assert dict(found[1].prepend) == {
        "PATH": (roots["cuda_root"] + "/cuda-12.4/bin",),
        "LD_LIBRARY_PATH": (roots["cuda_root"] + "/cuda-12.4/lib64",),
    }
    venv = found[3]
    assert dict(venv.setenv) == {"VIRTUAL_ENV": roots["env_root"] + "/default"}
    assert dict(venv.prepend)["LD_LIBRARY_PATH"][0].endswith("site-packages/nvidia/cudnn/lib")
    assert dict(found[4].setenv)["CONDA_PREFIX"] == roots["env_root"] + "/tf"
    assert [m.name for m in _envmodules.scan(**roots, kinds=("cudnn",))] == ["cudnn/9.3-cuda12"]


def test_lua_uses_a_family_and_tcl_a_conflict(tmp_path: Path) -> None:
    module = _envmodules.cuda_modules(_tree(tmp_path)["cuda_root"])[0]
    lua = _envmodules.render(module, "lua")
    assert 'family("cuda")' in lua and lua.startswith("-- " + _envmodules.MARKER)
    assert f'setenv("CUDA_HOME", "{module.prefix}")' in lua
    assert f'prepend_path("PATH", "{module.prefix}/bin")' in lua
    tcl = _envmodules.render(module, "tcl")
    assert tcl.startswith("#%Module1.0\n") and "\nconflict cuda\n" in tcl
    assert f"setenv CUDA_HOME {{{module.prefix}}}" in tcl
    assert f"prepend-path LD_LIBRARY_PATH {{{module.prefix}/lib64}}" in tcl
    with pytest.raises(ValueError, match="syntax 'yaml'"):
        _envmodules.render(module, "yaml")


def test_prepend_keeps_the_first_folder_first() -> None:
    module = _envmodules.Module("dlenv", "x", "/e", "d", (), (("LD_LIBRARY_PATH", ("/a", "/b")),))
    text = _envmodules.render(module, "lua")
    assert text.index('"/b"') < text.index('"/a"'), "prepend_path of /a last puts it first"


@pytest.mark.parametrize("syntax, name", [("lua", "cuda/11.8.lua"), ("tcl", "cuda/11.8")])
def test_writes_then_is_idempotent_then_removes_what_went_away(
    run_module: Runner, tmp_path: Path, syntax: str, name: str
) -> None:
    roots = _tree(tmp_path)
    dest = tmp_path / "modules"
    args = {"path": str(dest), "syntax": syntax, **roots}
    failed, result = run_module(env_modules.main, args, check_mode=True)
    assert not failed and result["changed"] and not dest.exists(), result
    failed, result = run_module(env_modules.main, args)
    assert not failed and result["changed"] and name in result["written"], result
    assert (dest / name).read_text() == _envmodules.render(_envmodules.cuda_modules(roots["cuda_root"])[0], syntax)
    failed, result = run_module(env_modules.main, args)
    assert not failed and not result["changed"] and result["written"] == [] and result["removed"] == [], result
    (tmp_path / "local" / "cuda-11.8" / "bin").rename(tmp_path / "local" / "gone")
    for sub in ("lib64", "include"):
        (tmp_path / "local" / "cuda-11.8" / sub).rmdir()
    (tmp_path / "local" / "cuda-11.8").rmdir()
    failed, result = run_module(env_modules.main, args)
    assert not failed and result["removed"] == [name] and not (dest / name).exists(), result


def test_refuses_to_overwrite_a_file_it_did_not_write(run_module: Runner, tmp_path: Path) -> None:
    roots = _tree(tmp_path)
    dest = tmp_path / "modules"
    (dest / "cuda").mkdir(parents=True)
    (dest / "cuda" / "11.8.lua").write_text('setenv("CUDA_HOME", "/site/cuda")\n')
    (dest / "cuda" / "10.2.lua").write_text("-- the site's own module\n")
    failed, result = run_module(env_modules.main, {"path": str(dest), **roots})
    assert failed and "was not written by gpulab.dlstack" in result["msg"] and "env_modules_path" in result["msg"]
    assert (dest / "cuda" / "11.8.lua").read_text() == 'setenv("CUDA_HOME", "/site/cuda")\n'
    (dest / "cuda" / "11.8.lua").unlink()
    failed, result = run_module(env_modules.main, {"path": str(dest), **roots})
    assert not failed and (dest / "cuda" / "10.2.lua").exists(), "a hand-written module is left alone"
