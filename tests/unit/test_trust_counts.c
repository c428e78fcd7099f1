/*
 * test_trust_counts.c - issue 19: a cuckoo or scalable-cuckoo file whose
 * header count is off, opened with AMQ_OPEN_TRUST, added to and saved,
 * must come out as a file the verified open accepts (the count is taken
 * from the slots, not from the header); amq_filter_describe with no
 * callback is an error, not a crash.
 */
#include <stdlib.h>
#include <string.h>

#include "amq.h"
#include "amq/filter.h"
#include "common/container.h"
#include "test.h"

static amq_filter *filled(uint32_t kind, uint64_t n)
{
    amq_config cfg;
    amq_filter *f = NULL;
    uint64_t i;
    amq_config_init(&cfg, kind);
    cfg.capacity = 1000;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    for (i = 0; i < n; i++)
        if (amq_filter_add(f, &i, sizeof i) < 0)
            break;
    return f;
}

static void trusted_wrong_count(uint32_t kind)
{
    amq_filter *f = filled(kind, 300), *g = NULL, *h = NULL;
    amq_container c;
    amq_stats st;
    uint8_t *buf, *buf2 = NULL, *params;
    size_t len = 0, len2 = 0;
    uint64_t key = 999999;

    REQUIRE(f != NULL);
    buf = test_serialized(f, &len);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_container_parse(buf, len, len, &c, NULL));
    CHECK_EQ_U64(c.items, 300);
    /* The header says 3 more items than the slots hold; its own checksum
     * is made right, so that only the count is wrong. */
    c.items += 3;
    params = malloc(c.params_len + 1);
    REQUIRE(params != NULL);
    memcpy(params, c.params, c.params_len);
    c.params = params; /* the header writer clears the area it points into */
    amq_container_write_header(&c, buf);
    free(params);
    CHECK_STATUS(amq_filter_deserialize(buf, len, 0, NULL, &g, NULL), AMQ_ECORRUPT);
    REQUIRE_OK(amq_filter_deserialize(buf, len, AMQ_OPEN_TRUST, NULL, &g, NULL));
    CHECK_EQ(amq_filter_add(g, &key, sizeof key), 1);
    amq_filter_stats(g, &st);
    CHECK_EQ_U64(st.items, 301);
    buf2 = test_serialized(g, &len2);
    REQUIRE(buf2 != NULL);
    CHECK_STATUS(amq_filter_deserialize(buf2, len2, 0, NULL, &h, NULL), AMQ_OK);
    amq_filter_free(h);
    amq_filter_free(g);
    amq_filter_free(f);
    free(buf);
    free(buf2);
}

TEST(cuckoo_trusted_wrong_count_saves_a_valid_file)
{
    trusted_wrong_count(AMQ_KIND_CUCKOO);
}

TEST(scalable_cuckoo_trusted_wrong_count_saves_a_valid_file)
{
    trusted_wrong_count(AMQ_KIND_SCALABLE_CUCKOO);
}

TEST(describe_without_callback_is_einval)
{
    amq_filter *f = filled(AMQ_KIND_BLOOM, 10);
    REQUIRE(f != NULL);
    CHECK_STATUS(amq_filter_describe(f, NULL, NULL), AMQ_EINVAL);
    CHECK_STATUS(amq_filter_describe(NULL, NULL, NULL), AMQ_EINVAL);
    amq_filter_free(f);
}

TEST_MAIN()
