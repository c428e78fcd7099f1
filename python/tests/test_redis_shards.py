"""amq.redis without a server: the protocol's placement and shard hash, keys as the rest of
the package takes them, and the metadata checks (tests/redis/test_sharded.py runs the rest
against real clusters)."""
import json

import numpy as np
import pytest

import amq
redis = pytest.importorskip("redis")
import amq.redis as ar  # noqa: E402


def test_shard_hash_is_xxh3_with_the_seed_and_multiply_shift():
    for item in ("alice", b"bob", "", "\u00e9t\u00e9"):
        h = amq.hash.xxh3_64(item, 0x616D712E73686172)
        for n in (1, 2, 7, 1024):
            assert ar.shard_of(item, n) == (h * n) >> 64
    # Recorded vector (also in tests/redis/test_sharded.py).
    assert [ar.shard_of("item-%d" % i, 7) for i in range(12)] == \
        [5, 3, 1, 2, 5, 6, 3, 2, 3, 2, 4, 5]


def test_placement_vectors():
    assert ar.key_slot("123456789") == 0x31C3
    assert ar.key_slot(b"foo") == 12182
    assert ar.shard_tag(5, 12) == "5.2" and ar.key_slot("5.2") == 7597
    assert ar.shard_keys("users", 3) == ["users:{0.1}", "users:{1.0}", "users:{2.0}"]
    with pytest.raises(ValueError):
        ar.shard_keys("a{b", 3)
    with pytest.raises(ValueError):
        ar.shard_tag(3, 3)


def test_keys_match_the_filter_batches():
    """A batch gives the items amq.Filter would hash: the same shard for the same key."""
    f = amq.Filter(kind="bloom", capacity=1000)
    s = np.array([b"ab", b"c\x00d", b"e"], dtype="S4")
    assert ar._keys(s) == [b"ab", b"c\x00d", b"e"]
    v = np.arange(3, dtype=np.uint64).view("V8")
    assert ar._keys(v) == [bytes(x) for x in np.arange(3, dtype=np.uint64).view("V8").tolist()]
    assert ar._keys(np.array([[1, 2], [3, 4]], dtype=np.uint8)) == [b"\x01\x02", b"\x03\x04"]
    assert ar._keys(["\u00e9", b"x", bytearray(b"y"), memoryview(b"z")]) == \
        [b"\xc3\xa9", b"x", b"y", b"z"]
    assert ar._keys(b"abcdef", width=2) == [b"ab", b"cd", b"ef"]
    f.add_many(s)
    assert f.contains_many([b"ab", b"c\x00d", b"e"]).all()
    for bad in ("abc", b"abc", np.arange(3, dtype=np.uint64), bytearray(b"ab"), [1]):
        with pytest.raises(TypeError):
            ar._keys(bad)
    with pytest.raises(ValueError):
        ar._keys(b"abc", width=2)


def meta(**kw):
    m = {"format": "amq-sharded-filter", "version": 1, "backend": "bf", "shards": 2,
         "keys": ["f:{0.1}", "f:{1.0}"], "shard_hash": "xxh3_64",
         "shard_seed": "0x616d712e73686172", "shard_reduce": "multiply-shift"}
    m.update(kw)
    return json.dumps(m)


def test_metadata_is_checked():
    assert ar.ShardedFilter._parse_meta("f", meta())["shards"] == 2
    assert ar.ShardedFilter._parse_meta("f", meta(backend="amq"))["backend"] == "amq"
    for bad in (meta(version=3), meta(format="x"), meta(backend="xyz"), meta(shards=3),
                meta(shard_hash="murmur"), meta(shard_reduce="mod"), meta(shard_seed=5),
                meta(shard_seed="0x1" + "0" * 16), meta(version=True), "{", "[]",
                # hand-written metadata: each a clear ValueError, not a TypeError,
                # RecursionError or a filter opened on it
                "[" * 100000 + "]" * 100000, meta(backend=["bf"]), meta(shards=True,
                keys=["f:{0.1}"]), meta(shards=2000, keys=["k%d" % i for i in range(2000)]),
                meta(keys=["f:{0.1}", "f:{0.1}"]), meta(keys=["f", "f:{1.0}"]),
                meta(keys=["f:{0.1}", ""]), meta(shard_seed="1_0"), meta(shard_seed=" 1"),
                meta(params="x"), meta(params=[None, None]), meta(params=[{}])):
        with pytest.raises(ValueError):
            ar.ShardedFilter._parse_meta("f", bad)
    assert ar.ShardedFilter._parse_meta("f", meta(params=[{}, {}]))["shards"] == 2


def pmeta(**kw):
    m = {"format": "amq-sharded-filter", "version": 2, "backend": "amq", "shards": 4,
         "keys": ["p:{0.1}", "p:{1.11}", "p:{2.1}", "p:{3.11}"], "routing": "partition",
         "partitions": 12, "shard_hash": "amq:xxh3", "shard_seed": "0x0000000000000007",
         "shard_reduce": "partition"}
    m.update(kw)
    return json.dumps(m)


def test_partition_routing_metadata_is_checked():
    """"routing": "partition" needs version 2 (a version-1 client refuses the filter rather
    than route its items by a hash the shards do not use), the amq backend, a hash amq has,
    and a number of shards that divides the partitions; an unknown routing is refused."""
    assert ar.ShardedFilter._parse_meta("p", pmeta())["partitions"] == 12
    assert ar.ShardedFilter._parse_meta("f", meta(version=2, routing="hash"))["shards"] == 2
    for bad in (pmeta(version=1), pmeta(backend="bf"), pmeta(shard_hash="xxh3_64"),
                pmeta(shard_hash="amq:nohash"), pmeta(shard_reduce="multiply-shift"),
                pmeta(partitions=10), pmeta(partitions=0), pmeta(partitions="12"),
                pmeta(routing="moon"), meta(routing="partition")):
        with pytest.raises(ValueError):
            ar.ShardedFilter._parse_meta("p", bad)


def test_partition_routing_is_the_filters_partition():
    """An item's shard under "routing": "partition" is its partition in the filter (the
    library's amq_partition_index of the filter's hash) over P/N: every key of a
    partitioned filter cut into 4 slices of 3 lies in its shard's slice, and equals the
    rule written out, ((h2 >> 32) * P) >> 32, on the library's hash pair."""
    keys = [b"key-%d" % i for i in range(5000)]
    parts = amq.hash.partition_index(keys, 12, "xxh3", 7)
    assert parts == [((amq.hash.key(k, "xxh3", 7)[1] >> 32) * 12) >> 32 for k in keys]
    assert sorted(set(parts)) == list(range(12))
    assert amq.hash.partition_index(["key-0", memoryview(b"key-1")], 12, "xxh3", 7) == parts[:2]
    f = ar.ShardedFilter.__new__(ar.ShardedFilter)
    f.meta = json.loads(pmeta())
    f.keys, f.shards, f.seed = f.meta["keys"], 4, 7
    f.routing, f._algo, f._partitions = "partition", "xxh3", 12
    pos, items = f._split(keys)
    for s in range(4):
        assert items[s] == [k for k, p in zip(keys, parts) if p // 3 == s]
        assert pos[s] == [i for i, p in enumerate(parts) if p // 3 == s]
    assert [f.shard_of(k) for k in keys[:100]] == [p // 3 for p in parts[:100]]
    # and the shard is the filter's own choice: a partitioned filter with this hash agrees
    g = amq.Filter(kind="partitioned", capacity=5000, partitions=12, seed=7)
    for k in keys[:20]:
        assert ((g.hash_key(k)[1] >> 32) * 12) >> 32 == parts[keys.index(k)]
    for bad in (0, 65537):
        with pytest.raises(ValueError):
            amq.hash.partition_index(keys[:1], bad)
    with pytest.raises(ValueError):
        amq.hash.partition_index(keys[:1], 4, "nohash")


def test_answers_are_numpy_without_importing_numpy_first():
    """contains_many answers a numpy array as Filter.contains_many does, whether or not the
    caller imported numpy."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import amq.redis as ar, sys; "
                          "print(ar._numpy() is sys.modules.get('numpy') is not None)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_amq_backend_commands():
    """The native backend's commands, byte for byte as docs/cluster.md lists them."""
    b = ar.BACKENDS["amq"]
    assert isinstance(b, ar.AmqBackend) and b.family == "amq"
    p = b.params(25548, kind="cuckoo", error_rate=0.001, fpbits=12, bucket_size=4)
    assert p == {"kind": "cuckoo", "capacity": 25548, "error_rate": 0.001, "fpbits": 12,
                 "bucket_size": 4}
    assert b.reserve("f:{0.1}", p) == ("AMQ.CREATE", "f:{0.1}", "cuckoo", 25548, "0.001",
                                       "FPBITS", 12, "BUCKETSIZE", 4)
    p = b.params(100, kind="scalable-bloom", expansion=2, nonscaling=True, partitions=None)
    assert b.reserve("k", p) == ("AMQ.CREATE", "k", "scalable-bloom", 100, "0.01",
                                 "EXPANSION", 2, "NONSCALING")
    assert b.params(10)["kind"] == "blocked"
    assert b.insert("k", [b"a", b"b"]) == ("AMQ.MADD", "k", b"a", b"b")
    assert b.mexists("k", [b"a"]) == ("AMQ.MEXISTS", "k", b"a")
    assert b.remove("k", b"a") == ("AMQ.DEL", "k", b"a")
    assert b.info("k") == ("AMQ.INFO", "k")
    assert (b.scandump, b.loadchunk) == ("AMQ.SCANDUMP", "AMQ.LOADCHUNK")
    assert b.removable({"kind": "cuckoo"}) and b.removable({"kind": "scalable-cuckoo"})
    assert not b.removable({"kind": "blocked"}) and not b.removable({})
    assert ar.BACKENDS["cf"].removable({}) and not ar.BACKENDS["bf"].removable({})
    for bad in ({"kind": "ribbon"}, {"kind": "fuse"}, {"kind": ""}, {"error_rate": 1.0},
                {"error_rate": 0.0}):
        with pytest.raises(ValueError):
            b.params(10, **bad)
    with pytest.raises(TypeError):
        b.params(10, max_iterations=5)


def test_create_checks_backend_and_kind_before_any_command():
    """Bad backend / kind combinations are refused before the client is touched."""
    class Pool:
        connection_kwargs = {"host": "nowhere", "port": 1}

    class NoClient(redis.Redis):
        connection_pool = Pool()

        def __init__(self):
            pass

        def __del__(self):
            pass

        def __getattr__(self, name):
            raise AssertionError("the client was used (%s)" % name)

        def execute_command(self, *a, **kw):
            raise AssertionError("a command was sent: %r" % (a,))
        exists = get = set = execute_command
    c = NoClient()
    for kw, exc in ((dict(backend="xyz"), ValueError), (dict(kind="blocked"), ValueError),
                    (dict(backend="bf", kind="cuckoo"), ValueError),
                    (dict(kind="cuckoo", fpbits=12), TypeError),
                    (dict(backend="cf", options={"seed": 1}), TypeError),
                    (dict(backend="amq", kind="ribbon"), ValueError),
                    (dict(backend="amq", options={"bogus": 1}), TypeError),
                    (dict(backend="amq", max_iterations=3), TypeError),
                    (dict(backend="amq", options={"kind": "cuckoo"}), TypeError)):
        with pytest.raises(exc):
            ar.ShardedFilter.create(c, "f", 1000, shards=2, **kw)


def test_remove_refused_for_kinds_without_delete():
    """remove() on a filter of blocked shards is a TypeError before any command is sent."""
    f = ar.ShardedFilter.__new__(ar.ShardedFilter)
    f.meta = {"params": [{"kind": "blocked", "capacity": 10, "error_rate": 0.01}] * 2}
    f.backend, f.shards, f.seed = ar.BACKENDS["amq"], 2, ar.SHARD_SEED
    with pytest.raises(TypeError, match="amq/blocked"):
        f.remove("x")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_shard_params_name_a_rate_out_of_range(bad):
    for name in ("bf", "amq"):
        with pytest.raises(ValueError, match=r"error_rate must be in \(0, 1\), not %s" % bad):
            ar.BACKENDS[name].params(10, error_rate=bad)
