/*
 * layout_rsqf.h - a prototype of an expandable filter laid out as a rank-and-select
 * quotient filter whose slot of a key is range-reduced (h1 * M >> 64), so
 * that it can grow by any factor (measurement only, not part of libamq).
 * Lines of 64 bytes hold 28 slots: an 8-bit offset, 28 occupied bits, 28
 * run-end bits, 28 16-bit entries (0: empty).  An entry holds bits of h1
 * with a 1 marker after them: a key's 15 from bit k = floor(log2 M) on, so
 * that it needs no division; an entry of 3 bits or fewer from bit k - 1, the
 * last of the slot's top bits, which tells which of two cells of 2^-k a slot
 * straddling them the key is in.  Growth rebuilds the table at M * growth,
 * an entry keeping its prefix (one bit fewer when k grows).  A key whose
 * entry runs out of bits becomes a range of h in a sorted list, and a void
 * lane (0x8000) in each slot the range meets sends a query there.  A run's
 * entries lie in order of the first keys of their ranges, so that a rebuild
 * writes each as it reads it.  An add places the key of XQ_PENDING adds
 * before it, fetching its own key's lines meanwhile; queries look at the
 * keys still pending too.
 */
#ifndef AMQ_BENCH_LAYOUT_RSQF_H
#define AMQ_BENCH_LAYOUT_RSQF_H

#include <stddef.h>
#include <stdint.h>

#define XQ_PENDING 16

typedef struct xq_filter {
    uint64_t m;      /* slots a key may have */
    uint8_t *t;
    uint64_t pend_sig;  /* bit h >> 58 of each pending key (below): most queries look no further */
    uint32_t k;      /* floor(log2 m) */
    uint64_t recip_hi, recip_lo; /* floor(2^128 / m) or one under: the slots' first keys */
    uint64_t blocks; /* lines: m's and room for runs past the last slot */
    uint32_t k0;
    uint64_t items, entries;
    uint64_t grows;
    uint64_t rewritten; /* entries read by the rebuilds */
    uint64_t top_items, top_bytes; /* keys, bytes just after the last rebuild: the sawtooth's top */
    double grow_s;   /* seconds spent growing (rebuilds), for the bench's breakdown of an add */
    double max_load, growth;
    uint64_t *deep; /* ranges of h [lo, hi], sorted and apart, of keys whose entries ran out of bits */
    uint64_t ndeep;
    /* keys added and not yet placed: an add places the key added XQ_PENDING adds before it,
     * whose lines it fetched then (queries look here too) */
    uint64_t pend[XQ_PENDING];
    uint32_t pend_used; /* a bit per cell of pend that holds a key */
    uint32_t pend_next; /* the cell of the next add: the oldest key when all are used */
} xq_filter;

xq_filter *xq_new(uint64_t capacity, double max_load, double growth);
void xq_free(xq_filter *x);
int xq_add(xq_filter *x, uint64_t h1);
size_t xq_add_batch(xq_filter *x, const uint64_t *h1, size_t n);
int xq_contains(const xq_filter *x, uint64_t h1);
int xq_contains_table(const xq_filter *x, uint64_t h1); /* the table alone: not the pending keys */
void xq_contains_batch(const xq_filter *x, const uint64_t *h1, size_t n, uint8_t *out);
uint64_t xq_bytes(const xq_filter *x);
uint64_t xq_void_lanes(const xq_filter *x); /* lanes sending a query to the deep list */
int xq_check(const xq_filter *x);

#endif /* AMQ_BENCH_LAYOUT_RSQF_H */
