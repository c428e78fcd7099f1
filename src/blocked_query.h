/*
 * blocked_query.h - the batched loops of the blocked Bloom filter, written
 * once as always_inline functions and instantiated per instruction set.
 * Internal: included only by blocked_bloom_scalar.c, _avx2.c, _avx512.c
 * and _concurrent.c, each of which defines first:
 *
 *   BLK_NAME(x)            a file-unique name for x
 *   BLK_CTX                per-call state (vector constants, lane mask)
 *   BLK_CTX_INIT(c, k)     fills a BLK_CTX for k probes
 *   BLK_TEST(blk, u, c)    1 if all probes of u are set in the block at blk
 *   BLK_ADD(blk, u, k)     sets the k probes of u in the block at blk; 1 if
 *                          a bit was new
 *   BLK_SIMD, BLK_SIMD_NAME
 *   optionally BLK_HASH8 (eight 8-byte XXH3 keys hashed in vector lanes),
 *   BLK_TEST_PAIR and BLK_PAIR_OK (two keys per step), and BLK_ADDS_ONLY
 *   (the table of adds alone: the concurrent mode's)
 *
 * and gets the functions of an amq_blk_simd_ops table named BLK_NAME(ops).
 *
 * The loops (hash_loop over hashes, key_loop over keys, x8v_loop over
 * groups of eight 8-byte keys) take what varies between their uses - query
 * or add, the prefetch kind, the window, the key source, the output array
 * or NULL - as parameters that every caller passes as constants, in the
 * manner of zstd's FORCE_INLINE_TEMPLATE bodies: each entry below gets its
 * own copy of a loop with those tests folded away (an array tested, a
 * constant reloaded per key, measurably cost before).  Only the
 * combinations some entry calls are made.
 *
 * The loops keep W blocks in flight (AMQ_BLK_QWINDOW for queries,
 * AMQ_BLK_WINDOW for adds): key i + W is hashed and its block prefetched
 * while key i is answered, so the latency of one DRAM access is spread
 * over W keys.  Keys hash ahead into a ring of W slots; hashes only need
 * their block index recomputed (one multiply).
 */
#include "common/prefetch.h"

#ifndef BLK_NAME
#error "define BLK_NAME, BLK_CTX, BLK_CTX_INIT, BLK_TEST, BLK_ADD before including blocked_query.h"
#endif

#ifndef BLK_FLATTEN
#define BLK_FLATTEN __attribute__((flatten))
#endif
#define BLK_INLINE static inline __attribute__((always_inline))

/* The constant parameters of the loops. */
enum { BLK_OP_TEST, BLK_OP_ADD };                     /* what a loop does to a key */
enum { BLK_PF_NONE, BLK_PF_L1, BLK_PF_L2, BLK_PF_W }; /* its prefetch */
enum { BLK_KEYS_SLICES, BLK_KEYS_FIXED };             /* where key_loop reads keys */
enum { BLK_H64, BLK_H128 };                           /* what hash_loop reads */

/* The largest window: the size of the loops' rings. */
#define BLK_RING (AMQ_BLK_QWINDOW > AMQ_BLK_WINDOW ? AMQ_BLK_QWINDOW : AMQ_BLK_WINDOW)

BLK_INLINE void BLK_NAME(prefetch)(const uint8_t *p, const int pfk)
{
    if (pfk == BLK_PF_L1)
        AMQ_BLK_PREFETCH(p);
    else if (pfk == BLK_PF_L2)
        AMQ_BLK_PREFETCH_L2(p);
    else if (pfk == BLK_PF_W)
        AMQ_BLK_PREFETCHW(p);
}

/* A batched query's prefetch for a filter of g's size. */
static inline int BLK_NAME(pf_kind)(const amq_blk_geom *g)
{
    return amq_blk_far(g->blocks * 64) ? BLK_PF_L2 : BLK_PF_L1;
}

/* One key, tested against c or added with k probes; 1 or 0. */
BLK_INLINE int BLK_NAME(op)(const uint8_t *blk, uint32_t u, const BLK_CTX *c, uint32_t k,
                            const int op)
{
    if (op == BLK_OP_ADD)
        return BLK_ADD((uint8_t *)(uintptr_t)blk, u, k);
    return BLK_TEST(blk, u, c);
}

/* n hashes: 128-bit ones (h128) or 64-bit ones standing for {x, x} (h64). */
BLK_INLINE uint64_t BLK_NAME(hash_loop)(const amq_blk_geom *g, const BLK_CTX *c,
                                        const amq_hash128 *h128, const uint64_t *h64, size_t n,
                                        uint8_t *out, const int width, const int op,
                                        const int pfk, const size_t w)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t k = g->k;
    uint64_t count = 0;
    size_t i;

#define BLK_H1(j) (width == BLK_H128 ? h128[(j)].h1 : h64[(j)])
    for (i = 0; i < n && i < w; i++)
        BLK_NAME(prefetch)(d + amq_blk_index(BLK_H1(i), blocks) * 64, pfk);
    /* One loop while there are blocks w keys ahead to prefetch, one for
     * the last w: neither tests per key whether one is left. */
    for (i = 0; i + w < n; i++) {
        const uint32_t u = width == BLK_H128 ? amq_blk_u(h128[i]) : (uint32_t)h64[i];
        int r;
        BLK_NAME(prefetch)(d + amq_blk_index(BLK_H1(i + w), blocks) * 64, pfk);
        r = BLK_NAME(op)(d + amq_blk_index(BLK_H1(i), blocks) * 64, u, c, k, op);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
    for (; i < n; i++) {
        const uint32_t u = width == BLK_H128 ? amq_blk_u(h128[i]) : (uint32_t)h64[i];
        const int r = BLK_NAME(op)(d + amq_blk_index(BLK_H1(i), blocks) * 64, u, c, k, op);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
#undef BLK_H1
    return count;
}

/* A key's hash as the loops place it: its block and probe bits. */
BLK_INLINE amq_blk_slot BLK_NAME(place)(const uint8_t *d, uint64_t blocks, uint32_t algo,
                                        uint64_t seed, const void *key, size_t len)
{
    const amq_hash128 h = amq_blk_hash(algo, seed, key, len);
    amq_blk_slot s;
    s.blk = d + amq_blk_index(h.h1, blocks) * 64;
    s.u = amq_blk_u(h);
    return s;
}

/* n keys, as slices or packed (key_len bytes each), hashed by (algo,
 * seed): key i + w is hashed into a ring of w slots, and its block
 * prefetched, while key i is answered. */
BLK_INLINE uint64_t BLK_NAME(key_loop)(const amq_blk_geom *g, const BLK_CTX *c,
                                       const amq_slice *slices, const uint8_t *packed,
                                       size_t key_len, size_t n, uint32_t algo, uint64_t seed,
                                       uint8_t *out, const int src, const int op, const int pfk,
                                       const size_t w)
{
    /* The geometry in locals: stores to out (bytes) may alias *g. */
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t k = g->k;
    amq_blk_slot ring[BLK_RING];
    uint64_t count = 0;
    size_t i;

#define BLK_KEY(j) (src == BLK_KEYS_SLICES ? slices[(j)].data : (const void *)(packed + (j)*key_len))
#define BLK_LEN(j) (src == BLK_KEYS_SLICES ? slices[(j)].len : key_len)
    for (i = 0; i < n && i < w; i++) {
        ring[i] = BLK_NAME(place)(d, blocks, algo, seed, BLK_KEY(i), BLK_LEN(i));
        BLK_NAME(prefetch)(ring[i].blk, pfk);
    }
    /* One loop while there are keys w ahead to hash, one for the last w:
     * neither tests per key whether one is left. */
    for (i = 0; i + w < n; i++) {
        const amq_blk_slot s = ring[i & (w - 1)];
        int r;
        if (src == BLK_KEYS_FIXED)
            amq_prefetch_keys(packed, key_len, i + w);
        ring[i & (w - 1)] = BLK_NAME(place)(d, blocks, algo, seed, BLK_KEY(i + w), BLK_LEN(i + w));
        BLK_NAME(prefetch)(ring[i & (w - 1)].blk, pfk);
        r = BLK_NAME(op)(s.blk, s.u, c, k, op);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
    for (; i < n; i++) {
        const int r = BLK_NAME(op)(ring[i & (w - 1)].blk, ring[i & (w - 1)].u, c, k, op);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
#undef BLK_KEY
#undef BLK_LEN
    return count;
}

#ifdef BLK_HASH8
/*
 * Groups of eight 8-byte keys hashed with XXH3 in vector lanes (BLK_HASH8:
 * bit-exact with the scalar hash, giving the eight blocks' addresses and
 * probe bits); a group is hashed and its blocks prefetched w keys ahead of
 * the group being answered.  Filters of at most 2^32 blocks.  Answers the
 * whole groups - returns how many keys that is - and adds their results to
 * *count; the caller takes the rest.  Queries only: the adds, tried with
 * it, were no faster (their time is the lines' round trips).
 */
BLK_INLINE size_t BLK_NAME(x8v_loop)(const amq_blk_geom *g, const BLK_CTX *c, const uint8_t *keys,
                                     size_t n, uint64_t seed, uint8_t *out, uint64_t *count,
                                     const int pfk, const size_t w)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks, bitflip = amq_blk_xxh3_bitflip8(seed);
    const size_t groups = n / 8, lead = groups < w / 8 ? groups : w / 8;
    const uint8_t *blk[BLK_RING];
    uint32_t u[BLK_RING];
    uint64_t found = 0;
    size_t q, j, s;

    for (q = 0; q < lead; q++) {
        BLK_HASH8(keys + q * 64, bitflip, d, blocks, blk + q * 8, u + q * 8);
        for (j = 0; j < 8; j++)
            BLK_NAME(prefetch)(blk[q * 8 + j], pfk);
    }
    for (q = 0; q < groups; q++) {
        s = (q % (w / 8)) * 8;
        for (j = 0; j < 8; j++) {
            const int r = BLK_TEST(blk[s + j], u[s + j], c);
            found += (uint64_t)r;
            if (out != NULL)
                out[q * 8 + j] = (uint8_t)r;
        }
        if (q + w / 8 < groups) {
            amq_prefetch_keys(keys, 8, (q + w / 8) * 8); /* a line per group */
            BLK_HASH8(keys + (q + w / 8) * 64, bitflip, d, blocks, blk + s, u + s);
            for (j = 0; j < 8; j++)
                BLK_NAME(prefetch)(blk[s + j], pfk);
        }
    }
    *count += found;
    return groups * 8;
}
#endif

/*
 * 8-byte keys hashed with XXH3 (integers, the common case of packed keys)
 * have loops of their own, one for seed 0 and one for any seed: in them
 * the hash's length dispatch (and for seed 0 the seed's mixing) folds away,
 * and with no call left in the loop the compiler keeps the loop's
 * constants - the filter's geometry, the probe multipliers - in registers
 * instead of reloading them from the stack for every key.  A path with
 * BLK_HASH8 queries the whole groups of eight in vector lanes first.
 */
BLK_INLINE uint64_t BLK_NAME(x8_loop)(const amq_blk_geom *g, const BLK_CTX *c, const uint8_t *keys,
                                      size_t n, uint64_t seed, uint8_t *out, const int op,
                                      const int pfk, const size_t w)
{
    uint64_t count = 0;
#ifdef BLK_HASH8
    if (op == BLK_OP_TEST && g->blocks <= UINT32_MAX) {
        const size_t done = BLK_NAME(x8v_loop)(g, c, keys, n, seed, out, &count, pfk, w);
        if (done > 0) { /* (no arithmetic on a NULL array of no keys) */
            keys += done * 8;
            n -= done;
            if (out != NULL)
                out += done;
        }
    }
#endif
    return count + BLK_NAME(key_loop)(g, c, NULL, keys, 8, n, AMQ_HASH_XXH3, seed, out,
                                      BLK_KEYS_FIXED, op, pfk, w);
}

/* A key of any length and hash, outside the flattened bodies (its call
 * keeps them lean). */
__attribute__((noinline)) static amq_hash128 BLK_NAME(hash_any)(const amq_blk_geom *g,
                                                                const void *key, size_t len)
{
    return amq_blk_hash(g->hash_algo, g->seed, key, len);
}

#ifndef BLK_ADDS_ONLY
/* ---- queries --------------------------------------------------------------------------
 * Every batched entry calls its loop with constant arguments: one copy per
 * prefetch kind it can take (into L1; into L2 for filters over
 * AMQ_BLK_FAR_BYTES; none for a 64-bit-hash filter that fits the L2 cache)
 * and per output (an array or NULL).  The loops over keys of any length
 * and hash (contains_keys, contains_fixed but for 8-byte XXH3 keys) keep
 * one copy: their hashing dominates.
 */
#define BLK_QW ((size_t)AMQ_BLK_QWINDOW)

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

/*
 * One key.  contains_key takes any key and hash; a filter hashed with XXH3
 * queries through contains_xxh3 (or, with seed 0, contains_xxh3_seed0),
 * which give 8-byte keys (integers, the common case) a flattened body in
 * which the hash's length dispatch - and for seed 0 the seed's mixing -
 * folds away.  amq_blocked picks the entry once per filter (use_path).  Out
 * of cache a single-key query is one dependent miss, and the rate is set by
 * how many queries the out-of-order window holds at once: every
 * instruction of the path counts (a generic entry behind a stack-realigning
 * frame measured slower).
 */
__attribute__((noinline)) static int BLK_NAME(contains_key)(const amq_blk_geom *g, const void *key,
                                                            size_t len)
{
    return BLK_NAME(contains)(g, BLK_NAME(hash_any)(g, key, len));
}

/* 8- and 16-byte keys (integers, pairs of them, UUIDs) get the flattened
 * body; other lengths the call. */
BLK_FLATTEN static int BLK_NAME(contains_xxh3)(const amq_blk_geom *g, const void *key, size_t len)
{
    if (len == 8)
        return BLK_NAME(contains)(g, amq_blk_hash(AMQ_HASH_XXH3, g->seed, key, 8));
    if (len == 16)
        return BLK_NAME(contains)(g, amq_blk_hash(AMQ_HASH_XXH3, g->seed, key, 16));
    return BLK_NAME(contains_key)(g, key, len);
}

BLK_FLATTEN static int BLK_NAME(contains_xxh3_seed0)(const amq_blk_geom *g, const void *key,
                                                     size_t len)
{
    if (len == 8)
        return BLK_NAME(contains)(g, amq_blk_hash(AMQ_HASH_XXH3, 0, key, 8));
    if (len == 16)
        return BLK_NAME(contains)(g, amq_blk_hash(AMQ_HASH_XXH3, 0, key, 16));
    return BLK_NAME(contains_key)(g, key, len);
}

BLK_FLATTEN static uint64_t BLK_NAME(contains_hashes)(const amq_blk_geom *g, const amq_hash128 *h,
                                                      size_t n, uint8_t *out)
{
    BLK_CTX c;
    BLK_CTX_INIT(c, g->k);
    if (BLK_NAME(pf_kind)(g) == BLK_PF_L2)
        return out == NULL ? BLK_NAME(hash_loop)(g, &c, h, NULL, n, NULL, BLK_H128, BLK_OP_TEST,
                                                 BLK_PF_L2, BLK_QW)
                           : BLK_NAME(hash_loop)(g, &c, h, NULL, n, out, BLK_H128, BLK_OP_TEST,
                                                 BLK_PF_L2, BLK_QW);
    return out == NULL ? BLK_NAME(hash_loop)(g, &c, h, NULL, n, NULL, BLK_H128, BLK_OP_TEST,
                                             BLK_PF_L1, BLK_QW)
                       : BLK_NAME(hash_loop)(g, &c, h, NULL, n, out, BLK_H128, BLK_OP_TEST,
                                             BLK_PF_L1, BLK_QW);
}

/*
 * 64-bit hashes: x stands for the 128-bit hash {x, x} (block from all of x,
 * probes from its low 32 bits).  The loop the in-cache figures depend on: a
 * filter that fits the L2 cache (BLK_PF_MIN bytes or less) is not
 * prefetched, where a prefetch only costs a multiply and a load slot per
 * key.  A path that defines BLK_TEST_PAIR answers two keys per step when k
 * fits half its lanes.
 */
#define BLK_PF_MIN ((uint64_t)1 << 19)

BLK_INLINE uint64_t BLK_NAME(hashes64_loop)(const amq_blk_geom *g, const uint64_t *h, size_t n,
                                            uint8_t *out, const int pfk)
{
    BLK_CTX c;
    BLK_CTX_INIT(c, g->k);
#ifdef BLK_TEST_PAIR
    if (BLK_PAIR_OK(&c)) {
        const uint8_t *d = g->data;
        const uint64_t blocks = g->blocks;
        uint64_t count = 0;
        size_t i;
        unsigned m;

        for (i = 0; i < n && i < BLK_QW; i++)
            BLK_NAME(prefetch)(d + amq_blk_index(h[i], blocks) * 64, pfk);
        for (i = 0; i + 1 < n; i += 2) {
            if (i + BLK_QW < n)
                BLK_NAME(prefetch)(d + amq_blk_index(h[i + BLK_QW], blocks) * 64, pfk);
            if (i + BLK_QW + 1 < n)
                BLK_NAME(prefetch)(d + amq_blk_index(h[i + BLK_QW + 1], blocks) * 64, pfk);
            m = BLK_TEST_PAIR(d + amq_blk_index(h[i], blocks) * 64,
                              d + amq_blk_index(h[i + 1], blocks) * 64, (uint32_t)h[i],
                              (uint32_t)h[i + 1], &c);
            count += (m & 1u) + (m >> 1);
            if (out != NULL) {
                out[i] = (uint8_t)(m & 1u);
                out[i + 1] = (uint8_t)(m >> 1);
            }
        }
        if (i < n) /* the odd last key (its block prefetched above) */
            count += BLK_NAME(hash_loop)(g, &c, NULL, h + i, 1, out != NULL ? out + i : NULL,
                                         BLK_H64, BLK_OP_TEST, BLK_PF_NONE, BLK_QW);
        return count;
    }
#endif
    return BLK_NAME(hash_loop)(g, &c, NULL, h, n, out, BLK_H64, BLK_OP_TEST, pfk, BLK_QW);
}

BLK_FLATTEN static uint64_t BLK_NAME(contains_hashes64)(const amq_blk_geom *g, const uint64_t *h,
                                                        size_t n, uint8_t *out)
{
    const int pfk = g->blocks * 64 <= BLK_PF_MIN ? BLK_PF_NONE : BLK_NAME(pf_kind)(g);
    if (pfk == BLK_PF_NONE)
        return out == NULL ? BLK_NAME(hashes64_loop)(g, h, n, NULL, BLK_PF_NONE)
                           : BLK_NAME(hashes64_loop)(g, h, n, out, BLK_PF_NONE);
    if (pfk == BLK_PF_L2)
        return out == NULL ? BLK_NAME(hashes64_loop)(g, h, n, NULL, BLK_PF_L2)
                           : BLK_NAME(hashes64_loop)(g, h, n, out, BLK_PF_L2);
    return out == NULL ? BLK_NAME(hashes64_loop)(g, h, n, NULL, BLK_PF_L1)
                       : BLK_NAME(hashes64_loop)(g, h, n, out, BLK_PF_L1);
}

/* flatten: the hash (XXH3's entry point is not inlined on its own) and the
 * block test become one loop body. */
BLK_FLATTEN static uint64_t BLK_NAME(contains_keys)(const amq_blk_geom *g, const amq_slice *keys,
                                                    size_t n, uint8_t *out)
{
    BLK_CTX c;
    BLK_CTX_INIT(c, g->k);
    return BLK_NAME(key_loop)(g, &c, keys, NULL, 0, n, g->hash_algo, g->seed, out,
                              BLK_KEYS_SLICES, BLK_OP_TEST, BLK_NAME(pf_kind)(g), BLK_QW);
}

BLK_INLINE uint64_t BLK_NAME(contains_x8_seeded)(const amq_blk_geom *g, const uint8_t *keys,
                                                 size_t n, uint8_t *out, uint64_t seed)
{
    BLK_CTX c;
    BLK_CTX_INIT(c, g->k);
    if (BLK_NAME(pf_kind)(g) == BLK_PF_L2)
        return out == NULL
                   ? BLK_NAME(x8_loop)(g, &c, keys, n, seed, NULL, BLK_OP_TEST, BLK_PF_L2, BLK_QW)
                   : BLK_NAME(x8_loop)(g, &c, keys, n, seed, out, BLK_OP_TEST, BLK_PF_L2, BLK_QW);
    return out == NULL
               ? BLK_NAME(x8_loop)(g, &c, keys, n, seed, NULL, BLK_OP_TEST, BLK_PF_L1, BLK_QW)
               : BLK_NAME(x8_loop)(g, &c, keys, n, seed, out, BLK_OP_TEST, BLK_PF_L1, BLK_QW);
}

__attribute__((noinline)) BLK_FLATTEN static uint64_t BLK_NAME(contains_x8)(const amq_blk_geom *g,
                                                                             const uint8_t *keys,
                                                                             size_t n, uint8_t *out)
{
    return BLK_NAME(contains_x8_seeded)(g, keys, n, out, g->seed);
}

__attribute__((noinline)) BLK_FLATTEN static uint64_t
BLK_NAME(contains_x8_seed0)(const amq_blk_geom *g, const uint8_t *keys, size_t n, uint8_t *out)
{
    return BLK_NAME(contains_x8_seeded)(g, keys, n, out, 0);
}

BLK_FLATTEN static uint64_t BLK_NAME(contains_fixed)(const amq_blk_geom *g, const uint8_t *keys,
                                                     size_t key_len, size_t n, uint8_t *out)
{
    BLK_CTX c;
    if (key_len == 8 && g->hash_algo == AMQ_HASH_XXH3)
        return g->seed == 0 ? BLK_NAME(contains_x8_seed0)(g, keys, n, out)
                            : BLK_NAME(contains_x8)(g, keys, n, out);
    BLK_CTX_INIT(c, g->k);
    return BLK_NAME(key_loop)(g, &c, NULL, keys, key_len, n, g->hash_algo, g->seed, out,
                              BLK_KEYS_FIXED, BLK_OP_TEST, BLK_NAME(pf_kind)(g), BLK_QW);
}

/* Placed keys, in the order given (their blocks were prefetched by the
 * caller); the context is made again when k changes from one slot to the
 * next (partitions of one filter share k, so once). */
BLK_INLINE uint64_t BLK_NAME(slots_test_loop)(const amq_blk_pslot *s, size_t n, uint8_t *out)
{
    uint64_t count = 0;
    uint32_t k = n > 0 ? s[0].k : 1;
    size_t i;
    BLK_CTX c;
    int r;

    BLK_CTX_INIT(c, k);
    for (i = 0; i < n; i++) {
        if (s[i].k != k) {
            k = s[i].k;
            BLK_CTX_INIT(c, k);
        }
        r = BLK_TEST(s[i].blk, s[i].u, &c);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(test_slots)(const amq_blk_pslot *s, size_t n, uint8_t *out)
{
    return out == NULL ? BLK_NAME(slots_test_loop)(s, n, NULL)
                       : BLK_NAME(slots_test_loop)(s, n, out);
}

#undef BLK_PF_MIN
#undef BLK_QW
#endif /* BLK_ADDS_ONLY */

/* ---- adds: the same loops over this path's BLK_ADD, with the adds' window
 * (AMQ_BLK_WINDOW) and prefetches for writing; a copy per output (an array
 * or NULL) where the loop is light enough for it to matter. */
#define BLK_AW ((size_t)AMQ_BLK_WINDOW)

/* An add for a k known at compile time (K, 1 to 8); the path's BLK_ADD with
 * a constant k where the path has nothing better. */
#ifndef BLK_ADD_FIXED
#define BLK_ADD_FIXED(blk, u, K) BLK_ADD((blk), (u), (K))
#endif

static int BLK_NAME(add)(uint8_t *blk, uint32_t u, uint32_t k)
{
    return BLK_ADD(blk, u, k);
}

/*
 * One-key adds, shaped as the one-key queries: an entry per filter (chosen
 * once by amq_blocked, like the query's, also per mode), the hash flattened
 * in for 8- and 16-byte XXH3 keys, the block updated by BLK_ADD - the key's
 * mask built in registers, the block read once and written once - and the
 * item count kept in the same leaf (BLK_COUNT), so that amq_blocked_add is a
 * jump to it with nothing after.  Out of cache an add waits for its line
 * (its answer, "new or not", needs the block), and the rate is set by how
 * many adds the out-of-order window holds at once: no table of functions
 * is consulted per key, no flag tested, no locked instruction outside
 * concurrent mode.  1 if the key set a new bit.
 */
#ifndef BLK_COUNT
/* Exclusive mode: one writer, a plain add to the count. */
#define BLK_COUNT(items, r)                                                                        \
    atomic_store_explicit((items), atomic_load_explicit((items), memory_order_relaxed) +          \
                                       (uint64_t)(r),                                              \
                          memory_order_relaxed)
#endif

BLK_INLINE int BLK_NAME(add_hash1)(amq_blk_one *o, amq_hash128 h)
{
    const int r = BLK_ADD((uint8_t *)(uintptr_t)(o->g.data + amq_blk_index(h.h1, o->g.blocks) * 64),
                          amq_blk_u(h), o->g.k);
    BLK_COUNT(&o->items, r);
    return r;
}

__attribute__((noinline)) static int BLK_NAME(add_key)(amq_blk_one *o, const void *key, size_t len)
{
    return BLK_NAME(add_hash1)(o, BLK_NAME(hash_any)(&o->g, key, len));
}

/* add_hash1 with the mask built for a k known to the compiler (BLK_ADD_FIXED). */
BLK_INLINE int BLK_NAME(add_hash1_k)(amq_blk_one *o, amq_hash128 h, const uint32_t K)
{
    const int r = BLK_ADD_FIXED(
        (uint8_t *)(uintptr_t)(o->g.data + amq_blk_index(h.h1, o->g.blocks) * 64), amq_blk_u(h), K);
    BLK_COUNT(&o->items, r);
    return r;
}

BLK_FLATTEN static int BLK_NAME(add_xxh3)(amq_blk_one *o, const void *key, size_t len)
{
    if (len == 8)
        return BLK_NAME(add_hash1)(o, amq_blk_hash(AMQ_HASH_XXH3, o->g.seed, key, 8));
    if (len == 16)
        return BLK_NAME(add_hash1)(o, amq_blk_hash(AMQ_HASH_XXH3, o->g.seed, key, 16));
    return BLK_NAME(add_key)(o, key, len);
}

BLK_FLATTEN static int BLK_NAME(add_xxh3_seed0)(amq_blk_one *o, const void *key, size_t len)
{
    if (len == 8)
        return BLK_NAME(add_hash1)(o, amq_blk_hash(AMQ_HASH_XXH3, 0, key, 8));
    if (len == 16)
        return BLK_NAME(add_hash1)(o, amq_blk_hash(AMQ_HASH_XXH3, 0, key, 16));
    return BLK_NAME(add_key)(o, key, len);
}

/* add_xxh3 (seed0: add_xxh3_seed0) with the mask built for a k known to the
 * compiler, written once for the entries below (zstd's rule: a generator is
 * a name and one call of an always-inline body). */
BLK_INLINE int BLK_NAME(add_xxh3_k_body)(amq_blk_one *o, const void *key, size_t len,
                                         const int seed0, const uint32_t K)
{
    if (len == 8)
        return BLK_NAME(add_hash1_k)(
            o, amq_blk_hash(AMQ_HASH_XXH3, seed0 ? 0 : o->g.seed, key, 8), K);
    if (len == 16)
        return BLK_NAME(add_hash1_k)(
            o, amq_blk_hash(AMQ_HASH_XXH3, seed0 ? 0 : o->g.seed, key, 16), K);
    return BLK_NAME(add_key)(o, key, len);
}

/* The same entries for a filter's k from 1 to 8: amq_blocked picks one by k too. */
#define BLK_ADD1_K(K)                                                                              \
    BLK_FLATTEN static int BLK_NAME(add_xxh3_k##K)(amq_blk_one * o, const void *key, size_t len)  \
    {                                                                                              \
        return BLK_NAME(add_xxh3_k_body)(o, key, len, 0, K);                                       \
    }                                                                                              \
    BLK_FLATTEN static int BLK_NAME(add_xxh3_seed0_k##K)(amq_blk_one * o, const void *key,        \
                                                         size_t len)                               \
    {                                                                                              \
        return BLK_NAME(add_xxh3_k_body)(o, key, len, 1, K);                                       \
    }
BLK_ADD1_K(1)
BLK_ADD1_K(2)
BLK_ADD1_K(3)
BLK_ADD1_K(4)
BLK_ADD1_K(5)
BLK_ADD1_K(6)
BLK_ADD1_K(7)
BLK_ADD1_K(8)
#undef BLK_ADD1_K

BLK_FLATTEN static uint64_t BLK_NAME(add_hashes)(const amq_blk_geom *g, const amq_hash128 *h,
                                                 size_t n, uint8_t *added)
{
    return added == NULL ? BLK_NAME(hash_loop)(g, NULL, h, NULL, n, NULL, BLK_H128, BLK_OP_ADD,
                                               BLK_PF_W, BLK_AW)
                         : BLK_NAME(hash_loop)(g, NULL, h, NULL, n, added, BLK_H128, BLK_OP_ADD,
                                               BLK_PF_W, BLK_AW);
}

BLK_FLATTEN static uint64_t BLK_NAME(add_hashes64)(const amq_blk_geom *g, const uint64_t *h,
                                                   size_t n, uint8_t *added)
{
    return added == NULL ? BLK_NAME(hash_loop)(g, NULL, NULL, h, n, NULL, BLK_H64, BLK_OP_ADD,
                                               BLK_PF_W, BLK_AW)
                         : BLK_NAME(hash_loop)(g, NULL, NULL, h, n, added, BLK_H64, BLK_OP_ADD,
                                               BLK_PF_W, BLK_AW);
}

BLK_FLATTEN static uint64_t BLK_NAME(add_keys)(const amq_blk_geom *g, const amq_slice *keys,
                                               size_t n, uint8_t *added)
{
    return BLK_NAME(key_loop)(g, NULL, keys, NULL, 0, n, g->hash_algo, g->seed, added,
                              BLK_KEYS_SLICES, BLK_OP_ADD, BLK_PF_W, BLK_AW);
}

__attribute__((noinline)) BLK_FLATTEN static uint64_t BLK_NAME(add_x8)(const amq_blk_geom *g,
                                                                        const uint8_t *keys,
                                                                        size_t n, uint8_t *added)
{
    return added == NULL
               ? BLK_NAME(x8_loop)(g, NULL, keys, n, g->seed, NULL, BLK_OP_ADD, BLK_PF_W, BLK_AW)
               : BLK_NAME(x8_loop)(g, NULL, keys, n, g->seed, added, BLK_OP_ADD, BLK_PF_W, BLK_AW);
}

__attribute__((noinline)) BLK_FLATTEN static uint64_t
BLK_NAME(add_x8_seed0)(const amq_blk_geom *g, const uint8_t *keys, size_t n, uint8_t *added)
{
    return added == NULL
               ? BLK_NAME(x8_loop)(g, NULL, keys, n, 0, NULL, BLK_OP_ADD, BLK_PF_W, BLK_AW)
               : BLK_NAME(x8_loop)(g, NULL, keys, n, 0, added, BLK_OP_ADD, BLK_PF_W, BLK_AW);
}

BLK_FLATTEN static uint64_t BLK_NAME(add_fixed)(const amq_blk_geom *g, const uint8_t *keys,
                                                size_t key_len, size_t n, uint8_t *added)
{
    if (key_len == 8 && g->hash_algo == AMQ_HASH_XXH3)
        return g->seed == 0 ? BLK_NAME(add_x8_seed0)(g, keys, n, added)
                            : BLK_NAME(add_x8)(g, keys, n, added);
    return BLK_NAME(key_loop)(g, NULL, NULL, keys, key_len, n, g->hash_algo, g->seed, added,
                              BLK_KEYS_FIXED, BLK_OP_ADD, BLK_PF_W, BLK_AW);
}

/* Hashes kept as two arrays - h1 and the 32 bits the probes derive from -
 * as amq_builder keeps them (12 bytes a key): the loop of add_hashes, with
 * one copy per k from 1 to 8 where the path has BLK_ADD_FIXED (a mask
 * built for a k known at compile time; k is the filter's, fixed for the
 * whole loop). */
BLK_INLINE uint64_t BLK_NAME(split_loop)(const amq_blk_geom *g, const uint64_t *h1,
                                         const uint32_t *u, size_t n, const uint32_t K)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t k = g->k;
    uint64_t count = 0;
    size_t i;

#define BLK_SPLIT_ADD(j)                                                                           \
    (K == 0 ? BLK_ADD((uint8_t *)(uintptr_t)(d + amq_blk_index(h1[(j)], blocks) * 64), u[(j)], k)  \
            : BLK_ADD_FIXED((uint8_t *)(uintptr_t)(d + amq_blk_index(h1[(j)], blocks) * 64),       \
                            u[(j)], K))
    for (i = 0; i < n && i < BLK_AW; i++)
        BLK_NAME(prefetch)(d + amq_blk_index(h1[i], blocks) * 64, BLK_PF_W);
    for (i = 0; i + BLK_AW < n; i++) {
        BLK_NAME(prefetch)(d + amq_blk_index(h1[i + BLK_AW], blocks) * 64, BLK_PF_W);
        count += (uint64_t)BLK_SPLIT_ADD(i);
    }
    for (; i < n; i++)
        count += (uint64_t)BLK_SPLIT_ADD(i);
#undef BLK_SPLIT_ADD
    return count;
}

/* 8-byte keys of an XXH3 filter, packed, as amq_builder keeps them: the
 * loop of add_fixed's, with the mask built for k (1 to 8) as add_split's. */
BLK_INLINE uint64_t BLK_NAME(raw8_loop)(const amq_blk_geom *g, const uint8_t *keys, size_t n,
                                        uint64_t seed, const uint32_t K)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t k = g->k;
    const size_t w = BLK_AW;
    amq_blk_slot ring[BLK_RING];
    uint64_t count = 0;
    size_t i;

#define BLK_RAW_ADD(s)                                                                             \
    (K == 0 ? BLK_ADD((uint8_t *)(uintptr_t)(s).blk, (s).u, k)                                     \
            : BLK_ADD_FIXED((uint8_t *)(uintptr_t)(s).blk, (s).u, K))
    for (i = 0; i < n && i < w; i++) {
        ring[i] = BLK_NAME(place)(d, blocks, AMQ_HASH_XXH3, seed, keys + i * 8, 8);
        BLK_NAME(prefetch)(ring[i].blk, BLK_PF_W);
    }
    for (i = 0; i + w < n; i++) {
        const amq_blk_slot s = ring[i & (w - 1)];
        ring[i & (w - 1)] = BLK_NAME(place)(d, blocks, AMQ_HASH_XXH3, seed, keys + (i + w) * 8, 8);
        BLK_NAME(prefetch)(ring[i & (w - 1)].blk, BLK_PF_W);
        count += (uint64_t)BLK_RAW_ADD(s);
    }
    for (; i < n; i++)
        count += (uint64_t)BLK_RAW_ADD(ring[i & (w - 1)]);
#undef BLK_RAW_ADD
    return count;
}

BLK_INLINE uint64_t BLK_NAME(raw8_seeded)(const amq_blk_geom *g, const uint8_t *keys, size_t n,
                                          uint64_t seed)
{
    switch (g->k) {
    case 1:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 1);
    case 2:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 2);
    case 3:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 3);
    case 4:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 4);
    case 5:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 5);
    case 6:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 6);
    case 7:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 7);
    case 8:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 8);
    default:
        return BLK_NAME(raw8_loop)(g, keys, n, seed, 0);
    }
}

BLK_FLATTEN static uint64_t BLK_NAME(add_raw8)(const amq_blk_geom *g, const uint8_t *keys,
                                               size_t n)
{
    return g->seed == 0 ? BLK_NAME(raw8_seeded)(g, keys, n, 0)
                        : BLK_NAME(raw8_seeded)(g, keys, n, g->seed);
}

BLK_FLATTEN static uint64_t BLK_NAME(add_split)(const amq_blk_geom *g, const uint64_t *h1,
                                                const uint32_t *u, size_t n)
{
    switch (g->k) {
    case 1:
        return BLK_NAME(split_loop)(g, h1, u, n, 1);
    case 2:
        return BLK_NAME(split_loop)(g, h1, u, n, 2);
    case 3:
        return BLK_NAME(split_loop)(g, h1, u, n, 3);
    case 4:
        return BLK_NAME(split_loop)(g, h1, u, n, 4);
    case 5:
        return BLK_NAME(split_loop)(g, h1, u, n, 5);
    case 6:
        return BLK_NAME(split_loop)(g, h1, u, n, 6);
    case 7:
        return BLK_NAME(split_loop)(g, h1, u, n, 7);
    case 8:
        return BLK_NAME(split_loop)(g, h1, u, n, 8);
    default:
        return BLK_NAME(split_loop)(g, h1, u, n, 0);
    }
}

BLK_INLINE uint64_t BLK_NAME(slots_add_loop)(const amq_blk_pslot *s, size_t n, uint8_t *added)
{
    uint64_t count = 0;
    size_t i;
    int r;
    for (i = 0; i < n; i++) {
        r = BLK_ADD((uint8_t *)(uintptr_t)s[i].blk, s[i].u, s[i].k);
        count += (uint64_t)r;
        if (added != NULL)
            added[i] = (uint8_t)r;
    }
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(add_slots)(const amq_blk_pslot *s, size_t n, uint8_t *added)
{
    return added == NULL ? BLK_NAME(slots_add_loop)(s, n, NULL)
                         : BLK_NAME(slots_add_loop)(s, n, added);
}

#undef BLK_AW
#undef BLK_ADD_FIXED
#undef BLK_RING
#undef BLK_INLINE
#undef BLK_COUNT

#ifdef BLK_ADDS_ONLY
/* The adds alone: the queries are another table's. */
static const amq_blk_simd_ops BLK_NAME(ops) = {
    .simd = BLK_SIMD,
    .name = BLK_SIMD_NAME,
    .add = BLK_NAME(add),
    .add_key = BLK_NAME(add_key),
    .add_xxh3 = BLK_NAME(add_xxh3),
    .add_xxh3_seed0 = BLK_NAME(add_xxh3_seed0),
    .add_xxh3_k = {NULL, BLK_NAME(add_xxh3_k1), BLK_NAME(add_xxh3_k2), BLK_NAME(add_xxh3_k3),
                   BLK_NAME(add_xxh3_k4), BLK_NAME(add_xxh3_k5), BLK_NAME(add_xxh3_k6),
                   BLK_NAME(add_xxh3_k7), BLK_NAME(add_xxh3_k8)},
    .add_xxh3_seed0_k = {NULL, BLK_NAME(add_xxh3_seed0_k1), BLK_NAME(add_xxh3_seed0_k2),
                         BLK_NAME(add_xxh3_seed0_k3), BLK_NAME(add_xxh3_seed0_k4),
                         BLK_NAME(add_xxh3_seed0_k5), BLK_NAME(add_xxh3_seed0_k6),
                         BLK_NAME(add_xxh3_seed0_k7), BLK_NAME(add_xxh3_seed0_k8)},
    .add_hashes = BLK_NAME(add_hashes),
    .add_hashes64 = BLK_NAME(add_hashes64),
    .add_keys = BLK_NAME(add_keys),
    .add_fixed = BLK_NAME(add_fixed),
    .add_slots = BLK_NAME(add_slots),
    .add_split = BLK_NAME(add_split),
    .add_raw8 = BLK_NAME(add_raw8),
};
#else
static const amq_blk_simd_ops BLK_NAME(ops) = {
    .simd = BLK_SIMD,
    .name = BLK_SIMD_NAME,
    .test = BLK_NAME(test),
    .contains = BLK_NAME(contains),
    .contains_key = BLK_NAME(contains_key),
    .contains_xxh3 = BLK_NAME(contains_xxh3),
    .contains_xxh3_seed0 = BLK_NAME(contains_xxh3_seed0),
    .contains_hashes = BLK_NAME(contains_hashes),
    .contains_hashes64 = BLK_NAME(contains_hashes64),
    .contains_keys = BLK_NAME(contains_keys),
    .contains_fixed = BLK_NAME(contains_fixed),
    .test_slots = BLK_NAME(test_slots),
    .add = BLK_NAME(add),
    .add_key = BLK_NAME(add_key),
    .add_xxh3 = BLK_NAME(add_xxh3),
    .add_xxh3_seed0 = BLK_NAME(add_xxh3_seed0),
    .add_xxh3_k = {NULL, BLK_NAME(add_xxh3_k1), BLK_NAME(add_xxh3_k2), BLK_NAME(add_xxh3_k3),
                   BLK_NAME(add_xxh3_k4), BLK_NAME(add_xxh3_k5), BLK_NAME(add_xxh3_k6),
                   BLK_NAME(add_xxh3_k7), BLK_NAME(add_xxh3_k8)},
    .add_xxh3_seed0_k = {NULL, BLK_NAME(add_xxh3_seed0_k1), BLK_NAME(add_xxh3_seed0_k2),
                         BLK_NAME(add_xxh3_seed0_k3), BLK_NAME(add_xxh3_seed0_k4),
                         BLK_NAME(add_xxh3_seed0_k5), BLK_NAME(add_xxh3_seed0_k6),
                         BLK_NAME(add_xxh3_seed0_k7), BLK_NAME(add_xxh3_seed0_k8)},
    .add_hashes = BLK_NAME(add_hashes),
    .add_hashes64 = BLK_NAME(add_hashes64),
    .add_keys = BLK_NAME(add_keys),
    .add_fixed = BLK_NAME(add_fixed),
    .add_slots = BLK_NAME(add_slots),
    .add_split = BLK_NAME(add_split),
    .add_raw8 = BLK_NAME(add_raw8),
};
#endif
