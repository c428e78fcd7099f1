/*
 * blocked_query.h - the query loops of the blocked Bloom filter, written
 * once and instantiated per instruction set.  Internal: included only by
 * blocked_bloom_scalar.c, _avx2.c and _avx512.c, each of which defines
 * first:
 *
 *   BLK_NAME(x)            a file-unique name for x
 *   BLK_CTX                per-call state (vector constants, lane mask)
 *   BLK_CTX_INIT(c, k)     fills a BLK_CTX for k probes
 *   BLK_TEST(blk, u, c)    1 if all probes of u are set in the block at blk
 *   BLK_ADD(blk, u, k)     sets the k probes of u in the block at blk (one
 *                          writer, no concurrent reader); 1 if a bit was new
 *   BLK_SIMD, BLK_SIMD_NAME
 *
 * and gets the functions of an amq_blk_simd_ops table named BLK_NAME(ops).
 *
 * The batched loops keep AMQ_BLK_QWINDOW blocks in flight: key i + W is
 * hashed and its block prefetched while key i is answered, so the latency
 * of one DRAM access is spread over W keys.  Keys hash ahead into a ring of
 * W slots; hashes only need their block index recomputed (one multiply).
 */
#ifndef BLK_NAME
#error "define BLK_NAME, BLK_CTX, BLK_CTX_INIT, BLK_TEST before including blocked_query.h"
#endif

#define BLK_W AMQ_BLK_QWINDOW
#ifndef BLK_FLATTEN
#define BLK_FLATTEN __attribute__((flatten))
#endif

static int BLK_NAME(test)(const uint8_t *blk, uint32_t u, uint32_t k)
{
    BLK_CTX c;
    BLK_CTX_INIT(c, k);
    return BLK_TEST(blk, u, &c);
}

static int BLK_NAME(contains)(const amq_blk_geom *g, amq_hash128 h)
{
    BLK_CTX c;
    BLK_CTX_INIT(c, g->k);
    return BLK_TEST(g->data + amq_blk_index(h.h1, g->blocks) * 64, amq_blk_u(h), &c);
}

/* One key.  8-byte keys (integers, the common case of fixed-size keys)
 * hashed with XXH3 take a flattened body in which the hash's length
 * dispatch folds away; other keys call the hash.  Kept small so that many
 * single-key queries fit in the out-of-order window at once. */
BLK_FLATTEN static int BLK_NAME(contains_key8)(const amq_blk_geom *g, const void *key)
{
    return BLK_NAME(contains)(g, amq_blk_hash(AMQ_HASH_XXH3, g->seed, key, 8));
}

__attribute__((noinline)) static amq_hash128 BLK_NAME(hash_any)(const amq_blk_geom *g,
                                                                const void *key, size_t len)
{
    return amq_blk_hash(g->hash_algo, g->seed, key, len);
}

static int BLK_NAME(contains_key)(const amq_blk_geom *g, const void *key, size_t len)
{
    if (len == 8 && g->hash_algo == AMQ_HASH_XXH3)
        return BLK_NAME(contains_key8)(g, key);
    return BLK_NAME(contains)(g, BLK_NAME(hash_any)(g, key, len));
}

static uint64_t BLK_NAME(contains_hashes)(const amq_blk_geom *g, const amq_hash128 *h, size_t n,
                                          uint8_t *out)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    uint64_t count = 0;
    size_t i, ahead = n < BLK_W ? n : BLK_W;
    BLK_CTX c;
    int r;

    BLK_CTX_INIT(c, g->k);
    for (i = 0; i < ahead; i++)
        AMQ_BLK_PREFETCH(d + amq_blk_index(h[i].h1, blocks) * 64);
    for (i = 0; i + BLK_W < n; i++) {
        AMQ_BLK_PREFETCH(d + amq_blk_index(h[i + BLK_W].h1, blocks) * 64);
        r = BLK_TEST(d + amq_blk_index(h[i].h1, blocks) * 64, amq_blk_u(h[i]), &c);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
    for (; i < n; i++) {
        r = BLK_TEST(d + amq_blk_index(h[i].h1, blocks) * 64, amq_blk_u(h[i]), &c);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
    return count;
}

/*
 * 64-bit hashes: x stands for the 128-bit hash {x, x} (block from all of x,
 * probes from its low 32 bits).  The loop the in-cache figures depend on:
 * a filter that fits the L2 cache (BLK_PF_MIN bytes or less) is not
 * prefetched - the loads are short and the prefetch would only cost a
 * multiply and a load slot per key.  A path that defines BLK_TEST_PAIR
 * answers two keys per step when k fits half its lanes.
 */
#define BLK_PF_MIN ((uint64_t)1 << 19)

static uint64_t BLK_NAME(contains_hashes64)(const amq_blk_geom *g, const uint64_t *h, size_t n,
                                            uint8_t *out)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const int pf = blocks * 64 > BLK_PF_MIN;
    uint64_t count = 0;
    size_t i = 0;
    BLK_CTX c;
    int r;

    BLK_CTX_INIT(c, g->k);
    if (pf)
        for (i = 0; i < n && i < BLK_W; i++)
            AMQ_BLK_PREFETCH(d + amq_blk_index(h[i], blocks) * 64);
    i = 0;
#ifdef BLK_TEST_PAIR
    if (BLK_PAIR_OK(&c)) {
        unsigned m;
        for (; i + 1 < n; i += 2) {
            if (pf && i + BLK_W < n)
                AMQ_BLK_PREFETCH(d + amq_blk_index(h[i + BLK_W], blocks) * 64);
            if (pf && i + BLK_W + 1 < n)
                AMQ_BLK_PREFETCH(d + amq_blk_index(h[i + BLK_W + 1], blocks) * 64);
            m = BLK_TEST_PAIR(d + amq_blk_index(h[i], blocks) * 64,
                              d + amq_blk_index(h[i + 1], blocks) * 64, (uint32_t)h[i],
                              (uint32_t)h[i + 1], &c);
            count += (m & 1u) + (m >> 1);
            if (out != NULL) {
                out[i] = (uint8_t)(m & 1u);
                out[i + 1] = (uint8_t)(m >> 1);
            }
        }
    }
#endif
    for (; i < n; i++) {
        if (pf && i + BLK_W < n)
            AMQ_BLK_PREFETCH(d + amq_blk_index(h[i + BLK_W], blocks) * 64);
        r = BLK_TEST(d + amq_blk_index(h[i], blocks) * 64, (uint32_t)h[i], &c);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
    return count;
}

/* The ring loop over keys; KEY(i) and LEN(i) give key i's bytes. */
#define BLK_RING_LOOP(KEY, LEN)                                                                    \
    do {                                                                                           \
        amq_blk_slot ring[BLK_W];                                                                  \
        amq_hash128 h_;                                                                            \
        size_t i_, ahead_ = n < BLK_W ? n : BLK_W;                                                 \
        int r_;                                                                                    \
        for (i_ = 0; i_ < ahead_; i_++) {                                                          \
            h_ = amq_blk_hash(algo, seed, KEY(i_), LEN(i_));                                       \
            ring[i_].blk = d + amq_blk_index(h_.h1, blocks) * 64;                                  \
            ring[i_].u = amq_blk_u(h_);                                                            \
            AMQ_BLK_PREFETCH(ring[i_].blk);                                                        \
        }                                                                                          \
        for (i_ = 0; i_ + BLK_W < n; i_++) {                                                       \
            amq_blk_slot s_ = ring[i_ & (BLK_W - 1)];                                              \
            h_ = amq_blk_hash(algo, seed, KEY(i_ + BLK_W), LEN(i_ + BLK_W));                       \
            ring[i_ & (BLK_W - 1)].blk = d + amq_blk_index(h_.h1, blocks) * 64;                    \
            ring[i_ & (BLK_W - 1)].u = amq_blk_u(h_);                                              \
            AMQ_BLK_PREFETCH(ring[i_ & (BLK_W - 1)].blk);                                          \
            r_ = BLK_TEST(s_.blk, s_.u, &c);                                                       \
            count += (uint64_t)r_;                                                                 \
            if (out != NULL)                                                                       \
                out[i_] = (uint8_t)r_;                                                             \
        }                                                                                          \
        for (; i_ < n; i_++) {                                                                     \
            amq_blk_slot s_ = ring[i_ & (BLK_W - 1)];                                              \
            r_ = BLK_TEST(s_.blk, s_.u, &c);                                                       \
            count += (uint64_t)r_;                                                                 \
            if (out != NULL)                                                                       \
                out[i_] = (uint8_t)r_;                                                             \
        }                                                                                          \
    } while (0)

/* flatten: the hash (XXH3's entry point is not inlined on its own) and the
 * block test become one loop body. */
BLK_FLATTEN static uint64_t BLK_NAME(contains_keys)(const amq_blk_geom *g, const amq_slice *keys,
                                                    size_t n, uint8_t *out)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks, seed = g->seed;
    const uint32_t algo = g->hash_algo;
    uint64_t count = 0;
    BLK_CTX c;

    BLK_CTX_INIT(c, g->k);
#define BLK_SLICE_KEY(i) (keys[(i)].data)
#define BLK_SLICE_LEN(i) (keys[(i)].len)
    BLK_RING_LOOP(BLK_SLICE_KEY, BLK_SLICE_LEN);
#undef BLK_SLICE_KEY
#undef BLK_SLICE_LEN
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(contains_fixed)(const amq_blk_geom *g, const uint8_t *keys,
                                                     size_t key_len, size_t n, uint8_t *out)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks, seed = g->seed;
    const uint32_t algo = g->hash_algo;
    uint64_t count = 0;
    BLK_CTX c;

    BLK_CTX_INIT(c, g->k);
#define BLK_FIXED_KEY(i) (keys + (i)*key_len)
#define BLK_FIXED_LEN(i) (key_len)
#define BLK_KEY8(i) (keys + (i)*8)
#define BLK_LEN8(i) ((size_t)8)
    /* 64-bit integer keys, the common case, get a loop of their own: the
     * hash's length dispatch folds away. */
    if (key_len == 8)
        BLK_RING_LOOP(BLK_KEY8, BLK_LEN8);
    else
        BLK_RING_LOOP(BLK_FIXED_KEY, BLK_FIXED_LEN);
#undef BLK_FIXED_KEY
#undef BLK_FIXED_LEN
#undef BLK_KEY8
#undef BLK_LEN8
    return count;
}

#undef BLK_RING_LOOP
#undef BLK_PF_MIN
#undef BLK_W

/* ---- exclusive adds: the loops of blocked_impl.h over this path's BLK_ADD,
 * flattened so that the hash and the add are one loop body. */
#define BLK_AW AMQ_BLK_WINDOW
#define BLK_ADD_K(blk, u) BLK_ADD((blk), (u), k)

static int BLK_NAME(add)(uint8_t *blk, uint32_t u, uint32_t k)
{
    return BLK_ADD(blk, u, k);
}

BLK_FLATTEN static uint64_t BLK_NAME(add_hashes)(const amq_blk_geom *g, const amq_hash128 *h,
                                                 size_t n, uint8_t *added)
{
    uint8_t *d = (uint8_t *)(uintptr_t)g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t k = g->k;
    uint64_t count = 0;
#define BLK_H1(i) (h[(i)].h1)
#define BLK_U(i) amq_blk_u(h[(i)])
    AMQ_BLK_ADD_LOOP(BLK_AW, BLK_H1, BLK_U, BLK_ADD_K);
#undef BLK_H1
#undef BLK_U
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(add_hashes64)(const amq_blk_geom *g, const uint64_t *h,
                                                   size_t n, uint8_t *added)
{
    uint8_t *d = (uint8_t *)(uintptr_t)g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t k = g->k;
    uint64_t count = 0;
#define BLK_H1(i) (h[(i)])
#define BLK_U(i) ((uint32_t)h[(i)])
    AMQ_BLK_ADD_LOOP(BLK_AW, BLK_H1, BLK_U, BLK_ADD_K);
#undef BLK_H1
#undef BLK_U
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(add_keys)(const amq_blk_geom *g, const amq_slice *keys,
                                               size_t n, uint8_t *added)
{
    uint8_t *d = (uint8_t *)(uintptr_t)g->data;
    const uint64_t blocks = g->blocks, seed = g->seed;
    const uint32_t algo = g->hash_algo, k = g->k;
    uint64_t count = 0;
#define BLK_SLICE_KEY(i) (keys[(i)].data)
#define BLK_SLICE_LEN(i) (keys[(i)].len)
    AMQ_BLK_RING_ADD(BLK_AW, BLK_SLICE_KEY, BLK_SLICE_LEN, BLK_ADD_K);
#undef BLK_SLICE_KEY
#undef BLK_SLICE_LEN
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(add_fixed)(const amq_blk_geom *g, const uint8_t *keys,
                                                size_t key_len, size_t n, uint8_t *added)
{
    uint8_t *d = (uint8_t *)(uintptr_t)g->data;
    const uint64_t blocks = g->blocks, seed = g->seed;
    const uint32_t algo = g->hash_algo, k = g->k;
    uint64_t count = 0;
#define BLK_FIXED_KEY(i) (keys + (i)*key_len)
#define BLK_FIXED_LEN(i) (key_len)
#define BLK_KEY8(i) (keys + (i)*8)
#define BLK_LEN8(i) ((size_t)8)
    if (key_len == 8)
        AMQ_BLK_RING_ADD(BLK_AW, BLK_KEY8, BLK_LEN8, BLK_ADD_K);
    else
        AMQ_BLK_RING_ADD(BLK_AW, BLK_FIXED_KEY, BLK_FIXED_LEN, BLK_ADD_K);
#undef BLK_FIXED_KEY
#undef BLK_FIXED_LEN
#undef BLK_KEY8
#undef BLK_LEN8
    return count;
}

#undef BLK_ADD_K
#undef BLK_AW

static const amq_blk_simd_ops BLK_NAME(ops) = {
    BLK_SIMD,
    BLK_SIMD_NAME,
    BLK_NAME(test),
    BLK_NAME(contains),
    BLK_NAME(contains_key),
    BLK_NAME(contains_hashes),
    BLK_NAME(contains_hashes64),
    BLK_NAME(contains_keys),
    BLK_NAME(contains_fixed),
    BLK_NAME(add),
    BLK_NAME(add_hashes),
    BLK_NAME(add_hashes64),
    BLK_NAME(add_keys),
    BLK_NAME(add_fixed),
};
