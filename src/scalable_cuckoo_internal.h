/*
 * scalable_cuckoo_internal.h - the scalable cuckoo filter's chain and what
 * its adapter and codec (scalable_cuckoo_kind.c) need of the algorithm
 * (scalable_cuckoo.c).  Internal: not installed, not exported.
 */
#ifndef AMQ_SCALABLE_CUCKOO_INTERNAL_H
#define AMQ_SCALABLE_CUCKOO_INTERNAL_H

#include "amq/advanced.h"
#include "amq/cuckoo.h"
#include "amq/scalable_cuckoo.h"
#include "common/alloc.h"

/* A link: its table and the log2 of its bucket count (a power of two).  The
 * first link's entry also keeps the compaction pass's place (the handle has
 * no byte to spare): pass_link 0 when no pass is under way, else the link
 * and the bucket of it the next call goes on from. */
typedef struct subf {
    uint8_t *data;           /* table_bytes(nb), an amq_block */
    uint64_t lg : 6;         /* buckets: 2^lg, at most 2^40 */
    uint64_t pass_at : 42;   /* f[0] only */
    uint64_t pass_link : 16; /* f[0] only */
} subf;

_Static_assert(sizeof(subf) == 16, "a link's entry stays 16 bytes, as RedisBloom's");

static inline uint64_t sub_nb(const subf *s)
{
    return UINT64_C(1) << s->lg;
}

/* 64 bytes, one allocator size class: a CF key of RedisBloom's default
 * size costs a server what RedisBloom's does.  The parameters
 * (amq_scuckoo_params) are kept in fields as narrow as their limits, and
 * the allocator as a pointer to a shared copy (amq_alloc_shared), or to
 * this handle's own copy, allocated right after it, when none is left. */
struct amq_scuckoo {
    uint64_t items;
    uint64_t deletes;
    subf *f;
    const amq_allocator *alloc;
    uint64_t capacity;
    uint64_t seed;
    uint32_t max_filters;
    uint16_t nf;             /* links, <= AMQ_SCUCKOO_MAX_LINKS */
    uint16_t cap;            /* entries allocated in f[] */
    uint16_t max_iterations; /* 1..65535 */
    uint16_t full_links;     /* links [0, full_links) hold no empty slot */
    uint8_t exp_log;         /* expansion 0: 0; else log2(expansion) + 1 */
    uint8_t bucket_size;     /* 1..255 */
    uint8_t fingerprint_bits;
    uint8_t hash_algo : 7; /* amq_hash_algo values are below 128 */
    uint8_t redisbloom : 1;
};

_Static_assert(sizeof(struct amq_scuckoo) == 64, "the handle is one 64-byte size class");

/* The factor each link's bucket count grows by: 0 (one link) or a power
 * of two up to 32768. */
static inline uint32_t sc_expansion(const amq_scuckoo *c)
{
    return c->exp_log == 0 ? 0 : 1u << (c->exp_log - 1);
}

/* Buckets of the first link (a chain always has one): not stored, so
 * that the handle stays in a smaller allocator size class. */
static inline uint64_t nb0_of(const amq_scuckoo *c)
{
    return sub_nb(&c->f[0]);
}

/* Native mode packs fingerprints of any width the cuckoo kind takes. */
static inline int native_width(uint32_t f)
{
    return f >= AMQ_CUCKOO_MIN_FINGERPRINT && f <= AMQ_CUCKOO_MAX_FINGERPRINT;
}

static inline int is_pow2(uint64_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

/* Bytes of a link of nb buckets, and of its table. */
uint64_t amq_sc_sub_bytes(const amq_scuckoo *c, uint64_t nb);
uint64_t amq_sc_table_bytes(const amq_scuckoo *c, uint64_t nb);
/* A chain's shape (its total slots in *slots) and its scalars: AMQ_OK or
 * AMQ_ERANGE. */
int amq_sc_check_chain(uint32_t bs, uint32_t exp, uint64_t nb0, uint64_t nf, uint64_t *slots);
int amq_sc_check_scalars(uint32_t bs, uint32_t iters, uint32_t exp);
/* A handle for p (checked; its expansion rounded), no link yet. */
amq_scuckoo *amq_sc_shell(const amq_scuckoo_params *p, const amq_allocator *alloc);
/* Drops the last link. */
void amq_sc_pop_subf(amq_scuckoo *c);
/* Allocates nf links nb0 * expansion^j (shape already checked), or
 * adopts tables[j]; on an error, tables from the failed one on are not
 * taken. */
int amq_sc_build_chain(amq_scuckoo *c, uint64_t nb0, uint64_t nf, void **tables);
/* Why an add of h is refused: an amq_refusal (amq_filter_refusal). */
uint32_t amq_sc_refusal(const amq_scuckoo *c, amq_hash128 h);
/* Fingerprints held in every link's table. */
uint64_t amq_sc_count_used(const amq_scuckoo *c);

#endif /* AMQ_SCALABLE_CUCKOO_INTERNAL_H */
