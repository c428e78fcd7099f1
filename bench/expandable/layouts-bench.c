/*
 * layouts-bench.c - two prototype layouts for an expandable filter whose
 * memory follows its entries (docs/expandable-log.md, "Layouts whose memory
 * follows the keys") beside the layout that became libamq's quotient kind
 * (kind 12), each grown from 1,000 keys: at every power of ten every added
 * key is checked present, the layout's invariants are checked (the kind's by
 * a round trip through amq_filter_serialize and amq_filter_deserialize, whose
 * loader validates every one), and its measured rate on A keys never added
 * and bits per key are printed beside amq's cuckoo filter sized in advance
 * for that rate (the expandable criterion's comparison); at N, ns per add
 * (amortized over the growth), per one-key query and per batched query
 * beside amq's blocked filter sized in advance, in the same process (and,
 * for a layout with a batched add, a second filter grown in batches beside
 * the blocked filter's batched add, and the bits just after its memory last
 * grew: the sawtooth's top); for the kind, what amq_filter_describe tells of
 * its growth (expansions, deep ranges, void lanes); then half the keys
 * removed (where the layout removes) and the other half checked present.
 *
 *   layouts-bench [--layout chunks|lines|quotient|all] [--max N] [--absent A]
 *                 [--queries Q] [--speed] [--start S]
 *
 * --speed leaves out the cuckoo filters (the bits ratio); Q queries are timed
 * (default 10M), best of three turns with the blocked filter's alternating.
 * --start is the quotient kind's starting capacity (1,000; at least 64 slots;
 * a smaller one runs its keys out of bits sooner, for the tests).  The kind
 * grows by its fixed factor (1.1 at 95 % load).  The rsqf prototype this
 * layout replaced (bench/expandable/layout_rsqf.c, its --growth and its
 * timings of the table alone and of the rebuilds) is at commit 8eaf6c0 and
 * before: `git checkout 8eaf6c0`, then `--layout rsqf`.
 *
 * Every layout takes a key's 64-bit hash from a mixer (one multiply chain, as
 * the kind's XXH3 of an 8-byte key is); the quotient kind is given it as its
 * h1, the only half it reads (src/quotient_kind.c), through the public
 * amq_filter_add_hash, _contains_hash, _add_batch and _contains_batch.  The
 * blocked filter hashes with XXH3.  Measurement only: the chunks and lines
 * layouts are not in libamq.
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

#define BATCH 4096

typedef struct {
    const char *name;
    const char *what;
    void *(*make)(void);
    int (*add)(void *f, uint64_t h);
    size_t (*add_batch)(void *f, const uint64_t *h, size_t n); /* NULL: no batched add */
    int (*contains)(const void *f, uint64_t h);
    void (*batch)(const void *f, const uint64_t *h, size_t n, uint8_t *out);
    int (*remove)(void *f, uint64_t h); /* NULL: the layout does not remove */
    uint64_t (*bytes)(const void *f);
    int (*check)(const void *f);
    void (*free)(void *f);
    void (*about)(const void *f, uint64_t n); /* NULL, or what it tells of itself (n 0: new) */
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

/* The quotient kind through the public handle: a layout's hash is its h1. */
static uint64_t quotient_start = 1000;
static inline amq_hash128 as_h1(uint64_t h)
{
    amq_hash128 x = {h, 0};
    return x;
}
static void *quotient_make(void) { return make_at(AMQ_KIND_QUOTIENT, quotient_start, 0, 0.01); }
static int quotient_add(void *f, uint64_t h) { return amq_filter_add_hash(f, as_h1(h)); }
/* Hashes i .. i + m - 1 of h (m <= BATCH) as the kind's pairs, in one buffer. */
static const amq_hash128 *as_h1s(const uint64_t *h, size_t i, size_t m)
{
    static amq_hash128 hq[BATCH];
    size_t j;
    for (j = 0; j < m; j++)
        hq[j] = as_h1(h[i + j]);
    return hq;
}
static size_t quotient_add_batch(void *f, const uint64_t *h, size_t n)
{
    size_t i, m;
    for (i = 0; i < n; i += m) {
        m = n - i < BATCH ? n - i : BATCH;
        if (amq_filter_add_batch(f, as_h1s(h, i, m), m, NULL) != AMQ_OK)
            return i;
    }
    return n;
}
static int quotient_contains(const void *f, uint64_t h)
{
    return amq_filter_contains_hash(f, as_h1(h));
}
static void quotient_batch(const void *f, const uint64_t *h, size_t n, uint8_t *o)
{
    size_t i, m;
    for (i = 0; i < n; i += m) {
        m = n - i < BATCH ? n - i : BATCH;
        amq_filter_contains_batch(f, as_h1s(h, i, m), m, o + i);
    }
}
static uint64_t quotient_bytes(const void *f)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    return st.bytes;
}
/* The file's bytes loaded again as a view of them: the loader checks every
 * invariant of the table, the deep list and a growth under way. */
static int quotient_check(const void *f)
{
    amq_filter *g = NULL;
    size_t size, written;
    void *buf;
    int rc;
    if ((rc = amq_filter_serialized_size(f, &size)) != AMQ_OK)
        return rc;
    if ((buf = malloc(size)) == NULL)
        return AMQ_ENOMEM;
    rc = amq_filter_serialize(f, buf, size, &written);
    if (rc == AMQ_OK)
        rc = amq_filter_deserialize(buf, written, AMQ_OPEN_MMAP, NULL, &g, NULL);
    amq_filter_free(g);
    free(buf);
    return rc;
}
static void quotient_free(void *f) { amq_filter_free(f); }

/* amq_filter_describe's fields, by name (those this bench prints). */
typedef struct {
    uint64_t start_slots, slots, expansions, entries, deep_ranges, void_lanes, pending;
    double growth, max_load, fpp_bound;
} quotient_fields;

static int quotient_field(void *ctx, const amq_field *fl)
{
    quotient_fields *q = ctx;
    const char *k = fl->name;
    uint64_t *u = strcmp(k, "start_slots") == 0    ? &q->start_slots
                  : strcmp(k, "slots") == 0        ? &q->slots
                  : strcmp(k, "expansions") == 0   ? &q->expansions
                  : strcmp(k, "entries") == 0      ? &q->entries
                  : strcmp(k, "deep_ranges") == 0  ? &q->deep_ranges
                  : strcmp(k, "void_lanes") == 0   ? &q->void_lanes
                  : strcmp(k, "pending_keys") == 0 ? &q->pending
                                                   : NULL;
    double *d = strcmp(k, "growth") == 0      ? &q->growth
                : strcmp(k, "max_load") == 0  ? &q->max_load
                : strcmp(k, "fpp_bound") == 0 ? &q->fpp_bound
                                              : NULL;
    if (u != NULL && fl->type == AMQ_FIELD_U64)
        *u = fl->u64;
    if (d != NULL && fl->type == AMQ_FIELD_F64)
        *d = fl->f64;
    return 0;
}

static void quotient_about(const void *f, uint64_t n)
{
    quotient_fields q;
    memset(&q, 0, sizeof q);
    amq_filter_describe(f, quotient_field, &q);
    if (n == 0)
        printf("(the kind's growth factor %.2f at %.0f %% load, fixed; first capacity %llu keys, "
               "%llu slots)\n\n",
               q.growth, q.max_load * 100.0, (unsigned long long)quotient_start,
               (unsigned long long)q.start_slots);
    else
        printf("(quotient at %llu keys, per amq_filter_describe: %llu growths, %llu slots, %llu "
               "entries, %llu keys pending; %llu ranges in the deep list, %llu void lanes; rate "
               "bound %.4f %%)\n",
               (unsigned long long)n, (unsigned long long)q.expansions,
               (unsigned long long)q.slots, (unsigned long long)q.entries,
               (unsigned long long)q.pending, (unsigned long long)q.deep_ranges,
               (unsigned long long)q.void_lanes, q.fpp_bound * 100.0);
}

static const layout layouts[] = {
    {"chunks", "128-bucket blocks, each a chunk sized to its entries, a directory", chunks_make,
     chunks_add, NULL, chunks_contains, chunks_batch, chunks_remove, chunks_bytes, chunks_check,
     chunks_free, NULL},
    {"lines", "256-bucket blocks of whole 64-byte lines, a directory of line starts", lines_make,
     lines_add, NULL, lines_contains, lines_batch, lines_remove, lines_bytes, lines_check,
     lines_free, NULL},
    {"quotient", "libamq's quotient kind (kind 12, the rsqf prototype made a kind): a "
     "range-reduced quotient filter, 28 slots a line, grown by 10 % at 95 %, a step per add",
     quotient_make, quotient_add, quotient_add_batch, quotient_contains, quotient_batch, NULL,
     quotient_bytes, quotient_check, quotient_free, quotient_about},
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
    if (L->about != NULL)
        L->about(f, 0);
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
        double tb_add = 1e300, tx1 = 1e300, tb1 = 1e300, txb = 1e300, tbb = 1e300;
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
        if (L->add_batch != NULL) { /* a second filter grown from the start in batches */
            void *f2 = L->make();
            double tx_badd = 0.0, tb_badd = 1e300;
            uint64_t m, by, last = 0, top_items = 0, top_bytes = 0;
            if (f2 == NULL) {
                fprintf(stderr, "layouts-bench: %s: no memory\n", L->name);
                exit(1);
            }
            for (i = 0; i < n; i += m) {
                m = n - i < BATCH ? n - i : BATCH;
                t = now_s();
                for (j = 0; j < m; j++)
                    hh[j] = hkey(key(i + j, 1));
                if (L->add_batch(f2, hh, (size_t)m) != m) {
                    fprintf(stderr, "layouts-bench: %s: batched add at %llu failed\n", L->name,
                            (unsigned long long)i);
                    exit(1);
                }
                tx_badd += now_s() - t;
                /* outside the clock: the sawtooth's top, the bytes just after they last rose */
                if ((by = L->bytes(f2)) > last) {
                    if (last != 0) {
                        top_items = i + m;
                        top_bytes = by;
                    }
                    last = by;
                }
            }
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
            if (top_items > 0) {
                const double top = (double)top_bytes * 8.0 / (double)top_items;
                printf("(the sawtooth's top: just after the batched filter's memory last grew, at "
                       "%llu keys, %s took %.2f bits per key", (unsigned long long)top_items,
                       L->name, top);
                if (last_need > 0)
                    printf(", %.2fx the cuckoo filter's at the rate measured at %llu keys",
                           top / last_need, (unsigned long long)n);
                printf(")\n");
            }
        }
        if (L->about != NULL)
            L->about(f, n);
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
        printf("(%s removes nothing: not built.)\n", L->name);
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
        else if (strcmp(argv[a], "--start") == 0 && a + 1 < argc)
            quotient_start = (uint64_t)strtod(argv[++a], NULL);
        else {
            fprintf(stderr, "usage: layouts-bench [--layout chunks|lines|quotient|all] [--max N] "
                            "[--absent A] [--queries Q] [--speed] [--start S]\n");
            return 2;
        }
    }
    if (quotient_start < 1 || quotient_start > 1000) {
        fprintf(stderr, "layouts-bench: --start (the quotient kind's first capacity) is from 1 to "
                        "1000\n");
        return 2;
    }
    if (max < 1000 || absent == 0 || queries < BATCH) {
        fprintf(stderr, "layouts-bench: --max is at least 1000, --absent at least 1, --queries "
                        "at least %d\n", BATCH);
        return 2;
    }
    for (i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        any |= strcmp(which, "all") == 0 || strcmp(which, layouts[i].name) == 0;
    if (!any) {
        if (strcmp(which, "rsqf") == 0)
            fprintf(stderr, "layouts-bench: the rsqf prototype is the quotient kind now (--layout "
                            "quotient); the prototype itself is at commit 8eaf6c0 and before\n");
        else
            fprintf(stderr, "layouts-bench: no layout %s\n", which);
        return 2;
    }
    printf("# Expandable layouts grown from 1,000 keys (quotient from %llu) to %llu (rates on %llu "
           "absent keys)\n",
           (unsigned long long)quotient_start, (unsigned long long)max, (unsigned long long)absent);
    for (i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (strcmp(which, "all") == 0 || strcmp(which, layouts[i].name) == 0)
            run(&layouts[i], max, absent, queries, speed);
    return 0;
}
