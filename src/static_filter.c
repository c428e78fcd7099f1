/*
 * static_filter.c - what the static kinds (fuse, ribbon) share: their
 * part of amq_builder (keys' hashes kept in memory, or spilled to temporary
 * files bucketed by hash prefix, then partitions built one at a time), the
 * object's life cycle, each taking the kind's algorithm from its caller:
 * below filter.c, fuse.c and ribbon.c, which name nothing here.  The
 * kinds' tables, their shared entries and the codec (parameter block,
 * index, load) are static_kind.c; static_handle.c, above them all, picks
 * the algorithm of a kind and wraps a built filter into a handle.
 *
 * Layout of the payload (docs/file-format.md): the partitions' bytes, each
 * padded to 64 bytes, then the index of 2^pbits entries of 32 bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amq/advanced.h"
#include "amq/static.h"
#include "common/checked.h"
#include "common/endian.h"
#include "common/error.h"
#include "static_filter.h"

#define MAX_ATTEMPTS 64u
#define SPILL_BITS 8u
#define SPILL_BUCKETS (1u << SPILL_BITS)
#define SPILL_BUF 4096u /* keys buffered per bucket before a write */
#define DEFAULT_MEMORY ((size_t)256 << 20)

static uint64_t align64(uint64_t v)
{
    return (v + 63) & ~(uint64_t)63;
}

/* ---- the object ------------------------------------------------------------------ */

/* The partitions' entries, and after them a fuse filter's view entries
 * (nothing to allocate later, when the data is placed). */
static size_t parts_size(const amq_static_algo *algo, uint32_t nparts)
{
    size_t sz = nparts * sizeof(amq_static_part);
    if (algo->kind == AMQ_KIND_FUSE)
        sz += nparts * sizeof(amq_fuse_view_part);
    return sz;
}

static void static_free(amq_static *s)
{
    uint32_t i;
    amq_allocator a;
    if (s == NULL)
        return;
    a = s->alloc;
    if (s->owned != NULL) {
        for (i = 0; i < s->nparts; i++)
            amq_region_free(&s->owned[i], &a);
        amq_free(&a, s->owned, s->nparts * sizeof *s->owned);
    }
    if (s->parts != NULL)
        amq_free(&a, s->parts, parts_size(s->algo, s->nparts));
    amq_region_free(&s->payload, &a);
    amq_free(&a, s, sizeof *s);
}

static int static_shell(const amq_static_algo *algo, const amq_allocator *alloc, uint32_t pbits,
                        amq_static **out)
{
    amq_allocator a;
    amq_static *s;

    amq_alloc_init(&a, alloc);
    s = amq_calloc(&a, sizeof *s);
    if (s == NULL)
        return AMQ_ENOMEM;
    s->alloc = a;
    s->algo = algo;
    s->simd = algo->simd != NULL ? algo->simd() : 0;
    s->pbits = pbits;
    s->nparts = 1u << pbits;
    s->parts = amq_calloc(&a, parts_size(algo, s->nparts));
    if (s->parts == NULL) {
        amq_free(&a, s, sizeof *s);
        return AMQ_ENOMEM;
    }
    if (parts_size(algo, s->nparts) > s->nparts * sizeof *s->parts)
        s->vparts = (amq_fuse_view_part *)(void *)(s->parts + s->nparts);
    *out = s;
    return AMQ_OK;
}

/* Once every partition's data is where queries read it. */
static void fill_views(amq_static *s)
{
    const amq_static_part *p0 = &s->parts[0];
    uint32_t i;
    for (i = 0; s->vparts != NULL && i < s->nparts; i++)
        amq_static_fuse_view_part(&s->parts[i], &s->vparts[i]);
    /* strided: every partition like the first, one stride further */
    s->stride = s->vparts != NULL && s->nparts > 1 ? align64(p0->bytes) : 0;
    for (i = 0; s->stride != 0 && i < s->nparts; i++) {
        const amq_static_part *p = &s->parts[i];
        if (!p->nomix || p->g[0] != p0->g[0] || p->g[1] != p0->g[1] || p->g[2] != p0->g[2] ||
            (uintptr_t)p->data != (uintptr_t)p0->data + (uintptr_t)i * s->stride)
            s->stride = 0;
    }
}

static uint64_t data_size(const amq_static *s)
{
    uint64_t t = 0;
    uint32_t i;
    for (i = 0; i < s->nparts; i++)
        t += align64(s->parts[i].bytes);
    return t;
}

/* ---- sorting ------------------------------------------------------------------------
 * Keys of a partition are sorted by x: duplicates become neighbours, and
 * both constructions then walk their arrays nearly in order (a fuse
 * segment, a ribbon start, is monotone in x).
 */

/* LSD radix on the top 33 bits (three 11-bit digits), then insertion sort,
 * which only has runs of equal top bits left to order. */
static void sort_x(uint64_t *x, uint64_t *tmp, size_t n)
{
    size_t cnt[2048], i, sum, c;
    uint64_t *src = x, *dst = tmp, *t;
    unsigned pass, shift;

    if (n >= 256) {
        for (pass = 0; pass < 3; pass++) {
            shift = 31 + 11 * pass;
            memset(cnt, 0, sizeof cnt);
            for (i = 0; i < n; i++)
                cnt[(src[i] >> shift) & 2047]++;
            for (i = 0, sum = 0; i < 2048; i++) {
                c = cnt[i];
                cnt[i] = sum;
                sum += c;
            }
            for (i = 0; i < n; i++)
                dst[cnt[(src[i] >> shift) & 2047]++] = src[i];
            t = src;
            src = dst;
            dst = t;
        }
        memcpy(x, src, n * sizeof *x);
    }
    for (i = 1; i < n; i++) {
        uint64_t v = x[i];
        size_t j = i;
        while (j > 0 && x[j - 1] > v) {
            x[j] = x[j - 1];
            j--;
        }
        x[j] = v;
    }
}

static size_t dedup_sorted(uint64_t *x, size_t n)
{
    size_t i, m = 0;
    for (i = 0; i < n; i++)
        if (m == 0 || x[m - 1] != x[i])
            x[m++] = x[i];
    return m;
}

/* In-place American flag sort by digit (v >> shift) & (nb - 1); starts
 * receives nb + 1 bucket boundaries. */
static void flag_sort(uint64_t *a, size_t n, unsigned shift, size_t nb, size_t *starts,
                      size_t *next)
{
    size_t i, d;
    uint64_t mask = nb - 1;

    memset(starts, 0, (nb + 1) * sizeof *starts);
    for (i = 0; i < n; i++)
        starts[((a[i] >> shift) & mask) + 1]++;
    for (i = 0; i < nb; i++)
        starts[i + 1] += starts[i];
    memcpy(next, starts, nb * sizeof *next);
    for (i = 0; i < nb; i++) {
        while (next[i] < starts[i + 1]) {
            uint64_t v = a[next[i]];
            d = (size_t)((v >> shift) & mask);
            while (d != i) {
                uint64_t t = a[next[d]];
                a[next[d]++] = v;
                v = t;
                d = (size_t)((v >> shift) & mask);
            }
            a[next[i]++] = v;
        }
    }
}

/* ---- building one partition ---------------------------------------------------------- */

typedef struct part_scratch {
    uint64_t *x, *tmp;
    size_t cap;
} part_scratch;

static int scratch_reserve(const amq_allocator *a, part_scratch *ps, size_t n)
{
    size_t bytes;
    if (n <= ps->cap)
        return AMQ_OK;
    amq_free(a, ps->x, ps->cap * sizeof *ps->x);
    amq_free(a, ps->tmp, ps->cap * sizeof *ps->tmp);
    ps->cap = 0;
    if (amq_mul_size(n, sizeof(uint64_t), &bytes) != AMQ_OK)
        return AMQ_ENOMEM;
    ps->x = amq_malloc(a, bytes);
    ps->tmp = amq_malloc(a, bytes);
    if (ps->x == NULL || ps->tmp == NULL) {
        amq_free(a, ps->x, bytes);
        amq_free(a, ps->tmp, bytes);
        ps->x = ps->tmp = NULL;
        return AMQ_ENOMEM;
    }
    ps->cap = n;
    return AMQ_OK;
}

static void scratch_free(const amq_allocator *a, part_scratch *ps)
{
    amq_free(a, ps->x, ps->cap * sizeof *ps->x);
    amq_free(a, ps->tmp, ps->cap * sizeof *ps->tmp);
    memset(ps, 0, sizeof *ps);
}

/* Builds partition i from the h1 of its keys (duplicates allowed).  A kind
 * whose build takes its keys unsorted gets them only mixed, first; when it
 * answers that it met a duplicate (or failed, which a duplicate would also
 * cause), the same attempt runs again on the sorted, deduplicated keys, so
 * the geometry follows the distinct keys and the bytes are those of a
 * sorted build (a fuse filter's bytes do not depend on the keys' order). */
static int build_part_max(amq_static *s, uint32_t i, const uint64_t *h1, size_t n,
                          part_scratch *ps, unsigned max_attempts, amq_errinfo *err)
{
    amq_static_part *p = &s->parts[i];
    const amq_allocator *a = &s->alloc;
    const uint64_t *xs;
    unsigned attempt;
    size_t m = 0, k;
    amq_region out;
    int rc, sorted = !s->algo->unsorted, distinct = 0;

    if (scratch_reserve(a, ps, n > 0 ? n : 1) != AMQ_OK)
        return amq_err(err, AMQ_ENOMEM, "out of memory for a partition of %zu keys", n);
    for (attempt = 0; attempt < max_attempts; attempt++) {
        p->seed = attempt;
        p->mulseed = (uint64_t)attempt * AMQ_STATIC_GOLDEN;
        p->nomix = amq_static_nomix(s, attempt);
        p->hshift = p->nomix ? s->pbits : 0;
        /* x = h1: an unsorted build reads the keys where they are */
        xs = p->nomix && !sorted ? h1 : ps->x;
        if (p->nomix && sorted && n > 0)
            memcpy(ps->x, h1, n * sizeof *h1);
        else if (!p->nomix)
            for (k = 0; k < n; k++)
                ps->x[k] = amq_static_x(p, h1[k]);
        m = n;
        if (sorted) {
            sort_x(ps->x, ps->tmp, n);
            m = dedup_sorted(ps->x, n);
            /* distinct keys stay distinct under the next seeds' mixes */
            distinct = m == n;
        }
        p->items = m;
        /* s->size_n: every partition of one geometry (strided_eligible) */
        s->algo->size(s, s->size_n > m ? s->size_n : m, attempt, p);
        p->bytes = s->algo->prepare(s, p);
        if (p->bytes == 0 || p->bytes > SIZE_MAX)
            return amq_err(err, AMQ_ERANGE, "%s: a partition of %zu keys is too large",
                           s->algo->name, m);
        /* A region: aligned, and huge pages for a large partition (fewer
         * TLB misses on random reads). */
        if (amq_region_alloc(&out, a, (size_t)p->bytes) != AMQ_OK)
            return amq_err(err, AMQ_ENOMEM, "out of memory");
        rc = s->algo->build(s, p, xs, m, out.data);
        if (rc == AMQ_OK) {
            s->owned[i] = out;
            p->data = out.data;
            s->items += m;
            return AMQ_OK;
        }
        amq_region_free(&out, a);
        if (rc == AMQ_STATIC_RESORT && !distinct && !sorted) {
            /* duplicates, or a plain failure: sorting tells which */
            if (xs != ps->x && n > 0)
                memcpy(ps->x, xs, n * sizeof *xs);
            sort_x(ps->x, ps->tmp, n);
            if (dedup_sorted(ps->x, n) < n) {
                sorted = 1; /* this attempt again, on the deduplicated keys */
                attempt--;
                continue;
            }
            /* distinct: the same keys on the same seed would fail again */
            distinct = 1;
            continue;
        }
        if (rc != AMQ_EFULL && rc != AMQ_STATIC_RESORT)
            return amq_err(err, rc, "out of memory");
        if (distinct)
            sorted = !s->algo->unsorted;
    }
    return amq_err(err, AMQ_EFULL, "%s: partition %u (%zu keys) could not be built in %u attempts",
                   s->algo->name, i, m, max_attempts);
}

static int build_part(amq_static *s, uint32_t i, const uint64_t *h1, size_t n, part_scratch *ps,
                      amq_errinfo *err)
{
    return build_part_max(s, i, h1, n, ps, MAX_ATTEMPTS, err);
}

/* ---- the builder's static part (amq_builder: builder.c) ------------------------------------ */

struct amq_static_builder {
    amq_config cfg;
    amq_allocator alloc;
    amq_static proto; /* the checked variant */
    uint64_t *mem;    /* h1 of the keys, until spilled */
    size_t n, cap, limit;
    uint64_t total;
    int spilled;
    int fd[SPILL_BUCKETS];
    uint64_t count[SPILL_BUCKETS];
    uint32_t used[SPILL_BUCKETS];
    uint64_t *buf; /* SPILL_BUCKETS * SPILL_BUF */
    char dir[4096];
    int broken; /* an earlier write failed: every later call fails */
};

int amq_builder_tmpdir(const char *tmpdir, char *dir, size_t cap)
{
    if (tmpdir == NULL || *tmpdir == '\0')
        tmpdir = getenv("TMPDIR");
    if (tmpdir == NULL || *tmpdir == '\0')
        tmpdir = "/tmp";
    /* Room for the file names made inside it. */
    if (strlen(tmpdir) + 32 > cap)
        return AMQ_EINVAL;
    strcpy(dir, tmpdir);
    return AMQ_OK;
}

int amq_static_builder_start(const amq_static_algo *algo, const amq_config *cfg,
                             const char *tmpdir, size_t memory, amq_static_builder **out,
                             amq_errinfo *err)
{
    amq_allocator a;
    amq_static_builder *b;
    unsigned i;
    int rc;

    *out = NULL;
    rc = amq_hash_check_err(cfg->hash_algo, cfg->seed, 0, err);
    if (rc != AMQ_OK)
        return rc;
    if (!(cfg->fpp > 0.0 && cfg->fpp < 1.0))
        return amq_err(err, AMQ_ERANGE, "fpp %g is outside (0, 1)", cfg->fpp);
    if (cfg->partitions > (1u << AMQ_STATIC_MAX_PBITS) ||
        (cfg->partitions & (cfg->partitions - 1)) != 0)
        return amq_err(err, AMQ_ERANGE, "partitions %u: a static filter takes 0 (choose) or a "
                       "power of two up to 2^%u", cfg->partitions, AMQ_STATIC_MAX_PBITS);
    amq_alloc_init(&a, cfg->alloc);
    b = amq_calloc(&a, sizeof *b);
    if (b == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    b->cfg = *cfg;
    b->cfg.alloc = NULL;
    b->alloc = a;
    b->proto.algo = algo;
    b->proto.alloc = a;
    rc = algo->variant(&b->proto, cfg, err);
    if (rc != AMQ_OK) {
        amq_free(&a, b, sizeof *b);
        return rc;
    }
    b->limit = (memory == 0 ? DEFAULT_MEMORY : memory) / sizeof(uint64_t);
    if (b->limit < SPILL_BUCKETS * SPILL_BUF)
        b->limit = SPILL_BUCKETS * SPILL_BUF;
    for (i = 0; i < SPILL_BUCKETS; i++)
        b->fd[i] = -1;
    if (amq_builder_tmpdir(tmpdir, b->dir, sizeof b->dir) != AMQ_OK) {
        amq_free(&a, b, sizeof *b);
        return amq_err(err, AMQ_EINVAL, "temporary directory path too long");
    }
    *out = b;
    return AMQ_OK;
}

void amq_static_builder_free(amq_static_builder *b)
{
    amq_allocator a;
    unsigned i;
    if (b == NULL)
        return;
    a = b->alloc;
    for (i = 0; i < SPILL_BUCKETS; i++)
        if (b->fd[i] >= 0)
            close(b->fd[i]);
    amq_free(&a, b->mem, b->cap * sizeof *b->mem);
    amq_free(&a, b->buf, (size_t)SPILL_BUCKETS * SPILL_BUF * sizeof *b->buf);
    amq_free(&a, b, sizeof *b);
}

int amq_spill_write(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno == ENOSPC ? AMQ_ENOSPC : AMQ_EIO;
        }
        p += w;
        len -= (size_t)w;
    }
    return AMQ_OK;
}

int amq_spill_read(int fd, void *data, size_t len, uint64_t off)
{
    uint8_t *p = data;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return AMQ_EIO;
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return AMQ_OK;
}

/* Spill files hold h1 values in host byte order: they live only as long
 * as the builder, in the process that wrote them. */
static int spill_flush(amq_static_builder *b, unsigned j)
{
    int rc = amq_spill_write(b->fd[j], b->buf + (size_t)j * SPILL_BUF, b->used[j] * sizeof(uint64_t));
    b->used[j] = 0;
    return rc;
}

static int spill_one(amq_static_builder *b, uint64_t h1)
{
    unsigned j = (unsigned)(h1 >> (64 - SPILL_BITS));
    b->buf[(size_t)j * SPILL_BUF + b->used[j]++] = h1;
    b->count[j]++;
    return b->used[j] == SPILL_BUF ? spill_flush(b, j) : AMQ_OK;
}

int amq_spill_open(const char *dir)
{
    char path[4200];
    int fd;
    snprintf(path, sizeof path, "%s/amq-build-XXXXXX", dir);
    fd = mkstemp(path);
    /* Unlinked at once: nothing is left behind, whatever happens. */
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int spill_start(amq_static_builder *b)
{
    unsigned j;
    size_t i;
    int rc;

    b->buf = amq_malloc(&b->alloc, (size_t)SPILL_BUCKETS * SPILL_BUF * sizeof *b->buf);
    if (b->buf == NULL)
        return AMQ_ENOMEM;
    for (j = 0; j < SPILL_BUCKETS; j++) {
        b->fd[j] = amq_spill_open(b->dir);
        if (b->fd[j] < 0)
            return AMQ_EIO;
    }
    b->spilled = 1;
    for (i = 0; i < b->n; i++)
        if ((rc = spill_one(b, b->mem[i])) != AMQ_OK)
            return rc;
    /* From here on, memory is the buckets' buffers only. */
    amq_free(&b->alloc, b->mem, b->cap * sizeof *b->mem);
    b->mem = NULL;
    b->n = b->cap = 0;
    return AMQ_OK;
}

int amq_static_builder_add_batch(amq_static_builder *b, const amq_hash128 *h, size_t n)
{
    size_t i, cap;
    uint64_t *m;
    int rc;

    if (b->broken)
        return b->broken;
    if (!b->spilled && b->n + n > b->limit) {
        if ((rc = spill_start(b)) != AMQ_OK)
            return b->broken = rc;
    }
    if (b->spilled) {
        for (i = 0; i < n; i++)
            if ((rc = spill_one(b, h[i].h1)) != AMQ_OK)
                return b->broken = rc;
        b->total += n;
        return AMQ_OK;
    }
    if (b->n + n > b->cap) {
        cap = b->cap < 1024 ? 1024 : b->cap;
        while (cap < b->n + n)
            cap *= 2;
        if (cap > b->limit)
            cap = b->limit;
        /* realloc: a large array's pages move rather than being copied */
        m = amq_realloc(&b->alloc, b->mem, b->cap * sizeof *m, cap * sizeof *m);
        if (m == NULL)
            return AMQ_ENOMEM;
        b->mem = m;
        b->cap = cap;
    }
    for (i = 0; i < n; i++)
        b->mem[b->n + i] = h[i].h1;
    b->n += n;
    b->total += n;
    return AMQ_OK;
}

uint64_t *amq_static_builder_room(amq_static_builder *b, size_t want, size_t *room)
{
    size_t cap;
    uint64_t *m;

    *room = 0;
    if (b->broken || b->spilled)
        return NULL;
    if (b->cap - b->n < want && b->cap < b->limit) {
        cap = b->cap < 1024 ? 1024 : 2 * b->cap;
        /* a batch of known size: its keys in one step, not log2 of them */
        if (want > b->limit - b->n)
            want = b->limit - b->n;
        if (cap < b->n + want)
            cap = b->n + want;
        if (cap > b->limit)
            cap = b->limit;
        m = amq_realloc(&b->alloc, b->mem, b->cap * sizeof *m, cap * sizeof *m);
        if (m != NULL) { /* else the room there is, if any */
            b->mem = m;
            b->cap = cap;
        }
    }
    if (b->n == b->cap)
        return NULL; /* at the memory budget (the next add spills), or out of memory */
    *room = b->cap - b->n;
    return b->mem + b->n;
}

void amq_static_builder_commit(amq_static_builder *b, size_t m)
{
    b->n += m;
    b->total += m;
}

int amq_static_builder_add_h1(amq_static_builder *b, uint64_t h1)
{
    amq_hash128 h;
    if (!b->broken && !b->spilled && b->n < b->cap) {
        b->mem[b->n++] = h1;
        b->total++;
        return AMQ_OK;
    }
    h.h1 = h1;
    h.h2 = 0;
    return amq_static_builder_add_batch(b, &h, 1);
}

/* Fuse partitions that take x = h1 are all sized for the largest one's
 * count (duplicates included, as both build paths see it): one geometry,
 * placed at a fixed stride by gather, lets a query find its partition's
 * bytes by arithmetic instead of reading the table (amq_static.stride).
 * It costs the difference between the largest and each partition's count:
 * about 0.05 % of space at 8 partitions of 12M keys.  The spilled path
 * knows the counts only while a partition is a group of spill files. */
static int strided_eligible(const amq_static *s)
{
    return s->algo->kind == AMQ_KIND_FUSE && s->derive == AMQ_FUSE_DERIVE_PLAIN &&
           s->pbits > 0 && s->pbits <= SPILL_BITS;
}

static uint32_t choose_pbits(uint64_t n, unsigned target_log2)
{
    uint32_t pb = 0;
    while (pb < AMQ_STATIC_MAX_PBITS && (n >> pb) > ((uint64_t)1 << target_log2))
        pb++;
    return pb;
}

/* Builds partitions [first, first + count) from keys a[0..n) that all
 * belong to them. */
static int build_range(amq_static *s, uint32_t first, uint32_t count, uint64_t *a, size_t n,
                       part_scratch *ps, size_t *starts, size_t *next, amq_errinfo *err)
{
    uint32_t i;
    int rc;

    if (count == 1)
        return build_part(s, first, a, n, ps, err);
    /* The digit below the bits that chose this range. */
    flag_sort(a, n, 64 - s->pbits, count, starts, next);
    if (count == s->nparts && strided_eligible(s))
        for (i = 0; i < count; i++)
            if (starts[i + 1] - starts[i] > s->size_n)
                s->size_n = starts[i + 1] - starts[i];
    for (i = 0; i < count; i++) {
        rc = build_part(s, first + i, a + starts[i], starts[i + 1] - starts[i], ps, err);
        if (rc != AMQ_OK)
            return rc;
    }
    return AMQ_OK;
}

static int finish_spilled(amq_static_builder *b, amq_static *s, part_scratch *ps, size_t *starts,
                          size_t *next, amq_errinfo *err)
{
    uint32_t group, per, g, j, nb = SPILL_BUCKETS;
    uint64_t n, off;
    size_t cap = 0;
    uint64_t *a = NULL;
    int rc = AMQ_OK;

    for (j = 0; j < nb; j++)
        if (b->used[j] > 0 && (rc = spill_flush(b, j)) != AMQ_OK)
            return amq_err(err, rc, "cannot write the temporary files in %s", b->dir);
    /* Partitions are whole groups of buckets, or a bucket holds several. */
    group = s->pbits >= SPILL_BITS ? 1 : 1u << (SPILL_BITS - s->pbits);
    per = s->pbits >= SPILL_BITS ? 1u << (s->pbits - SPILL_BITS) : 1;
    /* the largest partition's count, as build_range finds it in memory */
    for (g = 0; strided_eligible(s) && g < nb; g += group) {
        for (n = 0, j = g; j < g + group; j++)
            n += b->count[j];
        if (n > s->size_n)
            s->size_n = n;
    }
    for (g = 0; g < nb; g += group) {
        n = 0;
        for (j = g; j < g + group; j++)
            n += b->count[j];
        if (n > SIZE_MAX / sizeof *a) {
            rc = amq_err(err, AMQ_ENOMEM, "a partition of %llu keys", (unsigned long long)n);
            break;
        }
        if (n > cap) {
            amq_free(&b->alloc, a, cap * sizeof *a);
            cap = (size_t)n;
            a = amq_malloc(&b->alloc, cap * sizeof *a);
            if (a == NULL) {
                cap = 0;
                rc = amq_err(err, AMQ_ENOMEM, "out of memory for %llu keys",
                             (unsigned long long)n);
                break;
            }
        }
        off = 0;
        for (j = g; j < g + group; j++) {
            rc = amq_spill_read(b->fd[j], a + off, (size_t)b->count[j] * sizeof *a, 0);
            if (rc != AMQ_OK) {
                rc = amq_err(err, rc, "cannot read back the temporary files in %s", b->dir);
                goto done;
            }
            off += b->count[j];
            close(b->fd[j]);
            b->fd[j] = -1;
        }
        rc = build_range(s, s->pbits >= SPILL_BITS ? g * per : g / group, per, a, (size_t)n, ps,
                         starts, next, err);
        if (rc != AMQ_OK)
            break;
    }
done:
    amq_free(&b->alloc, a, cap * sizeof *a);
    return rc;
}

/* The partitions built one by one moved into one region: queries of a
 * large filter then run in its huge pages (partitions under the size that
 * gets them would otherwise stay in small pages).  Each partition is freed
 * as soon as it is copied, so the peak is the filter plus one partition. */
static void gather(amq_static *s)
{
    uint64_t off = 0, total = data_size(s);
    amq_region r;
    uint32_t i;

    if (s->nparts == 1 || total > SIZE_MAX ||
        amq_region_alloc(&r, &s->alloc, (size_t)total) != AMQ_OK)
        return; /* stays as built: still a valid filter */
    for (i = 0; i < s->nparts; i++) {
        amq_static_part *p = &s->parts[i];
        memcpy(r.data + off, p->data, (size_t)p->bytes);
        p->data = r.data + off;
        amq_region_free(&s->owned[i], &s->alloc);
        off += align64(p->bytes);
    }
    amq_free(&s->alloc, s->owned, s->nparts * sizeof *s->owned);
    s->owned = NULL;
    s->payload = r;
}

int amq_static_builder_build(amq_static_builder *b, amq_static **out, amq_errinfo *err)
{
    amq_static *s = NULL;
    part_scratch ps;
    size_t *starts = NULL, *next = NULL, nb;
    uint32_t pbits;
    int rc;

    *out = NULL;
    memset(&ps, 0, sizeof ps);
    if (b->broken)
        return amq_err(err, b->broken, "an earlier write to the temporary files in %s failed",
                       b->dir);
    /* A build that held every key may take larger partitions (fuse: one
     * query step less); a spilled one keeps its construction bounded. */
    pbits = choose_pbits(b->total, !b->spilled && b->proto.algo->target_log2_held != 0
                                       ? b->proto.algo->target_log2_held
                                       : b->proto.algo->target_log2);
    /* at least the partitions asked for (fewer keys per construction) */
    while (((uint64_t)1 << pbits) < b->cfg.partitions)
        pbits++;
    rc = static_shell(b->proto.algo, &b->alloc, pbits, &s);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "out of memory");
    s->hash_algo = b->cfg.hash_algo;
    s->seed = b->cfg.seed;
    s->v1 = b->proto.v1;
    s->v2 = b->proto.v2;
    s->fpp = b->proto.fpp;
    s->alpha = b->proto.alpha;
    s->derive = s->algo->kind == AMQ_KIND_FUSE && amq_fuse_derive_plain_hash(s->hash_algo)
                    ? AMQ_FUSE_DERIVE_PLAIN
                    : AMQ_FUSE_DERIVE_MIX;
    s->owned = amq_calloc(&s->alloc, s->nparts * sizeof *s->owned);
    nb = (size_t)s->nparts;
    starts = amq_malloc(&s->alloc, (nb + 1) * sizeof *starts);
    next = amq_malloc(&s->alloc, (nb + 1) * sizeof *next);
    if (s->owned == NULL || starts == NULL || next == NULL) {
        rc = amq_err(err, AMQ_ENOMEM, "out of memory");
        goto done;
    }
    if (b->spilled)
        rc = finish_spilled(b, s, &ps, starts, next, err);
    else
        rc = build_range(s, 0, s->nparts, b->mem, b->n, &ps, starts, next, err);
    if (rc != AMQ_OK)
        goto done;
    /* A build that outgrew its memory budget (amq build of more keys than
     * memory) keeps its partitions as built: no second copy of the filter. */
    if (!b->spilled)
        gather(s);
    fill_views(s);
    *out = s;
    s = NULL; /* the caller's */
done:
    scratch_free(&b->alloc, &ps);
    amq_free(&b->alloc, starts, (nb + 1) * sizeof *starts);
    amq_free(&b->alloc, next, (nb + 1) * sizeof *next);
    static_free(s);
    return rc;
}

/* ---- public helpers ------------------------------------------------------------------------- */

int amq_kind_is_static(uint32_t kind)
{
    return kind == AMQ_KIND_FUSE || kind == AMQ_KIND_RIBBON;
}

/* ---- filter-policy blobs -----------------------------------------------------------------
 * One partition and an 18-byte trailer: v1 u8, v2 u8, zero u16, seed u32,
 * g0 u32, g1 u32, encoding id u8, 255 (docs/file-format.md).  Keys hash
 * with XXH3-128 seed 0.  A build tries BLOB_ATTEMPTS constructions, the
 * later ones larger; amq_policy_blob_size gives the size of the largest.
 */
#define BLOB_TRAILER 18u
#define BLOB_ATTEMPTS 8u

/* The variant a bits_per_key asks for: fuse 8-bit fingerprints below 18
 * bits per key, 16-bit above; ribbon the rate of a Bloom filter of that
 * many bits per key (LevelDB's and RocksDB's unit), in less space. */
static int blob_variant(amq_static *s, const amq_static_algo *algo, double bpk)
{
    amq_config cfg;
    double k, fpp;

    if (!(bpk > 0.0 && bpk <= 1000.0))
        return AMQ_ERANGE;
    memset(s, 0, sizeof *s);
    s->algo = algo;
    amq_alloc_init(&s->alloc, NULL);
    amq_config_init(&cfg, s->algo->kind);
    cfg.fingerprint_bits = bpk >= 18.0 ? 16 : 8;
    cfg.arity = 3;
    k = floor(bpk * 0.69314718 + 0.5);
    if (k < 1.0)
        k = 1.0;
    fpp = pow(1.0 - exp(-k / bpk), k);
    cfg.fpp = fpp < ldexp(1.0, -32) ? ldexp(1.0, -32) : fpp > 0.5 ? 0.5 : fpp;
    return s->algo->variant(s, &cfg, NULL);
}

int amq_static_blob_size(const amq_static_algo *algo, size_t n, double bpk, size_t *size)
{
    amq_static s;
    amq_static_part p;
    int rc = blob_variant(&s, algo, bpk);

    if (rc != AMQ_OK)
        return rc;
    memset(&p, 0, sizeof p);
    s.algo->size(&s, n, BLOB_ATTEMPTS - 1, &p);
    p.bytes = s.algo->prepare(&s, &p);
    if (p.bytes == 0 || p.bytes > SIZE_MAX - BLOB_TRAILER)
        return AMQ_ERANGE;
    *size = (size_t)p.bytes + BLOB_TRAILER;
    return AMQ_OK;
}

int amq_static_blob_build(const amq_static_algo *algo, uint32_t encoding, const amq_slice *keys,
                          size_t n, double bpk, uint8_t *out, size_t cap, size_t *written)
{
    amq_static proto, *s = NULL;
    amq_static_part *p;
    part_scratch ps;
    uint64_t *h1 = NULL;
    size_t i, max;
    uint8_t *t;
    int rc;

    rc = amq_static_blob_size(algo, n, bpk, &max);
    if (rc != AMQ_OK)
        return rc;
    if (cap < max)
        return AMQ_EINVAL;
    (void)blob_variant(&proto, algo, bpk);
    memset(&ps, 0, sizeof ps);
    rc = static_shell(proto.algo, NULL, 0, &s);
    if (rc != AMQ_OK)
        return rc;
    s->v1 = proto.v1;
    s->v2 = proto.v2;
    s->fpp = proto.fpp;
    s->alpha = proto.alpha;
    s->owned = amq_calloc(&s->alloc, sizeof *s->owned);
    h1 = amq_malloc(&s->alloc, (n ? n : 1) * sizeof *h1);
    if (s->owned == NULL || h1 == NULL) {
        rc = AMQ_ENOMEM;
        goto done;
    }
    for (i = 0; i < n; i++)
        h1[i] = amq_hash_key(AMQ_HASH_XXH3, 0, keys[i].data, keys[i].len).h1;
    rc = build_part_max(s, 0, h1, n, &ps, BLOB_ATTEMPTS, NULL);
    if (rc != AMQ_OK)
        goto done;
    p = &s->parts[0];
    memcpy(out, p->data, (size_t)p->bytes);
    t = out + p->bytes;
    t[0] = (uint8_t)s->v1;
    t[1] = (uint8_t)s->v2;
    amq_store16(t + 2, 0);
    amq_store32(t + 4, p->seed);
    amq_store32(t + 8, p->g[0]);
    amq_store32(t + 12, p->g[1]);
    t[16] = (uint8_t)encoding;
    t[17] = 255;
    *written = (size_t)p->bytes + BLOB_TRAILER;
done:
    scratch_free(&s->alloc, &ps);
    amq_free(&s->alloc, h1, (n ? n : 1) * sizeof *h1);
    static_free(s);
    return rc;
}

int amq_static_blob_match(const amq_static_algo *algo, const uint8_t *blob, size_t len, const void *key, size_t key_len)
{
    amq_static s;
    amq_static_part p;
    const uint8_t *t;

    if (len < BLOB_TRAILER)
        return AMQ_ETRUNC;
    t = blob + len - BLOB_TRAILER;
    memset(&s, 0, sizeof s);
    memset(&p, 0, sizeof p);
    s.algo = algo;
    s.v1 = t[0];
    s.v2 = t[1];
    if (s.algo->kind == AMQ_KIND_FUSE && (s.v1 != 8 && s.v1 != 16))
        return AMQ_ECORRUPT;
    if (s.algo->kind == AMQ_KIND_FUSE && (s.v2 != 3 && s.v2 != 4))
        return AMQ_ECORRUPT;
    if (s.algo->kind == AMQ_KIND_RIBBON && (s.v1 > 32 || s.v2 != 0))
        return AMQ_ECORRUPT;
    if (amq_load16(t + 2) != 0)
        return AMQ_ECORRUPT;
    p.seed = amq_load32(t + 4);
    p.mulseed = (uint64_t)p.seed * AMQ_STATIC_GOLDEN;
    p.g[0] = amq_load32(t + 8);
    p.g[1] = amq_load32(t + 12);
    /* ribbon: a stored upper count means r + 1 columns are in use */
    s.alpha = p.g[1] > 0 ? 0.5 : 0.0;
    if (s.algo->kind == AMQ_KIND_RIBBON && s.v1 == 32 && p.g[1] > 0)
        return AMQ_ECORRUPT;
    p.bytes = s.algo->prepare(&s, &p);
    if (p.bytes == 0 || p.bytes != len - BLOB_TRAILER)
        return AMQ_ECORRUPT;
    p.data = blob;
    s.pbits = 0;
    s.nparts = 1;
    s.parts = &p;
    return s.algo->contains(&s, amq_hash_key(AMQ_HASH_XXH3, 0, key, key_len).h1);
}

/* ---- for the adapter and codec (static_kind.c) ------------------------------------------- */

void amq_static_free(amq_static *s)
{
    static_free(s);
}

int amq_static_shell(const amq_static_algo *algo, const amq_allocator *alloc, uint32_t pbits,
                     amq_static **out)
{
    return static_shell(algo, alloc, pbits, out);
}

void amq_static_fill_views(amq_static *s)
{
    fill_views(s);
}

uint64_t amq_static_data_size(const amq_static *s)
{
    return data_size(s);
}
