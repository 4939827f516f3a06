#!/usr/bin/env bash
# Stand-in for a Miniforge installer, for tests where no conda installer or channel is reachable.
# "bash stub-miniforge.sh -b -p PREFIX" lays down PREFIX/bin/conda, a stub that records each call and
# creates or updates environments as folders with conda-meta/ (no packages are solved or installed).
set -euo pipefail
prefix=""
while [ $# -gt 0 ]; do
    case "$1" in
        -b) shift ;;
        -p) prefix="$2"; shift 2 ;;
        *) echo "stub-miniforge: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$prefix" ] || { echo "stub-miniforge: -p PREFIX is required" >&2; exit 2; }
[ ! -e "$prefix/bin/conda" ] || { echo "stub-miniforge: $prefix already holds conda" >&2; exit 1; }
mkdir -p "$prefix/bin" "$prefix/conda-meta"
cat > "$prefix/bin/conda" <<'STUB'
#!/usr/bin/env bash
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
printf '%s\n' "$*" >> "$root/stub-calls.log"
[ "${1:-}" = env ] || { echo "stub conda: only 'env create|update' are implemented" >&2; exit 2; }
action="$2"; shift 2
target=""; spec=""
while [ $# -gt 0 ]; do
    case "$1" in
        -p) target="$2"; shift 2 ;;
        -f) spec="$2"; shift 2 ;;
        *) shift ;;
    esac
done
[ -f "$spec" ] || { echo "stub conda: spec $spec not found" >&2; exit 1; }
[ -z "${CONDARC:-}" ] || [ -f "$CONDARC" ] || { echo "stub conda: CONDARC $CONDARC missing" >&2; exit 1; }
if grep -q 'stub-unsolvable' "$spec"; then
    echo "stub conda: PackagesNotFoundError: stub-unsolvable" >&2
    exit 1
fi
case "$action" in
    create) [ ! -e "$target/conda-meta" ] || { echo "stub conda: prefix already exists: $target" >&2; exit 1; } ;;
    update) [ -d "$target/conda-meta" ] || { echo "stub conda: no environment at $target" >&2; exit 1; } ;;
    *) echo "stub conda: unknown action $action" >&2; exit 2 ;;
esac
mkdir -p "$target/conda-meta" "$target/bin"
cp "$spec" "$target/conda-meta/stub-spec.yml"
printf '==> %s <==\n' "$action" >> "$target/conda-meta/history"
STUB
chmod 0755 "$prefix/bin/conda"
