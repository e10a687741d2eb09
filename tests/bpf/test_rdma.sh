#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# RDMA verbs tracing against the stand-in provider (tools/rdma): the rdma.wr histogram must
# match the application's own per-WR timings (count and error counts exact, p50/p99 within
# 5 %) whichever way the data-path functions were found (ops table of a live context,
# explicit offset, .symtab symbol, debug file by build-id, MiniDebugInfo); completion-channel wake-ups, poll sampling, fabricated
# counters, bad input and clean detach. Needs root.
. "$(dirname "$0")/../lib.sh"
tt_require_root

RDMA_DIR=$TT_BUILD/rdma
APP=$RDMA_DIR/rdma_app
LIB=$RDMA_DIR/libttstandin.so
LIB_FULL=$RDMA_DIR/libttstandin.full.so
for f in "$TAILTRACE" "$APP" "$LIB" "$LIB_FULL"; do
	if [ ! -x "$f" ] && [ ! -f "$f" ]; then
		tt_fail "build artefact $f missing (make all)"
		exit 1
	fi
done
mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
W=$(mktemp -d /tmp/tt_rdma.XXXXXX)
APP_PID=
TT_PID=
SRV_PID=
cleanup() {
	[ -n "$TT_PID" ] && kill "$TT_PID" 2>/dev/null
	[ -n "$APP_PID" ] && kill "$APP_PID" 2>/dev/null
	[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
	wait 2>/dev/null
	[ -n "${TT_KEEP:-}" ] && echo "# kept $W" || rm -rf "$W"
}
trap cleanup EXIT

# wait_for FILE PATTERN: up to 10 s for a line in a file
wait_for() {
	for _ in $(seq 200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# capeff PID: the effective capabilities (hex) of a running tailtrace
capeff() { awk '/^CapEff:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
# caps_within HEX MASK: nonempty HEX with no bit outside MASK. After attach an RDMA session
# keeps CAP_BPF (39), CAP_PERFMON (38), CAP_SYS_PTRACE (19), CAP_DAC_READ_SEARCH (2) without
# -p, and CAP_SYS_NICE (23) where RLIMIT_NICE cannot be raised; never CAP_SYS_ADMIN (21)
CAPS_P=$(((1 << 39) | (1 << 38) | (1 << 19) | (1 << 23)))
CAPS_ALL=$((CAPS_P | (1 << 2)))
caps_within() { [ -n "$1" ] && (((0x$1 & ~$2) == 0)) && (((0x$1 >> 21 & 1) == 0)); }

# run_scenario NAME "APP ARGS" "TAILTRACE ARGS" [WAIT_PATTERN]: starts the app paused
# before opening the device, starts tailtrace on it, lets the app open the device, waits
# for WAIT_PATTERN on tailtrace's stderr (the data path attached), lets it post, and
# collects $W/NAME.app.json, $W/NAME.tt.json (last line = total), $W/NAME.err.
run_scenario() {
	local name=$1 app_args=$2 tt_args=$3 pattern=${4:-"poll_cq at"} pre=${5:-}
	rm -f "$W/go-open" "$W/go-post"
	env $pre "$APP" $app_args --go-open "$W/go-open" --go-post "$W/go-post" \
		--out "$W/$name.app.json" &
	APP_PID=$!
	"$TAILTRACE" rdma -p "$APP_PID" $tt_args -j >"$W/$name.tt.json" 2>"$W/$name.err" &
	TT_PID=$!
	wait_for "$W/$name.err" "watching\|poll_cq at" || echo "# $name: no watching line"
	touch "$W/go-open"
	wait_for "$W/$name.err" "$pattern" || echo "# $name: '$pattern' never seen"
	capeff "$TT_PID" >"$W/$name.capeff"
	touch "$W/go-post"
	wait "$APP_PID"; local arc=$?
	APP_PID=
	wait "$TT_PID"; local trc=$?
	TT_PID=
	[ "$arc" -eq 0 ] && [ "$trc" -eq 0 ] && [ -s "$W/$name.tt.json" ] || {
		echo "# $name: app rc $arc, tailtrace rc $trc"; sed 's/^/# /' "$W/$name.err"
		return 1
	}
}

# compare NAME TOL: tailtrace's total vs the app's own numbers
compare() {
	python3 - "$W/$1.app.json" "$W/$1.tt.json" "$2" <<'EOF'
import json, sys
app = json.load(open(sys.argv[1]))
tt = [json.loads(l) for l in open(sys.argv[2]) if l.strip()][-1]
tol = float(sys.argv[3])
ok = True
def check(what, cond):
    global ok
    print("# %-40s %s" % (what, "ok" if cond else "MISMATCH"))
    ok &= bool(cond)
a, t = app["wr"], tt["wr_all"]
check("count %d == app %d" % (t["count"], a["count"]), t["count"] == a["count"])
for q in ("p50_ns", "p99_ns"):
    d = abs(t[q] - a[q]) / a[q]
    check("%s %d vs app %d (%.1f%%)" % (q, t[q], a[q], 100 * d), d <= tol)
errs = {}
for e in tt["errors"]:
    errs[str(e["status"])] = errs.get(str(e["status"]), 0) + e["count"]
check("errors %s == app %s" % (errs, app["errors"]), errs == app["errors"])
# per QP: counts exact, p99 within tolerance
for q in app["per_qp"]:
    (qpn, d), = q.items()
    rows = [r for r in tt["wr"] if r["qp"] == int(qpn)]
    n = sum(r["count"] for r in rows)
    check("qp %s count %d == app %d" % (qpn, n, d["count"]), n == d["count"])
l = tt["loss"]
check("unmatched %d, evicted %d" % (l["unmatched"], l["inflight_evicted"]),
      l["unmatched"] == 0 and l["inflight_evicted"] == 0)
check("unsignaled %d == app %d" % (l["unsignaled"], app["unsignaled"]),
      l["unsignaled"] == app["unsignaled"])
sys.exit(0 if ok else 1)
EOF
}

how_of() { # NAME FN -> how the target was found
	python3 -c 'import json,sys
tt = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
print(",".join(sorted(set(t["how"] for t in tt["targets"] if t["fn"] == sys.argv[2]))))' \
		"$W/$1.tt.json" "$2"
}

# file offset of a .symtab function (unstripped copy; strip does not move code)
file_offset() {
	python3 - "$LIB_FULL" "$1" <<'EOF'
import subprocess, sys
lib, sym = sys.argv[1], sys.argv[2]
va = [int(l.split()[0], 16) for l in subprocess.run(["nm", lib], capture_output=True,
      text=True).stdout.splitlines() if l.split()[-1:] == [sym]]
for l in subprocess.run(["readelf", "-lW", lib], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if va and f[:1] == ["LOAD"]:
        off, vaddr, memsz = int(f[1], 16), int(f[2], 16), int(f[5], 16)
        if vaddr <= va[0] < vaddr + memsz:
            print("0x%x" % (va[0] - vaddr + off))
            break
EOF
}

APP_ARGS="--wrs 4000 --qps 2 --depth 8 --scale 3 --errors-every 50 --recv-every 7 --unsignaled-every 11"

# 1. ops-table path: libttstandin.so has no .symtab, its post/poll functions are static
if run_scenario ops "$APP_ARGS" "--rdma-full"; then
	tt_check "ops-table path: rdma.wr matches the app (count, errors exact; p50/p99 +-5%)" \
		compare ops 0.05
	for fn in post_send post_recv poll_cq; do
		h=$(how_of ops $fn)
		tt_check "ops-table path found $fn ($h)" [ "$h" = "ops-table" ]
	done
	# the data path attached after the drop (the app opened its device then), so with
	# CAP_SYS_ADMIN gone: where the kernel asks it of the uprobe PMU, through tracefs
	tt_check "rdma -p: after attach CapEff $(cat "$W/ops.capeff") holds no CAP_SYS_ADMIN, no CAP_DAC_READ_SEARCH" \
		caps_within "$(cat "$W/ops.capeff")" "$CAPS_P"
	tt_check "rdma: no uprobe event left in tracefs" \
		sh -c '! grep -q "tailtrace_" /sys/kernel/tracing/uprobe_events 2>/dev/null'
else
	tt_fail "ops-table scenario ran"
fi

# 2. explicit offsets (ROLE=LIB:0xOFFSET): no discovery needed for the data path
PS=$(file_offset si_post_send) PR=$(file_offset si_post_recv) PC=$(file_offset si_poll_cq)
echo "# offsets: post_send $PS post_recv $PR poll_cq $PC"
if [ -n "$PS" ] && [ -n "$PC" ] && run_scenario offset "$APP_ARGS" \
	"--rdma-full --rdma-probe post_send=$LIB:$PS --rdma-probe post_recv=$LIB:$PR --rdma-probe poll_cq=$LIB:$PC" \
	"context"; then
	tt_check "explicit offset path: rdma.wr matches the app" compare offset 0.05
	tt_check "explicit offset path used for poll_cq" [ "$(how_of offset poll_cq)" = "--rdma-probe" ]
	tt_check "explicit offsets suppress ops-table attachment" \
		[ "$(how_of offset post_send)" = "--rdma-probe" ]
else
	tt_fail "explicit offset scenario ran"
fi

# 3. symbol path: the unstripped build preloaded under the same soname
if run_scenario symbol "$APP_ARGS" "--rdma-full" "poll_cq at" "LD_PRELOAD=$LIB_FULL"; then
	tt_check "symbol path: rdma.wr matches the app" compare symbol 0.05
	tt_check "symbol path found poll_cq by .symtab" [ "$(how_of symbol poll_cq)" = "symbol" ]
else
	tt_fail "symbol scenario ran"
fi

# 4. completion channel: rdma.cq_event, one sample per blocking ibv_get_cq_event
if run_scenario event "--mode event --wrs 1500 --qps 2 --depth 2 --scale 3" "--rdma-full"; then
	tt_check "event mode: rdma.wr matches the app" compare event 0.05
	tt_check "rdma.cq_event: calls == app's ibv_get_cq_event count, wake-up <= event->return" \
		python3 - "$W/event.app.json" "$W/event.tt.json" <<'EOF'
import json, sys
app = json.load(open(sys.argv[1]))
tt = [json.loads(l) for l in open(sys.argv[2]) if l.strip()][-1]
calls = tt["loss"]["cq_event_calls"]
n = sum(r["count"] for r in tt["cq_event"])
p50 = max([r["p50_ns"] for r in tt["cq_event"]] or [0])
print("# calls %d (app %d), samples %d, immediate %d, p50 %d ns (app event->return p50 %d)"
      % (calls, app["cq_event"]["count"], n, tt["loss"]["cq_event_immediate"], p50,
         app["cq_event"]["p50_ns"]))
ok = calls == app["cq_event"]["count"] and n + tt["loss"]["cq_event_immediate"] == calls
ok &= n > calls * 0.5 and 0 < p50 <= app["cq_event"]["p50_ns"] * 1.05 + 2000
sys.exit(0 if ok else 1)
EOF
else
	tt_fail "event scenario ran"
fi

# 5. default sampling: poll side traced 20 % of the time, samples stay faithful
if run_scenario sampled "--wrs 24000 --qps 2 --depth 8 --scale 3" ""; then
	tt_check "sampled poll side: about a duty share of completions, plausible p50" \
		python3 - "$W/sampled.app.json" "$W/sampled.tt.json" <<'EOF'
import json, sys
app = json.load(open(sys.argv[1]))
tt = [json.loads(l) for l in open(sys.argv[2]) if l.strip()][-1]
a, t = app["wr"], tt["wr_all"]
d = abs(t["p50_ns"] - a["p50_ns"]) / a["p50_ns"]
print("# duty %.2f: %d of %d completions sampled, p50 %d vs %d (%.1f%%)"
      % (tt["poll_duty"], t["count"], a["count"], t["p50_ns"], a["p50_ns"], 100 * d))
# the sampled WRs are measured exactly, but the windows slow the host (probe effect,
# docs/rdma.md): 3 % apart on a quiet 2-vCPU VM, 25 % while other test runs shared it
share = t["count"] / a["count"]
sys.exit(0 if tt["poll_duty"] < 1 and 0.05 < share < 0.5 and d <= 0.35 else 1)
EOF
else
	tt_fail "sampled scenario ran"
fi

# 5b. every WR with one wr_id, as perftest posts them, each queue completing in order as
# RC hardware does. --rdma-full: every WR timed against its own post (counts exact, p50/p99
# within 5 %). Default sampling: a completion seen in a window after a gap must not be
# matched to a post of the same wr_id from before the gap (phantom tails): max not above
# the app's; the sampled p50, p90 and p99 each fall where they should in the app's own
# distribution (its rank there, from the app's per-mille quantiles and the histogram
# bucket's width, within 5, 5 and 2 points: the sample holds about 900 WRs, so the
# binomial spread is 1.7, 1 and 0.3 points; a distance in value would not do, as the
# planned delays have gaps right at p90 and p99); and every signaled WR accounted for
# (timed, completed unseen, ambiguous or still in flight)
SAME_ARGS="--wrs 6000 --qps 2 --depth 1 --same-wrid --errors-every 50 --recv-every 7 --unsignaled-every 11"
if run_scenario samefull "$SAME_ARGS" "--rdma-full"; then
	tt_check "one wr_id for every WR, --rdma-full: rdma.wr matches the app" compare samefull 0.05
else
	tt_fail "one-wr_id --rdma-full scenario ran"
fi
if run_scenario samesampled "$SAME_ARGS" ""; then
	tt_check "one wr_id for every WR, sampled: no latency that did not happen" \
		python3 - "$W/samesampled.app.json" "$W/samesampled.tt.json" <<'EOF'
import json, sys
app = json.load(open(sys.argv[1]))
tt = [json.loads(l) for l in open(sys.argv[2]) if l.strip()][-1]
import bisect
a, t, tm, l = app["wr"], tt["wr_all"], tt["timing"], tt["loss"]
pm = app["wr_permille"]
def rank(x):  # the share of the app's WRs at or below x
    return max(bisect.bisect_right(pm, x) - 1, 0) / 1000
acc = tm["timed"] + tm["completed_unseen"] + tm["ambiguous"] + tm["in_flight_now"]
print("# duty %.2f: %d of %d timed, max %d vs app %d" % (tt["poll_duty"], tm["timed"],
      app["completed"], t["max_ns"], a["max_ns"]))
ranks_ok = True
for q, share, tol in (("p50_ns", 0.50, 0.05), ("p90_ns", 0.90, 0.05), ("p99_ns", 0.99, 0.02)):
    w = 1 << max(t[q].bit_length() - 1 - 4, 0)  # a bucket is 1/16 of its power of two
    lo, hi = rank(t[q] - w // 2), rank(t[q] + w // 2)
    off = 0 if lo <= share <= hi else min(abs(lo - share), abs(hi - share))
    ranks_ok &= off <= tol
    print("# %s %d vs app %d: the app's p%.1f-p%.1f (%.1f points off, within %.0f)"
          % (q, t[q], a[q], 100 * lo, 100 * hi, 100 * off, 100 * tol))
print("# signaled %d = timed %d + completed unseen %d + ambiguous %d + in flight %d (%d)"
      % (tm["signaled_posted"], tm["timed"], tm["completed_unseen"], tm["ambiguous"],
         tm["in_flight_now"], acc))
ok = tm["signaled_posted"] == app["completed"] and acc == tm["signaled_posted"]
ok &= l["inflight_evicted"] == 0 and l["unmatched"] == 0
ok &= 0.05 < tm["timed"] / app["completed"] < 0.5
ok &= ranks_ok and t["max_ns"] <= a["max_ns"]
sys.exit(0 if ok else 1)
EOF
else
	tt_fail "one-wr_id sampled scenario ran"
fi

# 6. counters from a fabricated tree, aligned with the windows
R=$W/root
mkdir -p "$R/sys/class/infiniband/mlx5_0/ports/1/hw_counters" \
	"$R/sys/class/infiniband/mlx5_0/ports/1/counters" \
	"$R/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs" "$R/ethtool"
HW=$R/sys/class/infiniband/mlx5_0/ports/1/hw_counters
for c in np_cnp_sent rp_cnp_handled np_ecn_marked_roce_packets out_of_sequence \
	 packet_seq_err local_ack_timeout_err; do echo 0 >"$HW/$c"; done
echo 0 >"$R/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait"
echo eth9 >"$R/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0"
printf 'NIC statistics:\n     rx_prio3_pause: 0\n     rx_prio3_pause_duration: 0\n' >"$R/ethtool/eth9"
rm -f "$W/go-open" "$W/go-post"
"$APP" --wrs 400000 --scale 3 --go-open "$W/go-open" --go-post "$W/go-post" --out /dev/null &
APP_PID=$!
"$TAILTRACE" rdma -p "$APP_PID" --sysfs-root "$R" -i 0.5 --count 6 -j >"$W/cnt.json" 2>"$W/cnt.err" &
TT_PID=$!
touch "$W/go-open" "$W/go-post"
wait_lines() { # FILE N: up to 10 s for N report lines
	for _ in $(seq 200); do
		[ "$(grep -c . "$1" 2>/dev/null)" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
# bump counters right after a report so each change lands in one known window
wait_lines "$W/cnt.json" 1
echo 250 >"$HW/np_cnp_sent"
printf 'NIC statistics:\n     rx_prio3_pause: 40\n     rx_prio3_pause_duration: 900\n' >"$R/ethtool/eth9"
wait_lines "$W/cnt.json" 3
echo 7 >"$HW/out_of_sequence"
echo 3 >"$HW/local_ack_timeout_err"
wait "$TT_PID"; trc=$?
TT_PID=
kill "$APP_PID" 2>/dev/null; wait "$APP_PID" 2>/dev/null; APP_PID=
tt_check "counters: exit 0 with --sysfs-root" [ "$trc" -eq 0 ]
tt_check "counters: congestion window then transport window, total deltas exact" \
	python3 - "$W/cnt.json" <<'EOF'
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
calls = [d["counters"]["call"] for d in docs if d["type"] == "interval"]
tot = docs[-1]["counters"]
deltas = {x["name"]: x["delta"] for x in tot["deltas"]}
print("# interval calls:", calls, "total deltas:", deltas)
ok = "congestion" in calls and "transport" in calls and calls[0] == "none"
ok &= calls.index("congestion") < calls.index("transport")
ok &= deltas.get("np_cnp_sent") == 250 and deltas.get("rx_prio3_pause") == 40
ok &= deltas.get("out_of_sequence") == 7 and tot["call"] == "congestion+transport"
sys.exit(0 if ok else 1)
EOF
echo garbage >"$HW/packet_seq_err"
"$TAILTRACE" rdma --sysfs-root "$R" --rdma-probe "post_send=$LIB:${PS:-0x0}" -d 0.3 >"$W/garb.out" 2>"$W/garb.err"
rc=$?
tt_check "garbage counter value: warning, exit 0" \
	sh -c "[ $rc -eq 0 ] && grep -q 'packet_seq_err: not a counter value' '$W/garb.out'"

# 6b. explain --rdma: the verdict of each window follows the evidence injected into it.
# The app's delay mix always has a tail (p99 ~20x p50); a window whose congestion counters
# rose is congestion, one whose transport counters rose is transport, one with neither is
# unattributed; with completions failing on retries (--errors-every) it is transport.
explain_docs() { # FILE -> one JSON document per line (explain -j prints them indented)
	python3 -c 'import json,sys
t=open(sys.argv[1]).read(); d=json.JSONDecoder(); i=0
while True:
    while i < len(t) and t[i].isspace(): i += 1
    if i >= len(t): break
    o, i = d.raw_decode(t, i); print(json.dumps(o))' "$1"
}
wait_docs() { # FILE N: up to 10 s for N explain reports
	for _ in $(seq 200); do
		[ "$(grep -c '"rdma": \[' "$1" 2>/dev/null)" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
for c in np_cnp_sent packet_seq_err; do echo 0 >"$HW/$c"; done
rm -f "$W/go-open" "$W/go-post"
"$APP" --wrs 400000 --scale 3 --go-open "$W/go-open" --go-post "$W/go-post" --out /dev/null &
APP_PID=$!
"$TAILTRACE" explain --rdma --rdma-full -p "$APP_PID" --sysfs-root "$R" -i 0.7 -d 4.5 -j \
	>"$W/ex.json" 2>"$W/ex.err" &
TT_PID=$!
wait_for "$W/ex.err" "watching\|poll_cq at"
touch "$W/go-open" "$W/go-post"
wait_docs "$W/ex.json" 2
echo 300 >"$HW/np_cnp_sent"
wait_docs "$W/ex.json" 4
echo 9 >"$HW/packet_seq_err"
wait "$TT_PID"; trc=$?
TT_PID=
kill "$APP_PID" 2>/dev/null; wait "$APP_PID" 2>/dev/null; APP_PID=
explain_docs "$W/ex.json" >"$W/ex.lines" 2>>"$W/ex.err"
tt_check "explain --rdma: exit 0" [ "$trc" -eq 0 ]
tt_check "explain --rdma: unattributed, then congestion, then transport, as the counters rose" \
	python3 - "$W/ex.lines" <<'EOF2'
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
seq = []
for d in docs:
    v = [x for x in d["rdma"] if x["family"] == "verbs"]
    seq.append((v[0]["class"], v[0]["fabric"]["call"], v[0]["count"], v[0]["where"]) if v else None)
print("# windows:", seq)
cls = [x[0] for x in seq if x]
ok = len(cls) >= 5 and "congestion" in cls and "transport" in cls
if ok:
    # the window right after a bump carries it; the others are unattributed (the first
    # may have too few transfers for a verdict)
    ic, it = cls.index("congestion"), cls.index("transport")
    ok = ic < it and all(c in ("unattributed", "none") for c in cls[:ic])
    ok = ok and all(c == "unattributed" for c in cls[ic + 1:it])
    ok = ok and all(x[3].startswith("pid ") for x in seq if x and x[0] != "none")
sys.exit(0 if ok else 1)
EOF2
rm -f "$W/go-open" "$W/go-post"
"$APP" --wrs 400000 --scale 3 --errors-every 50 --go-open "$W/go-open" --go-post "$W/go-post" \
	--out /dev/null &
APP_PID=$!
"$TAILTRACE" explain --rdma --rdma-full -p "$APP_PID" -d 2.5 -j >"$W/exr.json" 2>"$W/exr.err" &
TT_PID=$!
wait_for "$W/exr.err" "watching\|poll_cq at"
touch "$W/go-open" "$W/go-post"
sleep 1
EXR_CAPS=$(capeff "$TT_PID")
wait "$TT_PID"; trc=$?
TT_PID=
kill "$APP_PID" 2>/dev/null; wait "$APP_PID" 2>/dev/null; APP_PID=
tt_check "explain --rdma: completions failing on retries make the tail transport" \
	python3 -c 'import json,sys
d = json.loads(open(sys.argv[1]).read())
v = [x for x in d["rdma"] if x["family"] == "verbs"][0]
print("# %s: %d transfers, %d failed, %d on retries; %s" % (v["class"], v["count"], v["failed"], v["retry_failed"], v["rule"]))
sys.exit(0 if v["class"] == "transport" and v["retry_failed"] > 0 and v["failed"] > v["retry_failed"] else 1)' "$W/exr.json"
tt_check "explain --rdma -p: while tracing CapEff $EXR_CAPS holds no CAP_SYS_ADMIN" \
	caps_within "$EXR_CAPS" "$CAPS_P"
"$TAILTRACE" explain --rdma --sysfs-root /nonexistent/root -d 1 >"$W/e.out" 2>"$W/e.err"
rc=$?
tt_check "explain --rdma --sysfs-root not a directory: one error line, exit 2" \
	sh -c "[ $rc -eq 2 ] && [ \$(grep -c 'tailtrace: error:' '$W/e.err') -eq 1 ]"

# 7. bad input: one error line and the documented exit status
expect_err() { # DESC RC ARGS...
	local desc=$1 want=$2; shift 2
	"$TAILTRACE" rdma "$@" >"$W/e.out" 2>"$W/e.err"
	local rc=$?
	local n; n=$(grep -c 'tailtrace: error:' "$W/e.err")
	if [ "$rc" -eq "$want" ] && [ "$n" -eq 1 ]; then tt_ok "$desc (exit $rc)"
	else tt_fail "$desc (exit $rc, want $want; $(head -c 300 "$W/e.err"))"; fi
}
expect_err "bad spec" 2 --rdma-probe nocolon -d 1
expect_err "offset without role" 2 --rdma-probe "$LIB:0x1234" -d 1
expect_err "missing library" 2 --rdma-probe /nonexistent/libx.so:x_post_send -d 1
expect_err "missing symbol in a stripped library" 2 --rdma-probe "$LIB:si_post_send" -d 1
expect_err "pid gone" 1 -p 4194000 -d 1
expect_err "--sysfs-root not a directory" 2 --sysfs-root /nonexistent/root -d 1
expect_err "unknown option" 2 --port 80

# 8. nothing left attached once tailtrace is gone: the programs it held (prog_id in its
# fdinfo, so runs by other users of this machine do not count) are unloaded
rm -f "$W/go-open" "$W/go-post"
"$APP" --wrs 200000 --go-open "$W/go-open" --go-post "$W/go-post" --out /dev/null &
APP_PID=$!
"$TAILTRACE" rdma -p "$APP_PID" >/dev/null 2>"$W/det.err" &
TT_PID=$!
wait_for "$W/det.err" watching
touch "$W/go-open" "$W/go-post"
wait_for "$W/det.err" "poll_cq at"
ids=$(grep -h '^prog_id:' /proc/"$TT_PID"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u)
nperf=$(ls -l /proc/"$TT_PID"/fd 2>/dev/null | grep -c 'perf_event')
kill -INT "$TT_PID"; wait "$TT_PID"; trc=$?; TT_PID=
kill "$APP_PID" 2>/dev/null; wait "$APP_PID" 2>/dev/null; APP_PID=
# the kernel frees programs after an RCU grace period, from a work queue: allow it 2 s
for _ in $(seq 20); do
	left=0
	for id in $ids; do bpftool prog show id "$id" >/dev/null 2>&1 && left=$((left + 1)); done
	[ "$left" -eq 0 ] && break
	sleep 0.1
done
echo "# held $(echo $ids | wc -w) programs and $nperf perf-event (uprobe) fds; $left still loaded"
tt_check "Ctrl-C: exit 0, every program it held unloaded" \
	sh -c "[ $trc -eq 0 ] && [ -n '$ids' ] && [ $nperf -gt 0 ] && [ $left -eq 0 ]"

# 9. a process that set up its QPs before tailtrace started and now only posts and polls
# inline (no verbs call is made again): its live context is found in its memory. The app
# warms up with SEND_IMM WRs until tailtrace has attached, then runs the measured WRs.
# attach_late NAME CMD...: runs CMD (the app) for 1 s, starts tailtrace on it (with
# $TT_EXTRA's options), lets the
# app go on once the data path is attached; $W/NAME.attach_ms is tailtrace's start to
# attachment
attach_late() {
	local name=$1 t0; shift
	"$@" $APP_ARGS --warm-until "$W/$name.mark" --out "$W/$name.app.json" &
	APP_PID=$!
	sleep 1
	t0=$(date +%s%N)
	"$TAILTRACE" rdma -p "$APP_PID" --rdma-full -i 1 -j ${TT_EXTRA:-} >"$W/$name.tt.json" \
		2>"$W/$name.err" &
	TT_PID=$!
	wait_for "$W/$name.err" "poll_cq at" || echo "# $name: poll_cq never attached"
	echo $((($(date +%s%N) - t0) / 1000000)) >"$W/$name.attach_ms"
	touch "$W/$name.mark"
	wait "$APP_PID"; local arc=$?
	APP_PID=
	wait "$TT_PID"; local trc=$?
	TT_PID=
	sed 's/^/# /' "$W/$name.err" | grep -v "sampled\|hooks" | head -8
	[ "$arc" -eq 0 ] && [ "$trc" -eq 0 ] && [ -s "$W/$name.tt.json" ]
}

# compare_late NAME: count of the measured WRs exact (the warm-up WRs are SEND_IMM),
# p50/p99 within 5 %, attached within 2 s with WRs timed in the first interval, every
# unmatched completion one posted before the probes attached, and the warm-up WRs timed
# and in flight at attach as the app's own post and reap times of each say
compare_late() {
	python3 - "$W/$1.app.json" "$W/$1.tt.json" "$(cat "$W/$1.attach_ms")" <<'PY'
import json, sys
app = json.load(open(sys.argv[1]))
docs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
tt, first, attach_ms = docs[-1], docs[0], int(sys.argv[3])
ok = True
def check(what, cond):
    global ok
    print("# %-50s %s" % (what, "ok" if cond else "MISMATCH"))
    ok &= bool(cond)
a = app["wr"]
n = sum(r["count"] for r in tt["wr"] if r["opcode"] != "SEND_IMM")
check("measured WRs %d == app %d (warm-up: %d traced)" % (n, a["count"],
      tt["wr_all"]["count"] - n), n == a["count"])
# per QP and opcode: the same WRs on both sides (the warm-up ones traced after the
# attachment are SEND_IMM rows), so count exact and p50/p99 within 5 %
worst = 0
for row in app["per_op"]:
    (key, d), = row.items()
    qpn, op = key.split()
    t = [r for r in tt["wr"] if r["qp"] == int(qpn) and r["opcode"] == op]
    if not t or t[0]["count"] != d["count"]:
        check("qp %s %s count %s == app %d" % (qpn, op, t and t[0]["count"], d["count"]), False)
        continue
    for q in ("p50_ns", "p99_ns"):
        worst = max(worst, abs(t[0][q] - d[q]) / d[q])
check("per QP/opcode rows: counts exact, worst p50/p99 difference %.1f%%" % (100 * worst),
      worst <= 0.05)
errs = {}
for e in tt["errors"]:
    errs[str(e["status"])] = errs.get(str(e["status"]), 0) + e["count"]
check("errors %s == app %s" % (errs, app["errors"]), errs == app["errors"])
l = tt["loss"]
check("pre_attach %d == unmatched %d, <= 16 outstanding" % (l["pre_attach"], l["unmatched"]),
      l["pre_attach"] == l["unmatched"] and l["pre_attach"] <= 16)
# the warm-up WRs against the app's own times of each: timed are those posted after the
# post_send probe attached and reaped by a poll call that began after the poll_cq probe
# attached; in flight at attach those posted before and reaped so. A WR whose post or
# reaping call overlaps an attachment may fall either way: the count must lie between the
# sure and the possible
def span(fn):
    g = [x for x in tt["targets"] if x["fn"] == fn][0]
    return g["attach_begin_ns"], g["attach_end_ns"]
(pb, pe), (cb, ce) = span("post_send"), span("poll_cq")
warm = app["warm"]
sure = sum(1 for p0, p1, c0, r in warm if p0 > pe and c0 > ce)
maybe = sum(1 for p0, p1, c0, r in warm if p1 >= pb and r >= cb)
tw = tt["wr_all"]["count"] - n
check("warm-up WRs timed %d, app: %d sure .. %d possible" % (tw, sure, maybe),
      sure <= tw <= maybe)
tm = tt["timing"]
check("timed %d == successful %d + error completions %d" % (tm["timed"],
      tt["wr_all"]["count"], sum(e["count"] for e in tt["errors"])),
      tm["timed"] == tt["wr_all"]["count"] + sum(e["count"] for e in tt["errors"]))
sure = sum(1 for p0, p1, c0, r in warm if p1 < pb and c0 > ce)
maybe = sum(1 for p0, p1, c0, r in warm if p0 <= pe and r >= cb)
check("in flight at attach %d, app: %d sure .. %d possible" % (tm["in_flight_at_attach"],
      sure, maybe), sure <= tm["in_flight_at_attach"] <= maybe)
check("attached %d ms after start, first interval timed %d WRs" %
      (attach_ms, first["wr_all"]["count"]), attach_ms <= 2000 and first["wr_all"]["count"] > 0)
sys.exit(0 if ok else 1)
PY
}

if attach_late late "$APP"; then
	tt_check "running process: live context found, rdma.wr matches the app" compare_late late
	for fn in post_send post_recv poll_cq; do
		h=$(how_of late $fn)
		tt_check "running process: $fn found as $h" [ "$h" = "live-context" ]
	done
else
	tt_fail "running-process scenario ran"
fi

# 9b. the same process with its provider's names in a debug file found by build-id, under
# a debug root laid out as -dbgsym packages install it: found that way before the scan
BID=$(readelf -n "$LIB" | awk '/Build ID/ {print $3}')
mkdir -p "$W/debug/.build-id/${BID:0:2}"
cp "$RDMA_DIR/libttstandin.debug" "$W/debug/.build-id/${BID:0:2}/${BID:2}.debug"
if TT_EXTRA="--debug-dir $W/debug" attach_late dbgfile "$APP"; then
	tt_check "debug file by build-id $BID: rdma.wr matches the app" compare_late dbgfile
	for fn in post_send post_recv poll_cq; do
		h=$(how_of dbgfile $fn)
		tt_check "debug file: $fn found as $h" [ "$h" = "debug-file" ]
	done
	tt_check "debug file: its path is said ($(grep -o 'from [^:]*' "$W/dbgfile.err" | head -1))" \
		grep -q "from $W/debug/.build-id/${BID:0:2}/${BID:2}.debug: 3 data-path" "$W/dbgfile.err"
else
	tt_fail "debug-file scenario ran"
fi

# 9c. the stripped provider carrying MiniDebugInfo (.gnu_debugdata, as Fedora ships its
# libraries), preloaded under the provider's soname
if attach_late minidbg env LD_PRELOAD="$RDMA_DIR/libttstandin.minidebug.so" "$APP"; then
	tt_check "MiniDebugInfo: rdma.wr matches the app" compare_late minidbg
	for fn in post_send post_recv poll_cq; do
		h=$(how_of minidbg $fn)
		tt_check "MiniDebugInfo: $fn found as $h" [ "$h" = "gnu-debugdata" ]
	done
else
	tt_fail "MiniDebugInfo scenario ran"
fi
expect_err "--debug-dir not a directory" 2 --debug-dir /nonexistent/debug -d 1

# 9d. a provider built with -fcf-protection, as Ubuntu and Fedora build theirs: every
# function begins with endbr64, which x86 uprobes single-step; the probes go past it (and
# past post_send's test %rsi,%rsi) to the first instruction the kernel emulates
if [ "$(uname -m)" = x86_64 ]; then
	CET=$RDMA_DIR/libttstandin.cet.so
	tt_check "the -fcf-protection provider's post_send begins with endbr64 (objdump)" \
		eval 'objdump -d "$CET" | grep -A1 "<si_post_send>:" | grep -q endbr64'
	if attach_late cet env LD_PRELOAD="$CET" "$APP"; then
		tt_check "endbr64 provider: rdma.wr matches the app" compare_late cet
		n=$(grep -c "probed at +[0-9]* past single-stepped" "$W/cet.err")
		tt_check "endbr64 provider: post_send, post_recv and poll_cq probed past their endbr64 ($n)" \
			[ "$n" -ge 3 ]
	else
		tt_fail "endbr64 provider scenario ran"
	fi
fi

# 10. the same in its own mount namespace (a container): the library exists only there,
# tailtrace reaches it through /proc/PID/root
CT=$W/ct
mkdir -p "$CT"
if attach_late ctr unshare -m --propagation private sh -c \
	'mount -t tmpfs tt "$1" && cp "$2" "$3" "$1"/ && d=$1 && shift 3 && exec "$d"/rdma_app "$@"' \
	sh "$CT" "$APP" "$LIB"; then
	tt_check "container: rdma.wr matches the app" compare_late ctr
	tt_check "container: provider reached through /proc/PID/root" python3 -c '
import json, sys
tt = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
p = [t["path"] for t in tt["targets"] if t["fn"] == "poll_cq"]
print("# poll_cq at", p)
sys.exit(0 if p and p[0].startswith("/proc/") and "/root/" in p[0] else 1)' "$W/ctr.tt.json"
else
	tt_fail "container scenario ran"
fi

# 10b. a container with its own debug files: /usr/lib/debug in the app's mount namespace
# holds the provider's debug file, the host's does not; tailtrace reads it inside
# /proc/PID/root
CT2=$W/ct2
mkdir -p "$CT2"
if attach_late ctrdbg unshare -m --propagation private sh -c \
	'mount -t tmpfs tt "$1" && mount -t tmpfs tt /usr/lib/debug &&
	mkdir -p "/usr/lib/debug/.build-id/$5" && cp "$4" "/usr/lib/debug/.build-id/$5/$6.debug" &&
	cp "$2" "$3" "$1"/ && d=$1 && shift 6 && exec "$d"/rdma_app "$@"' \
	sh "$CT2" "$APP" "$LIB" "$RDMA_DIR/libttstandin.debug" "${BID:0:2}" "${BID:2}"; then
	tt_check "container debug file: rdma.wr matches the app" compare_late ctrdbg
	h=$(how_of ctrdbg poll_cq)
	src=$(grep -o 'from /proc/[0-9]*/root/usr/lib/debug/[^:]*' "$W/ctrdbg.err" | head -1)
	tt_check "container debug file: poll_cq found as $h, ${src:-no debug file said}" \
		[ "$h" = "debug-file" -a -n "$src" ]
else
	tt_fail "container debug-file scenario ran"
fi

# 11. UCX: ucx_perftest's UCP GET test over TCP (window 1). Its own latency is the truth:
# the p50 it prints each second, over the seconds tailtrace traced it (the seconds before
# the probes attached left out). 11a: one process requester and responder on loopback,
# where what the probes add is of the order of a GET (bounds only); 11b: the
# requester in the testbed's client namespace, ucx_perftest's server in the server
# namespace, across the router.
PT_CHECK=$W/pt_check.py
cat >"$PT_CHECK" <<'PY'
import json, statistics, sys
def interval_p50s(path): # "[thread 0]  ITERS  P50  AVG ..." once a second, ITERS cumulative
    rows = [(int(l.split()[2]), float(l.split()[3])) for l in open(path)
            if l.startswith("[thread") and len(l.split()) > 4]
    return [(n - (rows[i - 1][0] if i else 0), p) for i, (n, p) in enumerate(rows)]
def ops_median(secs): # the p50 of the GETs, not of the seconds: a fast second holds more
    secs, seen = sorted(secs, key=lambda s: s[1]), 0
    for n, p in secs:
        seen += n
        if seen * 2 >= sum(n for n, _ in secs):
            return p
    return 0
what, pt, ttj, arc, trc = sys.argv[1:6]
lines = interval_p50s(pt)
# "split": tailtrace started after perftest's first two seconds, then the untraced
# baseline of the same process; the third is mixed; the truth is the seconds after
split = len(sys.argv) > 6 and sys.argv[6] == "split"
skip = 3 if split else 1
truth = ops_median(lines[skip:]) if len(lines) > skip else 0
base = ops_median(lines[:2]) if split and len(lines) > 2 else 0
tt = [json.loads(l) for l in open(ttj) if l.strip()][-1]
u = tt.get("ucx") or {}
rows = [r for r in u.get("ops", []) if r["op"] == "GET"]
p50 = rows[0]["p50_ns"] / 1000 if rows else 0
# A traced GET pays three uprobe hits (entry, return, callback); rdma.ucx_op's interval holds
# two, the application's figure all three and its own loop around them. On loopback
# ("split") a GET takes 6-12 us and what tracing adds outside the interval measured 0.5 to
# 4 us from run to run, and perftest's own pace moves by 30 % between seconds (untraced
# 9.3 us, then traced 8.2 us, in one run): no figure of perftest's can be the interval's
# within 10 %. There rdma.ucx_op's p50 must lie inside what is certain: above half the
# untraced GET, and not above the traced application's figure (10 % for the buckets).
# Across namespaces a GET takes a millisecond and the comparison is within 10 %.
lo, hi = (0.5 * base, 1.1 * truth) if split else (0.9 * truth, 1.1 * truth)
print("# %s: perftest p50 %.2f us traced (of %d seconds, weighted by GETs)%s, rdma.ucx_op's"
      " within %.2f-%.2f us; rdma.ucx_op GET p50 %.2f us over %d ops (%d completed by callback, %d"
      " replaced), tls %s, callbacks %s" % (what, truth, max(len(lines) - skip, 0),
      ", %.2f us untraced" % base if base else "", lo, hi, p50,
      rows[0]["count"] if rows else 0, u.get("completed", 0), u.get("replaced", 0),
      u.get("tls"), [c["path"] for c in u.get("callbacks", [])]))
ok = arc == "0" and trc == "0" and bool(rows) and truth > 0 and len(lines) >= skip + 2
ok = ok and (base > 0 or not split)
ok = ok and lo <= p50 <= hi and u["completed"] > 1000
ok = ok and u["replaced"] * 100 < u["completed"] and len(u["callbacks"]) == 1
sys.exit(0 if ok else 1)
PY
RTT_CHECK=$W/rtt_check.py
cat >"$RTT_CHECK" <<'PY'
import json, os, sys
what, pt, ttj, arc, trc, op, pid, how = sys.argv[1:9]
warm = int(os.environ.get("RTT_WARM", "0"))
final = [l.split() for l in open(pt) if l.startswith("Final:")]
# "Final: ITERS P50 AVG ...", P50 as half a round trip. perftest keeps its iterations'
# times in a ring of 2048 that each report reorders in place, so the p50 is over every
# iteration only in a run of at most 2048 of them (as here)
iters, half = (int(final[0][1]), float(final[0][2])) if final else (0, 0)
truth = 2 * half
tt = [json.loads(l) for l in open(ttj) if l.strip()][-1]
u = tt.get("ucx") or {}
rtt = [r for r in u.get("rtt", []) if r["op"] == op and r["pid"] == int(pid)]
ops = [r for r in u.get("ops", []) if r["op"] == op and r["pid"] == int(pid)]
p50 = rtt[0]["p50_ns"] / 1000 if len(rtt) == 1 else 0
local = ops[0]["p50_ns"] / 1000 if len(ops) == 1 else 0
cnt = rtt[0]["count"] if len(rtt) == 1 else 0
# "within": 25 %. "bounds": a round trip of ~30 us, of which 5-10 us are the probes' traps
# outside the interval (the application's figure holds them, no probe can): above half
# the application's round trip (a send's local completion is a quarter of it) and not
# above it (10 % for the buckets)
lo, hi = (0.75 * truth, 1.25 * truth) if how == "within" else (0.5 * truth, 1.1 * truth)
print("# %s: perftest round trip p50 %.2f us (2 x %.3f), rdma.ucx_rtt %s p50 %.2f us (%.0f %%,"
      " within %.2f-%.2f) over %d rounds of %d iterations (+ warm-up), rdma.ucx_op %s p50 %.2f us" %
      (what, truth, half, op, p50, 100 * p50 / truth if truth else 0, lo, hi, cnt, iters, op,
       local))
ok = arc == "0" and trc == "0" and truth > 0 and lo <= p50 <= hi
# one round per iteration, warm-up ones included: tailtrace attached before perftest
# started; the first rounds merge while the receive callback's probe is being attached
# (up to ~90 of them measured), which the warm-up iterations absorb. perftest exchanges
# more than -w before it measures (2254 rounds for -n 2000 -w 200 in every run here): the
# upper bound allows twice -w, still far below a round per message (twice the iterations)
ok = ok and iters <= cnt <= iters + 2 * warm
# behind the tbf a send completes locally long before its reply comes: rdma.ucx_op is not
# the round trip
ok = ok and (what != "tbf" or 0 < local < truth / 4)
sys.exit(0 if ok else 1)
PY
# ucx_rtt_run NAME TEST SIZE ITERATIONS within|bounds [WARMUP]: tailtrace first (every process's
# libucp, so every iteration is traced), then perftest's server in the server namespace
# and its client in the client namespace
ucx_rtt_run() {
	local name=$1 test=$2 size=$3 n=$4 how=$5 op
	[ "$test" = stream_lat ] && op=STREAM_SEND || op=TAG_SEND
	"$TAILTRACE" rdma -j >"$W/rtt_$name.json" 2>"$W/rtt_$name.err" &
	TT_PID=$!
	tt_wait_attached "$TT_PID" || tt_fail "ucx $name: tailtrace attached"
	# warm-up iterations: the rounds that merge while the callbacks' probes attach are
	# among them (perftest's figures are of the measured iterations only). Sized in time:
	# the attach takes tens of ms, and 200 iterations of an 8-byte ping-pong (~23 us a
	# round) last 5 ms, so 1088 of 2254 rounds once merged in a clean-clone run
	export RTT_WARM=${6:-200}
	ip netns exec "$TB_NS_SRV" env UCX_TLS=tcp UCX_NET_DEVICES="$TB_SRV_DEV" \
		ucx_perftest -p 13338 >"$W/rtt_$name.srv" 2>&1 &
	SRV_PID=$!
	for _ in $(seq 50); do
		ip netns exec "$TB_NS_SRV" ss -Hltn 'sport = :13338' | grep -q . && break
		sleep 0.1
	done
	ip netns exec "$TB_NS_CLI" env UCX_TLS=tcp UCX_NET_DEVICES="$TB_CLI_DEV" \
		ucx_perftest "$TB_SRV4" -p 13338 -t "$test" -s "$size" -n "$n" -w "$RTT_WARM" \
		>"$W/rtt_$name.out" 2>&1 &
	APP_PID=$!
	wait "$APP_PID"; arc=$?
	kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; SRV_PID=
	kill -INT "$TT_PID"; wait "$TT_PID"; trc=$?; TT_PID=
	grep "ucx" "$W/rtt_$name.err" | sed 's/^/# /'
	tt_check "ucx $name ping-pong ($test -s $size): rdma.ucx_rtt p50 $how perftest's round trip" \
		python3 "$RTT_CHECK" "$name" "$W/rtt_$name.out" "$W/rtt_$name.json" "$arc" "$trc" \
		"$op" "$APP_PID" "$how"
	APP_PID=
}
if command -v ucx_perftest >/dev/null; then
	export UCX_TLS=tcp UCX_NET_DEVICES=lo
	PT="ucx_perftest -t ucp_get -s 8 -l"
	$PT -n 900000 -w 2000 >"$W/pt.out" 2>&1 &
	APP_PID=$!
	sleep 2.5
	"$TAILTRACE" rdma -p "$APP_PID" -j >"$W/ucx.json" 2>"$W/ucx.err" &
	TT_PID=$!
	wait "$APP_PID"; arc=$?; APP_PID=
	wait "$TT_PID"; trc=$?; TT_PID=
	unset UCX_TLS UCX_NET_DEVICES
	grep "ucx\|context" "$W/ucx.err" | sed 's/^/# /'
	tt_check "ucx loopback: GETs completed through the callback; p50 between half perftest's untraced and its traced" \
		python3 "$PT_CHECK" loopback "$W/pt.out" "$W/ucx.json" "$arc" "$trc" split
	# Debian's perftest callback (subl $1,0xc(%rdx); jmp ucp_request_free) is probed on
	# its jmp, which the kernel emulates, instead of single-stepping the subl
	tt_check "ucx: the completion callback probed past its single-stepped first instruction" \
		grep -q "completion callback at .*probed at +[0-9]* past single-stepped" "$W/ucx.err"
	# the same operations judged by explain --rdma: a UCX verdict of its own, placed on
	# the endpoint (this host has no RDMA device: no counters, so a tail is unattributed)
	export UCX_TLS=tcp UCX_NET_DEVICES=lo
	$PT -n 10000000 -w 1000 >"$W/pt2.out" 2>&1 &
	APP_PID=$!
	sleep 0.3
	"$TAILTRACE" explain --rdma -p "$APP_PID" -d 3 -j >"$W/ucxex.json" 2>"$W/ucxex.err"
	trc=$?
	kill "$APP_PID" 2>/dev/null; wait "$APP_PID" 2>/dev/null; APP_PID=
	unset UCX_TLS UCX_NET_DEVICES
	tt_check "ucx: explain --rdma judges the UCP operations apart, on their endpoint" \
		python3 -c 'import json,sys
d = json.loads(open(sys.argv[1]).read())
u = [x for x in d["rdma"] if x["family"] == "ucx"]
print("# explain rc %s; rdma verdicts: %s" % (sys.argv[2], [(x["family"], x["class"], x["count"], x["where"], x["rule"]) for x in d["rdma"]]))
ok = sys.argv[2] == "0" and len(u) == 1 and u[0]["count"] > 1000
ok = ok and u[0]["class"] in ("none", "unattributed") and not u[0]["fabric"]["available"]
ok = ok and (u[0]["class"] == "none" or " ep 0x" in u[0]["where"])
sys.exit(0 if ok else 1)' "$W/ucxex.json" "$trc"
	# 11b. across namespaces: the traced requester in the client namespace, the server in
	# the server namespace (it answers GETs from a loop that polls about once a millisecond)
	tt_testbed_lock
	tt_testbed_up
	ip netns exec "$TB_NS_SRV" env UCX_TLS=tcp UCX_NET_DEVICES="$TB_SRV_DEV" \
		ucx_perftest -p 13337 >"$W/pts.out" 2>&1 &
	SRV_PID=$!
	for _ in $(seq 50); do
		ip netns exec "$TB_NS_SRV" ss -Hltn 'sport = :13337' | grep -q . && break
		sleep 0.1
	done
	ip netns exec "$TB_NS_CLI" env UCX_TLS=tcp UCX_NET_DEVICES="$TB_CLI_DEV" \
		ucx_perftest "$TB_SRV4" -p 13337 -t ucp_get -s 8 -n 4500 -w 100 >"$W/ptn.out" 2>&1 &
	APP_PID=$!
	sleep 0.3
	"$TAILTRACE" rdma -p "$APP_PID" -j >"$W/ucxn.json" 2>"$W/ucxn.err" &
	TT_PID=$!
	wait "$APP_PID"; arc=$?; APP_PID=
	wait "$TT_PID"; trc=$?; TT_PID=
	kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; SRV_PID=
	tt_check "ucx across namespaces: p50 within 10 % of the requester's own" \
		python3 "$PT_CHECK" namespaces "$W/ptn.out" "$W/ucxn.json" "$arc" "$trc"
	# 11c. round trips (rdma.ucx_rtt) of tag and stream ping-pong across the namespaces,
	# then the tag one behind a 30 Mbit/s tbf on the server's egress (2 KiB messages: each
	# reply waits for the bucket). The truth is perftest's own: its p50 over all of a run's
	# 2000 iterations, which it prints as half a round trip for a ping-pong test, and its
	# count of iterations.
	ucx_rtt_run tag16k tag_lat 16384 2000 within
	ucx_rtt_run tag8 tag_lat 8 2000 bounds 4000
	ucx_rtt_run stream8 stream_lat 8 2000 bounds 4000
	"$TESTBED" congest --link srv --rate 30mbit --bulk none >/dev/null 2>&1 ||
		tt_fail "tbf on the server's link"
	ucx_rtt_run tbf tag_lat 2048 2000 within
	"$TESTBED" down >/dev/null 2>&1
else
	tt_fail "ucx_perftest missing (tools/deps.sh installs ucx-utils)"
fi

# 12. trust model (docs/security.md): a hostile process in its own mount namespace hands
# the control hooks a forged ops table (post_send mid-instruction in libc, post_recv at
# malloc, poll_cq in a range only a forged maps line claims: a path over 4 KiB whose tail
# reads as a mapping of a FIFO). tailtrace attaches nothing outside the provider, opens no
# FIFO, says why, and a bystander calling those libc functions keeps running. Once with -p
# (the stand-in's hooks), once host-wide (the system libibverbs' hooks, in every process).
HOSTILE=$RDMA_DIR/hostile
hostile_run() { # NAME LIB TAILTRACE_ARGS...
	local name=$1 lib=$2 hw="$W/$1.tree" fifo="$W/$1.fifo" hp bp wp uprobes
	shift 2
	mkdir -p "$hw" && mkfifo "$fifo"
	# a writer that gets through only if someone opens the FIFO for reading
	( exec 3>"$fifo"; echo opened >"$W/$name.fifo_opened" ) &
	wp=$!
	"$HOSTILE" bystander 6 >"$W/$name.bystander" 2>&1 &
	bp=$!
	unshare --mount "$HOSTILE" attack "$hw" "$fifo" "$lib" 6 >"$W/$name.hostile" 2>&1 &
	hp=$!
	wait_for "$W/$name.hostile" "hostile ready" || echo "# $name: hostile not ready"
	local pargs=()
	[ "$name" = hostile_p ] && pargs=(-p "$hp")
	"$TAILTRACE" rdma "${pargs[@]}" "$@" -d 3 -j >"$W/$name.json" 2>"$W/$name.err" &
	TT_PID=$!
	wait_for "$W/$name.err" "not attaching ops.poll_cq" || echo "# $name: no refusal line"
	capeff "$TT_PID" >"$W/$name.capeff"
	# ground truth from the kernel: where tailtrace's uprobes are (it attaches through the
	# descriptors it opened, /proc/self/fd/N: resolved through its /proc/PID/fd)
	uprobes=$(bpftool perf show -j 2>/dev/null | python3 -c '
import json, os, re, sys
pid = int(sys.argv[1])
def real(f):
    m = re.match(r"/proc/self/fd/(\d+)$", f)
    return os.path.realpath("/proc/%d/fd/%s" % (pid, m.group(1)) if m else f)
print("\n".join(sorted({real(e["filename"]) for e in json.load(sys.stdin)
      if e.get("pid") == pid and "filename" in e})))' "$TT_PID")
	wait "$TT_PID"; local trc=$?; TT_PID=
	wait "$hp"; local hrc=$?
	wait "$bp"; local brc=$?
	sed 's/^/# /' "$W/$name.hostile" | head -2
	grep 'not attaching' "$W/$name.err" | sed 's/^/# /'
	tt_check "$name: the forged maps line formed (the old reader would have taken it)" \
		grep -q "forged maps line: 10000000-" "$W/$name.hostile"
	tt_check "$name: tailtrace ran (rc $trc) and refused post_send: not a provider" \
		sh -c "[ $trc -eq 0 ] && grep -q 'not attaching ops.post_send.*libc.*not a verbs provider library' '$W/$name.err'"
	tt_check "$name: refused post_recv (a libc function start) and the forged poll_cq" \
		sh -c "grep -q 'not attaching ops.post_recv.*not a verbs provider library' '$W/$name.err' && grep -q 'not attaching ops.poll_cq = 0x10000800.*not in a file' '$W/$name.err'"
	tt_check "$name: no data-path probe attached" \
		sh -c "! grep -Eq '(post_send|post_recv|poll_cq) at ' '$W/$name.err'"
	echo "# $name: uprobe files: $(echo $uprobes)"
	tt_check "$name: every uprobe tailtrace held was in the verbs library ($lib)" \
		sh -c "[ -n '$uprobes' ] && [ -z \"\$(echo '$uprobes' | grep -v '^$(readlink -f "$lib")\$')\" ]"
	tt_check "$name: the FIFO was never opened" [ ! -e "$W/$name.fifo_opened" ]
	local caps=$CAPS_ALL
	[ "$name" = hostile_p ] && caps=$CAPS_P
	tt_check "$name: after attach CapEff $(cat "$W/$name.capeff") holds no CAP_SYS_ADMIN" \
		caps_within "$(cat "$W/$name.capeff")" "$caps"
	tt_check "$name: the hostile process and the bystander ran to the end ($hrc, $brc)" \
		sh -c "[ $hrc -eq 0 ] && [ $brc -eq 0 ] && grep -q 'bystander calls' '$W/$name.bystander'"
	kill "$wp" 2>/dev/null
	timeout 1 cat "$fifo" >/dev/null 2>&1
	wait "$wp" 2>/dev/null || true
}
hostile_run hostile_p "$LIB"
SYS_VERBS=$(ls /usr/lib/*-linux-gnu/libibverbs.so.1 /usr/lib64/libibverbs.so.1 2>/dev/null | head -1)
if [ -n "$SYS_VERBS" ]; then
	hostile_run hostile_host "$SYS_VERBS"
else
	tt_skip "host-wide hostile run: no system libibverbs.so.1"
fi
