#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# record/report over the testbed with a fault injected for a known window (issue 6):
# `report` over the fault window gives the fault's verdict, over the clean window it does
# is `none`; kill -9 during recording leaves readable segments; --max-size holds; the
# fault window's pprof decodes, its total equals the folded export's and holds the injected
# delay. The fault: the model takes +50 ms on 1 % of requests (loadgen --slow-share).
. "$(dirname "$0")/../lib.sh"
tt_require_root
tt_testbed_lock

W=$(mktemp -d)
SEC=${REC_WINDOW_SECONDS:-14}
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	"$TESTBED" down >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT
tt_testbed_up

now() { date +%s.%N; }

# window DIR PORT SERVER_ARGS...: 2 connections of unary traffic for $SEC seconds, the
# client's JSON in DIR
window() {
	local d=$1 port=$2; shift 2
	ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port "$port" --mode unary \
		--resp-bytes 8192 --compute const:500 --compute-kind block --duration $((SEC + 20)) \
		"$@" >/dev/null 2>&1 &
	local sp=$!
	sleep 0.5
	ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port "$port" \
		--mode unary --conns 2 --concurrency 2 --req-bytes 512 --resp-bytes 8192 \
		--duration "$SEC" --json "$d/client-$port.json" --samples "$d/samples-$port.txt" \
		>/dev/null 2>&1
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
}

# scenario DIR: record a clean window and a fault window into DIR/rec, then kill -9 it;
# the windows' times in DIR/times (clean from, to, fault from, to), the largest steal of
# one CPU meanwhile in DIR/steal (ms)
scenario() {
	local d=$1 rp s0 t0 t1 t1b t2
	mkdir -p "$d"
	s0=$(steal_now)
	"$TAILTRACE" record -o "$d/rec" -i 2 --port 7001 --port 7002 --role server --max-size 2M \
		>"$d/rec.out" 2>"$d/rec.err" &
	rp=$!
	pids+=("$rp")
	# attached before the first window: a fixed sleep let its first requests go
	# untraced where loading takes longer (3 s seen on a slow VM)
	tt_wait_attached "$rp" || { tt_fail "record did not start: $(tail -2 "$d/rec.err")"; exit 1; }
	t0=$(now)
	window "$d" 7001
	t1=$(now)
	# a quiet gap longer than an interval: report picks whole intervals (by their
	# midpoint), so neither window's report holds requests of the other
	sleep 2.5
	t1b=$(now)
	window "$d" 7002 --slow-share 1 --slow-extra-us 50000
	t2=$(now)
	sleep 2.5 # the interval holding the last requests is written
	# still running when killed: an early exit would leave fewer segments, not an error
	kill -0 "$rp" 2>/dev/null && echo running >"$d/alive"
	kill -9 "$rp"
	wait "$rp" 2>/dev/null
	echo $? >"$d/rc"
	echo "$t0 $t1 $t1b $t2" >"$d/times"
	steal_since "$s0" >"$d/steal"
}

verdict() { # DIR FROM TO -> class
	"$TAILTRACE" report "$1/rec" --from "@$2" --to "@$3" --format json 2>"$1/report.err" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["attribution"]["verdict"]["class"])'
}

# counts DIR: request counts agree with the load generator's over the whole recording (1 %)
counts() {
	python3 - "$1" "$TAILTRACE" <<'PY'
import json, subprocess, sys
d, tt = sys.argv[1:3]
lg = sum(json.load(open(f"{d}/client-{p}.json"))["requests"] for p in (7001, 7002))
out = subprocess.run([tt, "report", f"{d}/rec", "--format", "json"], capture_output=True,
                     text=True).stdout
n = json.loads(out)["attribution"]["requests"]
print(f"# tailtrace {n} requests, load generator {lg}")
sys.exit(0 if abs(n - lg) <= 0.01 * lg else 1)
PY
}

# timing_ok DIR: the checks a stalled vCPU can spoil hold (clean verdict, fault verdict,
# counts); sets clean and fault
timing_ok() {
	local t
	read -ra t <"$1/times"
	clean=$(verdict "$1" "${t[0]}" "${t[1]}")
	fault=$(verdict "$1" "${t[2]}" "${t[3]}")
	[ "$clean" = none ] && [ "$fault" = compute ] &&
		counts "$1" >/dev/null
}

# disturbed DIR: the load generator's own latencies of the clean window have a tail by
# explain's rule (tail mean >= median + 2 ms and >= 1.5 x median, as tools/judge-explain.sh):
# the machine was not quiet (2 CPUs shared with other work), so 'none' was not the truth
disturbed() {
	python3 - "$1/samples-7001.txt" <<'PY'
import math, sys
lat = sorted(float(l.split()[4]) for l in open(sys.argv[1]) if not l.startswith("#"))
n = len(lat)
tail = lat[math.ceil(0.99 * n) - 1:]
med = lat[math.ceil(0.40 * n) - 1:math.ceil(0.60 * n)]
tm, mm = sum(tail) / len(tail), sum(med) / len(med)
print(f"# the load generator's clean window: tail mean {tm:.0f} us, median {mm:.0f} us")
sys.exit(0 if tm - mm >= 2000 and tm >= 1.5 * mm else 1)
PY
}

# a run spoilt by the machine (a stolen vCPU, or a clean window the load generator itself
# timed with a tail) is made again, twice at most; a clean window still disturbed then is
# not judged, which fails: it never passes for want of a verdict
run=1
scenario "$W/$run"
while ! timing_ok "$W/$run" && [ "$run" -lt 3 ] &&
	{ [ "$(cat "$W/$run/steal")" -ge "$TT_STOLEN_MS" ] || disturbed "$W/$run"; }; do
	echo "# run $run spoilt (steal $(cat "$W/$run/steal") ms; clean verdict '$clean'): made again"
	run=$((run + 1))
	scenario "$W/$run"
done
echo "# largest steal of one CPU during the run: $(cat "$W/$run/steal") ms"
D=$W/$run
REC=$D/rec
read -ra T <"$D/times"

tt_check "record ran until killed (exit $(cat "$D/rc"), want 137 from SIGKILL; $(tail -1 "$D/rec.err"))" \
	test -e "$D/alive" -a "$(cat "$D/rc")" = 137
n=$(ls "$REC" | wc -l)
tt_check "record wrote $n segment file(s), mode $(stat -c %a "$REC"/* | sort -u | tr '\n' ' ')" \
	test "$n" -ge 1 -a -z "$(stat -c %a "$REC"/* | grep -v 600)"

if [ "$clean" = none ]; then
	tt_ok "report over the clean window: verdict '$clean' (none)"
elif disturbed "$D" >"$W/dist.txt"; then
	tt_fail "report over the clean window not judged: the load generator itself saw a tail in $run run(s) ($(sed 's/^# //' "$W/dist.txt"); verdict '$clean')"
else
	tt_fail "report over the clean window: verdict '$clean' (none)"
	"$TAILTRACE" report "$REC" --from "@${T[0]}" --to "@${T[1]}" 2>&1 | sed -n '1,24s/^/# /p'
fi
tt_check "report over the fault window: verdict '$fault' (compute)" test "$fault" = compute

# after kill -9 every segment reads: exit 0 (a torn last frame is a warning at most)
"$TAILTRACE" report "$REC" >/dev/null 2>"$W/all.err"
rc=$?
tt_check "report of the whole directory after kill -9: exit $rc $(head -c 160 "$W/all.err")" \
	test "$rc" -eq 0

# request counts agree with the load generator's over the whole recording
counts "$D" && tt_ok "recorded requests match the load generator (±1%)" ||
	tt_fail "recorded requests vs load generator"

# the fault window's tail profile as pprof: decoded here (gzip, protobuf), its sample
# types, its total against the folded export's (another encoder), and the injected delay:
# compute holds most of it, and at least half of the expected slow requests' 50 ms
python3 - "$TAILTRACE" "$REC" "${T[2]}" "${T[3]}" "$D/client-7002.json" >"$W/pprof.out" 2>&1 <<'PY'
import gzip, json, subprocess, sys
tt, rec, t0, t1, cj = sys.argv[1:6]
def report(fmt):
    return subprocess.run([tt, "report", rec, "--from", "@" + t0, "--to", "@" + t1,
                           "--format", fmt], capture_output=True, check=True).stdout
def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"wire type {wt}")
        yield f, v
def varint(buf, i):
    v = s = 0
    while True:
        b = buf[i]; i += 1
        v |= (b & 0x7f) << s; s += 7
        if b < 0x80:
            return v, i
def packed(v):
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i); out.append(x)
    return out
prof = gzip.decompress(report("pprof"))
strings, types, samples, locfn, fname = [], [], [], {}, {}
for f, v in fields(prof):
    if f == 6: strings.append(v.decode())
    elif f == 1: types.append(dict(fields(v)))
    elif f == 2:
        locs, vals = [], []
        for g, w in fields(v):
            (locs if g == 1 else vals if g == 2 else []).extend(packed(w))
        samples.append((locs, vals))
    elif f == 4:
        d = {g: w for g, w in fields(v)}
        locfn[d[1]] = dict(fields(d[4]))[1]
    elif f == 5:
        d = dict(fields(v)); fname[d[1]] = d[2]
names = [(strings[t[1]], strings[t[2]]) for t in types]
total = sum(v[0] for _, v in samples)
comp = sum(v[0] for l, v in samples if strings[fname[locfn[l[-1]]]] == "compute")
folded = sum(int(line.rsplit(" ", 1)[1]) for line in report("folded").decode().splitlines())
n = json.load(open(cj))["requests"]
want = 0.5 * 0.01 * n * 50e6
print(f"# pprof types {names}, {len(samples)} samples, total {total/1e6:.1f} ms "
      f"(folded {folded/1e6:.1f} ms), compute {comp/1e6:.1f} ms; "
      f"{n} requests: half of 1 % x 50 ms is {want/1e6:.1f} ms")
ok = (names == [("tail_latency", "nanoseconds"), ("requests", "count")] and
      total == folded and total > 0 and comp >= 0.5 * total and comp >= want)
sys.exit(0 if ok else 1)
PY
rc=$?
tt_check "pprof of the fault window: $(tail -1 "$W/pprof.out" | sed 's/^# //')" test "$rc" -eq 0

# --max-size holds: a tiny bound keeps the directory under it while recording
"$TAILTRACE" record -o "$W/small" -i 0.2 --port 7003 --max-size 64k -d 6 >/dev/null 2>&1 &
sp=$!
pids+=("$sp")
ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port 7003 --duration 12 >/dev/null 2>&1 &
pids+=("$!")
sleep 0.5
ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port 7003 --conns 2 \
	--concurrency 2 --duration 5 >/dev/null 2>&1
wait "$sp"
rc=$?
nseg=$(find "$W/small" -maxdepth 1 -name 'seg-*.ttrec' -type f 2>/dev/null | wc -l)
size=$(find "$W/small" -maxdepth 1 -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}')
tt_check "--max-size 64k: record exit $rc (0), $nseg segment(s) (>= 1), $size bytes (<= 65536)" \
	test "$rc" -eq 0 -a "$nseg" -ge 1 -a "$size" -gt 0 -a "$size" -le 65536
