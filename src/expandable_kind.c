/*
 * expandable_kind.c - the expandable filter as a kind of the generic handle
 * (kind.h): the adapter (create, clone, the entries, clear, stats, describe)
 * and the codec (parameter block, payload - a doubling or a stash move in
 * progress written as its end state - and load).  The algorithm is
 * expandable.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/endian.h"
#include "common/error.h"
#include "expandable_internal.h"

/* ---- a doubling, written as its split table ----------------------------------------------
 * The file has no doubling state, and a mapped file must be complete: a
 * filter saved during a doubling (or a stash resize) is written as it will
 * be once done.  The split buckets as they are, each unsplit old bucket's
 * halves split on the fly, and a stash of x's cells and the old stash's
 * cells of unsplit buckets, built in a scratch table.  Nothing in the handle changes (a
 * const handle, a forked child writing an RDB, readers on other threads). */

/* Is old stash cell c one of an unsplit bucket (one expandable.c's split_one would move)? */
static int pending_cell(const amq_expand *x, uint64_t c)
{
    uint64_t b = c >> 16;
    return (uint16_t)c != 0 && b >= x->mig && b < (UINT64_C(1) << x->old->q) &&
           bucket_at(x->old, b)[META_LANE] != 0;
}

/* The cells of the written stash: x's (its stash and a prev in moving) and
 * the old level's of unsplit buckets, split; counted, and put in m when
 * given. */
static uint64_t file_cells(const amq_expand *x, uint64_t *m, uint64_t cap)
{
    const uint64_t *arr[4];
    uint64_t caps[4], i, c, b, n = 0;
    int a, na = 2;

    arr[0] = cells(x);
    caps[0] = x->stash_cap;
    arr[1] = prev_cells(x);
    caps[1] = x->prev_cap;
    if (x->old != NULL) {
        arr[2] = cells(x->old);
        caps[2] = x->old->stash_cap;
        arr[3] = prev_cells(x->old);
        caps[3] = x->old->prev_cap;
        na = 4;
    }
    for (a = 0; a < na; a++) {
        for (i = 0; i < caps[a]; i++) {
            c = arr[a][i];
            if (a < 2) {
                if (c == 0)
                    continue;
                n++;
                if (m != NULL)
                    (void)amq_exp_insert_cell(m, cap, c);
                continue;
            }
            if (!pending_cell(x, c))
                continue;
            b = c >> 16;
            if ((uint16_t)c == 0x8000u) {
                n += 2;
                if (m != NULL) {
                    (void)amq_exp_insert_cell(m, cap, (2 * b) << 16 | 0x8000u);
                    (void)amq_exp_insert_cell(m, cap, (2 * b + 1) << 16 | 0x8000u);
                }
            } else {
                n++;
                if (m != NULL)
                    (void)amq_exp_insert_cell(m, cap,
                                              (2 * b + ((c >> 15) & 1)) << 16 | (uint16_t)(c << 1));
            }
        }
    }
    return n;
}

/* Is the handle's state other than the file's (a doubling, or a stash
 * resize, in progress)? */
static int in_motion(const amq_expand *x)
{
    return x->old != NULL || x->prev_cap != 0;
}

/* The written stash: cells in use, and cells (grown as expandable.c's stash_put would). */
static void file_stash_shape(const amq_expand *x, uint64_t *n, uint64_t *cap)
{
    *n = x->stash_n;
    *cap = x->stash_cap;
    if (!in_motion(x))
        return;
    *n = file_cells(x, NULL, 0);
    while (*n > *cap / 2)
        *cap = *cap == 0 ? STASH_MIN : *cap * 2;
}

/* Lane 31 of bucket b from the cells of stash m. */
static uint16_t summary_of(const uint64_t *m, uint64_t cap, uint64_t b)
{
    run_walk w = run_of(m, cap, b);
    uint16_t bits = 0;
    uint64_t c;
    while ((c = run_next(&w)) != 0)
        bits |= stash_bits((uint16_t)c);
    return bits;
}

static int write_in_motion(const amq_expand *x, amq_sink *sink)
{
    const amq_expand *o = x->old;
    uint64_t n, cap, i, j, nb = UINT64_C(1) << x->q;
    uint64_t *m;
    amq_region mr;
    uint16_t bk[LANES];
    uint8_t buf[4096];
    size_t used = 0;
    int rc = AMQ_OK;

    file_stash_shape(x, &n, &cap);
    if (amq_region_alloc(&mr, &x->alloc, (size_t)(cap * 8)) != AMQ_OK)
        return AMQ_ENOMEM;
    m = (uint64_t *)(void *)mr.data;
    (void)file_cells(x, m, cap);
    for (j = 0; j < nb && rc == AMQ_OK; j++) {
        if ((j >> 1) < x->mig) {
            memcpy(bk, bucket_at(x, j), BUCKET_BYTES);
        } else {
            const uint16_t *src = bucket_at(o, j >> 1);
            memset(bk, 0, sizeof bk);
            amq_exp_split_half(src, (uint32_t)(j & 1), bk);
            if (src[META_LANE] != 0)
                bk[META_LANE] = summary_of(m, cap, j);
        }
        for (i = 0; i < LANES; i++)
            amq_store16(buf + used + 2 * i, bk[i]);
        if ((used += BUCKET_BYTES) == sizeof buf) {
            rc = amq_sink_write(sink, buf, used);
            used = 0;
        }
    }
    for (i = 0; i < cap && rc == AMQ_OK; i++) {
        amq_store64(buf + used, m[i]);
        if ((used += 8) == sizeof buf) {
            rc = amq_sink_write(sink, buf, used);
            used = 0;
        }
    }
    if (rc == AMQ_OK)
        rc = amq_sink_write(sink, buf, used);
    amq_region_free(&mr, &x->alloc);
    return rc;
}

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_expand *x;
    if (cfg->capacity == 0 || cfg->capacity > (UINT64_C(1) << 40))
        return amq_err(err, AMQ_ERANGE,
                       "an expandable filter's starting capacity must be 1 to 2^40 keys, not %llu",
                       (unsigned long long)cfg->capacity);
    if (!(cfg->fpp >= MIN_FPP && cfg->fpp <= MAX_FPP))
        return amq_err(err, AMQ_ERANGE,
                       "an expandable filter's false-positive target must be in [%g, %g], not %g"
                       " (its 15-bit fingerprints give about %.2g per generation)",
                       MIN_FPP, MAX_FPP, cfg->fpp, amq_exp_generation_rate());
    /* the first generation fills the table from empty (twice a generation's rate), and
     * a doubling adds one more: a target under that never lets the filter grow */
    if (3.0 * amq_exp_generation_rate() > cfg->fpp)
        return amq_err(err, AMQ_ERANGE,
                       "an expandable filter at false-positive target %g could never grow (its "
                       "first doubling takes the expected rate to about %.3g): give %.3g or "
                       "more",
                       cfg->fpp, 3.0 * amq_exp_generation_rate(),
                       3.0 * amq_exp_generation_rate());
    x = amq_exp_shell(cfg->alloc);
    if (x == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    amq_exp_set_hash(x, cfg->hash_algo, cfg->seed);
    x->q0 = amq_exp_q_for(cfg->capacity);
    amq_exp_set_q(x, x->q0);
    x->fpp = cfg->fpp;
    if (amq_region_alloc(&x->table, &x->alloc, (size_t)(BUCKET_BYTES << x->q)) != AMQ_OK) {
        amq_exp_free(x);
        return amq_err(err, AMQ_ENOMEM, "out of memory for an expandable filter of %llu bytes",
                       (unsigned long long)(BUCKET_BYTES << amq_exp_q_for(cfg->capacity)));
    }
    *impl = x;
    return AMQ_OK;
}

static void op_destroy(void *impl)
{
    amq_exp_free(impl);
}

/* x's copy of a doubling's old level o (mig is copied with x). */
static int level_copy(amq_expand *x, const amq_expand *o)
{
    amq_expand *c = amq_calloc(&x->alloc, sizeof *c);
    if (c == NULL)
        return AMQ_ENOMEM;
    *c = *o;
    c->alloc = x->alloc;
    memset(&c->table, 0, sizeof c->table);
    memset(&c->stash, 0, sizeof c->stash);
    memset(&c->stash_prev, 0, sizeof c->stash_prev);
    if (amq_region_copy(&c->table, &x->alloc, o->table.data, o->table.size) != AMQ_OK ||
        amq_region_copy(&c->stash, &x->alloc, o->stash.data, o->stash.size) != AMQ_OK ||
        (o->prev_cap != 0 &&
         amq_region_copy(&c->stash_prev, &x->alloc, o->stash_prev.data, o->stash_prev.size) !=
             AMQ_OK)) {
        amq_exp_level_free(c, &x->alloc);
        return AMQ_ENOMEM;
    }
    x->old = c;
    return AMQ_OK;
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    const amq_expand *src = impl;
    amq_expand *x = amq_exp_shell(alloc);
    amq_allocator keep;

    if (x == NULL)
        return AMQ_ENOMEM;
    keep = x->alloc;
    *x = *src;
    x->alloc = keep;
    x->old = NULL;
    memset(&x->table, 0, sizeof x->table);
    memset(&x->stash, 0, sizeof x->stash);
    memset(&x->stash_prev, 0, sizeof x->stash_prev);
    if (amq_region_copy(&x->table, &x->alloc, src->table.data, src->table.size) != AMQ_OK ||
        amq_region_copy(&x->stash, &x->alloc, src->stash.data, src->stash.size) != AMQ_OK ||
        (src->prev_cap != 0 && amq_region_copy(&x->stash_prev, &x->alloc, src->stash_prev.data,
                                               src->stash_prev.size) != AMQ_OK) ||
        (src->old != NULL && level_copy(x, src->old) != AMQ_OK)) {
        amq_exp_free(x);
        return AMQ_ENOMEM;
    }
    *out = x;
    return AMQ_OK;
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_expand *x = impl;
    *algo = x->hash_algo;
    *seed = x->seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    return amq_exp_add(impl, h.h1);
}

static int op_add_key(void *impl, const void *key, size_t len)
{
    return amq_exp_add_key(impl, key, len);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    return amq_exp_contains(impl, h);
}

static amq_contains_key_fn op_contains_key_of(const void *impl, const void **arg)
{
    (void)arg;
    return amq_exp_key_query(impl);
}

static int op_remove(void *impl, amq_hash128 h)
{
    return amq_exp_remove(impl, h);
}

static uint32_t op_refusal(const void *impl, amq_hash128 h)
{
    return amq_exp_refusal(impl, h.h1);
}

static int op_settle(void *impl)
{
    return amq_exp_settle(impl);
}

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return amq_exp_add_batch(impl, h, n, added);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    amq_exp_contains_batch(impl, h, n, out);
}

static uint64_t op_contains_batch_fixed(const void *impl, const void *keys, size_t key_len,
                                        size_t n, uint8_t *out)
{
    return amq_exp_contains_batch_fixed(impl, keys, key_len, n, out);
}

/* Back to the starting size, empty. */
static int op_clear(void *impl)
{
    amq_expand *x = impl;
    amq_region t;
    memset(&t, 0, sizeof t);
    if (amq_region_is_borrowed(&x->table))
        return AMQ_EREADONLY;
    if (amq_region_alloc(&t, &x->alloc, (size_t)(BUCKET_BYTES << x->q0)) != AMQ_OK)
        return AMQ_ENOMEM;
    amq_exp_level_free(x->old, &x->alloc);
    x->old = NULL;
    x->mig = UINT64_MAX;
    amq_region_free(&x->table, &x->alloc);
    amq_region_free(&x->stash, &x->alloc);
    amq_region_free(&x->stash_prev, &x->alloc);
    x->table = t;
    amq_exp_set_q(x, x->q0);
    x->stash_cap = x->stash_n = x->prev_cap = x->prev_n = x->prev_pos = 0;
    x->items = 0;
    x->total = 0;
    memset(x->cnt, 0, sizeof x->cnt);
    return AMQ_OK;
}

static int op_is_view(const void *impl)
{
    const amq_expand *x = impl;
    return amq_region_is_borrowed(&x->table);
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_expand *x = impl;
    st->items = x->items;
    st->capacity = amq_exp_max_entries(x);
    st->bytes = x->table.size + x->stash.size + x->stash_prev.size +
                (x->old != NULL
                     ? x->old->table.size + x->old->stash.size + x->old->stash_prev.size
                     : 0);
    st->bits = 0;
    st->hashes = 0;
    st->fpp_target = x->fpp;
    /* both from counts a loaded file gives: kept in [0, 1] */
    st->fpp_now = fmin(amq_exp_rate_of(x), 1.0);
    st->fill = fmin((double)amq_exp_entries(x) / ((double)DATA_LANES * ldexp(1.0, (int)x->q)), 1.0);
}

/* Generation g (0: the table as created) was added with 15 bits when the
 * table had 2^(q0 + g) buckets; it has 15 - (q - q0 - g) bits now, and
 * generations whose bits are gone share length 0. */
static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_expand *x = impl;
    uint32_t exp = x->q - x->q0, l;
    char name[40], n2[64];
    int rc;

    rc = AMQ_FIELDS(fn, ctx, AMQ_U64("buckets", UINT64_C(1) << x->q),
                    AMQ_U64("slots_per_bucket", DATA_LANES), AMQ_U64("fingerprint_bits", FP_BITS),
                    AMQ_U64("expansions", exp), AMQ_U64("start_buckets", UINT64_C(1) << x->q0),
                    AMQ_U64("entries", amq_exp_entries(x)),
                    AMQ_U64("stash_entries", x->stash_n + x->prev_n),
                    AMQ_U64("stash_cells", x->stash_cap), AMQ_F64("fpp_bound", amq_exp_rate_of(x)),
                    AMQ_F64("fpp_next_generation", amq_exp_rate_of(x) + amq_exp_generation_rate()));
    for (l = FP_BITS + 1; rc == 0 && l-- > 0;) {
        uint32_t age = FP_BITS - l; /* doublings since added */
        if (x->cnt[l] == 0 || age > exp)
            continue;
        if (l > 0)
            snprintf(name, sizeof name, "generation_%u", exp - age);
        else
            snprintf(name, sizeof name, "generations_0_to_%u", exp - age);
        snprintf(n2, sizeof n2, "%s_entries", name);
        rc = amq_field_u64(fn, ctx, n2, x->cnt[l]);
        snprintf(n2, sizeof n2, "%s_fingerprint_bits", name);
        if (rc == 0)
            rc = amq_field_u64(fn, ctx, n2, l);
        snprintf(n2, sizeof n2, "%s_fpp", name);
        if (rc == 0)
            rc = amq_field_f64(fn, ctx, n2,
                               ldexp((double)x->cnt[l], -(int)l) / ldexp(1.0, (int)x->q));
    }
    return rc;
}

/* ---- persistence -------------------------------------------------------------------------
 * Parameter block, 200 bytes little-endian (docs/file-format.md):
 *   0 u16 lane bits (16), 2 u16 lane 31's meaning (1: stash_bits' summary;
 *   0: a count of stashed cells, files written before it, read by a copy
 *   whose lane 31 is made from the cells), 4 u32 lanes per bucket (32), 8 u32 q, 12 u32 q0,
 *   16 f64 fpp target, 24 u64 stash cells, 32 u64 stash cells in use,
 *   40 u64 reserved (0), 48 + 8 L u64 entries of L fingerprint bits (L = 0..15),
 *   176 u64 reserved (0), 184 u64 reserved (0), 192 u64 reserved (0).
 * The payload is 2^q buckets of 32 u16 lanes, then the stash's u64 cells.
 */
#define EXP_PARAMS_SIZE 200
#define LANE31_COUNT 0   /* lane 31 counted the bucket's stashed cells */
#define LANE31_SUMMARY 1 /* lane 31 is the union of their stash_bits */

static size_t op_params_size(const void *impl)
{
    (void)impl;
    return EXP_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_expand *x = impl;
    uint64_t stash_n, stash_cap;
    uint32_t l;
    file_stash_shape(x, &stash_n, &stash_cap);
    memset(out, 0, EXP_PARAMS_SIZE);
    amq_store16(out, 16);
    amq_store16(out + 2, LANE31_SUMMARY);
    amq_store32(out + 4, LANES);
    amq_store32(out + 8, x->q);
    amq_store32(out + 12, x->q0);
    amq_storef64(out + 16, x->fpp);
    amq_store64(out + 24, stash_cap);
    amq_store64(out + 32, stash_n);
    for (l = 0; l <= FP_BITS; l++)
        amq_store64(out + 48 + 8 * l, x->cnt[l]);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_expand *x = impl;
    uint64_t stash_n, stash_cap;
    file_stash_shape(x, &stash_n, &stash_cap);
    return (uint64_t)x->table.size + stash_cap * 8;
}

/* An older file's lane 31 (a count) made the summary of the cells there;
 * cells of buckets past the table are ignored, as a query would. */
static void summaries_from_cells(amq_expand *x)
{
    const uint64_t nb = UINT64_C(1) << x->q;
    uint64_t i, c;
    for (i = 0; i < nb; i++)
        bucket_at(x, i)[META_LANE] = 0;
    for (i = 0; i < x->stash_cap; i++)
        if ((c = cells(x)[i]) != 0) /* check_stash: its bucket is in the table, its entry not 0 */
            bucket_at(x, c >> 16)[META_LANE] |= stash_bits((uint16_t)c);
}

/* Every stashed entry is one a query finds: its cell lies in the probe run
 * of its bucket's home (no empty cell between them), and its bucket's lane
 * 31 has its bits (a query reads the stash only when lane 31 says so).
 * Checksums catch damage; this catches a file written wrong, whose stashed
 * keys would otherwise answer absent.  One pass over the stash and one
 * table read per cell (the stash is ~1 % of the entries). */
static int check_stash(const amq_expand *x, const uint8_t *payload, uint64_t table_bytes,
                       uint32_t lane31, amq_errinfo *err)
{
    const uint8_t *cs = payload + table_bytes;
    const uint64_t cap = x->stash_cap, nb = UINT64_C(1) << x->q;
    uint64_t e, k, p, c, b, home, start = 1;
    uint16_t meta;

    if (cap == 0 || x->stash_n == 0)
        return AMQ_OK;
    for (e = 0; amq_load64(cs + 8 * e) != 0; e++) /* an empty cell: at most half are used */
        ;
    for (k = 1; k < cap; k++) {
        p = (e + k) & (cap - 1);
        if ((c = amq_load64(cs + 8 * p)) == 0) {
            start = k + 1; /* the next run starts after this empty cell */
            continue;
        }
        b = c >> 16;
        if (b >= nb || (uint16_t)c == 0)
            return amq_err(err, AMQ_ECORRUPT,
                           "expandable stash cell %llu holds bucket %llu of %llu, entry %u",
                           (unsigned long long)p, (unsigned long long)b,
                           (unsigned long long)nb, (unsigned)(uint16_t)c);
        home = (cell_pos(b, cap) - e) & (cap - 1); /* as a step from e */
        if (home < start || home > k) /* not in this run, or after the cell */
            return amq_err(err, AMQ_ECORRUPT,
                           "expandable stash cell %llu (bucket %llu) is not in its home's probe "
                           "run: a query would not find it",
                           (unsigned long long)p, (unsigned long long)b);
        meta = amq_load16(payload + b * BUCKET_BYTES + 2 * META_LANE);
        if (lane31 == LANE31_SUMMARY && (stash_bits((uint16_t)c) & ~meta) != 0)
            return amq_err(err, AMQ_ECORRUPT,
                           "expandable bucket %llu's lane 31 (0x%04x) leaves out its stashed "
                           "entry 0x%04x: a query would not read it",
                           (unsigned long long)b, (unsigned)meta, (unsigned)(uint16_t)c);
    }
    return AMQ_OK;
}

static int little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_expand *x = impl;
    uint8_t buf[4096];
    size_t off, len, i;
    int rc;

    if (in_motion(x))
        return write_in_motion(x, sink);
    if (little_endian()) {
        rc = amq_sink_write(sink, x->table.data, x->table.size);
        return rc != AMQ_OK ? rc : amq_sink_write(sink, x->stash.data, (size_t)(x->stash_cap * 8));
    }
    for (off = 0; off < x->table.size; off += len) {
        len = x->table.size - off < sizeof buf ? x->table.size - off : sizeof buf;
        for (i = 0; i < len; i += 2)
            amq_store16(buf + i, ((const uint16_t *)(const void *)x->table.data)[(off + i) / 2]);
        if ((rc = amq_sink_write(sink, buf, len)) != AMQ_OK)
            return rc;
    }
    for (i = 0; i < x->stash_cap; i++) {
        amq_store64(buf, cells(x)[i]);
        if ((rc = amq_sink_write(sink, buf, 8)) != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int op_load(const amq_load_args *args, void **impl, amq_errinfo *err)
{
    const uint8_t *p = args->params;
    amq_expand *x;
    uint64_t table_bytes, stash_bytes, sum = 0, i, used;
    uint32_t l, lane31;
    int rc;

    if (args->params_len != EXP_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "expandable parameter block is %zu bytes, expected %d",
                       args->params_len, EXP_PARAMS_SIZE);
    if (amq_load16(p) != 16 || amq_load32(p + 4) != LANES || amq_load16(p + 2) > LANE31_SUMMARY)
        return amq_err(err, AMQ_EVERSION,
                       "expandable filter with %u-bit lanes, %u per bucket, lane 31 of kind %u, "
                       "is not supported",
                       amq_load16(p), amq_load32(p + 4), amq_load16(p + 2));
    lane31 = amq_load16(p + 2);
    x = amq_exp_shell(args->alloc);
    if (x == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    amq_exp_set_hash(x, args->hash_algo, args->seed);
    amq_exp_set_q(x, amq_load32(p + 8) <= MAX_Q ? amq_load32(p + 8) : 0);
    x->q0 = amq_load32(p + 12);
    x->fpp = amq_loadf64(p + 16);
    x->stash_cap = amq_load64(p + 24);
    x->stash_n = amq_load64(p + 32);
    x->items = args->items;
    for (l = 0; l <= FP_BITS; l++) {
        x->cnt[l] = amq_load64(p + 48 + 8 * l);
        /* each count is at most 31 * 2^48 + 2^40: the sum cannot wrap */
        if (x->cnt[l] > (UINT64_C(1) << 54))
            sum = UINT64_MAX;
        else if (sum != UINT64_MAX)
            sum += x->cnt[l];
    }
    if (x->q < 1 || x->q > MAX_Q || x->q0 < 1 || x->q0 > x->q ||
        !(x->fpp >= MIN_FPP && x->fpp <= MAX_FPP) ||
        (x->stash_cap != 0 &&
         (x->stash_cap < STASH_MIN || (x->stash_cap & (x->stash_cap - 1)) != 0 ||
          x->stash_cap > (UINT64_C(1) << 40))) ||
        x->stash_n > x->stash_cap / 2 || amq_load64(p + 40) != 0 || amq_load64(p + 176) != 0 ||
        amq_load64(p + 184) != 0 || amq_load64(p + 192) != 0 || sum == UINT64_MAX ||
        sum > (uint64_t)DATA_LANES * (UINT64_C(1) << x->q) + x->stash_cap) {
        amq_err(err, AMQ_ECORRUPT,
                "invalid expandable parameters (q %u, start q %u, fpp %g, stash %llu of %llu"
                " cells, %llu entries)",
                x->q, x->q0, x->fpp, (unsigned long long)x->stash_n,
                (unsigned long long)x->stash_cap, (unsigned long long)sum);
        amq_exp_free(x);
        return AMQ_ECORRUPT;
    }
    x->total = sum;
    table_bytes = BUCKET_BYTES << x->q; /* q <= 48: at most 2^54 */
    stash_bytes = x->stash_cap * 8;               /* at most 2^43 */
    if (args->payload_len != table_bytes + stash_bytes) {
        amq_err(err, AMQ_ECORRUPT, "expandable payload is %llu bytes, 2^%u buckets and %llu"
                " stash cells need %llu",
                (unsigned long long)args->payload_len, x->q, (unsigned long long)x->stash_cap,
                (unsigned long long)(table_bytes + stash_bytes));
        amq_exp_free(x);
        return AMQ_ECORRUPT;
    }
    if (table_bytes > SIZE_MAX / 2) {
        amq_exp_free(x);
        return amq_err(err, AMQ_EOVERFLOW, "expandable table of %llu bytes is too large here",
                       (unsigned long long)table_bytes);
    }
    /* a count below the cells would let the stash fill past half, where a
     * later move could find no free cell for one (the stash is ~1 % of the
     * entries: counting it is cheap beside the table) */
    for (i = 0, used = 0; i < x->stash_cap; i++)
        used += amq_load64(args->payload + table_bytes + 8 * i) != 0;
    if (used != x->stash_n) {
        uint64_t said = x->stash_n;
        amq_exp_free(x);
        return amq_err(err, AMQ_ECORRUPT, "expandable stash holds %llu cells, its count says "
                       "%llu", (unsigned long long)used, (unsigned long long)said);
    }
    if ((rc = check_stash(x, args->payload, table_bytes, lane31, err)) != AMQ_OK) {
        amq_exp_free(x);
        return rc;
    }
    if (args->borrow && ((uintptr_t)args->payload & 63) == 0 && little_endian() &&
        lane31 == LANE31_SUMMARY) {
        amq_region_borrow(&x->table, args->payload, (size_t)table_bytes);
        amq_region_borrow(&x->stash, args->payload + table_bytes, (size_t)stash_bytes);
    } else {
        if (amq_region_alloc(&x->table, &x->alloc, (size_t)table_bytes) != AMQ_OK ||
            amq_region_alloc(&x->stash, &x->alloc, (size_t)stash_bytes) != AMQ_OK) {
            amq_exp_free(x);
            return amq_err(err, AMQ_ENOMEM, "out of memory");
        }
        for (i = 0; i < table_bytes; i += 2)
            ((uint16_t *)(void *)x->table.data)[i / 2] = amq_load16(args->payload + i);
        for (i = 0; i < x->stash_cap; i++)
            cells(x)[i] = amq_load64(args->payload + table_bytes + 8 * i);
        if (lane31 == LANE31_COUNT)
            summaries_from_cells(x);
    }
    *impl = x;
    return AMQ_OK;
}

const amq_kind_ops amq_expandable_ops = {
    .kind = AMQ_KIND_EXPANDABLE,
    .name = "expandable",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .remove = op_remove,
    .add_key = op_add_key,
    .add_batch = op_add_batch,
    .refusal = op_refusal,
    .contains_batch = op_contains_batch,
    .contains_batch_fixed = op_contains_batch_fixed,
    .contains_key_of = op_contains_key_of,
    .settle = op_settle,
};
