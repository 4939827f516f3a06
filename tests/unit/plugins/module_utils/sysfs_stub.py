"""Stub sysfs PCI trees built from the recorded machines in fixtures/sysfs (shared by unit tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import yaml

SYSFS_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sysfs"


def machines() -> List[str]:
    return sorted(p.name for p in SYSFS_FIXTURES.glob("*.yml"))


def load(name: str) -> Dict[str, Any]:
    return yaml.safe_load((SYSFS_FIXTURES / name).read_text())


def build(root: Path, devices: List[Dict[str, str]]) -> Path:
    """One folder per PCI address with vendor, device and class files and, if given, a driver link."""
    root.mkdir(parents=True, exist_ok=True)
    for dev in devices:
        folder = root / dev["address"]
        folder.mkdir()
        for key in ("vendor", "device", "class"):
            (folder / key).write_text(dev[key] + "\n")
        if dev.get("driver"):
            target = root.parent / "drivers" / dev["driver"]
            target.mkdir(parents=True, exist_ok=True)
            (folder / "driver").symlink_to(target)
    return root
