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
