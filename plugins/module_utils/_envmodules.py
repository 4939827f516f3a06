# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Environment modules (Lmod or environment-modules) for what the collection installed side by side.

``scan`` finds the CUDA toolkits (``<cuda_root>/cuda-X.Y``), cuDNN and TensorRT prefixes
(``<root>/<version>-cuda<major>``) and managed Python environments (``<env_root>/<name>``); ``render`` writes one
modulefile per find, Lua for Lmod and Tcl for environment-modules. Modules of one kind exclude each other: an Lmod
``family`` (loading a second one swaps) and a Tcl ``conflict`` (loading a second one fails).
"""

from __future__ import annotations

import glob
import os
import re
from typing import Dict, List, NamedTuple, Optional, Tuple

MARKER = "Managed by gpulab.dlstack (env_modules); edits are overwritten."
KINDS: Tuple[str, ...] = ("cuda", "cudnn", "tensorrt", "dlenv")
SYNTAXES: Tuple[str, ...] = ("lua", "tcl")

_TOOLKIT = re.compile(r"^cuda-(\d+\.\d+)$")
_PREFIX = re.compile(r"^(\d+(?:\.\d+){0,3})-cuda(\d+)$")


class Module(NamedTuple):
    """One modulefile: ``kind/version``, what it sets and what it prepends (first entry ends up first)."""

    kind: str
    version: str
    prefix: str
    description: str
    setenv: Tuple[Tuple[str, str], ...]
    prepend: Tuple[Tuple[str, Tuple[str, ...]], ...]

    @property
    def name(self) -> str:
        return f"{self.kind}/{self.version}"


def _dirs(prefix: str, names: Tuple[Tuple[str, str], ...]) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """(variable, (existing sub-folders,)) for each wanted (variable, sub-folder), dropping missing folders."""
    found: Dict[str, List[str]] = {}
    for variable, sub in names:
        path = os.path.join(prefix, sub)
        if os.path.isdir(path):
            found.setdefault(variable, []).append(path)
    return tuple((variable, tuple(paths)) for variable, paths in found.items())


def _children(root: str) -> List[str]:
    if not root or not os.path.isdir(root):
        return []
    return sorted(name for name in os.listdir(root) if os.path.isdir(os.path.join(root, name)))


def cuda_modules(root: str) -> List[Module]:
    out = []
    for name in _children(root):
        match = _TOOLKIT.match(name)
        if not match:
            continue
        prefix = os.path.join(root, name)
        home = (("CUDA_HOME", prefix), ("CUDA_PATH", prefix))
        paths = _dirs(prefix, (("PATH", "bin"), ("LD_LIBRARY_PATH", "lib64"), ("CPATH", "include")))
        out.append(Module("cuda", match.group(1), prefix, f"CUDA toolkit {match.group(1)}", home, paths))
    return out


def _library_modules(kind: str, label: str, home_var: str, root: str) -> List[Module]:
    out = []
    for name in _children(root):
        match = _PREFIX.match(name)
        if not match:
            continue
        prefix = os.path.join(root, name)
        paths = _dirs(
            prefix, (("PATH", "bin"), ("LD_LIBRARY_PATH", "lib"), ("LD_LIBRARY_PATH", "lib64"), ("CPATH", "include"))
        )
        described = f"{label} {match.group(1)} for CUDA {match.group(2)}"
        out.append(Module(kind, name, prefix, described, ((home_var, prefix),), paths))
    return out


def env_modules(root: str) -> List[Module]:
    """Managed environments: a venv (``pyvenv.cfg``) or a conda env (``conda-meta``) with a ``bin/python``.

    The library folders of NVIDIA's wheels in the environment go on ``LD_LIBRARY_PATH``, as the activation hook does.
    """
    out = []
    for name in _children(root):
        prefix = os.path.join(root, name)
        if not os.path.exists(os.path.join(prefix, "bin", "python")):
            continue
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
            home: Tuple[Tuple[str, str], ...] = (("VIRTUAL_ENV", prefix),)
        elif os.path.isdir(os.path.join(prefix, "conda-meta")):
            home = (("CONDA_PREFIX", prefix), ("CONDA_DEFAULT_ENV", name))
        else:
            continue
        wheel_libs = sorted(glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages", "nvidia", "*", "lib")))
        paths: Tuple[Tuple[str, Tuple[str, ...]], ...] = (("PATH", (os.path.join(prefix, "bin"),)),)
        if wheel_libs:
            paths += (("LD_LIBRARY_PATH", tuple(wheel_libs)),)
        out.append(Module("dlenv", name, prefix, f"gpulab.dlstack Python environment {name}", home, paths))
    return out


def scan(cuda_root: str, cudnn_root: str, tensorrt_root: str, env_root: str, kinds: Tuple[str, ...]) -> List[Module]:
    """Every module to write, in kind order then by name."""
    found: List[Module] = []
    if "cuda" in kinds:
        found += cuda_modules(cuda_root)
    if "cudnn" in kinds:
        found += _library_modules("cudnn", "cuDNN", "CUDNN_HOME", cudnn_root)
    if "tensorrt" in kinds:
        found += _library_modules("tensorrt", "TensorRT", "TENSORRT_HOME", tensorrt_root)
    if "dlenv" in kinds:
        found += env_modules(env_root)
    return found


def _quote_lua(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _quote_tcl(value: str) -> str:
    return "{" + value + "}"


def render(module: Module, syntax: str) -> str:
    """The modulefile text: Lua (Lmod) or Tcl (environment-modules; Lmod reads it too)."""
    if syntax not in SYNTAXES:
        raise ValueError(f"syntax {syntax!r} is not one of {', '.join(SYNTAXES)}.")
    lines: List[str] = []
    if syntax == "lua":
        lines += [f"-- {MARKER}", f"whatis({_quote_lua(module.description)})", f"family({_quote_lua(module.kind)})"]
        lines += [f"setenv({_quote_lua(k)}, {_quote_lua(v)})" for k, v in module.setenv]
        for variable, paths in module.prepend:
            lines += [f"prepend_path({_quote_lua(variable)}, {_quote_lua(p)})" for p in reversed(paths)]
    else:
        lines += ["#%Module1.0", f"# {MARKER}", f"module-whatis {_quote_tcl(module.description)}"]
        lines += [f"conflict {module.kind}"]
        lines += [f"setenv {k} {_quote_tcl(v)}" for k, v in module.setenv]
        for variable, paths in module.prepend:
            lines += [f"prepend-path {variable} {_quote_tcl(p)}" for p in reversed(paths)]
    return "\n".join(lines) + "\n"


def file_name(module: Module, syntax: str) -> str:
    return module.name + (".lua" if syntax == "lua" else "")


def owned_files(directory: str) -> List[str]:
    """Modulefiles under ``directory`` (one level of kind folders) that carry this collection's marker."""
    out = []
    for kind in KINDS:
        for path in sorted(glob.glob(os.path.join(directory, kind, "*"))):
            if os.path.isfile(path) and MARKER in _read(path):
                out.append(os.path.relpath(path, directory))
    return out


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return ""


def plan(directory: str, modules: List[Module], syntax: str) -> Tuple[Dict[str, str], List[str]]:
    """(files to write: relative path -> text, owned files to remove) to make ``directory`` hold exactly ``modules``.

    Files written by hand (without the marker) are never removed or overwritten silently: a clash is an error.
    """
    wanted = {file_name(m, syntax): render(m, syntax) for m in modules}
    write: Dict[str, str] = {}
    for rel, text in wanted.items():
        path = os.path.join(directory, rel)
        current: Optional[str] = _read(path) if os.path.exists(path) else None
        if current is not None and MARKER not in current:
            raise ValueError(
                f"{path} exists and was not written by gpulab.dlstack; move it away or set env_modules_path to "
                "another folder."
            )
        if current != text:
            write[rel] = text
    remove = [rel for rel in owned_files(directory) if rel not in wanted]
    return write, remove
