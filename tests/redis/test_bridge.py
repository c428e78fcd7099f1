"""The bridge between the amq tool and a server: `amq export --to redis KEY FILE | redis-cli
--pipe` loads an offline-built filter that answers BF.MEXISTS / CF.MEXISTS exactly as `amq
query` answers for the file (false positives included), and `amq import --from redis` turns a
SCANDUMP stream (the server's replies) or export's own output back into a file that answers as
the key does."""
import os
import random
import subprocess
import tempfile

import harness

HERE = os.path.dirname(os.path.abspath(__file__))


def amq_path(env):
    p = os.environ.get("AMQ") or os.path.join(os.path.dirname(env.module), "amq")
    assert os.path.exists(p), "the amq tool is not built beside the module: " + p
    return p


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, timeout=300, **kw)


class Files:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="amq-bridge-")

    def path(self, name):
        return os.path.join(self.dir, name)

    def write_lines(self, name, lines):
        with open(self.path(name), "w") as f:
            f.write("".join(x + "\n" for x in lines))
        return self.path(name)

    def cleanup(self):
        subprocess.run(["rm", "-rf", self.dir])


def keys_and_probes(n, seed):
    rnd = random.Random(seed)
    keys = ["key:%d:%x" % (i, rnd.getrandbits(40)) for i in range(n)]
    probes = keys[::7] + ["absent:%d:%x" % (i, rnd.getrandbits(40)) for i in range(4 * n)]
    return keys, probes


def amq_answers(amq, filt, probes_file, probes):
    """amq query's answer per probe: 1 when the line is printed."""
    out = run([amq, "query", filt, probes_file])
    assert out.returncode in (0, 1), out.stderr
    hit = set(out.stdout.decode().splitlines())
    return [1 if p in hit else 0 for p in probes]


def mexists(r, fam, key, probes):
    res = []
    for i in range(0, len(probes), 5000):
        res += [int(x) for x in r.execute_command(fam + ".MEXISTS", key, *probes[i:i + 5000])]
    return res


def pipe_load(env, amq, key, filt, extra=()):
    exp = run([amq, "export", "--to", "redis", *extra, key, filt])
    assert exp.returncode == 0, exp.stderr
    load = run([harness.REDIS_CLI, "-h", "127.0.0.1", "-p", str(env.server.port), "--pipe"],
               input=exp.stdout)
    assert load.returncode == 0 and b"errors: 0" in load.stdout, load.stdout + load.stderr
    return exp.stdout


def scandump_stream(r, fam, key):
    """The SCANDUMP replies as the server sends them in RESP2: *2 :iterator $data."""
    out, it = [], 0
    while True:
        nxt, data = r.execute_command(fam + ".SCANDUMP", key, it)
        data = data or b""
        out.append(b"*2\r\n:%d\r\n$%d\r\n%s\r\n" % (nxt, len(data), data))
        if nxt == 0:
            return b"".join(out)
        it = nxt


def check_kind(env, fam, build_args, n, seed, chunks=2):
    amq = amq_path(env)
    f = Files()
    try:
        keys, probes = keys_and_probes(n, seed)
        kf = f.write_lines("keys", keys)
        pf = f.write_lines("probes", probes)
        filt = f.path("f.amq")
        b = run([amq, "build", "-q", *build_args, "--redisbloom", filt, kf])
        assert b.returncode == 0, b.stderr
        want = amq_answers(amq, filt, pf, probes)
        assert sum(want[:len(keys[::7])]) == len(keys[::7])  # no false negatives
        r = env.server.client()
        stream = pipe_load(env, amq, "k{1}", filt)
        got = stream.count(fam.encode() + b".LOADCHUNK")
        assert got == chunks, (got, chunks)  # the header + one per link up to 1 MiB
        assert r.exists("k{1}") == 1 and r.keys("*amq-load*") == []
        assert mexists(r, fam, "k{1}", probes) == want
        # A key without a hash tag goes through a staging key in its own slot, too.
        pipe_load(env, amq, "plain", filt)
        assert mexists(r, fam, "plain", probes) == want
        # The server's SCANDUMP replies, imported, answer as the key.
        sf = f.path("scandump.resp")
        with open(sf, "wb") as fh:
            fh.write(scandump_stream(r, fam, "k{1}"))
        back = f.path("back.amq")
        imp = run([amq, "import", "--from", "redis", sf, back])
        assert imp.returncode == 0, imp.stderr
        assert amq_answers(amq, back, pf, probes) == want
        # So does export's own output, read from standard input.
        back2 = f.path("back2.amq")
        imp = run([amq, "import", "--from", "redis", "-", back2], input=stream)
        assert imp.returncode == 0, imp.stderr
        assert amq_answers(amq, back2, pf, probes) == want
        # The re-exported file loads byte-identically (DUMP bodies equal).
        pipe_load(env, amq, "again", back)
        assert r.dump("again") == r.dump("k{1}")
    finally:
        f.cleanup()


def test_scalable_bloom_round_trip(env):
    # Sized for 10^6 keys at 0.01 %: a 2.6 MB link, exported as three 1 MiB chunks.
    check_kind(env, "BF", ["--type", "scalable-bloom", "--fpp", "0.0001",
                           "--capacity", "1000000"], 20000, 1, chunks=4)


def test_scalable_bloom_small_round_trip(env):
    check_kind(env, "BF", ["--type", "scalable-bloom", "--capacity", "300"], 1000, 2,
               chunks=4)  # 3 links


def test_scalable_cuckoo_round_trip(env):
    check_kind(env, "CF", ["--type", "scalable-cuckoo"], 50000, 3, chunks=3)


def test_scalable_cuckoo_grown_round_trip(env):
    # A small capacity: the filter grows to several sub-filters while building.
    check_kind(env, "CF", ["--type", "scalable-cuckoo", "--capacity", "1000"], 6000, 5,
               chunks=8)


def test_existing_key_kept_unless_replace(env):
    amq = amq_path(env)
    f = Files()
    try:
        keys, probes = keys_and_probes(2000, 4)
        kf = f.write_lines("keys", keys)
        filt = f.path("f.amq")
        assert run([amq, "build", "-q", "--type", "scalable-bloom", "--redisbloom", filt,
                    kf]).returncode == 0
        r = env.server.client()
        r.execute_command("BF.ADD", "mine", "only-this")
        before = r.dump("mine")
        pipe_load(env, amq, "mine", filt)
        assert r.dump("mine") == before  # RENAMENX left it; the staging key is gone
        assert r.keys("*amq-load*") == []
        pipe_load(env, amq, "mine", filt, ["--replace"])
        assert r.dump("mine") != before
        assert all(x == 1 for x in mexists(r, "BF", "mine", keys))
    finally:
        f.cleanup()


def test_export_without_redisbloom_form_goes_to_the_amq_type(env):
    """Filters RedisBloom cannot read become AMQ.* keys (tests/redis/test_amq.py has the
    round trips of every kind); none is written as BF/CF chunks."""
    amq = amq_path(env)
    f = Files()
    try:
        kf = f.write_lines("keys", ["a", "b", "c"])
        for args in (["--type", "bloom"], ["--type", "blocked"],
                     ["--type", "scalable-bloom"], ["--type", "cuckoo"]):
            filt = f.path("x.amq")
            assert run([amq, "build", "-q", "--force", *args, filt, kf]).returncode == 0
            out = run([amq, "export", "--to", "redis", "k", filt])
            assert out.returncode == 0, (args, out.stderr)
            assert b"AMQ.LOADCHUNK" in out.stdout and b"BF.LOADCHUNK" not in out.stdout
            assert b"CF.LOADCHUNK" not in out.stdout
    finally:
        f.cleanup()


def test_import_refuses_bad_streams(env):
    amq = amq_path(env)
    f = Files()
    try:
        r = env.server.client()
        r.execute_command("BF.MADD", "b", *["x%d" % i for i in range(500)])
        good = scandump_stream(r, "BF", "b")
        cases = {
            "truncated": good[:len(good) // 2],
            "not resp": b"hello world\n",
            "empty": b"",
            "no header": good[good.index(b"*2", 4):],
            "bad header": b"*2\r\n:1\r\n$5\r\nhello\r\n",
            "error reply": b"-ERR not found\r\n",
            # Cut at a reply boundary before the last link (the last reply is the end
            # marker [0, ""]): parses, but that link's bits are missing.
            "cut between chunks": good[:good.rindex(b"*2\r\n:", 0, good.rindex(b"*2\r\n:"))],
        }
        for name, data in cases.items():
            src = f.path("in")
            with open(src, "wb") as fh:
                fh.write(data)
            out = f.path("out.amq")
            res = run([amq, "import", "--from", "redis", src, out])
            assert res.returncode == 2, (name, res.stderr)
            assert res.stderr.strip(), name
            assert not os.path.exists(out), name  # nothing half-written
    finally:
        f.cleanup()
