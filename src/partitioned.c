/*
 * partitioned.c - a filter of P independently sized blocked Bloom
 * partitions behind one index (amq/partitioned.h).
 *
 * In memory the partitions lie back to back in one 64-byte aligned region
 * (huge pages when large), exactly as in the payload, so that a loaded
 * file is used in place and saving is one pass.  The index lives in an
 * ordinary array.
 *
 * Payload (little-endian; docs/file-format.md):
 *    0  u64  index checksum: XXH3-64 of bytes [64, 64 + 48 P)
 *    8  u32  P             12  u32  entry size (48)
 *   16  u64  D, the offset of the partition data (64 + 48 P rounded up to 64)
 *   24  u64  bytes of partition data
 *   32  32   zero
 *   64  P entries of 48 bytes:
 *          u64 offset (from D, multiple of 64; partitions contiguous, in order)
 *          u64 blocks, u32 k, u32 zero, u64 items, u64 capacity,
 *          u64 checksum (XXH3-64 of the partition's blocks * 64 bytes)
 *    D  partition data
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "amq/partitioned.h"
#include "blocked_impl.h"
#include "common/alloc.h"
#include "common/checked.h"
#include "common/container.h"
#include "common/endian.h"
#include "common/error.h"
#include "kind.h"

#define INDEX_HEADER 64u
#define ENTRY_SIZE 48u

/* Partition states (lazy verification). */
enum { ST_UNVERIFIED = 0, ST_OK = 1, ST_BAD = 2, ST_BUSY = 3 };

typedef struct part {
    uint64_t offset; /* from data.data */
    uint64_t blocks;
    uint32_t k;
    uint64_t capacity;
    uint64_t checksum; /* as stored; checked when the state is UNVERIFIED */
    _Atomic uint64_t items;
} part;

struct amq_partitioned {
    uint32_t nparts;
    uint32_t hash_algo;
    uint64_t seed;
    uint64_t capacity;
    double fpp;
    part *parts;
    _Atomic uint8_t *state; /* nparts entries */
    _Atomic int failed;
    amq_region data;
    int concurrent;
    const amq_blk_simd_ops *simd;
    amq_allocator alloc;
};

static inline uint32_t part_of(uint32_t nparts, amq_hash128 h)
{
    return (uint32_t)(((h.h2 >> 32) * (uint64_t)nparts) >> 32);
}

static inline uint8_t *part_data(const amq_partitioned *f, uint32_t i)
{
    return f->data.data + f->parts[i].offset;
}

/* ---- life cycle -------------------------------------------------------------------- */

static void destroy(amq_partitioned *f)
{
    amq_allocator a;
    if (f == NULL)
        return;
    a = f->alloc;
    amq_region_free(&f->data, &a);
    if (f->parts != NULL)
        amq_free(&a, f->parts, (size_t)f->nparts * sizeof *f->parts);
    if (f->state != NULL)
        amq_free(&a, (void *)f->state, f->nparts);
    amq_free(&a, f, sizeof *f);
}

void amq_partitioned_free(amq_partitioned *f)
{
    destroy(f);
}

/* A filter with its index arrays allocated (data not yet). */
static int shell(uint32_t nparts, uint32_t algo, uint64_t seed, const amq_allocator *alloc,
                 amq_partitioned **out)
{
    amq_allocator a;
    amq_partitioned *f;
    uint32_t i;

    amq_alloc_init(&a, alloc);
    f = amq_calloc(&a, sizeof *f);
    if (f == NULL)
        return AMQ_ENOMEM;
    f->alloc = a;
    f->nparts = nparts;
    f->hash_algo = algo;
    f->seed = seed;
    f->parts = amq_calloc(&a, (size_t)nparts * sizeof *f->parts);
    f->state = amq_calloc(&a, nparts);
    if (f->parts == NULL || f->state == NULL) {
        destroy(f);
        return AMQ_ENOMEM;
    }
    for (i = 0; i < nparts; i++)
        atomic_init(&f->state[i], ST_OK);
    atomic_init(&f->failed, 0);
    f->simd = amq_blk_simd_select(AMQ_SIMD_AUTO);
    *out = f;
    return AMQ_OK;
}

/* Lays the partitions out back to back once their blocks are set, and
 * allocates the region (zeroed). */
static int layout(amq_partitioned *f)
{
    uint64_t off = 0;
    uint32_t i;
    int rc;

    for (i = 0; i < f->nparts; i++) {
        f->parts[i].offset = off;
        if (f->parts[i].blocks > (UINT64_MAX - off) / 64 ||
            off + f->parts[i].blocks * 64 > (uint64_t)SIZE_MAX)
            return AMQ_ERANGE;
        off += f->parts[i].blocks * 64;
    }
    rc = amq_region_alloc(&f->data, &f->alloc, (size_t)off);
    return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
}

/* Partitions for a filter of total_blocks blocks when P is not given. */
static uint32_t choose_parts(uint64_t total_blocks)
{
    uint64_t p =
        (total_blocks * 64 + AMQ_PARTITIONED_TARGET_BYTES - 1) / AMQ_PARTITIONED_TARGET_BYTES;
    if (p < 1)
        p = 1;
    if (p > AMQ_PARTITIONED_MAX_PARTITIONS)
        p = AMQ_PARTITIONED_MAX_PARTITIONS;
    if (p > total_blocks)
        p = total_blocks;
    return (uint32_t)p;
}

static int check_common(const amq_partitioned_params *p)
{
    if (p->partitions > AMQ_PARTITIONED_MAX_PARTITIONS)
        return AMQ_ERANGE;
    if (p->bits_per_key != 0.0 && !(p->bits_per_key > 0.0 && p->bits_per_key <= 1000.0))
        return AMQ_ERANGE;
    if (p->bits_per_key == 0.0 && !(p->fpp > 0.0 && p->fpp < 1.0))
        return AMQ_ERANGE;
    return amq_hash_check(p->hash_algo, p->seed);
}

int amq_partitioned_new(const amq_partitioned_params *params, const amq_allocator *alloc,
                        amq_partitioned **out)
{
    amq_partitioned *f;
    uint64_t total, per;
    uint32_t k, i, np;
    int rc;

    *out = NULL;
    rc = check_common(params);
    if (rc != AMQ_OK)
        return rc;
    if (params->capacity == 0)
        return AMQ_ERANGE;
    if (params->bits_per_key > 0.0)
        rc = amq_blocked_size_bpk(params->capacity, params->bits_per_key, &total, &k);
    else
        rc = amq_blocked_size_fpp(params->capacity, params->fpp, &total, &k);
    if (rc != AMQ_OK)
        return rc;
    np = params->partitions != 0 ? params->partitions : choose_parts(total);
    per = (total + np - 1) / np;
    rc = shell(np, params->hash_algo, params->seed, alloc, &f);
    if (rc != AMQ_OK)
        return rc;
    f->capacity = params->capacity;
    f->fpp = params->bits_per_key > 0.0 ? amq_blocked_fpp_theory(per * np, k, params->capacity)
                                        : params->fpp;
    for (i = 0; i < np; i++) {
        f->parts[i].blocks = per;
        f->parts[i].k = k;
        f->parts[i].capacity = (params->capacity + np - 1) / np;
    }
    rc = layout(f);
    if (rc != AMQ_OK) {
        destroy(f);
        return rc;
    }
    *out = f;
    return AMQ_OK;
}

/* ---- lazy verification ------------------------------------------------------------------ */

static int verify_slow(const amq_partitioned *f, uint32_t i)
{
    _Atomic uint8_t *st = &f->state[i];
    uint8_t s, expect;
    const part *pt = &f->parts[i];
    uint8_t *d = part_data(f, i);
    size_t len = (size_t)(pt->blocks * 64);

    for (;;) {
        s = atomic_load_explicit(st, memory_order_acquire);
        if (s == ST_OK)
            return AMQ_OK;
        if (s == ST_BAD)
            return AMQ_ECHECKSUM;
        if (s == ST_BUSY) {
            sched_yield();
            continue;
        }
        expect = ST_UNVERIFIED;
        if (atomic_compare_exchange_strong_explicit(st, &expect, ST_BUSY, memory_order_acquire,
                                                    memory_order_acquire))
            break;
    }
    /* Ask for the whole partition at once (one read instead of a page fault
     * per page when the file is cold and mapped for random access). */
    if (amq_region_is_borrowed(&f->data)) {
        long pg = sysconf(_SC_PAGESIZE);
        uintptr_t start = (uintptr_t)d & ~(uintptr_t)(pg > 0 ? pg - 1 : 4095);
        (void)posix_madvise((void *)start, len + (size_t)((uintptr_t)d - start),
                            POSIX_MADV_WILLNEED);
    }
    if (amq_checksum(d, len) == pt->checksum) {
        atomic_store_explicit(st, ST_OK, memory_order_release);
        return AMQ_OK;
    }
    atomic_store_explicit((_Atomic int *)(uintptr_t)&f->failed, 1, memory_order_relaxed);
    atomic_store_explicit(st, ST_BAD, memory_order_release);
    return AMQ_ECHECKSUM;
}

static inline int touch(const amq_partitioned *f, uint32_t i)
{
    if (atomic_load_explicit(&f->state[i], memory_order_acquire) == ST_OK)
        return AMQ_OK;
    return verify_slow(f, i);
}

int amq_partitioned_verify(const amq_partitioned *f, uint32_t *bad)
{
    uint32_t i;
    for (i = 0; i < f->nparts; i++)
        if (touch(f, i) != AMQ_OK) {
            if (bad != NULL)
                *bad = i;
            return AMQ_ECHECKSUM;
        }
    return AMQ_OK;
}

int amq_partitioned_status(const amq_partitioned *f)
{
    return atomic_load_explicit((_Atomic int *)(uintptr_t)&f->failed, memory_order_relaxed)
               ? AMQ_ECHECKSUM
               : AMQ_OK;
}

/* ---- keys ---------------------------------------------------------------------------------- */

uint32_t amq_partitioned_partitions(const amq_partitioned *f)
{
    return f->nparts;
}

uint32_t amq_partitioned_partition_of(const amq_partitioned *f, amq_hash128 h)
{
    return part_of(f->nparts, h);
}

amq_hash128 amq_partitioned_hash(const amq_partitioned *f, const void *key, size_t len)
{
    return amq_hash_key(f->hash_algo, f->seed, key, len);
}

static inline uint8_t *block_of(const amq_partitioned *f, uint32_t i, amq_hash128 h)
{
    return part_data(f, i) + amq_blk_index(h.h1, f->parts[i].blocks) * 64;
}

int amq_partitioned_add_hash(amq_partitioned *f, amq_hash128 h)
{
    uint32_t i = part_of(f->nparts, h);
    int rc, r;

    if (amq_region_is_borrowed(&f->data))
        return AMQ_EREADONLY;
    rc = touch(f, i);
    if (rc != AMQ_OK)
        return rc;
    if (f->concurrent) {
        r = amq_blk_add_atomic(block_of(f, i, h), amq_blk_u(h), f->parts[i].k);
        if (r)
            atomic_fetch_add_explicit(&f->parts[i].items, 1, memory_order_relaxed);
    } else {
        r = amq_blk_add_exclusive(block_of(f, i, h), amq_blk_u(h), f->parts[i].k);
        if (r)
            atomic_store_explicit(&f->parts[i].items,
                                  atomic_load_explicit(&f->parts[i].items, memory_order_relaxed) +
                                      1,
                                  memory_order_relaxed);
    }
    return r;
}

int amq_partitioned_add(amq_partitioned *f, const void *key, size_t len)
{
    return amq_partitioned_add_hash(f, amq_blk_hash(f->hash_algo, f->seed, key, len));
}

int amq_partitioned_contains_hash(const amq_partitioned *f, amq_hash128 h)
{
    uint32_t i = part_of(f->nparts, h);
    int rc = touch(f, i);
    if (rc != AMQ_OK)
        return rc;
    return f->simd->test(block_of(f, i, h), amq_blk_u(h), f->parts[i].k);
}

int amq_partitioned_contains(const amq_partitioned *f, const void *key, size_t len)
{
    return amq_partitioned_contains_hash(f, amq_blk_hash(f->hash_algo, f->seed, key, len));
}

/* ---- batched --------------------------------------------------------------------------------
 * In chunks of PQ_CHUNK keys: chunk c + 1 is placed (partition, block) and
 * its blocks prefetched, then chunk c is answered or added by the path's
 * test_slots / add_slots - one call per chunk rather than one per key
 * through the path table, with 64 to 128 keys of lead, and the path's
 * whole-block add rather than a store per probe (measured faster than a
 * ring of one call per key, for queries, adds and builds).  A key whose
 * partition failed verification is answered from a block of all
 * ones ("maybe present"); an add stops there (AMQ_ECHECKSUM), the keys
 * before it added.
 */

#define PQ_CHUNK 64

static const uint64_t all_ones[8] __attribute__((aligned(64))) = {
    UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};

/* Place n <= PQ_CHUNK keys and prefetch their blocks (into L2 when the
 * filter is far larger than the caches, as the blocked kind's queries). */
static void place_chunk(const amq_partitioned *f, const amq_hash128 *h, size_t n,
                        amq_blk_pslot *s, int far)
{
    size_t j;
    for (j = 0; j < n; j++) {
        uint32_t i = part_of(f->nparts, h[j]);
        s[j].u = amq_blk_u(h[j]);
        s[j].k = f->parts[i].k;
        if (touch(f, i) != AMQ_OK) {
            s[j].blk = (const uint8_t *)all_ones;
            continue;
        }
        s[j].blk = block_of(f, i, h[j]);
        if (far)
            AMQ_BLK_PREFETCH_L2(s[j].blk);
        else
            AMQ_BLK_PREFETCH(s[j].blk);
    }
}

int amq_partitioned_contains_batch(const amq_partitioned *f, const amq_hash128 *h, size_t n,
                                   uint8_t *out, uint64_t *maybe)
{
    amq_blk_pslot s[2][PQ_CHUNK];
    const int far = amq_blk_far(f->data.size);
    size_t c, nc = (n + PQ_CHUNK - 1) / PQ_CHUNK, at, m;
    uint64_t count = 0;

    for (c = 0; c <= nc; c++) {
        if (c < nc) {
            at = c * PQ_CHUNK;
            m = n - at < PQ_CHUNK ? n - at : PQ_CHUNK;
            place_chunk(f, h + at, m, s[c & 1], far);
        }
        if (c > 0) {
            at = (c - 1) * PQ_CHUNK;
            m = n - at < PQ_CHUNK ? n - at : PQ_CHUNK;
            count += f->simd->test_slots(s[(c - 1) & 1], m, out != NULL ? out + at : NULL);
        }
    }
    if (maybe != NULL)
        *maybe = count;
    return AMQ_OK;
}

/* Place n <= PQ_CHUNK keys for adding, their blocks prefetched for
 * writing, and their partitions in pix[]; returns how many precede the
 * first whose partition failed verification (n if none). */
static size_t place_chunk_w(const amq_partitioned *f, const amq_hash128 *h, size_t n,
                            amq_blk_pslot *s, uint32_t *pix)
{
    size_t j;
    for (j = 0; j < n; j++) {
        uint32_t i = part_of(f->nparts, h[j]);
        if (touch(f, i) != AMQ_OK)
            return j;
        pix[j] = i;
        s[j].u = amq_blk_u(h[j]);
        s[j].k = f->parts[i].k;
        s[j].blk = block_of(f, i, h[j]);
        AMQ_BLK_PREFETCHW(s[j].blk);
    }
    return n;
}

/* Add n <= PQ_CHUNK placed keys (atomic ORs in concurrent mode) and count
 * each new one in its partition. */
static uint64_t add_chunk(amq_partitioned *f, const amq_blk_pslot *s, const uint32_t *pix,
                          size_t n, uint8_t *added)
{
    const amq_blk_simd_ops *ops = f->concurrent ? amq_blk_ops_concurrent : f->simd;
    uint8_t fresh[PQ_CHUNK];
    uint64_t count = ops->add_slots(s, n, fresh);
    size_t j;

    for (j = 0; j < n; j++) {
        _Atomic uint64_t *items = &f->parts[pix[j]].items;
        if (!fresh[j])
            continue;
        if (f->concurrent)
            atomic_fetch_add_explicit(items, 1, memory_order_relaxed);
        else
            atomic_store_explicit(items, atomic_load_explicit(items, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
    }
    if (added != NULL && n > 0)
        memcpy(added, fresh, n);
    return count;
}

int amq_partitioned_add_batch(amq_partitioned *f, const amq_hash128 *h, size_t n,
                              uint8_t *added, uint64_t *newly)
{
    amq_blk_pslot s[2][PQ_CHUNK];
    uint32_t pix[2][PQ_CHUNK];
    size_t c, nc = (n + PQ_CHUNK - 1) / PQ_CHUNK, at, m, ok[2] = {0, 0};
    uint64_t count = 0;
    int rc = AMQ_OK;

    if (amq_region_is_borrowed(&f->data))
        return AMQ_EREADONLY;
    for (c = 0; c <= nc && rc == AMQ_OK; c++) {
        if (c < nc) {
            at = c * PQ_CHUNK;
            m = n - at < PQ_CHUNK ? n - at : PQ_CHUNK;
            ok[c & 1] = place_chunk_w(f, h + at, m, s[c & 1], pix[c & 1]);
            if (ok[c & 1] < m)
                nc = c + 1; /* place nothing after a failed partition */
        }
        if (c > 0) {
            at = (c - 1) * PQ_CHUNK;
            m = n - at < PQ_CHUNK ? n - at : PQ_CHUNK;
            count += add_chunk(f, s[(c - 1) & 1], pix[(c - 1) & 1], ok[(c - 1) & 1],
                               added != NULL ? added + at : NULL);
            if (ok[(c - 1) & 1] < m)
                rc = AMQ_ECHECKSUM;
        }
    }
    if (newly != NULL)
        *newly = count;
    return rc;
}

/* ---- parallel build --------------------------------------------------------------------------
 * Two passes over the hashes.  Pass 1 counts keys per partition (each
 * worker a slice of the hashes, its own histogram).  Every partition is
 * then sized for its count: at the highest load lambda* (keys per block)
 * whose best rate meets the target, blocks_i = ceil(c_i / lambda*); since
 * the rate depends on the load alone and rises with it, every partition
 * meets the target.  Pass 2: worker t owns partitions [P t / T, P (t+1) / T)
 * and reads all hashes, adding those of its partitions - no two workers
 * write the same memory, so plain stores suffice.
 */

typedef struct build_job {
    amq_partitioned *f;
    const amq_hash128 *h;
    size_t n;
    size_t from, to;   /* pass 1: slice of hashes */
    uint32_t plo, phi; /* pass 2: owned partitions */
    uint64_t *hist;    /* pass 1: nparts counters */
} build_job;

static void *count_worker(void *arg)
{
    build_job *j = arg;
    size_t i;
    for (i = j->from; i < j->to; i++)
        j->hist[part_of(j->f->nparts, j->h[i])]++;
    return NULL;
}

static void *fill_worker(void *arg)
{
    build_job *j = arg;
    amq_partitioned *f = j->f;
    amq_blk_pslot s[2][PQ_CHUNK];
    uint32_t pix[2][PQ_CHUNK], p;
    size_t i, fill = 0, prev = 0; /* keys in the chunk being placed, in the one before */
    unsigned cur = 0;

    for (i = 0; i < j->n; i++) {
        p = part_of(f->nparts, j->h[i]);
        if (p < j->plo || p >= j->phi)
            continue;
        pix[cur][fill] = p;
        s[cur][fill].u = amq_blk_u(j->h[i]);
        s[cur][fill].k = f->parts[p].k;
        s[cur][fill].blk = block_of(f, p, j->h[i]);
        AMQ_BLK_PREFETCHW(s[cur][fill].blk);
        if (++fill == PQ_CHUNK) {
            add_chunk(f, s[cur ^ 1u], pix[cur ^ 1u], prev, NULL);
            prev = fill;
            fill = 0;
            cur ^= 1u;
        }
    }
    add_chunk(f, s[cur ^ 1u], pix[cur ^ 1u], prev, NULL);
    add_chunk(f, s[cur], pix[cur], fill, NULL);
    return NULL;
}

/* Runs fn over jobs[0..t) on t threads (the caller's thread runs the last). */
static int run_jobs(void *(*fn)(void *), build_job *jobs, unsigned t)
{
    pthread_t *th = NULL;
    unsigned i, started = 0;
    int rc = AMQ_OK;

    if (t > 1) {
        th = malloc(sizeof *th * (t - 1));
        if (th == NULL)
            return AMQ_ENOMEM;
    }
    for (i = 0; i + 1 < t; i++) {
        if (pthread_create(&th[i], NULL, fn, &jobs[i]) != 0) {
            rc = AMQ_ENOMEM;
            break;
        }
        started++;
    }
    if (rc == AMQ_OK)
        fn(&jobs[t - 1]);
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
    return rc;
}

int amq_partitioned_build(const amq_partitioned_params *params, const amq_hash128 *h, size_t n,
                          unsigned threads, const amq_allocator *alloc, amq_partitioned **out)
{
    amq_partitioned *f = NULL;
    build_job *jobs = NULL;
    uint64_t *hist = NULL;
    double lambda, fbest;
    uint32_t k, np, i;
    unsigned t, w;
    int rc;

    *out = NULL;
    rc = check_common(params);
    if (rc != AMQ_OK)
        return rc;
    if (params->bits_per_key > 0.0) {
        lambda = AMQ_BLOCKED_BLOCK_BITS / params->bits_per_key;
        k = amq_blk_best_k_lambda(lambda, &fbest);
    } else {
        rc = amq_blk_max_lambda(params->fpp, &lambda, &k);
        if (rc != AMQ_OK)
            return rc;
    }
    np = params->partitions;
    if (np == 0)
        np = choose_parts((uint64_t)ceil((double)(n > 0 ? n : 1) / lambda));
    if (threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (unsigned)c : 1;
    }
    t = threads < np ? threads : np;
    if (t > 256)
        t = 256;
    rc = shell(np, params->hash_algo, params->seed, alloc, &f);
    if (rc != AMQ_OK)
        return rc;
    f->capacity = n;
    jobs = calloc(t, sizeof *jobs);
    hist = calloc((size_t)t * np, sizeof *hist);
    if (jobs == NULL || hist == NULL) {
        rc = AMQ_ENOMEM;
        goto fail;
    }

    for (w = 0; w < t; w++) {
        jobs[w].f = f;
        jobs[w].h = h;
        jobs[w].n = n;
        jobs[w].from = n / t * w;
        jobs[w].to = w + 1 == t ? n : n / t * (w + 1);
        jobs[w].hist = hist + (size_t)w * np;
        jobs[w].plo = (uint32_t)((uint64_t)np * w / t);
        jobs[w].phi = (uint32_t)((uint64_t)np * (w + 1) / t);
    }
    rc = run_jobs(count_worker, jobs, t);
    if (rc != AMQ_OK)
        goto fail;
    for (i = 0; i < np; i++) {
        uint64_t c = 0;
        for (w = 0; w < t; w++)
            c += hist[(size_t)w * np + i];
        f->parts[i].capacity = c;
        f->parts[i].blocks = (uint64_t)ceil((double)c / lambda);
        if (f->parts[i].blocks < 1)
            f->parts[i].blocks = 1;
        if (f->parts[i].blocks > AMQ_BLOCKED_MAX_BLOCKS) {
            rc = AMQ_ERANGE;
            goto fail;
        }
        f->parts[i].k = k;
    }
    f->fpp = params->bits_per_key > 0.0 ? amq_blk_fpp_lambda(lambda, k) : params->fpp;
    rc = layout(f);
    if (rc != AMQ_OK)
        goto fail;
    rc = run_jobs(fill_worker, jobs, t);
    if (rc != AMQ_OK)
        goto fail;
    free(jobs);
    free(hist);
    *out = f;
    return AMQ_OK;
fail:
    free(jobs);
    free(hist);
    destroy(f);
    return rc;
}

/* ---- whole-filter operations --------------------------------------------------------------- */

static int same_geometry(const amq_partitioned *a, const amq_partitioned *b, const char **why)
{
    uint32_t i;
    if (a->nparts != b->nparts) {
        *why = "different numbers of partitions";
        return 0;
    }
    if (a->hash_algo != b->hash_algo || a->seed != b->seed) {
        *why = "different hash algorithms or seeds";
        return 0;
    }
    for (i = 0; i < a->nparts; i++)
        if (a->parts[i].blocks != b->parts[i].blocks || a->parts[i].k != b->parts[i].k) {
            *why = "partitions of different sizes";
            return 0;
        }
    return 1;
}

int amq_partitioned_merge(amq_partitioned *dst, const amq_partitioned *src)
{
    const char *why;
    size_t off;
    uint32_t i;
    uint64_t a, c, si;

    if (!same_geometry(dst, src, &why))
        return AMQ_EINCOMPAT;
    if (amq_region_is_borrowed(&dst->data))
        return AMQ_EREADONLY;
    if (amq_partitioned_verify(dst, NULL) != AMQ_OK || amq_partitioned_verify(src, NULL) != AMQ_OK)
        return AMQ_ECHECKSUM;
    for (i = 0; i < dst->nparts; i++) {
        const part *p = &dst->parts[i];
        uint64_t changed = 0, end = p->offset + p->blocks * 64;
        for (off = p->offset; off < end; off += 8) {
            a = amq_blk_word(dst->data.data + off, 0);
            c = amq_blk_word(src->data.data + off, 0);
            changed |= c & ~a;
            atomic_store_explicit(amq_blk_word_ptr(dst->data.data + off, 0), a | c,
                                  memory_order_relaxed);
        }
        a = atomic_load_explicit(&dst->parts[i].items, memory_order_relaxed);
        si = atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&src->parts[i].items,
                                  memory_order_relaxed);
        atomic_store_explicit(&dst->parts[i].items,
                              amq_union_items(a, si,
                                              amq_blk_estimate_items(part_data(dst, i), p->blocks,
                                                                     p->k),
                                              changed != 0),
                              memory_order_relaxed);
    }
    return AMQ_OK;
}

int amq_partitioned_clear(amq_partitioned *f)
{
    uint32_t i;
    if (amq_region_is_borrowed(&f->data))
        return AMQ_EREADONLY;
    memset(f->data.data, 0, f->data.size);
    for (i = 0; i < f->nparts; i++) {
        atomic_store_explicit(&f->parts[i].items, 0, memory_order_relaxed);
        atomic_store_explicit(&f->state[i], ST_OK, memory_order_relaxed);
    }
    atomic_store_explicit(&f->failed, 0, memory_order_relaxed);
    return AMQ_OK;
}

int amq_partitioned_partition_info(const amq_partitioned *f, uint32_t i, amq_partition_info *info)
{
    uint8_t s;
    if (i >= f->nparts)
        return AMQ_ERANGE;
    info->offset = f->parts[i].offset;
    info->blocks = f->parts[i].blocks;
    info->k = f->parts[i].k;
    info->items = atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&f->parts[i].items,
                                       memory_order_relaxed);
    info->capacity = f->parts[i].capacity;
    s = atomic_load_explicit(&f->state[i], memory_order_acquire);
    info->verified = s == ST_OK ? 1 : s == ST_BAD ? -1 : 0;
    return AMQ_OK;
}

int amq_partitioned_set_concurrent(amq_partitioned *f, int on)
{
    if (amq_region_is_borrowed(&f->data))
        return AMQ_EREADONLY;
    f->concurrent = on != 0;
    return AMQ_OK;
}

int amq_partitioned_set_simd(amq_partitioned *f, uint32_t simd)
{
    const amq_blk_simd_ops *o;
    if (simd > AMQ_SIMD_AVX512)
        return AMQ_EINVAL;
    o = amq_blk_simd_select(simd);
    if (o == NULL)
        return AMQ_EUNSUPPORTED;
    f->simd = o;
    return AMQ_OK;
}

uint64_t amq_partitioned_items(const amq_partitioned *f)
{
    uint64_t n = 0;
    uint32_t i;
    for (i = 0; i < f->nparts; i++)
        n += atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&f->parts[i].items,
                                  memory_order_relaxed);
    return n;
}

size_t amq_partitioned_bytes(const amq_partitioned *f)
{
    return f->data.size;
}

int amq_partitioned_is_readonly(const amq_partitioned *f)
{
    return amq_region_is_borrowed(&f->data);
}

/* ---- the kind's table for the generic handle ------------------------------------------------ */

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_partitioned_params p;
    amq_partitioned *f;
    int rc;

    memset(&p, 0, sizeof p);
    p.partitions = cfg->partitions;
    p.hash_algo = cfg->hash_algo;
    p.seed = cfg->seed;
    p.capacity = cfg->capacity;
    p.fpp = cfg->fpp;
    p.bits_per_key = cfg->bits_per_key; /* 0: by fpp; NaN, negatives: refused */
    rc = amq_partitioned_new(&p, cfg->alloc, &f);
    if (rc != AMQ_OK)
        return amq_err(err, rc,
                       "cannot create a partitioned filter for %llu items at rate %g"
                       " (%u partitions, at most %u): %s",
                       (unsigned long long)cfg->capacity, cfg->fpp, cfg->partitions,
                       AMQ_PARTITIONED_MAX_PARTITIONS, amq_strerror(rc));
    *impl = f;
    return AMQ_OK;
}

static void op_destroy(void *impl)
{
    destroy(impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    const amq_partitioned *src = impl;
    amq_partitioned *f;
    uint32_t i;
    size_t off;
    int rc;

    rc = amq_partitioned_verify(src, NULL);
    if (rc != AMQ_OK)
        return rc;
    rc = shell(src->nparts, src->hash_algo, src->seed, alloc, &f);
    if (rc != AMQ_OK)
        return rc;
    f->capacity = src->capacity;
    f->fpp = src->fpp;
    f->concurrent = src->concurrent;
    f->simd = src->simd;
    for (i = 0; i < src->nparts; i++) {
        f->parts[i].blocks = src->parts[i].blocks;
        f->parts[i].k = src->parts[i].k;
        f->parts[i].capacity = src->parts[i].capacity;
        atomic_store_explicit(
            &f->parts[i].items,
            atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&src->parts[i].items,
                                 memory_order_relaxed),
            memory_order_relaxed);
    }
    rc = layout(f);
    if (rc != AMQ_OK) {
        destroy(f);
        return rc;
    }
    for (off = 0; off < src->data.size; off += 8) {
        uint64_t w = amq_blk_word(src->data.data + off, 0);
        memcpy(f->data.data + off, &w, 8);
    }
    *out = f;
    return AMQ_OK;
}

/* The entries that only forward to the family's functions (kind.h). */
AMQ_KIND_FWD_HASH_SPEC(amq_partitioned, hash_algo, seed)
AMQ_KIND_FWD_ADD(amq_partitioned)
AMQ_KIND_FWD_CONTAINS(amq_partitioned)
AMQ_KIND_FWD_CLEAR(amq_partitioned)
AMQ_KIND_FWD_IS_READONLY(amq_partitioned)
AMQ_KIND_FWD_ADD_BATCH(amq_partitioned)
AMQ_KIND_FWD_CONTAINS_BATCH(amq_partitioned)
AMQ_KIND_FWD_SET_CONCURRENT(amq_partitioned)

static int op_merge(void *dst, const void *src, amq_errinfo *err)
{
    const char *why = NULL;
    int rc;
    if (!same_geometry(dst, src, &why))
        return amq_err(err, AMQ_EINCOMPAT, "cannot merge partitioned filters with %s", why);
    rc = amq_partitioned_merge(dst, src);
    if (rc == AMQ_ECHECKSUM)
        return amq_err(err, rc, "cannot merge: a partition failed its checksum");
    return rc;
}

/* Swamidass-Baldi: items that set x of m bits with k probes. */
static double items_from_bits(uint64_t x, uint64_t m, uint32_t k)
{
    if (m == 0 || k == 0 || x >= m)
        return 0.0;
    return -((double)m / (double)k) * log1p(-(double)x / (double)m);
}

/* Keeps what both filters may hold: the AND of every partition's blocks;
 * each partition's count becomes |A| + |B| - |A u B| estimated from its
 * bits (as the bloom kind's intersection). */
static int op_intersect(void *dstv, const void *srcv, amq_errinfo *err)
{
    amq_partitioned *dst = dstv;
    const amq_partitioned *src = srcv;
    const char *why = NULL;
    uint32_t i;

    if (!same_geometry(dst, src, &why))
        return amq_err(err, AMQ_EINCOMPAT, "cannot intersect partitioned filters with %s", why);
    if (amq_region_is_borrowed(&dst->data))
        return AMQ_EREADONLY;
    if (amq_partitioned_verify(dst, NULL) != AMQ_OK || amq_partitioned_verify(src, NULL) != AMQ_OK)
        return amq_err(err, AMQ_ECHECKSUM, "cannot intersect: a partition failed its checksum");
    for (i = 0; i < dst->nparts; i++) {
        part *p = &dst->parts[i];
        uint8_t *d = dst->data.data + p->offset;
        const uint8_t *c = src->data.data + src->parts[i].offset;
        uint64_t off, a, b, xa = 0, xc = 0, xu = 0, m = p->blocks * 512, lim, si;
        double est;
        for (off = 0; off < p->blocks * 64; off += 8) {
            a = amq_blk_word(d + off, 0);
            b = amq_blk_word(c + off, 0);
            xa += (uint64_t)__builtin_popcountll(a);
            xc += (uint64_t)__builtin_popcountll(b);
            xu += (uint64_t)__builtin_popcountll(a | b);
            atomic_store_explicit(amq_blk_word_ptr(d + off, 0), a & b, memory_order_relaxed);
        }
        est = items_from_bits(xa, m, p->k) + items_from_bits(xc, m, p->k) -
              items_from_bits(xu, m, p->k);
        lim = atomic_load_explicit(&p->items, memory_order_relaxed);
        si = atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&src->parts[i].items,
                                  memory_order_relaxed);
        lim = si < lim ? si : lim;
        est = est < 0.0 ? 0.0 : floor(est + 0.5);
        atomic_store_explicit(&p->items, est < (double)lim ? (uint64_t)est : lim,
                              memory_order_relaxed);
    }
    return AMQ_OK;
}

static double part_fill_rate(const uint8_t *d, uint64_t blocks, uint32_t k, const double *table)
{
    uint64_t b;
    double sum = 0.0;
    unsigned w, c;
    for (b = 0; b < blocks; b++) {
        c = 0;
        for (w = 0; w < 8; w++)
            c += (unsigned)__builtin_popcountll(amq_blk_word(d + b * 64, w));
        sum += table[c];
    }
    (void)k;
    return sum / (double)blocks;
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_partitioned *f = impl;
    double target, now = 0.0, table[AMQ_BLOCKED_BLOCK_BITS + 1];
    uint64_t blocks = 0, set = 0, off;
    uint32_t i, c, k0 = f->parts[0].k, same = 1, table_k = 0;

    for (i = 0; i < f->nparts; i++) {
        const part *p = &f->parts[i];
        blocks += p->blocks;
        if (p->k != k0)
            same = 0;
        if (i == 0 || p->k != table_k) {
            for (c = 0; c <= AMQ_BLOCKED_BLOCK_BITS; c++)
                table[c] = pow((double)c / AMQ_BLOCKED_BLOCK_BITS, (double)p->k);
            table_k = p->k;
        }
        now += part_fill_rate(part_data(f, i), p->blocks, p->k, table);
    }
    for (off = 0; off < f->data.size; off += 8)
        set += (uint64_t)__builtin_popcountll(amq_blk_word(f->data.data + off, 0));
    /* The expected rate at capacity: keys spread over all blocks as over
     * one blocked filter (exact for equal partitions; for a build, whose
     * partitions each meet the target at their own load, the same load
     * overall). */
    target = amq_blocked_fpp_theory(blocks, k0, f->capacity);
    /* Absent keys pick partitions uniformly: the rates average. */
    st->items = amq_partitioned_items(f);
    st->capacity = f->capacity;
    st->bytes = f->data.size;
    st->bits = blocks * AMQ_BLOCKED_BLOCK_BITS;
    st->hashes = same ? k0 : 0;
    st->fpp_target = target;
    st->fpp_now = now / f->nparts;
    st->fill = (double)set / (double)st->bits;
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_partitioned *f = impl;
    uint64_t blocks = 0, minb = UINT64_MAX, maxb = 0;
    uint32_t i, unverified = 0;

    for (i = 0; i < f->nparts; i++) {
        blocks += f->parts[i].blocks;
        if (f->parts[i].blocks < minb)
            minb = f->parts[i].blocks;
        if (f->parts[i].blocks > maxb)
            maxb = f->parts[i].blocks;
        if (atomic_load_explicit(&f->state[i], memory_order_relaxed) != ST_OK)
            unverified++;
    }
    return AMQ_FIELDS(fn, ctx, AMQ_U64("partitions", f->nparts), AMQ_U64("blocks", blocks),
                      AMQ_U64("partition_blocks_min", minb), AMQ_U64("partition_blocks_max", maxb),
                      AMQ_U64("hashes", f->parts[0].k),
                      AMQ_U64("unverified_partitions", unverified),
                      AMQ_STR("query_path", f->simd->name));
}

/* Parameter block (32 bytes, little-endian):
 *   u32 partitions, u32 layout (0), u64 capacity, f64 fpp, u64 zero. */
#define PART_PARAMS_SIZE 32

AMQ_KIND_FIXED_PARAMS(PART_PARAMS_SIZE)

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_partitioned *f = impl;
    amq_store32(out, f->nparts);
    amq_store32(out + 4, 0);
    amq_store64(out + 8, f->capacity);
    amq_storef64(out + 16, f->fpp);
    amq_store64(out + 24, 0);
}

static uint64_t data_offset(uint32_t nparts)
{
    return (INDEX_HEADER + (uint64_t)ENTRY_SIZE * nparts + 63) / 64 * 64;
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_partitioned *f = impl;
    return data_offset(f->nparts) + f->data.size;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_partitioned *f = impl;
    uint64_t off = data_offset(f->nparts);
    uint8_t *index;
    uint32_t i;
    int rc;

    /* Partitions never verified (a trusted load) are verified first: their
     * stored checksums would otherwise be written unchecked. */
    rc = amq_partitioned_verify(f, NULL);
    if (rc != AMQ_OK)
        return rc;
    index = calloc(1, (size_t)off);
    if (index == NULL)
        return AMQ_ENOMEM;
    amq_store32(index + 8, f->nparts);
    amq_store32(index + 12, ENTRY_SIZE);
    amq_store64(index + 16, off);
    amq_store64(index + 24, f->data.size);
    for (i = 0; i < f->nparts; i++) {
        const part *p = &f->parts[i];
        uint8_t *e = index + INDEX_HEADER + (size_t)i * ENTRY_SIZE;
        amq_store64(e, p->offset);
        amq_store64(e + 8, p->blocks);
        amq_store32(e + 16, p->k);
        amq_store32(e + 20, 0);
        amq_store64(e + 24, atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&p->items,
                                                 memory_order_relaxed));
        amq_store64(e + 32, p->capacity);
        amq_store64(e + 40, amq_checksum(part_data(f, i), (size_t)(p->blocks * 64)));
    }
    amq_store64(index, amq_checksum(index + INDEX_HEADER, (size_t)ENTRY_SIZE * f->nparts));
    rc = amq_sink_write(sink, index, (size_t)off);
    free(index);
    if (rc != AMQ_OK)
        return rc;
    return amq_sink_write(sink, f->data.data, f->data.size);
}

static int op_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    amq_partitioned *f = NULL;
    uint32_t np, i;
    uint64_t off, data_len, expect = 0, items = 0;
    const uint8_t *index;
    double fpp;
    int rc;

    if (a->params_len != PART_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "partitioned parameter block is %zu bytes, expected %d",
                       a->params_len, PART_PARAMS_SIZE);
    np = amq_load32(a->params);
    if (amq_load32(a->params + 4) != 0)
        return amq_err(err, AMQ_EVERSION, "partitioned layout %u is not supported",
                       amq_load32(a->params + 4));
    fpp = amq_loadf64(a->params + 16);
    if (np == 0 || np > AMQ_PARTITIONED_MAX_PARTITIONS || !(fpp >= 0.0 && fpp < 1.0) ||
        amq_load64(a->params + 24) != 0)
        return amq_err(err, AMQ_ECORRUPT, "invalid partitioned parameters (%u partitions)", np);
    off = data_offset(np);
    if (a->payload_len < off)
        return amq_err(err, AMQ_ECORRUPT,
                       "partitioned payload of %llu bytes cannot hold its"
                       " index of %u partitions",
                       (unsigned long long)a->payload_len, np);
    index = a->payload;
    if (amq_load32(index + 8) != np || amq_load32(index + 12) != ENTRY_SIZE ||
        amq_load64(index + 16) != off || amq_load64(index + 24) != a->payload_len - off)
        return amq_err(err, AMQ_ECORRUPT, "partitioned index header does not match its file");
    if (amq_load64(index) != amq_checksum(index + INDEX_HEADER, (size_t)ENTRY_SIZE * np))
        return amq_err(err, AMQ_ECHECKSUM, "partitioned index checksum mismatch");
    for (i = 32; i < INDEX_HEADER; i++)
        if (index[i] != 0)
            return amq_err(err, AMQ_ECORRUPT, "partitioned index header reserved bytes not zero");
    for (i = INDEX_HEADER + ENTRY_SIZE * np; i < off; i++)
        if (index[i] != 0)
            return amq_err(err, AMQ_ECORRUPT, "partitioned index padding is not zero");
    data_len = a->payload_len - off;

    rc = shell(np, a->hash_algo, a->seed, a->alloc, &f);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "out of memory");
    f->capacity = amq_load64(a->params + 8);
    f->fpp = fpp;
    for (i = 0; i < np; i++) {
        const uint8_t *e = index + INDEX_HEADER + (size_t)i * ENTRY_SIZE;
        part *p = &f->parts[i];
        p->offset = amq_load64(e);
        p->blocks = amq_load64(e + 8);
        p->k = amq_load32(e + 16);
        p->capacity = amq_load64(e + 32);
        p->checksum = amq_load64(e + 40);
        atomic_store_explicit(&p->items, amq_load64(e + 24), memory_order_relaxed);
        if (p->offset != expect || p->blocks == 0 || p->blocks > AMQ_BLOCKED_MAX_BLOCKS ||
            p->blocks * 64 > data_len - expect || p->k == 0 || p->k > AMQ_BLOCKED_MAX_K ||
            amq_load32(e + 20) != 0) {
            rc = amq_err(err, AMQ_ECORRUPT,
                         "partition %u: invalid entry (offset %llu, blocks %llu, k %u)", i,
                         (unsigned long long)p->offset, (unsigned long long)p->blocks, p->k);
            destroy(f);
            return rc;
        }
        expect += p->blocks * 64;
        /* a forged count must not wrap into the header's */
        if (amq_add64(items, amq_load64(e + 24), &items) != AMQ_OK) {
            destroy(f);
            return amq_err(err, AMQ_ECORRUPT, "partition item counts overflow 64 bits");
        }
    }
    if (expect != data_len) {
        destroy(f);
        return amq_err(err, AMQ_ECORRUPT, "partitions cover %llu of %llu data bytes",
                       (unsigned long long)expect, (unsigned long long)data_len);
    }
    if (items != a->items) {
        destroy(f);
        return amq_err(err, AMQ_ECORRUPT, "partition item counts sum to %llu, the header says %llu",
                       (unsigned long long)items, (unsigned long long)a->items);
    }
    if (a->borrow && ((uintptr_t)(a->payload + off) & 63) == 0) {
        amq_region_borrow(&f->data, a->payload + off, (size_t)data_len);
    } else {
        rc = amq_region_copy(&f->data, &f->alloc, a->payload + off, (size_t)data_len);
        if (rc != AMQ_OK) {
            destroy(f);
            return amq_err(err, AMQ_ENOMEM, "out of memory");
        }
    }
    if (a->trusted) {
        for (i = 0; i < np; i++)
            atomic_store_explicit(&f->state[i], ST_UNVERIFIED, memory_order_relaxed);
    } else {
        /* The container's checksum held; each partition's must too, or the
         * same file would answer differently when trusted (lazily checked)
         * and saving it would write other checksums than it read. */
        for (i = 0; i < np; i++)
            if (amq_checksum(part_data(f, i), (size_t)(f->parts[i].blocks * 64)) !=
                f->parts[i].checksum) {
                destroy(f);
                return amq_err(err, AMQ_ECHECKSUM, "partition %u checksum mismatch", i);
            }
    }
    *impl = f;
    return AMQ_OK;
}

const amq_kind_ops amq_partitioned_ops = {
    .kind = AMQ_KIND_PARTITIONED,
    .name = "partitioned",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .merge = op_merge,
    .intersect = op_intersect,
    .set_concurrent = op_set_concurrent,
};
