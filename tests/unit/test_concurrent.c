/*
 * test_concurrent.c - the read side of the thread-safety contract: any
 * number of threads may use the reader functions of one filter at the same
 * time (amq/filter.h, amq/bloom.h list them), and filters that share
 * nothing may be written from different threads at the same time; and a
 * blocked or partitioned filter in concurrent mode saved while threads add
 * to it gives files that load and hold every key added before the save.
 *
 * Each case runs THREADS threads on one shared filter - in memory, mmap'd
 * from a file, and borrowed from a buffer - every thread calling every
 * reader (contains, contains_hash, contains_batch, hash, stats, describe,
 * serialized_size, serialize, clone, save) and comparing each answer with
 * the one computed before the threads started.  It runs in every unit
 * test build; `make tsan` runs it under ThreadSanitizer, which reports any
 * data race (none may exist: readers only read).
 *
 * Kinds are rows of kinds[]: a new kind adds a line.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "amq.h"
#include "amq/inplace.h"
#include "batch.h"
#include "test.h"

#define THREADS 4
#define NKEYS 2000
#define ROUNDS 3

typedef struct shared {
    const amq_filter *f;
    const uint8_t *bytes; /* f serialized */
    size_t len;
    uint8_t expect[2 * NKEYS];
    amq_stats stats;
    const char *save_path; /* where threads save concurrently (NULL: no) */
} shared;

typedef struct worker {
    shared *sh;
    int id;
    int errors;
    pthread_t thread;
} worker;

static size_t key(char *buf, unsigned i)
{
    return (size_t)snprintf(buf, 32, "key-%u", i);
}

static int count_fields(void *ctx, const amq_field *fld)
{
    (*(int *)ctx)++;
    return fld->name == NULL;
}

static void *reader(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    const amq_filter *f = sh->f;
    amq_hash128 h[64];
    uint8_t out[64], *buf = malloc(sh->len);
    char k[32];
    unsigned i, j, r, start = (unsigned)w->id * 97;
    amq_stats st;
    amq_filter *c;
    uint64_t size;
    int fields;

    for (r = 0; r < ROUNDS && buf != NULL; r++) {
        for (i = 0; i < 2 * NKEYS; i++) {
            unsigned x = (start + i) % (2 * NKEYS);
            size_t len = key(k, x);
            if (amq_filter_contains(f, k, len) != sh->expect[x])
                w->errors++;
            if (amq_filter_contains_hash(f, amq_filter_hash(f, k, len)) != sh->expect[x])
                w->errors++;
        }
        for (i = 0; i + 64 <= 2 * NKEYS; i += 64) {
            for (j = 0; j < 64; j++)
                h[j] = amq_filter_hash(f, k, key(k, i + j));
            amq_filter_contains_batch(f, h, 64, out);
            for (j = 0; j < 64; j++)
                if (out[j] != sh->expect[i + j])
                    w->errors++;
        }
        amq_filter_stats(f, &st);
        if (st.items != sh->stats.items || st.bits != sh->stats.bits ||
            st.fill != sh->stats.fill)
            w->errors++;
        fields = 0;
        if (amq_filter_describe(f, count_fields, &fields) != 0 || fields == 0)
            w->errors++;
        if (amq_filter_serialized_size(f, &size) != AMQ_OK || size != sh->len ||
            amq_filter_serialize(f, buf, sh->len, NULL) != AMQ_OK ||
            memcmp(buf, sh->bytes, sh->len) != 0)
            w->errors++;
        if (amq_filter_clone(f, NULL, &c) == AMQ_OK) {
            /* A private copy: writing it races with nothing. */
            for (i = 0; i < NKEYS; i += 50)
                if (amq_filter_contains(c, k, key(k, i)) != sh->expect[i])
                    w->errors++;
            (void)amq_filter_add(c, "private", 7);
            amq_filter_free(c);
        } else {
            w->errors++;
        }
        if (sh->save_path != NULL && amq_filter_save(f, sh->save_path, 0, NULL) != AMQ_OK)
            w->errors++;
    }
    free(buf);
    return NULL;
}

/* Runs the readers on f; returns the number of wrong answers. */
static int run_readers(const amq_filter *f, const char *save_path)
{
    shared sh;
    worker w[THREADS];
    uint64_t size;
    uint8_t *bytes;
    char k[32];
    unsigned i;
    int t, errors = 0;

    memset(&sh, 0, sizeof sh);
    sh.f = f;
    sh.save_path = save_path;
    if (amq_filter_serialized_size(f, &size) != AMQ_OK)
        return -1;
    bytes = malloc((size_t)size);
    if (bytes == NULL || amq_filter_serialize(f, bytes, (size_t)size, &sh.len) != AMQ_OK)
        return -1;
    sh.bytes = bytes;
    for (i = 0; i < 2 * NKEYS; i++)
        sh.expect[i] = (uint8_t)amq_filter_contains(f, k, key(k, i));
    amq_filter_stats(f, &sh.stats);

    for (t = 0; t < THREADS; t++) {
        w[t].sh = &sh;
        w[t].id = t;
        w[t].errors = 0;
        if (pthread_create(&w[t].thread, NULL, reader, &w[t]) != 0)
            return -1;
    }
    for (t = 0; t < THREADS; t++) {
        pthread_join(w[t].thread, NULL);
        errors += w[t].errors;
    }
    if (save_path != NULL) {
        /* Concurrent saves to one path: the survivor is a complete file. */
        amq_filter *g;
        uint8_t *again = malloc(sh.len);
        if (again == NULL || amq_filter_open(save_path, 0, NULL, &g, NULL) != AMQ_OK ||
            amq_filter_serialize(g, again, sh.len, NULL) != AMQ_OK ||
            memcmp(again, bytes, sh.len) != 0)
            errors++;
        else
            amq_filter_free(g);
        free(again);
    }
    free(bytes);
    return errors;
}

/* ---- kinds ------------------------------------------------------------------------------------ */

static amq_filter *bloom_probe(uint32_t probe, uint32_t hash)
{
    amq_bloom_params p;
    amq_bloom *b;
    amq_filter *f;
    if (amq_bloom_params_for(NKEYS, 0.01, &p) != AMQ_OK)
        return NULL;
    p.probe = probe;
    p.hash_algo = hash;
    if (amq_bloom_new(&p, NULL, &b) != AMQ_OK || amq_filter_from_bloom(b, &f) != AMQ_OK)
        return NULL;
    return f;
}

static amq_filter *make_bloom_native(void)
{
    amq_config cfg;
    amq_filter *f;
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = NKEYS;
    return amq_filter_new(&cfg, &f, NULL) == AMQ_OK ? f : NULL;
}

static amq_filter *make_bloom_guava(void)
{
    return bloom_probe(AMQ_BLOOM_PROBE_GUAVA, AMQ_HASH_MURMUR3);
}

static amq_filter *make_bloom_redisbloom(void)
{
    return bloom_probe(AMQ_BLOOM_PROBE_REDISBLOOM, AMQ_HASH_REDISBLOOM);
}

static amq_filter *make_kind(uint32_t kind, uint64_t capacity, int redisbloom)
{
    amq_config cfg;
    amq_filter *f;
    amq_config_init(&cfg, kind);
    cfg.capacity = capacity;
    cfg.redisbloom = (uint32_t)redisbloom;
    return amq_filter_new(&cfg, &f, NULL) == AMQ_OK ? f : NULL;
}

static amq_filter *make_cuckoo(void)
{
    return make_kind(AMQ_KIND_CUCKOO, NKEYS, 0);
}

static amq_filter *make_blocked(void)
{
    return make_kind(AMQ_KIND_BLOCKED, NKEYS, 0);
}

/* Eight partitions, each verified lazily when opened trusted. */
static amq_filter *make_partitioned(void)
{
    amq_config cfg;
    amq_filter *f;
    amq_config_init(&cfg, AMQ_KIND_PARTITIONED);
    cfg.capacity = NKEYS;
    cfg.partitions = 8;
    return amq_filter_new(&cfg, &f, NULL) == AMQ_OK ? f : NULL;
}

/* The scalable kinds sized for a tenth of the keys: they grow to hold
 * them, so readers walk several links / links. */
static amq_filter *make_sbloom(void)
{
    return make_kind(AMQ_KIND_SCALABLE_BLOOM, NKEYS / 10, 0);
}

static amq_filter *make_sbloom_rb(void)
{
    return make_kind(AMQ_KIND_SCALABLE_BLOOM, NKEYS / 10, 1);
}

static amq_filter *make_scuckoo(void)
{
    return make_kind(AMQ_KIND_SCALABLE_CUCKOO, NKEYS / 10, 0);
}

static amq_filter *make_scuckoo_rb(void)
{
    return make_kind(AMQ_KIND_SCALABLE_CUCKOO, NKEYS / 2, 1);
}

/* From a tenth of the keys too: the readers meet a table grown 25 times. */
static amq_filter *make_quotient(void)
{
    return make_kind(AMQ_KIND_QUOTIENT, NKEYS / 10, 0);
}

/* From a tenth of the keys too: the readers meet segments grown and split. */
static amq_filter *make_pocket(void)
{
    return make_kind(AMQ_KIND_POCKET, NKEYS / 10, 0);
}

static const struct kind_case {
    const char *name;
    amq_filter *(*make)(void); /* an empty filter that holds NKEYS */
} kinds[] = {
    {"bloom", make_bloom_native},
    {"bloom (guava probes)", make_bloom_guava},
    {"bloom (redisbloom probes)", make_bloom_redisbloom},
    {"blocked", make_blocked},
    {"partitioned", make_partitioned},
    {"cuckoo", make_cuckoo},
    {"scalable-bloom", make_sbloom},
    {"scalable-bloom (redisbloom)", make_sbloom_rb},
    {"scalable-cuckoo", make_scuckoo},
    {"scalable-cuckoo (redisbloom)", make_scuckoo_rb},
    {"quotient", make_quotient},
    {"pocket", make_pocket},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static amq_filter *filled(const struct kind_case *kc)
{
    amq_filter *f = kc->make();
    char k[32];
    unsigned i;
    for (i = 0; f != NULL && i < NKEYS; i++)
        (void)amq_filter_add(f, k, key(k, i));
    return f;
}

TEST(concurrent_readers_in_memory)
{
    size_t i;
    int errors;
    for (i = 0; i < NKINDS; i++) {
        amq_filter *f = filled(&kinds[i]);
        REQUIRE(f != NULL);
        errors = run_readers(f, test_path("concurrent-save.amq"));
        if (errors != 0)
            FAIL_AT_("%s: %d wrong answers from concurrent readers", kinds[i].name, errors);
        amq_filter_free(f);
    }
}

TEST(concurrent_readers_mmap_and_borrowed)
{
    size_t i;
    uint64_t size;
    uint8_t *buf;
    int errors;
    unsigned flags;

    for (i = 0; i < NKINDS; i++) {
        amq_filter *f = filled(&kinds[i]), *g;
        REQUIRE(f != NULL);
        REQUIRE_OK(amq_filter_save(f, test_path("shared.amq"), 0, NULL));
        for (flags = AMQ_OPEN_MMAP; flags <= (AMQ_OPEN_MMAP | AMQ_OPEN_TRUST); flags++) {
            if (!(flags & AMQ_OPEN_MMAP))
                continue;
            REQUIRE_OK(amq_filter_open(test_path("shared.amq"), flags, NULL, &g, NULL));
            errors = run_readers(g, NULL);
            if (errors != 0)
                FAIL_AT_("%s mmap'd (flags %u): %d wrong answers", kinds[i].name, flags, errors);
            amq_filter_free(g);
        }
        REQUIRE_OK(amq_filter_serialized_size(f, &size));
        buf = malloc((size_t)size);
        REQUIRE(buf != NULL);
        REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, NULL));
        REQUIRE_OK(amq_filter_deserialize(buf, (size_t)size, AMQ_OPEN_MMAP, NULL, &g, NULL));
        errors = run_readers(g, NULL);
        if (errors != 0)
            FAIL_AT_("%s borrowed: %d wrong answers", kinds[i].name, errors);
        amq_filter_free(g);
        free(buf);
        amq_filter_free(f);
    }
}

/* Filters that share nothing are written from several threads at once:
 * no hidden shared state in the library (a static buffer, a lazily set
 * global) may make that racy. */
typedef struct private_job {
    const struct kind_case *kc;
    int id, errors;
    pthread_t thread;
} private_job;

/* merge and intersect: done, or not a thing the kind does. */
static int combined(int rc)
{
    return rc == AMQ_OK || rc == AMQ_EUNSUPPORTED;
}

static void *private_writer(void *arg)
{
    private_job *j = arg;
    amq_filter *f = j->kc->make(), *g = NULL;
    amq_errinfo err;
    uint8_t blob[4096];
    amq_slice keys[16];
    char k[32], names[16][32];
    size_t written;
    unsigned i;

    if (f == NULL) {
        j->errors++;
        return NULL;
    }
    for (i = 0; i < NKEYS; i++)
        if (amq_filter_add(f, k, key(k, i * THREADS + (unsigned)j->id)) < 0 ||
            amq_filter_contains(f, k, key(k, i * THREADS + (unsigned)j->id)) != 1)
            j->errors++;
    if (amq_filter_clone(f, NULL, &g) != AMQ_OK || !combined(amq_filter_merge(g, f, &err)) ||
        !combined(amq_filter_intersect(g, f, &err)) || amq_filter_clear(g) != AMQ_OK)
        j->errors++;
    amq_filter_free(g);
    /* Error paths fill a caller's errinfo only. */
    if (amq_filter_deserialize("junk", 4, 0, NULL, &g, &err) == AMQ_OK)
        j->errors++;
    for (i = 0; i < 16; i++) {
        keys[i].len = key(names[i], i + (unsigned)j->id * 16);
        keys[i].data = names[i];
    }
    if (amq_policy_build(AMQ_POLICY_LEVELDB, keys, 16, 10, blob, sizeof blob, &written) != AMQ_OK)
        j->errors++;
    for (i = 0; i < 16; i++)
        if (t_policy_contains(blob, written, keys[i].data, keys[i].len) != 1)
            j->errors++;
    amq_filter_free(f);
    return NULL;
}

TEST(concurrent_private_writers)
{
    private_job jobs[THREADS];
    size_t i;
    int t, errors;

    for (i = 0; i < NKINDS; i++) {
        errors = 0;
        for (t = 0; t < THREADS; t++) {
            jobs[t].kc = &kinds[i];
            jobs[t].id = t;
            jobs[t].errors = 0;
            REQUIRE(pthread_create(&jobs[t].thread, NULL, private_writer, &jobs[t]) == 0);
        }
        for (t = 0; t < THREADS; t++) {
            pthread_join(jobs[t].thread, NULL);
            errors += jobs[t].errors;
        }
        if (errors != 0)
            FAIL_AT_("%s: %d errors from writers of private filters", kinds[i].name, errors);
    }
}

/* ---- saves while threads add --------------------------------------------------------------------
 * A blocked or partitioned filter in concurrent mode is saved (to a file,
 * and serialized) while SA_WRITERS threads add: every saved copy must load
 * (its checksums over the bytes it holds) and hold every key whose add
 * returned before the save began; no add is lost from the filter.  The
 * writers add in steps the main thread hands out, so that each save runs
 * while a step is being added. */

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

#define SA_WRITERS 2
#define SA_SAVES 10
/* keys each writer adds before a save begins (the save then runs while it
 * goes on), and at most in all: millions at full size, fewer where each
 * add costs more */
#define SA_LEAD ((UNDER_SAN || UNDER_TSAN) ? 2000u : 20000u)
#define SA_MAX ((UNDER_SAN || UNDER_TSAN) ? 200000u : 4000000u)

typedef struct sa_shared {
    amq_filter *f;
    _Atomic int adding; /* 1: writers add, 0: they wait (a copy is checked) */
    _Atomic int stop;
    _Atomic uint32_t added[SA_WRITERS]; /* keys each has added (release) */
    _Atomic int errors;
} sa_shared;

typedef struct sa_writer {
    sa_shared *sh;
    int id;
    pthread_t thread;
} sa_writer;

/* Writer w's key i, as its hash (splitmix64's finalizer of each half):
 * millions of keys cost no formatting and hashing of strings. */
static uint64_t sa_mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static amq_hash128 sa_key(int w, uint32_t i)
{
    amq_hash128 h;
    uint64_t x = (uint64_t)w << 32 | i;
    h.h1 = sa_mix(x);
    h.h2 = sa_mix(~x);
    return h;
}

static void *sa_add(void *arg)
{
    sa_writer *w = arg;
    sa_shared *sh = w->sh;
    const struct timespec pause = {0, 100000};
    uint32_t i = 0;

    while (!atomic_load_explicit(&sh->stop, memory_order_acquire)) {
        if (i == SA_MAX || !atomic_load_explicit(&sh->adding, memory_order_acquire)) {
            /* asleep, not spinning: the check of a copy has the cores */
            nanosleep(&pause, NULL);
            continue;
        }
        if (amq_filter_add_hash(sh->f, sa_key(w->id, i)) < 0)
            atomic_fetch_add(&sh->errors, 1);
        /* the add returned: a save that reads this count must hold the key */
        atomic_store_explicit(&sh->added[w->id], ++i, memory_order_release);
    }
    return NULL;
}

/* Keys of writer w below n that g does not answer present. */
static unsigned sa_missing(const amq_filter *g, int w, uint32_t n)
{
    amq_hash128 h[256];
    uint8_t out[256];
    unsigned missing = 0;
    uint32_t i, j, m;
    for (i = 0; i < n; i += m) {
        m = n - i < 256 ? n - i : 256;
        for (j = 0; j < m; j++)
            h[j] = sa_key(w, i + j);
        amq_filter_contains_batch(g, h, m, out);
        for (j = 0; j < m; j++)
            missing += out[j] != 1;
    }
    return missing;
}

/* Saves f SA_SAVES times while writers add to it, each copy checked
 * while they wait (all the machine's cores for the adds and the save). */
static void saves_while_adding(amq_filter *f, const char *name)
{
    sa_shared sh;
    sa_writer w[SA_WRITERS];
    uint32_t before[SA_WRITERS], lead;
    const char *path = test_path("saved-while-adding.amq");
    amq_errinfo err;
    amq_filter *g;
    uint64_t size;
    uint8_t *buf;
    unsigned missing;
    int s, t, rc;

    memset(&sh, 0, sizeof sh);
    sh.f = f;
    REQUIRE_OK(amq_filter_set_concurrent(f, 1));
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    memset(&err, 0, sizeof err);
    for (t = 0; t < SA_WRITERS; t++) {
        w[t].sh = &sh;
        w[t].id = t;
        REQUIRE(pthread_create(&w[t].thread, NULL, sa_add, &w[t]) == 0);
    }
    for (s = 0; s < SA_SAVES; s++) {
        /* the writers under way (SA_LEAD keys each) when the save begins */
        atomic_store_explicit(&sh.adding, 1, memory_order_release);
        for (t = 0; t < SA_WRITERS; t++) {
            lead = atomic_load_explicit(&sh.added[t], memory_order_acquire);
            lead = lead > SA_MAX - SA_LEAD ? SA_MAX : lead + SA_LEAD;
            while (atomic_load_explicit(&sh.added[t], memory_order_acquire) < lead)
                sched_yield();
        }
        for (t = 0; t < SA_WRITERS; t++)
            before[t] = atomic_load_explicit(&sh.added[t], memory_order_acquire);
        /* odd rounds serialized to memory, even ones saved to a file */
        if (s % 2 == 0) {
            rc = amq_filter_save(f, path, 0, &err);
            if (rc == AMQ_OK)
                rc = amq_filter_open(path, 0, NULL, &g, &err);
        } else {
            rc = amq_filter_serialize(f, buf, (size_t)size, NULL);
            if (rc == AMQ_OK)
                rc = amq_filter_deserialize(buf, (size_t)size, 0, NULL, &g, &err);
        }
        atomic_store_explicit(&sh.adding, 0, memory_order_release);
        if (rc != AMQ_OK) {
            FAIL_AT_("%s, save %d: %s (%s)", name, s, amq_strerror(rc), err.msg);
            continue;
        }
        for (t = 0; t < SA_WRITERS; t++) {
            missing = sa_missing(g, t, before[t]);
            if (missing != 0)
                FAIL_AT_("%s, save %d: %u of writer %d's first %u keys absent", name, s, missing, t,
                         before[t]);
        }
        amq_filter_free(g);
    }
    atomic_store_explicit(&sh.stop, 1, memory_order_release);
    for (t = 0; t < SA_WRITERS; t++)
        pthread_join(w[t].thread, NULL);
    for (t = 0; t < SA_WRITERS; t++) {
        missing = sa_missing(f, t, atomic_load(&sh.added[t]));
        if (missing != 0)
            FAIL_AT_("%s: %u of writer %d's keys lost from the filter", name, missing, t);
    }
    if (atomic_load(&sh.errors) != 0)
        FAIL_AT_("%s: %d adds failed", name, atomic_load(&sh.errors));
    free(buf);
}

TEST(concurrent_saves_while_adding_load_and_hold_every_earlier_key)
{
    amq_config cfg;
    amq_filter *f;
    int chunked;

    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.capacity = (uint64_t)SA_WRITERS * SA_MAX;
    cfg.fpp = 0.0001; /* a larger array: longer saves for the adds to race */
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    saves_while_adding(f, "blocked");
    amq_filter_free(f);
    /* partitioned: the index's checksums go before the partitions they sum;
     * both payload checksums (whole and chunked) */
    for (chunked = 0; chunked <= 1; chunked++) {
        amq_config_init(&cfg, AMQ_KIND_PARTITIONED);
        cfg.capacity = (uint64_t)SA_WRITERS * SA_MAX;
        cfg.fpp = 0.0001; /* a larger array: longer saves for the adds to race */
        REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
        REQUIRE_OK(amq_filter_set_chunked_checksum(f, chunked));
        saves_while_adding(f, chunked ? "partitioned (chunked checksum)" : "partitioned");
        amq_filter_free(f);
    }
}

TEST_MAIN()
