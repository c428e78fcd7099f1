/*
 * scalable_cuckoo.c - the scalable cuckoo filter (amq/scalable_cuckoo.h):
 * RedisBloom's CF, reimplemented from its documented behaviour, plus a
 * native mode with wider fingerprints.
 *
 * Bucket counts are powers of two, so "mod nb" is a mask and the alternate
 * index (i xor fp * 0x5bd1e995) mod nb is an involution within every
 * link and compatible across links: nb_j divides nb_k for
 * j < k, which is what lets compaction move a fingerprint from bucket i of
 * a newer link to bucket i mod nb_j of an older one without the key.
 *
 * Buckets may have any size up to 255 slots, so bucket search is a plain
 * scan (memchr for 8-bit slots) rather than the lane trick of cuckoo.c.
 */
#include <math.h>
#include <string.h>

#include "amq/cuckoo.h"
#include "amq/scalable_cuckoo.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/error.h"
#include "cuckoo_table.h"
#include "kind.h"
#include "scalable_cuckoo_internal.h"

/* Every link the first's size (a chain growing by 1): offsets and
 * totals are then products, O(1) however long the chain. */
static int uniform(const amq_scuckoo *c)
{
    return c->exp_log <= 1 && sub_nb(&c->f[c->nf - 1]) == sub_nb(&c->f[0]);
}

/* No compaction pass under way: the next starts at the newest link. */
static void pass_reset(amq_scuckoo *c)
{
    c->f[0].pass_link = 0;
    c->f[0].pass_at = 0;
}

typedef struct lookup {
    uint64_t h1, h2;
    uint32_t fp;
} lookup;

#define DEFAULT_MAX_FILTERS 32u

/* ---- parameters ------------------------------------------------------------------ */


void amq_scuckoo_params_init(amq_scuckoo_params *p, int redisbloom)
{
    memset(p, 0, sizeof *p);
    p->max_links = DEFAULT_MAX_FILTERS;
    if (redisbloom) {
        p->capacity = 1024;
        p->bucket_size = 2;
        p->max_kicks = 20;
        p->expansion = 1;
        p->fingerprint_bits = 8;
        p->redisbloom = 1;
        p->hash_algo = AMQ_HASH_MURMUR64A;
    } else {
        p->capacity = 1024;
        p->bucket_size = 4;
        p->max_kicks = 500;
        p->expansion = 2;
        p->fingerprint_bits = 16;
        p->hash_algo = AMQ_HASH_XXH3;
    }
}

static uint64_t next_pow2(uint64_t x)
{
    uint64_t p = 1;
    while (p < x && p <= (UINT64_C(1) << 62))
        p <<= 1;
    return p;
}


uint64_t amq_sc_sub_bytes(const amq_scuckoo *c, uint64_t nb)
{
    return (nb * c->bucket_size * c->fingerprint_bits + 7) / 8;
}

/* Bytes a link's table takes.  Slots are read bytewise: no
 * alignment to pay for; 8-bit slots (the RedisBloom layout) are never read
 * past the last one, so the table is exactly its slots and a power-of-two
 * table stays in its allocator size class; packed 12/16-bit tables keep
 * the zero padding of cuckoo_table.h. */
uint64_t amq_sc_table_bytes(const amq_scuckoo *c, uint64_t nb)
{
    return c->fingerprint_bits == 8 ? amq_sc_sub_bytes(c, nb)
                                      : ct_bytes(nb * c->bucket_size, c->fingerprint_bits);
}

/*
 * Checks a chain's shape and returns its total slots: nf links of
 * nb0 * expansion^j buckets each within AMQ_SCUCKOO_MAX_SLOTS.
 */
int amq_sc_check_chain(uint32_t bs, uint32_t exp, uint64_t nb0, uint64_t nf, uint64_t *slots)
{
    uint64_t nb = nb0, total = 0, j;

    if (!is_pow2(nb0) || nf == 0 || nf > AMQ_SCUCKOO_MAX_LINKS || (exp == 0 && nf != 1))
        return AMQ_ERANGE;
    for (j = 0; j < nf; j++) {
        if (j > 0) {
            if (nb > AMQ_SCUCKOO_MAX_SLOTS / exp)
                return AMQ_ERANGE;
            nb *= exp;
        }
        if (nb > AMQ_SCUCKOO_MAX_SLOTS / bs)
            return AMQ_ERANGE;
        total += nb * bs; /* < 65535 * 2^40: no overflow */
    }
    *slots = total;
    return AMQ_OK;
}

int amq_sc_check_scalars(uint32_t bs, uint32_t iters, uint32_t exp)
{
    if (bs < 1 || bs > 255 || iters < 1 || iters > 65535 || exp > 32768)
        return AMQ_ERANGE;
    return AMQ_OK;
}

/* ---- life cycle -------------------------------------------------------------------- */

/* The handle's own copy of its allocator, when it has one. */
static int owns_allocator(const amq_scuckoo *c)
{
    return c->alloc == (const amq_allocator *)(const void *)(c + 1);
}

/* p was checked (limits, hash); its expansion is rounded. */
amq_scuckoo *amq_sc_shell(const amq_scuckoo_params *p, const amq_allocator *alloc)
{
    const amq_allocator *shared = amq_alloc_shared(alloc);
    amq_allocator a;
    amq_scuckoo *c;

    amq_alloc_init(&a, alloc);
    c = amq_calloc(&a, sizeof *c + (shared == NULL ? sizeof a : 0));
    if (c == NULL)
        return NULL;
    if (shared == NULL) {
        memcpy(c + 1, &a, sizeof a);
        shared = (const amq_allocator *)(const void *)(c + 1);
    }
    c->alloc = shared;
    c->capacity = p->capacity;
    c->seed = p->seed;
    c->max_filters = p->max_links;
    c->max_iterations = (uint16_t)p->max_kicks;
    c->exp_log = p->expansion == 0 ? 0 : (uint8_t)(__builtin_ctz(p->expansion) + 1);
    c->bucket_size = (uint8_t)p->bucket_size;
    c->fingerprint_bits = (uint8_t)p->fingerprint_bits;
    c->redisbloom = p->redisbloom != 0;
    c->hash_algo = (uint8_t)(p->hash_algo & 0x7fu);
    return c;
}

/* Appends a link of nb buckets: zeroed, or adopting table (its
 * bytes from the filter's allocator; still the caller's on an error). */
static int push_subf(amq_scuckoo *c, uint64_t nb, void *table)
{
    subf *s;
    uint64_t bytes;
    int rc;

    if (c->nf >= AMQ_SCUCKOO_MAX_LINKS)
        return AMQ_ELIMIT; /* whatever max_filters says: a longer chain could not load */
    if (!is_pow2(nb) || nb > AMQ_SCUCKOO_MAX_SLOTS)
        return AMQ_ERANGE; /* kept as its log2 (callers pass checked shapes) */
    if (c->nf == c->cap) {
        /* One entry at a time while chains are short (what a host such
         * as Redis counts per key), doubling beyond. */
        uint32_t ncap = c->nf < 32 ? c->nf + 1u : 2u * c->cap;
        subf *nf;
        if (ncap > AMQ_SCUCKOO_MAX_LINKS)
            ncap = AMQ_SCUCKOO_MAX_LINKS;
        nf = amq_calloc(c->alloc, ncap * sizeof *nf);
        if (nf == NULL)
            return AMQ_ENOMEM;
        if (c->nf > 0)
            memcpy(nf, c->f, c->nf * sizeof *nf);
        amq_free(c->alloc, c->f, c->cap * sizeof *c->f);
        c->f = nf;
        c->cap = (uint16_t)ncap;
    }
    s = &c->f[c->nf];
    bytes = amq_sc_table_bytes(c, nb);
    if (table != NULL && amq_block_adoptable(c->alloc, (size_t)bytes)) {
        s->data = table;
    } else {
        rc = amq_block_alloc(c->alloc, (size_t)bytes, &s->data);
        if (rc != AMQ_OK)
            return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
        if (table != NULL) { /* a large default-allocator table: copied */
            memcpy(s->data, table, (size_t)bytes);
            amq_free(c->alloc, table, (size_t)bytes);
        }
    }
    s->lg = (uint64_t)__builtin_ctzll(nb) & 63u;
    s->pass_at = 0;
    s->pass_link = 0;
    c->nf++;
    pass_reset(c); /* a new newest link: a pass starts from it */
    return AMQ_OK;
}

void amq_sc_pop_subf(amq_scuckoo *c)
{
    c->nf--;
    if (c->nf > 0)
        pass_reset(c);
    if (c->full_links > c->nf)
        c->full_links = c->nf;
    amq_block_free(c->alloc, c->f[c->nf].data, (size_t)amq_sc_table_bytes(c, sub_nb(&c->f[c->nf])));
}

/* Allocates nf links nb0 * expansion^j (shape already checked), or
 * adopts tables[j]; on an error, tables from the failed one on are not
 * taken. */
int amq_sc_build_chain(amq_scuckoo *c, uint64_t nb0, uint64_t nf, void **tables)
{
    uint64_t nb = nb0, j;
    int rc;
    for (j = 0; j < nf; j++) {
        if (j > 0)
            nb *= sc_expansion(c);
        rc = push_subf(c, nb, tables != NULL ? tables[j] : NULL);
        if (rc != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

int amq_scuckoo_new(const amq_scuckoo_params *params, const amq_allocator *alloc,
                    amq_scuckoo **out)
{
    amq_scuckoo_params p = *params;
    amq_scuckoo *c;
    uint64_t slots, nb0;
    int rc;

    *out = NULL;
    if (p.redisbloom) {
        if (p.fingerprint_bits != 8)
            return AMQ_ERANGE;
        p.hash_algo = AMQ_HASH_MURMUR64A;
        p.seed = 0;
    } else if (!native_width(p.fingerprint_bits)) {
        return AMQ_ERANGE;
    }
    if (amq_sc_check_scalars(p.bucket_size, p.max_kicks, p.expansion) != AMQ_OK ||
        p.capacity == 0 || p.capacity > AMQ_SCUCKOO_MAX_SLOTS || p.max_links == 0)
        return AMQ_ERANGE;
    rc = amq_hash_check(p.hash_algo, p.seed);
    if (rc != AMQ_OK)
        return rc;
    p.expansion = p.expansion == 0 ? 0 : (uint32_t)next_pow2(p.expansion);
    c = amq_sc_shell(&p, alloc);
    if (c == NULL)
        return AMQ_ENOMEM;
    nb0 = next_pow2(p.capacity / p.bucket_size);
    if (amq_sc_check_chain(p.bucket_size, p.expansion, nb0, 1, &slots) != AMQ_OK) {
        amq_scuckoo_free(c);
        return AMQ_ERANGE;
    }
    rc = amq_sc_build_chain(c, nb0, 1, NULL);
    if (rc != AMQ_OK) {
        amq_scuckoo_free(c);
        return rc;
    }
    *out = c;
    return AMQ_OK;
}

int amq_scuckoo_clone(const amq_scuckoo *src, const amq_allocator *alloc, amq_scuckoo **out)
{
    amq_scuckoo_params p;
    amq_scuckoo *c;
    uint32_t j;
    int rc;

    *out = NULL;
    amq_scuckoo_get_params(src, &p);
    c = amq_sc_shell(&p, alloc);
    if (c == NULL)
        return AMQ_ENOMEM;
    for (j = 0; j < src->nf; j++) {
        rc = push_subf(c, sub_nb(&src->f[j]), NULL);
        if (rc != AMQ_OK) {
            amq_scuckoo_free(c);
            return rc;
        }
        memcpy(c->f[j].data, src->f[j].data, (size_t)amq_sc_table_bytes(c, sub_nb(&src->f[j])));
    }
    c->items = src->items;
    c->deletes = src->deletes;
    c->full_links = src->full_links; /* the same slots: a compaction goes on as it would */
    c->f[0].pass_link = src->f[0].pass_link;
    c->f[0].pass_at = src->f[0].pass_at;
    *out = c;
    return AMQ_OK;
}

void amq_scuckoo_free(amq_scuckoo *c)
{
    amq_allocator a;
    if (c == NULL)
        return;
    a = *c->alloc; /* the handle's own copy goes with it */
    while (c->nf > 0)
        amq_sc_pop_subf(c);
    amq_free(&a, c->f, c->cap * sizeof *c->f);
    amq_free(&a, c, sizeof *c + (owns_allocator(c) ? sizeof a : 0));
}

/* ---- slots ------------------------------------------------------------------------------ */

static inline uint32_t slot_get(const amq_scuckoo *c, const subf *s, uint64_t slot)
{
    return ct_get(s->data, c->fingerprint_bits, slot);
}

static inline void slot_set(const amq_scuckoo *c, subf *s, uint64_t slot, uint32_t v)
{
    ct_set(s->data, c->fingerprint_bits, slot, v);
}

/* First slot of bucket i holding v (0 = the first empty slot), or -1. */
static int64_t bucket_find(const amq_scuckoo *c, const subf *s, uint64_t i, uint32_t v)
{
    uint32_t bs = c->bucket_size, j;
    uint64_t base = i * bs;

    if (c->fingerprint_bits == 8) {
        const uint8_t *p = s->data + base;
        const uint8_t *q = memchr(p, (int)v, bs);
        return q != NULL ? (int64_t)(base + (uint64_t)(q - p)) : -1;
    }
    for (j = 0; j < bs; j++)
        if (slot_get(c, s, base + j) == v)
            return (int64_t)(base + j);
    return -1;
}

static uint64_t bucket_count(const amq_scuckoo *c, const subf *s, uint64_t i, uint32_t v)
{
    uint32_t bs = c->bucket_size, j;
    uint64_t n = 0;
    for (j = 0; j < bs; j++)
        n += slot_get(c, s, i * bs + j) == v;
    return n;
}

static inline uint64_t alt_hash(uint32_t fp, uint64_t i)
{
    return i ^ ((uint64_t)fp * AMQ_SCUCKOO_ALT_MUL);
}

static lookup lookup_of(const amq_scuckoo *c, amq_hash128 h)
{
    lookup l;
    uint32_t f = c->fingerprint_bits;

    l.h1 = h.h1;
    if (c->redisbloom)
        l.fp = (uint32_t)(h.h1 % 255) + 1;
    else
        l.fp = (uint32_t)(((h.h2 >> 32) * ((UINT64_C(1) << f) - 1)) >> 32) + 1;
    l.h2 = alt_hash(l.fp, l.h1);
    return l;
}

/* An empty slot in bucket h1 or h2 of s (mod its size), or -1. */
static int64_t find_available(const amq_scuckoo *c, const subf *s, uint64_t h1, uint64_t h2)
{
    int64_t slot = bucket_find(c, s, h1 & (sub_nb(s) - 1), 0);
    if (slot < 0)
        slot = bucket_find(c, s, h2 & (sub_nb(s) - 1), 0);
    return slot;
}

/* ---- insertion ------------------------------------------------------------------------------ */

/*
 * The eviction walk on link s: from bucket h1 and slot 0, swap the
 * carried fingerprint into the current slot, move to the alternate bucket
 * of the fingerprint now carried, stop at an empty slot there; else the
 * next slot (mod bucket size).  On failure, the same steps backwards
 * restore every slot: the alternate index is its own inverse.
 */
static int kick_insert(amq_scuckoo *c, subf *s, const lookup *l)
{
    uint32_t bs = c->bucket_size, iters = c->max_iterations, k, fp = l->fp, old;
    uint64_t mask = sub_nb(s) - 1, ii = l->h1 & mask, slot;
    uint32_t victim = 0;
    int64_t empty;

    for (k = 0; k < iters; k++) {
        slot = ii * bs + victim;
        old = slot_get(c, s, slot);
        slot_set(c, s, slot, fp);
        fp = old;
        ii = alt_hash(fp, ii) & mask;
        empty = bucket_find(c, s, ii, 0);
        if (empty >= 0) {
            slot_set(c, s, (uint64_t)empty, fp);
            return 1;
        }
        victim = (victim + 1) % bs;
    }
    for (k = 0; k < iters; k++) {
        victim = (victim + bs - 1) % bs;
        ii = alt_hash(fp, ii) & mask;
        slot = ii * bs + victim;
        old = slot_get(c, s, slot);
        slot_set(c, s, slot, fp);
        fp = old;
    }
    return 0;
}

static int grow(amq_scuckoo *c)
{
    subf *last = &c->f[c->nf - 1];
    uint64_t nb;

    if (sub_nb(last) > AMQ_SCUCKOO_MAX_SLOTS / sc_expansion(c))
        return AMQ_ELIMIT;
    nb = sub_nb(last) * sc_expansion(c);
    if (nb > AMQ_SCUCKOO_MAX_SLOTS / c->bucket_size || c->nf >= AMQ_SCUCKOO_MAX_LINKS)
        return AMQ_ELIMIT;
    return push_subf(c, nb, NULL);
}

/* Are l's buckets in the last link all entries that answer l? */
static int last_link_all_copies(const amq_scuckoo *c, const lookup *l)
{
    const subf *s = &c->f[c->nf - 1];
    const uint64_t i1 = l->h1 & (sub_nb(s) - 1), i2 = l->h2 & (sub_nb(s) - 1);
    if (i2 == i1)
        return bucket_count(c, s, i1, l->fp) >= c->bucket_size;
    return bucket_count(c, s, i1, l->fp) + bucket_count(c, s, i2, l->fp) >= 2u * c->bucket_size;
}

static int insert_lookup(amq_scuckoo *c, const lookup *l)
{
    uint32_t j;
    int64_t slot;
    int rc;

    if (c->nf >= c->max_filters)
        return AMQ_ELIMIT;
    for (;;) {
        for (j = c->nf; j > 0; j--) {
            slot = find_available(c, &c->f[j - 1], l->h1, l->h2);
            if (slot >= 0) {
                slot_set(c, &c->f[j - 1], (uint64_t)slot, l->fp);
                c->items++;
                return 1;
            }
        }
        if (kick_insert(c, &c->f[c->nf - 1], l)) {
            c->items++;
            return 1;
        }
        if (c->exp_log == 0)
            return AMQ_EFULL;
        if (c->nf >= c->max_filters)
            return AMQ_ELIMIT;
        /* one key added again and again: its two buckets of the last link all its copies,
         * refused, as the cuckoo kind refuses it, where each link more for it would double
         * the filter (RedisBloom's layout grows, as RedisBloom does) */
        if (!c->redisbloom && last_link_all_copies(c, l))
            return AMQ_EFULL;
        rc = grow(c);
        if (rc != AMQ_OK)
            return rc;
    }
}

/* An add is refused for the key's copies exactly when insert_lookup finds
 * its buckets of the newest link all its copies: a link more would not take
 * one more (the older links have no room either, or it would be there). */
uint32_t amq_sc_refusal(const amq_scuckoo *c, amq_hash128 h)
{
    lookup l = lookup_of(c, h);
    return last_link_all_copies(c, &l) ? AMQ_REFUSAL_COPIES : AMQ_REFUSAL_FULL;
}

amq_hash128 amq_scuckoo_hash(const amq_scuckoo *c, const void *key, size_t len)
{
    return amq_hash_key(c->hash_algo, c->seed, key, len);
}

int amq_scuckoo_add_hash(amq_scuckoo *c, amq_hash128 h)
{
    lookup l = lookup_of(c, h);
    return insert_lookup(c, &l);
}

int amq_scuckoo_add(amq_scuckoo *c, const void *key, size_t len)
{
    return amq_scuckoo_add_hash(c, amq_scuckoo_hash(c, key, len));
}

static int contains_lookup(const amq_scuckoo *c, const lookup *l)
{
    uint32_t j;
    for (j = 0; j < c->nf; j++) {
        const subf *s = &c->f[j];
        if (bucket_find(c, s, l->h1 & (sub_nb(s) - 1), l->fp) >= 0 ||
            bucket_find(c, s, l->h2 & (sub_nb(s) - 1), l->fp) >= 0)
            return 1;
    }
    return 0;
}

int amq_scuckoo_contains_hash(const amq_scuckoo *c, amq_hash128 h)
{
    lookup l = lookup_of(c, h);
    return contains_lookup(c, &l);
}

int amq_scuckoo_contains(const amq_scuckoo *c, const void *key, size_t len)
{
    return amq_scuckoo_contains_hash(c, amq_scuckoo_hash(c, key, len));
}

int amq_scuckoo_add_unique_hash(amq_scuckoo *c, amq_hash128 h)
{
    lookup l = lookup_of(c, h);
    if (contains_lookup(c, &l))
        return 0;
    return insert_lookup(c, &l);
}

int amq_scuckoo_add_unique(amq_scuckoo *c, const void *key, size_t len)
{
    return amq_scuckoo_add_unique_hash(c, amq_scuckoo_hash(c, key, len));
}

uint64_t amq_scuckoo_count_hash(const amq_scuckoo *c, amq_hash128 h)
{
    lookup l = lookup_of(c, h);
    uint64_t n = 0, i1, i2;
    uint32_t j;

    for (j = 0; j < c->nf; j++) {
        const subf *s = &c->f[j];
        i1 = l.h1 & (sub_nb(s) - 1);
        i2 = l.h2 & (sub_nb(s) - 1);
        n += bucket_count(c, s, i1, l.fp);
        if (c->redisbloom || i2 != i1)
            n += bucket_count(c, s, i2, l.fp);
    }
    return n;
}

uint64_t amq_scuckoo_count(const amq_scuckoo *c, const void *key, size_t len)
{
    return amq_scuckoo_count_hash(c, amq_scuckoo_hash(c, key, len));
}

/* ---- deletion and compaction ------------------------------------------------------------- */

/* Slot visits left to this compaction, each costing one earlier bucket
 * (the flat walk) or one per earlier link (the plain walk). */
static int spend(uint64_t *budget, uint64_t cost)
{
    if (*budget < cost) {
        *budget = 0;
        return 0;
    }
    *budget -= cost;
    return 1;
}

/* A slot of link j emptied: the links holding no empty slot end before it. */
static void emptied(amq_scuckoo *c, uint32_t j)
{
    if (j < c->full_links)
        c->full_links = (uint16_t)j;
}

/* Moves the fingerprint of slot `slot` (bucket i) of link fi to the
 * oldest earlier link with room: 1 moved or empty, 0 no room. */
static int relocate(amq_scuckoo *c, uint32_t fi, uint64_t i, uint64_t slot)
{
    subf *s = &c->f[fi];
    uint32_t fp = slot_get(c, s, slot), j;
    uint64_t h2;
    int64_t to;

    if (fp == 0)
        return 1;
    h2 = alt_hash(fp, i);
    for (j = c->full_links; j < fi; j++) {
        to = find_available(c, &c->f[j], i, h2);
        if (to >= 0) {
            slot_set(c, &c->f[j], (uint64_t)to, fp);
            slot_set(c, s, slot, 0);
            emptied(c, fi);
            return 1;
        }
    }
    return 0;
}

/*
 * The same walk for a chain whose links all have the same bucket
 * count (expansion 1), where a long chain made the scan of every earlier
 * link per slot quadratic.  room.first[b] is the first link
 * that may still have room in bucket b and room.pos[b] the first slot of
 * that bucket that may be empty: during a compaction room only disappears
 * from the links moved into (the slots emptied belong to the one
 * being compacted, never a target again), so both only move forward and a
 * whole compaction reads each slot of the chain about once, each bucket
 * passed over charged to the budget.  The fingerprint lands where
 * relocate() would put it: the oldest link with room in bucket i or,
 * failing that, in its alternate bucket.
 */
typedef struct room {
    uint16_t *first; /* nb0 entries; link indexes fit (at most 65535) */
    uint8_t *pos;    /* nb0 entries; bucket sizes are at most 255 */
} room;

/* The first empty slot of bucket b in links below limit; -1 none, -2 the
 * budget ran out on the way (a room found without a step needs none). */
static int64_t room_in(const amq_scuckoo *c, room *r, uint64_t b, uint32_t limit, uint32_t *at,
                       uint64_t *budget)
{
    uint32_t j = r->first[b], k = r->pos[b], bs = c->bucket_size;
    int64_t to = -1;
    int out = 0;

    if (j < c->full_links) { /* full links are never searched */
        j = c->full_links;
        k = 0;
    }
    for (; j < limit; j++, k = 0) {
        const subf *s = &c->f[j];
        if (c->fingerprint_bits == 8) {
            const uint8_t *p = s->data + b * bs;
            const uint8_t *q = memchr(p + k, 0, bs - k);
            if (q != NULL) {
                k = (uint32_t)(q - p);
                break;
            }
        } else {
            for (; k < bs && slot_get(c, s, b * bs + k) != 0; k++)
                ;
            if (k < bs)
                break;
        }
        /* the slots read, past pos[b]: link j's bucket b was read full */
        if (!spend(budget, bs - k)) {
            j++;
            k = 0;
            out = 1;
            break;
        }
    }
    r->first[b] = (uint16_t)j;
    r->pos[b] = (uint8_t)(j < limit ? k : 0);
    *at = j;
    if (out)
        to = -2;
    else if (j < limit)
        to = (int64_t)(b * bs + k);
    return to;
}

static int relocate_flat(amq_scuckoo *c, room *r, uint32_t fi, uint64_t i, uint64_t slot,
                         uint64_t *budget)
{
    subf *s = &c->f[fi];
    uint32_t fp = slot_get(c, s, slot), j1, j2;
    uint64_t i2;
    int64_t to1, to2;

    if (fp == 0)
        return 1;
    i2 = alt_hash(fp, i) & (sub_nb(s) - 1);
    to1 = room_in(c, r, i, fi, &j1, budget);
    if (i2 == i) {
        to2 = -1;
        j2 = j1;
    } else {
        to2 = room_in(c, r, i2, fi, &j2, budget);
    }
    if (to1 == -2 || to2 == -2) /* a search cut short: the oldest room is not known */
        return 0;
    if (to1 >= 0 && (to2 < 0 || j1 <= j2))
        slot_set(c, &c->f[j1], (uint64_t)to1, fp);
    else if (to2 >= 0)
        slot_set(c, &c->f[j2], (uint64_t)to2, fp);
    else
        return 0;
    slot_set(c, s, slot, 0);
    emptied(c, fi);
    return 1;
}

/* 1 when no slot of link fi holds a fingerprint. */
static int subf_empty(const amq_scuckoo *c, uint32_t fi)
{
    const uint8_t *d = c->f[fi].data;
    size_t n = (size_t)amq_sc_sub_bytes(c, sub_nb(&c->f[fi]));
    return n == 0 || (d[0] == 0 && memcmp(d, d + 1, n - 1) == 0);
}

/* The first empty slot of link j, or its slot count when none is. */
static uint64_t first_empty(const amq_scuckoo *c, uint32_t j)
{
    const subf *s = &c->f[j];
    uint64_t slots = sub_nb(s) * c->bucket_size, k;
    if (c->fingerprint_bits == 8) {
        const uint8_t *q = memchr(s->data, 0, (size_t)slots);
        return q == NULL ? slots : (uint64_t)(q - s->data);
    }
    for (k = 0; k < slots && slot_get(c, s, k) != 0; k++)
        ;
    return k;
}

/* Some link below fi may take a fingerprint: 1; none can: 0; the budget
 * ran out first: -1.  Moves full_links past the links found full, each
 * charged its slots (progress kept across calls: a chain full up to deep
 * links is passed over once, however long); the link found with room is
 * the one read the budget does not count, so that what is left of it goes
 * to moving fingerprints. */
static int room_below(amq_scuckoo *c, uint32_t fi, uint64_t *budget)
{
    while (c->full_links < fi) {
        uint32_t j = c->full_links;
        uint64_t slots = sub_nb(&c->f[j]) * c->bucket_size;
        if (*budget == 0)
            return -1;
        if (first_empty(c, j) < slots)
            return 1;
        spend(budget, slots);
        c->full_links = (uint16_t)(j + 1);
    }
    return 0;
}

/* A call's work: its budget of slot visits, and whether it has compacted a
 * bucket yet (the first bucket of a call is compacted whatever it costs, so
 * that every call moves the pass on). */
typedef struct work {
    uint64_t budget;
    int fresh;
} work;

/* Link fi's fingerprints from bucket `from` on moved to earlier links: 1 all
 * of the link's (it is dropped when it is the last), 0 some stayed, -1 none
 * can move, here or in any earlier link (no room below fi), -2 the budget
 * ran out: the pass goes on from bucket *stop next time. */
static int compact_one(amq_scuckoo *c, uint32_t fi, uint64_t from, room *r, work *w, uint64_t *stop)
{
    uint64_t i, nb = sub_nb(&c->f[fi]), cost;
    uint32_t k, bs = c->bucket_size;
    int ok = 1, rc;

    rc = room_below(c, fi, &w->budget);
    if (rc < 0) {
        *stop = from;
        return -2;
    }
    if (rc == 0) {
        if (fi + 1u == c->nf && subf_empty(c, fi)) {
            amq_sc_pop_subf(c);
            return 1;
        }
        return -1;
    }
    cost = (r != NULL ? 1 : (uint64_t)(fi - c->full_links) + 1) * bs;
    for (i = from; i < nb; i++) {
        if (!spend(&w->budget, cost) && !w->fresh) {
            *stop = i;
            return -2;
        }
        w->fresh = 0;
        for (k = 0; k < bs; k++)
            if (!(r != NULL ? relocate_flat(c, r, fi, i, i * bs + k, &w->budget)
                            : relocate(c, fi, i, i * bs + k)))
                ok = 0;
        if (w->budget == 0 && i + 1 < nb) { /* a bucket cut short stays for the next pass */
            *stop = i + 1;
            return -2;
        }
    }
    if (ok && from > 0) /* buckets an earlier call compacted may have kept some */
        ok = subf_empty(c, fi);
    if (ok && fi + 1u == c->nf)
        amq_sc_pop_subf(c);
    return ok;
}

/* Chains at least this long with one bucket count compact with a room
 * (3 bytes per bucket of one link: at most 3/16 of the chain). */
#define FLAT_COMPACT_MIN 16u
/* ... and links of at most this many buckets: each call allocates and
 * zeroes its scratch (12 MiB here), memory the budget does not bound;
 * beyond, the plain walk, whose cost per slot the budget counts. */
#define FLAT_COMPACT_MAX_BUCKETS (UINT64_C(1) << 22)

void amq_scuckoo_compact(amq_scuckoo *c, int cont)
{
    work w = {AMQ_SCUCKOO_COMPACT_WORK, 1};
    room r, *rp = NULL;
    uint8_t *scratch = NULL;
    size_t bytes = 0;
    uint64_t at = 0, stop = 0;
    uint32_t j = c->nf;
    int rc;

    /* Expansion 1 (0 allows a single link): every link has nb0
     * buckets.  Without the scratch (no memory) the plain walk gives the
     * same result, slower. */
    if (c->exp_log == 1 && c->nf >= FLAT_COMPACT_MIN && nb0_of(c) <= FLAT_COMPACT_MAX_BUCKETS) {
        bytes = (size_t)nb0_of(c) * 3;
        scratch = amq_calloc(c->alloc, bytes);
        if (scratch != NULL) {
            r.first = (uint16_t *)(void *)scratch;
            r.pos = scratch + (size_t)nb0_of(c) * 2;
            rp = &r;
        }
    }
    /* A pass the last call left goes on where it stopped: links above
     * pass_link were compacted in it, and its buckets below pass_at. */
    if (c->f[0].pass_link != 0 && c->f[0].pass_link < c->nf &&
        c->f[0].pass_at < sub_nb(&c->f[c->f[0].pass_link])) {
        j = c->f[0].pass_link + 1u;
        at = c->f[0].pass_at;
    }
    pass_reset(c);
    for (; j > 1; j--, at = 0) {
        rc = compact_one(c, j - 1, at, rp, &w, &stop);
        if (rc == -2 || (w.budget == 0 && j > 2 && (rc == 1 || (rc == 0 && cont)))) {
            /* out of budget: the pass goes on at the next call */
            c->f[0].pass_link = (uint16_t)(rc == -2 ? j - 1 : j - 2);
            c->f[0].pass_at = (rc == -2 ? stop : 0) & ((UINT64_C(1) << 42) - 1u);
            break;
        }
        if (rc == -1 || (rc == 0 && !cont))
            break;
    }
    amq_free(c->alloc, scratch, bytes);
    c->deletes = 0;
}

int amq_scuckoo_remove_hash(amq_scuckoo *c, amq_hash128 h)
{
    lookup l = lookup_of(c, h);
    uint32_t j;
    int64_t slot;

    for (j = c->nf; j > 0; j--) {
        subf *s = &c->f[j - 1];
        slot = bucket_find(c, s, l.h1 & (sub_nb(s) - 1), l.fp);
        if (slot < 0)
            slot = bucket_find(c, s, l.h2 & (sub_nb(s) - 1), l.fp);
        if (slot < 0)
            continue;
        slot_set(c, s, (uint64_t)slot, 0);
        emptied(c, j - 1);
        c->items -= c->items > 0; /* loaded data may disagree: never wrap */
        c->deletes++;
        if (c->nf > 1 && (double)c->deletes > (double)c->items * 0.10)
            amq_scuckoo_compact(c, 0);
        return 1;
    }
    return 0;
}

int amq_scuckoo_remove(amq_scuckoo *c, const void *key, size_t len)
{
    return amq_scuckoo_remove_hash(c, amq_scuckoo_hash(c, key, len));
}

/* ---- information ---------------------------------------------------------------------------- */

void amq_scuckoo_get_info(const amq_scuckoo *c, amq_scuckoo_info *out)
{
    uint32_t j;

    memset(out, 0, sizeof *out);
    out->num_buckets = nb0_of(c);
    out->links = c->nf;
    out->items = c->items;
    out->deletes = c->deletes;
    out->bucket_size = c->bucket_size;
    out->max_kicks = c->max_iterations;
    out->expansion = sc_expansion(c);
    out->max_links = c->max_filters;
    out->fingerprint_bits = c->fingerprint_bits;
    out->redisbloom = c->redisbloom;
    if (uniform(c)) { /* O(1) for a long chain, as locate() */
        out->slots = c->nf * sub_nb(&c->f[0]) * c->bucket_size;
        out->bytes = c->nf * amq_sc_sub_bytes(c, sub_nb(&c->f[0]));
    } else {
        for (j = 0; j < c->nf; j++) {
            out->slots += sub_nb(&c->f[j]) * c->bucket_size;
            out->bytes += amq_sc_sub_bytes(c, sub_nb(&c->f[j]));
        }
    }
    out->info_bytes = 40 + 16 * (uint64_t)c->nf + out->slots;
}

void amq_scuckoo_get_params(const amq_scuckoo *c, amq_scuckoo_params *out)
{
    memset(out, 0, sizeof *out);
    out->capacity = c->capacity;
    out->bucket_size = c->bucket_size;
    out->max_kicks = c->max_iterations;
    out->expansion = sc_expansion(c);
    out->max_links = c->max_filters;
    out->fingerprint_bits = c->fingerprint_bits;
    out->redisbloom = c->redisbloom;
    out->hash_algo = c->hash_algo;
    out->seed = c->seed;
}

int amq_scuckoo_link(const amq_scuckoo *c, uint32_t i, uint64_t *buckets,
                          const uint8_t **data, size_t *bytes)
{
    if (i >= c->nf)
        return AMQ_ERANGE;
    if (buckets != NULL)
        *buckets = sub_nb(&c->f[i]);
    if (data != NULL)
        *data = c->f[i].data;
    if (bytes != NULL)
        *bytes = (size_t)amq_sc_sub_bytes(c, sub_nb(&c->f[i]));
    return AMQ_OK;
}

int amq_scuckoo_link_data_mut(amq_scuckoo *c, uint32_t i, uint8_t **data, size_t *bytes)
{
    if (i >= c->nf)
        return AMQ_ERANGE;
    *data = c->f[i].data;
    *bytes = (size_t)amq_sc_sub_bytes(c, sub_nb(&c->f[i]));
    c->full_links = 0; /* the caller may empty any slot */
    pass_reset(c);
    return AMQ_OK;
}

int amq_scuckoo_set_max_links(amq_scuckoo *c, uint32_t max_filters)
{
    if (max_filters == 0)
        return AMQ_ERANGE;
    c->max_filters = max_filters;
    return AMQ_OK;
}

uint64_t amq_sc_count_used(const amq_scuckoo *c)
{
    uint64_t n = 0;
    uint32_t j;
    for (j = 0; j < c->nf; j++)
        n += ct_count_used(c->f[j].data, c->fingerprint_bits,
                           sub_nb(&c->f[j]) * c->bucket_size);
    return n;
}

int amq_scuckoo_check(const amq_scuckoo *c)
{
    return amq_sc_count_used(c) == c->items ? AMQ_OK : AMQ_ECORRUPT;
}

void amq_scuckoo_set_counts(amq_scuckoo *c, uint64_t items, uint64_t deletes)
{
    c->items = items;
    c->deletes = deletes;
}

/* ---- raw construction and the RedisBloom dump format ---------------------------------------- */

/* from_header with, when tables is given, every table taken (adopted on
 * AMQ_OK, freed through alloc on an error; table_bytes[j] its size). */
static int from_header(const amq_scuckoo_header *h, const uint64_t *sub_buckets, void **tables,
                       const size_t *table_bytes, const amq_allocator *alloc, amq_scuckoo **out)
{
    amq_scuckoo_params p;
    amq_scuckoo *c = NULL;
    uint64_t slots, j = 0, nb;
    uint32_t exp;
    int rc = AMQ_ECORRUPT;

    *out = NULL;
    if (amq_sc_check_scalars(h->bucket_size, h->max_kicks, h->expansion) != AMQ_OK)
        goto fail;
    /* The chain grows by the power of two at or above the expansion asked
     * for; a header holding the unrounded value describes the same chain. */
    exp = h->expansion == 0 ? 0 : (uint32_t)next_pow2(h->expansion);
    if (amq_sc_check_chain(h->bucket_size, exp, h->num_buckets, h->links, &slots) != AMQ_OK)
        goto fail;
    if (h->num_items > slots)
        goto fail;
    for (j = 0, nb = h->num_buckets; j < h->links; j++) {
        if (j > 0)
            nb *= exp;
        if ((sub_buckets != NULL && sub_buckets[j] != nb) ||
            (tables != NULL && table_bytes[j] != nb * h->bucket_size))
            goto fail;
    }
    amq_scuckoo_params_init(&p, 1);
    p.capacity = h->num_buckets * h->bucket_size;
    p.bucket_size = h->bucket_size;
    p.max_kicks = h->max_kicks;
    p.expansion = exp;
    p.max_links = h->links > DEFAULT_MAX_FILTERS ? (uint32_t)h->links
                                                          : DEFAULT_MAX_FILTERS;
    j = 0;
    rc = AMQ_ENOMEM;
    c = amq_sc_shell(&p, alloc);
    if (c == NULL)
        goto fail;
    rc = amq_sc_build_chain(c, h->num_buckets, h->links, tables);
    if (rc != AMQ_OK)
        goto fail;
    c->items = h->num_items;
    c->deletes = h->num_deletes;
    *out = c;
    return AMQ_OK;

fail:
    if (tables != NULL) {
        amq_allocator a;
        amq_alloc_init(&a, alloc);
        /* The ones the chain holds go with it. */
        for (j = c != NULL ? c->nf : 0; j < h->links; j++)
            amq_free(&a, tables[j], table_bytes[j]);
    }
    amq_scuckoo_free(c);
    return rc;
}

/* ---- a header's chain, before it is built ----------------------------------------------- */

/* The expansion the chain grows by: the power of two at or above the one
 * asked for (0: no growth). */
static uint64_t header_growth(const amq_scuckoo_header *h)
{
    return h->expansion == 0 ? 0 : next_pow2(h->expansion);
}

uint64_t amq_scuckoo_header_buckets(const amq_scuckoo_header *h, uint64_t j)
{
    uint64_t nb = h->num_buckets, exp = header_growth(h), i;

    if (j >= h->links || (j > 0 && exp == 0))
        return 0;
    for (i = 0; i < j && exp > 1; i++) {
        if (nb > UINT64_MAX / exp)
            return 0;
        nb *= exp;
    }
    return nb;
}

uint64_t amq_scuckoo_header_bytes(const amq_scuckoo_header *h)
{
    const uint64_t lim = UINT64_MAX / 2;
    uint64_t nb = h->num_buckets, total = 0, exp = header_growth(h), j;

    for (j = 0; j < h->links && j <= AMQ_SCUCKOO_MAX_LINKS; j++) {
        if (j > 0)
            nb = (exp != 0 && nb <= lim / exp) ? nb * exp : lim;
        total += nb <= lim / (h->bucket_size + 1u) ? nb * h->bucket_size : lim;
        if (total >= lim)
            return lim;
    }
    return total;
}

int amq_scuckoo_at_limit(const amq_scuckoo *c, uint64_t max_filters)
{
    return c->nf >= max_filters;
}

int amq_scuckoo_from_header(const amq_scuckoo_header *h, const uint64_t *sub_buckets,
                            const amq_allocator *alloc, amq_scuckoo **out)
{
    return from_header(h, sub_buckets, NULL, NULL, alloc, out);
}

int amq_scuckoo_from_header_owning(const amq_scuckoo_header *h, void **tables,
                                   const size_t *table_bytes, const amq_allocator *alloc,
                                   amq_scuckoo **out)
{
    return from_header(h, NULL, tables, table_bytes, alloc, out);
}

int amq_scuckoo_header_serialize(const amq_scuckoo *c, uint8_t *buf, size_t cap)
{
    if (!c->redisbloom)
        return AMQ_EUNSUPPORTED;
    if (cap < AMQ_SCUCKOO_HEADER_SIZE)
        return AMQ_EINVAL;
    amq_store64(buf, c->items);
    amq_store64(buf + 8, nb0_of(c));
    amq_store64(buf + 16, c->deletes);
    amq_store64(buf + 24, c->nf);
    amq_store16(buf + 32, (uint16_t)c->bucket_size);
    amq_store16(buf + 34, (uint16_t)c->max_iterations);
    amq_store16(buf + 36, (uint16_t)sc_expansion(c));
    return AMQ_OK;
}

int amq_scuckoo_header_decode(const uint8_t *buf, size_t len, amq_scuckoo_header *h)
{
    memset(h, 0, sizeof *h);
    if (len < AMQ_SCUCKOO_HEADER_SIZE)
        return AMQ_ETRUNC;
    if (len != AMQ_SCUCKOO_HEADER_SIZE)
        return AMQ_ECORRUPT;
    h->num_items = amq_load64(buf);
    h->num_buckets = amq_load64(buf + 8);
    h->num_deletes = amq_load64(buf + 16);
    h->links = amq_load64(buf + 24);
    h->bucket_size = amq_load16(buf + 32);
    h->max_kicks = amq_load16(buf + 34);
    h->expansion = amq_load16(buf + 36);
    return AMQ_OK;
}

/*
 * Offsets into the concatenated arrays (SCANDUMP / LOADCHUNK iterators).
 * A chain growing by 1 (the long ones: up to 65,535 links) has every
 * link the first's size, so an offset is a division away; otherwise
 * sizes at least double from one link to the next and a walk ends
 * within 64 steps.  Either way a chunk costs O(1) in the chain's length.
 * (uniform() is defined with nb0_of.)
 */
/* The link holding byte offset off of the concatenated arrays, and
 * the offset within it; -1 past the end. */
static int64_t locate(const amq_scuckoo *c, uint64_t off, uint64_t *within)
{
    uint32_t j;
    uint64_t size;

    if (uniform(c)) {
        size = amq_sc_sub_bytes(c, sub_nb(&c->f[0]));
        if (size == 0 || off / size >= c->nf)
            return -1;
        *within = off % size;
        return (int64_t)(off / size);
    }
    for (j = 0; j < c->nf; j++) {
        size = amq_sc_sub_bytes(c, sub_nb(&c->f[j]));
        if (off < size) {
            *within = off;
            return j;
        }
        off -= size;
    }
    return -1;
}

int amq_scuckoo_locate(const amq_scuckoo *c, uint64_t off, uint32_t *i, uint64_t *within)
{
    uint64_t w = 0;
    int64_t j = locate(c, off, &w);
    *i = 0;
    *within = 0;
    if (j < 0)
        return AMQ_ERANGE;
    *i = (uint32_t)j;
    *within = w;
    return AMQ_OK;
}

int amq_scuckoo_chunk(const amq_scuckoo *c, uint64_t it, size_t max_chunk,
                      const uint8_t **data, size_t *len, uint64_t *next)
{
    uint64_t within, rest;
    int64_t j;

    *data = NULL;
    *len = 0;
    *next = 0;
    if (it == 0)
        return AMQ_ERANGE;
    if (max_chunk == 0)
        max_chunk = AMQ_SCUCKOO_MAX_CHUNK;
    j = locate(c, it - 1, &within);
    if (j < 0)
        return AMQ_OK;
    rest = amq_sc_sub_bytes(c, sub_nb(&c->f[j])) - within;
    *len = rest < max_chunk ? (size_t)rest : max_chunk;
    *data = c->f[j].data + within;
    *next = it + *len;
    return AMQ_OK;
}

int amq_scuckoo_chunk_apply(amq_scuckoo *c, uint64_t it, const uint8_t *buf, size_t len)
{
    uint64_t within, total;
    int64_t j;

    if (it <= (uint64_t)len || len == 0)
        return AMQ_ERANGE;
    j = locate(c, it - len - 1, &within);
    if (j < 0) {
        /* RedisBloom's rule: a chunk past the end of the chain lands in the
         * last link, at its offset less the chain's size. */
        amq_scuckoo_info in;
        amq_scuckoo_get_info(c, &in); /* O(1) in the chain's length */
        total = in.bytes;
        j = c->nf - 1;
        within = it - len - 1 - total;
        if (it - len - 1 < total || within > amq_sc_sub_bytes(c, sub_nb(&c->f[j])))
            return AMQ_ERANGE;
    }
    if (len > amq_sc_sub_bytes(c, sub_nb(&c->f[j])) - within)
        return AMQ_EOVERFLOW;
    memcpy(c->f[j].data + within, buf, len);
    emptied(c, (uint32_t)j);
    pass_reset(c);
    /* Packed native slots: keep the bits past the last slot zero. */
    if ((sub_nb(&c->f[j]) * c->bucket_size * c->fingerprint_bits) % 8 != 0) {
        uint64_t last = amq_sc_sub_bytes(c, sub_nb(&c->f[j])) - 1;
        c->f[j].data[last] &=
            (uint8_t)((1u << ((sub_nb(&c->f[j]) * c->bucket_size * c->fingerprint_bits) % 8)) - 1);
    }
    return AMQ_OK;
}
