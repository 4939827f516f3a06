#!/usr/bin/env bash
# Run every gpulab.dlstack verification module through `ansible localhost` on a GPU host and keep
# the results as JSON. Backends: torch, jax and cupy for gpu_smoke; jax and tensorflow (when
# present) for xla_smoke on the GPU; trt_smoke on whatever TensorRT path exists; then one run of
# the verify playbook for the fleet report; multigpu_smoke (torch, cupy), fabric_info and dcgm_diag. Meant to finish
# well inside 10 minutes.
# Also kept, for the parser corpus and the record: the raw nvidia-smi outputs (raw/), gpu_info read
# through NVML and through nvidia-smi separately, and a plain torch bf16 matmul (reference_matmul.py)
# that gpu_smoke's bf16 figure is stated against (summary.json: reference.ratio).
# gpu_smoke's default checks include the 3x3 convolution through cuDNN in fp32 and fp16 (conv_fp32, conv_fp16,
# in each backend); lib_doctor reports which CUDA libraries the interpreter's environment loads (when it is a venv).
#
# Environment:
#   DLSTACK_GPU_PYTHON  interpreter that has the frameworks (default: python3 on PATH)
#   OUT                 where results go (default: tests/gpu/results)
#   GPU_SMOKE_BUDGET    gpu_smoke time budget per backend in seconds (default 40)
#   MODULE_TIMEOUT      seconds one module call may take before it is killed (default 150)
#   WHEELS              wheels of ansible-core and its dependencies, used when $DLSTACK_GPU_PYTHON
#                       cannot import ansible (default .whl; pass it to the GPU host with `carry`).
#                       For a GPU host's Python 3.12, on a machine with pip's index:
#                         pip download --no-deps --only-binary=:all: --python-version 3.12 \
#                           --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl \
#                           ansible-core==2.19.14 resolvelib jinja2 markupsafe pyyaml cryptography cffi \
#                           pycparser packaging
#
# Recorded run: tests/bench/results/2026-12-01-h200.json (one H200, 165 s with a budget of 30).
#
# Exit status: 0 when every module ran and no verdict is "fail"; 1 otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${DLSTACK_GPU_PYTHON:-$(command -v python3 || true)}"
RESULTS="${OUT:-$ROOT/tests/gpu/results}"
BUDGET="${GPU_SMOKE_BUDGET:-40}"
MODULE_TIMEOUT="${MODULE_TIMEOUT:-150}"
WHEELS="${WHEELS:-$ROOT/.whl}"
START=$(date +%s)

PY="$(command -v "$PY" || true)"
if [ -z "$PY" ] || [ ! -x "$PY" ]; then
    echo "run.sh: no Python interpreter found; set DLSTACK_GPU_PYTHON to the one that has torch/jax/cupy." >&2
    exit 2
fi
mkdir -p "$RESULTS"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/dlstack-gpu-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# ansible-core: the interpreter's own when importable; else a private venv (or target dir) holding
# ansible-core and its dependencies from the wheels, with the interpreter's packages behind them (the
# modules read NVML through its nvidia-ml-py); the frameworks' own environment stays untouched.
ANSIBLE_PY="$PY"
if ! "$PY" -c 'import ansible' 2>/dev/null; then
    if ! compgen -G "$WHEELS/ansible_core-*.whl" >/dev/null; then
        echo "run.sh: ansible-core is not importable by $PY and $WHEELS has no ansible_core-*.whl;" \
            "put ansible-core and its dependencies there as wheels (or set WHEELS)." >&2
        exit 2
    fi
    if "$PY" -m venv "$WORK/venv" >/dev/null 2>&1; then
        ANSIBLE_PY="$WORK/venv/bin/python"
        "$ANSIBLE_PY" -m pip install --quiet --no-index --find-links "$WHEELS" ansible-core
        # The interpreter's own packages after the venv's (a .pth file: --system-site-packages would
        # reach the base interpreter, not a venv's), so the modules still import nvidia-ml-py.
        "$PY" -c 'import site, sys; print("\n".join(site.getsitepackages()))' \
            >"$("$ANSIBLE_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/dlstack-frameworks.pth"
    else
        "$PY" -m pip install --quiet --no-index --find-links "$WHEELS" --target "$WORK/site" ansible-core
        export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
    fi
fi

mkdir -p "$WORK/collections/ansible_collections/gpulab" "$WORK/tmp"
ln -s "$ROOT" "$WORK/collections/ansible_collections/gpulab/dlstack"
cat >"$WORK/ansible.cfg" <<EOF
[defaults]
collections_path = $WORK/collections
local_tmp = $WORK/tmp
remote_tmp = $WORK/tmp
host_key_checking = false
retry_files_enabled = false
interpreter_python = $ANSIBLE_PY
EOF
export ANSIBLE_CONFIG="$WORK/ansible.cfg" ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_INVENTORY_UNPARSED_WARNING=false

failures=0
declare -a RAN=()

# run NAME MODULE JSON-ARGS: one ad-hoc module call; the module writes its result to NAME.json via dest.
run() {
    local name="$1" module="$2" args="$3" t0 rc=0
    t0=$(date +%s)
    echo "== $name ($module $args)"
    args="${args%\}}"
    [ "$args" = "{" ] && args="{\"dest\": \"$RESULTS/$name.json\"}" || args="$args, \"dest\": \"$RESULTS/$name.json\"}"
    timeout --kill-after=10 "$MODULE_TIMEOUT" "$ANSIBLE_PY" -m ansible adhoc -i localhost, -c local localhost \
        -m "gpulab.dlstack.$module" -a "$args" >"$RESULTS/$name.log" 2>&1 || rc=$?
    tail -n 3 "$RESULTS/$name.log"
    if [ "$rc" -ne 0 ]; then
        failures=$((failures + 1))
        echo "   -> ansible rc=$rc (see $name.log)"
    fi
    RAN+=("$name:$rc:$(($(date +%s) - t0))")
}

backend_present() {
    "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)"
}

# capture NAME CMD...: a raw command output kept as it was printed (raw/NAME.txt, exit status last).
capture() {
    local name="$1" rc=0
    shift
    mkdir -p "$RESULTS/raw"
    timeout --kill-after=5 60 "$@" >"$RESULTS/raw/$name.txt" 2>&1 || rc=$?
    echo "# exit status: $rc" >>"$RESULTS/raw/$name.txt"
}
capture nvidia-smi-L nvidia-smi -L
capture nvidia-smi-q nvidia-smi -q
FIELDS="$("$ANSIBLE_PY" -c 'import sys; sys.path[:0] = [sys.argv[1]]; from plugins.module_utils._gpu_info import QUERY_FIELDS; print(",".join(QUERY_FIELDS))' "$ROOT")"
capture nvidia-smi-csv nvidia-smi --format=csv,noheader,nounits "--query-gpu=$FIELDS"
capture nvidia-smi-csv-header nvidia-smi --format=csv "--query-gpu=$FIELDS"
capture nvidia-smi-q-performance nvidia-smi -q -d PERFORMANCE,POWER,CLOCK
capture nvidia-smi-topo nvidia-smi topo -m
capture proc-driver-version cat /proc/driver/nvidia/version

run gpu_info gpu_info '{}'
run gpu_info_nvml gpu_info '{"source": "nvml"}'
run gpu_info_smi gpu_info '{"source": "nvidia-smi"}'
for backend in torch jax cupy; do
    if backend_present "$backend"; then
        run "gpu_smoke_$backend" gpu_smoke "{\"python\": \"$PY\", \"backend\": \"$backend\", \"time_budget\": $BUDGET}"
        if [ "$backend" = torch ]; then
            echo "== reference: plain torch bf16 matmul"
            timeout --kill-after=5 120 "$PY" "$ROOT/tests/gpu/reference_matmul.py" 8192 3 10 5 \
                >"$RESULTS/reference_torch_bf16.json" 2>"$RESULTS/reference_torch_bf16.log" || failures=$((failures + 1))
            cat "$RESULTS/reference_torch_bf16.json"
        fi
    else
        echo "== gpu_smoke_$backend: skipped, $backend is not importable by $PY"
        RAN+=("gpu_smoke_$backend:not-installed:0")
    fi
done
for backend in jax tensorflow torch; do
    if backend_present "$backend"; then
        run "xla_smoke_$backend" xla_smoke "{\"python\": \"$PY\", \"backend\": \"$backend\", \"device\": \"gpu\", \"time_budget\": 10}"
    fi
done
run trt_smoke trt_smoke "{\"python\": \"$PY\", \"time_budget\": 10}"
PY_ENV="$(dirname "$(dirname "$PY")")"
if [ -f "$PY_ENV/pyvenv.cfg" ] || [ -d "$PY_ENV/conda-meta" ]; then
    run lib_doctor lib_doctor "{\"environments\": [\"$PY_ENV\"], \"profile\": \"gpu\"}"
else
    echo "== lib_doctor: skipped, $PY is not in a venv or conda environment"
fi
# Multi-GPU hosts: P2P matrix and NCCL all-reduce per framework (skip with the reason on one GPU); the fabric manager
# on NVSwitch systems (skip elsewhere); DCGM's level-1 diagnostic when dcgmi is installed (warn when it is not).
for backend in torch cupy; do
    if backend_present "$backend"; then
        run "multigpu_smoke_$backend" multigpu_smoke "{\"python\": \"$PY\", \"backend\": \"$backend\", \"time_budget\": 20, \"profile\": \"gpu\"}"
    fi
done
run fabric_info fabric_info '{"check_service": true}'
run dcgm_diag dcgm_diag '{"profile": "gpu", "missing": "warn", "timeout": 120}'

if [ $(($(date +%s) - START)) -lt 360 ]; then
    echo "== verify playbook (fleet report)"
    t0=$(date +%s)
    rc=0
    timeout --kill-after=10 200 "$ANSIBLE_PY" -m ansible playbook -i localhost, -c local \
        "$ROOT/playbooks/verify.yml" -e dlstack_hosts=localhost -e "verify_python=$PY" \
        -e verify_gpu_smoke_time_budget=15 -e verify_xla_smoke_time_budget=5 -e verify_trt_smoke_time_budget=5 \
        -e "verify_state_dir=$WORK/state" -e "verify_report_dir=$RESULTS/reports" -e verify_fail_on=never \
        -e ansible_become=false >"$RESULTS/verify_playbook.log" 2>&1 || rc=$?
    tail -n 4 "$RESULTS/verify_playbook.log"
    [ "$rc" -eq 0 ] || failures=$((failures + 1))
    RAN+=("verify_playbook:$rc:$(($(date +%s) - t0))")
else
    echo "== verify playbook: skipped, not enough time left"
fi

summary_rc=0
"$PY" - "$RESULTS" "$(($(date +%s) - START))" "${RAN[@]}" <<'PYEOF' || summary_rc=$?
import json
import os
import sys

results, wall = sys.argv[1], int(sys.argv[2])
runs = []
for item in sys.argv[3:]:
    name, rc, seconds = item.split(":")
    runs.append({"name": name, "rc": rc, "seconds": int(seconds)})
summary = {"wall_seconds": wall, "runs": runs, "verdicts": {}, "figures": {}}
for run in runs:
    path = os.path.join(results, run["name"] + ".json")
    if not os.path.exists(path):
        continue
    with open(path) as handle:
        doc = json.load(handle)
    verdict = doc.get("verdict") or "%s GPU(s)" % doc.get("count", 0)
    summary["verdicts"][run["name"]] = verdict
    print("%-22s %-5s %s %s" % (run["name"], verdict, doc.get("backend") or "", doc.get("reason") or ""))
    for check, entry in (doc.get("checks") or {}).items():
        fraction = entry.get("fraction")
        summary["figures"]["%s.%s" % (run["name"], check)] = {
            "status": entry.get("status"),
            "value": entry.get("value"),
            "unit": entry.get("unit"),
            "fraction_of_peak": fraction,
            "sustained": entry.get("sustained"),
            "sustained_fraction": entry.get("sustained_fraction"),
            "speedup": entry.get("speedup"),
        }
        shown = "" if fraction is None else " (%.0f %% of spec)" % (fraction * 100)
        if entry.get("sustained_fraction"):
            shown += ", sustained %.4g (%.0f %% of it)" % (entry["sustained"], entry["sustained_fraction"] * 100)
        value = entry.get("value")
        figure = "" if value is None else " %.4g %s" % (value, entry.get("unit") or "")
        print("    %-14s %-5s%s%s" % (check, entry.get("status"), figure, shown))
    if doc.get("versions"):
        summary.setdefault("versions", {})[run["name"]] = doc["versions"]
    if doc.get("driver_version"):
        summary["driver_version"] = doc["driver_version"]
reference_path = os.path.join(results, "reference_torch_bf16.json")
if os.path.exists(reference_path):
    with open(reference_path) as handle:
        text = handle.read().strip()
    reference = json.loads(text) if text else {"error": "no output"}
    smoke = summary["figures"].get("gpu_smoke_torch.matmul_bf16", {}).get("value")
    best = reference.get("tflops_best")
    reference["gpu_smoke_torch_bf16_tflops"] = smoke
    reference["ratio"] = round(smoke / best, 3) if smoke and best else None
    summary["reference"] = reference
    print("reference bf16: %s TFLOP/s best; gpu_smoke torch bf16 %s TFLOP/s; ratio %s"
          % (best, smoke, reference["ratio"]))
with open(os.path.join(results, "summary.json"), "w") as handle:
    json.dump(summary, handle, indent=2, sort_keys=True)
print("wall time: %d s; results in %s" % (wall, results))
bad = [name for name, verdict in summary["verdicts"].items() if verdict == "fail"]
sys.exit(1 if bad else 0)
PYEOF
if [ "$failures" -gt 0 ] || [ "$summary_rc" -ne 0 ]; then
    echo "run.sh: $failures ansible call(s) failed; verdict check exit $summary_rc." >&2
    exit 1
fi
