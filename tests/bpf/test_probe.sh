#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `tailtrace probe` against what the kernel really allows, checked by independent means
# (the kernel config, bpftool feature probes, tracefs), and its error paths.
. "$(dirname "$0")/../lib.sh"
tt_require_root

out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$TAILTRACE" probe -j >"$out"
rc=$?
tt_check "probe -j exits $rc (0) and prints JSON" \
	sh -c '[ "$1" -eq 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$2"' _ "$rc" "$out"

hook() { tt_json "$out" "hooks.$1.available"; }
tt_check "tp_btf available (BTF present: $(test -r /sys/kernel/btf/vmlinux && echo yes))" \
	test "$(hook tp_btf)" = "$(test -r /sys/kernel/btf/vmlinux && echo True || echo False)"
tt_check "raw_tp available" test "$(hook raw_tp)" = True
tt_check "uprobe available" test "$(hook uprobe)" = True

# kprobes: the truth is in /sys/kernel/tracing/kprobe_events (absent without CONFIG_KPROBES)
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
if [ -e /sys/kernel/tracing/kprobe_events ]; then want=True; else want=False; fi
tt_check "kprobe reported $(hook kprobe), kernel kprobe_events says $want" test "$(hook kprobe)" = "$want"

# fentry: bpftool's own feature probe of program types does not cover attach; load one
# with bpftool-independent evidence instead: the probe must give an errno when unavailable
f=$(hook fentry)
if [ "$f" = False ]; then
	tt_check "fentry unavailable carries an errno ($(tt_json "$out" hooks.fentry.errno))" \
		test "$(tt_json "$out" hooks.fentry.errno)" -gt 0
else
	# available means a program was attached and fired: the detail says so, there is no
	# errno, and the kernel has what fentry attaches through (ftrace's filter functions)
	d=$(tt_json "$out" hooks.fentry.detail)
	e=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hooks"]["fentry"].get("errno", 0))' "$out")
	tt_check "fentry available: '$d', errno ${e:-none}, ftrace filter functions present" \
		sh -c 'case "$1" in *attached*) ;; *) exit 1;; esac; [ "$2" = 0 ] &&
			[ -s /sys/kernel/tracing/available_filter_functions ]' _ "$d" "$e"
fi

# sockops TX timestamping: the kernel exposes the kfunc in BTF from 6.15 on
if bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null | grep -q "bpf_sock_ops_enable_tx_tstamp"; then
	want=True
else
	want=False
fi
tt_check "sockops TX timestamping reported $(hook sockops_tx_timestamping), kfunc in BTF: $want" \
	test "$(hook sockops_tx_timestamping)" = "$want"
tt_check "tx timestamping ACK callback fired" test "$(tt_json "$out" tx_timestamping_callbacks.ACK)" = "$want"

# every stage has a hook or a reason
tt_check "every stage names its feed" python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [s["stage"] for s in d["stages"]]
assert "tx.qdisc" in names and "tcp.retrans" in names, names
for s in d["stages"]:
    assert s["hook"], s
    assert s["available"] or s["reason"], s
PY

# tracepoints the stages need exist in tracefs too
tt_check "tracepoint list matches tracefs" python3 - "$out" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
for t in d["tracepoints"]:
    g, e = t["name"].split(":")
    assert t["tracefs"] == os.path.isdir(f"/sys/kernel/tracing/events/{g}/{e}"), t
PY

# errors: one line, the documented exit status
check_err() { # desc, want_status, args...
	local desc=$1 want=$2; shift 2
	local err rc
	err=$(${TT_WRAP:-} "$TAILTRACE" "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -eq "$want" ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ -n "$err" ]; then
		tt_ok "$desc: exit $rc, '$err'"
	else
		tt_fail "$desc: exit $rc (want $want), stderr: $err"
	fi
}
check_err "unknown command" 2 frobnicate
check_err "--port 70000" 2 hist --port 70000
check_err "-d -1" 2 hist -d -1
check_err "unknown option" 2 probe --bogus
check_err "unknown device" 2 hist --dev no-such-dev0 -d 1
check_err "no such pid" 2 hist -p 4194000 -d 1
check_err "unknown cgroup" 2 hist --cgroup /no/such/cgroup -d 1
if ! command -v setpriv >/dev/null; then
	tt_skip "without capabilities" "setpriv missing (util-linux)"
else
	# a copy nobody can reach: the checkout may sit under a directory only root can enter
	unpriv=$(mktemp -d /tmp/tt-unpriv.XXXXXX)
	cp "$TAILTRACE" "$unpriv/tailtrace" && chmod 755 "$unpriv" "$unpriv/tailtrace"
	TAILTRACE=$unpriv/tailtrace TT_WRAP="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all" \
		check_err "without capabilities" 1 probe
	rm -rf "$unpriv"
fi
