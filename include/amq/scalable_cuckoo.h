/*
 * amq/scalable_cuckoo.h - the scalable cuckoo filter: a chain of cuckoo
 * links that grows when full, with deletion and compaction.
 *
 * In RedisBloom mode (the default of amq_scuckoo_params_init(p, 1)) it is
 * RedisBloom's CF data type, byte for byte (docs: the compatibility spec):
 *  - h = MurmurHash64A(item, seed 0) (AMQ_HASH_MURMUR64A, seed 0: h is the
 *    hash's h1); fingerprint fp = h mod 255 + 1 (8 bits, 0 = empty);
 *    bucket indexes i1 = h mod nb, i2 = (h xor fp * 0x5bd1e995) mod nb;
 *  - link j is a flat byte array of nb_j * bucket_size slots, slot s
 *    of bucket i at byte i * bucket_size + s; nb_0 = the next power of two
 *    >= capacity / bucket_size (integer division, at least 1), nb_j =
 *    nb_0 * expansion^j with expansion rounded up to a power of two;
 *  - insertion, kick order and roll-back, deletion and compaction as
 *    RedisBloom, so the same command sequence leaves identical arrays.
 * Native mode keeps the same chain and algorithms with 12- or 16-bit
 * fingerprints (packed as in amq/cuckoo.h) taken from the hash's h2,
 * fp = 1 + (h2 >> 32) * (2^f - 1) >> 32, i1 = h1 mod nb, i2 = (h1 xor fp *
 * 0x5bd1e995) mod nb, and any hash algorithm: a far lower false-positive
 * rate (2 * bucket_size / 2^f per link instead of / 255).
 *
 * Statuses (the Redis module maps them to RedisBloom's replies):
 *  AMQ_EFULL   "Filter is full" - no room and expansion 0;
 *  AMQ_ELIMIT  "Maximum expansions reached" - the filter has max_filters
 *              links (checked before any insert: such a filter
 *              refuses every add, even with free slots), or the next
 *              link would exceed AMQ_SCUCKOO_MAX_SLOTS;
 *  AMQ_ENOMEM  a new link could not be allocated.
 * A failed insert changes nothing: the kicks are undone.
 *
 * Programs make and use the filter through the generic handle
 * (amq/filter.h, AMQ_KIND_SCALABLE_CUCKOO; amq_config's redisbloom,
 * expansion, nonscaling).  The types below describe it; the typed handle -
 * the RedisBloom CF commands' own calls (amq_scuckoo_add_unique, _count,
 * _compact, ...), links and the SCANDUMP chunks - is in
 * <amq/advanced.h>, for hosts of the RedisBloom data types.
 *
 * Thread safety: any number of threads may call the const functions at the
 * same time; everything else needs exclusive access.
 */
#ifndef AMQ_SCALABLE_CUCKOO_H
#define AMQ_SCALABLE_CUCKOO_H

#include "amq/common.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amq_scuckoo amq_scuckoo;

/* Limits: bucket_size 1..255, max_iterations 1..65535, expansion
 * 0..32768; a link holds at most AMQ_SCUCKOO_MAX_SLOTS slots; at most
 * AMQ_SCUCKOO_MAX_LINKS links are ever loaded. */
#define AMQ_SCUCKOO_MAX_SLOTS (UINT64_C(1) << 40)
#define AMQ_SCUCKOO_MAX_LINKS 65535u
/* The multiplier of the alternate index. */
#define AMQ_SCUCKOO_ALT_MUL UINT64_C(0x5bd1e995)

typedef struct amq_scuckoo_params {
    uint64_t capacity;         /* items the first link is sized for, >= 1 */
    uint32_t bucket_size;      /* slots per bucket, 1..255 */
    AMQ_RENAMED_FIELD(uint32_t, max_kicks, max_iterations); /* kicks per insert, 1..65535 */
    uint32_t expansion;        /* capacity factor per link, 0 (never grow)..32768 */
    AMQ_RENAMED_FIELD(uint32_t, max_links, max_filters);    /* link limit, >= 1 */
    uint32_t fingerprint_bits; /* 8 (RedisBloom mode), 4 to 32 (native) */
    uint32_t redisbloom;       /* 1: RedisBloom mode (8 bits, MurmurHash64A seed 0) */
    uint32_t hash_algo;        /* native mode: amq_hash_algo */
    uint64_t seed;             /* native mode: hash seed */
} amq_scuckoo_params;

/* ---- layout and information (CF.INFO, CF.DEBUG, RDB) ------------------------ */

typedef struct amq_scuckoo_info {
    /* bytes CF.INFO reports as Size: 40 + 16 * links + sum(buckets * bucket_size) */
    AMQ_RENAMED_FIELD(uint64_t, info_bytes, size);
    uint64_t num_buckets;     /* of the first link */
    AMQ_RENAMED_FIELD(uint64_t, links, num_filters);
    uint64_t items;           /* inserted minus deleted */
    uint64_t deletes;         /* since the last compaction */
    AMQ_RENAMED_FIELD(uint64_t, slots, capacity); /* total slots */
    uint64_t bytes;           /* total bytes of the links' arrays */
    uint32_t bucket_size;
    AMQ_RENAMED_FIELD(uint32_t, max_kicks, max_iterations);
    uint32_t expansion;       /* the power of two actually used */
    AMQ_RENAMED_FIELD(uint32_t, max_links, max_filters);
    uint32_t fingerprint_bits;
    uint32_t redisbloom;
} amq_scuckoo_info;


/* Link access, RDB construction and the CF.SCANDUMP / CF.LOADCHUNK
 * format: <amq/advanced.h>. */

#ifdef __cplusplus
}
#endif

#include "amq/compat.h" /* the old names, until 0.4 */

#endif /* AMQ_SCALABLE_CUCKOO_H */
