"""The aging (sliding-window) kind: by count and by the caller's clock."""
import subprocess

import pytest

import amq
from conftest import keys

pytestmark = pytest.mark.skipif("aging" not in amq.KINDS, reason="no aging kind")


def test_count_window_keeps_the_last_w_keys():
    w = 20000
    f = amq.Filter(kind="aging", capacity=w, fpp=0.01)
    stream = keys("e", 5 * w)
    for i in range(0, len(stream), 1000):
        f.add_many(stream[i:i + 1000])
        recent = stream[max(0, i + 1000 - w):i + 1000]
        assert f.contains_many(recent).all(), i
    info = f.info()
    old = stream[:w]  # older than the horizon by now
    assert f.contains_many(old).mean() < 0.05, info


def test_time_mode_follows_the_callers_clock(tmp, amq_bin):
    f = amq.Filter(kind="aging", window_ms=60_000, rate=100.0, fpp=0.01)
    f.advance(1_000_000)
    f.add_many(keys("t0", 500))
    f.advance(1_030_000)
    assert f.contains_many(keys("t0", 500)).all()
    assert f.contains_many(keys("t0", 500), now_ms=1_050_000).all()
    # long after the horizon the keys are gone, without changing the filter
    assert f.contains_many(keys("t0", 500), now_ms=10_000_000).mean() < 0.05
    assert all(f.contains_at(k, 1_030_000) for k in keys("t0", 500))
    assert sum(f.contains_at(k, 10_000_000) for k in keys("t0", 500)) < 25
    f.save(tmp / "a.amq")
    (tmp / "q.txt").write_text("".join(k + "\n" for k in keys("t0", 500)))
    r = subprocess.run([amq_bin, "query", "-c", "--now", "1040000", str(tmp / "a.amq"),
                        str(tmp / "q.txt")], capture_output=True, text=True)
    assert r.returncode == 0 and int(r.stdout) == 500, r.stderr
    with pytest.raises(amq.UnsupportedError):
        amq.Filter(kind="aging", capacity=1000).advance(5)
    with pytest.raises(ValueError):
        amq.Filter(kind="bloom", capacity=1000).advance(5)


def test_a_time_is_refused_by_filters_without_a_clock():
    # `amq query --now` is refused for them; contains_at used to answer as contains
    clocked = amq.Filter(kind="aging", window_ms=60_000, rate=100.0)
    clocked.add("x")
    assert clocked.contains_at("x", 0) and clocked.contains_many(["x"], now_ms=0).all()
    for f in (amq.Filter(100, kind="aging"), amq.Filter(100), amq.build(["x"], "ribbon")):
        with pytest.raises(amq.UnsupportedError, match="has no clock"):
            f.contains_at("x", 5)
        with pytest.raises(amq.UnsupportedError, match="has no clock"):
            f.contains_many(["x"], now_ms=5)
        assert f.contains_many(["x"], now_ms=None).shape == (1,)  # None: no time given


def forged_geometry(good, k, l, blocks=None, head=None):
    """good's bytes with the aging parameter block's k, l (and blocks) replaced
    and the header checksum signed again, so that the forgery reaches the
    kind's own checks."""
    import struct
    b = bytearray(good)
    p = struct.unpack_from("<I", b, 32)[0]
    struct.pack_into("<II", b, 64, k, l)
    if blocks is not None:
        struct.pack_into("<Q", b, 72, blocks)
    if head is not None:
        struct.pack_into("<I", b, 64 + 72, head)
    struct.pack_into("<Q", b, 64 + p, amq.hash.xxh3_64(bytes(b[:64 + p])))
    return bytes(b)


def test_forged_geometry_is_refused():
    # k + l wrapped in 32 bits: to 0 slices (a division by zero), to 8 slices
    # with blocks fitted to the payload (adds wrote past the 8-word blocks).
    f = amq.Filter(kind="aging", capacity=1000, fpp=0.01)
    good = f.to_bytes()
    payload_len = int.from_bytes(good[48:56], "little")
    k0, l0 = int.from_bytes(good[64:68], "little"), int.from_bytes(good[68:72], "little")
    # signed again unchanged, the bytes load: the forgeries below fail on their fields
    assert amq.Filter.from_bytes(forged_geometry(good, k0, l0)).to_bytes() == good
    for k, l, blocks in [(1, 0xFFFFFFFF, None), (1, 0xFFFFFFFF, 1 << 29),
                         (63, 2**32 - 55, payload_len // 64), (63, 2**32 - 55, None)]:
        with pytest.raises(amq.CorruptFileError, match="invalid aging parameters"):
            amq.Filter.from_bytes(forged_geometry(good, k, l, blocks, head=0))
