/*
 * scalable_bloom.c - the scalable Bloom filter (amq/scalable_bloom.h):
 * RedisBloom's BF, reimplemented from its documented behaviour, and a
 * native mode.
 *
 * bloom.c owns probing (amq_bloom_array_*, on a bare bit array); this file
 * owns the chain and its links' arrays: link sizing, growth, the add rule,
 * accounting and the RedisBloom dump format.  A key is hashed once and the
 * same amq_hash128 probes every link.
 */
#include <math.h>
#include <string.h>

#include "amq/bloom.h"
#include "amq/scalable_bloom.h"
#include "bloom_internal.h"
#include "common/alloc.h"
#include "common/checked.h"
#include "common/endian.h"
#include "common/error.h"
#include "kind.h"
#include "scalable_bloom_internal.h"

/* Link 0's bits are kept in the chain's block up to this size: beyond it a
 * separate block lets a large array come from fresh zero pages. */
#define SB_INLINE_MAX 4096u

#define RB_NEW_OPTIONS (AMQ_SBLOOM_NOROUND | AMQ_SBLOOM_FORCE64)

/* ---- links -------------------------------------------------------------------------- */

/* hashes <= AMQ_BLOOM_MAX_K_REDISBLOOM < 2^13, n2 <= 43 < 2^6, bits <= 2^43. */
static uint64_t geo_pack(uint64_t bits, uint32_t hashes, uint32_t n2)
{
    return bits << 19 | (uint64_t)n2 << 13 | hashes;
}

static inline uint32_t probe_of(const amq_sbloom *s)
{
    return s->redisbloom ? AMQ_BLOOM_PROBE_REDISBLOOM : AMQ_BLOOM_PROBE_NATIVE;
}

static inline uint8_t *inline_bits(const amq_sbloom *s)
{
    return (uint8_t *)(uintptr_t)(s + 1);
}

static void params_of(const amq_sbloom *s, amq_sbloom_params *p)
{
    memset(p, 0, sizeof *p);
    p->capacity = s->n > 0 ? clnk(s)[0].entries : 0;
    p->fpp = s->error;
    p->expansion = s->growth;
    p->options = s->options;
    p->redisbloom = s->redisbloom;
    p->hash_algo = s->hash_algo;
    p->seed = s->seed;
}

static uint64_t chain_items(const amq_sbloom *s)
{
    const sb_link *l = clnk(s);
    uint64_t sum = 0;
    uint32_t i;
    for (i = 0; i < s->n; i++)
        sum += l[i].items;
    return sum;
}

/* ---- sizing ------------------------------------------------------------------------ */

void amq_sbloom_params_init(amq_sbloom_params *p, int redisbloom)
{
    memset(p, 0, sizeof *p);
    p->capacity = 100;
    p->fpp = 0.01;
    p->expansion = 2;
    p->options = RB_NEW_OPTIONS;
    p->redisbloom = redisbloom != 0;
    p->hash_algo = redisbloom ? AMQ_HASH_REDISBLOOM : AMQ_HASH_XXH3;
}

int amq_sbloom_link_info_for(uint64_t entries, double error, uint32_t options,
                           amq_sbloom_link_info *out)
{
    double bpe, bits, hashes;
    uint64_t b;

    memset(out, 0, sizeof *out);
    if (entries == 0 || !(error > 0.0 && error < 1.0) || (options & AMQ_SBLOOM_ENTS_IS_BITS) ||
        !(options & AMQ_SBLOOM_NOROUND))
        return AMQ_ERANGE;
    bpe = -log(error) / AMQ_SBLOOM_LN2_SQUARED;
    bits = floor((double)entries * bpe);
    if (bits < 1.0)
        bits = 1.0;
    if (!(bits <= (double)AMQ_BLOOM_MAX_BITS))
        return AMQ_ELIMIT;
    b = ((uint64_t)bits + 63) / 64 * 64;
    hashes = ceil(AMQ_SBLOOM_LN2 * bpe);
    if (b > AMQ_BLOOM_MAX_BITS || hashes > (double)AMQ_BLOOM_MAX_K_REDISBLOOM)
        return AMQ_ELIMIT;
    out->entries = entries;
    out->fpp = error;
    out->bpe = bpe;
    out->bits = b;
    out->bytes = b / 8;
    out->hashes = hashes < 1.0 ? 1u : (uint32_t)hashes;
    out->n2 = 0;
    return AMQ_OK;
}

/* ---- life cycle -------------------------------------------------------------------- */

/* The chain's block, with room for inline_bytes of link 0's bits. */
static amq_sbloom *shell(const amq_sbloom_params *p, const amq_allocator *alloc,
                         size_t inline_bytes)
{
    amq_allocator a;
    amq_sbloom *s;

    amq_alloc_init(&a, alloc);
    s = amq_calloc(&a, sizeof *s + inline_bytes);
    if (s == NULL)
        return NULL;
    s->alloc = a;
    s->error = p->fpp;
    s->seed = p->seed;
    s->growth = p->expansion;
    s->options = (uint16_t)p->options;
    s->redisbloom = (uint8_t)(p->redisbloom != 0);
    s->hash_algo = (uint8_t)p->hash_algo;
    return s;
}

/* Bytes of link 0 held in the chain's block (0: none). */
static size_t inline_size(const amq_sbloom *s)
{
    const sb_link *l = clnk(s);
    return s->n > 0 && l[0].data == inline_bits(s) ? bytes_of(l_bits(&l[0])) : 0;
}

/* Room for want links. */
static int reserve_links(amq_sbloom *s, uint32_t want)
{
    uint32_t ncap;
    sb_link *nl;

    if (s->cap == 0)
        s->cap = 1; /* u.one */
    if (want <= s->cap)
        return AMQ_OK;
    /* One entry at a time while chains are short (what a host such as
     * Redis counts per key), doubling beyond. */
    ncap = want <= 32 ? want : s->cap * 2;
    if (ncap < want)
        ncap = want;
    nl = amq_calloc(&s->alloc, ncap * sizeof *nl);
    if (nl == NULL)
        return AMQ_ENOMEM;
    if (s->n > 0)
        memcpy(nl, lnk(s), s->n * sizeof *nl);
    if (s->cap > 1)
        amq_free(&s->alloc, s->u.many, s->cap * sizeof *nl);
    s->u.many = nl;
    s->cap = ncap;
    return AMQ_OK;
}

/* Appends a link with explicit geometry: zeroed (inline in the chain's
 * block when it is link 0 and the block has room), or adopting data (a
 * block of bytes_of(bits) from the filter's allocator; still the caller's
 * on an error). */
static int push_link(amq_sbloom *s, uint64_t entries, double error, double bpe, uint64_t bits,
                     uint32_t hashes, uint32_t n2, void *data, size_t room)
{
    size_t bytes = bytes_of(bits);
    uint8_t *d = data;
    sb_link *l;
    int rc;

    rc = reserve_links(s, s->n + 1);
    if (rc != AMQ_OK)
        return rc;
    if (d == NULL && s->n == 0 && room >= bytes) {
        d = inline_bits(s);
    } else if (d == NULL) {
        rc = amq_block_alloc(&s->alloc, bytes, &d);
        if (rc != AMQ_OK)
            return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
    }
    l = &lnk(s)[s->n];
    l->data = d;
    l->geo = geo_pack(bits, hashes, n2);
    l->entries = entries;
    l->items = 0;
    l->error = error;
    l->bpe = bpe;
    s->n++;
    return AMQ_OK;
}

/* Releases link i's bits (not those in the chain's block). */
void amq_sb_drop_bits(amq_sbloom *s, uint32_t i)
{
    sb_link *l = &lnk(s)[i];
    if (l->data != inline_bits(s))
        amq_block_free(&s->alloc, l->data, bytes_of(l_bits(l)));
    l->data = NULL;
}

/* The geometry of a link for (entries, error) by the filter's mode. */
static int size_link(const amq_sbloom_params *p, uint64_t entries, double error,
                     amq_sbloom_link_info *li)
{
    uint64_t bits;
    uint32_t k;
    int rc;

    if (p->redisbloom)
        return amq_sbloom_link_info_for(entries, error, p->options, li);
    memset(li, 0, sizeof *li);
    rc = amq_bloom_bits_for(entries, error, &bits, &k);
    if (rc != AMQ_OK)
        return AMQ_ELIMIT;
    li->entries = entries;
    li->fpp = error;
    li->bpe = (double)bits / (double)entries;
    li->bits = bits;
    li->bytes = bytes_of(bits);
    li->hashes = k;
    return AMQ_OK;
}

static int check_params(const amq_sbloom_params *p)
{
    if (p->capacity == 0 || !(p->fpp > 0.0 && p->fpp < 1.0) ||
        (p->options & ~AMQ_SBLOOM_OPTIONS_MASK) != 0 || (p->options & AMQ_SBLOOM_ENTS_IS_BITS) ||
        p->expansion > 32768 || (p->expansion == 0 && !(p->options & AMQ_SBLOOM_NO_SCALING)))
        return AMQ_ERANGE;
    if (p->redisbloom &&
        (p->options & RB_NEW_OPTIONS) != RB_NEW_OPTIONS)
        return AMQ_ERANGE;
    return amq_hash_check(p->hash_algo, p->seed);
}

int amq_sbloom_new(const amq_sbloom_params *params, const amq_allocator *alloc,
                   amq_sbloom **out)
{
    amq_sbloom_params p = *params;
    amq_sbloom_link_info li;
    amq_sbloom *s;
    size_t room;
    double e0;
    int rc;

    *out = NULL;
    if (p.redisbloom) {
        p.hash_algo = AMQ_HASH_REDISBLOOM;
        p.seed = 0;
    }
    rc = check_params(&p);
    if (rc != AMQ_OK)
        return rc;
    if (p.options & AMQ_SBLOOM_NO_SCALING)
        e0 = p.fpp;
    else
        e0 = p.redisbloom ? p.fpp * RB_TIGHTENING : p.fpp * (1.0 - NATIVE_TIGHTENING);
    rc = size_link(&p, p.capacity, e0, &li);
    if (rc != AMQ_OK)
        return rc;
    room = li.bytes <= SB_INLINE_MAX ? (size_t)li.bytes : 0;
    s = shell(&p, alloc, room);
    if (s == NULL)
        return AMQ_ENOMEM;
    rc = push_link(s, li.entries, li.fpp, li.bpe, li.bits, li.hashes, 0, NULL, room);
    if (rc != AMQ_OK) {
        amq_sbloom_free(s);
        return rc;
    }
    *out = s;
    return AMQ_OK;
}

/* Room to reserve in a new chain's block for link 0 of `bits` bits. */
static size_t room_for(uint64_t bits)
{
    return bytes_of(bits) <= SB_INLINE_MAX ? bytes_of(bits) : 0;
}

int amq_sbloom_clone(const amq_sbloom *src, const amq_allocator *alloc, amq_sbloom **out)
{
    amq_sbloom_params p;
    const sb_link *from = clnk(src);
    amq_sbloom *s;
    size_t room;
    uint32_t i;
    int rc;

    *out = NULL;
    params_of(src, &p);
    room = room_for(l_bits(&from[0]));
    s = shell(&p, alloc, room);
    if (s == NULL)
        return AMQ_ENOMEM;
    rc = AMQ_OK;
    for (i = 0; rc == AMQ_OK && i < src->n; i++) {
        if (i == 1) /* after link 0, as build_raw */
            rc = reserve_links(s, src->n);
        if (rc == AMQ_OK)
            rc = push_link(s, from[i].entries, from[i].error, from[i].bpe, l_bits(&from[i]),
                           l_hashes(&from[i]), l_n2(&from[i]), NULL, room);
        if (rc == AMQ_OK) {
            lnk(s)[i].items = from[i].items;
            memcpy(lnk(s)[i].data, from[i].data, bytes_of(l_bits(&from[i])));
        }
    }
    if (rc != AMQ_OK) {
        amq_sbloom_free(s);
        return rc;
    }
    *out = s;
    return AMQ_OK;
}

void amq_sbloom_free(amq_sbloom *s)
{
    amq_allocator a;
    size_t room;
    uint32_t i;
    if (s == NULL)
        return;
    a = s->alloc;
    room = inline_size(s);
    for (i = 0; i < s->n; i++)
        amq_sb_drop_bits(s, i);
    if (s->cap > 1)
        amq_free(&a, s->u.many, s->cap * sizeof *s->u.many);
    amq_free(&a, s, sizeof *s + room);
}

/* ---- operations ---------------------------------------------------------------------- */

amq_hash128 amq_sbloom_hash(const amq_sbloom *s, const void *key, size_t len)
{
    return amq_hash_key(s->hash_algo, s->seed, key, len);
}

static int grow(amq_sbloom *s)
{
    amq_sbloom_params p;
    amq_sbloom_link_info li;
    const sb_link *last = &clnk(s)[s->n - 1];
    double error = last->error * amq_sb_tightening(s);
    int rc;

    if (s->n >= AMQ_SBLOOM_MAX_LINKS || last->entries > UINT64_MAX / s->growth ||
        !(error > 0.0))
        return AMQ_ELIMIT;
    params_of(s, &p);
    rc = size_link(&p, last->entries * s->growth, error, &li);
    if (rc == AMQ_OK)
        rc = push_link(s, li.entries, li.fpp, li.bpe, li.bits, li.hashes, 0, NULL, 0);
    return rc == AMQ_ERANGE ? AMQ_ELIMIT : rc;
}

static inline int link_test(const sb_link *l, uint32_t probe, amq_hash128 h)
{
    return amq_bloom_array_test(l->data, l_bits(l), l_hashes(l), probe, h);
}

int amq_sbloom_add_hash(amq_sbloom *s, amq_hash128 h)
{
    uint32_t i, probe = probe_of(s);
    const sb_link *l = clnk(s);
    sb_link *last;
    int rc;

    for (i = s->n; i > 0; i--)
        if (link_test(&l[i - 1], probe, h))
            return 0;
    last = &lnk(s)[s->n - 1];
    if (last->items >= last->entries) {
        if (s->options & AMQ_SBLOOM_NO_SCALING)
            return AMQ_EFULL;
        rc = grow(s);
        if (rc != AMQ_OK)
            return rc;
        last = &lnk(s)[s->n - 1];
    }
    rc = amq_bloom_array_set(last->data, l_bits(last), l_hashes(last), probe, h);
    if (rc == 1)
        last->items++;
    return rc;
}

int amq_sbloom_add(amq_sbloom *s, const void *key, size_t len)
{
    return amq_sbloom_add_hash(s, amq_sbloom_hash(s, key, len));
}

int amq_sbloom_contains_hash(const amq_sbloom *s, amq_hash128 h)
{
    uint32_t i, probe = probe_of(s);
    const sb_link *l = clnk(s);
    for (i = s->n; i > 0; i--)
        if (link_test(&l[i - 1], probe, h))
            return 1;
    return 0;
}

int amq_sbloom_contains(const amq_sbloom *s, const void *key, size_t len)
{
    return amq_sbloom_contains_hash(s, amq_sbloom_hash(s, key, len));
}

/* ---- information ----------------------------------------------------------------------- */

void amq_sb_link_info(const sb_link *l, amq_sbloom_link_info *out)
{
    out->entries = l->entries;
    out->fpp = l->error;
    out->bpe = l->bpe;
    out->bits = l_bits(l);
    out->bytes = bytes_of(l_bits(l));
    out->hashes = l_hashes(l);
    out->n2 = l_n2(l);
    out->items = l->items;
}

void amq_sbloom_get_info(const amq_sbloom *s, amq_sbloom_info *out)
{
    const sb_link *l = clnk(s);
    uint32_t i;

    memset(out, 0, sizeof *out);
    out->links = s->n;
    out->expansion = s->growth;
    out->options = s->options;
    out->redisbloom = s->redisbloom;
    for (i = 0; i < s->n; i++) {
        out->items += l[i].items;
        out->capacity += l[i].entries;
        out->bytes += bytes_of(l_bits(&l[i]));
    }
    out->info_bytes = 32 + 64 * (uint64_t)s->n + out->bytes;
}

void amq_sbloom_get_params(const amq_sbloom *s, amq_sbloom_params *out)
{
    params_of(s, out);
}

int amq_sbloom_link(const amq_sbloom *s, uint32_t i, amq_sbloom_link_info *out,
                    const uint8_t **data)
{
    if (i >= s->n)
        return AMQ_ERANGE;
    if (out != NULL)
        amq_sb_link_info(&clnk(s)[i], out);
    if (data != NULL)
        *data = clnk(s)[i].data;
    return AMQ_OK;
}

int amq_sbloom_link_data_mut(amq_sbloom *s, uint32_t i, uint8_t **data, size_t *len)
{
    if (i >= s->n)
        return AMQ_ERANGE;
    *data = lnk(s)[i].data;
    *len = bytes_of(l_bits(&lnk(s)[i]));
    return AMQ_OK;
}

/* ---- raw construction ---------------------------------------------------------------------- */

static int check_link(const amq_sbloom_link_info *li, int redisbloom)
{
    if (li->entries == 0 || !(li->fpp > 0.0 && li->fpp < 1.0) || !isfinite(li->bpe) ||
        !(li->bpe > 0.0) || li->hashes == 0 ||
        li->hashes > (redisbloom ? AMQ_BLOOM_MAX_K_REDISBLOOM : AMQ_BLOOM_MAX_K) ||
        li->bits == 0 || li->bits > AMQ_BLOOM_MAX_BITS || li->items > li->entries)
        return AMQ_ECORRUPT;
    if (redisbloom) {
        if (li->bits % 64 != 0 || li->bytes != li->bits / 8)
            return AMQ_ECORRUPT;
        if (li->n2 != 0 && (li->n2 > 43 || li->bits != (UINT64_C(1) << li->n2)))
            return AMQ_ECORRUPT;
    } else if (li->bytes != (li->bits + 63) / 64 * 8 || li->n2 != 0) {
        return AMQ_ECORRUPT;
    }
    return AMQ_OK;
}

/* Checks header and links; returns AMQ_OK, AMQ_ECORRUPT or AMQ_EUNSUPPORTED, saying in
 * err (may be NULL) which field or link is wrong. */
int amq_sb_check_raw(const amq_sbloom_header *h, const amq_sbloom_link_info *links, int redisbloom,
                     amq_errinfo *err)
{
    uint64_t sum = 0;
    uint32_t i;

    if (h->links == 0 || h->links > AMQ_SBLOOM_MAX_LINKS)
        return amq_err(err, AMQ_ECORRUPT, "scalable Bloom filter of %u links (1 to %u)", h->links,
                       AMQ_SBLOOM_MAX_LINKS);
    if ((h->options & ~AMQ_SBLOOM_OPTIONS_MASK) != 0 || h->expansion > 32768 ||
        (h->expansion == 0 && !(h->options & AMQ_SBLOOM_NO_SCALING)))
        return amq_err(err, AMQ_ECORRUPT, "invalid scalable Bloom options 0x%x, expansion %u",
                       h->options, h->expansion);
    if (redisbloom && !(h->options & AMQ_SBLOOM_FORCE64))
        return amq_err(err, AMQ_EUNSUPPORTED,
                       "RedisBloom scalable Bloom filter with 32-bit hashing (options 0x%x) is "
                       "not supported",
                       h->options);
    for (i = 0; i < h->links; i++) {
        const amq_sbloom_link_info *li = &links[i];
        if (check_link(li, redisbloom) != AMQ_OK)
            return amq_err(err, AMQ_ECORRUPT,
                           "invalid scalable Bloom link %u (%llu entries, rate %g, %g bits an "
                           "entry, %llu bits, %u hashes, %llu items)",
                           i, (unsigned long long)li->entries, li->fpp, li->bpe,
                           (unsigned long long)li->bits, li->hashes, (unsigned long long)li->items);
        if (li->items > UINT64_MAX - sum)
            return amq_err(err, AMQ_ECORRUPT, "scalable Bloom links' item counts overflow");
        sum += li->items;
    }
    if (sum != h->items)
        return amq_err(err, AMQ_ECORRUPT,
                       "scalable Bloom links hold %llu items, the filter records %llu",
                       (unsigned long long)sum, (unsigned long long)h->items);
    return AMQ_OK;
}

/* Frees arrays[from..n) (NULL entries skipped) through alloc. */
static void free_arrays(const amq_allocator *alloc, void **arrays,
                        const amq_sbloom_link_info *links, uint32_t from, uint32_t n)
{
    amq_allocator a;
    uint32_t i;
    if (arrays == NULL)
        return;
    amq_alloc_init(&a, alloc);
    for (i = from; i < n; i++)
        amq_free(&a, arrays[i], (size_t)links[i].bytes);
}

/* Builds the chain; links take arrays[i] when arrays is given (all of them
 * taken, freed on an error; copied when the allocator could not free them
 * as its own blocks). */
int amq_sb_build_raw(const amq_sbloom_header *h, const amq_sbloom_link_info *links,
                     void **arrays, const amq_sbloom_params *p, const amq_allocator *alloc,
                     amq_sbloom **out)
{
    size_t room = arrays == NULL ? room_for(links[0].bits) : 0, bytes;
    amq_sbloom *s;
    uint32_t i = 0;
    void *d;
    int rc = AMQ_OK, copy;

    s = shell(p, alloc, room);
    if (s == NULL) {
        free_arrays(alloc, arrays, links, 0, h->links);
        return AMQ_ENOMEM;
    }
    /* Link 0 first (it cannot fail in the block's room), so that a failure
     * later frees the block with the size it was taken with. */
    for (; rc == AMQ_OK && i < h->links; i++) {
        if (i == 1)
            rc = reserve_links(s, h->links);
        if (rc != AMQ_OK)
            break;
        d = arrays != NULL ? arrays[i] : NULL;
        bytes = (size_t)links[i].bytes;
        copy = d != NULL && !amq_block_adoptable(&s->alloc, bytes);
        rc = push_link(s, links[i].entries, links[i].fpp, links[i].bpe, links[i].bits,
                       links[i].hashes, links[i].n2, copy ? NULL : d, room);
        if (rc != AMQ_OK)
            break; /* arrays[i] was not taken */
        lnk(s)[i].items = links[i].items;
        if (copy) {
            memcpy(lnk(s)[i].data, d, bytes);
            amq_free(&s->alloc, d, bytes);
        }
    }
    if (rc != AMQ_OK) {
        free_arrays(alloc, arrays, links, i, h->links);
        amq_sbloom_free(s);
        return rc == AMQ_ERANGE ? AMQ_ECORRUPT : rc;
    }
    *out = s;
    return AMQ_OK;
}

/* The parameters a RedisBloom chain was created with, from its links. */
static void raw_params(const amq_sbloom_header *h, const amq_sbloom_link_info *links,
                       amq_sbloom_params *p)
{
    amq_sbloom_params_init(p, 1);
    p->capacity = links[0].entries;
    p->fpp = (h->options & AMQ_SBLOOM_NO_SCALING) ? links[0].fpp
                                                     : links[0].fpp / RB_TIGHTENING;
    if (!(p->fpp < 1.0))
        p->fpp = links[0].fpp;
    p->expansion = h->expansion;
    p->options = h->options;
}

int amq_sbloom_from_header(const amq_sbloom_header *h, const amq_sbloom_link_info *links,
                        const amq_allocator *alloc, amq_sbloom **out)
{
    amq_sbloom_params p;
    int rc;

    *out = NULL;
    rc = amq_sb_check_raw(h, links, 1, NULL);
    if (rc != AMQ_OK)
        return rc;
    raw_params(h, links, &p);
    return amq_sb_build_raw(h, links, NULL, &p, alloc, out);
}

/* ---- a classic filter's RedisBloom form ------------------------------------------------- */

int amq_sbloom_from_bloom_ok(const amq_bloom *b)
{
    amq_bloom_params p;
    amq_bloom_get_params(b, &p);
    /* the same probes over the same words: the bits carry over as they are */
    return p.hash_algo == AMQ_HASH_REDISBLOOM && p.probe == AMQ_BLOOM_PROBE_REDISBLOOM &&
           p.bits % 64 == 0 && p.k <= 255;
}

int amq_sbloom_from_bloom(const amq_bloom *b, const amq_allocator *alloc, amq_sbloom **out)
{
    amq_bloom_params p;
    amq_sbloom_header h;
    amq_sbloom_link_info link;
    amq_sbloom *s = NULL;
    uint8_t *data;
    size_t len;
    int rc;

    *out = NULL;
    if (!amq_sbloom_from_bloom_ok(b))
        return AMQ_EINCOMPAT;
    amq_bloom_get_params(b, &p);
    memset(&h, 0, sizeof h);
    memset(&link, 0, sizeof link);
    link.items = amq_bloom_items(b);
    link.entries = p.capacity > 0 ? p.capacity : (link.items > 0 ? link.items : 1);
    if (link.items > link.entries)
        link.entries = link.items;
    link.bits = p.bits;
    link.bytes = p.bits / 8;
    link.hashes = p.k;
    link.bpe = (double)p.bits / (double)link.entries;
    link.fpp = p.fpp > 0.0 && p.fpp < 1.0 ? p.fpp
                                            : amq_bloom_fpp_theory(p.bits, p.k, link.entries);
    if (!(link.fpp > 0.0 && link.fpp < 1.0))
        link.fpp = 0.5; /* a rate the header can hold; queries never read it */
    h.items = link.items;
    h.links = 1;
    h.options = AMQ_SBLOOM_NOROUND | AMQ_SBLOOM_FORCE64 | AMQ_SBLOOM_NO_SCALING;
    h.expansion = 2;
    rc = amq_sbloom_from_header(&h, &link, alloc, &s);
    if (rc == AMQ_OK)
        rc = amq_sbloom_link_data_mut(s, 0, &data, &len);
    if (rc == AMQ_OK && len != amq_bloom_data_size(&p))
        rc = AMQ_EINCOMPAT;
    if (rc != AMQ_OK) {
        amq_sbloom_free(s);
        return rc;
    }
    memcpy(data, amq_bloom_data(b), len);
    *out = s;
    return AMQ_OK;
}

int amq_sbloom_from_header_owning(const amq_sbloom_header *h, const amq_sbloom_link_info *links,
                               void **arrays, const amq_allocator *alloc, amq_sbloom **out)
{
    amq_sbloom_params p;
    int rc;

    *out = NULL;
    rc = amq_sb_check_raw(h, links, 1, NULL);
    if (rc != AMQ_OK) {
        free_arrays(alloc, arrays, links, 0, h->links <= AMQ_SBLOOM_MAX_LINKS ? h->links : 0);
        return rc;
    }
    raw_params(h, links, &p);
    return amq_sb_build_raw(h, links, arrays, &p, alloc, out);
}

/* ---- the RedisBloom dump format ---------------------------------------------------------------- */

size_t amq_sbloom_header_serialized_size(const amq_sbloom *s)
{
    return AMQ_SBLOOM_HEADER_FIXED + AMQ_SBLOOM_HEADER_LINK * (size_t)s->n;
}

int amq_sbloom_header_serialize(const amq_sbloom *s, uint8_t *buf, size_t cap)
{
    amq_sbloom_link_info li;
    uint8_t *p;
    uint32_t i;

    if (!s->redisbloom)
        return AMQ_EUNSUPPORTED;
    if (cap < amq_sbloom_header_serialized_size(s))
        return AMQ_EINVAL;
    amq_store64(buf, chain_items(s));
    amq_store32(buf + 8, s->n);
    amq_store32(buf + 12, s->options);
    amq_store32(buf + 16, s->growth);
    for (i = 0; i < s->n; i++) {
        p = buf + AMQ_SBLOOM_HEADER_FIXED + AMQ_SBLOOM_HEADER_LINK * (size_t)i;
        amq_sb_link_info(&clnk(s)[i], &li);
        amq_store64(p, li.bytes);
        amq_store64(p + 8, li.bits);
        amq_store64(p + 16, li.items);
        amq_storef64(p + 24, li.fpp);
        amq_storef64(p + 32, li.bpe);
        amq_store32(p + 40, li.hashes);
        amq_store64(p + 44, li.entries);
        p[52] = (uint8_t)li.n2;
    }
    return AMQ_OK;
}

int amq_sbloom_header_deserialize(const uint8_t *buf, size_t len, const amq_allocator *alloc,
                           amq_sbloom **out)
{
    amq_allocator a;
    amq_sbloom_header h;
    amq_sbloom_link_info *links;
    const uint8_t *p;
    size_t want, bytes;
    uint32_t i;
    int rc;

    *out = NULL;
    if (len < AMQ_SBLOOM_HEADER_FIXED)
        return AMQ_ETRUNC;
    h.items = amq_load64(buf);
    h.links = amq_load32(buf + 8);
    h.options = amq_load32(buf + 12);
    h.expansion = amq_load32(buf + 16);
    if (h.links == 0 || h.links > AMQ_SBLOOM_MAX_LINKS)
        return AMQ_ECORRUPT;
    want = AMQ_SBLOOM_HEADER_FIXED + AMQ_SBLOOM_HEADER_LINK * (size_t)h.links;
    if (len < want)
        return AMQ_ETRUNC;
    if (len != want)
        return AMQ_ECORRUPT;
    amq_alloc_init(&a, alloc);
    bytes = h.links * sizeof *links;
    links = amq_malloc(&a, bytes);
    if (links == NULL)
        return AMQ_ENOMEM;
    for (i = 0; i < h.links; i++) {
        p = buf + AMQ_SBLOOM_HEADER_FIXED + AMQ_SBLOOM_HEADER_LINK * (size_t)i;
        links[i].bytes = amq_load64(p);
        links[i].bits = amq_load64(p + 8);
        links[i].items = amq_load64(p + 16);
        links[i].fpp = amq_loadf64(p + 24);
        links[i].bpe = amq_loadf64(p + 32);
        links[i].hashes = amq_load32(p + 40);
        links[i].entries = amq_load64(p + 44);
        links[i].n2 = p[52];
    }
    rc = amq_sbloom_from_header(&h, links, alloc, out);
    amq_free(&a, links, bytes);
    return rc;
}

/* The link holding byte offset off of the concatenated arrays, or -1. */
static int64_t locate(const amq_sbloom *s, uint64_t off, uint64_t *within, uint64_t *size)
{
    amq_sbloom_link_info li;
    uint32_t i;
    for (i = 0; i < s->n; i++) {
        amq_sb_link_info(&clnk(s)[i], &li);
        if (off < li.bytes) {
            *within = off;
            *size = li.bytes;
            return i;
        }
        off -= li.bytes;
    }
    return -1;
}

int amq_sbloom_chunk(const amq_sbloom *s, uint64_t it, size_t max_chunk,
                     const uint8_t **data, size_t *len, uint64_t *next)
{
    uint64_t within, size, rest;
    int64_t i;

    *data = NULL;
    *len = 0;
    *next = 0;
    if (it == 0)
        return AMQ_ERANGE;
    if (max_chunk == 0)
        max_chunk = AMQ_SBLOOM_MAX_CHUNK;
    i = locate(s, it - 1, &within, &size);
    if (i < 0)
        return AMQ_OK;
    rest = size - within;
    *len = rest < max_chunk ? (size_t)rest : max_chunk;
    *data = clnk(s)[i].data + within;
    *next = it + *len;
    return AMQ_OK;
}

int amq_sbloom_chunk_apply(amq_sbloom *s, uint64_t it, const uint8_t *buf, size_t len)
{
    uint64_t within, size;
    int64_t i;
    uint8_t *d;

    if (it <= (uint64_t)len)
        return AMQ_ERANGE;
    i = locate(s, it - len - 1, &within, &size);
    if (i < 0)
        return AMQ_ERANGE;
    if (len > size - within)
        return AMQ_EOVERFLOW;
    d = lnk(s)[i].data;
    if (d == NULL)
        return AMQ_EREADONLY;
    if (len > 0)
        memcpy(d + within, buf, len);
    return AMQ_OK;
}
