#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judges one run of tests/kernels/rxe_scenarios.sh in the soft-RoCE guest (its output on
stdin or in the file named) against perftest's own figures and the hw_counters read from
sysfs around each run, and prints TAP lines ("ok N - ...") and the figures as comments.

  rxe_judge.py [LOG]

For each topology (pair: two rxe devices over a veth pair; loop: one rxe device on the
virtio NIC) whose -default and -full runs are in the log:
  - perftest ran: client and server printed their latency table, with the iterations asked;
  - clean run: the total's counter call is none, in both modes;
  - --rdma-full: every signaled WR posted since the post side attached was timed (+-1 %), and
    as many as perftest posted (2 x iterations, client and server) within 1 %;
  - sampled: p99 of rdma.wr over --rdma-full's (two runs) within 25 % of the same ratio of
    perftest's own p99s (client + server) in those runs, and not above perftest's own
    maximum (the larger t_max of client and server, half round trips);
  - sampled: every signaled WR accounted for (timed + completed unseen + ambiguous + in flight
    = posted).
pair-both (a sampled and a --rdma-full tracer at once, on the same WRs): both calls none,
--rdma-full timed what perftest posted (+-1 %), the sampled p99 within 25 % of --rdma-full's
and not above perftest's maximum.
pair-loss (netem loss 1 % on the client's netdev): at least one transport counter rose in
sysfs (the loss reached the RDMA packets), the call is transport, and every counter named
as evidence is a transport counter with the delta sysfs shows over the run.
Exit status: 0 when every check passed, 1 otherwise."""
import json
import re
import sys

text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
sections = dict(re.findall(r"### BEGIN (\S+)\n(.*?)\n### END \1", text, re.S))
results = []

# rxe's fault counters (user/rdma/rdma_counter_table.c has the same rows)
RXE_TRANSPORT = {"duplicate_request", "out_of_seq_request", "rcvd_seq_err",
                 "completer_retry_err", "retry_exceeded_err", "rcvd_rnr_err", "send_rnr_err",
                 "retry_rnr_exceeded_err", "send_err", "link_downed"}


def check(ok, what):
    results.append((bool(ok), what))


def info(line):
    print("# " + line)


def perftest(name):
    """perftest's latency table: iterations, t_max, p99, p99.9 (us), or None."""
    out = sections.get(name)
    if out is None:
        return None
    lines = out.splitlines()
    for i, l in enumerate(lines):
        if "t_max" in l and "#iterations" in l:
            for v in lines[i + 1:]:
                f = v.split()
                if len(f) >= 9 and f[0].isdigit():
                    return {"iters": int(f[1]), "t_min": float(f[2]), "t_max": float(f[3]),
                            "t_avg": float(f[5]), "p99": float(f[7]), "p999": float(f[8])}
    return None


def total(name, which="tt"):
    """tailtrace's last JSON line (the total), or None."""
    out = sections.get(name + "." + which, "")
    last = None
    for l in out.splitlines():
        l = l.strip()
        if l.startswith("{"):
            try:
                last = json.loads(l)
            except ValueError:
                pass
    return last if last and last.get("type") == "total" else None


def sysfs(name, which):
    d = {}
    for l in sections.get(name + "." + which, "").splitlines():
        f = l.split()
        if len(f) == 3 and f[2].isdigit():
            d[(f[0], f[1])] = int(f[2])
    return d


def sysfs_delta(name):
    a, b = sysfs(name, "c0"), sysfs(name, "c1")
    return {k: b[k] - a.get(k, 0) for k in b}


def dev_of(e):
    """a piece of evidence's device: tailtrace names it DEV/PORT"""
    return e["dev"].split("/")[0]


def run_ok(name, iters_wanted):
    """perftest's tables and tailtrace's total of one run; checks that they are there."""
    cli, srv, tt = perftest(name + ".cli"), perftest(name + ".srv"), total(name)
    check(cli and srv and cli["iters"] == iters_wanted and srv["iters"] == iters_wanted,
          f"{name}: perftest client and server ran {iters_wanted} iterations")
    check(tt is not None, f"{name}: tailtrace printed its total")
    if tt is None:
        err = sections.get(name + ".err", "").strip()
        if err:
            info(name + ".err: " + err.replace("\n", "\n#   "))
    if cli and srv:
        info(f"{name}: perftest client t_max {cli['t_max']} us p99 {cli['p99']} us p99.9 "
             f"{cli['p999']} us; server t_max {srv['t_max']} us p99 {srv['p99']} us "
             f"p99.9 {srv['p999']} us")
    if tt:
        w, t = tt.get("wr_all") or {}, tt.get("timing", {})
        c = tt.get("counters", {})
        info(f"{name}: tailtrace rdma.wr count {w.get('count')} p50 "
             f"{w.get('p50_ns', 0) / 1e3:.0f} us p99 {w.get('p99_ns', 0) / 1e3:.0f} us max "
             f"{w.get('max_ns', 0) / 1e3:.0f} us; timing {json.dumps(t)}; call "
             f"{c.get('call')} evidence {[(e['dev'], e['name'], e['delta']) for e in c.get('evidence', [])]}")
    return cli, srv, tt


def iters_of(name):
    m = re.search(r"-n (\d+)", sections.get(name + ".cmd", ""))
    return int(m.group(1)) if m else 5000


def judge_topology(topo):
    d, f = topo + "-default", topo + "-full"
    if d + ".tt" not in sections and f + ".tt" not in sections:
        return
    n = iters_of(d)
    dc, ds, dt = run_ok(d, n)
    fc, fs, ft = run_ok(f, n)
    for name, tt in ((d, dt), (f, ft)):
        faults = {k: v for k, v in sysfs_delta(name).items()
                  if k[1] in RXE_TRANSPORT and v > 0}
        if faults:
            info(f"{name}: transport counters that rose in sysfs: {sorted(faults.items())}")
        if tt:
            c = tt.get("counters", {})
            check(c.get("available") and c.get("call") == "none",
                  f"{name}: clean run, counter call {c.get('call')} (want none)")
    if ft:
        t = ft.get("timing", {})
        posted, timed = t.get("signaled_posted", 0), t.get("timed", 0)
        check(posted > 0 and abs(timed - posted) <= 0.01 * posted,
              f"{f}: --rdma-full timed {timed} of {posted} signaled WRs posted (+-1 %)")
        want = 2 * n
        check(abs(timed - want) <= 0.01 * want,
              f"{f}: --rdma-full timed {timed} WRs, perftest posted {want} (+-1 %)")
    if dt:
        t = dt.get("timing", {})
        acc = (t.get("timed", 0) + t.get("completed_unseen", 0) + t.get("ambiguous", 0) +
               t.get("in_flight_now", 0))
        check(t.get("signaled_posted", 0) > 0 and acc == t.get("signaled_posted"),
              f"{d}: sampled, timed + unseen + ambiguous + in flight = {acc}, posted "
              f"{t.get('signaled_posted')}")
    if dt and ft and dc and ds and fc and fs:
        # two runs of the same traffic differ under TCG (the sampled mode's probes come and
        # go, and the emulator retranslates the code they patch): what is compared is
        # tailtrace's ratio of the two p99s with perftest's own (pair-both compares the
        # p99s themselves, on the same WRs)
        p_d = (dt.get("wr_all") or {}).get("p99_ns", 0)
        p_f = (ft.get("wr_all") or {}).get("p99_ns", 0)
        perf = (dc["p99"] + ds["p99"]) / (fc["p99"] + fs["p99"])
        tt = p_d / p_f if p_f else 0
        info(f"{d}: sampled p99 {p_d / 1e3:.0f} us, --rdma-full's {p_f / 1e3:.0f} us in "
             f"another run: x{tt:.2f}; perftest's p99 between the two runs x{perf:.2f}")
        check(tt > 0 and abs(tt - perf) <= 0.25 * perf,
              f"{d}: sampled/--rdma-full p99 x{tt:.2f} within 25 % of perftest's own "
              f"x{perf:.2f} between the runs")
    if dt and dc and ds:
        p_d = (dt.get("wr_all") or {}).get("p99_ns", 0)
        mx = max(dc["t_max"], ds["t_max"]) * 1e3
        check(0 < p_d <= mx, f"{d}: sampled p99 {p_d / 1e3:.0f} us not above perftest's "
              f"maximum {mx / 1e3:.0f} us")


def judge_both():
    """pair-both: the sampled and the --rdma-full tracer on the same WRs"""
    name = "pair-both"
    if name + ".tt" not in sections:
        return
    cli, srv, dt = run_ok(name, iters_of(name))
    ft = total(name, "ttfull")
    check(ft is not None, f"{name}: the --rdma-full tracer printed its total")
    if not dt or not ft:
        return
    w = ft.get("wr_all") or {}
    info(f"{name}: --rdma-full rdma.wr count {w.get('count')} p50 {w.get('p50_ns', 0) / 1e3:.0f} "
         f"us p99 {w.get('p99_ns', 0) / 1e3:.0f} us max {w.get('max_ns', 0) / 1e3:.0f} us; "
         f"timing {json.dumps(ft.get('timing', {}))}")
    for which, tt in (("sampled", dt), ("--rdma-full", ft)):
        c = tt.get("counters", {})
        check(c.get("available") and c.get("call") == "none",
              f"{name}: {which}: clean run, counter call {c.get('call')} (want none)")
    t = ft.get("timing", {})
    want = 2 * iters_of(name)
    check(abs(t.get("timed", 0) - want) <= 0.01 * want,
          f"{name}: --rdma-full timed {t.get('timed')} WRs, perftest posted {want} (+-1 %)")
    p_d = (dt.get("wr_all") or {}).get("p99_ns", 0)
    p_f = w.get("p99_ns", 0)
    check(p_d > 0 and p_f > 0 and abs(p_d - p_f) <= 0.25 * p_f,
          f"{name}: same WRs, sampled p99 {p_d / 1e3:.0f} us within 25 % of --rdma-full's "
          f"{p_f / 1e3:.0f} us")
    if cli and srv:
        mx = max(cli["t_max"], srv["t_max"]) * 1e3
        check(0 < p_d <= mx, f"{name}: sampled p99 {p_d / 1e3:.0f} us not above perftest's "
              f"maximum {mx / 1e3:.0f} us")


def judge_loss():
    name = "pair-loss"
    if name + ".tt" not in sections:
        return
    _, _, tt = run_ok(name, iters_of(name))
    delta = sysfs_delta(name)
    rose = {k: v for k, v in delta.items() if k[1] in RXE_TRANSPORT and v > 0}
    info(f"{name}: sysfs transport counters that rose: {sorted(rose.items())}")
    check(rose, f"{name}: the loss reached rxe (a transport counter rose in sysfs)")
    if not tt:
        return
    c = tt.get("counters", {})
    ev = c.get("evidence", [])
    check(c.get("call") in ("transport", "congestion+transport"),
          f"{name}: call {c.get('call')} (want transport)")
    # nothing but perftest moves the counters between the two reads around its run
    check(ev and all(e["class"] == "transport" and e["delta"] > 0 and
                     e["delta"] == delta.get((dev_of(e), e["name"]))
                     for e in ev if e["class"] != "congestion"),
          f"{name}: evidence {[(e['dev'], e['name'], e['delta']) for e in ev]} are transport "
          f"counters with their sysfs deltas")


judge_topology("pair")
judge_topology("loop")
judge_both()
judge_loss()
if not results:
    results.append((False, "no scenario in the log"))
for i, (ok, what) in enumerate(results, 1):
    print(("ok" if ok else "not ok") + f" {i} - {what}")
print(f"1..{len(results)}")
sys.exit(0 if all(ok for ok, _ in results) else 1)
