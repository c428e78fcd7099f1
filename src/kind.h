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
#include "common/fields.h"

/* Where payload bytes go when a filter is saved or serialized.  write
 * appends to the payload (from its offset 0 on).  write_at puts bytes at a
 * payload offset out of that order, for a kind whose payload begins with
 * checksums of what follows and may change while it is written (adds in
 * concurrent mode): it writes a copy of its data, summing the copy, then
 * the head that records those sums.  The payload's own checksum is then
 * taken over the bytes as written, read back.  write_at is NULL where they
 * cannot be read back (a range of the serialized bytes).  items: the count
 * the kind's payload records, for the header (items_set 1), when the
 * handle's count read apart from the payload could disagree with it. */
typedef struct amq_sink {
    int (*write)(void *ctx, const void *data, size_t len);
    int (*write_at)(void *ctx, const void *data, size_t len, uint64_t offset);
    void *ctx;
    uint64_t items;
    int items_set;
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

/* A kind's one-key query entry (amq_filter_contains lands there). */
typedef int (*amq_contains_key_fn)(const void *impl, const void *key, size_t len);

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
    /* Optional: n keys of key_len bytes packed at keys, hashed inside the
     * query loop exactly as amq_filter_hash does; out may be NULL; returns
     * the number of 1 answers (NULL: the handle hashes a chunk at a time
     * into contains_batch). */
    uint64_t (*contains_batch_fixed)(const void *impl, const void *keys, size_t key_len, size_t n,
                                     uint8_t *out);
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

    /* Optional one-key entries for amq_filter_add / _contains (NULL: the
     * handle hashes the key and calls add / contains): the kind hashes the
     * key itself, exactly as amq_filter_hash does, on a path of its own
     * without the handle's call through amq_hash_key.  add_key is called
     * only on a writable handle. */
    int (*add_key)(void *impl, const void *key, size_t len);
    int (*contains_key)(const void *impl, const void *key, size_t len);
    /* Optional: the object's own one-key query entry, a body chosen for its
     * variant (fingerprint width, partitions, hash) when the handle is made;
     * used instead of contains_key: one indirect call per query, no tests.
     * *arg is what the entry is called with (impl unless the kind sets it:
     * a part of impl that saves the entry a load). */
    amq_contains_key_fn (*contains_key_of)(const void *impl, const void **arg);
    /* Optional: the work the kind spreads over its adds (a growth, a
     * doubling) done now, so that it holds one table; on an error the
     * work stops where it got to, every key in it still answering (NULL:
     * none). */
    int (*settle)(void *impl);
    /* Optional: why an add of h was refused with AMQ_EFULL, an amq_refusal
     * (amq_filter_refusal; NULL: the handle answers for the kind).  Cannot
     * fail. */
    uint32_t (*refusal)(const void *impl, amq_hash128 h);
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
extern const amq_kind_ops amq_expandable_ops;
extern const amq_kind_ops amq_quotient_ops;
extern const amq_kind_ops amq_pocket_ops;

/* The partitioned payload's index with its descriptive fields zeroed
 * (partitioned_kind.c), for amq_filter_equal. */
void amq_part_blank_index(uint8_t *payload, uint64_t len, uint64_t *arrays);

/* The kind's object inside a generic handle (for kinds' own public
 * functions that take an amq_filter). */
void *amq_filter_impl(const amq_filter *f);

/* Wraps a kind's object in a handle (ownership passes, also on failure). */
int amq_filter_wrap(const amq_kind_ops *ops, void *impl, const amq_allocator *alloc,
                    amq_filter **out);

/* Looks up a kind's table; NULL when unknown. */
const amq_kind_ops *amq_kind_lookup(uint32_t kind);

/* AMQ_OK, or AMQ_EINVAL with a message for cfg->threads other than 0 or 1
 * (no creation or build reads it: a count that would be ignored). */
int amq_config_check_threads(const amq_config *cfg, amq_errinfo *err);

/* ---- a kind's entries ------------------------------------------------------------
 * Most entries of a kind's table only turn the void * handle back into the
 * family's type and call its typed function; each is written out in the
 * kind's file as a function op_<entry> (op_destroy, op_clone, op_add, ...),
 * so that grep and ctags find every one of them.
 */
/* The entries every kind has, named alike in every kind's file (op_create,
 * op_destroy, ...; op_stats, op_describe, op_params_size, ... op_load).  A
 * kind's table is
 *   { .kind = ..., .name = ..., AMQ_KIND_CORE_OPS, AMQ_KIND_CODEC_OPS,
 *     and the optional entries it has (.remove, .add_batch, ...) };
 * an optional entry left out is NULL (unsupported, or a loop of the
 * one-key entry). */
#define AMQ_KIND_CORE_OPS                                                                          \
    .create = op_create, .destroy = op_destroy, .clone = op_clone, .hash_spec = op_hash_spec,     \
    .add = op_add, .contains = op_contains, .clear = op_clear, .is_view = op_is_view
#define AMQ_KIND_CODEC_OPS                                                                         \
    .stats = op_stats, .describe = op_describe, .params_size = op_params_size,                     \
    .params_write = op_params_write, .payload_size = op_payload_size,                              \
    .payload_write = op_payload_write, .load = op_load

/*
 * The item count of a union of Bloom-family arrays (merge): items a and b of
 * the two sides, est the estimate from the union's bits, changed whether the
 * OR set any bit the destination lacked.  A sum would count a key of both
 * sides twice (a filter merged with itself would double), so the count is
 * the estimate, kept within what the union can hold: at least the larger
 * side, at most both sides; and when the OR changed nothing (the source's
 * bits are already in, or both are empty) the union is the larger side.
 */
static inline uint64_t amq_union_items(uint64_t a, uint64_t b, double est, int changed)
{
    uint64_t lo = a > b ? a : b, hi = a > UINT64_MAX - b ? UINT64_MAX : a + b, n;

    if (!changed)
        return lo;
    n = !(est > 0.0) ? 0 : est >= 1.8e19 ? UINT64_MAX : (uint64_t)(est + 0.5);
    return n < lo ? lo : n > hi ? hi : n;
}

#endif /* AMQ_KIND_H */
