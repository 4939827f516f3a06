#!/bin/sh
# Print one JSON object per toolkit ROOT/cuda-VERSION: compiler tool and its release,
# CUDA_VERSION from cuda.h and the cuda version from version.json ("" where absent).
# Usage: dlstack-cuda-probe.sh ROOT VERSION...
set -u
root="$1"
shift
printf '['
sep=''
for version in "$@"; do
  prefix="$root/cuda-$version"
  tool=''
  release=''
  for candidate in nvcc ptxas; do
    if [ -x "$prefix/bin/$candidate" ]; then
      tool="$candidate"
      release=$("$prefix/bin/$candidate" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1)
      break
    fi
  done
  header=''
  if [ -r "$prefix/include/cuda.h" ]; then
    header=$(sed -n 's/^#define CUDA_VERSION[[:space:]][[:space:]]*\([0-9][0-9]*\).*/\1/p' "$prefix/include/cuda.h" | head -n 1)
  fi
  json=''
  if [ -r "$prefix/version.json" ]; then
    json=$(tr -d '\n' < "$prefix/version.json" | sed -n 's/.*"cuda"[^}]*"version"[[:space:]]*:[[:space:]]*"\([0-9.]*\)".*/\1/p')
  fi
  exists=false
  [ -d "$prefix" ] && exists=true
  printf '%s{"version": "%s", "exists": %s, "tool": "%s", "release": "%s", "cuda_h": "%s", "version_json": "%s"}' \
    "$sep" "$version" "$exists" "$tool" "$release" "$header" "$json"
  sep=', '
done
printf ']\n'
