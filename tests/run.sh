#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs every test of tailtrace and ends with the line "N passed, N failed".
# Unit tests are cmocka binaries (build/tests/unit/test_*); BPF and namespace tests are
# executables under tests/bpf and tests/ns that print TAP lines ("ok N - ...",
# "not ok N - ..."). A script that exits non-zero without a "not ok" line counts as one
# failure, so a crash can never pass.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TT_BUILD:-$root/build}
export TT_ROOT=$root TT_BUILD=$build
only=${TT_ONLY:-}
pass=0 fail=0 skip=0
failed_names=()

run_one() { # name, command...
	local name=$1; shift
	local log; log=$(mktemp)
	echo "== $name"
	local t0=$SECONDS
	timeout --kill-after=10 "${TT_TIMEOUT:-900}" "$@" >"$log" 2>&1
	local rc=$?
	cat "$log"
	local p f s
	if grep -q '^\[==========\]' "$log"; then
		# cmocka: one count per test case
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		s=0
	else
		p=$(grep -cE '^ok [0-9]+' "$log" | head -1)
		s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$log" | head -1)
		p=$((p - s))
		f=$(grep -cE '^not ok [0-9]+' "$log" | head -1)
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name exited with status $rc"
		f=1
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	[ "$f" -gt 0 ] && failed_names+=("$name")
	echo "-- $name: $p passed, $f failed, $s skipped ($((SECONDS - t0))s)"
	rm -f "$log"
}

for t in "$build"/tests/unit/test_*; do
	[ -x "$t" ] || continue
	case "$t" in *.o|*.d) continue;; esac
	[ -n "$only" ] && [[ "$t" != *$only* ]] && continue
	run_one "unit/$(basename "$t")" "$t"
done
for t in "$build"/tests/bpf/test_* "$root"/tests/bpf/*.sh "$root"/tests/ns/*.sh; do
	[ -x "$t" ] || continue
	[ -n "$only" ] && [[ "$t" != *$only* ]] && continue
	case "$t" in *.o|*.d) continue;; esac
	run_one "$(basename "$(dirname "$t")")/$(basename "$t")" "$t"
done

[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
