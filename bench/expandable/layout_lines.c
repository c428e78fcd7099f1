/*
 * layout_lines.c - the line-packed expandable prototype (see layout_lines.h).
 *
 * A key of hash h1 lives in bucket h1 >> (64 - q) as the expandable kind's
 * 16-bit entry (15 bits, a 1 marker, zeros; void 0x8000); a doubling moves
 * an entry of bucket b to 2b + its first bit and shifts that bit out.
 * Block j (buckets 256j ..) is a chunk of L lines; line i holds buckets
 * [s_i, s_i+1): from bit 0 up, each bucket's entry count in unary (1s, then
 * a 0), and entry number e of the line in lane 31 - e.  A line holds r
 * buckets and m entries while r + 17 m <= 512.  Chunks of L lines lie in
 * one dense array per L: a freed chunk's place takes the array's last.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "layout_lines.h"
#include "layout_bits.h"

#include <emmintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "amq.h"

#define LINE 64u
#define LINE_BITS 512u
#define BUCKETS 256u
#define MAX_BUCKET 30u /* entries a bucket holds: one line's worth */
#define COPIES_MAX 30u
#define PAD 64u        /* bytes before and after an array's chunks: 16-byte reads */
#define MAP_FROM ((uint64_t)1 << 20)
/* mapped arrays give pages back in units of REL (64 KiB: 4 KiB pages) */
#define RESERVE ((uint64_t)1 << 36)
#define HUGE ((uint64_t)2 << 20)

/* A block is laid out at most this full, so that most adds find room in
 * their line; its arrays are on 4 KiB pages, given back 64 KiB at a time
 * (2 MiB pages would keep up to 4 MiB per chunk size mapped). */
static const double xl_fill = 0.95;

/* ---- entries and bits ------------------------------------------------------------------ */

static inline uint64_t span_mask(uint32_t i, uint32_t from, uint32_t to) /* bits [from, to] of word i */
{
    uint64_t lo = (from >> 6) == i ? ~UINT64_C(0) << (from & 63u) : ~UINT64_C(0);
    uint64_t hi = (to >> 6) == i ? ((to & 63u) == 63u ? ~UINT64_C(0)
                                                      : (UINT64_C(1) << ((to & 63u) + 1)) - 1)
                                 : ~UINT64_C(0);
    return lo & hi;
}

/* A 1 inserted at pos: bits [pos, end) move up one (bit end, a gap bit, takes bit end - 1). */
static void ins_bit(uint64_t *u, uint32_t pos, uint32_t end)
{
    uint32_t i = end >> 6;
    for (;;) {
        const uint64_t w = u[i], sh = (w << 1) | (i > (pos >> 6) ? u[i - 1] >> 63 : 0);
        const uint64_t mk = span_mask(i, pos, end);
        u[i] = (w & ~mk) | (sh & mk);
        if (i == pos >> 6)
            break;
        i--;
    }
    u[pos >> 6] |= UINT64_C(1) << (pos & 63u);
}

/* Bit pos removed: bits (pos, end) move down one, bit end - 1 becomes 0. */
static void del_bit(uint64_t *u, uint32_t pos, uint32_t end)
{
    uint32_t i;
    for (i = pos >> 6; i <= (end - 1) >> 6; i++) {
        const uint64_t w = u[i], sh = (w >> 1) | (i + 1 < 8 ? u[i + 1] << 63 : 0);
        const uint64_t mk = span_mask(i, pos, end - 1);
        u[i] = (w & ~mk) | (sh & mk);
    }
    u[(end - 1) >> 6] &= ~(UINT64_C(1) << ((end - 1) & 63u));
}

static inline uint16_t *lanes(uint8_t *line)
{
    return (uint16_t *)(void *)line;
}

/* ---- chunk arrays ---------------------------------------------------------------------- */

static inline uint8_t *chunk_at(const xl_filter *x, uint32_t loc)
{
    const uint32_t l = loc & 15u;
    return x->cls[l].base + (uint64_t)(loc >> 4) * LINE * l;
}

static xl_dir *slot_of_owner(xl_filter *x, uint32_t owner)
{
    xl_dir *d = ((owner >> 31) == (x->q & 1u)) ? x->dir : x->odir;
    return d + (owner & 0x7FFFFFFFu);
}

static int class_grow(xl_class *c, uint64_t sz)
{
    const uint64_t cap = c->cap + c->cap / 8 + 2;
    uint32_t *ow;
    void *p;
    uint8_t *a;
    ow = realloc(c->owner, cap * sizeof *ow);
    if (ow == NULL)
        return AMQ_ENOMEM;
    c->owner = ow;
    if (c->mapped) {
        if ((cap + 1) * sz + 2 * PAD > RESERVE)
            return AMQ_ENOMEM;
        c->cap = cap;
        return AMQ_OK;
    }
    if (cap * sz < MAP_FROM) {
        if (posix_memalign(&p, LINE, cap * sz + 2 * PAD) != 0)
            return AMQ_ENOMEM;
        if (c->base != NULL) {
            memcpy((uint8_t *)p + PAD, c->base, c->count * sz);
            free(c->base - PAD);
        }
        c->base = (uint8_t *)p + PAD;
        c->cap = cap;
        return AMQ_OK;
    }
    p = mmap(NULL, RESERVE + HUGE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return AMQ_ENOMEM;
    a = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (a != (uint8_t *)p)
        (void)munmap(p, (size_t)(a - (uint8_t *)p));
    (void)munmap(a + RESERVE, (size_t)((uint8_t *)p + RESERVE + HUGE - (a + RESERVE)));
    memcpy(a + PAD, c->base, c->count * sz);
    free(c->base - PAD);
    c->base = a + PAD;
    c->mapped = 1;
    c->cap = cap;
    c->touched = c->count * sz + PAD;
    return AMQ_OK;
}

static int chunk_new(xl_filter *x, uint32_t l, uint32_t owner, uint32_t *loc)
{
    xl_class *c = &x->cls[l];
    const uint64_t sz = (uint64_t)LINE * l;
    int rc;
    if (c->count == c->cap && (rc = class_grow(c, sz)) != AMQ_OK)
        return rc;
    c->owner[c->count] = owner;
    c->count++;
    if (c->mapped && c->count * sz + 2 * PAD > c->touched)
        c->touched = c->count * sz + 2 * PAD;
    *loc = (uint32_t)((c->count - 1) << 4) | l;
    return AMQ_OK;
}

static void chunk_drop(xl_filter *x, uint32_t loc)
{
    const uint32_t l = loc & 15u;
    xl_class *c = &x->cls[l];
    const uint64_t sz = (uint64_t)LINE * l, at = loc >> 4, last = c->count - 1;
    uint64_t keep, rel;
    if (at != last) {
        memcpy(c->base + at * sz, c->base + last * sz, sz);
        c->owner[at] = c->owner[last];
        slot_of_owner(x, c->owner[at])->loc = loc;
    }
    c->count = last;
    if (!c->mapped && c->count + c->count / 4 + 2 < c->cap) { /* a heap array follows its count */
        const uint64_t cap = c->count + c->count / 8 + 2;
        void *p;
        if (posix_memalign(&p, LINE, cap * sz + 2 * PAD) == 0) {
            memcpy((uint8_t *)p + PAD, c->base, c->count * sz);
            free(c->base - PAD);
            c->base = (uint8_t *)p + PAD;
            c->cap = cap;
        }
    }
    if (c->mapped) {
        rel = (uint64_t)64 << 10;
        keep = ((uintptr_t)(c->base + c->count * sz + PAD + rel - 1) & ~(uintptr_t)(rel - 1)) -
               (uintptr_t)(c->base - PAD);
        if (c->touched > keep + 2 * rel && c->touched - keep > c->touched / 16) {
            (void)madvise(c->base - PAD + keep, c->touched - keep, MADV_DONTNEED);
            c->touched = keep;
        }
    }
}

/* ---- a block decoded ------------------------------------------------------------------- */

typedef struct {
    uint32_t n;
    uint8_t cnt[BUCKETS];
    uint16_t e[1024];
} block_t;

static inline uint32_t line_start(const xl_dir *d, uint32_t i)
{
    return i == 0 ? 0 : d->bnd[i - 1];
}

static inline uint32_t line_end(const xl_dir *d, uint32_t i)
{
    return i + 1 == (d->loc & 15u) ? BUCKETS : d->bnd[i];
}

/* Lines [l0, l1) of block d into bk, bucket line_start(d, l0) as bk's 0. */
static void decode_lines(const xl_filter *x, const xl_dir *d, uint32_t l0, uint32_t l1,
                         block_t *bk)
{
    uint32_t i, k, b = 0, prev, wi, z;
    bk->n = 0;
    for (i = l0; i < l1; i++) {
        const uint8_t *line = chunk_at(x, d->loc) + (uint64_t)LINE * i;
        const uint64_t *u = (const uint64_t *)(const void *)line;
        const uint16_t *ln = (const uint16_t *)(const void *)line;
        const uint32_t r = line_end(d, i) - line_start(d, i);
        uint32_t left = r, m;
        prev = UINT32_MAX; /* position of the last 0 seen */
        for (wi = 0; left > 0; wi++) {
            uint64_t zw = ~u[wi];
            while (zw != 0 && left > 0) {
                z = wi * 64u + (uint32_t)__builtin_ctzll(zw);
                zw &= zw - 1;
                bk->cnt[b++] = (uint8_t)(z - prev - 1u);
                prev = z;
                left--;
            }
        }
        m = prev + 1u - r;
        for (k = 0; k < m; k++)
            bk->e[bk->n + k] = ln[31 - k];
        bk->n += m;
    }
}

static void decode(const xl_filter *x, const xl_dir *d, block_t *bk)
{
    const uint32_t l = d->loc & 15u;
    if (l == 0) {
        bk->n = 0;
        memset(bk->cnt, 0, sizeof bk->cnt);
        return;
    }
    decode_lines(x, d, 0, l, bk);
}

/* Lines for the nb buckets of bk: starts[i] the first bucket of line i.
 * want 0: the fewest lines (greedy), else exactly want lines; 0 when that
 * cannot be (or more than XL_MAX_LINES would be needed).  The buckets are
 * spread so that each line has about the same room. */
static uint32_t plan(const block_t *bk, uint32_t nb, uint32_t want, uint8_t *starts)
{
    uint32_t b, used = 0, lines = 1, total = 0, c, cum = 0, l2;
    for (b = 0; b < nb; b++) {
        c = 1u + 17u * bk->cnt[b];
        total += c;
        if (used + c > LINE_BITS) {
            lines++;
            used = 0;
        }
        used += c;
    }
    if (lines > (want != 0 ? want : XL_MAX_LINES))
        return 0;
    if (want != 0)
        lines = want;
    starts[0] = 0;
    used = 0;
    l2 = 1;
    for (b = 0; b < nb; b++) {
        c = 1u + 17u * bk->cnt[b];
        if (used > 0 && (used + c > LINE_BITS ||
                         (uint64_t)(cum + c / 2) * lines > (uint64_t)total * l2)) {
            if (l2 == lines)
                break;
            starts[l2++] = (uint8_t)b;
            used = 0;
        }
        used += c;
        cum += c;
    }
    if (b == nb && l2 == lines)
        return l2;
    if (want != 0)
        return 0;
    used = 0;
    l2 = 1;
    for (b = 0; b < nb; b++) {
        c = 1u + 17u * bk->cnt[b];
        if (used + c > LINE_BITS) {
            starts[l2++] = (uint8_t)b;
            used = 0;
        }
        used += c;
    }
    return l2;
}

/* bk's nb buckets into the l lines from `first` on, as starts says. */
static void write_lines(uint8_t *first, const block_t *bk, uint32_t nb, const uint8_t *starts,
                        uint32_t l)
{
    uint32_t i, b, k, pos, ei, e = 0;
    for (i = 0; i < l; i++) {
        uint8_t *line = first + (uint64_t)LINE * i;
        uint64_t *u = (uint64_t *)(void *)line;
        uint16_t *ln = lanes(line);
        const uint32_t end = i + 1 == l ? nb : starts[i + 1];
        memset(line, 0, LINE);
        pos = 0;
        ei = 0;
        for (b = starts[i]; b < end; b++) {
            const uint32_t c = bk->cnt[b];
            if (c != 0) { /* c ones at pos: they stay in one word or span two */
                const uint64_t ones = (UINT64_C(1) << c) - 1u;
                u[pos >> 6] |= ones << (pos & 63u);
                if ((pos & 63u) + c > 64u)
                    u[(pos >> 6) + 1] |= ones >> (64u - (pos & 63u));
                for (k = 0; k < c; k++)
                    ln[31 - ei++] = bk->e[e++];
                pos += c;
            }
            pos++;
        }
    }
}

/* Block d (of owner) holds bk from now on: its lines rewritten, in a chunk
 * of another size when it needs one. */
static int store(xl_filter *x, xl_dir *d, uint32_t owner, const block_t *bk)
{
    uint8_t starts[XL_MAX_LINES];
    uint32_t l, old = d->loc & 15u, loc, i;
    int rc;
    if (bk->n == 0) {
        if (old != 0)
            chunk_drop(x, d->loc);
        d->loc = 0;
        return AMQ_OK;
    }
    if ((l = plan(bk, BUCKETS, 0, starts)) == 0)
        return AMQ_EFULL;
    {
        uint32_t t = 0, b;
        for (b = 0; b < BUCKETS; b++)
            t += 1u + 17u * bk->cnt[b];
        if (l < XL_MAX_LINES && t > xl_fill * LINE_BITS * l) { /* one line more: room to grow */
            if (plan(bk, BUCKETS, l + 1, starts) != 0)
                l++;
            else
                (void)plan(bk, BUCKETS, 0, starts); /* the failed try wrote starts */
        }
    }
    if (l == old)
        loc = d->loc;
    else {
        if ((rc = chunk_new(x, l, owner, &loc)) != AMQ_OK)
            return rc;
        if (old != 0)
            chunk_drop(x, d->loc); /* may move the new chunk: its owner's loc follows */
        d->loc = loc;
        loc = d->loc;
    }
    write_lines(chunk_at(x, loc), bk, BUCKETS, starts, l);
    for (i = 1; i < l; i++)
        d->bnd[i - 1] = starts[i];
    x->repacks++;
    return AMQ_OK;
}

/* Entry s into bucket b of lines j and j + 1 of block d, the two laid out
 * again (1: done, 0: they cannot hold it). */
static int store_pair(xl_filter *x, xl_dir *d, uint32_t j, uint32_t b, uint16_t s)
{
    block_t bk;
    uint8_t starts[2];
    const uint32_t b0 = line_start(d, j), nb = line_end(d, j + 1) - b0;
    uint32_t i, at = 0, k;
    decode_lines(x, d, j, j + 2, &bk);
    for (i = 0; i <= b - b0; i++)
        at += bk.cnt[i];
    bk.cnt[b - b0]++;
    if (plan(&bk, nb, 2, starts) != 2) {
        return 0;
    }
    for (k = bk.n; k > at; k--)
        bk.e[k] = bk.e[k - 1];
    bk.e[at] = s;
    bk.n++;
    write_lines(chunk_at(x, d->loc) + (uint64_t)LINE * j, &bk, nb, starts, 2);
    d->bnd[j] = (uint8_t)(b0 + starts[1]);
    x->pairs++;
    return 1;
}

/* ---- the filter ------------------------------------------------------------------------ */

static xl_dir *dir_alloc(uint64_t n)
{
    void *p = NULL;
    const size_t bytes = (size_t)n * sizeof(xl_dir);
    if (posix_memalign(&p, bytes < HUGE ? 64 : HUGE, bytes) != 0)
        return NULL;
    if (bytes >= HUGE)
        (void)madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static void set_q(xl_filter *x, uint32_t q)
{
    x->q = q;
    x->limit = (uint64_t)(x->load * ldexp(1.0, (int)q));
}

xl_filter *xl_new(uint64_t capacity, double load)
{
    xl_filter *x = calloc(1, sizeof *x);
    uint32_t q = XL_BLOCK_BITS;
    if (x == NULL)
        return NULL;
    x->load = load;
    while (load * ldexp(1.0, (int)q) < (double)capacity)
        q++;
    set_q(x, q);
    x->q0 = q;
    x->mig = UINT64_MAX;
    x->dir = dir_alloc(UINT64_C(1) << (q - XL_BLOCK_BITS));
    if (x->dir == NULL) {
        free(x);
        return NULL;
    }
    memset(x->dir, 0, sizeof(xl_dir) << (q - XL_BLOCK_BITS));
    return x;
}

void xl_free(xl_filter *x)
{
    uint32_t l;
    if (x == NULL)
        return;
    for (l = 1; l <= XL_MAX_LINES; l++) {
        if (x->cls[l].mapped)
            munmap(x->cls[l].base - PAD, RESERVE);
        else if (x->cls[l].base != NULL)
            free(x->cls[l].base - PAD);
        free(x->cls[l].owner);
    }
    free(x->dir);
    free(x->odir);
    free(x);
}

typedef struct {
    xl_dir *slot;
    uint32_t bucket;
    uint16_t qv;
    int old;
} xl_place;

static inline xl_place place_of(const xl_filter *x, uint64_t u)
{
    xl_place p;
    const uint64_t nb = u >> (64 - x->q), blk = nb >> XL_BLOCK_BITS;
    if (__builtin_expect((blk >> 1) >= x->mig, 0)) {
        p.slot = x->odir + (blk >> 1);
        p.bucket = (uint32_t)(nb >> 1) & (BUCKETS - 1);
        p.qv = entry_at(u, x->q - 1);
        p.old = 1;
    } else {
        p.slot = x->dir + blk;
        p.bucket = (uint32_t)nb & (BUCKETS - 1);
        p.qv = entry_at(u, x->q);
        p.old = 0;
    }
    return p;
}

static inline uint32_t owner_of(const xl_filter *x, const xl_place *p)
{
    return p->old ? ((x->q - 1) & 1u) << 31 | (uint32_t)(p->slot - x->odir)
                  : (x->q & 1u) << 31 | (uint32_t)(p->slot - x->dir);
}

/* The line of bucket b in block d (of l lines): how many line starts are <= b. */
static inline uint32_t line_of(const xl_dir *d, uint32_t b, uint32_t l)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)d);
    const __m128i bb = _mm_set1_epi8((char)b);
    const uint32_t le = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, bb), bb)) >> 4;
    return (uint32_t)__builtin_popcount(le & ((1u << (l - 1)) - 1u));
}

/* The answer of bucket bl (counted from the line's first) of a line for qv. */
static inline int line_answers(const uint8_t *line, uint32_t bl, uint16_t qv)
{
    const uint64_t *u = (const uint64_t *)(const void *)line;
    const uint32_t start = bl == 0 ? 0 : select0(u, bl - 1) + 1, len = run_from(u, start);
    const uint32_t i0 = start - bl;
    uint32_t i;
    if (__builtin_expect(len <= 8, 1))
        return (match8(line + 48 - 2 * (int32_t)i0, qv) & ~((1u << (16 - 2 * len)) - 1u) &
                0xFFFFu) != 0;
    for (i = 0; i < len; i++)
        if (lane_matches(((const uint16_t *)(const void *)line)[31 - i0 - i], qv))
            return 1;
    return 0;
}

int xl_contains(const xl_filter *x, uint64_t u)
{
    const xl_place p = place_of(x, u);
    const xl_dir d = *p.slot;
    const uint32_t l = d.loc & 15u;
    uint32_t j;
    if (l == 0)
        return 0;
    j = line_of(&d, p.bucket, l);
    return line_answers(chunk_at(x, d.loc) + (uint64_t)LINE * j, p.bucket - line_start(&d, j),
                        p.qv);
}

static uint32_t copies(const xl_filter *x, const xl_place *p)
{
    const xl_dir *d = p->slot;
    const uint32_t l = d->loc & 15u;
    uint32_t j, bl, start, len, i0, i, m = 0;
    const uint8_t *line;
    if (l == 0)
        return 0;
    j = line_of(d, p->bucket, l);
    line = chunk_at(x, d->loc) + (uint64_t)LINE * j;
    bl = p->bucket - line_start(d, j);
    start = bl == 0 ? 0 : select0((const uint64_t *)(const void *)line, bl - 1) + 1;
    len = run_from((const uint64_t *)(const void *)line, start);
    i0 = start - bl;
    for (i = 0; i < len; i++)
        m += (uint32_t)lane_matches(((const uint16_t *)(const void *)line)[31 - i0 - i], p->qv);
    return m;
}

/* Entry s into bucket b of the block at p->slot: in its line when the line
 * has room, else the block decoded and laid out again. */
static int insert(xl_filter *x, const xl_place *p, uint16_t s)
{
    xl_dir *d = p->slot;
    const uint32_t l = d->loc & 15u;
    block_t bk;
    uint32_t b = p->bucket, i, k, at;
    if (l != 0) {
        const uint32_t j = line_of(d, b, l), s0 = line_start(d, j), r = line_end(d, j) - s0;
        uint8_t *line = chunk_at(x, d->loc) + (uint64_t)LINE * j;
        uint64_t *u = (uint64_t *)(void *)line;
        uint16_t *ln = lanes(line);
        const uint32_t used = select0(u, r - 1) + 1, m = used - r, bl = b - s0;
        const uint32_t pos = select0(u, bl), first = bl == 0 ? 0 : select0(u, bl - 1) + 1;
        if (pos - first >= MAX_BUCKET)
            return AMQ_EFULL;
        if (used + 1 + 16u * (m + 1) <= LINE_BITS) {
            const uint32_t inew = pos - bl;
            ins_bit(u, pos, used);
            memmove(ln + 31 - m, ln + 32 - m, 2u * (m - inew));
            ln[31 - inew] = s;
            return AMQ_OK;
        }
        if (j + 1 < l && store_pair(x, d, j, b, s))
            return AMQ_OK;
        if (j > 0 && store_pair(x, d, j - 1, b, s))
            return AMQ_OK;
    }
    decode(x, d, &bk);
    for (i = 0, at = 0; i < b; i++)
        at += bk.cnt[i];
    at += bk.cnt[b];
    if (bk.cnt[b] >= MAX_BUCKET)
        return AMQ_EFULL;
    for (k = bk.n; k > at; k--)
        bk.e[k] = bk.e[k - 1];
    bk.e[at] = s;
    bk.n++;
    bk.cnt[b]++;
    return store(x, d, owner_of(x, p), &bk);
}

/* Old block j into blocks 2j and 2j + 1 of the new level. */
static int split_block(xl_filter *x, uint64_t j)
{
    block_t ob, nb[2];
    uint32_t b, side, k, e = 0, h;
    const uint32_t gen = (x->q & 1u) << 31;
    int rc;
    decode(x, &x->odir[j], &ob);
    nb[0].n = nb[1].n = 0;
    memset(nb[0].cnt, 0, BUCKETS);
    memset(nb[1].cnt, 0, BUCKETS);
    for (b = 0; b < BUCKETS; b++) {
        block_t *t = &nb[b >> 7];
        const uint32_t nbk = 2 * (b & 127u);
        for (side = 0; side < 2; side++)
            for (k = 0; k < ob.cnt[b]; k++) {
                const uint16_t s = ob.e[e + k];
                if (s == 0x8000u || (uint32_t)(s >> 15) == side) {
                    t->e[t->n++] = s == 0x8000u ? s : (uint16_t)(s << 1);
                    t->cnt[nbk + side]++;
                }
            }
        e += ob.cnt[b];
    }
    for (h = 0; h < 2; h++) {
        x->dir[2 * j + h].loc = 0;
        if ((rc = store(x, &x->dir[2 * j + h], gen | (uint32_t)(2 * j + h), &nb[h])) != AMQ_OK)
            return rc;
    }
    if ((x->odir[j].loc & 15u) != 0)
        chunk_drop(x, x->odir[j].loc);
    x->odir[j].loc = 0;
    return AMQ_OK;
}

static int migrate(xl_filter *x, uint64_t steps)
{
    const uint64_t old_blocks = UINT64_C(1) << (x->q - 1 - XL_BLOCK_BITS);
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

static int grow(xl_filter *x)
{
    const uint64_t blocks = UINT64_C(1) << (x->q + 1 - XL_BLOCK_BITS);
    xl_dir *nd;
    int rc;
    if (x->odir != NULL && (rc = migrate(x, UINT64_MAX)) != AMQ_OK)
        return rc;
    if (x->q >= 48)
        return AMQ_ELIMIT;
    if ((nd = dir_alloc(blocks)) == NULL)
        return AMQ_ENOMEM;
    x->odir = x->dir;
    x->dir = nd;
    set_q(x, x->q + 1);
    x->mig = 0;
    x->total = counts_after_doubling(x->cnt);
    return AMQ_OK;
}

int xl_add(xl_filter *x, uint64_t u)
{
    xl_place p;
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
    if ((rc = insert(x, &p, p.qv)) != AMQ_OK)
        return rc;
    x->cnt[p.old ? XL_FP_BITS - 1 : XL_FP_BITS]++;
    x->total++;
    x->items++;
    return 1;
}

int xl_remove(xl_filter *x, uint64_t u)
{
    const xl_place p = place_of(x, u);
    xl_dir *d = p.slot;
    const uint32_t l = d->loc & 15u;
    uint32_t j, s0, r, bl, start, len, i0, i, best = UINT32_MAX, bestz = 99, z, used, m;
    uint8_t *line;
    uint64_t *w;
    uint16_t *ln;
    if (l == 0)
        return 0;
    j = line_of(d, p.bucket, l);
    s0 = line_start(d, j);
    r = line_end(d, j) - s0;
    line = chunk_at(x, d->loc) + (uint64_t)LINE * j;
    w = (uint64_t *)(void *)line;
    ln = lanes(line);
    bl = p.bucket - s0;
    start = bl == 0 ? 0 : select0(w, bl - 1) + 1;
    len = run_from(w, start);
    i0 = start - bl;
    for (i = i0; i < i0 + len; i++)
        if (lane_matches(ln[31 - i], p.qv) && (z = (uint32_t)__builtin_ctz(ln[31 - i])) < bestz) {
            bestz = z;
            best = i;
        }
    if (best == UINT32_MAX)
        return 0;
    if (p.old && bestz == XL_FP_BITS) {
        x->cnt[0] -= 2;
        x->total -= 2;
    } else {
        x->cnt[XL_FP_BITS - bestz - (uint32_t)p.old]--;
        x->total--;
    }
    x->items--;
    used = select0(w, r - 1) + 1;
    m = used - r;
    del_bit(w, best + bl, used);
    memmove(ln + 33 - m, ln + 32 - m, 2u * (m - 1 - best));
    ln[32 - m] = 0;
    if (r + 17u * (m - 1) <= LINE_BITS / 4) { /* a thin line: the block in fewer lines? */
        block_t bk;
        uint8_t starts[XL_MAX_LINES];
        decode(x, d, &bk);
        if (bk.n == 0 || plan(&bk, BUCKETS, 0, starts) < l)
            (void)store(x, d, owner_of(x, &p), &bk); /* a failure keeps the lines */
    }
    return 1;
}

/* Three stages 16 keys apart: the directory entry, the line, the answer. */
void xl_contains_batch(const xl_filter *x, const uint64_t *h1, size_t n, uint8_t *out)
{
    enum { R = 64, D = 16 };
    xl_place pl[R];
    const uint8_t *ln[R];
    uint32_t bl[R];
    size_t i;
    for (i = 0; i < n + 2 * D; i++) {
        if (i < n) {
            pl[i % R] = place_of(x, h1[i]);
            __builtin_prefetch(pl[i % R].slot);
        }
        if (i >= D && i - D < n) {
            const size_t k = (i - D) % R;
            const xl_dir d = *pl[k].slot;
            const uint32_t l = d.loc & 15u;
            if (l == 0)
                ln[k] = NULL;
            else {
                const uint32_t j = line_of(&d, pl[k].bucket, l);
                ln[k] = chunk_at(x, d.loc) + (uint64_t)LINE * j;
                bl[k] = pl[k].bucket - line_start(&d, j);
                __builtin_prefetch(ln[k]);
            }
        }
        if (i >= 2 * D) {
            const size_t k = (i - 2 * D) % R;
            out[i - 2 * D] = ln[k] != NULL && line_answers(ln[k], bl[k], pl[k].qv);
        }
    }
}

uint64_t xl_bytes(const xl_filter *x)
{
    uint64_t b = sizeof *x + (sizeof(xl_dir) << (x->q - XL_BLOCK_BITS));
    uint32_t l;
    if (x->odir != NULL)
        b += sizeof(xl_dir) << (x->q - 1 - XL_BLOCK_BITS);
    for (l = 1; l <= XL_MAX_LINES; l++) {
        const xl_class *c = &x->cls[l];
        b += c->cap * sizeof(uint32_t);
        b += c->mapped ? c->touched : (c->base != NULL ? c->cap * LINE * l + 2 * PAD : 0);
    }
    return b;
}

static int check_level(const xl_filter *x, const xl_dir *dir, uint64_t from, uint64_t to,
                       uint32_t gen, uint64_t *seen)
{
    uint64_t j;
    for (j = from; j < to; j++) {
        const xl_dir *d = &dir[j];
        const uint32_t l = d->loc & 15u;
        uint32_t i, r, used, m, bit, zeros;
        if (l == 0)
            continue;
        if ((d->loc >> 4) >= x->cls[l].count || x->cls[l].owner[d->loc >> 4] != (gen << 31 | j))
            return -1;
        for (i = 0; i < l; i++) {
            const uint8_t *line = chunk_at(x, d->loc) + (uint64_t)LINE * i;
            const uint64_t *u = (const uint64_t *)(const void *)line;
            if (line_end(d, i) <= line_start(d, i))
                return -2;
            r = line_end(d, i) - line_start(d, i);
            used = select0(u, r - 1) + 1;
            m = used - r;
            if (used + 16u * m > LINE_BITS)
                return -3;
            for (bit = used, zeros = 0; bit < LINE_BITS - 16u * m; bit++)
                zeros += ((u[bit >> 6] >> (bit & 63u)) & 1u) == 0;
            if (zeros != LINE_BITS - 16u * m - used)
                return -4; /* the gap is clear */
            *seen += m;
        }
    }
    return 0;
}

int xl_check(const xl_filter *x)
{
    uint64_t seen = 0;
    if (x->odir != NULL) {
        const uint64_t ob = UINT64_C(1) << (x->q - 1 - XL_BLOCK_BITS);
        int rc = check_level(x, x->dir, 0, 2 * x->mig, x->q & 1u, &seen);
        return rc != 0 ? rc : check_level(x, x->odir, x->mig, ob, (x->q - 1) & 1u, &seen);
    }
    return check_level(x, x->dir, 0, UINT64_C(1) << (x->q - XL_BLOCK_BITS), x->q & 1u, &seen);
}
