/*
 * cuckoo_avx2.c - the cuckoo filter's AVX2 paths: the one-key query leaf
 * with both buckets' words in one vector (with BMI2), and batches by
 * gathers, four keys a vector.  Compiled with -mavx2 (Makefile); the
 * leaves and loops that also take BMI2 say so (CK_BMI2).  Reached only
 * through cuckoo.c's key8_modes and cuckoo_batch.c, which pick them when
 * amq_cpu_has() says the CPU has what they need.
 */
#include "cuckoo_impl.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#define CK_BMI2 __attribute__((target("bmi,bmi2")))

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

CK_BMI2 static inline __attribute__((always_inline)) int q8_vec(const amq_cuckoo *c, const void *key, int bytes, int ms, int tab)
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

CK8_GRID(CK_BMI2, ck_q8_fn, const amq_cuckoo, q8_vector, q8_vec)

ck_q8_fn amq_ck_q8_avx2(int bytes, int ms, int tab)
{
    return q8_vector[bytes][ms][tab];
}

/* q8_vec over n packed keys in one loop, as cuckoo.c's q8n_loop. */
CK_BMI2 static inline __attribute__((always_inline)) uint64_t
q8n_vec_loop(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out, int ms)
{
    uint64_t total = 0;
    size_t i;
    if (out == NULL) {
        for (i = 0; i < n; i++)
            total += (uint64_t)q8_vec(c, keys + i * 8, 1, ms, 0);
        return total;
    }
    for (i = 0; i < n; i++) {
        out[i] = (uint8_t)q8_vec(c, keys + i * 8, 1, ms, 0);
        total += out[i];
    }
    return total;
}

CK_BMI2 uint64_t amq_ck_q8n_bytes_avx2(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                       uint8_t *out)
{
    return q8n_vec_loop(c, keys, n, out, 0);
}

CK_BMI2 uint64_t amq_ck_q8n_bytes_avx2_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                          uint8_t *out)
{
    return q8n_vec_loop(c, keys, n, out, CK_MS_PLAIN);
}

CK_BMI2 uint64_t amq_ck_q8n_bytes_avx2_mx(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                          uint8_t *out)
{
    return q8n_vec_loop(c, keys, n, out, CK_MS_MIX);
}

/*
 * The same batches with AVX2 where AVX-512 is missing: four keys a vector,
 * 64-bit products from 32-bit multiplies, unsigned compares by flipping
 * the sign bits, both buckets' words by two gathers.
 */
typedef struct ck_x4 {
    __m256i nb, fmax, phi, ones, highs, stride, bb, seven, one, sign;
    const uint8_t *d;
} ck_x4;

static inline __attribute__((always_inline)) ck_x4 x4_consts(const amq_cuckoo *c)
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
static inline __attribute__((always_inline)) __m256i mullo_x4(__m256i x, __m256i y)
{
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), y),
                                     _mm256_mul_epu32(x, _mm256_srli_epi64(y, 32)));
    return _mm256_add_epi64(_mm256_mul_epu32(x, y), _mm256_slli_epi64(cross, 32));
}

static inline __attribute__((always_inline)) __m256i mulhi32_x4(__m256i x, __m256i y)
{
    __m256i lo = _mm256_mul_epu32(x, y), hi = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), y);
    return _mm256_srli_epi64(_mm256_add_epi64(hi, _mm256_srli_epi64(lo, 32)), 32);
}

static inline __attribute__((always_inline)) __m256i mulhi64_x4(__m256i x, __m256i y)
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

/* amq_ms_mix in each lane; k_mix: AMQ_MULMIX_K in each. */
static inline __attribute__((always_inline)) __m256i mix_x4(__m256i h, __m256i k_mix)
{
    return mullo_x4(_mm256_xor_si256(h, _mm256_srli_epi64(h, 32)), k_mix);
}

/* Bucket i's word in each lane, as word_x8. */
static inline __attribute__((always_inline)) __m256i word_x4(const ck_x4 *k, __m256i i,
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
static inline __attribute__((always_inline)) __m256i ltu_x4(const ck_x4 *k, __m256i x,
                                                                    __m256i y)
{
    return _mm256_cmpgt_epi64(_mm256_xor_si256(y, k->sign), _mm256_xor_si256(x, k->sign));
}

static inline __attribute__((always_inline)) int test_x4(const ck_x4 *k, __m256i h1,
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

static inline __attribute__((always_inline)) uint64_t
q8n_x4(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out, int bytes, int ms)
{
    ck_x4 k = x4_consts(c);
    __m256i k_mix = _mm256_set1_epi64x((long long)AMQ_MULMIX_K);
    __m256i a_hi = _mm256_set1_epi64x((long long)(uint64_t)(c->ms_a >> 64));
    __m256i a_lo = _mm256_set1_epi64x((long long)(uint64_t)c->ms_a);
    __m256i b_hi = _mm256_set1_epi64x((long long)(uint64_t)(c->ms_b >> 64));
    __m256i b_lo = _mm256_set1_epi64x((long long)(uint64_t)c->ms_b);
    uint64_t total = 0;
    size_t i = 0;

    for (; i + 4 <= n; i += 4) {
        /* As amq_ck_q8n_gather_avx512; the carry's all-ones lanes subtracted. */
        __m256i key = _mm256_loadu_si256((const __m256i *)(const void *)(keys + i * 8));
        __m256i lo = mullo_x4(a_lo, key), sum = _mm256_add_epi64(lo, b_lo);
        __m256i h = _mm256_add_epi64(_mm256_add_epi64(mullo_x4(a_hi, key), mulhi64_x4(key, a_lo)),
                                     b_hi);
        int m;
        h = _mm256_sub_epi64(h, ltu_x4(&k, sum, lo));
        if (ms == CK_MS_MIX)
            h = mix_x4(h, k_mix);
        m = test_x4(&k, h, h, bytes);
        if (out != NULL)
            memcpy(out + i, &x4_bytes[m], 4);
        total += (uint64_t)__builtin_popcount((unsigned)m);
    }
    for (; i < n; i++) {
        int r = query8(c, keys + i * 8, 0, ms, 0);
        if (out != NULL)
            out[i] = (uint8_t)r;
        total += (uint64_t)r;
    }
    return total;
}

/* One inlined loop per [whole-byte buckets][mulshift or mulmix]. */
uint64_t amq_ck_q8n_gather_avx2(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
{
    if (c->ms == CK_MS_MIX)
        return c->bb % 8 == 0 ? q8n_x4(c, keys, n, out, 1, CK_MS_MIX)
                              : q8n_x4(c, keys, n, out, 0, CK_MS_MIX);
    return c->bb % 8 == 0 ? q8n_x4(c, keys, n, out, 1, CK_MS_PLAIN)
                          : q8n_x4(c, keys, n, out, 0, CK_MS_PLAIN);
}

static inline __attribute__((always_inline)) void
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

void amq_ck_contains_batch_avx2(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out)
{
    if (c->bb % 8 == 0)
        batch_x4(c, h, n, out, 1);
    else
        batch_x4(c, h, n, out, 0);
}
#undef CK_BMI2

#endif
