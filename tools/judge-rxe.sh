#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The soft-RoCE judge: `tailtrace rdma` on a real kernel RDMA stack. Boots Debian's generic
# kernel in a qemu guest with rdma_rxe (tools/kernels/run-in-guest --rxe), runs perftest's
# ib_write_lat there under tailtrace (tests/kernels/rxe_scenarios.sh) and judges the
# figures against perftest's own and sysfs's counters (tests/kernels/rxe_judge.py).
# Part of `make judge`; needs root, qemu and the network for the first download.
# env: RXE_KERNEL (default newest), RXE_ITERS (ib_write_lat -n, default 5000),
#   RXE_SCENARIOS (default "pair-default pair-full pair-both pair-loss loop-default loop-full"),
#   RXE_TIMEOUT (the guest's, seconds, default 2400), RXE_LOG (keep the guest's output there),
#   TT_BUILD (default build/).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
kernel=${RXE_KERNEL:-newest}
iters=${RXE_ITERS:-5000}
scenarios=${RXE_SCENARIOS:-pair-default pair-full pair-both pair-loss loop-default loop-full}
[[ $iters =~ ^[1-9][0-9]*$ ]] || {
	echo "judge-rxe: error: RXE_ITERS wants a positive number, not '$iters'" >&2
	exit 2
}
log=${RXE_LOG:-}
tmp=""
if [ -z "$log" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	log=$tmp/guest.log
fi
export TT_BUILD=${TT_BUILD:-$ROOT/build}
# tsc=reliable: without it the guest kernel may fall back to an emulated HPET whose every
# read costs perftest tens of microseconds (docs/kernel-support.md)
# shellcheck disable=SC2086 # the scenarios are words
"$ROOT/tools/kernels/run-in-guest" --rxe --append tsc=reliable --timeout "${RXE_TIMEOUT:-2400}" "$kernel" \
	"$ROOT/tests/kernels/rxe_scenarios.sh" -n "$iters" $scenarios | tee "$log" | grep '^# '
grc=${PIPESTATUS[0]}
[ "$grc" -eq 0 ] || echo "judge-rxe: the guest's script exited $grc" >&2
python3 "$ROOT/tests/kernels/rxe_judge.py" "$log"
jrc=$?
[ "$grc" -eq 0 ] && [ "$jrc" -eq 0 ]
