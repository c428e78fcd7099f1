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
 * Most programs reach this kind through the generic handle (amq/filter.h,
 * AMQ_KIND_BLOCKED); this header adds the rate of a geometry and the
 * concurrency mode's state.  The typed handle (amq_blocked_new, _add,
 * the batched forms over keys and 64-bit hashes) is in <amq/advanced.h>.
 *
 * Thread safety.  Any number of threads may query one filter at once.
 * Adds come in two modes (amq_filter_set_concurrent):
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
 * Clearing, merging into, switching the mode of and freeing a filter (and
 * the advanced amq_blocked_set_items and _set_simd) need exclusive access
 * in both modes.
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

/* 1 in concurrent mode (amq_filter_set_concurrent switched it on), else 0. */
AMQ_API int amq_blocked_is_concurrent(const amq_blocked *b);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_BLOCKED_BLOOM_H */
