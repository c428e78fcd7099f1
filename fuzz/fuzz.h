/*
 * fuzz.h - what every fuzz target shares: reading structured values out of
 * the fuzzer's bytes, a checking allocator, and FZ_CHECK.
 *
 * A target is one file fuzz/fuzz_<name>.c defining LLVMFuzzerTestOneInput
 * (and optionally LLVMFuzzerInitialize).  The same file links either with
 * libFuzzer (clang -fsanitize=fuzzer: `make fuzz`) or with fuzz/replay.c, a
 * plain main() that feeds it files (gcc or clang, ASan + UBSan: `make test`).
 * docs/reliability.md says how to add one.
 *
 * Targets check properties, not just "no crash": FZ_CHECK prints what was
 * violated and aborts, which both drivers report as a failure.
 */
#ifndef AMQ_FUZZ_H
#define AMQ_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq.h"

#if defined(__GNUC__) || defined(__clang__)
#define FZ_UNUSED __attribute__((unused))
#else
#define FZ_UNUSED
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ---- failing loudly ---------------------------------------------------------- */

/* Prints where and what, then aborts.  A function, not a macro body, so
 * that it writes to the real stderr even in the CLI targets, which rename
 * stderr (cli_capture.h). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, format(printf, 4, 5)))
#endif
static FZ_UNUSED void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...);

#include <stdarg.h>

static void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fuzz check failed at %s:%d: %s\n  ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#define FZ_CHECK(cond, ...)                                                       \
    do {                                                                          \
        if (!(cond))                                                              \
            fz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                      \
    } while (0)

/* ---- structured input ----------------------------------------------------------
 * Values are taken from the front of the input; an exhausted input yields
 * zeros, so every byte string is a valid input.
 */
typedef struct fz_in {
    const uint8_t *p;
    size_t n;
} fz_in;

static FZ_UNUSED uint8_t fz_u8(fz_in *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

/* nbytes little-endian bytes (at most 8). */
static FZ_UNUSED uint64_t fz_uint(fz_in *in, unsigned nbytes)
{
    uint64_t v = 0;
    unsigned i;
    for (i = 0; i < nbytes && i < 8; i++)
        v |= (uint64_t)fz_u8(in) << (8 * i);
    return v;
}

static FZ_UNUSED uint16_t fz_u16(fz_in *in)
{
    return (uint16_t)fz_uint(in, 2);
}

static FZ_UNUSED uint32_t fz_u32(fz_in *in)
{
    return (uint32_t)fz_uint(in, 4);
}

static FZ_UNUSED uint64_t fz_u64(fz_in *in)
{
    return fz_uint(in, 8);
}

/* A value in [lo, hi] (hi >= lo) from as few bytes as the range needs. */
static FZ_UNUSED uint64_t fz_range(fz_in *in, uint64_t lo, uint64_t hi)
{
    uint64_t span = hi - lo, v;
    unsigned nbytes = 0;
    while (nbytes < 8 && (span >> (8 * nbytes)) != 0)
        nbytes++;
    v = fz_uint(in, nbytes);
    return span == UINT64_MAX ? v : lo + v % (span + 1);
}

/* Any double, NaNs and infinities included (raw bits). */
static FZ_UNUSED double fz_f64(fz_in *in)
{
    uint64_t bits = fz_u64(in);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* A length-prefixed byte string (length byte, at most max). */
static FZ_UNUSED size_t fz_bytes(fz_in *in, size_t max, const uint8_t **out)
{
    size_t len = fz_u8(in);
    if (len > max)
        len = max;
    if (len > in->n)
        len = in->n;
    *out = in->p;
    in->p += len;
    in->n -= len;
    return len;
}

/* ---- the checking allocator ----------------------------------------------------
 * Routes a filter's memory through amq_allocator hooks that (1) refuse
 * allocations above a cap, so a forged size cannot make a target allocate
 * gigabytes (the library must answer AMQ_ENOMEM instead), (2) check that
 * every free passes the size of its allocation, and (3) count live blocks,
 * so a target can assert that nothing leaked after an error.
 */
typedef struct fz_alloc {
    size_t cap;
    size_t total_cap; /* 0: no limit on the sum of live blocks */
    size_t live_blocks;
    size_t live_bytes;
    size_t calls;
} fz_alloc;

#define FZ_HDR 16u

static FZ_UNUSED void *fz_alloc_fn(void *opaque, size_t size)
{
    fz_alloc *a = opaque;
    uint8_t *p;

    FZ_CHECK(size > 0, "the library asked for 0 bytes (the hooks promise size > 0)");
    a->calls++;
    if (size > a->cap || size > SIZE_MAX - FZ_HDR ||
        (a->total_cap != 0 && size > a->total_cap - a->live_bytes))
        return NULL;
    p = malloc(size + FZ_HDR);
    if (p == NULL)
        return NULL;
    memcpy(p, &size, sizeof size);
    a->live_blocks++;
    a->live_bytes += size;
    return p + FZ_HDR;
}

static FZ_UNUSED void fz_free_fn(void *opaque, void *ptr, size_t size)
{
    fz_alloc *a = opaque;
    uint8_t *p = (uint8_t *)ptr - FZ_HDR;
    size_t was;

    memcpy(&was, p, sizeof was);
    FZ_CHECK(was == size, "free of a %zu-byte block said %zu bytes", was, size);
    FZ_CHECK(a->live_blocks > 0, "more frees than allocations");
    a->live_blocks--;
    a->live_bytes -= size;
    free(p);
}

/* The optional zeroing hook: the library takes filter arrays from it. */
static FZ_UNUSED void *fz_zalloc_fn(void *opaque, size_t size)
{
    void *p = fz_alloc_fn(opaque, size);
    if (p != NULL)
        memset(p, 0, size);
    return p;
}

/* An allocator hooking a (cap: largest single allocation allowed), with
 * every hook of amq_allocator set (zalloc included). */
static FZ_UNUSED amq_allocator fz_allocator(fz_alloc *a, size_t cap)
{
    amq_allocator al;
    memset(&al, 0, sizeof al);
    memset(a, 0, sizeof *a);
    a->cap = cap;
    al.alloc = fz_alloc_fn;
    al.free = fz_free_fn;
    al.zalloc = fz_zalloc_fn;
    al.opaque = a;
    return al;
}

#define FZ_CHECK_NO_LEAK(a)                                                          \
    FZ_CHECK((a)->live_blocks == 0, "%zu blocks (%zu bytes) still allocated",        \
             (a)->live_blocks, (a)->live_bytes)

/* A copy of data at a chosen misalignment from a 64-byte boundary (0 or 1:
 * decoders must not assume their input is aligned). */
static FZ_UNUSED uint8_t *fz_copy_at(const uint8_t *data, size_t size, size_t misalign,
                                     void **base)
{
    uint8_t *p;
    if (posix_memalign(base, 64, size + 64) != 0)
        abort();
    p = (uint8_t *)*base + misalign;
    if (size != 0)
        memcpy(p, data, size);
    return p;
}

#endif /* AMQ_FUZZ_H */
