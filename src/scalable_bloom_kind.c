/*
 * scalable_bloom_kind.c - the scalable Bloom filter as a kind of the
 * generic handle (kind.h): the adapter (create, the entries over the
 * chain) and the codec (parameter block, the links' arrays, load).  The
 * algorithm is scalable_bloom.c.
 */
#include <math.h>
#include <string.h>

#include "bloom_internal.h"
#include "common/checked.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/mulshift.h"
#include "kind.h"
#include "scalable_bloom_internal.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_sbloom_params p;
    amq_sbloom *s;
    int rc;

    /* As the classic Bloom filter (bloom.c): double hashing, two halves. */
    if (amq_ms_one_word(cfg->hash_algo) && !cfg->redisbloom)
        return amq_err(err, AMQ_EINVAL,
                       "a scalable Bloom filter does not take hash %s (its probes need two"
                       " independent hash halves; %s has one): use xxh3",
                       amq_hash_algo_name(cfg->hash_algo), amq_hash_algo_name(cfg->hash_algo));
    amq_sbloom_params_init(&p, cfg->redisbloom != 0);
    p.capacity = cfg->capacity;
    p.fpp = cfg->fpp;
    if (cfg->expansion != 0)
        p.expansion = cfg->expansion;
    if (cfg->nonscaling)
        p.options |= AMQ_SBLOOM_NO_SCALING;
    if (!cfg->redisbloom) {
        p.hash_algo = cfg->hash_algo;
        p.seed = cfg->seed;
    }
    rc = amq_sbloom_new(&p, cfg->alloc, &s);
    if (rc != AMQ_OK)
        return amq_err(err, rc,
                       "cannot create a scalable Bloom filter for %llu items at"
                       " false-positive rate %g with expansion %u: %s",
                       (unsigned long long)p.capacity, p.fpp, p.expansion, amq_strerror(rc));
    *impl = s;
    return AMQ_OK;
}

/* The entries that only forward to the family's functions. */
static void op_destroy(void *impl)
{
    amq_sbloom_free((amq_sbloom *)impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    return amq_sbloom_clone((const amq_sbloom *)impl, alloc, (amq_sbloom **)out);
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_sbloom *x = impl;
    *algo = x->hash_algo;
    *seed = x->seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    return amq_sbloom_add_hash((amq_sbloom *)impl, h);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    return amq_sbloom_contains_hash((const amq_sbloom *)impl, h);
}

static int op_clear(void *impl)
{
    amq_sbloom *s = impl;
    sb_link *l = lnk(s);
    while (s->n > 1) {
        s->n--;
        amq_sb_drop_bits(s, s->n);
    }
    l[0].items = 0;
    memset(l[0].data, 0, bytes_of(l_bits(&l[0])));
    return AMQ_OK;
}

static int op_is_view(const void *impl)
{
    (void)impl;
    return 0;
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_sbloom *s = impl;
    amq_sbloom_info in;
    double miss = 1.0;
    uint32_t i;

    amq_sbloom_get_info(s, &in);
    for (i = 0; i < s->n; i++) {
        const sb_link *l = &clnk(s)[i];
        double set = (double)amq_bloom_array_popcount(l->data, bytes_of(l_bits(l)));
        miss *= 1.0 - pow(set / (double)l_bits(l), (double)l_hashes(l));
    }
    st->items = in.items;
    st->capacity = in.capacity;
    st->bytes = in.bytes;
    st->fpp_target = s->error;
    st->fpp_now = 1.0 - miss;
    st->fill = in.capacity > 0 ? (double)in.items / (double)in.capacity : 0.0;
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_sbloom *s = impl;
    amq_sbloom_info in;

    amq_sbloom_get_info(s, &in);
    return AMQ_FIELDS(fn, ctx, AMQ_STR("layout", s->redisbloom ? "redisbloom" : "native"),
                      AMQ_U64("links", in.links), AMQ_U64("expansion", s->growth),
                      AMQ_STR("scaling", (s->options & AMQ_SBLOOM_NO_SCALING) ? "no" : "yes"),
                      AMQ_F64("error", s->error),
                      AMQ_F64("first_link_error", s->n > 0 ? clnk(s)[0].error : s->error),
                      AMQ_F64("tightening", amq_sb_tightening(s)),
                      AMQ_U64("options", s->options),
                      AMQ_U64("redisbloom_size", in.info_bytes));
}

/* Parameter block, little-endian: u32 redisbloom, u32 options, u32 growth,
 * u32 links, f64 error; then per link 48 bytes: u64 entries, f64 error,
 * f64 bpe, u64 bits, u32 hashes, u32 n2, u64 items.  Payload: the links'
 * bit arrays concatenated. */
#define SB_FIXED 24
#define SB_LINK 48

static size_t op_params_size(const void *impl)
{
    const amq_sbloom *s = impl;
    return SB_FIXED + SB_LINK * (size_t)s->n;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_sbloom *s = impl;
    amq_sbloom_link_info li;
    uint8_t *p;
    uint32_t i;

    amq_store32(out, s->redisbloom);
    amq_store32(out + 4, s->options);
    amq_store32(out + 8, s->growth);
    amq_store32(out + 12, s->n);
    amq_storef64(out + 16, s->error);
    for (i = 0; i < s->n; i++) {
        p = out + SB_FIXED + SB_LINK * (size_t)i;
        amq_sb_link_info(&clnk(s)[i], &li);
        amq_store64(p, li.entries);
        amq_storef64(p + 8, li.fpp);
        amq_storef64(p + 16, li.bpe);
        amq_store64(p + 24, li.bits);
        amq_store32(p + 32, li.hashes);
        amq_store32(p + 36, li.n2);
        amq_store64(p + 40, li.items);
    }
}

static uint64_t op_payload_size(const void *impl)
{
    amq_sbloom_info in;
    amq_sbloom_get_info(impl, &in);
    return in.bytes;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_sbloom *s = impl;
    amq_sbloom_link_info li;
    uint32_t i;
    int rc;
    for (i = 0; i < s->n; i++) {
        amq_sb_link_info(&clnk(s)[i], &li);
        rc = amq_sink_write(sink, clnk(s)[i].data, (size_t)li.bytes);
        if (rc != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int op_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    amq_sbloom_params p;
    amq_sbloom_header h;
    amq_sbloom_link_info *links = NULL;
    amq_sbloom *s = NULL;
    amq_allocator al;
    uint64_t total = 0, off = 0;
    const uint8_t *q;
    size_t bytes = 0;
    uint32_t i;
    int rc;

    amq_alloc_init(&al, a->alloc);
    if (a->params_len < SB_FIXED)
        return amq_err(err, AMQ_ECORRUPT,
                       "scalable Bloom parameter block is %zu bytes, at least %d", a->params_len,
                       SB_FIXED);
    amq_sbloom_params_init(&p, 0);
    p.redisbloom = amq_load32(a->params);
    p.options = amq_load32(a->params + 4);
    p.expansion = amq_load32(a->params + 8);
    h.links = amq_load32(a->params + 12);
    p.fpp = amq_loadf64(a->params + 16);
    p.hash_algo = a->hash_algo;
    p.seed = a->seed;
    h.options = p.options;
    h.expansion = p.expansion;
    h.items = a->items;
    if (p.redisbloom > 1)
        return amq_err(err, AMQ_ECORRUPT, "scalable Bloom layout %u (0 native, 1 RedisBloom)",
                       p.redisbloom);
    if (h.links == 0 || h.links > AMQ_SBLOOM_MAX_LINKS)
        return amq_err(err, AMQ_ECORRUPT, "scalable Bloom filter of %u links (1 to %u)", h.links,
                       AMQ_SBLOOM_MAX_LINKS);
    if (a->params_len != SB_FIXED + SB_LINK * (size_t)h.links)
        return amq_err(err, AMQ_ECORRUPT,
                       "scalable Bloom parameter block is %zu bytes, %u links need %zu",
                       a->params_len, h.links, SB_FIXED + SB_LINK * (size_t)h.links);
    if (!(p.fpp > 0.0 && p.fpp < 1.0))
        return amq_err(err, AMQ_ECORRUPT, "scalable Bloom error rate %g is not in (0, 1)", p.fpp);
    if (p.redisbloom && (a->hash_algo != AMQ_HASH_REDISBLOOM || a->seed != 0))
        return amq_err(err, AMQ_ECORRUPT,
                       "a RedisBloom-layout scalable Bloom filter hashes with redisbloom, seed 0,"
                       " not %s seed %llu",
                       amq_hash_algo_name(a->hash_algo) != NULL ? amq_hash_algo_name(a->hash_algo)
                                                                : "an unknown hash",
                       (unsigned long long)a->seed);
    bytes = h.links * sizeof *links;
    links = amq_malloc(&al, bytes);
    if (links == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    for (i = 0; i < h.links; i++) {
        q = a->params + SB_FIXED + SB_LINK * (size_t)i;
        links[i].entries = amq_load64(q);
        links[i].fpp = amq_loadf64(q + 8);
        links[i].bpe = amq_loadf64(q + 16);
        links[i].bits = amq_load64(q + 24);
        links[i].hashes = amq_load32(q + 32);
        links[i].n2 = amq_load32(q + 36);
        links[i].items = amq_load64(q + 40);
        links[i].bytes = p.redisbloom ? links[i].bits / 8 : (links[i].bits + 63) / 64 * 8;
        /* bits are checked below (check_raw); summed before that, so checked here */
        if (amq_add64(total, links[i].bytes, &total) != AMQ_OK)
            total = UINT64_MAX;
    }
    rc = amq_sb_check_raw(&h, links, (int)p.redisbloom, err);
    if (rc == AMQ_OK && total != a->payload_len)
        rc = amq_err(err, AMQ_ECORRUPT, "scalable Bloom payload is %llu bytes, its links need %llu",
                     (unsigned long long)a->payload_len, (unsigned long long)total);
    if (rc == AMQ_OK && (rc = amq_sb_build_raw(&h, links, NULL, &p, a->alloc, &s)) != AMQ_OK)
        rc = amq_err(err, rc, "cannot load scalable Bloom filter: %s", amq_strerror(rc));
    for (i = 0; rc == AMQ_OK && i < h.links; i++) {
        uint8_t *d = lnk(s)[i].data;
        uint64_t tail = links[i].bits & 63;
        memcpy(d, a->payload + off, (size_t)links[i].bytes);
        off += links[i].bytes;
        if (tail != 0 && (amq_load64(d + links[i].bytes - 8) >> tail) != 0)
            rc = amq_err(err, AMQ_ECORRUPT, "scalable Bloom link %u has bits set past its last bit",
                         i);
    }
    amq_free(&al, links, bytes);
    if (rc != AMQ_OK) {
        amq_sbloom_free(s);
        return rc;
    }
    *impl = s;
    return AMQ_OK;
}

const amq_kind_ops amq_sbloom_ops = {
    .kind = AMQ_KIND_SCALABLE_BLOOM,
    .name = "scalable-bloom",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
};
