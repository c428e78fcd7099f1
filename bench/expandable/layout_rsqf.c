/*
 * layout_rsqf.c - the range-reduced quotient filter prototype (see layout_rsqf.h).
 *
 * Slot a = h1 * m >> 64.  Entries lie in order of their slots; the entries
 * of one slot (its run) are contiguous and end at a run-end bit; occupied
 * bit a says slot a has a run.  A line's offset is how many slots from its
 * first one on hold entries of earlier slots (runs pushed into it), so that
 * the runs of its own slots begin at first + offset, in the order of its
 * occupied bits.
 */
#include "layout_rsqf.h"
#include "layout_bits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amq.h"

#define S 28u
#define M28 ((UINT64_C(1) << 28) - 1u)
#define TAIL_BLOCKS 16u
#define RUN_MAX 4096u

static inline uint64_t mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

static inline uint64_t *word_of(const xq_filter *x, uint64_t blk)
{
    return (uint64_t *)(void *)(x->t + blk * 64u);
}

static inline uint16_t *lane_at(const xq_filter *x, uint64_t pos)
{
    return (uint16_t *)(void *)(x->t + (pos / S) * 64u + 8u + 2u * (pos % S));
}

static inline uint16_t entry_of(const xq_filter *x, uint64_t h)
{
    return (uint16_t)(((h << (x->k - 1)) >> 48) | 1u);
}

static inline void set_run(xq_filter *x, uint64_t pos, int v)
{
    uint64_t *w = word_of(x, pos / S);
    const uint64_t bit = UINT64_C(1) << (36u + pos % S);
    *w = v ? *w | bit : *w & ~bit;
}

/* The position of run end number t (from 1) at or after p. */
static inline uint64_t select_run(const xq_filter *x, uint64_t p, uint32_t t)
{
    uint64_t blk = p / S, w = ((*word_of(x, blk) >> 36) & M28) & (M28 << (p % S));
    uint32_t c;
    for (;;) {
        c = (uint32_t)__builtin_popcountll(w);
        if (t <= c)
            return blk * S + (uint64_t)__builtin_ctzll(pdep64(UINT64_C(1) << (t - 1), w));
        t -= c;
        blk++;
        w = (*word_of(x, blk) >> 36) & M28;
    }
}

/* The general answer: the run of slot a (the t-th of its line, which begins
 * at p0) wherever it lies. */
static int run_answers(const xq_filter *x, uint64_t a, uint64_t p0, uint32_t t, uint16_t qv)
{
    uint64_t start = t == 1 ? p0 : select_run(x, p0, t - 1) + 1, end, pos;
    end = select_run(x, start, 1);
    if (start < a)
        start = a;
    for (pos = start; pos <= end; pos++)
        if (lane_matches(*lane_at(x, pos), qv))
            return 1;
    return 0;
}

int xq_contains(const xq_filter *x, uint64_t h)
{
    const uint64_t a = mulhi(h, x->m), blk = a / S;
    const uint32_t i = (uint32_t)(a - blk * S);
    const uint8_t *line = x->t + blk * 64u;
    const uint64_t w = *(const uint64_t *)(const void *)line;
    const uint32_t off = (uint32_t)(w & 255u);
    uint32_t t, start, end, len;
    uint64_t r;
    if (!((w >> (8u + i)) & 1u))
        return 0;
    t = (uint32_t)__builtin_popcountll((w >> 8) & M28 & ((UINT64_C(2) << i) - 1u));
    r = off < S ? (w >> 36) & M28 & (M28 << off) : 0; /* run ends in this line from p0 on */
    if (__builtin_expect((uint32_t)__builtin_popcountll(r) < t, 0))
        return run_answers(x, a, blk * S + off, t, entry_of(x, h));
    /* the run lies in this line: its end is run end t, its start after run end t - 1 */
    end = (uint32_t)__builtin_ctzll(pdep64(UINT64_C(1) << (t - 1), r));
    start = t == 1 ? off : (uint32_t)__builtin_ctzll(pdep64(UINT64_C(1) << (t - 2), r)) + 1u;
    if (start < i)
        start = i;
    len = end - start + 1u;
    if (__builtin_expect(len <= 8, 1)) /* 8 lanes from the run's first (the line has 8 bytes more after it, or the next line) */
        return (match8(line + 8u + 2u * start, entry_of(x, h)) & ((1u << (2 * len)) - 1u)) != 0;
    return run_answers(x, a, blk * S + off, t, entry_of(x, h));
}

/* Slots [ins, f) move to [ins + 1, f] (f is empty), lanes and run ends, a
 * line at a time with the last slot of one carried into the next. */
static void shift_up(xq_filter *x, uint64_t ins, uint64_t f)
{
    const uint64_t li = ins / S, lf = f / S;
    uint64_t l, *w, keep, moved;
    uint16_t carry = 0, *ln;
    uint32_t carry_run = 0, lo, hi, out_run = 0;
    uint16_t out = 0;
    for (l = li; l <= lf; l++) {
        w = word_of(x, l);
        ln = (uint16_t *)(void *)(x->t + l * 64u + 8u);
        lo = l == li ? (uint32_t)(ins % S) : 0;
        hi = l == lf ? (uint32_t)(f % S) : S - 1; /* the top slot that receives */
        if (l != lf) {
            out = ln[S - 1];
            out_run = (uint32_t)(*w >> (36u + S - 1)) & 1u;
        }
        memmove(ln + lo + 1, ln + lo, 2u * (hi - lo));
        /* run bits [lo, hi] take [lo - 1 .. hi - 1], bit lo the carried one */
        keep = ~(((UINT64_C(2) << hi) - 1u) & ~((UINT64_C(1) << lo) - 1u)) & M28;
        moved = ((((*w >> 36) & M28) << 1) & ~keep & M28);
        if (l != li) {
            ln[lo] = carry;
            moved = (moved & ~UINT64_C(1)) | carry_run;
        } else /* slot ins keeps its bit: the caller sets it */
            moved = (moved & ~(UINT64_C(1) << lo)) | ((((*w >> 36) >> lo) & 1u) << lo);
        *w = (*w & ~(M28 << 36)) | ((((*w >> 36) & keep) | moved) << 36);
        carry = out;
        carry_run = out_run;
    }
}

/* Entry s into the run of slot a (AMQ_EFULL: no room: the table grows). */
static int insert_at(xq_filter *x, uint64_t a, uint16_t s)
{
    const uint64_t blk = a / S, total = x->blocks * S;
    const uint32_t i = (uint32_t)(a % S);
    uint64_t *wp = word_of(x, blk), w = *wp, p0, ins, f, b2;
    const int occ = (int)((w >> (8u + i)) & 1u);
    const uint32_t t0 = (uint32_t)__builtin_popcountll((w >> 8) & M28 & ((UINT64_C(2) << i) - 1u));
    p0 = blk * S + (w & 255u);
    if (occ)
        ins = select_run(x, p0, t0) + 1;
    else {
        ins = t0 == 0 ? p0 : select_run(x, p0, t0) + 1;
        if (ins < a)
            ins = a;
    }
    for (f = ins; f < total && *lane_at(x, f) != 0; f++)
        ;
    if (f >= total)
        return AMQ_EFULL;
    /* every line whose first slot is in (a, f] gets one more entry of an earlier slot */
    for (b2 = blk + 1; b2 <= f / S; b2++)
        if ((*word_of(x, b2) & 255u) == 255u)
            return AMQ_EFULL;
    shift_up(x, ins, f);
    *lane_at(x, ins) = s;
    if (occ)
        set_run(x, ins - 1, 0);
    else
        *wp |= UINT64_C(1) << (8u + i);
    set_run(x, ins, 1);
    for (b2 = blk + 1; b2 <= f / S; b2++)
        (*word_of(x, b2))++;
    return AMQ_OK;
}

/* ---- growth: every entry re-placed in order ------------------------------------------------ */

typedef struct {
    xq_filter *y; /* the table being written */
    int64_t last_pos;
    uint64_t last_can;
    int bad;
    uint16_t copies[64]; /* copies put in slot copies_of (places of entries that span slots) */
    uint32_t ncopies;
    uint64_t copies_of;
} appender;

/* Has a copy equal to s been put in slot a already?  Places of one entry
 * that meet in one slot are kept once (else copies of short entries pile up
 * growth after growth); the prototype removes nothing, so no count is kept. */
static int copy_seen(appender *ap, uint64_t a, uint16_t s)
{
    uint32_t i;
    if (ap->ncopies == 0 || ap->copies_of != a) {
        ap->copies_of = a;
        ap->ncopies = 0;
    }
    for (i = 0; i < ap->ncopies; i++)
        if (ap->copies[i] == s)
            return 1;
    if (ap->ncopies < 64)
        ap->copies[ap->ncopies++] = s;
    return 0;
}

static void append(appender *ap, uint64_t a, uint16_t s)
{
    xq_filter *y = ap->y;
    uint64_t pos = ap->last_pos < 0 ? a : (uint64_t)ap->last_pos + 1, b2;
    if (pos < a)
        pos = a;
    if (pos >= y->blocks * S) {
        ap->bad = 1;
        return;
    }
    if (ap->last_pos >= 0 && a == ap->last_can)
        set_run(y, (uint64_t)ap->last_pos, 0);
    else
        *word_of(y, a / S) |= UINT64_C(1) << (8u + a % S);
    set_run(y, pos, 1);
    *lane_at(y, pos) = s;
    for (b2 = a / S + 1; b2 <= pos / S; b2++) {
        const uint64_t off = pos - b2 * S + 1;
        uint64_t *w = word_of(y, b2);
        if (off > 255u) {
            ap->bad = 1;
            return;
        }
        *w = (*w & ~UINT64_C(255)) | off;
    }
    ap->last_pos = (int64_t)pos;
    ap->last_can = a;
    y->entries++;
}

typedef struct {
    uint64_t a;
    uint16_t s;
    uint16_t copy; /* one of several places of one entry (its prefix spans slots) */
} placed;

/* Entry s of slot a in x: where it goes in y (one slot, or several for an
 * entry whose prefix is shorter than y's slots are wide). */
static uint32_t replace(const xq_filter *x, const xq_filter *y, uint64_t a, uint16_t s,
                        placed *out, uint32_t room)
{
    const uint32_t len = s == 0x8000u ? 0 : 15u - (uint32_t)__builtin_ctz(s);
    /* slot a's keys: h in [slot_lo, slot_hi]; an entry's prefix may reach past them */
    const unsigned __int128 top = ((unsigned __int128)(a + 1) << 64) + x->m - 1u;
    const uint64_t slot_lo = (uint64_t)((((unsigned __int128)a << 64) + x->m - 1u) / x->m);
    const uint64_t slot_hi = top / x->m > UINT64_MAX ? UINT64_MAX : (uint64_t)(top / x->m) - 1u;
    uint64_t lo, hi, a_lo, a_hi, c;
    int32_t len2;
    uint16_t s2, clipped = 0;
    uint32_t n = 0;
    if (len == 0) {
        lo = slot_lo;
        hi = slot_hi;
        s2 = 0x8000u;
        clipped = 1; /* a void entry: a copy in every slot its key may have */
    } else {
        const uint32_t p = x->k + len - 1u;
        uint64_t pk, pre;
        c = (uint64_t)(((unsigned __int128)a << x->k) / x->m);
        pk = (c & 1u) == (uint64_t)(s >> 15) ? c : c + 1u;
        pre = (pk << (len - 1u)) | ((uint64_t)(s >> (16u - len)) & ((UINT64_C(1) << (len - 1u)) - 1u));
        lo = pre << (64u - p);
        hi = lo + ((UINT64_C(1) << (64u - p)) - 1u);
        len2 = (int32_t)len + (int32_t)x->k - (int32_t)y->k;
        if (len2 >= 1) {
            const uint64_t d2 = (lo << (y->k - 1u)) >> (64u - (uint32_t)len2);
            s2 = (uint16_t)((d2 << (16u - (uint32_t)len2)) | (UINT64_C(1) << (15u - (uint32_t)len2)));
        } else
            s2 = 0x8000u;
        clipped = lo < slot_lo || hi > slot_hi;
        if (lo < slot_lo)
            lo = slot_lo;
        if (hi > slot_hi)
            hi = slot_hi;
    }
    a_lo = mulhi(lo, y->m);
    a_hi = mulhi(hi, y->m);
    if (a_hi - a_lo >= room)
        return UINT32_MAX; /* no room for every place: the caller fails, nothing dropped */
    for (; a_lo <= a_hi; a_lo++, n++) {
        out[n].a = a_lo;
        out[n].s = s2;
        out[n].copy = (uint16_t)(clipped || a_hi != mulhi(lo, y->m));
    }
    return n;
}

static xq_filter *shell(uint64_t m, double max_load, double growth)
{
    xq_filter *y = calloc(1, sizeof *y);
    void *p = NULL;
    if (y == NULL)
        return NULL;
    y->m = m;
    y->blocks = (m + S - 1) / S + TAIL_BLOCKS;
    y->k = 63u - (uint32_t)__builtin_clzll(m);
    y->max_load = max_load;
    y->growth = growth;
    if (posix_memalign(&p, 64, y->blocks * 64u) != 0) {
        free(y);
        return NULL;
    }
    memset(p, 0, y->blocks * 64u);
    y->t = p;
    return y;
}

static int rebuild(xq_filter *x, uint64_t m2)
{
    xq_filter *y = shell(m2, x->max_load, x->growth);
    static uint64_t fifo[4096];
    static placed run[RUN_MAX];
    uint64_t head = 0, tail = 0, pos, total = x->blocks * S, w = 0;
    uint32_t nr = 0, i, j, placed_n;
    appender ap;
    if (y == NULL)
        return AMQ_ENOMEM;
    ap.y = y;
    ap.last_pos = -1;
    ap.last_can = 0;
    ap.bad = 0;
    ap.ncopies = 0;
    ap.copies_of = 0;
    for (pos = 0; pos < total && !ap.bad; pos++) {
        uint16_t s;
        if (pos % S == 0)
            w = *word_of(x, pos / S);
        if ((w >> (8u + pos % S)) & 1u) {
            if (tail - head == 4096u) { /* more slots' runs pending than the ring holds */
                ap.bad = 1;
                break;
            }
            fifo[(tail++) % 4096u] = pos;
        }
        s = *lane_at(x, pos);
        if (s == 0)
            continue;
        placed_n = replace(x, y, fifo[head % 4096u], s, run + nr, RUN_MAX - nr);
        if (placed_n == UINT32_MAX) {
            ap.bad = 1;
            break;
        }
        nr += placed_n;
        if ((w >> (36u + pos % S)) & 1u) { /* the run ends: its entries in slot order */
            for (i = 1; i < nr; i++)
                for (j = i; j > 0 && run[j - 1].a > run[j].a; j--) {
                    const placed t = run[j];
                    run[j] = run[j - 1];
                    run[j - 1] = t;
                }
            for (i = 0; i < nr; i++)
                if (!(run[i].copy && copy_seen(&ap, run[i].a, run[i].s)))
                    append(&ap, run[i].a, run[i].s);
            nr = 0;
            head++;
        }
    }
    if (ap.bad) {
        free(y->t);
        free(y);
        return AMQ_EFULL;
    }
    y->items = x->items;
    y->k0 = x->k0;
    y->grows = x->grows + 1;
    free(x->t);
    x->t = y->t;
    x->m = y->m;
    x->blocks = y->blocks;
    x->k = y->k;
    x->entries = y->entries;
    x->grows = y->grows;
    free(y);
    return AMQ_OK;
}

xq_filter *xq_new(uint64_t capacity, double max_load, double growth)
{
    uint64_t m = (uint64_t)ceil((double)capacity / max_load);
    xq_filter *x = shell(m < 64 ? 64 : m, max_load, growth);
    if (x != NULL)
        x->k0 = x->k;
    return x;
}

void xq_free(xq_filter *x)
{
    if (x == NULL)
        return;
    free(x->t);
    free(x);
}

/* The table at m * growth (or larger, while a rebuild meets a run pushed
 * more than 255 slots into a line: the 8-bit offset). */
static int grow(xq_filter *x)
{
    double g = x->growth;
    int rc, tries;
    for (tries = 0; tries < 8; tries++, g *= x->growth)
        if ((rc = rebuild(x, (uint64_t)ceil((double)x->m * g))) != AMQ_EFULL)
            return rc;
    return AMQ_EFULL;
}

int xq_add(xq_filter *x, uint64_t h)
{
    int rc;
    if ((double)(x->entries + 1) > x->max_load * (double)x->m && (rc = grow(x)) != AMQ_OK)
        return rc;
    while ((rc = insert_at(x, mulhi(h, x->m), entry_of(x, h))) == AMQ_EFULL)
        if ((rc = grow(x)) != AMQ_OK)
            return rc;
    if (rc != AMQ_OK)
        return rc;
    x->entries++;
    x->items++;
    return 1;
}

void xq_contains_batch(const xq_filter *x, const uint64_t *h1, size_t n, uint8_t *out)
{
    enum { D = 16 };
    size_t i;
    for (i = 0; i < n; i++) {
        if (i + D < n) {
            const uint64_t a = mulhi(h1[i + D], x->m);
            __builtin_prefetch(x->t + (a / S) * 64u); /* and the next: runs spill into it */
            __builtin_prefetch(x->t + (a / S) * 64u + 64u);
        }
        out[i] = (uint8_t)xq_contains(x, h1[i]);
    }
}

uint64_t xq_bytes(const xq_filter *x)
{
    return sizeof *x + x->blocks * 64u;
}

int xq_check(const xq_filter *x)
{
    static uint64_t fifo[4096];
    uint64_t head = 0, tail = 0, pos, total = x->blocks * S, n = 0, runs = 0, occs = 0, b2, need;
    uint64_t *want = calloc(x->blocks, sizeof *want);
    int rc = 0;
    if (want == NULL)
        return -9;
    for (pos = 0; pos < total; pos++) {
        const uint64_t w = *word_of(x, pos / S);
        if ((w >> (8u + pos % S)) & 1u) {
            if (tail - head == 4096u) {
                rc = -5; /* more pending runs than the checker's ring */
                break;
            }
            fifo[(tail++) % 4096u] = pos;
            occs++;
        }
        if (*lane_at(x, pos) == 0) {
            if ((w >> (36u + pos % S)) & 1u)
                rc = -1; /* a run end on an empty slot */
            continue;
        }
        if (head == tail) {
            rc = -2; /* an entry of no run */
            break;
        }
        n++;
        for (b2 = fifo[head % 4096u] / S + 1; b2 <= pos / S; b2++) {
            need = pos - b2 * S + 1;
            if (need > want[b2])
                want[b2] = need;
        }
        if ((w >> (36u + pos % S)) & 1u) {
            head++;
            runs++;
        }
    }
    for (b2 = 0; b2 < x->blocks && rc == 0; b2++)
        if ((*word_of(x, b2) & 255u) != want[b2])
            rc = -3;
    if (rc == 0 && (runs != occs || n != x->entries || head != tail))
        rc = -4;
    free(want);
    return rc;
}
