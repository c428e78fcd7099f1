/*
 * bloom_kind.c - the classic Bloom filter as a kind of the generic handle
 * (kind.h): the adapter (create, merge and intersect with their messages,
 * the entries that turn the handle back into an amq_bloom) and the codec
 * (parameter block, payload, load).  The algorithm is bloom.c.
 */
#include <math.h>
#include <string.h>

#include "bloom_internal.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/mulshift.h"
#include "kind.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_bloom_params p;
    amq_bloom *b;
    int rc;

    /* Double hashing needs h2 independent of h1; mulshift's (and
     * mulmix's) h2 is h1 rotated, and counting keys then pass the target rate. */
    if (amq_ms_one_word(cfg->hash_algo))
        return amq_err(err, AMQ_EINVAL,
                       "a classic Bloom filter does not take hash %s (its probes need two"
                       " independent hash halves; %s has one): use xxh3",
                       amq_hash_algo_name(cfg->hash_algo), amq_hash_algo_name(cfg->hash_algo));
    memset(&p, 0, sizeof p);
    if (cfg->bits > 0) {
        p.bits = cfg->bits;
        p.k = cfg->k;
    } else if (cfg->k != 0) {
        return amq_err(err, AMQ_EINVAL, "a Bloom filter's probe count k (%u) goes with its"
                       " number of bits, which is 0", cfg->k);
    } else if (cfg->bits_per_key != 0.0) {
        /* Any non-zero value, NaN and negatives included, asks for sizing
         * by bits per key: amq_bloom_bits_for_bpk refuses the absurd ones. */
        rc = amq_bloom_bits_for_bpk(cfg->capacity, cfg->bits_per_key, &p.bits, &p.k);
        if (rc != AMQ_OK)
            return amq_err(err, rc, "cannot size a Bloom filter for %llu items at %g bits per key",
                           (unsigned long long)cfg->capacity, cfg->bits_per_key);
        p.capacity = cfg->capacity;
        p.fpp = amq_bloom_fpp_theory(p.bits, p.k, cfg->capacity);
    } else {
        rc = amq_bloom_bits_for(cfg->capacity, cfg->fpp, &p.bits, &p.k);
        if (rc != AMQ_OK && cfg->capacity > 0 && cfg->fpp > 0.0 && cfg->fpp < 1.0 &&
            -log2(cfg->fpp) > AMQ_BLOOM_MAX_K + 0.5)
            return amq_err(err, rc,
                           "a Bloom filter at false-positive rate %g would make %.0f probes a "
                           "key; it makes at most %u (rates down to about 1.2e-77)",
                           cfg->fpp, -log2(cfg->fpp), AMQ_BLOOM_MAX_K);
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
    return amq_bloom_contains_hash((const amq_bloom *)impl, h);
}

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return amq_bloom_add_hashes((amq_bloom *)impl, h, n, added);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    amq_bloom_contains_hashes((const amq_bloom *)impl, h, n, out);
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
    rc = amq_bloom_check_params(&p);
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
