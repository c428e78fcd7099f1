/*
 * kind.h - the table of operations every kind of filter provides to the
 * generic handle (filter.c).  Internal: not installed.
 *
 * A kind works on amq_hash128 values; it never sees keys, paths or the
 * container.  Persistence is split in two: the kind writes and reads its
 * parameter block and its payload, the container (common/container.c)
 * frames them with magic, version, checksums and alignment.
 */
#ifndef AMQ_KIND_H
#define AMQ_KIND_H

#include "amq.h"
#include "amq/filter.h"
#include "common/alloc.h"

/* Where payload bytes go when a filter is saved or serialized. */
typedef struct amq_sink {
    int (*write)(void *ctx, const void *data, size_t len);
    void *ctx;
} amq_sink;

static inline int amq_sink_write(amq_sink *s, const void *data, size_t len)
{
    return len == 0 ? AMQ_OK : s->write(s->ctx, data, len);
}

/* What a kind's load function receives from the container. */
typedef struct amq_load_args {
    const uint8_t *params; /* the parameter block */
    size_t params_len;
    const uint8_t *payload; /* 64-byte aligned when it comes from a file */
    uint64_t payload_len;
    uint32_t hash_algo;
    uint64_t seed;
    uint64_t items;
    int borrow; /* 1: keep pointers into payload (read-only view) */
    int trusted; /* 1: the payload checksum was not verified */
    const amq_allocator *alloc;
} amq_load_args;

typedef struct amq_kind_ops {
    uint32_t kind;
    const char *name;

    int (*create)(const amq_config *cfg, void **impl, amq_errinfo *err);
    void (*destroy)(void *impl);
    int (*clone)(const void *impl, const amq_allocator *alloc, void **out);

    void (*hash_spec)(const void *impl, uint32_t *algo, uint64_t *seed);
    int (*add)(void *impl, amq_hash128 h);
    int (*contains)(const void *impl, amq_hash128 h);
    int (*remove)(void *impl, amq_hash128 h);               /* NULL: unsupported */
    int (*add_batch)(void *impl, const amq_hash128 *h, size_t n, uint8_t *added); /* NULL: loop */
    void (*contains_batch)(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out);
    int (*merge)(void *dst, const void *src, amq_errinfo *err);     /* NULL: unsupported */
    int (*intersect)(void *dst, const void *src, amq_errinfo *err); /* NULL: unsupported */
    int (*clear)(void *impl);
    int (*is_view)(const void *impl);

    void (*stats)(const void *impl, amq_stats *st);
    int (*describe)(const void *impl, amq_field_fn fn, void *ctx);

    /* Persistence: params_size/params_write produce the parameter block,
     * payload_size/payload_write the payload; load reverses both and must
     * validate every byte of params and the payload's size. */
    size_t (*params_size)(const void *impl);
    void (*params_write)(const void *impl, uint8_t *out);
    uint64_t (*payload_size)(const void *impl);
    int (*payload_write)(const void *impl, amq_sink *sink);
    int (*load)(const amq_load_args *args, void **impl, amq_errinfo *err);

    /* Concurrency mode of adds (amq_filter_set_concurrent); NULL: the
     * kind's adds always need exclusive access. */
    int (*set_concurrent)(void *impl, int on);
} amq_kind_ops;

/* The kinds built into this library (defined in each kind's file). */
extern const amq_kind_ops amq_bloom_ops;
extern const amq_kind_ops amq_cuckoo_ops;
extern const amq_kind_ops amq_scuckoo_ops;
extern const amq_kind_ops amq_sbloom_ops;
extern const amq_kind_ops amq_blocked_ops;
extern const amq_kind_ops amq_partitioned_ops;
extern const amq_kind_ops amq_fuse_ops;
extern const amq_kind_ops amq_ribbon_ops;
extern const amq_kind_ops amq_aging_ops;

/* The kind's object inside a generic handle (for kinds' own public
 * functions that take an amq_filter). */
void *amq_filter_impl(const amq_filter *f);

/* Wraps a kind's object in a handle (ownership passes, also on failure). */
int amq_filter_wrap(const amq_kind_ops *ops, void *impl, const amq_allocator *alloc,
                    amq_filter **out);

/* Looks up a kind's table; NULL when unknown. */
const amq_kind_ops *amq_kind_lookup(uint32_t kind);

/* Helpers for describe functions. */
int amq_field_u64(amq_field_fn fn, void *ctx, const char *name, uint64_t v);
int amq_field_f64(amq_field_fn fn, void *ctx, const char *name, double v);
int amq_field_str(amq_field_fn fn, void *ctx, const char *name, const char *v);

#endif /* AMQ_KIND_H */
