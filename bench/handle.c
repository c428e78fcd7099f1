/*
 * handle.c - the generic handle (amq_filter, the stable API) as a row's
 * filter, for the subjects of several kinds that go through it: made for
 * (capacity, rate), freed, sized, and queried in the packed-key batch loop
 * (amq_filter_contains_batch_fixed: keys hashed ahead of their prefetches).
 */
#define AMQ_ADVANCED_API 1 /* amq_filter_contains_batch_fixed */
#include "amq.h"
#include "bench.h"

void *bench_handle_new(uint32_t kind, uint64_t capacity, double fpp)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_config_init(&cfg, kind);
    cfg.capacity = capacity;
    cfg.fpp = fpp;
    return amq_filter_new(&cfg, &f, NULL) == AMQ_OK ? f : NULL;
}

void bench_handle_free(void *f)
{
    amq_filter_free(f);
}

uint64_t bench_handle_bytes(const void *f)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    return st.bytes;
}

uint64_t bench_handle_query_packed(void *f, const uint64_t *keys, size_t n)
{
    uint64_t found = 0;
    (void)amq_filter_contains_batch_fixed(f, keys, sizeof keys[0], n, NULL, &found);
    return found;
}
