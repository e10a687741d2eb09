#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make lint`: includes in user/ point down the pipeline (docs/design.md). lib/ includes only
# lib/; core/ only lib/ and core/; nothing outside cmd/ includes a cmd/ header. Prints the
# wrong-way includes and exits non-zero when there is one.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

# Known exceptions, one "file:header" a line, each with its reason (none now).
allowed=""

bad=""
for f in user/*/*.c user/*/*.h; do
	room=$(basename "$(dirname "$f")")
	case $room in
	lib) ok='^lib/' ;;
	core) ok='^(lib|core)/' ;;
	cmd) ok='.' ;;
	*) ok='^(lib|core|collect|attr|record|export|rdma)/' ;;
	esac
	while read -r hdr; do
		[[ $hdr =~ $ok ]] && continue
		grep -qxF "$f:$hdr" <<<"$allowed" && continue
		bad+="$f includes $hdr"$'\n'
	done < <(sed -n 's/^#include "\([a-z_]*\/[^"]*\)".*/\1/p' "$f")
done
if [ -n "$bad" ]; then
	printf '%s' "$bad"
	exit 1
fi
