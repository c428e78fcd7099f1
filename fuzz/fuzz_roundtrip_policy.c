/*
 * fuzz_roundtrip_policy.c - the LevelDB-style filter policy built from
 * fuzz-chosen keys and bits per key: amq_policy_build -> every key
 * may match; the blob has exactly amq_policy_blob_size bytes and ends in
 * its k; bits per key outside (0, 1000] (NaN, infinities, negatives
 * included) is refused with AMQ_ERANGE by both functions; a buffer one
 * byte short is refused with AMQ_EINVAL and not written past.
 *
 * Input: u8 selector (0: bits per key is any double from the next 8 bytes;
 * otherwise u16 / 64), then keys as u8 length + bytes.
 */
#include "fuzz.h"

#define MAX_KEYS 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    amq_slice keys[MAX_KEYS];
    size_t n = 0, blob_size = 0, written = 0, i;
    double bpk;
    uint8_t *blob;
    int rc, rc2;

    bpk = fz_u8(&in) == 0 ? fz_f64(&in) : ((double)fz_u16(&in) + 1.0) / 64.0;
    while (in.n > 0 && n < MAX_KEYS) {
        const uint8_t *k;
        size_t len = fz_bytes(&in, 255, &k);
        keys[n].data = k;
        keys[n].len = len;
        n++;
    }
    rc = amq_policy_blob_size(AMQ_POLICY_LEVELDB, n, bpk, &blob_size);
    if (!(bpk > 0.0 && bpk <= 1000.0)) {
        FZ_CHECK(rc == AMQ_ERANGE, "bits per key %g: blob_size returned %d", bpk, rc);
        rc2 = amq_policy_build(AMQ_POLICY_LEVELDB, keys, n, bpk, NULL, 0, &written);
        FZ_CHECK(rc2 == AMQ_ERANGE, "bits per key %g: build returned %d", bpk, rc2);
        return 0;
    }
    FZ_CHECK(rc == AMQ_OK, "blob_size(%zu keys, %g bits per key): %d", n, bpk, rc);
    FZ_CHECK(blob_size >= 9, "blob of %zu bytes (at least 64 bits + k)", blob_size);
    FZ_CHECK(amq_policy_blob_size(7, n, bpk, &written) == AMQ_EINVAL, "unknown encoding");

    /* Exactly sized heap blocks: ASan catches any write past them. */
    blob = malloc(blob_size);
    FZ_CHECK(blob != NULL, "out of memory");
    rc = amq_policy_build(AMQ_POLICY_LEVELDB, keys, n, bpk, blob, blob_size - 1, &written);
    FZ_CHECK(rc == AMQ_EINVAL, "a buffer one byte short: %d", rc);
    rc = amq_policy_build(AMQ_POLICY_LEVELDB, keys, n, bpk, blob, blob_size, &written);
    FZ_CHECK(rc == AMQ_OK, "build: %d", rc);
    FZ_CHECK(written == blob_size, "wrote %zu of %zu bytes", written, blob_size);
    FZ_CHECK(blob[blob_size - 1] >= 1 && blob[blob_size - 1] <= 30, "k byte %u",
             blob[blob_size - 1]);
    for (i = 0; i < n; i++) {
        int maybe = 0;
        rc = amq_policy_contains(blob, blob_size, keys[i].data, keys[i].len, &maybe);
        FZ_CHECK(rc == AMQ_OK && maybe == 1,
                 "key %zu of %zu (bits per key %g) does not match: %d, %d", i, n, bpk, rc, maybe);
    }
    free(blob);
    return 0;
}
