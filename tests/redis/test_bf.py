"""BF.* commands: replies (RESP2 and RESP3), errors, the spec's published
expectations, through redis-py's r.bf() helpers and raw commands."""
import redis

from harness import Resp3, RespError


def raw(env):
    """A client without module response callbacks (r.bf() installs them)."""
    return env.server.client()


def error(r, *cmd):
    """The exact error string the server sends for cmd (r: any client of
    the file's server)."""
    port = r.connection_pool.connection_kwargs["port"]
    c = Resp3(port, proto=2)
    try:
        rep = c.execute(*cmd)
    finally:
        c.close()
    if not isinstance(rep, RespError):
        raise AssertionError("no error from %r: %r" % (cmd, rep))
    return str(rep)


def debug(r, key):
    return [x.decode() for x in r.execute_command("BF.DEBUG", key)]


# ---- helpers of redis-py ----------------------------------------------------------

def test_redis_py_helpers(env):
    r = env.server.client()
    bf = r.bf()
    assert bf.create("h", 0.01, 1000) is True  # redis-py maps the OK reply to True
    assert bf.add("h", "a") == 1
    assert bf.add("h", "a") == 0
    assert bf.madd("h", "a", "b", "c") == [0, 1, 1]
    assert bf.exists("h", "b") == 1
    assert bf.exists("h", "zz") == 0
    assert bf.mexists("h", "a", "zz", "c") == [1, 0, 1]
    assert r.execute_command("BF.CARD", "h") == 3
    info = bf.info("h")
    assert (info.capacity, info.filterNum, info.insertedNum, info.expansionRate) == (1000, 1, 3, 2)
    assert bf.insert("h2", ["x", "y"], capacity=500, error=0.001, expansion=4) == [1, 1]
    assert raw(env).execute_command("BF.INFO", "h2", "EXPANSION") == [4]
    assert bf.insert("h2", ["x", "z"], noCreate=True) == [0, 1]
    assert bf.insert("h3", ["q"], noScale=True) == [1]
    assert raw(env).execute_command("BF.INFO", "h3", "EXPANSION") == [None]
    it, chunks = 0, []
    while True:
        it, data = bf.scandump("h", it)
        if it == 0:
            break
        chunks.append((it, data))
    for it, data in chunks:
        assert bf.loadchunk("h4", it, data) == b"OK"
    assert bf.mexists("h4", "a", "b", "c", "zz") == [1, 1, 1, 0]
    assert r.execute_command("BF.CARD", "h4") == 3


# ---- replies, RESP2 and RESP3 -------------------------------------------------------

def test_add_exists_resp2(env):
    r = raw(env)
    assert r.execute_command("BF.ADD", "k", "item1") == 1
    assert r.execute_command("BF.ADD", "k", "item1") == 0
    assert r.execute_command("BF.EXISTS", "k", "item1") == 1
    assert r.execute_command("BF.EXISTS", "k", "nope") == 0
    assert r.execute_command("BF.EXISTS", "missing", "x") == 0
    assert r.execute_command("BF.MEXISTS", "missing", "x", "y") == [0, 0]
    assert r.execute_command("BF.MADD", "k", "item1", "item2") == [0, 1]
    assert r.execute_command("BF.CARD", "k") == 2
    assert r.execute_command("BF.CARD", "missing") == 0
    # BF.ADD created the key with the defaults: 0.01, 100, expansion 2.
    assert r.execute_command("BF.INFO", "k") == [
        b"Capacity", 100, b"Size", 32 + 64 + 144, b"Number of filters", 1,
        b"Number of items inserted", 2, b"Expansion rate", 2]


def test_add_exists_resp3(env):
    r3 = env.server.resp3()
    assert r3.execute("BF.ADD", "k", "item1") is True
    assert r3.execute("BF.ADD", "k", "item1") is False
    assert r3.execute("BF.EXISTS", "k", "item1") is True
    assert r3.execute("BF.EXISTS", "k", "nope") is False
    assert r3.execute("BF.EXISTS", "missing", "nope") is False
    assert r3.execute("BF.MEXISTS", "k", "item1", "nope") == [True, False]
    assert r3.execute("BF.MADD", "k", "item1", "item2") == [False, True]
    assert r3.execute("BF.INSERT", "k", "ITEMS", "item3") == [True]
    assert r3.execute("BF.CARD", "k") == 3
    assert r3.execute("BF.RESERVE", "r", "0.01", "10") == b"OK"
    assert r3.execute("BF.INFO", "k") == {
        b"Capacity": 100, b"Size": 240, b"Number of filters": 1,
        b"Number of items inserted": 3, b"Expansion rate": 2}
    assert r3.execute("BF.INFO", "k", "items") == {b"Number of items inserted": 3}
    assert r3.execute("BF.INFO", "k", "Capacity") == {b"Capacity": 100}
    r3.execute("BF.INSERT", "ns", "NONSCALING", "ITEMS", "a")
    assert r3.execute("BF.INFO", "ns", "EXPANSION") == {b"Expansion rate": None}
    assert r3.execute("BF.INFO", "ns")[b"Expansion rate"] is None
    assert r3.execute("BF.SCANDUMP", "r", "1") == [17, bytes(16)]
    assert r3.execute("BF.SCANDUMP", "r", "17") == [0, b""]
    assert isinstance(r3.execute("BF.INFO", "missing"), RespError)
    # the same through redis-cli -3
    out = env.server.cli("BF.EXISTS", "k", "item1", resp3=True)
    assert out.strip() == b"(true)", out
    r3.close()


def test_info_fields(env):
    r = raw(env)
    r.execute_command("BF.RESERVE", "k", 0.001, 100)
    assert r.execute_command("BF.INFO", "k") == [
        b"Capacity", 100, b"Size", 296, b"Number of filters", 1,
        b"Number of items inserted", 0, b"Expansion rate", 2]
    for field, want in (("CAPACITY", 100), ("size", 296), ("Filters", 1), ("ITEMS", 0),
                        ("EXPANSION", 2)):
        assert r.execute_command("BF.INFO", "k", field) == [want]
    assert error(r, "BF.INFO", "k", "BOGUS") == "Invalid information value"
    assert error(r, "BF.INFO", "missing") == "ERR not found"


# ---- the spec's published expectations -----------------------------------------------

def test_scandump_header_bytes(env):
    """BF.RESERVE bf 0.1 10; BF.ADD bf item1: the 73-byte header and the
    data chunk "\\x01\\b\\x00\\x80\\x00\\x04 \\x00" of RedisBloom's docs."""
    r = raw(env)
    r.execute_command("BF.RESERVE", "bf", 0.1, 10)
    assert r.execute_command("BF.ADD", "bf", "item1") == 1
    header = bytes.fromhex(
        "0100000000000000"   # size 1
        "01000000"           # 1 link
        "05000000"           # options NOROUND | FORCE64
        "02000000"           # growth 2
        "0800000000000000"   # bytes 8
        "4000000000000000"   # bits 64
        "0100000000000000"   # size 1
        "9a9999999999a93f"   # error 0.05
        "4af7d49edef01840"   # bpe 6.2353...
        "05000000"           # 5 hashes
        "0a00000000000000"   # entries 10
        "00")                # n2
    assert r.execute_command("BF.SCANDUMP", "bf", 0) == [1, header]
    assert r.execute_command("BF.SCANDUMP", "bf", 1) == [9, b"\x01\b\x00\x80\x00\x04 \x00"]
    assert r.execute_command("BF.SCANDUMP", "bf", 9) == [0, b""]


def test_link_layouts(env):
    r = raw(env)
    r.execute_command("BF.RESERVE", "a", 0.01, 10)
    r.execute_command("BF.MADD", "a", *[str(i) for i in range(100)])
    d = debug(r, "a")
    assert d[0] == "size:99" and len(d) == 1 + 4, d
    assert d[1] == "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005"
    r.execute_command("BF.RESERVE", "b", 0.001, 100)
    for i in range(0, 4000, 500):
        r.execute_command("BF.MADD", "b", *[str(j) for j in range(i, i + 500)])
    d = debug(r, "b")
    assert d[0] == "size:3997" and len(d) == 1 + 6, d
    r.execute_command("BF.INSERT", "c", "CAPACITY", 50000, "ERROR", 0.001, "ITEMS", "x")
    assert debug(r, "c")[1] == ("bytes:98880 bits:791040 hashes:11 hashwidth:64 "
                               "capacity:50000 size:1 ratio:0.0005")
    for exp, links in ((1, 23), (2, 5), (4, 4)):
        k = "exp%d" % exp
        r.execute_command("BF.RESERVE", k, 0.01, 4, "EXPANSION", exp)
        r.execute_command("BF.MADD", k, *[str(i) for i in range(100)])
        assert r.execute_command("BF.INFO", k, "FILTERS") == [links], (exp, debug(r, k))


def test_large_reserve_size(env):
    r = raw(env)
    assert r.execute_command("BF.RESERVE", "big", 1e-6, 300000000) == b"OK"
    assert r.execute_command("BF.INFO", "big", "SIZE") == [1132420232]
    assert r.execute_command("BF.ADD", "big", "x") == 1
    assert r.execute_command("BF.EXISTS", "big", "x") == 1
    assert r.memory_usage("big") >= 1132420232
    r.delete("big")


def test_nonscaling(env):
    r = raw(env)
    assert r.execute_command("BF.INSERT", "k", "CAPACITY", 3, "NONSCALING",
                             "ITEMS", "a", "b", "c") == [1, 1, 1]
    res = r.execute_command("BF.MADD", "k", "a", "b", "c", "d", "e")
    assert res[:3] == [0, 0, 0] and len(res) == 4
    assert isinstance(res[3], redis.ResponseError)
    assert env.server.resp2().execute("BF.MADD", "k", "a", "e")[1].args[0] == \
        "ERR non scaling filter is full"
    assert error(r, "BF.ADD", "k", "d") == "ERR non scaling filter is full"
    assert r.execute_command("BF.INFO", "k") == [
        b"Capacity", 3, b"Size", 104, b"Number of filters", 1,
        b"Number of items inserted", 3, b"Expansion rate", None]
    assert debug(r, "k")[1] == ("bytes:8 bits:64 hashes:7 hashwidth:64 capacity:3 size:3 "
                                "ratio:0.01")
    # EXPANSION 0 is non-scaling too.
    r.execute_command("BF.RESERVE", "z", 0.01, 3, "EXPANSION", 0)
    assert r.execute_command("BF.INFO", "z", "EXPANSION") == [None]


def test_insert_options_any_order(env):
    r = raw(env)
    a = r.execute_command("BF.INSERT", "a", "CAPACITY", 1000, "ERROR", 0.001, "EXPANSION", 4,
                          "ITEMS", "x", "y")
    b = r.execute_command("BF.INSERT", "b", "expansion", 4, "error", 0.001, "capacity", 1000,
                          "items", "x", "y")
    assert a == b == [1, 1]
    assert debug(r, "a") == debug(r, "b")
    assert r.execute_command("BF.INFO", "a") == r.execute_command("BF.INFO", "b")
    r.execute_command("BF.RESERVE", "c", 0.001, 1000, "EXPANSION", 4)
    r.execute_command("BF.MADD", "c", "x", "y")
    assert debug(r, "c") == debug(r, "a")
    # options apply only when the key is created
    r.execute_command("BF.INSERT", "a", "CAPACITY", 5, "ITEMS", "z")
    assert r.execute_command("BF.INFO", "a", "CAPACITY") == [1000]
    assert r.execute_command("BF.INSERT", "a", "NOCREATE", "ITEMS", "z", "w") == [0, 1]


# ---- errors ------------------------------------------------------------------------------

def test_errors(env):
    r = raw(env)
    r.execute_command("BF.RESERVE", "k", 0.01, 100)
    assert error(r, "BF.RESERVE", "k", 0.01, 100) == "ERR item exists"
    assert error(r, "BF.RESERVE", "n", "abc", 100) == "ERR bad error rate"
    assert error(r, "BF.RESERVE", "n", "0.01x", 100) == "ERR bad error rate"
    for bad in ("0", "1", "-0.5", "1.5"):
        assert error(r, "BF.RESERVE", "n", bad, 100) == \
            "ERR error rate must be in the range (0.000000, 1.000000)"
    assert error(r, "BF.RESERVE", "n", 0.01, "x") == "ERR bad capacity"
    assert error(r, "BF.RESERVE", "n", 0.01, "1.5") == "ERR bad capacity"
    for bad in ("0", "-1", str(2 ** 30 + 1), "99999999999999"):
        assert error(r, "BF.RESERVE", "n", 0.01, bad) == \
            "ERR capacity must be in the range [1, 1073741824]"
    assert error(r, "BF.RESERVE", "n", 0.01, 10, "EXPANSION", "x") == "ERR bad expansion"
    for bad in ("-1", "32769"):
        assert error(r, "BF.RESERVE", "n", 0.01, 10, "EXPANSION", bad) == \
            "ERR expansion must be in the range [0, 32768]"
    assert error(r, "BF.RESERVE", "n", 0.01, 10, "EXPANSION", 2, "NONSCALING") == \
        "Nonscaling filters cannot expand"
    assert error(r, "BF.RESERVE", "n", 0.01, 10, "NONSCALING", "EXPANSION", 2) == \
        "Nonscaling filters cannot expand"
    # RedisBloom's own checks: EXPANSION with no value, NONSCALING before
    # the range, more than 7 arguments; unknown tokens are ignored
    assert error(r, "BF.RESERVE", "n", 0.01, 10, "EXPANSION") == "ERR no expansion"
    assert error(r, "BF.RESERVE", "n", 0.01, 10, "EXPANSION", 32769, "NONSCALING") == \
        "Nonscaling filters cannot expand"
    assert error(r, "BF.RESERVE", "n", 0.01, 10, "EXPANSION", 1, "EXPANSION", 2) == \
        "ERR wrong number of arguments for 'bf.reserve' command"
    assert error(r, "BF.RESERVE", "n", 0.01, "0100") == "ERR bad capacity"
    assert error(r, "BF.RESERVE", "n", "inf", 100) == \
        "ERR error rate must be in the range (0.000000, 1.000000)"
    assert r.execute_command("BF.RESERVE", "n2", 0.01, 10, "BOGUS") == b"OK"
    assert r.execute_command("BF.RESERVE", "n3", 0.01, 10, "NONSCALING", "EXPANSION", 0) == b"OK"
    assert error(r, "BF.INSERT", "n", "CAPACITY", "x", "ITEMS", "a") == "Bad capacity"
    assert error(r, "BF.INSERT", "n", "CAPACITY", 0, "ITEMS", "a") == "Bad capacity"
    assert error(r, "BF.INSERT", "n", "ERROR", "2", "ITEMS", "a") == "Bad error rate"
    assert error(r, "BF.INSERT", "n", "ERROR", "0", "ITEMS", "a") == "Bad error rate"
    assert error(r, "BF.INSERT", "n", "EXPANSION", "-1", "ITEMS", "a") == "Bad expansion"
    assert error(r, "BF.INSERT", "n", "NOCREATE", "ITEMS", "a") == "ERR not found"
    assert error(r, "BF.INSERT", "n", "BOGUS", "ITEMS", "a") == "Unknown argument received"
    assert error(r, "BF.DEBUG", "n") == "ERR not found"
    assert error(r, "BF.SCANDUMP", "n", 0) == "ERR not found"
    assert error(r, "BF.SCANDUMP", "k", "x") == "Second argument must be numeric"
    assert r.execute_command("BF.SCANDUMP", "k", -1) == [0, b""]
    assert error(r, "BF.LOADCHUNK", "k", "x", b"abc") == "ERR Second argument must be numeric"
    assert error(r, "BF.LOADCHUNK", "k", 1, b"abc") == "ERR received bad data"
    assert error(r, "BF.LOADCHUNK", "n", 5, b"abc") == "ERR not found"
    assert error(r, "BF.LOADCHUNK", "n", 1, b"abc") == "ERR received bad data"
    assert error(r, "BF.LOADCHUNK", "k", 100000, b"abc") == "ERR invalid offset - no link found"
    assert error(r, "BF.LOADCHUNK", "k", 200, b"x" * 150) == \
        "ERR invalid chunk - Too big for current filter"
    assert not r.exists("n")
    # options by their leading letters; error rates above 0.25 capped
    assert r.execute_command("BF.INSERT", "a", "CAP", 50, "ERR", 0.02, "EXP", 4, "I", "x") == [1]
    assert r.execute_command("BF.INFO", "a") == [b"Capacity", 50, b"Size", 160,
                                                 b"Number of filters", 1,
                                                 b"Number of items inserted", 1,
                                                 b"Expansion rate", 4]
    r.execute_command("BF.RESERVE", "half", 0.5, 100)
    assert debug(r, "half")[1] == \
        "bytes:56 bits:448 hashes:4 hashwidth:64 capacity:100 size:0 ratio:0.125"
    # errors without ERR reach the client with their first word as the code
    out = env.server.cli("BF.RESERVE", "q", 0.01, 10, "NONSCALING", "EXPANSION", 2)
    assert out.strip() == b"Nonscaling filters cannot expand", out
    stats = env.server.resp2().execute("INFO", "errorstats")
    assert b"errorstat_Nonscaling:count=" in stats, stats


def test_wrongtype(env):
    r = raw(env)
    r.set("s", "v")
    r.execute_command("CF.RESERVE", "c", 100)
    wt = "WRONGTYPE Operation against a key holding the wrong kind of value"
    for key in ("s", "c"):
        for cmd in (("BF.RESERVE", key, 0.01, 10), ("BF.ADD", key, "x"), ("BF.MADD", key, "x"),
                    ("BF.INSERT", key, "ITEMS", "x"), ("BF.EXISTS", key, "x"),
                    ("BF.MEXISTS", key, "x"), ("BF.CARD", key), ("BF.INFO", key),
                    ("BF.DEBUG", key), ("BF.SCANDUMP", key, 0),
                    ("BF.LOADCHUNK", key, 1, b"x")):
            assert error(r, *cmd) == wt, cmd
    assert r.get("s") == b"v"


def test_arity(env):
    r = raw(env)
    r.execute_command("BF.RESERVE", "k", 0.01, 10)
    for cmd in (("BF.RESERVE",), ("BF.RESERVE", "k"), ("BF.RESERVE", "k", 0.01),
                ("BF.RESERVE", "x", 0.01, 10, "a", "b", "c", "d"),
                ("BF.ADD",), ("BF.ADD", "k"), ("BF.ADD", "k", "a", "b"),
                ("BF.MADD", "k"), ("BF.EXISTS", "k"), ("BF.EXISTS", "k", "a", "b"),
                ("BF.MEXISTS", "k"), ("BF.CARD",), ("BF.CARD", "k", "x"),
                ("BF.INFO",), ("BF.INFO", "k", "CAPACITY", "SIZE"), ("BF.DEBUG",),
                ("BF.SCANDUMP", "k"), ("BF.LOADCHUNK", "k", 1),
                ("BF.INSERT", "k"), ("BF.INSERT", "k", "ITEMS"),
                ("BF.INSERT", "k", "CAPACITY", 10), ("BF.INSERT", "k", "CAPACITY")):
        msg = error(r, *cmd)
        assert msg.startswith("wrong number of arguments") or \
            msg.startswith("ERR wrong number of arguments"), (cmd, msg)


def test_command_flags(env):
    info = env.server.resp2().execute("COMMAND", "INFO", "BF.ADD", "BF.EXISTS", "BF.LOADCHUNK",
                                      "BF.RESERVE", "BF.SCANDUMP")
    flags = {}
    for entry in info:
        flags[entry[0].decode().lower()] = set(f.decode() for f in entry[2])
        assert entry[3:6] == [1, 1, 1], entry
    assert {"write", "denyoom"} <= flags["bf.add"]
    assert {"write", "denyoom"} <= flags["bf.loadchunk"]
    assert {"write", "denyoom"} <= flags["bf.reserve"]
    assert {"readonly", "fast"} <= flags["bf.exists"]
    assert {"readonly"} <= flags["bf.scandump"]


def test_max_expansions(env):
    """Every new link halves the error rate: at capacity 1 and expansion 1 the
    rate underflows after 1072 links (RedisBloom: the same chain); then each
    new item fails with "ERR problem inserting into filter" and the rest of
    the command goes on."""
    r = raw(env)
    r.execute_command("BF.RESERVE", "k", 0.5, 1, "EXPANSION", 1)
    res = r.execute_command("BF.MADD", "k", *[str(i) for i in range(5000)])
    assert len(res) == 5000
    errs = [i for i, x in enumerate(res) if isinstance(x, redis.ResponseError)]
    assert errs and all(str(res[i]) == "problem inserting into filter" for i in errs), errs[:3]
    assert sum(1 for x in res if x == 1) == 1072
    assert r.execute_command("BF.INFO", "k", "FILTERS") == [1072]
    assert debug(r, "k")[-1] == \
        "bytes:200 bits:1600 hashes:1075 hashwidth:64 capacity:1 size:1 ratio:4.94066e-324"
    assert error(r, "BF.ADD", "k", "new1") == "ERR problem inserting into filter"


def test_every_command_resp3(env):
    """Each BF command once in RESP3, with the reply type the spec gives."""
    r3 = env.server.resp3()
    assert r3.execute("BF.RESERVE", "k", "0.01", "100") == b"OK"
    assert r3.execute("BF.ADD", "k", "a") is True
    assert r3.execute("BF.MADD", "k", "a", "b") == [False, True]
    assert r3.execute("BF.INSERT", "k", "ITEMS", "c") == [True]
    assert r3.execute("BF.EXISTS", "k", "a") is True
    assert r3.execute("BF.MEXISTS", "k", "a", "zz") == [True, False]
    assert r3.execute("BF.CARD", "k") == 3
    assert r3.execute("BF.INFO", "k")[b"Number of items inserted"] == 3
    dbg = r3.execute("BF.DEBUG", "k")
    assert dbg[0] == b"size:3" and dbg[1].startswith(b"bytes:144 bits:1152 hashes:8")
    it, hdr = r3.execute("BF.SCANDUMP", "k", "0")
    assert r3.execute("BF.LOADCHUNK", "k2", str(it), hdr) == b"OK"
    it, data = r3.execute("BF.SCANDUMP", "k", str(it))
    assert r3.execute("BF.LOADCHUNK", "k2", str(it), data) == b"OK"
    assert r3.execute("BF.MEXISTS", "k2", "a", "b", "c") == [True, True, True]
    r3.close()
