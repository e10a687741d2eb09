#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tailtrace's TCP stages against the kernel's own figures, in the testbed (issue 4):
#  - tx.qdisc behind a 20 Mbit/s tbf with a bulk neighbour = the kernel's own per-packet
#    figure, the SND - SCHED software timestamps of the same responses (tests/ns/tx_truth.py)
#    (p50/p90/p99 +-max(10 %, 10 us)); near zero through a 10 Gbit/s tbf that never queues. The veth default is noqueue, where the qdisc
#    tracepoints never fire (no samples at all), so the "no bottleneck" case installs a
#    large-rate tbf to have a qdisc whose sojourn can be measured;
#  - tcp.rtt p50 = the median srtt `ss -ti` shows for the same connections (+-10 %), IPv4
#    and IPv6, measured behind the bottleneck (the veth RTT alone is ~0.1 ms of scheduling
#    noise);
#  - retransmissions of the traced flows = the kernel's TcpRetransSegs delta (nstat, both
#    namespaces) within 1 per 1000, under 2 % nftables loss;
#  - qdisc_packets with --dev NETNS/IFNAME = tc's sent-packets of that root qdisc (+-1 %);
#  - rx.sockq grows for a slow reader and not for a normal one;
#  - --port, -p and --comm keep other flows out;
#  - IPv4 and IPv6 both get every stage, with at least one sample per response;
#  - requests on connections a full accept queue held back are all counted (explain's
#    requests = the client's completed exchanges, with listen overflows seen in nstat);
#  - tx.sendq and tx.ack p50/p90 = the kernel's own TX timestamps (SO_TIMESTAMPING SCHED,
#    SND and ACK, read by the sender from its error queue: tests/ns/tx_truth.py) (+-10 %);
#  - bad device, pid, cgroup, port: exit 2 with one line on stderr.
# The testbed is shared: the whole body holds /run/tailtrace-testbed.lock.
#  - --budget: under a load whose cost exceeds the budget, the cost of a budgeted instance
#    (its programs' run time + its CPU) stays within it, and its p99s (flows sampled,
#    counts scaled up) rank within 0.3 points of p99 in an unsampled instance's
#    distribution of the same traffic and the same 2 s intervals (--align).
# TCP_ONLY="qdisc loss slowread txtruth droptruth existing dupreq acceptq filters badinput idle budget" runs a subset, TCP_KEEP=1 keeps the
# temporary directory (debugging).
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib_tcp.sh"
tt_require_root
for b in "$TAILTRACE" "$LOADGEN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done
for t in tc ss nstat nft python3 flock timeout; do
	command -v $t >/dev/null || { tt_skip "$(basename "$0")" "$t missing"; exit 0; }
done

exec 9>/run/tailtrace-testbed.lock
flock -w 600 9 || { tt_fail "testbed lock /run/tailtrace-testbed.lock still held after 600 s"; exit 1; }

TMP=$(mktemp -d)
SPIDS=()
cleanup() {
	local p
	tcp_hist_kill_all
	for p in "${SPIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	"$TESTBED" down >/dev/null 2>&1
	if [ -n "${TCP_KEEP:-}" ]; then echo "# kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
tt_testbed_up

only() { [ -z "${TCP_ONLY:-}" ] || [[ " $TCP_ONLY " == *" $1 "* ]]; }
srv() { # port name args...
	local port=$1 name=$2; shift 2
	ip netns exec tt-srv "$LOADGEN" server --listen :: --port "$port" --duration 200 \
		--name "$name" "$@" >"$TMP/srv-$port.log" 2>&1 &
	SPIDS+=("$!")
	LAST_SRV=$!
}
cli_bg() { # name json args...   (pid in LAST_CLI)
	local name=$1 json=$2; shift 2
	ip netns exec tt-cli "$LOADGEN" client --name "$name" --json "$json" "$@" \
		>>"$TMP/cli.log" 2>&1 &
	LAST_CLI=$!
}
j() { tt_json "$@" 2>/dev/null || echo none; }
num_ok() { case "$1" in none|""|null) return 1;; esac; }
ge() { num_ok "$1" && num_ok "$2" && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
le() { num_ok "$1" && num_ok "$2" && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
# close_us A B: |A - B| <= max(B / 16, 20) (microseconds)
close_us() { num_ok "$1" && num_ok "$2" &&
	awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; t = b / 16; if (t < 20) t = 20; exit !(d <= t) }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "inf"; else printf "%+.1f%%", (a - b) / b * 100 }'; }
# ip netns exec execs the program, so a background `ip netns exec` pid is the program's pid
srv_ready() { # port: the server listens in tt-srv
	for _ in $(seq 1 50); do
		ip netns exec tt-srv ss -ltnH "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}
hist_or_fail() { # name args...: start tailtrace or fail the script (nothing can be measured)
	local name=$1
	if ! tcp_hist_start "$@"; then
		tt_fail "tailtrace hist ${*:2} did not start: $(head -c 300 "$TMP/$name.err")"
		exit 1
	fi
}

# near A B: |A - B| <= max(10 % of B, 10 us) (tailtrace's histogram buckets are 1/16 wide)
near() { num_ok "$1" && num_ok "$2" &&
	awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; t = b / 10; if (t < 10) t = 10; exit !(d <= t) }'; }
TRUTH=$(dirname "$0")/tx_truth.py

# truth_check HIST_JSON TRUTH_JSON N LABEL [MAX]: tx.sendq and tx.ack of the tt-ts-srv
# responses against the kernel's SO_TIMESTAMPING (tests/ns/tx_truth.py), p50 and p90 within
# max(10 %, 10 us) (near), at least N samples each (tx.sendq: at most MAX). A send tailtrace
# could not time is counted (counters.sends_untimed): up to 1 % of N so counted make up the
# samples; one lost without a count fails.
truth_check() {
	local hj=$1 kj=$2 nresp=$3 label=$4 max=${5:-1000000000} st n kn desc okf q v k untimed
	untimed=$(j "$hj" counters.sends_untimed)
	num_ok "$untimed" || untimed=1000000000
	for st in sendq ack; do
		n=$(tcp_stage "$hj" tx.$st '^comm tt-ts-srv' count)
		kn=$(j "$kj" $st.count)
		desc="" okf=1
		for q in p50 p90; do
			v=$(tcp_stage "$hj" tx.$st '^comm tt-ts-srv' ${q}_us)
			k=$(j "$kj" $st.${q}_us)
			desc="$desc $q $(tcp_fmt_ms "$v") vs $(tcp_fmt_ms "$k") ($(pct "$v" "$k"))"
			near "$v" "$k" || okf=0
		done
		tt_check "tx.$st of $nresp responses$label (n=$n, untimed sends $untimed) vs the kernel's SO_TIMESTAMPING (n=$kn):$desc; +-max(10%, 10us)" \
			eval 'num_ok "$n" && ge "$((n + untimed))" $nresp && ge $((nresp / 100)) "$untimed" &&
				ge "$kn" $((nresp - 2)) && [ $okf = 1 ] &&
				{ [ $st = ack ] || ge "$max" "$n"; }'
	done
}

# ---------------------------------------------------------------- bad input
if only badinput; then
	bad() { # desc args...
		local desc=$1; shift
		"$TAILTRACE" hist -d 1 "$@" >"$TMP/bad.out" 2>"$TMP/bad.err"
		local rc=$? lines out
		lines=$(wc -l <"$TMP/bad.err"); out=$(wc -c <"$TMP/bad.out")
		tt_check "bad input $desc: exit $rc (want 2), $lines stderr line(s) (want 1), stdout ${out} B: $(head -1 "$TMP/bad.err")" \
			[ "$rc" -eq 2 -a "$lines" -eq 1 -a "$out" -eq 0 ]
	}
	bad "unknown device" --dev tt-nosuch0
	bad "unknown device in a testbed netns" --dev tt-srv/nosuch0
	bad "unknown pid" -p 4194303
	bad "unknown cgroup" --cgroup /tailtrace-no-such-cgroup
	bad "--port 70000" --port 70000
fi

# ---------------------------------------------------------------- bottleneck
# A 20 Mbit/s tbf with a 64 KiB buffer on tt-srv0 and 4 bulk flows from tt-srv: responses
# of the traced servers wait behind the bulk data. One tailtrace run times the traced flows
# (--port, grouped by comm) and every packet of the device (--dev), and counts the packets
# through its qdisc; ss's srtt is sampled meanwhile. tx.qdisc is checked against the
# kernel's own timestamps of the same packets: tests/ns/tx_truth.py's server (comm
# tt-ts-srv) answers QTRUTH_N requests with 1 KiB (one packet each) and takes the SCHED
# (device queue, before the qdisc) and SND (driver) software stamps of each. tc's backlog
# sampled / rate, the reference before, is printed only: it is not the sojourn of any
# packet (a run measured 29.9 ms at p99, more than the 26.2 ms a full 64 KiB buffer holds
# at 20 Mbit/s: the tbf's dequeues came late, and backlog/rate assumes they never do; 1 run
# of 3 was 18.9 % over it).
RATE_BPS=20000000
QTRUTH_N=200
if only qdisc; then
	srv 7410 tt-q-srv --compute const:100 --resp-bytes 1024
	srv_ready 7410 || tt_fail "loadgen server on 7410 did not start"
	# qdisc_run: one measurement behind the bottleneck (tailtrace, tc's backlog, ss), the
	# largest steal of one CPU meanwhile in $TMP/qd.steal
	qdisc_run() {
		local s0
		s0=$(steal_now)
		hist_or_fail qd --port 7410 --port 7421 --dev tt-srv/"$TB_SRV_DEV" --by comm
		ip netns exec tt-srv python3 "$TRUTH" server 7421 256 1024 $QTRUTH_N "$TMP/qtruth.json" \
			>"$TMP/truth-7421.log" 2>&1 &
		tsrv=$!
		SPIDS+=("$tsrv")
		srv_ready 7421 || tt_fail "tx_truth server on 7421 did not start"
		t0=$SECONDS
		"$TESTBED" congest --link srv --rate 20mbit --buffer 64kb --qdisc tbf --bulk-conns 4 \
			--duration 10 >/dev/null 2>&1 || tt_fail "testbed congest"
		sleep 2 # the bulk flows fill the buffer
		rm -f "$TMP/stop" "$TMP/backlog" "$TMP/ss4" "$TMP/ss6"
		tcp_backlog_sampler tt-srv "$TB_SRV_DEV" "$TMP/backlog" "$TMP/stop" &
		bs=$!
		tcp_ss_sampler tt-cli "dst $TB_SRV4 and dport = :7410" "$TMP/ss4" "$TMP/stop" &
		s4=$!
		tcp_ss_sampler tt-cli "dst [$TB_SRV6] and dport = :7410" "$TMP/ss6" "$TMP/stop" &
		s6=$!
		cli_bg tt-q-cli4 "$TMP/q4.json" --connect "$TB_SRV4" --port 7410 --rate 50 --conns 2 --duration 6
		c4=$LAST_CLI
		cli_bg tt-q-cli6 "$TMP/q6.json" --connect "$TB_SRV6" --port 7410 --rate 50 --conns 2 --duration 6
		c6=$LAST_CLI
		ip netns exec tt-cli python3 "$TRUTH" client "$TB_SRV4" 7421 256 1024 $QTRUTH_N \
			>>"$TMP/cli.log" 2>&1 &
		tcli=$!
		wait "$c4" "$c6"
		wait "$tcli" || tt_fail "tx_truth client (bottleneck): $(tail -2 "$TMP/cli.log")"
		wait "$tsrv" || tt_fail "tx_truth server (bottleneck): $(tail -2 "$TMP/truth-7421.log")"
		touch "$TMP/stop"
		wait "$bs" "$s4" "$s6"
		# the bulk neighbour stops at 10 s; its last packets and FINs drain, then read tc
		while [ $((SECONDS - t0)) -lt 12 ]; do sleep 0.2; done
		tc_pkts=$(tcp_qdisc_root tt-srv "$TB_SRV_DEV" packets)
		tc_drops=$(tcp_qdisc_root tt-srv "$TB_SRV_DEV" drops)
		tcp_hist_stop qd
		"$TESTBED" clear >/dev/null 2>&1
		steal_since "$s0" >"$TMP/qd.steal"
	}
	# qdisc_figures: tx.qdisc of the traced servers' packets, the kernel's own figure for
	# tt-ts-srv's, and what tc's backlog implies
	qdisc_figures() {
		q99=$(tcp_stage "$TMP/qd.json" tx.qdisc '^comm tt-q-srv' p99_us)
		q50=$(tcp_stage "$TMP/qd.json" tx.qdisc '^comm tt-q-srv' p50_us)
		qn=$(tcp_stage "$TMP/qd.json" tx.qdisc '^comm tt-q-srv' count)
		d99=$(tcp_stage "$TMP/qd.json" tx.qdisc '^all$' p99_us "$TB_SRV_DEV")
		dmean=$(tcp_stage "$TMP/qd.json" tx.qdisc '^all$' mean_us "$TB_SRV_DEV")
		b99=$(tcp_quantile "$TMP/backlog" 0.99)
		bmean=$(tcp_mean "$TMP/backlog")
		nb=$(wc -l <"$TMP/backlog")
		bq99=$(awk -v b="$b99" -v r=$RATE_BPS 'BEGIN { if (b == "none") print "none"; else printf "%.1f", b * 8 / r * 1e6 }')
		bqmean=$(awk -v b="$bmean" -v r=$RATE_BPS 'BEGIN { if (b == "none") print "none"; else printf "%.1f", b * 8 / r * 1e6 }')
		tn=$(tcp_stage "$TMP/qd.json" tx.qdisc '^comm tt-ts-srv' count)
		kn=$(j "$TMP/qtruth.json" qdisc.count)
	}
	# the same packets timed twice: one truth for every quantile, whatever the queue did
	# (a vCPU stolen by the hypervisor lengthens both figures alike)
	qdisc_run
	qdisc_figures
	desc="" okf=1
	for q in p50 p90 p99; do
		v=$(tcp_stage "$TMP/qd.json" tx.qdisc '^comm tt-ts-srv' ${q}_us)
		k=$(j "$TMP/qtruth.json" qdisc.${q}_us)
		desc="$desc $q $(tcp_fmt_ms "$v") vs $(tcp_fmt_ms "$k") ($(pct "$v" "$k"))"
		near "$v" "$k" || okf=0
	done
	echo "# largest steal of one CPU during the bottleneck run: $(cat "$TMP/qd.steal") ms"
	full=$(awk -v r=$RATE_BPS 'BEGIN { printf "%.1f", 65536 * 8 / r * 1e6 }')
	echo "# bottleneck: tx.qdisc traced server: n=$qn p50 $(tcp_fmt_ms "$q50") p99 $(tcp_fmt_ms "$q99");" \
		"whole device: p99 $(tcp_fmt_ms "$d99") mean $(tcp_fmt_ms "$dmean");" \
		"tc backlog ($nb samples): p99 ${b99} B = $(tcp_fmt_ms "$bq99"), mean ${bmean} B = $(tcp_fmt_ms "$bqmean");" \
		"full buffer $(tcp_fmt_ms "$full"); tc drops $tc_drops"
	# the queue must have been there (p50 over 5 ms: a quarter of a full buffer), or the
	# comparison shows nothing
	tt_check "tx.qdisc of $QTRUTH_N tx_truth responses (n=$tn) vs the kernel's SND - SCHED stamps (n=$kn):$desc; tbf 20mbit 64kb + 4 bulk flows; +-max(10%, 10us)" \
		eval 'ge "$tn" $((QTRUTH_N - 2)) && ge "$kn" $((QTRUTH_N - 2)) && [ $okf = 1 ] &&
			ge "$(j "$TMP/qtruth.json" qdisc.p50_us)" 5000 && ge "$qn" 100' 

	# tcp.rtt of each client vs ss -ti srtt of its connections
	for fam in 4 6; do
		r50=$(tcp_stage "$TMP/qd.json" tcp.rtt "^comm tt-q-cli$fam" p50_us)
		rn=$(tcp_stage "$TMP/qd.json" tcp.rtt "^comm tt-q-cli$fam" count)
		m=$(tcp_quantile "$TMP/ss$fam" 0.5)
		sn=$(wc -l <"$TMP/ss$fam")
		mus=$(awk -v m="$m" 'BEGIN { if (m == "none") print "none"; else printf "%.1f", m * 1000 }')
		tt_check "IPv$fam tcp.rtt p50 $(tcp_fmt_ms "$r50") (n=$rn) vs ss -ti srtt median $(tcp_fmt_ms "$mus") ($sn samples; $(pct "$r50" "$mus"); +-10%)" \
			eval 'ge "$rn" 50 && ge "$sn" 10 && tcp_ratio_ok "$r50" "$mus" 0.10'
	done

	# packets through the root qdisc: tailtrace (--dev tt-srv/tt-srv0) vs tc
	qp=$(tcp_counter "$TMP/qd.json" qdisc_packets)
	tt_check "qdisc_packets $qp vs tc -s sent $tc_pkts ($(pct "$qp" "$tc_pkts"); --dev tt-srv/$TB_SRV_DEV, qdisc created under tracing; +-1%)" \
		eval 'ge "$tc_pkts" 1000 && tcp_ratio_ok "$qp" "$tc_pkts" 0.01'
fi

# ---------------------------------------------------------------- no bottleneck, IPv4 + IPv6
# A 10 Gbit/s tbf on tt-srv0 (burst 1.25 MB): a qdisc that never queues. Grouped by remote
# address, so each family's flows are seen separately.
if only idle; then
	srv 7411 tt-i-srv --compute const:100 --resp-bytes 1024
	srv_ready 7411 || tt_fail "loadgen server on 7411 did not start"
	"$TESTBED" congest --link srv --rate 10gbit --buffer 4mb --bulk none >/dev/null 2>&1 ||
		tt_fail "testbed congest 10gbit"
	hist_or_fail idle --port 7411 --by raddr
	# the same packets without --by: tx.qdisc through the per-CPU place array (a slot is
	# handed out ~200 ms after the first packet) instead of the hashed keys of --by
	hist_or_fail idle_all --port 7411 --stage tx.qdisc
	cli_bg tt-i-cli4 "$TMP/i4.json" --connect "$TB_SRV4" --port 7411 --rate 100 --conns 4 --duration 5
	c4=$LAST_CLI
	cli_bg tt-i-cli6 "$TMP/i6.json" --connect "$TB_SRV6" --port 7411 --rate 100 --conns 4 --duration 5
	c6=$LAST_CLI
	wait "$c4" "$c6"
	sleep 0.3
	tcp_hist_stop idle
	tcp_hist_stop idle_all
	"$TESTBED" clear >/dev/null 2>&1
	q99=$(tcp_stage "$TMP/idle.json" tx.qdisc '^raddr ' p99_us)
	qn=$(tcp_stage "$TMP/idle.json" tx.qdisc '^raddr ' count)
	qmax=$(tcp_stage "$TMP/idle.json" tx.qdisc '^raddr ' max_us)
	an=$(tcp_stage "$TMP/idle_all.json" tx.qdisc '' count)
	a99=$(tcp_stage "$TMP/idle_all.json" tx.qdisc '' p99_us)
	amax=$(tcp_stage "$TMP/idle_all.json" tx.qdisc '' max_us)
	# the two instances time each packet separately (their programs run one after the
	# other, and an interrupt between them lengthens one instance's sample only): the
	# counts must agree, p99 to a bucket (1/16) or 20 us; a single maximum need not
	tt_check "tx.qdisc ungrouped (place array) n=$an p99 $(tcp_fmt_ms "$a99") max $(tcp_fmt_ms "$amax") = grouped by raddr n=$qn p99 $(tcp_fmt_ms "$q99") max $(tcp_fmt_ms "$qmax") (counts +-1%, p99 +-max(1/16, 20us))" \
		eval 'ge "$an" 100 && tcp_ratio_ok "$an" "$qn" 0.01 && close_us "$a99" "$q99" && ge "$amax" "$a99"'
	# self-accounting under this traffic: the kernel's figures of the hooks every request
	# runs, and tailtrace's own CPU
	selfc=$(python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))["self"]
p = {x["hook"]: x for x in s["programs"]}
need = ["tcp_probe", "tcp_sendmsg", "net_dev_queue", "sock_recv_length"]
ok = all(h in p and p[h]["runs"] > 0 and p[h]["events_per_s"] > 0 and p[h]["ns_per_event"] > 0 for h in need)
ok = ok and s["cpu_s"] > 0 and s["programs_s"] > 0 and s["sampling"]["rate"] == 1
print(("ok" if ok else "bad") + " cpu_s=%g programs_s=%g " % (s["cpu_s"], s["programs_s"]) +
      " ".join("%s=%.0f/s,%.0fns" % (h, p[h]["events_per_s"], p[h]["ns_per_event"]) for h in need if h in p))' "$TMP/idle_all.json" 2>&1)
	tt_check "self-accounting non-zero under traffic: $selfc" eval '[ "${selfc%% *}" = ok ]'
	reqs=$(( $(j "$TMP/i4.json" requests) + $(j "$TMP/i6.json" requests) ))
	tt_check "tx.qdisc p99 $(tcp_fmt_ms "$q99") near zero without a bottleneck (10gbit tbf; n=$qn >= $reqs responses; < 1ms)" \
		eval 'ge "$qn" "$reqs" && le "$q99" 1000'
	for fam in 4 6; do
		# the server listens on ::, so its IPv4 sockets are v4-mapped (raddr ::ffff:a.b.c.d)
		if [ $fam = 4 ]; then cli_addr="(::ffff:)?$TB_CLI4" srv_addr=$TB_SRV4; else cli_addr=$TB_CLI6 srv_addr=$TB_SRV6; fi
		r=$(j "$TMP/i$fam.json" requests)
		desc="" okf=1
		# server side (remote = the client): sends responses through the qdisc
		for st in tx.sendq tx.qdisc tx.ack rx.stack rx.sockq tcp.rtt; do
			n=$(tcp_stage "$TMP/idle.json" $st "^raddr $cli_addr\$" count)
			desc="$desc srv.$st=$n"
			ge "$n" 1 || okf=0
		done
		# client side (remote = the server): every response is received and read
		for st in tx.sendq tx.ack rx.stack rx.sockq tcp.rtt; do
			n=$(tcp_stage "$TMP/idle.json" $st "^raddr $srv_addr\$" count)
			desc="$desc cli.$st=$n"
			ge "$n" 1 || okf=0
		done
		nrx=$(tcp_stage "$TMP/idle.json" rx.stack "^raddr $srv_addr\$" count)
		ntq=$(tcp_stage "$TMP/idle.json" tx.qdisc "^raddr $cli_addr\$" count)
		tt_check "IPv$fam: every stage has samples ($desc ); client rx.stack $nrx and server tx.qdisc $ntq >= $r responses" \
			eval '[ $okf = 1 ] && ge "$nrx" "$r" && ge "$ntq" "$r"'
	done
fi

# ---------------------------------------------------------------- budget
# 64 connections of open-loop requests, traced twice with the request programs on:
# unsampled (the reference, whose cost shows whether the load exceeds the budget) and,
# from 8.5 s on, with --budget. Both print 2 s intervals on the same wall-clock grid (--align), so the
# two are compared over exactly the same spans: this load's tail comes in episodes (one
# 2 s interval's p99 is 160 us, the next's 740 us, unsampled), and spans that differ by a
# second at either end put an episode in one and not the other. Over the budgeted
# instance's full intervals under load after its first (the controller settling), its
# cost must be within the budget and the p99s of the request latency and of rx.sockq
# where they belong in the reference's distribution of the same intervals: the budgeted
# p99's bucket holds the reference's p99, or lies within 0.3 points of it (measured 0.00-
# 0.12 with half the flows sampled). A rank, not a distance in value: the two instances'
# p99 buckets were 1 apart in most runs and 2 (11 %) in one, where the tail is steep and
# a bucket spans a tenth of a point. The instance samples when the reference's cost in
# those intervals is over the budget, and keeps most flows when it is not. rx.stack and
# tx.sendq are printed, not compared: they last a few us, and the instance attached
# second also times the first one's programs (about 1 us at the tail).
# The budget is 90 % of the reference's cost, and in some runs that is below the floor
# sampling cannot remove (every hook still runs for every event, and the receive stamp of
# every packet of the port), 60-86 % of the unsampled cost here: then the outputs must
# state a floor that is the cost measured.
if only budget; then
	srv 7418 tt-b-srv --compute const:50 --resp-bytes 512
	srv_ready 7418 || tt_fail "loadgen server on 7418 did not start"
	# the server's sockets only (-p): 64 flows alike. Both ends' sockets are on this host,
	# and a sample mixing client and server sockets in other proportions than all of them
	# moves a p99 that sits between two modes (rx.stack: 4 or 36 us from one interval to
	# the next, unsampled)
	bsrv=$LAST_SRV
	BSTAGES=(--stage req.latency --stage rx.sockq --stage rx.stack --stage tx.sendq)
	hist_or_fail b_ref --port 7418 -p "$bsrv" -i 2 --align "${BSTAGES[@]}"
	cli_bg tt-b-cli "$TMP/b.json" --connect "$TB_SRV4" --port 7418 --rate 3000 --conns 64 \
		--duration "${TCP_BUDGET_SECONDS:-30}"
	# the budget: 90 % of what the unsampled instance costs on this load (the median of its
	# first three full intervals: one interval's cost is a noisy figure), unless given
	sleep 8.5
	BUDGET=${TCP_BUDGET_PCT:-$(python3 -c 'import json,statistics,sys
o = [json.loads(l)["self"] for l in open(sys.argv[1]).readlines()[1:4]]
print("%.3g" % (0.9 * statistics.median(s["cpu_pct"] + s["programs_cpu_pct"] for s in o)))' \
		"$TMP/b_ref.json" 2>/dev/null || echo 0.5)}
	hist_or_fail b_bud --port 7418 -p "$bsrv" -i 2 --align --budget "$BUDGET" "${BSTAGES[@]}"
	wait "$LAST_CLI"
	tload1=$(date +%s%3N)
	tcp_hist_stop b_bud
	tcp_hist_stop b_ref
	bud=$(python3 - "$TMP/b_ref.json" "$TMP/b_bud.json" "$BUDGET" "$tload1" <<'PY' 2>&1
import json, sys
def objs(path):
    dec, text, out, i = json.JSONDecoder(), open(path).read(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        o, i = dec.raw_decode(text, i)
        out.append(o)
def merged(ivals, name): # {bucket lo: (hi, count)} over the intervals
    b = {}
    for o in ivals:
        for st in o["stages"]:
            if st["name"] == name:
                for lo, hi, n in st["buckets"]:
                    b[lo] = (hi, b.get(lo, (hi, 0))[1] + n)
    return b
def p99(b): # its bucket's lower bound, its midpoint in us, the count
    tot = sum(n for _, n in b.values())
    seen = 0
    for lo in sorted(b):
        seen += b[lo][1]
        if seen >= 0.99 * tot:
            return lo, (lo + (b[lo][0] or lo)) / 2 / 1000, tot
    return 0, 0, 0
def rank(b, lo): # the share of b below bucket lo, and up to its end
    tot = sum(n for _, n in b.values()) or 1
    below = sum(n for l, (_, n) in b.items() if l < lo)
    return below / tot, (below + b.get(lo, (0, 0))[1]) / tot
def cost(o):
    return o["self"]["cpu_pct"] + o["self"]["programs_cpu_pct"]
def grid(o): # the interval's end on the 2 s grid both instances keep
    return round(o["end_unix_ms"] / 2000)
ref, bud, budget, tload1 = objs(sys.argv[1]), objs(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
ok, words = True, []
# full 2 s intervals that ended while the load ran, after the budgeted instance's first
full = [o for o in bud if abs(o["duration_s"] - 2) < 0.1 and o["end_unix_ms"] <= tload1]
steady = full[1:]
same = {grid(o) for o in steady}
ref_same = [o for o in ref if grid(o) in same and abs(o["duration_s"] - 2) < 0.1]
costs = [cost(o) for o in steady]
rcost = sorted(cost(o) for o in ref_same) or [0]
rates = [o["self"]["sampling"]["rate"] for o in steady] or [1]
# within the budget over the span: the controller moves the rate every second on the cost
# it measured, so one interval can be over the budget while the span's is within it: the
# span's mean is the measure, not its worst interval. Or, when the budget is under the
# floor sampling cannot remove, the outputs say so with a floor that is the cost measured
# (the rate sunk low, the cost is nearly all floor)
med = sorted(costs)[len(costs) // 2] if costs else 1e9
mean = sum(costs) / len(costs) if costs else 1e9
floor = max([o["self"]["sampling"]["floor_pct"] or 0 for o in steady] or [0])
kept = len(costs) >= 4 and mean <= budget
stated = len(costs) >= 4 and floor >= 0.9 * budget and abs(floor - mean) <= 0.15 * mean
ok &= kept or stated
# Whether the budget binds is measured, not assumed: the budget is 90 % of the reference's
# cost in its first intervals, and the same load's cost moves by more than that 10 % from
# one span to the next (the programs' ns per run, 230-340 here, with the host's state:
# measured over these spans, the reference's median 0.84-1.14 of what it was in the
# first intervals). Binding (the reference over the budget in the same intervals by more
# than 15 %), the instance must sample; not binding (the reference within the budget), it
# must not sink the rate (it aims at 90 % of the budget, so it may shave a little off). In
# between, either is right: the two instances' costs at full rate differ by up to 15 % in
# the same intervals (5.15 against 4.37 once, the budget 5.11 between them)
rmed, rate_med = rcost[len(rcost) // 2], sorted(rates)[len(rates) // 2]
binding = rmed > 1.15 * budget
loose = rmed <= budget
ok &= rate_med < 1 if binding else rate_med >= 0.5 if loose else True
ok &= len(ref_same) == len(steady)
words.append("%d intervals of 2 s, the same in both; cost %% of a CPU: ref median %.2f, "
             "budgeted mean %.2f median %.2f max %.2f (budget %g, %s), rate %.3g-%.3g "
             "(median %.3g, want %s), floor stated %.2f: %s" %
             (len(steady), rmed, mean, med, max(costs or [0]), budget,
              "binding" if binding else "not binding in these intervals" if loose
              else "at the budget in these intervals",
              min(rates), max(rates), rate_med,
              "< 1" if binding else ">= 0.5" if loose else "any", floor,
              "kept" if kept else "under the floor, stated" if stated else "neither"))
for st in ("req.latency", "rx.sockq", "rx.stack", "tx.sendq"):
    rb, bb = merged(ref_same, st), merged(steady, st)
    _, a, na = p99(rb)
    blo, b, nb = p99(bb)
    r0, r1 = rank(rb, blo)
    off = 0 if r0 <= 0.99 <= r1 else min(abs(r0 - 0.99), abs(r1 - 0.99))
    if st in ("req.latency", "rx.sockq"):
        ok &= a > 0 and off <= 0.003
    words.append("%s p99 %.1f/%.1f us, the reference's p%.2f-p%.2f (n %d/%d scaled)" %
                 (st, a, b, 100 * r0, 100 * r1, na, nb))
errs = [o["self"]["sampling"] for o in steady if o["self"]["sampling"]["p99_error"] is not None]
worst = max(errs, key=lambda e: e["p99_error"]) if errs else {"p99_error": 0, "p99_error_stage": None}
words.append("stated p99 error <= %.1f %% (%s; %d intervals too thin to state one)" %
             (100 * worst["p99_error"], worst["p99_error_stage"], len(steady) - len(errs)))
print(("ok " if ok else "bad ") + "; ".join(words))
PY
)
	tt_check "--budget $BUDGET: $bud" eval '[ "${bud%% *}" = ok ]'
	kill "$bsrv" 2>/dev/null # its port is free for the sections after
fi

# ---------------------------------------------------------------- loss
# 2 % of the loadgen's TCP packets leaving tt-srv dropped by nftables (port 7412 only, so
# nothing else in the namespaces retransmits). IPv4 and IPv6 clients at once. The kernel's
# count is RetransSegs of both namespaces, read after tailtrace attached and after the last
# retransmission (FINs included) and before it detaches.
if only loss; then
	srv 7412 tt-l-srv --compute const:100 --resp-bytes 1024
	srv_ready 7412 || tt_fail "loadgen server on 7412 did not start"
	"$TESTBED" loss --link srv --percent 2 --ports 7412 >/dev/null 2>&1 || tt_fail "testbed loss"
	hist_or_fail loss --port 7412
	k0=$(( $(tcp_retrans_segs tt-srv) + $(tcp_retrans_segs tt-cli) ))
	tcp_nstat_all tt-srv >"$TMP/nstat0.srv"; tcp_nstat_all tt-cli >"$TMP/nstat0.cli"
	cli_bg tt-l-cli4 "$TMP/l4.json" --connect "$TB_SRV4" --port 7412 --rate 300 --conns 4 --duration 6
	c4=$LAST_CLI
	cli_bg tt-l-cli6 "$TMP/l6.json" --connect "$TB_SRV6" --port 7412 --rate 300 --conns 4 --duration 6
	c6=$LAST_CLI
	wait "$c4" "$c6"
	# lost FINs are retransmitted after an RTO: wait until no socket on 7412 is left
	for _ in $(seq 1 40); do
		ip netns exec tt-srv ss -tanH "sport = :7412" | grep -v LISTEN | grep -q . || break
		sleep 0.25
	done
	k1=$(( $(tcp_retrans_segs tt-srv) + $(tcp_retrans_segs tt-cli) ))
	tcp_nstat_all tt-srv >"$TMP/nstat1.srv"; tcp_nstat_all tt-cli >"$TMP/nstat1.cli"
	nsd() { # counter [srv|cli]: delta in one namespace, or both
		local f
		for f in ${2:-srv cli}; do
			awk -v k="$1" 'FNR == NR { if ($1 == k) a -= $2; next } $1 == k { a += $2 } END { print a + 0 }' \
				"$TMP/nstat0.$f" "$TMP/nstat1.$f"
		done | awk '{ s += $1 } END { print s + 0 }'
	}
	tcp_hist_stop loss
	drops=$(ip netns exec tt-srv nft list table inet tailtrace_testbed 2>/dev/null | awk '/counter packets/ {
		for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1) } END { print s + 0 }')
	"$TESTBED" clear >/dev/null 2>&1
	# SYN-ACK retransmissions (a lost SYN-ACK) count in RetransSegs; tailtrace counts them
	# apart (tcp:tcp_retransmit_synack, retransmits_synack), so both totals include them.
	# The server's namespace only accepts, so its TCPSynRetrans are all SYN-ACKs (the
	# client's SYN retransmissions are socket retransmissions).
	synr=$(nsd TcpExtTCPSynRetrans srv)
	kern=$((k1 - k0))
	tr=$(tcp_counter "$TMP/loss.json" retransmits)
	trs=$(tcp_counter "$TMP/loss.json" retransmits_synack)
	rto=$(tcp_counter "$TMP/loss.json" retransmits_timeout)
	tol=$(( kern / 1000 ))
	echo "# loss: nft dropped $drops packets; kernel RetransSegs +$kern (both namespaces: TCPLossProbes $(nsd TcpExtTCPLossProbes)," \
		"TCPTimeouts $(nsd TcpExtTCPTimeouts), TCPFastRetrans $(nsd TcpExtTCPFastRetrans), TCPSlowStartRetrans $(nsd TcpExtTCPSlowStartRetrans), TCPRetransFail $(nsd TcpExtTCPRetransFail), TCPSynRetrans $(nsd TcpExtTCPSynRetrans));" \
		"tailtrace retransmits $tr (timeout $rto, fast $(tcp_counter "$TMP/loss.json" retransmits_fast)," \
		"tlp $(tcp_counter "$TMP/loss.json" retransmits_tlp), other $(tcp_counter "$TMP/loss.json" retransmits_other))"
	tt_check "retransmits $tr (SYN-ACK $trs) vs kernel TcpRetransSegs delta $kern (server SYN-ACKs $synr; 2% loss on srv, IPv4+IPv6; nft drops $drops; +-$tol = 1 per 1000)" \
		eval 'ge "$kern" 20 && ge "$tr" $((kern - tol)) && le "$tr" $((kern + tol))'
	tt_check "retransmits_synack $trs vs the server's TCPSynRetrans delta $synr" \
		test "$trs" -eq "$synr"
	# with one small response in flight per connection, a tail-loss probe has no new data
	# to send and retransmits: the kernel's TCPLossProbes counts exactly those here
	tlp=$(tcp_counter "$TMP/loss.json" retransmits_tlp)
	kp=$(nsd TcpExtTCPLossProbes)
	tt_check "retransmits_tlp $tlp vs kernel TCPLossProbes delta $kp (+-10%)" \
		eval 'ge "$kp" 10 && tcp_ratio_ok "$tlp" "$kp" 0.10'
fi

# ---------------------------------------------------------------- slow reader
# Two clients of one server at the same time: a normal one and one started with the
# testbed's slowread options (16 KiB receive buffer, 4 KiB reads, 2 ms before each read).
# Grouped by comm: rx.sockq of each client's sockets.
if only slowread; then
	srv 7413 tt-s-srv --compute const:100 --sndbuf 32k
	srv_ready 7413 || tt_fail "loadgen server on 7413 did not start"
	"$TESTBED" slowread --read-delay-us 2000 --rcvbuf 16384 --read-chunk 4096 >/dev/null 2>&1
	eval "$("$TESTBED" env)"
	hist_or_fail slow --port 7413 --by comm --stage rx.sockq --stage rx.stack
	cli_bg tt-s-base "$TMP/s-base.json" --connect "$TB_SRV6" --port 7413 --rate 10 --conns 2 \
		--resp-bytes 64k --duration 5
	cb=$LAST_CLI
	# shellcheck disable=SC2086 # TB_CLIENT_OPTS is a list of options
	cli_bg tt-s-slow "$TMP/s-slow.json" --connect "$TB_SRV6" --port 7413 --concurrency 1 \
		--resp-bytes 64k --duration 5 $TB_CLIENT_OPTS
	cs=$LAST_CLI
	wait "$cb" "$cs"
	tcp_hist_stop slow
	"$TESTBED" clear >/dev/null 2>&1
	eval "$("$TESTBED" env)"
	sb50=$(tcp_stage "$TMP/slow.json" rx.sockq '^comm tt-s-base' p50_us)
	sb90=$(tcp_stage "$TMP/slow.json" rx.sockq '^comm tt-s-base' p90_us)
	sb99=$(tcp_stage "$TMP/slow.json" rx.sockq '^comm tt-s-base' p99_us)
	sbn=$(tcp_stage "$TMP/slow.json" rx.sockq '^comm tt-s-base' count)
	ss50=$(tcp_stage "$TMP/slow.json" rx.sockq '^comm tt-s-slow' p50_us)
	ssn=$(tcp_stage "$TMP/slow.json" rx.sockq '^comm tt-s-slow' count)
	lat=$(j "$TMP/s-slow.json" latency_us.p50)
	echo "# slowread: rx.sockq normal reader n=$sbn p50 $(tcp_fmt_ms "$sb50") p99 $(tcp_fmt_ms "$sb99");" \
		"slow reader n=$ssn p50 $(tcp_fmt_ms "$ss50") (response p50 $(tcp_fmt_ms "$lat"), floor 16 reads x 2 ms)"
	# the normal reader's p99 reaches a few ms on a 2-vCPU VM (a woken reader waits for a
	# CPU: 3-13 ms seen), so "not otherwise" is judged on its p90
	tt_check "rx.sockq slow reader p50 $(tcp_fmt_ms "$ss50") >= 2 ms read delay and >= 10x the normal reader's p50 $(tcp_fmt_ms "$sb50"); normal p90 $(tcp_fmt_ms "$sb90") < 1 ms (p99 $(tcp_fmt_ms "$sb99"))" \
		eval 'ge "$ssn" 20 && ge "$sbn" 20 && ge "$ss50" 2000 && ge "$ss50" "$(awk -v b="$sb50" "BEGIN { print 10 * b }")" && le "$sb90" 1000'
fi

# ---------------------------------------------------------------- TX timestamps
# tx.sendq and tx.ack against the kernel's own TX timestamps: the server of
# tests/ns/tx_truth.py asks for SO_TIMESTAMPING (SCHED, SND, ACK) on its socket and reads
# them from the error queue, without tailtrace. 64 KiB responses behind a 20 Mbit/s tbf on
# the server's device: each response's last byte waits for cwnd and the queue (ms).
# Tolerance: near() (Python's time before send() is a few us ahead of tcp_sendmsg).
# truth_server PORT OUT [BUFFER]: the 20 Mbit/s tbf (64 KiB buffer unless given), then
# tests/ns/tx_truth.py's server for $NRESP responses of 64 KiB on PORT (pid in tsrv, log in
# $TMP/truth-PORT.log)
truth_server() {
	"$TESTBED" congest --link srv --rate 20mbit --buffer "${3:-64kb}" --qdisc tbf --bulk none \
		--duration 60 >/dev/null 2>&1 || tt_fail "testbed congest"
	ip netns exec tt-srv python3 "$TRUTH" server "$1" 256 65536 $NRESP "$2" \
		>"$TMP/truth-$1.log" 2>&1 &
	tsrv=$!
	SPIDS+=("$tsrv")
	srv_ready "$1" || tt_fail "tx_truth server on $1 did not start"
}
if only txtruth; then
	NRESP=150
	hist_or_fail tx --port 7416 --by comm --stage tx.sendq --stage tx.ack
	truth_server 7416 "$TMP/truth.json"
	ip netns exec tt-cli python3 "$TRUTH" client "$TB_SRV4" 7416 256 65536 $NRESP \
		>>"$TMP/cli.log" 2>&1 || tt_fail "tx_truth client: $(tail -2 "$TMP/cli.log")"
	wait "$tsrv" || tt_fail "tx_truth server: $(tail -2 "$TMP/truth-7416.log")"
	tcp_hist_stop tx
	"$TESTBED" clear >/dev/null 2>&1
	truth_check "$TMP/tx.json" "$TMP/truth.json" $NRESP ""
fi

# ---------------------------------------------------------------- a qdisc that drops
# The same ground truth behind a tbf of 4 KiB: ~45 drops per 64 KiB response at its
# enqueue (tc -s qdisc), TCP trying again later. When a drop hits a response's last byte,
# the kernel takes one SCHED stamp per attempt (tx_truth.py counts such sends as
# requeued); tx.sendq must give one sample per response, up to its last attempt (the
# kernel's last stamp), not one per attempt. 300 responses: a drop hits a last byte in
# about 2 % to 6 % of them, so 100 met none in one run of eight (a CI run on 2026-12-01).
if only droptruth; then
	NRESP=300
	hist_or_fail dq --port 7417 --by comm --stage tx.sendq --stage tx.ack
	truth_server 7417 "$TMP/truth-dq.json" 4kb
	ip netns exec tt-cli python3 "$TRUTH" client "$TB_SRV4" 7417 256 65536 $NRESP \
		>>"$TMP/cli.log" 2>&1 || tt_fail "tx_truth client (drops): $(tail -2 "$TMP/cli.log")"
	wait "$tsrv" || tt_fail "tx_truth server (drops): $(tail -2 "$TMP/truth-7417.log")"
	dq_drops=$(ip netns exec tt-srv tc -s qdisc show dev "$TB_SRV_DEV" |
		awk '/dropped/ { sub(",", "", $7); n += $7 } END { print n + 0 }')
	tcp_hist_stop dq
	"$TESTBED" clear >/dev/null 2>&1
	dq_requeued=$(j "$TMP/truth-dq.json" requeued)
	tt_check "the 4 KiB tbf dropped ($dq_drops drops, want >= 1000) and the kernel stamped a last byte again after a drop ($dq_requeued sends, want >= 1)" \
		eval 'ge "$dq_drops" 1000 && ge "$dq_requeued" 1'
	truth_check "$TMP/dq.json" "$TMP/truth-dq.json" $NRESP " behind a dropping qdisc" $NRESP
fi

# ---------------------------------------------------------------- connections older than tailtrace
# The same ground truth on a connection established before tailtrace started: no hook saw
# its handshake, and its sends must be timed all the same. A model server's persistent
# connections are like this.
if only existing; then
	NRESP=100
	truth_server 7419 "$TMP/truth-ex.json"
	ip netns exec tt-cli python3 "$TRUTH" client "$TB_SRV4" 7419 256 65536 $NRESP "$TMP/go" \
		>>"$TMP/cli.log" 2>&1 &
	tcli=$!
	for _ in $(seq 1 50); do
		ip netns exec tt-srv ss -tnH state established "sport = :7419" | grep -q . && break
		sleep 0.1
	done
	hist_or_fail ex --port 7419 --by comm --stage tx.sendq --stage tx.ack -v
	touch "$TMP/go"
	wait "$tcli" || tt_fail "tx_truth client (existing): $(tail -2 "$TMP/cli.log")"
	wait "$tsrv" || tt_fail "tx_truth server (existing): $(tail -2 "$TMP/truth-7419.log")"
	tcp_hist_stop ex
	"$TESTBED" clear >/dev/null 2>&1
	truth_check "$TMP/ex.json" "$TMP/truth-ex.json" $NRESP " on a connection older than tailtrace"
fi

# explain_bg NAME PORT: `explain -j --role server --port PORT` until SIGINT, JSON in
# $TMP/NAME.json (pid in EXPLAIN_PID); returns once its programs are attached
explain_bg() {
	timeout -s INT --kill-after=5 90 "$TAILTRACE" explain -j --role server --port "$2" "${@:3}" \
		>"$TMP/$1.json" 2>"$TMP/$1.err" &
	EXPLAIN_PID=$!
	local child=""
	for _ in $(seq 1 50); do # tailtrace is the child of timeout
		child=$(pgrep -P $EXPLAIN_PID | head -1)
		[ -n "$child" ] && break
		sleep 0.1
	done
	[ -n "$child" ] && tt_wait_attached "$child" 200 ||
		tt_fail "explain did not start: $(head -c 300 "$TMP/$1.err")"
}

# ---------------------------------------------------------------- retransmitted requests
# Twice during a closed loop of 150 requests on one connection, the server's packets are
# dropped (nft, on tt-srv0) for 0.8 s: its response and the ACK of the request in flight
# do not arrive, and the client's RTO sends the request again. The server's TCP drops that
# copy as old data (it counts a DSACK); tailtrace must not take it for a new request.
if only dupreq; then
	srv 7420 tt-dup-srv --compute const:20000 --resp-bytes 2048
	srv_ready 7420 || tt_fail "loadgen server on 7420 did not start"
	explain_bg dup 7420
	dpid=$EXPLAIN_PID
	dsack() { ip netns exec tt-srv nstat -az TcpExtTCPDSACKOldSent | awk '/DSACKOldSent/ { print $2 }'; }
	d0=$(dsack)
	cli_bg tt-dup-cli "$TMP/dup-cli.json" --connect "$TB_SRV4" --port 7420 --conns 1 \
		--concurrency 1 --requests 150 --req-bytes 512 --resp-bytes 2048
	dcl=$LAST_CLI
	for _ in 1 2; do
		sleep 1
		"$TESTBED" loss --link srv --percent 100 --ports 7420 >/dev/null 2>&1 || tt_fail "testbed loss"
		sleep 0.8
		"$TESTBED" clear >/dev/null 2>&1
	done
	wait "$dcl"
	d1=$(dsack)
	sleep 0.5
	kill -INT "$dpid"; wait "$dpid"
	rq=$(j "$TMP/dup.json" requests)
	lg=$(j "$TMP/dup-cli.json" requests)
	# loadgen ends each connection with one more exchange, for the server's timings
	tt_check "requests sent again while their response was held ($((d1 - d0)) copies dropped as old data): explain requests $rq = loadgen's $lg + 1" \
		eval 'ge "$((d1 - d0))" 2 && num_ok "$lg" && [ "$rq" = "$((lg + 1))" ]'
	# the copy is no new request, and the real one after it no part of one: each held
	# request lasts the whole hold, as the client measured it (the server's view ends a
	# round trip earlier), and the first response byte always follows the 20 ms of compute
	tmax=$(j "$TMP/dup.json" latency_us.max)
	cmax=$(j "$TMP/dup-cli.json" latency_us.max)
	ttft=$(j "$TMP/dup.json" ttft_us.max)
	tt_check "the held request's latency: explain max $(tcp_fmt_ms "$tmax") vs loadgen's $(tcp_fmt_ms "$cmax") (within 5 %), explain's TTFT max $(tcp_fmt_ms "$ttft") (want < 100 ms)" \
		eval 'ge "$cmax" 600000 && ge "$tmax" "$(awk -v c="$cmax" "BEGIN { print c * 0.95 }")" && le "$tmax" "$cmax" && le "$ttft" 100000'
fi

# ---------------------------------------------------------------- full accept queue
# 40 clients at once against a listener with a backlog of 1 that accepts every 30 ms
# (tests/ns/accept_overflow.py): the kernel drops handshake ACKs it cannot queue, and each
# such request's segment completes its handshake outside tcp_rcv_established, where
# tcp_probe does not fire. Every completed exchange must still be a request.
if only acceptq; then
	AOV=$(dirname "$0")/accept_overflow.py
	ip netns exec tt-srv timeout 60 python3 "$AOV" server 7417 >"$TMP/aov-srv.log" 2>&1 &
	SPIDS+=("$!")
	srv_ready 7417 || tt_fail "accept_overflow server on 7417 did not start"
	explain_bg aov 7417
	apid=$EXPLAIN_PID
	# and by its owner: each request arrives before the server's process first touches
	# its socket (it accepts every 30 ms), while the flow waits for the owner's verdict
	aovpid=""
	for p in $(pgrep -f "accept_overflow.py server 7417"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = python3 ] && aovpid=$p
	done
	explain_bg aovp 7417 -p "$aovpid"
	appid=$EXPLAIN_PID
	explain_bg aovc 7417 --comm python3
	acpid=$EXPLAIN_PID
	ov0=$(ip netns exec tt-srv nstat -az TcpExtListenOverflows | awk '/ListenOverflows/ { print $2 }')
	ip netns exec tt-cli timeout 60 python3 "$AOV" client "$TB_SRV4" 7417 40 >"$TMP/aov-cli.json" 2>>"$TMP/cli.log"
	ov1=$(ip netns exec tt-srv nstat -az TcpExtListenOverflows | awk '/ListenOverflows/ { print $2 }')
	sleep 0.5
	kill -INT "$apid" "$appid" "$acpid"; wait "$apid" "$appid" "$acpid"
	ex=$(j "$TMP/aov-cli.json" exchanges)
	rq=$(j "$TMP/aov.json" requests)
	# what tailtrace says it lost or could not see, for a count that differs
	aloss=$(for k in lost evicted failed_updates closes_unseen responses_unseen unmatched_stamps; do
		printf ' %s %s' "$k" "$(j "$TMP/aov.json" "counters.$k")"; done)
	tt_check "full accept queue ($((ov1 - ov0)) listen overflows): explain requests $rq = exchanges completed $ex (counters:$aloss)" \
		eval 'ge "$((ov1 - ov0))" 1 && ge "$ex" 10 && [ "$rq" = "$ex" ]'
	rp=$(j "$TMP/aovp.json" requests)
	rc=$(j "$TMP/aovc.json" requests)
	tt_check "full accept queue, by owner: -p <server> requests $rp, --comm python3 requests $rc = exchanges completed $ex" \
		eval '[ -n "$aovpid" ] && [ "$rp" = "$ex" ] && [ "$rc" = "$ex" ]'
fi

# ---------------------------------------------------------------- filters
# Two servers (7414, 7415) in two processes, a client of each; three tailtraces at once,
# each selecting one flow by a different filter. Rows of the other flow must not appear.
if only filters; then
	srv 7414 tt-fa-srv --compute const:100
	srv_ready 7414 || tt_fail "loadgen server on 7414 did not start"
	srv 7415 tt-fb-srv --compute const:100
	pid_b=$LAST_SRV
	srv_ready 7415 || tt_fail "loadgen server on 7415 did not start"
	hist_or_fail fport --port 7414 --by port
	hist_or_fail fpid -p "$pid_b" --by port
	hist_or_fail fcomm --comm tt-fa-cli --by comm
	cli_bg tt-fa-cli "$TMP/fa.json" --connect "$TB_SRV4" --port 7414 --rate 100 --conns 2 --duration 4
	ca=$LAST_CLI
	cli_bg tt-fb-cli "$TMP/fb.json" --connect "$TB_SRV6" --port 7415 --rate 100 --conns 2 --duration 4
	cb=$LAST_CLI
	wait "$ca" "$cb"
	sleep 0.3
	tcp_hist_stop fport; tcp_hist_stop fpid; tcp_hist_stop fcomm
	g=$(tcp_groups "$TMP/fport.json" '*')
	n=$(tcp_stage "$TMP/fport.json" rx.stack '^port 7414$' count)
	tt_check "--port 7414: groups [$g] only port 7414 (rx.stack n=$n)" \
		eval '[ "$g" = "port_7414" ] && ge "$n" 100'
	g=$(tcp_groups "$TMP/fpid.json" '*')
	n=$(tcp_stage "$TMP/fpid.json" rx.stack '^port 7415$' count)
	tt_check "-p <server 7415>: groups [$g] only port 7415 (rx.stack n=$n)" \
		eval '[ "$g" = "port_7415" ] && ge "$n" 100'
	g=$(tcp_groups "$TMP/fcomm.json" '*')
	n=$(tcp_stage "$TMP/fcomm.json" rx.stack '^comm tt-fa-cli\[' count)
	tt_check "--comm tt-fa-cli: groups [$g] only that client (rx.stack n=$n)" \
		eval '[[ "$g" =~ ^comm_tt-fa-cli\[[0-9]+\]$ ]] && ge "$n" 100'
fi
