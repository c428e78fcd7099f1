/*
 * pocket_internal.h - the pocket kind (13): a filter that grows from a few
 * thousand keys without bound in 64-byte bins (docs/expandable.md, "The
 * pocket kind").
 *
 * A bin is a pocket dictionary in one cache line (the prefix filter's, Even,
 * Even and Morrison, VLDB 2022): a 64-bit map and 28 16-bit entries.  The
 * map holds 32 buckets' counts in unary (bucket j's count as that many 1s,
 * then a 0) in its low 60 bits and, in its top 4, the spare's cutoff: a full
 * bin keeps its lowest buckets whole and sends the last entry of its highest
 * bucket to the segment's spare, and a query reads the spare only for a
 * bucket at or past the first that sent one there.  A key's bucket is h's
 * range-reduced position (h m >> 64) and its entry h's 15 bits after the top
 * k = floor(log2 m), over a unary length marker, so that a table grown by
 * 1.15 is written from the old one alone, in one pass, each entry giving up a
 * bit whenever k grows; an entry run down to 3 bits or fewer becomes its
 * exact range of h (the deep list), or, in a filter of short entries
 * (PK_SHORT_DEEP_BITS), holds a bit of the bucket's (telling its two cells
 * apart) until it has no bit left.
 *
 * The filter is 2^d segments (d up to 8), a key's by its top d bits, each a
 * table grown on its own at 95 % load, their sizes staggered so that they
 * take turns and the whole stays between 0.95 / 1.15 and 0.95 full: it
 * starts as one segment and every segment splits in two (a relabeling) while
 * they are small.  A large segment grows in place: its bins keep a range of
 * addresses, are moved up by the growth, and the new table is written from
 * the start.
 *
 * The spare is a table of 32-bit slots in bucket order (ordered linear
 * probing): a slot holds the entry's bucket's low 16 bits over the entry;
 * the bucket g's home slot is g spcap / m, a slot is never more than spd
 * past its entry's home, and (spd + 2) m / spcap <= PK_SP_WINDOW, so that
 * any slot's bucket is within 2^15 of a reference known from its position.
 */
#ifndef AMQ_POCKET_INTERNAL_H
#define AMQ_POCKET_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "amq/filter.h"
#include "common/alloc.h"
#include "kind.h"

#define PK_SLOTS 28u
#define PK_BUCKETS 32u
#define PK_MAP_MASK ((UINT64_C(1) << (PK_SLOTS + PK_BUCKETS)) - 1u)
#define PK_SPARE_SHIFT (PK_SLOTS + PK_BUCKETS)
#define PK_SPARE_ALL 15u /* the cutoff field's largest value: every bucket may have spare keys */
#define PK_SPARE_FIELD ((uint64_t)PK_SPARE_ALL << PK_SPARE_SHIFT)
#define PK_SHORT 3u         /* entries of this many bits or fewer hold one of the bucket's */
#define PK_ENTRY_BITS 15u   /* an entry's bits when added (fewer by fingerprint_bits, tests) */
#define PK_MIN_ENTRY_BITS 5u
/* Entries added with this many bits or more become deep ranges, not short entries, when
 * they run down to PK_SHORT bits: a short entry answers twice its range (and a capped one
 * four times), which at 1e8 keys grown from 1,000 was two fifths of the rate; the deep
 * range answers its range exactly, in 16 bytes, for at most 2^-(bits - PK_SHORT) of the
 * entries (1/4,096 at 15 bits: 0.05 bits a key at 1e8).  Shorter entries (tests) would put
 * an eighth of theirs there, and keep the short form. */
#define PK_SHORT_DEEP_BITS 12u
#define PK_LOAD 0.95        /* a segment grows when its entries reach this share of its slots */
#define PK_GROWTH 1.15      /* by this factor */
#define PK_SEG_BITS 8u      /* up to 256 segments: a growth rewrites 1/256 of the filter */
#define PK_SPLIT_BINS 8u    /* every segment splits in two once each has this many bins */
#define PK_GAP_SLACK 8u     /* bins a growth in place writes past its new table's last */
#define PK_SMALL_BYTES ((size_t)1 << 16) /* smaller tables grow into new heap blocks */
#define PK_MAX_BINS (UINT64_C(1) << 26) /* a segment's: m < 2^31, g spcap < 2^63 */
#define PK_SP_DMAX 2048u    /* a spare slot's largest distance from its entry's home, at most */
#define PK_SP_WINDOW 32700u /* (spd + 2) m / spcap buckets at most: within 2^15 of a reference */
#define PK_SP_LOAD 0.92     /* the spare is rebuilt larger past this load */
#define PK_SP_FILL 0.75     /* to this one (at 0.85, rebuilt twice as often: 3 % slower adds) */
#define PK_SP_SMALL 4096u   /* slots a growth's spare may take for a crowd, or twice its size */
#define PK_MIN_FPP 0.001
#define PK_MAX_FPP 0.5
#define PK_PENDING 16u      /* keys an add keeps waiting while their lines are fetched */
/* The pending keys' signature: 2^12 bits, so that a query reads the ring for ~0.4 % of keys
 * where 256 bits sent ~6 % there, each a mispredicted branch (docs/expandable-log.md) */
#define PK_SIG_LOG 12u
#define PK_SIG_WORDS ((1u << PK_SIG_LOG) / 64u)
#define PK_START_MIN 64u   /* a smaller starting capacity starts here */
#define PK_START_MAX (UINT64_C(1) << 30) /* its first table under PK_MAX_BINS */

typedef struct pk_bin {
    uint64_t map; /* bucket j's count as that many 1s then a 0, from bit 0; the cutoff on top */
    uint16_t e[PK_SLOTS];
} pk_bin;

/* A spare or deep entry on its way through a growth: bucket g, entry v. */
typedef struct pk_ent {
    uint64_t g;
    uint16_t v;
    uint32_t at; /* its slot, while a spare is rebuilt (sp_fit) */
} pk_ent;

typedef struct pk_seg {
    pk_bin *b;        /* nb bins */
    uint64_t nb, m;   /* bins, buckets (PK_BUCKETS nb) */
    uint64_t q0;      /* floor(2^64 / m) */
    uint32_t k;       /* floor(log2 m) */
    uint32_t short_bins; /* 1: a bin holds an entry of PK_SHORT bits or fewer (pk_count) */
    uint64_t entries; /* in its bins and spare */
    uint64_t limit;   /* it grows when entries reach this */
    double rsum;      /* the sum of 2^-len over its entries */
    double rdeep;     /* its deep ranges' share of h */
    uint32_t *sp;     /* the spare's splen slots, the last always 0 (NULL: no entry) */
    uint64_t spcap, splen, spn;
    uint32_t spd;       /* a slot's largest distance from its entry's home */
    uint32_t epoch;     /* its size's place on the segments' grid */
    uint64_t (*deep)[2]; /* [lo, hi] ranges of h << d, sorted */
    uint64_t ndeep, deepcap, deep_width;
    /* the bins' memory: a range of addresses of their own (va), or a region */
    void *va;
    size_t reserved;
    amq_region region;
    /* the spare's and the deep ranges' memory: a mapping of this many bytes (0: the
     * allocator's block of splen or deepcap entries) */
    size_t sp_map, deep_map;
} pk_seg;

/* A table as a growth reads and writes it: the old one's spare as a list in
 * bucket order, the new one's spare and deep ranges as lists pushed to. */
typedef struct pk_tab {
    pk_bin *b;
    uint64_t nb, m, q0;
    uint32_t k;
    pk_ent *sp;
    uint64_t nsp, capsp;
    uint64_t (*deep)[2];
    uint64_t ndeep, capdeep, deep_width;
    uint32_t short_deep; /* 1: an entry left with PK_SHORT bits or fewer becomes a deep range */
    int fixed;  /* 1: the lists were made large enough for any growth (no push fails) */
    int failed; /* a push found no memory: the growth is abandoned */
    const amq_allocator *alloc;
} pk_tab;

struct amq_pk_isa;

typedef struct amq_pk {
    pk_seg *seg;  /* 2^d of them */
    uint32_t d;
    uint32_t eb;  /* an entry's bits when added */
    double unit;  /* 2^-eb: an added entry's share of a query's rate in its bucket */
    const struct amq_pk_isa *isa;
    int view;     /* 1: every array points into a borrowed payload */
    uint32_t hash_algo;
    uint64_t seed;
    uint64_t x8;  /* the seed's part of an 8-byte key's XXH3 (common/xxh3_8.h) */
    uint32_t pend_used; /* a bit per cell of pend that holds a key */
    uint32_t pend_next; /* the cell of the next add: the oldest key when all are used */
    uint64_t pend_sig[PK_SIG_WORDS]; /* bit pk_sig_bit(h) of each pending key */
    uint64_t pend[PK_PENDING]; /* keys added, not yet placed (queries look here too) */
    double fpp;   /* target */
    uint64_t start;  /* keys it was created for (clear goes back) */
    uint64_t items;  /* keys added */
    uint64_t growths, splits;
    double b0;    /* bins of the first segment's first table */
    pk_ent *scr;  /* a spare's entries while it is rebuilt */
    uint64_t scr_cap;
    void *gscr;   /* a growth in place's lists: a mapping kept for the next (no faults) */
    size_t gscr_len;
    amq_allocator alloc;
} amq_pk;

typedef struct amq_pk_isa {
    int (*add)(amq_pk *x, uint64_t h);
    int (*contains)(const amq_pk *x, uint64_t h);
    void (*contains_batch)(const amq_pk *x, const amq_hash128 *h, size_t n, uint8_t *out);
    int (*contains_key)(const void *x, const void *key, size_t len);
    int (*add_key)(void *x, const void *key, size_t len);
    int (*add_batch)(amq_pk *x, const amq_hash128 *h, size_t n, uint8_t *added);
    /* The rewrite of table t into dst (pocket_impl.h). */
    void (*rewrite)(const pk_tab *t, pk_tab *dst);
    int (*settle)(amq_pk *x); /* every pending key placed */
} amq_pk_isa;

extern const amq_pk_isa amq_pk_isa_base;
#if defined(__x86_64__)
extern const amq_pk_isa amq_pk_isa_avx512;
#endif


static inline uint64_t pk_mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* Key h's segment (its top d bits). */
static inline uint32_t pk_seg_of(const amq_pk *x, uint64_t h)
{
    return (uint32_t)((h >> 1) >> (63u - x->d));
}

/* Does bucket j of a bin with this map have keys in the spare? */
static inline int pk_to_spare(uint64_t map, uint32_t j)
{
    /* cutoff c sends j when j + c >= 32, every bucket at PK_SPARE_ALL: c >= min(32 - j, 15),
     * one comparison of the map (a query's one integer step on its line) */
    const uint32_t t = PK_BUCKETS - j < PK_SPARE_ALL ? PK_BUCKETS - j : PK_SPARE_ALL;
    return map >= (uint64_t)t << PK_SPARE_SHIFT;
}

/* The cutoff lowered to bucket j if it is above. */
static inline void pk_spare_from(uint64_t *map, uint32_t j)
{
    const uint32_t c = PK_BUCKETS - j < PK_SPARE_ALL ? PK_BUCKETS - j : PK_SPARE_ALL;
    if (!pk_to_spare(*map, j))
        *map = (*map & ~PK_SPARE_FIELD) | (uint64_t)c << PK_SPARE_SHIFT;
}

/* Does entry v (nonzero) answer key hs of a table of level k? */
static inline int pk_entry_hits(uint16_t v, uint64_t hs, uint32_t k)
{
    const uint32_t len = 31u - (uint32_t)__builtin_clz(v);
    const uint32_t from = len <= PK_SHORT ? k - 1u : k;
    return len == 0 || ((hs << from) >> (64u - len)) == (uint64_t)(v ^ (1u << len));
}

/* floor(x / m) for x < 2^63 by s's reciprocal q0 = floor(2^64 / m), which is at most one
 * under it (a division is most of a spare rebuild's placing of an entry). */
static inline uint64_t pk_div_m(const pk_seg *s, uint64_t x)
{
    uint64_t q = pk_mulhi(x, s->q0);
    q += x - q * s->m >= s->m;
    return q;
}

/* Bucket g's home slot in the spare. */
static inline uint64_t pk_sp_home(const pk_seg *s, uint64_t g)
{
    return pk_div_m(s, g * s->spcap);
}

/* The bucket of slot value w at position q (its reference: q's first bucket). */
static inline uint64_t pk_sp_bucket(const pk_seg *s, uint64_t q, uint32_t w)
{
    const uint64_t ref = q * s->m / s->spcap;
    return ref + (uint64_t)(int64_t)(int16_t)(uint16_t)((w >> 16) - (uint32_t)ref);
}

/* Does the spare hold an entry of bucket g answering hs?  Slots from g's home
 * are within 2^15 buckets of g until the first past g or empty. */
static inline int pk_sp_has(const pk_seg *s, uint64_t g, uint64_t hs)
{
    const uint32_t *p;
    if (s->spn == 0)
        return 0;
    for (p = s->sp + pk_sp_home(s, g); *p != 0; p++) {
        const int dist = (int16_t)(uint16_t)((*p >> 16) - (uint32_t)g);
        if (dist > 0)
            break;
        if (dist == 0 && pk_entry_hits((uint16_t)*p, hs, s->k))
            return 1;
    }
    return 0;
}

/* Key h's bit of the pending keys' signature. */
static inline uint32_t pk_sig_bit(uint64_t h)
{
    return (uint32_t)(h >> (64u - PK_SIG_LOG));
}

/* May h be a pending key?  (Its bit of the signature: a query that the bins do
 * not answer reads the pending keys only then.) */
static inline int pk_pend_maybe(const amq_pk *x, uint64_t h)
{
    const uint32_t b = pk_sig_bit(h);
    return (int)((x->pend_sig[b >> 6] >> (b & 63u)) & 1u);
}

/* Pending key h into the signature. */
static inline void pk_pend_sign(amq_pk *x, uint64_t h)
{
    const uint32_t b = pk_sig_bit(h);
    x->pend_sig[b >> 6] |= UINT64_C(1) << (b & 63u);
}

/* The signature from the pending keys: after keys leave the ring (a bit may be another's), and
 * for a loaded, cloned or cleared filter. */
static inline void pk_pend_resign(amq_pk *x)
{
    uint32_t c;
    memset(x->pend_sig, 0, sizeof x->pend_sig);
    for (c = 0; c < PK_PENDING; c++)
        if ((x->pend_used >> c) & 1u)
            pk_pend_sign(x, x->pend[c]);
}

/* Is h a pending key? */
static inline int pk_pend_has(const amq_pk *x, uint64_t h)
{
    uint32_t c;
    for (c = 0; c < PK_PENDING; c++)
        if (((x->pend_used >> c) & 1u) && x->pend[c] == h)
            return 1;
    return 0;
}



/* A filter with no segments, this CPU's paths and alloc's allocator. */
amq_pk *amq_pk_shell(const amq_allocator *alloc);
void amq_pk_set_hash(amq_pk *x, uint32_t algo, uint64_t seed);
/* An empty filter for start keys (x->eb, fpp set): AMQ_OK or AMQ_ENOMEM. */
int amq_pk_init(amq_pk *x, uint64_t start);
void amq_pk_free(amq_pk *x);
/* The segments' memory released, x's fields kept. */
void amq_pk_free_segments(amq_pk *x);
/* Segment s's geometry for nb bins (its arrays not touched). */
void amq_pk_set_bins(pk_seg *s, uint64_t nb);
/* Entries in s's bins and spare, their share of the rate; its growth limit. */
void amq_pk_count(pk_seg *s);
/* A segment's bytes in memory (bins, spare, deep ranges). */
uint64_t amq_pk_seg_bytes(const pk_seg *s);
/* Entries of each length (0 to 15) in the bins and spares, and each length's
 * share of the expected rate. */
void amq_pk_lengths(const amq_pk *x, uint64_t cnt[16], double share[16]);
/* The expected false-positive rate from the entries' lengths and the deep
 * ranges (kept by the adds and growths: no pass over the table). */
double amq_pk_rate(const amq_pk *x);
/* A copy of s's arrays into d (owned, under x's allocator). */
int amq_pk_seg_copy(const amq_pk *x, const pk_seg *s, pk_seg *d);
/* Checks segment s of a loaded filter: NULL, or why it is not valid. */
const char *amq_pk_seg_check(const amq_pk *x, const pk_seg *s);

#endif /* AMQ_POCKET_INTERNAL_H */
