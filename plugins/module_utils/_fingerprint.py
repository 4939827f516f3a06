# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fingerprints of host state for fast re-runs (module ``gpulab.dlstack.fingerprint``).

A stage or a probe keeps, after a full run, a record with the fingerprint of what it depends on: its inputs
(the settings and rendered contents it would apply, hashed as JSON) and the host paths it manages or reads
(for a file: type, mode, owner, group and the SHA-256 of its content; for a directory: type, mode, owner and
group, and for a directory listed apart also the sorted names in it; for a link: its target and what the
target holds; a missing path counts as missing). A later run
computes the same fingerprint in one call on the host; when it equals the record, nothing the stage or probe
checks has changed, and the stage's tasks or the probe command can be left out.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import stat
from typing import Any, Dict, Iterable, List, Mapping, Optional

RECORD_VERSION = 1


def _file_digest(path: str) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def path_state(path: str, listing: bool = False) -> List[Any]:
    """What one path holds, as a JSON-able list; a path that cannot be read says so (and still compares).

    A directory's names are part of its state only with listing (a stage that owns what is in it).
    """
    try:
        st = os.lstat(path)
    except OSError:
        return [path, "missing"]
    owner = [stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid]
    try:
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(path)
            held = [target, "loop"] if os.path.islink(target) else path_state(target, listing)
            return [path, "link", os.readlink(path), held]
        if stat.S_ISDIR(st.st_mode):
            return [path, "dir", *owner, *([sorted(os.listdir(path))] if listing else [])]
        if stat.S_ISREG(st.st_mode):
            return [path, "file", *owner, _file_digest(path)]
    except OSError as exc:
        return [path, "unreadable", exc.__class__.__name__]
    return [path, "other", *owner]


def expand(patterns: Iterable[str]) -> List[str]:
    """The paths the patterns name, in a stable order; a pattern that matches nothing stays (as missing)."""
    out: List[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        out.extend(matches or [pattern])
    return out


def fingerprint(paths: Iterable[str], inputs: Any, listings: Iterable[str] = ()) -> str:
    """The SHA-256 of the inputs (as sorted JSON), the state of every path and the names in every listed folder."""
    state = {
        "inputs": inputs,
        "paths": [path_state(p) for p in expand(paths)],
        "listings": [path_state(p, listing=True) for p in expand(listings)],
    }
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()


def read_record(path: str) -> Dict[str, Any]:
    """The record kept at path, or {} when it is missing or not one of ours."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == RECORD_VERSION else {}


def matches(record: Mapping[str, Any], current: str) -> bool:
    """True when the record holds this fingerprint and ended well (a failed probe is never reused)."""
    return bool(record) and record.get("fingerprint") == current and record.get("rc", 0) == 0


def last_json(text: str) -> Optional[Dict[str, Any]]:
    """The last line of a probe's output that is a JSON object, or None."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def new_record(current: str, data: Optional[Mapping[str, Any]] = None, rc: int = 0) -> Dict[str, Any]:
    """A record; a probe's JSON answer (last JSON line of its stdout) is kept parsed as ``result`` too."""
    kept = dict(data or {})
    record: Dict[str, Any] = {"version": RECORD_VERSION, "fingerprint": current, "rc": rc, "data": kept}
    answer = last_json(str(kept.get("stdout", "")))
    if answer is not None:
        record["result"] = answer
    return record


def write_record(path: str, record: Mapping[str, Any]) -> None:
    """Write the record atomically (a reader never sees half a file), creating its folder."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o755, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def whole_stage(stage: str, run_tags: Iterable[str], skip_tags: Iterable[str]) -> bool:
    """True when this run's --tags/--skip-tags let every task of the stage run (its tag, then stage_*)."""
    wanted = set(run_tags or ["all"])
    if "all" not in wanted and stage not in wanted:
        return False
    return not any(tag == stage or tag.startswith(stage + "_") for tag in skip_tags or [])
