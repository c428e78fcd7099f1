/*
 * amq/fuse_view.h - a binary fuse filter's one-key query compiled into the
 * caller's own loop (part of <amq/advanced.h>: not frozen).
 *
 * amq_filter_contains reaches a fuse filter's query through the handle: a
 * call per key, and the filter's constants (where its bytes are, the
 * segment geometry) loaded from memory on every call.  A view copies those
 * constants into a small struct the caller keeps; the query functions
 * below are static inline, so a loop over keys holds them in registers,
 * as header-only filters do (the reference code of binary fuse filters is
 * a header too).  The answers are exactly amq_filter_contains's, for every
 * key and every fuse file amq reads.
 *
 * The h1 of an 8- or 16-byte key is computed inline for the three hashes
 * with seed 0 that the fuse kind makes or has made by default:
 * AMQ_HASH_VMULSHIFT (the default since issue 41's tenth round:
 * multiply-add-shift of an 8-byte key, of a 16-byte key's two words),
 * AMQ_HASH_MULSHIFT (the default from its sixth round: the same for 8
 * bytes, of XXH3-64 of a 16-byte key) and AMQ_HASH_XXH3 (XXH3-128's low
 * half, the default before), each written here from its specification
 * (tests check them against amq_hash_key and libxxhash).  Other lengths,
 * hashes or seeds go through amq_filter_hash (a call).
 */
#ifndef AMQ_FUSE_VIEW_H
#define AMQ_FUSE_VIEW_H

#ifndef AMQ_ADVANCED_API
#error "amq/fuse_view.h is not part of the stable API: define AMQ_ADVANCED_API first"
#endif

#include <stdint.h>
#include <string.h>

#include "amq/common.h"
#include "amq/filter.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One partition: a key's x is h1 (mix 0) or amq_mix64(h1 ^ mulseed) (mix
 * 1: a partition whose first construction failed, or a file of derivation
 * 0, docs/file-format.md); its first position is (x << hshift) * span >>
 * 64, the next ones one segment further each, xor-ed with other bits of x. */
typedef struct amq_fuse_view_part {
    const uint8_t *data; /* the fingerprints (8 or 16 bits, little-endian) */
    uint64_t span;       /* segment_count * segment_length */
    uint64_t mulseed;    /* mix 1: the partition's seed times 0x9e3779b97f4a7c15 */
    uint32_t seglen;     /* segment_length, a power of two */
    uint32_t hshift;     /* mix 0: the partition bits (h1 below them places the key) */
    uint32_t mix;
    uint32_t reserved;
} amq_fuse_view_part;

typedef struct amq_fuse_view {
    const amq_fuse_view_part *parts; /* 2^pbits partitions by h1's top bits */
    uint32_t pbits;
    uint32_t bits;   /* fingerprint bits: 8 or 16 */
    uint32_t arity;  /* 3 or 4 */
    uint32_t xxh3_0; /* 1: the filter hashes with XXH3, seed 0 */
    /* 1: one partition of mix 0 and XXH3 or (v)mulshift seed 0 - every fuse
     * filter amq builds by default of up to 2^27 keys held in memory (2^24
     * after a spill), unless its first construction failed (about one in
     * forty) - whose query is then data, span, seglen */
    uint32_t plain;
    uint32_t seglen;
    const uint8_t *data;
    uint64_t span;
    const amq_filter *filter; /* for keys amq_fuse_view_h1 does not hash inline */
    /* 1: 2^pbits partitions (pbits >= 1), every one of mix 0 and of one
     * geometry, XXH3 seed 0, partition i's fingerprints at data + i *
     * stride - a fuse filter amq builds in memory of more than 2^27 keys
     * or with amq_config.partitions, or one it built of more than 2^24
     * after a spill once saved and loaded, unless a partition's first
     * construction failed - whose query finds its partition by arithmetic,
     * without reading parts */
    uint32_t strided;
    uint32_t ms0;  /* 1: the filter hashes with AMQ_HASH_MULSHIFT, seed 0 */
    uint32_t vms0; /* 1: the filter hashes with AMQ_HASH_VMULSHIFT, seed 0 */
    uint64_t stride;
} amq_fuse_view;

/* The shapes amq_fuse_view_contains_as takes: through the partitions'
 * table (any view), one plain partition (v->plain), strided (v->strided);
 * plain and strided hash 8- and 16-byte keys inline, with XXH3 seed 0, with
 * mulshift seed 0 when AMQ_FUSE_VIEW_MS is or-ed in (v->ms0), or with
 * vmulshift seed 0 when AMQ_FUSE_VIEW_VMS is (v->vms0). */
#define AMQ_FUSE_VIEW_TABLE 0
#define AMQ_FUSE_VIEW_PLAIN 1
#define AMQ_FUSE_VIEW_STRIDED 2
#define AMQ_FUSE_VIEW_MS 4
#define AMQ_FUSE_VIEW_VMS 8

/*
 * Fills *v from a fuse filter: AMQ_OK, or AMQ_EKIND (*v untouched) for any
 * other kind.  The view borrows the filter's bytes: it is valid while f
 * lives, and like f may be read from any number of threads.  O(1).
 */
AMQ_API int amq_fuse_view_get(const amq_filter *f, amq_fuse_view *v);

/* ---- inline: XXH3-128's low half for 8 and 16 bytes, seed 0 ----------------------------- */


__extension__ typedef unsigned __int128 amq_fuse_view_u128_; /* gcc and clang */

/* Inlined even where the compiler would not: the point of the header. */
#define AMQ_FUSE_VIEW_INLINE static inline __attribute__((always_inline))

AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_le64_(const void *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, sizeof v); /* one load */
    return v;
#else
    const uint8_t *b = (const uint8_t *)p;
    return (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24 |
           (uint64_t)b[4] << 32 | (uint64_t)b[5] << 40 | (uint64_t)b[6] << 48 |
           (uint64_t)b[7] << 56;
#endif
}

AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_mul128_(uint64_t a, uint64_t b, uint64_t *hi)
{
    amq_fuse_view_u128_ m = (amq_fuse_view_u128_)a * b;
    *hi = (uint64_t)(m >> 64);
    return (uint64_t)m;
}

/* XXH3-128(key, 8, seed 0).low64: the 4-to-8-byte path with its default
 * secret's words 2 and 3 folded into one constant. */
AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_xxh3_8(const void *key)
{
    uint64_t hi, lo = amq_fuse_view_mul128_(amq_fuse_view_le64_(key) ^ UINT64_C(0xc4f023344dc994ac),
                                            UINT64_C(0x9e3779b185ebca87) + (8 << 2), &hi);
    hi += lo << 1;
    lo ^= hi >> 3;
    lo ^= lo >> 35;
    lo *= UINT64_C(0x9fb21c651e98df25);
    return lo ^ (lo >> 28);
}

/* XXH3-128(key, 16, seed 0).low64: the 9-to-16-byte path. */
AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_xxh3_16(const void *key)
{
    const uint8_t *k = (const uint8_t *)key;
    uint64_t in_hi = amq_fuse_view_le64_(k + 8), mhi, hhi, lo, mlo;
    mlo = amq_fuse_view_mul128_(amq_fuse_view_le64_(k) ^ in_hi ^ UINT64_C(0x59973f0033362349),
                                UINT64_C(0x9e3779b185ebca87), &mhi);
    mlo += (uint64_t)15 << 54;
    in_hi ^= UINT64_C(0xc202797692d63d58);
    mhi += in_hi + (uint64_t)(uint32_t)in_hi * (UINT64_C(0x85ebca77) - 1);
    mlo ^= __builtin_bswap64(mhi);
    lo = amq_fuse_view_mul128_(mlo, UINT64_C(0xc2b2ae3d27d4eb4f), &hhi);
    lo ^= lo >> 37;
    lo *= UINT64_C(0x165667919e3779f9);
    return lo ^ (lo >> 32);
}

/* XXH3-64(key, 16, seed 0): the 9-to-16-byte path with its default
 * secret's words folded into two constants (the inner hash of mulshift). */
AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_xxh3_64_16(const void *key)
{
    const uint8_t *k = (const uint8_t *)key;
    uint64_t lo = amq_fuse_view_le64_(k) ^ UINT64_C(0x6782737bea4239b9), hi, mhi, mlo, acc;
    hi = amq_fuse_view_le64_(k + 8) ^ UINT64_C(0xaf56bc3b0996523a);
    mlo = amq_fuse_view_mul128_(lo, hi, &mhi);
    acc = 16 + __builtin_bswap64(lo) + hi + (mlo ^ mhi);
    acc ^= acc >> 37;
    acc *= UINT64_C(0x165667919e3779f9);
    return acc ^ (acc >> 32);
}

/* AMQ_HASH_MULSHIFT's h1 of the 64-bit x with seed 0: ((a * x + b) mod
 * 2^128) >> 64, a and b the seed's constants (docs/file-format.md): one
 * 64 x 64 -> 128 multiply, one 64 x 64 multiply, adds (a_lo * x + b_lo
 * cannot overflow 128 bits). */
AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_ms0_(uint64_t x)
{
    const amq_fuse_view_u128_ lo =
        (amq_fuse_view_u128_)x * UINT64_C(0x6e789e6aa1b965f5) + UINT64_C(0xf88bb8a8724c81ec);
    return (uint64_t)(lo >> 64) + x * UINT64_C(0xe220a8397b1dcdaf) + UINT64_C(0x06c45d188009454f);
}

/* The h1 of mulshift seed 0 for an 8-byte key (the key itself is x). */
AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_ms0_8(const void *key)
{
    return amq_fuse_view_ms0_(amq_fuse_view_le64_(key));
}

/* The h1 of mulshift seed 0 for a 16-byte key (x = XXH3-64 of the key). */
AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_ms0_16(const void *key)
{
    return amq_fuse_view_ms0_(amq_fuse_view_xxh3_64_16(key));
}

/* The h1 of vmulshift seed 0 for a 16-byte key: ((a * x0 + a1 * x1 + b)
 * mod 2^128) >> 64 over its two words, the three products' high words
 * summed with the carry of their low ones. */
AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_vms0_16(const void *key)
{
    const uint8_t *k = (const uint8_t *)key;
    const uint64_t x0 = amq_fuse_view_le64_(k), x1 = amq_fuse_view_le64_(k + 8);
    const amq_fuse_view_u128_ lo = (amq_fuse_view_u128_)x0 * UINT64_C(0x6e789e6aa1b965f5) +
                                   (amq_fuse_view_u128_)x1 * UINT64_C(0x53cb9f0c747ea2ea) +
                                   UINT64_C(0xf88bb8a8724c81ec);
    return (uint64_t)(lo >> 64) + x0 * UINT64_C(0xe220a8397b1dcdaf) +
           x1 * UINT64_C(0x1b39896a51a8749b) + UINT64_C(0x06c45d188009454f);
}

/* ---- inline: the query ------------------------------------------------------------------ */

/* The key's h1 as amq_filter_hash(v->filter, key, len).h1 gives it. */
AMQ_FUSE_VIEW_INLINE uint64_t amq_fuse_view_h1(const amq_fuse_view *v, const void *key, size_t len)
{
    if (v->xxh3_0 && len == 8)
        return amq_fuse_view_xxh3_8(key);
    if (v->xxh3_0 && len == 16)
        return amq_fuse_view_xxh3_16(key);
    if ((v->ms0 || v->vms0) && len == 8) /* the two hash 8 bytes alike */
        return amq_fuse_view_ms0_8(key);
    if (v->ms0 && len == 16)
        return amq_fuse_view_ms0_16(key);
    if (v->vms0 && len == 16)
        return amq_fuse_view_vms0_16(key);
    return amq_filter_hash(v->filter, key, len).h1;
}

AMQ_FUSE_VIEW_INLINE uint32_t amq_fuse_view_slot_(const uint8_t *d, uint32_t bits, uint32_t pos)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t w;
    if (bits == 8)
        return d[pos];
    memcpy(&w, d + 2 * (size_t)pos, sizeof w);
    return w;
#else
    if (bits == 8)
        return d[pos];
    return (uint32_t)d[2 * (size_t)pos] | (uint32_t)d[2 * (size_t)pos + 1] << 8;
#endif
}

/* One partition's test of x, for one variant (bits and arity constants);
 * the partition's fields come as values, so that a caller's loop over one
 * partition reads them from registers and none waits on the key. */
AMQ_FUSE_VIEW_INLINE int amq_fuse_view_probe_at_(const uint8_t *data, uint64_t span,
                                                 uint32_t seglen, uint64_t xs, uint64_t x,
                                                 uint32_t bits, uint32_t arity)
{
    const uint32_t mask = seglen - 1;
    /* xs: x without the partition's bits (x << hshift) */
    const uint32_t h0 = (uint32_t)(((amq_fuse_view_u128_)xs * span) >> 64);
    uint32_t f = (uint32_t)(x ^ (x >> 32));

    f ^= amq_fuse_view_slot_(data, bits, h0);
    f ^= amq_fuse_view_slot_(data, bits, (h0 + seglen) ^ ((uint32_t)(x >> 18) & mask));
    f ^= amq_fuse_view_slot_(data, bits, (h0 + 2 * seglen) ^ ((uint32_t)x & mask));
    if (arity == 4)
        f ^= amq_fuse_view_slot_(
            data, bits,
            (h0 + 3 * seglen) ^ ((uint32_t)((x * UINT64_C(0x9e3779b97f4a7c15)) >> 40) & mask));
    return (bits == 8 ? (uint8_t)f : (uint16_t)f) == 0;
}

AMQ_FUSE_VIEW_INLINE int amq_fuse_view_probe_(const uint8_t *data, uint64_t span, uint32_t seglen,
                                              uint32_t hshift, uint64_t x, uint32_t bits,
                                              uint32_t arity)
{
    return amq_fuse_view_probe_at_(data, span, seglen, x << hshift, x, bits, arity);
}

/*
 * The query with the filter's variant and shape named by the caller as
 * constants - bits (v->bits: 8 or 16), arity (v->arity: 3 or 4), shape
 * (AMQ_FUSE_VIEW_PLAIN when v->plain, AMQ_FUSE_VIEW_STRIDED when
 * v->strided, either with AMQ_FUSE_VIEW_MS when v->ms0 or
 * AMQ_FUSE_VIEW_VMS when v->vms0,
 * AMQ_FUSE_VIEW_TABLE for any view: amq_fuse_view_shape) - so
 * that each combination compiles to its own code, with no test of them
 * per key (the reference code of binary fuse filters has a function per
 * width likewise).  A caller switches on them once, outside its loop over
 * keys; arguments that do not match the view give wrong answers.  With
 * plain or strided and an 8- or 16-byte key length known at the call, the
 * key is hashed inline without a test either.
 */
AMQ_FUSE_VIEW_INLINE int amq_fuse_view_contains_h1_as(const amq_fuse_view *v, uint64_t h1,
                                                      unsigned bits, unsigned arity, int shape)
{
    const amq_fuse_view_part *p;
    shape &= ~(AMQ_FUSE_VIEW_MS | AMQ_FUSE_VIEW_VMS); /* the hash is the caller's */
    if (shape == AMQ_FUSE_VIEW_PLAIN)
        return amq_fuse_view_probe_(v->data, v->span, v->seglen, 0, h1, bits, arity);
    /* The partition by arithmetic: h1 times 2^pbits is the partition (high
     * half) and h1 without its bits (low half), one multiply where two
     * variable shifts would each need the count in cl (without BMI2). */
    if (shape == AMQ_FUSE_VIEW_STRIDED) {
        const amq_fuse_view_u128_ m = (amq_fuse_view_u128_)h1 * ((uint64_t)1 << v->pbits);
        return amq_fuse_view_probe_at_(v->data + (uint64_t)(m >> 64) * v->stride, v->span,
                                       v->seglen, (uint64_t)m, h1, bits, arity);
    }
    /* two shifts: no shift by 64 for any pbits */
    p = &v->parts[h1 >> (63 - v->pbits) >> 1];
    return amq_fuse_view_probe_(p->data, p->span, p->seglen, p->hshift,
                                p->mix ? amq_mix64(h1 ^ p->mulseed) : h1, bits, arity);
}

AMQ_FUSE_VIEW_INLINE int amq_fuse_view_contains_as(const amq_fuse_view *v, const void *key,
                                                   size_t len, unsigned bits, unsigned arity,
                                                   int shape)
{
    uint64_t h1;
    if (shape != AMQ_FUSE_VIEW_TABLE && len == 8)
        h1 = shape & (AMQ_FUSE_VIEW_MS | AMQ_FUSE_VIEW_VMS) ? amq_fuse_view_ms0_8(key)
                                                            : amq_fuse_view_xxh3_8(key);
    else if (shape != AMQ_FUSE_VIEW_TABLE && len == 16)
        h1 = shape & AMQ_FUSE_VIEW_VMS  ? amq_fuse_view_vms0_16(key)
             : shape & AMQ_FUSE_VIEW_MS ? amq_fuse_view_ms0_16(key)
                                        : amq_fuse_view_xxh3_16(key);
    else
        h1 = amq_fuse_view_h1(v, key, len);
    return amq_fuse_view_contains_h1_as(v, h1, bits, arity, shape);
}

/* The shape of v to give amq_fuse_view_contains_as (outside the loop). */
AMQ_FUSE_VIEW_INLINE int amq_fuse_view_shape(const amq_fuse_view *v)
{
    const int ms = v->vms0 ? AMQ_FUSE_VIEW_VMS : v->ms0 ? AMQ_FUSE_VIEW_MS : 0;
    return v->plain     ? AMQ_FUSE_VIEW_PLAIN | ms
           : v->strided ? AMQ_FUSE_VIEW_STRIDED | ms
                        : AMQ_FUSE_VIEW_TABLE;
}

/* 1 if the key of this h1 may be in the filter, 0 if it certainly is not:
 * amq_filter_contains_hash's answer (h2 unused). */
AMQ_FUSE_VIEW_INLINE int amq_fuse_view_contains_h1(const amq_fuse_view *v, uint64_t h1)
{
    if (v->bits == 8)
        return v->arity == 3 ? amq_fuse_view_contains_h1_as(v, h1, 8, 3, 0)
                             : amq_fuse_view_contains_h1_as(v, h1, 8, 4, 0);
    return v->arity == 3 ? amq_fuse_view_contains_h1_as(v, h1, 16, 3, 0)
                         : amq_fuse_view_contains_h1_as(v, h1, 16, 4, 0);
}

/* amq_filter_contains(v->filter, key, len)'s answer, inline: tests the
 * variant per key (predictably); amq_fuse_view_contains_as does not. */
AMQ_FUSE_VIEW_INLINE int amq_fuse_view_contains(const amq_fuse_view *v, const void *key, size_t len)
{
    return amq_fuse_view_contains_h1(v, amq_fuse_view_h1(v, key, len));
}

#ifdef __cplusplus
}
#endif

#endif /* AMQ_FUSE_VIEW_H */
