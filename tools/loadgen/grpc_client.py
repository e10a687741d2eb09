#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A real gRPC client (grpcio, Debian's python3-grpcio) for `loadgen server --proto h2`:
calls the server-streaming method /tt.Infer/Generate with raw-bytes serializers and counts
the messages of every call (over TLS with --tls-ca: grpcio carries its own BoringSSL).
Prints one JSON line: calls, messages per call, failures, and its own timings
(microseconds, nearest rank)."""
import argparse
import json
import math
import struct
import sys
import time
import threading

import grpc


def pct(v, p):
    return v[max(1, math.ceil(p / 100 * len(v))) - 1] if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--target", required=True, help="HOST:PORT ([v6]:PORT)")
    ap.add_argument("--requests", type=int, default=20, help="calls per thread")
    ap.add_argument("--threads", type=int, default=1, help="concurrent calls on one channel")
    ap.add_argument("--tokens", type=int, default=16, help="messages asked for per call")
    ap.add_argument("--token-bytes", type=int, default=32, help="bytes per message")
    ap.add_argument("--timeout", type=float, default=30, help="seconds per call")
    ap.add_argument("--tls-ca", help="TLS, trusting this PEM certificate (self-signed)")
    ap.add_argument("--tls-name", default="tt-test", help="the name the certificate holds")
    a = ap.parse_args()

    if a.tls_ca:
        with open(a.tls_ca, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        ch = grpc.secure_channel(a.target, creds,
                                 options=[("grpc.ssl_target_name_override", a.tls_name)])
    else:
        ch = grpc.insecure_channel(a.target)
    # connected (TCP, TLS, HTTP/2 settings) before the first call is timed
    grpc.channel_ready_future(ch).result(timeout=a.timeout)
    call = ch.unary_stream("/tt.Infer/Generate", request_serializer=lambda b: b,
                           response_deserializer=lambda b: b)
    req = struct.pack("<II", a.tokens, a.token_bytes) + b"q" * 24
    mu = threading.Lock()
    counts, sizes_ok, ttft, lat, errors = [], True, [], [], []

    def run():
        nonlocal sizes_ok
        for _ in range(a.requests):
            t0 = time.monotonic()
            n, first, ok = 0, None, True
            try:
                for m in call(req, timeout=a.timeout):
                    if first is None:
                        first = time.monotonic()
                    ok = ok and len(m) == a.token_bytes
                    n += 1
            except grpc.RpcError as e:
                with mu:
                    errors.append(str(e.code()))
                continue
            t1 = time.monotonic()
            with mu:
                counts.append(n)
                sizes_ok = sizes_ok and ok
                if first is not None:
                    ttft.append((first - t0) * 1e6)
                lat.append((t1 - t0) * 1e6)

    th = [threading.Thread(target=run) for _ in range(a.threads)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    ttft.sort()
    lat.sort()
    print(json.dumps({
        "calls": len(counts), "errors": len(errors), "error_codes": sorted(set(errors)),
        "messages_min": min(counts) if counts else None,
        "messages_max": max(counts) if counts else None,
        "messages_total": sum(counts), "sizes_ok": sizes_ok,
        "ttft_p50_us": pct(ttft, 50), "latency_p50_us": pct(lat, 50),
        "ttft_p99_us": pct(ttft, 99), "latency_p99_us": pct(lat, 99),
    }))
    return 0 if counts and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
