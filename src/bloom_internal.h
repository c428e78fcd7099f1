/*
 * bloom_internal.h - what bloom.c offers beyond the public header: to its
 * adapter and codec (bloom_kind.c) and to the scalable Bloom filter.
 */
#ifndef AMQ_BLOOM_INTERNAL_H
#define AMQ_BLOOM_INTERNAL_H

#include "amq/bloom.h"
#include "common/alloc.h"

/* The filter (bloom.c), read by its adapter and codec (bloom_kind.c). */
struct amq_bloom {
    amq_bloom_params p;
    uint64_t items;
    amq_region data; /* amq_bloom_data_size(&p) bytes */
    amq_allocator alloc;
};

/* AMQ_OK if p describes a filter this code can hold, else why not. */
int amq_bloom_check_params(const amq_bloom_params *p);

/* The batched add and query of n hashes (prefetching on filters larger than
 * the caches): the add counts the keys that set a bit, answers in added
 * (or NULL), AMQ_EREADONLY on a view; the query answers 0 or 1 in out. */
int amq_bloom_add_hashes(amq_bloom *b, const amq_hash128 *h, size_t n, uint8_t *added);
void amq_bloom_contains_hashes(const amq_bloom *b, const amq_hash128 *h, size_t n, uint8_t *out);

/*
 * The probes on a bare bit array of m bits (amq_bloom_data_size bytes), k
 * probes by scheme probe (amq_bloom_probe): the links of a scalable chain
 * hold their arrays inline instead of an amq_bloom each.  _set returns 1
 * when a bit changed; _popcount counts the set bits of len bytes (a
 * multiple of 8).
 */
int amq_bloom_array_set(uint8_t *d, uint64_t m, uint32_t k, uint32_t probe, amq_hash128 h);
int amq_bloom_array_test(const uint8_t *d, uint64_t m, uint32_t k, uint32_t probe,
                         amq_hash128 h);
uint64_t amq_bloom_array_popcount(const uint8_t *d, size_t len);

#endif /* AMQ_BLOOM_INTERNAL_H */
