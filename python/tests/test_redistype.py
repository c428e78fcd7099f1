"""amq.redistype over a real server with amq.so (the module built beside the amq tool,
AMQ_BIN's directory): create, add_many, contains_many in one round trip, a local
amq.Filter of every kind loaded into a key and fetched back byte for byte."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

import amq
from amq import redistype as rt

from conftest import keys

redis = pytest.importorskip("redis")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(amq_bin):
    module = os.path.join(os.path.dirname(amq_bin), "amq.so")
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.path.exists(binary):
        pytest.skip("no redis-server")
    if not os.path.exists(module):
        pytest.fail("amq.so is not built at %s (make redis-module)" % module)
    d = tempfile.mkdtemp(prefix="amq-py-redis-")
    port = _free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                             "--save", "", "--loadmodule", module],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(500):
        try:
            if r.ping():
                break
        except redis.ConnectionError:
            time.sleep(0.02)
    try:
        yield r
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(d, ignore_errors=True)


class Counting:
    """A client that counts its round trips."""

    def __init__(self, r):
        self.r, self.calls = r, 0

    def execute_command(self, *a):
        self.calls += 1
        return self.r.execute_command(*a)


def test_create_add_contains_one_round_trip(server):
    server.flushall()
    rt.create(server, "u", "cuckoo", 10000, 0.001, fingerprint_bits=16, bucket_size=4)
    c = Counting(server)
    ks = keys("k", 3000)
    assert rt.add_many(c, "u", ks) == [True] * 3000
    assert rt.contains_many(c, "u", ks + ["nope"]) == [True] * 3000 + [False]
    assert c.calls == 2
    assert rt.contains_many(server, "missing", ["a"]) == [False]
    with pytest.raises(redis.ResponseError, match="unknown kind"):
        rt.create(server, "x", "nokind", 10, 0.01)
    with pytest.raises(TypeError):
        rt.create(server, "x", "bloom", 10, 0.01, colour=3)


def test_items_are_keys_as_a_local_filter_takes_them(server):
    # an int went to the server as its digits ("5": a key a local filter refuses), a
    # bytearray raised redis-py's DataError, a str batch was sent one character a key
    server.flushall()
    rt.create(server, "t", "blocked", 1000, 0.01)
    local = amq.Filter(1000, kind="blocked")
    c = Counting(server)
    for bad in ([5], [b"a", 5], [None], [1.5], [True]):
        with pytest.raises(TypeError) as want:
            local.add_many(bad)
        for fn in (rt.add_many, rt.contains_many):
            with pytest.raises(TypeError) as got:
                fn(c, "t", bad)
            assert str(got.value) == str(want.value)  # "a key must be str, bytes or a ..."
    for bad in ("abc", b"abc"):
        with pytest.raises(TypeError, match="not a single"):
            rt.add_many(c, "t", bad)
    assert c.calls == 0  # nothing sent
    ks = ["é", b"b", bytearray(b"c"), memoryview(b"d")]
    assert rt.add_many(server, "t", ks) == [True] * 4
    assert rt.contains_many(server, "t", ks) == [True] * 4
    f = rt.fetch(server, "t")
    assert all(k in f for k in ks) and "é".encode() in f


def make(kind, ks):
    if kind in ("ribbon", "fuse"):
        return amq.build(ks, kind=kind, fpp=0.01)
    # pocket starts at no fewer than 64 keys
    f = amq.Filter(kind=kind, capacity=max(len(ks), 64) if kind == "pocket" else len(ks),
                   fpp=0.01)
    f.add_many(ks)
    return f


@pytest.mark.parametrize("kind", ["blocked", "bloom", "partitioned", "cuckoo",
                                  "scalable-bloom", "scalable-cuckoo", "ribbon", "fuse",
                                  "quotient", "pocket"])
def test_load_and_fetch_every_kind(server, kind):
    ks = keys("key", 5000)
    f = make(kind, ks)
    assert rt.load(server, "f:" + kind, f, replace=True)
    assert rt.contains_many(server, "f:" + kind, ks) == [True] * len(ks)
    probe = keys("absent", 2000)
    assert rt.contains_many(server, "f:" + kind, probe) == [x in f for x in probe]
    g = rt.fetch(server, "f:" + kind)
    assert g.kind == kind and g.to_bytes() == f.to_bytes()
    # RENAMENX: an existing key stays as it was
    other = make(kind, keys("other", 10))
    assert not rt.load(server, "f:" + kind, other)
    assert rt.fetch(server, "f:" + kind).to_bytes() == f.to_bytes()
    assert server.keys("*amq-load*") == []
