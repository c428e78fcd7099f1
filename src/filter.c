/*
 * filter.c - the kind-independent handle: one table of operations per kind,
 * key hashing done once here, and the file and byte forms of a filter.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t by value, in the caller's memory */
#include <xxhash.h>

#include "amq/blocked_bloom.h"
#include "amq/bloom.h"
#include "amq/filter.h"
#include "amq/partitioned.h"
#include "amq/scalable_bloom.h"
#include "amq/inplace.h"
#include "common/alloc.h"
#include "common/container.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/file.h"
#include "inplace.h"
#include "kind.h"

struct amq_filter {
    const amq_kind_ops *ops;
    void *impl;
    /* amq_filter_add / _contains: the kind's one-key entry and impl, or
     * the hashed path and the handle (one_key): a load and a jump, not a
     * walk through ops and a test per key. */
    int (*add_key)(void *arg, const void *key, size_t len);
    int (*contains_key)(const void *arg, const void *key, size_t len);
    void *add_arg;
    const void *contains_arg;
    uint32_t hash_algo;
    uint64_t seed;
    amq_mapped map; /* the mapping an mmap'd filter borrows from */
    int readonly;
    int chunked; /* saved with a chunked payload checksum (AMQ_FLAG_CHUNKSUM) */
    amq_allocator alloc;
};

/* ---- kinds ------------------------------------------------------------------ */

static const amq_kind_ops *const kinds[] = {
    &amq_bloom_ops,
    &amq_cuckoo_ops,
    &amq_scuckoo_ops,
    &amq_sbloom_ops,
    &amq_blocked_ops,
    &amq_partitioned_ops,
    &amq_fuse_ops,
    &amq_ribbon_ops,
    &amq_aging_ops,
    &amq_expandable_ops,
    &amq_quotient_ops,
    &amq_pocket_ops,
};

const amq_kind_ops *amq_kind_lookup(uint32_t kind)
{
    size_t i;
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i]->kind == kind)
            return kinds[i];
    return NULL;
}

const char *amq_kind_name(uint32_t kind)
{
    const amq_kind_ops *ops = amq_kind_lookup(kind);
    return ops != NULL ? ops->name : NULL;
}

int amq_kind_has_capacity(uint32_t kind)
{
    return kind == AMQ_KIND_BLOOM || kind == AMQ_KIND_BLOCKED || kind == AMQ_KIND_PARTITIONED ||
           kind == AMQ_KIND_CUCKOO;
}

/* Which kinds read each option (docs: amq_option_kinds). */
static const struct {
    const char *name;
    const char *kinds;
} option_kinds[] = {
    {"bits_per_key", " bloom blocked partitioned "},
    {"bits", " bloom blocked "},
    {"hashes", " bloom blocked "},
    {"fingerprint_bits", " cuckoo scalable-cuckoo fuse pocket "},
    {"bucket_size", " cuckoo scalable-cuckoo "},
    {"max_kicks", " cuckoo scalable-cuckoo "},
    {"expansion", " scalable-bloom scalable-cuckoo "},
    {"nonscaling", " scalable-bloom scalable-cuckoo "},
    {"redisbloom", " scalable-bloom scalable-cuckoo "},
    {"partitions", " partitioned fuse ribbon "},
    {"arity", " fuse "},
    {"guava", " bloom "},
    {"window_ms", " aging "},
    {"rate", " aging "},
};

const char *amq_option_kinds(const char *name)
{
    size_t i;
    if (name == NULL)
        return NULL;
    for (i = 0; i < sizeof option_kinds / sizeof option_kinds[0]; i++)
        if (strcmp(option_kinds[i].name, name) == 0)
            return option_kinds[i].kinds;
    return NULL;
}

int amq_option_applies(const char *name, uint32_t kind)
{
    const char *readers = amq_option_kinds(name), *k = amq_kind_name(kind), *p;
    size_t n;
    if (readers == NULL)
        return 1;
    if (k == NULL)
        return 0;
    n = strlen(k);
    for (p = strstr(readers, k); p != NULL; p = strstr(p + 1, k))
        if (p[-1] == ' ' && p[n] == ' ')
            return 1;
    return 0;
}

int amq_kind_keeps_copies(uint32_t kind)
{
    return kind == AMQ_KIND_CUCKOO || kind == AMQ_KIND_SCALABLE_CUCKOO ||
           kind == AMQ_KIND_EXPANDABLE || kind == AMQ_KIND_QUOTIENT || kind == AMQ_KIND_POCKET;
}

int amq_kind_can_remove(uint32_t kind)
{
    return kind == AMQ_KIND_CUCKOO || kind == AMQ_KIND_SCALABLE_CUCKOO ||
           kind == AMQ_KIND_EXPANDABLE;
}

int amq_kind_updates_in_place(uint32_t kind)
{
    return kind == AMQ_KIND_BLOOM || kind == AMQ_KIND_BLOCKED;
}

int amq_kind_has_redisbloom_mode(uint32_t kind)
{
    return kind == AMQ_KIND_SCALABLE_BLOOM || kind == AMQ_KIND_SCALABLE_CUCKOO;
}

int amq_kind_is_bit_array(uint32_t kind)
{
    return kind == AMQ_KIND_BLOOM || kind == AMQ_KIND_BLOCKED || kind == AMQ_KIND_PARTITIONED;
}

int amq_kind_puts_off_growth(uint32_t kind)
{
    return kind == AMQ_KIND_POCKET;
}

int amq_kind_from_name(const char *name, uint32_t *kind)
{
    size_t i;
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strcmp(kinds[i]->name, name) == 0) {
            *kind = kinds[i]->kind;
            return AMQ_OK;
        }
    }
    return AMQ_EKIND;
}

/* ---- life cycle -------------------------------------------------------------- */

static int add_hashed(void *arg, const void *key, size_t len);
static int contains_hashed(const void *arg, const void *key, size_t len);

/* The one-key entries of f (see struct amq_filter), set again whenever
 * readonly changes. */
static void one_key(amq_filter *f)
{
    if (f->ops->add_key != NULL && !f->readonly) {
        f->add_key = f->ops->add_key;
        f->add_arg = f->impl;
    } else {
        f->add_key = add_hashed;
        f->add_arg = f;
    }
    if (f->ops->contains_key_of != NULL) {
        f->contains_arg = f->impl;
        f->contains_key = f->ops->contains_key_of(f->impl, &f->contains_arg);
    } else if (f->ops->contains_key != NULL) {
        f->contains_key = f->ops->contains_key;
        f->contains_arg = f->impl;
    } else {
        f->contains_key = contains_hashed;
        f->contains_arg = f;
    }
}

static int wrap(const amq_kind_ops *ops, void *impl, const amq_allocator *alloc,
                amq_filter **out)
{
    amq_allocator a;
    amq_filter *f;

    amq_alloc_init(&a, alloc);
    f = amq_calloc(&a, sizeof *f);
    if (f == NULL) {
        ops->destroy(impl);
        return AMQ_ENOMEM;
    }
    f->ops = ops;
    f->impl = impl;
    f->alloc = a;
    ops->hash_spec(impl, &f->hash_algo, &f->seed);
    f->readonly = ops->is_view(impl);
    one_key(f);
    *out = f;
    return AMQ_OK;
}

int amq_filter_wrap(const amq_kind_ops *ops, void *impl, const amq_allocator *alloc,
                    amq_filter **out)
{
    return wrap(ops, impl, alloc, out);
}

int amq_config_check_threads(const amq_config *cfg, amq_errinfo *err)
{
    if (cfg->threads <= 1)
        return AMQ_OK;
    return amq_err(err, AMQ_EINVAL,
                   "threads %u: no filter's creation or build uses threads (give 0 or 1)",
                   cfg->threads);
}

int amq_filter_new(const amq_config *cfg, amq_filter **out, amq_errinfo *err)
{
    const amq_kind_ops *ops;
    void *impl = NULL;
    int rc;

    *out = NULL;
    ops = amq_kind_lookup(cfg->kind);
    if (ops == NULL)
        return amq_err(err, AMQ_EKIND, "unknown filter kind %u", cfg->kind);
    rc = amq_hash_check_err(cfg->hash_algo, cfg->seed, 0, err);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_config_check_threads(cfg, err);
    if (rc != AMQ_OK)
        return rc;
    rc = ops->create(cfg, &impl, err);
    if (rc != AMQ_OK)
        return rc;
    rc = wrap(ops, impl, cfg->alloc, out);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "out of memory");
    return AMQ_OK;
}

void amq_filter_free(amq_filter *f)
{
    amq_allocator a;
    if (f == NULL)
        return;
    a = f->alloc;
    f->ops->destroy(f->impl);
    amq_file_unmap(&f->map);
    amq_free(&a, f, sizeof *f);
}

uint32_t amq_filter_kind(const amq_filter *f)
{
    return f->ops->kind;
}

int amq_filter_is_readonly(const amq_filter *f)
{
    return f->readonly;
}

int amq_filter_clone(const amq_filter *f, const amq_allocator *alloc, amq_filter **out)
{
    void *impl;
    int rc;

    *out = NULL;
    rc = f->ops->clone(f->impl, alloc, &impl);
    if (rc != AMQ_OK)
        return rc;
    return wrap(f->ops, impl, alloc, out);
}

/* ---- keys --------------------------------------------------------------------- */

amq_hash128 amq_filter_hash(const amq_filter *f, const void *key, size_t len)
{
    return amq_hash_key(f->hash_algo, f->seed, key, len);
}

int amq_filter_add_hash(amq_filter *f, amq_hash128 h)
{
    if (f->readonly)
        return AMQ_EREADONLY;
    return f->ops->add(f->impl, h);
}

int amq_filter_contains_hash(const amq_filter *f, amq_hash128 h)
{
    return f->ops->contains(f->impl, h);
}

int amq_filter_add_unique_hash(amq_filter *f, amq_hash128 h)
{
    if (f->readonly)
        return AMQ_EREADONLY;
    /* only a kind that keeps copies would store the key twice; the others'
     * add is already a set add (and an aging add must refresh its key) */
    if (amq_kind_keeps_copies(f->ops->kind) && f->ops->contains(f->impl, h) == 1)
        return 0;
    return f->ops->add(f->impl, h);
}

int amq_filter_add_unique(amq_filter *f, const void *key, size_t len)
{
    return amq_filter_add_unique_hash(f, amq_filter_hash(f, key, len));
}

int amq_filter_refusal_hash(const amq_filter *f, amq_hash128 h, uint32_t *why)
{
    /* NULL: a kind that refuses for no key's copies */
    *why = f->ops->refusal != NULL ? f->ops->refusal(f->impl, h) : AMQ_REFUSAL_FULL;
    return AMQ_OK;
}

int amq_filter_refusal(const amq_filter *f, const void *key, size_t len, uint32_t *why)
{
    return amq_filter_refusal_hash(f, amq_filter_hash(f, key, len), why);
}

int amq_filter_remove_hash(amq_filter *f, amq_hash128 h)
{
    if (f->ops->remove == NULL)
        return AMQ_EUNSUPPORTED;
    if (f->readonly)
        return AMQ_EREADONLY;
    return f->ops->remove(f->impl, h);
}

/* The kinds without one-key entries (and a read-only handle's adds): hash,
 * then the _hash form; arg is the handle. */
static int add_hashed(void *arg, const void *key, size_t len)
{
    amq_filter *f = arg;
    return amq_filter_add_hash(f, amq_filter_hash(f, key, len));
}

static int contains_hashed(const void *arg, const void *key, size_t len)
{
    const amq_filter *f = arg;
    return amq_filter_contains_hash(f, amq_filter_hash(f, key, len));
}

int amq_filter_add(amq_filter *f, const void *key, size_t len)
{
    return f->add_key(f->add_arg, key, len);
}

int amq_filter_contains(const amq_filter *f, const void *key, size_t len)
{
    return f->contains_key(f->contains_arg, key, len);
}

int amq_filter_remove(amq_filter *f, const void *key, size_t len)
{
    return amq_filter_remove_hash(f, amq_filter_hash(f, key, len));
}

int amq_filter_add_batch(amq_filter *f, const amq_hash128 *h, size_t n, uint8_t *added)
{
    size_t i;
    int rc;

    if (f->readonly)
        return AMQ_EREADONLY;
    if (f->ops->add_batch != NULL)
        return f->ops->add_batch(f->impl, h, n, added);
    for (i = 0; i < n; i++) {
        rc = f->ops->add(f->impl, h[i]);
        if (rc < 0)
            return rc;
        if (added != NULL)
            added[i] = (uint8_t)rc;
    }
    return AMQ_OK;
}

int amq_filter_contains_batch(const amq_filter *f, const amq_hash128 *h, size_t n, uint8_t *out)
{
    size_t i;
    if (f->ops->contains_batch != NULL) {
        f->ops->contains_batch(f->impl, h, n, out);
        return AMQ_OK;
    }
    for (i = 0; i < n; i++)
        out[i] = (uint8_t)f->ops->contains(f->impl, h[i]);
    return AMQ_OK;
}

/* Hashes handed to a kind without its own packed-key loop, a chunk at a time. */
#define FIXED_CHUNK 1024

int amq_filter_contains_batch_fixed(const amq_filter *f, const void *keys, size_t key_len,
                                    size_t n, uint8_t *out, uint64_t *count)
{
    const uint8_t *k = keys;
    amq_hash128 h[FIXED_CHUNK];
    uint8_t o[FIXED_CHUNK], *dst;
    uint64_t c = 0;
    size_t i, j, m;

    if (f->ops->contains_batch_fixed != NULL) {
        c = f->ops->contains_batch_fixed(f->impl, keys, key_len, n, out);
    } else {
        for (i = 0; i < n; i += m) {
            m = n - i < FIXED_CHUNK ? n - i : FIXED_CHUNK;
            for (j = 0; j < m; j++)
                h[j] = amq_hash_key(f->hash_algo, f->seed, k + (i + j) * key_len, key_len);
            dst = out != NULL ? out + i : o;
            (void)amq_filter_contains_batch(f, h, m, dst);
            for (j = 0; j < m; j++)
                c += dst[j];
        }
    }
    if (count != NULL)
        *count = c;
    return AMQ_OK;
}

int amq_filter_set_concurrent(amq_filter *f, int on)
{
    if (f->readonly)
        return AMQ_EREADONLY;
    if (f->ops->set_concurrent == NULL)
        return AMQ_EUNSUPPORTED;
    return f->ops->set_concurrent(f->impl, on);
}

/* ---- combining ------------------------------------------------------------------ */

static int check_combinable(const amq_filter *dst, const amq_filter *src, const char *what,
                            amq_errinfo *err)
{
    if (dst->ops != src->ops)
        return amq_err(err, AMQ_EINCOMPAT, "cannot %s a %s filter with a %s filter", what,
                       dst->ops->name, src->ops->name);
    if (dst->hash_algo != src->hash_algo || dst->seed != src->seed)
        return amq_err(err, AMQ_EINCOMPAT, "cannot %s filters hashed differently (%s seed %llu"
                       " vs %s seed %llu)", what, amq_hash_algo_name(dst->hash_algo),
                       (unsigned long long)dst->seed, amq_hash_algo_name(src->hash_algo),
                       (unsigned long long)src->seed);
    if (dst->readonly)
        return amq_err(err, AMQ_EREADONLY, "cannot %s into a read-only filter", what);
    return AMQ_OK;
}

int amq_filter_merge(amq_filter *dst, const amq_filter *src, amq_errinfo *err)
{
    int rc = check_combinable(dst, src, "merge", err);
    if (rc != AMQ_OK)
        return rc;
    if (dst->ops->merge == NULL)
        return amq_err(err, AMQ_EUNSUPPORTED, "%s filters cannot be merged", dst->ops->name);
    return dst->ops->merge(dst->impl, src->impl, err);
}

int amq_filter_intersect(amq_filter *dst, const amq_filter *src, amq_errinfo *err)
{
    int rc = check_combinable(dst, src, "intersect", err);
    if (rc != AMQ_OK)
        return rc;
    if (dst->ops->intersect == NULL)
        return amq_err(err, AMQ_EUNSUPPORTED, "%s filters cannot be intersected",
                       dst->ops->name);
    return dst->ops->intersect(dst->impl, src->impl, err);
}

/*
 * What a filter holds, as bytes: its serialized form with the fields that
 * describe rather than hold (flags, item count, checksums, the partitioned
 * index's counts and checksums) zeroed, so that two filters holding the
 * same compare equal byte for byte.  *arrays: where a Bloom kind's bit
 * arrays start.  *out comes from f's allocator (a host counts it and may
 * refuse it: AMQ_ENOMEM); the caller frees it with amq_free(&f->alloc, *out,
 * *len).
 */
static int content_bytes(const amq_filter *f, uint8_t **out, size_t *len, size_t *arrays)
{
    amq_container c;
    uint64_t idx;
    uint8_t *b;
    size_t n;
    int rc;

    rc = amq_filter_serialized_size(f, &n);
    if (rc != AMQ_OK)
        return rc;
    b = amq_malloc(&f->alloc, n);
    if (b == NULL)
        return AMQ_ENOMEM;
    rc = amq_filter_serialize(f, b, n, NULL);
    if (rc == AMQ_OK)
        rc = amq_container_parse(b, n, n, &c, NULL);
    if (rc != AMQ_OK) {
        amq_free(&f->alloc, b, n);
        return rc;
    }
    /* flags (14..15), items (24..31), the payload's checksum (56..63) and the
     * header's (after the parameters) */
    memset(b + 14, 0, 2);
    memset(b + 24, 0, 8);
    memset(b + 56, 0, 8);
    memset(b + AMQ_FILE_FIXED + c.params_len, 0, 8);
    *arrays = (size_t)c.payload_off;
    if (f->ops == &amq_partitioned_ops) {
        amq_part_blank_index(b + c.payload_off, c.payload_len, &idx);
        *arrays += (size_t)idx;
    }
    *out = b;
    *len = n;
    return AMQ_OK;
}

int amq_filter_equal(const amq_filter *a, const amq_filter *b)
{
    uint8_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0, ax, ay;
    int rc;

    if (a == b)
        return 1;
    if (a->ops != b->ops)
        return 0;
    rc = content_bytes(a, &x, &nx, &ax);
    if (rc == AMQ_OK)
        rc = content_bytes(b, &y, &ny, &ay);
    if (rc == AMQ_OK)
        rc = nx == ny && memcmp(x, y, nx) == 0;
    amq_free(&a->alloc, x, nx);
    amq_free(&b->alloc, y, ny);
    return rc;
}

int amq_filter_is_subset(const amq_filter *a, const amq_filter *b, amq_errinfo *err)
{
    uint8_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0, ax, ay, i;
    int rc;

    if (!amq_kind_is_bit_array(a->ops->kind))
        return amq_err(err, AMQ_EUNSUPPORTED, "subset tests compare bit arrays: Bloom kinds "
                       "(bloom, blocked, partitioned) only, not %s", a->ops->name);
    if (a->ops != b->ops)
        return amq_err(err, AMQ_EINCOMPAT, "subset tests need filters of the same kind, not "
                       "%s and %s", a->ops->name, b->ops->name);
    rc = content_bytes(a, &x, &nx, &ax);
    if (rc == AMQ_OK)
        rc = content_bytes(b, &y, &ny, &ay);
    if (rc != AMQ_OK) {
        rc = amq_err(err, rc, "cannot read a filter's bytes: %s", amq_strerror(rc));
    } else if (nx != ny || ax != ay || memcmp(x, y, ax) != 0) {
        rc = amq_err(err, AMQ_EINCOMPAT, "subset tests need filters of the same kind, "
                     "geometry, hash and seed");
    } else {
        rc = 1;
        for (i = ax; i < nx && rc; i++)
            if (x[i] & ~y[i])
                rc = 0;
    }
    amq_free(&a->alloc, x, nx);
    amq_free(&b->alloc, y, ny);
    return rc;
}

int amq_filter_clear(amq_filter *f)
{
    if (f->readonly)
        return AMQ_EREADONLY;
    return f->ops->clear(f->impl);
}

int amq_filter_settle(amq_filter *f)
{
    if (f->readonly)
        return AMQ_EREADONLY;
    return f->ops->settle != NULL ? f->ops->settle(f->impl) : AMQ_OK;
}

/* ---- description ------------------------------------------------------------------ */

void amq_filter_stats(const amq_filter *f, amq_stats *st)
{
    memset(st, 0, sizeof *st);
    f->ops->stats(f->impl, st);
    st->kind = f->ops->kind;
    st->hash_algo = f->hash_algo;
    st->seed = f->seed;
    st->bits_per_item = st->items > 0 ? (double)st->bytes * 8.0 / (double)st->items : 0.0;
}

int amq_filter_describe(const amq_filter *f, amq_field_fn fn, void *ctx)
{
    if (f == NULL || fn == NULL)
        return AMQ_EINVAL; /* the kinds call fn unconditionally */
    return f->ops->describe(f->impl, fn, ctx);
}

void *amq_filter_impl(const amq_filter *f)
{
    return f->impl;
}

struct amq_bloom *amq_filter_bloom(amq_filter *f)
{
    return f->ops->kind == AMQ_KIND_BLOOM ? f->impl : NULL;
}

int amq_filter_from_bloom(struct amq_bloom *b, amq_filter **out)
{
    *out = NULL;
    return wrap(&amq_bloom_ops, b, NULL, out);
}

struct amq_blocked *amq_filter_blocked(amq_filter *f)
{
    return f->ops->kind == AMQ_KIND_BLOCKED ? f->impl : NULL;
}

struct amq_partitioned *amq_filter_partitioned(amq_filter *f)
{
    return f->ops->kind == AMQ_KIND_PARTITIONED ? f->impl : NULL;
}

struct amq_sbloom *amq_filter_sbloom(amq_filter *f)
{
    return f->ops->kind == AMQ_KIND_SCALABLE_BLOOM ? f->impl : NULL;
}

struct amq_scuckoo *amq_filter_scuckoo(amq_filter *f)
{
    return f->ops->kind == AMQ_KIND_SCALABLE_CUCKOO ? f->impl : NULL;
}

int amq_filter_from_sbloom(struct amq_sbloom *s, amq_filter **out)
{
    *out = NULL;
    return wrap(&amq_sbloom_ops, s, NULL, out);
}

int amq_filter_from_scuckoo(struct amq_scuckoo *c, amq_filter **out)
{
    *out = NULL;
    return wrap(&amq_scuckoo_ops, c, NULL, out);
}

int amq_filter_from_partitioned(struct amq_partitioned *p, amq_filter **out)
{
    *out = NULL;
    return wrap(&amq_partitioned_ops, p, NULL, out);
}

/* ---- writing ---------------------------------------------------------------------------
 * The payload is streamed first, at its offset, through a buffered sink that
 * also computes its checksum; the header, which records that checksum, is
 * written last at offset 0.  The same writer fills files and memory.  A kind
 * that places bytes out of order (kind.h: write_at, a partitioned filter in
 * concurrent mode) has its payload summed afterwards, read back from the
 * target: over the bytes written, whatever adds did meanwhile.
 */

typedef struct out_target {
    int (*pwrite)(void *ctx, const void *data, size_t len, uint64_t offset, amq_errinfo *err);
    /* reads written bytes back (NULL: the target keeps none to read) */
    int (*pread)(void *ctx, void *data, size_t len, uint64_t offset, amq_errinfo *err);
    void *ctx;
} out_target;

#define SINK_BUF (1u << 16)

typedef struct payload_sink {
    XXH3_state_t sum; /* first: it wants the 64-byte alignment of the struct */
    XXH3_state_t chunk; /* the current 4 KiB chunk (chunked checksum) */
    int chunked;
    int nosum; /* 1: no checksum (a range past the header needs none) */
    int placed; /* 1: bytes were written out of order (write_at): summed at the end */
    uint64_t chunk_pos, chunk_index, chunk_sum;
    const out_target *t;
    uint64_t start;  /* where the payload begins */
    uint64_t offset; /* where the next flushed byte goes */
    uint64_t total;
    size_t used;
    amq_errinfo *err;
    uint8_t buf[SINK_BUF];
} payload_sink;

static int sink_flush(payload_sink *s)
{
    int rc;
    if (s->used == 0)
        return AMQ_OK;
    rc = s->t->pwrite(s->t->ctx, s->buf, s->used, s->offset, s->err);
    s->offset += s->used;
    s->used = 0;
    return rc;
}

static void sink_sum_reset(payload_sink *s)
{
    (void)XXH3_64bits_reset(&s->sum);
    (void)XXH3_64bits_reset_withSeed(&s->chunk, 0);
    s->chunk_pos = s->chunk_index = s->chunk_sum = 0;
}

/* The next len bytes of the payload, in order, into its checksum. */
static void sink_sum(payload_sink *s, const void *data, size_t len)
{
    if (s->nosum) {
        /* the header, which records the sum, is not wanted */
    } else if (s->chunked) {
        const uint8_t *p = data;
        size_t left = len, n;
        while (left > 0) {
            n = AMQ_CHUNK - (size_t)s->chunk_pos;
            if (n > left)
                n = left;
            (void)XXH3_64bits_update(&s->chunk, p, n);
            s->chunk_pos += n;
            p += n;
            left -= n;
            if (s->chunk_pos == AMQ_CHUNK) {
                s->chunk_sum += XXH3_64bits_digest(&s->chunk);
                s->chunk_pos = 0;
                (void)XXH3_64bits_reset_withSeed(&s->chunk, ++s->chunk_index);
            }
        }
    } else {
        (void)XXH3_64bits_update(&s->sum, data, len);
    }
}

static int sink_write(void *ctx, const void *data, size_t len)
{
    payload_sink *s = ctx;
    int rc;

    sink_sum(s, data, len);
    s->total += len;
    if (len >= SINK_BUF) {
        if ((rc = sink_flush(s)) != AMQ_OK)
            return rc;
        rc = s->t->pwrite(s->t->ctx, data, len, s->offset, s->err);
        s->offset += len;
        return rc;
    }
    if (s->used + len > SINK_BUF && (rc = sink_flush(s)) != AMQ_OK)
        return rc;
    memcpy(s->buf + s->used, data, len);
    s->used += len;
    return AMQ_OK;
}

/* Bytes at a payload offset, outside the stream (kind.h): counted, not
 * summed - write_filter sums the payload as written once it is all there. */
static int sink_write_at(void *ctx, const void *data, size_t len, uint64_t offset)
{
    payload_sink *s = ctx;

    s->placed = 1;
    s->total += len;
    return s->t->pwrite(s->t->ctx, data, len, s->start + offset, s->err);
}

/* The payload's checksum over its bytes as the target holds them: the
 * kind's sums were taken over the copies it wrote, and this one must be
 * over the same bytes, in payload order. */
static int sink_sum_written(payload_sink *s)
{
    uint64_t pos;
    size_t n;
    int rc;

    sink_sum_reset(s);
    for (pos = 0; pos < s->total; pos += n) {
        n = s->total - pos < SINK_BUF ? (size_t)(s->total - pos) : SINK_BUF;
        rc = s->t->pread(s->t->ctx, s->buf, n, s->start + pos, s->err);
        if (rc != AMQ_OK)
            return rc;
        sink_sum(s, s->buf, n);
    }
    return AMQ_OK;
}

/* The item count a header records.  The count alone: the Bloom kinds'
 * stats count the bits set, a pass over the whole array that a save (and
 * an in-place update) need not make. */
static uint64_t header_items(const amq_filter *f)
{
    uint64_t items, capacity;
    amq_filter_counts(f, &items, &capacity);
    return items;
}

void amq_filter_counts(const amq_filter *f, uint64_t *items, uint64_t *capacity)
{
    amq_stats st;
    if (f->ops->kind == AMQ_KIND_BLOOM) {
        amq_bloom_params p;
        amq_bloom_get_params(f->impl, &p);
        *items = amq_bloom_items(f->impl);
        *capacity = p.capacity;
        return;
    }
    if (f->ops->kind == AMQ_KIND_BLOCKED) {
        amq_blocked_params p;
        amq_blocked_get_params(f->impl, &p);
        *items = amq_blocked_items(f->impl);
        *capacity = p.capacity;
        return;
    }
    if (f->ops->kind == AMQ_KIND_PARTITIONED) {
        amq_partition_info pi;
        uint32_t i, n = amq_partitioned_partitions(f->impl);
        *items = amq_partitioned_items(f->impl);
        *capacity = 0;
        for (i = 0; i < n; i++)
            if (amq_partitioned_partition_info(f->impl, i, &pi) == AMQ_OK)
                *capacity += pi.capacity;
        return;
    }
    if (f->ops->kind == AMQ_KIND_SCALABLE_BLOOM) {
        amq_sbloom_info in;
        amq_sbloom_get_info(f->impl, &in);
        *items = in.items;
        *capacity = in.capacity;
        return;
    }
    /* the other kinds' stats keep their counts: no array is read */
    memset(&st, 0, sizeof st);
    f->ops->stats(f->impl, &st);
    *items = st.items;
    *capacity = st.capacity;
}

/* with_header 0: only the payload is wanted (no checksum pass, no header). */
static int write_filter(const amq_filter *f, const out_target *t, int with_header,
                        amq_errinfo *err)
{
    const amq_kind_ops *ops = f->ops;
    amq_container c;
    payload_sink *s;
    uint8_t *scratch, *params, *header;
    size_t plen, scratch_size;
    uint64_t off;
    amq_sink sink;
    int rc;

    plen = ops->params_size(f->impl);
    if (plen > AMQ_FILE_MAX_PARAMS)
        return amq_err(err, AMQ_EOVERFLOW, "parameter block too large");
    off = amq_container_payload_offset((uint32_t)plen);
    /* One scratch block from the filter's allocator (a host that routes
     * memory elsewhere sees saves too, and a failure is an AMQ_ENOMEM with
     * nothing written): the sink, 64-byte aligned for its XXH3 state, then
     * the header area and the parameter block. */
    scratch_size = sizeof *s + 63 + (size_t)off + plen + 1;
    scratch = amq_malloc(&f->alloc, scratch_size);
    if (scratch == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    s = (payload_sink *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    header = (uint8_t *)(s + 1);
    params = header + off;
    memset(s, 0, offsetof(payload_sink, buf));
    sink_sum_reset(s);
    s->chunked = f->chunked;
    s->nosum = !with_header;
    s->t = t;
    s->start = s->offset = off;
    s->err = err;
    memset(&sink, 0, sizeof sink);
    sink.write = sink_write;
    /* out of order only where the bytes can be summed afterwards (or need no sum) */
    sink.write_at = s->nosum || t->pread != NULL ? sink_write_at : NULL;
    sink.ctx = s;
    ops->params_write(f->impl, params);

    rc = ops->payload_write(f->impl, &sink);
    if (rc == AMQ_OK)
        rc = sink_flush(s);
    if (rc == AMQ_OK && s->placed && !s->nosum)
        rc = sink_sum_written(s);
    if (rc != AMQ_OK)
        goto done;
    if (s->total != ops->payload_size(f->impl)) {
        rc = amq_err(err, AMQ_ECORRUPT, "internal error: payload size mismatch");
        goto done;
    }
    if (!with_header)
        goto done;

    memset(&c, 0, sizeof c);
    c.version = AMQ_FILE_VERSION;
    c.kind = ops->kind;
    c.hash_algo = f->hash_algo;
    c.seed = f->seed;
    /* the payload's own count where it records one (a partitioned index: the
     * header's must equal its sum, and adds may have run since) */
    c.items = sink.items_set ? sink.items : header_items(f);
    c.params = params;
    c.params_len = (uint32_t)plen;
    c.payload_len = s->total;
    c.payload_sum = XXH3_64bits_digest(&s->sum);
    if (f->chunked) {
        c.flags = AMQ_FLAG_CHUNKSUM;
        c.payload_sum = s->chunk_sum + (s->chunk_pos > 0 ? XXH3_64bits_digest(&s->chunk) : 0);
    }
    amq_container_write_header(&c, header);
    rc = t->pwrite(t->ctx, header, (size_t)off, 0, err);
done:
    amq_free(&f->alloc, scratch, scratch_size);
    return rc;
}

static int file_pwrite(void *ctx, const void *data, size_t len, uint64_t offset,
                       amq_errinfo *err)
{
    return amq_target_pwrite(ctx, data, len, offset, err);
}

static int file_pread(void *ctx, void *data, size_t len, uint64_t offset, amq_errinfo *err)
{
    return amq_target_pread(ctx, data, len, offset, err);
}

/* A device or standard output cannot be written at offsets (the header
 * goes last, once the payload's checksum is known): the bytes are made in
 * memory first. */
static int save_direct(amq_target *t, const amq_filter *f, amq_errinfo *err)
{
    uint64_t size;
    size_t written;
    void *buf;
    int rc;

    if ((rc = amq_filter_serialized_size(f, &size)) != AMQ_OK)
        return amq_err(err, rc, "%s: filter too large to save", t->given);
    /* from the filter's allocator, as all a save's scratch: a host counts it */
    if (size > SIZE_MAX || (buf = amq_malloc(&f->alloc, (size_t)size)) == NULL)
        return amq_err(err, AMQ_ENOMEM, "%s: out of memory", t->given);
    rc = amq_filter_serialize(f, buf, (size_t)size, &written);
    if (rc != AMQ_OK)
        rc = amq_err(err, rc, "%s: %s", t->given, amq_strerror(rc));
    else
        rc = amq_target_write(t, buf, written, err);
    amq_free(&f->alloc, buf, (size_t)size);
    return rc;
}

/* A save's failure names its file: the kinds' payload writers do not know it. */
static int save_failed(const amq_target *t, int rc, amq_errinfo *err)
{
    char why[sizeof err->msg];
    if (err == NULL || strncmp(err->msg, t->given, strlen(t->given)) == 0)
        return rc;
    snprintf(why, sizeof why, "%s", err->msg[0] != '\0' ? err->msg : amq_strerror(rc));
    return amq_err(err, rc, "%s: %s", t->given, why);
}

int amq_target_save_filter(amq_target *t, const amq_filter *f, amq_errinfo *err)
{
    out_target o;
    int rc;

    if (t == NULL || f == NULL)
        return amq_err(err, AMQ_EINVAL, "no target or no filter");
    if (err != NULL)
        err->msg[0] = '\0'; /* a failure below is named from what it sets, or its status */
    rc = amq_target_begin(t, NULL, err);
    if (rc != AMQ_OK)
        return rc;
    if (t->direct) {
        rc = save_direct(t, f, err);
    } else {
        o.pwrite = file_pwrite;
        o.pread = file_pread;
        o.ctx = t;
        rc = write_filter(f, &o, 1, err);
    }
    if (rc != AMQ_OK) {
        amq_target_abort(t);
        return save_failed(t, rc, err);
    }
    return amq_target_commit(t, err);
}

int amq_filter_save(const amq_filter *f, const char *path, unsigned flags, amq_errinfo *err)
{
    const amq_allocator *a = f != NULL ? &f->alloc : NULL;
    amq_target *t;
    int rc;

    /* On the heap: three path buffers are too much for a caller's stack;
     * the filter's heap, where a host counts a save's memory. */
    rc = amq_target_open_alloc(path, flags & AMQ_SAVE_EXCL ? AMQ_TARGET_EXCL : 0, a, &t, err);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_target_save_filter(t, f, err);
    amq_target_close_alloc(t, a);
    return rc;
}

typedef struct mem_out {
    uint8_t *buf;
    size_t cap;
} mem_out;

static int mem_pwrite(void *ctx, const void *data, size_t len, uint64_t offset,
                      amq_errinfo *err)
{
    mem_out *m = ctx;
    if (offset > m->cap || len > m->cap - offset)
        return amq_err(err, AMQ_EINVAL, "buffer too small");
    memcpy(m->buf + offset, data, len);
    return AMQ_OK;
}

static int mem_pread(void *ctx, void *data, size_t len, uint64_t offset, amq_errinfo *err)
{
    const mem_out *m = ctx;
    if (offset > m->cap || len > m->cap - offset)
        return amq_err(err, AMQ_EINVAL, "buffer too small");
    memcpy(data, m->buf + offset, len);
    return AMQ_OK;
}

int amq_filter_set_chunked_checksum(amq_filter *f, int on)
{
    if (f == NULL)
        return AMQ_EINVAL;
    f->chunked = on != 0;
    return AMQ_OK;
}

int amq_filter_header_area(const amq_filter *f, uint64_t payload_sum, uint8_t *out, size_t cap,
                           size_t *len)
{
    const amq_kind_ops *ops = f->ops;
    amq_container c;
    uint8_t *params;
    size_t plen = ops->params_size(f->impl);
    uint64_t off;

    if (plen > AMQ_FILE_MAX_PARAMS)
        return AMQ_EOVERFLOW;
    off = amq_container_payload_offset((uint32_t)plen);
    if (off > cap)
        return AMQ_EINVAL;
    params = amq_malloc(&f->alloc, plen + 1);
    if (params == NULL)
        return AMQ_ENOMEM;
    ops->params_write(f->impl, params);
    memset(&c, 0, sizeof c);
    c.version = AMQ_FILE_VERSION;
    c.kind = ops->kind;
    c.hash_algo = f->hash_algo;
    c.seed = f->seed;
    c.items = header_items(f);
    c.flags = f->chunked ? AMQ_FLAG_CHUNKSUM : 0;
    c.params = params;
    c.params_len = (uint32_t)plen;
    c.payload_len = ops->payload_size(f->impl);
    c.payload_sum = payload_sum;
    amq_container_write_header(&c, out);
    amq_free(&f->alloc, params, plen + 1);
    *len = (size_t)off;
    return AMQ_OK;
}

int amq_filter_serialized_size(const amq_filter *f, size_t *size)
{
    size_t plen = f->ops->params_size(f->impl);
    uint64_t off, payload = f->ops->payload_size(f->impl);

    if (plen > AMQ_FILE_MAX_PARAMS)
        return AMQ_EOVERFLOW;
    off = amq_container_payload_offset((uint32_t)plen);
    if (payload > UINT64_MAX - off || off + payload > SIZE_MAX)
        return AMQ_EOVERFLOW;
    *size = (size_t)(off + payload);
    return AMQ_OK;
}

int amq_filter_serialize(const amq_filter *f, void *buf, size_t cap, size_t *written)
{
    size_t size;
    mem_out m;
    out_target t;
    int rc;

    rc = amq_filter_serialized_size(f, &size);
    if (rc != AMQ_OK)
        return rc;
    if (size > cap)
        return AMQ_EINVAL;
    m.buf = buf;
    m.cap = cap;
    t.pwrite = mem_pwrite;
    t.pread = mem_pread;
    t.ctx = &m;
    rc = write_filter(f, &t, 1, NULL);
    if (rc == AMQ_OK && written != NULL)
        *written = (size_t)size;
    return rc;
}

/* The part [off, off + cap) of the serialized bytes: pieces outside it are
 * dropped as the writer produces them. */
typedef struct range_out {
    uint8_t *buf;
    uint64_t off, cap;
} range_out;

static int range_pwrite(void *ctx, const void *data, size_t len, uint64_t offset,
                        amq_errinfo *err)
{
    range_out *r = ctx;
    uint64_t lo = offset > r->off ? offset : r->off;
    uint64_t hi = offset + len < r->off + r->cap ? offset + len : r->off + r->cap;
    (void)err;
    if (lo < hi)
        memcpy(r->buf + (lo - r->off), (const uint8_t *)data + (lo - offset), (size_t)(hi - lo));
    return AMQ_OK;
}

int amq_filter_serialize_range(const amq_filter *f, uint64_t off, void *buf, size_t cap,
                               size_t *written)
{
    size_t size;
    uint64_t poff;
    range_out r;
    out_target t;
    size_t plen;
    int rc;

    rc = amq_filter_serialized_size(f, &size);
    if (rc != AMQ_OK)
        return rc;
    if (off > size)
        return AMQ_ERANGE;
    if (cap > size - off)
        cap = (size_t)(size - off);
    *written = cap;
    if (cap == 0)
        return AMQ_OK;
    plen = f->ops->params_size(f->impl);
    poff = amq_container_payload_offset((uint32_t)plen);
    r.buf = buf;
    r.off = off;
    r.cap = cap;
    t.pwrite = range_pwrite;
    t.pread = NULL; /* the rest of the bytes is not kept */
    t.ctx = &r;
    /* The header (with the payload's checksum: one pass over it) only when
     * the range reaches into it; the payload's pieces are copied, not summed. */
    return write_filter(f, &t, off < poff, NULL);
}

int amq_filter_peek(const void *buf, size_t len, size_t *size, uint32_t *kind,
                    amq_errinfo *err)
{
    const uint8_t *b = buf;
    amq_container c;
    uint64_t off, payload, need;
    uint32_t plen;
    int rc;

    *size = 0;
    if (len < AMQ_FILE_FIXED) {
        if (memcmp(b, AMQ_FILE_MAGIC, len < AMQ_FILE_MAGIC_LEN ? len : AMQ_FILE_MAGIC_LEN) != 0)
            return amq_err(err, AMQ_EMAGIC, "not an amq filter (bad magic bytes)");
        *size = AMQ_FILE_FIXED;
        return amq_err(err, AMQ_ETRUNC, "%zu bytes: the header needs %d", len, AMQ_FILE_FIXED);
    }
    if (memcmp(b, AMQ_FILE_MAGIC, AMQ_FILE_MAGIC_LEN) != 0)
        return amq_err(err, AMQ_EMAGIC, "not an amq filter (bad magic bytes)");
    plen = amq_load32(b + 32);
    if (plen <= AMQ_FILE_MAX_PARAMS) {
        need = amq_container_payload_offset(plen);
        if (len < need) {
            *size = need;
            return amq_err(err, AMQ_ETRUNC, "%zu bytes: the header and parameters need %llu",
                           len, (unsigned long long)need);
        }
    }
    off = amq_load64(b + 40);
    payload = amq_load64(b + 48);
    /* parse against the size the header declares: every field is then
     * checked (checksum first) before that size is believed */
    rc = amq_container_parse(b, len, payload > UINT64_MAX - off ? UINT64_MAX : off + payload, &c,
                             err);
    if (rc != AMQ_OK)
        return rc;
    if (amq_kind_lookup(c.kind) == NULL)
        return amq_err(err, AMQ_EKIND, "unknown filter kind %u (written by a newer amq?)",
                       c.kind);
    rc = amq_hash_check_err(c.hash_algo, c.seed, AMQ_ECORRUPT, err);
    if (rc != AMQ_OK)
        return rc;
    *size = c.payload_off + c.payload_len;
    if (kind != NULL)
        *kind = c.kind;
    return AMQ_OK;
}

/* ---- reading ------------------------------------------------------------------------------ */

static int load_bytes(const uint8_t *buf, uint64_t len, unsigned flags, int borrow,
                      const amq_allocator *alloc, amq_filter **out, amq_errinfo *err)
{
    const amq_kind_ops *ops;
    amq_container c;
    amq_load_args args;
    void *impl = NULL;
    int rc;

    *out = NULL;
    rc = amq_container_parse(buf, (size_t)len, len, &c, err);
    if (rc != AMQ_OK)
        return rc;
    ops = amq_kind_lookup(c.kind);
    if (ops == NULL)
        return amq_err(err, AMQ_EKIND, "unknown filter kind %u (written by a newer amq?)",
                       c.kind);
    rc = amq_hash_check_err(c.hash_algo, c.seed, AMQ_ECORRUPT, err);
    if (rc != AMQ_OK)
        return rc;
    if (!(flags & AMQ_OPEN_TRUST) &&
        ((c.flags & AMQ_FLAG_CHUNKSUM)
             ? amq_chunked_checksum(buf + c.payload_off, c.payload_len)
             : amq_checksum(buf + c.payload_off, (size_t)c.payload_len)) != c.payload_sum)
        return amq_err(err, AMQ_ECHECKSUM,
                       "payload checksum mismatch: the %s filter's data is corrupt", ops->name);
    memset(&args, 0, sizeof args);
    args.params = c.params;
    args.params_len = c.params_len;
    args.payload = buf + c.payload_off;
    args.payload_len = c.payload_len;
    args.hash_algo = c.hash_algo;
    args.seed = c.seed;
    args.items = c.items;
    args.borrow = borrow;
    args.trusted = (flags & AMQ_OPEN_TRUST) != 0;
    args.alloc = alloc;
    /* In place: the view may write to buf (a private mapping). */
    amq_region_borrow_writable = borrow && (flags & AMQ_OPEN_INPLACE_) != 0;
    amq_region_borrowed_rw = 0;
    rc = ops->load(&args, &impl, err);
    amq_region_borrow_writable = 0;
    if (rc != AMQ_OK)
        return rc;
    if ((flags & AMQ_OPEN_INPLACE_) && amq_region_borrowed_rw == 0) {
        /* The kind copied the payload: adds would never reach the file. */
        ops->destroy(impl);
        return amq_err(err, AMQ_EUNSUPPORTED, "the %s filter cannot be viewed in place",
                       ops->name);
    }
    rc = wrap(ops, impl, alloc, out);
    if (rc == AMQ_OK)
        (*out)->chunked = (c.flags & AMQ_FLAG_CHUNKSUM) != 0;
    /* AMQ_OPEN_MMAP promises a read-only filter, also when the kind had to
     * copy (growing kinds do) or the file could not be mapped (a pipe):
     * writes to it would otherwise succeed and vanish silently. */
    if (rc == AMQ_OK && (flags & AMQ_OPEN_MMAP) && !(flags & AMQ_OPEN_INPLACE_)) {
        (*out)->readonly = 1;
        one_key(*out);
    }
    return rc;
}

int amq_filter_deserialize(const void *buf, size_t len, unsigned flags,
                           const amq_allocator *alloc, amq_filter **out, amq_errinfo *err)
{
    int rc = load_bytes(buf, len, flags, (flags & AMQ_OPEN_MMAP) != 0, alloc, out, err);
    if (rc == AMQ_ENOMEM && err != NULL && err->msg[0] == '\0')
        amq_err(err, rc, "out of memory");
    return rc;
}

int amq_filter_open(const char *path, unsigned flags, const amq_allocator *alloc,
                    amq_filter **out, amq_errinfo *err)
{
    amq_mapped m;
    amq_errinfo local;
    int rc, borrow, lock = -1;

    *out = NULL;
    if (err == NULL)
        err = &local;
    for (;;) {
        err->msg[0] = '\0';
        rc = amq_file_map(path, alloc, &m, err);
        if (rc != AMQ_OK) {
            if (lock >= 0)
                close(lock);
            return rc;
        }
        /* Only a real mapping can be borrowed; a stream read into memory is
         * handed to the kind as a copy. */
        borrow = (flags & AMQ_OPEN_MMAP) && m.map != NULL;
        rc = load_bytes(m.data, m.size, flags, borrow, alloc, out, err);
        /* a checksum off may be an add in place writing the file (the tool's writers hold
         * its lock): read once more, the lock held shared, so after any writer (a regular
         * file: a pipe's bytes are read once) */
        if (rc != AMQ_ECHECKSUM || m.map == NULL || lock >= 0 ||
            (lock = amq_file_lock_shared(path)) < 0)
            break;
        amq_file_unmap(&m);
    }
    if (lock >= 0)
        close(lock);
    if (rc != AMQ_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : amq_strerror(rc));
        amq_err(err, rc, "%s: %s", path, msg);
        amq_file_unmap(&m);
        return rc;
    }
    if (borrow) {
        if (flags & AMQ_OPEN_TRUST)
            amq_file_advise_random(&m);
        (*out)->map = m;
    } else {
        amq_file_unmap(&m);
    }
    return AMQ_OK;
}
