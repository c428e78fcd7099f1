#!/usr/bin/python3
"""record-goldens.py - records RedisBloom's replies to the generated command
sequences (tests/redis/golden_gen.py) as golden files for the differential
test (tests/redis/test_golden.py, run by make test-redis without RedisBloom).

    /usr/bin/python3 scripts/record-goldens.py --oracle PATH/redisbloom.so \\
        [--server /usr/bin/redis-server] [--seed 1] [--out tests/redis/golden]

The oracle runs in its own redis-server (Debian 12's 7.0.15 for the base
recording).  With --add-server, the existing goldens are replayed against
the oracle loaded into another server (Redis 8, Valkey 8) and the replies
that differ there are stored as that server's "alt" replies.
"""
import argparse
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "redis"))
import golden  # noqa: E402
import golden_gen  # noqa: E402
import harness  # noqa: E402

MAX_FILE = 480 << 10  # bytes of one golden file (well under 1 MiB)


def start(oracle, server):
    if server:
        harness.REDIS_SERVER = server
    return harness.Server(oracle)


def expand(client, sidx, step, out):
    """Runs one generated step, appending what was sent and received."""
    if step[0] == "@dumpload":
        fam, src, dst = step[1], step[2], step[3]
        it = b"0"
        for _ in range(100000):
            args = [fam + ".scandump", src, it.decode()]
            raw = client.call(golden.args_bytes(args))
            out.append({"s": sidx, "c": args, "r": golden.b2s(raw)})
            # [next, data]: stop at an error, at 0 or at an empty chunk
            if not raw.startswith(b"*2\r\n:"):
                return
            head, rest = raw[5:].split(b"\r\n", 1)
            if head == b"0" or not rest.startswith(b"$") or rest.startswith(b"$-1"):
                return
            n, data = rest[1:].split(b"\r\n", 1)
            data = data[:int(n)]
            args = [fam + ".loadchunk", dst, head.decode(), golden.b2s(data)]
            raw2 = client.call(golden.args_bytes(args))
            out.append({"s": sidx, "c": args, "r": golden.b2s(raw2)})
            it = head
        raise RuntimeError("SCANDUMP did not end")
    rep = golden.run_step(client, step)
    rec = {"s": sidx, "c": [golden.b2s(a) if isinstance(a, bytes) else a for a in step]}
    if rep is not None:
        rec["r"] = golden.reply_field(rep)
    out.append(rec)


def record(a):
    srv = start(a.oracle, a.server)
    try:
        c = golden.RawClient(srv.port)
        sid = golden.server_id(c)
        scen = golden_gen.generate(a.seed)
        files, cur, size = [], [], 0
        for i, steps in enumerate(scen):
            recs = []
            for st in steps:
                try:
                    expand(c, i, st, recs)
                except (ConnectionError, OSError) as e:
                    sys.exit("oracle died at scenario %d step %r: %s\n%s"
                             % (i, st[:6], e, srv.log_tail()))
            n = sum(len(str(r)) for r in recs)
            if cur and size + n > MAX_FILE:
                files.append(cur)
                cur, size = [], 0
            cur += recs
            size += n
        files.append(cur)
        for old in glob.glob(os.path.join(a.out, "seed%d-*.jsonl" % a.seed)):
            os.remove(old)
        total = 0
        for j, recs in enumerate(files):
            path = os.path.join(a.out, "seed%d-%02d.jsonl" % (a.seed, j))
            golden.write(path, {"format": golden.FORMAT, "seed": a.seed, "server": sid,
                                "oracle": os.path.basename(a.oracle)}, recs)
            total += len(recs)
            print("%s: %d commands, %d bytes" % (path, len(recs), os.path.getsize(path)))
        print("recorded %d commands in %d scenarios on %s" % (total, len(scen), sid))
    finally:
        srv.cleanup()


def add_server(a):
    srv = start(a.oracle, a.server)
    try:
        c = golden.RawClient(srv.port)
        sid = golden.server_id(c)
        for path in sorted(glob.glob(os.path.join(a.out, "*.jsonl"))):
            header, recs = golden.read(path)
            ndiff = 0
            for rec in recs:
                rep = golden.reply_field(golden.run_step(c, rec["c"]))
                alt = rec.get("alt") or {}
                alt.pop(sid, None)
                if rep is not None and rep != rec.get("r"):
                    alt[sid] = rep
                    ndiff += 1
                if alt:
                    rec["alt"] = alt
                else:
                    rec.pop("alt", None)
            golden.write(path, header, recs)
            print("%s: %d replies of %s differ from %s" % (path, ndiff, sid, header["server"]))
    finally:
        srv.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", required=True, help="RedisBloom's module (.so)")
    ap.add_argument("--server", help="redis-server binary (default: the harness's)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "redis", "golden"))
    ap.add_argument("--add-server", action="store_true")
    a = ap.parse_args()
    a.oracle = os.path.abspath(a.oracle)
    try:
        (add_server if a.add_server else record)(a)
    finally:
        harness.stop_all()


if __name__ == "__main__":
    main()
