/*
 * test_static.c - the static kinds (fuse, ribbon): no false negatives over
 * random key sets with duplicates and at the sizes where the reference
 * binary fuse code fails, false-positive rates and sizes within bands,
 * spilled builds identical to in-memory ones, the file format pinned by a
 * golden checksum, and adds, removes and creates refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "amq.h"
#include "common/alloc.h"
#include "test.h"

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* A little-endian u32 of a file's bytes. */
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static amq_hash128 *random_hashes(size_t n, uint64_t seed)
{
    amq_hash128 *h = malloc((n ? n : 1) * sizeof *h);
    size_t i;
    rng_state = seed;
    for (i = 0; i < n; i++) {
        h[i].h1 = rng();
        h[i].h2 = rng();
    }
    return h;
}

static size_t false_negatives(const amq_filter *f, const amq_hash128 *h, size_t n)
{
    uint8_t *out = malloc(n ? n : 1);
    size_t i, fn = 0;
    amq_filter_contains_batch(f, h, n, out);
    for (i = 0; i < n; i++) {
        fn += out[i] != 1;
        fn += amq_filter_contains_hash(f, h[i]) != 1;
    }
    free(out);
    return fn;
}

static double measured_fpp(const amq_filter *f, size_t q, uint64_t seed)
{
    amq_hash128 *h = random_hashes(q, seed);
    uint8_t *out = malloc(q);
    size_t i, fp = 0, fp1 = 0;
    amq_filter_contains_batch(f, h, q, out);
    for (i = 0; i < q; i++) {
        fp += out[i];
        fp1 += (size_t)amq_filter_contains_hash(f, h[i]);
    }
    if (fp != fp1) /* batched and single answer alike */
        FAIL_AT_("batched queries found %zu positives, single ones %zu", fp, fp1);
    free(h);
    free(out);
    return (double)fp / (double)q;
}

/* hash 0: the kind's default */
static amq_filter *build_hash(uint32_t kind, unsigned bits, unsigned arity, double fpp,
                              const amq_hash128 *h, size_t n, uint32_t hash)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_errinfo err;
    amq_config_init(&cfg, kind);
    if (hash != 0)
        cfg.hash_algo = hash;
    cfg.fingerprint_bits = bits;
    cfg.arity = arity;
    cfg.fpp = fpp;
    if (amq_filter_build(&cfg, h, n, &f, &err) != AMQ_OK)
        FAIL_AT_("build of %zu keys: %s", n, err.msg);
    return f;
}

static amq_filter *build(uint32_t kind, unsigned bits, unsigned arity, double fpp,
                         const amq_hash128 *h, size_t n)
{
    return build_hash(kind, bits, arity, fpp, h, n, 0);
}

/* Random sets of every small size and around 11.5k keys (where the
 * reference binary fuse code fails to build), with duplicates mixed in. */
TEST(static_no_false_negatives_random_sets_with_duplicates)
{
    static const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 100, 255, 256,
                                   1000, 4095, 11000, 11300, 11400, 11500, 11520, 11550, 11600,
                                   11700, 12000, 65536, 100000};
    static const struct { uint32_t kind; unsigned bits, arity; double fpp; } v[] = {
        {AMQ_KIND_FUSE, 8, 3, 0.01}, {AMQ_KIND_FUSE, 8, 4, 0.01},
        {AMQ_KIND_FUSE, 16, 3, 0.01}, {AMQ_KIND_FUSE, 16, 4, 0.01},
        {AMQ_KIND_RIBBON, 0, 0, 0.01}, {AMQ_KIND_RIBBON, 0, 0, 0.5},
        {AMQ_KIND_RIBBON, 0, 0, 1.0 / 128}, {AMQ_KIND_RIBBON, 0, 0, 1e-6},
    };
    size_t s, i, k, n;
    for (k = 0; k < sizeof v / sizeof v[0]; k++) {
        for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            uint64_t seed = 1000 * k + s;
            amq_hash128 *h;
            amq_filter *f;
            n = sizes[s];
            /* a quarter of the keys twice */
            h = random_hashes(n + n / 4, seed);
            for (i = 0; i < n / 4; i++)
                h[n + i] = h[(i * 7) % n];
            f = build(v[k].kind, v[k].bits, v[k].arity, v[k].fpp, h, n + n / 4);
            REQUIRE(f != NULL);
            if (false_negatives(f, h, n + n / 4) != 0)
                FAIL_AT_("%s bits %u arity %u fpp %g, %zu keys, seed %llu: false negatives",
                         amq_kind_name(v[k].kind), v[k].bits, v[k].arity, v[k].fpp, n,
                         (unsigned long long)seed);
            {
                amq_stats st;
                amq_filter_stats(f, &st);
                CHECK_EQ(st.items, n); /* duplicates counted once */
            }
            amq_filter_free(f);
            free(h);
        }
    }
}

/* Ribbon's query paths (AVX-512 where the CPU has it, scalar under
 * AMQ_SIMD=scalar) answer alike, one key at a time and batched, over rates
 * with one, three and five steps of eight columns, with and without the
 * r + 1'th column, and over several partitions. */
TEST(static_ribbon_query_paths_agree)
{
    static const struct { double fpp; size_t n; } v[] = {
        {0.01, 20000}, {1.0 / 128, 20000}, {0.5, 5000}, {1e-6, 20000}, {3e-10, 5000},
        {0.01, 1200000},
    };
    size_t k, i, q = 100000;
    for (k = 0; k < sizeof v / sizeof v[0]; k++) {
        amq_hash128 *h = random_hashes(v[k].n, 77 + k), *a = random_hashes(q, 99 + k);
        uint8_t *o1 = malloc(q), *o2 = malloc(q);
        amq_filter *fs, *fa;
        size_t diff = 0, pos = 0;
        setenv("AMQ_SIMD", "scalar", 1);
        fs = build(AMQ_KIND_RIBBON, 0, 0, v[k].fpp, h, v[k].n);
        unsetenv("AMQ_SIMD");
        fa = build(AMQ_KIND_RIBBON, 0, 0, v[k].fpp, h, v[k].n);
        REQUIRE(fs != NULL && fa != NULL);
        CHECK_EQ(false_negatives(fs, h, v[k].n), 0);
        CHECK_EQ(false_negatives(fa, h, v[k].n), 0);
        amq_filter_contains_batch(fs, a, q, o1);
        amq_filter_contains_batch(fa, a, q, o2);
        for (i = 0; i < q; i++) {
            diff += o1[i] != o2[i];
            diff += (int)o1[i] != amq_filter_contains_hash(fa, a[i]);
            pos += o1[i];
        }
        CHECK_EQ(diff, 0);
        /* the rate is the target's: the columns were really compared */
        if (fabs((double)pos / (double)q - v[k].fpp) > 5 * sqrt(v[k].fpp / (double)q) + 1e-4)
            FAIL_AT_("fpp %g: measured %g", v[k].fpp, (double)pos / (double)q);
        amq_filter_free(fs);
        amq_filter_free(fa);
        free(h);
        free(a);
        free(o1);
        free(o2);
    }
}

/* amq_filter_contains (the kinds' own one-key entries, XXH3 inlined)
 * answers as amq_filter_contains_hash of amq_filter_hash, for every
 * static variant, XXH3 with a seed and another hash algorithm. */
TEST(static_key_entries_match_hash_entries)
{
    static const struct { uint32_t kind; unsigned bits, arity; uint32_t algo; uint64_t seed; } v[] = {
        {AMQ_KIND_FUSE, 8, 3, AMQ_HASH_XXH3, 0}, {AMQ_KIND_FUSE, 16, 4, AMQ_HASH_XXH3, 77},
        {AMQ_KIND_RIBBON, 0, 0, AMQ_HASH_XXH3, 5}, {AMQ_KIND_RIBBON, 0, 0, AMQ_HASH_MURMUR3, 9},
        {AMQ_KIND_FUSE, 8, 4, AMQ_HASH_MURMUR3, 3},
    };
    size_t k, i, n = 30000, diff, pos;
    char key[32];
    for (k = 0; k < sizeof v / sizeof v[0]; k++) {
        amq_hash128 *h = malloc(n * sizeof *h);
        amq_config cfg;
        amq_filter *f = NULL;
        amq_errinfo err;
        amq_config_init(&cfg, v[k].kind);
        cfg.fingerprint_bits = v[k].bits;
        cfg.arity = v[k].arity;
        cfg.fpp = 0.01;
        cfg.hash_algo = v[k].algo;
        cfg.seed = v[k].seed;
        for (i = 0; i < n; i++)
            h[i] = amq_hash_key(v[k].algo, v[k].seed, key,
                                (size_t)snprintf(key, sizeof key, "k%zu", i));
        if (amq_filter_build(&cfg, h, n, &f, &err) != AMQ_OK)
            FAIL_AT_("build: %s", err.msg);
        REQUIRE(f != NULL);
        diff = pos = 0;
        for (i = 0; i < 2 * n; i++) {
            size_t len = (size_t)snprintf(key, sizeof key, i < n ? "k%zu" : "absent-%zu", i);
            int a = amq_filter_contains(f, key, len);
            diff += a != amq_filter_contains_hash(f, amq_filter_hash(f, key, len));
            pos += (size_t)a;
        }
        CHECK_EQ(diff, 0);
        CHECK(pos >= n && pos < n + n / 20); /* the present ones, and a few per cent more */
        amq_filter_free(f);
        free(h);
    }
}

static uint64_t retries(const amq_filter *f);
/* The fuse kind's default hash, vmulshift, on 16-byte keys that are not
 * random (a counter in one word, the other fixed; a word and a multiple of
 * it): a million keys each built by the batched add, every one present by
 * the handle and the batched query, and the rate of the next million in
 * the band of random keys (static_space_and_rate_bands). */
TEST(static_fuse_vmulshift_structured_keys)
{
    enum { N = 1000000 };
    uint64_t *k = malloc(2 * (size_t)N * sizeof *k);
    uint8_t *out = malloc(N);
    size_t shape, i, miss;
    REQUIRE(k != NULL && out != NULL);
    for (shape = 0; shape < 3; shape++) {
        amq_config cfg;
        amq_builder *b;
        amq_filter *f = NULL;
        uint64_t count = 0, base;
        double fpp;
        amq_config_init(&cfg, AMQ_KIND_FUSE);
        CHECK_EQ(cfg.hash_algo, AMQ_HASH_VMULSHIFT);
        for (base = 0; base < 2; base++) {
            for (i = 0; i < N; i++) {
                const uint64_t c = base * N + i;
                k[2 * i] = shape == 0 ? c : shape == 1 ? UINT64_C(0x5eed) : c << 20;
                k[2 * i + 1] = shape == 0 ? 0 : shape == 1 ? c : (c << 20) * 0x9e3779b97f4a7c15;
            }
            if (base == 0) {
                REQUIRE_OK(amq_builder_new(&cfg, NULL, SIZE_MAX, &b, NULL));
                REQUIRE_OK(amq_builder_add_batch_fixed(b, k, 16, N));
                REQUIRE_OK(amq_builder_finish(b, &f, NULL));
                amq_builder_free(b);
                REQUIRE_OK(amq_filter_contains_batch_fixed(f, k, 16, N, out, &count));
                for (i = 0, miss = 0; i < N; i++)
                    miss += (size_t)(out[i] != 1) +
                            (size_t)(amq_filter_contains(f, &k[2 * i], 16) != 1);
                CHECK_EQ(miss, 0);
                CHECK_EQ_U64(count, N);
            } else {
                REQUIRE_OK(amq_filter_contains_batch_fixed(f, k, 16, N, NULL, &count));
                fpp = (double)count / N;
                if (fpp < 0.0033 || fpp > 0.0046)
                    FAIL_AT_("key shape %zu: measured fpp %.5f, band 0.0033..0.0046", shape, fpp);
            }
        }
        amq_filter_free(f);
    }
    free(k);
    free(out);
}

static uint8_t *serialize(const amq_filter *f, size_t *len);

static int partitions_field(void *ctx, const amq_field *fl)
{
    if (strcmp(fl->name, "partitions") == 0)
        *(uint64_t *)ctx = fl->u64;
    return 0;
}

/* Packed keys: n keys of len bytes, key i of them made from (tag, i). */
static uint8_t *packed_keys(size_t n, size_t len, uint64_t tag)
{
    uint8_t *k = calloc(n ? n : 1, len);
    size_t i, b;
    for (i = 0; i < n; i++) {
        uint64_t v = (tag << 40) ^ (i * UINT64_C(0x9e3779b97f4a7c15)) ^ i;
        for (b = 0; b < len; b++)
            k[i * len + b] = (uint8_t)(v >> (8 * (b % 8))) ^ (uint8_t)(b / 8 * 31);
    }
    return k;
}

/* Every query form of a static filter answers alike for present and absent
 * keys: amq_filter_contains (the filter's own one-key entry: each fuse
 * variant, one partition or two, XXH3 seed 0 or another hash), the hash
 * entry, the batched hash entry and amq_static_contains_batch_fixed over
 * packed keys of 8, 16 and 5 bytes; no present key is refused. */
static void check_query_forms(uint32_t kind, unsigned bits, unsigned arity, uint32_t algo,
                              uint64_t seed, size_t len, size_t n, uint32_t parts)
{
    uint8_t *keys = packed_keys(2 * n, len, 7), *fixed = malloc(2 * n), *batch = malloc(2 * n);
    amq_hash128 *h = malloc(2 * n * sizeof *h);
    size_t i, diff = 0, pos = 0, fn = 0;
    uint64_t count = UINT64_MAX;
    amq_config cfg;
    amq_filter *f = NULL;
    amq_errinfo err;
    amq_stats st;

    amq_config_init(&cfg, kind);
    cfg.fingerprint_bits = bits;
    cfg.arity = arity;
    cfg.fpp = 0.01;
    cfg.hash_algo = algo;
    cfg.seed = seed;
    cfg.partitions = parts;
    for (i = 0; i < 2 * n; i++)
        h[i] = amq_hash_key(algo, seed, keys + i * len, len);
    if (amq_filter_build(&cfg, h, n, &f, &err) != AMQ_OK)
        FAIL_AT_("build: %s", err.msg);
    REQUIRE(f != NULL);
    if (parts > 0) {
        uint64_t got = 0;
        amq_filter_describe(f, partitions_field, &got);
        CHECK_EQ(got, parts);
    }
    REQUIRE_OK(amq_static_contains_batch_fixed(f, keys, len, 2 * n, fixed, &count));
    amq_filter_contains_batch(f, h, 2 * n, batch);
    for (i = 0; i < 2 * n; i++) {
        int a = amq_filter_contains(f, keys + i * len, len);
        diff += a != amq_filter_contains_hash(f, h[i]);
        diff += a != fixed[i];
        diff += a != batch[i];
        fn += i < n && a != 1;
        pos += (size_t)a;
    }
    if (diff != 0 || fn != 0 || count != pos)
        FAIL_AT_("%s bits %u arity %u hash %u seed %llu, %zu-byte keys, n %zu: %zu answers "
                 "differ, %zu false negatives, count %llu of %zu",
                 amq_kind_name(kind), bits, arity, algo, (unsigned long long)seed, len, n, diff,
                 fn, (unsigned long long)count, pos);
    amq_filter_stats(f, &st);
    CHECK(pos >= n && pos < n + n / 20); /* the present ones, and a few per cent more */
    REQUIRE_OK(amq_static_contains_batch_fixed(f, keys, len, n, NULL, &count));
    CHECK_EQ(count, n);
    { /* read back from its bytes (partitions' derivation from the index) */
        size_t blen;
        uint8_t *bytes = serialize(f, &blen);
        amq_filter *g;
        REQUIRE_OK(amq_filter_deserialize(bytes, blen, 0, NULL, &g, NULL));
        REQUIRE_OK(amq_static_contains_batch_fixed(g, keys, len, 2 * n, batch, &count));
        CHECK(memcmp(batch, fixed, 2 * n) == 0);
        for (i = 0, diff = 0; i < 2 * n; i++)
            diff += amq_filter_contains(g, keys + i * len, len) != fixed[i];
        CHECK_EQ(diff, 0);
        amq_filter_free(g);
        free(bytes);
    }
    amq_filter_free(f);
    free(keys);
    free(fixed);
    free(batch);
    free(h);
}

/* A single partition of more than 3 MiB takes the prefetching pipeline in
 * a batch, a smaller one a plain loop (src/fuse.c, FUSE_DIRECT_MAX): both
 * answer as the one-key entry. */
SLOW_TEST(static_query_forms_agree_past_the_plain_loop)
{
    check_query_forms(AMQ_KIND_FUSE, 16, 3, AMQ_HASH_XXH3, 0, 8, 1700000, 0);
    check_query_forms(AMQ_KIND_FUSE, 8, 4, AMQ_HASH_XXH3, 0, 16, 3300000, 0);
}

TEST(static_query_forms_agree)
{
    static const struct { uint32_t algo; uint64_t seed; } hs[] = {
        {AMQ_HASH_XXH3, 0}, {AMQ_HASH_XXH3, 41}, {AMQ_HASH_MURMUR3, 3}, {AMQ_HASH_MULSHIFT, 0},
    };
    static const size_t lens[] = {8, 16, 5};
    unsigned bits, arity;
    size_t k, l;
    uint32_t p;
    for (bits = 8; bits <= 16; bits += 8)
        for (arity = 3; arity <= 4; arity++)
            for (k = 0; k < sizeof hs / sizeof hs[0]; k++)
                for (l = 0; l < sizeof lens / sizeof lens[0]; l++)
                    for (p = 0; p <= 4; p += 4) /* one partition, or four */
                        check_query_forms(AMQ_KIND_FUSE, bits, arity, hs[k].algo, hs[k].seed,
                                          lens[l], 20000, p);
    for (l = 0; l < sizeof lens / sizeof lens[0]; l++)
        check_query_forms(AMQ_KIND_RIBBON, 0, 0, AMQ_HASH_XXH3, 0, lens[l], 20000, 0);
    /* partitions of about 50 keys, some retried: x = h1 beside mixed ones */
    check_query_forms(AMQ_KIND_FUSE, 8, 3, AMQ_HASH_XXH3, 0, 8, 3200, 64);
    check_query_forms(AMQ_KIND_FUSE, 16, 4, AMQ_HASH_XXH3, 0, 16, 3200, 64);
}

/* cfg.partitions for a static kind: a power of two up to 2^20, else
 * AMQ_ERANGE; honoured even for few keys. */
TEST(static_partitions_asked_for)
{
    static const uint32_t bad[] = {3, 6, 1000, (1u << 20) + 1, 1u << 21};
    amq_hash128 *h = random_hashes(3200, 5);
    amq_config cfg;
    amq_filter *f = NULL;
    amq_errinfo err;
    uint64_t got = 0;
    size_t i;
    amq_config_init(&cfg, AMQ_KIND_FUSE);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg.partitions = bad[i];
        CHECK_EQ(amq_filter_build(&cfg, h, 3200, &f, &err), AMQ_ERANGE);
        CHECK(f == NULL && strstr(err.msg, "power of two") != NULL);
    }
    cfg.partitions = 64;
    REQUIRE_OK(amq_filter_build(&cfg, h, 3200, &f, &err));
    amq_filter_describe(f, partitions_field, &got);
    CHECK_EQ(got, 64);
    CHECK(retries(f) > 0); /* small partitions: some constructions retried */
    CHECK_EQ(false_negatives(f, h, 3200), 0);
    amq_filter_free(f);
    free(h);
}

/* Fuse builds take the keys unsorted and dedup only when they meet a
 * duplicate: a set with duplicates (found at once, or only when peeling
 * fails) gives the bytes of the same set without them, whatever the order. */
TEST(static_fuse_duplicates_and_order_do_not_change_bytes)
{
    static const size_t sizes[] = {1000, 50000, 300000};
    size_t s, i, n, la, lb, lc;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        amq_hash128 *h, *r;
        amq_filter *a, *b, *c;
        uint8_t *x, *y, *z;
        n = sizes[s];
        h = random_hashes(n + n / 3, 500 + s);
        for (i = 0; i < n / 3; i++) /* every third key twice, at the end */
            h[n + i] = h[3 * i];
        r = malloc(n * sizeof *r);
        for (i = 0; i < n; i++) /* the distinct keys reversed */
            r[i] = h[n - 1 - i];
        a = build(AMQ_KIND_FUSE, 8, 3, 0.01, h, n);
        b = build(AMQ_KIND_FUSE, 8, 3, 0.01, h, n + n / 3);
        c = build(AMQ_KIND_FUSE, 8, 3, 0.01, r, n);
        REQUIRE(a != NULL && b != NULL && c != NULL);
        x = serialize(a, &la);
        y = serialize(b, &lb);
        z = serialize(c, &lc);
        CHECK(la == lb && memcmp(x, y, la) == 0);
        CHECK(la == lc && memcmp(x, z, la) == 0);
        free(x);
        free(y);
        free(z);
        free(r);
        free(h);
        amq_filter_free(a);
        amq_filter_free(b);
        amq_filter_free(c);
    }
}

/* Two million keys (a construction's scratch of 48 MiB, kept between
 * builds): every key found, and the same bytes whether the scratch was a
 * fresh mapping or the one another build left dirty, for 3- and 4-wise. */
TEST(static_fuse_millions_scratch_reused_same_bytes)
{
    static const unsigned variant[][2] = {{8, 3}, {16, 4}};
    const size_t n = 2000000, big = (size_t)65 << 20;
    amq_hash128 *h = random_hashes(n, 901), *o = random_hashes(n - n / 4, 902);
    size_t v, la, lb;
    for (v = 0; v < 2; v++) {
        amq_region r;
        amq_filter *a, *other, *b;
        uint8_t *x, *y;
        int zeroed;
        /* over the kept size: whatever an earlier build kept is unmapped */
        REQUIRE_OK(amq_region_alloc_scratch(&r, NULL, big, &zeroed));
        amq_region_free_scratch(&r, NULL);
        a = build(AMQ_KIND_FUSE, variant[v][0], variant[v][1], 0.01, h, n);
        other = build(AMQ_KIND_FUSE, variant[v][0], variant[v][1], 0.01, o, n - n / 4);
        b = build(AMQ_KIND_FUSE, variant[v][0], variant[v][1], 0.01, h, n);
        REQUIRE(a != NULL && other != NULL && b != NULL);
        CHECK_EQ(false_negatives(a, h, n), 0);
        CHECK_EQ(false_negatives(other, o, n - n / 4), 0);
        x = serialize(a, &la);
        y = serialize(b, &lb);
        CHECK(la == lb && memcmp(x, y, la) == 0);
        free(x);
        free(y);
        amq_filter_free(a);
        amq_filter_free(other);
        amq_filter_free(b);
    }
    free(h);
    free(o);
}

/* amq_static_contains_batch_fixed refuses the other kinds. */
TEST(static_fixed_batch_refuses_other_kinds)
{
    amq_config cfg;
    amq_filter *f;
    uint64_t key = 1, count = 7;
    uint8_t out = 9;
    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.capacity = 100;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    CHECK_EQ(amq_static_contains_batch_fixed(f, &key, 8, 1, &out, &count), AMQ_EKIND);
    CHECK_EQ(out, 9);
    CHECK_EQ(count, 7);
    amq_filter_free(f);
}

static int count_field(void *ctx, const amq_field *fl)
{
    if (strcmp(fl->name, "retries") == 0)
        *(uint64_t *)ctx = fl->u64;
    return 0;
}

static uint64_t retries(const amq_filter *f)
{
    uint64_t r = UINT64_MAX;
    amq_filter_describe(f, count_field, &r);
    return r;
}

/* Sizes (bits per key) and rates at 200k keys, against the bound; the
 * fuse rates are 2^-bits, ribbon's its target.  The retries of the sizing
 * (fuse's shortened segments, ribbon's overhead) stay rare. */
TEST(static_space_and_rate_bands)
{
    static const struct {
        uint32_t kind; unsigned bits, arity; double fpp, max_bpk, fpp_lo, fpp_hi;
    } v[] = {
        {AMQ_KIND_FUSE, 8, 3, 0.01, 9.40, 0.0033, 0.0046},
        {AMQ_KIND_FUSE, 8, 4, 0.01, 8.90, 0.0033, 0.0046},
        {AMQ_KIND_FUSE, 16, 3, 0.01, 18.8, 0.0, 0.0001},
        {AMQ_KIND_RIBBON, 0, 0, 0.01, 6.98, 0.0093, 0.0107},
        {AMQ_KIND_RIBBON, 0, 0, 0.001, 10.45, 0.00085, 0.00115},
    };
    size_t n = 200000, k;
    uint64_t total_retries = 0;
    amq_hash128 *h = random_hashes(n, 42);
    for (k = 0; k < sizeof v / sizeof v[0]; k++) {
        amq_filter *f = build(v[k].kind, v[k].bits, v[k].arity, v[k].fpp, h, n);
        amq_stats st;
        double fpp;
        REQUIRE(f != NULL);
        amq_filter_stats(f, &st);
        fpp = measured_fpp(f, 1000000, 7 + k);
        if (st.bits_per_item > v[k].max_bpk || fpp < v[k].fpp_lo || fpp > v[k].fpp_hi)
            FAIL_AT_("%s %u/%u fpp %g: %.3f bits/key (max %.2f), measured fpp %.5f "
                     "(band %.5f..%.5f), seeds 42/%zu", amq_kind_name(v[k].kind), v[k].bits,
                     v[k].arity, v[k].fpp, st.bits_per_item, v[k].max_bpk, fpp, v[k].fpp_lo,
                     v[k].fpp_hi, 7 + k);
        CHECK(st.bits_per_item >= log2(1.0 / v[k].fpp)); /* never below the bound */
        total_retries += retries(f);
        amq_filter_free(f);
    }
    CHECK_LE(total_retries, 2);
    free(h);
}

static uint8_t *serialize(const amq_filter *f, size_t *len)
{
    uint64_t size = 0;
    uint8_t *buf;
    int rc = amq_filter_serialized_size(f, &size);
    buf = malloc(size ? (size_t)size : 1);
    if (rc == AMQ_OK)
        rc = amq_filter_serialize(f, buf, (size_t)size, len);
    if (rc != AMQ_OK)
        FAIL_AT_("serialize: %s", amq_strerror(rc));
    return buf;
}

/* A build that spills to temporary files gives the same bytes as one in
 * memory; many keys make several partitions (a fuse partition takes up to
 * 2^24 keys in a spilled build, 2^27 held in memory: ribbon's 2^16 is the
 * test-sized limit). */
TEST(static_spilled_build_is_identical)
{
    static const uint32_t kinds[] = {AMQ_KIND_FUSE, AMQ_KIND_RIBBON};
    size_t n = 1500000, k, la, lb;
    amq_hash128 *h = random_hashes(n, 99);
    for (k = 0; k < 2; k++) {
        amq_config cfg;
        amq_builder *b;
        amq_filter *f, *g;
        amq_errinfo err;
        uint8_t *x, *y;
        size_t i;

        amq_config_init(&cfg, kinds[k]);
        f = build(kinds[k], 0, 0, 0.01, h, n);
        REQUIRE_OK(amq_builder_new(&cfg, test_path("."), 1 << 20, &b, &err));
        for (i = 0; i < n; i += 1000)
            REQUIRE_OK(amq_builder_add_batch(b, h + i, n - i < 1000 ? n - i : 1000));
        CHECK_EQ(amq_builder_count(b), n);
        REQUIRE_OK(amq_builder_finish(b, &g, &err));
        amq_builder_free(b);
        x = serialize(f, &la);
        y = serialize(g, &lb);
        CHECK(la == lb && memcmp(x, y, la) == 0);
        CHECK_EQ(false_negatives(g, h, n), 0);
        free(x);
        free(y);
        amq_filter_free(f);
        amq_filter_free(g);
    }
    free(h);
}

/* Fuse partitions are all sized for the largest one's key count, which
 * the spilled path takes from its files' counts and the in-memory path
 * from its own bucketing: the same bytes (and so one geometry, a stride
 * apart once gathered or loaded: amq_fuse_view.strided). */
TEST(fuse_partitions_one_geometry_spilled_or_not)
{
    /* past the builder's least budget (2^20 keys): the second one spills */
    size_t n = 1100000, i, la, lb;
    amq_hash128 *h = random_hashes(n, 4141);
    amq_config cfg;
    amq_builder *b;
    amq_filter *f, *g, *l;
    amq_errinfo err;
    amq_fuse_view v;
    uint8_t *x, *y;
    unsigned bits;

    for (bits = 8; bits <= 16; bits += 8) {
        amq_config_init(&cfg, AMQ_KIND_FUSE);
        cfg.fingerprint_bits = bits;
        cfg.partitions = 4;
        REQUIRE_OK(amq_builder_new(&cfg, NULL, SIZE_MAX, &b, &err));
        for (i = 0; i < n; i += 1000)
            REQUIRE_OK(amq_builder_add_batch(b, h + i, n - i < 1000 ? n - i : 1000));
        REQUIRE_OK(amq_builder_finish(b, &f, &err));
        amq_builder_free(b);
        REQUIRE_OK(amq_builder_new(&cfg, test_path("."), 1 << 20, &b, &err));
        for (i = 0; i < n; i += 1000)
            REQUIRE_OK(amq_builder_add_batch(b, h + i, n - i < 1000 ? n - i : 1000));
        REQUIRE_OK(amq_builder_finish(b, &g, &err));
        amq_builder_free(b);
        x = serialize(f, &la);
        y = serialize(g, &lb);
        CHECK(la == lb && memcmp(x, y, la) == 0);
        REQUIRE_OK(amq_filter_deserialize(y, lb, 0, NULL, &l, &err));
        CHECK_EQ(retries(f), 0); /* these keys: every partition on its first seed */
        REQUIRE_OK(amq_fuse_view_get(f, &v));
        CHECK_EQ(v.strided, 1); /* gathered */
        REQUIRE_OK(amq_fuse_view_get(g, &v));
        CHECK_EQ(v.strided, 0); /* spilled: each partition where it was built */
        REQUIRE_OK(amq_fuse_view_get(l, &v));
        CHECK_EQ(v.strided, 1); /* loaded: one payload */
        CHECK_EQ(false_negatives(l, h, n), 0);
        CHECK_EQ(false_negatives(f, h, n), 0);
        free(x);
        free(y);
        amq_filter_free(f);
        amq_filter_free(g);
        amq_filter_free(l);
    }
    free(h);
}

/* A small Ribbon filter meets its rate: the share of starts with r + 1
 * result bits was rounded to the nearest 64-start block, none in a filter
 * of one or two blocks, so an empty one answered 1/64 of absent keys and
 * one of 100 keys 1.18 % at 1 %.  Now rounded up: at most the target, within
 * three standard errors of 200k absent keys. */
TEST(static_ribbon_small_meets_its_rate)
{
    static const size_t sizes[] = {0, 1, 10, 100, 1000, 5000};
    static const double fpps[] = {0.01, 0.003};
    amq_hash128 h[5000];
    size_t i, k, j, hits;
    uint64_t st = 77;
    for (i = 0; i < 5000; i++) {
        h[i].h1 = test_rand(&st);
        h[i].h2 = test_rand(&st);
    }
    for (j = 0; j < 2; j++)
        for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            amq_filter *f = build(AMQ_KIND_RIBBON, 0, 0, fpps[j], h, sizes[k]);
            for (i = 0, hits = 0; i < 200000; i++) {
                amq_hash128 q;
                q.h1 = test_rand(&st);
                q.h2 = test_rand(&st);
                hits += (size_t)(amq_filter_contains_hash(f, q) == 1);
            }
            if ((double)hits / 200000.0 > fpps[j] + 3.0 * sqrt(fpps[j] / 200000.0))
                FAIL_AT_("%zu keys at %g: %zu of 200000 absent keys answered", sizes[k], fpps[j],
                         hits);
            amq_filter_free(f);
        }
}

/* Above 1/2 a ribbon filter stores under one bit per key (r = 0): its file
 * loaded (the reader bounded items by 8 bits per byte and refused it) and
 * keeps every key. */
TEST(static_ribbon_rate_above_half_loads)
{
    static const double fpps[] = {0.6, 0.75, 0.99};
    static const size_t sizes[] = {1, 1000, 100000};
    amq_hash128 *h = random_hashes(100000, 5);
    size_t j, k, len;
    for (j = 0; j < sizeof fpps / sizeof fpps[0]; j++)
        for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            amq_filter *f = build(AMQ_KIND_RIBBON, 0, 0, fpps[j], h, sizes[k]), *g = NULL;
            uint8_t *bytes = serialize(f, &len);
            amq_errinfo err;
            memset(&err, 0, sizeof err);
            if (amq_filter_deserialize(bytes, len, 0, NULL, &g, &err) != AMQ_OK)
                FAIL_AT_("ribbon at %g, %zu keys: its file refused: %s", fpps[j], sizes[k],
                         err.msg);
            else
                CHECK_EQ_U64(false_negatives(g, h, sizes[k]), 0);
            amq_filter_free(g);
            amq_filter_free(f);
            free(bytes);
        }
    free(h);
}

/* Files: saved, opened copied and mmap'd (trusted or not), same answers;
 * the bytes of a small filter are pinned. */
TEST(static_files_round_trip_and_golden)
{
    /* the fuse files of XXH3 (the default before mulshift), of mulshift and
     * of vmulshift (the default now): the same hashes given, so only the
     * header's hash field differs */
    static const struct { uint32_t kind; unsigned bits, arity; uint32_t hash; uint64_t sum; } v[] = {
        {AMQ_KIND_FUSE, 8, 3, AMQ_HASH_XXH3, UINT64_C(0x6db64876370a89e0)},
        {AMQ_KIND_FUSE, 16, 4, AMQ_HASH_XXH3, UINT64_C(0x86b9f0e16eea7f33)},
        {AMQ_KIND_FUSE, 8, 3, AMQ_HASH_MULSHIFT, UINT64_C(0x3adeba55bfbe0720)},
        {AMQ_KIND_FUSE, 8, 3, AMQ_HASH_VMULSHIFT, UINT64_C(0xee7619d75f95a86a)},
        {AMQ_KIND_RIBBON, 0, 0, 0, UINT64_C(0x2f84aba531feaac0)},
    };
    const char *path = test_path("static.amq");
    amq_hash128 h[1000], q[1000];
    char key[32];
    size_t k, i, len;
    for (i = 0; i < 1000; i++) {
        h[i] = amq_hash_key(AMQ_HASH_XXH3, 0, key, (size_t)snprintf(key, sizeof key, "key-%zu", i));
        q[i] = amq_hash_key(AMQ_HASH_XXH3, 0, key, (size_t)snprintf(key, sizeof key, "no-%zu", i));
    }
    for (k = 0; k < sizeof v / sizeof v[0]; k++) {
        static const unsigned modes[] = {0, AMQ_OPEN_MMAP, AMQ_OPEN_MMAP | AMQ_OPEN_TRUST};
        amq_filter *f = build_hash(v[k].kind, v[k].bits, v[k].arity, 0.01, h, 1000, v[k].hash), *g;
        uint8_t *bytes = serialize(f, &len), a[1000], b[1000];
        size_t m;
        CHECK_EQ_U64(amq_xxh3_64(bytes, len, 0), v[k].sum);
        /* the parameter block follows the 64-byte header: derive at +12 is
         * 1 for a fuse filter of XXH3 or (v)mulshift keys, 0 for ribbon */
        CHECK_EQ(le32(bytes + 64 + 12), v[k].kind == AMQ_KIND_FUSE ? 1u : 0u);
        REQUIRE_OK(amq_filter_save(f, path, 0, NULL));
        amq_filter_contains_batch(f, q, 1000, a);
        for (m = 0; m < 3; m++) {
            REQUIRE_OK(amq_filter_open(path, modes[m], NULL, &g, NULL));
            CHECK_EQ(amq_filter_is_readonly(g), modes[m] != 0);
            amq_filter_contains_batch(g, q, 1000, b);
            CHECK(memcmp(a, b, sizeof a) == 0);
            CHECK_EQ(false_negatives(g, h, 1000), 0);
            amq_filter_free(g);
        }
        REQUIRE_OK(amq_filter_clone(f, NULL, &g));
        amq_filter_contains_batch(g, q, 1000, b);
        CHECK(memcmp(a, b, sizeof a) == 0);
        amq_filter_free(g);
        free(bytes);
        amq_filter_free(f);
    }
}

/* A fuse filter written before derivation 1 (docs/file-format.md: x =
 * mix(h1 ^ seed * GOLDEN) in every partition; derive field 0): 300 keys
 * "old-%zu", fuse8 3-wise, XXH3 seed 0, as amq 0.2.0 wrote it.  It still
 * loads, answers for its keys, and goes back out byte for byte (also
 * through a clone), while a new build of the same keys is derivation 1. */
static const uint8_t fuse_derive0_file[] = {
        0x89, 0x41, 0x4d, 0x51, 0x0d, 0x0a, 0x1a, 0x0a, 0x01, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xe0, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xba, 0x15, 0x29, 0xf6, 0x19, 0x2d, 0xa2, 0x33,
        0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x70, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xa5, 0x12, 0x2c, 0xae, 0x47, 0xe3, 0xa9, 0x0e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0xc4, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x55, 0x00, 0x00, 0x00, 0x00, 0xb4,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xcb, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x2e, 0xe4, 0xe0, 0x00, 0x1b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3c,
        0xa8, 0xe4, 0x31, 0x00, 0x00, 0x00, 0x80, 0x48, 0x5e, 0x00, 0xaa, 0x00, 0x9e, 0x00, 0x00, 0x00,
        0xcd, 0x00, 0x00, 0x69, 0xd4, 0xea, 0xfd, 0x00, 0x00, 0x89, 0x00, 0x62, 0x00, 0x00, 0xa2, 0x80,
        0x00, 0x00, 0x34, 0x00, 0x95, 0x00, 0x49, 0x00, 0x57, 0x00, 0x7d, 0x00, 0x31, 0x5d, 0x00, 0xd3,
        0xe3, 0x00, 0x3c, 0x9b, 0x5f, 0x0d, 0x00, 0xbb, 0x78, 0x5c, 0x2b, 0x00, 0x69, 0xa4, 0x30, 0x1c,
        0xeb, 0x79, 0x00, 0xb2, 0x19, 0xfa, 0x5e, 0xf1, 0x2a, 0x00, 0x00, 0x00, 0x57, 0xe1, 0xe6, 0x13,
        0x39, 0xa4, 0x00, 0x62, 0x17, 0xde, 0x01, 0xd6, 0x00, 0x00, 0x21, 0x86, 0x00, 0x1c, 0x4c, 0xc6,
        0x84, 0x00, 0xee, 0x2c, 0x00, 0x24, 0xe2, 0x17, 0xdb, 0x00, 0x00, 0x84, 0x00, 0x00, 0xcf, 0x00,
        0x04, 0x00, 0x05, 0x00, 0x00, 0x05, 0x38, 0x54, 0xee, 0x00, 0x00, 0xab, 0x34, 0x1f, 0x44, 0xbb,
        0x11, 0x45, 0x0d, 0x0b, 0x00, 0x74, 0xd7, 0x36, 0x00, 0x00, 0x08, 0x22, 0x70, 0x2f, 0xb5, 0xa4,
        0xee, 0xf3, 0xb0, 0x81, 0x5c, 0x00, 0x00, 0x26, 0x00, 0x20, 0x21, 0x4c, 0x30, 0x04, 0xeb, 0xd7,
        0x3b, 0xb3, 0xe6, 0x21, 0x12, 0x00, 0x0f, 0x00, 0x16, 0xe6, 0xc6, 0x6a, 0xcd, 0x00, 0xbf, 0x06,
        0x57, 0x7b, 0x84, 0x69, 0x61, 0x00, 0x6d, 0x00, 0x00, 0x54, 0x59, 0x6b, 0x91, 0x0d, 0x9b, 0x5e,
        0x88, 0x00, 0x26, 0x00, 0x83, 0x00, 0x38, 0x94, 0xce, 0x91, 0xd2, 0x2f, 0x14, 0xf2, 0x0c, 0x6e,
        0x00, 0x1d, 0x7e, 0x00, 0x6d, 0x3a, 0x2b, 0xfd, 0x7b, 0xb7, 0x42, 0xdd, 0xab, 0xe9, 0x00, 0xcc,
        0x6b, 0x2d, 0x1d, 0x66, 0x98, 0x00, 0x47, 0x00, 0xf0, 0x78, 0xda, 0x39, 0x00, 0x4c, 0x46, 0x15,
        0xf6, 0x2a, 0x00, 0x00, 0x2d, 0xdd, 0x00, 0x40, 0x5f, 0x46, 0xa4, 0x4c, 0xe0, 0x20, 0x6e, 0x00,
        0x3a, 0x00, 0x00, 0x1d, 0xa5, 0x00, 0x96, 0x51, 0xbc, 0xab, 0x00, 0xc4, 0x69, 0x00, 0xbd, 0x9c,
        0xf7, 0xa5, 0x31, 0xa2, 0x00, 0xea, 0xab, 0xc8, 0xd2, 0xa6, 0x2a, 0xec, 0x8d, 0xdf, 0x23, 0xa7,
        0x00, 0x2b, 0x29, 0xbf, 0x4e, 0x60, 0x1a, 0x00, 0x66, 0x00, 0x52, 0x00, 0x9f, 0xf5, 0x42, 0xbd,
        0xf2, 0x52, 0x3c, 0x00, 0x00, 0x3b, 0x39, 0x00, 0xa3, 0xfe, 0xd1, 0x0a, 0x11, 0xaf, 0xe2, 0x00,
        0xc6, 0x13, 0x00, 0x00, 0x52, 0x63, 0x28, 0x71, 0x00, 0x00, 0x00, 0x51, 0x8b, 0xc8, 0x2f, 0x9b,
        0xb8, 0x00, 0x0c, 0x00, 0x00, 0x48, 0xa3, 0x27, 0x2a, 0x02, 0xf6, 0x20, 0xfe, 0x4c, 0x0a, 0x7a,
        0x00, 0x9a, 0x00, 0x17, 0x00, 0x00, 0x76, 0xe5, 0xc1, 0xe8, 0x89, 0x64, 0x1b, 0xa4, 0x87, 0x00,
        0x16, 0x60, 0x20, 0x00, 0x2f, 0x9b, 0x1f, 0x00, 0x00, 0x00, 0x48, 0xe1, 0x00, 0x0c, 0x36, 0x00,
        0xc1, 0x7f, 0x00, 0x67, 0xbd, 0x52, 0x00, 0x40, 0x88, 0x00, 0xb6, 0xe1, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
};

TEST(static_fuse_derivation0_files_still_read)
{
    amq_hash128 h[300];
    amq_filter *f, *g, *n;
    amq_fuse_view v;
    uint8_t *bytes;
    char key[32];
    size_t i, len, miss = 0, pos = 0, differ = 0;
    unsigned m;

    for (i = 0; i < 300; i++)
        h[i] = amq_hash_key(AMQ_HASH_XXH3, 0, key, (size_t)snprintf(key, sizeof key, "old-%zu", i));
    for (m = 0; m < 2; m++) {
        REQUIRE_OK(amq_filter_deserialize(fuse_derive0_file, sizeof fuse_derive0_file,
                                          m ? AMQ_OPEN_MMAP : 0, NULL, &f, NULL));
        REQUIRE_OK(amq_fuse_view_get(f, &v));
        for (i = 0; i < 300; i++) {
            size_t l = (size_t)snprintf(key, sizeof key, "old-%zu", i);
            miss += amq_filter_contains(f, key, l) != 1;
            miss += amq_filter_contains_hash(f, h[i]) != 1;
            miss += amq_fuse_view_contains(&v, key, l) != 1; /* the view mixes too */
            miss += amq_fuse_view_contains_h1(&v, h[i].h1) != 1;
            l = (size_t)snprintf(key, sizeof key, "absent-%zu", i);
            pos += (size_t)amq_filter_contains(f, key, l);
            differ += amq_fuse_view_contains(&v, key, l) != amq_filter_contains(f, key, l);
        }
        CHECK_EQ(differ, 0);
        CHECK_EQ(v.plain, 0);
        CHECK_EQ(v.parts[0].mix, 1);
        CHECK_EQ(miss, 0);
        CHECK(pos < 10); /* 2^-8 of 300 absent keys: about one */
        bytes = serialize(f, &len);
        CHECK(len == sizeof fuse_derive0_file && memcmp(bytes, fuse_derive0_file, len) == 0);
        free(bytes);
        REQUIRE_OK(amq_filter_clone(f, NULL, &g));
        bytes = serialize(g, &len);
        CHECK(len == sizeof fuse_derive0_file && memcmp(bytes, fuse_derive0_file, len) == 0);
        free(bytes);
        amq_filter_free(g);
        amq_filter_free(f);
    }
    /* the same keys built now: derivation 1 (and the paper's segment) */
    n = build(AMQ_KIND_FUSE, 8, 3, 0.01, h, 300);
    bytes = serialize(n, &len);
    CHECK_EQ(le32(fuse_derive0_file + 64 + 12), 0u);
    CHECK_EQ(le32(bytes + 64 + 12), 1u);
    free(bytes);
    amq_filter_free(n);
}

/* What a static filter refuses, and how. */
TEST(static_refuses_changes)
{
    static const uint32_t kinds[] = {AMQ_KIND_FUSE, AMQ_KIND_RIBBON};
    amq_hash128 *h = random_hashes(100, 5);
    amq_errinfo err;
    size_t k;
    for (k = 0; k < 2; k++) {
        amq_config cfg;
        amq_filter *f = NULL;
        amq_config_init(&cfg, kinds[k]);
        memset(&err, 0, sizeof err);
        CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_EUNSUPPORTED);
        CHECK(f == NULL && strstr(err.msg, "static") != NULL);
        CHECK(amq_kind_is_static(kinds[k]));
        f = build(kinds[k], 0, 0, 0.01, h, 100);
        CHECK_STATUS(amq_filter_add(f, "x", 1), AMQ_EUNSUPPORTED);
        CHECK_STATUS(amq_filter_add_batch(f, h, 1, NULL), AMQ_EUNSUPPORTED);
        CHECK_STATUS(amq_filter_remove(f, "x", 1), AMQ_EUNSUPPORTED);
        CHECK_STATUS(amq_filter_clear(f), AMQ_EUNSUPPORTED);
        CHECK_STATUS(amq_filter_merge(f, f, &err), AMQ_EUNSUPPORTED);
        CHECK_EQ(false_negatives(f, h, 100), 0);
        amq_filter_free(f);
    }
    CHECK(!amq_kind_is_static(AMQ_KIND_BLOOM));
    {
        amq_config cfg;
        amq_filter *f = NULL;
        amq_config_init(&cfg, AMQ_KIND_FUSE);
        cfg.fingerprint_bits = 12;
        CHECK_STATUS(amq_filter_build(&cfg, h, 10, &f, &err), AMQ_ERANGE);
        cfg.fingerprint_bits = 8;
        cfg.arity = 5;
        CHECK_STATUS(amq_filter_build(&cfg, h, 10, &f, &err), AMQ_ERANGE);
        amq_config_init(&cfg, AMQ_KIND_RIBBON);
        cfg.fpp = 1e-11;
        CHECK_STATUS(amq_filter_build(&cfg, h, 10, &f, &err), AMQ_ERANGE);
        amq_config_init(&cfg, AMQ_KIND_SCALABLE_BLOOM);
        CHECK_STATUS(amq_filter_build(&cfg, h, 10, &f, &err), AMQ_EKIND);
    }
    free(h);
}

/* A damaged index or parameter block is refused with a message, never
 * read past. */
TEST(static_corrupt_index_refused)
{
    amq_hash128 *h = random_hashes(5000, 11);
    amq_filter *f = build(AMQ_KIND_RIBBON, 0, 0, 0.01, h, 5000), *g;
    amq_errinfo err;
    size_t len, i;
    uint8_t *bytes = serialize(f, &len);
    int rc;
    /* every byte of the last index entry and of the parameter block, with
     * checksums skipped (AMQ_OPEN_TRUST does not skip the header's) */
    for (i = len - 32; i < len; i++) {
        bytes[i] ^= 0x40;
        memset(&err, 0, sizeof err);
        g = NULL;
        rc = amq_filter_deserialize(bytes, len, AMQ_OPEN_TRUST, NULL, &g, &err);
        if (rc == AMQ_OK) {
            /* only the seed is free: answers change, nothing breaks */
            CHECK(i >= len - 16 && i < len - 12);
            amq_filter_free(g);
        } else {
            CHECK(rc == AMQ_ECORRUPT && err.msg[0] != '\0');
        }
        bytes[i] ^= 0x40;
    }
    free(bytes);
    amq_filter_free(f);
    free(h);
}

TEST_MAIN()
