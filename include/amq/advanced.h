/*
 * amq/advanced.h - format internals and raw access: the parts of libamq
 * that are not frozen with the stable API.
 *
 * As zstd's ZSTD_STATIC_LINKING_ONLY section, these declarations may change
 * in any minor version; a program that uses them should link the version it
 * was built with.  Define AMQ_ADVANCED_API before including this header (or
 * <amq.h>, which then includes it) to say so.  What is here:
 *  - the typed handles of each family (amq_bloom_add, amq_blocked_new,
 *    amq_cuckoo_count, amq_sbloom_add, ...): what the generic handle
 *    amq_filter_* does for every kind, called without its table of
 *    operations, plus the batched forms over keys, packed keys and 64-bit
 *    hashes (benchmarks, language bindings), and the few calls only one
 *    family has (amq_cuckoo_add_unique / _count, amq_scuckoo_compact);
 *  - views over caller-owned bytes and the filters' raw arrays, readable
 *    and writable (importers, mmap-style hosts);
 *  - the blocked kind's query-path selection (scalar, AVX2, AVX-512);
 *  - amq_fuse_view (amq/fuse_view.h): a fuse filter's one-key query inline
 *    in the caller's loop;
 *  - the RedisBloom data types' internals: link and link arrays,
 *    construction from RDB fields, and the SCANDUMP / LOADCHUNK chunk
 *    format (the Redis module's persistence), and the aging kind's raw
 *    state (the module's RDB).
 * docs/api.md lists what moved here from the stable headers in 0.2.0.
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
#include "amq/filter.h"
#include "amq/aging.h"
#include "amq/static.h"
#include "amq/fuse_view.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== classic Bloom filter: the typed handle, views, the bit array ========== */

/* The typed handle: what amq_filter_* does for a filter of kind
 * AMQ_KIND_BLOOM, called directly (amq_filter_bloom gives it for a handle). */

/*
 * Sizing from capacity n and false-positive rate p, as Guava computes it:
 * m = floor(-n ln p / (ln 2)^2) (at least 1), k = max(1, round(m / n ln 2)).
 * n = 1,000,000, p = 0.01 gives m = 9,585,058 and k = 7.
 * Returns AMQ_ERANGE when n is 0, p is not in (0, 1) or m would exceed
 * AMQ_BLOOM_MAX_BITS.  Fills bits and k only.
 */
AMQ_API int amq_bloom_bits_for(uint64_t n, double p, uint64_t *bits, uint32_t *k);

/*
 * Sizing from bits per key, as LevelDB does: m = n * bits_per_key (at least
 * 64), k = floor(bits_per_key * 0.69) clamped to [1, 30].
 * AMQ_ERANGE when n is 0 or bits_per_key is not in (0, 1000].
 */
AMQ_API int amq_bloom_bits_for_bpk(uint64_t n, double bits_per_key, uint64_t *bits,
                               uint32_t *k);

/* A deep, writable copy (also of a view).  AMQ_ENOMEM. */
AMQ_API int amq_bloom_clone(const amq_bloom *b, const amq_allocator *alloc,
                            amq_bloom **out);

/*
 * Adds a key.  Returns 1 if at least one bit was newly set (the item is
 * counted), 0 if every bit was already set (it may have been added before),
 * AMQ_EREADONLY for a view.  O(k).
 */
AMQ_API int amq_bloom_add(amq_bloom *b, const void *key, size_t len);
AMQ_API int amq_bloom_add_hash(amq_bloom *b, amq_hash128 h);

/* 1 if the key may be in the set, 0 if it certainly is not.  O(k). */
AMQ_API int amq_bloom_contains(const amq_bloom *b, const void *key, size_t len);
AMQ_API int amq_bloom_contains_hash(const amq_bloom *b, amq_hash128 h);

/* The hash of a key as this filter computes it. */
AMQ_API amq_hash128 amq_bloom_hash(const amq_bloom *b, const void *key, size_t len);

/* Clears every bit and the item count.  AMQ_EREADONLY for a view. */
AMQ_API int amq_bloom_clear(amq_bloom *b);

/*
 * dst |= src (union) or dst &= src (intersection).  Both must have the same
 * parameters (AMQ_EINCOMPAT otherwise).  The item count afterwards is the
 * Swamidass-Baldi estimate of what the result holds (a union's kept within
 * [the larger count, the sum], and the larger count when src adds no bit),
 * so a key of both counts once.  O(m).
 */
AMQ_API int amq_bloom_merge(amq_bloom *dst, const amq_bloom *src);
AMQ_API int amq_bloom_intersect(amq_bloom *dst, const amq_bloom *src);

/* Number of bits set (popcount over the array), O(m). */
AMQ_API uint64_t amq_bloom_bits_set(const amq_bloom *b);

/* Expected false-positive rate now, (X / m)^k. */
AMQ_API double amq_bloom_fpp_now(const amq_bloom *b);

/* Keys counted as added (adds that set a bit; merges add up counts). */
AMQ_API uint64_t amq_bloom_items(const amq_bloom *b);
/* 1 for a view over caller or mapped bytes (writers return AMQ_EREADONLY),
 * else 0. */
AMQ_API int amq_bloom_is_readonly(const amq_bloom *b);


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

/* ==== blocked Bloom filter: the typed handle, views, the bit array ========== */

/* The typed handle: what amq_filter_* does for a filter of kind
 * AMQ_KIND_BLOCKED, called directly (amq_filter_blocked gives it for a
 * handle), plus batched forms over keys, packed keys and 64-bit hashes. */

/*
 * Sizing from capacity n and target rate p: the fewest blocks (and for them
 * the k in [1, 16] with the lowest rate) whose amq_blocked_fpp_theory at n
 * is at most p.  n = 1,000,000 and p = 0.01 give 19,372 blocks (9.92 bits
 * per key), k = 6.  AMQ_ERANGE when n is 0, p not in (0, 1), or the filter
 * would need more than AMQ_BLOCKED_MAX_BLOCKS blocks or 1000 bits per key
 * (rates below about 1e-12 are out of reach of one 512-bit block).
 * O(log(n) * 16) rate evaluations.
 */
AMQ_API int amq_blocked_blocks_for(uint64_t n, double p, uint64_t *blocks, uint32_t *k);

/*
 * Sizing from bits per key: blocks = ceil(n * bits_per_key / 512) (at
 * least 1), k = the best k for that size.  AMQ_ERANGE when n is 0,
 * bits_per_key not in (0, 1000], or too many blocks.
 */
AMQ_API int amq_blocked_blocks_for_bpk(uint64_t n, double bits_per_key, uint64_t *blocks, uint32_t *k);

/* Fills params for (n, p) with amq_blocked_blocks_for, XXH3 seed 0.  AMQ_OK,
 * or AMQ_ERANGE as amq_blocked_blocks_for. */
AMQ_API int amq_blocked_params_for(uint64_t n, double p, amq_blocked_params *params);

/*
 * Creates an empty filter (zeroed, 64-byte aligned; arrays of 1 MiB and
 * more are mmap'd and advised to use transparent huge pages).  alloc may be
 * NULL.  AMQ_ERANGE (geometry), AMQ_EHASH, AMQ_ENOMEM.
 */
AMQ_API int amq_blocked_new(const amq_blocked_params *params, const amq_allocator *alloc,
                            amq_blocked **out);

/* A deep, writable copy (also of a view).  Not safe against concurrent adds
 * to src: the copy may or may not hold them.  AMQ_OK, AMQ_ENOMEM. */
AMQ_API int amq_blocked_clone(const amq_blocked *b, const amq_allocator *alloc, amq_blocked **out);

/* Releases the filter; NULL is a no-op. */
AMQ_API void amq_blocked_free(amq_blocked *b);

/* The hash of a key as this filter computes it. */
AMQ_API amq_hash128 amq_blocked_hash(const amq_blocked *b, const void *key, size_t len);

/*
 * Adds one key.  1 if at least one bit was newly set (the item is counted),
 * 0 if all its bits were already set, AMQ_EREADONLY for a view.  O(k), one
 * cache line.  Exclusive unless the filter is in concurrent mode.
 */
AMQ_API int amq_blocked_add(amq_blocked *b, const void *key, size_t len);
AMQ_API int amq_blocked_add_hash(amq_blocked *b, amq_hash128 h);

/* 1 if the key may be in the set, 0 if it certainly is not.  O(k), one
 * cache line. */
AMQ_API int amq_blocked_contains(const amq_blocked *b, const void *key, size_t len);
AMQ_API int amq_blocked_contains_hash(const amq_blocked *b, amq_hash128 h);

/*
 * Batched forms.  They hash ahead and keep a window of cache-line
 * prefetches in flight, which is what makes a filter far larger than the
 * caches answer at memory-parallel speed.  Keys come as hashes
 * (_add_batch, _contains_batch), as slices (_keys), packed (_fixed: n keys
 * of key_len bytes each, back to back, at keys - e.g. an array of 64-bit
 * integers, their bytes as they lie in memory) or as 64-bit hashes (64).
 *
 * add: adds every key; added[i] (when added is not NULL) receives what
 * amq_blocked_add would return for key i, *count (when count is not NULL)
 * the number of keys newly added.  AMQ_OK, or AMQ_EREADONLY for a view
 * (nothing added, nothing written).
 * contains: out[i] (when out is not NULL) receives 1 or 0, *count (when
 * not NULL) the number of 1 answers.  Always AMQ_OK.
 * O(n k); safe concurrently like the single-key forms.
 */
AMQ_API int amq_blocked_add_batch(amq_blocked *b, const amq_hash128 *h, size_t n, uint8_t *added,
                                  uint64_t *count);
AMQ_API int amq_blocked_add_batch_keys(amq_blocked *b, const amq_slice *keys, size_t n,
                                       uint8_t *added, uint64_t *count);
AMQ_API int amq_blocked_add_batch_fixed(amq_blocked *b, const void *keys, size_t key_len, size_t n,
                                        uint8_t *added, uint64_t *count);
AMQ_API int amq_blocked_contains_batch(const amq_blocked *b, const amq_hash128 *h, size_t n,
                                       uint8_t *out, uint64_t *count);
AMQ_API int amq_blocked_contains_batch_keys(const amq_blocked *b, const amq_slice *keys, size_t n,
                                            uint8_t *out, uint64_t *count);
AMQ_API int amq_blocked_contains_batch_fixed(const amq_blocked *b, const void *keys,
                                             size_t key_len, size_t n, uint8_t *out,
                                             uint64_t *count);

/*
 * Keys that are already 64-bit hashes (of a hash function the caller
 * chose and applies to every key alike): x is taken as the 128-bit hash
 * {x, x} - the block from all 64 bits, the probes from the low 32 - so
 * amq_blocked_contains_batch64(b, &x, 1, out, NULL) answers as
 * amq_blocked_contains_hash(b, (amq_hash128){x, x}).  The fastest forms:
 * no hashing, half the memory per key of the 128-bit arrays, and on
 * AVX-512 two keys tested per step when k <= 8.  The hashes must be
 * uniformly distributed in all 64 bits, or the fpp is not the filter's.
 * Results as the forms above: add AMQ_OK or AMQ_EREADONLY, contains
 * AMQ_OK.
 */
AMQ_API int amq_blocked_add_batch64(amq_blocked *b, const uint64_t *h, size_t n, uint8_t *added,
                                    uint64_t *count);
AMQ_API int amq_blocked_contains_batch64(const amq_blocked *b, const uint64_t *h, size_t n,
                                         uint8_t *out, uint64_t *count);

/* Clears every bit and the count.  AMQ_EREADONLY for a view. */
AMQ_API int amq_blocked_clear(amq_blocked *b);

/*
 * dst |= src: dst then answers "may be present" for every key of either.
 * Same blocks, k, hash algorithm and seed required (AMQ_EINCOMPAT);
 * AMQ_EREADONLY for a view.  The count becomes the estimate from each
 * block's bits (a key of both counts once), within [the larger count, the
 * sum], and the larger count when src adds no bit.  O(blocks).
 */
AMQ_API int amq_blocked_merge(amq_blocked *dst, const amq_blocked *src);

/* The filter's parameters (as given to amq_blocked_new, capacity and fpp
 * included). */
AMQ_API void amq_blocked_get_params(const amq_blocked *b, amq_blocked_params *out);
/* Keys counted as added (an upper bound in concurrent mode). */
AMQ_API uint64_t amq_blocked_items(const amq_blocked *b);
/* 1 for a view over caller or mapped bytes (adds return AMQ_EREADONLY),
 * else 0. */
AMQ_API int amq_blocked_is_readonly(const amq_blocked *b);

/* Bits set (popcount over the array), O(blocks). */
AMQ_API uint64_t amq_blocked_bits_set(const amq_blocked *b);

/* Expected false-positive rate now, from the fill of each block: the mean
 * over blocks of (bits set / 512)^k.  O(blocks). */
AMQ_API double amq_blocked_fpp_now(const amq_blocked *b);

/*
 * Concurrency mode of adds.  Off (the default): adds use plain loads and
 * stores, the fastest form, and need exclusive access - no other add and no
 * query may run at the same time.  On: adds set bits with relaxed atomic
 * OR (a locked instruction per 64-bit word that gains a bit, several times
 * slower in an add-heavy loop) and any number of threads may add and query
 * at once, with the guarantee described at the top of this header.
 * AMQ_EREADONLY for a view.  Switch it before sharing the filter.
 */
AMQ_API int amq_blocked_set_concurrent(amq_blocked *b, int on);


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

/* ==== partitioned filter: the typed handle ================================= */

/* What amq_filter_* does for a filter of kind AMQ_KIND_PARTITIONED, called
 * directly (amq_filter_partitioned gives it for a handle). */

/*
 * An empty filter for params->capacity keys: P partitions of equal size
 * whose blocks together are what one blocked filter for (capacity, fpp)
 * would have (the hash spreads keys over partitions and blocks alike, so
 * the rate is the same).  AMQ_ERANGE (sizes), AMQ_EHASH, AMQ_ENOMEM.
 */
AMQ_API int amq_partitioned_new(const amq_partitioned_params *params, const amq_allocator *alloc,
                                amq_partitioned **out);

/* The hash of a key as this filter computes it. */
AMQ_API amq_hash128 amq_partitioned_hash(const amq_partitioned *f, const void *key, size_t len);

/* As amq_blocked_add / _contains (1, 0, AMQ_EREADONLY), plus
 * AMQ_ECHECKSUM for a partition that failed its lazy verification. */
AMQ_API int amq_partitioned_add(amq_partitioned *f, const void *key, size_t len);
AMQ_API int amq_partitioned_add_hash(amq_partitioned *f, amq_hash128 h);
AMQ_API int amq_partitioned_contains(const amq_partitioned *f, const void *key, size_t len);
AMQ_API int amq_partitioned_contains_hash(const amq_partitioned *f, amq_hash128 h);

/* Batched forms with a prefetch window, as amq_blocked_add_batch and
 * _contains_batch: added, out and count may be NULL.  add: AMQ_OK,
 * AMQ_EREADONLY (nothing added), or AMQ_ECHECKSUM - the keys before the
 * bad partition's first key are added, none after, and *count says how
 * many were new.  contains: AMQ_OK; keys of a partition that failed
 * verification answer 1. */
AMQ_API int amq_partitioned_add_batch(amq_partitioned *f, const amq_hash128 *h, size_t n,
                                      uint8_t *added, uint64_t *count);
AMQ_API int amq_partitioned_contains_batch(const amq_partitioned *f, const amq_hash128 *h,
                                           size_t n, uint8_t *out, uint64_t *count);

/* The partition of `partitions` a hash goes to: ((h.h2 >> 32) * partitions) >> 32, the rule
 * of every partitioned filter (a client routing keys by partition computes it here). */
AMQ_API uint32_t amq_partition_index(uint32_t partitions, amq_hash128 h);

/*
 * Slices: partitions [first, first + count) of f as a filter of their own (layout 1 of the
 * kind's parameter block, docs/file-format.md), which keeps the whole filter's partition rule:
 * a key goes to partition amq_partition_index(total, h) - first.  A key of another slice is
 * refused by adds (single or batched: AMQ_ERANGE, nothing added from it on) and answered 1
 * ("may be present") by queries: a slice never says "absent" for a key it cannot hold.  Its capacity is its share of the whole
 * filter's; the whole filter's is kept for the join.  One shard of a filter sharded by
 * partition (docs/cluster.md) is a slice.
 * slice: AMQ_ERANGE when the run is empty, out of f or all of the whole filter;
 * AMQ_ECHECKSUM when a partition fails verification; AMQ_ENOMEM.  No concurrent adds.
 */
AMQ_API int amq_partitioned_slice(const amq_partitioned *f, uint32_t first, uint32_t count,
                                  const amq_allocator *alloc, amq_partitioned **out);

/* Where f lies in the filter it was cut from (a whole filter: its own count, first 0). */
AMQ_API void amq_partitioned_slice_info(const amq_partitioned *f, uint32_t *total,
                                        uint32_t *first);

/* The whole filter again from its n slices in order: byte for byte the filter they were cut
 * from (same partitions, counts and bits).  AMQ_EINCOMPAT (with err saying which) when the
 * slices are of different filters, out of order, overlap or leave partitions out;
 * AMQ_ECHECKSUM, AMQ_ENOMEM. */
AMQ_API int amq_partitioned_join(const amq_partitioned *const *slices, size_t n,
                                 const amq_allocator *alloc, amq_partitioned **out,
                                 amq_errinfo *err);

/* dst |= src for filters of the same partitions and geometry
 * (AMQ_EINCOMPAT otherwise); each partition's count becomes the estimate
 * from its blocks' bits, as amq_blocked_merge's.  O(bytes). */
AMQ_API int amq_partitioned_merge(amq_partitioned *dst, const amq_partitioned *src);

/* Empties every partition.  AMQ_EREADONLY for a view. */
AMQ_API int amq_partitioned_clear(amq_partitioned *f);

/* As amq_blocked_set_concurrent, for every partition: AMQ_OK,
 * AMQ_EREADONLY. */
AMQ_API int amq_partitioned_set_concurrent(amq_partitioned *f, int on);

/* Keys counted as added, over all partitions. */
AMQ_API uint64_t amq_partitioned_items(const amq_partitioned *f);
/* Bytes of the partitions' arrays (the index not included). */
AMQ_API size_t amq_partitioned_bytes(const amq_partitioned *f);
/* 1 for a view over caller or mapped bytes (adds return AMQ_EREADONLY). */
AMQ_API int amq_partitioned_is_readonly(const amq_partitioned *f);

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

/* As amq_blocked_set_simd, for every partition: AMQ_OK, AMQ_EUNSUPPORTED,
 * AMQ_EINVAL. */
AMQ_API int amq_partitioned_set_simd(amq_partitioned *f, uint32_t simd);

/* ==== cuckoo filter: the typed handle, views, the table, the victim ========= */

/* The typed handle (kind AMQ_KIND_CUCKOO through amq_filter_*), with what
 * only a cuckoo table can do: add a key unless present, count copies. */

/*
 * Sizing for n items at false-positive rate p.  fingerprint_bits and
 * bucket_size may be 0 ("choose") or a fixed value (b = 8 is never chosen,
 * only taken on request: it saves little and is slower).  Among the allowed
 * (f, b) - f from 4 to 32 - picks the pair of fewest bits per item, where
 * each pair runs at the highest load <= amq_cuckoo_max_load(b) (lower for
 * f < 8, whose few alternates jam large tables earlier; docs/cuckoo.md)
 * whose amq_cuckoo_fpp_theory is at most 0.95 p (a 5 % margin so that the
 * measured rate meets p): 1 % gets f = 10, b = 4 at 95 % load (10.6 bits
 * per item), 0.1 % f = 13, b = 4 (13.7);
 * nb0 = ceil(n / (b * load)), nb = nb0 + ceil(2 sqrt(nb0)) (spare buckets
 * for small tables, which fill less evenly).  When both f and b are fixed, the load is
 * the design maximum for (f, b) whatever p (fpp then records the rate reached).
 * Fills every field (hash AMQ_HASH_MULMIX seed 0, max_kicks AMQ_CUCKOO_DEFAULT_KICKS).
 * AMQ_ERANGE for n = 0, p outside (0, 1), a bad f or b, or a table over
 * AMQ_CUCKOO_MAX_BUCKETS.  O(1).
 */
AMQ_API int amq_cuckoo_params_for(uint64_t n, double p, uint32_t fingerprint_bits,
                                  uint32_t bucket_size, amq_cuckoo_params *params);

/* Checks params: AMQ_OK, AMQ_ERANGE (f, b, nb or max_kicks), AMQ_EHASH. */
AMQ_API int amq_cuckoo_params_check(const amq_cuckoo_params *params);

/* Creates an empty filter.  alloc may be NULL.  AMQ_ERANGE, AMQ_EHASH,
 * AMQ_ENOMEM.  O(table size) (zeroed memory). */
AMQ_API int amq_cuckoo_new(const amq_cuckoo_params *params, const amq_allocator *alloc,
                           amq_cuckoo **out);

/* A deep, writable copy (also of a view).  AMQ_ENOMEM. */
AMQ_API int amq_cuckoo_clone(const amq_cuckoo *c, const amq_allocator *alloc,
                             amq_cuckoo **out);

/* Releases the filter; NULL is a no-op. */
AMQ_API void amq_cuckoo_free(amq_cuckoo *c);

/* The hash of a key as this filter computes it. */
AMQ_API amq_hash128 amq_cuckoo_hash(const amq_cuckoo *c, const void *key, size_t len);

/*
 * Adds a key (another copy if it is already in).  1 on success;
 * AMQ_EFULL when the filter is full (nothing changed); AMQ_EREADONLY for a
 * view.  O(1) expected, O(max_kicks) worst case.
 */
AMQ_API int amq_cuckoo_add(amq_cuckoo *c, const void *key, size_t len);
AMQ_API int amq_cuckoo_add_hash(amq_cuckoo *c, amq_hash128 h);

/* Adds n keys by their hashes, as n calls of amq_cuckoo_add_hash, with the
 * next keys' buckets prefetched while one is inserted.  added[i] = 1 for
 * each key added (added may be NULL); *count (count may be NULL) the
 * number added.  AMQ_OK, or the first error (AMQ_EFULL: the keys before
 * it were added, none after), AMQ_EREADONLY (nothing added). */
AMQ_API int amq_cuckoo_add_batch(amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                 uint8_t *added, uint64_t *count);

/* Adds a key unless it may already be in: 1 added, 0 may exist (nothing
 * changed), AMQ_EFULL, AMQ_EREADONLY. */
AMQ_API int amq_cuckoo_add_unique(amq_cuckoo *c, const void *key, size_t len);
AMQ_API int amq_cuckoo_add_unique_hash(amq_cuckoo *c, amq_hash128 h);

/* 1 if the key may be in the set, 0 if it certainly is not.  Reads at most
 * two buckets.  O(1). */
AMQ_API int amq_cuckoo_contains(const amq_cuckoo *c, const void *key, size_t len);
AMQ_API int amq_cuckoo_contains_hash(const amq_cuckoo *c, amq_hash128 h);

/* out[i] = contains(h[i]) for n hashes (out may be NULL), *count (may be
 * NULL) the number of 1 answers; computes bucket indexes ahead and
 * prefetches, which pays on tables larger than the caches.  AMQ_OK. */
AMQ_API int amq_cuckoo_contains_batch(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                      uint8_t *out, uint64_t *count);

/* The batched add and query of n packed keys of key_len bytes each (back
 * to back at keys: e.g. an array of 64-bit integers, their bytes as they
 * lie in memory), hashed inside, a chunk at a time: the statuses, added[],
 * out[] and counts of amq_cuckoo_add_batch / _contains_batch on their
 * hashes: add AMQ_OK, AMQ_EFULL (it stops there: the keys before it were
 * added, none after), AMQ_EREADONLY; contains AMQ_OK. */
AMQ_API int amq_cuckoo_add_batch_fixed(amq_cuckoo *c, const void *keys, size_t key_len, size_t n,
                                       uint8_t *added, uint64_t *count);
AMQ_API int amq_cuckoo_contains_batch_fixed(const amq_cuckoo *c, const void *keys,
                                            size_t key_len, size_t n, uint8_t *out,
                                            uint64_t *count);

/*
 * Removes one copy of the key's fingerprint: 1 removed, 0 not found,
 * AMQ_EREADONLY.  If the filter was full, the victim is re-inserted.
 * See the header comment for keys never added.  O(1) expected.
 */
AMQ_API int amq_cuckoo_remove(amq_cuckoo *c, const void *key, size_t len);
AMQ_API int amq_cuckoo_remove_hash(amq_cuckoo *c, amq_hash128 h);

/* Copies of the key's fingerprint in its buckets (and the victim), i.e.
 * how many times it was added, plus colliding keys.  Cannot fail.  O(b). */
AMQ_API uint64_t amq_cuckoo_count(const amq_cuckoo *c, const void *key, size_t len);
AMQ_API uint64_t amq_cuckoo_count_hash(const amq_cuckoo *c, amq_hash128 h);

/* Empties the table and the victim.  AMQ_EREADONLY for a view. */
AMQ_API int amq_cuckoo_clear(amq_cuckoo *c);

/* The filter's parameters. */
AMQ_API void amq_cuckoo_get_params(const amq_cuckoo *c, amq_cuckoo_params *out);
/* Stored fingerprints (victim included). */
AMQ_API uint64_t amq_cuckoo_items(const amq_cuckoo *c);
/* nb * b. */
AMQ_API uint64_t amq_cuckoo_slots(const amq_cuckoo *c);
/* Bytes of the table. */
AMQ_API size_t amq_cuckoo_bytes(const amq_cuckoo *c);
/* items / slots. */
AMQ_API double amq_cuckoo_load(const amq_cuckoo *c);
/* 1 when the victim slot is in use (the next add fails with AMQ_EFULL). */
AMQ_API int amq_cuckoo_is_full(const amq_cuckoo *c);
/* 1 for a view over caller or mapped bytes (changes return
 * AMQ_EREADONLY), else 0. */
AMQ_API int amq_cuckoo_is_readonly(const amq_cuckoo *c);


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

/* ==== scalable Bloom filter (RedisBloom BF): handle, links, RDB, chunks ===== */

/* The typed handle of the RedisBloom BF data type (kind
 * AMQ_KIND_SCALABLE_BLOOM through amq_filter_*); amq_sbloom_info and
 * amq_sbloom_params are in amq/scalable_bloom.h. */

/* Defaults: capacity 100, error 0.01, growth 2, options NOROUND | FORCE64;
 * RedisBloom hashing, or XXH3 seed 0 in native mode. */
AMQ_API void amq_sbloom_params_init(amq_sbloom_params *p, int redisbloom);

/* Creates a filter with its first link.  AMQ_ERANGE (bad capacity, error,
 * growth 0 when scaling, unknown options, RedisBloom mode without
 * FORCE64 | NOROUND), AMQ_ELIMIT, AMQ_EHASH, AMQ_ENOMEM. */
AMQ_API int amq_sbloom_new(const amq_sbloom_params *p, const amq_allocator *alloc,
                           amq_sbloom **out);
/* A deep copy.  AMQ_ENOMEM. */
AMQ_API int amq_sbloom_clone(const amq_sbloom *s, const amq_allocator *alloc,
                             amq_sbloom **out);
/* Releases the filter; NULL is a no-op. */
AMQ_API void amq_sbloom_free(amq_sbloom *s);

/* The hash of a key as this filter computes it. */
AMQ_API amq_hash128 amq_sbloom_hash(const amq_sbloom *s, const void *key, size_t len);

/* BF.ADD: 1 added (a bit changed), 0 may already exist, AMQ_EFULL,
 * AMQ_ELIMIT, AMQ_ENOMEM (nothing changed on error).  O(links * k). */
AMQ_API int amq_sbloom_add(amq_sbloom *s, const void *key, size_t len);
AMQ_API int amq_sbloom_add_hash(amq_sbloom *s, amq_hash128 h);
/* BF.EXISTS: 1 may exist, 0 certainly not.  O(links * k). */
AMQ_API int amq_sbloom_contains(const amq_sbloom *s, const void *key, size_t len);
AMQ_API int amq_sbloom_contains_hash(const amq_sbloom *s, amq_hash128 h);

/* Fills out with the numbers of amq_sbloom_info (BF.INFO, BF.DEBUG, BF.CARD);
 * and the parameters it was made with. */
AMQ_API void amq_sbloom_get_info(const amq_sbloom *s, amq_sbloom_info *out);
AMQ_API void amq_sbloom_get_params(const amq_sbloom *s, amq_sbloom_params *out);


/* Link i (0 = oldest) and its bit array (info.bytes bytes).
 * AMQ_ERANGE for i >= links. */
AMQ_API int amq_sbloom_link(const amq_sbloom *s, uint32_t i, amq_sbloom_link_info *out,
                            const uint8_t **data);
/* Its writable bit array: how an RDB loader fills a filter built by
 * amq_sbloom_from_header.  AMQ_OK, AMQ_ERANGE for i >= links. */
AMQ_API int amq_sbloom_link_data_mut(amq_sbloom *s, uint32_t i, uint8_t **data, size_t *len);

/* ---- construction from raw fields (RDB load, LOADCHUNK header) --------------- */

typedef struct amq_sbloom_header {
    uint64_t items;     /* the sum of the links' items (the dump's "size") */
    uint32_t links;     /* the dump's "nfilters" */
    uint32_t options;
    uint32_t expansion; /* the dump's "growth" */
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
AMQ_API int amq_sbloom_from_header(const amq_sbloom_header *h, const amq_sbloom_link_info *links,
                                const amq_allocator *alloc, amq_sbloom **out);
/*
 * The RedisBloom form of a classic Bloom filter (amq export --to redis): a
 * one-link, non-scaling BF whose bit array is a copy of b's, answering every
 * query as b does.  Possible when b hashes and probes as RedisBloom does
 * (AMQ_HASH_REDISBLOOM, AMQ_BLOOM_PROBE_REDISBLOOM) with a multiple of 64
 * bits and k <= 255: amq_sbloom_from_bloom_ok says so (1 or 0), and
 * amq_sbloom_from_bloom returns AMQ_EINCOMPAT otherwise.  The link's entries
 * are b's capacity (or its items when more), its error rate b's target (or
 * the rate its geometry gives).  AMQ_ENOMEM, AMQ_ECORRUPT (a geometry the
 * RedisBloom header cannot hold).
 */
AMQ_API int amq_sbloom_from_bloom_ok(const amq_bloom *b);
AMQ_API int amq_sbloom_from_bloom(const amq_bloom *b, const amq_allocator *alloc,
                                  amq_sbloom **out);
/*
 * amq_sbloom_from_header whose links adopt arrays[i] (links[i].bytes bytes
 * each, taken from alloc, any alignment) instead of new zeroed arrays: a
 * host that has read the bit arrays (a Redis RDB load) hands them over
 * rather than holding every link twice.  Every array is taken whatever
 * the outcome: owned by the filter on AMQ_OK, freed through alloc on an
 * error.  Errors as amq_sbloom_from_header.
 */
AMQ_API int amq_sbloom_from_header_owning(const amq_sbloom_header *h,
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
AMQ_API size_t amq_sbloom_header_serialized_size(const amq_sbloom *s);
/* Writes it.  AMQ_EINVAL for cap too small, AMQ_EUNSUPPORTED (native). */
AMQ_API int amq_sbloom_header_serialize(const amq_sbloom *s, uint8_t *buf, size_t cap);
/* LOADCHUNK 1: parses a header chunk (len must be exactly 20 + 53 n) and
 * builds the zeroed filter by amq_sbloom_from_header.  AMQ_ETRUNC,
 * AMQ_ECORRUPT, AMQ_EUNSUPPORTED, AMQ_ENOMEM. */
AMQ_API int amq_sbloom_header_deserialize(const uint8_t *buf, size_t len, const amq_allocator *alloc,
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
AMQ_API int amq_sbloom_link_info_for(uint64_t entries, double error, uint32_t options,
                                   amq_sbloom_link_info *out);


/* ==== scalable cuckoo filter (RedisBloom CF): handle, links, RDB, chunks */

/* The typed handle of the RedisBloom CF data type (kind
 * AMQ_KIND_SCALABLE_CUCKOO through amq_filter_*), with CF.ADDNX, CF.COUNT
 * and CF.COMPACT; amq_scuckoo_info and amq_scuckoo_params are in
 * amq/scalable_cuckoo.h. */

/* RedisBloom's defaults: capacity 1024, bucket size 2, max iterations 20,
 * expansion 1, 32 links, 8-bit fingerprints, MurmurHash64A seed 0.
 * With redisbloom = 0: the same chain with 16-bit fingerprints, bucket size
 * 4, max iterations 500, expansion 2 and XXH3 seed 0. */
AMQ_API void amq_scuckoo_params_init(amq_scuckoo_params *p, int redisbloom);

/* Creates a filter with one empty link.  AMQ_ERANGE for a parameter
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
 * changed).  O(links + max_iterations). */
AMQ_API int amq_scuckoo_add(amq_scuckoo *c, const void *key, size_t len);
AMQ_API int amq_scuckoo_add_hash(amq_scuckoo *c, amq_hash128 h);
/* CF.ADDNX: 1 added, 0 may already exist, or the errors of add:
 * AMQ_EFULL, AMQ_ELIMIT, AMQ_ENOMEM (nothing changed). */
AMQ_API int amq_scuckoo_add_unique(amq_scuckoo *c, const void *key, size_t len);
AMQ_API int amq_scuckoo_add_unique_hash(amq_scuckoo *c, amq_hash128 h);
/* CF.EXISTS: 1 may exist, 0 certainly not.  O(links). */
AMQ_API int amq_scuckoo_contains(const amq_scuckoo *c, const void *key, size_t len);
AMQ_API int amq_scuckoo_contains_hash(const amq_scuckoo *c, amq_hash128 h);
/* CF.COUNT: copies of the fingerprint in the key's two buckets of every
 * link.  In RedisBloom mode a bucket that is both i1 and i2 is counted
 * twice, as RedisBloom does; native mode counts it once.  Cannot fail. */
AMQ_API uint64_t amq_scuckoo_count(const amq_scuckoo *c, const void *key, size_t len);
AMQ_API uint64_t amq_scuckoo_count_hash(const amq_scuckoo *c, amq_hash128 h);
/*
 * CF.DEL: removes one copy (newest link first, bucket i1 before i2):
 * 1 removed, 0 not found; cannot fail (no status).  Counts the delete; with more than one
 * link and deletes > 10 % of the items, compacts (cont = 0).
 * Removing a key never added is undefined (amq/cuckoo.h).
 */
AMQ_API int amq_scuckoo_remove(amq_scuckoo *c, const void *key, size_t len);
AMQ_API int amq_scuckoo_remove_hash(amq_scuckoo *c, amq_hash128 h);
/*
 * Compaction: for each link from the newest to the second, moves
 * every fingerprint to the oldest link with a free slot in its
 * buckets; frees the newest link when it empties.  cont = 1
 * (CF.COMPACT) goes on after a link that cannot be emptied; cont = 0
 * (after deletes) stops there.  Resets the delete count.
 *
 * Bounded work: one call visits at most AMQ_SCUCKOO_COMPACT_WORK slots
 * (weighted by the earlier links each visit may scan), plus at most one
 * link read whole in the search for room and one bucket, then stops where
 * it is - every fingerprint stays findable - so that a host serving
 * requests (the Redis module) is never blocked for long by a long chain or
 * a big link.  The next call goes on from that link and bucket (a pass over
 * the chain spread over calls; an add that grows the chain, or data written
 * from outside, starts a new pass), and the search for room remembers
 * where the oldest links with no empty slot end (a delete there moves it
 * back), so a chain full up to deep links is passed over once, across
 * calls; once nothing below a link has room, the pass ends.  A
 * chain of one bucket count (expansion 1) of 16 links or more, of at most
 * 2^22 buckets a link, is walked in time linear in its size (scratch
 * memory of 3 bytes per bucket of a link, from the filter's allocator, set
 * up by each call; without it the same result, slower).
 */
#define AMQ_SCUCKOO_COMPACT_WORK (UINT64_C(1) << 19)
AMQ_API void amq_scuckoo_compact(amq_scuckoo *c, int cont);

/* Fills out with the numbers of amq_scuckoo_info (CF.INFO, CF.DEBUG); and
 * the parameters it was made with. */
AMQ_API void amq_scuckoo_get_info(const amq_scuckoo *c, amq_scuckoo_info *out);
AMQ_API void amq_scuckoo_get_params(const amq_scuckoo *c, amq_scuckoo_params *out);


/* Link i (0 = oldest): its bucket count and its array (bytes: nb *
 * bucket_size in RedisBloom mode; packed f-bit slots otherwise).
 * AMQ_ERANGE for i >= num_filters. */
AMQ_API int amq_scuckoo_link(const amq_scuckoo *c, uint32_t i, uint64_t *buckets,
                                  const uint8_t **data, size_t *bytes);
/* The same, writable: how an RDB loader fills a filter built by
 * amq_scuckoo_from_header.  Any bytes are valid fingerprints; call
 * amq_scuckoo_check afterwards to check the item count.  AMQ_OK,
 * AMQ_ERANGE for i >= num_filters. */
AMQ_API int amq_scuckoo_link_data_mut(amq_scuckoo *c, uint32_t i, uint8_t **data,
                                      size_t *bytes);

/* ---- construction from raw fields (RDB load, LOADCHUNK header) ------------- */

typedef struct amq_scuckoo_header {
    uint64_t num_items;
    uint64_t num_buckets;  /* first link */
    uint64_t num_deletes;
    uint64_t links;        /* the dump's numFilters */
    uint32_t bucket_size;
    uint32_t max_kicks;    /* the dump's maxIterations */
    uint32_t expansion;
} amq_scuckoo_header;

/*
 * A RedisBloom-mode filter with zeroed links from raw fields.
 * sub_buckets, when not NULL, holds each link's bucket count as
 * stored (RDB encoding 4) and must equal num_buckets * expansion^j.
 * Validates everything before allocating: num_filters in [1,
 * AMQ_SCUCKOO_MAX_LINKS] (1 when expansion is 0), num_buckets a power of
 * two, bucket_size, max_iterations and expansion (<= 32768; rounded up to a
 * power of two as at creation) in range, every link within AMQ_SCUCKOO_MAX_SLOTS, num_items at most
 * the total slots.  max_filters becomes max(32, num_filters).
 * AMQ_ECORRUPT for bad fields, AMQ_ENOMEM.
 */
AMQ_API int amq_scuckoo_from_header(const amq_scuckoo_header *h, const uint64_t *sub_buckets,
                                    const amq_allocator *alloc, amq_scuckoo **out);
/*
 * amq_scuckoo_from_header whose links adopt tables[j] (table_bytes[j]
 * bytes each - the link's buckets times the bucket size - taken from
 * alloc, any alignment; h->num_filters entries) instead of new zeroed ones:
 * a host that has read the tables (a Redis RDB load) hands them over rather
 * than holding the chain twice.  Every table is taken whatever the outcome:
 * owned by the filter on AMQ_OK, freed through alloc on an error.
 * AMQ_ECORRUPT also when a table's size is not its link's.
 */
AMQ_API int amq_scuckoo_from_header_owning(const amq_scuckoo_header *h, void **tables,
                                           const size_t *table_bytes,
                                           const amq_allocator *alloc, amq_scuckoo **out);

/*
 * The chain a header describes, before it is built (a host's memory guard
 * and its RDB reader ask first): header_buckets is link j's bucket
 * count, num_buckets * expansion^j with the expansion rounded up to a power
 * of two as amq_scuckoo_from_header builds it (0 when j is past the chain or
 * the count passes 64 bits); header_bytes the whole chain's bytes at one
 * byte per slot, saturating at UINT64_MAX / 2.  Neither validates the
 * header: amq_scuckoo_from_header does.
 */
AMQ_API uint64_t amq_scuckoo_header_buckets(const amq_scuckoo_header *h, uint64_t j);
AMQ_API uint64_t amq_scuckoo_header_bytes(const amq_scuckoo_header *h);

/*
 * RedisBloom's link limit (CF maxExpansions), checked once when an
 * adding command starts: 1 when c has max_filters links or more (the
 * command is refused, even for an item c holds), else 0 - a filter below
 * the limit may grow past it within the command.  A host that applies this
 * rule lifts the filter's own per-add limit (amq_scuckoo_set_max_links to
 * AMQ_SCUCKOO_MAX_LINKS); it cannot fail.
 */
AMQ_API int amq_scuckoo_at_limit(const amq_scuckoo *c, uint64_t max_filters);

/* Checks that the item count equals the fingerprints stored: AMQ_OK or
 * AMQ_ECORRUPT.  O(slots). */
AMQ_API int amq_scuckoo_check(const amq_scuckoo *c);

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
 * Data chunks: the link arrays concatenated; iterator it >= 1 answers
 * the bytes from offset it - 1 to the end of the link holding it, at
 * most max_chunk of them, with next iterator it + len; past the end, len 0
 * and next 0 (RedisBloom answers [0, nil]).  LOADCHUNK it data writes data
 * at offset it - len - 1, inside one link.
 * amq, unlike RedisBloom, also dumps an empty filter.  Native-mode filters
 * have no such form (AMQ_EUNSUPPORTED).
 */
#define AMQ_SCUCKOO_HEADER_SIZE 38
#define AMQ_SCUCKOO_MAX_CHUNK ((size_t)16 << 20)

/* Writes the header chunk (AMQ_SCUCKOO_HEADER_SIZE bytes).  AMQ_EINVAL for
 * cap too small, AMQ_EUNSUPPORTED in native mode. */
AMQ_API int amq_scuckoo_header_serialize(const amq_scuckoo *c, uint8_t *buf, size_t cap);
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
/* The link i holding byte off of the concatenated arrays (a data
 * chunk's offset) and the offset within it; AMQ_ERANGE past the end.  O(1)
 * in the number of links (a chain growing by 1 is uniform; a growing
 * one has at most 64 links of differing sizes to walk). */
AMQ_API int amq_scuckoo_locate(const amq_scuckoo *c, uint64_t off, uint32_t *i,
                               uint64_t *within);
/* LOADCHUNK of a data chunk ending at byte it - 1 (RedisBloom's rule, the
 * one the Redis module and the tool's import apply): a chunk past the end of
 * the chain lands in the last link at its offset less the chain's
 * size.  AMQ_ERANGE when it <= len, len is 0 or the chunk starts past the
 * end of the last link too, AMQ_EOVERFLOW when it runs past the end of
 * its link.  Nothing is written on error. */
AMQ_API int amq_scuckoo_chunk_apply(amq_scuckoo *c, uint64_t it, const uint8_t *buf,
                                    size_t len);

/* Changes the link limit (a module setting): AMQ_OK, AMQ_ERANGE for
 * 0. */
AMQ_API int amq_scuckoo_set_max_links(amq_scuckoo *c, uint32_t max_filters);


/* ==== the generic handle and the scalable kinds' handles =================== */

/* The scalable kinds' own handles (amq/scalable_bloom.h, amq/scalable_cuckoo.h: RedisBloom's
 * SCANDUMP / LOADCHUNK chunks), or NULL for another kind.  Owned by f. */
AMQ_API struct amq_sbloom *amq_filter_sbloom(amq_filter *f);
AMQ_API struct amq_scuckoo *amq_filter_scuckoo(amq_filter *f);

/* Wrap a scalable filter (e.g. assembled from LOADCHUNK chunks; ownership passes to the new
 * handle, also on failure).  AMQ_OK, AMQ_ENOMEM. */
AMQ_API int amq_filter_from_sbloom(struct amq_sbloom *s, amq_filter **out);
AMQ_API int amq_filter_from_scuckoo(struct amq_scuckoo *c, amq_filter **out);


/* ==== the generic handle: kind predicates, counts, set adds ================= */

/* What a kind does, for a program that must not list kinds itself:
 *  - keeps_copies: an add of a key already in stores another copy (cuckoo,
 *    scalable cuckoo: CF.ADD; expandable, up to 32 copies of a key; quotient,
 *    one more once a growth has shortened the key's entry: its add does not
 *    look first, so that it costs no wait for memory), so a set add asks
 *    first (amq_filter_add_unique);
 *  - can_remove: amq_filter_remove works (cuckoo kinds, expandable);
 *  - updates_in_place: an add only sets bits, so a file of it can take adds
 *    in place (amq/inplace.h: bloom, blocked);
 *  - has_redisbloom_mode: amq_config.redisbloom applies (scalable bloom,
 *    scalable cuckoo);
 *  - is_bit_array: a filter is one Bloom bit array geometry (m bits, k probes
 *    a key; adds only set bits, nothing clears one), so a filter whose bits
 *    are a subset of another's of the same geometry holds no key it lacks,
 *    and its items can be estimated from its bits set (bloom, blocked,
 *    partitioned);
 *  - puts_off_growth: an add that finds no memory for the growth its key
 *    brings keeps the key and puts the growth off (pocket), where the other
 *    kinds refuse such an add with nothing changed; a program whose copies
 *    take the same adds with more memory (a replica, a log replayed) must
 *    let such an add have its memory or refuse it before it starts.
 * 1 or 0; 0 for an unknown kind (cannot fail).  Thread-safe. */
AMQ_API int amq_kind_keeps_copies(uint32_t kind);
AMQ_API int amq_kind_can_remove(uint32_t kind);
AMQ_API int amq_kind_updates_in_place(uint32_t kind);
AMQ_API int amq_kind_has_redisbloom_mode(uint32_t kind);
AMQ_API int amq_kind_is_bit_array(uint32_t kind);
AMQ_API int amq_kind_puts_off_growth(uint32_t kind);

/* The library's hash names in id order, ", "-joined ("xxh3, murmur3, ..."), the one list the
 * tool's and Python's errors print: as much as fits in cap bytes, NUL-terminated when cap > 0;
 * returns the whole list's length (without the NUL), as snprintf does.  Thread-safe. */
AMQ_API size_t amq_hash_algo_names(char *out, size_t cap);

/* The kinds that read the creation option name (amq_config's field names -
 * "bits_per_key", "bits", "hashes" (k), "fingerprint_bits", "bucket_size",
 * "max_kicks", "expansion", "nonscaling", "redisbloom", "partitions", "arity",
 * "window_ms", "rate" - and "guava"), space-separated with a space at each
 * end (" cuckoo scalable-cuckoo fuse "); NULL for an option every kind reads
 * (capacity, fpp, hash, seed) or one not listed.  The library ignores a field
 * a kind does not read; the tool, Python and the Redis module refuse it with
 * this one table.  Thread-safe. */
AMQ_API const char *amq_option_kinds(const char *name);
/* 1 if kind reads option name (or every kind does), else 0 (cannot fail). */
AMQ_API int amq_option_applies(const char *name, uint32_t kind);

/* Whether two filters hold the same: the same kind, parameters, hash, seed
 * and arrays, whatever their item counts or the order of their adds (the
 * Python binding's ==).  1 or 0; AMQ_ENOMEM, AMQ_EOVERFLOW (a filter too large
 * to copy here).  O(size): it serializes both, each into memory from its own
 * allocator.  A reader of both. */
AMQ_API int amq_filter_equal(const amq_filter *a, const amq_filter *b);

/* Whether a's bits are a subset of b's, for two filters of one bit-array
 * kind (amq_kind_is_bit_array) of the same geometry, hash and seed: then b
 * answers "may be present" for every key a does.  1 or 0; AMQ_EUNSUPPORTED
 * (a is of another kind), AMQ_EINCOMPAT (kinds, geometries, hashes or seeds
 * differ), AMQ_ENOMEM, AMQ_EOVERFLOW; err says which.  O(size): it
 * serializes both, each into memory from its own allocator.  A reader of
 * both. */
AMQ_API int amq_filter_is_subset(const amq_filter *a, const amq_filter *b, amq_errinfo *err);

/* The item count and the capacity, as amq_filter_stats gives them (for a kind
 * that grows, where its next growth starts), without reading a bit array
 * (amq_filter_stats counts the Bloom kinds' bits set): what a file's header
 * records, and what `amq query --trust` may read.  O(1) but for partitioned
 * (O(partitions)).  A reader. */
AMQ_API void amq_filter_counts(const amq_filter *f, uint64_t *items, uint64_t *capacity);

/* The work a growing kind spreads over its adds, done now: the quotient
 * kind's growth under way, or the expandable kind's doubling, finished, so
 * that the filter holds one table (until then memory holds both, about
 * twice the bits a key, and a quotient filter saved then writes both: its
 * file's queries read either).  Nothing to do for the other kinds.
 * AMQ_OK; AMQ_EREADONLY; or AMQ_ENOMEM, AMQ_ELIMIT, AMQ_EFULL with the
 * growth stopped where it got to, every key in the filter still answering
 * present.  The rest of one growth's rewrite (more only when keys crowded
 * into a few slots make it grow again, as an add's would).  A writer (as
 * amq_filter_add). */
AMQ_API int amq_filter_settle(amq_filter *f);

/* A set add: a kind that keeps copies adds the key only when the filter
 * answers absent for it (CF.ADDNX; a false positive is then not stored, and
 * removing the key it collided with makes it answer absent); any other
 * kind adds as amq_filter_add does.  1 added (new to the filter), 0 not
 * (already present), or AMQ_EREADONLY, AMQ_EFULL, AMQ_ELIMIT, AMQ_ENOMEM. */
AMQ_API int amq_filter_add_unique(amq_filter *f, const void *key, size_t len);
AMQ_API int amq_filter_add_unique_hash(amq_filter *f, amq_hash128 h);

/* Why an add was refused with AMQ_EFULL, from the filter's state
 * (amq_filter_refusal).  Values pinned. */
typedef enum amq_refusal {
    AMQ_REFUSAL_FULL = 0,       /* no room: the table is full, or other keys crowd the
                                   places the key may take */
    AMQ_REFUSAL_COPIES = 1,     /* the key's own copies fill every place it may take */
    AMQ_REFUSAL_OTHER_COPIES = 2 /* the cuckoo kind only: its spare (victim) slot holds the
                                    2b + 1th copy of another key, whose copies fill both its
                                    buckets; no add fits until a removal */
} amq_refusal;

/* Why an add of the key is refused with AMQ_EFULL, read from the filter
 * as it is (call it after the refusal, nothing changed in between): an
 * amq_refusal in *why.  By kind:
 *  - cuckoo: AMQ_REFUSAL_COPIES when the key's two buckets hold only its
 *    fingerprint and the victim slot its 2b + 1th copy (b the bucket
 *    size); AMQ_REFUSAL_OTHER_COPIES when the victim slot so holds another
 *    key's; else AMQ_REFUSAL_FULL (the victim is a fingerprint a crowded
 *    table had no place for);
 *  - scalable cuckoo: AMQ_REFUSAL_COPIES when the key's two buckets of the
 *    newest link hold only its fingerprint (the chain grows for no key's
 *    copies), else AMQ_REFUSAL_FULL (a non-scaling filter with no room);
 *  - expandable: AMQ_REFUSAL_COPIES when 32 entries answer the key, else
 *    AMQ_REFUSAL_FULL (its bucket is full with 256 stashed entries: keys
 *    crowded by a weak hash or chosen against the seed);
 *  - every other kind refuses for no key's copies: AMQ_REFUSAL_FULL (a
 *    full non-scaling scalable Bloom filter, a quotient filter's keys
 *    crowded over a few slots).
 * A key's copies are the entries that answer it: keys that share its
 * fingerprint and buckets count as its copies.  AMQ_OK (cannot fail: a
 * status for a kind that may need to count).  O(b) for the cuckoo kinds,
 * the key's bucket and stash cells for the expandable kind.  A reader. */
AMQ_API int amq_filter_refusal(const amq_filter *f, const void *key, size_t len, uint32_t *why);
AMQ_API int amq_filter_refusal_hash(const amq_filter *f, amq_hash128 h, uint32_t *why);

/* ==== the generic handle's bytes, piece by piece ============================ */

/*
 * Bytes [off, off + cap) of the serialized form (amq_filter_serialize), into
 * buf: *written is cap, or less at the end (0 at off == the size).  For a host
 * that moves a filter in chunks (the Redis module's RDB, AOF and SCANDUMP)
 * without a second copy of it: a range within the payload costs a copy of
 * its bytes; a range that reaches into the header also reads the whole
 * payload once, for its checksum.  AMQ_ERANGE when off is past the end.
 * The pieces fit together only if no add changes the filter between the
 * calls (nor, for a partitioned filter, during one: in concurrent mode its
 * whole saves write a copy and sum that; a range cannot).
 */
AMQ_API int amq_filter_serialize_range(const amq_filter *f, uint64_t off, void *buf,
                                       size_t cap, size_t *written);

/*
 * The header of serialized bytes from their first len bytes, before the
 * rest is there: AMQ_OK with *size (the whole serialized size) and *kind
 * (may be NULL) when the header area is complete and valid (magic, version,
 * header checksum, fields, a kind and hash this library knows).  AMQ_ETRUNC
 * with *size the header area's length when len is short of it; AMQ_EMAGIC,
 * AMQ_EVERSION, AMQ_ECHECKSUM, AMQ_ECORRUPT, AMQ_EKIND otherwise, with
 * err->msg.  The payload is not checked (amq_filter_deserialize does).
 */
AMQ_API int amq_filter_peek(const void *buf, size_t len, size_t *size, uint32_t *kind,
                            amq_errinfo *err);

/* ==== any kind, and the static kinds (fuse, ribbon): queries of packed keys = */

/*
 * Queries n keys of key_len bytes each, packed at keys (key i at
 * keys + i * key_len), of a filter of any kind: the answers are
 * amq_filter_contains's.  Kinds that keep reads in flight (blocked, cuckoo,
 * fuse, ribbon, expandable) hash the keys inside their query loop, XXH3 of
 * 8-byte keys inline, so no array of hashes is made; the others are given
 * a chunk of hashes at a time.  out[i] (when out is not NULL) receives 1 or
 * 0, *count (when not NULL) the number of 1 answers.  AMQ_OK.  Safe
 * concurrently with other readers.
 */
AMQ_API int amq_filter_contains_batch_fixed(const struct amq_filter *f, const void *keys,
                                            size_t key_len, size_t n, uint8_t *out,
                                            uint64_t *count);

/*
 * Queries n keys of key_len bytes each, packed at keys (key i at
 * keys + i * key_len), of a static filter (fuse or ribbon) through its
 * handle: amq_filter_contains_batch_fixed, and AMQ_EKIND for a filter of
 * another kind.
 */
AMQ_API int amq_static_contains_batch_fixed(const struct amq_filter *f, const void *keys,
                                            size_t key_len, size_t n, uint8_t *out,
                                            uint64_t *count);

/*
 * Adds n keys of key_len bytes each, packed at keys (key i at
 * keys + i * key_len), to a builder (amq/static.h) of any kind: what n
 * calls of amq_builder_add do, in the same order - the built filter's
 * bytes and item count are the same - hashed in one loop straight into the
 * builder's storage (XXH3 over 8- and 16-byte keys, mulshift over 8 and
 * vmulshift over 8 and 16 inlined), and a static builder's held array
 * grown once for the batch.
 * AMQ_EINVAL, nothing added, for a NULL b, NULL keys or key_len 0 with
 * n > 0 (n empty keys are n amq_builder_add(b, "", 0)), n * key_len past
 * SIZE_MAX, or after amq_builder_finish; otherwise n = 0 adds nothing
 * (AMQ_OK, keys and key_len unread).
 * Otherwise amq_builder_add's statuses; on an error the keys before the
 * one that failed are in (amq_builder_count).  One thread at a time per
 * builder.  O(n).
 */
AMQ_API int amq_builder_add_batch_fixed(amq_builder *b, const void *keys, size_t key_len, size_t n);

/* ==== aging filter: raw state ============================================== */

/*
 * Raw state, for hosts that persist filters in their own framing (the Redis
 * module's RDB and AOF): the 96-byte parameter block of docs/file-format.md
 * (geometry and generation state) and the payload, which import then fills.
 *  - export: copies the parameter block to params and points *payload at
 *    the filter's words (valid until the next write to f);
 *  - import: a new, empty filter from a parameter block (validated as a
 *    file's: AMQ_ECORRUPT, AMQ_EVERSION) and the hash algorithm and seed;
 *  - payload: the writable words of a filter (AMQ_EREADONLY for a read-only
 *    one), *len bytes, little-endian, to be filled after import.
 * AMQ_EKIND for another kind; AMQ_EUNSUPPORTED on a big-endian host.
 */
#define AMQ_AGING_PARAMS_SIZE 96
AMQ_API int amq_aging_serialize_raw(const struct amq_filter *f, uint8_t params[AMQ_AGING_PARAMS_SIZE],
                             const uint8_t **payload, size_t *len);
AMQ_API int amq_aging_deserialize_raw(const uint8_t *params, size_t params_len, uint32_t hash_algo,
                             uint64_t seed, const amq_allocator *alloc, struct amq_filter **out,
                             amq_errinfo *err);
AMQ_API int amq_aging_data_mut(struct amq_filter *f, uint8_t **data, size_t *len);

/* The payload bytes a parameter block declares (blocks * (k + l) * 8), read
 * before the block is validated, for a host's memory guard: AMQ_ECORRUPT
 * when params_len is not AMQ_AGING_PARAMS_SIZE, AMQ_EOVERFLOW when the
 * product passes 64 bits; *bytes is UINT64_MAX on either. */
AMQ_API int amq_aging_params_bytes(const uint8_t *params, size_t params_len, uint64_t *bytes);

/* The header of AF.SCANDUMP / AF.LOADCHUNK (iterator 0): the parameter block,
 * then the hash algorithm (u32) and seed (u64), little-endian.  export_header
 * is amq_aging_serialize_raw plus those two; import_header is amq_aging_deserialize_raw of
 * such a header (AMQ_ECORRUPT when len is not AMQ_AGING_HEADER_SIZE). */
#define AMQ_AGING_HEADER_SIZE (AMQ_AGING_PARAMS_SIZE + 12)
AMQ_API int amq_aging_export_header(const struct amq_filter *f,
                                    uint8_t hdr[AMQ_AGING_HEADER_SIZE],
                                    const uint8_t **payload, size_t *len);
AMQ_API int amq_aging_import_header(const uint8_t *hdr, size_t len, const amq_allocator *alloc,
                                    struct amq_filter **out, amq_errinfo *err);

/* ==== files written safely: the one writer of amq_filter_save and the tool == */

/*
 * A file about to be written whole (amq_filter_save is open + save_filter +
 * close).  The rules, the same for every writer of amq files:
 *  - a symlink is followed: the file it names is replaced (or created, for
 *    a dangling link) and the link stays;
 *  - an existing regular file is replaced only if it is what the flags
 *    allow (by default an amq filter; AMQ_EEXIST "not an amq filter"
 *    otherwise; AMQ_EIO "cannot read it" when its head cannot be read),
 *    is writable (AMQ_EIO, sys_errno EACCES: "read-only", even for root)
 *    and has no other hard link (AMQ_EIO, EMLINK: "hard links");
 *    its mode and owner are given to the new file (or the save fails);
 *  - it is locked (flock, exclusive) from open until close, so that two
 *    writers of one file serialize (the name is checked again once locked:
 *    a writer that waited on a file since replaced locks the new one);
 *  - the new contents go to a temporary file "DIR/.NAME.XXXXXX.amqtmp"
 *    beside it, registered for amq_temp_remove_all, fsync'd and renamed
 *    over the name (a new name: renameat2 RENAME_NOREPLACE, so a file that
 *    appeared meanwhile is not replaced unseen; link and unlink where the
 *    file system lacks it), then the directory is
 *    fsync'd.  A crash leaves the old file or the new one; any failure
 *    leaves the old one and removes the temporary file;
 *  - an existing device or pipe (/dev/null, /dev/stdout) and, with
 *    AMQ_TARGET_STDOUT, the path "-" are written straight, with no
 *    temporary file.
 * Every function reports a failure in err (may be NULL) with the path as
 * given; the statuses are AMQ_EIO (with sys_errno), AMQ_ENOSPC, AMQ_ENOMEM,
 * AMQ_EEXIST, AMQ_EINVAL (a path too long or naming a directory).
 * One target is used by one thread at a time.
 */
typedef struct amq_target amq_target;

#define AMQ_TARGET_EXCL 1u   /* AMQ_EEXIST if path exists (AMQ_SAVE_EXCL) */
#define AMQ_TARGET_UPDATE 2u /* path must be an existing amq filter (read, then replaced) */
#define AMQ_TARGET_TEXT 4u   /* the contents are text: any regular file but an amq filter
                                may be replaced ("is an amq filter" otherwise) */
#define AMQ_TARGET_BINARY 8u /* an amq filter or any file that is not text (a NUL byte in
                                its first 4 KiB) may be replaced */
#define AMQ_TARGET_STDOUT 16u /* "-" is standard output */
#define AMQ_TARGET_NOWAIT 32u /* a file another writer holds: AMQ_EIO with sys_errno
                                 EWOULDBLOCK instead of waiting for it */

/* Opens the target: follows the links, locks and checks an existing file.
 * *out is freed by amq_target_close.  AMQ_OK, AMQ_EIO (with sys_errno; a
 * read-only, hard-linked or locked file), AMQ_EEXIST (a file the flags do
 * not let it replace), AMQ_EINVAL (a path too long or naming a directory),
 * AMQ_ENOMEM. */
AMQ_API int amq_target_open(const char *path, unsigned flags, amq_target **out,
                            amq_errinfo *err);
/* The file written, symlinks followed ("-" for standard output): the file a
 * read-modify-write reads, under the target's lock. */
AMQ_API const char *amq_target_path(const amq_target *t);
/* 1 if the path named a file when opened, else 0 (cannot fail). */
AMQ_API int amq_target_exists(const amq_target *t);
/* Creates the temporary file (or opens the direct output) and returns its
 * descriptor in *fd (owned by t: write to it, never close it).  A second
 * call returns the same descriptor.  AMQ_OK, AMQ_EIO (with sys_errno),
 * AMQ_ENOSPC, AMQ_EINVAL (no target). */
AMQ_API int amq_target_begin(amq_target *t, int *fd, amq_errinfo *err);
/* Appends len bytes (begins if needed; retries short writes and EINTR).
 * AMQ_OK, AMQ_EIO (with sys_errno), AMQ_ENOSPC, AMQ_EINVAL (no target). */
AMQ_API int amq_target_write(amq_target *t, const void *data, size_t len, amq_errinfo *err);
/* Makes the written bytes the file: fsync, rename into place, fsync of the
 * directory (a direct output is only closed).  On failure nothing changed
 * and the temporary file is removed.  AMQ_OK, AMQ_EIO (with sys_errno),
 * AMQ_ENOSPC, AMQ_EEXIST (a new name taken meanwhile by another file). */
AMQ_API int amq_target_commit(amq_target *t, amq_errinfo *err);
/* Writes f as the new contents (streamed, as amq_filter_save: about 64 KiB
 * of scratch from f's allocator) and commits.  AMQ_OK, the statuses of
 * amq_target_begin and amq_target_commit, AMQ_ENOMEM, AMQ_EINVAL (no target
 * or no filter), or a status of amq_filter_serialize. */
AMQ_API int amq_target_save_filter(amq_target *t, const struct amq_filter *f,
                                   amq_errinfo *err);
/* Drops what was written (removes the temporary file); the lock stays. */
AMQ_API void amq_target_abort(amq_target *t);
/* Aborts what is not committed, unlocks, frees.  NULL is a no-op. */
AMQ_API void amq_target_close(amq_target *t);

/*
 * The registry of temporary files a fatal signal must not leave behind:
 * every target's temporary file is in it from before it exists until it
 * is renamed or removed.  amq_temp_remove_all is async-signal-safe: a
 * program's handler of SIGINT, SIGTERM... calls it, then dies of the
 * signal (a save still running would then fail: its file is gone).
 * amq_temp_register adds a temporary file of the program's own (the slot,
 * or -1 when the 32 slots are taken or the path is too long: the file is
 * then not removed on a signal); amq_temp_unregister(-1) is a no-op.
 * It cannot fail (-1 is the answer "not registered").  Thread-safe.
 */
AMQ_API int amq_temp_register(const char *path);
AMQ_API void amq_temp_unregister(int slot);
AMQ_API void amq_temp_remove_all(void);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_ADVANCED_H */
