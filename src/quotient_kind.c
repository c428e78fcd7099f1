/*
 * quotient_kind.c - the quotient filter (quotient_internal.h) as a kind of
 * the generic handle (kind.h): the adapter and the codec.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/endian.h"
#include "common/error.h"
#include "quotient_internal.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_qf *x;
    if (cfg->capacity == 0 || cfg->capacity > (UINT64_C(1) << 40))
        return amq_err(err, AMQ_ERANGE,
                       "a quotient filter's starting capacity must be 1 to 2^40 keys, not %llu",
                       (unsigned long long)cfg->capacity);
    if (!(cfg->fpp >= QF_MIN_FPP && cfg->fpp <= QF_MAX_FPP))
        return amq_err(err, AMQ_ERANGE,
                       "a quotient filter's false-positive target must be in [%g, %g], not %g"
                       " (its 15-bit entries give about 3e-5 per doubling of the keys)",
                       QF_MIN_FPP, QF_MAX_FPP, cfg->fpp);
    if ((x = amq_qf_shell(cfg->alloc)) == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    amq_qf_set_hash(x, cfg->hash_algo, cfg->seed);
    x->fpp = cfg->fpp;
    x->m0 = amq_qf_slots_for(cfg->capacity);
    amq_qf_set_m(x, x->m0);
    if (amq_qf_alloc_table(x) != AMQ_OK) {
        amq_qf_free(x);
        return amq_err(err, AMQ_ENOMEM, "out of memory for a quotient filter of %llu bytes",
                       (unsigned long long)(amq_qf_lines_for(amq_qf_slots_for(cfg->capacity)) *
                                            64u));
    }
    *impl = x;
    return AMQ_OK;
}

static void op_destroy(void *impl)
{
    amq_qf_free(impl);
}

/* A copy of src's table and deep list (not its growth) under alloc. */
static amq_qf *copy_table(const amq_qf *src, const amq_allocator *alloc)
{
    amq_qf *x = amq_qf_shell(alloc);
    amq_allocator keep;
    if (x == NULL)
        return NULL;
    keep = x->alloc;
    *x = *src;
    x->alloc = keep;
    x->growth = NULL;
    x->deep = NULL;
    x->deep_cap = 0;
    x->deep_owned = 0;
    x->deep2 = NULL;
    x->ndeep2 = 0;
    memset(&x->table, 0, sizeof x->table);
    x->t = NULL;
    if (amq_region_copy(&x->table, &x->alloc, src->table.data, src->table.size) != AMQ_OK) {
        x->ndeep = 0;
        amq_qf_free(x);
        return NULL;
    }
    x->t = x->table.data;
    if (src->ndeep > 0) {
        if ((x->deep = amq_malloc(&x->alloc, 2 * src->ndeep * sizeof *x->deep)) == NULL) {
            amq_qf_free(x);
            return NULL;
        }
        memcpy(x->deep, src->deep, 2 * src->ndeep * sizeof *x->deep);
        x->deep_cap = src->ndeep;
        x->deep_owned = 1;
    }
    return x;
}

/* A growth under way is copied with its table and lists: the copy goes on
 * with it as src would. */
static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    const amq_qf *src = impl;
    const amq_qf_growth *sg = src->growth;
    amq_qf *x = copy_table(src, alloc), *y;
    amq_qf_growth *g;
    if (x == NULL)
        return AMQ_ENOMEM;
    if (sg != NULL) {
        if ((g = amq_calloc(&x->alloc, sizeof *g)) == NULL) {
            amq_qf_free(x);
            return AMQ_ENOMEM;
        }
        *g = *sg;
        g->y = NULL;
        g->voids = NULL;
        g->buf = NULL;
        g->cap = 0;
        x->growth = g;
        if ((g->buf = amq_malloc(&x->alloc, QF_STEP_ITEMS * QF_PLACE_BYTES)) == NULL ||
            (sg->cap > 0 &&
             (g->voids = amq_malloc(&x->alloc, 2 * sg->cap * sizeof *g->voids)) == NULL)) {
            amq_qf_free(x);
            return AMQ_ENOMEM;
        }
        g->cap = sg->cap;
        if (sg->nv > 0)
            memcpy(g->voids, sg->voids, 2 * sg->nv * sizeof *g->voids);
        /* y's deep lists are x's and the voids: not copied with its table */
        if ((y = copy_table(sg->y, alloc)) == NULL) {
            amq_qf_free(x);
            return AMQ_ENOMEM;
        }
        if (y->deep_owned)
            amq_free(&y->alloc, y->deep, 2 * y->deep_cap * sizeof *y->deep);
        y->deep = x->deep;
        y->ndeep = x->ndeep;
        y->deep_owned = 0;
        y->deep_cap = 0;
        y->deep2 = g->voids;
        y->ndeep2 = g->nv;
        g->y = y;
    }
    *out = x;
    return AMQ_OK;
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_qf *x = impl;
    *algo = x->hash_algo;
    *seed = x->seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    amq_qf *x = impl;
    return x->isa->add(x, h.h1);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    const amq_qf *x = impl;
    return x->isa->contains(x, h.h1);
}

static int op_add_key(void *impl, const void *key, size_t len)
{
    amq_qf *x = impl;
    return x->isa->add_key(x, key, len);
}

static amq_contains_key_fn op_contains_key_of(const void *impl, const void **arg)
{
    const amq_qf *x = impl;
    (void)arg;
    return x->isa->contains_key;
}

static int op_settle(void *impl)
{
    amq_qf *x = impl;
    return x->isa->settle(x);
}

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    amq_qf *x = impl;
    return x->isa->add_batch(x, h, n, added);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    const amq_qf *x = impl;
    x->isa->contains_batch(x, h, n, out);
}

static uint64_t op_contains_batch_fixed(const void *impl, const void *keys, size_t key_len,
                                        size_t n, uint8_t *out)
{
    const amq_qf *x = impl;
    return x->isa->contains_fixed(x, keys, key_len, n, out);
}

/* Back to the starting size, empty. */
static int op_clear(void *impl)
{
    amq_qf *x = impl;
    amq_region t, old;
    if (amq_region_is_borrowed(&x->table))
        return AMQ_EREADONLY;
    amq_qf_growth_free(x);
    memset(&t, 0, sizeof t);
    if (amq_region_alloc(&t, &x->alloc, (size_t)(amq_qf_lines_for(x->m0) * 64u)) != AMQ_OK)
        return AMQ_ENOMEM;
    old = x->table;
    amq_region_free(&old, &x->alloc);
    if (x->deep_owned)
        amq_free(&x->alloc, x->deep, 2 * x->deep_cap * sizeof *x->deep);
    x->deep = NULL;
    x->ndeep = x->deep_cap = 0;
    x->deep_owned = 0;
    x->table = t;
    x->t = t.data;
    amq_qf_set_m(x, x->m0);
    x->items = x->entries = x->grows = 0;
    memset(x->cnt, 0, sizeof x->cnt);
    memset(x->pend, 0, sizeof x->pend);
    x->pend_used = x->pend_next = 0;
    amq_qf_pend_resign(x);
    return AMQ_OK;
}

static int op_is_view(const void *impl)
{
    const amq_qf *x = impl;
    return amq_region_is_borrowed(&x->table);
}

static uint64_t capacity_of(const amq_qf *x)
{
    return (uint64_t)(QF_MAX_LOAD * (double)x->m);
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_qf *x = impl;
    st->items = x->items;
    st->capacity = capacity_of(x);
    st->bytes = x->table.size + 16u * x->ndeep + 8u * QF_PENDING;
    if (x->growth != NULL) /* both tables are held until the growth ends */
        st->bytes += x->growth->y->table.size + 16u * x->growth->nv;
    st->bits = 0;
    st->hashes = 0;
    st->fpp_target = x->fpp;
    st->fpp_now = fmin(amq_qf_rate(x), 1.0);
    st->fill = fmin((double)x->entries / (double)x->m, 1.0);
}

static uint64_t pending(const amq_qf *x)
{
    return (uint64_t)__builtin_popcount(x->pend_used);
}

/* Entries of L bits were added about 15 - L doublings of the keys ago (an
 * entry gives up a bit each time k grows); each length's share of the rate. */
static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_qf *x = impl;
    char name[48];
    uint32_t l;
    int rc;
    rc = AMQ_FIELDS(fn, ctx, AMQ_U64("slots", x->m), AMQ_U64("slots_per_line", QF_SLOTS),
                    AMQ_U64("entry_bits", 16), AMQ_U64("start_slots", x->m0),
                    AMQ_U64("expansions", x->grows), AMQ_F64("growth", QF_GROWTH),
                    AMQ_F64("max_load", QF_MAX_LOAD), AMQ_U64("entries", x->entries),
                    AMQ_U64("pending_keys", pending(x)), AMQ_U64("deep_ranges", x->ndeep),
                    AMQ_U64("growing_to_slots", x->growth != NULL ? x->growth->y->m : 0),
                    AMQ_U64("growth_slots_read", x->growth != NULL ? x->growth->rslot : 0),
                    AMQ_F64("fpp_bound", amq_qf_rate(x)),
                    AMQ_F64("fpp_after_next_growth",
                            amq_qf_rate_after_growth(x, (uint64_t)((double)x->m * QF_GROWTH) + 1)));
    for (l = 16; rc == 0 && l-- > 1;) {
        if (x->cnt[l] == 0)
            continue;
        snprintf(name, sizeof name, "entries_of_%u_bits", l);
        rc = amq_field_u64(fn, ctx, name, x->cnt[l]);
        snprintf(name, sizeof name, "fpp_of_%u_bit_entries", l);
        if (rc == 0)
            rc = amq_field_f64(fn, ctx, name,
                               ldexp((double)x->cnt[l], -(int)(x->k + l - (l <= 3 ? 1u : 0u))));
    }
    if (rc == 0 && x->cnt[0] != 0)
        rc = amq_field_u64(fn, ctx, "void_lanes", x->cnt[0]);
    return rc;
}

/* ---- persistence -------------------------------------------------------------------------
 * Parameter block, 64 bytes little-endian (docs/file-format.md, "Kind 12"):
 *   0 u16 entry bits (16), 2 u16 slots per line (28), 4 u32 flags (bit 0: a
 *   growth under way; the other bits 0), 8 f64 fpp target, 16 u64 slots m,
 *   24 u64 start slots, 32 u64 deep ranges, 40 u64 growths, 48 u64 the
 *   slots of the table grown into (0: none), 56 u64 its new deep ranges.
 * Payload: 0 u32 pending cells in use (a bit each), 4 u32 the next cell,
 * 8 u64 x 16 pending keys' h1; 136 the growth (zeros when none): u64 split,
 * read position, read slot, deep cursor, write position, next line to set,
 * last slot written, copies' slot, entries read, u32 copies, u32 0, u16 x 64
 * copies; 344 the deep list (u64 lo, hi pairs), the growth's new ranges,
 * zeros to a multiple of 64 bytes, the table (lines of 64 bytes: u64
 * offset, occupied and run-end bits; 28 u16 entries), and the table grown
 * into.  A file saved during a growth loads with the growth under way.
 */
#define QF_PARAMS_SIZE 64
#define QF_FLAG_GROWTH 1u
#define QF_FIXED_BYTES 344u

static uint64_t head_bytes(uint64_t ndeep, uint64_t nvoids)
{
    return (QF_FIXED_BYTES + 16u * (ndeep + nvoids) + 63u) / 64u * 64u;
}

static size_t op_params_size(const void *impl)
{
    (void)impl;
    return QF_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_qf *x = impl;
    memset(out, 0, QF_PARAMS_SIZE);
    amq_store16(out, 16);
    amq_store16(out + 2, QF_SLOTS);
    amq_store32(out + 4, x->growth != NULL ? QF_FLAG_GROWTH : 0);
    amq_storef64(out + 8, x->fpp);
    amq_store64(out + 16, x->m);
    amq_store64(out + 24, x->m0);
    amq_store64(out + 32, x->ndeep);
    amq_store64(out + 40, x->grows);
    amq_store64(out + 48, x->growth != NULL ? x->growth->y->m : 0);
    amq_store64(out + 56, x->growth != NULL ? x->growth->nv : 0);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_qf *x = impl;
    const amq_qf_growth *g = x->growth;
    return head_bytes(x->ndeep, g != NULL ? g->nv : 0) + x->lines * 64u +
           (g != NULL ? g->y->lines * 64u : 0);
}

static int little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* u64 words into the sink through buf (used bytes of it so far); the new count. */
static int put_words(amq_sink *sink, uint8_t *buf, size_t cap, size_t *used, const uint64_t *w,
                     uint64_t n)
{
    uint64_t i;
    int rc;
    for (i = 0; i < n; i++) {
        amq_store64(buf + *used, w[i]);
        if ((*used += 8) == cap) {
            if ((rc = amq_sink_write(sink, buf, *used)) != AMQ_OK)
                return rc;
            *used = 0;
        }
    }
    return AMQ_OK;
}

static int put_table(amq_sink *sink, uint8_t *buf, const amq_qf *t)
{
    uint64_t l, i;
    int rc;
    if (little_endian())
        return amq_sink_write(sink, t->t, (size_t)(t->lines * 64u));
    for (l = 0; l < t->lines; l++) {
        const uint8_t *line = t->t + l * 64u;
        amq_store64(buf, *(const uint64_t *)(const void *)line);
        for (i = 0; i < QF_SLOTS; i++)
            amq_store16(buf + 8 + 2 * i, ((const uint16_t *)(const void *)(line + 8))[i]);
        if ((rc = amq_sink_write(sink, buf, 64)) != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_qf *x = impl;
    const amq_qf_growth *g = x->growth;
    uint8_t buf[4096];
    uint64_t gw[9] = {0};
    size_t used;
    uint32_t i;
    int rc;
    memset(buf, 0, QF_FIXED_BYTES);
    amq_store32(buf, x->pend_used);
    amq_store32(buf + 4, x->pend_next);
    for (i = 0; i < QF_PENDING; i++)
        amq_store64(buf + 8 + 8 * i, x->pend[i]);
    if (g != NULL) {
        gw[0] = g->split;
        gw[1] = g->rpos;
        gw[2] = g->rslot;
        gw[3] = g->di;
        gw[4] = g->pos;
        gw[5] = g->next_line;
        gw[6] = g->prev;
        gw[7] = g->copies_of;
        gw[8] = g->read;
        for (i = 0; i < 9; i++)
            amq_store64(buf + 136 + 8 * i, gw[i]);
        amq_store32(buf + 208, g->ncopies);
        for (i = 0; i < 64; i++)
            amq_store16(buf + 216 + 2 * i, g->copies[i]);
    }
    used = QF_FIXED_BYTES;
    if ((rc = put_words(sink, buf, sizeof buf, &used, x->deep, 2 * x->ndeep)) != AMQ_OK ||
        (g != NULL &&
         (rc = put_words(sink, buf, sizeof buf, &used, g->voids, 2 * g->nv)) != AMQ_OK))
        return rc;
    memset(buf + used, 0, (64u - used % 64u) % 64u);
    used += (64u - used % 64u) % 64u;
    if ((rc = amq_sink_write(sink, buf, used)) != AMQ_OK || (rc = put_table(sink, buf, x)) != AMQ_OK)
        return rc;
    return g != NULL ? put_table(sink, buf, g->y) : AMQ_OK;
}

/* A table of the payload at off into t: borrowed when it may be, else copied. */
static int take_table(amq_qf *t, const amq_load_args *args, uint64_t off, int borrow)
{
    const uint8_t *src = args->payload + off;
    uint64_t l, i;
    if (borrow) {
        amq_region_borrow(&t->table, src, (size_t)(t->lines * 64u));
        t->t = t->table.data;
        return AMQ_OK;
    }
    if (amq_qf_alloc_table(t) != AMQ_OK)
        return AMQ_ENOMEM;
    if (little_endian()) {
        memcpy(t->t, src, (size_t)(t->lines * 64u));
        return AMQ_OK;
    }
    for (l = 0; l < t->lines; l++) {
        uint8_t *line = t->t + l * 64u;
        *(uint64_t *)(void *)line = amq_load64(src + l * 64u);
        for (i = 0; i < QF_SLOTS; i++)
            ((uint16_t *)(void *)(line + 8))[i] = amq_load16(src + l * 64u + 8 + 2 * i);
    }
    return AMQ_OK;
}

/* n deep ranges at payload offset off: borrowed or copied; sorted and apart. */
static int take_ranges(const amq_qf *x, const amq_load_args *args, uint64_t off, uint64_t n,
                       int borrow, uint64_t **out, amq_errinfo *err)
{
    uint64_t i, *r;
    *out = NULL;
    if (n == 0)
        return AMQ_OK;
    if (borrow)
        r = (uint64_t *)(uintptr_t)(args->payload + off);
    else if ((r = amq_malloc(&x->alloc, (size_t)(2 * n * sizeof *r))) == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    else
        for (i = 0; i < 2 * n; i++)
            r[i] = amq_load64(args->payload + off + 8 * i);
    *out = r;
    for (i = 0; i < n; i++)
        if (r[2 * i] > r[2 * i + 1] ||
            (i > 0 && (r[2 * i - 1] == UINT64_MAX || r[2 * i] <= r[2 * i - 1])))
            return amq_err(err, AMQ_ECORRUPT,
                           "quotient deep range %llu is not sorted and apart from the one before",
                           (unsigned long long)i);
    return AMQ_OK;
}

static int check_table(amq_qf *t, const char *which, amq_errinfo *err)
{
    char msg[160];
    uint32_t l;
    int rc = amq_qf_validate(t, msg, sizeof msg);
    if (rc != AMQ_OK)
        return rc == AMQ_ECORRUPT ? amq_err(err, rc, "%s%s", which, msg)
                                  : amq_err(err, rc, "out of memory");
    amq_qf_count(t, t->cnt);
    for (l = 0, t->entries = 0; l < 16; l++)
        t->entries += t->cnt[l];
    return AMQ_OK;
}

/* The growth's fields of a loaded payload: where the reader and the writer
 * stand must be places of the tables, and the split the reader's slot's. */
static int take_growth(amq_qf *x, const amq_load_args *args, uint64_t m2, uint64_t nv,
                       uint64_t voids_off, uint64_t y_off, int borrow, amq_errinfo *err)
{
    const uint8_t *p = args->payload + 136;
    char msg[160];
    amq_qf_growth *g;
    amq_qf *y;
    uint32_t i;
    int rc;
    if ((g = amq_calloc(&x->alloc, sizeof *g)) == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    x->growth = g;
    if ((g->y = y = amq_qf_shell(&x->alloc)) == NULL ||
        (g->buf = amq_malloc(&x->alloc, QF_STEP_ITEMS * QF_PLACE_BYTES)) == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    amq_qf_set_m(y, m2);
    y->deep = x->deep;
    y->ndeep = x->ndeep;
    rc = take_ranges(x, args, voids_off, nv, 0, &g->voids, err);
    g->cap = g->voids != NULL ? nv : 0; /* the list's size when freed, refused ones too */
    if (rc != AMQ_OK)
        return rc;
    g->nv = nv;
    y->deep2 = g->voids;
    y->ndeep2 = nv;
    g->split = amq_load64(p);
    g->rpos = amq_load64(p + 8);
    g->rslot = amq_load64(p + 16);
    g->di = amq_load64(p + 24);
    g->pos = amq_load64(p + 32);
    g->next_line = amq_load64(p + 40);
    g->prev = amq_load64(p + 48);
    g->copies_of = amq_load64(p + 56);
    g->read = amq_load64(p + 64);
    g->ncopies = amq_load32(p + 72);
    g->key_last = UINT64_MAX;
    for (i = 0; i < 64; i++)
        g->copies[i] = amq_load16(p + 80 + 2 * i);
    if (amq_load32(p + 76) != 0 || g->ncopies > 64 || g->rpos > x->lines * QF_SLOTS ||
        g->rslot > x->m || g->di > x->ndeep || g->pos > y->lines * QF_SLOTS ||
        g->next_line > y->lines || g->prev >= m2 || g->copies_of >= m2 ||
        g->split != amq_qf_first_key(x, g->rslot))
        return amq_err(err, AMQ_ECORRUPT,
                       "quotient growth state out of its tables (read at %llu, slot %llu; write "
                       "at %llu, line %llu; split %llu)",
                       (unsigned long long)g->rpos, (unsigned long long)g->rslot,
                       (unsigned long long)g->pos, (unsigned long long)g->next_line,
                       (unsigned long long)g->split);
    if ((rc = take_table(y, args, y_off, borrow)) != AMQ_OK)
        return amq_err(err, rc, "out of memory");
    if ((rc = check_table(y, "the table grown into: ", err)) != AMQ_OK)
        return rc;
    if ((rc = amq_qf_check_growth(x, msg, sizeof msg)) != AMQ_OK)
        return rc == AMQ_ECORRUPT ? amq_err(err, rc, "%s", msg) : amq_err(err, rc, "out of memory");
    return AMQ_OK;
}

static int op_load(const amq_load_args *args, void **impl, amq_errinfo *err)
{
    const uint8_t *p = args->params, *pl = args->payload;
    amq_qf *x;
    uint64_t m, m0, ndeep, m2, nv, hb, i, lines2 = 0, need;
    uint32_t flags;
    double fpp;
    int rc, borrow;
    if (args->params_len != QF_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "quotient parameter block is %zu bytes, expected %d",
                       args->params_len, QF_PARAMS_SIZE);
    flags = amq_load32(p + 4);
    if (amq_load16(p) != 16 || amq_load16(p + 2) != QF_SLOTS || (flags & ~QF_FLAG_GROWTH) != 0)
        return amq_err(err, AMQ_EVERSION,
                       "quotient filter of %u-bit entries, %u slots a line, flags %u, is not "
                       "supported",
                       amq_load16(p), amq_load16(p + 2), flags);
    fpp = amq_loadf64(p + 8);
    m = amq_load64(p + 16);
    m0 = amq_load64(p + 24);
    ndeep = amq_load64(p + 32);
    m2 = amq_load64(p + 48);
    nv = amq_load64(p + 56);
    if (m < QF_MIN_SLOTS || m > QF_MAX_SLOTS || m0 < QF_MIN_SLOTS || m0 > m ||
        !(fpp >= QF_MIN_FPP && fpp <= QF_MAX_FPP) || ndeep > (UINT64_C(1) << 40) ||
        nv > (UINT64_C(1) << 40) || ((flags & QF_FLAG_GROWTH) ? m2 <= m || m2 > QF_MAX_SLOTS
                                                             : m2 != 0 || nv != 0))
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid quotient parameters (%llu slots, start %llu, fpp %g, %llu deep "
                       "ranges, growth to %llu slots with %llu new ranges)",
                       (unsigned long long)m, (unsigned long long)m0, fpp,
                       (unsigned long long)ndeep, (unsigned long long)m2, (unsigned long long)nv);
    hb = head_bytes(ndeep, nv);
    if (m2 != 0)
        lines2 = amq_qf_lines_for(m2);
    need = hb + amq_qf_lines_for(m) * 64u + lines2 * 64u; /* each term under 2^55 */
    if (args->payload_len != need)
        return amq_err(err, AMQ_ECORRUPT,
                       "quotient payload is %llu bytes, its parameters need %llu",
                       (unsigned long long)args->payload_len, (unsigned long long)need);
    if (need > SIZE_MAX / 2)
        return amq_err(err, AMQ_EOVERFLOW, "quotient payload of %llu bytes is too large here",
                       (unsigned long long)need);
    for (i = QF_FIXED_BYTES + 16u * (ndeep + nv); i < hb; i++)
        if (pl[i] != 0)
            return amq_err(err, AMQ_ECORRUPT,
                           "quotient payload: byte %llu of the padding is not 0",
                           (unsigned long long)i);
    if (!(flags & QF_FLAG_GROWTH))
        for (i = 136; i < QF_FIXED_BYTES; i++)
            if (pl[i] != 0)
                return amq_err(err, AMQ_ECORRUPT,
                               "quotient payload: byte %llu of the growth is not 0 with none "
                               "under way",
                               (unsigned long long)i);
    if ((x = amq_qf_shell(args->alloc)) == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    amq_qf_set_hash(x, args->hash_algo, args->seed);
    x->fpp = fpp;
    x->m0 = m0;
    amq_qf_set_m(x, m);
    x->grows = amq_load64(p + 40);
    x->items = args->items;
    x->pend_used = amq_load32(pl);
    x->pend_next = amq_load32(pl + 4);
    if (x->pend_used >= (UINT32_C(1) << QF_PENDING) || x->pend_next >= QF_PENDING) {
        amq_qf_free(x);
        return amq_err(err, AMQ_ECORRUPT, "quotient pending keys: cells 0x%x, next %u",
                       (unsigned)amq_load32(pl), (unsigned)amq_load32(pl + 4));
    }
    for (i = 0; i < QF_PENDING; i++)
        x->pend[i] = amq_load64(pl + 8 + 8 * i);
    amq_qf_pend_resign(x);
    borrow = args->borrow && ((uintptr_t)pl & 63) == 0 && little_endian();
    x->ndeep = ndeep;
    rc = take_ranges(x, args, QF_FIXED_BYTES, ndeep, borrow, &x->deep, err);
    x->deep_owned = !borrow && x->deep != NULL;
    x->deep_cap = x->deep_owned ? ndeep : 0;
    if (rc == AMQ_OK && (rc = take_table(x, args, hb, borrow)) != AMQ_OK)
        rc = amq_err(err, rc, "out of memory");
    if (rc == AMQ_OK)
        rc = check_table(x, "", err);
    if (rc == AMQ_OK && (flags & QF_FLAG_GROWTH))
        rc = take_growth(x, args, m2, nv, QF_FIXED_BYTES + 16u * ndeep,
                         hb + amq_qf_lines_for(m) * 64u, borrow, err);
    if (rc != AMQ_OK) {
        amq_qf_free(x);
        return rc;
    }
    *impl = x;
    return AMQ_OK;
}

const amq_kind_ops amq_quotient_ops = {
    .kind = AMQ_KIND_QUOTIENT,
    .name = "quotient",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .add_key = op_add_key,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .contains_batch_fixed = op_contains_batch_fixed,
    .contains_key_of = op_contains_key_of,
    .settle = op_settle,
};
