#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lib_doctor
short_description: Report which CUDA libraries each environment and Jupyter kernel would load, and why not
version_added: 0.1.0
description:
  - For every managed environment (venv or conda) and every dlstack Jupyter kernel, reports which
    C(libcuda), C(libcudart), C(libcublas), C(libcudnn) and C(libnvinfer) would load, from which
    file, found how (LD_LIBRARY_PATH, the framework's RUNPATH, a wheel folder, the ld.so cache, a
    default folder), and at which version.
  - The check runs with the environment's own Python under the variables its activation sets (a venv's
    C(bin/activate) with the hooks it sources, a conda environment's C(etc/conda/activate.d)); a kernel
    runs with the interpreter of its C(kernel.json) and that file's C(env) block, as Jupyter would start it.
  - The soname an environment needs comes from its framework's build (TensorFlow's build info, the
    cuDNN wheel PyTorch or the JAX plugin pins), else from the C(nvidia-*) wheels in it, else from
    O(stack). The loader's search order is rebuilt from the live environment (LD_LIBRARY_PATH, the
    RUNPATH read from the framework's ELF files, the wheel folders, C(ldconfig -p), the default folders);
    the first match is loaded with dlopen and asked for its version through its own API, so a file that
    is there but cannot load is reported.
  - Flags, each with a fix sentence, a library that would not load, a CUDA runtime of another major
    or minor than the resolved stack, a runtime newer than the driver supports, a cuDNN of another major
    than the framework was compiled with or the stack resolved, a shadowed wheel of another version.
  - RV(verdict) is the worst over all environments; a missing C(libcuda) is V(fail) only on a host that
    must have GPUs (see O(profile)), else V(skip).
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
  - gpulab.dlstack.attributes.info_module
  - gpulab.dlstack.smoke.gpu_requirement
options:
  environments:
    description:
      - Environment folders to examine (absolute paths, each with C(bin/python)). Empty examines every
        environment under O(env_root).
    type: list
    elements: path
    default: []
  kernels:
    description:
      - Jupyter kernel spec folders (each with C(kernel.json)) to examine. Empty examines every
        C(dlstack-*) kernel under O(kernel_root).
    type: list
    elements: path
    default: []
  env_root:
    description: Folder whose sub-folders are the managed environments (C(python_env_root)).
    type: path
    default: /opt/dlstack/envs
  kernel_root:
    description: Folder of the Jupyter kernel specs (C(python_env_jupyter_kernel_prefix)/share/jupyter/kernels).
    type: path
    default: /usr/local/share/jupyter/kernels
  stack:
    description:
      - The resolved stack (C(dlstack_stack)); its C(cuda), C(cudnn) and C(tensorrt) versions are what the
        libraries are judged against. Other keys are ignored.
    type: dict
    default: {}
  libraries:
    description: Libraries to resolve.
    type: list
    elements: str
    choices: [libcuda, libcudart, libcublas, libcudnn, libnvinfer]
    default: [libcuda, libcudart, libcublas, libcudnn, libnvinfer]
  timeout:
    description: Seconds one environment's check may take, 5 to 3600.
    type: int
    default: 120
  dest:
    description:
      - Also write the result as JSON to this file on the target. Only then can the module report a change
        (when the file content differs).
    type: path
notes:
  - C(ldconfig -p) is read for the cache; a host without it is searched without the cache, which the
    result says (C(ldconfig=false)).
seealso:
  - module: gpulab.dlstack.gpu_smoke
  - module: gpulab.dlstack.gpu_info
"""

EXAMPLES = r"""
- name: Examine every managed environment and kernel against the resolved stack
  gpulab.dlstack.lib_doctor:
    stack: "{{ dlstack_stack }}"
  register: doctor

- name: Show what is wrong and how to fix it
  ansible.builtin.debug:
    var: doctor.flags

- name: Only cuDNN, in one environment
  gpulab.dlstack.lib_doctor:
    environments: [/opt/dlstack/envs/default]
    libraries: [libcudnn]
    stack: {cudnn: 9.3.0}
"""

RETURN = r"""
verdict:
  description: Worst status over all environments and libraries; V(skip) when nothing was examined.
  returned: always
  type: str
  sample: warn
reason:
  description: Why nothing was examined, or the number of flags; empty when all passed.
  returned: always
  type: str
  sample: "2 library problem(s) in 1 environment(s); see flags."
flags:
  description: One sentence per warn or fail, naming the environment and library, the problem and the fix.
  returned: always
  type: list
  elements: str
  sample:
    - "broken: libcudart fail: libcudart 13.5 is CUDA 13, the resolved stack is CUDA 12.5. Fix: Remove ..."
environments:
  description: One entry per environment and kernel.
  returned: always
  type: list
  elements: dict
  sample:
    - name: default
      kind: env
      path: /opt/dlstack/envs/default
      python: /opt/dlstack/envs/default/bin/python
      activation: {LD_LIBRARY_PATH: /usr/local/cuda/lib64, VIRTUAL_ENV: /opt/dlstack/envs/default}
      frameworks: {tensorflow: {version: 2.21.0, cuda: 12.5.1, cudnn: "9", tensorrt: null}}
      driver_version: 535.261.03
      driver_cuda: "12.2"
      verdict: pass
      libraries:
        libcudnn:
          soname: libcudnn.so.9
          path: /opt/dlstack/envs/default/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9
          via: RUNPATH of tensorflow/libtensorflow_framework.so.2
          wheel: nvidia-cudnn-cu12 9.3.0.75
          version: 9.3.0
          why: tensorflow 2.21.0 was built with cuDNN 9
          status: pass
          reason: "libcudnn.so.9 9.3.0 from ..."
          fix: ""
"""

import json
import os
import time
from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _libdoctor, _smoke, _validate, _verdict

LIMITS = {"timeout": _validate.Range(5, 3600, "seconds per environment", integer=True)}


def argument_spec() -> Dict[str, Any]:
    return {
        "environments": {"type": "list", "elements": "path", "default": []},
        "kernels": {"type": "list", "elements": "path", "default": []},
        "env_root": {"type": "path", "default": "/opt/dlstack/envs"},
        "kernel_root": {"type": "path", "default": "/usr/local/share/jupyter/kernels"},
        "stack": {"type": "dict", "default": {}},
        "libraries": {
            "type": "list",
            "elements": "str",
            "choices": list(_libdoctor.LIBRARIES),
            "default": list(_libdoctor.LIBRARIES),
        },
        "timeout": {"type": "int", "default": 120},
        "dest": {"type": "path"},
        **_verdict.REQUIREMENT_SPEC,
    }


def option_problems(params: Dict[str, Any]) -> List[str]:
    problems = _validate.number("timeout", params["timeout"], LIMITS["timeout"], "default 120")
    problems += _validate.absolute_paths("environments", params["environments"], "/opt/dlstack/envs/default")
    example = "/usr/local/share/jupyter/kernels/dlstack-default"
    problems += _validate.absolute_paths("kernels", params["kernels"], example)
    for path in params["environments"] or []:
        if os.path.isabs(path) and not os.path.isfile(os.path.join(path, "bin", "python")):
            problems.append(
                f"environments entry {_validate.show(path)} has no bin/python; give an environment folder "
                "(python_env_root/<name>) or leave environments empty to examine all."
            )
    problems += _validate.stack_versions("stack", params["stack"], ("cuda", "cudnn", "tensorrt"))
    problems += _validate.dest_file("dest", params["dest"], "/var/lib/dlstack/verify/lib_doctor.json")
    return problems


def run_doctor(module: Any, python: str, env: Dict[str, str], config: Dict[str, Any]) -> Dict[str, Any]:
    """The doctor script's document, run with `python` under exactly `env`; or {'error': ...}."""
    script = os.path.join(module.tmpdir, "dlstack_lib_doctor.py")
    settings = os.path.join(module.tmpdir, "dlstack_lib_doctor.json")
    with open(script, "w") as handle:
        handle.write(_libdoctor.SCRIPT)
    with open(settings, "w") as handle:
        handle.write(json.dumps(config))
    cmd = ["env", "-i", *(f"{k}={v}" for k, v in sorted(env.items())), python, script, settings]
    timeout_bin = module.get_bin_path("timeout")
    if timeout_bin:
        cmd = [timeout_bin, "--kill-after=10", str(module.params["timeout"]), *cmd]
    rc, out, err = module.run_command(cmd, cwd=module.tmpdir)
    if rc in (124, 137) and timeout_bin:
        return {"error": f"The check ran past timeout={module.params['timeout']} s and was stopped; raise timeout."}
    try:
        doc = _smoke.parse_document(out)
    except ValueError as exc:
        tail = " | ".join((err or "").strip().splitlines()[-3:]) or "none"
        return {"error": f"{python} gave no result (rc={rc}): {exc}. Last stderr lines: {tail}"}
    return doc


def examine(module: Any, entry: Dict[str, Any], config: Dict[str, Any], needed: Dict[str, Any]) -> Dict[str, Any]:
    """Run the doctor in one environment or kernel and judge what it found."""
    if entry.get("error"):
        entry["verdict"] = "fail"
        return entry
    doc = run_doctor(module, entry["python"], entry["run_env"], config)
    del entry["run_env"]
    if doc.get("error"):
        entry.update(error=doc["error"], verdict="fail")
        return entry
    entry.update(_libdoctor.judge_environment(doc, config["stack"], needed))
    return entry


def targets(module: Any) -> List[Dict[str, Any]]:
    """Environments and kernels to examine, each with its interpreter and the environment it runs under."""
    params = module.params
    envs, kernels = params["environments"], params["kernels"]
    if not envs and not kernels:
        envs, kernels = _libdoctor.discover(params["env_root"], params["kernel_root"])
    home = os.environ.get("HOME", "/root")
    found: List[Dict[str, Any]] = []
    for path in envs:
        entry: Dict[str, Any] = {"name": os.path.basename(path.rstrip("/")), "kind": "env", "path": path}
        entry["python"] = os.path.join(path, "bin", "python")
        changes, error = _libdoctor.activate(module.run_command, path)
        if error:
            entry["error"] = error
        else:
            entry["activation"] = changes
            entry["run_env"] = dict({"PATH": _libdoctor.BASE_PATH, "HOME": home, "LC_ALL": "C"}, **(changes or {}))
        found.append(entry)
    for path in kernels:
        entry = {"name": os.path.basename(path.rstrip("/")), "kind": "kernel", "path": path}
        spec, error = _libdoctor.read_kernel(path)
        if error or spec is None:
            entry["error"] = error
            found.append(entry)
            continue
        entry["python"] = spec["argv"][0]
        entry["kernel_env"] = spec.get("env") or {}
        server = {"PATH": _libdoctor.BASE_PATH, "HOME": home, "LC_ALL": "C"}
        entry["run_env"] = _libdoctor.expand_kernel_env(entry["kernel_env"], server)
        found.append(entry)
    return found


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    started = time.monotonic()
    params = module.params
    _validate.fail_on(module, option_problems(params))
    stack = {k: params["stack"].get(k) for k in ("cuda", "cudnn", "tensorrt")}
    needed = _verdict.gpu_requirement(params["required"], params["profile"], gpu_seen=params["gpu_seen"])
    config = {"libraries": params["libraries"], "stack": stack}
    examined = [examine(module, entry, config, needed) for entry in targets(module)]
    found_flags = _libdoctor.flags(examined)
    result: Dict[str, Any] = {
        "changed": False,
        "environments": examined,
        "flags": found_flags,
        "stack": stack,
        "verdict": _verdict.worst(e.get("verdict", "skip") for e in examined),
        "reason": "",
    }
    if not examined:
        result["reason"] = (
            f"No environment with bin/python under {params['env_root']} and no dlstack kernel under "
            f"{params['kernel_root']}; nothing was examined."
        )
    elif found_flags:
        bad = {f.split(":", 1)[0] for f in found_flags}
        result["reason"] = f"{len(found_flags)} library problem(s) in {len(bad)} environment(s); see flags."
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    result["changed"] = _smoke.write_dest(module, params["dest"], result)
    if params["required"] and result["verdict"] in ("skip", "fail"):
        module.fail_json(msg=result["reason"] or "The library check did not pass.", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
