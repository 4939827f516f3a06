#!/usr/bin/env bash
# Stand-in for the micromamba binary, for tests where no conda installer or channel is reachable.
# Records each call next to MAMBA_ROOT_PREFIX and handles "create -y -p PREFIX -f SPEC" by making PREFIX/conda-meta
# (no packages are solved or installed).
set -euo pipefail
root="${MAMBA_ROOT_PREFIX:?stub micromamba: MAMBA_ROOT_PREFIX is not set}"
printf '%s\n' "$*" >> "$root/stub-calls.log"
[ "${1:-}" = create ] || { echo "stub micromamba: only 'create' is implemented" >&2; exit 2; }
shift
target=""; spec=""
while [ $# -gt 0 ]; do
    case "$1" in
        -p) target="$2"; shift 2 ;;
        -f) spec="$2"; shift 2 ;;
        *) shift ;;
    esac
done
[ -f "$spec" ] || { echo "stub micromamba: spec $spec not found" >&2; exit 1; }
[ -z "${CONDARC:-}" ] || [ -f "$CONDARC" ] || { echo "stub micromamba: CONDARC $CONDARC missing" >&2; exit 1; }
[ ! -e "$target/conda-meta" ] || { echo "stub micromamba: $target already exists" >&2; exit 1; }
! grep -q stub-unsolvable "$spec" || { echo "PackagesNotFoundError: stub-unsolvable" >&2; exit 1; }
mkdir -p "$target/conda-meta" "$target/bin"
cp "$spec" "$target/conda-meta/stub-spec.yml"
printf '==> create <==\n' >> "$target/conda-meta/history"
