#!/usr/bin/env bash
# Run every gpulab.dlstack verification module through `ansible localhost` on a GPU host and keep
# the results as JSON. Backends: torch, jax and cupy for gpu_smoke; jax and tensorflow (when
# present) for xla_smoke on the GPU; trt_smoke on whatever TensorRT path exists; then one run of
# the verify playbook for the fleet report. Meant to finish well inside 10 minutes.
#
# Environment:
#   DLSTACK_GPU_PYTHON  interpreter that has the frameworks (default: python3 on PATH)
#   OUT                 where results go (default: tests/gpu/results)
#   GPU_SMOKE_BUDGET    gpu_smoke time budget per backend in seconds (default 40)
#   WHEELS              wheels of ansible-core and its dependencies, used when $DLSTACK_GPU_PYTHON
#                       cannot import ansible (default .whl; pass it to the GPU host with `carry`)
#
# Exit status: 0 when every module ran and no verdict is "fail"; 1 otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${DLSTACK_GPU_PYTHON:-$(command -v python3 || true)}"
RESULTS="${OUT:-$ROOT/tests/gpu/results}"
BUDGET="${GPU_SMOKE_BUDGET:-40}"
WHEELS="${WHEELS:-$ROOT/.whl}"
START=$(date +%s)

if [ -z "$PY" ] || [ ! -x "$PY" ]; then
    echo "run.sh: no Python interpreter found; set DLSTACK_GPU_PYTHON to the one that has torch/jax/cupy." >&2
    exit 2
fi
PY="$(command -v "$PY")"
mkdir -p "$RESULTS"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/dlstack-gpu-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# ansible-core: the interpreter's own when importable; else a private venv (or target dir) holding
# only ansible-core and its dependencies from the wheels, so the frameworks' packages stay untouched.
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
    timeout --kill-after=10 540 "$ANSIBLE_PY" -m ansible adhoc -i localhost, -c local localhost \
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

run gpu_info gpu_info '{}'
for backend in torch jax cupy; do
    if backend_present "$backend"; then
        run "gpu_smoke_$backend" gpu_smoke "{\"python\": \"$PY\", \"backend\": \"$backend\", \"time_budget\": $BUDGET}"
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
            "speedup": entry.get("speedup"),
        }
        shown = "" if fraction is None else " (%.0f %% of spec)" % (fraction * 100)
        value = entry.get("value")
        figure = "" if value is None else " %.4g %s" % (value, entry.get("unit") or "")
        print("    %-14s %-5s%s%s" % (check, entry.get("status"), figure, shown))
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
