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
        REQUIRE_OK(amq_blocked_blocks_for(cases[i].n, cases[i].p, &blocks, &k));
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
    REQUIRE_OK(amq_blocked_blocks_for(1000000, 0.01, &blocks, &k));
    CHECK_EQ(blocks, 19372);
    CHECK_EQ(k, 6);
    REQUIRE_OK(amq_blocked_blocks_for_bpk(1000000, 10.0, &blocks, &k));
    CHECK_EQ(blocks, 19532);
    CHECK_EQ(k, 6);
}

TEST(blocked_sizing_rejects_bad_input)
{
    uint64_t blocks;
    uint32_t k;
    CHECK_STATUS(amq_blocked_blocks_for(0, 0.01, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_blocks_for(10, 0.0, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_blocks_for(10, 1.0, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_blocks_for(10, NAN, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_blocks_for(10, 1e-300, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_blocks_for_bpk(10, 0.0, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_blocks_for_bpk(10, 1001.0, &blocks, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_blocked_blocks_for_bpk(UINT64_MAX, 1000.0, &blocks, &k), AMQ_ERANGE);
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
    REQUIRE_OK(amq_blocked_blocks_for_bpk(n, 10.0, &prm.blocks, &prm.k));
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

TEST(blocked_simd_names_and_support)
{
    const uint32_t paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};
    amq_blocked_params prm;
    amq_blocked *b;
    uint32_t pi;

    CHECK(amq_simd_supported(AMQ_SIMD_SCALAR));
    CHECK(amq_simd_supported(AMQ_SIMD_AUTO));
    CHECK_STR(amq_simd_name(AMQ_SIMD_SCALAR), "scalar");
    CHECK(amq_simd_name(99) == NULL);
    REQUIRE_OK(amq_blocked_params_for(1000, 0.01, &prm));
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
    for (pi = 0; pi < 3; pi++)
        if (!amq_simd_supported(paths[pi]))
            CHECK_STATUS(amq_blocked_set_simd(b, paths[pi]), AMQ_EUNSUPPORTED);
        else
            CHECK_STATUS(amq_blocked_set_simd(b, paths[pi]), AMQ_OK);
    amq_blocked_free(b);
    CHECK_STATUS(amq_blocked_set_simd(NULL, 7), AMQ_EINVAL);
}

/* For k = 1 .. 16: a 64-block filter filled so that about 30 % of random
 * queries answer "maybe" (a fraction 0.3^(1/k) of the bits set), nq random
 * hashes and 8-byte keys, and the scalar path's one-key answers for them
 * (for keys, the answers for their hashes): the reference every path must
 * give, read through a view of b's bytes set to that path. */
#define SIMD_NQ 20000u
typedef struct simd_case {
    amq_blocked_params prm;
    amq_blocked *b;
    amq_hash128 *hs;
    uint8_t *keys; /* SIMD_NQ * 8 */
    uint8_t *want, *want_k;
} simd_case;

static void simd_case_free(simd_case *c)
{
    amq_blocked_free(c->b);
    free(c->hs);
    free(c->keys);
    free(c->want);
    free(c->want_k);
}

static int simd_case_init(simd_case *c, uint32_t k)
{
    uint64_t s = 0x5eed + k, i, nadd;
    memset(c, 0, sizeof *c);
    c->prm.blocks = 64;
    c->prm.k = k;
    c->prm.hash_algo = AMQ_HASH_XXH3;
    c->prm.seed = k % 2 == 0 ? 0 : k; /* XXH3 has entries for seed 0 and any */
    c->hs = malloc(SIMD_NQ * sizeof *c->hs);
    c->keys = malloc(SIMD_NQ * 8);
    c->want = malloc(SIMD_NQ);
    c->want_k = malloc(SIMD_NQ);
    if (c->hs == NULL || c->keys == NULL || c->want == NULL || c->want_k == NULL ||
        amq_blocked_new(&c->prm, NULL, &c->b) != AMQ_OK ||
        amq_blocked_set_simd(c->b, AMQ_SIMD_SCALAR) != AMQ_OK) {
        simd_case_free(c);
        return 0;
    }
    nadd = (uint64_t)(-log(1.0 - pow(0.3, 1.0 / k)) * 64 * 512 / k);
    for (i = 0; i < nadd; i++) {
        amq_hash128 h = {test_rand(&s), test_rand(&s)};
        amq_blocked_add_hash(c->b, h);
    }
    for (i = 0; i < SIMD_NQ; i++) {
        c->hs[i].h1 = test_rand(&s);
        c->hs[i].h2 = test_rand(&s);
        amq_store64(c->keys + i * 8, test_rand(&s) % 5000);
    }
    for (i = 0; i < SIMD_NQ; i++) {
        c->want[i] = (uint8_t)amq_blocked_contains_hash(c->b, c->hs[i]);
        c->want_k[i] = (uint8_t)amq_blocked_contains_hash(
            c->b, amq_blocked_hash(c->b, c->keys + i * 8, 8));
    }
    return 1;
}

/* A view over c's bytes with its own path. */
static amq_blocked *simd_view(const simd_case *c, uint32_t path)
{
    amq_blocked *v;
    if (amq_blocked_view(&c->prm, amq_blocked_data(c->b), c->prm.blocks * 64, 0, NULL, &v) !=
        AMQ_OK)
        return NULL;
    if (amq_blocked_set_simd(v, path) != AMQ_OK || amq_blocked_simd(v) != path) {
        amq_blocked_free(v);
        return NULL;
    }
    return v;
}

static const uint32_t simd_paths[] = {AMQ_SIMD_SCALAR, AMQ_SIMD_AVX2, AMQ_SIMD_AVX512};

/* Runs check on a view of every k's case through every path this CPU has;
 * returns how many (k, path) pairs it checked, or -1. */
typedef void (*simd_check)(const simd_case *c, amq_blocked *v, uint8_t *got);
static int each_k_and_path(simd_check check)
{
    uint32_t k, pi;
    int tested = 0;
    uint8_t *got = malloc(SIMD_NQ);
    for (k = 1; got != NULL && k <= AMQ_BLOCKED_MAX_K; k++) {
        simd_case c;
        if (!simd_case_init(&c, k))
            break;
        for (pi = 0; pi < 3; pi++) {
            amq_blocked *v;
            if (!amq_simd_supported(simd_paths[pi])) {
                test_skip(amq_simd_name(simd_paths[pi]));
                continue;
            }
            v = simd_view(&c, simd_paths[pi]);
            if (v == NULL) {
                FAIL_AT_("k %u: no view on path %s", k, amq_simd_name(simd_paths[pi]));
                continue;
            }
            check(&c, v, got);
            amq_blocked_free(v);
            tested++;
        }
        simd_case_free(&c);
    }
    free(got);
    return tested;
}

static void check_hash_queries(const simd_case *c, amq_blocked *v, uint8_t *got)
{
    uint64_t cnt, exp = 0, i;
    for (i = 0; i < SIMD_NQ; i++) {
        int r = amq_blocked_contains_hash(v, c->hs[i]);
        if (r != c->want[i]) {
            FAIL_AT_("path %s k %u query %" PRIu64 ": %d, scalar %d",
                     amq_simd_name(amq_blocked_simd(v)), c->prm.k, i, r, c->want[i]);
            break;
        }
        exp += c->want[i];
    }
    memset(got, 7, SIMD_NQ);
    cnt = t_blocked_contains_batch(v, c->hs, SIMD_NQ, got);
    CHECK(memcmp(got, c->want, SIMD_NQ) == 0);
    CHECK_EQ(cnt, exp);
    CHECK_EQ(t_blocked_contains_batch(v, c->hs, SIMD_NQ, NULL), exp);
    CHECK(exp > SIMD_NQ / 50 && exp < SIMD_NQ - SIMD_NQ / 50); /* both answers occur */
}

TEST(blocked_every_path_answers_hash_queries_as_the_scalar_path)
{
    CHECK_GE(each_k_and_path(check_hash_queries), 16);
}

/* 8-byte keys, one by one (the path's XXH3 entry) and packed (its 8-byte
 * loop, also for a count that leaves a tail of 5 after groups of 8). */
static void check_8_byte_keys(const simd_case *c, amq_blocked *v, uint8_t *got)
{
    uint64_t cnt, exp = 0, i;
    for (i = 0; i < SIMD_NQ; i++)
        got[i] = (uint8_t)amq_blocked_contains(v, c->keys + i * 8, 8);
    CHECK(memcmp(got, c->want_k, SIMD_NQ) == 0);
    memset(got, 7, SIMD_NQ);
    cnt = t_blocked_contains_batch_fixed(v, c->keys, 8, SIMD_NQ, got);
    CHECK(memcmp(got, c->want_k, SIMD_NQ) == 0);
    for (i = 0; i < SIMD_NQ; i++)
        exp += c->want_k[i];
    CHECK_EQ(cnt, exp);
    CHECK_EQ(t_blocked_contains_batch_fixed(v, c->keys, 8, SIMD_NQ, NULL), exp);
    memset(got, 7, SIMD_NQ);
    t_blocked_contains_batch_fixed(v, c->keys + 16, 8, SIMD_NQ - 19, got);
    CHECK(memcmp(got, c->want_k + 2, SIMD_NQ - 19) == 0);
    CHECK_EQ(got[SIMD_NQ - 19], 7);
}

TEST(blocked_every_path_answers_8_byte_keys_as_their_hash)
{
    CHECK_GE(each_k_and_path(check_8_byte_keys), 16);
}

/* 7-byte keys take the generic one-key entry on every path. */
static void check_7_byte_keys(const simd_case *c, amq_blocked *v, uint8_t *got)
{
    uint64_t i;
    (void)got;
    for (i = 0; i < 100; i++)
        CHECK_EQ(amq_blocked_contains(v, c->keys + i * 8, 7),
                 amq_blocked_contains_hash(c->b, amq_blocked_hash(c->b, c->keys + i * 8, 7)));
}

TEST(blocked_every_path_answers_7_byte_keys_as_their_hash)
{
    CHECK_GE(each_k_and_path(check_7_byte_keys), 16);
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

/* 64-bit hashes x stand for {x, x}: filters of 64 blocks (4 KiB) and 40000
 * (2.5 MiB; 8000 under ASan, both below AMQ_BLK_FAR_BYTES, so the same
 * paths), every k, filled so that about 30 % of random queries answer
 * "maybe" (a fraction 0.3^(1/k) of the bits set). */
static const uint64_t h64_sizes[] = {64, UNDER_SAN ? 8000 : 40000};
#define H64_NQ 4001u

static amq_blocked_params h64_params(uint32_t si, uint32_t k)
{
    amq_blocked_params prm;
    memset(&prm, 0, sizeof prm);
    prm.blocks = h64_sizes[si];
    prm.k = k;
    prm.hash_algo = AMQ_HASH_XXH3;
    return prm;
}

static uint64_t h64_fill_count(const amq_blocked_params *prm)
{
    return (uint64_t)(-log(1.0 - pow(0.3, 1.0 / prm->k)) * (double)prm->blocks * 512 / prm->k);
}

/* The same fill through both add forms: the same answers, bytes and count. */
TEST(blocked_batch64_adds_equal_one_key_adds_of_x_x)
{
    uint64_t s = 0x64646464;
    uint32_t k, si;
    for (si = 0; si < 2; si++) {
        for (k = 1; k <= AMQ_BLOCKED_MAX_K; k++) {
            amq_blocked_params prm = h64_params(si, k);
            amq_blocked *a, *b;
            uint64_t *x = malloc(H64_NQ * sizeof *x), i, nadd = h64_fill_count(&prm);
            uint8_t *want = malloc(H64_NQ), *added = malloc(H64_NQ);
            REQUIRE(x != NULL && want != NULL && added != NULL);
            REQUIRE_OK(amq_blocked_new(&prm, NULL, &a));
            REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
            for (i = 0; i < nadd; i += H64_NQ) {
                size_t j, m = nadd - i < H64_NQ ? (size_t)(nadd - i) : H64_NQ;
                uint64_t fresh = 0;
                for (j = 0; j < m; j++) {
                    x[j] = test_rand(&s);
                    want[j] = (uint8_t)amq_blocked_add_hash(a, twice(x[j]));
                    fresh += want[j];
                }
                CHECK_EQ(t_blocked_add_batch64(b, x, m, added), (int64_t)fresh);
                CHECK(memcmp(added, want, m) == 0);
            }
            CHECK(memcmp(amq_blocked_data(a), amq_blocked_data(b), prm.blocks * 64) == 0);
            CHECK_EQ(amq_blocked_items(a), amq_blocked_items(b));
            amq_blocked_free(a);
            amq_blocked_free(b);
            free(x);
            free(want);
            free(added);
        }
    }
}

/* Every path's batch64, for even and odd counts, with and without the
 * output array (and for no keys), answers as one-key queries of {x, x}. */
TEST(blocked_batch64_queries_equal_one_key_queries_on_every_path)
{
    uint64_t s = 0x64646465;
    uint32_t k, pi, si;
    for (si = 0; si < 2; si++) {
        for (k = 1; k <= AMQ_BLOCKED_MAX_K; k++) {
            amq_blocked_params prm = h64_params(si, k);
            amq_blocked *a;
            uint64_t *x = malloc(H64_NQ * sizeof *x), i, nadd = h64_fill_count(&prm), want_n = 0;
            uint8_t *want = malloc(H64_NQ), *got = malloc(H64_NQ);
            REQUIRE(x != NULL && want != NULL && got != NULL);
            REQUIRE_OK(amq_blocked_new(&prm, NULL, &a));
            for (i = 0; i < nadd; i++)
                amq_blocked_add_hash(a, twice(test_rand(&s)));
            for (i = 0; i < H64_NQ; i++) {
                x[i] = test_rand(&s);
                want[i] = (uint8_t)amq_blocked_contains_hash(a, twice(x[i]));
                want_n += want[i];
            }
            CHECK(want_n > H64_NQ / 50 && want_n < H64_NQ - H64_NQ / 50);
            for (pi = 0; pi < 3; pi++) {
                size_t n;
                if (!amq_simd_supported(simd_paths[pi])) {
                    test_skip(amq_simd_name(simd_paths[pi]));
                    continue;
                }
                REQUIRE_OK(amq_blocked_set_simd(a, simd_paths[pi]));
                for (n = H64_NQ - 2; n <= H64_NQ; n++) { /* even and odd counts */
                    uint64_t e = 0;
                    memset(got, 7, H64_NQ);
                    for (i = 0; i < n; i++)
                        e += want[i];
                    CHECK_EQ(t_blocked_contains_batch64(a, x, n, got), e);
                    if (memcmp(got, want, n) != 0 || (n < H64_NQ && got[n] != 7))
                        FAIL_AT_("path %s k %u blocks %" PRIu64 " n %zu: answers differ",
                                 amq_simd_name(simd_paths[pi]), k, prm.blocks, n);
                    CHECK_EQ(t_blocked_contains_batch64(a, x, n, NULL), e);
                }
            }
            CHECK_EQ(t_blocked_contains_batch64(a, x, 0, got), 0);
            amq_blocked_free(a);
            free(x);
            free(want);
            free(got);
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
/* Filters far larger than the caches (40 MiB, k = 7; XXH3 seed 0, then
 * seed 9), where the batched loops' prefetch windows matter: FAR_N random
 * 8-byte keys and their hashes. */
#define FAR_N 40000u
typedef struct far_case {
    amq_blocked_params prm;
    uint8_t *keys; /* FAR_N * 8 */
    amq_hash128 *hs;
    uint64_t s;
} far_case;

static int far_case_init(far_case *c, uint32_t si, amq_blocked **first)
{
    uint64_t i;
    memset(c, 0, sizeof *c);
    c->s = 0xfa5 + si;
    c->prm.blocks = ((uint64_t)40 << 20) / 64;
    c->prm.k = 7;
    c->prm.hash_algo = AMQ_HASH_XXH3;
    c->prm.seed = si == 0 ? 0 : 9;
    c->keys = malloc(FAR_N * 8);
    c->hs = malloc(FAR_N * sizeof *c->hs);
    if (c->keys == NULL || c->hs == NULL || amq_blocked_new(&c->prm, NULL, first) != AMQ_OK) {
        free(c->keys);
        free(c->hs);
        return 0;
    }
    for (i = 0; i < FAR_N; i++) {
        amq_store64(c->keys + i * 8, test_rand(&c->s));
        c->hs[i] = amq_blocked_hash(*first, c->keys + i * 8, 8);
    }
    return 1;
}

static void far_case_free(far_case *c)
{
    free(c->keys);
    free(c->hs);
}

/* Packed keys with and without flags, and their hashes, set the same bytes;
 * 40000 keys in 655360 blocks are all new. */
TEST(blocked_far_filter_batched_adds_of_packed_keys_and_hashes_same_bytes)
{
    uint32_t si;
    for (si = 0; si < 2; si++) {
        far_case c;
        amq_blocked *a, *b, *d;
        uint8_t *flags = malloc(FAR_N);
        int64_t na;
        REQUIRE(flags != NULL && far_case_init(&c, si, &a));
        REQUIRE_OK(amq_blocked_new(&c.prm, NULL, &b));
        REQUIRE_OK(amq_blocked_new(&c.prm, NULL, &d));
        na = t_blocked_add_batch_fixed(a, c.keys, 8, FAR_N, flags);
        CHECK_EQ(na, (int64_t)FAR_N);
        CHECK_EQ(t_blocked_add_batch_fixed(b, c.keys, 8, FAR_N, NULL), na);
        CHECK_EQ(t_blocked_add_batch(d, c.hs, FAR_N, NULL), na);
        CHECK(memcmp(amq_blocked_data(a), amq_blocked_data(b), c.prm.blocks * 64) == 0);
        CHECK(memcmp(amq_blocked_data(a), amq_blocked_data(d), c.prm.blocks * 64) == 0);
        amq_blocked_free(a);
        amq_blocked_free(b);
        amq_blocked_free(d);
        free(flags);
        far_case_free(&c);
    }
}

/* 64-bit hashes, with and without flags, set the bytes of one-key adds of
 * {x, x}. */
TEST(blocked_far_filter_64_bit_hash_adds_equal_one_key_adds)
{
    uint32_t si;
    for (si = 0; si < 2; si++) {
        far_case c;
        amq_blocked *b, *d;
        uint8_t *flags = malloc(FAR_N);
        uint64_t *qx = malloc(FAR_N * sizeof *qx), i;
        REQUIRE(flags != NULL && qx != NULL && far_case_init(&c, si, &b));
        REQUIRE_OK(amq_blocked_new(&c.prm, NULL, &d));
        for (i = 0; i < FAR_N; i++) {
            qx[i] = test_rand(&c.s);
            amq_blocked_add_hash(b, twice(qx[i]));
        }
        CHECK_EQ(t_blocked_add_batch64(d, qx, FAR_N, NULL), (int64_t)FAR_N);
        CHECK(memcmp(amq_blocked_data(b), amq_blocked_data(d), c.prm.blocks * 64) == 0);
        REQUIRE_OK(amq_blocked_clear(d));
        CHECK_EQ(t_blocked_add_batch64(d, qx, FAR_N, flags), (int64_t)FAR_N);
        CHECK(memcmp(amq_blocked_data(b), amq_blocked_data(d), c.prm.blocks * 64) == 0);
        amq_blocked_free(b);
        amq_blocked_free(d);
        free(flags);
        free(qx);
        far_case_free(&c);
    }
}

/* Every other packed key queried was added: every path's batched queries of
 * packed keys and of hashes, with and without the output array, answer as
 * one-key queries on the scalar path. */
TEST(blocked_far_filter_batched_key_and_hash_queries_equal_scalar_one_key_queries)
{
    uint32_t si, pi;
    for (si = 0; si < 2; si++) {
        far_case c;
        amq_blocked *a, *v;
        uint8_t *q = malloc(FAR_N * 8), *want = malloc(FAR_N), *got = malloc(FAR_N);
        amq_hash128 *qh = malloc(FAR_N * sizeof *qh);
        uint64_t i, e = 0;
        REQUIRE(q && want && got && qh && far_case_init(&c, si, &a));
        REQUIRE_EQ(t_blocked_add_batch_fixed(a, c.keys, 8, FAR_N, NULL), (int64_t)FAR_N);
        for (i = 0; i < FAR_N; i++) {
            if (i % 2 == 0)
                memcpy(q + i * 8, c.keys + i * 8, 8);
            else
                amq_store64(q + i * 8, test_rand(&c.s));
            qh[i] = amq_blocked_hash(a, q + i * 8, 8);
        }
        REQUIRE_OK(amq_blocked_set_simd(a, AMQ_SIMD_SCALAR));
        for (i = 0; i < FAR_N; i++) {
            want[i] = (uint8_t)amq_blocked_contains_hash(a, qh[i]);
            e += want[i];
        }
        CHECK(e >= FAR_N / 2 && e < FAR_N);
        for (pi = 0; pi < 3; pi++) {
            if (!amq_simd_supported(simd_paths[pi])) {
                test_skip(amq_simd_name(simd_paths[pi]));
                continue;
            }
            REQUIRE_OK(
                amq_blocked_view(&c.prm, amq_blocked_data(a), c.prm.blocks * 64, 0, NULL, &v));
            REQUIRE_OK(amq_blocked_set_simd(v, simd_paths[pi]));
            memset(got, 7, FAR_N);
            CHECK_EQ(t_blocked_contains_batch_fixed(v, q, 8, FAR_N, got), e);
            CHECK(memcmp(got, want, FAR_N) == 0);
            CHECK_EQ(t_blocked_contains_batch_fixed(v, q, 8, FAR_N, NULL), e);
            memset(got, 7, FAR_N);
            CHECK_EQ(t_blocked_contains_batch(v, qh, FAR_N, got), e);
            CHECK(memcmp(got, want, FAR_N) == 0);
            CHECK_EQ(t_blocked_contains_batch(v, qh, FAR_N, NULL), e);
            amq_blocked_free(v);
        }
        amq_blocked_free(a);
        free(q);
        free(want);
        free(got);
        free(qh);
        far_case_free(&c);
    }
}

/* Two in three of the 64-bit hashes queried were added: every path's
 * batch64, with and without the output array, answers as one-key queries of
 * {x, x} on the scalar path. */
TEST(blocked_far_filter_64_bit_hash_queries_equal_scalar_one_key_queries)
{
    uint32_t si, pi;
    for (si = 0; si < 2; si++) {
        far_case c;
        amq_blocked *b, *v;
        uint8_t *want64 = malloc(FAR_N), *got = malloc(FAR_N);
        uint64_t *qx = malloc(FAR_N * sizeof *qx), i, e64 = 0;
        REQUIRE(want64 && got && qx && far_case_init(&c, si, &b));
        for (i = 0; i < FAR_N; i++) {
            qx[i] = test_rand(&c.s);
            amq_blocked_add_hash(b, twice(qx[i]));
        }
        for (i = 0; i < FAR_N; i += 3)
            qx[i] = test_rand(&c.s);
        REQUIRE_OK(amq_blocked_set_simd(b, AMQ_SIMD_SCALAR));
        for (i = 0; i < FAR_N; i++) {
            want64[i] = (uint8_t)amq_blocked_contains_hash(b, twice(qx[i]));
            e64 += want64[i];
        }
        CHECK(e64 >= FAR_N / 2 && e64 < FAR_N);
        for (pi = 0; pi < 3; pi++) {
            if (!amq_simd_supported(simd_paths[pi])) {
                test_skip(amq_simd_name(simd_paths[pi]));
                continue;
            }
            REQUIRE_OK(
                amq_blocked_view(&c.prm, amq_blocked_data(b), c.prm.blocks * 64, 0, NULL, &v));
            REQUIRE_OK(amq_blocked_set_simd(v, simd_paths[pi]));
            memset(got, 7, FAR_N);
            CHECK_EQ(t_blocked_contains_batch64(v, qx, FAR_N, got), e64);
            CHECK(memcmp(got, want64, FAR_N) == 0);
            CHECK_EQ(t_blocked_contains_batch64(v, qx, FAR_N, NULL), e64);
            amq_blocked_free(v);
        }
        amq_blocked_free(b);
        free(want64);
        free(got);
        free(qx);
        far_case_free(&c);
    }
}

/* The batched forms against one-key adds and queries, in six cases: each
 * hash (XXH3, MurmurHash3, MurmurHash64A) with seed 5, then with seed 0
 * (XXH3's 8-byte keys have a loop and a one-key entry for each).  A case's
 * b1 is an overfilled filter that took BATCH_N 12-byte keys (with repeats)
 * one by one: added[i] is what add i returned, sl and hs the keys' slices
 * and hashes. */
#define BATCH_N 3000
#define BATCH_CASES 6
typedef struct batch_case {
    amq_blocked_params prm;
    amq_blocked *b1;
    uint8_t *keys; /* BATCH_N * 12 bytes */
    uint8_t *added;
    amq_slice *sl;
    amq_hash128 *hs;
    uint64_t s; /* the case's random state */
} batch_case;

static void batch_case_free(batch_case *c)
{
    amq_blocked_free(c->b1);
    free(c->keys);
    free(c->added);
    free(c->sl);
    free(c->hs);
}

static int batch_case_init(batch_case *c, size_t ai)
{
    const uint32_t algos[] = {AMQ_HASH_XXH3, AMQ_HASH_MURMUR3, AMQ_HASH_MURMUR64A};
    size_t i;
    memset(c, 0, sizeof *c);
    c->s = 77 + ai;
    c->keys = malloc(BATCH_N * 12);
    c->added = malloc(BATCH_N);
    c->sl = malloc(BATCH_N * sizeof *c->sl);
    c->hs = malloc(BATCH_N * sizeof *c->hs);
    if (c->keys == NULL || c->added == NULL || c->sl == NULL || c->hs == NULL ||
        amq_blocked_params_for(1000, 0.01, &c->prm) != AMQ_OK) /* overfilled: repeats */
        goto fail;
    c->prm.hash_algo = algos[ai % 3];
    c->prm.seed = ai < 3 ? 5 : 0;
    if (amq_blocked_new(&c->prm, NULL, &c->b1) != AMQ_OK)
        goto fail;
    for (i = 0; i < BATCH_N; i++) {
        amq_store64(c->keys + i * 12, test_rand(&c->s) % 2500); /* duplicates */
        amq_store32(c->keys + i * 12 + 8, 0);
        c->sl[i].data = c->keys + i * 12;
        c->sl[i].len = 12;
        c->hs[i] = amq_blocked_hash(c->b1, c->keys + i * 12, 12);
        c->added[i] = (uint8_t)amq_blocked_add(c->b1, c->keys + i * 12, 12);
    }
    return 1;
fail:
    batch_case_free(c);
    return 0;
}

/* Replaces the keys (not the filter) by other random ones, to query. */
static void batch_case_other_keys(batch_case *c)
{
    size_t i;
    for (i = 0; i < BATCH_N; i++)
        amq_store64(c->keys + i * 12, test_rand(&c->s));
}

/* b2 takes the keys as slices, b3 packed, b4 as hashes: each reports the
 * one-key adds' answers and count, and holds b1's bytes. */
TEST(blocked_batched_adds_of_slices_packed_keys_and_hashes_equal_one_key_adds)
{
    size_t ai;
    for (ai = 0; ai < BATCH_CASES; ai++) {
        batch_case c;
        amq_blocked *b2, *b3, *b4;
        uint8_t *a2 = malloc(BATCH_N);
        int64_t c2, c3, c4;
        REQUIRE(a2 != NULL && batch_case_init(&c, ai));
        REQUIRE_OK(amq_blocked_new(&c.prm, NULL, &b2));
        REQUIRE_OK(amq_blocked_new(&c.prm, NULL, &b3));
        REQUIRE_OK(amq_blocked_new(&c.prm, NULL, &b4));
        c2 = t_blocked_add_batch_keys(b2, c.sl, BATCH_N, a2);
        CHECK(memcmp(c.added, a2, BATCH_N) == 0);
        c3 = t_blocked_add_batch_fixed(b3, c.keys, 12, BATCH_N, NULL);
        c4 = t_blocked_add_batch(b4, c.hs, BATCH_N, a2);
        CHECK(memcmp(c.added, a2, BATCH_N) == 0);
        CHECK_EQ(c2, (int64_t)amq_blocked_items(c.b1));
        CHECK_EQ(c3, c2);
        CHECK_EQ(c4, c2);
        CHECK(memcmp(amq_blocked_data(c.b1), amq_blocked_data(b2), c.prm.blocks * 64) == 0);
        CHECK(memcmp(amq_blocked_data(c.b1), amq_blocked_data(b3), c.prm.blocks * 64) == 0);
        CHECK(memcmp(amq_blocked_data(c.b1), amq_blocked_data(b4), c.prm.blocks * 64) == 0);
        amq_blocked_free(b2);
        amq_blocked_free(b3);
        amq_blocked_free(b4);
        free(a2);
        batch_case_free(&c);
    }
}

TEST(blocked_batched_queries_of_slices_and_packed_keys_equal_one_key_queries)
{
    size_t ai, i;
    for (ai = 0; ai < BATCH_CASES; ai++) {
        batch_case c;
        uint8_t *o1 = malloc(BATCH_N), *o2 = malloc(BATCH_N), *o3 = malloc(BATCH_N);
        REQUIRE(o1 && o2 && o3 && batch_case_init(&c, ai));
        batch_case_other_keys(&c);
        for (i = 0; i < BATCH_N; i++)
            o1[i] = (uint8_t)amq_blocked_contains(c.b1, c.keys + i * 12, 12);
        CHECK_EQ(t_blocked_contains_batch_keys(c.b1, c.sl, BATCH_N, o2),
                 t_blocked_contains_batch_fixed(c.b1, c.keys, 12, BATCH_N, o3));
        CHECK(memcmp(o1, o2, BATCH_N) == 0);
        CHECK(memcmp(o1, o3, BATCH_N) == 0);
        free(o1);
        free(o2);
        free(o3);
        batch_case_free(&c);
    }
}

/* 8-byte keys take their own loop and one-key entry: the same answers as
 * their hash, one by one, packed and as slices. */
TEST(blocked_8_byte_key_queries_answer_as_their_hash)
{
    size_t ai, i;
    for (ai = 0; ai < BATCH_CASES; ai++) {
        batch_case c;
        uint8_t *o1 = malloc(BATCH_N), *o2 = malloc(BATCH_N), *o3 = malloc(BATCH_N);
        REQUIRE(o1 && o2 && o3 && batch_case_init(&c, ai));
        batch_case_other_keys(&c);
        for (i = 0; i < BATCH_N; i++) {
            o1[i] = (uint8_t)amq_blocked_contains_hash(c.b1,
                                                       amq_blocked_hash(c.b1, c.keys + i * 8, 8));
            CHECK_EQ(amq_blocked_contains(c.b1, c.keys + i * 8, 8), o1[i]);
            c.sl[i].data = c.keys + i * 8;
            c.sl[i].len = 8;
        }
        t_blocked_contains_batch_fixed(c.b1, c.keys, 8, BATCH_N, o3);
        t_blocked_contains_batch_keys(c.b1, c.sl, BATCH_N, o2);
        CHECK(memcmp(o1, o3, BATCH_N) == 0);
        CHECK(memcmp(o1, o2, BATCH_N) == 0);
        /* Tiny batches (shorter than the prefetch window) and empty ones. */
        CHECK_EQ(t_blocked_contains_batch_fixed(c.b1, c.keys, 8, 3, o3),
                 (uint64_t)o1[0] + o1[1] + o1[2]);
        CHECK_EQ(t_blocked_contains_batch_fixed(c.b1, c.keys, 8, 0, NULL), 0);
        CHECK_EQ(t_blocked_add_batch_fixed(c.b1, c.keys, 8, 0, NULL), 0);
        CHECK_EQ(t_blocked_contains_batch_fixed(c.b1, NULL, 8, 0, NULL), 0);
        CHECK_EQ(t_blocked_add_batch_fixed(c.b1, NULL, 8, 0, NULL), 0);
        free(o1);
        free(o2);
        free(o3);
        batch_case_free(&c);
    }
}

/* Packed 8-byte keys set the bits of their hashes and report the same new
 * keys, with and without the "added" array (the entries' NULL copies). */
TEST(blocked_packed_8_byte_key_adds_set_the_bits_of_their_hashes)
{
    size_t ai, i;
    for (ai = 0; ai < BATCH_CASES; ai++) {
        batch_case c;
        amq_blocked *b4, *b5;
        uint8_t *a1 = malloc(BATCH_N), *a2 = malloc(BATCH_N);
        int64_t c3, c4;
        REQUIRE(a1 && a2 && batch_case_init(&c, ai));
        batch_case_other_keys(&c);
        REQUIRE_OK(amq_blocked_new(&c.prm, NULL, &b4));
        REQUIRE_OK(amq_blocked_new(&c.prm, NULL, &b5));
        for (i = 0; i < BATCH_N; i++)
            c.hs[i] = amq_blocked_hash(b5, c.keys + i * 8, 8);
        c3 = t_blocked_add_batch_fixed(b5, c.keys, 8, BATCH_N, a1);
        c4 = t_blocked_add_batch(b4, c.hs, BATCH_N, a2);
        CHECK_EQ(c3, c4);
        CHECK(memcmp(a1, a2, BATCH_N) == 0);
        CHECK(memcmp(amq_blocked_data(b4), amq_blocked_data(b5), c.prm.blocks * 64) == 0);
        REQUIRE_OK(amq_blocked_clear(b4));
        REQUIRE_OK(amq_blocked_clear(b5));
        CHECK_EQ(t_blocked_add_batch_fixed(b5, c.keys, 8, BATCH_N, NULL), c3);
        CHECK_EQ(t_blocked_add_batch(b4, c.hs, BATCH_N, NULL), c3);
        CHECK(memcmp(amq_blocked_data(b4), amq_blocked_data(b5), c.prm.blocks * 64) == 0);
        amq_blocked_free(b4);
        amq_blocked_free(b5);
        free(a1);
        free(a2);
        batch_case_free(&c);
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
                if (pi < 2 && !amq_simd_supported(paths[pi])) {
                    test_skip(amq_simd_name(paths[pi]));
                    continue;
                }
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
        if (!amq_simd_supported(paths[pi])) {
            test_skip(amq_simd_name(paths[pi]));
            continue;
        }
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

TEST(blocked_kind_name_round_trips)
{
    uint32_t kind;

    CHECK_STR(amq_kind_name(AMQ_KIND_BLOCKED), "blocked");
    REQUIRE_OK(amq_kind_from_name("blocked", &kind));
    CHECK_EQ(kind, AMQ_KIND_BLOCKED);
}

/* A blocked filter for 5000 keys (murmur3, seed 42) holding the 5000 keys
 * drawn from seed 11. */
static amq_filter *generic_5000(void)
{
    amq_filter *f = generic(5000, 0.01, AMQ_HASH_MURMUR3, 42);
    uint64_t i, s = 11;
    uint8_t key[8];

    if (f == NULL)
        return NULL;
    for (i = 0; i < 5000; i++) {
        key_bytes(test_rand(&s), key);
        CHECK(amq_filter_add(f, key, 8) >= 0);
    }
    return f;
}

/* f serialized at a 64-byte boundary (*aligned, *written bytes) inside the
 * returned malloc'd block, which has 64 spare bytes; NULL on failure. */
static uint8_t *serialize_at_64(const amq_filter *f, uint8_t **aligned, size_t *written)
{
    uint64_t size;
    uint8_t *buf;
    int rc;

    if ((rc = amq_filter_serialized_size(f, &size)) != AMQ_OK) {
        FAIL_AT_("serialized_size: %d", rc);
        return NULL;
    }
    buf = malloc((size_t)size + 64);
    if (buf == NULL)
        return NULL;
    *aligned = buf + (64 - ((uintptr_t)buf & 63)) % 64;
    if ((rc = amq_filter_serialize(f, *aligned, (size_t)size, written)) != AMQ_OK) {
        FAIL_AT_("serialize: %d", rc);
        free(buf);
        return NULL;
    }
    if (*written != size)
        FAIL_AT_("serialize wrote %zu of %" PRIu64 " bytes", *written, size);
    return buf;
}

TEST(blocked_generic_stats_after_5000_adds)
{
    amq_filter *f = generic_5000();
    amq_stats st;

    REQUIRE(f != NULL);
    amq_filter_stats(f, &st);
    CHECK_EQ(st.kind, AMQ_KIND_BLOCKED);
    CHECK_EQ(st.hash_algo, AMQ_HASH_MURMUR3);
    CHECK_EQ(st.seed, 42);
    CHECK(st.items > 4900 && st.items <= 5000);
    CHECK_EQ(st.capacity, 5000);
    CHECK(st.fpp_target <= 0.01);
    CHECK(st.fpp_now > 0.003 && st.fpp_now < 0.02);
    amq_filter_free(f);
}

/* The loaded copy and the borrowed view answer like the original, the
 * view alone is read-only, and the copy keeps the hash and seed. */
TEST(blocked_generic_copy_and_view_answer_like_the_original)
{
    amq_filter *f = generic_5000(), *g, *v;
    uint64_t i, s = 11;
    uint8_t key[8], *buf, *aligned;
    size_t written;
    amq_stats st;

    REQUIRE(f != NULL);
    buf = serialize_at_64(f, &aligned, &written);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_deserialize(aligned, written, 0, NULL, &g, NULL));
    REQUIRE_OK(amq_filter_deserialize(aligned, written, AMQ_OPEN_MMAP, NULL, &v, NULL));
    CHECK_EQ(amq_filter_is_readonly(g), 0);
    CHECK_EQ(amq_filter_is_readonly(v), 1);
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
    free(buf);
    amq_filter_free(f);
}

TEST(blocked_generic_misaligned_buffer_loads_as_a_copy)
{
    amq_filter *f = generic_5000(), *g;
    uint8_t key[8], *buf, *aligned;
    size_t written;

    REQUIRE(f != NULL);
    buf = serialize_at_64(f, &aligned, &written);
    REQUIRE(buf != NULL);
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
 * is seen by the next query; a borrowed view refuses adds and answers.
 * One case: a hash, a seed, concurrent mode or not, a key length; filter a
 * took 3000 one-key adds, filter b the same keys through add_hash. */
typedef struct {
    uint32_t algo, seed, conc;
    size_t len;
    amq_filter *a, *b;
    size_t bad; /* the first key whose adds differed or was not found after, or 3000 */
    int ra, rb;
} one_key_case;

#define ONE_KEY_CASES 40 /* 2 hashes x 2 seeds x 2 modes x 5 lengths */

/* The key a one-key test uses for x: 8, 16 and 33 bytes differ from x's. */
static void one_key_words(uint64_t words[5], uint64_t x)
{
    words[0] = x;
    words[1] = x ^ 0x55;
    words[4] = x * 7;
}

static void one_key_case_free(one_key_case *k)
{
    amq_filter_free(k->a);
    amq_filter_free(k->b);
}

static int one_key_case_make(unsigned c, one_key_case *k)
{
    static const uint32_t algos[] = {AMQ_HASH_XXH3, AMQ_HASH_MURMUR3};
    static const size_t lens[] = {8, 16, 12, 0, 33};
    uint64_t s = 5 + c % 5, words[5] = {0, 0, 0, 0, 0};
    size_t i;
    int rc;

    k->algo = algos[c / 20];
    k->seed = (c / 10) % 2;
    k->conc = (c / 5) % 2;
    k->len = lens[c % 5];
    k->a = generic(2000, 0.01, k->algo, k->seed * 99);
    k->b = generic(2000, 0.01, k->algo, k->seed * 99);
    k->bad = 3000;
    k->ra = k->rb = 0;
    if (k->a == NULL || k->b == NULL) {
        FAIL_AT_("case %u: no filters", c);
        one_key_case_free(k);
        return 0;
    }
    if ((rc = amq_filter_set_concurrent(k->a, (int)k->conc)) != AMQ_OK) {
        FAIL_AT_("case %u: set_concurrent %d", c, rc);
        one_key_case_free(k);
        return 0;
    }
    for (i = 0; i < 3000; i++) {
        one_key_words(words, test_rand(&s) % 2000); /* repeats: "not new" too */
        k->ra = amq_filter_add(k->a, words, k->len);
        k->rb = amq_filter_add_hash(k->b, amq_filter_hash(k->b, words, k->len));
        if (k->ra != k->rb || amq_filter_contains(k->a, words, k->len) != 1) {
            k->bad = i;
            break;
        }
    }
    return 1;
}

/* a serialized at a 64-byte boundary (aligned_alloc'd); its length in *w. */
static uint8_t *one_key_bytes(const amq_filter *a, size_t *w)
{
    uint64_t size;
    uint8_t *buf;

    if (amq_filter_serialized_size(a, &size) != AMQ_OK)
        return NULL;
    buf = aligned_alloc(64, ((size_t)size + 63) & ~(size_t)63);
    if (buf != NULL && amq_filter_serialize(a, buf, (size_t)size, w) != AMQ_OK) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

TEST(blocked_generic_one_key_add_answers_like_add_hash_and_is_found_after)
{
    unsigned c;
    one_key_case k;

    for (c = 0; c < ONE_KEY_CASES; c++) {
        REQUIRE(one_key_case_make(c, &k));
        if (k.bad < 3000)
            FAIL_AT_("algo %u seed %u concurrent %u len %zu key %zu: add %d, "
                     "add_hash %d, or not found after its add",
                     k.algo, k.seed, k.conc, k.len, k.bad, k.ra, k.rb);
        one_key_case_free(&k);
    }
}

TEST(blocked_generic_one_key_query_answers_like_contains_hash)
{
    unsigned c;
    size_t i;
    one_key_case k;
    uint64_t s, words[5] = {0, 0, 0, 0, 0};

    for (c = 0; c < ONE_KEY_CASES; c++) {
        REQUIRE(one_key_case_make(c, &k));
        s = 1000;
        for (i = 0; i < 3000; i++) {
            one_key_words(words, test_rand(&s));
            CHECK_EQ(amq_filter_contains(k.a, words, k.len),
                     amq_filter_contains_hash(k.b, amq_filter_hash(k.b, words, k.len)));
        }
        one_key_case_free(&k);
    }
}

TEST(blocked_generic_one_key_adds_count_items_like_add_hash)
{
    unsigned c;
    one_key_case k;
    amq_stats sta, stb;

    for (c = 0; c < ONE_KEY_CASES; c++) {
        REQUIRE(one_key_case_make(c, &k));
        amq_filter_stats(k.a, &sta);
        amq_filter_stats(k.b, &stb);
        CHECK_EQ(sta.items, stb.items);
        one_key_case_free(&k);
    }
}

TEST(blocked_generic_one_key_adds_write_the_bytes_of_add_hash)
{
    unsigned c;
    one_key_case k;
    uint64_t sa, sb;
    uint8_t *ba, *bb;
    size_t wa, wb;

    for (c = 0; c < ONE_KEY_CASES; c++) {
        REQUIRE(one_key_case_make(c, &k));
        REQUIRE_OK(amq_filter_serialized_size(k.a, &sa));
        REQUIRE_OK(amq_filter_serialized_size(k.b, &sb));
        REQUIRE(sa == sb);
        ba = one_key_bytes(k.a, &wa);
        bb = one_key_bytes(k.b, &wb);
        REQUIRE(ba != NULL && bb != NULL);
        CHECK(wa == wb && memcmp(ba, bb, wa) == 0);
        free(ba);
        free(bb);
        one_key_case_free(&k);
    }
}

TEST(blocked_generic_one_key_view_refuses_adds_and_finds_its_keys)
{
    unsigned c;
    one_key_case k;
    amq_filter *v;
    uint64_t s, words[5] = {0, 0, 0, 0, 0};
    uint8_t *ba;
    size_t wa;

    for (c = 0; c < ONE_KEY_CASES; c++) {
        REQUIRE(one_key_case_make(c, &k));
        ba = one_key_bytes(k.a, &wa);
        REQUIRE(ba != NULL);
        REQUIRE_OK(amq_filter_deserialize(ba, wa, AMQ_OPEN_MMAP, NULL, &v, NULL));
        CHECK_EQ(amq_filter_is_readonly(v), 1);
        s = 1000; /* a key of the query draws: most likely new */
        one_key_words(words, test_rand(&s));
        CHECK_STATUS(amq_filter_add(v, words, k.len), AMQ_EREADONLY);
        s = 5 + c % 5; /* the first key added */
        one_key_words(words, test_rand(&s) % 2000);
        CHECK_EQ(amq_filter_contains(v, words, k.len), 1);
        amq_filter_free(v);
        free(ba);
        one_key_case_free(&k);
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

/* A serialized blocked filter forged from its fields: the parameter block
 * (params_len of its 32 bytes) and a payload of payload_len bytes of 4
 * blocks with one bit set. */
static uint8_t *forge_blocked(uint64_t blocks, uint32_t k, uint32_t scheme, double fpp,
                              size_t params_len, size_t payload_len, size_t *len)
{
    uint8_t params[32], payload[64 * 4];
    memset(payload, 0, sizeof payload);
    payload[3] = 0x10;
    amq_store64(params, blocks);
    amq_store32(params + 8, k);
    amq_store32(params + 12, scheme);
    amq_store64(params + 16, 100);
    amq_storef64(params + 24, fpp);
    return forge(params, (uint32_t)params_len, payload, payload_len, len);
}

TEST(blocked_forged_file_loads_and_every_truncation_is_refused)
{
    size_t len, cut;
    amq_filter *f;
    amq_errinfo err;
    uint8_t *buf = forge_blocked(4, 7, 0, 0.01, 32, 256, &len);

    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_deserialize(buf, len, 0, NULL, &f, &err));
    amq_filter_free(f);
    for (cut = 0; cut < len; cut += 7) {
        int rc = amq_filter_deserialize(buf, cut, 0, NULL, &f, &err);
        if (rc == AMQ_OK) {
            FAIL_AT_("accepted %zu of %zu bytes", cut, len);
            amq_filter_free(f);
        }
    }
    free(buf);
}

TEST(blocked_flipped_payload_bit_fails_the_checksum_unless_trusted)
{
    size_t len;
    amq_filter *f;
    amq_errinfo err;
    uint8_t *buf = forge_blocked(4, 7, 0, 0.01, 32, 256, &len);

    REQUIRE(buf != NULL);
    buf[len - 1] ^= 1;
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), AMQ_ECHECKSUM);
    REQUIRE_OK(amq_filter_deserialize(buf, len, AMQ_OPEN_TRUST, NULL, &f, &err));
    amq_filter_free(f);
    free(buf);
}

TEST(blocked_bad_parameter_blocks_refused)
{
    static const struct {
        uint64_t blocks;
        uint32_t k, scheme;
        double fpp;
        size_t params_len, payload_len;
        int want;
    } cases[] = {
        {5, 7, 0, 0.01, 32, 256, AMQ_ECORRUPT},                   /* payload holds 4 blocks */
        {4, 0, 0, 0.01, 32, 256, AMQ_ECORRUPT},                   /* k = 0 */
        {4, 17, 0, 0.01, 32, 256, AMQ_ECORRUPT},                  /* k > 16 */
        {4, 7, 1, 0.01, 32, 256, AMQ_EVERSION},                   /* unknown probe scheme */
        {4, 7, 0, 1.5, 32, 256, AMQ_ECORRUPT},                    /* fpp outside (0, 1) */
        {0, 7, 0, 0.01, 32, 0, AMQ_ECORRUPT},                     /* no blocks */
        {UINT64_C(1) << 60, 7, 0, 0.01, 32, 256, AMQ_ECORRUPT},   /* too many blocks */
        {4, 7, 0, 0.01, 31, 256, AMQ_ECORRUPT},                   /* short parameter block */
    };
    size_t c, len;
    amq_filter *f;
    amq_errinfo err;

    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t *buf = forge_blocked(cases[c].blocks, cases[c].k, cases[c].scheme, cases[c].fpp,
                                     cases[c].params_len, cases[c].payload_len, &len);
        REQUIRE(buf != NULL);
        CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &f, &err), cases[c].want);
        free(buf);
    }
}

TEST(blocked_generic_merge)
{
    amq_filter *a, *b, *c;
    amq_errinfo err;
    amq_stats st;
    uint8_t key[8];
    uint64_t i;
    int hits;

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
    /* (A u B) & B holds B's bits exactly: B's keys stay, A's leave but for
     * false positives, and the count is estimated near |B|. */
    REQUIRE_OK(amq_filter_intersect(a, b, &err));
    hits = 0;
    for (i = 0; i < 1000; i++) {
        key_bytes(i + 5000, key);
        CHECK_EQ(amq_filter_contains(a, key, 8), 1);
        key_bytes(i, key);
        hits += amq_filter_contains(a, key, 8);
    }
    CHECK(hits < 50);
    amq_filter_stats(a, &st);
    CHECK(st.items >= 900 && st.items <= 1000);
    c = generic(2000, 0.01, AMQ_HASH_XXH3, 0);
    CHECK_STATUS(amq_filter_intersect(a, c, &err), AMQ_EINCOMPAT);
    amq_filter_free(c);
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
