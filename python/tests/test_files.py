"""Files: save/open, mmap, bytes, pickling, the tool both ways, hostile input."""
import os
import pickle
import random
import subprocess

import pytest

import amq
from conftest import keys


def test_save_open_roundtrip(tmp):
    f = amq.Filter(kind="blocked", capacity=10000)
    f.update(keys("k", 5000))
    p = tmp / "f.amq"
    f.save(p)
    g = amq.open(p)
    assert g.kind == "blocked" and not g.readonly and len(g) == 5000
    assert g.contains_many(keys("k", 5000)).all()
    g.add("more")
    m = amq.open(str(p), mmap=True)
    assert m.readonly
    with pytest.raises(amq.ReadOnlyError):
        m.add("x")
    assert m.contains_many(keys("k", 5000)).all()
    t = amq.open(p, mmap=True, trust=True)
    assert "k-1" in t
    with pytest.raises(FileExistsError):
        f.save(p, overwrite=False)
    assert [x for x in os.listdir(tmp) if x != "f.amq"] == []  # no temporary left


def test_bytes_and_pickle():
    f = amq.Filter(kind="cuckoo", capacity=1000)
    f.update(keys("p", 500))
    b = f.to_bytes()
    assert amq.Filter.from_bytes(b).to_bytes() == b
    g = pickle.loads(pickle.dumps(f))
    assert g.to_bytes() == b and "p-1" in g


def test_open_errors(tmp):
    with pytest.raises(FileNotFoundError):
        amq.open(tmp / "missing.amq")
    (tmp / "text").write_bytes(b"hello\n" * 100)
    with pytest.raises(amq.CorruptFileError, match="magic"):
        amq.open(tmp / "text")


@pytest.mark.parametrize("kind", ["bloom", "blocked", "partitioned", "cuckoo",
                                  "scalable-bloom", "scalable-cuckoo", "quotient", "pocket"])
def test_hostile_bytes_never_crash(kind):
    f = amq.Filter(kind=kind, capacity=300)
    f.update(keys("h", 200))
    good = f.to_bytes()
    rnd = random.Random(1234)
    for i in range(300):
        b = bytearray(good)
        if i % 3 == 0:
            b = b[: rnd.randrange(len(b))]
        else:
            for _ in range(rnd.randrange(1, 8)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        try:
            g = amq.Filter.from_bytes(bytes(b))
        except amq.CorruptFileError:
            continue
        g.contains_many(keys("h", 50))  # a filter that loads answers without crashing
    for i in range(100):  # trusted: only the header checksum guards
        b = bytearray(good)
        b[rnd.randrange(64, len(b))] ^= 1 << rnd.randrange(8)
        try:
            g = amq.Filter.from_bytes(bytes(b), trust=True)
            g.contains_many(keys("h", 50))
        except amq.Error:
            pass


def test_tool_file_answers_the_same_in_python(tmp, amq_bin):
    src = tmp / "keys.txt"
    src.write_text("".join("user-%d\n" % i for i in range(3000)) + "caf\u00e9\n",
                   encoding="utf-8")
    out = tmp / "t.amq"
    subprocess.run([amq_bin, "build", str(out), str(src), "--type", "blocked", "-q"],
                   check=True)
    f = amq.open(out, mmap=True)
    assert "caf\u00e9" in f and all("user-%d" % i in f for i in range(3000))
    probe = ["user-%d" % i for i in range(2000, 8000)]
    (tmp / "probe.txt").write_text("".join(k + "\n" for k in probe))
    r = subprocess.run([amq_bin, "query", str(out), str(tmp / "probe.txt")],
                       capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stdout.splitlines() == [k for k, hit in zip(probe, f.contains_many(probe)) if hit]


def test_python_file_answers_the_same_in_the_tool(tmp, amq_bin):
    f = amq.Filter(kind="cuckoo", capacity=5000)
    f.update(keys("py", 4000))
    p = tmp / "py.amq"
    f.save(p)
    probe = keys("py", 6000)
    (tmp / "probe.txt").write_text("".join(k + "\n" for k in probe))
    r = subprocess.run([amq_bin, "query", "-c", str(p), str(tmp / "probe.txt")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == int(f.contains_many(probe).sum()) >= 4000


def test_guava_roundtrip_and_tool_bytes(tmp, amq_bin):
    g = amq.Filter(guava=True, capacity=1000, fpp=0.01)
    g.update(keys("gv", 700))
    data = g.export_guava()
    h = amq.import_guava(data)
    assert h.contains_many(keys("gv", 700)).all()
    src = tmp / "k.txt"
    src.write_text("".join(k + "\n" for k in keys("gv", 700)))
    subprocess.run([amq_bin, "build", str(tmp / "t.amq"), str(src), "--capacity", "1000",
                    "--fpp", "0.01", "--guava"], check=True, capture_output=True)
    subprocess.run([amq_bin, "export", "--to", "guava", str(tmp / "t.amq"),
                    str(tmp / "t.guava")], check=True, capture_output=True)
    assert (tmp / "t.guava").read_bytes() == data
    with pytest.raises(amq.CorruptFileError):
        amq.import_guava(b"\x00\x01")
    with pytest.raises(amq.UnsupportedError):
        amq.Filter(kind="blocked", capacity=10).export_guava()


def test_save_replaces_only_amq_files_as_the_tool_does(tmp, amq_bin):
    f = amq.Filter(kind="blocked", capacity=1000)
    f.update(keys("s", 100))
    text = tmp / "notes.txt"
    text.write_text("precious\n")
    with pytest.raises(FileExistsError, match="not an amq filter"):
        f.save(text)
    assert text.read_text() == "precious\n"
    # the tool refuses the same file
    r = subprocess.run([amq_bin, "add", str(text)], input="k\n", capture_output=True, text=True)
    assert r.returncode != 0 and text.read_text() == "precious\n"
    # a filter is replaced; through a symlink the target is, and the link stays
    target = tmp / "t.amq"
    f.save(target)
    os.chmod(target, 0o640)
    link = tmp / "l.amq"
    os.symlink("t.amq", link)
    g = amq.Filter(kind="blocked", capacity=1000)
    g.add("new")
    g.save(link)
    assert os.path.islink(link) and "new" in amq.open(target)
    assert os.stat(target).st_mode & 0o777 == 0o640
    # a file with a second name is refused: both names keep the old data
    os.unlink(link)
    os.link(target, tmp / "second.amq")
    with pytest.raises(OSError, match="hard links"):
        f.save(target)
    assert "new" in amq.open(tmp / "second.amq")
    assert [x for x in os.listdir(tmp) if "amqtmp" in x] == []


def test_save_waits_for_the_lock_another_writer_holds(tmp):
    """The library's writer locks the file it replaces, as `amq add` does: while another
    writer holds the lock the file is not replaced; the save ends when it lets go."""
    import fcntl
    import threading
    path = tmp / "locked.amq"
    f = amq.Filter(kind="blocked", capacity=1000)
    f.add("old")
    f.save(path)
    g = amq.Filter(kind="blocked", capacity=1000)
    g.add("new")
    with open(path, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        t = threading.Thread(target=g.save, args=(path,))
        t.start()
        t.join(0.5)
        assert t.is_alive(), "the save did not wait for the lock"
        assert "new" not in amq.open(path)
    t.join(30)  # closing the file let the lock go
    assert not t.is_alive()
    assert "new" in amq.open(path) and "old" not in amq.open(path)


def test_open_reads_again_after_a_writer_in_place(tmp):
    """A checksum off while a writer holds the file's lock (an add in place writing it) is
    its writes, not damage: open waits for the lock and reads again.  Without a writer a
    damaged file is refused as before."""
    import fcntl
    import threading
    import time
    path = tmp / "inplace.amq"
    f = amq.Filter(kind="blocked", capacity=1000)
    f.add("old")
    f.save(path)
    good = path.read_bytes()
    bad = bytearray(good)
    bad[-100] ^= 0xFF
    path.write_bytes(bytes(bad))
    with pytest.raises(amq.CorruptFileError, match="checksum"):
        amq.open(path)
    held = open(path, "rb")
    fcntl.flock(held, fcntl.LOCK_EX)

    def writer():
        time.sleep(0.3)
        with open(path, "r+b") as w:
            w.write(good)
        held.close()  # the lock goes with it
    t = threading.Thread(target=writer)
    t.start()
    assert "old" in amq.open(path, mmap=True)
    t.join()


def test_a_save_and_amq_add_serialize(tmp, amq_bin, monkeypatch):
    """A Python save and `amq add` on one file: the add waits for the save's lock, then reads
    the file the save made - every key of both is in the result (without the lock, the add
    reads the old file and its rename drops the saved keys)."""
    import threading
    import time
    path = tmp / "both.amq"
    amq.Filter(kind="blocked", capacity=100000).save(path)
    g = amq.Filter(kind="blocked", capacity=100000)
    g.update(keys("py", 2000))
    monkeypatch.setenv("AMQ_TEST_SAVE_DELAY", "1")  # the save holds its finished file 1 s
    t = threading.Thread(target=g.save, args=(path,))
    t.start()
    for _ in range(400):
        if any(x.endswith(".amqtmp") for x in os.listdir(tmp)):
            break
        time.sleep(0.01)
    else:
        pytest.fail("the save's temporary file never appeared")
    env = dict(os.environ)
    del env["AMQ_TEST_SAVE_DELAY"]
    r = subprocess.run([amq_bin, "add", str(path)], input="\n".join(keys("tool", 2000)) + "\n",
                       capture_output=True, text=True, env=env)
    t.join(30)
    assert r.returncode == 0, r.stderr
    h = amq.open(path)
    assert h.contains_many(keys("py", 2000)).all()
    assert h.contains_many(keys("tool", 2000)).all()
    assert [x for x in os.listdir(tmp) if "amqtmp" in x] == []


def test_save_writes_a_device_straight(tmp):
    """/dev/null is written through, as the tool writes it: no temporary file beside it."""
    f = amq.Filter(kind="blocked", capacity=1000)
    f.save("/dev/null")
    f.save("/dev/null", overwrite=False)
