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

#include "amq.h"
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
    uint32_t fingerprint_bits; /* 8 (RedisBloom mode), 12 or 16 (native) */
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
AMQ_API int amq_scuckoo_clone(const amq_scuckoo *c, const amq_allocator *alloc,
                              amq_scuckoo **out);
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
/* CF.COUNT: copies of the fingerprint in the key's two buckets of every
 * sub-filter.  In RedisBloom mode a bucket that is both i1 and i2 is
 * counted twice, as RedisBloom does; native mode counts it once. */
AMQ_API uint64_t amq_scuckoo_count(const amq_scuckoo *c, const void *key, size_t len);
AMQ_API uint64_t amq_scuckoo_count_hash(const amq_scuckoo *c, amq_hash128 h);
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

AMQ_API void amq_scuckoo_get_info(const amq_scuckoo *c, amq_scuckoo_info *out);
AMQ_API void amq_scuckoo_get_params(const amq_scuckoo *c, amq_scuckoo_params *out);

/* Sub-filter i (0 = oldest): its bucket count and its array (bytes: nb *
 * bucket_size in RedisBloom mode; packed f-bit slots otherwise).
 * AMQ_ERANGE for i >= num_filters. */
AMQ_API int amq_scuckoo_subfilter(const amq_scuckoo *c, uint32_t i, uint64_t *buckets,
                                  const uint8_t **data, size_t *bytes);
/* The same, writable: how an RDB loader fills a filter built by
 * amq_scuckoo_from_header.  Any bytes are valid fingerprints; call
 * amq_scuckoo_validate afterwards to check the item count. */
AMQ_API int amq_scuckoo_subfilter_mut(amq_scuckoo *c, uint32_t i, uint8_t **data,
                                      size_t *bytes);

/* Changes the sub-filter limit (a module setting); >= 1. */
AMQ_API int amq_scuckoo_set_max_filters(amq_scuckoo *c, uint32_t max_filters);

/* ---- construction from raw fields (RDB load, LOADCHUNK header) ------------- */

typedef struct amq_scuckoo_header {
    uint64_t num_items;
    uint64_t num_buckets;  /* first sub-filter */
    uint64_t num_deletes;
    uint64_t num_filters;
    uint32_t bucket_size;
    uint32_t max_iterations;
    uint32_t expansion;
} amq_scuckoo_header;

/*
 * A RedisBloom-mode filter with zeroed sub-filters from raw fields.
 * sub_buckets, when not NULL, holds each sub-filter's bucket count as
 * stored (RDB encoding 4) and must equal num_buckets * expansion^j.
 * Validates everything before allocating: num_filters in [1,
 * AMQ_SCUCKOO_MAX_FILTERS] (1 when expansion is 0), num_buckets a power of
 * two, bucket_size, max_iterations and expansion (<= 32768; rounded up to a
 * power of two as at creation) in range, every sub-filter within AMQ_SCUCKOO_MAX_SLOTS, num_items at most
 * the total slots.  max_filters becomes max(32, num_filters).
 * AMQ_ECORRUPT for bad fields, AMQ_ENOMEM.
 */
AMQ_API int amq_scuckoo_from_header(const amq_scuckoo_header *h, const uint64_t *sub_buckets,
                                    const amq_allocator *alloc, amq_scuckoo **out);
/*
 * amq_scuckoo_from_header whose sub-filters adopt tables[j] (table_bytes[j]
 * bytes each - the sub-filter's buckets times the bucket size - taken from
 * alloc, any alignment; h->num_filters entries) instead of new zeroed ones:
 * a host that has read the tables (a Redis RDB load) hands them over rather
 * than holding the chain twice.  Every table is taken whatever the outcome:
 * owned by the filter on AMQ_OK, freed through alloc on an error.
 * AMQ_ECORRUPT also when a table's size is not its sub-filter's.
 */
AMQ_API int amq_scuckoo_from_header_owning(const amq_scuckoo_header *h, void **tables,
                                           const size_t *table_bytes,
                                           const amq_allocator *alloc, amq_scuckoo **out);

/* Checks that the item count equals the fingerprints stored: AMQ_OK or
 * AMQ_ECORRUPT.  O(slots). */
AMQ_API int amq_scuckoo_validate(const amq_scuckoo *c);

/*
 * Sets the item and delete counts as recorded elsewhere.  The counts are
 * bookkeeping (CF.INFO, the compaction trigger), never used to index
 * anything, so any value is safe; a host restoring a saved filter uses this
 * to restore counts that need not match the arrays (a filter assembled by
 * LOADCHUNK from a header with wrong counts stays loadable after SAVE).
 * O(1).
 */
AMQ_API void amq_scuckoo_set_counts(amq_scuckoo *c, uint64_t items, uint64_t deletes);

/* ---- RedisBloom dump format (CF.SCANDUMP / CF.LOADCHUNK) -------------------- */
/*
 * Header chunk (iterator 0 answers [1, header]): 38 bytes, little-endian,
 * packed: u64 numItems, u64 numBuckets, u64 numDeletes, u64 numFilters,
 * u16 bucketSize, u16 maxIterations, u16 expansion.
 * Data chunks: the sub-filter arrays concatenated; iterator it >= 1 answers
 * the bytes from offset it - 1 to the end of the sub-filter holding it, at
 * most max_chunk of them, with next iterator it + len; past the end, len 0
 * and next 0 (RedisBloom answers [0, nil]).  LOADCHUNK it data writes data
 * at offset it - len - 1, inside one sub-filter.
 * amq, unlike RedisBloom, also dumps an empty filter.  Native-mode filters
 * have no such form (AMQ_EUNSUPPORTED).
 */
#define AMQ_SCUCKOO_HEADER_SIZE 38
#define AMQ_SCUCKOO_MAX_CHUNK ((size_t)16 << 20)

/* Writes the header chunk (AMQ_SCUCKOO_HEADER_SIZE bytes).  AMQ_EINVAL for
 * cap too small, AMQ_EUNSUPPORTED in native mode. */
AMQ_API int amq_scuckoo_header_encode(const amq_scuckoo *c, uint8_t *buf, size_t cap);
/* Parses a header chunk; len must be exactly AMQ_SCUCKOO_HEADER_SIZE
 * (AMQ_ETRUNC / AMQ_ECORRUPT otherwise).  Fields are validated by
 * amq_scuckoo_from_header. */
AMQ_API int amq_scuckoo_header_decode(const uint8_t *buf, size_t len, amq_scuckoo_header *h);
/* Data chunk at iterator it (>= 1): *data points into the filter (valid
 * until the next change), *len bytes, *next the next iterator (0, with
 * len 0, at the end).  AMQ_ERANGE for it 0.  max_chunk 0 means
 * AMQ_SCUCKOO_MAX_CHUNK. */
AMQ_API int amq_scuckoo_chunk(const amq_scuckoo *c, uint64_t it, size_t max_chunk,
                              const uint8_t **data, size_t *len, uint64_t *next);
/* LOADCHUNK of a data chunk: AMQ_ERANGE when it - len - 1 is not an offset
 * of any sub-filter (it <= len included), AMQ_EOVERFLOW when the chunk runs
 * past the end of its sub-filter.  Nothing is written on error. */
AMQ_API int amq_scuckoo_chunk_apply(amq_scuckoo *c, uint64_t it, const uint8_t *buf,
                                    size_t len);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_SCALABLE_CUCKOO_H */
