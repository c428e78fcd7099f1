/*
 * test_bloom.c - the classic Bloom filter and the LevelDB-style policy.
 */
#include "amq.h"
#include "batch.h"
#include "test.h"

static uint64_t key_of(uint64_t i, uint8_t buf[8])
{
    int b;
    for (b = 0; b < 8; b++)
        buf[b] = (uint8_t)(i >> (8 * b));
    return i;
}

TEST(sizing_matches_guava)
{
    uint64_t bits;
    uint32_t k;
    REQUIRE_OK(amq_bloom_bits_for(1000000, 0.01, &bits, &k));
    CHECK_EQ(bits, 9585058);
    CHECK_EQ(k, 7);
    REQUIRE_OK(amq_bloom_bits_for(1000, 0.03, &bits, &k));
    CHECK_EQ(bits, 7298); /* floor(-1000 ln 0.03 / ln^2 2) = floor(7298.44) */
    CHECK_EQ(k, 5);
    REQUIRE_OK(amq_bloom_bits_for(1, 0.5, &bits, &k));
    CHECK_EQ(bits, 1);
    CHECK_EQ(k, 1);
    CHECK_STATUS(amq_bloom_bits_for(0, 0.01, &bits, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_bloom_bits_for(10, 0.0, &bits, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_bloom_bits_for(10, 1.0, &bits, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_bloom_bits_for(10, -0.5, &bits, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_bloom_bits_for(10, NAN, &bits, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_bloom_bits_for(UINT64_C(1) << 62, 0.01, &bits, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_bloom_bits_for(UINT64_MAX, 1e-300, &bits, &k), AMQ_ERANGE);
}

TEST(sizing_by_bits_per_key_matches_leveldb)
{
    uint64_t bits;
    uint32_t k;
    REQUIRE_OK(amq_bloom_bits_for_bpk(1000, 10, &bits, &k));
    CHECK_EQ(bits, 10000);
    CHECK_EQ(k, 6); /* floor(10 * 0.69) */
    REQUIRE_OK(amq_bloom_bits_for_bpk(3, 10, &bits, &k));
    CHECK_EQ(bits, 64); /* at least 64 */
    REQUIRE_OK(amq_bloom_bits_for_bpk(10, 1, &bits, &k));
    CHECK_EQ(k, 1); /* clamped up */
    REQUIRE_OK(amq_bloom_bits_for_bpk(10, 100, &bits, &k));
    CHECK_EQ(k, 30); /* clamped down */
    CHECK_STATUS(amq_bloom_bits_for_bpk(10, 0, &bits, &k), AMQ_ERANGE);
    CHECK_STATUS(amq_bloom_bits_for_bpk(0, 10, &bits, &k), AMQ_ERANGE);
}

static void fpp_case(uint64_t n, double p, uint64_t seed)
{
    amq_bloom_params prm;
    amq_bloom *b;
    uint8_t key[8];
    uint64_t i, fp = 0, absent = 1000000, st = seed;
    double measured;

    REQUIRE_OK(amq_bloom_params_for(n, p, &prm));
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &b));
    /* Present keys are even numbers after a random bijection, absent ones odd. */
    for (i = 0; i < n; i++) {
        key_of((test_rand(&st) & ~UINT64_C(1)), key);
        (void)amq_bloom_add(b, key, 8);
    }
    st = seed;
    for (i = 0; i < n; i++) {
        key_of((test_rand(&st) & ~UINT64_C(1)), key);
        if (!amq_bloom_contains(b, key, 8)) {
            FAIL_AT_("false negative at key %llu (seed %llu)", (unsigned long long)i,
                     (unsigned long long)seed);
            break;
        }
    }
    for (i = 0; i < absent; i++) {
        key_of(test_rand(&st) | 1, key);
        fp += (uint64_t)amq_bloom_contains(b, key, 8);
    }
    measured = (double)fp / (double)absent;
    if (fabs(measured - p) > 0.15 * p)
        FAIL_AT_("n=%llu p=%g: measured false-positive rate %g outside +-15%% (seed %llu)",
                 (unsigned long long)n, p, measured, (unsigned long long)seed);
    CHECK_NEAR_REL(amq_bloom_fpp_now(b), p, 0.15);
    amq_bloom_free(b);
}

TEST(fpp_within_15_percent_n1e5)
{
    fpp_case(100000, 0.1, 1);
    fpp_case(100000, 0.01, 2);
    fpp_case(100000, 0.001, 3);
}

SLOW_TEST(fpp_within_15_percent_n1e6)
{
    fpp_case(1000000, 0.1, 4);
    fpp_case(1000000, 0.01, 5);
    fpp_case(1000000, 0.001, 6);
}

TEST(add_reports_new_bits_and_counts)
{
    amq_bloom_params prm;
    amq_bloom *b;

    REQUIRE_OK(amq_bloom_params_for(1000, 0.01, &prm));
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &b));
    CHECK_EQ(amq_bloom_contains(b, "x", 1), 0);
    CHECK_EQ(amq_bloom_add(b, "x", 1), 1);
    CHECK_EQ(amq_bloom_add(b, "x", 1), 0);
    CHECK_EQ(amq_bloom_contains(b, "x", 1), 1);
    CHECK_EQ(amq_bloom_items(b), 1);
    CHECK_EQ(amq_bloom_bits_set(b), prm.k); /* k distinct bits, almost surely */
    REQUIRE_OK(amq_bloom_clear(b));
    CHECK_EQ(amq_bloom_contains(b, "x", 1), 0);
    CHECK_EQ(amq_bloom_items(b), 0);
    CHECK_EQ(amq_bloom_bits_set(b), 0);
    amq_bloom_free(b);
    amq_bloom_free(NULL);
}

TEST(estimate_and_fill)
{
    amq_bloom_params prm;
    amq_bloom *b;
    uint8_t key[8];
    uint64_t i, st = 99;

    REQUIRE_OK(amq_bloom_params_for(50000, 0.01, &prm));
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &b));
    for (i = 0; i < 50000; i++) {
        key_of(test_rand(&st), key);
        (void)amq_bloom_add(b, key, 8);
    }
    CHECK_NEAR_REL(amq_bloom_estimate_items(b), 50000.0, 0.02);
    CHECK_NEAR_REL((double)amq_bloom_bits_set(b) / (double)prm.bits,
                   1.0 - exp(-(double)prm.k * 50000.0 / (double)prm.bits), 0.01);
    CHECK_NEAR_REL(amq_bloom_fpp_now(b), amq_bloom_fpp_theory(prm.bits, prm.k, 50000), 0.1);
    amq_bloom_free(b);
}

TEST(union_and_intersection)
{
    amq_bloom_params prm, other;
    amq_bloom *a, *b, *c;
    char key[32];
    int i, n;

    REQUIRE_OK(amq_bloom_params_for(10000, 0.01, &prm));
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &a));
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &b));
    for (i = 0; i < 3000; i++) {
        n = snprintf(key, sizeof key, "a%d", i);
        amq_bloom_add(a, key, (size_t)n);
        n = snprintf(key, sizeof key, "b%d", i);
        amq_bloom_add(b, key, (size_t)n);
        if (i < 1000) {
            n = snprintf(key, sizeof key, "both%d", i);
            amq_bloom_add(a, key, (size_t)n);
            amq_bloom_add(b, key, (size_t)n);
        }
    }
    REQUIRE_OK(amq_bloom_clone(a, NULL, &c));
    REQUIRE_OK(amq_bloom_merge(c, b));
    for (i = 0; i < 3000; i++) {
        n = snprintf(key, sizeof key, "a%d", i);
        CHECK(amq_bloom_contains(c, key, (size_t)n));
        n = snprintf(key, sizeof key, "b%d", i);
        CHECK(amq_bloom_contains(c, key, (size_t)n));
    }
    amq_bloom_free(c);
    REQUIRE_OK(amq_bloom_clone(a, NULL, &c));
    REQUIRE_OK(amq_bloom_intersect(c, b));
    for (i = 0; i < 1000; i++) {
        n = snprintf(key, sizeof key, "both%d", i);
        CHECK(amq_bloom_contains(c, key, (size_t)n));
    }
    CHECK_NEAR_REL((double)amq_bloom_items(c), 1000.0, 0.15);
    amq_bloom_free(c);

    other = prm;
    other.seed = 1;
    REQUIRE_OK(amq_bloom_new(&other, NULL, &c));
    CHECK_STATUS(amq_bloom_merge(a, c), AMQ_EINCOMPAT);
    CHECK_STATUS(amq_bloom_intersect(a, c), AMQ_EINCOMPAT);
    amq_bloom_free(c);
    other = prm;
    other.bits += 1;
    REQUIRE_OK(amq_bloom_new(&other, NULL, &c));
    CHECK_STATUS(amq_bloom_merge(a, c), AMQ_EINCOMPAT);
    amq_bloom_free(c);
    amq_bloom_free(a);
    amq_bloom_free(b);
}

/* Guava's MURMUR128_MITZ_64 strategy: "key0" in a filter for n = 1e6,
 * p = 0.01 (9,585,088 bits, 7 probes) sets these bits (issue 6 vector). */
TEST(guava_probe_vector)
{
    static const uint64_t want[7] = {8592072, 9217674, 2922380, 6212174,
                                     6837776, 542482,  3832276};
    amq_bloom_params prm = {0};
    amq_bloom *b;
    int i;

    prm.bits = 149767 * 64;
    prm.k = 7;
    prm.probe = AMQ_BLOOM_PROBE_GUAVA;
    prm.hash_algo = AMQ_HASH_MURMUR3;
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &b));
    REQUIRE_OK(amq_bloom_add(b, "key0", 4) == 1 ? 0 : -1);
    for (i = 0; i < 7; i++)
        CHECK((amq_bloom_data(b)[want[i] >> 3] >> (want[i] & 7)) & 1);
    CHECK_EQ(amq_bloom_bits_set(b), 7);
    amq_bloom_free(b);
}

/* RedisBloom's probes: bit (h1 + i h2) mod m, byte x >> 3, mask 1 << (x & 7). */
TEST(redisbloom_probes)
{
    amq_bloom_params prm = {0};
    amq_bloom *b;
    amq_hash128 h;
    uint64_t i, x;

    prm.bits = 791040;
    prm.k = 11;
    prm.probe = AMQ_BLOOM_PROBE_REDISBLOOM;
    prm.hash_algo = AMQ_HASH_REDISBLOOM;
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &b));
    CHECK_EQ(amq_bloom_add(b, "item1", 5), 1);
    h = amq_hash_key(AMQ_HASH_REDISBLOOM, 0, "item1", 5);
    for (i = 0; i < 11; i++) {
        x = (h.h1 + i * h.h2) % 791040;
        CHECK((amq_bloom_data(b)[x >> 3] >> (x & 7)) & 1);
    }
    CHECK_LE(amq_bloom_bits_set(b), 11);
    amq_bloom_free(b);
}

TEST(views_are_read_only)
{
    amq_bloom_params prm;
    amq_bloom *b, *v;

    REQUIRE_OK(amq_bloom_params_for(100, 0.01, &prm));
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &b));
    amq_bloom_add(b, "k", 1);
    CHECK_STATUS(amq_bloom_view(&prm, amq_bloom_data(b), 3, 1, NULL, &v), AMQ_EINVAL);
    REQUIRE_OK(amq_bloom_view(&prm, amq_bloom_data(b), amq_bloom_data_size(&prm), 1, NULL, &v));
    CHECK(amq_bloom_is_readonly(v));
    CHECK_EQ(amq_bloom_contains(v, "k", 1), 1);
    CHECK_STATUS(amq_bloom_add(v, "j", 1), AMQ_EREADONLY);
    CHECK_STATUS(amq_bloom_clear(v), AMQ_EREADONLY);
    CHECK(amq_bloom_data_mut(v) == NULL);
    amq_bloom_free(v);
    amq_bloom_free(b);
}

TEST(bad_parameters)
{
    amq_bloom_params prm = {0};
    amq_bloom *b = (amq_bloom *)1;

    prm.bits = 0;
    prm.k = 3;
    prm.hash_algo = AMQ_HASH_XXH3;
    CHECK_STATUS(amq_bloom_new(&prm, NULL, &b), AMQ_ERANGE);
    CHECK(b == NULL);
    prm.bits = AMQ_BLOOM_MAX_BITS + 1;
    CHECK_STATUS(amq_bloom_new(&prm, NULL, &b), AMQ_ERANGE);
    prm.bits = 100;
    prm.k = 0;
    CHECK_STATUS(amq_bloom_new(&prm, NULL, &b), AMQ_ERANGE);
    prm.k = 256;
    CHECK_STATUS(amq_bloom_new(&prm, NULL, &b), AMQ_ERANGE);
    prm.k = 3;
    prm.probe = 7;
    CHECK_STATUS(amq_bloom_new(&prm, NULL, &b), AMQ_EINVAL);
    prm.probe = 0;
    prm.hash_algo = 42;
    CHECK_STATUS(amq_bloom_new(&prm, NULL, &b), AMQ_EHASH);
}

/* Above 2^32 bits (512 MiB): the 64-bit indexes reach the upper part. */
SLOW_TEST(above_four_gigabits)
{
    amq_bloom_params prm = {0};
    amq_bloom *b;
    uint8_t key[8];
    uint64_t i, st = 7, high = 0, words, w;
    const uint8_t *d;

    prm.bits = (UINT64_C(1) << 32) + 4096;
    prm.k = 4;
    prm.hash_algo = AMQ_HASH_XXH3;
    REQUIRE_OK(amq_bloom_new(&prm, NULL, &b));
    for (i = 0; i < 200000; i++) {
        key_of(test_rand(&st), key);
        amq_bloom_add(b, key, 8);
    }
    st = 7;
    for (i = 0; i < 200000; i++) {
        key_of(test_rand(&st), key);
        if (!amq_bloom_contains(b, key, 8)) {
            FAIL_AT_("false negative above 4 Gbit");
            break;
        }
    }
    d = amq_bloom_data(b);
    words = amq_bloom_data_size(&prm) / 8;
    for (i = (UINT64_C(1) << 32) / 64; i < words; i++) {
        memcpy(&w, d + i * 8, 8);
        high += (uint64_t)__builtin_popcountll(w);
    }
    /* About 200000 * 4 * 4096 / 2^32 ~ 0.76 expected in the last 4096 bits;
     * count the upper half instead: about 400000. */
    for (i = (UINT64_C(1) << 31) / 64; i < (UINT64_C(1) << 32) / 64; i++) {
        memcpy(&w, d + i * 8, 8);
        high += (uint64_t)__builtin_popcountll(w);
    }
    CHECK_GT(high, 350000);
    amq_bloom_free(b);
}

/* ---- LevelDB-style policy -------------------------------------------------- */

/* A blob built by LevelDB's BloomFilterPolicy(12) from these four keys
 * (the golden value of the rusty-leveldb port's test). */
TEST(policy_leveldb_golden_blob)
{
    static const uint8_t want[9] = {194, 148, 129, 140, 192, 196, 132, 164, 8};
    amq_slice keys[4] = {{"abc123def456", 12},
                         {"xxx111xxx222", 12},
                         {"ab00cd00ab", 10},
                         {"908070605040302010", 18}};
    uint8_t blob[16];
    size_t len, size;
    int i;

    REQUIRE_OK(amq_policy_blob_size(AMQ_POLICY_LEVELDB, 4, 12, &size));
    CHECK_EQ(size, 9);
    REQUIRE_OK(amq_policy_build(AMQ_POLICY_LEVELDB, keys, 4, 12, blob, sizeof blob, &len));
    REQUIRE_EQ(len, 9);
    CHECK(memcmp(blob, want, 9) == 0);
    for (i = 0; i < 4; i++)
        CHECK_EQ(t_policy_contains(blob, len, keys[i].data, keys[i].len), 1);
    CHECK_STATUS(amq_policy_build(AMQ_POLICY_LEVELDB, keys, 4, 12, blob, 8, &len), AMQ_EINVAL);
}

TEST(policy_rules_for_odd_blobs)
{
    uint8_t blob[10] = {0};
    CHECK_STATUS(t_policy_contains(blob, 0, "k", 1), AMQ_ETRUNC);
    CHECK_STATUS(t_policy_contains(blob, 1, "k", 1), AMQ_ETRUNC);
    blob[9] = 31; /* reserved k: may match */
    CHECK_EQ(t_policy_contains(blob, 10, "k", 1), 1);
    blob[9] = 0;
    CHECK_EQ(t_policy_contains(blob, 10, "k", 1), 1);
    blob[9] = 255; /* extended encoding, unknown id */
    blob[8] = 200;
    CHECK_EQ(t_policy_contains(blob, 10, "k", 1), 1);
    blob[9] = 3; /* a real encoding over zero bits: certainly absent */
    blob[8] = 0;
    CHECK_EQ(t_policy_contains(blob, 10, "k", 1), 0);
}

TEST(policy_false_positive_rate)
{
    static amq_slice keys[10000];
    static char store[10000][12];
    static uint8_t blob[20000];
    size_t len, i;
    int n, fp = 0;
    char probe[16];

    for (i = 0; i < 10000; i++) {
        n = snprintf(store[i], sizeof store[i], "k%zu", i);
        keys[i].data = store[i];
        keys[i].len = (size_t)n;
    }
    REQUIRE_OK(amq_policy_build(AMQ_POLICY_LEVELDB, keys, 10000, 10, blob, sizeof blob, &len));
    for (i = 0; i < 10000; i++)
        CHECK_EQ(t_policy_contains(blob, len, keys[i].data, keys[i].len), 1);
    for (i = 0; i < 10000; i++) {
        n = snprintf(probe, sizeof probe, "x%zu", i);
        fp += t_policy_contains(blob, len, probe, (size_t)n);
    }
    /* LevelDB's own bound for 10 bits per key is 2 %. */
    CHECK_LE(fp, 200);
    CHECK_GE(fp, 20);
}

TEST_MAIN()
