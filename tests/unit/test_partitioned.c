/*
 * test_partitioned.c - the partitioned kind: sizing per partition, the
 * parallel build (same bytes for any thread count), no false negatives,
 * rate within a band of the theory, the file form with its index and
 * lazily verified partition checksums, corrupt and truncated input,
 * merging, and concurrent adds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "amq.h"
#include "amq/inplace.h"
#include "amq/partitioned.h"
#include "common/container.h"
#include "common/endian.h"
#include "batch.h"
#include "test.h"

static amq_hash128 *random_hashes(size_t n, uint64_t seed)
{
    amq_hash128 *h = malloc(n * sizeof *h);
    size_t i;
    if (h == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        h[i].h1 = test_rand(&seed);
        h[i].h2 = test_rand(&seed);
    }
    return h;
}

static amq_partitioned_params params_for(uint32_t parts, double fpp)
{
    amq_partitioned_params p;
    memset(&p, 0, sizeof p);
    p.partitions = parts;
    p.hash_algo = AMQ_HASH_XXH3;
    p.fpp = fpp;
    return p;
}

TEST(partitioned_new_sizes_like_one_blocked_filter)
{
    amq_partitioned_params p = params_for(7, 0.01);
    amq_partitioned *f;
    amq_partition_info info;
    uint64_t blocks;
    uint32_t k, i;

    p.capacity = 1000000;
    REQUIRE_OK(amq_partitioned_new(&p, NULL, &f));
    REQUIRE_OK(amq_blocked_blocks_for(1000000, 0.01, &blocks, &k));
    CHECK_EQ(amq_partitioned_partitions(f), 7);
    for (i = 0; i < 7; i++) {
        REQUIRE_OK(amq_partitioned_partition_info(f, i, &info));
        CHECK_EQ(info.blocks, (blocks + 6) / 7);
        CHECK_EQ(info.k, k);
        CHECK_EQ(info.offset, (uint64_t)i * info.blocks * 64);
        CHECK_EQ(info.verified, 1);
    }
    CHECK_STATUS(amq_partitioned_partition_info(f, 7, &info), AMQ_ERANGE);
    CHECK_EQ(amq_partitioned_bytes(f), 7 * ((blocks + 6) / 7) * 64);
    amq_partitioned_free(f);
    /* The library's choice: partitions of about 64 KiB (12.4 MB here). */
    p.partitions = 0;
    p.capacity = 10000000;
    REQUIRE_OK(amq_partitioned_new(&p, NULL, &f));
    CHECK(amq_partitioned_partitions(f) >= 185 && amq_partitioned_partitions(f) <= 195);
    amq_partitioned_free(f);
    p.partitions = AMQ_PARTITIONED_MAX_PARTITIONS + 1;
    CHECK_STATUS(amq_partitioned_new(&p, NULL, &f), AMQ_ERANGE);
    p.partitions = 4;
    p.capacity = 0;
    CHECK_STATUS(amq_partitioned_new(&p, NULL, &f), AMQ_ERANGE);
    p.capacity = 10;
    p.fpp = 1.0;
    CHECK_STATUS(amq_partitioned_new(&p, NULL, &f), AMQ_ERANGE);
    p.fpp = 0.01;
    p.hash_algo = 77;
    CHECK_STATUS(amq_partitioned_new(&p, NULL, &f), AMQ_EHASH);
    amq_partitioned_free(NULL);
}

TEST(partitioned_add_query_and_rate)
{
    const size_t n = 200000, q = 400000;
    amq_partitioned_params p = params_for(16, 0.01);
    amq_partitioned *f;
    amq_hash128 *h = random_hashes(n + q, 0x7a7a);
    uint64_t fp = 0, parts_hit[16];
    size_t i;
    double sd;
    amq_stats st;
    amq_filter *g;

    REQUIRE(h != NULL);
    p.capacity = n;
    REQUIRE_OK(amq_partitioned_new(&p, NULL, &f));
    memset(parts_hit, 0, sizeof parts_hit);
    for (i = 0; i < n; i++) {
        CHECK(amq_partitioned_add_hash(f, h[i]) >= 0);
        parts_hit[amq_partitioned_partition_of(f, h[i])]++;
    }
    for (i = 0; i < 16; i++)
        CHECK(parts_hit[i] > n / 16 * 9 / 10 && parts_hit[i] < n / 16 * 11 / 10);
    for (i = 0; i < n; i++)
        if (amq_partitioned_contains_hash(f, h[i]) != 1) {
            FAIL_AT_("false negative at %zu (seed 0x7a7a)", i);
            break;
        }
    for (i = n; i < n + q; i++)
        fp += (uint64_t)amq_partitioned_contains_hash(f, h[i]);
    REQUIRE_OK(amq_filter_from_partitioned(f, &g));
    amq_filter_stats(g, &st);
    sd = sqrt((double)q * st.fpp_target);
    if (fabs((double)fp - (double)q * st.fpp_target) > 5 * sd + 0.02 * (double)q * st.fpp_target)
        FAIL_AT_("%" PRIu64 " false positives in %zu, theory %.1f (seed 0x7a7a)", fp, q,
                 (double)q * st.fpp_target);
    CHECK(st.fpp_target <= 0.01);
    CHECK_EQ(st.kind, AMQ_KIND_PARTITIONED);
    CHECK(st.items > n * 99 / 100 && st.items <= n);
    CHECK(st.fpp_now > 0.005 && st.fpp_now < 0.015);
    amq_filter_free(g);
    free(h);
}

/* The builds of 300,000 hashes into 37 partitions at 0.5 %. */
#define BUILD_N 300000u
static amq_hash128 *build_hashes(void)
{
    return random_hashes(BUILD_N, 0xb01d);
}

TEST(partitioned_build_sizes_each_partition_for_its_own_keys)
{
    amq_partitioned_params p = params_for(37, 0.005);
    amq_hash128 *h = build_hashes();
    amq_partitioned *f;
    amq_partition_info a;
    uint64_t total = 0;
    double lambda;
    uint32_t i;

    REQUIRE(h != NULL);
    REQUIRE_OK(amq_partitioned_build(&p, h, BUILD_N, 2, NULL, &f));
    for (i = 0; i < 37; i++) {
        REQUIRE_OK(amq_partitioned_partition_info(f, i, &a));
        total += a.capacity;
        /* Sized for its own count at the rate. */
        CHECK_LE_DBL(amq_blocked_fpp_theory(a.blocks, a.k, a.capacity), 0.005);
        CHECK(a.items <= a.capacity);
    }
    CHECK_EQ(total, BUILD_N);
    lambda = (double)BUILD_N / (double)(amq_partitioned_bytes(f) / 64);
    CHECK(lambda > 30.0 && lambda < 50.0);
    for (i = 0; i < BUILD_N; i++)
        if (amq_partitioned_contains_hash(f, h[i]) != 1) {
            FAIL_AT_("false negative at %u", i);
            break;
        }
    amq_partitioned_free(f);
    free(h);
}

/* 1, 2, 3 and 8 threads: the same partitions and byte-identical
 * serializations. */
TEST(partitioned_build_same_bytes_for_any_thread_count)
{
    amq_partitioned_params p = params_for(37, 0.005);
    amq_hash128 *h = build_hashes();
    amq_partitioned *f[4];
    unsigned threads[4] = {1, 2, 3, 8};
    amq_partition_info a, b;
    uint32_t i;
    int t;
    amq_filter *g1, *g2;
    uint64_t s1, s2;
    uint8_t *b1, *b2;

    REQUIRE(h != NULL);
    for (t = 0; t < 4; t++)
        REQUIRE_OK(amq_partitioned_build(&p, h, BUILD_N, threads[t], NULL, &f[t]));
    for (i = 0; i < 37; i++) {
        REQUIRE_OK(amq_partitioned_partition_info(f[0], i, &a));
        for (t = 1; t < 4; t++) {
            REQUIRE_OK(amq_partitioned_partition_info(f[t], i, &b));
            CHECK_EQ(a.blocks, b.blocks);
            CHECK_EQ(a.items, b.items);
            CHECK_EQ(a.offset, b.offset);
        }
    }
    for (i = 0; i < BUILD_N; i++)
        if (amq_partitioned_contains_hash(f[3], h[i]) != 1) {
            FAIL_AT_("false negative at %u", i);
            break;
        }
    REQUIRE_OK(amq_filter_from_partitioned(f[0], &g1));
    REQUIRE_OK(amq_filter_from_partitioned(f[3], &g2));
    REQUIRE_OK(amq_filter_serialized_size(g1, &s1));
    REQUIRE_OK(amq_filter_serialized_size(g2, &s2));
    REQUIRE_EQ(s1, s2);
    b1 = malloc((size_t)s1);
    b2 = malloc((size_t)s2);
    REQUIRE(b1 && b2);
    REQUIRE_OK(amq_filter_serialize(g1, b1, (size_t)s1, NULL));
    REQUIRE_OK(amq_filter_serialize(g2, b2, (size_t)s2, NULL));
    CHECK(memcmp(b1, b2, (size_t)s1) == 0);
    free(b1);
    free(b2);
    amq_filter_free(g1);
    amq_filter_free(g2);
    amq_partitioned_free(f[1]);
    amq_partitioned_free(f[2]);
    free(h);
}

TEST(partitioned_build_of_no_keys_is_empty)
{
    amq_partitioned_params p = params_for(37, 0.005);
    amq_hash128 *h = build_hashes();
    amq_partitioned *f;

    REQUIRE(h != NULL);
    REQUIRE_OK(amq_partitioned_build(&p, h, 0, 2, NULL, &f));
    CHECK_EQ(amq_partitioned_items(f), 0);
    CHECK_EQ(amq_partitioned_contains_hash(f, h[0]), 0);
    amq_partitioned_free(f);
    free(h);
}

TEST(partitioned_build_sized_by_bits_per_key)
{
    amq_partitioned_params p = params_for(37, 0.005);
    amq_hash128 *h = build_hashes();
    amq_partitioned *f;

    REQUIRE(h != NULL);
    p.bits_per_key = 12.0;
    p.partitions = 0;
    REQUIRE_OK(amq_partitioned_build(&p, h, BUILD_N, 0, NULL, &f));
    CHECK(amq_partitioned_bytes(f) * 8 >= BUILD_N * 12);
    CHECK(amq_partitioned_bytes(f) * 8 < BUILD_N * 12 + amq_partitioned_partitions(f) * 512);
    amq_partitioned_free(f);
    free(h);
}

/* One filter filled by one-key adds of the first n of 2n random hashes: what
 * each add returned and what one-key queries of all 2n answer, against which
 * the batched forms are checked. */
typedef struct single_ref {
    size_t n;
    amq_partitioned_params p;
    amq_partitioned *a;
    amq_hash128 *h;
    uint8_t *added; /* n */
    uint8_t *found; /* 2n */
} single_ref;

static int single_ref_init(single_ref *x)
{
    size_t i;
    x->n = 50000;
    x->p = params_for(9, 0.02);
    x->p.capacity = x->n;
    x->a = NULL;
    x->h = random_hashes(2 * x->n, 42);
    x->added = malloc(x->n);
    x->found = malloc(2 * x->n);
    if (x->h == NULL || x->added == NULL || x->found == NULL ||
        amq_partitioned_new(&x->p, NULL, &x->a) != AMQ_OK)
        return 0;
    for (i = 0; i < x->n; i++)
        x->added[i] = (uint8_t)amq_partitioned_add_hash(x->a, x->h[i]);
    for (i = 0; i < 2 * x->n; i++)
        x->found[i] = (uint8_t)amq_partitioned_contains_hash(x->a, x->h[i]);
    return 1;
}

static void single_ref_free(single_ref *x)
{
    amq_partitioned_free(x->a);
    free(x->h);
    free(x->added);
    free(x->found);
}

/* A filter of x's geometry filled by one batched add of x's keys. */
static amq_partitioned *batch_filled(const single_ref *x)
{
    amq_partitioned *b;
    if (amq_partitioned_new(&x->p, NULL, &b) != AMQ_OK)
        return NULL;
    if (t_partitioned_add_batch(b, x->h, x->n, NULL) < 0) {
        amq_partitioned_free(b);
        return NULL;
    }
    return b;
}

TEST(partitioned_batched_add_returns_what_one_key_adds_return)
{
    single_ref x;
    amq_partitioned *b;
    uint8_t *added;

    REQUIRE(single_ref_init(&x));
    added = malloc(x.n);
    REQUIRE(added != NULL);
    REQUIRE_OK(amq_partitioned_new(&x.p, NULL, &b));
    CHECK_EQ(t_partitioned_add_batch(b, x.h, x.n, added), (int64_t)amq_partitioned_items(x.a));
    CHECK(memcmp(x.added, added, x.n) == 0);
    amq_partitioned_free(b);
    free(added);
    single_ref_free(&x);
}

TEST(partitioned_batched_query_answers_as_one_key_queries)
{
    single_ref x;
    amq_partitioned *b;
    uint8_t *out;
    uint64_t exp = 0;
    size_t i;

    REQUIRE(single_ref_init(&x));
    out = malloc(2 * x.n);
    b = batch_filled(&x);
    REQUIRE(out != NULL && b != NULL);
    for (i = 0; i < 2 * x.n; i++)
        exp += x.found[i];
    CHECK_EQ(t_partitioned_contains_batch(b, x.h, 2 * x.n, out), exp);
    CHECK(memcmp(x.found, out, 2 * x.n) == 0);
    CHECK_EQ(t_partitioned_contains_batch(b, x.h, 5, NULL), 5);
    CHECK_EQ(t_partitioned_contains_batch(b, NULL, 0, NULL), 0); /* no keys, no array */
    amq_partitioned_free(b);
    free(out);
    single_ref_free(&x);
}

/* Every query path answers alike, with and without an output array, for
 * counts around the chunks of 64 keys (and none); an unknown path is
 * refused. */
TEST(partitioned_batched_query_same_on_every_path_and_chunk_edge)
{
    const uint32_t paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    single_ref x;
    amq_partitioned *b;
    uint8_t *out;
    size_t pi, ci, i;

    REQUIRE(single_ref_init(&x));
    out = malloc(2 * x.n);
    b = batch_filled(&x);
    REQUIRE(out != NULL && b != NULL);
    for (pi = 0; pi < 3; pi++) {
        const size_t counts[] = {0, 1, 63, 64, 65, 127, 128, 129, 2 * x.n - 1, 2 * x.n};
        if (!amq_simd_supported(paths[pi])) {
            test_skip(amq_simd_name(paths[pi]));
            continue;
        }
        REQUIRE_OK(amq_partitioned_set_simd(b, paths[pi]));
        for (ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            const size_t m = counts[ci], at = (size_t)(2 * x.n - m) / 2;
            uint64_t e = 0, cnt;
            for (i = 0; i < m; i++)
                e += x.found[at + i];
            memset(out, 7, 2 * x.n);
            cnt = t_partitioned_contains_batch(b, x.h + at, m, out);
            if (cnt != e || memcmp(x.found + at, out, m) != 0 || (m < 2 * x.n && out[m] != 7))
                FAIL_AT_("path %s, %zu keys: answers differ", amq_simd_name(paths[pi]), m);
            CHECK_EQ(t_partitioned_contains_batch(b, x.h + at, m, NULL), e);
        }
    }
    CHECK_STATUS(amq_partitioned_set_simd(b, 9), AMQ_EINVAL);
    amq_partitioned_free(b);
    free(out);
    single_ref_free(&x);
}

/* Batched adds on every path (with and without flags, the first call ending
 * inside a chunk) give the bytes of one-key adds. */
TEST(partitioned_batched_add_same_bytes_as_one_key_adds_on_every_path)
{
    const uint32_t paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    single_ref x;
    uint64_t e1 = 0, e2 = 0;
    size_t size_a, size_c;
    uint8_t *want, *got, *added;
    size_t pi, i, n;
    amq_partitioned *c;
    amq_filter *ga, *gc;

    REQUIRE(single_ref_init(&x));
    n = x.n;
    added = malloc(n);
    REQUIRE(added != NULL);
    for (i = 0; i < n; i++)
        *(i < n - 100 ? &e1 : &e2) += x.added[i];
    REQUIRE_OK(amq_filter_from_partitioned(x.a, &ga)); /* ga owns x.a */
    x.a = NULL;
    want = test_serialized(ga, &size_a);
    REQUIRE(want != NULL);
    for (pi = 0; pi < 3; pi++) {
        if (!amq_simd_supported(paths[pi])) {
            test_skip(amq_simd_name(paths[pi]));
            continue;
        }
        REQUIRE_OK(amq_partitioned_new(&x.p, NULL, &c));
        REQUIRE_OK(amq_partitioned_set_simd(c, paths[pi]));
        memset(added, 7, n);
        CHECK_EQ(t_partitioned_add_batch(c, x.h, n - 100, added), e1);
        CHECK(memcmp(x.added, added, n - 100) == 0 && added[n - 100] == 7);
        CHECK_EQ(t_partitioned_add_batch(c, x.h + n - 100, 100, NULL), e2);
        CHECK_EQ(t_partitioned_add_batch(c, NULL, 0, NULL), 0);
        REQUIRE_OK(amq_filter_from_partitioned(c, &gc));
        got = test_serialized(gc, &size_c);
        if (got == NULL || size_c != size_a || memcmp(want, got, size_a) != 0)
            FAIL_AT_("path %s: the batched adds' bytes differ", amq_simd_name(paths[pi]));
        free(got);
        amq_filter_free(gc);
    }
    free(want);
    free(added);
    amq_filter_free(ga);
    single_ref_free(&x);
}

/* Saves a build of n keys to path; returns the hashes (caller frees). */
static amq_hash128 *save_build(const char *path, size_t n, uint32_t parts, amq_filter **out)
{
    amq_partitioned_params p = params_for(parts, 0.01);
    amq_partitioned *f;
    amq_filter *g;
    amq_hash128 *h = random_hashes(n, 0x5a5a);
    if (h == NULL || amq_partitioned_build(&p, h, n, 2, NULL, &f) != AMQ_OK ||
        amq_filter_from_partitioned(f, &g) != AMQ_OK ||
        amq_filter_save(g, path, 0, NULL) != AMQ_OK) {
        free(h);
        return NULL;
    }
    *out = g;
    return h;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *buf;
    long sz;
    if (fp == NULL)
        return NULL;
    fseek(fp, 0, SEEK_END);
    sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    buf = malloc((size_t)sz);
    if (buf != NULL && fread(buf, 1, (size_t)sz, fp) != (size_t)sz) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    *len = (size_t)sz;
    return buf;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    int ok;
    if (fp == NULL)
        return 0;
    ok = fwrite(buf, 1, len, fp) == len;
    return fclose(fp) == 0 && ok;
}

TEST(partitioned_file_round_trip_and_lazy_verification)
{
    const char *path = test_path("part.amq");
    const size_t n = 100000;
    amq_filter *orig, *g;
    amq_partitioned *pf;
    amq_partition_info info;
    amq_hash128 *h = save_build(path, n, 12, &orig);
    unsigned modes[3] = {0, AMQ_OPEN_MMAP, AMQ_OPEN_MMAP | AMQ_OPEN_TRUST};
    uint8_t *out = malloc(n);
    size_t i, m;
    uint32_t j, touched;

    REQUIRE(h != NULL && out != NULL);
    for (m = 0; m < 3; m++) {
        amq_errinfo err;
        REQUIRE_OK(amq_filter_open(path, modes[m], NULL, &g, &err));
        pf = amq_filter_partitioned(g);
        REQUIRE(pf != NULL);
        CHECK(amq_filter_blocked(g) == NULL);
        CHECK_EQ(amq_partitioned_partitions(pf), 12);
        CHECK_EQ(amq_partitioned_is_readonly(pf), modes[m] != 0);
        REQUIRE_OK(amq_partitioned_partition_info(pf, 3, &info));
        CHECK_EQ(info.verified, (modes[m] & AMQ_OPEN_TRUST) ? 0 : 1);
        /* One query: only its partition gets verified. */
        if (modes[m] & AMQ_OPEN_TRUST) {
            CHECK_EQ(amq_filter_contains_hash(g, h[0]), 1);
            touched = 0;
            for (j = 0; j < 12; j++) {
                REQUIRE_OK(amq_partitioned_partition_info(pf, j, &info));
                touched += info.verified == 1;
                CHECK_EQ(info.verified, j == amq_partitioned_partition_of(pf, h[0]) ? 1 : 0);
            }
            CHECK_EQ(touched, 1);
        }
        amq_filter_contains_batch(g, h, n, out);
        for (i = 0; i < n; i++)
            if (out[i] != 1) {
                FAIL_AT_("mode %u: false negative at %zu", modes[m], i);
                break;
            }
        CHECK_EQ(amq_partitioned_status(pf), AMQ_OK);
        CHECK_EQ(amq_partitioned_items(pf), amq_partitioned_items(amq_filter_partitioned(orig)));
        amq_filter_free(g);
    }
    /* A trusted copy (no mmap) re-saves with verified partitions. */
    {
        uint64_t s1, s2;
        REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_TRUST, NULL, &g, NULL));
        REQUIRE_OK(amq_filter_serialized_size(g, &s1));
        REQUIRE_OK(amq_filter_serialized_size(orig, &s2));
        CHECK_EQ(s1, s2);
        CHECK(amq_filter_add_hash(g, h[5]) >= 0);
        amq_filter_free(g);
    }
    amq_filter_free(orig);
    free(h);
    free(out);
}

/* The keys of a saved filter of 8 partitions (at path) and its partition
 * CORRUPT_PART, whose bytes have one flipped bit; NULL on failure. */
#define CORRUPT_N 50000
#define CORRUPT_PART 5u
static amq_hash128 *corrupt_partition_file(const char *path)
{
    amq_filter *orig;
    amq_partition_info info;
    amq_container c;
    amq_hash128 *h = save_build(path, CORRUPT_N, 8, &orig);
    uint8_t *buf = NULL;
    size_t len;
    int ok;

    if (h == NULL)
        return NULL;
    buf = read_file(path, &len);
    ok = buf != NULL && amq_container_parse(buf, len, len, &c, NULL) == AMQ_OK &&
         amq_partitioned_partition_info(amq_filter_partitioned(orig), CORRUPT_PART, &info) ==
             AMQ_OK;
    if (ok) {
        uint64_t data_off = c.payload_off + (64 + 48 * 8 + 63) / 64 * 64;
        buf[data_off + info.offset + 17] ^= 0x40;
        ok = write_file(path, buf, len);
    }
    free(buf);
    amq_filter_free(orig);
    if (!ok) {
        free(h);
        return NULL;
    }
    return h;
}

/* In concurrent mode a save writes each partition from a copy, out of
 * order, and sums the file as written: with no add running, the same bytes
 * as in exclusive mode - saved, serialized, and serialized piece by piece
 * (which writes in order) - byte for byte. */
TEST(partitioned_concurrent_mode_saves_the_same_bytes)
{
    const char *path = test_path("part-concurrent.amq");
    amq_config cfg;
    amq_filter *f;
    uint8_t *excl, *conc, *saved, *pieces;
    size_t len, clen, slen, off, n;
    uint64_t s;
    int chunked;
    uint32_t i;

    for (chunked = 0; chunked <= 1; chunked++) {
        amq_config_init(&cfg, AMQ_KIND_PARTITIONED);
        cfg.capacity = 200000;
        cfg.partitions = 7;
        REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
        REQUIRE_OK(amq_filter_set_chunked_checksum(f, chunked));
        s = 99;
        for (i = 0; i < 150000; i++) {
            amq_hash128 h;
            h.h1 = test_rand(&s);
            h.h2 = test_rand(&s);
            REQUIRE(amq_filter_add_hash(f, h) >= 0);
        }
        excl = test_serialized(f, &len);
        REQUIRE_OK(amq_filter_set_concurrent(f, 1));
        conc = test_serialized(f, &clen);
        REQUIRE_OK(amq_filter_save(f, path, 0, NULL));
        saved = read_file(path, &slen);
        pieces = malloc(len);
        REQUIRE(excl != NULL && conc != NULL && saved != NULL && pieces != NULL);
        for (off = 0; off < len; off += n)
            REQUIRE_OK(amq_filter_serialize_range(f, off, pieces + off, 100000, &n));
        CHECK(clen == len && memcmp(conc, excl, len) == 0);
        CHECK(slen == len && memcmp(saved, excl, len) == 0);
        CHECK(memcmp(pieces, excl, len) == 0);
        free(excl);
        free(conc);
        free(saved);
        free(pieces);
        amq_filter_free(f);
    }
}

TEST(partitioned_corrupt_partition_fails_untrusted_open)
{
    const char *path = test_path("corrupt.amq");
    amq_hash128 *h = corrupt_partition_file(path);
    amq_filter *g;
    amq_errinfo err;

    REQUIRE(h != NULL);
    /* Without trust: the container's checksum fails at open. */
    CHECK_STATUS(amq_filter_open(path, AMQ_OPEN_MMAP, NULL, &g, &err), AMQ_ECHECKSUM);
    free(h);
}

TEST(partitioned_corrupt_partition_found_by_the_first_query_into_it)
{
    const char *path = test_path("corrupt.amq");
    amq_hash128 *h = corrupt_partition_file(path);
    amq_filter *g;
    amq_partitioned *pf;
    amq_partition_info info;
    amq_errinfo err;
    size_t i;
    int saw_bad = 0, saw_good = 0;

    REQUIRE(h != NULL);
    /* Trusted: opens; the bad partition is found when touched. */
    REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_MMAP | AMQ_OPEN_TRUST, NULL, &g, &err));
    pf = amq_filter_partitioned(g);
    CHECK_EQ(amq_partitioned_status(pf), AMQ_OK);
    for (i = 0; i < CORRUPT_N; i++) {
        int r = amq_filter_contains_hash(g, h[i]);
        if (amq_partitioned_partition_of(pf, h[i]) == CORRUPT_PART) {
            CHECK_EQ(r, AMQ_ECHECKSUM);
            saw_bad = 1;
        } else {
            CHECK_EQ(r, 1);
            saw_good = 1;
        }
    }
    CHECK(saw_bad && saw_good);
    CHECK_STATUS(amq_partitioned_status(pf), AMQ_ECHECKSUM);
    REQUIRE_OK(amq_partitioned_partition_info(pf, CORRUPT_PART, &info));
    CHECK_EQ(info.verified, -1);
    amq_filter_free(g);
    free(h);
}

TEST(partitioned_corrupt_partition_batched_queries_answer_maybe_and_verify_names_it)
{
    const char *path = test_path("corrupt.amq");
    amq_hash128 *h = corrupt_partition_file(path);
    uint8_t *out = malloc(CORRUPT_N);
    amq_filter *g;
    amq_errinfo err;
    uint32_t bad = 0;
    size_t i;

    REQUIRE(h != NULL && out != NULL);
    REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_MMAP | AMQ_OPEN_TRUST, NULL, &g, &err));
    /* Batched answers: "maybe" for the bad partition's keys. */
    REQUIRE_OK(amq_filter_contains_batch(g, h, CORRUPT_N, out));
    for (i = 0; i < CORRUPT_N; i++)
        CHECK_EQ(out[i], 1);
    CHECK_STATUS(amq_partitioned_verify(amq_filter_partitioned(g), &bad), AMQ_ECHECKSUM);
    CHECK_EQ(bad, CORRUPT_PART);
    amq_filter_free(g);
    free(out);
    free(h);
}

TEST(partitioned_corrupt_partition_refuses_adds_and_saves)
{
    const char *path = test_path("corrupt.amq");
    amq_hash128 *h = corrupt_partition_file(path);
    amq_filter *g;
    amq_errinfo err;
    size_t i;
    int tried = 0;

    REQUIRE(h != NULL);
    /* A trusted copy refuses to add into it and then to save. */
    REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_TRUST, NULL, &g, &err));
    for (i = 0; i < CORRUPT_N && !tried; i++)
        if (amq_partitioned_partition_of(amq_filter_partitioned(g), h[i]) == CORRUPT_PART) {
            CHECK_STATUS(amq_filter_add_hash(g, h[i]), AMQ_ECHECKSUM);
            tried = 1;
        }
    CHECK(tried);
    CHECK_STATUS(amq_filter_save(g, test_path("resave.amq"), 0, &err), AMQ_ECHECKSUM);
    amq_filter_free(g);
    free(h);
}

/* A batch of new keys stops at the first key of the bad partition (past the
 * first chunks of 64): the keys before it are added, those after it not
 * (they answer "no" but for false positives). */
TEST(partitioned_corrupt_partition_stops_a_batched_add_at_its_first_key)
{
    const char *path = test_path("corrupt.amq");
    const size_t m = 4000, lead = 130;
    amq_hash128 *h = corrupt_partition_file(path);
    amq_hash128 *r = random_hashes(m, 0xbadc0de), *fresh = malloc(m * sizeof *fresh);
    uint8_t *added = malloc(m), *used = calloc(m, 1);
    size_t i, first = m, after = 0, hits = 0, at = 0;
    amq_partitioned *pf;
    amq_filter *g;
    amq_errinfo err;
    uint64_t newly;

    REQUIRE(h != NULL && r != NULL && fresh != NULL && added != NULL && used != NULL);
    REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_TRUST, NULL, &g, &err));
    pf = amq_filter_partitioned(g);
    /* lead keys of good partitions first, then the rest in order */
    for (i = 0; i < m && at < lead; i++)
        if (amq_partitioned_partition_of(pf, r[i]) != CORRUPT_PART) {
            fresh[at++] = r[i];
            used[i] = 1;
        }
    for (i = 0; i < m; i++)
        if (!used[i])
            fresh[at++] = r[i];
    for (i = 0; i < m && first == m; i++)
        if (amq_partitioned_partition_of(pf, fresh[i]) == CORRUPT_PART)
            first = i;
    REQUIRE(first >= lead && first < m - 1000);
    memset(added, 7, m);
    newly = UINT64_MAX;
    CHECK_STATUS(amq_partitioned_add_batch(pf, fresh, m, added, &newly), AMQ_ECHECKSUM);
    /* the count covers the keys added before the error */
    for (i = 0, hits = 0; i < first; i++)
        hits += added[i];
    CHECK_EQ(newly, hits);
    CHECK(newly >= lead / 2);
    hits = 0;
    for (i = 0; i < first; i++)
        if (amq_partitioned_contains_hash(pf, fresh[i]) != 1 || added[i] > 1) {
            FAIL_AT_("key %zu, before the bad partition's first, was not added", i);
            break;
        }
    for (i = first + 1; i < m; i++)
        if (amq_partitioned_partition_of(pf, fresh[i]) != CORRUPT_PART) {
            after++;
            hits += amq_partitioned_contains_hash(pf, fresh[i]) == 1;
        }
    CHECK(after > 1000 && hits < after / 10); /* 1 % target rate */
    amq_filter_free(g);
    free(r);
    free(fresh);
    free(added);
    free(used);
    free(h);
}

/* Rewrites the index of a serialized filter with fn, fixing its checksum
 * and the container's, and returns the status of loading it. */
static int load_edited_keep(const uint8_t *orig, size_t len,
                            void (*fn)(uint8_t *index, uint32_t np), int fix_index_sum,
                            amq_filter **out)
{
    uint8_t *buf = malloc(len + 64), *b = buf + (64 - ((uintptr_t)buf & 63)) % 64;
    amq_container c;
    amq_filter *g;
    uint8_t *payload, params[64];
    uint32_t np;
    int rc;

    memcpy(b, orig, len);
    if (amq_container_parse(b, len, len, &c, NULL) != AMQ_OK) {
        free(buf);
        return -1000;
    }
    np = amq_load32(c.params);
    payload = b + c.payload_off;
    fn(payload, np);
    if (fix_index_sum)
        amq_store64(payload, amq_checksum(payload + 64, (size_t)48 * np));
    c.payload_sum = amq_checksum(payload, (size_t)c.payload_len);
    /* The header writer clears its area first: give it a copy of the
     * parameters. */
    memcpy(params, c.params, c.params_len < sizeof params ? c.params_len : sizeof params);
    c.params = params;
    amq_container_write_header(&c, b);
    rc = amq_filter_deserialize(b, len, 0, NULL, &g, NULL);
    if (rc == AMQ_OK) {
        if (out != NULL)
            *out = g;
        else
            amq_filter_free(g);
    }
    free(buf);
    return rc;
}

static int load_edited(const uint8_t *orig, size_t len, void (*fn)(uint8_t *index, uint32_t np),
                       int fix_index_sum)
{
    return load_edited_keep(orig, len, fn, fix_index_sum, NULL);
}

static void edit_nothing(uint8_t *ix, uint32_t np)
{
    (void)ix;
    (void)np;
}
static void edit_k_zero(uint8_t *ix, uint32_t np)
{
    (void)np;
    amq_store32(ix + 64 + 48 + 16, 0);
}
static void edit_k_big(uint8_t *ix, uint32_t np)
{
    (void)np;
    amq_store32(ix + 64 + 16, 17);
}
/* Partitions 1 and 3 with other k than the rest (a valid file). */
static void edit_k_mixed(uint8_t *ix, uint32_t np)
{
    (void)np;
    amq_store32(ix + 64 + 48 * 1 + 16, 3);
    amq_store32(ix + 64 + 48 * 3 + 16, 11);
}
static void edit_offset(uint8_t *ix, uint32_t np)
{
    (void)np;
    amq_store64(ix + 64 + 48, 64);
}
static void edit_blocks(uint8_t *ix, uint32_t np)
{
    amq_store64(ix + 64 + 48 * (np - 1) + 8, amq_load64(ix + 64 + 48 * (np - 1) + 8) + 1);
}
static void edit_items(uint8_t *ix, uint32_t np)
{
    (void)np;
    amq_store64(ix + 64 + 24, 1);
}
static void edit_reserved(uint8_t *ix, uint32_t np)
{
    (void)np;
    ix[40] = 1;
}
static void edit_entry_size(uint8_t *ix, uint32_t np)
{
    (void)np;
    amq_store32(ix + 12, 40);
}
static void edit_checksum_only(uint8_t *ix, uint32_t np)
{
    (void)np;
    ix[64 + 48 + 40] ^= 1;
}

/* The index holds k per partition, and a file may mix them: batched
 * queries make the path's context again when k changes from one key to
 * the next, on every path. */
TEST(partitioned_mixed_k_batched)
{
    const uint32_t paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    const size_t n = 20000;
    amq_partitioned_params p = params_for(5, 0.01);
    amq_hash128 *h = random_hashes(2 * n, 17);
    uint8_t *o1 = malloc(2 * n), *o2 = malloc(2 * n), *buf;
    amq_partitioned *f, *pf;
    amq_filter *g, *g2 = NULL;
    uint64_t e = 0, missed3 = 0;
    size_t size;
    size_t i, pi;

    REQUIRE(h != NULL && o1 != NULL && o2 != NULL);
    REQUIRE_OK(amq_partitioned_build(&p, h, n, 1, NULL, &f));
    REQUIRE_OK(amq_filter_from_partitioned(f, &g));
    buf = test_serialized(g, &size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(load_edited_keep(buf, size, edit_k_mixed, 1, &g2));
    pf = amq_filter_partitioned(g2);
    REQUIRE(pf != NULL);
    REQUIRE_OK(amq_partitioned_set_simd(pf, AMQ_SIMD_SCALAR));
    for (i = 0; i < 2 * n; i++) {
        o1[i] = (uint8_t)amq_partitioned_contains_hash(pf, h[i]);
        e += o1[i];
        /* Partition 3 now tests 11 probes of keys that set 7. */
        if (i < n && amq_partitioned_partition_of(pf, h[i]) == 3 && o1[i] == 0)
            missed3++;
    }
    CHECK(missed3 > 0);
    CHECK(e > n / 2 && e < 2 * n);
    for (pi = 0; pi < 3; pi++) {
        if (!amq_simd_supported(paths[pi])) {
            test_skip(amq_simd_name(paths[pi]));
            continue;
        }
        REQUIRE_OK(amq_partitioned_set_simd(pf, paths[pi]));
        memset(o2, 7, 2 * n);
        CHECK_EQ(t_partitioned_contains_batch(pf, h, 2 * n, o2), e);
        CHECK(memcmp(o1, o2, 2 * n) == 0);
        CHECK_EQ(t_partitioned_contains_batch(pf, h, 2 * n, NULL), e);
    }
    amq_filter_free(g2);
    amq_filter_free(g);
    free(buf);
    free(h);
    free(o1);
    free(o2);
}

TEST(partitioned_corrupt_index_rejected)
{
    const size_t n = 20000;
    amq_partitioned_params p = params_for(5, 0.01);
    amq_hash128 *h = random_hashes(n, 9);
    amq_partitioned *f;
    amq_filter *g, *tmp;
    size_t size;
    uint8_t *buf;
    size_t cut;

    REQUIRE(h != NULL);
    REQUIRE_OK(amq_partitioned_build(&p, h, n, 1, NULL, &f));
    REQUIRE_OK(amq_filter_from_partitioned(f, &g));
    buf = test_serialized(g, &size);
    REQUIRE(buf != NULL);
    CHECK_STATUS(load_edited(buf, size, edit_nothing, 1), AMQ_OK);
    CHECK_STATUS(load_edited(buf, size, edit_k_zero, 1), AMQ_ECORRUPT);
    CHECK_STATUS(load_edited(buf, size, edit_k_big, 1), AMQ_ECORRUPT);
    CHECK_STATUS(load_edited(buf, size, edit_offset, 1), AMQ_ECORRUPT);
    CHECK_STATUS(load_edited(buf, size, edit_blocks, 1), AMQ_ECORRUPT);
    CHECK_STATUS(load_edited(buf, size, edit_items, 1), AMQ_ECORRUPT);
    CHECK_STATUS(load_edited(buf, size, edit_reserved, 1), AMQ_ECORRUPT);
    CHECK_STATUS(load_edited(buf, size, edit_entry_size, 1), AMQ_ECORRUPT);
    /* An index changed without its checksum: rejected even trusted. */
    CHECK_STATUS(load_edited(buf, size, edit_k_zero, 0), AMQ_ECHECKSUM);
    /* A partition checksum changed (index and container checksums fixed):
     * an untrusted open checks every partition and refuses the file (a
     * trusted one would verify lazily: test_partitioned_trust). */
    CHECK_STATUS(load_edited(buf, size, edit_checksum_only, 1), AMQ_ECHECKSUM);
    for (cut = 0; cut < size; cut += 97) {
        if (amq_filter_deserialize(buf, cut, AMQ_OPEN_TRUST, NULL, &tmp, NULL) == AMQ_OK) {
            FAIL_AT_("accepted %zu of %zu bytes", cut, size);
            amq_filter_free(tmp);
        }
    }
    free(buf);
    free(h);
    amq_filter_free(g);
}

/* A filter of 12 partitions cut into 4 slices of 3 (what a sharded filter's shards hold,
 * docs/cluster.md): every key answers in its own slice as in the whole filter, a key of
 * another slice is refused (adds, single queries) or "maybe" (batched queries), a slice
 * survives its file form, and the slices join back into the same bytes. */
TEST(partitioned_slices_answer_as_the_whole_and_join_back_byte_for_byte)
{
    const char *path = test_path("slices.amq");
    const size_t n = 60000, absent = 60000;
    amq_filter *orig, *sf[4], *joined;
    amq_partitioned *sl[4], *j;
    const amq_partitioned *cs[4];
    amq_hash128 *h = save_build(path, n, 12, &orig), *q = random_hashes(absent, 0x77);
    amq_partitioned *pf;
    amq_errinfo err;
    uint8_t *a, *b, *slb, one;
    size_t la, lb, ll, i;
    uint32_t s, total, first;
    uint64_t fp_whole = 0, fp_sliced = 0;

    REQUIRE(h != NULL && q != NULL);
    pf = amq_filter_partitioned(orig);
    for (s = 0; s < 4; s++) {
        REQUIRE_OK(amq_partitioned_slice(pf, 3 * s, 3, NULL, &sl[s]));
        amq_partitioned_slice_info(sl[s], &total, &first);
        CHECK_EQ(total, 12);
        CHECK_EQ(first, 3 * s);
        CHECK_EQ(amq_partitioned_partitions(sl[s]), 3);
        /* through the file form: layout 1 loads back as a slice */
        REQUIRE_OK(amq_filter_from_partitioned(sl[s], &sf[s]));
        slb = test_serialized(sf[s], &ll);
        REQUIRE(slb != NULL);
        amq_filter_free(sf[s]);
        REQUIRE_OK(amq_filter_deserialize(slb, ll, 0, NULL, &sf[s], &err));
        free(slb);
        sl[s] = amq_filter_partitioned(sf[s]);
        amq_partitioned_slice_info(sl[s], &total, &first);
        CHECK_EQ(first, 3 * s);
        cs[s] = sl[s];
    }
    /* the routing: a key's slice is its partition of 12 over 3 = ((h2 >> 32) * 4) >> 32 */
    for (i = 0; i < n; i++) {
        uint32_t p = amq_partition_index(12, h[i]);
        s = p / 3;
        if (s != amq_partition_index(4, h[i]) || amq_filter_contains_hash(sf[s], h[i]) != 1) {
            FAIL_AT_("key %zu: partition %u, slice %u", i, p, s);
            break;
        }
    }
    for (i = 0; i < absent; i++) {
        s = amq_partition_index(12, q[i]) / 3;
        fp_whole += amq_filter_contains_hash(orig, q[i]) == 1;
        fp_sliced += amq_filter_contains_hash(sf[s], q[i]) == 1;
        CHECK_EQ(amq_filter_contains_hash(sf[(s + 1) % 4], q[i]), 1);
        if (i == 0) {
            CHECK_EQ(amq_filter_add_hash(sf[(s + 1) % 4], q[i]), AMQ_ERANGE);
            amq_filter_contains_batch(sf[(s + 1) % 4], &q[i], 1, &one);
            CHECK_EQ(one, 1);
        }
    }
    /* the same bits answer: the rate is the whole filter's, exactly */
    CHECK_EQ(fp_sliced, fp_whole);
    CHECK_GT(fp_whole, 0);
    /* joined: the original bytes */
    REQUIRE_OK(amq_partitioned_join(cs, 4, NULL, &j, &err));
    REQUIRE_OK(amq_filter_from_partitioned(j, &joined));
    a = test_serialized(orig, &la);
    b = test_serialized(joined, &lb);
    REQUIRE(a != NULL && b != NULL);
    CHECK_EQ(la, lb);
    CHECK(la == lb && memcmp(a, b, la) == 0);
    free(a);
    free(b);
    /* refused: out of order, a slice missing, two of one filter cut otherwise */
    cs[0] = sl[1];
    cs[1] = sl[0];
    CHECK_EQ(amq_partitioned_join(cs, 4, NULL, &j, &err), AMQ_EINCOMPAT);
    CHECK(strstr(err.msg, "must start at 0") != NULL);
    cs[0] = sl[0];
    cs[1] = sl[1];
    CHECK_EQ(amq_partitioned_join(cs, 3, NULL, &j, &err), AMQ_EINCOMPAT);
    CHECK(strstr(err.msg, "missing") != NULL);
    CHECK_EQ(amq_partitioned_slice(pf, 0, 12, NULL, &j), AMQ_ERANGE);
    CHECK_EQ(amq_partitioned_slice(pf, 10, 3, NULL, &j), AMQ_ERANGE);
    for (s = 0; s < 4; s++)
        amq_filter_free(sf[s]);
    amq_filter_free(joined);
    amq_filter_free(orig);
    free(h);
    free(q);
}

TEST(partitioned_merge)
{
    amq_config cfg;
    amq_filter *a, *b, *c;
    amq_errinfo err;
    uint8_t key[8];
    uint64_t i;
    int hits;

    amq_config_init(&cfg, AMQ_KIND_PARTITIONED);
    cfg.capacity = 20000;
    cfg.partitions = 4;
    REQUIRE_OK(amq_filter_new(&cfg, &a, &err));
    REQUIRE_OK(amq_filter_new(&cfg, &b, &err));
    for (i = 0; i < 10000; i++) {
        amq_store64(key, i);
        amq_filter_add(a, key, 8);
        amq_store64(key, i + 99999);
        amq_filter_add(b, key, 8);
    }
    REQUIRE_OK(amq_filter_merge(a, b, &err));
    for (i = 0; i < 10000; i++) {
        amq_store64(key, i + 99999);
        CHECK_EQ(amq_filter_contains(a, key, 8), 1);
    }
    cfg.partitions = 5;
    REQUIRE_OK(amq_filter_new(&cfg, &c, &err));
    CHECK_STATUS(amq_filter_merge(a, c, &err), AMQ_EINCOMPAT);
    CHECK(strstr(err.msg, "partitions") != NULL);
    amq_filter_free(c);
    cfg.partitions = 4;
    cfg.capacity = 40000;
    REQUIRE_OK(amq_filter_new(&cfg, &c, &err));
    CHECK_STATUS(amq_filter_merge(a, c, &err), AMQ_EINCOMPAT);
    amq_filter_free(c);
    /* (A u B) & B: B's keys stay, A's leave but for false positives; each
     * partition's count is estimated, the total near |B|. */
    REQUIRE_OK(amq_filter_intersect(a, b, &err));
    hits = 0;
    for (i = 0; i < 10000; i++) {
        amq_store64(key, i + 99999);
        CHECK_EQ(amq_filter_contains(a, key, 8), 1);
        amq_store64(key, i);
        hits += amq_filter_contains(a, key, 8);
    }
    CHECK(hits < 500);
    CHECK(amq_partitioned_items(amq_filter_partitioned(a)) >= 9000 &&
          amq_partitioned_items(amq_filter_partitioned(a)) <= 10000);
    REQUIRE_OK(amq_filter_clear(a));
    CHECK_EQ(amq_partitioned_items(amq_filter_partitioned(a)), 0);
    amq_filter_free(a);
    amq_filter_free(b);
}

/* ---- concurrency (run under ThreadSanitizer by make tsan) ------------------------------ */

#define PC_THREADS 3
#define PC_KEYS 30000

typedef struct pc_arg {
    amq_partitioned *f;
    int id;
} pc_arg;

static void *pc_writer(void *p)
{
    pc_arg *a = p;
    amq_hash128 h[100];
    uint64_t s = 1000 + (uint64_t)a->id, i, j;
    for (i = 0; i < PC_KEYS; i += 100) {
        for (j = 0; j < 100; j++) {
            h[j].h1 = test_rand(&s);
            h[j].h2 = test_rand(&s);
        }
        if (i % 200 == 0)
            t_partitioned_add_batch(a->f, h, 100, NULL);
        else
            for (j = 0; j < 100; j++)
                amq_partitioned_add_hash(a->f, h[j]);
        for (j = 0; j < 100; j++)
            (void)amq_partitioned_contains_hash(a->f, h[j]);
    }
    return NULL;
}

TEST(partitioned_concurrent_adds)
{
    amq_partitioned_params p = params_for(6, 0.01);
    amq_partitioned *f;
    pthread_t th[PC_THREADS];
    pc_arg args[PC_THREADS];
    uint64_t i, s;
    int t;

    p.capacity = PC_THREADS * PC_KEYS;
    REQUIRE_OK(amq_partitioned_new(&p, NULL, &f));
    REQUIRE_OK(amq_partitioned_set_simd(f, AMQ_SIMD_SCALAR));
    REQUIRE_OK(amq_partitioned_set_concurrent(f, 1));
    for (t = 0; t < PC_THREADS; t++) {
        args[t].f = f;
        args[t].id = t;
        REQUIRE(pthread_create(&th[t], NULL, pc_writer, &args[t]) == 0);
    }
    for (t = 0; t < PC_THREADS; t++)
        pthread_join(th[t], NULL);
    for (t = 0; t < PC_THREADS; t++) {
        s = 1000 + (uint64_t)t;
        for (i = 0; i < PC_KEYS; i++) {
            amq_hash128 h;
            h.h1 = test_rand(&s);
            h.h2 = test_rand(&s);
            if (amq_partitioned_contains_hash(f, h) != 1) {
                FAIL_AT_("thread %d key %" PRIu64 " lost", t, i);
                break;
            }
        }
    }
    CHECK(amq_partitioned_items(f) > PC_THREADS * PC_KEYS * 99 / 100);
    amq_partitioned_free(f);
}

typedef struct lv_shared {
    const amq_filter *g;
    const amq_hash128 *h;
    size_t n;
    _Atomic int bad;
} lv_shared;

static void *lv_reader(void *p)
{
    lv_shared *sh = p;
    size_t i;
    for (i = 0; i < sh->n; i++)
        if (amq_filter_contains_hash(sh->g, sh->h[i]) != 1)
            atomic_fetch_add(&sh->bad, 1);
    return NULL;
}

TEST(partitioned_concurrent_lazy_verification)
{
    /* Several threads touch the unverified partitions of a trusted view at
     * once: each is verified by one of them, every answer is right. */
    const char *path = test_path("lazy.amq");
    const size_t n = 40000;
    amq_filter *orig, *g;
    amq_hash128 *h = save_build(path, n, 16, &orig);
    amq_partition_info info;
    pthread_t th[4];
    lv_shared sh;
    uint32_t j;
    int t;

    REQUIRE(h != NULL);
    REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_MMAP | AMQ_OPEN_TRUST, NULL, &g, NULL));
    REQUIRE_OK(amq_partitioned_set_simd(amq_filter_partitioned(g), AMQ_SIMD_SCALAR));
    sh.g = g;
    sh.h = h;
    sh.n = n;
    atomic_init(&sh.bad, 0);
    for (t = 0; t < 4; t++)
        REQUIRE(pthread_create(&th[t], NULL, lv_reader, &sh) == 0);
    for (t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    CHECK_EQ(atomic_load(&sh.bad), 0);
    for (j = 0; j < 16; j++) {
        REQUIRE_OK(amq_partitioned_partition_info(amq_filter_partitioned(g), j, &info));
        CHECK_EQ(info.verified, 1);
    }
    amq_filter_free(g);
    amq_filter_free(orig);
    free(h);
}

TEST_MAIN()
