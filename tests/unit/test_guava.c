/*
 * test_guava.c - Guava's BloomFilter byte format: sizing, exact bytes,
 * round trips and the decoder's validation.
 */
#include "amq.h"
#include "amq/guava.h"
#include "test.h"

/* Bit x of a Guava stream's array: word x >> 6 (big-endian), bit x & 63. */
static int stream_bit(const uint8_t *file, uint64_t x)
{
    const uint8_t *word = file + 6 + (x >> 6) * 8;
    unsigned bit = (unsigned)(x & 63);
    return (word[7 - bit / 8] >> (bit % 8)) & 1;
}

static void stream_set(uint8_t *file, uint64_t x)
{
    uint8_t *word = file + 6 + (x >> 6) * 8;
    unsigned bit = (unsigned)(x & 63);
    word[7 - bit / 8] = (uint8_t)(word[7 - bit / 8] | (1u << (bit % 8)));
}

TEST(sizing_as_guava_create)
{
    amq_bloom_params p;

    REQUIRE_OK(amq_guava_params_for(1000000, 0.01, &p));
    CHECK_EQ(p.bits, 9585088); /* 9,585,058 rounded up to 149,767 words */
    CHECK_EQ(p.k, 7);
    CHECK_EQ(p.probe, AMQ_BLOOM_PROBE_GUAVA);
    CHECK_EQ(p.hash_algo, AMQ_HASH_MURMUR3);
    CHECK_EQ(p.seed, 0);
    CHECK_EQ(p.capacity, 1000000);
    /* n = 1000, p = 0.03: floor(7298.44) = 7298 bits -> 115 words; k =
     * round(7.298 ln 2) = round(5.06) = 5. */
    REQUIRE_OK(amq_guava_params_for(1000, 0.03, &p));
    CHECK_EQ(p.bits, 115 * 64);
    CHECK_EQ(p.k, 5);
    /* n = 0 is sized as 1 (Guava): floor(-ln 0.01 / ln^2 2) = 9 bits, k =
     * round(9 ln 2) = 6. */
    REQUIRE_OK(amq_guava_params_for(0, 0.01, &p));
    CHECK_EQ(p.bits, 64);
    CHECK_EQ(p.k, 6);
    CHECK_EQ(p.capacity, 1);
    /* p = 0.5, n = 1: 1.44 bits -> 1 bit -> one word; k = round(0.69) = 1. */
    REQUIRE_OK(amq_guava_params_for(1, 0.5, &p));
    CHECK_EQ(p.bits, 64);
    CHECK_EQ(p.k, 1);
    CHECK_STATUS(amq_guava_params_for(10, 0.0, &p), AMQ_ERANGE);
    CHECK_STATUS(amq_guava_params_for(10, 1.0, &p), AMQ_ERANGE);
    CHECK_STATUS(amq_guava_params_for(10, NAN, &p), AMQ_ERANGE);
    CHECK_STATUS(amq_guava_params_for(1, 0.9, &p), AMQ_ERANGE); /* 0.22 bits: 0 */
    /* More than 2^31 - 1 words: Guava cannot hold it. */
    CHECK_STATUS(amq_guava_params_for(UINT64_C(20000000000), 0.001, &p), AMQ_ERANGE);
    /* k above 255: p = 1e-80 gives k = 266. */
    CHECK_STATUS(amq_guava_params_for(10, 1e-80, &p), AMQ_ERANGE);
}

/* The vector: n = 1e6, p = 0.01 with "key0" is a 1,198,142-byte
 * stream starting 01 07 00 02 49 07 whose only set bits are key0's. */
TEST(encode_exact_bytes_key0)
{
    static const uint64_t want[7] = {8592072, 9217674, 2922380, 6212174,
                                     6837776, 542482,  3832276};
    static const uint8_t head[6] = {0x01, 0x07, 0x00, 0x02, 0x49, 0x07};
    amq_bloom_params p;
    amq_bloom *b;
    uint8_t *got, *expect;
    size_t size = 0, written = 0;
    int i;

    REQUIRE_OK(amq_guava_params_for(1000000, 0.01, &p));
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    CHECK_EQ(amq_bloom_add(b, "key0", 4), 1);
    REQUIRE_OK(amq_guava_serialized_size(b, &size, NULL));
    CHECK_EQ(size, 1198142);
    got = calloc(1, size);
    expect = calloc(1, size);
    REQUIRE(got != NULL && expect != NULL);
    REQUIRE_OK(amq_guava_serialize(b, got, size, &written, NULL));
    CHECK_EQ(written, size);
    memcpy(expect, head, 6);
    for (i = 0; i < 7; i++)
        stream_set(expect, want[i]);
    CHECK(memcmp(got, expect, size) == 0);
    for (i = 0; i < 7; i++)
        CHECK(stream_bit(got, want[i]));
    CHECK_STATUS(amq_guava_serialize(b, got, size - 1, &written, NULL), AMQ_EINVAL);
    free(got);
    free(expect);
    amq_bloom_free(b);
}

/* Bytes Guava 31.1 wrote for BloomFilter.create(stringFunnel(UTF_8), 20,
 * 0.05) holding "apple", "banana", "cherry" and "\u00e9t\u00e9" (tests/interop
 * GuavaInterop write): 124 bits -> 2 words, k = 4. */
static const uint8_t guava_small[22] = {
    0x01, 0x04, 0x00, 0x00, 0x00, 0x02, 0x12, 0x10, 0x00, 0x00, 0x08,
    0x14, 0x10, 0x80, 0x20, 0x00, 0x04, 0x91, 0x00, 0x40, 0x10, 0x20,
};
static const char *const guava_small_keys[4] = {"apple", "banana", "cherry",
                                                "\xc3\xa9t\xc3\xa9"};

TEST(bytes_written_by_guava)
{
    amq_bloom_params p;
    amq_bloom *b, *d;
    uint8_t out[22];
    size_t written = 0;
    int i;

    REQUIRE_OK(amq_guava_params_for(20, 0.05, &p));
    CHECK_EQ(p.bits, 128);
    CHECK_EQ(p.k, 4);
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    for (i = 0; i < 4; i++)
        amq_bloom_add(b, guava_small_keys[i], strlen(guava_small_keys[i]));
    REQUIRE_OK(amq_guava_serialize(b, out, sizeof out, &written, NULL));
    CHECK_EQ(written, sizeof guava_small);
    CHECK(memcmp(out, guava_small, sizeof out) == 0);
    REQUIRE_OK(amq_guava_deserialize(guava_small, sizeof guava_small, NULL, &d, NULL));
    for (i = 0; i < 4; i++)
        CHECK_EQ(amq_bloom_contains(d, guava_small_keys[i], strlen(guava_small_keys[i])), 1);
    CHECK_EQ(amq_bloom_bits_set(d), 16);
    amq_bloom_free(b);
    amq_bloom_free(d);
}

static uint8_t *random_stream(uint64_t *rng, uint32_t k, uint32_t words, size_t *len)
{
    uint8_t *s;
    size_t i;

    *len = 6 + (size_t)words * 8;
    s = malloc(*len);
    if (s == NULL)
        return NULL;
    s[0] = 1;
    s[1] = (uint8_t)k;
    s[2] = (uint8_t)(words >> 24);
    s[3] = (uint8_t)(words >> 16);
    s[4] = (uint8_t)(words >> 8);
    s[5] = (uint8_t)words;
    for (i = 6; i < *len; i++)
        s[i] = (uint8_t)(test_rand(rng) & test_rand(rng)); /* ~25 % of bits set */
    return s;
}

TEST(decode_encode_round_trip)
{
    uint64_t seed = 0x6a7661, rng = seed;
    amq_bloom_params p;
    amq_bloom *b;
    uint8_t *s, *back;
    size_t len, blen, written;
    uint64_t x;
    int t;

    for (t = 0; t < 20; t++) {
        uint32_t k = 1 + (uint32_t)(test_rand(&rng) % 255);
        uint32_t words = 1 + (uint32_t)(test_rand(&rng) % 300);
        s = random_stream(&rng, k, words, &len);
        REQUIRE(s != NULL);
        REQUIRE_OK(amq_guava_deserialize(s, len, NULL, &b, NULL));
        amq_bloom_get_params(b, &p);
        CHECK_EQ(p.bits, (uint64_t)words * 64);
        CHECK_EQ(p.k, k);
        CHECK_EQ(p.probe, AMQ_BLOOM_PROBE_GUAVA);
        CHECK_EQ(p.hash_algo, AMQ_HASH_MURMUR3);
        /* Every bit where the stream says. */
        for (x = 0; x < p.bits; x++)
            if (((amq_bloom_data(b)[x >> 3] >> (x & 7)) & 1) != stream_bit(s, x)) {
                FAIL_AT_("seed %llu: bit %llu differs", (unsigned long long)seed,
                         (unsigned long long)x);
                break;
            }
        REQUIRE_OK(amq_guava_serialized_size(b, &blen, NULL));
        CHECK_EQ(blen, len);
        back = malloc(blen);
        REQUIRE(back != NULL);
        REQUIRE_OK(amq_guava_serialize(b, back, blen, &written, NULL));
        CHECK(memcmp(back, s, len) == 0);
        free(back);
        free(s);
        amq_bloom_free(b);
    }
}

/* Decoded filters answer with Guava's probes: what is added is found, and
 * the item count is Guava's approximateElementCount. */
TEST(decoded_filter_answers)
{
    amq_bloom_params p;
    amq_bloom *b, *d;
    uint8_t *s;
    char key[32];
    size_t size;
    int i, n, miss = 0;

    REQUIRE_OK(amq_guava_params_for(5000, 0.01, &p));
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    for (i = 0; i < 5000; i++) {
        n = snprintf(key, sizeof key, "user-%d", i);
        amq_bloom_add(b, key, (size_t)n);
    }
    REQUIRE_OK(amq_guava_serialized_size(b, &size, NULL));
    s = malloc(size);
    REQUIRE(s != NULL);
    REQUIRE_OK(amq_guava_serialize(b, s, size, NULL, NULL));
    REQUIRE_OK(amq_guava_deserialize(s, size, NULL, &d, NULL));
    for (i = 0; i < 5000; i++) {
        n = snprintf(key, sizeof key, "user-%d", i);
        miss += !amq_bloom_contains(d, key, (size_t)n);
    }
    CHECK_EQ(miss, 0);
    for (i = 5000; i < 25000; i++) {
        n = snprintf(key, sizeof key, "user-%d", i);
        CHECK_EQ(amq_bloom_contains(d, key, (size_t)n), amq_bloom_contains(b, key, (size_t)n));
    }
    CHECK_NEAR_REL((double)amq_bloom_items(d), 5000.0, 0.03);
    free(s);
    amq_bloom_free(b);
    amq_bloom_free(d);
}

TEST(decode_refuses_bad_bytes)
{
    uint64_t rng = 7;
    amq_errinfo err;
    amq_bloom *b = NULL;
    uint8_t *s, *t;
    size_t len, cut;

    s = random_stream(&rng, 3, 4, &len); /* 38 bytes */
    REQUIRE(s != NULL);
    t = malloc(len + 1);
    REQUIRE(t != NULL);
    /* Every truncation. */
    for (cut = 0; cut < len; cut++) {
        memcpy(t, s, cut);
        CHECK_STATUS(amq_guava_deserialize(t, cut, NULL, &b, &err), AMQ_ETRUNC);
        CHECK(b == NULL);
    }
    CHECK(strstr(err.msg, "truncated") != NULL);
    /* A byte too many. */
    memcpy(t, s, len);
    t[len] = 0;
    CHECK_STATUS(amq_guava_deserialize(t, len + 1, NULL, &b, &err), AMQ_ECORRUPT);
    CHECK(strstr(err.msg, "after its last data word") != NULL);
    /* Strategies. */
    t[0] = 0;
    CHECK_STATUS(amq_guava_deserialize(t, len, NULL, &b, &err), AMQ_EUNSUPPORTED);
    CHECK(strstr(err.msg, "MURMUR128_MITZ_32") != NULL);
    t[0] = 2;
    CHECK_STATUS(amq_guava_deserialize(t, len, NULL, &b, &err), AMQ_ECORRUPT);
    t[0] = 0xff;
    CHECK_STATUS(amq_guava_deserialize(t, len, NULL, &b, &err), AMQ_ECORRUPT);
    t[0] = 1;
    /* k = 0. */
    t[1] = 0;
    CHECK_STATUS(amq_guava_deserialize(t, len, NULL, &b, &err), AMQ_ECORRUPT);
    CHECK(strstr(err.msg, "0 hash functions") != NULL);
    t[1] = 255;
    REQUIRE_OK(amq_guava_deserialize(t, len, NULL, &b, &err));
    amq_bloom_free(b);
    t[1] = 3;
    /* Word counts: 0, negative, huge (never allocated: too few bytes). */
    memcpy(t + 2, "\0\0\0\0", 4);
    CHECK_STATUS(amq_guava_deserialize(t, 6, NULL, &b, &err), AMQ_ECORRUPT);
    memcpy(t + 2, "\x80\0\0\0", 4);
    CHECK_STATUS(amq_guava_deserialize(t, len, NULL, &b, &err), AMQ_ECORRUPT);
    memcpy(t + 2, "\xff\xff\xff\xff", 4);
    CHECK_STATUS(amq_guava_deserialize(t, len, NULL, &b, &err), AMQ_ECORRUPT);
    memcpy(t + 2, "\x7f\xff\xff\xff", 4);
    CHECK_STATUS(amq_guava_deserialize(t, len, NULL, &b, &err), AMQ_ETRUNC);
    CHECK(b == NULL);
    CHECK_STATUS(amq_guava_deserialize(NULL, 0, NULL, &b, NULL), AMQ_ETRUNC);
    free(s);
    free(t);
}

TEST(encode_refuses_other_filters)
{
    amq_bloom_params p;
    amq_bloom *b;
    amq_errinfo err;
    size_t size;
    uint8_t buf[64];

    REQUIRE_OK(amq_guava_params_for(100, 0.01, &p));
    p.probe = AMQ_BLOOM_PROBE_NATIVE;
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    CHECK_STATUS(amq_guava_serialized_size(b, &size, &err), AMQ_EINCOMPAT);
    CHECK(strstr(err.msg, "native probe scheme") != NULL);
    CHECK_STATUS(amq_guava_serialize(b, buf, sizeof buf, NULL, &err), AMQ_EINCOMPAT);
    amq_bloom_free(b);

    REQUIRE_OK(amq_guava_params_for(100, 0.01, &p));
    p.seed = 1;
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    CHECK_STATUS(amq_guava_check(b, &err), AMQ_EINCOMPAT);
    CHECK(strstr(err.msg, "murmur3 seed 1") != NULL);
    amq_bloom_free(b);

    REQUIRE_OK(amq_guava_params_for(100, 0.01, &p));
    p.hash_algo = AMQ_HASH_XXH3;
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    CHECK_STATUS(amq_guava_check(b, &err), AMQ_EINCOMPAT);
    amq_bloom_free(b);

    REQUIRE_OK(amq_guava_params_for(100, 0.01, &p));
    p.bits = 1000; /* not whole words */
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    CHECK_STATUS(amq_guava_check(b, &err), AMQ_EINCOMPAT);
    CHECK(strstr(err.msg, "1000 bits") != NULL);
    amq_bloom_free(b);
}

TEST_MAIN()
