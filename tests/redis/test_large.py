"""Filters of 1 GiB and more: created, used, dumped in <= 16 MiB chunks,
saved and reloaded, and freed."""
GIB = 1 << 30


def test_gib_filters(env):
    s = env.new_server()
    r = s.client()
    # The reference for the big SAVE below: a SAVE of a tenth of its size, same run.
    assert r.execute_command("BF.RESERVE", "tenth", 1e-6, 30000000) == b"OK"
    r.config_resetstat()
    assert r.save()
    tenth_usec = r.info("commandstats")["cmdstat_save"]["usec"]
    r.delete("tenth")
    # BF: 1e-6 at 300M items: one 1,132,420,136-byte link
    assert r.execute_command("BF.RESERVE", "bf", 1e-6, 300000000) == b"OK"
    assert r.execute_command("BF.INFO", "bf", "SIZE") == [1132420232]
    # CF: 2^30 capacity, bucket size 1: 2^30 one-byte slots
    assert r.execute_command("CF.RESERVE", "cf", GIB, "BUCKETSIZE", 1) == b"OK"
    assert r.execute_command("CF.INFO", "cf")[1] == 40 + 16 + GIB
    assert r.memory_usage("bf") >= 1132420136 and r.memory_usage("cf") >= GIB
    items = ["item%d" % i for i in range(20000)]
    assert r.execute_command("BF.MADD", "bf", *items) == [1] * len(items)
    assert r.execute_command("CF.INSERT", "cf", "ITEMS", *items) == [1] * len(items)
    absent = ["none%d" % i for i in range(20000)]
    want_bf = r.execute_command("BF.MEXISTS", "bf", *absent)
    want_cf = r.execute_command("CF.MEXISTS", "cf", *absent)
    assert sum(want_bf) == 0 and sum(want_cf) < 20
    # the last chunks: a link/sub-filter over 4 GiB offsets are 64-bit, chunks <= 16 MiB
    it, data = r.execute_command("BF.SCANDUMP", "bf", 1)
    assert len(data) == 16 << 20 and it == 1 + (16 << 20)
    last = 1132420136 - 100
    it, data = r.execute_command("BF.SCANDUMP", "bf", 1 + last)
    assert len(data) == 100 and it == 1132420137
    assert r.execute_command("BF.SCANDUMP", "bf", it) == [0, b""]
    it, data = r.execute_command("CF.SCANDUMP", "cf", GIB - 10)
    assert len(data) == 11 and it == GIB + 1
    assert r.execute_command("CF.SCANDUMP", "cf", GIB + 1) == [0, None]
    # SAVE + restart of the 1.1 GB Bloom filter (the cuckoo filter is dropped
    # first: every GiB costs seconds of page faults on load)
    r.delete("cf")
    digest = r.execute_command("DEBUG", "DIGEST-VALUE", "bf")
    r.config_resetstat()
    assert r.save()
    save_usec = r.info("commandstats")["cmdstat_save"]["usec"]
    s.restart()
    print("    SAVE of 1.1 GB: %.1fs, of 113 MB: %.2fs" % (save_usec / 1e6, tenth_usec / 1e6))
    r = s.client()
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "bf") == digest
    assert r.execute_command("BF.MEXISTS", "bf", *items) == [1] * len(items)
    assert r.execute_command("BF.MEXISTS", "bf", *absent) == want_bf
    r.delete("bf")
    assert r.info("memory")["used_memory"] < 256 << 20
    # Linear in the filter's size: ten times the bytes, about ten times the time (30
    # leaves room for the disk's moods; a pass per chunk over the link costs far more).
    assert save_usec < 30 * tenth_usec, (save_usec, tenth_usec)
