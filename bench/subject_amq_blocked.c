/*
 * subject_amq_blocked.c - amq's blocked Bloom filter, four ways:
 *  - one key at a time (amq_blocked_add / _contains), and the same through
 *    the generic handle (amq_filter_add / _contains);
 *  - batched (amq_blocked_add_batch_fixed / _contains_fixed: hashing ahead with a
 *    window of prefetches);
 *  - batched with the key used as its own hash (h1 = h2 = key), hashing
 *    excluded - how libfilter's published figures are measured (it takes
 *    a 64-bit hash);
 *  - built, as RocksDB builds its filters: amq_builder_add per key (it
 *    hashes the key and keeps the hash), then amq_builder_finish (sizes the
 *    filter for the keys and adds them in one prefetched pass).
 */
#include <stdlib.h>

#define AMQ_ADVANCED_API 1 /* query-path selection, raw arrays */
#include "amq.h"
#include "bench.h"

static void *create(uint64_t n, double fpp)
{
    amq_blocked_params p;
    amq_blocked *b;
    if (amq_blocked_params_for(n, fpp, &p) != AMQ_OK || amq_blocked_new(&p, NULL, &b) != AMQ_OK)
        return NULL;
    return b;
}

static void *create_bpk(uint64_t n, double bpk)
{
    amq_blocked_params p;
    amq_blocked *b;
    if (amq_blocked_params_for(n, 0.01, &p) != AMQ_OK ||
        amq_blocked_blocks_for_bpk(n, bpk, &p.blocks, &p.k) != AMQ_OK ||
        amq_blocked_new(&p, NULL, &b) != AMQ_OK)
        return NULL;
    return b;
}

static void destroy(void *f)
{
    amq_blocked_free(f);
}

static uint64_t bytes(const void *f)
{
    amq_blocked_params p;
    amq_blocked_get_params(f, &p);
    return amq_blocked_data_size(&p);
}

/* One key per call, as callers of the one-key API make them: the entry is
 * a constant of each row's inlined copy, so every row calls it directly. */
typedef int (*key_op)(void *f, const void *key, size_t len);

static inline __attribute__((always_inline)) uint64_t
run_keys(void *f, const uint64_t *keys, size_t n, key_op op, size_t key_len, int count_errors)
{
    size_t i;
    uint64_t c = 0, k[2];
    for (i = 0; i < n; i++) {
        /* 16-byte keys: the 8-byte key and a second word derived from it,
         * built in the loop (as every 16-byte subject builds them). */
        k[0] = keys[i];
        k[1] = keys[i] * BENCH_KEY16_MUL;
        int r = op(f, k, key_len);
        c += count_errors ? (uint64_t)(r < 0) : (uint64_t)r;
    }
    return c;
}

static int blocked_add(void *f, const void *key, size_t len) { return amq_blocked_add(f, key, len); }
static int blocked_contains(void *f, const void *key, size_t len)
{
    return amq_blocked_contains(f, key, len);
}
static int handle_add(void *f, const void *key, size_t len) { return amq_filter_add(f, key, len); }
static int handle_contains(void *f, const void *key, size_t len)
{
    return amq_filter_contains(f, key, len);
}

static uint64_t insert_single(void *f, const uint64_t *keys, size_t n)
{
    return run_keys(f, keys, n, blocked_add, 8, 1);
}

static uint64_t query_single(void *f, const uint64_t *keys, size_t n)
{
    return run_keys(f, keys, n, blocked_contains, 8, 0);
}

static uint64_t insert_single16(void *f, const uint64_t *keys, size_t n)
{
    return run_keys(f, keys, n, blocked_add, 16, 1);
}

static uint64_t query_single16(void *f, const uint64_t *keys, size_t n)
{
    return run_keys(f, keys, n, blocked_contains, 16, 0);
}

static uint64_t insert_batched(void *f, const uint64_t *keys, size_t n)
{
    return amq_blocked_add_batch_fixed(f, keys, 8, n, NULL, NULL) != AMQ_OK ? n : 0;
}

static uint64_t query_batched(void *f, const uint64_t *keys, size_t n)
{
    uint64_t maybe = 0;
    (void)amq_blocked_contains_batch_fixed(f, keys, 8, n, NULL, &maybe);
    return maybe;
}

static uint64_t insert_prehashed(void *f, const uint64_t *keys, size_t n)
{
    return amq_blocked_add_batch64(f, keys, n, NULL, NULL) != AMQ_OK ? n : 0;
}

static uint64_t query_prehashed(void *f, const uint64_t *keys, size_t n)
{
    uint64_t maybe = 0;
    (void)amq_blocked_contains_batch64(f, keys, n, NULL, &maybe);
    return maybe;
}

/* Through the generic handle (the stable API): the same filter, sized by
 * the same (n, rate). */
static void *handle_create(uint64_t n, double fpp)
{
    return bench_handle_new(AMQ_KIND_BLOCKED, n, fpp);
}

static uint64_t handle_insert(void *f, const uint64_t *keys, size_t n)
{
    return run_keys(f, keys, n, handle_add, 8, 1);
}

static uint64_t handle_query(void *f, const uint64_t *keys, size_t n)
{
    return run_keys(f, keys, n, handle_contains, 8, 0);
}

static uint64_t handle_insert16(void *f, const uint64_t *keys, size_t n)
{
    return run_keys(f, keys, n, handle_add, 16, 1);
}

static uint64_t handle_query16(void *f, const uint64_t *keys, size_t n)
{
    return run_keys(f, keys, n, handle_contains, 16, 0);
}

BENCH_SUBJECT(amq_blocked_single) = {
    .name = "amq blocked",
    .family = "blocked",
    .create = create,
    .destroy = destroy,
    .insert = insert_single,
    .query = query_single,
    .bytes = bytes,
};

BENCH_SUBJECT(amq_blocked_single16) = {
    .name = "amq blocked, 16-byte keys",
    .family = "blocked",
    .create = create,
    .destroy = destroy,
    .insert = insert_single16,
    .query = query_single16,
    .bytes = bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(amq_blocked_batched) = {
    .name = "amq blocked, batched",
    .family = "blocked",
    .create = create,
    .destroy = destroy,
    .insert = insert_batched,
    .query = query_batched,
    .bytes = bytes,
    .create_bpk = create_bpk,
};

BENCH_SUBJECT(amq_blocked_prehashed) = {
    .name = "amq blocked, batched, key as hash",
    .family = "blocked",
    .create = create,
    .destroy = destroy,
    .insert = insert_prehashed,
    .query = query_prehashed,
    .bytes = bytes,
};

BENCH_SUBJECT(amq_blocked_handle) = {
    .name = "amq blocked, handle",
    .family = "blocked",
    .create = handle_create,
    .destroy = bench_handle_free,
    .insert = handle_insert,
    .query = handle_query,
    .bytes = bench_handle_bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(amq_blocked_handle16) = {
    .name = "amq blocked, handle, 16-byte keys",
    .family = "blocked",
    .create = handle_create,
    .destroy = bench_handle_free,
    .insert = handle_insert16,
    .query = handle_query16,
    .bytes = bench_handle_bytes,
    .no_sweep = 1,
};

/* The builder: create makes it (untimed, as RocksDB's builder is made),
 * insert is amq_builder_add per key then amq_builder_finish, and queries ask
 * the filter it built.  No memory budget (SIZE_MAX): the hashes stay in
 * memory, as RocksDB keeps its own. */
typedef struct built {
    amq_builder *b;
    amq_filter *f;
    amq_config c; /* the sized builder's, made when insert starts */
} built;

static void *builder_create(uint64_t n, double fpp)
{
    amq_config c;
    built *s = calloc(1, sizeof *s);
    (void)n;
    if (s == NULL)
        return NULL;
    amq_config_init(&c, AMQ_KIND_BLOCKED);
    c.fpp = fpp;
    if (amq_builder_new(&c, NULL, SIZE_MAX, &s->b, NULL) != AMQ_OK) {
        free(s);
        return NULL;
    }
    return s;
}

static void builder_destroy(void *f)
{
    built *s = f;
    amq_builder_free(s->b);
    amq_filter_free(s->f);
    free(s);
}

static uint64_t builder_bytes(const void *f)
{
    const built *s = f;
    amq_stats st;
    if (s->f == NULL)
        return 0;
    amq_filter_stats(s->f, &st);
    return st.bytes;
}

static int builder_add(void *f, const void *key, size_t len)
{
    return amq_builder_add(((built *)f)->b, key, len);
}

static int built_contains(void *f, const void *key, size_t len)
{
    return amq_filter_contains(((built *)f)->f, key, len);
}

static inline __attribute__((always_inline)) uint64_t build_keys(void *f, const uint64_t *keys,
                                                                 size_t n, size_t key_len)
{
    built *s = f;
    uint64_t fails = run_keys(f, keys, n, builder_add, key_len, 1);
    return fails == 0 && s->f == NULL && amq_builder_finish(s->b, &s->f, NULL) == AMQ_OK ? 0 : n;
}

static uint64_t builder_insert(void *f, const uint64_t *keys, size_t n)
{
    return build_keys(f, keys, n, 8);
}

static uint64_t builder_insert16(void *f, const uint64_t *keys, size_t n)
{
    return build_keys(f, keys, n, 16);
}

static uint64_t built_query(void *f, const uint64_t *keys, size_t n)
{
    return ((built *)f)->f == NULL ? 0 : run_keys(f, keys, n, built_contains, 8, 0);
}

static uint64_t built_query16(void *f, const uint64_t *keys, size_t n)
{
    return ((built *)f)->f == NULL ? 0 : run_keys(f, keys, n, built_contains, 16, 0);
}

BENCH_SUBJECT(amq_blocked_builder) = {
    .name = "amq blocked, builder",
    .family = "blocked",
    .create = builder_create,
    .destroy = builder_destroy,
    .insert = builder_insert,
    .query = built_query,
    .bytes = builder_bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(amq_blocked_builder16) = {
    .name = "amq blocked, builder, 16-byte keys",
    .family = "blocked",
    .create = builder_create,
    .destroy = builder_destroy,
    .insert = builder_insert16,
    .query = built_query16,
    .bytes = builder_bytes,
    .no_sweep = 1,
};

/* The sized builder (amq_builder_new_sized for the n keys to come): made
 * inside the timed insert, since it makes the filter, as RocksDB's Finish
 * makes its own; then amq_builder_add per key and amq_builder_finish. */
static void *sized_create(uint64_t n, double fpp)
{
    built *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    amq_config_init(&s->c, AMQ_KIND_BLOCKED);
    s->c.fpp = fpp;
    s->c.capacity = n;
    return s;
}

static inline __attribute__((always_inline)) uint64_t sized_keys(void *f, const uint64_t *keys,
                                                                 size_t n, size_t key_len)
{
    built *s = f;
    if (s->b != NULL || amq_builder_new_sized(&s->c, &s->b, NULL) != AMQ_OK)
        return n;
    return build_keys(f, keys, n, key_len);
}

static uint64_t sized_insert(void *f, const uint64_t *keys, size_t n)
{
    return sized_keys(f, keys, n, 8);
}

static uint64_t sized_insert16(void *f, const uint64_t *keys, size_t n)
{
    return sized_keys(f, keys, n, 16);
}

BENCH_SUBJECT(amq_blocked_sized) = {
    .name = "amq blocked, sized builder",
    .family = "blocked",
    .create = sized_create,
    .destroy = builder_destroy,
    .insert = sized_insert,
    .query = built_query,
    .bytes = builder_bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(amq_blocked_sized16) = {
    .name = "amq blocked, sized builder, 16-byte keys",
    .family = "blocked",
    .create = sized_create,
    .destroy = builder_destroy,
    .insert = sized_insert16,
    .query = built_query16,
    .bytes = builder_bytes,
    .no_sweep = 1,
};
