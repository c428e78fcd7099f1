/*
 * amq/hash.h - the hash functions of libamq.
 *
 * Every function is bit-exact with its reference implementation on every
 * length and seed, reads its input byte by byte (any alignment, any host
 * byte order; key may be NULL when len is 0) and is safe to call from any
 * number of threads.
 *
 * Filters hash a key once, with the algorithm and seed recorded in the
 * filter (amq_hash_algo), into an amq_hash128 pair; every probe, index and
 * fingerprint derives from that pair.
 */
#ifndef AMQ_HASH_H
#define AMQ_HASH_H

#include "amq/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MurmurHash3_x86_32 (Austin Appleby, SMHasher). */
AMQ_API uint32_t amq_murmur3_32(const void *key, size_t len, uint32_t seed);

/* MurmurHash3_x64_128: out[0] = h1, out[1] = h2, as the reference's two
 * 64-bit output words. */
AMQ_API void amq_murmur3_x64_128(const void *key, size_t len, uint32_t seed,
                                 uint64_t out[2]);

/* MurmurHash64A (64-bit MurmurHash2), 8-byte words read little-endian. */
AMQ_API uint64_t amq_murmur64a(const void *key, size_t len, uint64_t seed);

/* MurmurHash2 (32-bit), the hash of RedisBloom filters created before 2018. */
AMQ_API uint32_t amq_murmur2_32(const void *key, size_t len, uint32_t seed);

/* FNV-1a, 32 and 64 bits (offset bases 0x811c9dc5, 0xcbf29ce484222325). */
AMQ_API uint32_t amq_fnv1a_32(const void *key, size_t len);
AMQ_API uint64_t amq_fnv1a_64(const void *key, size_t len);

/* XXH3-64 with a seed, computed by the system's libxxhash. */
AMQ_API uint64_t amq_xxh3_64(const void *key, size_t len, uint64_t seed);

/* The 32-bit hash of LevelDB's util/hash (seed given), used by the
 * LevelDB-compatible filter-policy encoding. */
AMQ_API uint32_t amq_leveldb_hash(const void *key, size_t len, uint32_t seed);

/* ---- key hashing for filters --------------------------------------------- */

/* The pair every filter works on. */
typedef struct amq_hash128 {
    uint64_t h1;
    uint64_t h2;
} amq_hash128;

/*
 * How a filter turns a key into an amq_hash128.  Values are stored in files
 * and pinned.
 *  AMQ_HASH_XXH3        h1, h2 = the low and high halves of XXH3-128(key,
 *                       seed) (libxxhash).  The default of every kind but
 *                       the cuckoo and fuse filters.
 *  AMQ_HASH_MURMUR3     h1, h2 = MurmurHash3_x64_128(key, seed); the seed
 *                       must fit 32 bits.  Guava's filters use seed 0.
 *  AMQ_HASH_REDISBLOOM  h1 = MurmurHash64A(key, 0xc6a4a7935bd1e995),
 *                       h2 = MurmurHash64A(key, h1): RedisBloom's Bloom
 *                       filters (the seed must be 0).
 *  AMQ_HASH_MURMUR64A   h1 = MurmurHash64A(key, seed), h2 = a bijective mix
 *                       of h1 (amq_mix64): RedisBloom's cuckoo filters use
 *                       h1 with seed 0.
 *  AMQ_HASH_MULSHIFT    h1 = ((a * x + b) mod 2^128) >> 64, multiply-add-
 *                       shift (strongly universal), with x the key read as
 *                       a little-endian 64-bit integer when it is 8 bytes
 *                       long, else XXH3-64(key, seed); a and b are 128-bit
 *                       constants drawn from the seed by splitmix64
 *                       (docs/file-format.md); h2 = h1 rotated by 32 bits.
 *                       The cuckoo filter's default until AMQ_HASH_MULMIX
 *                       (integer keys in arithmetic progression map to a
 *                       lattice of buckets and fingerprints under it, and
 *                       some strides fill a filter early).  A new classic
 *                       or scalable Bloom filter refuses it (AMQ_EINVAL):
 *                       their double hashing needs two independent halves.
 *  AMQ_HASH_VMULSHIFT   AMQ_HASH_MULSHIFT, except that a 16-byte key is
 *                       hashed as its two little-endian 64-bit words x0, x1
 *                       by vector multiply-add-shift: h1 = ((a * x0 + a1 *
 *                       x1 + b) mod 2^128) >> 64, a1 two more splitmix64
 *                       outputs of the seed (strongly universal, as
 *                       mulshift's one-word form).  8-byte keys and every
 *                       other length hash as under AMQ_HASH_MULSHIFT.  The
 *                       fuse filters' default: a 16-byte key's multiplies
 *                       run side by side, where XXH3-64 then mulshift chain
 *                       theirs through shift-xors and adds.  The Bloom
 *                       filters refuse it, as they refuse mulshift.
 *  AMQ_HASH_MULMIX      AMQ_HASH_MULSHIFT's h1 (any key length) put
 *                       through a final mix, h ^= h >> 32, h *= 0xbf58476d
 *                       1ce4e5b9 (mod 2^64; a bijection: collisions are
 *                       mulshift's); h2 = h1 rotated by 32 bits.  The cuckoo
 *                       filter's default: an 8-byte key costs a 64 x 64 ->
 *                       128 multiply and a 64 x 64 one side by side, then
 *                       the mix's one multiply, and integer keys in
 *                       arithmetic progression fill it as random keys do.
 *                       The Bloom filters refuse it, as they refuse
 *                       mulshift.
 */
typedef enum amq_hash_algo {
    AMQ_HASH_XXH3 = 1,
    AMQ_HASH_MURMUR3 = 2,
    AMQ_HASH_REDISBLOOM = 3,
    AMQ_HASH_MURMUR64A = 4,
    AMQ_HASH_MULSHIFT = 5,
    AMQ_HASH_VMULSHIFT = 6,
    AMQ_HASH_MULMIX = 7
} amq_hash_algo;

/* The seed RedisBloom's Bloom filters start from. */
#define AMQ_REDISBLOOM_SEED UINT64_C(0xc6a4a7935bd1e995)

/* Checks that (algo, seed) is a valid combination: AMQ_OK, AMQ_EHASH for an
 * unknown algorithm, AMQ_ERANGE for a seed the algorithm cannot take. */
AMQ_API int amq_hash_check(uint32_t algo, uint64_t seed);

/* Hashes one key.  algo and seed must have passed amq_hash_check (an
 * unchecked unknown algorithm hashes as AMQ_HASH_XXH3). */
AMQ_API amq_hash128 amq_hash_key(uint32_t algo, uint64_t seed, const void *key,
                                 size_t len);

/* Name ("xxh3", "murmur3", "redisbloom", "murmur64a", "mulshift",
 * "vmulshift", "mulmix") or NULL;
 * and back: AMQ_OK, AMQ_EHASH for a name it does not know. */
AMQ_API const char *amq_hash_algo_name(uint32_t algo);
AMQ_API int amq_hash_algo_from_name(const char *name, uint32_t *algo);

/* A bijective 64-bit mixer (the murmur3 fmix64 finalizer); used to derive a
 * second hash from a single 64-bit one. */
static inline uint64_t amq_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

#ifdef __cplusplus
}
#endif

#endif /* AMQ_HASH_H */
