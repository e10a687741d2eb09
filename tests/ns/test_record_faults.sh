#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Faults under a running `record` on real traffic (issue 24): its directory is on a small
# tmpfs that a filler file fills until ENOSPC, then the filler is removed; then the
# directory is removed underneath it, once where it can be made again and once replaced
# by a file, so that it cannot be made again until the file goes. record must keep
# tracing, say each fault once with its count of unwritten intervals, resume writing when
# it can, and lose nothing it wrote before the fault: the bytes of every segment written
# before ENOSPC are still there, and every segment reads with `report`.
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root
tt_testbed_lock

W=$(mktemp -d)
MNT=$W/mnt
REC=$MNT/rec
IV=0.5 # record's interval, s
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	mountpoint -q "$MNT" && umount "$MNT"
	"$TESTBED" down >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$MNT"
mount -t tmpfs -o size=3m,mode=0755 tailtrace-faults "$MNT" ||
	{ tt_fail "mount a 3 MiB tmpfs"; exit 1; }
tt_testbed_up

now() { date +%s.%N; }
alive() { kill -0 "$rp" 2>/dev/null; }
# lines PATTERN: how many lines of record's stderr match
lines() { grep -c -- "$1" "$W/rec.err"; }
# intervals DIR [--from T] [--to T]: how many intervals report merges (0 when none)
intervals() {
	local d=$1; shift
	"$TAILTRACE" report "$d" "$@" -j 2>/dev/null |
		python3 -c 'import json,sys
try: print(json.load(sys.stdin)["window"]["intervals"])
except Exception: print(0)'
}
# requests DIR: requests in the whole recording
requests() {
	"$TAILTRACE" report "$1" -j 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["attribution"]["requests"])'
}
# wait_for PATTERN TENTHS: until record's stderr has a line matching PATTERN
wait_for() {
	for _ in $(seq 1 "$2"); do
		grep -q -- "$1" "$W/rec.err" && return 0
		sleep 0.1
	done
	return 1
}

ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port 7011 --mode unary \
	--resp-bytes 4096 --duration 60 >/dev/null 2>&1 &
pids+=("$!")
t_start=$(now)
"$TAILTRACE" record -o "$REC" -i "$IV" --port 7011 --role server 2>"$W/rec.err" &
rp=$!
pids+=("$rp")
tt_wait_attached "$rp" || { tt_fail "record did not start: $(tail -2 "$W/rec.err")"; exit 1; }
ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port 7011 --mode unary \
	--conns 4 --concurrency 4 --req-bytes 256 --resp-bytes 4096 --duration 40 \
	>/dev/null 2>&1 &
pids+=("$!")
sleep 3

# --- ENOSPC: what was written before it is copied aside, then the tmpfs is filled
mkdir "$W/before"
cp -p "$REC"/seg-* "$W/before/"
nbefore=$(ls "$W/before" | wc -l)
t_fault=$(now)
dd if=/dev/zero of="$MNT/filler" bs=64k 2>"$W/dd.err"
grep -q 'No space left' "$W/dd.err" || { tt_fail "filler did not fill the tmpfs: $(tail -1 "$W/dd.err")"; exit 1; }
free_kb=$(df -k --output=avail "$MNT" | tail -1 | tr -d " ")
wait_for 'cannot write to' 40
sleep 3
tt_check "disk full: record still running, said so once ($(lines 'cannot write to') line: $(grep -m1 'cannot write to' "$W/rec.err" | cut -c1-90))" \
	eval 'alive && [ "$(lines "cannot write to")" -eq 1 ] && [ "$(lines "again;")" -eq 0 ]'

# --- space returns: writing resumes and says how many intervals it could not write
rm -f "$MNT/filler"
t_free=$(now)
wait_for 'again;' 40
sleep 2
unw=$(sed -n 's/.*again; \([0-9]*\) interval.*/\1/p' "$W/rec.err" | head -1)
# at most the intervals that ended while the disk was full (the first ones may still fit
# in the last block of the segment; exactly how many is checked against the recording below)
want=$(awk -v a="$t_fault" -v b="$t_free" -v i="$IV" 'BEGIN { printf "%d", (b - a) / i }')
tt_check "space freed ($free_kb KiB were left): writing again, $unw interval(s) not written (1..$((want + 1)))" \
	eval 'alive && [ -n "$unw" ] && [ "$unw" -ge 1 ] && [ "$unw" -le $((want + 1)) ]'

# nothing written before the fault was lost: each segment's bytes then are its bytes now
lost=0
for f in "$W"/before/seg-*; do
	n=$(stat -c %s "$f")
	cmp -s -n "$n" "$f" "$REC/$(basename "$f")" || lost=$((lost + 1))
done
tt_check "the $nbefore segment(s) written before ENOSPC are intact ($lost changed or gone)" \
	test "$nbefore" -ge 1 -a "$lost" -eq 0
cp -p "$REC"/seg-* "$W/before/" # for the read below: the whole recording until now
t_copy=$(now)
"$TAILTRACE" report "$W/before" >/dev/null 2>"$W/report.err"
rc=$?
tt_check "report of the recording across the fault: exit $rc, no warning ($(head -c 120 "$W/report.err"))" \
	test "$rc" -eq 0 -a ! -s "$W/report.err"
# from the fault on, written + not written = every interval record took (one either
# side: the interval holding each end)
nw=$(intervals "$W/before" --from "@$t_fault")
took=$(awk -v a="$t_fault" -v b="$t_copy" -v i="$IV" 'BEGIN { printf "%d", (b - a) / i }')
tt_check "since the fault: intervals written $nw + not written $unw = $((nw + unw)) of about $took taken" \
	test $((nw + unw)) -ge $((took - 1)) -a $((nw + unw)) -le $((took + 1))
inside=$(intervals "$W/before" --from "@$(awk -v t="$t_fault" 'BEGIN { printf "%.3f", t + 1 }')" \
	--to "@$(awk -v t="$t_free" 'BEGIN { printf "%.3f", t - 1 }')")
after=$(intervals "$W/before" --from "@$t_free")
tt_check "no interval inside the full-disk window ($inside), $after written after it (>= 2)" \
	test "$inside" -eq 0 -a "$after" -ge 2

# --- the directory removed underneath: made again at its path, said once, recording goes on
rm -rf "$REC"
wait_for 'was removed' 40
sleep 2
nseg=$(find "$REC" -maxdepth 1 -name 'seg-*' -type f 2>/dev/null | wc -l)
mode=$(stat -c %a "$REC" 2>/dev/null)
tt_check "directory removed: record running, said once ($(lines 'was removed') line), made again mode $mode with $nseg segment(s)" \
	eval 'alive && [ "$(lines "was removed")" -eq 1 ] && [ "$mode" = 700 ] && [ "$nseg" -ge 1 ]'
tt_check "the directory made again reads: $(intervals "$REC") intervals, $(requests "$REC") requests" \
	eval '[ "$(intervals "$REC")" -ge 2 ] && [ "$(requests "$REC")" -gt 0 ]'

# --- removed and something else put at its path: counted like a full disk until it can be
# made again
rm -rf "$REC"
echo planted >"$REC"
wait_for 'cannot write to .*Not a directory' 40
sleep 2
tt_check "directory replaced by a file: running, said once ($(grep -m1 'Not a directory' "$W/rec.err" | cut -c1-90))" \
	eval 'alive && [ "$(lines "Not a directory")" -eq 1 ] && [ "$(cat "$REC")" = planted ]'
rm -f "$REC"
for _ in $(seq 1 40); do [ "$(lines 'again;')" -ge 2 ] && break; sleep 0.1; done
sleep 1.5
unw2=$(sed -n 's/.*again; \([0-9]*\) interval.*/\1/p' "$W/rec.err" | sed -n 2p)
tt_check "path free again: directory made again, $(intervals "$REC") interval(s) written, $unw2 not written (>= 3)" \
	eval '[ -n "$unw2" ] && [ "$unw2" -ge 3 ] && [ "$(intervals "$REC")" -ge 2 ]'

# --- a clean stop: exit 0, the total not written said at exit
kill -INT "$rp"
wait "$rp"
rc=$?
total=$(sed -n 's/.*warning: \([0-9]*\) intervals* of this recording could not be written.*/\1/p' "$W/rec.err")
tt_check "record stops with exit $rc (0), $total interval(s) not written in all ($unw + $unw2)" \
	test "$rc" -eq 0 -a "${total:-x}" = $((unw + unw2))
"$TAILTRACE" report "$REC" >/dev/null 2>"$W/report.err"
rc=$?
tt_check "report of the last directory after the stop: exit $rc ($(head -c 120 "$W/report.err"))" \
	test "$rc" -eq 0 -a ! -s "$W/report.err"
sed 's/^/# record: /' "$W/rec.err"
