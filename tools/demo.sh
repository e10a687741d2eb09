#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: tailtrace end to end on the namespace testbed. Inference-like RPC traffic runs
# three times -- clean, with 1 % slow compute, behind a congested bottleneck -- and each time
# `tailtrace explain` says where the tail went, next to the load generator's own timings.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
TT=${TAILTRACE:-$root/build/tailtrace}
LG=${LOADGEN:-$root/build/loadgen}
TB=$root/tools/testbed
. "$root/tests/lib.sh" # tt_wait_attached
export LOADGEN=$LG
secs=${DEMO_SECONDS:-8}
work=$(mktemp -d /tmp/tailtrace-demo.XXXXXX)

[ "$(id -u)" -eq 0 ] || { echo "make demo needs root (BPF and network namespaces)" >&2; exit 1; }
exec 9>/run/tailtrace-testbed.lock
flock 9
cleanup() { "$TB" down >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

banner() { printf '\n==== %s ====\n' "$*"; }

banner "what this kernel allows"
"$TT" probe | sed -n '/hook kinds/,/^$/p'

"$TB" down >/dev/null 2>&1 || true
"$TB" up >/dev/null
eval "$("$TB" env)"

# scenario NAME SERVER_OPTS...: server in tt-srv, client in tt-cli, tailtrace on the host
scenario() {
	local name=$1; shift
	banner "$name"
	ip netns exec "$TB_NS_SRV" "$LG" server --listen 0.0.0.0 --port 7000 --mode unary \
		--resp-bytes 8192 --duration $((secs + 10)) --name tt-model "$@" \
		>"$work/server.log" 2>&1 &
	local srv=$!
	sleep 0.5
	"$TT" explain --port 7000 --role server -d "$((secs + 1))" -j >"$work/explain.json" \
		2>"$work/explain.err" &
	local tt=$!
	# the first request only once every program is attached: loading takes longer on a
	# busy machine (the congested scenario's bulk neighbour), and a fixed sleep lost the
	# first requests there
	tt_wait_attached "$tt" 600 || { cat "$work/explain.err" >&2; return 1; }
	ip netns exec "$TB_NS_CLI" "$LG" client --connect "$TB_SRV4" --port 7000 --mode unary \
		--conns 4 --concurrency 4 --req-bytes 512 --resp-bytes 8192 --duration "$secs" \
		--json "$work/client.json" --name tt-client >/dev/null 2>&1 || true
	wait "$tt" || { cat "$work/explain.err" >&2; return 1; }
	kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null || true
	python3 - "$work/explain.json" "$work/client.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
v = t["verdict"]
print(f"tailtrace verdict : {v['class']} ({v.get('kind')})" + (f" -- {v.get('stage')} at {v.get('where')}" if v["class"] not in ("none",) and v.get("stage") else ""))
print(f"                    {v['summary']}")
tl, cl = t["latency_us"], c["latency_us"]
# the loadgen closes each connection with one more exchange (the server's timings)
print(f"requests          : tailtrace {t['requests']}  load generator {c['requests']}"
      f" + {c['conns']} closing exchanges")
print(f"latency p50 / p99 : tailtrace {tl['p50']/1e3:.2f} / {tl['p99']/1e3:.2f} ms (server side)"
      f"   load generator {cl['p50']/1e3:.2f} / {cl['p99']/1e3:.2f} ms (client side)")
sp = t["tail"].get("split")
if sp:  # the p99 request: what it costs when nothing waits, its own work, its waiting
    print(f"p99 request       : floor {sp['floor_us']/1e3:.2f} ms + work {sp['work_us']/1e3:.2f} ms + waiting "
          + "  ".join(f"{k} {w/1e3:.2f} ms" for k, w in sp["waiting_us"].items() if w >= 50))
sh = t["tail"]["excess_shares"]
print("p99 excess shares : " + "  ".join(f"{k} {sh[k]*100:.0f}%" for k in ("compute", "transport", "congestion")))
for s in t["tail"]["stages"][:3]:
    print(f"  {s['stage']:<13} {s['class']:<11} {s['share']*100:5.1f}% of tail latency  {s.get('where') or ''}")
PY
}

scenario "baseline: 0.5 ms of model time per request (a GPU wait), nothing wrong" \
	--compute const:500 --compute-kind block
scenario "slow compute: 1 % of requests take +50 ms in the model" \
	--compute const:500 --compute-kind block --slow-share 1 --slow-extra-us 50000
"$TB" congest --link srv --rate 20mbit --buffer 64kb >/dev/null
# the bulk neighbour never stops: a standing queue that slows every request alike, which the
# chronic question names (the tail is not much worse than the median)
scenario "standing queue: 20 Mbit/s bottleneck on the server's uplink, shared with a bulk neighbour that never stops" \
	--compute const:500 --compute-kind block
tc -n "$TB_NS_SRV" -s qdisc show dev "$TB_SRV_DEV" | sed -n '1,3p' | sed 's/^/  tc: /'
"$TB" clear >/dev/null

banner "done: tailtrace hist, top, record and report work the same way (see README.md)"
