#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# record/report over the testbed with a fault injected for a known window (issue 6):
# `report` over the fault window gives the fault's verdict, over the clean window it does
# not; kill -9 during recording leaves readable segments; --max-size holds; pprof totals
# decode. The fault: the model takes +50 ms on 1 % of requests (loadgen --slow-share).
. "$(dirname "$0")/../lib.sh"
tt_require_root
tt_testbed_lock

W=$(mktemp -d)
REC=$W/rec
SEC=${REC_WINDOW_SECONDS:-14}
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	"$TESTBED" down >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT
tt_testbed_up

now() { date +%s.%N; }

# window PORT SERVER_ARGS...: 2 connections of unary traffic for $SEC seconds
window() {
	local port=$1; shift
	ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port "$port" --mode unary \
		--resp-bytes 8192 --compute const:500 --compute-kind block --duration $((SEC + 20)) \
		"$@" >/dev/null 2>&1 &
	local sp=$!
	sleep 0.5
	ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port "$port" \
		--mode unary --conns 2 --concurrency 2 --req-bytes 512 --resp-bytes 8192 \
		--duration "$SEC" --json "$W/client-$port.json" >/dev/null 2>&1
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
}

"$TAILTRACE" record -o "$REC" -i 2 --port 7001 --port 7002 --role server --max-size 2M \
	>"$W/rec.out" 2>"$W/rec.err" &
rp=$!
pids+=("$rp")
sleep 2
t0=$(now)
window 7001
t1=$(now)
# a quiet gap longer than an interval: report picks whole intervals (by their midpoint),
# so neither window's report holds requests of the other
sleep 2.5
t1b=$(now)
window 7002 --slow-share 1 --slow-extra-us 50000
t2=$(now)
sleep 2.5 # the interval holding the last requests is written
kill -9 "$rp"
wait "$rp" 2>/dev/null

n=$(ls "$REC" | wc -l)
tt_check "record wrote $n segment file(s), mode $(stat -c %a "$REC"/* | sort -u | tr '\n' ' ')" \
	test "$n" -ge 1 -a -z "$(stat -c %a "$REC"/* | grep -v 600)"

verdict() { # FROM TO -> class
	"$TAILTRACE" report "$REC" --from "@$1" --to "@$2" --format json 2>"$W/report.err" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["attribution"]["verdict"]["class"])'
}
clean=$(verdict "$t0" "$t1")
fault=$(verdict "$t1b" "$t2")
if [ -n "$clean" ] && [ "$clean" != compute ]; then
	tt_ok "report over the clean window: verdict '$clean' (not compute)"
else
	tt_fail "report over the clean window: verdict '$clean' (not compute)"
	"$TAILTRACE" report "$REC" --from "@$t0" --to "@$t1" 2>&1 | sed -n '1,24s/^/# /p'
fi
tt_check "report over the fault window: verdict '$fault' (compute)" test "$fault" = compute

# after kill -9 every segment reads: exit 0 (a torn last frame is a warning at most)
"$TAILTRACE" report "$REC" >/dev/null 2>"$W/all.err"
rc=$?
tt_check "report of the whole directory after kill -9: exit $rc $(head -c 160 "$W/all.err")" \
	test "$rc" -eq 0

# request counts agree with the load generator's over the whole recording
python3 - "$W" "$REC" "$TAILTRACE" <<'PY' && tt_ok "recorded requests match the load generator (±1%)" || tt_fail "recorded requests vs load generator"
import json, subprocess, sys
w, rec, tt = sys.argv[1:4]
lg = sum(json.load(open(f"{w}/client-{p}.json"))["requests"] for p in (7001, 7002))
out = subprocess.run([tt, "report", rec, "--format", "json"], capture_output=True, text=True).stdout
n = json.loads(out)["attribution"]["requests"]
print(f"# tailtrace {n} requests, load generator {lg}")
sys.exit(0 if abs(n - lg) <= 0.01 * lg else 1)
PY

# --max-size holds: a tiny bound keeps the directory under it while recording
"$TAILTRACE" record -o "$W/small" -i 0.2 --port 7003 --max-size 64k -d 6 >/dev/null 2>&1 &
sp=$!
pids+=("$sp")
ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port 7003 --duration 12 >/dev/null 2>&1 &
pids+=("$!")
sleep 0.5
ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port 7003 --conns 2 \
	--concurrency 2 --duration 5 >/dev/null 2>&1
wait "$sp"
size=$(stat -c %s "$W/small"/* | awk '{s += $1} END {print s + 0}')
tt_check "--max-size 64k: directory holds $size bytes in $(ls "$W/small" | wc -l) segments" \
	test "$size" -le 65536
