/*
 * blocked_impl.h - what the blocked Bloom filter's files share: the probe
 * derivation, the inline hash of a key, and the table of query functions
 * that each instruction-set file (blocked_bloom_scalar.c, _avx2.c,
 * _avx512.c) provides.  Internal: not installed.
 *
 * The partitioned kind uses the same blocks and query tables.
 */
#ifndef AMQ_BLOCKED_IMPL_H
#define AMQ_BLOCKED_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "amq/advanced.h"
#include "amq/blocked_bloom.h"
#include "amq/hash.h"

/* The key hash inlined (XXH3 from the system's xxhash.h in its header-only
 * form, bit-exact with libxxhash's), so that batched loops hash ahead
 * without a call per key; the other algorithms go through amq_hash_key. */
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

static inline amq_hash128 amq_blk_hash(uint32_t algo, uint64_t seed, const void *key, size_t len)
{
    if (algo == AMQ_HASH_XXH3) {
        XXH128_hash_t x = XXH3_128bits_withSeed(key, len, seed);
        amq_hash128 h;
        h.h1 = x.low64;
        h.h2 = x.high64;
        return h;
    }
    return amq_hash_key(algo, seed, key, len);
}

/*
 * XXH3's 128-bit hash of an 8-byte input x with seed s is a function of
 * x ^ b(s), where b(s) - "bitflip" in XXH3's specification - is bytes
 * 16-31 of XXH3's default secret folded into one 64-bit word plus the seed
 * mixed with its own byte-swapped low half.  The vector paths that hash
 * eight keys at once (BLK_HASH8 in blocked_query.h) take it precomputed;
 * the tests check them against libxxhash for seeds 0 and others.
 */
static inline uint64_t amq_blk_xxh3_bitflip8(uint64_t seed)
{
    seed ^= (uint64_t)__builtin_bswap32((uint32_t)seed) << 32;
    return (UINT64_C(0xdb979083e96dd4de) ^ UINT64_C(0x1f67b3b7a4a44072)) + seed;
}

/*
 * The probe multipliers: probe i of a key is the top 9 bits of the 32-bit
 * product u * C[i].  Sixteen odd constants drawn once from splitmix64
 * (seed 0x616d712d626c6b, "amq-blk"; high halves, forced odd, keeping
 * those with 12..20 bits set).  They are part of the file format: changing
 * one changes which bits every filter uses.
 */
#define AMQ_BLK_C0 0x2560fc7du
#define AMQ_BLK_C1 0x65e488b5u
#define AMQ_BLK_C2 0x2148f0c9u
#define AMQ_BLK_C3 0xb26426c3u
#define AMQ_BLK_C4 0x78c74d37u
#define AMQ_BLK_C5 0x0f60b789u
#define AMQ_BLK_C6 0x71258be5u
#define AMQ_BLK_C7 0x8de33921u
#define AMQ_BLK_C8 0x55ca90edu
#define AMQ_BLK_C9 0x10aea1b1u
#define AMQ_BLK_C10 0x4e4096a5u
#define AMQ_BLK_C11 0x44fafa0bu
#define AMQ_BLK_C12 0xeae45321u
#define AMQ_BLK_C13 0xe69acfa1u
#define AMQ_BLK_C14 0x00de3e8du
#define AMQ_BLK_C15 0x28ba03bbu

#define AMQ_BLK_CONSTANTS                                                                          \
    {                                                                                              \
        AMQ_BLK_C0, AMQ_BLK_C1, AMQ_BLK_C2, AMQ_BLK_C3, AMQ_BLK_C4, AMQ_BLK_C5, AMQ_BLK_C6,        \
            AMQ_BLK_C7, AMQ_BLK_C8, AMQ_BLK_C9, AMQ_BLK_C10, AMQ_BLK_C11, AMQ_BLK_C12,             \
            AMQ_BLK_C13, AMQ_BLK_C14, AMQ_BLK_C15                                                  \
    }

static const uint32_t amq_blk_mult[16] = AMQ_BLK_CONSTANTS;

/* Loops over the probes unroll to AMQ_BLOCKED_MAX_K iterations (each
 * guarded by i < k), which turns the multipliers into immediates. */
#if defined(__clang__)
#define AMQ_BLK_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define AMQ_BLK_UNROLL _Pragma("GCC unroll 16")
#else
#define AMQ_BLK_UNROLL
#endif

/* Which block: multiply-shift of h1 (no division, all 64 bits of range). */
static inline uint64_t amq_blk_index(uint64_t h1, uint64_t blocks)
{
    return (uint64_t)(((unsigned __int128)h1 * blocks) >> 64);
}

/* The 32 bits the probes derive from. */
static inline uint32_t amq_blk_u(amq_hash128 h)
{
    return (uint32_t)h.h2;
}

/* Probe i: a bit number in [0, 512). */
static inline uint32_t amq_blk_probe(uint32_t u, uint32_t i)
{
    return (uint32_t)(u * amq_blk_mult[i]) >> 23;
}

/* A mask that is bit b of a little-endian 64-bit word, as the host sees the
 * word when it loads it natively. */
static inline uint64_t amq_blk_le_bit(uint32_t b)
{
    uint64_t m = UINT64_C(1) << (b & 63);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    m = __builtin_bswap64(m);
#endif
    return m;
}

/* The eight word masks (native order) that key u sets in its block. */
static inline void amq_blk_masks(uint32_t u, uint32_t k, uint64_t m[8])
{
    uint32_t i;
    for (i = 0; i < 8; i++)
        m[i] = 0;
    for (i = 0; i < k; i++) {
        uint32_t p = amq_blk_probe(u, i);
        m[p >> 6] |= amq_blk_le_bit(p);
    }
}

/* Word w of a block, read with a relaxed atomic load (adds may run). */
static inline uint64_t amq_blk_word(const uint8_t *blk, uint32_t w)
{
    /* The array is 64-byte aligned and only ever accessed as 64-bit words
     * (atomically) or whole blocks; the cast is to the atomic view of it. */
    _Atomic uint64_t *a = (_Atomic uint64_t *)(uintptr_t)(blk + 8 * w);
    return atomic_load_explicit(a, memory_order_relaxed);
}

/* ---- adds --------------------------------------------------------------------------
 * An add ORs k bits into its block.  The concurrent form reads the eight
 * words (relaxed) and issues an atomic OR (x86: `lock or`) only for words
 * that miss a bit: once a filter fills, most words of most keys already
 * hold their bits, and locked instructions are the expensive part.
 * Reading first is safe: bits are never cleared while
 * adds run, so a word seen holding its bits keeps them.  "Newly added" is
 * judged from the same reads; two threads adding the same key at once may
 * both count it.
 *
 * The exclusive form (one writer, no concurrent queries) reads and writes
 * each probed word with relaxed atomic loads and stores - plain moves, no
 * locked instruction - so that mixing it with the concurrent form on one
 * array stays within C11's rules.
 */
static inline _Atomic uint64_t *amq_blk_word_ptr(uint8_t *blk, uint32_t w)
{
    return (_Atomic uint64_t *)(void *)(blk + 8 * w);
}

static inline int amq_blk_add_atomic(uint8_t *blk, uint32_t u, uint32_t k)
{
    uint64_t m[8];
    uint32_t w, need = 0;

    amq_blk_masks(u, k, m);
    for (w = 0; w < 8; w++)
        need |= (uint32_t)((amq_blk_word(blk, w) & m[w]) != m[w]) << w;
    if (need == 0)
        return 0;
    do {
        w = (uint32_t)__builtin_ctz(need);
        need &= need - 1;
        atomic_fetch_or_explicit(amq_blk_word_ptr(blk, w), m[w], memory_order_relaxed);
    } while (need != 0);
    return 1;
}

static inline int amq_blk_add_exclusive(uint8_t *blk, uint32_t u, uint32_t k)
{
    uint64_t old, bit, changed = 0;
    uint32_t i, p;

    AMQ_BLK_UNROLL
    for (i = 0; i < AMQ_BLOCKED_MAX_K; i++) {
        if (i < k) {
            p = amq_blk_probe(u, i);
            bit = amq_blk_le_bit(p);
            old = amq_blk_word(blk, p >> 6);
            changed |= ~old & bit;
            atomic_store_explicit(amq_blk_word_ptr(blk, p >> 6), old | bit, memory_order_relaxed);
        }
    }
    return changed != 0;
}

/* The portable query of one block, branch-free: 1 if all k bits are set. */
static inline int amq_blk_test_scalar(const uint8_t *blk, uint32_t u, uint32_t k)
{
    uint64_t miss = 0;
    uint32_t i;
    AMQ_BLK_UNROLL
    for (i = 0; i < AMQ_BLOCKED_MAX_K; i++) {
        if (i < k) {
            uint32_t p = amq_blk_probe(u, i);
            miss |= ~amq_blk_word(blk, p >> 6) & amq_blk_le_bit(p);
        }
    }
    return miss == 0;
}

/* The same on bytes at any alignment that nobody writes (policy blobs). */
static inline int amq_blk_test_bytes(const uint8_t *blk, uint32_t u, uint32_t k)
{
    uint32_t i;
    for (i = 0; i < k; i++) {
        uint32_t p = amq_blk_probe(u, i);
        if (((blk[p >> 3] >> (p & 7)) & 1) == 0)
            return 0;
    }
    return 1;
}

/* A key hashed ahead, waiting for its prefetched block. */
typedef struct amq_blk_slot {
    const uint8_t *blk;
    uint32_t u;
} amq_blk_slot;

/* A key placed by the partitioned kind: its block, probe bits and its
 * partition's k. */
typedef struct amq_blk_pslot {
    const uint8_t *blk;
    uint32_t u;
    uint32_t k;
} amq_blk_pslot;

/* Prefetch a block for reading or for writing.  A prefetch for writing is
 * PREFETCHW where the file is compiled with -mprfchw (the vector paths: the
 * line arrives ready to be written, which measured faster), else a read
 * prefetch. */
#define AMQ_BLK_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#define AMQ_BLK_PREFETCHW(p) __builtin_prefetch((p), 1, 3)

/*
 * The batched queries of a filter far larger than the caches (more than
 * AMQ_BLK_FAR_BYTES) prefetch into L2 only (prefetcht1; amq_blk_far): a
 * prefetch into L1 holds one of L1's few miss buffers until its line comes
 * from DRAM, one into L2 one of L2's, which has more; measured faster or
 * equal at 100M keys, slightly slower in cache (hence the threshold).
 * Adds prefetch for writing, which has no such choice.  To compare on
 * another machine, build a bench that never prefetches into L2 -
 *     make BUILD=/tmp/b CFLAGS=-DAMQ_BLK_FAR_BYTES=UINT64_MAX /tmp/b/bench/amq-bench
 * - and run it and build/bench/amq-bench by turns with --n 100000000
 * --only "amq blocked, batched".
 */
#ifndef AMQ_BLK_FAR_BYTES
#define AMQ_BLK_FAR_BYTES ((uint64_t)32 << 20)
#endif
#define AMQ_BLK_PREFETCH_L2(p) __builtin_prefetch((p), 0, 2)

/* Whether the batched queries of a filter (or partitioned filter) of this
 * many bytes prefetch into L2. */
static inline int amq_blk_far(uint64_t bytes)
{
    return bytes > AMQ_BLK_FAR_BYTES;
}

/* What a query loop needs of one filter (or of one partition). */
typedef struct amq_blk_geom {
    const uint8_t *data; /* blocks * 64 bytes, 64-byte aligned */
    uint64_t blocks;
    uint32_t k;
    uint32_t hash_algo;
    uint64_t seed;
} amq_blk_geom;

/* A one-key query. */
typedef int (*amq_blk_key_fn)(const amq_blk_geom *g, const void *key, size_t len);

/* What a one-key add touches of a filter - its geometry and its item count -
 * side by side at the start of the filter's struct. */
typedef struct amq_blk_one {
    amq_blk_geom g;
    _Atomic uint64_t items;
} amq_blk_one;

/* A one-key add: sets the key's bits and counts it when new, in one leaf
 * (1 if a bit was new, 0 if not). */
typedef int (*amq_blk_add1_fn)(amq_blk_one *o, const void *key, size_t len);

/* The query functions of one instruction set. */
typedef struct amq_blk_simd_ops {
    uint32_t simd; /* amq_simd */
    const char *name;
    /* One block: 1 if all k probes of u are set. */
    int (*test)(const uint8_t *blk, uint32_t u, uint32_t k);
    int (*contains)(const amq_blk_geom *g, amq_hash128 h);
    /* One key: any hash; a filter hashed with XXH3 (any seed, seed 0) -
     * the same answers, 8-byte keys through a lean body.  amq_blocked
     * picks one per filter. */
    amq_blk_key_fn contains_key;
    amq_blk_key_fn contains_xxh3;
    amq_blk_key_fn contains_xxh3_seed0;
    uint64_t (*contains_hashes)(const amq_blk_geom *g, const amq_hash128 *h, size_t n,
                                uint8_t *out);
    /* 64-bit hashes: x as the 128-bit hash {x, x}. */
    uint64_t (*contains_hashes64)(const amq_blk_geom *g, const uint64_t *h, size_t n, uint8_t *out);
    uint64_t (*contains_keys)(const amq_blk_geom *g, const amq_slice *keys, size_t n, uint8_t *out);
    uint64_t (*contains_fixed)(const amq_blk_geom *g, const uint8_t *keys, size_t key_len, size_t n,
                               uint8_t *out);
    /* Placed keys (the partitioned kind's batches): out[i] = 1 if all
     * probes of slot i are set, when out is not NULL; returns how many. */
    uint64_t (*test_slots)(const amq_blk_pslot *s, size_t n, uint8_t *out);
    /* Exclusive-mode adds (one writer, no concurrent query; the bytes are
     * the same on every path).  add: 1 if the key set a new bit; the batched
     * forms return how many keys did, added[i] as add when not NULL. */
    int (*add)(uint8_t *blk, uint32_t u, uint32_t k);
    /* One key, in this table's mode (exclusive, or concurrent for the
     * concurrent table), counted in o->items: as contains_key,
     * contains_xxh3, contains_xxh3_seed0 (the table is written through
     * o->g.data). */
    amq_blk_add1_fn add_key;
    amq_blk_add1_fn add_xxh3;
    amq_blk_add1_fn add_xxh3_seed0;
    /* add_xxh3 and add_xxh3_seed0 for k = 1 to 8 (index k; 0 unused): the
     * mask built for that k, the same bytes. */
    amq_blk_add1_fn add_xxh3_k[9];
    amq_blk_add1_fn add_xxh3_seed0_k[9];
    uint64_t (*add_hashes)(const amq_blk_geom *g, const amq_hash128 *h, size_t n, uint8_t *added);
    uint64_t (*add_hashes64)(const amq_blk_geom *g, const uint64_t *h, size_t n, uint8_t *added);
    uint64_t (*add_keys)(const amq_blk_geom *g, const amq_slice *keys, size_t n, uint8_t *added);
    uint64_t (*add_fixed)(const amq_blk_geom *g, const uint8_t *keys, size_t key_len, size_t n,
                          uint8_t *added);
    /* Placed keys (the partitioned kind): as add_hashes. */
    uint64_t (*add_slots)(const amq_blk_pslot *s, size_t n, uint8_t *added);
    /* n hashes as two arrays, h1 and amq_blk_u of each (amq_builder's
     * layout): as add_hashes without the output. */
    uint64_t (*add_split)(const amq_blk_geom *g, const uint64_t *h1, const uint32_t *u, size_t n);
    /* n packed 8-byte keys of an XXH3 filter: as add_fixed without the
     * output, the mask built for k (amq_builder's raw keys). */
    uint64_t (*add_raw8)(const amq_blk_geom *g, const uint8_t *keys, size_t n);
} amq_blk_simd_ops;

/* Adds n hashes given as h1[i] and u[i] = amq_blk_u of each, in order,
 * counting the new ones (amq_builder_finish); AMQ_EREADONLY for a view. */
int amq_blocked_add_split(amq_blocked *b, const uint64_t *h1, const uint32_t *u, size_t n);
/* The same for n packed 8-byte keys of an XXH3 filter. */
int amq_blocked_add_raw8(amq_blocked *b, const void *keys, size_t n);

/* Defined by the instruction-set files; NULL when not compiled in. */
extern const amq_blk_simd_ops *const amq_blk_ops_scalar;
extern const amq_blk_simd_ops *const amq_blk_ops_avx2;
extern const amq_blk_simd_ops *const amq_blk_ops_avx512;
/* The adds of concurrent mode (atomic OR); its query fields are NULL. */
extern const amq_blk_simd_ops *const amq_blk_ops_concurrent;

/* The table for a path (AUTO: the best supported), or NULL if unsupported. */
const amq_blk_simd_ops *amq_blk_simd_select(uint32_t simd);

/* The layout's false-positive rate at a load of lambda keys per block
 * (amq_blocked_fpp_theory's core), the best k at that load, and the
 * highest load whose best rate is at most p (AMQ_ERANGE if none above
 * 0.512 keys per block). */
double amq_blk_fpp_lambda(double lambda, uint32_t k);
/* The keys an array of 64-byte blocks holds, estimated from each block's set
 * bits (Swamidass-Baldi per block: k probes over its 512 bits). */
double amq_blk_estimate_items(const uint8_t *d, uint64_t blocks, uint32_t k);
uint32_t amq_blk_best_k_lambda(double lambda, double *fpp);
int amq_blk_max_lambda(double p, double *lambda, uint32_t *k);

/*
 * The prefetch window of the batched loops: keys hashed and blocks
 * prefetched ahead of the key being answered (a power of two).  Enough
 * lines must be in flight to cover the DRAM latency (window / latency
 * bounds the rate); the adds' rate stops improving at 64.  In-cache
 * filters do not care.
 */
#ifndef AMQ_BLK_WINDOW
#define AMQ_BLK_WINDOW 64
#endif

/* The queries' window: a query does less work per key than an add, so
 * covering the same DRAM latency takes more keys of lead. */
#ifndef AMQ_BLK_QWINDOW
#define AMQ_BLK_QWINDOW 128
#endif

#endif /* AMQ_BLOCKED_IMPL_H */
