/*
 * pocket_kind.c - the pocket filter (pocket_internal.h) as a kind of the
 * generic handle (kind.h): the adapter and the codec.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/endian.h"
#include "common/error.h"
#include "pocket_internal.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_pk *x;
    const uint32_t eb = cfg->fingerprint_bits ? cfg->fingerprint_bits : PK_ENTRY_BITS;
    if (cfg->capacity == 0 || cfg->capacity > PK_START_MAX)
        return amq_err(err, AMQ_ERANGE,
                       "a pocket filter's starting capacity must be 1 to 2^30 keys, not %llu",
                       (unsigned long long)cfg->capacity);
    if (!(cfg->fpp >= PK_MIN_FPP && cfg->fpp <= PK_MAX_FPP))
        return amq_err(err, AMQ_ERANGE,
                       "a pocket filter's false-positive target must be in [%g, %g], not %g"
                       " (its 15-bit entries give about 0.05 %% at 1e8 keys grown from 1,000)",
                       PK_MIN_FPP, PK_MAX_FPP, cfg->fpp);
    if (eb < PK_MIN_ENTRY_BITS || eb > PK_ENTRY_BITS)
        return amq_err(err, AMQ_ERANGE,
                       "a pocket filter's entries hold %u to %u bits (fingerprint_bits), not %u",
                       PK_MIN_ENTRY_BITS, PK_ENTRY_BITS, eb);
    if ((x = amq_pk_shell(cfg->alloc)) == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    amq_pk_set_hash(x, cfg->hash_algo, cfg->seed);
    x->fpp = cfg->fpp;
    x->eb = eb;
    x->unit = ldexp(1.0, -(int)eb);
    if (amq_pk_init(x, cfg->capacity < PK_START_MIN ? PK_START_MIN : cfg->capacity) != AMQ_OK) {
        amq_pk_free(x);
        return amq_err(err, AMQ_ENOMEM, "out of memory for a pocket filter");
    }
    *impl = x;
    return AMQ_OK;
}

static void op_destroy(void *impl)
{
    amq_pk_free(impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    const amq_pk *src = impl;
    amq_pk *x = amq_pk_shell(alloc);
    amq_allocator keep;
    const struct amq_pk_isa *isa;
    uint32_t i, n = 1u << src->d;
    if (x == NULL)
        return AMQ_ENOMEM;
    keep = x->alloc;
    isa = x->isa;
    *x = *src;
    x->alloc = keep;
    x->isa = isa;
    x->view = 0;
    x->seg = NULL;
    x->d = 0;
    x->scr = NULL; /* src's own */
    x->scr_cap = 0;
    x->gscr = NULL;
    x->gscr_len = 0;
    if ((x->seg = amq_calloc(&x->alloc, n * sizeof *x->seg)) == NULL) {
        amq_pk_free(x);
        return AMQ_ENOMEM;
    }
    x->d = src->d;
    for (i = 0; i < n; i++)
        if (amq_pk_seg_copy(x, &src->seg[i], &x->seg[i]) != AMQ_OK) {
            amq_pk_free(x);
            return AMQ_ENOMEM;
        }
    *out = x;
    return AMQ_OK;
}

static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_pk *x = impl;
    *algo = x->hash_algo;
    *seed = x->seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    amq_pk *x = impl;
    return x->isa->add(x, h.h1);
}

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    amq_pk *x = impl;
    return x->isa->add_batch(x, h, n, added);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    const amq_pk *x = impl;
    return x->isa->contains(x, h.h1);
}

static int op_add_key(void *impl, const void *key, size_t len)
{
    amq_pk *x = impl;
    return x->isa->add_key(x, key, len);
}

static amq_contains_key_fn op_contains_key_of(const void *impl, const void **arg)
{
    const amq_pk *x = impl;
    (void)arg;
    return x->isa->contains_key;
}

static int op_settle(void *impl)
{
    amq_pk *x = impl;
    return x->isa->settle(x);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    const amq_pk *x = impl;
    x->isa->contains_batch(x, h, n, out);
}

/* Back to the starting size, empty. */
static int op_clear(void *impl)
{
    amq_pk *x = impl;
    amq_pk fresh;
    if (x->view)
        return AMQ_EREADONLY;
    fresh = *x;
    fresh.seg = NULL;
    fresh.d = 0;
    if (amq_pk_init(&fresh, x->start) != AMQ_OK)
        return AMQ_ENOMEM;
    amq_pk_free_segments(x);
    x->seg = fresh.seg;
    x->d = 0;
    x->items = x->growths = x->splits = 0;
    x->pend_used = x->pend_next = 0;
    memset(x->pend, 0, sizeof x->pend);
    pk_pend_resign(x);
    return AMQ_OK;
}

static int op_is_view(const void *impl)
{
    const amq_pk *x = impl;
    return x->view;
}

/* Its tables (bins, spare, deep ranges): what grows with its keys, the same after a
 * reload.  Not counted: the handle and the segments' records (at most 256 of 216 bytes:
 * fixed, as other kinds' handles), room for more deep ranges, the list spares are
 * rebuilt from (twice the largest spare's entries, 16 bytes each) and the pages a growth in
 * place keeps for its lists, which describe's scratch_bytes counts (0.93 MB at 1e8 keys,
 * 0.34 % of the tables: docs/expandable.md). */
static uint64_t bytes_of(const amq_pk *x)
{
    uint64_t n = 0;
    uint32_t i;
    for (i = 0; i < 1u << x->d; i++)
        n += amq_pk_seg_bytes(&x->seg[i]);
    return n;
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_pk *x = impl;
    uint64_t cap = 0, ent = 0, slots = 0;
    uint32_t i;
    for (i = 0; i < 1u << x->d; i++) {
        cap += x->seg[i].limit;
        ent += x->seg[i].entries;
        slots += x->seg[i].nb * PK_SLOTS;
    }
    st->items = x->items;
    st->capacity = cap;
    st->bytes = bytes_of(x);
    st->bits = 0;
    st->hashes = 0;
    st->fpp_target = x->fpp;
    st->fpp_now = fmin(amq_pk_rate(x), 1.0);
    st->fill = fmin((double)ent / (double)slots, 1.0);
}

/* What the filter keeps beside its tables for the next rebuild of a spare (its list) and the
 * next growth in place (the lists' mapping: its resident pages only). */
static uint64_t scratch_bytes(const amq_pk *x)
{
    uint64_t n = x->scr_cap * sizeof *x->scr;
    const long ps = sysconf(_SC_PAGESIZE);
    const size_t page = ps > 0 ? (size_t)ps : 4096u, pages = x->gscr_len / page;
    unsigned char v[256];
    size_t at, k, m;
    for (at = 0; x->gscr != NULL && at < pages; at += m) {
        m = pages - at < sizeof v ? pages - at : sizeof v;
        if (mincore((uint8_t *)x->gscr + at * page, m * page, v) != 0)
            return n + (uint64_t)x->gscr_len; /* (unknown: all of it) */
        for (k = 0; k < m; k++)
            n += (v[k] & 1u) ? page : 0u;
    }
    return n;
}

/* Entries of L bits were added about eb - L doublings of the keys ago (an entry gives up a
 * bit each time its table's level grows); each length's share of the rate. */
static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_pk *x = impl;
    uint64_t bins = 0, ent = 0, spn = 0, ndeep = 0, cnt[16];
    double share[16];
    char name[48];
    uint32_t i, l;
    int rc;
    for (i = 0; i < 1u << x->d; i++) {
        bins += x->seg[i].nb;
        ent += x->seg[i].entries;
        spn += x->seg[i].spn;
        ndeep += x->seg[i].ndeep;
    }
    rc = AMQ_FIELDS(fn, ctx, AMQ_U64("segments", 1u << x->d), AMQ_U64("bins", bins),
                    AMQ_U64("slots_per_bin", PK_SLOTS), AMQ_U64("buckets_per_bin", PK_BUCKETS),
                    AMQ_U64("entry_bits", x->eb), AMQ_U64("start_keys", x->start),
                    AMQ_U64("expansions", x->growths), AMQ_U64("splits", x->splits),
                    AMQ_F64("growth", PK_GROWTH), AMQ_F64("max_load", PK_LOAD),
                    AMQ_U64("entries", ent), AMQ_U64("spare_entries", spn),
                    AMQ_U64("deep_ranges", ndeep), AMQ_F64("fpp_bound", amq_pk_rate(x)),
                    AMQ_U64("scratch_bytes", scratch_bytes(x)));
    amq_pk_lengths(x, cnt, share);
    for (l = 16; rc == 0 && l-- > 1;) {
        if (cnt[l] == 0)
            continue;
        snprintf(name, sizeof name, "entries_of_%u_bits", l);
        rc = amq_field_u64(fn, ctx, name, cnt[l]);
        snprintf(name, sizeof name, "fpp_of_%u_bit_entries", l);
        if (rc == 0)
            rc = amq_field_f64(fn, ctx, name, share[l]);
    }
    return rc;
}

/* ---- persistence -------------------------------------------------------------------------
 * Parameter block, 64 bytes little-endian (docs/file-format.md, "Kind 13"):
 *   0 u16 entry bits (5 to 15), 2 u16 slots a bin (28), 4 u16 buckets a bin (32), 6 u16 d
 *   (2^d segments, d <= 8), 8 f64 fpp target, 16 u64 start keys, 24 u64 growths, 32 u64
 *   splits, 40..63 zero.
 * Payload: the pending keys (192 bytes: u32 cells in use, a bit each; u32 the next cell; u64
 * 0; 16 u64 keys' h1; zeros), 2^d segment records of 64 bytes (u64 bins, u32 epoch, u32 spare distance, u64
 * spare capacity, u64 spare entries, u64 deep ranges, u64 deep width, u64 spare slots, u64 0),
 * then each segment's bins (64 bytes each: u64 map, 28 u16 entries), spare slots (u32 each;
 * zeros to a multiple of 64 bytes) and deep ranges (u64 lo, hi; zeros to a multiple of 64).
 */
#define PK_PARAMS_SIZE 64
#define PK_REC 64u
#define PK_PEND_BYTES 192u

static int little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static uint64_t pad64(uint64_t n)
{
    return (n + 63u) & ~UINT64_C(63);
}

static uint64_t seg_payload(const pk_seg *s)
{
    return s->nb * 64u + pad64(s->splen * 4u) + pad64(s->ndeep * 16u);
}

static size_t op_params_size(const void *impl)
{
    (void)impl;
    return PK_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_pk *x = impl;
    memset(out, 0, PK_PARAMS_SIZE);
    amq_store16(out, (uint16_t)x->eb);
    amq_store16(out + 2, PK_SLOTS);
    amq_store16(out + 4, PK_BUCKETS);
    amq_store16(out + 6, (uint16_t)x->d);
    amq_storef64(out + 8, x->fpp);
    amq_store64(out + 16, x->start);
    amq_store64(out + 24, x->growths);
    amq_store64(out + 32, x->splits);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_pk *x = impl;
    uint64_t n = PK_PEND_BYTES + ((uint64_t)PK_REC << x->d);
    uint32_t i;
    for (i = 0; i < 1u << x->d; i++)
        n += seg_payload(&x->seg[i]);
    return n;
}

static const uint8_t zeros[64];

/* n bytes of words of `size` bytes at p, little-endian, then zeros to a multiple of 64. */
static int put_words(amq_sink *sink, const void *p, uint64_t n, uint32_t size)
{
    uint8_t buf[256];
    const uint8_t *src = p;
    uint64_t i = 0;
    int rc;
    if (little_endian()) {
        if ((rc = amq_sink_write(sink, p, (size_t)n)) != AMQ_OK)
            return rc;
    } else {
        while (i < n) {
            size_t c = 0;
            for (; c < sizeof buf && i < n; c += size, i += size) {
                if (size == 2)
                    amq_store16(buf + c, *(const uint16_t *)(const void *)(src + i));
                else if (size == 4)
                    amq_store32(buf + c, *(const uint32_t *)(const void *)(src + i));
                else
                    amq_store64(buf + c, *(const uint64_t *)(const void *)(src + i));
            }
            if ((rc = amq_sink_write(sink, buf, c)) != AMQ_OK)
                return rc;
        }
    }
    return amq_sink_write(sink, zeros, (size_t)(pad64(n) - n));
}

static int put_bins(amq_sink *sink, const pk_bin *b, uint64_t nb)
{
    uint8_t line[64];
    uint64_t i;
    uint32_t e;
    int rc;
    if (little_endian())
        return amq_sink_write(sink, b, (size_t)nb * 64u);
    for (i = 0; i < nb; i++) {
        amq_store64(line, b[i].map);
        for (e = 0; e < PK_SLOTS; e++)
            amq_store16(line + 8 + 2 * e, b[i].e[e]);
        if ((rc = amq_sink_write(sink, line, 64)) != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_pk *x = impl;
    uint8_t rec[PK_PEND_BYTES];
    uint32_t i;
    int rc;
    memset(rec, 0, sizeof rec);
    amq_store32(rec, x->pend_used);
    amq_store32(rec + 4, x->pend_next);
    for (i = 0; i < PK_PENDING; i++)
        amq_store64(rec + 16 + 8 * i, x->pend[i]);
    if ((rc = amq_sink_write(sink, rec, PK_PEND_BYTES)) != AMQ_OK)
        return rc;
    for (i = 0; i < 1u << x->d; i++) {
        const pk_seg *s = &x->seg[i];
        memset(rec, 0, sizeof rec);
        amq_store64(rec, s->nb);
        amq_store32(rec + 8, s->epoch);
        amq_store32(rec + 12, s->spd);
        amq_store64(rec + 16, s->spcap);
        amq_store64(rec + 24, s->spn);
        amq_store64(rec + 32, s->ndeep);
        amq_store64(rec + 40, s->deep_width);
        amq_store64(rec + 48, s->splen);
        if ((rc = amq_sink_write(sink, rec, PK_REC)) != AMQ_OK)
            return rc;
    }
    for (i = 0; i < 1u << x->d; i++) {
        const pk_seg *s = &x->seg[i];
        if ((rc = put_bins(sink, s->b, s->nb)) != AMQ_OK ||
            (rc = put_words(sink, s->sp, s->splen * 4u, 4)) != AMQ_OK ||
            (rc = put_words(sink, s->deep, s->ndeep * 16u, 8)) != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

/* Segment s's arrays from the payload at off: pointers into it (borrow), or copies. */
static int take_seg(amq_pk *x, pk_seg *s, const uint8_t *src, int borrow)
{
    const uint64_t bb = s->nb * 64u, sb = s->splen * 4u, db = s->ndeep * 16u;
    uint64_t i;
    if (borrow) {
        amq_region_borrow(&s->region, src, (size_t)bb);
        s->b = (pk_bin *)(void *)s->region.data;
        s->sp = s->splen ? (uint32_t *)(void *)(uintptr_t)(src + bb) : NULL;
        s->deep = s->ndeep ? (uint64_t(*)[2])(void *)(uintptr_t)(src + bb + pad64(sb)) : NULL;
        return AMQ_OK;
    }
    if (amq_region_alloc(&s->region, &x->alloc, (size_t)bb) != AMQ_OK)
        return AMQ_ENOMEM;
    s->b = (pk_bin *)(void *)s->region.data;
    if (s->splen && (s->sp = amq_malloc(&x->alloc, (size_t)sb)) == NULL)
        return AMQ_ENOMEM;
    if (s->ndeep) {
        if ((s->deep = amq_malloc(&x->alloc, (size_t)db)) == NULL)
            return AMQ_ENOMEM;
        s->deepcap = s->ndeep;
    }
    for (i = 0; i < s->nb; i++) {
        uint32_t e;
        s->b[i].map = amq_load64(src + 64u * i);
        for (e = 0; e < PK_SLOTS; e++)
            s->b[i].e[e] = amq_load16(src + 64u * i + 8u + 2u * e);
    }
    for (i = 0; i < s->splen; i++)
        s->sp[i] = amq_load32(src + bb + 4u * i);
    for (i = 0; i < s->ndeep; i++) {
        s->deep[i][0] = amq_load64(src + bb + pad64(sb) + 16u * i);
        s->deep[i][1] = amq_load64(src + bb + pad64(sb) + 16u * i + 8u);
    }
    return AMQ_OK;
}

/* Zero bytes at p from n to pad64(n)? */
static int padded(const uint8_t *p, uint64_t n)
{
    uint64_t i;
    for (i = n; i < pad64(n); i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

static int op_load(const amq_load_args *args, void **impl, amq_errinfo *err)
{
    const uint8_t *p = args->params, *pl = args->payload;
    amq_pk *x;
    uint32_t eb, d, i;
    uint64_t start, off, need, bins = 0;
    double fpp;
    int borrow, rc;
    const char *why;
    if (args->params_len != PK_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "pocket parameter block is %zu bytes, expected %d",
                       args->params_len, PK_PARAMS_SIZE);
    eb = amq_load16(p);
    d = amq_load16(p + 6);
    if (amq_load16(p + 2) != PK_SLOTS || amq_load16(p + 4) != PK_BUCKETS)
        return amq_err(err, AMQ_EVERSION,
                       "pocket filter of %u slots and %u buckets a bin is not supported",
                       amq_load16(p + 2), amq_load16(p + 4));
    fpp = amq_loadf64(p + 8);
    start = amq_load64(p + 16);
    for (i = 40; i < PK_PARAMS_SIZE; i++)
        if (p[i] != 0)
            return amq_err(err, AMQ_ECORRUPT, "pocket parameter byte %u is not 0", i);
    if (eb < PK_MIN_ENTRY_BITS || eb > PK_ENTRY_BITS || d > PK_SEG_BITS ||
        !(fpp >= PK_MIN_FPP && fpp <= PK_MAX_FPP) || start < PK_START_MIN || start > PK_START_MAX)
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid pocket parameters (%u-bit entries, %u segment bits, fpp %g, "
                       "start %llu)",
                       eb, d, fpp, (unsigned long long)start);
    if (args->payload_len < PK_PEND_BYTES + ((uint64_t)PK_REC << d))
        return amq_err(err, AMQ_ECORRUPT, "pocket payload of %llu bytes has no room for its "
                       "%u segment records",
                       (unsigned long long)args->payload_len, 1u << d);
    if ((x = amq_pk_shell(args->alloc)) == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    amq_pk_set_hash(x, args->hash_algo, args->seed);
    x->eb = eb;
    x->unit = ldexp(1.0, -(int)eb);
    x->fpp = fpp;
    x->start = start;
    x->b0 = (double)start / (PK_LOAD * PK_SLOTS);
    x->growths = amq_load64(p + 24);
    x->splits = amq_load64(p + 32);
    x->items = args->items;
    if ((x->seg = amq_calloc(&x->alloc, ((size_t)1 << d) * sizeof *x->seg)) == NULL) {
        amq_pk_free(x);
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    }
    x->d = d;
    x->pend_used = amq_load32(pl);
    x->pend_next = amq_load32(pl + 4);
    for (i = 0; i < PK_PENDING; i++) {
        x->pend[i] = amq_load64(pl + 16 + 8 * i);
        if (!((x->pend_used >> i) & 1u) && x->pend[i] != 0)
            break;
    }
    if (x->pend_used >> PK_PENDING != 0 || x->pend_next >= PK_PENDING || i < PK_PENDING ||
        amq_load64(pl + 8) != 0 || !padded(pl, 16u + 8u * PK_PENDING)) {
        amq_pk_free(x);
        return amq_err(err, AMQ_ECORRUPT, "pocket pending keys: cells 0x%x, next %u",
                       (unsigned)amq_load32(pl), (unsigned)amq_load32(pl + 4));
    }
    pk_pend_resign(x);
    need = PK_PEND_BYTES + ((uint64_t)PK_REC << d);
    for (i = 0; i < 1u << d; i++) { /* each field bounded, so that no sum below wraps */
        const uint8_t *r = pl + PK_PEND_BYTES + PK_REC * i;
        pk_seg *s = &x->seg[i];
        const uint64_t nb = amq_load64(r);
        s->epoch = amq_load32(r + 8);
        s->spd = amq_load32(r + 12);
        s->spcap = amq_load64(r + 16);
        s->spn = amq_load64(r + 24);
        s->ndeep = amq_load64(r + 32);
        s->deep_width = amq_load64(r + 40);
        s->splen = amq_load64(r + 48);
        if (nb < 2 || nb > PK_MAX_BINS || s->epoch > (1u << 20) ||
            s->spcap > (UINT64_C(1) << 32) || s->splen > (UINT64_C(1) << 33) ||
            s->spn > s->splen || s->ndeep > (UINT64_C(1) << 40) || amq_load64(r + 56) != 0) {
            rc = amq_err(err, AMQ_ECORRUPT,
                         "pocket segment %u: invalid record (%llu bins, %llu spare slots, "
                         "%llu deep ranges)",
                         i, (unsigned long long)nb, (unsigned long long)s->splen,
                         (unsigned long long)s->ndeep);
            amq_pk_free(x); /* after the message: s is in x's segments */
            return rc;
        }
        amq_pk_set_bins(s, nb);
        need += seg_payload(s);
        bins += nb;
    }
    if ((double)start > PK_LOAD * PK_SLOTS * (double)bins) { /* its first table was no larger */
        amq_pk_free(x);
        return amq_err(err, AMQ_ECORRUPT, "pocket filter created for %llu keys in %llu bins",
                       (unsigned long long)start, (unsigned long long)bins);
    }
    if (args->payload_len != need) {
        amq_pk_free(x);
        return amq_err(err, AMQ_ECORRUPT, "pocket payload is %llu bytes, its segments need %llu",
                       (unsigned long long)args->payload_len, (unsigned long long)need);
    }
    if (need > SIZE_MAX / 2) {
        amq_pk_free(x);
        return amq_err(err, AMQ_EOVERFLOW, "pocket payload of %llu bytes is too large here",
                       (unsigned long long)need);
    }
    borrow = args->borrow && ((uintptr_t)pl & 63) == 0 && little_endian();
    x->view = borrow;
    off = PK_PEND_BYTES + ((uint64_t)PK_REC << d);
    for (i = 0; i < 1u << d; i++) {
        pk_seg *s = &x->seg[i];
        const uint8_t *src = pl + off;
        if (!padded(src + s->nb * 64u, s->splen * 4u) ||
            !padded(src + s->nb * 64u + pad64(s->splen * 4u), s->ndeep * 16u)) {
            amq_pk_free(x);
            return amq_err(err, AMQ_ECORRUPT, "pocket segment %u: padding is not 0", i);
        }
        if ((rc = take_seg(x, s, src, borrow)) != AMQ_OK) {
            amq_pk_free(x);
            return amq_err(err, rc, "out of memory");
        }
        if ((why = amq_pk_seg_check(x, s)) != NULL) {
            amq_pk_free(x);
            return amq_err(err, AMQ_ECORRUPT, "pocket segment %u: %s", i, why);
        }
        amq_pk_count(s);
        off += seg_payload(s);
    }
    *impl = x;
    return AMQ_OK;
}

const amq_kind_ops amq_pocket_ops = {
    .kind = AMQ_KIND_POCKET,
    .name = "pocket",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .add_key = op_add_key,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .contains_key_of = op_contains_key_of,
    .settle = op_settle,
};
