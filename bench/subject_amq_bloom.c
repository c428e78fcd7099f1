/*
 * subject_amq_bloom.c - amq's classic Bloom filter (k probes over the whole
 * array), one key at a time; and in batches through the handle (adds of
 * hashes made in chunks, queries of packed keys: the loops that prefetch
 * each key's probes a few keys ahead, src/bloom.c).
 */
#define AMQ_ADVANCED_API 1 /* query-path selection, raw arrays */
#include "amq.h"
#include "bench.h"

static void *create(uint64_t n, double fpp)
{
    amq_bloom_params p;
    amq_bloom *b;
    if (amq_bloom_params_for(n, fpp, &p) != AMQ_OK || amq_bloom_new(&p, NULL, &b) != AMQ_OK)
        return NULL;
    return b;
}

static void *create_bpk(uint64_t n, double bpk)
{
    amq_bloom_params p;
    amq_bloom *b;
    if (amq_bloom_params_for(n, 0.01, &p) != AMQ_OK ||
        amq_bloom_bits_for_bpk(n, bpk, &p.bits, &p.k) != AMQ_OK)
        return NULL;
    /* The best k for the size (LevelDB's 0.69 b under-counts). */
    p.k = (uint32_t)(bpk * 0.6931471805599453 + 0.5);
    if (p.k < 1)
        p.k = 1;
    if (amq_bloom_new(&p, NULL, &b) != AMQ_OK)
        return NULL;
    return b;
}

static void destroy(void *f)
{
    amq_bloom_free(f);
}

static uint64_t insert(void *f, const uint64_t *keys, size_t n)
{
    size_t i;
    uint64_t failed = 0;
    for (i = 0; i < n; i++)
        failed += amq_bloom_add(f, &keys[i], 8) < 0;
    return failed;
}

static uint64_t query(void *f, const uint64_t *keys, size_t n)
{
    size_t i;
    uint64_t c = 0;
    for (i = 0; i < n; i++)
        c += (uint64_t)amq_bloom_contains(f, &keys[i], 8);
    return c;
}

static uint64_t bytes(const void *f)
{
    amq_bloom_params p;
    amq_bloom_get_params(f, &p);
    return amq_bloom_data_size(&p);
}

BENCH_SUBJECT(subject_amq_bloom) = {
    .name = "amq bloom (classic)",
    .family = "bloom",
    .peer = 0,
    .create = create,
    .destroy = destroy,
    .insert = insert,
    .query = query,
    .bytes = bytes,
    .create_bpk = create_bpk,
};

static void *handle_create(uint64_t n, double fpp)
{
    return bench_handle_new(AMQ_KIND_BLOOM, n, fpp);
}

#define CHUNK 4096

static uint64_t handle_insert_batch(void *f, const uint64_t *keys, size_t n)
{
    amq_hash128 h[CHUNK];
    uint64_t failed = 0;
    size_t i, j, m;
    for (i = 0; i < n; i += m) {
        m = n - i < CHUNK ? n - i : CHUNK;
        for (j = 0; j < m; j++)
            h[j] = amq_filter_hash(f, &keys[i + j], sizeof keys[0]);
        failed += amq_filter_add_batch(f, h, m, NULL) != AMQ_OK ? m : 0;
    }
    return failed;
}

BENCH_SUBJECT(subject_amq_bloom_batch) = {
    .name = "amq bloom (classic), batched",
    .family = "bloom",
    .peer = 0,
    .create = handle_create,
    .destroy = bench_handle_free,
    .insert = handle_insert_batch,
    .query = bench_handle_query_packed,
    .bytes = bench_handle_bytes,
    .no_sweep = 1, /* the row above's filter: only the loops differ */
};
