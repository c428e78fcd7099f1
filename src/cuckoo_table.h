/*
 * cuckoo_table.h - arrays of packed fingerprints, shared by the cuckoo
 * kinds (cuckoo.c, scalable_cuckoo.c).  Internal: not installed.
 *
 * A table is nb buckets of b slots of f bits (4 <= f <= 32), slot s of the
 * whole array at bit s * f, little-endian: slots are packed (12-bit slots
 * two per three bytes, 10-bit slots four per five), never padded.  0 marks an empty slot, so
 * fingerprints are never 0.  Every table is followed by at least
 * CT_PAD zero bytes so that a bucket can be read with whole 64-bit loads.
 *
 * Buckets are searched a 64-bit "lane" at a time with the has-zero-field
 * trick (x - ONES) & ~x & HIGHS: a lane holds up to 8 slots of 8 bits, 4 of
 * 16, or as many (a power of two) as fit in 57 bits.  The trick flags every zero field exactly as far as "is there
 * one" and "which is the lowest" go, which is all the callers ask.
 */
#ifndef AMQ_CUCKOO_TABLE_H
#define AMQ_CUCKOO_TABLE_H

#include <stdint.h>
#include <string.h>

#include "common/endian.h"

#define CT_PAD 8u

/* Bytes of a table of nslots slots of f bits, padding included, rounded
 * up to whole 64-bit words.  nslots * f must not overflow (callers bound
 * nslots). */
static inline uint64_t ct_bytes(uint64_t nslots, uint32_t f)
{
    uint64_t bytes = (nslots * f + 7) / 8;
    return (bytes + 7) / 8 * 8 + CT_PAD;
}

/* The mask of an f-bit field (f <= 32). */
static inline uint64_t ct_field_mask(uint32_t f)
{
    return (UINT64_C(1) << f) - 1;
}

/* A slot of any width up to 32 bits is inside the 64-bit word loaded at its
 * first byte (at most 7 + 32 bits); the table's padding keeps that load
 * inside the table for the last slot. */
static inline uint32_t ct_get(const uint8_t *d, uint32_t f, uint64_t slot)
{
    uint64_t bit;
    switch (f) {
    case 8:
        return d[slot];
    case 16:
        return amq_load16(d + 2 * slot);
    default:
        bit = slot * f;
        return (uint32_t)((amq_load64(d + (bit >> 3)) >> (bit & 7)) & ct_field_mask(f));
    }
}

static inline void ct_set(uint8_t *d, uint32_t f, uint64_t slot, uint32_t v)
{
    uint64_t bit, w;
    unsigned sh;
    switch (f) {
    case 8:
        d[slot] = (uint8_t)v;
        break;
    case 16:
        amq_store16(d + 2 * slot, (uint16_t)v);
        break;
    default:
        bit = slot * f;
        sh = (unsigned)(bit & 7);
        w = amq_load64(d + (bit >> 3));
        w = (w & ~(ct_field_mask(f) << sh)) | (((uint64_t)v & ct_field_mask(f)) << sh);
        amq_store64(d + (bit >> 3), w);
        break;
    }
}

/* Slots per 64-bit lane for f-bit fingerprints in buckets of b slots: the
 * largest power of two (so that lanes tile the bucket) whose fields fit in
 * the 57 bits a byte-addressed 64-bit load always holds, or, for 8 and 16
 * bits, whose lanes start on whole bytes. */
static inline uint32_t ct_lane_slots(uint32_t f, uint32_t b)
{
    uint32_t per = f == 8 ? 8u : f == 16 ? 4u : 1u;
    if (f != 8 && f != 16)
        while (per * 2 * f <= 57)
            per *= 2;
    return b < per ? b : per;
}

/* The lane of nf slots starting at slot s, in the low nf * f bits. */
static inline uint64_t ct_lane(const uint8_t *d, uint32_t f, uint64_t s, uint32_t nf)
{
    uint64_t bit = s * f, w = amq_load64(d + (bit >> 3)) >> (bit & 7);
    uint32_t width = nf * f;
    return width >= 64 ? w : (w & ((UINT64_C(1) << width) - 1));
}

/* ONES has bit 0 of each of nf fields of f bits set. */
static inline uint64_t ct_ones(uint32_t f, uint32_t nf)
{
    uint64_t ones = 0;
    uint32_t i;
    for (i = 0; i < nf; i++)
        ones |= UINT64_C(1) << (i * f);
    return ones;
}

/* Nonzero iff some field of the lane is zero; the lowest set bit is at the
 * top of the lowest zero field. */
static inline uint64_t ct_zero_fields(uint64_t w, uint64_t ones, uint32_t f)
{
    return (w - ones) & ~w & (ones << (f - 1));
}

/* Nonzero iff some field of the lane equals v. */
static inline uint64_t ct_match_fields(uint64_t w, uint32_t v, uint64_t ones, uint32_t f)
{
    return ct_zero_fields(w ^ ((uint64_t)v * ones), ones, f);
}

/* The bucket functions below take b in {1, 2, 4, 8} (whole lanes); the
 * scalable kind, whose buckets may have up to 255 slots, scans instead. */

/* 1 if bucket i (b slots) holds fingerprint v. */
static inline int ct_bucket_has(const uint8_t *d, uint32_t f, uint32_t b, uint64_t i,
                                uint32_t v)
{
    uint32_t nf = ct_lane_slots(f, b), l;
    uint64_t ones = ct_ones(f, nf), s = i * b;
    for (l = 0; l < b; l += nf)
        if (ct_match_fields(ct_lane(d, f, s + l, nf), v, ones, f))
            return 1;
    return 0;
}

/* Slot index (absolute) of the first empty slot of bucket i, or -1. */
static inline int64_t ct_bucket_empty(const uint8_t *d, uint32_t f, uint32_t b, uint64_t i)
{
    uint32_t nf = ct_lane_slots(f, b), l;
    uint64_t ones = ct_ones(f, nf), s = i * b, z;
    for (l = 0; l < b; l += nf) {
        z = ct_zero_fields(ct_lane(d, f, s + l, nf), ones, f);
        if (z)
            return (int64_t)(s + l + (uint64_t)__builtin_ctzll(z) / f);
    }
    return -1;
}

/* Slot index of the first slot of bucket i holding v, or -1. */
static inline int64_t ct_bucket_find(const uint8_t *d, uint32_t f, uint32_t b, uint64_t i,
                                     uint32_t v)
{
    uint32_t nf = ct_lane_slots(f, b), l;
    uint64_t ones = ct_ones(f, nf), s = i * b, z;
    for (l = 0; l < b; l += nf) {
        z = ct_match_fields(ct_lane(d, f, s + l, nf), v, ones, f);
        if (z)
            return (int64_t)(s + l + (uint64_t)__builtin_ctzll(z) / f);
    }
    return -1;
}

/* Copies of v in bucket i. */
static inline uint32_t ct_bucket_count(const uint8_t *d, uint32_t f, uint32_t b, uint64_t i,
                                       uint32_t v)
{
    uint32_t j, n = 0;
    for (j = 0; j < b; j++)
        n += ct_get(d, f, i * b + j) == v;
    return n;
}

/* Number of nonzero slots among the first nslots. */
static inline uint64_t ct_count_used(const uint8_t *d, uint32_t f, uint64_t nslots)
{
    uint64_t s, n = 0;
    if (f == 8) {
        for (s = 0; s < nslots; s++)
            n += d[s] != 0;
        return n;
    }
    for (s = 0; s < nslots; s++)
        n += ct_get(d, f, s) != 0;
    return n;
}

/* 1 if every byte of the table past the last slot's bits (the padding,
 * and the unused bits of the last byte) is zero. */
static inline int ct_tail_clean(const uint8_t *d, uint64_t size, uint32_t f, uint64_t nslots)
{
    uint64_t bits = nslots * f, full = bits / 8, i;
    if ((bits & 7) && (d[full] >> (bits & 7)) != 0)
        return 0;
    for (i = full + ((bits & 7) ? 1 : 0); i < size; i++)
        if (d[i] != 0)
            return 0;
    return 1;
}

#endif /* AMQ_CUCKOO_TABLE_H */
