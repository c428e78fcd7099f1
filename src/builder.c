/*
 * builder.c - amq_builder: a filter built from all its keys at once, for
 * the static kinds (fuse, ribbon: static_filter.c does their part) and for
 * the kinds that also take adds one by one (blocked, bloom, partitioned,
 * cuckoo).
 *
 * A dynamic kind's build is RocksDB's shape: the one-key add only hashes
 * the key and appends what finish needs - for the blocked kind h1 and the
 * 32 probe bits (12 bytes), for the others the whole 128-bit hash - to
 * chunks in memory; finish sizes the filter for the count and adds every
 * hash in the order given through the kind's batched add (prefetched), so
 * the filter's bytes and item count are those of the same adds made one by
 * one.  Past `memory` bytes the chunks go, in order, to one temporary file
 * that finish reads back in order.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amq/advanced.h"
#include "amq/static.h"
#include "blocked_impl.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/mulshift.h"
#include "kind.h"
#include "static_filter.h"

/* Keys per chunk: the first chunks small (a small build takes little),
 * then doubling up to CHUNK_MAX, whose 6 or 8 MiB come in huge pages
 * (amq_region): a fault per 2 MiB instead of per 4 KiB while adds run.
 * Past STREAM_FROM bytes held, chunks come in small pages faulted in by
 * one call (amq_region_alloc_stream): a large build outruns the huge pages
 * the process has freed, and fresh ones were the slowest first touch
 * measured (docs/architecture.md).  Chunks of 1 MiB and more go back to a
 * small store when the builder ends and are taken again by the next
 * (amq_region_alloc_kept): perf put about a fifth of a 1M-key build in the
 * kernel, faulting in and zeroing fresh pages. */
#define CHUNK_MIN ((size_t)1 << 10)
#define CHUNK_MAX ((size_t)1 << 19)
#define STREAM_FROM ((size_t)64 << 20)
#define DEFAULT_MEMORY ((size_t)256 << 20)
/* A sized builder's buffer: enough keys that a batched add's prefetch
 * window runs full between flushes, few enough to stay in L1. */
#define SIZED_KEYS ((size_t)1024)

/* How amq_builder_add hashes a key. */
enum { MODE_STATIC, MODE_ANY, MODE_XXH3, MODE_XXH3_SEED0, MODE_MULSHIFT, MODE_VMULSHIFT,
       MODE_MULMIX };
/* What a key keeps: h1 and u (blocked), the hash (other kinds), or the key
 * itself - an XXH3 blocked filter's 8-byte keys, 8 bytes that finish
 * hashes as the batched adds of packed keys do (a key of another length,
 * hashes given or the memory budget reached turn them into LAYOUT_SPLIT). */
enum { LAYOUT_SPLIT, LAYOUT_H128, LAYOUT_RAW8 };

typedef amq_region chunk;

struct amq_builder {
    /* What the one-key add touches, first: the open chunk's arrays, its
     * fill and room (room 0 sends the next add to open_chunk, which also
     * reports a finished or broken builder), and how keys hash. */
    uint64_t *h1;    /* LAYOUT_SPLIT: h1 of each key; LAYOUT_RAW8: the keys */
    uint32_t *u;     /* LAYOUT_SPLIT: amq_blk_u of each key */
    amq_hash128 *h;  /* LAYOUT_H128 */
    size_t pos, cap; /* keys in the open chunk; its capacity */
    int mode, layout;
    uint32_t hash_algo;
    uint64_t seed;
    uint64_t base; /* keys before the open chunk */

    amq_static_builder *st; /* MODE_STATIC */
    amq_config cfg;
    amq_allocator alloc;
    size_t key_bytes;  /* 12 or 16 */
    chunk *chunk; /* full chunks, then the open one */
    size_t nchunks, chunk_slots;
    size_t held, limit; /* bytes of chunks held; the budget */
    int fd;             /* spill file, -1 until spilled */
    uint64_t spill_off;
    char dir[4096];
    int broken;   /* a write failed: its status, returned by every later call */
    int finished; /* finish was called */
    amq_filter *f; /* amq_builder_new_sized: the filter, made at once, that
                      each full buffer (chunk 0) is added to */
    amq_ms_key ms; /* MODE_MULSHIFT, MODE_MULMIX: the seed's constants */
    amq_u128 ms_a1; /* MODE_VMULSHIFT (a static kind's 16-byte keys): a1 */
};

static int chunk_alloc_sized(amq_builder *b, const amq_config *cfg, int layout);
static int add_chunk(amq_builder *b, amq_filter *f, const chunk *r, size_t cap, size_t m,
                     amq_errinfo *err);

/* ---- creating ------------------------------------------------------------------------- */

static int dynamic_layout(uint32_t kind, int *layout)
{
    switch (kind) {
    case AMQ_KIND_BLOCKED:
        *layout = LAYOUT_SPLIT;
        return 1;
    case AMQ_KIND_BLOOM:
    case AMQ_KIND_PARTITIONED:
    case AMQ_KIND_CUCKOO:
        *layout = LAYOUT_H128;
        return 1;
    default:
        return 0;
    }
}

/* Refuses a kind no builder makes, a bad hash spec and (dynamic kinds) a
 * sizing the filter cannot take: made now, for capacity (sized) or for one
 * key (a filter of one key must be possible: checked now, not after every
 * key is in). */
static int check_config(const amq_config *cfg, int *layout, amq_filter **sized,
                        amq_errinfo *err)
{
    amq_filter *probe;
    amq_config c;
    int rc;

    *layout = LAYOUT_H128;
    if (!amq_kind_is_static(cfg->kind) && !dynamic_layout(cfg->kind, layout)) {
        const char *name = amq_kind_name(cfg->kind);
        if (name == NULL)
            return amq_err(err, AMQ_EKIND, "unknown filter kind %u", cfg->kind);
        return amq_err(err, AMQ_EKIND,
                       "a builder cannot make a %s filter: its size follows the keys as they "
                       "come; create it with amq_filter_new and add the keys",
                       name);
    }
    rc = amq_hash_check_err(cfg->hash_algo, cfg->seed, 0, err);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_config_check_threads(cfg, err);
    if (rc != AMQ_OK)
        return rc;
    if (amq_kind_is_static(cfg->kind))
        return AMQ_OK;
    if (sized != NULL)
        return amq_filter_new(cfg, sized, err);
    c = *cfg;
    c.capacity = 1;
    rc = amq_filter_new(&c, &probe, err);
    if (rc == AMQ_OK)
        amq_filter_free(probe);
    return rc;
}

/* How a dynamic kind's keys are hashed and kept (the builder's fields
 * after the kind's layout is known). */
static void set_layout(amq_builder *b, const amq_config *cfg, int layout)
{
    b->layout = layout;
    b->key_bytes =
        layout == LAYOUT_SPLIT ? sizeof(uint64_t) + sizeof(uint32_t) : sizeof(amq_hash128);
    if (layout == LAYOUT_SPLIT && cfg->hash_algo == AMQ_HASH_XXH3) {
        b->layout = LAYOUT_RAW8;
        b->key_bytes = sizeof(uint64_t);
    }
    if (cfg->hash_algo == AMQ_HASH_XXH3) {
        b->mode = cfg->seed == 0 ? MODE_XXH3_SEED0 : MODE_XXH3;
    } else if (amq_ms_one_word(cfg->hash_algo)) {
        /* the seed's constants once, not per key as amq_hash_key makes them */
        b->mode = cfg->hash_algo == AMQ_HASH_MULMIX ? MODE_MULMIX : MODE_MULSHIFT;
        b->ms = cfg->seed == 0 ? amq_ms_key0() : amq_ms_key_for(cfg->seed);
    } else {
        b->mode = MODE_ANY;
    }
}

static amq_builder *builder_alloc(const amq_config *cfg)
{
    amq_allocator a;
    amq_builder *b;

    amq_alloc_init(&a, cfg->alloc);
    b = amq_calloc(&a, sizeof *b);
    if (b == NULL)
        return NULL;
    b->alloc = a;
    b->cfg = *cfg;
    b->cfg.alloc = NULL; /* the caller's pointer may not outlive this call: b->alloc */
    b->hash_algo = cfg->hash_algo;
    b->seed = cfg->seed;
    b->fd = -1;
    return b;
}

int amq_builder_new(const amq_config *cfg, const char *tmpdir, size_t memory, amq_builder **out,
                    amq_errinfo *err)
{
    amq_builder *b;
    int layout, rc;

    *out = NULL;
    rc = check_config(cfg, &layout, NULL, err);
    if (rc != AMQ_OK)
        return rc;
    b = builder_alloc(cfg);
    if (b == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    if (amq_kind_is_static(cfg->kind)) {
        b->mode = MODE_STATIC;
        if (amq_ms_family(cfg->hash_algo)) { /* the fuse kind's default */
            b->ms = cfg->seed == 0 ? amq_ms_key0() : amq_ms_key_for(cfg->seed);
            b->ms_a1 = cfg->seed == 0 ? amq_ms_a1_0() : amq_ms_a1_for(cfg->seed);
        }
        rc = amq_static_builder_new(cfg, tmpdir, memory, &b->st, err);
        if (rc != AMQ_OK) {
            amq_builder_free(b);
            return rc;
        }
        *out = b;
        return AMQ_OK;
    }
    set_layout(b, cfg, layout);
    b->limit = memory == 0 ? DEFAULT_MEMORY : memory;
    if (amq_builder_tmpdir(tmpdir, b->dir, sizeof b->dir) != AMQ_OK) {
        amq_builder_free(b);
        return amq_err(err, AMQ_EINVAL, "temporary directory path too long");
    }
    *out = b;
    return AMQ_OK;
}

int amq_builder_new_sized(const amq_config *cfg, amq_builder **out, amq_errinfo *err)
{
    amq_builder *b;
    amq_filter *f = NULL;
    int layout, rc;

    *out = NULL;
    if (amq_kind_is_static(cfg->kind))
        return amq_err(err, AMQ_EKIND,
                       "a %s filter is laid out for the keys it holds: build it with "
                       "amq_builder_new",
                       amq_kind_name(cfg->kind));
    rc = check_config(cfg, &layout, &f, err);
    if (rc != AMQ_OK)
        return rc;
    b = builder_alloc(cfg);
    if (b != NULL && chunk_alloc_sized(b, cfg, layout) != AMQ_OK) {
        amq_builder_free(b);
        b = NULL;
    }
    if (b == NULL) {
        amq_filter_free(f);
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    }
    b->f = f;
    *out = b;
    return AMQ_OK;
}

static void drop_chunks(amq_builder *b)
{
    size_t i;
    for (i = 0; i < b->nchunks; i++)
        amq_region_free_kept(&b->chunk[i], &b->alloc);
    amq_free(&b->alloc, b->chunk, b->chunk_slots * sizeof *b->chunk);
    b->chunk = NULL;
    b->nchunks = b->chunk_slots = 0;
    b->held = 0;
    b->h1 = NULL;
    b->u = NULL;
    b->h = NULL;
    b->pos = b->cap = 0;
}

void amq_builder_free(amq_builder *b)
{
    amq_allocator a;
    if (b == NULL)
        return;
    a = b->alloc;
    amq_static_builder_free(b->st);
    amq_filter_free(b->f);
    drop_chunks(b);
    if (b->fd >= 0)
        close(b->fd);
    amq_free(&a, b, sizeof *b);
}

/* ---- holding hashes -------------------------------------------------------------------- */

static int chunk_alloc(const amq_builder *b, chunk *r, size_t cap)
{
    if (b->held < STREAM_FROM)
        return amq_region_alloc_kept(r, &b->alloc, cap * b->key_bytes);
    return amq_region_alloc_stream(r, &b->alloc, cap * b->key_bytes);
}

/* The arrays of a chunk of cap keys at r. */
static void chunk_arrays(const amq_builder *b, const chunk *r, size_t cap, uint64_t **h1,
                         uint32_t **u, amq_hash128 **h)
{
    *h1 = (uint64_t *)(void *)r->data;
    *u = (uint32_t *)(void *)(r->data + cap * sizeof(uint64_t));
    *h = (amq_hash128 *)(void *)r->data;
    (void)b;
}

/* Makes chunk r (cap keys) the open one. */
static void open_at(amq_builder *b, const chunk *r, size_t cap)
{
    chunk_arrays(b, r, cap, &b->h1, &b->u, &b->h);
    b->pos = 0;
    b->cap = cap;
}

/* A sized builder's one chunk, open: SIZED_KEYS keys of the kind's layout. */
static int chunk_alloc_sized(amq_builder *b, const amq_config *cfg, int layout)
{
    set_layout(b, cfg, layout);
    b->limit = SIZE_MAX;
    b->chunk = amq_malloc(&b->alloc, sizeof *b->chunk);
    if (b->chunk == NULL)
        return AMQ_ENOMEM;
    b->chunk_slots = 1;
    if (chunk_alloc(b, &b->chunk[0], SIZED_KEYS) != AMQ_OK)
        return AMQ_ENOMEM;
    b->nchunks = 1;
    b->held = b->chunk[0].size;
    open_at(b, &b->chunk[0], SIZED_KEYS);
    return AMQ_OK;
}

/* The raw 8-byte keys held become their hashes (LAYOUT_SPLIT), chunk by
 * chunk; the last chunk holds pos keys if one is open (cap != 0). */
static int to_split(amq_builder *b)
{
    size_t i, j, cap = 0, m;
    chunk r;
    int rc;

    if (b->finished)
        return AMQ_EINVAL;
    if (b->broken)
        return b->broken;
    for (i = 0; i < b->nchunks; i++) {
        const uint64_t *key = (const uint64_t *)(const void *)b->chunk[i].data;
        uint64_t *h1;
        uint32_t *u;
        cap = b->chunk[i].size / sizeof(uint64_t);
        m = i + 1 == b->nchunks && b->cap != 0 ? b->pos : cap;
        rc = amq_region_alloc(&r, &b->alloc, cap * (sizeof *h1 + sizeof *u));
        if (rc != AMQ_OK) /* half converted: nothing more can be added */
            return b->broken = AMQ_ENOMEM;
        h1 = (uint64_t *)(void *)r.data;
        u = (uint32_t *)(void *)(r.data + cap * sizeof *h1);
        for (j = 0; j < m; j++) {
            const amq_hash128 h = amq_blk_hash(AMQ_HASH_XXH3, b->seed, key + j, 8);
            h1[j] = h.h1;
            u[j] = amq_blk_u(h);
        }
        amq_region_free_kept(&b->chunk[i], &b->alloc);
        b->chunk[i] = r;
        b->held += cap * sizeof *u;
    }
    b->layout = LAYOUT_SPLIT;
    b->key_bytes = sizeof(uint64_t) + sizeof(uint32_t);
    if (b->cap != 0) {
        m = b->pos;
        open_at(b, &b->chunk[b->nchunks - 1], cap);
        b->pos = m;
    }
    return AMQ_OK;
}

/* One segment of the spill file: a u64 count m (host order: the file lives
 * only as long as the builder, in this process), then the chunk's arrays
 * for m keys (h1 then u, or the hashes). */
static int spill_segment(amq_builder *b, const chunk *r, size_t cap, size_t m)
{
    uint64_t *h1;
    uint32_t *u;
    amq_hash128 *h;
    uint64_t hdr = m;
    int rc;

    chunk_arrays(b, r, cap, &h1, &u, &h);
    rc = amq_spill_write(b->fd, &hdr, sizeof hdr);
    if (rc == AMQ_OK && b->layout == LAYOUT_SPLIT)
        rc = amq_spill_write(b->fd, h1, m * sizeof *h1);
    if (rc == AMQ_OK && b->layout == LAYOUT_SPLIT)
        rc = amq_spill_write(b->fd, u, m * sizeof *u);
    if (rc == AMQ_OK && b->layout == LAYOUT_H128)
        rc = amq_spill_write(b->fd, h, m * sizeof *h);
    b->spill_off += sizeof hdr + m * b->key_bytes;
    return rc;
}

/* Past the budget: every chunk (all full) to the file, in order, then one
 * chunk kept as the buffer that later keys fill and flush. */
static int spill_start(amq_builder *b)
{
    size_t i, cap;
    chunk r;
    int rc;

    b->fd = amq_spill_open(b->dir);
    if (b->fd < 0)
        return AMQ_EIO;
    for (i = 0; i < b->nchunks; i++)
        if ((rc = spill_segment(b, &b->chunk[i], b->chunk[i].size / b->key_bytes,
                                b->chunk[i].size / b->key_bytes)) != AMQ_OK)
            return rc;
    drop_chunks(b);
    cap = b->limit / b->key_bytes;
    cap = cap < CHUNK_MIN ? CHUNK_MIN : cap > CHUNK_MAX ? CHUNK_MAX : cap;
    b->chunk = amq_malloc(&b->alloc, sizeof *b->chunk);
    if (b->chunk == NULL)
        return AMQ_ENOMEM;
    b->chunk_slots = 1;
    if (chunk_alloc(b, &r, cap) != AMQ_OK)
        return AMQ_ENOMEM;
    b->chunk[0] = r;
    b->nchunks = 1;
    b->held = r.size;
    open_at(b, &b->chunk[0], cap);
    return AMQ_OK;
}

/* The open chunk is full (or there is none): flush it (spilled), or open
 * the next.  Also where a finished or broken builder says so. */
static int open_chunk(amq_builder *b)
{
    size_t cap, bytes;
    chunk r;
    int rc;

    if (b->finished)
        return AMQ_EINVAL;
    if (b->broken)
        return b->broken;
    if (b->f != NULL) {
        /* sized: the buffer's keys into the filter, in one batched add */
        rc = add_chunk(b, b->f, &b->chunk[0], b->cap, b->pos, NULL);
        if (rc != AMQ_OK)
            goto broken;
        b->base += b->pos;
        b->pos = 0;
        return AMQ_OK;
    }
    if (b->fd >= 0) {
        rc = spill_segment(b, &b->chunk[0], b->cap, b->pos);
        if (rc != AMQ_OK)
            goto broken;
        b->base += b->pos;
        b->pos = 0;
        return AMQ_OK;
    }
    cap = CHUNK_MIN << (b->nchunks < 9 ? b->nchunks : 9);
    cap = cap > CHUNK_MAX ? CHUNK_MAX : cap;
    bytes = cap * b->key_bytes;
    b->base += b->pos;
    b->pos = b->cap = 0;
    if (b->held + bytes > b->limit) {
        /* the file holds hashes */
        rc = b->layout == LAYOUT_RAW8 ? to_split(b) : AMQ_OK;
        if (rc == AMQ_OK)
            rc = spill_start(b);
        if (rc != AMQ_OK)
            goto broken;
        return AMQ_OK;
    }
    if (b->nchunks == b->chunk_slots) {
        size_t slots = b->chunk_slots == 0 ? 16 : b->chunk_slots * 2;
        chunk *c = amq_malloc(&b->alloc, slots * sizeof *c);
        if (c == NULL)
            return AMQ_ENOMEM;
        if (b->nchunks > 0)
            memcpy(c, b->chunk, b->nchunks * sizeof *c);
        amq_free(&b->alloc, b->chunk, b->chunk_slots * sizeof *b->chunk);
        b->chunk = c;
        b->chunk_slots = slots;
    }
    if (chunk_alloc(b, &r, cap) != AMQ_OK)
        return AMQ_ENOMEM;
    b->chunk[b->nchunks++] = r;
    b->held += bytes;
    open_at(b, &b->chunk[b->nchunks - 1], cap);
    return AMQ_OK;
broken:
    b->pos = b->cap = 0;
    return b->broken = rc;
}

/* A static kind's keys hashed inline (static_inline) go straight into the static
 * builder's array (amq_static_builder_room): b->h1 at b->pos of b->cap,
 * recorded there (and counted in base) by static_sync before any other
 * call reaches the static builder, which may move or spill that array. */
static void static_sync(amq_builder *b)
{
    if (b->mode != MODE_STATIC || b->cap == 0)
        return;
    amq_static_builder_commit(b->st, b->pos);
    b->base += b->pos;
    b->h1 = NULL;
    b->pos = b->cap = 0;
}

static inline void put(amq_builder *b, amq_hash128 h)
{
    if (b->layout == LAYOUT_SPLIT) {
        b->h1[b->pos] = h.h1;
        b->u[b->pos] = amq_blk_u(h);
    } else {
        b->h[b->pos] = h;
    }
    b->pos++;
}

int amq_builder_add_batch(amq_builder *b, const amq_hash128 *h, size_t n)
{
    size_t i;
    int rc;

    if (b->mode == MODE_STATIC) {
        if (b->finished)
            return AMQ_EINVAL;
        static_sync(b);
        rc = amq_static_builder_add_batch(b->st, h, n);
        if (rc == AMQ_OK)
            b->base += n;
        return rc;
    }
    if (b->finished)
        return AMQ_EINVAL;
    if (b->layout == LAYOUT_RAW8 && (rc = to_split(b)) != AMQ_OK)
        return rc;
    for (i = 0; i < n; i++) {
        if (b->pos == b->cap && (rc = open_chunk(b)) != AMQ_OK)
            return rc;
        put(b, h[i]);
    }
    return AMQ_OK;
}

/*
 * The one-key add: the key hashed and its hash appended, nothing else.
 * 8- and 16-byte keys with XXH3 get bodies of their own with the length
 * (and for seed 0 the seed) folded in, as the blocked kind's one-key
 * entries have, and 8-byte keys with mulshift the seed's constants made
 * once per builder; other lengths, algorithms and a full chunk leave through
 * tail calls, so the common path needs no stack frame.  The mode and
 * layout are fixed per builder: their branches always go one way.
 */
__attribute__((noinline)) static int add_full(amq_builder *b, amq_hash128 h)
{
    int rc = open_chunk(b);
    if (rc != AMQ_OK)
        return rc;
    put(b, h);
    return AMQ_OK;
}

__attribute__((noinline)) static int add_other(amq_builder *b, const void *key, size_t len)
{
    const amq_hash128 h = amq_hash_key(b->hash_algo, b->seed, key, len);
    if (b->mode == MODE_STATIC)
        return amq_builder_add_batch(b, &h, 1);
    return b->pos == b->cap ? add_full(b, h) : (put(b, h), AMQ_OK);
}

static inline __attribute__((always_inline)) int add_hashed(amq_builder *b, amq_hash128 h)
{
    const size_t pos = b->pos;
    if (pos == b->cap)
        return add_full(b, h);
    if (b->layout == LAYOUT_SPLIT) {
        b->h1[pos] = h.h1;
        b->u[pos] = amq_blk_u(h);
    } else {
        b->h[pos] = h;
    }
    b->pos = pos + 1;
    return AMQ_OK;
}

/* A raw key with no room, or a key of another length. */
__attribute__((noinline)) static int add_raw_slow(amq_builder *b, const void *key, size_t len)
{
    int rc = len == 8 ? open_chunk(b) : to_split(b);
    if (rc != AMQ_OK)
        return rc;
    if (b->layout == LAYOUT_RAW8) {
        memcpy(&b->h1[b->pos], key, 8);
        b->pos++;
        return AMQ_OK;
    }
    return amq_builder_add(b, key, len);
}

/* The static kinds' keys that amq_builder_add hashes inline into the open
 * room: 8- and 16-byte keys by XXH3 and vmulshift, 8-byte keys by mulshift
 * (other hashes and lengths take a call per key anyway). */
static inline int static_inline(const amq_builder *b, size_t len)
{
    return b->hash_algo == AMQ_HASH_XXH3 || b->hash_algo == AMQ_HASH_VMULSHIFT
               ? len == 8 || len == 16
               : b->hash_algo == AMQ_HASH_MULSHIFT && len == 8;
}

/* vmulshift's h1 of a 16-byte key. */
static inline uint64_t vms16(const amq_builder *b, const void *key)
{
    return amq_ms_apply2(b->ms.a, b->ms_a1, b->ms.b, amq_load64(key),
                         amq_load64((const uint8_t *)key + 8));
}

/* A static kind's key without room: its h1 to the static builder, and
 * room opened for the keys after it when static_inline takes them. */
__attribute__((noinline)) static int add_static(amq_builder *b, const void *key, size_t len)
{
    uint64_t h1, *at;
    size_t room;
    int rc;
    if (b->finished)
        return AMQ_EINVAL;
    static_sync(b);
    if (b->hash_algo == AMQ_HASH_XXH3 && len == 8)
        h1 = amq_blk_hash(AMQ_HASH_XXH3, b->seed, key, 8).h1;
    else if (b->hash_algo == AMQ_HASH_XXH3 && len == 16)
        h1 = amq_blk_hash(AMQ_HASH_XXH3, b->seed, key, 16).h1;
    else if (amq_ms_family(b->hash_algo) && len == 8)
        h1 = amq_ms_apply(b->ms.a, b->ms.b, amq_load64(key));
    else if (b->hash_algo == AMQ_HASH_VMULSHIFT && len == 16)
        h1 = vms16(b, key);
    else
        h1 = amq_hash_key(b->hash_algo, b->seed, key, len).h1;
    if (static_inline(b, len) && (at = amq_static_builder_room(b->st, 1, &room)) != NULL) {
        at[0] = h1;
        b->h1 = at;
        b->cap = room;
        b->pos = 1;
        return AMQ_OK;
    }
    rc = amq_static_builder_add_h1(b->st, h1);
    if (rc == AMQ_OK)
        b->base++;
    return rc;
}

int amq_builder_add(amq_builder *b, const void *key, size_t len)
{
    if (b->layout == LAYOUT_RAW8) {
        const size_t pos = b->pos;
        if (len != 8 || pos == b->cap)
            return add_raw_slow(b, key, len);
        memcpy(&b->h1[pos], key, 8);
        b->pos = pos + 1;
        return AMQ_OK;
    }
    if (b->mode == MODE_STATIC) {
        const size_t pos = b->pos;
        /* room is open only for static_inline's hashes: XXH3, mulshift or
         * vmulshift (and for 16-byte keys only XXH3 and vmulshift take it) */
        if (pos < b->cap && len == 8) {
            b->h1[pos] = b->hash_algo == AMQ_HASH_XXH3
                             ? amq_blk_hash(AMQ_HASH_XXH3, b->seed, key, 8).h1
                             : amq_ms_apply(b->ms.a, b->ms.b, amq_load64(key));
            b->pos = pos + 1;
            return AMQ_OK;
        }
        if (pos < b->cap && len == 16 && b->hash_algo != AMQ_HASH_MULSHIFT) {
            b->h1[pos] = b->hash_algo == AMQ_HASH_XXH3
                             ? amq_blk_hash(AMQ_HASH_XXH3, b->seed, key, 16).h1
                             : vms16(b, key);
            b->pos = pos + 1;
            return AMQ_OK;
        }
        return add_static(b, key, len);
    }
    if (b->mode == MODE_XXH3_SEED0) {
        if (len == 8)
            return add_hashed(b, amq_blk_hash(AMQ_HASH_XXH3, 0, key, 8));
        if (len == 16)
            return add_hashed(b, amq_blk_hash(AMQ_HASH_XXH3, 0, key, 16));
    } else if (b->mode == MODE_XXH3) {
        if (len == 8)
            return add_hashed(b, amq_blk_hash(AMQ_HASH_XXH3, b->seed, key, 8));
        if (len == 16)
            return add_hashed(b, amq_blk_hash(AMQ_HASH_XXH3, b->seed, key, 16));
    } else if ((b->mode == MODE_MULSHIFT || b->mode == MODE_MULMIX) && len == 8) {
        amq_hash128 h;
        h.h1 = amq_ms_apply(b->ms.a, b->ms.b, amq_load64(key));
        if (b->mode == MODE_MULMIX)
            h.h1 = amq_ms_mix(h.h1);
        h.h2 = amq_ms_h2(h.h1);
        return add_hashed(b, h);
    }
    return add_other(b, key, len);
}

/* ---- packed keys ----------------------------------------------------------------------- */

/* Key k's hash as amq_builder_add makes it in mode (a constant where this
 * is inlined, as is len for the 8- and 16-byte bodies). */
static inline __attribute__((always_inline)) amq_hash128 key_hash(const amq_builder *b, int mode,
                                                                  const uint8_t *k, size_t len)
{
    amq_hash128 h;
    if (mode == MODE_XXH3_SEED0 && (len == 8 || len == 16))
        return amq_blk_hash(AMQ_HASH_XXH3, 0, k, len);
    if (mode == MODE_XXH3 && (len == 8 || len == 16))
        return amq_blk_hash(AMQ_HASH_XXH3, b->seed, k, len);
    if ((mode == MODE_MULSHIFT || mode == MODE_MULMIX) && len == 8) {
        h.h1 = amq_ms_apply(b->ms.a, b->ms.b, amq_load64(k));
        if (mode == MODE_MULMIX)
            h.h1 = amq_ms_mix(h.h1);
        h.h2 = amq_ms_h2(h.h1);
        return h;
    }
    if (mode == MODE_VMULSHIFT && len == 16) {
        h.h1 = vms16(b, k);
        h.h2 = amq_ms_h2(h.h1);
        return h;
    }
    return amq_hash_key(b->hash_algo, b->seed, k, len);
}

/* m keys' hashes appended to the open chunk, which has room for them. */
static inline __attribute__((always_inline)) void put_keys_as(amq_builder *b, const uint8_t *k,
                                                              size_t len, size_t m, int mode)
{
    const size_t pos = b->pos;
    size_t i;
    if (b->layout == LAYOUT_SPLIT) {
        uint64_t *restrict h1 = b->h1 + pos;
        uint32_t *restrict u = b->u + pos;
        for (i = 0; i < m; i++) {
            const amq_hash128 h = key_hash(b, mode, k + i * len, len);
            h1[i] = h.h1;
            u[i] = amq_blk_u(h);
        }
    } else {
        amq_hash128 *restrict h = b->h + pos;
        for (i = 0; i < m; i++)
            h[i] = key_hash(b, mode, k + i * len, len);
    }
    b->pos = pos + m;
}

/* One loop per hash that amq_builder_add inlines, the rest through
 * amq_hash_key as its add_other. */
static void put_keys(amq_builder *b, const uint8_t *k, size_t len, size_t m)
{
    if (b->mode == MODE_XXH3_SEED0 && len == 8)
        put_keys_as(b, k, 8, m, MODE_XXH3_SEED0);
    else if (b->mode == MODE_XXH3_SEED0 && len == 16)
        put_keys_as(b, k, 16, m, MODE_XXH3_SEED0);
    else if (b->mode == MODE_XXH3 && len == 8)
        put_keys_as(b, k, 8, m, MODE_XXH3);
    else if (b->mode == MODE_XXH3 && len == 16)
        put_keys_as(b, k, 16, m, MODE_XXH3);
    else if (b->mode == MODE_MULSHIFT && len == 8)
        put_keys_as(b, k, 8, m, MODE_MULSHIFT);
    else if (b->mode == MODE_MULMIX && len == 8)
        put_keys_as(b, k, 8, m, MODE_MULMIX);
    else
        put_keys_as(b, k, len, m, MODE_ANY);
}

/* m keys' h1 for a static kind (its h2 is unused), at out. */
static inline __attribute__((always_inline)) void static_h1_as(const amq_builder *b,
                                                               const uint8_t *k, size_t len,
                                                               size_t m, uint64_t *restrict out,
                                                               int mode)
{
    size_t i;
    for (i = 0; i < m; i++)
        out[i] = key_hash(b, mode, k + i * len, len).h1;
}

static void static_h1(const amq_builder *b, const uint8_t *k, size_t len, size_t m,
                      uint64_t *out)
{
    const int xxh3 = b->hash_algo == AMQ_HASH_XXH3;
    if (amq_ms_family(b->hash_algo) && len == 8)
        static_h1_as(b, k, 8, m, out, MODE_MULSHIFT);
    else if (b->hash_algo == AMQ_HASH_VMULSHIFT && len == 16)
        static_h1_as(b, k, 16, m, out, MODE_VMULSHIFT);
    else if (xxh3 && b->seed == 0 && len == 8)
        static_h1_as(b, k, 8, m, out, MODE_XXH3_SEED0);
    else if (xxh3 && b->seed == 0 && len == 16)
        static_h1_as(b, k, 16, m, out, MODE_XXH3_SEED0);
    else if (xxh3 && len == 8)
        static_h1_as(b, k, 8, m, out, MODE_XXH3);
    else if (xxh3 && len == 16)
        static_h1_as(b, k, 16, m, out, MODE_XXH3);
    else
        static_h1_as(b, k, len, m, out, MODE_ANY);
}

/* A static kind's keys: hashed straight into the static builder's array,
 * grown once for all of them; past the memory budget (or when it cannot
 * grow) through its batched add, a stack buffer at a time, which spills. */
static int static_fixed(amq_builder *b, const uint8_t *k, size_t len, size_t n)
{
    amq_hash128 h[256];
    uint64_t h1[256];
    size_t room, m, i;
    uint64_t *at;
    int rc;

    static_sync(b);
    while (n > 0 && (at = amq_static_builder_room(b->st, n, &room)) != NULL) {
        m = room < n ? room : n;
        static_h1(b, k, len, m, at);
        amq_static_builder_commit(b->st, m);
        b->base += m;
        k += m * len;
        n -= m;
    }
    for (; n > 0; k += m * len, n -= m) {
        m = n < 256 ? n : 256;
        static_h1(b, k, len, m, h1);
        for (i = 0; i < m; i++) {
            h[i].h1 = h1[i];
            h[i].h2 = 0;
        }
        if ((rc = amq_static_builder_add_batch(b->st, h, m)) != AMQ_OK)
            return rc;
        b->base += m;
    }
    return AMQ_OK;
}

int amq_builder_add_batch_fixed(amq_builder *b, const void *keys, size_t key_len, size_t n)
{
    const uint8_t *k = keys;
    size_t m;
    int rc;

    if (b == NULL || (n > 0 && (keys == NULL || key_len == 0 || n > SIZE_MAX / key_len)))
        return AMQ_EINVAL;
    if (b->finished)
        return AMQ_EINVAL;
    if (b->mode == MODE_STATIC)
        return static_fixed(b, k, key_len, n);
    /* as amq_builder_add: raw keys stay raw only while every key is 8 bytes */
    if (n > 0 && b->layout == LAYOUT_RAW8 && key_len != 8 && (rc = to_split(b)) != AMQ_OK)
        return rc;
    while (n > 0) {
        if (b->pos == b->cap && (rc = open_chunk(b)) != AMQ_OK)
            return rc;
        m = b->cap - b->pos < n ? b->cap - b->pos : n;
        if (b->layout == LAYOUT_RAW8) { /* open_chunk may have hashed them */
            memcpy(&b->h1[b->pos], k, m * 8);
            b->pos += m;
        } else {
            put_keys(b, k, key_len, m);
        }
        k += m * key_len;
        n -= m;
    }
    return AMQ_OK;
}

uint64_t amq_builder_count(const amq_builder *b)
{
    return b->base + b->pos;
}

/* ---- finishing ------------------------------------------------------------------------- */

/* Adds m hashes of a chunk of cap keys at r to f, in order. */
static int add_chunk(amq_builder *b, amq_filter *f, const chunk *r, size_t cap, size_t m,
                     amq_errinfo *err)
{
    uint64_t *h1;
    uint32_t *u;
    amq_hash128 *h;
    int rc;

    if (m == 0)
        return AMQ_OK;
    chunk_arrays(b, r, cap, &h1, &u, &h);
    if (b->layout == LAYOUT_RAW8)
        rc = amq_blocked_add_raw8(amq_filter_impl(f), h1, m);
    else if (b->layout == LAYOUT_SPLIT)
        rc = amq_blocked_add_split(amq_filter_impl(f), h1, u, m);
    else
        rc = amq_filter_add_batch(f, h, m, NULL);
    if (rc == AMQ_EFULL)
        return amq_err(err, rc, "the %s filter sized for %llu keys is full before the last of "
                       "them is in", amq_kind_name(b->cfg.kind),
                       (unsigned long long)(b->f != NULL ? b->cfg.capacity
                                                         : amq_builder_count(b)));
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot add the keys: %s", amq_strerror(rc));
    return AMQ_OK;
}

/* The spill file's segments, in order, through one chunk of CHUNK_MAX keys. */
static int add_spilled(amq_builder *b, amq_filter *f, amq_errinfo *err)
{
    chunk r;
    uint64_t off = 0, end = b->spill_off, m;
    uint64_t *h1;
    uint32_t *u;
    amq_hash128 *h;
    int rc = AMQ_OK;

    if (chunk_alloc(b, &r, CHUNK_MAX) != AMQ_OK)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    chunk_arrays(b, &r, CHUNK_MAX, &h1, &u, &h);
    while (off < end) {
        rc = amq_spill_read(b->fd, &m, sizeof m, off);
        if (rc == AMQ_OK && m > CHUNK_MAX)
            rc = AMQ_EIO;
        off += sizeof m;
        if (rc == AMQ_OK && b->layout == LAYOUT_SPLIT) {
            rc = amq_spill_read(b->fd, h1, (size_t)m * sizeof *h1, off);
            off += m * sizeof *h1;
            if (rc == AMQ_OK)
                rc = amq_spill_read(b->fd, u, (size_t)m * sizeof *u, off);
            off += m * sizeof *u;
        } else if (rc == AMQ_OK) {
            rc = amq_spill_read(b->fd, h, (size_t)m * sizeof *h, off);
            off += m * sizeof *h;
        }
        if (rc != AMQ_OK) {
            rc = amq_err(err, rc, "cannot read back the temporary file in %s", b->dir);
            break;
        }
        if ((rc = add_chunk(b, f, &r, CHUNK_MAX, (size_t)m, err)) != AMQ_OK)
            break;
    }
    amq_region_free_kept(&r, &b->alloc);
    return rc;
}

/*
 * A dynamic kind: the filter amq_filter_new makes for cfg with capacity =
 * the keys added (duplicates included; 1 for an empty build), then every
 * hash added in the order given.  Bloom kinds' bytes do not depend on the
 * order, but their item count (keys that set a new bit) and a cuckoo
 * filter's bytes do: the order kept, both are those of one-by-one adds.
 */
static int finish_dynamic(amq_builder *b, amq_filter **out, amq_errinfo *err)
{
    amq_config c = b->cfg;
    amq_filter *f = NULL;
    uint64_t n = amq_builder_count(b);
    size_t i;
    int rc;

    c.capacity = n > 0 ? n : 1;
    c.alloc = &b->alloc;
    rc = amq_filter_new(&c, &f, err);
    if (rc != AMQ_OK)
        return rc;
    if (b->fd >= 0) {
        /* the file's keys, then the buffer's: the order they came in */
        rc = add_spilled(b, f, err);
        if (rc == AMQ_OK)
            rc = add_chunk(b, f, &b->chunk[0], b->cap, b->pos, err);
    } else {
        for (i = 0; i < b->nchunks && rc == AMQ_OK; i++) {
            const size_t cap = b->chunk[i].size / b->key_bytes;
            rc = add_chunk(b, f, &b->chunk[i], cap, i + 1 < b->nchunks ? cap : b->pos, err);
        }
    }
    if (rc != AMQ_OK) {
        amq_filter_free(f);
        return rc;
    }
    *out = f;
    return AMQ_OK;
}

int amq_builder_finish(amq_builder *b, amq_filter **out, amq_errinfo *err)
{
    uint64_t n = amq_builder_count(b);
    int rc;

    *out = NULL;
    if (b->finished)
        return amq_err(err, AMQ_EINVAL, "the builder has finished already: free it");
    if (b->broken && b->f != NULL)
        return amq_err(err, b->broken, "the %s filter sized for %llu keys took no more of them: %s",
                       amq_kind_name(b->cfg.kind), (unsigned long long)b->cfg.capacity,
                       amq_strerror(b->broken));
    if (b->broken)
        return amq_err(err, b->broken, "an earlier write to the temporary file in %s failed",
                       b->dir);
    if (b->mode == MODE_STATIC) {
        static_sync(b);
        rc = amq_static_builder_finish(b->st, out, err);
    } else if (b->f != NULL) {
        /* sized: the last keys in, and the filter is the caller's */
        rc = add_chunk(b, b->f, &b->chunk[0], b->cap, b->pos, err);
        if (rc == AMQ_OK)
            *out = b->f;
        else
            amq_filter_free(b->f);
        b->f = NULL;
    } else {
        rc = finish_dynamic(b, out, err);
    }
    /* Done either way: the hashes are released now, not when freed. */
    b->finished = 1;
    drop_chunks(b);
    b->base = n;
    if (b->fd >= 0) {
        close(b->fd);
        b->fd = -1;
    }
    return rc;
}

int amq_filter_build(const amq_config *cfg, const amq_hash128 *h, size_t n, amq_filter **out,
                     amq_errinfo *err)
{
    amq_builder *b;
    int rc;

    *out = NULL;
    rc = amq_builder_new(cfg, NULL, SIZE_MAX, &b, err);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_builder_add_batch(b, h, n);
    if (rc != AMQ_OK)
        rc = amq_err(err, rc, "out of memory for %zu hashes", n);
    else
        rc = amq_builder_finish(b, out, err);
    amq_builder_free(b);
    return rc;
}
