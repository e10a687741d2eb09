#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The flame-graph exports of a recording of real traffic (a standing queue behind a
# 20 Mbit/s bottleneck with a bulk neighbour, plus slow server compute) opened where users
# open them, in a real browser (Debian's chromium, headless):
#  - `report --format folded` loaded into speedscope (its npm package's own build, loaded
#    the way its command-line launcher does): every frame speedscope's sandwich table
#    lists, with its total and self weight, and the total sample weight equal the folded
#    file's own;
#  - `report --format svg` parsed by the browser as SVG (no parser error), its frames laid
#    out as flamegraph.pl lays the folded lines out (an independent layout here), the
#    totals and percentages in its titles the folded file's, its search (#s=REGEX) summing
#    the folded lines that hold the frame, and its click-to-zoom rescaling the frames.
. "$(dirname "$0")/../lib.sh"
tt_require_root
for b in "$TAILTRACE" "$LOADGEN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done
for t in tc python3 npm node; do
	command -v $t >/dev/null || { tt_skip "$(basename "$0")" "$t missing"; exit 0; }
done
if ! command -v chromium >/dev/null; then
	tt_skip "$(basename "$0")" "chromium missing (tools/deps.sh installs it)"
	exit 0
fi

W=$(mktemp -d)
PORT=7000
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	"$TESTBED" down >/dev/null 2>&1
	[ -n "${TT_KEEP:-}" ] && cp -r "$W" "$TT_KEEP"
	rm -rf "$W"
}
trap cleanup EXIT

# speedscope from the npm registry into the consumers' cache under build/ (once); the
# version is pinned: the checks read its sandwich table's markup
SPEEDSCOPE_VERSION=1.25.0
cache=$TT_BUILD/consumers
ss=$cache/node_modules/speedscope
mkdir -p "$cache"
if [ "$(node -p "require('$ss/package.json').version" 2>/dev/null)" != $SPEEDSCOPE_VERSION ]; then
	npm install --silent --no-audit --no-fund --prefix "$cache" \
		"speedscope@$SPEEDSCOPE_VERSION" >"$W/npm.log" 2>&1
fi
if [ ! -f "$ss/dist/release/index.html" ]; then
	tail -3 "$W/npm.log" | sed 's/^/# /'
	tt_skip "$(basename "$0")" "npm install speedscope@$SPEEDSCOPE_VERSION into $cache failed"
	exit 0
fi

# chromium_dom OUT MARK URL: the DOM of URL after its scripts ran, into OUT; a browser
# that stopped before the page held MARK (a start under heavy load) is given two more
# tries. A profile directory of its own keeps any other browser's lock out of the way.
chromium_dom() {
	local out=$1 mark=$2 url=$3 try rc
	for try in 1 2 3; do
		timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run \
			--user-data-dir="$W/chrome" --allow-file-access-from-files \
			--window-size=1200,4000 --virtual-time-budget=10000 --dump-dom "$url" \
			>"$out" 2>"$W/chromium.log"
		rc=$?
		grep -qF -- "$mark" "$out" && return 0
		echo "# try $try: no '$mark' in the DOM of ${url%%#*} (chromium exit $rc," \
			"$(wc -c <"$out") bytes)"
		tail -3 "$W/chromium.log" | sed 's/^/#   /'
	done
	return 1
}

# --- a recording of real traffic ---
tt_testbed_lock
tt_testbed_up
"$TESTBED" congest --link srv --rate 20mbit --buffer 64kb --bulk loadgen --bulk-conns 2 \
	--duration 30 >/dev/null 2>&1 || { tt_fail "testbed congest"; exit 1; }
ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port $PORT --duration 30 \
	--mode unary --compute const:500 --compute-kind block --slow-share 1 \
	--slow-extra-us 20000 >"$W/server.log" 2>&1 &
pids+=($!)
"$TAILTRACE" record --port $PORT -o "$W/rec" -i 1 -d 30 >"$W/rec.out" 2>"$W/rec.err" &
rp=$!
pids+=("$rp")
if ! tt_wait_attached "$rp"; then
	tt_fail "record attached ($(tail -1 "$W/rec.err"))"
	exit 1
fi
sleep 1 # the standing queue stands before the traffic
ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port $PORT --mode unary \
	--conns 2 --concurrency 2 --req-bytes 512 --resp-bytes 8192 --duration 4 \
	--json "$W/client.json" >/dev/null 2>"$W/client.log"
sleep 0.5 # the last requests reach the recorder
kill -INT "$rp"
wait "$rp"
"$TESTBED" down >/dev/null 2>&1
for f in folded svg json; do
	if [ $f = json ]; then args=(-j); else args=(--format $f); fi
	"$TAILTRACE" report "$W/rec" "${args[@]}" -o "$W/tail.$f" 2>"$W/report.err" || {
		tt_fail "report --format $f ($(tail -1 "$W/report.err"))"
		exit 1
	}
done
total=$(awk '{ s += $NF } END { printf "%d", s }' "$W/tail.folded")
tt_check "folded export of the recording: $(wc -l <"$W/tail.folded") stacks, $total ns" \
	test "${total:-0}" -gt 0 -a "$total" = "$(tt_json "$W/tail.json" tail_profile.total_ns)"

# --- speedscope: the folded file loaded as its launcher loads one ---
node -e 'const fs = require("fs");
fs.writeFileSync(process.argv[2], "speedscope.loadFileFromBase64(" + JSON.stringify("tail.folded") +
	", " + JSON.stringify(fs.readFileSync(process.argv[1]).toString("base64")) + ")");' \
	"$W/tail.folded" "$W/load.js"
chromium_dom "$W/speedscope.html" '<td' \
	"file://$ss/dist/release/index.html#localProfilePath=$W/load.js&view=sandwich"
python3 - "$W/tail.folded" "$W/speedscope.html" >"$W/ss.txt" 2>&1 <<'PY'
import re, sys
from html.parser import HTMLParser

def folded(path, bump=0):
    """Per frame name, as speedscope weighs it: total = the lines holding it (once per
    line), self = the lines it ends. bump adds to the first line's weight."""
    tot, slf, all_ = {}, {}, 0
    for i, line in enumerate(open(path, encoding="utf-8", errors="replace")):
        stack, w = line.rstrip("\n").rsplit(" ", 1)
        w = int(w) + (bump if i == 0 else 0)
        frames = stack.split(";")
        for f in set(frames):
            tot[f] = tot.get(f, 0) + w
        slf[frames[-1]] = slf.get(frames[-1], 0) + w
        all_ += w
    return tot, slf, all_

class Table(HTMLParser):
    """Rows of speedscope's sandwich table: [total cell, self cell, symbol name]."""
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.depth = [], None, None, 0
    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.row = []
        elif tag == "td" and self.row is not None:
            self.cell = ""
        elif tag == "div" and self.cell is not None:
            self.depth += 1 # the bar under the figure
    def handle_endtag(self, tag):
        if tag == "div" and self.cell is not None:
            self.depth -= 1
        elif tag == "td" and self.row is not None and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if len(self.row) == 3:
                self.rows.append(self.row)
            self.row = None
    def handle_data(self, data):
        if self.cell is not None and self.depth == 0:
            self.cell += data

def cell(text):
    """(weight, bound, percent): speedscope writes "<1%" and ">99%" near the ends"""
    m = re.fullmatch(r"([\d,]+) \(([<>]?)([\d.]+)%\)", text)
    assert m, "unexpected cell " + repr(text)
    return int(m.group(1).replace(",", "")), m.group(2), float(m.group(3))

def compare(rows, tot, slf, all_):
    """What differs between speedscope's table and the folded file; [] when nothing."""
    bad, names = [], set()
    for t, s, name in rows:
        (tw, tlt, tp), (sw, _, _) = cell(t), cell(s)
        names.add(name)
        if name not in tot:
            bad.append(f"{name!r}: not a frame of the folded file")
            continue
        if tw != tot[name] or sw != slf.get(name, 0):
            bad.append(f"{name!r}: total/self {tw}/{sw}, folded {tot[name]}/{slf.get(name, 0)}")
        # speedscope's percentage is of its own total sample weight
        pct = 100.0 * tw / all_
        if tlt == "<":
            ok = pct < tp + 0.051
        elif tlt == ">":
            ok = pct > tp - 0.051
        else:
            ok = abs(tp - pct) <= max(0.05 * pct, 0.051)
        if not ok:
            bad.append(f"{name!r}: {tp}% of speedscope's total, {pct:.3f}% of the folded total")
    if names != set(tot) or len(rows) != len(names):
        bad.append(f"frames missing: {sorted(set(tot) - names)}, {len(rows)} rows")
    if sum(cell(s)[0] for _, s, _ in rows) != all_:
        bad.append(f"self weights sum to {sum(cell(s)[0] for _, s, _ in rows)}, not {all_}")
    return bad

t = Table()
t.feed(open(sys.argv[2], encoding="utf-8").read())
rows = t.rows
tot, slf, all_ = folded(sys.argv[1])
bad = compare(rows, tot, slf, all_)
heavy = sorted(rows, key=lambda r: -cell(r[0])[0])[:3]
print(("ok" if rows and not bad else "fail") +
      f"|speedscope lists the folded file's {len(tot)} frames with their total and self "
      f"weights (heaviest: " + ", ".join(f"{n} {cell(t)[0]}" for t, _, n in heavy) +
      f"); self weights sum to the folded total {all_}" +
      ("" if rows and not bad else ": " + "; ".join(bad[:4]) + f" ({len(rows)} rows)"))
# the check has teeth: one nanosecond more on one line must show as a difference
bt, bs, ba = folded(sys.argv[1], bump=1)
print(("ok" if rows and compare(rows, bt, bs, ba) else "fail") +
      "|the comparison finds a folded file 1 ns off (negative control)")
PY
while IFS='|' read -r res msg; do
	case $res in
	ok) tt_ok "$msg" ;;
	fail) tt_fail "$msg" ;;
	*) tt_fail "speedscope check: $res $msg" ;;
	esac
done <"$W/ss.txt"

# --- the SVG: parsed by the browser, laid out as flamegraph.pl lays out the folded lines ---
# the search term: the heaviest stage (second frame), as a whole-name regex
stage=$(python3 -c 'import sys
w = {}
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    s = stack.split(";")[1]
    w[s] = w.get(s, 0) + int(n)
print(max(w, key=w.get))' "$W/tail.folded")
re=$(python3 -c 'import re, sys, urllib.parse as u; print(u.quote("^" + re.escape(sys.argv[1]) + "$"))' "$stage")
chromium_dom "$W/svg-dom.xml" '>Matched: ' "file://$W/tail.svg#s=$re"
# a copy with a probe appended that clicks the heaviest stage's frame, then "Reset zoom",
# and writes what the picture shows after each into the DOM
python3 - "$W/tail.svg" "$W/probe.svg" "$stage" <<'PY'
import sys
svg = open(sys.argv[1], encoding="utf-8").read()
probe = """<text id="probe"></text><script type="text/ecmascript"><![CDATA[
(function () {
	function state() {
		return Array.prototype.map.call(document.querySelectorAll("g.f"), function (g) {
			var r = g.querySelector("rect");
			return { l: +g.getAttribute("data-l"), s: +g.getAttribute("data-s"),
				n: +g.getAttribute("data-n"), name: g.getAttribute("data-name"),
				cls: g.getAttribute("class"), x: +r.getAttribute("x"),
				w: +r.getAttribute("width"),
				shown: getComputedStyle(g).display !== "none" };
		});
	}
	var z = Array.prototype.filter.call(document.querySelectorAll("g.f"), function (g) {
		return g.getAttribute("data-l") === "2" && g.getAttribute("data-name") === STAGE;
	}).sort(function (a, b) { return b.getAttribute("data-n") - a.getAttribute("data-n"); })[0];
	z.querySelector("rect").dispatchEvent(new MouseEvent("click", { bubbles: true }));
	var zoomed = state(), unzoom = getComputedStyle(document.getElementById("unzoom")).display;
	document.getElementById("unzoom").dispatchEvent(new MouseEvent("click", { bubbles: true }));
	document.getElementById("probe").textContent = JSON.stringify({ zoomed: zoomed,
		unzoom_shown: unzoom !== "none", reset: state() });
})();
]]></script>
""".replace("STAGE", '"' + sys.argv[3].replace("\\", "\\\\").replace('"', '\\"') + '"')
i = svg.rindex("</svg>")
open(sys.argv[2], "w", encoding="utf-8").write(svg[:i] + probe + svg[i:])
PY
chromium_dom "$W/probe-dom.xml" '<text id="probe">{' "file://$W/probe.svg"
python3 - "$W/tail.folded" "$W/svg-dom.xml" "$W/probe-dom.xml" "$stage" >"$W/svg.txt" 2>&1 <<'PY'
import html, json, re, sys
folded_path, dom_path, probe_path, stage = sys.argv[1:5]
lines = []
for line in open(folded_path, encoding="utf-8", errors="replace"):
    stack, w = line.rstrip("\n").rsplit(" ", 1)
    lines.append((stack.split(";"), int(w)))
total = sum(w for _, w in lines)
W = 1180.0

# flamegraph.pl's layout: lines sorted, a frame spans the consecutive lines sharing it and
# all frames below it; "all" underneath
lines.sort(key=lambda l: [f.encode() for f in l[0]])
want, at, open_ = {(0, 0, total, "all")}, 0, [None] * 4
for stack, w in lines:
    for lv in range(4):
        o = open_[lv]
        if o and o[3] == stack[lv] and all(open_[k][3] == stack[k] for k in range(lv)):
            o[2] += w
        else:
            for k in range(lv, 4):
                if open_[k]:
                    want.add(tuple(open_[k]))
                open_[k] = None
            open_[lv] = [lv + 1, at, w, stack[lv]]
    at += w
want |= {tuple(o) for o in open_ if o}
drawn = {f for f in want if f[2] * W / total >= 0.1}

def frames(dom):
    out = {}
    for m in re.finditer(r'<g class="f[^"]*" data-l="(\d)" data-s="(\d+)" data-n="(\d+)" '
                         r'data-name="([^"]*)"><title>([^<]*)</title>', dom):
        key = (int(m.group(1)), int(m.group(2)), int(m.group(3)), html.unescape(m.group(4)))
        out[key] = (html.unescape(m.group(5)), m.group(0))
    return out

def line(ok, msg):
    print(("ok" if ok else "fail") + "|" + msg)

dom = open(dom_path, encoding="utf-8").read()
got = frames(dom)
line(dom.lstrip().startswith("<svg") and "parsererror" not in dom and len(got) > 0,
     f"chromium parses the SVG export as SVG: no parser error, {len(got)} frames")
line(set(got) == drawn,
     f"the SVG's frames are the folded file's laid out as flamegraph.pl does ({len(drawn)} of "
     f"{len(want)} frames at least 0.1 px wide)" +
     ("" if set(got) == drawn else f": extra {sorted(set(got) - drawn)[:3]}, "
      f"missing {sorted(drawn - set(got))[:3]}"))
bad = []
for (lv, s, n, name), (title, _) in got.items():
    m = re.fullmatch(r"(.*) \(([^,]+), (\d+) ns, (\d+) samples?, ([\d.]+)%\)", title)
    if not m or m.group(1) != name or int(m.group(3)) != n or \
            abs(float(m.group(5)) - 100.0 * n / total) > 0.0051:
        bad.append(title)
line(not bad and (0, 0, total, "all") in got,
     f"SVG titles: name, ns and percent of the folded total {total} ns" +
     (": " + "; ".join(bad[:3]) if bad else ""))
sub = re.search(r'<text id="subtitle"[^>]*>total [^<]*\((\d+) ns\)', dom)
line(sub and int(sub.group(1)) == total,
     f"SVG subtitle total {sub.group(1) if sub else None} ns = folded total")
want_match = sum(w for stack, w in lines if stack[1] == stage)
m = re.search(r'<text id="matched"[^>]*>Matched: ([\d.]+)% \((\d+) ns\)<', dom)
marked = {k for k, (_, tag) in got.items() if "f match" in tag}
line(m and int(m.group(2)) == want_match and
     abs(float(m.group(1)) - 100.0 * want_match / total) <= 0.0051 and
     marked == {k for k in got if k[3] == stage},
     f"SVG search #s=^{stage}$ marks its frames and sums {m.group(2) if m else None} ns "
     f"= the folded lines through {stage} ({want_match} ns)")

probe = open(probe_path, encoding="utf-8").read()
p = re.search(r'<text id="probe">([^<]*)</text>', probe)
st = json.loads(html.unescape(p.group(1))) if p else {"zoomed": [], "reset": []}
z = max((f for f in st["zoomed"] if f["l"] == 2 and f["name"] == stage), key=lambda f: f["n"],
        default=None)
bad = []
for f in st["zoomed"] if z else []:
    inside = f["l"] >= 2 and z["s"] <= f["s"] and f["s"] + f["n"] <= z["s"] + z["n"]
    below = f["l"] < 2 and f["s"] <= z["s"] and f["s"] + f["n"] >= z["s"] + z["n"]
    if inside:
        ok = f["shown"] and abs(f["w"] - f["n"] * W / z["n"]) < 0.01 and \
            abs(f["x"] - (10 + (f["s"] - z["s"]) * W / z["n"])) < 0.01
    elif below:
        ok = f["shown"] and "dim" in f["cls"] and abs(f["w"] - W) < 0.01
    else:
        ok = not f["shown"]
    if not ok:
        bad.append(f)
line(z and not bad and st["unzoom_shown"],
     f"SVG click-to-zoom on {stage}: its frame spans the width, the frames above it scale by "
     f"total/{z['n'] if z else 0}, those below are dimmed, the rest hidden" +
     (f": {bad[:2]}" if bad else ""))
bad = [f for f in st["reset"]
       if not f["shown"] or "dim" in f["cls"] or abs(f["w"] - f["n"] * W / total) > 0.01]
line(st["reset"] and not bad, "SVG Reset zoom draws every frame at its width again" +
     (f": {bad[:2]}" if bad else ""))
PY
while IFS='|' read -r res msg; do
	case $res in
	ok) tt_ok "$msg" ;;
	fail) tt_fail "$msg" ;;
	*) tt_fail "SVG check: $res $msg" ;;
	esac
done <"$W/svg.txt"
exit 0
