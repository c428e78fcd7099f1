/*
 * bins-proto.c - what a line-local layout would cost the quotient kind's add:
 * one growth cycle of a table of 64-byte bins, timed beside amq's blocked add.
 *
 *   bins-proto [--n N] [--turns T] [--rewrites R] [--append] [--scalar-rewrite]
 *   bins-proto --grow G [--segments S] [--absent A] [--quotient] [--times-only]
 *              [--entry-bits B] [--n N] [--append] [--scalar-rewrite]
 *
 * The quotient kind's add shifts a run's cluster over 3.5 lines at its 86 to 95 %
 * load and rewrites 11 entries an add at 16 to 18 ns each (docs/expandable.md,
 * "What the missed lines need").  A bin here is a pocket dictionary in one line
 * (the prefix filter's, Even, Even and Morrison, VLDB 2022): 32 buckets, 28
 * 16-bit entries and a 64-bit unary map of the buckets' counts; a key's bucket
 * is range-reduced (h * m >> 64, m = 32 bins) as the kind's slot is, and its
 * entry holds h's 15 bits after the top floor(log2 m), with the kind's unary
 * length marker, so that a table grown by 1.1 is written from the old one alone
 * in one pass, in key order.  An add writes its bin's line only; a full bin
 * keeps its lowest buckets whole (the prefix filter's rule: the last entry of
 * its highest bucket leaves for a key of a lower one) and sends the rest to a
 * spare, here a sorted list (a model: its memory is not counted, its write and
 * a query's read are one random line's), and a query reads the spare only for
 * a bucket at or past the first one that sent an entry there.  Measured at N keys: the add from
 * 0.95 / 1.1 of the bins' slots to 0.95 (one growth cycle's placements), the
 * rewrite into a table 1.1x larger per entry, the share of keys in the spare,
 * every key checked present in the rewritten table (after R rewrites in a row
 * with --rewrites R, so that entries lose bits at powers of two), the rate on
 * a million keys never added (--append: an add puts its entry last in its
 * bucket, not in key order, and the rewrite sorts the rest out), and amq's
 * blocked filter
 * sized for N taking the same number of adds, by turns in this process; times
 * are the process's CPU time (a wait for a core on a shared machine is not
 * counted, a wait for memory is).
 *
 * With --grow G, the layout grown from 1,000 keys to N: one segment, split in
 * two (a relabeling) while small up to S segments (64), a key's by its top
 * bits, each grown by G on its own at 0.95 load into a table G times larger,
 * their sizes staggered (segment i at b0 G^(e + i/S) / S bins) so
 * that they take turns and the whole holds between 0.95 / G and 0.95 of its
 * slots at every key count; a segment's rewrite writes over its own lines (moved
 * up by the growth first), entries of 3 bits or fewer keep a bit of the bucket's (the
 * quotient kind's short entries) and those left with none become exact ranges
 * of h (its deep list).  At every power of ten: bits a key (a spare entry
 * counted at SPARE_BITS), the rate on A keys never added against amq's cuckoo
 * filter sized for that rate, every key checked present, the amortized add;
 * at N, the blocked add (and with --quotient the quotient kind and the
 * RedisBloom-layout scalable Bloom filter grown from 1,000, its one-key
 * query timed) on the same keys in this process.  --entry-bits B (15) reaches short
 * entries and deep ranges in a few doublings, for tests.
 * Measurement only: not in libamq.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MAP_ANONYMOUS, madvise, mremap */
#endif
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#define XXH_INLINE_ALL /* the 8-byte hash inline, as the filters' own query paths have it */
#include <xxhash.h>

#define BENCH_NAME "bins-proto"
#include "bench_common.h" /* mix, now_s, key, make_at */

#define SLOTS 28u
#ifndef BUCKETS
#define BUCKETS 32u /* up to 35: the map holds a bit for each entry and each bucket; more
                     * buckets than entries lower the rate (fewer entries a query meets) */
#endif
_Static_assert(SLOTS + BUCKETS < 64, "a bit left for the spare's cutoff");
#define MAP_MASK ((UINT64_C(1) << (SLOTS + BUCKETS)) - 1u) /* the map's bits */
/* A full bin keeps its lowest buckets whole (the prefix filter's rule): the map's top bits
 * hold d, and only buckets j >= BUCKETS - d may have keys in the spare (every bucket when d
 * is the field's largest value), so that a query of the others (all but one or two buckets
 * of a full bin) reads no second line. */
#define SPARE_SHIFT (SLOTS + BUCKETS)
#define SPARE_ALL ((1u << (64u - SPARE_SHIFT)) - 1u)
#define SPARE_FIELD ((uint64_t)SPARE_ALL << SPARE_SHIFT)

static inline int bin_to_spare(uint64_t map, unsigned j)
{
    const unsigned d = (unsigned)(map >> SPARE_SHIFT);
    return j + (d == SPARE_ALL ? BUCKETS : d) >= BUCKETS;
}

static inline void bin_spare_from(uint64_t *map, unsigned j)
{
    const unsigned d = BUCKETS - j < SPARE_ALL ? BUCKETS - j : SPARE_ALL;
    if (!bin_to_spare(*map, j))
        *map = (*map & ~SPARE_FIELD) | (uint64_t)d << SPARE_SHIFT;
}
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
    uint64_t nb, m; /* bins, buckets (BUCKETS nb) */
    uint64_t q0;    /* floor(2^64 / m): g q0 is within g of bucket g's first h */
    unsigned k;     /* floor(log2 m): an entry holds h's bits after the top k */
    spare_entry *sp;
    size_t nsp, capsp;
    uint64_t (*deep)[2]; /* keys of entries left with no bit: their ranges of h, exactly */
    size_t ndeep, capdeep;
    uint64_t deep_width; /* the widest one's hi - lo */
    size_t nsorted;        /* the spare's first entries, in bucket order (a rewrite's) */
    size_t reserved, spare_reserved; /* the bytes mapped for b and for spare_lines */
    bin *va; /* a grown segment's addresses, its bins at their start (NULL: b's own block) */
    uint64_t *spare_lines; /* the spare's write, modeled: one line of these per key */
    uint64_t nspare_lines;
} table;

static inline uint64_t mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* Small tables from the heap: a grown filter's segments start at a line, and a map and unmap
 * a growth cost more than the growth. */
static size_t small_table = (size_t)1 << 22; /* a grown filter's: 64 KiB */

/* A grown filter's segment past small_table grows in place (seg_grow_in_place): its bins keep
 * a range of addresses (pages touched only as the table reaches them), so that a growth
 * faults its new lines only.  (A map for each rewrite faults and clears every page of it.) */
static int in_place;

static void *lines_alloc(size_t bytes, int zero, size_t *reserved)
{
    void *p;
    *reserved = bytes;
    if (bytes < small_table) {
        p = aligned_alloc(64, (bytes + 63u) & ~(size_t)63u);
        if (p == NULL) {
            fprintf(stderr, BENCH_NAME ": %zu bytes: out of memory\n", bytes);
            exit(1);
        }
        return zero ? memset(p, 0, bytes) : p;
    }
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
             -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, BENCH_NAME ": %zu bytes: out of memory\n", bytes);
        exit(1);
    }
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

/* A table of nb bins at b (their bytes not touched). */
static void table_init_at(table *t, uint64_t nb, bin *b)
{
    memset(t, 0, sizeof *t);
    t->nb = nb;
    t->m = nb * BUCKETS;
    t->k = 63u - (unsigned)__builtin_clzll(t->m);
    t->q0 = (uint64_t)(((unsigned __int128)1 << 64) / t->m);
    t->b = b;
    t->nspare_lines = nb / 16u + 1u;
    t->spare_lines = lines_alloc(t->nspare_lines * 64u, 1, &t->spare_reserved);
}

/* A table of nb bins; a rewrite's (zero 0) has its bins written by the writer, all of
 * them, and is not cleared first. */
static void table_init_as(table *t, uint64_t nb, int zero)
{
    size_t reserved;
    bin *b = lines_alloc(nb * sizeof(bin), zero, &reserved);
    table_init_at(t, nb, b);
    t->reserved = reserved;
}

static void table_init(table *t, uint64_t nb)
{
    table_init_as(t, nb, 1);
}

static void lines_free(void *p, size_t bytes, size_t reserved)
{
    if (bytes < small_table)
        free(p);
    else
        munmap(p, reserved);
}

/* All but the bins (a growth in place keeps them). */
static void table_free_rest(table *t)
{
    lines_free(t->spare_lines, t->nspare_lines * 64u, t->spare_reserved);
    free(t->sp);
    free(t->deep);
}

static void table_free(table *t)
{
    if (t->va != NULL)
        munmap(t->va, t->reserved);
    else
        lines_free(t->b, t->nb * sizeof(bin), t->reserved);
    table_free_rest(t);
}

/* An array of *cap elements of `size` bytes doubled (or made `first` long). */
static void *grow_array(void *p, size_t *cap, size_t first, size_t size, const char *what)
{
    *cap = *cap ? 2 * *cap : first;
    if ((p = realloc(p, *cap * size)) == NULL) {
        fprintf(stderr, BENCH_NAME ": %s: out of memory\n", what);
        exit(1);
    }
    return p;
}

static void spare_push(table *t, uint64_t g, uint16_t v)
{
    if (t->nsp >= 2u * t->m + 1024u) { /* more than the keys: a bug, not a spare */
        fprintf(stderr, BENCH_NAME ": the spare passed twice the buckets (%llu bins): stopped\n",
                (unsigned long long)t->nb);
        exit(1);
    }
    if (t->nsp == t->capsp)
        t->sp = grow_array(t->sp, &t->capsp, 1024, sizeof *t->sp, "spare");
    t->sp[t->nsp].g = g;
    t->sp[t->nsp++].v = v;
}

/* An entry that a growth leaves with no bit: kept as its range of h, exactly.  As a
 * bucket-wide entry it would stand for every key of its bucket, then of every new
 * bucket the old one meets, nearly twice the keys at each growth. */
static void deep_push(table *t, uint64_t lo, uint64_t hi)
{
    if (t->ndeep == t->capdeep)
        t->deep = grow_array(t->deep, &t->capdeep, 64, sizeof *t->deep, "deep ranges");
    t->deep[t->ndeep][0] = lo;
    t->deep[t->ndeep++][1] = hi;
    if (hi - lo > t->deep_width)
        t->deep_width = hi - lo;
}

static int deep_cmp(const void *a, const void *b) /* by start, then end: a canonical order */
{
    const uint64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

static int u64_cmp(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Does a deep range of t hold h?  (Sorted by their starts; none wider than deep_width.) */
static int deep_has(const table *t, uint64_t h)
{
    size_t lo = 0, hi = t->ndeep;
    while (lo < hi) { /* the first range starting past h */
        const size_t mid = (lo + hi) / 2;
        if (t->deep[mid][0] <= h)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo > 0 && h - t->deep[lo - 1][0] <= t->deep_width; lo--)
        if (h <= t->deep[lo - 1][1])
            return 1;
    return 0;
}

static int spare_cmp(const void *a, const void *b)
{
    const spare_entry *x = a, *y = b;
    return x->g < y->g ? -1 : x->g > y->g;
}

/* n spare entries of a table of m buckets sorted by bucket, stably: 11 bits at a time
 * from the low ones (a comparison sort's calls cost an add 20 ns). */
static void spare_radix(spare_entry *e, size_t n, uint64_t m)
{
    spare_entry *tmp, *from = e, *to;
    unsigned shift, bits = 64u - (unsigned)__builtin_clzll(m | 1u);
    if (n < 64) {
        qsort(e, n, sizeof *e, spare_cmp);
        return;
    }
    if ((tmp = malloc(n * sizeof *tmp)) == NULL) {
        fprintf(stderr, BENCH_NAME ": spare: out of memory\n");
        exit(1);
    }
    to = tmp;
    for (shift = 0; shift < bits; shift += 11) {
        size_t count[2048] = {0}, i, at = 0;
        spare_entry *sw;
        for (i = 0; i < n; i++)
            count[(from[i].g >> shift) & 2047u]++;
        for (i = 0; i < 2048; i++) {
            const size_t c = count[i];
            count[i] = at;
            at += c;
        }
        for (i = 0; i < n; i++)
            to[count[(from[i].g >> shift) & 2047u]++] = from[i];
        sw = from;
        from = to;
        to = sw;
    }
    if (from != e)
        memcpy(e, from, n * sizeof *e);
    free(tmp);
}

/* The spare in bucket order: the adds' entries since the rewrite sorted and merged into
 * the rewrite's, which are in order already (a real spare keeps them so). */
static void spare_sort(table *t)
{
    spare_entry *m, *a = t->sp, *b = t->sp + t->nsorted;
    size_t na = t->nsorted, nb = t->nsp - t->nsorted, i = 0, j = 0, o = 0;
    if (nb == 0)
        return;
    spare_radix(b, nb, t->m);
    if (na > 0 && a[na - 1].g > b[0].g) {
        if ((m = malloc(t->nsp * sizeof *m)) == NULL) {
            fprintf(stderr, BENCH_NAME ": spare: out of memory\n");
            exit(1);
        }
        while (i < na && j < nb) /* stably: a bucket's rewritten entries first */
            m[o++] = b[j].g < a[i].g ? b[j++] : a[i++];
        while (i < na)
            m[o++] = a[i++];
        while (j < nb)
            m[o++] = b[j++];
        memcpy(t->sp, m, t->nsp * sizeof *m);
        free(m);
    }
    t->nsorted = t->nsp;
}

static unsigned entry_bits = 15; /* --entry-bits: fewer, to reach short and void entries
                                  * (the deep ranges) in a test's few doublings */

/* The entry of h in a table of level k: h's entry_bits bits after its top k, marked. */
static inline uint16_t entry_of(uint64_t h, unsigned k)
{
    return (uint16_t)((1u << entry_bits) | (uint32_t)((h << k) >> (64u - entry_bits)));
}

/* Entries of SHORT bits or fewer hold h's bits from bit k - 1 (one of the bucket's), which
 * tells apart the two cells of 2^-k a bucket may meet; longer ones, from bit k. */
#define SHORT 3u

static inline int entry_hits(uint16_t v, uint64_t h, unsigned k)
{
    const unsigned len = 31u - (unsigned)__builtin_clz(v);
    const unsigned from = len <= SHORT ? k - 1u : k;
    return len == 0 || ((h << from) >> (64u - len)) == (uint64_t)(v ^ (1u << len));
}

/* The place of x's j-th 1 (x has more than j). */
static inline unsigned select1(uint64_t x, unsigned j)
{
#ifdef __BMI2__
    return (unsigned)__builtin_ctzll(_pdep_u64(UINT64_C(1) << j, x));
#else
    for (; j > 0; j--)
        x &= x - 1u;
    return (unsigned)__builtin_ctzll(x);
#endif
}

/* Places v in bucket j of bin b, after the bucket's first `rank` entries
 * (UINT32_MAX: after all of them); 0 when the bin is full. */
static inline int bin_put_at(bin *b, unsigned j, uint16_t v, unsigned rank)
{
    const uint64_t map = b->map & MAP_MASK, z = ~map & MAP_MASK;
    const unsigned n = (unsigned)__builtin_popcountll(map);
    const unsigned pe = select1(z, j); /* j-th 0 */
    const unsigned ps = j ? select1(z, j - 1u) + 1u
                          : 0u;
    const unsigned i = pe - j - (pe - ps) + (rank < pe - ps ? rank : pe - ps);
    uint64_t low;
    if (n >= SLOTS)
        return 0;
#ifdef __AVX512BW__
    {
        /* the line as 32 lanes (the map in lanes 0 to 3): entries from i on one lane up,
         * v in lane 4 + i, in registers (a memmove's call cost more than the add) */
        const __m512i up = _mm512_set_epi16(30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
                                            17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
                                            2, 1, 0, 0);
        __m512i line = _mm512_loadu_si512((const void *)b);
        line = _mm512_mask_mov_epi16(line, (__mmask32)(UINT64_C(0xffffffff) << (5u + i)),
                                     _mm512_permutexvar_epi16(up, line));
        line = _mm512_mask_set1_epi16(line, (__mmask32)(UINT32_C(1) << (4u + i)), (short)v);
        _mm512_storeu_si512((void *)b, line);
    }
#else
    memmove(&b->e[i + 1], &b->e[i], (n - i) * sizeof b->e[0]);
    b->e[i] = v;
#endif
    low = (UINT64_C(1) << pe) - 1u;
    b->map = (b->map & ~MAP_MASK) | (map & low) | (UINT64_C(1) << pe) | ((map & ~low) << 1);
    return 1;
}

/* An add keeps each bucket's entries in the order of their ranges of h
 * (their 15 bits' distance from the bucket's start within its cell, counted
 * for all of them at once), so that the rewrite meets them in key order and
 * writes the new table in one pass; an order wrong for an entry of an older
 * generation's length costs the rewrite time, not an answer. */
static int append_only; /* --append: an add puts its entry last in its bucket */
static int vec_rewrite = 1; /* --scalar-rewrite: 0 */

static inline void add_hash(table *t, uint64_t h)
{
    const uint64_t g = mulhi(h, t->m);
    bin *b = t->b + g / BUCKETS;
    const unsigned j = (unsigned)(g % BUCKETS);
    const uint16_t v = entry_of(h, t->k);
    const uint64_t z = ~b->map & MAP_MASK;
    const unsigned pe = select1(z, j);
    const unsigned ps = j ? select1(z, j - 1u) + 1u
                          : 0u;
    const uint16_t emask = (uint16_t)((1u << entry_bits) - 1u);
    const uint16_t lo15 = (uint16_t)(((g * t->q0) << t->k) >> (64u - entry_bits)); /* its start */
    const uint16_t key = (uint16_t)((v - lo15) & emask);
    unsigned rank = UINT32_MAX;
    if (!append_only) {
#ifdef __AVX512BW__
        const __mmask32 in = (__mmask32)(((UINT64_C(1) << (pe - ps)) - 1u) << (ps - j));
        const __m512i d = _mm512_and_si512(
            _mm512_sub_epi16(_mm512_maskz_loadu_epi16(in, b->e), _mm512_set1_epi16((short)lo15)),
            _mm512_set1_epi16((short)emask));
        rank = (unsigned)__builtin_popcount(
            _mm512_mask_cmplt_epu16_mask(in, d, _mm512_set1_epi16((short)key)));
#else
        unsigned i;
        for (rank = 0, i = ps - j; i < pe - j; i++)
            rank += ((b->e[i] - lo15) & emask) < key;
#endif
    }
    if (!bin_put_at(b, j, v, rank)) {
        /* the bin's last entry (of its highest bucket, hb) leaves for v when hb > j */
        const unsigned p = 63u - (unsigned)__builtin_clzll(b->map & MAP_MASK);
        const unsigned hb = p - (SLOTS - 1u);
        uint64_t gs = g;
        uint16_t vs = v;
        if (hb > j) {
            gs = g - j + hb;
            vs = b->e[SLOTS - 1u];
            b->map &= ~(UINT64_C(1) << p); /* the 0s above it end empty buckets */
            (void)bin_put_at(b, j, v, rank);
        }
        bin_spare_from(&b->map, (unsigned)(gs % BUCKETS));
        t->spare_lines[mulhi(mix(gs), t->nspare_lines) * 8u] |= 1u; /* the spare's line */
        spare_push(t, gs, vs);
    }
}

static int has_hash(const table *t, uint64_t h)
{
    const uint64_t g = mulhi(h, t->m);
    const bin *b = t->b + g / BUCKETS;
    const unsigned j = (unsigned)(g % BUCKETS);
    const uint64_t z = ~b->map & MAP_MASK;
    const unsigned pe = select1(z, j);
    const unsigned ps = j ? select1(z, j - 1u) + 1u
                          : 0u;
    unsigned i;
    size_t lo = 0, hi = t->nsp;
    for (i = ps - j; i < pe - j; i++)
        if (entry_hits(b->e[i], h, t->k))
            return 1;
    if (!bin_to_spare(b->map, j))
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
    return deep_has(t, h);
}

/* ---- the rewrite into a larger table, in one pass ------------------------------------------ */

typedef struct {
    table *t;
    uint64_t bin_at; /* the bin being written */
    uint64_t g0;     /* its first bucket */
    unsigned bucket; /* its bucket being written */
    unsigned pos, n; /* its map's next bit, its entries */
    unsigned run;    /* the entries of its bucket being written */
    bin cur;
    uint64_t seen_g; /* the new bucket of the places below */
    unsigned nseen;
    uint16_t seen[16]; /* places the general way put in bucket seen_g */
} writer;

static void writer_to(writer *w, uint64_t nb)
{
    w->t->b[w->bin_at] = w->cur; /* the buckets after the last written are empty: 0 bits */
    memset(&w->cur, 0, sizeof w->cur);
    if (nb > w->bin_at + 1u) /* the bins between are empty */
        memset(w->t->b + w->bin_at + 1u, 0, (nb - w->bin_at - 1u) * sizeof(bin));
    w->bin_at = nb;
    w->g0 = nb * BUCKETS;
    w->bucket = 0;
    w->pos = w->n = w->run = 0;
}

static void writer_overflow(writer *w, bin *b, uint64_t g, uint16_t v)
{
    bin_spare_from(&b->map, (unsigned)(g % BUCKETS));
    spare_push(w->t, g, v);
}

/* An entry of the bucket before the one being written: an old bucket's
 * entries are in the order they came, and its range meets two new buckets
 * about every time, so this is common and kept short. */
static void writer_put_back(writer *w, uint64_t g, uint16_t v)
{
    const unsigned at = w->pos - w->run - 1u; /* the 0 that ends bucket g */
    const uint64_t low = (UINT64_C(1) << at) - 1u;
    if (w->n >= SLOTS) {
        writer_overflow(w, &w->cur, g, v);
        return;
    }
    w->cur.map = (w->cur.map & (low | SPARE_FIELD)) | (UINT64_C(1) << at) |
                 (((w->cur.map & MAP_MASK) & ~low) << 1);
    memmove(&w->cur.e[w->n - w->run + 1], &w->cur.e[w->n - w->run], w->run * sizeof(uint16_t));
    w->cur.e[w->n - w->run] = v;
    w->n++;
    w->pos++;
}

/* Entry v into bucket g of the new table, out of key order: placed where it belongs. */
__attribute__((noinline)) static void writer_put_slow(writer *w, uint64_t g, uint16_t v)
{
    if (g + 1u == w->g0 + w->bucket && w->bucket > 0) {
        writer_put_back(w, g, v);
    } else if (g >= w->g0) {
        if (bin_put_at(&w->cur, (unsigned)(g - w->g0), v, UINT32_MAX)) {
            w->pos++;
            w->n++;
        } else {
            writer_overflow(w, &w->cur, g, v);
        }
    } else if (!bin_put_at(w->t->b + g / BUCKETS, (unsigned)(g % BUCKETS), v, UINT32_MAX)) {
        writer_overflow(w, w->t->b + g / BUCKETS, g, v);
    }
}

__attribute__((noinline)) static void writer_next_bucket(writer *w, uint64_t g)
{
    if (g >= w->g0 + BUCKETS)
        writer_to(w, g / BUCKETS);
    w->pos += (unsigned)(g - w->g0) - w->bucket; /* a 0 ends each bucket passed */
    w->bucket = (unsigned)(g - w->g0);
    w->run = 0;
}

/* Entry v into bucket g of the new table: in key order, appended (the
 * usual case, inline); else placed where it belongs. */
static inline __attribute__((always_inline)) void writer_put(writer *w, uint64_t g, uint16_t v)
{
    if (__builtin_expect(g != w->g0 + w->bucket, 0)) {
        if (g < w->g0 + w->bucket) {
            writer_put_slow(w, g, v);
            return;
        }
        writer_next_bucket(w, g);
    }
    if (__builtin_expect(w->n < SLOTS, 1)) {
        w->cur.map |= UINT64_C(1) << w->pos++;
        w->cur.e[w->n++] = v;
        w->run++;
    } else {
        writer_overflow(w, &w->cur, g, v);
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
                               unsigned k2, placed *out, table *deep_to)
{
    const unsigned len = 31u - (unsigned)__builtin_clz(v);
    const uint64_t bits = v ^ (1u << len);
    uint64_t r[2][2]; /* the ranges of h the entry stands for, in the bucket */
    unsigned p, nr = 0, no = 0, i;
    if (len == 0) { /* a whole bucket (no entry is left so: they go to the deep ranges) */
        r[0][0] = lo;
        r[0][1] = hi1;
        nr = 1;
        p = 0;
    } else if (len <= SHORT) { /* from bit k - 1: its cell is the one whose last bit it has */
        const uint64_t c = lo >> (64u - k);
        const uint64_t top = (c & 1u) == (bits >> (len - 1u)) ? c : c + 1u;
        p = k + len - 1u;
        r[0][0] = ((top << (len - 1u)) | (bits & ((UINT64_C(1) << (len - 1u)) - 1u)))
                  << (64u - p);
        r[0][1] = r[0][0] + ((UINT64_C(1) << (64u - p)) - 1u);
        nr = !(r[0][1] < lo || r[0][0] > hi1) && (top >> k) == 0;
    } else { /* from bit k: a cell the bucket meets (at most two) */
        const unsigned sh = 64u - k - len; /* at most 60: m >= 28 */
        uint64_t t = lo >> (64u - k);
        unsigned c;
        p = k + len;
        for (c = 0; c < 2; c++, t++) {
            const uint64_t s = (t << (64u - k)) | (bits << sh);
            if ((c == 1 && (t >> k) != 0) || s > hi1)
                break; /* past the top of h, or past the bucket */
            if (s + ((UINT64_C(1) << sh) - 1u) < lo)
                continue;
            r[nr][0] = s;
            r[nr++][1] = s + ((UINT64_C(1) << sh) - 1u);
        }
    }
    for (i = 0; i < nr; i++) {
        const uint64_t a = r[i][0] > lo ? r[i][0] : lo, e = r[i][1] < hi1 ? r[i][1] : hi1;
        /* the entry at level k2: p - k2 bits from bit k2, or (SHORT or fewer) up to SHORT
         * from bit k2 - 1, which tells a bucket's two cells apart (else a short entry
         * stands for both, and its copies double growth after growth) */
        int len2 = p == 0 ? 0 : (int)p - (int)k2;
        unsigned from = k2;
        uint64_t g, g1, g2;
        uint16_t v2;
        if (p != 0 && len2 <= (int)SHORT) {
            len2 = len2 + 1 > (int)SHORT ? (int)SHORT : len2 + 1;
            from = k2 - 1u;
        }
        if (len2 <= 0) { /* no bit left: its range, exactly (the kind's deep list) */
            if (p == 0) { /* (a bucket-wide entry: as before, to every bucket it meets) */
                g1 = mulhi(a, m2);
                g2 = mulhi(e, m2);
                for (g = g1; g <= g2; g++) {
                    out[no].g = g;
                    out[no++].v = 1;
                }
                continue;
            }
            deep_push(deep_to, a, e);
            continue;
        }
        v2 = (uint16_t)((1u << len2) | ((a << from) >> (64u - (unsigned)len2)));
        g1 = mulhi(a, m2);
        g2 = mulhi(e, m2);
        for (g = g1; g <= g2; g++) {
            out[no].g = g;
            out[no++].v = v2;
        }
    }
    return no;
}

/* The old table t written into dst (initialized, empty) in one pass; the
 * spare's entries merged in at their buckets. */
/* Bucket g's first h, exactly: ceil(g 2^64 / m) (the general path's; the
 * last bucket's end, 2^64, is g = m). */
static inline unsigned __int128 bucket_lo(uint64_t g, uint64_t m)
{
    const unsigned __int128 x = (unsigned __int128)g << 64;
    return x / m + (x % m != 0);
}

/* Entry v of bucket g of t, the general way: its candidate ranges, exactly. */
static void rewrite_one(writer *w, const table *t, uint64_t g, uint16_t v)
{
    placed out[8];
    const unsigned np = replace((uint64_t)bucket_lo(g, t->m),
                                (uint64_t)(bucket_lo(g + 1u, t->m) - 1u), t->k, v, w->t->m,
                                w->t->k, out, w->t);
    unsigned y, x;
    for (y = 0; y < np; y++) {
        /* a range clipped by its bucket's edge (an earlier growth's copy) meets its other
         * part's in one new bucket: kept once, else such copies double growth after growth */
        if (out[y].g != w->seen_g || w->nseen == 0) {
            w->seen_g = out[y].g;
            w->nseen = 0;
        }
        for (x = 0; x < w->nseen && w->seen[x] != out[y].v; x++)
            ;
        if (x < w->nseen)
            continue;
        if (w->nseen < 16)
            w->seen[w->nseen++] = out[y].v;
        writer_put(w, out[y].g, out[y].v);
    }
}

/* The new table's geometry and the old one's, as one entry's rewrite needs them. */
typedef struct {
    uint64_t q0, cell, m2;
    uint64_t width;  /* q0 - 1 - q0's error margin: h at lo + margin .. lo + width lies in g */
    uint64_t margin; /* g q0 is at most g below bucket g's first h: m bounds it */
    unsigned k, k2;
} geometry;

/* Entry v of bucket g: the usual entry has one cell's range, well inside its bucket, in one
 * new bucket: 1 with its new bucket and entry in *g2, *v2, from one multiply and no branch;
 * 0 for any other, which goes the general way.  (g q0 is bucket g's first h less at most m;
 * a range within m of the bucket's edge is rare, and checked exactly then.) */
static inline int rewrite_fast(const geometry *c, uint64_t g, uint16_t v, uint64_t *g2,
                               uint16_t *v2)
{
    const unsigned len = 31u - (unsigned)__builtin_clz(v), sh = 64u - c->k - len;
    const int len2 = (int)len - (int)(c->k2 - c->k); /* a bit fewer past a power of two */
    const uint64_t bits = v ^ (1u << len), lo = g * c->q0, size1 = (UINT64_C(1) << sh) - 1u;
    const uint64_t s1 = (lo & ~(c->cell - 1u)) | (bits << sh);
    /* a bucket meets two cells about half the time: the later one's, without a branch */
    const uint64_t s0 = s1 + (c->cell & (uint64_t)-(int64_t)(s1 < lo));
    const unsigned __int128 pr = (unsigned __int128)s0 * c->m2;
    const uint64_t p = ((s0 >> (64u - c->k)) << len) | bits; /* h's top k + len bits */
    *g2 = (uint64_t)(pr >> 64);
    *v2 = (uint16_t)((1u << len2) | (p & ((UINT64_C(1) << len2) - 1u)));
    return (len2 > (int)SHORT) & (s0 - lo >= c->margin) & (s0 - lo <= c->width - size1) &
           ((uint64_t)pr <= UINT64_MAX - size1 * c->m2);
}

/* Entry v of bucket g of t into w, any way (the writer's state in w). */
__attribute__((noinline)) static void rewrite_any(writer *w, const table *t, const geometry *c,
                                                  uint64_t g, uint16_t v)
{
    uint64_t g2;
    uint16_t v2;
    if (rewrite_fast(c, g, v, &g2, &v2))
        writer_put(w, g2, v2);
    else
        rewrite_one(w, t, g, v);
}

#if defined(__AVX512VBMI2__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512BW__)
#define BIN_G2 1
/* 8 bytes of x from byte c (c a multiple of 8, under 32), as 64-bit lanes. */
static inline __m512i bytes8(__m512i x, int c)
{
    const __m128i q = c < 16 ? _mm512_castsi512_si128(x) : _mm512_extracti32x4_epi32(x, 1);
    return _mm512_cvtepu8_epi64(c % 16 ? _mm_unpackhi_epi64(q, q) : q);
}

/* The usual bin 8 entries at a time (AVX-512): each entry's new bucket into g2s[] and its
 * entry into vs[], the count of entries returned; -1 when any of them is not the usual one
 * (rewrite_fast's conditions: its one range inside its bucket, in one new bucket, a bit
 * left after a power of two) or their new buckets are out of order, for the
 * entry-at-a-time loop.  Entries of any length: a grown table holds every generation's.
 * kc: q0, the cell, the margin, the width, m2 (under 2^32: mulhi is two 32-bit
 * multiplies), k, and the levels gained (0 or 1). */
static inline __m512i mulhi32(__m512i s, __m512i vm2)
{
    const __m512i p0 = _mm512_mul_epu32(s, vm2);
    return _mm512_srli_epi64(
        _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(s, 32), vm2), _mm512_srli_epi64(p0, 32)),
        32);
}

static inline int bin_g2(const bin *b, uint64_t base, const uint64_t *kc, int may_sort,
                         uint64_t *g2s, uint16_t *vs)
{
    const uint64_t ones = b->map & MAP_MASK;
    const int n = __builtin_popcountll(ones);
    const __m512i iota = _mm512_set_epi8(
        63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42,
        41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20,
        19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    /* entry i's bucket: the place of the i-th 1 less i */
    const __m512i jb = _mm512_sub_epi8(_mm512_maskz_compress_epi8(ones, iota), iota);
    const __m512i vq0 = _mm512_set1_epi64((long long)kc[0]);
    const __m512i vcell = _mm512_set1_epi64((long long)kc[1]);
    const __m512i vcmask = _mm512_set1_epi64((long long)~(kc[1] - 1u));
    const __m512i vmargin = _mm512_set1_epi64((long long)kc[2]);
    const __m512i vwidth = _mm512_set1_epi64((long long)kc[3]);
    const __m512i vm2 = _mm512_set1_epi64((long long)kc[4]);
    const __m512i v64k = _mm512_set1_epi64((long long)(64u - kc[5]));
    const __m512i vminlen = _mm512_set1_epi64((long long)(SHORT + 1u + kc[6])); /* long ones */
    const __m512i one = _mm512_set1_epi64(1), v63 = _mm512_set1_epi64(63);
    const int step = kc[6] != 0;
    int c, i;
    for (c = 0; c < n; c += 8) {
        const __mmask8 live = (__mmask8)(n - c >= 8 ? 0xffu : (1u << (n - c)) - 1u);
        const __m512i v = _mm512_maskz_cvtepu16_epi64(live, _mm_maskz_loadu_epi16(live, b->e + c));
        const __m512i len = _mm512_sub_epi64(v63, _mm512_lzcnt_epi64(v));
        const __m512i mark = _mm512_sllv_epi64(one, len);
        const __m512i sh = _mm512_sub_epi64(v64k, len);
        const __m512i size1 = _mm512_sub_epi64(_mm512_sllv_epi64(one, sh), one);
        const __m512i g = _mm512_add_epi64(_mm512_set1_epi64((long long)base), bytes8(jb, c));
        const __m512i lo = _mm512_mullo_epi64(g, vq0);
        const __m512i bits = _mm512_sllv_epi64(_mm512_xor_si512(v, mark), sh);
        const __m512i s1 = _mm512_or_si512(_mm512_and_si512(lo, vcmask), bits);
        const __m512i s0 = _mm512_mask_add_epi64(s1, _mm512_cmplt_epu64_mask(s1, lo), s1, vcell);
        const __m512i d = _mm512_sub_epi64(s0, lo);
        const __m512i g2 = mulhi32(s0, vm2);
        const __mmask8 ok =
            _mm512_mask_cmpge_epu64_mask(live, len, vminlen) &
            _mm512_cmpge_epu64_mask(d, vmargin) &
            _mm512_cmple_epu64_mask(d, _mm512_sub_epi64(vwidth, size1)) &
            _mm512_cmpeq_epi64_mask(g2, mulhi32(_mm512_add_epi64(s0, size1), vm2));
        if (ok != live)
            return -1;
        _mm512_storeu_si512((void *)(g2s + c), g2);
        if (step) { /* a bit fewer past a power of two: the top one, the marker one down */
            const __m512i m1 = _mm512_srli_epi64(mark, 1);
            _mm_mask_storeu_epi16(vs + c, live,
                                  _mm512_cvtepi64_epi16(_mm512_or_si512(
                                      m1, _mm512_and_si512(v, _mm512_sub_epi64(m1, one)))));
        }
    }
    if (!step)
        memcpy(vs, b->e, sizeof b->e);
    for (i = 1; i < n; i++)
        if (g2s[i] < g2s[i - 1]) {
            /* an appended bucket's entries split by a new bucket's edge: sorted by new
             * bucket, stably (a few out of order), as the writer's slow way would place
             * them; not beside the spare's, which that way merges in its own order */
            int k;
            if (!may_sort)
                return -1;
            for (k = i; k < n; k++) {
                const uint64_t g = g2s[k];
                const uint16_t v = vs[k];
                int at = k;
                for (; at > 0 && g2s[at - 1] > g; at--) {
                    g2s[at] = g2s[at - 1];
                    vs[at] = vs[at - 1];
                }
                g2s[at] = g;
                vs[at] = v;
            }
            break;
        }
    return n;
}
#else
#define BIN_G2 0 /* the entry-at-a-time loop only */
static inline int bin_g2(const bin *b, uint64_t base, const uint64_t *kc, int may_sort,
                         uint64_t *g2s, uint16_t *vs)
{
    (void)b, (void)base, (void)kc, (void)may_sort, (void)g2s, (void)vs;
    return -1;
}
#endif

static void rewrite(const table *t, table *dst)
{
    const unsigned __int128 one = (unsigned __int128)1 << 64;
    geometry c;
    const spare_entry *sp = t->sp;
    const size_t nsp = t->nsp;
    size_t si = 0, x;
    uint64_t ob;
    writer w;
    c.q0 = (uint64_t)(one / t->m); /* g q0 is within m of bucket g's first h */
    c.cell = UINT64_C(1) << (64u - t->k);
    c.margin = t->m + 1u;
    c.width = c.q0 - 1u;
    c.m2 = dst->m;
    c.k = t->k;
    c.k2 = dst->k;
    memset(&w, 0, sizeof w);
    w.t = dst;
    {
        /* The usual entry, a 15-bit one of a table whose level stays, written by the
         * loop below with the writer's state in registers (in memory, a store and a load
         * an entry chain the entries); any other, and the spare's, by rewrite_any. */
        const uint64_t q0 = c.q0, cell = c.cell, cmask = ~(c.cell - 1u), m2 = c.m2;
        const unsigned step = c.k2 - c.k, k64 = 64u - c.k;
        const uint64_t margin = c.margin, width = c.width;
        const unsigned minlen = step <= 1u ? SHORT + 1u + step : 64u; /* long, staying long */
        uint64_t map = 0, gw = 0, g_end = BUCKETS, spg = nsp > 0 ? sp[0].g : UINT64_MAX;
        unsigned pos = 0, n = 0;
        uint16_t *ce = w.cur.e;
/* the writer's state to memory and back, around its slow ways (the run of the bucket
 * being written: the 1s below pos) */
#define W_SAVE()                                                                                   \
    do {                                                                                           \
        w.cur.map = map;                                                                           \
        w.pos = pos;                                                                               \
        w.n = n;                                                                                   \
        w.run = pos ? (unsigned)__builtin_clzll(~(map << (64u - pos))) : 0u;                     \
        w.bucket = (unsigned)(gw - w.g0);                                                          \
    } while (0)
#define W_LOAD()                                                                                   \
    do {                                                                                           \
        map = w.cur.map;                                                                           \
        pos = w.pos;                                                                               \
        n = w.n;                                                                                   \
        gw = w.g0 + w.bucket;                                                                      \
        g_end = w.g0 + BUCKETS;                                                                    \
    } while (0)
/* v2 appended in new bucket g2 (not before the one being written): the next bin begun
 * when g2 is past this one, the spare when this one is full (its map's place for an entry:
 * a 0 for each bucket before, a 1 for each entry) */
#define W_APPEND(g2_, v2_)                                                                         \
    do {                                                                                           \
        if ((g2_) >= g_end) {                                                                      \
            w.cur.map = map;                                                                       \
            w.n = n;                                                                               \
            writer_to(&w, (g2_) / BUCKETS);                                                        \
            map = 0;                                                                               \
            n = 0;                                                                                 \
            g_end = w.g0 + BUCKETS;                                                                \
        }                                                                                          \
        gw = (g2_);                                                                                \
        pos = (unsigned)((g2_) - (g_end - BUCKETS)) + n;                                           \
        if (__builtin_expect(n >= SLOTS, 0)) {                                                     \
            bin_spare_from(&map, (unsigned)((g2_) % BUCKETS));                                     \
            spare_push(dst, (g2_), (v2_));                                                         \
        } else {                                                                                   \
            map |= UINT64_C(1) << pos++;                                                           \
            ce[n++] = (v2_);                                                                       \
        }                                                                                          \
    } while (0)
        const uint64_t kc[7] = {q0, cell, c.margin, c.width, m2, c.k, c.k2 - c.k};
        const int vec = vec_rewrite && m2 <= UINT32_MAX && c.k2 - c.k <= 1u;
        uint64_t g2s[32];
        uint16_t vs[SLOTS];
        for (ob = 0; ob < t->nb; ob++) {
            const bin *b = t->b + ob;
            const uint64_t base = ob * BUCKETS;
            uint64_t ones = b->map & MAP_MASK;
            unsigned e = 0;
            int nv;
            if (vec && (nv = bin_g2(b, base, kc, spg >= base + BUCKETS, g2s, vs)) >= 0) {
                /* the writer as below, in the same order: the spare's entries of buckets up
                 * to an entry's before it, those of the bin's other buckets after its last */
                int i;
                for (i = 0; i < nv; i++, ones &= ones - 1u) {
                    const uint64_t g2 = g2s[i];
                    if (spg < base + BUCKETS && base + (unsigned)__builtin_ctzll(ones) - (unsigned)i >= spg) {
                        const uint64_t g = base + (unsigned)__builtin_ctzll(ones) - (unsigned)i;
                        W_SAVE();
                        for (; si < nsp && sp[si].g <= g; si++)
                            rewrite_any(&w, t, &c, sp[si].g, sp[si].v);
                        spg = si < nsp ? sp[si].g : UINT64_MAX;
                        W_LOAD();
                    }
                    if (g2 < gw) { /* behind a spare entry's */
                        W_SAVE();
                        writer_put(&w, g2, vs[i]);
                        W_LOAD();
                        continue;
                    }
                    W_APPEND(g2, vs[i]);
                }
                if (spg < base + BUCKETS) {
                    W_SAVE();
                    for (; si < nsp && sp[si].g < base + BUCKETS; si++)
                        rewrite_any(&w, t, &c, sp[si].g, sp[si].v);
                    spg = si < nsp ? sp[si].g : UINT64_MAX;
                    W_LOAD();
                }
                continue;
            }
            for (; ones != 0; ones &= ones - 1u, e++) {
                const uint64_t g = base + (unsigned)__builtin_ctzll(ones) - e;
                const uint16_t v = b->e[e];
                /* rewrite_fast's, for an entry of any length (a grown table holds them all) */
                const unsigned len = 31u - (unsigned)__builtin_clz((uint32_t)v | 1u);
                const unsigned sh = k64 - len;
                const uint64_t size1 = (UINT64_C(1) << sh) - 1u, lo = g * q0;
                const uint64_t s1 = (lo & cmask) | ((uint64_t)(v ^ (1u << len)) << sh);
                const uint64_t s0 = s1 + (cell & (uint64_t)-(int64_t)(s1 < lo));
                const uint64_t g2 = mulhi(s0, m2);
                const uint16_t v2 = (uint16_t)(step && len ? (v & ((1u << (len - 1u)) - 1u)) |
                                                                 (1u << (len - 1u))
                                                           : v);
                if (__builtin_expect((g >= spg) | (len < minlen) | (s0 - lo < margin) |
                                         (s0 - lo > width - size1) |
                                         (mulhi(s0 + size1, m2) != g2) | (g2 < gw),
                                     0)) {
                    W_SAVE(); /* the slow way */
                    for (; si < nsp && sp[si].g <= g; si++)
                        rewrite_any(&w, t, &c, sp[si].g, sp[si].v);
                    spg = si < nsp ? sp[si].g : UINT64_MAX;
                    rewrite_any(&w, t, &c, g, v);
                    W_LOAD();
                    continue;
                }
                W_APPEND(g2, v2);
            }
        }
        W_SAVE();
#undef W_SAVE
#undef W_LOAD
#undef W_APPEND
        for (; si < nsp; si++) /* the spare's of the last buckets */
            rewrite_any(&w, t, &c, sp[si].g, sp[si].v);
    }
    writer_to(&w, w.bin_at);
    if (w.bin_at + 1u < dst->nb) /* the bins after the last entry's */
        memset(dst->b + w.bin_at + 1u, 0, (dst->nb - w.bin_at - 1u) * sizeof(bin));
    for (x = 0; x < t->ndeep; x++) /* the old deep ranges stay, as ranges of h */
        deep_push(dst, t->deep[x][0], t->deep[x][1]);
    if (dst->ndeep > 0)
        qsort(dst->deep, dst->ndeep, sizeof dst->deep[0], deep_cmp);
    for (x = 0; x < dst->ndeep; x++) { /* their bins' queries look them up */
        const uint64_t g = mulhi(dst->deep[x][0], dst->m);
        uint64_t b = g / BUCKETS;
        for (bin_spare_from(&dst->b[b].map, (unsigned)(g % BUCKETS)), b++;
             b <= mulhi(dst->deep[x][1], dst->m) / BUCKETS; b++)
            bin_spare_from(&dst->b[b].map, 0);
    }
    for (x = 1; x < dst->nsp; x++) /* the spare in bucket order, as the query looks it up */
        if (dst->sp[x - 1].g > dst->sp[x].g) {
            spare_radix(dst->sp, dst->nsp, dst->m);
            break;
        }
    dst->nsorted = dst->nsp;
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

/* ---- grown from 1,000: segments of staggered sizes --------------------------------------- */

/* A spare entry's bits, counted in bits a key: a quotient filter keyed by the bucket would
 * keep the entry's 16 bits, the bucket's bits under its quotient (about 4: it has a
 * twentieth of the buckets) and its 2.125 bits of runs, at 90 % of its slots. */
#define SPARE_BITS 25.0

/* 2^d segments, a key's by its top d bits, each a table of bins grown by g on its own when
 * its entries reach TOP_LOAD of its slots: segment i's sizes are b0 g^(e + i / 2^d) / 2^d
 * bins (even), e = 0, 1, ..., so that the segments grow one at a time and the whole stays
 * between 1 / g and 1 of TOP_LOAD at every key count, where one table swings across that
 * range.  The filter starts as one segment (b0 bins) and every segment splits in two, up to
 * 2^dmax, when each has SPLIT_BINS bins or more: a split only relabels (below). */
typedef struct {
    table *seg;
    uint64_t *entries, *limit;
    unsigned *epoch;
    unsigned d, dmax;
    double g, b0;
    uint64_t growths, moved;
    double uncounted;
    double t_grow; /* CPU seconds in growths: the spare's sort and the rewrite */
    double t_sort; /* of which the spare's sort */ /* CPU seconds of the prototype's own bookkeeping, not an add's */
} grown;

#define SPLIT_BINS 8u

static uint64_t grid(const grown *G, unsigned i, unsigned e)
{
    const double S = (double)(1u << G->d);
    const double x = G->b0 / S * __builtin_pow(G->g, (double)e + (double)i / S);
    return x < 2.0 ? 2u : ((uint64_t)__builtin_ceil(x) + 1u) & ~UINT64_C(1);
}

/* Key h's segment (its top d bits; none when d is 0). */
static inline unsigned seg_of(const grown *G, uint64_t h)
{
    return (unsigned)((h >> 1) >> (63u - G->d));
}

static void seg_limit(grown *G, unsigned i)
{
    const table *t = &G->seg[i];
    const double x = cpu_s();
    uint64_t b, e = t->nsp;
    for (b = 0; b < t->nb; b++) /* the writer could count them; here a pass, not timed */
        e += (uint64_t)__builtin_popcountll(t->b[b].map & MAP_MASK);
    G->entries[i] = e;
    G->limit[i] = (uint64_t)(TOP_LOAD * (double)(t->nb * SLOTS));
    G->uncounted += cpu_s() - x;
}

static void grown_init(grown *G, unsigned dmax, double g, uint64_t start)
{
    const unsigned S = 1u << dmax;
    G->d = 0;
    G->dmax = dmax;
    G->g = g;
    G->b0 = (double)start / (TOP_LOAD * SLOTS);
    G->growths = G->moved = 0;
    G->uncounted = G->t_grow = G->t_sort = 0;
    G->seg = calloc(S, sizeof *G->seg);
    G->entries = calloc(S, sizeof *G->entries);
    G->limit = calloc(S, sizeof *G->limit);
    G->epoch = calloc(S, sizeof *G->epoch);
    if (!G->seg || !G->entries || !G->limit || !G->epoch) {
        fprintf(stderr, BENCH_NAME ": segments: out of memory\n");
        exit(1);
    }
    table_init(&G->seg[0], grid(G, 0, 0));
    seg_limit(G, 0);
}

/* Table t of an even number of bins as two of half as many, each with its keys' next bit
 * (the top of h << d + 1) taken off: bucket g of the first half is bucket g of the keys
 * whose bit is 0 (h m >> 64 < m / 2 exactly when that bit is 0, m even), g - m / 2 of the
 * second those whose bit is 1, and with m halved the level k drops by one, so that every
 * entry still holds the same bits of h.  Bins, cutoffs and spare entries are copied as
 * they are; deep ranges (ranges of h << d) are not, and a table with any is not split. */
static void split_table(const table *t, table *a, table *b)
{
    const uint64_t nb2 = t->nb / 2u, m2 = nb2 * BUCKETS;
    size_t x;
    table_init_as(a, nb2, 0);
    table_init_as(b, nb2, 0);
    memcpy(a->b, t->b, nb2 * sizeof(bin));
    memcpy(b->b, t->b + nb2, nb2 * sizeof(bin));
    for (x = 0; x < t->nsp; x++) {
        table *to = t->sp[x].g < m2 ? a : b;
        const uint64_t g = t->sp[x].g < m2 ? t->sp[x].g : t->sp[x].g - m2;
        to->spare_lines[mulhi(mix(g), to->nspare_lines) * 8u] |= 1u;
        spare_push(to, g, t->sp[x].v);
    }
}

/* Every segment split in two, when the filter has fewer than 2^dmax and each has SPLIT_BINS
 * bins or more (a few bins of 28 grown by g overshoot; the stagger is kept at 2^d). */
static void grown_split(grown *G)
{
    const unsigned S = 1u << G->d;
    unsigned i;
    if (G->d >= G->dmax)
        return;
    for (i = 0; i < S; i++)
        if (G->seg[i].nb < SPLIT_BINS || G->seg[i].nb % 2u != 0 || G->seg[i].ndeep != 0)
            return;
    for (i = S; i-- > 0;) { /* from the last: segments 2i and 2i + 1 are past i's */
        table t = G->seg[i];
        split_table(&t, &G->seg[2u * i], &G->seg[2u * i + 1u]);
        table_free(&t);
    }
    G->d++;
    for (i = 0; i < 2u * S; i++) {
        G->epoch[i] = 0; /* seg_grow finds the next size on the new grid */
        seg_limit(G, i);
    }
}

/* Lines a growth in place writes past its new table's last bin (below). */
#define GAP_SLACK 8u

/* Addresses for a table of `need` bytes and its next growths (untouched, they cost no
 * memory): 8 times that, in whole 2 MiB pages. */
static size_t reserve_for(size_t need)
{
    const size_t huge = (size_t)1 << 21;
    return (need * 8u + huge - 1u) / huge * huge;
}

/* Table t rewritten into nb2 bins over its own lines: its bins moved up by gap = nb2 - nb +
 * GAP_SLACK first, then written from the start.  The writer never passes a bin not yet
 * read: old bin ob's keys go to new bins below (ob + 1) nb2 / nb, and gap + ob is past that
 * for every ob < nb.  The table's range of addresses grows (mremap: no copy) when the new
 * one does not fit. */
static void seg_grow_in_place(table *t, uint64_t nb2)
{
    const uint64_t gap = nb2 - t->nb + GAP_SLACK;
    const size_t need = (size_t)(nb2 + GAP_SLACK) * sizeof(bin);
    table t2;
    bin *base = t->va;
    size_t reserved = t->reserved;
    if (base == NULL || need > reserved) {
        const size_t want = reserve_for(need);
        void *p = base == NULL ? mmap(NULL, want, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                               : mremap(base, reserved, want, MREMAP_MAYMOVE);
        if (p == MAP_FAILED) {
            fprintf(stderr, BENCH_NAME ": %zu bytes of addresses: out of memory\n", want);
            exit(1);
        }
        (void)madvise(p, want, MADV_HUGEPAGE);
        if (base == NULL) { /* from its own block */
            memcpy((bin *)p + gap, t->b, t->nb * sizeof(bin));
            lines_free(t->b, t->nb * sizeof(bin), t->reserved);
        } else {
            memmove((bin *)p + gap, p, t->nb * sizeof(bin));
        }
        base = p;
        reserved = want;
    } else {
        memmove(base + gap, base, t->nb * sizeof(bin));
    }
    t->b = base + gap;
    table_init_at(&t2, nb2, base);
    t2.va = base;
    t2.reserved = reserved;
    rewrite(t, &t2);
    table_free_rest(t);
    *t = t2;
}

static void seg_grow(grown *G, unsigned i)
{
    table *t = &G->seg[i], t2;
    uint64_t nb2;
    const double s0 = cpu_s();
    do
        nb2 = grid(G, i, ++G->epoch[i]);
    while (nb2 <= t->nb);
    spare_sort(t);
    G->t_sort += cpu_s() - s0;
    if (in_place && nb2 * sizeof(bin) >= small_table) {
        seg_grow_in_place(t, nb2);
    } else {
        table_init_as(&t2, nb2, 0);
        rewrite(t, &t2);
        table_free(t);
        *t = t2;
    }
    G->moved += G->entries[i];
    G->growths++;
    G->t_grow += cpu_s() - s0;
    seg_limit(G, i);
}

static inline void grown_add(grown *G, uint64_t h)
{
    const unsigned i = seg_of(G, h);
    add_hash(&G->seg[i], h << G->d);
    if (++G->entries[i] >= G->limit[i]) {
        seg_grow(G, i);
        if (G->d < G->dmax)
            grown_split(G);
    }
}

static inline const bin *grown_line(const grown *G, uint64_t h)
{
    const table *t = &G->seg[seg_of(G, h)];
    return t->b + mulhi(h << G->d, t->m) / BUCKETS;
}

static void grown_range(grown *G, uint64_t from, uint64_t to)
{
    uint64_t i, ring[RING];
    for (i = from; i < to && i < from + RING; i++) {
        ring[i % RING] = key(i, 1);
        __builtin_prefetch(grown_line(G, ring[i % RING]), 1);
    }
    for (i = from; i < to; i++) {
        const uint64_t h = ring[i % RING];
        if (i + RING < to) {
            ring[i % RING] = key(i + RING, 1);
            __builtin_prefetch(grown_line(G, ring[i % RING]), 1);
        }
        grown_add(G, h);
    }
}

/* A query of the grown bins as a line-local kind would answer it: the key's bin, its
 * bucket's entries; for a bin that sent a key to the spare, one line of the spare's (the
 * model's: its answer is the line's bit, not the spare's, whose sorted list has_hash reads
 * and the checks above use).  The deep ranges, rare, are not read. */
static inline int grown_query(const grown *G, uint64_t h);

/* The bin's answer alone, entry at a time (has_hash's first half): what the vector
 * compare of grown_query must answer. */
static int bin_has(const table *t, uint64_t hs)
{
    const uint64_t g = mulhi(hs, t->m);
    const bin *b = t->b + g / BUCKETS;
    const unsigned j = (unsigned)(g % BUCKETS);
    const uint64_t z = ~b->map & MAP_MASK;
    const unsigned pe = select1(z, j), ps = j ? select1(z, j - 1u) + 1u : 0u;
    unsigned i;
    for (i = ps - j; i < pe - j; i++)
        if (entry_hits(b->e[i], hs, t->k))
            return 1;
    return 0;
}

/* Key hs (its segment's bits taken off) of table t, in bucket g (bucket j of bin b). */
static inline __attribute__((always_inline)) int bins_query_at(const table *t, uint64_t hs,
                                                               uint64_t g, const bin *b,
                                                               unsigned j)
{
#if defined(__AVX512BW__) && defined(__AVX512VBMI2__)
    /* entry i's bucket is the place of the map's i-th 1 less i: the places of the 1s packed
     * into bytes, less their numbers, equal to j for the bucket's entries (bytes past the
     * last entry hold 0 - i, never a bucket) */
    const __m512i idx = _mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50,
                                        49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36,
                                        35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22,
                                        21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7,
                                        6, 5, 4, 3, 2, 1, 0);
    const uint32_t in = (uint32_t)_mm512_cmpeq_epi8_mask(
        _mm512_sub_epi8(_mm512_maskz_compress_epi8((__mmask64)(b->map & MAP_MASK), idx), idx),
        _mm512_set1_epi8((char)j));
#elif defined(__AVX512BW__) && defined(__BMI2__)
    /* the bucket's bounds by one deposit: a 0 put before bucket 0, the (j + 1)-th and
     * (j + 2)-th 0s are the places just past bucket j - 1's end and bucket j's */
    const uint64_t r = _pdep_u64(UINT64_C(3) << j, ((~b->map & MAP_MASK) << 1) | 1u);
    const unsigned ps = (unsigned)__builtin_ctzll(r), pe = 62u - (unsigned)__builtin_clzll(r);
    const uint32_t in = (uint32_t)(((UINT64_C(1) << (pe - ps)) - 1u) << (ps - j));
#else
    const uint64_t z = ~b->map & MAP_MASK;
    const unsigned pe = select1(z, j), ps = j ? select1(z, j - 1u) + 1u : 0u;
#endif
#ifdef __AVX512BW__
    {
        /* every entry of the line at once, without a branch: entry v of length len (its
         * top 1) holds the key's bits from bit k (from k - 1 when short), so it answers
         * when v equals that 16-bit window shifted right by 15 - len */
        const __m512i y = _mm512_set1_epi32((int)((1u << 15) | (uint32_t)((hs << t->k) >> 49)));
        const __m512i ys = _mm512_set1_epi32(
            (int)((1u << 15) | (uint32_t)((hs << (t->k - 1u)) >> 49)));
        __mmask16 hit = 0;
        int half;
        for (half = 0; half < 2; half++) { /* lanes 0 to 15, 16 to 27 */
            /* entries 0 to 15, or 12 to 27 moved down by 4: 16 to 27 in lanes 0 to 11 */
            const __m512i v = _mm512_cvtepu16_epi32(
                _mm256_loadu_si256((const void *)(b->e + 12 * half)));
            const __m512i vv = half ? _mm512_alignr_epi32(_mm512_setzero_si512(), v, 4) : v;
            const __m512i len = _mm512_sub_epi32(_mm512_set1_epi32(31), _mm512_lzcnt_epi32(vv));
            const __m512i sh = _mm512_sub_epi32(_mm512_set1_epi32(15), len);
            const __mmask16 shortl = _mm512_cmple_epu32_mask(len, _mm512_set1_epi32((int)SHORT));
            const __m512i want = _mm512_mask_blend_epi32(shortl, _mm512_srlv_epi32(y, sh),
                                                         _mm512_srlv_epi32(ys, sh));
            hit |= _mm512_mask_cmpeq_epi32_mask((__mmask16)(in >> (16 * half)), vv, want);
        }
        const int pos = hit != 0;
        if (pos | !bin_to_spare(b->map, j))
            return pos;
    }
#else
    {
        unsigned i;
        for (i = ps - j; i < pe - j; i++)
            if (entry_hits(b->e[i], hs, t->k))
                return 1;
        if (!bin_to_spare(b->map, j))
            return 0;
    }
#endif
    return (int)(t->spare_lines[mulhi(mix(g), t->nspare_lines) * 8u] & 1u);
}

/* Key hs (its segment's bits taken off) of table t, in bucket g: the answer. */
static inline __attribute__((always_inline)) int bins_query(const table *t, uint64_t hs,
                                                            uint64_t g)
{
    return bins_query_at(t, hs, g, t->b + g / BUCKETS, (unsigned)(g % BUCKETS));
}

static inline int grown_query(const grown *G, uint64_t h)
{
    const table *t = &G->seg[seg_of(G, h)];
    return bins_query(t, h << G->d, mulhi(h << G->d, t->m));
}

__attribute__((noinline)) static int grown_query_one(const grown *G, uint64_t h)
{
    return grown_query(G, h);
}

/* Query x of a timed set: odd ones a key added (spread over all of them), even ones never. */
static inline uint64_t query_key(uint64_t x, uint64_t n)
{
    return (x & 1) ? key(mix(x) % n, 1) : key(x, 3);
}

/* ns a query, one key at a time: the bins (the key hashed by XXH3 beside it, as the filters'
 * queries hash theirs: its cost counted, its value unused), or filter f. */
static double q_one(const grown *G, const amq_filter *f, uint64_t n, uint64_t nq,
                    uint64_t *sink)
{
    uint64_t x, hits = 0;
    const double s = cpu_s();
    for (x = 0; x < nq; x++) {
        const uint64_t k = query_key(x, n);
        if (f != NULL) {
            hits += (uint64_t)amq_filter_contains(f, &k, sizeof k);
        } else {
            const uint64_t hv = XXH3_64bits(&k, sizeof k);
            __asm__ volatile("" : : "r"(hv)); /* computed, as a filter's query computes it */
            hits += (uint64_t)grown_query_one(G, k);
        }
    }
    *sink += hits;
    return (cpu_s() - s) * 1e9 / (double)nq;
}

#define QBATCH 256u

/* The spare's line of bucket g of t (bucket j of bin b) prefetched when the bin (in cache
 * by then, prefetched QRING / 2 keys before) says the bucket may have keys there. */
static inline void spare_prefetch(const table *t, uint64_t g, const bin *b, unsigned j)
{
    if (bin_to_spare(b->map, j))
        __builtin_prefetch(&t->spare_lines[mulhi(mix(g), t->nspare_lines) * 8u]);
}
#ifndef QRING
#define QRING 128u /* keys a bin is prefetched ahead of its query (the blocked filter's window) */
#endif
#ifndef QLOCALITY
#define QLOCALITY 2 /* into L2, as the blocked filter's batch at this size: L2 has more miss buffers */
#endif

/* ns a query in batches of QBATCH: the bins (each key's segment, bucket and line found
 * for the batch first, its line prefetched QRING keys ahead of its query and the spare's
 * line half that when the bin says the key's bucket may have keys there), or f's batched
 * query on hashes made in the loop (the bins' keys hashed beside, as above). */
static double q_batch(const grown *G, const amq_filter *f, uint64_t n, uint64_t nq,
                      uint64_t *sink)
{
    static amq_hash128 h[QBATCH];
    static uint8_t out[QBATCH];
    static uint64_t gb[QBATCH];
    static const bin *lp[QBATCH];
    static uint8_t jb[QBATCH];
    static uint32_t sg[QBATCH];
    uint64_t x, j, hits = 0;
    const double s = cpu_s();
    for (x = 0; x < nq; x += QBATCH) {
        for (j = 0; j < QBATCH; j++) {
            const uint64_t k = query_key(x + j, n);
            if (f != NULL) {
                h[j] = amq_filter_hash(f, &k, sizeof k);
            } else { /* the bins' hash is the key (XXH3's is computed, as above, unused) */
                const uint64_t hv = XXH3_64bits(&k, sizeof k);
                __asm__ volatile("" : : "r"(hv));
                h[j].h1 = k;
            }
        }
        if (f != NULL) {
            amq_filter_contains_batch(f, h, QBATCH, out);
            for (j = 0; j < QBATCH; j++)
                hits += out[j];
            continue;
        }
        for (j = 0; j < QBATCH; j++) {
            const unsigned i = seg_of(G, h[j].h1);
            sg[j] = i;
            gb[j] = mulhi(h[j].h1 << G->d, G->seg[i].m);
            lp[j] = G->seg[i].b + gb[j] / BUCKETS;
            jb[j] = (uint8_t)(gb[j] % BUCKETS);
            if (j < QRING)
                __builtin_prefetch(lp[j], 0, QLOCALITY);
        }
        for (j = 0; j < QBATCH && j < QRING / 2; j++)
            spare_prefetch(&G->seg[sg[j]], gb[j], lp[j], jb[j]);
        for (j = 0; j < QBATCH; j++) {
            if (j + QRING < QBATCH)
                __builtin_prefetch(lp[j + QRING], 0, QLOCALITY);
            if (j + QRING / 2 < QBATCH)
                spare_prefetch(&G->seg[sg[j + QRING / 2]], gb[j + QRING / 2], lp[j + QRING / 2],
                               jb[j + QRING / 2]);
            hits += (uint64_t)bins_query_at(&G->seg[sg[j]], h[j].h1 << G->d, gb[j], lp[j], jb[j]);
        }
    }
    *sink += hits;
    return (cpu_s() - s) * 1e9 / (double)nq;
}

/* The queries at n keys: the bins, the blocked filter f and the quotient kind q (or none),
 * by turns, best of three; half the keys added, half never. */
static void grown_queries(const grown *G, const amq_filter *f, const amq_filter *q,
                          const amq_filter *sb, uint64_t n)
{
    const uint64_t nq = 2000000;
    double one[4] = {1e30, 1e30, 1e30, 1e30}, bat[3] = {1e30, 1e30, 1e30}, x;
    uint64_t sink = 0, x1, wrong = 0, spared = 0;
    int turn, w;
    for (x1 = 0; x1 < nq; x1++) { /* a bin's answer: the vector compare's is the loop's */
        const uint64_t h = query_key(x1, n);
        const table *t = &G->seg[seg_of(G, h)];
        const bin *b = grown_line(G, h);
        const int q1 = grown_query(G, h), q2 = bin_has(t, h << G->d);
        const unsigned j = (unsigned)(mulhi(h << G->d, t->m) % BUCKETS);
        wrong += bin_to_spare(b->map, j) ? q2 && !q1 : q1 != q2;
        spared += bin_to_spare(b->map, j) && !q2;
    }
    printf("bins' answers of the vector compare that differ from the entry-at-a-time one's: "
           "%llu of %llu; queries that read the spare's line: %.2f %%\n",
           (unsigned long long)wrong, (unsigned long long)nq, 100.0 * (double)spared / (double)nq);
    for (turn = 0; turn < 3; turn++)
        for (w = 0; w < 4; w++) {
            const amq_filter *sub = w == 0 ? NULL : w == 1 ? f : w == 2 ? q : sb;
            if (w >= 2 && sub == NULL)
                continue;
            if ((x = q_one(G, sub, n, nq, &sink)) < one[w])
                one[w] = x;
            if (w < 3 && (x = q_batch(G, sub, n, nq, &sink)) < bat[w])
                bat[w] = x;
        }
    printf("queries at %llu keys, half added (best of 3 turns, ns): one key: bins %.1f, "
           "blocked %.1f (%.2fx)",
           (unsigned long long)n, one[0], one[1], one[0] / one[1]);
    if (q != NULL)
        printf(", quotient kind %.1f (%.2fx)", one[2], one[2] / one[1]);
    printf("; batched: bins %.1f, blocked %.1f (%.2fx)", bat[0], bat[1], bat[0] / bat[1]);
    if (q != NULL)
        printf(", quotient kind %.1f (%.2fx)", bat[2], bat[2] / bat[1]);
    printf(" [%llu]\n", (unsigned long long)(sink & 1u));
    if (sb != NULL)
        printf("scalable Bloom filter (RedisBloom layout, grown from 1,000), one key: %.1f ns, "
               "%.1fx the bins'\n", one[3], one[3] / one[0]);
}

/* Keys from 1,000 to n in a grown filter of 2^d segments, checked and measured at every
 * power of ten; the blocked add sized for n (and the quotient kind grown from 1,000, with
 * `quotient`) timed on the same keys in this process. */
static int grow_main(uint64_t n, unsigned d, double g, uint64_t absent, int quotient,
                     int times_only)
{
    in_place = 1;
    small_table = (size_t)1 << 16;
    grown G;
    uint64_t done = 0, missing = 0, p, i;
    double t_add = 0;
    printf("bins-proto grown from 1,000 to %llu keys: one segment split up to %u, each grown by "
           "%.2f, staggered; %s adds; a spare entry counted at %.0f bits\n",
           (unsigned long long)n, 1u << d, g, append_only ? "appended" : "ordered", SPARE_BITS);
    printf("| keys | growths | bits/key (bins; with the spare and the growths' slack) | spare keys | fpp | cuckoo at "
           "r: bits/key | ratio | absent keys | amortized add, ns |\n|---|---|---|---|---|---|"
           "---|---|---|\n");
    grown_init(&G, d, g, 1000);
    for (p = 1000; p <= n; p *= 10) {
        uint64_t nb = 0, nsp = 0, fp = 0, slack = 0;
        double s, bins, bits, r, need, ra, ba, rb, bb;
        unsigned j;
        s = cpu_s();
        G.uncounted = 0;
        grown_range(&G, done, p);
        t_add += cpu_s() - s - G.uncounted;
        done = p;
        for (j = 0; j < 1u << G.d; j++) { /* the spare in bucket order, as has_hash looks it up */
            spare_sort(&G.seg[j]);
            nb += G.seg[j].nb;
            nsp += G.seg[j].nsp;
            slack += G.seg[j].va != NULL ? GAP_SLACK : 0u; /* written past its last bin */
        }
        for (i = 0; i < p && !times_only; i++) {
            const uint64_t h = key(i, 1);
            missing += !has_hash(&G.seg[seg_of(&G, h)], h << G.d);
        }
        for (i = 0; i < absent; i++) {
            const uint64_t h = key(i, 2);
            fp += (uint64_t)has_hash(&G.seg[seg_of(&G, h)], h << G.d);
        }
        r = (double)fp / (double)absent;
        bins = (double)nb * 512.0 / (double)p;
        bits = bins + (double)nsp * SPARE_BITS / (double)p + (double)slack * 512.0 / (double)p;
        if (p >= 10000 && !times_only) {
            need = cuckoo_need(p, absent, r, &ra, &ba, &rb, &bb);
            printf("| %llu | %llu | %.2f; %.2f | %.2f %% | %.4f %% | %.2f | %.2fx | %llu | %.1f |\n",
                   (unsigned long long)p, (unsigned long long)G.growths, bins, bits,
                   100.0 * (double)nsp / (double)p, 100.0 * r, need, bits / need,
                   (unsigned long long)missing, t_add * 1e9 / (double)p);
        } else {
            printf("| %llu | %llu | %.2f; %.2f | %.2f %% | %.4f %% | | | %llu | %.1f |\n",
                   (unsigned long long)p, (unsigned long long)G.growths, bins, bits,
                   100.0 * (double)nsp / (double)p, 100.0 * r, (unsigned long long)missing,
                   t_add * 1e9 / (double)p);
        }
        fflush(stdout);
        if (p > n / 10)
            break;
    }
    {
        amq_filter *f = make_at(AMQ_KIND_BLOCKED, done, 0, 0.01), *q = NULL, *sb = NULL;
        double s = cpu_s(), blk, qt = 0;
        fill(f, 0, done);
        blk = (cpu_s() - s) * 1e9 / (double)done;
        printf("at %llu keys: amortized add %.1f ns; amq blocked add sized for them, the same "
               "keys: %.1f ns; %.2fx\n",
               (unsigned long long)done, t_add * 1e9 / (double)done, blk,
               t_add * 1e9 / (double)done / blk);
        printf("of the add: placing %.1f ns, growths %.1f ns (%.2f entries an add at %.2f ns "
               "each; the spare's sort %.1f ns an add)\n",
               (t_add - G.t_grow) * 1e9 / (double)done, G.t_grow * 1e9 / (double)done,
               (double)G.moved / (double)done, G.t_grow * 1e9 / (double)G.moved,
               G.t_sort * 1e9 / (double)done);
        if (quotient) {
            sb = make_at(AMQ_KIND_SCALABLE_BLOOM, 1000, 1, 0.01);
            fill(sb, 0, done);
            q = make_at(AMQ_KIND_QUOTIENT, 1000, 0, 0.01);
            s = cpu_s();
            fill(q, 0, done);
            qt = (cpu_s() - s) * 1e9 / (double)done;
            printf("amq quotient kind grown from 1,000, the same keys: %.1f ns an add; %.2fx "
                   "the blocked add; %.2f bits a key\n",
                   qt, qt / blk, bits_per_key(q, done));
        }
        grown_queries(&G, f, q, sb, done);
        amq_filter_free(f);
        amq_filter_free(q);
        amq_filter_free(sb);
    }
    if (done <= 10000000) {
        /* what each bucket holds, bins and spare together, and the deep ranges: the vector
         * rewrite may spill another entry of a full bin than the entry-at-a-time one */
        uint64_t digest = 0, x, ne, *all;
        unsigned j;
        for (j = 0; j < 1u << G.d; j++) {
            const table *t = &G.seg[j];
            for (ne = t->nsp, x = 0; x < t->nb; x++)
                ne += (uint64_t)__builtin_popcountll(t->b[x].map & MAP_MASK);
            if ((all = malloc((ne + 1u) * sizeof *all)) == NULL) {
                fprintf(stderr, BENCH_NAME ": digest: out of memory\n");
                return 1;
            }
            for (ne = 0, x = 0; x < t->nb; x++) {
                uint64_t ones = t->b[x].map & MAP_MASK;
                unsigned e;
                for (e = 0; ones != 0; ones &= ones - 1u, e++)
                    all[ne++] = (x * BUCKETS + (unsigned)__builtin_ctzll(ones) - e) << 16 |
                                t->b[x].e[e];
            }
            for (x = 0; x < t->nsp; x++)
                all[ne++] = t->sp[x].g << 16 | t->sp[x].v;
            qsort(all, ne, sizeof *all, u64_cmp);
            for (x = 0; x < ne; x++)
                digest = mix(digest ^ all[x]);
            free(all);
            qsort(t->deep, t->ndeep, sizeof t->deep[0], deep_cmp);
            for (x = 0; x < t->ndeep; x++)
                digest = mix(digest ^ t->deep[x][0] ^ mix(t->deep[x][1]));
        }
        printf("keys absent at any power of ten: %llu; the buckets' digest: %016llx\n",
               (unsigned long long)missing, (unsigned long long)digest);
    } else {
        printf("keys absent at any power of ten: %llu\n", (unsigned long long)missing);
    }
    for (i = 0; i < 1u << G.d; i++)
        table_free(&G.seg[i]);
    free(G.seg);
    free(G.entries);
    free(G.limit);
    free(G.epoch);
    return missing != 0;
}

int main(int argc, char **argv)
{
    uint64_t n = 100000000, lo_n, i, nb, missing = 0;
    int turns = 2, rewrites = 1, a, turn, quotient = 0, times_only = 0;
    double growth = 0;
    unsigned seg_bits = 6;
    uint64_t absent = 1000000;
    double t_add = 1e30, t_blk = 1e30, t_rw = 1e30, spare_share = 0, fpp = 0, bits = 0;
    uint64_t moved = 0, flagged = 0, digest = 0;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--n") && a + 1 < argc)
            n = (uint64_t)strtod(argv[++a], NULL);
        else if (!strcmp(argv[a], "--turns") && a + 1 < argc)
            turns = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--rewrites") && a + 1 < argc)
            rewrites = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--append"))
            append_only = 1;
        else if (!strcmp(argv[a], "--scalar-rewrite"))
            vec_rewrite = 0;
        else if (!strcmp(argv[a], "--grow") && a + 1 < argc)
            growth = strtod(argv[++a], NULL);
        else if (!strcmp(argv[a], "--segments") && a + 1 < argc)
            seg_bits = (unsigned)__builtin_ctzll((uint64_t)strtod(argv[++a], NULL) | 1u << 20);
        else if (!strcmp(argv[a], "--absent") && a + 1 < argc)
            absent = (uint64_t)strtod(argv[++a], NULL);
        else if (!strcmp(argv[a], "--quotient"))
            quotient = 1;
        else if (!strcmp(argv[a], "--times-only"))
            times_only = 1;
        else if (!strcmp(argv[a], "--entry-bits") && a + 1 < argc)
            entry_bits = (unsigned)atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: bins-proto [--n N] [--turns T] [--rewrites R] [--append] "
                            "[--scalar-rewrite] [--grow G [--segments S] [--absent A] "
                            "[--quotient] [--times-only]] [--entry-bits B]\n");
            return 2;
        }
    }
    if (entry_bits < SHORT + 2u || entry_bits > 15) {
        fprintf(stderr, BENCH_NAME ": --entry-bits %u to 15\n", SHORT + 2u);
        return 2;
    }
    if (n < 10000 || turns < 1 || rewrites < 1 || rewrites > 100) {
        fprintf(stderr, BENCH_NAME ": --n at least 10000, --turns at least 1, --rewrites 1 "
                        "to 100\n");
        return 2;
    }
    if (growth != 0) {
        if (growth < 1.05 || growth > 2.0 || seg_bits < 1 || seg_bits > 16 || absent < 1000) {
            fprintf(stderr, BENCH_NAME ": --grow 1.05 to 2, --segments a power of two from 2 "
                            "to 65536, --absent at least 1000\n");
            return 2;
        }
        return grow_main(n, seg_bits, growth, absent, quotient, times_only);
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
            flagged += (t.b[i].map & SPARE_FIELD) != 0;

        f = make_at(AMQ_KIND_BLOCKED, n, 0, 0.01);
        fill(f, 0, lo_n);
        s = cpu_s();
        fill(f, lo_n, n);
        s = cpu_s() - s;
        if (s < t_blk)
            t_blk = s;
        amq_filter_free(f);

        table_init_as(&t2, (uint64_t)((double)nb * GROWTH) + 1u, 0);
        s = cpu_s();
        rewrite(&t, &t2);
        s = cpu_s() - s;
        if (s < t_rw)
            t_rw = s;
        moved = 0;
        for (i = 0; i < t.nb; i++)
            moved += (uint64_t)__builtin_popcountll(t.b[i].map & MAP_MASK);
        moved += t.nsp;
        bits = (double)t.nb * 512.0 / (double)n;
        table_free(&t);
        if (turn == 0) {
            int r;
            for (r = 1; r < rewrites; r++) { /* the rewrite again, across powers of two */
                table t3;
                table_init_as(&t3, (uint64_t)((double)t2.nb * GROWTH) + 1u, 0);
                rewrite(&t2, &t3);
                table_free(&t2);
                t2 = t3;
            }
            for (i = 0; i < t2.nb * 8u; i++) /* every byte, to compare the rewrites' */
                digest = mix(digest ^ ((const uint64_t *)(const void *)t2.b)[i]);
            for (i = 0; i < t2.nsp; i++)
                digest = mix(digest ^ t2.sp[i].g ^ (uint64_t)t2.sp[i].v << 48);
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
        printf("the last table's digest: %016llx\n", (unsigned long long)digest);
    }
    return missing != 0;
}
