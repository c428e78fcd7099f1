/*
 * static_kind.c - the static kinds (fuse, ribbon) as kinds of the generic
 * handle (kind.h): their two tables, which share every entry but the
 * query's (fuse.c's and ribbon.c's own) and the algorithm their create and
 * load pass to static_filter.c.
 */
#include "static_filter.h"

#define AMQ_STATIC_OPS(KIND, NAME, CREATEFN, LOADFN, CONTAINS, BATCH, CONTAINS_KEY, KEY_OF) \
    {                                                      \
        .kind = (KIND), .name = (NAME),                    \
        .create = CREATEFN,                                \
        .destroy = amq_static_ops_destroy,                 \
        .clone = amq_static_ops_clone,                     \
        .hash_spec = amq_static_ops_hash_spec,             \
        .add = amq_static_ops_add,                         \
        .contains = (CONTAINS),                            \
        .remove = NULL,                                    \
        .add_batch = NULL,                                 \
        .contains_batch = (BATCH),                         \
        .merge = NULL,                                     \
        .intersect = NULL,                                 \
        .clear = amq_static_ops_clear,                     \
        .is_view = amq_static_ops_is_view,                 \
        .stats = amq_static_ops_stats,                     \
        .describe = amq_static_ops_describe,               \
        .params_size = amq_static_ops_params_size,         \
        .params_write = amq_static_ops_params_write,       \
        .payload_size = amq_static_ops_payload_size,       \
        .payload_write = amq_static_ops_payload_write,     \
        .load = LOADFN,                                    \
        .contains_key = (CONTAINS_KEY),                    \
        .contains_key_of = (KEY_OF),                       \
    }

static int fuse_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    (void)cfg;
    (void)impl;
    return amq_static_create(&amq_fuse_algo, err);
}

static int fuse_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    return amq_static_load(&amq_fuse_algo, a, impl, err);
}

const amq_kind_ops amq_fuse_ops = AMQ_STATIC_OPS(AMQ_KIND_FUSE, "fuse", fuse_create, fuse_load,
                                                amq_fuse_ops_contains,
                                                amq_fuse_ops_contains_batch,
                                                amq_fuse_ops_contains_key, amq_fuse_key_entry);

static int rib_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    (void)cfg;
    (void)impl;
    return amq_static_create(&amq_ribbon_algo, err);
}

static int rib_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    return amq_static_load(&amq_ribbon_algo, a, impl, err);
}

const amq_kind_ops amq_ribbon_ops = AMQ_STATIC_OPS(AMQ_KIND_RIBBON, "ribbon", rib_create, rib_load,
                                                  amq_rib_ops_contains,
                                                  amq_rib_ops_contains_batch,
                                                  amq_rib_ops_contains_key, NULL);
