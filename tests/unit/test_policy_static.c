/*
 * test_policy_static.c - the filter-policy blobs of the static kinds
 * (AMQ_POLICY_FUSE, AMQ_POLICY_RIBBON): every key matches, rates within
 * bands, sizes against the bound, names, and damaged trailers refused.
 */
#include <math.h>

#include "amq.h"
#include "test.h"

/* 1 / 0 as the blob answers, or the negative status. */
static int match(const void *blob, size_t len, const void *key, size_t key_len)
{
    int maybe = -100, rc = amq_policy_contains(blob, len, key, key_len, &maybe);
    return rc < 0 ? rc : maybe;
}

static amq_slice *make_keys(size_t n, const char *prefix, char (*buf)[24])
{
    amq_slice *k = malloc((n ? n : 1) * sizeof *k);
    size_t i;
    for (i = 0; i < n; i++) {
        k[i].len = (size_t)snprintf(buf[i], 24, "%s%zu", prefix, i);
        k[i].data = buf[i];
    }
    return k;
}

TEST(policy_static_every_key_matches)
{
    static const size_t counts[] = {0, 1, 2, 3, 10, 100, 1000, 11500, 20000};
    static const uint32_t enc[] = {AMQ_POLICY_FUSE, AMQ_POLICY_RIBBON};
    static char names[20000][24];
    size_t c, e, i, size, len;
    for (e = 0; e < 2; e++) {
        for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            size_t n = counts[c];
            amq_slice *keys = make_keys(n, "k", names);
            uint8_t *blob;
            REQUIRE_OK(amq_policy_blob_size(enc[e], n, 10.0, &size));
            blob = malloc(size);
            REQUIRE_OK(amq_policy_build(enc[e], keys, n, 10.0, blob, size, &len));
            CHECK(len <= size);
            CHECK_EQ(blob[len - 1], 255);
            CHECK_EQ(blob[len - 2], enc[e]);
            for (i = 0; i < n; i++)
                if (match(blob, len, keys[i].data, keys[i].len) != 1)
                    FAIL_AT_("%s, %zu keys: key %zu does not match", amq_policy_name(enc[e]), n,
                             i);
            CHECK_STATUS(amq_policy_build(enc[e], keys, n, 10.0, blob, size - 1, &len),
                         AMQ_EINVAL);
            free(blob);
            free(keys);
        }
    }
}

/* 20,000 keys at 10 bits per key: fuse at 1/256 in about 9.8 bits per key,
 * ribbon at the Bloom rate of 10 bits per key (0.82 %) in about 7.6. */
TEST(policy_static_rates_and_sizes)
{
    static char in[20000][24], out[200000][24];
    static const struct { uint32_t enc; double lo, hi, max_bpk; } v[] = {
        {AMQ_POLICY_FUSE, 0.0032, 0.0047, 10.0},
        {AMQ_POLICY_RIBBON, 0.0070, 0.0095, 7.8},
    };
    size_t e, i, size, len, fp;
    amq_slice *keys = make_keys(20000, "in", in), *absent = make_keys(200000, "out", out);
    for (e = 0; e < 2; e++) {
        uint8_t *blob;
        double rate, bpk;
        REQUIRE_OK(amq_policy_blob_size(v[e].enc, 20000, 10.0, &size));
        blob = malloc(size);
        REQUIRE_OK(amq_policy_build(v[e].enc, keys, 20000, 10.0, blob, size, &len));
        for (i = 0, fp = 0; i < 200000; i++)
            fp += (size_t)match(blob, len, absent[i].data, absent[i].len);
        rate = (double)fp / 200000;
        bpk = (double)len * 8 / 20000;
        if (rate < v[e].lo || rate > v[e].hi || bpk > v[e].max_bpk)
            FAIL_AT_("%s: rate %.5f (band %.4f..%.4f), %.2f bits/key (max %.1f)",
                     amq_policy_name(v[e].enc), rate, v[e].lo, v[e].hi, bpk, v[e].max_bpk);
        free(blob);
    }
    free(keys);
    free(absent);
}

TEST(policy_static_names_and_damage)
{
    static char names[100][24];
    amq_slice *keys = make_keys(100, "k", names);
    uint8_t blob[4096];
    size_t len, i;
    int rc;

    CHECK_STR(amq_policy_name(AMQ_POLICY_LEVELDB), "leveldb.BuiltinBloomFilter2");
    CHECK_STR(amq_policy_name(AMQ_POLICY_BLOCKED), "amq.BlockedBloomFilter");
    CHECK_STR(amq_policy_name(AMQ_POLICY_FUSE), "amq.BinaryFuseFilter");
    CHECK_STR(amq_policy_name(AMQ_POLICY_RIBBON), "amq.RibbonFilter");
    CHECK(amq_policy_name(99) == NULL);
    CHECK_STATUS(amq_policy_build(AMQ_POLICY_FUSE, keys, 100, 0.0, blob, sizeof blob, &len),
                 AMQ_ERANGE);
    REQUIRE_OK(amq_policy_build(AMQ_POLICY_RIBBON, keys, 100, 10.0, blob, sizeof blob, &len));
    /* every trailer byte but the seed's, flipped: refused (or, for the
     * marker and id, read as another encoding) - never a crash */
    for (i = len - 18; i < len; i++) {
        blob[i] ^= 0x21;
        rc = match(blob, len, "k1", 2);
        if (i >= len - 14 && i < len - 10)
            CHECK(rc == 0 || rc == 1); /* the seed: any value reads */
        else if (i < len - 2)
            CHECK_STATUS(rc, AMQ_ECORRUPT);
        else
            CHECK(rc == 1 || rc < 0);
        blob[i] ^= 0x21;
    }
    CHECK_STATUS(match(blob, len - 3, "k1", 2), 1); /* reserved last byte */
    CHECK_STATUS(match(blob + len - 17, 17, "k1", 2), AMQ_ETRUNC);
    free(keys);
}

TEST_MAIN()
