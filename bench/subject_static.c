/*
 * subject_static.c - amq's static kinds (issue 21) in the main table:
 * binary fuse with 8-bit fingerprints 4-wise and Ribbon at the table's
 * target rate, each one key at a time through the generic handle
 * (amq_filter_contains, a library call per key: the rows say ", handle")
 * and batched (amq_static_contains_batch_fixed over the packed keys, hashed
 * in its loop).  RocksDB's real Ribbon is subject_rocksdb.c's.  fuse8 and
 * fuse16 3-wise are not here: the binary fuse section (bench/static/
 * fuse_bench.c) times their builds, the inline one-key query, the handle and
 * the batched query beside the reference's code, and the same rows here
 * would be the same work again.
 *
 * "Insert" is the whole build: amq_builder_add per key (which hashes it;
 * kept in memory: no spill) and amq_builder_finish.  A fuse row's rate is its
 * fingerprint's (2^-8 or 2^-16) whatever the table's target.
 */
#include <stdlib.h>

#define AMQ_ADVANCED_API 1 /* amq_static_contains_batch_fixed */
#include "amq.h"
#include "bench.h"

typedef struct static_subject {
    amq_config cfg;
    amq_filter *f;
} static_subject;

static void *make(uint32_t kind, unsigned bits, unsigned arity, double fpp)
{
    static_subject *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    amq_config_init(&s->cfg, kind);
    s->cfg.fingerprint_bits = bits;
    s->cfg.arity = arity;
    s->cfg.fpp = fpp;
    return s;
}

static void *fuse8x4_create(uint64_t n, double fpp)
{
    (void)n;
    (void)fpp;
    return make(AMQ_KIND_FUSE, 8, 4, 1.0 / 256);
}

static void *ribbon_create(uint64_t n, double fpp)
{
    (void)n;
    return make(AMQ_KIND_RIBBON, 0, 0, fpp);
}

static void destroy(void *f)
{
    static_subject *s = f;
    amq_filter_free(s->f);
    free(s);
}

static uint64_t build(void *f, const uint64_t *keys, size_t n)
{
    static_subject *s = f;
    amq_builder *b;
    size_t i;

    amq_filter_free(s->f);
    s->f = NULL;
    if (amq_builder_new(&s->cfg, NULL, SIZE_MAX, &b, NULL) != AMQ_OK)
        return n;
    for (i = 0; i < n; i++)
        if (amq_builder_add(b, &keys[i], 8) != AMQ_OK) {
            amq_builder_free(b);
            return n;
        }
    if (amq_builder_finish(b, &s->f, NULL) != AMQ_OK)
        s->f = NULL;
    amq_builder_free(b);
    return s->f != NULL ? 0 : n;
}

static uint64_t query_one(void *f, const uint64_t *keys, size_t n)
{
    static_subject *s = f;
    uint64_t c = 0;
    size_t i;
    if (s->f == NULL)
        return 0;
    for (i = 0; i < n; i++)
        c += (uint64_t)amq_filter_contains(s->f, &keys[i], 8);
    return c;
}

/* Batched: amq_static_contains_batch_fixed over the packed 8-byte keys (each
 * hashed in the query's prefetching loop). */
static uint64_t query_batch(void *f, const uint64_t *keys, size_t n)
{
    static_subject *s = f;
    uint64_t c = 0;
    if (s->f == NULL)
        return 0;
    return amq_static_contains_batch_fixed(s->f, keys, 8, n, NULL, &c) == AMQ_OK ? c : 0;
}

static uint64_t bytes(const void *f)
{
    const static_subject *s = f;
    amq_stats st;
    if (s->f == NULL)
        return 0;
    amq_filter_stats(s->f, &st);
    return st.bytes;
}

/* Fuse rows have one rate per fingerprint width: out of the rate sweep. */
#define STATIC_ROW(var, label, fam, mk, q, sweep)                                       \
    BENCH_SUBJECT(var) = {                                                              \
        .name = (label), .family = (fam), .create = (mk), .destroy = destroy,           \
        .insert = build, .query = (q), .bytes = bytes, .no_sweep = !(sweep),            \
    }

STATIC_ROW(subject_fuse8x4, "amq fuse8 4-wise, handle", "fuse", fuse8x4_create, query_one, 0);
STATIC_ROW(subject_fuse8x4_batched, "amq fuse8 4-wise, batched", "fuse", fuse8x4_create,
           query_batch, 0);
STATIC_ROW(subject_ribbon, "amq ribbon, handle", "ribbon", ribbon_create, query_one, 1);
STATIC_ROW(subject_ribbon_batched, "amq ribbon, batched", "ribbon", ribbon_create, query_batch, 0);
