/*
 * cquery.c - the C side of bench_python.py: the library's batched query of
 * fixed-width keys on a filter file, timed in C on the same keys the
 * Python side queries.
 *
 *   cquery FILTER KEYS WIDTH REPS  ->  prints "hits ns_per_key" per rep
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define AMQ_ADVANCED_API 1 /* the typed handles (amq/advanced.h), called directly */
#include "amq.h"
#include "amq/blocked_bloom.h"
#include "amq/filter.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    amq_filter *f = NULL;
    amq_errinfo err;
    FILE *in;
    long size;
    size_t width, n, r, reps;
    char *keys;
    uint8_t *out;

    if (argc != 5) {
        fprintf(stderr, "usage: cquery FILTER KEYS WIDTH REPS\n");
        return 2;
    }
    width = strtoul(argv[3], NULL, 10);
    reps = strtoul(argv[4], NULL, 10);
    if (amq_filter_open(argv[1], 0, NULL, &f, &err) != AMQ_OK ||
        amq_filter_blocked(f) == NULL || width == 0) {
        fprintf(stderr, "cquery: %s: not a blocked filter (%s)\n", argv[1], err.msg);
        return 2;
    }
    in = fopen(argv[2], "rb");
    if (in == NULL || fseek(in, 0, SEEK_END) != 0 || (size = ftell(in)) <= 0 ||
        fseek(in, 0, SEEK_SET) != 0) {
        fprintf(stderr, "cquery: cannot read %s\n", argv[2]);
        return 2;
    }
    n = (size_t)size / width;
    keys = malloc((size_t)size);
    out = malloc(n);
    if (keys == NULL || out == NULL || fread(keys, 1, (size_t)size, in) != (size_t)size) {
        fprintf(stderr, "cquery: cannot read %s\n", argv[2]);
        return 2;
    }
    fclose(in);
    for (r = 0; r < reps; r++) {
        double t0 = now_ns();
        uint64_t hits = 0;
        amq_blocked_contains_batch_fixed(amq_filter_blocked(f), keys, width, n, out, &hits);
        double t1 = now_ns();
        printf("%llu %.3f\n", (unsigned long long)hits, (t1 - t0) / (double)n);
    }
    free(keys);
    free(out);
    amq_filter_free(f);
    return 0;
}
