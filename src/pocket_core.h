/*
 * pocket_core.h - the pocket kind's segments, spare, deep ranges and growth, as static
 * functions: compiled into each instruction set's object (pocket_impl.h), whose add grows a
 * segment, and into pocket.c, which makes and checks them, so that neither calls the other
 * (an instruction set's path needs only src/common).
 */
#ifndef AMQ_POCKET_CORE_H
#define AMQ_POCKET_CORE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "pocket_internal.h"

#define PK_B PK_BUCKETS

static inline void pk_set_bins(pk_seg *s, uint64_t nb)
{
    s->nb = nb;
    s->m = nb * PK_B;
    s->k = 63u - (uint32_t)__builtin_clzll(s->m);
    s->q0 = (uint64_t)(((unsigned __int128)1 << 64) / s->m);
}

/* ---- memory ------------------------------------------------------------------------------- */

/* Anonymous memory whose pages cost nothing until touched (NULL: none). */
static inline void *map_bytes(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* len bytes (a multiple of 2 MiB) of addresses starting on a 2 MiB boundary, so that a
 * table written from its start fills whole huge pages from its first line (NULL: none). */
static inline void *map_huge_aligned(size_t len)
{
    const uintptr_t huge = (uintptr_t)1 << 21;
    uint8_t *p = map_bytes(len + huge), *a;
    if (p == NULL)
        return NULL;
    a = (uint8_t *)(((uintptr_t)p + huge - 1u) & ~(huge - 1u));
    if (a > p)
        (void)munmap(p, (size_t)(a - p));
    (void)munmap(a + len, (size_t)(p + huge - a));
    return a;
}

/* Mapping p of len bytes grown to want (a multiple of 2 MiB), moved to a 2 MiB boundary
 * when it cannot grow where it is (NULL: no addresses; p unchanged). */
static inline void *remap_huge_aligned(void *p, size_t len, size_t want)
{
    void *q = mremap(p, len, want, 0), *a;
    if (q != MAP_FAILED)
        return q;
    if ((a = map_huge_aligned(want)) == NULL)
        return NULL;
    q = mremap(p, len, want, MREMAP_MAYMOVE | MREMAP_FIXED, a);
    if (q == MAP_FAILED) {
        (void)munmap(a, want);
        return NULL;
    }
    return q;
}

#define PK_HUGE ((uintptr_t)1 << 21)
#define PK_HUGE_TAIL ((uintptr_t)7 << 18) /* a table's last 1.75 MiB or more: a huge page too */

/* The 2 MiB pages [*a, *e) of a table of bytes at p that go on huge pages: the whole ones,
 * and its tail when that fills most of one (256 segments each ending in a huge page would
 * hold up to 512 MiB no line uses; so at most 64 MiB).  0: none. */
static inline int huge_range(const void *p, size_t bytes, uintptr_t *a, uintptr_t *e)
{
    *a = ((uintptr_t)p + PK_HUGE - 1u) & ~(PK_HUGE - 1u);
    *e = ((uintptr_t)p + bytes) & ~(PK_HUGE - 1u);
    if ((uintptr_t)p + bytes - *e >= PK_HUGE_TAIL)
        *e += PK_HUGE;
    return *e > *a;
}

/* The huge range of a table just written made huge pages, since a page walk on small pages
 * costs a query nearly as much as its line.  Collapsed, not advised (MADV_HUGEPAGE): advice
 * splits the reservation into two mappings, which mremap cannot grow (EFAULT: the segment
 * stopped growing), and lets khugepaged make every tail huge.  A kernel without
 * MADV_COLLAPSE (before 6.1), or out of huge pages, says no: the lines stay on small pages. */
static inline void collapse_huge(void *p, size_t bytes)
{
#if defined(__linux__)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux's value (glibc headers before 2.37 lack it) */
#endif
    uintptr_t a, e;
    if (huge_range(p, bytes, &a, &e))
        (void)madvise((void *)a, e - a, MADV_COLLAPSE);
#else
    (void)p, (void)bytes;
#endif
}

static inline size_t page_round(size_t n)
{
    return (n + 4095u) & ~(size_t)4095u;
}

/* Bytes of a mapping faulted in by one call before a growth writes them: a fault
 * a page costs a VM's kernel more (docs/expandable-log.md).  Without
 * MADV_POPULATE_WRITE (Linux before 5.14) the writes fault them as before. */
static inline void populate(void *p, size_t bytes)
{
#if defined(__linux__)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux's value (glibc headers before 2.35 lack it) */
#endif
    (void)madvise(p, page_round(bytes), MADV_POPULATE_WRITE);
#else
    (void)p, (void)bytes;
#endif
}

/* The tail of mapping p past keep bytes returned (its pages were never needed). */
static inline size_t map_trim(void *p, size_t len, size_t keep)
{
    keep = page_round(keep);
    if (keep >= len)
        return len;
    if (keep == 0)
        keep = 4096u; /* a mapping of none would be no array */
    if (keep < len)
        (void)munmap((uint8_t *)p + keep, len - keep);
    return keep < len ? keep : len;
}

/* An array of a segment's: its own mapping of map bytes, or the allocator's block of
 * bytes; a view's belongs to the payload. */
static inline void pk_release(amq_pk *x, void *p, size_t map, size_t bytes)
{
    if (p == NULL || x->view)
        return;
    if (map != 0)
        (void)munmap(p, map);
    else
        amq_free(&x->alloc, p, bytes);
}

static inline void free_spare(amq_pk *x, pk_seg *s)
{
    pk_release(x, s->sp, s->sp_map, (size_t)s->splen * sizeof *s->sp);
    s->sp = NULL;
    s->spcap = s->splen = s->spn = 0;
    s->spd = 0;
    s->sp_map = 0;
}

static inline void free_deep(amq_pk *x, pk_seg *s)
{
    pk_release(x, s->deep, s->deep_map, (size_t)s->deepcap * sizeof *s->deep);
    s->deep = NULL;
    s->ndeep = s->deepcap = s->deep_width = 0;
    s->deep_map = 0;
}

static inline void free_bins(amq_pk *x, pk_seg *s)
{
    if (s->va != NULL)
        (void)munmap(s->va, s->reserved);
    else if (!x->view)
        amq_region_free(&s->region, &x->alloc);
    s->va = NULL;
    s->reserved = 0;
    s->b = NULL;
    memset(&s->region, 0, sizeof s->region);
}

static inline void free_seg(amq_pk *x, pk_seg *s)
{
    free_bins(x, s);
    free_spare(x, s);
    free_deep(x, s);
}

static inline void pk_free_segments(amq_pk *x)
{
    uint32_t i;
    if (x->seg == NULL)
        return;
    for (i = 0; i < 1u << x->d; i++)
        free_seg(x, &x->seg[i]);
    amq_free(&x->alloc, x->seg, ((size_t)1 << x->d) * sizeof *x->seg);
    x->seg = NULL;
    x->d = 0;
}



/* ---- the spare ---------------------------------------------------------------------------- */

/* The spare's largest distance of a slot from its entry's home, for cap slots and m buckets:
 * as far as the 16 bits of a slot's bucket can be told from its position. */
static inline uint32_t sp_d_for(uint64_t cap, uint64_t m)
{
    const uint64_t w = (uint64_t)PK_SP_WINDOW * cap / m - 2u;
    const uint64_t d = w < cap ? w : cap;
    return d < PK_SP_DMAX ? (uint32_t)d : PK_SP_DMAX;
}

/* Slots past the last home: a short tail for a small spare (an entry that would pass it
 * makes the spare larger). */
static inline uint64_t sp_len_for(uint64_t cap, uint32_t spd)
{
    const uint64_t t = cap / 32u + 2u;
    return cap + (t < spd ? t : spd) + 1u;
}

/* Enough slots for a distance of 8 at least (PK_SP_WINDOW cap / m - 2). */
static inline uint64_t sp_min_cap(const pk_seg *s)
{
    return s->m / 3200u + 2u;
}

/* Where n entries in bucket order (ties in any order) go in a spare of cap slots, each
 * entry's slot kept in it for sp_put (the array is then written once, dividing none): the
 * slots the spare needs, or 0 when one would land more than its distance from its home. */
static inline uint64_t sp_fit(const pk_seg *s, pk_ent *e, uint64_t n, uint64_t cap)
{
    const uint32_t spd = sp_d_for(cap, s->m);
    const uint64_t len = sp_len_for(cap, spd);
    uint64_t i, p = 0;
    for (i = 0; i < n; i++) {
        const uint64_t home = pk_div_m(s, e[i].g * cap);
        if (i == 0 || p < home)
            p = home;
        if (p - home > spd || p >= len - 1u || p > UINT32_MAX) /* (a slot kept in 32 bits) */
            return 0;
        e[i].at = (uint32_t)p++;
    }
    return len;
}

/* The first of cap, cap + cap / 8 + 8, ... up to most slots in which sp_fit places the n
 * entries, into *c: the slots that spare needs, or 0 when none does (a crowd). */
static inline uint64_t sp_size(const pk_seg *s, pk_ent *e, uint64_t n, uint64_t cap,
                               uint64_t most, uint64_t *c)
{
    uint64_t len;
    for (*c = cap; (len = sp_fit(s, e, n, *c)) == 0; *c += *c / 8u + 8u)
        if (*c > most)
            return 0;
    return len;
}

/* The n entries sp_fit placed, into slots at a (zeroed). */
static inline void sp_put(uint32_t *a, const pk_ent *e, uint64_t n)
{
    uint64_t i;
    for (i = 0; i < n; i++)
        a[e[i].at] = (uint32_t)(e[i].g & 0xffffu) << 16 | e[i].v;
}

/* s's spare made from n entries in bucket order, of cap slots up to twice cap or PK_SP_SMALL
 * (none for no entry and cap 0): in a new block of the allocator (map NULL), or in the
 * mapping map of map_len bytes (zeroed; the spare keeps it, trimmed).  AMQ_OK; AMQ_EFULL
 * when no such size places them (a crowd: a growth gives it to the deep ranges,
 * sp_build_spilling), or AMQ_ENOMEM; either with s's spare as it was. */
static inline int sp_build(amq_pk *x, pk_seg *s, pk_ent *e, uint64_t n, uint64_t cap,
                           uint32_t *map, size_t map_len)
{
    uint64_t len, c;
    uint32_t *a;
    if (n == 0 && cap == 0) { /* none: no array (a small filter's 256 segments would hold many) */
        free_spare(x, s);
        if (map != NULL)
            (void)munmap(map, map_len);
        return AMQ_OK;
    }
    if (cap < sp_min_cap(s))
        cap = sp_min_cap(s);
    if ((len = sp_size(s, e, n, cap, 2u * cap > PK_SP_SMALL ? 2u * cap : PK_SP_SMALL, &c)) == 0)
        return AMQ_EFULL;
    if (map != NULL) {
        if (len * 4u > map_len)
            return AMQ_ENOMEM; /* past what the growth reserved: not met in practice */
        a = map;
        populate(a, (size_t)len * 4u);
        memset(a, 0, (size_t)len * 4u);
    } else if ((a = amq_calloc(&x->alloc, (size_t)len * 4u)) == NULL) {
        return AMQ_ENOMEM;
    }
    sp_put(a, e, n);
    free_spare(x, s);
    s->sp = a;
    s->spcap = c;
    s->spd = sp_d_for(c, s->m);
    s->splen = len;
    s->spn = n;
    s->sp_map = map != NULL ? map_trim(map, map_len, (size_t)len * 4u) : 0;
    return AMQ_OK;
}

/* s's spare entries in bucket order into e (room for s->spn), with (g, v) among them when
 * with is set, after the entries of buckets up to g (in the same pass, not shifted in after
 * it: room for one more); each slot's reference, q m / spcap, kept by steps. */
static inline void sp_list_with(const pk_seg *s, pk_ent *e, int with, uint64_t g, uint16_t v)
{
    const uint64_t a = s->m / s->spcap, b = s->m % s->spcap;
    uint64_t q, n = 0, ref = 0, frac = 0;
    for (q = 0; q < s->splen; q++) {
        const uint32_t w = s->sp[q];
        if (w != 0) {
            const uint64_t gq =
                ref + (uint64_t)(int64_t)(int16_t)(uint16_t)((w >> 16) - (uint32_t)ref);
            if (with && gq > g) {
                e[n].g = g;
                e[n++].v = v;
                with = 0;
            }
            e[n].g = gq;
            e[n++].v = (uint16_t)w;
        }
        ref += a;
        if ((frac += b) >= s->spcap) {
            frac -= s->spcap;
            ref++;
        }
    }
    if (with) {
        e[n].g = g;
        e[n].v = v;
    }
}

static inline void sp_list(const pk_seg *s, pk_ent *e)
{
    sp_list_with(s, e, 0, 0, 0);
}

/* s's spare rebuilt from the filter's list of its entries, with (g, v) among them when with
 * is set, at the first size from cap up to twice it where they fit: grown in place (a large
 * block grows by remapping, its pages kept) or made anew (a mapping's).  AMQ_OK; AMQ_EFULL
 * when none fits (entries crowded into a few buckets: no size spreads them), AMQ_ENOMEM,
 * either with s's spare as it was. */
static inline int sp_rebuild(amq_pk *x, pk_seg *s, uint64_t cap, int with, uint64_t g, uint16_t v)
{
    const uint64_t n = s->spn + (with ? 1u : 0u);
    uint64_t c, want;
    uint32_t *a, spd;
    if (n > x->scr_cap) { /* the filter's list for rebuilds: no allocation each time */
        pk_ent *e = amq_realloc(&x->alloc, x->scr, (size_t)x->scr_cap * sizeof *e,
                                (size_t)n * 2u * sizeof *e);
        if (e == NULL)
            return AMQ_ENOMEM;
        x->scr = e;
        x->scr_cap = 2u * n;
    }
    if (s->spn > 0) {
        sp_list_with(s, x->scr, with, g, v);
    } else if (with) {
        x->scr[0].g = g;
        x->scr[0].v = v;
    }
    if (cap < sp_min_cap(s))
        cap = sp_min_cap(s);
    if ((want = sp_size(s, x->scr, n, cap, 2u * cap, &c)) == 0)
        return AMQ_EFULL;
    spd = sp_d_for(c, s->m);
    if (s->sp == NULL || s->sp_map != 0) {
        if ((a = amq_calloc(&x->alloc, (size_t)want * 4u)) == NULL)
            return AMQ_ENOMEM;
        free_spare(x, s);
    } else {
        if ((a = amq_realloc(&x->alloc, s->sp, (size_t)s->splen * 4u, (size_t)want * 4u)) == NULL)
            return AMQ_ENOMEM;
        memset(a, 0, (size_t)want * 4u);
    }
    sp_put(a, x->scr, n);
    s->sp = a;
    s->spcap = c;
    s->spd = spd;
    s->splen = want;
    s->spn = n;
    return AMQ_OK;
}

/* The first empty slot at or past e of a spare of len slots (its last is always empty): the
 * end of the run an insert shifts, 16 slots a step where AVX-512 is built (a run at the
 * spare's load is tens of slots: the slot-by-slot walk was most of an insert's time). */
static inline uint64_t sp_run_end(const uint32_t *sp, uint64_t e, uint64_t len)
{
#if defined(__AVX512F__)
    for (;; e += 16u) {
        const uint64_t left = len - e;
        const __mmask16 in = (__mmask16)(left >= 16u ? 0xffffu : (1u << left) - 1u);
        const __m512i w = _mm512_maskz_loadu_epi32(in, sp + e);
        const uint32_t z = (uint32_t)_mm512_mask_testn_epi32_mask(in, w, w);
        if (z != 0)
            return e + (uint32_t)__builtin_ctz(z);
    }
#else
    (void)len;
    while (sp[e] != 0)
        e++;
    return e;
#endif
}

/* Entries of one bucket in the spare at their full length (adds' since the last growth), at
 * most: a key added again and again, or keys crowded into one bucket, are refused past it (no
 * size of spare would spread them, and each refused add could double it); random keys put 16
 * in one bucket about never (3 % of them go to the spare, a fraction of a key a bucket). */
#define PK_SP_BUCKET_MAX 16u

static inline int pk_sp_insert(amq_pk *x, pk_seg *s, uint64_t g, uint16_t v)
{
    uint64_t home, p, e, same = 0;
    int rc;
    if (s->sp == NULL)
        return sp_rebuild(x, s, 8u, 1, g, v);
    if ((double)(s->spn + 1u) > PK_SP_LOAD * (double)s->spcap &&
        (rc = sp_rebuild(x, s, (uint64_t)((double)(s->spn + 1u) / PK_SP_FILL) + 8u, 1, g, v)) !=
            AMQ_EFULL)
        return rc; /* (refused: a crowd, tried in place below) */
    home = pk_sp_home(s, g);
    for (p = home; s->sp[p] != 0; p++) { /* after the entries of buckets up to g */
        const int dist = (int16_t)(uint16_t)((s->sp[p] >> 16) - (uint32_t)g);
        if (dist > 0)
            break;
        same += dist == 0 && s->sp[p] >> x->eb & 1u; /* adds' entries, not a growth's copies */
    }
    if (same >= PK_SP_BUCKET_MAX)
        return AMQ_EFULL;
    e = sp_run_end(s->sp, p, s->splen);
    /* the entries moved one on are of buckets past g, whose homes are at or past g's: none
     * lands more than e - home from its own */
    if (e + 1u < s->splen && e - home <= s->spd) {
        memmove(s->sp + p + 1u, s->sp + p, (size_t)(e - p) * sizeof *s->sp);
        s->sp[p] = (uint32_t)(g & 0xffffu) << 16 | v;
        s->spn++;
        return AMQ_OK;
    }
    return sp_rebuild(x, s, s->spcap + s->spcap / 8u + 8u, 1, g, v);
}

/* ---- the deep ranges ---------------------------------------------------------------------- */

/* The deep range a search for hs starts at: hs's share of s's ranges. */
static inline uint64_t pk_deep_guess(const pk_seg *s, uint64_t hs)
{
    return pk_mulhi(hs, s->ndeep);
}

/* Is hs in a deep range of s?  The ranges start at hash values, evenly spread: the first one
 * past hs is found from a guess, hs's share of them, by steps doubling away from it, then
 * bisection of the bracket (a few lines near the guess, where a bisection of the whole list
 * walks ten levels at 1e8 keys, most a miss). */
static inline int pk_deep_has(const pk_seg *s, uint64_t hs)
{
    const uint64_t n = s->ndeep, at = pk_deep_guess(s, hs);
    uint64_t lo, hi, step;
    if (n == 0)
        return 0;
    if (s->deep[at][0] <= hs) {
        for (lo = at + 1u, step = 1; at + step < n && s->deep[at + step][0] <= hs; step *= 2u)
            lo = at + step + 1u;
        hi = at + step < n ? at + step : n;
    } else {
        for (hi = at, step = 1; step <= at && s->deep[at - step][0] > hs; step *= 2u)
            hi = at - step;
        lo = step <= at ? at - step + 1u : 0;
    }
    while (lo < hi) { /* the first range starting past hs */
        const uint64_t mid = lo + (hi - lo) / 2u;
        if (s->deep[mid][0] <= hs)
            lo = mid + 1u;
        else
            hi = mid;
    }
    for (; lo > 0 && hs - s->deep[lo - 1u][0] <= s->deep_width; lo--)
        if (hs <= s->deep[lo - 1u][1])
            return 1;
    return 0;
}

static inline int deep_cmp(const void *a, const void *b)
{
    const uint64_t *p = a, *q = b;
    return p[0] != q[0] ? (p[0] < q[0] ? -1 : 1) : (p[1] < q[1] ? -1 : p[1] > q[1]);
}

/* ---- a growth's lists --------------------------------------------------------------------- */

static inline void pk_push_spare(pk_tab *t, uint64_t g, uint16_t v)
{
    if (t->nsp == t->capsp) {
        const uint64_t cap = t->capsp ? 2u * t->capsp : 256u;
        pk_ent *p;
        if (t->fixed || t->failed ||
            (p = amq_realloc(t->alloc, t->sp, (size_t)t->capsp * sizeof *p,
                             (size_t)cap * sizeof *p)) == NULL) {
            t->failed = 1;
            return;
        }
        t->sp = p;
        t->capsp = cap;
    }
    t->sp[t->nsp].g = g;
    t->sp[t->nsp++].v = v;
}

static inline void pk_push_deep(pk_tab *t, uint64_t lo, uint64_t hi)
{
    if (t->ndeep == t->capdeep) {
        const uint64_t cap = t->capdeep ? 2u * t->capdeep : 16u;
        uint64_t(*p)[2];
        if (t->fixed || t->failed ||
            (p = amq_realloc(t->alloc, t->deep, (size_t)t->capdeep * sizeof *p,
                             (size_t)cap * sizeof *p)) == NULL) {
            t->failed = 1;
            return;
        }
        t->deep = p;
        t->capdeep = cap;
    }
    t->deep[t->ndeep][0] = lo;
    t->deep[t->ndeep++][1] = hi;
    if (hi - lo > t->deep_width)
        t->deep_width = hi - lo;
}

/* Bucket g's first h, exactly: ceil(g 2^64 / m) (the last bucket's end, 2^64, is g = m). */
static inline unsigned __int128 bucket_lo(uint64_t g, uint64_t m)
{
    const unsigned __int128 x = (unsigned __int128)g << 64;
    return x / m + (x % m != 0);
}

/* The ranges of h (at most two, inside [lo, hi1]) that entry v of bucket [lo, hi1] of a table
 * of level k answers, into r: each cell of 2^-k the bucket meets gives one.  *p: the end of
 * the entry's bits in h (k + len, k + len - 1 for a short one; 0 for a bucket-wide entry). */
static inline uint32_t pk_entry_ranges(uint64_t lo, uint64_t hi1, uint32_t k, uint16_t v,
                                       uint64_t r[2][2], uint32_t *p)
{
    const uint32_t len = 31u - (uint32_t)__builtin_clz(v);
    const uint64_t bits = v ^ (1u << len);
    uint32_t nr = 0, i;
    if (len == 0) { /* a whole bucket */
        r[0][0] = lo;
        r[0][1] = hi1;
        *p = 0;
        return 1;
    }
    if (len <= PK_SHORT) { /* from bit k - 1: its cell is the one whose last bit it has */
        const uint64_t c = lo >> (64u - k);
        const uint64_t top = (c & 1u) == (bits >> (len - 1u)) ? c : c + 1u;
        *p = k + len - 1u;
        r[0][0] = ((top << (len - 1u)) | (bits & ((UINT64_C(1) << (len - 1u)) - 1u)))
                  << (64u - *p);
        r[0][1] = r[0][0] + ((UINT64_C(1) << (64u - *p)) - 1u);
        nr = !(r[0][1] < lo || r[0][0] > hi1) && (top >> k) == 0;
    } else { /* from bit k: a cell the bucket meets (at most two) */
        const uint32_t sh = 64u - k - len;
        uint64_t t = lo >> (64u - k);
        uint32_t c;
        *p = k + len;
        for (c = 0; c < 2; c++, t++) {
            const uint64_t s0 = (t << (64u - k)) | (bits << sh);
            if ((c == 1 && (t >> k) != 0) || s0 > hi1)
                break; /* past the top of h, or past the bucket */
            if (s0 + ((UINT64_C(1) << sh) - 1u) < lo)
                continue;
            r[nr][0] = s0;
            r[nr++][1] = s0 + ((UINT64_C(1) << sh) - 1u);
        }
    }
    for (i = 0; i < nr; i++) { /* clipped to the bucket */
        if (r[i][0] < lo)
            r[i][0] = lo;
        if (r[i][1] > hi1)
            r[i][1] = hi1;
    }
    return nr;
}

/* n entries sorted by bucket, stably, 11 bits at a time (tmp: room for n). */
static inline void ent_sort(pk_ent *e, pk_ent *tmp, uint64_t n, uint64_t m)
{
    pk_ent *from = e, *to = tmp;
    uint32_t shift, bits = 64u - (uint32_t)__builtin_clzll(m | 1u);
    uint64_t i;
    for (i = 1; i < n && e[i - 1].g <= e[i].g; i++)
        ;
    if (i >= n)
        return;
    for (shift = 0; shift < bits; shift += 11) {
        uint64_t count[2048] = {0}, at = 0;
        pk_ent *sw;
        for (i = 0; i < n; i++)
            count[(from[i].g >> shift) & 2047u]++;
        for (i = 0; i < 2048; i++) {
            const uint64_t c = count[i];
            count[i] = at;
            at += c;
        }
        for (i = 0; i < n; i++)
            to[count[(from[i].g >> shift) & 2047u]++] = from[i];
        sw = from;
        from = to;
        to = sw;
    }
    if (from != e)
        memcpy(e, from, (size_t)n * sizeof *e);
}

/* The entries of buckets holding more than `most` of list e (n, in bucket order) made t's
 * exact deep ranges (a key an entry answered, its range answers), the others packed to the
 * front: how many are left. */
static inline uint64_t spill_crowds(pk_tab *t, pk_ent *e, uint64_t n, uint64_t most)
{
    uint64_t i = 0, j, left = 0;
    while (i < n) {
        for (j = i + 1u; j < n && e[j].g == e[i].g; j++)
            ;
        if (j - i <= most) {
            for (; i < j; i++)
                e[left++] = e[i];
            continue;
        }
        for (; i < j; i++) {
            const uint64_t lo = (uint64_t)bucket_lo(e[i].g, t->m);
            const uint64_t hi1 = (uint64_t)(bucket_lo(e[i].g + 1u, t->m) - 1u);
            uint64_t r[2][2];
            uint32_t p, c, nr = pk_entry_ranges(lo, hi1, t->k, e[i].v, r, &p);
            for (c = 0; c < nr; c++)
                pk_push_deep(t, r[c][0], r[c][1]);
        }
    }
    return left;
}

/* s's spare from a growth's list t->sp: the buckets too crowded for it (keys chosen against
 * the seed: no size of spare places them) given as deep ranges instead, the most crowded
 * first, so that a growth never fails for want of a spare's size (a growth in place has
 * moved its bins by then).  AMQ_OK, or AMQ_ENOMEM with s's spare as it was (the allocator's,
 * or t's lists: map NULL). */
static inline int sp_build_spilling(amq_pk *x, pk_seg *s, pk_tab *t, uint32_t *map,
                                    size_t map_len)
{
    uint64_t most = PK_SP_DMAX;
    int rc;
    for (;;) {
        rc = sp_build(x, s, t->sp, t->nsp, (uint64_t)((double)t->nsp / PK_SP_FILL), map, map_len);
        if (rc == AMQ_OK || (map == NULL && rc == AMQ_ENOMEM) || t->nsp == 0)
            return rc;
        most /= 2u;
        t->nsp = spill_crowds(t, t->sp, t->nsp, most);
        if (t->failed)
            return AMQ_ENOMEM;
    }
}

/* ---- a segment's growth ------------------------------------------------------------------- */

/* Segment i's sizes: b0 G^(e + i / 2^d) / 2^d bins (even), so that the segments grow one at a
 * time and the whole stays between 1 / G and 1 of PK_LOAD. */
static inline uint64_t grid(const amq_pk *x, uint32_t i, uint32_t e)
{
    const double n = (double)(1u << x->d);
    const double v = x->b0 / n * pow(PK_GROWTH, (double)e + (double)i / n);
    return v < 2.0 ? 2u : v > (double)PK_MAX_BINS * 4 ? PK_MAX_BINS * 4u
                                                      : ((uint64_t)ceil(v) + 1u) & ~UINT64_C(1);
}

/* A query meets its bucket's entries, and an entry of len bits stands for 2^-len of a cell of
 * 2^-k of h (more than a bucket, of 1 / m): it answers m 2^-(k + len) of its bucket's keys, so
 * that a query meets 2^-(k + len) of it; a deep range, its share of h. */
/* 2^-len, twice for short entries (from bit k - 1). */
static inline double pk_share(uint32_t len)
{
    static const double t[16] = {1.0,       1.0,        0.5,         0.25,       0.0625,
                                 0.03125,   0.015625,   0.0078125,   0.00390625, 0.001953125,
                                 0.0009765625, 0.00048828125, 0.000244140625, 0.0001220703125,
                                 0.00006103515625, 0.000030517578125};
    return t[len];
}

/* pk_share(len of v) in units of 2^-15, v nonzero. */
static inline uint64_t pk_units(uint32_t v)
{
    const uint32_t len = 31u - (uint32_t)__builtin_clz(v);
    return len == 0 ? UINT64_C(1) << 15 : UINT64_C(1) << (15u - len + (len <= PK_SHORT));
}

/* The units of bin b's first n entries; *shorts set when one is short (PK_SHORT bits or
 * fewer). */
static inline uint64_t bin_units(const pk_bin *b, uint32_t n, uint32_t *shorts)
{
#if defined(__AVX512F__) && defined(__AVX512CD__)
    /* lanes 0 to 15, then 12 to 27 with the first four masked off */
    const __m512i one = _mm512_set1_epi32(1), f15 = _mm512_set1_epi32(15);
    const __mmask32 live = (__mmask32)((UINT64_C(1) << n) - 1u);
    uint64_t sum = 0;
    int half;
    for (half = 0; half < 2; half++) {
        const __mmask16 in = (__mmask16)(half ? (live >> 12) & 0xfff0u : live);
        const __m512i v = _mm512_or_si512(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)(b->e + 12 * half))), one);
        const __m512i len = _mm512_sub_epi32(_mm512_set1_epi32(31), _mm512_lzcnt_epi32(v));
        const __mmask16 sl = _mm512_cmple_epu32_mask(len, _mm512_set1_epi32((int)PK_SHORT));
        const __m512i sh = _mm512_min_epu32(
            _mm512_mask_add_epi32(_mm512_sub_epi32(f15, len), sl, _mm512_sub_epi32(f15, len), one),
            f15);
        sum += (uint32_t)_mm512_reduce_add_epi32(_mm512_maskz_sllv_epi32(in, one, sh));
        *shorts |= (sl & in) != 0;
    }
    return sum;
#else
    uint64_t sum = 0;
    uint32_t i;
    for (i = 0; i < n; i++) {
        sum += pk_units((uint32_t)b->e[i] | 1u);
        *shorts |= b->e[i] < 2u << PK_SHORT; /* marker at bit PK_SHORT or below */
    }
    return sum;
#endif
}

/* (summed as integers: a sum of doubles waits on each add, and this runs over the whole
 * segment after every growth) */
static inline void pk_count(pk_seg *s)
{
    uint64_t b, q, e = s->spn, units = 0;
    uint32_t shorts = 0;
    for (b = 0; b < s->nb; b++) {
        const uint32_t n = (uint32_t)__builtin_popcountll(s->b[b].map & PK_MAP_MASK);
        e += n;
        units += bin_units(&s->b[b], n, &shorts);
    }
    s->short_bins = shorts;
    for (q = 0; q < s->splen; q++)
        if (s->sp[q] != 0)
            units += pk_units(s->sp[q] & 0xffffu);
    s->rdeep = 0;
    for (q = 0; q < s->ndeep; q++)
        s->rdeep += ldexp((double)(s->deep[q][1] - s->deep[q][0]) + 1.0, -64);
    s->entries = e;
    s->rsum = ldexp((double)units, -15);
    s->limit = (uint64_t)(PK_LOAD * (double)(s->nb * PK_SLOTS));
}

/* Marks the bins a deep range meets: their queries look it up. */
static inline void deep_mark(pk_seg *s)
{
    uint64_t x;
    for (x = 0; x < s->ndeep; x++) {
        const uint64_t g = pk_mulhi(s->deep[x][0], s->m), last = pk_mulhi(s->deep[x][1], s->m) / PK_B;
        uint64_t b = g / PK_B;
        for (pk_spare_from(&s->b[b].map, (uint32_t)(g % PK_B)), b++; b <= last; b++)
            pk_spare_from(&s->b[b].map, 0);
    }
}

/* The old segment as a growth reads it: its spare as a list in e. */
static inline void tab_of(const pk_seg *s, pk_tab *t, pk_ent *e)
{
    memset(t, 0, sizeof *t);
    t->b = s->b;
    t->nb = s->nb;
    t->m = s->m;
    t->q0 = s->q0;
    t->k = s->k;
    t->sp = e;
    t->nsp = s->spn;
    if (s->spn > 0)
        sp_list(s, e);
    t->deep = s->deep;
    t->ndeep = s->ndeep;
    t->deep_width = s->deep_width;
}

static inline void tab_geometry(pk_tab *t, uint64_t nb)
{
    pk_seg g;
    pk_set_bins(&g, nb);
    t->nb = g.nb;
    t->m = g.m;
    t->q0 = g.q0;
    t->k = g.k;
}

/* Into new memory: the old segment stays whole until the new one is complete, so that any
 * failure leaves it as it was. */
static inline int grow_new(amq_pk *x, pk_seg *s, uint64_t nb2)
{
    pk_tab t, dst;
    pk_seg n;
    pk_ent *old = NULL, *tmp = NULL;
    const uint64_t nold = s->spn;
    int rc = AMQ_ENOMEM;
    memset(&n, 0, sizeof n);
    memset(&dst, 0, sizeof dst);
    if (s->spn > 0 && (old = amq_malloc(&x->alloc, (size_t)s->spn * sizeof *old)) == NULL)
        return AMQ_ENOMEM;
    tab_of(s, &t, old);
    pk_set_bins(&n, nb2);
    if (amq_region_alloc(&n.region, &x->alloc, (size_t)nb2 * sizeof(pk_bin)) != AMQ_OK)
        goto out;
    n.b = (pk_bin *)(void *)n.region.data;
    tab_geometry(&dst, nb2);
    dst.b = n.b;
    dst.alloc = &x->alloc;
    dst.short_deep = x->eb >= PK_SHORT_DEEP_BITS;
    x->isa->rewrite(&t, &dst);
    if (dst.failed)
        goto out;
    if (dst.nsp > 0 &&
        (tmp = amq_malloc(&x->alloc, (size_t)dst.nsp * sizeof *tmp)) == NULL)
        goto out;
    if (dst.nsp > 0)
        ent_sort(dst.sp, tmp, dst.nsp, dst.m);
    if (sp_build_spilling(x, &n, &dst, NULL, 0) != AMQ_OK)
        goto out;
    if (dst.ndeep > 0) {
        qsort(dst.deep, dst.ndeep, sizeof *dst.deep, deep_cmp);
        n.deep = dst.deep;
        n.ndeep = dst.ndeep;
        n.deepcap = dst.capdeep;
        n.deep_width = dst.deep_width;
        dst.deep = NULL;
        deep_mark(&n);
    }
    n.epoch = s->epoch;
    free_seg(x, s);
    *s = n;
    memset(&n, 0, sizeof n);
    rc = AMQ_OK;
out:
    free_seg(x, &n);
    amq_free(&x->alloc, dst.sp, (size_t)dst.capsp * sizeof *dst.sp);
    amq_free(&x->alloc, dst.deep, (size_t)dst.capdeep * sizeof *dst.deep);
    if (tmp != NULL)
        amq_free(&x->alloc, tmp, (size_t)dst.nsp * sizeof *tmp);
    if (old != NULL)
        amq_free(&x->alloc, old, (size_t)nold * sizeof *old);
    return rc;
}

/* The growth's lists' mapping of at least len bytes: the one the last growth used, its pages
 * kept (a new mapping, or pages given back, fault in every page the lists touch again: a
 * tenth of a growth's time; kept, about 1 % of the tables stays resident), or a new one
 * (NULL: none). */
static inline void *growth_scratch(amq_pk *x, size_t len)
{
    void *p;
    if (x->gscr != NULL && x->gscr_len >= len)
        return x->gscr;
    len = page_round(len + len / 4u);
    if ((p = map_bytes(len)) == NULL)
        return NULL;
    if (x->gscr != NULL)
        (void)munmap(x->gscr, x->gscr_len);
    x->gscr = p;
    x->gscr_len = len;
    return p;
}

/* Addresses for a table of need bytes and its next growths: 8 times that, in 2 MiB pages. */
static inline size_t reserve_for(size_t need)
{
    const size_t huge = (size_t)1 << 21;
    return (need * 8u + huge - 1u) / huge * huge;
}

/* Over its own lines: the bins moved up by gap = nb2 - nb + PK_GAP_SLACK, then the new table
 * written from the start (old bin ob's keys go below (ob + 1) nb2 / nb < gap + ob, so the
 * writer never passes a bin not yet read), only the new lines faulting in.  Every mapping it
 * needs, at the most any growth could use (addresses only: untouched pages cost nothing), is
 * made before the first bin moves, so that nothing can fail once one has. */
static inline int grow_in_place(amq_pk *x, pk_seg *s, uint64_t nb2)
{
    const uint64_t gap = nb2 - s->nb + PK_GAP_SLACK;
    const size_t need = (size_t)(nb2 + PK_GAP_SLACK) * sizeof(pk_bin);
    const uint64_t max_sp = 6u * s->entries + 64u;
    const uint64_t max_deep = 2u * s->entries + s->ndeep + 2u * max_sp + 64u; /* and a crowd's */
    const size_t ents = (size_t)(s->spn + 2u * max_sp) * sizeof(pk_ent);
    const size_t sp_len = page_round((size_t)(8u * (max_sp + nb2 * PK_B / 3200u) + 4096u) * 4u);
    const size_t deep_len = page_round((size_t)max_deep * 16u);
    pk_ent *scratch = growth_scratch(x, ents);
    uint32_t *spm = map_bytes(sp_len);
    uint64_t(*dm)[2] = map_bytes(deep_len);
    pk_bin *base = s->va;
    size_t reserved = s->reserved;
    pk_tab t, dst;
    pk_seg n;
    /* (the old table's pages are there) */
    const size_t had = base == NULL ? 0u : ((size_t)s->nb * sizeof(pk_bin)) & ~(size_t)4095u;
    if (scratch == NULL || spm == NULL || dm == NULL)
        goto nomem;
    if (base == NULL || need > reserved) {
        const size_t want = reserve_for(need);
        void *p = base == NULL ? map_huge_aligned(want) : remap_huge_aligned(base, reserved, want);
        if (p == NULL)
            goto nomem;
        populate((uint8_t *)p + had, need - had);
        if (base == NULL) { /* from its heap block */
            memcpy((pk_bin *)p + gap, s->b, (size_t)s->nb * sizeof(pk_bin));
            amq_region_free(&s->region, &x->alloc);
            memset(&s->region, 0, sizeof s->region);
        } else {
            memmove((pk_bin *)p + gap, p, (size_t)s->nb * sizeof(pk_bin));
        }
        base = p;
        reserved = want;
    } else {
        populate((uint8_t *)base + had, need - had);
        memmove(base + gap, base, (size_t)s->nb * sizeof(pk_bin));
    }
    s->va = base;
    s->reserved = reserved;
    s->b = base + gap;
    tab_of(s, &t, scratch);
    memset(&dst, 0, sizeof dst);
    tab_geometry(&dst, nb2);
    dst.b = base;
    dst.sp = scratch + s->spn;
    dst.capsp = max_sp;
    dst.deep = dm;
    dst.capdeep = deep_len / 16u;
    dst.fixed = 1;
    dst.alloc = &x->alloc;
    dst.short_deep = x->eb >= PK_SHORT_DEEP_BITS;
    x->isa->rewrite(&t, &dst);
    ent_sort(dst.sp, dst.sp + dst.nsp, dst.nsp, dst.m); /* (packed: the pages touched stay few) */
    memset(&n, 0, sizeof n);
    pk_set_bins(&n, nb2);
    n.b = base;
    n.va = base;
    n.reserved = reserved;
    n.epoch = s->epoch;
    /* in the mapping reserved for it (twice the size it starts at fits), a crowd spilled into
     * the deep ranges reserved for it: nothing here can fail */
    (void)sp_build_spilling(x, &n, &dst, spm, sp_len);
    spm = NULL;
    if (dst.ndeep > 0) {
        qsort(dst.deep, dst.ndeep, sizeof *dst.deep, deep_cmp);
        n.deep = dst.deep;
        n.ndeep = dst.ndeep;
        n.deep_width = dst.deep_width;
        n.deep_map = map_trim(dm, deep_len, (size_t)dst.ndeep * 16u);
        n.deepcap = n.deep_map / 16u;
        dm = NULL;
        deep_mark(&n);
    }
    s->va = NULL; /* the bins are n's now */
    free_spare(x, s);
    free_deep(x, s);
    *s = n;
    if (dm != NULL)
        (void)munmap(dm, deep_len);
    collapse_huge(base, need);
    return AMQ_OK;
nomem:
    if (spm != NULL)
        (void)munmap(spm, sp_len);
    if (dm != NULL)
        (void)munmap(dm, deep_len);
    return AMQ_ENOMEM;
}

/* Segment t's halves into a and b (zeroed): with m even, bucket g < m / 2 is bucket g of the
 * keys whose next bit is 0, and g - m / 2 of those whose bit is 1; with m halved the level
 * drops by one, so that every entry holds the same bits of h. */
static inline int split_seg(amq_pk *x, const pk_seg *t, pk_seg *a, pk_seg *b)
{
    const uint64_t nb2 = t->nb / 2u, m2 = nb2 * PK_B;
    pk_ent *e = NULL;
    uint64_t i, na = 0;
    int rc = AMQ_ENOMEM;
    pk_set_bins(a, nb2);
    pk_set_bins(b, nb2);
    if (amq_region_alloc(&a->region, &x->alloc, (size_t)nb2 * sizeof(pk_bin)) != AMQ_OK ||
        amq_region_alloc(&b->region, &x->alloc, (size_t)nb2 * sizeof(pk_bin)) != AMQ_OK)
        goto out;
    a->b = (pk_bin *)(void *)a->region.data;
    b->b = (pk_bin *)(void *)b->region.data;
    memcpy(a->b, t->b, (size_t)nb2 * sizeof(pk_bin));
    memcpy(b->b, t->b + nb2, (size_t)nb2 * sizeof(pk_bin));
    if (t->spn > 0 && (e = amq_malloc(&x->alloc, (size_t)t->spn * sizeof *e)) == NULL)
        goto out;
    if (t->spn > 0)
        sp_list(t, e);
    for (i = 0; i < t->spn && e[i].g < m2; i++)
        na++;
    for (i = na; i < t->spn; i++)
        e[i].g -= m2;
    if (sp_build(x, a, e, na, (uint64_t)((double)na / PK_SP_FILL), NULL, 0) != AMQ_OK ||
        sp_build(x, b, e != NULL ? e + na : NULL, t->spn - na,
                 (uint64_t)((double)(t->spn - na) / PK_SP_FILL), NULL, 0) != AMQ_OK)
        goto out;
    pk_count(a);
    pk_count(b);
    rc = AMQ_OK;
out:
    if (e != NULL)
        amq_free(&x->alloc, e, (size_t)t->spn * sizeof *e);
    return rc;
}

/* Every segment split in two, when there are fewer than 2^PK_SEG_BITS and each has
 * PK_SPLIT_BINS bins or more (an even number) and no deep range; all or none. */
static inline void maybe_split(amq_pk *x)
{
    const uint32_t n = 1u << x->d;
    pk_seg *nw;
    uint32_t i;
    if (x->d >= PK_SEG_BITS)
        return;
    for (i = 0; i < n; i++)
        if (x->seg[i].nb < PK_SPLIT_BINS || x->seg[i].nb % 2u != 0 || x->seg[i].ndeep != 0 ||
            x->seg[i].va != NULL)
            return;
    if ((nw = amq_calloc(&x->alloc, 2u * n * sizeof *nw)) == NULL)
        return;
    for (i = 0; i < n; i++)
        if (split_seg(x, &x->seg[i], &nw[2u * i], &nw[2u * i + 1u]) != AMQ_OK) {
            for (i = 0; i < 2u * n; i++)
                free_seg(x, &nw[i]);
            amq_free(&x->alloc, nw, 2u * n * sizeof *nw);
            return; /* no memory: split at a later growth */
        }
    pk_free_segments(x);
    x->seg = nw;
    x->d = 0;
    while ((1u << x->d) < 2u * n)
        x->d++;
    x->splits++;
}

static inline int pk_grow(amq_pk *x, uint32_t i)
{
    pk_seg *s = &x->seg[i];
    uint32_t ep = s->epoch;
    uint64_t nb2;
    int rc;
    do
        nb2 = grid(x, i, ++ep);
    while (nb2 <= s->nb && ep < 1u << 20);
    if (nb2 > 2u * s->nb) /* a growth meets at most three new buckets an old one (replace) */
        nb2 = 2u * s->nb;
    if (nb2 <= s->nb || nb2 > PK_MAX_BINS)
        return AMQ_ELIMIT;
    if (amq_alloc_is_default(&x->alloc) && (size_t)nb2 * sizeof(pk_bin) >= PK_SMALL_BYTES)
        rc = grow_in_place(x, s, nb2);
    else
        rc = grow_new(x, s, nb2);
    if (rc != AMQ_OK)
        return rc;
    s->epoch = ep;
    pk_count(s);
    x->growths++;
    maybe_split(x);
    return AMQ_OK;
}


static inline double pk_rate(const amq_pk *x)
{
    double r = 0;
    uint32_t i;
    for (i = 0; i < 1u << x->d; i++)
        r += ldexp(x->seg[i].rsum, -(int)x->seg[i].k) + x->seg[i].rdeep;
    return r / (double)(1u << x->d);
}

#undef PK_B

#endif /* AMQ_POCKET_CORE_H */
