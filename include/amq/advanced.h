/*
 * amq/advanced.h - format internals and raw access: the parts of libamq
 * that are not frozen with the stable API.
 *
 * As zstd's ZSTD_STATIC_LINKING_ONLY section, these declarations may change
 * in any minor version; a program that uses them should link the version it
 * was built with.  Define AMQ_ADVANCED_API before including this header (or
 * <amq.h>, which then includes it) to say so.  What is here:
 *  - views over caller-owned bytes and the filters' raw arrays, readable
 *    and writable (importers, mmap-style hosts);
 *  - the blocked kind's query-path selection (scalar, AVX2, AVX-512);
 *  - the RedisBloom data types' internals: link and sub-filter arrays,
 *    construction from RDB fields, and the SCANDUMP / LOADCHUNK chunk
 *    format (the Redis module's persistence).
 * The thread-safety rules are those of each family's header: functions
 * taking a const handle are readers, the others writers.
 */
#ifndef AMQ_ADVANCED_H
#define AMQ_ADVANCED_H

#ifndef AMQ_ADVANCED_API
#error "amq/advanced.h is not part of the stable API: define AMQ_ADVANCED_API first"
#endif

#include "amq/common.h"
#include "amq/hash.h"
#include "amq/bloom.h"
#include "amq/blocked_bloom.h"
#include "amq/partitioned.h"
#include "amq/cuckoo.h"
#include "amq/scalable_bloom.h"
#include "amq/scalable_cuckoo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== classic Bloom filter: views and the bit array ========================= */

/*
 * A read-only filter over caller-owned bytes (an mmap'd file), queried in
 * place without copying; data must hold amq_bloom_data_size(params) bytes
 * and outlive the view.  items is the recorded item count.  Adds return
 * AMQ_EREADONLY.
 */
AMQ_API int amq_bloom_view(const amq_bloom_params *params, const void *data, size_t len,
                           uint64_t items, const amq_allocator *alloc, amq_bloom **out);

/* Bytes of the bit array: m rounded up to whole 64-bit words, / 8. */
AMQ_API size_t amq_bloom_data_size(const amq_bloom_params *params);

/* The bit array (amq_bloom_data_size bytes).  The mutable form returns NULL
 * for a view; writing through it is how importers fill a filter. */
AMQ_API const uint8_t *amq_bloom_data(const amq_bloom *b);
AMQ_API uint8_t *amq_bloom_data_mut(amq_bloom *b);
AMQ_API void amq_bloom_set_items(amq_bloom *b, uint64_t items);

/* ==== blocked Bloom filter: views and the bit array ========================= */

/* Bytes of the bit array: blocks * 64. */
AMQ_API size_t amq_blocked_data_size(const amq_blocked_params *params);

/*
 * A read-only filter over caller-owned bytes (an mmap'd file), queried in
 * place.  data must be 64-byte aligned (AMQ_EINVAL otherwise), hold exactly
 * amq_blocked_data_size(params) bytes and outlive the view.  Adds return
 * AMQ_EREADONLY.
 */
AMQ_API int amq_blocked_view(const amq_blocked_params *params, const void *data, size_t len,
                             uint64_t items, const amq_allocator *alloc, amq_blocked **out);

/* The bit array (amq_blocked_data_size bytes). */
AMQ_API const uint8_t *amq_blocked_data(const amq_blocked *b);

/* Sets the recorded item count (an importer that filled the array). */
AMQ_API void amq_blocked_set_items(amq_blocked *b, uint64_t items);

/* ==== blocked and partitioned kinds: query paths ============================ */

/* Query paths (values are stable; AUTO means "the best this CPU has"). */
typedef enum amq_simd {
    AMQ_SIMD_AUTO = 0,
    AMQ_SIMD_SCALAR = 1,
    AMQ_SIMD_AVX2 = 2,
    AMQ_SIMD_AVX512 = 3
} amq_simd;

/* 1 if this build and this CPU (and the AMQ_SIMD environment cap) can run
 * the path, else 0.  SCALAR and AUTO are always 1.  Thread-safe. */
AMQ_API int amq_simd_supported(uint32_t simd);

/* "scalar", "avx2", "avx512" (AUTO resolves to the path it picks), or NULL. */
AMQ_API const char *amq_simd_name(uint32_t simd);

/* Selects the query path of one filter: AMQ_EUNSUPPORTED when
 * amq_simd_supported(simd) is 0, AMQ_EINVAL for an unknown value.  Needs
 * exclusive access (call it before sharing the filter). */
AMQ_API int amq_blocked_set_simd(amq_blocked *b, uint32_t simd);

/* The path the filter's queries take (never AUTO). */
AMQ_API uint32_t amq_blocked_simd(const amq_blocked *b);

/* As amq_blocked_set_simd, for every partition. */
AMQ_API int amq_partitioned_set_simd(amq_partitioned *f, uint32_t simd);

/* ==== cuckoo filter: views, the table, the victim =========================== */

/* Bytes of the table of a filter with these params: nb * b * f bits
 * rounded up to whole 64-bit words, plus 8 zero bytes of padding. */
AMQ_API size_t amq_cuckoo_data_size(const amq_cuckoo_params *params);

/*
 * A read-only filter over caller-owned table bytes (an mmap'd file), queried
 * in place.  data must hold amq_cuckoo_data_size(params) bytes and outlive
 * the view.  items is the number of stored fingerprints (victim included);
 * victim_fp is 0 or the victim's fingerprint, in bucket victim_bucket.
 * Mutations return AMQ_EREADONLY.  AMQ_EINVAL for a wrong len, AMQ_ERANGE
 * for bad params or victim.
 */
AMQ_API int amq_cuckoo_view(const amq_cuckoo_params *params, const void *data, size_t len,
                            uint64_t items, uint32_t victim_fp, uint64_t victim_bucket,
                            const amq_allocator *alloc, amq_cuckoo **out);

/* The victim: its fingerprint (0 = none) and bucket. */
AMQ_API uint32_t amq_cuckoo_victim(const amq_cuckoo *c, uint64_t *bucket);
/* The table bytes (amq_cuckoo_bytes). */
AMQ_API const uint8_t *amq_cuckoo_data(const amq_cuckoo *c);

/* ==== scalable Bloom filter (RedisBloom BF): links, RDB, chunks ============= */

/* Link i (0 = oldest) and its bit array (info.bytes bytes).
 * AMQ_ERANGE for i >= links. */
AMQ_API int amq_sbloom_link(const amq_sbloom *s, uint32_t i, amq_sbloom_link_info *out,
                            const uint8_t **data);
/* Its writable bit array: how an RDB loader fills a filter built by
 * amq_sbloom_from_raw. */
AMQ_API int amq_sbloom_link_data_mut(amq_sbloom *s, uint32_t i, uint8_t **data, size_t *len);

/* ---- construction from raw fields (RDB load, LOADCHUNK header) --------------- */

typedef struct amq_sbloom_header {
    uint64_t size;     /* items, the sum of the links' items */
    uint32_t nfilters;
    uint32_t options;
    uint32_t growth;
} amq_sbloom_header;

/*
 * A RedisBloom-mode filter with zeroed links from raw fields (links[0..
 * nfilters)).  Validates everything before allocating: 1 <= nfilters <=
 * AMQ_SBLOOM_MAX_LINKS; no unknown option bits; FORCE64 set (older 32-bit
 * hashing is not supported: AMQ_EUNSUPPORTED); growth <= 32768 and >= 1
 * unless NO_SCALING; per link: entries >= 1, error in (0, 1), bpe finite
 * and > 0, hashes in [1, AMQ_BLOOM_MAX_K_REDISBLOOM] (RedisBloom mode;
 * 255 otherwise), bits a nonzero multiple of 64 up to 2^43,
 * bytes = bits / 8, n2 = 0 or bits = 2^n2, items <= entries; the items
 * summing (without overflow) to size.  AMQ_ECORRUPT for bad fields.
 */
AMQ_API int amq_sbloom_from_raw(const amq_sbloom_header *h, const amq_sbloom_link_info *links,
                                const amq_allocator *alloc, amq_sbloom **out);
/*
 * amq_sbloom_from_raw whose links adopt arrays[i] (links[i].bytes bytes
 * each, taken from alloc, any alignment) instead of new zeroed arrays: a
 * host that has read the bit arrays (a Redis RDB load) hands them over
 * rather than holding every link twice.  Every array is taken whatever
 * the outcome: owned by the filter on AMQ_OK, freed through alloc on an
 * error.  Errors as amq_sbloom_from_raw.
 */
AMQ_API int amq_sbloom_from_raw_owning(const amq_sbloom_header *h,
                                       const amq_sbloom_link_info *links, void **arrays,
                                       const amq_allocator *alloc, amq_sbloom **out);

/* ---- RedisBloom dump format (BF.SCANDUMP / BF.LOADCHUNK) -------------------- */
/*
 * Header chunk (iterator 0 answers [1, header]), little-endian, packed:
 * u64 size, u32 nfilters, u32 options, u32 growth, then per link 53 bytes:
 * u64 bytes, u64 bits, u64 size, f64 error, f64 bpe, u32 hashes,
 * u64 entries, u8 n2.
 * Data chunks: the link bit arrays concatenated; iterator it >= 1 answers
 * the bytes from offset it - 1 to the end of the link holding it, at most
 * max_chunk of them, next iterator it + len; past the end len 0, next 0
 * (RedisBloom answers [0, ""]).  LOADCHUNK it data writes at offset
 * it - len - 1, inside one link.  Native-mode filters have no such form.
 */
#define AMQ_SBLOOM_HEADER_FIXED 20
#define AMQ_SBLOOM_HEADER_LINK 53
#define AMQ_SBLOOM_MAX_CHUNK ((size_t)16 << 20)

/* Bytes of the header chunk: 20 + 53 * links. */
AMQ_API size_t amq_sbloom_header_size(const amq_sbloom *s);
/* Writes it.  AMQ_EINVAL for cap too small, AMQ_EUNSUPPORTED (native). */
AMQ_API int amq_sbloom_header_encode(const amq_sbloom *s, uint8_t *buf, size_t cap);
/* LOADCHUNK 1: parses a header chunk (len must be exactly 20 + 53 n) and
 * builds the zeroed filter by amq_sbloom_from_raw.  AMQ_ETRUNC,
 * AMQ_ECORRUPT, AMQ_EUNSUPPORTED, AMQ_ENOMEM. */
AMQ_API int amq_sbloom_header_decode(const uint8_t *buf, size_t len, const amq_allocator *alloc,
                                   amq_sbloom **out);
/* Data chunk at iterator it >= 1 (AMQ_ERANGE for 0); max_chunk 0 means
 * AMQ_SBLOOM_MAX_CHUNK.  *data points into the filter. */
AMQ_API int amq_sbloom_chunk(const amq_sbloom *s, uint64_t it, size_t max_chunk,
                             const uint8_t **data, size_t *len, uint64_t *next);
/* LOADCHUNK of a data chunk: AMQ_ERANGE when offset it - len - 1 is in no
 * link ("invalid offset - no link found"), AMQ_EOVERFLOW when the chunk
 * runs past its link's end ("invalid chunk - Too big for current
 * filter").  Nothing is written on error. */
AMQ_API int amq_sbloom_chunk_apply(amq_sbloom *s, uint64_t it, const uint8_t *buf, size_t len);

/*
 * RedisBloom's sizing of a link for (entries, error), computed without
 * allocating (fills every field but items).  AMQ_ERANGE for entries 0,
 * error outside (0, 1) or options with ENTS_IS_BITS; AMQ_ELIMIT when the
 * link would need more than AMQ_BLOOM_MAX_K_REDISBLOOM hashes or 2^43 bits.  O(1).
 * (1e-6 / 300,000,000 scaling: error 5e-7 -> 1132420136 bytes.)
 */
AMQ_API int amq_sbloom_link_sizing(uint64_t entries, double error, uint32_t options,
                                   amq_sbloom_link_info *out);


/* ==== scalable cuckoo filter (RedisBloom CF): sub-filters, RDB, chunks ====== */

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
/* The sub-filter i holding byte off of the concatenated arrays (a data
 * chunk's offset) and the offset within it; AMQ_ERANGE past the end.  O(1)
 * in the number of sub-filters (a chain growing by 1 is uniform; a growing
 * one has at most 64 sub-filters of differing sizes to walk). */
AMQ_API int amq_scuckoo_locate(const amq_scuckoo *c, uint64_t off, uint32_t *i,
                               uint64_t *within);
/* LOADCHUNK of a data chunk: AMQ_ERANGE when it - len - 1 is not an offset
 * of any sub-filter (it <= len included), AMQ_EOVERFLOW when the chunk runs
 * past the end of its sub-filter.  Nothing is written on error. */
AMQ_API int amq_scuckoo_chunk_apply(amq_scuckoo *c, uint64_t it, const uint8_t *buf,
                                    size_t len);

/* Changes the sub-filter limit (a module setting): AMQ_OK, AMQ_ERANGE for
 * 0. */
AMQ_API int amq_scuckoo_set_max_filters(amq_scuckoo *c, uint32_t max_filters);


#ifdef __cplusplus
}
#endif

#endif /* AMQ_ADVANCED_H */
