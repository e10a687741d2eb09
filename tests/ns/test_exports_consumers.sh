#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The exports of `tailtrace report` read by real consumers, not only by our own parser:
# pprof by the pprof-format npm decoder, OpenMetrics by Prometheus' own parser (promtool
# backfill), folded stacks by flamegraph.pl's line rules, trace-event JSON by a schema
# check of the Chrome trace-event rules. Ground truth comes from the synthetic recording
# (tests/ns/exports_fixture.c): the sum of the kept requests' latencies. Needs no root.
set -u
. "$(dirname "$0")/../lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$TT_BUILD/consumers
mkdir -p "$cache"

if [ ! -x "$TAILTRACE" ] || [ ! -f "$TT_BUILD/libtt.a" ]; then
	tt_fail "build/tailtrace and build/libtt.a exist (run make first)"
	exit 1
fi
if ! cc -O1 -g -std=gnu11 -D_GNU_SOURCE -I"$TT_ROOT/bpf" -I"$TT_ROOT/user" -I"$TT_BUILD" \
	"$TT_ROOT/tests/ns/exports_fixture.c" "$TT_BUILD/libtt.a" -lbpf -lelf -lz -lpthread -lm \
	-o "$work/fixture" 2>"$work/cc.log"; then
	cat "$work/cc.log"
	tt_fail "fixture builds"
	exit 1
fi
truth=$("$work/fixture" "$work/rec") || { tt_fail "fixture writes a recording"; exit 1; }
eval "$truth" # tail_ns requests latency_count qdisc_ns
tt_ok "fixture recorded 6 intervals ($truth)"

mode=$(stat -c %a "$work"/rec/seg-*.ttrec | sort -u)
tt_check "segments are created 0600 (got $mode)" test "$mode" = 600

# --- the explain report as ground truth carrier ---
"$TAILTRACE" report "$work/rec" -j >"$work/report.json" 2>"$work/err" || cat "$work/err"
rep_tail=$(tt_json "$work/report.json" tail_profile.total_ns 2>/dev/null)
rep_cnt=$(tt_json "$work/report.json" tail_profile.total_count 2>/dev/null)
tt_check "report JSON tail total = sum of kept request latencies ($rep_tail vs $tail_ns)" \
	test "${rep_tail:-x}" = "$tail_ns"
tt_check "report JSON req.latency count = recorded ($latency_count)" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["stage"]: s for s in d["stages"]}
sys.exit(0 if st["req.latency"]["count"] == int(sys.argv[2]) else 1)' "$work/report.json" "$latency_count"

# window selection: the first 30 s hold 3 of the 6 intervals
"$TAILTRACE" report "$work/rec" -j --from 2024-05-01T12:00:00Z --to 2024-05-01T12:00:30Z \
	>"$work/half.json" 2>/dev/null
tt_check "--from/--to selects 3 of 6 intervals" \
	test "$(tt_json "$work/half.json" window.intervals 2>/dev/null)" = 3

# --- pprof: decoded by the pprof-format package (npm) ---
have_pprof=0
if [ -f "$cache/node_modules/pprof-format/package.json" ] ||
	npm install --silent --no-audit --no-fund --prefix "$cache" pprof-format@2 \
		>"$work/npm.log" 2>&1; then
	have_pprof=1
fi
if [ $have_pprof = 1 ] && command -v node >/dev/null; then
	"$TAILTRACE" report "$work/rec" --format pprof -o "$work/tail.pb.gz"
	if NODE_PATH="$cache/node_modules" node -e '
const zlib = require("zlib"), fs = require("fs");
const { Profile } = require("pprof-format");
const p = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[1])));
const st = p.stringTable.strings;
if (st[0] !== "") throw new Error("string table must start with \"\"");
const types = p.sampleType.map(t => st[Number(t.type)] + "/" + st[Number(t.unit)]);
if (types.join(",") !== "tail_latency/nanoseconds,requests/count")
	throw new Error("sample types " + types);
let ns = 0n, cnt = 0n;
const locs = new Set(p.location.map(l => Number(l.id)));
for (const s of p.sample) {
	ns += BigInt(s.value[0]); cnt += BigInt(s.value[1]);
	if (s.locationId.length !== 4) throw new Error("stack depth");
	for (const id of s.locationId) if (!locs.has(Number(id))) throw new Error("dangling location");
}
const roots = new Set(p.sample.map(s => st[Number(p.function.find(f =>
	Number(f.id) === Number(p.location.find(l => Number(l.id) === Number(s.locationId[3])).line[0].functionId)).name)]));
if (!roots.has("congestion")) throw new Error("no congestion root frame: " + [...roots]);
if (ns !== BigInt(process.argv[2]) || cnt !== BigInt(process.argv[3]))
	throw new Error("totals " + ns + "/" + cnt + " vs " + process.argv[2] + "/" + process.argv[3]);
' "$work/tail.pb.gz" "$tail_ns" "$rep_cnt" 2>"$work/node.err"; then
		tt_ok "pprof decodes with pprof-format; totals = report ($tail_ns ns, $rep_cnt)"
	else
		cat "$work/node.err"
		tt_fail "pprof decodes with pprof-format; totals = report"
	fi
else
	cat "$work/npm.log" 2>/dev/null | tail -5
	tt_skip "pprof decodes with pprof-format" "npm install pprof-format failed"
fi

# --- OpenMetrics: Prometheus' strict OpenMetrics parser (promtool backfill) ---
if ! command -v promtool >/dev/null; then
	# Debian's prometheus package ships promtool; a fresh machine needs the lists first
	{ DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus ||
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
		--no-install-recommends prometheus; }; } >"$work/apt.log" 2>&1 || true
fi
if command -v promtool >/dev/null; then
	"$TAILTRACE" report "$work/rec" --format openmetrics -o "$work/om.txt"
	if promtool tsdb create-blocks-from openmetrics "$work/om.txt" "$work/tsdb" \
		>"$work/prom.log" 2>&1; then
		tt_ok "promtool parses the OpenMetrics export ($(grep -c . "$work/om.txt") lines)"
	else
		cat "$work/prom.log"
		tt_fail "promtool parses the OpenMetrics export"
	fi
	# negative control: the same parser must reject a file without "# EOF"
	grep -v '^# EOF' "$work/om.txt" >"$work/om-noeof.txt"
	if promtool tsdb create-blocks-from openmetrics "$work/om-noeof.txt" "$work/tsdb2" \
		>/dev/null 2>&1; then
		tt_fail "promtool rejects an exposition without # EOF (parser not strict?)"
	else
		tt_ok "promtool rejects an exposition without # EOF (the check has teeth)"
	fi
	tt_check "OpenMetrics buckets cumulative, +Inf = _count = recorded" python3 -c '
import re, sys
series = {}
for line in open(sys.argv[1]):
    m = re.match(r"tailtrace_stage_latency_seconds_(bucket|count)\{(.*?)(?:,le=\"([^\"]+)\")?\} (\d+)", line)
    if not m: continue
    kind, labels, le, v = m.group(1), m.group(2), m.group(3), int(m.group(4))
    s = series.setdefault(labels, {"b": [], "c": None})
    if kind == "bucket": s["b"].append((float("inf") if le == "+Inf" else float(le), v))
    else: s["c"] = v
for labels, s in series.items():
    les = [b[0] for b in s["b"]]; vs = [b[1] for b in s["b"]]
    assert les == sorted(les) and les[-1] == float("inf"), labels
    assert vs == sorted(vs), labels
    assert vs[-1] == s["c"], labels
lat = [s for l, s in series.items() if "req.latency" in l][0]
assert lat["c"] == int(sys.argv[2]), lat["c"]
' "$work/om.txt" "$latency_count"
else
	tail -3 "$work/apt.log" 2>/dev/null
	tt_skip "promtool parses the OpenMetrics export" "prometheus package not installable"
fi

# --- folded: flamegraph.pl's input rules ---
"$TAILTRACE" report "$work/rec" --format folded -o "$work/tail.folded"
tt_check "folded lines follow flamegraph.pl rules; total = sum of latencies" python3 -c '
import re, sys
total, n = 0, 0
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    # flamegraph.pl: the count is the last whitespace-separated number, frames split on ";"
    m = re.match(r"^(.*)\s+?(\d+(?:\.\d*)?)$", line)
    assert m, "unparsable line: " + line
    frames = m.group(1).split(";")
    assert len(frames) == 4 and all(frames), line
    assert frames[0] in ("compute", "transport", "congestion", "unattributed"), frames[0]
    total += int(m.group(2)); n += 1
assert n > 0 and total == int(sys.argv[2]), (total, sys.argv[2])
' "$work/tail.folded" "$tail_ns"

# --- perfetto: the Chrome trace-event format rules ---
"$TAILTRACE" report "$work/rec" --format perfetto -o "$work/trace.json"
tt_check "trace-event JSON: M/X/i events valid, one track per request, X nested" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert isinstance(ev, list) and ev
tracks, names = {}, {}
for e in ev:
    assert e["ph"] in ("M", "X", "i"), e
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
    assert isinstance(e["name"], str) and e["name"], e
    if e["ph"] == "M":
        assert e["name"] in ("process_name", "thread_name", "thread_sort_index"), e
        assert "name" in e["args"] or "sort_index" in e["args"], e
        if e["name"] == "thread_name": names[(e["pid"], e["tid"])] = e["args"]["name"]
        continue
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
    if e["ph"] == "X":
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    else:
        assert e.get("s") in ("g", "p", "t"), e
reqs = 0
for key, xs in tracks.items():
    assert key in names, "track without thread_name"
    top = [x for x in xs if x["name"] == "request"]
    assert len(top) == 1, "one request per track"
    r = top[0]; reqs += 1
    end = r["ts"] + r["dur"]
    for x in xs:
        assert x["ts"] >= r["ts"] - 1e-6 and x["ts"] + x["dur"] <= end + 1e-6, (x, r)
    parts = sorted((x for x in xs if x is not r), key=lambda x: x["ts"])
    for a, b in zip(parts, parts[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 1e-6, "siblings overlap"
assert reqs == int(sys.argv[2]), (reqs, sys.argv[2])
' "$work/trace.json" "$requests"

tt_check "trace-event JSON: every track nested as viewers read it (tools/check-perfetto.py)" \
	"$TT_ROOT/tools/check-perfetto.py" "$work/trace.json" --min-events "$requests"

# --- damaged recordings: torn tail is a warning, corruption an error with the offset ---
seg=$(ls "$work"/rec/seg-*.ttrec | head -1)
cp -r "$work/rec" "$work/torn"
tseg="$work/torn/$(basename "$seg")"
truncate -s -7 "$tseg"
if "$TAILTRACE" report "$work/torn" -j >"$work/torn.json" 2>"$work/torn.err" &&
	grep -q "torn" "$work/torn.err"; then
	tt_ok "torn last frame: warning, exit 0, $(tt_json "$work/torn.json" window.intervals) intervals left"
else
	cat "$work/torn.err"
	tt_fail "torn last frame: warning, exit 0"
fi
cp -r "$work/rec" "$work/bad"
bseg="$work/bad/$(basename "$seg")"
printf '\xff' | dd of="$bseg" bs=1 seek=200 conv=notrunc status=none
"$TAILTRACE" report "$work/bad" >/dev/null 2>"$work/bad.err"
rc=$?
tt_check "corrupt middle frame: exit $rc != 0, message names file and offset" \
	bash -c '[ "$1" -ne 0 ] && grep -q "$2.*offset [0-9]" "$3"' _ "$rc" "$(basename "$seg")" \
	"$work/bad.err"
printf 'hello, not a recording\n' >"$work/foreign.ttrec"
"$TAILTRACE" report "$work/foreign.ttrec" >/dev/null 2>"$work/foreign.err"
rc=$?
tt_check "foreign file: exit $rc != 0 with a message" \
	test $rc -ne 0 -a -s "$work/foreign.err"
exit 0
