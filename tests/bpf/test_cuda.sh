#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# --cuda: off-CPU time inside cuStreamSynchronize becomes gpu.wait. A stand-in libcuda
# (tools/cuda-standin) blocks 5 ms per call; a server calls it once per request; the
# per-request gpu.wait distribution must sit at 5 ms and be part of sched.offcpu.
. "$(dirname "$0")/../lib.sh"
tt_require_root

ns=tt-cuda
lib=$TT_BUILD/cuda-standin/libcuda.so.1
srv=$TT_BUILD/cuda-standin/cudasrv
addr=198.19.250.1
port=7100
reqs=300
work=$(mktemp -d)
cleanup() { ip netns pids $ns 2>/dev/null | xargs -r kill 2>/dev/null; ip netns del $ns 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cleanup 2>/dev/null; work=$(mktemp -d)
ip netns add $ns
ip -n $ns link set lo up
ip -n $ns addr add $addr/32 dev lo

client() {
	ip netns exec $ns python3 - "$addr" "$port" "$reqs" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
for _ in range(int(sys.argv[3])):
    s.sendall(b"r" * 64)
    got = 0
    while got < 64:
        got += len(s.recv(64 - got))
s.close()
PY
}

run() { # outfile, tailtrace args...
	local out=$1; shift
	ip netns exec $ns "$srv" "$lib" $addr $port 30 &
	local sp=$!
	TAILTRACE_LIBCUDA=$lib "$TAILTRACE" hist --port $port -j "$@" >"$out" 2>"$out.err" &
	local tp=$!
	# load and attach take seconds on a slow VM (3 s seen): a fixed sleep let the
	# first requests go untraced, and a fixed -d could end before the client did
	tt_wait_attached "$tp" || { kill $sp 2>/dev/null; wait $tp; return 1; }
	client
	kill -INT $tp
	wait $tp
	local rc=$?
	kill $sp 2>/dev/null; wait $sp 2>/dev/null
	return $rc
}

stat() { # file stage key
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [s for s in d["stages"] if s["name"] == sys.argv[2]]
print(sum(r["count"] for r in rows) if sys.argv[3] == "count" else (rows[0][sys.argv[3]] if rows else 0))
PY
}

if run "$work/cuda.json" --cuda --stage gpu.wait --stage sched.offcpu --stage req.latency; then
	tt_ok "hist --cuda ran"
else
	tt_fail "hist --cuda failed: $(cat "$work/cuda.json.err")"
fi
n=$(stat "$work/cuda.json" gpu.wait count)
p50=$(stat "$work/cuda.json" gpu.wait p50_us)
off=$(stat "$work/cuda.json" sched.offcpu p50_us)
lat=$(stat "$work/cuda.json" req.latency count)
tt_check "gpu.wait samples $n for $reqs requests (req.latency $lat)" \
	awk -v n="$n" -v r="$reqs" 'BEGIN { exit !(n >= r - 2 && n <= r) }'
tt_check "gpu.wait p50 ${p50}us vs the stand-in's 5000us (+0..15%)" \
	awk -v v="$p50" 'BEGIN { exit !(v >= 5000 && v <= 5750) }'
tt_check "sched.offcpu p50 ${off}us contains gpu.wait" awk -v o="$off" -v g="$p50" 'BEGIN { exit !(o >= g * 0.97) }'

run "$work/nocuda.json" --stage gpu.wait --stage sched.offcpu
n=$(stat "$work/nocuda.json" gpu.wait count)
off=$(stat "$work/nocuda.json" sched.offcpu p50_us)
tt_check "without --cuda no gpu.wait ($n samples) but the off-CPU time is there (${off}us)" \
	awk -v n="$n" -v o="$off" 'BEGIN { exit !(n == 0 && o >= 5000) }'

# a missing library is a clear usage error
err=$(TAILTRACE_LIBCUDA=/nonexistent/libcuda.so.1 "$TAILTRACE" hist --cuda --stage gpu.wait -d 1 2>&1 >/dev/null); rc=$?
tt_check "missing libcuda: exit $rc, '$err'" test "$rc" -eq 2
