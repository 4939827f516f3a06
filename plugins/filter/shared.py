# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters spec_violations, python_spec, proxy_env, carries_credentials, in_container and os_vars_files: logic the roles
share (docs in the .yml files)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Callable, Dict, List
from urllib.parse import unquote

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.module_utils._gpu_info import CONTAINER_MARKERS, CONTAINER_TYPES

try:
    from packaging.specifiers import InvalidSpecifier, Specifier
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover
    # ansible-core itself requires packaging; only ansible-test's isolated import check runs without it.
    Specifier = Version = None  # type: ignore[assignment,misc]
    InvalidSpecifier = InvalidVersion = ValueError  # type: ignore[assignment,misc]

# A URL's scheme ("http://"); what follows it up to the first /, ? or # is the authority (userinfo@host:port).
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_AUTHORITY_END = re.compile(r"[/?#]")

# One clause of a pip version specifier; a bare version means ==.
_CLAUSE = re.compile(r"^(~=|===|==|!=|<=|>=|<|>)?\s*([0-9][0-9A-Za-z.*+!]*)$")


def spec_violations(version: Any, spec: Any) -> List[str]:
    """The clauses of the pip specifier `spec` (comma-separated) that `version` does not satisfy, in order.

    A clause that is not a version specifier counts as violated, so a typo fails the check instead of passing it.
    """
    text = str(version if version is not None else "").strip()
    try:
        parsed = Version(text)
    except InvalidVersion as err:
        raise AnsibleFilterError(f"spec_violations: {text!r} is not a version (PEP 440), e.g. 3.11 or 2.0.2") from err
    bad: List[str] = []
    for clause in (c.strip() for c in str(spec if spec is not None else "").split(",")):
        if not clause:
            continue
        match = _CLAUSE.match(clause)
        if match is None:
            bad.append(clause)
            continue
        operator = match.group(1) or "=="
        try:
            specifier = Specifier(f"{operator}{match.group(2)}", prereleases=True)
        except InvalidSpecifier:
            bad.append(clause)
            continue
        if not specifier.contains(parsed):
            bad.append(clause)
    return bad


def python_spec(raw: Any) -> str:
    """A pip specifier from the stack's python key: "3.11" -> ==3.11, "3.10-3.13" -> >=3.10,<=3.13, a specifier
    as it is, nothing -> ""."""
    text = str(raw if raw is not None else "").strip()
    if not text or text[0] in "<>=!~":
        return text
    if "-" in text:
        low, high = (part.strip() for part in text.split("-", 1))
        return f">={low},<={high}"
    return f"=={text}"


def proxy_env(http_proxy: Any = "", https_proxy: Any = "", no_proxy: Any = "") -> Dict[str, str]:
    """The environment that sends HTTP(S) through the collection's proxy settings, in both spellings tools read;
    unset settings are left out, so with no proxy it is empty."""
    env: Dict[str, str] = {}
    for name, value in (("http_proxy", http_proxy), ("https_proxy", https_proxy), ("no_proxy", no_proxy)):
        text = str(value if value is not None else "").strip()
        if text:
            env[name] = text
            env[name.upper()] = text
    return env


def _authority(url: str) -> str:
    rest = _SCHEME.sub("", url.strip(), count=1)
    return _AUTHORITY_END.split(rest, maxsplit=1)[0]


def _has_userinfo(value: Any) -> bool:
    """Whether one proxy setting names a user: an @ in the authority of the URL as given, or once or twice
    percent-decoded (a URL written wholly encoded, http%3A%2F%2Fuser%3Apass%40proxy)."""
    text = str(value if value is not None else "")
    seen = set()
    while text not in seen:
        seen.add(text)
        if "@" in _authority(text):
            return True
        text = unquote(text)
    return False


def carries_credentials(proxy: Any) -> bool:
    """Whether a proxy environment (a mapping such as proxy_env's), a list of settings or one proxy URL holds
    credentials, so a task that hands it to a tool must hide its result (no_log)."""
    if proxy is None:
        return False
    if isinstance(proxy, Mapping):
        values: List[Any] = list(proxy.values())
    elif isinstance(proxy, (list, tuple)):
        values = list(proxy)
    elif isinstance(proxy, (str, bytes)):
        values = [proxy.decode("utf-8", "replace") if isinstance(proxy, bytes) else proxy]
    else:
        raise AnsibleFilterError(
            f"carries_credentials expects a proxy environment (a mapping), a list or a URL; got {type(proxy).__name__}."
        )
    return any(_has_userinfo(v) for v in values if v is not None and not isinstance(v, (Mapping, list, tuple)))


def in_container(facts: Any, marker_stats: Any = None) -> bool:
    """Whether a host is a container: its facts say it is a container guest, or a marker file exists.

    `marker_stats` is the registered result of a stat loop over query('gpulab.dlstack.container_markers'), of one
    find over those paths (its `files`), or of gpulab.dlstack.preflight_probe (its `container_markers`).
    """
    if not isinstance(facts, dict):
        raise AnsibleFilterError(f"in_container expects ansible_facts (a mapping); got {type(facts).__name__}.")
    guest = facts.get("virtualization_role") == "guest" and facts.get("virtualization_type") in CONTAINER_TYPES
    stats = marker_stats if isinstance(marker_stats, dict) else {}
    stat_hit = any(isinstance(r, dict) and (r.get("stat") or {}).get("exists") for r in stats.get("results", []))
    found = [f.get("path") for f in stats.get("files", []) if isinstance(f, dict)]
    found += list(stats.get("container_markers", []))
    return bool(guest or stat_hit or any(path in CONTAINER_MARKERS for path in found))


def os_vars_files(facts: Any, folder: Any = "") -> List[str]:
    """The per-OS vars files a role looks for, most specific first: <distribution>-<major>, <os_family>-<major>,
    <distribution>, <os_family>, default.yml; a name whose facts are missing is left out, none comes twice."""
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(f"os_vars_files expects ansible_facts (a mapping); got {type(facts).__name__}.")
    distribution, family, major = (
        str(facts.get(key) or "").strip() for key in ("distribution", "os_family", "distribution_major_version")
    )
    stems = [f"{distribution}-{major}", f"{family}-{major}"] if major else []
    names = [f"{stem}.yml" for stem in [*stems, distribution, family] if stem and not stem.startswith("-")]
    base = str(folder or "").rstrip("/")
    return [f"{base}/{name}" if base else name for name in dict.fromkeys([*names, "default.yml"])]


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {
            "spec_violations": spec_violations,
            "python_spec": python_spec,
            "proxy_env": proxy_env,
            "carries_credentials": carries_credentials,
            "in_container": in_container,
            "os_vars_files": os_vars_files,
        }
