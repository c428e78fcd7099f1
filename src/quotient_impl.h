/*
 * quotient_impl.h - the quotient kind's table (quotient_internal.h), its
 * query, add and growth, written once and compiled once per instruction set
 * (quotient_base.c; quotient_avx2.c with -mavx2 -mbmi2; quotient_avx512.c
 * with AVX-512BW too, whose query compares a whole line): the file that
 * includes it defines QF_ISA_TABLE, the name of the amq_qf_isa it exports.
 *
 * Slot a = h1 * m >> 64.  Entries lie in order of their slots; the entries
 * of one slot (its run) are contiguous and end at a run-end bit; occupied
 * bit a says slot a has a run.  A line's offset is how many slots from its
 * first one on hold entries of earlier slots (runs pushed into it), so that
 * the runs of its own slots begin at first + offset, in the order of its
 * occupied bits.  A run's entries lie in order of the first keys of their
 * ranges, so that growth writes each entry as it reads it.
 */
#ifndef AMQ_QUOTIENT_IMPL_H
#define AMQ_QUOTIENT_IMPL_H

#include <string.h>

#include "amq/hash.h"
#include "common/cpu.h"
#include "common/prefetch.h"
#include "common/xxh3_8.h"
#include "quotient_internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#define S QF_SLOTS
#define M28 ((UINT64_C(1) << 28) - 1u)
#define SHORT 3u /* entries of SHORT bits or fewer begin at bit k - 1 */
#define VOID_LANE 0x8000u

static inline uint64_t mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* The position of set bit number t (from 1) of w, which has t or more. */
static inline uint32_t select_bit(uint64_t w, uint32_t t)
{
#if defined(__BMI2__)
    return (uint32_t)__builtin_ctzll(__builtin_ia32_pdep_di(UINT64_C(1) << (t - 1), w));
#else
    while (--t > 0)
        w &= w - 1;
    return (uint32_t)__builtin_ctzll(w);
#endif
}

static inline uint64_t *line_word(uint8_t *t, uint64_t blk)
{
    return (uint64_t *)(void *)(t + blk * 64u);
}

static inline uint16_t *line_lane(uint8_t *t, uint64_t pos)
{
    return (uint16_t *)(void *)(t + (pos / S) * 64u + 8u + 2u * (pos % S));
}

static inline uint64_t *word_of(const amq_qf *x, uint64_t blk)
{
    return line_word(x->t, blk);
}

static inline uint16_t *lane_at(const amq_qf *x, uint64_t pos)
{
    return line_lane(x->t, pos);
}

/* The full-length entry of h under q address bits: the next 15 bits, a 1 marker. */
static inline uint16_t entry_at(uint64_t h, uint32_t q)
{
    return (uint16_t)(((h << q) >> 48) | 1u);
}

static inline uint16_t entry_of(const amq_qf *x, uint64_t h)
{
    return entry_at(h, x->k);
}

/* Does entry s answer a key whose full-length entry is qv?  The bits above
 * s's marker must agree; s ^ (s - 1) is the marker and the zeros under it. */
static inline int lane_matches(uint16_t s, uint16_t qv)
{
    const uint16_t low = (uint16_t)(s ^ (uint16_t)(s - 1u));
    return s != 0 && (uint16_t)((s ^ qv) & (uint16_t)~low) == 0;
}

/* Does lane s answer h?  A long entry is compared from bit k, a short one from k - 1. */
static inline int lane_hits(uint16_t s, uint16_t q_long, uint16_t q_short)
{
    return lane_matches(s, (s & ((1u << (15u - SHORT)) - 1u)) != 0 ? q_long : q_short);
}

/* Two bits per lane of the 8 at p that is void. */
static inline uint32_t void8(const void *p)
{
#if defined(__SSE2__)
    return (uint32_t)_mm_movemask_epi8(
        _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)p), _mm_set1_epi16((short)VOID_LANE)));
#else
    uint32_t r = 0, i;
    uint16_t v;
    for (i = 0; i < 8; i++) {
        memcpy(&v, (const uint8_t *)p + 2 * i, 2);
        r |= (uint32_t)(v == VOID_LANE) * (3u << (2 * i));
    }
    return r;
#endif
}

/* Two bits per lane of the 8 at p that answers (an empty lane answers: the
 * caller masks the lanes that are not the run's), each in its own frame. */
static inline uint32_t match8_two(const void *p, uint16_t q_long, uint16_t q_short)
{
#if defined(__SSE2__)
    const __m128i s = _mm_loadu_si128((const __m128i *)p);
    const __m128i shrt = _mm_cmpeq_epi16(
        _mm_and_si128(s, _mm_set1_epi16((short)((1u << (15u - SHORT)) - 1u))), _mm_setzero_si128());
    const __m128i q = _mm_or_si128(_mm_and_si128(shrt, _mm_set1_epi16((short)q_short)),
                                   _mm_andnot_si128(shrt, _mm_set1_epi16((short)q_long)));
    const __m128i low = _mm_xor_si128(s, _mm_sub_epi16(s, _mm_set1_epi16(1)));
    const __m128i d = _mm_andnot_si128(low, _mm_xor_si128(s, q));
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(d, _mm_setzero_si128()));
#else
    uint32_t r = 0, i;
    uint16_t v;
    for (i = 0; i < 8; i++) {
        memcpy(&v, (const uint8_t *)p + 2 * i, 2);
        r |= (uint32_t)(v == 0 || lane_hits(v, q_long, q_short)) * (3u << (2 * i));
    }
    return r;
#endif
}

/* The keys of slot a of a table of m slots are h in [lo(a), lo(a + 1) - 1],
 * lo(a) = ceil(a 2^64 / m): from the reciprocal f = floor(2^128 / m) (or one
 * under), a f / 2^64 is at most 2 under lo(a); what a 2^64 - (a f / 2^64) m
 * leaves says how far (a division per entry would cost growth half its time). */
typedef struct {
    uint64_t m, f_hi, f_lo;
} slot_keys;

static inline uint64_t slot_first_key(const slot_keys *b, uint64_t a)
{
    const uint64_t est = a * b->f_hi + mulhi(a, b->f_lo); /* ceil(a 2^64 / m) - 2 at the least */
    const uint64_t d = (uint64_t)(((unsigned __int128)a << 64) - (unsigned __int128)est * b->m);
    return est + (d > 0) + (d > b->m); /* a 2^64 - est m is at most 2m */
}

static inline slot_keys keys_of(const amq_qf *x)
{
    slot_keys b;
    b.m = x->m;
    b.f_hi = x->recip_hi;
    b.f_lo = x->recip_lo;
    return b;
}

static inline void slot_keys_range(const slot_keys *b, uint64_t a, uint64_t *lo, uint64_t *hi)
{
    *lo = slot_first_key(b, a);
    *hi = a + 1u >= b->m ? UINT64_MAX : slot_first_key(b, a + 1u) - 1u;
}

static inline void set_run(amq_qf *x, uint64_t pos, int v)
{
    uint64_t *w = word_of(x, pos / S);
    const uint64_t bit = UINT64_C(1) << (36u + pos % S);
    *w = v ? *w | bit : *w & ~bit;
}

/* Run end number t (from 1) among w, the run-end bits of line *blk not
 * passed yet, and the lines after: its position, with *blk and *w left at
 * it (w without it and the bits before, so the next call goes on from
 * there); UINT64_MAX when the table ends first (never in a valid table). */
static inline uint64_t next_run_end(const amq_qf *x, uint64_t *blk, uint64_t *w, uint32_t t)
{
    uint32_t c, b;
    while (t > (c = (uint32_t)__builtin_popcountll(*w))) {
        t -= c;
        if (++*blk >= x->lines)
            return UINT64_MAX;
        *w = (*word_of(x, *blk) >> 36) & M28;
    }
    b = select_bit(*w, t);
    *w &= ~((UINT64_C(2) << b) - 1u);
    return *blk * S + b;
}

/* The position of run end number t (from 1) at or after p; UINT64_MAX when
 * the table ends first (never in a valid table). */
static inline uint64_t select_run(const amq_qf *x, uint64_t p, uint32_t t)
{
    uint64_t blk = p / S, w = ((*word_of(x, blk) >> 36) & M28) & (M28 << (p % S));
    return next_run_end(x, &blk, &w, t);
}

/* Is h in a range of a sorted list?  (The last range from lo <= h on.) */
static int ranges_have(const uint64_t *r, uint64_t n, uint64_t h)
{
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        const uint64_t mid = (lo + hi) / 2;
        if (r[2 * mid] <= h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && h <= r[2 * (lo - 1) + 1];
}

/* Is h in the deep list (or, for a table being grown into, the growth's)? */
static int deep_has(const amq_qf *x, uint64_t h)
{
    return ranges_have(x->deep, x->ndeep, h) || ranges_have(x->deep2, x->ndeep2, h);
}

#if defined(__AVX512BW__) && defined(__BMI2__)
/* A bit per 16-bit word of the line (bit 4 + j: lane j) that answers a key
 * whose entries are q_long and q_short, as lane_hits; empty lanes answer
 * too (the caller masks all but the run's). */
static inline uint32_t line_hits(const uint8_t *line, uint16_t q_long, uint16_t q_short)
{
    const __m512i s = _mm512_load_si512((const void *)line);
    const __mmask32 shrt =
        _mm512_testn_epi16_mask(s, _mm512_set1_epi16((short)((1u << (15u - SHORT)) - 1u)));
    const __m512i q = _mm512_mask_blend_epi16(shrt, _mm512_set1_epi16((short)q_long),
                                              _mm512_set1_epi16((short)q_short));
    /* ~(s ^ (s - 1)) & (s ^ q): the bits above s's marker that differ from q */
    const __m512i d =
        _mm512_ternarylogic_epi32(s, _mm512_add_epi16(s, _mm512_set1_epi16(-1)), q, 0x42);
    return (uint32_t)_mm512_testn_epi16_mask(d, d);
}

/* A bit per lane of the line (as line_hits) that holds an entry (void lanes too). */
static inline uint32_t line_used(const uint8_t *line)
{
    const __m512i s = _mm512_load_si512((const void *)line);
    return (uint32_t)_mm512_test_epi16_mask(s, s) & ~UINT32_C(15);
}

/* A bit per 16-bit word of the line (as line_hits) that is a void lane. */
static inline uint32_t line_voids(const uint8_t *line)
{
    return (uint32_t)_mm512_cmpeq_epi16_mask(_mm512_load_si512((const void *)line),
                                             _mm512_set1_epi16((short)VOID_LANE));
}
#endif

/* The general answer: the run of slot a (the t-th of its line, which begins
 * at p0) wherever it lies.  One pass over the run-end bits from p0 finds
 * the run's start (after run end t - 1) and its end (run end t); then its
 * lanes are compared, both of h's entries worked out once. */
static int run_answers(const amq_qf *x, uint64_t a, uint64_t p0, uint32_t t, uint64_t h)
{
    const uint16_t q_long = entry_of(x, h), q_short = entry_at(h, x->k - 1u);
    uint64_t blk = p0 / S, w = ((*word_of(x, blk) >> 36) & M28) & (M28 << (p0 % S));
    uint64_t start = p0, end, pos;
    int deep = 0;
    if (t > 1) { /* the start: after run end t - 1 from p0 */
        if ((start = next_run_end(x, &blk, &w, t - 1u)) == UINT64_MAX)
            return 1; /* not a table (a loaded one is validated first) */
        start++;
    }
    if ((end = next_run_end(x, &blk, &w, 1)) == UINT64_MAX) /* the next run end */
        return 1;
    if (start < a)
        start = a;
#if defined(__AVX512BW__) && defined(__BMI2__)
    (void)pos;
    for (blk = start / S; blk <= end / S; blk++) { /* each line's lanes of the run at once */
        const uint8_t *line = x->t + blk * 64u;
        const uint32_t lo = blk == start / S ? (uint32_t)(start % S) : 0u;
        const uint32_t hi = blk == end / S ? (uint32_t)(end % S) : S - 1u;
        const uint32_t hit = line_hits(line, q_long, q_short) &
                             (uint32_t)((UINT64_C(32) << hi) - (UINT64_C(16) << lo));
        if (hit & ~line_voids(line))
            return 1;
        deep |= hit != 0;
    }
#else
    for (pos = start; pos <= end; pos++) {
        const uint16_t v = *lane_at(x, pos);
        if (v == VOID_LANE)
            deep = 1;
        else if (lane_hits(v, q_long, q_short))
            return 1;
    }
#endif
    return deep && deep_has(x, h);
}

/* Where h's slot is, packed in one word: its line's number times 64 plus
 * its place in the line (below 28).  A batch keeps it in its ring, so that
 * the slot is worked out once, for its prefetch.  During a growth a key of the slots already read is in the
 * new table, and x's spot was only a prefetch (batch_answer). */
static inline __attribute__((always_inline)) uint64_t line_spot(const amq_qf *x, uint64_t h)
{
    const uint64_t a = mulhi(h, x->m), blk = a / S;
    return blk * 64u + (a - blk * S);
}

/* What the line of h's slot says of h: 0 or 1; QF_RUN when h's run does
 * not lie in the line (or, but with AVX-512, is longer than 8 lanes):
 * run_answers(x, *a, *p0, *t, h) answers then; QF_DEEP when only a void
 * lane answered (deep_has). */
#define QF_RUN 2
#define QF_DEEP 3
/* (line_has_at: h's slot given as its line blk and its place i there.) */
static inline __attribute__((always_inline)) int line_has_at(const amq_qf *x, uint64_t h,
                                                             uint64_t blk, uint32_t i, uint64_t *a,
                                                             uint64_t *p0, uint32_t *t)
{
    const uint8_t *line = x->t + blk * 64u;
    const uint64_t w = *(const uint64_t *)(const void *)line;
    const uint32_t off = (uint32_t)(w & 255u);
    uint32_t start, end, hit;
    uint64_t r;
    *a = blk * S + i;
#if defined(__AVX512BW__) && defined(__BMI2__)
    /* The whole line compared first, the run's place not yet worked out: when no lane that
     * holds an entry answers h and h's run, if any, ends in the line, h is absent.  Most
     * absent keys end here after the fewest steps that wait for the line, and a one-key
     * query's speed is how many of those wait at once (docs/expandable-log.md, "The line rules
     * a key out first"). */
    const uint32_t all = line_hits(line, entry_of(x, h), entry_at(h, x->k - 1u)) &
                         line_used(line);
    *t = (uint32_t)__builtin_popcountll((w >> 8) & ((UINT64_C(2) << i) - 1u));
    *p0 = blk * S + off;
    r = (w >> 36) & (UINT64_MAX << (off & 63u)); /* run ends in this line from p0 on */
    if (__builtin_expect((all == 0) & ((uint32_t)__builtin_popcountll(r) >= *t) & (off < S), 1))
        return 0;
    if (!((w >> (8u + i)) & 1u))
        return 0;
    if (__builtin_expect(((uint32_t)__builtin_popcountll(r) < *t) | (off >= S), 0))
        return QF_RUN;
    /* the run's first and last lanes from one PDEP (a run end put at off - 1 stands for the
     * line's first run's start) */
    {
        const uint64_t e = _pdep_u64(UINT64_C(3) << (*t - 1u), (r << 1) | (UINT64_C(1) << off));
        start = (uint32_t)__builtin_ctzll(e);
        end = 62u - (uint32_t)__builtin_clzll(e);
    }
    if (start < i)
        start = i;
    hit = all & (uint32_t)(((UINT64_C(32) << end) - (UINT64_C(16) << start)));
    if (hit == 0)
        return 0;
    return (hit & ~line_voids(line)) != 0 ? 1 : QF_DEEP;
#else
    if (!((w >> (8u + i)) & 1u))
        return 0;
    *t = (uint32_t)__builtin_popcountll((w >> 8) & ((UINT64_C(2) << i) - 1u));
    *p0 = blk * S + off;
    r = (w >> 36) & (UINT64_MAX << (off & 63u)); /* run ends in this line from p0 on */
    if (__builtin_expect(((uint32_t)__builtin_popcountll(r) < *t) | (off >= S), 0))
        return QF_RUN;
    /* the run lies in this line: its end is run end t, its start after run end t - 1 */
    end = select_bit(r, *t);
    start = *t == 1 ? off : select_bit(r, *t - 1) + 1u;
    if (start < i)
        start = i;
    if (__builtin_expect(end - start >= 8u, 0))
        return QF_RUN;
    {
        /* 8 lanes that hold the run, read within the line: a run near its end would
         * otherwise touch the next line too */
        const uint32_t base = start < S - 8u ? start : S - 8u;
        hit = match8_two(line + 8u + 2u * base, entry_of(x, h), entry_at(h, x->k - 1u)) &
              (((4u << (2 * (end - start))) - 1u) << (2u * (start - base)));
        if (__builtin_expect(hit == 0, 1))
            return 0;
        return (hit & ~void8(line + 8u + 2u * base)) != 0 ? 1 : QF_DEEP;
    }
#endif
}

static inline __attribute__((always_inline)) int line_has(const amq_qf *x, uint64_t h, uint64_t *a,
                                                          uint64_t *p0, uint32_t *t)
{
    const uint64_t v = line_spot(x, h);
    return line_has_at(x, h, v >> 6, (uint32_t)(v & 63u), a, p0, t);
}

#if defined(__AVX512BW__) && defined(__BMI2__)
/* h's run, the t-th of line blk's (t >= 1: slot i there is occupied), when
 * it leaves the line and ends in the next: its lanes of both lines compared
 * at once, as line_has_at compares one (a run that leaves its line is a
 * tenth of the keys; run_answers walks it a run end at a time).  QF_RUN
 * when the run does not end in the next line, or begins past it: the
 * general path then.  (hits0: line blk's line_hits for h, when known.) */
static inline __attribute__((always_inline)) int run_in_two(const amq_qf *x, uint64_t h,
                                                            uint64_t blk, uint32_t i, uint32_t t,
                                                            const uint32_t *hits0)
{
    const uint8_t *l0 = x->t + blk * 64u, *l1 = l0 + 64;
    const uint64_t w0 = *(const uint64_t *)(const void *)l0;
    const uint32_t off = (uint32_t)(w0 & 255u);
    uint64_t r0, r1, e;
    uint32_t e0, need, s0, s1, end1, m0, m1, hit0, hit1, yes;
    uint16_t q_long, q_short;
    if (blk + 1u >= x->lines || off >= S)
        return QF_RUN;
    r0 = (w0 >> 36) & (UINT64_MAX << off); /* run ends in line blk from its offset on */
    r1 = (*(const uint64_t *)(const void *)l1 >> 36) & M28;
    e0 = (uint32_t)__builtin_popcountll(r0);
    if (e0 >= t || (uint32_t)__builtin_popcountll(r1) < t - e0)
        return QF_RUN; /* not a run that ends in the next line */
    need = t - e0;     /* h's run ends at the need-th run end of line blk + 1 */
    if (need == 1) {   /* it begins in line blk: after its last run end, or at off */
        s0 = t == 1 ? off : 64u - (uint32_t)__builtin_clzll(r0);
        s0 = s0 < i ? i : s0;
        s1 = 0;
        end1 = (uint32_t)__builtin_ctzll(r1);
    } else { /* it begins in line blk + 1, after run end need - 1 there */
        e = _pdep_u64(UINT64_C(3) << (need - 2u), r1);
        s0 = S;
        s1 = (uint32_t)__builtin_ctzll(e) + 1u;
        end1 = 63u - (uint32_t)__builtin_clzll(e);
    }
    q_long = entry_of(x, h);
    q_short = entry_at(h, x->k - 1u);
    m0 = (uint32_t)(UINT64_C(0xffffffff) << (4u + s0)); /* lanes s0 to 27; none when s0 is S */
    m1 = (uint32_t)((UINT64_C(32) << end1) - (UINT64_C(16) << s1));
    hit0 = (hits0 != NULL ? *hits0 : line_hits(l0, q_long, q_short)) & m0;
    hit1 = line_hits(l1, q_long, q_short) & m1;
    yes = ((hit0 & ~line_voids(l0)) | (hit1 & ~line_voids(l1))) != 0;
    return yes ? 1 : (hit0 | hit1) != 0 ? QF_DEEP : 0;
}
#endif

static inline __attribute__((always_inline)) int table_has(const amq_qf *x, uint64_t h)
{
    uint64_t a, p0;
    uint32_t t;
    const int r = line_has(x, h, &a, &p0, &t);
    if (__builtin_expect(r == QF_RUN, 0))
        return run_answers(x, a, p0, t, h);
    if (__builtin_expect(r == QF_DEEP, 0))
        return deep_has(x, h);
    return r;
}

/* Is h one of the pending keys?  (All cells compared, the empty ones masked.) */
static inline int pend_has(const amq_qf *x, uint64_t h)
{
    uint32_t hit = 0, q;
    if (!amq_qf_pend_maybe(x, h))
        return 0;
#if defined(__AVX2__)
    {
        const __m256i kv = _mm256_set1_epi64x((long long)h);
        for (q = 0; q < QF_PENDING / 4; q++)
            hit |= (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(
                       _mm256_loadu_si256((const __m256i *)(const void *)(x->pend + 4 * q)), kv)))
                   << (4 * q);
    }
#else
    for (q = 0; q < QF_PENDING; q++)
        hit |= (uint32_t)(x->pend[q] == h) << q;
#endif
    return (hit & x->pend_used) != 0;
}

#if defined(__AVX512BW__) && defined(__BMI2__)
/* h's answer from run_in_two's r (not QF_RUN): the deep list for a void lane, then the
 * pending keys. */
static inline __attribute__((always_inline)) int run_in_two_answer(const amq_qf *x, uint64_t h,
                                                                   int r)
{
    if (__builtin_expect(r == QF_DEEP, 0))
        r = deep_has(x, h);
    return r | pend_has(x, h);
}
#endif

/* The table h is in: during a growth, keys of the slots read are in the new one. */
static inline __attribute__((always_inline)) const amq_qf *table_of(const amq_qf *x, uint64_t h)
{
    if (__builtin_expect(x->growth != NULL, 0) && mulhi(h, x->m) < x->growth->rslot)
        return x->growth->y;
    return x;
}

static inline __attribute__((always_inline)) int qf_has(const amq_qf *x, uint64_t h)
{
    return table_has(table_of(x, h), h) || pend_has(x, h);
}

/* ---- the add -------------------------------------------------------------------------------- */

#if !defined(__AVX512BW__) /* (AVX-512: shift_put) */
/* Lanes [lo, hi) of a line move to [lo + 1, hi]: with AVX2, each 16-bit
 * word of the line from the one below it, blended into the lanes that
 * move, instead of a call of memmove. */
static inline void lanes_up(uint8_t *line, uint32_t lo, uint32_t hi)
{
#if defined(__AVX2__)
    const __m256i a = _mm256_load_si256((const __m256i *)(void *)line);
    const __m256i b = _mm256_load_si256((const __m256i *)(void *)(line + 32));
    /* a 2-byte shift of 64 bytes, across the 128-bit halves */
    const __m256i a_up = _mm256_alignr_epi8(a, _mm256_permute2x128_si256(a, a, 0x08), 14);
    const __m256i b_up = _mm256_alignr_epi8(b, _mm256_permute2x128_si256(a, b, 0x21), 14);
    const __m256i wa = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m256i wb = _mm256_add_epi16(wa, _mm256_set1_epi16(16));
    const __m256i from = _mm256_set1_epi16((short)(4u + lo)), to = _mm256_set1_epi16((short)(5u + hi));
    /* words 5 + lo .. 4 + hi (lanes lo + 1 .. hi, after the 8-byte head) take the moved ones */
    const __m256i ma = _mm256_and_si256(_mm256_cmpgt_epi16(wa, from), _mm256_cmpgt_epi16(to, wa));
    const __m256i mb = _mm256_and_si256(_mm256_cmpgt_epi16(wb, from), _mm256_cmpgt_epi16(to, wb));
    _mm256_store_si256((__m256i *)(void *)line, _mm256_blendv_epi8(a, a_up, ma));
    _mm256_store_si256((__m256i *)(void *)(line + 32), _mm256_blendv_epi8(b, b_up, mb));
#else
    uint16_t *ln = (uint16_t *)(void *)(line + 8u);
    memmove(ln + lo + 1, ln + lo, 2u * (hi - lo));
#endif
}

/* Slots [ins, f) move to [ins + 1, f] (f is empty), lanes and run ends, a
 * line at a time with the last slot of one carried into the next; the lines
 * after blk's get one more entry of an earlier slot (their offsets). */
static void shift_up(amq_qf *x, uint64_t ins, uint64_t f, uint64_t blk)
{
    const uint64_t li = ins / S, lf = f / S;
    uint64_t l, *w, keep, moved;
    uint16_t carry = 0, *ln, out = 0;
    uint32_t carry_run = 0, lo, hi, out_run = 0;
    for (l = li; l <= lf; l++) {
        w = word_of(x, l);
        ln = (uint16_t *)(void *)(x->t + l * 64u + 8u);
        lo = l == li ? (uint32_t)(ins % S) : 0;
        hi = l == lf ? (uint32_t)(f % S) : S - 1; /* the top slot that receives */
        if (l != lf) {
            out = ln[S - 1];
            out_run = (uint32_t)(*w >> (36u + S - 1)) & 1u;
        }
        lanes_up(x->t + l * 64u, lo, hi);
        /* run bits [lo, hi] take [lo - 1 .. hi - 1], bit lo the carried one */
        keep = ~(((UINT64_C(2) << hi) - 1u) & ~((UINT64_C(1) << lo) - 1u)) & M28;
        moved = ((((*w >> 36) & M28) << 1) & ~keep & M28);
        if (l != li) {
            ln[lo] = carry;
            moved = (moved & ~UINT64_C(1)) | carry_run;
        } else /* slot ins keeps its bit: the caller sets it */
            moved = (moved & ~(UINT64_C(1) << lo)) | ((((*w >> 36) >> lo) & 1u) << lo);
        *w = ((*w & ~(M28 << 36)) | ((((*w >> 36) & keep) | moved) << 36)) + (l > blk);
        carry = out;
        carry_run = out_run;
    }
}
#endif

#if defined(__AVX512BW__)
/* insert_at's writes: as shift_up, then entry s at ins with its run-end bit
 * last, slot a's occupied bit (a new run) or the end taken from the entry
 * before ins (a run made longer at its end).  Each line shifted is loaded
 * once, worked in a register and stored whole; a bit in a line before
 * ins's (slot a's, or the entry before a line's first) is set alone. */
static void shift_put(amq_qf *x, uint64_t a, uint64_t ins, uint64_t f, uint16_t s, int last,
                      int occ)
{
    const uint64_t blk = a / S;
    const __m512i below = _mm512_set_epi16(30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17,
                                           16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1,
                                           0, 0); /* each word from the one below it */
    const uint64_t li = ins / S, lf = f / S;
    uint64_t l, carry = 0, carry_run = 0;
    for (l = li; l <= lf; l++) {
        uint8_t *p = x->t + l * 64u;
        const __m512i old = _mm512_load_si512((void *)p);
        const uint64_t w = (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(old));
        const uint32_t lo = l == li ? (uint32_t)(ins % S) : 0;
        const uint32_t hi = l == lf ? (uint32_t)(f % S) : S - 1; /* the top slot that receives */
        const uint64_t ends = (w >> 36) & M28;
        const uint64_t span = ((UINT64_C(2) << hi) - 1u) & ~((UINT64_C(1) << lo) - 1u);
        uint64_t e = (ends & ~span) | ((ends << 1) & span), hdr;
        __m512i n = _mm512_mask_mov_epi16(
            old, (__mmask32)(((UINT64_C(1) << (hi - lo)) - 1u) << (5u + lo)),
            _mm512_permutexvar_epi16(below, old));
        if (l == li) { /* the new entry, and its run's bits */
            n = _mm512_mask_set1_epi16(n, (__mmask32)(UINT32_C(1) << (4u + lo)), (short)s);
            e = (e & ~(UINT64_C(1) << lo)) | ((uint64_t)(last != 0) << lo);
            if (occ && last && lo > 0)
                e &= ~(UINT64_C(1) << (lo - 1u)); /* the entry before no longer ends the run */
        } else {
            n = _mm512_mask_set1_epi16(n, (__mmask32)(UINT32_C(1) << 4), (short)carry);
            e = (e & ~UINT64_C(1)) | carry_run;
        }
        hdr = ((w & ~(M28 << 36)) | (e << 36)) + (l > blk);
        if (l == li && !occ && l == blk)
            hdr |= UINT64_C(1) << (8u + a % S);
        carry = (uint64_t)(uint16_t)_mm_extract_epi16(_mm512_extracti32x4_epi32(old, 3), 7);
        carry_run = (ends >> (S - 1u)) & 1u;
        _mm512_store_si512((void *)p, _mm512_mask_set1_epi64(n, 1, (long long)hdr));
    }
    if (!occ && blk != li)
        *word_of(x, blk) |= UINT64_C(1) << (8u + a % S);
    else if (occ && last && ins % S == 0)
        set_run(x, ins - 1, 0);
}
#endif

/* The empty lanes of line l, one bit each. */
static inline uint32_t empty_lanes(const uint8_t *p)
{
#if defined(__AVX2__)
    const __m256i z = _mm256_setzero_si256();
    const uint64_t b =
        (uint64_t)(uint32_t)_mm256_movemask_epi8(
            _mm256_cmpeq_epi16(_mm256_load_si256((const __m256i *)(const void *)p), z)) |
        (uint64_t)(uint32_t)_mm256_movemask_epi8(
            _mm256_cmpeq_epi16(_mm256_load_si256((const __m256i *)(const void *)(p + 32)), z))
            << 32;
    return (uint32_t)__builtin_ia32_pext_di(b >> 8, UINT64_C(0x0055555555555555));
#else
    uint32_t r = 0, i;
    const uint16_t *ln = (const uint16_t *)(const void *)(p + 8u);
    for (i = 0; i < S; i++)
        r |= (uint32_t)(ln[i] == 0) << i;
    return r;
#endif
}

/* The first key of the range a long entry s holds (its bits from bit
 * 64 - sh of h on) in a slot whose keys begin at slot_lo: h's top bits are
 * slot_lo's, or one more when the range would end before the slot begins.
 * (For a short or void entry, a key to order it by only.) */
static inline uint64_t entry_first_key(uint16_t s, uint32_t sh, uint64_t slot_lo)
{
    const uint64_t mk = (uint64_t)(s & (uint16_t)-s);
    const uint64_t lo = (slot_lo & ~((UINT64_C(1) << sh) - 1u)) | ((uint64_t)(s ^ mk) << (sh - 16u));
    /* a mask, not a branch: which way it goes is a coin toss in growth's decode */
    return lo + ((UINT64_C(1) << sh) & -(uint64_t)(lo + ((mk << (sh - 15u)) - 1u) < slot_lo));
}

/* Entry s of key h into the run of slot a, before the first entry whose
 * range begins after h: AMQ_OK; 2 when the run has s already (the kind
 * removes nothing, so a second copy would only take a slot: a key added
 * again and again makes no run longer than one entry a growth);
 * AMQ_EFULL: no room (the table grows). */
static int insert_at(amq_qf *x, uint64_t a, uint16_t s, uint64_t h)
{
    const uint64_t blk = a / S;
    const uint32_t i = (uint32_t)(a % S);
    uint64_t *wp = word_of(x, blk), w = *wp, p0, ins, f, b2;
    const int occ = (int)((w >> (8u + i)) & 1u);
    const uint32_t t0 = (uint32_t)__builtin_popcountll((w >> 8) & M28 & ((UINT64_C(2) << i) - 1u));
    int last = 1; /* the new entry ends its run */
    p0 = blk * S + (w & 255u);
    if (occ) { /* from the run's start to its first entry after h, or past its end */
        const slot_keys keys = keys_of(x);
        const uint64_t slot_lo = slot_first_key(&keys, a);
        ins = t0 == 1 ? p0 : select_run(x, p0, t0 - 1) + 1;
        if (ins < a)
            ins = a;
        for (;; ins++) {
            if (ins >= x->lines * S)
                return AMQ_ECORRUPT;
            if (*lane_at(x, ins) == s)
                return 2; /* the same entry: it answers h already (nothing is removed) */
            if (entry_first_key(*lane_at(x, ins), 64u - x->k, slot_lo) > h) {
                last = 0;
                break;
            }
            if ((*word_of(x, ins / S) >> (36u + ins % S)) & 1u) {
                ins++;
                break;
            }
        }
    } else {
        ins = t0 == 0 ? p0 : select_run(x, p0, t0) + 1;
        if (ins < a)
            ins = a;
    }
    if (ins >= x->lines * S)
        return AMQ_EFULL;
    /* every line whose first slot is in (a, f] gets one more entry of an earlier slot: its
     * offset must have room; those up to ins's line first, the others as f is sought */
    for (b2 = blk + 1; b2 <= ins / S; b2++)
        if ((*word_of(x, b2) & 255u) == 255u)
            return AMQ_EFULL;
    {
        uint64_t l = ins / S;
        uint32_t e = empty_lanes(x->t + l * 64u) & (uint32_t)(M28 << (ins % S));
        while (e == 0) {
            if (++l >= x->lines || (*word_of(x, l) & 255u) == 255u)
                return AMQ_EFULL;
            e = empty_lanes(x->t + l * 64u);
        }
        f = l * S + (uint32_t)__builtin_ctz(e);
    }
    for (b2 = blk + 1; b2 < ins / S; b2++)
        (*word_of(x, b2))++;
    x->fill_pos = f;
#if defined(__AVX512BW__)
    shift_put(x, a, ins, f, s, last, occ);
#else
    shift_up(x, ins, f, blk);
    *lane_at(x, ins) = s;
    if (!occ)
        *wp |= UINT64_C(1) << (8u + i);
    else if (last)
        set_run(x, ins - 1, 0);
    set_run(x, ins, last); /* inside the run, ins kept the run bit of the entry now after it */
#endif
    return AMQ_OK;
}

/* ---- growth: every entry re-placed in order, a few hundred per add ------------------------
 * Growth reads x (the table being left) in position order and writes each
 * entry's places into y (the table m * growth) in slot order.  Between two
 * steps both tables are valid: keys below g->split are in y, the others in
 * x, and a query or an add goes to one of them.  An add into x never lands
 * before the reader (its slot is one not read yet, its run after the last
 * one read), and an add into y moves the writer's front (g->pos) when its
 * shift reaches it; each step takes the reader and the writer up again from
 * the tables. */

/* Has a copy equal to s been put in slot a already?  Places of one entry
 * that meet in one slot are kept once (else copies of short entries pile up
 * growth after growth); the kind removes nothing, so no count is kept. */
static int copy_seen(amq_qf_growth *g, uint64_t a, uint16_t s)
{
    uint32_t i;
    if (g->ncopies == 0 || g->copies_of != a) {
        g->copies_of = a;
        g->ncopies = 0;
    }
    for (i = 0; i < g->ncopies; i++)
        if (g->copies[i] == s)
            return 1;
    if (g->ncopies < 64)
        g->copies[g->ncopies++] = s;
    return 0;
}

/* A place of an entry in y: its slot and entry.  Places are written in
 * order of slots. */
typedef struct {
    uint64_t a;
    uint16_t s;
    uint16_t copy; /* one of several places of one entry (its prefix spans slots) */
} placed;

/* [lo, hi] into n ranges at d, sorted and apart, with room for one more:
 * joined with every range it meets or touches, so that they stay sorted
 * and apart, as ranges_have needs (a range inside another, after it, would
 * hide the outer one's keys past its own end).  The new count. */
static uint64_t ranges_put(uint64_t *d, uint64_t n, uint64_t lo, uint64_t hi)
{
    uint64_t i = 0, j, b = n;
    while (i < b) { /* the first range that ends at or past lo - 1 */
        const uint64_t mid = (i + b) / 2;
        if (d[2 * mid + 1] != UINT64_MAX && d[2 * mid + 1] + 1u < lo)
            i = mid + 1;
        else
            b = mid;
    }
    for (j = i; j < n && (hi == UINT64_MAX || d[2 * j] <= hi + 1u); j++) { /* those it meets */
        lo = d[2 * j] < lo ? d[2 * j] : lo;
        hi = d[2 * j + 1] > hi ? d[2 * j + 1] : hi;
    }
    /* ranges i to j - 1 become one; none (j = i): room for it at i */
    memmove(d + 2 * i + 2, d + 2 * j, (size_t)(2 * (n - j) * sizeof *d));
    d[2 * i] = lo;
    d[2 * i + 1] = hi;
    return n + 1u - (j - i);
}

/* A range of keys whose entries run out of bits in y (or a crowd's), into
 * the growth's list of them (y's second deep list: queries of y read it). */
static int growth_range(amq_qf_growth *g, uint64_t lo, uint64_t hi) /* AMQ_ENOMEM */
{
    if (g->nv == g->cap) {
        const uint64_t cap = g->cap ? 2 * g->cap : 256;
        uint64_t *v = amq_realloc(&g->y->alloc, g->voids, 2 * g->cap * sizeof *v,
                                  2 * cap * sizeof *v);
        if (v == NULL)
            return AMQ_ENOMEM;
        g->voids = v;
        g->cap = cap;
    }
    g->nv = ranges_put(g->voids, g->nv, lo, hi);
    g->y->deep2 = g->voids;
    g->y->ndeep2 = g->nv;
    return AMQ_OK;
}

/* (a step's: out of memory fails the step) */
static void add_void(amq_qf_growth *g, uint64_t lo, uint64_t hi)
{
    if (growth_range(g, lo, hi) != AMQ_OK)
        g->nomem = 1;
}

/* The entry in y for keys whose top p bits are lo's: p - k2 bits from bit
 * k2 when that is more than SHORT, else up to SHORT bits from bit k2 - 1 (a
 * short entry keeps the last bit of its slot's top bits: below). */
static inline uint16_t entry_for(const amq_qf *y, uint64_t lo, int32_t p)
{
    int32_t len = p - (int32_t)y->k;
    uint32_t from = y->k;
    if (len <= (int32_t)SHORT) {
        len = len + 1 > (int32_t)SHORT ? (int32_t)SHORT : len + 1;
        from = y->k - 1u;
    }
    if (len <= 0)
        return VOID_LANE;
    return (uint16_t)((((lo << from) >> (64u - (uint32_t)len)) << (16u - (uint32_t)len)) |
                      (UINT64_C(1) << (15u - (uint32_t)len)));
}

/* The keys entry s (not a void lane) of a slot of a table of k address bits
 * answers, when the slot's keys are h in [slot_lo, slot_hi]: up to two ranges
 * of h, each clipped to the slot, into r (its first key, last key, and 1
 * when clipped); *p, how many top bits of h the entry fixes.  A long entry
 * holds len bits of h from bit k on; h's top k bits are those of slot_lo or
 * one more (a slot is narrower than 2^(64-k)), so the entry stands for up to
 * two ranges.  A short one (SHORT bits or fewer) begins with bit k - 1, which
 * tells the two apart: without it, short entries met both ever more often
 * and their copies multiplied growth after growth. */
static uint32_t entry_ranges(uint32_t k, uint64_t slot_lo, uint64_t slot_hi, uint16_t s,
                             uint64_t r[2][3], int32_t *p)
{
    const uint32_t len = 15u - (uint32_t)__builtin_ctz(s), sh = 64u - k;
    const uint64_t c = slot_lo >> sh, bits = (uint64_t)(s >> (16u - len));
    uint64_t lo, hi;
    uint32_t nr = 0, t;
    if (len <= SHORT) {
        const uint64_t top = (c & 1u) == (bits >> (len - 1u)) ? c : c + 1u;
        *p = (int32_t)(k + len - 1u);
        lo = ((top << (len - 1u)) | (bits & ((UINT64_C(1) << (len - 1u)) - 1u))) << (64u - (uint32_t)*p);
        hi = lo + ((UINT64_C(1) << (64u - (uint32_t)*p)) - 1u);
        if (!(hi < slot_lo || lo > slot_hi)) {
            r[0][0] = lo < slot_lo ? slot_lo : lo;
            r[0][1] = hi > slot_hi ? slot_hi : hi;
            r[0][2] = lo < slot_lo || hi > slot_hi;
            nr = 1;
        }
        return nr;
    }
    *p = (int32_t)(k + len);
    for (t = 0; t < 2; t++) {
        if (t == 1 && c + 1 > (UINT64_MAX >> sh))
            break;
        lo = ((c + t) << sh) | (bits << (sh - len));
        hi = lo + ((UINT64_C(1) << (sh - len)) - 1u);
        if (hi < slot_lo || lo > slot_hi)
            continue;
        r[nr][0] = lo < slot_lo ? slot_lo : lo;
        r[nr][1] = hi > slot_hi ? slot_hi : hi;
        r[nr][2] = lo < slot_lo || hi > slot_hi;
        nr++;
    }
    return nr;
}

/* Entry s of a slot of x whose keys are h in [slot_lo, slot_hi]: where it
 * goes in y, each of its ranges (entry_ranges) placed in every slot of y
 * it meets. */
static __attribute__((noinline)) uint32_t replace(const amq_qf *x, amq_qf_growth *g,
                                                 uint64_t slot_lo, uint64_t slot_hi, uint16_t s,
                                                 placed *out, uint32_t room)
{
    const amq_qf *y = g->y;
    uint64_t lo, hi, a_lo, a_hi, ranges[2][3], d;
    uint32_t n = 0, nr, t;
    int32_t p = 0;
    uint16_t s2;
    if (s == VOID_LANE) { /* a void lane: its slot's part of every deep range that meets the slot */
        while (g->di < x->ndeep && x->deep[2 * g->di + 1] < slot_lo)
            g->di++;
        for (d = g->di; d < x->ndeep && x->deep[2 * d] <= slot_hi; d++) {
            lo = x->deep[2 * d] < slot_lo ? slot_lo : x->deep[2 * d];
            hi = x->deep[2 * d + 1] > slot_hi ? slot_hi : x->deep[2 * d + 1];
            a_lo = mulhi(lo, y->m);
            a_hi = mulhi(hi, y->m);
            if (n > 0 && out[n - 1].a == a_lo && out[n - 1].s == VOID_LANE)
                a_lo++; /* a void lane in that slot already: one sends every range there */
            if (a_lo <= a_hi && a_hi - a_lo >= room - n)
                return UINT32_MAX;
            for (; a_lo <= a_hi; a_lo++, n++) {
                out[n].a = a_lo;
                out[n].s = VOID_LANE;
                out[n].copy = 1;
            }
        }
        return n;
    }
    nr = entry_ranges(x->k, slot_lo, slot_hi, s, ranges, &p);
    for (t = 0; t < nr; t++) {
        const int clipped = nr > 1 || ranges[t][2] != 0;
        lo = ranges[t][0];
        hi = ranges[t][1];
        s2 = entry_for(y, lo, p);
        if (s2 == VOID_LANE) /* out of bits: the keys of this range go to the deep list */
            add_void(g, lo, hi);
        a_lo = mulhi(lo, y->m);
        a_hi = mulhi(hi, y->m);
        if (a_hi - a_lo >= room - n)
            return UINT32_MAX; /* no room for every place: the caller fails, nothing dropped */
        for (; a_lo <= a_hi; a_lo++, n++) {
            out[n].a = a_lo;
            out[n].s = s2;
            out[n].copy = (uint16_t)(clipped || s2 == VOID_LANE || a_hi != mulhi(lo, y->m));
        }
    }
    return n;
}

static int by_lo(const void *a, const void *b)
{
    const uint64_t u = *(const uint64_t *)a, v = *(const uint64_t *)b;
    return u < v ? -1 : u > v;
}

/* Two lists of deep ranges as one, sorted, joined where they meet (AMQ_ENOMEM). */
static int merge_deep(const amq_allocator *al, const uint64_t *a, uint64_t na, const uint64_t *b,
                      uint64_t nb, uint64_t **out, uint64_t *nout, uint64_t *cap)
{
    const uint64_t n = na + nb;
    uint64_t *all, i, w = 0;
    *out = NULL;
    *nout = *cap = 0;
    if (n == 0)
        return AMQ_OK;
    if ((all = amq_malloc(al, 2 * n * sizeof *all)) == NULL)
        return AMQ_ENOMEM;
    if (na)
        memcpy(all, a, 2 * na * sizeof *all);
    if (nb)
        memcpy(all + 2 * na, b, 2 * nb * sizeof *all);
    qsort(all, n, 2 * sizeof *all, by_lo);
    for (i = 0; i < n; i++) {
        if (w > 0 && (all[2 * w - 1] == UINT64_MAX || all[2 * i] <= all[2 * w - 1] + 1u)) {
            if (all[2 * i + 1] > all[2 * w - 1])
                all[2 * w - 1] = all[2 * i + 1];
            continue;
        }
        all[2 * w] = all[2 * i];
        all[2 * w + 1] = all[2 * i + 1];
        w++;
    }
    *out = all;
    *nout = w;
    *cap = n; /* the array's room, in pairs: its size when freed */
    return AMQ_OK;
}

/* The writer of y.  Places come in order of their first keys, so in order
 * of slots: an entry goes to the first free position from its slot on, and
 * a line's offset is known when the first place of a slot in it comes. */
typedef struct {
    uint8_t *t;
    uint64_t lines, total;
    uint64_t entries, pos; /* pos: one past the last entry of y */
    uint64_t last_a;       /* the last entry's slot while its run may go on (UINT64_MAX: none) */
    uint32_t last_j;       /* its lane in line end_line */
    uint64_t occ_line, occ_bits; /* occupied bits of a line, and run-end bits, */
    uint64_t end_line, end_bits; /* held until the entries move past it */
    uint64_t occ_first, end_first; /* the first slots of those two lines (no division a place) */
    uint64_t next_line;  /* the first line whose offset is not written yet */
    uint64_t next_first; /* and its first slot */
    int bad;
    int reopen; /* the step's first place: y's last run may be its slot's */
} encoder; /* no array in it, so that the compiler may keep it in registers */

/* The offsets of the lines whose first slot is at or before a: every entry
 * of an earlier slot is in y by now.  Set, not or-ed: an add into y may
 * have raised the offset of a line past the front already. */
static inline __attribute__((always_inline)) void enc_close(encoder *e, uint64_t a)
{
    while (e->next_first <= a && e->next_line < e->lines) {
        const uint64_t off = e->pos > e->next_first ? e->pos - e->next_first : 0;
        uint64_t *w = line_word(e->t, e->next_line);
        e->bad |= off > 255u;
        *w = (*w & ~UINT64_C(255)) | (off & 255u);
        e->next_line++;
        e->next_first += S;
    }
}

/* The step's first place, of slot a: if y has a run of a already (an
 * earlier step's, or an add's), it is y's last run and goes on. */
static inline __attribute__((always_inline)) void enc_reopen(encoder *e, uint64_t a)
{
    e->reopen = 0;
    if (e->pos > 0 && ((*line_word(e->t, a / S) >> (8u + a % S)) & 1u)) {
        const uint64_t p = e->pos - 1u;
        *line_word(e->t, p / S) &= ~(UINT64_C(1) << (36u + p % S));
        e->last_a = a;
        e->last_j = (uint32_t)(p % S);
        e->end_line = p / S;
        e->end_first = e->end_line * S;
        e->end_bits = 0;
    }
}

/* Entry s into slot a, after every entry of an earlier slot.  A line's
 * bits are held in registers while entries go into it. */
static inline __attribute__((always_inline)) void enc_put(encoder *e, uint64_t a, uint16_t s)
{
    uint64_t pos, al, pl;
    if (__builtin_expect(e->reopen, 0))
        enc_reopen(e, a);
    pos = e->pos > a ? e->pos : a;
    /* places come in order of slots and positions: most are in the lines of the last */
    al = a - e->occ_first < S ? e->occ_line : a / S;
    pl = pos - e->end_first < S ? e->end_line : pos / S;
    enc_close(e, a);
    /* past the table, or the first line not closed would need an offset over 255: the entry
     * is not written (y stays a valid table) and the growth is done again, larger */
    if (__builtin_expect((pos >= e->total) | (pos >= e->next_first + 255u), 0)) {
        e->bad = 1; /* (never: enc_fits said the chunk fits) */
        return;
    }
    /* the entry before ends its run when this one is of another slot */
    e->end_bits |= (uint64_t)((a != e->last_a) & (e->last_a != UINT64_MAX)) << e->last_j;
    if (__builtin_expect(pl != e->end_line, 0)) {
        *line_word(e->t, e->end_line) |= e->end_bits << 36;
        e->end_line = pl;
        e->end_first = pl * S;
        e->end_bits = 0;
    }
    if (__builtin_expect(al != e->occ_line, 0)) {
        *line_word(e->t, e->occ_line) |= e->occ_bits << 8;
        e->occ_line = al;
        e->occ_first = al * S;
        e->occ_bits = 0;
    }
    e->occ_bits |= UINT64_C(1) << (a - e->occ_first);
    e->last_j = (uint32_t)(pos - e->end_first);
    ((uint16_t *)(void *)(e->t + pl * 64u + 8u))[e->last_j] = s;
    e->last_a = a;
    e->pos = pos + 1u;
    e->entries++;
}

/* The end of a step: the last entry ends its run (the next step reopens it
 * if its slot goes on), the held bits go to the lines, and the lines whose
 * first slot is at or before `upto` get their offsets. */
static void enc_flush(encoder *e, uint64_t upto)
{
    uint64_t l;
    if (e->last_a != UINT64_MAX)
        e->end_bits |= UINT64_C(1) << e->last_j;
    e->last_a = UINT64_MAX;
    *line_word(e->t, e->end_line) |= e->end_bits << 36;
    *line_word(e->t, e->occ_line) |= e->occ_bits << 8;
    e->end_bits = e->occ_bits = 0;
    enc_close(e, upto);
    /* the lines the entries reach past them, for now (the next step sets them again): y is a
     * valid table between steps, for queries, adds and a save */
    for (l = e->next_line; l < e->lines && l * S < e->pos; l++) {
        uint64_t *w = line_word(e->t, l);
        const uint64_t off = e->pos - l * S;
        e->bad |= off > 255u;
        *w = (*w & ~UINT64_C(255)) | (off & 255u);
    }
}

/* Places in order of slots (a place of an entry spanning slots, a short
 * entry or a run not in order came out of it). */
static void sort_places(placed *p, uint32_t n)
{
    uint32_t i, v;
    for (i = 1; i < n; i++)
        for (v = i; v > 0 && p[v - 1].a > p[v].a; v--) {
            const placed t = p[v];
            p[v] = p[v - 1];
            p[v - 1] = t;
        }
}

/* Would y take the chunk?  The writer's positions without writing (every
 * place counted, copies too: at most a few more than are written): none
 * past the table, and no line whose offset is not set yet pushed more
 * than 255 slots (its 8 bits).  A chunk that does not fit is not written,
 * so y stays as it was, and the growth is done again, larger. */
static int enc_fits(const encoder *e, const placed *p, uint32_t n)
{
    uint64_t pos = e->pos, nf = e->next_first, q;
    uint32_t i;
    for (i = 0; i < n; i++) {
        while (nf <= p[i].a && nf < e->total)
            nf += S; /* enc_close's lines */
        q = pos > p[i].a ? pos : p[i].a;
        if (q >= e->total || q >= nf + 255u)
            return 0;
        pos = q + 1u;
    }
    return 1;
}

/* A chunk of places, in order of slots, into y.  The first place written
 * is enc_put's (it may go on with y's last run); the others are its work
 * with the writer's fields in locals and no check (step made it: the
 * reader's bound, else enc_fits): growth writes every entry of the table
 * again, most of an add's work. */
static __attribute__((noinline)) void enc_chunk(encoder *e, amq_qf_growth *g, const placed *p,
                                                uint32_t n)
{
    uint64_t cnt[16] = {0}; /* here, not y's: the lanes' stores could alias y's */
    uint64_t pos, last_a, occ_line, occ_bits, occ_first, end_line, end_bits, end_first;
    uint64_t next_line, next_first, written = 0;
    uint8_t *const t = e->t;
    const uint64_t lines = e->lines;
    uint32_t i, last_j;
    for (i = 0; i < n && p[i].copy && copy_seen(g, p[i].a, p[i].s); i++)
        ;
    if (i == n)
        return;
    enc_put(e, p[i].a, p[i].s);
    if (__builtin_expect(e->bad, 0))
        return; /* (never: enc_fits) */
    cnt[15u - (uint32_t)__builtin_ctz(p[i].s)]++;
    pos = e->pos;
    last_a = e->last_a;
    last_j = e->last_j;
    occ_line = e->occ_line;
    occ_bits = e->occ_bits;
    occ_first = e->occ_first;
    end_line = e->end_line;
    end_bits = e->end_bits;
    end_first = e->end_first;
    next_line = e->next_line;
    next_first = e->next_first;
    for (i++; i < n; i++) {
        const uint64_t a = p[i].a;
        const uint16_t s = p[i].s;
        uint64_t q;
        if (__builtin_expect(p[i].copy, 0) && copy_seen(g, a, s))
            continue;
        q = pos > a ? pos : a;
        while (next_first <= a && next_line < lines) { /* enc_close */
            uint64_t *w = line_word(t, next_line);
            *w = (*w & ~UINT64_C(255)) | ((pos > next_first ? pos - next_first : 0) & 255u);
            next_line++;
            next_first += S;
        }
        /* the entry before ends its run when this one is of another slot */
        end_bits |= (uint64_t)(a != last_a) << last_j;
        if (__builtin_expect(q - end_first >= S, 0)) {
            *line_word(t, end_line) |= end_bits << 36;
            end_line = q / S;
            end_first = end_line * S;
            end_bits = 0;
        }
        if (__builtin_expect(a - occ_first >= S, 0)) {
            *line_word(t, occ_line) |= occ_bits << 8;
            occ_line = a / S;
            occ_first = occ_line * S;
            occ_bits = 0;
        }
        occ_bits |= UINT64_C(1) << (a - occ_first);
        last_j = (uint32_t)(q - end_first);
        ((uint16_t *)(void *)(t + end_line * 64u + 8u))[last_j] = s;
        last_a = a;
        pos = q + 1u;
        written++;
        cnt[15u - (uint32_t)__builtin_ctz(s)]++;
    }
    e->pos = pos;
    e->last_a = last_a;
    e->last_j = last_j;
    e->occ_line = occ_line;
    e->occ_bits = occ_bits;
    e->occ_first = occ_first;
    e->end_line = end_line;
    e->end_bits = end_bits;
    e->end_first = end_first;
    e->next_line = next_line;
    e->next_first = next_first;
    e->entries += written;
    for (i = 0; i < 16; i++)
        g->y->cnt[i] += cnt[i];
}

#define ITEMS QF_STEP_ITEMS
_Static_assert(sizeof(placed) == QF_PLACE_BYTES, "a place is 16 bytes");

/* Where the reading of x stands within a step, and what it needs. */
typedef struct {
    const uint8_t *xt;
    uint64_t xlines;
    uint64_t nl;        /* the next line of x to read */
    uint32_t full;      /* the lanes of the line being read not read yet */
    uint64_t ends;      /* that line's run-end bits */
    const uint16_t *ln; /* and its lanes */
    uint64_t ol, ow;    /* the occupied-bit cursor: its line, and its bits from the slot read on */
    uint64_t ofirst, lfirst; /* ol's first slot, and the first position of the line being read */
    uint64_t prev;      /* the last place's slot */
    uint64_t last_pos;  /* the position of the last entry read */
    uint64_t f_hi, f_lo, q, lim, ym; /* x's reciprocal, here to stay in registers */
    uint32_t sh, dk;
    uint64_t next_slot; /* the slot after the last run read */
    uint64_t key_last;  /* places of keys past it are left out (grow_over's read of y) */
    uint32_t want;      /* places a step decodes before it stops at a slot's end */
    uint64_t wpos, push; /* the writer's positions for the places so far (as enc_fits) */
    int sorted, bad, done, corrupt;
} decoder;

/* A place of slot a after the others: are they still in order, and where
 * the writer would put it (as enc_fits does), how far past its slot. */
static inline __attribute__((always_inline)) void dec_track(decoder *d, uint64_t a)
{
    const uint64_t q = d->wpos > a ? d->wpos : a;
    d->sorted &= a >= d->prev;
    d->prev = a;
    d->push = q - a > d->push ? q - a : d->push;
    d->wpos = q + 1u;
}

/* x's entries from where d stands, as places in y, into buf: until a slot
 * of x ends with d->want places or more in buf, or x does.  An entry's slot
 * is the occupied slot whose run it is in (the cursor moves at each run
 * end).  A long entry whose range lies in its slot and in one slot of y
 * (the common case) is placed here, others by replace(). */
static inline __attribute__((always_inline)) uint32_t
decode_body(decoder *dp, const amq_qf *x, amq_qf_growth *g, placed *buf, const int plain)
{
    decoder d = *dp; /* a local: its fields stay in registers */
    uint32_t n = 0, k, i;
    uint64_t slot_lo, slot_hi;
    /* plain: constants the compiler folds, so fewer registers for the loop */
    if (plain) {
        d.dk = 0;
        d.lim = 0x800;
        d.key_last = UINT64_MAX;
    }
    for (;;) {
        if (d.full == 0) {
            const uint8_t *line;
            if (d.nl >= d.xlines) {
                d.done = 1;
                break;
            }
            line = d.xt + d.nl * 64u;
            d.ends = (*(const uint64_t *)(const void *)line >> 36) & M28;
            d.ln = (const uint16_t *)(const void *)(line + 8u);
            d.full = ~empty_lanes(line) & (uint32_t)M28;
            d.lfirst = d.nl * S;
            d.nl++;
            if (__builtin_expect(n + S > ITEMS, 0)) { /* no room for this line's places */
                d.bad = 1;
                break;
            }
            continue;
        }
        {
            const uint32_t j = (uint32_t)__builtin_ctz(d.full);
            const uint16_t s = d.ln[j];
            const uint64_t end = (d.ends >> j) & 1u, mk = (uint64_t)(s & (uint16_t)-s);
            uint64_t lo, wd1, est, canon;
            unsigned __int128 pa;
            d.full &= d.full - 1u;
            if (__builtin_expect(d.ow == 0, 0)) { /* an entry with no run: not a table */
                d.bad = d.corrupt = 1;
                break;
            }
            d.last_pos = d.lfirst + j;
            canon = d.ofirst + (uint64_t)__builtin_ctzll(d.ow);
            /* est is at most 2 under the slot's first key, and its last is at least est + q - 1:
             * a range inside [est + 2, est + q - 1] is inside the slot (others: replace()) */
            est = canon * d.f_hi + mulhi(canon, d.f_lo);
            lo = entry_first_key(s, d.sh, est); /* as a long entry */
            wd1 = (mk << (d.sh - 15u)) - 1u;
            pa = (unsigned __int128)lo * d.ym; /* the slot in y, and where in it */
            /* y's entry: the same bits, less the first when yk = xk + 1 (it is the slot's now) */
            buf[n].a = (uint64_t)(pa >> 64);
            buf[n].s = (uint16_t)(s << d.dk);
            buf[n].copy = 0;
            if (__builtin_expect((mk <= d.lim) & (lo - est - 2u <= d.q - 3u - wd1) &
                                     ((uint64_t)pa <= ~(wd1 * d.ym)) & (lo + wd1 <= d.key_last),
                                 1)) { /* long in y, in the slot, in one slot of y */
                dec_track(&d, (uint64_t)(pa >> 64));
                n++;
            } else {
                const slot_keys keys = keys_of(x);
                slot_keys_range(&keys, canon, &slot_lo, &slot_hi);
                if (slot_hi > d.key_last)
                    slot_hi = d.key_last;
                k = slot_lo > slot_hi ? 0 : replace(x, g, slot_lo, slot_hi, s, buf + n, ITEMS - n);
                if (k == UINT32_MAX) {
                    d.bad = 1; /* no room for every place: fail, nothing dropped */
                    break;
                }
                for (i = 0; i < k; i++)
                    dec_track(&d, buf[n + i].a);
                n += k;
            }
            d.ow &= d.ow - end;
            while (__builtin_expect(d.ow == 0, 0) && d.ol + 1 < d.xlines) {
                d.ow = (*(const uint64_t *)(const void *)(d.xt + ++d.ol * 64u) >> 8) & M28;
                d.ofirst = d.ol * S;
            }
            if (__builtin_expect(end & (n >= d.want), 0)) { /* a slot of x ends: a chunk is ready */
                d.next_slot = canon + 1u;
                break;
            }
        }
    }
    *dp = d;
    return n;
}

/* Most steps: y's entries as long as x's (no power of two passed) and no
 * key past which places are left out (grow_over's). */
static __attribute__((noinline)) uint32_t decode_plain(decoder *dp, const amq_qf *x,
                                                       amq_qf_growth *g, placed *buf)
{
    return decode_body(dp, x, g, buf, 1);
}

static __attribute__((noinline)) uint32_t decode(decoder *dp, const amq_qf *x, amq_qf_growth *g,
                                                 placed *buf)
{
    if (dp->dk == 0 && dp->key_last == UINT64_MAX)
        return decode_plain(dp, x, g, buf);
    return decode_body(dp, x, g, buf, 0);
}

/* The reader of x at g->rpos (and slot g->rslot), from the table: an add
 * into x since the last step may have moved what lies past it. */
static void dec_start(decoder *d, const amq_qf *x, const amq_qf_growth *g, uint32_t want)
{
    const slot_keys keys = keys_of(x);
    const uint64_t line = g->rpos / S;
    memset(d, 0, sizeof *d);
    d->xt = x->t; /* in fields: stores into the lines may alias the tables' */
    d->xlines = x->lines;
    d->f_hi = keys.f_hi;
    d->f_lo = keys.f_lo;
    d->q = UINT64_MAX / x->m; /* a slot's keys: q or more */
    d->sh = 64u - x->k;
    d->dk = g->y->k - x->k;
    d->lim = UINT64_C(0x800) >> d->dk; /* markers of entries long in y */
    d->ym = g->y->m;
    d->sorted = 1;
    d->prev = g->prev;
    d->want = want;
    d->wpos = g->pos;
    d->push = 0;
    d->key_last = g->key_last;
    d->last_pos = g->rpos - 1u;
    if (line < x->lines) {
        const uint8_t *p = x->t + line * 64u;
        d->ends = (*(const uint64_t *)(const void *)p >> 36) & M28;
        d->ln = (const uint16_t *)(const void *)(p + 8u);
        d->full = ~empty_lanes(p) & (uint32_t)(M28 & (M28 << (g->rpos % S)));
    }
    d->nl = line + 1u;
    d->lfirst = line * S;
    d->ol = g->rslot / S;
    if (d->ol < x->lines) {
        d->ow = (*word_of(x, d->ol) >> 8) & M28 & (M28 << (g->rslot % S));
        while (d->ow == 0 && d->ol + 1 < x->lines)
            d->ow = (*word_of(x, ++d->ol) >> 8) & M28;
    } else {
        d->ol = x->lines - 1u;
    }
    d->ofirst = d->ol * S;
}

/* The writer of y where the last step left it, and an add into y since
 * then (g->pos is past the last entry of y). */
static void enc_start(encoder *e, const amq_qf_growth *g)
{
    memset(e, 0, sizeof *e);
    e->t = g->y->t;
    e->lines = g->y->lines;
    e->total = g->y->lines * S;
    e->pos = g->pos;
    e->next_line = g->next_line;
    e->next_first = g->next_line * S;
    e->last_a = UINT64_MAX;
    e->end_line = e->occ_line = g->pos / S < e->lines ? g->pos / S : e->lines - 1u;
    e->end_first = e->occ_first = e->end_line * S;
    e->reopen = 1;
}

#if defined(__AVX512BW__) && defined(__BMI2__)
/* ---- a step a line of x at a time (AVX-512 with VBMI2 and VPOPCNTDQ) ------------------------
 * The step's common case, every entry of x long in y and its range inside one slot of x and
 * one of y (a bit shorter in y when the growth passes a power of two), worked out eight
 * entries at once: their slots in x from the line's run ends (a
 * rank per entry, the slot's first key taken from a list of the step's occupied slots), their
 * slots in y by multiplication, and their positions in y as a running maximum (a position is
 * max(the last + 1, its slot): position - index is the maximum of slot - index so far).  The
 * places are staged (lanes, run ends, occupied bits, offsets) and written to y at the end, so
 * that a step with any other entry, or one y could not take as it is, is declined with
 * nothing changed and done by decode() and enc_chunk(), which build the same bytes
 * (test_quotient compares them with the baseline's). */
#define QF_FAST_TARGET __attribute__((target("avx512dq,avx512vbmi2,avx512vpopcntdq")))
#define FW 4096u  /* positions (and slots) a fast step stages from its base */
#define FQ 1536u /* occupied slots of x a fast step reads */

typedef struct {
    uint16_t lanes[4 + FW + 64]; /* y's lanes from the base, after 4 (a line's header) */
    uint64_t ends[FW / 64 + 2];  /* run-end bits from the base */
    uint64_t occ[FW / 64 + 2];   /* occupied bits from the base */
    uint16_t off[FW / S + 2];    /* offsets of y's lines from next_line, as enc_close sets them */
    uint64_t est[FQ + 8];        /* the step's occupied slots of x: their first keys (about) */
    uint32_t slot[FQ + 8];       /* and the slots, from the step's first */
} fast_stage;
_Static_assert(sizeof(fast_stage) <= QF_STEP_ITEMS * QF_PLACE_BYTES, "the stage fits in g->buf");

static inline void stage_or(uint64_t *b, uint64_t at, uint64_t v) /* v < 2^32 */
{
    const uint64_t w = at >> 6, s = at & 63u;
    b[w] |= v << s;
    b[w + 1] |= (v >> 1) >> (63u - s); /* no branch: which way is a coin toss */
}

static inline uint64_t stage_get28(const uint64_t *b, uint64_t at)
{
    const uint64_t w = at >> 6, s = at & 63u;
    uint64_t v = b[w] >> s;
    if (s > 36)
        v |= b[w + 1] << (64u - s);
    return v & M28;
}

/* Byte counts by length (lens[0]: lengths 0, 2, .. 14; lens[1]: 1, 3, .. 15) into cnt. */
static inline void lens_add(uint64_t cnt[16], uint64_t lens[2])
{
    uint32_t i;
    for (i = 0; i < 8; i++) {
        cnt[2 * i] += (lens[0] >> (8 * i)) & 255u;
        cnt[2 * i + 1] += (lens[1] >> (8 * i)) & 255u;
    }
    lens[0] = lens[1] = 0;
}

/* The high words of the 128-bit products of eight pairs. */
static inline __m512i mulhi8(__m512i a, __m512i b)
{
    const __m512i a_hi = _mm512_srli_epi64(a, 32), b_hi = _mm512_srli_epi64(b, 32);
    const __m512i ll = _mm512_mul_epu32(a, b), lh = _mm512_mul_epu32(a, b_hi);
    const __m512i hl = _mm512_mul_epu32(a_hi, b), hh = _mm512_mul_epu32(a_hi, b_hi);
    const __m512i mid = _mm512_add_epi64(hl, _mm512_srli_epi64(ll, 32)); /* < 2^64 */
    const __m512i mid2 = _mm512_add_epi64(_mm512_and_si512(mid, _mm512_set1_epi64(0xffffffff)), lh);
    return _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(mid, 32)),
                            _mm512_srli_epi64(mid2, 32));
}

/* One step as step() would take it, when every entry of it is of the common case and y takes
 * it as it is: 1, the step done; 0, declined, nothing changed. */
static QF_FAST_TARGET __attribute__((noinline)) int fast_step(amq_qf *x, uint32_t want)
{
    amq_qf_growth *g = x->growth;
    amq_qf *y = g->y;
    fast_stage *st = g->buf;
    const uint8_t *xt = x->t;
    const uint64_t xlines = x->lines, ylines = y->lines, ytotal = ylines * S, ym = y->m;
    const uint64_t f_hi = x->recip_hi, f_lo = x->recip_lo, q = UINT64_MAX / x->m;
    const uint32_t sh = 64u - x->k;
    const uint64_t base = (g->prev / S) * S; /* every place's slot and position is at or past it */
    const uint64_t pos0 = g->pos, line0 = g->next_line;
    uint64_t qhead = 0, qtail = 0, ol, n = 0, l, next_line = g->next_line;
    uint64_t omask = M28 & (M28 << (g->rslot % S));
    const uint64_t slot0 = g->rslot;
    uint64_t last_a = UINT64_MAX, last_p = 0, first_a = UINT64_MAX, pos = pos0;
    uint64_t hi_a = g->prev, last_x = 0, stop_slot = 0, cnt[16] = {0}; /* places come in slot order */
    uint64_t lens[2] = {0, 0}; /* counts by length, a byte each: even lengths, odd */
    uint32_t nlens = 0;
    int64_t dprev = (int64_t)pos0;
    int ok = 0, done = 0, stop = 0, reopen = 0;
    int pb_end = 0; /* pb_: the last batch's last entry, where a step ends (pb_end: a run's end) */
    uint64_t pb_l = 0, pb_q = 0;
    uint32_t pb_i = 0, pb_U = 0, pb_Ec = 0;
    uint16_t sbuf[32] __attribute__((aligned(64)));
    uint32_t rbuf[32] __attribute__((aligned(64)));
    const __m512i lowmask = _mm512_set1_epi64((int64_t)~((UINT64_C(1) << sh) - 1u));
    const __m512i vym = _mm512_set1_epi64((int64_t)ym), vq3 = _mm512_set1_epi64((int64_t)(q - 3u));
    const __m512i two = _mm512_set1_epi64(2), one = _mm512_set1_epi64(1);
    const uint32_t dk = y->k - x->k; /* 1: a power of two passed, y's entries one bit shorter */
    const __m512i lim = _mm512_set1_epi64(0x800 >> dk), shbit = _mm512_set1_epi64((int64_t)(UINT64_C(1) << sh));
    const __m512i neg = _mm512_set1_epi64(INT64_MIN), iota = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i vfh = _mm512_set1_epi64((int64_t)f_hi), vfl = _mm512_set1_epi64((int64_t)f_lo);
    const __m512i vslot0 = _mm512_set1_epi64((int64_t)slot0);
    const __m512i below = _mm512_setr_epi32(0, 1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 4095,
                                            8191, 16383, 32767); /* entries before entry i */
    const __m512i below16 = _mm512_sub_epi32(
        _mm512_slli_epi32(_mm512_add_epi32(below, _mm512_set1_epi32(1)), 16), _mm512_set1_epi32(1));
    if (pos0 < base || (pos0 == base && pos0 > 0) || pos0 - base >= FW / 2)
        return 0; /* (a loaded growth's writer before its last place: decode() says so) */
    memset(st->ends, 0, sizeof st->ends); /* g->buf held decode()'s places, maybe */
    memset(st->occ, 0, sizeof st->occ);
    /* x's occupied slots from the reader's on */
    ol = g->rslot / S;
    for (l = g->rpos / S; l < xlines && !stop; l++) {
        const uint8_t *line = xt + l * 64u;
        const uint64_t w = *(const uint64_t *)(const void *)line;
        const __m512i X = _mm512_load_si512((const void *)line);
        uint32_t U = (uint32_t)(_mm512_test_epi16_mask(X, X) >> 4) & (uint32_t)M28, E, Ec, k;
        uint64_t qline;
        if (l == g->rpos / S)
            U &= (uint32_t)(M28 << (g->rpos % S));
        if (U == 0)
            continue;
        E = (uint32_t)__builtin_popcount(U);
        Ec = (uint32_t)_pext_u64((w >> 36) & M28, U); /* run ends, in order of the entries */
        _mm512_store_si512((void *)sbuf, _mm512_maskz_compress_epi16((__mmask32)U << 4, X));
        {
            const __m512i b = _mm512_set1_epi32((int)Ec), qh = _mm512_set1_epi32((int)qhead);
            _mm512_store_si512((void *)rbuf,
                               _mm512_add_epi32(_mm512_popcnt_epi32(_mm512_and_si512(b, below)), qh));
            _mm512_store_si512((void *)(rbuf + 16),
                               _mm512_add_epi32(_mm512_popcnt_epi32(_mm512_and_si512(b, below16)), qh));
        }
        { /* the occupied slots this line's entries are of, a line of them at a time */
            const uint64_t need = qhead + (uint64_t)__builtin_popcount(Ec & ((1u << (E - 1u)) - 1u));
            while (qtail <= need) {
                uint64_t O;
                uint32_t g8;
                if (ol >= xlines || qtail + 32u > FQ)
                    goto out; /* an entry with no run (not a table: decode() says so), or a long step */
                O = (*(const uint64_t *)(const void *)(xt + ol * 64u) >> 8) & omask;
                for (g8 = 0; g8 < 4; g8++) {
                    const __mmask8 mg = (__mmask8)(O >> (8 * g8));
                    const __m512i cc = _mm512_maskz_compress_epi64(
                        mg, _mm512_add_epi64(_mm512_set1_epi64((int64_t)(ol * S + 8 * g8)), iota));
                    _mm512_storeu_si512(st->est + qtail,
                                        _mm512_add_epi64(_mm512_mullo_epi64(cc, vfh), mulhi8(cc, vfl)));
                    _mm256_storeu_si256((__m256i *)(void *)(st->slot + qtail),
                                        _mm512_cvtepi64_epi32(_mm512_sub_epi64(cc, vslot0)));
                    qtail += (uint64_t)__builtin_popcount((uint32_t)mg);
                }
                omask = M28;
                ol++;
            }
        }
        qline = qhead;
        qhead += (uint64_t)__builtin_popcount(Ec);
        for (k = 0; k * 8u < E; k++) {
            uint32_t v = E - k * 8u < 8u ? E - k * 8u : 8u, i;
            const __m512i s = _mm512_cvtepu16_epi64(
                _mm_load_si128((const __m128i *)(const void *)(sbuf + 8 * k)));
            /* the eight entries' slots are at most eight runs from the first's: their first
             * keys by a permutation of eight of the ring (a gather waited far longer) */
            const uint32_t r0 = rbuf[8 * k];
            const __m512i est = _mm512_permutexvar_epi64(
                _mm512_cvtepu32_epi64(_mm256_sub_epi32(
                    _mm256_load_si256((const __m256i *)(const void *)(rbuf + 8 * k)),
                    _mm256_set1_epi32((int)r0))),
                _mm512_loadu_si512(st->est + r0));
            const __m512i mk = _mm512_and_si512(s, _mm512_sub_epi64(_mm512_setzero_si512(), s));
            const __m512i lo0 = _mm512_or_si512(_mm512_and_si512(est, lowmask),
                                                _mm512_slli_epi64(_mm512_xor_si512(s, mk), sh - 16u));
            const __m512i wd1 = _mm512_sub_epi64(_mm512_slli_epi64(mk, sh - 15u), one);
            const __mmask8 wrap = _mm512_cmplt_epu64_mask(_mm512_add_epi64(lo0, wd1), est);
            const __m512i lo = _mm512_mask_add_epi64(lo0, wrap, lo0, shbit); /* entry_first_key */
            const __m512i a = mulhi8(lo, vym);
            const __m512i g8 = _mm512_add_epi64(_mm512_set1_epi64((int64_t)n), iota);
            uint64_t pl[8], al[8], ends_x, M, Mo, endb, rel, arel;
            __mmask8 valid, fast;
            __m512i t, p;
            fast = _mm512_cmple_epu64_mask(mk, lim) &
                   _mm512_cmple_epu64_mask(_mm512_sub_epi64(_mm512_sub_epi64(lo, est), two),
                                           _mm512_sub_epi64(vq3, wd1)) &
                   _mm512_cmple_epu64_mask(_mm512_mullo_epi64(lo, vym),
                                           _mm512_xor_si512(_mm512_mullo_epi64(wd1, vym),
                                                            _mm512_set1_epi64(-1)));
            /* eight entries of one slot of y: a crowded slot, maybe, which decode() takes */
            if (v == 8u && _mm512_cmpeq_epu64_mask(a, _mm512_permutexvar_epi64(
                                                         _mm512_setzero_si512(), a)) == 0xffu)
                fast &= (__mmask8)0xfeu;
            /* the step ends at the first run end of x from its want-th entry on */
            ends_x = (Ec >> (8 * k)) & ((1u << v) - 1u);
            if (n + v >= want) {
                const uint64_t from = n >= want ? 0 : want - n - 1u;
                const uint64_t e = ends_x & ~((UINT64_C(1) << from) - 1u);
                if (e != 0) {
                    v = (uint32_t)__builtin_ctzll(e) + 1u;
                    stop = 1;
                }
            }
            valid = (__mmask8)((1u << v) - 1u);
            if ((fast & valid) != valid) { /* an entry for replace(), decode()'s: the step */
                const uint32_t before = (1u << __builtin_ctz(~(uint32_t)fast & valid)) - 1u;
                if ((uint32_t)ends_x & before) { /* ends at the last run end before it */
                    v = 32u - (uint32_t)__builtin_clz((uint32_t)ends_x & before);
                    valid = (__mmask8)((1u << v) - 1u);
                    stop = 1;
                } else if (pb_end) { /* or at the last batch's end, which ends a run */
                    stop = 1;
                    break;
                } else {
                    goto out; /* (no run ends before it in the step) */
                }
            }
            t = _mm512_mask_sub_epi64(neg, valid, a, g8);
            t = _mm512_max_epi64(t, _mm512_alignr_epi64(t, neg, 7));
            t = _mm512_max_epi64(t, _mm512_alignr_epi64(t, neg, 6));
            t = _mm512_max_epi64(t, _mm512_alignr_epi64(t, neg, 4));
            t = _mm512_max_epi64(t, _mm512_set1_epi64(dprev));
            dprev = _mm_extract_epi64(_mm512_extracti32x4_epi32(t, 3), 1);
            p = _mm512_add_epi64(t, g8);
            _mm512_storeu_si512(pl, p);
            _mm512_storeu_si512(al, a);
            if (first_a == UINT64_MAX) {
                first_a = al[0];
                /* enc_reopen: y's last run is of this slot, and goes on */
                if (pos0 > 0 && ((*line_word(y->t, first_a / S) >> (8u + first_a % S)) & 1u)) {
                    last_a = first_a;
                    last_p = pos0 - 1u;
                    reopen = 1;
                }
            }
            if (al[0] < hi_a || _mm512_mask_cmplt_epu64_mask((__mmask8)(valid >> 1),
                                                             _mm512_alignr_epi64(a, a, 1), a))
                goto out; /* not in order of slots: decode() sorts */
            /* every place within the stage, under 255 past its slot, and in y */
            rel = pl[v - 1] - pl[0];
            arel = al[v - 1] - al[0];
            if (pl[v - 1] - base >= FW || pl[v - 1] >= ytotal || rel >= 32 || arel >= 32 ||
                _mm512_mask_cmpge_epu64_mask(valid, _mm512_sub_epi64(p, a), _mm512_set1_epi64(255)))
                goto out;
            /* the lines whose first slot these places reach: their offsets (enc_close) */
            while (next_line * S <= al[v - 1] && next_line < ylines) {
                const uint64_t f = next_line * S;
                const uint32_t j = (uint32_t)__builtin_popcount(
                    _mm512_mask_cmplt_epu64_mask(valid, a, _mm512_set1_epi64((int64_t)f)));
                const uint64_t pt = j == 0 ? pos : pl[j - 1] + 1u;
                if (next_line - line0 >= FW / S)
                    goto out;
                st->off[next_line - line0] = (uint16_t)(pt > f ? pt - f : 0);
                next_line++;
            }
            M = (uint64_t)_mm512_mask_reduce_or_epi64(
                valid, _mm512_sllv_epi64(one, _mm512_sub_epi64(p, _mm512_set1_epi64((int64_t)pl[0]))));
            Mo = (uint64_t)_mm512_mask_reduce_or_epi64(
                valid, _mm512_sllv_epi64(one, _mm512_sub_epi64(a, _mm512_set1_epi64((int64_t)al[0]))));
            /* run ends of the places but the last: the next one is of another slot */
            endb = (uint64_t)_mm512_mask_cmpneq_epu64_mask((__mmask8)(valid >> 1), a,
                                                            _mm512_alignr_epi64(a, a, 1));
            if (last_a != UINT64_MAX)
                stage_or(st->ends, last_p - base, al[0] != last_a);
            for (i = 0; pos + 32u * i + 32u <= pl[0]; i++) /* a long gap's empty positions */
                _mm512_storeu_si512(st->lanes + 4 + (pos + 32u * i - base), _mm512_setzero_si512());
            { /* the places, and the empty positions from the last place on */
                const uint64_t z = pos + 32u * i, gap = pl[0] - z;
                const __m128i s16 = _mm_slli_epi16(
                    _mm_load_si128((const __m128i *)(const void *)(sbuf + 8 * k)), (int)dk);
                const __m512i ex = _mm512_maskz_expand_epi16((__mmask32)M, _mm512_castsi128_si512(s16));
                _mm512_mask_storeu_epi16(st->lanes + 4 + (z - base),
                                         (__mmask32)((UINT64_C(1) << gap) - 1u), _mm512_setzero_si512());
                _mm512_mask_storeu_epi16(st->lanes + 4 + (pl[0] - base),
                                         (__mmask32)((UINT64_C(2) << rel) - 1u), ex);
            }
            stage_or(st->ends, pl[0] - base, _pdep_u64(endb, M));
            stage_or(st->occ, al[0] - base, Mo);
            { /* entries by length (15 less the marker's bit): a nibble a length, summed over the
               * lanes, with no branch (about half the entries are shorter than 15 bits) */
                const __m512i at = _mm512_sub_epi64(
                    _mm512_set1_epi64(60 - 4 * (int)dk),
                    _mm512_slli_epi64(_mm512_popcnt_epi64(_mm512_sub_epi64(mk, one)), 2));
                const __m512i nb = _mm512_maskz_sllv_epi64(valid, one, at);
                const __m256i h4 = _mm256_add_epi64(_mm512_castsi512_si256(nb),
                                                    _mm512_extracti64x4_epi64(nb, 1));
                const __m128i h2 = _mm_add_epi64(_mm256_castsi256_si128(h4),
                                                 _mm256_extracti128_si256(h4, 1));
                /* summed unsigned: eight 15-bit entries make 2^63 (the header's reduce_add
                 * sums signed) */
                const uint64_t h = (uint64_t)_mm_cvtsi128_si64(h2) + (uint64_t)_mm_extract_epi64(h2, 1);
                lens[0] += h & UINT64_C(0x0f0f0f0f0f0f0f0f); /* a byte a length, 8 at most a batch */
                lens[1] += (h >> 4) & UINT64_C(0x0f0f0f0f0f0f0f0f);
                if (++nlens == 31u) {
                    lens_add(cnt, lens);
                    nlens = 0;
                }
            }
            last_a = al[v - 1];
            last_p = pl[v - 1];
            hi_a = last_a;
            pos = last_p + 1u;
            n += v;
            pb_end = (int)((ends_x >> (v - 1u)) & 1u);
            pb_l = l;
            pb_i = 8 * k + v - 1u;
            pb_U = U;
            pb_Ec = Ec;
            pb_q = qline;
            if (stop)
                break;
            last_x = l * S + 31u - (uint32_t)__builtin_clz(U);
        }
    }
    if (stop) { /* the last place's slot in x, and its lane */
        last_x = pb_l * S + (uint64_t)__builtin_ctzll(_pdep_u64(UINT64_C(1) << pb_i, pb_U));
        stop_slot =
            slot0 + st->slot[pb_q + (uint64_t)__builtin_popcount(pb_Ec & ((1u << pb_i) - 1u))];
    } else {
        done = 1; /* x read to its end */
    }
    ok = 1;
out:
    if (ok) { /* the stage into y */
        uint64_t li, upto;
        uint8_t *yt = y->t;
        encoder e;
        if (last_a != UINT64_MAX)
            stage_or(st->ends, last_p - base, 1); /* the last place ends its run (enc_flush) */
        if (reopen) { /* y's last entry no longer ends its run */
            const uint64_t pp = pos0 - 1u;
            *line_word(yt, pp / S) &= ~(UINT64_C(1) << (36u + pp % S));
        }
        for (li = base / S; li * S < (pos > hi_a + 1u ? pos : hi_a + 1u); li++) {
            const uint64_t f = li * S, from = pos0 > f ? pos0 - f : 0;
            const uint64_t to = pos < f + S ? (pos > f ? pos - f : 0) : S;
            uint64_t *wd = line_word(yt, li);
            *wd |= stage_get28(st->occ, f - base) << 8 | stage_get28(st->ends, f - base) << 36;
            if (from < to) { /* the lanes of places: y's are empty from pos0 on */
                const __mmask32 lm = (__mmask32)(((UINT64_C(1) << to) - (UINT64_C(1) << from)) << 4);
                _mm512_mask_storeu_epi16(yt + li * 64u, lm,
                                         _mm512_maskz_loadu_epi16(lm, st->lanes + (f - base)));
            }
        }
        for (li = line0; li < next_line; li++) {
            uint64_t *wd = line_word(yt, li);
            *wd = (*wd & ~UINT64_C(255)) | st->off[li - line0];
        }
        lens_add(cnt, lens);
        for (li = 0; li < 16; li++)
            y->cnt[li] += cnt[li];
        g->read += n;
        if (n > 0) {
            g->rpos = last_x + 1u;
            g->prev = last_a;
        }
        g->pos = pos;
        g->next_line = next_line;
        enc_start(&e, g); /* the writer where the stage left it, for enc_flush */
        if (done) {
            g->rslot = x->m;
            g->split = UINT64_MAX;
            upto = UINT64_MAX;
        } else {
            const slot_keys keys = keys_of(x);
            g->rslot = stop_slot + 1u;
            g->split = g->rslot >= x->m ? UINT64_MAX : slot_first_key(&keys, g->rslot);
            upto = g->rslot >= x->m ? UINT64_MAX : mulhi(g->split, ym);
        }
        enc_flush(&e, upto);
        g->pos = e.pos;
        g->next_line = e.next_line;
        y->entries += n;
        g->done = done;
    }
    return ok;
}
#undef FW
#undef FQ
#endif

/* The places of slot a of y from buf[at] on (every one of them: places come
 * in order of slots) become one void lane, and the keys their entries
 * answer the growth's new ranges (the deep list): a crowded run (keys
 * crowded into one slot, chosen against a known seed or by a weak hash)
 * shortened to one lane.  Else it would stay as long growth after growth,
 * and a run that fits this table may not fit the next, where its slot has
 * another place in its line: a growth that could never end.  n less. */
static void collapse_slot(amq_qf_growth *g, placed *buf, uint32_t *n, uint32_t at)
{
    const amq_qf *y = g->y;
    const slot_keys keys = keys_of(y);
    uint64_t r[2][3], slot_lo, slot_hi;
    uint32_t j, nr, t;
    int32_t p;
    slot_keys_range(&keys, buf[at].a, &slot_lo, &slot_hi);
    for (j = at; j < *n && buf[j].a == buf[at].a; j++) {
        if (buf[j].s == VOID_LANE)
            continue; /* its keys are in a deep range already */
        nr = entry_ranges(y->k, slot_lo, slot_hi, buf[j].s, r, &p);
        for (t = 0; t < nr; t++)
            add_void(g, r[t][0], r[t][1]);
    }
    buf[at].s = VOID_LANE;
    buf[at].copy = 1; /* (one void lane a slot: enc_chunk keeps the first) */
    memmove(buf + at + 1, buf + j, (size_t)(*n - j) * sizeof *buf);
    *n -= j - at - 1u;
}

/* The first place of the slot with the most entries (void lanes not
 * counted), and how many: *most. */
static uint32_t most_crowded(const placed *buf, uint32_t n, uint32_t *most)
{
    uint32_t i, j, run, at = 0;
    *most = 0;
    for (i = 0; i < n; i = j) {
        for (j = i, run = 0; j < n && buf[j].a == buf[i].a; j++)
            run += buf[j].s != VOID_LANE;
        if (run > *most) {
            *most = run;
            at = i;
        }
    }
    return at;
}

/* A step by decode() and the encoder, any entry (step() says what it returns). */
static int step_decoded(amq_qf *x, uint32_t want, placed *buf)
{
    amq_qf_growth *g = x->growth;
    const uint64_t di = g->di; /* decode moves it: a step not written reads its ranges again */
    decoder d;
    encoder e;
    uint32_t n;
    dec_start(&d, x, g, want);
    enc_start(&e, g);
    n = decode(&d, x, g, buf);
    if (d.bad || g->nomem) {
        g->di = di;
        return g->nomem ? AMQ_ENOMEM : d.corrupt ? AMQ_ECORRUPT : AMQ_EFULL;
    }
    if (!d.sorted)
        sort_places(buf, n);
    /* in order, no place pushed 255 past its slot (so none past the first line whose offset
     * is not set, which begins after it) and none past the table: it fits, as enc_fits
     * would find place by place */
    if (d.push + 1u >= QF_CROWD) { /* a run pushed as far may be a crowded slot's */
        uint32_t most, at = most_crowded(buf, n, &most), tries = 0;
        while (most >= QF_CROWD || (!enc_fits(&e, buf, n) && most >= 2 && tries++ < 8)) {
            collapse_slot(g, buf, &n, at);
            at = most_crowded(buf, n, &most);
        }
        /* a band of slots, each under QF_CROWD, still pushing past 255: every slot of the
         * chunk with two places or more made one void lane, so that the chunk fits (else
         * grow_over read table upon table for one band, a rewrite inside one add each) */
        if (most >= 2 && !enc_fits(&e, buf, n))
            for (at = 0; at + 1u < n; at++)
                if (buf[at + 1u].a == buf[at].a)
                    collapse_slot(g, buf, &n, at);
        if (g->nomem) {
            g->di = di;
            return AMQ_ENOMEM;
        }
    }
    if (!(d.sorted && d.push < 255u && d.wpos <= e.total) && !enc_fits(&e, buf, n)) {
        g->di = di;
        return AMQ_EFULL; /* nothing written, the reader where it was: grow_over */
    }
    enc_chunk(&e, g, buf, n);
    g->read += n;
    g->rpos = d.last_pos + 1u;
    g->rslot = d.next_slot;
    g->prev = d.prev;
    if (d.done) {
        g->rslot = x->m;
        g->split = UINT64_MAX;
        enc_flush(&e, UINT64_MAX);
    } else {
        const slot_keys keys = keys_of(x);
        g->split = g->rslot >= x->m ? UINT64_MAX : slot_first_key(&keys, g->rslot);
        enc_flush(&e, g->rslot >= x->m ? UINT64_MAX : mulhi(g->split, g->y->m));
    }
    g->pos = e.pos;
    g->next_line = e.next_line;
    g->y->entries += e.entries;
    g->done = d.done;
    return e.bad ? AMQ_ECORRUPT : AMQ_OK; /* (never: enc_fits) */
}

/* One step: want places or more from x into y, ended at a slot of x.
 * AMQ_OK; AMQ_EFULL when y cannot take them (an offset past 255: the growth
 * is done again, larger, by grow_over); AMQ_ENOMEM.  Fast steps where they
 * can: one ends early, before an entry only decode() takes, whose run
 * decode() then takes alone (want 1), so that the rare such entry does not
 * send a whole step there. */
static int step(amq_qf *x, uint32_t want, placed *buf)
{
#if defined(__AVX512BW__) && defined(__BMI2__)
    amq_qf_growth *g = x->growth;
    const uint64_t read0 = g->read;
    int rc;
    if (g->y->k - x->k <= 1u && g->key_last == UINT64_MAX &&
        amq_cpu_has(AMQ_CPU_AVX512DQ | AMQ_CPU_AVX512VBMI2 | AMQ_CPU_AVX512VPOPCNTDQ)) {
        while (fast_step(x, (uint32_t)(want - (g->read - read0)))) {
            if (g->done || g->read - read0 >= want)
                return AMQ_OK;
            if ((rc = step_decoded(x, 1u, buf)) != AMQ_OK || g->done || g->read - read0 >= want)
                return rc;
        }
    }
    return step_decoded(x, want - (uint32_t)(g->read - read0), buf);
#else
    return step_decoded(x, want, buf);
#endif
}

/* A growth to m2 slots: y allocated (its pages are touched as it is written). */
static int growth_begin(amq_qf *x, uint64_t m2)
{
    amq_qf_growth *g = amq_calloc(&x->alloc, sizeof *g);
    if (g == NULL)
        return AMQ_ENOMEM;
    x->growth = g;
    if ((g->y = amq_qf_new_like(x)) == NULL ||
        (g->buf = amq_malloc(&x->alloc, QF_STEP_ITEMS * QF_PLACE_BYTES)) == NULL) {
        amq_qf_growth_free(x);
        return AMQ_ENOMEM;
    }
    amq_qf_set_m(g->y, m2);
    if (amq_qf_alloc_table(g->y) != AMQ_OK) {
        amq_qf_growth_free(x);
        return AMQ_ENOMEM;
    }
    g->y->deep = x->deep; /* the ranges of x's void lanes, which y's copy */
    g->y->ndeep = x->ndeep;
    g->split = 0; /* nothing read yet: every key is in x */
    g->key_last = UINT64_MAX;
    return AMQ_OK;
}

/* y becomes x's table. */
static int growth_end(amq_qf *x)
{
    amq_qf_growth *g = x->growth;
    amq_qf *y = g->y;
    uint64_t *deep, ndeep, cap;
    uint32_t l;
    if (merge_deep(&x->alloc, x->deep, x->ndeep, g->voids, g->nv, &deep, &ndeep, &cap) != AMQ_OK)
        return AMQ_ENOMEM;
    if (x->deep_owned)
        amq_free(&x->alloc, x->deep, 2 * x->deep_cap * sizeof *x->deep);
    x->deep = deep;
    x->ndeep = ndeep;
    x->deep_cap = cap;
    x->deep_owned = deep != NULL;
    amq_region_free(&x->table, &x->alloc);
    x->table = y->table;
    memset(&y->table, 0, sizeof y->table);
    amq_qf_set_m(x, y->m);
    x->t = x->table.data;
    x->entries = y->entries;
    for (l = 0; l < 16; l++)
        x->cnt[l] = y->cnt[l];
    x->grows++;
    x->rewritten += g->read;
    amq_qf_growth_free(x);
    return AMQ_OK;
}

/* A step that failed (y could not take a place) leaves every key in y or
 * in x past the reader.  Both are read again into a table larger than y:
 * y whole (its keys are those below the split), then x from the reader on,
 * as the growth goes on, into the new table. */
static int grow_over(amq_qf *x)
{
    amq_qf_growth *g = x->growth, *g2;
    amq_qf *y = g->y;
    uint64_t *deep, ndeep, cap, *u, nu, ucap;
    double f = QF_GROWTH;
    int rc = AMQ_EFULL, tries;
    /* a table grown again and again while x's next chunk still does not fit (keys crowded
     * into a slot): refused, not grown without end */
    if (y->m / 4u > x->m)
        return AMQ_EFULL;
    /* y's void lanes stand for x's deep ranges and the growth's */
    if (merge_deep(&x->alloc, x->deep, x->ndeep, g->voids, g->nv, &deep, &ndeep, &cap) != AMQ_OK)
        return AMQ_ENOMEM;
    y->deep = deep;
    y->ndeep = ndeep;
    y->deep2 = NULL;
    y->ndeep2 = 0;
    for (tries = 0; tries < 8 && rc == AMQ_EFULL; tries++, f *= QF_GROWTH) {
        const double want = (double)y->m * f + 1.0;
        if (!(want < (double)QF_MAX_SLOTS)) {
            rc = AMQ_ELIMIT;
            break;
        }
        y->growth = NULL;
        if ((rc = growth_begin(y, (uint64_t)want)) != AMQ_OK)
            break;
        /* y's keys are those below the split: its entries' ranges are cut there, so that x's
         * places, from the split on, come after them */
        if (g->split == 0)
            y->growth->rpos = y->lines * S;
        else
            y->growth->key_last = g->split - 1u;
        while ((rc = step(y, QF_STEP, y->growth->buf)) == AMQ_OK && !y->growth->done)
            ;
        if (rc != AMQ_OK)
            amq_qf_growth_free(y);
    }
    if (rc != AMQ_OK) {
        amq_free(&x->alloc, deep, 2 * cap * sizeof *deep);
        y->deep = x->deep;
        y->ndeep = x->ndeep;
        y->deep2 = g->voids;
        y->ndeep2 = g->nv;
        return rc;
    }
    /* y is read into y->growth's table: that growth's writer goes on with x's reader */
    g2 = y->growth;
    y->growth = NULL;
    if (merge_deep(&x->alloc, deep, ndeep, g2->voids, g2->nv, &u, &nu, &ucap) != AMQ_OK) {
        amq_free(&x->alloc, deep, 2 * cap * sizeof *deep);
        x->growth = g2;
        amq_qf_growth_free(x); /* the new table goes; x's growth into y stands */
        x->growth = g;
        y->deep = x->deep;
        y->ndeep = x->ndeep;
        y->deep2 = g->voids;
        y->ndeep2 = g->nv;
        return AMQ_ENOMEM;
    }
    amq_free(&x->alloc, deep, 2 * cap * sizeof *deep);
    amq_free(&x->alloc, g2->voids, 2 * g2->cap * sizeof *g2->voids);
    g2->voids = u; /* every range y's void lanes stood for, and the new ones */
    g2->nv = nu;
    g2->cap = ucap;
    g2->y->deep = x->deep;
    g2->y->ndeep = x->ndeep;
    g2->y->deep2 = u;
    g2->y->ndeep2 = nu;
    g2->rpos = g->rpos;
    g2->rslot = g->rslot;
    g2->split = g->split;
    g2->di = g->di;
    g2->done = 0;
    g2->key_last = UINT64_MAX;
    g2->read = g->read;
    /* reading y to its end set every line's offset; those past the last slot written and the
     * split's are set again as x's places come (their slots are at or after both) */
    {
        const uint64_t upto = g->split == UINT64_MAX ? UINT64_MAX : mulhi(g->split, g2->y->m);
        const uint64_t last = g2->prev > upto ? g2->prev : upto;
        if (last / S + 1u < g2->next_line)
            g2->next_line = last / S + 1u;
    }
    x->growth = g;
    y->deep = NULL;
    y->ndeep = 0;
    amq_qf_growth_free(x); /* y and the old growth */
    x->growth = g2;
    return AMQ_OK;
}

/* Steps until x is read, then y becomes x's table. */
static int growth_finish(amq_qf *x)
{
    int rc;
    while (!x->growth->done) {
        rc = step(x, QF_STEP, x->growth->buf);
        if (rc == AMQ_EFULL)
            rc = grow_over(x);
        if (rc != AMQ_OK)
            return rc;
    }
    return growth_end(x);
}

/* A growth begins when the table is full; each place then moves
 * QF_STEP entries or more, so a growth ends about m / QF_STEP adds later,
 * x then at most a few tenths of a percent fuller. */
static int grow_start(amq_qf *x)
{
    const double want = (double)x->m * QF_GROWTH + 1.0;
    uint64_t m2;
    if (!(want < (double)QF_MAX_SLOTS))
        return AMQ_ELIMIT;
    m2 = (uint64_t)want;
    if (amq_qf_rate_after_growth(x, m2) > x->fpp)
        return AMQ_ELIMIT;
    return growth_begin(x, m2);
}

static int grow_step(amq_qf *x)
{
    int rc = step(x, QF_STEP, x->growth->buf);
    if (rc == AMQ_EFULL)
        rc = grow_over(x);
    if (rc == AMQ_OK && x->growth->done)
        rc = growth_end(x);
    return rc;
}

/* [lo, hi] into x's deep list, which stays sorted and apart: joined with the
 * ranges it meets or touches (AMQ_ENOMEM).  Not during a growth, whose
 * reader walks the list (its cursor) and whose table shares it. */
static int deep_insert(amq_qf *x, uint64_t lo, uint64_t hi)
{
    const uint64_t n = x->ndeep;
    if (!x->deep_owned || n + 1u > x->deep_cap) {
        const uint64_t cap = x->deep_owned && 2 * x->deep_cap > n + 1u ? 2 * x->deep_cap
                             : n + 1u > 16u                              ? 2 * (n + 1u)
                                                                         : 16u;
        uint64_t *v = amq_malloc(&x->alloc, (size_t)(2 * cap * sizeof *v));
        if (v == NULL)
            return AMQ_ENOMEM;
        if (n > 0)
            memcpy(v, x->deep, (size_t)(2 * n * sizeof *v));
        if (x->deep_owned)
            amq_free(&x->alloc, x->deep, (size_t)(2 * x->deep_cap * sizeof *x->deep));
        x->deep = v;
        x->deep_cap = cap;
        x->deep_owned = 1;
    }
    x->ndeep = ranges_put(x->deep, n, lo, hi);
    return AMQ_OK;
}

/* A crowd's range of keys into x's deep list, or, during a growth (x the
 * table grown into, g its growth), into the growth's list of ranges: the
 * old table's list is its reader's to walk. */
static int crowd_range(amq_qf *x, amq_qf_growth *g, uint64_t lo, uint64_t hi)
{
    return g != NULL ? growth_range(g, lo, hi) : deep_insert(x, lo, hi);
}

/* The ranges of keys entry s of slot a answers there, into the crowd's list; with h, only
 * the one h is in (an entry spans at most two ranges: entry_ranges), and 1 if none holds
 * it (never: h's own entry of its own slot), so that no key is taken without its range. */
static int crowd_entry(amq_qf *x, amq_qf_growth *g, uint64_t a, uint16_t s, const uint64_t *h)
{
    const slot_keys keys = keys_of(x);
    uint64_t lo, hi, r[2][3];
    uint32_t nr, t;
    int32_t p;
    int rc, held = h == NULL;
    slot_keys_range(&keys, a, &lo, &hi);
    nr = entry_ranges(x->k, lo, hi, s, r, &p);
    for (t = 0; t < nr; t++) {
        if (h != NULL && !(r[t][0] <= *h && *h <= r[t][1]))
            continue;
        if ((rc = crowd_range(x, g, r[t][0], r[t][1])) != AMQ_OK)
            return rc;
        held = 1;
    }
    return held ? AMQ_OK : 1;
}

/* Key h of slot a, which has no run, into the deep list, when the runs
 * before a's place (of its line's slots before a) were pushed past a: the
 * nearest of them with two entries or more gives up its last position,
 * the runs after it move down one, and a's run is the position freed at
 * their end, one void lane.  The keys of the entry given up go to the deep
 * list, and, unless its run keeps a void lane, those of the entry before
 * it, that lane made void.  No line's offset changes (the runs are of one
 * line's slots).  1: done; 0: no such run (or one not pushed between);
 * AMQ_ENOMEM (the lanes as they were). */
static int crowd_borrow(amq_qf *x, uint64_t a, uint64_t h, amq_qf_growth *g)
{
    const uint64_t blk = a / S, w = *word_of(x, blk), p0 = blk * S + (w & 255u);
    const uint32_t i = (uint32_t)(a % S);
    const uint64_t occ = (w >> 8) & M28 & ((UINT64_C(1) << i) - 1u); /* the line's slots before a */
    uint64_t e, slot, start = 0, q = 0, pos;
    uint16_t sv[2];
    uint32_t t, t0 = (uint32_t)__builtin_popcountll(occ), v, nv = 0;
    int rc;
    if (t0 == 0 || (e = select_run(x, p0, t0)) == UINT64_MAX || e < a)
        return 0; /* no run of the line before a, or a's place not pushed past it */
    for (t = t0; t > 0; t--) { /* run t of the line, of slot `slot`, is [start, q] */
        slot = blk * S + select_bit(occ, t);
        start = t == 1 ? p0 : select_run(x, p0, t - 1u) + 1u;
        if (start < slot)
            start = slot;
        q = select_run(x, start, 1);
        if (q > start)
            break;
        if (start == slot)
            return 0; /* it could not move down: a run at its own slot */
    }
    if (t == 0)
        return 0;
    for (pos = start; pos < q && *lane_at(x, pos) != VOID_LANE; pos++)
        ;
    sv[nv++] = *lane_at(x, q);
    if (pos == q)
        sv[nv++] = *lane_at(x, q - 1u);
    for (v = 0; v < nv; v++)
        if (sv[v] != VOID_LANE && (rc = crowd_entry(x, g, slot, sv[v], NULL)) != AMQ_OK)
            return rc;
    if ((rc = crowd_entry(x, g, a, entry_of(x, h), &h)) != AMQ_OK)
        return rc == 1 ? 0 : rc;
    for (v = 0; v < nv; v++) /* the counts: each entry given up, and the void lanes made */
        x->cnt[sv[v] == VOID_LANE ? 0u : 15u - (uint32_t)__builtin_ctz(sv[v])]--;
    x->cnt[0] += nv;
    if (nv == 2)
        *lane_at(x, q - 1u) = VOID_LANE;
    for (pos = q; pos < e; pos++) { /* the runs after move down one, lanes and run ends */
        uint64_t *wd = word_of(x, pos / S);
        const uint64_t bit = UINT64_C(1) << (36u + pos % S);
        *lane_at(x, pos) = *lane_at(x, pos + 1u);
        const int end = (int)((*word_of(x, (pos + 1u) / S) >> (36u + (pos + 1u) % S)) & 1u);
        *wd = end ? *wd | bit : *wd & ~bit;
    }
    *lane_at(x, e) = VOID_LANE; /* a's run */
    *word_of(x, e / S) |= UINT64_C(1) << (36u + e % S);
    *word_of(x, (q - 1u) / S) |= UINT64_C(1) << (36u + (q - 1u) % S); /* the shorter run's end */
    *word_of(x, blk) |= UINT64_C(1) << (8u + i);
    return 1;
}

/* An add into a crowded run (min_run entries or more in slot a's run, no
 * growth under way): h's range goes to the deep list, and, unless the run
 * has a void lane already, so do its last entry's keys, that lane made
 * void.  The run grows no longer: a crowded run pushes the lines after it
 * toward the 255 of their offsets, and every add behind it would then be
 * refused.  min_run is QF_CROWD before the add tries the run, 1 once it
 * found no room (keys crowded over several slots, each run shorter).
 * A slot with no run borrows one position (crowd_borrow) when min_run is 1.
 * 1: done; 0: a shorter run, none to borrow from, or the deep list at its
 * bound (the add goes on as any other); AMQ_ENOMEM. */
static __attribute__((noinline)) int crowd_add(amq_qf *x, uint64_t a, uint64_t h, uint64_t min_run,
                                               amq_qf_growth *g)
{
    const uint64_t blk = a / S, w = *word_of(x, blk);
    const uint32_t i = (uint32_t)(a % S);
    uint64_t start, end, pos;
    uint32_t t0;
    uint16_t s;
    int rc;
    if (x->ndeep + (g != NULL ? g->nv : 0) >= QF_CROWD_RANGES + x->entries / 1024u)
        return 0;
    if (!((w >> (8u + i)) & 1u))
        return min_run == 1 ? crowd_borrow(x, a, h, g) : 0;
    t0 = (uint32_t)__builtin_popcountll((w >> 8) & M28 & ((UINT64_C(2) << i) - 1u));
    start = t0 == 1 ? blk * S + (w & 255u) : select_run(x, blk * S + (w & 255u), t0 - 1u) + 1u;
    start = start < a ? a : start;
    if ((end = select_run(x, start, 1)) == UINT64_MAX || end - start + 1u < min_run)
        return 0;
    for (pos = start; pos <= end && *lane_at(x, pos) != VOID_LANE; pos++)
        ;
    if (pos > end) { /* no void lane: the last entry's keys to the deep list, its lane void */
        s = *lane_at(x, end);
        if ((rc = crowd_entry(x, g, a, s, NULL)) != AMQ_OK)
            return rc;
        *lane_at(x, end) = VOID_LANE;
        x->cnt[15u - (uint32_t)__builtin_ctz(s)]--;
        x->cnt[0]++;
    }
    rc = crowd_entry(x, g, a, entry_of(x, h), &h);
    return rc == AMQ_OK ? 1 : rc == 1 ? 0 : rc;
}

/* May slot a's run be a crowd (crowd_add)?  A run of 64 entries or more from slot i of line
 * blk reaches i + 36 slots into the next line: its offset says no for nearly every add. */
static inline int crowd_maybe(const amq_qf *x, uint64_t a)
{
    const uint64_t blk = a / S;
    const uint32_t i = (uint32_t)(a % S);
    return blk + 1u < x->lines && (*word_of(x, blk + 1u) & 255u) >= QF_CROWD - S + i &&
           ((*word_of(x, blk) >> (8u + i)) & 1u);
}

/* Key h into the table it belongs to (1), or an error with nothing changed, but for one path:
 * during a growth, a key that still does not fit once its add finished that growth is refused
 * with the growth finished, which a copy never sent the refused add (a replica, an AOF) would
 * not share.  No test or crowd tried reaches it (docs/expandable.md, the quotient kind's
 * crowds): the finished growth makes the crowded runs void lanes. */
static int place(amq_qf *x, uint64_t h)
{
    amq_qf *t;
    int rc;
    if (x->growth != NULL) {
        if ((rc = grow_step(x)) != AMQ_OK)
            return rc;
    } else if ((double)(x->entries + 1) > QF_MAX_LOAD * (double)x->m) {
        if ((rc = grow_start(x)) != AMQ_OK)
            return rc;
        if ((rc = grow_step(x)) != AMQ_OK)
            return rc;
    }
    if (x->growth == NULL && crowd_maybe(x, mulhi(h, x->m)) &&
        (rc = crowd_add(x, mulhi(h, x->m), h, QF_CROWD, NULL)) != 0)
        return rc;
    t = (amq_qf *)(uintptr_t)table_of(x, h); /* x is not const here */
    rc = insert_at(t, mulhi(h, t->m), entry_of(t, h), h);
    if (rc == AMQ_EFULL) {
        /* no room (a run pushed 255 slots into a line: keys crowded over a few slots, by a
         * weak hash or chosen against the seed): the deep list (crowd_add), so that such a
         * crowd forces no whole growth inside one add (a stalled server) */
        /* (during a growth: a key of the table grown into whose slot is all below the split,
         * its run y's alone, with the growth's list) */
        if ((x->growth == NULL ||
             (t != x && mulhi(h, t->m) < mulhi(x->growth->split, t->m))) &&
            (rc = crowd_add(t, mulhi(h, t->m), h, 1, x->growth)) != 0)
            return rc;
        /* else, with no growth under way, refused, nothing changed.  No growth is forced:
         * it would not spread a crowd (10 % wider a growth), and each one forced was a whole
         * rewrite inside one add, the table grown again and again for one band of keys (7x
         * its entries' slots).  The growth that comes at 95 % load makes the crowded runs
         * void lanes, and the keys near them fit again.  During a growth, a key past the
         * reader: the growth finished, which makes its crowded runs void lanes, and the key
         * placed in the new table (it grows no more for it). */
        if (x->growth == NULL)
            return AMQ_EFULL;
        if ((rc = growth_finish(x)) != AMQ_OK)
            return rc;
        t = x;
        rc = insert_at(t, mulhi(h, t->m), entry_of(t, h), h);
        if (rc == AMQ_EFULL && (rc = crowd_add(t, mulhi(h, t->m), h, 1, NULL)) == 0)
            return AMQ_EFULL;
        if (rc == 1)
            return 1;
    }
    if (rc == 2)
        return 1;
    if (rc != AMQ_OK)
        return rc;
    t->entries++;
    t->cnt[15]++;
    if (t != x && t->fill_pos >= x->growth->pos)
        x->growth->pos = t->fill_pos + 1u; /* the add moved y's last entry */
    return 1;
}

/* An add places the key added QF_PENDING adds before it and keeps its own
 * pending, its lines fetched now: the misses of several adds overlap, as a
 * blocked filter's short adds do on their own.  A key that cannot be placed
 * stays pending (it answers present) and the add that tried is refused. */
static int qf_add(amq_qf *x, uint64_t h)
{
    const uint32_t c = x->pend_next, bit = UINT32_C(1) << c;
    const uint8_t *p = x->t + (mulhi(h, x->m) / S) * 64u;
    int rc;
    /* and the three after, which an add's shift at this load often reaches (docs/expandable-log.md,
     * "What an add costs": a fourth line paid, a fifth did not) */
    __builtin_prefetch(p, 1);
    __builtin_prefetch(p + 64u, 1);
    __builtin_prefetch(p + 128u, 1);
    __builtin_prefetch(p + 192u, 1);
    if ((x->pend_used & bit) && (rc = place(x, x->pend[c])) != 1) {
        /* a crowded run: the oldest key stays pending (present), this one is placed now if
         * it can be; out of memory or at the limit, the add is refused, nothing changed */
        if (rc != AMQ_EFULL || place(x, h) != 1)
            return rc;
        x->items++;
        return 1;
    }
    if (x->pend_used & bit)
        amq_qf_pend_sign(x, x->pend[c], 0); /* placed */
    x->pend[c] = h;
    x->pend_used |= bit;
    x->pend_next = (c + 1u) % QF_PENDING;
    amq_qf_pend_sign(x, h, 1);
    x->items++;
    return 1;
}

/* A key's h1, exactly as amq_filter_hash gives it: an 8-byte key under
 * XXH3 inline, any other by a call. */
__attribute__((noinline)) static uint64_t key_h1_any(const amq_qf *x, const void *key, size_t len)
{
    return amq_hash_key(x->hash_algo, x->seed, key, len).h1;
}

static inline __attribute__((always_inline)) uint64_t key_h1(const amq_qf *x, const void *key,
                                                             size_t len)
{
    if (__builtin_expect(len == 8 && x->hash_algo == AMQ_HASH_XXH3, 1))
        return amq_xxh3_8(x->x8, key);
    return key_h1_any(x, key, len);
}

/* The one-key query's rare ends, each reached by a tail call so that the
 * entry saves fewer registers and holds fewer live (more queries then fit
 * in flight): */
__attribute__((noinline)) static int contains_key_any(const amq_qf *x, const void *key, size_t len)
{
    return qf_has(x, key_h1(x, key, len));
}

/* h's run, not in its line or longer than 8 lanes; its place is worked out
 * again here (the line is cached by now), so that the entry keeps fewer
 * values live past its line's answer; */
__attribute__((noinline)) static int contains_run(const amq_qf *x, uint64_t h)
{
    uint64_t a, p0 = 0;
    uint32_t t = 0; /* set whenever line_has says QF_RUN */
    (void)line_has(x, h, &a, &p0, &t);
#if defined(__AVX512BW__) && defined(__BMI2__)
    const int r = run_in_two(x, h, a / S, (uint32_t)(a % S), t, NULL);
    if (__builtin_expect(r != QF_RUN, 1))
        return run_in_two_answer(x, h, r);
#endif
    return run_answers(x, a, p0, t, h) || pend_has(x, h);
}

/* a void lane answered; or the table did not, and h may be pending. */
__attribute__((noinline)) static int contains_deep(const amq_qf *x, uint64_t h)
{
    return deep_has(x, h) || pend_has(x, h);
}

__attribute__((noinline)) static int contains_pending(const amq_qf *x, uint64_t h)
{
    return pend_has(x, h);
}

/* The handle's one-key entries: the hash, the query or the add in one body.
 * The query's rare ends are tail calls, so that it saves few registers and
 * more queries fit in flight. */
static int isa_contains_key(const void *impl, const void *key, size_t len)
{
    const amq_qf *x = impl;
    uint64_t h, a, p0;
    uint32_t t;
    int r;
    if (__builtin_expect(len != 8 || x->hash_algo != AMQ_HASH_XXH3 || x->growth != NULL, 0))
        return contains_key_any(x, key, len);
    h = amq_xxh3_8(x->x8, key);
    r = line_has(x, h, &a, &p0, &t);
    if (r == 1)
        return 1;
    if (__builtin_expect(r == QF_RUN, 0))
        return contains_run(x, h);
    if (__builtin_expect(r == QF_DEEP, 0))
        return contains_deep(x, h);
    if (__builtin_expect(!amq_qf_pend_maybe(x, h), 1))
        return 0;
    return contains_pending(x, h);
}

static int isa_add_key(void *impl, const void *key, size_t len)
{
    amq_qf *x = impl;
    return qf_add(x, key_h1(x, key, len));
}

static int isa_add(amq_qf *x, uint64_t h1)
{
    return qf_add(x, h1);
}

static int isa_contains(const amq_qf *x, uint64_t h1)
{
    return qf_has(x, h1);
}

/* A growth that fails (no memory, or a table at its limit) leaves both
 * tables as they were between two steps: every key still answers. */
static int isa_settle(amq_qf *x)
{
    return x->growth != NULL ? growth_finish(x) : AMQ_OK;
}

/* Keys in turn (each add fetches its lines 16 adds ahead: qf_add); added[i]
 * 1 for each: an add does not look first (amq_kind_keeps_copies), so a key
 * already in gets a second entry when a growth has shortened its first. */
static int isa_add_batch(amq_qf *x, const amq_hash128 *h, size_t n, uint8_t *added)
{
    size_t i;
    int rc;
    for (i = 0; i < n; i++) {
        if ((rc = qf_add(x, h[i].h1)) != 1)
            return rc;
        if (added != NULL)
            added[i] = 1;
    }
    return AMQ_OK;
}

/* The batched queries' window: key i + QF_WINDOW's line is prefetched while
 * key i is answered, over a ring of hashes, so that no key of a batch goes
 * unprefetched (docs/expandable-log.md, "The batched query's window"). */
#define QF_WINDOW 32u
/* Keys whose run leaves their line wait in a ring of QF_LATE, the next line
 * prefetched, and are answered when the ring is full: a batch fetches one
 * line for most keys, two only for those (docs/expandable-log.md,
 * "A line compared in one register, and a batch that fetches one line a key"). */
#define QF_LATE 8u

typedef struct {
    uint64_t h[QF_LATE];
    size_t at[QF_LATE];
    uint32_t head, used;
} late_ring;

static inline void prefetch_spot(const amq_qf *x, uint64_t v)
{
    __builtin_prefetch(x->t + (v & ~UINT64_C(63)));
}

/* h's answer from its line (in table t, at spot v: line_spot), now fetched:
 * 0 or 1, or QF_RUN when its run leaves the line (the next line prefetched;
 * late_answer answers it later). */
static inline __attribute__((always_inline)) int batch_first_at(const amq_qf *x, const amq_qf *t,
                                                                uint64_t h, uint64_t v)
{
    uint64_t a, p0;
    uint32_t tt;
    int r = line_has_at(t, h, v >> 6, (uint32_t)(v & 63u), &a, &p0, &tt);
    if (__builtin_expect(r == QF_RUN, 0)) {
        __builtin_prefetch(t->t + (a / S + 1u) * 64u);
        return QF_RUN;
    }
    if (__builtin_expect(r == QF_DEEP, 0))
        r = deep_has(t, h);
    return r || pend_has(x, h);
}

static inline __attribute__((always_inline)) int batch_first(const amq_qf *x, uint64_t h)
{
    const amq_qf *t = table_of(x, h);
    return batch_first_at(x, t, h, line_spot(t, h));
}

/* A waiting key's answer (its run left its line, whose next is fetched by now). */
static inline int late_answer(const amq_qf *x, uint64_t h)
{
#if defined(__AVX512BW__) && defined(__BMI2__)
    if (__builtin_expect(x->growth == NULL, 1)) {
        const uint64_t v = line_spot(x, h), blk = v >> 6;
        const uint32_t i = (uint32_t)(v & 63u);
        const uint64_t w = *(const uint64_t *)(const void *)(x->t + blk * 64u);
        const uint32_t t = (uint32_t)__builtin_popcountll(w & (((UINT64_C(2) << i) - 1u) << 8));
        int r;
        if (((w >> (8u + i)) & 1u) && (r = run_in_two(x, h, blk, i, t, NULL)) != QF_RUN)
            return run_in_two_answer(x, h, r);
    }
#endif
    return qf_has(x, h);
}

/* Key at (hash h) waits; the oldest waiting key, when the ring was full,
 * is answered into out (NULL: counted only).  Returns that answer (0 if none). */
static inline __attribute__((always_inline)) int late_push(const amq_qf *x, late_ring *lr,
                                                           uint64_t h, size_t at, uint8_t *out)
{
    int r = 0;
    if (lr->used == QF_LATE) {
        const uint32_t o = lr->head;
        r = late_answer(x, lr->h[o]);
        if (out != NULL)
            out[lr->at[o]] = (uint8_t)r;
        lr->head = (o + 1u) % QF_LATE;
        lr->used--;
    }
    lr->h[(lr->head + lr->used) % QF_LATE] = h;
    lr->at[(lr->head + lr->used) % QF_LATE] = at;
    lr->used++;
    return r;
}

/* The waiting keys' answers, oldest first: how many are present. */
static inline uint64_t late_drain(const amq_qf *x, late_ring *lr, uint8_t *out)
{
    uint64_t hits = 0;
    for (; lr->used > 0; lr->used--, lr->head = (lr->head + 1u) % QF_LATE) {
        const int r = late_answer(x, lr->h[lr->head]);
        hits += (uint64_t)r;
        if (out != NULL)
            out[lr->at[lr->head]] = (uint8_t)r;
    }
    return hits;
}

/* The batch's key at spot v (line_spot, worked out when its line was
 * prefetched) with no growth under way; during one, its table's line. */
static inline __attribute__((always_inline)) int batch_answer(const amq_qf *x, uint64_t h,
                                                              uint64_t v)
{
    if (__builtin_expect(x->growth == NULL, 1))
        return batch_first_at(x, x, h, v);
    return batch_first(x, h);
}

/* The batch's key at spot v answered into out (NULL: counted only), or waiting in the late
 * ring: how many present this answered (a push answers the ring's oldest when full). */
static inline __attribute__((always_inline)) uint64_t batch_put(const amq_qf *x, late_ring *lr,
                                                                uint64_t h, uint64_t v,
                                                                size_t at, uint8_t *out)
{
    const int r = batch_answer(x, h, v);
    if (r == QF_RUN)
        return (uint64_t)late_push(x, lr, h, at, out);
    if (out != NULL)
        out[at] = (uint8_t)r;
    return (uint64_t)r;
}

#if defined(__AVX512BW__) && defined(__BMI2__)
/* ---- the batched query eight keys at a time (AVX-512 with DQ and VPOPCNTDQ) ----------------
 * What a key's query does before and after its line is read but the lanes' compare, worked out
 * for eight keys in a register's lanes: their slots (a 128-bit product's high word, then a
 * division by 28 in doubles, exact under 2^53), the line's header gathered, the slot's rank
 * and occupied bit, whether its run ends in the line, the pending keys' signature.  Each key's
 * lanes are compared alone (line_hits, one register a line).  A key whose slot is empty is
 * answered then; the others QG_BACK groups later (group_late), a run in its line from its
 * answering lanes' ranks, one that leaves it from both lines, so every answer is
 * line_has_at's (test_quotient compares them key by key). */
#define QF_VEC_TARGET __attribute__((target("avx512dq,avx512vpopcntdq")))
#define QG 8u        /* keys a group */
#define QG_AHEAD 8u  /* groups staged ahead of the one answered (4 measured slower) */
#define QG_BACK 2u   /* groups answered before a group's occupied slots are (next lines fetched) */
#define QG_RING 16u  /* cells: QG_AHEAD + QG_BACK or more, a power of two (no division) */
#if defined(__clang__)
#define QG_UNROLL _Pragma("unroll")
#else
#define QG_UNROLL _Pragma("GCC unroll 8")
#endif

typedef struct {
    const uint8_t *line[QG]; /* each key's line */
    uint64_t h[QG], i[QG];   /* its h1, and its slot's place in the line */
    uint64_t t[QG];          /* answered: its slot's rank in the line, */
    uint64_t r[QG], off[QG]; /* the line's run ends from its offset on, and the offset */
    uint32_t all[QG];        /* and the line's lanes that hold an entry and answer it */
    uint32_t run, late;      /* the keys whose run lies in their line, or leaves it */
    uint32_t pend;           /* the keys whose bit of the pending keys' signature is set */
} __attribute__((aligned(64))) qgroup; /* (its rows stored whole) */

/* Group g's keys (h1 in hv) placed in their lines (the next group's answers prefetch them). */
static inline QF_VEC_TARGET void group_stage(const amq_qf *x, __m512i hv, qgroup *g)
{
    const __m512i a = mulhi8(hv, _mm512_set1_epi64((long long)x->m));
    const __m512i blk = _mm512_cvttpd_epu64(
        _mm512_div_pd(_mm512_cvtepu64_pd(a), _mm512_set1_pd((double)S))); /* a < 2^48 */
    const __m512i b28 = _mm512_sub_epi64(_mm512_slli_epi64(blk, 5), _mm512_slli_epi64(blk, 2));
    _mm512_store_si512((void *)g->h, hv);
    _mm512_store_si512((void *)g->line, _mm512_add_epi64(_mm512_slli_epi64(blk, 6),
                                                         _mm512_set1_epi64((long long)x->t)));
    _mm512_store_si512((void *)g->i, _mm512_sub_epi64(a, b28));
}

/* The answers of the group's keys whose slot is empty: bit j for key j present (a pending
 * key); the others are group_late's, QG_BACK groups on (their compares' masks are read as one
 * vector then, long stored: read at once, a store-forwarding stall), the next lines of
 * those whose run leaves its line fetched now.  Group pf's lines are prefetched, one with
 * each key's compare (eight at once measured slower). */
static inline QF_VEC_TARGET uint32_t group_answer(const amq_qf *x, qgroup *g, const qgroup *pf)
{
    const __m512i one = _mm512_set1_epi64(1);
    const __m512i hv = _mm512_load_si512((const void *)g->h);
    const __m512i iv = _mm512_load_si512((const void *)g->i);
    const __m512i w = _mm512_i64gather_epi64(_mm512_load_si512((const void *)g->line), NULL, 1);
    const __m512i off = _mm512_and_si512(w, _mm512_set1_epi64(255));
    /* rank: occupied slots up to i; run ends in the line from the offset on (none past 63) */
    const __m512i tv = _mm512_popcnt_epi64(_mm512_and_si512(
        _mm512_srli_epi64(w, 8), _mm512_sub_epi64(_mm512_sllv_epi64(_mm512_set1_epi64(2), iv),
                                                  one)));
    const __m512i r = _mm512_and_si512(_mm512_srli_epi64(w, 36),
                                       _mm512_sllv_epi64(_mm512_set1_epi64(-1), off));
    const __mmask8 occ = _mm512_test_epi64_mask(
        _mm512_srlv_epi64(w, _mm512_add_epi64(iv, _mm512_set1_epi64(8))), one);
    const __mmask8 in_line = _mm512_cmpge_epu64_mask(_mm512_popcnt_epi64(r), tv) &
                             _mm512_cmplt_epu64_mask(off, _mm512_set1_epi64(S));
    const __m512i ql = _mm512_or_si512(
        _mm512_srli_epi64(_mm512_sll_epi64(hv, _mm_cvtsi32_si128((int)x->k)), 48), one);
    const __m512i qs = _mm512_or_si512(
        _mm512_srli_epi64(_mm512_sll_epi64(hv, _mm_cvtsi32_si128((int)x->k - 1)), 48), one);
    const __m512i sig = _mm512_permutexvar_epi64(
        _mm512_srli_epi64(hv, 62),
        _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)x->pend_sig)));
    const __mmask8 maybe_pend = _mm512_test_epi64_mask(
        _mm512_srlv_epi64(sig, _mm512_and_si512(_mm512_srli_epi64(hv, 56),
                                                _mm512_set1_epi64(63))),
        one);
    uint64_t q_long[QG], q_short[QG];
    uint32_t yes = 0, j;
    _mm512_storeu_si512((void *)q_long, ql);
    _mm512_storeu_si512((void *)q_short, qs);
    QG_UNROLL /* the shifts by j become constants */
    for (j = 0; j < QG; j++) {
        __builtin_prefetch(pf->line[j]);
        g->all[j] = line_hits(g->line[j], (uint16_t)q_long[j], (uint16_t)q_short[j]) &
                    line_used(g->line[j]);
    }
    _mm512_store_si512((void *)g->t, tv);
    _mm512_store_si512((void *)g->r, r);
    _mm512_store_si512((void *)g->off, off);
    g->run = (uint32_t)(occ & in_line);
    g->late = (uint32_t)(occ & ~in_line);
    g->pend = (uint32_t)maybe_pend;
    for (j = g->late; j != 0; j &= j - 1u)
        __builtin_prefetch(g->line[__builtin_ctz(j)] + 64);
    for (j = g->pend & ~(uint32_t)occ; j != 0; j &= j - 1u) /* the slot is empty */
        if (pend_has(x, g->h[__builtin_ctz(j)]))
            yes |= UINT32_C(1) << __builtin_ctz(j);
    return yes;
}

/* The answers of the group at out (NULL: counted only): how many present. */
static inline QF_VEC_TARGET uint64_t group_out(const amq_qf *x, qgroup *g, const qgroup *pf,
                                               size_t at, uint8_t *out)
{
    const uint32_t yes = group_answer(x, g, pf);
    if (out != NULL)
        _mm_storel_epi64((__m128i *)(void *)(out + at),
                         _mm_and_si128(_mm_movm_epi8((__mmask16)yes), _mm_set1_epi8(1)));
    return (uint64_t)__builtin_popcount(yes);
}

/* The answers of the group's keys whose slot is occupied (QG_BACK groups after its own):
 * a run in its line from its answering lanes' ranks, one that ends in the next line from both
 * lines (run_in_two, this line's compare reused), any other from the whole query.  How many
 * present. */
static inline QF_VEC_TARGET uint64_t group_late(const amq_qf *x, const qgroup *g, size_t at,
                                                uint8_t *out)
{
    const __m256i av = _mm256_load_si256((const __m256i *)(const void *)g->all);
    uint32_t run = g->run & (uint32_t)_mm256_test_epi32_mask(av, av), yes = 0, late, k;
    uint64_t hits;
    for (; run != 0; run &= run - 1u) {
        /* lane p is in the run when it is past the offset and run end t - 1 (from the
         * offset) is below it; the empty lanes before slot i answer nothing */
        uint32_t lanes, deep = 0;
        k = (uint32_t)__builtin_ctz(run);
        lanes = g->all[k] >> 4;
        do {
            const uint32_t p = (uint32_t)__builtin_ctz(lanes);
            if (p >= g->off[k] &&
                (uint64_t)__builtin_popcountll(g->r[k] & ((UINT64_C(1) << p) - 1u)) ==
                    g->t[k] - 1u) {
                if (((const uint16_t *)(const void *)(g->line[k] + 8))[p] != VOID_LANE) {
                    yes |= UINT32_C(1) << k;
                    break;
                }
                deep = 1;
            }
            lanes &= lanes - 1u;
        } while (lanes != 0);
        if (deep && !((yes >> k) & 1u) && deep_has(x, g->h[k]))
            yes |= UINT32_C(1) << k;
    }
    for (run = g->run & g->pend & ~yes; run != 0; run &= run - 1u)
        if (pend_has(x, g->h[k = (uint32_t)__builtin_ctz(run)]))
            yes |= UINT32_C(1) << k;
    if (out != NULL)
        _mm_mask_storeu_epi8(out + at, (__mmask16)g->run,
                             _mm_and_si128(_mm_movm_epi8((__mmask16)yes), _mm_set1_epi8(1)));
    hits = (uint64_t)__builtin_popcount(yes);
    for (late = g->late; late != 0; late &= late - 1u) {
        const uint32_t j = (uint32_t)__builtin_ctz(late);
        const uint64_t h = g->h[j];
        int r = run_in_two(x, h, (uint64_t)(g->line[j] - x->t) / 64u, (uint32_t)g->i[j],
                           (uint32_t)g->t[j], &g->all[j]);
        r = __builtin_expect(r == QF_RUN, 0) ? qf_has(x, h) : run_in_two_answer(x, h, r);
        hits += (uint64_t)r;
        if (out != NULL)
            out[at + j] = (uint8_t)r;
    }
    return hits;
}

/* Where a batch's keys come from: hashes given, or packed keys hashed here. */
typedef struct {
    const amq_hash128 *h; /* NULL: keys */
    const uint8_t *keys;
    size_t key_len;
} qkeys;

static inline __attribute__((always_inline)) QF_VEC_TARGET __m512i group_h1(const amq_qf *x,
                                                                         const qkeys *src,
                                                                         size_t at)
{
    uint64_t v[QG];
    uint32_t j;
    if (src->h != NULL) /* h1 of eight (h1, h2) pairs */
        return _mm512_permutex2var_epi64(_mm512_loadu_si512((const void *)(src->h + at)),
                                         _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14),
                                         _mm512_loadu_si512((const void *)(src->h + at + 4)));
    for (j = 0; j < QG; j++) {
        amq_prefetch_keys(src->keys, src->key_len, at + j);
        v[j] = key_h1(x, src->keys + (at + j) * src->key_len, src->key_len);
    }
    return _mm512_loadu_si512((const void *)v);
}

static inline __attribute__((always_inline)) uint64_t key_h1_at(const amq_qf *x, const qkeys *src,
                                                                size_t at)
{
    return src->h != NULL ? src->h[at].h1
                          : key_h1(x, src->keys + at * src->key_len, src->key_len);
}

/* A batch of n keys eight at a time (no growth under way; a CPU with AVX-512DQ and
 * VPOPCNTDQ), QG_AHEAD groups staged ahead of the one answered; the keys past the last
 * group of eight one at a time.  Answers into out (NULL: counted only); how many present. */
static inline __attribute__((always_inline)) QF_VEC_TARGET uint64_t
contains_groups(const amq_qf *x, const qkeys *src, size_t n, uint8_t *out)
{
    qgroup ring[QG_RING];
    _Static_assert(QG_RING >= QG_AHEAD + QG_BACK && (QG_RING & (QG_RING - 1u)) == 0, "ring");
    late_ring lr;
    const size_t ng = n / QG;
    uint64_t hits = 0;
    size_t g, k;
    lr.head = lr.used = 0;
    for (g = 0; g < ng && g < QG_AHEAD; g++) {
        group_stage(x, group_h1(x, src, g * QG), &ring[g]);
        for (k = 0; k < QG; k++)
            __builtin_prefetch(ring[g].line[k]);
    }
    for (g = 0; g < ng; g++) { /* the group staged last is prefetched a key at a time */
        const size_t pf = g + QG_AHEAD - 1 < ng ? g + QG_AHEAD - 1 : g; /* (no cell unstaged) */
        hits += group_out(x, &ring[g % QG_RING], &ring[pf % QG_RING], g * QG, out);
        if (g >= QG_BACK) /* its cell is the one staged next */
            hits += group_late(x, &ring[(g - QG_BACK) % QG_RING], (g - QG_BACK) * QG, out);
        if (g + QG_AHEAD < ng)
            group_stage(x, group_h1(x, src, (g + QG_AHEAD) * QG),
                        &ring[(g + QG_AHEAD) % QG_RING]);
    }
    for (g = ng > QG_BACK ? ng - QG_BACK : 0; g < ng; g++)
        hits += group_late(x, &ring[g % QG_RING], g * QG, out);
    for (k = ng * QG; k < n; k++) {
        const uint64_t h = key_h1_at(x, src, k);
        hits += batch_put(x, &lr, h, line_spot(x, h), k, out);
    }
    return hits + late_drain(x, &lr, out);
}

static QF_VEC_TARGET __attribute__((noinline)) void groups_hashed(const amq_qf *x,
                                                                   const amq_hash128 *h, size_t n,
                                                                   uint8_t *out)
{
    const qkeys src = {h, NULL, 0};
    (void)contains_groups(x, &src, n, out);
}

static QF_VEC_TARGET __attribute__((noinline)) uint64_t
groups_packed(const amq_qf *x, const void *keys, size_t key_len, size_t n, uint8_t *out)
{
    const qkeys src = {NULL, keys, key_len};
    return contains_groups(x, &src, n, out);
}

/* The groups' loop answers this batch: no growth under way, the CPU has what it needs, and
 * every cell of the ring is staged before the first answer (n >= 64). */
static inline int groups_serve(const amq_qf *x, size_t n)
{
    return x->growth == NULL && n >= QG * QG_AHEAD &&
           amq_cpu_has(AMQ_CPU_AVX512DQ | AMQ_CPU_AVX512VPOPCNTDQ);
}
#undef QG
#undef QG_AHEAD
#undef QG_BACK
#undef QG_RING
#undef QG_UNROLL
#endif

static void isa_contains_batch(const amq_qf *x, const amq_hash128 *h, size_t n, uint8_t *out)
{
    uint64_t spot[QF_WINDOW];
    late_ring lr;
    size_t i;
#if defined(__AVX512BW__) && defined(__BMI2__)
    if (groups_serve(x, n)) {
        groups_hashed(x, h, n, out);
        return;
    }
#endif
    lr.head = lr.used = 0;
    for (i = 0; i < n && i < QF_WINDOW; i++)
        prefetch_spot(x, spot[i] = line_spot(x, h[i].h1));
    for (i = 0; i < n; i++) {
        const uint64_t v = spot[i % QF_WINDOW];
        if (i + QF_WINDOW < n)
            prefetch_spot(x, spot[i % QF_WINDOW] = line_spot(x, h[i + QF_WINDOW].h1));
        (void)batch_put(x, &lr, h[i].h1, v, i, out);
    }
    late_drain(x, &lr, out);
}

/* Packed keys hashed QF_WINDOW keys ahead of their queries. */
static uint64_t isa_contains_fixed(const amq_qf *x, const void *keys, size_t key_len, size_t n,
                                   uint8_t *out)
{
    const uint8_t *kp = keys;
    uint64_t ring[QF_WINDOW], spot[QF_WINDOW], hits = 0;
    late_ring lr;
    size_t i;
#if defined(__AVX512BW__) && defined(__BMI2__)
    if (groups_serve(x, n))
        return groups_packed(x, keys, key_len, n, out);
#endif
    lr.head = lr.used = 0;
    for (i = 0; i < n && i < QF_WINDOW; i++) {
        ring[i] = key_h1(x, kp + i * key_len, key_len);
        prefetch_spot(x, spot[i] = line_spot(x, ring[i]));
    }
    for (i = 0; i < n; i++) {
        const uint64_t h = ring[i % QF_WINDOW], v = spot[i % QF_WINDOW];
        if (i + QF_WINDOW < n) {
            amq_prefetch_keys(kp, key_len, i + QF_WINDOW);
            ring[i % QF_WINDOW] = key_h1(x, kp + (i + QF_WINDOW) * key_len, key_len);
            prefetch_spot(x, spot[i % QF_WINDOW] = line_spot(x, ring[i % QF_WINDOW]));
        }
        hits += batch_put(x, &lr, h, v, i, out);
    }
    return hits + late_drain(x, &lr, out);
}

/* The table of the file that includes this one (quotient_base.c, _avx2.c, _avx512.c). */
#ifdef QF_ISA_TABLE
const amq_qf_isa QF_ISA_TABLE = {
    .add = isa_add,
    .contains = isa_contains,
    .add_batch = isa_add_batch,
    .contains_batch = isa_contains_batch,
    .contains_fixed = isa_contains_fixed,
    .add_key = isa_add_key,
    .contains_key = isa_contains_key,
    .settle = isa_settle,
};
#endif

#undef S
#undef M28
#undef SHORT
#undef ITEMS
#undef QF_WINDOW
#undef QF_LATE
#undef QF_RUN
#undef QF_DEEP

#endif /* AMQ_QUOTIENT_IMPL_H */
