#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 5's judged scenarios, one run each, on the namespace testbed: `tailtrace explain`
# must name the fault (baseline -> none, slow compute -> compute, CPU hog bursts ->
# compute/sched.runq, bottleneck + bulk neighbour -> congestion at the bottleneck's qdisc,
# random loss -> transport/tcp.retrans, slow reader -> compute/rx.sockq on the client),
# count the loadgen's requests within 1 % and match its p50/p99 (client view vs the loadgen
# client's latency) within 10 %; streams also their TTFT. Unary IPv4 for every scenario,
# plus streaming slow compute and IPv6 congestion. Issue 22's constant faults (a standing
# queue behind a tbf on the server's and on the client's egress, steady CPU hogs on the
# serving core, every client a slow reader, persistent 5 % loss) must be named too, the
# first four by the chronic question (a `none` verdict on a standing queue fails). A
# third-party server and client too: nginx and h2load on one keep-alive connection, clean
# and in congestion bursts one request at a time (count and p50/p99 against h2load's own
# log), and pipelined behind the server's standing queue (chronic, `none` fails; tailtrace
# must say the requests overlap). Ping-pong behind the standing queue is judged by
# tools/judge-explain.sh only: its client view still merges a few exchanges now and then
# (docs/attribution-results.md, known limits). The full judgement (10 runs
# of every case, hit rates) is tools/judge-explain.sh; results in
# docs/attribution-results.md. EXPLAIN_CASES=LIST runs only those cases (the judge's
# --cases syntax, e.g. 'nginx*:*:4').
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root
for b in "$TAILTRACE" "$LOADGEN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done
for t in nft tc taskset python3 nginx h2load; do
	command -v $t >/dev/null || { tt_skip "$(basename "$0")" "$t missing"; exit 0; }
done
# one run of each case; every check line comes from the judge's --tap output, numbered here
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
TAILTRACE=$TAILTRACE LOADGEN=$LOADGEN TESTBED=$TESTBED \
	"$TT_ROOT/tools/judge-explain.sh" --runs 1 --tap --json "$out/judge.json" --cases \
	"${EXPLAIN_CASES:-baseline:unary:4,slowcompute:unary:4,slowcompute:stream:4,cpuhog:unary:4,congestion:unary:4,congestion:unary:6,loss:unary:4,slowread:unary:4,standingsrv:unary:4,standingcli:unary:4,steadyhog:unary:4,slowreadall:unary:4,lossy:unary:4,nginxclean:pingpong:4,nginxstanding:pipelined:4,nginxcongestion:pingpong:4}" |
	awk '/^(not )?ok - / { n++; sub(/ok - /, "ok " n " - ") } { print; fflush() }
	     END { if (!n) print "not ok 1 - the judge printed no results" }'
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || { echo "# judge-explain exited $rc"; exit 1; }
