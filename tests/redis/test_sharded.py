"""test_sharded.py - amq.redis.ShardedFilter over a real loopback cluster (docs/cluster.md).

  - the protocol's placement and metadata, create / add / contains / info / delete, on a plain
    server and a 3-primary cluster;
  - failover: AMQ_SHARDED_ITEMS (default 1,000,000) items added with WAIT 1 to a 3+3 cluster,
    kill -9 of a primary: after the failover every acknowledged item answers present;
  - slots migrated by redis-cli --cluster reshard and rebalance while items are added and
    queried: no error reaches the caller, nothing is lost;
  - a node down, a shard key missing: errors naming the shard and its node;
  - amq.so's own type as the shards (backend "amq"), blocked, cuckoo and pocket kinds;
  - `amq export --to redis --shards N` loaded through the cluster answers as `amq query`.
"""
import json
import os
import subprocess
import tempfile
import threading
import time

import harness

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import sys  # noqa: E402
sys.path.insert(0, os.environ.get("AMQ_PYTHON") or os.path.join(_REPO, "build", "python"))
import numpy as np  # noqa: E402
import amq.redis as ar  # noqa: E402

ITEMS = int(os.environ.get("AMQ_SHARDED_ITEMS", "1000000"))
AMQ = os.environ.get("AMQ") or os.path.join(_REPO, "build", "amq")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def eq(a, b, what=""):
    if a != b:
        raise AssertionError("%s: %.1000r != %.1000r" % (what, a, b))


def raises(exc, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except exc as e:
        return e
    raise AssertionError("%s not raised by %s" % (exc.__name__, fn.__name__))


def u64_keys(lo, hi):
    """8-byte keys (numpy V8), as a caller with integer ids would pass them."""
    return np.arange(lo, hi, dtype=np.uint64).view("V8")


# ---- the protocol's constants: any client must compute the same ----------------------------

def test_protocol_vectors(env):
    # CRC16-XMODEM as Redis Cluster: the published check value and Redis' own slot of "foo".
    eq(ar.key_slot("123456789"), 0x31C3 & 16383, "crc16 check value")
    eq(ar.key_slot("foo"), 12182, "slot of foo")
    eq(ar.shard_keys("users", 3), ["users:{0.1}", "users:{1.0}", "users:{2.0}"], "keys, N=3")
    eq(ar.shard_tag(5, 12), SHARD_TAG_5_12, "tag of shard 5 of 12")
    for n, shards in ((1, None), (3, None), (6, None), (12, None), (100, None),
                      (1024, (0, 1, 511, 1022, 1023))):
        for i in (shards or range(n)):
            slot = ar.key_slot(ar.shard_tag(i, n))
            lo, hi = i * 16384 // n, (i + 1) * 16384 // n
            check(lo + (hi - lo) // 4 <= slot < lo + (hi - lo) // 4 + max(1, (hi - lo) // 2),
                  "shard %d of %d: slot %d outside the middle of [%d, %d)" % (i, n, slot, lo, hi))
    # The shard hash: XXH3-64 with the protocol's seed, multiply-shift.
    eq(ar.SHARD_SEED, 0x616D712E73686172)
    for item in ("alice", "bob", b"\x00\x01", ""):
        h = ar._hash.xxh3_64(item, ar.SHARD_SEED)
        eq(ar.shard_of(item, 12), (h * 12) >> 64, "shard of %r" % (item,))
    eq([ar.shard_of("item-%d" % i, 7) for i in range(12)], SHARDS_OF_ITEMS_7, "shard vector")
    raises(ValueError, ar.shard_keys, "a{b}", 3)
    raises(ValueError, ar.shard_keys, "ab", 1025)


# Recorded from the protocol (XXH3-64 of "item-0".."item-11", seed 0x616d712e73686172,
# (h * 7) >> 64), and the tag docs/cluster.md works out by hand.
SHARDS_OF_ITEMS_7 = [5, 3, 1, 2, 5, 6, 3, 2, 3, 2, 4, 5]
SHARD_TAG_5_12 = "5.2"


# ---- basic behaviour ---------------------------------------------------------------------

def _basic(client, shards, nodes=None):
    f = ar.ShardedFilter.create(client, "users:seen", capacity=20000, error_rate=0.01,
                                shards=shards)
    eq(f.shards, shards)
    meta = json.loads(client.get("users:seen"))
    eq(meta["format"], "amq-sharded-filter")
    eq(meta["version"], 1)
    eq(meta["backend"], "bf")
    eq(meta["keys"], ar.shard_keys("users:seen", shards))
    eq(meta["shard_seed"], "0x616d712e73686172")
    if nodes is not None:
        # N a multiple of the primaries: the same number of shards on each.
        eq(sorted(len(v) for v in f.nodes().values()), [shards // nodes] * nodes, "spread")
    present = ["user-%d" % i for i in range(10000)]
    eq(f.add_many(present[:5000]) > 4900, True, "new adds")
    eq(f.add_many(np.array(present[5000:], dtype="S")) > 4900, True, "numpy S adds")
    g = ar.ShardedFilter(client, "users:seen")  # opened from NAME alone
    r = g.contains_many(present)
    eq(r.dtype, np.bool_)
    eq(int(r.sum()), len(present), "every added item present")
    absent = ["other-%d" % i for i in range(20000)]
    fp = g.contains_many(absent).mean()
    check(fp < 0.02, "false-positive rate %.4f over 20000 absent items (bound 0.02)" % fp)
    # Order preserved: present and absent interleaved.
    mixed = [x for pair in zip(present[:2000], absent[:2000]) for x in pair]
    r = g.contains_many(mixed)
    want = np.array([True, False] * 2000)
    eq(bool(((r == want) | (~want)).all()), True, "present items in their places")
    eq(g.contains_many(absent[:2000]).tolist(), r[1::2].tolist(), "absent answers in place")
    eq("user-1" in g, True)
    eq(g.add("brand-new"), True)
    eq(g.contains("brand-new"), True)
    info = g.info()
    eq(info["shards"], shards)
    eq(info["totals"]["Number of items inserted"],
       sum(d["Number of items inserted"] for d in info["per_shard"]))
    eq(len(g), info["totals"]["Number of items inserted"])
    check(info["items_min"] > 0, "every shard received items")
    # Errors.
    raises(ar.FilterExistsError, ar.ShardedFilter.create, client, "users:seen", 100,
           shards=shards)
    raises(ar.FilterNotFoundError, ar.ShardedFilter, client, "nope")
    raises(TypeError, g.contains_many, "abc")
    raises(TypeError, g.contains_many, np.arange(4, dtype=np.uint64))
    # A shard key deleted behind the filter's back is an error, never "absent".
    client.delete(g.keys[shards - 1])
    on_last = [x for x in present if g.shard_of(x) == shards - 1][:3]
    e = raises(ar.MissingShardError, g.contains_many, present)
    eq(e.shard, shards - 1)
    check(g.keys[shards - 1] in str(e), "the message names the key: %s" % e)
    raises(ar.MissingShardError, g.add_many, on_last)
    g.delete()
    eq(client.exists(*ar.shard_keys("users:seen", shards), "users:seen"), 0, "all deleted")
    raises(ar.FilterNotFoundError, ar.ShardedFilter, client, "users:seen")


def test_plain_server(env):
    _basic(env.server.client(), 4)


def test_cluster_basic_and_cuckoo(env):
    cl = env.track(harness.Cluster(env.module, 3))
    rc = cl.client()
    _basic(rc, 6, nodes=3)
    c = ar.ShardedFilter.create(rc, "c", capacity=10000, kind="cuckoo", shards=3,
                                bucket_size=4)
    eq(c.meta["backend"], "cf")
    eq(c.meta["params"][0]["bucket_size"], 4)
    items = ["c-%d" % i for i in range(3000)]
    c.add_many(items)
    eq(int(c.contains_many(items).sum()), 3000)
    eq(c.remove("c-7"), True)
    eq(c.info()["totals"]["Number of items inserted"], 2999)
    c.delete()


def test_full_cuckoo_shard_is_an_error_not_a_loss(env):
    """A CF shard that cannot take an item answers -1 for it in CF.INSERT: add_many raises
    ShardError naming the shard (before, it returned normally and 18,166 of 20,000 items
    then answered absent: a hunt session); every item it did not refuse answers present.
    batch and wait are checked."""
    cl = env.track(harness.Cluster(env.module, 3))
    rc = cl.client()
    f = ar.ShardedFilter.create(rc, "cffull", capacity=1000, shards=3, kind="cuckoo",
                                expansion=0)
    items = ["item-%d" % i for i in range(20000)]
    e = raises(ar.ShardError, f.add_many, items)
    check("not added: the filter is full" in str(e) and e.shard in (0, 1, 2), str(e))
    k0 = f.keys[0]
    rc.delete(k0)
    rc.set(k0, "not a filter")
    e = raises(ar.ShardError, f.contains_many, items[:10])
    eq((e.shard, "WRONGTYPE" in str(e)), (0, True), str(e))
    eq(e.node, "127.0.0.1:%d" % rc.get_node_from_key(k0).port, "the error names the node")
    rc.delete(k0)
    rc.execute_command("CF.RESERVE", k0, 1000, "EXPANSION", 0)
    got = f.contains_many(items)
    check(int(got.sum()) > 1000, "items taken before the shards filled: %d" % int(got.sum()))
    for bad in (0, -1, 1.5, True):
        raises(ValueError, f.add_many, items[:10], batch=bad)
        raises(ValueError, f.contains_many, items[:10], batch=bad)
    for bad in (-1, 0.5, "1"):
        raises(ValueError, f.add_many, items[:10], wait=bad)
    f.delete()


def test_node_down_names_shard_and_node(env):
    cl = env.track(harness.Cluster(env.module, 3))
    rc = cl.client()
    f = ar.ShardedFilter.create(rc, "down", capacity=30000, shards=6)
    items = ["d-%d" % i for i in range(30000)]
    f.add_many(items)
    victim_node, victim_shards = sorted(f.nodes().items())[1]
    cl.by_port(victim_node.split(":")[1]).kill()
    f.retry_timeout = 0.5
    e = raises(ar.ShardUnavailableError, f.contains_many, items)
    eq(e.node, victim_node, "the node named")
    check(e.shard in victim_shards, "shard %r is on %s (%r)" % (e.shard, victim_node,
                                                               victim_shards))
    check(("shard %d" % e.shard) in str(e) and victim_node in str(e), "message: %s" % e)
    check(isinstance(e, harness.redis.ConnectionError), "a ConnectionError too")
    e = raises(ar.ShardUnavailableError, f.add_many, items[:100])
    eq(e.node, victim_node)
    # Items of the other shards only still answer (their nodes are up, the slots ok).
    ok = [x for x in items[:2000] if f.shard_of(x) not in victim_shards]
    eq(int(f.contains_many(ok).sum()), len(ok))
    # A create cut short by the node: the shards it made on the others are deleted, so the
    # name is free once the node is back (before, they stayed and blocked it; a hunt session)
    def node_of(k):
        n = rc.get_node_from_key(k)
        return "%s:%d" % (n.host, n.port)
    # a name whose metadata key is on a live node, with shards on the dead one and the others
    name = next(n for n in ("nd%d" % i for i in range(100)) if node_of(n) != victim_node and
                len({node_of(k) for k in ar.shard_keys(n, 6)}) == 3)
    e = raises(ar.ShardUnavailableError, ar.ShardedFilter.create, rc, name, capacity=1000,
               shards=6, retry_timeout=0.5)
    check("were deleted" in str(e), str(e))
    alive = [k for k in ar.shard_keys(name, 6) if node_of(k) != victim_node]
    check(alive, "some shard of %s on a live node" % name)
    eq([k for k in alive if rc.exists(k)], [], "shards left on the live nodes")


def test_native_backend_kinds(env):
    """amq.so's own type as the shards (backend "amq"): blocked, cuckoo and pocket shards on
    one cluster, 100,000 items each, all present, the absent items' rate within the kind's
    target (AMQ.INFO's fpp_target, plus three binomial standard deviations), remove on the
    cuckoo kind only, totals from AMQ.INFO; then a node down names the shard and node."""
    cl = env.track(harness.Cluster(env.module, 3))
    rc = cl.client()
    n = 100000
    items = u64_keys(0, n)
    absent = u64_keys(1 << 40, (1 << 40) + n)
    fs = {}
    for kind, kw in (("blocked", {}), ("cuckoo", {"fpbits": 12}), ("pocket", {})):
        f = ar.ShardedFilter.create(rc, "nat:" + kind, capacity=n, error_rate=0.01, shards=6,
                                    backend="amq", kind=kind, **kw)
        meta = json.loads(rc.get("nat:" + kind))
        eq(meta["backend"], "amq", kind)
        eq(meta["params"][0]["kind"], kind, kind)
        eq(rc.type(f.keys[0]), b"amqfilter", kind)
        check(f.add_many(items) > n * 0.99, "%s: adds counted new" % kind)
        g = ar.ShardedFilter(rc, "nat:" + kind)  # opened from NAME alone
        eq(int(g.contains_many(items).sum()), n, "%s: every added item present" % kind)
        info = g.info()
        eq(info["backend"], "amq")
        eq(info["totals"]["items"], sum(d["items"] for d in info["per_shard"]), kind)
        eq(len(g), info["totals"]["items"], kind)
        check(info["totals"]["items"] > n * 0.99, "%s: items %r" % (kind, info["totals"]))
        eq({d["kind"] for d in info["per_shard"]}, {kind}, kind)
        target = max(float(d["fpp_target"]) for d in info["per_shard"])
        check(target <= 0.01, "%s: fpp_target %r above the error rate asked" % (kind, target))
        fp = g.contains_many(absent).mean()
        bound = target + 3 * (target / n) ** 0.5
        check(fp <= bound, "%s: false-positive rate %.5f over %d absent items (target %.5f, "
              "bound %.5f)" % (kind, fp, n, target, bound))
        # Order preserved: present and absent interleaved.
        mixed = [x for pair in zip(items[:1000].tolist(), absent[:1000].tolist()) for x in pair]
        r = g.contains_many(mixed)
        eq(r[0::2].tolist(), [True] * 1000, kind)
        eq(r[1::2].tolist(), g.contains_many(absent[:1000]).tolist(), kind)
        fs[kind] = g
    one = items[7].tobytes()
    eq(fs["cuckoo"].remove(one), True)
    eq(fs["cuckoo"].contains(one), False)
    raises(TypeError, fs["blocked"].remove, one)
    # A shard key deleted behind the filter's back: an error, never "absent" (AMQ.MEXISTS
    # answers 0 for a missing key; AMQ.MADD refuses one).
    b = fs["blocked"]
    rc.delete(b.keys[2])
    e = raises(ar.MissingShardError, b.contains_many, items[:2000])
    eq(e.shard, 2)
    raises(ar.MissingShardError, b.add_many, [x for x in items[:2000].tolist()
                                              if b.shard_of(x) == 2][:5])
    raises(ar.MissingShardError, b.info)
    # A node down.
    c = fs["cuckoo"]
    victim_node, victim_shards = sorted(c.nodes().items())[1]
    cl.by_port(victim_node.split(":")[1]).kill()
    c.retry_timeout = 0.5
    e = raises(ar.ShardUnavailableError, c.contains_many, items[:5000])
    eq(e.node, victim_node, "the node named")
    check(e.shard in victim_shards and ("shard %d" % e.shard) in str(e)
          and victim_node in str(e), "message: %s" % e)
    ok = [x for x in items[:2000].tolist() if c.shard_of(x) not in victim_shards and x != one]
    eq(int(c.contains_many(ok).sum()), len(ok), "the other nodes' shards answer")


# ---- redirections, step by step ------------------------------------------------------------

def test_ask_then_moved_followed(env):
    """A shard key migrated by hand: while its slot is MIGRATING the source answers ASK for
    it, after CLUSTER SETSLOT ... NODE it answers MOVED; the caller sees neither."""
    cl = env.track(harness.Cluster(env.module, 3))
    rc = cl.client()
    f = ar.ShardedFilter.create(rc, "ask", capacity=30000, shards=3)
    items = ["a-%d" % i for i in range(30000)]
    f.add_many(items[:20000])
    key = f.keys[0]
    slot = ar.key_slot(key[key.index("{") + 1:-1])
    src = cl.by_port(sorted(f.nodes().items(), key=lambda kv: kv[1])[0][0].split(":")[1])
    dst = next(s for s in cl.primaries() if s is not src)
    src_id, dst_id = cl.node_id(src), cl.node_id(dst)
    dst.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    src.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    src.client().execute_command("MIGRATE", "127.0.0.1", dst.port, key, 0, 5000)
    eq(int(f.contains_many(items[:20000]).sum()), 20000, "present through ASK")
    check(f.stats["ask"] > 0, "ASK followed: %r" % f.stats)
    f.add_many(items[20000:])  # INSERT ... NOCREATE on the target, after ASKING
    eq(int(f.contains_many(items).sum()), 30000, "adds through ASK present")
    for s in cl.primaries():
        s.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
    moved = f.stats["moved"]
    eq(int(f.contains_many(items).sum()), 30000, "present after MOVED")
    check(f.stats["moved"] > moved, "MOVED followed: %r" % f.stats)
    eq(f.nodes()["127.0.0.1:%d" % dst.port].count(0), 1, "shard 0 now on the target")


def _move_slot(cl, slot, src, dst):
    """Slot from src to dst as redis-cli's reshard moves it: IMPORTING / MIGRATING, its keys
    MIGRATEd, then the owner set on every primary."""
    src_id, dst_id = cl.node_id(src), cl.node_id(dst)
    dst.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    src.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    while True:
        ks = src.client().execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
        if not ks:
            break
        src.client().execute_command("MIGRATE", "127.0.0.1", dst.port, "", 0, 5000, "KEYS", *ks)
    for s in cl.primaries():
        s.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)


def test_many_shards_moved_at_once(env):
    """All of one node's 16 shards of a 48-shard filter moved to another node, then queried
    through a client whose slot map predates the move: each shard is redirected once, in
    one round (redis-py alone keeps only the last MOVED of a round, and the call raised
    ShardError past 64 redirections)."""
    cl = env.track(harness.Cluster(env.module, 3))
    f = ar.ShardedFilter.create(cl.client(), "many", capacity=96000, shards=48)
    items = u64_keys(0, 40000)
    f.add_many(items)
    g = ar.ShardedFilter(cl.client(), "many")
    eq(int(g.contains_many(items[:100]).sum()), 100, "the stale client's map loaded")
    node, shards = sorted(f.nodes().items())[0]
    src = cl.by_port(node.split(":")[1])
    dst = next(s for s in cl.primaries() if s is not src)
    for t in shards:
        k = f.keys[t]
        _move_slot(cl, ar.key_slot(k[k.index("{") + 1:-1]), src, dst)
    r = g.contains_many(items)
    eq(int((~r).sum()), 0, "items absent after the move")
    eq(g.stats.get("moved", 0), len(shards), "one MOVED per moved shard: %r" % g.stats)
    eq(sorted(ar.ShardedFilter(cl.client(), "many").nodes()[dst_name(dst)])
       == sorted(f.nodes()[dst_name(dst)] + shards), True, "the shards are on the target")


# ---- failover -----------------------------------------------------------------------------

def test_failover_keeps_acknowledged_items(env):
    cl = env.track(harness.Cluster(env.module, 3, replicas=1, node_timeout=2000))
    rc = cl.client()
    f = ar.ShardedFilter.create(rc, "fo", capacity=ITEMS, error_rate=0.01, shards=6, wait=1,
                                retry_timeout=60)
    step = 100000
    for lo in range(0, ITEMS, step):
        f.add_many(u64_keys(lo, min(ITEMS, lo + step)), wait=1)  # raises unless acknowledged
    node, shards = sorted(f.nodes().items())[0]
    victim = cl.by_port(node.split(":")[1])
    victim.kill()  # SIGKILL: no shutdown, no last write
    cl.wait_ok()
    r = f.contains_many(u64_keys(0, ITEMS))
    check(f.stats["retries"] > 0, "the failover was ridden out by retries: %r" % f.stats)
    now = ar.ShardedFilter(cl.client(), "fo").nodes()
    check(node not in now and sorted(now.values()) == sorted(f.nodes().values()),
          "shards %r moved from %s to its replica: %r" % (shards, node, now))
    missing = np.flatnonzero(~r)
    eq(len(missing), 0, "acknowledged items absent after failover (first %r)" % missing[:5])
    fp = f.contains_many(u64_keys(ITEMS, ITEMS + 100000)).mean()
    check(fp < 0.02, "false-positive rate %.4f (bound 0.02)" % fp)
    eq(f.info()["totals"]["Number of items inserted"] >= ITEMS * 0.98, True)


# ---- slot migration under load ----------------------------------------------------------------

def _reshard(cl, src, dst, count):
    out = subprocess.run([harness.REDIS_CLI, "--cluster", "reshard", "127.0.0.1:%d" % src.port,
                          "--cluster-from", cl.node_id(src), "--cluster-to", cl.node_id(dst),
                          "--cluster-slots", str(count), "--cluster-yes"],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("reshard failed:\n" + out.stdout[-2000:] + out.stderr)


def test_migration_under_load(env):
    cl = env.track(harness.Cluster(env.module, 3))
    rc = cl.client()
    f = ar.ShardedFilter.create(rc, "mig", capacity=400000, shards=12)
    g = ar.ShardedFilter(cl.client(), "mig")  # a second client, whose slot map goes stale
    before = f.nodes()
    src_node = sorted(before)[0]
    src = cl.by_port(src_node.split(":")[1])
    dst = cl.by_port(sorted(before)[1].split(":")[1])
    # redis-cli moves the source's lowest slots first: enough of them to carry its first
    # shard (the others stay: a few hundred slots migrate, not the node's 5461).
    slots = sorted(s for s, p in cl.slot_map(src).items() if p == src.port)
    tag_slot = {t: ar.key_slot(f.keys[t][f.keys[t].index("{") + 1:-1]) for t in before[src_node]}
    first = min(tag_slot, key=tag_slot.get)
    mine = [first]
    count = sum(1 for s in slots if s <= tag_slot[first])
    errors, acked, rounds = [], [], [0]
    stop = threading.Event()

    def work():
        lo = 0
        try:
            while not stop.is_set():
                batch = u64_keys(lo, lo + 2000)
                g.add_many(batch)
                acked.append((lo, lo + 2000))
                r = g.contains_many(u64_keys(max(0, lo - 20000), lo + 2000))
                if not r.all():
                    errors.append("absent after add: %d items" % int((~r).sum()))
                lo += 2000
                rounds[0] += 1
        except Exception as e:  # everything that reaches the caller is a failure
            errors.append("%s: %s" % (type(e).__name__, e))

    t = threading.Thread(target=work)
    t.start()
    try:
        time.sleep(0.3)
        r0 = rounds[0]
        t0 = time.time()
        _reshard(cl, src, dst, count)
        print("    reshard of %d slots: %.1fs" % (count, time.time() - t0), flush=True)
        t0 = time.time()
        moved = ar.ShardedFilter(cl.client(), "mig").nodes()
        r1 = rounds[0]
        out = subprocess.run([harness.REDIS_CLI, "--cluster", "rebalance",
                              "127.0.0.1:%d" % src.port, "--cluster-yes"],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError("rebalance failed:\n" + out.stdout[-2000:] + out.stderr)
        print("    rebalance: %.1fs, %d rounds of load; redirections %r"
              % (time.time() - t0, rounds[0], g.stats), flush=True)
        time.sleep(0.3)
    finally:
        stop.set()
        t.join()
    eq(errors, [], "errors reached the caller")
    # The worker's client learnt the moves from the servers: redirections were followed.
    check(g.stats["moved"] + g.stats["ask"] > 0, "no redirection met: %r" % g.stats)
    check(all(s in moved.get(dst_name(dst), []) for s in mine),
          "the source's shard %r moved to the target: %r" % (mine, moved))
    check(r1 > r0, "the load ran during the migration (%d rounds)" % (r1 - r0))
    check(len(acked) > 0, "items were added")
    n = acked[-1][1]
    r = ar.ShardedFilter(cl.client(), "mig").contains_many(u64_keys(0, n))
    eq(int((~r).sum()), 0, "items lost across the migration")


def dst_name(s):
    return "127.0.0.1:%d" % s.port


# ---- the tool: export a sharded filter, load it through the cluster -------------------------

def test_export_import_tool(env):
    shards = 3
    tmp = tempfile.mkdtemp(prefix="amq-sharded-")
    try:
        # Keys split by the protocol's shard hash (python3 -m amq.redis split), one filter each.
        keys = os.path.join(tmp, "keys.txt")
        with open(keys, "w") as fh:
            for i in range(30000):
                fh.write("key-%d\n" % i)
        subprocess.run([sys.executable, "-m", "amq.redis", "split", "--shards", str(shards),
                        keys, os.path.join(tmp, "keys")], check=True,
                       env=dict(os.environ, PYTHONPATH=sys.path[0]))
        files = []
        for i in range(shards):
            out = os.path.join(tmp, "s%d.amq" % i)
            subprocess.run([AMQ, "build", "--type", "scalable-bloom", "--redisbloom", "--fpp",
                            "0.01", out,
                                                    os.path.join(tmp, "keys.%d" % i)],
                           check=True, capture_output=True)
            files.append(out)
        resp = os.path.join(tmp, "f.resp")
        subprocess.run([AMQ, "export", "--to", "redis", "--shards", str(shards), "tool:f"] +
                       files + [resp], check=True)
        cl = env.track(harness.Cluster(env.module, 3))
        rc = cl.client()
        check(ar.load_resp(rc, resp) > shards, "commands run")
        f = ar.ShardedFilter(rc, "tool:f")
        eq(f.keys, ar.shard_keys("tool:f", shards))
        probe = ["key-%d" % i for i in range(0, 60000, 3)]  # half present, half absent
        got = f.contains_many(probe)
        for i in range(shards):
            mine = [k for k in probe if f.shard_of(k) == i]
            q = subprocess.run([AMQ, "query", files[i]], input="\n".join(mine) + "\n",
                               capture_output=True, text=True)
            want = q.stdout.splitlines()
            ans = [k for j, k in enumerate(probe) if f.shard_of(k) == i and got[j]]
            held = [k for k in mine if int(k.split("-")[1]) < 30000]
            check(set(held) <= set(want) and len(held) > 3000,
                  "shard %d: its %d keys selected by amq query" % (i, len(held)))
            eq(ans, want, "shard %d answers as amq query on its file" % i)
        # And back: the dump of the cluster reassembled by the tool equals the files.
        dump = os.path.join(tmp, "dump.resp")
        with open(dump, "wb") as fh:
            f.dump_resp(fh)
        outs = [os.path.join(tmp, "back%d.amq" % i) for i in range(shards)]
        subprocess.run([AMQ, "import", "--from", "redis", "--shards", str(shards), dump] + outs,
                       check=True)
        for i in range(shards):
            a = subprocess.run([AMQ, "query", files[i]], input="\n".join(probe) + "\n",
                               capture_output=True, text=True).stdout
            b = subprocess.run([AMQ, "query", outs[i]], input="\n".join(probe) + "\n",
                               capture_output=True, text=True).stdout
            eq(a, b, "shard %d imported back answers as its file" % i)
    finally:
        subprocess.run(["rm", "-rf", tmp])



def test_empty_cuckoo_shard_dumps_and_loads(env):
    """CF.SCANDUMP of a cuckoo filter with no items answers [0, ""] at once (RedisBloom's
    reply), so a shard emptied by removals, or never added to, dumped no chunk: `amq import`
    refused the stream and load_resp left the shard key missing.  dump_resp writes such a
    shard as an empty filter of its first link's buckets."""
    cl = env.track(harness.Cluster(env.module, 3))
    rc = cl.client()
    tmp = tempfile.mkdtemp(prefix="amq-sharded-empty-")
    try:
        f = ar.ShardedFilter.create(rc, "ce", capacity=3000, shards=3, kind="cuckoo")
        items = ["c%d" % i for i in range(900)]
        f.add_many(items)
        for k in items:
            if f.shard_of(k) == 1:
                f.remove(k)
        keep = [k for k in items if f.shard_of(k) != 1]
        gone = [k for k in items if f.shard_of(k) == 1]
        info = rc.execute_command("CF.INFO", f.keys[1])
        eq(_info(info)["Number of items inserted"], 0, "shard 1 emptied")
        fresh = ar.ShardedFilter.create(rc, "cn", capacity=3000, shards=3, kind="cuckoo")
        for g in (f, fresh):
            dump = os.path.join(tmp, g.name + ".resp")
            with open(dump, "wb") as fh:
                g.dump_resp(fh)
            outs = [os.path.join(tmp, "%s%d.amq" % (g.name, i)) for i in range(3)]
            _run_tool("import", "--from", "redis", "--shards", "3", dump, *outs)
            want = [_info(rc.execute_command("CF.INFO", k)) for k in g.keys]
            g.delete()
            ar.load_resp(rc, dump)
            back = ar.ShardedFilter(rc, g.name)
            for i, k in enumerate(back.keys):
                got = _info(rc.execute_command("CF.INFO", k))
                for fld in ("Number of buckets", "Number of items inserted", "Bucket size",
                            "Expansion rate", "Max iterations"):
                    eq(got[fld], want[i][fld], "%s shard %d %s" % (g.name, i, fld))
        back = ar.ShardedFilter(rc, "ce")
        eq(int((~back.contains_many(keep)).sum()), 0, "kept items absent after the reload")
        check(back.contains_many(gone).mean() < 0.05, "removed items mostly absent")
        eq(_query(os.path.join(tmp, "ce1.amq"), gone), [], "shard 1's file is empty")
        new = ["n%d" % i for i in range(300)]
        for g in (back, ar.ShardedFilter(rc, "cn")):
            g.add_many(new)
            eq(int((~g.contains_many(new)).sum()), 0, "%s takes adds after the reload" % g.name)
    finally:
        subprocess.run(["rm", "-rf", tmp])


def _info(reply):
    return {k.decode(): v for k, v in zip(reply[0::2], reply[1::2])}


def _run_tool(*args, **kw):
    return subprocess.run([AMQ] + list(args), check=True, capture_output=True, **kw)


def _query(path, keys):
    return subprocess.run([AMQ, "query", path], input="\n".join(keys) + "\n",
                          capture_output=True, text=True).stdout.splitlines()


def test_export_import_amq_shards_and_partition_routing(env):
    """AMQ.* shards exported by the tool: static ribbon shards built from the split keys
    answer exactly as `amq query` on their files and refuse adds; a partitioned file of 12
    partitions cut into 4 shards of 3 (routing "partition", no key split) answers exactly as
    `amq query` on the whole file - present, absent and false positives alike, so its rate
    is the file's - takes adds, and the dumps of both come back byte for byte."""
    tmp = tempfile.mkdtemp(prefix="amq-sharded-amq-")
    try:
        n, shards = 30000, 3
        keys = os.path.join(tmp, "keys.txt")
        with open(keys, "w") as fh:
            fh.write("".join("key-%d\n" % i for i in range(n)))
        probe = ["key-%d" % i for i in range(0, 2 * n, 2)]  # half present, half absent
        subprocess.run([sys.executable, "-m", "amq.redis", "split", "--shards", str(shards),
                        keys, os.path.join(tmp, "keys")], check=True,
                       env=dict(os.environ, PYTHONPATH=sys.path[0]))
        files = [os.path.join(tmp, "r%d.amq" % i) for i in range(shards)]
        for i in range(shards):
            _run_tool("build", "--type", "ribbon", files[i], os.path.join(tmp, "keys.%d" % i))
        _run_tool("export", "--to", "redis", "--shards", str(shards), "st", *files,
                  os.path.join(tmp, "st.resp"))
        # a partitioned file, cut by partition
        whole = os.path.join(tmp, "p.amq")
        _run_tool("create", "--type", "partitioned", "--partitions", "12", "--capacity",
                  str(n), whole)
        _run_tool("add", whole, keys)
        _run_tool("export", "--to", "redis", "--shards", "4", "--routing", "partition", "pt",
                  whole, os.path.join(tmp, "pt.resp"))
        cl = env.track(harness.Cluster(env.module, 3))
        rc = cl.client()
        ar.load_resp(rc, os.path.join(tmp, "st.resp"))
        ar.load_resp(rc, os.path.join(tmp, "pt.resp"))

        st = ar.ShardedFilter(rc, "st")
        eq((st.backend.family, st.routing, st.meta["version"]), ("amq", "hash", 1))
        eq({p["kind"] for p in st.meta["params"]}, {"ribbon"})
        eq(rc.type(st.keys[0]), b"amqfilter")
        got = st.contains_many(probe)
        for i in range(shards):
            mine = [k for k in probe if st.shard_of(k) == i]
            ans = [k for j, k in enumerate(probe) if st.shard_of(k) == i and got[j]]
            eq(ans, _query(files[i], mine), "ribbon shard %d answers as amq query" % i)
        e = raises(ar.ShardError, st.add_many, ["new-1", "new-2", "new-3", "new-4"])
        check("static" in str(e), "a static shard refuses adds: %s" % e)

        pt = ar.ShardedFilter(rc, "pt")
        eq((pt.routing, pt.meta["version"], pt.meta["partitions"]), ("partition", 2, 12))
        eq([p["first_partition"] for p in pt.meta["params"]], [0, 3, 6, 9])
        got = pt.contains_many(probe)
        want = set(_query(whole, probe))
        eq([k for j, k in enumerate(probe) if got[j]], [k for k in probe if k in want],
           "the partition-sharded filter answers as amq query on the whole file")
        fps = sum(1 for k in probe[n // 2:] if k in want)
        check(fps > 0, "some false positives to compare (%d)" % fps)
        # the shard of an item is its partition over P/N, from the library
        eq([pt.shard_of(k) for k in probe[:50]],
           [p // 3 for p in ar._hash.partition_index([k.encode() for k in probe[:50]], 12)])
        whole_items = json.loads(_run_tool("info", "--json", whole).stdout)["items"]
        eq(pt.info()["totals"]["items"], whole_items, "the slices' items are the file's")

        # dumps come back byte for byte: the ribbon files, and the partitioned file joined
        for f, outs in ((st, [os.path.join(tmp, "back%d.amq" % i) for i in range(shards)]),
                        (pt, [os.path.join(tmp, "pback.amq")])):
            dump = os.path.join(tmp, f.name + ".dump")
            with open(dump, "wb") as fh:
                f.dump_resp(fh)
            _run_tool("import", "--from", "redis", "--shards", str(f.shards), dump, *outs)
            for a, b in zip(files if f is st else [whole], outs):
                with open(a, "rb") as x, open(b, "rb") as y:
                    check(x.read() == y.read(), "%s dumped and imported is %s byte for byte"
                          % (b, a))
        # the partition-sharded filter takes adds (into the item's own slice)
        new = ["new-%d" % i for i in range(5000)]
        check(pt.add_many(new) > 4900, "adds counted new")
        eq(int(pt.contains_many(new).sum()), 5000, "added items present")
        # a misrouted add is refused by the slice, never lost
        other = next(k for k in new if pt.shard_of(k) != 0)
        r = rc.execute_command("AMQ.MADD", pt.keys[0], other)
        check(isinstance(r[0], harness.redis.ResponseError) and
              "not in this slice" in str(r[0]), "a foreign item refused: %r" % (r,))
        # a client that does not honour the routing cannot open it: version 2
        meta = json.loads(rc.get("pt"))
        meta["routing"] = "by-the-moon"
        rc.set("pt2", json.dumps(meta))
        e = raises(ValueError, ar.ShardedFilter, rc, "pt2")
        check("routing 'by-the-moon'" in str(e), str(e))
    finally:
        subprocess.run(["rm", "-rf", tmp])
