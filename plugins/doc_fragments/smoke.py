# Copyright: gpulab.dlstack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Options shared by the smoke modules (gpu_smoke, xla_smoke, trt_smoke)."""

    DOCUMENTATION = r"""
options:
  python:
    description:
      - Absolute path of the Python interpreter that runs the workload, usually an environment's
        C(bin/python). Defaults to the interpreter running this module.
    type: str
  dest:
    description: Also write the result as JSON to this file; the module then reports a change when the file changes.
    type: path
"""
