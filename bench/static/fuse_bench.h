/*
 * fuse_bench.h - amq's binary fuse filters beside the reference code
 * (bench/static/fuse_bench.c), one run of which both amq-bench-fuse
 * (make bench-fuse: docs/benchmarks-fuse.md) and amq-bench (make bench: its
 * section of docs/benchmarks.md) make.
 */
#ifndef AMQB_FUSE_BENCH_H
#define AMQB_FUSE_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The most repetitions a run keeps (the medians' arrays). */
#define AMQB_FUSE_MAX_REPS 15

typedef struct amqb_fuse_run {
    const uint64_t *ns; /* key counts */
    int nn;
    const size_t *kbs; /* key sizes: 8 and/or 16 bytes */
    int nk;
    int bits_on[2];    /* fuse8, fuse16 */
    int reps;          /* repetitions, the rows alternating in each (1..AMQB_FUSE_MAX_REPS) */
    int qreps;         /* one-key loops per build, their median kept (1..AMQB_FUSE_MAX_REPS) */
    uint64_t qmax;     /* queries of present and of absent keys: min(n, qmax) each */
    double line_ns;    /* the caller's line-read limit measured just before (0: none) */
} amqb_fuse_run;

/* One paragraph saying what the rows and each column time (or, when the
 * reference was not built, one line saying its rows are skipped). */
void amqb_fuse_intro(FILE *out);

/* Measures every n and key size of r, writing a "### n = ..." table and its
 * ratio table to out as each ends (progress on stderr).  Returns the number
 * of false negatives seen (0 unless a filter is wrong). */
uint64_t amqb_fuse_h2h(FILE *out, const amqb_fuse_run *r);

#endif /* AMQB_FUSE_BENCH_H */
