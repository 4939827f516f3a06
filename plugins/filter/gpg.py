# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter gpg_primary_fingerprints: the primary-key fingerprints in gpg's --with-colons listing (docs in the .yml)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from ansible.errors import AnsibleFilterError


def gpg_primary_fingerprints(listing: Any) -> List[str]:
    """Fingerprint (upper-case hex) of each pub record; subkeys (sub) are left out."""
    if not isinstance(listing, str):
        kind = type(listing).__name__
        raise AnsibleFilterError(f"gpg_primary_fingerprints expects gpg's --with-colons text; got {kind}.")
    found: List[str] = []
    record = ""
    for line in listing.splitlines():
        fields = line.split(":")
        if fields[0] in ("pub", "sub", "sec", "ssb"):
            record = fields[0]
        elif fields[0] == "fpr" and record in ("pub", "sec") and len(fields) > 9:
            found.append(fields[9].upper())
            record = ""
    return found


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {"gpg_primary_fingerprints": gpg_primary_fingerprints}
