/*
 * subject_peers.c - the peers' own code as rows (bench/peers/: built from
 * AMQ_PEERS by the Makefile, never copied into the repo):
 * efficient/cuckoofilter's CuckooFilter<uint64_t, 12> (Add, Contain) and
 * jbapple/libfilter's block filter (libfilter_block_add_hash / _find_hash,
 * the key used as its hash, as libfilter's own benchmark does).  The peers
 * take 64-bit keys: they get the 8-byte key as it lies in memory.  A peer
 * whose code is not there registers no row and leaves a "skipped" line
 * (bench_skipped).  xor_singleheader's binary fuse has no row here: the
 * binary fuse section (bench/static/fuse_bench.c) runs it beside amq's,
 * 8- and 16-byte keys, and says when it is skipped.
 */
#include <stdlib.h>

#include "bench.h"
#include "peers/peers.h"

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
    if (!amqb_xfuse_available())
        bench_skipped("xor_singleheader binary_fuse8 and binary_fuse16",
                      "xor_singleheader/include/binaryfusefilter.h");
    if (amqb_cref_available())
        bench_register(&subject_cref);
    else
        bench_skipped("efficient/cuckoofilter 12-bit", "cuckoofilter/src/cuckoofilter.h");
    if (amqb_lblock_available())
        bench_register(&subject_lblock);
    else
        bench_skipped("libfilter block", "libfilter/c/lib/block.c");
}
