"""Build a deterministic wheel from the probe package (runs inside a Bazel genrule)."""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import subprocess
import zipfile

NAME = "dlstack_tfbuild_probe"
VERSION = "1.0.0"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
ENV_KEYS = ("PYTHON_BIN_PATH", "TF_NEED_CUDA", "TF_CUDA_COMPUTE_CAPABILITIES", "TF_CUDA_VERSION", "TF_CUDNN_VERSION")
STAMP = (1980, 1, 1, 0, 0, 0)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--probe", required=True)
    parser.add_argument("--package", required=True)
    parser.add_argument("--release", required=True, help="file naming the tree's release, as the wheel records it")
    args = parser.parse_args()

    isa = json.loads(subprocess.run([args.probe], check=True, capture_output=True, text=True).stdout)
    with open(args.release, encoding="utf-8") as handle:
        release = handle.read().strip()
    info = {"isa": isa, "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ}, "release": release}
    with open(args.package, "rb") as handle:
        init = handle.read()
    files = {
        f"{NAME}/__init__.py": init,
        f"{NAME}/build_info.json": (json.dumps(info, indent=1, sort_keys=True) + "\n").encode(),
        f"{DIST_INFO}/METADATA": (
            f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: Test wheel built by the gpulab.dlstack tensorflow_build role\n"
        ).encode(),
        f"{DIST_INFO}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: dlstack-tfbuild-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [_record_line(path, data) for path, data in sorted(files.items())]
    record.append(f"{DIST_INFO}/RECORD,,")
    files[f"{DIST_INFO}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(args.out, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for path in sorted(files):
            entry = zipfile.ZipInfo(path, date_time=STAMP)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, files[path])


if __name__ == "__main__":
    main()
