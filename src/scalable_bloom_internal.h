/*
 * scalable_bloom_internal.h - the scalable Bloom filter's chain and what its
 * adapter and codec (scalable_bloom_kind.c) need of the algorithm
 * (scalable_bloom.c).  Internal: not installed, not exported.
 */
#ifndef AMQ_SCALABLE_BLOOM_INTERNAL_H
#define AMQ_SCALABLE_BLOOM_INTERNAL_H

#include "amq/advanced.h"
#include "amq/scalable_bloom.h"
#include "common/alloc.h"

/*
 * A link holds its bit array and its geometry itself, with no amq_bloom
 * object of its own: a host such as Redis counts every allocation a key
 * makes, and a small BF key is then one block (the chain, its only link
 * and that link's bits) like RedisBloom's few.
 */
typedef struct sb_link {
    uint8_t *data;    /* bytes_of(bits) bytes */
    uint64_t geo;     /* bits << 19 | n2 << 13 | hashes (see geo_pack) */
    uint64_t entries;
    uint64_t items;
    double error;
    double bpe;
} sb_link;

/*
 * The chain.  While it has one link (cap 1) that link is held in place
 * (u.one) and, when small, its bits follow the struct in the same block;
 * from the second link on, u.many is an array of cap links (link 0's bits
 * stay where they were).  The chain's item count is the sum of its links'.
 */
struct amq_sbloom {
    amq_allocator alloc;
    union {
        sb_link one;
        sb_link *many;
    } u;
    uint32_t n;
    uint32_t cap;
    double error;   /* amq_sbloom_params.error */
    uint64_t seed;
    uint32_t growth;
    uint16_t options;
    uint8_t redisbloom;
    uint8_t hash_algo;
};
/* 112 bytes: with a default filter's 144 bytes of bits, one 256-byte block. */
_Static_assert(sizeof(struct amq_sbloom) <= 112, "the chain's block grew");

/* Error ratio between consecutive links (the first link has the chain's error times 0.5, or
 * times 1 - 0.8 natively, so that the links' rates sum to at most the chain's). */
#define RB_TIGHTENING 0.5
#define NATIVE_TIGHTENING 0.8

static inline double amq_sb_tightening(const amq_sbloom *s)
{
    return s->redisbloom ? RB_TIGHTENING : NATIVE_TIGHTENING;
}

static inline uint64_t l_bits(const sb_link *l)
{
    return l->geo >> 19;
}

static inline uint32_t l_hashes(const sb_link *l)
{
    return (uint32_t)(l->geo & 0x1fff);
}

static inline uint32_t l_n2(const sb_link *l)
{
    return (uint32_t)(l->geo >> 13) & 0x3f;
}

static inline size_t bytes_of(uint64_t bits)
{
    return (size_t)((bits + 63) / 64 * 8);
}

static inline sb_link *lnk(amq_sbloom *s)
{
    return s->cap <= 1 ? &s->u.one : s->u.many;
}

static inline const sb_link *clnk(const amq_sbloom *s)
{
    return s->cap <= 1 ? &s->u.one : s->u.many;
}

/* Releases link i's bits (not those in the chain's block). */
void amq_sb_drop_bits(amq_sbloom *s, uint32_t i);
/* Link l as the public amq_sbloom_link_info describes it. */
void amq_sb_link_info(const sb_link *l, amq_sbloom_link_info *out);
/* Checks header and links; returns AMQ_OK, AMQ_ECORRUPT or AMQ_EUNSUPPORTED, saying in
 * err (may be NULL) which field or link is wrong. */
int amq_sb_check_raw(const amq_sbloom_header *h, const amq_sbloom_link_info *links, int redisbloom,
                     amq_errinfo *err);
/* Builds the chain; links take arrays[i] when arrays is given (all of them
 * taken, freed on an error; copied when the allocator could not free them
 * as its own blocks). */
int amq_sb_build_raw(const amq_sbloom_header *h, const amq_sbloom_link_info *links,
                     void **arrays, const amq_sbloom_params *p, const amq_allocator *alloc,
                     amq_sbloom **out);

#endif /* AMQ_SCALABLE_BLOOM_INTERNAL_H */
