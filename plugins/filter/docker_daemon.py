# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter docker_daemon_merge: the nvidia runtime merged into a daemon.json text, numbers kept (docs in the .yml)."""

from __future__ import annotations

from typing import Any, Callable, Dict

from ansible.errors import AnsibleFilterError
from ansible_collections.gpulab.dlstack.plugins.module_utils._jsonmerge import docker_runtime_merge


def docker_daemon_merge_filter(text: Any, runtime_path: str, set_default: bool = False) -> Dict[str, Any]:
    if not isinstance(text, str):
        raise AnsibleFilterError(f"docker_daemon_merge expects the text of daemon.json; got {type(text).__name__}.")
    return docker_runtime_merge(text, str(runtime_path), bool(set_default))


class FilterModule:
    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {"docker_daemon_merge": docker_daemon_merge_filter}
