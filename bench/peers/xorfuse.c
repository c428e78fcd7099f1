/*
 * xorfuse.c - FastFilter/xor_singleheader's binary fuse filters, their own
 * code (binaryfusefilter.h from AMQ_PEERS), behind bench/peers/peers.h.
 * Built with -O3 as the project's own CMake builds it.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "peers.h"

#ifdef AMQB_HAVE_XORFUSE
#include "binaryfusefilter.h"
#endif

const char *amqb_peers_dir(void)
{
#ifdef AMQB_PEERS_DIR
    return AMQB_PEERS_DIR;
#else
    return "(not set)";
#endif
}

#ifdef AMQB_HAVE_XORFUSE

struct amqb_xfuse {
    unsigned bits;
    binary_fuse8_t f8;
    binary_fuse16_t f16;
};

int amqb_xfuse_available(void)
{
    return 1;
}

amqb_xfuse *amqb_xfuse_build(unsigned bits, const void *keys, size_t key_bytes, size_t n)
{
    amqb_xfuse *x = calloc(1, sizeof *x);
    uint64_t *h = malloc((n ? n : 1) * sizeof *h);
    const uint64_t *k = keys;
    size_t i;
    int ok;

    if (x == NULL || h == NULL || n > UINT32_MAX)
        goto fail;
    x->bits = bits;
    /* populate takes a writable array (it may remove duplicates in it) */
    if (key_bytes == 8)
        memcpy(h, keys, n * sizeof *h);
    else
        for (i = 0; i < n; i++)
            h[i] = XXH3_64bits(&k[2 * i], 16);
    if (bits == 8)
        ok = binary_fuse8_allocate((uint32_t)n, &x->f8) &&
             binary_fuse8_populate(h, (uint32_t)n, &x->f8);
    else
        ok = binary_fuse16_allocate((uint32_t)n, &x->f16) &&
             binary_fuse16_populate(h, (uint32_t)n, &x->f16);
    free(h);
    if (!ok) {
        amqb_xfuse_free(x);
        return NULL;
    }
    return x;
fail:
    free(h);
    free(x);
    return NULL;
}

uint64_t amqb_xfuse_query(const amqb_xfuse *x, const void *keys, size_t key_bytes, size_t n)
{
    const uint64_t *k = keys;
    uint64_t c = 0;
    size_t i;

    if (x->bits == 8 && key_bytes == 8)
        for (i = 0; i < n; i++)
            c += binary_fuse8_contain(k[i], &x->f8);
    else if (x->bits == 8)
        for (i = 0; i < n; i++)
            c += binary_fuse8_contain(XXH3_64bits(&k[2 * i], 16), &x->f8);
    else if (key_bytes == 8)
        for (i = 0; i < n; i++)
            c += binary_fuse16_contain(k[i], &x->f16);
    else
        for (i = 0; i < n; i++)
            c += binary_fuse16_contain(XXH3_64bits(&k[2 * i], 16), &x->f16);
    return c;
}

/* The call per key for one fingerprint width, out of line as a library's
 * entry is, and taking a key of any length as amq_filter_contains does, its
 * length tested as amq's entry tests it: an 8-byte key is the reference's own
 * input, a 16-byte key its XXH3-64 with the length a constant, another length
 * left to OTHER by a tail call (as amq's entry leaves for one), so that the
 * entry keeps no frame. */
#define XFUSE_CALL(NAME, OTHER, BITS)                                                            \
    __attribute__((noinline)) static int OTHER(const void *arg, const void *key, size_t kb)     \
    {                                                                                           \
        return binary_fuse##BITS##_contain(XXH3_64bits(key, kb),                                \
                                           &((const amqb_xfuse *)arg)->f##BITS);                \
    }                                                                                           \
    __attribute__((noinline)) static int NAME(const void *arg, const void *key, size_t kb)      \
    {                                                                                           \
        uint64_t k;                                                                             \
        if (__builtin_expect(kb == 8, 1))                                                       \
            memcpy(&k, key, 8);                                                                 \
        else if (kb == 16)                                                                      \
            k = XXH3_64bits(key, 16);                                                           \
        else                                                                                    \
            return OTHER(arg, key, kb);                                                         \
        return binary_fuse##BITS##_contain(k, &((const amqb_xfuse *)arg)->f##BITS);             \
    }

XFUSE_CALL(call8, other8, 8)
XFUSE_CALL(call16, other16, 16)

amqb_xfuse_fn amqb_xfuse_call(const amqb_xfuse *x)
{
    return x->bits == 8 ? call8 : call16;
}

uint64_t amqb_xfuse_bytes(const amqb_xfuse *x)
{
    return x->bits == 8 ? (uint64_t)x->f8.ArrayLength : (uint64_t)x->f16.ArrayLength * 2;
}

void amqb_xfuse_free(amqb_xfuse *x)
{
    if (x == NULL)
        return;
    if (x->bits == 8)
        binary_fuse8_free(&x->f8);
    else
        binary_fuse16_free(&x->f16);
    free(x);
}

#else /* the code is not here: every row that needs it is skipped */

int amqb_xfuse_available(void)
{
    return 0;
}

amqb_xfuse *amqb_xfuse_build(unsigned bits, const void *keys, size_t key_bytes, size_t n)
{
    (void)bits;
    (void)keys;
    (void)key_bytes;
    (void)n;
    return NULL;
}

uint64_t amqb_xfuse_query(const amqb_xfuse *x, const void *keys, size_t key_bytes, size_t n)
{
    (void)x;
    (void)keys;
    (void)key_bytes;
    (void)n;
    return 0;
}

amqb_xfuse_fn amqb_xfuse_call(const amqb_xfuse *x)
{
    (void)x;
    return NULL;
}

uint64_t amqb_xfuse_bytes(const amqb_xfuse *x)
{
    (void)x;
    return 0;
}

void amqb_xfuse_free(amqb_xfuse *x)
{
    (void)x;
}

#endif
