/*
 * bloom.c - the classic Bloom filter.
 *
 * m bits, k probes per key.  The bit array is kept as bytes (bit x is bit
 * x & 7 of byte x >> 3), padded to whole 64-bit words so that popcount,
 * union and intersection run a word at a time; the padding bits stay zero.
 * That byte order is the one RedisBloom stores and the one Guava's long[]
 * has once its words are written little-endian, so both import without
 * reshuffling bits.
 */
#include <math.h>
#include <string.h>

#include "amq/bloom.h"
#include "bloom_internal.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "kind.h" /* amq_union_items */

/* ---- sizing --------------------------------------------------------------- */

/* ln(2) and ln(2)^2 as Guava computes them (Math.log(2) * Math.log(2)). */
#define LN2 0.6931471805599453
#define LN2_SQUARED (LN2 * LN2)

int amq_bloom_bits_for(uint64_t n, double p, uint64_t *bits, uint32_t *k)
{
    double m, kk;

    if (n == 0 || !(p > 0.0 && p < 1.0))
        return AMQ_ERANGE;
    m = -(double)n * log(p) / LN2_SQUARED;
    if (!(m < (double)AMQ_BLOOM_MAX_BITS))
        return AMQ_ERANGE;
    if (m < 1.0)
        m = 1.0;
    *bits = (uint64_t)m; /* truncation, as Guava's (long) cast */
    kk = round((double)*bits / (double)n * LN2);
    if (kk < 1.0)
        kk = 1.0;
    if (kk > AMQ_BLOOM_MAX_K)
        return AMQ_ERANGE;
    *k = (uint32_t)kk;
    return AMQ_OK;
}

int amq_bloom_bits_for_bpk(uint64_t n, double bits_per_key, uint64_t *bits, uint32_t *k)
{
    double m, kk;

    if (n == 0 || !(bits_per_key > 0.0 && bits_per_key <= 1000.0))
        return AMQ_ERANGE;
    m = floor((double)n * bits_per_key);
    if (!(m <= (double)AMQ_BLOOM_MAX_BITS))
        return AMQ_ERANGE;
    if (m < 64.0)
        m = 64.0;
    /* LevelDB: k = bits_per_key * 0.69 (a deliberate under-estimate of ln 2
     * that saves a probe), truncated, in [1, 30]. */
    kk = floor(bits_per_key * 0.69);
    if (kk < 1.0)
        kk = 1.0;
    if (kk > 30.0)
        kk = 30.0;
    *bits = (uint64_t)m;
    *k = (uint32_t)kk;
    return AMQ_OK;
}

int amq_bloom_params_for(uint64_t n, double p, amq_bloom_params *params)
{
    int rc;

    memset(params, 0, sizeof *params);
    rc = amq_bloom_bits_for(n, p, &params->bits, &params->k);
    if (rc != AMQ_OK)
        return rc;
    params->probe = AMQ_BLOOM_PROBE_NATIVE;
    params->hash_algo = AMQ_HASH_XXH3;
    params->seed = 0;
    params->capacity = n;
    params->fpp = p;
    return AMQ_OK;
}

double amq_bloom_fpp_theory(uint64_t bits, uint32_t k, uint64_t n)
{
    if (bits == 0)
        return 1.0;
    return pow(1.0 - exp(-(double)k * (double)n / (double)bits), (double)k);
}

size_t amq_bloom_data_size(const amq_bloom_params *params)
{
    return (size_t)((params->bits + 63) / 64 * 8);
}

int amq_bloom_check_params(const amq_bloom_params *p)
{
    if (p->bits == 0 || p->bits > AMQ_BLOOM_MAX_BITS)
        return AMQ_ERANGE;
    if (p->k == 0 || p->k > (p->probe == AMQ_BLOOM_PROBE_REDISBLOOM ? AMQ_BLOOM_MAX_K_REDISBLOOM
                                                                   : AMQ_BLOOM_MAX_K))
        return AMQ_ERANGE;
    if (p->probe > AMQ_BLOOM_PROBE_REDISBLOOM)
        return AMQ_EINVAL;
    if (!(p->fpp >= 0.0 && p->fpp < 1.0))
        return AMQ_ERANGE;
    return amq_hash_check(p->hash_algo, p->seed);
}

/* ---- life cycle ------------------------------------------------------------ */

static amq_bloom *bloom_shell(const amq_bloom_params *params, const amq_allocator *alloc)
{
    amq_allocator a;
    amq_bloom *b;

    amq_alloc_init(&a, alloc);
    b = amq_calloc(&a, sizeof *b);
    if (b == NULL)
        return NULL;
    b->p = *params;
    b->alloc = a;
    return b;
}

int amq_bloom_new(const amq_bloom_params *params, const amq_allocator *alloc,
                  amq_bloom **out)
{
    amq_bloom *b;
    int rc;

    *out = NULL;
    rc = amq_bloom_check_params(params);
    if (rc != AMQ_OK)
        return rc;
    b = bloom_shell(params, alloc);
    if (b == NULL)
        return AMQ_ENOMEM;
    /* Probes read the array bytewise or through memcpy: no alignment to pay
     * for. */
    rc = amq_region_alloc_align(&b->data, &b->alloc, amq_bloom_data_size(params), 1);
    if (rc != AMQ_OK) {
        amq_bloom_free(b);
        return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
    }
    *out = b;
    return AMQ_OK;
}

int amq_bloom_view(const amq_bloom_params *params, const void *data, size_t len,
                   uint64_t items, const amq_allocator *alloc, amq_bloom **out)
{
    amq_bloom *b;
    int rc;

    *out = NULL;
    rc = amq_bloom_check_params(params);
    if (rc != AMQ_OK)
        return rc;
    if (len != amq_bloom_data_size(params))
        return AMQ_EINVAL;
    b = bloom_shell(params, alloc);
    if (b == NULL)
        return AMQ_ENOMEM;
    amq_region_borrow(&b->data, data, len);
    b->items = items;
    *out = b;
    return AMQ_OK;
}

int amq_bloom_clone(const amq_bloom *src, const amq_allocator *alloc, amq_bloom **out)
{
    amq_bloom *b;
    int rc;

    *out = NULL;
    b = bloom_shell(&src->p, alloc);
    if (b == NULL)
        return AMQ_ENOMEM;
    rc = amq_region_copy_align(&b->data, &b->alloc, src->data.data, src->data.size, 1);
    if (rc != AMQ_OK) {
        amq_bloom_free(b);
        return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
    }
    b->items = src->items;
    *out = b;
    return AMQ_OK;
}

void amq_bloom_free(amq_bloom *b)
{
    amq_allocator a;
    if (b == NULL)
        return;
    a = b->alloc;
    amq_region_free(&b->data, &a);
    amq_free(&a, b, sizeof *b);
}

/* ---- probing ----------------------------------------------------------------
 * One loop per scheme, the switch outside it.  The native scheme reduces a
 * 64-bit value to [0, m) by multiply-shift (the high half of x * m), which
 * needs no division and keeps all 64 bits of index range.
 */

static inline uint64_t reduce64(uint64_t x, uint64_t m)
{
    return (uint64_t)(((unsigned __int128)x * m) >> 64);
}

/* Sets bit x; returns the bit's mask if it was clear, else 0 (OR-ed over a
 * key's probes without a compare per probe). */
static inline unsigned test_and_set(uint8_t *d, uint64_t x)
{
    uint8_t mask = (uint8_t)(1u << (x & 7));
    uint8_t old = d[x >> 3];
    d[x >> 3] = (uint8_t)(old | mask);
    return (unsigned)(~old & mask);
}

static inline int test_bit(const uint8_t *d, uint64_t x)
{
    return (d[x >> 3] >> (x & 7)) & 1;
}

/* The probes on a bare array (d, m bits, k probes, scheme probe): what a
 * filter and each link of a scalable chain run. */
static inline int probe_set(uint8_t *d, uint64_t m, uint32_t k, uint32_t probe, amq_hash128 h)
{
    uint64_t x = h.h1, y = h.h2;
    uint32_t i;
    unsigned changed = 0;

    switch (probe) {
    case AMQ_BLOOM_PROBE_GUAVA:
        for (i = 0; i < k; i++, x += y)
            changed |= test_and_set(d, (x & (uint64_t)INT64_MAX) % m);
        break;
    case AMQ_BLOOM_PROBE_REDISBLOOM:
        for (i = 0; i < k; i++)
            changed |= test_and_set(d, (x + (uint64_t)i * y) % m);
        break;
    default:
        for (i = 0; i < k; i++) {
            changed |= test_and_set(d, reduce64(x, m));
            x += y;
            y += i;
        }
        break;
    }
    return changed != 0;
}

static inline int probe_test(const uint8_t *d, uint64_t m, uint32_t k, uint32_t probe,
                             amq_hash128 h)
{
    uint64_t x = h.h1, y = h.h2;
    uint32_t i;

    switch (probe) {
    case AMQ_BLOOM_PROBE_GUAVA:
        for (i = 0; i < k; i++, x += y)
            if (!test_bit(d, (x & (uint64_t)INT64_MAX) % m))
                return 0;
        return 1;
    case AMQ_BLOOM_PROBE_REDISBLOOM:
        for (i = 0; i < k; i++)
            if (!test_bit(d, (x + (uint64_t)i * y) % m))
                return 0;
        return 1;
    default:
        for (i = 0; i < k; i++) {
            if (!test_bit(d, reduce64(x, m)))
                return 0;
            x += y;
            y += i;
        }
        return 1;
    }
}

static int bloom_set(amq_bloom *b, amq_hash128 h)
{
    return probe_set(b->data.data, b->p.bits, b->p.k, b->p.probe, h);
}

static int bloom_test(const amq_bloom *b, amq_hash128 h)
{
    return probe_test(b->data.data, b->p.bits, b->p.k, b->p.probe, h);
}

int amq_bloom_array_set(uint8_t *d, uint64_t m, uint32_t k, uint32_t probe, amq_hash128 h)
{
    return probe_set(d, m, k, probe, h);
}

int amq_bloom_array_test(const uint8_t *d, uint64_t m, uint32_t k, uint32_t probe,
                         amq_hash128 h)
{
    return probe_test(d, m, k, probe, h);
}

uint64_t amq_bloom_array_popcount(const uint8_t *d, size_t len)
{
    size_t i, words = len / 8;
    uint64_t w, n = 0;
    for (i = 0; i < words; i++) {
        memcpy(&w, d + i * 8, 8);
        n += (uint64_t)__builtin_popcountll(w);
    }
    return n;
}

/* ---- batches ------------------------------------------------------------------
 * A filter larger than the caches costs a cache miss per probe; one key's
 * misses overlap, but a loop over keys waits for each key's in turn.  The
 * batched forms prefetch the probes of the key BATCH_AHEAD places ahead, so
 * that several keys' misses are in flight at once.
 */

#define BATCH_AHEAD 8

/* Inlined: gcc 12 dropped the calls of a function holding only prefetches (ipa-modref). */
static inline __attribute__((always_inline)) void bloom_prefetch(const amq_bloom *b, amq_hash128 h,
                                                                 int write)
{
    const uint8_t *d = b->data.data;
    uint64_t m = b->p.bits, x = h.h1, y = h.h2;
    uint32_t i, k = b->p.k;

    switch (b->p.probe) {
    case AMQ_BLOOM_PROBE_GUAVA:
        for (i = 0; i < k; i++, x += y) {
            if (write)
                __builtin_prefetch(d + (((x & (uint64_t)INT64_MAX) % m) >> 3), 1);
            else
                __builtin_prefetch(d + (((x & (uint64_t)INT64_MAX) % m) >> 3), 0);
        }
        break;
    case AMQ_BLOOM_PROBE_REDISBLOOM:
        for (i = 0; i < k; i++) {
            if (write)
                __builtin_prefetch(d + (((x + (uint64_t)i * y) % m) >> 3), 1);
            else
                __builtin_prefetch(d + (((x + (uint64_t)i * y) % m) >> 3), 0);
        }
        break;
    default:
        for (i = 0; i < k; i++) {
            if (write)
                __builtin_prefetch(d + (reduce64(x, m) >> 3), 1);
            else
                __builtin_prefetch(d + (reduce64(x, m) >> 3), 0);
            x += y;
            y += i;
        }
        break;
    }
}

/* Small filters sit in the caches: prefetching would only add work. */
static int worth_prefetching(const amq_bloom *b)
{
    return b->data.size > ((size_t)1 << 20);
}

int amq_bloom_add_hashes(amq_bloom *b, const amq_hash128 *h, size_t n, uint8_t *added)
{
    size_t i;
    int changed, pf = worth_prefetching(b);

    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    for (i = 0; i < n; i++) {
        if (pf && i + BATCH_AHEAD < n)
            bloom_prefetch(b, h[i + BATCH_AHEAD], 1);
        changed = bloom_set(b, h[i]);
        b->items += (uint64_t)changed;
        if (added != NULL)
            added[i] = (uint8_t)changed;
    }
    return AMQ_OK;
}

void amq_bloom_contains_hashes(const amq_bloom *b, const amq_hash128 *h, size_t n, uint8_t *out)
{
    size_t i;
    int pf = worth_prefetching(b);

    for (i = 0; i < n; i++) {
        if (pf && i + BATCH_AHEAD < n)
            bloom_prefetch(b, h[i + BATCH_AHEAD], 0);
        out[i] = (uint8_t)bloom_test(b, h[i]);
    }
}

/* ---- public operations ------------------------------------------------------ */

amq_hash128 amq_bloom_hash(const amq_bloom *b, const void *key, size_t len)
{
    return amq_hash_key(b->p.hash_algo, b->p.seed, key, len);
}

int amq_bloom_add_hash(amq_bloom *b, amq_hash128 h)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    if (!bloom_set(b, h))
        return 0;
    b->items++;
    return 1;
}

int amq_bloom_add(amq_bloom *b, const void *key, size_t len)
{
    return amq_bloom_add_hash(b, amq_bloom_hash(b, key, len));
}

int amq_bloom_contains_hash(const amq_bloom *b, amq_hash128 h)
{
    return bloom_test(b, h);
}

int amq_bloom_contains(const amq_bloom *b, const void *key, size_t len)
{
    return bloom_test(b, amq_bloom_hash(b, key, len));
}

int amq_bloom_clear(amq_bloom *b)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    memset(b->data.data, 0, b->data.size);
    b->items = 0;
    return AMQ_OK;
}

static int same_geometry(const amq_bloom *a, const amq_bloom *b)
{
    return a->p.bits == b->p.bits && a->p.k == b->p.k && a->p.probe == b->p.probe &&
           a->p.hash_algo == b->p.hash_algo && a->p.seed == b->p.seed;
}

/* Swamidass-Baldi: items that set x of m bits with k probes. */
static double estimate_from_bits(uint64_t x, uint64_t m, uint32_t k)
{
    if (x >= m)
        return INFINITY;
    return -((double)m / (double)k) * log1p(-(double)x / (double)m);
}

int amq_bloom_merge(amq_bloom *dst, const amq_bloom *src)
{
    size_t i, words = dst->data.size / 8;
    uint64_t a, c, x = 0, changed = 0;

    if (!same_geometry(dst, src))
        return AMQ_EINCOMPAT;
    if (amq_region_is_borrowed(&dst->data))
        return AMQ_EREADONLY;
    for (i = 0; i < words; i++) {
        memcpy(&a, dst->data.data + i * 8, 8);
        memcpy(&c, src->data.data + i * 8, 8);
        changed |= c & ~a;
        a |= c;
        x += (uint64_t)__builtin_popcountll(a);
        memcpy(dst->data.data + i * 8, &a, 8);
    }
    dst->items = amq_union_items(dst->items, src->items,
                                 estimate_from_bits(x, dst->p.bits, dst->p.k), changed != 0);
    return AMQ_OK;
}

int amq_bloom_intersect(amq_bloom *dst, const amq_bloom *src)
{
    size_t i, words = dst->data.size / 8;
    uint64_t a, c, xa = 0, xc = 0, xu = 0;
    double est;

    if (!same_geometry(dst, src))
        return AMQ_EINCOMPAT;
    if (amq_region_is_borrowed(&dst->data))
        return AMQ_EREADONLY;
    for (i = 0; i < words; i++) {
        memcpy(&a, dst->data.data + i * 8, 8);
        memcpy(&c, src->data.data + i * 8, 8);
        xa += (uint64_t)__builtin_popcountll(a);
        xc += (uint64_t)__builtin_popcountll(c);
        xu += (uint64_t)__builtin_popcountll(a | c);
        a &= c;
        memcpy(dst->data.data + i * 8, &a, 8);
    }
    /* |A n B| = |A| + |B| - |A u B|, each estimated from its bit count: the
     * AND of the arrays alone over-counts (bits set by different keys of A
     * and B coincide). */
    est = estimate_from_bits(xa, dst->p.bits, dst->p.k) +
          estimate_from_bits(xc, dst->p.bits, dst->p.k) -
          estimate_from_bits(xu, dst->p.bits, dst->p.k);
    if (!(est > 0.0))
        est = 0.0;
    dst->items = (est >= 1.8e19) ? UINT64_MAX : (uint64_t)llround(est);
    return AMQ_OK;
}

void amq_bloom_get_params(const amq_bloom *b, amq_bloom_params *out)
{
    *out = b->p;
}

uint64_t amq_bloom_items(const amq_bloom *b)
{
    return b->items;
}

int amq_bloom_is_readonly(const amq_bloom *b)
{
    return amq_region_is_borrowed(&b->data);
}

uint64_t amq_bloom_bits_set(const amq_bloom *b)
{
    return amq_bloom_array_popcount(b->data.data, b->data.size);
}

double amq_bloom_estimate_items(const amq_bloom *b)
{
    return estimate_from_bits(amq_bloom_bits_set(b), b->p.bits, b->p.k);
}

double amq_bloom_fpp_now(const amq_bloom *b)
{
    return pow((double)amq_bloom_bits_set(b) / (double)b->p.bits, (double)b->p.k);
}

const uint8_t *amq_bloom_data(const amq_bloom *b)
{
    return b->data.data;
}

uint8_t *amq_bloom_data_mut(amq_bloom *b)
{
    return amq_region_is_borrowed(&b->data) ? NULL : b->data.data;
}

void amq_bloom_set_items(amq_bloom *b, uint64_t items)
{
    b->items = items;
}
