#!/usr/bin/python3
"""memory_vs_oracle.py - amq.so's memory against RedisBloom's, same run.

    /usr/bin/python3 tests/redis/memory_vs_oracle.py --module build/amq.so \\
        --oracle ../shared/oracle/redisbloom-b28c294.so [--reps 3] [--out FILE] \\
        [--only TEXT]

Two figures, each as the ratio amq / RedisBloom measured in the same run,
the two servers started alternately (order swapped every repetition) and
the median of the repetitions kept:

- used_memory per key (what maxmemory counts): INFO used_memory before and
  after the same commands on n keys, divided by n;
- RDB load: a 100M-item BF (138 MB) and a 100M CF (128 MB) saved to
  dump.rdb, then a server started on that file: its peak RSS (VmHWM) once
  loaded, and the load time (start to the first PING answered after
  loading), against the value's own size (MEMORY USAGE).

The RedisBloom build is not part of the project (shared/oracle/README.md);
this script is run by hand, not by make test.  Prints a Markdown table.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

# (label, keys, commands for key k): every command is run for each of n keys.
PER_KEY = [
    ("BF.RESERVE k 0.01 100", 2000, lambda k: [("BF.RESERVE", k, 0.01, 100)]),
    ("BF.ADD k x (default filter)", 2000, lambda k: [("BF.ADD", k, "x")]),
    ("BF.RESERVE k 0.001 10000", 300, lambda k: [("BF.RESERVE", k, 0.001, 10000)]),
    ("BF.RESERVE k 0.01 1000000", 5, lambda k: [("BF.RESERVE", k, 0.01, 1000000)]),
    ("BF.RESERVE k 0.01 100 + 2000 adds (5 links)", 50,
     lambda k: [("BF.RESERVE", k, 0.01, 100), ("BF.MADD", k) + tuple(range(2000))]),
    ("CF.RESERVE k 1000", 2000, lambda k: [("CF.RESERVE", k, 1000)]),
    ("CF.ADD k x (default filter)", 2000, lambda k: [("CF.ADD", k, "x")]),
    ("CF.RESERVE k 100000 BUCKETSIZE 4", 30, lambda k: [("CF.RESERVE", k, 100000, "BUCKETSIZE", 4)]),
    ("CF.RESERVE k 10000000", 3, lambda k: [("CF.RESERVE", k, 10000000)]),
    ("CF.RESERVE k 64 + 1000 adds (sub-filters)", 50,
     lambda k: [("CF.RESERVE", k, 64), ("CF.INSERT", k, "ITEMS") + tuple(range(1000))]),
]

BIG = [
    ("BF 100M items, error 0.01", [("BF.RESERVE", "big", 0.01, 100000000),
                                   ("BF.MADD", "big") + tuple(range(10000))]),
    ("CF 100M capacity", [("CF.RESERVE", "big", 100000000),
                          ("CF.INSERT", "big", "ITEMS") + tuple(range(10000))]),
]


def per_key(module, label, n, cmds):
    srv = harness.Server(module)
    try:
        # The commands go through their own connection, closed before the
        # second reading: its query and reply buffers are not the keys'.
        r = srv.client()
        m0 = r.info("memory")["used_memory"]
        w = srv.client()
        pipe = w.pipeline(transaction=False)
        for i in range(n):
            for c in cmds("k%d" % i):
                pipe.execute_command(*c)
        pipe.execute()
        w.close()
        time.sleep(0.1)
        m1 = r.info("memory")["used_memory"]
        return (m1 - m0) / n
    finally:
        srv.cleanup()


def vmhwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def rdb_load(module, cmds):
    srv = harness.Server(module)
    try:
        r = srv.client()
        for c in cmds:
            r.execute_command(*c)
        size = r.memory_usage("big")
        r.save()
        srv.stop()
        t0 = time.time()
        srv.start()
        t = time.time() - t0
        assert srv.client().exists("big") == 1
        return vmhwm(srv.proc.pid), t, size
    finally:
        srv.cleanup()


def ratio_row(label, fa, fb, fmt):
    a, b = statistics.median(fa), statistics.median(fb)
    return "| %s | %s | %s | %.3f |" % (label, fmt(a), fmt(b), a / b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--only", help="run only the cases whose label contains this text")
    a = ap.parse_args()
    mods = {"amq": os.path.abspath(a.module), "rb": os.path.abspath(a.oracle)}
    lines = ["used_memory per key (bytes; median of %d runs, servers alternated):" % a.reps, "",
             "| commands per key | amq.so | RedisBloom | ratio |", "|---|---:|---:|---:|"]
    try:
        for label, n, cmds in PER_KEY:
            if a.only and a.only not in label:
                continue
            got = {"amq": [], "rb": []}
            for rep in range(a.reps):
                for name in (("amq", "rb") if rep % 2 == 0 else ("rb", "amq")):
                    got[name].append(per_key(mods[name], label, n, cmds))
            lines.append(ratio_row(label, got["amq"], got["rb"], lambda v: "%.1f" % v))
            print(lines[-1], flush=True)
        lines += ["", "RDB load (peak RSS of the server once loaded, VmHWM; load time):", "",
                  "| value | MEMORY USAGE | amq.so peak RSS | RedisBloom peak RSS | ratio |"
                  " amq.so load s | RedisBloom load s | ratio |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for label, cmds in BIG:
            if a.only and a.only not in label:
                continue
            got = {"amq": [], "rb": []}
            for rep in range(a.reps):
                for name in (("amq", "rb") if rep % 2 == 0 else ("rb", "amq")):
                    got[name].append(rdb_load(mods[name], cmds))
            ra = [g[0] for g in got["amq"]]
            rb = [g[0] for g in got["rb"]]
            ta = [g[1] for g in got["amq"]]
            tb = [g[1] for g in got["rb"]]
            size = got["amq"][0][2]
            lines.append("| %s | %.1f MB | %.1f MB | %.1f MB | %.3f | %.3f | %.3f | %.2f |" % (
                label, size / 1e6, statistics.median(ra) / 1e6, statistics.median(rb) / 1e6,
                statistics.median(ra) / statistics.median(rb), statistics.median(ta),
                statistics.median(tb), statistics.median(ta) / statistics.median(tb)))
            print(lines[-1], flush=True)
    finally:
        harness.stop_all()
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
