/*
 * amq/blocked_bloom.h - the cache-local ("blocked") Bloom filter.
 *
 * The bit array is cut into 512-bit blocks, one 64-byte cache line each,
 * 64-byte aligned.  A key touches exactly one block: all k probes of a key
 * fall inside it, so a query costs one memory access however large the
 * filter is.  From the key's amq_hash128 (hashed once, by the algorithm and
 * seed the filter records):
 *
 *   block     = (h1 * blocks) >> 64               (multiply-shift, 128-bit)
 *   u         = the low 32 bits of h2
 *   probe i   = (u * C[i] mod 2^32) >> 23          (a bit in [0, 512)),
 *               i = 0 .. k-1, C[] sixteen fixed odd constants
 *               (listed in docs/file-format.md)
 *
 * Bit b of a block is bit (b & 7) of the block's byte b >> 3: the same bytes
 * as eight little-endian 64-bit words, on every host.
 *
 * The price of locality is a higher false-positive rate than a classic
 * filter of the same size (blocks fill unevenly); amq_blocked_fpp_theory
 * computes it exactly for the layout (a Poisson mixture over block loads)
 * and the sizing functions use it, so a filter sized for (n, p) meets p.
 *
 * Queries have a portable scalar path, an AVX2 path and an AVX-512 path,
 * chosen once at run time from the CPU (cpuid); every path gives the same
 * answers on the same bytes.  The environment variable AMQ_SIMD=scalar|avx2|
 * avx512 caps the choice for the whole process (read once; any other
 * value means scalar), and amq_blocked_set_simd (<amq/advanced.h>) picks
 * a path for one filter.
 *
 * Thread safety.  Any number of threads may query one filter at once
 * (amq_blocked_contains* and the other const functions).  Adds come in two
 * modes (amq_blocked_set_concurrent):
 *  - exclusive (the default, the fastest): an add needs the filter to
 *    itself - no other add and no query at the same time.  It reads the
 *    key's block, ORs in the key's bits and writes the block back: on the
 *    AVX2 and AVX-512 paths with whole-block vector stores (the key's mask
 *    built in registers), on the scalar path with a store per probe; the
 *    bytes are the same on every path;
 *  - concurrent: any number of threads may add and query at once, without
 *    locks.  Adds set bits with relaxed atomic OR on aligned 64-bit words
 *    (C11 atomics; a locked instruction per word that gains a bit).
 *    Guarantee: a query sees every add that happens-before it (the adding
 *    call returned and the querying thread synchronized with that thread -
 *    a join, a mutex, a release/acquire pair - or is that thread); a query
 *    concurrent with an add of the same key may answer either way.  Bits
 *    are only ever set, so no interleaving loses a bit or turns a finished
 *    add into a false negative.  The item count is kept with relaxed
 *    atomics (two threads adding the same key at once may both count it).
 *    The scalar query path reads words with relaxed atomic loads; the
 *    AVX2/AVX-512 paths read a block with vector loads, which on x86 read
 *    each aligned 8-byte word atomically (outside the C11 model, and the
 *    reason the ThreadSanitizer test uses the scalar path).
 * amq_blocked_clear, _merge, _set_concurrent and _free (and the
 * advanced _set_items and _set_simd) need exclusive access in both modes.
 */
#ifndef AMQ_BLOCKED_BLOOM_H
#define AMQ_BLOCKED_BLOOM_H

#include "amq/common.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amq_blocked amq_blocked;

/* Geometry limits: 1 .. 2^34 blocks (1 TiB), 1 .. 16 probes per key. */
#define AMQ_BLOCKED_BLOCK_BYTES 64u
#define AMQ_BLOCKED_BLOCK_BITS 512u
#define AMQ_BLOCKED_MAX_BLOCKS (UINT64_C(1) << 34)
#define AMQ_BLOCKED_MAX_K 16u

typedef struct amq_blocked_params {
    uint64_t blocks;    /* number of 512-bit blocks */
    uint32_t k;         /* probes per key, 1 .. AMQ_BLOCKED_MAX_K */
    uint32_t hash_algo; /* amq_hash_algo */
    uint64_t seed;      /* hash seed */
    uint64_t capacity;  /* informational: items it was sized for (0: unknown) */
    double fpp;         /* informational: target rate at capacity (0: unknown) */
} amq_blocked_params;

/*
 * The false-positive rate of a blocked filter of `blocks` blocks and k
 * probes holding n distinct keys, exactly for the layout: the mixture over
 * block loads j ~ Poisson(n / blocks) of the rate of one 512-bit block that
 * received j k uniform probe bits (the exact distribution of its set bits,
 * not the mean-fill approximation (1 - e^(-kj/512))^k, which is about 1 %
 * low).  0 for n = 0; 1 for blocks = 0 or k outside [1, 16].
 * O(k^2 (n / blocks + sqrt(n / blocks) + 40)) operations.
 */
AMQ_API double amq_blocked_fpp_theory(uint64_t blocks, uint32_t k, uint64_t n);

/*
 * Sizing from capacity n and target rate p: the fewest blocks (and for them
 * the k in [1, 16] with the lowest rate) whose amq_blocked_fpp_theory at n
 * is at most p.  n = 1,000,000 and p = 0.01 give 19,372 blocks (9.92 bits
 * per key), k = 6.  AMQ_ERANGE when n is 0, p not in (0, 1), or the filter
 * would need more than AMQ_BLOCKED_MAX_BLOCKS blocks or 1000 bits per key
 * (rates below about 1e-12 are out of reach of one 512-bit block).
 * O(log(n) * 16) rate evaluations.
 */
AMQ_API int amq_blocked_size_fpp(uint64_t n, double p, uint64_t *blocks, uint32_t *k);

/*
 * Sizing from bits per key: blocks = ceil(n * bits_per_key / 512) (at
 * least 1), k = the best k for that size.  AMQ_ERANGE when n is 0,
 * bits_per_key not in (0, 1000], or too many blocks.
 */
AMQ_API int amq_blocked_size_bpk(uint64_t n, double bits_per_key, uint64_t *blocks, uint32_t *k);

/* Fills params for (n, p) with amq_blocked_size_fpp, XXH3 seed 0. */
AMQ_API int amq_blocked_params_for(uint64_t n, double p, amq_blocked_params *params);

/*
 * Creates an empty filter (zeroed, 64-byte aligned; arrays of 1 MiB and
 * more are mmap'd and advised to use transparent huge pages).  alloc may be
 * NULL.  AMQ_ERANGE (geometry), AMQ_EHASH, AMQ_ENOMEM.
 */
AMQ_API int amq_blocked_new(const amq_blocked_params *params, const amq_allocator *alloc,
                            amq_blocked **out);

/* A deep, writable copy (also of a view).  Not safe against concurrent adds
 * to src: the copy may or may not hold them. */
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
 * Results as the forms above.
 */
AMQ_API int amq_blocked_add_batch64(amq_blocked *b, const uint64_t *h, size_t n, uint8_t *added,
                                    uint64_t *count);
AMQ_API int amq_blocked_contains_batch64(const amq_blocked *b, const uint64_t *h, size_t n,
                                         uint8_t *out, uint64_t *count);

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
/* 1 in concurrent mode, else 0. */
AMQ_API int amq_blocked_is_concurrent(const amq_blocked *b);

/* Clears every bit and the count.  AMQ_EREADONLY for a view. */
AMQ_API int amq_blocked_clear(amq_blocked *b);

/*
 * dst |= src: dst then answers "may be present" for every key of either.
 * Same blocks, k, hash algorithm and seed required (AMQ_EINCOMPAT);
 * AMQ_EREADONLY for a view.  The count becomes the sum (an upper bound).
 * O(blocks).
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

#ifdef __cplusplus
}
#endif

#endif /* AMQ_BLOCKED_BLOOM_H */
