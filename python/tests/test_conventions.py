"""What a user of rbloom or pyprobables expects: capacity, equality, set
operations, signatures, subclassing - and no silent wrong answer."""
import inspect
import io
import warnings

import numpy as np
import pytest

import amq
from conftest import keys

FIXED = ["bloom", "blocked", "partitioned", "cuckoo"]


# ---- a fixed-size filter refuses to overfill (one rule with `amq add`) -------------

@pytest.mark.parametrize("kind", FIXED)
def test_add_many_past_capacity_is_refused_and_changes_nothing(kind):
    f = amq.Filter(capacity=1000, fpp=0.01, kind=kind)
    assert f.add_many(keys("a", 900)) >= 890
    before = f.to_bytes()
    with pytest.raises(amq.FilterFullError, match="capacity of 1000.*allow_overfill"):
        f.add_many(keys("b", 10000))
    assert f.to_bytes() == before  # nothing changed
    with pytest.raises(amq.FilterFullError):
        f.update(keys("c", 10000))
    assert f.to_bytes() == before
    assert f.add_many(keys("b", 150), allow_overfill=True) > 140
    assert len(f) > 1000
    assert all(k in f for k in keys("a", 900))


@pytest.mark.parametrize("kind", ["bloom", "blocked", "partitioned"])
def test_add_at_capacity_refuses_a_new_key_only(kind):
    f = amq.Filter(capacity=100, fpp=0.001, kind=kind)
    ks = keys("k", 300)
    i = 0
    while len(f) < 100:
        f.add(ks[i])
        i += 1
    assert f.add(ks[0]) is False  # present: no change, no error
    with pytest.raises(amq.FilterFullError, match="capacity of 100"):
        f.add("a-new-key")
    assert "a-new-key" not in f
    assert f.add("a-new-key", allow_overfill=True) is True
    with pytest.raises(TypeError):
        f.add("x", overfill=True)


def test_a_batch_within_capacity_and_growing_kinds_are_not_checked():
    f = amq.Filter(capacity=1000, kind="blocked")
    assert f.add_many(keys("a", 1000)) >= 990  # up to capacity: fine
    g = amq.Filter(capacity=100, kind="scalable-bloom")
    assert g.add_many(keys("a", 5000)) > 4900  # grows
    w = amq.Filter(capacity=100, kind="aging")
    w.add_many(keys("a", 5000))  # keeps its window
    q = amq.Filter(capacity=100, kind="quotient")
    assert q.add_many(keys("a", 5000)) == 5000  # grows
    p = amq.Filter(capacity=100, kind="pocket")
    assert p.add_many(keys("a", 5000)) == 5000  # grows


# ---- item 5: equality, cuckoo add, parameters, seeds, sizing ---------------------------

@pytest.mark.parametrize("kind", ["bloom", "blocked", "partitioned"])
def test_a_merge_past_capacity_warns_as_amq_merge_does(kind):
    # it overfilled silently ("never goes past its capacity silently" is the rule)
    a, b = amq.Filter(1000, kind=kind), amq.Filter(1000, kind=kind)
    a.add_many(keys("a", 900))
    b.add_many(keys("b", 900))
    for merge in (lambda: a | b, lambda: a.union(b), lambda: a.copy().merge(b),
                  lambda: a.copy().update(b)):
        with pytest.warns(RuntimeWarning, match="over its capacity of 1000"):
            merge()
    small = amq.Filter(1000, kind=kind)
    small.add("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        small |= amq.Filter(1000, kind=kind)  # within capacity: no warning
    with pytest.warns(RuntimeWarning):
        assert (a | b).contains_many(keys("b", 900)).all()  # merged all the same


def test_equality_is_content():
    f = amq.Filter(capacity=1000, kind="blocked")
    f.update(keys("e", 300))
    assert f.copy() == f and not (f.copy() != f)
    g = amq.Filter(capacity=1000, kind="blocked")
    g.update(reversed(keys("e", 300)))
    assert g == f
    g.add("one more")
    assert g != f
    assert f != amq.Filter(capacity=1000, kind="bloom")
    assert (f == "f") is False
    c = amq.Filter(capacity=1000, kind="cuckoo")
    c.update(keys("e", 30))
    assert amq.Filter.from_bytes(c.to_bytes()) == c
    with pytest.raises(TypeError):
        hash(f)


def test_cuckoo_add_of_a_present_key_says_so_and_still_stores_it():
    c = amq.Filter(capacity=1000, kind="cuckoo")
    assert c.add("x") is True
    assert c.add("x") is False  # was present (docstring: False if maybe held)
    assert c.remove("x") is True
    assert "x" in c  # the second copy: a remove never makes an added key absent
    assert c.add_many(["y", "y", "z"]) == 2


@pytest.mark.parametrize("kind, copies", [("cuckoo", 9), ("scalable-cuckoo", 8),
                                          ("expandable", 32)])
def test_a_key_stored_too_many_times_is_named_not_a_full_filter(kind, copies):
    # the 10th add of one key into a cuckoo filter of 100 said "filter is full" at 9 items
    f = amq.Filter(100, kind=kind) if kind != "expandable" else amq.Filter(kind=kind)
    for _ in range(copies):
        f.add("x")
    with pytest.raises(amq.FilterFullError, match=r"add: this key is stored too many times "
                                                  r"already.* remove\(\) takes one back"):
        f.add("x")
    # a cuckoo filter refuses y's first copy already: its spare slot holds x's 9th
    whose = "the filter" if kind == "cuckoo" else "the batch"
    with pytest.raises(amq.FilterFullError, match="add: a key of %s is stored too many" % whose):
        f.add_many(["y"] * (copies + 1))
    f.remove("x")
    assert f.add("x") is False  # room for one copy again


def test_a_key_stored_too_many_times_in_a_filter_past_half_full_is_named():
    # the reason was guessed from the load: past half the capacity one key's copies were
    # "filter is full"; the library reads the key's buckets (amq_filter_refusal)
    f = amq.Filter(1000, kind="cuckoo", bucket_size=4)
    f.add_many(["k%d" % i for i in range(700)])
    for _ in range(9):
        f.add("x")
    with pytest.raises(amq.FilterFullError, match=r"add: this key is stored too many times "
                                                  r"already.* 2b \+ 1 of one key"):
        f.add("x")
    # every add is refused while the spare slot holds x's 9th copy: not this key's copies
    with pytest.raises(amq.FilterFullError, match="add: a key of the filter is stored too many"):
        f.add("y")
    with pytest.raises(amq.FilterFullError, match="add: a key of the filter is stored too many"):
        f.add_many(["y", "z"])
    f.remove("x")
    assert f.add("y") is True


def test_keys_crowded_into_one_expandable_bucket_are_not_called_copies():
    # keys whose h1 is under 2^52 all fall in bucket 0 (a weak hash, or keys chosen against
    # the seed): the refusal said "stored too many times already, or ..." for them too
    crowd, i = [], 0
    while len(crowd) < 300:
        k = "c-%d" % i
        i += 1
        if amq.hash.key(k)[0] < 1 << 52:
            crowd.append(k)
    f = amq.Filter(kind="expandable")
    taken = 0
    with pytest.raises(amq.FilterFullError) as e:
        for k in crowd:
            f.add(k)
            taken += 1
    assert taken >= 256
    assert "add: too many keys fall in the bucket of this key" in str(e.value)
    assert "stored too many times" not in str(e.value)
    with pytest.raises(amq.FilterFullError, match="add: too many keys fall in the bucket of a "
                                                  "key of the batch"):
        f.add_many(crowd[taken:])
    assert all(k in f for k in crowd[:taken])


def test_kind_specific_parameters_are_not_ignored():
    with pytest.raises(ValueError, match="window_ms"):
        amq.Filter(kind="bloom", window_ms=1000, rate=10)
    with pytest.raises(ValueError, match="rate"):
        amq.Filter(kind="blocked", rate=10.0)
    with pytest.raises(ValueError, match="fingerprint_bits"):
        amq.Filter(kind="bloom", fingerprint_bits=16)
    with pytest.raises(ValueError, match="partitions"):
        amq.Filter(kind="cuckoo", partitions=4)
    amq.Filter(kind="aging", window_ms=1000, rate=10.0)
    # a scalable cuckoo filter's rate is its fingerprints' (a link's): an fpp they do not
    # meet, by keyword or position, is refused, not ignored
    with pytest.raises(ValueError, match="answers 0.000122 of absent keys a link, over fpp=1e-06"):
        amq.Filter(1000, 1e-6, kind="scalable-cuckoo")
    with pytest.raises(ValueError, match="over fpp=0.01"):
        amq.Filter(kind="scalable-cuckoo", fpp=0.01, redisbloom=True)  # 8 bits: 1.6 %
    assert amq.Filter(kind="scalable-cuckoo", fpp=0.01).fpp < 0.001
    assert amq.Filter(1000, 1e-6, kind="scalable-cuckoo", fingerprint_bits=24).fpp < 1e-6
    with pytest.raises(ValueError, match="out of range"):
        amq.Filter(1000, 1.5, kind="scalable-cuckoo")


def test_guava_takes_no_hash_seed_or_bits_per_key():
    # Guava's layout hashes and sizes as Guava does (`amq build --guava` refuses --hash and
    # --seed): a keyword it would not read is refused, not ignored
    for kw in (dict(seed=5), dict(hash="xxh3"), dict(hash="murmur3", seed=7), dict(seed=0),
               dict(bits_per_key=10.0)):
        with pytest.raises(ValueError, match="guava=True .* takes no hash, seed or bits_per_key"):
            amq.Filter(1000, guava=True, **kw)
    g = amq.Filter(1000, guava=True, hash=None)  # None: not given
    assert g.info()["probe"] == "guava"


def test_a_guava_sizing_out_of_range_says_which():
    # it said "cannot create the filter: parameter out of range"
    for cap, fpp in ((10, 0.99), (10**13, 1e-9), (1000, 1e-80)):
        with pytest.raises(ValueError, match="guava=True: Guava sizes no filter for capacity "
                                             "%d at fpp=%g" % (cap, fpp)):
            amq.Filter(cap, fpp, guava=True)
    assert amq.Filter(10, 0.9, guava=True).capacity == 10


def test_redisbloom_takes_no_hash_or_seed():
    # RedisBloom's layout hashes as RedisBloom does (`amq build --redisbloom` refuses --hash
    # and --seed); both used to be ignored
    for kind in ("scalable-bloom", "scalable-cuckoo"):
        for kw in (dict(seed=5), dict(hash="xxh3"), dict(hash="murmur3", seed=7)):
            with pytest.raises(ValueError, match="redisbloom=True .* takes no hash or seed"):
                amq.Filter(1000, 0.02, kind=kind, redisbloom=True, **kw)
        amq.Filter(1000, 0.02, kind=kind, redisbloom=True, hash=None)


def test_hash_seeds_out_of_range_are_refused():
    for fn in (amq.hash.xxh3_64, amq.hash.murmur64a):
        with pytest.raises(ValueError):
            fn("k", seed=2**64)
        with pytest.raises(ValueError):
            fn("k", seed=-1)
    with pytest.raises(ValueError):
        amq.hash.key("k", "xxh3", 2**64)
    assert amq.hash.xxh3_64("k", seed=2**64 - 1) != amq.hash.xxh3_64("k", seed=0)
    assert amq.hash.xxh3_64("k", seed=np.uint64(7)) == amq.hash.xxh3_64("k", seed=7)


def test_integer_errors_name_their_parameter():
    # every integer parameter was refused with one anonymous "expected an integer in
    # [0, 2**64)", whichever of a dozen arguments it was
    cases = [
        (lambda: amq.Filter(-5), ValueError, r"capacity must be an integer in \[0, 2\*\*64\), not -5"),
        (lambda: amq.Filter(1000, seed=2**64), ValueError, r"seed must be .* not 18446744073709551616"),
        (lambda: amq.Filter(1000, kind="cuckoo", bucket_size=-1), ValueError,
         r"bucket_size must be an integer in \[0, 2\*\*32\)"),
        (lambda: amq.Filter(1000, kind="cuckoo", fingerprint_bits=2**32), ValueError,
         "fingerprint_bits must"),
        (lambda: amq.Filter(1000, kind="cuckoo", max_kicks=-1), ValueError, "max_kicks must"),
        (lambda: amq.Filter(1000, kind="partitioned", partitions=-1), ValueError, "partitions must"),
        (lambda: amq.Filter(kind="aging", window_ms=-1, rate=10.0), ValueError, "window_ms must"),
        (lambda: amq.Filter(1000, seed=1.5), TypeError, "seed must be an integer, not float"),
        (lambda: amq.build(["a"], memory=-1), ValueError, "memory must"),
        (lambda: amq.build(["a"], arity=-1), ValueError, "arity must"),
        (lambda: amq.hash.xxh3_64("k", seed=-1), ValueError, "seed must"),
        (lambda: amq.hash.key("k", "xxh3", "7"), TypeError, "seed must be an integer, not str"),
        (lambda: amq.hash.partition_index(["a"], -1), ValueError, "partitions must"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()
    a = amq.Filter(1000, kind="aging")
    with pytest.raises(ValueError, match="now_ms must"):
        a.advance(-1)
    with pytest.raises(ValueError, match="now_ms must"):
        a.contains_at("k", -1)


def test_cuckoo_rate_past_32_bit_fingerprints_is_refused():
    with pytest.raises(ValueError, match="Bloom kind"):
        amq.Filter(kind="cuckoo", fpp=1e-12)
    assert amq.Filter(kind="cuckoo", fpp=1e-9).nbytes < 8 << 20


# ---- item 6: conventions ----------------------------------------------------------------

def test_capacity_and_fpp_come_first_as_in_rbloom_and_pyprobables():
    f = amq.Filter(1000, 0.01)
    assert f.capacity == 1000 and f.kind == "bloom"
    b = amq.Filter(1000, 0.001, kind="blocked")
    assert b.kind == "blocked"
    with pytest.raises(TypeError, match="kind is a keyword"):
        amq.Filter("blocked", 1000)
    g = amq.Filter(capacity=np.int64(1000), fpp=np.float64(0.01), seed=np.uint32(3))
    assert g.capacity == 1000 and g.info()["seed"] == 3
    with pytest.raises(TypeError):
        amq.Filter(capacity=1000.0)


def test_every_capacity_given_is_the_capacity_asked_for():
    # 2**64 - 1 stood for "not given" and silently made the default filter (1,000,000
    # keys, expandable 4,096); `amq create --capacity 18446744073709551615` refuses it
    for kind in ("bloom", "cuckoo", "expandable", "quotient", "pocket"):
        with pytest.raises(ValueError, match="18446744073709551615"):
            amq.Filter(2**64 - 1, kind=kind)
    assert amq.Filter(kind="bloom").capacity == 1_000_000
    # an aging filter by time is sized by its window and rate: a capacity beside them
    # was ignored (`amq create` refuses --capacity beside --window)
    with pytest.raises(ValueError, match="takes no capacity"):
        amq.Filter(5000, kind="aging", window_ms=1000, rate=10.0)
    with pytest.raises(ValueError, match="takes no capacity"):
        amq.Filter(capacity=5000, kind="aging", window_ms=1000, rate=10.0)
    assert amq.Filter(kind="aging", window_ms=1000, rate=10.0).capacity == 10
    assert amq.Filter(5000, kind="aging").capacity == 5000


def test_filter_can_be_subclassed():
    class Tagged(amq.Filter):
        def __init__(self, tag, *a, **kw):
            super().__init__(*a, **kw)
            self.tag = tag

    t = Tagged("users", 1000, 0.01, kind="blocked")
    t.add("a")
    assert t.tag == "users" and "a" in t and isinstance(t, amq.Filter)
    assert type(t.copy()) is Tagged
    assert type(Tagged.from_bytes(t.to_bytes())) is Tagged


class TaggedFilter(amq.Filter):
    def __init__(self, tag, *a, **kw):
        super().__init__(*a, **kw)
        self.tag = tag


class SlottedFilter(amq.Filter):
    __slots__ = ("owner",)


def test_pickle_and_copy_keep_a_subclass_attributes():
    # __reduce__ gave the file's bytes alone: a pickled or copied subclass lost its
    # attributes (AttributeError on the copy's t.tag)
    import copy
    import pickle

    t = TaggedFilter("users", 1000, kind="cuckoo")
    t.add("a")
    for c in (pickle.loads(pickle.dumps(t)), copy.copy(t), copy.deepcopy(t)):
        assert type(c) is TaggedFilter and c.tag == "users" and "a" in c and c == t
    s = SlottedFilter(100)
    s.owner = "ops"
    assert pickle.loads(pickle.dumps(s)).owner == "ops"
    assert len(amq.Filter(100).__reduce__()) == 2  # no state: the plain form


def test_copy_and_set_operations_keep_a_subclass_and_its_attributes():
    # copy(), f | g, f & g, union() and intersection() gave type(f) without its attributes
    # (AttributeError on the result's .tag), where copy.copy(f) kept them
    a = TaggedFilter("users", 1000, kind="bloom")
    b = TaggedFilter("other", 1000, kind="bloom")
    a.add_many(["a", "both"])
    b.add_many(["b", "both"])
    plain = amq.Filter(1000, kind="bloom")
    for r in (a.copy(), a | b, a & b, a.union(b), a.intersection(b), a | plain, a & plain):
        assert type(r) is TaggedFilter and r.tag == "users" and r is not a
    assert "b" in a | b and "both" in a & b and "b" not in a
    c = a.copy()
    c.tag = "changed"  # the attributes are the copy's own names
    assert a.tag == "users"
    assert type(plain | a) is amq.Filter  # the left operand's type, as for any binary op
    r = a
    r |= b
    assert r is a and a.tag == "users" and "b" in a
    s = SlottedFilter(100)
    s.owner = "ops"
    assert s.copy().owner == "ops" and (s | SlottedFilter(100)).owner == "ops"

    class Stateful(amq.Filter):
        def __getstate__(self):
            return {"n": self.n}

        def __setstate__(self, st):
            self.n = st["n"] + 1

    t = Stateful(100)
    t.n = 1
    assert t.copy().n == 2  # its own __setstate__, as copy.copy(t) calls it


def test_signatures_are_introspectable_and_match_what_the_methods_take():
    f = amq.Filter(100)
    for name in ("add", "contains", "remove", "add_many", "contains_many", "update", "merge",
                 "intersect", "union", "intersection", "issubset", "save", "to_bytes",
                 "copy", "clear", "settle", "close", "info", "hash_key"):
        inspect.signature(getattr(f, name))
    assert str(inspect.signature(f.add)) == "(key, /, *, allow_overfill=False)"
    assert list(inspect.signature(amq.Filter).parameters)[:3] == ["capacity", "fpp", "kind"]
    with pytest.raises(TypeError):
        f.add(key="a")  # positional only, as the stub says


# ---- item 7: what users of the peers reach for -------------------------------------------

@pytest.mark.parametrize("kind", ["bloom", "blocked", "partitioned"])
def test_subset_union_intersection(kind):
    a = amq.Filter(5000, 0.01, kind=kind)
    b = amq.Filter(5000, 0.01, kind=kind)
    a.update(keys("a", 1000))
    b.update(keys("a", 1000) + keys("b", 1000))
    assert a <= b and a.issubset(b) and b >= a and b.issuperset(a) and a < b
    assert not b <= a and not a < a and a <= a
    u = a.union(b, amq.Filter(5000, 0.01, kind=kind))
    assert u == b
    i = b.intersection(a)
    assert i == a and (b & a) == a
    x = a.copy()
    x &= b
    assert x == a
    with pytest.raises(amq.IncompatibleError):
        a <= amq.Filter(9000, 0.01, kind=kind)


def test_save_to_a_raw_stream_writes_every_byte(tmp):
    # a raw stream's write may take part of the bytes and say how many; the
    # rest was dropped (a file of 1,000 of 119,944 bytes, no error)
    f = amq.Filter(100000, 0.01)
    f.update(keys("k", 1000))

    class Short(io.RawIOBase):
        def __init__(self):
            self.buf = bytearray()

        def writable(self):
            return True

        def write(self, b):
            b = bytes(b)[:1000]
            self.buf += b
            return len(b)

    class Stuck(Short):
        def write(self, b):
            return 0

    class Silent:  # a duck-typed writer that returns nothing: it took it all
        def __init__(self):
            self.buf = bytearray()

        def write(self, b):
            self.buf += bytes(b)

    short = Short()
    f.save(short)
    assert bytes(short.buf) == f.to_bytes()
    silent = Silent()
    f.save(silent)
    assert bytes(silent.buf) == f.to_bytes()
    with pytest.raises(OSError, match=r"write\(\) wrote 0 bytes after 0 of the filter's "
                                      r"119944: the file is incomplete"):
        f.save(Stuck())
    with open(tmp / "raw.amq", "wb", buffering=0) as fh:  # FileIO: the raw stream itself
        f.save(fh)
    assert amq.open(tmp / "raw.amq") == f


def test_update_takes_filters_and_several_iterables():
    a = amq.Filter(5000, kind="blocked")
    b = amq.Filter(5000, kind="blocked")
    b.update(keys("b", 100))
    a.update(b, keys("c", 10), iter(keys("d", 10)))
    assert all(k in a for k in keys("b", 100) + keys("c", 10) + keys("d", 10))


def test_bytes_file_objects_and_approx_items(tmp):
    f = amq.Filter(10000, 0.01, kind="blocked")
    f.update(keys("k", 3000))
    assert bytes(f) == f.to_bytes()
    buf = io.BytesIO()
    f.save(buf)
    assert amq.Filter.from_bytes(buf.getvalue()) == f
    with open(tmp / "f.amq", "wb") as fh:
        f.save(fh)
    assert amq.open(tmp / "f.amq") == f
    assert abs(f.approx_items - 3000) < 150
    u = f | f  # the bits of one filter: the estimate stays
    assert abs(u.approx_items - 3000) < 150
    c = amq.Filter(1000, kind="cuckoo")
    c.update(keys("k", 10))
    assert c.approx_items == 10.0
    with pytest.raises(amq.UnsupportedError):
        c <= c.copy()


def test_a_seed_the_hash_cannot_take_is_named():
    # build said only "parameter out of range", Filter "hash algorithm 2 ..."
    for make in (lambda **kw: amq.build(["x"], "ribbon", **kw), lambda **kw: amq.Filter(10, **kw),
                 lambda **kw: amq.Filter(10, kind="cuckoo", **kw)):
        with pytest.raises(ValueError, match=r"hash murmur3 cannot take seed 1099511627776 "
                                             r"\(its seeds: 0 to 2\*\*32 - 1\)"):
            make(hash="murmur3", seed=2**40)
        with pytest.raises(ValueError, match=r"hash redisbloom cannot take seed 1 "
                                             r"\(its seeds: 0\)"):
            make(hash="redisbloom", seed=1)
        make(hash="murmur3", seed=2**32 - 1)
    for fn in (lambda: amq.hash.key("k", "murmur3", 2**40),
               lambda: amq.hash.partition_index(["k"], 4, "murmur3", 2**40)):
        with pytest.raises(ValueError, match="hash murmur3 cannot take seed 1099511627776"):
            fn()


def test_errors_say_what_was_asked_of_which_kind_and_name_a_file_once(tmp):
    # the library's "operation not supported by this kind of filter" said neither the
    # operation nor the kind; file errors named the path twice ("x: x: file exists")
    with pytest.raises(amq.UnsupportedError,
                       match=r"remove: a bloom filter cannot remove keys \(the kinds that "
                             r"can: cuckoo, scalable-cuckoo, expandable\)"):
        amq.Filter(100).remove("k")
    with pytest.raises(amq.UnsupportedError, match="remove: an aging filter cannot remove"):
        amq.Filter(100, kind="aging").remove("k")
    static = amq.build(["k"], "ribbon")
    for what, call in (("add", lambda: static.add("x")), ("add", lambda: static.add_many(["x"])),
                       ("remove", lambda: static.remove("k")), ("clear", static.clear)):
        with pytest.raises(amq.UnsupportedError,
                           match="%s: a ribbon filter is static: amq.build" % what):
            call()
    with pytest.raises(ValueError, match="advance: an expandable filter has no clock"):
        amq.Filter(kind="expandable").advance(5)
    with pytest.raises(amq.UnsupportedError, match="advance: this aging filter ages by count"):
        amq.Filter(100, kind="aging").advance(5)
    p = str(tmp / "x.amq")
    f = amq.Filter(100)
    f.save(p)
    (tmp / "t.txt").write_text("text\n")
    for call in (lambda: f.save(p, overwrite=False), lambda: amq.open(tmp / "t.txt"),
                 lambda: f.save(tmp / "t.txt"), lambda: amq.open(tmp)):
        with pytest.raises((OSError, ValueError)) as e:
            call()
        assert str(e.value).count(str(tmp)) == 1, str(e.value)
    with pytest.raises(ValueError, match="^invalid path: empty$"):
        f.save("")
