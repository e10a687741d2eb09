#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Requests on connections whose handshake a full accept queue held back (tests/ns/
test_tcp_stages.sh, "acceptq"). The server listens with a backlog of 1 and accepts one
connection every 30 ms; N clients connect at once and each sends one 100-byte request
and reads a 100-byte response. The kernel drops the final ACK of handshakes it cannot
queue, and the client's request segment completes the handshake later: that first data
never passes tcp_rcv_established (where tcp:tcp_probe fires).

  accept_overflow.py server PORT           serve until killed
  accept_overflow.py client HOST PORT N    prints {"exchanges": K}, K completed exchanges
"""
import json
import socket
import sys
import threading
import time

MSG = 100


def read_exact(s, n):
    got = 0
    while got < n:
        b = s.recv(n - got)
        if not b:
            break
        got += len(b)
    return got


def serve(s):
    if read_exact(s, MSG) == MSG:
        s.sendall(b"r" * MSG)
    s.close()


def server(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    while True:
        s, _ = ls.accept()
        threading.Thread(target=serve, args=(s,), daemon=True).start()
        time.sleep(0.03)


def client(host, port, n):
    done = []

    def one():
        try:
            s = socket.create_connection((host, port), timeout=15)
            s.sendall(b"q" * MSG)
            if read_exact(s, MSG) == MSG:
                done.append(1)
            s.close()
        except OSError:
            pass

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"exchanges": len(done)}))


if __name__ == "__main__":
    a = sys.argv
    if len(a) == 3 and a[1] == "server":
        server(int(a[2]))
    elif len(a) == 5 and a[1] == "client":
        client(a[2], int(a[3]), int(a[4]))
    else:
        sys.exit(__doc__)
