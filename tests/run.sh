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
		# cmocka: one count per test case; a skipped case is a skip, as in TAP
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	else
		p=$(grep -cE '^ok [0-9]+' "$log" | head -1)
		s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$log" | head -1)
		p=$((p - s))
		f=$(grep -cE '^not ok [0-9]+' "$log" | head -1)
	fi
	# under CI nothing may skip: a missing capability or tool fails the run
	if [ "${CI:-}" = true ] && [ "$s" -gt 0 ]; then
		echo "not ok - $name skipped $s under CI=true"
		f=$((f + s))
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

# unit tests from their sources: a test that did not build fails, and a binary left from a
# test that no longer exists is not run
for src in "$root"/tests/unit/test_*.c; do
	t=$build/tests/unit/$(basename "$src" .c)
	[ -n "$only" ] && [[ "$t" != *$only* ]] && continue
	if [ ! -x "$t" ]; then
		run_one "unit/$(basename "$t")" sh -c "echo 'not ok 1 - $t was not built'; exit 1"
		continue
	fi
	run_one "unit/$(basename "$t")" "$t"
done
if [ -z "$only" ] || [[ lint == *$only* ]]; then
	run_one lint "$root/tools/lint.sh"
fi
# root tests: BPF test binaries (from their sources, as above) and the scripts; a script
# that lost its run bit fails instead of being left out
bpf_bins=()
for src in "$root"/tests/bpf/test_*.c; do
	[ -e "$src" ] && bpf_bins+=("$build/tests/bpf/$(basename "$src" .c)")
done
for t in "${bpf_bins[@]}" "$root"/tests/bpf/test_*.sh "$root"/tests/ns/test_*.sh \
	"$root"/tests/kernels/test_*.sh; do
	[ -n "$only" ] && [[ "$t" != *$only* ]] && continue
	name=$(basename "$(dirname "$t")")/$(basename "$t")
	if [ ! -x "$t" ]; then
		run_one "$name" sh -c "echo 'not ok 1 - $t is missing or not executable'; exit 1"
		continue
	fi
	run_one "$name" "$t"
done

[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
