/*
 * subject_scalable.c - benchmark subjects for the scalable Bloom filter:
 * RedisBloom's layout and the native one, both started at n / 16 so that
 * the measured filter has grown through five links, as a filter sized by
 * guess does; and RedisBloom's layout started at 1,000, as the expandable
 * kind's rows are (issue 44: a filter never sized).
 */
#define AMQ_ADVANCED_API 1 /* the typed handles (amq/advanced.h), called directly */
#include "amq.h"
#include "bench.h"

static void *sb_create_from(uint64_t capacity, double fpp, int redisbloom)
{
    amq_sbloom_params p;
    amq_sbloom *s;
    amq_sbloom_params_init(&p, redisbloom);
    p.capacity = capacity;
    p.fpp = fpp;
    if (amq_sbloom_new(&p, NULL, &s) != AMQ_OK)
        return NULL;
    return s;
}

static void *sb_create_rb(uint64_t n, double fpp)
{
    return sb_create_from(n / 16 > 0 ? n / 16 : 1, fpp, 1);
}

static void *sb_create_native(uint64_t n, double fpp)
{
    return sb_create_from(n / 16 > 0 ? n / 16 : 1, fpp, 0);
}

static void *sb_create_rb_1000(uint64_t n, double fpp)
{
    (void)n;
    return sb_create_from(1000, fpp, 1);
}

static void sb_destroy(void *f)
{
    amq_sbloom_free(f);
}

static uint32_t sb_algo(const void *f)
{
    amq_sbloom_params p;
    amq_sbloom_get_params(f, &p);
    return p.hash_algo;
}

static uint64_t sb_insert(void *f, const uint64_t *keys, size_t n)
{
    uint32_t algo = sb_algo(f);
    uint64_t failed = 0;
    size_t i;
    for (i = 0; i < n; i++)
        failed += amq_sbloom_add_hash(f, amq_hash_key(algo, 0, &keys[i], sizeof keys[i])) < 0;
    return failed;
}

static uint64_t sb_query(void *f, const uint64_t *keys, size_t n)
{
    uint32_t algo = sb_algo(f);
    uint64_t found = 0;
    size_t i;
    for (i = 0; i < n; i++)
        found += (uint64_t)amq_sbloom_contains_hash(
            f, amq_hash_key(algo, 0, &keys[i], sizeof keys[i]));
    return found;
}

static uint64_t sb_bytes(const void *f)
{
    amq_sbloom_info in;
    amq_sbloom_get_info(f, &in);
    return in.bytes;
}

BENCH_SUBJECT(amq_sbloom_rb_subject) = {
    .name = "amq scalable-bloom, RedisBloom layout, grown from n/16",
    .family = "scalable-bloom",
    .peer = 0,
    .create = sb_create_rb,
    .destroy = sb_destroy,
    .insert = sb_insert,
    .query = sb_query,
    .bytes = sb_bytes,
};

BENCH_SUBJECT(amq_sbloom_native_subject) = {
    .name = "amq scalable-bloom, native, grown from n/16",
    .family = "scalable-bloom",
    .peer = 0,
    .create = sb_create_native,
    .destroy = sb_destroy,
    .insert = sb_insert,
    .query = sb_query,
    .bytes = sb_bytes,
};

BENCH_SUBJECT(amq_sbloom_rb_1000_subject) = {
    .name = "amq scalable-bloom, RedisBloom layout, grown from 1,000",
    .family = "scalable-bloom",
    .peer = 0,
    .create = sb_create_rb_1000,
    .destroy = sb_destroy,
    .insert = sb_insert,
    .query = sb_query,
    .bytes = sb_bytes,
    .no_sweep = 1, /* the n/16 row's sweep shows the layout's rates */
};
