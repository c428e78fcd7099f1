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
 * The batched loops keep W blocks in flight (AMQ_BLK_QWINDOW for queries,
 * AMQ_BLK_WINDOW for adds): key i + W is hashed and its block prefetched
 * while key i is answered, so the latency of one DRAM access is spread over
 * W keys.  Keys hash ahead into a ring of W slots; hashes only need their
 * block index recomputed (one multiply).
 */
#ifndef BLK_NAME
#error "define BLK_NAME, BLK_CTX, BLK_CTX_INIT, BLK_TEST before including blocked_query.h"
#endif

#define BLK_W AMQ_BLK_QWINDOW
#ifndef BLK_FLATTEN
#define BLK_FLATTEN __attribute__((flatten))
#endif

/*
 * The batched loops, shared by queries and adds.  In scope: d (the array),
 * blocks, n, count; for the key loop also algo and seed.  OP(blk, u) tests
 * or adds one key and is 0 or 1; it is summed into count and stored in
 * OUT[i] when OUT is not NULL.  PF prefetches a block W keys ahead.
 *
 * BLK_HASH_LOOP: over an array of hashes; H1(i) and U(i) give hash i's
 * block bits and probe bits.
 */
#define BLK_HASH_LOOP(W, PF, H1, U, OP, OUT)                                                       \
    do {                                                                                           \
        size_t i_, ahead_ = n < (W) ? n : (W);                                                     \
        int r_;                                                                                    \
        for (i_ = 0; i_ < ahead_; i_++)                                                            \
            PF(d + amq_blk_index(H1(i_), blocks) * 64);                                            \
        for (i_ = 0; i_ < n; i_++) {                                                               \
            if (i_ + (W) < n)                                                                      \
                PF(d + amq_blk_index(H1(i_ + (W)), blocks) * 64);                                  \
            r_ = OP(d + amq_blk_index(H1(i_), blocks) * 64, U(i_));                                \
            count += (uint64_t)r_;                                                                 \
            if ((OUT) != NULL)                                                                     \
                (OUT)[i_] = (uint8_t)r_;                                                           \
        }                                                                                          \
    } while (0)

/* BLK_KEY_LOOP: over keys; KEY(i) and LEN(i) give key i's bytes.  Key
 * i + W is hashed into a ring of W slots, and its block prefetched, while
 * key i is answered. */
#define BLK_KEY_LOOP(W, PF, KEY, LEN, OP, OUT)                                                     \
    do {                                                                                           \
        amq_blk_slot ring_[W];                                                                     \
        amq_hash128 h_;                                                                            \
        size_t i_, ahead_ = n < (W) ? n : (W);                                                     \
        int r_;                                                                                    \
        for (i_ = 0; i_ < ahead_; i_++) {                                                          \
            h_ = amq_blk_hash(algo, seed, KEY(i_), LEN(i_));                                       \
            ring_[i_].blk = d + amq_blk_index(h_.h1, blocks) * 64;                                 \
            ring_[i_].u = amq_blk_u(h_);                                                           \
            PF(ring_[i_].blk);                                                                     \
        }                                                                                          \
        for (i_ = 0; i_ < n; i_++) {                                                               \
            amq_blk_slot s_ = ring_[i_ & ((W)-1)];                                                 \
            if (i_ + (W) < n) {                                                                    \
                h_ = amq_blk_hash(algo, seed, KEY(i_ + (W)), LEN(i_ + (W)));                       \
                ring_[i_ & ((W)-1)].blk = d + amq_blk_index(h_.h1, blocks) * 64;                   \
                ring_[i_ & ((W)-1)].u = amq_blk_u(h_);                                             \
                PF(ring_[i_ & ((W)-1)].blk);                                                       \
            }                                                                                      \
            r_ = OP(s_.blk, s_.u);                                                                 \
            count += (uint64_t)r_;                                                                 \
            if ((OUT) != NULL)                                                                     \
                (OUT)[i_] = (uint8_t)r_;                                                           \
        }                                                                                          \
    } while (0)

/* The keys as slices or as packed fixed-size keys. */
#define BLK_SLICE_KEY(i) (keys[(i)].data)
#define BLK_SLICE_LEN(i) (keys[(i)].len)
#define BLK_FIXED_KEY(i) (keys + (i)*key_len)
#define BLK_FIXED_LEN(i) (key_len)
#define BLK_KEY8(i) (keys + (i)*8)
#define BLK_LEN8(i) ((size_t)8)

/*
 * 8-byte keys (integers, the common case of packed keys) hashed with XXH3
 * have loops of their own, one for seed 0 and one for any seed: in them
 * the hash's length dispatch (and for seed 0 the seed's mixing) folds away,
 * and with no call left in the loop (another hash, a long key) the
 * compiler keeps the loop's constants - the filter's geometry, the probe
 * multipliers - in registers instead of reloading them from the stack for
 * every key.  Hashed batched queries at 100M keys, the builds before and
 * after alternating (`amq-bench --only "amq blocked, batched"`, medians of
 * three runs): 20.8 -> 14.2 ns per key (with the L2 prefetch of
 * AMQ_BLK_FAR_BYTES); in a microbenchmark of the loop alone, best of 11
 * rounds, 12.2 -> 9.4 ns.
 */

/*
 * A path that defines BLK_HASH8(keys, bitflip, d, blocks, blk, u) - XXH3
 * of eight 8-byte keys in vector lanes, bit-exact with the scalar hash,
 * giving their blocks' addresses in blk[0..7] and probe bits in u[0..7] -
 * runs the query loop over groups of eight keys first: a group is hashed and
 * its blocks prefetched W keys ahead of the group being answered; the
 * keys after the last whole group (and filters of more than 2^32 blocks,
 * 256 GiB) take the scalar hash.  Hashing in lanes costs about a third of
 * the instructions of eight scalar hashes.  Microbenchmark of the query
 * loop, best of 15 and of 9 rounds: 3.15 -> 2.29 ns per key at 1M keys,
 * 11.6 -> 10.1 ns at 100M.  Used by the queries only: the adds, tried with
 * it, were no faster at 100M (their time is the lines' round trips) and
 * 10-20 % slower at 1M (`amq-bench --only "amq blocked, batched"`, builds
 * alternating, three runs).  Advances keys, n and OUT past the groups.
 */
#define BLK_X8V_LOOP(W, PF, OP, OUT)                                                               \
    do {                                                                                           \
        const uint64_t bf_ = amq_blk_xxh3_bitflip8(seed);                                          \
        const size_t groups_ = n / 8, lead_ = groups_ < (W) / 8 ? groups_ : (W) / 8;               \
        const uint8_t *blk_[W];                                                                    \
        uint32_t u_[W];                                                                            \
        size_t q_, j_, s_;                                                                         \
        int r_;                                                                                    \
        for (q_ = 0; q_ < lead_; q_++) {                                                           \
            BLK_HASH8(keys + q_ * 64, bf_, d, blocks, blk_ + q_ * 8, u_ + q_ * 8);                 \
            for (j_ = 0; j_ < 8; j_++)                                                             \
                PF(blk_[q_ * 8 + j_]);                                                             \
        }                                                                                          \
        for (q_ = 0; q_ < groups_; q_++) {                                                         \
            s_ = (q_ % ((W) / 8)) * 8;                                                             \
            for (j_ = 0; j_ < 8; j_++) {                                                           \
                r_ = OP(blk_[s_ + j_], u_[s_ + j_]);                                               \
                count += (uint64_t)r_;                                                             \
                if ((OUT) != NULL)                                                                 \
                    (OUT)[q_ * 8 + j_] = (uint8_t)r_;                                              \
            }                                                                                      \
            if (q_ + (W) / 8 < groups_) {                                                          \
                BLK_HASH8(keys + (q_ + (W) / 8) * 64, bf_, d, blocks, blk_ + s_, u_ + s_);         \
                for (j_ = 0; j_ < 8; j_++)                                                         \
                    PF(blk_[s_ + j_]);                                                             \
            }                                                                                      \
        }                                                                                          \
        if (groups_ > 0) { /* (no arithmetic on a NULL array of no keys) */                        \
            keys += groups_ * 64;                                                                  \
            n -= groups_ * 8;                                                                      \
            if ((OUT) != NULL)                                                                     \
                (OUT) += groups_ * 8;                                                              \
        }                                                                                          \
    } while (0)

#define BLK_H1_128(i) (h[(i)].h1)
#define BLK_U_128(i) amq_blk_u(h[(i)])
#define BLK_H1_64(i) (h[(i)])
#define BLK_U_64(i) ((uint32_t)h[(i)])

/*
 * A batched query is an inline body that takes the output array (or NULL)
 * and the prefetch kind as its last arguments, and an entry that calls it
 * with both as constants (BLK_Q_CALL), so that the compiler makes a copy
 * of the loop per case: the single loop tested the array, reloaded the
 * lane mask from the stack and compared the filter's size for every key.
 * `amq-bench --n 1000000 --only "amq blocked, batched"`, this form and the
 * one before alternating, three runs each, medians: hashed queries 2.49 ->
 * 2.12 ns per key present and 2.65 -> 2.21 absent (1.17-1.20x), the key as
 * its hash 1.54 -> 1.31 (1.18x).  At 100M the rows move with the machine
 * more than that; in one process against a loop that only prefetches and
 * tests the same filter's lines, the hashed loop went from 1.26-1.31x of
 * it to 1.05-1.22x (a harness outside the repo).  The loops over keys of any
 * length and hash (contains_keys, contains_fixed but for 8-byte XXH3 keys)
 * keep one copy: their hashing dominates, and four copies would quadruple
 * the largest functions of the file.  Prefetch kinds: none (a
 * filter that fits the L2 cache, where the loads are short and a prefetch
 * only costs a multiply and a load slot per key - the 64-bit-hash loop),
 * into L1, into L2 (filters over AMQ_BLK_FAR_BYTES).
 */
#define BLK_PF_NONE 0
#define BLK_PF_L1 1
#define BLK_PF_L2 2
#define BLK_PF_KIND(g) (amq_blk_far((g)->blocks * 64) ? BLK_PF_L2 : BLK_PF_L1)
#define BLK_PF_Q(p)                                                                                \
    (pfk == BLK_PF_L2   ? AMQ_BLK_PREFETCH_L2(p)                                                   \
     : pfk == BLK_PF_L1 ? AMQ_BLK_PREFETCH(p)                                                      \
                        : (void)0)
#define BLK_Q_CALL_PF(BODY, OUT, PFK, ...)                                                         \
    ((PFK) == BLK_PF_L2   ? BODY(__VA_ARGS__, OUT, BLK_PF_L2)                                      \
     : (PFK) == BLK_PF_L1 ? BODY(__VA_ARGS__, OUT, BLK_PF_L1)                                      \
                          : BODY(__VA_ARGS__, OUT, BLK_PF_NONE))
#define BLK_Q_CALL(BODY, OUT, PFK, ...)                                                            \
    ((OUT) == NULL ? BLK_Q_CALL_PF(BODY, NULL, PFK, __VA_ARGS__)                                   \
                   : BLK_Q_CALL_PF(BODY, OUT, PFK, __VA_ARGS__))
/* The same for a body without a prefetch kind (OUT its last argument). */
#define BLK_OUT_CALL(BODY, OUT, ...)                                                               \
    ((OUT) == NULL ? BODY(__VA_ARGS__, NULL) : BODY(__VA_ARGS__, OUT))

/* The operations: a query with this call's context c, an add of k probes. */
#define BLK_TEST_C(blk, u) BLK_TEST((blk), (u), &c)
#define BLK_ADD_K(blk, u) BLK_ADD((uint8_t *)(uintptr_t)(blk), (u), k)

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
 * folds away.  amq_blocked picks the entry once per filter (use_path).  Out of
 * cache a single-key query is one dependent miss, and the rate is set by
 * how many queries the out-of-order window holds at once: every
 * instruction of the path counts.  (Measured with `amq-bench --n 100000000
 * --only "amq blocked|model: RocksDB FastLocalBloom"`, the builds before
 * and after alternating, three runs each: 50.8, 52.3, 51.2 ns per query
 * when the length and hash were tested inside the path's generic entry
 * behind a stack-realigning frame; 41.1, 43.6, 40.1 ns in this form, with
 * the FastLocalBloom model at 41.0, 43.7, 42.1 ns in the same runs.)
 */
__attribute__((noinline)) static amq_hash128 BLK_NAME(hash_any)(const amq_blk_geom *g,
                                                                const void *key, size_t len)
{
    return amq_blk_hash(g->hash_algo, g->seed, key, len);
}

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

/*
 * One-key adds, shaped as the one-key queries: an entry per filter (chosen
 * once by amq_blocked, like the query's), the hash flattened in for 8- and
 * 16-byte XXH3 keys, and the block updated by BLK_ADD - the key's mask
 * built in registers, the block read once and written once.  No table of
 * functions is consulted per key.  1 if the key set a new bit.
 */
static inline int BLK_NAME(add_hash1)(const amq_blk_geom *g, amq_hash128 h)
{
    return BLK_ADD((uint8_t *)(uintptr_t)(g->data + amq_blk_index(h.h1, g->blocks) * 64),
                   amq_blk_u(h), g->k);
}

__attribute__((noinline)) static int BLK_NAME(add_key)(const amq_blk_geom *g, const void *key,
                                                       size_t len)
{
    return BLK_NAME(add_hash1)(g, BLK_NAME(hash_any)(g, key, len));
}

BLK_FLATTEN static int BLK_NAME(add_xxh3)(const amq_blk_geom *g, const void *key, size_t len)
{
    if (len == 8)
        return BLK_NAME(add_hash1)(g, amq_blk_hash(AMQ_HASH_XXH3, g->seed, key, 8));
    if (len == 16)
        return BLK_NAME(add_hash1)(g, amq_blk_hash(AMQ_HASH_XXH3, g->seed, key, 16));
    return BLK_NAME(add_key)(g, key, len);
}

BLK_FLATTEN static int BLK_NAME(add_xxh3_seed0)(const amq_blk_geom *g, const void *key,
                                                size_t len)
{
    if (len == 8)
        return BLK_NAME(add_hash1)(g, amq_blk_hash(AMQ_HASH_XXH3, 0, key, 8));
    if (len == 16)
        return BLK_NAME(add_hash1)(g, amq_blk_hash(AMQ_HASH_XXH3, 0, key, 16));
    return BLK_NAME(add_key)(g, key, len);
}

static inline uint64_t BLK_NAME(contains_hashes_body)(const amq_blk_geom *g, const amq_hash128 *h,
                                                      size_t n, uint8_t *out, int pfk)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    uint64_t count = 0;
    BLK_CTX c;

    BLK_CTX_INIT(c, g->k);
    BLK_HASH_LOOP(BLK_W, BLK_PF_Q, BLK_H1_128, BLK_U_128, BLK_TEST_C, out);
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(contains_hashes)(const amq_blk_geom *g, const amq_hash128 *h,
                                                      size_t n, uint8_t *out)
{
    return BLK_Q_CALL(BLK_NAME(contains_hashes_body), out, BLK_PF_KIND(g), g, h, n);
}

/*
 * 64-bit hashes: x stands for the 128-bit hash {x, x} (block from all of x,
 * probes from its low 32 bits).  The loop the in-cache figures depend on:
 * a filter that fits the L2 cache (BLK_PF_MIN bytes or less) is not
 * prefetched.  A path that defines BLK_TEST_PAIR answers two keys per step
 * when k fits half its lanes.
 */
#define BLK_PF_MIN ((uint64_t)1 << 19)

static inline uint64_t BLK_NAME(contains_hashes64_body)(const amq_blk_geom *g, const uint64_t *h,
                                                        size_t n, uint8_t *out, int pfk)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    uint64_t count = 0;
    size_t i = 0;
    BLK_CTX c;
    int r;

    BLK_CTX_INIT(c, g->k);
    for (i = 0; i < n && i < BLK_W; i++)
        BLK_PF_Q(d + amq_blk_index(h[i], blocks) * 64);
    i = 0;
#ifdef BLK_TEST_PAIR
    if (BLK_PAIR_OK(&c)) {
        unsigned m;
        for (; i + 1 < n; i += 2) {
            if (i + BLK_W < n)
                BLK_PF_Q(d + amq_blk_index(h[i + BLK_W], blocks) * 64);
            if (i + BLK_W + 1 < n)
                BLK_PF_Q(d + amq_blk_index(h[i + BLK_W + 1], blocks) * 64);
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
        if (i + BLK_W < n)
            BLK_PF_Q(d + amq_blk_index(h[i + BLK_W], blocks) * 64);
        r = BLK_TEST(d + amq_blk_index(h[i], blocks) * 64, (uint32_t)h[i], &c);
        count += (uint64_t)r;
        if (out != NULL)
            out[i] = (uint8_t)r;
    }
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(contains_hashes64)(const amq_blk_geom *g, const uint64_t *h,
                                                        size_t n, uint8_t *out)
{
    const int pfk = g->blocks * 64 <= BLK_PF_MIN ? BLK_PF_NONE : BLK_PF_KIND(g);
    return BLK_Q_CALL(BLK_NAME(contains_hashes64_body), out, pfk, g, h, n);
}

/* flatten: the hash (XXH3's entry point is not inlined on its own) and the
 * block test become one loop body. */
static inline uint64_t BLK_NAME(contains_keys_body)(const amq_blk_geom *g, const amq_slice *keys,
                                                    size_t n, uint8_t *out, int pfk)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks, seed = g->seed;
    const uint32_t algo = g->hash_algo;
    uint64_t count = 0;
    BLK_CTX c;

    BLK_CTX_INIT(c, g->k);
    BLK_KEY_LOOP(BLK_W, BLK_PF_Q, BLK_SLICE_KEY, BLK_SLICE_LEN, BLK_TEST_C, out);
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(contains_keys)(const amq_blk_geom *g, const amq_slice *keys,
                                                    size_t n, uint8_t *out)
{
    return BLK_NAME(contains_keys_body)(g, keys, n, out, BLK_PF_KIND(g));
}

static inline uint64_t BLK_NAME(contains_x8_body)(const amq_blk_geom *g, const uint8_t *keys,
                                                  size_t n, uint64_t seed, uint8_t *out, int pfk)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t algo = AMQ_HASH_XXH3;
    uint64_t count = 0;
    BLK_CTX c;

    BLK_CTX_INIT(c, g->k);
#ifdef BLK_HASH8
    if (blocks <= UINT32_MAX)
        BLK_X8V_LOOP(BLK_W, BLK_PF_Q, BLK_TEST_C, out);
#endif
    BLK_KEY_LOOP(BLK_W, BLK_PF_Q, BLK_KEY8, BLK_LEN8, BLK_TEST_C, out);
    return count;
}

__attribute__((noinline)) BLK_FLATTEN static uint64_t BLK_NAME(contains_x8)(const amq_blk_geom *g,
                                                                             const uint8_t *keys,
                                                                             size_t n, uint8_t *out)
{
    return BLK_Q_CALL(BLK_NAME(contains_x8_body), out, BLK_PF_KIND(g), g, keys, n, g->seed);
}

__attribute__((noinline)) BLK_FLATTEN static uint64_t
BLK_NAME(contains_x8_seed0)(const amq_blk_geom *g, const uint8_t *keys, size_t n, uint8_t *out)
{
    return BLK_Q_CALL(BLK_NAME(contains_x8_body), out, BLK_PF_KIND(g), g, keys, n, 0);
}

static inline uint64_t BLK_NAME(contains_fixed_body)(const amq_blk_geom *g, const uint8_t *keys,
                                                     size_t key_len, size_t n, uint8_t *out,
                                                     int pfk)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks, seed = g->seed;
    const uint32_t algo = g->hash_algo;
    uint64_t count = 0;
    BLK_CTX c;

    BLK_CTX_INIT(c, g->k);
    BLK_KEY_LOOP(BLK_W, BLK_PF_Q, BLK_FIXED_KEY, BLK_FIXED_LEN, BLK_TEST_C, out);
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(contains_fixed)(const amq_blk_geom *g, const uint8_t *keys,
                                                     size_t key_len, size_t n, uint8_t *out)
{
    if (key_len == 8 && g->hash_algo == AMQ_HASH_XXH3)
        return g->seed == 0 ? BLK_NAME(contains_x8_seed0)(g, keys, n, out)
                            : BLK_NAME(contains_x8)(g, keys, n, out);
    return BLK_NAME(contains_fixed_body)(g, keys, key_len, n, out, BLK_PF_KIND(g));
}

/* Placed keys, in the order given (their blocks were prefetched by the
 * caller); the context is made again when k changes from one slot to the
 * next (partitions of one filter share k, so once). */
static inline uint64_t BLK_NAME(test_slots_body)(const amq_blk_pslot *s, size_t n, uint8_t *out)
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
    return BLK_OUT_CALL(BLK_NAME(test_slots_body), out, s, n);
}

#undef BLK_PF_MIN
#undef BLK_PF_KIND
#undef BLK_Q_CALL
#undef BLK_Q_CALL_PF
#undef BLK_W

/* ---- adds: the same loops over this path's BLK_ADD, with the adds' window
 * (AMQ_BLK_WINDOW) and prefetches for writing. */
#define BLK_AW AMQ_BLK_WINDOW

static int BLK_NAME(add)(uint8_t *blk, uint32_t u, uint32_t k)
{
    return BLK_ADD(blk, u, k);
}

/* As the queries' entries, the adds' call their bodies with a constant
 * "added" array or NULL (BLK_OUT_CALL): in the same 1M runs as above, adds
 * of the key as its hash 4.61 -> 4.37 ns per key (1.05x), hashed adds
 * inside the noise; at 100M the lines' round trips set the rate. */

static inline uint64_t BLK_NAME(add_hashes_body)(const amq_blk_geom *g, const amq_hash128 *h,
                                                 size_t n, uint8_t *added)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t k = g->k;
    uint64_t count = 0;
    BLK_HASH_LOOP(BLK_AW, AMQ_BLK_PREFETCHW, BLK_H1_128, BLK_U_128, BLK_ADD_K, added);
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(add_hashes)(const amq_blk_geom *g, const amq_hash128 *h,
                                                 size_t n, uint8_t *added)
{
    return BLK_OUT_CALL(BLK_NAME(add_hashes_body), added, g, h, n);
}

static inline uint64_t BLK_NAME(add_hashes64_body)(const amq_blk_geom *g, const uint64_t *h,
                                                   size_t n, uint8_t *added)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t k = g->k;
    uint64_t count = 0;
    BLK_HASH_LOOP(BLK_AW, AMQ_BLK_PREFETCHW, BLK_H1_64, BLK_U_64, BLK_ADD_K, added);
    return count;
}

BLK_FLATTEN static uint64_t BLK_NAME(add_hashes64)(const amq_blk_geom *g, const uint64_t *h,
                                                   size_t n, uint8_t *added)
{
    return BLK_OUT_CALL(BLK_NAME(add_hashes64_body), added, g, h, n);
}

BLK_FLATTEN static uint64_t BLK_NAME(add_keys)(const amq_blk_geom *g, const amq_slice *keys,
                                               size_t n, uint8_t *added)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks, seed = g->seed;
    const uint32_t algo = g->hash_algo, k = g->k;
    uint64_t count = 0;
    BLK_KEY_LOOP(BLK_AW, AMQ_BLK_PREFETCHW, BLK_SLICE_KEY, BLK_SLICE_LEN, BLK_ADD_K, added);
    return count;
}

static inline uint64_t BLK_NAME(add_x8_body)(const amq_blk_geom *g, const uint8_t *keys, size_t n,
                                             uint64_t seed, uint8_t *added)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks;
    const uint32_t algo = AMQ_HASH_XXH3, k = g->k;
    uint64_t count = 0;
    BLK_KEY_LOOP(BLK_AW, AMQ_BLK_PREFETCHW, BLK_KEY8, BLK_LEN8, BLK_ADD_K, added);
    return count;
}

__attribute__((noinline)) BLK_FLATTEN static uint64_t BLK_NAME(add_x8)(const amq_blk_geom *g,
                                                                        const uint8_t *keys,
                                                                        size_t n, uint8_t *added)
{
    return BLK_OUT_CALL(BLK_NAME(add_x8_body), added, g, keys, n, g->seed);
}

__attribute__((noinline)) BLK_FLATTEN static uint64_t
BLK_NAME(add_x8_seed0)(const amq_blk_geom *g, const uint8_t *keys, size_t n, uint8_t *added)
{
    return BLK_OUT_CALL(BLK_NAME(add_x8_body), added, g, keys, n, 0);
}

BLK_FLATTEN static uint64_t BLK_NAME(add_fixed)(const amq_blk_geom *g, const uint8_t *keys,
                                                size_t key_len, size_t n, uint8_t *added)
{
    const uint8_t *d = g->data;
    const uint64_t blocks = g->blocks, seed = g->seed;
    const uint32_t algo = g->hash_algo, k = g->k;
    uint64_t count = 0;
    if (key_len == 8 && algo == AMQ_HASH_XXH3)
        return seed == 0 ? BLK_NAME(add_x8_seed0)(g, keys, n, added)
                         : BLK_NAME(add_x8)(g, keys, n, added);
    BLK_KEY_LOOP(BLK_AW, AMQ_BLK_PREFETCHW, BLK_FIXED_KEY, BLK_FIXED_LEN, BLK_ADD_K, added);
    return count;
}

static inline uint64_t BLK_NAME(add_slots_body)(const amq_blk_pslot *s, size_t n, uint8_t *added)
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
    return BLK_OUT_CALL(BLK_NAME(add_slots_body), added, s, n);
}

#undef BLK_AW
#undef BLK_OUT_CALL
#undef BLK_TEST_C
#undef BLK_PF_Q
#undef BLK_ADD_K
#undef BLK_H1_128
#undef BLK_U_128
#undef BLK_H1_64
#undef BLK_U_64
#undef BLK_X8V_LOOP
#undef BLK_SLICE_KEY
#undef BLK_SLICE_LEN
#undef BLK_FIXED_KEY
#undef BLK_FIXED_LEN
#undef BLK_KEY8
#undef BLK_LEN8
#undef BLK_KEY_LOOP
#undef BLK_HASH_LOOP

static const amq_blk_simd_ops BLK_NAME(ops) = {
    BLK_SIMD,
    BLK_SIMD_NAME,
    BLK_NAME(test),
    BLK_NAME(contains),
    BLK_NAME(contains_key),
    BLK_NAME(contains_xxh3),
    BLK_NAME(contains_xxh3_seed0),
    BLK_NAME(contains_hashes),
    BLK_NAME(contains_hashes64),
    BLK_NAME(contains_keys),
    BLK_NAME(contains_fixed),
    BLK_NAME(test_slots),
    BLK_NAME(add),
    BLK_NAME(add_key),
    BLK_NAME(add_xxh3),
    BLK_NAME(add_xxh3_seed0),
    BLK_NAME(add_hashes),
    BLK_NAME(add_hashes64),
    BLK_NAME(add_keys),
    BLK_NAME(add_fixed),
    BLK_NAME(add_slots),
};
