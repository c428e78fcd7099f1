/*
 * fuse.c - binary fuse filters (Graf & Lemire, "Binary Fuse Filters: Fast
 * and Smaller Than Xor Filters", 2022), written from the paper.
 *
 * A partition of n keys is an array of (segment_count + arity - 1)
 * segments of segment_length fingerprints (8 or 16 bits).  A key x maps to
 * arity positions: h0 = (x * segment_count * segment_length) >> 64 in
 * segment s, then one position in each of the next arity - 1 segments,
 * at h0's offset xor-ed with other bits of x.  The filter stores values
 * such that the xor of a key's arity slots is its fingerprint; a query
 * reads arity slots inside one window of arity segments.
 *
 * Construction: peel the 3- or 4-uniform hypergraph (repeatedly remove a
 * slot that only one key touches), then assign the keys in reverse order.
 * Peeling fails with a small probability: the shared builder retries with
 * the next seed, and from the fifth attempt on with a larger array, so a
 * set of distinct keys always ends in a filter.  Keys arrive in any order;
 * the build orders them by segment itself (two passes), so that the
 * counting pass walks the array nearly in order.
 */
#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/endian.h"
#include "common/error.h"
#include "common/prefetch.h"
#include "static_filter.h"

#define FUSE_MAX_SEGLOG 18u
#define FUSE_MAX_LEN UINT32_MAX

/* ---- hashing -------------------------------------------------------------------- */

static inline uint32_t fuse_fp(uint64_t x)
{
    return (uint32_t)(x ^ (x >> 32));
}

/* The positions of x; the fourth only for arity 4 (a multiply brings the
 * high bits of x to the offset, which no other position uses).  In 64-bit
 * registers: each is below the partition's slot count, at most
 * FUSE_MAX_LEN, so they are the 32-bit values fuse_pos_of stores, and a
 * query indexes with them without widening moves. */
static inline __attribute__((always_inline)) void fuse_pos64(const amq_static_part *p, uint64_t x,
                                                              unsigned arity, uint64_t pos[4],
                                                              int shifted)
{
    /* one partition: hshift is 0 (a constant where the caller knows it) */
    const uint64_t h0 = amq_static_mulhi(shifted ? x << p->hshift : x, p->span);
    const uint64_t seg = p->seglen, mask = p->mask;
    pos[0] = h0;
    pos[1] = (h0 + seg) ^ ((x >> 18) & mask);
    pos[2] = (h0 + 2 * seg) ^ (x & mask);
    pos[3] = arity == 4 ? (h0 + 3 * seg) ^ (((x * AMQ_STATIC_GOLDEN) >> 40) & mask) : 0;
}

static inline __attribute__((always_inline)) void fuse_pos_of(const amq_static_part *p, uint64_t x,
                                                               unsigned arity, uint32_t pos[4],
                                                               int shifted)
{
    uint64_t q[4];
    fuse_pos64(p, x, arity, q, shifted);
    pos[0] = (uint32_t)q[0];
    pos[1] = (uint32_t)q[1];
    pos[2] = (uint32_t)q[2];
    if (arity == 4)
        pos[3] = (uint32_t)q[3];
}

static inline __attribute__((always_inline)) void fuse_pos(const amq_static_part *p, uint64_t x,
                                                           unsigned arity, uint32_t pos[4])
{
    fuse_pos_of(p, x, arity, pos, 1);
}

/* ---- sizing --------------------------------------------------------------------------
 * Segment length and size factor follow the paper's fitted formulas: a
 * shorter 3-wise segment saves a little space but makes first
 * constructions fail far more often, and a retry doubles the build (issue
 * 41); the size is the reference code's.
 */

static void fuse_size(const amq_static *s, uint64_t n, unsigned attempt, amq_static_part *p)
{
    unsigned arity = s->v2, seglog;
    double ln = n > 1 ? log((double)n) : 0.0, sf, cap;
    uint64_t seglen, segs;

    if (arity == 3) {
        seglog = n > 1 ? (unsigned)floor(ln / log(3.33) + 2.25) : 2;
        sf = n > 1 ? fmax(1.125, 0.875 + 0.25 * log(1e6) / ln) : 0.0;
    } else {
        seglog = n > 1 ? (unsigned)floor(ln / log(2.91) - 0.5) : 2;
        sf = n > 1 ? fmax(1.075, 0.77 + 0.305 * log(600000.0) / ln) : 0.0;
    }
    if (seglog < 2)
        seglog = 2;
    if (seglog > FUSE_MAX_SEGLOG)
        seglog = FUSE_MAX_SEGLOG;
    if (attempt >= 4)
        sf *= 1.0 + 0.02 * (attempt - 3);
    cap = n > 1 ? ceil((double)n * sf) : 0.0;
    seglen = (uint64_t)1 << seglog;
    segs = (uint64_t)ceil(cap / (double)seglen);
    segs = segs > arity - 1 ? segs - (arity - 1) : 1;
    /* Past a few failures, more segments also change the window layout. */
    if (attempt >= 4)
        segs += attempt - 3;
    p->g[0] = seglog;
    p->g[1] = segs > UINT32_MAX ? UINT32_MAX : (uint32_t)segs;
    p->g[2] = 0;
}

static uint64_t fuse_prepare(const amq_static *s, amq_static_part *p)
{
    uint64_t len;
    unsigned arity = s->v2;

    if (p->g[0] > FUSE_MAX_SEGLOG || p->g[1] == 0 || p->g[2] != 0)
        return 0;
    len = ((uint64_t)p->g[1] + arity - 1) << p->g[0];
    if (len > FUSE_MAX_LEN)
        return 0;
    p->seglen = 1u << p->g[0];
    p->mask = p->seglen - 1;
    p->span = (uint64_t)p->g[1] << p->g[0];
    p->slots = len;
    return len * (s->v1 / 8);
}

static int fuse_variant(amq_static *s, const amq_config *cfg, amq_errinfo *err)
{
    uint32_t bits = cfg->fingerprint_bits, arity = cfg->arity;

    if (bits == 0 && cfg->fpp < ldexp(1.0, -16))
        return amq_err(err, AMQ_ERANGE,
                       "a fuse filter's rate is that of its 8- or 16-bit fingerprints, 2^-8 or "
                       "2^-16 (1.53e-05) at best, not %g: a ribbon filter takes any rate",
                       cfg->fpp);
    if (bits == 0)
        bits = cfg->fpp >= 1.0 / 256 ? 8 : 16;
    if (bits != 8 && bits != 16)
        return amq_err(err, AMQ_ERANGE, "fuse fingerprints are 8 or 16 bits, not %u", bits);
    if (arity == 0)
        arity = 3;
    if (arity != 3 && arity != 4)
        return amq_err(err, AMQ_ERANGE, "fuse filters are 3-wise or 4-wise, not %u-wise", arity);
    s->v1 = bits;
    s->v2 = arity;
    s->fpp = ldexp(1.0, -(int)bits);
    return AMQ_OK;
}

/* ---- construction ------------------------------------------------------------------------
 * The keys come mixed but in any order (amq_fuse_algo.unsorted): one
 * counting pass and one scatter by their top bits order them by segment,
 * a bucket per segment or less, into the array that later holds the
 * peeling stack - enough for the degree pass to walk the slots nearly in
 * order, at two passes where a full sort takes seven.  The filter's bytes
 * do not depend on the keys' order: degrees and xors commute, the queue
 * starts from a scan of the slots, and peeling follows from those alone.
 */

static inline size_t fuse_al64(size_t v)
{
    return (v + 63) & ~(size_t)63;
}

/* The t-th position index other than f, in increasing order (t from 1):
 * peeling pushes a key's other slots in that order, which the filter's
 * bytes depend on. */
static inline unsigned fuse_next(unsigned f, unsigned t, unsigned arity)
{
    (void)arity;
    return t - 1 + (t - 1 >= f);
}

/* Slots per peeling group (a scan of its masks, then its FIFO), and keys
 * ahead whose slots the degree pass prefetches (0: none): the fastest
 * measured (docs/static.md; -D on the command line to measure others). */
#ifndef FUSE_PEEL_GROUP
#define FUSE_PEEL_GROUP 1024u
#endif
#ifndef FUSE_DEG_AHEAD
#define FUSE_DEG_AHEAD 32u
#endif

/* Bit i set when slot c[i] has degree 1 (count 4-7), for n <= 64 slots. */
static inline uint64_t fuse_deg1_mask(const uint8_t *c, size_t n)
{
    uint64_t m = 0;
    size_t i;
#ifdef __SSE2__
    if (n == 64) {
        const __m128i hi = _mm_set1_epi8((char)0xfc), one = _mm_set1_epi8(4);
        for (i = 0; i < 64; i += 16) {
            __m128i v = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(c + i)), hi);
            m |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, one)) << i;
        }
        return m;
    }
#endif
    for (i = 0; i < n; i++)
        m |= (uint64_t)((c[i] >> 2) == 1) << i;
    return m;
}

/* Peels slot at if only one key still touches it: the key onto the
 * output stack, and off its other slots, each appended to q (at *qn) when
 * it falls to degree 1 below end (the scan meets the others).  A slot
 * falls to degree 1 at most once, so q never holds more than len. */
static inline __attribute__((always_inline)) void
fuse_peel(const amq_static_part *p, uint32_t at, unsigned arity, uint8_t *restrict cnt,
          uint64_t *restrict hx, uint32_t *restrict q, size_t *qn, size_t end,
          uint64_t *restrict stk, uint8_t *restrict sfound, size_t *sn)
{
    uint32_t pos[4], o;
    unsigned f, t, j;
    uint64_t xv;
    if ((cnt[at] >> 2) != 1)
        return;
    xv = hx[at];
    f = cnt[at] & 3u;
    stk[*sn] = xv;
    sfound[*sn] = (uint8_t)f;
    (*sn)++;
    cnt[at] = 0;
    fuse_pos(p, xv, arity, pos);
    /* the other slots in order, without a branch on which is f */
#pragma GCC unroll 4
    for (t = 1; t < arity; t++) {
        j = fuse_next(f, t, arity);
        o = pos[j];
        /* appended when it falls to degree 1 (branch-free) */
        q[*qn] = o;
        *qn += ((cnt[o] >> 2) == 2) & (o < end);
        cnt[o] = (uint8_t)((cnt[o] - 4) ^ j);
        hx[o] ^= xv;
    }
}

/* Key k's duplicate shows as a slot holding exactly those two keys (their
 * xor is 0 only if they are equal); one that shares every slot with other
 * keys goes unseen and makes peeling fail: both send the caller to dedup. */
static inline __attribute__((always_inline)) int
fuse_build_as(const amq_static *s, const amq_static_part *pp, const uint64_t *x, size_t n,
              uint8_t *restrict out, unsigned bits, unsigned arity)
{
    /* the geometry in a local: stores through the byte arrays below could
     * alias *pp, and would make every key reload it */
    const amq_static_part geo = *pp, *const p = &geo;
    const amq_allocator *a = &s->alloc;
    unsigned j, f, t, bbits = 0;
    size_t len = (size_t)(p->bytes / (bits / 8)), i, sn = 0, k, nb;
    /* One block for the scratch arrays (amq_region_alloc_scratch: the
     * last build's, else fresh from mmap), of which hx and cnt are read
     * before written.  Fresh pages are faulted in as the passes first reach
     * them, zeroed just before use and so still in cache: faulting them
     * all in by one call up front (amq_region_alloc_stream) took 3-8 %
     * longer builds at 1M and 10M. */
    const size_t o_hx = 0, o_q = o_hx + fuse_al64((len + 1) * sizeof(uint64_t)),
                 o_stk = o_q + fuse_al64((len + 1) * sizeof(uint32_t)),
                 o_cnt = o_stk + fuse_al64((n + 1) * sizeof(uint64_t)),
                 o_sf = o_cnt + fuse_al64(len + 1), total = o_sf + fuse_al64(n + 1);
    amq_region sr;
    uint8_t *scratch;
    uint8_t *restrict cnt, *restrict sfound;
    uint64_t *restrict hx, *restrict stk;
    uint32_t *restrict q;
    size_t *start = NULL;
    uint32_t pos[4];
    int rc = AMQ_OK, zeroed;

    while (bbits < 16 && ((uint64_t)1 << bbits) < p->g[1])
        bbits++;
    nb = (size_t)1 << bbits;
    if (amq_region_alloc_scratch(&sr, a, total, &zeroed) != AMQ_OK)
        return AMQ_ENOMEM;
    scratch = sr.data;
    if (!zeroed) {
        memset(scratch + o_hx, 0, (len + 1) * sizeof(uint64_t));
        memset(scratch + o_cnt, 0, len + 1);
    }
    hx = (uint64_t *)(void *)(scratch + o_hx);
    q = (uint32_t *)(void *)(scratch + o_q);
    stk = (uint64_t *)(void *)(scratch + o_stk);
    cnt = scratch + o_cnt;
    sfound = scratch + o_sf;
    start = amq_calloc(a, (nb + 1) * sizeof *start);
    if (start == NULL) {
        rc = AMQ_ENOMEM;
        goto done;
    }
    /* Order by segment: the top bits of x << hshift are the segment's (h0
     * grows with them). */
    if (bbits > 0) {
        const unsigned sh = p->hshift;
        for (i = 0; i < n; i++)
            start[((x[i] << sh) >> (64 - bbits)) + 1]++;
        for (k = 0; k < nb; k++)
            start[k + 1] += start[k];
        for (i = 0; i < n; i++)
            stk[start[(x[i] << sh) >> (64 - bbits)]++] = x[i];
    } else if (n > 0) { /* x may be NULL for no keys */
        memcpy(stk, x, n * sizeof *stk);
    }
    /* Degree (times 4) and the xor of the key's position index (low 2
     * bits) and of the keys, per slot: a slot of degree 1 names its key. */
    for (i = 0; i < n; i++) {
        const uint64_t xv = stk[i];
        uint64_t all = ~(uint64_t)0;
        unsigned over = 0;
        if (FUSE_DEG_AHEAD > 0 && i + FUSE_DEG_AHEAD < n) {
            uint32_t ap[4];
            fuse_pos(p, stk[i + FUSE_DEG_AHEAD], arity, ap);
#pragma GCC unroll 4
            for (j = 0; j < arity; j++) {
                __builtin_prefetch(hx + ap[j], 1, 3);
                __builtin_prefetch(cnt + ap[j], 1, 3);
            }
        }
        fuse_pos(p, xv, arity, pos);
#pragma GCC unroll 4
        for (j = 0; j < arity; j++) {
            const uint8_t c = cnt[pos[j]];
            over |= c >= 252; /* 63 keys on one slot: hopeless, retry */
            cnt[pos[j]] = (uint8_t)((c + 4) ^ j);
            all &= hx[pos[j]] ^= xv;
        }
        /* one branch, rarely taken: a slot's xor of 0 may be a duplicate
         * (two equal keys alone on it) */
        if (__builtin_expect(over | (all == 0), 0)) {
            if (over) {
                rc = AMQ_EFULL;
                goto done;
            }
            for (j = 0; j < arity; j++)
                if (hx[pos[j]] == 0 && (cnt[pos[j]] >> 2) == 2) {
                    rc = AMQ_STATIC_RESORT;
                    goto done;
                }
        }
    }
    /* Peeling in slot order, a group of FUSE_PEEL_GROUP slots at a time:
     * the slots of degree 1 that a mask of each 64 finds, then a FIFO of
     * the slots below the group's end that fell to degree 1 meanwhile
     * (those above it the scan meets).  A key's slots lie in arity
     * consecutive segments, so the work stays a few segments around the
     * scan, in L2, its leading lines prefetched arity segments ahead.
     * The reference's LIFO of every slot of degree 1 wanders the array
     * (most of its updates missed L2) and makes each pop wait on the last
     * push; the mask's slots and a FIFO's next slot are known before the
     * current peel ends, so the core overlaps the peels (docs/static.md). */
    {
        const size_t ahead = (size_t)arity * p->seglen;
        size_t qt = 0, qh = 0, g0, gend, i0, end, u;
        uint64_t m;
        for (g0 = 0; g0 < len; g0 = gend) {
            gend = len - g0 > FUSE_PEEL_GROUP ? g0 + FUSE_PEEL_GROUP : len;
            for (i0 = g0; i0 < gend; i0 = end) {
                end = gend - i0 > 64 ? i0 + 64 : gend;
                if (i0 + ahead + 64 <= len) {
                    for (u = 0; u < 64; u += 8)
                        __builtin_prefetch(hx + i0 + ahead + u, 1, 3);
                    __builtin_prefetch(cnt + i0 + ahead, 1, 3);
                }
                for (m = fuse_deg1_mask(cnt + i0, end - i0); m != 0; m &= m - 1)
                    fuse_peel(p, (uint32_t)(i0 + (size_t)__builtin_ctzll(m)), arity, cnt, hx, q,
                              &qt, gend, stk, sfound, &sn);
            }
            while (qh < qt)
                fuse_peel(p, q[qh++], arity, cnt, hx, q, &qt, gend, stk, sfound, &sn);
        }
    }
    if (sn != n) {
        rc = AMQ_STATIC_RESORT;
        goto done;
    }
    /* Reverse peeling order: each key's free slot is set last. */
    for (k = sn; k-- > 0;) {
        uint32_t v = fuse_fp(stk[k]);
        fuse_pos(p, stk[k], arity, pos);
        f = sfound[k];
        if (bits == 8) {
            for (t = 1; t < arity; t++)
                v ^= out[pos[fuse_next(f, t, arity)]];
            out[pos[f]] = (uint8_t)v;
        } else {
            for (t = 1; t < arity; t++)
                v ^= amq_load16(out + 2 * (size_t)pos[fuse_next(f, t, arity)]);
            amq_store16(out + 2 * (size_t)pos[f], (uint16_t)v);
        }
    }
done:
    amq_region_free_scratch(&sr, a);
    amq_free(a, start, (nb + 1) * sizeof *start);
    return rc;
}

/* One body per variant: the arity's loops unrolled, the width fixed. */
static int fuse_build(const amq_static *s, const amq_static_part *p, const uint64_t *x, size_t n,
                      uint8_t *out)
{
    if (s->v1 == 8)
        return s->v2 == 3 ? fuse_build_as(s, p, x, n, out, 8, 3)
                          : fuse_build_as(s, p, x, n, out, 8, 4);
    return s->v2 == 3 ? fuse_build_as(s, p, x, n, out, 16, 3)
                      : fuse_build_as(s, p, x, n, out, 16, 4);
}

/* ---- queries -------------------------------------------------------------------------------- */

static inline __attribute__((always_inline)) int fuse_check_of(const amq_static_part *p, uint64_t x,
                                                               unsigned bits, unsigned arity,
                                                               int shifted)
{
    /* the fingerprint compared with the slots' xor: no move to widen it */
    uint64_t pos[4];
    uint32_t v;
    fuse_pos64(p, x, arity, pos, shifted);
    if (bits == 8) {
        v = (uint32_t)p->data[pos[0]] ^ p->data[pos[1]] ^ p->data[pos[2]];
        if (arity == 4)
            v ^= p->data[pos[3]];
        return (uint8_t)v == (uint8_t)fuse_fp(x);
    }
    v = (uint32_t)amq_load16(p->data + 2 * pos[0]) ^ amq_load16(p->data + 2 * pos[1]) ^
        amq_load16(p->data + 2 * pos[2]);
    if (arity == 4)
        v ^= amq_load16(p->data + 2 * pos[3]);
    return (uint16_t)v == (uint16_t)fuse_fp(x);
}

static inline __attribute__((always_inline)) int fuse_check(const amq_static_part *p, uint64_t x,
                                                            unsigned bits, unsigned arity)
{
    return fuse_check_of(p, x, bits, arity, 1);
}

/* A strided filter (s->stride): the partition and h1 without its bits
 * from one multiply by 2^pbits (amq_fuse_view_contains_h1_as likewise). */
static inline __attribute__((always_inline)) int fuse_check_strided(const amq_static *s,
                                                                    uint64_t h1, unsigned bits,
                                                                    unsigned arity)
{
    const unsigned __int128 m = (unsigned __int128)h1 * ((uint64_t)1 << s->pbits);
    const amq_static_part *p = s->parts;
    return amq_fuse_view_probe_at_(p->data + (uint64_t)(m >> 64) * s->stride, p->span, p->seglen,
                                   (uint64_t)m, h1, bits, arity);
}

static int fuse_contains(const amq_static *s, uint64_t h1)
{
    const amq_static_part *p = amq_static_part_of(s, h1);
    uint64_t x = amq_static_fuse_x(p, h1);
    if (s->v1 == 8)
        return s->v2 == 3 ? fuse_check(p, x, 8, 3) : fuse_check(p, x, 8, 4);
    return s->v2 == 3 ? fuse_check(p, x, 16, 3) : fuse_check(p, x, 16, 4);
}

/* A rolling pipeline FUSE_LANES keys deep: key i's positions are computed
 * and their lines prefetched while key i - FUSE_LANES is checked, so that
 * misses stay in flight steadily instead of in bursts. */
#define FUSE_LANES 32
/* Prefetches go to L2 (prefetcht1): a query's three or four lines would
 * hold L1's few miss buffers until they arrive from memory, stalling the
 * next prefetches (make bench-fuse measures the batched queries). */
#define FUSE_PF_LOCALITY 2
/* Up to this many bytes of fingerprints a batch is a plain loop (below):
 * measured here (Zen 4, 1 MiB L2, 32 MiB L3) the plain loop 0.75x the
 * pipeline's time at 1.1 and 2.3 MiB, 1.5x at 3.4 MiB. */
#ifndef FUSE_DIRECT_MAX
#define FUSE_DIRECT_MAX ((uint64_t)3 << 20)
#endif

/* The hashes the query paths inline for 8- and 16-byte keys (seed 0), or
 * FUSE_HASH_ANY: through amq_static_key_h1. */
enum { FUSE_HASH_XXH3_0, FUSE_HASH_MS0, FUSE_HASH_VMS0, FUSE_HASH_ANY };

static int fuse_hash_of(const amq_static *s)
{
    if (s->seed != 0)
        return FUSE_HASH_ANY;
    return s->hash_algo == AMQ_HASH_XXH3        ? FUSE_HASH_XXH3_0
           : s->hash_algo == AMQ_HASH_MULSHIFT  ? FUSE_HASH_MS0
           : s->hash_algo == AMQ_HASH_VMULSHIFT ? FUSE_HASH_VMS0
                                                : FUSE_HASH_ANY;
}

/* Where a batch's h1 come from: hashes given (FUSE_SRC_H), or packed keys
 * of one length hashed in the loop - XXH3, mulshift or vmulshift seed 0 for
 * 8- and 16-byte keys inlined, any other through amq_static_key_h1. */
enum {
    FUSE_SRC_H,
    FUSE_SRC_X8,
    FUSE_SRC_X16,
    FUSE_SRC_M8,
    FUSE_SRC_M16,
    FUSE_SRC_V16,
    FUSE_SRC_KEY
};

typedef struct fuse_src {
    const amq_hash128 *h;
    const uint8_t *keys;
    size_t klen;
} fuse_src;

static inline __attribute__((always_inline)) uint64_t
fuse_src_h1(const amq_static *s, const fuse_src *src, size_t i, int mode)
{
    switch (mode) {
    case FUSE_SRC_H:
        return src->h[i].h1;
    /* amq/fuse_view.h's XXH3 (the same values, tested): libxxhash's
     * builds its 128-bit product through memory */
    case FUSE_SRC_X8:
        return amq_fuse_view_xxh3_8(src->keys + 8 * i);
    case FUSE_SRC_X16:
        return amq_fuse_view_xxh3_16(src->keys + 16 * i);
    case FUSE_SRC_M8:
        return amq_fuse_view_ms0_8(src->keys + 8 * i);
    case FUSE_SRC_M16:
        return amq_fuse_view_ms0_16(src->keys + 16 * i);
    case FUSE_SRC_V16:
        return amq_fuse_view_vms0_16(src->keys + 16 * i);
    default:
        return amq_static_key_h1(s, src->keys + src->klen * i, src->klen);
    }
}

static inline __attribute__((always_inline)) void fuse_src_ahead(const fuse_src *src, size_t i,
                                                                 int mode)
{
    if (mode != FUSE_SRC_H)
        amq_prefetch_keys(src->keys, src->klen, i);
}

static inline __attribute__((always_inline)) uint64_t
fuse_batch_as(const amq_static *s, const fuse_src *src, size_t n, uint8_t *out, unsigned bits,
              unsigned arity, int one, int nomix, int mode)
{
    const uint8_t *dd[FUSE_LANES];
    uint32_t pos[FUSE_LANES][4], fp[FUSE_LANES];
    uint64_t count = 0;
    size_t i, l;
    unsigned j;

    for (i = 0; i < n + FUSE_LANES; i++) {
        l = i % FUSE_LANES;
        if (i >= FUSE_LANES) {
            const uint8_t *d = one ? s->parts->data : dd[l];
            uint32_t v = fp[l];
            int hit;
            if (bits == 8) {
                for (j = 0; j < arity; j++)
                    v ^= d[pos[l][j]];
                hit = (uint8_t)v == 0;
            } else {
                for (j = 0; j < arity; j++)
                    v ^= amq_load16(d + 2 * (size_t)pos[l][j]);
                hit = (uint16_t)v == 0;
            }
            if (out != NULL)
                out[i - FUSE_LANES] = (uint8_t)hit;
            count += (uint64_t)hit;
        }
        if (i < n) {
            const uint64_t h1 = fuse_src_h1(s, src, i, mode);
            fuse_src_ahead(src, i, mode);
            const amq_static_part *p = one ? s->parts : amq_static_part_of(s, h1);
            uint64_t x = one ? (nomix ? h1 : amq_static_x(p, h1)) : amq_static_fuse_x(p, h1);
            dd[l] = p->data;
            fp[l] = fuse_fp(x);
            fuse_pos_of(p, x, arity, pos[l], !one);
            for (j = 0; j < arity; j++)
                __builtin_prefetch(p->data + (size_t)pos[l][j] * (bits / 8), 0, FUSE_PF_LOCALITY);
        }
    }
    return count;
}

/* A filter the caches hold (one partition taking x = h1) is answered by a
 * plain loop: out of order, the processor overlaps its keys' reads by
 * itself, and the pipeline's stores, reloads and prefetches would only
 * cost instructions.  Its constants are locals, kept in registers. */
static inline __attribute__((always_inline)) uint64_t
fuse_direct_as(const amq_static *s, const fuse_src *src, size_t n, uint8_t *out, unsigned bits,
               unsigned arity, int mode)
{
    /* locals: a store to out may alias any field, and would force reloads */
    const uint8_t *const data = s->parts->data;
    const uint64_t span = s->parts->span;
    const uint32_t seglen = s->parts->seglen;
    const fuse_src in = *src;
    uint64_t count = 0;
    size_t i;
    int hit;

    if (out == NULL) {
        for (i = 0; i < n; i++) {
            fuse_src_ahead(&in, i, mode);
            count += (uint64_t)amq_fuse_view_probe_(data, span, seglen, 0,
                                                    fuse_src_h1(s, &in, i, mode), bits, arity);
        }
        return count;
    }
    for (i = 0; i < n; i++) {
        fuse_src_ahead(&in, i, mode);
        hit = amq_fuse_view_probe_(data, span, seglen, 0, fuse_src_h1(s, &in, i, mode), bits,
                                   arity);
        out[i] = (uint8_t)hit;
        count += (uint64_t)hit;
    }
    return count;
}


/* One partition taking x = h1, one that mixes, or several. */
#define FUSE_BATCH_SHAPES(B, A, MODE)                                                             \
    (one && s->parts->nomix && s->parts->bytes <= FUSE_DIRECT_MAX                               \
         ? fuse_direct_as(s, src, n, out, B, A, MODE)                                             \
     : one && s->parts->nomix ? fuse_batch_as(s, src, n, out, B, A, 1, 1, MODE)                 \
     : one                  ? fuse_batch_as(s, src, n, out, B, A, 1, 0, MODE)                   \
                            : fuse_batch_as(s, src, n, out, B, A, 0, 0, MODE))

#define FUSE_BATCH_FN(NAME, MODE)                                                                 \
    static uint64_t NAME(const amq_static *s, const fuse_src *src, size_t n, uint8_t *out)       \
    {                                                                                             \
        const int one = s->nparts == 1;                                                           \
        if (s->v1 == 8 && s->v2 == 3)                                                             \
            return FUSE_BATCH_SHAPES(8, 3, MODE);                                                 \
        if (s->v1 == 8)                                                                           \
            return FUSE_BATCH_SHAPES(8, 4, MODE);                                                 \
        if (s->v2 == 3)                                                                           \
            return FUSE_BATCH_SHAPES(16, 3, MODE);                                                \
        return FUSE_BATCH_SHAPES(16, 4, MODE);                                                    \
    }

FUSE_BATCH_FN(fuse_batch_h, FUSE_SRC_H)
FUSE_BATCH_FN(fuse_batch_x8, FUSE_SRC_X8)
FUSE_BATCH_FN(fuse_batch_x16, FUSE_SRC_X16)
FUSE_BATCH_FN(fuse_batch_m8, FUSE_SRC_M8)
FUSE_BATCH_FN(fuse_batch_m16, FUSE_SRC_M16)
FUSE_BATCH_FN(fuse_batch_v16, FUSE_SRC_V16)
FUSE_BATCH_FN(fuse_batch_key, FUSE_SRC_KEY)

static void fuse_contains_batch(const amq_static *s, const amq_hash128 *h, size_t n,
                                uint8_t *out)
{
    fuse_src src = {h, NULL, 0};
    (void)fuse_batch_h(s, &src, n, out);
}

uint64_t amq_fuse_contains_fixed(const amq_static *s, const void *keys, size_t key_len, size_t n,
                                 uint8_t *out)
{
    fuse_src src = {NULL, keys, key_len};
    const int hash = fuse_hash_of(s);
    if ((hash == FUSE_HASH_MS0 || hash == FUSE_HASH_VMS0) && key_len == 8)
        return fuse_batch_m8(s, &src, n, out);
    if (hash == FUSE_HASH_MS0 && key_len == 16)
        return fuse_batch_m16(s, &src, n, out);
    if (hash == FUSE_HASH_VMS0 && key_len == 16)
        return fuse_batch_v16(s, &src, n, out);
    if (hash == FUSE_HASH_XXH3_0 && key_len == 8)
        return fuse_batch_x8(s, &src, n, out);
    if (hash == FUSE_HASH_XXH3_0 && key_len == 16)
        return fuse_batch_x16(s, &src, n, out);
    return fuse_batch_key(s, &src, n, out);
}

static int fuse_describe(const amq_static *s, amq_field_fn fn, void *ctx)
{
    int rc;
    if ((rc = amq_field_u64(fn, ctx, "fingerprint_bits", s->v1)) != 0)
        return rc;
    return amq_field_u64(fn, ctx, "arity", s->v2);
}

const amq_static_algo amq_fuse_algo = {
    .kind = AMQ_KIND_FUSE,
    .name = "fuse",
    /* Up to 2^27 keys in one partition when the builder held them all:
     * at 100M keys, 8 partitions made one-key queries 1.10x (strided) to
     * 1.4x (the table) the reference's time, one 1.00x (issue 41); a
     * spilled build keeps 2^24, its construction memory bounded. */
    .target_log2 = 24,
    .target_log2_held = 27,
    .variant = fuse_variant,
    .size = fuse_size,
    .prepare = fuse_prepare,
    .build = fuse_build,
    .unsorted = 1,
    .contains = fuse_contains,
    .contains_batch = fuse_contains_batch,
    .describe = fuse_describe,
};

/* The generic handle's entry points, straight to the variant's code. */
int amq_fuse_ops_contains(const void *impl, amq_hash128 h)
{
    return fuse_contains(impl, h.h1);
}

int amq_fuse_ops_contains_key(const void *impl, const void *key, size_t len)
{
    return fuse_contains(impl, amq_static_key_h1(impl, key, len));
}

/* ---- one-key entries, one body per variant ----------------------------------------------
 * The handle calls the filter's own entry (amq_fuse_key_entry picks it when the
 * handle is made): fingerprint width, arity, one partition or many, and
 * mulshift (the default) or XXH3 with seed 0 are constants in its body, so a query is
 * the key's hash, the positions and the reads, with no test of the variant
 * and, for one partition, no index lookup.
 */

__attribute__((noinline)) static int fuse_key_any(const void *impl, const void *key, size_t len)
{
    return fuse_contains(impl, amq_static_key_h1(impl, key, len));
}

/* A key of another length than 8 or 16 under a seed-0 hash, for the plain
 * shape's entries (called with the partition alone), by a tail call: the
 * entries' own path needs no frame. */
__attribute__((noinline)) static int fuse_key_part_other(const void *part, const void *key,
                                                         size_t len, int hash, unsigned bits,
                                                         unsigned arity)
{
    const amq_static_part *p = part;
    const uint64_t h1 = amq_hash_key(hash == FUSE_HASH_XXH3_0 ? AMQ_HASH_XXH3
                                     : hash == FUSE_HASH_MS0  ? AMQ_HASH_MULSHIFT
                                                              : AMQ_HASH_VMULSHIFT,
                                     0, key, len).h1;
    if (bits == 8)
        return arity == 3 ? fuse_check_of(p, h1, 8, 3, 0) : fuse_check_of(p, h1, 8, 4, 0);
    return arity == 3 ? fuse_check_of(p, h1, 16, 3, 0) : fuse_check_of(p, h1, 16, 4, 0);
}

/* SHAPE: 0 one partition taking x = h1, 1 one partition that mixes, 2
 * several (each taking x = h1 unless it was retried: a branch that goes
 * the same way for nearly every key), 3 several at a stride (s->stride:
 * partition 0's geometry, the bytes found by arithmetic). */
/* HASH: fuse_hash_of's class, a constant in each body.  The plain shape
 * under a seed-0 hash needs nothing of the filter but its partition, and is
 * called with it (amq_fuse_key_entry): one dependent load fewer. */
#define FUSE_KEY_ENTRY(NAME, BITS, ARITY, SHAPE, HASH)                                            \
    static int NAME(const void *impl, const void *key, size_t len)                                \
    {                                                                                             \
        const int by_part = (SHAPE) == 0 && (HASH) != FUSE_HASH_ANY;                              \
        const amq_static *s = by_part ? NULL : impl;                                              \
        uint64_t h1;                                                                              \
        const amq_static_part *p;                                                                 \
        if ((HASH) == FUSE_HASH_ANY)                                                              \
            h1 = amq_static_key_h1(s, key, len);                                                  \
        else if (__builtin_expect(len == 8, 1))                                                   \
            h1 = (HASH) == FUSE_HASH_XXH3_0 ? amq_fuse_view_xxh3_8(key)                           \
                                            : amq_fuse_view_ms0_8(key);                           \
        else if (len == 16)                                                                       \
            h1 = (HASH) == FUSE_HASH_XXH3_0 ? amq_fuse_view_xxh3_16(key)                          \
                 : (HASH) == FUSE_HASH_MS0  ? amq_fuse_view_ms0_16(key)                           \
                                            : amq_fuse_view_vms0_16(key);                         \
        else if (by_part) /* other lengths leave by a tail call, as below */                     \
            return fuse_key_part_other(impl, key, len, HASH, BITS, ARITY);                        \
        else /* other lengths leave by a tail call: the path above needs no frame */             \
            return fuse_key_any(impl, key, len);                                                  \
        if ((SHAPE) == 3)                                                                         \
            return fuse_check_strided(s, h1, BITS, ARITY);                                        \
        p = by_part ? (const amq_static_part *)impl                                               \
            : (SHAPE) < 2 ? s->parts : amq_static_part_of(s, h1);                                 \
        return fuse_check_of(p, (SHAPE) == 0 ? h1 : (SHAPE) == 1 ? amq_static_x(p, h1)           \
                                                  : amq_static_fuse_x(p, h1),                     \
                             BITS, ARITY, (SHAPE) == 2);                                          \
    }

#define FUSE_KEY_SHAPE(B, A, SH, SHAPE)                                                            \
    FUSE_KEY_ENTRY(fuse_key_##B##_##A##SH##_x0, B, A, SHAPE, FUSE_HASH_XXH3_0)                    \
    FUSE_KEY_ENTRY(fuse_key_##B##_##A##SH##_m0, B, A, SHAPE, FUSE_HASH_MS0)                       \
    FUSE_KEY_ENTRY(fuse_key_##B##_##A##SH##_v0, B, A, SHAPE, FUSE_HASH_VMS0)                      \
    FUSE_KEY_ENTRY(fuse_key_##B##_##A##SH, B, A, SHAPE, FUSE_HASH_ANY)
#define FUSE_KEY_ENTRIES(B, A)                                                                    \
    FUSE_KEY_SHAPE(B, A, _plain, 0)                                                               \
    FUSE_KEY_SHAPE(B, A, _one, 1)                                                                 \
    FUSE_KEY_SHAPE(B, A, , 2)                                                                     \
    FUSE_KEY_SHAPE(B, A, _strided, 3)

FUSE_KEY_ENTRIES(8, 3)
FUSE_KEY_ENTRIES(8, 4)
FUSE_KEY_ENTRIES(16, 3)
FUSE_KEY_ENTRIES(16, 4)

#define FUSE_KEY_HASHES(B, A, SH)                                                                 \
    {fuse_key_##B##_##A##SH##_x0, fuse_key_##B##_##A##SH##_m0, fuse_key_##B##_##A##SH##_v0,     \
     fuse_key_##B##_##A##SH}
#define FUSE_KEY_ROW(B, A)                                                                        \
    {FUSE_KEY_HASHES(B, A, _plain), FUSE_KEY_HASHES(B, A, _one), FUSE_KEY_HASHES(B, A, ),        \
     FUSE_KEY_HASHES(B, A, _strided)}

/* [bits 16][arity 4][shape][hash] */
static const amq_contains_key_fn fuse_key_entries[2][2][4][4] = {
    {FUSE_KEY_ROW(8, 3), FUSE_KEY_ROW(8, 4)},
    {FUSE_KEY_ROW(16, 3), FUSE_KEY_ROW(16, 4)},
};

amq_contains_key_fn amq_fuse_key_entry(const void *impl, const void **arg)
{
    const amq_static *s = impl;
    const int shape = s->stride != 0 ? 3 : s->nparts > 1 ? 2 : s->parts->nomix ? 0 : 1;
    const int hash = fuse_hash_of(s);
    if (shape == 0 && hash != FUSE_HASH_ANY)
        *arg = s->parts;
    return fuse_key_entries[s->v1 == 16][s->v2 == 4][shape][hash];
}

void amq_fuse_ops_contains_batch(const void *impl, const amq_hash128 *h, size_t n,
                                 uint8_t *out)
{
    fuse_contains_batch(impl, h, n, out);
}
