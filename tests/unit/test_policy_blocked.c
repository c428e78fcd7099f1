/*
 * test_policy_blocked.c - the filter-policy blob: the LevelDB encoding still
 * reads as before, and the blocked encoding (extended id 1) has the layout
 * its comment specifies, byte for byte.
 */
#include "amq.h"
#include "amq/blocked_bloom.h"
#include "common/endian.h"
#include "batch.h"
#include "test.h"

static amq_slice *int_keys(size_t n, uint64_t base, uint8_t **store)
{
    amq_slice *k = malloc(n * sizeof *k);
    size_t i;
    *store = malloc(n * 8);
    if (k == NULL || *store == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        amq_store64(*store + i * 8, base + i);
        k[i].data = *store + i * 8;
        k[i].len = 8;
    }
    return k;
}

TEST(policy_leveldb_blobs_still_read)
{
    /* LevelDB's own small case: "hello" and "world" at 10 bits per key give
     * 64 bits (8 bytes) and k = 6 (10 * 0.69 truncated). */
    amq_slice keys[2] = {{"hello", 5}, {"world", 5}};
    uint8_t blob[64];
    size_t len, size;
    REQUIRE_OK(amq_policy_blob_size(AMQ_POLICY_LEVELDB, 2, 10.0, &size));
    CHECK_EQ(size, 9);
    REQUIRE_OK(amq_policy_build(AMQ_POLICY_LEVELDB, keys, 2, 10.0, blob, sizeof blob, &len));
    CHECK_EQ(len, 9);
    CHECK_EQ(blob[8], 6);
    CHECK_EQ(t_policy_contains(blob, len, "hello", 5), 1);
    CHECK_EQ(t_policy_contains(blob, len, "world", 5), 1);
    CHECK_EQ(t_policy_contains(blob, len, "x", 1), 0);
    CHECK_EQ(t_policy_contains(blob, len, "foo", 3), 0);
    /* Reserved and unknown encodings answer "may match". */
    blob[8] = 31;
    CHECK_EQ(t_policy_contains(blob, len, "x", 1), 1);
    blob[7] = 200;
    blob[8] = 255;
    CHECK_EQ(t_policy_contains(blob, len, "x", 1), 1);
    CHECK_STATUS(t_policy_contains(blob, 1, "x", 1), AMQ_ETRUNC);
}

TEST(policy_leveldb_no_false_negatives_and_rate)
{
    const size_t n = 10000;
    uint8_t *store, *blob;
    amq_slice *keys = int_keys(n, 0, &store);
    size_t size, len, i, fp = 0;
    REQUIRE(keys != NULL);
    REQUIRE_OK(amq_policy_blob_size(AMQ_POLICY_LEVELDB, n, 10.0, &size));
    blob = malloc(size);
    REQUIRE_OK(amq_policy_build(AMQ_POLICY_LEVELDB, keys, n, 10.0, blob, size, &len));
    for (i = 0; i < n; i++)
        CHECK_EQ(t_policy_contains(blob, len, keys[i].data, 8), 1);
    for (i = 0; i < 100000; i++) {
        uint8_t k[8];
        amq_store64(k, 1000000000 + i);
        fp += (size_t)t_policy_contains(blob, len, k, 8);
    }
    /* LevelDB's own test accepts up to 2 %. */
    CHECK(fp < 2000);
    free(blob);
    free(keys);
    free(store);
}

TEST(policy_blocked_layout_is_a_blocked_filter)
{
    const size_t n = 5000;
    uint8_t *store, *blob;
    amq_slice *keys = int_keys(n, 77, &store);
    amq_blocked_params prm;
    amq_blocked *b;
    size_t size, len, i;

    REQUIRE(keys != NULL);
    REQUIRE_OK(amq_policy_blob_size(AMQ_POLICY_BLOCKED, n, 10.0, &size));
    memset(&prm, 0, sizeof prm);
    REQUIRE_OK(amq_blocked_blocks_for_bpk(n, 10.0, &prm.blocks, &prm.k));
    CHECK_EQ(size, prm.blocks * 64 + 3);
    CHECK_EQ(prm.blocks, (n * 10 + 511) / 512);
    blob = malloc(size + 1);
    REQUIRE(blob != NULL);
    /* Unaligned on purpose: blobs are read byte by byte. */
    REQUIRE_OK(amq_policy_build(AMQ_POLICY_BLOCKED, keys, n, 10.0, blob + 1, size, &len));
    CHECK_EQ(len, size);
    CHECK_EQ(blob[1 + len - 1], 255);
    CHECK_EQ(blob[1 + len - 2], AMQ_POLICY_BLOCKED);
    CHECK_EQ(blob[1 + len - 3], prm.k);
    /* The same bytes as a blocked filter of that geometry, XXH3 seed 0. */
    prm.hash_algo = AMQ_HASH_XXH3;
    REQUIRE_OK(amq_blocked_new(&prm, NULL, &b));
    for (i = 0; i < n; i++)
        amq_blocked_add(b, keys[i].data, keys[i].len);
    CHECK(memcmp(blob + 1, amq_blocked_data(b), prm.blocks * 64) == 0);
    for (i = 0; i < n; i++)
        CHECK_EQ(t_policy_contains(blob + 1, len, keys[i].data, 8), 1);
    for (i = 0; i < 20000; i++) {
        uint8_t k[8];
        amq_store64(k, 5000000 + i);
        CHECK_EQ(t_policy_contains(blob + 1, len, k, 8), amq_blocked_contains(b, k, 8));
    }
    amq_blocked_free(b);
    free(blob);
    free(keys);
    free(store);
}

TEST(policy_blocked_rate)
{
    const size_t n = 20000, q = 200000;
    uint8_t *store, *blob;
    amq_slice *keys = int_keys(n, 0, &store);
    size_t size, len, i, fp = 0;
    double theory;
    uint64_t blocks;
    uint32_t k;

    REQUIRE(keys != NULL);
    REQUIRE_OK(amq_policy_blob_size(AMQ_POLICY_BLOCKED, n, 10.0, &size));
    blob = malloc(size);
    REQUIRE_OK(amq_policy_build(AMQ_POLICY_BLOCKED, keys, n, 10.0, blob, size, &len));
    REQUIRE_OK(amq_blocked_blocks_for_bpk(n, 10.0, &blocks, &k));
    theory = amq_blocked_fpp_theory(blocks, k, n);
    for (i = 0; i < q; i++) {
        uint8_t key[8];
        amq_store64(key, 1000000000 + i);
        fp += (size_t)t_policy_contains(blob, len, key, 8);
    }
    if (fabs((double)fp - (double)q * theory) >
        5 * sqrt((double)q * theory) + 0.03 * (double)q * theory)
        FAIL_AT_("%zu false positives in %zu, theory %.1f", fp, q, (double)q * theory);
    free(blob);
    free(keys);
    free(store);
}

TEST(policy_blocked_malformed)
{
    amq_slice keys[1] = {{"a", 1}};
    uint8_t blob[64 * 2 + 3], bad[200];
    size_t len;

    REQUIRE_OK(amq_policy_build(AMQ_POLICY_BLOCKED, keys, 1, 10.0, blob, sizeof blob, &len));
    CHECK_EQ(len, 64 + 3);
    CHECK_EQ(t_policy_contains(blob, len, "a", 1), 1);
    /* Too small a buffer, empty lists, bad sizes. */
    CHECK_STATUS(amq_policy_build(AMQ_POLICY_BLOCKED, keys, 1, 10.0, blob, 66, &len), AMQ_EINVAL);
    CHECK_STATUS(amq_policy_build(AMQ_POLICY_BLOCKED, keys, 1, 0.0, blob, sizeof blob, &len),
                 AMQ_ERANGE);
    CHECK_STATUS(amq_policy_build(7, keys, 1, 10.0, blob, sizeof blob, &len), AMQ_EINVAL);
    REQUIRE_OK(amq_policy_build(AMQ_POLICY_BLOCKED, keys, 0, 10.0, blob, sizeof blob, &len));
    CHECK_EQ(len, 67);
    CHECK_EQ(t_policy_contains(blob, len, "a", 1), 0);
    /* Lengths that are not 3 + 64 B, k out of range. */
    memset(bad, 0, sizeof bad);
    bad[65] = 7;
    bad[66] = 1;
    bad[67] = 255;
    CHECK_STATUS(t_policy_contains(bad, 68, "a", 1), AMQ_ECORRUPT);
    CHECK_STATUS(t_policy_contains(bad + 65, 3, "a", 1), AMQ_ECORRUPT); /* 0 blocks */
    bad[64] = 0;
    bad[65] = 1;
    bad[66] = 255;
    CHECK_STATUS(t_policy_contains(bad, 67, "a", 1), AMQ_ECORRUPT); /* k = 0 */
    bad[64] = 17;
    CHECK_STATUS(t_policy_contains(bad, 67, "a", 1), AMQ_ECORRUPT);
    bad[64] = 16;
    CHECK_EQ(t_policy_contains(bad, 67, "a", 1), 0);
    CHECK_STATUS(t_policy_contains(bad + 65, 2, "a", 1), AMQ_ETRUNC);
    /* The status is never the answer: a match is AMQ_OK with *maybe = 1,
     * an error leaves *maybe alone. */
    {
        int maybe = -1;
        CHECK_STATUS(amq_policy_contains(blob, len, "a", 1, &maybe), AMQ_OK);
        CHECK_EQ(maybe, 0);
        REQUIRE_OK(amq_policy_build(AMQ_POLICY_BLOCKED, keys, 1, 10.0, blob, sizeof blob, &len));
        CHECK_STATUS(amq_policy_contains(blob, len, "a", 1, &maybe), AMQ_OK);
        CHECK_EQ(maybe, 1);
        maybe = -1;
        CHECK_STATUS(amq_policy_contains(bad + 65, 2, "a", 1, &maybe), AMQ_ETRUNC);
        CHECK_EQ(maybe, -1);
    }
}

TEST_MAIN()
