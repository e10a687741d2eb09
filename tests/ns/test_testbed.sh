#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tools/testbed: up/down leave nothing behind (3 rounds, with every fault applied), up and
# down are idempotent, env is machine readable, clear removes every fault, nothing is
# routed out of the namespaces.
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root
tt_testbed_lock
for t in nft tc ip; do
	command -v $t >/dev/null || { tt_skip "$(basename "$0")" "$t missing"; exit 0; }
done
[ -x "$LOADGEN" ] || { tt_fail "loadgen not built ($LOADGEN)"; exit 1; }

TMP=$(mktemp -d)
cleanup() { "$TESTBED" down >/dev/null 2>&1; rm -rf "$TMP"; }
trap cleanup EXIT
"$TESTBED" down >/dev/null 2>&1

# running (not zombie: an exited child waits a moment for its reaper) processes by comm
live_comms() { ps -eo stat=,comm= | awk '$1 !~ /^Z/ {print $2}'; }

snapshot() { # everything the testbed could leave behind, in the root namespace
	{
		echo "## netns"; ip netns list | awk '{print $1}' | sort
		echo "## links"; ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
		echo "## nft"; nft list tables 2>/dev/null | sort
		echo "## qdisc"; tc qdisc show | grep -c . || true
		echo "## procs"; live_comms | grep -E '^(loadgen|tt-hog|tt-bulk-tx|tt-bulk-rx|iperf3)$' | sort
		echo "## state"; ls -d /run/tailtrace-testbed 2>/dev/null
	} 2>/dev/null
}

quick_client() { # addr: a few requests through the router
	ip netns exec tt-cli "$LOADGEN" client --connect "$1" --port 7100 --concurrency 1 \
		--requests 50 --json "$TMP/q.json" >/dev/null 2>&1 &&
		[ "$(tt_json "$TMP/q.json" requests)" = 50 ] && [ "$(tt_json "$TMP/q.json" errors)" = 0 ]
}

before=$(snapshot)
round_ok=1
for round in 1 2 3; do
	"$TESTBED" up >/dev/null 2>&1 || round_ok=0
	eval "$("$TESTBED" env)"
	ip netns exec tt-srv "$LOADGEN" server --listen :: --port 7100 --duration 60 \
		>/dev/null 2>&1 &
	quick_client "$TB_SRV4" || { round_ok=0; echo "# round $round: IPv4 client failed"; }
	quick_client "$TB_SRV6" || { round_ok=0; echo "# round $round: IPv6 client failed"; }
	"$TESTBED" congest --link rtr --rate 50mbit --buffer 32kb --duration 30 >/dev/null 2>&1 || round_ok=0
	"$TESTBED" loss --link srv --percent 0.1 >/dev/null 2>&1 || round_ok=0
	"$TESTBED" cpu --hogs 1 --duration 30 >/dev/null 2>&1 || round_ok=0
	"$TESTBED" slowread >/dev/null 2>&1 || round_ok=0
	sleep 0.3
	n=$(live_comms | grep -cE '^(tt-hog|tt-bulk-tx|tt-bulk-rx)$')
	[ "$n" -ge 3 ] || { round_ok=0; echo "# round $round: only $n fault processes"; }
	"$TESTBED" down >/dev/null 2>&1 || round_ok=0
	after=$(snapshot)
	if [ "$after" != "$before" ]; then
		round_ok=0
		echo "# round $round: left behind:"; diff <(echo "$before") <(echo "$after") | sed 's/^/# /'
	fi
done
tt_check "3 rounds of up, traffic v4+v6, every fault, down: nothing left behind" [ $round_ok = 1 ]

"$TESTBED" up >/dev/null 2>&1
links1=$(for ns in tt-cli tt-rtr tt-srv tt-nbr; do ip -n $ns -o addr show; done | awk '{print $2, $4}')
"$TESTBED" up >/dev/null 2>&1; rc=$?
links2=$(for ns in tt-cli tt-rtr tt-srv tt-nbr; do ip -n $ns -o addr show; done | awk '{print $2, $4}')
[ "$links1" = "$links2" ] || diff <(echo "$links1") <(echo "$links2") | sed 's/^/# /'
tt_check "up twice: second up succeeds and changes nothing" [ "$rc" = 0 -a "$links1" = "$links2" ]

envtxt=$("$TESTBED" env)
keys_ok=1
for k in TB_CLI4 TB_SRV4 TB_NBR4 TB_CLI6 TB_SRV6 TB_NBR6 TB_CLI_DEV TB_SRV_DEV TB_NBR_DEV \
	TB_RTR_CLI_DEV TB_RTR_SRV_DEV TB_RTR_NBR_DEV TB_NS_CLI TB_NS_SRV TB_NS_RTR TB_NS_NBR; do
	echo "$envtxt" | grep -q "\b$k=" || { keys_ok=0; echo "# env lacks $k"; }
done
eval "$envtxt"
addr_ok=1
for a in "$TB_CLI4" "$TB_SRV4" "$TB_NBR4"; do [[ "$a" == 198.1[89].* ]] || addr_ok=0; done
for a in "$TB_CLI6" "$TB_SRV6" "$TB_NBR6"; do [[ "$a" == 2001:db8:* ]] || addr_ok=0; done
ip -n tt-srv -o addr show dev "$TB_SRV_DEV" | grep -q "$TB_SRV4/" || addr_ok=0
ip -n tt-rtr -o link show dev "$TB_RTR_CLI_DEV" >/dev/null 2>&1 || addr_ok=0
tt_check "env is machine readable and names the real addresses and devices" [ "$keys_ok" = 1 -a "$addr_ok" = 1 ]

ok=1
for ns in tt-cli tt-srv tt-nbr tt-rtr; do
	ip -n $ns route get 192.0.2.1 >/dev/null 2>&1 && { ok=0; echo "# $ns routes 192.0.2.1"; }
	ip -n $ns -6 route get 2001:4860::1 >/dev/null 2>&1 && { ok=0; echo "# $ns routes v6 out"; }
done
ip -n tt-rtr link show | grep -q 'tt-rcli' || ok=0
tt_check "no route leaves the namespaces (no default route anywhere)" [ $ok = 1 ]

if command -v ethtool >/dev/null; then
	offl=$(ip netns exec tt-srv ethtool -k tt-srv0 2>/dev/null | grep -cE '^(tcp-segmentation|generic-segmentation|generic-receive)-offload: off')
	tt_check "TSO/GSO/GRO are off on the veth ends (ethtool)" [ "$offl" = 3 ]
else
	tt_check "segmentation offload is off on the veth ends (gso_max_segs 1, no ethtool)" \
		grep -q 'gso_max_segs 1 ' <<<"$(ip -n tt-srv -d link show tt-srv0)"
fi

out=$("$TESTBED" exec srv ip -o addr show dev tt-srv0 2>&1)
tt_check "exec runs a command in a namespace" grep -q "$TB_SRV4" <<<"$out"

"$TESTBED" congest --link srv --rate 30mbit --buffer 48kb --qdisc htb --duration 30 >/dev/null 2>&1
"$TESTBED" loss --link cli --percent 0.5 --ports 7000 >/dev/null 2>&1
"$TESTBED" cpu --hogs 2 --duration 30 >/dev/null 2>&1
"$TESTBED" slowread --read-delay-us 1000 >/dev/null 2>&1
applied=1
ip -n tt-srv link >/dev/null
ip netns exec tt-srv tc qdisc show dev tt-srv0 | grep -q htb || applied=0
ip netns exec tt-srv tc qdisc show dev tt-srv0 | grep -q 'bfifo.*limit 48K\|bfifo.*limit 49152' || applied=0
ip netns exec tt-cli nft list table inet tailtrace_testbed | grep -q 'mod 1000 < 5' || applied=0
eval "$("$TESTBED" env)"
[[ "$TB_CLIENT_OPTS" == *"--read-delay-us 1000"* ]] || applied=0
"$TESTBED" status >"$TMP/status" 2>&1 || applied=0
grep -q "congest:" "$TMP/status" && grep -q "hog-1: pid" "$TMP/status" || applied=0
tt_check "faults apply: htb+bfifo, nft loss rule, hogs, slowread options in env and status" [ $applied = 1 ]

"$TESTBED" clear >/dev/null 2>&1
cleared=1
ip netns exec tt-srv tc qdisc show dev tt-srv0 | grep -qE 'htb|tbf|bfifo' && cleared=0
for ns in tt-cli tt-srv tt-rtr tt-nbr; do
	ip netns exec $ns nft list tables 2>/dev/null | grep -q tailtrace_testbed && cleared=0
done
sleep 0.2
live_comms | grep -qE '^(tt-hog|tt-bulk-tx|tt-bulk-rx)$' && cleared=0
eval "$("$TESTBED" env)"
[ -z "$TB_CLIENT_OPTS" ] || cleared=0
tt_check "clear removes every fault (qdisc, nft table, processes, slowread)" [ $cleared = 1 ]

b0=$(sysctl -n net.core.netdev_budget) w0=$(sysctl -n net.core.dev_weight)
last=$(($(nproc) - 1))
"$TESTBED" rxstarve --cpu "$last" --duration 30 >/dev/null 2>&1
rps() { ip netns exec tt-srv cat /sys/class/net/tt-srv0/queues/rx-0/rps_cpus | tr -d , | sed 's/^0*//'; }
got="rps '$(rps)' budget $(sysctl -n net.core.netdev_budget) weight $(sysctl -n net.core.dev_weight) hog $(ps -eo cls=,comm= | awk '$2 == "tt-rthog" { print $1 }')"
tt_check "rxstarve: RPS onto cpu $last, tiny budgets, a SCHED_FIFO hog ($got)" \
	test "$got" = "rps '$(printf '%x' $((1 << last)))' budget 2 weight 1 hog FF"
"$TESTBED" clear >/dev/null 2>&1
sleep 0.2
got="rps '$(rps)' budget $(sysctl -n net.core.netdev_budget) weight $(sysctl -n net.core.dev_weight) hog $(live_comms | grep -c '^tt-rthog$')"
tt_check "clear undoes rxstarve ($got)" test "$got" = "rps '' budget $b0 weight $w0 hog 0"

"$TESTBED" down >/dev/null 2>&1; rc1=$?
"$TESTBED" down >/dev/null 2>&1; rc2=$?
after=$(snapshot)
tt_check "down twice succeeds and leaves the machine as it was" [ "$rc1" = 0 -a "$rc2" = 0 -a "$after" = "$before" ]
