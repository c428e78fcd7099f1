/*
 * blocked_bloom_avx512.c - the AVX-512 query path of the blocked Bloom
 * filter.  Compiled with -mavx512f (Makefile); called only when the CPU
 * (and the OS) support AVX-512F.
 *
 * All sixteen possible probes in one step, one per 32-bit lane: the
 * products u * C[i]; the top 4 bits of a product select one of the block's
 * sixteen 32-bit words (vpermd over the whole 512-bit block), the next 5
 * bits the bit in it (a rotate, which needs no masking of the count); one
 * masked test over the k live lanes answers.
 */
#include "blocked_impl.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

typedef struct avx512_ctx {
    __m512i mult;     /* C[0..15] */
    __m512i mult2;    /* C[0..7] twice: two keys, one per half */
    __m512i half;     /* 16 in the upper eight lanes: the second block */
    __m512i one;      /* 1 in every lane */
    __mmask16 lanes;  /* lanes i < k */
    __mmask16 lanes2; /* lanes i < k of each half (k <= 8) */
    uint32_t k;
} avx512_ctx;

static inline void avx512_ctx_init(avx512_ctx *c, uint32_t k)
{
    const __m256i m8 = _mm256_loadu_si256((const __m256i *)(const void *)amq_blk_mult);
    c->mult = _mm512_loadu_si512((const void *)amq_blk_mult);
    c->mult2 = _mm512_inserti64x4(_mm512_castsi256_si512(m8), m8, 1);
    c->half = _mm512_maskz_set1_epi32((__mmask16)0xff00, 16);
    c->one = _mm512_set1_epi32(1);
    c->lanes = (__mmask16)((1u << k) - 1u);
    c->lanes2 = (__mmask16)(k <= 8 ? ((1u << k) - 1u) * 0x101u : 0u);
    c->k = k;
}

static inline int avx512_probe_block(const uint8_t *blk, uint32_t u, const avx512_ctx *c)
{
    const __m512i block = _mm512_load_si512((const void *)blk);
    const __m512i prod = _mm512_mullo_epi32(_mm512_set1_epi32((int)u), c->mult);
    const __m512i word = _mm512_permutexvar_epi32(_mm512_srli_epi32(prod, 28), block);
    const __m512i bit = _mm512_rolv_epi32(_mm512_set1_epi32(1), _mm512_srli_epi32(prod, 23));
    return _mm512_mask_testn_epi32_mask(c->lanes, word, bit) == 0;
}

/*
 * Two keys in one step (k <= 8): key a's probes in lanes 0-7, key b's in
 * lanes 8-15; vpermt2d picks each lane's word from the 32 words of both
 * blocks (index bit 4: the second block).  Returns bit 0: a may be in,
 * bit 1: b may be in.
 */
static inline unsigned avx512_probe_pair(const uint8_t *ba, const uint8_t *bb, uint32_t ua,
                                         uint32_t ub, const avx512_ctx *c)
{
    const __m512i u =
        _mm512_mask_set1_epi32(_mm512_set1_epi32((int)ua), (__mmask16)0xff00, (int)ub);
    const __m512i prod = _mm512_mullo_epi32(u, c->mult2);
    const __m512i idx = _mm512_or_si512(_mm512_srli_epi32(prod, 28), c->half);
    const __m512i word = _mm512_permutex2var_epi32(_mm512_load_si512((const void *)ba), idx,
                                                   _mm512_load_si512((const void *)bb));
    const __m512i bit = _mm512_rolv_epi32(c->one, _mm512_srli_epi32(prod, 23));
    const unsigned miss = _mm512_mask_testn_epi32_mask(c->lanes2, word, bit);
    return (unsigned)((miss & 0xffu) == 0) | ((unsigned)((miss >> 8) == 0) << 1);
}

/*
 * An add builds the key's 512-bit mask in a register and writes the block
 * back with one 64-byte store: one store per probe - the scalar form -
 * fills the store queue while the block's line is still on its way, and
 * stalls the loop (measured slower in and out of cache).
 *
 * The mask of k <= 8 probes (the usual k) is built without a loop over the
 * probes: with p_i = the probe's bit number (the product's top 9 bits),
 * lane j (the block's 32-bit word j) of 1 << (p_i - 32 j) - a variable
 * shift, which gives 0 for counts past 31, negative ones included - is
 * probe i's bit when it lies in word j and 0 otherwise.  The eight p_i sit
 * twice in the sixteen lanes (lanes past k hold a number that shifts to 0
 * in every word); rotating them by r = 0..7 lanes brings probe (j + r) mod 8
 * to lane j, so eight shifts cover every (probe, word) pair, with no branch
 * on k: fewer instructions per add, which out of cache is how many adds
 * the core keeps in flight.  k > 8 ORs probe i's bit into the lanes whose
 * index is its word, probe by probe.
 */
/* Row k: 0xffff in the lanes of each half at or past k (ORed into a probe's
 * bit number it makes one that shifts to 0 in every word), 0 elsewhere - a
 * load instead of building the lane mask from k for every key. */
#define AVX512_DEAD(k)                                                                             \
    {                                                                                              \
        (k) > 0 ? 0u : 0xffffu, (k) > 1 ? 0u : 0xffffu, (k) > 2 ? 0u : 0xffffu,                   \
            (k) > 3 ? 0u : 0xffffu, (k) > 4 ? 0u : 0xffffu, (k) > 5 ? 0u : 0xffffu,               \
            (k) > 6 ? 0u : 0xffffu, (k) > 7 ? 0u : 0xffffu, (k) > 0 ? 0u : 0xffffu,               \
            (k) > 1 ? 0u : 0xffffu, (k) > 2 ? 0u : 0xffffu, (k) > 3 ? 0u : 0xffffu,               \
            (k) > 4 ? 0u : 0xffffu, (k) > 5 ? 0u : 0xffffu, (k) > 6 ? 0u : 0xffffu,               \
            (k) > 7 ? 0u : 0xffffu                                                                 \
    }
static const uint32_t avx512_dead8[9][16] __attribute__((aligned(64))) = {
    AVX512_DEAD(0), AVX512_DEAD(1), AVX512_DEAD(2), AVX512_DEAD(3), AVX512_DEAD(4),
    AVX512_DEAD(5), AVX512_DEAD(6), AVX512_DEAD(7), AVX512_DEAD(8)};
#undef AVX512_DEAD

static inline __m512i avx512_mask8(uint32_t u, uint32_t k)
{
    const __m512i off =
        _mm512_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i mult8 =
        _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)amq_blk_mult));
    const __m512i p = _mm512_or_si512(
        _mm512_srli_epi32(_mm512_mullo_epi32(_mm512_set1_epi32((int)u), mult8), 23),
        _mm512_load_si512((const void *)avx512_dead8[k]));
#define AVX512_ROT_BIT(r) _mm512_sllv_epi32(one, _mm512_sub_epi32(_mm512_alignr_epi32(p, p, (r)), off))
    __m512i m = _mm512_ternarylogic_epi32(_mm512_sllv_epi32(one, _mm512_sub_epi32(p, off)),
                                          AVX512_ROT_BIT(1), AVX512_ROT_BIT(2), 0xfe);
    m = _mm512_ternarylogic_epi32(m, AVX512_ROT_BIT(3), AVX512_ROT_BIT(4), 0xfe);
    m = _mm512_ternarylogic_epi32(m, AVX512_ROT_BIT(5), AVX512_ROT_BIT(6), 0xfe);
    return _mm512_or_si512(m, AVX512_ROT_BIT(7));
#undef AVX512_ROT_BIT
}

static inline __m512i avx512_mask16(uint32_t u, uint32_t k)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i prod = _mm512_mullo_epi32(_mm512_set1_epi32((int)u),
                                            _mm512_loadu_si512((const void *)amq_blk_mult));
    const __m512i word = _mm512_srli_epi32(prod, 28);
    const __m512i bit = _mm512_rolv_epi32(_mm512_set1_epi32(1), _mm512_srli_epi32(prod, 23));
    __m512i m = _mm512_setzero_si512();
    uint32_t i;

    AMQ_BLK_UNROLL
    for (i = 0; i < AMQ_BLOCKED_MAX_K; i++) {
        if (i < k) {
            const __m512i ii = _mm512_set1_epi32((int)i);
            const __mmask16 at = _mm512_cmpeq_epi32_mask(_mm512_permutexvar_epi32(ii, word), lane);
            m = _mm512_mask_or_epi32(m, at, m, _mm512_permutexvar_epi32(ii, bit));
        }
    }
    return m;
}

static inline int avx512_add_block(uint8_t *blk, uint32_t u, uint32_t k)
{
    const __m512i m = k <= 8 ? avx512_mask8(u, k) : avx512_mask16(u, k);
    const __m512i old = _mm512_load_si512((const void *)blk);
    _mm512_store_si512((void *)blk, _mm512_or_si512(old, m));
    return _mm512_test_epi32_mask(m, _mm512_andnot_si512(old, m)) != 0;
}

/*
 * The mask for a k known when the loop is compiled (K, 1 to 8: a loop over
 * many keys of one filter, e.g. amq_builder_finish's, has one copy per K).
 * The probes sit with period K, not 8: lo holds probe l mod K in lane l,
 * hi probe (16 + l) mod K, and valignd of hi:lo by r brings probe (j + r)
 * mod K to lane j - so K shifts cover every (probe, word) pair with no
 * dead lanes to mask, where avx512_mask8 needs eight.  The same bits.
 */
#define AVX512_MOD_ROW(k)                                                                          \
    {                                                                                              \
        0 % (k), 1 % (k), 2 % (k), 3 % (k), 4 % (k), 5 % (k), 6 % (k), 7 % (k), 8 % (k), 9 % (k), \
            10 % (k), 11 % (k), 12 % (k), 13 % (k), 14 % (k), 15 % (k)                             \
    }
#define AVX512_MOD_ROW16(k)                                                                        \
    {                                                                                              \
        16 % (k), 17 % (k), 18 % (k), 19 % (k), 20 % (k), 21 % (k), 22 % (k), 23 % (k), 24 % (k),  \
            25 % (k), 26 % (k), 27 % (k), 28 % (k), 29 % (k), 30 % (k), 31 % (k)                   \
    }
static const uint32_t avx512_lo_idx[9][16] __attribute__((aligned(64))) = {
    {0},
    AVX512_MOD_ROW(1),
    AVX512_MOD_ROW(2),
    AVX512_MOD_ROW(3),
    AVX512_MOD_ROW(4),
    AVX512_MOD_ROW(5),
    AVX512_MOD_ROW(6),
    AVX512_MOD_ROW(7),
    AVX512_MOD_ROW(8)};
static const uint32_t avx512_hi_idx[9][16] __attribute__((aligned(64))) = {
    {0},
    AVX512_MOD_ROW16(1),
    AVX512_MOD_ROW16(2),
    AVX512_MOD_ROW16(3),
    AVX512_MOD_ROW16(4),
    AVX512_MOD_ROW16(5),
    AVX512_MOD_ROW16(6),
    AVX512_MOD_ROW16(7),
    AVX512_MOD_ROW16(8)};
#undef AVX512_MOD_ROW
#undef AVX512_MOD_ROW16

static inline __attribute__((always_inline)) __m512i avx512_mask_k(uint32_t u, const uint32_t K)
{
    const __m512i off = _mm512_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352,
                                          384, 416, 448, 480);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i mult8 =
        _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)amq_blk_mult));
    const __m512i p = _mm512_srli_epi32(_mm512_mullo_epi32(_mm512_set1_epi32((int)u), mult8), 23);
    const __m512i lo =
        _mm512_permutexvar_epi32(_mm512_load_si512((const void *)avx512_lo_idx[K]), p);
    const __m512i hi =
        _mm512_permutexvar_epi32(_mm512_load_si512((const void *)avx512_hi_idx[K]), p);
#define AVX512_BIT(r)                                                                              \
    _mm512_sllv_epi32(one, _mm512_sub_epi32(_mm512_alignr_epi32(hi, lo, (r)), off))
    __m512i m = _mm512_sllv_epi32(one, _mm512_sub_epi32(lo, off));
    if (K >= 3)
        m = _mm512_ternarylogic_epi32(m, AVX512_BIT(1), AVX512_BIT(2), 0xfe);
    else if (K == 2)
        m = _mm512_or_si512(m, AVX512_BIT(1));
    if (K >= 5)
        m = _mm512_ternarylogic_epi32(m, AVX512_BIT(3), AVX512_BIT(4), 0xfe);
    else if (K == 4)
        m = _mm512_or_si512(m, AVX512_BIT(3));
    if (K >= 7)
        m = _mm512_ternarylogic_epi32(m, AVX512_BIT(5), AVX512_BIT(6), 0xfe);
    else if (K == 6)
        m = _mm512_or_si512(m, AVX512_BIT(5));
    if (K == 8)
        m = _mm512_or_si512(m, AVX512_BIT(7));
#undef AVX512_BIT
    return m;
}

static inline __attribute__((always_inline)) int avx512_add_k(uint8_t *blk, uint32_t u,
                                                                  const uint32_t K)
{
    const __m512i m = avx512_mask_k(u, K);
    const __m512i old = _mm512_load_si512((const void *)blk);
    _mm512_store_si512((void *)blk, _mm512_or_si512(old, m));
    return _mm512_test_epi32_mask(m, _mm512_andnot_si512(old, m)) != 0;
}

/*
 * XXH3-128 of eight 8-byte keys, one per 64-bit lane, for BLK_HASH8 (see
 * blocked_query.h): the key XORed with XXH3's bitflip, its 128-bit product
 * with XXH3's first prime plus 32 (built from four 32x32-bit products, as
 * AVX-512F has no 64x64 -> 128 multiply), then XXH3's mixing of the low
 * and high halves.  The block is the high half of low * blocks (blocks <
 * 2^32: two 32x32-bit products), the probe bits the high half's low 32.
 */
static inline __m512i avx512_mul64_lo(__m512i a, uint64_t c)
{
    const __m512i lo = _mm512_set1_epi64((long long)(uint32_t)c);
    const __m512i hi = _mm512_set1_epi64((long long)(c >> 32));
    const __m512i cross =
        _mm512_add_epi64(_mm512_mul_epu32(a, hi), _mm512_mul_epu32(_mm512_srli_epi64(a, 32), lo));
    return _mm512_add_epi64(_mm512_mul_epu32(a, lo), _mm512_slli_epi64(cross, 32));
}

static inline void avx512_hash8(const uint8_t *keys, uint64_t bitflip, const uint8_t *d,
                                uint64_t blocks, const uint8_t **blk, uint32_t *u)
{
    const __m512i m32 = _mm512_set1_epi64(0xffffffffLL);
    const __m512i plo = _mm512_set1_epi64(0x85ebcaa7LL), phi = _mm512_set1_epi64(0x9e3779b1LL);
    const __m512i nb = _mm512_set1_epi64((long long)blocks);
    const __m512i a = _mm512_xor_si512(_mm512_loadu_si512((const void *)keys),
                                       _mm512_set1_epi64((long long)bitflip));
    const __m512i ah = _mm512_srli_epi64(a, 32);
    const __m512i ll = _mm512_mul_epu32(a, plo), lh = _mm512_mul_epu32(a, phi);
    const __m512i hl = _mm512_mul_epu32(ah, plo), hh = _mm512_mul_epu32(ah, phi);
    const __m512i t = _mm512_add_epi64(lh, _mm512_srli_epi64(ll, 32));
    const __m512i w = _mm512_add_epi64(_mm512_and_si512(t, m32), hl);
    __m512i lo = _mm512_or_si512(_mm512_slli_epi64(w, 32), _mm512_and_si512(ll, m32));
    __m512i hi =
        _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(t, 32)), _mm512_srli_epi64(w, 32));
    __m512i idx;

    hi = _mm512_add_epi64(hi, _mm512_slli_epi64(lo, 1));
    lo = _mm512_xor_si512(lo, _mm512_srli_epi64(hi, 3));
    lo = _mm512_xor_si512(lo, _mm512_srli_epi64(lo, 35));
    lo = avx512_mul64_lo(lo, UINT64_C(0x9fb21c651e98df25));
    lo = _mm512_xor_si512(lo, _mm512_srli_epi64(lo, 28));
    hi = _mm512_xor_si512(hi, _mm512_srli_epi64(hi, 37));
    hi = avx512_mul64_lo(hi, UINT64_C(0x165667919e3779f9));
    hi = _mm512_xor_si512(hi, _mm512_srli_epi64(hi, 32));
    idx = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(lo, 32), nb),
                                             _mm512_srli_epi64(_mm512_mul_epu32(lo, nb), 32)),
                            32);
    _mm512_storeu_si512((void *)blk, _mm512_add_epi64(_mm512_set1_epi64((long long)(uintptr_t)d),
                                                      _mm512_slli_epi64(idx, 6)));
    _mm256_storeu_si256((__m256i *)(void *)u, _mm512_cvtepi64_epi32(hi));
}

#define BLK_HASH8(keys, bf, d, blocks, blk, u) avx512_hash8((keys), (bf), (d), (blocks), (blk), (u))
#define BLK_ADD(blk, u, k) avx512_add_block((blk), (u), (k))
#define BLK_ADD_FIXED(blk, u, K) avx512_add_k((blk), (u), (K))
#define BLK_TEST_PAIR(ba, bb, ua, ub, c) avx512_probe_pair((ba), (bb), (ua), (ub), (c))
#define BLK_PAIR_OK(c) ((c)->k <= 8)
#define BLK_NAME(x) avx512_##x
#define BLK_CTX avx512_ctx
#define BLK_CTX_INIT(c, kk) avx512_ctx_init(&(c), (kk))
#define BLK_TEST(blk, u, c) avx512_probe_block((blk), (u), (c))
#define BLK_SIMD AMQ_SIMD_AVX512
#define BLK_SIMD_NAME "avx512"
#include "blocked_query.h"

const amq_blk_simd_ops *const amq_blk_ops_avx512 = &avx512_ops;
#else
const amq_blk_simd_ops *const amq_blk_ops_avx512 = NULL;
#endif
