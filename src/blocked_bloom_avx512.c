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
    const __m512i u = _mm512_mask_set1_epi32(_mm512_set1_epi32((int)ua), (__mmask16)0xff00,
                                             (int)ub);
    const __m512i prod = _mm512_mullo_epi32(u, c->mult2);
    const __m512i idx = _mm512_or_si512(_mm512_srli_epi32(prod, 28), c->half);
    const __m512i word = _mm512_permutex2var_epi32(_mm512_load_si512((const void *)ba), idx,
                                                   _mm512_load_si512((const void *)bb));
    const __m512i bit = _mm512_rolv_epi32(c->one, _mm512_srli_epi32(prod, 23));
    const unsigned miss = _mm512_mask_testn_epi32_mask(c->lanes2, word, bit);
    return (unsigned)((miss & 0xffu) == 0) | ((unsigned)((miss >> 8) == 0) << 1);
}

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
