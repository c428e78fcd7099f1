/*
 * test_api_surface.c - the exported functions no other test reaches
 * directly (the tool and the module call some of them): each is checked
 * against the call that says the same thing another way, so that every
 * function scripts/check-exports.sh counts has a test that can fail.
 */
#include "test.h"

#include "amq.h"
#include "amq/advanced.h"
#include "amq/inplace.h"

#include <stdint.h>
#include <string.h>

static amq_hash128 key_hash(uint32_t algo, uint64_t seed, uint64_t i)
{
    return amq_hash_key(algo, seed, &i, sizeof i);
}

/* A handle of kind k for n keys at 1 %, hashed by MurmurHash3 seed 7 so
 * that a family's _hash must follow the filter's spec, not a default. */
static amq_filter *make(uint32_t kind, uint64_t n)
{
    amq_config c;
    amq_filter *f = NULL;
    amq_config_init(&c, kind);
    c.capacity = n;
    c.hash_algo = AMQ_HASH_MURMUR3;
    c.seed = 7;
    if (amq_filter_new(&c, &f, NULL) != AMQ_OK)
        return NULL;
    return f;
}

TEST(bloom_hash_forms_match_key_forms)
{
    amq_filter *f = make(AMQ_KIND_BLOOM, 1000);
    amq_bloom *b;
    uint64_t i, k = 42;
    REQUIRE(f != NULL);
    b = amq_filter_bloom(f);
    REQUIRE(b != NULL);
    {
        amq_hash128 a = amq_bloom_hash(b, &k, sizeof k), e = key_hash(AMQ_HASH_MURMUR3, 7, k);
        CHECK_EQ(a.h1, e.h1);
        CHECK_EQ(a.h2, e.h2);
    }
    for (i = 0; i < 500; i++)
        CHECK_EQ(amq_bloom_add_hash(b, key_hash(AMQ_HASH_MURMUR3, 7, i)), 1);
    CHECK_EQ(amq_bloom_add_hash(b, key_hash(AMQ_HASH_MURMUR3, 7, 3)), 0);
    for (i = 0; i < 500; i++) {
        CHECK_EQ(amq_bloom_contains(b, &i, sizeof i), 1);
        CHECK_EQ(amq_bloom_contains_hash(b, key_hash(AMQ_HASH_MURMUR3, 7, i)), 1);
    }
    CHECK_EQ(amq_bloom_items(b), 500);
    amq_bloom_set_items(b, 12345);
    CHECK_EQ(amq_bloom_items(b), 12345);
    amq_filter_free(f);
}

TEST(blocked_params_size_and_items)
{
    amq_filter *f = make(AMQ_KIND_BLOCKED, 100000);
    amq_blocked *b;
    amq_blocked_params p;
    amq_stats st;
    REQUIRE(f != NULL);
    b = amq_filter_blocked(f);
    REQUIRE(b != NULL);
    amq_blocked_get_params(b, &p);
    CHECK_EQ(p.hash_algo, AMQ_HASH_MURMUR3);
    CHECK_EQ(p.seed, 7);
    CHECK_EQ(p.capacity, 100000);
    CHECK(p.blocks > 0 && p.k >= 1);
    CHECK_EQ(amq_blocked_data_size(&p), p.blocks * 64);
    amq_filter_stats(f, &st);
    CHECK_EQ(st.bytes, p.blocks * 64);
    amq_blocked_set_items(b, 99);
    CHECK_EQ(amq_blocked_items(b), 99);
    amq_filter_free(f);
}

TEST(partitioned_family_functions)
{
    amq_filter *f = make(AMQ_KIND_PARTITIONED, 20000), *g = make(AMQ_KIND_PARTITIONED, 20000);
    amq_partitioned *a, *b;
    uint64_t i, k = 9;
    REQUIRE(f != NULL && g != NULL);
    a = amq_filter_partitioned(f);
    b = amq_filter_partitioned(g);
    REQUIRE(a != NULL && b != NULL);
    {
        amq_hash128 h = amq_partitioned_hash(a, &k, sizeof k), e = key_hash(AMQ_HASH_MURMUR3, 7, k);
        CHECK_EQ(h.h1, e.h1);
        CHECK_EQ(h.h2, e.h2);
    }
    for (i = 0; i < 1000; i++)
        CHECK_EQ(amq_partitioned_add(a, &i, sizeof i), 1);
    for (i = 1000; i < 2000; i++)
        CHECK_EQ(amq_partitioned_add(b, &i, sizeof i), 1);
    CHECK_EQ(amq_partitioned_contains(a, &k, sizeof k), 1);
    CHECK_EQ(amq_partitioned_contains_hash(a, key_hash(AMQ_HASH_MURMUR3, 7, 9)), 1);
    REQUIRE_OK(amq_partitioned_merge(a, b));
    CHECK_EQ(amq_partitioned_items(a), 2000);
    for (i = 0; i < 2000; i++)
        CHECK_EQ(amq_partitioned_contains(a, &i, sizeof i), 1);
    REQUIRE_OK(amq_partitioned_clear(a));
    CHECK_EQ(amq_partitioned_items(a), 0);
    {
        uint64_t hits = 0;
        for (i = 0; i < 2000; i++)
            hits += (uint64_t)amq_partitioned_contains(a, &i, sizeof i);
        CHECK_EQ(hits, 0);
    }
    amq_filter_free(f);
    amq_filter_free(g);
}

TEST(cuckoo_clone_view_unique_slots)
{
    amq_cuckoo_params p;
    amq_cuckoo *c, *d, *v;
    uint64_t i, k = 5;
    REQUIRE_OK(amq_cuckoo_params_for(4000, 0.01, 12, 4, &p));
    p.hash_algo = AMQ_HASH_MURMUR3;
    p.seed = 7;
    REQUIRE_OK(amq_cuckoo_new(&p, NULL, &c));
    CHECK_EQ(amq_cuckoo_slots(c), p.buckets * 4);
    CHECK_EQ(amq_cuckoo_is_readonly(c), 0);
    {
        amq_hash128 h = amq_cuckoo_hash(c, &k, sizeof k), e = key_hash(AMQ_HASH_MURMUR3, 7, k);
        CHECK_EQ(h.h1, e.h1);
        CHECK_EQ(h.h2, e.h2);
    }
    for (i = 0; i < 3000; i++)
        CHECK_EQ(amq_cuckoo_add_unique_hash(c, key_hash(AMQ_HASH_MURMUR3, 7, i)), 1);
    CHECK_EQ(amq_cuckoo_add_unique_hash(c, key_hash(AMQ_HASH_MURMUR3, 7, 17)), 0);
    CHECK_EQ(amq_cuckoo_items(c), 3000);
    REQUIRE_OK(amq_cuckoo_clone(c, NULL, &d));
    CHECK_EQ(amq_cuckoo_bytes(d), amq_cuckoo_bytes(c));
    CHECK(memcmp(amq_cuckoo_data(d), amq_cuckoo_data(c), amq_cuckoo_bytes(c)) == 0);
    CHECK_EQ(amq_cuckoo_remove(d, &k, sizeof k), 1); /* the copy is its own */
    CHECK_EQ(amq_cuckoo_items(d), 2999);
    CHECK_EQ(amq_cuckoo_items(c), 3000);
    REQUIRE_OK(amq_cuckoo_view(&p, amq_cuckoo_data(c), amq_cuckoo_bytes(c), amq_cuckoo_items(c), 0,
                               0, NULL, &v));
    CHECK_EQ(amq_cuckoo_is_readonly(v), 1);
    CHECK_STATUS(amq_cuckoo_add(v, &k, sizeof k), AMQ_EREADONLY);
    CHECK_EQ(amq_cuckoo_contains(v, &k, sizeof k), 1);
    amq_cuckoo_free(v);
    amq_cuckoo_free(d);
    amq_cuckoo_free(c);
}

/* A cuckoo filter of `capacity` keys (12-bit x 4) with this hash spec. */
static amq_cuckoo *cuckoo_of(uint64_t capacity, uint32_t algo, uint64_t seed)
{
    amq_cuckoo_params p;
    amq_cuckoo *c = NULL;
    if (amq_cuckoo_params_for(capacity, 0.01, 12, 4, &p) != AMQ_OK)
        return NULL;
    p.hash_algo = algo;
    p.seed = seed;
    return amq_cuckoo_new(&p, NULL, &c) == AMQ_OK ? c : NULL;
}

static int same_cuckoo(const amq_cuckoo *a, const amq_cuckoo *b)
{
    return amq_cuckoo_bytes(a) == amq_cuckoo_bytes(b) && amq_cuckoo_items(a) == amq_cuckoo_items(b) &&
           memcmp(amq_cuckoo_data(a), amq_cuckoo_data(b), amq_cuckoo_bytes(a)) == 0;
}

/* Packed keys of 8, 16 and 12 bytes, XXH3 with seeds 0 and 5 and murmur3:
 * the batches leave the bytes and answer as one-key calls in order, also
 * past a full filter (the same keys in, the same victim) and on a view. */
TEST(cuckoo_batch_fixed_matches_one_key)
{
    static const struct {
        uint32_t algo;
        uint64_t seed;
    } specs[] = {{AMQ_HASH_XXH3, 0}, {AMQ_HASH_XXH3, 5}, {AMQ_HASH_MURMUR3, 7},
                 {AMQ_HASH_MULSHIFT, 0}, {AMQ_HASH_MULSHIFT, 11}};
    static const size_t lens[] = {8, 16, 12};
    enum { N = 3000 };
    static uint8_t keys[2 * N * 16], out[2 * N];
    uint64_t st = 99, count, w, ones, added;
    size_t s, l, i;

    for (i = 0; i < sizeof keys; i += 8) {
        w = test_rand(&st);
        memcpy(keys + i, &w, 8);
    }
    for (s = 0; s < sizeof specs / sizeof specs[0]; s++)
        for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            const size_t kl = lens[l];
            amq_cuckoo *a = cuckoo_of(N, specs[s].algo, specs[s].seed);
            amq_cuckoo *b = cuckoo_of(N, specs[s].algo, specs[s].seed);
            REQUIRE(a != NULL && b != NULL);
            REQUIRE_OK(amq_cuckoo_add_batch_fixed(a, keys, kl, N, NULL, &count));
            CHECK_EQ(count, N);
            for (i = 0; i < N; i++)
                REQUIRE(amq_cuckoo_add(b, keys + i * kl, kl) == 1);
            CHECK(same_cuckoo(a, b));
            REQUIRE_OK(amq_cuckoo_contains_batch_fixed(a, keys, kl, 2 * N, out, &count));
            for (i = 0, ones = 0; i < 2 * N; i++) {
                CHECK_EQ(out[i], amq_cuckoo_contains(b, keys + i * kl, kl));
                ones += out[i];
            }
            CHECK_EQ(count, ones);
            CHECK(count >= N && count < N + N / 20); /* all present, ~0.2 % of absent */
            amq_cuckoo_free(a);
            amq_cuckoo_free(b);

            /* 2N keys into a filter for N/4: it fills; the same prefix goes in */
            a = cuckoo_of(N / 4, specs[s].algo, specs[s].seed);
            b = cuckoo_of(N / 4, specs[s].algo, specs[s].seed);
            REQUIRE(a != NULL && b != NULL);
            CHECK_STATUS(amq_cuckoo_add_batch_fixed(a, keys, kl, 2 * N, NULL, &count),
                         AMQ_EFULL);
            for (added = 0; added < 2 * N && amq_cuckoo_add(b, keys + added * kl, kl) == 1;)
                added++;
            CHECK_EQ(count, added);
            CHECK(added < N);
            CHECK(same_cuckoo(a, b));
            CHECK_EQ(amq_cuckoo_victim(a, NULL), amq_cuckoo_victim(b, NULL));
            amq_cuckoo_free(a);
            amq_cuckoo_free(b);
        }
    /* Tables past 4 MiB take the staged, prefetched path for 8-byte keys
     * (smaller ones the one-key query): the same answers. */
    for (s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        amq_cuckoo *a = cuckoo_of(UINT64_C(4) << 20, specs[s].algo, specs[s].seed);
        REQUIRE(a != NULL);
        REQUIRE(amq_cuckoo_bytes(a) > (UINT64_C(4) << 20));
        for (i = 0; i < N; i++)
            REQUIRE(amq_cuckoo_add(a, keys + i * 8, 8) == 1);
        REQUIRE_OK(amq_cuckoo_contains_batch_fixed(a, keys, 8, 2 * N, out, &count));
        for (i = 0, ones = 0; i < 2 * N; i++) {
            CHECK_EQ(out[i], amq_cuckoo_contains(a, keys + i * 8, 8));
            ones += out[i];
        }
        CHECK_EQ(count, ones);
        CHECK(count >= N && count < N + N / 20);
        amq_cuckoo_free(a);
    }
    {
        amq_cuckoo_params p;
        amq_cuckoo *c = cuckoo_of(N, AMQ_HASH_XXH3, 0), *v;
        REQUIRE(c != NULL);
        amq_cuckoo_get_params(c, &p);
        REQUIRE_OK(amq_cuckoo_view(&p, amq_cuckoo_data(c), amq_cuckoo_bytes(c), 0, 0, 0, NULL,
                                   &v));
        CHECK_STATUS(amq_cuckoo_add_batch_fixed(v, keys, 8, 10, NULL, &count), AMQ_EREADONLY);
        CHECK_EQ(count, 0);
        amq_cuckoo_free(v);
        amq_cuckoo_free(c);
    }
}

TEST(filter_remove_hash_matches_remove)
{
    amq_filter *f = make(AMQ_KIND_CUCKOO, 1000);
    uint64_t k = 77;
    REQUIRE(f != NULL);
    CHECK_EQ(amq_filter_add(f, &k, sizeof k), 1);
    CHECK_EQ(amq_filter_remove_hash(f, key_hash(AMQ_HASH_MURMUR3, 7, k)), 1);
    CHECK_EQ(amq_filter_contains(f, &k, sizeof k), 0);
    CHECK_EQ(amq_filter_remove_hash(f, key_hash(AMQ_HASH_MURMUR3, 7, k)), 0);
    amq_filter_free(f);
    f = make(AMQ_KIND_BLOCKED, 1000);
    REQUIRE(f != NULL);
    CHECK_STATUS(amq_filter_remove_hash(f, key_hash(AMQ_HASH_MURMUR3, 7, k)), AMQ_EUNSUPPORTED);
    amq_filter_free(f);
}

/* The scalable kinds' handles come out of and go back into the generic
 * one; a kind that is not theirs gives NULL. */
TEST(filter_scalable_handles_round_trip)
{
    amq_filter *f = make(AMQ_KIND_SCALABLE_BLOOM, 100), *g = make(AMQ_KIND_SCALABLE_CUCKOO, 100);
    amq_filter *o = make(AMQ_KIND_BLOCKED, 100), *w = NULL;
    amq_sbloom_params sp;
    amq_scuckoo_params cp;
    amq_sbloom *s, *s2;
    amq_scuckoo *c, *c2;
    uint64_t k = 3;
    REQUIRE(f != NULL && g != NULL && o != NULL);
    CHECK(amq_filter_sbloom(o) == NULL);
    CHECK(amq_filter_scuckoo(o) == NULL);
    CHECK(amq_filter_sbloom(g) == NULL);
    CHECK(amq_filter_scuckoo(f) == NULL);
    s = amq_filter_sbloom(f);
    c = amq_filter_scuckoo(g);
    REQUIRE(s != NULL && c != NULL);
    amq_sbloom_get_params(s, &sp);
    CHECK_EQ(sp.capacity, 100);
    CHECK_EQ(sp.hash_algo, AMQ_HASH_MURMUR3);
    CHECK_EQ(sp.seed, 7);
    amq_scuckoo_get_params(c, &cp);
    CHECK_EQ(cp.capacity, 100);
    CHECK_EQ(cp.hash_algo, AMQ_HASH_MURMUR3);
    CHECK_EQ(cp.seed, 7);
    {
        amq_hash128 e = key_hash(AMQ_HASH_MURMUR3, 7, k), a = amq_sbloom_hash(s, &k, sizeof k),
                    b = amq_scuckoo_hash(c, &k, sizeof k);
        CHECK_EQ(a.h1, e.h1);
        CHECK_EQ(b.h2, e.h2);
    }
    CHECK_EQ(amq_filter_add(f, &k, sizeof k), 1);
    REQUIRE_OK(amq_sbloom_clone(s, NULL, &s2));
    REQUIRE_OK(amq_filter_from_sbloom(s2, &w));
    CHECK_EQ(amq_filter_kind(w), AMQ_KIND_SCALABLE_BLOOM);
    CHECK_EQ(amq_filter_contains(w, &k, sizeof k), 1);
    amq_filter_free(w);
    CHECK_EQ(amq_scuckoo_add_unique_hash(c, key_hash(AMQ_HASH_MURMUR3, 7, k)), 1);
    CHECK_EQ(amq_scuckoo_add_unique_hash(c, key_hash(AMQ_HASH_MURMUR3, 7, k)), 0);
    REQUIRE_OK(amq_scuckoo_clone(c, NULL, &c2));
    REQUIRE_OK(amq_filter_from_scuckoo(c2, &w));
    CHECK_EQ(amq_filter_kind(w), AMQ_KIND_SCALABLE_CUCKOO);
    CHECK_EQ(amq_filter_contains(w, &k, sizeof k), 1);
    amq_filter_free(w);
    amq_filter_free(o);
    amq_filter_free(g);
    amq_filter_free(f);
}

/* A one-link limit: the chain stops growing where it would grow. */
TEST(scuckoo_set_max_filters)
{
    amq_scuckoo_params p;
    amq_scuckoo *c;
    amq_scuckoo_info in;
    uint64_t i;
    int rc = 1;
    amq_scuckoo_params_init(&p, 1);
    p.capacity = 64;
    REQUIRE_OK(amq_scuckoo_new(&p, NULL, &c));
    CHECK_STATUS(amq_scuckoo_set_max_links(c, 0), AMQ_ERANGE);
    REQUIRE_OK(amq_scuckoo_set_max_links(c, 1));
    for (i = 0; i < 10000 && rc == 1; i++)
        rc = amq_scuckoo_add(c, &i, sizeof i);
    CHECK(rc < 0);
    amq_scuckoo_get_info(c, &in);
    CHECK_EQ(in.links, 1);
    /* Raised, the chain grows instead of failing. */
    REQUIRE_OK(amq_scuckoo_set_max_links(c, 2));
    for (rc = 1; rc == 1 && in.links == 1; i++) {
        rc = amq_scuckoo_add(c, &i, sizeof i);
        amq_scuckoo_get_info(c, &in);
    }
    CHECK_EQ(rc, 1);
    CHECK_EQ(in.links, 2);
    amq_scuckoo_free(c);
}

/* from_raw builds zeroed links the loader fills through link_data_mut;
 * the filled filter answers as the one the bytes came from. */
TEST(sbloom_from_raw_and_link_data_mut)
{
    amq_sbloom_params p;
    amq_sbloom *s, *t;
    amq_sbloom_info in;
    amq_sbloom_header h;
    amq_sbloom_link_info li;
    const uint8_t *src;
    uint8_t *dst;
    size_t len;
    uint64_t i;
    amq_sbloom_params_init(&p, 1);
    p.capacity = 1000;
    REQUIRE_OK(amq_sbloom_new(&p, NULL, &s));
    for (i = 0; i < 500; i++)
        CHECK_EQ(amq_sbloom_add(s, &i, sizeof i), 1);
    amq_sbloom_get_info(s, &in);
    REQUIRE_OK(amq_sbloom_link(s, 0, &li, &src));
    h.items = 500;
    h.links = 1;
    h.options = p.options;
    h.expansion = p.expansion;
    REQUIRE_OK(amq_sbloom_from_header(&h, &li, NULL, &t));
    REQUIRE_OK(amq_sbloom_link_data_mut(t, 0, &dst, &len));
    CHECK_EQ(len, li.bytes);
    for (i = 0; i < len; i++)
        CHECK_EQ(dst[i], 0);
    memcpy(dst, src, len);
    for (i = 0; i < 500; i++)
        CHECK_EQ(amq_sbloom_contains(t, &i, sizeof i), 1);
    CHECK_STATUS(amq_sbloom_link_data_mut(t, 1, &dst, &len), AMQ_ERANGE);
    amq_sbloom_free(t);
    amq_sbloom_free(s);
}

TEST(aging_contains_batch_at_matches_one_key)
{
    amq_config c;
    amq_filter *f;
    amq_hash128 h[300];
    uint8_t out[300];
    uint64_t i, t0 = 1000000;
    amq_config_init(&c, AMQ_KIND_AGING);
    c.capacity = 1000;
    c.window_ms = 10000;
    c.rate = 100;
    REQUIRE_OK(amq_filter_new(&c, &f, NULL));
    REQUIRE_OK(amq_aging_advance(f, t0));
    for (i = 0; i < 300; i++) {
        h[i] = amq_filter_hash(f, &i, sizeof i);
        if (i < 150)
            CHECK(amq_filter_add_hash(f, h[i]) >= 0);
    }
    for (i = 0; i < 3; i++) {
        uint64_t now = t0 + i * 20000, j, yes = 0;
        REQUIRE_OK(amq_aging_contains_batch_at(f, h, 300, out, now));
        for (j = 0; j < 300; j++) {
            CHECK_EQ(out[j], amq_aging_contains_at(f, h[j], now));
            yes += out[j];
        }
        if (i == 0)
            CHECK(yes >= 150);
    }
    CHECK_STATUS(amq_aging_contains_batch_at(f, h, 300, out, 0), AMQ_OK);
    amq_filter_free(f);
}

/* Nothing to recover beside a file that never had a journal. */
TEST(inplace_recover_without_journal)
{
    amq_filter *f = make(AMQ_KIND_BLOCKED, 1000);
    const char *path = test_path("recover.amq");
    amq_errinfo e;
    uint64_t k = 1;
    REQUIRE(f != NULL);
    CHECK_EQ(amq_filter_add(f, &k, sizeof k), 1);
    REQUIRE_OK(amq_filter_save(f, path, 0, NULL));
    REQUIRE_OK(amq_inplace_recover(path, &e));
    amq_filter_free(f);
    REQUIRE_OK(amq_filter_open(path, 0, NULL, &f, NULL));
    CHECK_EQ(amq_filter_contains(f, &k, sizeof k), 1);
    amq_filter_free(f);
}

/* Keys given one by one to a builder make the filter their hashes make. */
TEST(builder_add_keys_equals_hashes)
{
    amq_config c;
    amq_builder *b;
    amq_filter *f, *g;
    amq_hash128 h[2000];
    uint64_t i, n1 = 0, n2 = 0;
    void *s1, *s2;
    amq_config_init(&c, AMQ_KIND_FUSE);
    c.seed = 11;
    for (i = 0; i < 2000; i++)
        h[i] = amq_hash_key(c.hash_algo, c.seed, &i, sizeof i);
    REQUIRE_OK(amq_builder_new(&c, NULL, 0, &b, NULL));
    for (i = 0; i < 2000; i++)
        REQUIRE_OK(amq_builder_add(b, &i, sizeof i));
    CHECK_EQ(amq_builder_count(b), 2000);
    REQUIRE_OK(amq_builder_finish(b, &f, NULL));
    amq_builder_free(b);
    REQUIRE_OK(amq_filter_build(&c, h, 2000, &g, NULL));
    REQUIRE_OK(amq_filter_serialized_size(f, &n1));
    REQUIRE_OK(amq_filter_serialized_size(g, &n2));
    REQUIRE_EQ(n1, n2);
    s1 = malloc((size_t)n1);
    s2 = malloc((size_t)n2);
    REQUIRE(s1 != NULL && s2 != NULL);
    REQUIRE_OK(amq_filter_serialize(f, s1, (size_t)n1, NULL));
    REQUIRE_OK(amq_filter_serialize(g, s2, (size_t)n2, NULL));
    CHECK(memcmp(s1, s2, (size_t)n1) == 0);
    free(s1);
    free(s2);
    amq_filter_free(f);
    amq_filter_free(g);
}

TEST_MAIN()
