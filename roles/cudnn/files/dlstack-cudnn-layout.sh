#!/bin/sh
# Lay out the cuDNN wheel (WHEEL_DIR/nvidia/cudnn/{include,lib}) as PREFIX/include and PREFIX/lib
# made of symlinks, add unversioned library names, then write MARKER_NAME into PREFIX.
# Usage: dlstack-cudnn-layout.sh WHEEL_DIR PREFIX MARKER_NAME
set -eu
src="$1/nvidia/cudnn"
prefix="$2"
marker="$3"
new="${prefix}.dlstack-new"

if [ ! -d "$src/include" ] || [ ! -d "$src/lib" ]; then
  echo "no cuDNN include/ and lib/ under $src" >&2
  exit 1
fi
rm -rf "$new"
mkdir -p "$new/include" "$new/lib"
cp -rs --remove-destination "$src/include/"* "$new/include/"
cp -rs --remove-destination "$src/lib/"* "$new/lib/"
find "$new" -name __pycache__ -prune -exec rm -rf {} +
find "$new" -name __init__.py -delete
for lib in "$new"/lib/lib*.so.*; do
  [ -e "$lib" ] || continue
  base="${lib%%.so.*}.so"
  [ -e "$base" ] || ln -s "$(basename "$lib")" "$base"
done
echo "gpulab.dlstack.cudnn laid out $prefix from the wheel in $1" > "$new/.dlstack-source-pip"
: > "$new/$marker"
rm -rf "$prefix"
mv "$new" "$prefix"
