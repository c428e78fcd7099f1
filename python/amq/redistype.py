"""amq.redistype: amq.so's own Redis/Valkey data type (AMQ.* commands) over redis-py.

A key holds a filter of any amq kind; its bytes are the amq file's, so a local
amq.Filter moves into a key and back unchanged (docs/redis.md, "AMQ.*").

    >>> import redis, amq
    >>> from amq import redistype as rt
    >>> r = redis.Redis()
    >>> rt.create(r, "users", "blocked", 1_000_000, 0.01)
    >>> rt.add_many(r, "users", ["alice", "bob"])
    [True, True]
    >>> rt.contains_many(r, "users", ["alice", "carol"])      # one round trip
    [True, False]
    >>> rt.load(r, "static", amq.build(keys, kind="ribbon"))  # a local filter into a key
    >>> f = rt.fetch(r, "users")                              # a key into an amq.Filter

Each function takes any redis-py client (redis.Redis, a pipeline-capable
cluster client for single-key calls).  Server errors come back as
redis.ResponseError with amq.so's message.
"""
from typing import Any, Iterable, List, Optional

from ._amq import Filter
from .hash import _key_bytes

__all__ = ["create", "add_many", "contains_many", "load", "fetch", "STAGE_SUFFIX"]

#: What load() appends to the key for its staging key (in the key's hash slot).
STAGE_SUFFIX = ".amq-load"

# Bytes per AMQ.LOADCHUNK: well under the server's 512 MB bulk limit.
_CHUNK = 16 << 20

_OPTIONS = {
    "maxsize": "MAXSIZE", "seed": "SEED", "fingerprint_bits": "FPBITS",
    "bucket_size": "BUCKETSIZE", "expansion": "EXPANSION", "partitions": "PARTITIONS",
    "bits": "BITS", "hashes": "HASHES", "bits_per_key": "BITSPERKEY",
}


def _flag(v: Any) -> bool:
    return bool(v) if not isinstance(v, bytes) else v not in (b"0", b"")


def create(r: Any, key: str, kind: str, capacity: int, error_rate: float,
           nonscaling: bool = False, **options: Any) -> None:
    """AMQ.CREATE key kind capacity error_rate [options]: an empty filter.

    options: maxsize, seed, fingerprint_bits, bucket_size, expansion,
    partitions, bits + hashes (exact Bloom geometry), bits_per_key.
    """
    args: List[Any] = ["AMQ.CREATE", key, kind, int(capacity), repr(float(error_rate))]
    for name, value in options.items():
        if name not in _OPTIONS:
            raise TypeError("create() got an unexpected option %r" % name)
        args += [_OPTIONS[name], value]
    if nonscaling:
        args.append("NONSCALING")
    r.execute_command(*args)


def _items(items: Iterable[Any]) -> List[bytes]:
    if isinstance(items, (str, bytes)):
        raise TypeError("a batch of keys must be a sequence or an iterable, not a single %s: "
                        "pass [key]" % type(items).__name__)
    return [_key_bytes(k) for k in items]


def add_many(r: Any, key: str, items: Iterable[Any]) -> List[bool]:
    """AMQ.MADD: True per item added as new, False if it may have been there
    (an item the server refused - a full cuckoo filter, the size cap - raises).
    Items are keys as amq.Filter takes them: str (sent as UTF-8), bytes or any
    buffer; another type raises TypeError and nothing is sent."""
    items = _items(items)
    if not items:
        return []
    out = r.execute_command("AMQ.MADD", key, *items)
    for x in out:
        if isinstance(x, Exception):
            raise x
    return [_flag(x) for x in out]


def contains_many(r: Any, key: str, items: Iterable[Any]) -> List[bool]:
    """AMQ.MEXISTS in one round trip (the server hashes every item first and
    queries them in one batch).  A missing key answers False for all.  Items
    as add_many takes them."""
    items = _items(items)
    if not items:
        return []
    return [_flag(x) for x in r.execute_command("AMQ.MEXISTS", key, *items)]


def _stage_key(key: str) -> str:
    # in key's hash slot: its {tag} if it has one, else the whole key as the tag
    lb = key.find("{")
    if lb >= 0:
        rb = key.find("}", lb + 1)
        if rb > lb + 1:
            return key + STAGE_SUFFIX
    return "{" + key + "}" + STAGE_SUFFIX


def load(r: Any, key: str, flt: Filter, replace: bool = False,
         maxsize: Optional[int] = None) -> bool:
    """Loads a local amq.Filter into key (any kind, static ones included).

    The bytes go to a staging key in key's hash slot through AMQ.LOADCHUNK,
    in one pipelined round trip, then RENAME (replace=True) or RENAMENX: an
    existing key is left as it was unless replace.  Returns True when key
    now holds the filter.  maxsize: the key's own size cap in bytes.
    """
    data = flt.to_bytes()
    stage = _stage_key(key)
    p = r.pipeline(transaction=False)
    p.delete(stage)
    off = 0
    first = True
    while off < len(data):
        piece = data[off:off + _CHUNK]
        off += len(piece)
        extra = ["MAXSIZE", int(maxsize)] if first and maxsize else []
        p.execute_command("AMQ.LOADCHUNK", stage, off, piece, *extra)
        first = False
    if replace:
        p.rename(stage, key)
    else:
        p.renamenx(stage, key)
    p.delete(stage)
    res = p.execute(raise_on_error=True)
    return bool(res[-2])


def fetch(r: Any, key: str) -> Filter:
    """The filter in key as a local amq.Filter (AMQ.SCANDUMP chunks; the
    library checks every byte, the payload checksum included).  A filter
    changed between the chunks fails that check: fetch again."""
    parts = []
    it = 0
    while True:
        it, data = r.execute_command("AMQ.SCANDUMP", key, it)
        it = int(it)
        if it == 0:
            break
        parts.append(bytes(data))
    return Filter.from_bytes(b"".join(parts))
