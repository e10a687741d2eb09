#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# --by pod end to end: a real cgroup v2 tree named like the kubelet's (cgroupfs driver:
# kubepods-*/pod<UID>/<container ID>), a server and client running in the container's
# cgroup, and `tailtrace hist --by pod` must label their traffic with that pod UID and
# container ID, and a process outside with "cgroup N". The same with --cgroup pointing at
# the tree, as the DaemonSet runs it (docs/deploy.md).
#
# Not part of `make test` yet: it fails on a known defect (docs/deploy.md, Known limits):
# a server socket's samples taken in softirq before its process touched it are grouped as
# 'cgroup 0'. The text table also cuts the label to its column, which the greps below do
# not allow for; run it by hand: tools/by-pod-check.sh
set -u
. "$(dirname "$0")/../tests/lib.sh"
tt_require_root

uid=5b3f0c1e-8d2a-4c61-9f7e-0a1b2c3d4e5f
cid=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
top=$mnt/kubepods-tt$$
cg=$top/pod$uid/$cid
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rmdir "$cg" "$top/pod$uid" "$top" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$cg" || { tt_fail "a cgroup under $mnt"; exit 1; }
port=$((20000 + RANDOM % 1000))

# run_traffic: a server and a client in the container's cgroup for $1 seconds
run_traffic() {
	sh -c 'echo $$ > "$1/cgroup.procs"; exec python3 -m http.server --bind 127.0.0.1 "$2"' \
		_ "$cg" "$port" >/dev/null 2>&1 &
	pids+=($!)
	bash -c 'echo $$ > "$1/cgroup.procs"; end=$((SECONDS + $3)); sleep 0.5
		while [ $SECONDS -lt $end ]; do curl -s -o /dev/null "http://127.0.0.1:$2/"; done' \
		_ "$cg" "$port" "$1" &
	pids+=($!)
}

run_traffic 4
"$TAILTRACE" hist --by pod --port "$port" --stage tcp.rtt -d 4 >"$work/hist.txt" 2>"$work/err"
label="pod $uid container ${cid:0:12}"
if grep -qF "$label" "$work/hist.txt"; then
	tt_ok "hist --by pod labels the container's traffic '$label'"
else
	cat "$work/err"; head -30 "$work/hist.txt"
	tt_fail "hist --by pod labels the container's traffic '$label'"
fi
tt_check "no group left as a bare cgroup id for it" bash -c '! grep -q "cgroup [0-9]" "$1"' _ \
	"$work/hist.txt"
# the server runs until killed: kill, then wait (waiting first hung until the timeout)
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
wait "${pids[@]}" 2>/dev/null
pids=()

# with --cgroup: the ids resolve in that tree (paths relative to it still name the pod)
run_traffic 4
"$TAILTRACE" hist --by pod --cgroup "$top" --port "$port" --stage tcp.rtt -d 4 \
	>"$work/hist2.txt" 2>"$work/err2"
if grep -qF "$label" "$work/hist2.txt"; then
	tt_ok "hist --by pod --cgroup TREE labels it too"
else
	cat "$work/err2"; head -30 "$work/hist2.txt"
	tt_fail "hist --by pod --cgroup TREE labels it too"
fi
exit 0
