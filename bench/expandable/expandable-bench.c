/*
 * expandable-bench.c - the expandable kind grown from 1,000 keys, against
 * what a user who knew the size would have built (cuckoo and blocked
 * filters sized in advance), the RedisBloom-layout scalable Bloom filter
 * grown from the same start, and the peer taffy cuckoo filter
 * (jbapple/libfilter, when built in).  8-byte random keys, 1 % target.
 *
 *   expandable-bench [--max N] [--absent A] [--grow-only | --speed]
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

#define BENCH_NAME "expandable-bench"
#include "amq.h"
#include "bench_common.h"
#ifdef HAVE_TAFFY
#include "taffy_shim.h"
#endif

#define BATCH 4096

/* The machine's load average (Linux), or "?" : the figures are only as
 * quiet as the machine was. */
static void print_load(const char *when)
{
    double l1, l5, l15;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL && fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
        printf("Load average %s: %.2f %.2f %.2f (1, 5, 15 minutes)\n\n", when, l1, l5, l15);
    else
        printf("Load average %s: unknown\n\n", when);
    if (f != NULL)
        fclose(f);
}

static amq_filter *make(uint32_t kind, uint64_t capacity, int redisbloom)
{
    return make_at(kind, capacity, redisbloom, 0.01);
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

/* The cuckoo filter sized in advance for n keys: at the 1 % target, and the
 * bits per key it needs at the rate the expandable filter measured (the
 * criterion's "same measured rate", cuckoo_need); the ratio is the
 * expandable's bits over that. */
static void cuckoo_columns(uint64_t n, uint64_t absent, double ex_rate, double ex_bits)
{
    double r1, b1, ra, ba, rb, bb, need;
    cuckoo_at(n, absent, 0.01, &r1, &b1);
    need = cuckoo_need(n, absent, ex_rate, &ra, &ba, &rb, &bb);
    printf(" %.3f %% | %.2f | %.3f %% / %.3f %% | %.2f / %.2f | %.2f | %.2fx |\n", r1 * 100.0, b1,
           ra * 100.0, rb * 100.0, ba, bb, need, ex_bits / need);
}

int main(int argc, char **argv)
{
    uint64_t max = 10000000, absent = 10000000, n, p, sink = 0, q;
    amq_filter *e, *b, *sb;
    double t_exp = 0.0, t, ex_rate, worst = 0.0;
    int i, grow_only = 0, speed = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
            max = (uint64_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--absent") == 0 && i + 1 < argc)
            absent = (uint64_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--grow-only") == 0)
            grow_only = 1;
        else if (strcmp(argv[i], "--speed") == 0) /* the timings at N only: no cuckoo, no peer */
            speed = 1;
        else {
            fprintf(stderr, "usage: expandable-bench [--max N] [--absent A] [--grow-only |"
                            " --speed]\n");
            return 2;
        }
    }
    print_load("at the start");
    printf("## Grown from 1,000 keys (8-byte random keys, 1 %% target, %llu absent keys)\n\n",
           (unsigned long long)absent);
    printf("| keys | expansions | measured fpp | bits/key | cuckoo sized for 1 %%: fpp | bits/key |"
           " cuckoo sized for the measured fpp r / 2r: fpp | bits/key | cuckoo at r: bits/key |"
           " ratio |\n|---|---|---|---|---|---|---|---|---|---|\n");
    e = make(AMQ_KIND_EXPANDABLE, 1000, 0);
    for (n = 0, p = 1000; p <= max; p *= 10) {
        amq_stats st;
        t = now_s();
        fill(e, n, p);
        t_exp += now_s() - t;
        n = p;
        ex_rate = rate(e, absent);
        worst = ex_rate > worst ? ex_rate : worst;
        amq_filter_stats(e, &st);
        /* expansions from the start's 64 buckets (the stash rounds away) */
        printf("| %llu | %.0f | %.3f %% | %.2f |", (unsigned long long)n,
               __builtin_floor(__builtin_log2((double)st.bytes / 4096.0)), ex_rate * 100.0,
               bits_per_key(e, n));
        if (n >= 10000 && !grow_only && !speed)
            cuckoo_columns(n, absent, ex_rate, bits_per_key(e, n));
        else
            printf(" | | | | | |\n");
        fflush(stdout);
    }
    printf("\nHighest measured fpp: %.3f %% (target 1 %%)\n", worst * 100.0);
    if (grow_only) {
        printf("Amortized add while growing: %.1f ns\n\n", t_exp * 1e9 / (double)n);
        print_load("at the end");
        amq_filter_free(e);
        return 0;
    }
    n = n < max ? n : max;
    q = 4000000;
    {
        /* the machine may be shared: each figure is the best of 3 reps, the
         * subjects taking turns within a rep, so that a busy second hurts all */
        double add_b = 1e30, add_e = t_exp, one_e = 1e30, one_b = 1e30, bat_e = 1e30,
               bat_b = 1e30, one_s = 1e30, x;
        amq_filter *e2;
        int rep;
        sb = make(AMQ_KIND_SCALABLE_BLOOM, 1000, 1);
        fill(sb, 0, n);
        b = NULL;
        for (rep = 0; rep < 3; rep++) {
            amq_filter_free(b);
            b = make(AMQ_KIND_BLOCKED, n, 0);
            t = now_s();
            fill(b, 0, n);
            x = now_s() - t;
            add_b = x < add_b ? x : add_b;
            if (rep < 2) { /* the growth again, beside the blocked filter's adds */
                e2 = make(AMQ_KIND_EXPANDABLE, 1000, 0);
                t = now_s();
                fill(e2, 0, n);
                x = now_s() - t;
                add_e = x < add_e ? x : add_e;
                amq_filter_free(e2);
            }
            x = query_ns(e, n, q, &sink);
            one_e = x < one_e ? x : one_e;
            x = query_ns(b, n, q, &sink);
            one_b = x < one_b ? x : one_b;
            x = batch_ns(e, n, q, &sink);
            bat_e = x < bat_e ? x : bat_e;
            x = batch_ns(b, n, q, &sink);
            bat_b = x < bat_b ? x : bat_b;
            x = query_ns(sb, n, q / 4, &sink);
            one_s = x < one_s ? x : one_s;
        }
        add_e *= 1e9 / (double)n;
        add_b *= 1e9 / (double)n;
        printf("\n## At %llu keys: ns per operation (best of 3)\n\n| filter | add (amortized) |"
               " query, one key | query, batched | bits/key |\n|---|---|---|---|---|\n",
               (unsigned long long)n);
        printf("| expandable, grown from 1,000 | %.1f | %.1f | %.1f | %.2f |\n", add_e, one_e,
               bat_e, bits_per_key(e, n));
        printf("| blocked, sized in advance | %.1f | %.1f | %.1f | %.2f |\n", add_b, one_b, bat_b,
               bits_per_key(b, n));
        printf("| scalable Bloom, RedisBloom layout, grown from 1,000 | | %.1f | | %.2f |\n", one_s,
               bits_per_key(sb, n));
        printf("\nRatios: one-key query %.2fx blocked (target <= 2), batched %.2fx blocked batched"
               " (<= 2), scalable Bloom / expandable one-key %.1fx (>= 10), amortized add %.2fx"
               " blocked add (<= 3)\n\n",
               one_e / one_b, bat_e / bat_b, one_s / one_e, add_e / add_b);
    }
    printf("| filter | add | query, one key | | bits/key |\n|---|---|---|---|---|\n");
#ifdef HAVE_TAFFY
    if (speed) {
        printf("| peer: taffy cuckoo | not run (--speed) | | | |\n");
    } else {
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
    printf("\n");
    print_load("at the end");
    fprintf(stderr, "(%llu)\n", (unsigned long long)sink);
    amq_filter_free(e);
    amq_filter_free(b);
    amq_filter_free(sb);
    return 0;
}
