/*
 * test_kinds_contract.c - what amq/filter.h promises for every kind, checked
 * on every kind built into the library (found by amq_kind_name, so a new
 * kind is covered without a change here).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amq.h"
#include "test.h"

static amq_filter *filled(uint32_t kind)
{
    amq_config cfg;
    amq_filter *f;
    char k[32];
    unsigned i;

    amq_config_init(&cfg, kind);
    cfg.capacity = 1000;
    if (amq_kind_is_static(kind)) { /* built from all their keys at once */
        amq_hash128 h[500];
        for (i = 0; i < 500; i++)
            h[i] = amq_hash_key(cfg.hash_algo, cfg.seed, k,
                                (size_t)snprintf(k, sizeof k, "key-%u", i));
        return amq_filter_build(&cfg, h, 500, &f, NULL) == AMQ_OK ? f : NULL;
    }
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    for (i = 0; i < 500; i++)
        (void)amq_filter_add(f, k, (size_t)snprintf(k, sizeof k, "key-%u", i));
    return f;
}

static void check_readonly(amq_filter *g, const char *what, uint32_t kind)
{
    amq_errinfo err;
    int rc;

    if (!amq_filter_is_readonly(g))
        FAIL_AT_("%s %s: opened with AMQ_OPEN_MMAP but writable", amq_kind_name(kind), what);
    if ((rc = amq_filter_add(g, "new", 3)) != AMQ_EREADONLY)
        FAIL_AT_("%s %s: add returned %d", amq_kind_name(kind), what, rc);
    if ((rc = amq_filter_clear(g)) != AMQ_EREADONLY)
        FAIL_AT_("%s %s: clear returned %d", amq_kind_name(kind), what, rc);
    rc = amq_filter_remove(g, "key-1", 5);
    if (rc != AMQ_EREADONLY && rc != AMQ_EUNSUPPORTED)
        FAIL_AT_("%s %s: remove returned %d", amq_kind_name(kind), what, rc);
    rc = amq_filter_merge(g, g, &err);
    if (rc != AMQ_EREADONLY && rc != AMQ_EUNSUPPORTED)
        FAIL_AT_("%s %s: merge into it returned %d", amq_kind_name(kind), what, rc);
    if (amq_filter_contains(g, "key-1", 5) != 1)
        FAIL_AT_("%s %s: lost a key", amq_kind_name(kind), what);
}

/* AMQ_OPEN_MMAP gives a read-only filter whether the kind queries the bytes
 * in place or has to copy them (growing kinds; a file that is a pipe). */
TEST(kinds_open_mmap_is_read_only)
{
    uint32_t kind;
    amq_filter *f, *g;
    uint64_t size;
    uint8_t *buf;
    const char *path = test_path("ro.amq");
    char fdpath[64];
    int p[2];
    unsigned flags;

    for (kind = 1; kind < 64; kind++) {
        if (amq_kind_name(kind) == NULL)
            continue;
        f = filled(kind);
        REQUIRE(f != NULL);
        REQUIRE_OK(amq_filter_serialized_size(f, &size));
        buf = malloc((size_t)size);
        REQUIRE(buf != NULL);
        REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, NULL));
        for (flags = AMQ_OPEN_MMAP; flags <= (AMQ_OPEN_MMAP | AMQ_OPEN_TRUST); flags += 2) {
            REQUIRE_OK(amq_filter_deserialize(buf, (size_t)size, flags, NULL, &g, NULL));
            check_readonly(g, "borrowed", kind);
            amq_filter_free(g);
        }
        REQUIRE_OK(amq_filter_save(f, path, 0, NULL));
        REQUIRE_OK(amq_filter_open(path, AMQ_OPEN_MMAP, NULL, &g, NULL));
        check_readonly(g, "mmap'd", kind);
        amq_filter_free(g);
        /* A pipe cannot be mapped: it is read into memory, read-only still. */
        if (size < 60000) {
            REQUIRE(pipe(p) == 0);
            REQUIRE(write(p[1], buf, (size_t)size) == (ssize_t)size);
            close(p[1]);
            snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", p[0]);
            REQUIRE_OK(amq_filter_open(fdpath, AMQ_OPEN_MMAP, NULL, &g, NULL));
            check_readonly(g, "from a pipe", kind);
            amq_filter_free(g);
            close(p[0]);
        }
        /* Without the flag: writable. */
        REQUIRE_OK(amq_filter_deserialize(buf, (size_t)size, 0, NULL, &g, NULL));
        CHECK(!amq_filter_is_readonly(g));
        if (amq_kind_is_static(kind))
            CHECK_EQ(amq_filter_add(g, "new", 3), AMQ_EUNSUPPORTED);
        else
            CHECK(amq_filter_add(g, "new", 3) >= 0);
        amq_filter_free(g);
        free(buf);
        amq_filter_free(f);
    }
}

static void store64(uint8_t *p, uint64_t v)
{
    int i;
    for (i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t load64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* A file whose item count disagrees with its arrays (header checksum made
 * to hold): each kind either accepts the count (informational, Bloom
 * kinds) or refuses the file as corrupt with a message - the scalable
 * cuckoo filter freed itself before formatting that message. */
TEST(kinds_wrong_item_count_is_refused_cleanly)
{
    static const int64_t deltas[] = {1, -1, 1000000};
    uint32_t kind, plen;
    amq_filter *f, *g;
    amq_errinfo err;
    uint64_t size, items;
    uint8_t *buf;
    size_t d;
    int rc;

    for (kind = 1; kind < 64; kind++) {
        if (amq_kind_name(kind) == NULL)
            continue;
        f = filled(kind);
        REQUIRE(f != NULL);
        REQUIRE_OK(amq_filter_serialized_size(f, &size));
        buf = malloc((size_t)size);
        REQUIRE(buf != NULL);
        for (d = 0; d < sizeof deltas / sizeof deltas[0]; d++) {
            REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, NULL));
            items = load64(buf + 24);
            store64(buf + 24, items + (uint64_t)deltas[d]);
            plen = (uint32_t)load64(buf + 32); /* and the reserved 0 above it */
            store64(buf + 64 + plen, amq_xxh3_64(buf, 64 + plen, 0));
            memset(&err, 0, sizeof err);
            g = NULL;
            rc = amq_filter_deserialize(buf, (size_t)size, 0, NULL, &g, &err);
            if (rc == AMQ_OK)
                amq_filter_free(g);
            else if (rc != AMQ_ECORRUPT || g != NULL || err.msg[0] == '\0')
                FAIL_AT_("%s, item count %+lld: status %d, message '%s'", amq_kind_name(kind),
                         (long long)deltas[d], rc, err.msg);
        }
        free(buf);
        amq_filter_free(f);
    }
}

/* n packed keys of len bytes: key i is i's bytes, then a pattern. */
static uint8_t *packed_keys(size_t n, size_t len)
{
    uint8_t *k = malloc(n * len);
    size_t i, j;
    if (k == NULL)
        return NULL;
    for (i = 0; i < n; i++)
        for (j = 0; j < len; j++)
            k[i * len + j] = (uint8_t)(j < 8 ? i >> (8 * j) : i * 31 + j);
    return k;
}

/* amq_filter_contains_batch_fixed answers as amq_filter_contains, key by
 * key, for every kind (those with their own packed-key loop and those
 * given a chunk of hashes): 8-, 16- and 5-byte keys, half of them added,
 * batches shorter and longer than the kinds' windows and chunks, out NULL
 * with a count. */
TEST(kinds_contains_batch_fixed_matches_one_key)
{
    static const size_t lens[] = {8, 16, 5};
    static const size_t sizes[] = {1, 7, 64, 65, 255, 1024, 1025, 3000, 20000};
    enum { N = 20000, ADDED = 10000 };
    uint32_t kind;
    amq_config cfg;
    amq_filter *f;
    amq_hash128 *h = malloc(N * sizeof *h);
    uint8_t *a = malloc(N), *b = malloc(N), *keys;
    uint64_t count, want;
    size_t l, i, z, at;

    REQUIRE(h != NULL && a != NULL && b != NULL);
    for (kind = 1; kind < 64; kind++) {
        if (amq_kind_name(kind) == NULL)
            continue;
        for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            REQUIRE((keys = packed_keys(N, lens[l])) != NULL);
            amq_config_init(&cfg, kind);
            /* the growing kinds from well below (the batches meet their links
             * or a doubling); the others, aging's window too, for twice the adds */
            cfg.capacity = amq_kind_has_capacity(kind) || kind == AMQ_KIND_AGING ? 2 * ADDED
                                                                                   : 1000;
            cfg.seed = 77;
            for (i = 0; i < N; i++)
                h[i] = amq_hash_key(cfg.hash_algo, cfg.seed, keys + i * lens[l], lens[l]);
            if (amq_kind_is_static(kind)) {
                REQUIRE_OK(amq_filter_build(&cfg, h, ADDED, &f, NULL));
            } else {
                if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
                    FAIL_AT_("%s: not created", amq_kind_name(kind));
                for (i = 0; i < ADDED; i++)
                    REQUIRE(amq_filter_add(f, keys + i * lens[l], lens[l]) >= 0);
            }
            for (i = 0, want = 0; i < N; i++) {
                b[i] = (uint8_t)amq_filter_contains(f, keys + i * lens[l], lens[l]);
                want += b[i];
                if (i < ADDED && b[i] != 1)
                    FAIL_AT_("%s, %zu-byte key %zu added, answered absent", amq_kind_name(kind),
                             lens[l], i);
            }
            for (z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
                at = (z * 4099) % (N - sizes[z] + 1);
                memset(a, 0xee, sizes[z]);
                count = UINT64_MAX;
                REQUIRE_OK(amq_filter_contains_batch_fixed(f, keys + at * lens[l], lens[l],
                                                           sizes[z], a, &count));
                if (memcmp(a, b + at, sizes[z]) != 0)
                    FAIL_AT_("%s, %zu-byte keys, batch of %zu at %zu: answers differ",
                             amq_kind_name(kind), lens[l], sizes[z], at);
                for (i = 0, want = 0; i < sizes[z]; i++)
                    want += b[at + i];
                CHECK_EQ(count, want);
            }
            count = 0;
            REQUIRE_OK(amq_filter_contains_batch_fixed(f, keys, lens[l], N, NULL, &count));
            for (i = 0, want = 0; i < N; i++)
                want += b[i];
            CHECK_EQ(count, want);
            amq_filter_free(f);
            free(keys);
        }
    }
    free(h);
    free(a);
    free(b);
}

/* cfg with option name set to a valid value other than the default. */
static void set_option(amq_config *cfg, const char *name)
{
    if (strcmp(name, "bits_per_key") == 0)
        cfg->bits_per_key = 20.0;
    else if (strcmp(name, "bits") == 0 || strcmp(name, "hashes") == 0)
        cfg->bits = 100000, cfg->k = 5; /* they go together */
    else if (strcmp(name, "fingerprint_bits") == 0)
        cfg->fingerprint_bits = 16;
    else if (strcmp(name, "bucket_size") == 0)
        cfg->bucket_size = 2;
    else if (strcmp(name, "max_kicks") == 0)
        cfg->max_kicks = 50;
    else if (strcmp(name, "expansion") == 0)
        cfg->expansion = 4;
    else if (strcmp(name, "nonscaling") == 0)
        cfg->nonscaling = 1;
    else if (strcmp(name, "redisbloom") == 0)
        cfg->redisbloom = 1;
    else if (strcmp(name, "partitions") == 0)
        cfg->partitions = 4;
    else if (strcmp(name, "arity") == 0)
        cfg->arity = 4;
    else if (strcmp(name, "window_ms") == 0 || strcmp(name, "rate") == 0)
        cfg->window_ms = 60000, cfg->rate = 100.0;
}

/* The bytes of a filter of kind with option name set (NULL: none), of 300 keys. */
static uint8_t *made_with(uint32_t kind, const char *name, size_t *size)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_hash128 h[300];
    uint8_t *buf;
    char k[32];
    unsigned i;

    amq_config_init(&cfg, kind);
    cfg.capacity = 1000;
    if (name != NULL)
        set_option(&cfg, name);
    for (i = 0; i < 300; i++)
        h[i] = amq_hash_key(cfg.hash_algo, cfg.seed, k, (size_t)snprintf(k, sizeof k, "o%u", i));
    if (amq_kind_is_static(kind) ? amq_filter_build(&cfg, h, 300, &f, NULL) != AMQ_OK
                                 : amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    if (!amq_kind_is_static(kind) && amq_filter_add_batch(f, h, 300, NULL) < 0) {
        amq_filter_free(f);
        return NULL;
    }
    buf = amq_filter_serialized_size(f, size) == AMQ_OK ? malloc(*size) : NULL;
    if (buf != NULL && amq_filter_serialize(f, buf, *size, NULL) != AMQ_OK) {
        free(buf);
        buf = NULL;
    }
    amq_filter_free(f);
    return buf;
}

/* amq_option_kinds is the table the tool, Python and the Redis module refuse options by:
 * an option it says a kind does not read must change nothing of that kind's filter (else
 * the front ends would refuse what the kind reads, or the table would hide a kind's option). */
TEST(kinds_ignore_the_options_they_are_not_listed_for)
{
    static const char *const names[] = {"bits_per_key", "bits", "fingerprint_bits",
                                        "bucket_size", "max_kicks", "expansion", "nonscaling",
                                        "redisbloom", "partitions", "arity", "window_ms"};
    uint32_t kind;
    size_t n, i, a, b;

    CHECK(amq_option_applies("fingerprint_bits", AMQ_KIND_CUCKOO));
    CHECK(amq_option_applies("fingerprint_bits", AMQ_KIND_FUSE));
    CHECK(!amq_option_applies("fingerprint_bits", AMQ_KIND_BLOCKED));
    CHECK(!amq_option_applies("expansion", AMQ_KIND_QUOTIENT));
    CHECK(amq_option_applies("seed", AMQ_KIND_QUOTIENT)); /* every kind's */
    CHECK(amq_option_kinds("capacity") == NULL);
    CHECK(strcmp(amq_option_kinds("hashes"), " bloom blocked ") == 0);
    for (kind = 1; kind < 64; kind++) {
        uint8_t *plain;
        if (amq_kind_name(kind) == NULL)
            continue;
        plain = made_with(kind, NULL, &a);
        REQUIRE(plain != NULL);
        for (i = 0; i < sizeof names / sizeof names[0]; i++) {
            uint8_t *with;
            if (amq_option_applies(names[i], kind))
                continue;
            with = made_with(kind, names[i], &b);
            if (with == NULL || a != b || memcmp(plain, with, a) != 0)
                FAIL_AT_("%s changes a %s filter, which amq_option_kinds says ignores it",
                         names[i], amq_kind_name(kind));
            free(with);
        }
        free(plain);
    }
    n = 0;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        n += amq_option_kinds(names[i]) != NULL;
    CHECK_EQ(n, sizeof names / sizeof names[0]);
}

TEST_MAIN()
