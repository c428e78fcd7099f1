"""The quotient kind through Python: no capacity given, it grows by 10 % and
keeps every key in about 20 bits; batches, pickling, files (mmap'd too, and
the tool's), its growth limit; no removal."""
import pickle
import subprocess

import numpy as np
import pytest

import amq

pytestmark = pytest.mark.skipif("quotient" not in amq.KINDS, reason="no quotient kind")


def test_quotient_without_capacity_grows():
    f = amq.Filter(kind="quotient")
    assert f.kind == "quotient" and f.capacity == 4096 and len(f) == 0
    assert f.info()["start_slots"] == 4312  # 4,096 keys at 95 %
    keys = [b"k%d" % i for i in range(200_000)]
    # the kind keeps copies (its add does not look first), so Python's add asks first: a key
    # that may be present already (a false positive, about 2e-4 here) is not added again
    new = sum(f.add(k) for k in keys)
    assert 199_800 <= new <= 200_000 and len(f) == new
    assert f.capacity > 40 * 4096
    assert all(k in f for k in keys)
    fp = sum(1 for i in range(200_000) if (b"x%d" % i) in f)
    assert fp <= 200  # 0.1 %; info's bound is about 2e-4
    i = f.info()
    assert i["expansions"] > 20 and i["entries"] <= 0.95 * i["slots"]
    assert i["fpp_bound"] == i["fpp_now"] <= 0.01
    assert 18 <= f.nbytes * 8 / len(f) <= 22  # memory follows the keys
    assert sum(v for k, v in i.items() if k.startswith("entries_of_")) == i["entries"]
    with pytest.raises(amq.UnsupportedError):
        f.remove(keys[0])
    assert keys[0] in f


def test_quotient_batches_match_single_calls():
    f = amq.Filter(kind="quotient", capacity=1000)
    ids = np.arange(300_000, dtype=np.uint64)
    new = f.add_many(ids)
    assert 299_700 <= new <= 300_000 and len(f) == new
    assert f.contains_many(ids).all()
    probe = np.arange(300_000, 400_000, dtype=np.uint64)
    got = f.contains_many(probe)
    assert got.tolist() == [int(x).to_bytes(8, "little") in f for x in probe]
    assert got.sum() <= 100
    words = ["w%d" % i for i in range(5000)]
    f.update(iter(words))
    assert f.contains_many(words).all() and new + 4990 <= len(f) <= new + 5000


def test_quotient_pickle_copy_bytes_answer_the_same():
    """Pickled, copied and serialized with keys still pending (the last 16
    adds wait for their lines) and after some 40 growths, it answers exactly
    as before, and adds go on."""
    f = amq.Filter(kind="quotient", capacity=1000, fpp=0.005)
    f.add_many([b"p%d" % i for i in range(100_003)])
    assert f.info()["pending_keys"] > 0
    probe = [b"p%d" % i for i in range(100_003)] + [b"a%d" % i for i in range(50_000)]
    want = f.contains_many(probe).tolist()
    assert all(want[:100_003])
    for g in (pickle.loads(pickle.dumps(f)), f.copy(), amq.Filter.from_bytes(f.to_bytes())):
        assert g == f and g.kind == "quotient" and len(g) == len(f)
        assert g.info() == f.info()
        assert g.contains_many(probe).tolist() == want
        g.add_many([b"q%d" % i for i in range(50_000)])
        assert g.contains_many(probe[:100_003]).all()
        assert g.contains_many([b"q%d" % i for i in range(50_000)]).all()
        assert g != f


def test_quotient_files_mmap_and_the_tool(tmp, amq_bin):
    f = amq.Filter(kind="quotient")
    keys = ["user-%d" % i for i in range(100_000)]
    f.add_many(keys)
    p = tmp / "q.amq"
    f.save(p)
    g = amq.open(p)
    assert g == f and not g.readonly and g.contains_many(keys).all()
    g.add("more")
    assert "more" in g
    m = amq.open(p, mmap=True)
    assert m.readonly and m.contains_many(keys).all()
    with pytest.raises(amq.ReadOnlyError):
        m.add("x")
    t = amq.open(p, mmap=True, trust=True)
    probe = keys[::7] + ["absent-%d" % i for i in range(20_000)]
    want = f.contains_many(probe).tolist()
    assert m.contains_many(probe).tolist() == want == t.contains_many(probe).tolist()
    # the tool answers what Python answers, and its file loads here
    (tmp / "probe.txt").write_text("".join(k + "\n" for k in probe))
    r = subprocess.run([amq_bin, "query", str(p), str(tmp / "probe.txt")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [k for k, hit in zip(probe, want) if hit]
    (tmp / "keys.txt").write_text("".join(k + "\n" for k in keys))
    subprocess.run([amq_bin, "create", str(tmp / "t.amq"), "--type", "quotient"], check=True)
    subprocess.run([amq_bin, "add", "-q", str(tmp / "t.amq"), str(tmp / "keys.txt")],
                   check=True)
    t = amq.open(tmp / "t.amq", mmap=True)
    assert t.kind == "quotient" and len(t) == len(keys) and t.contains_many(keys).all()
    # the tool stores each distinct line; Python's add asks first and skips the few keys
    # already answered present (false positives): the tool's table has those too
    assert len(f) <= len(t) and len(keys) - len(f) <= 100


def test_quotient_entries_out_of_bits_through_files(tmp):
    """From its 64 smallest slots to 4M keys, k grows by 16: the first keys'
    entries run out of bits and become ranges of the deep list (void lanes
    in the table); bytes, a saved file and its mapping answer the same."""
    f = amq.Filter(kind="quotient", capacity=1)
    ids = np.arange(4_000_000, dtype=np.uint64)
    assert f.add_many(ids) >= 0.998 * len(ids)
    i = f.info()
    assert i["start_slots"] == 64 and i["deep_ranges"] > 0 and i["void_lanes"] > 0
    assert i["fpp_bound"] <= 0.01
    assert f.contains_many(ids).all()
    absent = np.arange(10_000_000, 11_000_000, dtype=np.uint64)
    want = f.contains_many(absent)
    assert want.mean() <= 0.002
    f.save(tmp / "deep.amq")
    for g in (amq.Filter.from_bytes(f.to_bytes()), amq.open(tmp / "deep.amq"),
              amq.open(tmp / "deep.amq", mmap=True)):
        assert g == f and g.info()["deep_ranges"] == i["deep_ranges"]
        assert g.contains_many(ids).all()
        assert (g.contains_many(absent) == want).all()


def test_quotient_growth_limit_changes_nothing():
    # at 1e-4 its 16-bit entries allow a few growths: some 23,000 keys from 4,096
    f = amq.Filter(kind="quotient", fpp=0.0001)
    added = 0
    with pytest.raises(amq.FilterFullError):
        for i in range(0, 200_000, 1000):
            f.add_many([b"l%d" % j for j in range(i, i + 1000)])
            added = i + 1000
    assert 10_000 < added < 100_000
    assert f.contains_many([b"l%d" % j for j in range(added)]).all()
    before = f.to_bytes()
    with pytest.raises(amq.FilterFullError):
        f.add(b"one-more")
    assert f.to_bytes() == before
    assert f.info()["fpp_now"] <= 0.0001


def test_quotient_parameters_and_clear():
    with pytest.raises(ValueError, match="fingerprint_bits applies to the kinds"):
        amq.Filter(kind="quotient", fingerprint_bits=12)
    with pytest.raises(ValueError, match="false-positive target must be in"):
        amq.Filter(kind="quotient", fpp=0.00001)
    f = amq.Filter(kind="quotient", capacity=2000, fpp=0.02, seed=9, hash="murmur3")
    assert f.info()["start_slots"] == 2106 and f.fpp == 0.02
    assert f.info()["hash"] == "murmur3" and f.info()["seed"] == 9
    f.add_many([b"c%d" % i for i in range(50_000)])
    f.clear()
    assert len(f) == 0 and f.info()["slots"] == 2106 and f.info()["expansions"] == 0
    assert b"c1" not in f
    f.add(b"c1")
    assert b"c1" in f


def test_quotient_settle_ends_a_growth(tmp_path):
    f = amq.Filter(kind="quotient")
    keys = [b"s%d" % i for i in range(300_000)]
    n = 0
    for k in keys:  # to a growth under way
        f.add(k)
        n += 1
        if n >= 200_000 and f.info()["growing_to_slots"]:
            break
    to = f.info()["growing_to_slots"]
    assert to > 0
    both = len(f.to_bytes())
    f.settle()
    assert f.info()["growing_to_slots"] == 0 and f.info()["slots"] == to
    assert len(f.to_bytes()) < both * 0.6  # the old table is gone
    assert all(k in f for k in keys[:n])
    f.settle()  # nothing under way: nothing changes
    f.save(str(tmp_path / "s.amq"))
    g = amq.open(str(tmp_path / "s.amq"), mmap=True)
    with pytest.raises(amq.ReadOnlyError):
        g.settle()
    assert all(k in g for k in keys[:n])
    g.close()


def test_quotient_key_added_again_changes_nothing():
    # Python asks first for a kind that keeps copies (amq_kind_keeps_copies)
    f = amq.Filter(kind="quotient")
    keys = [b"r%d" % i for i in range(100_000)]
    new = f.add_many(keys)
    before = f.info()
    assert f.add_many(keys) == 0  # each may already be present
    assert f.info()["entries"] == before["entries"]
    assert len(f) == new
