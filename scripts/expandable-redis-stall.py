#!/usr/bin/env python3
"""The worst single command of an expandable AMQ key grown in a real Redis.

    scripts/expandable-redis-stall.py --server /usr/bin/redis-server \
        --module build/amq.so --max 5e7 [--kind expandable|quotient|pocket]

Starts its own redis-server (a unix socket in a temporary directory, no
persistence), creates `AMQ.CREATE k expandable 1000 0.01`, fills it with
AMQ.MADD (1,000 8-byte keys per command, pipelined) and, around every
doubling (the `capacity` AMQ.INFO reports), sends single AMQ.ADD commands
one at a time, each timed from the client.  The server's own view is its
SLOWLOG (every command over 1 ms).  Prints, at each doubling, the worst
AMQ.ADD (client round trip) and at the end the slowest commands the server
logged.  The server is shut down on exit.

--kind quotient or pocket (which grow a part at a time, with no doubling to
aim at): every key by AMQ.MADD of --per keys, and the server's SLOWLOG read
and reset every 100 commands, so that its worst command and the number over
1 ms are counted over the whole run (the log keeps only its last 1,024), with
the worst so far printed at 1e6, 1e7 and every 5e7 keys.
"""
import argparse
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def send(self, data):
        self.s.sendall(data)

    def read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t in (b"+",):
            return rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            d = self.f.read(n + 2)
            return d[:-2]
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def cmd(self, *args):
        self.send(enc(*args))
        return self.read()


def mix(x):
    m = (1 << 64) - 1
    x = (x + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def info(c):
    r = c.cmd("AMQ.INFO", "k")
    return {r[i].decode() if isinstance(r[i], bytes) else r[i]: r[i + 1]
            for i in range(0, len(r), 2)}


def madd(c, a, n, goal, cmds):
    """Keys n, n + 1, ... up to goal by at most cmds pipelined AMQ.MADD of a.per keys: the
    next n."""
    batch = []
    while len(batch) < cmds and n < goal:
        m = min(a.per, goal - n)
        batch.append(enc("AMQ.MADD", "k", *[struct.pack("<Q", mix(n + j)) for j in range(m)]))
        n += m
    c.send(b"".join(batch))
    for _ in batch:
        c.read()
    return n


def by_parts(c, a, top):
    """Every key by AMQ.MADD; the SLOWLOG drained every 100 commands."""
    worst = (0, 0, "")  # (us, keys before it, command)
    over = 0
    n = 0
    marks = [m for m in (1e6, 1e7) if m < top] + [5e7 * i for i in range(1, 41) if 5e7 * i < top]
    marks = [int(m) for m in marks] + [top]
    print("| keys | worst command so far (server SLOWLOG, ms) | its keys before | commands over 1 ms |")
    print("|---|---|---|---|")
    for mark in marks:
        while n < mark:
            n = madd(c, a, n, mark, 100)
            log = c.cmd("SLOWLOG", "GET", "1024")
            c.cmd("SLOWLOG", "RESET")
            for e in log:
                name = e[3][0].decode().upper()
                if name == "SLOWLOG":
                    continue
                over += 1
                if e[2] > worst[0]:
                    worst = (e[2], n, name)
        print("| %d | %.3f (%s) | about %d | %d |" % (n, worst[0] / 1e3, worst[2] or "none",
                                                   worst[1], over), flush=True)
    inf = info(c)
    print("final: %d keys, %s bytes, %s segments, %s expansions" %
          (n, inf.get("bytes", "?"), inf.get("segments", "?"), inf.get("expansions", "?")))
    with open("/proc/loadavg") as f:
        print("load average at the end:", f.read().split()[:3])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="/usr/bin/redis-server")
    ap.add_argument("--module", default="build/amq.so")
    ap.add_argument("--max", type=float, default=5e7)
    ap.add_argument("--per", type=int, default=1000, help="keys per AMQ.MADD")
    ap.add_argument("--kind", default="expandable", choices=("expandable", "quotient", "pocket"))
    a = ap.parse_args()
    top = int(a.max)
    d = tempfile.mkdtemp(prefix="amq-stall-")
    sock = os.path.join(d, "s")
    srv = subprocess.Popen([a.server, "--port", "0", "--unixsocket", sock, "--save", "",
                            "--appendonly", "no", "--dir", d,
                            "--loadmodule", os.path.abspath(a.module)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        c = Conn(sock)
        print("server:", c.cmd("INFO", "server").split(b"\r\n")[1].decode())
        with open("/proc/loadavg") as f:
            print("load average at the start:", f.read().split()[:3])
        c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "1000")
        c.cmd("CONFIG", "SET", "slowlog-max-len", "1024")
        c.cmd("SLOWLOG", "RESET")
        c.cmd("AMQ.CREATE", "k", a.kind, "1000", "0.01")
        n = 0
        if a.kind != "expandable":
            return by_parts(c, a, top)
        print("| keys at the doubling | buckets after | worst AMQ.ADD round trip (ms) |")
        print("|---|---|---|")
        while n < top:
            cap = int(info(c)["capacity"])
            # MADD up to 50 keys short of the doubling, then single ADDs past it
            goal = min(top, max(n, cap - 50))
            while n < goal:
                n = madd(c, a, n, goal, 200)
            if n >= top:
                break
            worst = 0.0
            for _ in range(100):
                t0 = time.perf_counter()
                c.cmd("AMQ.ADD", "k", struct.pack("<Q", mix(n)))
                dt = time.perf_counter() - t0
                worst = max(worst, dt)
                n += 1
            inf = info(c)
            print("| %d | %s | %.3f |" % (cap, inf.get("buckets", "?"), worst * 1e3), flush=True)
        inf = info(c)
        print("final: %d keys, %s bytes, buckets %s" % (n, inf.get("bytes", "?"), inf.get("buckets", "?")))
        log = c.cmd("SLOWLOG", "GET", "1024")
        rows = sorted(((e[2], e[3][0].decode(), ) for e in log), reverse=True)
        for want in ("AMQ.ADD", "AMQ.MADD"):
            got = [us for us, name in rows if name.upper() == want]
            print("slowest %s (server SLOWLOG, over 1 ms): %s us, %d logged" %
                  (want, got[0] if got else "none", len(got)))
        print("slowest commands (server SLOWLOG, microseconds):")
        for us, name in rows[:8]:
            print("  %8d us  %s" % (us, name))
        with open("/proc/loadavg") as f:
            print("load average at the end:", f.read().split()[:3])
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
