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
    __m512i mult;    /* C[0..15] */
    __mmask16 lanes; /* lanes i < k */
} avx512_ctx;

static inline void avx512_ctx_init(avx512_ctx *c, uint32_t k)
{
    c->mult = _mm512_loadu_si512((const void *)amq_blk_mult);
    c->lanes = (__mmask16)((1u << k) - 1u);
}

static inline int avx512_probe_block(const uint8_t *blk, uint32_t u, const avx512_ctx *c)
{
    const __m512i block = _mm512_load_si512((const void *)blk);
    const __m512i prod = _mm512_mullo_epi32(_mm512_set1_epi32((int)u), c->mult);
    const __m512i word = _mm512_permutexvar_epi32(_mm512_srli_epi32(prod, 28), block);
    const __m512i bit = _mm512_rolv_epi32(_mm512_set1_epi32(1), _mm512_srli_epi32(prod, 23));
    return _mm512_mask_testn_epi32_mask(c->lanes, word, bit) == 0;
}

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
