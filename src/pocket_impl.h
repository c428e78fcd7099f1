/*
 * pocket_impl.h - the pocket kind's bins: the add, the query and the
 * rewrite of a segment into a larger table (pocket_internal.h says what a
 * bin is).  Included by pocket_base.c (the x86-64 baseline) and
 * pocket_avx512.c (AVX-512 BW/VBMI2/CD and BMI2), each defining PK_ISA_TABLE.
 */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "amq/hash.h"
#include "common/xxh3_8.h"
#include "pocket_core.h"

#define S PK_SLOTS
#define B PK_BUCKETS

#if defined(__AVX512BW__) && defined(__AVX512VBMI2__) && defined(__AVX512CD__) && \
    defined(__AVX512DQ__) && defined(__AVX512VL__) && defined(__BMI2__)
#define PK_VEC 1
#else
#define PK_VEC 0
#endif

/* The place of x's j-th 1 (x has more than j). */
static inline uint32_t select1(uint64_t x, uint32_t j)
{
#if PK_VEC
    return (uint32_t)__builtin_ctzll(_pdep_u64(UINT64_C(1) << j, x));
#else
    for (; j > 0; j--)
        x &= x - 1u;
    return (uint32_t)__builtin_ctzll(x);
#endif
}

/* Places v in bucket j of bin b after the bucket's first `rank` entries
 * (UINT32_MAX: after all of them); 0 when the bin is full. */
static inline int bin_put_at(pk_bin *b, uint32_t j, uint16_t v, uint32_t rank)
{
    const uint64_t map = b->map & PK_MAP_MASK, z = ~map & PK_MAP_MASK;
    const uint32_t n = (uint32_t)__builtin_popcountll(map);
    const uint32_t pe = select1(z, j);
    const uint32_t ps = j ? select1(z, j - 1u) + 1u : 0u;
    const uint32_t i = pe - j - (pe - ps) + (rank < pe - ps ? rank : pe - ps);
    uint64_t low;
    if (n >= S)
        return 0;
#if PK_VEC
    {
        /* the line as 32 lanes (the map in lanes 0 to 3): entries from i on one lane up, v in
         * lane 4 + i, in registers (a memmove's call costs more than the add) */
        const __m512i up = _mm512_set_epi16(30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
                                            17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
                                            2, 1, 0, 0);
        __m512i line = _mm512_loadu_si512((const void *)b);
        line = _mm512_mask_mov_epi16(line, (__mmask32)(UINT64_C(0xffffffff) << (5u + i)),
                                     _mm512_permutexvar_epi16(up, line));
        line = _mm512_mask_set1_epi16(line, (__mmask32)(UINT32_C(1) << (4u + i)), (short)v);
        _mm512_storeu_si512((void *)b, line);
    }
#else
    memmove(&b->e[i + 1], &b->e[i], (n - i) * sizeof b->e[0]);
    b->e[i] = v;
#endif
    low = (UINT64_C(1) << pe) - 1u;
    b->map = (b->map & ~PK_MAP_MASK) | (map & low) | (UINT64_C(1) << pe) | ((map & ~low) << 1);
    return 1;
}

/* ---- the add ------------------------------------------------------------------------------ */

#if PK_VEC
/* seg_add's rank: of entries [from, to) of bin b, those whose ranges start before key's (from
 * lo, in eb bits), every entry at once: the loop's count, 0 to 3 and more, mispredicted about
 * every other key, cost more (docs/expandable-log.md). */
static inline uint32_t bin_rank(const pk_bin *b, uint32_t from, uint32_t to, uint32_t eb,
                                uint32_t lo, uint32_t key)
{
    const uint32_t in = (uint32_t)(((UINT64_C(1) << to) - 1u) & ~((UINT64_C(1) << from) - 1u));
    const __m512i one = _mm512_set1_epi32(1), veb = _mm512_set1_epi32((int)eb);
    const __m512i vlo = _mm512_set1_epi32((int)lo), vkey = _mm512_set1_epi32((int)key);
    const __m512i emask = _mm512_set1_epi32((int)((1u << eb) - 1u));
    uint32_t rank = 0;
    int half;
    for (half = 0; half < 2; half++) { /* lanes 0 to 15; 12 to 27 moved down by 4 */
        const __m512i v =
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)(b->e + 12 * half)));
        const __m512i vv = half ? _mm512_alignr_epi32(_mm512_setzero_si512(), v, 4) : v;
        const __m512i el = _mm512_sub_epi32(_mm512_set1_epi32(31),
                                            _mm512_lzcnt_epi32(_mm512_or_si512(vv, one)));
        const __mmask16 mid = _mm512_cmpgt_epu32_mask(el, _mm512_set1_epi32((int)PK_SHORT)) &
                              _mm512_cmple_epu32_mask(el, veb);
        const __m512i at = _mm512_mask_sllv_epi32(vv, mid,
                                                  _mm512_xor_si512(vv, _mm512_sllv_epi32(one, el)),
                                                  _mm512_sub_epi32(veb, el));
        const __m512i d = _mm512_and_si512(_mm512_sub_epi32(at, vlo), emask);
        rank += (uint32_t)__builtin_popcount(
            (uint32_t)_mm512_mask_cmplt_epu32_mask((__mmask16)(in >> (16 * half)), d, vkey));
    }
    return rank;
}
#endif

/* Key hs (its segment's bits taken off) into segment s.  A bucket's entries are kept in the
 * order of their ranges of h (their bits' distance from the bucket's start within its cell),
 * so that a growth meets them in key order and writes the new table in one pass.  A full bin
 * keeps its lowest buckets whole: the last entry of its highest bucket leaves for the spare
 * when the key's bucket is lower, else the key's entry goes there; the spare takes it first,
 * so that no memory for it leaves the bin unchanged. */
static int seg_add(amq_pk *x, pk_seg *s, uint64_t hs)
{
    const uint64_t g = pk_mulhi(hs, s->m);
    pk_bin *b = s->b + g / B;
    const uint32_t j = (uint32_t)(g % B);
    const uint32_t eb = x->eb;
    const uint16_t v = (uint16_t)((1u << eb) | (uint32_t)((hs << s->k) >> (64u - eb)));
    const uint64_t z = ~b->map & PK_MAP_MASK;
    const uint32_t pe = select1(z, j);
    const uint32_t ps = j ? select1(z, j - 1u) + 1u : 0u;
    const uint16_t emask = (uint16_t)((1u << eb) - 1u);
    const uint16_t lo = (uint16_t)(((g * s->q0) << s->k) >> (64u - eb)); /* its start */
    const uint16_t key = (uint16_t)((v - lo) & emask);
    uint32_t rank;
    int rc;
#if PK_VEC
    rank = bin_rank(b, ps - j, pe - j, eb, lo, key);
#else
    uint32_t i;
    for (rank = 0, i = ps - j; i < pe - j; i++) {
        /* an older (shorter) entry by where its bits start: its raw value would put its
         * marker among them, and a bin out of order takes a growth's slow way */
        const uint32_t el = 31u - (uint32_t)__builtin_clz((uint32_t)b->e[i] | 1u);
        const uint32_t at = el > PK_SHORT && el <= eb
                                ? ((uint32_t)b->e[i] ^ (1u << el)) << (eb - el)
                                : (uint32_t)b->e[i];
        rank += ((at - lo) & emask) < key;
    }
#endif
    if (__builtin_popcountll(b->map & PK_MAP_MASK) >= (int)S) {
        const uint32_t p = 63u - (uint32_t)__builtin_clzll(b->map & PK_MAP_MASK);
        const uint32_t hb = p - (S - 1u); /* the bucket of the bin's last entry */
        if (hb > j && (rc = pk_sp_insert(x, s, g - j + hb, b->e[S - 1u])) != AMQ_EFULL) {
            if (rc != AMQ_OK)
                return rc;
            pk_spare_from(&b->map, hb);
            b->map &= ~(UINT64_C(1) << p); /* the 0s above it end empty buckets */
            (void)bin_put_at(b, j, v, rank);
        } else { /* (the highest bucket's crowded: the key's own entry goes, its cutoff lower) */
            if ((rc = pk_sp_insert(x, s, g, v)) != AMQ_OK)
                return rc;
            pk_spare_from(&b->map, j);
        }
    } else {
        (void)bin_put_at(b, j, v, rank);
    }
    return AMQ_OK;
}

/* Key h placed in its segment's bins. */
static int pk_place(amq_pk *x, uint64_t h)
{
    const uint32_t i = pk_seg_of(x, h);
    pk_seg *s = &x->seg[i];
    int rc;
    /* a segment due to grow (its growth put off for want of memory) takes no key that its
     * growth could not follow: past the target rate, or at its largest size */
    if (__builtin_expect(s->entries >= s->limit, 0) &&
        (pk_rate(x) > x->fpp || (double)s->nb * PK_GROWTH > (double)PK_MAX_BINS))
        return AMQ_ELIMIT;
    if ((rc = seg_add(x, s, h << x->d)) != AMQ_OK)
        return rc;
    s->entries++;
    s->rsum += x->unit;
    /* the growth after the key, so that a refused add changes nothing; without memory for it,
     * it is tried again after the segment's next key */
    if (__builtin_expect(s->entries >= s->limit, 0) && pk_rate(x) <= x->fpp)
        (void)pk_grow(x, i);
    return AMQ_OK;
}

/* The line at p fetched into every cache level. */
static inline void pk_fetch(const void *p)
{
#if defined(__x86_64__)
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p)); /* (gcc 12 drops the builtin here) */
#else
    __builtin_prefetch(p);
#endif
}

/* Key h's bin, fetched for its placement. */
static inline void pk_prefetch(const amq_pk *x, uint64_t h)
{
    const pk_seg *s = &x->seg[pk_seg_of(x, h)];
    pk_fetch(s->b + pk_mulhi(h << x->d, s->m) / B);
}

/* Pending key h's spare slots fetched when its bin (cached by now) is full: the run an
 * insert walks and shifts, tens of slots at the spare's load. */
static inline void pk_prefetch_spare(const amq_pk *x, uint64_t h)
{
    const pk_seg *s = &x->seg[pk_seg_of(x, h)];
    const uint64_t g = pk_mulhi(h << x->d, s->m);
    if (__builtin_popcountll(s->b[g / B].map & PK_MAP_MASK) >= (int)S && s->spn != 0) {
        const uint32_t *w = s->sp + pk_sp_home(s, g);
        const uint32_t *end = s->sp + s->splen;
        int l;
        for (l = 0; l < 4 && w < end; l++, w += 16)
            pk_fetch(w);
    }
}

/* An add waits in a ring of PK_PENDING keys while its bin is fetched (queries read the ring
 * too), so that a one-key add overlaps its miss with the next adds' as a batch would.  Every
 * half ring, the add that needs the oldest cell does the work of eight: the older half's
 * spare slots (their bins cached since the last such add) and the younger half's bins are
 * fetched together, then the older half is placed; the adds between only store their key.
 * A fetch of a line not in cache holds up the instructions after it for much of the miss
 * (docs/expandable-log.md): fetches issued together wait once, where one an add, each
 * followed by a placement's instructions, waited one by one.  A key that cannot be
 * placed for want of memory or past the rate stays pending and the new one is refused,
 * nothing changed; one whose bucket is crowded (AMQ_EFULL) stays pending and the new one is
 * placed at once (refused with AMQ_EFULL when its bucket is crowded too). */
static int pk_add(amq_pk *x, uint64_t h)
{
    const uint32_t c = x->pend_next, bit = UINT32_C(1) << c;
    const int full = (x->pend_used & bit) != 0; /* the oldest key's cell: this add places */
    uint32_t r;
    int rc;
    if (full) {
        for (r = 0; r < PK_PENDING; r++) {
            const uint32_t q = (c + r) % PK_PENDING;
            if ((x->pend_used >> q) & 1u) {
                if (r < PK_PENDING / 2u)
                    pk_prefetch_spare(x, x->pend[q]);
                else
                    pk_prefetch(x, x->pend[q]);
            }
        }
        if ((rc = pk_place(x, x->pend[c])) == AMQ_EFULL) {
            /* the oldest key's bucket is crowded: it stays pending (present), and this one is
             * placed now, the ring going on past it */
            if ((rc = pk_place(x, h)) != AMQ_OK)
                return rc;
            x->pend_next = (c + 1u) % PK_PENDING;
            x->items++;
            return 1;
        }
        if (rc != AMQ_OK)
            return rc;
        for (r = 1; r < PK_PENDING / 2u; r++) { /* the ring's older half with it */
            const uint32_t q = (c + r) % PK_PENDING;
            /* (a key that cannot be placed yet stays: its own cell's add says why) */
            if (!((x->pend_used >> q) & 1u) || pk_place(x, x->pend[q]) != AMQ_OK)
                break;
            x->pend_used &= ~(UINT32_C(1) << q);
            x->pend[q] = 0; /* (an empty cell is saved as 0) */
        }
    }
    x->pend[c] = h;
    x->pend_used |= bit;
    x->pend_next = (c + 1u) % PK_PENDING;
    if (full)
        pk_pend_resign(x); /* (once for the keys placed: a bit may be another pending key's) */
    else
        pk_pend_sign(x, h);
    x->items++;
    return 1;
}

#define ABATCH 64u

/* A chunk's bins fetched first, in one loop (one wait for 64 lines, where the one-key add's
 * fetches wait once a half ring), then each key added in turn, its line there by its
 * placing. */
static int isa_add_batch(amq_pk *x, const amq_hash128 *h, size_t n, uint8_t *added)
{
    size_t at, j;
    int rc;
    for (at = 0; at < n; at += ABATCH) {
        const size_t c = n - at < ABATCH ? n - at : ABATCH;
        for (j = 0; j < c; j++)
            pk_prefetch(x, h[at + j].h1);
        for (j = 0; j < c; j++) {
            if ((rc = pk_add(x, h[at + j].h1)) < 0)
                return rc;
            if (added != NULL)
                added[at + j] = (uint8_t)rc;
        }
    }
    return AMQ_OK;
}

/* Every pending key placed: AMQ_OK, or the first failure, the keys not placed still
 * pending. */
static int isa_settle(amq_pk *x)
{
    uint32_t c;
    int rc = AMQ_OK;
    for (c = 0; c < PK_PENDING; c++) {
        const uint32_t cell = (x->pend_next + c) % PK_PENDING;
        if (!((x->pend_used >> cell) & 1u))
            continue;
        if ((rc = pk_place(x, x->pend[cell])) != AMQ_OK)
            break;
        x->pend_used &= ~(UINT32_C(1) << cell);
        x->pend[cell] = 0; /* an empty cell is saved as 0 */
    }
    pk_pend_resign(x);
    return rc;
}

/* ---- the query ---------------------------------------------------------------------------- */

#if PK_VEC
/* pk_sp_has 16 slots a step (a bucket's run is ~13 slots at the spare's load): the slots of
 * buckets before g skipped, g's tested as a bin's entries are, up to the first empty slot or
 * slot of a later bucket. */
static inline int sp_has_vec(const pk_seg *s, uint64_t g, uint64_t hs)
{
    const __m512i gv = _mm512_set1_epi32((int)(g & 0xffffu));
    const __m512i y = _mm512_set1_epi32((int)((1u << 15) | (uint32_t)((hs << s->k) >> 49)));
    const __m512i ys = _mm512_set1_epi32((int)((1u << 15) | (uint32_t)((hs << (s->k - 1u)) >> 49)));
    uint64_t p;
    if (s->spn == 0)
        return 0;
    for (p = pk_sp_home(s, g);; p += 16u) {
        const uint64_t left = s->splen - p;
        const __mmask16 ok = (__mmask16)(left >= 16u ? 0xffffu : (1u << left) - 1u);
        const __m512i w = _mm512_maskz_loadu_epi32(ok, s->sp + p);
        /* the slot's bucket less g in the top 16 bits: > 0 past g, 0 g's */
        const __m512i d = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_srli_epi32(w, 16), gv), 16);
        const uint32_t stop = (uint32_t)(_mm512_testn_epi32_mask(w, w) |
                                         _mm512_cmpgt_epi32_mask(d, _mm512_setzero_si512())) |
                              (uint32_t)(__mmask16)~ok;
        const __mmask16 mine = (__mmask16)(_mm512_testn_epi32_mask(d, d) &
                                           ((stop & (0u - stop)) - 1u));
        const __m512i v = _mm512_and_si512(w, _mm512_set1_epi32(0xffff));
        const __m512i lz = _mm512_sub_epi32(_mm512_lzcnt_epi32(v), _mm512_set1_epi32(16));
        const __mmask16 shortl = _mm512_cmpge_epu32_mask(lz, _mm512_set1_epi32(15 - PK_SHORT));
        const __m512i want = _mm512_mask_blend_epi32(shortl, _mm512_srlv_epi32(y, lz),
                                                     _mm512_srlv_epi32(ys, lz));
        if (_mm512_mask_cmpeq_epi32_mask(mine, v, want) != 0)
            return 1;
        if (stop != 0)
            return 0;
    }
}
#endif

/* The spare and the deep ranges, for a bin that says bucket g may have keys there. */
__attribute__((noinline)) static int seg_spare_has(const pk_seg *s, uint64_t hs, uint64_t g)
{
    /* the deep list's line fetched beside the spare's: two misses at once where they came one
     * after the other (for the 3.9 % of one-key queries at 1e8 that come here) */
    if (s->ndeep != 0)
        pk_fetch(s->deep + pk_deep_guess(s, hs));
#if PK_VEC
    return sp_has_vec(s, g, hs) || pk_deep_has(s, hs);
#else
    return pk_sp_has(s, g, hs) || pk_deep_has(s, hs);
#endif
}

/* Does bin b answer key hs (its segment's bits taken off) of segment s in its bucket j?  (The
 * spare not read; with AVX-512 no branch on the line, so that a batch keeps going while a
 * line is on its way.)  shorts: the segment's bins may hold short entries (s->short_bins),
 * whose test takes two more steps on the line. */
static inline __attribute__((always_inline)) int bin_has(const pk_seg *s, uint64_t hs,
                                                         const pk_bin *b, uint32_t j, int shorts)
{
#if PK_VEC
    /* entry i is in bucket j when the place of the map's i-th 1 (from 1) is i + 1 + j: the
     * places packed into bytes and compared with i + 1 + j at once, bit i of the result moved
     * to lane 4 + i (lanes past the entries hold 0 or a cutoff bit's place, 61 or more: never
     * equal).  Few steps, all off the integer units: the next queries' hashing and addressing
     * wait behind whatever sits there for this line (a scalar select: docs/expandable-log.md). */
    const __m512i idx = _mm512_set_epi8(64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51,
                                        50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37,
                                        36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23,
                                        22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8,
                                        7, 6, 5, 4, 3, 2, 1);
    const __mmask32 in = (__mmask32)_kshiftli_mask64(
        _mm512_cmpeq_epi8_mask(_mm512_maskz_compress_epi8(_cvtu64_mask64(b->map), idx),
                               _mm512_add_epi8(idx, _mm512_set1_epi8((char)j))),
        4);
    const __m512i line = _mm512_loadu_si512((const void *)b);
    const __m512i lz = _mm512_mask_blend_epi16(
        (__mmask32)0xAAAAAAAAu, _mm512_lzcnt_epi32(_mm512_slli_epi32(line, 16)),
        _mm512_slli_epi32(_mm512_lzcnt_epi32(line), 16));
    const __m512i y =
        _mm512_set1_epi16((short)((1u << 15) | (uint32_t)((hs << s->k) >> 49)));
    __m512i want = _mm512_srlv_epi16(y, lz);
    if (shorts) {
        const __m512i ys =
            _mm512_set1_epi16((short)((1u << 15) | (uint32_t)((hs << (s->k - 1u)) >> 49)));
        want = _mm512_mask_srlv_epi16(
            want, _mm512_cmpge_epu16_mask(lz, _mm512_set1_epi16(15 - PK_SHORT)), ys, lz);
    }
    return _mm512_mask_cmpeq_epi16_mask(in, line, want) != 0;
#else
    const uint64_t z = ~b->map & PK_MAP_MASK;
    const uint32_t pe = select1(z, j), ps = j ? select1(z, j - 1u) + 1u : 0u;
    uint32_t i;
    (void)shorts; /* (pk_entry_hits tells the forms apart) */
    for (i = ps - j; i < pe - j; i++)
        if (pk_entry_hits(b->e[i], hs, s->k))
            return 1;
    return 0;
#endif
}

/* Key h's answer where its bin sends its bucket to the spare or h may be pending (in: the
 * bin's answer); apart, so that the common path makes no call and keeps no frame. */
__attribute__((noinline)) static int pk_has_rare(const amq_pk *x, uint64_t h, int in)
{
    const pk_seg *s = &x->seg[pk_seg_of(x, h)];
    const uint64_t hs = h << x->d, g = pk_mulhi(hs, s->m);
    return in || (pk_to_spare(s->b[g / B].map, (uint32_t)(g % B)) && seg_spare_has(s, hs, g)) ||
           (pk_pend_maybe(x, h) && pk_pend_has(x, h));
}

static inline __attribute__((always_inline)) int pk_has(const amq_pk *x, uint64_t h)
{
    const pk_seg *s = &x->seg[pk_seg_of(x, h)];
    const uint64_t hs = h << x->d, g = pk_mulhi(hs, s->m);
    const pk_bin *b = s->b + g / B;
    const uint32_t j = (uint32_t)(g % B);
    /* (a branch on the segment, taken alike by every query of a filter in practice) */
    const int in = s->short_bins ? bin_has(s, hs, b, j, 1) : bin_has(s, hs, b, j, 0);
    /* branches only where they are predictable (the bin sends the bucket to the spare for
     * ~4 % of keys at 1e8, h may be pending for ~0.4 %), each a jump to the same rare path; none on
     * the hit itself, half taken, which would hold the next query's miss until this one's
     * line is in (a mispredict discards what followed it) */
    if (__builtin_expect(pk_to_spare(b->map, j), 0))
        return pk_has_rare(x, h, in);
    if (__builtin_expect(pk_pend_maybe(x, h), 0))
        return pk_has_rare(x, h, in);
    return in;
}

static int isa_contains(const amq_pk *x, uint64_t h)
{
    return pk_has(x, h);
}

__attribute__((noinline)) static int contains_key_any(const amq_pk *x, const void *key, size_t len)
{
    return pk_has(x, amq_hash_key(x->hash_algo, x->seed, key, len).h1);
}

/* The handle's one-key entry: an 8-byte key under XXH3 hashed inline. */
static int isa_contains_key(const void *impl, const void *key, size_t len)
{
    const amq_pk *x = impl;
    if (__builtin_expect(len != 8 || x->hash_algo != AMQ_HASH_XXH3, 0))
        return contains_key_any(x, key, len);
    return pk_has(x, amq_xxh3_8(x->x8, key));
}

#define QBATCH 128u /* keys whose lines are prefetched together, then tested */
#define QSLOW 256u  /* keys the bins did not answer, kept until their spare slots are fetched */

/* May h be a pending key, as far as a batch's test tells: with AVX-512 exactly (the ring's 16
 * keys in two registers, no branch), else by its bit of the signature (the slow keys' pass
 * reads the ring). */
static inline int batch_pend(const amq_pk *x, uint64_t h)
{
#if PK_VEC
    const __m512i hv = _mm512_set1_epi64((long long)h);
    const uint32_t eq =
        (uint32_t)_mm512_cmpeq_epi64_mask(hv, _mm512_loadu_si512((const void *)x->pend)) |
        (uint32_t)_mm512_cmpeq_epi64_mask(hv, _mm512_loadu_si512((const void *)(x->pend + 8)))
            << 8;
    return (eq & x->pend_used) != 0;
#else
    return pk_pend_maybe(x, h);
#endif
}

/* The batch's keys that their bins left open, sl[t] = i << 1 | s: key i, whose bucket may have
 * keys in the spare or the deep ranges when s is 1, or which may be pending (its bin is not
 * read again: by now it may have left the caches).  Every spare's first two lines fetched,
 * then each key answered as the one-key query would. */
__attribute__((noinline)) static void batch_slow(const amq_pk *x, const amq_hash128 *h,
                                                 const size_t *sl, size_t ns, uint8_t *out)
{
    size_t t;
    for (t = 0; t < ns; t++) {
        const pk_seg *s = &x->seg[pk_seg_of(x, h[sl[t] >> 1].h1)];
        if ((sl[t] & 1u) && s->spn != 0) {
            const uint32_t *w = s->sp + pk_sp_home(s, pk_mulhi(h[sl[t] >> 1].h1 << x->d, s->m));
            __builtin_prefetch(w);
            if (w + 16 < s->sp + s->splen) /* a bucket's run is ~13 slots: often two lines */
                __builtin_prefetch(w + 16);
        }
    }
    for (t = 0; t < ns; t++) {
        const size_t i = sl[t] >> 1;
        const uint64_t k = h[i].h1, hs = k << x->d;
        const pk_seg *s = &x->seg[pk_seg_of(x, k)];
        out[i] = (uint8_t)(((sl[t] & 1u) && seg_spare_has(s, hs, pk_mulhi(hs, s->m))) ||
                           (pk_pend_maybe(x, k) && pk_pend_has(x, k)));
    }
}

/* The batch, QBATCH keys at a time: every key's segment, bucket and line found and the line
 * prefetched (into L2, as the blocked filter's batch: it has more miss buffers), then every
 * key tested against its bin, with no branch on a line (a mispredicted one waits for its line
 * and throws away the tests behind it).  A window sliding key by key, the next keys' lines
 * fetched among the tests (the blocked filter's way), measured slower with a test this long.
 * The keys the bins leave open go on a list, answered after their spare slots are fetched (a
 * few percent: the buckets past a full bin's cutoff, the pending keys' signature without
 * AVX-512). */
static void isa_contains_batch(const amq_pk *x, const amq_hash128 *h, size_t n, uint8_t *out)
{
    uint64_t hb[QBATCH];
    const pk_bin *lp[QBATCH];
    uint8_t sg[QBATCH], jb[QBATCH];
    size_t sl[QSLOW];
    size_t at = 0, ns = 0, j;
    uint32_t shorts = 0, t;
    for (t = 0; t < 1u << x->d; t++) /* (one test for the whole batch) */
        shorts |= x->seg[t].short_bins;
    while (at < n) {
        const size_t c = n - at < QBATCH ? n - at : QBATCH;
        for (j = 0; j < c; j++) {
            const uint32_t i = pk_seg_of(x, h[at + j].h1);
            const pk_seg *s = &x->seg[i];
            const uint64_t g = pk_mulhi(h[at + j].h1 << x->d, s->m);
            sg[j] = (uint8_t)i;
            hb[j] = h[at + j].h1 << x->d;
            jb[j] = (uint8_t)(g % B);
            lp[j] = s->b + g / B;
            __builtin_prefetch(lp[j], 0, 2);
        }
        for (j = 0; j < c; j++) {
            const pk_seg *s = &x->seg[sg[j]];
            const int hit = (shorts ? bin_has(s, hb[j], lp[j], jb[j], 1)
                                    : bin_has(s, hb[j], lp[j], jb[j], 0)) |
                            (PK_VEC && batch_pend(x, h[at + j].h1));
            const int spare = pk_to_spare(lp[j]->map, jb[j]);
            const int open = (spare | (!PK_VEC && batch_pend(x, h[at + j].h1))) & (hit ^ 1);
            out[at + j] = (uint8_t)hit;
            sl[ns] = (at + j) << 1 | (size_t)spare;
            ns += (size_t)open;
            if (__builtin_expect(ns == QSLOW, 0)) {
                batch_slow(x, h, sl, ns, out);
                ns = 0;
            }
        }
        at += c;
    }
    batch_slow(x, h, sl, ns, out);
}

/* ---- the rewrite into a larger table, in one pass ----------------------------------------- */

typedef struct writer {
    pk_tab *t;
    uint64_t bin_at; /* the bin being written */
    uint64_t g0;     /* its first bucket */
    uint32_t bucket; /* its bucket being written */
    uint32_t pos, n; /* its map's next bit, its entries */
    uint32_t run;    /* the entries of its bucket being written */
    pk_bin cur;
    uint64_t seen_g; /* the new bucket of the places below */
    uint32_t nseen;
    uint16_t seen[16]; /* places the general way put in bucket seen_g */
} writer;

static void writer_to(writer *w, uint64_t nb)
{
    w->t->b[w->bin_at] = w->cur; /* the buckets after the last written are empty: 0 bits */
    memset(&w->cur, 0, sizeof w->cur);
    if (nb > w->bin_at + 1u) /* the bins between are empty */
        memset(w->t->b + w->bin_at + 1u, 0, (nb - w->bin_at - 1u) * sizeof(pk_bin));
    w->bin_at = nb;
    w->g0 = nb * B;
    w->bucket = 0;
    w->pos = w->n = w->run = 0;
}

static void writer_overflow(writer *w, pk_bin *b, uint64_t g, uint16_t v)
{
    pk_spare_from(&b->map, (uint32_t)(g % B));
    pk_push_spare(w->t, g, v);
}

/* An entry of the bucket before the one being written: an old bucket's entries are in the
 * order they came, and its range meets two new buckets about every time. */
static void writer_put_back(writer *w, uint64_t g, uint16_t v)
{
    const uint32_t at = w->pos - w->run - 1u; /* the 0 that ends bucket g */
    const uint64_t low = (UINT64_C(1) << at) - 1u;
    if (w->n >= S) {
        writer_overflow(w, &w->cur, g, v);
        return;
    }
    w->cur.map = (w->cur.map & (low | PK_SPARE_FIELD)) | (UINT64_C(1) << at) |
                 (((w->cur.map & PK_MAP_MASK) & ~low) << 1);
    memmove(&w->cur.e[w->n - w->run + 1], &w->cur.e[w->n - w->run], w->run * sizeof(uint16_t));
    w->cur.e[w->n - w->run] = v;
    w->n++;
    w->pos++;
}

/* Entry v into bucket g of the new table, out of key order: placed where it belongs. */
__attribute__((noinline)) static void writer_put_slow(writer *w, uint64_t g, uint16_t v)
{
    if (g + 1u == w->g0 + w->bucket && w->bucket > 0) {
        writer_put_back(w, g, v);
    } else if (g >= w->g0) {
        if (bin_put_at(&w->cur, (uint32_t)(g - w->g0), v, UINT32_MAX)) {
            w->pos++;
            w->n++;
        } else {
            writer_overflow(w, &w->cur, g, v);
        }
    } else if (!bin_put_at(w->t->b + g / B, (uint32_t)(g % B), v, UINT32_MAX)) {
        writer_overflow(w, w->t->b + g / B, g, v);
    }
}

__attribute__((noinline)) static void writer_next_bucket(writer *w, uint64_t g)
{
    if (g >= w->g0 + B)
        writer_to(w, g / B);
    w->pos += (uint32_t)(g - w->g0) - w->bucket; /* a 0 ends each bucket passed */
    w->bucket = (uint32_t)(g - w->g0);
    w->run = 0;
}

/* Entry v into bucket g of the new table: in key order, appended (the usual case); else
 * placed where it belongs. */
static inline __attribute__((always_inline)) void writer_put(writer *w, uint64_t g, uint16_t v)
{
    if (__builtin_expect(g != w->g0 + w->bucket, 0)) {
        if (g < w->g0 + w->bucket) {
            writer_put_slow(w, g, v);
            return;
        }
        writer_next_bucket(w, g);
    }
    if (__builtin_expect(w->n < S, 1)) {
        w->cur.map |= UINT64_C(1) << w->pos++;
        w->cur.e[w->n++] = v;
        w->run++;
    } else {
        writer_overflow(w, &w->cur, g, v);
    }
}

typedef struct placed {
    uint64_t g;
    uint16_t v;
} placed;

/* Entry v of bucket [lo, hi1] of a table of level k, placed for a table of m2 buckets and
 * level k2 >= k: each range of h it stands for (pk_entry_ranges) goes to the new buckets it
 * meets (at most three: the new table is at most twice as large), its entry shortened to
 * level k2.  At most 6 places; an entry left with no bit goes to dst's deep ranges. */
static inline uint32_t replace(uint64_t lo, uint64_t hi1, uint32_t k, uint16_t v, uint64_t m2,
                               uint32_t k2, placed *out, pk_tab *deep_to)
{
    uint64_t r[2][2];
    uint32_t p, no = 0, i;
    const uint32_t nr = pk_entry_ranges(lo, hi1, k, v, r, &p);
    for (i = 0; i < nr; i++) {
        const uint64_t a = r[i][0], e = r[i][1];
        /* the entry at level k2: p - k2 bits from bit k2, or (PK_SHORT or fewer) up to
         * PK_SHORT from bit k2 - 1, which tells a bucket's two cells apart (else a short
         * entry stands for both, and its copies double growth after growth) */
        int len2 = p == 0 ? 0 : (int)p - (int)k2;
        uint32_t from = k2;
        uint64_t g, g1, g2;
        uint16_t v2;
        if (p != 0 && len2 <= (int)PK_SHORT) {
            if (deep_to->short_deep) { /* its range, exactly (PK_SHORT_DEEP_BITS) */
                pk_push_deep(deep_to, a, e);
                continue;
            }
            len2 = len2 + 1 > (int)PK_SHORT ? (int)PK_SHORT : len2 + 1;
            from = k2 - 1u;
        }
        if (len2 <= 0) {
            if (p == 0) { /* a bucket-wide entry: to every bucket it meets */
                g1 = pk_mulhi(a, m2);
                g2 = pk_mulhi(e, m2);
                for (g = g1; g <= g2 && no < 6; g++) {
                    out[no].g = g;
                    out[no++].v = 1;
                }
                continue;
            }
            pk_push_deep(deep_to, a, e); /* no bit left: its range, exactly */
            continue;
        }
        v2 = (uint16_t)((1u << len2) | ((a << from) >> (64u - (uint32_t)len2)));
        g1 = pk_mulhi(a, m2);
        g2 = pk_mulhi(e, m2);
        for (g = g1; g <= g2 && no < 6; g++) {
            out[no].g = g;
            out[no++].v = v2;
        }
    }
    return no;
}

/* Entry v of bucket g of t, the general way: its candidate ranges, exactly. */
static void rewrite_one(writer *w, const pk_tab *t, uint64_t g, uint16_t v)
{
    placed out[6];
    const uint32_t np = replace((uint64_t)bucket_lo(g, t->m),
                                (uint64_t)(bucket_lo(g + 1u, t->m) - 1u), t->k, v, w->t->m,
                                w->t->k, out, w->t);
    uint32_t y, z;
    for (y = 0; y < np; y++) {
        /* a range clipped by its bucket's edge (an earlier growth's copy) meets its other
         * part's in one new bucket: kept once, else such copies double growth after growth */
        if (out[y].g != w->seen_g || w->nseen == 0) {
            w->seen_g = out[y].g;
            w->nseen = 0;
        }
        for (z = 0; z < w->nseen && w->seen[z] != out[y].v; z++)
            ;
        if (z < w->nseen)
            continue;
        if (w->nseen < 16)
            w->seen[w->nseen++] = out[y].v;
        writer_put(w, out[y].g, out[y].v);
    }
}

/* The new table's geometry and the old one's, as one entry's rewrite needs them. */
typedef struct geometry {
    uint64_t q0, cell, m2;
    uint64_t width;  /* q0 - 1: h at lo + margin .. lo + width lies in g */
    uint64_t margin; /* g q0 is at most m below bucket g's first h */
    uint32_t k, k2;
} geometry;

/* Entry v of bucket g: the usual entry has one cell's range, well inside its bucket, in one
 * new bucket: 1 with its new bucket and entry in *g2, *v2; 0 for any other, which goes the
 * general way. */
static inline int rewrite_fast(const geometry *c, uint64_t g, uint16_t v, uint64_t *g2,
                               uint16_t *v2)
{
    const uint32_t len = 31u - (uint32_t)__builtin_clz(v), sh = 64u - c->k - len;
    const int len2 = (int)len - (int)(c->k2 - c->k);
    const uint64_t bits = v ^ (1u << len), lo = g * c->q0, size1 = (UINT64_C(1) << sh) - 1u;
    const uint64_t s1 = (lo & ~(c->cell - 1u)) | (bits << sh);
    const uint64_t s0 = s1 + (c->cell & (uint64_t) - (int64_t)(s1 < lo));
    const unsigned __int128 pr = (unsigned __int128)s0 * c->m2;
    const uint64_t p = ((s0 >> (64u - c->k)) << len) | bits;
    if (len == 0 || len2 <= (int)PK_SHORT)
        return 0;
    *g2 = (uint64_t)(pr >> 64);
    *v2 = (uint16_t)((1u << len2) | (p & ((UINT64_C(1) << len2) - 1u)));
    return (s0 - lo >= c->margin) & (s0 - lo <= c->width - size1) &
           ((uint64_t)pr <= UINT64_MAX - size1 * c->m2);
}

__attribute__((noinline)) static void rewrite_any(writer *w, const pk_tab *t, const geometry *c,
                                                  uint64_t g, uint16_t v)
{
    uint64_t g2;
    uint16_t v2;
    if (rewrite_fast(c, g, v, &g2, &v2))
        writer_put(w, g2, v2);
    else
        rewrite_one(w, t, g, v);
}

#if PK_VEC
/* 8 bytes of x from byte c (a multiple of 8, under 32), as 64-bit lanes. */
static inline __m512i bytes8(__m512i x, int c)
{
    const __m128i q = c < 16 ? _mm512_castsi512_si128(x) : _mm512_extracti32x4_epi32(x, 1);
    return _mm512_cvtepu8_epi64(c % 16 ? _mm_unpackhi_epi64(q, q) : q);
}

/* The high 64 bits of s m2 (m2 under 2^32) in each lane. */
static inline __m512i mulhi32(__m512i s, __m512i vm2)
{
    const __m512i p0 = _mm512_mul_epu32(s, vm2);
    return _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(s, 32), vm2),
                                              _mm512_srli_epi64(p0, 32)),
                             32);
}

/* The usual bin 8 entries at a time: each entry's new bucket into g2s[] and its entry into
 * vs[], in the bin's order (new buckets may come out of order: the caller sends one behind
 * the writer writer_put's way), the count of entries returned; -1 when any of them is not
 * the usual one (rewrite_fast's conditions).
 * kc: q0, the cell, the margin, the width, m2 (under 2^32), k, the levels gained (0 or 1). */
static inline int bin_g2(const pk_bin *b, uint64_t base, const uint64_t *kc,
                         uint64_t *g2s, uint16_t *vs)
{
    const uint64_t ones = b->map & PK_MAP_MASK;
    const int n = __builtin_popcountll(ones);
    const __m512i iota = _mm512_set_epi8(
        63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42,
        41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20,
        19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i jb = _mm512_sub_epi8(_mm512_maskz_compress_epi8(ones, iota), iota);
    const __m512i vq0 = _mm512_set1_epi64((long long)kc[0]);
    const __m512i vcell = _mm512_set1_epi64((long long)kc[1]);
    const __m512i vcmask = _mm512_set1_epi64((long long)~(kc[1] - 1u));
    const __m512i vmargin = _mm512_set1_epi64((long long)kc[2]);
    const __m512i vwidth = _mm512_set1_epi64((long long)kc[3]);
    const __m512i vm2 = _mm512_set1_epi64((long long)kc[4]);
    const __m512i v64k = _mm512_set1_epi64((long long)(64u - kc[5]));
    const __m512i vminlen = _mm512_set1_epi64((long long)(PK_SHORT + 1u + kc[6]));
    const __m512i one = _mm512_set1_epi64(1), v63 = _mm512_set1_epi64(63);
    const int step = kc[6] != 0;
    int c;
    for (c = 0; c < n; c += 8) {
        const __mmask8 live = (__mmask8)(n - c >= 8 ? 0xffu : (1u << (n - c)) - 1u);
        const __m512i v = _mm512_maskz_cvtepu16_epi64(live, _mm_maskz_loadu_epi16(live, b->e + c));
        const __m512i len = _mm512_sub_epi64(v63, _mm512_lzcnt_epi64(v));
        const __m512i mark = _mm512_sllv_epi64(one, len);
        const __m512i sh = _mm512_sub_epi64(v64k, len);
        const __m512i size1 = _mm512_sub_epi64(_mm512_sllv_epi64(one, sh), one);
        const __m512i g = _mm512_add_epi64(_mm512_set1_epi64((long long)base), bytes8(jb, c));
        const __m512i lo = _mm512_mullo_epi64(g, vq0);
        const __m512i bits = _mm512_sllv_epi64(_mm512_xor_si512(v, mark), sh);
        const __m512i s1 = _mm512_or_si512(_mm512_and_si512(lo, vcmask), bits);
        const __m512i s0 = _mm512_mask_add_epi64(s1, _mm512_cmplt_epu64_mask(s1, lo), s1, vcell);
        const __m512i d = _mm512_sub_epi64(s0, lo);
        const __m512i g2 = mulhi32(s0, vm2);
        const __mmask8 ok = _mm512_mask_cmpge_epu64_mask(live, len, vminlen) &
                            _mm512_cmpge_epu64_mask(d, vmargin) &
                            _mm512_cmple_epu64_mask(d, _mm512_sub_epi64(vwidth, size1)) &
                            _mm512_cmpeq_epi64_mask(g2, mulhi32(_mm512_add_epi64(s0, size1), vm2));
        if (ok != live)
            return -1;
        _mm512_storeu_si512((void *)(g2s + c), g2);
        if (step) { /* a bit fewer past a power of two: the marker one down */
            const __m512i m1 = _mm512_srli_epi64(mark, 1);
            _mm_mask_storeu_epi16(vs + c, live,
                                  _mm512_cvtepi64_epi16(_mm512_or_si512(
                                      m1, _mm512_and_si512(v, _mm512_sub_epi64(m1, one)))));
        }
    }
    if (!step)
        memcpy(vs, b->e, sizeof b->e);
    return n;
}
#endif

/* Table t written into dst (its geometry set, its bins t's own lines or new ones, its lists
 * empty) in one pass; the spare's entries (t->sp, in bucket order) merged in at their
 * buckets, t's deep ranges kept. */
static void isa_rewrite(const pk_tab *t, pk_tab *dst)
{
    const unsigned __int128 one = (unsigned __int128)1 << 64;
    geometry c;
    const pk_ent *sp = t->sp;
    const uint64_t nsp = t->nsp;
    uint64_t si = 0, x, ob;
    writer w;
    c.q0 = (uint64_t)(one / t->m);
    c.cell = UINT64_C(1) << (64u - t->k);
    c.margin = t->m + 1u;
    c.width = c.q0 - 1u;
    c.m2 = dst->m;
    c.k = t->k;
    c.k2 = dst->k;
    memset(&w, 0, sizeof w);
    w.t = dst;
    {
        /* The usual entry, written by the loop below with the writer's state in registers;
         * any other, and the spare's, by rewrite_any. */
        const uint64_t q0 = c.q0, cell = c.cell, cmask = ~(c.cell - 1u), m2 = c.m2;
        const uint32_t step = c.k2 - c.k, k64 = 64u - c.k;
        const uint64_t margin = c.margin, width = c.width;
        const uint32_t minlen = step <= 1u ? PK_SHORT + 1u + step : 64u;
        uint64_t map = 0, gw = 0, g_end = B, spg = nsp > 0 ? sp[0].g : UINT64_MAX;
        uint32_t pos = 0, n = 0;
        uint16_t *ce = w.cur.e;
/* the writer's state to memory and back, around its slow ways */
#define W_SAVE()                                                                                   \
    do {                                                                                           \
        w.cur.map = map;                                                                           \
        w.pos = pos;                                                                               \
        w.n = n;                                                                                   \
        w.run = pos ? (uint32_t)__builtin_clzll(~(map << (64u - pos))) : 0u;                     \
        w.bucket = (uint32_t)(gw - w.g0);                                                          \
    } while (0)
#define W_LOAD()                                                                                   \
    do {                                                                                           \
        map = w.cur.map;                                                                           \
        pos = w.pos;                                                                               \
        n = w.n;                                                                                   \
        gw = w.g0 + w.bucket;                                                                      \
        g_end = w.g0 + B;                                                                          \
    } while (0)
/* v2 appended in new bucket g2 (not before the one being written): the next bin begun when
 * g2 is past this one, the spare when this one is full */
#define W_APPEND(g2_, v2_)                                                                         \
    do {                                                                                           \
        if ((g2_) >= g_end) {                                                                      \
            w.cur.map = map;                                                                       \
            w.n = n;                                                                               \
            writer_to(&w, (g2_) / B);                                                              \
            map = 0;                                                                               \
            n = 0;                                                                                 \
            g_end = w.g0 + B;                                                                      \
        }                                                                                          \
        gw = (g2_);                                                                                \
        pos = (uint32_t)((g2_) - (g_end - B)) + n;                                                 \
        if (__builtin_expect(n >= S, 0)) {                                                         \
            pk_spare_from(&map, (uint32_t)((g2_) % B));                                            \
            pk_push_spare(dst, (g2_), (v2_));                                                  \
        } else {                                                                                   \
            map |= UINT64_C(1) << pos++;                                                           \
            ce[n++] = (v2_);                                                                       \
        }                                                                                          \
    } while (0)
/* the spare's entries of buckets before lim_, each the usual one not behind the writer
 * appended as W_APPEND does, any other as rewrite_any does (writer_put's same steps) */
#define W_MERGE(lim_)                                                                              \
    do {                                                                                           \
        for (; si < nsp && sp[si].g < (lim_); si++) {                                              \
            uint64_t g2_;                                                                          \
            uint16_t v2_;                                                                          \
            if (rewrite_fast(&c, sp[si].g, sp[si].v, &g2_, &v2_) && g2_ >= gw) {                   \
                W_APPEND(g2_, v2_);                                                                \
            } else {                                                                               \
                W_SAVE();                                                                          \
                rewrite_any(&w, t, &c, sp[si].g, sp[si].v);                                        \
                W_LOAD();                                                                          \
            }                                                                                      \
        }                                                                                          \
        spg = si < nsp ? sp[si].g : UINT64_MAX;                                                    \
    } while (0)
#if PK_VEC
        const uint64_t kc[7] = {q0, cell, c.margin, c.width, m2, c.k, c.k2 - c.k};
        const int vec = m2 <= UINT32_MAX && c.k2 - c.k <= 1u;
        uint64_t g2s[32];
        uint16_t vs[S];
#endif
        for (ob = 0; ob < t->nb; ob++) {
            const pk_bin *b = t->b + ob;
            const uint64_t base = ob * B;
            uint64_t ones = b->map & PK_MAP_MASK;
            uint32_t e = 0;
#if PK_VEC
            int nv;
            /* a bin whose entries' new buckets are out of order is taken in its order (sorted,
             * a full bin would send another entry to the spare than the writer does, and the
             * file's bytes would depend on the CPU) */
            if (vec && (nv = bin_g2(b, base, kc, g2s, vs)) >= 0) {
                /* the writer as the baseline's, in the same order: the spare's entries of
                 * buckets before an entry's before it (a bucket's own after its bin entries:
                 * the spare holds a full bin's last), those of the bin's other buckets after
                 * its last.  The entries between two such steps go into each new bin at once,
                 * its map's bits set 8 a step (W_APPEND's, without its branches an entry). */
                int i = 0;
                while (i < nv) {
                    int j = nv, r;
                    uint64_t g0;
                    if (spg < base + B) {
                        /* the entries of buckets up to spg's come first (none when a bin the
                         * baseline's way left its last buckets' spare entries) */
                        const uint64_t z =
                            spg < base
                                ? 1u
                                : _pdep_u64(UINT64_C(1) << (spg - base), ~ones & PK_MAP_MASK);
                        j = __builtin_popcountll(ones & (z - 1u));
                        if (j <= i) {
                            const uint64_t at = _pdep_u64(UINT64_C(1) << i, ones);
                            const uint64_t g = base + (uint32_t)__builtin_ctzll(at) - (uint32_t)i;
                            W_MERGE(g);
                            continue;
                        }
                    }
                    if (g2s[i] < gw) { /* behind a spare entry's */
                        W_SAVE();
                        writer_put(&w, g2s[i], vs[i]);
                        W_LOAD();
                        i++;
                        continue;
                    }
                    if (g2s[i] >= g_end) {
                        w.cur.map = map;
                        w.n = n;
                        writer_to(&w, g2s[i] / B);
                        map = 0;
                        n = 0;
                        g_end = w.g0 + B;
                    }
                    g0 = g_end - B;
                    for (r = i + 1; r < j && g2s[r] < g_end && g2s[r] >= g2s[r - 1]; r++)
                        ; /* (one behind the last goes writer_put's way, as the baseline's) */
                    if (n + (uint32_t)(r - i) > S) { /* a full bin: W_APPEND's spare */
                        for (; i < r; i++)
                            W_APPEND(g2s[i], vs[i]);
                        continue;
                    }
                    {
                        /* entry i + y at bit g2 - g0 + n + y */
                        const __m512i off = _mm512_set1_epi64((long long)(n - g0 - (uint64_t)i));
                        const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
                        const __mmask32 run = (__mmask32)((1u << (r - i)) - 1u);
                        __m512i bits = _mm512_setzero_si512();
                        int q;
                        for (q = i; q < r; q += 8) {
                            const __mmask8 in =
                                (__mmask8)(r - q >= 8 ? 0xffu : (1u << (r - q)) - 1u);
                            const __m512i at = _mm512_add_epi64(
                                _mm512_add_epi64(_mm512_maskz_loadu_epi64(in, g2s + q), off),
                                _mm512_add_epi64(lane, _mm512_set1_epi64(q)));
                            bits = _mm512_mask_or_epi64(
                                bits, in, bits, _mm512_sllv_epi64(_mm512_set1_epi64(1), at));
                        }
                        map |= (uint64_t)_mm512_reduce_or_epi64(bits);
                        _mm512_mask_storeu_epi16(ce + n, run,
                                                 _mm512_maskz_loadu_epi16(run, vs + i));
                        n += (uint32_t)(r - i);
                        gw = g2s[r - 1];
                        pos = (uint32_t)(gw - g0) + n;
                    }
                    i = r;
                }
                if (spg < base + B)
                    W_MERGE(base + B);
                continue;
            }
#endif
            for (; ones != 0; ones &= ones - 1u, e++) {
                const uint64_t g = base + (uint32_t)__builtin_ctzll(ones) - e;
                const uint16_t v = b->e[e];
                const uint32_t len = 31u - (uint32_t)__builtin_clz((uint32_t)v | 1u);
                const uint32_t sh = k64 - len;
                const uint64_t size1 = (UINT64_C(1) << sh) - 1u, lo = g * q0;
                const uint64_t s1 = (lo & cmask) | ((uint64_t)(v ^ (1u << len)) << sh);
                const uint64_t s0 = s1 + (cell & (uint64_t) - (int64_t)(s1 < lo));
                const uint64_t g2 = pk_mulhi(s0, m2);
                const uint16_t v2 =
                    (uint16_t)(step && len ? (v & ((1u << (len - 1u)) - 1u)) | (1u << (len - 1u))
                                           : v);
                if (__builtin_expect((g > spg) | (len < minlen) | (s0 - lo < margin) |
                                         (s0 - lo > width - size1) |
                                         (pk_mulhi(s0 + size1, m2) != g2) | (g2 < gw),
                                     0)) {
                    W_SAVE(); /* the slow way */
                    for (; si < nsp && sp[si].g < g; si++)
                        rewrite_any(&w, t, &c, sp[si].g, sp[si].v);
                    spg = si < nsp ? sp[si].g : UINT64_MAX;
                    rewrite_any(&w, t, &c, g, v);
                    W_LOAD();
                    continue;
                }
                W_APPEND(g2, v2);
            }
        }
        W_SAVE();
#undef W_SAVE
#undef W_LOAD
#undef W_APPEND
#undef W_MERGE
        for (; si < nsp; si++) /* the spare's of the last buckets */
            rewrite_any(&w, t, &c, sp[si].g, sp[si].v);
    }
    writer_to(&w, w.bin_at);
    if (w.bin_at + 1u < dst->nb) /* the bins after the last entry's */
        memset(dst->b + w.bin_at + 1u, 0, (dst->nb - w.bin_at - 1u) * sizeof(pk_bin));
    for (x = 0; x < t->ndeep; x++) /* the old deep ranges stay, as ranges of h */
        pk_push_deep(dst, t->deep[x][0], t->deep[x][1]);
}

static int isa_add(amq_pk *x, uint64_t h)
{
    return pk_add(x, h);
}

/* The handle's one-key add: an 8-byte key under XXH3 hashed inline. */
static int isa_add_key(void *impl, const void *key, size_t len)
{
    amq_pk *x = impl;
    if (__builtin_expect(len != 8 || x->hash_algo != AMQ_HASH_XXH3, 0))
        return pk_add(x, amq_hash_key(x->hash_algo, x->seed, key, len).h1);
    return pk_add(x, amq_xxh3_8(x->x8, key));
}

const amq_pk_isa PK_ISA_TABLE = {
    .add = isa_add,
    .contains = isa_contains,
    .contains_batch = isa_contains_batch,
    .contains_key = isa_contains_key,
    .add_key = isa_add_key,
    .add_batch = isa_add_batch,
    .rewrite = isa_rewrite,
    .settle = isa_settle,
};

#undef ABATCH
#undef S
#undef B
