"""A union counts the keys of both sides once (issue 45): len() after |, |=
and merge() is the union's count, estimated from its bits, not a sum."""
import pytest

import amq
from conftest import keys

BLOOMS = ["bloom", "blocked", "partitioned"]


@pytest.mark.parametrize("kind", BLOOMS)
def test_union_counts_shared_keys_once(kind):
    both = keys("k", 90000)
    a = amq.Filter(kind=kind, capacity=100000, fpp=0.01)
    b = amq.Filter(kind=kind, capacity=100000, fpp=0.01)
    a.update(both[:60000])
    b.update(both[30000:])
    # a filter with itself: exactly its own count (the OR changes no bit)
    assert len(a | a) == len(a)
    # 60k and 60k sharing 30k: 90k distinct, within 1 %
    u = a | b
    assert 89100 <= len(u) <= 90900, (kind, len(u), len(a), len(b))
    assert all(k in u for k in both)
    a |= b
    assert len(a) == len(u)
    a.merge(b)
    assert len(a) == len(u)
