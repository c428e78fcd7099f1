/*
 * subject_peers.c - the peers' own code as rows (bench/peers/: built from
 * AMQ_PEERS by the Makefile, never copied into the repo):
 * FastFilter/xor_singleheader's binary_fuse8 and binary_fuse16
 * (populate, then contain per key), efficient/cuckoofilter's
 * CuckooFilter<uint64_t, 12> (Add, Contain) and jbapple/libfilter's block
 * filter (libfilter_block_add_hash / _find_hash, the key used as its
 * hash, as libfilter's own benchmark does).  The peers take 64-bit keys:
 * they get the 8-byte key as it lies in memory.  A peer whose code is not
 * there registers no row and leaves a "skipped" line (bench_skipped).
 */
#include <stdlib.h>

#include "bench.h"
#include "peers/peers.h"

/* ---- binary fuse ------------------------------------------------------------------------ */

typedef struct xfuse_row {
    unsigned bits;
    amqb_xfuse *f;
} xfuse_row;

static void *xfuse_make(unsigned bits)
{
    xfuse_row *r = calloc(1, sizeof *r);
    if (r != NULL)
        r->bits = bits;
    return r;
}

static void *xfuse8_create(uint64_t n, double fpp)
{
    (void)n;
    (void)fpp;
    return xfuse_make(8);
}

static void *xfuse16_create(uint64_t n, double fpp)
{
    (void)n;
    (void)fpp;
    return xfuse_make(16);
}

static void xfuse_destroy(void *f)
{
    xfuse_row *r = f;
    amqb_xfuse_free(r->f);
    free(r);
}

/* The whole build (allocate + populate): a static filter takes its keys at once. */
static uint64_t xfuse_insert(void *f, const uint64_t *keys, size_t n)
{
    xfuse_row *r = f;
    amqb_xfuse_free(r->f);
    r->f = amqb_xfuse_build(r->bits, keys, 8, n);
    return r->f != NULL ? 0 : n;
}

static uint64_t xfuse_query(void *f, const uint64_t *keys, size_t n)
{
    const xfuse_row *r = f;
    return r->f != NULL ? amqb_xfuse_query(r->f, keys, 8, n) : 0;
}

static uint64_t xfuse_bytes(const void *f)
{
    const xfuse_row *r = f;
    return r->f != NULL ? amqb_xfuse_bytes(r->f) : 0;
}

static const bench_subject subject_xfuse8 = {
    .name = "xor_singleheader binary_fuse8", .family = "fuse", .peer = 1,
    .create = xfuse8_create, .destroy = xfuse_destroy, .insert = xfuse_insert,
    .query = xfuse_query, .bytes = xfuse_bytes, .no_sweep = 1,
};
static const bench_subject subject_xfuse16 = {
    .name = "xor_singleheader binary_fuse16", .family = "fuse", .peer = 1,
    .create = xfuse16_create, .destroy = xfuse_destroy, .insert = xfuse_insert,
    .query = xfuse_query, .bytes = xfuse_bytes, .no_sweep = 1,
};

/* ---- cuckoo filter ---------------------------------------------------------------------- */

static void *cref_create(uint64_t n, double fpp)
{
    (void)fpp;
    return amqb_cref_new((size_t)n);
}

static void cref_destroy(void *f)
{
    amqb_cref_free(f);
}

static uint64_t cref_insert(void *f, const uint64_t *keys, size_t n)
{
    return amqb_cref_add(f, keys, n);
}

static uint64_t cref_query(void *f, const uint64_t *keys, size_t n)
{
    return amqb_cref_query(f, keys, n);
}

static uint64_t cref_bytes(const void *f)
{
    return amqb_cref_bytes(f);
}

static const bench_subject subject_cref = {
    .name = "efficient/cuckoofilter 12-bit", .family = "cuckoo", .peer = 1,
    .create = cref_create, .destroy = cref_destroy, .insert = cref_insert,
    .query = cref_query, .bytes = cref_bytes, .no_sweep = 1,
};

/* ---- libfilter block -------------------------------------------------------------------- */

static void *lblock_create(uint64_t n, double fpp)
{
    return amqb_lblock_new((size_t)n, fpp);
}

static void lblock_destroy(void *f)
{
    amqb_lblock_free(f);
}

static uint64_t lblock_insert(void *f, const uint64_t *keys, size_t n)
{
    amqb_lblock_add(f, keys, n);
    return 0;
}

static uint64_t lblock_query(void *f, const uint64_t *keys, size_t n)
{
    return amqb_lblock_query(f, keys, n);
}

static uint64_t lblock_bytes(const void *f)
{
    return amqb_lblock_bytes(f);
}

static const bench_subject subject_lblock = {
    .name = "libfilter block, key as hash", .family = "blocked", .peer = 1,
    .create = lblock_create, .destroy = lblock_destroy, .insert = lblock_insert,
    .query = lblock_query, .bytes = lblock_bytes,
};

/* ---- registration ----------------------------------------------------------------------- */

__attribute__((constructor)) static void register_peers(void)
{
    if (amqb_xfuse_available()) {
        bench_register(&subject_xfuse8);
        bench_register(&subject_xfuse16);
    } else {
        bench_skipped("xor_singleheader binary_fuse8 and binary_fuse16",
                      "xor_singleheader/include/binaryfusefilter.h");
    }
    if (amqb_cref_available())
        bench_register(&subject_cref);
    else
        bench_skipped("efficient/cuckoofilter 12-bit", "cuckoofilter/src/cuckoofilter.h");
    if (amqb_lblock_available())
        bench_register(&subject_lblock);
    else
        bench_skipped("libfilter block", "libfilter/c/lib/block.c");
}
