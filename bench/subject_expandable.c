/*
 * subject_expandable.c - benchmark subjects for the two kinds that need no
 * capacity, expandable and quotient: created for 1,000 keys whatever n is,
 * so that the measured filter has grown through every growth a user who
 * never sized it would see (issue 44); one key at a time, and queries in
 * batches (packed keys hashed in the prefetching loop:
 * amq_filter_contains_batch_fixed).
 */
#include <stdlib.h>

#define AMQ_ADVANCED_API 1 /* amq_filter_contains_batch_fixed */
#include "amq.h"
#include "bench.h"

#define EXP_START 1000

static void *grown_create(uint32_t kind, uint64_t n, double fpp)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_errinfo err;
    (void)n; /* never sized: that is the point */
    amq_config_init(&cfg, kind);
    cfg.capacity = EXP_START;
    cfg.fpp = fpp;
    return amq_filter_new(&cfg, &f, &err) == AMQ_OK ? f : NULL;
}

static void *ex_create(uint64_t n, double fpp)
{
    return grown_create(AMQ_KIND_EXPANDABLE, n, fpp);
}

static void *qf_create(uint64_t n, double fpp)
{
    return grown_create(AMQ_KIND_QUOTIENT, n, fpp);
}

static void ex_destroy(void *f)
{
    amq_filter_free(f);
}

/* A refused growth (AMQ_ELIMIT past the target) counts as failed inserts. */
static uint64_t ex_insert(void *f, const uint64_t *keys, size_t n)
{
    uint64_t failed = 0;
    size_t i;
    for (i = 0; i < n; i++)
        failed += amq_filter_add(f, &keys[i], sizeof keys[i]) < 0;
    return failed;
}

static uint64_t ex_query(void *f, const uint64_t *keys, size_t n)
{
    uint64_t found = 0;
    size_t i;
    for (i = 0; i < n; i++)
        found += (uint64_t)amq_filter_contains(f, &keys[i], sizeof keys[i]);
    return found;
}

/* Packed keys hashed inside the batch loop, as the blocked row's batch is. */
static uint64_t ex_query_batch(void *f, const uint64_t *keys, size_t n)
{
    uint64_t found = 0;
    (void)amq_filter_contains_batch_fixed(f, keys, sizeof keys[0], n, NULL, &found);
    return found;
}

static uint64_t ex_bytes(const void *f)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    return st.bytes;
}

/* A subject of a kind grown from 1,000: the lanes or entries are fixed, so a
 * target moves only the growth limit (no sweep of targets). */
#define GROWN_SUBJECT(var, label, create_fn, query_fn) \
    BENCH_SUBJECT(var) = {                             \
        .name = label,                                 \
        .family = "expandable",                        \
        .peer = 0,                                     \
        .create = create_fn,                           \
        .destroy = ex_destroy,                         \
        .insert = ex_insert,                           \
        .query = query_fn,                             \
        .bytes = ex_bytes,                             \
        .no_sweep = 1,                                 \
    }

GROWN_SUBJECT(amq_expandable_subject, "amq expandable, grown from 1,000", ex_create, ex_query);
GROWN_SUBJECT(amq_expandable_batch_subject, "amq expandable, grown from 1,000, batched", ex_create,
              ex_query_batch);
GROWN_SUBJECT(amq_quotient_subject, "amq quotient, grown from 1,000", qf_create, ex_query);
GROWN_SUBJECT(amq_quotient_batch_subject, "amq quotient, grown from 1,000, batched", qf_create,
              ex_query_batch);
