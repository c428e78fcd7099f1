/*
 * test_kinds_contract.c - what amq/filter.h promises for every kind, checked
 * on every kind built into the library (found by amq_kind_name, so a new
 * kind is covered without a change here).
 */
#include <fcntl.h>
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

TEST_MAIN()
