/*
 * growth-proto.c - the quotient kind at another growth factor, whole or cut
 * into segments, beside the kind as it ships, by turns in one process.
 *
 *   growth-proto G.so ONE.so [--segments S] [--stagger F] [--n N]
 *                [--start C] [--absent A]
 *
 * G.so is a libamq.so built with another QF_GROWTH (scripts/growth-proto.sh
 * builds it); ONE.so the shipped one.  G.so's side is S quotient filters
 * (S a power of two, 1 to 1024): a key's hash goes to filter h1 >> (64 -
 * log2 S) with h1's remaining bits (and h2's top ones) as its h1, and filter
 * j starts with capacity C * F^(j / S), so that the segments' growths come
 * at staggered key counts (F is G.so's factor: one growth's worth spread over
 * the segments).  ONE.so's side is one quotient filter from 1,000 keys,
 * as `expandable-bench` grows it.  Both get the same keys, added in chunks
 * (up to each power of ten) by turns and timed; at each power of ten,
 * from 1e4 to N: bits per key (the filters' bytes), the rate on A keys
 * never added, every 97th key added checked present, and each side's ns an
 * add so far.  Public functions only, through dlopen.  A prototype: the
 * segments' pending keys and growths are each filter's own, as a shipped
 * design would not have them (docs/expandable-log.md, "A larger growth factor").
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_NAME "growth-proto"
#include "bench_common.h" /* mix, now_s, key */
#include "bench_dl.h"

#define MAX_SEGMENTS 1024

typedef struct {
    const char *path;
    void *dl;
    void (*config_init)(amq_config *, uint32_t);
    int (*filter_new)(const amq_config *, amq_filter **, amq_errinfo *);
    void (*filter_free)(amq_filter *);
    int (*add_hash)(amq_filter *, amq_hash128);
    int (*contains_hash)(const amq_filter *, amq_hash128);
    amq_hash128 (*hash)(const amq_filter *, const void *, size_t);
    void (*stats)(const amq_filter *, amq_stats *);
    int (*add)(amq_filter *, const void *, size_t);
    int (*contains)(const amq_filter *, const void *, size_t);
} lib;

static void *sym(const lib *l, const char *name)
{
    return bench_sym(l->dl, l->path, name);
}

static void load(lib *l, const char *path)
{
    memset(l, 0, sizeof *l);
    l->path = path;
    l->dl = bench_dlopen(path);
    *(void **)&l->config_init = sym(l, "amq_config_init");
    *(void **)&l->filter_new = sym(l, "amq_filter_new");
    *(void **)&l->filter_free = sym(l, "amq_filter_free");
    *(void **)&l->add_hash = sym(l, "amq_filter_add_hash");
    *(void **)&l->contains_hash = sym(l, "amq_filter_contains_hash");
    *(void **)&l->hash = sym(l, "amq_filter_hash");
    *(void **)&l->stats = sym(l, "amq_filter_stats");
    *(void **)&l->add = sym(l, "amq_filter_add");
    *(void **)&l->contains = sym(l, "amq_filter_contains");
}

static amq_filter *make(const lib *l, uint64_t capacity)
{
    amq_config cfg;
    amq_errinfo err;
    amq_filter *f;
    l->config_init(&cfg, AMQ_KIND_QUOTIENT);
    cfg.capacity = capacity;
    cfg.fpp = 0.01;
    if (l->filter_new(&cfg, &f, &err) != AMQ_OK) {
        fprintf(stderr, BENCH_NAME ": %s: %s\n", l->path, err.msg);
        exit(1);
    }
    return f;
}

static lib G, ONE;
static amq_filter *seg[MAX_SEGMENTS], *one;
static unsigned bits; /* log2 of the segments */

/* k's segment, and the hash it gets there. */
static amq_hash128 route(uint64_t k, unsigned *j)
{
    amq_hash128 h = G.hash(seg[0], &k, sizeof k), r = h;
    *j = 0;
    if (bits > 0) {
        *j = (unsigned)(h.h1 >> (64u - bits));
        r.h1 = (h.h1 << bits) | (h.h2 >> (64u - bits));
    }
    return r;
}

static void fail_add(const char *path, uint64_t i)
{
    fprintf(stderr, BENCH_NAME ": %s: add %llu failed\n", path, (unsigned long long)i);
    exit(1);
}

int main(int argc, char **argv)
{
    uint64_t n = 100000000, start = 61, absent = 1000000, at = 0, next = 10000, i;
    unsigned s = 1, j, q;
    double stagger = 1.0, tg = 0, to = 0;
    int a;
    if (argc < 3) {
        fprintf(stderr, "usage: growth-proto G.so ONE.so [--segments S] [--stagger F] [--n N] "
                        "[--start C] [--absent A]\n");
        return 2;
    }
    for (a = 3; a < argc; a += 2) {
        if (a + 1 >= argc) {
            fprintf(stderr, BENCH_NAME ": %s needs a value\n", argv[a]);
            return 2;
        }
        if (strcmp(argv[a], "--segments") == 0)
            s = (unsigned)bench_count(argv[a + 1], 1e10);
        else if (strcmp(argv[a], "--stagger") == 0) {
            char *end;
            stagger = strtod(argv[a + 1], &end);
            if (*end != '\0')
                stagger = 0; /* refused below */
        } else if (strcmp(argv[a], "--n") == 0)
            n = bench_count(argv[a + 1], 1e10);
        else if (strcmp(argv[a], "--start") == 0)
            start = bench_count(argv[a + 1], 1e10);
        else if (strcmp(argv[a], "--absent") == 0)
            absent = bench_count(argv[a + 1], 1e10);
        else {
            fprintf(stderr, BENCH_NAME ": unknown option %s\n", argv[a]);
            return 2;
        }
    }
    if (s > MAX_SEGMENTS || (s & (s - 1u)) != 0 || !(stagger >= 1.0 && stagger <= 4.0) ||
        n < 10000) {
        fprintf(stderr,
                BENCH_NAME ": --segments a power of two to %d, --stagger 1 to 4, --n "
                           "from 1e4\n",
                MAX_SEGMENTS);
        return 2;
    }
    while ((1u << bits) < s)
        bits++;
    load(&G, argv[1]);
    load(&ONE, argv[2]);
    for (j = 0; j < s; j++)
        seg[j] = make(&G, (uint64_t)((double)start * pow(stagger, (double)j / (double)s)));
    one = make(&ONE, 1000);
    printf("G %s: %u segments, starts %llu * %.3f^(j/%u)\nONE %s: one filter from 1,000\n\n",
           G.path, s, (unsigned long long)start, stagger, s, ONE.path);
    printf("| keys | G: bits/key | G: fpp | ONE: bits/key | ONE: fpp | G: ns an add so far | ONE: "
           "ns an add so far | G / ONE | keys missing (every 97th checked) |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    while (at < n) {
        const uint64_t to_n = next < n ? next : n;
        double t = now_s();
        for (i = at; i < to_n; i++) {
            const uint64_t k = key(i, 1);
            const amq_hash128 h = route(k, &j);
            if (G.add_hash(seg[j], h) < 0)
                fail_add(G.path, i);
        }
        tg += now_s() - t;
        t = now_s();
        for (i = at; i < to_n; i++) {
            const uint64_t k = key(i, 1);
            if (ONE.add(one, &k, sizeof k) < 0)
                fail_add(ONE.path, i);
        }
        to += now_s() - t;
        at = to_n;
        {
            uint64_t gbytes = 0, fpg = 0, fpo = 0, missing = 0;
            amq_stats st;
            for (q = 0; q < s; q++) {
                G.stats(seg[q], &st);
                gbytes += st.bytes;
            }
            ONE.stats(one, &st);
            for (i = 0; i < absent; i++) {
                const uint64_t k = key(i, 2);
                const amq_hash128 h = route(k, &j);
                fpg += (uint64_t)(G.contains_hash(seg[j], h) == 1);
                fpo += (uint64_t)(ONE.contains(one, &k, sizeof k) == 1);
            }
            for (i = 0; i < at; i += 97) {
                const uint64_t k = key(i, 1);
                const amq_hash128 h = route(k, &j);
                missing += (uint64_t)(G.contains_hash(seg[j], h) != 1) +
                           (uint64_t)(ONE.contains(one, &k, sizeof k) != 1);
            }
            printf("| %llu | %.2f | %.4f %% | %.2f | %.4f %% | %.1f | %.1f | %.3f | %llu |\n",
                   (unsigned long long)at, (double)gbytes * 8.0 / (double)at,
                   100.0 * (double)fpg / (double)absent, (double)st.bytes * 8.0 / (double)at,
                   100.0 * (double)fpo / (double)absent, tg * 1e9 / (double)at,
                   to * 1e9 / (double)at, tg / to, (unsigned long long)missing);
            fflush(stdout);
        }
        next *= 10;
    }
    for (j = 0; j < s; j++)
        G.filter_free(seg[j]);
    ONE.filter_free(one);
    return 0;
}
