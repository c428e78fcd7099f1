/*
 * subject_libbloom.c - Debian's libbloom (libbloom-dev, -lbloom), the peer:
 * a classic Bloom filter (MurmurHash2 double hashing, k probes over the
 * whole array), sized by bloom_init(entries, error).
 */
#include <bloom.h>
#include <limits.h>
#include <stdlib.h>

#include "bench.h"

static void *create(uint64_t n, double fpp)
{
    struct bloom *b;
    if (n > INT_MAX)
        return NULL;
    b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    if (bloom_init(b, (int)n, fpp) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

static void destroy(void *f)
{
    bloom_free(f);
    free(f);
}

static uint64_t insert(void *f, const uint64_t *keys, size_t n)
{
    size_t i;
    uint64_t failed = 0;
    for (i = 0; i < n; i++)
        failed += bloom_add(f, &keys[i], 8) < 0;
    return failed;
}

static uint64_t query(void *f, const uint64_t *keys, size_t n)
{
    size_t i;
    uint64_t c = 0;
    for (i = 0; i < n; i++)
        c += bloom_check(f, &keys[i], 8) == 1;
    return c;
}

static uint64_t bytes(const void *f)
{
    const struct bloom *b = f;
    return (uint64_t)b->bytes;
}

BENCH_SUBJECT(subject_libbloom) = {
    .name = "libbloom (Debian)",
    .family = "bloom",
    .peer = 1,
    .create = create,
    .destroy = destroy,
    .insert = insert,
    .query = query,
    .bytes = bytes,
};
