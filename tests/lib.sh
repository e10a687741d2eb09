# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the root/namespace test scripts: TAP-style result lines that
# tests/run.sh counts, and a skip that turns into a failure under CI=true.

TT_ROOT=${TT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
TT_BUILD=${TT_BUILD:-$TT_ROOT/build}
TAILTRACE=${TAILTRACE:-$TT_BUILD/tailtrace}
LOADGEN=${LOADGEN:-$TT_BUILD/loadgen}
TESTBED=${TESTBED:-$TT_ROOT/tools/testbed}
TT_N=0

tt_ok()   { TT_N=$((TT_N + 1)); echo "ok $TT_N - $*"; }
tt_fail() { TT_N=$((TT_N + 1)); echo "not ok $TT_N - $*"; }

# tt_check DESC CMD...: one result line from a command's exit status.
tt_check() {
	local desc=$1; shift
	if "$@"; then tt_ok "$desc"; else tt_fail "$desc"; fi
}

# tt_wait_attached PID [TENTHS]: true once PID holds bpf_link fds and their number has been
# stable for 0.3 s (all its programs attached); false if it exited or took longer than
# TENTHS tenths of a second (default 300).
tt_wait_attached() {
	local pid=$1 n last=-1 stable=0
	for _ in $(seq 1 "${2:-300}"); do
		kill -0 "$pid" 2>/dev/null || return 1
		n=$(find "/proc/$pid/fd" -lname 'anon_inode:bpf_link' 2>/dev/null | wc -l)
		if [ "$n" -gt 0 ] && [ "$n" -eq "$last" ]; then
			stable=$((stable + 1))
			[ "$stable" -ge 3 ] && return 0
		else
			stable=0
		fi
		last=$n
		sleep 0.1
	done
	return 1
}

# tt_skip DESC REASON: a skip is only allowed outside CI; under CI=true it fails.
tt_skip() {
	if [ "${CI:-}" = "true" ]; then
		tt_fail "$1 (would skip under CI: $2)"
	else
		TT_N=$((TT_N + 1)); echo "ok $TT_N - $1 # SKIP $2"
	fi
}

# tt_require_root: a root-only script that cannot run reports one skip (or failure in CI).
tt_require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		tt_skip "$(basename "$0")" "needs root"
		exit 0
	fi
}

# tt_within ACTUAL EXPECTED REL_TOL: true when |actual-expected| <= tol*expected.
tt_within() {
	awk -v a="$1" -v e="$2" -v t="$3" 'BEGIN { d = a - e; if (d < 0) d = -d;
		exit !(d <= t * (e < 0 ? -e : e)) }'
}

# tt_json FILE EXPR: read one value out of a JSON file (python3 is on every machine
# of this kind; jq is installed by tools/deps.sh as a fallback).
tt_json() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$1" "$2"
}

# A timing test whose check fails while the hypervisor stopped a vCPU for TT_STOLEN_MS or
# more (tools/steal.sh) is made again, once.
. "$TT_ROOT/tools/steal.sh"
TT_STOLEN_MS=100

# tt_unit_caps UNIT: the unit's CapabilityBoundingSet as setpriv's list ("+bpf,+perfmon,...")
tt_unit_caps() {
	sed -n 's/^CapabilityBoundingSet=//p' "$1" | tr 'A-Z' 'a-z' | sed 's/cap_/+/g' | tr ' ' ','
}

# tt_testbed_lock: the namespace testbed is one per machine; tests (and the demo, the judge,
# the benchmark) that use it hold this lock for their whole run.
tt_testbed_lock() {
	exec 9>/run/tailtrace-testbed.lock
	flock 9
}

# tt_checks_file FILE [PREFIX]: a checker's lines "ok|what" and "fail|what" as TAP results;
# any other line (a traceback) is a failure, named with PREFIX.
tt_checks_file() {
	local res msg
	while IFS='|' read -r res msg; do
		case $res in
		ok) tt_ok "$msg";;
		fail) tt_fail "$msg";;
		*) tt_fail "${2:-}checks: $res $msg";;
		esac
	done <"$1"
}

# tt_testbed_scratch: a scratch directory $W, the array pids of background processes, an
# EXIT trap that kills them, takes the testbed down and removes $W (copied to $TT_KEEP
# first when set), then a fresh testbed (tt_testbed_up).
tt_testbed_scratch() {
	W=$(mktemp -d)
	pids=()
	trap _tt_scratch_cleanup EXIT
	tt_testbed_up
}

_tt_scratch_cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	"$TESTBED" down >/dev/null 2>&1
	[ -n "${TT_KEEP:-}" ] && cp -r "$W" "$TT_KEEP"
	rm -rf "$W"
}

# tt_testbed_up: a fresh testbed (whatever an earlier run left is taken down first) and its
# TB_* variables in this shell; one failure line and exit 1 when it cannot come up.
tt_testbed_up() {
	"$TESTBED" down >/dev/null 2>&1
	"$TESTBED" up >/dev/null 2>&1 || { tt_fail "testbed up"; exit 1; }
	eval "$("$TESTBED" env)"
}
