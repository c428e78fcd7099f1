/*
 * bins-proto.c - what a line-local layout would cost the quotient kind's add:
 * one growth cycle of a table of 64-byte bins, timed beside amq's blocked add.
 *
 *   bins-proto [--n N] [--turns T] [--rewrites R]
 *
 * The quotient kind's add shifts a run's cluster over 3.5 lines at its 86 to 95 %
 * load and rewrites 11 entries an add at 16 to 18 ns each (docs/expandable.md,
 * "What the missed lines need").  A bin here is a pocket dictionary in one line
 * (the prefix filter's, Even, Even and Morrison, VLDB 2022): 28 buckets, 28
 * 16-bit entries and a 64-bit unary map of the buckets' counts; a key's bucket
 * is range-reduced (h * m >> 64, m = 28 bins) as the kind's slot is, and its
 * entry holds h's 15 bits after the top floor(log2 m), with the kind's unary
 * length marker, so that a table grown by 1.1 is written from the old one alone
 * in one pass, in key order.  An add writes its bin's line only; a key whose
 * bin is full goes to a spare, here a sorted list (a model: its memory is not
 * counted, its write is one random line's).  Measured at N keys: the add from
 * 0.95 / 1.1 of the bins' slots to 0.95 (one growth cycle's placements), the
 * rewrite into a table 1.1x larger per entry, the share of keys in the spare,
 * every key checked present in the rewritten table (after R rewrites in a row
 * with --rewrites R, so that entries lose bits at powers of two), the rate on
 * a million keys never added, and amq's blocked filter
 * sized for N taking the same number of adds, by turns in this process; times
 * are the process's CPU time (a wait for a core on a shared machine is not
 * counted, a wait for memory is).
 * Measurement only: not in libamq.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BENCH_NAME "bins-proto"
#include "bench_common.h" /* mix, now_s, key, make_at */

#define SLOTS 28u
#define BUCKETS 28u
#define M56 ((UINT64_C(1) << 56) - 1u)
#define FULL_FLAG (UINT64_C(1) << 63) /* a key of this bin went to the spare */
#define TOP_LOAD 0.95
#define GROWTH 1.1
#define RING 16u

typedef struct {
    uint64_t map; /* bucket j's count as that many 1s then a 0, from bit 0 */
    uint16_t e[SLOTS];
} bin;

typedef struct {
    uint64_t g;
    uint16_t v;
} spare_entry;

typedef struct {
    bin *b;
    uint64_t nb, m; /* bins, buckets (28 nb) */
    unsigned k;     /* floor(log2 m): an entry holds h's bits after the top k */
    spare_entry *sp;
    size_t nsp, capsp;
    uint64_t *spare_lines; /* the spare's write, modeled: one line of these per key */
    uint64_t nspare_lines;
} table;

static inline uint64_t mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

static void *lines_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, BENCH_NAME ": %zu bytes: out of memory\n", bytes);
        exit(1);
    }
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static void table_init(table *t, uint64_t nb)
{
    memset(t, 0, sizeof *t);
    t->nb = nb;
    t->m = nb * BUCKETS;
    t->k = 63u - (unsigned)__builtin_clzll(t->m);
    t->b = lines_alloc(nb * sizeof(bin));
    t->nspare_lines = nb / 16u + 1u;
    t->spare_lines = lines_alloc(t->nspare_lines * 64u);
}

static void table_free(table *t)
{
    munmap(t->b, t->nb * sizeof(bin));
    munmap(t->spare_lines, t->nspare_lines * 64u);
    free(t->sp);
}

static void spare_push(table *t, uint64_t g, uint16_t v)
{
    if (t->nsp == t->capsp) {
        t->capsp = t->capsp ? 2 * t->capsp : 1024;
        t->sp = realloc(t->sp, t->capsp * sizeof *t->sp);
        if (t->sp == NULL) {
            fprintf(stderr, BENCH_NAME ": spare: out of memory\n");
            exit(1);
        }
    }
    t->sp[t->nsp].g = g;
    t->sp[t->nsp++].v = v;
}

static int spare_cmp(const void *a, const void *b)
{
    const spare_entry *x = a, *y = b;
    return x->g < y->g ? -1 : x->g > y->g;
}

/* The entry of h in a table of level k: h's 15 bits after its top k, marked. */
static inline uint16_t entry_of(uint64_t h, unsigned k)
{
    return (uint16_t)((1u << 15) | (uint32_t)((h << k) >> 49));
}

static inline int entry_hits(uint16_t v, uint64_t h, unsigned k)
{
    const unsigned len = 31u - (unsigned)__builtin_clz(v);
    return len == 0 || ((h << k) >> (64u - len)) == (uint64_t)(v ^ (1u << len));
}

/* Places v in bucket j of bin b; 0 when the bin is full. */
static inline int bin_put(bin *b, unsigned j, uint16_t v)
{
    const uint64_t map = b->map & M56;
    const unsigned n = (unsigned)__builtin_popcountll(map);
    uint64_t pe, low;
    unsigned i;
    if (n >= SLOTS)
        return 0;
    pe = (uint64_t)__builtin_ctzll(_pdep_u64(UINT64_C(1) << j, ~map & M56)); /* j-th 0 */
    i = (unsigned)pe - j;
    memmove(&b->e[i + 1], &b->e[i], (n - i) * sizeof b->e[0]);
    b->e[i] = v;
    low = (UINT64_C(1) << pe) - 1u;
    b->map = (b->map & ~M56) | (map & low) | (UINT64_C(1) << pe) | ((map & ~low) << 1);
    return 1;
}

static inline void add_hash(table *t, uint64_t h)
{
    const uint64_t g = mulhi(h, t->m);
    bin *b = t->b + g / BUCKETS;
    const uint16_t v = entry_of(h, t->k);
    if (!bin_put(b, (unsigned)(g % BUCKETS), v)) {
        b->map |= FULL_FLAG;
        t->spare_lines[mulhi(mix(g), t->nspare_lines) * 8u] |= 1u; /* the spare's line */
        spare_push(t, g, v);
    }
}

static int has_hash(const table *t, uint64_t h)
{
    const uint64_t g = mulhi(h, t->m);
    const bin *b = t->b + g / BUCKETS;
    const unsigned j = (unsigned)(g % BUCKETS);
    const uint64_t z = ~b->map & M56;
    const unsigned pe = (unsigned)__builtin_ctzll(_pdep_u64(UINT64_C(1) << j, z));
    const unsigned ps = j ? (unsigned)__builtin_ctzll(_pdep_u64(UINT64_C(1) << (j - 1), z)) + 1u
                          : 0u;
    unsigned i;
    size_t lo = 0, hi = t->nsp;
    for (i = ps - j; i < pe - j; i++)
        if (entry_hits(b->e[i], h, t->k))
            return 1;
    if (!(b->map & FULL_FLAG))
        return 0;
    while (lo < hi) { /* the spare, sorted by bucket */
        const size_t mid = (lo + hi) / 2;
        if (t->sp[mid].g < g)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < t->nsp && t->sp[lo].g == g; lo++)
        if (entry_hits(t->sp[lo].v, h, t->k))
            return 1;
    return 0;
}

/* ---- the rewrite into a larger table, in one pass ------------------------------------------ */

typedef struct {
    table *t;
    uint64_t bin_at; /* the bin being written */
    unsigned bucket; /* its bucket being written */
    unsigned pos, n; /* its map's next bit, its entries */
    bin cur;
} writer;

static void writer_flush(writer *w)
{
    w->t->b[w->bin_at] = w->cur; /* the buckets after the last written are empty: 0 bits */
    memset(&w->cur, 0, sizeof w->cur);
    w->bin_at++;
    w->bucket = 0;
    w->pos = w->n = 0;
}

static inline void writer_put(writer *w, uint64_t g, uint16_t v)
{
    const uint64_t nb = g / BUCKETS;
    const unsigned j = (unsigned)(g - nb * BUCKETS);
    while (w->bin_at < nb)
        writer_flush(w);
    w->pos += j - w->bucket; /* a 0 ends each bucket passed */
    w->bucket = j;
    if (w->n < SLOTS) {
        w->cur.map |= UINT64_C(1) << w->pos++;
        w->cur.e[w->n++] = v;
    } else {
        w->cur.map |= FULL_FLAG;
        spare_push(w->t, g, v);
    }
}

typedef struct {
    uint64_t g;
    uint16_t v;
} placed;

/* Entry v of bucket [lo, hi1] of a table of level k, placed for a table of m2
 * buckets and level k2 >= k: each of the (at most two) cells of 2^-k the
 * bucket meets gives a candidate range of h, and each range that meets the
 * bucket goes to the new buckets it meets, its entry shortened to level k2. */
static inline unsigned replace(uint64_t lo, uint64_t hi1, unsigned k, uint16_t v, uint64_t m2,
                               unsigned k2, placed *out)
{
    const unsigned len = 31u - (unsigned)__builtin_clz(v);
    const uint64_t bits = v ^ (1u << len);
    const unsigned sh = 64u - k - len; /* at most 60: m >= 28 */
    const uint64_t off = bits << sh, size1 = (UINT64_C(1) << sh) - 1u;
    const int len2 = (int)len - (int)(k2 - k);
    uint64_t t = lo >> (64u - k), s = (t << (64u - k)) | off;
    unsigned no = 0, c;
    for (c = 0; c < 2; c++, t++, s += UINT64_C(1) << (64u - k)) {
        const uint64_t e = s + size1;
        uint64_t g1, g2, g;
        uint16_t v2;
        if ((c == 1 && (t >> k) != 0) || s > hi1)
            break; /* past the top of h, or past the bucket */
        if (e < lo)
            continue;
        g1 = mulhi(s > lo ? s : lo, m2);
        g2 = mulhi(e < hi1 ? e : hi1, m2);
        if (len2 <= 0)
            v2 = 1; /* no bit left: the whole bucket (the kind's void lane and deep range) */
        else
            v2 = (uint16_t)((1u << len2) | (((t << len) | bits) & ((UINT64_C(1) << len2) - 1u)));
        for (g = g1; g <= g2; g++) {
            out[no].g = g;
            out[no++].v = v2;
        }
    }
    return no;
}

/* The old table t written into dst (initialized, empty) in one pass; the
 * spare's entries merged in at their buckets. */
static void rewrite(const table *t, table *dst)
{
    const unsigned __int128 one = (unsigned __int128)1 << 64;
    const uint64_t q0 = (uint64_t)(one / t->m), r0 = (uint64_t)(one % t->m);
    uint64_t q = 0, r = 0, lo = 0, ob; /* q, r: g 2^64 / m; lo: bucket g's first h */
    size_t si = 0;
    writer w;
    placed buf[4 * (SLOTS + 8)];
    const uint64_t cell = UINT64_C(1) << (64u - t->k);
    const int same_k = dst->k == t->k; /* entries keep their bits */
    memset(&w, 0, sizeof w);
    w.t = dst;
    for (ob = 0; ob < t->nb; ob++) {
        const bin *b = t->b + ob;
        uint64_t map = b->map & M56;
        unsigned j, e = 0;
        for (j = 0; j < BUCKETS; j++) {
            const uint64_t g = ob * BUCKETS + j;
            uint64_t hi1;
            unsigned np = 0, nrun, x;
            q += q0;
            r += r0;
            if (r >= t->m) {
                r -= t->m;
                q++;
            }
            hi1 = q + (r != 0) - 1u; /* the next bucket's first h, less one (the last: 2^64 - 1) */
            nrun = (unsigned)__builtin_ctzll(~map); /* bucket j's count */
            map >>= nrun + 1u;
            for (; nrun > 0; nrun--, e++) {
                /* the usual entry: one cell's range, inside the bucket, in one new bucket */
                const uint16_t v = b->e[e];
                const unsigned len = 31u - (unsigned)__builtin_clz(v), sh = 64u - t->k - len;
                const uint64_t s1 = (lo & ~(cell - 1u)) | ((uint64_t)(v ^ (1u << len)) << sh);
                /* a bucket meets two cells about half the time: the later one's, without a
                 * branch (a range that straddles lo takes the general path) */
                const uint64_t s0 = s1 + (cell & (uint64_t)-(int64_t)(s1 < lo));
                const uint64_t end = s0 + ((UINT64_C(1) << sh) - 1u);
                const uint64_t g2 = mulhi(s0, dst->m);
                if (same_k && len > 0 && s0 >= lo && end <= hi1 && mulhi(end, dst->m) == g2) {
                    buf[np].g = g2;
                    buf[np++].v = v;
                } else {
                    np += replace(lo, hi1, t->k, v, dst->m, dst->k, buf + np);
                }
            }
            for (; si < t->nsp && t->sp[si].g == g; si++)
                if (np <= sizeof buf / sizeof buf[0] - 4) /* else dropped: the check says */
                    np += replace(lo, hi1, t->k, t->sp[si].v, dst->m, dst->k, buf + np);
            for (x = 1; x < np; x++) { /* in bucket order: a few entries, nearly sorted */
                const placed p = buf[x];
                unsigned y = x;
                for (; y > 0 && buf[y - 1].g > p.g; y--)
                    buf[y] = buf[y - 1];
                buf[y] = p;
            }
            for (x = 0; x < np; x++)
                writer_put(&w, buf[x].g, buf[x].v);
            lo = hi1 + 1u;
        }
    }
    while (w.bin_at < dst->nb)
        writer_flush(&w);
}

/* ---- the run -------------------------------------------------------------------------------- */

/* The process's CPU time: the machine is shared, and a wait for a core is not the code's. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void add_range(table *t, uint64_t from, uint64_t to)
{
    uint64_t i, ring[RING];
    for (i = from; i < to && i < from + RING; i++) {
        ring[i % RING] = key(i, 1);
        __builtin_prefetch(t->b + mulhi(ring[i % RING], t->m) / BUCKETS, 1);
    }
    for (i = from; i < to; i++) {
        const uint64_t h = ring[i % RING];
        if (i + RING < to) {
            ring[i % RING] = key(i + RING, 1);
            __builtin_prefetch(t->b + mulhi(ring[i % RING], t->m) / BUCKETS, 1);
        }
        add_hash(t, h);
    }
}

int main(int argc, char **argv)
{
    uint64_t n = 100000000, lo_n, i, nb, missing = 0;
    int turns = 2, rewrites = 1, a, turn;
    double t_add = 1e30, t_blk = 1e30, t_rw = 1e30, spare_share = 0, fpp = 0, bits = 0;
    uint64_t moved = 0, flagged = 0;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--n") && a + 1 < argc)
            n = (uint64_t)strtod(argv[++a], NULL);
        else if (!strcmp(argv[a], "--turns") && a + 1 < argc)
            turns = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--rewrites") && a + 1 < argc)
            rewrites = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: bins-proto [--n N] [--turns T] [--rewrites R]\n");
            return 2;
        }
    }
    if (n < 10000 || turns < 1 || rewrites < 1 || rewrites > 100) {
        fprintf(stderr, BENCH_NAME ": --n at least 10000, --turns at least 1, --rewrites 1 "
                        "to 100\n");
        return 2;
    }
    nb = (uint64_t)((double)n / (TOP_LOAD * SLOTS)) + 1u;
    lo_n = (uint64_t)((double)n / GROWTH);
    for (turn = 0; turn < turns; turn++) {
        table t, t2;
        amq_filter *f;
        double s;
        table_init(&t, nb);
        add_range(&t, 0, lo_n); /* the table just after a growth */
        s = cpu_s();
        add_range(&t, lo_n, n); /* one cycle's placements, to the 95 % of the next growth */
        s = cpu_s() - s;
        if (s < t_add)
            t_add = s;
        qsort(t.sp, t.nsp, sizeof t.sp[0], spare_cmp);
        spare_share = (double)t.nsp / (double)n;
        flagged = 0;
        for (i = 0; i < t.nb; i++)
            flagged += (t.b[i].map & FULL_FLAG) != 0;

        f = make_at(AMQ_KIND_BLOCKED, n, 0, 0.01);
        fill(f, 0, lo_n);
        s = cpu_s();
        fill(f, lo_n, n);
        s = cpu_s() - s;
        if (s < t_blk)
            t_blk = s;
        amq_filter_free(f);

        table_init(&t2, (uint64_t)((double)nb * GROWTH) + 1u);
        s = cpu_s();
        rewrite(&t, &t2);
        s = cpu_s() - s;
        if (s < t_rw)
            t_rw = s;
        moved = 0;
        for (i = 0; i < t.nb; i++)
            moved += (uint64_t)__builtin_popcountll(t.b[i].map & M56);
        moved += t.nsp;
        bits = (double)t.nb * 512.0 / (double)n;
        table_free(&t);
        if (turn == 0) {
            int r;
            for (r = 1; r < rewrites; r++) { /* the rewrite again, across powers of two */
                table t3;
                table_init(&t3, (uint64_t)((double)t2.nb * GROWTH) + 1u);
                rewrite(&t2, &t3);
                table_free(&t2);
                t2 = t3;
            }
            for (i = 0; i < n; i++)
                missing += !has_hash(&t2, key(i, 1));
            for (i = 0; i < 1000000; i++)
                fpp += has_hash(&t2, key(i, 2));
            fpp /= 1e6;
        }
        table_free(&t2);
    }
    {
        const double cycle = (double)(n - lo_n);
        const double place = t_add * 1e9 / cycle, blk = t_blk * 1e9 / cycle;
        const double per_entry = t_rw * 1e9 / (double)moved, per_add = (double)moved / cycle;
        const double model = place + per_entry * per_add;
        printf("bins-proto at %llu keys (%llu bins of %u; best of %d turns)\n",
               (unsigned long long)n, (unsigned long long)nb, SLOTS, turns);
        printf("keys in the spare at %.2f load: %.2f %%; bins that sent one there (whose "
               "queries read it too): %.2f %%\n",
               TOP_LOAD, 100.0 * spare_share, 100.0 * (double)flagged / (double)nb);
        printf("placing, %.3f to %.2f load: %.1f ns an add; amq blocked add, the same keys: "
               "%.1f ns (%.2fx)\n",
               TOP_LOAD / GROWTH, TOP_LOAD, place, blk, place / blk);
        printf("rewrite into %.1fx the bins: %.2f ns an entry, %.2f entries an add: %.1f ns "
               "an add\n",
               GROWTH, per_entry, per_add, per_entry * per_add);
        printf("one cycle, placing and its growth: %.1f ns an add = %.2fx the blocked add\n",
               model, model / blk);
        printf("bits a key in the bins at %.2f load: %.2f (the spare's not counted)\n", TOP_LOAD,
               bits);
        printf("keys absent after %d rewrite%s: %llu of %llu; rate on 1M keys never added: "
               "%.4f %%\n",
               rewrites, rewrites > 1 ? "s" : "", (unsigned long long)missing,
               (unsigned long long)n, 100.0 * fpp);
    }
    return missing != 0;
}
