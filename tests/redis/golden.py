"""golden.py - the golden files of the differential test (RedisBloom's replies,
recorded by scripts/record-goldens.py, replayed by test_golden.py).

A golden file is JSON lines.  The first line describes the recording:
    {"format": 1, "seed": S, "server": "redis-7.0.15", "oracle": "..."}
then one line per command sent, in order:
    {"s": scenario, "c": [arg, ...], "r": reply}
    {"s": scenario, "c": [arg, ...], "r": reply, "alt": {"valkey-8.1.1": reply}}
Arguments and replies are byte strings stored as JSON strings of code points
0-255 (latin-1), the reply being the exact RESP bytes.  "alt" holds the
replies of RedisBloom on another server where they differ (added by
record-goldens.py --add-server); replay on that server expects those.

Pseudo-commands (macros expanded when recording, see golden_gen.py):
    ["@stats"]        r: INFO commandstats reduced to BF/CF lines without
                      timings ("cmdstat_bf.add:calls=3,rejected_calls=0,
                      failed_calls=0", sorted)
    ["@proto", "3"]   HELLO 3 (no r: HELLO names the server)
"""
import json
import re

from rawresp import RawClient  # noqa: F401  (re-exported for the scripts)

FORMAT = 1


def b2s(b):
    return b.decode("latin-1")


def s2b(s):
    return s.encode("latin-1")


def args_bytes(args):
    return [a if isinstance(a, bytes) else a.encode("latin-1") for a in args]


_STAT_RE = re.compile(rb"^cmdstat_((?:bf|cf)\.[a-z]+):calls=(\d+),.*?"
                      rb"rejected_calls=(\d+),failed_calls=(\d+)", re.M | re.I)


def stats_text(client):
    """INFO commandstats, BF/CF lines only, timings dropped: the calls and the
    rejected (refused by the server: arity) and failed (error reply) counts."""
    raw = client.call([b"INFO", b"commandstats"])
    body = raw.split(b"\r\n", 1)[1] if raw[:1] in (b"$", b"=") else raw
    lines = ["cmdstat_%s:calls=%s,rejected_calls=%s,failed_calls=%s"
             % tuple(x.decode() for x in m.groups()) for m in _STAT_RE.finditer(body)]
    return "\n".join(sorted(lines))


def server_id(client):
    """'redis-7.0.15', 'redis-8.0.2' or 'valkey-8.1.1'."""
    raw = client.call([b"INFO", b"server"]).decode("latin-1")
    fields = dict(l.split(":", 1) for l in raw.split("\r\n") if ":" in l)
    if fields.get("server_name") == "valkey" or "valkey_version" in fields:
        return "valkey-" + fields.get("valkey_version", fields.get("redis_version", "?"))
    return "redis-" + fields.get("redis_version", "?")


def read(path):
    """(header, [records])."""
    with open(path, encoding="ascii") as f:
        lines = f.read().splitlines()
    header = json.loads(lines[0])
    if header.get("format") != FORMAT:
        raise ValueError("%s: golden format %r, expected %d" % (path, header.get("format"), FORMAT))
    return header, [json.loads(l) for l in lines[1:]]


def write(path, header, records):
    with open(path, "w", encoding="ascii") as f:
        f.write(json.dumps(header, sort_keys=True) + "\n")
        for r in records:
            f.write(json.dumps(r, sort_keys=True, ensure_ascii=True) + "\n")


def expected_reply(rec, server):
    """The reply RedisBloom gave on `server` (its own alt entry, else the base)."""
    alt = rec.get("alt") or {}
    return alt.get(server, rec.get("r"))


def run_step(client, args):
    """Sends one recorded step; returns the reply to compare (bytes or str),
    or None for a step whose reply is not compared."""
    if args and args[0] == "@stats":
        return stats_text(client)
    if args and args[0] == "@proto":
        client.call([b"HELLO", s2b(args[1])])
        return None
    return client.call(args_bytes(args))


def reply_field(reply):
    """What a golden record stores in "r"."""
    return reply if isinstance(reply, str) or reply is None else b2s(reply)
