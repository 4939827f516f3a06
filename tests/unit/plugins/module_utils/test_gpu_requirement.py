"""Whether a GPU check that cannot run fails or skips: the profile, the PCI bus, and the user's opt-out.

Before this decision existed, every case below that expects `fail` came out `skip` on a GPU host and
the host verified healthy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _gpu_info as gi
from ansible_collections.gpulab.dlstack.plugins.module_utils import _verdict as v

SMI = "/usr/bin/nvidia-smi"
Answer = Tuple[int, str, str]


@pytest.mark.parametrize(
    ("required", "profile", "pci", "seen", "expected"),
    [
        (None, "gpu", False, False, True),
        (None, "gpu", True, False, True),
        (None, "auto", True, False, True),
        (None, "auto", False, True, True),
        (None, "auto", False, False, False),
        (None, "cpu", True, True, False),
        (False, "gpu", True, True, False),
        (True, "cpu", False, False, True),
    ],
)
def test_gpu_requirement(required: Optional[bool], profile: str, pci: bool, seen: bool, expected: bool) -> None:
    needed = v.gpu_requirement(required, profile, pci, seen)
    assert needed["required"] is expected
    assert needed["explicit"] is (required is not None)
    assert needed["basis"]


def test_unavailable_fails_with_the_reason_and_the_opt_out_on_a_gpu_host() -> None:
    outcome = v.unavailable(v.gpu_requirement(None, "gpu"), "No GPU to test: no driver.")
    assert outcome["status"] == "fail"
    assert outcome["reason"].startswith("No GPU to test: no driver. The host's profile is gpu")
    assert "verify_require_gpu: false" in outcome["reason"]
    explicit = v.unavailable(v.gpu_requirement(True, "cpu"), "no driver.")
    assert explicit["status"] == "fail" and "verify_require_gpu" not in explicit["reason"]


@pytest.mark.parametrize("needed", [v.gpu_requirement(None, "cpu"), v.gpu_requirement(False, "gpu")])
def test_unavailable_skips_on_a_cpu_host_or_after_the_opt_out(needed: Dict[str, object]) -> None:
    outcome = v.unavailable(needed, "no driver.")
    assert outcome["status"] == "skip"
    assert outcome["reason"].startswith("no driver. ")


class FakeRun:
    def __init__(self, answers: List[Answer]) -> None:
        self.answers = list(answers)

    def __call__(self, cmd: List[str]) -> Answer:
        return self.answers.pop(0)


def nvidia_on_pci(root: Path, driver: Optional[str]) -> None:
    node = root / "0000:18:00.0"
    node.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("device", "0x2330"), ("class", "0x030200")):
        (node / name).write_text(value + "\n")
    if driver:
        (root / "drivers" / driver).mkdir(parents=True)
        (node / "driver").symlink_to(root / "drivers" / driver)


# (case, nvidia-smi answers or None when it is not installed, kernel driver bound on the PCI bus, in a
# container, words the reason must carry)
BROKEN = [
    ("driver not loaded", [(255, "Failed to initialize NVML: Unknown Error\n", "")], None, False, "No NVIDIA driver"),
    (
        "reboot pending",
        [(18, "Failed to initialize NVML: Driver/library version mismatch\n", "")],
        "nvidia",
        False,
        "reboot the host",
    ),
    (
        "GPU lost",
        # The CSV query, then the banner read for the CUDA version (the healthy GPUs are kept).
        [(15, "Unable to determine the device handle for GPU0000:18:00.0: GPU is lost.  Reboot the system.\n", "")] * 2,
        "nvidia",
        False,
        "fell off the bus or is lost",
    ),
    ("no devices", [(6, "No devices were found\n", "")], "nvidia", False, "reports no devices"),
    ("nouveau bound", None, "nouveau", False, "bound to: nouveau"),
    ("container without device", [(255, "Failed to initialize NVML: Unknown Error\n", "")], None, True, "container"),
]


@pytest.mark.parametrize("broken", BROKEN, ids=[c[0] for c in BROKEN])
@pytest.mark.parametrize(("profile", "expected"), [("gpu", "fail"), ("auto", "fail"), ("cpu", "skip")])
def test_gpu_info_never_passes_a_broken_gpu_host(tmp_path: Path, broken: Tuple, profile: str, expected: str) -> None:
    case, answers, bound, container, words = broken
    nvidia_on_pci(tmp_path, bound)
    smi = SMI if answers is not None else None
    facts = gi.gather(
        FakeRun(answers or []), smi, None, str(tmp_path), container=container, device_node=str(tmp_path / "nvidiactl")
    )
    needed = v.gpu_requirement(None, profile, facts["pci_nvidia_present"])
    outcome = v.gpu_info_verdict(facts, needed)
    if profile == "cpu" and facts["reboot_required"]:
        expected = "warn"
    assert outcome["status"] == expected, case
    assert words in outcome["reason"]


def test_gpu_info_passes_only_when_the_driver_lists_gpus() -> None:
    facts = gi.empty_result("", "nvidia-smi")
    facts["gpus"] = [{"index": 0}]
    assert v.gpu_info_verdict(facts, v.gpu_requirement(None, "gpu"))["status"] == "pass"
    facts["gpus"] = []
    assert v.gpu_info_verdict(facts, v.gpu_requirement(None, "auto"))["status"] == "skip"


@pytest.mark.parametrize(
    ("smi", "expected"),
    [(None, False), (SMI, True)],
    ids=["CPU container without NVIDIA user space", "NVIDIA user space without devices"],
)
def test_container_hint_only_where_gpus_were_meant(tmp_path: Path, smi: Optional[str], expected: bool) -> None:
    answers = [(255, "Failed to initialize NVML: Unknown Error\n", "")] if smi else []
    facts = gi.gather(FakeRun(answers), smi, None, str(tmp_path), container=True, device_node=str(tmp_path / "x"))
    assert ("visible in this container" in facts["reason"]) is expected


@pytest.mark.parametrize(
    ("facts", "words"),
    [
        (
            {
                "gpus": [{"index": 0, "pci_bus_id": "00000000:1B:00.0"}],
                "lost_gpus": [{"pci_bus_id": "0000:43:00.0", "error": "GPU is lost"}],
                "reboot_required": True,
                "reason": "GPU 0000:43:00.0 (GPU is lost) fell off the bus or is lost.",
            },
            "fell off the bus",
        ),
        ({"gpus": [{"index": 0, "pci_bus_id": "00000000:1B:00.0", "reset_required": True}]}, "need a reset"),
    ],
    ids=["one of two GPUs lost", "GPU requires reset"],
)
def test_gpu_info_is_no_pass_while_a_listed_host_has_a_broken_gpu(facts: Dict[str, object], words: str) -> None:
    gpu_host = v.gpu_info_verdict(facts, v.gpu_requirement(None, "gpu"))
    assert gpu_host["status"] == "fail" and words in gpu_host["reason"]
    assert v.gpu_info_verdict(facts, v.gpu_requirement(None, "cpu"))["status"] in {"warn", "skip"}
