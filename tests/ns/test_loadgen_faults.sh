#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The testbed's faults move the loadgen's own latency the way physics says:
#  - tbf/htb bottleneck + bulk neighbour: added p50 ~ the standing queue = backlog / rate,
#    bounded by buffer / rate;
#  - random loss: the tail grows by a retransmission timeout (>= the 200 ms minimum RTO);
#  - CPU hogs: busy compute takes the same CPU time but longer wall time (run-queue delay);
#  - slow reader: a response takes at least (bytes / read chunk) x read delay.
# IPv4 and IPv6. Figures are printed as "# ..." lines.
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root
tt_testbed_lock
[ -x "$LOADGEN" ] || { tt_fail "loadgen not built ($LOADGEN)"; exit 1; }
for t in nft tc; do
	command -v $t >/dev/null || { tt_skip "$(basename "$0")" "$t missing"; exit 0; }
done

TMP=$(mktemp -d)
SPIDS=()
cleanup() {
	local p
	for p in "${SPIDS[@]}"; do kill "$p" 2>/dev/null; done
	"$TESTBED" down >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
tt_testbed_up

srv() { # port args...
	local port=$1; shift
	ip netns exec tt-srv "$LOADGEN" server --listen :: --port "$port" --duration 200 "$@" \
		>"$TMP/srv-$port.log" 2>&1 &
	SPIDS+=("$!")
	sleep 0.2
}
cli() { ip netns exec tt-cli "$LOADGEN" client "$@" 2>>"$TMP/cli.log"; }
j() { tt_json "$@"; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# ---------------------------------------------------------------- bottleneck
# mean root-qdisc backlog (bytes) of ns/dev, sampled every 100 ms while a run goes on
backlog_sampler() { # ns dev outfile
	for _ in $(seq 1 100); do
		ip netns exec "$1" tc -s qdisc show dev "$2" | awk '/backlog/ {
			v = $2; m = 1
			if (v ~ /Mb$/) m = 1048576; else if (v ~ /Kb$/) m = 1024
			sub(/[KM]?b$/, "", v); print v * m; exit }'
		sleep 0.1
	done >"$3"
}

srv 7100 --compute const:100
congest_case() { # label link qdisc addr
	local label=$1 link=$2 qdisc=$3 addr=$4 ns dev
	if [ "$link" = srv ]; then ns=tt-srv dev=$TB_SRV_DEV; else ns=tt-rtr dev=$TB_RTR_CLI_DEV; fi
	cli --connect "$addr" --port 7100 --rate 200 --requests 600 --warmup 20 --conns 32 \
		--json "$TMP/base.json"
	"$TESTBED" congest --link "$link" --rate 20mbit --buffer 64kb --qdisc "$qdisc" \
		--duration 60 >/dev/null 2>&1
	sleep 2 # the bulk flows fill the buffer
	backlog_sampler "$ns" "$dev" "$TMP/backlog" &
	local bp=$!
	cli --connect "$addr" --port 7100 --rate 200 --requests 600 --warmup 20 --conns 32 \
		--json "$TMP/cong.json"
	kill "$bp" 2>/dev/null; wait "$bp" 2>/dev/null
	local drops
	drops=$(ip netns exec "$ns" tc -s qdisc show dev "$dev" | awk '/dropped/ {gsub(",", ""); print $7; exit}')
	"$TESTBED" clear >/dev/null 2>&1
	local b50 c50 added q bq
	b50=$(j "$TMP/base.json" latency_us.p50)
	c50=$(j "$TMP/cong.json" latency_us.p50)
	added=$(awk -v a="$c50" -v b="$b50" 'BEGIN { printf "%.0f", a - b }')
	q=$(awk 'BEGIN { printf "%.0f", 65536 * 8 / 20e6 * 1e6 }')
	bq=$(awk '{ s += $1; n++ } END { printf "%.0f", n ? s / n * 8 / 20e6 * 1e6 : -1 }' "$TMP/backlog")
	echo "# $label: $qdisc 20mbit/64kb on $link: base p50 ${b50} us, congested p50 ${c50} us," \
		"added ${added} us; buffer/R = ${q} us; mean backlog/R = ${bq} us; qdisc drops $drops;" \
		"congested p99 $(j "$TMP/cong.json" latency_us.p99) us"
	tt_check "$label: added p50 within [0.5, 1.1] x buffer/R" \
		awk -v a="$added" -v q="$q" 'BEGIN { exit !(a >= 0.5 * q && a <= 1.1 * q) }'
	tt_check "$label: added p50 within 35% (+2 ms) of the measured backlog/R" \
		awk -v a="$added" -v b="$bq" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 0.35 * b + 2000) }'
}
congest_case "IPv4 router bottleneck" rtr tbf "$TB_SRV4"
congest_case "IPv6 server bottleneck" srv tbf "$TB_SRV6"
congest_case "IPv6 router bottleneck (htb+bfifo)" rtr htb "$TB_SRV6"

# ---------------------------------------------------------------- loss
loss_case() { # label link addr
	local label=$1 link=$2 addr=$3 ns
	case $link in srv) ns=tt-srv;; rtr) ns=tt-rtr;; cli) ns=tt-cli;; esac
	cli --connect "$addr" --port 7100 --rate 500 --requests 2500 --warmup 20 --conns 16 \
		--json "$TMP/base.json"
	"$TESTBED" loss --link "$link" --percent 3 >/dev/null 2>&1
	cli --connect "$addr" --port 7100 --rate 500 --requests 2500 --warmup 20 --conns 16 \
		--json "$TMP/loss.json" --samples "$TMP/loss.txt"
	local drops
	drops=$(ip netns exec $ns nft list table inet tailtrace_testbed | awk '/counter packets/ {
		for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1) } END { print s + 0 }')
	"$TESTBED" clear >/dev/null 2>&1
	local b50 b99 l50 l99 slow
	b50=$(j "$TMP/base.json" latency_us.p50); b99=$(j "$TMP/base.json" latency_us.p99)
	l50=$(j "$TMP/loss.json" latency_us.p50); l99=$(j "$TMP/loss.json" latency_us.p99)
	slow=$(awk '!/^#/ && $5 > 100000 {n++} END {print n+0}' "$TMP/loss.txt")
	echo "# $label: 3% loss on $link: base p50 $b50 us p99 $b99 us; lossy p50 $l50 us p99 $l99 us" \
		"max $(j "$TMP/loss.json" latency_us.max) us; $slow of 2500 requests > 100 ms; nft dropped $drops packets"
	tt_check "$label: p99 grows by >= 150 ms (retransmission timeout), p50 by < 2 ms" \
		awk -v b50="$b50" -v b99="$b99" -v l50="$l50" -v l99="$l99" \
		'BEGIN { exit !(l99 >= b99 + 150000 && l50 <= b50 + 2000) }'
	tt_check "$label: every request slower than 100 ms is explained by a dropped packet ($slow <= $drops)" \
		[ "$slow" -ge 25 -a "$slow" -le "$drops" ]
}
loss_case "IPv4 loss at the server" srv "$TB_SRV4"
loss_case "IPv6 loss at the router" rtr "$TB_SRV6"

# ---------------------------------------------------------------- cpu
srv 7200 --compute const:4000 --compute-kind busy
cpu_run() { # addr out
	cli --connect "$1" --port 7200 --rate 60 --requests 240 --warmup 5 --conns 8 --json "$2"
}
cpu_run "$TB_SRV4" "$TMP/base.json"
"$TESTBED" cpu --duration 60 >/dev/null 2>&1
cpu_run "$TB_SRV4" "$TMP/hog.json"
"$TESTBED" clear >/dev/null 2>&1
bs=$(j "$TMP/base.json" server_us.p50); hs=$(j "$TMP/hog.json" server_us.p50)
bc=$(j "$TMP/base.json" server_cpu_us.p50); hc=$(j "$TMP/hog.json" server_cpu_us.p50)
echo "# IPv4 cpu: 4 ms busy compute, $((2 * $(nproc))) hogs on $(nproc) cpus: server p50 $bs -> $hs us," \
	"p99 $(j "$TMP/base.json" server_us.p99) -> $(j "$TMP/hog.json" server_us.p99) us; on-cpu p50 $bc -> $hc us;" \
	"client p50 $(j "$TMP/base.json" latency_us.p50) -> $(j "$TMP/hog.json" latency_us.p50) us"
tt_check "IPv4 cpu hogs: server time p50 grows >= 1.5x while on-CPU time stays 4 ms (+-10%)" \
	awk -v bs="$bs" -v hs="$hs" -v bc="$bc" -v hc="$hc" \
	'BEGIN { exit !(hs >= 1.5 * bs && bc >= 3600 && bc <= 4400 && hc >= 3600 && hc <= 4400) }'

# ---------------------------------------------------------------- slow reader
# the server's send buffer is capped (32 KiB asked, 64 KiB granted) so that the slow reader
# pushes back into the server's write; with an autotuned buffer the 256 KiB would just wait
# in the server's send queue and the server would not notice
srv 7300 --compute const:100 --sndbuf 32k
cli --connect "$TB_SRV6" --port 7300 --concurrency 1 --requests 40 --resp-bytes 256k \
	--json "$TMP/base.json"
"$TESTBED" slowread --read-delay-us 2000 --rcvbuf 16384 --read-chunk 4096 >/dev/null 2>&1
eval "$("$TESTBED" env)"
# shellcheck disable=SC2086 # TB_CLIENT_OPTS is a list of options
cli --connect "$TB_SRV6" --port 7300 --concurrency 1 --requests 15 --resp-bytes 256k \
	$TB_CLIENT_OPTS --json "$TMP/slow.json"
"$TESTBED" clear >/dev/null 2>&1
b50=$(j "$TMP/base.json" latency_us.p50); s50=$(j "$TMP/slow.json" latency_us.p50)
bs=$(j "$TMP/base.json" server_us.p50); ss=$(j "$TMP/slow.json" server_us.p50)
floor=$((262144 / 4096 * 2000))
echo "# IPv6 slowread ($TB_CLIENT_OPTS), 256 KiB responses: p50 $b50 -> $s50 us" \
	"(floor 64 reads x 2 ms = $floor us); server time p50 $bs -> $ss us"
tt_check "IPv6 slow reader: p50 >= 64 reads x 2 ms and <= 3x that" \
	awk -v s="$s50" -v f="$floor" 'BEGIN { exit !(s >= f && s <= 3 * f) }'
tt_check "IPv6 slow reader: the server's write blocks too (server time p50 grows by > 50 ms)" \
	awk -v b="$bs" -v s="$ss" 'BEGIN { exit !(s >= b + 50000) }'
