/*
 * layout_chunks.c - the expandable prototype in chunks sized to their
 * blocks' entries (see layout_chunks.h).
 *
 * A key of hash h1 lives in bucket h1 >> (64 - q) as the expandable kind's
 * 16-bit entry (the next 15 bits, a 1 marker, zeros; a void entry 0x8000);
 * a doubling moves an entry of bucket b to 2b + its first bit, shifting it
 * out.  Block j holds buckets 128j .. 128j + 127 in one chunk:
 *   word 0   owner block (bit 31: the level's q & 1) | n << 32 | class << 48
 *   words    a unary bitmap: for each bucket its entries as 1s, then a 0
 *   entries  n 16-bit entries in bucket order
 * A chunk of class k has room for 4k entries; chunks of one class lie in
 * one dense array (a freed chunk's place takes the array's last chunk, whose
 * owner's directory entry is rewritten), so that no hole is left behind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "layout_chunks.h"
#include "layout_bits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "amq.h"

#define COPIES_MAX 32u
#define MAP_FROM ((uint64_t)1 << 20) /* class arrays this large are mapped */

static inline uint32_t words_for(uint32_t k)
{
    return (128u + 4u * k + 63u) >> 6;
}

static inline uint64_t size_of(uint32_t k)
{
    return 8u + 8u * (uint64_t)words_for(k) + 8u * (uint64_t)k;
}

static inline uint32_t class_for(uint32_t n)
{
    return n / 4u + 1u; /* room for at least one more */
}

static inline uint64_t *chunk_at(const xp_filter *x, uint32_t d)
{
    const uint32_t k = d & 255u;
    return (uint64_t *)(void *)(x->cls[k].base + (uint64_t)(d >> 8) * size_of(k));
}

static inline uint16_t *entries_of(uint64_t *c, uint32_t k)
{
    return (uint16_t *)(void *)(c + 1 + words_for(k));
}

static inline uint32_t n_of(const uint64_t *c)
{
    return (uint32_t)(c[0] >> 32) & 0xFFFFu;
}

static inline void set_n(uint64_t *c, uint32_t n)
{
    c[0] = (c[0] & ~(UINT64_C(0xFFFF) << 32)) | (uint64_t)n << 32;
}

/* The first entry of bucket b and how many it has. */
static inline uint32_t bucket_span(const uint64_t *u, uint32_t b, uint32_t *len)
{
    const uint32_t p = b == 0 ? 0 : select0(u, b - 1) + 1;
    *len = run_from(u, p);
    return p - b;
}

static void bits_insert1(uint64_t *u, uint32_t words, uint32_t p)
{
    uint32_t i = p >> 6, s = p & 63u, j;
    const uint64_t low = (UINT64_C(1) << s) - 1u, w = u[i];
    uint64_t carry = w >> 63, nc;
    u[i] = (w & low) | ((w & ~low) << 1) | (UINT64_C(1) << s);
    for (j = i + 1; j < words; j++) {
        nc = u[j] >> 63;
        u[j] = (u[j] << 1) | carry;
        carry = nc;
    }
}

static void bits_remove(uint64_t *u, uint32_t words, uint32_t p)
{
    uint32_t i = p >> 6, s = p & 63u, j;
    const uint64_t low = (UINT64_C(1) << s) - 1u, w = u[i];
    uint64_t above = s == 63u ? 0 : (w >> (s + 1)) << s;
    u[i] = (w & low) | above | (i + 1 < words ? u[i + 1] << 63 : 0);
    for (j = i + 1; j < words; j++)
        u[j] = (u[j] >> 1) | (j + 1 < words ? u[j + 1] << 63 : 0);
}

/* ---- chunk arrays ---------------------------------------------------------------------- */

static uint32_t *dir_of_owner(xp_filter *x, uint32_t owner)
{
    const uint32_t *d = ((owner >> 31) == (x->q & 1u)) ? x->dir : x->odir;
    return (uint32_t *)(uintptr_t)(d + (owner & 0x7FFFFFFFu));
}

#define TAIL 16u /* bytes after the last chunk: match8 reads 16 bytes */

#define RESERVE ((uint64_t)1 << 36) /* a mapped class array's address space */
#define HUGE ((uint64_t)2 << 20)
#define REL ((uint64_t)64 << 10)

static int class_grow(xp_class *c, uint64_t sz)
{
    uint64_t cap = c->cap + c->cap / 8 + 1, bytes = cap * sz + TAIL;
    void *p;
    uint8_t *a;
    if (c->mapped)
        return AMQ_ENOMEM; /* its reservation is full */
    if (bytes < MAP_FROM) {
        p = realloc(c->base, bytes);
        if (p == NULL)
            return AMQ_ENOMEM;
        c->base = p;
        c->cap = cap;
        return AMQ_OK;
    }
    /* Mapped: one reservation on 2 MiB boundaries, pages written as chunks come. */
    p = mmap(NULL, RESERVE + HUGE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return AMQ_ENOMEM;
    a = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (a != (uint8_t *)p)
        (void)munmap(p, (size_t)(a - (uint8_t *)p));
    (void)munmap(a + RESERVE, (size_t)((uint8_t *)p + RESERVE + HUGE - (a + RESERVE)));
    /* 4 KiB pages: given back 64 KiB at a time as a size's chunks leave it
     * (2 MiB pages would keep up to 4 MiB per chunk size mapped) */
    memcpy(a, c->base, c->count * sz);
    free(c->base);
    c->base = a;
    c->mapped = 1;
    c->cap = (RESERVE - TAIL) / sz;
    c->touched = c->count * sz;
    return AMQ_OK;
}

/* A new chunk of class k for owner with n entries' room taken (bitmap zeroed,
 * entries not written); its directory value. */
static int chunk_new(xp_filter *x, uint32_t k, uint32_t owner, uint32_t n, uint32_t *d)
{
    xp_class *c = &x->cls[k];
    const uint64_t sz = size_of(k);
    uint64_t *ch;
    int rc;
    if (c->count == c->cap && (rc = class_grow(c, sz)) != AMQ_OK)
        return rc;
    ch = (uint64_t *)(void *)(c->base + c->count * sz);
    c->count++;
    if (c->mapped && c->count * sz > c->touched)
        c->touched = c->count * sz;
    ch[0] = owner | (uint64_t)n << 32 | (uint64_t)k << 48;
    memset(ch + 1, 0, 8u * words_for(k));
    *d = (uint32_t)((c->count - 1) << 8) | k;
    return AMQ_OK;
}

/* Frees chunk d: the array's last chunk takes its place. */
static void chunk_drop(xp_filter *x, uint32_t d)
{
    const uint32_t k = d & 255u;
    xp_class *c = &x->cls[k];
    const uint64_t sz = size_of(k), at = d >> 8, last = c->count - 1;
    uint64_t *dst = chunk_at(x, d), keep;
    if (at != last) {
        memcpy(dst, c->base + last * sz, sz);
        *dir_of_owner(x, (uint32_t)dst[0]) = d;
    }
    c->count = last;
    if (!c->mapped && c->count < c->cap / 2) { /* a heap array follows its count down */
        const uint64_t cap = c->count + c->count / 8 + 1;
        void *p = cap < c->cap ? realloc(c->base, cap * sz + TAIL) : NULL;
        if (p != NULL) {
            c->base = p;
            c->cap = cap;
        }
    }
    if (c->mapped) {
        keep = (c->count * sz + REL - 1) & ~(uint64_t)(REL - 1);
        if (c->touched > keep + REL) {
            (void)madvise(c->base + keep, c->touched - keep, MADV_DONTNEED);
            c->touched = keep;
        }
    }
}

/* Moves chunk *d (n entries) to class k2; *d becomes its new place. */
static int chunk_move(xp_filter *x, uint32_t *dp, uint32_t k2)
{
    const uint32_t d = *dp, k = d & 255u;
    uint64_t *src, *dst;
    uint32_t nd, n, wk = words_for(k), wk2 = words_for(k2);
    int rc = chunk_new(x, k2, 0, 0, &nd);
    if (rc != AMQ_OK)
        return rc;
    src = chunk_at(x, d); /* after chunk_new: its array may have moved */
    dst = chunk_at(x, nd);
    n = n_of(src);
    dst[0] = (src[0] & ~(UINT64_C(0xFFFF) << 48)) | (uint64_t)k2 << 48;
    memcpy(dst + 1, src + 1, 8u * (wk < wk2 ? wk : wk2));
    memcpy(entries_of(dst, k2), entries_of(src, k), 2u * n);
    *dp = nd;
    chunk_drop(x, d);
    return AMQ_OK;
}

/* A directory of n blocks (its own 2 MiB pages when that large: a query's
 * first read). */
static uint32_t *dir_alloc(uint64_t n)
{
    void *p = NULL;
    const size_t bytes = (size_t)n * sizeof(uint32_t);
    if (bytes < ((size_t)2 << 20))
        return malloc(bytes);
    if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0)
        return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

/* ---- the filter ------------------------------------------------------------------------ */

static void set_q(xp_filter *x, uint32_t q)
{
    x->q = q;
    x->limit = (uint64_t)(x->load * ldexp(1.0, (int)q));
}

xp_filter *xp_new(uint64_t capacity, double load)
{
    xp_filter *x = calloc(1, sizeof *x);
    uint32_t q = XP_BLOCK_BITS;
    uint64_t i;
    if (x == NULL)
        return NULL;
    x->load = load;
    while (load * ldexp(1.0, (int)q) < (double)capacity)
        q++;
    set_q(x, q);
    x->q0 = q;
    x->mig = UINT64_MAX;
    x->dir = dir_alloc(UINT64_C(1) << (q - XP_BLOCK_BITS));
    if (x->dir == NULL) {
        free(x);
        return NULL;
    }
    for (i = 0; i < (UINT64_C(1) << (q - XP_BLOCK_BITS)); i++)
        x->dir[i] = XP_NONE;
    return x;
}

void xp_free(xp_filter *x)
{
    uint32_t k;
    if (x == NULL)
        return;
    for (k = 0; k < XP_CLASSES; k++) {
        if (x->cls[k].mapped)
            munmap(x->cls[k].base, RESERVE);
        else
            free(x->cls[k].base);
    }
    free(x->dir);
    free(x->odir);
    free(x);
}

/* Where a key lives: its block's directory slot, bucket and entry. */
typedef struct {
    uint32_t *slot;
    uint32_t bucket;
    uint16_t qv;
    int old;
} xp_place;

static inline xp_place place_of(const xp_filter *x, uint64_t u)
{
    xp_place p;
    const uint64_t nb = u >> (64 - x->q), blk = nb >> XP_BLOCK_BITS;
    if (__builtin_expect((blk >> 1) >= x->mig, 0)) {
        p.slot = x->odir + (blk >> 1);
        p.bucket = (uint32_t)(nb >> 1) & 127u;
        p.qv = entry_at(u, x->q - 1);
        p.old = 1;
    } else {
        p.slot = x->dir + blk;
        p.bucket = (uint32_t)nb & 127u;
        p.qv = entry_at(u, x->q);
        p.old = 0;
    }
    return p;
}

int xp_contains(const xp_filter *x, uint64_t u)
{
    const xp_place p = place_of(x, u);
    const uint32_t d = *p.slot;
    uint64_t *c;
    const uint16_t *e;
    uint32_t first, len, i;
    if (d == XP_NONE)
        return 0;
    c = chunk_at(x, d);
    {
        const uint64_t sz = size_of(d & 255u);
        __builtin_prefetch((const char *)c + 64);
        if (sz > 128)
            __builtin_prefetch((const char *)c + 128);
        if (sz > 192)
            __builtin_prefetch((const char *)c + 192);
    }
    first = bucket_span(c + 1, p.bucket, &len);
    e = entries_of(c, d & 255u) + first;
    if (__builtin_expect(len <= 8, 1))
        return (match8(e, p.qv) & ((1u << (2 * len)) - 1u)) != 0;
    for (i = 0; i < len; i++)
        if (lane_matches(e[i], p.qv))
            return 1;
    return 0;
}

/* Entry s put into bucket b of the chunk at *slot (created when none). */
static int put(xp_filter *x, uint32_t *slot, uint32_t owner, uint32_t b, uint16_t s)
{
    uint32_t d = *slot, k, n, pos;
    uint64_t *c;
    uint16_t *e;
    int rc;
    if (d == XP_NONE) {
        if ((rc = chunk_new(x, 1, owner, 0, &d)) != AMQ_OK)
            return rc;
        *slot = d;
    }
    c = chunk_at(x, d);
    n = n_of(c);
    k = d & 255u;
    if (n == 4u * k) {
        if (class_for(n) >= XP_CLASSES)
            return AMQ_EFULL;
        if ((rc = chunk_move(x, slot, class_for(n))) != AMQ_OK)
            return rc;
        d = *slot;
        k = d & 255u;
        c = chunk_at(x, d);
    }
    pos = select0(c + 1, b); /* bucket b's closing 0: the new 1 goes there */
    bits_insert1(c + 1, words_for(k), pos);
    e = entries_of(c, k);
    memmove(e + (pos - b) + 1, e + (pos - b), 2u * (n - (pos - b)));
    e[pos - b] = s;
    set_n(c, n + 1);
    return AMQ_OK;
}

/* Splits old block j into blocks 2j and 2j + 1 of the new level. */
static int split_block(xp_filter *x, uint64_t j)
{
    const uint32_t od = x->odir[j], gen = (x->q & 1u) << 31;
    uint32_t n[2] = {0, 0}, d[2] = {XP_NONE, XP_NONE}, b, i, h, first, len, side, fill, bit;
    uint64_t *oc, *nc;
    const uint16_t *oe;
    uint16_t *ne;
    int rc;
    if (od == XP_NONE) {
        x->dir[2 * j] = x->dir[2 * j + 1] = XP_NONE;
        return AMQ_OK;
    }
    oc = chunk_at(x, od);
    oe = entries_of(oc, od & 255u);
    for (b = 0; b < 128u; b++) {
        first = bucket_span(oc + 1, b, &len);
        for (i = 0; i < len; i++)
            n[b >> 6] += oe[first + i] == 0x8000u ? 2u : 1u;
    }
    for (h = 0; h < 2; h++)
        if (n[h] != 0) {
            if (class_for(n[h]) >= XP_CLASSES)
                return AMQ_EFULL;
            if ((rc = chunk_new(x, class_for(n[h]), gen | (uint32_t)(2 * j + h), n[h], &d[h])) !=
                AMQ_OK) {
                if (h == 1 && d[0] != XP_NONE)
                    chunk_drop(x, d[0]);
                return rc;
            }
        }
    oc = chunk_at(x, od);
    oe = entries_of(oc, od & 255u);
    for (h = 0; h < 2; h++) {
        if (d[h] == XP_NONE)
            continue;
        nc = chunk_at(x, d[h]);
        ne = entries_of(nc, d[h] & 255u);
        fill = 0;
        bit = 0;
        for (b = 64u * h; b < 64u * h + 64u; b++) {
            first = bucket_span(oc + 1, b, &len);
            for (side = 0; side < 2; side++) {
                for (i = 0; i < len; i++) {
                    const uint16_t s = oe[first + i];
                    if (s == 0x8000u || (uint32_t)(s >> 15) == side) {
                        ne[fill++] = s == 0x8000u ? s : (uint16_t)(s << 1);
                        nc[1 + (bit >> 6)] |= UINT64_C(1) << (bit & 63u);
                        bit++;
                    }
                }
                bit++; /* the bucket's closing 0 */
            }
        }
        x->dir[2 * j + h] = d[h];
    }
    chunk_drop(x, od);
    return AMQ_OK;
}

static int migrate(xp_filter *x, uint64_t steps)
{
    const uint64_t old_blocks = UINT64_C(1) << (x->q - 1 - XP_BLOCK_BITS);
    int rc;
    while (steps-- > 0 && x->mig < old_blocks) {
        if ((rc = split_block(x, x->mig)) != AMQ_OK)
            return rc;
        x->mig++;
    }
    if (x->mig == old_blocks) {
        free(x->odir);
        x->odir = NULL;
        x->mig = UINT64_MAX;
    }
    return AMQ_OK;
}

static int grow(xp_filter *x)
{
    const uint64_t blocks = UINT64_C(1) << (x->q + 1 - XP_BLOCK_BITS);
    uint32_t *nd;
    int rc;
    if (x->odir != NULL && (rc = migrate(x, UINT64_MAX)) != AMQ_OK)
        return rc;
    if (x->q >= 48)
        return AMQ_ELIMIT;
    nd = dir_alloc(blocks);
    if (nd == NULL)
        return AMQ_ENOMEM;
    x->odir = x->dir;
    x->dir = nd; /* filled by the splits; a block is read here only once split */
    set_q(x, x->q + 1);
    x->mig = 0;
    x->total = counts_after_doubling(x->cnt);
    return AMQ_OK;
}

static uint32_t copies(const xp_filter *x, const xp_place *p)
{
    const uint32_t d = *p->slot;
    uint64_t *c;
    const uint16_t *e;
    uint32_t first, len, i, m = 0;
    if (d == XP_NONE)
        return 0;
    c = chunk_at(x, d);
    first = bucket_span(c + 1, p->bucket, &len);
    e = entries_of(c, d & 255u) + first;
    if (len <= 8)
        return (uint32_t)__builtin_popcount(match8(e, p->qv) & ((1u << (2 * len)) - 1u)) / 2;
    for (i = 0; i < len; i++)
        m += (uint32_t)lane_matches(e[i], p->qv);
    return m;
}

int xp_add(xp_filter *x, uint64_t u)
{
    xp_place p;
    int rc;
    if (x->odir != NULL && (rc = migrate(x, 2)) != AMQ_OK)
        return rc;
    p = place_of(x, u);
    if (copies(x, &p) >= COPIES_MAX)
        return AMQ_EFULL;
    if (x->total + 1 > x->limit) {
        if ((rc = grow(x)) != AMQ_OK)
            return rc;
        p = place_of(x, u);
    }
    rc = put(x, p.slot, (p.old ? ((x->q - 1) & 1u) : (x->q & 1u)) << 31 |
                            (uint32_t)(p.slot - (p.old ? x->odir : x->dir)),
             p.bucket, p.qv);
    if (rc != AMQ_OK)
        return rc;
    x->cnt[p.old ? XP_FP_BITS - 1 : XP_FP_BITS]++;
    x->total++;
    x->items++;
    return 1;
}

int xp_remove(xp_filter *x, uint64_t u)
{
    const xp_place p = place_of(x, u);
    uint32_t d = *p.slot, first, len, i, best = UINT32_MAX, bestz = 99, z, n, k;
    uint64_t *c;
    uint16_t *e;
    if (d == XP_NONE)
        return 0;
    c = chunk_at(x, d);
    k = d & 255u;
    first = bucket_span(c + 1, p.bucket, &len);
    e = entries_of(c, k);
    for (i = first; i < first + len; i++)
        if (lane_matches(e[i], p.qv) && (z = (uint32_t)__builtin_ctz(e[i])) < bestz) {
            bestz = z;
            best = i;
        }
    if (best == UINT32_MAX)
        return 0;
    /* counted at the length the entry has once any pending split is done:
     * an old void entry is two */
    if (p.old && bestz == XP_FP_BITS) {
        x->cnt[0] -= 2;
        x->total -= 2;
    } else {
        x->cnt[XP_FP_BITS - bestz - (uint32_t)p.old]--;
        x->total--;
    }
    x->items--;
    n = n_of(c);
    bits_remove(c + 1, words_for(k), best + p.bucket);
    memmove(e + best, e + best + 1, 2u * (n - best - 1));
    set_n(c, n - 1);
    if (n - 1 == 0) {
        chunk_drop(x, d);
        *p.slot = XP_NONE;
    } else if (k > 2 && class_for(n - 1) + 1 < k)
        (void)chunk_move(x, p.slot, class_for(n - 1)); /* a failure keeps the larger chunk */
    return 1;
}

/* The answer for bucket b, entry qv of chunk c (of class k). */
static inline int chunk_answers(const uint64_t *c, uint32_t k, uint32_t b, uint16_t qv)
{
    uint32_t len, i;
    const uint32_t first = bucket_span(c + 1, b, &len);
    const uint16_t *e = (const uint16_t *)(const void *)(c + 1 + words_for(k)) + first;
    if (__builtin_expect(len <= 8, 1))
        return (match8(e, qv) & ((1u << (2 * len)) - 1u)) != 0;
    for (i = 0; i < len; i++)
        if (lane_matches(e[i], qv))
            return 1;
    return 0;
}

/* Three stages 16 keys apart: the key's directory slot is fetched, then its
 * chunk's first line and the line its bucket's entries likely lie in, then
 * the key is answered. */
void xp_contains_batch(const xp_filter *x, const uint64_t *h1, size_t n, uint8_t *out)
{
    enum { R = 64, D = 16 };
    xp_place pl[R];
    const uint64_t *ch[R];
    size_t i;
    for (i = 0; i < n + 2 * D; i++) {
        if (i < n) {
            pl[i % R] = place_of(x, h1[i]);
            __builtin_prefetch(pl[i % R].slot);
        }
        if (i >= D && i - D < n) {
            const size_t j = (i - D) % R;
            const uint32_t d = *pl[j].slot;
            if (d == XP_NONE)
                ch[j] = NULL;
            else {
                const uint32_t k = d & 255u;
                const uint8_t *c = (const uint8_t *)chunk_at(x, d);
                ch[j] = (const uint64_t *)(const void *)c;
                const uint64_t sz = size_of(k);
                __builtin_prefetch(c); /* the whole chunk: its entries' line is not known yet */
                __builtin_prefetch(c + 64);
                if (sz > 128)
                    __builtin_prefetch(c + 128);
                if (sz > 192)
                    __builtin_prefetch(c + 192);
            }
        }
        if (i >= 2 * D) {
            const size_t j = (i - 2 * D) % R;
            const uint64_t *c = ch[j];
            out[i - 2 * D] =
                c != NULL && chunk_answers(c, (uint32_t)(c[0] >> 48), pl[j].bucket, pl[j].qv);
        }
    }
}

uint64_t xp_bytes(const xp_filter *x)
{
    uint64_t b = sizeof *x + (sizeof(uint32_t) << (x->q - XP_BLOCK_BITS));
    uint32_t k;
    if (x->odir != NULL)
        b += sizeof(uint32_t) << (x->q - 1 - XP_BLOCK_BITS);
    for (k = 0; k < XP_CLASSES; k++)
        b += x->cls[k].mapped ? x->cls[k].touched : x->cls[k].cap * size_of(k);
    return b;
}

static int check_level(const xp_filter *x, const uint32_t *dir, uint64_t from, uint64_t to,
                       uint32_t gen, uint64_t *seen)
{
    uint64_t j;
    for (j = from; j < to; j++) {
        const uint32_t d = dir[j];
        uint64_t *c;
        uint32_t n, zeros = 0, ones = 0, b;
        if (d == XP_NONE)
            continue;
        if ((d >> 8) >= x->cls[d & 255u].count)
            return -1;
        c = chunk_at(x, d);
        n = n_of(c);
        if ((uint32_t)c[0] != (gen << 31 | (uint32_t)j) || (c[0] >> 48) != (d & 255u) || n == 0 ||
            n > 4u * (d & 255u))
            return -2;
        for (b = 0; b < 128u + n; b++) {
            if ((c[1 + b / 64] >> (b & 63u)) & 1u)
                ones++;
            else
                zeros++;
        }
        if (zeros != 128u || ones != n)
            return -3;
        *seen += n;
    }
    return 0;
}

int xp_check(const xp_filter *x)
{
    uint64_t seen = 0;
    int rc;
    if (x->odir != NULL) {
        const uint64_t ob = UINT64_C(1) << (x->q - 1 - XP_BLOCK_BITS);
        if ((rc = check_level(x, x->dir, 0, 2 * x->mig, x->q & 1u, &seen)) != 0 ||
            (rc = check_level(x, x->odir, x->mig, ob, (x->q - 1) & 1u, &seen)) != 0)
            return rc;
    } else if ((rc = check_level(x, x->dir, 0, UINT64_C(1) << (x->q - XP_BLOCK_BITS), x->q & 1u,
                                 &seen)) != 0)
        return rc;
    return 0;
}
