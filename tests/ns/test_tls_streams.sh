#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Token streams inside TLS, judged against the client's own timings: HTTP/1.1 SSE over
# TLS between two namespaces (tools/loadgen/tls_sse.py: Python's ssl module on Debian's
# OpenSSL libssl.so.3, a self-signed certificate made here), traced at both ends at once
# (`explain --role server` and `--role client`):
#   without --tls-uprobes: every output says the framing is hidden (framing.tls counts the
#          requests, tls_figures_are_exchanges), no HTTP/1 request is claimed
#   with --tls-uprobes: the plaintext framing is seen, so the requests are HTTP/1 streams:
#          requests within 1 % of the client's, TTFT p50/p99 within 10/15 %, inter-token
#          p50/p99 within 25 %, latency p50/p99 within 10 %, and none said hidden
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root
tt_testbed_lock
[ -x "$TAILTRACE" ] || { tt_fail "tailtrace not built ($TAILTRACE)"; exit 1; }
for t in openssl /usr/bin/python3; do
	command -v $t >/dev/null || { tt_fail "$t not installed (tools/deps.sh)"; exit 1; }
done
if [ ! -e /usr/lib/x86_64-linux-gnu/libssl.so.3 ] && [ -z "${TAILTRACE_LIBSSL:-}" ]; then
	tt_skip "TLS streams" "no /usr/lib/x86_64-linux-gnu/libssl.so.3 (set TAILTRACE_LIBSSL)"
	exit 0
fi

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
SSE="$TT_ROOT/tools/loadgen/tls_sse.py"
PORT=7420

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tt-test -keyout "$TMP/key.pem" \
	-out "$TMP/cert.pem" >/dev/null 2>&1 || { tt_fail "openssl req failed"; exit 1; }

# run NAME [TAILTRACE-ARGS...]: a server, explain at both ends, a 5 s client; the reports
# in $TMP/NAME.{server,client}.json, the client's own in $TMP/NAME.lg.json
run() {
	local name=$1 ts tc sp
	shift
	PORT=$((PORT + 1))
	ip netns exec "$TB_NS_SRV" /usr/bin/python3 "$SSE" server --listen :: --port $PORT \
		--cert "$TMP/cert.pem" --key "$TMP/key.pem" --prefill-us 10000 --decode-us 1000 \
		--tokens 24 >"$TMP/$name.srv.log" 2>&1 &
	sp=$!
	PIDS+=("$sp")
	"$TAILTRACE" explain -j --port $PORT --role server -d 60 "$@" >"$TMP/$name.server.json" \
		2>"$TMP/$name.server.err" &
	ts=$!
	"$TAILTRACE" explain -j --port $PORT --role client -d 60 "$@" >"$TMP/$name.client.json" \
		2>"$TMP/$name.client.err" &
	tc=$!
	PIDS+=("$ts" "$tc")
	if ! tt_wait_attached $ts || ! tt_wait_attached $tc; then
		tt_fail "$name: tailtrace did not attach: $(cat "$TMP/$name.server.err" \
			"$TMP/$name.client.err" | head -3)"
		return 1
	fi
	ip netns exec "$TB_NS_CLI" /usr/bin/python3 "$SSE" client --connect "$TB_SRV4" \
		--port $PORT --ca "$TMP/cert.pem" --conns 4 --duration 5 --json "$TMP/$name.lg.json" \
		--samples "$TMP/$name.lg.samples" >"$TMP/$name.cli.log" 2>&1 ||
		{ tt_fail "$name: the client failed: $(tail -2 "$TMP/$name.cli.log")"; }
	sleep 0.5
	kill -INT $ts $tc 2>/dev/null
	wait $ts $tc
	kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	return 0
}

# judge NAME SIDE CHECKS...: "hidden" (the outputs say TLS hides the framing), "framed"
# (none said hidden, all HTTP/1 streams), "count" (within 1 %), or KEY:TOL with KEY one
# of ttft50 ttft99 itl50 itl99 lat50 lat99 (tailtrace's percentile vs the client's)
judge() {
	local name=$1 side=$2
	shift 2
	python3 - "$TMP/$name.$side.json" "$TMP/$name.lg.json" "$name $side" "$@" \
		>"$TMP/judge.out" <<'EOF'
import json, sys
tt, lg, label = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
pairs = {"ttft": ("ttft_us", "ttft_us"), "itl": ("inter_token_us", "gap_us"),
         "lat": ("latency_us", "latency_us")}
fr = tt.get("framing", {})
for check in sys.argv[4:]:
    what, _, arg = check.partition(":")
    if what == "hidden":
        ok = fr.get("tls", 0) > 0 and fr.get("tls_figures_are_exchanges") is True and \
            fr.get("http1", 0) == 0
        print("%s - %s: framing %s (expected TLS requests said to be exchanges)" % (
              "ok" if ok else "not ok", label, json.dumps(fr)))
    elif what == "framed":
        ok = fr.get("tls", 1) == 0 and not fr.get("tls_figures_are_exchanges") and \
            fr.get("http1", 0) == tt["requests"] and fr.get("streamed", 0) == tt["requests"]
        print("%s - %s: framing %s (expected every request an HTTP/1 stream)" % (
              "ok" if ok else "not ok", label, json.dumps(fr)))
    elif what == "count":
        a, e = tt["requests"], lg["requests"]
        ok = abs(a - e) <= 0.01 * e
        print("%s - %s: requests %d vs the client's %d" % ("ok" if ok else "not ok", label, a, e))
    else:
        key, p = what[:-2], "p" + what[-2:]
        tk, lk = pairs[key]
        a, e, tol = tt[tk][p], lg[lk][p], float(arg)
        ok = abs(a - e) <= tol * e
        print("%s - %s: %s %s %.0f us vs the client's %.0f us (%+.1f%%, within %d%%)" % (
              "ok" if ok else "not ok", label, tk, p, a, e, 100 * (a - e) / e, 100 * tol))
EOF
	while IFS= read -r line; do
		case $line in
		"ok - "*) tt_ok "${line#ok - }";;
		"not ok - "*) tt_fail "${line#not ok - }";;
		*) echo "# $line";;
		esac
	done <"$TMP/judge.out"
}

if run hidden; then
	for side in server client; do
		judge hidden $side hidden
	done
fi
if run uprobes --tls-uprobes; then
	for side in server client; do
		judge uprobes $side framed count ttft50:0.10 ttft99:0.15 itl50:0.25 itl99:0.25 \
			lat50:0.10 lat99:0.10
	done
fi
