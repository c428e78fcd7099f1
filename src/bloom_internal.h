/*
 * bloom_internal.h - what the scalable Bloom filter needs of bloom.c beyond
 * the public header.
 */
#ifndef AMQ_BLOOM_INTERNAL_H
#define AMQ_BLOOM_INTERNAL_H

#include "amq/bloom.h"

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
