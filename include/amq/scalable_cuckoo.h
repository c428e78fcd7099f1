/*
 * amq/scalable_cuckoo.h - the scalable cuckoo filter: a chain of cuckoo
 * sub-filters that grows when full, with deletion and compaction.
 *
 * In RedisBloom mode (the default of amq_scuckoo_params_init(p, 1)) it is
 * RedisBloom's CF data type, byte for byte (docs: the compatibility spec):
 *  - h = MurmurHash64A(item, seed 0) (AMQ_HASH_MURMUR64A, seed 0: h is the
 *    hash's h1); fingerprint fp = h mod 255 + 1 (8 bits, 0 = empty);
 *    bucket indexes i1 = h mod nb, i2 = (h xor fp * 0x5bd1e995) mod nb;
 *  - sub-filter j is a flat byte array of nb_j * bucket_size slots, slot s
 *    of bucket i at byte i * bucket_size + s; nb_0 = the next power of two
 *    >= capacity / bucket_size (integer division, at least 1), nb_j =
 *    nb_0 * expansion^j with expansion rounded up to a power of two;
 *  - insertion, kick order and roll-back, deletion and compaction as
 *    RedisBloom, so the same command sequence leaves identical arrays.
 * Native mode keeps the same chain and algorithms with 12- or 16-bit
 * fingerprints (packed as in amq/cuckoo.h) taken from the hash's h2,
 * fp = 1 + (h2 >> 32) * (2^f - 1) >> 32, i1 = h1 mod nb, i2 = (h1 xor fp *
 * 0x5bd1e995) mod nb, and any hash algorithm: a far lower false-positive
 * rate (2 * bucket_size / 2^f per sub-filter instead of / 255).
 *
 * Statuses (the Redis module maps them to RedisBloom's replies):
 *  AMQ_EFULL   "Filter is full" - no room and expansion 0;
 *  AMQ_ELIMIT  "Maximum expansions reached" - the filter has max_filters
 *              sub-filters (checked before any insert: such a filter
 *              refuses every add, even with free slots), or the next
 *              sub-filter would exceed AMQ_SCUCKOO_MAX_SLOTS;
 *  AMQ_ENOMEM  a new sub-filter could not be allocated.
 * A failed insert changes nothing: the kicks are undone.
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
 * 0..32768; a sub-filter holds at most AMQ_SCUCKOO_MAX_SLOTS slots; at most
 * AMQ_SCUCKOO_MAX_FILTERS sub-filters are ever loaded. */
#define AMQ_SCUCKOO_MAX_SLOTS (UINT64_C(1) << 40)
#define AMQ_SCUCKOO_MAX_FILTERS 65535u
/* The multiplier of the alternate index. */
#define AMQ_SCUCKOO_ALT_MUL UINT64_C(0x5bd1e995)

typedef struct amq_scuckoo_params {
    uint64_t capacity;         /* items the first sub-filter is sized for, >= 1 */
    uint32_t bucket_size;      /* slots per bucket, 1..255 */
    uint32_t max_iterations;   /* kicks per insert, 1..65535 */
    uint32_t expansion;        /* growth factor, 0 (never grow)..32768 */
    uint32_t max_filters;      /* sub-filter limit, >= 1 */
    uint32_t fingerprint_bits; /* 8 (RedisBloom mode), 4 to 32 (native) */
    uint32_t redisbloom;       /* 1: RedisBloom mode (8 bits, MurmurHash64A seed 0) */
    uint32_t hash_algo;        /* native mode: amq_hash_algo */
    uint64_t seed;             /* native mode: hash seed */
} amq_scuckoo_params;

/* RedisBloom's defaults: capacity 1024, bucket size 2, max iterations 20,
 * expansion 1, 32 sub-filters, 8-bit fingerprints, MurmurHash64A seed 0.
 * With redisbloom = 0: the same chain with 16-bit fingerprints, bucket size
 * 4, max iterations 500, expansion 2 and XXH3 seed 0. */
AMQ_API void amq_scuckoo_params_init(amq_scuckoo_params *p, int redisbloom);

/* Creates a filter with one empty sub-filter.  AMQ_ERANGE for a parameter
 * outside its limits (or redisbloom with fingerprint_bits != 8),
 * AMQ_EHASH, AMQ_ENOMEM.  alloc may be NULL. */
AMQ_API int amq_scuckoo_new(const amq_scuckoo_params *p, const amq_allocator *alloc,
                            amq_scuckoo **out);
/* A deep copy.  AMQ_ENOMEM. */
AMQ_API int amq_scuckoo_clone(const amq_scuckoo *c, const amq_allocator *alloc,
                              amq_scuckoo **out);
/* Releases the filter; NULL is a no-op. */
AMQ_API void amq_scuckoo_free(amq_scuckoo *c);

/* The hash of a key as this filter computes it. */
AMQ_API amq_hash128 amq_scuckoo_hash(const amq_scuckoo *c, const void *key, size_t len);

/* CF.ADD: adds a copy.  1, or AMQ_EFULL / AMQ_ELIMIT / AMQ_ENOMEM (nothing
 * changed).  O(sub-filters + max_iterations). */
AMQ_API int amq_scuckoo_add(amq_scuckoo *c, const void *key, size_t len);
AMQ_API int amq_scuckoo_add_hash(amq_scuckoo *c, amq_hash128 h);
/* CF.ADDNX: 1 added, 0 may already exist, or the errors of add. */
AMQ_API int amq_scuckoo_add_unique(amq_scuckoo *c, const void *key, size_t len);
AMQ_API int amq_scuckoo_add_unique_hash(amq_scuckoo *c, amq_hash128 h);
/* CF.EXISTS: 1 may exist, 0 certainly not.  O(sub-filters). */
AMQ_API int amq_scuckoo_contains(const amq_scuckoo *c, const void *key, size_t len);
AMQ_API int amq_scuckoo_contains_hash(const amq_scuckoo *c, amq_hash128 h);
/* CF.COUNT: *count = copies of the fingerprint in the key's two buckets of
 * every sub-filter.  In RedisBloom mode a bucket that is both i1 and i2 is
 * counted twice, as RedisBloom does; native mode counts it once.  AMQ_OK. */
AMQ_API int amq_scuckoo_count(const amq_scuckoo *c, const void *key, size_t len,
                              uint64_t *count);
AMQ_API int amq_scuckoo_count_hash(const amq_scuckoo *c, amq_hash128 h, uint64_t *count);
/*
 * CF.DEL: removes one copy (newest sub-filter first, bucket i1 before i2):
 * 1 removed, 0 not found.  Counts the delete; with more than one
 * sub-filter and deletes > 10 % of the items, compacts (cont = 0).
 * Removing a key never added is undefined (amq/cuckoo.h).
 */
AMQ_API int amq_scuckoo_remove(amq_scuckoo *c, const void *key, size_t len);
AMQ_API int amq_scuckoo_remove_hash(amq_scuckoo *c, amq_hash128 h);
/*
 * Compaction: for each sub-filter from the newest to the second, moves
 * every fingerprint to the oldest sub-filter with a free slot in its
 * buckets; frees the newest sub-filter when it empties.  cont = 1
 * (CF.COMPACT) goes on after a sub-filter that cannot be emptied; cont = 0
 * (after deletes) stops there.  Resets the delete count.
 *
 * Bounded work: one call visits at most AMQ_SCUCKOO_COMPACT_WORK slots
 * (weighted by the earlier sub-filters each visit may scan), then stops
 * where it is - every fingerprint stays findable, and the next call goes on
 * from the newest sub-filter again - so that a host serving requests (the
 * Redis module) is never blocked for long by a long chain.  A chain of one
 * bucket count (expansion 1) of 16 sub-filters or more is walked in time
 * linear in its size (scratch memory of 3 bytes per bucket of a sub-filter,
 * from the filter's allocator; without it the same result, slower).
 */
#define AMQ_SCUCKOO_COMPACT_WORK (UINT64_C(1) << 19)
AMQ_API void amq_scuckoo_compact(amq_scuckoo *c, int cont);

/* ---- layout and information (CF.INFO, CF.DEBUG, RDB) ------------------------ */

typedef struct amq_scuckoo_info {
    uint64_t size;            /* CF.INFO Size: 40 + 16 * filters + sum(buckets * bucket_size) */
    uint64_t num_buckets;     /* of the first sub-filter */
    uint64_t num_filters;
    uint64_t items;           /* inserted minus deleted */
    uint64_t deletes;         /* since the last compaction */
    uint64_t capacity;        /* total slots */
    uint64_t bytes;           /* total bytes of the sub-filter arrays */
    uint32_t bucket_size;
    uint32_t max_iterations;
    uint32_t expansion;       /* the power of two actually used */
    uint32_t max_filters;
    uint32_t fingerprint_bits;
    uint32_t redisbloom;
} amq_scuckoo_info;

/* Fills out with the numbers above; and the parameters it was made with. */
AMQ_API void amq_scuckoo_get_info(const amq_scuckoo *c, amq_scuckoo_info *out);
AMQ_API void amq_scuckoo_get_params(const amq_scuckoo *c, amq_scuckoo_params *out);


/* Sub-filter access, RDB construction and the CF.SCANDUMP / CF.LOADCHUNK
 * format: <amq/advanced.h>. */

#ifdef __cplusplus
}
#endif

#endif /* AMQ_SCALABLE_CUCKOO_H */
