/*
 * amq/bloom.h - the classic Bloom filter.
 *
 * A classic filter is an array of m bits and k probes per key.  The probes
 * derive from the key's amq_hash128 by one of three schemes:
 *
 *  AMQ_BLOOM_PROBE_NATIVE      enhanced double hashing (x = h1, y = h2;
 *                              probe i = x reduced to [0, m) by
 *                              multiply-shift; x += y; y += i), 64-bit
 *                              indexes: filters may exceed 2^32 bits.
 *  AMQ_BLOOM_PROBE_GUAVA       Guava's MURMUR128_MITZ_64: c = h1; probe =
 *                              (c & INT64_MAX) mod m; c += h2.
 *  AMQ_BLOOM_PROBE_REDISBLOOM  RedisBloom: probe i = (h1 + i * h2) mod m
 *                              (mod 2^64 first).
 *
 * Bit x of the filter is bit (x & 7) of byte x >> 3 - the same bytes as
 * little-endian 64-bit words with bit x at 1 << (x & 63) - on every host.
 *
 * A filter of the native scheme is made by amq_filter_new (AMQ_KIND_BLOOM);
 * one of another scheme (a Guava- or RedisBloom-compatible array) by
 * amq_bloom_new and amq_filter_from_bloom.  Either is used through the
 * generic handle (amq/filter.h); this header adds sizing, the parameters
 * and the cardinality estimate.  The typed handle (amq_bloom_add, _merge,
 * ...), views over caller bytes and the bit array are in <amq/advanced.h>.
 *
 * Thread safety: the functions taking a const amq_bloom * are readers - any
 * number of threads may call them on one filter at the same time.  Writers
 * need exclusive access.  The sizing functions and amq_bloom_new touch no
 * shared state: any thread, any time.
 */
#ifndef AMQ_BLOOM_H
#define AMQ_BLOOM_H

#include "amq/common.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amq_bloom amq_bloom;

typedef enum amq_bloom_probe {
    AMQ_BLOOM_PROBE_NATIVE = 0,
    AMQ_BLOOM_PROBE_GUAVA = 1,
    AMQ_BLOOM_PROBE_REDISBLOOM = 2
} amq_bloom_probe;

/* Limits: m in [1, AMQ_BLOOM_MAX_BITS] (2^43 bits = 1 TiB), k in
 * [1, AMQ_BLOOM_MAX_K]. */
#define AMQ_BLOOM_MAX_BITS (UINT64_C(1) << 43)
#define AMQ_BLOOM_MAX_K 255u
/* Probes of a filter in RedisBloom's probe scheme (AMQ_BLOOM_PROBE_REDISBLOOM):
 * RedisBloom sizes k from the error rate alone, up to ~1075 for the
 * smallest positive double, and such filters must load and answer alike. */
#define AMQ_BLOOM_MAX_K_REDISBLOOM 4096u

/* The geometry and hashing of a filter. */
typedef struct amq_bloom_params {
    uint64_t bits;      /* m */
    uint32_t k;         /* probes per key */
    uint32_t probe;     /* amq_bloom_probe */
    uint32_t hash_algo; /* amq_hash_algo */
    uint64_t seed;      /* hash seed */
    uint64_t capacity;  /* informational: items it was sized for (0: unknown) */
    double fpp;         /* informational: target rate at capacity (0: unknown) */
} amq_bloom_params;

/* Fills params for (n, p) with amq_bloom_bits_for, the native probe scheme,
 * XXH3 seed 0, and records n and p.  AMQ_OK, or AMQ_ERANGE as
 * amq_bloom_bits_for (n 0, p outside (0, 1), too many bits). */
AMQ_API int amq_bloom_params_for(uint64_t n, double p, amq_bloom_params *params);

/* The false-positive rate of m bits, k probes, n items: (1 - e^(-kn/m))^k. */
AMQ_API double amq_bloom_fpp_theory(uint64_t bits, uint32_t k, uint64_t n);

/*
 * Creates an empty filter.  alloc may be NULL (default allocator).
 * AMQ_ERANGE for bits or k outside the limits, AMQ_EINVAL for an unknown
 * probe scheme, AMQ_EHASH for a bad hash, AMQ_ENOMEM.
 */
AMQ_API int amq_bloom_new(const amq_bloom_params *params, const amq_allocator *alloc,
                          amq_bloom **out);

/* Releases the filter; NULL is a no-op. */
AMQ_API void amq_bloom_free(amq_bloom *b);

/* The filter's parameters. */
AMQ_API void amq_bloom_get_params(const amq_bloom *b, amq_bloom_params *out);

/* Swamidass-Baldi estimate of the number of distinct items:
 * -(m / k) ln(1 - X / m) for X bits set; +infinity when every bit is set. */
AMQ_API double amq_bloom_estimate_items(const amq_bloom *b);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_BLOOM_H */
