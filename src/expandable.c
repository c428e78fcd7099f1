/*
 * expandable.c - a filter that is never sized: a table of 64-byte buckets
 * that doubles in place, in the manner of InfiniFilter (Dayan et al.,
 * SIGMOD 2023) and taffy cuckoo filters (Apple 2021), with Aleph's answer
 * (Dayan, Bercea, Pagh, PVLDB 2024) for fingerprints that run out.
 * docs/expandable.md says why this shape and what it costs.
 *
 * A key's 64-bit hash u is read from the top: its first q bits pick one of
 * 2^q buckets, the next 15 bits are its fingerprint.  A bucket is 32
 * little-endian 16-bit lanes: lanes 0..30 hold entries, lane 31 sums up the
 * bucket's entries that did not fit and went to the stash (stash_bits).  An entry of L
 * fingerprint bits (0 <= L <= 15) is those bits at the top of its lane, a 1
 * below them and zeros under it, so an empty lane is 0 and every entry
 * carries its own length.
 *
 * Doubling (q -> q + 1) moves bucket i's entries to 2i or 2i + 1 by their
 * first fingerprint bit and shifts that bit out, a few buckets per add (as
 * Redis's dict rehashes), so that no add copies the whole table: until
 * bucket i is split, its keys are read and written in the old table, whose
 * entries keep one bit more (see "doubling" below).  An entry loses one bit
 * per doubling, entries added since keep 15, and an entry that has no bit
 * left (L = 0, "void") is copied into both halves, so that it still answers
 * every key that could be its own.  Keys of one generation are about as
 * many as all older ones together, so each generation adds about the same
 * to the false-positive rate (docs/expandable.md has the sum).
 *
 * The stash is an open-addressing table of (bucket, lane) cells for the
 * few entries whose bucket was full; a query reads it only when its
 * bucket's lane 31 says one of them may answer it: a bit per 4-bit prefix
 * of the key's entry, so that most keys not added skip the stash even in
 * buckets that have cells there.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "amq/filter.h"
#include "amq/hash.h"
#include "common/alloc.h"
#include "common/cpu.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/prefetch.h"
#include "common/xxh3_8.h"
#include "expandable_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EXP_HAVE_AVX2 1
#endif

#define MAX_LOAD 0.8       /* entries per data lane before doubling */
#define DATA_MASK UINT64_C(0x3FFFFFFFFFFFFFFF) /* two mask bits per lane, lane 31 off */
/* Batched queries keep this many buckets' lines in flight ahead of the key
 * answered; a table larger than EXP_FAR_BYTES is prefetched into L2 only
 * (an L1 prefetch holds one of L1's few miss buffers until DRAM answers;
 * L2 has more), as the blocked kind does (blocked_impl.h). */
#ifndef BATCH_AHEAD
#define BATCH_AHEAD 64u
#endif
#ifndef EXP_FAR_BYTES
#define EXP_FAR_BYTES ((uint64_t)32 << 20)
#endif
#define MIGRATE_STEP 4u /* old buckets split per add during a doubling */
#define COPIES_MAX 32u  /* entries answering one key: an add past them is AMQ_EFULL */
#define BUCKET_CELLS_MAX 256u /* stash cells of one full bucket: an add past them is AMQ_EFULL */

typedef uint64_t (*match_fn)(const uint16_t *b, uint16_t qv);

/* ---- one bucket ---------------------------------------------------------------------- */

static inline uint64_t bucket_of(const amq_expand *x, uint64_t u)
{
    return u >> (64 - x->q);
}

/* The key's full-length entry: its 15 fingerprint bits and the marker. */
static inline uint16_t entry_of(const amq_expand *x, uint64_t u)
{
    return (uint16_t)(((u << x->q) >> 48) | 1u);
}

static inline uint32_t entry_len(uint16_t s)
{
    return FP_BITS - (uint32_t)__builtin_ctz(s);
}

/* Does entry s answer a key whose full-length entry is qv?  The bits above
 * s's marker must agree; s ^ (s - 1) is the marker and the zeros under it. */
static inline int lane_matches(uint16_t s, uint16_t qv)
{
    uint16_t low = (uint16_t)(s ^ (uint16_t)(s - 1u));
    return s != 0 && (uint16_t)((s ^ qv) & (uint16_t)~low) == 0;
}

/* Two bits per matching lane (2i and 2i + 1), as the AVX2 byte mask has them. */
static inline uint64_t match_scalar(const uint16_t *b, uint16_t qv)
{
    uint64_t m = 0;
    uint32_t i;
    for (i = 0; i < LANES; i++)
        m |= (uint64_t)lane_matches(amq_load16(b + i), qv) * (UINT64_C(3) << (2 * i));
    return m & DATA_MASK;
}

static uint64_t empty_scalar(const uint16_t *b)
{
    uint64_t m = 0;
    uint32_t i;
    for (i = 0; i < DATA_LANES; i++)
        m |= (uint64_t)(b[i] == 0) * (UINT64_C(3) << (2 * i));
    return m;
}

#ifdef EXP_HAVE_AVX2
__attribute__((target("avx2"))) static uint64_t empty_avx2(const uint16_t *b)
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i lo = _mm256_load_si256((const __m256i *)(const void *)b);
    __m256i hi = _mm256_load_si256((const __m256i *)(const void *)(b + 16));
    uint64_t m = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi16(lo, zero)) |
                 (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi16(hi, zero)) << 32;
    return m & DATA_MASK;
}

__attribute__((target("avx2"))) static inline uint64_t match_avx2(const uint16_t *b, uint16_t qv)
{
    const __m256i q = _mm256_set1_epi16((short)qv), one = _mm256_set1_epi16(1);
    const __m256i zero = _mm256_setzero_si256();
    uint64_t m = 0;
    int h;
    for (h = 0; h < 2; h++) {
        __m256i s = _mm256_load_si256((const __m256i *)(const void *)(b + 16 * h));
        __m256i low = _mm256_xor_si256(s, _mm256_sub_epi16(s, one));
        __m256i diff = _mm256_andnot_si256(low, _mm256_xor_si256(s, q));
        __m256i hit = _mm256_andnot_si256(_mm256_cmpeq_epi16(s, zero),
                                          _mm256_cmpeq_epi16(diff, zero));
        m |= (uint64_t)(uint32_t)_mm256_movemask_epi8(hit) << (32 * h);
    }
    return m & DATA_MASK;
}
#endif

/* A batched query's test of one bucket: bit 0 the answer, bit 1 set when
 * the bucket says no and lane 31 says a stashed entry may answer. */
static inline uint32_t test_scalar(const uint16_t *b, uint16_t qv)
{
    const uint32_t hit = match_scalar(b, qv) != 0;
    return hit | ((hit ^ 1u) & (uint32_t)stash_may(b, qv)) << 1;
}

#ifdef EXP_HAVE_AVX2
/* match_avx2's test with lane 31 taken from the register that holds it. */
__attribute__((target("avx2"))) static inline uint32_t test_avx2(const uint16_t *b, uint16_t qv)
{
    const __m256i q = _mm256_set1_epi16((short)qv), one = _mm256_set1_epi16(1);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i lo = _mm256_load_si256((const __m256i *)(const void *)b);
    const __m256i hi = _mm256_load_si256((const __m256i *)(const void *)(b + 16));
    const __m256i dl = _mm256_andnot_si256(_mm256_xor_si256(lo, _mm256_sub_epi16(lo, one)),
                                           _mm256_xor_si256(lo, q));
    const __m256i dh = _mm256_andnot_si256(_mm256_xor_si256(hi, _mm256_sub_epi16(hi, one)),
                                           _mm256_xor_si256(hi, q));
    const __m256i hl =
        _mm256_andnot_si256(_mm256_cmpeq_epi16(lo, zero), _mm256_cmpeq_epi16(dl, zero));
    const __m256i hh =
        _mm256_andnot_si256(_mm256_cmpeq_epi16(hi, zero), _mm256_cmpeq_epi16(dh, zero));
    const uint64_t m = ((uint64_t)(uint32_t)_mm256_movemask_epi8(hl) |
                        (uint64_t)(uint32_t)_mm256_movemask_epi8(hh) << 32) &
                       DATA_MASK;
    const uint32_t hit = m != 0;
    const uint32_t meta = (uint32_t)(uint16_t)_mm256_extract_epi16(hi, 15);
    return hit | ((hit ^ 1u) & (meta >> (qv >> 12)) & 1u) << 1;
}
#endif

static void choose_match(amq_expand *x)
{
    x->match = match_scalar;
    x->empty = empty_scalar;
#ifdef EXP_HAVE_AVX2
    /* the lanes are read as they lie in memory: little-endian hosts only;
     * AMQ_SIMD caps it through cpu.c, as every kind */
    if (amq_cpu_has(AMQ_CPU_AVX2)) {
        x->match = match_avx2;
        x->empty = empty_avx2;
    }
#endif
}

/* The first free data lane of b, or -1. */
static inline int free_lane(const amq_expand *x, const uint16_t *b)
{
    uint64_t m = x->empty(b);
    return m != 0 ? (int)(__builtin_ctzll(m) / 2) : -1;
}

/* ---- the stash -------------------------------------------------------------------------
 * It grows as Redis's dict does, without a pause: a resize allocates the
 * larger array and leaves the cells in the smaller one (prev), from which
 * each add moves STASH_STEP cells' worth (stash_move); until then a lookup
 * probes both.  A cell is in exactly one of the two.  Small stashes are
 * moved at once. */

#define STASH_STEP 8u        /* prev cells examined per add */
#define STASH_AT_ONCE 512u   /* a prev of at most this many cells moves at once */

/* The walk over bucket b's cells in lv's stash (a = 0) or in a smaller
 * stash being moved into it (a = 1). */
static inline run_walk level_run(const amq_expand *lv, int a, uint64_t b)
{
    return a == 0 ? run_of(cells(lv), lv->stash_cap, b) : run_of(prev_cells(lv), lv->prev_cap, b);
}

/* Does a cell of bucket b in array cs answer qv?  Probes stop at an empty
 * cell or after every cell (a loaded stash may be full). */
static int probe_matches(const uint64_t *cs, uint64_t cap, uint64_t b, uint16_t qv)
{
    run_walk w = run_of(cs, cap, b);
    uint64_t c;
    while ((c = run_next(&w)) != 0)
        if (lane_matches((uint16_t)c, qv))
            return 1;
    return 0;
}

static int stash_matches(const amq_expand *x, uint64_t b, uint16_t qv)
{
    return probe_matches(cells(x), x->stash_cap, b, qv) |
           probe_matches(prev_cells(x), x->prev_cap, b, qv);
}

/* Puts cell c in array cs; AMQ_EFULL only for a loaded stash whose count
 * lied (the counts keep every array at most half full). */
static int insert_cell(uint64_t *cs, uint64_t cap, uint64_t c)
{
    uint64_t i, p = cap != 0 ? cell_pos(c >> 16, cap) : 0;
    for (i = 0; i < cap; i++, p = (p + 1) & (cap - 1)) {
        if (cs[p] == 0) {
            cs[p] = c;
            return AMQ_OK;
        }
    }
    return AMQ_EFULL;
}

/* Removes the cell at p of array cs, moving later cells of its probe run
 * back (linear probing without tombstones): every cell stays reachable
 * from its home, and no cell moves to before p. */
static void delete_cell(uint64_t *cs, uint64_t cap, uint64_t *n, uint64_t p)
{
    uint64_t mask = cap - 1, j = p, k, c, i;
    cs[p] = 0;
    *n -= *n > 0;
    for (i = 0; i < cap; i++) {
        j = (j + 1) & mask;
        c = cs[j];
        if (c == 0)
            return;
        k = cell_pos(c >> 16, cap);
        /* c may move to p when its home k is not in (p, j] cyclically */
        if ((j > p && (k <= p || k > j)) || (j < p && k <= p && k > j)) {
            cs[p] = c;
            cs[j] = 0;
            p = j;
        }
    }
}

/* Moves prev's cells from position prev_pos on, examining up to `steps`
 * positions; a deletion may bring a later cell to prev_pos, which is
 * examined again.  prev goes when it is empty. */
static void stash_move(amq_expand *x, uint64_t steps)
{
    uint64_t c;
    for (; steps > 0 && x->prev_n > 0 && x->prev_pos < x->prev_cap; steps--) {
        c = prev_cells(x)[x->prev_pos];
        if (c == 0) {
            x->prev_pos++;
            continue;
        }
        delete_cell(prev_cells(x), x->prev_cap, &x->prev_n, x->prev_pos);
        if (insert_cell(cells(x), x->stash_cap, c) != AMQ_OK) {
            /* no room (counts that lied): the cell stays where it was, never dropped */
            (void)insert_cell(prev_cells(x), x->prev_cap, c);
            x->prev_n++;
            return;
        }
        x->stash_n++;
    }
    if (x->prev_n == 0 || x->prev_pos >= x->prev_cap) {
        amq_region_free(&x->stash_prev, &x->alloc);
        x->prev_cap = x->prev_n = x->prev_pos = 0;
    }
}

/* A stash array of cap cells, in 4 KiB pages: cells are written at random
 * places, and each first write to a 2 MiB huge page would have the add
 * wait for the kernel to zero all of it (measured: ~4.5 ms each on the
 * development VM, several per add while a stash moves). */
static int stash_alloc(amq_expand *x, amq_region *r, uint64_t cap)
{
    if (amq_region_alloc(r, &x->alloc, (size_t)(cap * 8)) != AMQ_OK)
        return AMQ_ENOMEM;
#ifdef MADV_NOHUGEPAGE
    if (r->how == AMQ_REGION_MMAP)
        (void)madvise(r->base, r->base_size, MADV_NOHUGEPAGE);
#endif
    return AMQ_OK;
}

/* A stash of cap cells (a pending move is finished first); the cells move
 * over the next adds, or now when they are few.  The array is the level's
 * spare when the add reserved one (at least cap cells: it is taken whole),
 * and is had before a cell moves, so that a failure here moves nothing. */
static int stash_resize(amq_expand *x, uint64_t cap)
{
    amq_region r;
    if (cap > (UINT64_C(1) << 40))
        return AMQ_ELIMIT;
    if (x->spare_cap >= cap) {
        r = x->spare;
        cap = x->spare_cap;
        memset(&x->spare, 0, sizeof x->spare);
        x->spare_cap = 0;
    } else if (stash_alloc(x, &r, cap) != AMQ_OK) {
        return AMQ_ENOMEM;
    }
    if (x->prev_cap != 0)
        stash_move(x, UINT64_MAX);
    if (x->prev_cap != 0) {
        amq_region_free(&r, &x->alloc);
        return AMQ_EFULL; /* a move found no room: keep both arrays as they are */
    }
    amq_region_free(&x->stash_prev, &x->alloc); /* empty here (a clone's copy of none) */
    x->stash_prev = x->stash;
    x->prev_cap = x->stash_cap;
    x->prev_n = x->stash_n;
    x->prev_pos = 0;
    x->stash = r;
    x->stash_cap = cap;
    x->stash_n = 0;
    if (x->prev_cap <= STASH_AT_ONCE)
        stash_move(x, UINT64_MAX);
    return AMQ_OK;
}

static int stash_put(amq_expand *x, uint64_t b, uint16_t s)
{
    int rc;
    if (x->stash_n + x->prev_n + 1 > x->stash_cap / 2) {
        rc = stash_resize(x, x->stash_cap == 0 ? STASH_MIN : x->stash_cap * 2);
        if (rc != AMQ_OK)
            return rc;
    }
    rc = insert_cell(cells(x), x->stash_cap, b << 16 | s);
    x->stash_n += rc == AMQ_OK;
    return rc;
}

/* ---- add, query, remove ------------------------------------------------------------------ */

/* Lane 31 of bucket b of x as its stash cells make it (after a removal). */
static uint16_t stash_summary(const amq_expand *x, uint64_t b)
{
    uint16_t bits = 0;
    uint64_t c;
    int a;
    for (a = 0; a < 2; a++) { /* the stash, then a prev in moving */
        run_walk w = level_run(x, a, b);
        while ((c = run_next(&w)) != 0)
            bits |= stash_bits((uint16_t)c);
    }
    return bits;
}

/* Puts entry s into bucket b of x: a free lane, else the stash. */
static int place(amq_expand *x, uint64_t b, uint16_t s)
{
    uint16_t *bk = bucket_at(x, b);
    int lane = free_lane(x, bk);
    int rc;
    if (lane >= 0) {
        bk[lane] = s;
        return AMQ_OK;
    }
    rc = stash_put(x, b, s);
    if (rc == AMQ_OK)
        bk[META_LANE] |= stash_bits(s);
    return rc;
}

static uint64_t entries(const amq_expand *x)
{
    return x->total;
}

/* The expected false-positive rate: a key not added meets one bucket, and
 * an entry of L bits there answers it with probability 2^-L. */
static double rate_of(const amq_expand *x)
{
    double sum = 0.0;
    uint32_t l;
    for (l = 0; l <= FP_BITS; l++)
        sum += ldexp((double)x->cnt[l], -(int)l);
    return sum / ldexp(1.0, (int)x->q);
}

/* What one more generation adds to the rate when the table is full again. */
static double generation_rate(void)
{
    return MAX_LOAD * DATA_LANES * ldexp(1.0, -(int)FP_BITS - 1);
}

static uint64_t max_entries(const amq_expand *x)
{
    return x->limit;
}

static void set_q(amq_expand *x, uint32_t q)
{
    x->q = q;
    x->limit = (uint64_t)(MAX_LOAD * DATA_LANES * ldexp(1.0, (int)q));
}

/* AMQ_ELIMIT when a doubling would pass MAX_Q or let the expected rate pass
 * the target, else AMQ_OK.  A split moves no count (they are kept as they
 * will be once split), so the answer is the same before and after a step. */
static int grow_limit(const amq_expand *x)
{
    if (x->q + 1 > MAX_Q || rate_of(x) + generation_rate() > x->fpp)
        return AMQ_ELIMIT;
    return AMQ_OK;
}

/* A growth's arrays, allocated before the add changes anything (add_reserve). */
typedef struct {
    amq_region table;  /* the table of 2^(q+1) buckets */
    amq_expand *level; /* the old level's struct */
    amq_region stash;  /* the new table's stash room (stash_cap cells), or none */
    uint64_t stash_cap;
} grow_spare;

static int grow(amq_expand *x, grow_spare *sp);
static int grow_all(amq_expand *x);
static int migrate(amq_expand *x, uint64_t steps);
static int add_reserve(amq_expand *x, uint64_t u, int due, grow_spare *g);
static void add_release(amq_expand *x, grow_spare *g);

/* The level and bucket a key lives in: during a doubling, a key whose old
 * bucket (b / 2) is not split yet is in the old table. */
static inline const amq_expand *route(const amq_expand *x, uint64_t u, uint64_t *b)
{
    *b = bucket_of(x, u);
    if (__builtin_expect((*b >> 1) >= x->mig, 0)) {
        *b >>= 1;
        return x->old;
    }
    return x;
}

/* Puts the key's full-length entry where route() says; an entry put in the
 * old table is counted at the length it will have once split. */
/* Entries answering qv in bucket b of lv: its lanes, and its stash cells
 * when lane 31 says some may. */
static uint64_t copies_of(const amq_expand *lv, uint64_t b, uint16_t qv)
{
    const uint16_t *bk = bucket_at(lv, b);
    uint64_t n = (uint64_t)__builtin_popcountll(lv->match(bk, qv)) / 2, c;
    int a;
    for (a = 0; a < 2 && stash_may(bk, qv); a++) { /* the stash, then a prev in moving */
        run_walk w = level_run(lv, a, b);
        while ((c = run_next(&w)) != 0)
            n += (uint64_t)lane_matches((uint16_t)c, qv);
    }
    return n;
}

/* Does the key of hash u have COPIES_MAX entries answering it already?
 * Adds of one key are counted (a removal takes one back), and past its
 * bucket's lanes each copy goes to the stash: without a bound, a key added
 * again and again would grow one probe run that every add and query of its
 * bucket walks, and double the table for it. */
static int copies_full(const amq_expand *x, uint64_t u)
{
    uint64_t b;
    const amq_expand *lv = route(x, u, &b);
    return copies_of(lv, b, entry_of(lv, u)) >= COPIES_MAX;
}

/* Is the key's bucket full with BUCKET_CELLS_MAX cells of its own in the
 * stash?  Random keys put a few there (a bucket holds 24.8 keys on average
 * when the table doubles); only keys crowded into one bucket (a weak hash,
 * or keys chosen against a known seed) reach the bound, and without it
 * each of them would lengthen the one probe run that every add and query
 * of the bucket walks (adds quadratic in the crowd) and double the table
 * for the stash. */
static int bucket_crowded(const amq_expand *x, uint64_t u)
{
    uint64_t b, n = 0;
    const amq_expand *lv = route(x, u, &b);
    const uint16_t *bk = bucket_at(lv, b);
    int a;
    if (bk[META_LANE] == 0 || free_lane(lv, bk) >= 0)
        return 0;
    for (a = 0; a < 2; a++) { /* the stash, then a prev in moving */
        run_walk w = level_run(lv, a, b);
        while (run_next(&w) != 0)
            if (++n >= BUCKET_CELLS_MAX)
                return 1;
    }
    return 0;
}

static int put_key(amq_expand *x, uint64_t u)
{
    uint64_t b;
    amq_expand *lv = (amq_expand *)(uintptr_t)route(x, u, &b);
    int rc = place(lv, b, entry_of(lv, u));
    if (rc == AMQ_OK)
        x->cnt[lv == x ? FP_BITS : FP_BITS - 1]++;
    return rc;
}

/* Adds the key whose hash's h1 is u (the one half an add reads: passed
 * alone, one register, as gcc's clone of the static add_one had it). */
int amq_exp_add(amq_expand *x, uint64_t u)
{
    grow_spare g;
    int rc, due;
    if (amq_region_is_borrowed(&x->table))
        return AMQ_EREADONLY;
    /* Every refusal is decided before the add moves a bucket or a stash cell, on the
     * filter as it is: a refused add changes nothing, so a copy that never saw it (a
     * replica, an AOF replayed: a refused command is not propagated) takes the same
     * later adds.  A split does not make a key's bucket more crowded nor change its
     * copies (its old bucket holds all of its half's entries), so no add is taken here
     * that would have been refused after the step. */
    if (copies_full(x, u))
        return AMQ_EFULL; /* nothing added: the key answers present */
    if (bucket_crowded(x, u))
        return AMQ_EFULL; /* nothing added */
    due = entries(x) + 1 > max_entries(x) ||
          x->stash_n + x->prev_n + 1 > (max_entries(x) >> 5) + STASH_MIN;
    if (due && (rc = grow_limit(x)) != AMQ_OK)
        return rc;
    /* and so is running out of memory: what the add allocates, it has now */
    if ((rc = add_reserve(x, u, due, &g)) != AMQ_OK)
        return rc;
    if (x->prev_cap != 0)
        stash_move(x, STASH_STEP);
    if (x->old != NULL) {
        if (x->old->prev_cap != 0)
            stash_move(x->old, STASH_STEP);
        if ((rc = migrate(x, MIGRATE_STEP)) != AMQ_OK)
            goto done;
    }
    if (due && (rc = grow(x, &g)) != AMQ_OK)
        goto done;
    rc = put_key(x, u);
    if (rc == AMQ_EFULL) { /* a stash with no free cell (a loaded file's count lied): grow */
        rc = grow_all(x);
        if (rc == AMQ_OK)
            rc = put_key(x, u);
    }
    if (rc == AMQ_OK) {
        x->total++;
        x->items++;
        rc = 1;
    }
done:
    add_release(x, &g);
    return rc;
}

/* The stash's cells for bucket b, out of the query's line: a call only
 * the rare query takes (its bucket answered no and has cells stashed). */
__attribute__((noinline, cold)) static int stash_hit(const amq_expand *lv, uint64_t b, uint16_t qv)
{
    return stash_matches(lv, b, qv);
}

/* The one query body, inlined into each entry with its bucket test (zstd's
 * rule: a generator is a name and one call to an always-inline body). */
static inline __attribute__((always_inline)) int contains_body(const amq_expand *x, uint64_t u,
                                                               match_fn match)
{
    uint64_t b;
    const amq_expand *lv = route(x, u, &b);
    const uint16_t *bk = bucket_at(lv, b);
    uint16_t qv = entry_of(lv, u);
    int hit = match(bk, qv) != 0;
    /* one branch, rarely taken: the stash is read only when the bucket did
     * not answer and says a stashed entry may; the answer itself is not
     * branched on, so that the next keys' reads start before this one's
     * line arrives */
    if (__builtin_expect((hit == 0) & stash_may(bk, qv), 0))
        return stash_hit(lv, b, qv);
    return hit;
}

int amq_exp_contains(const amq_expand *x, amq_hash128 h)
{
    return contains_body(x, h.h1, x->match);
}

/* XXH3-128(key, 8, seed).low64 - amq_filter_hash's h1 of an 8-byte key
 * (common/xxh3_8.h); x8 holds the seed's part (amq_exp_set_hash).  Tested
 * equal to amq_filter_hash for several seeds (test_expandable). */
static inline uint64_t xxh3_8(uint64_t x8, const void *key)
{
    return amq_xxh3_8(x8, key);
}

/* Any other key's h1, exactly as amq_filter_hash gives it (a call). */
__attribute__((noinline)) static uint64_t key_h1_any(const amq_expand *x, const void *key,
                                                     size_t len)
{
    return amq_hash_key(x->hash_algo, x->seed, key, len).h1;
}

static inline __attribute__((always_inline)) uint64_t key_h1(const amq_expand *x,
                                                             const void *key, size_t len)
{
    if (__builtin_expect(len == 8 && x->hash_algo == AMQ_HASH_XXH3, 1))
        return xxh3_8(x->x8, key);
    return key_h1_any(x, key, len);
}

/* The handle's one-key query (op_contains_key_of): hash, bucket test and
 * stash test in one body per instruction set, no call between them, so
 * that the next keys' reads overlap this one's (measured: one-key queries
 * are bound by how many misses are in flight, not by the miss itself, so
 * every instruction of the path counts). */
static int contains_key_scalar(const void *impl, const void *key, size_t len)
{
    const amq_expand *x = impl;
    return contains_body(x, key_h1(x, key, len), match_scalar);
}

#ifdef EXP_HAVE_AVX2
__attribute__((target("avx2"))) static int contains_key_avx2(const void *impl, const void *key,
                                                              size_t len)
{
    const amq_expand *x = impl;
    return contains_body(x, key_h1(x, key, len), match_avx2);
}
#endif

/* The handle's one-key add (amq_exp_add_key): the key hashed inline as the
 * one-key query hashes it, and, when nothing is pending (no doubling, no
 * stash being moved, no growth due) and the bucket has a free lane and no
 * stashed entry that may answer the key, the entry written there from the
 * one read of the bucket.  That is amq_exp_add's outcome to the bit: a
 * bucket with a free lane holds at most 30 copies, and the stash is counted
 * only when lane 31 says it may hold some.  Every other add goes through
 * amq_exp_add (its bucket now in cache). */
typedef uint64_t (*empty_fn)(const uint16_t *b);

static inline __attribute__((always_inline)) int add_body(amq_expand *x, uint64_t u,
                                                          empty_fn empty)
{
    uint16_t *bk;
    uint16_t qv;
    uint64_t e;
    const int calm = (x->old == NULL) & (x->prev_cap == 0) & (x->total < x->limit) &
                     (x->stash_n + x->prev_n < (x->limit >> 5) + STASH_MIN) &
                     !amq_region_is_borrowed(&x->table);
    if (__builtin_expect(!calm, 0))
        return amq_exp_add(x, u);
    bk = bucket_at(x, bucket_of(x, u));
    qv = entry_of(x, u);
    e = empty(bk);
    if (__builtin_expect((e == 0) | stash_may(bk, qv), 0))
        return amq_exp_add(x, u);
    bk[__builtin_ctzll(e) / 2] = qv;
    x->cnt[FP_BITS]++;
    x->total++;
    x->items++;
    return 1;
}

static int add_key_scalar(amq_expand *x, const void *key, size_t len)
{
    return add_body(x, key_h1(x, key, len), empty_scalar);
}

#ifdef EXP_HAVE_AVX2
__attribute__((target("avx2"))) static int add_key_avx2(amq_expand *x, const void *key,
                                                         size_t len)
{
    return add_body(x, key_h1(x, key, len), empty_avx2);
}
#endif

int amq_exp_add_key(amq_expand *x, const void *key, size_t len)
{
#ifdef EXP_HAVE_AVX2
    if (x->empty == empty_avx2)
        return add_key_avx2(x, key, len);
#endif
    return add_key_scalar(x, key, len);
}

/* Removes the longest entry of bucket b of level lv that answers qv and
 * returns its length, or -1: if it is another key's, that key agrees with
 * this one on every bit of it, so this key's own entry (no longer) answers
 * that key too. */
static int remove_in(amq_expand *lv, uint64_t b, uint16_t qv)
{
    uint64_t m, best_cell = UINT64_MAX, c;
    uint16_t *bk = bucket_at(lv, b);
    int best_lane = -1, a, best_arr = 0;
    uint32_t best_len = 0, len;

    for (m = lv->match(bk, qv); m != 0; m &= m - 1) {
        uint32_t lane = (uint32_t)__builtin_ctzll(m) / 2;
        m &= m - 1; /* the lane's second bit */
        len = entry_len(bk[lane]);
        if (best_lane < 0 || len > best_len) {
            best_lane = (int)lane;
            best_len = len;
        }
    }
    for (a = 0; a < 2 && bk[META_LANE] != 0; a++) { /* the stash, then a prev in moving */
        run_walk w = level_run(lv, a, b);
        while ((c = run_next(&w)) != 0) {
            if (lane_matches((uint16_t)c, qv) &&
                ((best_lane < 0 && best_cell == UINT64_MAX) || entry_len((uint16_t)c) > best_len)) {
                best_cell = w.at;
                best_arr = a;
                best_len = entry_len((uint16_t)c);
            }
        }
    }
    if (best_cell != UINT64_MAX) {
        if (best_arr == 0)
            delete_cell(cells(lv), lv->stash_cap, &lv->stash_n, best_cell);
        else
            delete_cell(prev_cells(lv), lv->prev_cap, &lv->prev_n, best_cell);
        bk[META_LANE] = stash_summary(lv, b);
    } else if (best_lane >= 0) {
        bk[best_lane] = 0;
    } else {
        return -1;
    }
    return (int)best_len;
}

/* An add refuses the key first for its copies (copies_full), then for its
 * crowded bucket: what it read, read again. */
uint32_t amq_exp_refusal(const amq_expand *x, uint64_t u)
{
    return copies_full(x, u) ? AMQ_REFUSAL_COPIES : AMQ_REFUSAL_FULL;
}

int amq_exp_remove(amq_expand *x, amq_hash128 h)
{
    uint64_t b, w = 1;
    amq_expand *lv;
    int len;

    if (amq_region_is_borrowed(&x->table))
        return AMQ_EREADONLY;
    lv = (amq_expand *)(uintptr_t)route(x, h.h1, &b);
    len = remove_in(lv, b, entry_of(lv, h.h1));
    if (len < 0)
        return 0;
    if (lv != x) { /* counted at its split length: a void entry as its two copies */
        w = len == 0 ? 2 : 1;
        len = len == 0 ? 0 : len - 1;
    }
    if (x->cnt[len] >= w && x->total >= w) {
        x->cnt[len] -= w;
        x->total -= w;
    }
    if (x->items > 0)
        x->items--;
    return 1;
}

/* ---- doubling ----------------------------------------------------------------------------
 * grow() allocates the table of 2^(q+1) buckets and keeps the old one as
 * x->old; each add then splits MIGRATE_STEP old buckets, in order, before
 * its own key (x->mig of them are split).  A key whose old bucket i is
 * split is in new bucket 2i or 2i + 1, else in old bucket i: one bucket
 * either way.  A doubling starts when the table holds limit(q) entries and
 * ends after 2^q / MIGRATE_STEP adds, long before the new table's own
 * limit of 2 limit(q) = 49.6 * 2^q entries.  The counts (cnt, total) are
 * always those of the split table: an old entry of L bits counts as L - 1,
 * an old void entry as two.  A key added to an old bucket during the
 * doubling gets 14 bits where it would have had 15 (about 1 % of a
 * generation's keys: negligible in the rate).  The peak memory is the old
 * and the new table, as a doubling that copies at once. */

/* Entry s of bucket b, after doubling, goes to dst's bucket 2b + its first
 * bit with that bit shifted out; a void entry (L = 0) goes to both. */
static int split_into(amq_expand *dst, uint64_t b, uint16_t s)
{
    int rc;
    if (s == 0x8000u) {
        rc = place(dst, 2 * b, s);
        return rc != AMQ_OK ? rc : place(dst, 2 * b + 1, s);
    }
    return place(dst, 2 * b + (s >> 15), (uint16_t)(s << 1));
}

/* The lanes of src that go to half `side`, from lane 0 of dst up: each
 * lane gives each half at most one entry, so a half cannot overflow (the
 * writer of a doubling as its split table, expandable_kind.c). */
void amq_exp_split_half(const uint16_t *src, uint32_t side, uint16_t *dst)
{
    uint32_t fill = 0, lane;
    uint16_t s;
    for (lane = 0; lane < DATA_LANES; lane++) {
        s = src[lane];
        if (s == 0x8000u) /* void: both halves */
            dst[fill++] = s;
        else if (s != 0 && (uint32_t)(s >> 15) == side)
            dst[fill++] = (uint16_t)(s << 1);
    }
}

/* Both halves in one pass over src (the add's own path: amq_exp_split_half
 * twice reads and tests every lane twice). */
static void split_bucket(const uint16_t *src, uint16_t *half0, uint16_t *half1)
{
    uint16_t *half[2];
    uint32_t fill[2] = {0, 0}, lane, side;
    uint16_t s;
    half[0] = half0;
    half[1] = half1;
    for (lane = 0; lane < DATA_LANES; lane++) {
        s = src[lane];
        if (s == 0)
            continue;
        if (s == 0x8000u) { /* void: both halves */
            half[0][fill[0]++] = s;
            half[1][fill[1]++] = s;
            continue;
        }
        side = s >> 15;
        half[side][fill[side]++] = (uint16_t)(s << 1);
    }
}

/* The cells of old bucket b in array cs: the cells their split makes (a
 * void entry's two), and split into dst when given (the old stash keeps
 * them: it goes at the end; a half's count saturates only for a loaded
 * stash's stray cells, which are dropped). */
static uint64_t split_cells(amq_expand *dst, const uint64_t *cs, uint64_t cap, uint64_t b)
{
    run_walk w = run_of(cs, cap, b);
    uint64_t c, k = 0;
    while ((c = run_next(&w)) != 0) {
        k += (uint16_t)c == 0x8000u ? 2 : 1;
        if (dst != NULL)
            (void)split_into(dst, b, (uint16_t)c);
    }
    return k;
}

/* The most stash cells the split of bucket b of level o adds to the split
 * table: one per entry it made from o's stash (they may find free lanes). */
static uint64_t split_need(const amq_expand *o, uint64_t b)
{
    if (bucket_at(o, b)[META_LANE] == 0)
        return 0;
    return split_cells(NULL, cells(o), o->stash_cap, b) +
           split_cells(NULL, prev_cells(o), o->prev_cap, b);
}

/* The stash size x grows to for `need` cells: doubled until they are at most
 * half of it, as stash_put grows it one cell at a time. */
static uint64_t stash_cap_for(uint64_t cap, uint64_t need)
{
    while (need > cap / 2 && cap <= (UINT64_C(1) << 40))
        cap = cap == 0 ? STASH_MIN : cap * 2;
    return cap;
}

/* Room for `need` cells in x's stash, so that the cells of one split
 * bucket go in without a failure half-way. */
static int stash_reserve(amq_expand *x, uint64_t need)
{
    uint64_t cap = stash_cap_for(x->stash_cap, need);
    return cap == x->stash_cap ? AMQ_OK : stash_resize(x, cap);
}

/* Splits old bucket b into x's empty buckets 2b and 2b + 1: its lanes, then
 * its stash cells (a lane free in the half, else x's stash).  Nothing
 * changes when it fails (the stash room is taken first). */
static int split_one(amq_expand *x, const amq_expand *o, uint64_t b)
{
    const uint16_t *src = bucket_at(o, b);
    uint64_t k = split_need(o, b);
    int rc;

    if (k != 0 && (rc = stash_reserve(x, x->stash_n + x->prev_n + k)) != AMQ_OK)
        return rc;
    split_bucket(src, bucket_at(x, 2 * b), bucket_at(x, 2 * b + 1));
    if (k != 0) {
        (void)split_cells(x, cells(o), o->stash_cap, b);
        (void)split_cells(x, prev_cells(o), o->prev_cap, b);
    }
    return AMQ_OK;
}

static void level_free(amq_expand *o, amq_allocator *al)
{
    if (o == NULL)
        return;
    amq_region_free(&o->spare, al);
    amq_region_free(&o->table, al);
    amq_region_free(&o->stash, al);
    amq_region_free(&o->stash_prev, al);
    amq_free(al, o, sizeof *o);
}

/* Splits up to `steps` more old buckets; the old table goes when all are. */
/* The split part of a mapped old table goes back to the system 2 MiB at a
 * time, as the split pointer passes it: its buckets are never read again,
 * and unmapping the whole table at the end took one add 21 ms at 256 MiB
 * (4 KiB pages).  The peak memory drops as the doubling goes on. */
#define RELEASE_CHUNK ((uint64_t)2 << 20)

static void release_split(amq_expand *x)
{
#ifdef MADV_DONTNEED
    amq_expand *o = x->old;
    uint64_t upto = (x->mig * BUCKET_BYTES) & ~(RELEASE_CHUNK - 1);
    if (o->table.how != AMQ_REGION_MMAP || (void *)o->table.data != o->table.base ||
        upto <= o->released)
        return;
    (void)madvise(o->table.data + o->released, (size_t)(upto - o->released), MADV_DONTNEED);
    o->released = upto;
#else
    (void)x;
#endif
}

static int migrate(amq_expand *x, uint64_t steps)
{
    uint64_t nold = UINT64_C(1) << x->old->q;
    int rc;
    for (; steps > 0 && x->mig < nold; steps--, x->mig++)
        if ((rc = split_one(x, x->old, x->mig)) != AMQ_OK)
            return rc;
    release_split(x);
    if (x->mig == nold) {
        level_free(x->old, &x->alloc);
        x->old = NULL;
        x->mig = UINT64_MAX;
    }
    return AMQ_OK;
}

/* Back to the level a doubling's first step failed in: a split only reads
 * the old level, which kept its table, stash and counts (grow's copy), so
 * the add's AMQ_ENOMEM leaves the filter as it was, as amq/filter.h says. */
static void undo_grow(amq_expand *x)
{
    amq_expand *o = x->old;
    amq_region_free(&x->spare, &x->alloc);
    amq_region_free(&x->table, &x->alloc);
    amq_region_free(&x->stash, &x->alloc);
    amq_region_free(&x->stash_prev, &x->alloc);
    *x = *o; /* grow's copy: no doubling pending, nothing released */
    amq_free(&x->alloc, o, sizeof *o);
}

/* Starts a doubling (a pending one is finished first) and takes its first
 * step, with the table, level and stash room of sp (add_reserve), or its
 * own when sp is NULL.  Refused, with nothing changed, when it would let
 * the expected rate pass the target. */
static int grow(amq_expand *x, grow_spare *sp)
{
    grow_spare own;
    amq_expand *o;
    uint64_t void_n;
    uint32_t l;
    int rc;

    if ((rc = grow_limit(x)) != AMQ_OK)
        return rc; /* before the pending doubling is finished: refused, nothing moved */
    if (x->old != NULL && (rc = migrate(x, UINT64_MAX)) != AMQ_OK)
        return rc;
    if (sp == NULL) {
        memset(&own, 0, sizeof own);
        if (amq_region_alloc(&own.table, &x->alloc, (size_t)(BUCKET_BYTES << (x->q + 1))) !=
            AMQ_OK)
            return AMQ_ENOMEM;
        own.level = amq_calloc(&x->alloc, sizeof *own.level);
        if (own.level == NULL) {
            amq_region_free(&own.table, &x->alloc);
            return AMQ_ENOMEM;
        }
        sp = &own;
    }
    o = sp->level;
    *o = *x; /* the old level: q, table, stash (and spare); its counts are not used */
    o->old = NULL;
    o->mig = UINT64_MAX;
    o->released = 0;
    x->table = sp->table;
    x->spare = sp->stash;
    x->spare_cap = sp->stash_cap;
    memset(sp, 0, sizeof *sp); /* all taken */
    memset(&x->stash, 0, sizeof x->stash);
    memset(&x->stash_prev, 0, sizeof x->stash_prev);
    x->stash_n = x->stash_cap = x->prev_cap = x->prev_n = x->prev_pos = 0;
    set_q(x, x->q + 1);
    void_n = x->cnt[0];
    x->cnt[0] = 2 * x->cnt[0] + x->cnt[1];
    for (l = 1; l < FP_BITS; l++)
        x->cnt[l] = x->cnt[l + 1];
    x->cnt[FP_BITS] = 0;
    x->total += void_n;
    x->old = o;
    x->mig = 0;
    if ((rc = migrate(x, MIGRATE_STEP)) != AMQ_OK)
        undo_grow(x);
    return rc;
}

/* A doubling done at once: only when a bucket's stash count saturates. */
static int grow_all(amq_expand *x)
{
    int rc = grow(x, NULL);
    return rc == AMQ_OK && x->old != NULL ? migrate(x, UINT64_MAX) : rc;
}

/* ---- an add's memory, had before it changes anything ------------------------------------
 * A failed command is not propagated (Redis, an AOF): an add that returns
 * AMQ_ENOMEM must leave the filter as it was, or the copies that never saw
 * it part from it.  An add allocates stash arrays (its doubling step, its
 * own entry) and, when the table is due to double, a table, a level and the
 * new table's stash; all of them are allocated first, from bounds on the
 * cells each stash takes (split_need), and nothing allocates after the
 * first change.  A bound that overshoots costs an array allocated and given
 * back; a stash that grows grows to the reserved size. */

static void spare_drop(amq_expand *lv)
{
    amq_region_free(&lv->spare, &lv->alloc);
    lv->spare_cap = 0;
}

static void grow_spare_free(amq_expand *x, grow_spare *sp)
{
    amq_region_free(&sp->table, &x->alloc);
    amq_region_free(&sp->stash, &x->alloc);
    if (sp->level != NULL)
        amq_free(&x->alloc, sp->level, sizeof *sp->level);
    memset(sp, 0, sizeof *sp);
}

/* In *r, the array a stash of cap cells holding n grows to for `more`
 * cells; nothing when they fit, or past the stash's limit (stash_resize
 * refuses that one, AMQ_ELIMIT, before it changes anything). */
static int spare_of(amq_expand *x, uint64_t cap, uint64_t n, uint64_t more, amq_region *r,
                    uint64_t *rcap)
{
    uint64_t c = more != 0 ? stash_cap_for(cap, n + more) : cap;
    if (c <= cap || c > (UINT64_C(1) << 40))
        return AMQ_OK;
    if (stash_alloc(x, r, c) != AMQ_OK)
        return AMQ_ENOMEM;
    *rcap = c;
    return AMQ_OK;
}

/* lv's own spare for `more` cells added to its stash. */
static int level_spare(amq_expand *lv, uint64_t more)
{
    return spare_of(lv, lv->stash_cap, lv->stash_n + lv->prev_n, more, &lv->spare, &lv->spare_cap);
}

/* May the key's entry go to the stash of bucket kb of x (not yet split,
 * nothing due) once the step has split buckets [mig, upto) of the old
 * level?  Only when its bucket, as the step leaves it, has no free lane. */
static int key_may_stash(const amq_expand *x, uint64_t kb, uint64_t upto)
{
    const amq_expand *o = x->old;
    const uint16_t *src;
    uint64_t n;
    uint32_t lane;
    if (o == NULL || (kb >> 1) < x->mig)
        return free_lane(x, bucket_at(x, kb)) < 0;
    if ((kb >> 1) >= upto)
        return free_lane(o, bucket_at(o, kb >> 1)) < 0;
    /* split in this step: its half takes at most these entries */
    src = bucket_at(o, kb >> 1);
    n = split_need(o, kb >> 1);
    for (lane = 0; lane < DATA_LANES; lane++)
        n += src[lane] != 0 && (src[lane] == 0x8000u || (uint64_t)(src[lane] >> 15) == (kb & 1));
    return n >= DATA_LANES;
}

/* Allocates what the add of the key of hash u may take (see above): the
 * stash room of x and of the old level in lv's spare, a growth's in *g.
 * AMQ_ENOMEM with nothing allocated and nothing changed. */
static int add_reserve(amq_expand *x, uint64_t u, int due, grow_spare *g)
{
    amq_expand *o = x->old;
    const uint64_t kb = bucket_of(x, u), nb = UINT64_C(1) << x->q;
    const uint64_t nold = o != NULL ? UINT64_C(1) << o->q : 0;
    uint64_t upto = 0, b, more = 0, more_new = 0, first;

    memset(g, 0, sizeof *g);
    if (o != NULL) {
        upto = due || nold - x->mig <= MIGRATE_STEP ? nold : x->mig + MIGRATE_STEP;
        for (b = x->mig; b < upto; b++)
            more += split_need(o, b);
    }
    if (!due) {
        const int to_old = o != NULL && upto < nold && (kb >> 1) >= upto;
        const int stash = key_may_stash(x, kb, upto);
        if (to_old && stash && level_spare(o, 1) != AMQ_OK)
            return AMQ_ENOMEM;
        if (level_spare(x, more + (uint64_t)(!to_old && stash)) != AMQ_OK) {
            if (o != NULL)
                spare_drop(o);
            return AMQ_ENOMEM;
        }
        return AMQ_OK;
    }
    /* A growth: x, its doubling finished, becomes the old level of the next,
     * whose first step splits x's buckets [0, first); the key then goes to
     * the new table when its bucket is one of them, else to x. */
    first = nb < MIGRATE_STEP ? nb : MIGRATE_STEP;
    for (b = 0; b < first; b++) {
        if (o == NULL || (b >> 1) < x->mig)
            more_new += split_need(x, b);
        else if ((b & 1) == 0) /* its old bucket's cells, split twice */
            more_new += 2 * split_need(o, b >> 1);
    }
    if (kb < first)
        more_new++;
    else
        more++;
    if (level_spare(x, more) != AMQ_OK ||
        amq_region_alloc(&g->table, &x->alloc, (size_t)(BUCKET_BYTES << (x->q + 1))) != AMQ_OK ||
        (g->level = amq_calloc(&x->alloc, sizeof *g->level)) == NULL ||
        spare_of(x, 0, 0, more_new, &g->stash, &g->stash_cap) != AMQ_OK) {
        grow_spare_free(x, g);
        spare_drop(x);
        return AMQ_ENOMEM;
    }
    return AMQ_OK;
}

/* What the add did not take goes back. */
static void add_release(amq_expand *x, grow_spare *g)
{
    grow_spare_free(x, g);
    spare_drop(x);
    if (x->old != NULL)
        spare_drop(x->old);
}

int amq_exp_settle(amq_expand *x)
{
    uint64_t b, more = 0;
    int rc;
    if (x->old == NULL)
        return AMQ_OK;
    for (b = x->mig; b < (UINT64_C(1) << x->old->q); b++)
        more += split_need(x->old, b);
    if (level_spare(x, more) != AMQ_OK)
        return AMQ_ENOMEM; /* before a bucket is split: nothing changed */
    rc = migrate(x, UINT64_MAX);
    spare_drop(x);
    return rc;
}

/* ---- batches: a window of buckets prefetched ahead ------------------------------------- */

static inline const void *home_of(const amq_expand *x, uint64_t u)
{
    uint64_t b;
    const amq_expand *lv = route(x, u, &b);
    return bucket_at(lv, b);
}

/* A batch's view of the levels, read once: the loop's stores to out[] are
 * bytes, which may alias *x, so without it every key reloads x's fields. */
typedef struct {
    const uint8_t *data, *old_data;
    const amq_expand *x, *old;
    uint64_t mig, x8;
    uint32_t q, old_q;
} batch_view;

static inline __attribute__((always_inline)) batch_view view_of(const amq_expand *x)
{
    batch_view v;
    v.x = x;
    v.data = x->table.data;
    v.q = x->q;
    v.mig = x->mig;
    v.x8 = x->x8;
    v.old = x->old;
    v.old_data = x->old != NULL ? x->old->table.data : NULL;
    v.old_q = x->old != NULL ? x->old->q : 0;
    return v;
}

/* route() on a view: the key's bucket line, and its level, bucket and
 * entry.  mig is 0 when no doubling is pending (the old level is never
 * looked at: fewer values live in the batch loop). */
static inline __attribute__((always_inline)) const uint16_t *
view_route(const batch_view *v, uint64_t u, int mig, const amq_expand **lv, uint64_t *b,
           uint16_t *qv)
{
    uint64_t i = u >> (64 - v->q);
    if (mig && __builtin_expect((i >> 1) >= v->mig, 0)) {
        *lv = v->old;
        *b = i >> 1;
        *qv = (uint16_t)(((u << v->old_q) >> 48) | 1u);
        return (const uint16_t *)(const void *)(v->old_data + (i >> 1) * BUCKET_BYTES);
    }
    *lv = v->x;
    *b = i;
    *qv = (uint16_t)(((u << v->q) >> 48) | 1u);
    return (const uint16_t *)(const void *)(v->data + i * BUCKET_BYTES);
}

/* Where a batch's keys come from: hashes given (SRC_H), or packed keys of
 * one length hashed in the loop - XXH3 of 8-byte keys inline (SRC_X8), any
 * other through key_h1_any (SRC_KEY). */
enum { SRC_H, SRC_X8, SRC_KEY };

typedef struct {
    const amq_hash128 *h;
    const uint8_t *keys;
    size_t len;
} batch_src;

static inline __attribute__((always_inline)) uint64_t
src_h1(const amq_expand *x, const batch_view *v, const batch_src *in, size_t i, int mode)
{
    if (mode == SRC_H)
        return in->h[i].h1;
    if (mode == SRC_X8)
        return xxh3_8(v->x8, in->keys + 8 * i);
    return key_h1_any(x, in->keys + in->len * i, in->len);
}

/* A key's bucket line and entry, routed once. */
typedef struct {
    const uint16_t *bk;
    uint16_t qv;
} batch_probe;

static inline __attribute__((always_inline)) void probe_of(const batch_view *v, uint64_t u,
                                                           int mig, batch_probe *p, int far)
{
    const amq_expand *lv;
    uint64_t b;
    p->bk = view_route(v, u, mig, &lv, &b, &p->qv);
    if (far)
        __builtin_prefetch(p->bk, 0, 2);
    else
        __builtin_prefetch(p->bk);
}

/* A marked key's stash lookup: its level, bucket and entry, routed again. */
typedef struct {
    const amq_expand *lv;
    uint64_t b;
    uint16_t qv;
} stash_probe;

typedef uint32_t (*test_fn)(const uint16_t *b, uint16_t qv);

/* One body per instruction set, prefetch target (far: into L2), key source
 * and doubling pending or not, the bucket test inlined (no call per key);
 * contains_body's test on a view.  A key is hashed and routed once,
 * BATCH_AHEAD keys before it is answered, into a ring.  No branch depends
 * on a bucket's bytes, and the loop stores nothing per key but the ring
 * and the answer (each store and value it keeps costs keys in flight): a
 * key whose bucket says no and may have a stashed entry is marked in its
 * answer's byte (bit 1), and after each run of EXP_RUN keys the marked ones
 * are found 8 bytes at a time, routed again, their stash lines fetched
 * together and read.  out may be NULL; returns the number of 1 answers. */
#ifndef EXP_RUN
#define EXP_RUN 256u
#endif
static inline __attribute__((always_inline)) uint64_t
contains_batch_body(const amq_expand *x, const batch_src *src, size_t n, uint8_t *out,
                    test_fn test, int far, int mode, int mig)
{
    const batch_view v = view_of(x);
    const batch_src in = *src;
    batch_probe ring[BATCH_AHEAD];
    stash_probe sp[EXP_RUN];
    uint8_t tmp[EXP_RUN], *o;
    uint16_t marked[EXP_RUN];
    uint64_t count = 0, w;
    size_t i, j, k, at, len;
    for (i = 0; i < n && i < BATCH_AHEAD; i++)
        probe_of(&v, src_h1(x, &v, &in, i, mode), mig, &ring[i], far);
    for (at = 0; at < n; at += len) {
        len = n - at > EXP_RUN ? EXP_RUN : n - at;
        o = out != NULL ? out + at : tmp;
        for (i = 0; i < len; i++) {
            const batch_probe p = ring[(at + i) % BATCH_AHEAD];
            uint32_t t;
            if (mode != SRC_H)
                amq_prefetch_keys(in.keys, in.len, at + i + BATCH_AHEAD);
            if (at + i + BATCH_AHEAD < n)
                probe_of(&v, src_h1(x, &v, &in, at + i + BATCH_AHEAD, mode), mig,
                         &ring[(at + i) % BATCH_AHEAD], far);
            t = test(p.bk, p.qv);
            o[i] = (uint8_t)t;
            count += t & 1u;
        }
        for (i = 0, k = 0; i + 8 <= len; i += 8)
            for (w = amq_load64(o + i) & UINT64_C(0x0202020202020202); w != 0; w &= w - 1)
                marked[k++] = (uint16_t)(i + (size_t)__builtin_ctzll(w) / 8);
        for (; i < len; i++)
            if (o[i] & 2u)
                marked[k++] = (uint16_t)i;
        for (j = 0; j < k; j++) {
            stash_probe *s = &sp[j];
            (void)view_route(&v, src_h1(x, &v, &in, at + marked[j], mode), mig, &s->lv, &s->b,
                             &s->qv);
            if (s->lv->stash_cap != 0)
                __builtin_prefetch(cells(s->lv) + cell_pos(s->b, s->lv->stash_cap));
        }
        for (j = 0; j < k; j++) {
            const int hit = stash_hit(sp[j].lv, sp[j].b, sp[j].qv);
            o[marked[j]] = (uint8_t)hit;
            count += (uint64_t)hit;
        }
    }
    return count;
}

#define EXP_BATCH_FN(NAME, TEST, FAR, MODE, TARGET)                                               \
    TARGET static uint64_t NAME(const amq_expand *x, const batch_src *src, size_t n,             \
                                uint8_t *out)                                                     \
    {                                                                                             \
        return x->old != NULL ? contains_batch_body(x, src, n, out, TEST, FAR, MODE, 1)          \
                              : contains_batch_body(x, src, n, out, TEST, FAR, MODE, 0);         \
    }
#define EXP_BATCH_FNS(ISA, MATCH, TARGET)                                                         \
    EXP_BATCH_FN(batch_h_##ISA, MATCH, 0, SRC_H, TARGET)                                          \
    EXP_BATCH_FN(batch_h_##ISA##_far, MATCH, 1, SRC_H, TARGET)                                    \
    EXP_BATCH_FN(batch_x8_##ISA, MATCH, 0, SRC_X8, TARGET)                                        \
    EXP_BATCH_FN(batch_x8_##ISA##_far, MATCH, 1, SRC_X8, TARGET)                                  \
    EXP_BATCH_FN(batch_key_##ISA, MATCH, 0, SRC_KEY, TARGET)                                      \
    EXP_BATCH_FN(batch_key_##ISA##_far, MATCH, 1, SRC_KEY, TARGET)

typedef uint64_t (*batch_fn)(const amq_expand *x, const batch_src *src, size_t n, uint8_t *out);

EXP_BATCH_FNS(scalar, test_scalar, )
/* [avx2][far][source] */
#ifdef EXP_HAVE_AVX2
EXP_BATCH_FNS(avx2, test_avx2, __attribute__((target("avx2"))))
static const batch_fn batch_fns[2][2][3] = {
    {{batch_h_scalar, batch_x8_scalar, batch_key_scalar},
     {batch_h_scalar_far, batch_x8_scalar_far, batch_key_scalar_far}},
    {{batch_h_avx2, batch_x8_avx2, batch_key_avx2},
     {batch_h_avx2_far, batch_x8_avx2_far, batch_key_avx2_far}},
};
#else
static const batch_fn batch_fns[1][2][3] = {
    {{batch_h_scalar, batch_x8_scalar, batch_key_scalar},
     {batch_h_scalar_far, batch_x8_scalar_far, batch_key_scalar_far}},
};
#endif

static uint64_t batch_run(const amq_expand *x, const batch_src *src, size_t n, uint8_t *out,
                          int mode)
{
    /* the table's size now: a doubling's old level is half of it */
    const int far = x->table.size > EXP_FAR_BYTES;
#ifdef EXP_HAVE_AVX2
    return batch_fns[x->match == match_avx2][far][mode](x, src, n, out);
#else
    return batch_fns[0][far][mode](x, src, n, out);
#endif
}

void amq_exp_contains_batch(const amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *out)
{
    const batch_src src = {h, NULL, 0};
    (void)batch_run(x, &src, n, out, SRC_H);
}

uint64_t amq_exp_contains_batch_fixed(const amq_expand *x, const void *keys, size_t key_len,
                                      size_t n, uint8_t *out)
{
    const batch_src src = {NULL, keys, key_len};
    return batch_run(x, &src, n, out,
                     key_len == 8 && x->hash_algo == AMQ_HASH_XXH3 ? SRC_X8 : SRC_KEY);
}

int amq_exp_add_batch(amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *added)
{
    size_t i;
    int rc;
    for (i = 0; i < n; i++) {
        /* the window is recomputed per key: a doubling moves the buckets */
        if (i + BATCH_AHEAD < n)
            __builtin_prefetch(home_of(x, h[i + BATCH_AHEAD].h1), 1);
        rc = amq_exp_add(x, h[i].h1);
        if (rc < 0)
            return rc;
        if (added != NULL)
            added[i] = (uint8_t)rc;
    }
    return AMQ_OK;
}

/* ---- construction ------------------------------------------------------------------------ */

static amq_expand *shell(const amq_allocator *alloc)
{
    amq_allocator al;
    amq_expand *x;
    amq_alloc_init(&al, alloc);
    x = amq_calloc(&al, sizeof *x);
    if (x != NULL) {
        x->alloc = al;
        x->mig = UINT64_MAX;
        choose_match(x);
    }
    return x;
}

static void expand_free(amq_expand *x)
{
    amq_allocator al;
    if (x == NULL)
        return;
    al = x->alloc;
    level_free(x->old, &al);
    amq_region_free(&x->spare, &al);
    amq_region_free(&x->table, &al);
    amq_region_free(&x->stash, &al);
    amq_region_free(&x->stash_prev, &al);
    amq_free(&al, x, sizeof *x);
}

/* The smallest q whose table holds capacity entries at MAX_LOAD. */
static uint32_t q_for(uint64_t capacity)
{
    uint32_t q = 1;
    while (q < MAX_Q && MAX_LOAD * DATA_LANES * ldexp(1.0, (int)q) < (double)capacity)
        q++;
    return q;
}

/* ---- for the adapter and codec (expandable_kind.c) --------------------------------------- */

amq_expand *amq_exp_shell(const amq_allocator *alloc)
{
    return shell(alloc);
}

void amq_exp_free(amq_expand *x)
{
    expand_free(x);
}

void amq_exp_level_free(amq_expand *o, amq_allocator *al)
{
    level_free(o, al);
}

void amq_exp_set_hash(amq_expand *x, uint32_t algo, uint64_t seed)
{
    x->hash_algo = algo;
    x->seed = seed;
    x->x8 = amq_xxh3_8_mask(seed);
}

uint32_t amq_exp_q_for(uint64_t capacity)
{
    return q_for(capacity);
}

void amq_exp_set_q(amq_expand *x, uint32_t q)
{
    set_q(x, q);
}

uint64_t amq_exp_entries(const amq_expand *x)
{
    return entries(x);
}

uint64_t amq_exp_max_entries(const amq_expand *x)
{
    return max_entries(x);
}

double amq_exp_rate_of(const amq_expand *x)
{
    return rate_of(x);
}

double amq_exp_generation_rate(void)
{
    return generation_rate();
}

int amq_exp_insert_cell(uint64_t *cs, uint64_t cap, uint64_t c)
{
    return insert_cell(cs, cap, c);
}

amq_contains_key_fn amq_exp_key_query(const amq_expand *x)
{
#ifdef EXP_HAVE_AVX2
    if (x->match == match_avx2)
        return contains_key_avx2;
#endif
    (void)x;
    return contains_key_scalar;
}
