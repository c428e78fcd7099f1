"""test_faults.py - the module under faults (docs/reliability.md):

- SIGKILL of a server with AOF and appendfsync always, at random moments
  while clients add: after restart every BF.ADD / CF.ADD that was
  acknowledged is still there, and the filters answer and persist;
- the primary killed, the replica promoted: every write the replica had
  acknowledged (WAIT) is there, and the promoted server takes writes and
  survives DEBUG RELOAD;
- a million mixed BF/CF commands on thousands of keys with an 8 MB
  maxmemory: through redis-cli --pipe without eviction (OOM errors), and
  from redis-benchmark with allkeys-random (evictions): the server stays
  up, every filter left answers INFO, and DEBUG RELOAD keeps every value
  byte for byte (DUMP before and after).

Fixed seeds; each test is bounded to some seconds.
"""
import random
import shutil
import socket
import subprocess
import threading
import time

import redis

REDIS_BENCHMARK = shutil.which("redis-benchmark") or "/usr/bin/redis-benchmark"


# ---- SIGKILL with appendfsync always ------------------------------------------------------

def _writer(port, prefix, acked, stop):
    """Adds unique items one command at a time, recording each acknowledged
    one; stops at the first connection error (the server was killed)."""
    try:
        r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
        i = 0
        while not stop.is_set():
            item = "%s-%d" % (prefix, i)
            if i % 2 == 0:
                rep = r.execute_command("BF.ADD", "bf:kill", item)
                kind = "bf"
            else:
                rep = r.execute_command("CF.ADD", "cf:kill", item)
                kind = "cf"
            if rep in (0, 1):
                acked.append((kind, item))
            i += 1
    except (redis.ConnectionError, redis.TimeoutError, ConnectionError, OSError):
        pass


def test_sigkill_aof_always_loses_no_acknowledged_add(env):
    rng = random.Random(7)
    srv = env.new_server(conf={"appendonly": "yes", "appendfsync": "always"})
    r = srv.client()
    r.execute_command("BF.RESERVE", "bf:kill", 0.001, 1000)     # grows: new links
    r.execute_command("CF.RESERVE", "cf:kill", 1000, "EXPANSION", 2)
    acked = []
    for rnd in range(6):
        stop = threading.Event()
        threads = [threading.Thread(target=_writer, args=(srv.port, "r%dw%d" % (rnd, w),
                                                          acked, stop)) for w in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.15 + rng.random() * 0.6)
        srv.kill()                                  # SIGKILL mid-writes
        stop.set()
        for t in threads:
            t.join(30)
        srv.start()
        r = srv.client()
        missing = []
        for kind, item in acked:
            cmd = "BF.EXISTS" if kind == "bf" else "CF.EXISTS"
            if r.execute_command(cmd, "%s:kill" % kind, item) != 1:
                missing.append((kind, item))
        assert not missing, "round %d: %d acknowledged adds lost after SIGKILL, e.g. %s" % (
            rnd, len(missing), missing[:5])
        r.execute_command("BF.INFO", "bf:kill")
        r.execute_command("CF.INFO", "cf:kill")
    assert len(acked) > 300, "too few writes to mean anything: %d" % len(acked)
    # The AOF the kills left loads into an RDB round trip too.
    r.execute_command("DEBUG", "RELOAD")
    assert r.execute_command("BF.EXISTS", "bf:kill", acked[0][1]) in (0, 1)


# ---- replica promotion ----------------------------------------------------------------------

def test_replica_promotion_after_primary_killed(env):
    prim = env.new_server()
    rep = env.track(prim.replica())
    p = prim.client()
    p.execute_command("BF.RESERVE", "bf:rep", 0.01, 100)
    p.execute_command("CF.RESERVE", "cf:rep", 256)
    items = ["item-%d" % i for i in range(3000)]
    for i in range(0, len(items), 100):
        p.execute_command("BF.MADD", "bf:rep", *items[i:i + 100])
        p.execute_command("CF.INSERT", "cf:rep", "ITEMS", *items[i:i + 100])
    # Everything above is acknowledged by the replica.
    assert p.execute_command("WAIT", 1, 10000) == 1
    dump_bf = p.dump("bf:rep")
    dump_cf = p.dump("cf:rep")
    prim.kill()
    rc = rep.client()
    rc.replicaof("no", "one")
    assert rc.dump("bf:rep") == dump_bf, "the promoted replica's BF differs"
    assert rc.dump("cf:rep") == dump_cf, "the promoted replica's CF differs"
    assert rc.execute_command("BF.MEXISTS", "bf:rep", *items[:50]) == [1] * 50
    assert all(rc.execute_command("CF.EXISTS", "cf:rep", x) == 1 for x in items[::97])
    assert rc.execute_command("BF.ADD", "bf:rep", "after-promotion") == 1
    assert rc.execute_command("CF.ADD", "cf:rep", "after-promotion") == 1
    rc.execute_command("DEBUG", "RELOAD")
    assert rc.execute_command("BF.EXISTS", "bf:rep", "after-promotion") == 1
    assert rc.execute_command("CF.EXISTS", "cf:rep", "after-promotion") == 1


# ---- a million commands with a low maxmemory ---------------------------------------------------

REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"

# Four command shapes over 200,000 keys; redis-benchmark replaces
# __rand_int__ (-r): many filters that grow until memory runs out.  (It
# stops at the first error reply, so it gets commands that fail only by
# eviction; the run with errors goes through redis-cli --pipe.)
BENCH_COMMANDS = [
    ["BF.ADD", "bf:b:__rand_int__", "v__rand_int__"],
    ["CF.ADD", "cf:b:__rand_int__", "v__rand_int__"],
    ["BF.EXISTS", "bf:b:__rand_int__", "v__rand_int__"],
    ["CF.COUNT", "cf:b:__rand_int__", "v__rand_int__"],
]


def _bench(port, cmd, n):
    out = subprocess.run([REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(port), "-n", str(n),
                          "-r", "200000", "-c", "8", "-P", "32", "-q", "--csv"] + cmd,
                         capture_output=True, timeout=300, text=True)
    return out.returncode, out.stdout + out.stderr


def _resp(*args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


def _pipe_commands(n, seed):
    """n mixed commands (adds, reserves, queries, deletes, inserts) as RESP."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randrange(3000)
        v = rng.randrange(1 << 20)
        op = rng.randrange(8)
        if op == 0:
            out.append(_resp("BF.ADD", "bf:p:%d" % k, v))
        elif op == 1:
            out.append(_resp("CF.ADD", "cf:p:%d" % k, v))
        elif op == 2:
            out.append(_resp("BF.EXISTS", "bf:p:%d" % k, v))
        elif op == 3:
            out.append(_resp("CF.DEL", "cf:p:%d" % k, v))
        elif op == 4:
            out.append(_resp("BF.INSERT", "bf:p:%d" % k, "CAPACITY", 50, "ITEMS", v, v + 1, v + 2))
        elif op == 5:
            out.append(_resp("CF.ADDNX", "cf:p:%d" % k, v))
        elif op == 6:
            out.append(_resp("BF.RESERVE", "bf:big:%d" % k, 0.0001, 20000))
        else:
            out.append(_resp("CF.RESERVE", "cf:big:%d" % k, 20000))
    return b"".join(out)


def _check_all_values(r):
    """Every key left answers INFO and survives DEBUG RELOAD byte for byte.
    maxmemory is lifted first: with it, every command (DUMP too) may evict."""
    r.config_set("maxmemory", 0)
    keys = [k.decode() for k in r.scan_iter(count=1000)]
    dumps = {}
    for k in keys:
        r.execute_command("BF.INFO" if k.startswith("bf:") else "CF.INFO", k)
        dumps[k] = r.dump(k)
    r.execute_command("DEBUG", "RELOAD")
    for k in keys:
        assert r.dump(k) == dumps[k], "%s changed across DEBUG RELOAD" % k
    return len(keys)


def test_million_commands_low_maxmemory_noeviction(env):
    """1,000,000 mixed commands through redis-cli --pipe under an 8 MB
    maxmemory without eviction: writes get OOM errors, nothing crashes,
    nothing is corrupted."""
    srv = env.new_server(conf={"maxmemory": 8 << 20, "maxmemory-policy": "noeviction"})
    r = srv.client()
    data = _pipe_commands(1000000, 11)
    out = subprocess.run([REDIS_CLI, "-h", "127.0.0.1", "-p", str(srv.port), "--pipe"],
                         input=data, capture_output=True, timeout=600)
    text = (out.stdout + out.stderr).decode(errors="replace")
    assert srv.alive(), "the server died:\n" + srv.log_tail()
    m = __import__("re").search(r"errors: (\d+), replies: (\d+)", text)
    assert m, text[-500:]
    errors, replies = int(m.group(1)), int(m.group(2))
    assert replies == 1000000, text[-300:]
    oom = int(r.info("stats").get("total_error_replies", 0))
    assert errors > 1000 and oom > 0, "no command was refused: %s" % text[-300:]
    assert int(r.info("memory")["used_memory"]) < (8 << 20) * 1.5
    assert _check_all_values(r) > 100


def test_benchmark_million_commands_low_maxmemory_eviction(env):
    """1,000,000 mixed commands from redis-benchmark (4 shapes x 250,000,
    concurrently) under an 8 MB maxmemory that evicts: keys are evicted and
    freed while others are written, nothing crashes or is corrupted."""
    srv = env.new_server(conf={"maxmemory": 8 << 20, "maxmemory-policy": "allkeys-random"})
    r = srv.client()
    results = {}
    threads = []
    for cmd in BENCH_COMMANDS:
        def run(cmd=cmd):
            results[cmd[0]] = _bench(srv.port, cmd, 250000)
        threads.append(threading.Thread(target=run))
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert srv.alive(), "the server died:\n" + srv.log_tail()
    for name, (code, out) in results.items():
        assert code == 0, "%s: redis-benchmark exited %d: %s" % (name, code, out[-500:])
    assert int(r.info("stats")["evicted_keys"]) > 0, "no key was evicted"
    assert _check_all_values(r) > 100
