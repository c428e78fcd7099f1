/*
 * fuse_bench.c - amq's binary fuse filters beside the reference code itself
 * (FastFilter/xor_singleheader binary_fuse8/16_populate and _contain, built
 * from AMQ_PEERS by bench/peers/xorfuse.c), same keys, same process; prints
 * ns per key and the ratio amq / reference (below 1, amq is faster), each
 * amq query loop divided by the reference loop run beside it in the same
 * round (time_pair).  amq-bench-fuse (fuse_main.c; make bench-fuse:
 * docs/benchmarks-fuse.md) and amq-bench (make bench: docs/benchmarks.md)
 * both run it (fuse_bench.h); amqb_fuse_intro says what each column times.
 *
 * 8-byte keys are random 64-bit integers (the reference takes them as they
 * lie in memory, amq hashes their bytes); 16-byte keys are {k, k * 0x9e37..}
 * and the reference is given XXH3-64 of the key computed in the timed loop.
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
                                       "call per key present", "call per key absent"};

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
    double t[MAX_REPS * MAX_REPS];
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
 * loop; each variant's loop a function of its own (one large function of
 * them all had gcc merge their tails and spill the view's fields), the
 * view copied into a local that never escapes, so its fields stay in
 * registers. */
#define VIEW_FN(NAME, KB, B, SHAPE)                                                               \
    static __attribute__((noinline)) uint64_t NAME(const amq_fuse_view *got, const uint8_t *k,   \
                                                   size_t n)                                      \
    {                                                                                             \
        const amq_fuse_view v = *got;                                                             \
        uint64_t c = 0;                                                                           \
        size_t i;                                                                                 \
        for (i = 0; i < n; i++)                                                                   \
            c += (uint64_t)amq_fuse_view_contains_as(&v, k + i * (KB), KB, B, 3, SHAPE);          \
        return c;                                                                                 \
    }
#define VIEW_FNS(KB, B)                                                                           \
    VIEW_FN(view_##KB##_##B##_pv, KB, B, AMQ_FUSE_VIEW_PLAIN | AMQ_FUSE_VIEW_VMS)                 \
    VIEW_FN(view_##KB##_##B##_sv, KB, B, AMQ_FUSE_VIEW_STRIDED | AMQ_FUSE_VIEW_VMS)               \
    VIEW_FN(view_##KB##_##B##_pm, KB, B, AMQ_FUSE_VIEW_PLAIN | AMQ_FUSE_VIEW_MS)                  \
    VIEW_FN(view_##KB##_##B##_sm, KB, B, AMQ_FUSE_VIEW_STRIDED | AMQ_FUSE_VIEW_MS)                \
    VIEW_FN(view_##KB##_##B##_p, KB, B, AMQ_FUSE_VIEW_PLAIN)                                      \
    VIEW_FN(view_##KB##_##B##_s, KB, B, AMQ_FUSE_VIEW_STRIDED)                                    \
    VIEW_FN(view_##KB##_##B##_t, KB, B, AMQ_FUSE_VIEW_TABLE)
VIEW_FNS(8, 8)
VIEW_FNS(16, 8)
VIEW_FNS(8, 16)
VIEW_FNS(16, 16)

typedef uint64_t (*view_fn)(const amq_fuse_view *, const uint8_t *, size_t);
#define VIEW_ROW(KB, B)                                                                           \
    {view_##KB##_##B##_pv, view_##KB##_##B##_sv, view_##KB##_##B##_pm, view_##KB##_##B##_sm,     \
     view_##KB##_##B##_p,  view_##KB##_##B##_s,  view_##KB##_##B##_t}

static uint64_t amq_view(const amq_filter *f, const uint64_t *keys, size_t kb, size_t n)
{
    /* [16-byte keys][16-bit fingerprints][shape] */
    static const view_fn fns[2][2][7] = {{VIEW_ROW(8, 8), VIEW_ROW(8, 16)},
                                         {VIEW_ROW(16, 8), VIEW_ROW(16, 16)}};
    amq_fuse_view v;
    int shape;
    if (amq_fuse_view_get(f, &v) != AMQ_OK || v.arity != 3)
        return 0;
    switch (amq_fuse_view_shape(&v)) {
    case AMQ_FUSE_VIEW_PLAIN | AMQ_FUSE_VIEW_VMS:
        shape = 0;
        break;
    case AMQ_FUSE_VIEW_STRIDED | AMQ_FUSE_VIEW_VMS:
        shape = 1;
        break;
    case AMQ_FUSE_VIEW_PLAIN | AMQ_FUSE_VIEW_MS:
        shape = 2;
        break;
    case AMQ_FUSE_VIEW_STRIDED | AMQ_FUSE_VIEW_MS:
        shape = 3;
        break;
    case AMQ_FUSE_VIEW_PLAIN:
        shape = 4;
        break;
    case AMQ_FUSE_VIEW_STRIDED:
        shape = 5;
        break;
    default:
        shape = 6;
    }
    return fns[kb == 16][v.bits == 16][shape](&v, (const uint8_t *)keys, n);
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

/* Query rounds kept per row: every repetition's qreps rounds. */
#define MAX_ROUNDS (MAX_REPS * MAX_REPS)

typedef struct cell {
    double t[NT][MAX_REPS];    /* per repetition: build, and the median of its rounds */
    double q[NT][MAX_ROUNDS];  /* amq rows: amq / reference, per round (build: per rep) */
    int nq[NT];
    double fpp, bpk;
    int ok;
} cell;

typedef struct result {
    uint64_t n, nq;
    size_t kb;
    cell c[NR];
} result;

/* The query loops of one round, in the order they run. */
enum { L_REF, L_REFC, L_VIEW, L_BAT, L_HND, NL };

/* The reference's query as a call per key through a pointer (as the handle's is). */
static uint64_t ref_called(const amqb_xfuse *x, const uint64_t *keys, size_t kb, size_t n)
{
    amqb_xfuse_fn fn = amqb_xfuse_call(x);
    const uint8_t *k = (const uint8_t *)keys;
    uint64_t c = 0;
    size_t i;
    for (i = 0; i < n; i++)
        c += (uint64_t)fn(x, k + i * kb, kb);
    return c;
}

static uint64_t run_loop(int l, const amq_filter *f, const amqb_xfuse *x, const uint64_t *keys,
                         size_t kb, size_t nq)
{
    switch (l) {
    case L_REF:
        return amqb_xfuse_query(x, keys, kb, nq);
    case L_REFC:
        return ref_called(x, keys, kb, nq);
    case L_VIEW:
        return amq_view(f, keys, kb, nq);
    case L_BAT:
        return amq_batched(f, keys, kb, nq);
    default:
        return amq_one(f, keys, kb, nq);
    }
}

/* One fingerprint width: amq's filter and the reference's built on the
 * same keys (the order swapped every other repetition), then qreps rounds
 * in each of which the reference's one-key loop and amq's three query loops
 * run back to back (the order rotating round by round), present keys then
 * absent ones.  Each amq loop's ratio is taken to the reference loop of its
 * own round: a machine shared with other work moves both alike within a
 * round, far less than it moves either between rounds.  *fneg counts the
 * false negatives of every query path. */
static void time_pair(int amq, const uint64_t *keys, size_t kb, size_t n, const uint64_t *present,
                      const uint64_t *absent, size_t nq, int qreps, result *res, int rep,
                      uint64_t *fneg)
{
    static const int col[2][NL] = {{T_ONE_P, T_HND_P, T_ONE_P, T_BAT_P, T_HND_P},
                                   {T_ONE_A, T_HND_A, T_ONE_A, T_BAT_A, T_HND_A}};
    /* what each amq loop is divided by: the handle by the reference's call */
    static const int by[NL] = {L_REF, L_REFC, L_REF, L_REF, L_REFC};
    unsigned bits = amq == R_AMQ8 ? 8 : 16;
    cell *a = &res->c[amq], *r = &res->c[amq + 1];
    int have_ref = amqb_xfuse_available() && r->ok >= 0;
    double tl[2][NL][MAX_REPS], t;
    amq_filter *f = NULL;
    amqb_xfuse *x = NULL;
    uint64_t got;
    amq_stats st;
    int q, pa, j, l, side;

    for (side = 0; side < 2; side++) {
        if ((side ^ (rep & 1)) == 0) {
            t = now();
            f = amq_build(bits, keys, kb, n);
            a->t[T_BUILD][rep] = (now() - t) * 1e9 / (double)n;
        } else if (have_ref) {
            t = now();
            x = amqb_xfuse_build(bits, keys, kb, n);
            r->t[T_BUILD][rep] = (now() - t) * 1e9 / (double)n;
        }
    }
    if (f == NULL) {
        fprintf(stderr, "%s: build failed at n = %zu\n", rnames[amq], n);
        a->ok = -1;
        amqb_xfuse_free(x);
        return;
    }
    if (have_ref && x == NULL) {
        fprintf(stderr, "%s: build failed at n = %zu\n", rnames[amq + 1], n);
        r->ok = -1;
        have_ref = 0;
    }
    a->ok = 1;
    if (have_ref) {
        r->ok = 1;
        a->q[T_BUILD][a->nq[T_BUILD]++] = a->t[T_BUILD][rep] / r->t[T_BUILD][rep];
    }
    for (q = 0; q < qreps; q++)
        for (pa = 0; pa < 2; pa++)
            for (j = 0; j < NL; j++) {
                l = (j + q + rep) % NL;
                if (l <= L_REFC && !have_ref)
                    continue;
                t = now();
                got = run_loop(l, f, x, pa ? absent : present, kb, nq);
                tl[pa][l][q] = (now() - t) * 1e9 / (double)nq;
                if (pa == 0 && got != nq) {
                    fprintf(stderr, "%s: %llu false negatives (loop %d)!\n",
                            rnames[l <= L_REFC ? amq + 1 : amq],
                            (unsigned long long)(nq - got), l);
                    *fneg += nq - got;
                }
                if (pa == 1 && l == L_VIEW)
                    a->fpp = (double)got / (double)nq;
                if (pa == 1 && l == L_REF)
                    r->fpp = (double)got / (double)nq;
            }
    for (pa = 0; pa < 2; pa++)
        for (l = 0; l < NL; l++) {
            if (l <= L_REFC && !have_ref)
                continue;
            (l <= L_REFC ? r : a)->t[col[pa][l]][rep] = median(tl[pa][l], qreps);
            if (l <= L_REFC || !have_ref)
                continue;
            for (q = 0; q < qreps; q++)
                a->q[col[pa][l]][a->nq[col[pa][l]]++] = tl[pa][l][q] / tl[pa][by[l]][q];
        }
    amq_filter_stats(f, &st);
    a->bpk = (double)st.bytes * 8.0 / (double)n;
    if (have_ref)
        r->bpk = (double)amqb_xfuse_bytes(x) * 8.0 / (double)n;
    amq_filter_free(f);
    amqb_xfuse_free(x);
}

static void run(const amqb_fuse_run *o, uint64_t n, size_t kb, result *res, uint64_t *fneg)
{
    uint64_t nq = n < o->qmax ? n : o->qmax;
    int reps = o->reps;
    uint64_t seed = 0xf05e0000 + n + kb, *keys, *present, *absent, j;
    size_t w = kb / 8;
    int rep, b;

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
        for (b = 0; b < 2; b++) {
            if (!o->bits_on[b] || res->c[b ? R_AMQ16 : R_AMQ8].ok < 0)
                continue;
            time_pair(b ? R_AMQ16 : R_AMQ8, keys, kb, n, present, absent, nq, o->qreps, res, rep,
                      fneg);
        }
        fprintf(stderr, "n = %llu, %zu-byte keys: rep %d of %d done\n", (unsigned long long)n, kb,
                rep + 1, reps);
    }
    free(keys);
    free(present);
    free(absent);
}

static void print_result(FILE *out, const result *res, int reps, double line_ns)
{
    int r, t, amq;
    fprintf(out, "\n### n = %llu, %zu-byte keys (%llu queries each)\n\n",
            (unsigned long long)res->n, res->kb, (unsigned long long)res->nq);
    fprintf(out, "| filter | build ns/key | one-key present | one-key absent | batched present | "
                 "batched absent | call per key present | call per key absent | fpp | bits/key |\n"
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (r = 0; r < NR; r++) {
        const cell *c = &res->c[r];
        int ref = r == R_REF8 || r == R_REF16;
        if (c->ok <= 0)
            continue;
        fprintf(out, "| %s | %.1f | %.2f | %.2f |", rnames[r], median(c->t[T_BUILD], reps),
                median(c->t[T_ONE_P], reps), median(c->t[T_ONE_A], reps));
        if (ref)
            fprintf(out, " (none) | (none) | %.2f | %.2f |", median(c->t[T_HND_P], reps),
                    median(c->t[T_HND_A], reps));
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
    fprintf(out, "\n| amq / reference (median of the per-round ratios) |");
    for (t = 0; t < NT; t++)
        fprintf(out, " %s |", tnames[t]);
    fprintf(out, "\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (amq = R_AMQ8; amq < NR; amq += 2) {
        const cell *a = &res->c[amq];
        if (a->ok <= 0 || res->c[amq + 1].ok <= 0)
            continue;
        fprintf(out, "| fuse%d, %zu-byte keys |", amq == R_AMQ8 ? 8 : 16, res->kb);
        for (t = 0; t < NT; t++)
            fprintf(out, " %.2fx |", median(a->q[t], a->nq[t]));
        fprintf(out, "\n");
    }
    if (line_ns <= 0)
        return;
    /* a 3-wise query reads three lines: the batched query's floor out of cache */
    fprintf(out, "\nThe line-read limit re-measured just before this n: %.2f ns, three line reads "
                 "(a 3-wise query's) %.2f ns.", line_ns, 3 * line_ns);
    for (amq = R_AMQ8; amq < NR; amq += 2) {
        const cell *a = &res->c[amq];
        double bp, ba;
        if (a->ok <= 0)
            continue;
        bp = median(a->t[T_BAT_P], reps);
        ba = median(a->t[T_BAT_A], reps);
        fprintf(out, " amq fuse%d's batched query %.2f / %.2f ns: %.2fx of three line reads.",
                amq == R_AMQ8 ? 8 : 16, bp, ba, (bp > ba ? bp : ba) / (3 * line_ns));
    }
    fprintf(out, "\n");
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
    fprintf(out,
            "amq's fuse8 and fuse16 3-wise beside FastFilter/xor_singleheader's binary_fuse8 / "
            "binary_fuse16 (its own `binaryfusefilter.h` from `AMQ_PEERS`, built -O3 by "
            "`bench/peers/xorfuse.c`), built on the same keys in the same process. Each "
            "repetition builds amq's filter and the reference's (the order swapped every other "
            "repetition), then runs rounds: in each, the reference's query loops and amq's run "
            "back to back over the same keys (the order rotating round by round), present keys "
            "then absent ones. Times are the thread's CPU time in ns per key, the median over "
            "the repetitions (a repetition's query time: the median of its rounds); each ratio, "
            "amq / reference (below 1: amq is faster), is the median over all rounds of amq's "
            "loop divided by the reference's loop of the same round (build: per repetition), "
            "which a machine shared with other work moves far less than either time. 8-byte "
            "keys: the reference takes the 64-bit key itself, amq hashes its 8 bytes (the fuse "
            "kind's default hash, vmulshift: multiply-add-shift of the 64-bit key); 16-byte "
            "keys: the reference is given XXH3-64 of the key, computed in the timed loop, and "
            "amq hashes the key as its default does (vmulshift: multiply-add-shift of the two "
            "64-bit words, docs/file-format.md). Columns: *build*, the whole build from the "
            "keys, hashing included (amq: `amq_builder_add_batch_fixed` of the packed keys and "
            "`amq_builder_finish`; the reference: a copy of the keys, allocate and populate); "
            "*one-key*, amq's inline query (amq/fuse_view.h: `amq_fuse_view_contains_as`, "
            "compiled into the bench at -O3 as the reference's header is) against "
            "`binary_fuse8/16_contain` in the reference's loop; *batched*, "
            "`amq_static_contains_batch_fixed` against the reference's one-key loop (it has no "
            "batched query); *call per key*, amq's handle (`amq_filter_contains`, a library "
            "call per key) against the reference's contain called through a function pointer, "
            "out of line (as a library's entry is) and taking a key of any length as the handle "
            "does: the same two length tests as amq's entry (8 bytes, then 16) before the "
            "hash.\n");
}

uint64_t amqb_fuse_h2h(FILE *out, const amqb_fuse_run *o)
{
    uint64_t fneg = 0;
    result res;
    int k, m;

    for (k = 0; k < o->nn; k++)
        for (m = 0; m < o->nk; m++) {
            run(o, o->ns[k], o->kbs[m], &res, &fneg);
            print_result(out, &res, o->reps, o->line_ns);
            fflush(out);
        }
    return fneg;
}
