#!/usr/bin/env bash
# Checks are eval-ed strings so they expand when run; rc/changed/elapsed are read inside them.
# shellcheck disable=SC2016,SC2034
# Exercises the conda backend of gpulab.dlstack.python_env on this host (connection local, throwaway prefix).
# Real: installer download over HTTP from 127.0.0.1 with the published-style .sha256 file verified, checksum
# mismatch, an unreachable URL and a silent server failing within the timeout, a controller-local installer,
# the rendered .condarc and environment.yml, create / update-only-when-the-spec-changed / remove, idempotence
# and check mode. Stubbed: the conda client itself (stub-miniforge.sh); no package is solved or installed.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
playbook_cmd="${ANSIBLE_PLAYBOOK:-ansible-playbook}"
work="$(mktemp -d /tmp/dlstack-conda.XXXXXX)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/colls/ansible_collections/gpulab" "$work/www"
ln -s "$repo" "$work/colls/ansible_collections/gpulab/dlstack"
export ANSIBLE_COLLECTIONS_PATH="$work/colls${ANSIBLE_COLLECTIONS_PATH:+:$ANSIBLE_COLLECTIONS_PATH}"
export ANSIBLE_INJECT_FACT_VARS=false ANSIBLE_RETRY_FILES_ENABLED=false ANSIBLE_NOCOLOR=1
export ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_INVENTORY_UNPARSED_WARNING=false

installer=Miniforge3-stub-Linux-x86_64.sh
cp "$here/stub-miniforge.sh" "$work/www/$installer"
(cd "$work/www" && sha256sum "$installer" > "$installer.sha256")
cp "$work/www/$installer" "$work/www/Miniforge3-tampered.sh"
echo "# tampered" >> "$work/www/Miniforge3-tampered.sh"
cp "$work/www/$installer.sha256" "$work/www/Miniforge3-tampered.sh.sha256"
sed -i "s/$installer/Miniforge3-tampered.sh/" "$work/www/Miniforge3-tampered.sh.sha256"
good_sum="$(cut -d' ' -f1 "$work/www/$installer.sha256")"
cp "$here/stub-micromamba.sh" "$work/www/micromamba-linux-64"
(cd "$work/www" && sha256sum micromamba-linux-64 > micromamba-linux-64.sha256)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http_port="$(free_port)"
python3 -m http.server --bind 127.0.0.1 --directory "$work/www" "$http_port" >"$work/http.log" 2>&1 &
pids+=($!)
silent_port="$(free_port)"
python3 - "$silent_port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
time.sleep(90)
PY
pids+=($!)
closed_port="$(free_port)"
for _ in $(seq 50); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$http_port/', timeout=1)" 2>/dev/null && break
    sleep 0.1
done

passed=0
failed=0
check() {
    if eval "$2"; then
        passed=$((passed + 1)); echo "PASS: $1"
    else
        failed=$((failed + 1)); echo "FAIL: $1"; echo "---- last output ----"; tail -25 "$work/last.log"
    fi
}
play() {
    local name="$1"; shift
    local start end
    start="$(date +%s)"
    "$playbook_cmd" -i localhost, "$here/playbook.yml" \
        -e "dlstack_prefix=$work/$name dlstack_state_dir=$work/$name/state dlstack_cache_dir=$work/$name/cache" \
        -e "python_env_conda_installer_url=http://127.0.0.1:$http_port/$installer" "$@" >"$work/last.log" 2>&1
    rc=$?
    end="$(date +%s)"
    elapsed=$((end - start))
    changed="$(sed -n 's/.*changed=\([0-9]*\).*/\1/p' "$work/last.log" | tail -1)"
}
p="$work/main"
calls() {
    local n
    n="$(grep -c "^env $1" "$p/conda/stub-calls.log" 2>/dev/null)"
    echo "${n:-0}"
}

play main
check "converge succeeds" '[ "$rc" = 0 ]'
check "installer fetched and verified against its .sha256 file" 'grep -q "GET /$installer.sha256" "$work/http.log" && [ -x "$p/conda/bin/conda" ]'
check ".condarc carries channels, channel_alias and custom_channels" \
    'grep -q "^channel_alias: http://127.0.0.1:9/conda-mirror" "$p/conda/.condarc" && grep -q "internal: http://127.0.0.1:9/internal" "$p/conda/.condarc" && grep -q "^- bioconda" "$p/conda/.condarc"'
check "environment.yml holds the pinned spec" \
    'grep -q "numpy=1.26.4" "$p/state/python_env/science.environment.yml" && grep -q "python=3.11" "$p/state/python_env/science.environment.yml" && grep -q "six==1.16.0" "$p/state/python_env/science.environment.yml"'
check "environment created once" '[ "$(calls create)" = 1 ] && [ -d "$p/envs/science/conda-meta" ]'

play main
check "second run changes nothing" '[ "$rc" = 0 ] && [ "$changed" = 0 ] && [ "$(calls create)" = 1 ] && [ "$(calls update)" = 0 ]'
play main --check
check "check mode on the converged host changes nothing" '[ "$rc" = 0 ] && [ "$changed" = 0 ]'

play main -e stub_numpy=2.0.2
check "changed spec updates in place with --prune" '[ "$rc" = 0 ] && [ "$(calls "update --prune")" = 1 ] && [ "$(calls create)" = 1 ]'
play main -e stub_numpy=2.0.2
check "run after the update changes nothing" '[ "$rc" = 0 ] && [ "$changed" = 0 ] && [ "$(calls update)" = 1 ]'

play main -e stub_numpy=2.0.2 -e stub_extra=stub-unsolvable=1
check "a failing solve reports the spec and the channel variables" \
    '[ "$rc" != 0 ] && grep -q "PackagesNotFoundError" "$work/last.log" && grep -q "python_env_conda_channels" "$work/last.log" && [ ! -f "$p/state/python_env/science.environment.yml" ]'

play main -e stub_state=absent
check "state absent removes the environment and its spec" '[ "$rc" = 0 ] && [ ! -e "$p/envs/science" ] && [ ! -e "$p/state/python_env/science.environment.yml" ]'

play tampered -e "python_env_conda_installer_url=http://127.0.0.1:$http_port/Miniforge3-tampered.sh"
check "checksum mismatch fails naming the URL and the variables" \
    '[ "$rc" != 0 ] && grep -q "Miniforge3-tampered.sh" "$work/last.log" && grep -q "python_env_conda_installer_checksum" "$work/last.log" && [ ! -e "$work/tampered/conda/bin/conda" ]'

play closed -e "python_env_conda_installer_url=http://127.0.0.1:$closed_port/$installer"
check "unreachable URL fails fast naming the URL and python_env_conda_installer_url" \
    '[ "$rc" != 0 ] && [ "$elapsed" -lt 60 ] && grep -q "127.0.0.1:$closed_port/$installer" "$work/last.log" && grep -q "python_env_conda_installer_url" "$work/last.log"'

play silent -e "python_env_conda_installer_url=http://127.0.0.1:$silent_port/$installer" -e python_env_conda_download_timeout=3
check "silent server fails within the timeout ($elapsed s) naming the URL" \
    '[ "$rc" != 0 ] && [ "$elapsed" -lt 60 ] && grep -q "127.0.0.1:$silent_port/$installer" "$work/last.log"'

play local -e "python_env_conda_installer_src=$work/www/$installer python_env_conda_installer_checksum=sha256:$good_sum"
check "controller-local installer with a matching checksum installs" '[ "$rc" = 0 ] && [ -x "$work/local/conda/bin/conda" ]'
play localbad -e "python_env_conda_installer_src=$work/www/$installer python_env_conda_installer_checksum=sha256:${good_sum//?/0}"
check "controller-local installer with a wrong checksum fails" '[ "$rc" != 0 ] && grep -q "not the expected" "$work/last.log" && [ ! -e "$work/localbad/conda/bin/conda" ]'

p="$work/mamba"
mamba=(-e python_env_conda_flavor=micromamba -e "python_env_conda_installer_url=http://127.0.0.1:$http_port/micromamba-linux-64")
play mamba "${mamba[@]}"
check "micromamba: binary fetched, verified and installed; environment created" \
    '[ "$rc" = 0 ] && [ -x "$p/conda/bin/micromamba" ] && [ -f "$p/conda/.condarc" ] && [ "$(grep -c "^create -y -p $p/envs/science" "$p/conda/stub-calls.log")" = 1 ]'
play mamba "${mamba[@]}"
check "micromamba: second run changes nothing" '[ "$rc" = 0 ] && [ "$changed" = 0 ] && [ "$(grep -c "^create" "$p/conda/stub-calls.log")" = 1 ]'
play mamba "${mamba[@]}" -e stub_numpy=2.0.2
check "micromamba: changed spec re-creates the environment beside the old one and swaps it in" \
    '[ "$rc" = 0 ] && [ "$(grep -c "^create" "$p/conda/stub-calls.log")" = 2 ] && grep -q "numpy=2.0.2" "$p/envs/science/conda-meta/stub-spec.yml" && [ -L "$p/envs/science" ] && grep -q "numpy=1.26.4" "$p/envs/science.dlstack-old/conda-meta/stub-spec.yml"'
play mamba "${mamba[@]}" -e stub_numpy=2.0.2 -e stub_extra=stub-unsolvable=1
check "micromamba: a failed re-create leaves the environment in use as it was" \
    '[ "$rc" != 0 ] && grep -q "PackagesNotFoundError" "$work/last.log" && grep -q "numpy=2.0.2" "$p/envs/science/conda-meta/stub-spec.yml" && [ "$(ls -d "$p"/envs/science.dlstack-2* | wc -l)" = 1 ] && [ "$(readlink -f "$p/envs/science")" = "$(ls -d "$p"/envs/science.dlstack-2*)" ]'
play mamba "${mamba[@]}" -e stub_state=absent
check "micromamba: state absent removes the environment, its generation and the kept old one" \
    '[ "$rc" = 0 ] && [ -z "$(ls -A "$p/envs")" ]'

echo "conda: $passed passed, $failed failed"
[ "$failed" = 0 ]
