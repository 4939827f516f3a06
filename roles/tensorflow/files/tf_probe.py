# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import TensorFlow in this interpreter and print one JSON line: version, devices, optional XLA check."""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from typing import Any


def xla_check(tf: Any, np: Any) -> dict[str, Any]:
    values = np.linspace(-2.0, 3.0, 4096, dtype=np.float32)
    expected = float(np.sum(np.tanh(values) * 2.0 + 1.0, dtype=np.float64))

    @tf.function(jit_compile=True)
    def fused(x: Any) -> Any:
        return tf.reduce_sum(tf.cast(tf.tanh(x) * 2.0 + 1.0, tf.float64))

    value = float(fused(tf.constant(values)))
    tolerance = 1e-4 * abs(expected) + 1e-3
    return {"ok": abs(value - expected) <= tolerance, "value": value, "expected": expected}


def cuda_wheels() -> dict[str, str]:
    """Installed versions of the wheels TensorFlow's and-cuda extra brings (nvidia-*, tensorrt), by normalised name."""
    found: dict[str, str] = {}
    try:
        metadata = importlib.import_module("importlib.metadata")
    except ImportError:  # Python 3.7 and older (TensorFlow 2.11 and older): no and-cuda extra to read back
        return found
    for dist in metadata.distributions():
        name = re.sub(r"[-_.]+", "-", str(dist.metadata["Name"] or "")).lower()
        if name.startswith("nvidia-") or name == "tensorrt":
            found[name] = dist.version
    return dict(sorted(found.items()))


def main() -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    version = sys.version_info
    report: dict[str, Any] = {
        "python": f"{version[0]}.{version[1]}.{version[2]}",
        "imported": False,
        "cuda_wheels": cuda_wheels(),
    }
    try:
        tf = importlib.import_module("tensorflow")
        np = importlib.import_module("numpy")
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        print(json.dumps(report))
        return 0

    devices = tf.config.list_physical_devices()
    report.update(
        imported=True,
        version=tf.__version__,
        numpy=np.__version__,
        built_with_cuda=bool(tf.test.is_built_with_cuda()),
        devices=[{"name": d.name, "type": d.device_type} for d in devices],
        gpus=[d.name for d in devices if d.device_type == "GPU"],
        ld_library_path=os.environ.get("LD_LIBRARY_PATH", ""),
    )
    if "--xla" in sys.argv[1:]:
        try:
            report["xla"] = xla_check(tf, np)
        except Exception as exc:
            report["xla"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
