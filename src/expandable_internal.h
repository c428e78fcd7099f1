/*
 * expandable_internal.h - the expandable filter's struct and what its
 * adapter and codec (expandable_kind.c) need of the algorithm
 * (expandable.c).  Internal: not installed, not exported.
 */
#ifndef AMQ_EXPANDABLE_INTERNAL_H
#define AMQ_EXPANDABLE_INTERNAL_H

#include "amq/filter.h"
#include "common/alloc.h"
#include "kind.h"

#define LANES 32u
#define DATA_LANES 31u
#define META_LANE 31u
#define BUCKET_BYTES UINT64_C(64) /* 64-bit: the table's size, 64 << q, passes 4 GiB at q = 26 */
#define FP_BITS 15u
#define MAX_Q 48u          /* bucket index and lane share a 64-bit stash cell */
#define STASH_MIN 64u
#define MIN_FPP 0.001
#define MAX_FPP 0.5

typedef struct amq_expand {
    uint32_t hash_algo;
    uint64_t seed;
    uint64_t x8; /* XXH3's input mask for 8-byte keys under seed (amq_exp_set_hash) */
    uint32_t q;  /* log2 of the bucket count */
    uint32_t q0; /* q when created: expansions = q - q0 */
    double fpp;  /* target: doubling stops (AMQ_ELIMIT) before the rate would pass it */
    uint64_t items;           /* keys added minus removed */
    uint64_t cnt[FP_BITS + 1]; /* entries (table and stash) by fingerprint length */
    uint64_t total;            /* the sum of cnt */
    uint64_t limit;            /* total at which the table doubles */
    uint64_t stash_n;          /* cells in use */
    uint64_t stash_cap;        /* cells: 0 or a power of two */
    amq_region table;
    amq_region stash;
    amq_region stash_prev; /* a smaller stash being moved into stash */
    uint64_t prev_cap, prev_n, prev_pos;
    /* A stash array of spare_cap cells that an add allocated before it changed
     * anything (add_reserve), taken by this level's next stash resize; none
     * between calls (a clone's copy of the struct copies no spare). */
    amq_region spare;
    uint64_t spare_cap;
    amq_allocator alloc;
    uint64_t (*match)(const uint16_t *b, uint16_t qv);
    uint64_t (*empty)(const uint16_t *b); /* two bits per free data lane */
    /* A doubling in progress: the table being split (level q - 1, with its
     * own stash), and how many of its buckets are split (UINT64_MAX when no
     * doubling is pending, so that the query's test is one compare). */
    struct amq_expand *old;
    uint64_t mig;
    uint64_t released; /* an old level's: bytes of its table given back (release_split) */
} amq_expand;

/* Lane 31 of a bucket is the union of stash_bits over its stashed entries:
 * bit i set when one of them may answer a key whose full-length entry
 * begins with the 4 bits i (an entry of L < 4 bits: 2^(4 - L) of them; s
 * is not 0).  Not 0 exactly when the bucket has cells in the stash. */
static inline uint16_t stash_bits(uint16_t s)
{
    const unsigned len = 15u - (unsigned)__builtin_ctz(s);
    const unsigned w = len >= 4 ? 1u : 1u << (4 - len);
    return (uint16_t)(((1u << w) - 1u) << ((unsigned)(s >> 12) & ~(w - 1u)));
}

/* May a stashed entry of bucket bk answer the key of full-length entry qv? */
static inline int stash_may(const uint16_t *bk, uint16_t qv)
{
    return (bk[META_LANE] >> (qv >> 12)) & 1;
}

/* Where a bucket and the stash's cells lie, and a bucket's home cell: the
 * file holds the table and the stash as they lie (the codec writes and
 * loads them, and builds a doubling's stash in the same places). */
static inline uint16_t *bucket_at(const amq_expand *x, uint64_t i)
{
    return (uint16_t *)(void *)(x->table.data + i * BUCKET_BYTES);
}

static inline uint64_t *cells(const amq_expand *x)
{
    return (uint64_t *)(void *)x->stash.data;
}

static inline uint64_t *prev_cells(const amq_expand *x)
{
    return (uint64_t *)(void *)x->stash_prev.data;
}

static inline uint64_t cell_pos(uint64_t bucket, uint64_t cap)
{
    return (bucket * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - __builtin_ctzll(cap));
}

/* A walk over the cells of bucket b in a stash array cs of cap cells: its
 * home's probe run, up to the first empty cell (or every cell: a loaded
 * stash may be full).  Every reader of a bucket's cells walks this way:
 *     run_walk w = run_of(cs, cap, b);
 *     while ((c = run_next(&w)) != 0) ... c, at position w.at ...  */
typedef struct {
    const uint64_t *cs;
    uint64_t mask, b, p, left;
    uint64_t at; /* the position of the cell run_next gave last */
} run_walk;

static inline run_walk run_of(const uint64_t *cs, uint64_t cap, uint64_t b)
{
    run_walk w;
    w.cs = cs;
    w.mask = cap - 1;
    w.b = b;
    w.p = cap != 0 ? cell_pos(b, cap) : 0;
    w.left = cap;
    w.at = 0;
    return w;
}

/* The next cell of the walk's bucket (its entry is not 0), or 0 at the end. */
static inline uint64_t run_next(run_walk *w)
{
    uint64_t c;
    for (; w->left > 0; w->left--) {
        if ((c = w->cs[w->p]) == 0)
            break;
        w->at = w->p;
        w->p = (w->p + 1) & w->mask;
        if ((c >> 16) == w->b && (uint16_t)c != 0) {
            w->left--;
            return c;
        }
    }
    w->left = 0;
    return 0;
}

/* A zeroed filter (no table, no doubling pending) with alloc's allocator
 * and this CPU's bucket paths; and its release with all it holds. */
amq_expand *amq_exp_shell(const amq_allocator *alloc);
void amq_exp_free(amq_expand *x);
/* Frees a doubling's old level o (NULL: nothing); a clone or clear drops one. */
void amq_exp_level_free(amq_expand *o, amq_allocator *al);
/* Sets the hash algorithm and seed, and x8 from them. */
void amq_exp_set_hash(amq_expand *x, uint32_t algo, uint64_t seed);
/* The smallest q whose table holds capacity entries at the load limit. */
uint32_t amq_exp_q_for(uint64_t capacity);
/* Sets q and, from it, the entry count at which the table doubles. */
void amq_exp_set_q(amq_expand *x, uint32_t q);
/* Entries held (table and stash), and the count at which the table doubles. */
uint64_t amq_exp_entries(const amq_expand *x);
uint64_t amq_exp_max_entries(const amq_expand *x);
/* The expected false-positive rate now, and what one more generation adds. */
double amq_exp_rate_of(const amq_expand *x);
double amq_exp_generation_rate(void);
/* The kind's entries (add: 1 new, or a status; remove: 1 or 0), the
 * algorithm's own, so that the adapter's entries jump straight to them;
 * add takes the hash's h1, the one half it reads. */
int amq_exp_add(amq_expand *x, uint64_t h1);
int amq_exp_contains(const amq_expand *x, amq_hash128 h);
/* One key added as amq_exp_add adds amq_filter_hash's h1 of it (the handle's add_key). */
int amq_exp_add_key(amq_expand *x, const void *key, size_t len);
int amq_exp_remove(amq_expand *x, amq_hash128 h);
/* Why an add of the key whose hash's h1 is u is refused: an amq_refusal
 * (amq_filter_refusal). */
uint32_t amq_exp_refusal(const amq_expand *x, uint64_t u);
/* The doubling under way finished (amq_filter_settle). */
int amq_exp_settle(amq_expand *x);
int amq_exp_add_batch(amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *added);
void amq_exp_contains_batch(const amq_expand *x, const amq_hash128 *h, size_t n, uint8_t *out);
/* n packed keys of key_len bytes, hashed in the query loop; out may be NULL;
 * returns the number of 1 answers. */
uint64_t amq_exp_contains_batch_fixed(const amq_expand *x, const void *keys, size_t key_len,
                                      size_t n, uint8_t *out);
/* The one-key query leaf for x's instruction set (the handle's contains_key_of). */
amq_contains_key_fn amq_exp_key_query(const amq_expand *x);
/* For the writer of a doubling as its split table: a cell into a stash
 * array (AMQ_EFULL when full), and the entries of one old bucket that go to
 * half `side` (0: bucket 2b, 1: 2b + 1), from lane 0 of dst up. */
int amq_exp_insert_cell(uint64_t *cs, uint64_t cap, uint64_t c);
void amq_exp_split_half(const uint16_t *src, uint32_t side, uint16_t *dst);

#endif /* AMQ_EXPANDABLE_INTERNAL_H */
