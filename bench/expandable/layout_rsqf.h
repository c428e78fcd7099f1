/*
 * layout_rsqf.h - a prototype of an expandable filter laid out as a rank-and-select
 * quotient filter whose slot of a key is range-reduced (h1 * M >> 64), so
 * that it can grow by any factor (measurement only, not part of libamq).
 * Lines of 64 bytes hold 28 slots: an 8-bit offset, 28 occupied bits, 28
 * run-end bits, 28 16-bit entries (0: empty).  An entry holds the bits of
 * h1 from position k - 1 (k = floor(log2 M)) with a 1 marker after them, so
 * that a key's entry needs no division; growth rebuilds the table at M *
 * growth, an entry keeping its prefix (one bit fewer when k grows).
 */
#ifndef AMQ_BENCH_LAYOUT_RSQF_H
#define AMQ_BENCH_LAYOUT_RSQF_H

#include <stddef.h>
#include <stdint.h>

typedef struct xq_filter {
    uint64_t m;      /* slots a key may have */
    uint64_t blocks; /* lines: m's and room for runs past the last slot */
    uint32_t k;      /* floor(log2 m) */
    uint32_t k0;
    uint64_t items, entries;
    uint64_t grows;
    double max_load, growth;
    uint8_t *t;
} xq_filter;

xq_filter *xq_new(uint64_t capacity, double max_load, double growth);
void xq_free(xq_filter *x);
int xq_add(xq_filter *x, uint64_t h1);
int xq_contains(const xq_filter *x, uint64_t h1);
void xq_contains_batch(const xq_filter *x, const uint64_t *h1, size_t n, uint8_t *out);
uint64_t xq_bytes(const xq_filter *x);
int xq_check(const xq_filter *x);

#endif /* AMQ_BENCH_LAYOUT_RSQF_H */
