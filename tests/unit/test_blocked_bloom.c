/*
 * test_blocked_bloom.c - the cache-local Bloom filter: sizing and theory
 * against independent values, no false negatives, measured rate within a
 * band of the theory, every query path identical on the same bytes,
 * batched forms equal to single ones, the file form (round trip, mmap
 * views, corrupt and truncated input), merging, and concurrent adds.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "amq.h"
#include "amq/blocked_bloom.h"
#include "common/container.h"
#include "common/endian.h"
#include "batch.h"
#include "test.h"

static amq_blocked *make(uint64_t n, double p)
{
    amq_blocked_params prm;
    amq_blocked *b = NULL;
    if (amq_blocked_params_for(n, p, &prm) != AMQ_OK)
        return NULL;
    if (amq_blocked_new(&prm, NULL, &b) != AMQ_OK)
        return NULL;
    return b;
}

/* Keys are 8-byte little-endian integers from splitmix64. */
static void key_bytes(uint64_t v, uint8_t out[8])
{
    amq_store64(out, v);
}

/* ---- theory and sizing ---------------------------------------------------------- */

TEST(blocked_theory_matches_independent_values)
{
    /* Values from a separate evaluation in Python by another method: the
     * exact distribution of the number of set bits in a block after j k
     * probes (a Markov chain over 0..512), E[(set / 512)^k] per j, summed
     * over the Poisson weights. */
    CHECK_NEAR_REL(amq_blocked_fpp_theory(19532, 7, 1000000), 0.009684365433391509, 1e-9);
    CHECK_NEAR_REL(amq_blocked_fpp_theory(19532, 6, 1000000), 0.009663209916878277, 1e-9);
    CHECK_NEAR_REL(amq_blocked_fpp_theory(1000, 6, 20000), 0.00013730223897157726, 1e-9);
    CHECK_NEAR_REL(amq_blocked_fpp_theory(1, 3, 10), 0.00023714799371521002, 1e-9);
    CHECK_NEAR_REL(amq_blocked_fpp_theory(100, 16, 1000), 8.61118553055948e-08, 1e-8);
    CHECK_NEAR_REL(amq_blocked_fpp_theory(1 << 20, 8, 10000000), 7.98120479502943e-07, 1e-8);
    /* Far past one key per bit the mean-fill form takes over: near 1. */
    CHECK(amq_blocked_fpp_theory(1, 4, 10000000) > 0.999999);
    CHECK_EQ_DBL(amq_blocked_fpp_theory(10, 7, 0), 0.0);
    CHECK_EQ_DBL(amq_blocked_fpp_theory(0, 7, 10), 1.0);
}

TEST(blocked_sizing_meets_the_rate_with_the_fewest_blocks)
{
    static const struct {
        uint64_t n;
        double p;
    } cases[] = {{1000000, 0.01},   {1, 0.5},     {12345, 0.001},
                 {100000000, 0.02}, {5000, 1e-6}, {1000, 0.3}};
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t blocks;
        uint32_t k, kk;
        double best = 2.0;
        REQUIRE_OK(amq_blocked_size_fpp(cases[i].n, cases[i].p, &blocks, &k));
        CHECK_LE_DBL(amq_blocked_fpp_theory(blocks, k, cases[i].n), cases[i].p);
        /* One block fewer cannot make it with any k. */
        for (kk = 1; kk <= AMQ_BLOCKED_MAX_K && blocks > 1; kk++) {
            double f = amq_blocked_fpp_theory(blocks - 1, kk, cases[i].n);
            if (f < best)
                best = f;
        }
        if (blocks > 1)
            CHECK_GE_DBL(best, cases[i].p);
    }
}

TEST(blocked_sizing_documented_example)
{
    uint64_t blocks;
    uint32_t k;
    REQUIRE_OK(amq_blocked_size_fpp(1000000, 0.01, &blocks, &k));
    CHECK_EQ(blocks, 19372);
    CHECK_EQ(k, 6);
    REQUIRE_OK(amq_blocked_size_bpk(1000000, 10.0, &blocks, &k));
    CHECK_EQ(blocks, 19532);
    CHECK_EQ(k, 6);
}

TEST(blocked_sizing_rejects_bad_input)
{
    uint64_t blocks;
    uint32_t k;
    CHECK_STATUS(amq_blocked_size_fpp(0, 0.01, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_size_fpp(10, 0.0, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_size_fpp(10, 1.0, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_size_fpp(10, NAN, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_size_fpp(10, 1e-300, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_size_bpk(10, 0.0, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_size_bpk(10, 1001.0, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_size_bpk(UINT64_MAX, 1000.0, &blocks, &k), AMQ_ERANGE);
}

TEST(blocked_new_rejects_bad_geometry)
{
    amq_blocked_params p;
    amq_blocked *b;
    memset(&p, 0, sizeof p);
    p.hash_algo = AMQ_HASH_XXH3;
    p.k = 7;
    CHECK_STATUS(amq_blocked_new(&p, NULL, &b), AMQ_ERANGE); /* 0 blocks */
    p.blocks = AMQ_BLOCKED_MAX_BLOCKS + 1;
    CHECK_STATUS(amq_blocked_new(&p, NULL, &b), AMQ_ERANGE);
    p.blocks = 4;
    p.k = 0;
    CHECK_STATUS(amq_blocked_new(&p, NULL, &b), AMQ_ERANGE);
    p.k = 17;
    CHECK_STATUS(amq_blocked_new(&p, NULL, &b), AMQ_ERANGE);
    p.k = 16;
    p.hash_algo = 99;
    CHECK_STATUS(amq_blocked_new(&p, NULL, &b), AMQ_EHASH);
    p.hash_algo = AMQ_HASH_XXH3;
    REQUIRE_OK(amq_blocked_new(&p, NULL, &b));
    CHECK_EQ(((uintptr_t)amq_blocked_data(b)) & 63, 0);
    amq_blocked_free(b);
    amq_blocked_free(NULL);
}

/* ---- the layout, bit for bit ---------------------------------------------------- */

TEST(blocked_layout_golden)
{
    /* One key, by hand: block = (h1 * blocks) >> 64, bits from (u * C[i]) >> 23
     * with u = low 32 bits of h2.  Recomputed independently here. */
    static const uint32_t C[16] = {0x2560fc7d, 0x65e488b5, 0x2148f0c9, 0xb26426c3,
                                   0x78c74d37, 0x0f60b789, 0x71258be5, 0x8de33921,
                                   0x55ca90ed, 0x10aea1b1, 0x4e4096a5, 0x44fafa0b,
                                   0xeae45321, 0xe69acfa1, 0x00de3e8d, 0x28ba03bb};
    amq_blocked_params p;
    amq_blocked *b;
    amq_hash128 h;
    uint8_t want[64 * 10];
    uint64_t blk;
    uint32_t i, u;

    memset(&p, 0, sizeof p);
    p.blocks = 10;
    p.k = 16;
    p.hash_algo = AMQ_HASH_XXH3;
    REQUIRE_OK(amq_blocked_new(&p, NULL, &b));
    h.h1 = UINT64_C(0x9000000000000000); /* 0.5625 of the range: block 5 */
    h.h2 = UINT64_C(0xdeadbeef12345678);
    CHECK_EQ(amq_blocked_add_hash(b, h), 1);
    CHECK_EQ(amq_blocked_add_hash(b, h), 0);
    memset(want, 0, sizeof want);
    blk = 5;
    u = 0x12345678u;
    for (i = 0; i < 16; i++) {
        uint32_t bit = (uint32_t)(u * C[i]) >> 23;
        want[blk * 64 + bit / 8] |= (uint8_t)(1u << (bit % 8));
    }
    CHECK(memcmp(amq_blocked_data(b), want, sizeof want) == 0);
    CHECK_EQ(amq_blocked_items(b), 1);
    amq_blocked_free(b);
}

/* ---- answers ------------------------------------------------------------------------ */

TEST(blocked_no_false_negatives)
{
    const uint64_t n = 100000;
    uint64_t seed = 0x1234, i, s;
    uint8_t key[8];
    amq_blocked *b = make(n, 0.01);
    REQUIRE(b != NULL);
    s = seed;
    for (i = 0; i < n; i++) {
        key_bytes(test_rand(&s), key);
        amq_blocked_add(b, key, 8);
    }
    s = seed;
    for (i = 0; i < n; i++) {
        key_bytes(test_rand(&s), key);
        if (amq_blocked_contains(b, key, 8) != 1) {
            FAIL_AT_("false negative for key %" PRIu64 " (seed 0x%" PRIx64 ")", i, seed);
            break;
        }
    }
    amq_blocked_free(b);
}

/* Measured rate of filters sized for (n, p), against the theory: absent
 * keys are Bernoulli(f), so the count over q queries lies within 5 standard
 * deviations of q f (plus 2 % for the variation between filters). */
static void check_rate(uint64_t n, double p, uint64_t seed)
{
    const uint64_t q = 400000;
    amq_blocked_params prm;
    amq_blocked *b;
    uint64_t i, s = seed, fp = 0;
    uint8_t key[8];
    double f, sd;

    REQUIRE_OK(amq_blocked_params_for(n, p, &prm));
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
    for (i = 0; i < n; i++) {
        key_bytes(test_rand(&s), key);
        amq_blocked_add(b, key, 8);
    }
    for (i = 0; i < q; i++) {
        key_bytes(test_rand(&s), key);
        fp += (uint64_t)amq_blocked_contains(b, key, 8);
    }
    f = amq_blocked_fpp_theory(prm.blocks, prm.k, n);
    sd = sqrt((double)q * f * (1 - f));
    if (fabs((double)fp - (double)q * f) > 5 * sd + 0.02 * (double)q * f)
        FAIL_AT_("n %" PRIu64 " p %g: %" PRIu64 " false positives in %" PRIu64
                 " queries, theory %.1f (seed 0x%" PRIx64 ")",
                 n, p, fp, q, (double)q * f, seed);
    CHECK_LE_DBL(f, p);
    amq_blocked_free(b);
}

TEST(blocked_rate_within_band_of_theory)
{
    check_rate(200000, 0.01, 0xfeed);
    check_rate(50000, 0.001, 0xbeef);
    check_rate(100000, 0.05, 0xcafe);
    check_rate(20000, 0.0001, 0xf00d);
}

TEST(blocked_rate_at_ten_bits_per_key)
{
    /* 10 bits per key: the layout's rate is 0.957 % (k = 7); a measurement
     * of 2M absent keys lands within +-0.03 %. */
    const uint64_t n = 200000, q = 2000000, seed = 0xabcdef;
    amq_blocked_params prm;
    amq_blocked *b;
    uint64_t i, s = seed, fp = 0;
    uint8_t key[8];
    double rate;

    memset(&prm, 0, sizeof prm);
    REQUIRE_OK(amq_blocked_size_bpk(n, 10.0, &prm.blocks, &prm.k));
    prm.hash_algo = AMQ_HASH_XXH3;
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
    for (i = 0; i < n; i++) {
        key_bytes(test_rand(&s), key);
        amq_blocked_add(b, key, 8);
    }
    for (i = 0; i < q; i++) {
        key_bytes(test_rand(&s), key);
        fp += (uint64_t)amq_blocked_contains(b, key, 8);
    }
    rate = (double)fp / (double)q;
    if (!(rate > 0.0092 && rate < 0.0099))
        FAIL_AT_("rate %.4f %% at 10 bits per key (seed 0x%" PRIx64 ")", rate * 100, seed);
    amq_blocked_free(b);
}

/* ---- query paths ------------------------------------------------------------------- */

TEST(blocked_simd_paths_identical)
{
    const uint32_t paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    uint64_t seed = 0x5eed;
    uint32_t k, pi;
    int tested = 0;

    CHECK(amq_simd_supported(AMQ_SIMD_SCALAR));
    CHECK(amq_simd_supported(AMQ_SIMD_AUTO));
    CHECK_STR(amq_simd_name(AMQ_SIMD_SCALAR), "scalar");
    CHECK(amq_simd_name(99) == NULL);
    for (k = 1; k <= AMQ_BLOCKED_MAX_K; k++) {
        amq_blocked_params prm;
        amq_blocked *b, *views[3];
        amq_hash128 *hs;
        uint8_t *want, *got, *keys, *want_k;
        uint64_t s = seed + k, i, nq = 20000, nadd;
        memset(&prm, 0, sizeof prm);
        prm.blocks = 64;
        prm.k = k;
        prm.hash_algo = AMQ_HASH_XXH3;
        prm.seed = k % 2 == 0 ? 0 : k; /* XXH3 has entries for seed 0 and any */
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
        /* Fill so that about 30 % of random queries answer "maybe": a
         * fraction f = 0.3^(1/k) of the bits set. */
        nadd = (uint64_t)(-log(1.0 - pow(0.3, 1.0 / k)) * 64 * 512 / k);
        for (i = 0; i < nadd; i++) {
            amq_hash128 h = {test_rand(&s), test_rand(&s)};
            amq_blocked_add_hash(b, h);
        }
        hs = malloc(nq * sizeof *hs);
        want = malloc(nq);
        got = malloc(nq);
        keys = malloc(nq * 8);
        want_k = malloc(nq);
        REQUIRE(hs != NULL && want != NULL && got != NULL && keys != NULL && want_k != NULL);
        for (i = 0; i < nq; i++) {
            hs[i].h1 = test_rand(&s);
            hs[i].h2 = test_rand(&s);
            amq_store64(keys + i * 8, test_rand(&s) % 5000);
        }
        /* The scalar answers, one by one, are the reference; for keys, the
         * answers for their hashes. */
        REQUIRE_OK(amq_blocked_set_simd(b, AMQ_SIMD_SCALAR));
        for (i = 0; i < nq; i++) {
            want[i] = (uint8_t)amq_blocked_contains_hash(b, hs[i]);
            want_k[i] = (uint8_t)amq_blocked_contains_hash(b, amq_blocked_hash(b, keys + i * 8, 8));
        }
        for (pi = 0; pi < 3; pi++) {
            uint64_t cnt, exp = 0;
            if (!amq_simd_supported(paths[pi])) {
                CHECK_STATUS(amq_blocked_set_simd(b, paths[pi]), AMQ_EUNSUPPORTED);
                continue;
            }
            /* A view over the same bytes, with its own path. */
            REQUIRE_OK(
                amq_blocked_view(&prm, amq_blocked_data(b), prm.blocks * 64, 0, NULL, &views[pi]));
            REQUIRE_OK(amq_blocked_set_simd(views[pi], paths[pi]));
            CHECK_EQ(amq_blocked_simd(views[pi]), paths[pi]);
            for (i = 0; i < nq; i++) {
                int r = amq_blocked_contains_hash(views[pi], hs[i]);
                if (r != want[i]) {
                    FAIL_AT_("path %s k %u query %" PRIu64 ": %d, scalar %d",
                             amq_simd_name(paths[pi]), k, i, r, want[i]);
                    break;
                }
                exp += want[i];
            }
            memset(got, 7, nq);
            cnt = t_blocked_contains_batch(views[pi], hs, nq, got);
            CHECK(memcmp(got, want, nq) == 0);
            CHECK_EQ(cnt, exp);
            CHECK_EQ(t_blocked_contains_batch(views[pi], hs, nq, NULL), exp);
            CHECK(exp > nq / 50 && exp < nq - nq / 50); /* both answers occur */
            /* 8-byte keys: one by one (the path's XXH3 entry) and packed
             * (its 8-byte loop); 7-byte keys take the generic entry. */
            for (i = 0; i < nq; i++)
                got[i] = (uint8_t)amq_blocked_contains(views[pi], keys + i * 8, 8);
            CHECK(memcmp(got, want_k, nq) == 0);
            memset(got, 7, nq);
            cnt = t_blocked_contains_batch_fixed(views[pi], keys, 8, nq, got);
            CHECK(memcmp(got, want_k, nq) == 0);
            for (i = 0, exp = 0; i < nq; i++)
                exp += want_k[i];
            CHECK_EQ(cnt, exp);
            CHECK_EQ(t_blocked_contains_batch_fixed(views[pi], keys, 8, nq, NULL), exp);
            memset(got, 7, nq); /* a count that leaves a tail of 5 after groups of 8 */
            t_blocked_contains_batch_fixed(views[pi], keys + 16, 8, nq - 19, got);
            CHECK(memcmp(got, want_k + 2, nq - 19) == 0);
            CHECK_EQ(got[nq - 19], 7);
            for (i = 0; i < 100; i++)
                CHECK_EQ(amq_blocked_contains(views[pi], keys + i * 8, 7),
                         amq_blocked_contains_hash(b, amq_blocked_hash(b, keys + i * 8, 7)));
            amq_blocked_free(views[pi]);
            tested++;
        }
        free(hs);
        free(want);
        free(got);
        free(keys);
        free(want_k);
        amq_blocked_free(b);
    }
    CHECK_GE(tested, 16);
    CHECK_STATUS(amq_blocked_set_simd(NULL, 7), AMQ_EINVAL);
}

/* 64-bit hashes: x answers as {x, x}, on every path, in a filter small
 * enough to be queried without prefetching and in one large enough to be
 * prefetched, for every k (the AVX-512 path pairs keys when k <= 8), with
 * odd counts (the pair loop's tail). */
static amq_hash128 twice(uint64_t x)
{
    amq_hash128 h;
    h.h1 = h.h2 = x;
    return h;
}

TEST(blocked_hashes64_as_hash128)
{
    const uint32_t paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    const uint64_t sizes[] = {64, 40000}; /* 4 KiB, 2.5 MiB */
    uint64_t s = 0x64646464;
    uint32_t k, pi, si;

    for (si = 0; si < 2; si++) {
        for (k = 1; k <= AMQ_BLOCKED_MAX_K; k++) {
            amq_blocked_params prm;
            amq_blocked *a, *b;
            const size_t nq = 4001;
            uint64_t *x = malloc(nq * sizeof *x), i, nadd, want_n = 0;
            uint8_t *want = malloc(nq), *got = malloc(nq), *added = malloc(nq);
            int64_t na;
            REQUIRE(x != NULL && want != NULL && got != NULL && added != NULL);
            memset(&prm, 0, sizeof prm);
            prm.blocks = sizes[si];
            prm.k = k;
            prm.hash_algo = AMQ_HASH_XXH3;
            REQUIRE_OK(amq_blocked_new(&prm, NULL, &a));
            REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
            /* The same fill through both add forms: identical bytes. */
            nadd = (uint64_t)(-log(1.0 - pow(0.3, 1.0 / k)) * (double)prm.blocks * 512 / k);
            for (i = 0; i < nadd; i += nq) {
                size_t j, m = nadd - i < nq ? (size_t)(nadd - i) : nq;
                uint64_t fresh = 0;
                for (j = 0; j < m; j++) {
                    x[j] = test_rand(&s);
                    want[j] = (uint8_t)amq_blocked_add_hash(a, twice(x[j]));
                    fresh += want[j];
                }
                na = t_blocked_add_batch64(b, x, m, added);
                CHECK_EQ(na, (int64_t)fresh);
                CHECK(memcmp(added, want, m) == 0);
            }
            CHECK(memcmp(amq_blocked_data(a), amq_blocked_data(b), prm.blocks * 64) == 0);
            CHECK_EQ(amq_blocked_items(a), amq_blocked_items(b));
            for (i = 0; i < nq; i++) {
                x[i] = test_rand(&s);
                want[i] = (uint8_t)amq_blocked_contains_hash(a, twice(x[i]));
                want_n += want[i];
            }
            CHECK(want_n > nq / 50 && want_n < nq - nq / 50);
            for (pi = 0; pi < 3; pi++) {
                size_t n;
                if (!amq_simd_supported(paths[pi]))
                    continue;
                REQUIRE_OK(amq_blocked_set_simd(b, paths[pi]));
                for (n = nq - 2; n <= nq; n++) { /* even and odd counts */
                    uint64_t e = 0;
                    memset(got, 7, nq);
                    for (i = 0; i < n; i++)
                        e += want[i];
                    CHECK_EQ(t_blocked_contains_batch64(b, x, n, got), e);
                    if (memcmp(got, want, n) != 0 || (n < nq && got[n] != 7))
                        FAIL_AT_("path %s k %u blocks %" PRIu64 " n %zu: answers differ",
                                 amq_simd_name(paths[pi]), k, prm.blocks, n);
                    CHECK_EQ(t_blocked_contains_batch64(b, x, n, NULL), e);
                }
            }
            CHECK_EQ(t_blocked_contains_batch64(b, x, 0, got), 0);
            amq_blocked_free(a);
            amq_blocked_free(b);
            free(x);
            free(want);
            free(got);
            free(added);
        }
    }
}

/*
 * A filter larger than AMQ_BLK_FAR_BYTES (32 MiB, src/blocked_impl.h):
 * its batched queries prefetch into L2, and every batched entry has its own
 * copy of the loop for that and for a NULL output array.  On every path,
 * with seed 0 and another (XXH3's 8-byte keys have a loop for each), the
 * batched forms - with and without an output array - give the one-key
 * answers and the one-key adds' bytes.
 */
TEST(blocked_far_filter_batched_forms)
{
    const uint32_t paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    const size_t n = 40000;
    uint32_t si, pi;

    for (si = 0; si < 2; si++) {
        amq_blocked_params prm;
        amq_blocked *a, *b, *c, *v;
        uint8_t *keys = malloc(n * 8), *q = malloc(n * 8), *want = malloc(n), *want64 = malloc(n),
                *got = malloc(n), *flags = malloc(n);
        amq_hash128 *hs = malloc(n * sizeof *hs), *qh = malloc(n * sizeof *qh);
        uint64_t *qx = malloc(n * sizeof *qx), s = 0xfa5 + si, i, e = 0, e64 = 0;
        int64_t na;
        REQUIRE(keys && q && want && want64 && got && flags && hs && qh && qx);
        memset(&prm, 0, sizeof prm);
        prm.blocks = ((uint64_t)40 << 20) / 64;
        prm.k = 7;
        prm.hash_algo = AMQ_HASH_XXH3;
        prm.seed = si == 0 ? 0 : 9;
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &a));
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &c));
        for (i = 0; i < n; i++) {
            amq_store64(keys + i * 8, test_rand(&s));
            hs[i] = amq_blocked_hash(a, keys + i * 8, 8);
        }
        /* Adds: packed keys with and without flags, hashes without. */
        na = t_blocked_add_batch_fixed(a, keys, 8, n, flags);
        CHECK_EQ(na, (int64_t)n); /* 40000 keys in 655360 blocks: all new */
        CHECK_EQ(t_blocked_add_batch_fixed(b, keys, 8, n, NULL), na);
        CHECK_EQ(t_blocked_add_batch(c, hs, n, NULL), na);
        CHECK(memcmp(amq_blocked_data(a), amq_blocked_data(b), prm.blocks * 64) == 0);
        CHECK(memcmp(amq_blocked_data(a), amq_blocked_data(c), prm.blocks * 64) == 0);
        /* 64-bit hashes, with and without flags, against one-key adds. */
        REQUIRE_OK(amq_blocked_clear(b));
        REQUIRE_OK(amq_blocked_clear(c));
        for (i = 0; i < n; i++) {
            qx[i] = test_rand(&s);
            amq_blocked_add_hash(b, twice(qx[i]));
        }
        CHECK_EQ(t_blocked_add_batch64(c, qx, n, NULL), (int64_t)n);
        CHECK(memcmp(amq_blocked_data(b), amq_blocked_data(c), prm.blocks * 64) == 0);
        REQUIRE_OK(amq_blocked_clear(c));
        CHECK_EQ(t_blocked_add_batch64(c, qx, n, flags), (int64_t)n);
        CHECK(memcmp(amq_blocked_data(b), amq_blocked_data(c), prm.blocks * 64) == 0);
        /* Queries: every other packed key was added to a; two in three of
         * the 64-bit hashes were added to b, the rest are new.  References:
         * one-key queries on the scalar path. */
        for (i = 0; i < n; i++) {
            if (i % 2 == 0)
                memcpy(q + i * 8, keys + i * 8, 8);
            else
                amq_store64(q + i * 8, test_rand(&s));
            qh[i] = amq_blocked_hash(a, q + i * 8, 8);
            if (i % 3 == 0)
                qx[i] = test_rand(&s);
        }
        REQUIRE_OK(amq_blocked_set_simd(a, AMQ_SIMD_SCALAR));
        REQUIRE_OK(amq_blocked_set_simd(b, AMQ_SIMD_SCALAR));
        for (i = 0; i < n; i++) {
            want[i] = (uint8_t)amq_blocked_contains_hash(a, qh[i]);
            want64[i] = (uint8_t)amq_blocked_contains_hash(b, twice(qx[i]));
            e += want[i];
            e64 += want64[i];
        }
        CHECK(e >= n / 2 && e < n);
        CHECK(e64 >= n / 2 && e64 < n);
        for (pi = 0; pi < 3; pi++) {
            if (!amq_simd_supported(paths[pi]))
                continue;
            REQUIRE_OK(amq_blocked_view(&prm, amq_blocked_data(a), prm.blocks * 64, 0, NULL, &v));
            REQUIRE_OK(amq_blocked_set_simd(v, paths[pi]));
            memset(got, 7, n);
            CHECK_EQ(t_blocked_contains_batch_fixed(v, q, 8, n, got), e);
            CHECK(memcmp(got, want, n) == 0);
            CHECK_EQ(t_blocked_contains_batch_fixed(v, q, 8, n, NULL), e);
            memset(got, 7, n);
            CHECK_EQ(t_blocked_contains_batch(v, qh, n, got), e);
            CHECK(memcmp(got, want, n) == 0);
            CHECK_EQ(t_blocked_contains_batch(v, qh, n, NULL), e);
            amq_blocked_free(v);
            REQUIRE_OK(amq_blocked_view(&prm, amq_blocked_data(b), prm.blocks * 64, 0, NULL, &v));
            REQUIRE_OK(amq_blocked_set_simd(v, paths[pi]));
            memset(got, 7, n);
            CHECK_EQ(t_blocked_contains_batch64(v, qx, n, got), e64);
            CHECK(memcmp(got, want64, n) == 0);
            CHECK_EQ(t_blocked_contains_batch64(v, qx, n, NULL), e64);
            amq_blocked_free(v);
        }
        amq_blocked_free(a);
        amq_blocked_free(b);
        amq_blocked_free(c);
        free(keys);
        free(q);
        free(want);
        free(want64);
        free(got);
        free(flags);
        free(hs);
        free(qh);
        free(qx);
    }
}

TEST(blocked_batched_equals_single)
{
    const uint32_t algos[] = {AMQ_HASH_XXH3, AMQ_HASH_MURMUR3, AMQ_HASH_MURMUR64A};
    const size_t n = 3000;
    size_t ai, i, len;
    /* Each hash with seed 5, then with seed 0 (XXH3's 8-byte keys have a
     * loop and a one-key entry for each). */
    for (ai = 0; ai < 6; ai++) {
        amq_blocked_params prm;
        amq_blocked *b1, *b2, *b3, *b4;
        uint8_t *fixed = malloc(n * 12), *a1 = malloc(n), *a2 = malloc(n), *o1 = malloc(n),
                *o2 = malloc(n), *o3 = malloc(n);
        amq_slice *sl = malloc(n * sizeof *sl);
        amq_hash128 *hs = malloc(n * sizeof *hs);
        uint64_t s = 77 + ai;
        int64_t c2, c3, c4;
        amq_blocked *b5;
        REQUIRE(fixed && a1 && a2 && o1 && o2 && o3 && sl && hs);
        REQUIRE_OK(amq_blocked_params_for(1000, 0.01, &prm)); /* overfilled: repeats */
        prm.hash_algo = algos[ai % 3];
        prm.seed = ai < 3 ? 5 : 0;
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &b1));
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &b2));
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &b3));
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &b4));
        for (i = 0; i < n; i++) {
            uint64_t v = test_rand(&s) % 2500; /* duplicates */
            amq_store64(fixed + i * 12, v);
            amq_store32(fixed + i * 12 + 8, 0);
        }
        /* b1: one by one; b2: slices of varying length; b3: packed 12-byte
         * keys; b4: hashes. */
        for (i = 0; i < n; i++) {
            len = 12;
            sl[i].data = fixed + i * 12;
            sl[i].len = len;
            hs[i] = amq_blocked_hash(b1, fixed + i * 12, len);
            a1[i] = (uint8_t)amq_blocked_add(b1, fixed + i * 12, len);
        }
        c2 = t_blocked_add_batch_keys(b2, sl, n, a2);
        CHECK(memcmp(a1, a2, n) == 0);
        c3 = t_blocked_add_batch_fixed(b3, fixed, 12, n, NULL);
        c4 = t_blocked_add_batch(b4, hs, n, a2);
        CHECK(memcmp(a1, a2, n) == 0);
        CHECK_EQ(c2, (int64_t)amq_blocked_items(b1));
        CHECK_EQ(c3, c2);
        CHECK_EQ(c4, c2);
        CHECK(memcmp(amq_blocked_data(b1), amq_blocked_data(b2), prm.blocks * 64) == 0);
        CHECK(memcmp(amq_blocked_data(b1), amq_blocked_data(b3), prm.blocks * 64) == 0);
        CHECK(memcmp(amq_blocked_data(b1), amq_blocked_data(b4), prm.blocks * 64) == 0);
        /* Queries of other keys: batched forms agree with single ones. */
        for (i = 0; i < n; i++)
            amq_store64(fixed + i * 12, test_rand(&s));
        for (i = 0; i < n; i++)
            o1[i] = (uint8_t)amq_blocked_contains(b1, fixed + i * 12, 12);
        CHECK_EQ(t_blocked_contains_batch_keys(b1, sl, n, o2),
                 t_blocked_contains_batch_fixed(b1, fixed, 12, n, o3));
        CHECK(memcmp(o1, o2, n) == 0);
        CHECK(memcmp(o1, o3, n) == 0);
        /* 8-byte keys take their own loop and one-key entry: the same
         * answers as their hash. */
        for (i = 0; i < n; i++) {
            o1[i] = (uint8_t)amq_blocked_contains_hash(b1, amq_blocked_hash(b1, fixed + i * 8, 8));
            CHECK_EQ(amq_blocked_contains(b1, fixed + i * 8, 8), o1[i]);
            sl[i].data = fixed + i * 8;
            sl[i].len = 8;
        }
        t_blocked_contains_batch_fixed(b1, fixed, 8, n, o3);
        t_blocked_contains_batch_keys(b1, sl, n, o2);
        CHECK(memcmp(o1, o3, n) == 0);
        CHECK(memcmp(o1, o2, n) == 0);
        /* ... and adds: packed 8-byte keys set the bits of their hashes. */
        REQUIRE_OK(amq_blocked_new(&prm, NULL, &b5));
        for (i = 0; i < n; i++)
            hs[i] = amq_blocked_hash(b5, fixed + i * 8, 8);
        c3 = t_blocked_add_batch_fixed(b5, fixed, 8, n, a1);
        REQUIRE_OK(amq_blocked_clear(b4));
        c4 = t_blocked_add_batch(b4, hs, n, a2);
        CHECK_EQ(c3, c4);
        CHECK(memcmp(a1, a2, n) == 0);
        CHECK(memcmp(amq_blocked_data(b4), amq_blocked_data(b5), prm.blocks * 64) == 0);
        /* The same without the "added" array (the entries' NULL copies). */
        REQUIRE_OK(amq_blocked_clear(b4));
        REQUIRE_OK(amq_blocked_clear(b5));
        CHECK_EQ(t_blocked_add_batch_fixed(b5, fixed, 8, n, NULL), c3);
        CHECK_EQ(t_blocked_add_batch(b4, hs, n, NULL), c3);
        CHECK(memcmp(amq_blocked_data(b4), amq_blocked_data(b5), prm.blocks * 64) == 0);
        amq_blocked_free(b5);
        /* Tiny batches (shorter than the prefetch window) and empty ones. */
        CHECK_EQ(t_blocked_contains_batch_fixed(b1, fixed, 8, 3, o3), (uint64_t)o1[0] + o1[1] + o1[2]);
        CHECK_EQ(t_blocked_contains_batch_fixed(b1, fixed, 8, 0, NULL), 0);
        CHECK_EQ(t_blocked_add_batch_fixed(b1, fixed, 8, 0, NULL), 0);
        CHECK_EQ(t_blocked_contains_batch_fixed(b1, NULL, 8, 0, NULL), 0);
        CHECK_EQ(t_blocked_add_batch_fixed(b1, NULL, 8, 0, NULL), 0);
        amq_blocked_free(b1);
        amq_blocked_free(b2);
        amq_blocked_free(b3);
        amq_blocked_free(b4);
        free(fixed);
        free(a1);
        free(a2);
        free(o1);
        free(o2);
        free(o3);
        free(sl);
        free(hs);
    }
}

/* One fill through every add form, on path `simd`: single adds, 128-bit
 * and 64-bit hash batches, slices, packed 8- and 12-byte keys; the "new
 * bit" answers of all of them appended to flags. */
static int64_t fill_all_forms(amq_blocked *b, uint32_t simd, uint64_t seed, size_t n,
                              uint8_t *flags)
{
    uint8_t *keys = malloc(n * 12);
    amq_slice *sl = malloc(n * sizeof *sl);
    amq_hash128 *hs = malloc(n * sizeof *hs);
    uint64_t *h64 = malloc(n * sizeof *h64), s = seed;
    int64_t total = 0;
    size_t i, part = n / 6;
    if (keys == NULL || sl == NULL || hs == NULL || h64 == NULL ||
        amq_blocked_set_simd(b, simd) != AMQ_OK)
        total = -1;
    for (i = 0; total >= 0 && i < n; i++) {
        amq_store64(keys + i * 12, test_rand(&s) % (n * 3 / 4)); /* repeats */
        amq_store32(keys + i * 12 + 8, (uint32_t)i & 1);
        sl[i].data = keys + i * 12;
        sl[i].len = 12;
        hs[i] = amq_blocked_hash(b, keys + i * 12, 12);
        h64[i] = hs[i].h1 ^ (i & 3);
    }
    for (i = 0; total >= 0 && i < part; i++) {
        flags[i] = (uint8_t)amq_blocked_add(b, keys + i * 12, 12);
        total += flags[i];
    }
    if (total >= 0) {
        total += t_blocked_add_batch(b, hs + part, part, flags + part);
        total += t_blocked_add_batch64(b, h64 + 2 * part, part, flags + 2 * part);
        total += t_blocked_add_batch_keys(b, sl + 3 * part, part, flags + 3 * part);
        total += t_blocked_add_batch_fixed(b, keys + 4 * part * 12, 12, part, flags + 4 * part);
        for (i = 5 * part; i < n; i++) /* 8-byte keys: their own loop */
            memcpy(keys + i * 8, keys + i * 12, 8);
        total += t_blocked_add_batch_fixed(b, keys + 5 * part * 8, 8, n - 5 * part, flags + 5 * part);
    }
    free(keys);
    free(sl);
    free(hs);
    free(h64);
    return total;
}

/* Every path's exclusive adds (scalar: a store per probe; AVX2, AVX-512:
 * the key's mask built in registers, whole-block stores) and the adds of
 * concurrent mode write the same bytes and report the same new keys, for
 * every k, in filters below and above the prefetch window. */
TEST(blocked_add_paths_identical)
{
    const uint32_t paths[] = {AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    const uint64_t sizes[] = {3, 64, 5000};
    const size_t n = 6 * 1100 + 5;
    uint8_t *want = malloc(n), *got = malloc(n);
    uint32_t k, pi, si;
    REQUIRE(want != NULL && got != NULL);
    for (si = 0; si < 3; si++) {
        for (k = 1; k <= AMQ_BLOCKED_MAX_K; k++) {
            amq_blocked_params prm;
            amq_blocked *ref;
            int64_t want_n;
            memset(&prm, 0, sizeof prm);
            prm.blocks = sizes[si];
            prm.k = k;
            prm.hash_algo = AMQ_HASH_XXH3;
            prm.seed = k;
            REQUIRE_OK(amq_blocked_new(&prm, NULL, &ref));
            want_n = fill_all_forms(ref, AMQ_SIMD_SCALAR, 1000 + k, n, want);
            REQUIRE(want_n > 0);
            CHECK(want_n < (int64_t)n); /* repeats were refused as old */
            for (pi = 0; pi < 3; pi++) {
                amq_blocked *b;
                if (pi < 2 && !amq_simd_supported(paths[pi]))
                    continue;
                REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
                if (pi == 2) /* concurrent mode: the atomic form's loops */
                    REQUIRE_OK(amq_blocked_set_concurrent(b, 1));
                memset(got, 7, n);
                CHECK_EQ(fill_all_forms(b, pi < 2 ? paths[pi] : AMQ_SIMD_SCALAR, 1000 + k, n, got),
                         want_n);
                if (memcmp(got, want, n) != 0 ||
                    memcmp(amq_blocked_data(b), amq_blocked_data(ref), prm.blocks * 64) != 0)
                    FAIL_AT_("%s k %u blocks %" PRIu64 ": adds differ from scalar",
                             pi < 2 ? amq_simd_name(paths[pi]) : "concurrent mode", k, prm.blocks);
                CHECK_EQ(amq_blocked_items(b), amq_blocked_items(ref));
                amq_blocked_free(b);
            }
            amq_blocked_free(ref);
        }
    }
    free(want);
    free(got);
}

TEST(blocked_concurrent_mode_same_bits)
{
    amq_blocked_params prm;
    amq_blocked *a, *c;
    uint64_t s = 3, i;
    uint8_t key[8];
    REQUIRE_OK(amq_blocked_params_for(20000, 0.01, &prm));
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &a));
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &c));
    REQUIRE_OK(amq_blocked_set_concurrent(c, 1));
    CHECK_EQ(amq_blocked_is_concurrent(c), 1);
    CHECK_EQ(amq_blocked_is_concurrent(a), 0);
    for (i = 0; i < 20000; i++) {
        key_bytes(test_rand(&s), key);
        CHECK_EQ(amq_blocked_add(a, key, 8), amq_blocked_add(c, key, 8));
    }
    CHECK(memcmp(amq_blocked_data(a), amq_blocked_data(c), prm.blocks * 64) == 0);
    CHECK_EQ(amq_blocked_items(a), amq_blocked_items(c));
    amq_blocked_free(a);
    amq_blocked_free(c);
}

/* The one-key add's entries (chosen per filter: path, mode, hash, seed;
 * 8- and 16-byte XXH3 keys flattened) write what amq_blocked_add_hash
 * writes for the key's hash and answer the same. */
TEST(blocked_one_key_add_every_entry)
{
    const uint32_t paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    const uint32_t algos[] = {AMQ_HASH_XXH3, AMQ_HASH_MURMUR3};
    const size_t lens[] = {8, 16, 12, 1};
    uint32_t pi, ai, conc, seed;
    size_t li, i;
    for (pi = 0; pi < 3; pi++) {
        if (!amq_simd_supported(paths[pi]))
            continue;
        for (ai = 0; ai < 2; ai++)
            for (seed = 0; seed < 2; seed++)
                for (conc = 0; conc < 2; conc++)
                    for (li = 0; li < 4; li++) {
                        amq_blocked_params prm;
                        amq_blocked *a, *b;
                        uint64_t s = 11 + li, words[2];
                        REQUIRE_OK(amq_blocked_params_for(3000, 0.01, &prm));
                        prm.hash_algo = algos[ai];
                        prm.seed = seed * 77;
                        REQUIRE_OK(amq_blocked_new(&prm, NULL, &a));
                        REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
                        REQUIRE_OK(amq_blocked_set_simd(a, paths[pi]));
                        REQUIRE_OK(amq_blocked_set_concurrent(a, (int)conc));
                        for (i = 0; i < 4000; i++) {
                            int ra, rb;
                            words[0] = test_rand(&s) % 3000; /* repeats: "not new" too */
                            words[1] = words[0] * 3;
                            ra = amq_blocked_add(a, words, lens[li]);
                            rb = amq_blocked_add_hash(b, amq_blocked_hash(b, words, lens[li]));
                            if (ra != rb) {
                                FAIL_AT_("%s algo %u seed %u concurrent %u len %zu key %zu: add "
                                         "%d, add_hash %d",
                                         amq_simd_name(paths[pi]), algos[ai], seed, conc,
                                         lens[li], i, ra, rb);
                                break;
                            }
                        }
                        if (memcmp(amq_blocked_data(a), amq_blocked_data(b), prm.blocks * 64) != 0 ||
                            amq_blocked_items(a) != amq_blocked_items(b))
                            FAIL_AT_("%s algo %u seed %u concurrent %u len %zu: bytes or items "
                                     "differ",
                                     amq_simd_name(paths[pi]), algos[ai], seed, conc, lens[li]);
                        amq_blocked_free(a);
                        amq_blocked_free(b);
                    }
    }
}

/* ---- whole-filter operations ---------------------------------------------------------- */

TEST(blocked_union_clear_stats)
{
    amq_blocked_params prm;
    amq_blocked *a, *b, *other;
    uint64_t i, items_a;
    uint8_t key[8];
    double f0, f1;

    REQUIRE_OK(amq_blocked_params_for(10000, 0.01, &prm));
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &a));
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
    for (i = 0; i < 5000; i++) {
        key_bytes(i, key);
        amq_blocked_add(a, key, 8);
        key_bytes(i + 1000000, key);
        amq_blocked_add(b, key, 8);
    }
    f0 = amq_blocked_fpp_now(a);
    items_a = amq_blocked_items(a);
    REQUIRE_OK(amq_blocked_merge(a, b));
    f1 = amq_blocked_fpp_now(a);
    CHECK(f1 > f0);
    CHECK(f1 < 0.02);
    for (i = 0; i < 5000; i++) {
        key_bytes(i, key);
        CHECK_EQ(amq_blocked_contains(a, key, 8), 1);
        key_bytes(i + 1000000, key);
        CHECK_EQ(amq_blocked_contains(a, key, 8), 1);
    }
    CHECK_EQ(amq_blocked_items(a), items_a + amq_blocked_items(b));
    CHECK(amq_blocked_bits_set(a) > amq_blocked_bits_set(b));
    prm.k += 1;
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &other));
    CHECK_STATUS(amq_blocked_merge(a, other), AMQ_EINCOMPAT);
    amq_blocked_free(other);
    prm.k -= 1;
    prm.blocks += 1;
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &other));
    CHECK_STATUS(amq_blocked_merge(a, other), AMQ_EINCOMPAT);
    amq_blocked_free(other);
    prm.blocks -= 1;
    prm.seed = 9;
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &other));
    CHECK_STATUS(amq_blocked_merge(a, other), AMQ_EINCOMPAT);
    amq_blocked_free(other);
    REQUIRE_OK(amq_blocked_clear(a));
    CHECK_EQ(amq_blocked_bits_set(a), 0);
    CHECK_EQ(amq_blocked_items(a), 0);
    CHECK_EQ_DBL(amq_blocked_fpp_now(a), 0.0);
    amq_blocked_free(a);
    amq_blocked_free(b);
}

TEST(blocked_views_are_read_only_and_aligned)
{
    amq_blocked_params prm;
    amq_blocked *b, *v;
    uint8_t key[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    amq_slice sl = {key, 8};
    REQUIRE_OK(amq_blocked_params_for(1000, 0.01, &prm));
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
    amq_blocked_add(b, key, 8);
    CHECK_STATUS(amq_blocked_view(&prm, amq_blocked_data(b) + 8, prm.blocks * 64, 0, NULL, &v),
                 AMQ_EINVAL);
    CHECK_STATUS(amq_blocked_view(&prm, amq_blocked_data(b), prm.blocks * 64 - 64, 0, NULL, &v),
                 AMQ_EINVAL);
    REQUIRE_OK(amq_blocked_view(&prm, amq_blocked_data(b), prm.blocks * 64, 1, NULL, &v));
    CHECK_EQ(amq_blocked_is_readonly(v), 1);
    CHECK_EQ(amq_blocked_contains(v, key, 8), 1);
    CHECK_STATUS(amq_blocked_add(v, key, 8), AMQ_EREADONLY);
    CHECK_EQ(t_blocked_add_batch_keys(v, &sl, 1, NULL), AMQ_EREADONLY);
    CHECK_EQ(t_blocked_add_batch_fixed(v, key, 8, 1, NULL), AMQ_EREADONLY);
    CHECK_STATUS(amq_blocked_clear(v), AMQ_EREADONLY);
    CHECK_STATUS(amq_blocked_merge(v, b), AMQ_EREADONLY);
    CHECK_STATUS(amq_blocked_set_concurrent(v, 1), AMQ_EREADONLY);
    amq_blocked_free(v);
    amq_blocked_free(b);
}

/* ---- through the generic handle and the file container -------------------------------- */

static amq_filter *generic(uint64_t n, double p, uint32_t algo, uint64_t seed)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.capacity = n;
    cfg.fpp = p;
    cfg.hash_algo = algo;
    cfg.seed = seed;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    return f;
}

TEST(blocked_generic_round_trip)
{
    amq_filter *f, *g, *v;
    uint64_t size, i, s = 11;
    uint8_t key[8], *buf, *aligned;
    size_t written;
    amq_stats st;
    uint32_t kind;

    CHECK_STR(amq_kind_name(AMQ_KIND_BLOCKED), "blocked");
    REQUIRE_OK(amq_kind_from_name("blocked", &kind));
    CHECK_EQ(kind, AMQ_KIND_BLOCKED);
    f = generic(5000, 0.01, AMQ_HASH_MURMUR3, 42);
    REQUIRE(f != NULL);
    for (i = 0; i < 5000; i++) {
        key_bytes(test_rand(&s), key);
        CHECK(amq_filter_add(f, key, 8) >= 0);
    }
    amq_filter_stats(f, &st);
    CHECK_EQ(st.kind, AMQ_KIND_BLOCKED);
    CHECK_EQ(st.hash_algo, AMQ_HASH_MURMUR3);
    CHECK_EQ(st.seed, 42);
    CHECK(st.items > 4900 && st.items <= 5000);
    CHECK_EQ(st.capacity, 5000);
    CHECK(st.fpp_target <= 0.01);
    CHECK(st.fpp_now > 0.003 && st.fpp_now < 0.02);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size + 64);
    REQUIRE(buf != NULL);
    aligned = buf + (64 - ((uintptr_t)buf & 63)) % 64;
    REQUIRE_OK(amq_filter_serialize(f, aligned, (size_t)size, &written));
    CHECK_EQ(written, size);
    /* Copy and borrowed view answer the same. */
    REQUIRE_OK(amq_filter_deserialize(aligned, written, 0, NULL, &g, NULL));
    REQUIRE_OK(amq_filter_deserialize(aligned, written, AMQ_OPEN_MMAP, NULL, &v, NULL));
    CHECK_EQ(amq_filter_is_readonly(g), 0);
    CHECK_EQ(amq_filter_is_readonly(v), 1);
    s = 11;
    for (i = 0; i < 10000; i++) {
        int a;
        key_bytes(test_rand(&s), key);
        a = amq_filter_contains(f, key, 8);
        CHECK_EQ(amq_filter_contains(g, key, 8), a);
        CHECK_EQ(amq_filter_contains(v, key, 8), a);
        if (i < 5000)
            CHECK_EQ(a, 1);
    }
    CHECK_STATUS(amq_filter_add(v, key, 8), AMQ_EREADONLY);
    amq_filter_stats(g, &st);
    CHECK_EQ(st.hash_algo, AMQ_HASH_MURMUR3);
    CHECK_EQ(st.seed, 42);
    amq_filter_free(g);
    amq_filter_free(v);
    /* A misaligned buffer still loads (copied). */
    memmove(aligned + 8, aligned, written);
    REQUIRE_OK(amq_filter_deserialize(aligned + 8, written, AMQ_OPEN_MMAP, NULL, &g, NULL));
    key_bytes(5, key);
    CHECK_EQ(amq_filter_contains(g, key, 8), amq_filter_contains(f, key, 8));
    amq_filter_free(g);
    free(buf);
    amq_filter_free(f);
}

/* The handle's one-key add and query (the kind's own entries, which hash
 * the key themselves) answer and write exactly what the handle's hash and
 * the _hash forms do: every hash, seeds 0 and other, keys of the lengths
 * the entries treat apart (8, 16) and others, concurrent mode too; an add
 * is seen by the next query; a borrowed view refuses adds and answers. */
TEST(blocked_generic_one_key_entries)
{
    const uint32_t algos[] = {AMQ_HASH_XXH3, AMQ_HASH_MURMUR3};
    const size_t lens[] = {8, 16, 12, 0, 33};
    uint32_t ai, seed, conc;
    size_t li, i;
    for (ai = 0; ai < 2; ai++)
        for (seed = 0; seed < 2; seed++)
            for (conc = 0; conc < 2; conc++)
                for (li = 0; li < 5; li++) {
                    amq_filter *a = generic(2000, 0.01, algos[ai], seed * 99);
                    amq_filter *b = generic(2000, 0.01, algos[ai], seed * 99);
                    amq_filter *v;
                    uint64_t s = 5 + li, words[5] = {0, 0, 0, 0, 0}, size, sa, sb;
                    uint8_t *ba, *bb;
                    size_t wa, wb;
                    amq_stats sta, stb;
                    REQUIRE(a != NULL && b != NULL);
                    REQUIRE_OK(amq_filter_set_concurrent(a, (int)conc));
                    for (i = 0; i < 3000; i++) {
                        int ra, rb;
                        words[0] = test_rand(&s) % 2000; /* repeats: "not new" too */
                        words[1] = words[0] ^ 0x55;
                        words[4] = words[0] * 7;
                        ra = amq_filter_add(a, words, lens[li]);
                        rb = amq_filter_add_hash(b, amq_filter_hash(b, words, lens[li]));
                        if (ra != rb || amq_filter_contains(a, words, lens[li]) != 1) {
                            FAIL_AT_("algo %u seed %u concurrent %u len %zu key %zu: add %d, "
                                     "add_hash %d, or not found after its add",
                                     algos[ai], seed, conc, lens[li], i, ra, rb);
                            break;
                        }
                    }
                    s = 1000;
                    for (i = 0; i < 3000; i++) {
                        words[0] = test_rand(&s);
                        words[1] = words[0] ^ 0x55;
                        words[4] = words[0] * 7;
                        CHECK_EQ(amq_filter_contains(a, words, lens[li]),
                                 amq_filter_contains_hash(b, amq_filter_hash(b, words, lens[li])));
                    }
                    amq_filter_stats(a, &sta);
                    amq_filter_stats(b, &stb);
                    CHECK_EQ(sta.items, stb.items);
                    REQUIRE_OK(amq_filter_serialized_size(a, &sa));
                    REQUIRE_OK(amq_filter_serialized_size(b, &sb));
                    REQUIRE(sa == sb);
                    size = sa;
                    ba = aligned_alloc(64, ((size_t)size + 63) & ~(size_t)63);
                    bb = aligned_alloc(64, ((size_t)size + 63) & ~(size_t)63);
                    REQUIRE(ba != NULL && bb != NULL);
                    REQUIRE_OK(amq_filter_serialize(a, ba, (size_t)size, &wa));
                    REQUIRE_OK(amq_filter_serialize(b, bb, (size_t)size, &wb));
                    CHECK(wa == wb && memcmp(ba, bb, wa) == 0);
                    REQUIRE_OK(amq_filter_deserialize(ba, wa, AMQ_OPEN_MMAP, NULL, &v, NULL));
                    CHECK_EQ(amq_filter_is_readonly(v), 1);
                    CHECK_STATUS(amq_filter_add(v, words, lens[li]), AMQ_EREADONLY);
                    s = 5 + li;
                    words[0] = test_rand(&s) % 2000;
                    words[1] = words[0] ^ 0x55;
                    words[4] = words[0] * 7;
                    CHECK_EQ(amq_filter_contains(v, words, lens[li]), 1);
                    amq_filter_free(v);
                    free(ba);
                    free(bb);
                    amq_filter_free(a);
                    amq_filter_free(b);
                }
}

TEST(blocked_file_mmap_view)
{
    amq_filter *f, *g;
    amq_errinfo err;
    uint64_t i, s = 99;
    uint8_t key[8];
    const char *path = test_path("blocked.amq");
    unsigned modes[] = {0, AMQ_OPEN_MMAP, AMQ_OPEN_MMAP | AMQ_OPEN_TRUST};
    size_t m;

    f = generic(20000, 0.001, AMQ_HASH_XXH3, 0);
    REQUIRE(f != NULL);
    for (i = 0; i < 20000; i++) {
        key_bytes(test_rand(&s), key);
        amq_filter_add(f, key, 8);
    }
    REQUIRE_OK(amq_filter_save(f, path, 0, &err));
    for (m = 0; m < 3; m++) {
        amq_hash128 *hs = malloc(20000 * sizeof *hs);
        uint8_t *out = malloc(20000);
        REQUIRE(hs && out);
        REQUIRE_OK(amq_filter_open(path, modes[m], NULL, &g, &err));
        CHECK_EQ(amq_filter_is_readonly(g), modes[m] != 0);
        s = 99;
        for (i = 0; i < 20000; i++) {
            key_bytes(test_rand(&s), key);
            hs[i] = amq_filter_hash(g, key, 8);
        }
        amq_filter_contains_batch(g, hs, 20000, out);
        for (i = 0; i < 20000; i++)
            if (out[i] != 1) {
                FAIL_AT_("mode %u: false negative at %" PRIu64, modes[m], i);
                break;
            }
        amq_filter_free(g);
        free(hs);
        free(out);
    }
    amq_filter_free(f);
}

/* Builds a container around a blocked parameter block and payload. */
static uint8_t *forge(const uint8_t *params, uint32_t plen, const uint8_t *payload, uint64_t paylen,
                      size_t *len)
{
    amq_container c;
    uint64_t off = amq_container_payload_offset(plen);
    uint8_t *buf = aligned_alloc(64, (size_t)((off + paylen + 63) / 64 * 64));
    memset(&c, 0, sizeof c);
    c.version = AMQ_FILE_VERSION;
    c.kind = AMQ_KIND_BLOCKED;
    c.hash_algo = AMQ_HASH_XXH3;
    c.params = params;
    c.params_len = plen;
    c.payload_len = paylen;
    c.payload_sum = amq_checksum(payload, (size_t)paylen);
    amq_container_write_header(&c, buf);
    memcpy(buf + off, payload, (size_t)paylen);
    *len = (size_t)(off + paylen);
    return buf;
}

TEST(blocked_corrupt_input_rejected)
{
    uint8_t params[32], payload[64 * 4];
    uint8_t *buf;
    size_t len;
    amq_filter *f;
    amq_errinfo err;

    memset(payload, 0, sizeof payload);
    payload[3] = 0x10;
#define PARAMS(blocks, k, scheme, fpp)                                                             \
    do {                                                                                           \
        amq_store64(params, (blocks));                                                             \
        amq_store32(params + 8, (k));                                                              \
        amq_store32(params + 12, (scheme));                                                        \
        amq_store64(params + 16, 100);                                                             \
        amq_storef64(params + 24, (fpp));                                                          \
    } while (0)
    PARAMS(4, 7, 0, 0.01);
    buf = forge(params, 32, payload, sizeof payload, &len);
    REQUIRE_OK(amq_filter_deserialize(buf, len, 0, NULL, &f, &err));
    amq_filter_free(f);
    /* Every byte count short of the whole is rejected. */
    {
        size_t cut;
        for (cut = 0; cut < len; cut += 7) {
            int rc = amq_filter_deserialize(buf, cut, 0, NULL, &f, &err);
            if (rc == AMQ_OK) {
                FAIL_AT_("accepted %zu of %zu bytes", cut, len);
                amq_filter_free(f);
            }
        }
    }
    /* A flipped payload bit: checksum mismatch, unless trusted. */
    buf[len - 1] ^= 1;
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECHECKSUM);
    REQUIRE_OK(amq_filter_deserialize(buf, len, AMQ_OPEN_TRUST, NULL, &f, &err));
    amq_filter_free(f);
    free(buf);

    PARAMS(5, 7, 0, 0.01); /* payload holds 4 blocks */
    buf = forge(params, 32, payload, sizeof payload, &len);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECORRUPT);
    free(buf);
    PARAMS(4, 0, 0, 0.01);
    buf = forge(params, 32, payload, sizeof payload, &len);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECORRUPT);
    free(buf);
    PARAMS(4, 17, 0, 0.01);
    buf = forge(params, 32, payload, sizeof payload, &len);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECORRUPT);
    free(buf);
    PARAMS(4, 7, 1, 0.01);
    buf = forge(params, 32, payload, sizeof payload, &len);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_EVERSION);
    free(buf);
    PARAMS(4, 7, 0, 1.5);
    buf = forge(params, 32, payload, sizeof payload, &len);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECORRUPT);
    free(buf);
    PARAMS(0, 7, 0, 0.01);
    buf = forge(params, 32, payload, 0, &len);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECORRUPT);
    free(buf);
    PARAMS(UINT64_C(1) << 60, 7, 0, 0.01);
    buf = forge(params, 32, payload, sizeof payload, &len);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECORRUPT);
    free(buf);
    PARAMS(4, 7, 0, 0.01);
    buf = forge(params, 31, payload, sizeof payload, &len);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECORRUPT);
    free(buf);
#undef PARAMS
}

TEST(blocked_generic_merge)
{
    amq_filter *a, *b, *c;
    amq_errinfo err;
    uint8_t key[8];
    uint64_t i;

    a = generic(1000, 0.01, AMQ_HASH_XXH3, 0);
    b = generic(1000, 0.01, AMQ_HASH_XXH3, 0);
    REQUIRE(a && b);
    for (i = 0; i < 1000; i++) {
        key_bytes(i, key);
        amq_filter_add(a, key, 8);
        key_bytes(i + 5000, key);
        amq_filter_add(b, key, 8);
    }
    REQUIRE_OK(amq_filter_merge(a, b, &err));
    for (i = 0; i < 1000; i++) {
        key_bytes(i + 5000, key);
        CHECK_EQ(amq_filter_contains(a, key, 8), 1);
    }
    c = generic(2000, 0.01, AMQ_HASH_XXH3, 0);
    CHECK_STATUS(amq_filter_merge(a, c, &err), AMQ_EINCOMPAT);
    CHECK(strstr(err.msg, "blocks") != NULL);
    amq_filter_free(c);
    c = generic(1000, 0.01, AMQ_HASH_XXH3, 1);
    CHECK_STATUS(amq_filter_merge(a, c, &err), AMQ_EINCOMPAT);
    amq_filter_free(c);
    CHECK_STATUS(amq_filter_intersect(a, b, &err), AMQ_EUNSUPPORTED);
    CHECK_STATUS(amq_filter_remove(a, key, 8), AMQ_EUNSUPPORTED);
    amq_filter_free(a);
    amq_filter_free(b);
}

/* ---- concurrency ---------------------------------------------------------------------------
 * Writers add disjoint key ranges in chunks and publish their progress with
 * a release store; readers acquire the progress and check that every key
 * below it is present (the documented guarantee), while the writers go on.
 * Under ThreadSanitizer (make tsan) the readers use the scalar path, whose
 * loads are C11 atomics; the vector paths' loads are outside the C11 model
 * (see blocked_bloom.h) and are exercised in the normal build.
 */

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

#define CC_WRITERS 2
#define CC_KEYS 40000
#define CC_CHUNK 500

typedef struct cc_shared {
    amq_blocked *b;
    amq_blocked *reader_view[2];
    _Atomic uint64_t progress[CC_WRITERS];
    _Atomic int failures;
    _Atomic int done;
} cc_shared;

typedef struct cc_arg {
    cc_shared *sh;
    int id;
} cc_arg;

static uint64_t cc_key(int writer, uint64_t i)
{
    return ((uint64_t)writer << 40) | i;
}

static void *cc_writer(void *p)
{
    cc_arg *a = p;
    uint64_t i, j;
    uint8_t keys[CC_CHUNK * 8];
    for (i = 0; i < CC_KEYS; i += CC_CHUNK) {
        for (j = 0; j < CC_CHUNK; j++)
            key_bytes(cc_key(a->id, i + j), keys + j * 8);
        if ((i / CC_CHUNK) % 2 == 0) {
            t_blocked_add_batch_fixed(a->sh->b, keys, 8, CC_CHUNK, NULL);
        } else {
            for (j = 0; j < CC_CHUNK; j++)
                amq_blocked_add(a->sh->b, keys + j * 8, 8);
        }
        atomic_store_explicit(&a->sh->progress[a->id], i + CC_CHUNK, memory_order_release);
    }
    return NULL;
}

static void *cc_reader(void *p)
{
    cc_arg *a = p;
    amq_blocked *v = a->sh->reader_view[a->id];
    uint64_t s = 1234 + (uint64_t)a->id, rounds = 0;
    uint8_t key[8];
    while (!atomic_load_explicit(&a->sh->done, memory_order_acquire) || rounds < 50) {
        int w = (int)(test_rand(&s) % CC_WRITERS);
        uint64_t upto = atomic_load_explicit(&a->sh->progress[w], memory_order_acquire), i, j;
        rounds++;
        if (upto == 0)
            continue;
        for (j = 0; j < 64; j++) {
            i = test_rand(&s) % upto;
            key_bytes(cc_key(w, i), key);
            if (amq_blocked_contains(v, key, 8) != 1)
                atomic_fetch_add(&a->sh->failures, 1);
        }
    }
    return NULL;
}

TEST(blocked_concurrent_adds_and_queries)
{
    amq_blocked_params prm;
    cc_shared sh;
    cc_arg wa[CC_WRITERS], ra[2];
    pthread_t wt[CC_WRITERS], rt[2];
    uint64_t i;
    uint8_t key[8];
    int w, r;

    memset(&sh, 0, sizeof sh);
    REQUIRE_OK(amq_blocked_params_for(CC_WRITERS * CC_KEYS, 0.01, &prm));
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &sh.b));
    REQUIRE_OK(amq_blocked_set_concurrent(sh.b, 1));
    /* Readers query through views of the same bytes (each with its own
     * path); views are read-only handles on memory the writers change. */
    for (r = 0; r < 2; r++) {
        REQUIRE_OK(amq_blocked_view(&prm, amq_blocked_data(sh.b), prm.blocks * 64, 0, NULL,
                                    &sh.reader_view[r]));
        if (UNDER_TSAN || r == 0)
            REQUIRE_OK(amq_blocked_set_simd(sh.reader_view[r], AMQ_SIMD_SCALAR));
    }
    for (w = 0; w < CC_WRITERS; w++) {
        wa[w].sh = &sh;
        wa[w].id = w;
        REQUIRE(pthread_create(&wt[w], NULL, cc_writer, &wa[w]) == 0);
    }
    for (r = 0; r < 2; r++) {
        ra[r].sh = &sh;
        ra[r].id = r;
        REQUIRE(pthread_create(&rt[r], NULL, cc_reader, &ra[r]) == 0);
    }
    for (w = 0; w < CC_WRITERS; w++)
        pthread_join(wt[w], NULL);
    atomic_store_explicit(&sh.done, 1, memory_order_release);
    for (r = 0; r < 2; r++)
        pthread_join(rt[r], NULL);
    CHECK_EQ(atomic_load(&sh.failures), 0);
    /* After the joins every key of every writer is present, and the count
     * is within the duplicates of the exact number. */
    for (w = 0; w < CC_WRITERS; w++)
        for (i = 0; i < CC_KEYS; i++) {
            key_bytes(cc_key(w, i), key);
            if (amq_blocked_contains(sh.b, key, 8) != 1) {
                FAIL_AT_("writer %d key %" PRIu64 " lost", w, i);
                break;
            }
        }
    CHECK(amq_blocked_items(sh.b) <= CC_WRITERS * CC_KEYS);
    CHECK(amq_blocked_items(sh.b) > CC_WRITERS * CC_KEYS * 99 / 100);
    for (r = 0; r < 2; r++)
        amq_blocked_free(sh.reader_view[r]);
    amq_blocked_free(sh.b);
}

static size_t alloc_live, alloc_calls;

static void *count_alloc(void *opaque, size_t size)
{
    (void)opaque;
    alloc_live += size;
    alloc_calls++;
    return malloc(size);
}

static void count_free(void *opaque, void *ptr, size_t size)
{
    (void)opaque;
    alloc_live -= size;
    free(ptr);
}

TEST(blocked_custom_allocator)
{
    /* Every byte goes through the hooks and comes back. */
    amq_allocator a = {count_alloc, count_free, NULL, NULL};
    amq_blocked_params prm;
    amq_blocked *b, *c;
    uint8_t key[8] = {1};

    REQUIRE_OK(amq_blocked_params_for(100000, 0.01, &prm));
    REQUIRE_OK(amq_blocked_new(&prm, &a, &b));
    CHECK(alloc_live >= prm.blocks * 64);
    CHECK_EQ(((uintptr_t)amq_blocked_data(b)) & 63, 0);
    amq_blocked_add(b, key, 8);
    REQUIRE_OK(amq_blocked_clone(b, &a, &c));
    CHECK(memcmp(amq_blocked_data(b), amq_blocked_data(c), prm.blocks * 64) == 0);
    CHECK_EQ(amq_blocked_contains(c, key, 8), 1);
    amq_blocked_free(b);
    amq_blocked_free(c);
    CHECK_EQ(alloc_live, 0);
    CHECK_GE(alloc_calls, 4);
}

TEST_MAIN()
