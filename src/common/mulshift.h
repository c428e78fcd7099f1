/*
 * mulshift.h - AMQ_HASH_MULSHIFT, AMQ_HASH_VMULSHIFT and AMQ_HASH_MULMIX
 * (amq/hash.h):
 * Dietzfelbinger's multiply-add-shift over 128 bits, h(x) = ((a * x + b)
 * mod 2^128) >> 64, a strongly universal family for 64-bit x, applied to
 * the key itself when it is 8 bytes long and to XXH3-64(key, seed)
 * otherwise (vmulshift: a 16-byte key's two words, a * x0 + a1 * x1 + b).
 * An 8-byte key costs one 64 x 64 multiply, one 64 x 64 -> 128 multiply
 * and an add: the cuckoo filter's one-key paths are bound by their
 * instruction count.
 *
 * a and b come from the seed by splitmix64 (Steele, Lea, Flood): the seed
 * is the generator's state, and four outputs give a's high and low words
 * (the low one made odd) and b's high and low words, in that order; two
 * more give a1's high and low words.
 */
#ifndef AMQ_COMMON_MULSHIFT_H
#define AMQ_COMMON_MULSHIFT_H

#include <stdint.h>

#include "amq/hash.h"

typedef unsigned __int128 amq_u128;

/* 1 for mulshift and vmulshift: they hash an 8-byte key alike, and their
 * h2 is h1 rotated. */
static inline int amq_ms_family(uint32_t algo)
{
    return algo == AMQ_HASH_MULSHIFT || algo == AMQ_HASH_VMULSHIFT;
}

/* 1 for the algorithms of this header, mulmix too: one 64-bit hash, h2 its
 * rotation (the Bloom kinds' double hashing refuses them). */
static inline int amq_ms_one_word(uint32_t algo)
{
    return amq_ms_family(algo) || algo == AMQ_HASH_MULMIX;
}

typedef struct amq_ms_key {
    amq_u128 a, b;
} amq_ms_key;

static inline uint64_t amq_ms_splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline amq_ms_key amq_ms_key_for(uint64_t seed)
{
    amq_ms_key k;
    uint64_t s = seed, a_hi, a_lo, b_hi, b_lo;
    a_hi = amq_ms_splitmix(&s);
    a_lo = amq_ms_splitmix(&s) | 1;
    b_hi = amq_ms_splitmix(&s);
    b_lo = amq_ms_splitmix(&s);
    k.a = ((amq_u128)a_hi << 64) | a_lo;
    k.b = ((amq_u128)b_hi << 64) | b_lo;
    return k;
}

/* amq_ms_key_for(0) written out: the seed of nearly every filter, and a
 * per-key call need not run splitmix64. */
static inline amq_ms_key amq_ms_key0(void)
{
    amq_ms_key k;
    k.a = ((amq_u128)UINT64_C(0xe220a8397b1dcdaf) << 64) | UINT64_C(0x6e789e6aa1b965f5);
    k.b = ((amq_u128)UINT64_C(0x06c45d188009454f) << 64) | UINT64_C(0xf88bb8a8724c81ec);
    return k;
}

static inline uint64_t amq_ms_apply(amq_u128 a, amq_u128 b, uint64_t x)
{
    return (uint64_t)((a * x + b) >> 64);
}

/* AMQ_HASH_VMULSHIFT's a1: splitmix64's fifth and sixth outputs of the
 * seed (high word, low word), after the four of amq_ms_key_for. */
static inline amq_u128 amq_ms_a1_for(uint64_t seed)
{
    uint64_t s = seed + 4 * UINT64_C(0x9e3779b97f4a7c15), hi;
    hi = amq_ms_splitmix(&s);
    return ((amq_u128)hi << 64) | amq_ms_splitmix(&s);
}

/* amq_ms_a1_for(0) written out. */
static inline amq_u128 amq_ms_a1_0(void)
{
    return ((amq_u128)UINT64_C(0x1b39896a51a8749b) << 64) | UINT64_C(0x53cb9f0c747ea2ea);
}

/* Vector multiply-add-shift of a 16-byte key's two words (Thorup, "High
 * Speed Hashing for Integers and Strings", 3.5: strongly universal for
 * 64-bit outputs of 64-bit words in 128-bit arithmetic). */
static inline uint64_t amq_ms_apply2(amq_u128 a, amq_u128 a1, amq_u128 b, uint64_t x0,
                                     uint64_t x1)
{
    return (uint64_t)((a * x0 + a1 * x1 + b) >> 64);
}

/* The pair of a 64-bit h: h2 is h rotated by 32 bits, so that a consumer
 * of h2's high half (the cuckoo filter's fingerprint) reads h's low half,
 * which the bucket index (h1's high bits) does not. */
static inline uint64_t amq_ms_h2(uint64_t h)
{
    return (h << 32) | (h >> 32);
}

/* AMQ_HASH_MULMIX's final mix of mulshift's h: xor-shift, multiply.
 * Under mulshift, integer keys in arithmetic progression x0 + k * s give
 * an h that is itself nearly a progression mod 2^64, and the cuckoo
 * filter's bucket (h's top bits) and fingerprint (bits 20-31) are two
 * slices of it: a lattice, on which some strides (8192, 2^20, many odd
 * ones) pile keys into few buckets.  z = h ^ (h >> 32) is not linear mod
 * 2^64, and its low half holds both of h's; the multiply carries all of z
 * into the top bits (the bucket) and z's low half into bits 20-31 (the
 * fingerprint), so both depend on all 64 bits of h.  A bijection (each
 * step is): two keys collide in h1 exactly when they do under mulshift.
 * A third step (h ^= h >> 29) would also mix the low bits, which the
 * cuckoo filter does not read, for a longer one-key query.  The
 * multiplier is splitmix64's first. */
#define AMQ_MULMIX_K UINT64_C(0xbf58476d1ce4e5b9)

static inline uint64_t amq_ms_mix(uint64_t h)
{
    h ^= h >> 32;
    return h * AMQ_MULMIX_K;
}

#endif /* AMQ_COMMON_MULSHIFT_H */
