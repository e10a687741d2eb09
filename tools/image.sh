#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make image`: tailtrace's OCI image from this build, with podman, offline. Stages the
# binary and every shared library ldd names (the dynamic loader included) under
# $BUILD/image/rootfs, then builds dist/container/Containerfile on it (FROM scratch: no
# registry is asked for anything). Usage: tools/image.sh BINARY TAG...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$1; shift
[ $# -gt 0 ] || { echo "usage: $0 BINARY TAG..." >&2; exit 2; }
command -v podman >/dev/null || { echo "tools/image.sh: podman is not installed (apt-get install podman)" >&2; exit 1; }
ctx=$(dirname "$bin")/image
rm -rf "$ctx" && mkdir -p "$ctx/rootfs/usr/sbin"
install -m 0755 "$bin" "$ctx/rootfs/usr/sbin/tailtrace"
# "libx.so.1 => /lib/.../libx.so.1 (0x...)" and the loader's "/lib64/ld-linux-x86-64.so.2 (0x...)";
# each copied to the path it has here (cp -L: the file, not the symbolic link)
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
[ -n "$libs" ] || { echo "tools/image.sh: ldd found no libraries in $bin" >&2; exit 1; }
for l in $libs; do
	mkdir -p "$ctx/rootfs$(dirname "$l")"
	cp -L "$l" "$ctx/rootfs$l"
done
# the mount points the DaemonSet and the runtime fill (a read-only root cannot grow them)
mkdir -p "$ctx/rootfs"/{proc,sys,dev,etc,tmp,var/lib/tailtrace,host/sys/fs/cgroup}
tags=()
for t in "$@"; do tags+=(-t "$t"); done
podman build --network=none --pull=never -q -f "$root/dist/container/Containerfile" \
	"${tags[@]}" "$ctx" >/dev/null
echo "image: $* ($(podman image inspect --format '{{.Size}}' "$1") bytes)"
