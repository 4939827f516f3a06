"""Assertions on a container converged with the GPU profile on a runner with NVIDIA GPUs."""

from __future__ import annotations

import json
from typing import Any


def test_gpu_visible_in_container(host: Any) -> None:
    out = host.check_output("nvidia-smi -L")
    assert out.startswith("GPU 0:"), out


def test_verification_passed_on_the_gpu(host: Any) -> None:
    latest = json.loads(host.file("/var/lib/dlstack/verify/latest.json").content_string)
    assert latest["verdict"] in {"pass", "warn"}, latest["verdict"]
    assert latest["verdicts"]["gpu_info"] == "pass"
    assert latest["modules"]["gpu_smoke"]["gpu_requirement"]["required"] is True
    assert latest["stack"]["driver"] and latest["stack"]["tensorflow"], latest["stack"]


def test_local_facts_record_the_gpu(host: Any) -> None:
    fact = json.loads(host.file("/etc/ansible/facts.d/dlstack_stack.fact").content_string)
    assert fact["gpus"], fact
    assert fact["profile"] == "gpu"
    assert fact["stack"]["cuda"], fact["stack"]
