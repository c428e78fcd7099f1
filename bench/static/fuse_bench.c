/*
 * fuse_bench.c - amq's binary fuse filters beside the reference code itself
 * (FastFilter/xor_singleheader binary_fuse8/16_populate and _contain, built
 * from AMQ_PEERS by bench/peers/xorfuse.c), same keys, same process, the
 * rows alternating within each repetition; prints ns per key and the ratio
 * amq / reference (the median of the per-repetition ratios: below 1, amq is
 * faster).  amq-bench-fuse (fuse_main.c; make bench-fuse:
 * docs/benchmarks-fuse.md) and amq-bench (make bench: docs/benchmarks.md)
 * both run it (fuse_bench.h).
 *
 * 8-byte keys are random 64-bit integers (the reference takes them as they
 * lie in memory, amq hashes their bytes); 16-byte keys are {k, k * 0x9e37..}
 * and the reference is given XXH3-64 of the key computed in the timed loop.
 * "Build" includes hashing the keys: amq's build is amq_builder_new,
 * amq_builder_add_batch_fixed of the packed keys (hashed in its loop) and
 * amq_builder_finish, the reference's a copy of the keys (populate may
 * rewrite them) and populate.  amq's one-key query is its inline
 * one (amq/fuse_view.h, amq_fuse_view_contains_as compiled into this file
 * at -O3 as the reference's header into bench/peers/xorfuse.c), the
 * "handle" columns amq_filter_contains (a library call per key); its
 * batched query is amq_static_contains_batch_fixed over the packed keys
 * (hashed in its loop).  The reference has no batched query: its one-key
 * loop is the comparison.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AMQ_ADVANCED_API 1 /* amq_static_contains_batch_fixed, amq_builder_add_batch_fixed */
#include "amq.h"
#include "../peers/peers.h"
#include "fuse_bench.h"

#define MAX_REPS AMQB_FUSE_MAX_REPS
#define CHUNK 256

enum { T_BUILD, T_ONE_P, T_ONE_A, T_BAT_P, T_BAT_A, T_HND_P, T_HND_A, NT };
static const char *const tnames[NT] = {"build", "one-key present", "one-key absent",
                                       "batched present", "batched absent",
                                       "handle present", "handle absent"};

/* CPU time of this thread: time spent waiting for a core belongs to no row. */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double t[MAX_REPS];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* ---- amq ----------------------------------------------------------------------------- */

static amq_filter *amq_build(unsigned bits, const uint64_t *keys, size_t kb, size_t n)
{
    amq_config cfg;
    amq_builder *b;
    amq_filter *f = NULL;

    amq_config_init(&cfg, AMQ_KIND_FUSE);
    cfg.fingerprint_bits = bits;
    cfg.arity = 3;
    cfg.fpp = bits == 8 ? 1.0 / 256 : 1.0 / 65536;
    if (amq_builder_new(&cfg, NULL, SIZE_MAX, &b, NULL) != AMQ_OK)
        return NULL;
    /* the packed keys in one call, hashed in its loop (as the reference's
     * key array goes to populate in one call) */
    if (amq_builder_add_batch_fixed(b, keys, kb, n) != AMQ_OK ||
        amq_builder_finish(b, &f, NULL) != AMQ_OK)
        f = NULL;
    amq_builder_free(b);
    return f;
}

static uint64_t amq_one(const amq_filter *f, const uint64_t *keys, size_t kb, size_t n)
{
    const uint8_t *k = (const uint8_t *)keys;
    uint64_t c = 0;
    size_t i;
    for (i = 0; i < n; i++)
        c += (uint64_t)amq_filter_contains(f, k + i * kb, kb);
    return c;
}

/* amq's inline one-key query (amq/fuse_view.h): the variant's own code as
 * the reference's loop calls binary_fuse8/16_contain, chosen outside the
 * loop; the view copied into a local that never escapes, so its fields
 * stay in registers. */
#define VIEW_LOOP(KB, B, A, PLAIN)                                                                \
    do {                                                                                          \
        for (i = 0; i < n; i++)                                                                   \
            c += (uint64_t)amq_fuse_view_contains_as(&v, k + i * (KB), KB, B, A, PLAIN);          \
    } while (0)
#define VIEW_SHAPES(KB, B, A)                                                                     \
    do {                                                                                          \
        switch (amq_fuse_view_shape(&v)) {                                                        \
        case AMQ_FUSE_VIEW_PLAIN | AMQ_FUSE_VIEW_MS:                                              \
            VIEW_LOOP(KB, B, A, AMQ_FUSE_VIEW_PLAIN | AMQ_FUSE_VIEW_MS);                          \
            break;                                                                                \
        case AMQ_FUSE_VIEW_STRIDED | AMQ_FUSE_VIEW_MS:                                            \
            VIEW_LOOP(KB, B, A, AMQ_FUSE_VIEW_STRIDED | AMQ_FUSE_VIEW_MS);                        \
            break;                                                                                \
        case AMQ_FUSE_VIEW_PLAIN:                                                                 \
            VIEW_LOOP(KB, B, A, AMQ_FUSE_VIEW_PLAIN);                                             \
            break;                                                                                \
        case AMQ_FUSE_VIEW_STRIDED:                                                               \
            VIEW_LOOP(KB, B, A, AMQ_FUSE_VIEW_STRIDED);                                           \
            break;                                                                                \
        default:                                                                                  \
            VIEW_LOOP(KB, B, A, AMQ_FUSE_VIEW_TABLE);                                             \
        }                                                                                         \
    } while (0)

static uint64_t amq_view(const amq_filter *f, const uint64_t *keys, size_t kb, size_t n)
{
    const uint8_t *k = (const uint8_t *)keys;
    amq_fuse_view got, v;
    uint64_t c = 0;
    size_t i;
    if (amq_fuse_view_get(f, &got) != AMQ_OK || got.arity != 3)
        return 0;
    v = got;
    if (v.bits == 8 && kb == 8)
        VIEW_SHAPES(8, 8, 3);
    else if (v.bits == 8)
        VIEW_SHAPES(16, 8, 3);
    else if (kb == 8)
        VIEW_SHAPES(8, 16, 3);
    else
        VIEW_SHAPES(16, 16, 3);
    return c;
}

static uint64_t amq_batched(const amq_filter *f, const uint64_t *keys, size_t kb, size_t n)
{
    uint64_t c = 0;
    return amq_static_contains_batch_fixed(f, keys, kb, n, NULL, &c) == AMQ_OK ? c : 0;
}

/* ---- one size --------------------------------------------------------------------------- */

enum { R_AMQ8, R_REF8, R_AMQ16, R_REF16, NR };
static const char *const rnames[NR] = {
    "amq fuse8 3-wise", "xor_singleheader binary_fuse8 (reference)", "amq fuse16 3-wise",
    "xor_singleheader binary_fuse16 (reference)"};

typedef struct cell {
    double t[NT][MAX_REPS];
    double fpp, bpk;
    int ok;
} cell;

typedef struct result {
    uint64_t n, nq;
    size_t kb;
    cell c[NR];
} result;

/* qreps: the one-key loops again on the same build (their median); *fneg
 * counts the false negatives of every query path. */
static void time_row(int r, const uint64_t *keys, size_t kb, size_t n, const uint64_t *present,
                     const uint64_t *absent, size_t nq, int qreps, cell *c, int rep,
                     uint64_t *fneg)
{
    unsigned bits = r < R_AMQ16 ? 8 : 16;
    int ref = r == R_REF8 || r == R_REF16;
    amq_filter *f = NULL;
    amqb_xfuse *x = NULL;
    uint64_t got;
    double t = now(), tq[2][MAX_REPS];
    amq_stats st;
    int q;

    if (ref)
        x = amqb_xfuse_build(bits, keys, kb, n);
    else
        f = amq_build(bits, keys, kb, n);
    c->t[T_BUILD][rep] = (now() - t) * 1e9 / (double)n;
    if (f == NULL && x == NULL) {
        fprintf(stderr, "%s: build failed at n = %zu\n", rnames[r], n);
        c->ok = -1;
        return;
    }
    c->ok = 1;
    for (q = 0; q < qreps; q++) {
        t = now();
        got = ref ? amqb_xfuse_query(x, present, kb, nq) : amq_view(f, present, kb, nq);
        tq[0][q] = (now() - t) * 1e9 / (double)nq;
        if (got != nq) {
            fprintf(stderr, "%s: %llu false negatives!\n", rnames[r],
                    (unsigned long long)(nq - got));
            *fneg += nq - got;
        }
        t = now();
        got = ref ? amqb_xfuse_query(x, absent, kb, nq) : amq_view(f, absent, kb, nq);
        tq[1][q] = (now() - t) * 1e9 / (double)nq;
        c->fpp = (double)got / (double)nq;
    }
    c->t[T_ONE_P][rep] = median(tq[0], qreps);
    c->t[T_ONE_A][rep] = median(tq[1], qreps);
    if (!ref) {
        t = now();
        got = amq_one(f, present, kb, nq);
        c->t[T_HND_P][rep] = (now() - t) * 1e9 / (double)nq;
        if (got != nq) {
            fprintf(stderr, "%s: %llu false negatives (handle)!\n", rnames[r],
                    (unsigned long long)(nq - got));
            *fneg += nq - got;
        }
        t = now();
        (void)amq_one(f, absent, kb, nq);
        c->t[T_HND_A][rep] = (now() - t) * 1e9 / (double)nq;
        t = now();
        got = amq_batched(f, present, kb, nq);
        c->t[T_BAT_P][rep] = (now() - t) * 1e9 / (double)nq;
        if (got != nq) {
            fprintf(stderr, "%s: %llu false negatives (batched)!\n", rnames[r],
                    (unsigned long long)(nq - got));
            *fneg += nq - got;
        }
        t = now();
        (void)amq_batched(f, absent, kb, nq);
        c->t[T_BAT_A][rep] = (now() - t) * 1e9 / (double)nq;
        amq_filter_stats(f, &st);
        c->bpk = (double)st.bytes * 8.0 / (double)n;
    } else {
        /* no batched query in the reference: its one-key loop stands in */
        c->t[T_BAT_P][rep] = c->t[T_HND_P][rep] = c->t[T_ONE_P][rep];
        c->t[T_BAT_A][rep] = c->t[T_HND_A][rep] = c->t[T_ONE_A][rep];
        c->bpk = (double)amqb_xfuse_bytes(x) * 8.0 / (double)n;
    }
    amq_filter_free(f);
    amqb_xfuse_free(x);
}

static void run(const amqb_fuse_run *o, uint64_t n, size_t kb, result *res, uint64_t *fneg)
{
    uint64_t nq = n < o->qmax ? n : o->qmax;
    int reps = o->reps;
    uint64_t seed = 0xf05e0000 + n + kb, *keys, *present, *absent, j;
    size_t w = kb / 8;
    int rep, i, k;

    memset(res, 0, sizeof *res);
    res->n = n;
    res->nq = nq;
    res->kb = kb;
    keys = malloc(n * kb);
    present = malloc(nq * kb);
    absent = malloc(nq * kb);
    if (keys == NULL || present == NULL || absent == NULL) {
        fprintf(stderr, "out of memory at n = %llu\n", (unsigned long long)n);
        exit(1);
    }
    for (j = 0; j < n; j++) {
        keys[j * w] = splitmix(&seed);
        if (w == 2)
            keys[j * w + 1] = keys[j * w] * UINT64_C(0x9e3779b97f4a7c15);
    }
    for (j = 0; j < nq; j++) {
        uint64_t pick = splitmix(&seed) % n, a = splitmix(&seed) | 1;
        memcpy(&present[j * w], &keys[pick * w], kb);
        absent[j * w] = a;
        if (w == 2)
            absent[j * w + 1] = a * UINT64_C(0x9e3779b97f4a7c15);
    }
    for (rep = 0; rep < reps; rep++) {
        /* alternate which of each pair goes first */
        for (k = 0; k < NR; k++) {
            i = rep % 2 ? (k ^ 1) : k;
            if ((i < R_AMQ16 && !o->bits_on[0]) || (i >= R_AMQ16 && !o->bits_on[1]))
                continue;
            if ((i == R_REF8 || i == R_REF16) && !amqb_xfuse_available())
                continue;
            if (res->c[i].ok < 0)
                continue;
            time_row(i, keys, kb, n, present, absent, nq, o->qreps, &res->c[i], rep, fneg);
        }
        fprintf(stderr, "n = %llu, %zu-byte keys: rep %d of %d done\n", (unsigned long long)n, kb,
                rep + 1, reps);
    }
    free(keys);
    free(present);
    free(absent);
}

static void print_result(FILE *out, const result *res, int reps)
{
    int r, t, amq, rep;
    fprintf(out, "\n### n = %llu, %zu-byte keys (%llu queries each)\n\n",
            (unsigned long long)res->n, res->kb, (unsigned long long)res->nq);
    fprintf(out, "| filter | build ns/key | one-key present | one-key absent | batched present | "
                 "batched absent | handle present | handle absent | fpp | bits/key |\n"
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (r = 0; r < NR; r++) {
        const cell *c = &res->c[r];
        int ref = r == R_REF8 || r == R_REF16;
        if (c->ok <= 0)
            continue;
        fprintf(out, "| %s | %.1f | %.2f | %.2f |", rnames[r], median(c->t[T_BUILD], reps),
                median(c->t[T_ONE_P], reps), median(c->t[T_ONE_A], reps));
        if (ref)
            fprintf(out, " (none) | (none) | (none) | (none) |");
        else
            fprintf(out, " %.2f | %.2f | %.2f | %.2f |", median(c->t[T_BAT_P], reps),
                    median(c->t[T_BAT_A], reps), median(c->t[T_HND_P], reps),
                    median(c->t[T_HND_A], reps));
        fprintf(out, " %.4f %% | %.3f |\n", c->fpp * 100, c->bpk);
    }
    /* no reference rows (skipped, or its builds failed): no ratios */
    if (!(res->c[R_AMQ8].ok > 0 && res->c[R_REF8].ok > 0) &&
        !(res->c[R_AMQ16].ok > 0 && res->c[R_REF16].ok > 0))
        return;
    fprintf(out, "\n| amq / reference (median of per-repetition ratios) |");
    for (t = 0; t < NT; t++)
        fprintf(out, " %s |", tnames[t]);
    fprintf(out, "\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (amq = R_AMQ8; amq < NR; amq += 2) {
        const cell *a = &res->c[amq], *b = &res->c[amq + 1];
        if (a->ok <= 0 || b->ok <= 0)
            continue;
        fprintf(out, "| fuse%d, %zu-byte keys |", amq == R_AMQ8 ? 8 : 16, res->kb);
        for (t = 0; t < NT; t++) {
            double q[MAX_REPS];
            /* batched and handle against the reference's one-key loop */
            int bt = t == T_BAT_P || t == T_HND_P   ? T_ONE_P
                     : t == T_BAT_A || t == T_HND_A ? T_ONE_A
                                                    : t;
            for (rep = 0; rep < reps; rep++)
                q[rep] = a->t[t][rep] / b->t[bt][rep];
            fprintf(out, " %.2fx |", median(q, reps));
        }
        fprintf(out, "\n");
    }
}

/* ---- the run ----------------------------------------------------------------------------- */

void amqb_fuse_intro(FILE *out)
{
    if (!amqb_xfuse_available()) {
        /* the report names no path outside the repo; the terminal gets it */
        fprintf(out, "skipped: the reference rows (xor_singleheader/include/binaryfusefilter.h "
                     "is not under `AMQ_PEERS`)\n");
        fprintf(stderr, "skipped: the reference rows (not found under %s)\n", amqb_peers_dir());
        return;
    }
    fprintf(out, "The reference is FastFilter/xor_singleheader's `binaryfusefilter.h` from "
                 "`AMQ_PEERS` (its own code, built -O3 by bench/peers/xorfuse.c). 8-byte keys: the "
                 "reference takes the 64-bit key itself, amq hashes its 8 bytes (the fuse "
                 "kind's default hash); 16-byte keys: the reference is given XXH3-64 of the "
                 "key, computed in the timed loop. Build includes hashing: amq's is "
                 "`amq_builder_add_batch_fixed` of the packed keys (hashed in its loop) and "
                 "`amq_builder_finish`, the reference's a copy of the keys and its populate. "
                 "amq's one-key columns are its inline query (amq/fuse_view.h: "
                 "`amq_fuse_view_contains_as`, compiled into the bench at -O3 as the "
                 "reference's header is), the handle columns `amq_filter_contains` (a library "
                 "call per key), the batched ones "
                 "`amq_static_contains_batch_fixed`. The reference has no batched query: "
                 "amq's batched and handle columns are divided by its one-key ones.\n");
}

uint64_t amqb_fuse_h2h(FILE *out, const amqb_fuse_run *o)
{
    uint64_t fneg = 0;
    result res;
    int k, m;

    for (k = 0; k < o->nn; k++)
        for (m = 0; m < o->nk; m++) {
            run(o, o->ns[k], o->kbs[m], &res, &fneg);
            print_result(out, &res, o->reps);
            fflush(out);
        }
    return fneg;
}
