/*
 * expandable-bench.c - the expandable kind grown from 1,000 keys, against
 * what a user who knew the size would have built (cuckoo and blocked
 * filters sized in advance), the RedisBloom-layout scalable Bloom filter
 * grown from the same start, and the peer taffy cuckoo filter
 * (jbapple/libfilter, when built in).  8-byte random keys, 1 % target.
 *
 *   expandable-bench [--max N] [--absent A]
 *
 * At every power of ten from 1e3 to N: the measured rate on A keys never
 * added (default 10M) and bits per key, beside the cuckoo filter sized for
 * that many keys; at N: ns per query (one key at a time and batched), ns
 * per add averaged over the whole growth.  Ratios are within this run.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amq.h"
#ifdef HAVE_TAFFY
#include "taffy_shim.h"
#endif

#define BATCH 4096

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Key i of the added set (stream 1) or of the absent set (stream 2). */
static uint64_t key(uint64_t i, uint64_t stream)
{
    return mix(i ^ stream << 56);
}

static amq_filter *make(uint32_t kind, uint64_t capacity, int redisbloom)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_errinfo err;
    amq_config_init(&cfg, kind);
    cfg.capacity = capacity;
    cfg.fpp = 0.01;
    cfg.redisbloom = (uint32_t)redisbloom;
    if (amq_filter_new(&cfg, &f, &err) != AMQ_OK) {
        fprintf(stderr, "expandable-bench: %s\n", err.msg);
        exit(1);
    }
    return f;
}

static void fill(amq_filter *f, uint64_t from, uint64_t to)
{
    uint64_t i, k;
    for (i = from; i < to; i++) {
        k = key(i, 1);
        if (amq_filter_add(f, &k, sizeof k) < 0) {
            fprintf(stderr, "expandable-bench: add %llu failed\n", (unsigned long long)i);
            exit(1);
        }
    }
}

static double rate(const amq_filter *f, uint64_t absent)
{
    uint64_t i, k, fp = 0;
    for (i = 0; i < absent; i++) {
        k = key(i, 2);
        fp += (uint64_t)amq_filter_contains(f, &k, sizeof k);
    }
    return (double)fp / (double)absent;
}

static double bits_per_key(const amq_filter *f, uint64_t n)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    return (double)st.bytes * 8.0 / (double)n;
}

/* ns per one-key query over q keys, half present, half absent. */
static double query_ns(const amq_filter *f, uint64_t n, uint64_t q, uint64_t *sink)
{
    uint64_t i, k, hits = 0;
    double t = now_s();
    for (i = 0; i < q; i++) {
        k = (i & 1) ? key(mix(i) % n, 1) : key(i, 3);
        hits += (uint64_t)amq_filter_contains(f, &k, sizeof k);
    }
    t = now_s() - t;
    *sink += hits;
    return t * 1e9 / (double)q;
}

/* ns per key of batched queries (keys hashed in the timed loop). */
static double batch_ns(const amq_filter *f, uint64_t n, uint64_t q, uint64_t *sink)
{
    static amq_hash128 h[BATCH];
    static uint8_t out[BATCH];
    uint64_t i, j, k, hits = 0;
    double t = now_s();
    for (i = 0; i < q; i += BATCH) {
        for (j = 0; j < BATCH; j++) {
            uint64_t x = i + j;
            k = (x & 1) ? key(mix(x) % n, 1) : key(x, 3);
            h[j] = amq_filter_hash(f, &k, sizeof k);
        }
        amq_filter_contains_batch(f, h, BATCH, out);
        for (j = 0; j < BATCH; j++)
            hits += out[j];
    }
    t = now_s() - t;
    *sink += hits;
    return t * 1e9 / (double)q;
}

int main(int argc, char **argv)
{
    uint64_t max = 10000000, absent = 10000000, n, p, sink = 0, q;
    amq_filter *e, *c, *b, *sb;
    double t_exp = 0.0, t, ex_rate, cu_rate;
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
            max = (uint64_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--absent") == 0 && i + 1 < argc)
            absent = (uint64_t)strtod(argv[++i], NULL);
        else {
            fprintf(stderr, "usage: expandable-bench [--max N] [--absent A]\n");
            return 2;
        }
    }
    printf("## Grown from 1,000 keys (8-byte random keys, 1 %% target, %llu absent keys)\n\n",
           (unsigned long long)absent);
    printf("| keys | expansions | measured fpp | bits/key | cuckoo sized in advance: fpp |"
           " bits/key | ratio |\n|---|---|---|---|---|---|---|\n");
    e = make(AMQ_KIND_EXPANDABLE, 1000, 0);
    for (n = 0, p = 1000; p <= max; p *= 10) {
        t = now_s();
        fill(e, n, p);
        t_exp += now_s() - t;
        n = p;
        ex_rate = rate(e, absent);
        {
            amq_stats st;
            amq_filter_stats(e, &st);
            printf("| %llu | %.0f | %.3f %% | %.2f |", (unsigned long long)n,
                   /* expansions from the start's 64 buckets */
                   __builtin_log2((double)st.bytes / 4096.0), ex_rate * 100.0,
                   bits_per_key(e, n));
        }
        if (n >= 10000) {
            c = make(AMQ_KIND_CUCKOO, n, 0);
            fill(c, 0, n);
            cu_rate = rate(c, absent);
            printf(" %.3f %% | %.2f | %.2fx |\n", cu_rate * 100.0, bits_per_key(c, n),
                   bits_per_key(e, n) / bits_per_key(c, n));
            amq_filter_free(c);
        } else {
            printf(" | | |\n");
        }
        fflush(stdout);
    }
    n = n < max ? n : max;
    q = 4000000;
    b = make(AMQ_KIND_BLOCKED, n, 0);
    t = now_s();
    fill(b, 0, n);
    t = now_s() - t;
    sb = make(AMQ_KIND_SCALABLE_BLOOM, 1000, 1);
    fill(sb, 0, n);
    printf("\n## At %llu keys: ns per operation\n\n| filter | add (amortized) | query, one key |"
           " query, batched | bits/key |\n|---|---|---|---|---|\n",
           (unsigned long long)n);
    printf("| expandable, grown from 1,000 | %.1f | %.1f | %.1f | %.2f |\n",
           t_exp * 1e9 / (double)n, query_ns(e, n, q, &sink), batch_ns(e, n, q, &sink),
           bits_per_key(e, n));
    printf("| blocked, sized in advance | %.1f | %.1f | %.1f | %.2f |\n", t * 1e9 / (double)n,
           query_ns(b, n, q, &sink), batch_ns(b, n, q, &sink), bits_per_key(b, n));
    printf("| scalable Bloom, RedisBloom layout, grown from 1,000 | | %.1f | | %.2f |\n",
           query_ns(sb, n, q / 4, &sink), bits_per_key(sb, n));
#ifdef HAVE_TAFFY
    {
        void *tf = taffy_new(4096);
        uint64_t j, k, hits = 0, fp = 0;
        double ta, tq;
        ta = now_s();
        for (j = 0; j < n; j++) {
            k = key(j, 1);
            taffy_add(tf, amq_hash_key(AMQ_HASH_XXH3, 0, &k, sizeof k).h1);
        }
        ta = now_s() - ta;
        tq = now_s();
        for (j = 0; j < q; j++) {
            k = (j & 1) ? key(mix(j) % n, 1) : key(j, 3);
            hits += (uint64_t)taffy_find(tf, amq_hash_key(AMQ_HASH_XXH3, 0, &k, sizeof k).h1);
        }
        tq = now_s() - tq;
        for (j = 0; j < absent; j++) {
            k = key(j, 2);
            fp += (uint64_t)taffy_find(tf, amq_hash_key(AMQ_HASH_XXH3, 0, &k, sizeof k).h1);
        }
        sink += hits;
        printf("| peer: taffy cuckoo (jbapple/libfilter), grown from 4 KiB | %.1f | %.1f | |"
               " %.2f (fpp %.3f %%) |\n",
               ta * 1e9 / (double)n, tq * 1e9 / (double)q,
               (double)taffy_bytes(tf) * 8.0 / (double)n, 100.0 * (double)fp / (double)absent);
        taffy_free(tf);
    }
#else
    printf("| peer: taffy cuckoo | not built (make bench-expandable LIBFILTER=path) | | | |\n");
#endif
    fprintf(stderr, "(%llu)\n", (unsigned long long)sink);
    amq_filter_free(e);
    amq_filter_free(b);
    amq_filter_free(sb);
    return 0;
}
