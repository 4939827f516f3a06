#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: env_modules
short_description: Write environment modulefiles for the CUDA toolkits, cuDNN, TensorRT and Python environments
version_added: 0.1.0
description:
  - Used by the gpulab.dlstack.env_modules role.
  - Finds the CUDA toolkits installed side by side as C(<cuda_root>/cuda-X.Y), the cuDNN and TensorRT prefixes
    C(<root>/<version>-cuda<major>) and the managed Python environments under O(env_root), and writes one modulefile
    each under O(path) - C(cuda/X.Y), C(cudnn/<version>-cuda<major>), C(tensorrt/<version>-cuda<major>),
    C(dlenv/<name>).
  - A C(cuda) module sets C(CUDA_HOME) and C(CUDA_PATH) and prepends C(PATH), C(LD_LIBRARY_PATH) and C(CPATH).
    Modules of one kind exclude each other, through an Lmod C(family) (loading a second swaps) in Lua files or a
    C(conflict) (loading a second fails) in Tcl files.
  - Removes the modulefiles it wrote earlier for things no longer installed; refuses to overwrite a file it did not
    write.
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
  path:
    description: Folder on the module search path that receives the kind folders (C(cuda/), C(cudnn/), ...).
    type: path
    required: true
  syntax:
    description: V(lua) for Lmod, V(tcl) for environment-modules.
    type: str
    choices: [lua, tcl]
    default: lua
  kinds:
    description: Kinds of modules to write; the modulefiles of kinds left out are removed.
    type: list
    elements: str
    choices: [cuda, cudnn, tensorrt, dlenv]
    default: [cuda, cudnn, tensorrt, dlenv]
  cuda_root:
    description: Folder holding the C(cuda-X.Y) toolkits.
    type: path
    default: /usr/local
  cudnn_root:
    description: Folder holding the cuDNN prefixes.
    type: path
    default: /opt/dlstack/cudnn
  tensorrt_root:
    description: Folder holding the TensorRT prefixes.
    type: path
    default: /opt/dlstack/tensorrt
  env_root:
    description: Folder holding the managed Python environments.
    type: path
    default: /opt/dlstack/envs
"""

EXAMPLES = r"""
- name: Modulefiles for Lmod
  gpulab.dlstack.env_modules:
    path: /etc/lmod/modules
    syntax: lua
"""

RETURN = r"""
modules:
  description: Module names found and written (or already current), in kind order.
  returned: always
  type: list
  elements: str
  sample: [cuda/11.8, cuda/12.4, dlenv/default]
written:
  description: Files written by this run (would be written, in check mode), relative to O(path).
  returned: always
  type: list
  elements: str
  sample: [cuda/12.4.lua]
removed:
  description: Files this collection wrote earlier and removed now (would remove, in check mode).
  returned: always
  type: list
  elements: str
  sample: [cuda/12.3.lua]
"""

import os
import traceback
from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _envmodules


def apply(module: AnsibleModule, write: Dict[str, str], remove: List[str]) -> None:
    root = module.params["path"]
    for rel, text in write.items():
        dest = os.path.join(root, rel)
        os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
        tmp = dest + ".dlstack-tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        module.atomic_move(tmp, dest)
    for rel in remove:
        os.remove(os.path.join(root, rel))


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            syntax=dict(type="str", choices=list(_envmodules.SYNTAXES), default="lua"),
            kinds=dict(type="list", elements="str", choices=list(_envmodules.KINDS), default=list(_envmodules.KINDS)),
            cuda_root=dict(type="path", default="/usr/local"),
            cudnn_root=dict(type="path", default="/opt/dlstack/cudnn"),
            tensorrt_root=dict(type="path", default="/opt/dlstack/tensorrt"),
            env_root=dict(type="path", default="/opt/dlstack/envs"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    found = _envmodules.scan(p["cuda_root"], p["cudnn_root"], p["tensorrt_root"], p["env_root"], tuple(p["kinds"]))
    try:
        write, remove = _envmodules.plan(p["path"], found, p["syntax"])
    except ValueError as err:
        module.fail_json(msg=str(err))
    changed = bool(write or remove)
    result: Dict[str, Any] = {
        "changed": changed,
        "modules": [m.name for m in found],
        "written": sorted(write),
        "removed": remove,
    }
    if module._diff and changed:
        result["diff"] = [
            {"before_header": rel, "after_header": rel, "before": "", "after": text}
            for rel, text in sorted(write.items())
        ]
        result["diff"] += [
            {"before_header": rel, "after_header": "(removed)", "before": rel, "after": ""} for rel in remove
        ]
    if changed and not module.check_mode:
        try:
            apply(module, write, remove)
        except OSError as err:
            module.fail_json(
                msg=f"could not write the modulefiles under {p['path']}: {err}", exception=traceback.format_exc()
            )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
