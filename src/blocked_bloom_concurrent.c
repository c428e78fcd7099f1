/*
 * blocked_bloom_concurrent.c - the adds of the blocked Bloom filter's
 * concurrent mode: the loops of blocked_query.h over amq_blk_add_atomic
 * (relaxed atomic OR on the 64-bit words that miss a bit), on every host.
 * Its table has adds only (BLK_ADDS_ONLY): queries in concurrent mode take
 * the filter's query path.
 */
#include "blocked_impl.h"

typedef struct concurrent_ctx {
    uint32_t k;
} concurrent_ctx;

#define BLK_NAME(x) concurrent_##x
#define BLK_CTX concurrent_ctx
#define BLK_CTX_INIT(c, kk) ((c).k = (kk))
#define BLK_TEST(blk, u, c) amq_blk_test_scalar((blk), (u), (c)->k)
#define BLK_ADD(blk, u, k) amq_blk_add_atomic((blk), (u), (k))
#define BLK_SIMD AMQ_SIMD_SCALAR
#define BLK_SIMD_NAME "scalar"
#define BLK_ADDS_ONLY
/* Concurrent mode: any number of adders, so an atomic add to the count,
 * only for a key that set a bit. */
#define BLK_COUNT(items, r)                                                                        \
    do {                                                                                           \
        if (r)                                                                                     \
            atomic_fetch_add_explicit((items), 1, memory_order_relaxed);                          \
    } while (0)
#include "blocked_query.h"

const amq_blk_simd_ops *const amq_blk_ops_concurrent = &concurrent_ops;
