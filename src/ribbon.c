/*
 * ribbon.c - standard Ribbon filters (Dillinger & Walzer, "Ribbon filter:
 * practically smaller than Bloom and Xor", 2021), written from the paper.
 *
 * Variant: standard (not homogeneous) Ribbon with 128-bit coefficient
 * rows, solved per partition, the solution stored interleaved by blocks of
 * 64 slots (one 64-bit word per block and result column).  Standard
 * rather than homogeneous: its false-positive rate is exactly 2^-r per
 * column count, so a target is met without the extra space homogeneous
 * Ribbon needs to bring its rate down to the bound; the rare failure of
 * the elimination costs a retry (another seed, then more slots).
 *
 * Any rate: with r = floor(log2(1/fpp)), starts in the first `upper`
 * blocks use r + 1 result columns and the others r, the fraction alpha of
 * starts with r + 1 chosen so that the mean rate is fpp (RocksDB does the
 * same across its segments).  A key starting in block b reads blocks b..b+2,
 * so the r + 1'th column is stored for blocks up to upper + 1.
 *
 * From a key's x: start s = (x * starts) >> 64, coefficients c = (x * K1 | 1,
 * mix(x)) - bit 0 set, so a row's pivot is its start - and result bits from
 * a multiply of mix(x).  Keys arrive sorted by x, so by start: the banding
 * walks its rows in order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "common/endian.h"
#include "common/error.h"
#include "static_filter.h"

#define RIB_K1 UINT64_C(0xc4ceb9fe1a85ec53)
#define RIB_K2 UINT64_C(0xff51afd7ed558ccd)
#define RIB_MAX_BLOCKS (UINT32_MAX / 64u)

typedef struct rib_key {
    uint64_t start, lo, hi;
    uint32_t result;
} rib_key;

static inline void rib_hash(const amq_static_part *p, uint64_t x, rib_key *k)
{
    uint64_t y = amq_mix64(x);
    k->start = amq_static_mulhi(x, p->span);
    k->lo = (x * RIB_K1) | 1;
    k->hi = y;
    k->result = (uint32_t)((y * RIB_K2) >> 32);
}

/* ---- sizing ---------------------------------------------------------------------------- */

/* Slots over keys: what the elimination needs to succeed on most first
 * attempts with 128-bit rows.  Standard Ribbon needs more the more keys
 * it solves together: partitions of up to 2^16 keys (target_log2) get by
 * with 3 %, a larger single partition (a policy blob) with more per
 * doubling; each retry past the second adds a percent. */
static double rib_overhead(uint64_t n, unsigned attempt)
{
    double e = 0.03;
    if (n > 65536)
        e += 0.0045 * log2((double)n / 65536.0);
    if (attempt >= 2)
        e += 0.01 * (attempt - 1);
    return e;
}

static void rib_size(const amq_static *s, uint64_t n, unsigned attempt, amq_static_part *p)
{
    double slots = ceil((double)n * (1.0 + rib_overhead(n, attempt))) + 127.0;
    uint64_t blocks = (uint64_t)ceil(slots / 64.0), starts;
    if (blocks < 2)
        blocks = 2;
    if (blocks > RIB_MAX_BLOCKS)
        blocks = RIB_MAX_BLOCKS;
    starts = 64 * blocks - 127;
    p->g[0] = (uint32_t)blocks;
    /* up, so that the mean rate is at most fpp: a small filter has a block or two */
    p->g[1] = s->alpha > 0.0 ? (uint32_t)ceil(s->alpha * (double)starts / 64.0) : 0;
    if (p->g[1] > blocks - 1)
        p->g[1] = (uint32_t)(blocks - 1);
    p->g[2] = 0;
}

static uint64_t rib_prepare(const amq_static *s, amq_static_part *p)
{
    uint64_t blocks = p->g[0], words;
    uint32_t r = s->v1;

    if (blocks < 2 || blocks > RIB_MAX_BLOCKS || p->g[1] > blocks - 1 || p->g[2] != 0 ||
        (s->alpha == 0.0 && p->g[1] != 0))
        return 0;
    p->span = 64 * blocks - 127;
    p->slots = 64 * blocks;
    p->upper = p->g[1];
    p->hiblocks = p->upper == 0 ? 0 : (uint32_t)(p->upper + 2 < blocks ? p->upper + 2 : blocks);
    /* Block b's words start at b * r + min(b, hiblocks); the r + 1 words
     * after the last block are zero padding that the block b + 2 read of
     * a start in the last start block may touch (its bits are shifted out). */
    words = blocks * r + p->hiblocks + r + 1;
    return words * 8;
}

static int rib_variant(amq_static *s, const amq_config *cfg, amq_errinfo *err)
{
    double fpp = cfg->fpp;
    uint32_t r = 0;

    if (!(fpp >= ldexp(1.0, -32) && fpp < 1.0))
        return amq_err(err, AMQ_ERANGE, "ribbon fpp %g is outside [2^-32, 1)", fpp);
    while (r < 32 && ldexp(1.0, -(int)(r + 1)) >= fpp)
        r++;
    s->v1 = r;
    s->v2 = 0;
    s->fpp = fpp;
    /* mean rate alpha * 2^-(r+1) + (1 - alpha) * 2^-r = fpp */
    s->alpha = 2.0 - fpp * ldexp(1.0, (int)r + 1);
    if (s->alpha < 1e-12)
        s->alpha = 0.0;
    return AMQ_OK;
}

/* ---- construction ------------------------------------------------------------------------ */

static int rib_build(const amq_static *s, const amq_static_part *p, const uint64_t *x, size_t n,
                     uint8_t *out)
{
    const amq_allocator *a = &s->alloc;
    size_t m = (size_t)p->g[0] * 64, i, bytes = m * 16;
    uint32_t r = s->v1, cols = r + (p->upper > 0), j;
    uint64_t *c = amq_calloc(a, bytes), mask_lo;
    uint32_t *res = amq_calloc(a, m * sizeof *res);
    uint64_t st_lo[33], st_hi[33];
    int rc = AMQ_OK;

    if (c == NULL || res == NULL) {
        rc = AMQ_ENOMEM;
        goto done;
    }
    mask_lo = r >= 32 ? 0xffffffffu : (UINT64_C(1) << r) - 1;
    /* Banding: on-the-fly Gaussian elimination, each row settling at the
     * first free slot its leading 1 reaches. */
    for (i = 0; i < n; i++) {
        rib_key k;
        uint64_t lo, hi, at;
        uint32_t rr;
        unsigned tz;

        rib_hash(p, x[i], &k);
        lo = k.lo;
        hi = k.hi;
        at = k.start;
        rr = (at >> 6) < p->upper ? k.result : (uint32_t)(k.result & mask_lo);
        for (;;) {
            uint64_t *row = c + 2 * at;
            if (row[0] == 0) {
                row[0] = lo;
                row[1] = hi;
                res[at] = rr;
                break;
            }
            lo ^= row[0];
            hi ^= row[1];
            rr ^= res[at];
            if (lo == 0) {
                if (hi == 0) {
                    if (rr != 0) { /* inconsistent: retry */
                        rc = AMQ_EFULL;
                        goto done;
                    }
                    break; /* dependent and consistent */
                }
                tz = (unsigned)__builtin_ctzll(hi);
                lo = hi >> tz;
                hi = 0;
                at += 64 + tz;
            } else {
                tz = (unsigned)__builtin_ctzll(lo);
                lo = (lo >> tz) | (hi << (64 - tz));
                hi >>= tz;
                at += tz;
            }
        }
    }
    /* Back substitution, last slot first: per column, the solution bits of
     * slots i..i+127 in a 128-bit window; at each block's first slot the
     * window's low word is that block's word of the column.  Free slots
     * (no row) take 0. */
    memset(st_lo, 0, sizeof st_lo);
    memset(st_hi, 0, sizeof st_hi);
    for (i = m; i-- > 0;) {
        uint64_t clo = c[2 * i], chi = c[2 * i + 1];
        uint32_t rr = res[i];
        for (j = 0; j < cols; j++) {
            uint64_t bit;
            st_hi[j] = (st_hi[j] << 1) | (st_lo[j] >> 63);
            st_lo[j] <<= 1;
            bit = (uint64_t)((__builtin_parityll((clo & st_lo[j]) ^ (chi & st_hi[j])) ^
                              (int)(rr >> j)) & 1);
            st_lo[j] |= bit;
        }
        if ((i & 63) == 0) {
            size_t b = i >> 6;
            uint32_t nc = b < p->hiblocks ? r + 1 : r;
            uint8_t *w = out + 8 * (b * r + (b < p->hiblocks ? b : p->hiblocks));
            for (j = 0; j < nc; j++)
                amq_store64(w + 8 * j, st_lo[j]);
        }
    }
done:
    amq_free(a, c, bytes);
    amq_free(a, res, m * sizeof *res);
    return rc;
}

/* ---- queries ---------------------------------------------------------------------------
 * Every query reads r + 1 columns, whatever its block: the word after a
 * block of r columns is the next block's first (or padding) and always in
 * bounds, and the comparison masks the extra column out, so the mix of r
 * and r + 1 columns costs no branch.  The row is shifted to the blocks'
 * alignment once (three words), then each column is an and per word and a
 * parity: scalar, or eight columns at a time with AVX-512's popcount.
 */

static inline const uint8_t *rib_block(const amq_static_part *p, uint32_t r, uint64_t b)
{
    return p->data + 8 * (b * r + (b < p->hiblocks ? b : p->hiblocks));
}

typedef struct rib_row {
    const uint8_t *w0, *w1, *w2; /* blocks b, b + 1, b + 2 */
    uint64_t c0, c1, c2;         /* the coefficients aligned to them */
    uint64_t want;               /* expected result bits */
    uint64_t mask;               /* the columns this start uses */
} rib_row;

static inline void rib_locate(const amq_static_part *p, uint32_t r, uint64_t h1, rib_row *w)
{
    rib_key k;
    uint64_t b;
    unsigned off;

    rib_hash(p, amq_static_x(p, h1), &k);
    b = k.start >> 6;
    off = (unsigned)(k.start & 63);
    w->w0 = rib_block(p, r, b);
    w->w1 = w->w0 + 8 * (r + (b < p->hiblocks));
    w->w2 = w->w1 + 8 * (r + (b + 1 < p->hiblocks));
    w->c0 = k.lo << off;
    w->c1 = (k.hi << off) | ((k.lo >> 1) >> (63 - off));
    w->c2 = (k.hi >> 1) >> (63 - off);
    w->want = k.result;
    w->mask = ((UINT64_C(2) << r) - 1) >> (b >= p->upper);
}

static inline int rib_match(uint32_t r, const rib_row *w)
{
    uint64_t v = 0;
    unsigned j;

    for (j = 0; j <= r; j++) {
        uint64_t x = (amq_load64(w->w0 + 8 * j) & w->c0) ^ (amq_load64(w->w1 + 8 * j) & w->c1) ^
                     (amq_load64(w->w2 + 8 * j) & w->c2);
        v |= (uint64_t)__builtin_parityll(x) << j; /* inline, unlike popcount on x86-64 */
    }
    return ((v ^ w->want) & w->mask) == 0;
}

static int rib_contains(const amq_static *s, uint64_t h1)
{
    rib_row w;
    rib_locate(amq_static_part_of(s, h1), s->v1, h1, &w);
    return rib_match(s->v1, &w);
}

#define RIB_LANES 16

/* A batch: the rows of RIB_LANES keys located and their lines prefetched
 * (into L2, as fuse.c does, for the same reason), then checked by match
 * (a constant in each caller, so the call is direct and inlined). */
static inline __attribute__((always_inline)) void
rib_batch(const amq_static *s, const amq_hash128 *h, size_t n, uint8_t *out,
          int (*match)(uint32_t r, const rib_row *w))
{
    rib_row w[RIB_LANES];
    uint32_t r = s->v1;
    size_t i, m, l;
    for (i = 0; i < n; i += m) {
        m = n - i < RIB_LANES ? n - i : RIB_LANES;
        for (l = 0; l < m; l++) {
            rib_locate(amq_static_part_of(s, h[i + l].h1), r, h[i + l].h1, &w[l]);
            __builtin_prefetch(w[l].w0, 0, 2);
            __builtin_prefetch(w[l].w0 + 64, 0, 2);
            __builtin_prefetch(w[l].w2, 0, 2);
            __builtin_prefetch(w[l].w2 + 8 * r, 0, 2);
        }
        for (l = 0; l < m; l++)
            out[i + l] = (uint8_t)match(r, &w[l]);
    }
}

static void rib_contains_batch(const amq_static *s, const amq_hash128 *h, size_t n, uint8_t *out)
{
    rib_batch(s, h, n, out, rib_match);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RIB_AVX512 __attribute__((target("avx512f,avx512vpopcntdq")))

/* Eight columns per step: masked loads (the lanes past column r are
 * neither read nor faulted), a popcount per lane, its low bit the parity. */
RIB_AVX512 static inline int rib_match_avx512(uint32_t r, const rib_row *w)
{
    const __m512i c0 = _mm512_set1_epi64((long long)w->c0), c1 = _mm512_set1_epi64((long long)w->c1),
                  c2 = _mm512_set1_epi64((long long)w->c2), one = _mm512_set1_epi64(1);
    uint64_t v = 0;
    unsigned j;

    for (j = 0; j <= r; j += 8) {
        __mmask8 m = (__mmask8)(r - j >= 7 ? 0xff : (1u << (r - j + 1)) - 1);
        __m512i x = _mm512_and_si512(_mm512_maskz_loadu_epi64(m, w->w0 + 8 * j), c0);
        x = _mm512_xor_si512(x, _mm512_and_si512(_mm512_maskz_loadu_epi64(m, w->w1 + 8 * j), c1));
        x = _mm512_xor_si512(x, _mm512_and_si512(_mm512_maskz_loadu_epi64(m, w->w2 + 8 * j), c2));
        v |= (uint64_t)_mm512_test_epi64_mask(_mm512_popcnt_epi64(x), one) << j;
    }
    return ((v ^ w->want) & w->mask) == 0;
}

RIB_AVX512 static int rib_contains_avx512(const amq_static *s, uint64_t h1)
{
    rib_row w;
    rib_locate(amq_static_part_of(s, h1), s->v1, h1, &w);
    return rib_match_avx512(s->v1, &w);
}

RIB_AVX512 static void rib_contains_batch_avx512(const amq_static *s, const amq_hash128 *h,
                                                size_t n, uint8_t *out)
{
    rib_batch(s, h, n, out, rib_match_avx512);
}

/* AVX-512 with VPOPCNTDQ where the CPU has it and AMQ_SIMD allows it. */
static unsigned rib_simd(void)
{
    return (unsigned)amq_cpu_has(AMQ_CPU_AVX512F | AMQ_CPU_AVX512VPOPCNTDQ);
}
#else
#define rib_contains_avx512 rib_contains
#define rib_contains_batch_avx512 rib_contains_batch
static unsigned rib_simd(void)
{
    return 0;
}
#endif

/* The generic handle's entry points: one call into the path the CPU takes. */
int amq_rib_ops_contains(const void *impl, amq_hash128 h)
{
    const amq_static *s = impl;
    return s->simd ? rib_contains_avx512(s, h.h1) : rib_contains(s, h.h1);
}

int amq_rib_ops_contains_key(const void *impl, const void *key, size_t len)
{
    const amq_static *s = impl;
    uint64_t h1 = amq_static_key_h1(s, key, len);
    return s->simd ? rib_contains_avx512(s, h1) : rib_contains(s, h1);
}

void amq_rib_ops_contains_batch(const void *impl, const amq_hash128 *h, size_t n,
                                uint8_t *out)
{
    const amq_static *s = impl;
    if (s->simd)
        rib_contains_batch_avx512(s, h, n, out);
    else
        rib_contains_batch(s, h, n, out);
}

static int rib_describe(const amq_static *s, amq_field_fn fn, void *ctx)
{
    int rc;
    if ((rc = amq_field_f64(fn, ctx, "fpp", s->fpp)) != 0 ||
        (rc = amq_field_u64(fn, ctx, "columns", s->v1)) != 0)
        return rc;
    return amq_field_f64(fn, ctx, "upper_fraction", s->alpha);
}

const amq_static_algo amq_ribbon_algo = {
    .kind = AMQ_KIND_RIBBON,
    .name = "ribbon",
    /* small partitions: less overhead (rib_overhead) for 127 slots of
     * padding each, 0.2 % at 2^16 keys */
    .target_log2 = 16,
    .variant = rib_variant,
    .size = rib_size,
    .prepare = rib_prepare,
    .build = rib_build,
    .contains = rib_contains,
    .contains_batch = rib_contains_batch,
    .simd = rib_simd,
    .describe = rib_describe,
};
