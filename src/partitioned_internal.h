/*
 * partitioned_internal.h - the partitioned filter's struct and what its
 * adapter and codec (partitioned_kind.c) need of the algorithm
 * (partitioned.c).  Internal: not installed, not exported.
 */
#ifndef AMQ_PARTITIONED_INTERNAL_H
#define AMQ_PARTITIONED_INTERNAL_H

#include "amq/partitioned.h"
#include "blocked_impl.h"
#include "common/alloc.h"

#define INDEX_HEADER 64u
#define ENTRY_SIZE 48u

/* Partition states (lazy verification). */
enum { ST_UNVERIFIED = 0, ST_OK = 1, ST_BAD = 2, ST_BUSY = 3 };

typedef struct part {
    uint64_t offset; /* from data.data */
    uint64_t blocks;
    uint32_t k;
    uint64_t capacity;
    uint64_t checksum; /* as stored; checked when the state is UNVERIFIED */
    _Atomic uint64_t items;
} part;

struct amq_partitioned {
    uint32_t nparts;
    /* A slice (layout 1) holds partitions [first, first + nparts) of a filter of total
     * partitions whose capacity was whole_capacity; a whole filter: total = nparts, first 0. */
    uint32_t total;
    uint32_t first;
    uint64_t whole_capacity;
    uint32_t hash_algo;
    uint64_t seed;
    uint64_t capacity;
    double fpp;
    part *parts;
    _Atomic uint8_t *state; /* nparts entries */
    _Atomic int failed;
    amq_region data;
    int concurrent;
    const amq_blk_simd_ops *simd;
    amq_allocator alloc;
};

static inline uint32_t part_of(uint32_t nparts, amq_hash128 h)
{
    return (uint32_t)(((h.h2 >> 32) * (uint64_t)nparts) >> 32);
}

static inline int is_slice(const amq_partitioned *f)
{
    return f->total != f->nparts || f->first != 0;
}

/* The share of a whole filter's capacity that count of its total partitions hold,
 * rounded up, without overflow (cap % total * count < 2^64). */
static inline uint64_t capacity_share(uint64_t cap, uint32_t count, uint32_t total)
{
    return cap / total * count + (cap % total * count + total - 1) / total;
}

/* The key's partition in f: >= f->nparts when a slice does not hold it (unsigned wrap). */
static inline uint32_t part_in(const amq_partitioned *f, amq_hash128 h)
{
    return part_of(f->total, h) - f->first;
}

static inline uint8_t *part_data(const amq_partitioned *f, uint32_t i)
{
    return f->data.data + f->parts[i].offset;
}

/* Frees f and what it holds (NULL: nothing). */
void amq_part_destroy(amq_partitioned *f);
/* A filter with its index arrays allocated (data not yet). */
int amq_part_shell(uint32_t nparts, uint32_t algo, uint64_t seed, const amq_allocator *alloc,
                   amq_partitioned **out);
/* Lays the partitions out back to back once their blocks are set, and
 * allocates the region (zeroed). */
int amq_part_layout(amq_partitioned *f);
/* 1 if a and b can be merged or intersected, else 0 with why set. */
int amq_part_same_geometry(const amq_partitioned *a, const amq_partitioned *b, const char **why);

#endif /* AMQ_PARTITIONED_INTERNAL_H */
