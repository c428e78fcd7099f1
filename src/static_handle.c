/*
 * static_handle.c - the static kinds (fuse, ribbon) above the generic
 * handle: the algorithm of a kind for amq_builder, the built filter
 * wrapped into a handle, and the batched query on a handle's packed keys.
 * static_filter.c, below filter.c, takes the algorithm from here.
 */
#include <string.h>

#include "amq/advanced.h"
#include "amq/static.h"
#include "common/error.h"
#include "static_filter.h"

int amq_static_builder_new(const amq_config *cfg, const char *tmpdir, size_t memory,
                           amq_static_builder **out, amq_errinfo *err)
{
    const amq_static_algo *algo;

    *out = NULL;
    if (cfg->kind == AMQ_KIND_FUSE)
        algo = &amq_fuse_algo;
    else if (cfg->kind == AMQ_KIND_RIBBON)
        algo = &amq_ribbon_algo;
    else
        return amq_err(err, AMQ_EKIND, "kind %u is not a static kind (fuse, ribbon)", cfg->kind);
    return amq_static_builder_start(algo, cfg, tmpdir, memory, out, err);
}

int amq_static_builder_finish(amq_static_builder *b, amq_filter **out, amq_errinfo *err)
{
    amq_static *s;
    amq_allocator a;
    int rc;

    *out = NULL;
    rc = amq_static_builder_build(b, &s, err);
    if (rc != AMQ_OK)
        return rc;
    a = s->alloc;
    rc = amq_filter_wrap(amq_kind_lookup(s->algo->kind), s, &a, out);
    /* the handle owns s, or freed it */
    if (rc != AMQ_OK)
        amq_err(err, rc, "out of memory");
    return rc;
}

int amq_fuse_view_get(const amq_filter *f, amq_fuse_view *v)
{
    const amq_static *s;

    if (amq_filter_kind(f) != AMQ_KIND_FUSE)
        return AMQ_EKIND;
    s = amq_filter_impl(f);
    memset(v, 0, sizeof *v);
    v->parts = s->vparts;
    v->pbits = s->pbits;
    v->bits = s->v1;
    v->arity = s->v2;
    v->xxh3_0 = s->hash_algo == AMQ_HASH_XXH3 && s->seed == 0;
    v->ms0 = s->hash_algo == AMQ_HASH_MULSHIFT && s->seed == 0;
    v->vms0 = s->hash_algo == AMQ_HASH_VMULSHIFT && s->seed == 0;
    v->plain = (v->xxh3_0 || v->ms0 || v->vms0) && s->pbits == 0 && s->parts[0].nomix;
    v->seglen = s->parts[0].seglen;
    v->data = s->parts[0].data;
    v->span = s->parts[0].span;
    v->filter = f;
    v->strided = (v->xxh3_0 || v->ms0 || v->vms0) && s->stride != 0;
    v->stride = s->stride;
    return AMQ_OK;
}

int amq_static_contains_batch_fixed(const amq_filter *f, const void *keys, size_t key_len,
                                    size_t n, uint8_t *out, uint64_t *count)
{
    if (!amq_kind_is_static(amq_filter_kind(f)))
        return AMQ_EKIND;
    return amq_filter_contains_batch_fixed(f, keys, key_len, n, out, count);
}
