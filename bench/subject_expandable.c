/*
 * subject_expandable.c - benchmark subjects for the two kinds that need no
 * capacity, expandable and quotient: created for 1,000 keys whatever n is,
 * so that the measured filter has grown through every growth a user who
 * never sized it would see (issue 44); one key at a time, and queries in
 * batches (packed keys hashed in the prefetching loop: handle.c).
 */
#include <stdlib.h>

#include "amq.h"
#include "bench.h"

#define EXP_START 1000

/* n is never the capacity: a filter that was never sized is the point. */
static void *ex_create(uint64_t n, double fpp)
{
    (void)n;
    return bench_handle_new(AMQ_KIND_EXPANDABLE, EXP_START, fpp);
}

static void *qf_create(uint64_t n, double fpp)
{
    (void)n;
    return bench_handle_new(AMQ_KIND_QUOTIENT, EXP_START, fpp);
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

/* A subject of a kind grown from 1,000: the lanes or entries are fixed, so a
 * target moves only the growth limit (no sweep of targets). */
#define GROWN_SUBJECT(var, label, create_fn, query_fn) \
    BENCH_SUBJECT(var) = {                             \
        .name = label,                                 \
        .family = "expandable",                        \
        .peer = 0,                                     \
        .create = create_fn,                           \
        .destroy = bench_handle_free,                  \
        .insert = ex_insert,                           \
        .query = query_fn,                             \
        .bytes = bench_handle_bytes,                   \
        .no_sweep = 1,                                 \
    }

GROWN_SUBJECT(amq_expandable_subject, "amq expandable, grown from 1,000", ex_create, ex_query);
GROWN_SUBJECT(amq_expandable_batch_subject, "amq expandable, grown from 1,000, batched", ex_create,
              bench_handle_query_packed);
GROWN_SUBJECT(amq_quotient_subject, "amq quotient, grown from 1,000", qf_create, ex_query);
GROWN_SUBJECT(amq_quotient_batch_subject, "amq quotient, grown from 1,000, batched", qf_create,
              bench_handle_query_packed);
