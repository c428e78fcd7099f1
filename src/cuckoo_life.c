/*
 * cuckoo_life.c - a cuckoo filter's life: new, a view of borrowed bytes,
 * clone, free; the constants its hot paths read, derived once from its
 * parameters (derive, the alt_tab); and the getters.
 */
#include "cuckoo_impl.h"

/* Below this load a batched add's two buckets are almost never both full,
 * and looking ahead for kicks (add_pipeline) costs more than it saves. */
#define PEEK_LOAD 0.5

/* Up to this many table bytes the table stays in cache between queries,
 * and the one-key query beats staging hashes for prefetches; larger
 * tables' batched adds look ahead for kicks and every batch and kick
 * prefetches a bucket's second line (pf_last). */
#define FIXED_DIRECT_BYTES ((size_t)4 << 20)

/* The widest fingerprint with a table of H(fp) (alt_tab): 2^12 entries of
 * 4 bytes, 16 KiB, which stays in L1 beside the query's other data. */
#define ALT_TABLE_MAX_F 12

/* A filter keeps an alt_tab when it is at most 1/ALT_TABLE_SHARE of its
 * bucket table's bytes: the memory it costs stays under 2 %, and it never
 * weighs on the small filters a Redis server may hold by the thousand. */
#define ALT_TABLE_SHARE 64

/* How buckets of bb bits are read (cuckoo_impl.h, word64). */
static uint32_t shape_of(uint32_t bb)
{
    uint32_t g = bb & 7 ? (bb & 1 ? 1 : bb & 2 ? 2 : 4) : 8; /* gcd(bb, 8) */
    if (bb + 8 - g <= 64)
        return CK_WORD64;
    if (bb + 8 - g <= 128)
        return CK_WORD128;
    return CK_SLOTS;
}

static uint64_t x8_key(uint64_t seed)
{
    return X8_SECRET + (seed ^ ((uint64_t)__builtin_bswap32((uint32_t)seed) << 32));
}

/* Whether a table of p stays in cache (FIXED_DIRECT_BYTES): the test
 * behind pf_last. */
static int in_cache(const amq_cuckoo_params *p)
{
    return amq_cuckoo_data_size(p) <= FIXED_DIRECT_BYTES;
}

/* The per-filter constants of the hot paths (d is set with the table). */
static void derive(amq_cuckoo *c)
{
    uint32_t j;
    c->nb = c->p.buckets;
    c->f = c->p.fingerprint_bits;
    c->b = c->p.bucket_size;
    c->bb = c->f * c->b;
    c->shape = shape_of(c->bb);
    c->fmax = (UINT64_C(1) << c->f) - 1;
    c->ms = c->p.hash_algo == AMQ_HASH_MULSHIFT ? CK_MS_PLAIN
            : c->p.hash_algo == AMQ_HASH_MULMIX ? CK_MS_MIX
                                                : CK_MS_NONE;
    c->fast = (c->p.hash_algo == AMQ_HASH_XXH3 || c->ms) && c->shape == CK_WORD64;
    c->fast_add = 0; /* until the table is known to be writable */
    c->bbytes = c->bb / 8;
    c->x8 = x8_key(c->p.seed);
    {
        amq_ms_key k = amq_ms_key_for(c->p.seed);
        c->ms_a = k.a;
        c->ms_b = k.b;
    }
    c->k_mul = X8_MUL;
    c->k_mx2 = X8_MX2;
    c->k_aval = X8_AVALANCHE;
    c->k_phi = PHI;
    c->k_mix = AMQ_MULMIX_K;
    amq_ck_key8_modes(c);
    c->ones_lo = c->ones_hi = 0;
    for (j = 0; j < c->b; j++) {
        uint32_t bit = j * c->f;
        if (bit < 64)
            c->ones_lo |= UINT64_C(1) << bit;
        else if (bit < 128)
            c->ones_hi |= UINT64_C(1) << (bit - 64);
    }
    c->highs_lo = c->ones_lo << (c->f - 1);
    c->bmask = c->bb >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << c->bb) - 1;
    c->peek_items = (uint64_t)(PEEK_LOAD * (double)c->nb * (double)c->b);
    /* word64 reads 8 bytes, word128 16, ct_get up to 8 from a slot's first
     * byte; a table in cache is read without waiting for a second line. */
    c->pf_last = in_cache(&c->p)          ? 0
                 : c->shape == CK_WORD64  ? 7
                 : c->shape == CK_WORD128 ? 15
                                          : (c->bb + 6) / 8 + 7;
    c->ones2[0] = c->ones2[1] = c->ones_lo;
    c->highs2[0] = c->highs2[1] = c->highs_lo;
}

/* What a filter's alt_tab counts (bytes or bits, see tab_unit), 0 for
 * none: only the layouts and hashes of the q8 entries read one, and every
 * position must fit its 32-bit entries. */
static uint32_t alt_tab_unit(const amq_cuckoo_params *p)
{
    uint32_t bb = p->fingerprint_bits * p->bucket_size, unit = bb % 8 == 0 ? bb / 8 : bb;
    if (p->fingerprint_bits > ALT_TABLE_MAX_F || shape_of(bb) != CK_WORD64 ||
        (p->hash_algo != AMQ_HASH_XXH3 && p->hash_algo != AMQ_HASH_MULSHIFT &&
         p->hash_algo != AMQ_HASH_MULMIX) ||
        p->buckets > UINT32_MAX / unit ||
        amq_cuckoo_data_size(p) / ALT_TABLE_SHARE < (sizeof(uint32_t) << p->fingerprint_bits))
        return 0;
    return unit;
}

/* Bytes of a filter's alt_tab (0: none), allocated with its struct. */
static size_t alt_tab_bytes(const amq_cuckoo_params *p)
{
    return alt_tab_unit(p) == 0 ? 0 : sizeof(uint32_t) << p->fingerprint_bits;
}

static amq_cuckoo *shell(const amq_cuckoo_params *p, const amq_allocator *alloc)
{
    amq_allocator a;
    amq_cuckoo *c;
    size_t tab = alt_tab_bytes(p);

    amq_alloc_init(&a, alloc);
    c = amq_calloc(&a, sizeof *c + tab);
    if (c == NULL)
        return NULL;
    c->p = *p;
    if (tab != 0) {
        uint32_t *t = (uint32_t *)(void *)(c + 1), fp;
        c->tab_unit = alt_tab_unit(p);
        c->tab_span = p->buckets * c->tab_unit;
        for (fp = 0; fp < (uint32_t)(tab / sizeof *t); fp++)
            t[fp] = (uint32_t)(reduce64((uint64_t)fp * PHI, p->buckets) * c->tab_unit);
    }
    derive(c);
    c->alloc = a;
    return c;
}

int amq_cuckoo_new(const amq_cuckoo_params *params, const amq_allocator *alloc,
                   amq_cuckoo **out)
{
    amq_cuckoo *c;
    int rc;

    *out = NULL;
    rc = amq_cuckoo_params_check(params);
    if (rc != AMQ_OK)
        return rc;
    c = shell(params, alloc);
    if (c == NULL)
        return AMQ_ENOMEM;
    rc = amq_region_alloc(&c->data, &c->alloc, amq_cuckoo_data_size(params));
    if (rc != AMQ_OK) {
        amq_cuckoo_free(c);
        return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
    }
    c->d = c->data.data;
    c->fast_add = c->fast;
    amq_ck_key8_modes(c);
    *out = c;
    return AMQ_OK;
}

int amq_ck_check_victim(const amq_cuckoo_params *p, uint32_t fp, uint64_t bucket)
{
    if (fp == 0)
        return bucket == 0 ? AMQ_OK : AMQ_ERANGE;
    if ((uint64_t)fp >= (UINT64_C(1) << p->fingerprint_bits) || bucket >= p->buckets)
        return AMQ_ERANGE;
    return AMQ_OK;
}

int amq_cuckoo_view(const amq_cuckoo_params *params, const void *data, size_t len,
                    uint64_t items, uint32_t victim_fp, uint64_t victim_bucket,
                    const amq_allocator *alloc, amq_cuckoo **out)
{
    amq_cuckoo *c;
    int rc;

    *out = NULL;
    rc = amq_cuckoo_params_check(params);
    if (rc != AMQ_OK)
        return rc;
    if (amq_ck_check_victim(params, victim_fp, victim_bucket) != AMQ_OK)
        return AMQ_ERANGE;
    if (len != amq_cuckoo_data_size(params))
        return AMQ_EINVAL;
    c = shell(params, alloc);
    if (c == NULL)
        return AMQ_ENOMEM;
    amq_region_borrow(&c->data, data, len);
    c->d = c->data.data; /* never written: a view's mutators return AMQ_EREADONLY */
    c->items = items;
    amq_ck_set_victim(c, victim_fp, victim_bucket);
    *out = c;
    return AMQ_OK;
}

int amq_cuckoo_clone(const amq_cuckoo *src, const amq_allocator *alloc, amq_cuckoo **out)
{
    amq_cuckoo *c;
    int rc;

    *out = NULL;
    c = shell(&src->p, alloc);
    if (c == NULL)
        return AMQ_ENOMEM;
    rc = amq_region_copy(&c->data, &c->alloc, src->data.data, src->data.size);
    if (rc != AMQ_OK) {
        amq_cuckoo_free(c);
        return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
    }
    c->d = c->data.data;
    c->fast_add = c->fast;
    c->items = src->items;
    amq_ck_set_victim(c, src->victim_fp, src->victim_bucket);
    *out = c;
    return AMQ_OK;
}

void amq_cuckoo_free(amq_cuckoo *c)
{
    amq_allocator a;
    if (c == NULL)
        return;
    a = c->alloc;
    amq_region_free(&c->data, &a);
    amq_free(&a, c, sizeof *c + alt_tab_bytes(&c->p));
}

/* ---- getters ---------------------------------------------------------------------- */

void amq_cuckoo_get_params(const amq_cuckoo *c, amq_cuckoo_params *out)
{
    *out = c->p;
}

uint64_t amq_cuckoo_items(const amq_cuckoo *c)
{
    return c->items;
}

uint64_t amq_cuckoo_slots(const amq_cuckoo *c)
{
    return c->p.buckets * c->p.bucket_size;
}

size_t amq_cuckoo_bytes(const amq_cuckoo *c)
{
    return c->data.size;
}

double amq_cuckoo_load(const amq_cuckoo *c)
{
    return (double)c->items / (double)amq_cuckoo_slots(c);
}

int amq_cuckoo_is_full(const amq_cuckoo *c)
{
    return c->victim_fp != 0;
}

int amq_cuckoo_is_readonly(const amq_cuckoo *c)
{
    return amq_region_is_borrowed(&c->data);
}

uint32_t amq_cuckoo_victim(const amq_cuckoo *c, uint64_t *bucket)
{
    if (bucket != NULL)
        *bucket = c->victim_bucket;
    return c->victim_fp;
}

const uint8_t *amq_cuckoo_data(const amq_cuckoo *c)
{
    return c->data.data;
}
