"""The expandable kind through Python: no capacity given, it grows and
keeps every key; removals."""
import amq


def test_expandable_without_capacity_grows():
    f = amq.Filter(kind="expandable")
    start = f.capacity
    assert 4096 <= start < 8192
    keys = [b"k%d" % i for i in range(200_000)]
    for k in keys:
        f.add(k)
    assert f.capacity > 20 * start
    assert all(k in f for k in keys)
    fp = sum(1 for i in range(100_000) if (b"x%d" % i) in f)
    assert fp <= 1000
    assert f.remove(keys[0]) is True
    assert all(k in f for k in keys[1:])


def test_expandable_pickled_mid_doubling():
    """Pickled, copied and saved while a doubling is half-way (the old table
    still held: nbytes over the buckets and stash of the new one), the filter
    comes back as its split table, answering exactly as before."""
    import pickle

    f = amq.Filter(kind="expandable", capacity=1000)

    def pending():
        i = f.info()
        return i["buckets"] == 1 << 13 and f.nbytes > i["buckets"] * 64 + i["stash_cells"] * 8

    n = 0
    while n < 210_000 and not pending():  # 2^12 old buckets: 1,024 adds
        f.add(b"k%d" % n)
        n += 1
    assert pending()
    probe = [b"k%d" % i for i in range(n)] + [b"x%d" % i for i in range(50_000)]
    want = [k in f for k in probe]
    assert all(want[:n])
    for g in (pickle.loads(pickle.dumps(f)), f.copy(), amq.Filter.from_bytes(f.to_bytes())):
        assert [k in g for k in probe] == want
        g.add(b"after")
        assert all(k in g for k in probe[:n])
