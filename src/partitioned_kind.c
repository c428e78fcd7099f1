/*
 * partitioned_kind.c - the partitioned filter as a kind of the generic
 * handle (kind.h): the adapter (create, clone, merge and intersect, stats)
 * and the codec (parameter block, the payload's index and partitions,
 * load with lazy verification).  The algorithm is partitioned.c.
 */
#include <math.h>
#include <string.h>

#include "common/container.h"
#include "common/endian.h"
#include "common/error.h"
#include "kind.h"
#include "partitioned_internal.h"

static int op_create(const amq_config *cfg, void **impl, amq_errinfo *err)
{
    amq_partitioned_params p;
    amq_partitioned *f;
    int rc;

    memset(&p, 0, sizeof p);
    p.partitions = cfg->partitions;
    p.hash_algo = cfg->hash_algo;
    p.seed = cfg->seed;
    p.capacity = cfg->capacity;
    p.fpp = cfg->fpp;
    p.bits_per_key = cfg->bits_per_key; /* 0: by fpp; NaN, negatives: refused */
    rc = amq_partitioned_new(&p, cfg->alloc, &f);
    if (rc != AMQ_OK)
        return amq_err(err, rc,
                       "cannot create a partitioned filter for %llu items at rate %g"
                       " (%u partitions, at most %u): %s",
                       (unsigned long long)cfg->capacity, cfg->fpp, cfg->partitions,
                       AMQ_PARTITIONED_MAX_PARTITIONS, amq_strerror(rc));
    *impl = f;
    return AMQ_OK;
}

static void op_destroy(void *impl)
{
    amq_part_destroy(impl);
}

static int op_clone(const void *impl, const amq_allocator *alloc, void **out)
{
    const amq_partitioned *src = impl;
    amq_partitioned *f;
    uint32_t i;
    size_t off;
    int rc;

    rc = amq_partitioned_verify(src, NULL);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_part_shell(src->nparts, src->hash_algo, src->seed, alloc, &f);
    if (rc != AMQ_OK)
        return rc;
    f->capacity = src->capacity;
    f->total = src->total;
    f->first = src->first;
    f->whole_capacity = src->whole_capacity;
    f->fpp = src->fpp;
    f->concurrent = src->concurrent;
    f->simd = src->simd;
    for (i = 0; i < src->nparts; i++) {
        f->parts[i].blocks = src->parts[i].blocks;
        f->parts[i].k = src->parts[i].k;
        f->parts[i].capacity = src->parts[i].capacity;
        atomic_store_explicit(
            &f->parts[i].items,
            atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&src->parts[i].items,
                                 memory_order_relaxed),
            memory_order_relaxed);
    }
    rc = amq_part_layout(f);
    if (rc != AMQ_OK) {
        amq_part_destroy(f);
        return rc;
    }
    for (off = 0; off < src->data.size; off += 8) {
        uint64_t w = amq_blk_word(src->data.data + off, 0);
        memcpy(f->data.data + off, &w, 8);
    }
    *out = f;
    return AMQ_OK;
}

/* The entries that only forward to the family's functions. */
static void op_hash_spec(const void *impl, uint32_t *algo, uint64_t *seed)
{
    const amq_partitioned *x = impl;
    *algo = x->hash_algo;
    *seed = x->seed;
}

static int op_add(void *impl, amq_hash128 h)
{
    return amq_partitioned_add_hash((amq_partitioned *)impl, h);
}

static int op_contains(const void *impl, amq_hash128 h)
{
    return amq_partitioned_contains_hash((const amq_partitioned *)impl, h);
}

static int op_clear(void *impl)
{
    return amq_partitioned_clear((amq_partitioned *)impl);
}

static int op_is_view(const void *impl)
{
    return amq_partitioned_is_readonly((const amq_partitioned *)impl);
}

static int op_add_batch(void *impl, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return amq_partitioned_add_batch((amq_partitioned *)impl, h, n, added, NULL);
}

static void op_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out)
{
    (void)amq_partitioned_contains_batch((const amq_partitioned *)impl, h, n, out, NULL);
}

static int op_set_concurrent(void *impl, int on)
{
    return amq_partitioned_set_concurrent((amq_partitioned *)impl, on);
}

static int op_merge(void *dst, const void *src, amq_errinfo *err)
{
    const char *why = NULL;
    int rc;
    if (!amq_part_same_geometry(dst, src, &why))
        return amq_err(err, AMQ_EINCOMPAT, "cannot merge partitioned filters with %s", why);
    rc = amq_partitioned_merge(dst, src);
    if (rc == AMQ_ECHECKSUM)
        return amq_err(err, rc, "cannot merge: a partition failed its checksum");
    return rc;
}

/* Swamidass-Baldi: items that set x of m bits with k probes. */
static double items_from_bits(uint64_t x, uint64_t m, uint32_t k)
{
    if (m == 0 || k == 0 || x >= m)
        return 0.0;
    return -((double)m / (double)k) * log1p(-(double)x / (double)m);
}

/* Keeps what both filters may hold: the AND of every partition's blocks;
 * each partition's count becomes |A| + |B| - |A u B| estimated from its
 * bits (as the bloom kind's intersection). */
static int op_intersect(void *dstv, const void *srcv, amq_errinfo *err)
{
    amq_partitioned *dst = dstv;
    const amq_partitioned *src = srcv;
    const char *why = NULL;
    uint32_t i;

    if (!amq_part_same_geometry(dst, src, &why))
        return amq_err(err, AMQ_EINCOMPAT, "cannot intersect partitioned filters with %s", why);
    if (amq_region_is_borrowed(&dst->data))
        return AMQ_EREADONLY;
    if (amq_partitioned_verify(dst, NULL) != AMQ_OK || amq_partitioned_verify(src, NULL) != AMQ_OK)
        return amq_err(err, AMQ_ECHECKSUM, "cannot intersect: a partition failed its checksum");
    for (i = 0; i < dst->nparts; i++) {
        part *p = &dst->parts[i];
        uint8_t *d = dst->data.data + p->offset;
        const uint8_t *c = src->data.data + src->parts[i].offset;
        uint64_t off, a, b, xa = 0, xc = 0, xu = 0, m = p->blocks * 512, lim, si;
        double est;
        for (off = 0; off < p->blocks * 64; off += 8) {
            a = amq_blk_word(d + off, 0);
            b = amq_blk_word(c + off, 0);
            xa += (uint64_t)__builtin_popcountll(a);
            xc += (uint64_t)__builtin_popcountll(b);
            xu += (uint64_t)__builtin_popcountll(a | b);
            atomic_store_explicit(amq_blk_word_ptr(d + off, 0), a & b, memory_order_relaxed);
        }
        est = items_from_bits(xa, m, p->k) + items_from_bits(xc, m, p->k) -
              items_from_bits(xu, m, p->k);
        lim = atomic_load_explicit(&p->items, memory_order_relaxed);
        si = atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&src->parts[i].items,
                                  memory_order_relaxed);
        lim = si < lim ? si : lim;
        est = est < 0.0 ? 0.0 : floor(est + 0.5);
        atomic_store_explicit(&p->items, est < (double)lim ? (uint64_t)est : lim,
                              memory_order_relaxed);
    }
    return AMQ_OK;
}

static double part_fill_rate(const uint8_t *d, uint64_t blocks, uint32_t k, const double *table)
{
    uint64_t b;
    double sum = 0.0;
    unsigned w, c;
    for (b = 0; b < blocks; b++) {
        c = 0;
        for (w = 0; w < 8; w++)
            c += (unsigned)__builtin_popcountll(amq_blk_word(d + b * 64, w));
        sum += table[c];
    }
    (void)k;
    return sum / (double)blocks;
}

static void op_stats(const void *impl, amq_stats *st)
{
    const amq_partitioned *f = impl;
    double target, now = 0.0, table[AMQ_BLOCKED_BLOCK_BITS + 1];
    uint64_t blocks = 0, set = 0, off;
    uint32_t i, c, k0 = f->parts[0].k, same = 1, table_k = 0;

    for (i = 0; i < f->nparts; i++) {
        const part *p = &f->parts[i];
        blocks += p->blocks;
        if (p->k != k0)
            same = 0;
        if (i == 0 || p->k != table_k) {
            for (c = 0; c <= AMQ_BLOCKED_BLOCK_BITS; c++)
                table[c] = pow((double)c / AMQ_BLOCKED_BLOCK_BITS, (double)p->k);
            table_k = p->k;
        }
        now += part_fill_rate(part_data(f, i), p->blocks, p->k, table);
    }
    for (off = 0; off < f->data.size; off += 8)
        set += (uint64_t)__builtin_popcountll(amq_blk_word(f->data.data + off, 0));
    /* The expected rate at capacity: keys spread over all blocks as over
     * one blocked filter (exact for equal partitions; for a build, whose
     * partitions each meet the target at their own load, the same load
     * overall). */
    target = amq_blocked_fpp_theory(blocks, k0, f->capacity);
    /* Absent keys pick partitions uniformly: the rates average. */
    st->items = amq_partitioned_items(f);
    st->capacity = f->capacity;
    st->bytes = f->data.size;
    st->bits = blocks * AMQ_BLOCKED_BLOCK_BITS;
    st->hashes = same ? k0 : 0;
    st->fpp_target = target;
    st->fpp_now = now / f->nparts;
    st->fill = (double)set / (double)st->bits;
}

static int op_describe(const void *impl, amq_field_fn fn, void *ctx)
{
    const amq_partitioned *f = impl;
    uint64_t blocks = 0, minb = UINT64_MAX, maxb = 0;
    uint32_t i, unverified = 0;

    for (i = 0; i < f->nparts; i++) {
        blocks += f->parts[i].blocks;
        if (f->parts[i].blocks < minb)
            minb = f->parts[i].blocks;
        if (f->parts[i].blocks > maxb)
            maxb = f->parts[i].blocks;
        if (atomic_load_explicit(&f->state[i], memory_order_relaxed) != ST_OK)
            unverified++;
    }
    if (is_slice(f))
        return AMQ_FIELDS(fn, ctx, AMQ_U64("partitions", f->nparts), AMQ_U64("blocks", blocks),
                          AMQ_U64("slice_of_partitions", f->total),
                          AMQ_U64("slice_first_partition", f->first),
                          AMQ_U64("slice_of_capacity", f->whole_capacity),
                          AMQ_U64("partition_blocks_min", minb),
                          AMQ_U64("partition_blocks_max", maxb), AMQ_U64("hashes", f->parts[0].k),
                          AMQ_U64("unverified_partitions", unverified),
                          AMQ_STR("query_path", f->simd->name));
    return AMQ_FIELDS(fn, ctx, AMQ_U64("partitions", f->nparts), AMQ_U64("blocks", blocks),
                      AMQ_U64("partition_blocks_min", minb), AMQ_U64("partition_blocks_max", maxb),
                      AMQ_U64("hashes", f->parts[0].k),
                      AMQ_U64("unverified_partitions", unverified),
                      AMQ_STR("query_path", f->simd->name));
}

/* Parameter block (32 bytes, little-endian):
 *   u32 partitions, u32 layout, u64 capacity, f64 fpp, then
 *   layout 0 (a whole filter): u64 zero;
 *   layout 1 (a slice): u32 total partitions, u32 first partition, and capacity is the
 *   whole filter's (the slice's own is its share, capacity * partitions / total). */
#define PART_PARAMS_SIZE 32

static size_t op_params_size(const void *impl)
{
    (void)impl;
    return PART_PARAMS_SIZE;
}

static void op_params_write(const void *impl, uint8_t *out)
{
    const amq_partitioned *f = impl;
    amq_store32(out, f->nparts);
    amq_store32(out + 4, is_slice(f) ? 1u : 0u);
    amq_store64(out + 8, is_slice(f) ? f->whole_capacity : f->capacity);
    amq_storef64(out + 16, f->fpp);
    if (is_slice(f)) {
        amq_store32(out + 24, f->total);
        amq_store32(out + 28, f->first);
    } else {
        amq_store64(out + 24, 0);
    }
}

static uint64_t data_offset(uint32_t nparts)
{
    return (INDEX_HEADER + (uint64_t)ENTRY_SIZE * nparts + 63) / 64 * 64;
}

/* Zeroes what a payload's index describes rather than holds (its checksum,
 * each partition's item count and checksum) so that two filters holding the
 * same bits compare equal; *arrays: where the partitions' bits start.  A
 * payload too short for its index is left as it is (the comparison then
 * sees every byte). */
void amq_part_blank_index(uint8_t *payload, uint64_t len, uint64_t *arrays)
{
    uint64_t np, i;

    *arrays = 0;
    if (len < INDEX_HEADER)
        return;
    np = amq_load32(payload + 8);
    if (np > AMQ_PARTITIONED_MAX_PARTITIONS || data_offset((uint32_t)np) > len)
        return;
    memset(payload, 0, 8);
    for (i = 0; i < np; i++) {
        uint8_t *e = payload + INDEX_HEADER + i * ENTRY_SIZE;
        memset(e + 24, 0, 8);
        memset(e + 40, 0, 8);
    }
    *arrays = data_offset((uint32_t)np);
}

static uint64_t op_payload_size(const void *impl)
{
    const amq_partitioned *f = impl;
    return data_offset(f->nparts) + f->data.size;
}

/* A piece of a partition copied with relaxed atomic loads: adds in
 * concurrent mode may be ORing bits into it (each word is one or the other). */
static void copy_words(uint8_t *dst, const uint8_t *src, size_t len)
{
    uint64_t w;
    size_t i;
    for (i = 0; i < len; i += 8) {
        w = amq_blk_word(src + i, 0);
        memcpy(dst + i, &w, 8);
    }
}

#define COPY_BUF ((size_t)1 << 16) /* a multiple of the 64-byte block */

/* Partition i's bytes, a copy of COPY_BUF at a time, written at their
 * place in the payload (the index before them is written last): *sum is
 * the checksum of exactly the bytes written, whatever adds did meanwhile.
 * sink NULL: only summed, from copies all the same (no plain read of
 * words an add may be writing). */
static int write_partition_copy(const amq_partitioned *f, uint32_t i, uint64_t data_off,
                                uint8_t *buf, amq_sink *sink, uint64_t *sum)
{
    XXH3_state_t st;
    uint64_t len = f->parts[i].blocks * 64, pos;
    size_t n;
    int rc;

    (void)XXH3_64bits_reset(&st);
    for (pos = 0; pos < len; pos += n) {
        n = len - pos < COPY_BUF ? (size_t)(len - pos) : COPY_BUF;
        copy_words(buf, part_data(f, i) + pos, n);
        (void)XXH3_64bits_update(&st, buf, n);
        rc = sink == NULL ? AMQ_OK
                          : sink->write_at(sink->ctx, buf, n, data_off + f->parts[i].offset + pos);
        if (rc != AMQ_OK)
            return rc;
    }
    *sum = XXH3_64bits_digest(&st);
    return AMQ_OK;
}

/* The index (checksums of the partitions and their counts), then the
 * partitions.  In concurrent mode adds may run during the save: each
 * partition is then written as a copy whose checksum goes into the index
 * written after it (sink->write_at), and the header takes the counts the
 * index recorded - a file whose every checksum holds, with every key added
 * before the save began.  A sink without write_at (a range of the
 * serialized bytes) gets the bytes in order, which only a filter no add is
 * changing keeps consistent. */
static int op_payload_write(const void *impl, amq_sink *sink)
{
    const amq_partitioned *f = impl;
    uint64_t off = data_offset(f->nparts), items = 0, sum, n, pos;
    const int placed = f->concurrent && sink->write_at != NULL;
    uint8_t *index, *buf = NULL;
    uint32_t i;
    int rc;

    /* Partitions never verified (a trusted load) are verified first: their
     * stored checksums would otherwise be written unchecked. */
    rc = amq_partitioned_verify(f, NULL);
    if (rc != AMQ_OK)
        return rc;
    /* the filter's allocator: a host's (Redis) counts them and may refuse them */
    index = amq_calloc(&f->alloc, (size_t)off);
    if (index != NULL && f->concurrent)
        buf = amq_malloc(&f->alloc, COPY_BUF);
    if (index == NULL || (f->concurrent && buf == NULL)) {
        rc = AMQ_ENOMEM;
        goto done;
    }
    amq_store32(index + 8, f->nparts);
    amq_store32(index + 12, ENTRY_SIZE);
    amq_store64(index + 16, off);
    amq_store64(index + 24, f->data.size);
    for (i = 0; i < f->nparts; i++) {
        const part *p = &f->parts[i];
        uint8_t *e = index + INDEX_HEADER + (size_t)i * ENTRY_SIZE;
        if (f->concurrent) {
            rc = write_partition_copy(f, i, off, buf, placed ? sink : NULL, &sum);
            if (rc != AMQ_OK)
                goto done;
        } else {
            sum = amq_checksum(part_data(f, i), (size_t)(p->blocks * 64));
        }
        n = atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&p->items, memory_order_relaxed);
        items += n;
        amq_store64(e, p->offset);
        amq_store64(e + 8, p->blocks);
        amq_store32(e + 16, p->k);
        amq_store32(e + 20, 0);
        amq_store64(e + 24, n);
        amq_store64(e + 32, p->capacity);
        amq_store64(e + 40, sum);
    }
    amq_store64(index, amq_checksum(index + INDEX_HEADER, (size_t)ENTRY_SIZE * f->nparts));
    sink->items = items;
    sink->items_set = 1;
    rc = amq_sink_write(sink, index, (size_t)off);
    if (rc != AMQ_OK || placed)
        goto done;
    if (!f->concurrent) {
        rc = amq_sink_write(sink, f->data.data, f->data.size);
        goto done;
    }
    for (pos = 0; pos < f->data.size; pos += n) {
        n = f->data.size - pos < COPY_BUF ? f->data.size - pos : COPY_BUF;
        copy_words(buf, f->data.data + pos, (size_t)n);
        rc = amq_sink_write(sink, buf, (size_t)n);
        if (rc != AMQ_OK)
            break;
    }
done:
    amq_free(&f->alloc, buf, COPY_BUF);
    amq_free(&f->alloc, index, (size_t)off);
    return rc;
}

static int op_load(const amq_load_args *a, void **impl, amq_errinfo *err)
{
    amq_partitioned *f = NULL;
    uint32_t np, i, lay, total, first;
    uint64_t off, data_len, expect = 0, items = 0;
    const uint8_t *index;
    double fpp;
    int rc;

    if (a->params_len != PART_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "partitioned parameter block is %zu bytes, expected %d",
                       a->params_len, PART_PARAMS_SIZE);
    np = amq_load32(a->params);
    lay = amq_load32(a->params + 4);
    if (lay > 1)
        return amq_err(err, AMQ_EVERSION, "partitioned layout %u is not supported", lay);
    fpp = amq_loadf64(a->params + 16);
    total = lay == 1 ? amq_load32(a->params + 24) : np;
    first = lay == 1 ? amq_load32(a->params + 28) : 0;
    if (np == 0 || np > AMQ_PARTITIONED_MAX_PARTITIONS || !(fpp >= 0.0 && fpp < 1.0) ||
        (lay == 0 && amq_load64(a->params + 24) != 0))
        return amq_err(err, AMQ_ECORRUPT, "invalid partitioned parameters (%u partitions)", np);
    /* a slice: partitions [first, first + np) of total, and not the whole filter */
    if (lay == 1 && (total > AMQ_PARTITIONED_MAX_PARTITIONS || first >= total ||
                     np > total - first || np == total))
        return amq_err(err, AMQ_ECORRUPT,
                       "invalid partitioned slice: partitions %u..%u of %u", first,
                       first + np, total);
    off = data_offset(np);
    if (a->payload_len < off)
        return amq_err(err, AMQ_ECORRUPT,
                       "partitioned payload of %llu bytes cannot hold its"
                       " index of %u partitions",
                       (unsigned long long)a->payload_len, np);
    index = a->payload;
    if (amq_load32(index + 8) != np || amq_load32(index + 12) != ENTRY_SIZE ||
        amq_load64(index + 16) != off || amq_load64(index + 24) != a->payload_len - off)
        return amq_err(err, AMQ_ECORRUPT, "partitioned index header does not match its file");
    if (amq_load64(index) != amq_checksum(index + INDEX_HEADER, (size_t)ENTRY_SIZE * np))
        return amq_err(err, AMQ_ECHECKSUM, "partitioned index checksum mismatch");
    for (i = 32; i < INDEX_HEADER; i++)
        if (index[i] != 0)
            return amq_err(err, AMQ_ECORRUPT, "partitioned index header reserved bytes not zero");
    for (i = INDEX_HEADER + ENTRY_SIZE * np; i < off; i++)
        if (index[i] != 0)
            return amq_err(err, AMQ_ECORRUPT, "partitioned index padding is not zero");
    data_len = a->payload_len - off;

    rc = amq_part_shell(np, a->hash_algo, a->seed, a->alloc, &f);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "out of memory");
    f->total = total;
    f->first = first;
    f->whole_capacity = amq_load64(a->params + 8);
    f->capacity = lay == 1 ? capacity_share(f->whole_capacity, np, total) : f->whole_capacity;
    f->fpp = fpp;
    for (i = 0; i < np; i++) {
        const uint8_t *e = index + INDEX_HEADER + (size_t)i * ENTRY_SIZE;
        part *p = &f->parts[i];
        p->offset = amq_load64(e);
        p->blocks = amq_load64(e + 8);
        p->k = amq_load32(e + 16);
        p->capacity = amq_load64(e + 32);
        p->checksum = amq_load64(e + 40);
        atomic_store_explicit(&p->items, amq_load64(e + 24), memory_order_relaxed);
        if (p->offset != expect || p->blocks == 0 || p->blocks > AMQ_BLOCKED_MAX_BLOCKS ||
            p->blocks * 64 > data_len - expect || p->k == 0 || p->k > AMQ_BLOCKED_MAX_K ||
            amq_load32(e + 20) != 0) {
            rc = amq_err(err, AMQ_ECORRUPT,
                         "partition %u: invalid entry (offset %llu, blocks %llu, k %u)", i,
                         (unsigned long long)p->offset, (unsigned long long)p->blocks, p->k);
            amq_part_destroy(f);
            return rc;
        }
        expect += p->blocks * 64;
        /* a forged count must not wrap into the header's */
        if (amq_add64(items, amq_load64(e + 24), &items) != AMQ_OK) {
            amq_part_destroy(f);
            return amq_err(err, AMQ_ECORRUPT, "partition item counts overflow 64 bits");
        }
    }
    if (expect != data_len) {
        amq_part_destroy(f);
        return amq_err(err, AMQ_ECORRUPT, "partitions cover %llu of %llu data bytes",
                       (unsigned long long)expect, (unsigned long long)data_len);
    }
    if (items != a->items) {
        amq_part_destroy(f);
        return amq_err(err, AMQ_ECORRUPT, "partition item counts sum to %llu, the header says %llu",
                       (unsigned long long)items, (unsigned long long)a->items);
    }
    if (a->borrow && ((uintptr_t)(a->payload + off) & 63) == 0) {
        amq_region_borrow(&f->data, a->payload + off, (size_t)data_len);
    } else {
        rc = amq_region_copy(&f->data, &f->alloc, a->payload + off, (size_t)data_len);
        if (rc != AMQ_OK) {
            amq_part_destroy(f);
            return amq_err(err, AMQ_ENOMEM, "out of memory");
        }
    }
    if (a->trusted) {
        for (i = 0; i < np; i++)
            atomic_store_explicit(&f->state[i], ST_UNVERIFIED, memory_order_relaxed);
    } else {
        /* The container's checksum held; each partition's must too, or the
         * same file would answer differently when trusted (lazily checked)
         * and saving it would write other checksums than it read. */
        for (i = 0; i < np; i++)
            if (amq_checksum(part_data(f, i), (size_t)(f->parts[i].blocks * 64)) !=
                f->parts[i].checksum) {
                amq_part_destroy(f);
                return amq_err(err, AMQ_ECHECKSUM, "partition %u checksum mismatch", i);
            }
    }
    *impl = f;
    return AMQ_OK;
}

const amq_kind_ops amq_partitioned_ops = {
    .kind = AMQ_KIND_PARTITIONED,
    .name = "partitioned",
    AMQ_KIND_CORE_OPS,
    AMQ_KIND_CODEC_OPS,
    .add_batch = op_add_batch,
    .contains_batch = op_contains_batch,
    .merge = op_merge,
    .intersect = op_intersect,
    .set_concurrent = op_set_concurrent,
};
