/*
 * expandable.c - a filter that is never sized: a table of 64-byte buckets
 * that doubles in place, in the manner of InfiniFilter (Dayan et al.,
 * SIGMOD 2023) and taffy cuckoo filters (Apple 2021), with Aleph's answer
 * (Dayan, Bercea, Pagh, PVLDB 2024) for fingerprints that run out.
 * docs/expandable.md says why this shape and what it costs.
 *
 * A key's 64-bit hash u is read from the top: its first q bits pick one of
 * 2^q buckets, the next 15 bits are its fingerprint.  A bucket is 32
 * little-endian 16-bit lanes: lanes 0..30 hold entries, lane 31 counts the
 * bucket's entries that did not fit and went to the stash.  An entry of L
 * fingerprint bits (0 <= L <= 15) is those bits at the top of its lane, a 1
 * below them and zeros under it, so an empty lane is 0 and every entry
 * carries its own length.
 *
 * Doubling (q -> q + 1) moves bucket i's entries to 2i or 2i + 1 by their
 * first fingerprint bit and shifts that bit out: an entry loses one bit
 * per doubling, entries added since keep 15, and an entry that has no bit
 * left (L = 0, "void") is copied into both halves, so that it still answers
 * every key that could be its own.  Keys of one generation are about as
 * many as all older ones together, so each generation adds about the same
 * to the false-positive rate (docs/expandable.md has the sum).
 *
 * The stash is an open-addressing table of (bucket, lane) cells for the
 * few entries whose bucket was full; a query reads it only when its
 * bucket's lane 31 says some are there.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq/filter.h"
#include "amq/hash.h"
#include "common/alloc.h"
#include "common/cpu.h"
#include "common/endian.h"
#include "common/error.h"
#include "expandable_internal.h"

/* XXH3 inlined (the system's xxhash.h, header-only: bit-exact with
 * libxxhash) for the one-key query, which hashes the key itself. */
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EXP_HAVE_AVX2 1
#endif

/* ---- one bucket ---------------------------------------------------------------------- */

static inline uint16_t *bucket_at(const amq_expand *x, uint64_t i)
{
    return (uint16_t *)(void *)(x->table.data + i * BUCKET_BYTES);
}

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
static uint64_t match_scalar(const uint16_t *b, uint16_t qv)
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

__attribute__((target("avx2"))) static uint64_t match_avx2(const uint16_t *b, uint16_t qv)
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

/* ---- the stash ------------------------------------------------------------------------- */

static inline uint64_t *cells(const amq_expand *x)
{
    return (uint64_t *)(void *)x->stash.data;
}

static inline uint64_t cell_pos(uint64_t bucket, uint64_t cap)
{
    return (bucket * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - __builtin_ctzll(cap));
}

/* Does some stash cell of bucket b answer qv?  Probes stop at an empty cell
 * or after every cell (a loaded stash may be full). */
static int stash_matches(const amq_expand *x, uint64_t b, uint16_t qv)
{
    uint64_t i, p, c, mask = x->stash_cap - 1;
    if (x->stash_cap == 0)
        return 0;
    for (i = 0, p = cell_pos(b, x->stash_cap); i < x->stash_cap; i++, p = (p + 1) & mask) {
        c = cells(x)[p];
        if (c == 0)
            return 0;
        if ((c >> 16) == b && lane_matches((uint16_t)c, qv))
            return 1;
    }
    return 0;
}

static int stash_resize(amq_expand *x, uint64_t cap);

static int stash_put(amq_expand *x, uint64_t b, uint16_t s)
{
    uint64_t i, p, mask;
    int rc;
    if (x->stash_n + 1 > x->stash_cap / 2) {
        rc = stash_resize(x, x->stash_cap == 0 ? STASH_MIN : x->stash_cap * 2);
        if (rc != AMQ_OK)
            return rc;
    }
    mask = x->stash_cap - 1;
    for (i = 0, p = cell_pos(b, x->stash_cap); i < x->stash_cap; i++, p = (p + 1) & mask) {
        if (cells(x)[p] == 0) {
            cells(x)[p] = b << 16 | s;
            x->stash_n++;
            return AMQ_OK;
        }
    }
    return AMQ_EFULL; /* a loaded stash whose count lied */
}

static int stash_resize(amq_expand *x, uint64_t cap)
{
    amq_region old = x->stash;
    uint64_t old_cap = x->stash_cap, i;
    int rc;
    if (cap > (UINT64_C(1) << 40))
        return AMQ_ELIMIT;
    memset(&x->stash, 0, sizeof x->stash);
    rc = amq_region_alloc(&x->stash, &x->alloc, (size_t)(cap * 8));
    if (rc != AMQ_OK) {
        x->stash = old;
        return AMQ_ENOMEM;
    }
    x->stash_cap = cap;
    x->stash_n = 0;
    for (i = 0; i < old_cap; i++) {
        uint64_t c = ((const uint64_t *)(const void *)old.data)[i];
        if (c != 0 && stash_put(x, c >> 16, (uint16_t)c) != AMQ_OK)
            break; /* cannot happen: the new stash is at least twice the old one */
    }
    amq_region_free(&old, &x->alloc);
    return AMQ_OK;
}

/* Removes the cell at p, moving later cells of its probe run back
 * (linear probing without tombstones). */
static void stash_delete_at(amq_expand *x, uint64_t p)
{
    uint64_t mask = x->stash_cap - 1, j = p, k, c;
    uint64_t n;
    cells(x)[p] = 0;
    x->stash_n--;
    for (n = 0; n < x->stash_cap; n++) {
        j = (j + 1) & mask;
        c = cells(x)[j];
        if (c == 0)
            return;
        k = cell_pos(c >> 16, x->stash_cap);
        /* c may move to p when its home k is not in (p, j] cyclically */
        if ((j > p && (k <= p || k > j)) || (j < p && k <= p && k > j)) {
            cells(x)[p] = c;
            cells(x)[j] = 0;
            p = j;
        }
    }
}

/* ---- add, query, remove ------------------------------------------------------------------ */

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
    if (bk[META_LANE] == UINT16_MAX)
        return AMQ_EFULL;
    rc = stash_put(x, b, s);
    if (rc == AMQ_OK)
        bk[META_LANE]++;
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

static int grow(amq_expand *x);

static int add_one(amq_expand *x, amq_hash128 h)
{
    int rc;
    if (amq_region_is_borrowed(&x->table))
        return AMQ_EREADONLY;
    if (entries(x) + 1 > max_entries(x) || x->stash_n + 1 > (max_entries(x) >> 5) + STASH_MIN) {
        rc = grow(x);
        if (rc != AMQ_OK)
            return rc;
    }
    rc = place(x, bucket_of(x, h.h1), entry_of(x, h.h1));
    if (rc == AMQ_EFULL) { /* a bucket whose stash count is saturated: grow and retry */
        rc = grow(x);
        if (rc == AMQ_OK)
            rc = place(x, bucket_of(x, h.h1), entry_of(x, h.h1));
    }
    if (rc != AMQ_OK)
        return rc;
    x->cnt[FP_BITS]++;
    x->total++;
    x->items++;
    return 1;
}

static inline int contains_one(const amq_expand *x, amq_hash128 h)
{
    uint64_t b = bucket_of(x, h.h1);
    const uint16_t *bk = bucket_at(x, b);
    uint16_t qv = entry_of(x, h.h1);
    int hit = x->match(bk, qv) != 0;
    /* no branch on the answer (half the queries of a mixed stream go each
     * way): the next keys' reads start before this one's line arrives; the
     * stash branch is rarely taken (~6 % of buckets at 77 % load) */
    if (__builtin_expect(bk[META_LANE] != 0, 0))
        return hit | stash_matches(x, b, qv);
    return hit;
}

/* The key's h1, exactly as amq_filter_hash gives it. */
static inline uint64_t key_h1(const amq_expand *x, const void *key, size_t len)
{
    if (x->hash_algo == AMQ_HASH_XXH3)
        return XXH3_128bits_withSeed(key, len, x->seed).low64;
    return amq_hash_key(x->hash_algo, x->seed, key, len).h1;
}

/* The handle's one-key query (op_contains_key_of): hash, bucket test and
 * stash test in one body per instruction set, no call between them, so
 * that the next keys' reads overlap this one's (measured: one-key queries
 * are bound by how many misses are in flight, not by the miss itself). */
static int contains_key_scalar(const void *impl, const void *key, size_t len)
{
    const amq_expand *x = impl;
    uint64_t u = key_h1(x, key, len), b = bucket_of(x, u);
    const uint16_t *bk = bucket_at(x, b);
    uint16_t qv = entry_of(x, u);
    int hit = match_scalar(bk, qv) != 0;
    if (__builtin_expect(bk[META_LANE] != 0, 0))
        return hit | stash_matches(x, b, qv);
    return hit;
}

#ifdef EXP_HAVE_AVX2
__attribute__((target("avx2"))) static int contains_key_avx2(const void *impl, const void *key,
                                                              size_t len)
{
    const amq_expand *x = impl;
    uint64_t u = key_h1(x, key, len), b = bucket_of(x, u);
    const uint16_t *bk = bucket_at(x, b);
    uint16_t qv = entry_of(x, u);
    int hit = match_avx2(bk, qv) != 0;
    if (__builtin_expect(bk[META_LANE] != 0, 0))
        return hit | stash_matches(x, b, qv);
    return hit;
}
#endif

/* Removes the longest entry that answers the key: if it is another key's,
 * that key agrees with this one on every bit of it, so this key's own
 * entry (no longer) answers that key too. */
static int remove_one(amq_expand *x, amq_hash128 h)
{
    uint64_t b = bucket_of(x, h.h1), m, best_cell = UINT64_MAX, i, p, mask;
    uint16_t *bk = bucket_at(x, b);
    uint16_t qv = entry_of(x, h.h1);
    int best_lane = -1;
    uint32_t best_len = 0, len;

    if (amq_region_is_borrowed(&x->table))
        return AMQ_EREADONLY;
    for (m = x->match(bk, qv); m != 0; m &= m - 1) {
        uint32_t lane = (uint32_t)__builtin_ctzll(m) / 2;
        m &= m - 1; /* the lane's second bit */
        len = entry_len(bk[lane]);
        if (best_lane < 0 || len > best_len) {
            best_lane = (int)lane;
            best_len = len;
        }
    }
    if (bk[META_LANE] != 0 && x->stash_cap != 0) {
        mask = x->stash_cap - 1;
        for (i = 0, p = cell_pos(b, x->stash_cap); i < x->stash_cap; i++, p = (p + 1) & mask) {
            uint64_t c = cells(x)[p];
            if (c == 0)
                break;
            if ((c >> 16) == b && lane_matches((uint16_t)c, qv) &&
                ((best_lane < 0 && best_cell == UINT64_MAX) || entry_len((uint16_t)c) > best_len)) {
                best_cell = p;
                best_len = entry_len((uint16_t)c);
            }
        }
    }
    if (best_cell != UINT64_MAX) {
        stash_delete_at(x, best_cell);
        bk[META_LANE]--;
    } else if (best_lane >= 0) {
        bk[best_lane] = 0;
    } else {
        return 0;
    }
    if (x->cnt[best_len] > 0 && x->total > 0) {
        x->cnt[best_len]--;
        x->total--;
    }
    if (x->items > 0)
        x->items--;
    return 1;
}

/* ---- doubling ---------------------------------------------------------------------------- */

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

/* Bucket b's lanes into dst's empty buckets 2b and 2b + 1, filled from
 * lane 0 up without a search: each lane gives each half at most one entry,
 * so neither half can overflow here (the stash's cells of b come later). */
static void split_bucket(amq_expand *dst, uint64_t b, const uint16_t *src)
{
    uint16_t *half[2];
    uint32_t fill[2] = {0, 0}, lane, side;
    uint16_t s;

    half[0] = bucket_at(dst, 2 * b);
    half[1] = bucket_at(dst, 2 * b + 1);
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

static int grow(amq_expand *x)
{
    amq_expand n;
    uint64_t buckets = UINT64_C(1) << x->q, i;
    uint32_t l;
    int rc = AMQ_OK;

    if (x->q + 1 > MAX_Q)
        return AMQ_ELIMIT;
    if (rate_of(x) + generation_rate() > x->fpp)
        return AMQ_ELIMIT;
    n = *x;
    memset(&n.table, 0, sizeof n.table);
    memset(&n.stash, 0, sizeof n.stash);
    n.stash_n = 0;
    n.stash_cap = 0;
    set_q(&n, x->q + 1);
    if (amq_region_alloc(&n.table, &n.alloc, (size_t)(2 * buckets * BUCKET_BYTES)) != AMQ_OK)
        return AMQ_ENOMEM;
    for (i = 0; i < buckets; i++)
        split_bucket(&n, i, bucket_at(x, i));
    for (i = 0; i < x->stash_cap; i++) {
        uint64_t c = cells(x)[i];
        /* a loaded stash may hold cells of no bucket: they are dropped */
        if ((uint16_t)c != 0 && (c >> 16) < buckets &&
            (rc = split_into(&n, c >> 16, (uint16_t)c)) != AMQ_OK)
            goto fail;
    }
    n.cnt[0] = 2 * x->cnt[0] + x->cnt[1];
    for (l = 1; l < FP_BITS; l++)
        n.cnt[l] = x->cnt[l + 1];
    n.cnt[FP_BITS] = 0;
    n.total = x->total + x->cnt[0];
    amq_region_free(&x->table, &x->alloc);
    amq_region_free(&x->stash, &x->alloc);
    *x = n;
    return AMQ_OK;
fail:
    amq_region_free(&n.table, &n.alloc);
    amq_region_free(&n.stash, &n.alloc);
    return rc == AMQ_EFULL ? AMQ_ELIMIT : rc;
}

/* ---- batches: a window of buckets prefetched ahead ------------------------------------- */

static void contains_batch(const amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *out)
{
    size_t i;
    for (i = 0; i < n && i < BATCH_AHEAD; i++)
        __builtin_prefetch(bucket_at(x, bucket_of(x, h[i].h1)));
    for (i = 0; i < n; i++) {
        if (i + BATCH_AHEAD < n)
            __builtin_prefetch(bucket_at(x, bucket_of(x, h[i + BATCH_AHEAD].h1)));
        out[i] = (uint8_t)contains_one(x, h[i]);
    }
}

static int add_batch(amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *added)
{
    size_t i;
    int rc;
    for (i = 0; i < n; i++) {
        /* the window is recomputed per key: a doubling moves every bucket */
        if (i + BATCH_AHEAD < n)
            __builtin_prefetch(bucket_at(x, bucket_of(x, h[i + BATCH_AHEAD].h1)), 1);
        rc = add_one(x, h[i]);
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
    amq_region_free(&x->table, &al);
    amq_region_free(&x->stash, &al);
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

uint64_t *amq_exp_cells(const amq_expand *x)
{
    return cells(x);
}

int amq_exp_add(amq_expand *x, amq_hash128 h)
{
    return add_one(x, h);
}

int amq_exp_contains(const amq_expand *x, amq_hash128 h)
{
    return contains_one(x, h);
}

int amq_exp_remove(amq_expand *x, amq_hash128 h)
{
    return remove_one(x, h);
}

int amq_exp_add_batch(amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return add_batch(x, h, n, added);
}

void amq_exp_contains_batch(const amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *out)
{
    contains_batch(x, h, n, out);
}

/* The one-key query leaf of x's instruction set (the handle's contains_key_of). */
amq_contains_key_fn amq_exp_key_query(const amq_expand *x)
{
#ifdef EXP_HAVE_AVX2
    if (x->match == match_avx2)
        return contains_key_avx2;
#endif
    (void)x;
    return contains_key_scalar;
}
