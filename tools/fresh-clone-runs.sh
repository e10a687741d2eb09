#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# CI's run, repeated: N fresh clones of one commit, each running .ci/run (CI=true make
# test) under the suite lock, one after the other, stopping at the first failure. One line
# per run in OUT: the commit, its exit status, seconds and the suite's "N passed, N failed".
#
#   sudo tools/fresh-clone-runs.sh [-n 5] [-o /tmp/fresh-runs.txt] [COMMIT (default HEAD)]
#
# Each run takes the machine for ~17 minutes on a 2-CPU VM; run nothing else meanwhile.
set -u
root=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
n=5 out=/tmp/fresh-runs.txt
while getopts n:o: o; do
	case $o in
	n) n=$OPTARG;;
	o) out=$OPTARG;;
	*) echo "usage: $0 [-n RUNS] [-o FILE] [COMMIT]" >&2; exit 2;;
	esac
done
shift $((OPTIND - 1))
sha=$(git -C "$root" rev-parse --verify -q "${1:-HEAD}^{commit}") ||
	{ echo "fresh-clone-runs: no commit ${1:-HEAD}" >&2; exit 2; }
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "fresh-clone-runs: -n wants a count, not '$n'" >&2; exit 2; }
for i in $(seq "$n"); do
	dir=$(mktemp -d /tmp/tt-fresh.XXXXXX)
	git clone -q "$root" "$dir" && git -C "$dir" checkout -q "$sha" || exit 1
	start=$(date +%s)
	(cd "$dir" && flock /run/tt-suite.lock .ci/run) >"$dir.log" 2>&1
	rc=$?
	echo "run $i/$n commit ${sha:0:12} exit $rc $(($(date +%s) - start)) s" \
		"$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$dir.log" | tail -1) (log $dir.log)" | tee -a "$out"
	rm -rf "$dir"
	[ "$rc" = 0 ] || exit 1
done
