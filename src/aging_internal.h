/*
 * aging_internal.h - what aging_handle.c (the public functions on a handle,
 * above filter.c) needs of the aging filter in aging.c (below it).
 * Internal: not installed.
 */
#ifndef AMQ_AGING_INTERNAL_H
#define AMQ_AGING_INTERNAL_H

#include "amq/aging.h"
#include "amq/filter.h"
#include "common/alloc.h"

typedef struct amq_aging amq_aging;

void amq_aging_impl_info(const amq_aging *a, amq_aging_info *info);
/* 1 when generations advance with time (amq_aging_advance), else 0. */
int amq_aging_impl_timed(const amq_aging *a);
void amq_aging_impl_advance(amq_aging *a, uint64_t now_ms);
int amq_aging_impl_contains_at(const amq_aging *a, amq_hash128 h, uint64_t now_ms);
void amq_aging_impl_contains_batch_at(const amq_aging *a, const amq_hash128 *h, size_t n,
                                      uint8_t *out, uint64_t now_ms);
/* 1 when this host can export and import the raw state (little-endian). */
int amq_aging_impl_raw_ok(void);
void amq_aging_impl_params(const amq_aging *a, uint8_t params[AMQ_AGING_PARAMS_SIZE]);
void amq_aging_impl_data(const amq_aging *a, uint8_t **data, size_t *len);
/* A zeroed filter of the geometry params give (amq_aging_deserialize_raw). */
int amq_aging_impl_deserialize(const uint8_t *params, size_t params_len, uint32_t hash_algo,
                          uint64_t seed, const amq_allocator *alloc, amq_aging **out,
                          amq_errinfo *err);
/* For tests: the scalar and the chosen path's masks of one key (0 over 64 slices). */
void amq_aging_impl_masks(const amq_aging *a, amq_hash128 h, uint64_t *scalar, uint64_t *chosen);

#endif /* AMQ_AGING_INTERNAL_H */
