/*
 * rb_peer.h - RedisBloom's own scalable Bloom filter as a peer of the
 * expandable benches: the oracle's module (../shared/oracle/redisbloom-*.so,
 * a path given at bench time, never part of the repo) opened with dlopen
 * and its chain driven through the functions it exports, so that the
 * scalable Bloom filter's figure comes from the peer's code and not only
 * from amq's model of its layout.  Nothing of RedisBloom is compiled here:
 * the arguments of SB_NewChain, SBChain_Add and SBChain_Check were read off
 * the binary's debug information, and its allocator hooks (the module API's
 * RedisModule_Alloc, _Calloc, _Realloc, _Free, _Strdup, set by Redis when
 * the module loads) are pointed at libc's, which hands a large link
 * ordinary pages as Redis's allocator does (transparent huge pages
 * "madvise", or "always" with Redis's default disable-thp yes; amq's model
 * advises huge pages for its links).
 * Included after bench_common.h (BENCH_NAME, key, now_s) and START and
 * TARGET_FPP are defined.
 */
#ifndef AMQ_BENCH_RB_PEER_H
#define AMQ_BENCH_RB_PEER_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq.h"

/* The chain BF.ADD creates, grown by 2 from its first link. */
#define RB_OPTIONS (AMQ_SBLOOM_NOROUND | AMQ_SBLOOM_FORCE64)
#define RB_GROWTH 2u

typedef void *(*rb_new_fn)(uint64_t initsize, double error_rate, unsigned options, unsigned growth,
                           int *err);
typedef int (*rb_add_fn)(void *sb, const void *data, size_t len);
typedef int (*rb_check_fn)(const void *sb, const void *data, size_t len);
typedef void (*rb_free_fn)(void *sb);

typedef struct {
    void *dl, *sb;
    double add_ns; /* amortized over the growth from the first link */
    rb_add_fn add;
    rb_check_fn check;
    rb_free_fn free_chain;
} rb_peer;

static char *rb_strdup(const char *s)
{
    return strdup(s);
}

/* The hook name of dl pointed at fn; 0 when the module has no such hook. */
static int rb_hook(void *dl, const char *name, void *fn)
{
    void **slot = dlsym(dl, name);
    if (slot == NULL)
        return 0;
    *slot = fn;
    return 1;
}

static void rb_close(rb_peer *p);

/* The oracle at path opened and a chain made for START keys at the target
 * rate; 0, or -1 with a message on stderr (the bench then runs without it). */
static int rb_open(rb_peer *p, const char *path, uint64_t start, double fpp)
{
    rb_new_fn make_chain;
    int err = 0;
    memset(p, 0, sizeof *p);
    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (p->dl == NULL) {
        fprintf(stderr, BENCH_NAME ": RedisBloom peer not loaded: %s\n", dlerror());
        return -1;
    }
    make_chain = (rb_new_fn)(uintptr_t)dlsym(p->dl, "SB_NewChain");
    p->add = (rb_add_fn)(uintptr_t)dlsym(p->dl, "SBChain_Add");
    p->check = (rb_check_fn)(uintptr_t)dlsym(p->dl, "SBChain_Check");
    p->free_chain = (rb_free_fn)(uintptr_t)dlsym(p->dl, "SBChain_Free");
    if (make_chain == NULL || p->add == NULL || p->check == NULL || p->free_chain == NULL ||
        !rb_hook(p->dl, "RedisModule_Alloc", (void *)(uintptr_t)malloc) ||
        !rb_hook(p->dl, "RedisModule_Calloc", (void *)(uintptr_t)calloc) ||
        !rb_hook(p->dl, "RedisModule_Realloc", (void *)(uintptr_t)realloc) ||
        !rb_hook(p->dl, "RedisModule_Free", (void *)(uintptr_t)free)) {
        fprintf(stderr, BENCH_NAME ": %s: not the RedisBloom module this bench knows (a chain "
                                   "function or an allocator hook is missing)\n", path);
        dlclose(p->dl);
        p->dl = NULL;
        return -1;
    }
    (void)rb_hook(p->dl, "RedisModule_Strdup", (void *)(uintptr_t)rb_strdup);
    p->sb = make_chain(start, fpp, RB_OPTIONS, RB_GROWTH, &err);
    if (p->sb == NULL) {
        fprintf(stderr, BENCH_NAME ": %s: SB_NewChain refused (%d)\n", path, err);
        dlclose(p->dl);
        p->dl = NULL;
        return -1;
    }
    return 0;
}

/* Keys from .. to - 1 of stream 1 added; -1 at the first the chain refuses. */
static int rb_fill(rb_peer *p, uint64_t from, uint64_t to)
{
    uint64_t i, k;
    for (i = from; i < to; i++) {
        k = key(i, 1);
        if (p->add(p->sb, &k, sizeof k) < 0)
            return -1;
    }
    return 0;
}

/* ns per one-key query, the stream query_ns asks (half present). */
static double rb_query_ns(const rb_peer *p, uint64_t n, uint64_t q, uint64_t *sink)
{
    uint64_t i, k, hits = 0;
    double t = now_s();
    for (i = 0; i < q; i++) {
        k = (i & 1) ? key(mix(i) % n, 1) : key(i, 3);
        hits += (uint64_t)(p->check(p->sb, &k, sizeof k) != 0);
    }
    t = now_s() - t;
    *sink += hits;
    return t * 1e9 / (double)q;
}

/* The peer grown to n keys beside amq's model of its layout (model, grown to the same keys):
 * the adds timed, every 97th key asked, and the first min(absent, 1M) keys of stream 2 asked
 * of both (the same layout answers each alike).  What it finds is printed; on failure the
 * bench goes on without the peer. */
static void rb_grow(rb_peer *p, const char *path, const amq_filter *model, uint64_t n,
                    uint64_t absent)
{
    const uint64_t m = absent < 1000000 ? absent : 1000000;
    uint64_t i, k, missing = 0, alike = 0;
    double t;
    if (rb_open(p, path, START, TARGET_FPP) != 0)
        return;
    t = now_s();
    if (rb_fill(p, 0, n) != 0) {
        fprintf(stderr, BENCH_NAME ": RedisBloom's chain refused an add; run without it\n");
        rb_close(p);
        return;
    }
    p->add_ns = (now_s() - t) * 1e9 / (double)n;
    for (i = 0; i < n; i += 97) {
        k = key(i, 1);
        missing += p->check(p->sb, &k, sizeof k) == 0;
    }
    for (i = 0; i < m; i++) {
        k = key(i, 2);
        alike += (p->check(p->sb, &k, sizeof k) != 0) == (amq_filter_contains(model, &k, sizeof k) == 1);
    }
    printf("RedisBloom's own scalable Bloom filter (%s) grown to %llu keys from 1,000: %llu of "
           "every 97th added key answered absent; %llu of %llu keys never added answered as "
           "amq's model of its layout answers them\n\n",
           path, (unsigned long long)n, (unsigned long long)missing, (unsigned long long)alike,
           (unsigned long long)m);
}

static void rb_close(rb_peer *p)
{
    if (p->dl == NULL)
        return;
    p->free_chain(p->sb);
    dlclose(p->dl);
    p->dl = NULL;
}

#endif /* AMQ_BENCH_RB_PEER_H */
