/*
 * hash.c - MurmurHash3 (x86_32, x64_128), MurmurHash64A, MurmurHash2,
 * FNV-1a, LevelDB's hash, multiply-add-shift (common/mulshift.h), XXH3
 * (Debian's libxxhash, in its header-only form: the same code, inlined
 * into amq_hash_key so that hashing a short key costs no call through the
 * PLT), and key hashing for filters.
 *
 * Written from the published algorithms.  Blocks are read through the
 * little-endian load helpers, so results do not depend on alignment or on
 * the host's byte order.
 */
#include <stdio.h>
#include <string.h>
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#include "amq.h"
#include "common/error.h"
#include "common/endian.h"
#include "common/mulshift.h"

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* The bytes of a key; an empty key may come as NULL, and NULL + 0 is undefined in C
 * (UBSan stops on the tail pointer of a 0-byte key otherwise). */
static inline const uint8_t *key_bytes(const void *key)
{
    return key != NULL ? (const uint8_t *)key : (const uint8_t *)"";
}

/* ---- MurmurHash3 ----------------------------------------------------------- */

static inline uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

uint32_t amq_murmur3_32(const void *key, size_t len, uint32_t seed)
{
    const uint8_t *p = key_bytes(key);
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    size_t nblocks = len / 4, i;
    uint32_t h = seed, k;
    const uint8_t *tail;

    for (i = 0; i < nblocks; i++) {
        k = amq_load32(p + i * 4);
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5 + 0xe6546b64u;
    }
    tail = p + nblocks * 4;
    k = 0;
    switch (len & 3) {
    case 3:
        k ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        k ^= tail[0];
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        break;
    default:
        break;
    }
    /* The reference takes an int length: only its low 32 bits mix in. */
    h ^= (uint32_t)len;
    return fmix32(h);
}

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

void amq_murmur3_x64_128(const void *key, size_t len, uint32_t seed, uint64_t out[2])
{
    const uint8_t *p = key_bytes(key);
    const uint64_t c1 = UINT64_C(0x87c37b91114253d5), c2 = UINT64_C(0x4cf5ad432745937f);
    size_t nblocks = len / 16, i;
    uint64_t h1 = seed, h2 = seed, k1, k2;
    const uint8_t *tail;

    for (i = 0; i < nblocks; i++) {
        k1 = amq_load64(p + i * 16);
        k2 = amq_load64(p + i * 16 + 8);
        k1 *= c1;
        k1 = rotl64(k1, 31);
        k1 *= c2;
        h1 ^= k1;
        h1 = rotl64(h1, 27);
        h1 += h2;
        h1 = h1 * 5 + 0x52dce729;
        k2 *= c2;
        k2 = rotl64(k2, 33);
        k2 *= c1;
        h2 ^= k2;
        h2 = rotl64(h2, 31);
        h2 += h1;
        h2 = h2 * 5 + 0x38495ab5;
    }

    tail = p + nblocks * 16;
    k1 = 0;
    k2 = 0;
    switch (len & 15) {
    case 15: k2 ^= (uint64_t)tail[14] << 48; /* fall through */
    case 14: k2 ^= (uint64_t)tail[13] << 40; /* fall through */
    case 13: k2 ^= (uint64_t)tail[12] << 32; /* fall through */
    case 12: k2 ^= (uint64_t)tail[11] << 24; /* fall through */
    case 11: k2 ^= (uint64_t)tail[10] << 16; /* fall through */
    case 10: k2 ^= (uint64_t)tail[9] << 8;   /* fall through */
    case 9:
        k2 ^= (uint64_t)tail[8];
        k2 *= c2;
        k2 = rotl64(k2, 33);
        k2 *= c1;
        h2 ^= k2;
        /* fall through */
    case 8: k1 ^= (uint64_t)tail[7] << 56; /* fall through */
    case 7: k1 ^= (uint64_t)tail[6] << 48; /* fall through */
    case 6: k1 ^= (uint64_t)tail[5] << 40; /* fall through */
    case 5: k1 ^= (uint64_t)tail[4] << 32; /* fall through */
    case 4: k1 ^= (uint64_t)tail[3] << 24; /* fall through */
    case 3: k1 ^= (uint64_t)tail[2] << 16; /* fall through */
    case 2: k1 ^= (uint64_t)tail[1] << 8;  /* fall through */
    case 1:
        k1 ^= (uint64_t)tail[0];
        k1 *= c1;
        k1 = rotl64(k1, 31);
        k1 *= c2;
        h1 ^= k1;
        break;
    default:
        break;
    }

    /* As the reference (int len, sign-extended when mixed into 64 bits):
     * lengths below 2^31 mix in unchanged. */
    h1 ^= (uint64_t)(int64_t)(int32_t)(uint32_t)len;
    h2 ^= (uint64_t)(int64_t)(int32_t)(uint32_t)len;
    h1 += h2;
    h2 += h1;
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 += h2;
    h2 += h1;
    out[0] = h1;
    out[1] = h2;
}

/* ---- MurmurHash2 family ---------------------------------------------------- */

uint64_t amq_murmur64a(const void *key, size_t len, uint64_t seed)
{
    const uint64_t m = UINT64_C(0xc6a4a7935bd1e995);
    const int r = 47;
    const uint8_t *p = key_bytes(key);
    size_t nblocks = len / 8, i;
    uint64_t h = seed ^ ((uint64_t)len * m), k;
    const uint8_t *tail;

    for (i = 0; i < nblocks; i++) {
        k = amq_load64(p + i * 8);
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    tail = p + nblocks * 8;
    switch (len & 7) {
    case 7: h ^= (uint64_t)tail[6] << 48; /* fall through */
    case 6: h ^= (uint64_t)tail[5] << 40; /* fall through */
    case 5: h ^= (uint64_t)tail[4] << 32; /* fall through */
    case 4: h ^= (uint64_t)tail[3] << 24; /* fall through */
    case 3: h ^= (uint64_t)tail[2] << 16; /* fall through */
    case 2: h ^= (uint64_t)tail[1] << 8;  /* fall through */
    case 1:
        h ^= (uint64_t)tail[0];
        h *= m;
        break;
    default:
        break;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

uint32_t amq_murmur2_32(const void *key, size_t len, uint32_t seed)
{
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    const uint8_t *p = (const uint8_t *)key;
    uint32_t h = seed ^ (uint32_t)len, k;
    size_t rest = len;

    while (rest >= 4) {
        k = amq_load32(p);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
        p += 4;
        rest -= 4;
    }
    switch (rest) {
    case 3: h ^= (uint32_t)p[2] << 16; /* fall through */
    case 2: h ^= (uint32_t)p[1] << 8;  /* fall through */
    case 1:
        h ^= p[0];
        h *= m;
        break;
    default:
        break;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

/* ---- FNV-1a, LevelDB, XXH3 ------------------------------------------------- */

uint32_t amq_fnv1a_32(const void *key, size_t len)
{
    const uint8_t *p = (const uint8_t *)key;
    uint32_t h = 0x811c9dc5u;
    size_t i;
    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x01000193u;
    }
    return h;
}

uint64_t amq_fnv1a_64(const void *key, size_t len)
{
    const uint8_t *p = (const uint8_t *)key;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    size_t i;
    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

uint32_t amq_leveldb_hash(const void *key, size_t len, uint32_t seed)
{
    const uint32_t m = 0xc6a4a793u;
    const uint8_t *p = (const uint8_t *)key;
    uint32_t h = seed ^ ((uint32_t)len * m);
    size_t rest = len;

    while (rest >= 4) {
        h += amq_load32(p);
        h *= m;
        h ^= h >> 16;
        p += 4;
        rest -= 4;
    }
    switch (rest) {
    case 3: h += (uint32_t)p[2] << 16; /* fall through */
    case 2: h += (uint32_t)p[1] << 8;  /* fall through */
    case 1:
        h += p[0];
        h *= m;
        h ^= h >> 24;
        break;
    default:
        break;
    }
    return h;
}

uint64_t amq_xxh3_64(const void *key, size_t len, uint64_t seed)
{
    return XXH3_64bits_withSeed(key, len, seed);
}

/* ---- key hashing for filters ------------------------------------------------ */

int amq_hash_check(uint32_t algo, uint64_t seed)
{
    switch (algo) {
    case AMQ_HASH_XXH3:
    case AMQ_HASH_MURMUR64A:
    case AMQ_HASH_MULSHIFT:
    case AMQ_HASH_VMULSHIFT:
    case AMQ_HASH_MULMIX:
        return AMQ_OK;
    case AMQ_HASH_MURMUR3:
        return seed <= UINT32_MAX ? AMQ_OK : AMQ_ERANGE;
    case AMQ_HASH_REDISBLOOM:
        return seed == 0 ? AMQ_OK : AMQ_ERANGE;
    default:
        return AMQ_EHASH;
    }
}

int amq_hash_check_err(uint32_t algo, uint64_t seed, int status, amq_errinfo *err)
{
    const int rc = amq_hash_check(algo, seed);
    const unsigned long long s = (unsigned long long)seed;

    if (rc == AMQ_OK)
        return AMQ_OK;
    if (status == 0)
        status = rc;
    if (rc == AMQ_EHASH)
        return amq_err(err, status, "unknown hash algorithm %u", algo);
    if (algo == AMQ_HASH_MURMUR3)
        return amq_err(err, status, "murmur3 takes a 32-bit seed (0 to 4294967295), not %llu", s);
    return amq_err(err, status, "%s hashing takes no seed (give 0), not %llu",
                   amq_hash_algo_name(algo), s);
}

amq_hash128 amq_hash_key(uint32_t algo, uint64_t seed, const void *key, size_t len)
{
    amq_hash128 h;
    uint64_t out[2];
    XXH128_hash_t x;

    switch (algo) {
    case AMQ_HASH_MURMUR3:
        amq_murmur3_x64_128(key, len, (uint32_t)seed, out);
        h.h1 = out[0];
        h.h2 = out[1];
        break;
    case AMQ_HASH_REDISBLOOM:
        h.h1 = amq_murmur64a(key, len, AMQ_REDISBLOOM_SEED);
        h.h2 = amq_murmur64a(key, len, h.h1);
        break;
    case AMQ_HASH_MURMUR64A:
        h.h1 = amq_murmur64a(key, len, seed);
        h.h2 = amq_mix64(h.h1);
        break;
    case AMQ_HASH_MULSHIFT:
    case AMQ_HASH_VMULSHIFT:
    case AMQ_HASH_MULMIX: {
        amq_ms_key k = seed == 0 ? amq_ms_key0() : amq_ms_key_for(seed);
        if (algo == AMQ_HASH_VMULSHIFT && len == 16)
            h.h1 = amq_ms_apply2(k.a, seed == 0 ? amq_ms_a1_0() : amq_ms_a1_for(seed), k.b,
                                 amq_load64(key), amq_load64((const uint8_t *)key + 8));
        else
            h.h1 = amq_ms_apply(k.a, k.b, len == 8 ? amq_load64(key)
                                                   : XXH3_64bits_withSeed(key, len, seed));
        if (algo == AMQ_HASH_MULMIX)
            h.h1 = amq_ms_mix(h.h1);
        h.h2 = amq_ms_h2(h.h1);
        break;
    }
    default:
        x = XXH3_128bits_withSeed(key, len, seed);
        h.h1 = x.low64;
        h.h2 = x.high64;
        break;
    }
    return h;
}

static const struct {
    uint32_t algo;
    const char *name;
} hash_names[] = {
    {AMQ_HASH_XXH3, "xxh3"},
    {AMQ_HASH_MURMUR3, "murmur3"},
    {AMQ_HASH_REDISBLOOM, "redisbloom"},
    {AMQ_HASH_MURMUR64A, "murmur64a"},
    {AMQ_HASH_MULSHIFT, "mulshift"},
    {AMQ_HASH_VMULSHIFT, "vmulshift"},
    {AMQ_HASH_MULMIX, "mulmix"},
};

const char *amq_hash_algo_name(uint32_t algo)
{
    size_t i;
    for (i = 0; i < sizeof hash_names / sizeof hash_names[0]; i++)
        if (hash_names[i].algo == algo)
            return hash_names[i].name;
    return NULL;
}

size_t amq_hash_algo_names(char *out, size_t cap)
{
    size_t i, len = 0;
    if (cap > 0)
        out[0] = '\0';
    for (i = 0; i < sizeof hash_names / sizeof hash_names[0]; i++) {
        char *at = len < cap ? out + len : NULL; /* (past the end: only counted) */
        len += (size_t)snprintf(at, at != NULL ? cap - len : 0, "%s%s", i > 0 ? ", " : "",
                                hash_names[i].name);
    }
    return len;
}

int amq_hash_algo_from_name(const char *name, uint32_t *algo)
{
    size_t i;
    for (i = 0; i < sizeof hash_names / sizeof hash_names[0]; i++) {
        if (strcmp(hash_names[i].name, name) == 0) {
            *algo = hash_names[i].algo;
            return AMQ_OK;
        }
    }
    return AMQ_EHASH;
}
