#!/usr/bin/python3
"""bench_python.py - the amq Python package against Python's set, the C
library and the amq tool, on the same keys in the same run.

Writes a Markdown report (--out).  Rows:
  - set vs amq.Filter (blocked, 1 % target) at 1M and 10M keys: add and
    query time per key, memory (peak RSS of a child process that holds only
    that structure);
  - contains_many of 10M 8-byte keys from a numpy array vs the C library's
    batched query (amq_blocked_contains_batch_fixed) on the same keys and file,
    alternating, median of the reps;
  - amq.Filter vs calling the tool (amq build + amq query -c) on a text file;
  - list batches of 200,000 and 2,000,000 keys alone and beside a busy
    Python thread.
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import amq

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def set_vs_filter(n):
    """set() and a blocked Filter over the same N str keys, in this process.

    Memory: the set's table plus the key objects it keeps alive (a set must
    hold its keys) against the filter's bytes (it holds none)."""
    keys = ["key-%d" % i for i in range(n)]
    probe = ["other-%d" % i for i in range(n)]
    t0 = time.perf_counter()
    s = set(keys)
    t1 = time.perf_counter()
    hits = sum(1 for k in probe if k in s)
    t2 = time.perf_counter()
    set_bytes = sys.getsizeof(s) + sum(sys.getsizeof(k) for k in keys)
    del s
    f = amq.Filter(kind="blocked", capacity=n, fpp=0.01)
    f.contains_many(probe[:10])  # numpy imported before timing
    t3 = time.perf_counter()
    f.add_many(keys)
    t4 = time.perf_counter()
    got = f.contains_many(probe)
    t5 = time.perf_counter()
    sample = probe[: n // 10]
    t6 = time.perf_counter()
    one = sum(1 for k in sample if k in f)
    t7 = time.perf_counter()
    assert hits == 0 and one >= 0
    return dict(n=n, set_add=(t1 - t0) / n * 1e9, set_query=(t2 - t1) / n * 1e9,
                set_mib=set_bytes / 2**20, f_add=(t4 - t3) / n * 1e9,
                f_query=(t5 - t4) / n * 1e9, f_query1=(t7 - t6) / len(sample) * 1e9,
                f_mib=f.nbytes / 2**20, fpp=float(got.mean()))


def numpy_vs_c(n, reps, tmp, cquery):
    rng = np.random.default_rng(42)
    keys = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True).view("V8")
    f = amq.Filter(kind="blocked", capacity=n, fpp=0.01)
    f.add_many(keys[: n // 2])
    path = os.path.join(tmp, "np.amq")
    f.save(path)
    kpath = os.path.join(tmp, "keys.bin")
    keys.tofile(kpath)
    g = amq.open(path)
    py, c = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        hits = int(g.contains_many(keys).sum())
        py.append((time.perf_counter() - t0) / n * 1e9)
        r = subprocess.run([cquery, path, kpath, "8", "1"], capture_output=True, text=True,
                           check=True)
        chits, cns = r.stdout.split()
        assert int(chits) == hits, (chits, hits)
        c.append(float(cns))
    return dict(n=n, py=statistics.median(py), c=statistics.median(c),
                ratio=statistics.median(p / q for p, q in zip(py, c)))


def tool_vs_python(n, tmp, amq_bin):
    src = os.path.join(tmp, "keys.txt")
    probe = os.path.join(tmp, "probe.txt")
    with open(src, "w") as fh:
        fh.writelines("user-%d\n" % i for i in range(n))
    with open(probe, "w") as fh:
        fh.writelines("user-%d\n" % i for i in range(n // 2, n + n // 2))
    out = os.path.join(tmp, "t.amq")
    t0 = time.perf_counter()
    subprocess.run([amq_bin, "build", out, src, "--type", "blocked", "--capacity", str(n),
                    "--force", "-q"], check=True)
    t1 = time.perf_counter()
    r = subprocess.run([amq_bin, "query", "-c", out, probe], capture_output=True, text=True)
    t2 = time.perf_counter()
    tool_hits = int(r.stdout)
    t3 = time.perf_counter()
    with open(src, "rb") as fh:
        keys = fh.read().split(b"\n")[:-1]
    f = amq.Filter(kind="blocked", capacity=n, fpp=0.01)
    f.add_many(keys)
    t4 = time.perf_counter()
    with open(probe, "rb") as fh:
        pk = fh.read().split(b"\n")[:-1]
    hits = int(f.contains_many(pk).sum())
    t5 = time.perf_counter()
    assert hits == tool_hits, (hits, tool_hits)
    return dict(n=n, tool_build=t1 - t0, tool_query=t2 - t1, py_build=t4 - t3,
                py_query=t5 - t4)


def busy_thread(n, reps):
    """add_many and contains_many of a list of N str keys, alone and with one
    other Python thread computing, alternating, median of the reps (the
    default 5 ms switch interval)."""
    import threading
    keys = ["busy-%d" % i for i in range(n)]

    def once():
        f = amq.Filter(n * 2, 0.01, kind="blocked")
        t0 = time.perf_counter()
        f.add_many(keys)
        t1 = time.perf_counter()
        f.contains_many(keys)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    def spin(stop):
        x = 0
        while not stop.is_set():
            x += 1

    once()
    alone, beside = [], []
    for _ in range(reps):
        alone.append(once())
        stop = threading.Event()
        th = threading.Thread(target=spin, args=(stop,))
        th.start()
        time.sleep(0.01)
        beside.append(once())
        stop.set()
        th.join()
    med = lambda xs, i: statistics.median(x[i] for x in xs) * 1e3
    return dict(n=n, add=med(alone, 0), add_busy=med(beside, 0), query=med(alone, 1),
                query_busy=med(beside, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amq", default=os.path.join(REPO, "build", "amq"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    cquery = os.path.join(tempfile.gettempdir(), "amq-cquery-%d" % os.getpid())
    subprocess.run(["cc", "-O2", "-std=c11", "-I" + os.path.join(REPO, "include"),
                    os.path.join(HERE, "cquery.c"), "-o", cquery,
                    os.path.join(REPO, "build", "libamq.a"), "-lxxhash", "-lm", "-pthread"],
                   check=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sv = [set_vs_filter(n) for n in sizes]
        nc = numpy_vs_c(sizes[-1], a.reps, tmp, cquery)
        tv = tool_vs_python(sizes[0], tmp, a.amq)
    bt = [busy_thread(n, a.reps) for n in (200000, 2000000)]
    os.unlink(cquery)
    rows.append("# amq for Python: benchmarks\n")
    rows.append("Generated by `make bench-python` (python/bench/bench_python.py) on %s, "
                "Python %s, numpy %s, libamq %s. Times per key; every ratio is between "
                "rows measured in the same run.\n" % (
                    platform.machine(), platform.python_version(), np.__version__,
                    amq.library_version()))
    rows.append("## Python's set against amq.Filter (blocked, 1 % target)\n")
    rows.append("Keys are `'key-%d'` strings already in a list. Memory: the set's table plus "
                "the str objects it keeps alive, against the filter's bytes (it keeps no key). "
                "`contains_many` answers a list of `N` absent keys; `in` is one key at a "
                "time. The set answers exactly; the filter has false positives (last column).\n")
    rows.append("| keys | set add | set `in` | set memory | Filter add_many | Filter "
                "contains_many | Filter `in` | Filter memory | memory ratio | measured fpp |")
    rows.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in sv:
        rows.append("| %s | %.0f ns | %.0f ns | %.0f MiB | %.0f ns | %.0f ns | %.0f ns | "
                    "%.1f MiB | %.1fx less | %.3f %% |" % (
                        format(r["n"], ","), r["set_add"], r["set_query"], r["set_mib"],
                        r["f_add"], r["f_query"], r["f_query1"], r["f_mib"],
                        r["set_mib"] / max(r["f_mib"], 0.1), r["fpp"] * 100))
    rows.append("\n## contains_many against the C library, same keys\n")
    rows.append("%s random 8-byte keys in a numpy array (dtype `V8`), half of them in a "
                "blocked filter; the C side is `amq_blocked_contains_batch_fixed` on the same "
                "file and keys (python/bench/cquery.c), alternating with Python, median of "
                "%d reps.\n" % (format(nc["n"], ","), a.reps))
    rows.append("| keys | Python contains_many | C batched query | Python / C |")
    rows.append("|---|---|---|---|")
    rows.append("| %s | %.2f ns/key | %.2f ns/key | %.2fx |" % (
        format(nc["n"], ","), nc["py"], nc["c"], nc["ratio"]))
    rows.append("\n## amq.Filter against calling the tool\n")
    rows.append("%s lines `user-%%d` built into a blocked filter, then %s lines (half "
                "present) counted: `amq build` + `amq query -c` against reading the same "
                "files in Python and calling add_many / contains_many.\n" % (
                    format(tv["n"], ","), format(tv["n"], ",")))
    rows.append("| | build | query |")
    rows.append("|---|---|---|")
    rows.append("| amq tool | %.3f s | %.3f s |" % (tv["tool_build"], tv["tool_query"]))
    rows.append("| Python | %.3f s | %.3f s |" % (tv["py_build"], tv["py_query"]))
    rows.append("\n## List batches beside a busy thread\n")
    rows.append("A list of `N` str keys added to and queried in a blocked filter, alone and "
                "while one other Python thread counts in a loop (default 5 ms switch "
                "interval), alternating, median of %d reps. A list batch is hashed holding "
                "the GIL and probed without it once per 2^20 keys (lists under 2^18 keys keep "
                "it): it waits for the other thread at most once per slice, where it used to "
                "wait every 1,024 keys.\n" % a.reps)
    rows.append("| keys | add_many alone | add_many beside | ratio | contains_many alone | "
                "contains_many beside | ratio |")
    rows.append("|---|---|---|---|---|---|---|")
    for r in bt:
        rows.append("| %s | %.1f ms | %.1f ms | %.2fx | %.1f ms | %.1f ms | %.2fx |" % (
            format(r["n"], ","), r["add"], r["add_busy"], r["add_busy"] / r["add"],
            r["query"], r["query_busy"], r["query_busy"] / r["query"]))
    text = "\n".join(rows) + "\n"
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
