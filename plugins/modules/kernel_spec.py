#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kernel_spec
short_description: Write a Jupyter kernel spec whose env block carries what the environment's activation sets
version_added: 0.1.0
description:
  - Writes C(kernel.json) in O(kernel_dir) for the environment in O(env_path). The kernel starts the
    environment's C(bin/python) with C(ipykernel_launcher).
  - Its C(env) block holds every variable the environment's activation sets (a venv's C(bin/activate) and
    the hooks it sources, such as the tensorflow role's C(tf-env.sh); a conda environment's
    C(etc/conda/activate.d) scripts), read by sourcing them in a clean shell. So C(LD_LIBRARY_PATH) and
    C(VIRTUAL_ENV) or C(CONDA_PREFIX) reach the notebook as they reach a terminal. C(PATH) becomes the
    environment's folders followed by C(${PATH}), which jupyter_client (7 and later) fills in with the
    server's own.
  - Without O(display_name) an existing kernel spec is refreshed (its display name kept) and a missing
    one is left alone; the tensorflow role uses this after it writes its activation hook.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  env_path:
    description: The environment folder (venv or conda prefix).
    type: path
    required: true
  kernel_dir:
    description: The kernel spec folder, for example C(/usr/local/share/jupyter/kernels/dlstack-default).
    type: path
    required: true
  display_name:
    description: Name shown in Jupyter; omitted, an existing spec keeps its own and a missing one is not written.
    type: str
"""

EXAMPLES = r"""
- name: Register the default environment as a Jupyter kernel with its library paths
  gpulab.dlstack.kernel_spec:
    env_path: /opt/dlstack/envs/default
    kernel_dir: /usr/local/share/jupyter/kernels/dlstack-default
    display_name: Python 3.11 (dlstack default)
"""

RETURN = r"""
spec:
  description: The kernel spec written (or that would be written); V(null) when there was nothing to refresh.
  returned: always
  type: dict
  sample:
    argv: [/opt/dlstack/envs/default/bin/python, -m, ipykernel_launcher, -f, "{connection_file}"]
    display_name: Python 3.11 (dlstack default)
    language: python
    metadata: {debugger: true}
    env:
      LD_LIBRARY_PATH: /usr/local/cuda/lib64
      PATH: "/opt/dlstack/envs/default/bin:${PATH}"
      VIRTUAL_ENV: /opt/dlstack/envs/default
path:
  description: Path of C(kernel.json).
  returned: always
  type: str
  sample: /usr/local/share/jupyter/kernels/dlstack-default/kernel.json
"""

import json
import os
from typing import Any, Dict, Optional

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _libdoctor, _validate


def read(path: str) -> Optional[str]:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "env_path": {"type": "path", "required": True},
            "kernel_dir": {"type": "path", "required": True},
            "display_name": {"type": "str"},
        },
        supports_check_mode=True,
    )
    params = module.params
    problems = _validate.absolute_paths("env_path", [params["env_path"]], "/opt/dlstack/envs/default")
    problems += _validate.absolute_paths(
        "kernel_dir", [params["kernel_dir"]], "/usr/local/share/jupyter/kernels/dlstack-default"
    )
    if params["display_name"] is not None and not params["display_name"].strip():
        problems.append("display_name is empty; give the name Jupyter shows, or leave it out to refresh only.")
    _validate.fail_on(module, problems)
    path = os.path.join(params["kernel_dir"], "kernel.json")
    before = read(path)
    display = params["display_name"]
    if display is None:
        try:
            display = json.loads(before).get("display_name") if before else None
        except (ValueError, AttributeError):
            display = None
        if not display:
            module.exit_json(changed=False, spec=None, path=path, msg="No kernel spec to refresh.")
    env: Dict[str, str] = {}
    if os.path.isdir(params["env_path"]):
        changes, error = _libdoctor.activate(module.run_command, params["env_path"])
        if error:
            module.fail_json(msg=error, path=path)
        env = _libdoctor.kernel_env(changes or {})
    python = os.path.join(params["env_path"], "bin", "python")
    spec = _libdoctor.kernel_spec(python, str(display), env)
    text = _libdoctor.render_kernel(spec)
    changed = before != text
    result: Dict[str, Any] = {"changed": changed, "spec": spec, "path": path}
    if module._diff:
        result["diff"] = {"before": before or "", "after": text, "before_header": path, "after_header": path}
    if changed and not module.check_mode:
        os.makedirs(params["kernel_dir"], 0o755, exist_ok=True)
        staging = os.path.join(module.tmpdir, "kernel.json")
        with open(staging, "w") as handle:
            handle.write(text)
        module.atomic_move(staging, path)
        os.chmod(path, 0o644)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
