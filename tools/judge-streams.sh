#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The streaming judge: tests/ns/test_streams.sh (SSE and gRPC over h2c, server and client
# side, clean / slow prefill / slow decode / a queue shared with a bulk flow, a grpcio
# client) run JUDGE_RUNS times (default 10); prints how often each check held and exits
# non-zero when any check failed in any run. Part of `make judge`.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${JUDGE_RUNS:-10}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for i in $(seq 1 "$RUNS"); do
	CI=true bash "$ROOT/tests/ns/test_streams.sh" >"$OUT/run$i.tap" 2>&1
	echo "# run $i/$RUNS: $(grep -c '^ok' "$OUT/run$i.tap") ok, $(grep -c '^not ok' "$OUT/run$i.tap") not ok"
done
# a check is its text up to the first figure: "sse-clean server: verdict", "... ttft_us p99"
python3 - "$OUT" "$RUNS" <<'PY'
import collections, glob, re, sys
held, seen = collections.Counter(), collections.Counter()
for f in sorted(glob.glob(sys.argv[1] + "/run*.tap")):
    for line in open(f):
        m = re.match(r"(ok|not ok) \d+ - (.*)", line)
        if not m:
            continue
        key = re.split(r" \d| vs ", m.group(2))[0]
        seen[key] += 1
        held[key] += m.group(1) == "ok"
bad = 0
for key in sorted(seen):
    print("%3d/%-3d %s" % (held[key], seen[key], key))
    bad += held[key] != seen[key]
print("streams judge: %d of %d checks held in every run" % (len(seen) - bad, len(seen)))
sys.exit(1 if bad else 0)
PY
