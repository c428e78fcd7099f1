"""Static kinds (every key known up front): amq.build."""
import subprocess

import numpy as np
import pytest

import amq
from conftest import keys

STATIC = [k for k in ("fuse", "ribbon") if k in amq.KINDS]


@pytest.mark.parametrize("kind", STATIC)
def test_build_from_list_iterable_and_array(kind):
    ins = keys("s", 20000) + keys("s", 100)  # duplicates are allowed
    f = amq.build(ins, kind=kind, fpp=0.01)
    assert f.kind == kind
    assert f.contains_many(ins).all()
    fp = f.contains_many(keys("absent", 50000)).mean()
    assert fp < 0.02, fp
    g = amq.build(iter(ins), kind=kind)
    assert g.to_bytes() == f.to_bytes()
    raw = np.random.default_rng(3).integers(0, 255, size=(5000, 8), dtype=np.uint8)
    h = amq.build(raw.view("V8").ravel(), kind=kind)
    assert h.contains_many(raw).all()
    with pytest.raises(amq.UnsupportedError):
        f.add("x")


@pytest.mark.parametrize("kind", STATIC)
def test_build_matches_the_tool(kind, tmp, amq_bin):
    ins = keys("t", 5000)
    (tmp / "k.txt").write_text("".join(k + "\n" for k in ins))
    subprocess.run([amq_bin, "build", str(tmp / "t.amq"), str(tmp / "k.txt"), "--type", kind,
                    "-q"], check=True)
    t = amq.open(tmp / "t.amq")
    probe = keys("t", 8000)
    assert (t.contains_many(probe) == amq.build(ins, kind=kind).contains_many(probe)).all()


def test_build_errors():
    with pytest.raises(ValueError, match="not a static kind"):
        amq.build(["a"], kind="bloom")
    for kind in STATIC:  # the library's message named its C calls and the tool
        with pytest.raises(amq.UnsupportedError,
                           match=r"a %s filter is static: amq.build\(keys, kind='%s'\) makes "
                                 r"it from all its keys at once$" % (kind, kind)):
            amq.Filter(kind=kind)
    with pytest.raises(TypeError):
        amq.build("abc")
    ints = np.arange(10, dtype=np.uint64)  # integer IDs are keys: their 8 bytes
    assert amq.build(ints).to_bytes() == amq.build(ints.view("V8")).to_bytes()
    with pytest.raises(ValueError):
        amq.build(["a"], kind="nope")


def test_fuse_only_keywords_are_refused_for_ribbon():
    # a ribbon filter's size follows from fpp alone: arity and fingerprint_bits were ignored
    for kw in (dict(arity=3), dict(arity=4), dict(fingerprint_bits=16), dict(arity=0)):
        name = next(iter(kw))
        with pytest.raises(ValueError, match="%s applies to the kind fuse only; a ribbon "
                                             "filter has no %s" % (name, name)):
            amq.build(["x"], "ribbon", **kw)
    assert amq.build(["x"], "fuse", arity=4, fingerprint_bits=16).info()["kind"] == "fuse"


def test_tmpdir_none_is_the_default_and_a_spilled_build_is_the_same(tmp):
    # build(..., tmpdir=None), its signature's default, raised TypeError
    ins = keys("sp", 300000)
    f = amq.build(ins)
    assert amq.build(ins, tmpdir=None).to_bytes() == f.to_bytes()
    # past `memory` the hashes go to files in tmpdir; the filter is the same
    assert amq.build(iter(ins), tmpdir=tmp, memory=1 << 16).to_bytes() == f.to_bytes()
    assert amq.build(iter(ins), tmpdir=str(tmp).encode(), memory=1 << 16) == f


def test_a_spill_that_cannot_be_written_names_where(tmp):
    # it said "cannot build the filter: input/output error", naming neither the
    # directory nor the spill
    with pytest.raises(OSError, match="cannot write its temporary files .* in %s/none "
                                      r"\(tmpdir\)" % tmp):
        amq.build(("k%d" % i for i in range(2_000_000)), tmpdir=tmp / "none", memory=1000)


def test_a_spill_into_a_full_disk_names_where(tmp):
    # a full tmpdir said "cannot build the filter: no space left on device",
    # naming neither the directory nor the spill (a tmpfs: root only)
    import os
    mnt = tmp / "full"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "amq-test", str(mnt)],
            stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        with pytest.raises(OSError, match=r"cannot write its temporary files .* in %s "
                                          r"\(tmpdir\): no space left on device" % mnt):
            amq.build(("k%d" % i for i in range(2_000_000)), tmpdir=mnt, memory=1000)
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)])
