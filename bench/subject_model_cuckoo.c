/*
 * subject_model_cuckoo.c - a model of efficient/cuckoofilter (the reference
 * C++ of Fan et al., "Cuckoo Filter: Practically Better Than Bloom"),
 * which Debian does not package: its published design re-implemented here
 * (no code of theirs) so that issue 20's figures for it have a counterpart
 * on the same keys in the same run.  A model, not the reference's build.
 *
 *  - 12-bit tags in 4-slot buckets, packed (6 bytes a bucket), read with
 *    one 64-bit load and compared with the has-zero-field trick;
 *  - a power of two of buckets: the one at or above max(1, floor(n / 4)),
 *    doubled when the load would pass 0.96;
 *  - the key (a uint64_t) hashed by one multiply-add over 128 bits (its
 *    TwoIndependentMultiplyShift), the bucket from the high 32 bits, the
 *    tag from the low bits (0 becomes 1), the alternate bucket
 *    i ^ (tag * 0x5bd1e995) masked;
 *  - lookup: both buckets, `||` (the second is read when the first misses,
 *    as its code reads);
 *  - insert: the first bucket; when full, up to 500 steps from the second,
 *    each evicting a random slot to its alternate bucket; a last homeless
 *    tag goes to a one-entry victim and the filter then refuses adds.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "amq.h"
#include "bench.h"

#define MC_KICKS 500

typedef struct mck {
    uint8_t *data;
    size_t bytes;
    uint64_t mask; /* buckets - 1 */
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

static inline uint64_t mc_hash(uint64_t key)
{
    return (uint64_t)((MC_ADD + MC_MUL * (unsigned __int128)key) >> 64);
}

static inline uint64_t mc_alt(const mck *f, uint64_t i, uint32_t tag)
{
    return (i ^ ((uint64_t)tag * 0x5bd1e995u)) & f->mask;
}

static inline uint64_t mc_load(const mck *f, uint64_t i)
{
    uint64_t w;
    memcpy(&w, f->data + i * 6, 8);
    return w;
}

static inline uint64_t mc_haszero12(uint64_t x)
{
    return (x - UINT64_C(0x001001001001)) & ~x & UINT64_C(0x800800800800);
}

static inline int mc_has(const mck *f, uint64_t i, uint32_t tag)
{
    return mc_haszero12(mc_load(f, i) ^ (UINT64_C(0x001001001001) * tag)) != 0;
}

static inline uint32_t mc_get(const mck *f, uint64_t i, uint32_t j)
{
    return (uint32_t)(mc_load(f, i) >> (12 * j)) & 0xfffu;
}

static inline void mc_set(mck *f, uint64_t i, uint32_t j, uint32_t tag)
{
    uint64_t w = mc_load(f, i);
    w = (w & ~(UINT64_C(0xfff) << (12 * j))) | ((uint64_t)tag << (12 * j));
    memcpy(f->data + i * 6, &w, 8);
}

static void *mc_create(uint64_t n, double fpp)
{
    uint64_t nb = 1;
    mck *f;
    (void)fpp;
    while (nb < (n / 4 > 1 ? n / 4 : 1))
        nb <<= 1;
    if ((double)n / (double)nb / 4.0 > 0.96)
        nb <<= 1;
    f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->bytes = (size_t)nb * 6 + 8;
    f->mask = nb - 1;
    f->rng = UINT64_C(0x2545f4914f6cdd1d);
    f->data = mmap(NULL, f->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f->data == MAP_FAILED) {
        free(f);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (f->bytes >= ((size_t)1 << 20))
        (void)madvise(f->data, f->bytes, MADV_HUGEPAGE);
#endif
    return f;
}

static void mc_destroy(void *p)
{
    mck *f = p;
    munmap(f->data, f->bytes);
    free(f);
}

/* Into bucket i; with kick, a random slot's tag is evicted into *old when
 * the bucket is full. */
static int mc_put(mck *f, uint64_t i, uint32_t tag, int kick, uint32_t *old)
{
    uint32_t j;
    for (j = 0; j < 4; j++)
        if (mc_get(f, i, j) == 0) {
            mc_set(f, i, j, tag);
            return 1;
        }
    if (kick) {
        f->rng ^= f->rng << 13;
        f->rng ^= f->rng >> 7;
        f->rng ^= f->rng << 17;
        j = (uint32_t)(f->rng & 3);
        *old = mc_get(f, i, j);
        mc_set(f, i, j, tag);
    }
    return 0;
}

static int mc_add(mck *f, uint64_t key)
{
    uint64_t h = mc_hash(key), i = (h >> 32) & f->mask;
    uint32_t tag = (uint32_t)h & 0xfffu, old = 0, k;
    if (f->victim_used)
        return 0;
    tag += tag == 0;
    for (k = 0; k < MC_KICKS; k++) {
        if (mc_put(f, i, tag, k > 0, &old))
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

static int mc_contains(const mck *f, uint64_t key)
{
    uint64_t h = mc_hash(key), i1 = (h >> 32) & f->mask, i2;
    uint32_t tag = (uint32_t)h & 0xfffu;
    tag += tag == 0;
    i2 = mc_alt(f, i1, tag);
    if (f->victim_used && tag == f->victim_tag &&
        (i1 == f->victim_index || i2 == f->victim_index))
        return 1;
    return mc_has(f, i1, tag) || mc_has(f, i2, tag);
}

static uint64_t mc_insert(void *p, const uint64_t *keys, size_t n)
{
    mck *f = p;
    uint64_t failed = 0;
    size_t i;
    for (i = 0; i < n; i++)
        failed += !mc_add(f, keys[i]);
    return failed;
}

static uint64_t mc_query(void *p, const uint64_t *keys, size_t n)
{
    const mck *f = p;
    uint64_t c = 0;
    size_t i;
    for (i = 0; i < n; i++)
        c += (uint64_t)mc_contains(f, keys[i]);
    return c;
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
