/*
 * test_expandable.c - the expandable kind: grown from a small start, no key
 * added and not removed is ever missing, the measured false-positive rate
 * stays under the target at every power of ten, removals, void entries
 * (fingerprints run out after 15 doublings), the growth limit, the
 * parameter block and a whole file byte by byte, mmap'd queries, and the
 * AVX2 bucket test answering as the scalar one.
 */
#include <stdlib.h>

#include <xxhash.h>

#include "amq.h"
#include "common/endian.h"
#include "test.h"

#define EXPANDABLE_GOLDEN_LEN 1344
#define EXPANDABLE_GOLDEN_FNV UINT64_C(0x16adb7e2e6b52344)

/* 8-byte key i of stream `seed`. */
static uint64_t key_of(uint64_t i, uint64_t seed)
{
    uint64_t st = seed << 40 ^ i;
    return test_rand(&st);
}

static amq_hash128 hash_of(const amq_filter *f, uint64_t i, uint64_t seed)
{
    uint64_t k = key_of(i, seed);
    return amq_filter_hash(f, &k, sizeof k);
}

static amq_filter *make(uint64_t capacity, double fpp)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_config_init(&cfg, AMQ_KIND_EXPANDABLE);
    if (capacity != 0)
        cfg.capacity = capacity;
    cfg.fpp = fpp;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    return f;
}

/* Share of n absent keys (stream 99) the filter answers. */
static double measured_rate(const amq_filter *f, uint64_t n)
{
    uint64_t i, fp = 0;
    for (i = 0; i < n; i++)
        fp += (uint64_t)amq_filter_contains_hash(f, hash_of(f, i, 99));
    return (double)fp / (double)n;
}

TEST(expandable_defaults_start_small)
{
    amq_filter *f = make(0, 0.01);
    amq_stats st;
    REQUIRE(f != NULL);
    amq_filter_stats(f, &st);
    CHECK_GE(st.capacity, 4096);
    CHECK_LT(st.capacity, 2 * 4096);
    CHECK_EQ(st.bytes, 256 * 64); /* 4096 / (0.8 * 31) -> 166 buckets -> 256 */
    CHECK_EQ(test_field_u64(f, "expansions"), 0);
    CHECK_EQ(amq_kind_from_name("expandable", &(uint32_t){0}), AMQ_OK);
    amq_filter_free(f);
}

/* A start of 1e9 keys: 2^26 buckets, a table of 4 GiB (mapped: only the
 * pages the adds touch are made).  Its size was 64u << q in 32 bits, 0
 * from 2^26 buckets on: the table was not there and the first add wrote
 * outside it; the doubling to 2^26 (past 832M keys) the same. */
TEST(expandable_table_of_4_gib)
{
    amq_filter *f = make(1000000000u, 0.01);
    amq_stats st;
    uint64_t size = 0, i, absent = 0;
    REQUIRE(f != NULL);
    CHECK_EQ(test_field_u64(f, "buckets"), UINT64_C(1) << 26);
    amq_filter_stats(f, &st);
    CHECK_GE(st.bytes, UINT64_C(64) << 26);
    CHECK_GE(st.capacity, 1000000000u);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    CHECK_GT(size, UINT64_C(64) << 26);
    for (i = 0; i < 200; i++) {
        char k[32];
        const int n = snprintf(k, sizeof k, "key-%llu", (unsigned long long)i);
        REQUIRE_EQ(amq_filter_add(f, k, (size_t)n), 1);
    }
    for (i = 0; i < 200; i++) {
        char k[32];
        const int n = snprintf(k, sizeof k, "key-%llu", (unsigned long long)i);
        absent += amq_filter_contains(f, k, (size_t)n) != 1;
    }
    CHECK_EQ(absent, 0);
    amq_filter_free(f);
}

/* Grown from 1,000 to 4M: every key present after every power of ten and at
 * the end; the measured rate at each power of ten under 1 % and near the
 * filter's own bound. */
TEST(expandable_grows_without_false_negatives)
{
    amq_filter *f = make(1000, 0.01);
    uint64_t i, next = 1000, n = 4000000;
    amq_stats st;

    REQUIRE(f != NULL);
    for (i = 0; i < n; i++) {
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 1)), 1);
        if (i + 1 == next) {
            double r = measured_rate(f, 200000);
            amq_filter_stats(f, &st);
            CHECK_LE_DBL(r, 0.01);
            CHECK_LE_DBL(r, st.fpp_now * 1.25 + 1e-4);
            CHECK_LE_DBL(st.fpp_now, 0.01);
            next *= 10;
        }
    }
    for (i = 0; i < n; i++)
        if (!amq_filter_contains_hash(f, hash_of(f, i, 1)))
            FAIL_AT_("key %llu missing", (unsigned long long)i);
    amq_filter_stats(f, &st);
    CHECK_EQ(st.items, n);
    CHECK_EQ(test_field_u64(f, "expansions"), 12); /* 64 buckets -> 262144 */
    amq_filter_free(f);
}

/* From one bucket pair, 25 doublings: the keys of the first generations run
 * out of fingerprint bits (void entries, copied at each doubling) and still
 * answer; the rate stays under the target. */
TEST_(expandable_void_entries_keep_their_keys, 1)
{
    amq_filter *f = make(1, 0.02);
    uint64_t i, n = 3000000;
    amq_stats st;
    double r;

    REQUIRE(f != NULL);
    for (i = 0; i < n; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 2)), 1);
    CHECK_GE(test_field_u64(f, "expansions"), 16);
    CHECK_GT(test_field_u64(f, "generations_0_to_1_entries"), 0);
    for (i = 0; i < n; i++)
        if (!amq_filter_contains_hash(f, hash_of(f, i, 2)))
            FAIL_AT_("key %llu missing", (unsigned long long)i);
    amq_filter_stats(f, &st);
    r = measured_rate(f, 500000);
    CHECK_LE_DBL(r, 0.02);
    CHECK_LE_DBL(r, st.fpp_now * 1.25 + 1e-4);
    amq_filter_free(f);
}

/* 2M added, every other one removed: the rest all present, the removed ones
 * answered about as often as keys never added. */
TEST(expandable_removals_keep_the_others)
{
    amq_filter *f = make(1000, 0.01);
    uint64_t i, n = 2000000, still = 0;
    amq_stats st;

    REQUIRE(f != NULL);
    for (i = 0; i < n; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 3)), 1);
    for (i = 0; i < n; i += 2)
        REQUIRE_EQ(amq_filter_remove_hash(f, hash_of(f, i, 3)), 1);
    for (i = 1; i < n; i += 2)
        if (!amq_filter_contains_hash(f, hash_of(f, i, 3)))
            FAIL_AT_("key %llu missing after removals", (unsigned long long)i);
    for (i = 0; i < n; i += 2)
        still += (uint64_t)amq_filter_contains_hash(f, hash_of(f, i, 3));
    CHECK_LE_DBL((double)still / (double)(n / 2), 0.01);
    amq_filter_stats(f, &st);
    CHECK_EQ(st.items, n / 2);
    /* duplicates are counted: added twice, removed once, still there */
    REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, 7, 4)), 1);
    REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, 7, 4)), 1);
    REQUIRE_EQ(amq_filter_remove_hash(f, hash_of(f, 7, 4)), 1);
    CHECK_EQ(amq_filter_contains_hash(f, hash_of(f, 7, 4)), 1);
    amq_filter_free(f);
}

/* One key added again and again: 32 copies are counted, every add after
 * them is AMQ_EFULL and changes nothing (no stash run of one key's cells
 * growing with the adds, no doubling for it), the key answers present, and
 * the 32 removals take the copies back. */
TEST(expandable_copies_of_one_key_are_bounded)
{
    amq_filter *f = make(1000, 0.01);
    amq_hash128 h;
    amq_stats st, st2;
    uint64_t i, stashed;

    REQUIRE(f != NULL);
    for (i = 0; i < 20000; i++) /* other keys, so the bucket is not alone */
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 60)), 1);
    h = hash_of(f, 0, 61);
    for (i = 0; i < 32; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, h), 1);
    amq_filter_stats(f, &st);
    stashed = test_field_u64(f, "stash_entries");
    for (i = 0; i < 100000; i++)
        CHECK_STATUS(amq_filter_add_hash(f, h), AMQ_EFULL);
    amq_filter_stats(f, &st2);
    CHECK_EQ(st2.bytes, st.bytes);
    CHECK_EQ(st2.items, st.items);
    CHECK_EQ(test_field_u64(f, "stash_entries"), stashed);
    CHECK_EQ(amq_filter_contains_hash(f, h), 1);
    for (i = 0; i < 32; i++)
        REQUIRE_EQ(amq_filter_remove_hash(f, h), 1);
    CHECK_EQ(amq_filter_remove_hash(f, h), 0);
    for (i = 0; i < 20000; i++)
        if (!amq_filter_contains_hash(f, hash_of(f, i, 60)))
            FAIL_AT_("key %llu missing", (unsigned long long)i);
    amq_filter_free(f);
}

/* Distinct keys crowded into one bucket (the top 16 bits of h1 zero: a weak
 * hash, or keys chosen against a known seed) past its lanes: 256 cells of
 * the bucket are taken into the stash, every add after them is AMQ_EFULL
 * and changes nothing, and the table doubles for them only until its stash
 * may hold those 256 (64 buckets to 256).  Before, each
 * went to the stash, all in one probe run that every add and query of the
 * bucket walked (adds quadratic in the crowd: 0.5 ms each at 60,000), and
 * the table doubled for them: 64 buckets to 32,768 (2 MiB) for these
 * 20,000 keys.  Every key whose add returned 1 answers present; random
 * keys are still taken but for those of the crowded bucket. */
TEST(expandable_keys_crowded_into_one_bucket_are_bounded)
{
    enum { N = 20000 };
    amq_filter *f = make(1000, 0.01);
    amq_hash128 *h = malloc(N * sizeof *h);
    uint8_t *took = calloc(N, 1);
    uint64_t i, st = 71, accepted = 0, refused = 0, buckets, stashed = 0;
    amq_stats s0, s1;

    REQUIRE(f != NULL && h != NULL && took != NULL);
    buckets = test_field_u64(f, "buckets");
    for (i = 0; i < N; i++) {
        int rc;
        h[i].h1 = test_rand(&st) >> 16;
        h[i].h2 = 0;
        amq_filter_stats(f, &s0);
        stashed = test_field_u64(f, "stash_entries");
        rc = amq_filter_add_hash(f, h[i]);
        if (rc == 1) {
            took[i] = 1;
            accepted++;
            continue;
        }
        CHECK_STATUS(rc, AMQ_EFULL);
        refused++;
        amq_filter_stats(f, &s1);
        if (s1.items != s0.items || s1.bytes != s0.bytes ||
            test_field_u64(f, "stash_entries") != stashed)
            FAIL_AT_("the refused add of crowded key %llu changed the filter",
                     (unsigned long long)i);
    }
    CHECK_LE(test_field_u64(f, "stash_entries"), 256);
    /* doubled only until the stash's bound (1/32 of the table) holds 256 cells */
    CHECK_LE(test_field_u64(f, "buckets"), 4 * buckets);
    CHECK_GT(accepted, 31 + 200);
    CHECK_EQ(accepted + refused, N);
    for (i = 0; i < N; i++)
        if (took[i] && amq_filter_contains_hash(f, h[i]) != 1)
            FAIL_AT_("crowded key %llu accepted, then missing", (unsigned long long)i);
    for (i = 0; i < 20000; i++) { /* refused only in the crowded bucket, bucket 0 */
        const amq_hash128 r = hash_of(f, i, 72);
        const int rc = amq_filter_add_hash(f, r);
        if (rc != 1 && !(rc == AMQ_EFULL && r.h1 < UINT64_MAX / test_field_u64(f, "buckets")))
            FAIL_AT_("random key %llu: %d (%s)", (unsigned long long)i, rc, amq_strerror(rc));
    }
    CHECK_GT(test_field_u64(f, "buckets"), 4 * buckets); /* grown for the random keys */
    for (i = 0; i < N; i++)
        if (took[i] && amq_filter_contains_hash(f, h[i]) != 1)
            FAIL_AT_("crowded key %llu missing after random adds", (unsigned long long)i);
    free(took);
    free(h);
    amq_filter_free(f);
}

/* Batches answer as one key at a time, across doublings in the middle of a
 * batch. */
TEST(expandable_batches_match_one_key)
{
    amq_filter *f = make(1000, 0.01), *g = make(1000, 0.01);
    amq_hash128 *h = malloc(100000 * sizeof *h);
    uint8_t *a = malloc(100000), *b = malloc(100000);
    uint64_t i;

    REQUIRE(f != NULL && g != NULL && h != NULL && a != NULL && b != NULL);
    for (i = 0; i < 100000; i++)
        h[i] = hash_of(f, i, 5);
    REQUIRE_OK(amq_filter_add_batch(f, h, 50000, a));
    for (i = 0; i < 50000; i++)
        REQUIRE_EQ(amq_filter_add_hash(g, h[i]), a[i]);
    REQUIRE_OK(amq_filter_contains_batch(f, h, 100000, a));
    for (i = 0; i < 100000; i++) {
        b[i] = (uint8_t)amq_filter_contains_hash(g, h[i]);
        if (i < 50000)
            CHECK_EQ(a[i], 1);
    }
    CHECK(memcmp(a, b, 100000) == 0);
    /* batches shorter than, as long as and longer than the prefetch window
     * (BATCH_AHEAD, 64), from several offsets */
    for (i = 0; i < 140; i++) {
        size_t len = (size_t)(i % 70) + 1, at = (size_t)(i * 613 % 99000);
        memset(a, 0xee, len);
        REQUIRE_OK(amq_filter_contains_batch(f, h + at, len, a));
        if (memcmp(a, b + at, len) != 0)
            FAIL_AT_("batch of %zu at %zu: answers differ", len, at);
    }
    free(h);
    free(a);
    free(b);
    amq_filter_free(f);
    amq_filter_free(g);
}

/* With a target of 0.2 %, growth stops before the rate would pass it: the
 * add that would double returns AMQ_ELIMIT and changes nothing. */
TEST(expandable_limit_keeps_the_target)
{
    amq_filter *f = make(1000, 0.002);
    uint64_t i;
    int rc = 1;
    amq_stats st, st2;

    REQUIRE(f != NULL);
    for (i = 0; i < 10000000 && rc == 1; i++)
        rc = amq_filter_add_hash(f, hash_of(f, i, 6));
    CHECK_STATUS(rc, AMQ_ELIMIT);
    amq_filter_stats(f, &st);
    CHECK_LE_DBL(st.fpp_now, 0.002);
    CHECK_EQ(st.items, i - 1);
    CHECK_STATUS(amq_filter_add_hash(f, hash_of(f, i, 6)), AMQ_ELIMIT);
    amq_filter_stats(f, &st2);
    CHECK_EQ(st2.items, st.items);
    CHECK_LE_DBL(measured_rate(f, 500000), 0.002);
    amq_filter_free(f);
    CHECK_STATUS(make(1000, 0.0005) == NULL ? AMQ_ERANGE : AMQ_OK, AMQ_ERANGE);
    CHECK_STATUS(make(1000, 0.6) == NULL ? AMQ_ERANGE : AMQ_OK, AMQ_ERANGE);
}

/* A target that leaves no doubling is refused at creation: 0.001 was taken and the
 * filter, "expandable", refused every add past its start.  One just above it (about
 * 0.00114) grows once. */
TEST(expandable_a_target_that_never_grows_is_refused)
{
    amq_config cfg;
    amq_errinfo err;
    amq_filter *f = NULL;
    amq_stats st;
    uint64_t i;
    int rc = 1;
    amq_config_init(&cfg, AMQ_KIND_EXPANDABLE);
    cfg.fpp = 0.001;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    CHECK(f == NULL && strstr(err.msg, "could never grow") != NULL);
    f = make(1000, 0.0012);
    REQUIRE(f != NULL);
    for (i = 0; i < 1000000 && rc == 1; i++)
        rc = amq_filter_add_hash(f, hash_of(f, i, 7));
    CHECK_STATUS(rc, AMQ_ELIMIT);
    amq_filter_stats(f, &st);
    CHECK(st.items > 1000 * 2); /* past the start: it doubled */
    amq_filter_free(f);
}

/* The layout, from the hash alone: a key's full-length entry is its 15 bits
 * after the bucket's q, and a 1 under them, in one of its bucket's lanes. */
TEST(expandable_entry_layout_from_the_hash)
{
    amq_filter *f = make(1000, 0.01); /* 64 buckets: q = 6 */
    uint8_t *buf;
    uint64_t size, i, u, b;
    size_t len;
    uint16_t want;
    int lane, found;

    REQUIRE(f != NULL);
    for (i = 0; i < 500; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 7)), 1);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &len));
    /* parameter block at 64 (200 bytes), payload 64-aligned after it */
    CHECK_EQ(amq_load16(buf + 64), 16);
    CHECK_EQ(amq_load16(buf + 66), 1); /* lane 31: the stash's summary */
    CHECK_EQ(amq_load32(buf + 68), 32);
    CHECK_EQ(amq_load32(buf + 72), 6);
    CHECK_EQ(amq_load32(buf + 76), 6);
    CHECK_EQ(amq_load64(buf + 64 + 48 + 8 * 15), 500);
    for (i = 0; i < 500; i++) {
        const uint8_t *bk;
        u = hash_of(f, i, 7).h1;
        b = u >> 58;
        want = (uint16_t)(((u << 6) >> 48) | 1);
        bk = buf + 320 + 64 * b;
        for (lane = 0, found = 0; lane < 31; lane++)
            found |= amq_load16(bk + 2 * lane) == want;
        CHECK(found);
    }
    free(buf);
    amq_filter_free(f);
}

/* A doubling whose source bucket is full and has stash entries, all of
 * them going to the same half (hashes made by hand: h1's top bit is the
 * bucket of 2, the next bit the half): the half takes 31 lanes, the stash
 * the rest, every key answers, and removing them empties the stash. */
static amq_hash128 crafted(uint64_t bucket, uint64_t fp)
{
    amq_hash128 h;
    h.h1 = bucket << 63 | fp << 48;
    h.h2 = 0;
    return h;
}

TEST(expandable_split_of_a_full_bucket_one_way)
{
    amq_filter *f = make(1, 0.01); /* 2 buckets, doubling at the 50th entry */
    uint64_t j;

    REQUIRE(f != NULL);
    REQUIRE_EQ(test_field_u64(f, "buckets"), 2);
    for (j = 1; j <= 36; j++) /* first fingerprint bit 0: all to half 0 */
        REQUIRE_EQ(amq_filter_add_hash(f, crafted(0, j)), 1);
    CHECK_EQ(test_field_u64(f, "stash_entries"), 5);
    for (j = 1; j <= 14; j++)
        REQUIRE_EQ(amq_filter_add_hash(f, crafted(1, j)), 1);
    CHECK_EQ(test_field_u64(f, "expansions"), 1);
    CHECK_EQ(test_field_u64(f, "stash_entries"), 5);
    CHECK_EQ(test_field_u64(f, "entries"), 50);
    for (j = 1; j <= 36; j++)
        CHECK_EQ(amq_filter_contains_hash(f, crafted(0, j)), 1);
    for (j = 1; j <= 14; j++)
        CHECK_EQ(amq_filter_contains_hash(f, crafted(1, j)), 1);
    /* half 1 of bucket 0 got nothing: a key there with a fingerprint no
     * entry shares is absent */
    CHECK_EQ(amq_filter_contains_hash(f, crafted(0, UINT64_C(0x4000) | 1)), 0);
    for (j = 1; j <= 36; j++)
        CHECK_EQ(amq_filter_remove_hash(f, crafted(0, j)), 1);
    CHECK_EQ(test_field_u64(f, "stash_entries"), 0);
    CHECK_EQ(test_field_u64(f, "entries"), 14);
    for (j = 1; j <= 14; j++)
        CHECK_EQ(amq_filter_contains_hash(f, crafted(1, j)), 1);
    amq_filter_free(f);
}

/* The whole file, byte for byte: FNV-1a of the serialization of a fixed
 * filter that doubled twice and has a stash (pinned: a change of layout,
 * hash or order of entries changes it). */
TEST(expandable_golden_bytes)
{
    amq_filter *f = make(1, 0.01);
    uint8_t *buf;
    uint64_t size, i, fnv = UINT64_C(0xcbf29ce484222325);
    size_t len;

    REQUIRE(f != NULL);
    for (i = 0; i < 198; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 9)), 1);
    CHECK_EQ(test_field_u64(f, "stash_entries"), 2);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &len));
    for (i = 0; i < len; i++)
        fnv = (fnv ^ buf[i]) * UINT64_C(0x100000001b3);
    CHECK_EQ(test_field_u64(f, "expansions"), 2);
    CHECK_EQ(len, EXPANDABLE_GOLDEN_LEN);
    CHECK_EQ_U64(fnv, EXPANDABLE_GOLDEN_FNV);
    free(buf);
    amq_filter_free(f);
}

/* Saved, opened mapped: the same answers from the file's pages, writes
 * refused; opened copied: adds continue as on the original. */
TEST(expandable_mmap_and_copy)
{
    amq_filter *f = make(1000, 0.01), *m = NULL, *c = NULL;
    const char *path = test_path("exp.amq");
    amq_errinfo err;
    uint64_t i;

    REQUIRE(f != NULL);
    for (i = 0; i < 300000; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 9)), 1);
    REQUIRE_OK(amq_filter_save(f, path, 0, &err));
    REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_MMAP, NULL, &m, &err));
    REQUIRE_OK(amq_filter_open(path, 0, NULL, &c, &err));
    CHECK_EQ(amq_filter_is_readonly(m), 1);
    for (i = 0; i < 400000; i++) {
        amq_hash128 h = hash_of(f, i, 9);
        int want = amq_filter_contains_hash(f, h);
        if (amq_filter_contains_hash(m, h) != want || amq_filter_contains_hash(c, h) != want)
            FAIL_AT_("key %llu answered differently", (unsigned long long)i);
    }
    CHECK_STATUS(amq_filter_add_hash(m, hash_of(f, 1, 10)), AMQ_EREADONLY);
    CHECK_STATUS(amq_filter_remove_hash(m, hash_of(f, 1, 9)), AMQ_EREADONLY);
    for (i = 0; i < 300000; i++) {
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 11)), 1);
        REQUIRE_EQ(amq_filter_add_hash(c, hash_of(f, i, 11)), 1);
    }
    for (i = 0; i < 300000; i++)
        CHECK_EQ(amq_filter_contains_hash(c, hash_of(f, i, 12)),
                 amq_filter_contains_hash(f, hash_of(f, i, 12)));
    amq_filter_free(m);
    amq_filter_free(c);
    amq_filter_free(f);
}

/* Single-field corruptions of the parameter block are refused. */
TEST(expandable_corrupt_params_refused)
{
    static const struct {
        uint32_t at, v;
    } cases[] = {{0, 8}, {4, 16}, {8, 0}, {8, 49}, {12, 9}, {24, 3}, {32, 200}, {40, 1},
                 {176, 1}, {48, 0xff}};
    amq_filter *f = make(1000, 0.01), *g;
    uint8_t *buf, *cp;
    uint64_t size, i;
    size_t len, c;
    int rc;

    REQUIRE(f != NULL);
    for (i = 0; i < 1000; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 13)), 1);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    cp = malloc((size_t)size);
    REQUIRE(buf != NULL && cp != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &len));
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(cp, buf, len);
        if (cases[c].at == 48) /* an entry count past what the table holds */
            amq_store64(cp + 64 + 48, UINT64_C(1) << 50);
        else
            cp[64 + cases[c].at] = (uint8_t)cases[c].v;
        /* trusted: the checksums are not what refuses it */
        rc = amq_filter_deserialize(cp, len, AMQ_OPEN_TRUST, NULL, &g, NULL);
        if (rc == AMQ_OK) {
            amq_filter_free(g);
            FAIL_AT_("byte %u = %u accepted", cases[c].at, cases[c].v);
        }
    }
    free(buf);
    free(cp);
    amq_filter_free(f);
}

/* A stash count below the cells it holds is refused: the stash would fill
 * past half, where a move could find no free cell. */
TEST(expandable_stash_count_below_cells_refused)
{
    amq_filter *f = make(1000, 0.01), *g;
    uint8_t *buf;
    uint64_t size, i, n;
    size_t len, hlen;

    REQUIRE(f != NULL);
    for (i = 0; i < 200000; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 17)), 1);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &len));
    n = amq_load64(buf + 64 + 32);
    REQUIRE(n > 0);
    REQUIRE_OK(amq_filter_deserialize(buf, len, AMQ_OPEN_TRUST, NULL, &g, NULL));
    amq_filter_free(g);
    amq_store64(buf + 64 + 32, n - 1);
    hlen = 64 + amq_load32(buf + 32); /* the header's checksum, re-signed */
    amq_store64(buf + hlen, XXH3_64bits(buf, hlen));
    CHECK_EQ(amq_filter_deserialize(buf, len, AMQ_OPEN_TRUST, NULL, &g, NULL), AMQ_ECORRUPT);
    free(buf);
    amq_filter_free(f);
}

/* AVX2 buckets answer as the scalar ones (AMQ_SIMD=scalar is read when a
 * filter is made or opened). */
TEST(expandable_simd_matches_scalar)
{
    amq_filter *f = make(1, 0.05), *s = NULL;
    uint8_t *buf;
    uint64_t size, i;
    size_t len;

    REQUIRE(f != NULL);
    for (i = 0; i < 2000000; i++) /* 16 doublings: entries of every length */
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 14)), 1);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &len));
    setenv("AMQ_SIMD", "scalar", 1);
    REQUIRE_OK(amq_filter_deserialize(buf, len, 0, NULL, &s, NULL));
    unsetenv("AMQ_SIMD");
    for (i = 0; i < 2000000; i++) {
        amq_hash128 h = hash_of(f, i, 15);
        if (amq_filter_contains_hash(f, h) != amq_filter_contains_hash(s, h))
            FAIL_AT_("key %llu: AVX2 and scalar differ", (unsigned long long)i);
    }
    free(buf);
    amq_filter_free(s);
    amq_filter_free(f);
}

/* The one-key query that hashes the key itself (contains_key_of: inline
 * XXH3, AVX2 or scalar body) answers as the hash path does, for keys of
 * several lengths, seeds and hash algorithms, with stash entries present. */
TEST(expandable_key_query_matches_hash_query)
{
    static const uint32_t algos[] = {AMQ_HASH_XXH3, AMQ_HASH_MURMUR3, AMQ_HASH_MULSHIFT};
    static const uint64_t seeds[] = {0, 0x5eed, UINT64_C(0x9e3779b97f4a7c15)};
    size_t a, sd, simd;
    uint64_t i, k[2], disagree, hits;

    for (simd = 0; simd < 2; simd++) {
        if (simd == 1)
            setenv("AMQ_SIMD", "scalar", 1);
        for (a = 0; a < sizeof algos / sizeof algos[0]; a++) {
            for (sd = 0; sd < sizeof seeds / sizeof seeds[0]; sd++) {
                amq_config cfg;
                amq_filter *f = NULL;
                if (amq_hash_check(algos[a], seeds[sd]) != AMQ_OK)
                    continue; /* murmur3's seed is 32 bits */
                amq_config_init(&cfg, AMQ_KIND_EXPANDABLE);
                cfg.capacity = 1;
                cfg.hash_algo = algos[a];
                cfg.seed = seeds[sd];
                REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
                for (i = 0; i < 20000; i++) {
                    k[0] = key_of(i, 21);
                    k[1] = i;
                    REQUIRE_EQ(amq_filter_add(f, k, 8 + (i % 9)), 1);
                }
                CHECK_GT(test_field_u64(f, "stash_entries"), 0);
                disagree = hits = 0;
                for (i = 0; i < 40000; i++) { /* the 20000 added, then as many absent */
                    size_t len = 8 + (i % 9);
                    int byk, byh;
                    k[0] = key_of(i < 20000 ? i : i + 1000000, 21);
                    k[1] = i;
                    byk = amq_filter_contains(f, k, len);
                    byh = amq_filter_contains_hash(f, amq_filter_hash(f, k, len));
                    disagree += (uint64_t)(byk != byh);
                    hits += (uint64_t)byk;
                    if (i < 20000 && byk != 1)
                        FAIL_AT_("algo %u key %llu missing", algos[a], (unsigned long long)i);
                }
                CHECK_EQ(disagree, 0);
                CHECK_LT(hits, 20000 + 400); /* the absent half: about 0.3 % */
                amq_filter_free(f);
            }
        }
    }
    unsetenv("AMQ_SIMD");
}

/* The handle's one-key add (its own hash and its path for a bucket with a
 * free lane) leaves the filter as amq_filter_add_hash of amq_filter_hash
 * does, byte for byte: through doublings, stash moves, copies of one key up
 * to the bound, keys of other lengths and removals, for the bucket tests of
 * both instruction sets and hashes with their own entry or not. */
TEST(expandable_key_add_matches_hash_add)
{
    static const uint32_t algos[] = {AMQ_HASH_XXH3, AMQ_HASH_XXH3, AMQ_HASH_MURMUR3};
    static const uint64_t seeds[] = {0, UINT64_C(0x9e3779b97f4a7c15), 7};
    size_t a, simd, la, lb;
    uint64_t i, k[2], checks = 0;

    for (simd = 0; simd < 2; simd++) {
        if (simd == 1)
            setenv("AMQ_SIMD", "scalar", 1);
        for (a = 0; a < sizeof algos / sizeof algos[0]; a++) {
            amq_config cfg;
            amq_filter *f = NULL, *g = NULL;
            amq_config_init(&cfg, AMQ_KIND_EXPANDABLE);
            cfg.capacity = 1000;
            cfg.hash_algo = algos[a];
            cfg.seed = seeds[a];
            REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
            REQUIRE_OK(amq_filter_new(&cfg, &g, NULL));
            for (i = 0; i < 400000; i++) {
                /* mostly 8-byte keys; every 7th of another length; every 5th
                 * added again (one in 50000 forty times: past the bound) */
                size_t len = i % 7 == 3 ? 8 + i % 9 : 8, r, reps;
                int rf, rg;
                k[0] = key_of(i % 5 == 4 ? i - 1 : i, 23);
                k[1] = i;
                reps = i % 50000 == 17 ? 40 : 1;
                for (r = 0; r < reps; r++) {
                    rf = amq_filter_add(f, k, len);
                    rg = amq_filter_add_hash(g, amq_filter_hash(g, k, len));
                    if (rf != rg)
                        FAIL_AT_("key %llu: add by key %d, by hash %d", (unsigned long long)i,
                                 rf, rg);
                }
                if (i % 11 == 5) { /* remove an earlier key from both */
                    const uint64_t j = i - 5;
                    k[0] = key_of(j % 5 == 4 ? j - 1 : j, 23);
                    k[1] = j;
                    len = j % 7 == 3 ? 8 + j % 9 : 8;
                    CHECK_EQ(amq_filter_remove(f, k, len), amq_filter_remove(g, k, len));
                }
                if (i % 65536 == 40000 || i == 400000 - 1) {
                    uint8_t *bf = test_serialized(f, &la), *bg = test_serialized(g, &lb);
                    REQUIRE(bf != NULL && bg != NULL);
                    CHECK(la == lb && memcmp(bf, bg, la) == 0);
                    checks++;
                    free(bf);
                    free(bg);
                }
            }
            CHECK_GT(test_field_u64(f, "expansions"), 7);
            CHECK_GT(test_field_u64(f, "stash_entries"), 0);
            amq_filter_free(f);
            amq_filter_free(g);
        }
    }
    unsetenv("AMQ_SIMD");
    CHECK_EQ(checks, 2 * 3 * 7);
}

/* The one-key query's own XXH3 for 8-byte keys reads as many of h1's bits
 * as a large table does (bucket and fingerprint: q + 15 = 34 here, where a
 * small table reads only the top ~25, which XXH3's last shifts leave alone):
 * keys added by amq_filter_hash are found by key, for seeds with bits in
 * both halves, and absent keys answer the same both ways. */
TEST(expandable_key_query_xxh3_8_reads_every_bit)
{
    static const uint64_t seeds[] = {0, 0x5eed, UINT64_C(0x9e3779b97f4a7c15),
                                     UINT64_C(0xffffffff00000000)};
    size_t sd, simd;
    uint64_t i, k, disagree;

    for (simd = 0; simd < 2; simd++) {
        if (simd == 1)
            setenv("AMQ_SIMD", "scalar", 1);
        for (sd = 0; sd < sizeof seeds / sizeof seeds[0]; sd++) {
            amq_config cfg;
            amq_filter *f = NULL;
            amq_config_init(&cfg, AMQ_KIND_EXPANDABLE);
            cfg.capacity = UINT64_C(1) << 23; /* 2^19 buckets */
            cfg.seed = seeds[sd];
            REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
            REQUIRE_EQ(test_field_u64(f, "buckets"), UINT64_C(1) << 19);
            for (i = 0; i < 20000; i++) {
                k = key_of(i, 23);
                REQUIRE_EQ(amq_filter_add_hash(f, amq_filter_hash(f, &k, 8)), 1);
            }
            disagree = 0;
            for (i = 0; i < 40000; i++) {
                int byk, byh;
                k = key_of(i < 20000 ? i : i + 1000000, 23);
                byk = amq_filter_contains(f, &k, 8);
                byh = amq_filter_contains_hash(f, amq_filter_hash(f, &k, 8));
                disagree += (uint64_t)(byk != byh);
                if (i < 20000 && byk != 1)
                    FAIL_AT_("seed %llx key %llu missing", (unsigned long long)seeds[sd],
                             (unsigned long long)i);
            }
            CHECK_EQ(disagree, 0);
            amq_filter_free(f);
        }
    }
    unsetenv("AMQ_SIMD");
}

/* ---- doublings spread over the adds --------------------------------------------------- */

/* Is a doubling pending (the old table still held beside the new one)? */
static int doubling(const amq_filter *f)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    return st.bytes > test_field_u64(f, "buckets") * 64 + test_field_u64(f, "stash_cells") * 8;
}

/* The entries at which f doubles next (stats only: cheap per add). */
static uint64_t limit_of(const amq_filter *f)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    return st.capacity;
}

/* f's answers for keys [0, n) of stream `seed` and as many absent ones. */
static void same_answers(const amq_filter *f, const amq_filter *g, uint64_t n, uint64_t seed,
                         const char *what)
{
    uint64_t i, differ = 0;
    for (i = 0; i < 2 * n; i++) {
        amq_hash128 h = hash_of(f, i < n ? i : i - n, i < n ? seed : 98);
        differ += (uint64_t)(amq_filter_contains_hash(f, h) != amq_filter_contains_hash(g, h));
    }
    if (differ != 0)
        FAIL_AT_("%s: %llu answers differ", what, (unsigned long long)differ);
}

/* No add copies the whole table: the add that crosses the limit starts a
 * doubling that the next adds finish, 4 old buckets each (before, the
 * doubling was done inside that one add and none was ever pending). */
/* A refused add (a crowded bucket, a key's 32 copies) changes no byte, during
 * a doubling and a stash move too: g, made as f is, takes only the adds f
 * took (a Redis replica or an AOF replayed: a refused command is not
 * propagated), and takes every one of them, with f's bytes throughout.
 * Before, an add moved buckets and stash cells before it was refused, and
 * g's bytes parted from f's at the first doubling after a refusal; with
 * keys crowded into 2^-9 of the space, g then refused some adds f took (g's
 * old bucket unsplit, f's split: an acknowledged key lost on a replica). */
static void refused_adds_change_nothing(int one_key)
{
    enum { N = 24000 };
    amq_filter *f = make(1000, 0.01), *g = make(1000, 0.01);
    uint8_t *before = NULL, *after, *gb;
    uint64_t i, st = one_key ? 81 : 82, crowd, refused = 0, refused_doubling = 0, moved = 0,
                lost = 0, parted = 0, first_parted = 0;
    size_t lb = 0, la, lg;
    int rc;

    REQUIRE(f != NULL && g != NULL);
    crowd = test_rand(&st) & ~(~UINT64_C(0) >> 9); /* 2^-9 of the space */
    for (i = 0; i < N; i++) {
        amq_hash128 h;
        const uint64_t r = test_rand(&st);
        const int mid = doubling(f);
        h.h1 = i % 2 == 1 ? r : one_key ? crowd : crowd | r >> 9;
        h.h2 = 0;
        before = test_serialized(f, &lb);
        REQUIRE(before != NULL);
        rc = amq_filter_add_hash(f, h);
        if (rc == 1) {
            free(before);
            lost += amq_filter_add_hash(g, h) != 1; /* acknowledged, refused by the copy */
        } else {
            CHECK_STATUS(rc, AMQ_EFULL);
            refused++;
            refused_doubling += (uint64_t)mid;
            after = test_serialized(f, &la);
            REQUIRE(after != NULL);
            moved += !(la == lb && memcmp(before, after, la) == 0);
            free(after);
            free(before);
        }
        if (i % 500 == 499 || i + 1 == N) {
            after = test_serialized(f, &la);
            gb = test_serialized(g, &lg);
            REQUIRE(after != NULL && gb != NULL);
            if (!(la == lg && memcmp(after, gb, la) == 0) && parted++ == 0)
                first_parted = i;
            free(after);
            free(gb);
        }
    }
    if (parted != 0)
        FAIL_AT_("g (the adds f took) differs from f at %llu of %llu checks, first after add %llu",
                 (unsigned long long)parted, (unsigned long long)(N / 500),
                 (unsigned long long)first_parted);
    CHECK_EQ(lost, 0);
    CHECK_EQ(moved, 0);
    CHECK_GT(refused, N / 4);
    CHECK_GT(refused_doubling, 10); /* refusals during doublings too */
    amq_filter_free(f);
    amq_filter_free(g);
}

TEST(expandable_refused_add_of_a_crowded_bucket_changes_nothing)
{
    refused_adds_change_nothing(0);
}

TEST(expandable_refused_copy_of_a_key_changes_nothing)
{
    refused_adds_change_nothing(1);
}

TEST(expandable_doubling_is_spread_over_adds)
{
    amq_filter *f = make(1000, 0.01); /* 64 buckets */
    uint64_t i = 0, buckets, start, n = 2000000, limit;
    int doublings = 0;

    REQUIRE(f != NULL);
    buckets = test_field_u64(f, "buckets");
    limit = limit_of(f);
    for (i = 0; i < n; i++) {
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 30)), 1);
        if (limit_of(f) == limit)
            continue;
        limit = limit_of(f);
        /* a doubling began with this add: 2 * buckets now, the old table kept */
        CHECK_EQ(test_field_u64(f, "buckets"), 2 * buckets);
        CHECK(doubling(f));
        start = i;
        while (doubling(f)) {
            i++;
            REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 30)), 1);
            REQUIRE_EQ(amq_filter_contains_hash(f, hash_of(f, i, 30)), 1);
        }
        /* the crossing add split 4 old buckets, each later add 4 more */
        CHECK_EQ(i - start, buckets / 4 - 1);
        buckets *= 2;
        doublings++;
    }
    CHECK_EQ(doublings, 11);
    for (i = 0; i < n; i++)
        if (!amq_filter_contains_hash(f, hash_of(f, i, 30)))
            FAIL_AT_("key %llu missing", (unsigned long long)i);
    amq_filter_free(f);
}

/* amq_filter_settle ends a doubling just begun past half a million keys:
 * the old table gone, every key present; again, the same bytes; adds then
 * go on through the next doubling. */
TEST(expandable_settle_ends_a_doubling)
{
    amq_filter *f = make(1000, 0.01);
    uint64_t i = 0, buckets, limit;
    uint8_t *a, *b;
    size_t la = 0, lb = 0;
    amq_stats st;

    REQUIRE(f != NULL);
    for (; i < 500000; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 36)), 1);
    for (limit = limit_of(f); limit_of(f) == limit;) /* to the add that begins a doubling */
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i++, 36)), 1);
    REQUIRE(doubling(f));
    buckets = test_field_u64(f, "buckets");
    REQUIRE_OK(amq_filter_settle(f));
    CHECK(!doubling(f));
    CHECK_EQ(test_field_u64(f, "buckets"), buckets);
    amq_filter_stats(f, &st);
    CHECK_EQ(st.items, i);
    CHECK_EQ(st.bytes, buckets * 64 + test_field_u64(f, "stash_cells") * 8);
    for (limit = 0; limit < i; limit++)
        if (!amq_filter_contains_hash(f, hash_of(f, limit, 36)))
            FAIL_AT_("key %llu missing", (unsigned long long)limit);
    a = test_serialized(f, &la);
    REQUIRE(a != NULL);
    REQUIRE_OK(amq_filter_settle(f));
    b = test_serialized(f, &lb);
    REQUIRE(b != NULL);
    CHECK(la == lb && memcmp(a, b, la) == 0);
    free(a);
    free(b);
    for (limit = limit_of(f); limit_of(f) == limit;)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i++, 36)), 1);
    CHECK_EQ(test_field_u64(f, "buckets"), 2 * buckets);
    for (limit = 0; limit < i; limit++)
        if (!amq_filter_contains_hash(f, hash_of(f, limit, 36)))
            FAIL_AT_("key %llu missing", (unsigned long long)limit);
    amq_filter_free(f);
}

/* Packed keys hashed in the batch loop (amq_filter_contains_batch_fixed:
 * XXH3 of 8-byte keys inline under a seed with bits in both halves, other
 * lengths through the hash call) answer as one key at a time: half-way
 * through each doubling from 2^11 old buckets on (a key routed to the old
 * or the new table by the split pointer), with the stash in use, and at
 * the end; every added key present. */
TEST(expandable_batch_fixed_matches_one_key)
{
    static const size_t lens[] = {8, 12};
    enum { ABSENT = 50000 };
    amq_config cfg;
    amq_filter *f;
    const uint64_t n = 1500000;
    uint8_t *keys, *q, *a, *b;
    uint64_t i, j, limit, start, count, want, checks;
    size_t l, len;

    for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        len = lens[l];
        keys = malloc((size_t)(n + ABSENT) * len);
        q = malloc((size_t)(n + ABSENT) * len);
        a = malloc((size_t)(n + ABSENT));
        b = malloc((size_t)(n + ABSENT));
        REQUIRE(keys != NULL && q != NULL && a != NULL && b != NULL);
        for (i = 0; i < n + ABSENT; i++) {
            uint64_t k = key_of(i, 40 + l);
            memcpy(keys + i * len, &k, 8);
            for (j = 8; j < len; j++)
                keys[i * len + j] = (uint8_t)(i * 7 + j);
        }
        amq_config_init(&cfg, AMQ_KIND_EXPANDABLE);
        cfg.capacity = 1000;
        cfg.seed = UINT64_C(0x8000000180000001);
        REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
        limit = limit_of(f);
        checks = 0;
        for (i = 0; i < n; i++) {
            REQUIRE_EQ(amq_filter_add(f, keys + i * len, len), 1);
            if (limit_of(f) == limit && i + 1 < n)
                continue;
            limit = limit_of(f);
            if (test_field_u64(f, "buckets") < 4096 && i + 1 < n)
                continue;
            /* half-way through the doubling that began here (or the end) */
            for (start = i; doubling(f) && i - start < test_field_u64(f, "buckets") / 16;) {
                i++;
                REQUIRE_EQ(amq_filter_add(f, keys + i * len, len), 1);
            }
            CHECK(doubling(f) || i + 1 == n);
            CHECK(test_field_u64(f, "stash_cells") > 0);
            /* keys [0, i] added, then ABSENT never added */
            memcpy(q, keys, (size_t)(i + 1) * len);
            memcpy(q + (i + 1) * len, keys + n * len, (size_t)ABSENT * len);
            for (j = 0, want = 0; j < i + 1 + ABSENT; j++) {
                b[j] = (uint8_t)amq_filter_contains(f, q + j * len, len);
                want += b[j];
                if (j <= i && b[j] != 1)
                    FAIL_AT_("%zu-byte key %llu added, answered absent", len,
                             (unsigned long long)j);
            }
            memset(a, 0xee, (size_t)(i + 1 + ABSENT));
            REQUIRE_OK(amq_filter_contains_batch_fixed(f, q, len, i + 1 + ABSENT, a, &count));
            if (memcmp(a, b, (size_t)(i + 1 + ABSENT)) != 0)
                FAIL_AT_("%zu-byte keys at %llu added: batch answers differ", len,
                         (unsigned long long)(i + 1));
            CHECK_EQ(count, want);
            checks++;
        }
        CHECK(checks >= 6);
        amq_filter_free(f);
        free(keys);
        free(q);
        free(a);
        free(b);
    }
}

/* Lane 31 as docs/file-format.md says it, computed here from the entry: bit
 * i for every 4-bit prefix i of a full-length entry that entry s answers. */
static uint16_t spec_bits(uint16_t s)
{
    uint16_t bits = 0;
    unsigned i;
    for (i = 0; i < 16; i++) {
        /* a full entry of prefix i, its other bits s's */
        const uint16_t e = (uint16_t)(i << 12 | (s & 0x0FFFu) | 1u);
        if ((((s ^ e) & ~(s ^ (s - 1))) & 0xFFFF) == 0)
            bits |= (uint16_t)(1u << i);
    }
    return bits;
}

/* A serialized filter's lane 31 of every bucket against its stash cells:
 * the union of spec_bits over the bucket's cells, 0 without cells.  Returns
 * the number of buckets with cells. */
static uint64_t check_lane31(const uint8_t *buf)
{
    const uint32_t plen = amq_load32(buf + 32);
    const uint32_t q = amq_load32(buf + 64 + 8);
    const uint64_t cap = amq_load64(buf + 64 + 24), nb = UINT64_C(1) << q;
    const uint8_t *table = buf + amq_load64(buf + 40), *stash = table + 64 * nb;
    uint16_t *want = calloc((size_t)nb, sizeof *want);
    uint64_t i, c, with = 0;

    if (want == NULL || plen != 200 || amq_load16(buf + 66) != 1) {
        FAIL_AT_("not a file of lane-31 summaries (parameter block %u bytes)", plen);
        free(want);
        return 0;
    }
    for (i = 0; i < cap; i++)
        if ((c = amq_load64(stash + 8 * i)) != 0)
            want[c >> 16] |= spec_bits((uint16_t)c);
    for (i = 0; i < nb; i++) {
        if (amq_load16(table + 64 * i + 62) != want[i])
            FAIL_AT_("bucket %llu of 2^%u: lane 31 %#x, its cells make %#x",
                     (unsigned long long)i, q, amq_load16(table + 64 * i + 62), want[i]);
        with += want[i] != 0;
    }
    free(want);
    return with;
}

/* Lane 31 is exactly the summary of the bucket's stash cells after adds,
 * doublings (in a file written half-way through one too), removals of
 * stashed and unstashed entries, and void entries; and a file of the older
 * layout (lane 31 a count of the cells) loads, copied or mapped, with every
 * key answering as before. */
TEST(expandable_lane31_sums_up_the_stash)
{
    amq_filter *f = make(1000, 0.01), *g;
    const uint64_t n = 400000;
    uint64_t i, with, plen, nb, cap, c, q;
    uint8_t *buf, *table, *stash;
    size_t len;
    unsigned flags;

    REQUIRE(f != NULL);
    for (i = 0; i < n; i++) {
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 50)), 1);
        if (i == n / 2 || (i % 100000 == 0 && doubling(f))) {
            REQUIRE((buf = test_serialized(f, &len)) != NULL);
            CHECK(check_lane31(buf) > 0);
            free(buf);
        }
    }
    for (i = 0; i < n; i += 3)
        REQUIRE_EQ(amq_filter_remove_hash(f, hash_of(f, i, 50)), 1);
    REQUIRE((buf = test_serialized(f, &len)) != NULL);
    with = check_lane31(buf);
    CHECK(with > 100);
    /* the older layout: lane 31 the count of the bucket's cells */
    plen = amq_load32(buf + 32);
    q = amq_load32(buf + 64 + 8);
    nb = UINT64_C(1) << q;
    cap = amq_load64(buf + 64 + 24);
    table = buf + amq_load64(buf + 40);
    stash = table + 64 * nb;
    for (i = 0; i < nb; i++)
        amq_store16(table + 64 * i + 62, 0);
    for (i = 0; i < cap; i++)
        if ((c = amq_load64(stash + 8 * i)) != 0)
            amq_store16(table + 64 * (c >> 16) + 62,
                        (uint16_t)(amq_load16(table + 64 * (c >> 16) + 62) + 1));
    amq_store16(buf + 66, 0);
    amq_store64(buf + 56, amq_xxh3_64(table, (size_t)amq_load64(buf + 48), 0));
    amq_store64(buf + 64 + plen, amq_xxh3_64(buf, (size_t)(64 + plen), 0));
    for (flags = 0; flags <= AMQ_OPEN_MMAP; flags += AMQ_OPEN_MMAP) {
        REQUIRE_OK(amq_filter_deserialize(buf, len, flags, NULL, &g, NULL));
        for (i = 0; i < n; i++)
            if (amq_filter_contains_hash(g, hash_of(g, i, 50)) !=
                amq_filter_contains_hash(f, hash_of(f, i, 50)))
                FAIL_AT_("older layout, flags %u: key %llu answers differently", flags,
                         (unsigned long long)i);
        for (i = 0; i < n; i++)
            if (amq_filter_contains_hash(g, hash_of(g, i, 51)) !=
                amq_filter_contains_hash(f, hash_of(f, i, 51)))
                FAIL_AT_("older layout, flags %u: absent key %llu answers differently", flags,
                         (unsigned long long)i);
        if (flags == 0) {
            uint8_t *again = test_serialized(g, &len);
            REQUIRE(again != NULL);
            CHECK_EQ(check_lane31(again), with);
            free(again);
        }
        amq_filter_free(g);
    }
    /* a lane-31 layout this library does not know is a newer version */
    amq_store16(buf + 66, 2);
    amq_store64(buf + 64 + plen, amq_xxh3_64(buf, (size_t)(64 + plen), 0));
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &g, NULL), AMQ_EVERSION);
    free(buf);
    amq_filter_free(f);
}

/* The checksums of a file whose bytes a test changed. */
static void reseal(uint8_t *buf)
{
    const uint64_t plen = amq_load32(buf + 32);
    amq_store64(buf + 56, amq_xxh3_64(buf + amq_load64(buf + 40), (size_t)amq_load64(buf + 48), 0));
    amq_store64(buf + 64 + plen, amq_xxh3_64(buf, (size_t)(64 + plen), 0));
}

/* Both loads of buf (copied, mapped) refuse it with AMQ_ECORRUPT. */
static void check_refused(const uint8_t *buf, size_t len, const char *what)
{
    amq_filter *g = NULL;
    unsigned flags;
    for (flags = 0; flags <= AMQ_OPEN_MMAP; flags += AMQ_OPEN_MMAP) {
        int rc = amq_filter_deserialize(buf, len, flags, NULL, &g, NULL);
        if (rc != AMQ_ECORRUPT)
            FAIL_AT_("%s, flags %u: load gave %d, not AMQ_ECORRUPT", what, flags, rc);
        if (rc == AMQ_OK)
            amq_filter_free(g);
    }
}

/* A file whose stash a query could not find (a cell outside its home's
 * probe run, a bucket's lane 31 without a stashed entry's bits, a cell of
 * a bucket the table has not) is refused on load: its stashed keys would
 * answer absent.  The file as written loads, both ways. */
TEST(expandable_load_refuses_a_stash_queries_miss)
{
    amq_filter *f = make(1000, 0.01), *g;
    const uint64_t n = 300000;
    uint64_t i, nb, cap, c, p, e, cell = UINT64_MAX;
    uint8_t *buf, *table, *stash;
    uint16_t meta;
    size_t len;
    unsigned flags;

    REQUIRE(f != NULL);
    for (i = 0; i < n; i++)
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 60)), 1);
    REQUIRE((buf = test_serialized(f, &len)) != NULL);
    for (flags = 0; flags <= AMQ_OPEN_MMAP; flags += AMQ_OPEN_MMAP) {
        REQUIRE_OK(amq_filter_deserialize(buf, len, flags, NULL, &g, NULL));
        amq_filter_free(g);
    }
    nb = UINT64_C(1) << amq_load32(buf + 64 + 8);
    cap = amq_load64(buf + 64 + 24);
    table = buf + amq_load64(buf + 40);
    stash = table + 64 * nb;
    /* a cell at p, and an empty cell e followed by an empty one */
    for (p = 0; p < cap && cell == UINT64_MAX; p++)
        if ((c = amq_load64(stash + 8 * p)) != 0 && (uint16_t)c != 0)
            cell = p;
    for (e = 0; e + 2 < cap; e++)
        if (amq_load64(stash + 8 * e) == 0 && amq_load64(stash + 8 * (e + 1)) == 0)
            break;
    REQUIRE(cell != UINT64_MAX && e + 2 < cap);
    c = amq_load64(stash + 8 * cell);

    /* lane 31 without one of the cell's bits */
    meta = amq_load16(table + 64 * (c >> 16) + 62);
    amq_store16(table + 64 * (c >> 16) + 62, (uint16_t)(meta & ~spec_bits((uint16_t)c)));
    reseal(buf);
    check_refused(buf, len, "lane 31 without a stashed entry");
    amq_store16(table + 64 * (c >> 16) + 62, meta);

    /* the cell moved past an empty cell, out of its home's run (its home
     * is not e + 1: then it would be in its run) */
    REQUIRE(((c >> 16) * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - __builtin_ctzll(cap)) != e + 1);
    amq_store64(stash + 8 * cell, 0);
    amq_store64(stash + 8 * (e + 1), c);
    reseal(buf);
    check_refused(buf, len, "a cell out of its run");
    amq_store64(stash + 8 * (e + 1), 0);
    amq_store64(stash + 8 * cell, c);

    /* a cell of a bucket past the table */
    amq_store64(stash + 8 * cell, nb << 16 | (uint16_t)c);
    reseal(buf);
    check_refused(buf, len, "a cell of bucket 2^q");
    amq_store64(stash + 8 * cell, c);

    reseal(buf);
    REQUIRE_OK(amq_filter_deserialize(buf, len, 0, NULL, &g, NULL));
    for (i = 0; i < n; i++)
        if (amq_filter_contains_hash(g, hash_of(g, i, 60)) != 1)
            FAIL_AT_("key %llu answers absent in the restored file", (unsigned long long)i);
    amq_filter_free(g);
    free(buf);
    amq_filter_free(f);
}

/* At real sizes, with removals during every doubling and, half-way through
 * the larger ones: every present key answers; a serialization (the split
 * table written on the fly) loads, copied and mapped, answering exactly as
 * the filter; a clone too; and adds and removals go on in both. */
TEST(expandable_doubling_keeps_every_key)
{
    amq_filter *f = make(1000, 0.01), *g = NULL, *m = NULL, *c = NULL;
    const char *path = test_path("mid.amq");
    uint64_t n = 3000000, i, j, buckets, start = 0, removed = 0, size, mids = 0, limit;
    uint8_t *present = calloc((size_t)n, 1), *buf;
    amq_errinfo err;
    size_t len;

    REQUIRE(f != NULL && present != NULL);
    buckets = test_field_u64(f, "buckets");
    limit = limit_of(f);
    for (i = 0; i < n; i++) {
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 31)), 1);
        present[i] = 1;
        if (limit_of(f) != limit) {
            limit = limit_of(f);
            buckets = test_field_u64(f, "buckets");
            start = i;
        }
        /* a doubling of buckets / 2 old buckets lasts buckets / 8 adds */
        if (i - start >= buckets / 8)
            continue;
        /* removals during the doubling: keys of split and unsplit buckets */
        j = (i * 7919) % (i + 1);
        if (present[j]) {
            REQUIRE_EQ(amq_filter_remove_hash(f, hash_of(f, j, 31)), 1);
            present[j] = 0;
            removed++;
        }
        if (buckets < (UINT64_C(1) << 15) || i - start != buckets / 16)
            continue;
        /* half-way through a doubling of 2^14 old buckets or more */
        CHECK(doubling(f));
        mids++;
        for (j = 0; j <= i; j++)
            if (present[j] && !amq_filter_contains_hash(f, hash_of(f, j, 31)))
                FAIL_AT_("key %llu missing during a doubling", (unsigned long long)j);
        REQUIRE_OK(amq_filter_serialized_size(f, &size));
        buf = malloc((size_t)size);
        REQUIRE(buf != NULL);
        REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &len));
        CHECK_EQ(len, size);
        REQUIRE_OK(amq_filter_deserialize(buf, len, 0, NULL, &g, NULL));
        free(buf);
        REQUIRE_OK(amq_filter_save(f, path, 0, &err));
        REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_MMAP, NULL, &m, &err));
        REQUIRE_OK(amq_filter_clone(f, NULL, &c));
        CHECK(!doubling(g));
        CHECK_EQ(test_field_u64(g, "buckets"), buckets);
        CHECK_EQ(test_field_u64(g, "entries"), test_field_u64(f, "entries"));
        same_answers(f, g, i + 1, 31, "loaded mid-doubling");
        same_answers(f, m, i + 1, 31, "mapped mid-doubling");
        same_answers(f, c, i + 1, 31, "cloned mid-doubling");
        amq_filter_free(m);
        /* both go on: the clone finishes the doubling, the loaded copy has none */
        for (j = 0; j < 100000; j++) {
            REQUIRE_EQ(amq_filter_add_hash(g, hash_of(f, j, 32)), 1);
            REQUIRE_EQ(amq_filter_add_hash(c, hash_of(f, j, 32)), 1);
            if (j % 3 == 0 && present[j]) {
                REQUIRE_EQ(amq_filter_remove_hash(g, hash_of(f, j, 31)), 1);
                REQUIRE_EQ(amq_filter_remove_hash(c, hash_of(f, j, 31)), 1);
            }
        }
        CHECK(!doubling(c));
        for (j = 0; j <= i; j++) {
            amq_hash128 h = hash_of(f, j, 31);
            if (present[j] && (j % 3 != 0 || j >= 100000) &&
                (!amq_filter_contains_hash(g, h) || !amq_filter_contains_hash(c, h)))
                FAIL_AT_("key %llu missing in the loaded copy or the clone", (unsigned long long)j);
        }
        for (j = 0; j < 100000; j++)
            if (!amq_filter_contains_hash(g, hash_of(f, j, 32)) ||
                !amq_filter_contains_hash(c, hash_of(f, j, 32)))
                FAIL_AT_("key %llu of stream 32 missing", (unsigned long long)j);
        amq_filter_free(g);
        amq_filter_free(c);
    }
    CHECK_EQ(mids, 3); /* to 2^15, 2^16 and 2^17 buckets */
    CHECK_GT(removed, 10000);
    for (i = 0; i < n; i++)
        if (present[i] && !amq_filter_contains_hash(f, hash_of(f, i, 31)))
            FAIL_AT_("key %llu missing at the end", (unsigned long long)i);
    free(present);
    amq_filter_free(f);
}

/* The stash grows without a pause too: when it doubles outside a table
 * doubling, its cells move from the smaller array over the next adds (8
 * cells examined per add), every key answers meanwhile, and a filter saved
 * then is written with the one, larger stash. */
TEST(expandable_stash_grows_without_a_pause)
{
    amq_filter *f = make(1000, 0.01), *g = NULL;
    uint64_t i, j, cells, buckets, start = 0, size, seen = 0, moves, limit, bytes;
    uint8_t *buf;
    size_t len;
    amq_stats st;

    REQUIRE(f != NULL);
    buckets = test_field_u64(f, "buckets");
    amq_filter_stats(f, &st);
    limit = st.capacity;
    bytes = st.bytes;
    for (i = 0; i < 1700000; i++) {
        REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 34)), 1);
        amq_filter_stats(f, &st);
        if (st.capacity != limit) {
            limit = st.capacity;
            buckets = test_field_u64(f, "buckets");
            start = i;
        }
        if (st.bytes <= bytes) { /* the stash grew, or the table */
            bytes = st.bytes;
            continue;
        }
        bytes = st.bytes;
        cells = test_field_u64(f, "stash_cells");
        if (cells < 4096 || i - start < buckets / 8) /* small, or in a table doubling */
            continue;
        seen++;
        CHECK(doubling(f)); /* the smaller array is still held */
        REQUIRE_OK(amq_filter_serialized_size(f, &size));
        buf = malloc((size_t)size);
        REQUIRE(buf != NULL);
        REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &len));
        CHECK_EQ(amq_load64(buf + 64 + 24), cells);
        REQUIRE_OK(amq_filter_deserialize(buf, len, 0, NULL, &g, NULL));
        free(buf);
        same_answers(f, g, i + 1, 34, "loaded during a stash move");
        CHECK_EQ(test_field_u64(g, "stash_entries"), test_field_u64(f, "stash_entries"));
        amq_filter_free(g);
        for (moves = 0; st.bytes > buckets * 64 + cells * 8; moves++) {
            i++;
            REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, i, 34)), 1);
            amq_filter_stats(f, &st);
            if (moves % 256 == 0)
                for (j = 0; j <= i; j += 7)
                    if (!amq_filter_contains_hash(f, hash_of(f, j, 34)))
                        FAIL_AT_("key %llu missing during a stash move", (unsigned long long)j);
        }
        bytes = st.bytes;
        /* 8 positions per add: the cells/2 of the smaller array, and a
         * position again after each of its cells/4 cells moves */
        CHECK_LE(moves, 3 * cells / 32 + 1);
        CHECK_GT(moves, 1);
    }
    CHECK_GE(seen, 2);
    for (i = 0; i < 1700000; i++)
        if (!amq_filter_contains_hash(f, hash_of(f, i, 34)))
            FAIL_AT_("key %llu missing", (unsigned long long)i);
    amq_filter_free(f);
}

/* A random mix of adds (new keys and duplicates), removals of added keys,
 * queries, serialize-and-reload and clones, from one bucket pair through
 * many doublings, against a model of how many times each key is in: a key
 * added more times than removed always answers. */
TEST(expandable_random_model)
{
    enum { POOL = 400000 };
    uint32_t *count = calloc(POOL, sizeof *count);
    uint64_t st = UINT64_C(0x5eed0044), op, k, used = 0, live = 0, checks = 0, swaps = 0;
    amq_filter *f = make(1, 0.05), *g;
    uint8_t *buf;
    uint64_t size;
    size_t len;

    REQUIRE(f != NULL && count != NULL);
    for (op = 0; op < 1500000; op++) {
        uint64_t r = test_rand(&st), what = r % 100;
        if (what < 60 || live == 0) { /* add: a new key, or one already in */
            k = (what % 4 == 0 && used > 0) ? (r >> 8) % used : used < POOL ? used++ : (r >> 8) % POOL;
            REQUIRE_EQ(amq_filter_add_hash(f, hash_of(f, k, 33)), 1);
            count[k]++;
            live++;
        } else if (what < 85) { /* remove a key that is in */
            k = (r >> 8) % used;
            if (count[k] == 0)
                continue;
            REQUIRE_EQ(amq_filter_remove_hash(f, hash_of(f, k, 33)), 1);
            count[k]--;
            live--;
        } else if (what < 99) { /* query a key that is in */
            k = (r >> 8) % used;
            if (count[k] != 0 && !amq_filter_contains_hash(f, hash_of(f, k, 33)))
                FAIL_AT_("seed 0x5eed0044 op %llu: key %llu missing", (unsigned long long)op,
                         (unsigned long long)k);
        } else if ((r >> 8) % 64 == 0 || doubling(f)) { /* f by its reload or its clone */
            if ((r >> 20) & 1) {
                REQUIRE_OK(amq_filter_serialized_size(f, &size));
                buf = malloc((size_t)size);
                REQUIRE(buf != NULL);
                REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &len));
                REQUIRE_OK(amq_filter_deserialize(buf, len, 0, NULL, &g, NULL));
                free(buf);
            } else {
                REQUIRE_OK(amq_filter_clone(f, NULL, &g));
            }
            swaps += (uint64_t)doubling(f);
            amq_filter_free(f);
            f = g;
        }
        if (op % 20011 == 0 || (op % 997 == 0 && doubling(f))) {
            checks++;
            for (k = 0; k < used; k++)
                if (count[k] != 0 && !amq_filter_contains_hash(f, hash_of(f, k, 33)))
                    FAIL_AT_("seed 0x5eed0044 op %llu: key %llu (in %u times) missing",
                             (unsigned long long)op, (unsigned long long)k, count[k]);
        }
    }
    CHECK_GT(swaps, 0); /* some reloads and clones were of a filter mid-doubling */
    CHECK_GT(test_field_u64(f, "expansions"), 12);
    for (k = 0; k < used; k++)
        if (count[k] != 0 && !amq_filter_contains_hash(f, hash_of(f, k, 33)))
            FAIL_AT_("key %llu missing at the end", (unsigned long long)k);
    free(count);
    amq_filter_free(f);
}

TEST_MAIN()
