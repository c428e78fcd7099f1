/*
 * layouts-bench.c - three prototype layouts for an expandable filter whose
 * memory follows its entries (docs/expandable.md, "Layouts whose memory
 * follows the keys"), each grown from 1,000 keys: at every power of ten
 * every added key is checked present, the layout's invariants are checked,
 * and its measured rate on A keys never added and bits per key are printed
 * beside amq's cuckoo filter sized in advance for that rate (the expandable
 * criterion's comparison); at N, ns per add (amortized over the growth), per
 * one-key query and per batched query beside amq's blocked filter sized in
 * advance, in the same process (and, for a layout with a batched add, a
 * second filter grown in batches beside the blocked filter's batched add;
 * for rsqf, the one-key query of its table alone, the rebuilds' cost and
 * the bits just after its last growth); then half the keys removed (where
 * the layout removes) and the other half checked present.
 *
 *   layouts-bench [--layout chunks|lines|rsqf|all] [--max N] [--absent A]
 *                 [--queries Q] [--speed] [--growth G] [--start S]
 *
 * --speed leaves out the cuckoo filters (the bits ratio); Q queries are timed
 * (default 10M), best of three turns with the blocked filter's alternating.
 * --growth is the rsqf table's factor (1.1), --start its first capacity
 * (1,000; a smaller one runs its keys out of bits sooner, for the tests).
 *
 * The prototypes hash a key with a 64-bit mixer (one multiply chain, as the
 * kind's XXH3 of an 8-byte key is); the blocked filter hashes with XXH3.
 * Measurement only: these layouts are not in libamq.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "layouts-bench"
#include "amq.h"
#include "bench_common.h"
#include "layout_chunks.h"
#include "layout_lines.h"
#include "layout_rsqf.h"

#define BATCH 4096

typedef struct {
    const char *name;
    const char *what;
    void *(*make)(void);
    int (*add)(void *f, uint64_t h);
    size_t (*add_batch)(void *f, const uint64_t *h, size_t n); /* NULL: no batched add */
    int (*contains)(const void *f, uint64_t h);
    int (*contains_table)(const void *f, uint64_t h); /* NULL, or the query less a side part */
    void (*batch)(const void *f, const uint64_t *h, size_t n, uint8_t *out);
    int (*remove)(void *f, uint64_t h); /* NULL: the layout does not remove */
    uint64_t (*bytes)(const void *f);
    int (*check)(const void *f);
    void (*free)(void *f);
} layout;

static void *chunks_make(void) { return xp_new(1000, 1.0); }
static int chunks_add(void *f, uint64_t h) { return xp_add(f, h); }
static int chunks_contains(const void *f, uint64_t h) { return xp_contains(f, h); }
static void chunks_batch(const void *f, const uint64_t *h, size_t n, uint8_t *o)
{
    xp_contains_batch(f, h, n, o);
}
static int chunks_remove(void *f, uint64_t h) { return xp_remove(f, h); }
static uint64_t chunks_bytes(const void *f) { return xp_bytes(f); }
static int chunks_check(const void *f) { return xp_check(f); }
static void chunks_free(void *f) { xp_free(f); }

static void *lines_make(void) { return xl_new(1000, 1.0); }
static int lines_add(void *f, uint64_t h) { return xl_add(f, h); }
static int lines_contains(const void *f, uint64_t h) { return xl_contains(f, h); }
static void lines_batch(const void *f, const uint64_t *h, size_t n, uint8_t *o)
{
    xl_contains_batch(f, h, n, o);
}
static int lines_remove(void *f, uint64_t h) { return xl_remove(f, h); }
static uint64_t lines_bytes(const void *f) { return xl_bytes(f); }
static int lines_check(const void *f) { return xl_check(f); }
static void lines_free(void *f) { xl_free(f); }

static double rsqf_growth = 1.1;
static uint64_t rsqf_start = 1000;
static void *rsqf_make(void) { return xq_new(rsqf_start, 0.95, rsqf_growth); }
static int rsqf_add(void *f, uint64_t h) { return xq_add(f, h); }
static size_t rsqf_add_batch(void *f, const uint64_t *h, size_t n) { return xq_add_batch(f, h, n); }
static int rsqf_contains(const void *f, uint64_t h) { return xq_contains(f, h); }
static int rsqf_contains_table(const void *f, uint64_t h) { return xq_contains_table(f, h); }
static void rsqf_batch(const void *f, const uint64_t *h, size_t n, uint8_t *o)
{
    xq_contains_batch(f, h, n, o);
}
static uint64_t rsqf_bytes(const void *f) { return xq_bytes(f); }
static int rsqf_check(const void *f) { return xq_check(f); }
static void rsqf_free(void *f) { xq_free(f); }

static const layout layouts[] = {
    {"chunks", "128-bucket blocks, each a chunk sized to its entries, a directory", chunks_make,
     chunks_add, NULL, chunks_contains, NULL, chunks_batch, chunks_remove, chunks_bytes,
     chunks_check, chunks_free},
    {"lines", "256-bucket blocks of whole 64-byte lines, a directory of line starts", lines_make,
     lines_add, NULL, lines_contains, NULL, lines_batch, lines_remove, lines_bytes, lines_check,
     lines_free},
    {"rsqf", "range-reduced quotient filter, 28 slots a line, grown at 95 % by --growth", rsqf_make,
     rsqf_add, rsqf_add_batch, rsqf_contains, rsqf_contains_table, rsqf_batch, NULL, rsqf_bytes,
     rsqf_check, rsqf_free},
};

static inline uint64_t hkey(uint64_t k)
{
    return mix(k ^ UINT64_C(0x5bd1e9955bd1e995));
}

/* Query i of a run: half present keys, half absent. */
static uint64_t query_key(uint64_t i, uint64_t n)
{
    return (i & 1) ? key(mix(i) % n, 1) : key(i, 3);
}

static void run(const layout *L, uint64_t max, uint64_t absent, uint64_t q, int speed)
{
    void *f = L->make();
    uint64_t n = 0, p, i, fp, sink = 0;
    double t, t_add = 0.0, r, bits, need, last_need = 0.0;
    int rc;
    if (f == NULL) {
        fprintf(stderr, "layouts-bench: %s: no memory\n", L->name);
        exit(1);
    }
    printf("\n## %s: %s\n\n", L->name, L->what);
    if (L->make == rsqf_make)
        printf("(growth factor %.2f, first capacity %llu)\n\n", rsqf_growth,
               (unsigned long long)rsqf_start);
    printf("| keys | measured fpp | bits/key | cuckoo at r: bits/key | ratio |\n|---|---|---|---|---|\n");
    for (p = 1000;; p = p * 10 > max && p < max ? max : p * 10) {
        t = now_s();
        for (; n < p; n++)
            if ((rc = L->add(f, hkey(key(n, 1)))) != 1) {
                fprintf(stderr, "layouts-bench: %s: add %llu: %d\n", L->name,
                        (unsigned long long)n, rc);
                exit(1);
            }
        t_add += now_s() - t;
        for (i = 0; i < n; i++)
            if (!L->contains(f, hkey(key(i, 1)))) {
                fprintf(stderr, "layouts-bench: %s: key %llu of %llu answers absent\n", L->name,
                        (unsigned long long)i, (unsigned long long)n);
                exit(1);
            }
        if ((rc = L->check(f)) != 0) {
            fprintf(stderr, "layouts-bench: %s: inconsistent at %llu keys (%d)\n", L->name,
                    (unsigned long long)n, rc);
            exit(1);
        }
        for (i = 0, fp = 0; i < absent; i++)
            fp += (uint64_t)L->contains(f, hkey(key(i, 2)));
        r = (double)fp / (double)absent;
        bits = (double)L->bytes(f) * 8.0 / (double)n;
        need = 0.0;
        if (!speed && n >= 10000) {
            double ra, ba, rb, bb;
            need = cuckoo_need(n, absent, r, &ra, &ba, &rb, &bb);
        }
        last_need = need;
        if (need > 0)
            printf("| %llu | %.4f %% | %.2f | %.2f | %.2fx |\n", (unsigned long long)n, r * 100.0,
                   bits, need, bits / need);
        else
            printf("| %llu | %.4f %% | %.2f | | |\n", (unsigned long long)n, r * 100.0, bits);
        fflush(stdout);
        if (p >= max)
            break;
    }
    {
        static uint64_t hh[BATCH];
        static amq_hash128 h2[BATCH];
        static uint8_t out[BATCH];
        double tb_add = 1e300, tx1 = 1e300, tb1 = 1e300, txb = 1e300, tbb = 1e300, txt = 1e300;
        amq_filter *b = NULL;
        uint64_t j, k;
        int turn;
        /* best of three turns, the subjects alternating: this VM's shared cache makes one
         * pass of a memory-bound loop vary by 2x */
        for (turn = 0; turn < 3; turn++) {
            amq_filter_free(b);
            b = make_at(AMQ_KIND_BLOCKED, n, 0, 0.01);
            t = now_s();
            for (i = 0; i < n; i++) {
                k = key(i, 1);
                (void)amq_filter_add(b, &k, sizeof k);
            }
            tb_add = fmin(tb_add, now_s() - t);
            t = now_s();
            for (i = 0; i < q; i++)
                sink += (uint64_t)L->contains(f, hkey(query_key(i, n)));
            tx1 = fmin(tx1, now_s() - t);
            if (L->contains_table != NULL) { /* the same queries, the side part left out */
                t = now_s();
                for (i = 0; i < q; i++)
                    sink += (uint64_t)L->contains_table(f, hkey(query_key(i, n)));
                txt = fmin(txt, now_s() - t);
            }
            t = now_s();
            for (i = 0; i < q; i++) {
                k = query_key(i, n);
                sink += (uint64_t)amq_filter_contains(b, &k, sizeof k);
            }
            tb1 = fmin(tb1, now_s() - t);
            t = now_s();
            for (i = 0; i < q; i += BATCH) {
                for (j = 0; j < BATCH; j++)
                    hh[j] = hkey(query_key(i + j, n));
                L->batch(f, hh, BATCH, out);
                for (j = 0; j < BATCH; j++)
                    sink += out[j];
            }
            txb = fmin(txb, now_s() - t);
            t = now_s();
            for (i = 0; i < q; i += BATCH) {
                for (j = 0; j < BATCH; j++) {
                    k = query_key(i + j, n);
                    h2[j] = amq_filter_hash(b, &k, sizeof k);
                }
                amq_filter_contains_batch(b, h2, BATCH, out);
                for (j = 0; j < BATCH; j++)
                    sink += out[j];
            }
            tbb = fmin(tbb, now_s() - t);
        }
        printf("\nAt %llu keys, ns, %s against the blocked filter sized in advance: add "
               "(amortized over the growth) %.1f / %.1f = %.2fx; one-key query %.1f / %.1f = "
               "%.2fx; batched query %.1f / %.1f = %.2fx\n",
               (unsigned long long)n, L->name, t_add * 1e9 / (double)n, tb_add * 1e9 / (double)n,
               t_add / tb_add, tx1 * 1e9 / (double)q, tb1 * 1e9 / (double)q, tx1 / tb1,
               txb * 1e9 / (double)q, tbb * 1e9 / (double)q, txb / tbb);
        if (L->contains_table != NULL)
            printf("(%s's one-key query of the table alone, in the same turns: %.1f ns)\n", L->name,
                   txt * 1e9 / (double)q);
        if (L->add_batch != NULL) { /* a second filter grown from the start in batches */
            void *f2 = L->make();
            double tx_badd, tb_badd = 1e300;
            uint64_t m;
            if (f2 == NULL) {
                fprintf(stderr, "layouts-bench: %s: no memory\n", L->name);
                exit(1);
            }
            t = now_s();
            for (i = 0; i < n; i += m) {
                m = n - i < BATCH ? n - i : BATCH;
                for (j = 0; j < m; j++)
                    hh[j] = hkey(key(i + j, 1));
                if (L->add_batch(f2, hh, (size_t)m) != m) {
                    fprintf(stderr, "layouts-bench: %s: batched add at %llu failed\n", L->name,
                            (unsigned long long)i);
                    exit(1);
                }
            }
            tx_badd = now_s() - t;
            for (i = 0; i < n; i++)
                if (!L->contains(f2, hkey(key(i, 1)))) {
                    fprintf(stderr, "layouts-bench: %s: key %llu absent after the batched adds\n",
                            L->name, (unsigned long long)i);
                    exit(1);
                }
            L->free(f2);
            for (turn = 0; turn < 3; turn++) {
                amq_filter_free(b);
                b = make_at(AMQ_KIND_BLOCKED, n, 0, 0.01);
                t = now_s();
                for (i = 0; i < n; i += m) {
                    m = n - i < BATCH ? n - i : BATCH;
                    for (j = 0; j < m; j++) {
                        k = key(i + j, 1);
                        h2[j] = amq_filter_hash(b, &k, sizeof k);
                    }
                    (void)amq_filter_add_batch(b, h2, (size_t)m, NULL);
                }
                tb_badd = fmin(tb_badd, now_s() - t);
            }
            printf("Batched add (a second %s filter grown in batches of %d, every key checked "
                   "present): %.1f ns, %.2fx the blocked filter's one-key add; the blocked "
                   "filter's batched add %.1f ns, %.2fx\n",
                   L->name, BATCH, tx_badd * 1e9 / (double)n, tx_badd / tb_add,
                   tb_badd * 1e9 / (double)n, tx_badd / tb_badd);
        }
        if (L->make == rsqf_make) { /* where an add's time goes; the keys out of bits */
            const xq_filter *x = f;
            printf("(rsqf's add: %.1f ns of it in the %llu rebuilds (%.1f ns for each of the "
                   "%.2f entries per key they read), %.1f ns placing the key; "
                   "%llu ranges in the deep list, %llu void lanes)\n",
                   x->grow_s * 1e9 / (double)n, (unsigned long long)x->grows,
                   x->grow_s * 1e9 / (double)x->rewritten, (double)x->rewritten / (double)n,
                   (t_add - x->grow_s) * 1e9 / (double)n, (unsigned long long)x->ndeep,
                   (unsigned long long)xq_void_lanes(x));
            if (x->top_items > 0) {
                const double top = (double)x->top_bytes * 8.0 / (double)x->top_items;
                printf("(the sawtooth's top: just after its last growth, at %llu keys, rsqf took "
                       "%.2f bits per key", (unsigned long long)x->top_items, top);
                if (last_need > 0)
                    printf(", %.2fx the cuckoo filter's at the rate measured at %llu keys",
                           top / last_need, (unsigned long long)n);
                printf(")\n");
            }
        }
        amq_filter_free(b);
    }
    if (L->remove != NULL) {
        for (i = 0; i < n; i += 2)
            if (L->remove(f, hkey(key(i, 1))) != 1) {
                fprintf(stderr, "layouts-bench: %s: remove %llu failed\n", L->name,
                        (unsigned long long)i);
                exit(1);
            }
        for (i = 1; i < n; i += 2)
            if (!L->contains(f, hkey(key(i, 1)))) {
                fprintf(stderr, "layouts-bench: %s: key %llu absent after the removals\n",
                        L->name, (unsigned long long)i);
                exit(1);
            }
        if ((rc = L->check(f)) != 0) {
            fprintf(stderr, "layouts-bench: %s: inconsistent after the removals (%d)\n",
                    L->name, rc);
            exit(1);
        }
        printf("Removed every other key: the rest present, %.2f bits per key left.\n",
               (double)L->bytes(f) * 8.0 / (double)(n - (n + 1) / 2));
    } else
        printf("(%s removes nothing: not built in the prototype.)\n", L->name);
    if (sink == UINT64_MAX)
        printf("%llu\n", (unsigned long long)sink);
    L->free(f);
}

int main(int argc, char **argv)
{
    uint64_t max = 10000000, absent = 10000000, queries = 10000000;
    const char *which = "all";
    int a, speed = 0, any = 0;
    size_t i;
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--max") == 0 && a + 1 < argc)
            max = (uint64_t)strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--absent") == 0 && a + 1 < argc)
            absent = (uint64_t)strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--queries") == 0 && a + 1 < argc)
            queries = (uint64_t)strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--layout") == 0 && a + 1 < argc)
            which = argv[++a];
        else if (strcmp(argv[a], "--speed") == 0)
            speed = 1;
        else if (strcmp(argv[a], "--growth") == 0 && a + 1 < argc)
            rsqf_growth = strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--start") == 0 && a + 1 < argc)
            rsqf_start = (uint64_t)strtod(argv[++a], NULL);
        else {
            fprintf(stderr, "usage: layouts-bench [--layout chunks|lines|rsqf|all] [--max N] "
                            "[--absent A] [--queries Q] [--speed] [--growth G] [--start S]\n");
            return 2;
        }
    }
    if (rsqf_start < 1 || rsqf_start > 1000) {
        fprintf(stderr, "layouts-bench: --start (the rsqf table's first capacity) is from 1 to 1000\n");
        return 2;
    }
    if (!(rsqf_growth >= 1.01 && rsqf_growth <= 2.0)) {
        fprintf(stderr, "layouts-bench: --growth (the rsqf table's factor) is from 1.01 to 2\n");
        return 2;
    }
    if (max < 1000 || absent == 0 || queries < BATCH) {
        fprintf(stderr, "layouts-bench: --max is at least 1000, --absent at least 1, --queries "
                        "at least %d\n", BATCH);
        return 2;
    }
    printf("# Expandable layouts grown from 1,000 keys (rsqf from %llu) to %llu (rates on %llu absent "
           "keys)\n",
           (unsigned long long)rsqf_start, (unsigned long long)max, (unsigned long long)absent);
    for (i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (strcmp(which, "all") == 0 || strcmp(which, layouts[i].name) == 0) {
            run(&layouts[i], max, absent, queries, speed);
            any = 1;
        }
    if (!any) {
        fprintf(stderr, "layouts-bench: no layout %s\n", which);
        return 2;
    }
    return 0;
}
