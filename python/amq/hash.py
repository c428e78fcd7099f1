"""The hash functions of libamq, bit-exact with their references.

A key is a str (hashed as UTF-8), bytes or any buffer.
"""
from . import _amq

__all__ = ["murmur3_32", "murmur3_128", "murmur64a", "xxh3_64", "fnv1a_32",
           "fnv1a_64", "key", "partition_index"]


def _key_bytes(k):
    # a key as amq.Filter takes it: a str as UTF-8, bytes, any buffer (amq.redis and
    # amq.redistype send keys so, where redis-py would send an int as its digits)
    if isinstance(k, bytes):
        return k
    if isinstance(k, str):
        return k.encode("utf-8")
    try:
        return bytes(memoryview(k))
    except TypeError:
        raise TypeError("a key must be str, bytes or a buffer, not %s"
                        % type(k).__name__) from None


def murmur3_32(key, seed=0):
    """MurmurHash3_x86_32 (SMHasher) as an unsigned int; seed < 2**32."""
    return _amq._murmur3_32(key, seed)


def murmur3_128(key, seed=0):
    """MurmurHash3_x64_128 as one 128-bit int: the reference's 16 output bytes
    read little-endian (h1 in the low 64 bits, as mmh3.hash128); seed < 2**32."""
    return _amq._murmur3_128(key, seed)


def murmur64a(key, seed=0):
    """MurmurHash64A (64-bit MurmurHash2), as RedisBloom uses it."""
    return _amq._murmur64a(key, seed)


def xxh3_64(key, seed=0):
    """XXH3-64 with a seed (the system's libxxhash)."""
    return _amq._xxh3_64(key, seed)


def fnv1a_32(key):
    """FNV-1a, 32 bits."""
    return _amq._fnv1a_32(key)


def fnv1a_64(key):
    """FNV-1a, 64 bits."""
    return _amq._fnv1a_64(key)


def key(key, algo="xxh3", seed=0):
    return _amq._hash_key(key, algo, seed)


# (the names from the library's own table, so that this list cannot drift from it)
key.__doc__ = ("The (h1, h2) pair a filter with this hash algorithm (%s) and seed derives its "
               "probes from." % ", ".join(repr(n) for n in _amq._hash_names().split(", ")))


def partition_index(keys, partitions, algo="xxh3", seed=0):
    """The partition of `partitions` each key of a sequence goes to in a partitioned filter
    with this hash algorithm and seed (the library's amq_partition_index): a list of ints."""
    return _amq._partition_index(keys, partitions, algo, seed)
