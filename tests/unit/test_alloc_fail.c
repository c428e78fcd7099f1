/*
 * test_alloc_fail.c - allocation failure, exhaustively: for each operation
 * that allocates (create, load, clone, merge, intersect, serialize, save,
 * open, and add on kinds that grow), the test allocator fails the 1st
 * allocation, then the 2nd, the 3rd, ... until the operation succeeds.
 * Every failure must return AMQ_ENOMEM, leave no block allocated (counted
 * here; LeakSanitizer checks the default allocator in the ASan run), leave
 * the filter it worked on exactly as it was (same serialized bytes, same
 * answers), and leave it usable.  An operation that never reaches its
 * failure point must succeed.
 *
 * Kinds are rows of kinds[] below: a new kind adds a line with a small
 * configuration, and grows = 1 if its add can allocate (2 if a growth that finds no memory
 * is put off to a later add, the key placed all the same: the filter must then hold every
 * key, in bytes that may differ).
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amq.h"
#include "amq/inplace.h"
#include "test.h"

/* ---- the failing allocator ------------------------------------------------------ */

typedef struct failing {
    uint64_t calls;   /* allocations asked for */
    uint64_t fail_at; /* fail the call with this number (1-based); 0: never */
    uint64_t failed;  /* allocations refused */
    uint64_t live;    /* blocks outstanding */
    uint64_t bad_frees;
    size_t watch;        /* a size to look out for */
    uint64_t watch_call; /* the last call asking for it (0: none) */
    size_t range_lo, range_hi; /* sizes in [lo, hi) to look out for */
    uint64_t range_call;       /* the last call asking for one (0: none) */
} failing;

/* Each block: its size and the malloc'd address it lies in, in the 16 bytes before it. */
#define HDR 16
#define LINE 64 /* the cache line the library's regions align to (amq_region_alloc) */

/* Every case runs twice: with the optional zalloc hook (filter arrays come
 * from it) and without (alloc + memset); the blocks' alignment goes with it. */
static int use_zalloc;

/*
 * Where blocks start: on a 64-byte boundary with zalloc, 16 bytes past one
 * (as malloc's often are) without.  A region (amq_region_alloc) given a
 * misaligned block frees it and asks for one 63 bytes longer: one
 * allocation with zalloc, two without, each refused in turn.  Left to
 * malloc's addresses, which depend on what the process allocated before
 * (the tests run first, ASan, GLIBC_TUNABLES), a region took either path
 * and the failures injected varied from run to run.
 */
static size_t skew(void)
{
    return use_zalloc ? 0 : 16;
}

static void *f_alloc(void *opaque, size_t size)
{
    failing *fa = opaque;
    uint8_t *raw, *p;

    fa->calls++;
    if (size == fa->watch)
        fa->watch_call = fa->calls;
    if (size >= fa->range_lo && size < fa->range_hi)
        fa->range_call = fa->calls;
    if (fa->calls == fa->fail_at) {
        fa->failed++;
        return NULL;
    }
    if (size == 0 || size > SIZE_MAX - HDR - 2 * LINE) {
        fa->bad_frees++; /* the hooks promise 0 < size; count it as misuse */
        return NULL;
    }
    raw = malloc(size + HDR + 2 * LINE);
    if (raw == NULL)
        return NULL;
    p = (uint8_t *)(((uintptr_t)raw + HDR + LINE - 1) & ~(uintptr_t)(LINE - 1)) + skew();
    memcpy(p - HDR, &size, sizeof size);
    memcpy(p - HDR + sizeof size, &raw, sizeof raw);
    fa->live++;
    return p;
}

static void f_free(void *opaque, void *ptr, size_t size)
{
    failing *fa = opaque;
    uint8_t *p = ptr, *raw;
    size_t was;

    memcpy(&was, p - HDR, sizeof was);
    memcpy(&raw, p - HDR + sizeof was, sizeof raw);
    if (was != size || fa->live == 0)
        fa->bad_frees++;
    fa->live--;
    free(raw);
}

static void *f_zalloc(void *opaque, size_t size)
{
    void *p = f_alloc(opaque, size);
    if (p != NULL)
        memset(p, 0, size);
    return p;
}

static amq_allocator failing_allocator(failing *fa)
{
    amq_allocator a;
    memset(&a, 0, sizeof a);
    memset(fa, 0, sizeof *fa);
    a.alloc = f_alloc;
    a.free = f_free;
    a.zalloc = use_zalloc ? f_zalloc : NULL;
    a.opaque = fa;
    return a;
}

/* Fail the n-th allocation from now on. */
static void arm(failing *fa, uint64_t n)
{
    fa->fail_at = fa->calls + n;
}

static void disarm(failing *fa)
{
    fa->fail_at = 0;
}

/* ---- kinds ---------------------------------------------------------------------------- */

static void cfg_bloom(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_BLOOM);
    cfg->capacity = 500;
}

static void cfg_blocked(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_BLOCKED);
    cfg->capacity = 500;
}

static void cfg_partitioned(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_PARTITIONED);
    cfg->capacity = 500;
    cfg->partitions = 4;
}

static void cfg_cuckoo(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_CUCKOO);
    cfg->capacity = 500;
}

/* Scalable kinds sized for few keys, so that GROW_KEYS adds grow them. */
static void cfg_sbloom(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_SCALABLE_BLOOM);
    cfg->capacity = 100;
}

static void cfg_sbloom_rb(amq_config *cfg)
{
    cfg_sbloom(cfg);
    cfg->redisbloom = 1;
}

static void cfg_scuckoo(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_SCALABLE_CUCKOO);
    cfg->capacity = 100;
}

static void cfg_scuckoo_rb(amq_config *cfg)
{
    cfg_scuckoo(cfg);
    cfg->redisbloom = 1;
}

static void cfg_aging(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_AGING);
    cfg->capacity = 500;
}

/* From its smallest table, so that GROW_KEYS adds grow it often. */
static void cfg_quotient(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_QUOTIENT);
    cfg->capacity = 50;
}

/* From its smallest start, so that GROW_KEYS adds grow and split its segments often (and
 * its 5-bit entries run out of bits: deep ranges). */
static void cfg_pocket(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_POCKET);
    cfg->capacity = 64;
    cfg->fingerprint_bits = 5;
    cfg->fpp = 0.5; /* (at 1 % such entries stop its growth at once) */
}

/* From a small table, so that GROW_KEYS adds double it often. */
static void cfg_expandable(amq_config *cfg)
{
    amq_config_init(cfg, AMQ_KIND_EXPANDABLE);
    cfg->capacity = 50;
}

static const struct kind_case {
    const char *name;
    void (*config)(amq_config *cfg);
    int grows; /* add may allocate (2: and puts a growth off when it cannot: see op_add) */
} kinds[] = {
    {"bloom", cfg_bloom, 0},
    {"blocked", cfg_blocked, 0},
    {"partitioned", cfg_partitioned, 0},
    {"cuckoo", cfg_cuckoo, 0},
    {"scalable-bloom", cfg_sbloom, 1},
    {"scalable-bloom (redisbloom)", cfg_sbloom_rb, 1},
    {"scalable-cuckoo", cfg_scuckoo, 1},
    {"scalable-cuckoo (redisbloom)", cfg_scuckoo_rb, 1},
    {"aging", cfg_aging, 0},
    {"quotient", cfg_quotient, 1},
    {"pocket", cfg_pocket, 2},
    {"expandable", cfg_expandable, 1},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

#define NKEYS 300
#define GROW_KEYS 5000 /* enough adds to make a growing kind grow */

static size_t key(char *buf, unsigned i)
{
    return (size_t)snprintf(buf, 32, "key-%u", i);
}

static void add_keys(amq_filter *f, unsigned from, unsigned to)
{
    char k[32];
    unsigned i;
    for (i = from; i < to; i++)
        (void)amq_filter_add(f, k, key(k, i));
}

/* A snapshot of a filter: its bytes and its answers on 2 * NKEYS keys. */
typedef struct snapshot {
    uint8_t *bytes;
    size_t len;
    uint8_t answers[2 * NKEYS];
} snapshot;

static void take(const amq_filter *f, snapshot *s)
{
    uint64_t size = 0;
    char k[32];
    unsigned i;

    memset(s, 0, sizeof *s);
    if (amq_filter_serialized_size(f, &size) != AMQ_OK)
        return;
    s->bytes = malloc((size_t)size);
    if (s->bytes == NULL || amq_filter_serialize(f, s->bytes, (size_t)size, &s->len) != AMQ_OK)
        s->len = 0;
    for (i = 0; i < 2 * NKEYS; i++)
        s->answers[i] = (uint8_t)amq_filter_contains(f, k, key(k, i));
}

static int same(const snapshot *a, const snapshot *b)
{
    return a->len != 0 && a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0 &&
           memcmp(a->answers, b->answers, sizeof a->answers) == 0;
}

static void drop(snapshot *s)
{
    free(s->bytes);
    s->bytes = NULL;
}

/* A reference filter of kind kc with NKEYS keys, default allocator. */
static amq_filter *reference(const struct kind_case *kc)
{
    amq_config cfg;
    amq_filter *f = NULL;
    kc->config(&cfg);
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    add_keys(f, 0, NKEYS);
    return f;
}

/*
 * The loop every case shares.  op runs the operation with the n-th
 * allocation from its start failing and returns its status; it checks what
 * it can see (the filter unchanged, the result right) and frees what it
 * made.  Here: every run with a refused allocation returns AMQ_ENOMEM (or
 * succeeds correctly, if the operation can do without that allocation),
 * leaks nothing and frees with the right sizes; the loop ends with the
 * first run in which no allocation was refused, which must succeed.
 * Returns the number of allocations the operation makes.
 */
typedef int (*op_fn)(void *ctx, failing *fa, const amq_allocator *al, uint64_t n);

static uint64_t exhaust(const char *what, op_fn op, void *ctx)
{
    failing fa;
    amq_allocator al = failing_allocator(&fa);
    uint64_t n;
    int rc;

    for (n = 1; n < 100000; n++) {
        memset(&fa, 0, sizeof fa);
        rc = op(ctx, &fa, &al, n);
        if (fa.bad_frees != 0)
            FAIL_AT_("%s, allocation %llu failing: a free with the wrong size", what,
                     (unsigned long long)n);
        if (fa.live != 0)
            FAIL_AT_("%s, allocation %llu failing: %llu blocks leaked (status %d)", what,
                     (unsigned long long)n, (unsigned long long)fa.live, rc);
        if (fa.failed == 0) {
            if (rc != AMQ_OK)
                FAIL_AT_("%s: status %d (%s) with no allocation refused", what, rc,
                         amq_strerror(rc));
            return n - 1;
        }
        if (rc != AMQ_ENOMEM && rc != AMQ_OK) {
            FAIL_AT_("%s, allocation %llu failing: status %d (%s), expected AMQ_ENOMEM", what,
                     (unsigned long long)n, rc, amq_strerror(rc));
            return n;
        }
        if (test_failed)
            return n;
    }
    FAIL_AT_("%s: still failing after %llu allocations", what, (unsigned long long)n);
    return n;
}

/* No temporary file of a save is left in the test directory. */
static int temporaries_left(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q 'amqtmp$'", test_tmpdir());
    return system(cmd) == 0;
}

/* ---- the operations ---------------------------------------------------------------------- */

typedef struct ctx {
    const struct kind_case *kc;
    amq_filter *ref;      /* a filter with NKEYS keys, default allocator */
    snapshot ref_snap;    /* ref as it must stay */
    uint8_t *bytes;       /* ref serialized, on a 64-byte boundary */
    size_t len;
    const char *path;     /* ref saved there */
    uint8_t *file;        /* the bytes of that file */
    size_t file_len;
    char fresh[1024];     /* a path with no file (test_path's buffers rotate) */
    unsigned flags;
    int *ref_results;     /* op_add: each add's result without failures */
} ctx;

static int op_create(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_config cfg;
    amq_filter *f = (amq_filter *)c; /* must be overwritten */
    amq_errinfo err;
    int rc;

    c->kc->config(&cfg);
    cfg.alloc = al;
    arm(fa, n);
    rc = amq_filter_new(&cfg, &f, &err);
    if (rc != AMQ_OK) {
        if (f != NULL)
            FAIL_AT_("create failed (%d) but left *out set", rc);
        if (err.msg[0] == '\0')
            FAIL_AT_("create failed (%d) without a message", rc);
        return rc;
    }
    disarm(fa);
    add_keys(f, 0, 10);
    amq_filter_free(f);
    return rc;
}

static int op_load(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_filter *f = (amq_filter *)c;
    snapshot s;
    int rc;

    arm(fa, n);
    rc = amq_filter_deserialize(c->bytes, c->len, c->flags, al, &f, NULL);
    if (rc != AMQ_OK) {
        if (f != NULL)
            FAIL_AT_("load failed (%d) but left *out set", rc);
        return rc;
    }
    disarm(fa);
    take(f, &s);
    if (!same(&s, &c->ref_snap))
        FAIL_AT_("a loaded filter differs from the reference");
    drop(&s);
    amq_filter_free(f);
    return rc;
}

static int op_open(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_filter *f = NULL;
    amq_errinfo err;
    snapshot s;
    int rc;

    arm(fa, n);
    rc = amq_filter_open(c->path, c->flags, al, &f, &err);
    if (rc != AMQ_OK) {
        if (rc == AMQ_ENOMEM && strstr(err.msg, c->path) == NULL)
            FAIL_AT_("open's out-of-memory message does not name the file: %s", err.msg);
        return rc;
    }
    disarm(fa);
    take(f, &s);
    if (!same(&s, &c->ref_snap))
        FAIL_AT_("an opened filter differs from the reference");
    drop(&s);
    amq_filter_free(f);
    return rc;
}

static int op_clone(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_filter *f = (amq_filter *)c;
    snapshot s;
    int rc;

    arm(fa, n);
    rc = amq_filter_clone(c->ref, al, &f);
    disarm(fa);
    take(c->ref, &s);
    if (!same(&s, &c->ref_snap))
        FAIL_AT_("clone (allocation %llu failing) changed its source", (unsigned long long)n);
    drop(&s);
    if (rc != AMQ_OK) {
        if (f != NULL)
            FAIL_AT_("clone failed but left *out set");
        return rc;
    }
    take(f, &s);
    if (!same(&s, &c->ref_snap))
        FAIL_AT_("a clone differs from its source");
    drop(&s);
    amq_filter_free(f);
    return rc;
}

/* merge (flags 0) or intersect (flags 1) the reference into a filter of
 * the same kind made with the failing allocator and holding other keys. */
static int op_combine(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_config cfg;
    amq_filter *dst;
    amq_errinfo err;
    snapshot before, after;
    int rc;

    c->kc->config(&cfg);
    cfg.alloc = al;
    if (amq_filter_new(&cfg, &dst, NULL) != AMQ_OK) {
        FAIL_AT_("cannot create the destination");
        return AMQ_EINVAL;
    }
    add_keys(dst, NKEYS / 2, NKEYS + NKEYS / 2);
    take(dst, &before);
    arm(fa, n);
    rc = c->flags ? amq_filter_intersect(dst, c->ref, &err) : amq_filter_merge(dst, c->ref, &err);
    disarm(fa);
    take(dst, &after);
    if (rc != AMQ_OK && !same(&before, &after))
        FAIL_AT_("a failed %s changed the destination", c->flags ? "intersect" : "merge");
    drop(&after);
    take(c->ref, &after);
    if (!same(&after, &c->ref_snap))
        FAIL_AT_("%s changed its source", c->flags ? "intersect" : "merge");
    drop(&after);
    drop(&before);
    /* Usable afterwards, whatever happened. */
    add_keys(dst, 0, 5);
    amq_filter_free(dst);
    return rc == AMQ_EUNSUPPORTED ? AMQ_OK : rc;
}

/* The bytes of the file at path (malloc'd, *len of them), or NULL. */
static uint8_t *file_bytes(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    struct stat st;
    uint8_t *b = NULL;
    if (fp != NULL && fstat(fileno(fp), &st) == 0 && (b = malloc((size_t)st.st_size + 1)) != NULL &&
        fread(b, 1, (size_t)st.st_size + 1, fp) != (size_t)st.st_size) {
        free(b);
        b = NULL;
    }
    if (fp != NULL)
        fclose(fp);
    *len = b != NULL ? (size_t)st.st_size : 0;
    return b;
}

/* Does the file at path hold exactly what the reference's save wrote? */
static int file_holds(const char *path, const ctx *c)
{
    size_t len;
    uint8_t *b = file_bytes(path, &len);
    int same_bytes = b != NULL && len == c->file_len && memcmp(b, c->file, len) == 0;
    free(b);
    return same_bytes;
}

#define W_SAVE 1u       /* save (else serialize) */
#define W_CONCURRENT 2u /* the filter in concurrent mode (partitions written from copies) */
#define W_FRESH 4u      /* save to a path with no file */

/* serialize or save (c->flags, W_*) the reference, re-made with the
 * failing allocator (serialization scratch comes from the filter's).
 * AMQ_EUNSUPPORTED: the kind has no concurrent mode. */
static int op_write(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_filter *f;
    amq_errinfo err;
    snapshot s;
    uint8_t *buf = malloc(c->len);
    size_t written = 0;
    const char *fresh = c->fresh;
    struct stat st;
    int rc;

    if (buf == NULL || amq_filter_deserialize(c->bytes, c->len, 0, al, &f, NULL) != AMQ_OK) {
        FAIL_AT_("cannot prepare the filter to write");
        free(buf);
        return AMQ_EINVAL;
    }
    if ((c->flags & W_CONCURRENT) && amq_filter_set_concurrent(f, 1) != AMQ_OK) {
        amq_filter_free(f);
        free(buf);
        return AMQ_EUNSUPPORTED;
    }
    unlink(fresh);
    arm(fa, n);
    if (!(c->flags & W_SAVE)) {
        rc = amq_filter_serialize(f, buf, c->len, &written);
        if (rc == AMQ_OK && (written != c->len || memcmp(buf, c->bytes, c->len) != 0))
            FAIL_AT_("serialize wrote other bytes");
    } else if (c->flags & W_FRESH) {
        rc = amq_filter_save(f, fresh, 0, &err);
        /* a failed save leaves no file; a save that succeeded, the reference's bytes */
        if (rc != AMQ_OK && stat(fresh, &st) == 0)
            FAIL_AT_("a failed save (status %d) left a file of %lld bytes", rc,
                     (long long)st.st_size);
        if (rc == AMQ_OK && !file_holds(fresh, c))
            FAIL_AT_("a save wrote other bytes");
        if (temporaries_left())
            FAIL_AT_("a save (status %d) left a temporary file", rc);
        unlink(fresh);
    } else {
        rc = amq_filter_save(f, c->path, 0, &err);
        /* Whatever happened, the file holds the reference's bytes (a failed
         * save leaves the old file, which has the same bytes here). */
        if (!file_holds(c->path, c))
            FAIL_AT_("%s, allocation %llu failing: after a save (status %d) the file is gone or "
                     "other", c->kc->name, (unsigned long long)n, rc);
        if (temporaries_left())
            FAIL_AT_("a save (status %d) left a temporary file", rc);
    }
    disarm(fa);
    take(f, &s);
    if (!same(&s, &c->ref_snap))
        FAIL_AT_("writing changed the filter");
    drop(&s);
    amq_filter_free(f);
    free(buf);
    return rc;
}

/* add on a growing kind: GROW_KEYS keys one by one, the n-th allocation
 * failing.  The add that gets AMQ_ENOMEM must leave the filter exactly as
 * a filter that never saw that key (compared with one built without
 * failures), and once the add is retried every add must answer as in a run
 * without failures (ref_results: the same 1, 0, AMQ_EFULL or AMQ_ELIMIT),
 * ending in the same bytes. */
static int op_add(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_config cfg;
    amq_filter *f, *g;
    snapshot s, t;
    char k[32];
    unsigned i, j;
    int rc, injected = 0;

    c->kc->config(&cfg);
    cfg.alloc = al;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK) {
        FAIL_AT_("cannot create the filter");
        return AMQ_EINVAL;
    }
    arm(fa, n);
    for (i = 0; i < GROW_KEYS && !test_failed; i++) {
        uint64_t failed = fa->failed;
        rc = amq_filter_add(f, k, key(k, i));
        if (rc == AMQ_ENOMEM && fa->failed != failed && !injected) {
            injected = 1;
            disarm(fa);
            take(f, &s);
            c->kc->config(&cfg);
            if (amq_filter_new(&cfg, &g, NULL) == AMQ_OK) {
                for (j = 0; j < i; j++)
                    (void)amq_filter_add(g, k, key(k, j));
                take(g, &t);
                if (!same(&s, &t))
                    FAIL_AT_("%s: the add of key %u that ran out of memory changed the filter",
                             c->kc->name, i);
                drop(&t);
                amq_filter_free(g);
            }
            drop(&s);
            rc = amq_filter_add(f, k, key(k, i)); /* the retry */
        }
        if (rc != c->ref_results[i])
            FAIL_AT_("%s, allocation %llu failing: key %u added with %d, %d without failures",
                     c->kc->name, (unsigned long long)n, i, rc, c->ref_results[i]);
    }
    disarm(fa);
    take(f, &s);
    if (c->kc->grows == 2) {
        /* a segment's growth that finds no memory is put off to the next add, the key placed
         * all the same: the filter may end in other bytes, but holds every key */
        unsigned present = 0;
        for (i = 0; i < GROW_KEYS; i++)
            present += amq_filter_contains(f, k, key(k, i)) == 1;
        if (present != GROW_KEYS)
            FAIL_AT_("%s, allocation %llu failing: %u of %u keys present", c->kc->name,
                     (unsigned long long)n, present, GROW_KEYS);
    } else if (!test_failed && !same(&s, &c->ref_snap)) {
        FAIL_AT_("%s, allocation %llu failing: the filter ends different", c->kc->name,
                 (unsigned long long)n);
    }
    drop(&s);
    amq_filter_free(f);
    return injected ? AMQ_ENOMEM : AMQ_OK;
}

/* ---- the tests ------------------------------------------------------------------------------ */

static int setup(ctx *c, const struct kind_case *kc)
{
    memset(c, 0, sizeof *c);
    c->kc = kc;
    c->ref = reference(kc);
    if (c->ref == NULL)
        return -1;
    take(c->ref, &c->ref_snap);
    c->len = c->ref_snap.len;
    /* A load with AMQ_OPEN_MMAP borrows only 64-byte aligned bytes and copies others:
     * aligned here, it borrows on every run, not as malloc's address falls (a copy runs
     * the code of a load without the flag). */
    c->bytes = aligned_alloc(LINE, (c->len + LINE - 1) / LINE * LINE);
    if (c->bytes == NULL)
        return -1;
    memcpy(c->bytes, c->ref_snap.bytes, c->len);
    c->path = test_path("ref.amq");
    snprintf(c->fresh, sizeof c->fresh, "%s", test_path("fresh.amq"));
    if (c->len == 0 || amq_filter_save(c->ref, c->path, 0, NULL) != AMQ_OK)
        return -1;
    c->file = file_bytes(c->path, &c->file_len);
    return c->file == NULL ? -1 : 0;
}

static void teardown(ctx *c)
{
    free(c->file);
    free(c->bytes);
    amq_filter_free(c->ref);
    drop(&c->ref_snap);
    unlink(c->path);
}

static void alloc_fail_create_load_clone_body(void);

TEST(alloc_fail_create_load_clone)
{
    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++)
        alloc_fail_create_load_clone_body();
}

static void alloc_fail_create_load_clone_body(void)
{
    size_t i;
    ctx c;
    char what[64];
    uint64_t n, min;

    for (i = 0; i < NKINDS; i++) {
        REQUIRE(setup(&c, &kinds[i]) == 0);
        snprintf(what, sizeof what, "%s create", kinds[i].name);
        n = exhaust(what, op_create, &c);
        /* At least the handle and the kind's object (a small scalable
         * Bloom filter and its bits are one block). */
        min = strcmp(kinds[i].name, "scalable-bloom") == 0 ? 1 : 2;
        CHECK_GE(n, min);
        for (c.flags = 0; c.flags < 4; c.flags++) {
            snprintf(what, sizeof what, "%s load (flags %u)", kinds[i].name, c.flags);
            CHECK_GE(exhaust(what, op_load, &c), min);
            snprintf(what, sizeof what, "%s open (flags %u)", kinds[i].name, c.flags);
            CHECK_GE(exhaust(what, op_open, &c), min);
        }
        snprintf(what, sizeof what, "%s clone", kinds[i].name);
        CHECK_GE(exhaust(what, op_clone, &c), min);
        teardown(&c);
    }
}

static void alloc_fail_merge_intersect_body(void);

TEST(alloc_fail_merge_intersect)
{
    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++)
        alloc_fail_merge_intersect_body();
}

static void alloc_fail_merge_intersect_body(void)
{
    size_t i;
    ctx c;
    char what[64];

    for (i = 0; i < NKINDS; i++) {
        REQUIRE(setup(&c, &kinds[i]) == 0);
        for (c.flags = 0; c.flags < 2; c.flags++) {
            snprintf(what, sizeof what, "%s %s", kinds[i].name, c.flags ? "intersect" : "merge");
            (void)exhaust(what, op_combine, &c);
        }
        teardown(&c);
    }
}

static void alloc_fail_serialize_save_body(void);

/* Has kind kc a concurrent mode (amq_filter_set_concurrent)? */
static int concurrent_kind(const struct kind_case *kc)
{
    amq_config cfg;
    amq_filter *f;
    int rc;
    kc->config(&cfg);
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return 0;
    rc = amq_filter_set_concurrent(f, 1);
    amq_filter_free(f);
    return rc == AMQ_OK;
}

TEST(alloc_fail_serialize_save)
{
    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++)
        alloc_fail_serialize_save_body();
}

static void alloc_fail_serialize_save_body(void)
{
    size_t i;
    ctx c;
    char what[64];

    static const unsigned ways[] = {0, W_SAVE, W_SAVE | W_FRESH, W_CONCURRENT,
                                    W_CONCURRENT | W_SAVE, W_CONCURRENT | W_SAVE | W_FRESH};
    size_t w;

    for (i = 0; i < NKINDS; i++) {
        REQUIRE(setup(&c, &kinds[i]) == 0);
        for (w = 0; w < sizeof ways / sizeof ways[0]; w++) {
            c.flags = ways[w];
            snprintf(what, sizeof what, "%s %s%s%s", kinds[i].name,
                     c.flags & W_SAVE ? "save" : "serialize",
                     c.flags & W_FRESH ? " (a new file)" : "",
                     c.flags & W_CONCURRENT ? " (concurrent mode)" : "");
            /* no concurrent mode: its first run says so, with nothing allocated */
            if ((c.flags & W_CONCURRENT) && !concurrent_kind(&kinds[i]))
                continue;
            CHECK_GE(exhaust(what, op_write, &c), 1);
        }
        teardown(&c);
    }
}

/* Fixed-size kinds never allocate in add; growing kinds recover from an
 * AMQ_ENOMEM at every allocation of their growth. */
static void alloc_fail_add_body(void);

TEST(alloc_fail_add)
{
    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++)
        alloc_fail_add_body();
}

static void alloc_fail_add_body(void)
{
    failing fa;
    amq_allocator al = failing_allocator(&fa);
    amq_config cfg;
    amq_filter *f;
    uint64_t calls;
    size_t i;
    ctx c;
    char what[64];

    for (i = 0; i < NKINDS; i++) {
        if (kinds[i].grows) {
            unsigned j;
            char k[32];
            memset(&c, 0, sizeof c);
            c.kc = &kinds[i];
            c.ref_results = calloc(GROW_KEYS, sizeof *c.ref_results);
            kinds[i].config(&cfg);
            REQUIRE(c.ref_results != NULL);
            REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
            for (j = 0; j < GROW_KEYS; j++)
                c.ref_results[j] = amq_filter_add(f, k, key(k, j));
            take(f, &c.ref_snap);
            amq_filter_free(f);
            snprintf(what, sizeof what, "%s add", kinds[i].name);
            CHECK_GE(exhaust(what, op_add, &c), 1);
            drop(&c.ref_snap);
            free(c.ref_results);
            continue;
        }
        kinds[i].config(&cfg);
        cfg.alloc = &al;
        REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
        calls = fa.calls;
        add_keys(f, 0, GROW_KEYS);
        if (fa.calls != calls)
            FAIL_AT_("%s: add allocated %llu times", kinds[i].name,
                     (unsigned long long)(fa.calls - calls));
        amq_filter_free(f);
        CHECK_EQ(fa.live, 0);
    }
}

/* add on the expandable kind with keys crowded into 2^-6 of the space, so
 * that doublings split buckets with stashed cells and the stash grows and
 * moves while a doubling is pending: each add is tried with its 1st, 2nd,
 * ... allocation failing until it goes through.  An add that gets AMQ_ENOMEM
 * must leave exactly the bytes of a twin fed only the adds taken (a Redis
 * replica: a failed command is not propagated), and the retry must answer
 * as the twin does. */
TEST(alloc_fail_expandable_crowded_adds_move_nothing)
{
    enum { N = 6000 };
    failing fa;
    amq_allocator al;
    amq_config cfg;
    amq_filter *f, *g;
    uint64_t i, st = 7, crowd, failures = 0, allocating = 0, settled_allocating = 0, k;
    uint8_t *fb, *gb;
    size_t lf, lg;
    int rc, rg;

    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++) {
        al = failing_allocator(&fa);
        cfg_expandable(&cfg);
        REQUIRE_OK(amq_filter_new(&cfg, &g, NULL));
        cfg.alloc = &al;
        REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
        crowd = test_rand(&st) & ~(~UINT64_C(0) >> 6);
        for (i = 0; i < N && !test_failed; i++) {
            amq_hash128 h;
            const uint64_t r = test_rand(&st);
            h.h1 = i % 4 == 3 ? r : crowd | r >> 6;
            h.h2 = 0;
            for (k = 1;; k++) {
                const uint64_t calls = fa.calls, failed = fa.failed;
                arm(&fa, k);
                rc = amq_filter_add_hash(f, h);
                disarm(&fa);
                if (fa.calls != calls && k == 1)
                    allocating++;
                if (fa.failed == failed)
                    break;
                failures++;
                if (rc != AMQ_ENOMEM) {
                    FAIL_AT_("add %llu, its allocation %llu failing: status %d",
                             (unsigned long long)i, (unsigned long long)k, rc);
                    break;
                }
                fb = test_serialized(f, &lf);
                gb = test_serialized(g, &lg);
                REQUIRE(fb != NULL && gb != NULL);
                if (!(lf == lg && memcmp(fb, gb, lf) == 0))
                    FAIL_AT_("add %llu, its allocation %llu failing: the filter changed",
                             (unsigned long long)i, (unsigned long long)k);
                free(fb);
                free(gb);
                if (test_failed)
                    break;
            }
            rg = amq_filter_add_hash(g, h);
            if (rc != rg)
                FAIL_AT_("add %llu: %d, the twin %d", (unsigned long long)i, rc, rg);
            if (i % 1000 == 999) { /* a doubling finished at once: settle, failing the same way */
                for (k = 1;; k++) {
                    const uint64_t failed = fa.failed;
                    arm(&fa, k);
                    rc = amq_filter_settle(f);
                    disarm(&fa);
                    if (fa.failed == failed)
                        break;
                    failures++;
                    fb = test_serialized(f, &lf);
                    gb = test_serialized(g, &lg);
                    REQUIRE(fb != NULL && gb != NULL);
                    if (rc != AMQ_ENOMEM || !(lf == lg && memcmp(fb, gb, lf) == 0))
                        FAIL_AT_("settle after add %llu, its allocation %llu failing: status %d, "
                                 "the filter %s", (unsigned long long)i, (unsigned long long)k,
                                 rc, lf == lg && memcmp(fb, gb, lf) == 0 ? "as it was" : "changed");
                    free(fb);
                    free(gb);
                    if (test_failed)
                        break;
                }
                CHECK_STATUS(rc, AMQ_OK);
                CHECK_STATUS(amq_filter_settle(g), AMQ_OK);
                settled_allocating += k > 1;
            }
        }
        fb = test_serialized(f, &lf);
        gb = test_serialized(g, &lg);
        REQUIRE(fb != NULL && gb != NULL);
        CHECK(lf == lg && memcmp(fb, gb, lf) == 0);
        free(fb);
        free(gb);
        amq_filter_free(f);
        amq_filter_free(g);
        CHECK_EQ(fa.live, 0);
        CHECK_EQ(fa.bad_frees, 0);
    }
    printf("  %llu adds and %llu settles allocated, %llu failures injected\n",
           (unsigned long long)allocating, (unsigned long long)settled_allocating,
           (unsigned long long)failures);
}

/* The save of f again with its nth allocation refused: to c's file (AMQ_ENOMEM naming it, the
 * file as it was), then to a new path (with flags: no file, no temporary left); then, with
 * nothing refused, to the new path (the filter still saves). */
static void refused_saves(amq_filter *f, ctx *c, failing *fa, uint64_t nth, unsigned flags)
{
    amq_errinfo err;
    struct stat st;
    unlink(c->fresh);
    fa->fail_at = fa->calls + nth;
    CHECK_STATUS(amq_filter_save(f, c->path, 0, &err), AMQ_ENOMEM);
    CHECK(strstr(err.msg, c->path) != NULL);
    CHECK_EQ(fa->failed, 1);
    CHECK(file_holds(c->path, c));
    fa->fail_at = fa->calls + nth;
    CHECK_STATUS(amq_filter_save(f, c->fresh, flags, &err), AMQ_ENOMEM);
    CHECK_EQ(fa->failed, 2);
    CHECK(stat(c->fresh, &st) != 0);
    CHECK(!temporaries_left());
    disarm(fa);
    REQUIRE_OK(amq_filter_save(f, c->fresh, flags, &err));
    CHECK(file_holds(c->fresh, c));
    unlink(c->fresh);
}

/* A partitioned filter in concurrent mode saves each partition through a
 * 64 KiB copy (adds may run meanwhile): the copy comes from the filter's
 * allocator, and when it is refused the save fails with AMQ_ENOMEM, the
 * old file as it was and a new path without a file.  Before, it came from
 * malloc: a host's allocator (Redis) neither counted nor could refuse it. */
TEST(alloc_fail_partitioned_concurrent_save_copy_buffer)
{
    failing fa;
    amq_allocator al;
    amq_config cfg;
    amq_filter *f;
    amq_errinfo err;
    ctx c;
    uint64_t at, calls;

    use_zalloc = 1; /* one run, with zalloc (and aligned blocks), whether tests ran before */
    al = failing_allocator(&fa);
    REQUIRE(setup(&c, &kinds[2]) == 0);
    REQUIRE(strcmp(kinds[2].name, "partitioned") == 0);
    cfg_partitioned(&cfg);
    cfg.alloc = &al;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    add_keys(f, 0, NKEYS);
    REQUIRE_OK(amq_filter_set_concurrent(f, 1));
    fa.watch = (size_t)1 << 16;
    calls = fa.calls;
    REQUIRE_OK(amq_filter_save(f, c.path, 0, &err));
    CHECK(file_holds(c.path, &c));
    at = fa.watch_call;
    if (at <= calls)
        FAIL_AT_("the concurrent save asked the filter's allocator for no 64 KiB copy");
    else {
        refused_saves(f, &c, &fa, at - calls, 0);
    }
    amq_filter_free(f);
    CHECK_EQ(fa.live, 0);
    CHECK_EQ(fa.bad_frees, 0);
    teardown(&c);
}

/* A save to a device (/dev/null, standard output) makes the whole file in
 * memory first (it cannot write the header last): that copy comes from the
 * filter's allocator, and when it is refused the save fails with
 * AMQ_ENOMEM, nothing written.  Before, it came from malloc: a host neither
 * counted nor could refuse it. */
static int op_save_device(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_filter *f;
    amq_errinfo err;
    snapshot s;
    int rc;

    if (amq_filter_deserialize(c->bytes, c->len, 0, al, &f, NULL) != AMQ_OK) {
        FAIL_AT_("cannot prepare the filter to save");
        return AMQ_EINVAL;
    }
    if ((c->flags & W_CONCURRENT) && amq_filter_set_concurrent(f, 1) != AMQ_OK) {
        amq_filter_free(f);
        return AMQ_EUNSUPPORTED;
    }
    fa->watch = c->len;
    arm(fa, n);
    rc = amq_filter_save(f, "/dev/null", 0, &err);
    disarm(fa);
    if (rc == AMQ_OK && fa->failed == 0 && fa->watch_call == 0)
        FAIL_AT_("%s: a save to /dev/null asked the filter's allocator for no %zu-byte copy",
                 c->kc->name, c->len);
    if (rc == AMQ_ENOMEM && strstr(err.msg, "/dev/null") == NULL)
        FAIL_AT_("a save's out-of-memory message does not name the file: %s", err.msg);
    take(f, &s);
    if (!same(&s, &c->ref_snap))
        FAIL_AT_("saving changed the filter");
    drop(&s);
    amq_filter_free(f);
    return rc;
}

static void alloc_fail_save_to_device_body(void)
{
    size_t i;
    ctx c;
    char what[64];

    for (i = 0; i < NKINDS; i++) {
        REQUIRE(setup(&c, &kinds[i]) == 0);
        for (c.flags = 0; c.flags <= W_CONCURRENT; c.flags += W_CONCURRENT) {
            if ((c.flags & W_CONCURRENT) && !concurrent_kind(&kinds[i]))
                continue;
            snprintf(what, sizeof what, "%s save to /dev/null%s", kinds[i].name,
                     c.flags & W_CONCURRENT ? " (concurrent mode)" : "");
            CHECK_GE(exhaust(what, op_save_device, &c), 1);
        }
        teardown(&c);
    }
}

TEST(alloc_fail_save_to_device)
{
    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++)
        alloc_fail_save_to_device_body();
}

/* amq_filter_equal (c->flags 0) and amq_filter_is_subset (1) serialize both
 * filters into memory: a filter's copy comes from its allocator, and when it
 * is refused they return AMQ_ENOMEM (never a wrong 0).  The failing filter is
 * the first argument (c->flags & 2: the second).  Before, both copies came
 * from malloc. */
static int op_compare(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_filter *f;
    amq_errinfo err;
    snapshot s;
    int rc, subset = c->flags & 1, second = (c->flags & 2) != 0;

    if (amq_filter_deserialize(c->bytes, c->len, 0, al, &f, NULL) != AMQ_OK) {
        FAIL_AT_("cannot prepare the filter to compare");
        return AMQ_EINVAL;
    }
    fa->watch = c->len;
    arm(fa, n);
    if (subset)
        rc = second ? amq_filter_is_subset(c->ref, f, &err) : amq_filter_is_subset(f, c->ref, &err);
    else
        rc = second ? amq_filter_equal(c->ref, f) : amq_filter_equal(f, c->ref);
    disarm(fa);
    if (rc == 1) {
        rc = AMQ_OK;
        if (fa->failed == 0 && fa->watch_call == 0)
            FAIL_AT_("%s: %s asked the filter's allocator for no %zu-byte copy", c->kc->name,
                     subset ? "is_subset" : "equal", c->len);
    } else if (rc != AMQ_ENOMEM) {
        FAIL_AT_("%s, allocation %llu failing: %s answered %d, expected 1 or AMQ_ENOMEM",
                 c->kc->name, (unsigned long long)n, subset ? "is_subset" : "equal", rc);
    }
    take(f, &s);
    if (!same(&s, &c->ref_snap))
        FAIL_AT_("comparing changed the filter");
    drop(&s);
    amq_filter_free(f);
    return rc;
}

static void alloc_fail_equal_subset_body(void)
{
    size_t i;
    ctx c;
    char what[80];
    amq_stats st;

    for (i = 0; i < NKINDS; i++) {
        REQUIRE(setup(&c, &kinds[i]) == 0);
        amq_filter_stats(c.ref, &st);
        for (c.flags = 0; c.flags < 4; c.flags++) {
            if ((c.flags & 1) && !amq_kind_is_bit_array(st.kind))
                continue;
            snprintf(what, sizeof what, "%s %s (failing filter %s)", kinds[i].name,
                     c.flags & 1 ? "is_subset" : "equal", c.flags & 2 ? "second" : "first");
            CHECK_GE(exhaust(what, op_compare, &c), 1);
        }
        teardown(&c);
    }
}

TEST(alloc_fail_equal_subset)
{
    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++)
        alloc_fail_equal_subset_body();
}

/* amq_partitioned_build's scratch (the workers' jobs, their counts and the
 * thread handles) comes from the allocator it is given, and each refusal
 * returns AMQ_ENOMEM with nothing left allocated.  Before, all three came
 * from malloc and calloc. */
typedef struct build_ctx {
    amq_partitioned_params p;
    amq_hash128 h[2000];
    unsigned threads;
    uint8_t *bytes; /* the build's file with the default allocator */
    size_t len;
} build_ctx;

static int part_bytes(amq_partitioned *p, uint8_t **out, size_t *len)
{
    amq_filter *g;
    size_t size = 0;
    int rc = amq_filter_from_partitioned(p, &g);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_filter_serialized_size(g, &size);
    *out = rc == AMQ_OK ? malloc(size) : NULL;
    if (*out != NULL)
        rc = amq_filter_serialize(g, *out, size, len);
    amq_filter_free(g);
    return *out == NULL ? AMQ_ENOMEM : rc;
}

static int op_build(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    build_ctx *b = vc;
    amq_partitioned *p = (amq_partitioned *)b;
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc;

    arm(fa, n);
    rc = amq_partitioned_build(&b->p, b->h, 2000, b->threads, al, &p);
    disarm(fa);
    if (rc != AMQ_OK) {
        if (p != NULL)
            FAIL_AT_("build failed (%d) but left *out set", rc);
        return rc;
    }
    if (part_bytes(p, &bytes, &len) != AMQ_OK || len != b->len || memcmp(bytes, b->bytes, len) != 0)
        FAIL_AT_("a build (%u threads) made other bytes", b->threads);
    free(bytes);
    return rc;
}

TEST(alloc_fail_partitioned_build_scratch)
{
    static build_ctx b;
    uint64_t seed = 0xb17d, one, two;
    failing fa;
    amq_allocator al = failing_allocator(&fa);
    amq_partitioned *p;
    size_t i;

    memset(&b.p, 0, sizeof b.p);
    b.p.partitions = 7;
    b.p.hash_algo = AMQ_HASH_XXH3;
    b.p.fpp = 0.01;
    for (i = 0; i < 2000; i++) {
        b.h[i].h1 = test_rand(&seed);
        b.h[i].h2 = test_rand(&seed);
    }
    REQUIRE_OK(amq_partitioned_build(&b.p, b.h, 2000, 1, NULL, &p));
    REQUIRE_OK(part_bytes(p, &b.bytes, &b.len));
    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++) {
        b.threads = 1;
        one = exhaust("partitioned build (1 thread)", op_build, &b);
        b.threads = 2;
        two = exhaust("partitioned build (2 threads)", op_build, &b);
        /* 2 threads: each of the two passes allocates the handle of the thread it starts */
        CHECK_EQ(two, one + 2);
        /* the counts of 2 workers over 7 partitions, 8 bytes each (not a size the
         * filter itself asks for: its 7 partitions' records take 168) */
        al = failing_allocator(&fa);
        fa.watch = 2 * 7 * sizeof(uint64_t);
        REQUIRE_OK(amq_partitioned_build(&b.p, b.h, 2000, 2, &al, &p));
        if (fa.watch_call == 0)
            FAIL_AT_("a build on 2 threads asked its allocator for no counts of 112 bytes");
        amq_partitioned_free(p);
        CHECK_EQ(fa.live, 0);
    }
    free(b.bytes);
}

/* amq_filter_save opens its target (three path buffers of 4 KiB: too much
 * for a caller's stack) on the heap: the filter's, which a host counts.
 * Refused, the save fails with AMQ_ENOMEM naming the file, the old file as
 * it was and a new path without a file.  Before, it came from malloc. */
TEST(alloc_fail_save_target_from_filter_allocator)
{
    failing fa;
    amq_allocator al;
    amq_filter *f;
    amq_errinfo err;
    ctx c;
    uint64_t at, calls;

    use_zalloc = 1; /* one run, with zalloc (and aligned blocks), whether tests ran before */
    al = failing_allocator(&fa);
    REQUIRE(setup(&c, &kinds[0]) == 0);
    REQUIRE_OK(amq_filter_deserialize(c.bytes, c.len, 0, &al, &f, NULL));
    /* a small Bloom filter's save asks for nothing else of this size (its
     * scratch is 64 KiB, its parameters a few bytes) */
    fa.range_lo = 3 * 4096;
    fa.range_hi = (size_t)64 << 10;
    calls = fa.calls;
    REQUIRE_OK(amq_filter_save(f, c.path, 0, &err));
    CHECK(file_holds(c.path, &c));
    at = fa.range_call;
    if (at <= calls) {
        FAIL_AT_("a save asked the filter's allocator for no block of 12 to 64 KiB (its target)");
    } else {
        refused_saves(f, &c, &fa, at - calls, AMQ_SAVE_EXCL);
    }
    amq_filter_free(f);
    CHECK_EQ(fa.live, 0);
    CHECK_EQ(fa.bad_frees, 0);
    teardown(&c);
}

/* amq_filter_open of a pipe reads its bytes into memory (64 KiB, doubled
 * as they come) before loading them: that copy comes from the allocator
 * given, and each refusal returns AMQ_ENOMEM naming the file, nothing left
 * allocated.  Before, it came from malloc and realloc: a host neither
 * counted nor could refuse it. */
static int op_open_pipe(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    ctx *c = vc;
    amq_filter *f = NULL;
    amq_errinfo err;
    char path[64];
    snapshot s;
    int fds[2], rc;

    if (pipe(fds) != 0 || write(fds[1], c->bytes, c->len) != (ssize_t)c->len) {
        FAIL_AT_("cannot fill a pipe");
        return AMQ_EINVAL;
    }
    close(fds[1]);
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    fa->watch = (size_t)1 << 16;
    arm(fa, n);
    rc = amq_filter_open(path, c->flags, al, &f, &err);
    disarm(fa);
    close(fds[0]);
    if (rc == AMQ_OK && fa->failed == 0 && fa->watch_call == 0)
        FAIL_AT_("%s: an open of a pipe asked the allocator for no 64 KiB buffer", c->kc->name);
    if (rc != AMQ_OK) {
        if (rc == AMQ_ENOMEM && strstr(err.msg, path) == NULL)
            FAIL_AT_("open's out-of-memory message does not name the file: %s", err.msg);
        return rc;
    }
    take(f, &s);
    if (!same(&s, &c->ref_snap))
        FAIL_AT_("a filter opened from a pipe differs from the reference");
    drop(&s);
    amq_filter_free(f);
    return rc;
}

static void alloc_fail_open_pipe_body(void)
{
    size_t i;
    ctx c;
    char what[80];

    for (i = 0; i < NKINDS; i++) {
        REQUIRE(setup(&c, &kinds[i]) == 0);
        REQUIRE(c.len < 60000); /* the pipe holds it all before the open reads it */
        for (c.flags = 0; c.flags <= AMQ_OPEN_MMAP; c.flags += AMQ_OPEN_MMAP) {
            snprintf(what, sizeof what, "%s open of a pipe (flags %u)", kinds[i].name, c.flags);
            CHECK_GE(exhaust(what, op_open_pipe, &c), 2);
        }
        teardown(&c);
    }
}

TEST(alloc_fail_open_pipe)
{
    for (use_zalloc = 0; use_zalloc < 2 && !test_failed; use_zalloc++)
        alloc_fail_open_pipe_body();
}

/* An open of a file whose in-place add was cut short reads the journal
 * beside it into memory and reads the file as the journal completes it:
 * that copy comes from the allocator given, and a refusal returns
 * AMQ_ENOMEM (the file read without its journal may be half written, and
 * misses the journal's keys).  Before, it came from malloc, and a refused
 * malloc read the file without its journal. */
typedef struct journal_ctx {
    char path[1024];
    char jpath[1100];
    size_t jlen;
} journal_ctx;

static int op_open_journal(void *vc, failing *fa, const amq_allocator *al, uint64_t n)
{
    journal_ctx *jc = vc;
    amq_filter *f = NULL;
    amq_errinfo err;
    char k[32];
    unsigned i, missing = 0;
    int rc;

    fa->watch = jc->jlen;
    arm(fa, n);
    rc = amq_filter_open(jc->path, 0, al, &f, &err);
    disarm(fa);
    if (rc != AMQ_OK) {
        if (rc == AMQ_ENOMEM && strstr(err.msg, jc->path) == NULL)
            FAIL_AT_("open's out-of-memory message does not name the file: %s", err.msg);
        return rc;
    }
    if (fa->failed == 0 && fa->watch_call == 0)
        FAIL_AT_("an open asked the allocator for no copy of the %zu-byte journal", jc->jlen);
    for (i = 0; i < 2 * NKEYS; i++)
        missing += amq_filter_contains(f, k, key(k, i)) != 1;
    if (missing != 0)
        FAIL_AT_("allocation %llu failing: an open missed %u of the file's and its journal's keys",
                 (unsigned long long)n, missing);
    amq_filter_free(f);
    return rc;
}

TEST(alloc_fail_open_with_journal)
{
    static journal_ctx jc;
    amq_config cfg;
    amq_filter *f;
    struct stat st;

    use_zalloc = 1; /* one run, with zalloc (and aligned blocks), whether tests ran before */
    snprintf(jc.path, sizeof jc.path, "%s", test_path("journaled.amq"));
    snprintf(jc.jpath, sizeof jc.jpath, "%s/.journaled.amq.amqjournal", test_tmpdir());
    cfg_bloom(&cfg);
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    add_keys(f, 0, NKEYS);
    REQUIRE_OK(amq_filter_set_chunked_checksum(f, 1));
    REQUIRE_OK(amq_filter_save(f, jc.path, 0, NULL));
    amq_filter_free(f);
    /* a child adds NKEYS more in place and is killed between its journal and the file */
    REQUIRE(test_cut_short_inplace_add(jc.path, jc.jpath, add_keys, NKEYS, 2 * NKEYS) == 0);
    REQUIRE(stat(jc.jpath, &st) == 0 && st.st_size > 0);
    jc.jlen = (size_t)st.st_size;
    CHECK_GE(exhaust("bloom open with a journal", op_open_journal, &jc), 2);
    unlink(jc.jpath);
    unlink(jc.path);
}

TEST_MAIN()
