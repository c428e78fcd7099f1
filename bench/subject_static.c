/*
 * subject_static.c - amq's static kinds (issue 21) in the main table:
 * binary fuse with 8-bit fingerprints 3-wise and 4-wise, 16-bit 3-wise,
 * and Ribbon at the table's target rate, each one key at a time
 * (amq_filter_contains) and batched (amq_filter_contains_batch over
 * chunks of 256 keys hashed just before).  RocksDB's real Ribbon is
 * subject_rocksdb.c's.
 *
 * "Insert" is the whole build: hashing the keys into an amq_builder (kept
 * in memory: no spill) and amq_builder_finish.  A fuse row's rate is its
 * fingerprint's (2^-8 or 2^-16) whatever the table's target.
 */
#include <stdlib.h>

#include "amq.h"
#include "bench.h"

#define CHUNK 256

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

static void *fuse8_create(uint64_t n, double fpp)
{
    (void)n;
    (void)fpp;
    return make(AMQ_KIND_FUSE, 8, 3, 1.0 / 256);
}

static void *fuse8x4_create(uint64_t n, double fpp)
{
    (void)n;
    (void)fpp;
    return make(AMQ_KIND_FUSE, 8, 4, 1.0 / 256);
}

static void *fuse16_create(uint64_t n, double fpp)
{
    (void)n;
    (void)fpp;
    return make(AMQ_KIND_FUSE, 16, 3, 1.0 / 65536);
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
    amq_hash128 h[CHUNK];
    amq_builder *b;
    size_t i, j, m;

    amq_filter_free(s->f);
    s->f = NULL;
    if (amq_builder_new(&s->cfg, NULL, SIZE_MAX, &b, NULL) != AMQ_OK)
        return n;
    for (i = 0; i < n; i += m) {
        m = n - i < CHUNK ? n - i : CHUNK;
        for (j = 0; j < m; j++)
            h[j] = amq_hash_key(s->cfg.hash_algo, s->cfg.seed, &keys[i + j], 8);
        if (amq_builder_add_batch(b, h, m) != AMQ_OK) {
            amq_builder_free(b);
            return n;
        }
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

static uint64_t query_batch(void *f, const uint64_t *keys, size_t n)
{
    static_subject *s = f;
    amq_hash128 h[CHUNK];
    uint8_t out[CHUNK];
    uint64_t c = 0;
    size_t i, j, m;
    if (s->f == NULL)
        return 0;
    for (i = 0; i < n; i += m) {
        m = n - i < CHUNK ? n - i : CHUNK;
        for (j = 0; j < m; j++)
            h[j] = amq_hash_key(s->cfg.hash_algo, s->cfg.seed, &keys[i + j], 8);
        amq_filter_contains_batch(s->f, h, m, out);
        for (j = 0; j < m; j++)
            c += out[j];
    }
    return c;
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

STATIC_ROW(subject_fuse8, "amq fuse8 3-wise", "fuse", fuse8_create, query_one, 0);
STATIC_ROW(subject_fuse8_batched, "amq fuse8 3-wise, batched", "fuse", fuse8_create, query_batch,
           0);
STATIC_ROW(subject_fuse8x4, "amq fuse8 4-wise", "fuse", fuse8x4_create, query_one, 0);
STATIC_ROW(subject_fuse8x4_batched, "amq fuse8 4-wise, batched", "fuse", fuse8x4_create,
           query_batch, 0);
STATIC_ROW(subject_fuse16, "amq fuse16 3-wise", "fuse", fuse16_create, query_one, 0);
STATIC_ROW(subject_fuse16_batched, "amq fuse16 3-wise, batched", "fuse", fuse16_create,
           query_batch, 0);
STATIC_ROW(subject_ribbon, "amq ribbon", "ribbon", ribbon_create, query_one, 1);
STATIC_ROW(subject_ribbon_batched, "amq ribbon, batched", "ribbon", ribbon_create, query_batch, 0);
