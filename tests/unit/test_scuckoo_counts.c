/* test_scuckoo_counts.c - amq_scuckoo_set_counts restores counts that need
 * not match the arrays; the filter stays usable and dumps them back. */
#include <string.h>

#include "amq.h"
#include "amq/scalable_cuckoo.h"
#include "test.h"

TEST(scuckoo_set_counts)
{
    amq_scuckoo_header h;
    amq_scuckoo_info in;
    amq_scuckoo *c;
    uint8_t buf[AMQ_SCUCKOO_HEADER_SIZE];

    memset(&h, 0, sizeof h);
    h.num_buckets = 4;
    h.links = 1;
    h.bucket_size = 2;
    h.max_kicks = 20;
    h.expansion = 1;
    REQUIRE_OK(amq_scuckoo_from_header(&h, NULL, NULL, &c));
    amq_scuckoo_set_counts(c, 300, 7); /* more items than the 8 slots */
    amq_scuckoo_get_info(c, &in);
    CHECK_EQ(in.items, 300);
    CHECK_EQ(in.deletes, 7);
    CHECK_STATUS(amq_scuckoo_check(c), AMQ_ECORRUPT);
    REQUIRE_OK(amq_scuckoo_header_serialize(c, buf, sizeof buf));
    CHECK_EQ(buf[0], 300 & 0xff);
    CHECK_EQ(buf[1], 300 >> 8);
    CHECK_EQ(buf[16], 7);
    CHECK_EQ(amq_scuckoo_add(c, "a", 1), 1);
    CHECK_EQ(amq_scuckoo_contains(c, "a", 1), 1);
    amq_scuckoo_get_info(c, &in);
    CHECK_EQ(in.items, 301);
    amq_scuckoo_set_counts(c, 1, 0);
    REQUIRE_OK(amq_scuckoo_check(c));
    amq_scuckoo_free(c);
}

TEST_MAIN()
