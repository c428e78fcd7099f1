/*
 * fuzz_policy.c - amq_policy_contains on arbitrary blobs (the LevelDB-style
 * filter policy: a blob read back from an SST file or the network).
 *
 * Input: u8 key length K, K key bytes, then the blob (the rest).  Checks:
 * the answer is 1, 0 or AMQ_ETRUNC, the last exactly for blobs under two
 * bytes (a blocked blob - id 1, then 255 - may also be AMQ_ETRUNC or
 * AMQ_ECORRUPT); the blob is only read (it lives in a misaligned, exactly-sized
 * heap copy, so ASan sees any read past its end); and two oracles that need
 * no second implementation: with every bit of the array set the answer is
 * 1 (the extended id byte becomes 255, an unknown encoding), with none set
 * it is 0 for the LevelDB encoding (k in 1..30) and 1 for the reserved last
 * bytes (0, 31..254: forward compatibility).
 */
#define FZ_NO_CHECKSUM /* a policy blob has none */
#include "extreme.h"

/* The blob's answer (1, 0) or its error status: a status is never
 * positive, and an error writes no answer. */
static int ask(const uint8_t *blob, size_t len, const void *key, size_t klen)
{
    int maybe = -100;
    int rc = amq_policy_contains(blob, len, key, klen, &maybe);
    FZ_CHECK(rc <= 0, "amq_policy_contains returned the status %d", rc);
    if (rc < 0) {
        FZ_CHECK(maybe == -100, "an error (%d) wrote the answer %d", rc, maybe);
        return rc;
    }
    FZ_CHECK(maybe == 0 || maybe == 1, "the answer %d", maybe);
    return maybe;
}

/* extreme.h: the blob's first and last 16 bytes (its trailer holds the
 * encoding, k and the blocked kind's sizes), either byte order. */
static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max)
{
    size_t at, len, n = 0;

    if (size < 2 || max < 2)
        return 0;
    at = 1 + (size_t)data[0];
    if (at >= size)
        return 0;
    len = size - at;
    spans[n++] = (fz_span){at, len < 16 ? len : 16, 1, -1};
    if (len > 16)
        spans[n++] = (fz_span){size - (len < 32 ? len - 16 : 16), len < 32 ? len - 16 : 16, 1, -1};
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    const uint8_t *key;
    size_t klen = fz_bytes(&in, 255, &key);
    size_t len = in.n;
    uint8_t *blob = calloc(1, len + 1), *copy;
    uint8_t k;
    int rc;

    FZ_CHECK(blob != NULL, "out of memory");
    copy = blob + 1; /* misaligned on purpose */
    if (len != 0)
        memcpy(copy, in.p, len);
    rc = ask(copy, len, key, klen);
    if (len < 2) {
        FZ_CHECK(rc == AMQ_ETRUNC, "a %zu-byte blob answered %d", len, rc);
        free(blob);
        return 0;
    }
    if (copy[len - 1] == 255 &&
        (copy[len - 2] == AMQ_POLICY_BLOCKED || copy[len - 2] == AMQ_POLICY_FUSE ||
         copy[len - 2] == AMQ_POLICY_RIBBON))
        /* A blocked, fuse or ribbon blob too short for its trailer, or of an
         * impossible length or geometry, is refused (amq/bloom.h). */
        FZ_CHECK(rc == 0 || rc == 1 || rc == AMQ_ETRUNC || rc == AMQ_ECORRUPT,
                 "a blocked blob answered %d", rc);
    else
        FZ_CHECK(rc == 0 || rc == 1, "the answer or status %d", rc);
    FZ_CHECK(memcmp(copy, in.p, len) == 0, "amq_policy_contains wrote to the blob");

    k = copy[len - 1];
    memset(copy, 0xff, len - 1);
    rc = ask(copy, len, key, klen);
    FZ_CHECK(rc == 1, "a blob with every bit set (k %u) answered %d", k, rc);
    memset(copy, 0, len - 1);
    rc = ask(copy, len, key, klen);
    if (k >= 1 && k <= 30)
        FZ_CHECK(rc == 0, "an empty LevelDB blob (k %u, %zu bytes) answered %d", k, len, rc);
    else if (k != 255)
        FZ_CHECK(rc == 1, "a reserved encoding (last byte %u) answered %d", k, rc);
    else
        FZ_CHECK(rc == 0 || rc == 1, "an extended blob answered %d", rc);
    free(blob);
    return 0;
}
