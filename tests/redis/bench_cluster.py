#!/usr/bin/python3
"""bench_cluster.py - contains_many of amq.redis.ShardedFilter over 1 shard against N shards of
a loopback cluster (3 primaries, amq.so), and the per-command costs docs/cluster.md's model of
10 and 100 nodes is computed from.  Writes a Markdown report.

    /usr/bin/python3 tests/redis/bench_cluster.py --module build/amq.so \\
        [--python build/python] [--out docs/bench-cluster.md]

Measured, all in one run on this machine:
  - keys/s of contains_many(B items) for a filter of 1, 3, 6 and 12 BF.* shards, and of 1 and
    6 shards of the other backends: CF.*, AMQ.* blocked, and (with --amq, the tool that cuts
    it) a partitioned file of 48 partitions sharded by partition (median of reps);
  - the servers' CPU time (INFO cpu) for the same items sent as 1000 and as 1 per BF.MEXISTS:
    a line through the two gives the cost per command and per item (and commandstats'
    usec_per_call, which counts only the command's own execution);
  - the client's time per item (hashing, splitting by shard, packing, parsing the replies),
    and the time of one pipelined round trip to a node.
"""
import argparse
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402


def model_w(n, b, s_cmd, s_item):
    """The servers' usec for one call of b items over n shards (docs/cluster.md's model)."""
    return n * (1 + -(-b // (1000 * n))) * s_cmd + b * s_item


def median_rate(fn, items, reps):
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        rates.append(items / (time.perf_counter() - t0))
    return statistics.median(rates)


def server_usec(cl, cmd):
    """Total usec and calls of cmd over the primaries since the last CONFIG RESETSTAT."""
    usec = calls = 0
    for s in cl.nodes:
        st = s.client().info("commandstats").get("cmdstat_" + cmd)
        if st:
            usec += st["usec"]
            calls += st["calls"]
    return usec, calls


def server_cpu(cl):
    """Seconds of CPU the cluster's server processes have used."""
    t = 0.0
    for s in cl.nodes:
        i = s.client().info("cpu")
        t += i["used_cpu_user"] + i["used_cpu_sys"]
    return t


def reset_stats(cl):
    for s in cl.nodes:
        s.client().config_resetstat()


def partition_routed(a, rc, ar, keys, probe):
    """Filters of 1 and 6 shards cut from one partitioned file (48 partitions) by the tool."""
    import subprocess
    import tempfile
    import amq
    out = []
    with tempfile.TemporaryDirectory(prefix="amq-bench-") as tmp:
        g = amq.Filter(kind="partitioned", capacity=a.items, fpp=0.01, partitions=48)
        g.add_many(keys)
        path = os.path.join(tmp, "p.amq")
        g.save(path)
        for shards in (1, 6):
            name = "bench:part%d" % shards
            resp = os.path.join(tmp, name + ".resp")
            subprocess.run([a.amq, "export", "--to", "redis", "--shards", str(shards)] +
                           (["--routing", "partition"] if shards > 1 else ["--amq"]) +
                           [name, path, resp], check=True)
            ar.load_resp(rc, resp)
            f = ar.ShardedFilter(rc, name)
            if not f.contains_many(probe).all():
                raise RuntimeError("added items absent")
            out.append(("amq/partition", f))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--python", default=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                     "build", "python"))
    ap.add_argument("--out", default="")
    ap.add_argument("--items", type=int, default=1000000)
    ap.add_argument("--batch", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--amq", default="", help="the amq tool (partition routing's cut)")
    a = ap.parse_args()
    sys.path.insert(0, a.python)
    import numpy as np
    import amq.redis as ar

    load0 = os.getloadavg()[0]
    cl = harness.Cluster(a.module, 3)
    rows, small = [], []
    try:
        rc = cl.client()
        keys = np.arange(a.items, dtype=np.uint64).view("V8")
        probe = np.arange(a.items // 2, a.items // 2 + a.batch, dtype=np.uint64).view("V8")
        tiny = probe[:1000]
        # Every filter made first, then measured by turns (one run of each per round), so
        # that the load of a shared machine falls on all of them alike.
        filters = []
        kinds = [("bf", s, {}) for s in (1, 3, 6, 12)]
        kinds += [("cf", s, {"kind": "cuckoo", "bucket_size": 4}) for s in (1, 6)]
        kinds += [("amq", s, {"backend": "amq", "kind": "blocked"}) for s in (1, 6)]
        for family, shards, kw in kinds:
            f = ar.ShardedFilter.create(rc, "bench:%s%d" % (family, shards), capacity=a.items,
                                        error_rate=None if family == "cf" else 0.01,
                                        shards=shards, **kw)
            for lo in range(0, a.items, 100000):
                f.add_many(keys[lo:lo + 100000])
            if not f.contains_many(probe).all():
                raise RuntimeError("added items absent")
            filters.append((family + ("/blocked" if family == "amq" else ""), f))
        if a.amq:
            filters += partition_routed(a, rc, ar, keys, probe)
        big = [[] for _ in filters]
        little = [[] for _ in filters]
        for _ in range(a.reps):
            for i, (_, f) in enumerate(filters):
                big[i].append(median_rate(lambda: f.contains_many(probe), a.batch, 1))
                little[i].append(median_rate(lambda: f.contains_many(tiny), len(tiny), 20))
        for i, (what, f) in enumerate(filters):
            rows.append((what, f.shards, len(f.nodes()), statistics.median(big[i])))
            small.append((what, f.shards, len(f.nodes()), statistics.median(little[i])))
            f.delete()

        # The servers' cost per command and per item: their whole CPU time (INFO cpu: parsing,
        # dispatch and replies included, not only the command's own time that commandstats
        # counts) over the same items sent as 1000 per BF.MEXISTS and as 1 per BF.MEXISTS.
        f = ar.ShardedFilter.create(rc, "cost", capacity=a.items, shards=3)
        for lo in range(0, a.items, 100000):
            f.add_many(keys[lo:lo + 100000])
        cpu, cmds, per_call = {}, {}, {}
        sample = probe[:20000]
        for per_cmd in (1000, 1):
            reset_stats(cl)
            c0 = server_cpu(cl)
            for _ in range(a.reps):
                f.contains_many(sample, batch=per_cmd)
            cpu[per_cmd] = server_cpu(cl) - c0
            usec, calls = server_usec(cl, "bf.mexists")
            e_usec, e_calls = server_usec(cl, "exists")
            cmds[per_cmd] = calls + e_calls
            per_call[per_cmd] = usec / calls
        s_cmd = (cpu[1] - cpu[1000]) / (cmds[1] - cmds[1000]) * 1e6
        s_item = (cpu[1000] * 1e6 - cmds[1000] * s_cmd) / (a.reps * len(sample))
        exists_usec = e_usec / e_calls

        # The client's work per item, without a server: keys, shard split, packing, parsing.
        conn = rc.get_redis_connection(rc.get_primaries()[0]).connection_pool.get_connection("x")
        kk = ar._keys(probe)
        t0 = time.perf_counter()
        for _ in range(a.reps):
            kk = ar._keys(probe)
            pos, parts = f._split(kk)
            cmds = [f.backend.mexists(f.keys[s], p[i:i + 1000]) for s, p in enumerate(parts)
                    for i in range(0, len(p), 1000)]
            conn.pack_commands(cmds)
        c_item = (time.perf_counter() - t0) / (a.reps * a.batch)
        # Parsing: what contains_many spends beyond the round trip, per item, is part of the
        # measured rates; the round trip of a pipeline of one PING per node:
        reps = 200
        t0 = time.perf_counter()
        for _ in range(reps):
            ar._run(f._topo, {s: [("PING",)] for s in range(3)}, f.keys, "ping", 1.0)
        rtt = (time.perf_counter() - t0) / reps
        rc.get_redis_connection(rc.get_primaries()[0]).connection_pool.release(conn)
        f.delete()
    finally:
        cl.cleanup()
    load1 = os.getloadavg()[0]

    out = []
    out.append("# Sharded filter: contains_many over 1 shard against N shards\n")
    out.append("Generated by `make bench-cluster` (tests/redis/bench_cluster.py): a loopback "
               "cluster of 3 primaries (%s, amq.so) on %s, %d CPUs, load average %.1f before "
               "and %.1f after; one Python client (redis-py). A filter of %d items "
               "(8-byte keys), queried with batches of %d present items, median of %d rounds "
               "(each filter measured once per round, by turns; a batch of 1000: the median of "
               "20 calls per round).\n"
               % (" ".join(map(str, harness.server_info())), platform.machine(),
                  os.cpu_count(), load0, load1, a.items, a.batch, a.reps))
    out.append("| backend | shards | nodes holding them | keys/s, batch of %d | ratio to its "
               "1 shard | ratio to bf, 1 shard | keys/s, batch of 1000 | ratio to its 1 shard |"
               % a.batch)
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    one = {w: (r, rs) for (w, s, _, r), (_, _, _, rs) in zip(rows, small) if s == 1}
    for (w, s, n, r), (_, _, _, rs) in zip(rows, small):
        out.append("| %s | %d | %d | %.0f | %.2f | %.2f | %.0f | %.2f |"
                   % (w, s, n, r, r / one[w][0], r / one["bf"][0], rs, rs / one[w][1]))
    out.append("")
    out.append("bf: BF.* scalable Bloom at 1 %; cf: CF.* scalable cuckoo, bucket size 4 "
               "(8-bit fingerprints); amq/blocked: AMQ.* blocked Bloom at 1 %; "
               "amq/partition: one partitioned file of 48 partitions at 1 %, cut by "
               "`amq export --to redis --shards N --routing partition` (the client routes by "
               "the filter's own partition, computed by the extension).\n")
    out.append("Costs measured in the same run (the inputs of docs/cluster.md's model):\n")
    out.append("| cost | value |")
    out.append("|---|---:|")
    out.append("| server CPU per command, pipelined (s_cmd) | %.2f usec |" % s_cmd)
    out.append("| server CPU per item of a BF.MEXISTS (s_item) | %.3f usec |" % s_item)
    out.append("| BF.MEXISTS of 1000 items, commandstats usec_per_call | %.1f usec |"
               % per_call[1000])
    out.append("| BF.MEXISTS of 1 item, commandstats usec_per_call | %.2f usec |" % per_call[1])
    out.append("| EXISTS, commandstats usec_per_call | %.2f usec |" % exists_usec)
    out.append("| client, per item (keys, shard hash, split, packing; not parsing) (c_item) "
               "| %.3f usec |"
               % (c_item * 1e6))
    out.append("| client, one pipelined round trip to 3 nodes (loopback) (rtt) | %.0f usec |"
               % (rtt * 1e6))
    # The client's whole time per item (parsing included): the 3-shard call less the round
    # trip and the servers' share.
    b = a.batch
    w3 = model_w(3, b, s_cmd, s_item)
    c_client = max(c_item * 1e6, (b / rows[1][3] * 1e6 - rtt * 1e6 - w3 / 3) / b)
    out.append("| client, per item, whole call (the 3-shard row less rtt and the servers' "
               "share) (c_client) | %.3f usec |" % c_client)
    out.append("")
    out.append("## A model of 10 and 100 nodes (computed from the costs above, not measured)\n")
    out.append("One call of B items over N shards on M nodes (N = M here; with N = 4M the "
               "per-command terms grow fourfold): each shard costs one EXISTS and "
               "ceil(B/(1000 N)) BF.MEXISTS commands, so the servers' work per call is "
               "W = N (1 + ceil(B/(1000 N))) s_cmd + B s_item, spread over the M nodes; "
               "the client's is B * c_client, plus one round trip to all nodes at once (rtt, "
               "loopback here: a network adds its own). The cluster's capacity, with enough "
               "clients to keep every node busy, is M * B / W keys/s; one client reaches "
               "B / (B * c_client + rtt + W / M).\n")
    out.append("| nodes M = shards N | batch B | servers' capacity, keys/s | "
               "one Python client, keys/s | share of server time in MEXISTS items |")
    out.append("|---:|---:|---:|---:|---:|")
    for m in (1, 10, 100):
        for b in (1000, a.batch):  # noqa: B020 (b: the model's batch)
            w = model_w(m, b, s_cmd, s_item)
            cap = m * b / w * 1e6
            one = b / (b * c_client + rtt * 1e6 + w / m) * 1e6
            out.append("| %d | %d | %.3g | %.3g | %.0f%% |"
                       % (m, b, cap, one, 100.0 * b * s_item / w))
    text = "\n".join(out) + "\n"
    print(text)
    if a.out:
        with open(a.out + ".tmp", "w") as fh:
            fh.write(text)
        os.replace(a.out + ".tmp", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
