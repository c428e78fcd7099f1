/*
 * bench_dl.h - what the benches that load builds of libamq.so with dlopen
 * share (ab-lib, growth-proto): opening one, its symbols, and counts on the
 * command line.  Included after bench_common.h (BENCH_NAME).
 */
#ifndef AMQ_BENCH_DL_H
#define AMQ_BENCH_DL_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The library at path, apart from every other one loaded (RTLD_LOCAL: its
 * own state); exits when it cannot be opened. */
static inline void *bench_dlopen(const char *path)
{
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        fprintf(stderr, BENCH_NAME ": %s\n", dlerror());
        exit(1);
    }
    return dl;
}

/* Symbol name of dl (opened from path); exits when it has none. */
static inline void *bench_sym(void *dl, const char *path, const char *name)
{
    void *p = dlsym(dl, name);
    if (p == NULL) {
        fprintf(stderr, BENCH_NAME ": %s: no %s\n", path, name);
        exit(1);
    }
    return p;
}

/* A count on the command line ("1e8" too), from 1 to max; exits 2 otherwise. */
static inline uint64_t bench_count(const char *s, double max)
{
    char *end;
    const double v = strtod(s, &end);
    if (*end != '\0' || !(v >= 1.0) || v > max) {
        fprintf(stderr, BENCH_NAME ": not a count: %s\n", s);
        exit(2);
    }
    return (uint64_t)v;
}

#endif /* AMQ_BENCH_DL_H */
