/*
 * blocked_bloom_internal.h - the blocked Bloom filter's struct and what its
 * adapter and codec (blocked_bloom_kind.c) need of the algorithm
 * (blocked_bloom.c).  Internal: not installed, not exported.
 */
#ifndef AMQ_BLOCKED_BLOOM_INTERNAL_H
#define AMQ_BLOCKED_BLOOM_INTERNAL_H

#include "amq/blocked_bloom.h"
#include "blocked_impl.h"
#include "common/alloc.h"

struct amq_blocked {
    /* What the one-key paths touch, first: the geometry the loops read
     * (data, blocks, k, hash) with the item count, and the entries chosen
     * for them. */
    amq_blk_one one;
    amq_blk_add1_fn key_add;  /* the one-key add of the path and mode (a view's refuses) */
    amq_blk_key_fn key_query; /* the path's one-key query for the hash */
    amq_blocked_params p;
    amq_region data; /* p.blocks * 64 bytes, 64-byte aligned */
    int concurrent;  /* adds use atomic OR */
    const amq_blk_simd_ops *simd;
    amq_allocator alloc;
};

/* The best k for a size, and its rate at n items. */
uint32_t amq_blk_best_k(uint64_t blocks, uint64_t n, double *fpp);
/* AMQ_OK if p describes a filter this code can hold, else why not. */
int amq_blk_check_params(const amq_blocked_params *p);
/* Copies words with relaxed atomic loads (adds may run on src). */
void amq_blk_copy_words(uint8_t *dst, const uint8_t *src, size_t bytes);
/* Why a and b cannot be merged or intersected (NULL: they can). */
const char *amq_blk_geometry_difference(const amq_blocked *a, const amq_blocked *b);
/* ANDs src into dst and estimates the items both hold: AMQ_OK,
 * AMQ_EINCOMPAT (another geometry), AMQ_EREADONLY (dst a view). */
int amq_blk_intersect(amq_blocked *dst, const amq_blocked *src);

#endif /* AMQ_BLOCKED_BLOOM_INTERNAL_H */
