/*
 * aging_kind.c - the aging filter as a kind of the generic handle (kind.h):
 * the adapter (create from a config, clone, the entries, stats, describe)
 * and the codec (payload, load; the parameter block is aging.c's, which the
 * raw state of amq/advanced.h shares).  The algorithm is aging.c.
 */
#include <math.h>
#include <string.h>

#include "aging_internal.h"
#include "common/endian.h"
#include "common/error.h"
#include "kind.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_aging_info plan;
    amq_aging *a;
    uint64_t window = cfg->capacity, gen_ms = 0, g;
    int rc;

    if (cfg->window_ms != 0) {
        double w = cfg->rate * (double)cfg->window_ms / 1000.0;
        if (!(cfg->rate > 0.0) || !(w >= 1.0 && w <= 281474976710656.0))
            return amq_err(err, AMQ_ERANGE,
                           "cannot size an aging filter for a window of %llu ms at %g adds per"
                           " second (the rate must be positive and the window hold 1 to 2^48"
                           " adds)",
                           (unsigned long long)cfg->window_ms, cfg->rate);
        window = (uint64_t)ceil(w);
    } else if (cfg->rate != 0.0) {
        return amq_err(err, AMQ_EINVAL, "an aging filter's rate needs a window in milliseconds");
    }
    rc = amq_aging_info_for(window, cfg->fpp, &plan);
    if (rc != AMQ_OK)
        return amq_err(err, rc,
                       "cannot size an aging filter for a window of %llu adds at false-positive"
                       " rate %g (the window must be 1 to 2^48 adds, the rate in [1e-12, 0.5],"
                       " the filter at most 2^46 bytes)",
                       (unsigned long long)window, cfg->fpp);
    g = plan.gen_size;
    if (cfg->window_ms != 0) {
        /* l generations of gen_ms cover the window; gen_size is what the
         * rate brings in one of them. */
        double gd;
        gen_ms = div_ceil(cfg->window_ms, plan.l);
        gd = ceil(cfg->rate * (double)gen_ms / 1000.0);
        g = gd < 1.0 ? 1 : (uint64_t)gd;
        plan.blocks = (uint64_t)ceil((double)g * (double)plan.blocks / (double)plan.gen_size);
        if (plan.blocks == 0)
            plan.blocks = 1;
    }
    a = amq_aging_impl_shell(cfg->alloc);
    if (a == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    a->time_mode = cfg->window_ms != 0;
    a->k = plan.k;
    a->l = plan.l;
    a->slices = plan.k + plan.l;
    amq_aging_impl_choose_mask(a);
    a->blocks = plan.blocks;
    a->gen_size = g;
    a->gen_ms = gen_ms;
    a->capacity = window;
    a->window_ms = cfg->window_ms;
    a->hash_algo = cfg->hash_algo;
    a->seed = cfg->seed;
    a->fpp = amq_aging_fpp_bound(a->k, a->l, (double)g / (double)a->blocks);
    rc = amq_aging_impl_check(a);
    if (rc != AMQ_OK) {
        amq_aging_impl_free(a);
        return amq_err(err, AMQ_EOVERFLOW, "an aging filter for this window is too large");
    }
    rc = amq_region_alloc(&a->data, &a->alloc, data_size(a));
    if (rc != AMQ_OK) {
        amq_aging_impl_free(a);
        return amq_err(err, AMQ_ENOMEM, "out of memory for an aging filter of %llu bytes",
                       (unsigned long long)(plan.blocks * (plan.k + plan.l) * 8));
    }
    *impl = a;
    return AMQ_OK;
}

static void op_destroy(void *impl)
{
    amq_aging_impl_free(impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    const amq_aging *src = impl;
    amq_aging *a = amq_aging_impl_shell(alloc);
    amq_allocator keep;
    int rc;

    if (a == NULL)
        return AMQ_ENOMEM;
    keep = a->alloc;
    *a = *src;
    a->alloc = keep;
    memset(&a->data, 0, sizeof a->data);
    rc = amq_region_copy(&a->data, &a->alloc, src->data.data, src->data.size);
    if (rc != AMQ_OK) {
        amq_aging_impl_free(a);
        return AMQ_ENOMEM;
    }
    *out = a;
    return AMQ_OK;
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_aging *a = impl;
    *algo = a->hash_algo;
    *seed = a->seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    return amq_aging_impl_add(impl, h);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    const amq_aging *a = impl;
    return amq_aging_impl_find_run(a, h, a->slices);
}

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return amq_aging_impl_add_batch(impl, h, n, added);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    amq_aging_impl_contains_batch(impl, h, n, out);
}

static int op_clear(void *impl)
{
    amq_aging *a = impl;
    memset(a->data.data, 0, a->data.size);
    a->head = 0;
    a->in_gen = 0;
    a->adds = 0;
    if (!a->time_mode)
        a->generation = 0;
    return AMQ_OK;
}

static int op_is_view(const void *impl)
{
    const amq_aging *a = impl;
    return amq_region_is_borrowed(&a->data);
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_aging *a = impl;
    double fill;

    st->items = a->adds;
    st->capacity = a->capacity;
    st->bytes = a->data.size;
    st->bits = a->data.size * 8;
    st->hashes = a->k;
    st->fpp_target = a->fpp;
    st->fpp_now = amq_aging_impl_fpp_now(a, &fill);
    st->fill = fill;
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_aging *a = impl;
    amq_aging_info in;
    int rc;

    amq_aging_impl_info(a, &in);
    rc = AMQ_FIELDS(fn, ctx, AMQ_STR("aging_by", a->time_mode ? "time" : "count"),
                    AMQ_U64("slices_k", a->k), AMQ_U64("slices_l", a->l),
                    AMQ_U64("blocks", a->blocks), AMQ_U64("generation_size", a->gen_size),
                    AMQ_U64("window", in.window), AMQ_U64("horizon", in.horizon));
    if (rc == 0 && a->time_mode)
        rc = AMQ_FIELDS(fn, ctx, AMQ_U64("generation_ms", a->gen_ms),
                        AMQ_U64("window_ms", in.window_ms), AMQ_U64("horizon_ms", in.horizon_ms));
    if (rc == 0)
        rc = AMQ_FIELDS(fn, ctx, AMQ_U64("generation", a->generation),
                        AMQ_U64("in_generation", a->in_gen), AMQ_F64("fpp_bound", a->fpp));
    return rc;
}

/* ---- persistence -------------------------------------------------------------------------
 * The parameter block is amq_aging_impl_params / amq_aging_impl_parse
 * (aging.c); the payload is blocks * (k + l) u64 words, little-endian,
 * block-major.
 */
static size_t op_params_size(const void *impl)
{
    (void)impl;
    return AMQ_AGING_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    amq_aging_impl_params(impl, out);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_aging *a = impl;
    return a->data.size;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_aging *a = impl;
    uint8_t buf[4096];
    size_t off, len, i;
    int rc;

    if (amq_aging_impl_raw_ok())
        return amq_sink_write(sink, a->data.data, a->data.size);
    for (off = 0; off < a->data.size; off += len) {
        len = a->data.size - off < sizeof buf ? a->data.size - off : sizeof buf;
        for (i = 0; i < len; i += 8)
            amq_store64(buf + i, words(a)[(off + i) / 8]);
        rc = amq_sink_write(sink, buf, len);
        if (rc != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int op_load(const amq_load_args *args, void **impl, amq_errinfo *err)
{
    amq_aging *a;
    size_t i;
    int rc;

    rc = amq_aging_impl_parse(args->params, args->params_len, args->hash_algo, args->seed,
                              args->alloc, &a, err);
    if (rc != AMQ_OK)
        return rc;
    if (args->items != a->adds) {
        /* the header's item count is the adds field: one value, stored twice */
        amq_err(err, AMQ_ECORRUPT, "aging item count %llu differs from its adds %llu",
                (unsigned long long)args->items, (unsigned long long)a->adds);
        amq_aging_impl_free(a);
        return AMQ_ECORRUPT;
    }
    if (args->payload_len != (uint64_t)data_size(a)) {
        amq_err(err, AMQ_ECORRUPT, "aging payload is %llu bytes, the geometry needs %llu",
                (unsigned long long)args->payload_len, (unsigned long long)data_size(a));
        amq_aging_impl_free(a);
        return AMQ_ECORRUPT;
    }
    if (args->borrow && ((uintptr_t)args->payload & 7) == 0 && amq_aging_impl_raw_ok()) {
        amq_region_borrow(&a->data, args->payload, (size_t)args->payload_len);
    } else {
        rc = amq_region_alloc(&a->data, &a->alloc, data_size(a));
        if (rc != AMQ_OK) {
            amq_aging_impl_free(a);
            return amq_err(err, AMQ_ENOMEM, "out of memory");
        }
        for (i = 0; i < a->data.size; i += 8)
            words(a)[i / 8] = amq_load64(args->payload + i);
    }
    *impl = a;
    return AMQ_OK;
}

const amq_kind_ops amq_aging_ops = {
    .kind = AMQ_KIND_AGING,
    .name = "aging",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
};
