#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Prometheus rules and the Grafana dashboard of dist/, checked by Prometheus' own
# tools and against what the exporter really emits: promtool check rules, promtool test
# rules (hand-worked expectations, tests/prometheus/), every metric and label the rules,
# the rule tests and the dashboard name is one `report --format openmetrics` writes for
# the synthetic recording of tests/ns/exports_fixture.c, and every dashboard query parses
# in promtool. Needs no root.
set -u
. "$(dirname "$0")/../lib.sh"

rules=$TT_ROOT/dist/prometheus/tailtrace.rules.yml
ruletest=$TT_ROOT/tests/prometheus/tailtrace.rules.test.yml
dash=$TT_ROOT/dist/grafana/tailtrace-dashboard.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! command -v promtool >/dev/null; then
	# Debian's prometheus package ships promtool; a fresh machine needs the lists first
	{ DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus ||
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
		--no-install-recommends prometheus; }; } >"$work/apt.log" 2>&1 || true
fi
if ! command -v promtool >/dev/null; then
	tail -3 "$work/apt.log"
	tt_skip "promtool checks of the rules and dashboard" "prometheus package not installable"
	exit 0
fi

# --- rules ---
if promtool check rules "$rules" >"$work/check.log" 2>&1; then
	tt_ok "promtool check rules: $(grep -o '[0-9]* rules found' "$work/check.log")"
else
	cat "$work/check.log"
	tt_fail "promtool check rules"
fi
if (cd "$(dirname "$ruletest")" && promtool test rules "$(basename "$ruletest")") \
	>"$work/test.log" 2>&1; then
	tt_ok "promtool test rules: per-host and fleet p99, tail shares, rates, 5 alerts on the right host"
else
	cat "$work/test.log"
	tt_fail "promtool test rules"
fi
# negative control: the fleet p99 taken as a p90 must fail the hand-worked expectations
mkdir -p "$work/neg/dist/prometheus" "$work/neg/tests/prometheus"
sed 's/histogram_quantile(0.99, sum without/histogram_quantile(0.9, sum without/' "$rules" \
	>"$work/neg/dist/prometheus/tailtrace.rules.yml"
cp "$ruletest" "$work/neg/tests/prometheus/"
if (cd "$work/neg/tests/prometheus" && promtool test rules "$(basename "$ruletest")") \
	>/dev/null 2>&1; then
	tt_fail "promtool test rules fails on a fleet p90 posing as p99 (the test has teeth)"
else
	tt_ok "promtool test rules fails on a fleet p90 posing as p99 (the test has teeth)"
fi

# --- what the exporter emits: families of report --format openmetrics ---
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
"$work/fixture" "$work/rec" >/dev/null &&
	"$TAILTRACE" report "$work/rec" --format openmetrics -o "$work/om.txt"
tt_check "the fixture's recording exports as OpenMetrics ($(grep -c '^# TYPE' "$work/om.txt") families)" \
	grep -q '^# EOF' "$work/om.txt"

# the checks below print "ok"/"not ok" lines themselves
python3 - "$work/om.txt" "$rules" "$ruletest" "$dash" "$work" "$TT_N" <<'EOF'
import json, re, subprocess, sys

om, rules_path, ruletest_path, dash_path, work, tap_n = sys.argv[1:]
results = []

def check(desc, cond, detail=""):
    results.append((bool(cond), desc + (" (%s)" % detail if detail and not cond else "")))

# metric names the exporter writes, from its # TYPE lines
emitted, les = set(), set()
for line in open(om):
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        name, typ = m.groups()
        emitted |= {name + s for s in ("_bucket", "_count", "_sum")} if typ == "histogram" \
            else {name + "_total"} if typ == "counter" else {name}
    m = re.search(r'le="([^"]+)"', line)
    if m:
        les.add(m.group(1))
labels_emitted = set(re.findall(r'[{,]([a-z_]+)="', open(om).read())) | {"instance", "job"}

import yaml  # python3-yaml; the rule file is YAML
rules = yaml.safe_load(open(rules_path))
recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
builtin = {"ALERTS"}

def names(expr):
    """Metric names an expression reads: identifiers naming a tailtrace series."""
    expr = re.sub(r'"[^"]*"', '""', expr)
    return set(re.findall(r"[A-Za-z0-9_:]*tailtrace[A-Za-z0-9_:]*", expr)) | \
        ({"ALERTS"} & set(re.findall(r"\w+", expr)))

def label_names(expr):
    expr = re.sub(r'"[^"]*"', '""', expr)
    found = set()
    for body in re.findall(r"\{([^}]*)\}", expr):
        found |= set(re.findall(r"([A-Za-z_]+)\s*(?:=~|!~|!=|=)", body))
    for body in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        found |= {x.strip() for x in body.split(",") if x.strip()}
    return found

known_labels = labels_emitted | {"alertname", "alertstate", "__name__"}
rule_exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
bad = sorted({x for e in rule_exprs for x in names(e)} - emitted - recorded)
check("every series the rules read is emitted or recorded", not bad, "unknown: %s" % bad)
bad = sorted({x for e in rule_exprs for x in label_names(e)} - known_labels)
check("every label the rules match or group by is emitted", not bad, "unknown: %s" % bad)

# the rule tests feed series the exporter really writes, with its bucket bounds
test = yaml.safe_load(open(ruletest_path))
series = [s["series"] for t in test["tests"] for s in t["input_series"]]
bad = sorted({re.match(r"[^{]+", s).group(0) for s in series} - emitted)
check("the rule tests' input series are emitted metrics", not bad, "unknown: %s" % bad)
bad = sorted({m for s in series for m in re.findall(r'le="([^"]+)"', s)} - les)
check("the rule tests' le bounds are the exporter's", not bad, "not emitted: %s" % bad)

# --- the dashboard ---
d = json.load(open(dash_path))
check("dashboard has title, uid, schemaVersion, panels, templating, time",
      all(k in d for k in ("title", "uid", "schemaVersion", "panels", "templating", "time")))
panels = d["panels"]
ids = [p.get("id") for p in panels]
check("%d panels with unique ids" % len(panels), len(set(ids)) == len(ids) and None not in ids)
types = {"timeseries", "table", "heatmap", "stat", "gauge", "bargauge", "text", "row"}
bad = [p.get("title") for p in panels if p.get("type") not in types or not p.get("title")
       or not all(k in p.get("gridPos", {}) for k in "xywh")]
check("every panel has a known type, a title and a gridPos", not bad, bad)
overlap = []
cells = {}
for p in panels:
    g = p["gridPos"]
    for x in range(g["x"], g["x"] + g["w"]):
        for y in range(g["y"], g["y"] + g["h"]):
            if (x, y) in cells:
                overlap.append((cells[(x, y)], p["title"]))
            cells[(x, y)] = p["title"]
    if g["x"] + g["w"] > 24:
        overlap.append((p["title"], "wider than 24 columns"))
check("panels fit the 24-column grid without overlapping", not overlap, sorted(set(overlap))[:3])
varnames = {v["name"] for v in d["templating"]["list"]}
exprs = [(p["title"], t["expr"]) for p in panels for t in p["targets"]]
check("every panel has queries, each with a refId",
      all(p["targets"] and all(t.get("refId") and t.get("expr") for t in p["targets"])
          for p in panels if p["type"] != "row"))
used = {v for _, e in exprs for v in re.findall(r"\$(\w+)", e)} - {"__rate_interval", "__interval"}
check("queries use only the dashboard's variables (%s)" % " ".join(sorted(used)),
      used <= varnames, used - varnames)
for v in d["templating"]["list"]:
    if v["type"] == "query":
        exprs.append(("variable " + v["name"],
                      re.sub(r"label_values\((\w+),\s*\w+\)", r"\1", v["definition"])))

def substitute(e):
    return e.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace(
        "$host", "host1").replace("$stage", "req.latency")

bad = sorted({x for _, e in exprs for x in names(e)} - emitted - recorded - builtin)
check("every series the dashboard reads is emitted or recorded", not bad, "unknown: %s" % bad)
bad = sorted({x for _, e in exprs for x in label_names(e)} - known_labels)
check("every label the dashboard matches is emitted", not bad, "unknown: %s" % bad)
# promtool parses each query: wrapped as a recording rule, checked like the rule file
with open(work + "/dash-rules.yml", "w") as f:
    yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
        {"record": "dashboard:query_%d" % i, "expr": substitute(e)}
        for i, (_, e) in enumerate(exprs)]}]}, f)
r = subprocess.run(["promtool", "check", "rules", work + "/dash-rules.yml"],
                   capture_output=True, text=True)
check("promtool parses all %d dashboard queries" % len(exprs), r.returncode == 0,
      (r.stdout + r.stderr).strip()[-300:])
alerts_shown = set(re.findall(r'alertname=~"([^"]+)"', " ".join(e for _, e in exprs)))
check("the alerts panel matches every alert of the rules",
      all(any(re.fullmatch(a, x) for a in alerts_shown) for x in alerts), alerts)

for i, (ok, desc) in enumerate(results):
    print(("ok" if ok else "not ok") + " %d - %s" % (int(tap_n) + 1 + i, desc))
EOF
exit 0
