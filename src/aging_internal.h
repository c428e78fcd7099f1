/*
 * aging_internal.h - the aging filter's struct and what its adapter and
 * codec (aging_kind.c) and the public functions on a handle (aging_handle.c,
 * above filter.c) need of the algorithm (aging.c, below it).
 * Internal: not installed.
 */
#ifndef AMQ_AGING_INTERNAL_H
#define AMQ_AGING_INTERNAL_H

#include "amq/aging.h"
#include "amq/filter.h"
#include "common/alloc.h"

#define WORD_BITS 64
#define MAX_SLICES 255u

typedef struct amq_aging amq_aging;

struct amq_aging {
    uint32_t time_mode;
    uint32_t k, l, slices; /* slices = k + l */
    uint32_t head;         /* physical index of logical position 0 */
    uint32_t hash_algo;
    uint64_t seed;
    uint64_t blocks;
    uint64_t gen_size;  /* adds per generation (time mode: expected) */
    uint64_t gen_ms;    /* time mode: generation length */
    uint64_t capacity;  /* the window asked for, in adds */
    uint64_t window_ms; /* time mode: the window asked for */
    double fpp;         /* the model's bound for this geometry */
    uint64_t generation;
    uint64_t in_gen;
    uint64_t adds;
    amq_region data;
    amq_allocator alloc;
    /* the query's mask of slices holding a key (chosen at create/load) */
    uint64_t (*mask)(const uint64_t *blk, amq_hash128 h, uint32_t slices);
};

static inline uint64_t div_ceil(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static inline uint64_t *words(const amq_aging *a)
{
    return (uint64_t *)(void *)a->data.data;
}

static inline size_t data_size(const amq_aging *a)
{
    return (size_t)(a->blocks * a->slices * 8);
}

/* A zeroed filter object (no geometry, no words) with alloc's allocator. */
amq_aging *amq_aging_impl_shell(const amq_allocator *alloc);
/* Frees a and its words (NULL: nothing). */
void amq_aging_impl_free(amq_aging *a);
/* AMQ_OK when a's geometry is one this code holds, else AMQ_ERANGE. */
int amq_aging_impl_check(const amq_aging *a);
/* Sets a's query mask path for its slices and this CPU. */
void amq_aging_impl_choose_mask(amq_aging *a);
/* The kind's entries: a key's add (1 when a bit changed), its query over
 * the first live slices (all of them: a->slices), and their batched forms
 * (the one-key ones are the algorithm's own, so that the adapter's entry
 * jumps straight to them). */
int amq_aging_impl_add(amq_aging *a, amq_hash128 h);
int amq_aging_impl_find_run(const amq_aging *a, amq_hash128 h, uint32_t live);
int amq_aging_impl_add_batch(amq_aging *a, const amq_hash128 *h, size_t n, uint8_t *added);
void amq_aging_impl_contains_batch(const amq_aging *a, const amq_hash128 *h, size_t n,
                                   uint8_t *out);
/* The bound with each position's measured fill; the mean fill in *fill. */
double amq_aging_impl_fpp_now(const amq_aging *a, double *fill);
/* A filter shell from a parameter block, validated, no words yet:
 * AMQ_OK, AMQ_ECORRUPT, AMQ_EVERSION, AMQ_ENOMEM. */
int amq_aging_impl_parse(const uint8_t *p, size_t len, uint32_t hash_algo, uint64_t seed,
                         const amq_allocator *alloc, amq_aging **out, amq_errinfo *err);

void amq_aging_impl_info(const amq_aging *a, amq_aging_info *info);
/* 1 when generations advance with time (amq_aging_advance), else 0. */
int amq_aging_impl_timed(const amq_aging *a);
void amq_aging_impl_advance(amq_aging *a, uint64_t now_ms);
int amq_aging_impl_contains_at(const amq_aging *a, amq_hash128 h, uint64_t now_ms);
void amq_aging_impl_contains_batch_at(const amq_aging *a, const amq_hash128 *h, size_t n,
                                      uint8_t *out, uint64_t now_ms);
/* 1 when this host can export and import the raw state (little-endian). */
int amq_aging_impl_raw_ok(void);
/* Writes a's parameter block. */
void amq_aging_impl_params(const amq_aging *a, uint8_t params[AMQ_AGING_PARAMS_SIZE]);
void amq_aging_impl_data(const amq_aging *a, uint8_t **data, size_t *len);
/* A zeroed filter of the geometry params give (amq_aging_deserialize_raw). */
int amq_aging_impl_deserialize(const uint8_t *params, size_t params_len, uint32_t hash_algo,
                          uint64_t seed, const amq_allocator *alloc, amq_aging **out,
                          amq_errinfo *err);
/* For tests: the scalar and the chosen path's masks of one key (0 over 64 slices). */
void amq_aging_impl_masks(const amq_aging *a, amq_hash128 h, uint64_t *scalar, uint64_t *chosen);

#endif /* AMQ_AGING_INTERNAL_H */
