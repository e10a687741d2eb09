#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The kernel matrix: tailtrace on Debian's own kernels (5.10, 6.1, 6.12 and the newest of
# trixie-backports), each booted in a qemu guest (tools/kernels/run-in-guest), against
# clients that time themselves (tests/kernels/guest_scenarios.sh, judged on the host by
# tests/kernels/judge.py). `make test` runs the smoke: probe, loadgen requests under explain
# and under hist and record at once, and sockperf ping-pong per kernel with the feeds the
# kernel offers, and the loadgen requests once more through the kprobe feeds on 6.1. `make test-kernels` (KERNEL_MATRIX=full) runs every
# scenario, with the CPU hog and congestion verdicts, in both feed modes on every kernel.
#
#   KERNELS="5.10 6.1 6.12 newest"   which kernels
#   KERNEL_MATRIX=smoke|full
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root
for b in "$TAILTRACE" "$LOADGEN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done
IBVERBS=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/libibverbs.so.1
[ -e "$IBVERBS" ] || { tt_fail "libibverbs not installed ($IBVERBS)"; exit 1; }
for t in qemu-system-x86_64 sockperf python3; do
	command -v $t >/dev/null || { tt_skip "$(basename "$0")" "$t missing"; exit 0; }
done
RUN="$TT_ROOT/tools/kernels/run-in-guest"
GUEST="$TT_ROOT/tests/kernels/guest_scenarios.sh"
JUDGE="$TT_ROOT/tests/kernels/judge.py"
kernels=${KERNELS:-5.10 6.1 6.12 newest}
matrix=${KERNEL_MATRIX:-smoke}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# kernel, label, scenarios; FEEDS: what TAILTRACE_AVOID_FEEDS the guest gets
guest_run() {
	local k=$1 label=$2
	shift 2
	local env=() out="$log/$label.log" rc
	[ -n "${FEEDS:-}" ] && env=(--env "TAILTRACE_AVOID_FEEDS=$FEEDS")
	# sockperf, and libibverbs for `rdma` (it looks for the library the host's processes
	# would load; no verbs process runs in the guest)
	# tsc=reliable: the kernel finds TCG's emulated TSCs unsynchronized and falls back to
	# an emulated HPET, whose every read costs tens of microseconds that the clients would
	# add to their own timings (sockperf's p50 came out 10 % long); QEMU's TSC follows one
	# host clock for every vCPU
	"$RUN" -q --timeout 900 --append "tsc=reliable" --add "$(command -v sockperf)" \
		--add "$IBVERBS" --add "$(readlink -f "$IBVERBS")" "${env[@]}" "$k" "$GUEST" "$@" \
		>"$out" 2>&1
	rc=$?
	grep '^# ' "$out"
	if [ $rc -ne 0 ]; then
		tt_fail "$label: the guest exited $rc"
		tail -20 "$out" | sed 's/^/# /'
	fi
	while IFS= read -r line; do
		case $line in
		"ok - "*) tt_ok "${line#ok - }";;
		"not ok - "*) tt_fail "${line#not ok - }";;
		*) echo "$line";;
		esac
	done < <(python3 "$JUDGE" "$label" "$out")
}

# the kernels are fetched once, up front: a mirror that cannot be reached is one failure
"$TT_ROOT/tools/kernels/fetch.sh" --quiet $kernels ||
	{ tt_fail "fetching the kernels ($kernels) failed"; exit 1; }
for k in $kernels; do
	if [ "$matrix" = full ]; then
		FEEDS="" guest_run "$k" "$k" probe clean commands stream sockperf cpuhog congestion
		# the kprobe feeds where fentry would be chosen (no-op where a tracepoint is)
		FEEDS=fentry guest_run "$k" "$k kprobe" clean commands sockperf
	else
		FEEDS="" guest_run "$k" "$k" probe clean commands sockperf
	fi
done
if [ "$matrix" != full ]; then
	# one pass through the kprobe and kretprobe feeds (6.1 has no socket tracepoints)
	FEEDS=fentry guest_run 6.1 "6.1 kprobe" clean
fi
