/*
 * layout_bits.h - what the expandable prototypes' layouts share: the
 * expandable kind's 16-bit entry (fingerprint bits, a 1 marker, zeros; void
 * 0x8000) and the unary bitmaps some of them keep (a bucket's entries as 1s,
 * then a 0).  Measurement only, not part of libamq.
 */
#ifndef AMQ_BENCH_LAYOUT_BITS_H
#define AMQ_BENCH_LAYOUT_BITS_H

#include <emmintrin.h>
#include <stdint.h>

/* The full-length entry of hash u under q address bits: the next 15 bits. */
static inline uint16_t entry_at(uint64_t u, uint32_t q)
{
    return (uint16_t)(((u << q) >> 48) | 1u);
}

/* Does entry s answer a key whose full-length entry is qv?  The bits above
 * s's marker must agree; s ^ (s - 1) is the marker and the zeros under it. */
static inline int lane_matches(uint16_t s, uint16_t qv)
{
    uint16_t low = (uint16_t)(s ^ (uint16_t)(s - 1u));
    return s != 0 && (uint16_t)((s ^ qv) & (uint16_t)~low) == 0;
}

/* Two bits per 16-bit lane of the 8 at p that answers qv (an empty lane
 * answers: the caller masks the lanes that are not the bucket's). */
static inline uint32_t match8(const void *p, uint16_t qv)
{
    const __m128i s = _mm_loadu_si128((const __m128i *)p);
    const __m128i low = _mm_xor_si128(s, _mm_sub_epi16(s, _mm_set1_epi16(1)));
    const __m128i d = _mm_andnot_si128(low, _mm_xor_si128(s, _mm_set1_epi16((short)qv)));
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(d, _mm_setzero_si128()));
}

/* The entry counts by length (cnt[0] void .. cnt[15]) once a doubling has
 * split every bucket: each entry one bit shorter, a void one two; the total. */
static inline uint64_t counts_after_doubling(uint64_t *cnt)
{
    uint64_t total = 0;
    uint32_t l;
    cnt[0] = 2 * cnt[0] + cnt[1];
    for (l = 1; l < 15u; l++)
        cnt[l] = cnt[l + 1];
    cnt[15] = 0;
    for (l = 0; l <= 15u; l++)
        total += cnt[l];
    return total;
}

static inline uint64_t pdep64(uint64_t src, uint64_t mask)
{
#if defined(__BMI2__)
    return __builtin_ia32_pdep_di(src, mask);
#else
    uint64_t r = 0, bb;
    for (bb = 1; mask != 0; bb += bb) {
        if (src & bb)
            r |= mask & -mask;
        mask &= mask - 1;
    }
    return r;
#endif
}

static inline uint64_t pext64(uint64_t src, uint64_t mask)
{
#if defined(__BMI2__)
    return __builtin_ia32_pext_di(src, mask);
#else
    uint64_t r = 0, bb;
    for (bb = 1; mask != 0; bb += bb) {
        if (src & mask & -mask)
            r |= bb;
        mask &= mask - 1;
    }
    return r;
#endif
}

/* The position of zero number r (from 0) of a unary bitmap of 3 words or
 * more that has more than r zeros: the word found without a branch among
 * the first 4, by a loop past them. */
static inline uint32_t select0(const uint64_t *u, uint32_t r)
{
    const uint32_t p1 = 64u - (uint32_t)__builtin_popcountll(u[0]);
    const uint32_t p2 = p1 + 64u - (uint32_t)__builtin_popcountll(u[1]);
    const uint32_t p3 = p2 + 64u - (uint32_t)__builtin_popcountll(u[2]);
    uint32_t i = (uint32_t)(r >= p1) + (uint32_t)(r >= p2) + (uint32_t)(r >= p3), c;
    uint64_t z;
    r -= i == 0 ? 0 : i == 1 ? p1 : i == 2 ? p2 : p3;
    for (;;) {
        z = ~u[i];
        c = (uint32_t)__builtin_popcountll(z);
        if (__builtin_expect(r < c, 1))
            return i * 64u + (uint32_t)__builtin_ctzll(pdep64(UINT64_C(1) << r, z));
        r -= c;
        i++;
    }
}

/* The 1s from position p up to the next 0 (a bucket's end: there is one). */
static inline uint32_t run_from(const uint64_t *u, uint32_t p)
{
    uint32_t i = p >> 6, s = p & 63u, len;
    uint64_t w = ~(u[i] >> s);
    len = w != 0 ? (uint32_t)__builtin_ctzll(w) : 64u;
    if (__builtin_expect(len < 64u - s, 1))
        return len;
    len = 64u - s;
    for (;;) {
        w = ~u[++i];
        if (w != 0)
            return len + (uint32_t)__builtin_ctzll(w);
        len += 64u;
    }
}

#endif /* AMQ_BENCH_LAYOUT_BITS_H */
