#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Recordings of several kinds of traffic on the testbed, each made while a live `explain`
# watched the same traffic:
#  - `report --format perfetto` of each holds only properly nested complete events per
#    track (tools/check-perfetto.py: exactly, and as trace viewers convert timestamps);
#  - `report` gives the live explain's verdict (class, kind, stage) and p99 excess split,
#    and the request count within 1 % (recorded with --deep always: the same programs);
#  - with loss and no queue, the kept slow requests split as the live tail does (their
#    flags survive the recording: the send queue held by loss recovery is transport).
# Kinds: the demo's standing queue (20 Mbit/s and a bulk neighbour), ping-pong (one 64 B
# request at a time, as sockperf), pipelined requests (h2load, 8 in flight on one
# keep-alive HTTP/1.1 connection to nginx), HTTP/2 streams (loadgen --proto h2) and 1 %
# loss on the router.
. "$(dirname "$0")/../lib.sh"
tt_require_root
for b in "$TAILTRACE" "$LOADGEN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done
for t in nft tc python3 nginx h2load; do
	command -v $t >/dev/null || { tt_skip "$(basename "$0")" "$t missing"; exit 0; }
done
tt_testbed_lock

PORT=7000
tt_testbed_scratch

UNARY_SRV="--mode unary --compute const:500 --compute-kind block --slow-share 1 --slow-extra-us 20000"
# kind -> "fault|server options|client options"
plan() {
	case $1 in
	standing) echo "congest --link srv --rate 20mbit --buffer 64kb --bulk loadgen --bulk-conns 2 --duration 40|$UNARY_SRV|--mode unary --conns 2 --concurrency 2 --req-bytes 512 --resp-bytes 8192 --duration 5";;
	pingpong) echo "|$UNARY_SRV|--mode unary --conns 1 --concurrency 1 --req-bytes 64 --resp-bytes 64 --duration 4";;
	pipelined) echo "congest --link srv --rate 20mbit --buffer 64kb --bulk loadgen --bulk-conns 2 --duration 60|nginx|";;
	h2) echo "|--proto h2 --mode stream --prefill-us const:2000 --decode-us const:500|--proto h2 --mode stream --tokens 8 --token-bytes 512 --conns 2 --concurrency 8 --streams 4 --duration 4";;
	loss) echo "loss --link rtr --percent 1 --ports $PORT|--mode unary --compute const:500 --compute-kind block|--mode unary --conns 4 --concurrency 4 --req-bytes 512 --resp-bytes 8192 --duration 5";;
	esac
}

# nginx in the server's namespace, one process in the foreground, its files in DIR, a 1 KiB
# body, keep-alive connections that never end
start_nginx() { # dir
	local n=$1/nginx
	mkdir -p "$n/www" "$n/tmp"
	head -c 1024 /dev/zero | tr '\0' x >"$n/www/body"
	cat >"$n/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $n/nginx.pid;
error_log $n/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $n/tmp;
	proxy_temp_path $n/tmp;
	fastcgi_temp_path $n/tmp;
	uwsgi_temp_path $n/tmp;
	scgi_temp_path $n/tmp;
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	server { listen $PORT; root $n/www; }
}
EOF
	ip netns exec "$TB_NS_SRV" nginx -p "$n" -c "$n/nginx.conf" -e "$n/error.log" \
		>"$1/server.log" 2>&1 &
}

# run KIND: live explain and record around the kind's traffic, into $W/KIND
run() {
	local k=$1 d=$W/$1 fault sopts copts sp ep rp
	IFS='|' read -r fault sopts copts <<<"$(plan "$k")"
	mkdir -p "$d"
	"$TESTBED" clear >/dev/null 2>&1
	# shellcheck disable=SC2086
	[ -n "$fault" ] && { "$TESTBED" $fault >/dev/null 2>&1 || { tt_fail "$k: testbed $fault"; return 1; }; }
	if [ "$sopts" = nginx ]; then
		start_nginx "$d"
	else
		# shellcheck disable=SC2086
		ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port $PORT --duration 60 \
			$sopts >"$d/server.log" 2>&1 &
	fi
	sp=$!
	pids+=("$sp")
	"$TAILTRACE" explain --port $PORT -j -d 60 >"$d/explain.json" 2>"$d/explain.err" &
	ep=$!
	pids+=("$ep")
	# --deep always: the recording must carry what explain saw, request for request
	# (the duty cycle's own fidelity: tests/ns/test_deep_tier.sh)
	"$TAILTRACE" record --port $PORT -o "$d/rec" -i 1 -d 60 --deep always >"$d/rec.out" \
		2>"$d/rec.err" &
	rp=$!
	pids+=("$rp")
	if ! tt_wait_attached "$ep" || ! tt_wait_attached "$rp"; then
		tt_fail "$k: explain and record attached ($(tail -1 "$d/explain.err"; tail -1 "$d/rec.err"))"
		return 1
	fi
	[ -n "$fault" ] && sleep 2 # a standing queue stands before the traffic
	if [ "$sopts" = nginx ]; then
		ip netns exec "$TB_NS_CLI" timeout 60 h2load --h1 -c 1 -t 1 -m 8 -n 800 \
			"http://$TB_SRV4:$PORT/body" >"$d/client.log" 2>&1
	else
		# shellcheck disable=SC2086
		ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port $PORT \
			$copts --json "$d/client.json" >/dev/null 2>"$d/client.log"
	fi
	sleep 0.5 # the last requests reach both
	kill -INT "$ep" "$rp"
	wait "$ep"; wait "$rp"
	kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null
	"$TESTBED" clear >/dev/null 2>&1
	"$TAILTRACE" report "$d/rec" -j >"$d/report.json" 2>"$d/report.err" &&
		"$TAILTRACE" report "$d/rec" --format perfetto -o "$d/trace.json" 2>>"$d/report.err" || {
		tt_fail "$k: report ($(tail -1 "$d/report.err"))"
		return 1
	}
}

for k in standing pingpong pipelined h2 loss; do
	run "$k" || continue
	d=$W/$k
	out=$("$TT_ROOT/tools/check-perfetto.py" "$d/trace.json" --min-events 10 2>&1)
	rc=$?
	tt_check "$k: perfetto export nested ($(echo "$out" | tail -1))" test $rc -eq 0
	[ $rc -eq 0 ] || echo "$out" | head -5 | sed 's/^/# /'
	(python3 - "$d" "$k" <<'PY'
import json, sys
d, k = sys.argv[1:3]
live = json.load(open(f"{d}/explain.json"))
rep = json.load(open(f"{d}/report.json"))["attribution"]
def line(ok, msg):
    print(("ok" if ok else "fail") + f"|{k}: {msg}")
lv, rv = live["verdict"], rep["verdict"]
same = all(lv[x] == rv[x] for x in ("class", "kind", "stage"))
line(same, f"report's verdict {rv['class']}/{rv['kind']}/{rv['stage']} = live explain's "
     f"{lv['class']}/{lv['kind']}/{lv['stage']}")
a, b = live["requests"], rep["requests"]
line(a > 0 and abs(a - b) <= 0.01 * a + 2, f"requests: report {b}, live {a} (within 1 %)")
ls, rs = live["tail"]["excess_shares"], rep["tail"]["excess_shares"]
diff = max(abs(ls[c] - rs[c]) for c in ls)
line(diff <= 0.05, "p99 excess split: report " +
     ", ".join(f"{c} {rs[c]:.2f}" for c in rs) + " vs live " +
     ", ".join(f"{c} {ls[c]:.2f}" for c in ls) + f" (largest difference {diff:.2f} <= 0.05)")
if k == "pipelined":
    o = rep["overlap"]["requests"]
    line(o > 0, f"the traffic is pipelined: {o} requests overlapped others on their connection")
if k == "h2":
    s = rep["framing"]["http2_streams"]
    line(s > 0, f"the traffic is HTTP/2 streams: {s} streams")
if k == "loss":
    # the kept slow requests of the live tail (the analysed side, at or above its p99),
    # split again by report (the Perfetto export's parts), against the live p99 tail: with
    # loss and no queue, time held in the send queue while TCP recovered from loss (also a
    # request's that did not retransmit itself) is transport, not congestion
    tr = json.load(open(f"{d}/trace.json"))["traceEvents"]
    p99 = live["latency_us"]["p99"] * 1000
    sel = {(e["pid"], e["tid"]) for e in tr
           if e["ph"] == "X" and e["name"] == "request" and e["args"]["role"] == live["role"]
           and e["args"]["latency_ns"] >= p99}
    tot = {}
    for e in tr:
        if e["ph"] == "X" and e["name"] != "request" and (e["pid"], e["tid"]) in sel:
            tot[e["cat"]] = tot.get(e["cat"], 0) + e["args"]["part_ns"]
    t = sum(tot.values()) or 1
    sh = {c: tot.get(c, 0) / t for c in live["tail"]["shares"]}
    lt = live["tail"]["shares"]
    diff = max(abs(sh[c] - lt[c]) for c in lt)
    line(len(sel) > 0 and diff <= 0.1,
         f"{len(sel)} kept {live['role']} requests at or above the live p99 split as the live "
         "p99 tail: " + ", ".join(f"{c} {sh[c]:.2f}" for c in sh) + " vs live " +
         ", ".join(f"{c} {lt[c]:.2f}" for c in lt) + f" (largest difference {diff:.2f} <= 0.1)")
PY
	) >"$d/checks.txt" 2>&1
	tt_checks_file "$d/checks.txt" "$k: "
done
exit 0
