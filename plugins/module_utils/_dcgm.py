# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""DCGM's diagnostic (``dcgmi diag -r <level> -j``) read into per-test statuses and one verdict.

The JSON layout is DCGM's own (``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name",
"results": [{"gpu_ids", "status", "warnings", "info"}]}]}], "version"}}``; DCGM 4 names the root ``DCGM Diagnostic``
and may add ``test_summary`` and ``runtime_error``). A run that established nothing is never a pass.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

ROOTS = ("DCGM GPU Diagnostic", "DCGM Diagnostic")
_STATUS = {
    "pass": "pass",
    "warn": "warn",
    "warning": "warn",
    "fail": "fail",
    "failed": "fail",
    "skip": "skip",
    "skipped": "skip",
    "not run": "skip",
    "notrun": "skip",
}


def _document(text: str) -> Optional[Dict[str, Any]]:
    start = (text or "").find("{")
    if start < 0:
        return None
    try:
        doc = json.loads(text[start:])
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def parse(text: str) -> Dict[str, Any]:
    """Tests (category, name, status, gpus, warnings), the run's version and runtime error; no tests if unreadable."""
    doc = _document(text)
    root = next((doc[k] for k in ROOTS if doc and isinstance(doc.get(k), dict)), None)
    if root is None:
        return {"readable": False, "tests": [], "version": None, "runtime_error": None}
    tests: List[Dict[str, Any]] = []
    for category in root.get("test_categories") or []:
        if not isinstance(category, dict):
            continue
        for test in category.get("tests") or []:
            if not isinstance(test, dict):
                continue
            for res in test.get("results") or []:
                if not isinstance(res, dict):
                    continue
                raw = str(res.get("status", "")).strip().lower()
                gpus = res.get("gpu_ids", res.get("entity_id"))
                tests.append(
                    {
                        "category": category.get("category"),
                        "name": test.get("name"),
                        "status": _STATUS.get(raw, "fail" if raw else "skip"),
                        "raw_status": res.get("status"),
                        "gpus": None if gpus is None else str(gpus),
                        "warnings": [_text(w) for w in res.get("warnings") or []],
                    }
                )
    error = root.get("runtime_error") or (doc or {}).get("runtime_error")
    return {"readable": True, "tests": tests, "version": root.get("version"), "runtime_error": error}


def _text(item: Any) -> str:
    return str(item.get("warning") or item.get("message") or item) if isinstance(item, dict) else str(item)


def verdict(parsed: Dict[str, Any], rc: int, stderr: str) -> Dict[str, str]:
    """fail on any failed test, a runtime error or an unreadable result; warn on warnings; pass only when a test
    passed and none failed; otherwise (everything skipped) 'not_run' with DCGM's own reason."""
    tests = parsed["tests"]
    failed = [t for t in tests if t["status"] == "fail"]
    if failed:
        first = failed[0]
        why = "; ".join(first["warnings"][:2]) or str(first["raw_status"])
        names = ", ".join(sorted({f"{t['category']}/{t['name']}" for t in failed}))
        return {"verdict": "fail", "reason": f"dcgmi diag failed: {names} ({why})."}
    if parsed["runtime_error"]:
        return {"verdict": "fail", "reason": f"dcgmi diag stopped with a runtime error: {parsed['runtime_error']}."}
    if not parsed["readable"]:
        tail = " | ".join((stderr or "").strip().splitlines()[-3:]) or "none"
        return {"verdict": "not_run", "reason": f"dcgmi diag (rc={rc}) gave no diagnostic result; stderr: {tail}."}
    warned = [t for t in tests if t["status"] == "warn"]
    if warned:
        names = ", ".join(sorted({f"{t['category']}/{t['name']}" for t in warned}))
        return {"verdict": "warn", "reason": f"dcgmi diag warned: {names}."}
    passed = [t for t in tests if t["status"] == "pass"]
    if passed and rc == 0:
        return {"verdict": "pass", "reason": f"dcgmi diag passed {len(passed)} test result(s), none failed."}
    if passed:
        return {"verdict": "fail", "reason": f"dcgmi diag exited with rc={rc} though no test failed."}
    return {"verdict": "not_run", "reason": "dcgmi diag ran no test: every one was skipped or none was listed."}
