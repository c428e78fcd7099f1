/*
 * static_kind.c - the static kinds (fuse, ribbon) as kinds of the generic
 * handle (kind.h): the adapter (create refuses, clone, stats, describe) and
 * the codec (parameter block, the payload's partitions and index, load)
 * both kinds share, and their two tables, which differ in the query entries
 * (fuse.c's and ribbon.c's own) and the algorithm create and load pass on.
 * The shared builder is static_filter.c.
 */
#include <string.h>

#include "common/checked.h"
#include "common/endian.h"
#include "common/error.h"
#include "static_filter.h"

#define PARAMS_SIZE 32u
#define ENTRY_SIZE 32u

/* ---- the entries both tables share ----------------------------------------------------- */

static int static_create(const amq_static_algo *algo, amq_errinfo *err)
{
    return amq_err(err, AMQ_EUNSUPPORTED,
                   "%s filters are static: build them from all their keys at once "
                   "(amq_filter_build, amq_builder; amq build --type %s)",
                   algo->name, algo->name);
}

static void op_destroy(void *impl)
{
    amq_static_free(impl);
}

static int flatten(const amq_static *src, const amq_allocator *alloc, amq_static **out)
{
    amq_static *s;
    uint64_t off = 0, total = amq_static_data_size(src);
    uint32_t i;
    int rc;

    rc = amq_static_shell(src->algo, alloc, src->pbits, &s);
    if (rc != AMQ_OK)
        return rc;
    s->hash_algo = src->hash_algo;
    s->seed = src->seed;
    s->v1 = src->v1;
    s->v2 = src->v2;
    s->fpp = src->fpp;
    s->alpha = src->alpha;
    s->derive = src->derive;
    s->items = src->items;
    if (total > SIZE_MAX || amq_region_alloc(&s->payload, &s->alloc, (size_t)total) != AMQ_OK) {
        amq_static_free(s);
        return AMQ_ENOMEM;
    }
    for (i = 0; i < s->nparts; i++) {
        s->parts[i] = src->parts[i];
        s->parts[i].data = s->payload.data + off;
        memcpy(s->payload.data + off, src->parts[i].data, (size_t)src->parts[i].bytes);
        off += amq_static_align64(src->parts[i].bytes);
    }
    amq_static_fill_views(s);
    *out = s;
    return AMQ_OK;
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    amq_static *s;
    int rc = flatten(impl, alloc, &s);
    if (rc == AMQ_OK)
        *out = s;
    return rc;
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_static *s = impl;
    *algo = s->hash_algo;
    *seed = s->seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    (void)impl;
    (void)h;
    return AMQ_EUNSUPPORTED;
}

static int op_clear(void *impl)
{
    (void)impl;
    return AMQ_EUNSUPPORTED;
}

static int op_is_view(const void *impl)
{
    const amq_static *s = impl;
    return s->view;
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_static *s = impl;
    uint32_t i;
    uint64_t bytes = 0;
    for (i = 0; i < s->nparts; i++)
        bytes += s->parts[i].bytes;
    st->items = s->items;
    st->capacity = s->items;
    st->bytes = bytes;
    st->fpp_target = s->fpp;
    st->fpp_now = s->fpp;
    st->fill = 1.0;
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_static *s = impl;
    uint64_t retries = 0;
    uint32_t i;
    int rc;

    /* a partition's seed is the number of attempts that failed before it */
    for (i = 0; i < s->nparts; i++)
        retries += s->parts[i].seed;
    if ((rc = s->algo->describe(s, fn, ctx)) != 0 ||
        (rc = amq_field_u64(fn, ctx, "partitions", s->nparts)) != 0)
        return rc;
    return amq_field_u64(fn, ctx, "retries", retries);
}

/* Parameter block (32 bytes): pbits u32, v1 u32, v2 u32, derive u32 (fuse:
 * AMQ_FUSE_DERIVE_*; ribbon: 0), fpp f64, alpha f64. */
static size_t op_params_size(const void *impl)
{
    (void)impl;
    return PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_static *s = impl;
    amq_store32(out, s->pbits);
    amq_store32(out + 4, s->v1);
    amq_store32(out + 8, s->v2);
    amq_store32(out + 12, s->derive);
    amq_storef64(out + 16, s->fpp);
    amq_storef64(out + 24, s->alpha);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_static *s = impl;
    return amq_static_data_size(s) + (uint64_t)ENTRY_SIZE * s->nparts;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    static const uint8_t zeros[64];
    const amq_static *s = impl;
    uint8_t e[ENTRY_SIZE];
    uint64_t off = 0;
    uint32_t i;
    int rc;

    for (i = 0; i < s->nparts; i++) {
        const amq_static_part *p = &s->parts[i];
        if ((rc = amq_sink_write(sink, p->data, (size_t)p->bytes)) != AMQ_OK ||
            (rc = amq_sink_write(sink, zeros,
                                 (size_t)(amq_static_align64(p->bytes) - p->bytes))) != AMQ_OK)
            return rc;
    }
    for (i = 0; i < s->nparts; i++) {
        const amq_static_part *p = &s->parts[i];
        amq_store64(e, off);
        amq_store64(e + 8, p->items);
        amq_store32(e + 16, p->seed);
        amq_store32(e + 20, p->g[0]);
        amq_store32(e + 24, p->g[1]);
        amq_store32(e + 28, p->g[2]);
        if ((rc = amq_sink_write(sink, e, sizeof e)) != AMQ_OK)
            return rc;
        off += amq_static_align64(p->bytes);
    }
    return AMQ_OK;
}

static uint64_t f64_bits(double d)
{
    uint8_t b[8];
    amq_storef64(b, d);
    return amq_load64(b);
}

static int static_load(const amq_static_algo *algo, const amq_load_args *a, void **impl,
                       amq_errinfo *err)
{
    amq_static *s = NULL, check;
    amq_config cfg;
    const uint8_t *index;
    uint64_t off = 0, items = 0, isize, dsize, k;
    uint32_t pbits, derive, i;
    int rc;

    if (a->params_len != PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "%s parameter block is %zu bytes, expected %u",
                       algo->name, a->params_len, PARAMS_SIZE);
    pbits = amq_load32(a->params);
    derive = amq_load32(a->params + 12);
    if (pbits > AMQ_STATIC_MAX_PBITS)
        return amq_err(err, AMQ_ECORRUPT, "%s: invalid parameters (2^%u partitions)", algo->name,
                       pbits);
    /* Derivation 1 is written for XXH3 fuse filters only; 0 by every
     * earlier version. */
    if (derive != AMQ_FUSE_DERIVE_MIX &&
        !(derive == AMQ_FUSE_DERIVE_PLAIN && algo->kind == AMQ_KIND_FUSE &&
          amq_fuse_derive_plain_hash(a->hash_algo)))
        return amq_err(err, AMQ_ECORRUPT, "%s: unknown key derivation %u", algo->name, derive);
    /* The variant must be one the library would make itself. */
    memset(&check, 0, sizeof check);
    check.algo = algo;
    amq_config_init(&cfg, algo->kind);
    cfg.fingerprint_bits = amq_load32(a->params + 4);
    cfg.arity = amq_load32(a->params + 8);
    cfg.fpp = amq_loadf64(a->params + 16);
    if (!(cfg.fpp > 0.0 && cfg.fpp < 1.0) || algo->variant(&check, &cfg, NULL) != AMQ_OK ||
        check.v1 != amq_load32(a->params + 4) || check.v2 != amq_load32(a->params + 8) ||
        amq_load64(a->params + 16) != f64_bits(check.fpp) ||
        amq_load64(a->params + 24) != f64_bits(check.alpha))
        return amq_err(err, AMQ_ECORRUPT, "%s: invalid parameters", algo->name);
    isize = (uint64_t)ENTRY_SIZE << pbits;
    if (a->payload_len < isize)
        return amq_err(err, AMQ_ECORRUPT, "%s payload of %llu bytes cannot hold its index of %u "
                       "partitions", algo->name, (unsigned long long)a->payload_len, 1u << pbits);
    dsize = a->payload_len - isize;
    rc = amq_static_shell(algo, a->alloc, pbits, &s);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "out of memory");
    s->hash_algo = a->hash_algo;
    s->seed = a->seed;
    s->v1 = check.v1;
    s->v2 = check.v2;
    s->fpp = check.fpp;
    s->alpha = check.alpha;
    s->derive = derive;
    index = a->payload + dsize;
    for (i = 0; i < s->nparts; i++) {
        const uint8_t *e = index + (size_t)i * ENTRY_SIZE;
        amq_static_part *p = &s->parts[i];
        p->items = amq_load64(e + 8);
        p->seed = amq_load32(e + 16);
        p->mulseed = (uint64_t)p->seed * AMQ_STATIC_GOLDEN;
        p->nomix = amq_static_nomix(s, p->seed);
        p->hshift = p->nomix ? s->pbits : 0;
        p->g[0] = amq_load32(e + 20);
        p->g[1] = amq_load32(e + 24);
        p->g[2] = amq_load32(e + 28);
        p->bytes = algo->prepare(s, p);
        if (amq_load64(e) != off || p->bytes == 0 || p->bytes > dsize - off ||
            amq_static_align64(p->bytes) > dsize - off || p->items > p->slots) {
            rc = amq_err(err, AMQ_ECORRUPT, "%s partition %u: invalid index entry (offset %llu, "
                         "items %llu)", algo->name, i, (unsigned long long)amq_load64(e),
                         (unsigned long long)p->items);
            goto fail;
        }
        /* Padding is zero: one payload, one byte string (files compare). */
        for (k = off + p->bytes; k < off + amq_static_align64(p->bytes); k++)
            if (a->payload[k] != 0) {
                rc = amq_err(err, AMQ_ECORRUPT, "%s partition %u: padding is not zero",
                             algo->name, i);
                goto fail;
            }
        p->data = (const uint8_t *)(uintptr_t)off; /* made a pointer below */
        off += amq_static_align64(p->bytes);
        if (amq_add64(items, p->items, &items) != AMQ_OK) { /* forged counts must not wrap */
            rc = amq_err(err, AMQ_ECORRUPT, "%s: partition item counts overflow 64 bits",
                         algo->name);
            goto fail;
        }
    }
    if (off != dsize) {
        rc = amq_err(err, AMQ_ECORRUPT, "%s: %llu bytes of partitions, index says %llu",
                     algo->name, (unsigned long long)dsize, (unsigned long long)off);
        goto fail;
    }
    if (items != a->items) {
        rc = amq_err(err, AMQ_ECORRUPT, "%s: the header says %llu items, the partitions %llu",
                     algo->name, (unsigned long long)a->items, (unsigned long long)items);
        goto fail;
    }
    s->items = items;
    if (a->borrow) {
        amq_region_borrow(&s->payload, a->payload, (size_t)dsize);
        s->view = 1;
    } else if (amq_region_copy(&s->payload, &s->alloc, a->payload, (size_t)dsize) != AMQ_OK) {
        rc = amq_err(err, AMQ_ENOMEM, "out of memory");
        goto fail;
    }
    for (i = 0; i < s->nparts; i++)
        s->parts[i].data = s->payload.data + (uintptr_t)s->parts[i].data;
    amq_static_fill_views(s);
    *impl = s;
    return AMQ_OK;
fail:
    amq_static_free(s);
    return rc;
}

/* Packed keys a chunk of h1 at a time for the Ribbon kind (h2 unused). */
#define FIXED_CHUNK 256u

static uint64_t op_contains_batch_fixed(const void *impl, const void *keys, size_t key_len,
                                        size_t n, uint8_t *out)
{
    const amq_static *s = impl;
    const uint8_t *k = keys;
    amq_hash128 h[FIXED_CHUNK];
    uint8_t o[FIXED_CHUNK];
    uint64_t c = 0;
    size_t i, j, m;

    if (s->algo->kind == AMQ_KIND_FUSE)
        return amq_fuse_contains_fixed(s, keys, key_len, n, out);
    /* Ribbon: a chunk of h1 at a time into its batched query (h2 unused). */
    for (i = 0; i < n; i += m) {
        m = n - i < FIXED_CHUNK ? n - i : FIXED_CHUNK;
        for (j = 0; j < m; j++) {
            h[j].h1 = amq_static_key_h1(s, k + (i + j) * key_len, key_len);
            h[j].h2 = 0;
        }
        s->algo->contains_batch(s, h, m, out != NULL ? out + i : o);
        for (j = 0; j < m; j++)
            c += out != NULL ? out[i + j] : o[j];
    }
    return c;
}

/* ---- the two tables ------------------------------------------------------------------- */

#define AMQ_STATIC_OPS(KIND, NAME, CREATEFN, LOADFN, CONTAINS, BATCH, CONTAINS_KEY, KEY_OF)        \
    {                                                                                              \
        .kind = (KIND), .name = (NAME),                                                            \
        .create = CREATEFN,                                                                        \
        .destroy = op_destroy,                                                                     \
        .clone = op_clone,                                                                         \
        .hash_spec = op_hash_spec,                                                                 \
        .add = op_add,                                                                             \
        .contains = (CONTAINS),                                                                    \
        .remove = NULL,                                                                            \
        .add_batch = NULL,                                                                         \
        .contains_batch = (BATCH),                                                                 \
        .contains_batch_fixed = op_contains_batch_fixed,                                           \
        .merge = NULL,                                                                             \
        .intersect = NULL,                                                                         \
        .clear = op_clear,                                                                         \
        .is_view = op_is_view,                                                                     \
        .stats = op_stats,                                                                         \
        .describe = op_describe,                                                                   \
        .params_size = op_params_size,                                                             \
        .params_write = op_params_write,                                                           \
        .payload_size = op_payload_size,                                                           \
        .payload_write = op_payload_write,                                                         \
        .load = LOADFN,                                                                            \
        .contains_key = (CONTAINS_KEY),                                                            \
        .contains_key_of = (KEY_OF),                                                               \
    }

static int fuse_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    (void)cfg;
    (void)impl;
    return static_create(&amq_fuse_algo, err);
}

static int fuse_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    return static_load(&amq_fuse_algo, a, impl, err);
}

const amq_kind_ops amq_fuse_ops = AMQ_STATIC_OPS(AMQ_KIND_FUSE, "fuse", fuse_create, fuse_load,
                                                amq_fuse_ops_contains,
                                                amq_fuse_ops_contains_batch,
                                                amq_fuse_ops_contains_key, amq_fuse_key_entry);

static int rib_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    (void)cfg;
    (void)impl;
    return static_create(&amq_ribbon_algo, err);
}

static int rib_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    return static_load(&amq_ribbon_algo, a, impl, err);
}

const amq_kind_ops amq_ribbon_ops = AMQ_STATIC_OPS(AMQ_KIND_RIBBON, "ribbon", rib_create, rib_load,
                                                  amq_rib_ops_contains,
                                                  amq_rib_ops_contains_batch,
                                                  amq_rib_ops_contains_key, NULL);
