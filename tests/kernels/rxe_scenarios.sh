#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the soft-RoCE guest (tools/kernels/run-in-guest --rxe): `tailtrace rdma -j`
# over perftest's ib_write_lat on a real kernel RDMA stack (rdma_rxe), from before the
# server starts until the client has ended. Prints perftest's own output (its latency table:
# t_max, 99 % and 99.9 % percentiles) and tailtrace's JSON between markers;
# tests/kernels/rxe_judge.py compares them on the host.
#
#   rxe_scenarios.sh [-n ITERS] SCENARIO...
#     pair-default  two rxe devices over a veth pair between two network namespaces
#                   (rxea on va 198.18.0.1/30 in tt-a, rxeb on vb .2/30 in tt-b), client
#                   in tt-a, server in tt-b; tailtrace rdma -j (sampled poll side)
#     pair-full     the same with --rdma-full
#     pair-both     the same with a sampled and a --rdma-full tracer at once (the same WRs)
#     pair-loss     the same as pair-default with netem loss 1% on va (client egress)
#     loop-default  one rxe device on the guest's virtio NIC (eth0, 10.0.2.15 from qemu's
#                   user network), client and server on it (rxe delivers to itself)
#     loop-full     the same with --rdma-full
# Sections: NAME.cmd (the commands), NAME.cli, NAME.srv (perftest's output), NAME.tt (tailtrace's JSON lines),
# NAME.err (tailtrace's stderr; NAME.ttfull and NAME.errfull: pair-both's --rdma-full), NAME.setup (what the topology looked like), NAME.c0 and
# NAME.c1 (every device's hw_counters from sysfs before the server starts and after both
# ended).
set -u
T=$TT_BUILD/tailtrace
W=/tmp/tt-rxe
N=5000
mkdir -p "$W"

emit() { # name file
	echo "### BEGIN $1"
	cat "$2" 2>/dev/null
	echo
	echo "### END $1"
}

note() { echo "# $(date +%T) $*"; }

# gid_index DEV: the first RoCE v2 GID of port 1 that maps an IPv4 address (the address
# is added asynchronously to the GID table: up to 10 s)
gid_index() {
	local d=/sys/class/infiniband/$1/ports/1 i g
	for _ in $(seq 100); do
		for i in $(seq 0 15); do
			g=$(cat "$d/gids/$i" 2>/dev/null) || continue
			case $g in
			0000:0000:0000:0000:0000:ffff:*) ;;
			*) continue ;;
			esac
			[ "$(cat "$d/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] && echo "$i" && return 0
		done
		sleep 0.1
	done
	return 1
}

pair_up=0
pair() {
	[ "$pair_up" -eq 1 ] && return 0
	ip netns add tt-a && ip netns add tt-b || return 1
	ip link add va type veth peer name vb || return 1
	ip link set va netns tt-a && ip link set vb netns tt-b || return 1
	ip -n tt-a addr add 198.18.0.1/30 dev va
	ip -n tt-b addr add 198.18.0.2/30 dev vb
	for ns in tt-a tt-b; do ip -n $ns link set lo up; done
	ip -n tt-a link set va up && ip -n tt-b link set vb up || return 1
	ip netns exec tt-a rdma link add rxea type rxe netdev va || return 1
	ip netns exec tt-b rdma link add rxeb type rxe netdev vb || return 1
	pair_up=1
}

loop_up=0
loop() {
	[ "$loop_up" -eq 1 ] && return 0
	ip link set eth0 up || return 1
	ip addr add 10.0.2.15/24 dev eth0 || return 1
	rdma link add rxe0 type rxe netdev eth0 || return 1
	loop_up=1
}

# the tracer's "watching ... for verbs contexts" line: its control hooks are attached
watching() { # pid errfile
	for _ in $(seq 1800); do
		grep -q 'watching' "$2" 2>/dev/null && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# run NAME TT_ARGS CLI_NS SRV_NS CLI_DEV SRV_DEV SERVER_ADDR
run() {
	local name=$1 tt_args=$2 cns=$3 sns=$4 cdev=$5 sdev=$6 addr=$7 cx sx ttpid spid crc src
	if ! cx=$(gid_index "$cdev") || ! sx=$(gid_index "$sdev"); then
		note "$name: no RoCE v2 IPv4 GID on $cdev or $sdev"
		for d in "$cdev" "$sdev"; do
			grep -H . /sys/class/infiniband/"$d"/ports/1/gids/* 2>/dev/null | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$'
		done
		return 1
	fi
	{
		rdma link show
		echo "gid index: client $cdev $cx, server $sdev $sx"
		for ns in $cns $sns; do ip netns exec "$ns" tc qdisc show 2>/dev/null | sed "s/^/$ns: /"; done
	} >"$W/$name.setup" 2>&1
	# "both": a sampled and a --rdma-full tracer at once, on the same WRs (.tt and .ttfull)
	local specs=("tt:$tt_args") sp out ttpids=() t0=$SECONDS
	[ "$tt_args" = both ] && specs=("tt:" "ttfull:--rdma-full")
	for sp in "${specs[@]}"; do
		out=${sp%%:*}
		# shellcheck disable=SC2086 # the options are words
		"$T" rdma ${sp#*:} -j >"$W/$name.$out" 2>"$W/$name.${out/tt/err}" &
		ttpid=$!
		ttpids+=("$ttpid")
		watching $ttpid "$W/$name.${out/tt/err}" || {
			note "$name: tailtrace never watched"
			emit "$name.${out/tt/err}" "$W/$name.${out/tt/err}"
			kill "${ttpids[@]}" 2>/dev/null
			return 1
		}
	done
	note "$name: tailtrace watching after $((SECONDS - t0)) s"
	counters >"$W/$name.c0"
	{
		echo "tailtrace rdma $tt_args -j"
		echo "server: ib_write_lat -d $sdev -x $sx -n $N -F"
		echo "client: ib_write_lat -d $cdev -x $cx -n $N -F $addr"
	} >"$W/$name.cmd"
	ns_exec "$sns" timeout 600 ib_write_lat -d "$sdev" -x "$sx" -n "$N" -F >"$W/$name.srv" 2>&1 &
	spid=$!
	# the server's TCP port for the exchange of QP numbers and GIDs
	for _ in $(seq 300); do
		ns_exec "$sns" ss -Hltn 'sport = :18515' 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	ns_exec "$cns" timeout 600 ib_write_lat -d "$cdev" -x "$cx" -n "$N" -F "$addr" >"$W/$name.cli" 2>&1
	crc=$?
	wait $spid
	src=$?
	note "$name: perftest client rc $crc, server rc $src, $((SECONDS - t0)) s"
	counters >"$W/$name.c1"
	# the total comes on SIGINT; the tracer reads the last counters and drains its maps
	sleep 1
	for ttpid in "${ttpids[@]}"; do
		kill -INT "$ttpid"
		for _ in $(seq 600); do
			kill -0 "$ttpid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$ttpid" 2>/dev/null
		wait "$ttpid"
		note "$name: tailtrace rc $?"
	done
	for s in cmd setup cli srv c0 c1 tt err ttfull errfull; do
		if [ -e "$W/$name.$s" ]; then emit "$name.$s" "$W/$name.$s"; fi
	done
}

# counters: every RDMA device's hw_counters as DEV NAME VALUE lines (the ground truth of
# the counters tailtrace reads)
counters() {
	local f d
	for f in /sys/class/infiniband/*/ports/1/hw_counters/*; do
		[ -f "$f" ] || continue
		d=${f#/sys/class/infiniband/}
		echo "${d%%/*} ${f##*/} $(cat "$f")"
	done
}

ns_exec() { # NS|- CMD...
	local ns=$1
	shift
	if [ "$ns" = - ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

if [ "${1:-}" = -n ]; then
	N=$2
	shift 2
fi
note "kernel $(uname -r), perftest $(ib_write_lat --version 2>&1 | head -1)"
# Debian's kernels refuse every perf_event_open without CAP_SYS_ADMIN at
# perf_event_paranoid 3, their default, and tailtrace rdma attaches the data path's uprobes
# after dropping CAP_SYS_ADMIN: they would all fail (EACCES). 2 is the upstream default.
p=$(cat /proc/sys/kernel/perf_event_paranoid)
if [ "$p" -gt 2 ]; then
	echo 2 >/proc/sys/kernel/perf_event_paranoid
	note "kernel.perf_event_paranoid $p -> $(cat /proc/sys/kernel/perf_event_paranoid)"
fi
rc=0
for sc in "$@"; do
	case $sc in
	pair-default | pair-full | pair-both | pair-loss)
		pair || {
			note "$sc: the veth pair with rxe on each end could not be set up"
			rc=1
			continue
		}
		tc -n tt-a qdisc del dev va root 2>/dev/null
		[ "$sc" = pair-loss ] && tc -n tt-a qdisc add dev va root netem loss 1%
		args=""
		[ "$sc" = pair-full ] && args=--rdma-full
		[ "$sc" = pair-both ] && args=both
		run "$sc" "$args" tt-a tt-b rxea rxeb 198.18.0.2 || rc=1
		tc -n tt-a qdisc del dev va root 2>/dev/null
		;;
	loop-default | loop-full)
		loop || {
			note "$sc: rxe0 on eth0 could not be set up"
			rc=1
			continue
		}
		args=""
		[ "$sc" = loop-full ] && args=--rdma-full
		run "$sc" "$args" - - rxe0 rxe0 10.0.2.15 || rc=1
		;;
	*)
		note "unknown scenario $sc"
		rc=1
		;;
	esac
done
exit $rc
