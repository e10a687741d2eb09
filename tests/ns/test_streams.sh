#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Token streams as inference servers send them, judged against the clients' own timings:
# HTTP/1.1 SSE (the header block written at once, one chunked event per token) and gRPC
# server streaming over h2c with several streams in flight on each connection
# (loadgen --proto sse / h2), and a real gRPC client (Debian's python3-grpcio). Both ends
# are traced at once, one `explain --role server` and one `--role client`:
#   clean: requests within 1 % of the client's, verdict none unless the client's own
#          timings show a tail (its slowest 1 % >= 1.5x and +2 ms over its median: on two
#          CPUs the streams' threads wait for one), then compute (or, seen from the
#          client, what lies beyond it: unattributed), TTFT p50/p99 within 10 %,
#          latency p50/p99 within 10 %, inter-token p50/p99 within 10 % of the gaps
#          between the server's token writes (tailtrace times a token where it meets a
#          socket: its send, its arrival; the client's own gaps add when its reader ran,
#          up to 25 % more at p99 on two busy CPUs: printed beside them)
#   slow prefill on 3 % of the requests (+80 ms): verdict compute, TTFT p99 within 15 %
#   slow decode on 3 % of the requests (tokens 15x further apart): verdict compute,
#          inter-token p99 within 10 % of the server's
#   the server's link shared with a bulk flow (a standing queue in its tbf): the chronic
#          verdict (what every request waits for) congestion at the server device's qdisc
#          (the tail beyond it may have other causes: the streams' threads share two CPUs),
#          the median request's congestion waiting within 0.5-2x of what the queue added to
#          the client's latency p50
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root
tt_testbed_lock
for b in "$TAILTRACE" "$LOADGEN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done

TMP=$(mktemp -d)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	"$TESTBED" down >/dev/null 2>&1
	[ -n "${TT_KEEP:-}" ] && cp -r "$TMP" "$TT_KEEP"
	rm -rf "$TMP"
}
trap cleanup EXIT
tt_testbed_up
PORT=7300
PREFILL=10000
DECODE=1000
TOKENS=24

# explain on both sides while a client runs; the reports in $TMP/$1.{server,client}.json
# run NAME PROTO CLIENT-ARGS -- SERVER-ARGS
run() {
	local name=$1 proto=$2 cargs=() sargs=() ts tc sp
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do cargs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	sargs=("$@")
	PORT=$((PORT + 1))
	ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port $PORT --proto "$proto" \
		--prefill-us const:$PREFILL --decode-us const:$DECODE --tokens $TOKENS \
		--duration 60 --json "$TMP/$name.srv.json" "${sargs[@]}" >"$TMP/$name.srv.log" 2>&1 &
	sp=$!
	PIDS+=("$sp")
	"$TAILTRACE" explain -j --port $PORT --role server -d 60 >"$TMP/$name.server.json" \
		2>"$TMP/$name.server.err" &
	ts=$!
	"$TAILTRACE" explain -j --port $PORT --role client -d 60 >"$TMP/$name.client.json" \
		2>"$TMP/$name.client.err" &
	tc=$!
	PIDS+=("$ts" "$tc")
	if ! tt_wait_attached $ts || ! tt_wait_attached $tc; then
		tt_fail "$name: tailtrace did not attach: $(cat "$TMP/$name.server.err" \
			"$TMP/$name.client.err" | head -3)"
		return 1
	fi
	ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port $PORT \
		--proto "$proto" --tokens $TOKENS --json "$TMP/$name.lg.json" \
		--samples "$TMP/$name.lg.samples" "${cargs[@]}" \
		>"$TMP/$name.cli.log" 2>&1 ||
		{ tt_fail "$name: the client failed: $(tail -2 "$TMP/$name.cli.log")"; }
	sleep 0.5
	kill -INT $ts $tc 2>/dev/null
	wait $ts $tc
	kill -INT $sp 2>/dev/null
	wait $sp 2>/dev/null
	return 0
}

# judge NAME SIDE CHECKS...: each check "what:tolerance" against the loadgen's JSON
#   count   requests within 1 %         verdict=CLASS
#   ttft50 ttft99 lat50 lat99: tailtrace's percentile within TOL of the client's
#   itl50 itl99: tailtrace's inter-token gaps (token sends on the server, their arrivals on
#          the client) within TOL of the gaps between the server's token writes; the
#          client's own gaps, which add when its reader ran, are printed beside them
judge() {
	local name=$1 side=$2
	shift 2
	python3 - "$TMP/$name.$side.json" "$TMP/$name.lg.json" "$name $side" "$TMP/$name.srv.json" \
		"$@" >"$TMP/judge.out" 2>"$TMP/judge.err" <<'EOF'
import json, sys
tt, lg, label = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
srv = json.load(open(sys.argv[4]))
pairs = {"ttft": ("ttft_us", "ttft_us"), "lat": ("latency_us", "latency_us")}
for check in sys.argv[5:]:
    what, _, arg = check.partition("=" if "=" in check else ":")
    if what == "standing":
        c, v = tt["chronic"], tt["verdict"]
        ok = c.get("found") and c.get("class") == "congestion" and arg in (c.get("where") or "")
        print("%s - %s: chronic verdict %s at %s (expected congestion at %s); verdict %s, kind %s" % (
              "ok" if ok else "not ok", label, c.get("class"), c.get("where"), arg, v["class"],
              v["kind"]))
        continue
    if what == "queue":
        # what the queue added to the client's median, from the clean run's
        clean = json.load(open(sys.argv[2].replace(label.split()[0], arg)))
        added = lg["latency_us"]["p50"] - clean["latency_us"]["p50"]
        w = tt["median"]["split"]["waiting_us"]["congestion"]
        ok = added > 0 and 0.5 * added <= w <= 2 * added
        print("%s - %s: median congestion waiting %.1f ms vs the %.1f ms the queue added to "
              "the client's p50 (x%.2f, within 0.5-2)" % ("ok" if ok else "not ok", label,
              w / 1e3, added / 1e3, w / added if added > 0 else 0))
        continue
    if what == "count":
        a, e = tt["requests"], lg["requests"]
        ok = abs(a - e) <= 0.01 * e
        print("%s - %s: requests %d vs the client's %d" % ("ok" if ok else "not ok", label, a, e))
    elif what == "verdict":
        v, want, why = tt["verdict"], [arg], ""
        if arg == "none":
            # the client's own figures decide whether there is a tail to explain
            rows = [l.split() for l in open(sys.argv[2].replace(".json", ".samples"))
                    if not l.startswith("#")]
            lat = sorted(float(r[4]) for r in rows)
            med, tail = lat[len(lat) // 2], lat[len(lat) * 99 // 100:]
            tmean = sum(tail) / len(tail)
            if tmean >= 1.5 * med and tmean - med >= 2000:
                want = ["compute"] + (["unattributed"] if "client" in label else [])
                why = "; the client's own slowest 1 %% average %.1f ms vs its median %.1f ms" % (
                    tmean / 1e3, med / 1e3)
        ok = v["class"] in want
        print("%s - %s: verdict %s (expected %s%s): %s" % ("ok" if ok else "not ok", label,
              v["class"], " or ".join(want), why, v["summary"]))
    elif what.startswith("itl"):
        p = "p" + what[-2:]
        a, e, c, tol = tt["inter_token_us"][p], srv["gap_us"][p], lg["gap_us"][p], float(arg)
        ok = abs(a - e) <= tol * e
        print("%s - %s: inter_token_us %s %.0f us vs the server's token writes %.0f us "
              "(%+.1f%%, within %d%%); the client's reader saw %.0f us" % (
              "ok" if ok else "not ok", label, p, a, e, 100 * (a - e) / e, 100 * tol, c))
    else:
        key, p = what[:-2], "p" + what[-2:]
        tk, lk = pairs[key]
        a, e, tol = tt[tk][p], lg[lk][p], float(arg)
        ok = abs(a - e) <= tol * e
        print("%s - %s: %s %s %.0f us vs the client's %.0f us (%+.1f%%, within %d%%)" % (
              "ok" if ok else "not ok", label, tk, p, a, e, 100 * (a - e) / e, 100 * tol))
EOF
	# a JSON missing or unreadable fails, rather than leaving its checks out
	[ $? -eq 0 ] || echo "not ok - $name $side: the judge failed: $(tail -1 "$TMP/judge.err")" \
		>>"$TMP/judge.out"
	while IFS= read -r line; do
		case $line in
		"ok - "*) tt_ok "${line#ok - }";;
		"not ok - "*) tt_fail "${line#not ok - }";;
		*) echo "# $line";;
		esac
	done <"$TMP/judge.out"
}

for proto in sse h2; do
	streams=()
	[ $proto = h2 ] && streams=(--streams 4 --ping-ms 20)
	run $proto-clean $proto --conns 4 --concurrency 4 --duration 5 "${streams[@]}" || continue
	for side in server client; do
		judge $proto-clean $side count verdict=none ttft50:0.10 ttft99:0.10 itl50:0.10 \
			itl99:0.10 lat50:0.10 lat99:0.10
	done
	run $proto-prefill $proto --conns 4 --concurrency 4 --duration 6 "${streams[@]}" \
		-- --slow-share 3 --slow-extra-us 80000 || continue
	judge $proto-prefill server count verdict=compute ttft99:0.15
	run $proto-decode $proto --conns 4 --concurrency 4 --duration 6 "${streams[@]}" \
		-- --slow-decode-share 3 --slow-decode-factor 15 || continue
	judge $proto-decode server count verdict=compute itl99:0.10
	"$TESTBED" congest --link srv --rate 20mbit --buffer 64kb --bulk loadgen --bulk-conns 4 \
		--duration 60 >/dev/null 2>&1 || { tt_fail "$proto: testbed congest failed"; continue; }
	sleep 2
	run $proto-queue $proto --conns 4 --concurrency 4 --duration 6 "${streams[@]}" || continue
	"$TESTBED" clear >/dev/null 2>&1
	judge $proto-queue server count standing="dev $TB_SRV_DEV qdisc" queue=$proto-clean
done

# a real gRPC client: every call it made is one request (stream), none of its control
# frames (SETTINGS, WINDOW_UPDATE, PING) is one
if /usr/bin/python3 -c 'import grpc' 2>/dev/null; then
	PORT=$((PORT + 1))
	ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port $PORT --proto h2 \
		--prefill-us const:2000 --decode-us const:500 --duration 60 >"$TMP/grpc.srv.log" 2>&1 &
	sp=$!
	PIDS+=("$sp")
	"$TAILTRACE" explain -j --port $PORT --role server -d 60 >"$TMP/grpc.json" \
		2>"$TMP/grpc.err" &
	ts=$!
	PIDS+=("$ts")
	if tt_wait_attached $ts; then
		ip netns exec "$TB_NS_CLI" /usr/bin/python3 "$TT_ROOT/tools/loadgen/grpc_client.py" \
			--target "$TB_SRV4:$PORT" --requests 40 --threads 4 --tokens 12 \
			>"$TMP/grpc.out" 2>&1
		sleep 0.5
		kill -INT $ts
		wait $ts
		calls=$(tt_json "$TMP/grpc.out" calls 2>/dev/null || echo 0)
		reqs=$(tt_json "$TMP/grpc.json" requests 2>/dev/null || echo -1)
		streams=$(tt_json "$TMP/grpc.json" framing.http2_streams 2>/dev/null || echo -1)
		tt_check "grpcio: requests $reqs ($streams HTTP/2 streams) vs the client's $calls calls" \
			[ "$calls" -gt 0 ] && [ "$reqs" = "$calls" ] && [ "$streams" = "$calls" ]
	else
		tt_fail "grpcio: tailtrace did not attach: $(head -3 "$TMP/grpc.err")"
	fi
else
	tt_skip "grpcio client" "python3-grpcio not installed (tools/deps.sh installs it)"
fi
