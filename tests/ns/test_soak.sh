#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Bounded memory under churn (issue 9), the short version of tools/soak.sh (SOAK_SECONDS,
# default 60 here): `tailtrace record` traces eight ports while one client opens short
# connections as fast as it can from 250 source addresses and another runs each connection
# in its own process. Checks, against the churn tool's own counts:
#  - RSS does not grow after the first sample (+2 MiB at most);
#  - the flows map never holds more than the connections open at once allow, and is empty
#    once the churn ends (sockets that closed left nothing behind); threads of exited
#    processes are gone; hists/stamps stay far below their bounds;
#  - nothing was lost or failed, and the recorded requests = the exchanges made (+-0.1 %);
#  - the segment directory respects --max-size; record exits 0.
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root
CHURN=${CHURN:-$TT_BUILD/churn}
for b in "$TAILTRACE" "$CHURN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
SOAK_SECONDS=${SOAK_SECONDS:-60} SOAK_SAMPLE=${SOAK_SAMPLE:-5} SOAK_NET=31 SOAK_PORT=7310 \
	SOAK_JSON="$out" "$TT_ROOT/tools/soak.sh" || { tt_fail "soak run"; exit 1; }
python3 - "$out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n = 0
def check(ok, desc):
    global n
    n += 1
    print(("ok" if ok else "not ok") + f" {n} - {desc}")
occ, after, rep = s["max_occupancy"], s["after_churn"], s["report"]
check(s["record_exit"] == 0, "record exits 0 on SIGINT after the soak")
check(s["connections"] > 50000 and s["processes"] > 2000,
      f"churn ran: {s['connections']} connections, {s['processes']} processes")
check(s["rss_kb_last"] - s["rss_kb_first"] <= 2048 and s["rss_kb_max"] - s["rss_kb_first"] <= 2048,
      f"RSS flat: first {s['rss_kb_first']} KiB, last {s['rss_kb_last']} KiB, max {s['rss_kb_max']} KiB")
# 64 + 8 client connections at once, two sockets each, plus TIME_WAIT-less closes in flight
check(0 < occ["flows"] <= 2 * (64 + 8) * 4,
      f"flows map occupancy bounded by open connections: max {occ['flows']}")
check(after["flows"] == 0, f"flows map empty after the churn: {after['flows']} left")
check(after["threads"] <= 2, f"threads of exited processes gone: {after['threads']} left")
check(occ["hists"] < 200, f"hists occupancy small and flat: max {occ['hists']}")
check(max(occ["qdisc_stamps"], occ["rx_stamps"]) < 2000 and
      after["qdisc_stamps"] + after["rx_stamps"] <= 4,
      f"stamp maps: max qdisc {occ['qdisc_stamps']} rx {occ['rx_stamps']}, "
      f"left {after['qdisc_stamps']}/{after['rx_stamps']}")
c = rep.get("counters", {})
fails = sum(v for k, v in c.items() if k.endswith("_fail"))
check(rep.get("hist_evicted") == 0 and rep.get("events_lost") == 0 and fails == 0,
      f"nothing evicted, lost or failed (evicted {rep.get('hist_evicted')}, "
      f"lost {rep.get('events_lost')}, failed {fails})")
req, ex = rep.get("requests") or 0, s["exchanges"]
check(ex > 0 and abs(req - ex) <= max(2, ex / 1000),
      f"recorded requests {req} = exchanges made {ex} (+-0.1 %)")
check(s["record_dir_bytes"] <= 4 << 20, f"segments within --max-size 4M: {s['record_dir_bytes']} bytes")
sys.exit(0)
PY
