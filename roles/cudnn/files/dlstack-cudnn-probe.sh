#!/bin/sh
# Print the cuDNN version of PREFIX as JSON, read from include/cudnn_version.h (cuDNN >= 8)
# or include/cudnn.h, and whether lib/libcudnn.so.<major> exists.
# Usage: dlstack-cudnn-probe.sh PREFIX
set -u
prefix="$1"
header=''
for candidate in "$prefix/include/cudnn_version.h" "$prefix/include/cudnn.h"; do
  if [ -r "$candidate" ] && grep -q '^#define CUDNN_MAJOR' "$candidate"; then
    header="$candidate"
    break
  fi
done
value() {
  [ -n "$header" ] && sed -n "s/^#define $1[[:space:]][[:space:]]*\([0-9][0-9]*\).*/\1/p" "$header" | head -n 1
}
major=$(value CUDNN_MAJOR)
minor=$(value CUDNN_MINOR)
patch=$(value CUDNN_PATCHLEVEL)
library=false
[ -n "$major" ] && [ -e "$prefix/lib/libcudnn.so.$major" ] && library=true
exists=false
[ -d "$prefix" ] && exists=true
printf '{"exists": %s, "header": "%s", "major": "%s", "minor": "%s", "patch": "%s", "library": %s}\n' \
  "$exists" "$header" "$major" "$minor" "$patch" "$library"
