/*
 * subject_cuckoo.c - benchmark subjects for the cuckoo kinds: the native
 * cuckoo filter (one key at a time, and batched queries) and the scalable
 * cuckoo filter in its RedisBloom and native layouts.
 *
 * Keys are hashed with each filter's default: mulmix for the native
 * cuckoo filter, XXH3-128 for the native scalable one, MurmurHash64A for
 * the RedisBloom layout (which fixes it).
 */
#include <stdlib.h>

#define AMQ_ADVANCED_API 1 /* the typed handles (amq/advanced.h), called directly */
#include "amq.h"
#include "bench.h"


static amq_hash128 key_hash(uint32_t algo, uint64_t key)
{
    return amq_hash_key(algo, 0, &key, sizeof key);
}

/* ---- native cuckoo ------------------------------------------------------- */

static void *ck_create(uint64_t n, double fpp)
{
    amq_cuckoo_params p;
    amq_cuckoo *c;
    if (amq_cuckoo_params_for(n, fpp, 0, 0, &p) != AMQ_OK || amq_cuckoo_new(&p, NULL, &c) != AMQ_OK)
        return NULL;
    return c;
}

static void ck_destroy(void *f)
{
    amq_cuckoo_free(f);
}

/* 12-bit fingerprints in 4-slot buckets: the layout issue 20 compares with
 * efficient/cuckoofilter's (and its model's) at equal tag width. */
static void *ck_create_12_4(uint64_t n, double fpp)
{
    amq_cuckoo_params p;
    amq_cuckoo *c;
    if (amq_cuckoo_params_for(n, fpp, 12, 4, &p) != AMQ_OK || amq_cuckoo_new(&p, NULL, &c) != AMQ_OK)
        return NULL;
    return c;
}

/* The same layout in as many buckets as efficient/cuckoofilter takes for n
 * keys (the power of two at or above n / 4, doubled past 96 % load): the
 * two head to head at equal table size and load, where the default sizing
 * fills amq's table to ~95 % at every n. */
static void *ck_create_12_4_pow2(uint64_t n, double fpp)
{
    amq_cuckoo_params p;
    amq_cuckoo *c;
    if (amq_cuckoo_params_for(n, fpp, 12, 4, &p) != AMQ_OK)
        return NULL;
    p.buckets = bench_cuckoo_ref_buckets(n);
    return amq_cuckoo_new(&p, NULL, &c) == AMQ_OK ? c : NULL;
}

/* One key at a time through the public key API (the key hashed inside). */
static uint64_t ck_insert(void *f, const uint64_t *keys, size_t n)
{
    uint64_t failed = 0;
    size_t i;
    for (i = 0; i < n; i++)
        failed += amq_cuckoo_add(f, &keys[i], 8) != 1;
    return failed;
}

static uint64_t ck_query(void *f, const uint64_t *keys, size_t n)
{
    uint64_t found = 0;
    size_t i;
    for (i = 0; i < n; i++)
        found += (uint64_t)amq_cuckoo_contains(f, &keys[i], 8);
    return found;
}

/* Batched: the keys as they lie in memory (8 bytes each), hashed inside
 * the library a chunk at a time, as the blocked kind's packed-key batches. */
static uint64_t ck_insert_batched(void *f, const uint64_t *keys, size_t n)
{
    uint64_t ok = 0;
    (void)amq_cuckoo_add_batch_fixed(f, keys, sizeof *keys, n, NULL, &ok);
    return n - ok;
}

static uint64_t ck_query_batched(void *f, const uint64_t *keys, size_t n)
{
    uint64_t found = 0;
    (void)amq_cuckoo_contains_batch_fixed(f, keys, sizeof *keys, n, NULL, &found);
    return found;
}

static uint64_t ck_bytes(const void *f)
{
    return amq_cuckoo_bytes(f);
}

BENCH_SUBJECT(amq_cuckoo_subject) = {
    .name = "amq cuckoo",
    .family = "cuckoo",
    .peer = 0,
    .create = ck_create,
    .destroy = ck_destroy,
    .insert = ck_insert,
    .query = ck_query,
    .bytes = ck_bytes,
};

BENCH_SUBJECT(amq_cuckoo_12_4_subject) = {
    .name = "amq cuckoo 12-bit",
    .family = "cuckoo",
    .peer = 0,
    .create = ck_create_12_4,
    .destroy = ck_destroy,
    .insert = ck_insert,
    .query = ck_query,
    .bytes = ck_bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(amq_cuckoo_12_4_pow2_subject) = {
    .name = "amq cuckoo 12-bit, the reference's table size",
    .family = "cuckoo",
    .peer = 0,
    .create = ck_create_12_4_pow2,
    .destroy = ck_destroy,
    .insert = ck_insert,
    .query = ck_query,
    .bytes = ck_bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(amq_cuckoo_batched_subject) = {
    .name = "amq cuckoo, batched",
    .family = "cuckoo",
    .peer = 0,
    .create = ck_create,
    .destroy = ck_destroy,
    .insert = ck_insert_batched,
    .query = ck_query_batched,
    .bytes = ck_bytes,
};

BENCH_SUBJECT(amq_cuckoo_12_4_batched_subject) = {
    .name = "amq cuckoo 12-bit, batched",
    .family = "cuckoo",
    .peer = 0,
    .create = ck_create_12_4,
    .destroy = ck_destroy,
    .insert = ck_insert_batched,
    .query = ck_query_batched,
    .bytes = ck_bytes,
    .no_sweep = 1,
};

/* The sized builder (amq_builder_new_sized for the n keys, 12-bit
 * fingerprints in 4-slot buckets): one key per amq_builder_add call, which
 * keeps it and adds every 1024 through the batched add - a one-key insert
 * that answers nothing per key, as the reference's Add answers only "no
 * room".  Made inside the timed insert (it makes the filter); queries ask
 * the built filter one key at a time through the handle. */
typedef struct ck_built {
    amq_config c;
    amq_builder *b;
    amq_filter *f;
} ck_built;

static void *ckb_create(uint64_t n, double fpp)
{
    ck_built *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    amq_config_init(&s->c, AMQ_KIND_CUCKOO);
    s->c.capacity = n;
    s->c.fpp = fpp;
    s->c.fingerprint_bits = 12;
    s->c.bucket_size = 4;
    return s;
}

static void ckb_destroy(void *f)
{
    ck_built *s = f;
    amq_builder_free(s->b);
    amq_filter_free(s->f);
    free(s);
}

static uint64_t ckb_insert(void *f, const uint64_t *keys, size_t n)
{
    ck_built *s = f;
    uint64_t failed = 0;
    size_t i;
    if (s->b != NULL || amq_builder_new_sized(&s->c, &s->b, NULL) != AMQ_OK)
        return n;
    for (i = 0; i < n; i++)
        failed += amq_builder_add(s->b, &keys[i], 8) != AMQ_OK;
    return failed == 0 && amq_builder_finish(s->b, &s->f, NULL) == AMQ_OK ? 0 : n;
}

static uint64_t ckb_query(void *f, const uint64_t *keys, size_t n)
{
    const ck_built *s = f;
    uint64_t found = 0;
    size_t i;
    if (s->f == NULL)
        return 0;
    for (i = 0; i < n; i++)
        found += (uint64_t)amq_filter_contains(s->f, &keys[i], 8);
    return found;
}

static uint64_t ckb_bytes(const void *f)
{
    const ck_built *s = f;
    amq_stats st;
    if (s->f == NULL)
        return 0;
    amq_filter_stats(s->f, &st);
    return st.bytes;
}

BENCH_SUBJECT(amq_cuckoo_12_4_sized_subject) = {
    .name = "amq cuckoo 12-bit, sized builder",
    .family = "cuckoo",
    .peer = 0,
    .create = ckb_create,
    .destroy = ckb_destroy,
    .insert = ckb_insert,
    .query = ckb_query,
    .bytes = ckb_bytes,
    .no_sweep = 1,
};

/* ---- scalable cuckoo -------------------------------------------------------- */

/* Sized for n in its first link; the rate is what the layout gives
 * (RedisBloom: 8-bit fingerprints, ~2 * 2 / 255 per link). */
static void *sc_create_mode(uint64_t n, int redisbloom)
{
    amq_scuckoo_params p;
    amq_scuckoo *c;
    amq_scuckoo_params_init(&p, redisbloom);
    p.capacity = n;
    if (amq_scuckoo_new(&p, NULL, &c) != AMQ_OK)
        return NULL;
    return c;
}

static void *sc_create_rb(uint64_t n, double fpp)
{
    (void)fpp;
    return sc_create_mode(n, 1);
}

static void *sc_create_native(uint64_t n, double fpp)
{
    (void)fpp;
    return sc_create_mode(n, 0);
}

static void sc_destroy(void *f)
{
    amq_scuckoo_free(f);
}

static uint32_t sc_algo(const void *f)
{
    amq_scuckoo_params p;
    amq_scuckoo_get_params(f, &p);
    return p.hash_algo;
}

static uint64_t sc_insert(void *f, const uint64_t *keys, size_t n)
{
    uint32_t algo = sc_algo(f);
    uint64_t failed = 0;
    size_t i;
    for (i = 0; i < n; i++)
        failed += amq_scuckoo_add_hash(f, key_hash(algo, keys[i])) != 1;
    return failed;
}

static uint64_t sc_query(void *f, const uint64_t *keys, size_t n)
{
    uint32_t algo = sc_algo(f);
    uint64_t found = 0;
    size_t i;
    for (i = 0; i < n; i++)
        found += (uint64_t)amq_scuckoo_contains_hash(f, key_hash(algo, keys[i]));
    return found;
}

static uint64_t sc_bytes(const void *f)
{
    amq_scuckoo_info in;
    amq_scuckoo_get_info(f, &in);
    return in.bytes;
}

BENCH_SUBJECT(amq_scuckoo_rb_subject) = {
    .name = "amq scalable-cuckoo, RedisBloom layout (8-bit, rate fixed by layout)",
    .family = "scalable-cuckoo",
    .peer = 0,
    .create = sc_create_rb,
    .destroy = sc_destroy,
    .insert = sc_insert,
    .query = sc_query,
    .bytes = sc_bytes,
};

BENCH_SUBJECT(amq_scuckoo_native_subject) = {
    .name = "amq scalable-cuckoo, native (16-bit, rate fixed by layout)",
    .family = "scalable-cuckoo",
    .peer = 0,
    .create = sc_create_native,
    .destroy = sc_destroy,
    .insert = sc_insert,
    .query = sc_query,
    .bytes = sc_bytes,
};
