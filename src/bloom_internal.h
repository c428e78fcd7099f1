/*
 * bloom_internal.h - what the scalable Bloom filter needs of bloom.c beyond
 * the public header.
 */
#ifndef AMQ_BLOOM_INTERNAL_H
#define AMQ_BLOOM_INTERNAL_H

#include "amq/bloom.h"

/*
 * A filter whose bit array is `data` (len = amq_bloom_data_size(params)
 * bytes taken from alloc, not necessarily aligned): on AMQ_OK the filter
 * owns it and frees it through alloc; on an error the caller keeps it.
 * Used to adopt an array already read (a Redis RDB string buffer) instead
 * of copying it into a second one.
 */
int amq_bloom_new_owning(const amq_bloom_params *params, void *data, size_t len,
                         uint64_t items, const amq_allocator *alloc, amq_bloom **out);

#endif /* AMQ_BLOOM_INTERNAL_H */
