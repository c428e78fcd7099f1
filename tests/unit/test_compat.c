/*
 * test_compat.c - the stable names renamed in 0.3 (amq/compat.h) still
 * compile, link and answer as their new names: the functions, the struct
 * fields (aliases of the same storage) and the macro.  Written in the old
 * names on purpose: scripts/rename-40.py leaves this file alone, and the
 * deprecation warnings (checked by scripts/check-headers.sh) are silenced
 * here only.
 */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#include <stdlib.h>
#include <string.h>

#include "amq.h"
#include "test.h"

TEST(guava_old_names)
{
    amq_bloom_params p;
    amq_bloom *b = NULL, *d = NULL;
    uint8_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0, wx = 0, wy = 0;
    int i;

    REQUIRE_OK(amq_guava_params_for(1000, 0.01, &p));
    REQUIRE_OK(amq_bloom_new(&p, NULL, &b));
    for (i = 0; i < 100; i++)
        amq_bloom_add(b, &i, sizeof i);
    REQUIRE_OK(amq_guava_encoded_size(b, &nx, NULL));
    REQUIRE_OK(amq_guava_serialized_size(b, &ny, NULL));
    CHECK_EQ(nx, ny);
    CHECK_EQ(nx, 6 + 8 * (p.bits / 64));
    x = malloc(nx);
    y = malloc(ny);
    REQUIRE(x != NULL && y != NULL);
    REQUIRE_OK(amq_guava_encode(b, x, nx, &wx, NULL));
    REQUIRE_OK(amq_guava_serialize(b, y, ny, &wy, NULL));
    CHECK_EQ(wx, wy);
    CHECK(memcmp(x, y, nx) == 0);
    REQUIRE_OK(amq_guava_decode(x, wx, NULL, &d, NULL));
    for (i = 0; i < 100; i++)
        CHECK_EQ(amq_bloom_contains(d, &i, sizeof i), 1);
    amq_bloom_free(d);
    amq_bloom_free(b);
    free(x);
    free(y);
}

TEST(aging_plan_is_info_for)
{
    amq_aging_info a, b;

    memset(&a, 0xee, sizeof a);
    memset(&b, 0xee, sizeof b);
    REQUIRE_OK(amq_aging_plan(100000, 0.01, &a));
    REQUIRE_OK(amq_aging_info_for(100000, 0.01, &b));
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    CHECK(a.blocks > 0);
    CHECK_STATUS(amq_aging_plan(0, 0.01, &a), AMQ_ERANGE);
}

TEST(old_field_names_alias_the_new)
{
    amq_sbloom_params sp;
    amq_scuckoo_params cp;
    amq_scuckoo_info ci;
    amq_sbloom_info si;

    memset(&sp, 0, sizeof sp);
    sp.error = 0.25;
    sp.growth = 7;
    CHECK(sp.fpp == 0.25);
    CHECK_EQ(sp.expansion, 7);
    memset(&cp, 0, sizeof cp);
    cp.max_iterations = 33;
    cp.max_filters = 9;
    CHECK_EQ(cp.max_kicks, 33);
    CHECK_EQ(cp.max_links, 9);
    memset(&ci, 0, sizeof ci);
    ci.slots = 1024;
    ci.info_bytes = 1100;
    ci.links = 3;
    CHECK_EQ(ci.capacity, 1024);
    CHECK_EQ(ci.size, 1100);
    CHECK_EQ(ci.num_filters, 3);
    memset(&si, 0, sizeof si);
    si.info_bytes = 96;
    si.links = 2;
    CHECK_EQ(si.size, 96);
    CHECK_EQ(si.num_filters, 2);
    CHECK_EQ(AMQ_SCUCKOO_MAX_FILTERS, AMQ_SCUCKOO_MAX_LINKS);
}

TEST_MAIN()
