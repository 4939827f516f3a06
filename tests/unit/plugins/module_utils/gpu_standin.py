"""GPU stand-in for tests: run a workload script with the backend's GPU API answered by the CPU.

    python gpu_standin.py [--devices N] [--cc X.Y] BACKEND SCRIPT CONFIG

Test-only; nothing in plugins/ knows about it. It patches the few GPU entry points the gpu workload
uses (torch: torch.cuda.*, torch.device("cuda", i), pinned host buffers; jax: the gpu device list and
device_put), then runs SCRIPT as __main__ with CONFIG as its argument, so the workload's own code runs
unchanged on CPU tensors. Every stand-in device is named STANDIN_NAME, which no GPU spec row matches,
so a verdict on a stand-in result can never read as a real GPU pass.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import types
from typing import Any, Callable, List

STANDIN_NAME = "CPU stand-in for a GPU (gpulab.dlstack tests)"
# torch stand-in device i reports PCI address 0000:e0+i:00.0, as torch.cuda device properties carry one.
STANDIN_PCI_BUS = 0xE0


def host_memory_bytes() -> int:
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def patch_torch(count: int, major: int, minor: int) -> None:
    import torch  # noqa: PLC0415 (only in the environment under test)

    real_device = torch.device
    real_empty = torch.empty

    def check_index(index: Any) -> None:
        if index is not None and not 0 <= int(index) < count:
            raise RuntimeError(f"GPU stand-in: invalid device ordinal {index} (it has {count} device(s))")

    class DeviceMeta(type):
        def __instancecheck__(cls, obj: object) -> bool:
            return isinstance(obj, real_device)

        def __call__(cls, kind: Any, index: Any = None) -> Any:
            text = str(kind)
            if text.partition(":")[0] == "cuda":
                check_index(index if index is not None else (text.partition(":")[2] or None))
                return real_device("cpu")
            return real_device(kind) if index is None else real_device(kind, index)

    class StandinDevice(metaclass=DeviceMeta):
        """torch.device with "cuda" answered by the CPU device."""

    def properties(index: int) -> types.SimpleNamespace:
        check_index(index)
        return types.SimpleNamespace(
            name=STANDIN_NAME,
            major=major,
            minor=minor,
            total_memory=host_memory_bytes(),
            pci_domain_id=0,
            pci_bus_id=STANDIN_PCI_BUS + index,
            pci_device_id=0,
        )

    def empty(*args: Any, **kwargs: Any) -> Any:
        # Pinning needs a CUDA context; the host buffer stays pageable, and is_pinned() says so.
        kwargs.pop("pin_memory", None)
        return real_empty(*args, **kwargs)

    torch.device = StandinDevice
    torch.empty = empty
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: count
    torch.cuda.get_device_properties = properties
    torch.cuda.synchronize = lambda device=None: check_index(device)
    torch.cuda.empty_cache = lambda: None


class JaxStandinDevice:
    """A jax CPU device that answers to platform "gpu"; jax.device_put unwraps it."""

    platform = "gpu"
    device_kind = STANDIN_NAME

    def __init__(self, cpu: Any, compute_capability: str) -> None:
        self.cpu = cpu
        self.compute_capability = compute_capability

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cpu, name)


def patch_jax(count: int, major: int, minor: int) -> None:
    import jax  # noqa: PLC0415 (only in the environment under test)

    jax.config.update("jax_num_cpu_devices", count)
    real_devices: Callable[..., List[Any]] = jax.devices
    real_put = jax.device_put
    cc = f"{major}.{minor}"

    def devices(backend: Any = None) -> List[Any]:
        if backend in (None, "gpu", "cuda"):
            return [JaxStandinDevice(d, cc) for d in real_devices("cpu")]
        return real_devices(backend)

    def device_put(x: Any, device: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(device, JaxStandinDevice):
            device = device.cpu
        return real_put(x, device, *args, **kwargs)

    jax.devices = devices
    jax.device_put = device_put


PATCHES = {"torch": patch_torch, "jax": patch_jax}


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=1, help="how many stand-in GPUs to show")
    parser.add_argument("--cc", default="9.0", help="compute capability they report (9.0 gates no precision)")
    parser.add_argument("backend", choices=sorted(PATCHES))
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    major, minor = (int(part) for part in opts.cc.split("."))
    PATCHES[opts.backend](opts.devices, major, minor)
    sys.argv = [opts.script, *opts.args]
    runpy.run_path(opts.script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
