#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The harness's own check, run inside a guest (make kernels-check): what the tests rely on
# there, as TAP lines. Namespaces and veth with 198.18.0.0/30 only, as every test here.
set -euo pipefail

n=0 failed=0
ok() {
	n=$((n + 1))
	echo "ok $n - $*"
}
check() { # DESC CMD...: one line from CMD's status; CMD's output only when it failed
	local desc=$1 out
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		sed 's/^/#   /' <<<"$out"
		failed=$((failed + 1))
	fi
}
yesno() { if "$@" 2>/dev/null; then echo yes; else echo no; fi; }

echo "# kernel $(uname -r), $(nproc) CPUs"
check "BTF at /sys/kernel/btf/vmlinux" test -s /sys/kernel/btf/vmlinux
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
	echo "# $d: events/ $(yesno test -d $d/events)," \
		"available_filter_functions $(yesno grep -q . $d/available_filter_functions)," \
		"kprobe_events $(yesno test -e $d/kprobe_events)"
done
check "tracefs events/tcp" test -d /sys/kernel/tracing/events/tcp
kprobe() {
	local t=/sys/kernel/tracing
	echo 'p:tt_test tcp_sendmsg' >>$t/kprobe_events
	test -d $t/events/kprobes/tt_test
	echo '-:tt_test' >>$t/kprobe_events
	! test -d $t/events/kprobes/tt_test
}
check "kprobe p:tt_test tcp_sendmsg created and removed" kprobe
check "cgroup2 mounted" grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts
check "bpffs mounted" grep -q ' /sys/fs/bpf bpf ' /proc/mounts

cleanup() {
	ip netns del tt-a 2>/dev/null || true
	ip netns del tt-b 2>/dev/null || true
}
trap cleanup EXIT
check "two namespaces" sh -c 'ip netns add tt-a && ip netns add tt-b'
check "veth pair between them" ip link add tt-va netns tt-a type veth peer name tt-vb netns tt-b
check "addresses and links up" sh -c '
	ip -n tt-a addr add 198.18.0.1/30 dev tt-va && ip -n tt-b addr add 198.18.0.2/30 dev tt-vb &&
	ip -n tt-a link set tt-va up && ip -n tt-b link set tt-vb up &&
	ip -n tt-a link set lo up && ip -n tt-b link set lo up'
check "ping 198.18.0.2 three times" ip netns exec tt-a ping -c 3 -W 5 198.18.0.2
check "tbf qdisc" ip netns exec tt-a tc qdisc add dev tt-va root tbf rate 10mbit burst 10k latency 50ms
check "htb qdisc" ip netns exec tt-b sh -c 'tc qdisc add dev tt-vb root handle 1: htb default 1 &&
	tc class add dev tt-vb parent 1: classid 1:1 htb rate 10mbit'
check "netem qdisc" ip netns exec tt-a tc qdisc replace dev tt-va root netem delay 1ms
check "clsact" ip netns exec tt-b tc qdisc add dev tt-vb clsact
check "ifb + mirred" ip netns exec tt-b sh -c 'ip link add tt-ifb type ifb && ip link set tt-ifb up &&
	tc filter add dev tt-vb ingress matchall action mirred egress redirect dev tt-ifb'
check "nftables numgen" ip netns exec tt-a nft -f - <<'EOF'
table inet tt {
	chain out {
		type filter hook output priority 0;
		ip daddr 198.18.0.2 numgen random mod 100 < 1 drop
	}
}
EOF
check "ping through the qdiscs and the nft rule" ip netns exec tt-a ping -c 2 -W 5 198.18.0.2
check "ss" ss -tan
check "loadgen --help" sh -c '"$TT_BUILD/loadgen" --help 2>&1 | grep -q usage'
check "tailtrace --version" "$TT_BUILD/tailtrace" --version
echo "# $("$TT_BUILD/tailtrace" --version)"
echo "1..$n"
[ "$failed" -eq 0 ]
