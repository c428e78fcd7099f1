/*
 * cuckoo.c - the cuckoo filter (amq/cuckoo.h).
 *
 * Choices:
 *  - Any bucket count.  The alternate bucket is i2 = (H(fp) - i1) mod nb with
 *    H(fp) = (fp * phi) reduced to [0, nb) by multiply-shift: subtracting
 *    from a per-fingerprint constant is its own inverse for every nb, needs
 *    one conditional add instead of a division, and spreads the alternates
 *    of one bucket over as many buckets as there are fingerprints (the
 *    xor-with-hash(fp) scheme needs nb to be a power of two, so capacity
 *    jumps x2).
 *  - Bucket search is word-parallel (cuckoo_table.h): one 64-bit load and a
 *    has-zero-field test per bucket of up to 8 x 8 or 4 x 12/16 bits.
 *    Wider SIMD does not pay here: a query reads two buckets of at most
 *    128 bits each, and its cost is the two cache misses, which are
 *    independent loads the CPU overlaps.
 *  - The hot functions are instantiated for each (f, b) pair so that the
 *    lane masks and loop counts are constants; one function pointer per
 *    filter selects them.
 *  - Evictions pick a random slot (a xorshift generator kept in the
 *    filter, fixed seed: runs are reproducible).  The random walk reaches
 *    ~95 % load with 4-slot buckets (docs/cuckoo.md has the measurements).
 */
#include <math.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "amq/advanced.h"
#include "amq/cuckoo.h"
#include "common/alloc.h"
#include "common/cpu.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/mulshift.h"
#include "cuckoo_internal.h"
#include "cuckoo_table.h"
#include "kind.h"

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

/* How a bucket is read: one 64-bit load (SWAR over its packed fields),
 * two (a 128-bit word), or slot by slot (8-slot buckets of over 16 bits). */
enum { CK_WORD64 = 0, CK_WORD128 = 1, CK_SLOTS = 2 };

/* How the one-key entries take an 8-byte key: through the general path,
 * or XXH3 written out with buckets on whole bytes (bb a multiple of 8, as
 * 12 x 4) or at any bit. */
enum { CK_KEY8_NONE = 0, CK_KEY8_BYTES = 1, CK_KEY8_BITS = 2 };
enum { CK_GATHER_AVX2 = 1, CK_GATHER_AVX512 = 2 };

typedef unsigned __int128 ck_u128;

struct amq_cuckoo {
    amq_cuckoo_params p;
    /* Derived once from p, read by every operation. */
    uint8_t *d;         /* the table (data.data) */
    uint64_t nb;        /* buckets */
    uint32_t f, b;      /* fingerprint bits, slots per bucket */
    uint32_t bb;        /* bits per bucket, f * b */
    uint32_t shape;     /* CK_WORD64, CK_WORD128, CK_SLOTS */
    int fast;           /* XXH3 or mulshift, and CK_WORD64: the one-key fast paths apply */
    int ms;             /* the hash is AMQ_HASH_MULSHIFT */
    int fast_add;       /* fast, and the table is writable */
    int scalar_keys;    /* amq_cuckoo_scalar_keys: no vector path */
    /* The 8-byte-key entries: the fast ones (fast, no victim and, for
     * q8_add, writable; by how a bucket is addressed) or the general path;
     * kept by set_victim.  A call through them is the entry's only branch
     * on the filter's state. */
    int (*q8)(const amq_cuckoo *c, const void *key);
    int (*q8_add)(amq_cuckoo *c, const void *key);
    /* q8 over n packed keys, in one loop (a batch on a table in cache). */
    uint64_t (*q8n)(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
    int q8n_gather;     /* q8n gathers its buckets (a CK_GATHER_*): the batch path at any size */
    int batch_gather;   /* hashed batches by gathers: CK_GATHER_AVX2 or _AVX512, else 0 */
    uint32_t bbytes;    /* bb / 8 when buckets start on whole bytes */
    uint64_t x8;        /* the seed's share of XXH3 for 8-byte keys (x8_key) */
    amq_u128 ms_a, ms_b; /* mulshift's constants for the seed */
    /* The 8-byte path's multipliers, read from here as memory operands:
     * as immediates each would take an instruction of its own to load. */
    uint64_t k_mul, k_mx2, k_aval, k_phi;
    uint64_t ones_lo, ones_hi; /* bit 0 of each of the b fields */
    uint64_t highs_lo;         /* bit f - 1 of each field in the low word */
    uint64_t bmask;            /* the bb bits of a one-word bucket */
    uint64_t ones2[2], highs2[2]; /* ones_lo and highs_lo twice: both buckets in one vector */
    uint64_t fmax;             /* 2^f - 1 */
    uint64_t items;
    uint64_t victim_bucket;
    uint32_t victim_fp; /* 0: no victim */
    uint64_t rng;
    amq_region data;
    amq_allocator alloc;
    uint64_t peek_items; /* from this many items on, batched adds prefetch kicks */
    /* The last byte a read of a bucket touches, from its first; 0 for a
     * table in cache, whose batches and kicks prefetch one line a bucket. */
    uint32_t pf_last;
    /* Filters with f <= ALT_TABLE_MAX_F and a table large enough
     * (ALT_TABLE_SHARE) keep, just after the struct (alt_tab()), H(fp) *
     * tab_unit for every fp: the alternate bucket's base (i2 = (H(fp) - i1)
     * mod nb) as a position, in bytes for whole-byte buckets and in bits
     * otherwise, so that the one-key query reaches i2's word by one L1
     * load and a subtraction where it took three multiplies.  tab_unit 0:
     * no table; tab_span = nb * tab_unit. */
    uint32_t tab_unit;
    uint64_t tab_span;
};

#define PHI UINT64_C(0x9e3779b97f4a7c15)

#define RNG_SEED UINT64_C(0x2545f4914f6cdd1d)

/* Below this load a batched add's two buckets are almost never both full,
 * and looking ahead for kicks (add_pipeline) costs more than it saves. */
#define PEEK_LOAD 0.5

/* Up to this many table bytes the table stays in cache between queries,
 * and the one-key query beats staging hashes for prefetches; larger
 * tables' batched adds look ahead for kicks and every batch and kick
 * prefetches a bucket's second line (pf_last). */
#define FIXED_DIRECT_BYTES ((size_t)4 << 20)

/* The widest fingerprint with a table of H(fp) (alt_tab): 2^12 entries of
 * 4 bytes, 16 KiB, which stays in L1 beside the query's other data. */
#define ALT_TABLE_MAX_F 12

/* A filter keeps an alt_tab when it is at most 1/ALT_TABLE_SHARE of its
 * bucket table's bytes: the memory it costs stays under 2 %, and it never
 * weighs on the small filters a Redis server may hold by the thousand. */
#define ALT_TABLE_SHARE 64

/* ---- hashing to (bucket, fingerprint) ------------------------------------- */

static inline uint64_t reduce64(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

/* A nonzero f-bit fingerprint from the high half of h2, by multiply-shift
 * onto [1, 2^f - 1] (uniform, no division); fmax = 2^f - 1. */
static inline uint32_t fingerprint(uint64_t h2, uint64_t fmax)
{
    return (uint32_t)(((h2 >> 32) * fmax) >> 32) + 1;
}

static inline uint64_t alt_bucket(uint64_t i, uint32_t fp, uint64_t nb)
{
    uint64_t base = reduce64((uint64_t)fp * PHI, nb);
    return base >= i ? base - i : base + nb - i;
}

/*
 * XXH3-128 of an 8-byte key (its branch for 4 to 8 bytes, from the published
 * algorithm) written out, so that a one-key call runs no length dispatch:
 * h1 whole, and the high 32 bits of h2, the only ones the fingerprint
 * reads (h2 = y ^ (y >> 32), whose top half is y's).  x8_key folds the seed
 * in once per filter.  Tested equal to the library's XXH3_128bits_withSeed.
 */
#define X8_SECRET UINT64_C(0xc4f023344dc994ac) /* kSecret[16..23] ^ kSecret[24..31] */
#define X8_MUL UINT64_C(0x9e3779b185ebcaa7)    /* PRIME64_1 + (8 << 2) */
#define X8_MX2 UINT64_C(0x9fb21c651e98df25)
#define X8_AVALANCHE UINT64_C(0x165667919e3779f9)

static uint64_t x8_key(uint64_t seed)
{
    return X8_SECRET + (seed ^ ((uint64_t)__builtin_bswap32((uint32_t)seed) << 32));
}

static inline __attribute__((always_inline)) uint64_t x8_hash(const amq_cuckoo *c, const void *key,
                                                               uint64_t *h2_top, int ms)
{
    ck_u128 m;
    uint64_t lo, hi;
    if (ms) {
        /* h2 = h1 rotated: its top half is h1's low half. */
        lo = amq_ms_apply(c->ms_a, c->ms_b, amq_load64(key));
        *h2_top = (uint32_t)lo;
        return lo;
    }
    m = (ck_u128)(amq_load64(key) ^ c->x8) * c->k_mul;
    lo = (uint64_t)m;
    hi = (uint64_t)(m >> 64) + (lo << 1);
    lo ^= hi >> 3;
    lo ^= lo >> 35;
    lo *= c->k_mx2;
    lo ^= lo >> 28;
    *h2_top = ((hi ^ (hi >> 37)) * c->k_aval) >> 32;
    return lo;
}

static inline uint64_t next_rand(amq_cuckoo *c)
{
    uint64_t x = c->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c->rng = x;
    return x;
}

/* Branch-free: fp is never 0, so no victim never matches. */
static inline int victim_matches(const amq_cuckoo *c, uint32_t fp, uint64_t i1, uint64_t i2)
{
    return (c->victim_fp == fp) & ((c->victim_bucket == i1) | (c->victim_bucket == i2));
}

typedef int (*ck_q8_fn)(const amq_cuckoo *c, const void *key);
typedef int (*ck_add8_fn)(amq_cuckoo *c, const void *key);

/* The 8-byte-key leaves (queries and adds): one function per [whole-byte
 * buckets][mulshift][alt_tab], each fn(c, key, bytes, ms, tab) inlined, so
 * that an entry is one indirect jump to straight code; the grid's table is
 * indexed the same way.  ctype: the leaf's filter type (const for queries). */
#define CK8_LEAF(attr, ctype, name, fn, bytes, ms, tab)                                            \
    attr static int name(ctype *c, const void *key)                                                \
    {                                                                                              \
        return fn(c, key, bytes, ms, tab);                                                         \
    }
#define CK8_GRID(attr, ftype, ctype, name, fn)                                                     \
    CK8_LEAF(attr, ctype, name##_0, fn, 0, 0, 0)                                                   \
    CK8_LEAF(attr, ctype, name##_1, fn, 0, 0, 1)                                                   \
    CK8_LEAF(attr, ctype, name##_2, fn, 0, 1, 0)                                                   \
    CK8_LEAF(attr, ctype, name##_3, fn, 0, 1, 1)                                                   \
    CK8_LEAF(attr, ctype, name##_4, fn, 1, 0, 0)                                                   \
    CK8_LEAF(attr, ctype, name##_5, fn, 1, 0, 1)                                                   \
    CK8_LEAF(attr, ctype, name##_6, fn, 1, 1, 0)                                                   \
    CK8_LEAF(attr, ctype, name##_7, fn, 1, 1, 1)                                                   \
    static const ftype name[2][2][2] = {{{name##_0, name##_1}, {name##_2, name##_3}},              \
                                        {{name##_4, name##_5}, {name##_6, name##_7}}};

/* The q8 entries by [whole bytes][mulshift][alt_tab] (CK8_GRID). */
static const ck_q8_fn q8_scalar[2][2][2];
#if defined(__x86_64__)
static const ck_q8_fn q8_vector[2][2][2];
#endif
static int q8_any(const amq_cuckoo *c, const void *key);
static uint64_t q8n_bytes(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_bytes_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
#if defined(__x86_64__)
static uint64_t q8n_bytes_avx2(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_bytes_avx2_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
#endif
static uint64_t q8n_bits(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_bits_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_any(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
#if defined(__x86_64__)
static uint64_t q8n_word_avx512_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                    uint8_t *out);
static uint64_t q8n_word_avx2g_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                   uint8_t *out);
#endif
static const ck_add8_fn add8_leaf[2][2][2];
static int add8_any(amq_cuckoo *c, const void *key);

/* The 8-byte-key entries that apply now: the fast ones assume no victim. */
static void key8_modes(amq_cuckoo *c)
{
    uint32_t m = CK_KEY8_NONE;
    int tab = c->tab_unit != 0;
    if (c->fast && c->victim_fp == 0)
        m = c->bb % 8 == 0 ? CK_KEY8_BYTES : CK_KEY8_BITS;
    c->q8 = m == CK_KEY8_NONE ? q8_any : q8_scalar[m == CK_KEY8_BYTES][c->ms][tab];
    if (c->ms)
        c->q8n = m == CK_KEY8_BYTES ? q8n_bytes_ms : m == CK_KEY8_BITS ? q8n_bits_ms : q8n_any;
    else
        c->q8n = m == CK_KEY8_BYTES ? q8n_bytes : m == CK_KEY8_BITS ? q8n_bits : q8n_any;
#if defined(__x86_64__)
    if (m != CK_KEY8_NONE && !c->scalar_keys && amq_cpu_has(AMQ_CPU_AVX2 | AMQ_CPU_BMI2)) {
        c->q8 = q8_vector[m == CK_KEY8_BYTES][c->ms][tab];
        if (m == CK_KEY8_BYTES)
            c->q8n = c->ms ? q8n_bytes_avx2_ms : q8n_bytes_avx2;
    }
    /* Batches by gathers: one-word buckets, no victim, nb < 2^32. */
    c->batch_gather = 0;
    if (c->shape == CK_WORD64 && c->victim_fp == 0 && c->nb <= UINT32_MAX &&
        !c->scalar_keys) {
        if (amq_cpu_has(AMQ_CPU_AVX512_CORE))
            c->batch_gather = CK_GATHER_AVX512;
        else if (amq_cpu_has(AMQ_CPU_AVX2))
            c->batch_gather = CK_GATHER_AVX2;
    }
    c->q8n_gather = m != CK_KEY8_NONE && c->ms ? c->batch_gather : 0;
    if (c->q8n_gather)
        c->q8n = c->q8n_gather == CK_GATHER_AVX512 ? q8n_word_avx512_ms : q8n_word_avx2g_ms;
#endif
    if (!c->fast_add)
        m = CK_KEY8_NONE;
    c->q8_add = m == CK_KEY8_NONE ? add8_any : add8_leaf[m == CK_KEY8_BYTES][c->ms][tab];
}

void amq_cuckoo_scalar_keys(amq_cuckoo *c, int on)
{
    c->scalar_keys = on;
    key8_modes(c);
}

/* Every change of the victim goes through here, so that the entries above
 * stay in step. */
static void set_victim(amq_cuckoo *c, uint32_t fp, uint64_t bucket)
{
    c->victim_fp = fp;
    c->victim_bucket = bucket;
    key8_modes(c);
}

/* ---- buckets as words ----------------------------------------------------------------
 * A bucket of b fields of f bits starts at bit i * bb of the table.  When
 * every bucket's bits lie inside the 64-bit word loaded from its first byte
 * (bb + its bit offset <= 64, which holds for every bb <= 57 and for 58, 60
 * and 64), a bucket is one load and a shift; fields above the bucket are
 * left in the word: the tests below look at the bucket's fields only, and
 * the has-zero-field trick's borrows only run upward. */

static inline uint64_t word64(const uint8_t *d, uint64_t i, uint32_t bb)
{
    uint64_t bit = i * bb;
    return amq_load64(d + (bit >> 3)) >> (bit & 7);
}

/* alt_bucket with PHI as a memory operand (see k_mul). */
static inline __attribute__((always_inline)) uint64_t alt8(const amq_cuckoo *c, uint64_t i,
                                                          uint32_t fp)
{
    uint64_t base = reduce64((uint64_t)fp * c->k_phi, c->nb), t = base - i;
    return base < i ? t + c->nb : t;
}

/* The filter's table of H(fp) * tab_unit (allocated with the struct). */
static inline const uint32_t *alt_tab(const amq_cuckoo *c)
{
    return (const uint32_t *)(const void *)(c + 1);
}

/* The position (bytes when bytes, else bits, from the table's start) of
 * bucket i's word and of fp's other bucket's: tab, from alt_tab (a
 * subtraction, wrapped by a mask rather than a branch that goes either
 * way), else by alt8. */
static inline __attribute__((always_inline)) void bucket_pair_at(const amq_cuckoo *c, uint64_t i1,
                                                                 uint32_t fp, int bytes, int tab,
                                                                 uint64_t *p1, uint64_t *p2)
{
    uint64_t unit = bytes ? c->bbytes : c->bb, t;
    *p1 = i1 * unit;
    if (tab) {
        t = alt_tab(c)[fp];
        *p2 = t - *p1 + (c->tab_span & (0 - (uint64_t)(t < *p1)));
    } else {
        *p2 = alt8(c, i1, fp) * unit;
    }
}

/* The word of the bucket at position p (bytes when bytes, else bits, as
 * bucket_pair_at gives it), bucket in the low bits. */
static inline __attribute__((always_inline)) uint64_t word_at(const amq_cuckoo *c, uint64_t p,
                                                             int bytes)
{
    return bytes ? amq_load64(c->d + p) : amq_load64(c->d + (p >> 3)) >> (p & 7);
}

static inline __attribute__((always_inline)) uint64_t bucket_word(const amq_cuckoo *c, uint64_t i,
                                                                 int bytes)
{
    return word_at(c, i * (bytes ? c->bbytes : c->bb), bytes);
}

static inline ck_u128 word128(const uint8_t *d, uint64_t i, uint32_t bb)
{
    uint64_t bit = i * bb;
    const uint8_t *q = d + (bit >> 3);
    ck_u128 w = (ck_u128)amq_load64(q) | ((ck_u128)amq_load64(q + 8) << 64);
    return w >> (bit & 7);
}

/* Fields of w (ones: bit 0 of each) that are zero: nonzero iff one is; the
 * lowest set bit is the top bit of the lowest zero field. */
static inline uint64_t zero64(uint64_t w, uint64_t ones, uint64_t highs)
{
    return (w - ones) & ~w & highs;
}

static inline ck_u128 zero128(ck_u128 w, ck_u128 ones, uint32_t f)
{
    return (w - ones) & ~w & (ones << (f - 1));
}

static inline ck_u128 ones128(const amq_cuckoo *c)
{
    return (ck_u128)c->ones_lo | ((ck_u128)c->ones_hi << 64);
}

static int slots_have(const amq_cuckoo *c, uint64_t i, uint32_t fp)
{
    uint32_t j;
    for (j = 0; j < c->b; j++)
        if (ct_get(c->d, c->f, i * c->b + j) == fp)
            return 1;
    return 0;
}

/* The test for the layouts that are not one 64-bit word. */
static __attribute__((noinline)) int test_other(const amq_cuckoo *c, uint32_t fp, uint64_t i1,
                                                uint64_t i2)
{
    if (c->shape == CK_WORD128) {
        ck_u128 ones = ones128(c), x = (ck_u128)fp * ones;
        ck_u128 w1 = word128(c->d, i1, c->bb), w2 = word128(c->d, i2, c->bb);
        return (zero128(w1 ^ x, ones, c->f) | zero128(w2 ^ x, ones, c->f)) != 0;
    }
    return slots_have(c, i1, fp) | slots_have(c, i2, fp);
}

/* 1 if bucket i1 or i2 holds fp: both buckets loaded before either is
 * compared, each compared whole. */
static inline __attribute__((always_inline)) int test2(const amq_cuckoo *c, uint32_t fp,
                                                      uint64_t i1, uint64_t i2)
{
    if (__builtin_expect(c->shape == CK_WORD64, 1)) {
uint64_t w1 = word64(c->d, i1, c->bb), w2 = word64(c->d, i2, c->bb);
        uint64_t x = (uint64_t)fp * c->ones_lo, y1 = w1 ^ x, y2 = w2 ^ x;
        return (((y1 - c->ones_lo) & ~y1) | ((y2 - c->ones_lo) & ~y2)) & c->highs_lo ? 1 : 0;
    }
    return test_other(c, fp, i1, i2);
}

static inline __attribute__((always_inline)) int query(const amq_cuckoo *c, amq_hash128 h)
{
    uint32_t fp = fingerprint(h.h2, c->fmax);
    uint64_t i1 = reduce64(h.h1, c->nb), i2 = alt_bucket(i1, fp, c->nb);
    int r = test2(c, fp, i1, i2);
    /* A victim exists only in a full filter: a branch that always goes
     * the same way. */
    if (__builtin_expect(c->victim_fp != 0, 0))
        r |= victim_matches(c, fp, i1, i2);
    return r;
}

/* Slot index of the first empty slot of bucket i, or -1. */
static inline __attribute__((always_inline)) int64_t bucket_empty(const amq_cuckoo *c, uint64_t i)
{
    uint32_t j;
    if (c->shape == CK_WORD64) {
        uint64_t z = zero64(word64(c->d, i, c->bb), c->ones_lo, c->highs_lo);
        return z ? (int64_t)(i * c->b + ((uint32_t)__builtin_ctzll(z) + 1) / c->f - 1) : -1;
    }
    for (j = 0; j < c->b; j++)
        if (ct_get(c->d, c->f, i * c->b + j) == 0)
            return (int64_t)(i * c->b + j);
    return -1;
}

/* Slot index of the first slot of bucket i holding fp, or -1. */
static int64_t bucket_find(const amq_cuckoo *c, uint64_t i, uint32_t fp)
{
    uint32_t j;
    for (j = 0; j < c->b; j++)
        if (ct_get(c->d, c->f, i * c->b + j) == fp)
            return (int64_t)(i * c->b + j);
    return -1;
}

static uint32_t bucket_count(const amq_cuckoo *c, uint64_t i, uint32_t fp)
{
    uint32_t j, n = 0;
    for (j = 0; j < c->b; j++)
        n += ct_get(c->d, c->f, i * c->b + j) == fp;
    return n;
}

/* Prefetches (for writing) the bytes a read of bucket i touches, on a
 * table out of cache (pf_last != 0): a bucket that starts near the end of
 * a cache line spills into the next one, and a read of it would wait for
 * that line. */
static inline __attribute__((always_inline)) void prefetch_bucket(const amq_cuckoo *c, uint64_t i)
{
    const uint8_t *p = c->d + i * c->bb / 8;
    __builtin_prefetch(p, 1);
    __builtin_prefetch(p + c->pf_last, 1);
}

/*
 * A free slot for fp, whose buckets i1 and i2 are full, at most two moves
 * away, searched breadth first: the alternate buckets of the 2b
 * fingerprints of i1 and i2 are computed and prefetched together (one
 * cache miss's time), and if one has room that fingerprint moves there and
 * fp takes its slot; else (buckets of up to 4 slots) the alternates of the
 * fingerprints of those 2b buckets, 2b^2 reads in flight together, for a
 * chain of two moves.  Near 95 % load this places almost every add in two
 * round trips to memory, where a walk takes many dependent ones.  1 placed,
 * 0 not found (nothing moved).
 */
static int kick_bfs(amq_cuckoo *c, uint64_t i1, uint64_t i2, uint32_t fp)
{
    uint8_t *d = c->d;
    uint32_t f = c->f, b = c->b, bb = c->bb, n1 = 0, n2 = 0, k, j, m;
    uint64_t nb = c->nb, start[2], from[16], to[16], to2[32];
    uint32_t slot1[16], fp1[16], src2[32], slot2[32], fp2[32];
    int64_t s;

    start[0] = i1;
    start[1] = i2;
    for (k = 0; k < (i1 == i2 ? 1u : 2u); k++)
        for (j = 0; j < b; j++) {
            from[n1] = start[k];
            slot1[n1] = j;
            fp1[n1] = ct_get(d, f, start[k] * b + j);
            to[n1] = alt_bucket(start[k], fp1[n1], nb);
            __builtin_prefetch(d + to[n1] * bb / 8, 1);
            n1++;
        }
    for (k = 0; k < n1; k++)
        if ((s = bucket_empty(c, to[k])) >= 0) {
            ct_set(d, f, (uint64_t)s, fp1[k]);
            ct_set(d, f, from[k] * b + slot1[k], fp);
            return 1;
        }
    if (b > 4)
        return 0;
    /* Every bucket read so far is full, so a free slot found now is none
     * of theirs; a fingerprint whose alternate is its own bucket is no
     * first move (its slot would be used twice). */
    for (k = 0; k < n1; k++) {
        if (to[k] == from[k])
            continue;
        for (j = 0; j < b; j++) {
            src2[n2] = k;
            slot2[n2] = j;
            fp2[n2] = ct_get(d, f, to[k] * b + j);
            to2[n2] = alt_bucket(to[k], fp2[n2], nb);
            __builtin_prefetch(d + to2[n2] * bb / 8, 1);
            n2++;
        }
    }
    for (m = 0; m < n2; m++)
        if ((s = bucket_empty(c, to2[m])) >= 0) {
            k = src2[m];
            ct_set(d, f, (uint64_t)s, fp2[m]);
            ct_set(d, f, to[k] * b + slot2[m], fp1[k]);
            ct_set(d, f, from[k] * b + slot1[k], fp);
            return 1;
        }
    return 0;
}

/* The address of bucket i's first byte, for prefetches. */
static inline __attribute__((always_inline)) const uint8_t *bucket_at(const amq_cuckoo *c,
                                                                     uint64_t i, int bytes)
{
    return c->d + (bytes ? i * c->bbytes : i * c->bb / 8);
}

/* The first empty slot (absolute index) of a bucket whose word w is full
 * or not: z is w's zero-field test, nonzero. */
static inline uint64_t empty_slot(const amq_cuckoo *c, uint64_t i, uint64_t z)
{
    return i * c->b + ((uint32_t)__builtin_ctzll(z) + 1) / c->f - 1;
}

/* A bucket of a one-word layout prefetched: its first line, and on a
 * table out of cache (far) the line its word may spill into. */
static inline __attribute__((always_inline)) void prefetch_words(const amq_cuckoo *c, uint64_t i,
                                                                 int bytes, int far)
{
    if (far)
        prefetch_bucket(c, i);
    else
        __builtin_prefetch(bucket_at(c, i, bytes), 1);
}

/*
 * kick_bfs for one-word buckets, the same search in the same order: a
 * bucket's fingerprints come from one load by shifts, and whether a bucket
 * has room from one load and one test, so that the search's own work stays
 * small beside the memory round trips it waits for.
 */
static inline __attribute__((always_inline)) int kick_bfs_words(amq_cuckoo *c, uint64_t i1,
                                                               uint64_t i2, uint32_t fp,
                                                               int bytes, int far)
{
    uint8_t *d = c->d;
    uint32_t f = c->f, b = c->b, n1 = 0, n2 = 0, k, j, m;
    uint64_t fmax = c->fmax, ones = c->ones_lo, highs = c->highs_lo, w, z, s;
    uint64_t from[16], to[16], to2[32];
    uint32_t slot1[16], fp1[16], src2[32], slot2[32], fp2[32];

    for (k = 0; k < (i1 == i2 ? 1u : 2u); k++) {
        s = k ? i2 : i1;
        w = bucket_word(c, s, bytes);
        for (j = 0; j < b; j++, w >>= f) {
            from[n1] = s;
            slot1[n1] = j;
            fp1[n1] = (uint32_t)(w & fmax);
            to[n1] = alt8(c, s, fp1[n1]);
            prefetch_words(c, to[n1], bytes, far);
            n1++;
        }
    }
    for (k = 0; k < n1; k++)
        if ((z = zero64(bucket_word(c, to[k], bytes), ones, highs)) != 0) {
            ct_set(d, f, empty_slot(c, to[k], z), fp1[k]);
            ct_set(d, f, from[k] * b + slot1[k], fp);
            return 1;
        }
    if (b > 4)
        return 0;
    /* As in kick_bfs: every bucket read is full; a fingerprint whose
     * alternate is its own bucket is no first move. */
    for (k = 0; k < n1; k++) {
        if (to[k] == from[k])
            continue;
        w = bucket_word(c, to[k], bytes);
        for (j = 0; j < b; j++, w >>= f) {
            src2[n2] = k;
            slot2[n2] = j;
            fp2[n2] = (uint32_t)(w & fmax);
            to2[n2] = alt8(c, to[k], fp2[n2]);
            prefetch_words(c, to2[n2], bytes, far);
            n2++;
        }
    }
    for (m = 0; m < n2; m++)
        if ((z = zero64(bucket_word(c, to2[m], bytes), ones, highs)) != 0) {
            k = src2[m];
            ct_set(d, f, empty_slot(c, to2[m], z), fp2[m]);
            ct_set(d, f, to[k] * b + slot2[m], fp1[k]);
            ct_set(d, f, from[k] * b + slot1[k], fp);
            return 1;
        }
    return 0;
}

/*
 * Places fp, whose buckets i1 and i2 are full, by evicting.  1 when every
 * fingerprint found a slot; 0 when the last homeless one went to the victim
 * slot (the caller has checked that it was free).
 *
 * First the breadth-first search above; when it finds nothing (the filter
 * is all but full), a walk: each step looks one level ahead (the alternate
 * buckets of all b fingerprints of the full bucket, prefetched together),
 * and if one has room, that fingerprint moves there and fp takes its slot;
 * else a random slot is evicted and the walk goes on from its alternate
 * bucket.  At most max_kicks steps.
 */
static __attribute__((noinline)) int kick(amq_cuckoo *c, uint64_t i1, uint64_t i2, uint32_t fp)
{
    uint8_t *d = c->d;
    uint32_t f = c->f, b = c->b, bb = c->bb, k, j, old, fps[8];
    uint64_t nb = c->nb, i, alt[8], w;
    int64_t s;
    int word = c->shape == CK_WORD64;

    if (!word                       ? kick_bfs(c, i1, i2, fp)
        : bb % 8 == 0 && c->pf_last ? kick_bfs_words(c, i1, i2, fp, 1, 1)
        : bb % 8 == 0               ? kick_bfs_words(c, i1, i2, fp, 1, 0)
        : c->pf_last                ? kick_bfs_words(c, i1, i2, fp, 0, 1)
                                    : kick_bfs_words(c, i1, i2, fp, 0, 0))
        return 1;
    i = (next_rand(c) & 1) ? i2 : i1;
    for (k = 0; k < c->p.max_kicks; k++) {
        /* One-word buckets: the b fingerprints from one load. */
        w = word ? word64(d, i, bb) : 0;
        for (j = 0; j < b; j++) {
            fps[j] = word ? (uint32_t)((w >> (j * f)) & c->fmax) : ct_get(d, f, i * b + j);
            alt[j] = alt_bucket(i, fps[j], nb);
            __builtin_prefetch(d + alt[j] * bb / 8, 1);
        }
        for (j = 0; j < b; j++) {
            s = bucket_empty(c, alt[j]);
            if (s >= 0) {
                ct_set(d, f, (uint64_t)s, fps[j]);
                ct_set(d, f, i * b + j, fp);
                return 1;
            }
        }
        j = (uint32_t)((next_rand(c) >> 32) % b);
        old = fps[j];
        ct_set(d, f, i * b + j, fp);
        fp = old;
        i = alt[j];
    }
    set_victim(c, fp, i);
    return 0;
}

static __attribute__((noinline)) int insert_other(amq_cuckoo *c, uint64_t i1, uint64_t i2,
                                                  uint32_t fp)
{
    int64_t s = bucket_empty(c, i1);
    if (s < 0)
        s = bucket_empty(c, i2);
    if (s < 0)
        return kick(c, i1, i2, fp);
    ct_set(c->d, c->f, (uint64_t)s, fp);
    return 1;
}

/*
 * Places fp in bucket i1 or i2, evicting when both are full: 1 placed, 0
 * the last homeless fingerprint went to the victim slot.  The common
 * layouts load both buckets up front and put fp in the emptier (add8's
 * rule: the smaller word), else in the other, with the has-zero-field test
 * finding the free field; fp is ORed into the word that holds it (the field
 * is zero): no call, no loop.
 */
static inline __attribute__((always_inline)) int insert(amq_cuckoo *c, uint64_t i1, uint64_t i2,
                                                       uint32_t fp)
{
    if (__builtin_expect(c->shape == CK_WORD64, 1)) {
        uint32_t f = c->f;
        uint64_t w1 = word64(c->d, i1, c->bb) & c->bmask, w2 = word64(c->d, i2, c->bb) & c->bmask;
        uint64_t z1 = zero64(w1, c->ones_lo, c->highs_lo), z2 = zero64(w2, c->ones_lo, c->highs_lo);
        uint64_t bit, w;
        uint8_t *q;
        if (w2 < w1 ? z2 != 0 : z1 == 0)
            z1 = 0; /* i2: the emptier, or the only one with room */
        if (z1)
            bit = i1 * c->bb + (uint64_t)__builtin_ctzll(z1) + 1 - f;
        else if (z2)
            bit = i2 * c->bb + (uint64_t)__builtin_ctzll(z2) + 1 - f;
        else
            return kick(c, i1, i2, fp);
        q = c->d + (bit >> 3);
        w = amq_load64(q) | ((uint64_t)fp << (bit & 7));
        amq_store64(q, w);
        return 1;
    }
    return insert_other(c, i1, i2, fp);
}

#define BATCH 16

/* Bucket indexes of a block of keys first, with both buckets prefetched,
 * then the tests: up to 2 * BATCH cache misses in flight. */
static void contains_batch_any(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                               uint8_t *out)
{
    const uint8_t *d = c->d;
    uint64_t nb = c->nb, i1[BATCH], i2[BATCH];
    uint32_t fp[BATCH], bb = c->bb;
    size_t base, j, m;

    for (base = 0; base < n; base += BATCH) {
        m = n - base < BATCH ? n - base : BATCH;
        for (j = 0; j < m; j++) {
            fp[j] = fingerprint(h[base + j].h2, c->fmax);
            i1[j] = reduce64(h[base + j].h1, nb);
            i2[j] = alt_bucket(i1[j], fp[j], nb);
            __builtin_prefetch(d + i1[j] * bb / 8);
            __builtin_prefetch(d + i2[j] * bb / 8);
        }
        for (j = 0; j < m; j++)
            out[base + j] = (uint8_t)(test2(c, fp[j], i1[j], i2[j]) |
                                      victim_matches(c, fp[j], i1[j], i2[j]));
    }
}

/* ---- sizing ---------------------------------------------------------------------- */

static int valid_f(uint32_t f)
{
    return f >= AMQ_CUCKOO_MIN_FINGERPRINT && f <= AMQ_CUCKOO_MAX_FINGERPRINT;
}

static int valid_b(uint32_t b)
{
    return b == 1 || b == 2 || b == 4 || b == 8;
}

/* How buckets of bb bits are read (see word64). */
static uint32_t shape_of(uint32_t bb)
{
    uint32_t g = bb & 7 ? (bb & 1 ? 1 : bb & 2 ? 2 : 4) : 8; /* gcd(bb, 8) */
    if (bb + 8 - g <= 64)
        return CK_WORD64;
    if (bb + 8 - g <= 128)
        return CK_WORD128;
    return CK_SLOTS;
}

double amq_cuckoo_max_load(uint32_t b)
{
    /* Measured first-failure loads with 500 kicks (8 to 32-bit
     * fingerprints, tables of 1M to 32M slots) are ~0.45, ~0.87, ~0.96-0.97
     * and ~0.99 (docs/cuckoo.md).  These leave a margin; 4-slot buckets run
     * at 0.95, where 10-bit fingerprints reach 1 % in 10.5 bits per key,
     * at the cost of longer eviction walks for the last few per cent. */
    switch (b) {
    case 1:
        return 0.40;
    case 2:
        return 0.80;
    case 4:
        return 0.95;
    case 8:
        return 0.96;
    default:
        return 0.0;
    }
}

/* The load (f, b) is sized for: amq_cuckoo_max_load(b), lower for short
 * fingerprints, whose 2^f - 1 alternates per bucket jam large tables
 * early (measured: docs/cuckoo.md). */
static double load_cap(uint32_t f, uint32_t b)
{
    double max = amq_cuckoo_max_load(b);
    if (f >= 10 || (f >= 8 && b != 1))
        return max;
    if (b == 1)
        return f >= 8 ? 0.15 : 0.04;
    if (f >= 6)
        return b == 2 ? 0.70 : 0.90;
    return b == 2 ? 0.30 : 0.80;
}

double amq_cuckoo_fpp_theory(uint32_t f, uint32_t b, double load)
{
    double q;
    if (!valid_f(f) || !valid_b(b))
        return 1.0;
    q = 1.0 / (double)((UINT64_C(1) << f) - 1);
    return -expm1(2.0 * (double)b * load * log1p(-q));
}

/* The load at which (f, b) reaches rate t, capped at the maximum. */
static double load_for(uint32_t f, uint32_t b, double t)
{
    double q = 1.0 / (double)((UINT64_C(1) << f) - 1);
    double a = log1p(-t) / (2.0 * (double)b * log1p(-q));
    double max = load_cap(f, b);
    return a < max ? a : max;
}

int amq_cuckoo_params_for(uint64_t n, double p, uint32_t fbits, uint32_t bsize,
                          amq_cuckoo_params *params)
{
    static const uint32_t bs[4] = {1, 2, 4, 8};
    double best_bpi = INFINITY, best_load = 0.0, nbd;
    uint32_t best_f = 0, best_b = 0, f, j;

    memset(params, 0, sizeof *params);
    if (n == 0 || !(p > 0.0 && p < 1.0))
        return AMQ_ERANGE;
    if ((fbits != 0 && !valid_f(fbits)) || (bsize != 0 && !valid_b(bsize)))
        return AMQ_ERANGE;
    for (f = AMQ_CUCKOO_MIN_FINGERPRINT; f <= AMQ_CUCKOO_MAX_FINGERPRINT; f++) {
        for (j = 0; j < 4; j++) {
            uint32_t b = bs[j];
            double load, bpi;
            if ((fbits != 0 && f != fbits) || (bsize != 0 && b != bsize))
                continue;
            /* 8-slot buckets save under 3 % of the bits of 4-slot ones but
             * read twice the bits per bucket: only on request. */
            if (bsize == 0 && b == 8)
                continue;
            load = (fbits != 0 && bsize != 0) ? load_cap(f, b) : load_for(f, b, 0.95 * p);
            if (!(load > 0.0))
                continue;
            /* Ties (equal bits per key) go to the wider fingerprint. */
            bpi = (double)f / load;
            if (bpi <= best_bpi * (1.0 + 1e-12)) {
                best_bpi = bpi < best_bpi ? bpi : best_bpi;
                best_load = load;
                best_f = f;
                best_b = b;
            }
        }
    }
    if (best_f == 0)
        return AMQ_ERANGE;
    /* Below what the widest fingerprints reach, a lower rate only thins the
     * table (fpp 1e-12 would leave it 99.5 % empty: 2 GB for a million
     * keys); refused rather than sized, a Bloom kind being the tool. */
    if (best_load < 0.5 * load_cap(best_f, best_b))
        return AMQ_ERANGE;
    /* Small tables fill less evenly (the first failure of a 13-bucket table
     * can come at half the load of a large one): 2 sqrt(nb) spare buckets,
     * 0.2 % of a million-bucket table, keep them from filling before n. */
    nbd = ceil((double)n / ((double)best_b * best_load));
    nbd += ceil(2.0 * sqrt(nbd));
    if (!(nbd >= 1.0 && nbd <= (double)AMQ_CUCKOO_MAX_BUCKETS))
        return AMQ_ERANGE;
    params->fingerprint_bits = best_f;
    params->bucket_size = best_b;
    params->buckets = (uint64_t)nbd;
    params->max_kicks = AMQ_CUCKOO_DEFAULT_KICKS;
    params->hash_algo = AMQ_HASH_MULSHIFT;
    params->seed = 0;
    params->capacity = n;
    params->fpp = amq_cuckoo_fpp_theory(best_f, best_b,
                                        (double)n / ((double)params->buckets * best_b));
    return AMQ_OK;
}

int amq_cuckoo_check_params(const amq_cuckoo_params *p)
{
    if (!valid_f(p->fingerprint_bits) || !valid_b(p->bucket_size))
        return AMQ_ERANGE;
    if (p->buckets == 0 || p->buckets > AMQ_CUCKOO_MAX_BUCKETS || p->max_kicks == 0 ||
        p->max_kicks > AMQ_CUCKOO_MAX_KICKS)
        return AMQ_ERANGE;
    if (!(p->fpp >= 0.0 && p->fpp <= 1.0))
        return AMQ_ERANGE;
    return amq_hash_check(p->hash_algo, p->seed);
}

size_t amq_cuckoo_data_size(const amq_cuckoo_params *p)
{
    return (size_t)ct_bytes(p->buckets * p->bucket_size, p->fingerprint_bits);
}

/* ---- life cycle --------------------------------------------------------------------- */

/* Whether a table of p stays in cache (FIXED_DIRECT_BYTES): the test
 * behind pf_last. */
static int in_cache(const amq_cuckoo_params *p)
{
    return amq_cuckoo_data_size(p) <= FIXED_DIRECT_BYTES;
}

/* The per-filter constants of the hot paths (d is set with the table). */
static void derive(amq_cuckoo *c)
{
    uint32_t j;
    c->nb = c->p.buckets;
    c->f = c->p.fingerprint_bits;
    c->b = c->p.bucket_size;
    c->bb = c->f * c->b;
    c->shape = shape_of(c->bb);
    c->fmax = (UINT64_C(1) << c->f) - 1;
    c->ms = c->p.hash_algo == AMQ_HASH_MULSHIFT;
    c->fast = (c->p.hash_algo == AMQ_HASH_XXH3 || c->ms) && c->shape == CK_WORD64;
    c->fast_add = 0; /* until the table is known to be writable */
    c->bbytes = c->bb / 8;
    c->x8 = x8_key(c->p.seed);
    {
        amq_ms_key k = amq_ms_key_for(c->p.seed);
        c->ms_a = k.a;
        c->ms_b = k.b;
    }
    c->k_mul = X8_MUL;
    c->k_mx2 = X8_MX2;
    c->k_aval = X8_AVALANCHE;
    c->k_phi = PHI;
    key8_modes(c);
    c->ones_lo = c->ones_hi = 0;
    for (j = 0; j < c->b; j++) {
        uint32_t bit = j * c->f;
        if (bit < 64)
            c->ones_lo |= UINT64_C(1) << bit;
        else if (bit < 128)
            c->ones_hi |= UINT64_C(1) << (bit - 64);
    }
    c->highs_lo = c->ones_lo << (c->f - 1);
    c->bmask = c->bb >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << c->bb) - 1;
    c->peek_items = (uint64_t)(PEEK_LOAD * (double)c->nb * (double)c->b);
    /* word64 reads 8 bytes, word128 16, ct_get up to 8 from a slot's first
     * byte; a table in cache is read without waiting for a second line. */
    c->pf_last = in_cache(&c->p)          ? 0
                 : c->shape == CK_WORD64  ? 7
                 : c->shape == CK_WORD128 ? 15
                                          : (c->bb + 6) / 8 + 7;
    c->ones2[0] = c->ones2[1] = c->ones_lo;
    c->highs2[0] = c->highs2[1] = c->highs_lo;
}

/* What a filter's alt_tab counts (bytes or bits, see tab_unit), 0 for
 * none: only the layouts and hashes of the q8 entries read one, and every
 * position must fit its 32-bit entries. */
static uint32_t alt_tab_unit(const amq_cuckoo_params *p)
{
    uint32_t bb = p->fingerprint_bits * p->bucket_size, unit = bb % 8 == 0 ? bb / 8 : bb;
    if (p->fingerprint_bits > ALT_TABLE_MAX_F || shape_of(bb) != CK_WORD64 ||
        (p->hash_algo != AMQ_HASH_XXH3 && p->hash_algo != AMQ_HASH_MULSHIFT) ||
        p->buckets > UINT32_MAX / unit ||
        amq_cuckoo_data_size(p) / ALT_TABLE_SHARE < (sizeof(uint32_t) << p->fingerprint_bits))
        return 0;
    return unit;
}

/* Bytes of a filter's alt_tab (0: none), allocated with its struct. */
static size_t alt_tab_bytes(const amq_cuckoo_params *p)
{
    return alt_tab_unit(p) == 0 ? 0 : sizeof(uint32_t) << p->fingerprint_bits;
}

static amq_cuckoo *shell(const amq_cuckoo_params *p, const amq_allocator *alloc)
{
    amq_allocator a;
    amq_cuckoo *c;
    size_t tab = alt_tab_bytes(p);

    amq_alloc_init(&a, alloc);
    c = amq_calloc(&a, sizeof *c + tab);
    if (c == NULL)
        return NULL;
    c->p = *p;
    if (tab != 0) {
        uint32_t *t = (uint32_t *)(void *)(c + 1), fp;
        c->tab_unit = alt_tab_unit(p);
        c->tab_span = p->buckets * c->tab_unit;
        for (fp = 0; fp < (uint32_t)(tab / sizeof *t); fp++)
            t[fp] = (uint32_t)(reduce64((uint64_t)fp * PHI, p->buckets) * c->tab_unit);
    }
    derive(c);
    c->rng = RNG_SEED;
    c->alloc = a;
    return c;
}

int amq_cuckoo_new(const amq_cuckoo_params *params, const amq_allocator *alloc,
                   amq_cuckoo **out)
{
    amq_cuckoo *c;
    int rc;

    *out = NULL;
    rc = amq_cuckoo_check_params(params);
    if (rc != AMQ_OK)
        return rc;
    c = shell(params, alloc);
    if (c == NULL)
        return AMQ_ENOMEM;
    rc = amq_region_alloc(&c->data, &c->alloc, amq_cuckoo_data_size(params));
    if (rc != AMQ_OK) {
        amq_cuckoo_free(c);
        return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
    }
    c->d = c->data.data;
    c->fast_add = c->fast;
    key8_modes(c);
    *out = c;
    return AMQ_OK;
}

static int check_victim(const amq_cuckoo_params *p, uint32_t fp, uint64_t bucket)
{
    if (fp == 0)
        return bucket == 0 ? AMQ_OK : AMQ_ERANGE;
    if ((uint64_t)fp >= (UINT64_C(1) << p->fingerprint_bits) || bucket >= p->buckets)
        return AMQ_ERANGE;
    return AMQ_OK;
}

int amq_cuckoo_view(const amq_cuckoo_params *params, const void *data, size_t len,
                    uint64_t items, uint32_t victim_fp, uint64_t victim_bucket,
                    const amq_allocator *alloc, amq_cuckoo **out)
{
    amq_cuckoo *c;
    int rc;

    *out = NULL;
    rc = amq_cuckoo_check_params(params);
    if (rc != AMQ_OK)
        return rc;
    if (check_victim(params, victim_fp, victim_bucket) != AMQ_OK)
        return AMQ_ERANGE;
    if (len != amq_cuckoo_data_size(params))
        return AMQ_EINVAL;
    c = shell(params, alloc);
    if (c == NULL)
        return AMQ_ENOMEM;
    amq_region_borrow(&c->data, data, len);
    c->d = c->data.data; /* never written: a view's mutators return AMQ_EREADONLY */
    c->items = items;
    set_victim(c, victim_fp, victim_bucket);
    *out = c;
    return AMQ_OK;
}

int amq_cuckoo_clone(const amq_cuckoo *src, const amq_allocator *alloc, amq_cuckoo **out)
{
    amq_cuckoo *c;
    int rc;

    *out = NULL;
    c = shell(&src->p, alloc);
    if (c == NULL)
        return AMQ_ENOMEM;
    rc = amq_region_copy(&c->data, &c->alloc, src->data.data, src->data.size);
    if (rc != AMQ_OK) {
        amq_cuckoo_free(c);
        return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
    }
    c->d = c->data.data;
    c->fast_add = c->fast;
    c->items = src->items;
    set_victim(c, src->victim_fp, src->victim_bucket);
    c->rng = src->rng;
    *out = c;
    return AMQ_OK;
}

void amq_cuckoo_free(amq_cuckoo *c)
{
    amq_allocator a;
    if (c == NULL)
        return;
    a = c->alloc;
    amq_region_free(&c->data, &a);
    amq_free(&a, c, sizeof *c + alt_tab_bytes(&c->p));
}

/* ---- operations ---------------------------------------------------------------------- */

amq_hash128 amq_cuckoo_hash(const amq_cuckoo *c, const void *key, size_t len)
{
    return amq_hash_key(c->p.hash_algo, c->p.seed, key, len);
}

/* XXH3 inline for the common case (a call through the PLT and a switch on
 * the algorithm cost as much as the rest of a one-key query); the other
 * algorithms through amq_hash_key. */
static inline __attribute__((always_inline)) amq_hash128 key_hash(const amq_cuckoo *c,
                                                                   const void *key, size_t len)
{
    if (__builtin_expect(c->ms, 1)) {
        amq_hash128 h;
        h.h1 = amq_ms_apply(c->ms_a, c->ms_b,
                            len == 8 ? amq_load64(key) : XXH3_64bits_withSeed(key, len, c->p.seed));
        h.h2 = amq_ms_h2(h.h1);
        return h;
    }
    if (__builtin_expect(c->p.hash_algo == AMQ_HASH_XXH3, 1)) {
        XXH128_hash_t x = XXH3_128bits_withSeed(key, len, c->p.seed);
        amq_hash128 h;
        h.h1 = x.low64;
        h.h2 = x.high64;
        return h;
    }
    return amq_hash_key(c->p.hash_algo, c->p.seed, key, len);
}

static inline __attribute__((always_inline)) int add_inline(amq_cuckoo *c, amq_hash128 h)
{
    uint32_t fp;
    uint64_t i1, i2;

    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    if (c->victim_fp != 0)
        return AMQ_EFULL;
    fp = fingerprint(h.h2, c->fmax);
    i1 = reduce64(h.h1, c->nb);
    i2 = alt_bucket(i1, fp, c->nb);
    (void)insert(c, i1, i2, fp);
    c->items++;
    return 1;
}

int amq_cuckoo_add_hash(amq_cuckoo *c, amq_hash128 h)
{
    return add_inline(c, h);
}

/* The slow paths of the one-key functions, out of line so that the fast
 * ones stay leaf functions (no registers to save, no frame). */
static __attribute__((noinline)) int add_any(amq_cuckoo *c, const void *key, size_t len)
{
    return add_inline(c, key_hash(c, key, len));
}

static __attribute__((noinline)) int query_any(const amq_cuckoo *c, const void *key, size_t len)
{
    return query(c, key_hash(c, key, len));
}

/*
 * 16-byte keys with XXH3 in a one-word layout (c->fast): XXH3's code for
 * that length flattened into the add or the query.  A full filter (a
 * victim) and a view take the general path.
 */
__attribute__((flatten)) static int add_fast16(amq_cuckoo *c, const void *key)
{
    amq_hash128 x = key_hash(c, key, 16);
    uint32_t fp = fingerprint(x.h2, c->fmax);
    uint64_t i1 = reduce64(x.h1, c->nb), i2 = alt_bucket(i1, fp, c->nb);
    (void)insert(c, i1, i2, fp);
    c->items++;
    return 1;
}

__attribute__((flatten)) static int query_fast16(const amq_cuckoo *c, const void *key)
{
    amq_hash128 x = key_hash(c, key, 16);
    uint32_t fp = fingerprint(x.h2, c->fmax);
    uint64_t i1 = reduce64(x.h1, c->nb), i2 = alt_bucket(i1, fp, c->nb);
    return test2(c, fp, i1, i2);
}

/*
 * 8-byte keys (c->q8, c->q8_add): the hash, both buckets' words loaded
 * before either is looked at, each compared whole; bytes: buckets start on
 * whole bytes (c->bbytes each), so a bucket is one load at i * bbytes with
 * no shift.  A one-key call is bound by how many of them the CPU can keep
 * in flight, which is set by their instruction count: every step counts.
 */
static inline __attribute__((always_inline)) int query8(const amq_cuckoo *c, const void *key,
                                                       int bytes, int ms, int tab)
{
    uint64_t top, h1 = x8_hash(c, key, &top, ms), ones = c->ones_lo, p1, p2, w1, w2;
    uint32_t fp = (uint32_t)((top * c->fmax) >> 32) + 1;
    bucket_pair_at(c, reduce64(h1, c->nb), fp, bytes, tab, &p1, &p2);
    w1 = word_at(c, p1, bytes);
    w2 = word_at(c, p2, bytes);
    uint64_t x = (uint64_t)fp * ones, y1 = w1 ^ x, y2 = w2 ^ x;
    return ((((y1 - ones) & ~y1) | ((y2 - ones) & ~y2)) & c->highs_lo) != 0;
}

/* fp into the free field, whose top bit is z's lowest, of the bucket at
 * position p (bytes when bytes, else bits, as bucket_pair_at gives it): the
 * field is zero, so fp is ORed into the word that holds it (read again, in
 * L1 now, rather than kept in a register). */
static inline __attribute__((always_inline)) void put8(amq_cuckoo *c, uint64_t p, uint64_t z,
                                                      uint32_t fp, int bytes)
{
    uint64_t at = (uint64_t)__builtin_ctzll(z) + 1 - c->f;
    uint8_t *q;
    if (bytes) {
        q = c->d + p;
    } else {
        at += p;
        q = c->d + (at >> 3);
        at &= 7;
    }
    amq_store64(q, amq_load64(q) | ((uint64_t)fp << at));
}

/* The add's chosen bucket was full (both are, unless a removal left a
 * hole in the other): insert() decides again, by the same rule, from the
 * words now in cache - the other bucket, else the kick.  Out of line
 * (add8_full_bytes, _bits), reached by a tail call, so that add8 keeps no
 * frame; p1 is bucket i1's position. */
static inline __attribute__((always_inline)) int add8_full(amq_cuckoo *c, uint64_t p1, uint32_t fp,
                                                          int bytes)
{
    uint64_t i1 = p1 / (bytes ? c->bbytes : c->bb);
    (void)insert(c, i1, alt8(c, i1, fp), fp);
    return 1;
}

static __attribute__((noinline)) int add8_full_bytes(amq_cuckoo *c, uint64_t p1, uint32_t fp)
{
    return add8_full(c, p1, fp, 1);
}

static __attribute__((noinline)) int add8_full_bits(amq_cuckoo *c, uint64_t p1, uint32_t fp)
{
    return add8_full(c, p1, fp, 0);
}

/*
 * Both buckets' words loaded as the query loads them (bucket_pair_at), fp
 * into the emptier: slots fill from the lowest field, so the bucket whose
 * word is smaller holds fewer fingerprints (holes left by removals only
 * blur the choice, never its correctness): insert()'s rule.  Balancing
 * from the first add keeps the buckets even, so fewer adds near full load
 * find both full and kick; the choice is a compare and conditional moves,
 * not a branch that would go either way.
 */
static inline __attribute__((always_inline)) int add8(amq_cuckoo *c, const void *key, int bytes,
                                                     int ms, int tab)
{
    uint64_t top, h1 = x8_hash(c, key, &top, ms), bmask = c->bmask, p1, p2, w1, w2, p, z;
    uint32_t fp = (uint32_t)((top * c->fmax) >> 32) + 1;
    bucket_pair_at(c, reduce64(h1, c->nb), fp, bytes, tab, &p1, &p2);
    w1 = word_at(c, p1, bytes) & bmask;
    w2 = word_at(c, p2, bytes) & bmask;
    c->items++;
    p = w2 < w1 ? p2 : p1;
    z = zero64(w2 < w1 ? w2 : w1, c->ones_lo, c->highs_lo);
    if (__builtin_expect(z == 0, 0))
        return bytes ? add8_full_bytes(c, p1, fp) : add8_full_bits(c, p1, fp);
    put8(c, p, z, fp, bytes);
    return 1;
}

CK8_GRID(, ck_add8_fn, amq_cuckoo, add8_leaf, add8)

static int add8_any(amq_cuckoo *c, const void *key)
{
    return add_any(c, key, 8);
}

/* Keys of other lengths than 8, out of line so that the entries below
 * keep no frame: an 8-byte key is a jump to the filter's leaf. */
static __attribute__((noinline)) int add_other(amq_cuckoo *c, const void *key, size_t len)
{
    if (len == 16 && c->fast_add && c->victim_fp == 0)
        return add_fast16(c, key);
    return add_any(c, key, len);
}

/* amq_cuckoo_add, also the handle's entry (op_add_key). */
static inline __attribute__((always_inline)) int add_key(amq_cuckoo *c, const void *key, size_t len)
{
    if (__builtin_expect(len == 8, 1))
        return c->q8_add(c, key);
    return add_other(c, key, len);
}

int amq_cuckoo_add(amq_cuckoo *c, const void *key, size_t len)
{
    return add_key(c, key, len);
}

/*
 * The kick's first step, prefetched ahead of the add that may need it
 * (add_pipeline's middle stage): when both buckets of a key are full, its
 * breadth-first search (kick_bfs_words) reads first the alternates of
 * their 2b fingerprints, so those are fetched now and the search finds
 * them in cache.  The buckets may change before the key's turn: this only
 * fetches lines.  (Fetching the search's second level too, a stage later,
 * measured slower: most of those lines go unread.)
 */
static inline __attribute__((always_inline)) void prefetch_kick(const amq_cuckoo *c, uint64_t i1,
                                                                uint64_t i2)
{
    uint64_t w1 = word64(c->d, i1, c->bb), w2 = word64(c->d, i2, c->bb), w;
    uint32_t j;
    if ((zero64(w1, c->ones_lo, c->highs_lo) | zero64(w2, c->ones_lo, c->highs_lo)) != 0)
        return;
    for (j = 0, w = w1; j < c->b; j++, w >>= c->f)
        prefetch_bucket(c, alt8(c, i1, (uint32_t)(w & c->fmax)));
    for (j = 0, w = w2; j < c->b; j++, w >>= c->f)
        prefetch_bucket(c, alt8(c, i2, (uint32_t)(w & c->fmax)));
}

/*
 * A pipeline of three stages over the keys, in order: key j has its two
 * buckets prefetched; key j - ahead, whose buckets have arrived, has the
 * first step of its kick prefetched if both are full (one-word layouts
 * out of cache, from PEEK_LOAD on); key j - 2 ahead is inserted.  Out of
 * cache an add then mostly finds what it reads in cache, the kicks near
 * full load included.  Same results, byte for byte, as n single adds: the
 * adds themselves run in order.  A table in cache needs a short lead only
 * (a longer one measured slower there).
 */
#define ADD_AHEAD 32
#define ADD_AHEAD_NEAR 4

/* The keys come as hashes (h), or packed (keys, key_len each: hashed in
 * the first stage, so a long batch is one pipeline); far: the table is out
 * of cache, pf_last != 0 (a copy each way, so that a table in cache runs a
 * loop with nothing of the rest). */
static inline __attribute__((always_inline)) int add_pipeline(amq_cuckoo *c, const amq_hash128 *h,
                                                             const uint8_t *keys, size_t key_len,
                                                             size_t n, uint8_t *added,
                                                             const int far)
{
    enum { RING = 2 * ADD_AHEAD };
    uint32_t fp[RING];
    uint64_t nb = c->nb, i1[RING], i2[RING];
    int peek = far && c->shape == CK_WORD64;
    const size_t ring = far ? RING : 2 * ADD_AHEAD_NEAR; /* a power of two */
    size_t lag = ring, half, j, k, m;
    amq_hash128 x;

    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    lag = lag < n ? lag : n;
    half = lag / 2;
    for (j = 0; j < n + lag; j++) {
        if (j >= lag) {
            m = j - lag;
            k = m % ring;
            if (c->victim_fp != 0)
                return AMQ_EFULL;
            (void)insert(c, i1[k], i2[k], fp[k]);
            c->items++;
            if (added != NULL)
                added[m] = 1;
        }
        if (peek && c->items >= c->peek_items && j >= half && j - half < n) {
            k = (j - half) % ring;
            prefetch_kick(c, i1[k], i2[k]);
        }
        if (j < n) {
            k = j % ring;
            x = h != NULL ? h[j] : key_hash(c, keys + j * key_len, key_len);
            fp[k] = fingerprint(x.h2, c->fmax);
            i1[k] = reduce64(x.h1, nb);
            i2[k] = alt_bucket(i1[k], fp[k], nb);
            if (far) {
                prefetch_bucket(c, i1[k]);
                prefetch_bucket(c, i2[k]);
            } else {
                __builtin_prefetch(c->d + i1[k] * c->bb / 8, 1);
                __builtin_prefetch(c->d + i2[k] * c->bb / 8, 1);
            }
        }
    }
    return AMQ_OK;
}

static int add_batch(amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return c->pf_last != 0 ? add_pipeline(c, h, NULL, 0, n, added, 1)
                           : add_pipeline(c, h, NULL, 0, n, added, 0);
}

/* Packed keys, the length known to the compiler for 8 and 16 bytes. */
static int add_batch_packed(amq_cuckoo *c, const uint8_t *k, size_t key_len, size_t n,
                            uint8_t *added)
{
    if (c->pf_last != 0)
        return key_len == 8    ? add_pipeline(c, NULL, k, 8, n, added, 1)
               : key_len == 16 ? add_pipeline(c, NULL, k, 16, n, added, 1)
                               : add_pipeline(c, NULL, k, key_len, n, added, 1);
    return key_len == 8    ? add_pipeline(c, NULL, k, 8, n, added, 0)
           : key_len == 16 ? add_pipeline(c, NULL, k, 16, n, added, 0)
                           : add_pipeline(c, NULL, k, key_len, n, added, 0);
}

int amq_cuckoo_add_batch(amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *added,
                         uint64_t *count)
{
    uint64_t before = c->items;
    int rc = add_batch(c, h, n, added);
    if (count != NULL)
        *count = c->items - before;
    return rc;
}

int amq_cuckoo_add_batch_fixed(amq_cuckoo *c, const void *keys, size_t key_len, size_t n,
                               uint8_t *added, uint64_t *count)
{
    uint64_t before = c->items;
    int rc = add_batch_packed(c, keys, key_len, n, added);
    if (count != NULL)
        *count = c->items - before;
    return rc;
}

int amq_cuckoo_contains_hash(const amq_cuckoo *c, amq_hash128 h)
{
    return query(c, h);
}

/* The q8 entries: query8 (or q8_vec) on whole-byte buckets or at any bit,
 * under XXH3 or mulshift, H(fp) computed or read from alt_tab. */
CK8_GRID(, ck_q8_fn, const amq_cuckoo, q8_scalar, query8)

#if defined(__x86_64__)
/* query8 with both buckets' words in one vector: the field test of the
 * two is one subtract, one and-not and one ptest, and BMI2's multiplies
 * need no moves: fewer instructions per call, and on buckets inside a
 * byte no shifts waiting for the loads. */
/* The high half of a * b by BMI2's mulx, whose operands and results are
 * in any registers: a 128-bit product takes moves into and out of rdx:rax
 * otherwise. */
__attribute__((target("bmi2"))) static inline uint64_t mulhi_bmi2(uint64_t a, uint64_t b)
{
    uint64_t lo, hi;
    __asm__("mulx %2, %0, %1" : "=r"(lo), "=r"(hi) : "rm"(b), "d"(a));
    (void)lo;
    return hi;
}

__attribute__((target("avx2,bmi,bmi2"))) static inline __attribute__((always_inline)) int
q8_vec(const amq_cuckoo *c, const void *key, int bytes, int ms, int tab)
{
    uint64_t top, h1 = x8_hash(c, key, &top, ms), nb = c->nb, b1, b2;
    uint32_t fp = (uint32_t)((top * c->fmax) >> 32) + 1;
    bucket_pair_at(c, mulhi_bmi2(h1, nb), fp, bytes, tab, &b1, &b2);
    __m128i x = _mm_set1_epi64x((long long)((uint64_t)fp * c->ones_lo));
    __m128i ones = _mm_loadu_si128((const __m128i *)(const void *)c->ones2);
    __m128i highs = _mm_loadu_si128((const __m128i *)(const void *)c->highs2);
    __m128i w;
    if (bytes) {
        w = _mm_cvtsi64_si128((long long)amq_load64(c->d + b1));
        w = _mm_insert_epi64(w, (long long)amq_load64(c->d + b2), 1);
    } else {
        /* Buckets inside a byte (b1, b2 in bits): the constants shifted to
         * each bucket's first bit (before the words arrive) rather than
         * the words. */
        __m128i sh = _mm_set_epi64x((long long)(b2 & 7), (long long)(b1 & 7));
        x = _mm_sllv_epi64(x, sh);
        ones = _mm_sllv_epi64(ones, sh);
        highs = _mm_sllv_epi64(highs, sh);
        w = _mm_cvtsi64_si128((long long)amq_load64(c->d + (b1 >> 3)));
        w = _mm_insert_epi64(w, (long long)amq_load64(c->d + (b2 >> 3)), 1);
    }
    w = _mm_xor_si128(w, x);
    w = _mm_andnot_si128(w, _mm_sub_epi64(w, ones));
    return !_mm_testz_si128(w, highs);
}

CK8_GRID(__attribute__((target("avx2,bmi,bmi2"))), ck_q8_fn, const amq_cuckoo, q8_vector, q8_vec)
#endif
#undef CK8_GRID
#undef CK8_LEAF

static int q8_any(const amq_cuckoo *c, const void *key)
{
    return query_any(c, key, 8);
}

/* The q8 entries over n packed keys: each key's query inlined into one
 * loop, the filter's fields read once for all (a call per key rereads them
 * and costs a fifth of a query in cache).  The answers' count. */
#define Q8N_LOOP(Q)                                                                                \
    {                                                                                              \
        uint64_t total = 0;                                                                        \
        size_t i;                                                                                  \
        if (out == NULL) {                                                                         \
            for (i = 0; i < n; i++)                                                                \
                total += (uint64_t)(Q);                                                            \
            return total;                                                                          \
        }                                                                                          \
        for (i = 0; i < n; i++) {                                                                  \
            out[i] = (uint8_t)(Q);                                                                 \
            total += out[i];                                                                       \
        }                                                                                          \
        return total;                                                                              \
    }

static uint64_t q8n_bytes(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
Q8N_LOOP(query8(c, keys + i * 8, 1, 0, 0))

static uint64_t q8n_bytes_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
Q8N_LOOP(query8(c, keys + i * 8, 1, 1, 0))

static uint64_t q8n_bits(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
Q8N_LOOP(query8(c, keys + i * 8, 0, 0, 0))

static uint64_t q8n_bits_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
Q8N_LOOP(query8(c, keys + i * 8, 0, 1, 0))

static uint64_t q8n_any(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
Q8N_LOOP(query_any(c, keys + i * 8, 8))

#if defined(__x86_64__)
__attribute__((target("avx2,bmi,bmi2"))) static uint64_t
q8n_bytes_avx2(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
Q8N_LOOP(q8_vec(c, keys + i * 8, 1, 0, 0))

__attribute__((target("avx2,bmi,bmi2"))) static uint64_t
q8n_bytes_avx2_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
Q8N_LOOP(q8_vec(c, keys + i * 8, 1, 1, 0))
#endif
#undef Q8N_LOOP

#if defined(__x86_64__)
/*
 * Batches with AVX-512, eight keys a vector (AVX2 below: four): one-word
 * buckets (on whole bytes or not), no victim, nb < 2^32.  The same
 * arithmetic as query8 lane by lane (64-bit high halves of products from
 * 32-bit multiplies), both buckets' words fetched by two gathers: sixteen
 * loads in flight for a few instructions, where one key at a time pays its
 * arithmetic for two.  The answers are query8's.
 */
#define CK_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

typedef struct ck_x8 {
    __m512i nb, fmax, phi, ones, highs, stride, bb, seven, one;
    const uint8_t *d;
} ck_x8;

CK_AVX512 static inline __attribute__((always_inline)) ck_x8 x8_consts(const amq_cuckoo *c)
{
    ck_x8 k;
    k.nb = _mm512_set1_epi64((long long)c->nb);
    k.fmax = _mm512_set1_epi64((long long)c->fmax);
    k.phi = _mm512_set1_epi64((long long)c->k_phi);
    k.ones = _mm512_set1_epi64((long long)c->ones_lo);
    k.highs = _mm512_set1_epi64((long long)c->highs_lo);
    k.stride = _mm512_set1_epi64((long long)c->bbytes);
    k.bb = _mm512_set1_epi64((long long)c->bb);
    k.seven = _mm512_set1_epi64(7);
    k.one = _mm512_set1_epi64(1);
    k.d = c->d;
    return k;
}

/* floor(x * y / 2^64) in each lane, y < 2^32: (x_hi * y + (x_lo * y >> 32)) >> 32,
 * which cannot overflow and drops nothing below the result's lowest bit. */
CK_AVX512 static inline __attribute__((always_inline)) __m512i mulhi32_x8(__m512i x, __m512i y)
{
    __m512i lo = _mm512_mul_epu32(x, y), hi = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), y);
    return _mm512_srli_epi64(_mm512_add_epi64(hi, _mm512_srli_epi64(lo, 32)), 32);
}

/* floor(x * y / 2^64) in each lane, from the four 32 x 32-bit products. */
CK_AVX512 static inline __attribute__((always_inline)) __m512i mulhi64_x8(__m512i x, __m512i y)
{
    __m512i m32 = _mm512_set1_epi64(0xffffffff);
    __m512i x1 = _mm512_srli_epi64(x, 32), y1 = _mm512_srli_epi64(y, 32);
    __m512i ll = _mm512_mul_epu32(x, y), lh = _mm512_mul_epu32(x, y1);
    __m512i hl = _mm512_mul_epu32(x1, y), hh = _mm512_mul_epu32(x1, y1);
    __m512i mid = _mm512_add_epi64(_mm512_add_epi64(_mm512_and_si512(lh, m32),
                                                    _mm512_and_si512(hl, m32)),
                                   _mm512_srli_epi64(ll, 32));
    __m512i top = _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(mid, 32));
    return _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32)), top);
}

/* Bucket i's word in each lane, as bucket_word: on whole-byte buckets at
 * i * bbytes, else from bit i * bb's byte shifted down to that bit. */
CK_AVX512 static inline __attribute__((always_inline)) __m512i word_x8(const ck_x8 *k, __m512i i,
                                                                      int bytes)
{
    __m512i bit, w;
    if (bytes)
        return _mm512_i64gather_epi64(_mm512_mul_epu32(i, k->stride), (const void *)k->d, 1);
    bit = _mm512_mul_epu32(i, k->bb);
    w = _mm512_i64gather_epi64(_mm512_srli_epi64(bit, 3), (const void *)k->d, 1);
    return _mm512_srlv_epi64(w, _mm512_and_si512(bit, k->seven));
}

/* Eight answers (bit j: lane j may hold its key) from h1 and, in the low
 * 32 bits of each lane of top, the high half of h2. */
CK_AVX512 static inline __attribute__((always_inline)) __mmask8 test_x8(const ck_x8 *k, __m512i h1,
                                                                       __m512i top, int bytes)
{
    __m512i fp = _mm512_add_epi64(_mm512_srli_epi64(_mm512_mul_epu32(top, k->fmax), 32), k->one);
    __m512i i1 = mulhi32_x8(h1, k->nb);
    __m512i base = mulhi32_x8(_mm512_mullo_epi64(fp, k->phi), k->nb);
    __m512i i2 = _mm512_sub_epi64(base, i1);
    __m512i w1, w2, x, y1, y2, z;
    i2 = _mm512_mask_add_epi64(i2, _mm512_cmplt_epu64_mask(base, i1), i2, k->nb);
    w1 = word_x8(k, i1, bytes);
    w2 = word_x8(k, i2, bytes);
    x = _mm512_mullo_epi64(fp, k->ones);
    y1 = _mm512_xor_si512(w1, x);
    y2 = _mm512_xor_si512(w2, x);
    z = _mm512_or_si512(_mm512_andnot_si512(y1, _mm512_sub_epi64(y1, k->ones)),
                        _mm512_andnot_si512(y2, _mm512_sub_epi64(y2, k->ones)));
    return _mm512_test_epi64_mask(z, k->highs);
}

/* The answers of eight lanes as eight bytes of 0 or 1 at out. */
CK_AVX512 static inline __attribute__((always_inline)) void put_x8(uint8_t *out, __mmask8 m,
                                                                  __m512i one)
{
    _mm_storel_epi64((__m128i *)(void *)out,
                     _mm512_cvtepi64_epi8(_mm512_maskz_mov_epi64(m, one)));
}

/* Packed 8-byte keys, mulshift: h1 is the key's hash and h2's high half its low half. */
CK_AVX512 static inline __attribute__((always_inline)) uint64_t
q8n_x8(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out, int bytes)
{
    ck_x8 k = x8_consts(c);
    __m512i a_hi = _mm512_set1_epi64((long long)(uint64_t)(c->ms_a >> 64));
    __m512i a_lo = _mm512_set1_epi64((long long)(uint64_t)c->ms_a);
    __m512i b_hi = _mm512_set1_epi64((long long)(uint64_t)(c->ms_b >> 64));
    __m512i b_lo = _mm512_set1_epi64((long long)(uint64_t)c->ms_b);
    uint64_t total = 0;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        /* floor((a * key + b) / 2^64) mod 2^64 = a_hi * key + floor(a_lo * key / 2^64)
         * + b_hi + the carry out of (a_lo * key mod 2^64) + b_lo. */
        __m512i key = _mm512_loadu_si512((const void *)(keys + i * 8));
        __m512i lo = _mm512_mullo_epi64(a_lo, key), sum = _mm512_add_epi64(lo, b_lo);
        __m512i h = _mm512_add_epi64(_mm512_add_epi64(_mm512_mullo_epi64(a_hi, key),
                                                      mulhi64_x8(key, a_lo)),
                                     b_hi);
        __mmask8 m;
        h = _mm512_mask_add_epi64(h, _mm512_cmplt_epu64_mask(sum, lo), h, k.one);
        m = test_x8(&k, h, h, bytes);
        if (out != NULL)
            put_x8(out + i, m, k.one);
        total += (uint64_t)__builtin_popcount(m);
    }
    for (; i < n; i++) {
        int r = query8(c, keys + i * 8, 0, 1, 0);
        if (out != NULL)
            out[i] = (uint8_t)r;
        total += (uint64_t)r;
    }
    return total;
}

/* Each an inlined loop, once for whole-byte buckets and once for the others. */
CK_AVX512 static uint64_t q8n_word_avx512_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                             uint8_t *out)
{
    return c->bb % 8 == 0 ? q8n_x8(c, keys, n, out, 1) : q8n_x8(c, keys, n, out, 0);
}

/* Hashes (h1, h2 pairs): two loads and two permutes give eight of each. */
CK_AVX512 static inline __attribute__((always_inline)) void
batch_x8(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out, int bytes)
{
    ck_x8 k = x8_consts(c);
    __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    __m512i odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        __m512i p0 = _mm512_loadu_si512((const void *)(h + i));
        __m512i p1 = _mm512_loadu_si512((const void *)(h + i + 4));
        __m512i h1 = _mm512_permutex2var_epi64(p0, even, p1);
        __m512i h2 = _mm512_permutex2var_epi64(p0, odd, p1);
        put_x8(out + i, test_x8(&k, h1, _mm512_srli_epi64(h2, 32), bytes), k.one);
    }
    for (; i < n; i++)
        out[i] = (uint8_t)query(c, h[i]);
}

CK_AVX512 static void contains_batch_avx512(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                            uint8_t *out)
{
    if (c->bb % 8 == 0)
        batch_x8(c, h, n, out, 1);
    else
        batch_x8(c, h, n, out, 0);
}
#undef CK_AVX512

/*
 * The same batches with AVX2 where AVX-512 is missing: four keys a vector,
 * 64-bit products from 32-bit multiplies, unsigned compares by flipping
 * the sign bits, both buckets' words by two gathers.
 */
#define CK_AVX2G __attribute__((target("avx2")))

typedef struct ck_x4 {
    __m256i nb, fmax, phi, ones, highs, stride, bb, seven, one, sign;
    const uint8_t *d;
} ck_x4;

CK_AVX2G static inline __attribute__((always_inline)) ck_x4 x4_consts(const amq_cuckoo *c)
{
    ck_x4 k;
    k.nb = _mm256_set1_epi64x((long long)c->nb);
    k.fmax = _mm256_set1_epi64x((long long)c->fmax);
    k.phi = _mm256_set1_epi64x((long long)c->k_phi);
    k.ones = _mm256_set1_epi64x((long long)c->ones_lo);
    k.highs = _mm256_set1_epi64x((long long)c->highs_lo);
    k.stride = _mm256_set1_epi64x((long long)c->bbytes);
    k.bb = _mm256_set1_epi64x((long long)c->bb);
    k.seven = _mm256_set1_epi64x(7);
    k.one = _mm256_set1_epi64x(1);
    k.sign = _mm256_set1_epi64x((long long)(UINT64_C(1) << 63));
    k.d = c->d;
    return k;
}

/* x * y mod 2^64 in each lane. */
CK_AVX2G static inline __attribute__((always_inline)) __m256i mullo_x4(__m256i x, __m256i y)
{
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), y),
                                     _mm256_mul_epu32(x, _mm256_srli_epi64(y, 32)));
    return _mm256_add_epi64(_mm256_mul_epu32(x, y), _mm256_slli_epi64(cross, 32));
}

CK_AVX2G static inline __attribute__((always_inline)) __m256i mulhi32_x4(__m256i x, __m256i y)
{
    __m256i lo = _mm256_mul_epu32(x, y), hi = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), y);
    return _mm256_srli_epi64(_mm256_add_epi64(hi, _mm256_srli_epi64(lo, 32)), 32);
}

CK_AVX2G static inline __attribute__((always_inline)) __m256i mulhi64_x4(__m256i x, __m256i y)
{
    __m256i m32 = _mm256_set1_epi64x(0xffffffff);
    __m256i x1 = _mm256_srli_epi64(x, 32), y1 = _mm256_srli_epi64(y, 32);
    __m256i ll = _mm256_mul_epu32(x, y), lh = _mm256_mul_epu32(x, y1);
    __m256i hl = _mm256_mul_epu32(x1, y), hh = _mm256_mul_epu32(x1, y1);
    __m256i mid = _mm256_add_epi64(_mm256_add_epi64(_mm256_and_si256(lh, m32),
                                                    _mm256_and_si256(hl, m32)),
                                   _mm256_srli_epi64(ll, 32));
    __m256i top = _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32));
    return _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32)), top);
}

/* Bucket i's word in each lane, as word_x8. */
CK_AVX2G static inline __attribute__((always_inline)) __m256i word_x4(const ck_x4 *k, __m256i i,
                                                                     int bytes)
{
    __m256i bit, w;
    if (bytes)
        return _mm256_i64gather_epi64((const long long *)(const void *)k->d,
                                      _mm256_mul_epu32(i, k->stride), 1);
    bit = _mm256_mul_epu32(i, k->bb);
    w = _mm256_i64gather_epi64((const long long *)(const void *)k->d, _mm256_srli_epi64(bit, 3),
                               1);
    return _mm256_srlv_epi64(w, _mm256_and_si256(bit, k->seven));
}

/* All ones in the lanes where x < y, unsigned. */
CK_AVX2G static inline __attribute__((always_inline)) __m256i ltu_x4(const ck_x4 *k, __m256i x,
                                                                    __m256i y)
{
    return _mm256_cmpgt_epi64(_mm256_xor_si256(y, k->sign), _mm256_xor_si256(x, k->sign));
}

CK_AVX2G static inline __attribute__((always_inline)) int test_x4(const ck_x4 *k, __m256i h1,
                                                                 __m256i top, int bytes)
{
    __m256i fp = _mm256_add_epi64(_mm256_srli_epi64(_mm256_mul_epu32(top, k->fmax), 32), k->one);
    __m256i i1 = mulhi32_x4(h1, k->nb);
    __m256i base = mulhi32_x4(mullo_x4(fp, k->phi), k->nb);
    __m256i i2 = _mm256_add_epi64(_mm256_sub_epi64(base, i1),
                                  _mm256_and_si256(ltu_x4(k, base, i1), k->nb));
    __m256i w1 = word_x4(k, i1, bytes), w2 = word_x4(k, i2, bytes);
    __m256i x = mullo_x4(fp, k->ones), y1 = _mm256_xor_si256(w1, x), y2 = _mm256_xor_si256(w2, x);
    __m256i z = _mm256_or_si256(_mm256_andnot_si256(y1, _mm256_sub_epi64(y1, k->ones)),
                                _mm256_andnot_si256(y2, _mm256_sub_epi64(y2, k->ones)));
    z = _mm256_cmpeq_epi64(_mm256_and_si256(z, k->highs), _mm256_setzero_si256());
    return _mm256_movemask_pd(_mm256_castsi256_pd(z)) ^ 15;
}

/* Four answers (bits 0-3) as four bytes of 0 or 1, by table: pdep is slow
 * on some CPUs with AVX2. */
static const uint32_t x4_bytes[16] = {
    0x00000000, 0x00000001, 0x00000100, 0x00000101, 0x00010000, 0x00010001, 0x00010100, 0x00010101,
    0x01000000, 0x01000001, 0x01000100, 0x01000101, 0x01010000, 0x01010001, 0x01010100, 0x01010101};

CK_AVX2G static inline __attribute__((always_inline)) uint64_t
q8n_x4(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out, int bytes)
{
    ck_x4 k = x4_consts(c);
    __m256i a_hi = _mm256_set1_epi64x((long long)(uint64_t)(c->ms_a >> 64));
    __m256i a_lo = _mm256_set1_epi64x((long long)(uint64_t)c->ms_a);
    __m256i b_hi = _mm256_set1_epi64x((long long)(uint64_t)(c->ms_b >> 64));
    __m256i b_lo = _mm256_set1_epi64x((long long)(uint64_t)c->ms_b);
    uint64_t total = 0;
    size_t i = 0;

    for (; i + 4 <= n; i += 4) {
        /* As q8n_word_avx512_ms; the carry's all-ones lanes subtracted. */
        __m256i key = _mm256_loadu_si256((const __m256i *)(const void *)(keys + i * 8));
        __m256i lo = mullo_x4(a_lo, key), sum = _mm256_add_epi64(lo, b_lo);
        __m256i h = _mm256_add_epi64(_mm256_add_epi64(mullo_x4(a_hi, key), mulhi64_x4(key, a_lo)),
                                     b_hi);
        int m;
        h = _mm256_sub_epi64(h, ltu_x4(&k, sum, lo));
        m = test_x4(&k, h, h, bytes);
        if (out != NULL)
            memcpy(out + i, &x4_bytes[m], 4);
        total += (uint64_t)__builtin_popcount((unsigned)m);
    }
    for (; i < n; i++) {
        int r = query8(c, keys + i * 8, 0, 1, 0);
        if (out != NULL)
            out[i] = (uint8_t)r;
        total += (uint64_t)r;
    }
    return total;
}

CK_AVX2G static uint64_t q8n_word_avx2g_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                           uint8_t *out)
{
    return c->bb % 8 == 0 ? q8n_x4(c, keys, n, out, 1) : q8n_x4(c, keys, n, out, 0);
}

CK_AVX2G static inline __attribute__((always_inline)) void
batch_x4(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out, int bytes)
{
    ck_x4 k = x4_consts(c);
    size_t i = 0;

    for (; i + 4 <= n; i += 4) {
        /* (h1 h2 h1 h2) twice: the h1s are the even lanes, the h2s the odd. */
        __m256i p0 = _mm256_loadu_si256((const __m256i *)(const void *)(h + i));
        __m256i p1 = _mm256_loadu_si256((const __m256i *)(const void *)(h + i + 2));
        __m256i h1 = _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(p0, p1), 0xd8);
        __m256i h2 = _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(p0, p1), 0xd8);
        memcpy(out + i, &x4_bytes[test_x4(&k, h1, _mm256_srli_epi64(h2, 32), bytes)], 4);
    }
    for (; i < n; i++)
        out[i] = (uint8_t)query(c, h[i]);
}

CK_AVX2G static void contains_batch_avx2g(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                          uint8_t *out)
{
    if (c->bb % 8 == 0)
        batch_x4(c, h, n, out, 1);
    else
        batch_x4(c, h, n, out, 0);
}
#undef CK_AVX2G

#endif

static __attribute__((noinline)) int contains_other(const amq_cuckoo *c, const void *key,
                                                    size_t len)
{
    if (len == 16 && c->fast && c->victim_fp == 0)
        return query_fast16(c, key);
    return query_any(c, key, len);
}

/* amq_cuckoo_contains, also the handle's entry (op_contains_key): an
 * 8-byte key is a jump to the filter's leaf. */
static inline __attribute__((always_inline)) int contains_key(const amq_cuckoo *c, const void *key,
                                                             size_t len)
{
    if (__builtin_expect(len == 8, 1))
        return c->q8(c, key);
    return contains_other(c, key, len);
}

int amq_cuckoo_contains(const amq_cuckoo *c, const void *key, size_t len)
{
    return contains_key(c, key, len);
}

int amq_cuckoo_add_unique_hash(amq_cuckoo *c, amq_hash128 h)
{
    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    if (query(c, h))
        return 0;
    return add_inline(c, h);
}

int amq_cuckoo_add_unique(amq_cuckoo *c, const void *key, size_t len)
{
    return amq_cuckoo_add_unique_hash(c, key_hash(c, key, len));
}

/* contains_batch_any for one-word buckets and no victim, with the one-key
 * path's steps (buckets on whole bytes read with no shift, the two answers
 * combined without a branch, no victim test). */
static inline __attribute__((always_inline)) void
contains_batch_words(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out, int bytes)
{
    const uint8_t *d = c->d;
    uint64_t nb = c->nb, ones = c->ones_lo, highs = c->highs_lo, i1[BATCH], i2[BATCH];
    uint32_t fp[BATCH], bb = c->bb, by = c->bbytes;
    size_t base, j, m;
    const uint8_t *p1, *p2;

    for (base = 0; base < n; base += BATCH) {
        m = n - base < BATCH ? n - base : BATCH;
        for (j = 0; j < m; j++) {
            fp[j] = fingerprint(h[base + j].h2, c->fmax);
            i1[j] = reduce64(h[base + j].h1, nb);
            i2[j] = alt8(c, i1[j], fp[j]);
            p1 = d + (bytes ? i1[j] * by : i1[j] * bb / 8);
            p2 = d + (bytes ? i2[j] * by : i2[j] * bb / 8);
            __builtin_prefetch(p1);
            __builtin_prefetch(p2);
            if (c->pf_last != 0) {
                __builtin_prefetch(p1 + c->pf_last);
                __builtin_prefetch(p2 + c->pf_last);
            }
        }
        for (j = 0; j < m; j++) {
            uint64_t x = (uint64_t)fp[j] * ones;
            uint64_t y1 = bucket_word(c, i1[j], bytes) ^ x, y2 = bucket_word(c, i2[j], bytes) ^ x;
            out[base + j] = ((((y1 - ones) & ~y1) | ((y2 - ones) & ~y2)) & highs) != 0;
        }
    }
}

static void contains_batch(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out)
{
#if defined(__x86_64__)
    if (c->batch_gather) {
        if (c->batch_gather == CK_GATHER_AVX512)
            contains_batch_avx512(c, h, n, out);
        else
            contains_batch_avx2g(c, h, n, out);
        return;
    }
#endif
    if (c->shape == CK_WORD64 && c->victim_fp == 0) {
        if (c->bb % 8 == 0)
            contains_batch_words(c, h, n, out, 1);
        else
            contains_batch_words(c, h, n, out, 0);
        return;
    }
    contains_batch_any(c, h, n, out);
}

int amq_cuckoo_contains_batch(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out,
                              uint64_t *maybe)
{
    uint8_t tmp[256];
    uint64_t m = 0;
    size_t at, i, len;

    if (maybe == NULL) {
        if (out != NULL)
            contains_batch(c, h, n, out);
        return AMQ_OK;
    }
    /* Counting needs the answers: into out, or a chunk at a time on the stack. */
    for (at = 0; at < n; at += len) {
        uint8_t *o = out != NULL ? out + at : tmp;
        len = out != NULL ? n : (n - at < sizeof tmp ? n - at : sizeof tmp);
        contains_batch(c, h + at, len, o);
        for (i = 0; i < len; i++)
            m += o[i];
    }
    *maybe = m;
    return AMQ_OK;
}

/*
 * Packed keys (n keys of key_len bytes, back to back): hashed here a chunk
 * at a time with the one-key paths' inline hash - 8- and 16-byte keys with
 * the length known to the compiler - then the hash forms above, so the
 * results are those of n one-key calls.
 */
#define FIXED_CHUNK 256

static inline __attribute__((always_inline)) void
hash_fixed(const amq_cuckoo *c, const uint8_t *keys, size_t key_len, size_t m, amq_hash128 *h)
{
    size_t i;
    if (key_len == 8)
        for (i = 0; i < m; i++)
            h[i] = key_hash(c, keys + i * 8, 8);
    else if (key_len == 16)
        for (i = 0; i < m; i++)
            h[i] = key_hash(c, keys + i * 16, 16);
    else
        for (i = 0; i < m; i++)
            h[i] = key_hash(c, keys + i * key_len, key_len);
}

int amq_cuckoo_contains_batch_fixed(const amq_cuckoo *c, const void *keys, size_t key_len,
                                    size_t n, uint8_t *out, uint64_t *count)
{
    amq_hash128 h[FIXED_CHUNK];
    uint64_t total = 0, got;
    size_t at, m;

    if (key_len == 8 && (c->pf_last == 0 || c->q8n_gather)) {
        total = c->q8n(c, keys, n, out);
        if (count != NULL)
            *count = total;
        return AMQ_OK;
    }
    for (at = 0; at < n; at += m) {
        m = n - at < FIXED_CHUNK ? n - at : FIXED_CHUNK;
        hash_fixed(c, (const uint8_t *)keys + at * key_len, key_len, m, h);
        got = 0;
        (void)amq_cuckoo_contains_batch(c, h, m, out != NULL ? out + at : NULL,
                                        count != NULL ? &got : NULL);
        total += got;
    }
    if (count != NULL)
        *count = total;
    return AMQ_OK;
}

/* After a slot was freed: the victim goes back into the table. */
static void reinsert_victim(amq_cuckoo *c)
{
    uint32_t fp = c->victim_fp;
    uint64_t i = c->victim_bucket;

    if (fp == 0)
        return;
    set_victim(c, 0, 0);
    (void)insert(c, i, alt_bucket(i, fp, c->nb), fp);
}

int amq_cuckoo_remove_hash(amq_cuckoo *c, amq_hash128 h)
{
    uint32_t fp;
    uint64_t i1, i2;
    int64_t s;

    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    fp = fingerprint(h.h2, c->fmax);
    i1 = reduce64(h.h1, c->nb);
    i2 = alt_bucket(i1, fp, c->nb);
    s = bucket_find(c, i1, fp);
    if (s < 0)
        s = bucket_find(c, i2, fp);
    if (s >= 0) {
        ct_set(c->d, c->f, (uint64_t)s, 0);
        c->items -= c->items > 0; /* never wraps, even on untrusted data */
        reinsert_victim(c);
        return 1;
    }
    if (c->victim_fp != 0 && victim_matches(c, fp, i1, i2)) {
        set_victim(c, 0, 0);
        c->items -= c->items > 0;
        return 1;
    }
    return 0;
}

int amq_cuckoo_remove(amq_cuckoo *c, const void *key, size_t len)
{
    return amq_cuckoo_remove_hash(c, key_hash(c, key, len));
}

static uint32_t count_copies(const amq_cuckoo *c, amq_hash128 h)
{
    uint32_t fp, n;
    uint64_t i1, i2;

    fp = fingerprint(h.h2, c->fmax);
    i1 = reduce64(h.h1, c->nb);
    i2 = alt_bucket(i1, fp, c->nb);
    n = bucket_count(c, i1, fp);
    if (i2 != i1)
        n += bucket_count(c, i2, fp);
    if (victim_matches(c, fp, i1, i2))
        n++;
    return n;
}

uint64_t amq_cuckoo_count_hash(const amq_cuckoo *c, amq_hash128 h)
{
    return count_copies(c, h);
}

uint64_t amq_cuckoo_count(const amq_cuckoo *c, const void *key, size_t len)
{
    return amq_cuckoo_count_hash(c, key_hash(c, key, len));
}

int amq_cuckoo_clear(amq_cuckoo *c)
{
    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    memset(c->data.data, 0, c->data.size);
    c->items = 0;
    set_victim(c, 0, 0);
    c->rng = RNG_SEED;
    return AMQ_OK;
}

void amq_cuckoo_get_params(const amq_cuckoo *c, amq_cuckoo_params *out)
{
    *out = c->p;
}

uint64_t amq_cuckoo_items(const amq_cuckoo *c)
{
    return c->items;
}

uint64_t amq_cuckoo_slots(const amq_cuckoo *c)
{
    return c->p.buckets * c->p.bucket_size;
}

size_t amq_cuckoo_bytes(const amq_cuckoo *c)
{
    return c->data.size;
}

double amq_cuckoo_load(const amq_cuckoo *c)
{
    return (double)c->items / (double)amq_cuckoo_slots(c);
}

int amq_cuckoo_is_full(const amq_cuckoo *c)
{
    return c->victim_fp != 0;
}

int amq_cuckoo_is_readonly(const amq_cuckoo *c)
{
    return amq_region_is_borrowed(&c->data);
}

uint32_t amq_cuckoo_victim(const amq_cuckoo *c, uint64_t *bucket)
{
    if (bucket != NULL)
        *bucket = c->victim_bucket;
    return c->victim_fp;
}

const uint8_t *amq_cuckoo_data(const amq_cuckoo *c)
{
    return c->data.data;
}

/* ---- the kind's table for the generic handle --------------------------------------- */

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_cuckoo_params p;
    amq_cuckoo *c;
    int rc;

    rc = amq_cuckoo_params_for(cfg->capacity, cfg->fpp, cfg->fingerprint_bits,
                               cfg->bucket_size, &p);
    if (rc != AMQ_OK)
        return amq_err(err, rc,
                       "cannot size a cuckoo filter for %llu items at false-positive rate %g"
                       " (capacity must be at least 1, the rate in (0, 1) and above about"
                       " 1e-10 - lower rates need fingerprints over 32 bits: use a Bloom"
                       " kind - fingerprint bits 4 to 32, bucket size 1, 2, 4 or 8)",
                       (unsigned long long)cfg->capacity, cfg->fpp);
    if (cfg->max_kicks != 0)
        p.max_kicks = cfg->max_kicks;
    p.hash_algo = cfg->hash_algo;
    p.seed = cfg->seed;
    rc = amq_cuckoo_new(&p, cfg->alloc, &c);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot create a cuckoo filter of %llu buckets: %s",
                       (unsigned long long)p.buckets, amq_strerror(rc));
    *impl = c;
    return AMQ_OK;
}

/* The entries that only forward to the family's functions (kind.h). */
AMQ_KIND_FWD_DESTROY(amq_cuckoo)
AMQ_KIND_FWD_CLONE(amq_cuckoo)
AMQ_KIND_FWD_HASH_SPEC(amq_cuckoo, p.hash_algo, p.seed)
AMQ_KIND_FWD_ADD(amq_cuckoo)
AMQ_KIND_FWD_CONTAINS(amq_cuckoo)
AMQ_KIND_FWD_REMOVE(amq_cuckoo)
AMQ_KIND_FWD_CLEAR(amq_cuckoo)
AMQ_KIND_FWD_IS_READONLY(amq_cuckoo)
AMQ_KIND_FWD_ADD_BATCH(amq_cuckoo)
AMQ_KIND_FWD_CONTAINS_BATCH(amq_cuckoo)

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_cuckoo *c = impl;
    double load = amq_cuckoo_load(c);

    st->items = c->items;
    st->capacity = c->p.capacity;
    st->bytes = c->data.size;
    st->fpp_target = c->p.fpp;
    st->fill = load;
    st->fpp_now = amq_cuckoo_fpp_theory(c->p.fingerprint_bits, c->p.bucket_size, load);
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_cuckoo *c = impl;

    return AMQ_FIELDS(fn, ctx, AMQ_U64("fingerprint_bits", c->p.fingerprint_bits),
                      AMQ_U64("bucket_size", c->p.bucket_size), AMQ_U64("buckets", c->p.buckets),
                      AMQ_U64("slots", amq_cuckoo_slots(c)), AMQ_U64("max_kicks", c->p.max_kicks),
                      AMQ_F64("load", amq_cuckoo_load(c)),
                      AMQ_STR("full", c->victim_fp != 0 ? "yes" : "no"));
}

/* Parameter block (48 bytes, little-endian):
 *   u32 fingerprint_bits, u32 bucket_size, u64 buckets, u32 max_kicks,
 *   u32 victim_fp, u64 victim_bucket, u64 capacity, f64 fpp. */
#define CUCKOO_PARAMS_SIZE 48

AMQ_KIND_FIXED_PARAMS(CUCKOO_PARAMS_SIZE)

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_cuckoo *c = impl;
    amq_store32(out, c->p.fingerprint_bits);
    amq_store32(out + 4, c->p.bucket_size);
    amq_store64(out + 8, c->p.buckets);
    amq_store32(out + 16, c->p.max_kicks);
    amq_store32(out + 20, c->victim_fp);
    amq_store64(out + 24, c->victim_bucket);
    amq_store64(out + 32, c->p.capacity);
    amq_storef64(out + 40, c->p.fpp);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_cuckoo *c = impl;
    return c->data.size;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_cuckoo *c = impl;
    return amq_sink_write(sink, c->data.data, c->data.size);
}

static int op_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    amq_cuckoo_params p;
    amq_cuckoo *c;
    uint32_t vfp;
    uint64_t vb, slots, used;
    int rc;

    if (a->params_len != CUCKOO_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "cuckoo parameter block is %zu bytes, expected %d",
                       a->params_len, CUCKOO_PARAMS_SIZE);
    memset(&p, 0, sizeof p);
    p.fingerprint_bits = amq_load32(a->params);
    p.bucket_size = amq_load32(a->params + 4);
    p.buckets = amq_load64(a->params + 8);
    p.max_kicks = amq_load32(a->params + 16);
    vfp = amq_load32(a->params + 20);
    vb = amq_load64(a->params + 24);
    p.capacity = amq_load64(a->params + 32);
    p.fpp = amq_loadf64(a->params + 40);
    p.hash_algo = a->hash_algo;
    p.seed = a->seed;
    if (amq_cuckoo_check_params(&p) != AMQ_OK || check_victim(&p, vfp, vb) != AMQ_OK)
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid cuckoo parameters (fingerprint bits %u, bucket size %u,"
                       " buckets %llu, max kicks %u, victim %u in bucket %llu)",
                       p.fingerprint_bits, p.bucket_size, (unsigned long long)p.buckets,
                       p.max_kicks, vfp, (unsigned long long)vb);
    slots = p.buckets * p.bucket_size;
    if (a->payload_len != amq_cuckoo_data_size(&p))
        return amq_err(err, AMQ_ECORRUPT, "cuckoo payload is %llu bytes, expected %zu",
                       (unsigned long long)a->payload_len, amq_cuckoo_data_size(&p));
    if (a->items > slots + (vfp != 0))
        return amq_err(err, AMQ_ECORRUPT, "cuckoo filter claims %llu items in %llu slots",
                       (unsigned long long)a->items, (unsigned long long)slots);
    if (!ct_tail_clean(a->payload, a->payload_len, p.fingerprint_bits, slots))
        return amq_err(err, AMQ_ECORRUPT, "cuckoo payload has bits set past the last slot");
    if (!a->trusted) {
        used = ct_count_used(a->payload, p.fingerprint_bits, slots) + (vfp != 0);
        if (used != a->items)
            return amq_err(err, AMQ_ECORRUPT,
                           "cuckoo filter records %llu items but holds %llu fingerprints",
                           (unsigned long long)a->items, (unsigned long long)used);
    }
    if (a->borrow) {
        rc = amq_cuckoo_view(&p, a->payload, (size_t)a->payload_len, a->items, vfp, vb,
                             a->alloc, &c);
    } else {
        rc = amq_cuckoo_new(&p, a->alloc, &c);
        if (rc == AMQ_OK) {
            memcpy(c->data.data, a->payload, (size_t)a->payload_len);
            /* A trusted header's count is not believed for a copy that may be
             * added to and saved: a wrong one would be written back, and the
             * verified open refuses the file.  The copy read every byte
             * already, so the count costs no extra pass over the disk. */
            c->items = a->trusted ? ct_count_used(c->data.data, p.fingerprint_bits, slots) +
                                        (vfp != 0)
                                  : a->items;
            set_victim(c, vfp, vb);
        }
    }
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot load cuckoo filter: %s", amq_strerror(rc));
    *impl = c;
    return AMQ_OK;
}

/* The handle's one-key entries: the filter's own, which hash the key as the
 * handle would (its hash spec is the filter's) without the handle's call
 * through amq_hash_key and its table of hash functions. */
static int op_add_key(void *impl, const void *key, size_t len)
{
    return add_key((amq_cuckoo *)impl, key, len);
}

static int op_contains_key(const void *impl, const void *key, size_t len)
{
    return contains_key((const amq_cuckoo *)impl, key, len);
}

const amq_kind_ops amq_cuckoo_ops = {
    .kind = AMQ_KIND_CUCKOO,
    .name = "cuckoo",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .remove = op_remove,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .add_key = op_add_key,
    .contains_key = op_contains_key,
};
