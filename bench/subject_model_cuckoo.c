/*
 * subject_model_cuckoo.c - two models of efficient/cuckoofilter (the
 * reference C++ of Fan et al., "Cuckoo Filter: Practically Better Than
 * Bloom"), which Debian does not package: its published design
 * re-implemented here (no code of theirs) so that issue 20's figures for it
 * have a counterpart on the same keys in the same run.  Models, not the
 * reference's build.
 *
 *  - 12-bit tags in 4-slot buckets, packed (6 bytes a bucket), read with
 *    one 64-bit load and compared with the has-zero-field trick;
 *  - a power of two of buckets: the one at or above max(1, floor(n / 4)),
 *    doubled when the load would pass 0.96;
 *  - the key (a uint64_t) hashed by one multiply-add over 128 bits (its
 *    TwoIndependentMultiplyShift), the bucket from the high 32 bits, the
 *    tag from the low bits (0 becomes 1), the alternate bucket
 *    (index ^ (tag * 0x5bd1e995 over 32 bits)) masked;
 *  - lookup: the victim, then both buckets' words loaded and tested,
 *    `||` (FindTagInBuckets);
 *  - insert: the first bucket; when full, up to 500 steps from the second,
 *    each evicting a random slot to its alternate bucket; a last homeless
 *    tag goes to a one-entry victim and the filter then refuses adds.
 *
 * "model" is the reference as it runs: its table from operator new and
 * zeroed by memset (plain heap memory: with transparent huge pages in
 * "madvise" mode, 4 KiB pages), the evicted slot from libc's rand() % 4,
 * the table and the hash's two 128-bit constants reached through the
 * filter object (the constants drawn at random per filter; here fixed, but
 * read from memory as there).  "model, tuned" is the stricter peer: the
 * same loops over a table advised into huge pages and zeroed lazily,
 * xorshift for evictions, constants as immediates.  Both are compiled as
 * issue 20 built the reference, -O3 -march=native (the Makefile).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "amq.h"
#include "bench.h"

#define MC_KICKS 500

/* The table, as the reference keeps it: an object of its own, reached
 * through a pointer in the filter. */
typedef struct mc_table {
    uint8_t *data;
    uint64_t mask; /* buckets - 1 */
} mc_table;

typedef struct mck {
    mc_table *t;
    size_t bytes;
    int ref; /* 1: "model" (as the reference runs), 0: "model, tuned" */
    unsigned __int128 mul, add;
    uint64_t rng;
    uint32_t victim_tag;
    uint64_t victim_index;
    int victim_used;
} mck;

/* Fixed 128-bit constants of the multiply-add (the reference draws them at
 * random per filter). */
static const unsigned __int128 MC_MUL =
    ((unsigned __int128)UINT64_C(0x9ae16a3b2f90404f) << 64) | UINT64_C(0xc3a5c85c97cb3127);
static const unsigned __int128 MC_ADD =
    ((unsigned __int128)UINT64_C(0xb492b66fbe98f273) << 64) | UINT64_C(0x9ddfea08eb382d69);

/* ref is a constant at every call: each model's loops are compiled apart. */
static inline __attribute__((always_inline)) uint64_t mc_hash(const mck *f, uint64_t key, int ref)
{
    if (ref)
        return (uint64_t)((f->add + f->mul * (unsigned __int128)key) >> 64);
    return (uint64_t)((MC_ADD + MC_MUL * (unsigned __int128)key) >> 64);
}

static inline uint64_t mc_alt(const mck *f, uint64_t i, uint32_t tag)
{
    return (uint32_t)(i ^ (uint32_t)(tag * 0x5bd1e995u)) & f->t->mask;
}

static inline uint64_t mc_load(const mck *f, uint64_t i)
{
    uint64_t w;
    memcpy(&w, f->t->data + i * 6, 8);
    return w;
}

static inline uint64_t mc_haszero12(uint64_t x)
{
    return (x - UINT64_C(0x001001001001)) & ~x & UINT64_C(0x800800800800);
}

static inline uint32_t mc_get(const mck *f, uint64_t i, uint32_t j)
{
    return (uint32_t)(mc_load(f, i) >> (12 * j)) & 0xfffu;
}

static inline void mc_set(mck *f, uint64_t i, uint32_t j, uint32_t tag)
{
    uint64_t w = mc_load(f, i);
    w = (w & ~(UINT64_C(0xfff) << (12 * j))) | ((uint64_t)tag << (12 * j));
    memcpy(f->t->data + i * 6, &w, 8);
}

static void mc_destroy(void *p)
{
    mck *f = p;
    if (f->ref)
        free(f->t->data);
    else
        munmap(f->t->data, f->bytes);
    free(f->t);
    free(f);
}

static void *mc_create_any(uint64_t n, int ref)
{
    uint64_t nb = bench_cuckoo_ref_buckets(n);
    mck *f;
    f = calloc(1, sizeof *f);
    if (f == NULL || (f->t = calloc(1, sizeof *f->t)) == NULL) {
        free(f);
        return NULL;
    }
    f->ref = ref;
    f->bytes = (size_t)nb * 6 + 8;
    f->t->mask = nb - 1;
    f->mul = MC_MUL;
    f->add = MC_ADD;
    f->rng = UINT64_C(0x2545f4914f6cdd1d);
    if (ref) {
        /* operator new[] then memset, as the reference's table does. */
        f->t->data = malloc(f->bytes);
        if (f->t->data != NULL)
            memset(f->t->data, 0, f->bytes);
    } else {
        f->t->data =
            mmap(NULL, f->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (f->t->data == MAP_FAILED)
            f->t->data = NULL;
#ifdef MADV_HUGEPAGE
        else if (f->bytes >= ((size_t)1 << 20))
            (void)madvise(f->t->data, f->bytes, MADV_HUGEPAGE);
#endif
    }
    if (f->t->data == NULL) {
        free(f->t);
        free(f);
        return NULL;
    }
    return f;
}

static void *mc_create(uint64_t n, double fpp)
{
    (void)fpp;
    return mc_create_any(n, 1);
}

static void *mc_create_tuned(uint64_t n, double fpp)
{
    (void)fpp;
    return mc_create_any(n, 0);
}

/* Into bucket i; with kick, a random slot's tag is evicted into *old when
 * the bucket is full. */
static inline __attribute__((always_inline)) int mc_put(mck *f, uint64_t i, uint32_t tag,
                                                       int kick, uint32_t *old, int ref)
{
    uint32_t j;
    for (j = 0; j < 4; j++)
        if (mc_get(f, i, j) == 0) {
            mc_set(f, i, j, tag);
            return 1;
        }
    if (kick) {
        if (ref) {
            j = (uint32_t)rand() % 4;
        } else {
            f->rng ^= f->rng << 13;
            f->rng ^= f->rng >> 7;
            f->rng ^= f->rng << 17;
            j = (uint32_t)(f->rng & 3);
        }
        *old = mc_get(f, i, j);
        mc_set(f, i, j, tag);
    }
    return 0;
}

static inline __attribute__((always_inline)) int mc_add(mck *f, uint64_t key, int ref)
{
    uint64_t h = mc_hash(f, key, ref), i = (uint32_t)(h >> 32) & f->t->mask;
    uint32_t tag = (uint32_t)h & 0xfffu, old = 0, k;
    if (f->victim_used)
        return 0;
    tag += tag == 0;
    for (k = 0; k < MC_KICKS; k++) {
        if (mc_put(f, i, tag, k > 0, &old, ref))
            return 1;
        if (k > 0)
            tag = old;
        i = mc_alt(f, i, tag);
    }
    f->victim_used = 1;
    f->victim_tag = tag;
    f->victim_index = i;
    return 1;
}

static inline __attribute__((always_inline)) int mc_contains(const mck *f, uint64_t key, int ref)
{
    uint64_t h = mc_hash(f, key, ref), i1 = (uint32_t)(h >> 32) & f->t->mask, i2, v1, v2, x;
    uint32_t tag = (uint32_t)h & 0xfffu;
    tag += tag == 0;
    i2 = mc_alt(f, i1, tag);
    if (f->victim_used && tag == f->victim_tag &&
        (i1 == f->victim_index || i2 == f->victim_index))
        return 1;
    /* Both words read before either is tested, as its FindTagInBuckets
     * does: the `||` then costs no branch on which bucket holds the tag. */
    v1 = mc_load(f, i1);
    v2 = mc_load(f, i2);
    x = UINT64_C(0x001001001001) * tag;
    return mc_haszero12(v1 ^ x) != 0 || mc_haszero12(v2 ^ x) != 0;
}

/* ref is a constant in each caller: each model's loop is compiled apart. */
static inline __attribute__((always_inline)) uint64_t mc_insert_any(void *p, const uint64_t *keys,
                                                                   size_t n, int ref)
{
    mck *f = p;
    uint64_t failed = 0;
    size_t i;
    for (i = 0; i < n; i++)
        failed += !mc_add(f, keys[i], ref);
    return failed;
}

static inline __attribute__((always_inline)) uint64_t mc_query_any(void *p, const uint64_t *keys,
                                                                  size_t n, int ref)
{
    const mck *f = p;
    uint64_t c = 0;
    size_t i;
    for (i = 0; i < n; i++)
        c += (uint64_t)mc_contains(f, keys[i], ref);
    return c;
}

static uint64_t mc_insert(void *p, const uint64_t *keys, size_t n)
{
    return mc_insert_any(p, keys, n, 1);
}

static uint64_t mc_insert_tuned(void *p, const uint64_t *keys, size_t n)
{
    return mc_insert_any(p, keys, n, 0);
}

static uint64_t mc_query(void *p, const uint64_t *keys, size_t n)
{
    return mc_query_any(p, keys, n, 1);
}

static uint64_t mc_query_tuned(void *p, const uint64_t *keys, size_t n)
{
    return mc_query_any(p, keys, n, 0);
}

static uint64_t mc_bytes(const void *p)
{
    return ((const mck *)p)->bytes - 8;
}

BENCH_SUBJECT(subject_model_efficient_cuckoo) = {
    .name = "model: efficient/cuckoofilter 12-bit",
    .family = "cuckoo",
    .peer = 1,
    .create = mc_create,
    .destroy = mc_destroy,
    .insert = mc_insert,
    .query = mc_query,
    .bytes = mc_bytes,
    .no_sweep = 1,
};

BENCH_SUBJECT(subject_model_efficient_cuckoo_tuned) = {
    .name = "model, tuned: efficient/cuckoofilter 12-bit",
    .family = "cuckoo",
    .peer = 1,
    .create = mc_create_tuned,
    .destroy = mc_destroy,
    .insert = mc_insert_tuned,
    .query = mc_query_tuned,
    .bytes = mc_bytes,
    .no_sweep = 1,
};
