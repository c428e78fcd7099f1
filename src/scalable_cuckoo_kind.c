/*
 * scalable_cuckoo_kind.c - the scalable cuckoo filter as a kind of the
 * generic handle (kind.h): the adapter (create, the entries over the
 * chain) and the codec (parameter block, the links' tables, load).
 * The algorithm is scalable_cuckoo.c.
 */
#include <math.h>
#include <string.h>

#include "common/endian.h"
#include "common/error.h"
#include "cuckoo_table.h"
#include "kind.h"
#include "scalable_cuckoo_internal.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_scuckoo_params p;
    amq_scuckoo *c;
    int rc;

    /* the rate is the fingerprints' (2 b / 2^f a link): fpp is not read, but a value no
     * kind takes is refused as every kind refuses it */
    if (!(cfg->fpp > 0.0 && cfg->fpp < 1.0))
        return amq_err(err, AMQ_ERANGE,
                       "false-positive rate %g out of range (0, 1); a scalable cuckoo filter's "
                       "rate follows its fingerprint bits, not fpp",
                       cfg->fpp);
    amq_scuckoo_params_init(&p, cfg->redisbloom != 0);
    p.capacity = cfg->capacity;
    if (cfg->bucket_size != 0)
        p.bucket_size = cfg->bucket_size;
    if (cfg->max_kicks != 0)
        p.max_kicks = cfg->max_kicks;
    if (cfg->expansion != 0)
        p.expansion = cfg->expansion;
    if (cfg->nonscaling)
        p.expansion = 0;
    if (cfg->fingerprint_bits != 0)
        p.fingerprint_bits = cfg->fingerprint_bits;
    if (!cfg->redisbloom) {
        p.hash_algo = cfg->hash_algo;
        p.seed = cfg->seed;
    }
    rc = amq_scuckoo_new(&p, cfg->alloc, &c);
    if (rc != AMQ_OK)
        return amq_err(err, rc,
                       "cannot create a scalable cuckoo filter (capacity %llu, bucket size %u,"
                       " fingerprint bits %u, max kicks %u, expansion %u): %s; the RedisBloom"
                       " layout needs 8-bit fingerprints, native mode 4 to 32; bucket"
                       " size 1-255, kicks 1-65535, expansion 0-32768",
                       (unsigned long long)p.capacity, p.bucket_size, p.fingerprint_bits,
                       p.max_kicks, p.expansion, amq_strerror(rc));
    *impl = c;
    return AMQ_OK;
}

/* The entries that only forward to the family's functions. */
static void op_destroy(void *impl)
{
    amq_scuckoo_free((amq_scuckoo *)impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    return amq_scuckoo_clone((const amq_scuckoo *)impl, alloc, (amq_scuckoo **)out);
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_scuckoo *x = impl;
    *algo = x->hash_algo;
    *seed = x->seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    return amq_scuckoo_add_hash((amq_scuckoo *)impl, h);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    return amq_scuckoo_contains_hash((const amq_scuckoo *)impl, h);
}

static int op_remove(void *impl, amq_hash128 h)
{
    return amq_scuckoo_remove_hash((amq_scuckoo *)impl, h);
}

static uint32_t op_refusal(const void *impl, amq_hash128 h)
{
    return amq_sc_refusal((const amq_scuckoo *)impl, h);
}

static int op_clear(void *impl)
{
    amq_scuckoo *c = impl;
    while (c->nf > 1)
        amq_sc_pop_subf(c);
    memset(c->f[0].data, 0, (size_t)amq_sc_table_bytes(c, sub_nb(&c->f[0])));
    c->items = 0;
    c->deletes = 0;
    c->full_links = 0;
    return AMQ_OK;
}

static int op_is_view(const void *impl)
{
    (void)impl;
    return 0;
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_scuckoo *c = impl;
    amq_scuckoo_info in;
    double load, q, miss = 1.0;
    uint32_t j;

    amq_scuckoo_get_info(c, &in);
    load = (double)c->items / (double)in.slots;
    q = c->redisbloom ? 1.0 / 255.0
                        : 1.0 / (double)((UINT64_C(1) << c->fingerprint_bits) - 1);
    for (j = 0; j < c->nf; j++)
        miss *= pow(1.0 - q, 2.0 * c->bucket_size * load);
    st->items = c->items;
    st->capacity = in.slots;
    st->bytes = in.bytes;
    st->fill = load;
    st->fpp_now = 1.0 - miss;
    st->fpp_target = -expm1(2.0 * c->bucket_size * log1p(-q));
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_scuckoo *c = impl;
    amq_scuckoo_info in;

    amq_scuckoo_get_info(c, &in);
    return AMQ_FIELDS(fn, ctx, AMQ_STR("layout", c->redisbloom ? "redisbloom" : "native"),
                      AMQ_U64("fingerprint_bits", in.fingerprint_bits),
                      AMQ_U64("bucket_size", in.bucket_size), AMQ_U64("buckets", in.num_buckets),
                      AMQ_U64("filters", in.links), AMQ_U64("max_filters", in.max_links),
                      AMQ_U64("max_iterations", in.max_kicks),
                      AMQ_U64("expansion", in.expansion), AMQ_U64("slots", in.slots),
                      AMQ_U64("deletes", in.deletes), AMQ_U64("redisbloom_size", in.info_bytes));
}

/* Parameter block (56 bytes, little-endian):
 *   u32 redisbloom, u32 fingerprint_bits, u32 bucket_size, u32 max_iterations,
 *   u32 expansion, u32 max_filters, u32 num_filters, u32 reserved (0),
 *   u64 num_buckets (first link), u64 deletes, u64 capacity.
 * Payload: the link arrays (packed, unpadded) concatenated. */
#define SC_PARAMS_SIZE 56

static size_t op_params_size(const void *impl)
{
    (void)impl;
    return SC_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_scuckoo *c = impl;
    amq_store32(out, c->redisbloom);
    amq_store32(out + 4, c->fingerprint_bits);
    amq_store32(out + 8, c->bucket_size);
    amq_store32(out + 12, c->max_iterations);
    amq_store32(out + 16, sc_expansion(c));
    amq_store32(out + 20, c->max_filters);
    amq_store32(out + 24, c->nf);
    amq_store32(out + 28, 0);
    amq_store64(out + 32, nb0_of(c));
    amq_store64(out + 40, c->deletes);
    amq_store64(out + 48, c->capacity);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_scuckoo *c = impl;
    amq_scuckoo_info in;
    amq_scuckoo_get_info(c, &in);
    return in.bytes;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_scuckoo *c = impl;
    uint32_t j;
    int rc;
    for (j = 0; j < c->nf; j++) {
        rc = amq_sink_write(sink, c->f[j].data, (size_t)amq_sc_sub_bytes(c, sub_nb(&c->f[j])));
        if (rc != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int op_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    amq_scuckoo_params p;
    amq_scuckoo *c;
    uint64_t nb0, slots, total = 0, off = 0, size, used;
    uint32_t nf, j, reserved;
    int rc;

    if (a->params_len != SC_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT,
                       "scalable cuckoo parameter block is %zu bytes, expected %d",
                       a->params_len, SC_PARAMS_SIZE);
    memset(&p, 0, sizeof p);
    p.redisbloom = amq_load32(a->params);
    p.fingerprint_bits = amq_load32(a->params + 4);
    p.bucket_size = amq_load32(a->params + 8);
    p.max_kicks = amq_load32(a->params + 12);
    p.expansion = amq_load32(a->params + 16);
    p.max_links = amq_load32(a->params + 20);
    nf = amq_load32(a->params + 24);
    reserved = amq_load32(a->params + 28);
    nb0 = amq_load64(a->params + 32);
    p.capacity = amq_load64(a->params + 48);
    p.hash_algo = a->hash_algo;
    p.seed = a->seed;
    if (p.redisbloom > 1 || reserved != 0 || p.max_links == 0 ||
        (p.redisbloom && (p.fingerprint_bits != 8 || a->hash_algo != AMQ_HASH_MURMUR64A ||
                          a->seed != 0)) ||
        !native_width(p.fingerprint_bits) ||
        amq_sc_check_scalars(p.bucket_size, p.max_kicks, p.expansion) != AMQ_OK ||
        (p.expansion != 0 && !is_pow2(p.expansion)) ||
        amq_sc_check_chain(p.bucket_size, p.expansion, nb0, nf, &slots) != AMQ_OK ||
        a->items > slots)
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid scalable cuckoo parameters (%u links of %llu buckets"
                       " of %u slots, expansion %u, %u-bit fingerprints)",
                       nf, (unsigned long long)nb0, p.bucket_size, p.expansion,
                       p.fingerprint_bits);
    c = amq_sc_shell(&p, a->alloc);
    if (c == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    for (j = 0, size = nb0; j < nf; j++, size *= p.expansion)
        total += amq_sc_sub_bytes(c, size); /* the shape was checked: no overflow */
    if (total != a->payload_len) {
        amq_scuckoo_free(c);
        return amq_err(err, AMQ_ECORRUPT, "scalable cuckoo payload is %llu bytes, expected %llu",
                       (unsigned long long)a->payload_len, (unsigned long long)total);
    }
    rc = amq_sc_build_chain(c, nb0, nf, NULL);
    if (rc != AMQ_OK) {
        amq_scuckoo_free(c);
        return amq_err(err, rc, "cannot load scalable cuckoo filter: %s", amq_strerror(rc));
    }
    for (j = 0; j < nf; j++) {
        size = amq_sc_sub_bytes(c, sub_nb(&c->f[j]));
        memcpy(c->f[j].data, a->payload + off, (size_t)size);
        off += size;
        if (!ct_tail_clean(c->f[j].data, (size_t)amq_sc_table_bytes(c, sub_nb(&c->f[j])), p.fingerprint_bits,
                           sub_nb(&c->f[j]) * p.bucket_size)) {
            amq_scuckoo_free(c);
            return amq_err(err, AMQ_ECORRUPT, "scalable cuckoo link %u has bits set past"
                           " its last slot", j);
        }
    }
    /* Trusted or not, the loaded copy is counted: a header count that is off
     * would otherwise be saved back into a file the verified open refuses. */
    c->items = a->trusted ? amq_sc_count_used(c) : a->items;
    c->deletes = amq_load64(a->params + 40);
    if (!a->trusted && (used = amq_sc_count_used(c)) != c->items) {
        amq_scuckoo_free(c);
        return amq_err(err, AMQ_ECORRUPT,
                       "scalable cuckoo filter records %llu items but holds %llu fingerprints",
                       (unsigned long long)a->items, (unsigned long long)used);
    }
    *impl = c;
    return AMQ_OK;
}

const amq_kind_ops amq_scuckoo_ops = {
    .kind = AMQ_KIND_SCALABLE_CUCKOO,
    .name = "scalable-cuckoo",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .remove = op_remove,
    .refusal = op_refusal,
};
