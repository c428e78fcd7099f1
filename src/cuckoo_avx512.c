/*
 * cuckoo_avx512.c - the cuckoo filter's batches with AVX-512, eight keys a
 * vector.  Compiled with -mavx512f -mavx512dq -mavx512bw -mavx512vl
 * (Makefile); reached only through cuckoo.c's key8_modes and
 * cuckoo_batch.c, which pick it when amq_cpu_has(AMQ_CPU_AVX512_CORE).
 */
#include "cuckoo_impl.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512DQ__) && \
    defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>

/*
 * Batches with AVX-512, eight keys a vector (cuckoo_avx2.c: four): one-word
 * buckets (on whole bytes or not), no victim, nb < 2^32.  The same
 * arithmetic as query8 lane by lane (64-bit high halves of products from
 * 32-bit multiplies), both buckets' words fetched by two gathers: sixteen
 * loads in flight for a few instructions, where one key at a time pays its
 * arithmetic for two.  The answers are query8's.
 */
typedef struct ck_x8 {
    __m512i nb, fmax, phi, ones, highs, stride, bb, seven, one;
    const uint8_t *d;
} ck_x8;

static inline __attribute__((always_inline)) ck_x8 x8_consts(const amq_cuckoo *c)
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
static inline __attribute__((always_inline)) __m512i mulhi32_x8(__m512i x, __m512i y)
{
    __m512i lo = _mm512_mul_epu32(x, y), hi = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), y);
    return _mm512_srli_epi64(_mm512_add_epi64(hi, _mm512_srli_epi64(lo, 32)), 32);
}

/* floor(x * y / 2^64) in each lane, from the four 32 x 32-bit products. */
static inline __attribute__((always_inline)) __m512i mulhi64_x8(__m512i x, __m512i y)
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
static inline __attribute__((always_inline)) __m512i word_x8(const ck_x8 *k, __m512i i,
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
static inline __attribute__((always_inline)) __mmask8 test_x8(const ck_x8 *k, __m512i h1,
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
static inline __attribute__((always_inline)) void put_x8(uint8_t *out, __mmask8 m,
                                                                  __m512i one)
{
    _mm_storel_epi64((__m128i *)(void *)out,
                     _mm512_cvtepi64_epi8(_mm512_maskz_mov_epi64(m, one)));
}

/* Packed 8-byte keys, mulshift or mulmix (ms): h1 is the key's hash and
 * h2's high half its low half. */
static inline __attribute__((always_inline)) uint64_t
q8n_x8(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out, int bytes, int ms)
{
    ck_x8 k = x8_consts(c);
    __m512i k_mix = _mm512_set1_epi64((long long)AMQ_MULMIX_K);
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
        if (ms == CK_MS_MIX) { /* amq_ms_mix */
            h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 32));
            h = _mm512_mullo_epi64(h, k_mix);
        }
        m = test_x8(&k, h, h, bytes);
        if (out != NULL)
            put_x8(out + i, m, k.one);
        total += (uint64_t)__builtin_popcount(m);
    }
    for (; i < n; i++) {
        int r = query8(c, keys + i * 8, 0, ms, 0);
        if (out != NULL)
            out[i] = (uint8_t)r;
        total += (uint64_t)r;
    }
    return total;
}

/* Each an inlined loop, once for whole-byte buckets and once for the
 * others, under mulshift and under mulmix. */
uint64_t amq_ck_q8n_gather_avx512(const amq_cuckoo *c, const uint8_t *keys, size_t n,
                                  uint8_t *out)
{
    if (c->ms == CK_MS_MIX)
        return c->bb % 8 == 0 ? q8n_x8(c, keys, n, out, 1, CK_MS_MIX)
                              : q8n_x8(c, keys, n, out, 0, CK_MS_MIX);
    return c->bb % 8 == 0 ? q8n_x8(c, keys, n, out, 1, CK_MS_PLAIN)
                          : q8n_x8(c, keys, n, out, 0, CK_MS_PLAIN);
}

/* Hashes (h1, h2 pairs): two loads and two permutes give eight of each. */
static inline __attribute__((always_inline)) void
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

void amq_ck_contains_batch_avx512(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                  uint8_t *out)
{
    if (c->bb % 8 == 0)
        batch_x8(c, h, n, out, 1);
    else
        batch_x8(c, h, n, out, 0);
}
#endif

