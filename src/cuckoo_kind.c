/*
 * cuckoo_kind.c - the cuckoo filter as a kind of the generic handle
 * (kind.h): the adapter (create, the entries that turn the handle back
 * into an amq_cuckoo), and the codec (parameter block, payload, load).
 */
#include "common/error.h"
#include "cuckoo_impl.h"
#include "kind.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_cuckoo_params p;
    amq_cuckoo *c;
    int rc;

    rc = amq_cuckoo_params_for(cfg->capacity, cfg->fpp, cfg->fingerprint_bits,
                               cfg->bucket_size, &p);
    if (rc != AMQ_OK && cfg->fingerprint_bits >= AMQ_CUCKOO_MIN_FINGERPRINT &&
        cfg->fingerprint_bits < AMQ_CUCKOO_MAX_FINGERPRINT) {
        /* the width given is what stands in the way: name the one the rate needs */
        uint32_t f;
        /* 1-slot buckets: when 2-slot ones take this width, the table's size is the cause */
        const int jam = cfg->bucket_size == 1 &&
                        amq_cuckoo_params_for(cfg->capacity, cfg->fpp, cfg->fingerprint_bits, 2,
                                              &p) == AMQ_OK;
        for (f = cfg->fingerprint_bits + 1; jam && f <= AMQ_CUCKOO_MAX_FINGERPRINT; f++)
            if (amq_cuckoo_params_for(cfg->capacity, cfg->fpp, f, 1, &p) == AMQ_OK)
                return amq_err(err, rc,
                               "1-slot buckets with %u-bit fingerprints jam before the load a "
                               "capacity of %llu promises (under 14 bits at any size, and past "
                               "2^(bits + 11) slots): give %u bits or more, or a bucket size of "
                               "2 or more",
                               cfg->fingerprint_bits, (unsigned long long)cfg->capacity, f);
        for (f = cfg->fingerprint_bits + 1; f <= AMQ_CUCKOO_MAX_FINGERPRINT; f++)
            if (amq_cuckoo_params_for(cfg->capacity, cfg->fpp, f, cfg->bucket_size, &p) ==
                AMQ_OK)
                return amq_err(err, rc,
                               "%u-bit fingerprints cannot reach false-positive rate %g: it "
                               "needs %u bits or more (or leave the width out)",
                               cfg->fingerprint_bits, cfg->fpp, f);
    }
    if (rc != AMQ_OK)
        return amq_err(err, rc,
                       "cannot size a cuckoo filter for %llu items at false-positive rate %g"
                       " (capacity must be at least 1, the rate in (0, 1) and above about"
                       " 1e-10 - lower rates need fingerprints over 32 bits: use a Bloom"
                       " kind - fingerprint bits 4 to 32, bucket size 1, 2, 4 or 8)",
                       (unsigned long long)cfg->capacity, cfg->fpp);
    if (cfg->max_kicks != 0)
        p.max_kicks = cfg->max_kicks;
    p.hash_algo = cfg->hash_algo;
    p.seed = cfg->seed;
    rc = amq_cuckoo_new(&p, cfg->alloc, &c);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot create a cuckoo filter of %llu buckets: %s",
                       (unsigned long long)p.buckets, amq_strerror(rc));
    *impl = c;
    return AMQ_OK;
}

/* The entries that only forward to the family's functions. */
static void op_destroy(void *impl)
{
    amq_cuckoo_free((amq_cuckoo *)impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    return amq_cuckoo_clone((const amq_cuckoo *)impl, alloc, (amq_cuckoo **)out);
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_cuckoo *x = impl;
    *algo = x->p.hash_algo;
    *seed = x->p.seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    return amq_cuckoo_add_hash((amq_cuckoo *)impl, h);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    return amq_cuckoo_contains_hash((const amq_cuckoo *)impl, h);
}

static int op_remove(void *impl, amq_hash128 h)
{
    return amq_cuckoo_remove_hash((amq_cuckoo *)impl, h);
}

static uint32_t op_refusal(const void *impl, amq_hash128 h)
{
    return amq_ck_refusal((const amq_cuckoo *)impl, h);
}

static int op_clear(void *impl)
{
    return amq_cuckoo_clear((amq_cuckoo *)impl);
}

static int op_is_view(const void *impl)
{
    return amq_cuckoo_is_readonly((const amq_cuckoo *)impl);
}

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return amq_cuckoo_add_batch((amq_cuckoo *)impl, h, n, added, NULL);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    (void)amq_cuckoo_contains_batch((const amq_cuckoo *)impl, h, n, out, NULL);
}

static uint64_t op_contains_batch_fixed(const void *impl, const void *keys, size_t key_len,
                                        size_t n, uint8_t *out)
{
    uint64_t count = 0;
    (void)amq_cuckoo_contains_batch_fixed((const amq_cuckoo *)impl, keys, key_len, n, out, &count);
    return count;
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_cuckoo *c = impl;
    double load = amq_cuckoo_load(c);

    st->items = c->items;
    st->capacity = c->p.capacity;
    st->bytes = c->data.size;
    st->fpp_target = c->p.fpp;
    st->fill = load;
    st->fpp_now = amq_cuckoo_fpp_theory(c->p.fingerprint_bits, c->p.bucket_size, load);
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_cuckoo *c = impl;

    return AMQ_FIELDS(fn, ctx, AMQ_U64("fingerprint_bits", c->p.fingerprint_bits),
                      AMQ_U64("bucket_size", c->p.bucket_size), AMQ_U64("buckets", c->p.buckets),
                      AMQ_U64("slots", amq_cuckoo_slots(c)), AMQ_U64("max_kicks", c->p.max_kicks),
                      AMQ_F64("load", amq_cuckoo_load(c)),
                      AMQ_STR("full", c->victim_fp != 0 ? "yes" : "no"));
}

/* Parameter block (48 bytes, little-endian):
 *   u32 fingerprint_bits, u32 bucket_size, u64 buckets, u32 max_kicks,
 *   u32 victim_fp, u64 victim_bucket, u64 capacity, f64 fpp. */
#define CUCKOO_PARAMS_SIZE 48

static size_t op_params_size(const void *impl)
{
    (void)impl;
    return CUCKOO_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_cuckoo *c = impl;
    amq_store32(out, c->p.fingerprint_bits);
    amq_store32(out + 4, c->p.bucket_size);
    amq_store64(out + 8, c->p.buckets);
    amq_store32(out + 16, c->p.max_kicks);
    amq_store32(out + 20, c->victim_fp);
    amq_store64(out + 24, c->victim_bucket);
    amq_store64(out + 32, c->p.capacity);
    amq_storef64(out + 40, c->p.fpp);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_cuckoo *c = impl;
    return c->data.size;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_cuckoo *c = impl;
    return amq_sink_write(sink, c->data.data, c->data.size);
}

static int op_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    amq_cuckoo_params p;
    amq_cuckoo *c;
    uint32_t vfp;
    uint64_t vb, slots, used;
    int rc;

    if (a->params_len != CUCKOO_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "cuckoo parameter block is %zu bytes, expected %d",
                       a->params_len, CUCKOO_PARAMS_SIZE);
    memset(&p, 0, sizeof p);
    p.fingerprint_bits = amq_load32(a->params);
    p.bucket_size = amq_load32(a->params + 4);
    p.buckets = amq_load64(a->params + 8);
    p.max_kicks = amq_load32(a->params + 16);
    vfp = amq_load32(a->params + 20);
    vb = amq_load64(a->params + 24);
    p.capacity = amq_load64(a->params + 32);
    p.fpp = amq_loadf64(a->params + 40);
    p.hash_algo = a->hash_algo;
    p.seed = a->seed;
    if (amq_cuckoo_params_check(&p) != AMQ_OK || amq_ck_check_victim(&p, vfp, vb) != AMQ_OK)
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid cuckoo parameters (fingerprint bits %u, bucket size %u,"
                       " buckets %llu, max kicks %u, victim %u in bucket %llu)",
                       p.fingerprint_bits, p.bucket_size, (unsigned long long)p.buckets,
                       p.max_kicks, vfp, (unsigned long long)vb);
    slots = p.buckets * p.bucket_size;
    if (a->payload_len != amq_cuckoo_data_size(&p))
        return amq_err(err, AMQ_ECORRUPT, "cuckoo payload is %llu bytes, expected %zu",
                       (unsigned long long)a->payload_len, amq_cuckoo_data_size(&p));
    if (a->items > slots + (vfp != 0))
        return amq_err(err, AMQ_ECORRUPT, "cuckoo filter claims %llu items in %llu slots",
                       (unsigned long long)a->items, (unsigned long long)slots);
    if (!ct_tail_clean(a->payload, a->payload_len, p.fingerprint_bits, slots))
        return amq_err(err, AMQ_ECORRUPT, "cuckoo payload has bits set past the last slot");
    if (!a->trusted) {
        used = ct_count_used(a->payload, p.fingerprint_bits, slots) + (vfp != 0);
        if (used != a->items)
            return amq_err(err, AMQ_ECORRUPT,
                           "cuckoo filter records %llu items but holds %llu fingerprints",
                           (unsigned long long)a->items, (unsigned long long)used);
    }
    if (a->borrow) {
        rc = amq_cuckoo_view(&p, a->payload, (size_t)a->payload_len, a->items, vfp, vb,
                             a->alloc, &c);
    } else {
        rc = amq_cuckoo_new(&p, a->alloc, &c);
        if (rc == AMQ_OK) {
            memcpy(c->data.data, a->payload, (size_t)a->payload_len);
            /* A trusted header's count is not believed for a copy that may be
             * added to and saved: a wrong one would be written back, and the
             * verified open refuses the file.  The copy read every byte
             * already, so the count costs no extra pass over the disk. */
            c->items = a->trusted ? ct_count_used(c->data.data, p.fingerprint_bits, slots) +
                                        (vfp != 0)
                                  : a->items;
            amq_ck_set_victim(c, vfp, vb);
        }
    }
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot load cuckoo filter: %s", amq_strerror(rc));
    *impl = c;
    return AMQ_OK;
}

/* The handle's one-key entries: the filter's own, which hash the key as the
 * handle would (its hash spec is the filter's) without the handle's call
 * through amq_hash_key and its table of hash functions. */
static int op_add_key(void *impl, const void *key, size_t len)
{
    return add_key((amq_cuckoo *)impl, key, len);
}

static int op_contains_key(const void *impl, const void *key, size_t len)
{
    return contains_key((const amq_cuckoo *)impl, key, len);
}

const amq_kind_ops amq_cuckoo_ops = {
    .kind = AMQ_KIND_CUCKOO,
    .name = "cuckoo",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .remove = op_remove,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .contains_batch_fixed = op_contains_batch_fixed,
    .add_key = op_add_key,
    .contains_key = op_contains_key,
    .refusal = op_refusal,
};

