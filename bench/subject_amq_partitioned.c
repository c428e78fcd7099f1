/*
 * subject_amq_partitioned.c - amq's partitioned filter:
 *  - created empty for n keys and filled with batched adds (one thread);
 *  - built from the keys' hashes by amq_partitioned_build on all cores
 *    (the insert time includes hashing every key into an array, which is
 *    mapped with huge pages advised: first-touch page faults of a 1.6 GB
 *    malloc'd array would otherwise dominate on a virtual machine).
 * Queries are batched in both (hashes computed in chunks of 4096).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define AMQ_ADVANCED_API 1 /* the typed handles (amq/advanced.h), called directly */
#include "amq.h"
#include "bench.h"

#define CHUNK 4096

static void *create(uint64_t n, double fpp)
{
    amq_partitioned_params p;
    amq_partitioned *f;
    memset(&p, 0, sizeof p);
    p.hash_algo = AMQ_HASH_XXH3;
    p.capacity = n;
    p.fpp = fpp;
    if (amq_partitioned_new(&p, NULL, &f) != AMQ_OK)
        return NULL;
    return f;
}

static void destroy(void *f)
{
    amq_partitioned_free(f);
}

static uint64_t bytes(const void *f)
{
    return amq_partitioned_bytes(f);
}

static uint64_t insert(void *f, const uint64_t *keys, size_t n)
{
    amq_hash128 h[CHUNK];
    size_t i, j, m;
    for (i = 0; i < n; i += m) {
        m = n - i < CHUNK ? n - i : CHUNK;
        for (j = 0; j < m; j++)
            h[j] = amq_partitioned_hash(f, &keys[i + j], 8);
        if (amq_partitioned_add_batch(f, h, m, NULL, NULL) != AMQ_OK)
            return n;
    }
    return 0;
}

static uint64_t query(void *f, const uint64_t *keys, size_t n)
{
    amq_hash128 h[CHUNK];
    size_t i, j, m;
    uint64_t c = 0;
    for (i = 0; i < n; i += m) {
        m = n - i < CHUNK ? n - i : CHUNK;
        for (j = 0; j < m; j++)
            h[j] = amq_partitioned_hash(f, &keys[i + j], 8);
        uint64_t maybe = 0;
        (void)amq_partitioned_contains_batch(f, h, m, NULL, &maybe);
        c += maybe;
    }
    return c;
}

/* The built variant: create() only records the rate; insert() builds. */
typedef struct built {
    double fpp;
    amq_partitioned *f;
} built;

static void *create_built(uint64_t n, double fpp)
{
    built *b = calloc(1, sizeof *b);
    (void)n;
    if (b != NULL)
        b->fpp = fpp;
    return b;
}

static void destroy_built(void *p)
{
    built *b = p;
    amq_partitioned_free(b->f);
    free(b);
}

static uint64_t insert_built(void *p, const uint64_t *keys, size_t n)
{
    built *b = p;
    amq_partitioned_params prm;
    size_t i, bytes = n * sizeof(amq_hash128);
    amq_hash128 *h;
    int rc;
    h = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (h == MAP_FAILED)
        return n;
#ifdef MADV_HUGEPAGE
    (void)madvise(h, bytes ? bytes : 1, MADV_HUGEPAGE);
#endif
    for (i = 0; i < n; i++)
        h[i] = amq_hash_key(AMQ_HASH_XXH3, 0, &keys[i], 8);
    memset(&prm, 0, sizeof prm);
    prm.hash_algo = AMQ_HASH_XXH3;
    prm.fpp = b->fpp;
    amq_partitioned_free(b->f);
    rc = amq_partitioned_build(&prm, h, n, 0, NULL, &b->f);
    munmap(h, bytes ? bytes : 1);
    return rc == AMQ_OK ? 0 : n;
}

static uint64_t query_built(void *p, const uint64_t *keys, size_t n)
{
    return query(((built *)p)->f, keys, n);
}

static uint64_t bytes_built(const void *p)
{
    return amq_partitioned_bytes(((const built *)p)->f);
}

BENCH_SUBJECT(subject_amq_partitioned) = {
    .name = "amq partitioned, batched",
    .family = "partitioned",
    .create = create,
    .destroy = destroy,
    .insert = insert,
    .query = query,
    .bytes = bytes,
};

BENCH_SUBJECT(amq_partitioned_built) = {
    .name = "amq partitioned, parallel build (all cores)",
    .family = "partitioned",
    .create = create_built,
    .destroy = destroy_built,
    .insert = insert_built,
    .query = query_built,
    .bytes = bytes_built,
    .threads = 1,
};
