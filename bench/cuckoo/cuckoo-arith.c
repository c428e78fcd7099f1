/*
 * cuckoo-arith.c - what a one-key cuckoo query's arithmetic costs, layout by
 * layout: the step from a key's hash to its two bucket words is the part of
 * amq's one-key query that the reference cuckoo filter (efficient/
 * cuckoofilter) runs shorter (issue 20), and the part a file format fixes.
 *
 * Every variant answers the same keys from the same table: 12-bit
 * fingerprints in 4-slot buckets (6 bytes a bucket), 2^k buckets for n keys
 * at the reference's sizing (each variant's formulas work for that count;
 * only "reference" needs a power of two), random table bytes, the keys'
 * 64-bit hash by the same multiply-shift (a 128-bit multiply-add, amq's
 * mulshift and the reference's hash family alike), both bucket words loaded
 * before the fingerprint is compared with each (SWAR).  Each variant is
 * one loop over the keys with its constants in registers (a caller's loop
 * with the query inlined), so the figures are the arithmetic's, not a
 * call's.  Variants:
 *
 *   amq (Kind 4)   fp = 1 + floor(t * (2^f - 1) / 2^32), i1 = floor(h * nb / 2^64),
 *                  i2 = (H - i1) mod nb, H = floor((fp * PHI mod 2^64) * nb / 2^64);
 *                  docs/file-format.md, as the library computes it
 *   + fp by mask   fp = t mod 2^f, 0 made 1 (the reference's rule)
 *   + fp * s       and i2 = (fp * s - i1) mod nb, s = floor(nb / 2^f): one multiply
 *                  where Kind 4 has two, any nb >= 2^f
 *   + stride 6     and a constant bucket stride (6 bytes for 12 x 4)
 *   amq, position table  Kind 4 with H * stride read from a table of 2^12
 *                  entries: i1's position by one multiply, i2's as (table[fp] - i1 *
 *                  stride) mod (nb * stride) (the library's one-key query on tables
 *                  of 1 MiB and up)
 *   amq, 2^k       Kind 4's formulas on a power-of-two table, where they reduce to
 *                  i1 = h >> (64 - k), i2 = ((fp * PHI >> (64 - k)) - i1) mod 2^k (a mask),
 *                  stride 6: what a sizing that picked powers of two would run
 *   reference      nb = 2^k: i1 = (h >> 32) mod nb, fp by mask,
 *                  i2 = (i1 xor fp * 0x5bd1e995) mod nb, stride 6 (Fan et al.'s
 *                  published formulas, written here from their description)
 *
 * Then the load at which the first insert fails (random walk, 500 kicks,
 * 12 x 4) for the three alternate-bucket rules, on a power-of-two and on an
 * odd bucket count: a cheaper rule is worth having only if it fills as well.
 * Writes a markdown report to stdout (make bench-cuckoo-arith puts it in
 * docs/bench-cuckoo-arith.md); --smoke runs small sizes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef unsigned __int128 u128;

#define PHI UINT64_C(0x9e3779b97f4a7c15)
#define REF_ALT UINT32_C(0x5bd1e995)
#define ONES UINT64_C(0x001001001001) /* bit 0 of each 12-bit field of a bucket */
#define HIGHS (ONES << 11)
#define FMASK 4095u

typedef struct table {
    const uint8_t *d;
    uint64_t nb, mask, s;
    u128 a, b; /* the multiply-shift hash's constants */
    uint32_t stride;
    int shift;          /* 64 - log2(nb) */
    const uint32_t *ht; /* H(fp) * stride for every 12-bit fp */
    uint64_t span;      /* nb * stride */
} table;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += PHI);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline uint64_t mulhi(uint64_t x, uint64_t y)
{
    return (uint64_t)(((u128)x * y) >> 64);
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* Whether fp is in either bucket word (fields above a bucket are ignored:
 * only its four fields' high bits are looked at). */
static inline int has(uint64_t w1, uint64_t w2, uint32_t fp)
{
    uint64_t x = (uint64_t)fp * ONES, y1 = w1 ^ x, y2 = w2 ^ x;
    return ((((y1 - ONES) & ~y1) | ((y2 - ONES) & ~y2)) & HIGHS) != 0;
}

enum { V_AMQ, V_FPMASK, V_FPS, V_STRIDE6, V_HTAB, V_POW2, V_REF, NV };

static const char *const vname[NV] = {"amq (Kind 4)",  "+ fp by mask",
                                      "+ fp * s alternate", "+ stride 6",
                                      "amq, position table", "amq, 2^k buckets (Kind 4 formulas)",
                                      "reference"};

/* One variant's query; V is a constant in each loop below, so each loop
 * holds only its own arithmetic. */
static inline __attribute__((always_inline)) int query(const table *t, uint64_t key, int v)
{
    uint64_t h = (uint64_t)((t->a * key + t->b) >> 64), i1, i2;
    uint32_t lo = (uint32_t)h, fp;
    if (v == V_AMQ || v == V_HTAB || v == V_POW2) {
        fp = (uint32_t)(((uint64_t)lo * FMASK) >> 32) + 1;
    } else {
        fp = lo & FMASK;
        fp += fp == 0;
    }
    if (v == V_REF) {
        i1 = (h >> 32) & t->mask;
        i2 = (i1 ^ (uint32_t)(fp * REF_ALT)) & t->mask;
        return has(load64(t->d + i1 * 6), load64(t->d + i2 * 6), fp);
    }
    if (v == V_POW2) {
        i1 = h >> t->shift;
        i2 = (((uint64_t)fp * PHI >> t->shift) - i1) & t->mask;
        return has(load64(t->d + i1 * 6), load64(t->d + i2 * 6), fp);
    }
    i1 = mulhi(h, t->nb);
    if (v == V_HTAB) {
        uint64_t p1 = i1 * t->stride, p2 = t->ht[fp] - p1;
        p2 += t->span & (0 - (uint64_t)(t->ht[fp] < p1));
        return has(load64(t->d + p1), load64(t->d + p2), fp);
    } else if (v == V_AMQ || v == V_FPMASK) {
        uint64_t base = mulhi((uint64_t)fp * PHI, t->nb);
        i2 = base - i1 + (base < i1 ? t->nb : 0);
    } else {
        uint64_t base = fp * t->s;
        i2 = base - i1 + (base < i1 ? t->nb : 0);
    }
    if (v == V_STRIDE6)
        return has(load64(t->d + i1 * 6), load64(t->d + i2 * 6), fp);
    return has(load64(t->d + i1 * t->stride), load64(t->d + i2 * t->stride), fp);
}

#define LOOP(V)                                                                                    \
    static __attribute__((noinline)) uint64_t loop_##V(const table *t, const uint64_t *k,          \
                                                       size_t n)                                   \
    {                                                                                              \
        uint64_t found = 0;                                                                        \
        for (size_t i = 0; i < n; i++)                                                             \
            found += (uint64_t)query(t, k[i], V);                                                  \
        return found;                                                                              \
    }
LOOP(V_AMQ)
LOOP(V_FPMASK)
LOOP(V_FPS)
LOOP(V_STRIDE6)
LOOP(V_HTAB)
LOOP(V_POW2)
LOOP(V_REF)

static uint64_t (*const loops[NV])(const table *, const uint64_t *, size_t) = {
    loop_V_AMQ, loop_V_FPMASK, loop_V_FPS, loop_V_STRIDE6, loop_V_HTAB, loop_V_POW2, loop_V_REF};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A table in huge pages where the system gives them, aligned to them, as
 * amq's large regions. */
static uint8_t *table_alloc(size_t bytes)
{
    size_t huge = (size_t)2 << 20, len = (bytes + huge - 1) & ~(huge - 1);
    uint8_t *p = aligned_alloc(huge, len);
#ifdef MADV_HUGEPAGE
    if (p != NULL)
        (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

/* ns per query of each variant at n keys: reps rounds, the variants in turn
 * in each, medians. */
static int time_variants(uint64_t n, int reps, double med[NV], uint64_t *nb_out)
{
    uint64_t seed = 20, nb = 1, q = n < 10000000 ? n : 10000000, *keys, i;
    size_t bytes;
    double *t[NV];
    uint8_t *d;
    uint32_t *ht;
    table tb;
    int v, r;

    /* The reference's sizing: a power of two of buckets, doubled above 96 % load. */
    while (nb * 4 < n)
        nb <<= 1;
    if ((double)n / (double)(nb * 4) > 0.96)
        nb <<= 1;
    bytes = (size_t)nb * 6 + 8;
    d = table_alloc(bytes);
    keys = malloc(q * sizeof *keys);
    ht = malloc((FMASK + 1) * sizeof *ht);
    if (d == NULL || keys == NULL || ht == NULL) {
        fprintf(stderr, "cuckoo-arith: out of memory for %" PRIu64 " keys\n", n);
        return -1;
    }
    for (i = 0; i + 8 <= bytes; i += 8) {
        uint64_t w = splitmix(&seed);
        memcpy(d + i, &w, 8);
    }
    for (i = 0; i < q; i++)
        keys[i] = splitmix(&seed);
    tb.d = d;
    tb.nb = nb;
    tb.mask = nb - 1;
    tb.s = nb >> 12;
    tb.stride = 6;
    tb.shift = 64 - __builtin_ctzll(nb);
    tb.ht = ht;
    tb.span = nb * 6;
    for (i = 0; i <= FMASK; i++)
        ht[i] = (uint32_t)(mulhi(i * PHI, nb) * 6);
    tb.a = ((u128)splitmix(&seed) << 64) | splitmix(&seed) | 1;
    tb.b = ((u128)splitmix(&seed) << 64) | splitmix(&seed);
    for (v = 0; v < NV; v++) {
        t[v] = malloc((size_t)reps * sizeof(double));
        if (t[v] == NULL)
            return -1;
    }
    for (r = 0; r < reps; r++)
        for (v = 0; v < NV; v++) {
            double t0 = now_ns();
            volatile uint64_t found = loops[v](&tb, keys, q);
            (void)found;
            t[v][r] = (now_ns() - t0) / (double)q;
        }
    for (v = 0; v < NV; v++) {
        qsort(t[v], (size_t)reps, sizeof(double), cmp_double);
        med[v] = t[v][reps / 2];
        free(t[v]);
    }
    free(d);
    free(keys);
    free(ht);
    *nb_out = nb;
    return 0;
}

/* ---- load at the first failed insert ----------------------------------------------------- */

enum { A_AMQ, A_FPS, A_XOR, NA };
static const char *const aname[NA] = {"amq (Kind 4)", "fp * s", "reference (xor)"};

typedef struct walk {
    uint16_t *slot; /* nb * 4 fingerprints, 0 empty */
    uint64_t nb, s, rng;
    int rule;
} walk;

static uint64_t alt_of(const walk *w, uint64_t i, uint32_t fp)
{
    uint64_t base;
    if (w->rule == A_XOR)
        return (i ^ (uint32_t)(fp * REF_ALT)) & (w->nb - 1);
    base = w->rule == A_AMQ ? mulhi((uint64_t)fp * PHI, w->nb) : fp * w->s;
    return base >= i ? base - i : base + w->nb - i;
}

static int put(walk *w, uint64_t i, uint32_t fp)
{
    for (int j = 0; j < 4; j++)
        if (w->slot[i * 4 + (uint64_t)j] == 0) {
            w->slot[i * 4 + (uint64_t)j] = (uint16_t)fp;
            return 1;
        }
    return 0;
}

static int insert(walk *w, uint64_t h)
{
    uint32_t fp = (uint32_t)h & FMASK, old;
    uint64_t i1, i2, i;
    fp += fp == 0;
    i1 = w->rule == A_XOR ? (h >> 32) & (w->nb - 1) : mulhi(h, w->nb);
    i2 = alt_of(w, i1, fp);
    if (put(w, i1, fp) || put(w, i2, fp))
        return 1;
    i = (splitmix(&w->rng) & 1) ? i1 : i2;
    for (int k = 0; k < 500; k++) {
        uint64_t j = splitmix(&w->rng) & 3;
        old = w->slot[i * 4 + j];
        w->slot[i * 4 + j] = (uint16_t)fp;
        fp = old;
        i = alt_of(w, i, fp);
        if (put(w, i, fp))
            return 1;
    }
    return 0;
}

/* Mean load at the first failure over trials tables; -1 if out of memory. */
static double first_failure(int rule, uint64_t nb, int trials)
{
    double sum = 0;
    for (int t = 0; t < trials; t++) {
        walk w;
        uint64_t seed = 1000 + (uint64_t)t, n = 0;
        w.slot = calloc(nb * 4, sizeof *w.slot);
        if (w.slot == NULL)
            return -1;
        w.nb = nb;
        w.s = nb >> 12;
        w.rng = 77 + (uint64_t)t;
        w.rule = rule;
        while (insert(&w, splitmix(&seed)))
            n++;
        sum += (double)n / (double)(nb * 4);
        free(w.slot);
    }
    return sum / trials;
}

int main(int argc, char **argv)
{
    int smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    uint64_t sizes[2] = {1000000, 100000000}, nbs[2] = {262144, 263168};
    uint64_t nb[2];
    double med[2][NV];
    int nsizes = 2, reps = 9, trials = 3, v, a, z;

    if (argc > 1 && !smoke) {
        fprintf(stderr, "usage: cuckoo-arith [--smoke]\n");
        return 2;
    }
    if (smoke) {
        sizes[0] = 100000;
        nsizes = 1;
        reps = 3;
        trials = 1;
        nbs[0] = 16384;
        nbs[1] = 16448;
    }
    printf("# Cuckoo query arithmetic (issue 20)\n\n"
           "Generated by `make bench-cuckoo-arith` (`bench/cuckoo/cuckoo-arith.c`; its comment "
           "says what each variant computes). One-key queries of 8-byte keys on one table of "
           "12-bit x 4 buckets at the reference's size, the variants alternating, median of %d "
           "rounds, each query inlined into its loop: the cost of each layout's arithmetic from "
           "a key's hash to its two bucket words, not of a call. *vs reference* is the "
           "reference arithmetic's time over the variant's (below 1: slower than the "
           "reference).\n\n",
           reps);
    for (z = 0; z < nsizes; z++)
        if (time_variants(sizes[z], reps, med[z], &nb[z]) != 0)
            return 1;
    printf("| variant |");
    for (z = 0; z < nsizes; z++)
        printf(" %" PRIu64 " keys (%" PRIu64 " buckets) ns | vs reference |", sizes[z], nb[z]);
    printf("\n|---|");
    for (z = 0; z < nsizes; z++)
        printf("---:|---:|");
    printf("\n");
    for (v = 0; v < NV; v++) {
        printf("| %s |", vname[v]);
        for (z = 0; z < nsizes; z++)
            printf(" %.2f | %.2fx |", med[z][v], med[z][V_REF] / med[z][v]);
        printf("\n");
    }
    printf("\nLoad at the first failed insert (12-bit x 4, random walk of at most 500 kicks, "
           "mean of %d tables): each alternate-bucket rule on a power-of-two bucket count and, "
           "where it applies, on an odd one (the reference's rule needs a power of two).\n\n"
           "| buckets |",
           trials);
    for (a = 0; a < NA; a++)
        printf(" %s |", aname[a]);
    printf("\n|---:|");
    for (a = 0; a < NA; a++)
        printf("---:|");
    printf("\n");
    for (z = 0; z < 2; z++) {
        printf("| %" PRIu64 " |", nbs[z]);
        for (a = 0; a < NA; a++) {
            double load;
            if (a == A_XOR && (nbs[z] & (nbs[z] - 1)) != 0) {
                printf(" - |");
                continue;
            }
            load = first_failure(a, nbs[z], trials);
            if (load < 0)
                return 1;
            printf(" %.2f %% |", 100 * load);
        }
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
