/*
 * quotient.c - the quotient kind's life and checks, the same on every
 * instruction set: the struct, the table's memory, the expected rate, and
 * the validation of a loaded table (quotient_internal.h).  The query, the
 * add and growth are quotient_impl.h's.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cpu.h"
#include "common/xxh3_8.h"
#include "quotient_internal.h"

#define S QF_SLOTS
#define M28 ((UINT64_C(1) << 28) - 1u)

amq_qf *amq_qf_shell(const amq_allocator *alloc)
{
    amq_allocator a;
    amq_qf *x;
    amq_alloc_init(&a, alloc);
    if ((x = amq_calloc(&a, sizeof *x)) == NULL)
        return NULL;
    x->alloc = a;
    x->isa = &amq_qf_isa_base;
#if defined(__x86_64__)
    if (amq_cpu_has(AMQ_CPU_AVX512_CORE | AMQ_CPU_AVX2 | AMQ_CPU_BMI2))
        x->isa = &amq_qf_isa_avx512;
    else if (amq_cpu_has(AMQ_CPU_AVX2 | AMQ_CPU_BMI2))
        x->isa = &amq_qf_isa_avx2;
#endif
    return x;
}

uint64_t amq_qf_first_key(const amq_qf *x, uint64_t a)
{
    const unsigned __int128 n = ((unsigned __int128)a << 64) + x->m - 1u;
    return a >= x->m ? UINT64_MAX : (uint64_t)(n / x->m);
}

void amq_qf_set_hash(amq_qf *x, uint32_t algo, uint64_t seed)
{
    x->hash_algo = algo;
    x->seed = seed;
    x->x8 = amq_xxh3_8_mask(seed);
}

uint64_t amq_qf_slots_for(uint64_t capacity)
{
    const double m = ceil((double)capacity / QF_MAX_LOAD);
    return m < QF_MIN_SLOTS ? QF_MIN_SLOTS : m >= (double)QF_MAX_SLOTS ? QF_MAX_SLOTS : (uint64_t)m;
}

void amq_qf_count(const amq_qf *x, uint64_t cnt[16])
{
    uint64_t pos;
    memset(cnt, 0, 16 * sizeof *cnt);
    for (pos = 0; pos < x->lines * S; pos++) {
        uint16_t s;
        memcpy(&s, x->t + (pos / S) * 64u + 8u + 2u * (pos % S), 2);
        if (s != 0)
            cnt[15u - (uint32_t)__builtin_ctz(s)]++;
    }
}

/* Runs whose slot is reached and whose end is not: in a valid table, at
 * most the slots of the 255 + 28 before a position. */
#define OPEN_RUNS 4096u

int amq_qf_validate(const amq_qf *x, char *msg, size_t cap)
{
    static const char *const why[] = {
        "",
        "a run end on an empty slot",
        "an entry of no run",
        "a line's offset is not where the runs of earlier slots end",
        "a run with no end",
        "more runs pushed past a position than offsets allow",
        "an occupied slot past the last",
        "the deep list is not sorted ranges apart",
        "a run with a gap",
    };
    uint64_t *open, *want, head = 0, tail = 0, pos = 0, total = x->lines * S, i, b;
    int bad = 0;
    open = amq_malloc(&x->alloc, OPEN_RUNS * sizeof *open);
    want = amq_calloc(&x->alloc, (size_t)x->lines * sizeof *want);
    if (open == NULL || want == NULL) {
        amq_free(&x->alloc, open, OPEN_RUNS * sizeof *open);
        amq_free(&x->alloc, want, (size_t)x->lines * sizeof *want);
        return AMQ_ENOMEM;
    }
    for (i = 0; i < x->ndeep && !bad; i++)
        if (x->deep[2 * i] > x->deep[2 * i + 1] ||
            (i > 0 && (x->deep[2 * i - 1] == UINT64_MAX || x->deep[2 * i] <= x->deep[2 * i - 1])))
            bad = 7;
    for (pos = 0; pos < total && !bad; pos++) {
        const uint64_t w = *(const uint64_t *)(const void *)(x->t + (pos / S) * 64u);
        const uint32_t j = (uint32_t)(pos % S);
        uint16_t s;
        if ((w >> (8u + j)) & 1u) {
            if (pos >= x->m)
                bad = 6;
            else if (tail - head == OPEN_RUNS)
                bad = 5;
            else
                open[(tail++) % OPEN_RUNS] = pos;
            if (bad)
                break;
        }
        memcpy(&s, x->t + (pos / S) * 64u + 8u + 2u * j, 2);
        if (s == 0) {
            if ((w >> (36u + j)) & 1u)
                bad = 1;
            else if (head != tail) /* a run reached its slot and goes on after an empty one */
                bad = 8;
            continue;
        }
        if (head == tail) {
            bad = 2;
            break;
        }
        if ((w >> (36u + j)) & 1u) { /* run end: the lines it reaches past its slot's */
            for (b = open[head % OPEN_RUNS] / S + 1; b <= pos / S; b++)
                want[b] = pos - b * S + 1;
            head++;
        }
    }
    if (!bad && head != tail)
        bad = 4;
    for (b = 0; b < x->lines && !bad; b++)
        if ((*(const uint64_t *)(const void *)(x->t + b * 64u) & 255u) != want[b]) {
            pos = b * S;
            bad = 3;
        }
    amq_free(&x->alloc, open, OPEN_RUNS * sizeof *open);
    amq_free(&x->alloc, want, (size_t)x->lines * sizeof *want);
    if (bad) {
        snprintf(msg, cap, "quotient table: %s (slot %llu)", why[bad], (unsigned long long)pos);
        return AMQ_ECORRUPT;
    }
    return AMQ_OK;
}


/* The slot of each run's entries, in one pass: calls visit(ctx, pos, slot) for
 * every entry of a valid table (amq_qf_validate first). */
static void each_entry(const amq_qf *x, void (*visit)(void *ctx, uint64_t pos, uint64_t slot),
                       void *ctx, uint64_t *open)
{
    uint64_t head = 0, tail = 0, pos, total = x->lines * S;
    for (pos = 0; pos < total; pos++) {
        const uint64_t w = *(const uint64_t *)(const void *)(x->t + (pos / S) * 64u);
        uint16_t s;
        if ((w >> (8u + pos % S)) & 1u)
            open[(tail++) % OPEN_RUNS] = pos;
        memcpy(&s, x->t + (pos / S) * 64u + 8u + 2u * (pos % S), 2);
        if (s == 0 || head == tail)
            continue;
        visit(ctx, pos, open[head % OPEN_RUNS]);
        if ((w >> (36u + pos % S)) & 1u)
            head++;
    }
}

typedef struct {
    uint64_t slot;      /* runs of slots below it */
    uint64_t end;       /* one past their last entry (0: none) */
    uint64_t last;      /* one past the last entry of all */
    uint64_t top;       /* one past the highest slot with an entry */
    const uint16_t *copies;
    uint32_t ncopies;
    uint64_t found;     /* a bit per copy met in the run of slot */
    const uint8_t *t;
} growth_scan;

static void scan_x(void *ctx, uint64_t pos, uint64_t slot)
{
    growth_scan *c = ctx;
    if (slot < c->slot)
        c->end = pos + 1u;
}

static void scan_y(void *ctx, uint64_t pos, uint64_t slot)
{
    growth_scan *c = ctx;
    uint16_t s;
    uint32_t i;
    c->last = pos + 1u;
    if (slot + 1u > c->top)
        c->top = slot + 1u;
    if (slot != c->slot)
        return;
    memcpy(&s, c->t + (pos / S) * 64u + 8u + 2u * (pos % S), 2);
    for (i = 0; i < c->ncopies; i++)
        if (c->copies[i] == s)
            c->found |= UINT64_C(1) << i; /* ncopies <= 64: take_growth */
}

/* A loaded growth's place is where a growth would have left it: the reader
 * just past the runs of the slots read, the writer just past the new
 * table's last entry, the lines set up to the last slot written and the
 * split's, no entry of the new table (and no last place) in a slot past
 * the split's, the copies in the run of their slot, the deep cursor behind
 * the reader.  (Else later steps would lose keys or break the new table.) */
int amq_qf_check_growth(const amq_qf *x, char *msg, size_t cap)
{
    const amq_qf_growth *g = x->growth;
    const amq_qf *y = g->y;
    growth_scan c;
    uint64_t *open, want_line, upto, last;
    uint32_t i;
    const char *why = NULL;
    if ((open = amq_malloc(&x->alloc, OPEN_RUNS * sizeof *open)) == NULL)
        return AMQ_ENOMEM;
    memset(&c, 0, sizeof c);
    c.slot = g->rslot;
    each_entry(x, scan_x, &c, open);
    if (g->rpos != c.end)
        why = "the read position is not just past the runs of the slots read";
    memset(&c, 0, sizeof c);
    c.slot = g->copies_of;
    c.copies = g->copies;
    c.ncopies = g->ncopies;
    c.t = y->t;
    each_entry(y, scan_y, &c, open);
    amq_free(&x->alloc, open, OPEN_RUNS * sizeof *open);
    upto = g->rslot >= x->m ? UINT64_MAX : (uint64_t)(((unsigned __int128)g->split * y->m) >> 64);
    last = g->prev > upto ? g->prev : upto;
    want_line = last / S + 1u < y->lines ? last / S + 1u : y->lines;
    if (g->rslot == 0 && g->rpos == 0 && g->pos == 0)
        want_line = 0; /* no step yet */
    for (i = 0; i < g->ncopies; i++)
        if (!((c.found >> i) & 1u))
            why = "a copy is not in the run of its slot";
    if (why == NULL && g->pos != c.last)
        why = "the write position is not just past the last entry of the table grown into";
    else if (why == NULL && upto != UINT64_MAX && (c.top > upto + 1u || g->prev > upto))
        why = "the table grown into holds entries of slots not read yet";
    else if (why == NULL && g->next_line != want_line)
        why = "the lines set are not those up to the last slot written";
    else if (why == NULL && g->di > 0 && x->deep[2 * g->di - 1] >= g->split)
        why = "the deep cursor is past the ranges of the slots read";
    if (why != NULL) {
        snprintf(msg, cap, "quotient growth: %s", why);
        return AMQ_ECORRUPT;
    }
    return AMQ_OK;
}
