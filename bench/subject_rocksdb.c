/*
 * subject_rocksdb.c - the real RocksDB filters (Debian's librocksdb-dev,
 * through bench/rocksdb_shim.h): FastLocalBloom (NewBloomFilterPolicy,
 * format_version 5) and Standard128Ribbon (NewRibbonFilterPolicy), one key
 * at a time and batched.
 *
 * Inserting is RocksDB's way of building a filter: AddKey for every key
 * (it hashes the key and keeps the hash), then Finish lays the filter out;
 * the insert time is both.  Queries go through the reader RocksDB makes
 * from the finished bytes: MayMatch per key (a virtual call, as a table
 * reader makes it), or MayMatch over batches of 32 keys (MultiGet's
 * batch).  Each filter gets the size amq's blocked filter takes for the
 * same (n, rate), so the rows compare equal memory; Ribbon gets the same
 * Bloom-equivalent bits per key (RocksDB's own unit for it) and so the
 * same target rate in less space.
 */
#ifdef AMQB_HAVE_ROCKSDB

#include <stdlib.h>

#define AMQ_ADVANCED_API 1 /* the typed handles (amq/advanced.h), called directly */
#include "amq.h"
#include "bench.h"
#include "rocksdb_shim.h"

typedef struct rocks_subject {
    amqb_rocks *r;
    double bpk;
    int ribbon;
} rocks_subject;

static void *rocks_new(double bpk, int ribbon)
{
    rocks_subject *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->bpk = bpk;
    s->ribbon = ribbon;
    s->r = amqb_rocks_new(ribbon ? "ribbon" : "bloom", bpk);
    if (s->r == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

/* The bits per key amq's blocked filter takes for (n, fpp). */
static double blocked_bpk(uint64_t n, double fpp)
{
    uint64_t blocks;
    uint32_t k;
    if (amq_blocked_blocks_for(n, fpp, &blocks, &k) != AMQ_OK)
        return -1;
    return (double)blocks * 512.0 / (double)n;
}

static void *bloom_create(uint64_t n, double fpp)
{
    double b = blocked_bpk(n, fpp);
    return b > 0 ? rocks_new(b, 0) : NULL;
}

static void *ribbon_create(uint64_t n, double fpp)
{
    double b = blocked_bpk(n, fpp);
    return b > 0 ? rocks_new(b, 1) : NULL;
}

static void *bloom_create_bpk(uint64_t n, double bpk)
{
    (void)n;
    return rocks_new(bpk, 0);
}

static void rocks_destroy(void *f)
{
    rocks_subject *s = f;
    amqb_rocks_free(s->r);
    free(s);
}

static uint64_t rocks_insert(void *f, const uint64_t *keys, size_t n)
{
    rocks_subject *s = f;
    size_t i;
    for (i = 0; i < n; i++)
        amqb_rocks_add(s->r, &keys[i], 8);
    return amqb_rocks_finish(s->r) == 0 ? 0 : n;
}

static uint64_t rocks_query(void *f, const uint64_t *keys, size_t n)
{
    rocks_subject *s = f;
    uint64_t c = 0;
    size_t i;
    if (amqb_rocks_bytes(s->r) == 0)
        return 0;
    for (i = 0; i < n; i++)
        c += (uint64_t)amqb_rocks_may_match(s->r, &keys[i], 8);
    return c;
}

static uint64_t rocks_insert16(void *f, const uint64_t *keys, size_t n)
{
    rocks_subject *s = f;
    uint64_t k[2];
    size_t i;
    for (i = 0; i < n; i++) {
        k[0] = keys[i];
        k[1] = keys[i] * BENCH_KEY16_MUL;
        amqb_rocks_add(s->r, k, 16);
    }
    return amqb_rocks_finish(s->r) == 0 ? 0 : n;
}

static uint64_t rocks_query16(void *f, const uint64_t *keys, size_t n)
{
    rocks_subject *s = f;
    uint64_t c = 0, k[2];
    size_t i;
    if (amqb_rocks_bytes(s->r) == 0)
        return 0;
    for (i = 0; i < n; i++) {
        k[0] = keys[i];
        k[1] = keys[i] * BENCH_KEY16_MUL;
        c += (uint64_t)amqb_rocks_may_match(s->r, k, 16);
    }
    return c;
}

static uint64_t rocks_query_batched(void *f, const uint64_t *keys, size_t n)
{
    rocks_subject *s = f;
    if (amqb_rocks_bytes(s->r) == 0)
        return 0;
    return amqb_rocks_may_match_batch(s->r, keys, 8, n, NULL);
}

static uint64_t rocks_bytes(const void *f)
{
    return amqb_rocks_bytes(((const rocks_subject *)f)->r);
}

BENCH_SUBJECT(subject_rocks_flb) = {
    .name = "RocksDB FastLocalBloom",
    .family = "blocked",
    .peer = 1,
    .create = bloom_create,
    .destroy = rocks_destroy,
    .insert = rocks_insert,
    .query = rocks_query,
    .bytes = rocks_bytes,
    .create_bpk = bloom_create_bpk,
};

BENCH_SUBJECT(subject_rocks_flb_batched) = {
    .name = "RocksDB FastLocalBloom, batch of 32",
    .family = "blocked",
    .peer = 1,
    .create = bloom_create,
    .destroy = rocks_destroy,
    .insert = rocks_insert,
    .query = rocks_query_batched,
    .bytes = rocks_bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(subject_rocks_flb16) = {
    .name = "RocksDB FastLocalBloom, 16-byte keys",
    .family = "blocked",
    .peer = 1,
    .create = bloom_create,
    .destroy = rocks_destroy,
    .insert = rocks_insert16,
    .query = rocks_query16,
    .bytes = rocks_bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(subject_rocks_ribbon) = {
    .name = "RocksDB Standard128Ribbon",
    .family = "ribbon",
    .peer = 1,
    .create = ribbon_create,
    .destroy = rocks_destroy,
    .insert = rocks_insert,
    .query = rocks_query,
    .bytes = rocks_bytes,
};

BENCH_SUBJECT(subject_rocks_ribbon_batched) = {
    .name = "RocksDB Standard128Ribbon, batch of 32",
    .family = "ribbon",
    .peer = 1,
    .create = ribbon_create,
    .destroy = rocks_destroy,
    .insert = rocks_insert,
    .query = rocks_query_batched,
    .bytes = rocks_bytes,
    .no_sweep = 1,
};

#else
/* Without RocksDB's headers the benchmark runs without these rows. */
typedef int amqb_no_rocksdb;
#endif
