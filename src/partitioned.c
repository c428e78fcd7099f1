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
#include "partitioned_internal.h"

uint32_t amq_partition_index(uint32_t partitions, amq_hash128 h)
{
    return part_of(partitions, h);
}

/* ---- life cycle -------------------------------------------------------------------- */

void amq_part_destroy(amq_partitioned *f)
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
    amq_part_destroy(f);
}

/* A filter with its index arrays allocated (data not yet). */
int amq_part_shell(uint32_t nparts, uint32_t algo, uint64_t seed, const amq_allocator *alloc,
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
    f->total = nparts;
    f->first = 0;
    f->hash_algo = algo;
    f->seed = seed;
    f->parts = amq_calloc(&a, (size_t)nparts * sizeof *f->parts);
    f->state = amq_calloc(&a, nparts);
    if (f->parts == NULL || f->state == NULL) {
        amq_part_destroy(f);
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
int amq_part_layout(amq_partitioned *f)
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
        rc = amq_blocked_blocks_for_bpk(params->capacity, params->bits_per_key, &total, &k);
    else
        rc = amq_blocked_blocks_for(params->capacity, params->fpp, &total, &k);
    if (rc != AMQ_OK)
        return rc;
    np = params->partitions != 0 ? params->partitions : choose_parts(total);
    per = (total + np - 1) / np;
    rc = amq_part_shell(np, params->hash_algo, params->seed, alloc, &f);
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
    rc = amq_part_layout(f);
    if (rc != AMQ_OK) {
        amq_part_destroy(f);
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
    if (i >= f->nparts)
        return AMQ_ERANGE; /* a slice asked for a key of another slice */
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
    return part_in(f, h);
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
    uint32_t i = part_in(f, h);
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
    uint32_t i = part_in(f, h);
    int rc;
    if (i >= f->nparts)
        return 1; /* a slice cannot tell a key of another slice: "may be present" */
    rc = touch(f, i);
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
        uint32_t i = part_in(f, h[j]);
        s[j].u = amq_blk_u(h[j]);
        if (touch(f, i) != AMQ_OK) {
            s[j].k = 1;
            s[j].blk = (const uint8_t *)all_ones;
            continue;
        }
        s[j].k = f->parts[i].k;
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
        uint32_t i = part_in(f, h[j]);
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
            if (ok[(c - 1) & 1] < m) /* AMQ_ECHECKSUM, or AMQ_ERANGE: not this slice's */
                rc = touch(f, part_in(f, h[at + ok[(c - 1) & 1]]));
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

/* Runs fn over jobs[0..t) on t threads (the caller's thread runs the last);
 * the thread handles from the filter's allocator, as all the build's memory. */
static int run_jobs(void *(*fn)(void *), build_job *jobs, unsigned t)
{
    const amq_allocator *a = &jobs[0].f->alloc;
    pthread_t *th = NULL;
    unsigned i, started = 0;
    int rc = AMQ_OK;

    if (t > 1) {
        th = amq_malloc(a, sizeof *th * (t - 1));
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
    if (th != NULL)
        amq_free(a, th, sizeof *th * (t - 1));
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
    rc = amq_part_shell(np, params->hash_algo, params->seed, alloc, &f);
    if (rc != AMQ_OK)
        return rc;
    f->capacity = n;
    /* the build's scratch from the filter's allocator: a host counts it */
    jobs = amq_calloc(&f->alloc, sizeof *jobs * t);
    hist = amq_calloc(&f->alloc, sizeof *hist * t * np);
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
    rc = amq_part_layout(f);
    if (rc != AMQ_OK)
        goto fail;
    rc = run_jobs(fill_worker, jobs, t);
    if (rc != AMQ_OK)
        goto fail;
    amq_free(&f->alloc, jobs, sizeof *jobs * t);
    amq_free(&f->alloc, hist, sizeof *hist * t * np);
    *out = f;
    return AMQ_OK;
fail:
    amq_free(&f->alloc, jobs, sizeof *jobs * t);
    amq_free(&f->alloc, hist, sizeof *hist * t * np);
    amq_part_destroy(f);
    return rc;
}

/* ---- slices: a filter cut into runs of partitions, and joined back ------------------------- */

int amq_partitioned_slice(const amq_partitioned *f, uint32_t first, uint32_t count,
                          const amq_allocator *alloc, amq_partitioned **out)
{
    amq_partitioned *s;
    uint32_t i;
    int rc;

    *out = NULL;
    if (count == 0 || first >= f->nparts || count > f->nparts - first || count == f->total)
        return AMQ_ERANGE;
    rc = amq_partitioned_verify(f, NULL); /* no unverified bytes are copied */
    if (rc != AMQ_OK)
        return rc;
    rc = amq_part_shell(count, f->hash_algo, f->seed, alloc, &s);
    if (rc != AMQ_OK)
        return rc;
    s->total = f->total;
    s->first = f->first + first;
    s->whole_capacity = is_slice(f) ? f->whole_capacity : f->capacity;
    s->capacity = capacity_share(s->whole_capacity, count, s->total);
    s->fpp = f->fpp;
    for (i = 0; i < count; i++) {
        const part *p = &f->parts[first + i];
        s->parts[i].blocks = p->blocks;
        s->parts[i].k = p->k;
        s->parts[i].capacity = p->capacity;
        atomic_store_explicit(&s->parts[i].items,
                              atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&p->items,
                                                   memory_order_relaxed),
                              memory_order_relaxed);
    }
    rc = amq_part_layout(s);
    if (rc != AMQ_OK) {
        amq_part_destroy(s);
        return rc;
    }
    memcpy(s->data.data, part_data(f, first), s->data.size);
    *out = s;
    return AMQ_OK;
}

void amq_partitioned_slice_info(const amq_partitioned *f, uint32_t *total, uint32_t *first)
{
    if (total != NULL)
        *total = f->total;
    if (first != NULL)
        *first = f->first;
}

int amq_partitioned_join(const amq_partitioned *const *slices, size_t n,
                         const amq_allocator *alloc, amq_partitioned **out, amq_errinfo *err)
{
    const amq_partitioned *a;
    amq_partitioned *f;
    uint32_t at = 0, i, j;
    uint64_t off = 0;
    size_t k;
    int rc;

    *out = NULL;
    if (n == 0)
        return amq_err(err, AMQ_EINVAL, "no slice to join");
    a = slices[0];
    for (k = 0; k < n; k++) {
        const amq_partitioned *s = slices[k];
        if (s->total != a->total || s->hash_algo != a->hash_algo || s->seed != a->seed ||
            memcmp(&s->fpp, &a->fpp, sizeof s->fpp) != 0 ||
            (is_slice(s) ? s->whole_capacity : s->capacity) !=
                (is_slice(a) ? a->whole_capacity : a->capacity))
            return amq_err(err, AMQ_EINCOMPAT,
                           "slice %zu was cut from another filter than slice 0 (partitions, "
                           "hash, rate or capacity differ)",
                           k);
        if (s->first != at)
            return amq_err(err, AMQ_EINCOMPAT,
                           "slice %zu holds partitions %u..%u of %u, the next must start at %u",
                           k, s->first, s->first + s->nparts, s->total, at);
        rc = amq_partitioned_verify(s, NULL);
        if (rc != AMQ_OK)
            return amq_err(err, rc, "slice %zu: a partition failed its checksum", k);
        at += s->nparts;
    }
    if (at != a->total)
        return amq_err(err, AMQ_EINCOMPAT, "the slices hold partitions 0..%u of %u: some missing",
                       at, a->total);
    rc = amq_part_shell(a->total, a->hash_algo, a->seed, alloc, &f);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "out of memory");
    f->capacity = is_slice(a) ? a->whole_capacity : a->capacity;
    f->fpp = a->fpp;
    for (k = 0, i = 0; k < n; k++)
        for (j = 0; j < slices[k]->nparts; j++, i++) {
            const part *p = &slices[k]->parts[j];
            f->parts[i].blocks = p->blocks;
            f->parts[i].k = p->k;
            f->parts[i].capacity = p->capacity;
            atomic_store_explicit(&f->parts[i].items,
                                  atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&p->items,
                                                       memory_order_relaxed),
                                  memory_order_relaxed);
        }
    rc = amq_part_layout(f);
    if (rc != AMQ_OK) {
        amq_part_destroy(f);
        return amq_err(err, rc, "the joined filter is too large");
    }
    for (k = 0; k < n; k++) {
        memcpy(f->data.data + off, slices[k]->data.data, slices[k]->data.size);
        off += slices[k]->data.size;
    }
    *out = f;
    return AMQ_OK;
}

/* ---- whole-filter operations --------------------------------------------------------------- */

int amq_part_same_geometry(const amq_partitioned *a, const amq_partitioned *b, const char **why)
{
    uint32_t i;
    if (a->nparts != b->nparts || a->total != b->total) {
        *why = "different numbers of partitions";
        return 0;
    }
    if (a->first != b->first) {
        *why = "different slices of a filter (a merge ORs the same partitions; slices are "
               "joined: amq import --from redis --shards N IN OUT)";
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

    if (!amq_part_same_geometry(dst, src, &why))
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
