/*
 * layout_chunks.h - a prototype of the expandable filter with its memory
 * following its entries (measurement only, not part of libamq): buckets of
 * 16-bit entries as the expandable kind has them, 128 buckets to a block, each block one chunk
 * sized to its entries (a unary bitmap of bucket ends, then the entries),
 * so that memory follows the entries and not the bucket count a doubling
 * leaves half empty.
 */
#ifndef AMQ_BENCH_LAYOUT_CHUNKS_H
#define AMQ_BENCH_LAYOUT_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#define XP_FP_BITS 15u
#define XP_BLOCK_BITS 7u
#define XP_CLASSES 256u /* chunk capacities 4, 8, ..., 1020 entries */

typedef struct {
    uint8_t *base;
    uint64_t count, cap; /* chunks */
    uint64_t touched;    /* bytes of a mapped array ever written (resident) */
    int mapped;
} xp_class;

typedef struct xp_filter {
    uint32_t q, q0;
    uint64_t items, total, limit;
    uint64_t cnt[XP_FP_BITS + 1];
    uint32_t *dir;  /* 2^(q - 7) blocks: (index << 8) | class, or XP_NONE */
    uint32_t *odir; /* during a doubling: level q - 1's blocks */
    uint64_t mig;   /* old blocks split (UINT64_MAX when no doubling is pending) */
    double load;    /* entries per bucket at which the table doubles */
    xp_class cls[XP_CLASSES];
} xp_filter;

#define XP_NONE UINT32_C(0xFFFFFFFF)

xp_filter *xp_new(uint64_t capacity, double load);
void xp_free(xp_filter *x);
/* 1 added, or a negative status (AMQ_EFULL: the key's copies are at their bound). */
int xp_add(xp_filter *x, uint64_t h1);
int xp_contains(const xp_filter *x, uint64_t h1);
/* 1 removed, 0 nothing answers the key. */
int xp_remove(xp_filter *x, uint64_t h1);
void xp_contains_batch(const xp_filter *x, const uint64_t *h1, size_t n, uint8_t *out);
/* Bytes held: the chunk arrays (a heap array's capacity, a mapped one's
 * written pages) and the directories. */
uint64_t xp_bytes(const xp_filter *x);
/* Checks every chunk's header, owner and counts; 0 when consistent. */
int xp_check(const xp_filter *x);

#endif /* AMQ_BENCH_LAYOUT_CHUNKS_H */
