/*
 * amq/scalable_bloom.h - the scalable Bloom filter: a chain of classic
 * Bloom filters ("links") that grows as items arrive.
 *
 * In RedisBloom mode it is RedisBloom's BF data type (the compatibility
 * spec), byte for byte:
 *  - keys hash with AMQ_HASH_REDISBLOOM (a = MurmurHash64A(key,
 *    0xc6a4a7935bd1e995), b = MurmurHash64A(key, a)); every link is an
 *    amq_bloom with AMQ_BLOOM_PROBE_REDISBLOOM: probe i sets bit
 *    ((a + i b) mod 2^64) mod bits;
 *  - a link for (entries n, error e): bpe = -ln(e) / 0.480453013918201,
 *    bits = floor(n bpe) (at least 1) rounded up to a multiple of 64,
 *    bytes = bits / 8, hashes = ceil(0.693147180559945 bpe);
 *  - the first link has error e / 2 (e when non-scaling) and capacity n;
 *    each new link halves the error and multiplies the capacity by the
 *    growth factor (default 2);
 *  - add: 0 if any link (newest first) may contain the key; else, if the
 *    newest link holds as many items as its capacity, a new link (a
 *    non-scaling filter answers AMQ_EFULL); the key's bits are set in the
 *    newest link and it counts (1) only if a bit changed.
 * Native mode keeps the chain with the library's better choices: any
 * amq_hash_algo (XXH3 by default), the native probe scheme
 * (multiply-shift ranges, enhanced double hashing), links sized as
 * amq_bloom_bits_for does (no rounding to 64 bits), and a tightening ratio
 * of 0.8 instead of 0.5 (first link e * 0.2, then x 0.8: the rates still
 * sum to at most e, and the many large late links pay ~0.3 bit per item
 * less per level than with halving).
 *
 * Statuses: AMQ_EFULL ("non scaling filter is full"), AMQ_ELIMIT (the next
 * link cannot exist: its capacity overflows, its error underflows, it
 * would need more than AMQ_BLOOM_MAX_K_REDISBLOOM probes (RedisBloom
 * mode; 255 otherwise) or 2^43 bits - RedisBloom's "ERR problem
 * inserting into filter"), AMQ_ENOMEM.
 *
 * Programs make and use the filter through the generic handle
 * (amq/filter.h, AMQ_KIND_SCALABLE_BLOOM; amq_config's redisbloom,
 * expansion, nonscaling).  The types below describe it; the typed handle -
 * the RedisBloom BF commands' own calls (amq_sbloom_add, _get_info, ...),
 * links and the SCANDUMP chunks - is in <amq/advanced.h>, for hosts of the
 * RedisBloom data types.
 *
 * Thread safety: any number of threads may call the const functions at the
 * same time; everything else needs exclusive access.
 */
#ifndef AMQ_SCALABLE_BLOOM_H
#define AMQ_SCALABLE_BLOOM_H

#include "amq/common.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amq_sbloom amq_sbloom;

/* RedisBloom's option bits. */
#define AMQ_SBLOOM_NOROUND 1u      /* bit counts not rounded to powers of two */
#define AMQ_SBLOOM_ENTS_IS_BITS 2u /* entries given in bits (never by new filters) */
#define AMQ_SBLOOM_FORCE64 4u      /* 64-bit hashing (every filter since 2018) */
#define AMQ_SBLOOM_NO_SCALING 8u   /* never add a link */
#define AMQ_SBLOOM_OPTIONS_MASK 15u

/* At most this many links are ever loaded or made (RedisBloom's chains end
 * where the halved error rate underflows, by ~1075 links). */
#define AMQ_SBLOOM_MAX_LINKS 2048u
/* RedisBloom's sizing constants. */
#define AMQ_SBLOOM_LN2_SQUARED 0.480453013918201
#define AMQ_SBLOOM_LN2 0.693147180559945

typedef struct amq_sbloom_params {
    uint64_t capacity;  /* items of the first link, >= 1 */
    AMQ_RENAMED_FIELD(double, fpp, error); /* target rate in (0, 1) */
    /* capacity factor per new link, >= 1 (ignored when non-scaling) */
    AMQ_RENAMED_FIELD(uint32_t, expansion, growth);
    uint32_t options;   /* AMQ_SBLOOM_* (RedisBloom mode: NOROUND | FORCE64 [| NO_SCALING]) */
    uint32_t redisbloom; /* 1: RedisBloom mode */
    uint32_t hash_algo; /* native mode: amq_hash_algo */
    uint64_t seed;      /* native mode: hash seed */
} amq_sbloom_params;

/* One link, as BF.DEBUG and the RDB and SCANDUMP formats describe it. */
typedef struct amq_sbloom_link_info {
    uint64_t entries; /* capacity: items the link is sized for */
    AMQ_RENAMED_FIELD(double, fpp, error);
    double bpe;       /* bits per entry */
    uint64_t bits;
    uint64_t bytes;
    uint32_t hashes;
    uint32_t n2;      /* log2(bits) for power-of-two links, else 0 */
    uint64_t items;   /* "size": adds that set a bit */
} amq_sbloom_link_info;

/* ---- information (BF.INFO, BF.DEBUG, BF.CARD) ------------------------------ */

typedef struct amq_sbloom_info {
    /* bytes BF.INFO reports as Size: 32 + 64 * links + sum of link bytes */
    AMQ_RENAMED_FIELD(uint64_t, info_bytes, size);
    uint64_t capacity;  /* items: sum of link entries */
    uint64_t items;     /* sum of link items (BF.CARD) */
    AMQ_RENAMED_FIELD(uint64_t, links, num_filters);
    uint64_t bytes;     /* sum of link bytes */
    /* capacity factor per link (nil for non-scaling in BF.INFO) */
    AMQ_RENAMED_FIELD(uint32_t, expansion, growth);
    uint32_t options;
    uint32_t redisbloom;
} amq_sbloom_info;


/* Link-by-link access, RDB construction and the BF.SCANDUMP / BF.LOADCHUNK
 * format: <amq/advanced.h>. */

#ifdef __cplusplus
}
#endif

#endif /* AMQ_SCALABLE_BLOOM_H */
