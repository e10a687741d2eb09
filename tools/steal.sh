# SPDX-License-Identifier: GPL-2.0
# Steal time: how long the VM's hypervisor kept a vCPU from running (/proc/stat's 8th
# field, in USER_HZ ticks). A stall of tens to hundreds of ms fills a ring or moves a p99
# whatever tailtrace does, so the tests (tests/lib.sh) and the benchmark (tools/bench/run)
# measure it around what they time and make such a measurement again. Sourced, not run.

# steal_now: per-CPU steal time so far, in ms, one number per CPU
steal_now() {
	awk -v hz="$(getconf CLK_TCK)" '/^cpu[0-9]/ { printf "%d ", $9 * 1000 / hz }' /proc/stat
}

# steal_since SNAPSHOT: the most one CPU lost since steal_now printed SNAPSHOT (ms)
steal_since() {
	paste <(tr ' ' '\n' <<<"$1" | grep .) <(steal_now | tr ' ' '\n' | grep .) |
		awk '{ d = $2 - $1; if (d > m) m = d } END { print m + 0 }'
}

# steal_redo STEAL_MS THRESHOLD_MS TRIES: true when a measurement that lost STEAL_MS of one
# CPU is to be made again (THRESHOLD_MS 0: never; at most twice, TRIES made again so far)
steal_redo() {
	[ "$2" -gt 0 ] && [ "$1" -ge "$2" ] && [ "$3" -lt 2 ]
}
