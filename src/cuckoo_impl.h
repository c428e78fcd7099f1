/*
 * cuckoo_impl.h - the cuckoo filter's inner workings, shared by its files:
 * the struct, how a hash becomes a bucket and a fingerprint, buckets read as
 * words, the one-key query and insert inlined into every path.  Internal:
 * not installed, not exported.
 *
 * The kind's files, each one concern (docs/architecture.md):
 *   cuckoo.c          the one-key add, query, remove and count; evictions
 *                     and the victim; which leaf an 8-byte key takes
 *   cuckoo_batch.c    batched adds and queries (hashes and packed keys)
 *   cuckoo_avx2.c     AVX2 leaves and gathers (compiled with -mavx2)
 *   cuckoo_avx512.c   AVX-512 gathers (compiled with -mavx512*)
 *   cuckoo_sizing.c   sizing: (capacity, rate) to (f, b, buckets)
 *   cuckoo_life.c     new, view, clone, free, getters
 *   cuckoo_kind.c     the generic handle's adapter and the codec
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
 *    filter, fixed seed: runs are reproducible); docs/cuckoo.md measures the
 *    loads the walk reaches.
 */
#ifndef AMQ_CUCKOO_IMPL_H
#define AMQ_CUCKOO_IMPL_H

#include <string.h>

#include "amq/advanced.h"
#include "amq/cuckoo.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/mulshift.h"
#include "cuckoo_table.h"

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
/* Which multiply-add-shift hash the one-key and packed-key paths write out
 * (c->ms, an index of the leaf grids): none (XXH3), mulshift, or mulshift
 * then amq_ms_mix (mulmix). */
enum { CK_MS_NONE = 0, CK_MS_PLAIN = 1, CK_MS_MIX = 2 };

typedef unsigned __int128 ck_u128;

struct amq_cuckoo {
    amq_cuckoo_params p;
    /* Derived once from p, read by every operation. */
    uint8_t *d;         /* the table (data.data) */
    uint64_t nb;        /* buckets */
    uint32_t f, b;      /* fingerprint bits, slots per bucket */
    uint32_t bb;        /* bits per bucket, f * b */
    uint32_t shape;     /* CK_WORD64, CK_WORD128, CK_SLOTS */
    int fast;           /* XXH3, mulshift or mulmix, and CK_WORD64: the one-key fast paths apply */
    int ms;             /* CK_MS_*: mulshift, mulmix or neither */
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
    amq_u128 ms_a, ms_b; /* mulshift's (and mulmix's) constants for the seed */
    /* The 8-byte path's multipliers, read from here as memory operands:
     * as immediates each would take an instruction of its own to load. */
    uint64_t k_mul, k_mx2, k_aval, k_phi, k_mix;
    uint64_t ones_lo, ones_hi; /* bit 0 of each of the b fields */
    uint64_t highs_lo;         /* bit f - 1 of each field in the low word */
    uint64_t bmask;            /* the bb bits of a one-word bucket */
    uint64_t ones2[2], highs2[2]; /* ones_lo and highs_lo twice: both buckets in one vector */
    uint64_t fmax;             /* 2^f - 1 */
    uint64_t items;
    uint64_t victim_bucket;
    uint32_t victim_fp; /* 0: no victim */
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

static inline __attribute__((always_inline)) uint64_t x8_hash(const amq_cuckoo *c, const void *key,
                                                               uint64_t *h2_top, int ms)
{
    ck_u128 m;
    uint64_t lo, hi;
    if (ms) {
        /* h2 = h1 rotated: its top half is h1's low half. */
        lo = amq_ms_apply(c->ms_a, c->ms_b, amq_load64(key));
        if (ms == CK_MS_MIX) /* amq_ms_mix, its multiplier from memory */
            lo = (lo ^ (lo >> 32)) * c->k_mix;
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

/* Branch-free: fp is never 0, so no victim never matches. */
static inline int victim_matches(const amq_cuckoo *c, uint32_t fp, uint64_t i1, uint64_t i2)
{
    return (c->victim_fp == fp) & ((c->victim_bucket == i1) | (c->victim_bucket == i2));
}

typedef int (*ck_q8_fn)(const amq_cuckoo *c, const void *key);
typedef int (*ck_add8_fn)(amq_cuckoo *c, const void *key);

/* The 8-byte-key leaves (queries and adds): one function per [whole-byte
 * buckets][CK_MS_*][alt_tab], each fn(c, key, bytes, ms, tab) inlined, so
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
    CK8_LEAF(attr, ctype, name##_8, fn, 0, 2, 0)                                                   \
    CK8_LEAF(attr, ctype, name##_9, fn, 0, 2, 1)                                                   \
    CK8_LEAF(attr, ctype, name##_10, fn, 1, 2, 0)                                                  \
    CK8_LEAF(attr, ctype, name##_11, fn, 1, 2, 1)                                                  \
    static const ftype name[2][3][2] = {                                                           \
        {{name##_0, name##_1}, {name##_2, name##_3}, {name##_8, name##_9}},                        \
        {{name##_4, name##_5}, {name##_6, name##_7}, {name##_10, name##_11}}};

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

static inline int slots_have(const amq_cuckoo *c, uint64_t i, uint32_t fp)
{
    uint32_t j;
    for (j = 0; j < c->b; j++)
        if (ct_get(c->d, c->f, i * c->b + j) == fp)
            return 1;
    return 0;
}

/* The test for the layouts that are not one 64-bit word: out of line, one
 * copy in each file that uses it (static), so that no file of the kind
 * needs another for it. */
static __attribute__((noinline, unused)) int test_other(const amq_cuckoo *c, uint32_t fp, uint64_t i1,
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

/* ---- between the kind's files (cuckoo.c unless said) --------------------------------- */

/* Places fp, whose buckets i1 and i2 are full, by evicting (kick), or in
 * either bucket for the layouts other than one word (insert_other): 1
 * placed, 0 the last homeless fingerprint went to the victim slot. */
int amq_ck_kick(amq_cuckoo *c, uint64_t i1, uint64_t i2, uint32_t fp);
int amq_ck_insert_other(amq_cuckoo *c, uint64_t i1, uint64_t i2, uint32_t fp);
/* The one-key add and query of keys other than 8 bytes long. */
int amq_ck_add_other(amq_cuckoo *c, const void *key, size_t len);
int amq_ck_contains_other(const amq_cuckoo *c, const void *key, size_t len);
/* Picks the 8-byte-key entries and the batch paths that apply now (after
 * any change of the victim, the hash, the table's writability). */
void amq_ck_key8_modes(amq_cuckoo *c);
/* Every change of the victim goes through here (key8_modes follows it). */
void amq_ck_set_victim(amq_cuckoo *c, uint32_t fp, uint64_t bucket);
/* Why an add of h is refused: an amq_refusal (amq_filter_refusal). */
uint32_t amq_ck_refusal(const amq_cuckoo *c, amq_hash128 h);
/* cuckoo_life.c: AMQ_OK if (fp, bucket) can be p's victim (fp 0: none). */
int amq_ck_check_victim(const amq_cuckoo_params *p, uint32_t fp, uint64_t bucket);

#if defined(__x86_64__)
/* cuckoo_avx2.c: the AVX2 and BMI2 query leaf for [whole bytes][CK_MS_*]
 * [alt_tab], q8 over packed keys on whole-byte buckets, and the gathers of
 * 4 keys a vector (q8n under mulshift or mulmix, and hashed batches). */
ck_q8_fn amq_ck_q8_avx2(int bytes, int ms, int tab);
uint64_t amq_ck_q8n_bytes_avx2(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
uint64_t amq_ck_q8n_bytes_avx2_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                  uint8_t *out);
uint64_t amq_ck_q8n_bytes_avx2_mx(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                  uint8_t *out);
uint64_t amq_ck_q8n_gather_avx2(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
void amq_ck_contains_batch_avx2(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                uint8_t *out);
/* cuckoo_avx512.c: the gathers of 8 keys a vector. */
uint64_t amq_ck_q8n_gather_avx512(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                  uint8_t *out);
void amq_ck_contains_batch_avx512(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                  uint8_t *out);
#endif

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
            return amq_ck_kick(c, i1, i2, fp);
        q = c->d + (bit >> 3);
        w = amq_load64(q) | ((uint64_t)fp << (bit & 7));
        amq_store64(q, w);
        return 1;
    }
    return amq_ck_insert_other(c, i1, i2, fp);
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
        if (c->ms == CK_MS_MIX)
            h.h1 = amq_ms_mix(h.h1);
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

/* amq_cuckoo_add, also the handle's entry (op_add_key). */
static inline __attribute__((always_inline)) int add_key(amq_cuckoo *c, const void *key, size_t len)
{
    if (__builtin_expect(len == 8, 1))
        return c->q8_add(c, key);
    return amq_ck_add_other(c, key, len);
}

/* amq_cuckoo_contains, also the handle's entry (op_contains_key): an
 * 8-byte key is a jump to the filter's leaf. */
static inline __attribute__((always_inline)) int contains_key(const amq_cuckoo *c, const void *key,
                                                             size_t len)
{
    if (__builtin_expect(len == 8, 1))
        return c->q8(c, key);
    return amq_ck_contains_other(c, key, len);
}

#endif /* AMQ_CUCKOO_IMPL_H */
