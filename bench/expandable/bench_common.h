/*
 * bench_common.h - what the expandable benches share: 8-byte keys from a
 * 64-bit mixer (SplitMix64's finalizer), the clock, filters made and filled
 * through the public API, and amq's cuckoo filter sized in advance for a
 * rate (the expandable criterion's comparison).  The includer defines
 * BENCH_NAME, the name its messages start with.
 */
#ifndef AMQ_BENCH_COMMON_H
#define AMQ_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "amq.h"

static inline uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Key i of stream s (1: the added keys; 2, 3: keys never added). */
static inline uint64_t key(uint64_t i, uint64_t s)
{
    return mix(i ^ s << 56);
}

static inline amq_filter *make_at(uint32_t kind, uint64_t capacity, int redisbloom, double fpp)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_errinfo err;
    amq_config_init(&cfg, kind);
    cfg.capacity = capacity;
    cfg.fpp = fpp;
    cfg.redisbloom = (uint32_t)redisbloom;
    if (amq_filter_new(&cfg, &f, &err) != AMQ_OK) {
        fprintf(stderr, BENCH_NAME ": %s\n", err.msg);
        exit(1);
    }
    return f;
}

/* Keys from .. to - 1 of stream 1 added to f. */
static inline void fill(amq_filter *f, uint64_t from, uint64_t to)
{
    uint64_t i, k;
    for (i = from; i < to; i++) {
        k = key(i, 1);
        if (amq_filter_add(f, &k, sizeof k) < 0) {
            fprintf(stderr, BENCH_NAME ": add %llu failed\n", (unsigned long long)i);
            exit(1);
        }
    }
}

/* The rate measured on the first `absent` keys of stream 2. */
static inline double rate(const amq_filter *f, uint64_t absent)
{
    uint64_t i, k, fp = 0;
    for (i = 0; i < absent; i++) {
        k = key(i, 2);
        fp += (uint64_t)amq_filter_contains(f, &k, sizeof k);
    }
    return (double)fp / (double)absent;
}

static inline double bits_per_key(const amq_filter *f, uint64_t n)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    return (double)st.bytes * 8.0 / (double)n;
}

/* amq's cuckoo filter sized in advance for n keys at target fpp: its
 * measured rate and bits per key. */
static inline void cuckoo_at(uint64_t n, uint64_t absent, double fpp, double *r, double *bits)
{
    amq_filter *c = make_at(AMQ_KIND_CUCKOO, n, 0, fpp);
    fill(c, 0, n);
    *r = rate(c, absent);
    *bits = bits_per_key(c, n);
    amq_filter_free(c);
}

/* The bits per key amq's cuckoo filter sized for n keys needs at rate r:
 * the filters sized for r and 2r are built (one fingerprint bit apart, or
 * the same size) and their bits interpolated in log2 of their measured
 * rates; each one's rate and bits come back in *ra, *ba, *rb, *bb. */
static inline double cuckoo_need(uint64_t n, uint64_t absent, double r, double *ra, double *ba,
                                 double *rb, double *bb)
{
    const double at = r > 0 ? r : 1.0 / (double)absent;
    cuckoo_at(n, absent, at, ra, ba);
    cuckoo_at(n, absent, 2.0 * at, rb, bb);
    if (*ra > 0 && *rb > *ra && *ba > *bb)
        return *ba + (*bb - *ba) * __builtin_log2(at / *ra) / __builtin_log2(*rb / *ra);
    return *ba; /* no slope measured: the size for the rate itself */
}

#endif /* AMQ_BENCH_COMMON_H */
