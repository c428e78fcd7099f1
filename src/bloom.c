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
#include "common/error.h"
#include "kind.h"

struct amq_bloom {
    amq_bloom_params p;
    uint64_t items;
    amq_region data; /* amq_bloom_data_size(&p) bytes */
    amq_allocator alloc;
};

/* ---- sizing --------------------------------------------------------------- */

/* ln(2) and ln(2)^2 as Guava computes them (Math.log(2) * Math.log(2)). */
#define LN2 0.6931471805599453
#define LN2_SQUARED (LN2 * LN2)

int amq_bloom_size_fpp(uint64_t n, double p, uint64_t *bits, uint32_t *k)
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

int amq_bloom_size_bpk(uint64_t n, double bits_per_key, uint64_t *bits, uint32_t *k)
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
    rc = amq_bloom_size_fpp(n, p, &params->bits, &params->k);
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

static int check_params(const amq_bloom_params *p)
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
    rc = check_params(params);
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
    rc = check_params(params);
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

static void bloom_prefetch(const amq_bloom *b, amq_hash128 h, int write)
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

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    amq_bloom *b = impl;
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

/* ---- the kind's table for the generic handle ----------------------------------- */

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_bloom_params p;
    amq_bloom *b;
    int rc;

    /* Double hashing needs h2 independent of h1; mulshift's h2 is h1
     * rotated, and counting keys then pass the target rate. */
    if (cfg->hash_algo == AMQ_HASH_MULSHIFT)
        return amq_err(err, AMQ_EINVAL,
                       "a classic Bloom filter does not take hash mulshift (its probes need two"
                       " independent hash halves; mulshift has one): use xxh3");
    memset(&p, 0, sizeof p);
    if (cfg->bits > 0) {
        p.bits = cfg->bits;
        p.k = cfg->k;
    } else if (cfg->k != 0) {
        return amq_err(err, AMQ_EINVAL, "a Bloom filter's probe count k (%u) goes with its"
                       " number of bits, which is 0", cfg->k);
    } else if (cfg->bits_per_key != 0.0) {
        /* Any non-zero value, NaN and negatives included, asks for sizing
         * by bits per key: amq_bloom_size_bpk refuses the absurd ones. */
        rc = amq_bloom_size_bpk(cfg->capacity, cfg->bits_per_key, &p.bits, &p.k);
        if (rc != AMQ_OK)
            return amq_err(err, rc, "cannot size a Bloom filter for %llu items at %g bits per key",
                           (unsigned long long)cfg->capacity, cfg->bits_per_key);
        p.capacity = cfg->capacity;
        p.fpp = amq_bloom_fpp_theory(p.bits, p.k, cfg->capacity);
    } else {
        rc = amq_bloom_size_fpp(cfg->capacity, cfg->fpp, &p.bits, &p.k);
        if (rc != AMQ_OK)
            return amq_err(err, rc,
                           "cannot size a Bloom filter for %llu items at false-positive rate %g"
                           " (capacity must be at least 1, the rate in (0, 1), and at most"
                           " 2^43 bits)",
                           (unsigned long long)cfg->capacity, cfg->fpp);
        p.capacity = cfg->capacity;
        p.fpp = cfg->fpp;
    }
    p.probe = AMQ_BLOOM_PROBE_NATIVE;
    p.hash_algo = cfg->hash_algo;
    p.seed = cfg->seed;
    rc = amq_bloom_new(&p, cfg->alloc, &b);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot create a Bloom filter of %llu bits and %u probes: %s",
                       (unsigned long long)p.bits, p.k, amq_strerror(rc));
    *impl = b;
    return AMQ_OK;
}

/* The entries that only forward to the family's functions. */
static void op_destroy(void *impl)
{
    amq_bloom_free((amq_bloom *)impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    return amq_bloom_clone((const amq_bloom *)impl, alloc, (amq_bloom **)out);
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_bloom *x = impl;
    *algo = x->p.hash_algo;
    *seed = x->p.seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    return amq_bloom_add_hash((amq_bloom *)impl, h);
}

static int op_clear(void *impl)
{
    return amq_bloom_clear((amq_bloom *)impl);
}

static int op_is_view(const void *impl)
{
    return amq_bloom_is_readonly((const amq_bloom *)impl);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    return bloom_test(impl, h);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    const amq_bloom *b = impl;
    size_t i;
    int pf = worth_prefetching(b);

    for (i = 0; i < n; i++) {
        if (pf && i + BATCH_AHEAD < n)
            bloom_prefetch(b, h[i + BATCH_AHEAD], 0);
        out[i] = (uint8_t)bloom_test(b, h[i]);
    }
}

static const char *geometry_difference(const amq_bloom *a, const amq_bloom *b)
{
    if (a->p.bits != b->p.bits)
        return "different numbers of bits";
    if (a->p.k != b->p.k)
        return "different numbers of probes";
    if (a->p.probe != b->p.probe)
        return "different probe schemes";
    return "different hash algorithms or seeds";
}

static int op_merge(void *dst, const void *src, amq_errinfo *err)
{
    int rc = amq_bloom_merge(dst, src);
    if (rc == AMQ_EINCOMPAT)
        return amq_err(err, rc, "cannot merge Bloom filters with %s",
                       geometry_difference(dst, src));
    return rc;
}

static int op_intersect(void *dst, const void *src, amq_errinfo *err)
{
    int rc = amq_bloom_intersect(dst, src);
    if (rc == AMQ_EINCOMPAT)
        return amq_err(err, rc, "cannot intersect Bloom filters with %s",
                       geometry_difference(dst, src));
    return rc;
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_bloom *b = impl;
    uint64_t set = amq_bloom_bits_set(b);

    st->items = b->items;
    st->capacity = b->p.capacity;
    st->bytes = b->data.size;
    st->bits = b->p.bits;
    st->hashes = b->p.k;
    st->fpp_target = b->p.capacity > 0 ? amq_bloom_fpp_theory(b->p.bits, b->p.k, b->p.capacity)
                                       : 0.0;
    st->fill = (double)set / (double)b->p.bits;
    st->fpp_now = pow(st->fill, (double)b->p.k);
}

static const char *probe_name(uint32_t probe)
{
    switch (probe) {
    case AMQ_BLOOM_PROBE_GUAVA:
        return "guava";
    case AMQ_BLOOM_PROBE_REDISBLOOM:
        return "redisbloom";
    default:
        return "native";
    }
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_bloom *b = impl;

    return AMQ_FIELDS(fn, ctx, AMQ_U64("bits", b->p.bits), AMQ_U64("hashes", b->p.k),
                      AMQ_STR("probe", probe_name(b->p.probe)),
                      AMQ_U64("bits_set", amq_bloom_bits_set(b)),
                      AMQ_F64("estimated_items", amq_bloom_estimate_items(b)));
}

/* Parameter block (32 bytes, little-endian):
 *   u64 bits, u32 k, u32 probe, u64 capacity, f64 fpp. */
#define BLOOM_PARAMS_SIZE 32

static size_t op_params_size(const void *impl)
{
    (void)impl;
    return BLOOM_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_bloom *b = impl;
    amq_store64(out, b->p.bits);
    amq_store32(out + 8, b->p.k);
    amq_store32(out + 12, b->p.probe);
    amq_store64(out + 16, b->p.capacity);
    amq_storef64(out + 24, b->p.fpp);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_bloom *b = impl;
    return b->data.size;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_bloom *b = impl;
    return amq_sink_write(sink, b->data.data, b->data.size);
}

static int op_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    amq_bloom_params p;
    amq_bloom *b;
    uint64_t last;
    unsigned tail;
    int rc;

    if (a->params_len != BLOOM_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "Bloom parameter block is %zu bytes, expected %d",
                       a->params_len, BLOOM_PARAMS_SIZE);
    memset(&p, 0, sizeof p);
    p.bits = amq_load64(a->params);
    p.k = amq_load32(a->params + 8);
    p.probe = amq_load32(a->params + 12);
    p.capacity = amq_load64(a->params + 16);
    p.fpp = amq_loadf64(a->params + 24);
    p.hash_algo = a->hash_algo;
    p.seed = a->seed;
    rc = check_params(&p);
    if (rc != AMQ_OK)
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid Bloom parameters (bits %llu, probes %u, probe scheme %u,"
                       " hash %u)",
                       (unsigned long long)p.bits, p.k, p.probe, p.hash_algo);
    if (a->payload_len != amq_bloom_data_size(&p))
        return amq_err(err, AMQ_ECORRUPT,
                       "Bloom payload is %llu bytes, %llu bits need %zu",
                       (unsigned long long)a->payload_len, (unsigned long long)p.bits,
                       amq_bloom_data_size(&p));
    /* Bits past m in the last word must be zero. */
    tail = (unsigned)(p.bits & 63);
    if (tail != 0) {
        last = amq_load64(a->payload + a->payload_len - 8);
        if ((last >> tail) != 0)
            return amq_err(err, AMQ_ECORRUPT, "Bloom payload has bits set past bit %llu",
                           (unsigned long long)p.bits);
    }
    if (a->borrow)
        rc = amq_bloom_view(&p, a->payload, (size_t)a->payload_len, a->items, a->alloc, &b);
    else {
        rc = amq_bloom_new(&p, a->alloc, &b);
        if (rc == AMQ_OK) {
            memcpy(b->data.data, a->payload, (size_t)a->payload_len);
            b->items = a->items;
        }
    }
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot load Bloom filter: %s", amq_strerror(rc));
    *impl = b;
    return AMQ_OK;
}

const amq_kind_ops amq_bloom_ops = {
    .kind = AMQ_KIND_BLOOM,
    .name = "bloom",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .merge = op_merge,
    .intersect = op_intersect,
};
