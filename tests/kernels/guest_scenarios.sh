#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside a qemu guest on an older kernel (tools/kernels/run-in-guest): tailtrace
# against traffic whose clients time themselves, between two network namespaces joined by
# a veth pair (198.18.0.1/30 and .2/30). Prints each run's outputs between markers;
# tests/kernels/judge.py compares them on the host. TAILTRACE_AVOID_FEEDS passes through
# (kprobe feeds where fentry works).
#
#   guest_scenarios.sh SCENARIO...
#     probe      tailtrace probe -j
#     clean      loadgen unary requests, explain --role client (count, p50/p99, verdict)
#     sockperf   sockperf ping-pong, explain --role client (count, p50/p99)
#     stream     loadgen streamed responses, explain --role client (count, TTFT)
#     commands   hist and record (then report) at once over loadgen requests (send count,
#                request count); rdma loads
#     cpuhog     bursts of CPU hogs on the server's CPU, explain (verdict compute)
#     congestion a 20 Mbit/s tbf on the server's egress with bulk bursts (verdict congestion)
set -u
T=$TT_BUILD/tailtrace
LG=$TT_BUILD/loadgen
W=/tmp/tt-kernel
CLI=tt-a SRV=tt-b SRV4=198.18.0.2 PORT=7000 SP_PORT=11111 BULK_PORT=7999
mkdir -p "$W"

emit() { # name file
	echo "### BEGIN $1"
	cat "$2" 2>/dev/null
	echo
	echo "### END $1"
}

note() { echo "# $(date +%T) $*"; }

net_up() {
	ip netns add $CLI && ip netns add $SRV || return 1
	ip link add va type veth peer name vb || return 1
	ip link set va netns $CLI && ip link set vb netns $SRV
	ip -n $CLI addr add 198.18.0.1/30 dev va
	ip -n $SRV addr add $SRV4/30 dev vb
	for ns in $CLI $SRV; do ip -n $ns link set lo up; done
	ip -n $CLI link set va up && ip -n $SRV link set vb up
}

# the tracer holds bpf_link fds and their number stopped changing: attached
attached() { # pid
	local n last=-1 stable=0
	for _ in $(seq 1 1200); do
		kill -0 "$1" 2>/dev/null || return 1
		n=$(ls -l /proc/"$1"/fd 2>/dev/null | grep -c bpf_link)
		if [ "$n" -gt 0 ] && [ "$n" -eq "$last" ]; then
			stable=$((stable + 1))
			[ $stable -ge 5 ] && return 0
		else
			stable=0
		fi
		last=$n
		sleep 0.2
	done
	return 1
}

TPID=""
trace_start() { # out explain-options...
	local out=$1
	shift
	"$T" explain -j -d 900 "$@" >"$out" 2>"$out.err" &
	TPID=$!
	local t0=$SECONDS
	attached $TPID || { note "tailtrace did not attach"; cat "$out.err"; return 1; }
	note "attached in $((SECONDS - t0)) s"
}

trace_stop() {
	sleep 1 # the last exchanges reach the ring
	kill -INT $TPID 2>/dev/null
	wait $TPID
	echo "# tailtrace exit $?"
}

BG=()
bg() { "$@" & BG+=($!); }
bg_stop() {
	[ ${#BG[@]} -gt 0 ] && kill "${BG[@]}" 2>/dev/null
	[ ${#BG[@]} -gt 0 ] && wait "${BG[@]}" 2>/dev/null
	BG=()
}

server() { # loadgen server options
	bg ip netns exec $SRV "$LG" server --listen $SRV4 --port $PORT --duration 900 "$@"
	sleep 0.5
}

client() { # name loadgen client options
	local name=$1
	shift
	ip netns exec $CLI "$LG" client --connect $SRV4 --port $PORT --json "$W/$name.lg.json" \
		--samples "$W/$name.samples" "$@" >/dev/null 2>"$W/$name.lg.err"
}

sc_probe() {
	"$T" probe -j >"$W/probe.json" 2>"$W/probe.err"
	emit probe "$W/probe.json"
	emit probe.err "$W/probe.err"
}

sc_clean() {
	server --mode unary --compute const:500 --compute-kind block
	trace_start "$W/clean.json" --port $PORT --role client || return
	client clean --mode unary --conns 2 --concurrency 2 --requests 1500 --req-bytes 512 \
		--resp-bytes 8192
	trace_stop
	bg_stop
	emit clean.explain "$W/clean.json"
	emit clean.explain.err "$W/clean.json.err"
	emit clean.loadgen "$W/clean.lg.json"
	emit clean.samples "$W/clean.samples"
}

sc_commands() {
	local hp rp
	server --mode unary --compute const:500 --compute-kind block
	rm -rf "$W/rec"
	"$T" hist -j --port $PORT -d 900 >"$W/hist.json" 2>"$W/hist.err" &
	hp=$!
	"$T" record -o "$W/rec" --port $PORT -d 900 >"$W/record.out" 2>&1 &
	rp=$!
	attached $hp && attached $rp || note "hist or record did not attach"
	client commands --mode unary --conns 2 --concurrency 2 --requests 1000 --req-bytes 512 \
		--resp-bytes 8192
	sleep 1
	kill -INT $hp $rp 2>/dev/null
	wait $hp
	echo "# hist exit $?"
	wait $rp
	echo "# record exit $?"
	bg_stop
	"$T" report "$W/rec" -j >"$W/report.json" 2>"$W/report.err"
	echo "# report exit $?"
	# the RDMA object loads (no verbs process runs here: nothing to time)
	"$T" rdma -d 1 -j >"$W/rdma.json" 2>"$W/rdma.err"
	echo "# rdma exit $?"
	emit commands.hist "$W/hist.json"
	emit commands.hist.err "$W/hist.err"
	emit commands.report "$W/report.json"
	emit commands.report.err "$W/report.err"
	emit commands.loadgen "$W/commands.lg.json"
	emit commands.rdma "$W/rdma.json"
	emit commands.rdma.err "$W/rdma.err"
}

sc_stream() {
	server --mode stream --prefill-us const:2000 --decode-us const:500
	trace_start "$W/stream.json" --port $PORT --role client || return
	client stream --mode stream --conns 2 --concurrency 2 --requests 300 --tokens 16 \
		--token-bytes 1024 --req-bytes 512
	trace_stop
	bg_stop
	emit stream.explain "$W/stream.json"
	emit stream.loadgen "$W/stream.lg.json"
	emit stream.samples "$W/stream.samples"
}

sc_sockperf() {
	bg ip netns exec $SRV sockperf server --tcp -i $SRV4 -p $SP_PORT
	sleep 0.5
	trace_start "$W/sockperf.json" --port $SP_PORT --role client || return
	ip netns exec $CLI sockperf ping-pong --tcp -i $SRV4 -p $SP_PORT -t 6 --mps 400 -m 64 \
		--full-log "$W/sockperf.csv" >"$W/sockperf.out" 2>&1
	trace_stop
	bg_stop
	emit sockperf.explain "$W/sockperf.json"
	emit sockperf.out "$W/sockperf.out"
	emit sockperf.log "$W/sockperf.csv"
}

# the server pinned to CPU 1, bursts of two hogs there (0.3 s of every 1.3 s), the
# client on CPU 0
sc_cpuhog() {
	bg ip netns exec $SRV taskset -c 1 "$LG" server --listen $SRV4 --port $PORT \
		--duration 900 --mode unary --compute const:500 --compute-kind busy
	sleep 0.5
	trace_start "$W/cpuhog.json" --port $PORT || return
	(
		while :; do
			sleep 1
			for i in 1 2; do
				ip netns exec $SRV taskset -c 1 "$LG" hog --duration 0.3 \
					--name tt-hog >/dev/null 2>&1 &
			done
			wait
		done
	) &
	local pulse=$!
	client cpuhog --mode unary --conns 2 --concurrency 2 --requests 1500 --req-bytes 512 \
		--resp-bytes 8192 --duration 60
	kill $pulse
	wait $pulse 2>/dev/null
	trace_stop
	bg_stop
	emit cpuhog.explain "$W/cpuhog.json"
	emit cpuhog.loadgen "$W/cpuhog.lg.json"
}

# 20 Mbit/s with a 64 KiB buffer on the server's egress; a bulk neighbour in the server's
# namespace pushes 0.25 s bursts through it every ~1.2 s
sc_congestion() {
	ip netns exec $SRV tc qdisc replace dev vb root tbf rate 20mbit burst 16kb limit 65536
	server --mode unary --compute const:500 --compute-kind block
	bg ip netns exec $SRV "$LG" server --listen $SRV4 --port $BULK_PORT --mode bulk \
		--duration 900 --name tt-bulk-tx
	trace_start "$W/congestion.json" --port $PORT || return
	(
		while :; do
			sleep 1
			ip netns exec $CLI "$LG" client --connect $SRV4 --port $BULK_PORT --mode bulk \
				--conns 4 --duration 0.25 --name tt-bulk-rx >/dev/null 2>&1
		done
	) &
	local pulse=$!
	client congestion --mode unary --conns 2 --concurrency 2 --requests 1500 \
		--req-bytes 512 --resp-bytes 8192 --duration 60
	kill $pulse
	wait $pulse 2>/dev/null
	trace_stop
	bg_stop
	tc -s -n $SRV qdisc show dev vb >"$W/congestion.tc"
	ip netns exec $SRV tc qdisc del dev vb root
	emit congestion.explain "$W/congestion.json"
	emit congestion.loadgen "$W/congestion.lg.json"
	emit congestion.tc "$W/congestion.tc"
}

echo "### KERNEL $(uname -r)"
echo "### FEEDS ${TAILTRACE_AVOID_FEEDS:-default}"
mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing
net_up || { echo "### ERROR network namespaces"; exit 1; }
for s in "$@"; do
	note "scenario $s"
	t0=$SECONDS
	"sc_$s"
	note "scenario $s took $((SECONDS - t0)) s"
done
