/*
 * blocked_bloom_kind.c - the blocked Bloom filter as a kind of the generic
 * handle (kind.h): the adapter (create, the one-key entries, merge and
 * intersect, stats) and the codec (parameter block, payload, load).  The
 * algorithm is blocked_bloom.c.
 */
#include <math.h>
#include <string.h>

#include "blocked_bloom_internal.h"
#include "common/endian.h"
#include "common/error.h"
#include "kind.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_blocked_params p;
    amq_blocked *b;
    int rc;

    memset(&p, 0, sizeof p);
    if (cfg->bits > 0) {
        /* An exact geometry: whole blocks covering cfg->bits, k given or best. */
        p.blocks = cfg->bits / AMQ_BLOCKED_BLOCK_BITS + (cfg->bits % AMQ_BLOCKED_BLOCK_BITS != 0);
        p.k = cfg->k;
        if (p.k == 0) {
            double f;
            p.k = amq_blk_best_k(p.blocks, cfg->capacity > 0 ? cfg->capacity : 1, &f);
        }
        if (cfg->capacity > 0)
            p.fpp = amq_blocked_fpp_theory(p.blocks, p.k, cfg->capacity);
    } else if (cfg->bits_per_key != 0.0) { /* NaN and negatives: refused below */
        rc = amq_blocked_blocks_for_bpk(cfg->capacity, cfg->bits_per_key, &p.blocks, &p.k);
        if (rc != AMQ_OK)
            return amq_err(err, rc,
                           "cannot size a blocked Bloom filter for %llu items at %g bits per key",
                           (unsigned long long)cfg->capacity, cfg->bits_per_key);
        p.fpp = amq_blocked_fpp_theory(p.blocks, p.k, cfg->capacity);
    } else {
        rc = amq_blocked_blocks_for(cfg->capacity, cfg->fpp, &p.blocks, &p.k);
        if (rc != AMQ_OK)
            return amq_err(err, rc,
                           "cannot size a blocked Bloom filter for %llu items at false-positive"
                           " rate %g (capacity must be at least 1, the rate in (0, 1), and the"
                           " filter at most 2^34 blocks and 1000 bits per item)",
                           (unsigned long long)cfg->capacity, cfg->fpp);
        p.fpp = cfg->fpp;
    }
    p.capacity = cfg->capacity;
    p.hash_algo = cfg->hash_algo;
    p.seed = cfg->seed;
    rc = amq_blocked_new(&p, cfg->alloc, &b);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot create a blocked Bloom filter of %llu blocks: %s",
                       (unsigned long long)p.blocks, amq_strerror(rc));
    *impl = b;
    return AMQ_OK;
}

/* The entries that only forward to the family's functions. */
static void op_destroy(void *impl)
{
    amq_blocked_free((amq_blocked *)impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    return amq_blocked_clone((const amq_blocked *)impl, alloc, (amq_blocked **)out);
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_blocked *x = impl;
    *algo = x->p.hash_algo;
    *seed = x->p.seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    return amq_blocked_add_hash((amq_blocked *)impl, h);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    return amq_blocked_contains_hash((const amq_blocked *)impl, h);
}

static int op_clear(void *impl)
{
    return amq_blocked_clear((amq_blocked *)impl);
}

static int op_is_view(const void *impl)
{
    return amq_blocked_is_readonly((const amq_blocked *)impl);
}

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return amq_blocked_add_batch((amq_blocked *)impl, h, n, added, NULL);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    (void)amq_blocked_contains_batch((const amq_blocked *)impl, h, n, out, NULL);
}

static uint64_t op_contains_batch_fixed(const void *impl, const void *keys, size_t key_len,
                                        size_t n, uint8_t *out)
{
    uint64_t count = 0;
    (void)amq_blocked_contains_batch_fixed((const amq_blocked *)impl, keys, key_len, n, out,
                                           &count);
    return count;
}

static int op_set_concurrent(void *impl, int on)
{
    return amq_blocked_set_concurrent((amq_blocked *)impl, on);
}

/* The handle's one-key entries: straight to the filter's chosen ones. */
static int op_add_key(void *impl, const void *key, size_t len)
{
    amq_blocked *b = impl;
    return b->key_add(&b->one, key, len);
}

static int op_contains_key(const void *impl, const void *key, size_t len)
{
    const amq_blocked *b = impl;
    return b->key_query(&b->one.g, key, len);
}

static int op_merge(void *dst, const void *src, amq_errinfo *err)
{
    const char *why = amq_blk_geometry_difference(dst, src);
    if (why != NULL)
        return amq_err(err, AMQ_EINCOMPAT, "cannot merge blocked Bloom filters with %s", why);
    return amq_blocked_merge(dst, src);
}

static int op_intersect(void *dst, const void *src, amq_errinfo *err)
{
    const char *why = amq_blk_geometry_difference(dst, src);
    if (why != NULL)
        return amq_err(err, AMQ_EINCOMPAT, "cannot intersect blocked Bloom filters with %s",
                       why);
    return amq_blk_intersect(dst, src);
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_blocked *b = impl;

    st->items = amq_blocked_items(b);
    st->capacity = b->p.capacity;
    st->bytes = b->data.size;
    st->bits = b->p.blocks * AMQ_BLOCKED_BLOCK_BITS;
    st->hashes = b->p.k;
    st->fpp_target =
        b->p.capacity > 0 ? amq_blocked_fpp_theory(b->p.blocks, b->p.k, b->p.capacity) : 0.0;
    st->fill = (double)amq_blocked_bits_set(b) / (double)st->bits;
    st->fpp_now = amq_blocked_fpp_now(b);
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_blocked *b = impl;

    return AMQ_FIELDS(fn, ctx, AMQ_U64("blocks", b->p.blocks),
                      AMQ_U64("block_bits", AMQ_BLOCKED_BLOCK_BITS), AMQ_U64("hashes", b->p.k),
                      AMQ_U64("bits_set", amq_blocked_bits_set(b)),
                      AMQ_STR("query_path", b->simd->name));
}

/* Parameter block (32 bytes, little-endian):
 *   u64 blocks, u32 k, u32 probe scheme (0: the one in blocked_bloom.h),
 *   u64 capacity, f64 fpp. */
#define BLOCKED_PARAMS_SIZE 32

static size_t op_params_size(const void *impl)
{
    (void)impl;
    return BLOCKED_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_blocked *b = impl;
    amq_store64(out, b->p.blocks);
    amq_store32(out + 8, b->p.k);
    amq_store32(out + 12, 0);
    amq_store64(out + 16, b->p.capacity);
    amq_storef64(out + 24, b->p.fpp);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_blocked *b = impl;
    return b->data.size;
}

/* Streams the array in chunks copied with relaxed loads, so that a save
 * concurrent with adds is not a data race (it holds some of them). */
static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_blocked *b = impl;
    uint8_t buf[4096];
    size_t off, len;
    int rc;

    for (off = 0; off < b->data.size; off += len) {
        len = b->data.size - off < sizeof buf ? b->data.size - off : sizeof buf;
        amq_blk_copy_words(buf, b->data.data + off, len);
        rc = amq_sink_write(sink, buf, len);
        if (rc != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int op_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    amq_blocked_params p;
    amq_blocked *b;
    uint32_t scheme;
    int rc;

    if (a->params_len != BLOCKED_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "blocked Bloom parameter block is %zu bytes, expected %d",
                       a->params_len, BLOCKED_PARAMS_SIZE);
    memset(&p, 0, sizeof p);
    p.blocks = amq_load64(a->params);
    p.k = amq_load32(a->params + 8);
    scheme = amq_load32(a->params + 12);
    p.capacity = amq_load64(a->params + 16);
    p.fpp = amq_loadf64(a->params + 24);
    p.hash_algo = a->hash_algo;
    p.seed = a->seed;
    if (scheme != 0)
        return amq_err(err, AMQ_EVERSION, "blocked Bloom probe scheme %u is not supported", scheme);
    rc = amq_blk_check_params(&p);
    if (rc != AMQ_OK)
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid blocked Bloom parameters (blocks %llu, probes %u, fpp %g)",
                       (unsigned long long)p.blocks, p.k, p.fpp);
    if (a->payload_len != (uint64_t)amq_blocked_data_size(&p))
        return amq_err(err, AMQ_ECORRUPT,
                       "blocked Bloom payload is %llu bytes, %llu blocks need %llu",
                       (unsigned long long)a->payload_len, (unsigned long long)p.blocks,
                       (unsigned long long)p.blocks * AMQ_BLOCKED_BLOCK_BYTES);
    /* A view needs the 64-byte alignment that files give; bytes from
     * elsewhere are copied instead. */
    if (a->borrow && ((uintptr_t)a->payload & 63) == 0) {
        rc = amq_blocked_view(&p, a->payload, (size_t)a->payload_len, a->items, a->alloc, &b);
    } else {
        rc = amq_blocked_new(&p, a->alloc, &b);
        if (rc == AMQ_OK) {
            memcpy(b->data.data, a->payload, (size_t)a->payload_len);
            amq_blocked_set_items(b, a->items);
        }
    }
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot load blocked Bloom filter: %s", amq_strerror(rc));
    *impl = b;
    return AMQ_OK;
}

const amq_kind_ops amq_blocked_ops = {
    .kind = AMQ_KIND_BLOCKED,
    .name = "blocked",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .contains_batch_fixed = op_contains_batch_fixed,
    .merge = op_merge,
    .intersect = op_intersect,
    .set_concurrent = op_set_concurrent,
    .add_key = op_add_key,
    .contains_key = op_contains_key,
};
