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

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    const amq_qf *src = impl;
    amq_qf *x = amq_qf_shell(alloc);
    amq_allocator keep;
    if (x == NULL)
        return AMQ_ENOMEM;
    keep = x->alloc;
    *x = *src;
    x->alloc = keep;
    x->deep = NULL;
    x->deep_cap = 0;
    x->deep_owned = 0;
    memset(&x->table, 0, sizeof x->table);
    x->t = NULL;
    if (amq_region_copy(&x->table, &x->alloc, src->table.data, src->table.size) != AMQ_OK) {
        amq_qf_free(x);
        return AMQ_ENOMEM;
    }
    x->t = x->table.data;
    if (src->ndeep > 0) {
        if ((x->deep = amq_malloc(&x->alloc, 2 * src->ndeep * sizeof *x->deep)) == NULL) {
            amq_qf_free(x);
            return AMQ_ENOMEM;
        }
        memcpy(x->deep, src->deep, 2 * src->ndeep * sizeof *x->deep);
        x->deep_cap = src->ndeep;
        x->deep_owned = 1;
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
    x->pend_sig = 0;
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
 * Parameter block, 48 bytes little-endian (docs/file-format.md, "Kind 12"):
 *   0 u16 entry bits (16), 2 u16 slots per line (28), 4 u32 reserved (0),
 *   8 f64 fpp target, 16 u64 slots m, 24 u64 start slots, 32 u64 deep
 *   ranges, 40 u64 growths.
 * Payload: 0 u32 pending cells in use (a bit each), 4 u32 the next cell,
 * 8 u64 x 16 pending keys' h1, 136 the deep list (u64 lo, hi pairs), zeros
 * to a multiple of 64 bytes, then the table: lines of 64 bytes (u64 word:
 * offset, occupied bits, run-end bits; 28 u16 entries).
 */
#define QF_PARAMS_SIZE 48
#define QF_PEND_BYTES (8u + 8u * QF_PENDING)

static uint64_t head_bytes(uint64_t ndeep)
{
    return (QF_PEND_BYTES + 16u * ndeep + 63u) / 64u * 64u;
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
    amq_storef64(out + 8, x->fpp);
    amq_store64(out + 16, x->m);
    amq_store64(out + 24, x->m0);
    amq_store64(out + 32, x->ndeep);
    amq_store64(out + 40, x->grows);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_qf *x = impl;
    return head_bytes(x->ndeep) + x->lines * 64u;
}

static int little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_qf *x = impl;
    uint8_t buf[4096];
    uint64_t i, used = 0, l;
    int rc;
    amq_store32(buf, x->pend_used);
    amq_store32(buf + 4, x->pend_next);
    for (i = 0; i < QF_PENDING; i++)
        amq_store64(buf + 8 + 8 * i, x->pend[i]);
    used = QF_PEND_BYTES;
    for (i = 0; i < 2 * x->ndeep; i++) {
        amq_store64(buf + used, x->deep[i]);
        if ((used += 8) == sizeof buf) {
            if ((rc = amq_sink_write(sink, buf, used)) != AMQ_OK)
                return rc;
            used = 0;
        }
    }
    memset(buf + used, 0, (size_t)((64u - used % 64u) % 64u));
    used += (64u - used % 64u) % 64u;
    if ((rc = amq_sink_write(sink, buf, used)) != AMQ_OK)
        return rc;
    if (little_endian())
        return amq_sink_write(sink, x->t, (size_t)(x->lines * 64u));
    for (l = 0; l < x->lines; l++) {
        const uint8_t *line = x->t + l * 64u;
        amq_store64(buf, *(const uint64_t *)(const void *)line);
        for (i = 0; i < QF_SLOTS; i++)
            amq_store16(buf + 8 + 2 * i, ((const uint16_t *)(const void *)(line + 8))[i]);
        if ((rc = amq_sink_write(sink, buf, 64)) != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int op_load(const amq_load_args *args, void **impl, amq_errinfo *err)
{
    const uint8_t *p = args->params, *pl = args->payload;
    char msg[160];
    amq_qf *x;
    uint64_t m, m0, ndeep, hb, i, l;
    double fpp;
    int rc;
    if (args->params_len != QF_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "quotient parameter block is %zu bytes, expected %d",
                       args->params_len, QF_PARAMS_SIZE);
    if (amq_load16(p) != 16 || amq_load16(p + 2) != QF_SLOTS || amq_load32(p + 4) != 0)
        return amq_err(err, AMQ_EVERSION,
                       "quotient filter of %u-bit entries, %u slots a line, flags %u, is not "
                       "supported",
                       amq_load16(p), amq_load16(p + 2), amq_load32(p + 4));
    fpp = amq_loadf64(p + 8);
    m = amq_load64(p + 16);
    m0 = amq_load64(p + 24);
    ndeep = amq_load64(p + 32);
    if (m < QF_MIN_SLOTS || m > QF_MAX_SLOTS || m0 < QF_MIN_SLOTS || m0 > m ||
        !(fpp >= QF_MIN_FPP && fpp <= QF_MAX_FPP) || ndeep > (UINT64_C(1) << 40))
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid quotient parameters (%llu slots, start %llu, fpp %g, %llu deep "
                       "ranges)",
                       (unsigned long long)m, (unsigned long long)m0, fpp,
                       (unsigned long long)ndeep);
    hb = head_bytes(ndeep);
    if (args->payload_len != hb + amq_qf_lines_for(m) * 64u)
        return amq_err(err, AMQ_ECORRUPT,
                       "quotient payload is %llu bytes, %llu slots and %llu deep ranges need %llu",
                       (unsigned long long)args->payload_len, (unsigned long long)m,
                       (unsigned long long)ndeep,
                       (unsigned long long)(hb + amq_qf_lines_for(m) * 64u));
    if (amq_qf_lines_for(m) * 64u > SIZE_MAX / 2)
        return amq_err(err, AMQ_EOVERFLOW, "quotient table of %llu bytes is too large here",
                       (unsigned long long)(amq_qf_lines_for(m) * 64u));
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
    for (i = 0; i < QF_PENDING; i++)
        x->pend_sig |= (uint64_t)((x->pend_used >> i) & 1u) << (x->pend[i] >> 58);
    for (i = QF_PEND_BYTES + 16u * ndeep; i < hb; i++)
        if (pl[i] != 0) {
            amq_qf_free(x);
            return amq_err(err, AMQ_ECORRUPT, "quotient payload: byte %llu of the padding is "
                           "not 0", (unsigned long long)i);
        }
    x->ndeep = ndeep;
    if (args->borrow && ((uintptr_t)pl & 63) == 0 && little_endian()) {
        x->deep = (uint64_t *)(uintptr_t)(pl + QF_PEND_BYTES);
        amq_region_borrow(&x->table, pl + hb, (size_t)(x->lines * 64u));
        x->t = x->table.data;
    } else {
        if (ndeep > 0) {
            if ((x->deep = amq_malloc(&x->alloc, (size_t)(2 * ndeep * sizeof *x->deep))) == NULL) {
                amq_qf_free(x);
                return amq_err(err, AMQ_ENOMEM, "out of memory");
            }
            x->deep_cap = ndeep;
            x->deep_owned = 1;
            for (i = 0; i < 2 * ndeep; i++)
                x->deep[i] = amq_load64(pl + QF_PEND_BYTES + 8 * i);
        }
        if (amq_qf_alloc_table(x) != AMQ_OK) {
            amq_qf_free(x);
            return amq_err(err, AMQ_ENOMEM, "out of memory");
        }
        if (little_endian())
            memcpy(x->t, pl + hb, (size_t)(x->lines * 64u));
        else
            for (l = 0; l < x->lines; l++) {
                uint8_t *line = x->t + l * 64u;
                *(uint64_t *)(void *)line = amq_load64(pl + hb + l * 64u);
                for (i = 0; i < QF_SLOTS; i++)
                    ((uint16_t *)(void *)(line + 8))[i] = amq_load16(pl + hb + l * 64u + 8 + 2 * i);
            }
    }
    if ((rc = amq_qf_validate(x, msg, sizeof msg)) != AMQ_OK) {
        amq_qf_free(x);
        return rc == AMQ_ECORRUPT ? amq_err(err, rc, "%s", msg) : amq_err(err, rc, "out of memory");
    }
    amq_qf_count(x, x->cnt);
    for (l = 0, x->entries = 0; l < 16; l++)
        x->entries += x->cnt[l];
    *impl = x;
    return AMQ_OK;
}

const amq_kind_ops amq_quotient_ops = {
    .kind = AMQ_KIND_QUOTIENT,
    .name = "quotient",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .contains_batch_fixed = op_contains_batch_fixed,
};
