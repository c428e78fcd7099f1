/*
 * alloc.c - allocation through amq_allocator hooks; large regions.
 *
 * With the default allocator, regions of 1 MiB and more come from anonymous
 * mmap: the pages arrive zeroed (no memset pass over a 1 GiB filter) and are
 * aligned to 2 MiB and, from 2 MiB on, advised MADV_HUGEPAGE, so that
 * random probes into a large filter miss the TLB far less often (transparent
 * huge pages are in "madvise" mode on many systems).  With a caller's
 * allocator everything goes through its hooks, at exactly the size asked
 * whenever the block is aligned enough (amq_region_alloc_align).
 */
#include "common/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define AMQ_CACHE_LINE 64u
#define AMQ_MMAP_THRESHOLD ((size_t)1 << 20)
#define AMQ_HUGE_PAGE ((size_t)2 << 20)

void amq_alloc_init(amq_allocator *dst, const amq_allocator *src)
{
    if (src != NULL && src->alloc != NULL && src->free != NULL) {
        *dst = *src;
    } else {
        memset(dst, 0, sizeof *dst);
    }
}

int amq_alloc_is_default(const amq_allocator *a)
{
    return a == NULL || a->alloc == NULL;
}

/* ---- shared copies of allocators ---------------------------------------------------
 * Append-only and lock-free: a slot is claimed (EMPTY -> WRITING), filled,
 * then published (READY); readers only compare READY slots.  Two threads
 * adding the same allocator at once may both fill a slot: harmless. */
#define SHARED_SLOTS 32
enum { SLOT_EMPTY, SLOT_WRITING, SLOT_READY };
static amq_allocator shared_alloc[SHARED_SLOTS];
static _Atomic int shared_state[SHARED_SLOTS];

static int same_allocator(const amq_allocator *a, const amq_allocator *b)
{
    return a->alloc == b->alloc && a->free == b->free && a->opaque == b->opaque &&
           a->zalloc == b->zalloc;
}

const amq_allocator *amq_alloc_shared(const amq_allocator *src)
{
    amq_allocator a;
    int i, expect;

    amq_alloc_init(&a, src);
    for (i = 0; i < SHARED_SLOTS; i++) {
        int st = atomic_load_explicit(&shared_state[i], memory_order_acquire);
        if (st == SLOT_READY && same_allocator(&shared_alloc[i], &a))
            return &shared_alloc[i];
        if (st != SLOT_EMPTY)
            continue;
        expect = SLOT_EMPTY;
        if (atomic_compare_exchange_strong_explicit(&shared_state[i], &expect, SLOT_WRITING,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire)) {
            shared_alloc[i] = a;
            atomic_store_explicit(&shared_state[i], SLOT_READY, memory_order_release);
            return &shared_alloc[i];
        }
    }
    return NULL;
}

void *amq_malloc(const amq_allocator *a, size_t size)
{
    if (size == 0)
        size = 1;
    if (amq_alloc_is_default(a))
        return malloc(size);
    return a->alloc(a->opaque, size);
}

void *amq_calloc(const amq_allocator *a, size_t size)
{
    void *p;
    if (amq_alloc_is_default(a))
        return calloc(1, size == 0 ? 1 : size);
    if (a->zalloc != NULL)
        return a->zalloc(a->opaque, size == 0 ? 1 : size);
    p = amq_malloc(a, size);
    if (p != NULL)
        memset(p, 0, size);
    return p;
}

void *amq_realloc(const amq_allocator *a, void *ptr, size_t old, size_t size)
{
    void *p;
    if (size == 0)
        size = 1;
    if (amq_alloc_is_default(a))
        return realloc(ptr, size);
    p = amq_malloc(a, size);
    if (p != NULL && ptr != NULL) {
        memcpy(p, ptr, old < size ? old : size);
        amq_free(a, ptr, old);
    }
    return p;
}

void amq_free(const amq_allocator *a, void *ptr, size_t size)
{
    if (ptr == NULL)
        return;
    if (amq_alloc_is_default(a))
        free(ptr);
    else
        a->free(a->opaque, ptr, size == 0 ? 1 : size);
}

/* r is the mapping of len bytes at p, size of them usable. */
static void region_set_mmap(amq_region *r, void *p, size_t size, size_t len)
{
    r->data = p;
    r->size = size;
    r->base = p;
    r->base_size = len;
    r->how = AMQ_REGION_MMAP;
}

static int region_mmap(amq_region *r, size_t size, int huge)
{
    size_t len, lead, trail;
    uint8_t *p, *aligned;

    if (size > SIZE_MAX - AMQ_HUGE_PAGE * 2)
        return AMQ_EOVERFLOW;
    /* Round to whole huge pages and over-map by one to align the start. */
    len = (size + AMQ_HUGE_PAGE - 1) & ~(AMQ_HUGE_PAGE - 1);
    p = mmap(NULL, len + AMQ_HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED)
        return AMQ_ENOMEM;
    aligned = (uint8_t *)(((uintptr_t)p + AMQ_HUGE_PAGE - 1) & ~(uintptr_t)(AMQ_HUGE_PAGE - 1));
    lead = (size_t)(aligned - p);
    trail = AMQ_HUGE_PAGE - lead;
    if (lead != 0)
        munmap(p, lead);
    if (trail != 0)
        munmap(aligned + len, trail);
#ifdef MADV_HUGEPAGE
    /* Under 2 MiB the TLB gains nothing (512 small pages fit it) and a huge
     * page would be resident whole: 2 MiB for a 1.1 MiB filter. */
    if (huge && size >= AMQ_HUGE_PAGE)
        (void)madvise(aligned, len, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
    /* Small pages (under 2 MiB): a filter's first touch of a page is the
     * read of a read-modify-write, so lazily each page faulted twice (the
     * zero page, then its copy); one call faults them all in, written. */
    if (huge && size < AMQ_HUGE_PAGE)
        (void)madvise(aligned, (size + 4095) & ~(size_t)4095, MADV_POPULATE_WRITE);
#endif
    region_set_mmap(r, aligned, size, len);
    return AMQ_OK;
}

/*
 * A region written once from front to back and read once (a builder's
 * chunks): no TLB reach to gain from huge pages, whose first touch was the
 * slower one in measurement (a fresh 2 MiB page each), so small pages,
 * faulted in by one call rather than one fault per 4 KiB while the adds
 * run.  Kernels without MADV_POPULATE_WRITE (before 5.14) fault lazily.
 */
int amq_region_alloc_stream(amq_region *r, const amq_allocator *a, size_t size)
{
    const size_t page = 4096;
    size_t len;
    void *p;

    if (!amq_alloc_is_default(a) || size < AMQ_MMAP_THRESHOLD)
        return amq_region_alloc(r, a, size);
    memset(r, 0, sizeof *r);
    if (size > SIZE_MAX - page)
        return AMQ_EOVERFLOW;
    len = (size + page - 1) & ~(page - 1);
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return AMQ_ENOMEM;
#ifdef MADV_NOHUGEPAGE
    (void)madvise(p, len, MADV_NOHUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
    (void)madvise(p, len, MADV_POPULATE_WRITE);
#endif
    region_set_mmap(r, p, size, len);
    return AMQ_OK;
}

/*
 * Heap regions take exactly size bytes when the block the allocator returns
 * is aligned enough (always for align 1, and for large blocks, which
 * allocators hand out page-aligned); only a misaligned block is given back
 * and replaced by one over-allocated by align - 1.  Asking for size +
 * align - 1 up front pushed every power-of-two array into the allocator's
 * next size class and made hosts count memory the filter never reports.
 */
int amq_region_alloc_align(amq_region *r, const amq_allocator *a, size_t size, size_t align)
{
    uint8_t *p;
    size_t total;

    memset(r, 0, sizeof *r);
    if (amq_alloc_is_default(a) && size >= AMQ_MMAP_THRESHOLD)
        return region_mmap(r, size, 1);
    if (align == 0)
        align = 1;
    p = amq_calloc(a, size);
    if (p == NULL)
        return AMQ_ENOMEM;
    total = size == 0 ? 1 : size;
    if (((uintptr_t)p & (align - 1)) != 0) {
        amq_free(a, p, total);
        if (size > SIZE_MAX - (align - 1))
            return AMQ_EOVERFLOW;
        total = size + align - 1;
        p = amq_calloc(a, total);
        if (p == NULL)
            return AMQ_ENOMEM;
    }
    r->base = p;
    r->base_size = total;
    r->data = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    r->size = size;
    r->how = AMQ_REGION_HEAP;
    return AMQ_OK;
}

int amq_region_alloc(amq_region *r, const amq_allocator *a, size_t size)
{
    return amq_region_alloc_align(r, a, size, AMQ_CACHE_LINE);
}

/*
 * Scratch arrays of a construction, touched at random for a few passes and
 * released: mapped (2 MiB-aligned) but not madvised for huge pages: a
 * kernel whose THP mode is "always" backs them with huge pages it has at
 * hand, without the compaction stall MADV_HUGEPAGE asks for (a fuse build
 * of 10M keys took up to 1.3x the reference's time with it, its first
 * build at 1M 1.8x).
 *
 * One mapping of at most AMQ_SCRATCH_KEEP bytes is kept between
 * constructions, so that a process building many filters (a store writing
 * a filter per file) does not fault every page in and unmap it again each
 * time (its cost: docs/static.md; -DAMQ_SCRATCH_KEEP=0 keeps none).  The
 * kept pages are MADV_FREE: the kernel may take them back under memory
 * pressure (they read as zero then) and leaves them mapped otherwise.  Its
 * length is in its first 8 bytes, on a page left out of the MADV_FREE.
 */
#ifndef AMQ_SCRATCH_KEEP
#define AMQ_SCRATCH_KEEP ((size_t)64 << 20)
#endif
static _Atomic(uintptr_t) scratch_kept;

int amq_region_alloc_scratch(amq_region *r, const amq_allocator *a, size_t size, int *zeroed)
{
    uintptr_t kept;
    size_t len;

    memset(r, 0, sizeof *r);
    *zeroed = 1;
    if (!amq_alloc_is_default(a) || size < AMQ_MMAP_THRESHOLD)
        return amq_region_alloc_align(r, a, size, AMQ_CACHE_LINE);
    kept = atomic_exchange(&scratch_kept, 0);
    if (kept != 0) {
        memcpy(&len, (const void *)kept, sizeof len);
        if (len >= size) {
            region_set_mmap(r, (void *)kept, size, len);
            *zeroed = 0;
            return AMQ_OK;
        }
        munmap((void *)kept, len);
    }
    return region_mmap(r, size, 0);
}

void amq_region_free_scratch(amq_region *r, const amq_allocator *a)
{
    const size_t page = 4096;
    uintptr_t old;
    size_t len;

    if (r->how != AMQ_REGION_MMAP || r->base_size > AMQ_SCRATCH_KEEP) {
        amq_region_free(r, a);
        return;
    }
    memcpy(r->base, &r->base_size, sizeof r->base_size);
#ifdef MADV_FREE
    (void)madvise((uint8_t *)r->base + page, r->base_size - page, MADV_FREE);
#endif
    old = atomic_exchange(&scratch_kept, (uintptr_t)r->base);
    if (old != 0) {
        memcpy(&len, (const void *)old, sizeof len);
        munmap((void *)old, len);
    }
    memset(r, 0, sizeof *r);
}

/*
 * A builder's key chunks: mappings a finished builder released, kept for
 * the next one (a process building a filter per file makes the same chunk
 * sizes again), so that its adds do not fault in and zero every page anew;
 * the chunks are written before they are read, so their old bytes do not
 * matter.  At most AMQ_KEPT_SLOTS mappings and AMQ_KEPT_BYTES in all; kept
 * pages are MADV_FREE, as the scratch mapping's, and a mapping's length is
 * in its first 8 bytes, on a page left out of the MADV_FREE.
 */
#define AMQ_KEPT_SLOTS 8
#ifndef AMQ_KEPT_BYTES
#define AMQ_KEPT_BYTES ((size_t)64 << 20)
#endif
static _Atomic(uintptr_t) kept_slot[AMQ_KEPT_SLOTS];
static _Atomic(size_t) kept_bytes;

int amq_region_alloc_kept(amq_region *r, const amq_allocator *a, size_t size)
{
    size_t i, want, len;

    if (!amq_alloc_is_default(a) || size < AMQ_MMAP_THRESHOLD || size > AMQ_KEPT_BYTES)
        return amq_region_alloc(r, a, size);
    want = (size + AMQ_HUGE_PAGE - 1) & ~(AMQ_HUGE_PAGE - 1);
    for (i = 0; i < AMQ_KEPT_SLOTS; i++) {
        /* taken out before it is read: another thread may unmap what it takes */
        uintptr_t p = atomic_exchange(&kept_slot[i], 0), empty = 0;
        if (p == 0)
            continue;
        memcpy(&len, (const void *)p, sizeof len);
        if (len != want) {
            if (!atomic_compare_exchange_strong(&kept_slot[i], &empty, p)) {
                munmap((void *)p, len);
                atomic_fetch_sub(&kept_bytes, len);
            }
            continue;
        }
        atomic_fetch_sub(&kept_bytes, len);
        memset(r, 0, sizeof *r);
        region_set_mmap(r, (void *)p, size, len);
        return AMQ_OK;
    }
    return amq_region_alloc(r, a, size);
}

void amq_region_kept_release(void)
{
    size_t i, len;
    for (i = 0; i < AMQ_KEPT_SLOTS; i++) {
        uintptr_t p = atomic_exchange(&kept_slot[i], 0);
        if (p == 0)
            continue;
        memcpy(&len, (const void *)p, sizeof len);
        munmap((void *)p, len);
        atomic_fetch_sub(&kept_bytes, len);
    }
}

void amq_region_free_kept(amq_region *r, const amq_allocator *a)
{
    const size_t page = 4096;
    size_t i;

    if (r->how == AMQ_REGION_MMAP && r->base_size <= AMQ_KEPT_BYTES &&
        atomic_fetch_add(&kept_bytes, r->base_size) + r->base_size <= AMQ_KEPT_BYTES) {
        memcpy(r->base, &r->base_size, sizeof r->base_size);
#ifdef MADV_FREE
        (void)madvise((uint8_t *)r->base + page, r->base_size - page, MADV_FREE);
#endif
        for (i = 0; i < AMQ_KEPT_SLOTS; i++) {
            uintptr_t empty = 0;
            if (atomic_compare_exchange_strong(&kept_slot[i], &empty, (uintptr_t)r->base)) {
                memset(r, 0, sizeof *r);
                return;
            }
        }
    }
    if (r->how == AMQ_REGION_MMAP && r->base_size <= AMQ_KEPT_BYTES)
        atomic_fetch_sub(&kept_bytes, r->base_size);
    amq_region_free(r, a);
}

_Thread_local int amq_region_borrow_writable;
_Thread_local int amq_region_borrowed_rw;

void amq_region_borrow(amq_region *r, const void *data, size_t size)
{
    memset(r, 0, sizeof *r);
    r->data = (uint8_t *)(uintptr_t)data;
    r->size = size;
    r->how = amq_region_borrow_writable ? AMQ_REGION_BORROWED_RW : AMQ_REGION_BORROWED;
    amq_region_borrowed_rw += amq_region_borrow_writable;
}

int amq_region_copy_align(amq_region *r, const amq_allocator *a, const void *src, size_t size,
                          size_t align)
{
    int rc = amq_region_alloc_align(r, a, size, align);
    if (rc == AMQ_OK && size != 0)
        memcpy(r->data, src, size);
    return rc;
}

int amq_region_copy(amq_region *r, const amq_allocator *a, const void *src, size_t size)
{
    int rc = amq_region_alloc(r, a, size);
    if (rc == AMQ_OK && size != 0)
        memcpy(r->data, src, size);
    return rc;
}

void amq_region_free(amq_region *r, const amq_allocator *a)
{
    if (r->how == AMQ_REGION_MMAP)
        munmap(r->base, r->base_size);
    else if (r->how == AMQ_REGION_HEAP)
        amq_free(a, r->base, r->base_size);
    memset(r, 0, sizeof *r);
}

/* ---- plain blocks: a region known by its data and size alone ------------------ */

int amq_block_alloc(const amq_allocator *a, size_t size, uint8_t **out)
{
    amq_region r;
    int rc = amq_region_alloc_align(&r, a, size, 1);
    *out = rc == AMQ_OK ? r.data : NULL;
    return rc;
}

void amq_block_free(const amq_allocator *a, uint8_t *data, size_t size)
{
    if (data == NULL)
        return;
    /* As amq_region_alloc_align(.., 1) made it: the mapping of whole huge
     * pages for a large block of the default allocator, else the heap block
     * itself (align 1: data is the block's start). */
    if (!amq_block_adoptable(a, size))
        munmap(data, (size + AMQ_HUGE_PAGE - 1) & ~(AMQ_HUGE_PAGE - 1));
    else
        amq_free(a, data, size == 0 ? 1 : size);
}

int amq_block_adoptable(const amq_allocator *a, size_t size)
{
    return !(amq_alloc_is_default(a) && size >= AMQ_MMAP_THRESHOLD);
}
