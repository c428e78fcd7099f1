/*
 * blocked_bloom_scalar.c - the portable query path of the blocked Bloom
 * filter: the loops of blocked_query.h over amq_blk_test_scalar (k relaxed
 * atomic word loads, branch-free) and amq_blk_add_exclusive (a load and a
 * store per probe).  Runs on every host.
 */
#include "blocked_impl.h"

typedef struct scalar_ctx {
    uint32_t k;
} scalar_ctx;

#define BLK_NAME(x) scalar_##x
#define BLK_CTX scalar_ctx
#define BLK_CTX_INIT(c, kk) ((c).k = (kk))
#define BLK_TEST(blk, u, c) amq_blk_test_scalar((blk), (u), (c)->k)
#define BLK_ADD(blk, u, k) amq_blk_add_exclusive((blk), (u), (k))
#define BLK_SIMD AMQ_SIMD_SCALAR
#define BLK_SIMD_NAME "scalar"
#include "blocked_query.h"

const amq_blk_simd_ops *const amq_blk_ops_scalar = &scalar_ops;
