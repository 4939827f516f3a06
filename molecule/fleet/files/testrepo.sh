#!/bin/sh
# Builds the fleet scenario's local apt repository (a flat repository, read through a file: source) with two versions
# of test packages named like the packages the collection holds: a driver of one branch (two releases) and a
# container toolkit (two releases), and one more held package that no upgrade may touch. The packages are empty
# (a version file only): what is tested is apt, dpkg and the holds, not NVIDIA's software.
set -eu
repo=/srv/dlstack-test-repo
mkdir -p "$repo"
build() { # name version
  dir=$(mktemp -d)
  mkdir -p "$dir/DEBIAN" "$dir/usr/share/dlstack-test"
  printf '%s\n' "$2" > "$dir/usr/share/dlstack-test/$1.version"
  cat > "$dir/DEBIAN/control" <<CONTROL
Package: $1
Version: $2
Architecture: all
Maintainer: gpulab.dlstack test bed <root@localhost>
Description: gpulab.dlstack fleet scenario test package (stand-in named like a held package)
CONTROL
  dpkg-deb --root-owner-group -Zgzip --build "$dir" "$repo/$1_$2_all.deb" >/dev/null
  rm -rf "$dir"
}
build nvidia-driver-dlstacktest 550.100-1
build nvidia-driver-dlstacktest 550.120-1
build nvidia-container-toolkit-dlstacktest 1.17.8-1
build nvidia-container-toolkit-dlstacktest 1.17.9-1
build other-held-dlstacktest 1.0-1
cd "$repo"
: > Packages
for deb in *.deb; do
  dpkg-deb -f "$deb" >> Packages
  printf 'Filename: ./%s\nSize: %s\nSHA256: %s\n\n' "$deb" "$(stat -c %s "$deb")" "$(sha256sum "$deb" | cut -d' ' -f1)" >> Packages
done
echo "deb [trusted=yes] file:$repo ./" > /etc/apt/sources.list.d/dlstack-test.list
