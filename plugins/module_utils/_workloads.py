# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workload scripts the smoke modules run with the Python of the environment under test.

Each script is plain Python 3.8+ text. It reads its settings from the JSON file named by its first
argument and writes exactly one JSON document to its standard output; anything the frameworks
print goes to standard error. A script never decides pass or fail: it measures and reports, and
the module judges (see ``_verdict.py``).
"""

from __future__ import annotations

from typing import Dict

COMMON = r'''
import json
import os
import sys
import time
import traceback

_RESULT_FD = os.dup(1)
os.dup2(2, 1)


def emit(doc):
    with os.fdopen(_RESULT_FD, "w") as handle:
        handle.write(json.dumps(doc, default=str, allow_nan=False))


def dist_version(*names):
    try:
        from importlib import metadata
    except ImportError:
        return None
    for name in names:
        try:
            return metadata.version(name)
        except Exception:
            continue
    return None


def timed_rounds(fn, sync, seconds, min_iters=3, max_iters=100000, round_s=0.02):
    """Warm up, then call fn for about `seconds` in synchronised rounds of about round_s each.

    Returns (best, calls, mean): seconds per call in the fastest full round, calls made, and seconds per
    call over the whole run. The fastest round is the rate at full clocks, what the usual "warm up, time a
    few calls" benchmark reports; the mean is what the device sustains over the budget, power and thermal
    capping included (an H200 at its 700 W cap runs a long bf16 GEMM about 15 % below its first rounds).
    """
    sync(fn())
    start = time.perf_counter()
    sync(fn())
    one = max(time.perf_counter() - start, 1e-7)
    iters = int(max(min_iters, min(max_iters, seconds / one)))
    per_round = int(max(1, min(iters, round_s / one)))
    best = None
    done = 0
    total = 0.0
    while done < iters:
        calls = min(per_round, iters - done)
        last = None
        start = time.perf_counter()
        for _ in range(calls):
            last = fn()
        sync(last)
        elapsed = time.perf_counter() - start
        total += elapsed
        done += calls
        if calls == per_round or best is None:
            best = elapsed / calls if best is None else min(best, elapsed / calls)
    return best, done, total / done


def timed(fn, sync, seconds, min_iters=3, max_iters=100000):
    """(seconds per call in the fastest round, calls) of timed_rounds."""
    return timed_rounds(fn, sync, seconds, min_iters, max_iters)[:2]


def rel_error(got, ref):
    """max |got - ref| / max |ref|, or None when got holds NaN/Inf."""
    import numpy as np

    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if not np.isfinite(got).all():
        return None
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    return float(np.max(np.abs(got - ref)) / scale)


def main(run):
    started = time.perf_counter()
    try:
        with open(sys.argv[1]) as handle:
            config = json.load(handle)
        doc = run(config)
    except BaseException as exc:
        doc = {"error": "%s: %s" % (type(exc).__name__, exc), "traceback": traceback.format_exc()[-4000:]}
    doc["workload_seconds"] = round(time.perf_counter() - started, 3)
    emit(doc)
'''

PROBE = (
    COMMON
    + r"""
import importlib.util
import platform

CANDIDATES = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-gpu"),
    "jax": ("jax",),
    "torch": ("torch",),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"),
    "tensorrt": ("tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt-cu11"),
    "torch_xla": ("torch-xla", "torch_xla"),
    "numpy": ("numpy",),
}


def gpu_build(name, version):
    if name == "cupy":
        return True
    if name == "tensorflow":
        return dist_version("tensorflow-cpu") is None
    if name == "jax":
        return bool(dist_version("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda12-pjrt", "jax-cuda13-pjrt"))
    if name == "torch":
        return bool(version) and "+cpu" not in version
    return None


def run(config):
    found = {}
    for name, dists in CANDIDATES.items():
        try:
            present = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            present = False
        version = dist_version(*dists) if present else None
        found[name] = {
            "importable": present,
            "version": version,
            "gpu_build": gpu_build(name, version) if present else None,
        }
    return {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "backends": found,
    }


main(run)
"""
)

GPU = (
    COMMON
    + r"""
DTYPE_MIN_CC = {"fp32": (0, 0), "tf32": (8, 0), "bf16": (8, 0), "fp16": (5, 3)}


# Rate of `work` units per call in the fastest round (key) and over the whole run (key_sustained).
def rates(key, work, per, mean, iters, **figures):
    doc = {key: work / per, key + "_sustained": work / mean, "iterations": iters}
    doc.update(figures)
    return doc


# Convolution case: batch x channels x 56 x 56 images, channels 3x3 filters, stride 1, padding 1 (NCHW, OIHW).
CONV_HW = 56
CONV_REF_CHANNELS = 8


def conv_flops(n, c):
    return 2.0 * n * c * c * 9 * CONV_HW * CONV_HW / 1e12


# Inputs made on the host (the same for every backend): images and filters scaled so outputs stay near 1.
def conv_inputs(n, c):
    import numpy as np

    rng = np.random.default_rng(20240601)
    x = rng.standard_normal((n, c, CONV_HW, CONV_HW), dtype=np.float32)
    w = (rng.standard_normal((c, c, 3, 3), dtype=np.float32) / np.sqrt(c * 9.0)).astype(np.float32)
    return x, w


# float64 numpy convolution of one image (C, H, W) with filters (K, C, 3, 3), stride 1, padding 1.
def conv_reference(image, filters):
    import numpy as np

    c, h, w = image.shape
    padded = np.pad(np.asarray(image, dtype=np.float64), ((0, 0), (1, 1), (1, 1)))
    cols = np.stack([padded[:, r : r + h, s : s + w] for r in range(3) for s in range(3)], axis=1)
    return np.einsum("kcx,cxhw->khw", np.asarray(filters, dtype=np.float64).reshape(-1, c, 9), cols)


def conv_figures(key_per, n, c, err, library):
    per, iters, mean = key_per
    return rates("tflops", conv_flops(n, c), per, mean, iters, batch=n, channels=c, max_rel_err=err, library=library)


def cc_tuple(text):
    try:
        major, minor = str(text).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


class Torch:
    name = "torch"
    pinned = True

    def __init__(self):
        import torch

        self.t = torch

    def versions(self):
        t = self.t
        return {"torch": t.__version__, "cuda": t.version.cuda, "numpy": dist_version("numpy")}

    def devices(self):
        t = self.t
        found = []
        if not t.cuda.is_available():
            return found
        for index in range(t.cuda.device_count()):
            prop = t.cuda.get_device_properties(index)
            bus = None
            if hasattr(prop, "pci_bus_id") and hasattr(prop, "pci_domain_id"):
                bus = "%04x:%02x:%02x.0" % (prop.pci_domain_id, prop.pci_bus_id, getattr(prop, "pci_device_id", 0))
            found.append(
                {
                    "index": index,
                    "name": prop.name,
                    "compute_capability": "%d.%d" % (prop.major, prop.minor),
                    "memory_total_mib": int(prop.total_memory // 1048576),
                    "pci_bus_id_short": bus,
                }
            )
        return found

    def sync_for(self, index):
        return lambda _last: self.t.cuda.synchronize(index)

    def matmul(self, index, kind, n, seconds):
        t = self.t
        dev = t.device("cuda", index)
        dtype = {"fp32": t.float32, "tf32": t.float32, "bf16": t.bfloat16, "fp16": t.float16}[kind]
        t.backends.cuda.matmul.allow_tf32 = kind == "tf32"
        gen = t.Generator(device=dev)
        gen.manual_seed(20240601)
        a = t.randn(n, n, device=dev, generator=gen).to(dtype)
        b = t.randn(n, n, device=dev, generator=gen).to(dtype)
        c = t.empty(n, n, device=dev, dtype=dtype)
        per, iters, mean = timed_rounds(lambda: t.matmul(a, b, out=c), self.sync_for(index), seconds)
        rows = min(256, n)
        ref = a[:rows].double().cpu().numpy() @ b[:, :rows].double().cpu().numpy()
        err = rel_error(c[:rows, :rows].double().cpu().numpy(), ref)
        t.backends.cuda.matmul.allow_tf32 = False
        del a, b, c
        t.cuda.empty_cache()
        return rates("tflops", 2.0 * n**3 / 1e12, per, mean, iters, n=n, max_rel_err=err)

    def conv(self, index, kind, n, c, seconds):
        t = self.t
        dev = t.device("cuda", index)
        dtype = {"fp32": t.float32, "fp16": t.float16}[kind]
        t.backends.cudnn.benchmark = True
        t.backends.cudnn.allow_tf32 = False
        xh, wh = conv_inputs(n, c)
        x = t.from_numpy(xh).to(dev).to(dtype).contiguous(memory_format=t.channels_last)
        w = t.from_numpy(wh).to(dev).to(dtype).contiguous(memory_format=t.channels_last)
        holder = {}

        def call():
            holder["y"] = t.nn.functional.conv2d(x, w, padding=1)
            return holder["y"]

        timing = timed_rounds(call, self.sync_for(index), seconds)
        k = min(CONV_REF_CHANNELS, c)
        ref = conv_reference(x[0].double().cpu().numpy(), w[:k].double().cpu().numpy())
        err = rel_error(holder["y"][0, :k].double().cpu().numpy(), ref)
        on_gpu = bool(x.is_cuda)
        library = "cuDNN %s" % t.backends.cudnn.version() if on_gpu else "torch on %s, not cuDNN" % x.device.type
        t.backends.cudnn.allow_tf32 = True
        del x, w, holder
        if on_gpu:
            t.cuda.empty_cache()
        return conv_figures(timing, n, c, err, library)

    def memory(self, index, nbytes, seconds):
        t = self.t
        src = t.ones(nbytes // 4, device=t.device("cuda", index), dtype=t.float32)
        dst = t.empty_like(src)
        per, iters, mean = timed_rounds(lambda: dst.copy_(src), self.sync_for(index), seconds)
        ok = bool(t.equal(dst[:1024], src[:1024]))
        del src, dst
        t.cuda.empty_cache()
        return rates("gbs", 2.0 * nbytes / 1e9, per, mean, iters, bytes=nbytes, copy_ok=ok)

    def transfer(self, index, direction, nbytes, seconds):
        t = self.t
        host = t.empty(nbytes, dtype=t.uint8, pin_memory=True)
        dev = t.empty(nbytes, dtype=t.uint8, device=t.device("cuda", index))
        if direction == "h2d":
            per, iters, mean = timed_rounds(lambda: dev.copy_(host, non_blocking=True), self.sync_for(index), seconds)
        else:
            per, iters, mean = timed_rounds(lambda: host.copy_(dev, non_blocking=True), self.sync_for(index), seconds)
        pinned = bool(host.is_pinned())
        del host, dev
        t.cuda.empty_cache()
        return rates("gbs", nbytes / 1e9, per, mean, iters, bytes=nbytes, pinned=pinned)


class Cupy:
    name = "cupy"
    pinned = True

    def __init__(self):
        import cupy

        self.cp = cupy

    def versions(self):
        rt = self.cp.cuda.runtime
        ver = rt.runtimeGetVersion()
        return {
            "cupy": self.cp.__version__,
            "cuda": "%d.%d" % (ver // 1000, (ver % 1000) // 10),
            "numpy": dist_version("numpy"),
        }

    def devices(self):
        rt = self.cp.cuda.runtime
        try:
            count = rt.getDeviceCount()
        except Exception:
            return []
        found = []
        for index in range(count):
            prop = rt.getDeviceProperties(index)
            name = prop.get("name", b"")
            found.append(
                {
                    "index": index,
                    "name": name.decode() if isinstance(name, bytes) else str(name),
                    "compute_capability": "%d.%d" % (prop["major"], prop["minor"]),
                    "memory_total_mib": int(prop["totalGlobalMem"] // 1048576),
                    "pci_bus_id_short": "%04x:%02x:%02x.0"
                    % (prop.get("pciDomainID", 0), prop.get("pciBusID", 0), prop.get("pciDeviceID", 0)),
                }
            )
        return found

    def sync_for(self, index):
        cp = self.cp
        return lambda _last: cp.cuda.Device(index).synchronize()

    def matmul(self, index, kind, n, seconds):
        cp = self.cp
        if kind == "bf16":
            return {"skipped": "CuPy has no bfloat16 array type."}
        if kind == "tf32":
            return {"skipped": "CuPy switches TF32 only process-wide (CUPY_TF32); use the torch or jax backend for it."}
        dtype = {"fp32": cp.float32, "fp16": cp.float16}[kind]
        with cp.cuda.Device(index):
            rng = cp.random.default_rng(20240601)
            a = rng.standard_normal((n, n), dtype=cp.float32).astype(dtype)
            b = rng.standard_normal((n, n), dtype=cp.float32).astype(dtype)
            c = cp.empty((n, n), dtype=dtype)
            per, iters, mean = timed_rounds(lambda: cp.matmul(a, b, out=c), self.sync_for(index), seconds)
            rows = min(256, n)
            ref = cp.asnumpy(a[:rows]).astype("float64") @ cp.asnumpy(b[:, :rows]).astype("float64")
            err = rel_error(cp.asnumpy(c[:rows, :rows]), ref)
            del a, b, c
            cp.get_default_memory_pool().free_all_blocks()
        return rates("tflops", 2.0 * n**3 / 1e12, per, mean, iters, n=n, max_rel_err=err)

    def conv(self, index, kind, n, c, seconds):
        cp = self.cp
        try:
            from cupy import cudnn
        except ImportError as exc:
            return {
                "skipped": "CuPy cannot reach cuDNN (cupy.cudnn: %s); install nvidia-cudnn-cu12 for CuPy, or test "
                "convolutions with torch or jax." % exc
            }
        dtype = {"fp32": cp.float32, "fp16": cp.float16}[kind]
        xh, wh = conv_inputs(n, c)
        with cp.cuda.Device(index):
            x = cp.asarray(xh).astype(dtype)
            w = cp.asarray(wh).astype(dtype)
            y = cp.empty((n, c, CONV_HW, CONV_HW), dtype=dtype)

            def call():
                cudnn.convolution_forward(
                    x, w, None, y, (1, 1), (1, 1), (1, 1), 1, auto_tune=True, tensor_core="auto"
                )
                return y

            timing = timed_rounds(call, self.sync_for(index), seconds)
            k = min(CONV_REF_CHANNELS, c)
            ref = conv_reference(cp.asnumpy(x[0]), cp.asnumpy(w[:k]))
            err = rel_error(cp.asnumpy(y[0, :k]), ref)
            library = "cuDNN %s" % cp.cuda.cudnn.getVersion()
            del x, w, y
            cp.get_default_memory_pool().free_all_blocks()
        return conv_figures(timing, n, c, err, library)

    def memory(self, index, nbytes, seconds):
        cp = self.cp
        with cp.cuda.Device(index):
            src = cp.ones(nbytes // 4, dtype=cp.float32)
            dst = cp.empty_like(src)
            per, iters, mean = timed_rounds(lambda: cp.copyto(dst, src), self.sync_for(index), seconds)
            ok = bool((dst[:1024] == src[:1024]).all())
            del src, dst
            cp.get_default_memory_pool().free_all_blocks()
        return rates("gbs", 2.0 * nbytes / 1e9, per, mean, iters, bytes=nbytes, copy_ok=ok)

    def transfer(self, index, direction, nbytes, seconds):
        import cupyx

        cp = self.cp
        with cp.cuda.Device(index):
            host = cupyx.empty_pinned((nbytes,), dtype=cp.uint8)
            dev = cp.empty((nbytes,), dtype=cp.uint8)
            stream = cp.cuda.Stream(non_blocking=True)
            sync = lambda _last: stream.synchronize()  # noqa: E731
            if direction == "h2d":
                per, iters, mean = timed_rounds(lambda: dev.set(host, stream=stream), sync, seconds)
            else:
                try:
                    dev.get(stream=stream, out=host, blocking=False)
                    fetch = lambda: dev.get(stream=stream, out=host, blocking=False)  # noqa: E731
                except TypeError:
                    fetch = lambda: dev.get(stream=stream, out=host)  # noqa: E731
                stream.synchronize()
                per, iters, mean = timed_rounds(fetch, sync, seconds)
            del dev
            cp.get_default_memory_pool().free_all_blocks()
        return rates("gbs", nbytes / 1e9, per, mean, iters, bytes=nbytes, pinned=True)


class Jax:
    name = "jax"
    pinned = False

    def __init__(self):
        import jax
        import jax.numpy as jnp

        self.jax = jax
        self.jnp = jnp

    def versions(self):
        return {
            "jax": self.jax.__version__,
            "jaxlib": dist_version("jaxlib"),
            "cuda_plugin": dist_version("jax-cuda12-plugin", "jax-cuda13-plugin"),
            "numpy": dist_version("numpy"),
        }

    def gpu_devices(self):
        try:
            return [d for d in self.jax.devices() if d.platform == "gpu"]
        except RuntimeError:
            return []

    def devices(self):
        found = []
        for index, dev in enumerate(self.gpu_devices()):
            found.append(
                {
                    "index": index,
                    "name": dev.device_kind,
                    "compute_capability": str(getattr(dev, "compute_capability", "") or "") or None,
                    "memory_total_mib": None,
                    "pci_bus_id_short": None,
                }
            )
        return found

    def sync_for(self, index):
        return lambda last: last.block_until_ready()

    def matmul(self, index, kind, n, seconds):
        jax, jnp = self.jax, self.jnp
        dev = self.gpu_devices()[index]
        dtype = {"fp32": jnp.float32, "tf32": jnp.float32, "bf16": jnp.bfloat16, "fp16": jnp.float16}[kind]
        precision = jax.lax.Precision.HIGHEST if kind == "fp32" else jax.lax.Precision.DEFAULT
        key_a, key_b = jax.random.split(jax.random.PRNGKey(20240601))
        a = jax.device_put(jax.random.normal(key_a, (n, n), jnp.float32), dev).astype(dtype)
        b = jax.device_put(jax.random.normal(key_b, (n, n), jnp.float32), dev).astype(dtype)
        product = jax.jit(lambda x, y: jnp.matmul(x, y, precision=precision))
        holder = {}

        def call():
            holder["c"] = product(a, b)
            return holder["c"]

        per, iters, mean = timed_rounds(call, self.sync_for(index), seconds)
        import numpy as np

        rows = min(256, n)
        ref = np.asarray(a[:rows].astype(jnp.float32), dtype="float64") @ np.asarray(
            b[:, :rows].astype(jnp.float32), dtype="float64"
        )
        err = rel_error(np.asarray(holder["c"][:rows, :rows].astype(jnp.float32)), ref)
        return rates("tflops", 2.0 * n**3 / 1e12, per, mean, iters, n=n, max_rel_err=err)

    def conv(self, index, kind, n, c, seconds):
        jax, jnp = self.jax, self.jnp
        import numpy as np

        dev = self.gpu_devices()[index]
        dtype = {"fp32": jnp.float32, "fp16": jnp.float16}[kind]
        precision = jax.lax.Precision.HIGHEST if kind == "fp32" else jax.lax.Precision.DEFAULT
        xh, wh = conv_inputs(n, c)
        x = jax.device_put(xh, dev).astype(dtype)
        w = jax.device_put(wh, dev).astype(dtype)
        numbers = ("NCHW", "OIHW", "NCHW")
        conv = jax.jit(
            lambda a, b: jax.lax.conv_general_dilated(
                a, b, (1, 1), ((1, 1), (1, 1)), dimension_numbers=numbers, precision=precision
            )
        )
        holder = {}

        def call():
            holder["y"] = conv(x, w)
            return holder["y"]

        timing = timed_rounds(call, self.sync_for(index), seconds)
        k = min(CONV_REF_CHANNELS, c)
        ref = conv_reference(np.asarray(x[0].astype(jnp.float32)), np.asarray(w[:k].astype(jnp.float32)))
        err = rel_error(np.asarray(holder["y"][0, :k].astype(jnp.float32)), ref)
        platform = list(x.devices())[0].platform
        library = "cuDNN through XLA" if platform in ("gpu", "cuda") else "XLA on %s, not cuDNN" % platform
        return conv_figures(timing, n, c, err, library)

    def memory(self, index, nbytes, seconds):
        jax, jnp = self.jax, self.jnp
        dev = self.gpu_devices()[index]
        src = jax.device_put(jnp.ones((nbytes // 4,), jnp.float32), dev)
        step = jax.jit(lambda x: x + 1.0)
        per, iters, mean = timed_rounds(lambda: step(src), self.sync_for(index), seconds)
        ok = bool(float(step(src)[0]) == 2.0)
        return rates("gbs", 2.0 * nbytes / 1e9, per, mean, iters, bytes=nbytes, copy_ok=ok)

    def transfer(self, index, direction, nbytes, seconds):
        return {"skipped": "The jax backend has no pinned host buffers here; use torch or cupy for H2D/D2H."}


class TensorFlow:
    name = "tensorflow"
    pinned = False

    def __init__(self):
        import tensorflow as tf

        self.tf = tf
        for gpu in tf.config.list_physical_devices("GPU"):
            try:
                tf.config.experimental.set_memory_growth(gpu, True)
            except RuntimeError:
                pass

    def versions(self):
        info = {}
        try:
            info = dict(self.tf.sysconfig.get_build_info())
        except Exception:
            info = {}
        return {
            "tensorflow": self.tf.__version__,
            "cuda": info.get("cuda_version"),
            "cudnn": info.get("cudnn_version"),
            "numpy": dist_version("numpy"),
        }

    def devices(self):
        tf = self.tf
        found = []
        for index, gpu in enumerate(tf.config.list_physical_devices("GPU")):
            details = tf.config.experimental.get_device_details(gpu)
            cc = details.get("compute_capability")
            found.append(
                {
                    "index": index,
                    "name": details.get("device_name"),
                    "compute_capability": "%d.%d" % tuple(cc) if cc else None,
                    "memory_total_mib": None,
                    "pci_bus_id_short": None,
                }
            )
        return found

    def sync_for(self, index):
        return lambda last: last[0].numpy() if last is not None else None

    def matmul(self, index, kind, n, seconds):
        tf = self.tf
        dtype = {"fp32": tf.float32, "tf32": tf.float32, "bf16": tf.bfloat16, "fp16": tf.float16}[kind]
        tf.config.experimental.enable_tensor_float_32_execution(kind == "tf32")
        with tf.device("/GPU:%d" % index):
            gen = tf.random.Generator.from_seed(20240601)
            a = tf.cast(gen.normal((n, n)), dtype)
            b = tf.cast(gen.normal((n, n)), dtype)
            product = tf.function(lambda x, y: tf.linalg.matmul(x, y))
            holder = {}

            def call():
                holder["c"] = product(a, b)
                return holder["c"]

            per, iters, mean = timed_rounds(call, self.sync_for(index), seconds)
            rows = min(256, n)
            ref = tf.cast(a[:rows], tf.float64).numpy() @ tf.cast(b[:, :rows], tf.float64).numpy()
            err = rel_error(tf.cast(holder["c"][:rows, :rows], tf.float64).numpy(), ref)
        tf.config.experimental.enable_tensor_float_32_execution(False)
        return rates("tflops", 2.0 * n**3 / 1e12, per, mean, iters, n=n, max_rel_err=err)

    def conv(self, index, kind, n, c, seconds):
        tf = self.tf
        dtype = {"fp32": tf.float32, "fp16": tf.float16}[kind]
        xh, wh = conv_inputs(n, c)
        with tf.device("/GPU:%d" % index):
            x = tf.cast(tf.constant(xh.transpose(0, 2, 3, 1)), dtype)
            w = tf.cast(tf.constant(wh.transpose(2, 3, 1, 0)), dtype)
            conv = tf.function(lambda a, b: tf.nn.conv2d(a, b, 1, "SAME"))
            holder = {}

            def call():
                holder["y"] = conv(x, w)
                return holder["y"]

            timing = timed_rounds(call, self.sync_for(index), seconds)
            k = min(CONV_REF_CHANNELS, c)
            image = tf.cast(x[0], tf.float64).numpy().transpose(2, 0, 1)
            filters = tf.cast(w[:, :, :, :k], tf.float64).numpy().transpose(3, 2, 0, 1)
            err = rel_error(tf.cast(holder["y"][0, :, :, :k], tf.float64).numpy().transpose(2, 0, 1),
                            conv_reference(image, filters))
        library = "cuDNN %s" % self.versions().get("cudnn") if "GPU" in holder["y"].device else "TensorFlow on CPU"
        return conv_figures(timing, n, c, err, library)

    def memory(self, index, nbytes, seconds):
        tf = self.tf
        with tf.device("/GPU:%d" % index):
            src = tf.ones((nbytes // 4,), tf.float32)
            step = tf.function(lambda x: x + 1.0)
            per, iters, mean = timed_rounds(lambda: step(src), self.sync_for(index), seconds)
            ok = bool(float(step(src)[0].numpy()) == 2.0)
        return rates("gbs", 2.0 * nbytes / 1e9, per, mean, iters, bytes=nbytes, copy_ok=ok)

    def transfer(self, index, direction, nbytes, seconds):
        return {"skipped": "TensorFlow has no pinned host-buffer API; use torch or cupy for H2D/D2H."}


BACKENDS = {"torch": Torch, "cupy": Cupy, "jax": Jax, "tensorflow": TensorFlow}
WEIGHTS = {
    "matmul_fp32": 0.16,
    "matmul_tf32": 0.12,
    "matmul_bf16": 0.12,
    "matmul_fp16": 0.12,
    "memory_bw": 0.16,
    "h2d": 0.16,
    "d2h": 0.16,
    "conv_fp32": 0.08,
    "conv_fp16": 0.08,
}


def run_check(backend, device, check, seconds, config):
    index = device["index"]
    if check.startswith("matmul_"):
        kind = check.split("_", 1)[1]
        need = DTYPE_MIN_CC[kind]
        have = cc_tuple(device.get("compute_capability"))
        if device.get("compute_capability") and have < need:
            return {
                "skipped": "Compute capability %s has no %s tensor-core path (needs %d.%d)."
                % (device["compute_capability"], kind, need[0], need[1])
            }
        size = int(config["matmul_size"])
        memory = device.get("memory_total_mib")
        if memory and memory < 12 * 1024:
            size = min(size, 4096)
        return backend.matmul(index, kind, size, seconds)
    if check.startswith("conv_"):
        kind = check.split("_", 1)[1]
        need = DTYPE_MIN_CC[kind]
        if device.get("compute_capability") and cc_tuple(device["compute_capability"]) < need:
            return {
                "skipped": "Compute capability %s has no %s convolution path (needs %d.%d)."
                % (device["compute_capability"], kind, need[0], need[1])
            }
        batch, channels = int(config.get("conv_batch", 32)), int(config.get("conv_channels", 256))
        return backend.conv(index, kind, batch, channels, seconds)
    if check == "memory_bw":
        return backend.memory(index, int(config["memory_mib"]) * 1048576, seconds)
    return backend.transfer(index, check, int(config["copy_mib"]) * 1048576, seconds)


def run(config):
    backend = BACKENDS[config["backend"]]()
    doc = {"backend": backend.name, "versions": backend.versions(), "python": sys.executable, "gpus": []}
    devices = backend.devices()
    if not devices:
        doc["reason"] = "The %s backend sees no GPU." % backend.name
        return doc
    checks = list(config["checks"])
    total_weight = sum(WEIGHTS[c] for c in checks) or 1.0
    per_gpu = float(config["time_budget"]) / len(devices)
    for device in devices:
        entry = dict(device)
        entry["checks"] = {}
        for check in checks:
            seconds = max(0.05, per_gpu * WEIGHTS[check] / total_weight)
            started = time.perf_counter()
            try:
                result = run_check(backend, device, check, seconds, config)
            except Exception as exc:
                result = {"error": "%s: %s" % (type(exc).__name__, exc)}
            result["seconds"] = round(time.perf_counter() - started, 3)
            entry["checks"][check] = result
        doc["gpus"].append(entry)
    return doc


main(run)
"""
)

XLA = (
    COMMON
    + r"""
import numpy as np


def tf_chain(tf, x, steps):
    y = x
    for _ in range(steps):
        y = tf.nn.gelu(y * 1.0009765625 + 0.03125, approximate=True)
        y = tf.tanh(y) * 0.75 + y * 0.25
    return y


def jax_chain(jnp, jax, x, steps):
    y = x
    for _ in range(steps):
        y = jax.nn.gelu(y * 1.0009765625 + 0.03125, approximate=True)
        y = jnp.tanh(y) * 0.75 + y * 0.25
    return y


def measure(fn, sync, seconds):
    start = time.perf_counter()
    first = fn()
    sync(first)
    first_s = time.perf_counter() - start
    per, iters = timed(fn, sync, seconds)
    return first, first_s, per, iters


def compare(got, ref, rtol, atol):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    diff = np.abs(got - ref)
    return {
        "allclose": bool(np.allclose(got, ref, rtol=rtol, atol=atol)) and bool(np.isfinite(got).all()),
        "max_abs_err": float(np.max(diff)) if np.isfinite(diff).all() else None,
        "max_rel_err": float(np.max(diff / np.maximum(np.abs(ref), 1e-30))) if np.isfinite(diff).all() else None,
        "rtol": rtol,
        "atol": atol,
        "elements": int(ref.size),
    }


def pick_device(want, have_gpu):
    if want == "gpu" and not have_gpu:
        return None
    if want == "auto":
        return "gpu" if have_gpu else "cpu"
    return want


def run_tensorflow(config):
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:
            pass
    tf.config.experimental.enable_tensor_float_32_execution(False)
    doc = {"backend": "tensorflow", "versions": {"tensorflow": tf.__version__, "numpy": np.__version__}}
    device = pick_device(config["device"], bool(gpus))
    if device is None:
        doc["skipped"] = "device=gpu was asked for but TensorFlow sees no GPU."
        return doc
    doc["device"] = device
    n, steps, seconds = int(config["size"]), int(config["steps"]), float(config["time_budget"])
    with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
        x = tf.random.stateless_uniform((n, n), seed=(20, 24), minval=-3.0, maxval=3.0, dtype=tf.float32)
        graph = tf.function(lambda v: tf_chain(tf, v, steps), jit_compile=False)
        xla = tf.function(lambda v: tf_chain(tf, v, steps), jit_compile=True)
        sync = lambda last: last[0, 0].numpy()  # noqa: E731
        ref, ref_first, ref_per, ref_iters = measure(lambda: graph(x), sync, seconds / 2)
        got, xla_first, xla_per, xla_iters = measure(lambda: xla(x), sync, seconds / 2)
    doc["result"] = build(n, steps, ref_first, ref_per, ref_iters, xla_first, xla_per, xla_iters)
    doc["result"]["reference"] = "tf.function without XLA (graph mode)"
    doc["result"]["compiled"] = "tf.function(jit_compile=True)"
    doc["result"].update(compare(got.numpy(), ref.numpy(), float(config["rtol"]), float(config["atol"])))
    return doc


def run_jax(config):
    import jax
    import jax.numpy as jnp

    try:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except RuntimeError:
        gpus = []
    versions = {"jax": jax.__version__, "jaxlib": dist_version("jaxlib"), "numpy": np.__version__}
    doc = {"backend": "jax", "versions": versions}
    device = pick_device(config["device"], bool(gpus))
    if device is None:
        doc["skipped"] = "device=gpu was asked for but JAX sees no GPU."
        return doc
    doc["device"] = device
    target = gpus[0] if device == "gpu" else jax.devices("cpu")[0]
    n, steps, seconds = int(config["size"]), int(config["steps"]), float(config["time_budget"])
    x = jax.device_put(
        jax.random.uniform(jax.random.PRNGKey(2024), (n, n), jnp.float32, minval=-3.0, maxval=3.0), target
    )
    x.block_until_ready()
    chain = lambda v: jax_chain(jnp, jax, v, steps)  # noqa: E731
    sync = lambda last: last.block_until_ready()  # noqa: E731
    start = time.perf_counter()
    compiled = jax.jit(chain).lower(x).compile()
    compile_s = time.perf_counter() - start
    ref, ref_first, ref_per, ref_iters = measure(lambda: chain(x), sync, seconds / 2)
    got, xla_first, xla_per, xla_iters = measure(lambda: compiled(x), sync, seconds / 2)
    doc["result"] = build(n, steps, ref_first, ref_per, ref_iters, xla_first, xla_per, xla_iters)
    doc["result"]["compile_s"] = round(compile_s, 4)
    doc["result"]["reference"] = "op-by-op dispatch (no jax.jit)"
    doc["result"]["compiled"] = "jax.jit(...).lower(x).compile()"
    doc["result"].update(compare(np.asarray(got), np.asarray(ref), float(config["rtol"]), float(config["atol"])))
    return doc


def run_torch(config):
    versions = {"torch": dist_version("torch"), "torch_xla": dist_version("torch-xla", "torch_xla")}
    doc = {"backend": "torch", "versions": versions}
    doc["skipped"] = (
        "torch.compile is not XLA; an XLA check for PyTorch needs torch_xla, which this module does not drive."
    )
    return doc


def build(n, steps, ref_first, ref_per, ref_iters, xla_first, xla_per, xla_iters):
    return {
        "shape": [n, n],
        "steps": steps,
        "compile_s": round(max(xla_first - xla_per, 0.0), 4),
        "first_call_s": round(xla_first, 4),
        "reference_first_call_s": round(ref_first, 4),
        "steady_xla_s": xla_per,
        "steady_reference_s": ref_per,
        "iterations_xla": xla_iters,
        "iterations_reference": ref_iters,
        "speedup": ref_per / xla_per if xla_per > 0 else None,
    }


def run(config):
    backend = config["backend"]
    if backend == "tensorflow":
        return run_tensorflow(config)
    if backend == "jax":
        return run_jax(config)
    if backend == "torch":
        return run_torch(config)
    return {"backend": backend, "versions": {}, "skipped": "%s has no XLA path." % backend}


main(run)
"""
)

TRT = (
    COMMON
    + r"""
import numpy as np

WIDTH = 1024
LAYERS = 4


def weights():
    rng = np.random.default_rng(20240601)
    return [
        (
            (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32),
            (rng.standard_normal((WIDTH,)) * 0.1).astype(np.float32),
        )
        for _ in range(LAYERS)
    ]


def reference(x, params):
    y = x.astype(np.float64)
    for w, b in params:
        y = np.maximum(y @ w.astype(np.float64) + b.astype(np.float64), 0.0)
    return y


def error(got, ref):
    got = np.asarray(got, dtype=np.float64)
    if not np.isfinite(got).all():
        return None
    return float(np.max(np.abs(got - ref)) / max(float(np.max(np.abs(ref))), 1e-30))


def run_tensorrt(config, doc):
    import tensorrt as trt

    doc["versions"]["tensorrt"] = trt.__version__
    runtime_lib = None
    for name in ("torch", "cupy"):
        try:
            runtime_lib = __import__(name)
            break
        except ImportError:
            continue
    if runtime_lib is None:
        doc["skipped"] = "TensorRT is importable but neither torch nor cupy is there to hold device buffers."
        return doc
    batch = int(config["batch"])
    params = weights()
    x = np.random.default_rng(7).standard_normal((batch, WIDTH)).astype(np.float32)
    ref = reference(x, params)
    logger = trt.Logger(trt.Logger.ERROR)
    precisions = {}
    for precision in config["precisions"]:
        builder = trt.Builder(logger)
        if precision == "fp16" and not getattr(builder, "platform_has_fast_fp16", True):
            precisions[precision] = {"skipped": "This GPU has no fast fp16 path in TensorRT."}
            continue
        flags = 0
        explicit = getattr(getattr(trt, "NetworkDefinitionCreationFlag", None), "EXPLICIT_BATCH", None)
        if explicit is not None:
            flags = 1 << int(explicit)
        network = builder.create_network(flags)
        tensor = network.add_input("x", trt.float32, (batch, WIDTH))
        # TensorRT reads constant weights when it builds, so the arrays must outlive the build.
        keep = [(np.ascontiguousarray(w), np.ascontiguousarray(b.reshape(1, WIDTH))) for w, b in params]
        for w, b in keep:
            wc = network.add_constant((WIDTH, WIDTH), trt.Weights(w))
            none = trt.MatrixOperation.NONE
            mm = network.add_matrix_multiply(tensor, none, wc.get_output(0), none)
            bc = network.add_constant((1, WIDTH), trt.Weights(b))
            add = network.add_elementwise(mm.get_output(0), bc.get_output(0), trt.ElementWiseOperation.SUM)
            act = network.add_activation(add.get_output(0), trt.ActivationType.RELU)
            tensor = act.get_output(0)
        tensor.name = "y"
        network.mark_output(tensor)
        cfg = builder.create_builder_config()
        if precision == "fp16":
            cfg.set_flag(trt.BuilderFlag.FP16)
        start = time.perf_counter()
        plan = builder.build_serialized_network(network, cfg)
        build_s = time.perf_counter() - start
        if plan is None:
            precisions[precision] = {"error": "TensorRT could not build the engine."}
            continue
        engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
        context = engine.create_execution_context()
        precisions[precision] = execute(runtime_lib, context, x, ref, build_s, float(config["time_budget"]) / 4)
    doc["precisions"] = precisions
    doc["baseline"] = framework_baseline(runtime_lib, x, params, float(config["time_budget"]) / 4)
    return doc


def execute(lib, context, x, ref, build_s, seconds):
    if lib.__name__ == "torch":
        xin = lib.from_numpy(x).cuda()
        out = lib.empty((x.shape[0], WIDTH), dtype=lib.float32, device="cuda")
        stream = lib.cuda.Stream()
        handle, xptr, yptr = stream.cuda_stream, xin.data_ptr(), out.data_ptr()
        sync = lambda _last: stream.synchronize()  # noqa: E731
        fetch = lambda: out.cpu().numpy()  # noqa: E731
    else:
        xin = lib.asarray(x)
        out = lib.empty((x.shape[0], WIDTH), dtype=lib.float32)
        stream = lib.cuda.Stream(non_blocking=True)
        handle, xptr, yptr = stream.ptr, xin.data.ptr, out.data.ptr
        sync = lambda _last: stream.synchronize()  # noqa: E731
        fetch = lambda: lib.asnumpy(out)  # noqa: E731
    if hasattr(context, "set_tensor_address"):
        context.set_tensor_address("x", xptr)
        context.set_tensor_address("y", yptr)
        call = lambda: context.execute_async_v3(handle)  # noqa: E731
    else:
        call = lambda: context.execute_async_v2([xptr, yptr], handle)  # noqa: E731
    per, iters = timed(call, sync, seconds)
    return {
        "latency_ms": per * 1e3,
        "iterations": iters,
        "build_s": round(build_s, 3),
        "max_rel_err": error(fetch(), ref),
    }


def framework_baseline(lib, x, params, seconds):
    if lib.__name__ == "torch":
        t = lib
        t.backends.cuda.matmul.allow_tf32 = False
        xin = t.from_numpy(x).cuda()
        ws = [(t.from_numpy(w).cuda(), t.from_numpy(b).cuda()) for w, b in params]

        def call():
            y = xin
            for w, b in ws:
                y = t.relu(y @ w + b)
            return y

        per, iters = timed(call, lambda _last: t.cuda.synchronize(), seconds)
        return {"framework": "torch", "latency_ms": per * 1e3, "iterations": iters}
    cp = lib
    xin = cp.asarray(x)
    ws = [(cp.asarray(w), cp.asarray(b)) for w, b in params]

    def call_cp():
        y = xin
        for w, b in ws:
            y = cp.maximum(y @ w + b, 0)
        return y

    per, iters = timed(call_cp, lambda _last: cp.cuda.Device().synchronize(), seconds)
    return {"framework": "cupy", "latency_ms": per * 1e3, "iterations": iters}


def run_tftrt(config, doc, tf):
    import tempfile

    from tensorflow.python.compiler.tensorrt import trt_convert

    batch = int(config["batch"])
    params = weights()
    x = np.random.default_rng(7).standard_normal((batch, WIDTH)).astype(np.float32)
    ref = reference(x, params)

    class Mlp(tf.Module):
        def __init__(self):
            self.params = [(tf.constant(w), tf.constant(b)) for w, b in params]

        @tf.function(input_signature=[tf.TensorSpec((batch, WIDTH), tf.float32)])
        def __call__(self, v):
            for w, b in self.params:
                v = tf.nn.relu(tf.linalg.matmul(v, w) + b)
            return {"y": v}

    tf.config.experimental.enable_tensor_float_32_execution(False)
    work = tempfile.mkdtemp(prefix="dlstack-tftrt-")
    saved = os.path.join(work, "saved")
    model = Mlp()
    tf.saved_model.save(model, saved, signatures=model.__call__)
    xin = tf.constant(x)
    sync = lambda last: last["y"][0, 0].numpy()  # noqa: E731
    base, base_iters = timed(lambda: model(xin), sync, float(config["time_budget"]) / 4)
    doc["baseline"] = {"framework": "tensorflow", "latency_ms": base * 1e3, "iterations": base_iters}
    precisions = {}
    for precision in config["precisions"]:
        start = time.perf_counter()
        converter = trt_convert.TrtGraphConverterV2(
            input_saved_model_dir=saved,
            precision_mode=getattr(trt_convert.TrtPrecisionMode, precision.upper()),
        )
        converter.convert()
        converter.build(input_fn=lambda: iter([[xin]]))
        out_dir = os.path.join(work, precision)
        converter.save(out_dir)
        build_s = time.perf_counter() - start
        func = tf.saved_model.load(out_dir).signatures["serving_default"]
        per, iters = timed(lambda: func(v=xin), sync, float(config["time_budget"]) / 4)
        precisions[precision] = {
            "latency_ms": per * 1e3,
            "iterations": iters,
            "build_s": round(build_s, 3),
            "max_rel_err": error(func(v=xin)["y"].numpy(), ref),
        }
    doc["precisions"] = precisions
    return doc


def run(config):
    doc = {"versions": {"numpy": np.__version__}}
    backend = config["backend"]
    if backend == "tf-trt":
        import tensorflow as tf

        doc["backend"] = "tf-trt"
        doc["versions"]["tensorflow"] = tf.__version__
        info = dict(tf.sysconfig.get_build_info())
        doc["versions"]["tensorrt"] = info.get("tensorrt_version")
        if not info.get("is_tensorrt_build"):
            doc["skipped"] = "This TensorFlow build has no TensorRT support (TF-TRT ended with TF 2.17)."
            return doc
        if not tf.config.list_physical_devices("GPU"):
            doc["skipped"] = "TensorFlow sees no GPU."
            return doc
        return run_tftrt(config, doc, tf)
    doc["backend"] = "tensorrt"
    return run_tensorrt(config, doc)


main(run)
"""
)

SCRIPTS: Dict[str, str] = {"probe": PROBE, "gpu": GPU, "xla": XLA, "trt": TRT}
