/*
 * xxh3_8.h - h1 of an 8-byte key under XXH3 (amq_filter_hash's low half of
 * XXH3-128), written out from the published algorithm's 4-to-8-byte branch:
 * no length dispatch and no call, for the one-key paths of kinds that hash
 * inside their query.  The seed's part is folded once per filter
 * (amq_xxh3_8_mask); tests compare it with amq_filter_hash.
 */
#ifndef AMQ_COMMON_XXH3_8_H
#define AMQ_COMMON_XXH3_8_H

#include <stdint.h>

#include "common/endian.h"

/* XXH3's default secret, bytes 16-23 xor bytes 24-31, plus the seed mixed
 * with its byte-swapped low half (the 4-to-8-byte branch). */
static inline uint64_t amq_xxh3_8_mask(uint64_t seed)
{
    const uint64_t s = seed ^ (uint64_t)__builtin_bswap32((uint32_t)seed) << 32;
    return (UINT64_C(0xdb979083e96dd4de) ^ UINT64_C(0x1f67b3b7a4a44072)) + s;
}

static inline uint64_t amq_xxh3_8(uint64_t mask, const void *key)
{
    const unsigned __int128 m =
        (unsigned __int128)(amq_load64(key) ^ mask) * UINT64_C(0x9e3779b185ebcaa7); /* P1 + 32 */
    uint64_t lo = (uint64_t)m;
    const uint64_t hi = (uint64_t)(m >> 64) + (lo << 1);
    lo ^= hi >> 3;
    lo ^= lo >> 35;
    lo *= UINT64_C(0x9fb21c651e98df25);
    return lo ^ (lo >> 28);
}

#endif /* AMQ_COMMON_XXH3_8_H */
