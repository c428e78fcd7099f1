/*
 * test_builder.c - amq_builder for the kinds that also take adds one by
 * one (blocked, bloom, partitioned, cuckoo): a built filter is the filter
 * amq_filter_new(capacity = keys added) makes, holding the same keys added
 * one by one - the same bytes and the same item count - for 8-, 16- and
 * other-length keys, XXH3 and murmur3 with seed 0 and others, in memory
 * and spilled to a temporary file; an empty build; the errors.  The same
 * for a sized builder (amq_builder_new_sized: the filter made at once for
 * the capacity, keys added a buffer at a time).  Packed keys
 * (amq_builder_add_batch_fixed), for these kinds and the static ones,
 * build what the same keys one by one build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AMQ_ADVANCED_API 1 /* amq_builder_add_batch_fixed */
#include "amq.h"
#include "common/alloc.h"
#include "test.h"

#define N_KEYS 20000
/* build_both's memory for a sized builder (capacity = the keys it gets) */
#define SIZED ((size_t)-2)

/* Key i of a set: lengths cycle through 8, 16 and others (3 to 40) as len
 * says (0: mixed), and every 7th key repeats an earlier one. */
static size_t make_key(uint64_t seed, size_t i, size_t len, uint8_t *out)
{
    uint64_t st = seed * 1000003u + (i % 7 == 6 ? i / 2 : i), w;
    size_t j;
    if (len == 0) {
        static const size_t lens[] = {8, 16, 3, 5, 9, 15, 17, 24, 33, 40};
        len = lens[(i % 7 == 6 ? i / 2 : i) % (sizeof lens / sizeof lens[0])];
    }
    for (j = 0; j < len; j += 8) {
        w = test_rand(&st);
        memcpy(out + j, &w, len - j < 8 ? len - j : 8);
    }
    return len;
}

static uint64_t items(const amq_filter *f)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    return st.items;
}

/* 1 if a and b serialize to the same bytes (and have the same items). */
static int same_filter(const amq_filter *a, const amq_filter *b)
{
    size_t la, lb;
    uint8_t *x = test_serialized(a, &la), *y = test_serialized(b, &lb);
    int same = x != NULL && y != NULL && la == lb && memcmp(x, y, la) == 0 &&
               items(a) == items(b);
    free(x);
    free(y);
    return same;
}

/* cfg's kind built from n keys by a builder with this memory budget (or
 * sized for n: SIZED), and
 * the same keys added one by one to amq_filter_new(capacity = n); *news:
 * how many of those adds answered "new". */
static int build_both(const amq_config *cfg, size_t n, size_t len, size_t memory,
                      amq_filter **built, amq_filter **added, uint64_t *news, amq_errinfo *err)
{
    amq_config c = *cfg;
    amq_builder *b = NULL;
    uint8_t key[48];
    size_t i, kl;
    int rc;

    *built = *added = NULL;
    *news = 0;
    err->msg[0] = '\0';
    c.capacity = n > 0 ? n : 1;
    rc = memory == SIZED ? amq_builder_new_sized(&c, &b, err)
                         : amq_builder_new(cfg, test_path("."), memory, &b, err);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_filter_new(&c, added, err);
    for (i = 0; i < n && rc == AMQ_OK; i++) {
        kl = make_key(cfg->seed ^ cfg->hash_algo, i, len, key);
        rc = amq_builder_add(b, key, kl);
        if (rc == AMQ_OK) {
            rc = amq_filter_add(*added, key, kl);
            *news += rc == 1;
            if (rc < 0)
                snprintf(err->msg, sizeof err->msg, "one-by-one add %zu failed", i);
            rc = rc < 0 ? rc : AMQ_OK;
        }
    }
    if (rc == AMQ_OK && amq_builder_count(b) != n)
        rc = AMQ_EINVAL;
    if (rc == AMQ_OK)
        rc = amq_builder_finish(b, built, err);
    amq_builder_free(b);
    return rc;
}

static void check_identical(uint32_t kind, uint32_t algo, uint64_t seed, size_t len,
                            size_t memory, size_t n)
{
    amq_config cfg;
    amq_filter *f, *g;
    amq_errinfo err;
    uint64_t news;
    int rc;

    amq_config_init(&cfg, kind);
    cfg.hash_algo = algo;
    cfg.seed = seed;
    memset(&err, 0, sizeof err);
    rc = build_both(&cfg, n, len, memory, &f, &g, &news, &err);
    if (rc != AMQ_OK) {
        FAIL_AT_("kind %u hash %u seed %llu key length %zu memory %zu: %s (%s)", kind, algo,
                 (unsigned long long)seed, len, memory, amq_strerror(rc), err.msg);
        amq_filter_free(f);
        amq_filter_free(g);
        return;
    }
    if (!same_filter(f, g))
        FAIL_AT_("kind %u hash %u seed %llu key length %zu memory %zu: built filter differs",
                 kind, algo, (unsigned long long)seed, len, memory);
    CHECK_EQ(items(f), news);
    amq_filter_free(f);
    amq_filter_free(g);
}

/* The blocked kind: every hash spec and key length, in memory. */
TEST(builder_blocked_same_bytes_as_one_by_one)
{
    static const struct {
        uint32_t algo;
        uint64_t seed;
    } specs[] = {{AMQ_HASH_XXH3, 0},
                 {AMQ_HASH_XXH3, UINT64_C(0x5eed5eed5eed)},
                 {AMQ_HASH_MURMUR3, 0},
                 {AMQ_HASH_MURMUR3, 99}};
    static const size_t lens[] = {8, 16, 12, 0};
    size_t s, l;
    for (s = 0; s < sizeof specs / sizeof specs[0]; s++)
        for (l = 0; l < sizeof lens / sizeof lens[0]; l++)
            check_identical(AMQ_KIND_BLOCKED, specs[s].algo, specs[s].seed, lens[l], 0, N_KEYS);
}

/* Every k from 1 to 16 (finish has a loop per k up to 8): sized by bits
 * per key, with the probes each size takes. */
TEST(builder_blocked_every_k)
{
    static const double bpk[] = {1, 2, 3, 4.5, 5.5, 7, 8.5, 10, 11.5, 13, 15, 17, 20, 23, 26, 40};
    uint32_t seen = 0;
    size_t i;
    for (i = 0; i < sizeof bpk / sizeof bpk[0]; i++) {
        amq_config cfg;
        amq_filter *f, *g;
        amq_errinfo err;
        amq_stats st;
        uint64_t news;

        amq_config_init(&cfg, AMQ_KIND_BLOCKED);
        cfg.bits_per_key = bpk[i];
        cfg.seed = i;
        REQUIRE_OK(build_both(&cfg, 5000, 8, 0, &f, &g, &news, &err));
        CHECK(same_filter(f, g));
        CHECK_EQ(items(f), news);
        amq_filter_stats(f, &st);
        seen |= 1u << (st.hashes - 1);
        amq_filter_free(f);
        amq_filter_free(g);
    }
    CHECK_EQ_U32(seen & 0xffu, 0xffu); /* k = 1 .. 8 each met */
    CHECK(seen > 0xffu);               /* and some k above 8 */
}

/* Spilled: from the first key (a budget of 1 byte: a buffer of the least
 * chunk), and after three chunks in memory (100 KB); more keys than one
 * chunk of the largest size. */
TEST(builder_blocked_spilled_same_bytes)
{
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 8, 1, N_KEYS);
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 7, 16, 100000, N_KEYS);
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_MURMUR3, 3, 0, 100000, 600000);
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 8, 0, 600000);
}

/* Keys 8 bytes long but one (5 bytes, or given as a hash) at key `at`,
 * to a builder (sized or not) and one by one: the same bytes and count. */
static void check_switch(size_t at, uint64_t seed, int sized)
{
    amq_config cfg;
    amq_builder *b;
    amq_filter *f, *g;
    uint8_t key[48];
    amq_hash128 h;
    uint64_t news = 0;
    size_t i, kl;
    int r;

    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.seed = seed;
    cfg.capacity = 60000;
    REQUIRE_OK(sized ? amq_builder_new_sized(&cfg, &b, NULL)
                     : amq_builder_new(&cfg, NULL, 0, &b, NULL));
    REQUIRE_OK(amq_filter_new(&cfg, &g, NULL));
    for (i = 0; i < 60000; i++) {
        kl = make_key(seed, i, i == at ? 5 : 8, key);
        if (i == at && seed % 2 == 1) { /* a hash given */
            h = amq_hash_key(cfg.hash_algo, cfg.seed, key, kl);
            REQUIRE_OK(amq_builder_add_batch(b, &h, 1));
        } else {
            REQUIRE_OK(amq_builder_add(b, key, kl));
        }
        r = amq_filter_add(g, key, kl);
        REQUIRE(r >= 0);
        news += (uint64_t)r;
    }
    REQUIRE_OK(amq_builder_finish(b, &f, NULL));
    amq_builder_free(b);
    if (!same_filter(f, g))
        FAIL_AT_("switch at key %zu (%s builder): built filter differs", at,
                 sized ? "sized" : "unsized");
    CHECK_EQ(items(f), news);
    amq_filter_free(f);
    amq_filter_free(g);
}

/* An XXH3 blocked builder keeps 8-byte keys as they are until a key of
 * another length, a batch of hashes or its memory budget makes it hash
 * them: the same bytes and count across each of those switches, wherever
 * in a chunk it falls. */
TEST(builder_blocked_raw_keys_switch_to_hashes)
{
    static const size_t at[] = {0, 1, 1023, 1024, 5000, 49999};
    size_t t;
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 3, 8, 100000, N_KEYS); /* budget */
    for (t = 0; t < sizeof at / sizeof at[0]; t++)
        check_switch(at[t], t, 0);
}

/* The other kinds a builder makes: bloom, partitioned, cuckoo (whose bytes
 * depend on the order of its adds), in memory and spilled. */
TEST(builder_other_kinds_same_bytes)
{
    static const uint32_t kinds[] = {AMQ_KIND_BLOOM, AMQ_KIND_PARTITIONED, AMQ_KIND_CUCKOO};
    size_t k;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        check_identical(kinds[k], AMQ_HASH_XXH3, 0, 8, 0, N_KEYS);
        check_identical(kinds[k], AMQ_HASH_MURMUR3, 5, 0, 1, N_KEYS);
    }
}

/* Hashes given (add_batch, amq_filter_build) build what their keys do. */
TEST(builder_hashes_and_filter_build)
{
    amq_config cfg;
    amq_builder *b;
    amq_filter *f, *g, *h;
    amq_hash128 *hs = malloc(N_KEYS * sizeof *hs);
    uint8_t key[48];
    size_t i, kl;

    REQUIRE(hs != NULL);
    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.seed = 11;
    REQUIRE_OK(amq_builder_new(&cfg, NULL, 0, &b, NULL));
    for (i = 0; i < N_KEYS; i++) {
        kl = make_key(1, i, 0, key);
        hs[i] = amq_hash_key(cfg.hash_algo, cfg.seed, key, kl);
        REQUIRE_OK(amq_builder_add(b, key, kl));
    }
    REQUIRE_OK(amq_builder_finish(b, &f, NULL));
    amq_builder_free(b);
    REQUIRE_OK(amq_builder_new(&cfg, NULL, 0, &b, NULL));
    REQUIRE_OK(amq_builder_add_batch(b, hs, 1000));
    REQUIRE_OK(amq_builder_add_batch(b, hs + 1000, N_KEYS - 1000));
    CHECK_EQ(amq_builder_count(b), N_KEYS);
    REQUIRE_OK(amq_builder_finish(b, &g, NULL));
    amq_builder_free(b);
    REQUIRE_OK(amq_filter_build(&cfg, hs, N_KEYS, &h, NULL));
    CHECK(same_filter(f, g));
    CHECK(same_filter(f, h));
    CHECK_EQ(amq_filter_kind(h), AMQ_KIND_BLOCKED);
    amq_filter_free(f);
    amq_filter_free(g);
    amq_filter_free(h);
    free(hs);
}

/* A static kind's keys through amq_builder_add (XXH3's 8- and 16-byte keys
 * and mulshift's 8-byte keys written straight into the static builder's
 * array, other lengths and hashes one by one), interleaved with amq_builder_add_batch, with a
 * memory budget reached mid-way (the array spills) or not: the count after
 * every step, and the same bytes as amq_filter_build of the hashes. */
static void check_static_paths(uint32_t kind, uint32_t algo, uint64_t seed, size_t memory,
                               size_t N)
{
    amq_config cfg;
    amq_builder *b;
    amq_filter *f, *g;
    amq_hash128 *hs = malloc(N * sizeof *hs);
    uint8_t key[48];
    size_t i, kl;

    REQUIRE(hs != NULL);
    amq_config_init(&cfg, kind);
    cfg.hash_algo = algo;
    cfg.seed = seed;
    REQUIRE_OK(amq_builder_new(&cfg, NULL, memory, &b, NULL));
    for (i = 0; i < N; i++) {
        /* runs of 8-byte keys, then 16, a few others, and batches between */
        kl = make_key(3, i, (i / 5000) % 4 == 3 ? 0 : (i / 5000) % 2 ? 16 : 8, key);
        hs[i] = amq_hash_key(algo, seed, key, kl);
        if (i % 9973 == 17)
            REQUIRE_OK(amq_builder_add_batch(b, &hs[i], 1));
        else
            REQUIRE_OK(amq_builder_add(b, key, kl));
        if (amq_builder_count(b) != i + 1) {
            FAIL_AT_("count %llu after %zu keys", (unsigned long long)amq_builder_count(b), i + 1);
            break;
        }
    }
    REQUIRE_OK(amq_builder_finish(b, &f, NULL));
    CHECK_EQ(amq_builder_add(b, key, 8), AMQ_EINVAL); /* finished: no room left open */
    amq_builder_free(b);
    REQUIRE_OK(amq_filter_build(&cfg, hs, N, &g, NULL));
    if (!same_filter(f, g))
        FAIL_AT_("kind %u hash %u seed %llu memory %zu: not the bytes of amq_filter_build", kind,
                 algo, (unsigned long long)seed, memory);
    amq_filter_free(f);
    amq_filter_free(g);
    free(hs);
}

TEST(builder_static_add_paths_same_bytes)
{
    unsigned k;
    for (k = 0; k < 2; k++) {
        const uint32_t kind = k ? AMQ_KIND_RIBBON : AMQ_KIND_FUSE;
        check_static_paths(kind, AMQ_HASH_XXH3, 0, 0, 150000);
        check_static_paths(kind, AMQ_HASH_XXH3, 5, 0, 150000);
        check_static_paths(kind, AMQ_HASH_MURMUR3, 2, 0, 150000);
        check_static_paths(kind, AMQ_HASH_MULSHIFT, 0, 0, 150000);
        check_static_paths(kind, AMQ_HASH_MULSHIFT, 3, 0, 150000);
        check_static_paths(kind, AMQ_HASH_VMULSHIFT, 0, 0, 150000); /* fuse's default */
        check_static_paths(kind, AMQ_HASH_VMULSHIFT, 3, 0, 150000);
        /* the smallest budget (2^20 keys held), then the rest spilled */
        check_static_paths(kind, AMQ_HASH_XXH3, 0, 1, 1100000);
        check_static_paths(kind, AMQ_HASH_MULSHIFT, 0, 1, 1100000);
        check_static_paths(kind, AMQ_HASH_VMULSHIFT, 0, 1, 1100000);
    }
}

/* No keys: the filter of capacity 1 that amq_filter_new makes, empty. */
TEST(builder_empty_build)
{
    amq_config cfg;
    amq_builder *b;
    amq_filter *f, *g;
    uint64_t k = 42;

    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    REQUIRE_OK(amq_builder_new(&cfg, NULL, 0, &b, NULL));
    CHECK_EQ(amq_builder_count(b), 0);
    REQUIRE_OK(amq_builder_finish(b, &f, NULL));
    amq_builder_free(b);
    cfg.capacity = 1;
    REQUIRE_OK(amq_filter_new(&cfg, &g, NULL));
    CHECK(same_filter(f, g));
    CHECK_EQ(items(f), 0);
    CHECK_EQ(amq_filter_contains(f, &k, sizeof k), 0);
    amq_filter_free(f);
    amq_filter_free(g);
}

/* Finishing twice, adding after finish, and the kinds a builder refuses:
 * the documented statuses, each with a message. */
TEST(builder_errors)
{
    static const uint32_t refused[] = {AMQ_KIND_SCALABLE_BLOOM, AMQ_KIND_SCALABLE_CUCKOO,
                                       AMQ_KIND_AGING, AMQ_KIND_QUOTIENT, AMQ_KIND_POCKET};
    amq_config cfg;
    amq_builder *b;
    amq_filter *f, *g;
    amq_errinfo err;
    uint64_t k = 1;
    size_t i;

    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    REQUIRE_OK(amq_builder_new(&cfg, NULL, 0, &b, NULL));
    REQUIRE_OK(amq_builder_add(b, &k, sizeof k));
    REQUIRE_OK(amq_builder_finish(b, &f, NULL));
    memset(&err, 0, sizeof err);
    g = (amq_filter *)&k;
    CHECK_STATUS(amq_builder_finish(b, &g, &err), AMQ_EINVAL);
    CHECK(g == NULL);
    CHECK_STR(err.msg, "the builder has finished already: free it");
    CHECK_STATUS(amq_builder_add(b, &k, sizeof k), AMQ_EINVAL);
    CHECK_STATUS(amq_builder_add_batch(b, NULL, 0), AMQ_EINVAL);
    CHECK_EQ(amq_builder_count(b), 1);
    amq_builder_free(b);
    CHECK_EQ(items(f), 1);
    amq_filter_free(f);

    for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        amq_config_init(&cfg, refused[i]);
        memset(&err, 0, sizeof err);
        b = (amq_builder *)&k;
        CHECK_STATUS(amq_builder_new(&cfg, NULL, 0, &b, &err), AMQ_EKIND);
        CHECK(b == NULL);
        CHECK(strstr(err.msg, "a builder cannot make a") != NULL);
        CHECK(strstr(err.msg, amq_kind_name(refused[i])) != NULL);
    }
    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.kind = 77;
    CHECK_STATUS(amq_builder_new(&cfg, NULL, 0, &b, &err), AMQ_EKIND);
    CHECK_STR(err.msg, "unknown filter kind 77");
    /* sizing fields are checked when the builder is made */
    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.fpp = 0.0;
    memset(&err, 0, sizeof err);
    CHECK_STATUS(amq_builder_new(&cfg, NULL, 0, &b, &err), AMQ_ERANGE);
    CHECK(err.msg[0] != '\0');
    cfg.fpp = 0.01;
    cfg.hash_algo = AMQ_HASH_MURMUR3;
    cfg.seed = UINT64_C(1) << 40;
    CHECK_STATUS(amq_builder_new(&cfg, NULL, 0, &b, &err), AMQ_ERANGE);
}

/* A sized builder: every kind, hash spec and key length, fewer keys than
 * its buffer and many buffers' worth, the switch from raw 8-byte keys to
 * hashes at buffer edges: the bytes and count of one-by-one adds to
 * amq_filter_new(capacity). */
TEST(builder_sized_same_bytes_as_one_by_one)
{
    static const uint32_t kinds[] = {AMQ_KIND_BLOCKED, AMQ_KIND_BLOOM, AMQ_KIND_PARTITIONED,
                                     AMQ_KIND_CUCKOO};
    static const size_t lens[] = {8, 16, 12, 0};
    static const size_t at[] = {0, 1023, 1024, 5000};
    size_t k, l, t;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            check_identical(kinds[k], AMQ_HASH_XXH3, 0, lens[l], SIZED, N_KEYS);
            check_identical(kinds[k], AMQ_HASH_MURMUR3, 9, lens[l], SIZED, 1000);
        }
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 77, 8, SIZED, 1000);
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 77, 16, SIZED, 1);
    for (t = 0; t < sizeof at / sizeof at[0]; t++)
        check_switch(at[t], t, 1);
}

/* mulshift and mulmix (the cuckoo kind's default, mulshift then a mix;
 * the blocked and partitioned kinds take both): 8-byte keys are hashed in
 * the builder's own body with the seed's constants made once.  The same bytes and count as one by one, for
 * seed 0 (constants written out) and another, sized or not, and with keys
 * of other lengths among the 8-byte ones. */
TEST(builder_mulshift_same_bytes_as_one_by_one)
{
    static const uint32_t kinds[] = {AMQ_KIND_CUCKOO, AMQ_KIND_BLOCKED, AMQ_KIND_PARTITIONED};
    static const uint64_t seeds[] = {0, UINT64_C(0x5eed5eed5eed)};
    static const size_t lens[] = {8, 16, 0};
    size_t k, s, l;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
            for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                check_identical(kinds[k], AMQ_HASH_MULSHIFT, seeds[s], lens[l], SIZED, N_KEYS);
                check_identical(kinds[k], AMQ_HASH_MULSHIFT, seeds[s], lens[l], 0, N_KEYS);
                check_identical(kinds[k], AMQ_HASH_VMULSHIFT, seeds[s], lens[l], 0, N_KEYS);
                check_identical(kinds[k], AMQ_HASH_MULMIX, seeds[s], lens[l], SIZED, N_KEYS);
                check_identical(kinds[k], AMQ_HASH_MULMIX, seeds[s], lens[l], 0, N_KEYS);
            }
}

/* Past 2^18 keys the chunks reach 1 MiB and come from mmap, and past
 * 64 MiB held from amq_region_alloc_stream (small pages, faulted in at
 * once): builds of 600,000 keys for the layouts a chunk holds (8-byte keys
 * kept as they are, h1 and u), and of 4,500,000 whole hashes (72 MB). */
TEST(builder_large_chunks_same_bytes)
{
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 8, 0, 600000);
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 7, 16, 0, 600000);
    check_identical(AMQ_KIND_CUCKOO, AMQ_HASH_MULMIX, 0, 8, (size_t)256 << 20, 4500000);
}

/* A builder's chunks of 1 MiB and more are kept when it is freed and given
 * to the next builder that asks for the same length, their old bytes left:
 * the region is reused (same address, writable, the size asked), a length
 * that was not kept is fresh, and builds one after another over reused
 * chunks (the keys of the one before still in them) are each the bytes of
 * their own keys added one by one. */
TEST(builder_kept_chunks)
{
    amq_region r, q;
    uint8_t *at;

    amq_region_kept_release(); /* none left by the tests before */
    CHECK_EQ(amq_region_alloc_kept(&r, NULL, (size_t)3 << 20), AMQ_OK);
    CHECK_EQ(r.size, (size_t)3 << 20);
    memset(r.data, 0xA5, r.size);
    at = r.data;
    amq_region_free_kept(&r, NULL);
    CHECK_EQ(amq_region_alloc_kept(&q, NULL, ((size_t)3 << 20) + 100), AMQ_OK);
    CHECK(q.data == at);
    CHECK_EQ(q.size, ((size_t)3 << 20) + 100);
    memset(q.data, 0x5A, q.size);
    amq_region_free_kept(&q, NULL);
    /* kept, but of another length: not given (a fresh mapping, zeroed) */
    CHECK_EQ(amq_region_alloc_kept(&r, NULL, (size_t)7 << 20), AMQ_OK);
    CHECK(r.data != at);
    CHECK_EQ(r.data[((size_t)7 << 20) - 1], 0);
    amq_region_free_kept(&r, NULL);
    /* under 1 MiB: the heap, never kept */
    CHECK_EQ(amq_region_alloc_kept(&r, NULL, 4096), AMQ_OK);
    CHECK_EQ(r.how, AMQ_REGION_HEAP);
    amq_region_free_kept(&r, NULL);

    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 11, 16, 0, 600000);
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 12, 16, 0, 600000);
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 13, 8, 0, 600000);
    check_identical(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 14, 8, 0, 600000);
}

/* The chunks' region: zeroed, 64-byte aligned, every byte writable, from
 * mmap at 1 MiB and more and from the heap below (or with a caller's
 * allocator). */
TEST(builder_stream_region)
{
    static const size_t sizes[] = {0, 100, ((size_t)1 << 20) - 1, (size_t)1 << 20,
                                   ((size_t)6 << 20) + 12345};
    size_t i, j, nonzero;
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        amq_region r;
        CHECK_EQ(amq_region_alloc_stream(&r, NULL, sizes[i]), AMQ_OK);
        CHECK_EQ(r.size, sizes[i]);
        CHECK_EQ((uintptr_t)r.data % 64, 0);
        CHECK_EQ(r.how == AMQ_REGION_MMAP, sizes[i] >= ((size_t)1 << 20));
        for (j = nonzero = 0; j < sizes[i]; j++)
            nonzero += r.data[j] != 0;
        CHECK_EQ(nonzero, 0);
        if (sizes[i] > 0)
            memset(r.data, 0xA5, sizes[i]);
        amq_region_free(&r, NULL);
    }
}

/* An allocator that refuses its fail_at-th call (none when fail_at is 0) and counts live blocks. */
typedef struct refusing {
    unsigned calls, fail_at;
    long live;
} refusing;

static void *r_alloc(void *opaque, size_t size)
{
    refusing *r = opaque;
    void *p;
    if (++r->calls == r->fail_at)
        return NULL;
    p = malloc(size);
    r->live += p != NULL;
    return p;
}

static void r_free(void *opaque, void *ptr, size_t size)
{
    refusing *r = opaque;
    (void)size;
    r->live--;
    free(ptr);
}

/* A construction's scratch region (amq_region_alloc_scratch): 64-byte
 * aligned, every byte writable, zeroed when it says so; from mmap,
 * 2 MiB-aligned, at 1 MiB and more with the default allocator, and then
 * the mapping released before it when large enough (its bytes left over),
 * up to 64 MiB kept; from a caller's allocator always, zeroed. */
TEST(builder_scratch_region)
{
    /* sizes in order, and whether each takes the mapping of the one before
     * (the 3 MiB block fits in the 6 MiB one; the others are the first
     * mapping or larger than the one kept) */
    static const struct {
        size_t size;
        int reused;
    } t[] = {{0, 0},
             {100, 0},
             {((size_t)1 << 20) - 1, 0},
             {(size_t)1 << 20, 0},
             {((size_t)6 << 20) + 12345, 0},
             {(size_t)3 << 20, 1}};
    refusing c = {0, 0, 0};
    amq_allocator a = {r_alloc, r_free, &c, NULL};
    size_t i, j, nonzero, big = (size_t)65 << 20;
    uint8_t *last = NULL;
    amq_region r;
    int zeroed, round;
    /* Over 64 MiB: released, not kept, and it takes the place of any
     * mapping kept before (an earlier test's build): so the next is fresh. */
    for (round = 0; round < 2; round++) {
        CHECK_EQ(amq_region_alloc_scratch(&r, NULL, big, &zeroed), AMQ_OK);
        CHECK_EQ(zeroed, 1);
        r.data[big - 1] = 1;
        amq_region_free_scratch(&r, NULL);
    }
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        const int mapped = t[i].size >= ((size_t)1 << 20);
        CHECK_EQ(amq_region_alloc_scratch(&r, NULL, t[i].size, &zeroed), AMQ_OK);
        CHECK_EQ(r.size, t[i].size);
        CHECK_EQ((uintptr_t)r.data % 64, 0);
        CHECK_EQ(r.how == AMQ_REGION_MMAP, mapped);
        if (mapped)
            CHECK_EQ((uintptr_t)r.data % ((uintptr_t)2 << 20), 0);
        CHECK_EQ(zeroed, !t[i].reused);
        if (t[i].reused)
            CHECK(r.data == last);
        for (j = nonzero = 0; zeroed && j < t[i].size; j++)
            nonzero += r.data[j] != 0;
        CHECK_EQ(nonzero, 0);
        if (t[i].size > 0)
            memset(r.data, 0xA5, t[i].size);
        last = r.data;
        amq_region_free_scratch(&r, NULL);
        CHECK_EQ(r.how, AMQ_REGION_NONE);
        CHECK_EQ(amq_region_alloc_scratch(&r, &a, t[i].size, &zeroed), AMQ_OK);
        CHECK_EQ(r.how, AMQ_REGION_HEAP);
        CHECK_EQ(zeroed, 1);
        CHECK_EQ(c.live, 1);
        for (j = nonzero = 0; j < t[i].size; j++)
            nonzero += r.data[j] != 0;
        CHECK_EQ(nonzero, 0);
        amq_region_free_scratch(&r, &a);
        CHECK_EQ(c.live, 0);
    }
}

/* A sized builder given no keys finishes with amq_filter_new(cfg)'s filter. */
TEST(builder_sized_empty)
{
    amq_config cfg;
    amq_builder *b;
    amq_filter *f, *g;

    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.capacity = 5000;
    REQUIRE_OK(amq_builder_new_sized(&cfg, &b, NULL));
    REQUIRE_OK(amq_builder_finish(b, &f, NULL));
    amq_builder_free(b);
    REQUIRE_OK(amq_filter_new(&cfg, &g, NULL));
    CHECK(same_filter(f, g));
    CHECK_EQ(items(f), 0);
    amq_filter_free(f);
    amq_filter_free(g);
}

/* A static kind and a bad size are refused when the builder is made; a
 * cuckoo filter that fills fails the add that flushed the buffer, every
 * later call and finish, with AMQ_EFULL and a message; a builder freed
 * unfinished releases its filter (ASan checks). */
TEST(builder_sized_errors)
{
    amq_config cfg;
    amq_builder *b;
    amq_filter *f;
    amq_errinfo err;
    uint64_t i, full_at = 0;
    int rc;

    amq_config_init(&cfg, AMQ_KIND_FUSE);
    memset(&err, 0, sizeof err);
    b = (amq_builder *)&cfg;
    CHECK_STATUS(amq_builder_new_sized(&cfg, &b, &err), AMQ_EKIND);
    CHECK(b == NULL);
    CHECK(strstr(err.msg, "amq_builder_new") != NULL);
    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.capacity = 0;
    CHECK_STATUS(amq_builder_new_sized(&cfg, &b, &err), AMQ_ERANGE);
    CHECK(b == NULL);

    amq_config_init(&cfg, AMQ_KIND_CUCKOO);
    cfg.capacity = 500;
    REQUIRE_OK(amq_builder_new_sized(&cfg, &b, NULL));
    for (i = 0; i < 5000 && full_at == 0; i++) {
        rc = amq_builder_add(b, &i, sizeof i);
        if (rc == AMQ_EFULL)
            full_at = i;
        else
            REQUIRE_OK(rc);
    }
    CHECK_EQ(full_at, 1024); /* the add that found the buffer of 1024 full */
    CHECK_STATUS(amq_builder_add(b, &i, sizeof i), AMQ_EFULL);
    memset(&err, 0, sizeof err);
    f = (amq_filter *)&cfg;
    CHECK_STATUS(amq_builder_finish(b, &f, &err), AMQ_EFULL);
    CHECK(f == NULL);
    CHECK(strstr(err.msg, "sized for 500 keys") != NULL);
    amq_builder_free(b);

    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    REQUIRE_OK(amq_builder_new_sized(&cfg, &b, NULL));
    for (i = 0; i < 3000; i++)
        REQUIRE_OK(amq_builder_add(b, &i, sizeof i));
    CHECK_EQ(amq_builder_count(b), 3000);
    amq_builder_free(b);
}

/* A sized builder whose 1st, 2nd, ... allocation fails: AMQ_ENOMEM and no
 * block left, until one succeeds and builds the bytes of one-by-one adds;
 * adds and finish allocate nothing. */
TEST(builder_sized_alloc_fail)
{
    refusing r;
    amq_allocator a;
    amq_config cfg;
    amq_builder *b;
    amq_filter *f, *g;
    uint64_t i;
    unsigned at;
    int rc = AMQ_ENOMEM, r1;

    for (at = 1; at < 64 && rc == AMQ_ENOMEM; at++) {
        memset(&r, 0, sizeof r);
        r.fail_at = at;
        a.alloc = r_alloc;
        a.free = r_free;
        a.opaque = &r;
        a.zalloc = NULL;
        amq_config_init(&cfg, AMQ_KIND_BLOCKED);
        cfg.capacity = 3000;
        cfg.alloc = &a;
        rc = amq_builder_new_sized(&cfg, &b, NULL);
        if (rc != AMQ_OK) {
            CHECK_STATUS(rc, AMQ_ENOMEM);
            CHECK(b == NULL);
            CHECK_EQ(r.live, 0);
            continue;
        }
        cfg.alloc = NULL;
        REQUIRE_OK(amq_filter_new(&cfg, &g, NULL));
        r.fail_at = r.calls + 1; /* any allocation from here on fails */
        for (i = 0; i < 3000; i++) {
            REQUIRE_OK(amq_builder_add(b, &i, sizeof i));
            r1 = amq_filter_add(g, &i, sizeof i);
            REQUIRE(r1 >= 0);
        }
        REQUIRE_OK(amq_builder_finish(b, &f, NULL));
        amq_builder_free(b);
        r.fail_at = 0; /* serializing may allocate */
        CHECK(same_filter(f, g));
        amq_filter_free(f);
        amq_filter_free(g);
        CHECK_EQ(r.live, 0);
    }
    CHECK_STATUS(rc, AMQ_OK);
    CHECK(at > 3); /* the filter, the builder and its buffer each failed once */
}

/* ---- packed keys: amq_builder_add_batch_fixed ------------------------------------------ */

/* The batch sizes check_batch cycles through: one key, a few, less and
 * more than a chunk (1024 keys first), and large. */
static const size_t batch_sizes[] = {1, 3, 1000, 1021, 4096, 70000, 2};

/* A builder for cfg (memory as build_both) given n keys: one by one with
 * amq_builder_add (batched == 0) or packed in batches of batch_sizes
 * (batched == 1); keys [0, split) are len1 bytes long, the rest len2
 * (each run packed on its own).  The count is checked after every call. */
static int build_keys(const amq_config *cfg, size_t n, size_t split, size_t len1, size_t len2,
                      size_t memory, int batched, amq_filter **out)
{
    amq_config c = *cfg;
    amq_builder *b = NULL;
    uint8_t *keys = malloc(n * 48 + 1), *k;
    size_t i, j, m, len, t = 0;
    int rc;

    *out = NULL;
    if (keys == NULL)
        return AMQ_ENOMEM;
    c.capacity = n > 0 ? n : 1;
    rc = memory == SIZED ? amq_builder_new_sized(&c, &b, NULL)
                         : amq_builder_new(&c, test_path("."), memory, &b, NULL);
    for (i = 0; i < n && rc == AMQ_OK; i += m) {
        len = i < split ? len1 : len2;
        m = batched ? batch_sizes[t++ % (sizeof batch_sizes / sizeof batch_sizes[0])] : 1;
        if (i < split && m > split - i)
            m = split - i;
        if (m > n - i)
            m = n - i;
        for (j = 0, k = keys; j < m; j++, k += len)
            (void)make_key(cfg->seed ^ cfg->hash_algo, i + j, len, k);
        rc = batched ? amq_builder_add_batch_fixed(b, keys, len, m)
                     : amq_builder_add(b, keys, len);
        if (rc == AMQ_OK && amq_builder_count(b) != i + m)
            rc = AMQ_EINVAL;
    }
    if (rc == AMQ_OK)
        rc = amq_builder_finish(b, out, NULL);
    amq_builder_free(b);
    free(keys);
    return rc;
}

/* Batched and one by one: the same bytes and item count. */
static void check_batch(uint32_t kind, uint32_t algo, uint64_t seed, size_t n, size_t split,
                        size_t len1, size_t len2, size_t memory)
{
    amq_config cfg;
    amq_filter *f = NULL, *g = NULL;
    int r1, r2;

    amq_config_init(&cfg, kind);
    cfg.hash_algo = algo;
    cfg.seed = seed;
    r1 = build_keys(&cfg, n, split, len1, len2, memory, 0, &f);
    r2 = build_keys(&cfg, n, split, len1, len2, memory, 1, &g);
    if (r1 != AMQ_OK || r2 != AMQ_OK || !same_filter(f, g))
        FAIL_AT_("kind %u hash %u seed %llu n %zu keys %zu/%zu (from %zu) memory %zu: one by "
                 "one %s, batched %s, %s",
                 kind, algo, (unsigned long long)seed, n, len1, len2, split, memory,
                 amq_strerror(r1), amq_strerror(r2),
                 r1 == AMQ_OK && r2 == AMQ_OK ? "built filters differ" : "failed");
    amq_filter_free(f);
    amq_filter_free(g);
}

/* Every kind a builder makes, each hash spec with the lengths it inlines
 * (8, 16) and another (12), in memory, spilled and sized: the filter of
 * the same keys added one by one. */
TEST(builder_batch_fixed_same_bytes_as_one_by_one)
{
    static const uint32_t kinds[] = {AMQ_KIND_BLOCKED, AMQ_KIND_BLOOM, AMQ_KIND_PARTITIONED,
                                     AMQ_KIND_CUCKOO,  AMQ_KIND_FUSE,  AMQ_KIND_RIBBON};
    static const struct {
        uint32_t algo;
        uint64_t seed;
    } specs[] = {{AMQ_HASH_XXH3, 0},
                 {AMQ_HASH_XXH3, UINT64_C(0x5eed5eed5eed)},
                 {AMQ_HASH_MURMUR3, 9},
                 {AMQ_HASH_MULSHIFT, 0},
                 {AMQ_HASH_MULSHIFT, 77},
                 {AMQ_HASH_VMULSHIFT, 0},
                 {AMQ_HASH_VMULSHIFT, 77}};
    static const size_t lens[] = {8, 16, 12};
    size_t k, s, l;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const int st = amq_kind_is_static(kinds[k]);
        for (s = 0; s < sizeof specs / sizeof specs[0]; s++) {
            amq_config c;
            amq_filter *probe;
            amq_config_init(&c, kinds[k]);
            c.hash_algo = specs[s].algo;
            c.seed = specs[s].seed;
            if (amq_filter_build(&c, NULL, 0, &probe, NULL) != AMQ_OK)
                continue; /* a hash the kind does not take (bloom: mulshift) */
            amq_filter_free(probe);
            for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                check_batch(kinds[k], specs[s].algo, specs[s].seed, 90000, 0, lens[l], lens[l],
                            0);
                if (!st)
                    check_batch(kinds[k], specs[s].algo, specs[s].seed, 90000, 0, lens[l],
                                lens[l], SIZED);
            }
        }
        /* spilled from the first chunk (dynamic), past 2^20 keys held (static) */
        check_batch(kinds[k], AMQ_HASH_XXH3, 0, st ? 1100000 : 90000, 0, 8, 8, 1);
        check_batch(kinds[k], AMQ_HASH_XXH3, 3, st ? 1100000 : 90000, 0, 16, 16, 1);
    }
    /* the blocked kind's raw 8-byte keys, then 12-byte ones: hashed at the switch, which
     * falls inside a batch or at its start; and past its memory budget */
    check_batch(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 90000, 5000, 8, 12, 0);
    check_batch(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 90000, 1004, 8, 12, 0);
    check_batch(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 5, 90000, 76077, 8, 16, SIZED);
    check_batch(AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 300000, 300000, 8, 8, 1000000);
    check_batch(AMQ_KIND_FUSE, AMQ_HASH_XXH3, 0, 90000, 40000, 8, 16, 0);
}

/* Bad arguments: AMQ_EINVAL and nothing added; n = 0 adds nothing; after
 * finish AMQ_EINVAL. */
TEST(builder_batch_fixed_errors)
{
    static const uint32_t kinds[] = {AMQ_KIND_BLOCKED, AMQ_KIND_FUSE};
    uint64_t keys[4] = {1, 2, 3, 4};
    amq_config cfg;
    amq_builder *b;
    amq_filter *f;
    size_t k;

    CHECK_STATUS(amq_builder_add_batch_fixed(NULL, keys, 8, 4), AMQ_EINVAL);
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        amq_config_init(&cfg, kinds[k]);
        REQUIRE_OK(amq_builder_new(&cfg, NULL, 0, &b, NULL));
        CHECK_STATUS(amq_builder_add_batch_fixed(b, NULL, 8, 4), AMQ_EINVAL);
        CHECK_STATUS(amq_builder_add_batch_fixed(b, keys, 0, 4), AMQ_EINVAL);
        CHECK_STATUS(amq_builder_add_batch_fixed(b, keys, (SIZE_MAX >> 1) + 1, 2), AMQ_EINVAL);
        CHECK_STATUS(amq_builder_add_batch_fixed(b, keys, 8, SIZE_MAX / 4), AMQ_EINVAL);
        CHECK_EQ(amq_builder_count(b), 0);
        CHECK_STATUS(amq_builder_add_batch_fixed(b, NULL, 8, 0), AMQ_OK);
        CHECK_STATUS(amq_builder_add_batch_fixed(b, keys, 0, 0), AMQ_OK);
        CHECK_EQ(amq_builder_count(b), 0);
        REQUIRE_OK(amq_builder_add_batch_fixed(b, keys, 8, 4));
        CHECK_EQ(amq_builder_count(b), 4);
        REQUIRE_OK(amq_builder_finish(b, &f, NULL));
        CHECK_EQ(amq_filter_contains(f, &keys[2], 8), 1);
        CHECK_STATUS(amq_builder_add_batch_fixed(b, keys, 8, 4), AMQ_EINVAL);
        CHECK_STATUS(amq_builder_add_batch_fixed(b, keys, 8, 0), AMQ_EINVAL);
        CHECK_EQ(amq_builder_count(b), 4);
        amq_builder_free(b);
        amq_filter_free(f);
    }
}

TEST_MAIN()
