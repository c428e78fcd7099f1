/*
 * quotient_internal.h - the quotient kind's struct and what its adapter and
 * codec (quotient_kind.c) need of the algorithm (quotient.c, and
 * quotient_impl.h compiled once per instruction set).  Internal.
 *
 * The table: lines of 64 bytes, 28 slots each: an 8-bit offset, 28
 * occupied bits, 28 run-end bits, then 28 16-bit entries (0: empty).  A
 * key's slot is h1 * m >> 64 (any m, so that the table grows by 10 %, not
 * by doubling); its entry holds bits of h1 from bit k = floor(log2 m) on,
 * with a 1 marker after them.  Growth rebuilds the table at m * growth,
 * each entry keeping its bits (one fewer when k grows); a key whose entry
 * runs out of bits becomes a range of h1 in the sorted deep list, and a
 * void lane (0x8000) in each slot the range meets sends a query there.
 * docs/expandable.md ("The quotient kind") says why; docs/file-format.md
 * ("Kind 12") has the bytes.
 */
#ifndef AMQ_QUOTIENT_INTERNAL_H
#define AMQ_QUOTIENT_INTERNAL_H

#include <math.h>
#include <string.h>

#include "amq/filter.h"
#include "common/alloc.h"
#include "kind.h"

#define QF_SLOTS 28u          /* slots a line */
#define QF_TAIL_LINES 16u     /* lines past the last slot's, for runs pushed there */
#define QF_PENDING 16u        /* keys an add keeps waiting while their lines are fetched */
#define QF_SIG_WORDS 4u       /* their signature's words: 256 bits, 16 of them set at most */
#define QF_MIN_SLOTS 64u
#define QF_MAX_SLOTS (UINT64_C(1) << 48) /* the payload's size stays far from wrapping */
#define QF_MIN_FPP 0.0001
#define QF_MAX_FPP 0.5
#define QF_MAX_LOAD 0.95      /* the table grows when one more entry would pass this */
#ifndef QF_GROWTH     /* scripts/growth-proto.sh builds a library with another, to compare */
#define QF_GROWTH 1.1 /* by this factor (docs/expandable.md: the sawtooth) */
#endif
/* A run of this many entries or more is a crowd: an add sends its key to the deep list, a growth
 * makes it one void lane and its keys deep ranges (random keys never make one: a slot holds 0.95
 * keys on average) */
#define QF_CROWD 64u
#define QF_CROWD_RANGES 1024u /* deep ranges an add may make, and one a 1,024 entries */
#define QF_STEP 256u          /* places a growth's step writes, at least (each add during one) */
#define QF_STEP_ITEMS (QF_STEP + 2048u) /* places a step holds: its own, a line's, a run's copies */
#define QF_PLACE_BYTES 16u    /* one of them */

struct amq_qf_isa;
struct amq_qf_growth;

typedef struct amq_qf {
    /* what a query reads first, in one line of the struct */
    uint64_t m;         /* slots a key may have */
    uint8_t *t;         /* the table: lines of 64 bytes */
    uint32_t k;         /* floor(log2 m) */
    uint32_t pend_used; /* a bit per cell of pend that holds a key */
    const struct amq_qf_isa *isa;
    struct amq_qf_growth *growth; /* a growth under way (NULL: none) */
    uint64_t x8;                  /* the seed's part of an 8-byte key's XXH3 (common/xxh3_8.h) */
    uint32_t hash_algo;
    uint64_t recip_hi, recip_lo; /* floor(2^128 / m) or one under: the slots' first keys */
    uint64_t lines;              /* m's lines and QF_TAIL_LINES */
    uint64_t pend_sig[QF_SIG_WORDS];     /* bit h >> 56 of each pending key (amq_qf_pend_maybe) */
    uint8_t pend_cnt[64 * QF_SIG_WORDS]; /* the pending keys with each bit (an add moves two) */
    uint64_t pend[QF_PENDING];   /* keys added, not yet placed (queries look here too) */
    uint32_t pend_next;          /* the cell of the next add: the oldest key when all are used */
    uint64_t m0;                 /* m when created (clear goes back to it) */
    uint64_t seed;
    double fpp;  /* target: growth stops (AMQ_ELIMIT) before the rate would pass it */
    uint64_t items;   /* keys added */
    uint64_t entries; /* entries in the table (copies included) */
    uint64_t grows;
    uint64_t cnt[16]; /* entries by length (0: void lanes) */
    uint64_t *deep;   /* ranges [lo, hi] of h1, sorted and apart */
    uint64_t ndeep;
    uint64_t deep_cap;  /* pairs the deep array has room for (its bytes when freed) */
    int deep_owned;   /* 0: deep points into a borrowed payload, or x's (a table grown into) */
    const uint64_t *deep2; /* a table being grown into: the growth's new ranges */
    uint64_t ndeep2;
    uint64_t fill_pos; /* the slot the last insert filled (its shift's end) */
    uint64_t rewritten; /* entries read by growths */
    amq_region table;
    amq_allocator alloc;
} amq_qf;

/* A growth under way (quotient_impl.h, "growth"): x is read in order of
 * positions into y, QF_STEP places or more each add; keys of x's slots
 * below rslot (keys below split) are in y, the others in x. */
typedef struct amq_qf_growth {
    struct amq_qf *y;     /* the table grown into: deep is x's, deep2 the voids */
    uint64_t split;
    uint64_t rpos, rslot; /* x's first position, and slot, not read yet */
    uint64_t di;          /* x's deep ranges before di end before the slot being read */
    uint64_t *voids;      /* [lo, hi] pairs, sorted: keys whose entries ran out of bits in y */
    uint64_t nv, cap;
    uint64_t pos;         /* one past y's last entry (an add into y may move it) */
    uint64_t next_line;   /* y's first line whose offset is not set yet */
    uint64_t prev;        /* the last place's slot */
    uint64_t copies_of;   /* the slot of the copies below */
    uint16_t copies[64];  /* copies put in slot copies_of (places of entries spanning slots) */
    uint32_t ncopies;
    uint64_t read;        /* entries of x read */
    uint64_t key_last;    /* places of keys past it are left out (UINT64_MAX but in grow_over) */
    void *buf;            /* the step's places */
    int nomem, done;
} amq_qf_growth;

/* What differs by instruction set: the bodies of quotient_impl.h. */
typedef struct amq_qf_isa {
    int (*add)(amq_qf *x, uint64_t h1);
    int (*contains)(const amq_qf *x, uint64_t h1);
    int (*add_batch)(amq_qf *x, const amq_hash128 *h, size_t n, uint8_t *added);
    void (*contains_batch)(const amq_qf *x, const amq_hash128 *h, size_t n, uint8_t *out);
    uint64_t (*contains_fixed)(const amq_qf *x, const void *keys, size_t key_len, size_t n,
                               uint8_t *out);
    int (*add_key)(void *x, const void *key, size_t len);      /* the key hashed inline */
    int (*contains_key)(const void *x, const void *key, size_t len);
    int (*settle)(amq_qf *x); /* the growth under way finished */
} amq_qf_isa;

extern const amq_qf_isa amq_qf_isa_base;
#if defined(__x86_64__)
extern const amq_qf_isa amq_qf_isa_avx2;
extern const amq_qf_isa amq_qf_isa_avx512;
#endif

/* May h be a pending key?  Its bit of the signature: a query that the table
 * did not answer compares the 16 keys only then, for 1 absent key in 16 or
 * fewer (a 64-bit signature sent 1 in 4.5 there). */
static inline int amq_qf_pend_maybe(const amq_qf *x, uint64_t h)
{
    return (int)((x->pend_sig[h >> 62] >> ((h >> 56) & 63u)) & 1u);
}

/* Pending key h into the signature (in) or out of it (its count kept, as two
 * pending keys may share a bit). */
static inline void amq_qf_pend_sign(amq_qf *x, uint64_t h, int in)
{
    const uint32_t b = (uint32_t)(h >> 56);
    const uint64_t bit = UINT64_C(1) << (b & 63u);
    if (in) {
        if (x->pend_cnt[b]++ == 0)
            x->pend_sig[b >> 6] |= bit;
    } else if (--x->pend_cnt[b] == 0) {
        x->pend_sig[b >> 6] &= ~bit;
    }
}

/* The signature from the pending keys (a loaded or cleared filter). */
static inline void amq_qf_pend_resign(amq_qf *x)
{
    uint32_t q;
    memset(x->pend_sig, 0, sizeof x->pend_sig);
    memset(x->pend_cnt, 0, sizeof x->pend_cnt);
    for (q = 0; q < QF_PENDING; q++)
        if ((x->pend_used >> q) & 1u)
            amq_qf_pend_sign(x, x->pend[q], 1);
}

/* The lines a table of m slots takes. */
static inline uint64_t amq_qf_lines_for(uint64_t m)
{
    return (m + QF_SLOTS - 1) / QF_SLOTS + QF_TAIL_LINES;
}

/* A filter with no table, this CPU's paths and alloc's allocator. */
amq_qf *amq_qf_shell(const amq_allocator *alloc);
void amq_qf_set_hash(amq_qf *x, uint32_t algo, uint64_t seed);
/* The first key of slot a of x's table (ceil(a 2^64 / m); 0 for slot 0). */
uint64_t amq_qf_first_key(const amq_qf *x, uint64_t a);
/* The slots a filter starting with room for capacity keys takes. */
uint64_t amq_qf_slots_for(uint64_t capacity);
/* Every invariant of the table and the deep list (a loaded payload):
 * AMQ_OK, or AMQ_ECORRUPT with what is wrong in msg. */
int amq_qf_validate(const amq_qf *x, char *msg, size_t cap);
/* The loaded growth's place (x->growth) against both tables (validated):
 * AMQ_OK, or AMQ_ECORRUPT with what is wrong in msg. */
int amq_qf_check_growth(const amq_qf *x, char *msg, size_t cap);
/* Entries counted by length from the table (a loaded payload's cnt). */
void amq_qf_count(const amq_qf *x, uint64_t cnt[16]);


/* ---- what every instruction set's table needs: inline, so that its object needs only
 * src/common (scripts/check-layering.sh) ---------------------------------------------------- */

static inline void amq_qf_set_m(amq_qf *x, uint64_t m)
{
    const unsigned __int128 f = ~(unsigned __int128)0 / m;
    x->m = m;
    x->k = 63u - (uint32_t)__builtin_clzll(m);
    x->recip_hi = (uint64_t)(f >> 64);
    x->recip_lo = (uint64_t)f;
    x->lines = amq_qf_lines_for(m);
}

static inline int amq_qf_alloc_table(amq_qf *x)
{
    if (amq_region_alloc(&x->table, &x->alloc, (size_t)(x->lines * 64u)) != AMQ_OK)
        return AMQ_ENOMEM;
    x->t = x->table.data;
    return AMQ_OK;
}

static inline void amq_qf_free(amq_qf *x);

/* The growth under way dropped (its table and lists). */
static inline void amq_qf_growth_free(amq_qf *x)
{
    amq_qf_growth *g = x->growth;
    if (g == NULL)
        return;
    amq_free(&x->alloc, g->voids, 2 * g->cap * sizeof *g->voids);
    if (g->y != NULL) {
        g->y->deep = NULL; /* x's */
        g->y->deep_owned = 0;
        g->y->deep2 = NULL;
        amq_qf_free(g->y);
    }
    amq_free(&x->alloc, g->buf, QF_STEP_ITEMS * QF_PLACE_BYTES);
    amq_free(&x->alloc, g, sizeof *g);
    x->growth = NULL;
}

static inline void amq_qf_free(amq_qf *x)
{
    amq_allocator a;
    if (x == NULL)
        return;
    amq_qf_growth_free(x);
    a = x->alloc;
    amq_region_free(&x->table, &a);
    if (x->deep_owned)
        amq_free(&a, x->deep, 2 * x->deep_cap * sizeof *x->deep);
    amq_free(&a, x, sizeof *x);
}

/* An entry of L bits from bit k answers at most 2^(64-k-L) keys of its
 * slot (its two ranges 2^(64-k) apart, the slot narrower), one of L bits
 * from bit k - 1 (short) 2^(65-k-L); a void lane's keys are the deep list's. */
static inline double amq_qf_rate(const amq_qf *x)
{
    double r = 0.0, deep = 0.0;
    uint64_t i;
    uint32_t l;
    for (l = 1; l <= 15; l++)
        r += ldexp((double)x->cnt[l], -(int)(x->k + l - (l <= 3 ? 1u : 0u)));
    for (i = 0; i < x->ndeep; i++)
        deep += (double)(x->deep[2 * i + 1] - x->deep[2 * i]) + 1.0;
    return r + ldexp(deep, -64);
}

/* Growth keeps every entry's keys; the new table then fills with 15-bit entries. */
static inline double amq_qf_rate_after_growth(const amq_qf *x, uint64_t m2)
{
    const uint32_t k2 = 63u - (uint32_t)__builtin_clzll(m2);
    const double more = QF_MAX_LOAD * (double)m2 - (double)x->entries;
    return amq_qf_rate(x) + (more > 0 ? ldexp(more, -(int)(k2 + 15u)) : 0.0);
}

/* A filter with no table, x's allocator and paths (a table grown into). */
static inline amq_qf *amq_qf_new_like(const amq_qf *x)
{
    amq_qf *y = amq_calloc(&x->alloc, sizeof *y);
    if (y != NULL) {
        y->alloc = x->alloc;
        y->isa = x->isa;
    }
    return y;
}

#endif /* AMQ_QUOTIENT_INTERNAL_H */
