#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""HTTP/1.1 server-sent events over TLS (Python's ssl module, Debian's OpenSSL libssl.so.3),
as OpenAI-compatible servers stream: the response's header block written at once, then
after the prefill one chunked `data:` event per token.

  tls_sse.py server --listen ADDR --port P --cert C --key K [--prefill-us N]
                    [--decode-us N] [--tokens N]
  tls_sse.py client --connect ADDR --port P --ca C [--conns N] [--duration S]
                    --json FILE [--samples FILE]

The client times every request itself (send to first token, between tokens, send to the
last byte) and writes the summary as `loadgen client --json` does (requests, ttft_us,
gap_us, latency_us: p50/p99 by nearest rank) and --samples as loadgen's (total_us in the
fifth column)."""
import argparse
import json
import math
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(a):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            # as serving stacks do: each event leaves when written
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            if n:
                self.rfile.read(n)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()  # one write: the header block alone
            time.sleep(a.prefill_us / 1e6)
            for i in range(a.tokens):
                ev = b"data: tok%04d\n\n" % i
                chunk = b"%x\r\n%s\r\n" % (len(ev), ev)
                if i == a.tokens - 1:
                    chunk += b"0\r\n\r\n"
                self.wfile.write(chunk)
                if i < a.tokens - 1:
                    time.sleep(a.decode_us / 1e6)

    ThreadingHTTPServer.address_family = socket.AF_INET6 if ":" in a.listen else socket.AF_INET
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer((a.listen, a.port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("listening", flush=True)
    srv.serve_forever()


def pct(v, p):
    v = sorted(v)
    return v[max(1, math.ceil(p / 100 * len(v))) - 1] if v else None


def stats(v):
    return {"n": len(v), "p50": pct(v, 50), "p99": pct(v, 99)}


def client(a):
    ctx = ssl.create_default_context(cafile=a.ca)
    ctx.check_hostname = False
    body = b'{"prompt": "q"}'
    req = (b"POST /v1/completions HTTP/1.1\r\nHost: tt\r\nContent-Type: application/json\r\n"
           b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    mu = threading.Lock()
    samples, errors = [], []
    t_end = time.monotonic() + a.duration

    def one(s, conn, rid):
        t0 = time.monotonic()
        s.sendall(req)
        buf, head, toks = b"", None, []
        while True:
            d = s.recv(65536)
            now = time.monotonic()
            if not d:
                raise ConnectionError("closed")
            buf += d
            if head is None:
                i = buf.find(b"\r\n\r\n")
                if i < 0:
                    continue
                head, buf = buf[:i], buf[i + 4:]
            while True:  # whole chunks
                j = buf.find(b"\r\n")
                if j < 0:
                    break
                size = int(buf[:j], 16)
                if size == 0:
                    if len(buf) >= j + 4:
                        total = now - t0
                        gaps = [b - x for x, b in zip(toks, toks[1:])]
                        return (rid, conn, t0, total, toks[0] - t0, max(gaps), len(toks),
                                gaps)
                    break
                if len(buf) < j + 2 + size + 2:
                    break
                toks.append(now)
                buf = buf[j + 2 + size + 2:]

    def run(conn):
        rid = 0
        try:
            with socket.create_connection((a.connect, a.port)) as raw:
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with ctx.wrap_socket(raw) as s:
                    while time.monotonic() < t_end:
                        r = one(s, conn, rid)
                        rid += 1
                        with mu:
                            samples.append(r)
        except Exception as e:  # noqa: BLE001 (reported, then the run fails)
            with mu:
                errors.append(repr(e))

    th = [threading.Thread(target=run, args=(c,)) for c in range(a.conns)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    lat = [r[3] * 1e6 for r in samples]
    ttft = [r[4] * 1e6 for r in samples]
    gaps = [g * 1e6 for r in samples for g in r[7]]
    out = {"requests": len(samples), "errors": errors, "latency_us": stats(lat),
           "ttft_us": stats(ttft), "gap_us": stats(gaps)}
    with open(a.json, "w") as f:
        json.dump(out, f)
    if a.samples:
        with open(a.samples, "w") as f:
            f.write("# id conn sched_ns send_ns total_us ttft_us maxgap_us tokens\n")
            for i, r in enumerate(samples):
                f.write("%d %d %d %d %.3f %.3f %.3f %d\n" % (
                    i, r[1], int(r[2] * 1e9), int(r[2] * 1e9), r[3] * 1e6, r[4] * 1e6,
                    r[5] * 1e6, r[6]))
    print(json.dumps(out))
    return 0 if samples and not errors else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("server")
    s.add_argument("--listen", default="::")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--prefill-us", type=int, default=10000)
    s.add_argument("--decode-us", type=int, default=1000)
    s.add_argument("--tokens", type=int, default=24)
    c = sub.add_parser("client")
    c.add_argument("--connect", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--ca", required=True)
    c.add_argument("--conns", type=int, default=4)
    c.add_argument("--duration", type=float, default=5)
    c.add_argument("--json", required=True)
    c.add_argument("--samples")
    a = ap.parse_args()
    return serve(a) if a.mode == "server" else client(a)


if __name__ == "__main__":
    sys.exit(main())
