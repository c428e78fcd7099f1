/*
 * test_hash.c - every hash against published vectors, on every alignment.
 *
 * Sources of the vectors: SMHasher's verification values (MurmurHash3),
 * the widely cited MurmurHash3_x86_32 table (stackoverflow.com/a/31929528),
 * Apache Commons Codec's MurmurHash2 vectors ("from the original C
 * implementation"), LevelDB's util/hash_test.cc, the FNV reference values,
 * and XXH3's value for the empty input.
 */
#include "amq.h"
#include "common/mulshift.h"
#include "test.h"

/* SMHasher's VerificationTest: hash keys {}, {0}, {0,1}, ... {0..254} with
 * seed 256 - len, hash the concatenated results with seed 0, read the first
 * four bytes little-endian. */
static uint32_t verify_32(void)
{
    uint8_t key[256], hashes[256 * 4], out[4];
    uint32_t h;
    int i;
    for (i = 0; i < 256; i++) {
        key[i] = (uint8_t)i;
        h = amq_murmur3_32(key, (size_t)i, (uint32_t)(256 - i));
        hashes[i * 4 + 0] = (uint8_t)h;
        hashes[i * 4 + 1] = (uint8_t)(h >> 8);
        hashes[i * 4 + 2] = (uint8_t)(h >> 16);
        hashes[i * 4 + 3] = (uint8_t)(h >> 24);
    }
    h = amq_murmur3_32(hashes, sizeof hashes, 0);
    out[0] = (uint8_t)h;
    out[1] = (uint8_t)(h >> 8);
    out[2] = (uint8_t)(h >> 16);
    out[3] = (uint8_t)(h >> 24);
    return (uint32_t)out[0] | ((uint32_t)out[1] << 8) | ((uint32_t)out[2] << 16) |
           ((uint32_t)out[3] << 24);
}

static void put64(uint8_t *p, uint64_t v)
{
    int i;
    for (i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t verify_128(void)
{
    uint8_t key[256], hashes[256 * 16];
    uint64_t out[2];
    int i;
    for (i = 0; i < 256; i++) {
        key[i] = (uint8_t)i;
        amq_murmur3_x64_128(key, (size_t)i, (uint32_t)(256 - i), out);
        put64(hashes + i * 16, out[0]);
        put64(hashes + i * 16 + 8, out[1]);
    }
    amq_murmur3_x64_128(hashes, sizeof hashes, 0, out);
    return (uint32_t)out[0];
}

TEST(murmur3_smhasher_verification)
{
    CHECK_EQ_U32(verify_32(), 0xB0F57EE3u);
    CHECK_EQ_U32(verify_128(), 0x6384BA69u);
}

static const struct {
    const char *data;
    size_t len;
    uint32_t seed;
    uint32_t hash;
} m3_32[] = {
    {"", 0, 0, 0},
    {"", 0, 1, 0x514E28B7u},
    {"", 0, 0xffffffffu, 0x81F16F39u},
    {"\xff\xff\xff\xff", 4, 0, 0x76293B50u},
    {"\x21\x43\x65\x87", 4, 0, 0xF55B516Bu},
    {"\x21\x43\x65\x87", 4, 0x5082EDEEu, 0x2362F9DEu},
    {"\x21\x43\x65", 3, 0, 0x7E4A8634u},
    {"\x21\x43", 2, 0, 0xA0F7B07Au},
    {"\x21", 1, 0, 0x72661CF4u},
    {"\x00\x00\x00\x00", 4, 0, 0x2362F9DEu},
    {"\x00\x00\x00", 3, 0, 0x85F0B427u},
    {"\x00\x00", 2, 0, 0x30F4C306u},
    {"\x00", 1, 0, 0x514E28B7u},
    {"hello", 5, 0, 0x248bfa47u},
    {"a", 1, 0, 0x3c2569b2u},
    {"aaaa", 4, 0x9747b28cu, 0x5A97808Au},
    {"aaa", 3, 0x9747b28cu, 0x283E0130u},
    {"aa", 2, 0x9747b28cu, 0x5D211726u},
    {"a", 1, 0x9747b28cu, 0x7FA09EA6u},
    {"abcd", 4, 0x9747b28cu, 0xF0478627u},
    {"abc", 3, 0x9747b28cu, 0xC84A62DDu},
    {"ab", 2, 0x9747b28cu, 0x74875592u},
    {"Hello, world!", 13, 0x9747b28cu, 0x24884CBAu},
    {"\xcf\x80\xcf\x80\xcf\x80\xcf\x80\xcf\x80\xcf\x80\xcf\x80\xcf\x80", 16, 0x9747b28cu,
     0xD58063C1u},
    {"abc", 3, 0, 0xB3DD93FAu},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, 0, 0xEE925B90u},
    {"The quick brown fox jumps over the lazy dog", 43, 0x9747b28cu, 0x2FA826CDu},
};

TEST(murmur3_32_vectors)
{
    size_t i;
    char a256[256];
    for (i = 0; i < sizeof m3_32 / sizeof m3_32[0]; i++)
        CHECK_EQ_U32(amq_murmur3_32(m3_32[i].data, m3_32[i].len, m3_32[i].seed), m3_32[i].hash);
    memset(a256, 'a', sizeof a256);
    CHECK_EQ_U32(amq_murmur3_32(a256, 256, 0x9747b28cu), 0x37405BDCu);
}

TEST(murmur3_128_vectors)
{
    uint64_t out[2];
    amq_murmur3_x64_128("hello", 5, 0, out);
    CHECK_EQ_U64(out[0], UINT64_C(0xcbd8a7b341bd9b02));
    CHECK_EQ_U64(out[1], UINT64_C(0x5b1e906a48ae1d19));
    amq_murmur3_x64_128("The quick brown fox jumps over the lazy dog", 43, 0, out);
    CHECK_EQ_U64(out[0], UINT64_C(0xe34bbc7bbc071b6c));
    CHECK_EQ_U64(out[1], UINT64_C(0x7a433ca9c49a9347));
    amq_murmur3_x64_128("", 0, 0, out);
    CHECK_EQ_U64(out[0], 0);
    CHECK_EQ_U64(out[1], 0);
}

/* Apache Commons Codec MurmurHash2Test inputs (17, lengths 16 down to 0). */
static const uint8_t in0[] = {0xed, 0x53, 0xc4, 0xa5, 0x3b, 0x1b, 0xbd, 0xc2,
                              0x52, 0x7d, 0xc3, 0xef, 0x53, 0x5f, 0xae, 0x3b};
static const uint8_t in1[] = {0x21, 0x65, 0x59, 0x4e, 0xd8, 0x12, 0xf9, 0x05,
                              0x80, 0xe9, 0x1e, 0xed, 0xe4, 0x56, 0xbb};
static const uint8_t in2[] = {0x2b, 0x02, 0xb1, 0xd0, 0x3d, 0xce, 0x31,
                              0x3d, 0x97, 0xc4, 0x91, 0x0d, 0xf7, 0x17};
static const uint8_t in3[] = {0x8e, 0xa7, 0x9a, 0x02, 0xe8, 0xb9, 0x6a,
                              0xda, 0x92, 0xad, 0xe9, 0x2d, 0x21};
static const uint8_t in4[] = {0xa9, 0x6d, 0xea, 0x77, 0x06, 0xce,
                              0x1b, 0x85, 0x48, 0x27, 0x4c, 0xfe};
static const uint8_t in5[] = {0xec, 0x93, 0xa0, 0x12, 0x60, 0xee, 0xc8, 0x0a, 0xc5, 0x90, 0x62};
static const uint8_t in6[] = {0x55, 0x6d, 0x93, 0x66, 0x14, 0x6d, 0xdf, 0x00, 0x58, 0x99};
static const uint8_t in7[] = {0x3c, 0x72, 0x20, 0x1f, 0xd2, 0x59, 0x19, 0xdb, 0xa1};
static const uint8_t in8[] = {0x23, 0xa8, 0xb1, 0x87, 0x55, 0xf7, 0x8a, 0x4b};
static const uint8_t in9[] = {0xe2, 0x42, 0x1c, 0x2d, 0xc1, 0xe4, 0x3e};
static const uint8_t in10[] = {0x66, 0xa6, 0xb5, 0x5a, 0x74, 0xd9};
static const uint8_t in11[] = {0xe8, 0x76, 0xa8, 0x90, 0x76};
static const uint8_t in12[] = {0xeb, 0x25, 0x3f, 0x87};
static const uint8_t in13[] = {0x37, 0xa0, 0xa9};
static const uint8_t in14[] = {0x5b, 0x5d};
static const uint8_t in15[] = {0x7e};
static const struct {
    const uint8_t *p;
    size_t n;
} mm2_in[17] = {{in0, 16}, {in1, 15}, {in2, 14}, {in3, 13}, {in4, 12}, {in5, 11},
                {in6, 10}, {in7, 9},  {in8, 8},  {in9, 7},  {in10, 6}, {in11, 5},
                {in12, 4}, {in13, 3}, {in14, 2}, {in15, 1}, {in15, 0}};

static const uint32_t mm2_32_default[17] = {
    0x96814fb3, 0x485dcaba, 0x331dc4ae, 0xc6a7bf2f, 0xcdf35de0, 0xd9dec7cc,
    0x63a7318a, 0xd0d3c2de, 0x90923aef, 0xaf35c1e2, 0x735377b2, 0x366c98f3,
    0x9c48ee29, 0x0b615790, 0xb4308ac1, 0xec98125a, 0x106e08d9};
static const uint32_t mm2_32_seeded[17] = {
    0xd92e493e, 0x8b50903b, 0xc3372a7b, 0x48f07e9e, 0x8a5e4a6e, 0x57916df4,
    0xa346171f, 0x1e319c86, 0x9e1a03cd, 0x9f973e6c, 0x2d8c77f5, 0xabed8751,
    0x296708b6, 0x24f8078b, 0x111b1553, 0xa7da1996, 0xfe776c70};
static const uint64_t mm2_64_default[17] = {
    0x4987cb15118a83d9, 0x28e2a79e3f0394d9, 0x8f4600d786fc5c05, 0xa09b27fea4b54af3,
    0x25f34447525bfd1e, 0x32fad4c21379c7bf, 0x4b30b99a9d931921, 0x4e5dab004f936cdb,
    0x06825c27bc96cf40, 0xff4bf2f8a4823905, 0x7f7e950c064e6367, 0x821ade90caaa5889,
    0x6d28c915d791686a, 0x9c32649372163ba2, 0xd66ae956c14d5212, 0x38ed30ee5161200f,
    0x9bfae0a4e613fc3c};
static const uint64_t mm2_64_seeded[17] = {
    0x0822b1481a92e97b, 0xf8a9223fef0822dd, 0x4b49e56affae3a89, 0xc970296e32e1d1c1,
    0xe2f9f88789f1b08f, 0x2b0459d9b4c10c61, 0x377e97ea9197ee89, 0xd2ccad460751e0e7,
    0xff162ca8d6da8c47, 0xf12e051405769857, 0xdabba41293d5b035, 0xacf326b0bb690d0e,
    0x0617f431bc1a8e04, 0x15b81f28d576e1b2, 0x28c1fe59e4f8e5ba, 0x694dd315c9354ca9,
    0xa97052a8f088ae6c};

TEST(murmur2_vectors)
{
    int i;
    for (i = 0; i < 17; i++) {
        /* Commons Codec's default seeds: 0x9747b28c (32-bit), 0xe17a1465 (64-bit). */
        CHECK_EQ_U32(amq_murmur2_32(mm2_in[i].p, mm2_in[i].n, 0x9747b28cu), mm2_32_default[i]);
        CHECK_EQ_U32(amq_murmur2_32(mm2_in[i].p, mm2_in[i].n, 0x71b4954du), mm2_32_seeded[i]);
        CHECK_EQ_U64(amq_murmur64a(mm2_in[i].p, mm2_in[i].n, 0xe17a1465u), mm2_64_default[i]);
        CHECK_EQ_U64(amq_murmur64a(mm2_in[i].p, mm2_in[i].n, 0x344d1f5cu), mm2_64_seeded[i]);
    }
    CHECK_EQ_U64(amq_murmur64a("Lorem ipsum dolor sit amet, consectetur adipisicing elit", 56,
                               0xe17a1465u),
                 UINT64_C(0x0920e0c1b7eeb261));
}

TEST(fnv1a_vectors)
{
    CHECK_EQ_U32(amq_fnv1a_32("", 0), 0x811c9dc5u);
    CHECK_EQ_U32(amq_fnv1a_32("a", 1), 0xe40c292cu);
    CHECK_EQ_U32(amq_fnv1a_32("foobar", 6), 0xbf9cf968u);
    CHECK_EQ_U64(amq_fnv1a_64("", 0), UINT64_C(0xcbf29ce484222325));
    CHECK_EQ_U64(amq_fnv1a_64("a", 1), UINT64_C(0xaf63dc4c8601ec8c));
    CHECK_EQ_U64(amq_fnv1a_64("foobar", 6), UINT64_C(0x85944171f73967e8));
}

TEST(xxh3_vectors)
{
    CHECK_EQ_U64(amq_xxh3_64("", 0, 0), UINT64_C(0x2D06800538D394C2));
}

TEST(leveldb_hash_vectors)
{
    static const uint8_t d1[1] = {0x62};
    static const uint8_t d2[2] = {0xc3, 0x97};
    static const uint8_t d3[3] = {0xe2, 0x99, 0xa5};
    static const uint8_t d4[4] = {0xe1, 0x80, 0xb9, 0x32};
    static const uint8_t d5[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
        0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    CHECK_EQ_U32(amq_leveldb_hash(NULL, 0, 0xbc9f1d34u), 0xbc9f1d34u);
    CHECK_EQ_U32(amq_leveldb_hash(d1, 1, 0xbc9f1d34u), 0xef1345c4u);
    CHECK_EQ_U32(amq_leveldb_hash(d2, 2, 0xbc9f1d34u), 0x5b663814u);
    CHECK_EQ_U32(amq_leveldb_hash(d3, 3, 0xbc9f1d34u), 0x323c078fu);
    CHECK_EQ_U32(amq_leveldb_hash(d4, 4, 0xbc9f1d34u), 0xed21633au);
    CHECK_EQ_U32(amq_leveldb_hash(d5, 48, 0x12345678u), 0xf333dabbu);
}

/* The same bytes at every offset of a buffer give the same hash: reads are
 * alignment-independent. */
TEST(hashes_are_alignment_independent)
{
    uint8_t src[200], buf[216];
    uint64_t st = 42, ref[2], out[2];
    size_t len, off, i;

    for (i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)test_rand(&st);
    for (len = 0; len <= 67; len++) {
        uint32_t r32 = amq_murmur3_32(src, len, 7);
        uint64_t r64 = amq_murmur64a(src, len, 7);
        uint32_t rm2 = amq_murmur2_32(src, len, 7);
        uint32_t rl = amq_leveldb_hash(src, len, 7);
        amq_murmur3_x64_128(src, len, 7, ref);
        for (off = 1; off < 16; off++) {
            memcpy(buf + off, src, len);
            CHECK_EQ_U32(amq_murmur3_32(buf + off, len, 7), r32);
            CHECK_EQ_U64(amq_murmur64a(buf + off, len, 7), r64);
            CHECK_EQ_U32(amq_murmur2_32(buf + off, len, 7), rm2);
            CHECK_EQ_U32(amq_leveldb_hash(buf + off, len, 7), rl);
            amq_murmur3_x64_128(buf + off, len, 7, out);
            CHECK_EQ_U64(out[0], ref[0]);
            CHECK_EQ_U64(out[1], ref[1]);
        }
    }
}

/* An empty key given as NULL hashes as "" by every function and algorithm (the
 * sanitizer run stops on NULL + 0, which C leaves undefined). */
TEST(empty_key_may_be_null)
{
    uint64_t a[2], b[2];
    uint32_t algo;

    CHECK_EQ_U32(amq_murmur3_32(NULL, 0, 7), amq_murmur3_32("", 0, 7));
    CHECK_EQ_U64(amq_murmur64a(NULL, 0, 7), amq_murmur64a("", 0, 7));
    CHECK_EQ_U32(amq_murmur2_32(NULL, 0, 7), amq_murmur2_32("", 0, 7));
    CHECK_EQ_U32(amq_leveldb_hash(NULL, 0, 7), amq_leveldb_hash("", 0, 7));
    CHECK_EQ_U32(amq_fnv1a_32(NULL, 0), amq_fnv1a_32("", 0));
    CHECK_EQ_U64(amq_fnv1a_64(NULL, 0), amq_fnv1a_64("", 0));
    CHECK_EQ_U64(amq_xxh3_64(NULL, 0, 7), amq_xxh3_64("", 0, 7));
    amq_murmur3_x64_128(NULL, 0, 7, a);
    amq_murmur3_x64_128("", 0, 7, b);
    CHECK_EQ_U64(a[0], b[0]);
    CHECK_EQ_U64(a[1], b[1]);
    for (algo = AMQ_HASH_XXH3; algo <= AMQ_HASH_MULMIX; algo++) {
        amq_hash128 n = amq_hash_key(algo, 0, NULL, 0), e = amq_hash_key(algo, 0, "", 0);
        CHECK_EQ_U64(n.h1, e.h1);
        CHECK_EQ_U64(n.h2, e.h2);
    }
}

TEST(hash_key_algorithms)
{
    amq_hash128 h;
    uint64_t m[2];
    uint32_t algo;

    h = amq_hash_key(AMQ_HASH_MURMUR3, 0, "hello", 5);
    CHECK_EQ_U64(h.h1, UINT64_C(0xcbd8a7b341bd9b02));
    CHECK_EQ_U64(h.h2, UINT64_C(0x5b1e906a48ae1d19));
    h = amq_hash_key(AMQ_HASH_REDISBLOOM, 0, "item", 4);
    CHECK_EQ_U64(h.h1, amq_murmur64a("item", 4, UINT64_C(0xc6a4a7935bd1e995)));
    CHECK_EQ_U64(h.h2, amq_murmur64a("item", 4, h.h1));
    h = amq_hash_key(AMQ_HASH_MURMUR64A, 9, "item", 4);
    CHECK_EQ_U64(h.h1, amq_murmur64a("item", 4, 9));
    CHECK_EQ_U64(h.h2, amq_mix64(h.h1));
    amq_murmur3_x64_128("k", 1, 77, m);
    h = amq_hash_key(AMQ_HASH_MURMUR3, 77, "k", 1);
    CHECK_EQ_U64(h.h1, m[0]);

    CHECK_STATUS(amq_hash_check(AMQ_HASH_XXH3, UINT64_MAX), AMQ_OK);
    CHECK_STATUS(amq_hash_check(AMQ_HASH_MURMUR3, UINT64_C(1) << 32), AMQ_ERANGE);
    CHECK_STATUS(amq_hash_check(AMQ_HASH_REDISBLOOM, 1), AMQ_ERANGE);
    CHECK_STATUS(amq_hash_check(0, 0), AMQ_EHASH);
    CHECK_STATUS(amq_hash_check(99, 0), AMQ_EHASH);
    REQUIRE_OK(amq_hash_algo_from_name("murmur3", &algo));
    CHECK_EQ(algo, AMQ_HASH_MURMUR3);
    CHECK_STR(amq_hash_algo_name(AMQ_HASH_XXH3), "xxh3");
    CHECK_STATUS(amq_hash_algo_from_name("md5", &algo), AMQ_EHASH);
}

/* AMQ_HASH_MULSHIFT written the long way, to check the library's: 128-bit
 * a * x + b from 32-bit limbs, a and b from splitmix64 of the seed. */
static uint64_t ms_splitmix(uint64_t *state)
{
    uint64_t z;
    *state += UINT64_C(0x9e3779b97f4a7c15);
    z = *state;
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t ms_ref(uint64_t seed, uint64_t x)
{
    uint32_t a[4], b[4], xs[2], r[6] = {0, 0, 0, 0, 0, 0};
    uint64_t s = seed, w[4], carry;
    int i, j;
    w[3] = ms_splitmix(&s); /* a high */
    w[2] = ms_splitmix(&s) | 1; /* a low */
    w[1] = ms_splitmix(&s); /* b high */
    w[0] = ms_splitmix(&s); /* b low */
    a[0] = (uint32_t)w[2], a[1] = (uint32_t)(w[2] >> 32), a[2] = (uint32_t)w[3],
    a[3] = (uint32_t)(w[3] >> 32);
    b[0] = (uint32_t)w[0], b[1] = (uint32_t)(w[0] >> 32), b[2] = (uint32_t)w[1],
    b[3] = (uint32_t)(w[1] >> 32);
    xs[0] = (uint32_t)x, xs[1] = (uint32_t)(x >> 32);
    for (i = 0; i < 4; i++) { /* r = a * x, limbs 0..3 kept (mod 2^128) */
        carry = 0;
        for (j = 0; j < 2 && i + j < 4; j++) {
            uint64_t t = (uint64_t)a[i] * xs[j] + r[i + j] + carry;
            r[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
        if (i + j < 4)
            r[i + j] += (uint32_t)carry;
    }
    carry = 0;
    for (i = 0; i < 4; i++) { /* r += b */
        uint64_t t = (uint64_t)r[i] + b[i] + carry;
        r[i] = (uint32_t)t;
        carry = t >> 32;
    }
    return ((uint64_t)r[3] << 32) | r[2];
}

TEST(hash_mulshift_vectors)
{
    /* Pinned values (computed apart, with arbitrary-precision integers):
     * seed, 8-byte key as a little-endian integer, h1. */
    static const struct {
        uint64_t seed, x, h1;
    } v[] = {
        {0, 0, UINT64_C(0x06c45d188009454f)},
        {0, 1, UINT64_C(0xe8e50551fb2712ff)},
        {0, UINT64_C(0x0123456789abcdef), UINT64_C(0xcb183fcc9d4f6f24)},
        {12345, UINT64_MAX, UINT64_C(0x30f7b249ce295969)},
        {UINT64_MAX, 42, UINT64_C(0xc3dc95d7310bbf4f)},
    };
    static const char *texts[] = {"", "a", "hello", "sixteen byte key", "nine byte"};
    uint64_t st = 5, seed = 0;
    uint8_t key[8];
    amq_hash128 h;
    uint32_t algo;
    size_t i;
    int j;

    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        for (j = 0; j < 8; j++)
            key[j] = (uint8_t)(v[i].x >> (8 * j));
        h = amq_hash_key(AMQ_HASH_MULSHIFT, v[i].seed, key, 8);
        CHECK_EQ_U64(h.h1, v[i].h1);
        CHECK_EQ_U64(h.h2, (v[i].h1 << 32) | (v[i].h1 >> 32));
        CHECK_EQ_U64(ms_ref(v[i].seed, v[i].x), v[i].h1);
    }
    /* 8-byte keys at random against the long way; other lengths hash
     * XXH3-64(key, seed) first. */
    for (i = 0; i < 1000; i++) {
        uint64_t x = test_rand(&st);
        seed = i % 3 == 0 ? 0 : test_rand(&st);
        for (j = 0; j < 8; j++)
            key[j] = (uint8_t)(x >> (8 * j));
        CHECK_EQ_U64(amq_hash_key(AMQ_HASH_MULSHIFT, seed, key, 8).h1, ms_ref(seed, x));
    }
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t len = strlen(texts[i]);
        h = amq_hash_key(AMQ_HASH_MULSHIFT, 77, texts[i], len);
        CHECK_EQ_U64(h.h1, ms_ref(77, amq_xxh3_64(texts[i], len, 77)));
    }
    /* Seed 0's constants, written out in the library, are splitmix64's. */
    {
        amq_ms_key k0 = amq_ms_key0(), k = amq_ms_key_for(0);
        CHECK(k0.a == k.a && k0.b == k.b);
        CHECK_EQ_U64((uint64_t)(k.a >> 64), UINT64_C(0xe220a8397b1dcdaf));
        CHECK_EQ_U64((uint64_t)k.a, UINT64_C(0x6e789e6aa1b965f5));
        CHECK_EQ_U64((uint64_t)(k.b >> 64), UINT64_C(0x06c45d188009454f));
        CHECK_EQ_U64((uint64_t)k.b, UINT64_C(0xf88bb8a8724c81ec));
    }
    CHECK_STATUS(amq_hash_check(AMQ_HASH_MULSHIFT, UINT64_MAX), AMQ_OK);
    REQUIRE_OK(amq_hash_algo_from_name("mulshift", &algo));
    CHECK_EQ(algo, AMQ_HASH_MULSHIFT);
    CHECK_STR(amq_hash_algo_name(AMQ_HASH_MULSHIFT), "mulshift");
}

/* r += w * x mod 2^128, w and r in 32-bit limbs (least first). */
static void ms_mul_add(const uint32_t w[4], uint64_t x, uint32_t r[4])
{
    uint32_t p[4] = {0, 0, 0, 0}, xs[2] = {(uint32_t)x, (uint32_t)(x >> 32)};
    uint64_t carry, t;
    int i, j;
    for (i = 0; i < 4; i++) {
        carry = 0;
        for (j = 0; j < 2 && i + j < 4; j++) {
            t = (uint64_t)w[i] * xs[j] + p[i + j] + carry;
            p[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
        if (i + j < 4)
            p[i + j] += (uint32_t)carry;
    }
    carry = 0;
    for (i = 0; i < 4; i++) {
        t = (uint64_t)r[i] + p[i] + carry;
        r[i] = (uint32_t)t;
        carry = t >> 32;
    }
}

/* AMQ_HASH_VMULSHIFT of a 16-byte key the long way: a * x0 + a1 * x1 + b
 * mod 2^128 in 32-bit limbs, a, b, a1 from six splitmix64 outputs. */
static uint64_t vms_ref(uint64_t seed, const uint8_t key[16])
{
    uint64_t s = seed, w[6], x0 = 0, x1 = 0;
    uint32_t a[4], a1[4], r[4];
    int i;
    for (i = 0; i < 6; i++)
        w[i] = ms_splitmix(&s);
    w[1] |= 1;
    for (i = 7; i >= 0; i--) {
        x0 = x0 << 8 | key[i];
        x1 = x1 << 8 | key[8 + i];
    }
    a[0] = (uint32_t)w[1], a[1] = (uint32_t)(w[1] >> 32), a[2] = (uint32_t)w[0],
    a[3] = (uint32_t)(w[0] >> 32);
    a1[0] = (uint32_t)w[5], a1[1] = (uint32_t)(w[5] >> 32), a1[2] = (uint32_t)w[4],
    a1[3] = (uint32_t)(w[4] >> 32);
    r[0] = (uint32_t)w[3], r[1] = (uint32_t)(w[3] >> 32), r[2] = (uint32_t)w[2],
    r[3] = (uint32_t)(w[2] >> 32);
    ms_mul_add(a, x0, r);
    ms_mul_add(a1, x1, r);
    return ((uint64_t)r[3] << 32) | r[2];
}

/* AMQ_HASH_MULMIX's mix written out: xor-shift 32, multiply. */
static uint64_t mix_ref(uint64_t h)
{
    h ^= h >> 32;
    return h * UINT64_C(0xbf58476d1ce4e5b9);
}

TEST(hash_mulmix_vectors)
{
    /* Pinned values (computed apart, with arbitrary-precision integers):
     * seed, 8-byte key as a little-endian integer, h1 - mulshift's h1 of
     * hash_mulshift_vectors put through the mix. */
    static const struct {
        uint64_t seed, x, h1;
    } v[] = {
        {0, 0, UINT64_C(0xb1c032ad127869df)},
        {0, 1, UINT64_C(0xf9a688ce0569c2be)},
        {0, UINT64_C(0x0123456789abcdef), UINT64_C(0x8364214bef18ffa8)},
        {0, 8192, UINT64_C(0x90e8f7979dbddd8b)},
        {12345, UINT64_MAX, UINT64_C(0xe26365577feb8a20)},
        {UINT64_MAX, 42, UINT64_C(0x0e03904b85f7bfd8)},
    };
    static const char *texts[] = {"", "a", "hello", "sixteen byte key", "nine byte"};
    uint64_t st = 9, seed;
    uint8_t key[8];
    amq_hash128 h;
    uint32_t algo;
    size_t i;
    int j;

    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        for (j = 0; j < 8; j++)
            key[j] = (uint8_t)(v[i].x >> (8 * j));
        h = amq_hash_key(AMQ_HASH_MULMIX, v[i].seed, key, 8);
        CHECK_EQ_U64(h.h1, v[i].h1);
        CHECK_EQ_U64(h.h2, (v[i].h1 << 32) | (v[i].h1 >> 32));
        CHECK_EQ_U64(mix_ref(ms_ref(v[i].seed, v[i].x)), v[i].h1);
    }
    /* 8-byte keys at random and other lengths: mulshift's h1, mixed. */
    for (i = 0; i < 1000; i++) {
        uint64_t x = test_rand(&st);
        seed = i % 3 == 0 ? 0 : test_rand(&st);
        for (j = 0; j < 8; j++)
            key[j] = (uint8_t)(x >> (8 * j));
        CHECK_EQ_U64(amq_hash_key(AMQ_HASH_MULMIX, seed, key, 8).h1, mix_ref(ms_ref(seed, x)));
    }
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t len = strlen(texts[i]);
        h = amq_hash_key(AMQ_HASH_MULMIX, 77, texts[i], len);
        CHECK_EQ_U64(h.h1, mix_ref(amq_hash_key(AMQ_HASH_MULSHIFT, 77, texts[i], len).h1));
        CHECK_EQ_U64(h.h2, (h.h1 << 32) | (h.h1 >> 32));
    }
    CHECK_EQ_U64(amq_ms_mix(UINT64_C(0x0123456789abcdef)), mix_ref(UINT64_C(0x0123456789abcdef)));
    CHECK_STATUS(amq_hash_check(AMQ_HASH_MULMIX, UINT64_MAX), AMQ_OK);
    REQUIRE_OK(amq_hash_algo_from_name("mulmix", &algo));
    CHECK_EQ(algo, AMQ_HASH_MULMIX);
    CHECK_STR(amq_hash_algo_name(AMQ_HASH_MULMIX), "mulmix");
    CHECK(amq_hash_algo_name(AMQ_HASH_MULMIX + 1) == NULL);
}

TEST(hash_vmulshift_vectors)
{
    /* Pinned values (computed apart, with arbitrary-precision integers):
     * seed, the 16-byte key, h1. */
    static const struct {
        uint64_t seed;
        const char *key;
        uint64_t h1;
    } v[] = {
        {0, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", UINT64_C(0x06c45d188009454f)},
        {0, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
         UINT64_C(0xef71c10d6390a80f)},
        {0, "sixteen byte key", UINT64_C(0x6950c098ba268f54)},
        {12345, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
         UINT64_C(0x057cb0c80f4fd6ac)},
        {UINT64_MAX, "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f",
         UINT64_C(0x580b54626b55e144)},
    };
    static const char *texts[] = {"", "a", "hello", "nine byte", "seventeen bytes!!"};
    uint64_t st = 9, seed;
    uint8_t key[16];
    amq_hash128 h;
    uint32_t algo;
    size_t i;
    int j;

    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        h = amq_hash_key(AMQ_HASH_VMULSHIFT, v[i].seed, v[i].key, 16);
        CHECK_EQ_U64(h.h1, v[i].h1);
        CHECK_EQ_U64(h.h2, (v[i].h1 << 32) | (v[i].h1 >> 32));
        CHECK_EQ_U64(vms_ref(v[i].seed, (const uint8_t *)v[i].key), v[i].h1);
    }
    for (i = 0; i < 1000; i++) {
        uint64_t x = test_rand(&st), y = test_rand(&st);
        seed = i % 3 == 0 ? 0 : test_rand(&st);
        for (j = 0; j < 8; j++) {
            key[j] = (uint8_t)(x >> (8 * j));
            key[8 + j] = (uint8_t)(y >> (8 * j));
        }
        CHECK_EQ_U64(amq_hash_key(AMQ_HASH_VMULSHIFT, seed, key, 16).h1, vms_ref(seed, key));
        /* 8-byte keys hash as under mulshift */
        CHECK_EQ_U64(amq_hash_key(AMQ_HASH_VMULSHIFT, seed, key, 8).h1, ms_ref(seed, x));
    }
    /* other lengths: as mulshift, of XXH3-64(key, seed) */
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t len = strlen(texts[i]);
        CHECK_EQ_U64(amq_hash_key(AMQ_HASH_VMULSHIFT, 77, texts[i], len).h1,
                     amq_hash_key(AMQ_HASH_MULSHIFT, 77, texts[i], len).h1);
    }
    /* a1 for seed 0, written out in the library, is splitmix64's */
    {
        amq_u128 a1 = amq_ms_a1_0();
        CHECK(a1 == amq_ms_a1_for(0));
        CHECK_EQ_U64((uint64_t)(a1 >> 64), UINT64_C(0x1b39896a51a8749b));
        CHECK_EQ_U64((uint64_t)a1, UINT64_C(0x53cb9f0c747ea2ea));
    }
    CHECK_STATUS(amq_hash_check(AMQ_HASH_VMULSHIFT, UINT64_MAX), AMQ_OK);
    REQUIRE_OK(amq_hash_algo_from_name("vmulshift", &algo));
    CHECK_EQ(algo, AMQ_HASH_VMULSHIFT);
    CHECK_STR(amq_hash_algo_name(AMQ_HASH_VMULSHIFT), "vmulshift");
    CHECK_STATUS(amq_hash_check(AMQ_HASH_MULMIX + 1, 0), AMQ_EHASH);
}

TEST(status_strings)
{
    CHECK_STR(amq_strerror(AMQ_OK), "success");
    CHECK_STR(amq_strerror(AMQ_ENOMEM), "out of memory");
    CHECK_STR(amq_strerror(12345), "unknown error");
    CHECK_STR(amq_status_name(AMQ_EFULL), "EFULL");
    CHECK(amq_status_name(1) == NULL);
    CHECK_STR(amq_version_string(), AMQ_VERSION_STRING);
    CHECK_EQ(amq_version_number(), AMQ_VERSION_NUMBER);
}

TEST_MAIN()

TEST(hash_algo_names_list)
{
    /* the one list the tool's and Python's errors print: every name, in id order, and cut
     * as snprintf cuts */
    static const char full[] = "xxh3, murmur3, redisbloom, murmur64a, mulshift, vmulshift, mulmix";
    char buf[128], small[8];
    uint32_t id, n = 0;
    CHECK_EQ_U64(amq_hash_algo_names(buf, sizeof buf), sizeof full - 1);
    CHECK_STR(buf, full);
    for (id = 1; id < 256; id++)
        if (amq_hash_algo_name(id) != NULL) {
            CHECK(strstr(buf, amq_hash_algo_name(id)) != NULL);
            n++;
        }
    CHECK_EQ(n, 7);
    CHECK_EQ_U64(amq_hash_algo_names(small, sizeof small), sizeof full - 1);
    CHECK_STR(small, "xxh3, m");
    CHECK_EQ_U64(amq_hash_algo_names(small, 1), sizeof full - 1);
    CHECK_STR(small, "");
    CHECK_EQ_U64(amq_hash_algo_names(NULL, 0), sizeof full - 1);
}
