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
 *
 * Extended encoding 1, AMQ_POLICY_BLOCKED: a blocked Bloom filter
 * (amq/blocked_bloom.h) - one 64-byte block per key, all probes in it:
 *
 *   offset      size      field
 *   0           64 B      block 0 ... block B-1 (B >= 1), 64 bytes each
 *   64 B        1         k, probes per key (1..16)
 *   64 B + 1    1         encoding id: 1
 *   64 B + 2    1         255 (extended encoding marker)
 *
 * B is (length - 3) / 64; a length that is not 3 + 64 B with B >= 1, or a
 * k outside 1..16, is corrupt (AMQ_ECORRUPT).  A key is hashed with XXH3-128
 * seed 0 into (h1, h2) = (low, high 64 bits); its block is (h1 * B) >> 64,
 * probe i sets bit (u * C[i] mod 2^32) >> 23 of the block with u the low 32
 * bits of h2 and C[] the blocked filter's multipliers; bit b of a block is
 * bit b & 7 of its byte b >> 3.  The B * 64 bytes are exactly the bit array
 * of an amq blocked filter of B blocks, k probes, XXH3 seed 0 holding the
 * same keys.  Sizing: B = max(1, ceil(n * bits_per_key / 512)), k the
 * best for that load (amq_blocked_blocks_for_bpk).  No alignment is required of a
 * blob: it is read byte by byte.
 */
#include <math.h>
#include <string.h>

#include "amq/blocked_bloom.h"
#include "amq/bloom.h"
#include "amq/policy.h"
#include "blocked_impl.h"
#include "static_filter.h"

#define LEVELDB_SEED 0xbc9f1d34u
#define POLICY_EXTENDED 255u
#define BLOCKED_TRAILER 3u /* k, id, 255 */

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

static int blocked_geometry(size_t n, double bits_per_key, uint64_t *blocks, uint32_t *k)
{
    /* An empty list still gets one block (and answers "no" to everything). */
    return amq_blocked_blocks_for_bpk(n > 0 ? n : 1, bits_per_key, blocks, k);
}

/* The algorithm of a static encoding (AMQ_POLICY_FUSE or AMQ_POLICY_RIBBON). */
static const amq_static_algo *static_algo(uint32_t encoding)
{
    return encoding == AMQ_POLICY_FUSE ? &amq_fuse_algo : &amq_ribbon_algo;
}

int amq_policy_blob_size(uint32_t encoding, size_t n, double bits_per_key, size_t *size)
{
    if (encoding == AMQ_POLICY_FUSE || encoding == AMQ_POLICY_RIBBON)
        return amq_static_blob_size(static_algo(encoding), n, bits_per_key, size);
    size_t bytes;
    uint64_t blocks;
    uint32_t k;
    int rc;

    if (encoding == AMQ_POLICY_BLOCKED) {
        rc = blocked_geometry(n, bits_per_key, &blocks, &k);
        if (rc != AMQ_OK)
            return rc;
        if (blocks > (SIZE_MAX - BLOCKED_TRAILER) / 64)
            return AMQ_ERANGE;
        *size = (size_t)blocks * 64 + BLOCKED_TRAILER;
        return AMQ_OK;
    }
    if (encoding != AMQ_POLICY_LEVELDB)
        return AMQ_EINVAL;
    rc = leveldb_bytes(n, bits_per_key, &bytes);
    if (rc != AMQ_OK)
        return rc;
    *size = bytes + 1;
    return AMQ_OK;
}

static int build_blocked(const amq_slice *keys, size_t n, double bits_per_key, uint8_t *out,
                         size_t cap, size_t *written)
{
    uint64_t blocks;
    uint32_t k, i;
    size_t j, len;
    int rc;

    rc = blocked_geometry(n, bits_per_key, &blocks, &k);
    if (rc != AMQ_OK)
        return rc;
    if (blocks > (SIZE_MAX - BLOCKED_TRAILER) / 64)
        return AMQ_ERANGE;
    len = (size_t)blocks * 64;
    if (cap < len + BLOCKED_TRAILER)
        return AMQ_EINVAL;
    memset(out, 0, len);
    for (j = 0; j < n; j++) {
        amq_hash128 h = amq_blk_hash(AMQ_HASH_XXH3, 0, keys[j].data, keys[j].len);
        uint8_t *blk = out + amq_blk_index(h.h1, blocks) * 64;
        uint32_t u = amq_blk_u(h);
        for (i = 0; i < k; i++) {
            uint32_t p = amq_blk_probe(u, i);
            blk[p >> 3] = (uint8_t)(blk[p >> 3] | (1u << (p & 7)));
        }
    }
    out[len] = (uint8_t)k;
    out[len + 1] = (uint8_t)AMQ_POLICY_BLOCKED;
    out[len + 2] = (uint8_t)POLICY_EXTENDED;
    *written = len + BLOCKED_TRAILER;
    return AMQ_OK;
}

static int match_blocked(const uint8_t *blob, size_t len, const void *key, size_t key_len)
{
    size_t data;
    uint32_t k;
    amq_hash128 h;

    if (len < BLOCKED_TRAILER)
        return AMQ_ETRUNC;
    data = len - BLOCKED_TRAILER;
    k = blob[data];
    if (data == 0 || data % 64 != 0 || k == 0 || k > AMQ_BLOCKED_MAX_K)
        return AMQ_ECORRUPT;
    h = amq_blk_hash(AMQ_HASH_XXH3, 0, key, key_len);
    return amq_blk_test_bytes(blob + amq_blk_index(h.h1, data / 64) * 64, amq_blk_u(h), k);
}

int amq_policy_build(uint32_t encoding, const amq_slice *keys, size_t n, double bits_per_key,
                     void *out, size_t cap, size_t *written)
{
    uint8_t *array = out;
    size_t bytes, i;
    uint32_t k, j, h, delta, bits;
    int rc;

    if (encoding == AMQ_POLICY_BLOCKED)
        return build_blocked(keys, n, bits_per_key, out, cap, written);
    if (encoding == AMQ_POLICY_FUSE || encoding == AMQ_POLICY_RIBBON)
        return amq_static_blob_build(static_algo(encoding), encoding, keys, n, bits_per_key, out,
                                     cap, written);
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

static int blob_contains(const void *blob, size_t len, const void *key, size_t key_len)
{
    const uint8_t *array = blob;
    uint32_t k, j, h, delta, bits;

    if (len < 2)
        return AMQ_ETRUNC;
    k = array[len - 1];
    if (k == POLICY_EXTENDED) {
        if (array[len - 2] == AMQ_POLICY_BLOCKED)
            return match_blocked(array, len, key, key_len);
        if (array[len - 2] == AMQ_POLICY_FUSE || array[len - 2] == AMQ_POLICY_RIBBON)
            return amq_static_blob_match(static_algo(array[len - 2]), array, len, key, key_len);
        return 1; /* an encoding this library does not know: may match */
    }
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

const char *amq_policy_name(uint32_t encoding)
{
    switch (encoding) {
    case AMQ_POLICY_LEVELDB:
        return "leveldb.BuiltinBloomFilter2";
    case AMQ_POLICY_BLOCKED:
        return "amq.BlockedBloomFilter";
    case AMQ_POLICY_FUSE:
        return "amq.BinaryFuseFilter";
    case AMQ_POLICY_RIBBON:
        return "amq.RibbonFilter";
    default:
        return NULL;
    }
}

int amq_policy_contains(const void *blob, size_t len, const void *key, size_t key_len, int *maybe)
{
    int r = blob_contains(blob, len, key, key_len);
    if (r < 0)
        return r;
    *maybe = r;
    return AMQ_OK;
}
