#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fingerprint
short_description: Tell in one call whether what a stage or a probe depends on changed since its last full run
version_added: 0.1.0
description:
  - Used by the gpulab.dlstack roles to make a re-run of an unchanged host fast; runs on the host.
  - Computes the fingerprint of O(inputs) (hashed as sorted JSON) and of the state of O(paths) on the host (a file
    by type, mode, owner, group and the SHA-256 of its content; a directory by type, mode, owner and group; a link
    by its target and what the target holds; a missing path as missing) and of the names in the folders of
    O(listings), and compares it with the record kept in O(record) by an earlier run.
  - With O(argv) it is a cached probe. The command runs when the fingerprint differs from the record, when the
    record is of a failed run, or when O(force) is true; otherwise the output recorded with the fingerprint is
    returned and nothing runs. Only the command's output is kept (its last line that is a JSON object also
    parsed, as C(result) in the record), so the command must be read-only.
  - Without O(argv) it is a stage gate. A role calls it with O(save=false) before its tasks (RV(unchanged) tells
    it whether to skip them) and with O(save=true) after them, to record the state they left.
  - The record is a cache of what was checked, not a change to the host's configuration, so the module never
    reports C(changed).
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode the fingerprint is computed and the probe command runs (it must be read-only), but no record
        is written.
  diff_mode:
    support: none
options:
  paths:
    description:
      - Host paths the stage manages or the probe reads. Shell-style patterns (C(*), C(?), C([...])) are expanded
        on the host; a pattern that matches nothing counts as one missing path.
    type: list
    elements: str
    default: []
  listings:
    description:
      - Host folders whose names (not only their mode and owner) are part of the fingerprint, for example a
        virtual environment's C(site-packages), whose C(*.dist-info) names carry the installed versions. Patterns
        are expanded as in O(paths).
    type: list
    elements: str
    default: []
  inputs:
    description:
      - What the stage would apply or the probe is asked (settings, rendered file contents, the probe's own source),
        as any JSON-able data.
    type: raw
  record:
    description: Host path of the record file (JSON), written with mode 0644; its folder is created.
    type: path
    required: true
  argv:
    description: The read-only probe command to run when the fingerprint changed; omit for a stage gate.
    type: list
    elements: str
  stdin:
    description: Text given to O(argv) on its standard input (for example a probe script run with C(sh -s)).
    type: str
  force:
    description: Run O(argv) even when the fingerprint matches the record (C(dlstack_probe_always)).
    type: bool
    default: false
  save:
    description:
      - Write the record. With O(argv), after the command ran (a failed command is recorded as failed and never
        reused); without it, with O(data).
    type: bool
    default: false
  data:
    description: What a stage gate keeps in its record with the fingerprint (returned as RV(data) later).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Probe the installed cuDNN unless nothing it reads changed
  gpulab.dlstack.fingerprint:
    paths: [/usr/local/cudnn-9/include/cudnn_version.h, /usr/local/cudnn-9/lib]
    inputs: {script: "{{ lookup('ansible.builtin.file', 'dlstack-cudnn-probe.sh') }}"}
    record: /var/lib/dlstack/probes/cudnn.json
    argv: [/bin/sh, -s, --, /usr/local/cudnn-9]
    stdin: "{{ lookup('ansible.builtin.file', 'dlstack-cudnn-probe.sh') }}"
    save: true
  register: cudnn_probe

- name: Check whether the stage's files changed since its last full run
  gpulab.dlstack.fingerprint:
    paths: [/etc/profile.d/dlstack.sh, /opt/dlstack]
    inputs: {profile: "{{ lookup('ansible.builtin.template', 'dlstack.sh.j2') }}"}
    record: /var/lib/dlstack/rerun/common.json
  register: common_state
"""

RETURN = r"""
fingerprint:
  description: The SHA-256 of the inputs and the state of the paths now.
  returned: always
  type: str
  sample: 3f1c0e5b2a...
unchanged:
  description: The record holds this fingerprint from a run that ended well.
  returned: always
  type: bool
  sample: true
probed:
  description: The probe command ran in this call (false for a gate, or when the recorded output was reused).
  returned: always
  type: bool
  sample: false
rc:
  description: The probe command's exit status, or the recorded one when it did not run (0 for a gate).
  returned: always
  type: int
  sample: 0
stdout:
  description: The probe command's output, or the recorded output when it did not run.
  returned: always
  type: str
  sample: '{"exists": true, "major": "9"}'
stdout_lines:
  description: RV(stdout) split into lines.
  returned: always
  type: list
  elements: str
stderr:
  description: The probe command's error output, or the recorded one.
  returned: always
  type: str
data:
  description: For a gate, the data kept in the record by the last O(save=true) call ({} when none).
  returned: always
  type: dict
saved:
  description: A record was written in this call.
  returned: always
  type: bool
"""

from typing import Any, Dict

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _fingerprint


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "paths": {"type": "list", "elements": "str", "default": []},
            "listings": {"type": "list", "elements": "str", "default": []},
            "inputs": {"type": "raw"},
            "record": {"type": "path", "required": True},
            "argv": {"type": "list", "elements": "str"},
            "stdin": {"type": "str"},
            "force": {"type": "bool", "default": False},
            "save": {"type": "bool", "default": False},
            "data": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    params = module.params
    if params["stdin"] is not None and not params["argv"]:
        module.fail_json(
            msg="stdin is set but argv is not: stdin is only given to a probe command; set argv or drop stdin."
        )
    current = _fingerprint.fingerprint(params["paths"], params["inputs"], params["listings"])
    last = _fingerprint.read_record(params["record"])
    unchanged = _fingerprint.matches(last, current)
    recorded: Dict[str, Any] = last.get("data") if isinstance(last.get("data"), dict) else {}
    result: Dict[str, Any] = {"changed": False, "fingerprint": current, "unchanged": unchanged, "probed": False}
    new = None
    if params["argv"]:
        if unchanged and not params["force"]:
            rc, out, err = 0, str(recorded.get("stdout", "")), str(recorded.get("stderr", ""))
        else:
            rc, out, err = module.run_command(params["argv"], data=params["stdin"], binary_data=True)
            result["probed"] = True
            new = _fingerprint.new_record(current, {"stdout": out, "stderr": err}, rc)
        result.update(rc=rc, stdout=out, stderr=err, data={})
    else:
        result.update(rc=0, stdout="", stderr="", data=recorded)
        new = _fingerprint.new_record(current, params["data"])
    result["stdout_lines"] = result["stdout"].splitlines()
    result["saved"] = bool(params["save"] and new is not None and not module.check_mode and new != last)
    if result["saved"]:
        try:
            _fingerprint.write_record(params["record"], new)
        except OSError as exc:
            module.fail_json(msg=f"cannot write the record {params['record']}: {exc}; check the path (record).")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
