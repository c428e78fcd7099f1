"""Batched adds and queries: every shape of keys answers as one key at a time."""
import numpy as np
import pytest

import amq
from conftest import keys

KINDS = ["bloom", "blocked", "partitioned", "cuckoo", "scalable-bloom", "scalable-cuckoo",
         "quotient", "pocket"]


@pytest.mark.parametrize("kind", KINDS)
def test_lists_match_single_calls(kind):
    f = amq.Filter(kind=kind, capacity=5000, fpp=0.01)
    ins = keys("a", 3000)
    assert 1950 <= f.add_many(ins[:2000]) <= 2000  # Bloom kinds: a false positive is not new
    f.update(iter(ins[2000:]))
    probe = ins + keys("b", 5000)
    got = f.contains_many(probe)
    assert got.dtype == np.bool_ and got.shape == (len(probe),)
    assert got.tolist() == [k in f for k in probe]
    assert got[:3000].all()


def test_add_many_counts_new():
    f = amq.Filter(kind="cuckoo", capacity=5000)
    assert f.add_many(["x", "y", "z"]) == 3
    g = amq.Filter(kind="bloom", capacity=5000, fpp=0.0001)
    assert g.add_many(["x", "y", "x"]) == 2


def test_numpy_fixed_width_is_the_bytes_key():
    rng = np.random.default_rng(7)
    raw = rng.integers(1, 255, size=(4000, 12), dtype=np.uint8)
    for kind in ["blocked", "bloom", "cuckoo"]:
        f = amq.Filter(kind=kind, capacity=10000)
        f.add_many(raw)                         # 2-D uint8: one key per row
        rows = [bytes(r) for r in raw]
        assert all(r in f for r in rows)
        assert f.contains_many(raw.view("S12").ravel()).all()
        assert f.contains_many(raw.tobytes(), width=12).all()
        assert f.contains_many(raw.view("V12").ravel()).all()


def test_numpy_S_drops_trailing_nuls_like_numpy():
    arr = np.array([b"ab", b"abcdefgh", b"c"], dtype="S8")
    f = amq.Filter(kind="blocked", capacity=100)
    f.add_many(arr)
    assert "ab" in f and "c" in f and b"abcdefgh" in f
    assert b"ab\0\0\0\0\0\0" not in f


@pytest.mark.parametrize("kind", KINDS)
def test_integer_arrays_are_keys_on_every_kind(kind):
    # sequential IDs, the commonest numpy keys: hashed as keys (their bytes),
    # never taken as hashes - the IDs never added answer absent
    f = amq.Filter(kind=kind, capacity=200000, fpp=0.01)
    ids = np.arange(100000, dtype=np.uint64)
    assert f.add_many(ids) >= 99000
    assert f.contains_many(ids).all()
    assert f.contains_many(np.arange(100000, 200000, dtype=np.uint64)).mean() < 0.03
    assert (5).to_bytes(8, "little") in f  # the element's bytes as stored
    for dt in (np.int64, np.int32, np.uint16):
        a = np.arange(1000, dtype=dt)
        assert f.contains_many(a).tolist() == f.contains_many(a.view("V%d" % a.itemsize)).tolist()


@pytest.mark.parametrize("kind", KINDS + ["expandable", "aging"])
def test_packed_queries_match_single_calls(kind):
    # packed keys go to the kind's own loop (amq_filter_contains_batch_fixed):
    # 8-byte keys hashed inline, 12-byte through the hash call; every answer
    # is the one-key answer, every added key present
    rng = np.random.default_rng(11)
    for width in (8, 12):
        raw = rng.integers(0, 256, size=(40000, width), dtype=np.uint8)
        cap = {"expandable": 1000, "quotient": 1000, "pocket": 1000}.get(kind, 40000)  # they grow
        f = amq.Filter(kind=kind, capacity=cap, fpp=0.01)
        f.add_many(raw[:20000])
        got = f.contains_many(raw.view("V%d" % width).ravel())
        assert got[:20000].all()
        assert got.tolist() == [bytes(r) in f for r in raw]


def test_hashes_only_when_asked():
    h = np.arange(1, 10001, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    f = amq.Filter(kind="blocked", capacity=20000)
    assert f.add_many(h, hashes=True) == 10000
    assert f.contains_many(h, hashes=True).all()
    assert f.contains_many(h + np.uint64(1), hashes=True).mean() < 0.05
    # the same integers as keys are another thing
    assert f.contains_many(h).mean() < 0.05
    with pytest.raises(amq.UnsupportedError, match="blocked"):
        amq.Filter(kind="bloom", capacity=100).add_many(h, hashes=True)
    with pytest.raises(TypeError, match="uint64"):
        f.contains_many(h.astype(np.int32), hashes=True)
    with pytest.raises(TypeError, match="uint64"):
        f.contains_many(["a"], hashes=True)


def test_str_and_object_arrays_read_element_by_element():
    words = ["alpha", "beta", "caf\u00e9", "", "delta-long-word"]
    for arr in (np.array(words), np.array(words, dtype=object)):
        f = amq.Filter(kind="blocked", capacity=100)
        assert f.add_many(arr) == 5
        assert all(w in f for w in words)
        assert f.contains_many(arr).all()
    with pytest.raises(TypeError, match="NoneType"):
        f.add_many(np.array(["a", None, 1.5], dtype=object))


def test_batch_shape_errors():
    f = amq.Filter(capacity=100)
    with pytest.raises(TypeError, match="single"):
        f.add_many("abc")
    with pytest.raises(TypeError, match="single"):
        f.contains_many(b"abc")
    with pytest.raises(TypeError):
        f.add_many([1, 2])
    with pytest.raises(ValueError, match="width"):
        f.add_many(b"abcde" * 3 + b"x", width=5)
    with pytest.raises(ValueError, match="width=-1: a key width is 1 or more bytes"):
        f.add_many(b"abcd", width=-1)
    with pytest.raises(TypeError):
        f.contains_many(np.zeros(4, dtype=np.float64))
    with pytest.raises(TypeError):
        f.update("abc")
    assert len(f.contains_many([])) == 0
    assert f.add_many([]) == 0


def test_a_bytearray_is_one_key_not_a_batch():
    # it was read as a sequence of ints: "a key must be str, bytes or a buffer, not int"
    f = amq.Filter(capacity=100)
    for call in (f.add_many, f.contains_many, amq.build):
        with pytest.raises(TypeError, match="not a single bytearray .*width=N"):
            call(bytearray(b"abc"))
    with pytest.raises(TypeError, match="not one key"):
        f.update(bytearray(b"abc"))
    assert f.add_many(bytearray(b"abcd"), width=2) == 2 and "cd" in f
    assert f.add(bytearray(b"abc")) and b"abc" in f


def test_update_error_midway_keeps_earlier_keys():
    f = amq.Filter(capacity=10000)

    def gen():
        yield from keys("g", 3000)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        f.update(gen())
    assert all(k in f for k in keys("g", 2048))  # two whole chunks were added
