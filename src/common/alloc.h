/*
 * alloc.h - memory through the caller's amq_allocator, and large aligned
 * zeroed regions (filter arrays) that may instead borrow caller memory.
 */
#ifndef AMQ_COMMON_ALLOC_H
#define AMQ_COMMON_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "amq.h"
#include "common/checked.h"

/* Copies *src into *dst, or the default allocator's (all NULL) when src is
 * NULL or incomplete.  Objects keep their own copy. */
void amq_alloc_init(amq_allocator *dst, const amq_allocator *src);
int amq_alloc_is_default(const amq_allocator *a);

/* A copy of *src (the default's when NULL or incomplete) that lives as long as
 * the process, shared by every caller passing an equal allocator, or NULL
 * once the table of them (32) is full: the caller then keeps its own copy.
 * For objects whose size a host counts per key (a small cuckoo chain in
 * Redis), where a pointer costs 8 bytes and a copy 32. */
const amq_allocator *amq_alloc_shared(const amq_allocator *src);

void *amq_malloc(const amq_allocator *a, size_t size);
void *amq_calloc(const amq_allocator *a, size_t size);
void amq_free(const amq_allocator *a, void *ptr, size_t size);
/* ptr (old bytes, may be NULL) grown or shrunk to size, its first
 * min(old, size) bytes kept; NULL (ptr untouched) on failure.  The default
 * allocator's realloc moves a large block's pages (mremap) instead of
 * copying and faulting in new ones; a host's allocator copies. */
void *amq_realloc(const amq_allocator *a, void *ptr, size_t old, size_t size);

/*
 * A large array: 64-byte aligned, zeroed, owned (heap or anonymous mmap
 * with huge pages advised) or borrowed (read-only caller memory).
 */
enum { AMQ_REGION_NONE = 0, AMQ_REGION_HEAP, AMQ_REGION_MMAP, AMQ_REGION_BORROWED,
       AMQ_REGION_BORROWED_RW };

/* While set (by the in-place open, around a kind's load), a borrowed region
 * is writable caller memory (a private file mapping): the kind adds to it
 * as to its own array, and never frees it. */
extern _Thread_local int amq_region_borrow_writable;
/* Writable borrows made while it was set (0: the kind copied instead). */
extern _Thread_local int amq_region_borrowed_rw;

typedef struct amq_region {
    uint8_t *data;  /* aligned start */
    size_t size;    /* usable bytes */
    void *base;     /* what to release */
    size_t base_size;
    int how;        /* AMQ_REGION_* */
} amq_region;

/* Allocates size zeroed bytes (size 0 gives a valid empty region), 64-byte
 * aligned. */
int amq_region_alloc(amq_region *r, const amq_allocator *a, size_t size);
/* The same with data aligned to align (a power of two; 1: whatever the
 * allocator gives, for arrays read bytewise or through memcpy, which then
 * take exactly size bytes from a caller's allocator). */
int amq_region_alloc_align(amq_region *r, const amq_allocator *a, size_t size, size_t align);
/* The same (zeroed, 64-byte aligned) for bytes written once in order and
 * read once: from mmap in small pages faulted in up front, not huge ones. */
int amq_region_alloc_stream(amq_region *r, const amq_allocator *a, size_t size);
/* A construction's scratch arrays, 64-byte aligned, released by
 * amq_region_free_scratch: the mapping an earlier construction released
 * when it is large enough (*zeroed 0: its bytes are left over), else fresh
 * (*zeroed 1); without the huge-page hint (alloc.c says why). */
int amq_region_alloc_scratch(amq_region *r, const amq_allocator *a, size_t size, int *zeroed);
void amq_region_free_scratch(amq_region *r, const amq_allocator *a);
/* A builder's chunk (bytes written before they are read), released by
 * amq_region_free_kept: a mapping of the same length an earlier builder
 * released (its bytes left over), else amq_region_alloc's. */
int amq_region_alloc_kept(amq_region *r, const amq_allocator *a, size_t size);
void amq_region_free_kept(amq_region *r, const amq_allocator *a);
/* Unmaps every kept chunk. */
void amq_region_kept_release(void);
/* Records caller memory without copying. */
void amq_region_borrow(amq_region *r, const void *data, size_t size);
/* Allocates a copy of size bytes at src. */
int amq_region_copy(amq_region *r, const amq_allocator *a, const void *src, size_t size);
int amq_region_copy_align(amq_region *r, const amq_allocator *a, const void *src, size_t size,
                          size_t align);
void amq_region_free(amq_region *r, const amq_allocator *a);

/*
 * Plain blocks: zeroed, no alignment, known by (data, size) alone, so that
 * an array of many of them (the links of a long cuckoo chain) needs
 * no amq_region each.  amq_block_free takes the size given to
 * amq_block_alloc.  amq_block_adoptable: 1 when a block of size bytes
 * taken from a itself (a caller's buffer) may be freed by amq_block_free
 * (not so for large default-allocator blocks, which are mappings).
 */
int amq_block_alloc(const amq_allocator *a, size_t size, uint8_t **out);
void amq_block_free(const amq_allocator *a, uint8_t *data, size_t size);
int amq_block_adoptable(const amq_allocator *a, size_t size);

static inline int amq_region_is_borrowed(const amq_region *r)
{
    return r->how == AMQ_REGION_BORROWED;
}

#endif /* AMQ_COMMON_ALLOC_H */
