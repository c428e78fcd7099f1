/*
 * layout_lines.h - a prototype of the expandable filter in line-packed blocks
 * (measurement only, not part of libamq): the expandable kind's 16-bit
 * entries and doubling, 256 buckets to a block, a block a run of 64-byte
 * lines each holding whole buckets (a unary bitmap of the buckets' entry
 * counts from the line's first bit up, the entries from its last lane
 * down), and a directory entry per block naming its lines and the first
 * bucket of each, so that a query reads the directory (small: cached) and
 * one line.
 */
#ifndef AMQ_BENCH_LAYOUT_LINES_H
#define AMQ_BENCH_LAYOUT_LINES_H

#include <stddef.h>
#include <stdint.h>

#define XL_FP_BITS 15u
#define XL_BLOCK_BITS 8u
#define XL_MAX_LINES 13u

typedef struct {
    uint32_t loc;     /* (chunk index << 4) | lines; 0 lines: no chunk */
    uint8_t bnd[12];  /* first bucket of lines 1 .. lines - 1 */
} xl_dir;

typedef struct {
    uint8_t *base;   /* chunks of `lines` 64-byte lines, 64-byte aligned */
    uint32_t *owner; /* the block of each chunk (bit 31: its level's q & 1) */
    uint64_t count, cap;
    uint64_t touched; /* a mapped array's bytes written since last given back */
    int mapped;
} xl_class;

typedef struct xl_filter {
    uint32_t q, q0;
    uint64_t items, total, limit;
    uint64_t cnt[XL_FP_BITS + 1];
    xl_dir *dir;  /* 2^(q - 8) blocks */
    xl_dir *odir; /* during a doubling: level q - 1's */
    uint64_t mig; /* old blocks split (UINT64_MAX: no doubling pending) */
    double load;  /* entries per bucket at which the table doubles */
    uint64_t repacks, pairs;
    xl_class cls[XL_MAX_LINES + 1];
} xl_filter;

xl_filter *xl_new(uint64_t capacity, double load);
void xl_free(xl_filter *x);
int xl_add(xl_filter *x, uint64_t h1);
int xl_contains(const xl_filter *x, uint64_t h1);
int xl_remove(xl_filter *x, uint64_t h1);
void xl_contains_batch(const xl_filter *x, const uint64_t *h1, size_t n, uint8_t *out);
uint64_t xl_bytes(const xl_filter *x);
int xl_check(const xl_filter *x);

#endif /* AMQ_BENCH_LAYOUT_LINES_H */
