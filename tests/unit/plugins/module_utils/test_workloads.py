"""The workload scripts: they compile for this Python, print one JSON document, report errors as data.

The real XLA run needs an interpreter with TensorFlow or JAX: set DLSTACK_TEST_XLA_PYTHON to it
(for example a venv with tensorflow-cpu and jax); without it those tests skip and say so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from ansible_collections.gpulab.dlstack.plugins.module_utils import _smoke, _workloads

XLA_PYTHON = os.environ.get("DLSTACK_TEST_XLA_PYTHON", "")


def run(
    tmp_path: Path, source: str, config: Dict[str, Any], python: str = sys.executable
) -> subprocess.CompletedProcess:
    script = tmp_path / "workload.py"
    script.write_text(source)
    settings = tmp_path / "config.json"
    settings.write_text(json.dumps(config))
    env = dict(os.environ, **_smoke.WORKLOAD_ENV)
    return subprocess.run(
        [python, str(script), str(settings)], capture_output=True, text=True, timeout=600, env=env, check=False
    )


def _numpy_python() -> str | None:
    """This interpreter or the one its virtual environment was made from, whichever imports numpy."""
    for python in (sys.executable, getattr(sys, "_base_executable", "")):
        if python and subprocess.run([python, "-c", "import numpy"], capture_output=True, check=False).returncode == 0:
            return python
    return None


@pytest.mark.parametrize("name", sorted(_workloads.SCRIPTS))
def test_scripts_run_to_a_result_document(tmp_path: Path, name: str) -> None:
    """Each script runs as the modules run it (its own interpreter, a config file) and hands back one document.

    With an empty config and no framework here the GPU workloads end in an error document; what must not happen is
    no document at all (a syntax error, a crash before main) or an error that is a bug in the script itself.
    """
    python = _numpy_python() if "import numpy" in _workloads.SCRIPTS[name] else sys.executable
    if python is None:
        pytest.skip(f"the {name} script imports numpy at the top, and no interpreter here has numpy")
    done = run(tmp_path, _workloads.SCRIPTS[name], {}, python=python)
    assert done.returncode == 0, done.stderr
    doc = _smoke.parse_document(done.stdout)
    assert doc["workload_seconds"] >= 0, doc
    error = str(doc.get("error", ""))
    assert not error.startswith(("NameError", "SyntaxError", "UnboundLocalError", "TypeError")), error
    if name == "probe":
        assert doc["backends"]["numpy"]["importable"] in (True, False) and "error" not in doc, doc


def test_framework_output_goes_to_stderr(tmp_path: Path) -> None:
    source = _workloads.COMMON + "\nprint('framework noise')\nmain(lambda config: {'seen': config['x']})\n"
    done = run(tmp_path, source, {"x": 3})
    doc = _smoke.parse_document(done.stdout)
    assert doc["seen"] == 3 and doc["workload_seconds"] >= 0
    assert "framework noise" in done.stderr
    assert "framework noise" not in done.stdout


def test_exceptions_become_error_documents(tmp_path: Path) -> None:
    source = _workloads.COMMON + "\ndef boom(config):\n    raise RuntimeError('no device')\n\nmain(boom)\n"
    doc = _smoke.parse_document(run(tmp_path, source, {}).stdout)
    assert doc["error"] == "RuntimeError: no device"
    assert "Traceback" in doc["traceback"]


def test_probe_reports_this_interpreter(tmp_path: Path) -> None:
    doc = _smoke.parse_document(run(tmp_path, _workloads.PROBE, {}).stdout)
    assert doc["python"] == sys.executable
    assert set(doc["backends"]) >= {"tensorflow", "jax", "torch", "cupy", "tensorrt", "numpy"}
    for name, found in doc["backends"].items():
        assert found["importable"] is (importlib.util.find_spec(name) is not None)


def test_gpu_workload_with_missing_backend_is_an_error(tmp_path: Path) -> None:
    missing = [b for b in ("torch", "cupy", "jax", "tensorflow") if importlib.util.find_spec(b) is None]
    if not missing:
        pytest.skip("every backend is importable here, so none can be missing")
    config = {
        "backend": missing[0],
        "checks": ["matmul_fp32"],
        "time_budget": 1,
        "matmul_size": 64,
        "memory_mib": 1,
        "copy_mib": 1,
    }
    doc = _smoke.parse_document(run(tmp_path, _workloads.GPU, config).stdout)
    assert "ModuleNotFoundError" in doc["error"] or "ImportError" in doc["error"]


def test_timed_sizes_the_loop(tmp_path: Path) -> None:
    source = (
        _workloads.COMMON
        + "\nmain(lambda c: dict(zip(('per', 'iters'), timed(lambda: time.sleep(0.01), lambda last: None, 0.2))))\n"
    )
    doc = _smoke.parse_document(run(tmp_path, source, {}).stdout)
    assert 3 <= doc["iters"] <= 25
    assert doc["per"] >= 0.009


def test_timed_rounds_reports_the_fastest_round_and_the_mean(tmp_path: Path) -> None:
    # Calls slow down as the run goes on (as a power-capped GPU does): the best round is the first ones,
    # the mean is slower, and the calls are timed in rounds of about round_s.
    source = (
        _workloads.COMMON
        + "\nSTATE = {'calls': 0}\n"
        + "def call():\n    STATE['calls'] += 1\n    time.sleep(0.002 if STATE['calls'] < 20 else 0.004)\n"
        + "KEYS = ('best', 'calls', 'mean')\n"
        + "main(lambda c: dict(zip(KEYS, timed_rounds(call, lambda last: None, 0.3, round_s=0.01))))\n"
    )
    doc = _smoke.parse_document(run(tmp_path, source, {}).stdout)
    assert 0.0019 <= doc["best"] < 0.0035
    assert doc["mean"] > doc["best"] * 1.3
    assert doc["calls"] >= 3


def test_parse_document_takes_last_json_object() -> None:
    assert _smoke.parse_document('{"a": 1}') == {"a": 1}
    assert _smoke.parse_document('warning: something\n{"a": 2}') == {"a": 2}
    with pytest.raises(ValueError, match="printed nothing"):
        _smoke.parse_document("  ")
    with pytest.raises(ValueError):
        _smoke.parse_document("[1, 2]")


PROBE = {
    "python": "/env/bin/python",
    "backends": {
        "tensorflow": {"importable": True, "version": "2.21.0", "gpu_build": False},
        "jax": {"importable": True, "version": "0.4.35", "gpu_build": True},
        "torch": {"importable": False},
        "cupy": {"importable": False},
    },
}


def test_choose_backend() -> None:
    order = ["torch", "jax", "cupy", "tensorflow"]
    assert _smoke.choose_backend(PROBE, "auto", order, True)[0] == "jax"
    assert _smoke.choose_backend(PROBE, "auto", ["tensorflow", "jax"], False)[0] == "tensorflow"
    assert _smoke.choose_backend(PROBE, "auto", ["tensorflow", "jax"], True)[0] == "jax"
    assert _smoke.choose_backend(PROBE, "tensorflow", order, True)[0] == "tensorflow"
    name, why = _smoke.choose_backend(PROBE, "torch", order, True)
    assert name is None and "not importable by /env/bin/python" in why
    name, why = _smoke.choose_backend({"python": "/p", "backends": {}}, "auto", order, True)
    assert name is None and "None of torch, jax, cupy, tensorflow" in why


def test_check_python(tmp_path: Path) -> None:
    assert _smoke.check_python(sys.executable) is None
    assert "absolute path" in (_smoke.check_python("python3") or "")
    assert "does not exist" in (_smoke.check_python(str(tmp_path / "nope")) or "")


def xla_config(backend: str) -> Dict[str, Any]:
    return {"backend": backend, "device": "cpu", "size": 512, "steps": 4, "rtol": 1e-5, "atol": 1e-4, "time_budget": 1}


@pytest.mark.skipif(not XLA_PYTHON, reason="DLSTACK_TEST_XLA_PYTHON is not set to an interpreter with TensorFlow/JAX")
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_xla_on_cpu_for_real(tmp_path: Path, backend: str) -> None:
    probe = _smoke.parse_document(run(tmp_path, _workloads.PROBE, {}, XLA_PYTHON).stdout)
    if not probe["backends"][backend]["importable"]:
        pytest.skip(f"{backend} is not importable by {XLA_PYTHON}")
    doc = _smoke.parse_document(run(tmp_path, _workloads.XLA, xla_config(backend), XLA_PYTHON).stdout)
    assert doc.get("error") is None, doc.get("traceback")
    assert doc["device"] == "cpu"
    result = doc["result"]
    assert result["allclose"] is True
    assert result["max_abs_err"] < 1e-4
    assert result["steady_xla_s"] > 0 and result["steady_reference_s"] > 0
    assert result["compile_s"] >= 0
    assert doc["versions"][backend]
