# SPDX-License-Identifier: GPL-2.0
# What the benchmark scripts share. Sourced, not run; needs ROOT.

# bench_testbed_up: takes the testbed's lock on fd 9 for the rest of the run (waiting up to
# 30 min for a test run that holds it), then a fresh testbed. Says why not on stderr and
# returns 1.
bench_testbed_up() {
	exec 9>/run/tailtrace-testbed.lock
	flock -w 1800 9 || { echo "${0##*/}: testbed lock still held after 30 min" >&2; return 1; }
	"$ROOT/tools/testbed" down >/dev/null 2>&1
	"$ROOT/tools/testbed" up >/dev/null || { echo "${0##*/}: testbed up failed" >&2; return 1; }
}

# bench_cpu_ns PID: the CPU time of all of PID's threads so far, ns (schedstat)
bench_cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'
}
