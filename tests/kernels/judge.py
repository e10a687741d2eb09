#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judges one guest run of tests/kernels/guest_scenarios.sh (its output on stdin or in the
file named) against the clients' own figures, and prints TAP result lines without
numbers ("ok - ...", numbered by the caller).

  judge.py LABEL [LOG]

probe: the object matches the kernel (compat without bpf_rdonly_cast), every TCP and
request stage is fed. clean/stream: request count within 1 % of the load generator's (plus
the one closing exchange per connection), latency p50/p99 within 10 % (or inside the
generator's own quantiles half a percentile either side, widened by 10 %); a stream's TTFT
between the server's prefill and the client's own (which ends later, at its read). sockperf: count
within 1 % of its messages, p50/p99 within 10 % of twice its half-round-trip percentiles.
commands: hist's send count (both ends) within 2 % of the generator's, its receive-side
stages sampled, record + report's request count within 1 %, and rdma loads. cpuhog/congestion: the
verdict's class."""
import json
import math
import re
import sys

TCP_STAGES = ["tx.sendq", "tx.qdisc", "tx.nic", "tx.ack", "rx.stack", "rx.sockq", "tcp.rtt",
              "tcp.retrans", "sched.runq", "sched.oncpu", "sched.offcpu", "req.latency",
              "req.ttft", "req.gap"]
CONNS = 2  # guest_scenarios.sh: every loadgen client runs two connections
PREFILL_US = 2000  # ... and the stream server's prefill

label = sys.argv[1]
text = open(sys.argv[2]).read() if len(sys.argv) > 2 else sys.stdin.read()
sections = dict(re.findall(r"### BEGIN (\S+)\n(.*?)\n### END \1", text, re.S))
results = []


def check(ok, what):
    results.append(("ok" if ok else "not ok") + " - " + label + ": " + what)


def load(name):
    try:
        return json.loads(sections[name])
    except (KeyError, ValueError) as e:
        check(False, f"{name}: no JSON ({e.__class__.__name__})")
        err = sections.get(name + ".err", "").strip()
        if err:
            print("# " + err.replace("\n", "\n# "))
        return None


def nearest(vals, p):
    vals = sorted(vals)
    if not vals:
        return None
    return vals[max(1, math.ceil(p / 100 * len(vals))) - 1]


def within(a, b, tol):
    return a is not None and b is not None and b > 0 and abs(a - b) <= tol * b


def pct(a, b):
    return f"{(a - b) / b * 100:+.1f}%" if a is not None and b else "n/a"


def samples(name):
    out = []
    for line in sections.get(name, "").splitlines():
        x = line.split()
        if x and not line.startswith("#"):
            out.append(x)
    return out


def judge_latency(scen, tt, truth, ref):
    """p50/p99 within 10 %, or inside the truth's own quantiles +-0.5 percentile (x1.1)."""
    for q in (50, 99):
        a, b = tt[f"p{q}"], truth[f"p{q}"]
        ok = within(a, b, 0.10)
        band = ""
        if not ok and ref:
            # the request sets differ by a few (warm-up, closing exchanges): a rank shift
            # that size moves a steep quantile more than any timing error
            lo, hi = nearest(ref, q - 0.5), nearest(ref, q + 0.5)
            ok = a is not None and lo / 1.10 <= a <= hi * 1.10
            band = f"; its p{q - 0.5:g}-p{q + 0.5:g} {lo:.0f}-{hi:.0f} us"
        check(ok, f"{scen} p{q} {a:.0f} us vs the client's {b:.0f} us ({pct(a, b)}{band})")


def judge_probe():
    p = load("probe")
    if not p:
        return
    compat = not p["helpers"]["bpf_rdonly_cast"]
    check(p["object"] == ("compat" if compat else "kfuncs"),
          f"probe: {p['object']} object (bpf_rdonly_cast {'absent' if compat else 'present'})")
    feeds = {s["stage"]: s for s in p["stages"]}
    missing = [f"{s}: {feeds[s]['reason']}" for s in TCP_STAGES if not feeds[s]["available"]]
    check(not missing, "probe: every TCP and request stage fed" +
          (" (missing " + "; ".join(missing) + ")" if missing else ""))
    for e in p["events"]:
        print(f"#   {e['event']:28s} {e['feed'] or 'none: ' + e['reason']}")


def judge_loadgen(scen):
    tt, lg = load(scen + ".explain"), load(scen + ".loadgen")
    if not tt or not lg:
        return
    want = lg["requests"] + CONNS
    check(within(tt["requests"], want, 0.01),
          f"{scen} requests {tt['requests']} vs the load generator's {lg['requests']} + "
          f"{CONNS} closing exchanges ({pct(tt['requests'], want)})")
    rows = samples(scen + ".samples")
    judge_latency(scen, tt["latency_us"], lg["latency_us"], [float(x[4]) for x in rows])
    if scen == "stream" and lg.get("ttft_us"):
        # tailtrace's TTFT ends at the first response byte's arrival on the socket, the
        # loadgen's at its read of the first token: never later (one histogram slot of
        # slack), and never shorter than the server's 2 ms prefill (guest_scenarios.sh)
        for q in (50, 99):
            a, b = tt["ttft_us"][f"p{q}"], lg["ttft_us"][f"p{q}"]
            ok = a is not None and b is not None and PREFILL_US <= a <= b * (1 + 1 / 16)
            check(ok, f"stream TTFT p{q} {a:.0f} us: between the {PREFILL_US} us prefill and "
                  f"the client's {b:.0f} us ({pct(a, b)})")


def judge_sockperf():
    tt = load("sockperf.explain")
    out = re.sub(r"\x1b\[[0-9;]*m", "", sections.get("sockperf.out", ""))
    total = re.search(r"\[Total Run\].*ReceivedMessages=(\d+)", out)
    p = dict((float(a), float(b)) for a, b in
             re.findall(r"percentile (\d+\.\d+) =\s+([\d.]+)", out))
    if not tt or not total or 99.0 not in p:
        check(False, "sockperf: no figures from sockperf or tailtrace")
        return
    n = int(total.group(1))
    check(within(tt["requests"], n, 0.01),
          f"sockperf requests {tt['requests']} vs its {n} round trips ({pct(tt['requests'], n)})")
    # sockperf reports half the round trip; its full log has each one's send and receive
    # times (seconds)
    rtts = [(float(rx) - float(tx)) * 1e6 for tx, rx in
            re.findall(r"^\s*\d+,\s*([\d.]+),\s*([\d.]+),", sections.get("sockperf.log", ""),
                       re.M)]
    judge_latency("sockperf", tt["latency_us"], {"p50": 2 * p[50.0], "p99": 2 * p[99.0]}, rtts)


def judge_commands():
    hist, rep, lg = load("commands.hist"), load("commands.report"), load("commands.loadgen")
    if not hist or not lg:
        return
    want = lg["requests"] + CONNS
    # both ends are traced: one send a request on the client, one response on the server
    counts = {}
    for st in hist["stages"]:
        counts[st["name"]] = counts.get(st["name"], 0) + st["count"]
    sends = counts.get("tx.sendq", 0)
    check(within(sends, 2 * want, 0.02),
          f"hist tx.sendq {sends} sends vs the load generator's {2 * want} (client requests "
          f"and server responses, {pct(sends, 2 * want)})")
    empty = [n for n in ("tx.ack", "rx.stack", "rx.sockq", "tcp.rtt") if not counts.get(n)]
    check(not empty, "hist: tx.ack, rx.stack, rx.sockq, tcp.rtt sampled" +
          (f" (none for {', '.join(empty)})" if empty else ""))
    rdma = load("commands.rdma")
    if rdma is not None:
        check("error" not in rdma, "rdma loads and runs" +
              (f" ({rdma['error']})" if "error" in rdma else ""))
    if rep:
        n = rep["attribution"]["requests"]
        check(within(n, want, 0.01),
              f"record + report requests {n} vs the load generator's {lg['requests']} + "
              f"{CONNS} ({pct(n, want)})")
        # record's deep tier: its duty cycle attached and detached the per-packet programs
        deep = rep.get("self", {}).get("deep", {})
        check(deep.get("windows", 0) >= 1 and 0 < deep.get("share", 1) < 1,
              f"record's deep tier ran in windows (duty {deep.get('duty')}, share "
              f"{deep.get('share')}, {deep.get('windows')} windows)")


def judge_verdict(scen, want):
    tt = load(scen + ".explain")
    if not tt:
        return
    v = tt["verdict"]
    check(v["class"] == want, f"{scen} verdict {v['class']} ({v.get('stage')} at "
          f"{v.get('where') or '-'}), want {want}")


for name in ("probe", "clean", "commands", "stream", "sockperf", "cpuhog", "congestion"):
    if not any(k == name or k.startswith(name + ".") for k in sections):
        continue
    if name == "probe":
        judge_probe()
    elif name in ("clean", "stream"):
        judge_loadgen(name)
    elif name == "sockperf":
        judge_sockperf()
    elif name == "commands":
        judge_commands()
    else:
        judge_verdict(name, name if name == "congestion" else "compute")
if not results:
    check(False, "the guest printed no scenario")
print("\n".join(results))
