/*
 * blocked_bloom_avx2.c - the AVX2 query path of the blocked Bloom filter.
 * Compiled with -mavx2 (Makefile); called only when the CPU has AVX2.
 *
 * Eight probes per step, one per 32-bit lane: the products u * C[i] give
 * each lane its bit; the top 4 bits of a product name the 32-bit word of
 * the block (vpermd picks it from the block's low or high half, the
 * product's sign bit chooses the half), the next 5 the bit in it.  Lanes
 * past k are masked off.  k > 8 takes a second step with C[8..15].
 */
#include "blocked_impl.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

typedef struct avx2_ctx {
    __m256i mult_lo, mult_hi;   /* C[0..7], C[8..15] */
    __m256i lanes_lo, lanes_hi; /* all ones in lanes i < k */
    uint32_t k;
} avx2_ctx;

static inline void avx2_ctx_init(avx2_ctx *c, uint32_t k)
{
    const __m256i kk = _mm256_set1_epi32((int)k);
    c->mult_lo = _mm256_loadu_si256((const __m256i *)(const void *)amq_blk_mult);
    c->mult_hi = _mm256_loadu_si256((const __m256i *)(const void *)(amq_blk_mult + 8));
    c->lanes_lo = _mm256_cmpgt_epi32(kk, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    c->lanes_hi = _mm256_cmpgt_epi32(kk, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15));
    c->k = k;
}

/* Lanes whose probe bit is clear (non-zero lanes = misses). */
static inline __m256i avx2_miss8(__m256i lo, __m256i hi, __m256i prod, __m256i lanes)
{
    const __m256i word = _mm256_srli_epi32(prod, 28);
    const __m256i wlo = _mm256_permutevar8x32_epi32(lo, word);
    const __m256i whi = _mm256_permutevar8x32_epi32(hi, word);
    const __m256i w = _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(wlo), _mm256_castsi256_ps(whi), _mm256_castsi256_ps(prod)));
    const __m256i shift = _mm256_srli_epi32(_mm256_slli_epi32(prod, 4), 27);
    const __m256i bit = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(1), shift), lanes);
    return _mm256_andnot_si256(w, bit);
}

static inline int avx2_probe_block(const uint8_t *blk, uint32_t u, const avx2_ctx *c)
{
    const __m256i lo = _mm256_load_si256((const __m256i *)(const void *)blk);
    const __m256i hi = _mm256_load_si256((const __m256i *)(const void *)(blk + 32));
    const __m256i uu = _mm256_set1_epi32((int)u);
    __m256i miss = avx2_miss8(lo, hi, _mm256_mullo_epi32(uu, c->mult_lo), c->lanes_lo);
    if (c->k > 8)
        miss = _mm256_or_si256(miss,
                               avx2_miss8(lo, hi, _mm256_mullo_epi32(uu, c->mult_hi), c->lanes_hi));
    return _mm256_testz_si256(miss, miss);
}

/*
 * An add builds the key's mask in two registers (words 0-7, 8-15) and
 * writes the block back with two 32-byte stores instead of one store per
 * probe (see blocked_bloom_avx512.c for why that matters out of cache).
 */
static inline int avx2_add_block(uint8_t *blk, uint32_t u, uint32_t k)
{
    const __m256i ids_lo = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i ids_hi = _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15);
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256(), olo, ohi;
    uint32_t i;

    AMQ_BLK_UNROLL
    for (i = 0; i < AMQ_BLOCKED_MAX_K; i++) {
        if (i < k) {
            const uint32_t prod = u * amq_blk_mult[i];
            const __m256i w = _mm256_set1_epi32((int)(prod >> 28));
            const __m256i b = _mm256_set1_epi32((int)(1u << ((prod >> 23) & 31)));
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi32(w, ids_lo), b));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi32(w, ids_hi), b));
        }
    }
    olo = _mm256_load_si256((const __m256i *)(const void *)blk);
    ohi = _mm256_load_si256((const __m256i *)(const void *)(blk + 32));
    _mm256_store_si256((__m256i *)(void *)blk, _mm256_or_si256(olo, lo));
    _mm256_store_si256((__m256i *)(void *)(blk + 32), _mm256_or_si256(ohi, hi));
    return !(_mm256_testc_si256(olo, lo) && _mm256_testc_si256(ohi, hi));
}

#define BLK_ADD(blk, u, k) avx2_add_block((blk), (u), (k))
#define BLK_NAME(x) avx2_##x
#define BLK_CTX avx2_ctx
#define BLK_CTX_INIT(c, kk) avx2_ctx_init(&(c), (kk))
#define BLK_TEST(blk, u, c) avx2_probe_block((blk), (u), (c))
#define BLK_SIMD AMQ_SIMD_AVX2
#define BLK_SIMD_NAME "avx2"
#include "blocked_query.h"

const amq_blk_simd_ops *const amq_blk_ops_avx2 = &avx2_ops;
#else
const amq_blk_simd_ops *const amq_blk_ops_avx2 = NULL;
#endif
