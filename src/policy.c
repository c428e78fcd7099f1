/*
 * policy.c - the LevelDB-style filter policy: a self-describing Bloom blob
 * built from a list of keys.
 *
 * Encoding AMQ_POLICY_LEVELDB is LevelDB's BloomFilterPolicy bit for bit:
 * bits = max(64, n * bits_per_key) rounded up to whole bytes; each key is
 * hashed with LevelDB's 32-bit hash (seed 0xbc9f1d34); probe j sets bit
 * h mod bits, then h += delta, delta = h rotated right by 17; the last byte
 * holds k.  Reading follows LevelDB's rules for what LevelDB can write (k in
 * 1..30) and amq's for the rest: a last byte of 255 introduces an extended
 * encoding whose id is the byte before it; unknown encodings and reserved k
 * values answer "may match", so old readers stay correct on new blobs.
 */
#include <math.h>
#include <string.h>

#include "amq/bloom.h"

#define LEVELDB_SEED 0xbc9f1d34u
#define POLICY_EXTENDED 255u

static uint32_t leveldb_k(double bits_per_key)
{
    double k = floor(bits_per_key * 0.69);
    if (k < 1.0)
        k = 1.0;
    if (k > 30.0)
        k = 30.0;
    return (uint32_t)k;
}

static int leveldb_bytes(size_t n, double bits_per_key, size_t *bytes)
{
    double bits;

    if (!(bits_per_key > 0.0 && bits_per_key <= 1000.0))
        return AMQ_ERANGE;
    bits = floor((double)n * bits_per_key);
    if (bits < 64.0)
        bits = 64.0;
    /* LevelDB's probes are 32-bit: more bits than that cannot be reached. */
    if (bits > 4294967295.0)
        return AMQ_ERANGE;
    *bytes = ((size_t)bits + 7) / 8;
    return AMQ_OK;
}

int amq_policy_blob_size(uint32_t encoding, size_t n, double bits_per_key, size_t *size)
{
    size_t bytes;
    int rc;

    if (encoding != AMQ_POLICY_LEVELDB)
        return AMQ_EINVAL;
    rc = leveldb_bytes(n, bits_per_key, &bytes);
    if (rc != AMQ_OK)
        return rc;
    *size = bytes + 1;
    return AMQ_OK;
}

int amq_policy_build(uint32_t encoding, const amq_slice *keys, size_t n, double bits_per_key,
                     void *out, size_t cap, size_t *written)
{
    uint8_t *array = out;
    size_t bytes, i;
    uint32_t k, j, h, delta, bits;
    int rc;

    if (encoding != AMQ_POLICY_LEVELDB)
        return AMQ_EINVAL;
    rc = leveldb_bytes(n, bits_per_key, &bytes);
    if (rc != AMQ_OK)
        return rc;
    if (cap < bytes + 1)
        return AMQ_EINVAL;
    k = leveldb_k(bits_per_key);
    bits = (uint32_t)(bytes * 8);
    memset(array, 0, bytes);
    for (i = 0; i < n; i++) {
        h = amq_leveldb_hash(keys[i].data, keys[i].len, LEVELDB_SEED);
        delta = (h >> 17) | (h << 15);
        for (j = 0; j < k; j++) {
            uint32_t bitpos = h % bits;
            array[bitpos / 8] = (uint8_t)(array[bitpos / 8] | (1u << (bitpos % 8)));
            h += delta;
        }
    }
    array[bytes] = (uint8_t)k;
    *written = bytes + 1;
    return AMQ_OK;
}

int amq_policy_may_match(const void *blob, size_t len, const void *key, size_t key_len)
{
    const uint8_t *array = blob;
    uint32_t k, j, h, delta, bits;

    if (len < 2)
        return AMQ_ETRUNC;
    k = array[len - 1];
    if (k == POLICY_EXTENDED)
        return 1; /* no extended encoding is defined yet: may match */
    if (k == 0 || k > 30)
        return 1; /* reserved */
    if ((len - 1) > UINT32_MAX / 8)
        return 1; /* larger than LevelDB can write: not ours to judge */
    bits = (uint32_t)((len - 1) * 8);
    h = amq_leveldb_hash(key, key_len, LEVELDB_SEED);
    delta = (h >> 17) | (h << 15);
    for (j = 0; j < k; j++) {
        uint32_t bitpos = h % bits;
        if ((array[bitpos / 8] & (1u << (bitpos % 8))) == 0)
            return 0;
        h += delta;
    }
    return 1;
}
