#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# record's deep tier (--deep, user/collect/deep_plan.h) on the testbed, beside a live
# `explain` (always deep) on the same traffic:
#  - a standing queue on the server's egress (20 Mbit/s and a bulk neighbour), `record
#    --deep 50%`: every request timed (the request count of the load generator within
#    1 %); latency p50/p99 within 10 % of the live explain's, although half the requests were
#    timed by socket-level hooks alone (their end from the socket's TX timestamps); the
#    same verdict class and stage, the p99 tail's excess shares within 10 points of the
#    live ones (50 %: the ~12 requests of the p99 tail all outside the windows, which
#    leaves the tail unjudged, is then about 1 in 4000; at 25 % it was 1 in 30); the deep tier ran a share of the time near its duty;
#  - `record --deep off` on the same traffic: no per-packet or scheduler program ran at all
#    (the kernel's run counts of its programs, `self.programs`), every request still
#    counted, its latency p50/p99 still within 10 % of the live explain's.
. "$(dirname "$0")/../lib.sh"
tt_require_root
for b in "$TAILTRACE" "$LOADGEN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done
tt_testbed_lock

PORT=7310
tt_testbed_scratch

SEC=${DEEP_TIER_SECONDS:-24}

# run DIR DEEP: the standing queue, a loadgen server and client for SEC s, a live explain
# and `record --deep DEEP` around it; reports in DIR
run() {
	local d=$1 deep=$2 sp ep rp
	mkdir -p "$d"
	"$TESTBED" clear >/dev/null 2>&1
	"$TESTBED" congest --link srv --rate 20mbit --buffer 64kb --bulk loadgen --bulk-conns 2 \
		--duration $((SEC + 30)) >/dev/null 2>&1 || { tt_fail "testbed congest"; return 1; }
	ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port $PORT \
		--duration $((SEC + 30)) --mode unary --compute const:500 --compute-kind block \
		>"$d/server.log" 2>&1 &
	sp=$!
	pids+=("$sp")
	"$TAILTRACE" explain --port $PORT -j -d $((SEC + 30)) >"$d/explain.json" 2>"$d/explain.err" &
	ep=$!
	pids+=("$ep")
	"$TAILTRACE" record --port $PORT -o "$d/rec" -i 1 -d $((SEC + 30)) --deep "$deep" \
		>"$d/rec.out" 2>"$d/rec.err" &
	rp=$!
	pids+=("$rp")
	if ! tt_wait_attached "$ep" || ! tt_wait_attached "$rp"; then
		tt_fail "--deep $deep: explain and record attached ($(tail -1 "$d/explain.err"; tail -1 "$d/rec.err"))"
		return 1
	fi
	sleep 2 # the queue stands before the traffic
	ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port $PORT \
		--mode unary --conns 2 --concurrency 2 --req-bytes 512 --resp-bytes 8192 \
		--duration "$SEC" --json "$d/client.json" >/dev/null 2>"$d/client.log"
	sleep 0.5
	kill -INT "$ep" "$rp"
	wait "$ep"; wait "$rp"
	kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null
	"$TESTBED" clear >/dev/null 2>&1
	"$TAILTRACE" report "$d/rec" -j >"$d/report.json" 2>"$d/report.err" || {
		tt_fail "--deep $deep: report ($(tail -1 "$d/report.err"))"
		return 1
	}
}

judge() { # DIR DEEP
	python3 - "$1" "$2" <<'PY'
import json, sys
d, deep = sys.argv[1:3]
live = json.load(open(f"{d}/explain.json"))
rep_all = json.load(open(f"{d}/report.json"))
rep = rep_all["attribution"]
lg = json.load(open(f"{d}/client.json"))["requests"]
def line(ok, msg):
    print(("ok" if ok else "fail") + f"|--deep {deep}: {msg}")
n = rep["requests"]
line(lg > 0 and abs(n - lg) <= 0.01 * lg + 2,
     f"every request timed: report {n}, load generator {lg} (within 1 %)")
for q in ("p50", "p99"):
    a, b = live["latency_us"][q], rep["latency_us"][q]
    line(a > 0 and abs(a - b) <= 0.10 * a,
         f"latency {q}: report {b:.0f} us, live explain {a:.0f} us (within 10 %)")
self = rep_all.get("self", {}).get("deep", {})
share = self.get("share")
progs = {p["hook"]: p["runs"] for p in rep_all.get("self", {}).get("programs", [])}
deep_hooks = [h for h in progs if any(x in h for x in
              ("tcp_probe", "net_dev", "qdisc", "netif_receive", "sched_switch", "sched_wakeup"))]
if deep == "off":
    line(share == 0, f"the deep tier never ran (share {share})")
    line(not deep_hooks and progs.get("sock_recv_length", 0) > 0,
         "no per-packet or scheduler program ran: " +
         (", ".join(f"{h} {progs[h]}" for h in deep_hooks) or "none") +
         f"; socket hooks did (sock_recv_length {progs.get('sock_recv_length', 0)})")
    sys.exit(0)
line(share is not None and 0.35 <= share <= 0.85,
     f"the deep tier ran {share} of the time (duty 50 %, and its tail trigger)")
lv, rv = live["verdict"], rep["verdict"]
line(lv["class"] == rv["class"] and lv["stage"] == rv["stage"],
     f"verdict {rv['class']}/{rv['stage']} = live explain's {lv['class']}/{lv['stage']}")
ls, rs = live["tail"]["excess_shares"], rep["tail"]["excess_shares"]
diff = max(abs(ls[c] - rs[c]) for c in ls)
line(diff <= 0.10, "p99 excess split: report " +
     ", ".join(f"{c} {rs[c]:.2f}" for c in rs) + " vs live " +
     ", ".join(f"{c} {ls[c]:.2f}" for c in ls) + f" (largest difference {diff:.2f} <= 0.10; "
     f"{rep['tail'].get('split_count')} of {rep['tail']['count']} tail requests split)")
PY
}

for deep in 50% off; do
	d=$W/$(echo "$deep" | tr -d %)
	run "$d" "$deep" || continue
	judge "$d" "$deep" >"$d/checks.txt" 2>&1
	tt_checks_file "$d/checks.txt"
done
exit 0
