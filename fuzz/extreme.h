/*
 * extreme.h - a mutator that writes extreme integers into the fields a
 * decoder computes sizes from, then signs the input again, so that the value
 * reaches the parser instead of a checksum.
 *
 * Random byte flips almost never make a field 2^32 - 1, or make two u32
 * fields sum to exactly 2^32 (the aging kind's k + l wrapped to 0 slices and
 * the server died dividing by it).  Here one to three writes each put one of
 *   - a value of fz_extremes[] (0, 1, 2^31 - 1, 2^32 - 55, 2^63, 2^64 - 1...),
 *     or one of them plus or minus a small step;
 *   - the complement of the field just before it, plus 0, 1, 8 or 64, so
 *     that the two sum to a wrapped small number (k = 63, l = 2^32 - 55);
 * as a 1-, 2-, 4- or 8-byte integer, little- or big-endian as the span
 * says, into one of the spans the target names (parameter blocks, headers,
 * the integers of an RDB stream).
 *
 * A target includes this file and defines
 *
 *     static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans,
 *                             size_t max);   the spans of data to write into
 *     static void fz_resign(uint8_t *data, size_t size);
 *                                            checksums made to hold again
 *
 * or, when its input carries no checksum, defines FZ_NO_CHECKSUM before
 * including this file instead of fz_resign (there is nothing to sign again).
 *
 * It then has LLVMFuzzerCustomMutator (libFuzzer: half of the mutations are
 * libFuzzer's own, half of those signed again; the other half extreme
 * writes) and fz_replay_mutant, with which fuzz/replay.c replays fixed
 * extreme mutants of every input in `make test`.
 */
#ifndef AMQ_FUZZ_EXTREME_H
#define AMQ_FUZZ_EXTREME_H

#include "fuzz.h"

typedef struct fz_span {
    size_t off, len;
    unsigned align;  /* offsets within the span are multiples of min(width, align) */
    int big_endian;  /* 0: little-endian, 1: big-endian, -1: either */
} fz_span;

#define FZ_MAX_SPANS 16

static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max);
static void fz_resign(uint8_t *data, size_t size);

#ifdef FZ_NO_CHECKSUM
static void fz_resign(uint8_t *data, size_t size)
{
    (void)data;
    (void)size;
}
#endif

/* The integers size arithmetic goes wrong on: zero and one, powers of two
 * and their neighbours at each width's edge, 2^32 - 55 (with 63, a u32 sum of
 * 8), the largest double-exact integer. */
static const uint64_t fz_extremes[] = {
    0,
    1,
    2,
    3,
    7,
    8,
    63,
    64,
    127,
    128,
    255,
    256,
    0x7fff,
    0x8000,
    0xffff,
    0x10000,
    0xffffff,
    0x7fffffff,
    0x80000000,
    0xffffffc9, /* 2^32 - 55 */
    0xfffffffe,
    0xffffffff,
    UINT64_C(0x100000000),
    UINT64_C(0x100000001),
    UINT64_C(0x20000000),   /* 2^29 */
    UINT64_C(0x400000000),  /* 2^34 */
    UINT64_C(0x10000000000), /* 2^40 */
    UINT64_C(0x1000000000000), /* 2^48 */
    UINT64_C(0x20000000000000), /* 2^53 */
    UINT64_C(0x1fffffffffffffff), /* 2^61 - 1: times 8 is 2^64 - 8 */
    UINT64_C(0x2000000000000000), /* 2^61: times 8 wraps to 0 */
    UINT64_C(0x4000000000000000),
    UINT64_C(0x7fffffffffffffff),
    UINT64_C(0x8000000000000000),
    UINT64_C(0xffffffffffffffc9), /* 2^64 - 55 */
    UINT64_C(0xfffffffffffffffe),
    UINT64_C(0xffffffffffffffff),
};

static uint64_t fz_mix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t fz_get_int(const uint8_t *p, unsigned w, int be)
{
    uint64_t v = 0;
    unsigned i;
    for (i = 0; i < w; i++)
        v |= (uint64_t)p[be ? w - 1 - i : i] << (8 * i);
    return v;
}

static void fz_put_int(uint8_t *p, unsigned w, int be, uint64_t v)
{
    unsigned i;
    for (i = 0; i < w; i++)
        p[be ? w - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

/* One extreme write into one of the spans; 0 when there is no room. */
static int fz_extreme_write(uint8_t *data, const fz_span *spans, size_t n, uint64_t *rng)
{
    static const unsigned widths[] = {4, 8, 4, 8, 2, 1};
    static const uint64_t steps[] = {0, 1, 8, 64};
    const fz_span *s = &spans[fz_mix(rng) % n];
    unsigned w = widths[fz_mix(rng) % 6], align;
    uint64_t r = fz_mix(rng), v, mask, slots;
    size_t at;
    int be;

    while (w > 1 && w > s->len)
        w /= 2;
    if (s->len < w)
        return 0;
    align = s->align < w ? s->align : w;
    if (align == 0)
        align = 1;
    slots = (s->len - w) / align + 1;
    at = s->off + (size_t)(fz_mix(rng) % slots) * align;
    be = s->big_endian < 0 ? (int)(r & 1) : s->big_endian;
    mask = w == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * w)) - 1;
    v = fz_extremes[(r >> 3) % (sizeof fz_extremes / sizeof fz_extremes[0])];
    if ((r >> 1) % 4 == 0 && at >= s->off + w) /* the field before and this sum to a step */
        v = 0 - fz_get_int(data + at - w, w, be) + steps[(r >> 10) % 4];
    else if ((r >> 1) % 4 == 3) /* an extreme plus or minus a step */
        v = (r >> 20) & 1 ? v + steps[(r >> 21) % 4] : v - steps[(r >> 21) % 4];
    fz_put_int(data + at, w, be, v & mask);
    return 1;
}

/* One to three extreme writes chosen by seed, then the input signed again. */
static FZ_UNUSED void fz_extreme_mutate(uint8_t *data, size_t size, uint64_t seed)
{
    fz_span spans[FZ_MAX_SPANS];
    uint64_t rng = seed;
    size_t n = fz_fields(data, size, spans, FZ_MAX_SPANS), i, writes;

    if (n == 0)
        return;
    writes = 1 + fz_mix(&rng) % 3;
    for (i = 0; i < writes; i++)
        (void)fz_extreme_write(data, spans, n, &rng);
    fz_resign(data, size);
}

/* libFuzzer's own mutation (defined by libFuzzer; absent in replay builds). */
__attribute__((weak)) size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t fz_replay_mutant(uint8_t *data, size_t size, uint64_t n);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint64_t rng = seed, r = fz_mix(&rng);

    if (r % 4 < 2 && LLVMFuzzerMutate != NULL) {
        size = LLVMFuzzerMutate(data, size, max_size);
        if (r % 4 == 1)
            fz_resign(data, size);
        return size;
    }
    fz_extreme_mutate(data, size, fz_mix(&rng));
    return size;
}

/* The n-th fixed extreme mutant of data, in place (replay.c). */
size_t fz_replay_mutant(uint8_t *data, size_t size, uint64_t n)
{
    fz_extreme_mutate(data, size, n);
    return size;
}

#endif /* AMQ_FUZZ_EXTREME_H */
