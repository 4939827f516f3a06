#!/usr/bin/python
# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_report
short_description: Write the fleet verification report (Markdown and self-contained HTML)
version_added: 0.1.0
description:
  - "Used by the gpulab.dlstack.verify role; runs on the controller (C(delegate_to: localhost))."
  - Reads C(<src>/<host>/latest.json) for every host in O(hosts), compares each figure with the
    fleet median, flags hosts more than O(slow_pct) percent below it and writes C(fleet.md) and
    C(fleet.html) (inline CSS and SVG chart, nothing fetched) into O(src).
  - Each host's row shows its verdicts beside its installed stack (driver, CUDA, cuDNN, TensorRT,
    TensorFlow, Python, numpy) as gpulab.dlstack.verify_store recorded it; a dash marks a version
    not known. Every value read from a host is HTML-escaped in C(fleet.html).
  - A C(latest.json) that is not a host record as M(gpulab.dlstack.verify_store) writes it (not JSON,
    not an object, without C(host) or C(verdict), of another host, figures that are not numbers) fails the
    task with the file and the fix; nothing is written then.
  - A report file is rewritten only when what it says changes; one that differs only in its generation time is
    left as it is, and the task reports a change only when a file is (or, in check mode, would be) rewritten.
author:
  - gpulab.dlstack maintainers (!UNKNOWN)
extends_documentation_fragment:
  - gpulab.dlstack.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode the report is computed and returned but no file is written.
  diff_mode:
    support: none
options:
  src:
    description: Reports directory holding one sub-directory per host.
    type: path
    required: true
  hosts:
    description:
      - Hosts to include; a host without C(latest.json) is listed in RV(missing).
      - Inventory names, each once; an entry with a C(/), C(..) or surrounding spaces is refused.
    type: list
    elements: str
    required: true
  slow_pct:
    description: Percent below the fleet median that flags a host, 0 to 99.
    type: float
    default: 10
"""

EXAMPLES = r"""
- name: Fleet report
  gpulab.dlstack.verify_report:
    src: "{{ playbook_dir }}/../reports"
    hosts: "{{ ansible_play_hosts }}"
"""

RETURN = r"""
verdicts:
  sample: {gpu01: pass, gpu02: warn}
  description: Verdict per host after the fleet comparison.
  returned: always
  type: dict
summaries:
  sample: {gpu01: ["gpu01: PASS"]}
  description: Readable lines per host.
  returned: always
  type: dict
fleet_verdict:
  description: Worst host verdict.
  returned: always
  type: str
  sample: warn
stats:
  sample: {hosts: 2, slow_pct: 10.0, medians: {gpu_smoke.matmul_bf16: 780.0}, slow: []}
  description: Fleet medians and slow hosts.
  returned: always
  type: dict
markdown:
  description: Path of the Markdown report.
  returned: always
  type: str
  sample: /srv/ansible/reports/fleet.md
html:
  description: Path of the HTML report.
  returned: always
  type: str
  sample: /srv/ansible/reports/fleet.html
missing:
  description: Hosts without a C(latest.json).
  returned: always
  type: list
  elements: str
  sample: []
"""

import datetime
import json
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpulab.dlstack.plugins.module_utils import _report, _validate
from ansible_collections.gpulab.dlstack.plugins.module_utils._validate import Range

SLOW_PCT = Range(0, 99, "percent below the fleet median")


def option_problems(params: Dict[str, Any]) -> List[str]:
    """Problems with src, hosts and slow_pct, found before any file is read."""
    problems = _validate.directory("src", params["src"], "the verify role's verify_report_dir")
    problems += _validate.host_names("hosts", params["hosts"])
    problems += _validate.number("slow_pct", params["slow_pct"], SLOW_PCT, "default 10")
    return problems


def read_records(src: str, hosts: List[str]) -> Tuple[List[Dict[str, Any]], List[str], List[str]]:
    """(records, hosts without latest.json, problems) for the hosts' latest.json files under src."""
    records: List[Dict[str, Any]] = []
    missing: List[str] = []
    problems: List[str] = []
    fix = "re-run the verify role on {} (gpulab.dlstack.verify_store writes it) or delete the file"
    for host in hosts:
        path = os.path.join(src, host, "latest.json")
        try:
            with open(path) as handle:
                record = json.load(handle)
        except FileNotFoundError:
            missing.append(host)
            continue
        except (OSError, ValueError) as exc:
            problems.append(f"hosts entry {host}: {path} cannot be read as JSON ({exc}); {fix.format(host)}.")
            continue
        found = _validate.host_record(path, record, host)
        if found:
            problems += _validate.fix_for([f"hosts entry {host}: {p}" for p in found], fix.format(host))
        else:
            records.append(record)
    return records, missing, problems


GENERATED = re.compile(r"Generated (\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC) for ")


def unchanged_text(path: str, records: List[Dict[str, Any]], stats: Dict[str, Any], render: Any) -> Optional[str]:
    """The file's text when rendering the same records under the file's own generation time gives it back, else None.

    The report is rewritten (and the task changed) only when what it says changed, not when only the time would.
    """
    try:
        with open(path) as handle:
            old = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    found = GENERATED.search(old)
    if found is None:
        return None
    return old if render(records, stats, found.group(1)) == old else None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "path", "required": True},
            "hosts": {"type": "list", "elements": "str", "required": True},
            "slow_pct": {"type": "float", "default": 10},
        },
        supports_check_mode=True,
    )
    src = module.params["src"]
    _validate.fail_on(module, option_problems(module.params))
    records, missing, problems = read_records(src, module.params["hosts"])
    _validate.fail_on(module, problems)
    stats = _report.fleet_stats(records, module.params["slow_pct"])
    _report.apply_fleet(records, stats)
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    markdown = os.path.join(src, "fleet.md")
    page = os.path.join(src, "fleet.html")
    changed = False
    for path, render in ((markdown, _report.render_markdown), (page, _report.render_html)):
        if unchanged_text(path, records, stats, render) is not None:
            continue
        changed = True
        if not module.check_mode:
            os.makedirs(src, exist_ok=True)
            staging = os.path.join(module.tmpdir, os.path.basename(path))
            with open(staging, "w") as handle:
                handle.write(render(records, stats, generated))
            module.atomic_move(staging, path)
    module.exit_json(
        changed=changed,
        verdicts={r["host"]: r["verdict"] for r in records},
        summaries={r["host"]: _report.summary_lines(r) for r in records},
        fleet_verdict=_report.fleet_verdict(records),
        stats=stats,
        markdown=markdown,
        html=page,
        missing=missing,
    )


if __name__ == "__main__":
    main()
