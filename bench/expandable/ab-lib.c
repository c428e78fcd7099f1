/*
 * ab-lib.c - two builds of libamq in one process, by turns: an A/B whose
 * ratio this VM's swings between processes (10 to 30 %) do not reach.
 *
 *   ab-lib A.so B.so [--kind NAME] [--n N] [--start N] [--chunk N]
 *                    [--rounds R] [--queries Q]
 *
 * Loads each library with dlopen (RTLD_LOCAL: each keeps its own state)
 * and makes one filter of the kind with each (capacity --start, 1,000 by
 * default: a growing kind grows from there), 1 % target, seed 0.  Both
 * filters are grown to --n 8-byte keys (the same keys) in chunks of
 * --chunk, each chunk timed, A and B by turns, the first of each pair
 * alternating (at most 4,096 chunks); then --rounds rounds time --queries one-key queries (half
 * present, half never added, by turns), as many of added keys only and of
 * absent keys only (the two ends of a query's work), and the mixed keys
 * hashed and batched (amq_filter_hash, amq_filter_contains_batch in blocks
 * of 4,096), by turns again.  Prints for the adds, the one-key and the batched queries each
 * build's ns per operation (mean over rounds, and best), B / A of the means
 * and the median of the rounds' paired B / A with their range: a range
 * that straddles 1 is within the noise.  Answers that differ between the
 * two builds are counted and printed (a change meant to keep them must
 * show 0), and whether the two filters, as the adds left them, serialize to
 * the same bytes (a change meant to keep every byte must say identical).
 * --adds batched adds the keys hashed, 4,096 at a time (amq_filter_add_batch),
 * where the default is one at a time.  --growth R (a kind that reports
 * "growing_to_slots": quotient) then adds keys to each filter until a growth is under way, and times, by
 * turns again, the adds that take that growth to its end on R fresh clones
 * of each (every round the same adds on the same bytes): the growth's cost
 * alone, which the chunks' times spread over the adds between growths (but
 * for the first touch of the new table's pages, which the clone made).
 * Public functions only: any two builds of this API.
 *
 * scripts/ab-lib.sh builds an older commit's library and runs this.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "ab-lib"
#include "bench_common.h" /* mix, now_s, key: the keys of the other benches */
#include "bench_dl.h"

#define BLOCK 4096u
#define MAX_ROUNDS 64
#define MAX_CHUNKS 4096

/* Which keys a round's one-key queries ask for. */
enum { MIXED, PRESENT, ABSENT, QUERY_SETS };

typedef struct {
    const char *path;
    void *dl;
    void (*config_init)(amq_config *, uint32_t);
    int (*kind_from_name)(const char *, uint32_t *);
    int (*filter_new)(const amq_config *, amq_filter **, amq_errinfo *);
    void (*filter_free)(amq_filter *);
    int (*add)(amq_filter *, const void *, size_t);
    int (*add_batch)(amq_filter *, const amq_hash128 *, size_t, uint8_t *);
    int (*contains)(const amq_filter *, const void *, size_t);
    amq_hash128 (*hash)(const amq_filter *, const void *, size_t);
    int (*contains_batch)(const amq_filter *, const amq_hash128 *, size_t, uint8_t *);
    int (*clone)(const amq_filter *, const amq_allocator *, amq_filter **);
    int (*describe)(const amq_filter *, amq_field_fn, void *);
    int (*serialized_size)(const amq_filter *, size_t *);
    int (*serialize)(const amq_filter *, void *, size_t, size_t *);
    amq_filter *f;
    uint64_t grow_from, grow_adds; /* --growth: the key its growth began after, its adds */
    double add_s, one_ns[QUERY_SETS][MAX_ROUNDS], batch_ns[MAX_ROUNDS], grow_ns[MAX_ROUNDS];
    double *chunk_ns; /* each chunk's ns an add */
} build;

static void *sym(build *b, const char *name)
{
    return bench_sym(b->dl, b->path, name);
}

static void load(build *b, const char *path)
{
    memset(b, 0, sizeof *b);
    b->path = path;
    b->dl = bench_dlopen(path);
    *(void **)&b->config_init = sym(b, "amq_config_init");
    *(void **)&b->kind_from_name = sym(b, "amq_kind_from_name");
    *(void **)&b->filter_new = sym(b, "amq_filter_new");
    *(void **)&b->filter_free = sym(b, "amq_filter_free");
    *(void **)&b->add = sym(b, "amq_filter_add");
    *(void **)&b->add_batch = sym(b, "amq_filter_add_batch");
    *(void **)&b->contains = sym(b, "amq_filter_contains");
    *(void **)&b->hash = sym(b, "amq_filter_hash");
    *(void **)&b->contains_batch = sym(b, "amq_filter_contains_batch");
    *(void **)&b->clone = sym(b, "amq_filter_clone");
    *(void **)&b->describe = sym(b, "amq_filter_describe");
    *(void **)&b->serialized_size = sym(b, "amq_filter_serialized_size");
    *(void **)&b->serialize = sym(b, "amq_filter_serialize");
}

/* Do the two builds' filters serialize to the same bytes?  (A change that should keep every
 * byte, as the order of an add's fetches, is checked so; the filters as the adds left them,
 * pending keys included.)  The answer into msg. */
static void compare_bytes(build *ab, char *msg, size_t cap)
{
    size_t len[2], w, at;
    uint8_t *buf[2] = {NULL, NULL};
    int v;
    for (v = 0; v < 2; v++)
        if (ab[v].serialized_size(ab[v].f, &len[v]) != AMQ_OK || (buf[v] = malloc(len[v])) == NULL ||
            ab[v].serialize(ab[v].f, buf[v], len[v], &w) != AMQ_OK || w != len[v]) {
            snprintf(msg, cap, "bytes: not compared (%s could not serialize)", v ? "B" : "A");
            goto done;
        }
    if (len[0] != len[1]) {
        snprintf(msg, cap, "bytes: differ in size (%zu and %zu)", len[0], len[1]);
        goto done;
    }
    for (at = 0; at < len[0] && buf[0][at] == buf[1][at]; at++)
        ;
    if (at == len[0])
        snprintf(msg, cap, "bytes: identical (%zu)", len[0]);
    else
        snprintf(msg, cap, "bytes: differ from byte %zu of %zu", at, len[0]);
done:
    free(buf[0]);
    free(buf[1]);
}

typedef struct {
    uint64_t v;
    int found;
} growing;

static int pick_growing(void *ctx, const amq_field *fd)
{
    growing *g = ctx;
    if (strcmp(fd->name, "growing_to_slots") == 0) {
        g->v = fd->u64;
        g->found = 1;
    }
    return 0;
}

/* Is a growth under way in f?  (Exits when the kind does not say.) */
static int is_growing(const build *b, const amq_filter *f)
{
    growing g = {0, 0};
    (void)b->describe(f, pick_growing, &g);
    if (!g.found) {
        fprintf(stderr, "ab-lib: --growth: the kind reports no growing_to_slots\n");
        exit(2);
    }
    return g.v != 0;
}

static void add_one(build *b, amq_filter *f, uint64_t i)
{
    const uint64_t k = key(i, 1);
    if (b->add(f, &k, sizeof k) < 0) {
        fprintf(stderr, "ab-lib: %s: add %llu failed\n", b->path, (unsigned long long)i);
        exit(1);
    }
}

/* Keys from n on into b's filter until a growth is under way; then, on a
 * clone, how many adds take it to its end. */
static void find_growth(build *b, uint64_t n)
{
    amq_filter *c;
    uint64_t i = n;
    while (is_growing(b, b->f)) /* one under way at n: the next one */
        add_one(b, b->f, i++);
    while (!is_growing(b, b->f))
        add_one(b, b->f, i++);
    b->grow_from = i;
    if (b->clone(b->f, NULL, &c) != AMQ_OK)
        exit(1);
    for (; is_growing(b, c); i++)
        add_one(b, c, i);
    b->grow_adds = i - b->grow_from;
    b->filter_free(c);
}

/* The growth's adds on a fresh clone: ns an add. */
static double time_growth(build *b)
{
    amq_filter *c;
    uint64_t i;
    double t;
    if (b->clone(b->f, NULL, &c) != AMQ_OK)
        exit(1);
    t = now_s();
    for (i = b->grow_from; i < b->grow_from + b->grow_adds; i++)
        add_one(b, c, i);
    t = now_s() - t;
    b->filter_free(c);
    return t * 1e9 / (double)b->grow_adds;
}

/* Keys [from, to) added to b's filter, one at a time or, with batched, hashed and added
 * BLOCK at a time (amq_filter_add_batch); the chunk's time kept as chunk c's. */
static void add_chunk(build *b, uint64_t from, uint64_t to, int c, int batched)
{
    static amq_hash128 h[BLOCK];
    uint64_t i, j, k, m;
    double t = now_s();
    for (i = from; i < to; i += m) {
        m = batched ? (to - i < BLOCK ? to - i : BLOCK) : 1u;
        if (!batched) {
            k = key(i, 1);
            if (b->add(b->f, &k, sizeof k) >= 0)
                continue;
        } else {
            for (j = 0; j < m; j++) {
                k = key(i + j, 1);
                h[j] = b->hash(b->f, &k, sizeof k);
            }
            if (b->add_batch(b->f, h, (size_t)m, NULL) >= 0)
                continue;
        }
        fprintf(stderr, "ab-lib: %s: add %llu failed\n", b->path, (unsigned long long)i);
        exit(1);
    }
    t = now_s() - t;
    b->add_s += t;
    b->chunk_ns[c] = t * 1e9 / (double)(to - from);
}

/* Query key j of a round: in MIXED, odd ones added, even ones never. */
static uint64_t query_key(uint64_t j, uint64_t n, uint64_t round, int set)
{
    const int added = set == MIXED ? (int)(j & 1) : set == PRESENT;
    return added ? key(mix(j + round * UINT64_C(0x100000000)) % n, 1)
                 : key(j + round * UINT64_C(0x100000000), 2);
}

static double one_key(build *b, uint64_t q, uint64_t n, uint64_t round, int set, uint8_t *out)
{
    uint64_t j, k;
    double t = now_s();
    for (j = 0; j < q; j++) {
        k = query_key(j, n, round, set);
        out[j] = (uint8_t)b->contains(b->f, &k, sizeof k);
    }
    return (now_s() - t) * 1e9 / (double)q;
}

static double batched(build *b, uint64_t q, uint64_t n, uint64_t round, uint8_t *out)
{
    static amq_hash128 h[BLOCK];
    uint64_t j, i, k, m;
    double t = now_s();
    for (j = 0; j < q; j += m) {
        m = q - j < BLOCK ? q - j : BLOCK;
        for (i = 0; i < m; i++) {
            k = query_key(j + i, n, round, MIXED);
            h[i] = b->hash(b->f, &k, sizeof k);
        }
        b->contains_batch(b->f, h, (size_t)m, out + j);
    }
    return (now_s() - t) * 1e9 / (double)q;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, const double *a, const double *b, int r)
{
    double *q = malloc((size_t)r * sizeof *q), ma = 0, mb = 0, ba = a[0], bb = b[0];
    int i;
    if (q == NULL)
        exit(1);
    for (i = 0; i < r; i++) {
        ma += a[i] / r;
        mb += b[i] / r;
        ba = a[i] < ba ? a[i] : ba;
        bb = b[i] < bb ? b[i] : bb;
        q[i] = b[i] / a[i];
    }
    qsort(q, (size_t)r, sizeof q[0], by_value);
    printf(
        "%-16s A %8.1f ns (best %8.1f)   B %8.1f ns (best %8.1f)   B/A %.3f   paired %.3f [%.3f, "
        "%.3f]\n",
        what, ma, ba, mb, bb, mb / ma, r % 2 ? q[r / 2] : (q[r / 2 - 1] + q[r / 2]) / 2, q[0],
        q[r - 1]);
}

int main(int argc, char **argv)
{
    build ab[2];
    const char *kind_name = "quotient";
    uint64_t n = 10000000, start = 1000, chunk = 1000000, q = 1000000, at, differ = 0, j;
    int rounds = 9, grow_rounds = 0, batched_adds = 0, r, i, v, chunks, set;
    uint32_t kind;
    uint8_t *out[2];
    amq_config cfg;
    amq_errinfo err;
    char bytes_msg[128];

    if (argc < 3) {
        fprintf(stderr, "usage: ab-lib A.so B.so [--kind NAME] [--n N] [--start N] [--chunk N] "
                        "[--rounds R] [--queries Q] [--adds one|batched] [--growth R]\n");
        return 2;
    }
    for (i = 3; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "ab-lib: %s needs a value\n", argv[i]);
            return 2;
        }
        if (strcmp(argv[i], "--kind") == 0)
            kind_name = argv[i + 1];
        else if (strcmp(argv[i], "--n") == 0)
            n = bench_count(argv[i + 1], 1e12);
        else if (strcmp(argv[i], "--start") == 0)
            start = bench_count(argv[i + 1], 1e12);
        else if (strcmp(argv[i], "--chunk") == 0)
            chunk = bench_count(argv[i + 1], 1e12);
        else if (strcmp(argv[i], "--queries") == 0)
            q = bench_count(argv[i + 1], 1e12);
        else if (strcmp(argv[i], "--rounds") == 0) {
            rounds = atoi(argv[i + 1]);
            if (rounds < 1 || rounds > MAX_ROUNDS) {
                fprintf(stderr, "ab-lib: --rounds: 1 to %d\n", MAX_ROUNDS);
                return 2;
            }
        } else if (strcmp(argv[i], "--adds") == 0) {
            if (strcmp(argv[i + 1], "one") != 0 && strcmp(argv[i + 1], "batched") != 0) {
                fprintf(stderr, "ab-lib: --adds: one or batched, not %s\n", argv[i + 1]);
                return 2;
            }
            batched_adds = strcmp(argv[i + 1], "batched") == 0;
        } else if (strcmp(argv[i], "--growth") == 0) {
            grow_rounds = atoi(argv[i + 1]);
            if (grow_rounds < 1 || grow_rounds > MAX_ROUNDS) {
                fprintf(stderr, "ab-lib: --growth: 1 to %d\n", MAX_ROUNDS);
                return 2;
            }
        } else {
            fprintf(stderr, "ab-lib: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    for (v = 0; v < 2; v++) {
        load(&ab[v], argv[1 + v]);
        if (ab[v].kind_from_name(kind_name, &kind) != AMQ_OK) {
            fprintf(stderr, "ab-lib: %s: no kind %s\n", ab[v].path, kind_name);
            return 2;
        }
        ab[v].config_init(&cfg, kind);
        cfg.capacity = start;
        cfg.fpp = 0.01;
        if (ab[v].filter_new(&cfg, &ab[v].f, &err) != AMQ_OK) {
            fprintf(stderr, "ab-lib: %s: %s\n", ab[v].path, err.msg);
            return 1;
        }
        if ((out[v] = malloc(q)) == NULL ||
            (ab[v].chunk_ns = malloc(MAX_CHUNKS * sizeof(double))) == NULL)
            return 1;
    }
    if ((n + chunk - 1) / chunk > MAX_CHUNKS) {
        fprintf(stderr, "ab-lib: more than %d chunks: a larger --chunk\n", MAX_CHUNKS);
        return 2;
    }
    for (at = 0, r = 0; at < n; at += chunk, r++) {
        const uint64_t to = n - at < chunk ? n : at + chunk;
        for (v = 0; v < 2; v++)
            add_chunk(&ab[(v + r) % 2], at, to, r, batched_adds);
    }
    chunks = r;
    compare_bytes(ab, bytes_msg, sizeof bytes_msg);
    for (r = 0; r < rounds; r++) {
        for (set = 0; set < QUERY_SETS; set++) {
            for (v = 0; v < 2; v++) {
                build *b = &ab[(v + r) % 2];
                b->one_ns[set][r] = one_key(b, q, n, (uint64_t)r, set, out[(v + r) % 2]);
            }
            for (j = 0; j < q; j++)
                differ += out[0][j] != out[1][j];
        }
        for (v = 0; v < 2; v++) {
            build *b = &ab[(v + r) % 2];
            b->batch_ns[r] = batched(b, q, n, (uint64_t)r, out[(v + r) % 2]);
        }
        for (j = 0; j < q; j++)
            differ += out[0][j] != out[1][j];
    }
    printf("A %s\nB %s\nkind %s grown from %llu to %llu keys, %d rounds of %llu queries\n",
           ab[0].path, ab[1].path, kind_name, (unsigned long long)start, (unsigned long long)n,
           rounds, (unsigned long long)q);
    printf("add%s: %.1f ns and %.1f ns an add over all chunks (B/A %.3f); per chunk:\n",
           batched_adds ? " (batched)" : "",
           ab[0].add_s * 1e9 / (double)n, ab[1].add_s * 1e9 / (double)n, ab[1].add_s / ab[0].add_s);
    report("add, by chunk", ab[0].chunk_ns, ab[1].chunk_ns, chunks);
    report("one-key query", ab[0].one_ns[MIXED], ab[1].one_ns[MIXED], rounds);
    report(" present keys", ab[0].one_ns[PRESENT], ab[1].one_ns[PRESENT], rounds);
    report(" absent keys", ab[0].one_ns[ABSENT], ab[1].one_ns[ABSENT], rounds);
    report("batched query", ab[0].batch_ns, ab[1].batch_ns, rounds);
    printf("answers that differ: %llu of %llu\n", (unsigned long long)differ,
           (unsigned long long)((QUERY_SETS + 1) * q * (uint64_t)rounds));
    printf("%s, after the adds\n", bytes_msg);
    if (grow_rounds > 0) {
        for (v = 0; v < 2; v++)
            find_growth(&ab[v], n);
        for (r = 0; r < grow_rounds; r++)
            for (v = 0; v < 2; v++)
                ab[(v + r) % 2].grow_ns[r] = time_growth(&ab[(v + r) % 2]);
        printf("growth: A's from key %llu on, %llu adds; B's from key %llu on, %llu adds\n",
               (unsigned long long)ab[0].grow_from, (unsigned long long)ab[0].grow_adds,
               (unsigned long long)ab[1].grow_from, (unsigned long long)ab[1].grow_adds);
        report("growth's adds", ab[0].grow_ns, ab[1].grow_ns, grow_rounds);
    }
    for (v = 0; v < 2; v++) {
        ab[v].filter_free(ab[v].f);
        free(out[v]);
        free(ab[v].chunk_ns);
    }
    return 0;
}
