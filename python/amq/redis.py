"""amq.redis - one logical filter sharded over the keys of a Redis / Valkey server or Cluster.

    >>> import redis, amq.redis
    >>> from redis.cluster import RedisCluster
    >>> rc = RedisCluster(host="127.0.0.1", port=7001)
    >>> f = amq.redis.ShardedFilter.create(rc, "users:seen", capacity=1_000_000_000,
    ...                                    error_rate=0.01, shards=12)
    >>> f.add_many(["alice", "bob"], wait=1)     # acknowledged by a replica of each shard
    2
    >>> f.contains_many(["alice", "carol"])       # one pipeline per node, order kept
    array([ True, False])
    >>> g = amq.redis.ShardedFilter(rc, "users:seen")   # opened from NAME alone

The protocol (key names, the item's shard, the metadata key, failure semantics) is
docs/cluster.md; any client in any language can follow it.  A filter NAME is

  - NAME: a string holding the metadata (JSON): format version, N, the backend (which
    command family serves the shards), the N shard keys, the shard hash and seed, and each
    shard's parameters;
  - N shard keys NAME:{i.j}, whose hash tags put them on slots spread over the slot range;
  - an item's shard: (XXH3-64(item, seed) * N) >> 64; or, for a partitioned filter cut into
    N runs of its P partitions by `amq export --to redis --shards N --routing partition`
    (metadata version 2), the item's partition in the filter over P/N.

A shard that cannot be reached, or whose key is missing, is an error naming the shard and
its node (ShardUnavailableError, MissingShardError) - never an "absent".  MOVED and ASK
redirections (slot migration, failover) are followed and never reach the caller.

The shards are served by RedisBloom's BF.* / CF.* commands (amq.so, Redis 8's RedisBloom,
valkey-bloom for BF.*) or by amq.so's own AMQ.* type (any amq kind per shard); each command
family is a small backend object (BloomBackend, CuckooBackend, AmqBackend).
"""
import json
import logging
import operator
import re
import struct
import sys
import time

import redis as _redis
from redis import exceptions as _rex

from . import hash as _hash

__all__ = [
    "ShardedFilter", "ShardError", "ShardUnavailableError", "MissingShardError",
    "NotReplicatedError", "FilterNotFoundError", "FilterExistsError", "ROUTINGS",
    "BloomBackend", "CuckooBackend", "AmqBackend", "BACKENDS", "FORMAT", "VERSION", "SHARD_SEED",
    "shard_keys", "shard_tag", "shard_of", "key_slot", "load_resp", "MAX_SHARDS",
]

#: The metadata's "format" and the highest version this module reads: 1 (items routed by
#: the protocol's hash), 2 (also "routing": "partition", a partitioned filter cut into slices).
FORMAT = "amq-sharded-filter"
VERSION = 2
#: The routings: "hash" (version 1) and "partition" (version 2; docs/cluster.md).
ROUTINGS = ("hash", "partition")
#: The shard hash's seed: XXH3-64 with a seed no filter inside a shard uses
#: (RedisBloom hashes with MurmurHash64A, amq's kinds with XXH3 seed 0 by default).
SHARD_SEED = 0x616D712E73686172  # "amq.shar"
#: Shards per filter at most: the tag search stays a few thousand CRC16s per shard.
MAX_SHARDS = 1024
_HEX64 = re.compile(r"(0[xX])?[0-9a-fA-F]{1,16}\Z")
SLOTS = 16384
#: Items per BF.INSERT / BF.MEXISTS command inside a pipeline.
BATCH = 1000


# ---- errors ------------------------------------------------------------------------------

class ShardError(_rex.RedisError):
    """A shard answered with an error: .name, .shard, .key, .node say which."""

    def __init__(self, message, name=None, shard=None, key=None, node=None, cause=None,
                 failures=()):
        super().__init__(message)
        self.name, self.shard, self.key, self.node = name, shard, key, node
        self.cause = cause
        #: every (shard, node, cause) that failed in the call, the first one named above
        self.failures = list(failures)


class ShardUnavailableError(ShardError, _rex.ConnectionError):
    """A shard's node could not be reached (or its slots were down) within retry_timeout."""


class MissingShardError(ShardError):
    """A shard's key does not exist on the node that owns its slot (lost, or deleted)."""


class NotReplicatedError(ShardError):
    """WAIT returned fewer replicas than asked for: the adds are on the primary only."""


class FilterNotFoundError(KeyError):
    """No sharded filter of that name (its metadata key is missing)."""


class FilterExistsError(_rex.ResponseError):
    """create() found the metadata key, or one of the shard keys, already there."""


# ---- hashing and placement ---------------------------------------------------------------

def _crc16_table():
    t = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        t.append(c & 0xFFFF)
    return t


_CRC16 = _crc16_table()


def key_slot(tag):
    """The cluster slot of a hash tag: CRC16-XMODEM(tag) mod 16384 (bytes or str)."""
    if isinstance(tag, str):
        tag = tag.encode()
    crc = 0
    for b in tag:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16[((crc >> 8) ^ b) & 0xFF]
    return crc & (SLOTS - 1)


def shard_tag(i, n):
    """The hash tag of shard i of n: "i.j" for the least j >= 0 whose slot lies in the
    middle half of the i-th n-th of the slot range (docs/cluster.md, "Placement")."""
    if not (0 <= i < n <= MAX_SHARDS):
        raise ValueError("shard %d of %d: need 0 <= shard < shards <= %d" % (i, n, MAX_SHARDS))
    lo, hi = i * SLOTS // n, (i + 1) * SLOTS // n
    w = hi - lo
    band_lo = lo + w // 4
    band_hi = band_lo + max(1, w // 2)
    j = 0
    while True:
        tag = "%d.%d" % (i, j)
        if band_lo <= key_slot(tag) < band_hi:
            return tag
        j += 1


def shard_keys(name, n):
    """The n shard keys of filter NAME: NAME:{tag}."""
    _check_name(name)
    return ["%s:{%s}" % (name, shard_tag(i, n)) for i in range(n)]


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise ValueError("a filter name is a non-empty str")
    if "{" in name or "}" in name:
        raise ValueError("filter name %r: '{' and '}' are reserved for the shards' hash tags "
                         "(a tag in NAME would put every shard on one slot)" % name)


def shard_of(item, shards, seed=SHARD_SEED):
    """The shard of one item: (XXH3-64(item, seed) * shards) >> 64."""
    return (_hash.xxh3_64(_key(item), seed) * shards) >> 64


# ---- keys, as the rest of the package takes them -----------------------------------------

_np = []


def _numpy():
    """numpy when it is installed (answers are then numpy bool arrays), else None."""
    if not _np:
        try:
            import numpy
        except ImportError:
            numpy = None
        _np.append(numpy)
    return _np[0]


_key = _hash._key_bytes


def _keys(keys, width=0):
    """A list of bytes from a batch: a sequence of str/bytes/buffers, a numpy array of
    dtype S<N> (trailing NULs dropped, as numpy reads it), V<N>, U<N>, object, a 2-D uint8
    array (one key per row), or any buffer with width=N."""
    if isinstance(keys, str) or (isinstance(keys, bytes) and not width):
        raise TypeError("a single str or bytes is not a batch of keys: pass [key]")
    np = _numpy()
    raw = None
    if np is not None and isinstance(keys, np.ndarray) and not width:
        dt = keys.dtype
        if keys.ndim == 2 and dt == np.uint8:
            width, raw = keys.shape[1], keys.tobytes()
        elif keys.ndim != 1:
            raise TypeError("cannot tell the keys of a %d-D array of dtype %s" % (keys.ndim, dt))
        elif dt.kind == "S":
            return keys.tolist()
        elif dt.kind == "V":
            width, raw = dt.itemsize, keys.tobytes()
        elif dt.kind in "UO":
            return [_key(k) for k in keys.tolist()]
        elif dt == np.uint64:
            raise TypeError("a uint64 array holds 64-bit hashes, which a server's filter cannot "
                            "take: pass arr.view('V8') for 8-byte keys")
        else:
            raise TypeError("cannot tell the keys of an array of dtype %s: use S<N>, V<N> or "
                            "a 2-D uint8 array" % dt)
    elif width:
        raw = memoryview(keys).tobytes()
    if width:
        if width < 0 or len(raw) % width:
            raise ValueError("a buffer of %d bytes does not hold keys of width %d"
                             % (len(raw), width))
        return [raw[i:i + width] for i in range(0, len(raw), width)]
    if isinstance(keys, (bytearray, memoryview)):
        raise TypeError("a buffer is a batch of fixed-width keys only with width=N")
    return [_key(k) for k in keys]


def _bools(values):
    np = _numpy()
    if np is not None:
        return np.array(values, dtype=bool)
    return bytearray(values)


# ---- backends: one object per command family ---------------------------------------------

def _info_dict(reply):
    if isinstance(reply, dict):
        items = reply.items()
    else:
        items = zip(reply[0::2], reply[1::2])
    out = {}
    for k, v in items:
        k = k.decode() if isinstance(k, bytes) else str(k)
        out[k] = v.decode() if isinstance(v, bytes) else v
    return out


class BloomBackend:
    """Shards as scalable Bloom filters under BF.* (amq.so, RedisBloom, valkey-bloom)."""
    family = "bf"
    kind = "bloom"
    #: BF.INFO fields that add up over the shards
    summed = ("Capacity", "Size", "Number of filters", "Number of items inserted")
    items_field = "Number of items inserted"

    def params(self, per_shard_capacity, error_rate=0.01, expansion=None, nonscaling=False,
               **extra):
        if extra:
            raise TypeError("a Bloom shard takes no %s" % ", ".join(sorted(extra)))
        if not 0.0 < error_rate < 1.0:  # NaN too
            raise ValueError("error_rate must be in (0, 1), not %r" % (error_rate,))
        p = {"error_rate": error_rate, "capacity": per_shard_capacity}
        if nonscaling:
            p["nonscaling"] = True
        elif expansion is not None:
            p["expansion"] = int(expansion)
        return p

    def reserve(self, key, p):
        cmd = ["BF.RESERVE", key, repr(float(p["error_rate"])), int(p["capacity"])]
        if p.get("nonscaling"):
            cmd.append("NONSCALING")
        elif p.get("expansion") is not None:
            cmd += ["EXPANSION", int(p["expansion"])]
        return tuple(cmd)

    def insert(self, key, items):
        # NOCREATE: a lost shard key is an error, never a new empty shard.
        return ("BF.INSERT", key, "NOCREATE", "ITEMS") + tuple(items)

    def mexists(self, key, items):
        return ("BF.MEXISTS", key) + tuple(items)

    def removable(self, p):
        return False

    def info(self, key):
        return ("BF.INFO", key)

    scandump = "BF.SCANDUMP"
    loadchunk = "BF.LOADCHUNK"


class CuckooBackend:
    """Shards as scalable cuckoo filters under CF.* (amq.so, RedisBloom); items can be removed."""
    family = "cf"
    kind = "cuckoo"
    summed = ("Size", "Number of buckets", "Number of filters", "Number of items inserted",
              "Number of items deleted")
    items_field = "Number of items inserted"

    def params(self, per_shard_capacity, bucket_size=None, max_iterations=None, expansion=None,
               error_rate=None, **extra):
        if extra:
            raise TypeError("a cuckoo shard takes no %s" % ", ".join(sorted(extra)))
        if error_rate is not None:
            raise TypeError("a cuckoo shard's error rate follows from its bucket size "
                            "(RedisBloom: 8-bit fingerprints); pass bucket_size")
        p = {"capacity": per_shard_capacity}
        for k, v in (("bucket_size", bucket_size), ("max_iterations", max_iterations),
                     ("expansion", expansion)):
            if v is not None:
                p[k] = int(v)
        return p

    def reserve(self, key, p):
        cmd = ["CF.RESERVE", key, int(p["capacity"])]
        for opt, k in (("BUCKETSIZE", "bucket_size"), ("MAXITERATIONS", "max_iterations"),
                       ("EXPANSION", "expansion")):
            if p.get(k) is not None:
                cmd += [opt, int(p[k])]
        return tuple(cmd)

    def insert(self, key, items):
        return ("CF.INSERT", key, "NOCREATE", "ITEMS") + tuple(items)

    def mexists(self, key, items):
        return ("CF.MEXISTS", key) + tuple(items)

    def remove(self, key, item):
        return ("CF.DEL", key, item)

    def removable(self, p):
        return True

    def info(self, key):
        return ("CF.INFO", key)

    scandump = "CF.SCANDUMP"
    loadchunk = "CF.LOADCHUNK"

    def empty_chunks(self, info):
        """(iterator, data) of the LOADCHUNKs that remake an empty shard, for which CF.SCANDUMP
        answers [0, ""] at once (RedisBloom's reply for a filter of no items): RedisBloom's
        38-byte header for one link of the shard's first link's buckets, then those buckets,
        zero, in chunks of 16 MiB (as `amq export --to redis` writes an empty filter)."""
        nb, bs = int(info["Number of buckets"]), int(info["Bucket size"])
        yield 1, struct.pack("<QQQQHHH", 0, nb, int(info["Number of items deleted"]), 1, bs,
                             int(info["Max iterations"]), int(info["Expansion rate"]))
        size, off = nb * bs, 0
        while off < size:
            n = min(1 << 24, size - off)
            off += n
            yield off + 1, bytes(n)


class AmqBackend:
    """Shards as amq.so's own type under AMQ.* (docs/redis.md): any kind AMQ.CREATE makes -
    blocked, partitioned, classic Bloom, cuckoo of any fingerprint width, the scalable kinds,
    aging by count, expandable, quotient, pocket (their capacity: where each shard starts).  Needs
    amq.so loaded on every node."""
    family = "amq"
    kind = "amq"
    #: AMQ.INFO fields that add up over the shards
    summed = ("capacity", "items", "bytes", "serialized_bytes")
    items_field = "items"
    #: the kinds AMQ.DEL removes from
    removable_kinds = ("cuckoo", "scalable-cuckoo")
    #: AMQ.CREATE's options by the params' names (flags take True)
    options = (("fpbits", "FPBITS"), ("bucket_size", "BUCKETSIZE"), ("expansion", "EXPANSION"),
               ("partitions", "PARTITIONS"), ("bits", "BITS"), ("hashes", "HASHES"),
               ("bits_per_key", "BITSPERKEY"), ("seed", "SEED"), ("maxsize", "MAXSIZE"))

    def params(self, per_shard_capacity, kind="blocked", error_rate=0.01, nonscaling=False,
               **opts):
        if not isinstance(kind, str) or not kind:
            raise ValueError("an amq shard needs its kind (blocked, cuckoo, ...), not %r"
                             % (kind,))
        if kind in ("fuse", "ribbon"):
            # Static kinds are built from their keys, never created empty (AMQ.CREATE refuses).
            raise ValueError("%s filters are static: a sharded filter needs a kind that takes "
                             "adds" % kind)
        if not 0.0 < error_rate < 1.0:  # NaN too
            raise ValueError("error_rate must be in (0, 1), not %r" % (error_rate,))
        names = dict(self.options)
        bad = sorted(k for k in opts if k not in names)
        if bad:
            raise TypeError("an amq shard takes no %s (options: %s, nonscaling)"
                            % (", ".join(bad), ", ".join(names)))
        p = {"kind": kind, "capacity": per_shard_capacity, "error_rate": error_rate}
        if nonscaling:
            p["nonscaling"] = True
        for k, v in opts.items():
            if v is not None:
                p[k] = int(v)
        return p

    def reserve(self, key, p):
        cmd = ["AMQ.CREATE", key, p["kind"], int(p["capacity"]), repr(float(p["error_rate"]))]
        for k, opt in self.options:
            if p.get(k) is not None:
                cmd += [opt, int(p[k])]
        if p.get("nonscaling"):
            cmd.append("NONSCALING")
        return tuple(cmd)

    def insert(self, key, items):
        # AMQ.MADD never creates its key: a lost shard is "ERR not found".
        return ("AMQ.MADD", key) + tuple(items)

    def mexists(self, key, items):
        return ("AMQ.MEXISTS", key) + tuple(items)

    def remove(self, key, item):
        return ("AMQ.DEL", key, item)

    def removable(self, p):
        return p.get("kind") in self.removable_kinds

    def info(self, key):
        return ("AMQ.INFO", key)

    scandump = "AMQ.SCANDUMP"
    loadchunk = "AMQ.LOADCHUNK"


#: The backends by the metadata's "backend" field.
BACKENDS = {"bf": BloomBackend(), "cf": CuckooBackend(), "amq": AmqBackend()}
_KINDS = {"bloom": "bf", "bf": "bf", "cuckoo": "cf", "cf": "cf"}


# ---- where a key lives: one server, or a cluster -----------------------------------------

class _Single:
    """A plain Redis client: every shard on its one server."""

    def __init__(self, client):
        self.client = client
        kw = client.connection_pool.connection_kwargs
        self.name = "%s:%s" % (kw.get("host", "?"), kw.get("port", "?")) \
            if "path" not in kw else kw["path"]

    def node(self, key, ask=None):
        return self.name, self.client

    def primaries(self):
        return 1

    def moved(self, e):
        pass

    def refresh(self):
        pass


class _Cluster:
    """A redis-py RedisCluster: the slot's primary from its map, kept fresh by MOVED."""

    def __init__(self, client):
        self.client = client

    def node(self, key, ask=None):
        rc = self.client
        if ask is not None:
            node = rc.get_node(host=ask[0], port=ask[1])
            if node is None:
                from redis.cluster import ClusterNode, PRIMARY
                node = ClusterNode(ask[0], ask[1], PRIMARY)
                rc.nodes_manager.nodes_cache[node.name] = node
        else:
            node = rc.nodes_manager.get_node_from_slot(rc.keyslot(key))
        return node.name, rc.get_redis_connection(node)

    def primaries(self):
        return max(1, len(self.client.get_primaries()))

    def moved(self, e):
        # redis-py keeps one MOVED and applies it at the next lookup, so the MOVED of k shards
        # read in one round would cost k rounds; each is applied as it arrives instead.
        nm = self.client.nodes_manager
        nm.update_moved_exception(e)
        try:
            nm.get_node_from_slot(e.slot_id)
        except _rex.SlotNotCoveredError:
            pass  # the next round's lookup reports it

    def refresh(self):
        # redis-py logs a traceback for each seed node it cannot reach; the call reports
        # what matters (the shard and its node) if the retries run out.
        log = logging.getLogger("redis.cluster")
        log.addFilter(_quiet)
        try:
            self.client.nodes_manager.initialize()
        except (_rex.RedisError, OSError):
            pass  # nothing reachable now: the next round fails and is retried or reported
        finally:
            log.removeFilter(_quiet)


def _quiet(record):
    return record.levelno > logging.ERROR


def _topology(client):
    from redis.cluster import RedisCluster
    if isinstance(client, RedisCluster):
        return _Cluster(client)
    if isinstance(client, _redis.Redis):
        return _Single(client)
    raise TypeError("client must be a redis.Redis or a redis.cluster.RedisCluster, not %s"
                    % type(client).__name__)


_TRANSIENT = (_rex.TryAgainError, _rex.ClusterDownError, _rex.MasterDownError,
              _rex.BusyLoadingError)
_UNREACHABLE = (_rex.ConnectionError, _rex.TimeoutError, OSError)
_MAX_REDIRECTS = 16  # a shard's redirections in one call: a loop, not a migration


def _count(v):
    """v as an int (numpy integers too), None if it is not an integer."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _check_batch(batch, wait=None):
    """batch: items a command, 1 or more; wait: None or replicas to wait for, 0 or more."""
    b = _count(batch)
    if b is None or b < 1:
        raise ValueError("batch=%r: items a command, 1 or more" % (batch,))
    w = _count(wait)
    if wait is not None and (w is None or w < 0):
        raise ValueError("wait=%r: the replicas to wait for, an int of 0 or more, or None"
                         % (wait,))


def _run(topo, requests, keys, label, retry_timeout, wait=None, wait_timeout=1000, stats=None):
    """Sends every shard's commands, one pipeline per node per round, all nodes' requests
    written before any reply is read.  requests: {shard: [command tuple, ...]}.  Returns
    {shard: [reply, ...]}; a reply that is an error other than a redirection or a transient
    cluster state is returned as the exception object for the caller to judge.  stats, a
    dict, counts the MOVED and ASK redirections followed and the shards retried."""
    if stats is None:
        stats = {}
    results = {}
    pending = dict(requests)
    asking = {}
    where = {}
    redirects = {}
    deadline = None
    pause = 0.02
    while pending:
        groups = {}
        failed = {}
        for s in sorted(pending):
            try:
                name, client = topo.node(keys[s], asking.get(s))
            except (_rex.RedisClusterException, _rex.SlotNotCoveredError) as e:
                failed[s] = (where.get(s, "?"), e)
                continue
            where[s] = name
            groups.setdefault(name, (client, []))[1].append(s)
        in_flight = []
        for name, (client, shards) in groups.items():
            cmds = []
            for s in shards:
                for c in pending[s]:
                    if s in asking:
                        cmds.append(("ASKING",))
                    cmds.append(c)
            if wait:
                cmds.append(("WAIT", int(wait), int(wait_timeout)))
            conn = None
            try:
                conn = client.connection_pool.get_connection("amq-shards")
                conn.send_packed_command(conn.pack_commands(cmds), check_health=False)
                in_flight.append((name, client, conn, shards))
            except _UNREACHABLE as e:
                if conn is not None:
                    conn.disconnect()
                    client.connection_pool.release(conn)
                for s in shards:
                    failed[s] = (name, e)
        unacked = []
        try:
            while in_flight:
                name, client, conn, shards = in_flight[0]
                got = {}
                try:
                    for s in shards:
                        rs = []
                        for _ in pending[s]:
                            if s in asking:
                                try:
                                    conn.read_response()
                                except _rex.ResponseError:
                                    pass  # ASKING refused: the command after it says why
                            try:
                                rs.append(conn.read_response())
                            except _rex.ResponseError as e:
                                rs.append(e)
                        got[s] = rs
                    if wait:
                        try:
                            acked = conn.read_response()
                        except _rex.ResponseError as e:
                            acked = e
                        if isinstance(acked, Exception) or acked < wait:
                            unacked.append((name, shards, acked))
                except _UNREACHABLE as e:
                    in_flight.pop(0)
                    conn.disconnect()
                    client.connection_pool.release(conn)
                    for s in shards:
                        failed[s] = (name, e)
                    continue
                in_flight.pop(0)
                client.connection_pool.release(conn)
                for s, rs in got.items():
                    retry = None
                    for r in rs:
                        if isinstance(r, _rex.MovedError):
                            topo.moved(r)
                            stats["moved"] = stats.get("moved", 0) + 1
                            retry = "redirect"
                            asking.pop(s, None)
                            break
                        if isinstance(r, _rex.AskError):
                            asking[s] = (r.host, r.port)
                            stats["ask"] = stats.get("ask", 0) + 1
                            retry = "redirect"
                            break
                        if isinstance(r, _TRANSIENT) or (
                                isinstance(r, _rex.ResponseError) and str(r).startswith("LOADING")):
                            retry = r
                            break
                    if retry is None:
                        for r in rs:
                            if isinstance(r, Exception):
                                r._amq_node = name  # for the caller's error to name
                        results[s] = rs
                        del pending[s]
                        asking.pop(s, None)
                    elif retry == "redirect":
                        redirects[s] = redirects.get(s, 0) + 1
                    else:
                        failed[s] = (name, retry)
        finally:
            for name, client, conn, shards in in_flight:
                conn.disconnect()  # replies left unread: the connection cannot be reused
                client.connection_pool.release(conn)
        if unacked:
            name, shards, acked = unacked[0]
            s = shards[0]
            raise NotReplicatedError(
                "%s: WAIT %d on node %s answered %r: the writes to shards %s are on the "
                "primary, not acknowledged by %d replica(s)"
                % (label, wait, name, acked, ", ".join(map(str, shards)), wait),
                shard=s, key=keys[s], node=name, cause=acked,
                failures=[(t, n, a) for n, ss, a in unacked for t in ss])
        over = [t for t in sorted(redirects) if redirects[t] > _MAX_REDIRECTS and t in pending]
        if over:
            s = over[0]
            raise ShardError("%s: shard %d (key %r) was redirected more than %d times; last "
                             "node %s" % (label, s, keys[s], _MAX_REDIRECTS, where.get(s)),
                             shard=s, key=keys[s], node=where.get(s))
        if failed:
            stats["retries"] = stats.get("retries", 0) + len(failed)
            now = time.monotonic()
            if deadline is None:
                deadline = now + retry_timeout
            if now >= deadline:
                _raise_unavailable(label, keys, failed)
            time.sleep(min(pause, max(0.0, deadline - now)))
            pause = min(pause * 2, 0.5)
            if any(isinstance(e, _UNREACHABLE + (_rex.ClusterDownError,
                                                 _rex.RedisClusterException))
                   for _, e in failed.values()):
                topo.refresh()
    return results


def _raise_unavailable(label, keys, failed):
    # Name an unreachable node first: that is the shard the caller must hear about.
    order = sorted(failed, key=lambda s: (not isinstance(failed[s][1], _UNREACHABLE), s))
    s = order[0]
    node, cause = failed[s]
    same = [t for t in order[1:] if failed[t][0] == node]
    more = "" if not same else " (also shards %s on that node)" % ", ".join(map(str, sorted(same)))
    others = sorted(set(failed[t][0] for t in order) - {node})
    tail = "" if not others else "; other failing nodes: %s" % ", ".join(others)
    what = "cannot be reached" if isinstance(cause, _UNREACHABLE) else "is not available"
    raise ShardUnavailableError(
        "%s: shard %d (key %r) on node %s %s: %s: %s%s%s"
        % (label, s, keys[s], node, what, type(cause).__name__, cause, more, tail),
        shard=s, key=keys[s], node=node, cause=cause,
        failures=[(t, failed[t][0], failed[t][1]) for t in order])


# ---- the filter ---------------------------------------------------------------------------

def _check_partition_routing(name, m):
    """The fields of "routing": "partition" (version 2): shard i of N holds partitions
    [i P/N, (i+1) P/N) of a partitioned filter of P, and an item's shard is its partition
    (amq_partition_index of the filter's hash) over P/N."""
    if type(m.get("version")) is not int or m["version"] < 2:
        raise ValueError("%r: routing 'partition' needs metadata version 2" % name)
    if m.get("backend") != "amq":
        raise ValueError("%r: routing 'partition' needs the amq backend, not %r"
                         % (name, m.get("backend")))
    h = m.get("shard_hash")
    if not isinstance(h, str) or not h.startswith("amq:") or m.get("shard_reduce") != "partition":
        raise ValueError("%r: shard hash %r / %r is not one this client has"
                         % (name, h, m.get("shard_reduce")))
    try:
        _hash.key(b"", h[4:], 0)
    except ValueError:
        raise ValueError("%r: shard hash %r is not one this client has" % (name, h))
    p, n = m.get("partitions"), m.get("shards")
    if type(p) is not int or not 1 <= p <= 65536 or type(n) is not int or p % n:
        raise ValueError("%r: %r partitions cannot be cut into %r shards of equal runs"
                         % (name, p, n))


class ShardedFilter:
    """One filter NAME over N shard keys; opened from its metadata key (docs/cluster.md).

    client: a redis.Redis (every shard on one server) or a redis.cluster.RedisCluster.
    retry_timeout: seconds a call keeps retrying a shard whose node cannot be reached, or
    whose slots are down (a failover in progress), before it raises ShardUnavailableError
    naming the shard and its node.  Redirections (MOVED, ASK) are always followed.
    """

    #: how items are routed to shards (the metadata's "routing"; "hash" when absent)
    routing = "hash"

    def __init__(self, client, name, retry_timeout=2.0):
        _check_name(name)
        self.client = client
        self.name = name
        self.retry_timeout = float(retry_timeout)
        self._topo = _topology(client)
        raw = self._get_meta(client, name)
        if raw is None:
            raise FilterNotFoundError("no sharded filter %r (its metadata key is missing)" % name)
        self.meta = self._parse_meta(name, raw)
        self.backend = BACKENDS[self.meta["backend"]]
        self.keys = list(self.meta["keys"])
        self.shards = len(self.keys)
        self.seed = int(self.meta["shard_seed"], 16)
        #: "hash" (the protocol's item hash) or "partition" (the filter's own partition)
        self.routing = self.meta.get("routing", "hash")
        if self.routing == "partition":
            self._algo = self.meta["shard_hash"][len("amq:"):]
            self._partitions = self.meta["partitions"]
        #: what this handle's calls met: MOVED and ASK redirections followed, shards retried
        self.stats = {"moved": 0, "ask": 0, "retries": 0}

    @staticmethod
    def _get_meta(client, name):
        try:
            return client.get(name)
        except _rex.ResponseError as e:
            if str(e).startswith("WRONGTYPE"):
                raise FilterNotFoundError("%r is not a sharded filter's metadata key (it holds "
                                          "another type)" % name)
            raise

    @staticmethod
    def _parse_meta(name, raw):
        try:
            m = json.loads(raw)
        except ValueError as e:
            raise ValueError("%r: metadata is not JSON (%s)" % (name, e))
        except RecursionError:
            raise ValueError("%r: metadata is not a sharded filter's: JSON nested too deep"
                             % name)
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            raise ValueError("%r: not an %s metadata key" % (name, FORMAT))
        v = m.get("version")
        if type(v) is not int or v > VERSION or v < 1:
            raise ValueError("%r: metadata format version %r; this client reads version %d"
                             % (name, v, VERSION))
        if not isinstance(m.get("backend"), str) or m["backend"] not in BACKENDS:
            raise ValueError("%r: backend %r is not one this client has (%s)"
                             % (name, m.get("backend"), ", ".join(sorted(BACKENDS))))
        n = m.get("shards")
        if type(n) is not int or not 1 <= n <= MAX_SHARDS:
            raise ValueError("%r: shard count %r is not an int in [1, %d]"
                             % (name, n, MAX_SHARDS))
        keys = m.get("keys")
        if (not isinstance(keys, list) or len(keys) != n or
                not all(isinstance(k, str) and k for k in keys)):
            raise ValueError("%r: metadata's keys do not match its shard count" % name)
        if len(set(keys)) != n or name in keys:
            raise ValueError("%r: metadata's shard keys repeat, or name the metadata key "
                             "itself" % name)
        params = m.get("params")
        if params is not None and (not isinstance(params, list) or len(params) != n or
                                   not all(isinstance(p, dict) for p in params)):
            raise ValueError("%r: metadata's params are not one object per shard" % name)
        routing = m.get("routing", "hash")
        if routing not in ROUTINGS:
            raise ValueError("%r: routing %r is not one this client has (%s): it cannot tell "
                             "an item's shard" % (name, routing, ", ".join(ROUTINGS)))
        if routing == "hash" and (m.get("shard_hash") != "xxh3_64" or
                                  m.get("shard_reduce") != "multiply-shift"):
            raise ValueError("%r: shard hash %r / %r is not one this client has"
                             % (name, m.get("shard_hash"), m.get("shard_reduce")))
        if routing == "partition":
            _check_partition_routing(name, m)
        seed = m.get("shard_seed")
        if not isinstance(seed, str) or not _HEX64.match(seed):
            raise ValueError("%r: shard_seed %r is not a 64-bit hex string" % (name, seed))
        return m

    # ---- create / delete -------------------------------------------------------------
    @classmethod
    def create(cls, client, name, capacity, error_rate=None, shards=None, kind=None,
               expansion=None, nonscaling=False, bucket_size=None, max_iterations=None,
               wait=None, retry_timeout=2.0, backend=None, fpbits=None, options=None):
        """Reserves N shards and writes the metadata key last (so no client opens a filter
        half made).  capacity: items in the whole filter; each shard is reserved for
        capacity/N plus four standard deviations of the binomial count it receives, so a
        shard reaches its capacity with the whole filter.  shards: default 4 per primary
        (room to spread over more nodes later), 1 on a plain Redis.  backend: 'bf' / 'cf'
        (RedisBloom's BF.* / CF.*, chosen by kind 'bloom' (default) or 'cuckoo'), or 'amq'
        (amq.so's AMQ.* type: kind is any amq kind AMQ.CREATE makes, default 'blocked';
        fpbits, bucket_size, expansion, nonscaling and options - a dict of partitions,
        bits, hashes, bits_per_key, seed, maxsize - are its AMQ.CREATE options).
        wait: WAIT for that many replicas of every write.
        Raises FilterExistsError when NAME or a shard key exists (nothing changed)."""
        _check_name(name)
        if backend is None:
            family = _KINDS.get("bloom" if kind is None else kind)
            if family is None:
                raise ValueError("kind must be 'bloom' or 'cuckoo' (or any amq kind with "
                                 "backend='amq'), not %r" % (kind,))
        elif backend == "amq":
            family = "amq"
        elif backend in ("bf", "cf"):
            family = backend
            if kind is not None and _KINDS.get(kind) != family:
                raise ValueError("backend %r holds %s shards, not %r"
                                 % (backend, BACKENDS[family].kind, kind))
        else:
            raise ValueError("backend must be 'bf', 'cf' or 'amq', not %r" % (backend,))
        if family != "amq" and (fpbits is not None or options):
            raise TypeError("fpbits and options are AMQ.CREATE's: pass backend='amq'")
        backend = BACKENDS[family]
        topo = _topology(client)
        if shards is None:
            shards = 1 if isinstance(topo, _Single) else 4 * topo.primaries()
        shards = int(shards)
        if not 1 <= shards <= MAX_SHARDS:
            raise ValueError("shards must be in [1, %d]" % MAX_SHARDS)
        capacity = int(capacity)
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        mean = capacity / shards
        per = max(1, int(mean + 4.0 * (mean * (1.0 - 1.0 / shards)) ** 0.5 + 1))
        extra = {}
        if family == "amq":
            if max_iterations is not None:
                raise TypeError("an amq shard takes no max_iterations")
            extra = dict(options or {})
            if "kind" in extra or "error_rate" in extra:
                raise TypeError("kind and error_rate are create()'s own arguments, not options")
            nonscaling = nonscaling or bool(extra.pop("nonscaling", False))
            extra.update(kind="blocked" if kind is None else kind,
                         error_rate=0.01 if error_rate is None else error_rate,
                         fpbits=fpbits, bucket_size=bucket_size, expansion=expansion,
                         nonscaling=nonscaling)
        elif family == "bf":
            extra = dict(error_rate=0.01 if error_rate is None else error_rate,
                         expansion=expansion, nonscaling=nonscaling)
        else:
            if nonscaling:
                raise TypeError("a cuckoo shard has no NONSCALING: pass expansion=0")
            extra = dict(bucket_size=bucket_size, max_iterations=max_iterations,
                         expansion=expansion, error_rate=error_rate)
        p = backend.params(per, **extra)
        keys = shard_keys(name, shards)
        label = "create %r" % name
        if client.exists(name):
            raise FilterExistsError("%r exists: delete it first (ShardedFilter(client, name)"
                                    ".delete())" % name)
        def undo_all(e):
            # a round cut short (a node unreachable): which shards it made is unknown; each
            # reachable one is deleted, so that the name can be created again once it is back
            for s in range(shards):
                try:
                    _run(topo, {s: [("DEL", keys[s])]}, keys, label + " (undo)",
                         min(retry_timeout, 1.0))
                except ShardError:
                    pass
            e.args = (str(e) + " (the shards made on reachable nodes were deleted)",)
            return e

        try:
            res = _run(topo, {s: [backend.reserve(keys[s], p)] for s in range(shards)}, keys,
                       label, retry_timeout, wait=wait)
        except ShardError as e:
            raise undo_all(e)
        bad = [(s, rs[0]) for s, rs in sorted(res.items()) if isinstance(rs[0], Exception)]
        if bad:
            made = {s: [("DEL", keys[s])] for s, rs in res.items()
                    if not isinstance(rs[0], Exception)}
            if made:
                _run(topo, made, keys, label + " (undo)", retry_timeout)
            s, e = bad[0]
            err = FilterExistsError if "exists" in str(e).lower() else ShardError
            raise err("%s: shard %d (key %r): %s (the shards made were deleted)"
                      % (label, s, keys[s], e))
        meta = {
            "format": FORMAT, "version": 1, "name": name, "backend": family,
            "shards": shards, "keys": keys, "routing": "hash", "shard_hash": "xxh3_64",
            "shard_seed": "0x%016x" % SHARD_SEED, "shard_reduce": "multiply-shift",
            "capacity": capacity, "params": [p] * shards,
        }
        mkeys = keys + [name]
        try:
            res = _run(topo, {shards: [("SET", name, json.dumps(meta, sort_keys=True), "NX")]},
                       mkeys, label, retry_timeout, wait=wait)
        except ShardError as e:
            raise undo_all(e)
        if res[shards][0] is None or isinstance(res[shards][0], Exception):
            _run(topo, {s: [("DEL", keys[s])] for s in range(shards)}, keys, label + " (undo)",
                 retry_timeout)
            raise FilterExistsError("%s: the metadata key could not be set (%s): created "
                                    "meanwhile by another client?" % (label, res[shards][0]))
        return cls(client, name, retry_timeout=retry_timeout)

    def delete(self):
        """Deletes the shard keys, then the metadata key (a delete cut short leaves the
        metadata, so it can be run again; the filter then answers MissingShardError)."""
        _run(self._topo, {s: [("DEL", self.keys[s])] for s in range(self.shards)}, self.keys,
             "delete %r" % self.name, self.retry_timeout, stats=self.stats)
        self.client.delete(self.name)

    # ---- items -------------------------------------------------------------------------
    def shard_of(self, item):
        """The shard (0..N-1) an item belongs to."""
        if self.routing == "partition":
            return self._partition_shards([_key(item)])[0]
        return (_hash.xxh3_64(_key(item), self.seed) * self.shards) >> 64

    def _partition_shards(self, keys):
        # The filter's own partition of each key, computed by the library (amq_partition_index
        # of the filter's hash); shard i holds partitions [i P/N, (i+1) P/N).
        per = self._partitions // self.shards
        return [p // per for p in _hash.partition_index(keys, self._partitions, self._algo,
                                                         self.seed)]

    def _split(self, keys):
        n = self.shards
        pos = [[] for _ in range(n)]
        items = [[] for _ in range(n)]
        if self.routing == "partition":
            for i, (k, s) in enumerate(zip(keys, self._partition_shards(keys))):
                pos[s].append(i)
                items[s].append(k)
            return pos, items
        seed, xxh = self.seed, _hash.xxh3_64
        for i, k in enumerate(keys):
            s = (xxh(k, seed) * n) >> 64
            pos[s].append(i)
            items[s].append(k)
        return pos, items

    def _label(self, op):
        return "%s %r" % (op, self.name)

    def _check(self, op, s, r):
        if isinstance(r, Exception):
            msg = str(r)
            node = getattr(r, "_amq_node", None)
            cls = ShardError
            if msg.lower().startswith("not found") or "not found" in msg.lower():
                cls = MissingShardError
            raise cls("%s: shard %d (key %r): %s" % (self._label(op), s, self.keys[s], msg),
                      name=self.name, shard=s, key=self.keys[s], node=node, cause=r)
        return r

    def add(self, item, wait=None):
        """Adds one item; True when it was new (False: maybe there already)."""
        return self.add_many([item], wait=wait) == 1

    def add_many(self, items, wait=None, width=0, batch=BATCH):
        """Adds a batch (keys as amq.Filter.add_many takes them); returns how many were new.
        One pipeline per node; with wait=k each node's pipeline ends in WAIT k and a node
        whose replicas did not all acknowledge raises NotReplicatedError."""
        _check_batch(batch, wait)
        keys = _keys(items, width)
        pos, parts = self._split(keys)
        b = self.backend
        req = {}
        for s, part in enumerate(parts):
            if part:
                req[s] = [b.insert(self.keys[s], part[i:i + batch])
                          for i in range(0, len(part), batch)]
        res = _run(self._topo, req, self.keys, self._label("add_many"), self.retry_timeout,
                   wait=wait, stats=self.stats)
        added = 0
        refused = {}
        for s in sorted(res):
            for r in res[s]:
                r = self._check("add_many", s, r)
                for x in r:
                    if isinstance(x, Exception):
                        self._check("add_many", s, x)
                    added += 1 if x == 1 else 0
                    if x == -1:  # CF.INSERT: this item not added (the filter is full)
                        refused[s] = refused.get(s, 0) + 1
        if refused:
            s = min(refused)
            raise ShardError("%s: shard %d (key %r): %d item(s) not added: the filter is full "
                             "(non-scaling, at its link limit, or refused memory to grow); "
                             "%d refused in all, the batch's other items added"
                             % (self._label("add_many"), s, self.keys[s], refused[s],
                                sum(refused.values())),
                             name=self.name, shard=s, key=self.keys[s])
        return added

    def contains(self, item):
        """True when the item may be in the filter, False when it is not."""
        return bool(self.contains_many([item])[0])

    __contains__ = contains

    def contains_many(self, items, width=0, batch=BATCH):
        """Answers a batch in its order: numpy bool array (bytearray of 0/1 without numpy).
        One pipeline per node: EXISTS of each shard key there (a missing shard is
        MissingShardError, never "absent"), then its items' MEXISTS."""
        _check_batch(batch)
        keys = _keys(items, width)
        pos, parts = self._split(keys)
        b = self.backend
        req = {}
        for s, part in enumerate(parts):
            if part:
                req[s] = [("EXISTS", self.keys[s])] + [
                    b.mexists(self.keys[s], part[i:i + batch]) for i in range(0, len(part), batch)]
        res = _run(self._topo, req, self.keys, self._label("contains_many"), self.retry_timeout,
                   stats=self.stats)
        out = bytearray(len(keys))
        for s, rs in res.items():
            if self._check("contains_many", s, rs[0]) != 1:
                raise MissingShardError(
                    "%s: shard %d (key %r) is missing on its node: the filter's items there "
                    "are lost (a failover without the key's replica, or a deleted key)"
                    % (self._label("contains_many"), s, self.keys[s]),
                    name=self.name, shard=s, key=self.keys[s])
            j = 0
            p = pos[s]
            for r in rs[1:]:
                for x in self._check("contains_many", s, r):
                    if isinstance(x, Exception):
                        self._check("contains_many", s, x)
                    out[p[j]] = 1 if x else 0
                    j += 1
        np = _numpy()
        return np.frombuffer(bytes(out), dtype=bool).copy() if np is not None else out

    def remove(self, item):
        """Removes one item from a filter of cuckoo shards (CF.DEL, or AMQ.DEL of a cuckoo
        kind); True when it was found."""
        k = _key(item)
        s = self.shard_of(k)
        params = self.meta.get("params")
        p = params[s] if isinstance(params, list) and s < len(params) else {}
        if not self.backend.removable(p if isinstance(p, dict) else {}):
            what = self.backend.family + ("/" + str(p.get("kind")) if self.backend.family == "amq"
                                          and isinstance(p, dict) else "")
            raise TypeError("a %s-backed filter cannot remove items" % what)
        res = _run(self._topo, {s: [self.backend.remove(self.keys[s], k)]}, self.keys,
                   self._label("remove"), self.retry_timeout, stats=self.stats)
        return self._check("remove", s, res[s][0]) == 1

    # ---- description ---------------------------------------------------------------------
    def nodes(self):
        """{node address: [shards]} as the client's slot map has it now."""
        out = {}
        for s, k in enumerate(self.keys):
            out.setdefault(self._topo.node(k)[0], []).append(s)
        return out

    def info(self):
        """The shards' BF.INFO / CF.INFO / AMQ.INFO: 'totals' adds up the counts over the shards,
        'per_shard' has each one's fields and node."""
        req = {s: [self.backend.info(self.keys[s])] for s in range(self.shards)}
        res = _run(self._topo, req, self.keys, self._label("info"), self.retry_timeout,
                   stats=self.stats)
        nodes = self.nodes()
        node_of = {s: n for n, ss in nodes.items() for s in ss}
        per = []
        totals = {k: 0 for k in self.backend.summed}
        for s in range(self.shards):
            r = res[s][0]
            if isinstance(r, Exception) and "not found" in str(r).lower():
                raise MissingShardError("%s: shard %d (key %r) is missing"
                                        % (self._label("info"), s, self.keys[s]),
                                        name=self.name, shard=s, key=self.keys[s])
            d = _info_dict(self._check("info", s, r))
            for k in totals:
                if isinstance(d.get(k), int):
                    totals[k] += d[k]
            d["key"] = self.keys[s]
            d["node"] = node_of.get(s)
            per.append(d)
        items = [d.get(self.backend.items_field, 0) or 0 for d in per]
        return {
            "name": self.name, "backend": self.backend.family, "shards": self.shards,
            "capacity": self.meta.get("capacity"), "params": self.meta.get("params"),
            "nodes": nodes, "totals": totals,
            "items_min": min(items), "items_max": max(items), "per_shard": per,
        }

    def __len__(self):
        return int(self.info()["totals"].get(self.backend.items_field, 0))

    def __repr__(self):
        return "<amq.redis.ShardedFilter %r backend=%s shards=%d>" % (
            self.name, self.backend.family, self.shards)

    # ---- dumps ----------------------------------------------------------------------------
    def dump_resp(self, out):
        """Writes the filter as the RESP commands `amq export --to redis --shards N` writes
        (each shard's LOADCHUNKs from SCANDUMP, then SET NAME metadata) to a binary file
        object: `amq import --from redis --shards N` turns it into N files."""
        for s, key in enumerate(self.keys):
            it = 0
            first = True
            while True:
                try:
                    it, data = self.client.execute_command(self.backend.scandump, key, it)
                    if it == 0 and first and hasattr(self.backend, "empty_chunks"):
                        info = _info_dict(self.client.execute_command(*self.backend.info(key)))
                        for c in self.backend.empty_chunks(info):
                            _write_cmd(out, (self.backend.loadchunk, key) + c)
                except _rex.ResponseError as e:
                    raise ShardError("dump %r: shard %d (key %r): %s"
                                     % (self.name, s, key, e), shard=s, key=key, cause=e)
                if it == 0:
                    break
                first = False
                _write_cmd(out, (self.backend.loadchunk, key, it, data or b""))
        _write_cmd(out, ("SET", self.name, json.dumps(self.meta, sort_keys=True)))


def _write_cmd(out, args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    out.write(b"".join(parts))


# ---- loading `amq export --to redis` output into a cluster --------------------------------

def _read_resp_commands(f):
    """Yields each RESP array of bulk strings of a binary stream as a tuple of bytes."""
    def line():
        s = f.readline()
        if not s:
            return None
        if not s.endswith(b"\r\n"):
            raise ValueError("RESP stream cut short (a line without CR LF)")
        return s[:-2]
    while True:
        h = line()
        if h is None:
            return
        if not h.startswith(b"*"):
            raise ValueError("expected a RESP array, got %r" % h[:20])
        args = []
        for _ in range(int(h[1:])):
            b = line()
            if b is None or not b.startswith(b"$"):
                raise ValueError("expected a RESP bulk string, got %r" % (b or b"")[:20])
            n = int(b[1:])
            data = f.read(n + 2)
            if len(data) != n + 2 or not data.endswith(b"\r\n"):
                raise ValueError("RESP bulk string cut short")
            args.append(data[:-2])
        yield tuple(args)


def load_resp(client, stream):
    """Runs the commands of `amq export --to redis [--shards N]` output (a path or a binary
    file object) through client - a RedisCluster routes each by its key, which
    `redis-cli --pipe` does not.  Returns the number of commands; raises at the first error."""
    if isinstance(stream, str):
        with open(stream, "rb") as f:
            return load_resp(client, f)
    n = 0
    for args in _read_resp_commands(stream):
        client.execute_command(args[0].decode("ascii", "replace"), *args[1:])
        n += 1
    return n


# ---- python3 -m amq.redis ------------------------------------------------------------------

def _main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m amq.redis", description=(
        "Sharded filters' helpers: split a key file by shard (one file per shard, for "
        "'amq build' and then 'amq export --to redis --shards N'), or load an export into "
        "a server or cluster."))
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("split", help="write the lines of KEYS whose shard is i to PREFIX.i")
    sp.add_argument("--shards", type=int, required=True)
    sp.add_argument("keys")
    sp.add_argument("prefix")
    lp = sub.add_parser("load", help="run an export's RESP commands through a client")
    lp.add_argument("--host", default="127.0.0.1")
    lp.add_argument("--port", type=int, default=6379)
    lp.add_argument("--cluster", action="store_true", help="the server is a cluster node")
    lp.add_argument("file")
    a = ap.parse_args(argv)
    if a.cmd == "split":
        if not 1 <= a.shards <= MAX_SHARDS:
            ap.error("--shards must be in [1, %d]" % MAX_SHARDS)
        outs = [open("%s.%d" % (a.prefix, i), "wb") for i in range(a.shards)]
        try:
            with open(a.keys, "rb") as f:
                for ln in f:
                    k = ln[:-1] if ln.endswith(b"\n") else ln
                    if k.endswith(b"\r"):
                        k = k[:-1]  # as the tool reads a line
                    outs[(_hash.xxh3_64(k, SHARD_SEED) * a.shards) >> 64].write(k + b"\n")
        finally:
            for o in outs:
                o.close()
        return 0
    if a.cluster:
        from redis.cluster import RedisCluster
        c = RedisCluster(host=a.host, port=a.port)
    else:
        c = _redis.Redis(host=a.host, port=a.port)
    print("%d commands" % load_resp(c, a.file))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
