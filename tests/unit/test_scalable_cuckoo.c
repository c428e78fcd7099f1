/*
 * test_scalable_cuckoo.c - RedisBloom's CF: the published expectations
 * (RedisBloom's documentation and its tests/flow/test_cuckoo.py), the dump
 * format, hostile input, compaction; and the native mode.
 */
#include <stdlib.h>
#include <string.h>

#include "amq.h"
#include "batch.h"
#include "test.h"

static amq_scuckoo *make_rb(uint64_t cap, uint32_t bs, uint32_t iters, uint32_t exp)
{
    amq_scuckoo_params p;
    amq_scuckoo *c = NULL;
    amq_scuckoo_params_init(&p, 1);
    p.capacity = cap;
    if (bs != 0)
        p.bucket_size = bs;
    if (iters != 0)
        p.max_kicks = iters;
    p.expansion = exp;
    if (amq_scuckoo_new(&p, NULL, &c) != AMQ_OK)
        return NULL;
    return c;
}

/* CF.ADD k str(i) for i in [from, to): the number of adds that succeeded
 * before the first failure; *rc receives that failure (or 1). */
static int add_range(amq_scuckoo *c, int from, int to, int *rc)
{
    char key[32];
    int i, r = 1;
    for (i = from; i < to; i++) {
        int len = snprintf(key, sizeof key, "%d", i);
        r = amq_scuckoo_add(c, key, (size_t)len);
        if (r != 1)
            break;
    }
    if (rc != NULL)
        *rc = r;
    return i - from;
}

static amq_scuckoo_info info_of(const amq_scuckoo *c)
{
    amq_scuckoo_info in;
    amq_scuckoo_get_info(c, &in);
    return in;
}

TEST(scuckoo_docs_item1)
{
    /* CF.RESERVE cf 8; CF.ADD cf item1: fingerprint 7 in bucket 2 of 4;
     * SCANDUMP gives this header and the data chunk 00 00 00 00 07 00 00 00. */
    static const uint8_t header[38] = {
        1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 20, 0, 1, 0};
    static const uint8_t data[8] = {0, 0, 0, 0, 7, 0, 0, 0};
    amq_scuckoo *c = make_rb(8, 0, 0, 1), *d;
    amq_scuckoo_header h;
    uint8_t buf[64];
    const uint8_t *chunk;
    size_t len;
    uint64_t next, nb;
    uint64_t hv = amq_murmur64a("item1", 5, 0);

    REQUIRE(c != NULL);
    CHECK_EQ(hv % 255 + 1, 7);
    CHECK_EQ(hv % 4, 2);
    REQUIRE_EQ(amq_scuckoo_add(c, "item1", 5), 1);
    REQUIRE_OK(amq_scuckoo_header_serialize(c, buf, sizeof buf));
    CHECK(memcmp(buf, header, 38) == 0);
    REQUIRE_OK(amq_scuckoo_chunk(c, 1, 0, &chunk, &len, &next));
    REQUIRE_EQ(len, 8);
    CHECK(memcmp(chunk, data, 8) == 0);
    CHECK_EQ(next, 9);
    REQUIRE_OK(amq_scuckoo_chunk(c, 9, 0, &chunk, &len, &next));
    CHECK_EQ(len, 0);
    CHECK_EQ(next, 0);
    /* LOADCHUNK 1 header; LOADCHUNK 9 data; CF.EXISTS item1 -> 1. */
    REQUIRE_OK(amq_scuckoo_header_decode(header, 38, &h));
    REQUIRE_OK(amq_scuckoo_from_header(&h, NULL, NULL, &d));
    CHECK_EQ(amq_scuckoo_contains(d, "item1", 5), 0);
    REQUIRE_OK(amq_scuckoo_chunk_apply(d, 9, data, 8));
    CHECK_EQ(amq_scuckoo_contains(d, "item1", 5), 1);
    REQUIRE_OK(amq_scuckoo_check(d));
    REQUIRE_OK(amq_scuckoo_link(d, 0, &nb, &chunk, &len));
    CHECK_EQ(nb, 4);
    CHECK(memcmp(chunk, data, 8) == 0);
    amq_scuckoo_free(c);
    amq_scuckoo_free(d);
}

TEST(scuckoo_info_reserve_1000)
{
    /* CF.RESERVE a 1000: Size 1080, 512 buckets, 1 filter, bucket size 2,
     * expansion 1, max iterations 20.  CF.RESERVE b 10: 8 buckets. */
    amq_scuckoo *c = make_rb(1000, 0, 0, 1);
    amq_scuckoo_info in;
    REQUIRE(c != NULL);
    in = info_of(c);
    CHECK_EQ(in.info_bytes, 1080);
    CHECK_EQ(in.num_buckets, 512);
    CHECK_EQ(in.links, 1);
    CHECK_EQ(in.items, 0);
    CHECK_EQ(in.deletes, 0);
    CHECK_EQ(in.bucket_size, 2);
    CHECK_EQ(in.expansion, 1);
    CHECK_EQ(in.max_kicks, 20);
    amq_scuckoo_free(c);
    c = make_rb(10, 0, 10, 1);
    REQUIRE(c != NULL);
    CHECK_EQ(info_of(c).num_buckets, 8);
    amq_scuckoo_free(c);
    /* CF.INSERT f3 CAPACITY 10000: 8192 buckets; expansion 3 is used as 4. */
    c = make_rb(10000, 0, 0, 3);
    REQUIRE(c != NULL);
    CHECK_EQ(info_of(c).num_buckets, 8192);
    CHECK_EQ(info_of(c).expansion, 4);
    amq_scuckoo_free(c);
}

TEST(scuckoo_bucket_sizes_and_expansions)
{
    /* test_bucket_size and test_expansion: 1000 adds of "0".."999". */
    static const struct {
        uint64_t cap;
        uint32_t bs, iters, exp;
        uint64_t buckets, filters;
    } cases[] = {
        {64, 1, 0, 1, 64, 18},  {64, 2, 0, 1, 32, 17}, {256, 4, 500, 1, 64, 4},
        {64, 2, 0, 2, 32, 5},   {64, 2, 500, 4, 32, 3},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        amq_scuckoo *c = make_rb(cases[i].cap, cases[i].bs, cases[i].iters, cases[i].exp);
        amq_scuckoo_info in;
        char key[16];
        int j;
        REQUIRE(c != NULL);
        CHECK_EQ(add_range(c, 0, 1000, NULL), 1000);
        for (j = 0; j < 1000; j++) {
            int len = snprintf(key, sizeof key, "%d", j);
            if (!amq_scuckoo_contains(c, key, (size_t)len))
                FAIL_AT_("case %zu: %s missing", i, key);
        }
        in = info_of(c);
        CHECK_EQ(in.num_buckets, cases[i].buckets);
        CHECK_EQ(in.links, cases[i].filters);
        CHECK_EQ(in.items, 1000);
        REQUIRE_OK(amq_scuckoo_check(c));
        amq_scuckoo_free(c);
    }
}

TEST(scuckoo_max_expansions_124)
{
    /* CF.RESERVE cf 4 takes "0".."123"; then every add fails with
     * "Maximum expansions reached". */
    amq_scuckoo *c = make_rb(4, 0, 0, 1);
    int rc;
    REQUIRE(c != NULL);
    CHECK_EQ(add_range(c, 0, 124, &rc), 124);
    CHECK_EQ(info_of(c).links, 32);
    CHECK_STATUS(amq_scuckoo_add(c, "2048", 4), AMQ_ELIMIT);
    CHECK_EQ(info_of(c).items, 124);
    amq_scuckoo_free(c);
}

TEST(scuckoo_expansion_0_full)
{
    /* CF.RESERVE a 4 EXPANSION 0: 1..4 fit, 5 and 6 are "Filter is full",
     * and a refused insert leaves the array untouched (kicks rolled back). */
    amq_scuckoo *c = make_rb(4, 0, 0, 0);
    const uint8_t *d;
    uint8_t before[4];
    size_t len;
    REQUIRE(c != NULL);
    CHECK_EQ(amq_scuckoo_add(c, "1", 1), 1);
    CHECK_EQ(amq_scuckoo_add(c, "2", 1), 1);
    CHECK_EQ(amq_scuckoo_add(c, "3", 1), 1);
    CHECK_EQ(amq_scuckoo_add(c, "4", 1), 1);
    REQUIRE_OK(amq_scuckoo_link(c, 0, NULL, &d, &len));
    REQUIRE_EQ(len, 4);
    memcpy(before, d, 4);
    CHECK_STATUS(amq_scuckoo_add(c, "5", 1), AMQ_EFULL);
    CHECK_STATUS(amq_scuckoo_add(c, "6", 1), AMQ_EFULL);
    CHECK(memcmp(before, d, 4) == 0);
    CHECK_EQ(info_of(c).items, 4);
    amq_scuckoo_free(c);
}

TEST(scuckoo_count_del_addnx)
{
    /* test_count / test_setnx. */
    amq_scuckoo *c = make_rb(1000, 0, 0, 1);
    REQUIRE(c != NULL);
    CHECK_EQ(amq_scuckoo_contains(c, "k1", 2), 0);
    CHECK_EQ(amq_scuckoo_add(c, "k1", 2), 1);
    CHECK_EQ(amq_scuckoo_add(c, "k1", 2), 1);
    CHECK_EQ(t_scuckoo_count(c, "k1", 2), 2);
    CHECK_EQ(amq_scuckoo_remove(c, "k1", 2), 1);
    CHECK_EQ(t_scuckoo_count(c, "k1", 2), 1);
    CHECK_EQ(amq_scuckoo_remove(c, "k1", 2), 1);
    CHECK_EQ(t_scuckoo_count(c, "k1", 2), 0);
    CHECK_EQ(amq_scuckoo_remove(c, "k1", 2), 0);
    CHECK_EQ(info_of(c).deletes, 2);
    CHECK_EQ(amq_scuckoo_add_unique(c, "k2", 2), 1);
    CHECK_EQ(amq_scuckoo_add_unique(c, "k2", 2), 0);
    CHECK_EQ(t_scuckoo_count(c, "k2", 2), 1);
    CHECK_EQ(amq_scuckoo_add(c, "k2", 2), 1);
    CHECK_EQ(t_scuckoo_count(c, "k2", 2), 2);
    amq_scuckoo_free(c);
}

TEST(scuckoo_count_same_bucket_quirk)
{
    /* With 2 buckets, a key whose i1 == i2 has its fingerprint counted in
     * "both" buckets, as RedisBloom does. */
    amq_scuckoo *c = make_rb(4, 0, 0, 1);
    char key[16];
    int i, len = 0;
    uint64_t h = 0, fp;
    REQUIRE(c != NULL);
    for (i = 0; i < 1000; i++) {
        len = snprintf(key, sizeof key, "q%d", i);
        h = amq_murmur64a(key, (size_t)len, 0);
        fp = h % 255 + 1;
        if ((h & 1) == ((h ^ (fp * AMQ_SCUCKOO_ALT_MUL)) & 1))
            break;
    }
    REQUIRE(i < 1000);
    CHECK_EQ(amq_scuckoo_add(c, key, (size_t)len), 1);
    CHECK_EQ(t_scuckoo_count(c, key, (size_t)len), 2);
    amq_scuckoo_free(c);
}

TEST(scuckoo_compaction)
{
    /* Many links, then deletes: the delete path compacts when more
     * than 10 % of the items were deleted; nothing still in is lost. */
    amq_scuckoo *c = make_rb(8, 0, 50, 1);
    char key[16];
    int i, len;
    uint64_t before;
    REQUIRE(c != NULL);
    CHECK_EQ(add_range(c, 0, 100, NULL), 100);
    before = info_of(c).links;
    CHECK_GE(before, 10);
    for (i = 0; i < 60; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        CHECK_EQ(amq_scuckoo_remove(c, key, (size_t)len), 1);
    }
    CHECK_LT(info_of(c).links, before);
    CHECK_LT(info_of(c).deletes, 60);
    for (i = 60; i < 100; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        if (!amq_scuckoo_contains(c, key, (size_t)len))
            FAIL_AT_("%s lost by compaction", key);
    }
    amq_scuckoo_compact(c, 1);
    CHECK_EQ(info_of(c).deletes, 0);
    CHECK_LE(info_of(c).links, 8);
    for (i = 60; i < 100; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        if (!amq_scuckoo_contains(c, key, (size_t)len))
            FAIL_AT_("%s lost by CF.COMPACT", key);
    }
    CHECK_EQ(info_of(c).items, 40);
    REQUIRE_OK(amq_scuckoo_check(c));
    amq_scuckoo_free(c);
}

/* Interleaved adds, deletes and lookups against an exact model, growing
 * and compacting: zero false negatives. */
static void scuckoo_model(int redisbloom, uint32_t fbits, uint64_t ops, uint64_t seed)
{
    amq_scuckoo_params p;
    amq_scuckoo *c;
    uint64_t st = seed, pool = 3000, i, fn = 0, bad = 0;
    amq_hash128 *keys = malloc(pool * sizeof *keys);
    uint32_t *count = calloc(pool, sizeof *count);

    amq_scuckoo_params_init(&p, redisbloom);
    p.capacity = 64;
    p.fingerprint_bits = fbits;
    p.max_links = 64;
    if (keys == NULL || count == NULL || amq_scuckoo_new(&p, NULL, &c) != AMQ_OK) {
        FAIL_AT_("setup");
        free(keys);
        free(count);
        return;
    }
    for (i = 0; i < pool; i++) {
        keys[i].h1 = test_rand(&st);
        keys[i].h2 = test_rand(&st);
    }
    for (i = 0; i < ops; i++) {
        uint64_t r = test_rand(&st), k = (r >> 8) % pool;
        if ((r & 0xff) < 120) {
            int rc;
            if (count[k] >= 2) /* many copies of one key force growth */
                continue;
            rc = amq_scuckoo_add_hash(c, keys[k]);
            if (rc == 1)
                count[k]++;
            else if (rc != AMQ_ELIMIT)
                bad++;
        } else if ((r & 0xff) < 200) {
            if (count[k] > 0) {
                bad += amq_scuckoo_remove_hash(c, keys[k]) != 1;
                count[k]--;
            }
        } else if (count[k] > 0 && !amq_scuckoo_contains_hash(c, keys[k])) {
            fn++;
        }
    }
    for (i = 0; i < pool; i++)
        fn += count[i] > 0 && !amq_scuckoo_contains_hash(c, keys[i]);
    if (fn != 0 || bad != 0 || amq_scuckoo_check(c) != AMQ_OK)
        FAIL_AT_("mode %d f=%u seed %" PRIu64 ": %" PRIu64 " false negatives, %" PRIu64
                 " bad results", redisbloom, fbits, seed, fn, bad);
    amq_scuckoo_free(c);
    free(keys);
    free(count);
}

/* One key added again and again: in native mode its copies stop when its
 * two buckets of the last link hold nothing else (AMQ_EFULL, nothing
 * changed, the key present), where each link more for it doubled the
 * filter (a hunt session: 192 adds of one key, 24 links, 34 GB and
 * MemoryError); other keys still go in.  RedisBloom's layout grows for it,
 * as RedisBloom does, up to its link limit. */
TEST(scuckoo_copies_of_one_key_are_bounded)
{
    amq_scuckoo_params p;
    amq_scuckoo *c = NULL, *rb;
    int i, took = 0, rc, n;
    amq_scuckoo_params_init(&p, 0);
    p.capacity = 1000;
    REQUIRE_OK(amq_scuckoo_new(&p, NULL, &c));
    for (i = 0; i < 200; i++) {
        rc = amq_scuckoo_add(c, "same", 4);
        if (rc == 1)
            took++;
        else
            CHECK_STATUS(rc, AMQ_EFULL);
    }
    CHECK_EQ(took, (int)(2 * p.bucket_size));
    CHECK_EQ(info_of(c).links, 1);
    CHECK_EQ(amq_scuckoo_count(c, "same", 4), 2 * p.bucket_size);
    CHECK_EQ(amq_scuckoo_contains(c, "same", 4), 1);
    CHECK_EQ(add_range(c, 0, 5000, &rc), 5000); /* and the chain grows for other keys */
    CHECK_GT(info_of(c).links, 1);
    for (i = 0; i < 5000; i++) {
        char key[16];
        n = snprintf(key, sizeof key, "%d", i);
        if (amq_scuckoo_contains(c, key, (size_t)n) != 1)
            FAIL_AT_("key %d missing", i);
    }
    CHECK_EQ(amq_scuckoo_remove(c, "same", 4), 1);
    CHECK_EQ(amq_scuckoo_contains(c, "same", 4), 1);
    amq_scuckoo_free(c);
    REQUIRE((rb = make_rb(1000, 0, 0, 1)) != NULL);
    for (i = 0, took = 0; i < 100; i++)
        took += amq_scuckoo_add(rb, "same", 4) == 1;
    CHECK_EQ(took, 100);
    CHECK_GT(info_of(rb).links, 1);
    amq_scuckoo_free(rb);
}

TEST(scuckoo_model)
{
    scuckoo_model(1, 8, 200000, 11);
    scuckoo_model(0, 12, 200000, 12);
    scuckoo_model(0, 16, 200000, 13);
}

TEST(scuckoo_native_every_width)
{
    /* Native mode packs any width the cuckoo kind takes. */
    uint32_t f;
    for (f = 4; f <= 32; f++)
        scuckoo_model(0, f, 20000, 100 + f);
}

SLOW_TEST(scuckoo_model_millions)
{
    scuckoo_model(1, 8, 3000000, 21);
    scuckoo_model(0, 16, 3000000, 22);
}

TEST(scuckoo_native_fpp)
{
    /* 16-bit fingerprints in 4-slot buckets: ~2 * 4 / 65535 per link
     * at full load. */
    amq_scuckoo_params p;
    amq_scuckoo *c;
    uint64_t st = 99, i, fp = 0;
    amq_hash128 h;
    amq_scuckoo_params_init(&p, 0);
    p.capacity = 100000;
    REQUIRE_OK(amq_scuckoo_new(&p, NULL, &c));
    for (i = 0; i < 100000; i++) {
        h.h1 = test_rand(&st);
        h.h2 = test_rand(&st);
        REQUIRE_EQ(amq_scuckoo_add_hash(c, h), 1);
    }
    for (i = 0; i < 1000000; i++) {
        h.h1 = test_rand(&st);
        h.h2 = test_rand(&st);
        fp += (uint64_t)amq_scuckoo_contains_hash(c, h);
    }
    if (!((double)fp / 1e6 < 3.0 * 8.0 / 65535.0))
        FAIL_AT_("native fpp %g (seed 99)", (double)fp / 1e6);
    amq_scuckoo_free(c);
}

/* ---- hostile dump chunks --------------------------------------------------------- */

static void put_header(uint8_t *b, uint64_t items, uint64_t nb, uint64_t dels, uint64_t nf,
                       uint16_t bs, uint16_t it, uint16_t exp)
{
    int i;
    for (i = 0; i < 8; i++) {
        b[i] = (uint8_t)(items >> (8 * i));
        b[8 + i] = (uint8_t)(nb >> (8 * i));
        b[16 + i] = (uint8_t)(dels >> (8 * i));
        b[24 + i] = (uint8_t)(nf >> (8 * i));
    }
    b[32] = (uint8_t)bs;
    b[33] = (uint8_t)(bs >> 8);
    b[34] = (uint8_t)it;
    b[35] = (uint8_t)(it >> 8);
    b[36] = (uint8_t)exp;
    b[37] = (uint8_t)(exp >> 8);
}

/* Decodes and builds; a filter built is then filled with junk chunks and
 * used, which must never crash whatever its counts say. */
static int load_header(const uint8_t *b, size_t len)
{
    amq_scuckoo_header h;
    amq_scuckoo *c = NULL;
    uint8_t junk[64];
    uint64_t st = len, it;
    size_t i;
    int rc = amq_scuckoo_header_decode(b, len, &h);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_scuckoo_from_header(&h, NULL, NULL, &c);
    if (rc == AMQ_OK) {
        for (i = 0; i < sizeof junk; i++)
            junk[i] = (uint8_t)test_rand(&st);
        for (it = 1; it < 4096; it += 37)
            (void)amq_scuckoo_chunk_apply(c, it, junk, (size_t)(it % 64));
        for (i = 0; i < 64; i++) {
            amq_hash128 k;
            k.h1 = test_rand(&st);
            k.h2 = test_rand(&st);
            (void)amq_scuckoo_add_hash(c, k);
            (void)amq_scuckoo_remove_hash(c, k);
            (void)amq_scuckoo_remove_hash(c, k);
            (void)amq_scuckoo_contains_hash(c, k);
            (void)t_scuckoo_count_hash(c, k);
        }
        amq_scuckoo_compact(c, 1);
        (void)amq_scuckoo_check(c);
    }
    amq_scuckoo_free(c);
    return rc;
}

/* A header of 38 bytes exactly: one short is truncated, one long corrupt. */
TEST(scuckoo_hostile_header_length)
{
    uint8_t b[40];
    put_header(b, 0, 4, 0, 1, 2, 20, 1);
    CHECK_STATUS(load_header(b, 38), AMQ_OK);
    CHECK_STATUS(load_header(b, 37), AMQ_ETRUNC);
    CHECK_STATUS(load_header(b, 39), AMQ_ECORRUPT);
}

/* One bad field at a time, each refused as corrupt; sizes that would
 * overflow or exhaust memory are refused before any allocation. */
TEST(scuckoo_hostile_header_fields)
{
    static const struct {
        uint64_t items, nb, nf;
        uint16_t bs, it, exp;
        const char *why;
    } bad[] = {
        {0, 3, 1, 2, 20, 1, "buckets not a power of two"},
        {0, 0, 1, 2, 20, 1, "no buckets"},
        {0, 4, 0, 2, 20, 1, "no sub-filter"},
        {9, 4, 1, 2, 20, 1, "more items than slots"},
        {0, 4, 1, 0, 20, 1, "bucket size 0"},
        {0, 4, 1, 256, 20, 1, "bucket size 256"},
        {0, 4, 1, 2, 0, 1, "max iterations 0"},
        {0, 4, 2, 2, 20, 40000, "expansion out of range"},
        {0, 4, 2, 2, 20, 0, "two sub-filters without expansion"},
        {0, UINT64_C(1) << 62, 1, 2, 20, 1, "buckets overflow"},
        {0, 1024, 40, 2, 20, 32768, "a chain past memory"},
        {0, 4, UINT64_MAX, 2, 20, 1, "sub-filter count overflow"},
    };
    uint8_t b[40];
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put_header(b, bad[i].items, bad[i].nb, 0, bad[i].nf, bad[i].bs, bad[i].it, bad[i].exp);
        if (load_header(b, 38) != AMQ_ECORRUPT)
            FAIL_AT_("header %zu (%s) was not refused as corrupt", i, bad[i].why);
    }
}

/* Expansion 3 grows as 4 (RedisBloom rounds it up to a power of two). */
TEST(scuckoo_header_expansion_rounds_up)
{
    uint8_t b[40];
    amq_scuckoo_header h;
    amq_scuckoo *c;
    uint64_t nb1 = 0;

    put_header(b, 0, 4, 0, 2, 2, 20, 3);
    CHECK_STATUS(load_header(b, 38), AMQ_OK);
    REQUIRE_OK(amq_scuckoo_header_decode(b, 38, &h));
    REQUIRE_OK(amq_scuckoo_from_header(&h, NULL, NULL, &c));
    REQUIRE_OK(amq_scuckoo_link(c, 1, &nb1, NULL, NULL));
    CHECK_EQ(nb1, 16);
    CHECK_EQ(info_of(c).expansion, 4);
    amq_scuckoo_free(c);
}

/* RDB-style per-link sizes must match the chain the header says. */
TEST(scuckoo_from_header_sub_sizes)
{
    uint64_t subs[2] = {4, 9};
    amq_scuckoo_header h;
    amq_scuckoo *c;

    memset(&h, 0, sizeof h);
    h.num_buckets = 4;
    h.links = 2;
    h.bucket_size = 2;
    h.max_kicks = 20;
    h.expansion = 2;
    CHECK_STATUS(amq_scuckoo_from_header(&h, subs, NULL, &c), AMQ_ECORRUPT);
    subs[1] = 8;
    REQUIRE_OK(amq_scuckoo_from_header(&h, subs, NULL, &c));
    CHECK_EQ(info_of(c).links, 2);
    amq_scuckoo_free(c);
}

/* amq_scuckoo_locate (the O(1) offset lookup of SCANDUMP / LOADCHUNK)
 * agrees with a walk over the links, on a uniform chain (expansion
 * 1) and a growing one, at every link's first and last byte and
 * past the end; and amq_scuckoo_get_info's totals with the sums. */
static void check_locate(const amq_scuckoo *c)
{
    amq_scuckoo_info in = info_of(c);
    uint64_t off = 0, within, total = 0, nb;
    uint32_t j, i;
    size_t bytes;

    for (j = 0; j < in.links; j++) {
        REQUIRE_OK(amq_scuckoo_link(c, j, &nb, NULL, &bytes));
        REQUIRE_OK(amq_scuckoo_locate(c, off, &i, &within));
        CHECK_EQ(i, j);
        CHECK_EQ(within, 0);
        REQUIRE_OK(amq_scuckoo_locate(c, off + bytes - 1, &i, &within));
        CHECK_EQ(i, j);
        CHECK_EQ(within, bytes - 1);
        off += bytes;
        total += nb * in.bucket_size;
    }
    CHECK_EQ(in.bytes, off);
    CHECK_EQ(in.slots, total);
    CHECK_STATUS(amq_scuckoo_locate(c, off, &i, &within), AMQ_ERANGE);
    CHECK_STATUS(amq_scuckoo_locate(c, UINT64_MAX, &i, &within), AMQ_ERANGE);
}

TEST(scuckoo_locate_uniform_and_growing)
{
    amq_scuckoo_header h;
    amq_scuckoo *c;

    memset(&h, 0, sizeof h);
    h.num_buckets = 1;
    h.links = 3000;
    h.bucket_size = 255;
    h.max_kicks = 20;
    h.expansion = 1;
    REQUIRE_OK(amq_scuckoo_from_header(&h, NULL, NULL, &c));
    check_locate(c);
    amq_scuckoo_free(c);
    h.num_buckets = 4;
    h.links = 6;
    h.bucket_size = 3;
    h.expansion = 3; /* grows as 4 */
    REQUIRE_OK(amq_scuckoo_from_header(&h, NULL, NULL, &c));
    check_locate(c);
    amq_scuckoo_free(c);
}

TEST(scuckoo_hostile_chunks)
{
    /* test_scandump_invalid: CF.RESERVE cf 4 then bad LOADCHUNKs. */
    amq_scuckoo *c = make_rb(4, 0, 0, 1);
    const uint8_t junk[37] = "kdoasdksaodsadsadsadsadsadadsadadsdad";
    uint8_t before[4];
    const uint8_t *d;
    size_t len;
    REQUIRE(c != NULL);
    REQUIRE_OK(amq_scuckoo_link(c, 0, NULL, &d, &len));
    memcpy(before, d, 4);
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, UINT64_C(9223372036854775808), junk, 1), AMQ_ERANGE);
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, UINT64_C(922337203685477588), junk, 1), AMQ_ERANGE);
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, 4, junk, 37), AMQ_ERANGE);
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, 4, junk, 4), AMQ_ERANGE);
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, 6, junk, 4), AMQ_EOVERFLOW); /* offset 1 + 4 > 4 */
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, 5, junk, 0), AMQ_ERANGE); /* offset 4: past the end */
    CHECK(memcmp(before, d, 4) == 0);
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, 5, junk, 4), AMQ_OK);
    CHECK(memcmp(junk, d, 4) == 0);
    /* RedisBloom's rule (the module's and the tool's import): a chunk past the end of the
     * chain lands in the last link at its offset less the chain's 4 bytes */
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, 4 + 1 + 2 + 2, junk + 10, 2), AMQ_OK);
    CHECK(memcmp(junk + 10, d + 2, 2) == 0);
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, 4 + 1 + 3 + 2, junk, 2), AMQ_EOVERFLOW);
    CHECK_STATUS(amq_scuckoo_chunk_apply(c, 4 + 1 + 5 + 2, junk, 2), AMQ_ERANGE);
    {
        uint64_t next;
        CHECK_STATUS(amq_scuckoo_chunk(c, 0, 0, &d, &len, &next), AMQ_ERANGE);
    }
    amq_scuckoo_free(c);
}

/* A header's chain sized before it is built (the module's memory guard and RDB reader),
 * as amq_scuckoo_from_header builds it: the expansion rounded up to a power of two. */
TEST(scuckoo_header_chain_sizes)
{
    amq_scuckoo_header h;
    amq_scuckoo *c;
    amq_scuckoo_info in;
    uint64_t j, total = 0;

    memset(&h, 0, sizeof h);
    h.num_buckets = 8;
    h.links = 5;
    h.bucket_size = 3;
    h.max_kicks = 20;
    h.expansion = 3; /* grows as 4 */
    REQUIRE_OK(amq_scuckoo_from_header(&h, NULL, NULL, &c));
    for (j = 0; j < 5; j++) {
        uint64_t nb;
        REQUIRE_OK(amq_scuckoo_link(c, (uint32_t)j, &nb, NULL, NULL));
        CHECK_EQ(amq_scuckoo_header_buckets(&h, j), nb);
        total += nb * 3;
    }
    CHECK_EQ(amq_scuckoo_header_buckets(&h, 5), 0);
    CHECK_EQ(amq_scuckoo_header_bytes(&h), total);
    amq_scuckoo_get_info(c, &in);
    CHECK_EQ(in.bytes, total);
    /* RedisBloom's limit: checked against the chain's length, not per add */
    CHECK_EQ(amq_scuckoo_at_limit(c, 5), 1);
    CHECK_EQ(amq_scuckoo_at_limit(c, 6), 0);
    amq_scuckoo_free(c);
    /* a chain that would pass 64 bits: 0 buckets, bytes saturated */
    h.num_buckets = UINT64_C(1) << 40;
    h.links = 40;
    h.expansion = 32768;
    CHECK_EQ(amq_scuckoo_header_buckets(&h, 39), 0);
    CHECK_EQ(amq_scuckoo_header_bytes(&h), UINT64_MAX / 2);
    h.expansion = 0;
    CHECK_EQ(amq_scuckoo_header_buckets(&h, 1), 0);
}

TEST(scuckoo_hostile_random_headers)
{
    /* Any 38 bytes: an error or a usable filter, never a crash or a huge
     * allocation (the fields are bounded before allocating). */
    uint64_t st = 1234;
    int i, j, ok = 0;
    for (i = 0; i < 20000; i++) {
        uint8_t b[38];
        for (j = 0; j < 38; j++)
            b[j] = (uint8_t)test_rand(&st);
        /* Make many of them plausible. */
        if (i & 1) {
            b[8] = (uint8_t)(1u << (test_rand(&st) % 8));
            memset(b + 9, 0, 7);
            memset(b + 25, 0, 7);
            b[24] &= 3;
            b[33] = 0;
            b[36] &= 7;
            b[37] = 0;
            memset(b + 1, 0, 7);
        }
        ok += load_header(b, 38) == AMQ_OK;
    }
    CHECK_GT(ok, 100);
}

/* ---- SCANDUMP / LOADCHUNK round trip, and files ------------------------------------------ */

TEST(scuckoo_scandump_roundtrip)
{
    /* test_scandump_with_expansion: capacity 62, expansion 2, 500 items;
     * dump in small chunks to exercise slicing, load into a new filter. */
    amq_scuckoo *c = make_rb(62, 0, 0, 2), *d;
    amq_scuckoo_header h;
    uint8_t hdr[AMQ_SCUCKOO_HEADER_SIZE];
    const uint8_t *chunk, *a, *b;
    size_t len, la, lb;
    uint64_t it = 1, next;
    uint32_t j;
    int chunks = 0;

    REQUIRE(c != NULL);
    CHECK_EQ(add_range(c, 0, 500, NULL), 500);
    REQUIRE_OK(amq_scuckoo_header_serialize(c, hdr, sizeof hdr));
    REQUIRE_OK(amq_scuckoo_header_decode(hdr, sizeof hdr, &h));
    REQUIRE_OK(amq_scuckoo_from_header(&h, NULL, NULL, &d));
    for (;;) {
        REQUIRE_OK(amq_scuckoo_chunk(c, it, 100, &chunk, &len, &next));
        if (len == 0)
            break;
        CHECK_LE(len, 100);
        REQUIRE_OK(amq_scuckoo_chunk_apply(d, next, chunk, len));
        it = next;
        chunks++;
    }
    CHECK_GT(chunks, 5);
    CHECK_EQ(info_of(d).links, info_of(c).links);
    CHECK_EQ(info_of(d).items, 500);
    REQUIRE_OK(amq_scuckoo_check(d));
    for (j = 0; j < info_of(c).links; j++) {
        REQUIRE_OK(amq_scuckoo_link(c, j, NULL, &a, &la));
        REQUIRE_OK(amq_scuckoo_link(d, j, NULL, &b, &lb));
        CHECK_EQ(la, lb);
        CHECK(memcmp(a, b, la) == 0);
    }
    amq_scuckoo_free(c);
    amq_scuckoo_free(d);
    /* An empty filter dumps too (RedisBloom cannot). */
    c = make_rb(1000, 0, 0, 1);
    REQUIRE(c != NULL);
    REQUIRE_OK(amq_scuckoo_header_serialize(c, hdr, sizeof hdr));
    REQUIRE_OK(amq_scuckoo_chunk(c, 1, 0, &chunk, &len, &next));
    CHECK_EQ(len, 1024);
    CHECK_EQ(next, 1025);
    amq_scuckoo_free(c);
}

TEST(scuckoo_native_has_no_dump_form)
{
    amq_scuckoo_params p;
    amq_scuckoo *c;
    uint8_t hdr[64];
    amq_scuckoo_params_init(&p, 0);
    REQUIRE_OK(amq_scuckoo_new(&p, NULL, &c));
    CHECK_STATUS(amq_scuckoo_header_serialize(c, hdr, sizeof hdr), AMQ_EUNSUPPORTED);
    amq_scuckoo_free(c);
    amq_scuckoo_params_init(&p, 1);
    p.fingerprint_bits = 16;
    CHECK_STATUS(amq_scuckoo_new(&p, NULL, &c), AMQ_ERANGE);
}

static void file_roundtrip(int redisbloom, uint32_t fbits)
{
    amq_config cfg;
    amq_filter *f, *g;
    amq_errinfo err;
    amq_stats st;
    uint64_t size;
    uint8_t *buf;
    char key[32];
    size_t w;
    int i, len;

    amq_config_init(&cfg, AMQ_KIND_SCALABLE_CUCKOO);
    cfg.capacity = 100;
    cfg.redisbloom = (uint32_t)redisbloom;
    cfg.fingerprint_bits = fbits;
    if (redisbloom)
        cfg.hash_algo = AMQ_HASH_MURMUR64A;
    REQUIRE_OK(amq_filter_new(&cfg, &f, &err));
    for (i = 0; i < 1000; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        REQUIRE_EQ(amq_filter_add(f, key, (size_t)len), 1);
    }
    CHECK_EQ(amq_filter_remove(f, "7", 1), 1);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &w));
    REQUIRE_OK(amq_filter_deserialize(buf, w, 0, NULL, &g, &err));
    amq_filter_stats(g, &st);
    CHECK_EQ(st.items, 999);
    for (i = 0; i < 1000; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        if (i != 7 && !amq_filter_contains(g, key, (size_t)len))
            FAIL_AT_("%s lost in the round trip", key);
    }
    CHECK_EQ(amq_filter_add(g, "x", 1), 1);
    amq_filter_free(g);
    /* A corrupted payload fails its checksum. */
    buf[w - 1] ^= 0x01;
    g = NULL;
    CHECK_STATUS(amq_filter_deserialize(buf, w, 0, NULL, &g, &err), AMQ_ECHECKSUM);
    CHECK(g == NULL);
    free(buf);
    amq_filter_free(f);
}

TEST(scuckoo_file_roundtrip)
{
    file_roundtrip(1, 8);
    file_roundtrip(0, 12);
    file_roundtrip(0, 16);
    file_roundtrip(0, 10);
    file_roundtrip(0, 13);
    file_roundtrip(0, 27);
}

/* A regression vector for the exact arrays: capacity 64, expansion 2,
 * adds of "0".."999", deletes of "0".."299" (compacting on the way), then
 * CF.COMPACT.  The values were produced by this implementation, which meets
 * every published RedisBloom expectation above; they pin the kick order,
 * roll-back, deletion order and compaction so that a change shows. */
static uint64_t arrays_digest(const amq_scuckoo *c)
{
    uint64_t d = 0, nf = info_of(c).links;
    uint32_t j;
    for (j = 0; j < nf; j++) {
        const uint8_t *data;
        size_t len;
        if (amq_scuckoo_link(c, j, NULL, &data, &len) == AMQ_OK)
            d = amq_xxh3_64(data, len, d);
    }
    return d;
}

TEST(scuckoo_arrays_regression)
{
    amq_scuckoo *c = make_rb(64, 2, 0, 2);
    char key[16];
    int i, len;
    REQUIRE(c != NULL);
    CHECK_EQ(add_range(c, 0, 1000, NULL), 1000);
    CHECK_EQ(info_of(c).links, 5);
    CHECK_EQ_U64(arrays_digest(c), UINT64_C(0xa0f46affdb0f25ac));
    for (i = 0; i < 300; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        CHECK_EQ(amq_scuckoo_remove(c, key, (size_t)len), 1);
    }
    CHECK_EQ(info_of(c).links, 4);
    CHECK_EQ(info_of(c).deletes, 50);
    CHECK_EQ(info_of(c).items, 700);
    CHECK_EQ_U64(arrays_digest(c), UINT64_C(0x7e0788c7e6c7c0a6));
    amq_scuckoo_compact(c, 1);
    CHECK_EQ(info_of(c).links, 4);
    CHECK_EQ(info_of(c).deletes, 0);
    CHECK_EQ_U64(arrays_digest(c), UINT64_C(0xf17638d0a01338de));
    amq_scuckoo_free(c);
}

/* An allocator that can refuse everything, to take the plain compaction
 * walk (no scratch) on one twin and the per-bucket one on the other. */
static int refuse_all;

static void *maybe_alloc(void *opaque, size_t size)
{
    (void)opaque;
    return refuse_all ? NULL : malloc(size);
}

static void plain_free(void *opaque, void *ptr, size_t size)
{
    (void)opaque;
    (void)size;
    free(ptr);
}

/* A long chain of one bucket count (expansion 1) compacts through first[]
 * (linear in the chain); the result is bit for bit the plain walk's, for
 * the delete path's partial compaction and CF.COMPACT's full one. */
TEST(scuckoo_flat_compaction_matches_plain)
{
    amq_allocator a = {maybe_alloc, plain_free, NULL, NULL};
    amq_scuckoo_params p;
    amq_scuckoo *fast = NULL, *plain = NULL;
    char key[16];
    int i, len, round;

    amq_scuckoo_params_init(&p, 1);
    p.capacity = 32;
    p.bucket_size = 4;
    p.max_links = 1000;
    REQUIRE_OK(amq_scuckoo_new(&p, NULL, &fast));
    REQUIRE_OK(amq_scuckoo_new(&p, &a, &plain));
    for (i = 0; i < 3000; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        CHECK_EQ(amq_scuckoo_add(fast, key, (size_t)len), 1);
        CHECK_EQ(amq_scuckoo_add(plain, key, (size_t)len), 1);
    }
    CHECK_GE(info_of(fast).links, 64);
    for (round = 0; round < 3; round++) {
        /* Deletes spread over the chain (every 7th key of a third), each
         * compacting on the way once deletes pass 10 % of the items. */
        for (i = round; i < 3000; i += 7 * 3) {
            len = snprintf(key, sizeof key, "%d", i);
            refuse_all = 1;
            CHECK_EQ(amq_scuckoo_remove(plain, key, (size_t)len), 1);
            refuse_all = 0;
            CHECK_EQ(amq_scuckoo_remove(fast, key, (size_t)len), 1);
        }
        CHECK_EQ(info_of(fast).links, info_of(plain).links);
        CHECK_EQ_U64(arrays_digest(fast), arrays_digest(plain));
    }
    refuse_all = 1;
    amq_scuckoo_compact(plain, 1);
    refuse_all = 0;
    amq_scuckoo_compact(fast, 1);
    CHECK_EQ(info_of(fast).links, info_of(plain).links);
    CHECK_EQ_U64(arrays_digest(fast), arrays_digest(plain));
    for (i = 0; i < 3000; i++) {
        if (i % 21 < 3) /* deleted */
            continue;
        len = snprintf(key, sizeof key, "%d", i);
        if (!amq_scuckoo_contains(fast, key, (size_t)len))
            FAIL_AT_("%s lost by compaction", key);
    }
    REQUIRE_OK(amq_scuckoo_check(fast));
    amq_scuckoo_free(fast);
    amq_scuckoo_free(plain);
}

/* Nonzero slots of each value over the whole chain. */
static void value_counts(const amq_scuckoo *c, uint64_t counts[256])
{
    uint64_t nf = info_of(c).links;
    uint32_t j;
    memset(counts, 0, 256 * sizeof counts[0]);
    for (j = 0; j < nf; j++) {
        const uint8_t *d;
        size_t n, k;
        REQUIRE_OK(amq_scuckoo_link(c, j, NULL, &d, &n));
        for (k = 0; k < n; k++)
            counts[d[k]]++;
    }
    counts[0] = 0;
}

/* An empty chain of nf links of one bucket of 255 slots (expansion 1), as
 * RDB or LOADCHUNK would load it: its slots are then written directly. */
static amq_scuckoo *one_bucket_chain(uint32_t nf)
{
    amq_scuckoo_header h;
    amq_scuckoo *c = NULL;
    memset(&h, 0, sizeof h);
    h.num_buckets = 1;
    h.links = nf;
    h.bucket_size = 255;
    h.max_kicks = 20;
    h.expansion = 1;
    return amq_scuckoo_from_header(&h, NULL, NULL, &c) == AMQ_OK ? c : NULL;
}

/* A compaction bigger than AMQ_SCUCKOO_COMPACT_WORK takes several calls,
 * each making progress and losing no fingerprint, until a call changes
 * nothing. */
TEST(scuckoo_compaction_bounded_per_call)
{
    amq_scuckoo *c;
    uint64_t before[256], after[256], x = UINT64_C(88172645463325252), g = 0, digest;
    uint32_t j, nf = 32768, calls = 0, last;

    c = one_bucket_chain(nf);
    REQUIRE(c != NULL);
    for (j = 0; j < nf; j++) {
        uint8_t *d;
        size_t n, k;
        REQUIRE_OK(amq_scuckoo_link_data_mut(c, j, &d, &n));
        for (k = 0; k < n; k++, g++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            d[k] = g % 4 == 0 ? 0 : (uint8_t)(x % 255 + 1); /* a quarter empty */
        }
    }
    CHECK_GT((uint64_t)nf * 255, AMQ_SCUCKOO_COMPACT_WORK);
    value_counts(c, before);
    last = nf;
    for (;;) {
        digest = arrays_digest(c);
        amq_scuckoo_compact(c, 1);
        calls++;
        REQUIRE(calls < 100);
        if (arrays_digest(c) == digest)
            break;
        CHECK_LE(info_of(c).links, last);
        last = (uint32_t)info_of(c).links;
    }
    CHECK_GE(calls, 3);
    /* A quarter of the chain was empty: the newest quarter moved out. */
    CHECK_LE(info_of(c).links, nf * 3 / 4 + 1);
    value_counts(c, after);
    CHECK(memcmp(before, after, sizeof before) == 0);
    amq_scuckoo_free(c);
}

/* The search for room is charged too: in a chain full but for one slot
 * deep down, a call reads a bounded part of the chain and the next goes on
 * from where it stopped, so the slot is taken only after several calls (one
 * call reading the whole chain took it in the first), and it is taken (each
 * call starting over from link 0 never would). */
TEST(scuckoo_compaction_search_bounded_and_resumed)
{
    amq_scuckoo *c;
    uint64_t before[256], after[256], x = UINT64_C(2463534242);
    uint32_t j, nf = 32768, calls = 0, hole_link = nf - 2;
    const uint8_t *hole;
    size_t n;

    c = one_bucket_chain(nf);
    REQUIRE(c != NULL);
    for (j = 0; j < nf; j++) {
        uint8_t *d;
        size_t k;
        REQUIRE_OK(amq_scuckoo_link_data_mut(c, j, &d, &n));
        for (k = 0; k < n; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if (j == 5 && k == 7) { /* the only fingerprint 1 */
                d[k] = 1;
                continue;
            }
            d[k] = j == hole_link && k == 100 ? 0 : (uint8_t)(x % 254 + 2);
        }
    }
    value_counts(c, before);
    REQUIRE_OK(amq_scuckoo_link(c, hole_link, NULL, &hole, &n));
    while (hole[100] == 0) {
        amq_scuckoo_compact(c, 1);
        calls++;
        REQUIRE(calls < 64);
    }
    /* 2^19 slot visits a call, 255 slots a link: about 16 calls. */
    CHECK_GE((double)calls, (double)nf * 255 / (double)AMQ_SCUCKOO_COMPACT_WORK / 2);
    CHECK_LE((double)calls, (double)nf * 255 / (double)AMQ_SCUCKOO_COMPACT_WORK + 2);
    CHECK_EQ(info_of(c).links, nf);
    value_counts(c, after);
    CHECK(memcmp(before, after, sizeof before) == 0);
    /* Deleting fingerprint 1 (h1 % 255 + 1), held by link 5 alone, opens
     * room there behind the search's place: the delete's own compaction
     * (no items counted, so every delete compacts) fills it. */
    {
        amq_hash128 one = {0, 0};
        REQUIRE_OK(amq_scuckoo_link(c, 5, NULL, &hole, &n));
        CHECK_EQ(hole[7], 1);
        CHECK_EQ(amq_scuckoo_remove_hash(c, one), 1);
        CHECK(hole[7] > 1);
        value_counts(c, after);
        CHECK_EQ_U64(after[1], 0);
        after[1] = before[1];
        CHECK(memcmp(before, after, sizeof before) == 0);
    }
    amq_scuckoo_free(c);
}

/* Links bigger than a call's budget (CF.RESERVE 1000000: 2^20 slots a
 * link, twice AMQ_SCUCKOO_COMPACT_WORK): the compaction pass goes on from
 * the bucket where the last call stopped, so repeated calls empty the newest
 * link into the room the deletes left.  (Each call starting over from the
 * newest link's first bucket, the budget was spent on the buckets emptied
 * before, and the newest link kept 594,973 of its fingerprints.) */
TEST(scuckoo_compaction_pass_goes_on_across_calls)
{
    amq_scuckoo *c = make_rb(1000000, 0, 0, 1), *twin = NULL;
    uint64_t used_last = 0, digest;
    const uint8_t *d;
    char key[16];
    int i, len, calls = 0;
    size_t n, k;

    REQUIRE(c != NULL);
    CHECK_EQ(add_range(c, 0, 1900000, NULL), 1900000);
    CHECK_EQ(info_of(c).links, 3);
    {
        uint64_t buckets = 0;
        REQUIRE_OK(amq_scuckoo_link(c, 2, &buckets, NULL, NULL));
        CHECK_GT(buckets * info_of(c).bucket_size, AMQ_SCUCKOO_COMPACT_WORK);
    }
    for (i = 0; i < 1000000; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        CHECK_EQ(amq_scuckoo_remove(c, key, (size_t)len), 1);
    }
    amq_scuckoo_compact(c, 1);
    /* A clone (COPY, defrag) takes the pass's place: both go on alike. */
    REQUIRE_OK(amq_scuckoo_clone(c, NULL, &twin));
    do {
        digest = arrays_digest(c);
        amq_scuckoo_compact(c, 1);
        amq_scuckoo_compact(twin, 1);
        calls++;
        REQUIRE(calls < 100);
        REQUIRE(arrays_digest(twin) == arrays_digest(c)); /* call by call */
    } while (arrays_digest(c) != digest);
    amq_scuckoo_free(twin);
    CHECK_GE(calls, 2);
    if (info_of(c).links == 3) {
        REQUIRE_OK(amq_scuckoo_link(c, 2, NULL, &d, &n));
        for (k = 0; k < n; k++)
            used_last += d[k] != 0;
    }
    CHECK_LE(used_last, 100); /* of 900,000 kept keys */
    for (i = 1000000; i < 1900000; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        if (!amq_scuckoo_contains(c, key, (size_t)len))
            FAIL_AT_("%s lost by compaction", key);
    }
    amq_scuckoo_free(c);
}

/* A chain rebuilt from its header adopting copies of its tables (as the
 * Redis module's RDB load hands over the buffers it read) answers as the
 * original, holding the very buffers; a table of the wrong size is refused
 * and every table freed (ASan checks the leak). */
TEST(scuckoo_from_header_owning)
{
    amq_scuckoo *c = make_rb(64, 2, 0, 2), *t = NULL;
    amq_scuckoo_header h;
    uint8_t hdr[AMQ_SCUCKOO_HEADER_SIZE];
    void *tables[16];
    size_t bytes[16];
    char key[16];
    int i, len, round_;
    uint32_t j, nf;

    REQUIRE(c != NULL);
    CHECK_EQ(add_range(c, 0, 500, NULL), 500);
    nf = (uint32_t)info_of(c).links;
    REQUIRE(nf >= 2 && nf <= 16);
    REQUIRE_OK(amq_scuckoo_header_serialize(c, hdr, sizeof hdr));
    REQUIRE_OK(amq_scuckoo_header_decode(hdr, sizeof hdr, &h));
    for (round_ = 0; round_ < 2; round_++) {
        for (j = 0; j < nf; j++) {
            const uint8_t *d;
            REQUIRE_OK(amq_scuckoo_link(c, j, NULL, &d, &bytes[j]));
            tables[j] = malloc(bytes[j]);
            REQUIRE(tables[j] != NULL);
            memcpy(tables[j], d, bytes[j]);
        }
        if (round_ == 1) {
            bytes[nf - 1]--; /* one byte short: refused, all freed */
            CHECK_STATUS(amq_scuckoo_from_header_owning(&h, tables, bytes, NULL, &t),
                         AMQ_ECORRUPT);
            CHECK(t == NULL);
            break;
        }
        REQUIRE_OK(amq_scuckoo_from_header_owning(&h, tables, bytes, NULL, &t));
        for (j = 0; j < nf; j++) {
            const uint8_t *d;
            size_t n;
            REQUIRE_OK(amq_scuckoo_link(t, j, NULL, &d, &n));
            CHECK(d == tables[j]); /* adopted, not copied */
        }
        for (i = 0; i < 500; i++) {
            len = snprintf(key, sizeof key, "%d", i);
            if (!amq_scuckoo_contains(t, key, (size_t)len))
                FAIL_AT_("%s lost", key);
        }
        CHECK_EQ_U64(arrays_digest(t), arrays_digest(c));
        amq_scuckoo_free(t);
        t = NULL;
    }
    amq_scuckoo_free(c);
}

TEST_MAIN()
