"""What differs between the servers amq.so runs on (Redis 7.0, Redis 8, Valkey 8): module
configs (unprefixed bf-* / cf-* names on every server, CONFIG SET changing what new keys
get), ACL categories bloom / cuckoo where the server has module ACL categories, the
RedisBloom-style MODULE LIST version, and RedisBloom-format data written by Redis 7.0 (RDB and
DUMP) loading into the server under test with the same answers."""
import os
import shutil

import harness
from test_persist import PRESENT, populate, snapshot

SYSTEM_REDIS = "/usr/bin/redis-server"  # Debian 12's Redis 7.0: the reference writer


def server_has_acl_categories():
    name, ver = harness.server_info()
    return name == "valkey" or ver >= (7, 4, 0)


def server_has_unprefixed_configs():
    name, ver = harness.server_info()
    return name == "redis" and ver >= (8, 0, 0)


def config_get(r, name):
    """CONFIG GET name -> (the name the server answers with, value)."""
    got = r.config_get(name)
    assert len(got) == 1, got
    (k, v), = got.items()
    return k, v


def debug_links(r, key):
    return [x.decode() if isinstance(x, bytes) else x for x in r.execute_command("BF.DEBUG", key)]


def cf_info(r, key):
    v = r.execute_command("CF.INFO", key)
    return {v[i].decode(): v[i + 1] for i in range(0, len(v), 2)}


def bf_info(r, key):
    v = r.execute_command("BF.INFO", key)
    return {v[i].decode(): v[i + 1] for i in range(0, len(v), 2)}


def test_module_list_version(env):
    mods = {m[b"name"].decode() if isinstance(m[b"name"], bytes) else m[b"name"]: m
            for m in env.server.client().execute_command("MODULE", "LIST")
            for m in [dict(zip(m[::2], m[1::2]))]}
    assert int(mods["bf"][b"ver"]) == 80000, mods["bf"]


def test_config_names_and_defaults(env):
    r = env.server.client()
    want = {"bf-error-rate": "0.01", "bf-initial-size": "100", "bf-expansion-factor": "2",
            "cf-bucket-size": "2", "cf-initial-size": "1024", "cf-max-iterations": "20",
            "cf-expansion-factor": "1", "cf-max-expansions": "32"}
    for name, value in want.items():
        k, v = config_get(r, name)
        assert v == value, (name, v)
        # Redis 8 registers RedisBloom's names as they are; elsewhere the server prefixes the
        # module name and the CONFIG names are rewritten to it.
        assert k == (name if server_has_unprefixed_configs() else "bf." + name), k
    assert len(r.config_get("bf-*")) == 3
    assert len(r.config_get("cf-*")) == 5


def test_config_set_error_rate_changes_bf_add(env):
    r = env.server.client()
    r.execute_command("BF.ADD", "before", "x")
    assert r.config_set("bf-error-rate", "0.001")
    assert config_get(r, "bf-error-rate")[1] == "0.001"
    r.execute_command("BF.ADD", "after", "x")
    r.execute_command("BF.RESERVE", "explicit", 0.001, 100)
    r.execute_command("BF.ADD", "explicit", "x")
    before, after, explicit = (debug_links(r, k) for k in ("before", "after", "explicit"))
    # A filter made by BF.ADD now is the one BF.RESERVE makes for 0.001: more bits and hashes.
    assert after == explicit, (after, explicit)
    assert after != before
    # A scaling filter's first link gets half the rate (BF.DEBUG's ratio).
    assert "ratio:0.0005" in after[1] and "ratio:0.005" in before[1], (before, after)
    assert bf_info(r, "after")["Size"] > bf_info(r, "before")["Size"]
    # The value is checked: outside (0, 1) or not a number, nothing changes.
    for bad in ("0", "1", "1.5", "-0.1", "abc", "0.01x", ""):
        try:
            r.config_set("bf-error-rate", bad)
            raise AssertionError("CONFIG SET bf-error-rate %r accepted" % bad)
        except harness.redis.ResponseError:
            pass
    assert config_get(r, "bf-error-rate")[1] == "0.001"
    r.config_set("bf-error-rate", "0.01")


def test_config_set_numeric(env):
    r = env.server.client()
    try:
        r.config_set("bf-initial-size", 777)
        r.config_set("bf-expansion-factor", 4)
        r.execute_command("BF.ADD", "b", "x")
        info = bf_info(r, "b")
        assert info["Capacity"] == 777 and info["Expansion rate"] == 4, info
        r.config_set("bf-expansion-factor", 0)  # 0: non-scaling, as RedisBloom
        r.execute_command("BF.ADD", "b0", "x")
        assert bf_info(r, "b0")["Expansion rate"] is None or \
            bf_info(r, "b0")["Expansion rate"] in (0, None)
        r.config_set("cf-bucket-size", 4)
        r.config_set("cf-initial-size", 4000)
        r.config_set("cf-max-iterations", 33)
        r.config_set("cf-expansion-factor", 2)
        r.execute_command("CF.ADD", "c", "x")
        info = cf_info(r, "c")
        assert info["Bucket size"] == 4 and info["Max iterations"] == 33, info
        assert info["Expansion rate"] == 2 and info["Number of buckets"] == 1024, info
        # Ranges: the server checks them; the bucket size / capacity rule is ours.
        for name, bad in (("bf-initial-size", 0), ("cf-bucket-size", 256),
                          ("cf-initial-size", 7), ("cf-max-expansions", 0),
                          ("bf-expansion-factor", 32769)):
            try:
                r.config_set(name, bad)
                raise AssertionError("CONFIG SET %s %s accepted" % (name, bad))
            except harness.redis.ResponseError:
                pass
        assert config_get(r, "cf-initial-size")[1] == "4000"
    finally:
        for name, v in (("bf-initial-size", 100), ("bf-expansion-factor", 2),
                        ("cf-initial-size", 1024), ("cf-bucket-size", 2),
                        ("cf-max-iterations", 20), ("cf-expansion-factor", 1)):
            r.config_set(name, v)


def _grow(r, key, adds):
    """CF.ADD one item at a time into a tiny filter: (adds refused, sub-filters)."""
    r.execute_command("CF.RESERVE", key, 4, "EXPANSION", 1)
    refused = 0
    for i in range(adds):
        try:
            r.execute_command("CF.ADD", key, "i%d" % i)
        except harness.redis.ResponseError:
            refused += 1
    return refused, cf_info(r, key)["Number of filters"]


def test_max_expansions_config(env):
    r = env.server.client()
    free_refused, free_filters = _grow(r, "free", 60)
    try:
        r.config_set("cf-max-expansions", 2)
        refused, filters = _grow(r, "capped", 60)
    finally:
        r.config_set("cf-max-expansions", 32)
    # The chain stops growing at the configured limit (checked before each command).
    assert free_refused == 0 and refused > 0, (free_refused, refused)
    assert filters <= 3 < free_filters, (filters, free_filters)


def test_load_arguments_are_config_defaults(env):
    s = env.new_server(["ERROR_RATE", "0.05", "INITIAL_SIZE", "333", "CF_BUCKET_SIZE", "3"])
    r = s.client()
    assert config_get(r, "bf-error-rate")[1] == "0.05"
    assert config_get(r, "bf-initial-size")[1] == "333"
    assert config_get(r, "cf-bucket-size")[1] == "3"
    r.execute_command("BF.ADD", "k", "x")
    assert "ratio:0.025" in debug_links(r, "k")[1]
    assert bf_info(r, "k")["Capacity"] == 333
    r.config_set("bf-initial-size", 50)
    r.execute_command("BF.ADD", "k2", "x")
    assert bf_info(r, "k2")["Capacity"] == 50


def test_load_again_after_a_refused_loadex(env):
    """MODULE LOADEX with a config name the module does not have fails; the module is then
    unloaded, but a server with module ACL categories keeps the categories it added, and the
    next MODULE LOAD was refused ("could not add the ACL categories") on Redis 8."""
    if harness.server_info()[0] == "valkey":
        return  # Valkey 8.1 itself dies in moduleUnload after such a LOADEX (RedisBloom's too)
    r = env.new_server(["--no-module"]).client()
    mod = os.path.abspath(env.module)
    try:
        r.execute_command("MODULE", "LOADEX", mod, "CONFIG", "bf.bf-error-rat", "0.1")
        raise AssertionError("MODULE LOADEX of an unknown config name succeeded")
    except harness.redis.ResponseError:
        pass
    if b"bf" in [m[b"name"] if isinstance(m, dict) else m[1]
                 for m in r.execute_command("MODULE", "LIST")]:
        return  # Redis 7.0 keeps the module loaded: nothing to load again
    assert r.execute_command("MODULE", "LOAD", mod) in (b"OK", "OK", True)
    assert r.execute_command("BF.ADD", "k", "x") == 1
    if server_has_acl_categories():
        assert b"af.add" in r.execute_command("ACL", "CAT", "amq")


def test_acl_categories(env):
    r = env.server.client()
    if not server_has_acl_categories():
        # Redis 7.0 has no module ACL categories: the module loads without them.
        try:
            r.execute_command("ACL", "CAT", "bloom")
            raise AssertionError("ACL CAT bloom answered on a server without module categories")
        except harness.redis.ResponseError:
            pass
        return
    cats = {c.decode() for c in r.execute_command("ACL", "CAT")}
    assert {"bloom", "cuckoo"} <= cats, cats
    bloom = {c.decode().lower() for c in r.execute_command("ACL", "CAT", "bloom")}
    cuckoo = {c.decode().lower() for c in r.execute_command("ACL", "CAT", "cuckoo")}
    assert bloom == {"bf.reserve", "bf.add", "bf.madd", "bf.insert", "bf.exists", "bf.mexists",
                     "bf.card", "bf.info", "bf.debug", "bf.scandump", "bf.loadchunk"}, bloom
    assert {"cf.reserve", "cf.add", "cf.addnx", "cf.insert", "cf.insertnx", "cf.exists",
            "cf.mexists", "cf.count", "cf.del", "cf.compact", "cf.info", "cf.scandump",
            "cf.loadchunk"} <= cuckoo, cuckoo
    assert not any(c.startswith("cf.") for c in bloom)
    # A user allowed @bloom only.
    r.execute_command("ACL", "SETUSER", "bfonly", "on", ">pw", "~*", "+@bloom")
    u = harness.redis.Redis(host="127.0.0.1", port=env.server.port, username="bfonly",
                            password="pw")
    assert u.execute_command("BF.ADD", "k", "x") == 1
    try:
        u.execute_command("CF.ADD", "c", "x")
        raise AssertionError("CF.ADD allowed to a +@bloom user")
    except harness.redis.exceptions.NoPermissionError:
        pass
    # RedisBloom's categories besides the family's: @read / @write, @fast for a few; CF.COMPACT
    # is @write (a documented deviation: RedisBloom says @read).
    cat = {c: {x.decode().lower() for x in r.execute_command("ACL", "CAT", c)}
           for c in ("write", "read", "fast")}
    assert {"bf.add", "cf.add", "cf.del", "bf.loadchunk", "cf.compact"} <= cat["write"]
    assert {"bf.exists", "cf.mexists", "bf.info", "cf.scandump"} <= cat["read"]
    assert {c for c in bloom | cuckoo if c in cat["fast"]} == \
        {"bf.reserve", "bf.card", "bf.info", "cf.reserve", "cf.info"}
    assert not (bloom | cuckoo) & cat["read"] & cat["write"]
    assert (bloom | cuckoo) <= cat["read"] | cat["write"]
    # Every command of the module is @read or @write, AMQ.* and AF.* also @amq (AF.* had no
    # category at all: a user denied @write could AF.ADD).
    mine = {c.decode().lower() for c in env.server.resp2().execute("COMMAND", "LIST", "FILTERBY",
                                                                   "MODULE", "bf")}
    own = {c for c in mine if c.startswith(("amq.", "af."))}
    assert {"af.add", "af.reserve", "af.exists", "amq.add", "amq.build"} <= own, own
    assert mine == bloom | cuckoo | own, mine - bloom - cuckoo - own
    assert not mine & cat["read"] & cat["write"], mine & cat["read"] & cat["write"]
    assert mine <= cat["read"] | cat["write"], mine - cat["read"] - cat["write"]
    amq = {c.decode().lower() for c in r.execute_command("ACL", "CAT", "amq")}
    assert own == amq, own ^ amq
    assert {"af.add", "af.madd", "af.addat", "af.reserve", "af.loadchunk"} <= cat["write"]
    assert {"af.exists", "af.mexists", "af.existsat", "af.info"} <= cat["read"] & cat["fast"]
    r.execute_command("ACL", "SETUSER", "nowrite", "on", ">pw", "~*", "+@all", "-@write")
    u = harness.redis.Redis(host="127.0.0.1", port=env.server.port, username="nowrite",
                            password="pw")
    r.execute_command("AF.RESERVE", "af", 0.01, 1000)
    for cmd in (("AF.ADD", "af", "x"), ("AF.RESERVE", "af2", 0.01, 1000),
                ("AF.MADD", "af", "y"), ("AMQ.CREATE", "q", "blocked", 100, 0.01)):
        try:
            u.execute_command(*cmd)
            raise AssertionError("%s allowed to a -@write user" % cmd[0])
        except harness.redis.exceptions.NoPermissionError:
            pass
    assert u.execute_command("AF.EXISTS", "af", "x") == 0


def _rdb_from_redis7(env):
    """Keys of every shape written by Debian's Redis 7.0 with amq.so: (dir with dump.rdb,
    keys, snapshot, DUMP payloads)."""
    if not os.path.exists(SYSTEM_REDIS):
        return None
    src = env.new_server(binary=SYSTEM_REDIS)
    r = src.client()
    keys = populate(r)
    snap = snapshot(r, keys)
    dumps = {k: r.dump(k) for k in keys}
    r.save()
    return src, keys, snap, dumps


def _same(snap, other, keys):
    for k in keys:
        # DEBUG DIGEST-VALUE differs between servers' digest functions only if the module's
        # digest differs; INFO, DEBUG and every MEXISTS answer must be equal.
        assert snap[k] == other[k], (k, snap[k][:2], other[k][:2])


def test_redis7_rdb_loads_identically(env):
    got = _rdb_from_redis7(env)
    if got is None:
        return
    src, keys, snap, _ = got
    dst_dir = env.new_server(start=False).dir
    shutil.copy(os.path.join(src.dir, "dump.rdb"), os.path.join(dst_dir, "dump.rdb"))
    dst = env.track(harness.Server(env.module, dir=dst_dir))
    r = dst.client()
    assert sorted(k.decode() for k in r.keys("*f:*")) == keys
    _same(snap, snapshot(r, keys), keys)
    # And the data keeps working: adds, deletes, growth.
    assert r.execute_command("BF.ADD", "bf:default", "new-item") == 1
    assert r.execute_command("CF.DEL", "cf:del", PRESENT[100]) == 1


def test_redis7_dump_restores_identically(env):
    got = _rdb_from_redis7(env)
    if got is None:
        return
    _, keys, snap, dumps = got
    r = env.server.client()
    for k, payload in dumps.items():
        assert r.restore(k, 0, payload)
    _same(snap, snapshot(r, keys), keys)
    # SCANDUMP of the restored keys equals the writer's DUMP bytes after a round trip back.
    for k in keys:
        assert r.dump(k)[:-10] == dumps[k][:-10], k
