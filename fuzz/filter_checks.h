/*
 * filter_checks.h - properties every loaded filter must have, whatever its
 * kind; used by the decoder targets (fuzz_container, fuzz_header,
 * fuzz_file_open, fuzz_payload_*), which load through fz_load_* (at the
 * end), and the round-trip target.
 *
 * Given a filter that amq_filter_deserialize accepted, fz_check_filter
 * exercises every generic operation and checks:
 *  - queries answer 0 or 1, and the batched form answers like the single;
 *  - stats and describe are sane (fill ratio and rates in [0, 1], names);
 *  - a verified (not AMQ_OPEN_TRUST) load re-serializes to the very same
 *    bytes; any load re-serializes to bytes that load again, verified, and
 *    answer the same (a trusted load of inconsistent data may give bytes a
 *    verified load refuses as corrupt);
 *  - a clone answers the same; what is added to it is then found (no false
 *    negative); merging the original into it loses nothing;
 *  - a read-only (borrowed) filter refuses writes with AMQ_EREADONLY and is
 *    never written to;
 *  - a partitioned filter loaded with AMQ_OPEN_TRUST verifies a partition
 *    when a key first touches it: a partition that fails answers
 *    AMQ_ECHECKSUM (1 in batches), and from then on every operation that
 *    needs the whole filter (serialize, save, clone, merge) refuses with
 *    AMQ_ECHECKSUM while the others go on working.
 */
#ifndef AMQ_FUZZ_FILTER_CHECKS_H
#define AMQ_FUZZ_FILTER_CHECKS_H

#include <math.h>

#include "amq/partitioned.h"
#include "fuzz.h"

/* Largest allocation a filter under test may make. */
#define FZ_FILTER_CAP ((size_t)64 << 20)
#define FZ_NPROBES 16
#define FZ_WIDE 75 /* a batch of the probes again and again: wide paths (groups of 8 from 64) */

typedef struct fz_probes {
    const uint8_t *key[FZ_NPROBES];
    size_t len[FZ_NPROBES];
    size_t n;
} fz_probes;

/* Fixed keys plus slices of the input: present keys get tested too when the
 * input holds them. */
static FZ_UNUSED void fz_probes_init(fz_probes *p, const uint8_t *data, size_t size)
{
    static const char *fixed[] = {"", "a", "key-0", "key-1", "hello", "0123456789abcdef"};
    size_t i, off = 0;

    p->n = 0;
    for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        p->key[p->n] = (const uint8_t *)fixed[i];
        p->len[p->n] = strlen(fixed[i]);
        p->n++;
    }
    while (p->n < FZ_NPROBES && size > 0) {
        size_t len = 1 + (off * 7 + p->n) % 13;
        if (off >= size)
            break;
        if (len > size - off)
            len = size - off;
        p->key[p->n] = data + off;
        p->len[p->n] = len;
        p->n++;
        off += len + 5;
    }
}

static FZ_UNUSED int fz_field_cb(void *ctx, const amq_field *fld)
{
    (void)ctx;
    FZ_CHECK(fld->name != NULL && fld->name[0] != '\0', "describe gave a field without a name");
    FZ_CHECK(fld->type == AMQ_FIELD_U64 || fld->type == AMQ_FIELD_F64 ||
                 fld->type == AMQ_FIELD_STR,
             "field %s has type %u", fld->name, fld->type);
    if (fld->type == AMQ_FIELD_STR)
        FZ_CHECK(fld->str != NULL, "string field %s is NULL", fld->name);
    return 0;
}

static FZ_UNUSED int fz_is_rate(double x)
{
    return x >= 0.0 && x <= 1.0;
}

/* The answers of f for every probe, checked to be 0 or 1 and to agree with
 * the batched form.  lazy: f is a partitioned filter loaded with
 * AMQ_OPEN_TRUST, whose partitions are verified when first touched: a key
 * in a partition that fails answers AMQ_ECHECKSUM singly and 1 ("may be
 * present") in a batch (amq/partitioned.h); out[] then says 1. */
static FZ_UNUSED void fz_answers_ex(const amq_filter *f, const fz_probes *p, uint8_t *out,
                                    int lazy)
{
    amq_hash128 h[FZ_NPROBES];
    uint8_t batch[FZ_NPROBES];
    size_t i;
    int c, ch;

    for (i = 0; i < p->n; i++) {
        c = amq_filter_contains(f, p->key[i], p->len[i]);
        FZ_CHECK(c == 0 || c == 1 || (lazy && c == AMQ_ECHECKSUM), "contains returned %d", c);
        h[i] = amq_filter_hash(f, p->key[i], p->len[i]);
        ch = amq_filter_contains_hash(f, h[i]);
        FZ_CHECK(ch == c, "contains_hash %d, contains %d", ch, c);
        out[i] = (uint8_t)(c != 0);
    }
    FZ_CHECK(amq_filter_contains_batch(f, h, p->n, batch) == AMQ_OK, "contains_batch failed");
    for (i = 0; i < p->n; i++)
        FZ_CHECK(batch[i] == out[i], "probe %zu: batch says %u, single %u", i, batch[i], out[i]);
    if (p->n > 0) {
        amq_hash128 hw[FZ_WIDE];
        uint8_t bw[FZ_WIDE];
        for (i = 0; i < FZ_WIDE; i++)
            hw[i] = h[i % p->n];
        FZ_CHECK(amq_filter_contains_batch(f, hw, FZ_WIDE, bw) == AMQ_OK,
                 "contains_batch of %d failed", FZ_WIDE);
        for (i = 0; i < FZ_WIDE; i++)
            FZ_CHECK(bw[i] == out[i % p->n], "wide batch, key %zu: %u, single %u", i, bw[i],
                     out[i % p->n]);
    }
}

static FZ_UNUSED void fz_answers(const amq_filter *f, const fz_probes *p, uint8_t *out)
{
    fz_answers_ex(f, p, out, 0);
}

static FZ_UNUSED void fz_same_answers(const amq_filter *a, const amq_filter *b,
                                      const fz_probes *p, const char *what)
{
    uint8_t x[FZ_NPROBES], y[FZ_NPROBES];
    size_t i;
    fz_answers(a, p, x);
    fz_answers(b, p, y);
    for (i = 0; i < p->n; i++)
        FZ_CHECK(x[i] == y[i], "%s: probe %zu answers %u, the original %u", what, i, y[i], x[i]);
}

/* strict: the filter's counts are known consistent (not from a trusted
 * load, where item counts are the file's word and rates computed from them
 * may leave [0, 1]). */
static FZ_UNUSED void fz_check_stats(const amq_filter *f, int strict)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    FZ_CHECK(st.kind == amq_filter_kind(f), "stats kind %u", st.kind);
    if (strict) {
        FZ_CHECK(fz_is_rate(st.fill), "fill %g", st.fill);
        FZ_CHECK(fz_is_rate(st.fpp_now), "fpp_now %g", st.fpp_now);
        FZ_CHECK(fz_is_rate(st.fpp_target), "fpp_target %g", st.fpp_target);
    }
    FZ_CHECK(st.bits_per_item >= 0.0 && !isnan(st.bits_per_item), "bits per item %g",
             st.bits_per_item);
    FZ_CHECK(amq_filter_describe(f, fz_field_cb, NULL) == 0, "describe failed");
}

/* Serializes f into a fresh buffer (caller frees). */
static FZ_UNUSED uint8_t *fz_serialize(const amq_filter *f, size_t *len)
{
    uint64_t size = 0;
    size_t written = 0;
    uint8_t *buf;
    int rc;

    rc = amq_filter_serialized_size(f, &size);
    FZ_CHECK(rc == AMQ_OK, "serialized_size: %s", amq_strerror(rc));
    FZ_CHECK(size >= 64 && size <= ((uint64_t)1 << 32), "serialized size %llu",
             (unsigned long long)size);
    buf = malloc((size_t)size);
    FZ_CHECK(buf != NULL, "out of memory");
    rc = amq_filter_serialize(f, buf, (size_t)size - 1, &written);
    FZ_CHECK(rc == AMQ_EINVAL, "serialize into a buffer one byte short: %d", rc);
    rc = amq_filter_serialize(f, buf, (size_t)size, &written);
    FZ_CHECK(rc == AMQ_OK, "serialize: %s", amq_strerror(rc));
    FZ_CHECK(written == size, "serialize wrote %zu of %llu bytes", written,
             (unsigned long long)size);
    *len = (size_t)size;
    return buf;
}

/* What amq_filter_add may return on a writable filter (amq/filter.h). */
static FZ_UNUSED int fz_add_status_ok(int rc)
{
    return rc == 0 || rc == 1 || rc == AMQ_EFULL || rc == AMQ_ENOMEM || rc == AMQ_ELIMIT;
}

/* Whether a trusted load's status is consistent with the verified one's:
 * trusting skips the payload checksum and the kinds' whole-payload
 * consistency checks (fingerprint counts), nothing else. */
static FZ_UNUSED int fz_trust_agrees(int verified, int trusted)
{
    return verified == trusted || verified == AMQ_ECHECKSUM ||
           (verified == AMQ_ECORRUPT && trusted == AMQ_OK);
}

/* 1 when f is a slice of a partitioned filter (layout 1), whose adds refuse the keys of
 * other slices with AMQ_ERANGE (amq/partitioned.h). */
static FZ_UNUSED int fz_is_slice(amq_filter *f)
{
    amq_partitioned *pf = amq_filter_partitioned(f);
    uint32_t total = 0;
    if (pf == NULL)
        return 0;
    amq_partitioned_slice_info(pf, &total, NULL);
    return total != amq_partitioned_partitions(pf);
}

/* Adds every probe to a writable f, then checks that each is found; then a
 * growth under way is settled (amq_filter_settle: on a loaded growth, the
 * rest of its reading) and each added key is found again. */
static FZ_UNUSED void fz_add_and_find(amq_filter *f, const fz_probes *p)
{
    uint8_t added[FZ_NPROBES] = {0};
    size_t i;
    int rc;
    for (i = 0; i < p->n; i++) {
        rc = amq_filter_add(f, p->key[i], p->len[i]);
        if (rc == AMQ_ERANGE && fz_is_slice(f)) {
            FZ_CHECK(amq_filter_contains(f, p->key[i], p->len[i]) == 1,
                     "a slice says a foreign key %zu is absent", i);
            continue;
        }
        /* Static kinds (fuse, ribbon) take no adds, and say so. */
        if (amq_kind_is_static(amq_filter_kind(f))) {
            FZ_CHECK(rc == AMQ_EUNSUPPORTED, "add to a static filter: %d", rc);
            continue;
        }
        FZ_CHECK(fz_add_status_ok(rc), "add: %d (%s)", rc, amq_strerror(rc));
        if (rc >= 0)
            FZ_CHECK(amq_filter_contains(f, p->key[i], p->len[i]) == 1,
                     "key %zu added (%d) but not found", i, rc);
        added[i] = rc >= 0;
    }
    rc = amq_filter_settle(f);
    FZ_CHECK(rc == AMQ_OK || rc == AMQ_ENOMEM || rc == AMQ_ELIMIT || rc == AMQ_EFULL,
             "settle: %d (%s)", rc, amq_strerror(rc));
    for (i = 0; i < p->n; i++)
        if (added[i])
            FZ_CHECK(amq_filter_contains(f, p->key[i], p->len[i]) == 1,
                     "key %zu added but not found after settle (%d)", i, rc);
}

/* A trusted partitioned filter with a partition that failed its checksum:
 * what needs the whole filter refuses with AMQ_ECHECKSUM, the rest works. */
static FZ_UNUSED void fz_check_failed_partition(amq_filter *f, const fz_probes *p,
                                                const amq_allocator *al)
{
    amq_partitioned *pf = amq_filter_partitioned(f);
    amq_filter *c = NULL;
    amq_errinfo err;
    uint64_t size;
    uint8_t *buf, again[FZ_NPROBES];
    size_t written = 0, i;
    uint32_t bad = UINT32_MAX;
    int rc;

    FZ_CHECK(amq_partitioned_status(pf) == AMQ_ECHECKSUM, "a failed partition, status OK");
    FZ_CHECK(amq_partitioned_verify(pf, &bad) == AMQ_ECHECKSUM &&
                 bad < amq_partitioned_partitions(pf),
             "verify names partition %u of %u", bad, amq_partitioned_partitions(pf));
    FZ_CHECK(amq_filter_serialized_size(f, &size) == AMQ_OK, "serialized_size");
    buf = malloc((size_t)size);
    FZ_CHECK(buf != NULL, "out of memory");
    rc = amq_filter_serialize(f, buf, (size_t)size, &written);
    FZ_CHECK(rc == AMQ_ECHECKSUM, "serializing a filter with a bad partition: %d", rc);
    free(buf);
    rc = amq_filter_clone(f, al, &c);
    FZ_CHECK(rc == AMQ_ECHECKSUM && c == NULL, "cloning a filter with a bad partition: %d", rc);
    fz_check_stats(f, 0);
    fz_answers_ex(f, p, again, 1);
    if (!amq_filter_is_readonly(f)) {
        for (i = 0; i < p->n; i++) {
            rc = amq_filter_add(f, p->key[i], p->len[i]);
            FZ_CHECK(rc == 0 || rc == 1 || rc == AMQ_ECHECKSUM ||
                         (rc == AMQ_ERANGE && fz_is_slice(f)),
                     "add: %d", rc);
            if (rc >= 0)
                FZ_CHECK(amq_filter_contains(f, p->key[i], p->len[i]) == 1,
                         "key %zu added (%d) but not found", i, rc);
        }
        rc = amq_filter_merge(f, f, &err);
        FZ_CHECK(rc == AMQ_ECHECKSUM, "merging a filter with a bad partition: %d", rc);
        /* clear makes every partition good again. */
        FZ_CHECK(amq_filter_clear(f) == AMQ_OK, "clear");
        FZ_CHECK(amq_partitioned_status(pf) == AMQ_OK, "a cleared filter still has a bad "
                                                       "partition");
        fz_check_stats(f, 1);
        fz_add_and_find(f, p);
    }
}

/*
 * The checks of the header comment on f, loaded from bytes[0..len) with
 * flags; al is the checking allocator f was made with.
 */
static FZ_UNUSED void fz_check_filter(amq_filter *f, const uint8_t *bytes, size_t len,
                                      unsigned flags, const amq_allocator *al)
{
    fz_probes p;
    amq_filter *g = NULL, *c = NULL;
    amq_errinfo err;
    uint8_t *out, before[FZ_NPROBES], after[FZ_NPROBES];
    size_t out_len, i;
    int rc, lazy = (flags & AMQ_OPEN_TRUST) && amq_filter_partitioned(f) != NULL;

    FZ_CHECK(amq_kind_name(amq_filter_kind(f)) != NULL, "loaded an unknown kind %u",
             amq_filter_kind(f));
    FZ_CHECK(amq_filter_is_readonly(f) == ((flags & AMQ_OPEN_MMAP) != 0),
             "read-only %d with flags %u", amq_filter_is_readonly(f), flags);
    fz_probes_init(&p, bytes, len);
    fz_check_stats(f, !(flags & AMQ_OPEN_TRUST));
    fz_answers_ex(f, &p, before, lazy);
    if (lazy && amq_partitioned_verify(amq_filter_partitioned(f), NULL) != AMQ_OK) {
        fz_check_failed_partition(f, &p, al);
        return;
    }

    /* Bytes out, bytes in: the same bytes, but for an expandable filter of
     * the older lane-31 layout (its parameter bytes 2-3 are 0), which a load
     * rewrites in the current one. */
    out = fz_serialize(f, &out_len);
    if (!(flags & AMQ_OPEN_TRUST) &&
        !(amq_filter_kind(f) == AMQ_KIND_EXPANDABLE && len >= 68 && bytes[66] == 0 &&
          bytes[67] == 0))
        FZ_CHECK(out_len == len && memcmp(out, bytes, len) == 0,
                 "a verified load re-serializes to different bytes (%zu vs %zu)", out_len, len);
    rc = amq_filter_deserialize(out, out_len, 0, al, &g, &err);
    /* A trusted load skips the kind's whole-payload consistency checks too
     * (they read every byte): its re-serialized bytes may then be refused
     * by a verified load, as the original would have been - never worse. */
    FZ_CHECK(rc == AMQ_OK || ((flags & AMQ_OPEN_TRUST) && rc == AMQ_ECORRUPT),
             "re-serialized bytes do not load: %s", err.msg);
    if (rc == AMQ_OK) {
        fz_same_answers(f, g, &p, "reloaded");
        amq_filter_free(g);
    }
    free(out);

    /* A writable copy. */
    rc = amq_filter_clone(f, al, &c);
    FZ_CHECK(rc == AMQ_OK || rc == AMQ_ENOMEM, "clone: %d", rc);
    if (rc == AMQ_OK) {
        FZ_CHECK(!amq_filter_is_readonly(c), "a clone is read-only");
        fz_same_answers(f, c, &p, "clone");
        fz_add_and_find(c, &p);
        rc = amq_filter_merge(c, f, &err);
        FZ_CHECK(rc == AMQ_OK || rc == AMQ_EUNSUPPORTED || rc == AMQ_ENOMEM || rc == AMQ_EFULL ||
                     rc == AMQ_ELIMIT,
                 "merging a filter into its clone: %d (%s)", rc, err.msg);
        if (rc == AMQ_OK) {
            fz_answers(c, &p, after);
            for (i = 0; i < p.n; i++)
                FZ_CHECK(after[i] >= before[i], "merge lost probe %zu", i);
        }
        rc = amq_filter_intersect(c, f, &err);
        FZ_CHECK(rc == AMQ_OK || rc == AMQ_EUNSUPPORTED || rc == AMQ_ENOMEM,
                 "intersecting a filter with its clone: %d (%s)", rc, err.msg);
        fz_check_stats(c, !(flags & AMQ_OPEN_TRUST));
        FZ_CHECK(amq_filter_clear(c) == (amq_kind_is_static(amq_filter_kind(c)) ? AMQ_EUNSUPPORTED
                                                                                  : AMQ_OK),
                 "clear of a clone failed");
        fz_check_stats(c, 1);
        amq_filter_free(c);
    }

    if (amq_filter_is_readonly(f)) {
        FZ_CHECK(amq_filter_add(f, "x", 1) == AMQ_EREADONLY, "add to a read-only filter");
        FZ_CHECK(amq_filter_clear(f) == AMQ_EREADONLY, "clear of a read-only filter");
        rc = amq_filter_remove(f, "x", 1);
        FZ_CHECK(rc == AMQ_EREADONLY || rc == AMQ_EUNSUPPORTED, "remove from read-only: %d",
                 rc);
    } else {
        fz_add_and_find(f, &p);
        fz_check_stats(f, !(flags & AMQ_OPEN_TRUST));
    }
}

/* ---- loading under the checking allocator ---------------------------------------------
 * How the decoder targets load a filter: fz_load_begin gives the checking
 * allocator (FZ_FILTER_CAP) and a cleared error; the target loads into l.f
 * with l.al and l.err (amq_filter_deserialize, amq_filter_open), then
 * fz_load_end checks what every load must: an error leaves no filter, a
 * filter passes fz_check_filter on bytes[0..len) and is freed, nothing
 * leaks.  What the error says is the target's to check.
 */
typedef struct fz_load {
    fz_alloc a;
    amq_allocator al;
    amq_errinfo err;
    amq_filter *f;
} fz_load;

static FZ_UNUSED void fz_load_begin(fz_load *l)
{
    l->al = fz_allocator(&l->a, FZ_FILTER_CAP);
    memset(&l->err, 0, sizeof l->err);
    l->f = NULL;
}

static FZ_UNUSED void fz_load_end(fz_load *l, int rc, const uint8_t *bytes, size_t len,
                                  unsigned flags)
{
    if (rc != AMQ_OK) {
        FZ_CHECK(l->f == NULL, "an error (%d) left a filter behind", rc);
    } else {
        FZ_CHECK(l->f != NULL, "AMQ_OK without a filter");
        fz_check_filter(l->f, bytes, len, flags, &l->al);
        amq_filter_free(l->f);
        l->f = NULL;
    }
    FZ_CHECK_NO_LEAK(&l->a);
}

/* data[0..size) copied at misalign (0 or 1) from a 64-byte boundary, loaded
 * by amq_filter_deserialize with flags: as fz_load_end says, and an error
 * is a known status with a terminated message; the buffer is never written
 * to.  Returns the status. */
static FZ_UNUSED int fz_load_bytes(const uint8_t *data, size_t size, unsigned flags,
                                   size_t misalign)
{
    fz_load l;
    void *base;
    uint8_t *buf = fz_copy_at(data, size, misalign, &base);
    int rc;

    fz_load_begin(&l);
    rc = amq_filter_deserialize(buf, size, flags, &l.al, &l.f, &l.err);
    fz_load_end(&l, rc, buf, size, flags);
    if (rc != AMQ_OK) {
        FZ_CHECK(rc < 0 && amq_status_name(rc) != NULL, "unknown status %d", rc);
        FZ_CHECK(l.err.status == rc && l.err.msg[0] != '\0',
                 "error %s without a message (err.status %d)", amq_status_name(rc), l.err.status);
        FZ_CHECK(memchr(l.err.msg, '\0', sizeof l.err.msg) != NULL, "message not terminated");
    }
    FZ_CHECK(size == 0 || memcmp(buf, data, size) == 0, "the input buffer was written to");
    free(base);
    return rc;
}

#endif /* AMQ_FUZZ_FILTER_CHECKS_H */
