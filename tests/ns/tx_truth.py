#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Ground truth for tx.sendq and tx.ack (tests/ns/test_tcp_stages.sh, "txtruth"): the
kernel's own TX timestamps, asked for with SO_TIMESTAMPING and read from the socket's error
queue, independent of tailtrace.

  tx_truth.py server PORT REQ RESP N OUT   answer N requests of REQ bytes with RESP bytes on
                                           the first connection, timestamping every response
  tx_truth.py client HOST PORT REQ RESP N [GO]
                                           make the N exchanges; with GO, connect first and
                                           wait for the file GO to exist before the first one

Per response the server keeps: t0, the CLOCK_REALTIME just before send(); SCHED (its last
byte entered the device queue), SND (handed to the driver) and ACK (acknowledged), all
software timestamps. A send whose last byte a full qdisc dropped gets a SCHED stamp at each
attempt. OUT gets JSON: sendq = the last SCHED - t0 (sendq_first: the first) and ack = ACK -
SND and qdisc = the last SND - the last SCHED (the last byte's time from the device queue's
entry to the driver: its qdisc sojourn), in us, with their count and p50/p90/p99 (nearest
rank), and requeued, the number of sends with more than one SCHED stamp. The server's comm is tt-ts-srv, so tailtrace
can group its socket by comm."""
import ctypes
import json
import os
import select
import socket
import struct
import sys
import time

SO_TIMESTAMPING = 37
SCM_TIMESTAMPING = SO_TIMESTAMPING
TS_TX_SOFTWARE, TS_SOFTWARE, TS_OPT_ID = 1 << 1, 1 << 4, 1 << 7
TS_TX_SCHED, TS_TX_ACK, TS_OPT_TSONLY = 1 << 8, 1 << 9, 1 << 11
SCM_TSTAMP_SND, SCM_TSTAMP_SCHED, SCM_TSTAMP_ACK = 0, 1, 2
SO_EE_ORIGIN_TIMESTAMPING = 4
IP_RECVERR, IPV6_RECVERR = 11, 25


def recv_exact(s, n):
    got = 0
    while got < n:
        b = s.recv(min(n - got, 1 << 16))
        if not b:
            raise ConnectionError("peer closed")
        got += len(b)


def drain_errqueue(s, stamps):
    """Moves every timestamp waiting in the error queue into stamps[id][kind] (ns)."""
    while True:
        try:
            _, anc, _, _ = s.recvmsg(0, 1024, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        ts = None
        info = None
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPING and len(data) >= 16:
                sec, nsec = struct.unpack_from("qq", data, 0)
                ts = sec * 1_000_000_000 + nsec
            elif (level, kind) in ((socket.IPPROTO_IP, IP_RECVERR),
                                   (socket.IPPROTO_IPV6, IPV6_RECVERR)):
                _, origin, _, _, _, ee_info, ee_data = struct.unpack_from("IBBBBII", data)
                if origin == SO_EE_ORIGIN_TIMESTAMPING:
                    info = (ee_info, ee_data)
        if ts is not None and info is not None:
            # a send whose skb a full qdisc dropped is queued again later: one SCHED per
            # attempt, in order
            stamps.setdefault(info[1], {}).setdefault(info[0], []).append(ts)


def quantiles(vals):
    vals = sorted(vals)
    if not vals:
        return {"count": 0}
    q = lambda p: vals[min(len(vals) - 1, max(0, int(p * len(vals) + 0.999999) - 1))]
    return {"count": len(vals), "p50_us": q(0.5) / 1000, "p90_us": q(0.9) / 1000,
            "p99_us": q(0.99) / 1000}


def server(port, req, resp, n, out):
    ctypes.CDLL(None).prctl(15, b"tt-ts-srv", 0, 0, 0)  # PR_SET_NAME
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    print("listening", flush=True)
    s, _ = ls.accept()
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING,
                 TS_TX_SOFTWARE | TS_SOFTWARE | TS_OPT_ID | TS_TX_SCHED | TS_TX_ACK |
                 TS_OPT_TSONLY)
    payload = b"r" * resp
    t0 = {}
    stamps = {}
    for i in range(n):
        recv_exact(s, req)
        key = (i + 1) * resp - 1  # OPT_ID on TCP: the offset of the send's last byte
        t0[key] = time.clock_gettime_ns(time.CLOCK_REALTIME)
        s.sendall(payload)
        drain_errqueue(s, stamps)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and \
            sum(1 for k in t0 if SCM_TSTAMP_ACK in stamps.get(k, {})) < len(t0):
        select.select([], [], [s], 0.1)
        drain_errqueue(s, stamps)
    sendq, sendq_first, ack, qdisc = [], [], [], []
    requeued = 0
    for k, start in t0.items():
        st = stamps.get(k, {})
        if SCM_TSTAMP_SCHED in st:
            sendq.append(st[SCM_TSTAMP_SCHED][-1] - start)
            sendq_first.append(st[SCM_TSTAMP_SCHED][0] - start)
            requeued += len(st[SCM_TSTAMP_SCHED]) > 1
        if SCM_TSTAMP_SCHED in st and SCM_TSTAMP_SND in st and \
                st[SCM_TSTAMP_SND][-1] >= st[SCM_TSTAMP_SCHED][-1]:
            qdisc.append(st[SCM_TSTAMP_SND][-1] - st[SCM_TSTAMP_SCHED][-1])
        if SCM_TSTAMP_ACK in st and SCM_TSTAMP_SND in st:
            ack.append(st[SCM_TSTAMP_ACK][-1] - st[SCM_TSTAMP_SND][-1])
    with open(out, "w") as f:
        json.dump({"sends": n, "sendq": quantiles(sendq), "sendq_first": quantiles(sendq_first),
                   "requeued": requeued, "ack": quantiles(ack), "qdisc": quantiles(qdisc)}, f)
    s.close()


def client(host, port, req, resp, n, go=None):
    s = socket.create_connection((host, port))
    while go and not os.path.exists(go):
        time.sleep(0.05)
    payload = b"q" * req
    for _ in range(n):
        s.sendall(payload)
        recv_exact(s, resp)
    s.close()


if __name__ == "__main__":
    a = sys.argv
    if len(a) == 7 and a[1] == "server":
        server(int(a[2]), int(a[3]), int(a[4]), int(a[5]), a[6])
    elif len(a) in (7, 8) and a[1] == "client":
        client(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]), a[7] if len(a) == 8 else None)
    else:
        sys.exit(__doc__)
