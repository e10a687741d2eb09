#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tailtrace's self-accounting from the kernel's run statistics (collect/self_cost.h): held
# on from the start to the end of a run and never switched in between (each switch flips a
# host-wide static key and stalls a CPU for milliseconds), the figures against the kernel's
# complete counts, and no child left to hold them once tailtrace is killed. The truth: the
# run counters the kernel keeps for tailtrace's programs (read from /proc/PID/fdinfo of its
# program fds) with kernel.bpf_stats_enabled held on by this test, and the same counters
# with it off.
. "$(dirname "$0")/../lib.sh"
tt_require_root

NS=tt-selfcost
ADDR=198.19.77.1
PORT=7431
W=$(mktemp -d)
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
	ip netns del "$NS" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
ip netns del "$NS" 2>/dev/null
ip netns add "$NS" && ip -n "$NS" link set lo up && ip -n "$NS" addr add "$ADDR/32" dev lo ||
	{ tt_fail "namespace $NS"; exit 1; }
ip netns exec "$NS" "$LOADGEN" server --listen "$ADDR" --port $PORT --compute const:20 \
	--duration 120 >"$W/srv.log" 2>&1 &
pids+=($!)
disown # killed at exit without a job-control line
sleep 0.3

# progs PID: "name runs run_ns" of every BPF program the process holds a fd of
progs() {
	python3 - "$1" <<'PY'
import os, subprocess, json, sys
pid, out = sys.argv[1], {}
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
            continue
        info = dict(l.split(":", 1) for l in open(f"/proc/{pid}/fdinfo/{fd}") if ":" in l)
    except OSError:
        continue
    pid_ = int(info["prog_id"])
    if pid_ in out:
        continue
    name = json.loads(subprocess.run(["bpftool", "-j", "prog", "show", "id", str(pid_)],
                                     capture_output=True, text=True).stdout or "{}").get("name", "")
    out[pid_] = (name, int(info.get("run_cnt", 0)), int(info.get("run_time_ns", 0)))
for name, runs, ns in out.values():
    print(name, runs, ns)
PY
}

# one_run TAG: hist over 5 s of 1000 requests/s, the kernel's counts of its programs over
# the load, then its final JSON
one_run() {
	local tp
	"$TAILTRACE" hist --port $PORT -j -d 60 -i 60 >"$W/$1.json" 2>"$W/$1.err" &
	tp=$!
	pids+=("$tp")
	tt_wait_attached "$tp" || { tt_fail "$1: hist did not attach: $(tail -2 "$W/$1.err")"; return 1; }
	progs "$tp" >"$W/$1.p0"
	ip netns exec "$NS" "$LOADGEN" client --connect "$ADDR" --port $PORT --rate 1000 \
		--conns 4 --duration 5 --json "$W/$1.cli.json" >/dev/null 2>&1
	progs "$tp" >"$W/$1.p1"
	kill -INT "$tp"
	wait "$tp"
	TT_PID=$tp
}

# with the statistics held on by the test: the kernel counts every run
sysctl -qw kernel.bpf_stats_enabled=1
one_run on || exit 1
cmp=$(python3 - "$W/on.p0" "$W/on.p1" "$W/on.json" <<'PY'
import json, sys
def load(p):
    return {l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in open(p)}
p0, p1 = load(sys.argv[1]), load(sys.argv[2])
est = {p["hook"]: p for p in json.load(open(sys.argv[3]))["self"]["programs"]}
ok, words = True, []
for prog, hook in (("tt_tcp_probe", "tcp_probe"), ("tt_tcp_sendmsg", "tcp_sendmsg"),
                   ("tt_net_dev_queue", "net_dev_queue")):
    truth = p1[prog][0] - p0[prog][0]
    e = est.get(hook, {}).get("runs", 0)
    # the figure spans the whole run (a second more than the load, without traffic on the
    # port but with the host's other events), all of it counted
    good = truth > 1000 and truth <= e <= 1.3 * truth
    ok &= good
    words.append("%s %d est %d" % (hook, truth, e))
print(("ok " if ok else "bad ") + ", ".join(words))
PY
)
tt_check "runs counted within 0/+30 % of the kernel's counts over the load: $cmp" eval '[ "${cmp%% *}" = ok ]'

# without: the kernel counts only while tailtrace has them on, which is the whole run
sysctl -qw kernel.bpf_stats_enabled=0
one_run off || exit 1
share=$(python3 - "$W/on.p0" "$W/on.p1" "$W/on.cli.json" "$W/off.p0" "$W/off.p1" "$W/off.cli.json" <<'PY'
import json, sys
def runs(p):
    return {l.split()[0]: int(l.split()[1]) for l in open(p)}
def reqs(p):
    return json.load(open(p))["requests"]
per_req = (runs(sys.argv[2])["tt_tcp_probe"] - runs(sys.argv[1])["tt_tcp_probe"]) / reqs(sys.argv[3])
seen = runs(sys.argv[5])["tt_tcp_probe"] - runs(sys.argv[4])["tt_tcp_probe"]
share = seen / (per_req * reqs(sys.argv[6]))
print(("ok" if 0.9 <= share <= 1.1 else "bad") + " %.3f" % share)
PY
)
# (switched off and on in between, each switch a static key flip that stalls a CPU for
# milliseconds, they would count a share: 0.1 of all when they were on 100 ms a second)
tt_check "the statistics are on the whole run, never switched in between (tcp_probe runs counted: ${share#* } of all, 0.9-1.1)" \
	eval '[ "${share%% *}" = ok ]'

# tailtrace killed outright: the statistics fd is its own, closed by the kernel at its
# exit; no child process is left holding them
"$TAILTRACE" hist --port $PORT -j -d 60 >/dev/null 2>"$W/kill.err" &
tp=$!
pids+=("$tp")
if tt_wait_attached "$tp"; then
	kids=$(pgrep -P "$tp" | tr '\n' ' ')
	kill -9 "$tp"
	wait "$tp" 2>/dev/null
	tt_check "tailtrace runs no child process that could outlive it (children: ${kids:-none})" \
		test -z "$kids"
else
	tt_fail "hist did not attach: $(tail -2 "$W/kill.err")"
fi
