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
    if (amq_cpu_has(AMQ_CPU_AVX2 | AMQ_CPU_BMI2))
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

