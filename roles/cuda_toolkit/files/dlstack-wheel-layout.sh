#!/bin/sh
# Lay out NVIDIA wheel components (WHEEL_DIR/nvidia/<component>/{bin,include,lib,nvvm})
# as a toolkit prefix (bin, include, lib64, nvvm) made of symlinks, then write MARKER_NAME
# and the source record .dlstack-source-pip into it.
# Usage: dlstack-wheel-layout.sh WHEEL_DIR PREFIX MARKER_NAME
set -eu
wheels="$1/nvidia"
prefix="$2"
marker="$3"
new="${prefix}.dlstack-new"

[ -d "$wheels" ] || { echo "no wheel components under $wheels" >&2; exit 1; }
rm -rf "$new"
mkdir -p "$new/bin" "$new/include" "$new/lib64"
for component in "$wheels"/*/; do
  for sub in bin include nvvm; do
    if [ -d "${component}${sub}" ]; then
      mkdir -p "$new/$sub"
      cp -rs --remove-destination "${component}${sub}/"* "$new/$sub/"
    fi
  done
  if [ -d "${component}lib" ]; then
    cp -rs --remove-destination "${component}lib/"* "$new/lib64/"
  fi
done
find "$new" -name __pycache__ -prune -exec rm -rf {} +
find "$new" -name __init__.py -delete
for lib in "$new"/lib64/lib*.so.*; do
  [ -e "$lib" ] || continue
  base="${lib%%.so.*}.so"
  [ -e "$base" ] || ln -s "$(basename "$lib")" "$base"
done
ln -s lib64 "$new/lib"
echo "gpulab.dlstack.cuda_toolkit laid out $prefix from the wheels in $1" > "$new/.dlstack-source-pip"
: > "$new/$marker"
rm -rf "$prefix"
mv "$new" "$prefix"
