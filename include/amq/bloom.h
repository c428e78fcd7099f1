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
 * Thread safety: the functions taking a const amq_bloom * are readers - any
 * number of threads may call them on one filter at the same time
 * (amq_bloom_contains, _contains_hash, _hash, _clone of it, _get_params,
 * _items, _is_readonly, _bits_set, _estimate_items, _fpp_now, and the src
 * of _merge and _intersect).  Writers - amq_bloom_add, _add_hash, _clear,
 * the dst of _merge and _intersect, and _free - need exclusive access.  The
 * sizing functions and amq_bloom_new touch no shared state: any thread,
 * any time.  Views over caller bytes and raw access to the bit array are in
 * <amq/advanced.h>.
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

/* Fills params for (n, p) with amq_bloom_size_fpp, the native probe scheme,
 * XXH3 seed 0, and records n and p. */
AMQ_API int amq_bloom_params_for(uint64_t n, double p, amq_bloom_params *params);

/*
 * Sizing from capacity n and false-positive rate p, as Guava computes it:
 * m = floor(-n ln p / (ln 2)^2) (at least 1), k = max(1, round(m / n ln 2)).
 * n = 1,000,000, p = 0.01 gives m = 9,585,058 and k = 7.
 * Returns AMQ_ERANGE when n is 0, p is not in (0, 1) or m would exceed
 * AMQ_BLOOM_MAX_BITS.  Fills bits and k only.
 */
AMQ_API int amq_bloom_size_fpp(uint64_t n, double p, uint64_t *bits, uint32_t *k);

/*
 * Sizing from bits per key, as LevelDB does: m = n * bits_per_key (at least
 * 64), k = floor(bits_per_key * 0.69) clamped to [1, 30].
 * AMQ_ERANGE when n is 0 or bits_per_key is not in (0, 1000].
 */
AMQ_API int amq_bloom_size_bpk(uint64_t n, double bits_per_key, uint64_t *bits,
                               uint32_t *k);

/* The false-positive rate of m bits, k probes, n items: (1 - e^(-kn/m))^k. */
AMQ_API double amq_bloom_fpp_theory(uint64_t bits, uint32_t k, uint64_t n);

/*
 * Creates an empty filter.  alloc may be NULL (default allocator).
 * AMQ_ERANGE for bits or k outside the limits, AMQ_EINVAL for an unknown
 * probe scheme, AMQ_EHASH for a bad hash, AMQ_ENOMEM.
 */
AMQ_API int amq_bloom_new(const amq_bloom_params *params, const amq_allocator *alloc,
                          amq_bloom **out);

/* A deep, writable copy (also of a view).  AMQ_ENOMEM. */
AMQ_API int amq_bloom_clone(const amq_bloom *b, const amq_allocator *alloc,
                            amq_bloom **out);

/* Releases the filter; NULL is a no-op. */
AMQ_API void amq_bloom_free(amq_bloom *b);

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
 * parameters (AMQ_EINCOMPAT otherwise).  The union's item count is the sum
 * of both counts (an upper bound), the intersection's is the
 * Swamidass-Baldi estimate of what it holds.  O(m).
 */
AMQ_API int amq_bloom_merge(amq_bloom *dst, const amq_bloom *src);
AMQ_API int amq_bloom_intersect(amq_bloom *dst, const amq_bloom *src);

/* The filter's parameters. */
AMQ_API void amq_bloom_get_params(const amq_bloom *b, amq_bloom_params *out);
/* Keys counted as added (adds that set a bit; merges add up counts). */
AMQ_API uint64_t amq_bloom_items(const amq_bloom *b);
/* 1 for a view over caller or mapped bytes (writers return AMQ_EREADONLY),
 * else 0. */
AMQ_API int amq_bloom_is_readonly(const amq_bloom *b);

/* Number of bits set (popcount over the array), O(m). */
AMQ_API uint64_t amq_bloom_bits_set(const amq_bloom *b);

/* Swamidass-Baldi estimate of the number of distinct items:
 * -(m / k) ln(1 - X / m) for X bits set; +infinity when every bit is set. */
AMQ_API double amq_bloom_estimate_items(const amq_bloom *b);

/* Expected false-positive rate now, (X / m)^k. */
AMQ_API double amq_bloom_fpp_now(const amq_bloom *b);



#ifdef __cplusplus
}
#endif

#endif /* AMQ_BLOOM_H */
