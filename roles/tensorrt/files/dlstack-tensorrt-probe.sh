#!/bin/sh
# Print the TensorRT version found under PREFIX as JSON: from include/NvInferVersion.h
# (NV_TENSORRT_MAJOR/MINOR/PATCH/BUILD, following one level of macro indirection as in TensorRT 10),
# else from the tensorrt_*_libs-<version>.dist-info directory in WHEEL_DIR.
# Usage: dlstack-tensorrt-probe.sh PREFIX WHEEL_DIR
set -u
prefix="$1"
wheels="$2"
header="$prefix/include/NvInferVersion.h"
value() {
  raw=$(sed -n "s/^#define $1[[:space:]][[:space:]]*\([A-Za-z0-9_]*\).*/\1/p" "$header" | head -n 1)
  case "$raw" in
    ''|*[!0-9]*) [ -n "$raw" ] && raw=$(sed -n "s/^#define ${raw}[[:space:]][[:space:]]*\([0-9][0-9]*\).*/\1/p" "$header" | head -n 1) ;;
  esac
  printf '%s' "$raw"
}
version=''
origin=''
if [ -r "$header" ]; then
  version="$(value NV_TENSORRT_MAJOR).$(value NV_TENSORRT_MINOR).$(value NV_TENSORRT_PATCH).$(value NV_TENSORRT_BUILD)"
  origin="$header"
else
  for info in "$wheels"/tensorrt_*libs-*.dist-info; do
    [ -d "$info" ] || continue
    version=$(basename "$info" .dist-info | sed 's/^tensorrt_[a-z0-9_]*libs-//')
    origin="$info"
  done
fi
library=false
for lib in "$prefix"/lib/libnvinfer.so.*; do
  [ -e "$lib" ] && library=true
done
exists=false
[ -d "$prefix" ] && exists=true
printf '{"exists": %s, "version": "%s", "origin": "%s", "library": %s}\n' "$exists" "$version" "$origin" "$library"
