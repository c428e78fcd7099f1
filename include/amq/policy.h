/*
 * amq/policy.h - the LevelDB-style filter policy: a self-describing Bloom
 * blob built from a list of keys.
 *
 * A "filter blob" summarizes a list of keys (one SST block's keys in an LSM
 * tree) in a self-describing string; asking a blob never needs anything but
 * the blob.  The last byte says how to read it:
 *
 *  1..30   AMQ_POLICY_LEVELDB: the exact encoding of LevelDB's
 *          BloomFilterPolicy - the bit array, then k.  Keys hash with
 *          LevelDB's 32-bit hash (seed 0xbc9f1d34), probes by its
 *          rotating double hashing, bit position = h mod bits.  Blobs built
 *          by LevelDB read here and the other way round.
 *  255     an extended encoding: the byte before it is the encoding id,
 *          laid out in docs/file-format.md.  Unknown ids answer "may match"
 *          (forward compatible).  Defined: id 1, AMQ_POLICY_BLOCKED;
 *          id 2, AMQ_POLICY_FUSE; id 3, AMQ_POLICY_RIBBON.
 *  others  reserved: answer "may match".
 *
 * AMQ_POLICY_BLOCKED (id 1) is a blocked Bloom filter (amq/blocked_bloom.h):
 * B 64-byte blocks, then k, the id and 255.  Keys hash with XXH3-128 seed
 * 0; a query reads one 64-byte block.  Its rate is the blocked layout's
 * (0.97 % at 10 bits per key, where LevelDB's encoding gives 0.82 % but
 * touches k scattered cache lines).
 *
 * AMQ_POLICY_FUSE (id 2) and AMQ_POLICY_RIBBON (id 3) hold one partition
 * of the static kinds (amq/static.h) and an 18-byte trailer.  bits_per_key
 * picks the variant: fuse has 8-bit fingerprints below 18 bits per key
 * (about 9 bits per key, rate 1/256), 16-bit from 18 on; ribbon takes the
 * rate a Bloom filter of bits_per_key would have, in about 70 % of its
 * space.  amq_policy_blob_size is then an upper bound: the blob written
 * (*written) is usually smaller.  Their builds allocate (about 40 bytes
 * per key, freed before returning: AMQ_ENOMEM) and AMQ_EFULL is possible
 * in principle (eight constructions failed), never seen.
 *
 * Thread safety: the functions keep no state and only read their inputs:
 * any thread, any time.
 */
#ifndef AMQ_POLICY_H
#define AMQ_POLICY_H

#include "amq/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum amq_policy_encoding {
    AMQ_POLICY_LEVELDB = 0,
    AMQ_POLICY_BLOCKED = 1,
    AMQ_POLICY_FUSE = 2,  /* binary fuse (amq/static.h), 3-wise */
    AMQ_POLICY_RIBBON = 3 /* standard Ribbon (amq/static.h) */
} amq_policy_encoding;

/* The policy's name, as a table records which policy wrote its filter
 * blocks (LevelDB's FilterPolicy::Name): "leveldb.BuiltinBloomFilter2",
 * "amq.BlockedBloomFilter", "amq.BinaryFuseFilter", "amq.RibbonFilter";
 * NULL for an unknown encoding. */
AMQ_API const char *amq_policy_name(uint32_t encoding);

/* Size of the blob that amq_policy_build writes for n keys at bits_per_key:
 * AMQ_OK, AMQ_ERANGE (bits_per_key outside (0, 1000], or a blob larger
 * than the encoding can address), AMQ_EINVAL (an unknown encoding). */
AMQ_API int amq_policy_blob_size(uint32_t encoding, size_t n, double bits_per_key,
                                 size_t *size);

/*
 * Builds a blob for keys[0..n) into out (cap bytes, at least
 * amq_policy_blob_size); *written receives its length.  bits_per_key in
 * (0, 1000]; AMQ_ERANGE otherwise, AMQ_EINVAL for a short buffer or an
 * unknown encoding.
 */
AMQ_API int amq_policy_build(uint32_t encoding, const amq_slice *keys, size_t n,
                             double bits_per_key, void *out, size_t cap, size_t *written);

/*
 * Asks a blob about a key.  AMQ_OK with *maybe = 1 (the key may be among
 * the blob's keys) or 0 (it certainly is not); blobs of an encoding this
 * library does not know answer 1 (forward compatible).  Errors, *maybe
 * unwritten: AMQ_ETRUNC (a blob too short to hold its own description),
 * AMQ_ECORRUPT (a blocked blob whose length or k is impossible, a fuse or
 * ribbon blob whose trailer disagrees with its length).  The
 * status is never 1, so `if (amq_policy_contains(...))` tests for an
 * error, not for a match.  O(k).
 */
AMQ_API int amq_policy_contains(const void *blob, size_t len, const void *key, size_t key_len,
                                int *maybe);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_POLICY_H */
