#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Token streams inside TLS, judged against the client's own timings: HTTP/1.1 SSE over
# TLS between two namespaces (tools/loadgen/tls_sse.py: Python's ssl module on Debian's
# OpenSSL libssl.so.3, a self-signed certificate made here), traced at both ends at once
# (`explain --role server` and `--role client`):
#   without --tls-uprobes: the reports say the framing is hidden (framing.tls counts the
#          requests, tls_figures_are_exchanges), no HTTP/1 request is claimed
#   with --tls-uprobes (the server's side with -p: the libssl the server maps; the
#          client's side without: the host's, in every process), the plaintext framing is
#          seen, so the requests are HTTP/1 streams:
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
	for _ in $(seq 50); do
		grep -q listening "$TMP/$name.srv.log" 2>/dev/null && break
		sleep 0.1
	done
	# with --tls-uprobes the server's side probes the libssl the server maps (-p), the
	# client's side the host's, in every process
	"$TAILTRACE" explain -j --port $PORT --role server -d 60 "$@" ${1:+-p $sp} \
		>"$TMP/$name.server.json" 2>"$TMP/$name.server.err" &
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

# gRPC server streaming over HTTP/2 inside TLS: nginx (Debian's, OpenSSL) terminates TLS
# and passes each call to loadgen's h2c gRPC server; a real gRPC client (python3-grpcio,
# over TLS) times its calls. Traced at nginx's TLS port (server role) with --tls-uprobes:
# every call one HTTP/2 stream, TTFT p50 within 15 %, latency p50 within 10 % of the
# client's (their p99s are printed: the tail is the client's own threads).
# (grpcio's BoringSSL is linked into it: its client side is not seen through uprobes.)
if ! command -v nginx >/dev/null || ! /usr/bin/python3 -c 'import grpc' 2>/dev/null ||
	[ ! -x "$LOADGEN" ]; then
	tt_skip "gRPC over TLS" "nginx, python3-grpcio or loadgen missing (tools/deps.sh)"
	exit 0
fi
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tt-test \
	-addext subjectAltName=DNS:tt-test -keyout "$TMP/gkey.pem" -out "$TMP/gcert.pem" \
	>/dev/null 2>&1 || { tt_fail "openssl req (SAN) failed"; exit 1; }
PORT=$((PORT + 1))
UP=$((PORT + 100))
mkdir -p "$TMP/nginx"
cat >"$TMP/nginx.conf" <<NGX
worker_processes 1;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $TMP/nginx;
	upstream lg { server 127.0.0.1:$UP; keepalive 8; }
	server {
		listen [::]:$PORT ssl http2;
		listen $PORT ssl http2;
		ssl_certificate $TMP/gcert.pem;
		ssl_certificate_key $TMP/gkey.pem;
		location / { grpc_pass grpc://lg; }
	}
}
NGX
ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen 127.0.0.1 --port $UP --proto h2 \
	--prefill-us const:10000 --decode-us const:1000 --duration 60 >"$TMP/grpc.srv.log" 2>&1 &
PIDS+=("$!")
ip netns exec "$TB_NS_SRV" nginx -c "$TMP/nginx.conf" -g 'daemon off;' >"$TMP/nginx.log" 2>&1 &
PIDS+=("$!")
"$TAILTRACE" explain -j --port $PORT --role server -d 60 --tls-uprobes >"$TMP/grpc.json" \
	2>"$TMP/grpc.err" &
ts=$!
PIDS+=("$ts")
if tt_wait_attached $ts; then
	ip netns exec "$TB_NS_CLI" /usr/bin/python3 "$TT_ROOT/tools/loadgen/grpc_client.py" \
		--target "$TB_SRV4:$PORT" --tls-ca "$TMP/gcert.pem" --requests 40 --threads 4 \
		--tokens 24 >"$TMP/grpc.out" 2>&1
	sleep 0.5
	kill -INT $ts
	wait $ts
	python3 - "$TMP/grpc.json" "$TMP/grpc.out" >"$TMP/judge.out" <<'PY'
import json, sys
tt, cl = json.load(open(sys.argv[1])), json.loads(open(sys.argv[2]).read().splitlines()[-1])
fr = tt.get("framing", {})
ok = cl["calls"] > 0 and not cl["errors"] and tt["requests"] == cl["calls"] and \
    fr.get("http2_streams") == cl["calls"] and fr.get("tls") == 0
print("%s - grpc over TLS: requests %d (framing %s) vs the client's %d calls" % (
      "ok" if ok else "not ok", tt["requests"], json.dumps(fr), cl["calls"]))
# the tail of 160 calls is the client's own (four Python threads on two CPUs wait for
# one another after the data arrived): printed, not judged, from the server's side
for k, tk, p, tol in (("ttft", "ttft_us", "p50", 0.15), ("ttft", "ttft_us", "p99", None),
                      ("latency", "latency_us", "p50", 0.10),
                      ("latency", "latency_us", "p99", None)):
    a, e = tt[tk][p], cl["%s_%s_us" % (k, p)]
    ok = e and tol is not None and abs(a - e) <= tol * e
    print("%sgrpc over TLS: %s %s %.0f us vs the client's %.0f us (%s)" % (
          "" if tol is None else "ok - " if ok else "not ok - ", tk, p, a, e or 0,
          "not judged" if tol is None else "within %d%%" % (100 * tol)))
PY
	while IFS= read -r line; do
		case $line in
		"ok - "*) tt_ok "${line#ok - }";;
		"not ok - "*) tt_fail "${line#not ok - }";;
		*) echo "# $line";;
		esac
	done <"$TMP/judge.out"
else
	tt_fail "grpc over TLS: tailtrace did not attach: $(head -3 "$TMP/grpc.err")"
fi
