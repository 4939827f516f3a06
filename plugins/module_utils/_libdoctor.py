# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The library doctor: which CUDA libraries an environment would load, from where, at which version.

How a library is resolved (what is honest here): the dynamic loader of a framework that dlopens
``libcudnn.so.9`` searches, in this order, LD_LIBRARY_PATH, the RUNPATH of the calling library
(TensorFlow's and JAX's point into the ``nvidia-*`` wheels of the environment; PyTorch preloads the
same wheels), the ld.so cache and the default folders. A plain ``ctypes.CDLL("libcudnn.so.9")`` from
Python would skip the framework's RUNPATH and answer a different question. So the doctor script,
run with the environment's own Python under the variables its activation sets (or a kernel spec's
``env`` block), rebuilds that search list from the live environment: LD_LIBRARY_PATH, the RUNPATH
of the framework's libraries read from their ELF headers, the wheel folders, ``ldconfig -p``, the
default folders. The first file with the wanted soname is what would load; the script then loads
that file with dlopen and asks the library itself for its version (cudaRuntimeGetVersion,
cublasGetProperty, cudnnGetVersion, getInferLibVersion, cuDriverGetVersion), so a file that is
present but cannot load (a missing dependency) is reported as such.

The module side (pure functions below) judges each library against the resolved stack, the
framework's build and the driver, and words each mismatch with its fix.
"""

from __future__ import annotations

import json
import os
import re
from string import Template
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpulab.dlstack.plugins.module_utils._verdict import unavailable, worst

LIBRARIES = ("libcuda", "libcudart", "libcublas", "libcudnn", "libnvinfer")

# Variables an activation sets for a shell prompt or its own undo, not for the programs it runs.
SHELL_ONLY = re.compile(
    r"^(PS1|PWD|OLDPWD|SHLVL|_|VIRTUAL_ENV_PROMPT|_OLD_VIRTUAL_.*|_DLSTACK_OLD_.*|CONDA_PROMPT_.*)$"
)
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# CUDA major -> the driver floor for minor-version compatibility (REFERENCE.md section 5 and 12).
COMPAT_FLOOR = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}

SCRIPT = r'''
import ctypes
import glob
import json
import os
import re
import site
import subprocess
import sys
import sysconfig

LIBS = ("libcuda", "libcudart", "libcublas", "libcudnn", "libnvinfer")
DEFAULT_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
FRAMEWORK_LIBS = {
    "tensorflow": ("tensorflow/libtensorflow_framework.so.*", "tensorflow/python/_pywrap_tensorflow_internal.so"),
    "torch": ("torch/lib/libtorch_cuda.so", "torch/lib/libtorch_global_deps.so"),
    "jax": ("jax_plugins/xla_cuda*/xla_cuda_plugin.so",),
}


def dist_version(name):
    try:
        from importlib import metadata
        return metadata.version(name)
    except Exception:
        return None


def dist_requires(name):
    try:
        from importlib import metadata
        return metadata.requires(name) or []
    except Exception:
        return []


def site_dirs():
    found = []
    for path in list(getattr(site, "getsitepackages", lambda: [])()) + [
        sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib")
    ]:
        if path and os.path.isdir(path) and os.path.realpath(path) not in found:
            found.append(os.path.realpath(path))
    return found


def elf_paths(path):
    """DT_RUNPATH (or DT_RPATH, which the loader searches before LD_LIBRARY_PATH) of an ELF64 file."""
    import struct
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None, []
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        ptype, _flags, offset, vaddr, _paddr, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if ptype == 1:
            loads.append((vaddr, offset, filesz))
        elif ptype == 2:
            dynamic = (offset, filesz)
    if dynamic is None:
        return None, []
    entries = {}
    for pos in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, val = struct.unpack_from("<qQ", data, pos)
        if tag == 0:
            break
        entries.setdefault(tag, val)
    strtab = entries.get(5)
    if strtab is None:
        return None, []
    for vaddr, offset, filesz in loads:
        if vaddr <= strtab < vaddr + filesz:
            strtab = strtab - vaddr + offset
            break
    kind = "RUNPATH" if 29 in entries else ("RPATH" if 15 in entries else None)
    if kind is None:
        return None, []
    start = strtab + entries[29 if kind == "RUNPATH" else 15]
    text = data[start:data.index(b"\0", start)].decode()
    origin = os.path.dirname(os.path.realpath(path))
    dirs = [os.path.normpath(p.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)) for p in text.split(":") if p]
    return kind, dirs


def tf_build(site_list):
    for base in site_list:
        path = os.path.join(base, "tensorflow", "python", "platform", "build_info.py")
        if os.path.isfile(path):
            text = open(path).read()
            keys = r"""['"](cuda_version|cudnn_version|tensorrt_version)['"]"""
            found = dict(re.findall(keys + r"""\s*[:,]\s*['"]([^'"]*)['"]""", text))
            trt = re.search(r"""['"]is_tensorrt_build['"]\s*[:,]\s*True""", text)
            return {"version": dist_version("tensorflow") or dist_version("tensorflow-cpu"),
                    "cuda": found.get("cuda_version") or None, "cudnn": found.get("cudnn_version") or None,
                    "tensorrt": (found.get("tensorrt_version") or None) if trt else None}
    return None


def pinned(requires, prefix):
    for req in requires:
        m = re.match(r"^%s[^\s;=<>~!]*\s*\(?\s*(?:==|>=|~=)\s*([0-9][0-9.]*)" % re.escape(prefix), req)
        if m:
            return m.group(1)
    return None


def frameworks(site_list):
    found = {}
    tf = tf_build(site_list)
    if tf:
        found["tensorflow"] = tf
    for base in site_list:
        path = os.path.join(base, "torch", "version.py")
        if os.path.isfile(path) and "torch" not in found:
            m = re.search(r"^cuda\s*(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", open(path).read(), re.M)
            found["torch"] = {"version": dist_version("torch"), "cuda": m.group(1) if m else None,
                              "cudnn": pinned(dist_requires("torch"), "nvidia-cudnn-cu")}
    for plugin in ("jax-cuda13-plugin", "jax-cuda12-plugin"):
        version = dist_version(plugin)
        if version:
            found["jax"] = {"version": dist_version("jax"), "cuda": plugin.split("cuda")[1].split("-")[0],
                            "cudnn": pinned(dist_requires(plugin), "nvidia-cudnn-cu")}
            break
    for name in ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"):
        if dist_version(name):
            found["cupy"] = {"version": dist_version(name), "cuda": name[len("cupy-cuda"):-1], "cudnn": None}
            break
    return found


def wheel_dirs(site_list):
    dirs = []
    owners = {}
    try:
        from importlib import metadata
        for dist in metadata.distributions():
            name = (dist.metadata.get("Name") or "").lower()
            if not (name.startswith("nvidia-") or name.startswith("tensorrt")):
                continue
            for entry in dist.files or []:
                if re.search(r"\.so(\.[0-9]+)*$", str(entry)):
                    folder = os.path.realpath(os.path.dirname(str(dist.locate_file(entry))))
                    owners.setdefault(folder, "%s %s" % (name, dist.version))
    except Exception:
        pass
    for base in site_list:
        for folder in sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib")) +
                             glob.glob(os.path.join(base, "tensorrt_libs"))):
            folder = os.path.realpath(folder)
            if folder not in dirs:
                dirs.append(folder)
    for folder in owners:
        if folder not in dirs:
            dirs.append(folder)
    return [(d, owners.get(d)) for d in dirs]


def ldconfig_cache():
    for tool in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            out = subprocess.run([tool, "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 universal_newlines=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        cache = {}
        for line in out.splitlines():
            m = re.match(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
            if m and ("x86-64" in m.group(2) or "AArch64" in m.group(2) or "64" in m.group(2)):
                cache.setdefault(m.group(1), m.group(3))
        return cache
    return None


def search_order(site_list, fw):
    order = []

    def add(folder, via, wheel=None):
        folder = os.path.normpath(folder)
        real = os.path.realpath(folder)
        if folder and os.path.isdir(folder) and all(os.path.realpath(o["dir"]) != real for o in order):
            order.append({"dir": folder, "via": via, "wheel": wheel or owners.get(real)})

    owners = dict(wheel_dirs(site_list))

    rpaths, runpaths = [], []
    for name in fw:
        for pattern in FRAMEWORK_LIBS.get(name, ()):
            hits = sorted((p, base) for base in site_list for p in glob.glob(os.path.join(base, pattern)))
            if not hits:
                continue
            kind, dirs = elf_paths(hits[0][0])
            target = rpaths if kind == "RPATH" else runpaths
            rel = os.path.relpath(hits[0][0], hits[0][1])
            target.extend((d, "%s of %s" % (kind, rel)) for d in dirs)
    for folder, via in rpaths:
        add(folder, via)
    for folder in [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]:
        add(folder, "LD_LIBRARY_PATH")
    for folder, via in runpaths:
        add(folder, via)
    for folder, owner in wheel_dirs(site_list):
        add(folder, "wheel folder (frameworks preload or RUNPATH these)", owner)
    return order


def soname_majors(folder, lib):
    found = {}
    for path in glob.glob(os.path.join(folder, lib + ".so.*")):
        m = re.match(r"^%s\.so\.([0-9]+)$" % re.escape(lib), os.path.basename(path))
        if m:
            found[int(m.group(1))] = path
    return found


def major(text):
    m = re.match(r"^\s*([0-9]+)", str(text or ""))
    return int(m.group(1)) if m else None


def wanted_major(lib, fw, order, stack):
    cuda_fw = [(n, f) for n, f in fw.items() if f.get("cuda")]
    if lib in ("libcudart", "libcublas"):
        if cuda_fw:
            return major(cuda_fw[0][1]["cuda"]), "%s %s was built with CUDA %s" % (
                cuda_fw[0][0], cuda_fw[0][1].get("version"), cuda_fw[0][1]["cuda"])
    if lib == "libcudnn":
        for n, f in fw.items():
            if f.get("cudnn"):
                return major(f["cudnn"]), "%s %s was built with cuDNN %s" % (n, f.get("version"), f["cudnn"])
    if lib == "libnvinfer":
        for n, f in fw.items():
            if f.get("tensorrt"):
                return major(f["tensorrt"]), "%s %s was built with TensorRT %s" % (n, f.get("version"), f["tensorrt"])
    # cuBLAS and the runtime belong to one CUDA major: a wheel of either sets both.
    kin = ("libcudart", "libcublas") if lib in ("libcudart", "libcublas") else (lib,)
    for entry in order:
        if entry.get("wheel"):
            for other in kin:
                majors = soname_majors(entry["dir"], other)
                if majors:
                    best = max(majors)
                    return best, "the environment's wheel %s carries %s.so.%d" % (entry["wheel"], other, best)
    key = {"libcudart": "cuda", "libcublas": "cuda", "libcudnn": "cudnn", "libnvinfer": "tensorrt"}[lib]
    if stack.get(key):
        title = {"cuda": "CUDA", "cudnn": "cuDNN", "tensorrt": "TensorRT"}[key]
        return major(stack[key]), "the resolved stack has %s %s" % (title, stack[key])
    return None, "nothing in this environment or the stack asks for it"


def version_of(lib, handle, path):
    c_int = ctypes.c_int
    try:
        if lib == "libcuda":
            v = c_int()
            if handle.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value:
                return "%d.%d" % (v.value // 1000, (v.value % 1000) // 10)
            return None
        if lib == "libcudart":
            v = c_int()
            if handle.cudaRuntimeGetVersion(ctypes.byref(v)) == 0 and v.value:
                return "%d.%d" % (v.value // 1000, (v.value % 1000) // 10)
        if lib == "libcublas":
            parts = []
            for prop in (0, 1, 2):
                v = c_int()
                if handle.cublasGetProperty(prop, ctypes.byref(v)) != 0:
                    break
                parts.append(str(v.value))
            if len(parts) == 3:
                return ".".join(parts)
        if lib == "libcudnn":
            handle.cudnnGetVersion.restype = ctypes.c_size_t
            v = int(handle.cudnnGetVersion())
            if v >= 90000:
                return "%d.%d.%d" % (v // 10000, (v % 10000) // 100, v % 100)
            return "%d.%d.%d" % (v // 1000, (v % 1000) // 100, v % 100)
        if lib == "libnvinfer":
            v = int(handle.getInferLibVersion())
            if v >= 100000:
                return "%d.%d.%d" % (v // 10000, (v % 10000) // 100, v % 100)
            return "%d.%d.%d" % (v // 1000, (v % 1000) // 100, v % 100)
    except (AttributeError, OSError):
        pass
    m = re.search(r"\.so\.([0-9]+(?:\.[0-9]+)+)$", os.path.realpath(path))
    return m.group(1) if m else None


def resolve(lib, want, order, cache):
    soname = "%s.so.%d" % (lib, want)
    hits = []
    for entry in order:
        path = os.path.join(entry["dir"], soname)
        if os.path.exists(path):
            hits.append({"path": path, "via": entry["via"], "wheel": entry.get("wheel")})
    if cache is not None and soname in cache:
        hits.append({"path": cache[soname], "via": "ld.so.cache", "wheel": None})
    for folder in DEFAULT_DIRS:
        path = os.path.join(folder, soname)
        if os.path.exists(path) and all(os.path.realpath(h["path"]) != os.path.realpath(path) for h in hits):
            hits.append({"path": path, "via": "default folder", "wheel": None})
    return soname, hits


def run(config):
    site_list = site_dirs()
    fw = frameworks(site_list)
    order = search_order(site_list, fw)
    cache = ldconfig_cache()
    libs = {}
    for lib in config["libraries"]:
        if lib == "libcuda":
            want, why = 1, "every CUDA program loads the driver's libcuda.so.1"
        else:
            want, why = wanted_major(lib, fw, order, config.get("stack") or {})
        entry = {"wanted": None, "why": why, "path": None, "via": None, "version": None, "load_error": None,
                 "shadowed": [], "other_majors": []}
        for item in order:
            for m, path in sorted(soname_majors(item["dir"], lib).items()):
                if m != want:
                    entry["other_majors"].append({"path": path, "via": item["via"], "wheel": item.get("wheel")})
        if want is None:
            libs[lib] = entry
            continue
        soname, hits = resolve(lib, want, order, cache)
        entry["wanted"] = soname
        if hits:
            first = hits[0]
            entry.update(path=first["path"], via=first["via"], wheel=first["wheel"],
                         realpath=os.path.realpath(first["path"]), shadowed=hits[1:])
            try:
                handle = ctypes.CDLL(first["path"], mode=getattr(os, "RTLD_LAZY", 1) | getattr(os, "RTLD_LOCAL", 0))
                entry["version"] = version_of(lib, handle, first["path"])
            except OSError as exc:
                entry["load_error"] = str(exc)
        libs[lib] = entry
    driver = None
    if (libs.get("libcuda") or {}).get("realpath"):
        m = re.search(r"\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$", libs["libcuda"]["realpath"])
        driver = m.group(1) if m else None
    return {
        "python": sys.executable,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""),
        "frameworks": fw,
        "search": order,
        "ldconfig": cache is not None,
        "libraries": libs,
        "driver_version": driver,
    }


def main():
    out = os.dup(1)
    os.dup2(2, 1)
    try:
        with open(sys.argv[1]) as handle:
            doc = run(json.load(handle))
    except BaseException as exc:
        import traceback
        doc = {"error": "%s: %s" % (type(exc).__name__, exc), "traceback": traceback.format_exc()[-3000:]}
    with os.fdopen(out, "w") as handle:
        handle.write(json.dumps(doc, default=str))


main()
'''

Runner = Callable[..., Tuple[int, str, str]]


# Activation: what an environment's activation sets, and the kernel spec env block made from it.


def activation_scripts(env_path: str) -> Tuple[str, List[str]]:
    """(backend, scripts to source) of an environment: a venv's bin/activate, a conda env's activate.d hooks."""
    if os.path.isdir(os.path.join(env_path, "conda-meta")):
        hooks = os.path.join(env_path, "etc", "conda", "activate.d")
        names = sorted(n for n in os.listdir(hooks) if n.endswith(".sh")) if os.path.isdir(hooks) else []
        return "conda", [os.path.join(hooks, n) for n in names]
    activate = os.path.join(env_path, "bin", "activate")
    return "venv", [activate] if os.path.isfile(activate) else []


def activation_command(env_path: str, home: str = "/root") -> List[str]:
    """A clean bash that activates the environment and prints its environment NUL-separated."""
    backend, scripts = activation_scripts(env_path)
    base = ["env", "-i", f"PATH={BASE_PATH}", f"HOME={home}", "LC_ALL=C"]
    if backend == "conda":
        base += [f"CONDA_PREFIX={env_path}", f"CONDA_DEFAULT_ENV={os.path.basename(env_path)}"]
        base[2] = f"PATH={env_path}/bin:{BASE_PATH}"
    body = 'for f in "$@"; do . "$f" >/dev/null 2>&1 || exit 3; done; exec env -0'
    return [*base, "bash", "--noprofile", "--norc", "-c", body, "dlstack-activate", *scripts]


def parse_env0(text: str) -> Dict[str, str]:
    found: Dict[str, str] = {}
    for item in text.split("\0"):
        key, sep, value = item.partition("=")
        if sep and key:
            found[key] = value
    return found


def activation_changes(activated: Dict[str, str], base: Dict[str, str]) -> Dict[str, str]:
    """Variables the activation added or changed, less the shell-only ones."""
    return {
        key: value for key, value in sorted(activated.items()) if base.get(key) != value and not SHELL_ONLY.match(key)
    }


def kernel_env(changes: Dict[str, str]) -> Dict[str, str]:
    """The kernel.json env block: PATH keeps the server's own after the env's folders (${PATH}, which
    jupyter_client substitutes); every other variable as the activation sets it."""
    env = dict(changes)
    path = env.get("PATH")
    if path is not None:
        head = path[: -len(BASE_PATH)].rstrip(":") if path.endswith(BASE_PATH) else path
        env["PATH"] = f"{head}:${{PATH}}" if head else "${PATH}"
    return env


def base_env(conda: bool, env_path: str, home: str = "/root") -> Dict[str, str]:
    base = {"PATH": BASE_PATH, "HOME": home, "LC_ALL": "C"}
    if conda:
        base.update(CONDA_PREFIX=env_path, CONDA_DEFAULT_ENV=os.path.basename(env_path))
    return base


def activate(run: Runner, env_path: str) -> Tuple[Optional[Dict[str, str]], Optional[str]]:
    """(variables the activation sets, None) or (None, error sentence)."""
    backend, scripts = activation_scripts(env_path)
    rc, out, err = run(activation_command(env_path))
    if rc != 0:
        return None, (
            f"Activating {env_path} ({', '.join(scripts) or 'no script'}) failed (rc={rc}): "
            f"{(err or out).strip()[-300:]}; fix the activation script."
        )
    changes = activation_changes(parse_env0(out), {"PATH": BASE_PATH, "HOME": "/root", "LC_ALL": "C"})
    if backend == "conda":
        changes.setdefault("CONDA_PREFIX", env_path)
        changes.setdefault("CONDA_DEFAULT_ENV", os.path.basename(env_path))
        if not changes.get("PATH", "").startswith(f"{env_path}/bin"):
            changes["PATH"] = f"{env_path}/bin:" + changes.get("PATH", BASE_PATH)
    return changes, None


def kernel_spec(python: str, display_name: str, env: Dict[str, str]) -> Dict[str, Any]:
    """The kernel.json of an environment, with the env block its activation gives."""
    spec: Dict[str, Any] = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "metadata": {"debugger": True},
    }
    if env:
        spec["env"] = env
    return spec


def render_kernel(spec: Dict[str, Any]) -> str:
    return json.dumps(spec, indent=2, sort_keys=True) + "\n"


def expand_kernel_env(env: Dict[str, str], server: Dict[str, str]) -> Dict[str, str]:
    """A kernel spec's env as jupyter_client applies it: ${VAR} substituted from the server's environment."""
    merged = dict(server)
    for key, value in env.items():
        merged[key] = Template(str(value)).safe_substitute(server)
    return merged


# Judging (module side).


def _mm(text: Any) -> Optional[Tuple[int, ...]]:
    parts = re.findall(r"[0-9]+", str(text or ""))
    return tuple(int(p) for p in parts[:3]) if parts else None


def _ver(parts: Optional[Tuple[int, ...]], n: int = 2) -> str:
    return ".".join(str(p) for p in (parts or ())[:n])


def _where(entry: Dict[str, Any]) -> str:
    wheel = f", wheel {entry['wheel']}" if entry.get("wheel") else ""
    return f"{entry.get('path')} ({entry.get('via')}{wheel})"


def _fix_install(lib: str, major: Optional[int]) -> str:
    if lib == "libcuda":
        return (
            "Install the driver's userspace (the nvidia_driver role; libcuda1 on Debian) so ldconfig lists "
            "libcuda.so.1."
        )
    wheel = {
        "libcudart": f"nvidia-cuda-runtime-cu{major}",
        "libcublas": f"nvidia-cublas-cu{major}",
        "libcudnn": f"nvidia-cudnn-cu12=={major}.* (or run the cudnn role)",
        "libnvinfer": f"TensorRT {major} (the tensorrt role)",
    }[lib]
    return f"Install {wheel} into this environment, or put its folder on the activation hook's LD_LIBRARY_PATH."


def judge_library(
    lib: str,
    entry: Dict[str, Any],
    *,
    stack: Dict[str, Any],
    driver_cuda: Optional[str],
    driver_version: Optional[str],
    requirement: Dict[str, Any],
    frameworks: Dict[str, Any],
) -> Dict[str, Any]:
    """Status, reason and fix for one library of one environment."""
    wanted = entry.get("wanted")
    out: Dict[str, Any] = {
        "soname": wanted,
        "path": entry.get("path"),
        "via": entry.get("via"),
        "wheel": entry.get("wheel"),
        "realpath": entry.get("realpath"),
        "version": entry.get("version"),
        "why": entry.get("why"),
        "status": "pass",
        "reason": "",
        "fix": "",
    }
    if wanted is None:
        others = ", ".join(_where(o) for o in entry.get("other_majors") or [])
        present = f" Present: {others}." if others else ""
        out.update(status="skip", reason=f"Not needed: {entry.get('why')}.{present}")
        return out
    want_major = int(wanted.rsplit(".", 1)[1])
    if not entry.get("path"):
        other_files = entry.get("other_majors") or []
        listed = ", ".join(_where(o) for o in other_files)
        seen = f" Only other majors are present: {listed}." if other_files else ""
        reason = f"{wanted} would not load: it is in none of the searched folders ({entry.get('why')}).{seen}"
        if lib == "libcuda":
            done = unavailable(requirement, reason)
            out.update(status=done["status"], reason=done["reason"], fix=_fix_install(lib, None))
        else:
            out.update(status="fail", reason=reason, fix=_fix_install(lib, want_major))
        return out
    if entry.get("load_error"):
        out.update(
            status="fail",
            reason=f"{_where(entry)} is found but does not load: {entry['load_error']}.",
            fix="Install the library's dependencies (ldd on the file names the missing one) or a complete wheel.",
        )
        return out
    problems: List[Tuple[str, str, str]] = []
    have = _mm(entry.get("version"))
    if lib == "libcudart" and have:
        problems += _cuda_vs_stack(have, stack, "libcudart", "nvidia-cuda-runtime-cu")
        problems += _cuda_vs_driver(have, driver_cuda, driver_version)
    if lib == "libcublas" and have:
        want_cuda = _mm(stack.get("cuda"))
        if want_cuda and have[0] != want_cuda[0]:
            problems.append(
                (
                    "fail",
                    f"libcublas {_ver(have, 3)} belongs to CUDA {have[0]}, the resolved stack is CUDA {stack['cuda']}.",
                    f"Install nvidia-cublas-cu{want_cuda[0]} matching CUDA {stack['cuda']}.",
                )
            )
    if lib == "libcudnn" and have:
        problems += _cudnn_checks(have, stack, frameworks)
    if lib == "libnvinfer" and have:
        want_trt = _mm(stack.get("tensorrt"))
        if want_trt and have[0] != want_trt[0]:
            problems.append(
                (
                    "fail",
                    f"libnvinfer {_ver(have, 3)} differs in major from the resolved stack's TensorRT "
                    f"{stack['tensorrt']}.",
                    f"Install TensorRT {stack['tensorrt']} (tensorrt role) or re-resolve the stack.",
                )
            )
    problems += _shadow_checks(entry, have)
    if problems:
        status = worst(p[0] for p in problems)
        out.update(status=status, reason=" ".join(p[1] for p in problems), fix=" ".join(p[2] for p in problems))
    else:
        out["reason"] = f"{wanted} {entry.get('version') or '(version unknown)'} from {_where(entry)}."
    return out


def _cuda_vs_stack(have: Tuple[int, ...], stack: Dict[str, Any], lib: str, wheel: str) -> List[Tuple[str, str, str]]:
    want = _mm(stack.get("cuda"))
    if not want:
        return []
    if have[0] != want[0]:
        return [
            (
                "fail",
                f"{lib} {_ver(have)} is CUDA {have[0]}, the resolved stack is CUDA {stack['cuda']}.",
                f"Remove the CUDA {have[0]} runtime from this environment and install "
                f"{wheel}{want[0]}=={_ver(want)}.*.",
            )
        ]
    if have[:2] != want[:2]:
        return [
            (
                "warn",
                f"{lib} {_ver(have)} differs from the resolved stack's CUDA {stack['cuda']}.",
                f"Pin {wheel}{want[0]}=={_ver(want)}.* or point the activation hook at /usr/local/cuda-{_ver(want)}.",
            )
        ]
    return []


def _cuda_vs_driver(
    have: Tuple[int, ...], driver_cuda: Optional[str], driver_version: Optional[str]
) -> List[Tuple[str, str, str]]:
    drv = _mm(driver_cuda)
    if not drv:
        return []
    shown = f"driver {driver_version or '?'} (CUDA {_ver(drv)})"
    if have[0] > drv[0]:
        newer = COMPAT_FLOOR.get(have[0], "a newer branch")
        return [
            (
                "fail",
                f"libcudart {_ver(have)} is newer than the {shown} supports: CUDA {have[0]} needs driver >= {newer}.",
                f"Install a driver of CUDA {have[0]}'s branch (>= {newer}) or a CUDA {drv[0]} runtime in this "
                "environment.",
            )
        ]
    if have[:2] > drv[:2]:
        floor = COMPAT_FLOOR.get(have[0])
        below = bool(floor and driver_version and _mm(driver_version) < _mm(floor))  # type: ignore[operator]
        status = "fail" if below else "warn"
        return [
            (
                status,
                f"libcudart {_ver(have)} is newer than the {shown}; it runs only through minor-version compatibility "
                f"(driver >= {floor}), which cannot JIT PTX newer than the driver.",
                f"Upgrade the driver to the CUDA {_ver(have)} floor, or keep kernels that carry SASS for the GPU.",
            )
        ]
    return []


def _cudnn_checks(
    have: Tuple[int, ...], stack: Dict[str, Any], frameworks: Dict[str, Any]
) -> List[Tuple[str, str, str]]:
    problems: List[Tuple[str, str, str]] = []
    for name, build in sorted(frameworks.items()):
        built = _mm(build.get("cudnn"))
        if not built:
            continue
        if have[0] != built[0]:
            problems.append(
                (
                    "fail",
                    f"Loaded runtime cuDNN {_ver(have, 3)} but {name} {build.get('version')} was compiled with "
                    f"cuDNN {build['cudnn']}.",
                    f"Install nvidia-cudnn-cu12=={built[0]}.* (the wheel {name} pins) in this environment, or remove "
                    "the folder that shadows it from LD_LIBRARY_PATH.",
                )
            )
        elif len(built) > 1 and have[:2] < built[:2]:
            problems.append(
                (
                    "fail",
                    f"Loaded runtime cuDNN {_ver(have, 3)} is older than the {_ver(built)} {name} was compiled with.",
                    f"Install cuDNN >= {_ver(built)} for {name}.",
                )
            )
    want = _mm(stack.get("cudnn"))
    if want and have[0] != want[0]:
        problems.append(
            (
                "fail",
                f"cuDNN {_ver(have, 3)} differs in major from the resolved stack's cuDNN {stack['cudnn']}.",
                f"Install cuDNN {stack['cudnn']} (cudnn role, or nvidia-cudnn-cu12=={_ver(want)}.* in the "
                "environment).",
            )
        )
    elif want and have[:2] != want[:2]:
        problems.append(
            (
                "warn",
                f"cuDNN {_ver(have, 3)} differs from the resolved stack's cuDNN {stack['cudnn']}.",
                f"Pin nvidia-cudnn-cu12=={_ver(want)}.* or re-run the cudnn role.",
            )
        )
    return problems


def _shadow_checks(entry: Dict[str, Any], have: Optional[Tuple[int, ...]]) -> List[Tuple[str, str, str]]:
    """A wheel of the environment that is shadowed by a folder searched earlier, at another version."""
    if entry.get("wheel") or not have:
        return []
    for hit in entry.get("shadowed") or []:
        owner = hit.get("wheel")
        if not owner:
            continue
        wheel_version = _mm(owner.rsplit(" ", 1)[-1])
        if wheel_version and wheel_version[:2] != have[:2]:
            return [
                (
                    "warn",
                    f"{entry.get('wanted')} {_ver(have, 3)} from {entry.get('path')} ({entry.get('via')}) shadows "
                    f"the environment's wheel {owner} in {os.path.dirname(hit['path'])}.",
                    "Drop that folder from LD_LIBRARY_PATH (tensorflow_cuda_lib_dirs) or align it with the wheel.",
                )
            ]
    return []


def judge_environment(doc: Dict[str, Any], stack: Dict[str, Any], requirement: Dict[str, Any]) -> Dict[str, Any]:
    """Per-library verdicts of one environment's doctor document, and the environment's worst."""
    libs = doc.get("libraries") or {}
    cuda_entry = libs.get("libcuda") or {}
    driver_cuda = cuda_entry.get("version")
    driver_version = doc.get("driver_version")
    judged = {
        lib: judge_library(
            lib,
            entry,
            stack=stack,
            driver_cuda=driver_cuda,
            driver_version=driver_version,
            requirement=requirement,
            frameworks=doc.get("frameworks") or {},
        )
        for lib, entry in libs.items()
    }
    return {
        "python": doc.get("python"),
        "python_version": doc.get("python_version"),
        "ld_library_path": doc.get("ld_library_path"),
        "frameworks": doc.get("frameworks") or {},
        "search": doc.get("search") or [],
        "driver_version": driver_version,
        "driver_cuda": driver_cuda,
        "libraries": judged,
        "verdict": worst(e["status"] for e in judged.values()),
    }


def flags(environments: Sequence[Dict[str, Any]]) -> List[str]:
    """One sentence per warn or fail: environment, library, what is wrong, the fix."""
    lines: List[str] = []
    for env in environments:
        if env.get("error"):
            lines.append(f"{env['name']}: {env['error']}")
            continue
        for lib, entry in (env.get("libraries") or {}).items():
            if entry["status"] in ("warn", "fail"):
                lines.append(f"{env['name']}: {lib} {entry['status']}: {entry['reason']} Fix: {entry['fix']}")
    return lines


def discover(env_root: str, kernel_root: str) -> Tuple[List[str], List[str]]:
    """Environments (folders with bin/python) under env_root and dlstack kernel specs under kernel_root."""
    envs = []
    if os.path.isdir(env_root):
        envs = [
            os.path.join(env_root, n)
            for n in sorted(os.listdir(env_root))
            if os.path.isfile(os.path.join(env_root, n, "bin", "python"))
        ]
    kernels = []
    if os.path.isdir(kernel_root):
        kernels = [
            os.path.join(kernel_root, n)
            for n in sorted(os.listdir(kernel_root))
            if n.startswith("dlstack-") and os.path.isfile(os.path.join(kernel_root, n, "kernel.json"))
        ]
    return envs, kernels


def read_kernel(kernel_dir: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    path = os.path.join(kernel_dir, "kernel.json")
    try:
        with open(path) as handle:
            spec = json.load(handle)
    except (OSError, ValueError) as exc:
        return None, f"{path} cannot be read as JSON ({exc}); re-run the python_env role."
    argv = spec.get("argv") if isinstance(spec, dict) else None
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
        return None, f"{path} has no argv with the kernel's interpreter first; re-run the python_env role."
    env = spec.get("env") or {}
    if not isinstance(env, dict):
        return None, f"{path} has an env that is not a dict of variable to text; re-run the python_env role."
    return spec, None
