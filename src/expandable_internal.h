/*
 * expandable_internal.h - the expandable filter's struct and what its
 * adapter and codec (expandable_kind.c) need of the algorithm
 * (expandable.c).  Internal: not installed, not exported.
 */
#ifndef AMQ_EXPANDABLE_INTERNAL_H
#define AMQ_EXPANDABLE_INTERNAL_H

#include "amq/filter.h"
#include "common/alloc.h"
#include "kind.h"

#define LANES 32u
#define DATA_LANES 31u
#define META_LANE 31u
#define BUCKET_BYTES 64u
#define FP_BITS 15u
#define MAX_Q 48u          /* bucket index and lane share a 64-bit stash cell */
#define MAX_LOAD 0.8       /* entries per data lane before doubling */
#define STASH_MIN 64u
#define DATA_MASK UINT64_C(0x3FFFFFFFFFFFFFFF) /* two mask bits per lane, lane 31 off */
#define MIN_FPP 0.001
#define MAX_FPP 0.5
#define BATCH_AHEAD 16u

typedef struct amq_expand {
    uint32_t hash_algo;
    uint64_t seed;
    uint32_t q;  /* log2 of the bucket count */
    uint32_t q0; /* q when created: expansions = q - q0 */
    double fpp;  /* target: doubling stops (AMQ_ELIMIT) before the rate would pass it */
    uint64_t items;           /* keys added minus removed */
    uint64_t cnt[FP_BITS + 1]; /* entries (table and stash) by fingerprint length */
    uint64_t total;            /* the sum of cnt */
    uint64_t limit;            /* total at which the table doubles */
    uint64_t stash_n;          /* cells in use */
    uint64_t stash_cap;        /* cells: 0 or a power of two */
    amq_region table;
    amq_region stash;
    amq_allocator alloc;
    uint64_t (*match)(const uint16_t *b, uint16_t qv);
    uint64_t (*empty)(const uint16_t *b); /* two bits per free data lane */
} amq_expand;

amq_expand *amq_exp_shell(const amq_allocator *alloc);
void amq_exp_free(amq_expand *x);
/* The smallest q whose table holds capacity entries at MAX_LOAD. */
uint32_t amq_exp_q_for(uint64_t capacity);
void amq_exp_set_q(amq_expand *x, uint32_t q);
/* Entries held (table and stash), and the count at which the table doubles. */
uint64_t amq_exp_entries(const amq_expand *x);
uint64_t amq_exp_max_entries(const amq_expand *x);
/* The expected false-positive rate now, and what one more generation adds. */
double amq_exp_rate_of(const amq_expand *x);
double amq_exp_generation_rate(void);
/* The stash's cells (stash_cap of them). */
uint64_t *amq_exp_cells(const amq_expand *x);
/* The kind's entries on a hash (add: 1 new, 0 already there, or a status). */
int amq_exp_add(amq_expand *x, amq_hash128 h);
int amq_exp_contains(const amq_expand *x, amq_hash128 h);
int amq_exp_remove(amq_expand *x, amq_hash128 h);
int amq_exp_add_batch(amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *added);
void amq_exp_contains_batch(const amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *out);
/* The one-key query leaf for x's instruction set. */
amq_contains_key_fn amq_exp_key_query(const amq_expand *x);

#endif /* AMQ_EXPANDABLE_INTERNAL_H */
