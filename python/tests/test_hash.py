"""Hash vectors (the same references as tests/unit/test_hash.c)."""
import pytest

import amq


def test_murmur3():
    assert amq.hash.murmur3_32("abc") == 0xB3DD93FA
    assert amq.hash.murmur3_32("The quick brown fox jumps over the lazy dog",
                               0x9747B28C) == 0x2FA826CD
    assert amq.hash.murmur3_32(b"a" * 256, 0x9747B28C) == 0x37405BDC
    assert amq.hash.murmur3_128("hello") == (0x5B1E906A48AE1D19 << 64) | 0xCBD8A7B341BD9B02
    assert amq.hash.murmur3_128(b"") == 0
    with pytest.raises(ValueError):
        amq.hash.murmur3_32("a", 1 << 32)


def test_others():
    assert amq.hash.fnv1a_32("foobar") == 0xBF9CF968
    assert amq.hash.fnv1a_64(b"foobar") == 0x85944171F73967E8
    assert amq.hash.xxh3_64(b"") == 0x2D06800538D394C2
    assert amq.hash.murmur64a("Lorem ipsum dolor sit amet, consectetur adipisicing elit",
                              0xE17A1465) == 0x0920E0C1B7EEB261


def test_redisbloom_pair():
    h1, h2 = amq.hash.key("item", "redisbloom")
    assert h1 == amq.hash.murmur64a("item", 0xC6A4A7935BD1E995)
    assert h2 == amq.hash.murmur64a("item", h1)


def test_hash_names_from_the_library():
    """key()'s docstring and every unknown-hash error name the library's hashes, from its
    table: each name listed works, and a name it does not know is refused naming them."""
    names = ("xxh3", "murmur3", "redisbloom", "murmur64a", "mulshift", "vmulshift", "mulmix")
    assert amq.hash.key.__doc__.count("'") == 2 * len(names)
    for n in names:
        assert "'%s'" % n in amq.hash.key.__doc__
        amq.hash.key(b"k", n)
    listed = "(%s)" % ", ".join(names)
    for call in (lambda: amq.hash.key(b"k", "md5"),
                 lambda: amq.hash.partition_index([b"k"], 4, "md5"),
                 lambda: amq.Filter(kind="blocked", capacity=100, hash="md5"),
                 lambda: amq.build([b"a", b"b"], kind="fuse", hash="md5")):
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == "unknown hash 'md5' " + listed
