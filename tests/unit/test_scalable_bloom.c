/*
 * test_scalable_bloom.c - RedisBloom's BF: the published expectations
 * (RedisBloom's documentation and tests/flow/test_overall.py), the dump
 * format, hostile input; and the native mode.
 */
#include <stdlib.h>
#include <string.h>

#include "amq.h"
#include "common/container.h"
#include "common/endian.h"
#include "test.h"

static amq_sbloom *make_rb(double error, uint64_t cap, uint32_t growth, int nonscaling)
{
    amq_sbloom_params p;
    amq_sbloom *s = NULL;
    amq_sbloom_params_init(&p, 1);
    p.fpp = error;
    p.capacity = cap;
    if (growth != 0)
        p.expansion = growth;
    if (nonscaling)
        p.options |= AMQ_SBLOOM_NO_SCALING;
    if (amq_sbloom_new(&p, NULL, &s) != AMQ_OK)
        return NULL;
    return s;
}

static void add_range(amq_sbloom *s, int n)
{
    char key[32];
    int i, len;
    for (i = 0; i < n; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        if (amq_sbloom_add(s, key, (size_t)len) < 0)
            FAIL_AT_("add %s failed", key);
    }
}

static amq_sbloom_info info_of(const amq_sbloom *s)
{
    amq_sbloom_info in;
    amq_sbloom_get_info(s, &in);
    return in;
}

/* BF.DEBUG's line for link i. */
static void check_link(const amq_sbloom *s, uint32_t i, uint64_t bytes, uint64_t bits,
                       uint32_t hashes, uint64_t cap, uint64_t size, double ratio)
{
    amq_sbloom_link_info li;
    if (amq_sbloom_link(s, i, &li, NULL) != AMQ_OK) {
        FAIL_AT_("no link %u", i);
        return;
    }
    if (li.bytes != bytes || li.bits != bits || li.hashes != hashes || li.entries != cap ||
        li.items != size || fabs(li.fpp - ratio) > ratio * 1e-12)
        FAIL_AT_("link %u: bytes:%" PRIu64 " bits:%" PRIu64 " hashes:%u capacity:%" PRIu64
                 " size:%" PRIu64 " ratio:%g, expected bytes:%" PRIu64 " bits:%" PRIu64
                 " hashes:%u capacity:%" PRIu64 " size:%" PRIu64 " ratio:%g",
                 i, li.bytes, li.bits, li.hashes, li.entries, li.items, li.fpp, bytes, bits,
                 hashes, cap, size, ratio);
}

TEST(sbloom_debug_0_01_10)
{
    /* bf.reserve bf 0.01 10 + "0".."99": size 99 in 4 links. */
    amq_sbloom *s = make_rb(0.01, 10, 0, 0);
    REQUIRE(s != NULL);
    add_range(s, 100);
    CHECK_EQ(info_of(s).items, 99);
    CHECK_EQ(info_of(s).links, 4);
    check_link(s, 0, 16, 128, 8, 10, 10, 0.005);
    check_link(s, 1, 32, 256, 9, 20, 20, 0.0025);
    check_link(s, 2, 72, 576, 10, 40, 40, 0.00125);
    check_link(s, 3, 160, 1280, 11, 80, 29, 0.000625);
    amq_sbloom_free(s);
}

TEST(sbloom_debug_0_001_100)
{
    /* bf.reserve bf 0.001 100 + "0".."3999": size 3997 in 6 links. */
    amq_sbloom *s = make_rb(0.001, 100, 0, 0);
    REQUIRE(s != NULL);
    add_range(s, 4000);
    CHECK_EQ(info_of(s).items, 3997);
    CHECK_EQ(info_of(s).links, 6);
    check_link(s, 0, 200, 1600, 11, 100, 100, 0.0005);
    check_link(s, 1, 432, 3456, 12, 200, 200, 0.00025);
    check_link(s, 2, 936, 7488, 13, 400, 400, 0.000125);
    check_link(s, 3, 2016, 16128, 14, 800, 800, 6.25e-05);
    check_link(s, 4, 4320, 34560, 15, 1600, 1600, 3.125e-05);
    check_link(s, 5, 9216, 73728, 16, 3200, 897, 1.5625e-05);
    amq_sbloom_free(s);
}

TEST(sbloom_insert_50000)
{
    /* BF.INSERT ... ERROR 0.001 CAPACITY 50000 EXPANSION 2 ITEMS foo, then
     * ITEMS foo bar baz -> [0, 1, 1]. */
    amq_sbloom *s = make_rb(0.001, 50000, 2, 0);
    REQUIRE(s != NULL);
    CHECK_EQ(amq_sbloom_add(s, "foo", 3), 1);
    check_link(s, 0, 98880, 791040, 11, 50000, 1, 0.0005);
    CHECK_EQ(amq_sbloom_add(s, "foo", 3), 0);
    CHECK_EQ(amq_sbloom_add(s, "bar", 3), 1);
    CHECK_EQ(amq_sbloom_add(s, "baz", 3), 1);
    CHECK_EQ(info_of(s).items, 3);
    amq_sbloom_free(s);
}

TEST(sbloom_info_sizes)
{
    amq_sbloom_link_info li;
    amq_sbloom_info in;
    amq_sbloom *s = make_rb(0.001, 100, 0, 0);
    REQUIRE(s != NULL);
    in = info_of(s);
    /* BF.INFO: Capacity 100, Size 296, 1 filter, 0 items, expansion 2. */
    CHECK_EQ(in.capacity, 100);
    CHECK_EQ(in.info_bytes, 296);
    CHECK_EQ(in.links, 1);
    CHECK_EQ(in.items, 0);
    CHECK_EQ(in.expansion, 2);
    CHECK_EQ(in.options, 5);
    amq_sbloom_free(s);
    /* bf.reserve bf 0.000001 300000000: Size 1132420232 (computed only). */
    REQUIRE_OK(amq_sbloom_link_info_for(300000000, 0.000001 * 0.5, 5, &li));
    CHECK_EQ(32 + 64 + li.bytes, 1132420232);
    CHECK_EQ(li.bits, li.bytes * 8);
    CHECK_STATUS(amq_sbloom_link_info_for(0, 0.01, 5, &li), AMQ_ERANGE);
    CHECK_STATUS(amq_sbloom_link_info_for(10, 1.0, 5, &li), AMQ_ERANGE);
    CHECK_STATUS(amq_sbloom_link_info_for(10, 0.01, 4, &li), AMQ_ERANGE);
    CHECK_STATUS(amq_sbloom_link_info_for(UINT64_C(1) << 40, 0.01, 5, &li), AMQ_ELIMIT);
    /* Tiny error rates need hundreds of hashes; RedisBloom builds them
     * (BF.RESERVE k 1e-100 100 / 1e-320 1, BF.DEBUG of the first link). */
    REQUIRE_OK(amq_sbloom_link_info_for(100, 1e-100 * 0.5, 5, &li));
    CHECK_EQ(li.bytes, 6016);
    CHECK_EQ(li.bits, 48128);
    CHECK_EQ(li.hashes, 334);
    REQUIRE_OK(amq_sbloom_link_info_for(1, 1e-320 * 0.5, 5, &li));
    CHECK_EQ(li.bits, 1536);
    CHECK_EQ(li.hashes, 1065);
    /* Very high error rates still give one 64-bit word and one hash. */
    REQUIRE_OK(amq_sbloom_link_info_for(3, 0.99, 13, &li));
    CHECK_EQ(li.bits, 64);
    CHECK_EQ(li.hashes, 1);
    REQUIRE_OK(amq_sbloom_link_info_for(100, 0.9999999999999999, 13, &li));
    CHECK_EQ(li.bits, 64);
}

TEST(sbloom_expansion_links)
{
    /* bf.reserve expN 0.01 4 expansion N + "0".."99": 23 / 5 / 4 links. */
    static const uint32_t growth[3] = {1, 2, 4};
    static const uint64_t links[3] = {23, 5, 4};
    int i;
    for (i = 0; i < 3; i++) {
        amq_sbloom *s = make_rb(0.01, 4, growth[i], 0);
        char key[16];
        int j, len;
        REQUIRE(s != NULL);
        add_range(s, 100);
        CHECK_EQ(info_of(s).links, links[i]);
        for (j = 0; j < 100; j++) {
            len = snprintf(key, sizeof key, "%d", j);
            CHECK_EQ(amq_sbloom_contains(s, key, (size_t)len), 1);
        }
        amq_sbloom_free(s);
    }
}

TEST(sbloom_nonscaling)
{
    /* BF.INSERT k CAPACITY 3 NONSCALING ITEMS a b c; then a b c d ->
     * 0 0 0 "non scaling filter is full"; BF.INFO Size 104. */
    amq_sbloom *s = make_rb(0.01, 3, 0, 1);
    REQUIRE(s != NULL);
    CHECK_EQ(amq_sbloom_add(s, "a", 1), 1);
    CHECK_EQ(amq_sbloom_add(s, "b", 1), 1);
    CHECK_EQ(amq_sbloom_add(s, "c", 1), 1);
    CHECK_EQ(amq_sbloom_add(s, "a", 1), 0);
    CHECK_EQ(amq_sbloom_add(s, "b", 1), 0);
    CHECK_EQ(amq_sbloom_add(s, "c", 1), 0);
    CHECK_STATUS(amq_sbloom_add(s, "d", 1), AMQ_EFULL);
    CHECK_EQ(info_of(s).info_bytes, 104);
    CHECK_EQ(info_of(s).capacity, 3);
    CHECK_EQ(info_of(s).items, 3);
    CHECK_EQ(info_of(s).options, 13);
    /* The error is not halved for a non-scaling filter. */
    check_link(s, 0, 8, 64, 7, 3, 3, 0.01);
    amq_sbloom_free(s);
}

TEST(sbloom_max_expansions)
{
    /* Capacity 1024, expansion 30000: the third link would need ~1e12
     * entries at 1.25e-4: more than 2^43 bits -> "Maximum expansions". */
    amq_sbloom *s = make_rb(0.001, 1024, 30000, 0);
    char key[32];
    int i, len, rc = 0;
    REQUIRE(s != NULL);
    for (i = 0; i < 40000 && rc >= 0; i++) {
        len = snprintf(key, sizeof key, "x%d", i);
        rc = amq_sbloom_add(s, key, (size_t)len);
    }
    CHECK_EQ(info_of(s).links, 2);
    CHECK_EQ(rc, 1); /* 1024 + 30.72 M: 40000 fit */
    amq_sbloom_free(s);
}

TEST(sbloom_docs_scandump)
{
    /* BF.RESERVE bf 0.1 10; BF.ADD bf item1; BF.SCANDUMP bf 0 -> [1, this
     * 73-byte header]; BF.SCANDUMP bf 1 -> [9, 01 08 00 80 00 04 20 00]:
     * the 64-bit link with item1's five bits set (bits 0, 11, 31, 42, 53). */
    static const uint8_t header[73] = {
        0x01, 0, 0, 0, 0, 0, 0, 0,       /* size 1 */
        0x01, 0, 0, 0,                   /* 1 link */
        0x05, 0, 0, 0,                   /* options NOROUND | FORCE64 */
        0x02, 0, 0, 0,                   /* growth 2 */
        0x08, 0, 0, 0, 0, 0, 0, 0,       /* bytes 8 */
        0x40, 0, 0, 0, 0, 0, 0, 0,       /* bits 64 */
        0x01, 0, 0, 0, 0, 0, 0, 0,       /* size 1 */
        0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xa9, 0x3f, /* error 0.05 */
        0x4a, 0xf7, 0xd4, 0x9e, 0xde, 0xf0, 0x18, 0x40, /* bpe 6.2353... */
        0x05, 0, 0, 0,                   /* 5 hashes */
        0x0a, 0, 0, 0, 0, 0, 0, 0,       /* entries 10 */
        0x00};                           /* n2 */
    static const uint8_t data[8] = {0x01, 0x08, 0x00, 0x80, 0x00, 0x04, 0x20, 0x00};
    amq_sbloom *s = make_rb(0.1, 10, 0, 0), *d;
    uint8_t buf[128];
    const uint8_t *chunk;
    size_t len;
    uint64_t next;

    REQUIRE(s != NULL);
    CHECK_EQ(amq_sbloom_add(s, "item1", 5), 1);
    CHECK_EQ(amq_sbloom_header_serialized_size(s), 73);
    REQUIRE_OK(amq_sbloom_header_serialize(s, buf, sizeof buf));
    CHECK(memcmp(buf, header, 73) == 0);
    REQUIRE_OK(amq_sbloom_chunk(s, 1, 0, &chunk, &len, &next));
    REQUIRE_EQ(len, 8);
    CHECK(memcmp(chunk, data, 8) == 0);
    CHECK_EQ(next, 9);
    REQUIRE_OK(amq_sbloom_chunk(s, 9, 0, &chunk, &len, &next));
    CHECK_EQ(len, 0);
    CHECK_EQ(next, 0);
    /* BF.LOADCHUNK bf 1 header; BF.LOADCHUNK bf 9 data. */
    REQUIRE_OK(amq_sbloom_header_deserialize(header, 73, NULL, &d));
    CHECK_EQ(amq_sbloom_contains(d, "item1", 5), 0);
    REQUIRE_OK(amq_sbloom_chunk_apply(d, 9, data, 8));
    CHECK_EQ(amq_sbloom_contains(d, "item1", 5), 1);
    CHECK_EQ(info_of(d).items, 1);
    CHECK_EQ(info_of(d).info_bytes, info_of(s).info_bytes);
    /* Re-encoding the loaded filter gives the same header. */
    REQUIRE_OK(amq_sbloom_header_serialize(d, buf, sizeof buf));
    CHECK(memcmp(buf, header, 73) == 0);
    amq_sbloom_free(s);
    amq_sbloom_free(d);
}

TEST(sbloom_scandump_roundtrip)
{
    /* test_scandump_with_expansion: 0.01 / 62, 500 items, small chunks. */
    amq_sbloom *s = make_rb(0.01, 62, 2, 0), *d;
    uint8_t *hdr;
    const uint8_t *chunk, *a, *b;
    size_t len, hlen;
    uint64_t it = 1, next;
    amq_sbloom_link_info la, lb;
    uint32_t i;
    char key[16];
    int j, klen, chunks = 0;

    REQUIRE(s != NULL);
    add_range(s, 500);
    hlen = amq_sbloom_header_serialized_size(s);
    hdr = malloc(hlen);
    REQUIRE(hdr != NULL);
    REQUIRE_OK(amq_sbloom_header_serialize(s, hdr, hlen));
    REQUIRE_OK(amq_sbloom_header_deserialize(hdr, hlen, NULL, &d));
    for (;;) {
        REQUIRE_OK(amq_sbloom_chunk(s, it, 50, &chunk, &len, &next));
        if (len == 0)
            break;
        REQUIRE_OK(amq_sbloom_chunk_apply(d, next, chunk, len));
        it = next;
        chunks++;
    }
    CHECK_GT(chunks, 10);
    for (i = 0; i < info_of(s).links; i++) {
        REQUIRE_OK(amq_sbloom_link(s, i, &la, &a));
        REQUIRE_OK(amq_sbloom_link(d, i, &lb, &b));
        CHECK(memcmp(&la, &lb, sizeof la) == 0);
        CHECK(memcmp(a, b, (size_t)la.bytes) == 0);
    }
    for (j = 0; j < 500; j++) {
        klen = snprintf(key, sizeof key, "%d", j);
        CHECK_EQ(amq_sbloom_contains(d, key, (size_t)klen), 1);
    }
    /* The loaded filter keeps growing like the original. */
    CHECK_EQ(amq_sbloom_add(d, "new-item", 8), amq_sbloom_add(s, "new-item", 8));
    CHECK_EQ(info_of(d).links, info_of(s).links);
    free(hdr);
    amq_sbloom_free(s);
    amq_sbloom_free(d);
}

/* ---- hostile input ---------------------------------------------------------------------- */

/* test_scandump_invalid_header: 0.01 / 5 with 50 items, then one field
 * corrupted at a time -> "received bad data".  The encoded header of that
 * filter (malloc'd; NULL on failure), its length in *len. */
static uint8_t *hostile_base_header(size_t *len)
{
    amq_sbloom *s = make_rb(0.01, 5, 0, 0);
    uint8_t *h;
    char key[16];
    int i, klen;

    if (s == NULL)
        return NULL;
    for (i = 0; i < 50; i++) {
        klen = snprintf(key, sizeof key, "foo%d", i);
        amq_sbloom_add(s, key, (size_t)klen);
    }
    *len = amq_sbloom_header_serialized_size(s);
    h = malloc(*len);
    if (h != NULL && amq_sbloom_header_serialize(s, h, *len) != AMQ_OK) {
        free(h);
        h = NULL;
    }
    amq_sbloom_free(s);
    return h;
}

TEST(sbloom_hostile_base_header_decodes)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *h = hostile_base_header(&len);

    REQUIRE(h != NULL);
    REQUIRE_OK(amq_sbloom_header_deserialize(h, len, NULL, &d));
    amq_sbloom_free(d);
    d = NULL;
    CHECK_STATUS(amq_sbloom_header_deserialize(h, len + 0, NULL, &d), AMQ_OK);
    amq_sbloom_free(d);
    free(h);
}

TEST(sbloom_header_zeroed_link_fields_refused)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    memset(c + 72, 0, 8); /* link 0's n2 and link 1's bytes zeroed */
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_ECORRUPT);
    free(c);
}

TEST(sbloom_header_options_all_ones_refused)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    memset(c + 12, 0xff, 4);
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_ECORRUPT);
    free(c);
}

TEST(sbloom_header_wrong_total_size_refused)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    memset(c, 0xff, 4);
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_ECORRUPT);
    free(c);
}

TEST(sbloom_header_link_size_and_total_of_2p64_minus_1_refused)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    memset(c + 36, 0xff, 8);
    memset(c, 0xff, 8);
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_ECORRUPT);
    free(c);
}

TEST(sbloom_header_short_buffers_are_truncated)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *h = hostile_base_header(&len);

    REQUIRE(h != NULL);
    CHECK_STATUS(amq_sbloom_header_deserialize(h, len - 1, NULL, &d), AMQ_ETRUNC);
    CHECK_STATUS(amq_sbloom_header_deserialize(h, 19, NULL, &d), AMQ_ETRUNC);
    free(h);
}

TEST(sbloom_header_claiming_2p31_links_refused)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    c[11] = 0x80;
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_ECORRUPT);
    free(c);
}

TEST(sbloom_header_huge_bit_counts_refused_before_allocating)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    memset(c + 20, 0, 16);
    c[26] = 0x10; /* bytes 2^52 */
    c[34] = 0x80; /* bits 2^55 */
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_ECORRUPT);
    free(c);
}

TEST(sbloom_header_without_force64_unsupported)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    c[12] = 1; /* no FORCE64: 32-bit hashing is not supported */
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_EUNSUPPORTED);
    free(c);
}

TEST(sbloom_header_nan_error_rate_refused)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    memset(c + 44, 0xff, 8);
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_ECORRUPT);
    free(c);
}

TEST(sbloom_header_zero_hashes_refused)
{
    amq_sbloom *d = NULL;
    size_t len;
    uint8_t *c = hostile_base_header(&len);

    REQUIRE(c != NULL);
    memset(c + 60, 0, 4);
    CHECK_STATUS(amq_sbloom_header_deserialize(c, len, NULL, &d), AMQ_ECORRUPT);
    free(c);
}

TEST(sbloom_hostile_chunks)
{
    /* test_scandump_invalid: bf.reserve bf 0.1 4, bad LOADCHUNKs. */
    amq_sbloom *s = make_rb(0.1, 4, 0, 0);
    const uint8_t junk[37] = "kdoasdksaodsadsadsadsadsadadsadadsdad";
    REQUIRE(s != NULL);
    CHECK_STATUS(amq_sbloom_chunk_apply(s, UINT64_C(9223372036854775808), junk, 1), AMQ_ERANGE);
    CHECK_STATUS(amq_sbloom_chunk_apply(s, UINT64_C(922337203685477588), junk, 1), AMQ_ERANGE);
    CHECK_STATUS(amq_sbloom_chunk_apply(s, 4, junk, 37), AMQ_ERANGE);
    CHECK_STATUS(amq_sbloom_chunk_apply(s, 4, junk, 4), AMQ_ERANGE);
    CHECK_STATUS(amq_sbloom_chunk_apply(s, 10, junk, 8), AMQ_EOVERFLOW); /* offset 1 */
    CHECK_STATUS(amq_sbloom_chunk_apply(s, 9, junk, 8), AMQ_OK);
    CHECK_EQ(amq_sbloom_add(s, "x", 1) >= 0, 1);
    amq_sbloom_free(s);
}

TEST(sbloom_hostile_random_headers)
{
    /* Random mutations of a valid header: an error or a usable filter. */
    amq_sbloom *s = make_rb(0.01, 5, 0, 0), *d;
    uint64_t st = 777;
    uint8_t *h, *c;
    size_t len;
    int i, j, ok = 0;

    REQUIRE(s != NULL);
    add_range(s, 40);
    len = amq_sbloom_header_serialized_size(s);
    h = malloc(len);
    c = malloc(len);
    REQUIRE(h != NULL && c != NULL);
    REQUIRE_OK(amq_sbloom_header_serialize(s, h, len));
    for (i = 0; i < 20000; i++) {
        memcpy(c, h, len);
        for (j = 0; j < 1 + (int)(test_rand(&st) % 3); j++)
            c[test_rand(&st) % len] = (uint8_t)test_rand(&st);
        d = NULL;
        if (amq_sbloom_header_deserialize(c, len - (size_t)(test_rand(&st) % 2), NULL, &d) == AMQ_OK) {
            ok++;
            (void)amq_sbloom_add(d, "probe", 5);
        }
        amq_sbloom_free(d);
    }
    CHECK_GT(ok, 100);
    free(h);
    free(c);
    amq_sbloom_free(s);
}

/* ---- randomized: no false negatives, fpp within bounds -------------------------------- */

static void fpp_run(int redisbloom, double error, uint64_t n, uint64_t seed)
{
    amq_sbloom_params p;
    amq_sbloom *s;
    uint64_t st = seed, i, fp = 0, q = 400000;
    amq_hash128 *keys = malloc(n * sizeof *keys), h;

    amq_sbloom_params_init(&p, redisbloom);
    p.fpp = error;
    p.capacity = n / 50 + 1; /* forces several links */
    REQUIRE(keys != NULL);
    REQUIRE_OK(amq_sbloom_new(&p, NULL, &s));
    for (i = 0; i < n; i++) {
        keys[i].h1 = test_rand(&st);
        keys[i].h2 = redisbloom ? test_rand(&st) : test_rand(&st);
        REQUIRE(amq_sbloom_add_hash(s, keys[i]) >= 0);
    }
    for (i = 0; i < n; i++)
        if (!amq_sbloom_contains_hash(s, keys[i]))
            FAIL_AT_("false negative at %" PRIu64 " (seed %" PRIu64 ")", i, seed);
    for (i = 0; i < q; i++) {
        h.h1 = test_rand(&st);
        h.h2 = test_rand(&st);
        fp += (uint64_t)amq_sbloom_contains_hash(s, h);
    }
    /* RedisBloom's links round k up and reach their error only to within
     * a few per cent at capacity (e.g. 0.000502 for 0.0005): allow 15 %
     * there; the native links must meet the target. */
    if (!((double)fp / (double)q <= error * (redisbloom ? 1.15 : 1.0)))
        FAIL_AT_("mode %d: measured fpp %g above %g with %" PRIu64 " links (seed %" PRIu64 ")",
                 redisbloom, (double)fp / (double)q, error, info_of(s).links, seed);
    amq_sbloom_free(s);
    free(keys);
}

TEST(sbloom_fpp_and_no_false_negatives)
{
    fpp_run(1, 0.01, 200000, 5);
    fpp_run(0, 0.01, 200000, 6);
    fpp_run(1, 0.001, 100000, 7);
    fpp_run(0, 0.001, 100000, 8);
}

TEST(sbloom_native_is_smaller)
{
    /* Tightening 0.8 and exact sizing: fewer bytes than RedisBloom's
     * layout for the same 1 M items grown from capacity 1000. */
    amq_sbloom_params p;
    amq_sbloom *a, *b;
    amq_hash128 h;
    uint64_t st = 3, i;
    amq_sbloom_params_init(&p, 1);
    p.capacity = 1000;
    REQUIRE_OK(amq_sbloom_new(&p, NULL, &a));
    amq_sbloom_params_init(&p, 0);
    p.capacity = 1000;
    REQUIRE_OK(amq_sbloom_new(&p, NULL, &b));
    for (i = 0; i < 1000000; i++) {
        h.h1 = test_rand(&st);
        h.h2 = test_rand(&st);
        amq_sbloom_add_hash(a, h);
        amq_sbloom_add_hash(b, h);
    }
    CHECK_LT(info_of(b).bytes, info_of(a).bytes);
    amq_sbloom_free(a);
    amq_sbloom_free(b);
}

static void file_roundtrip(int redisbloom)
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

    amq_config_init(&cfg, AMQ_KIND_SCALABLE_BLOOM);
    cfg.capacity = 100;
    cfg.redisbloom = (uint32_t)redisbloom;
    if (redisbloom)
        cfg.hash_algo = AMQ_HASH_REDISBLOOM;
    REQUIRE_OK(amq_filter_new(&cfg, &f, &err));
    for (i = 0; i < 3000; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        REQUIRE(amq_filter_add(f, key, (size_t)len) >= 0);
    }
    CHECK_STATUS(amq_filter_remove(f, "1", 1), AMQ_EUNSUPPORTED);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &w));
    REQUIRE_OK(amq_filter_deserialize(buf, w, 0, NULL, &g, &err));
    amq_filter_stats(f, &st);
    {
        amq_stats st2;
        amq_filter_stats(g, &st2);
        CHECK_EQ(st2.items, st.items);
        CHECK_EQ(st2.bytes, st.bytes);
        CHECK_EQ(st2.capacity, st.capacity);
    }
    for (i = 0; i < 3000; i++) {
        len = snprintf(key, sizeof key, "%d", i);
        if (!amq_filter_contains(g, key, (size_t)len))
            FAIL_AT_("%s lost in the round trip", key);
    }
    amq_filter_free(g);
    buf[w - 1] ^= 0x80;
    g = NULL;
    CHECK_STATUS(amq_filter_deserialize(buf, w, 0, NULL, &g, &err), AMQ_ECHECKSUM);
    free(buf);
    amq_filter_free(f);
}

/* A native file with one field changed (the container re-signed) is refused
 * with a message that names the field, not "invalid parameters". */
static void expect_refused(const amq_container *c0, const uint8_t *payload, uint64_t items,
                           const uint8_t *params, uint64_t payload_len, int want, const char *says)
{
    amq_container c = *c0;
    amq_filter *f = NULL;
    amq_errinfo err;
    uint64_t off;
    uint8_t *file;

    c.items = items;
    c.params = params;
    c.payload_len = payload_len;
    c.payload_sum = amq_checksum(payload, (size_t)payload_len);
    off = amq_container_payload_offset(c.params_len);
    file = malloc((size_t)(off + payload_len));
    REQUIRE(file != NULL);
    amq_container_write_header(&c, file);
    memcpy(file + off, payload, (size_t)payload_len);
    CHECK_STATUS(amq_filter_deserialize(file, (size_t)(off + payload_len), 0, NULL, &f, &err),
                 want);
    if (strstr(err.msg, says) == NULL)
        FAIL_AT_("message \"%s\" does not say \"%s\"", err.msg, says);
    CHECK(f == NULL);
    free(file);
}

TEST(sbloom_file_refusals_name_the_field)
{
    amq_config cfg;
    amq_filter *f;
    amq_container c;
    uint8_t *buf, params[24 + 48 * 8];
    size_t len = 0;
    uint32_t links;
    char k[32];
    int i;

    amq_config_init(&cfg, AMQ_KIND_SCALABLE_BLOOM);
    cfg.capacity = 100;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    for (i = 0; i < 1000; i++)
        (void)amq_filter_add(f, k, (size_t)snprintf(k, sizeof k, "k%d", i));
    REQUIRE_OK(amq_filter_serialized_size(f, &len));
    buf = malloc(len);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, len, &len));
    REQUIRE_OK(amq_container_parse(buf, len, len, &c, NULL));
    links = amq_load32(c.params + 12);
    REQUIRE(links >= 2 && c.params_len == 24 + 48 * links && c.params_len <= sizeof params);
#define FIELD(set, want, says)                                                                     \
    do {                                                                                           \
        memcpy(params, c.params, c.params_len);                                                    \
        set;                                                                                       \
        expect_refused(&c, buf + c.payload_off, c.items, params, c.payload_len, want, says);       \
    } while (0)
    FIELD(amq_store32(params, 2), AMQ_ECORRUPT, "scalable Bloom layout 2");
    FIELD(amq_store32(params + 4, 0x100), AMQ_ECORRUPT, "options 0x");
    FIELD(amq_store32(params + 12, 0), AMQ_ECORRUPT, "of 0 links");
    FIELD(amq_store32(params + 12, links + 1), AMQ_ECORRUPT, "links need");
    FIELD(amq_storef64(params + 16, 0.0), AMQ_ECORRUPT, "error rate 0 is not in (0, 1)");
    FIELD(amq_store32(params + 24 + 48 + 32, 0), AMQ_ECORRUPT, "scalable Bloom link 1 (");
#undef FIELD
    memcpy(params, c.params, c.params_len);
    expect_refused(&c, buf + c.payload_off, c.items + 1, params, c.payload_len, AMQ_ECORRUPT,
                   "the filter records");
    expect_refused(&c, buf + c.payload_off, c.items, params, c.payload_len - 8, AMQ_ECORRUPT,
                   "its links need");
    free(buf);
    amq_filter_free(f);
}

TEST(sbloom_file_roundtrip)
{
    file_roundtrip(1);
    file_roundtrip(0);
}

/* A chain rebuilt from raw fields adopting copies of its arrays (as the
 * Redis module's RDB load hands over the buffers it read) answers as the
 * original; refused fields free the arrays (ASan checks the leak). */
TEST(sbloom_from_raw_owning)
{
    amq_sbloom *s = make_rb(0.01, 100, 2, 0), *t = NULL;
    amq_sbloom_link_info links[8];
    amq_sbloom_header h;
    amq_sbloom_info in;
    void *arrays[8];
    char key[16];
    uint32_t i;
    int k, len, round_;

    REQUIRE(s != NULL);
    for (k = 0; k < 500; k++) {
        len = snprintf(key, sizeof key, "k%d", k);
        CHECK_GE(amq_sbloom_add(s, key, (size_t)len), 0);
    }
    amq_sbloom_get_info(s, &in);
    REQUIRE(in.links >= 2 && in.links <= 8);
    h.items = in.items;
    h.links = (uint32_t)in.links;
    h.options = in.options;
    h.expansion = in.expansion;
    for (round_ = 0; round_ < 2; round_++) {
        for (i = 0; i < h.links; i++) {
            const uint8_t *d;
            REQUIRE_OK(amq_sbloom_link(s, i, &links[i], &d));
            arrays[i] = malloc((size_t)links[i].bytes);
            REQUIRE(arrays[i] != NULL);
            memcpy(arrays[i], d, (size_t)links[i].bytes);
        }
        if (round_ == 1) {
            h.items++; /* items no longer summing to size: refused, arrays freed */
            CHECK_STATUS(amq_sbloom_from_header_owning(&h, links, arrays, NULL, &t), AMQ_ECORRUPT);
            CHECK(t == NULL);
            h.items--;
            continue;
        }
        REQUIRE_OK(amq_sbloom_from_header_owning(&h, links, arrays, NULL, &t));
        for (k = 0; k < 500; k++) {
            len = snprintf(key, sizeof key, "k%d", k);
            if (!amq_sbloom_contains(t, key, (size_t)len))
                FAIL_AT_("%s lost", key);
        }
        for (i = 0; i < h.links; i++) {
            const uint8_t *d;
            amq_sbloom_link_info li;
            REQUIRE_OK(amq_sbloom_link(t, i, &li, &d));
            CHECK(d == arrays[i]); /* adopted, not copied */
        }
        amq_sbloom_free(t);
        t = NULL;
    }
    amq_sbloom_free(s);
}

/* What a host such as Redis counts for a small BF key: BF.RESERVE k 0.01
 * 100 (144 bytes of bits) is one block of the chain's struct and its bits,
 * 256 bytes - a jemalloc size class, as RedisBloom's key - and each later
 * link one bit array plus the link array (48 bytes a link). */
typedef struct counting {
    uint64_t blocks, bytes;
} counting;

static void *c_alloc(void *opaque, size_t size)
{
    counting *c = opaque;
    c->blocks++;
    c->bytes += size;
    return malloc(size);
}

static void c_free(void *opaque, void *ptr, size_t size)
{
    counting *c = opaque;
    c->blocks--;
    c->bytes -= size;
    free(ptr);
}

TEST(sbloom_small_key_is_one_block)
{
    counting cnt = {0, 0};
    amq_allocator al = {c_alloc, c_free, &cnt, NULL};
    amq_sbloom_params p;
    amq_sbloom *s = NULL, *t = NULL;
    amq_sbloom_link_info li;
    char key[16];
    int k, n, len;

    amq_sbloom_params_init(&p, 1);
    REQUIRE_OK(amq_sbloom_new(&p, &al, &s));
    CHECK_EQ(cnt.blocks, 1);
    CHECK_EQ(cnt.bytes, 256);
    for (k = 0; k < 1000 && info_of(s).links < 2; k++) {
        len = snprintf(key, sizeof key, "k%d", k);
        CHECK_GE(amq_sbloom_add(s, key, (size_t)len), 0);
    }
    REQUIRE(info_of(s).links == 2);
    REQUIRE_OK(amq_sbloom_link(s, 1, &li, NULL));
    /* + link 2's bit array + the array of 2 links */
    CHECK_EQ(cnt.blocks, 3);
    CHECK_EQ(cnt.bytes, 256 + li.bytes + 2 * 48);
    REQUIRE_OK(amq_sbloom_clone(s, &al, &t));
    CHECK_EQ(cnt.blocks, 6);
    n = k;
    for (k = 0; k < n; k++) {
        len = snprintf(key, sizeof key, "k%d", k);
        if (!amq_sbloom_contains(t, key, (size_t)len))
            FAIL_AT_("%s lost in the clone", key);
    }
    amq_sbloom_free(t);
    amq_sbloom_free(s);
    CHECK_EQ(cnt.blocks, 0);
    CHECK_EQ(cnt.bytes, 0);
}

/* A classic filter with RedisBloom's hashing and probes becomes a one-link RedisBloom filter
 * that answers every key as it does (amq export --to redis); any other is refused. */
TEST(sbloom_from_bloom_answers_as_the_bloom)
{
    amq_bloom_params p;
    amq_bloom *b, *x;
    amq_sbloom *s = NULL;
    amq_sbloom_link_info link;
    char key[32];
    int i, n, diff = 0, found = 0;

    REQUIRE_OK(amq_bloom_params_for(5000, 0.01, &p));
    p.bits = (p.bits + 63) / 64 * 64;
    p.probe = AMQ_BLOOM_PROBE_REDISBLOOM;
    p.hash_algo = AMQ_HASH_REDISBLOOM;
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    for (i = 0; i < 5000; i++) {
        n = snprintf(key, sizeof key, "k%d", i);
        (void)amq_bloom_add(b, key, (size_t)n);
    }
    CHECK_EQ(amq_sbloom_from_bloom_ok(b), 1);
    REQUIRE_OK(amq_sbloom_from_bloom(b, NULL, &s));
    for (i = 0; i < 100000; i++) {
        n = snprintf(key, sizeof key, "%s%d", i < 5000 ? "k" : "other", i);
        diff += amq_bloom_contains(b, key, (size_t)n) != amq_sbloom_contains(s, key, (size_t)n);
        found += i < 5000 && amq_sbloom_contains(s, key, (size_t)n);
    }
    CHECK_EQ(diff, 0);
    CHECK_EQ(found, 5000);
    REQUIRE_OK(amq_sbloom_link(s, 0, &link, NULL));
    CHECK_EQ(link.bits, p.bits);
    CHECK_EQ(link.hashes, p.k);
    CHECK_EQ(link.items, amq_bloom_items(b));
    amq_sbloom_free(s);
    /* native hashing: the bits mean other keys */
    REQUIRE_OK(amq_bloom_params_for(5000, 0.01, &p));
    REQUIRE_OK(amq_bloom_new(&p, NULL, &x));
    CHECK_EQ(amq_sbloom_from_bloom_ok(x), 0);
    s = NULL;
    CHECK_STATUS(amq_sbloom_from_bloom(x, NULL, &s), AMQ_EINCOMPAT);
    CHECK(s == NULL);
    amq_bloom_free(x);
    amq_bloom_free(b);
}

TEST_MAIN()
