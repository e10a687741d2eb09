#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Per-call cost of RDMA tracing: times N ibv_post_send / ibv_poll_cq calls of the stand-in
# provider (rdma_app --bench) without tailtrace, with the default sampled poll side and
# with --rdma-full, and prints mean and p50 per call. Needs root; run after `make`.
# Usage: tools/rdma/bench.sh [N]   (default 200000 iterations)
# RDMA_BENCH_LIB=PATH preloads another build of the stand-in into the application, e.g.
# build/rdma/libttstandin.cet.so (built with -fcf-protection: endbr64 at every entry).
# RDMA_BENCH_JSON=FILE also writes the three runs' figures there, one object
# {"none": BENCH, "sampled": BENCH, "full": BENCH} (BENCH: rdma_app's "bench" object), for
# tools/bench/run's rdma section.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${TT_BUILD:-$root/build}
n=${1:-200000}
if [ -n "${RDMA_BENCH_LIB:-}" ] && [ ! -r "$RDMA_BENCH_LIB" ]; then
	echo "bench.sh: RDMA_BENCH_LIB=$RDMA_BENCH_LIB: no such file" >&2
	exit 2
fi
w=$(mktemp -d /tmp/tt_rdma_bench.XXXXXX)
trap 'rm -rf "$w"' EXIT

run() { # MODE: none | sampled | full
	local mode=$1 tt=
	rm -f "$w/go-open" "$w/go-post"
	env ${RDMA_BENCH_LIB:+LD_PRELOAD="$RDMA_BENCH_LIB"} "$build/rdma/rdma_app" --bench "$n" --go-open "$w/go-open" --go-post "$w/go-post" \
		--out "$w/$mode.json" &
	local app=$!
	if [ "$mode" != none ]; then
		"$build/tailtrace" rdma -p "$app" $([ "$mode" = full ] && echo --rdma-full) -j \
			>/dev/null 2>"$w/$mode.err" &
		tt=$!
		until grep -q watching "$w/$mode.err" 2>/dev/null; do sleep 0.05; done
	fi
	touch "$w/go-open"
	if [ -n "$tt" ]; then
		until grep -q "post_send at" "$w/$mode.err" 2>/dev/null; do sleep 0.05; done
	fi
	touch "$w/go-post"
	wait "$app"
	[ -n "$tt" ] && wait "$tt"
	python3 - "$w/$mode.json" "$mode" <<'EOF'
import json, sys
b = json.load(open(sys.argv[1]))["bench"]
print("%-8s" % sys.argv[2] + "".join("  %-10s mean %6.0f ns  p50 %6d ns" %
      (k, b[k]["mean_ns"], b[k]["p50_ns"]) for k in ("post", "poll_hit", "poll_empty")))
EOF
}

echo "$n iterations of: post_send(1 signaled WR); poll_cq -> 1 wc; poll_cq -> empty"
for m in none sampled full; do run $m; done
if [ -n "${RDMA_BENCH_JSON:-}" ]; then
	python3 - "$w" "$RDMA_BENCH_JSON" <<'EOF'
import json, sys
json.dump({m: json.load(open("%s/%s.json" % (sys.argv[1], m)))["bench"]
           for m in ("none", "sampled", "full")}, open(sys.argv[2], "w"))
EOF
fi
