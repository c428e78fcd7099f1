/*
 * amq/guava.h - Guava's BloomFilter byte format, read and written.
 *
 * Java services persist com.google.common.hash.BloomFilter objects with
 * writeTo(OutputStream); these functions turn such bytes into a classic
 * amq_bloom filter that answers exactly as Guava's mightContain would, and
 * back.  Only filters of strategy MURMUR128_MITZ_64 (ordinal 1, Guava's
 * default since version 12) are handled; keys are the bytes Guava's funnel
 * feeds the hash - for Funnels.stringFunnel(UTF_8), the key's UTF-8 bytes.
 *
 * The format (big-endian, DataOutputStream):
 *   u8   strategy ordinal (1)
 *   u8   k, the number of hash functions (1..255)
 *   s32  N, the number of 64-bit words (> 0)
 *   N x u64  the bit array: bit i is bit (i & 63) of word i >> 6
 * so a filter is 6 + 8 N bytes.  Guava tests bit (c & INT64_MAX) mod 64 N
 * for c = h1, h1 + h2, ... (k values) where h1, h2 are MurmurHash3_x64_128
 * of the key with seed 0: the amq_bloom probe scheme AMQ_BLOOM_PROBE_GUAVA
 * with hash AMQ_HASH_MURMUR3 seed 0 over m = 64 N bits.
 *
 * Thread safety: the functions keep no state; amq_guava_serialize reads its
 * filter (safe with other readers, not with a concurrent add).
 */
#ifndef AMQ_GUAVA_H
#define AMQ_GUAVA_H

#include "amq/common.h"
#include "amq/bloom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Guava's strategy ordinal for MURMUR128_MITZ_64, and the header size. */
#define AMQ_GUAVA_MITZ_64 1u
#define AMQ_GUAVA_HEADER_BYTES 6u

/*
 * Parameters of the filter Guava's BloomFilter.create(funnel, n, p) makes:
 * bits = floor(-n ln p / (ln 2)^2) rounded up to whole 64-bit words,
 * k = max(1, round(floor(-n ln p / (ln 2)^2) / n * ln 2)); n = 0 counts as
 * 1, as in Guava.  Fills params (probe AMQ_BLOOM_PROBE_GUAVA, hash
 * AMQ_HASH_MURMUR3 seed 0, capacity n, fpp p).  n = 1,000,000, p = 0.01
 * give 9,585,088 bits (149,767 words) and k = 7.  AMQ_ERANGE when p is not
 * in (0, 1) or Guava would refuse the size (0 bits, more than 2^31 - 1
 * words, k above 255).  O(1).
 */
AMQ_API int amq_guava_params_for(uint64_t n, double p, amq_bloom_params *params);

/*
 * Decodes Guava bytes (buf, len) into a new writable classic filter
 * (*out, to free with amq_bloom_free).  Everything is validated: AMQ_ETRUNC
 * (fewer bytes than the header or the word count needs), AMQ_EUNSUPPORTED
 * (strategy MURMUR128_MITZ_32, ordinal 0), AMQ_ECORRUPT (unknown strategy,
 * k = 0, N <= 0, bytes after the last word), AMQ_ENOMEM; err (may be NULL)
 * says which.  The filter's item count is Guava's approximateElementCount
 * (the Swamidass-Baldi estimate from the bits set); capacity and fpp are
 * not in the format and read 0 (unknown).  alloc may be NULL.  O(len).
 */
AMQ_API int amq_guava_deserialize(const void *buf, size_t len, const amq_allocator *alloc,
                             amq_bloom **out, amq_errinfo *err);

/*
 * AMQ_OK if b can be written in Guava's format: probe scheme
 * AMQ_BLOOM_PROBE_GUAVA, hash AMQ_HASH_MURMUR3 with seed 0, a bit count
 * that is a whole number (1 .. 2^31 - 1) of 64-bit words.  Else
 * AMQ_EINCOMPAT, with err saying what differs.  O(1).
 */
AMQ_API int amq_guava_check(const amq_bloom *b, amq_errinfo *err);

/* Bytes amq_guava_serialize writes for b: 6 + 8 N.  AMQ_OK, AMQ_EINCOMPAT as
 * amq_guava_check. */
AMQ_API int amq_guava_serialized_size(const amq_bloom *b, size_t *size, amq_errinfo *err);

/*
 * Writes b in Guava's format into buf (cap bytes, at least
 * amq_guava_serialized_size); *written (may be NULL) receives the length.
 * AMQ_EINCOMPAT as amq_guava_check, AMQ_EINVAL for a short buffer.  Guava's
 * BloomFilter.readFrom reads the bytes back into a filter whose
 * mightContain answers as amq_bloom_contains does on b.  O(bits / 64).
 */
AMQ_API int amq_guava_serialize(const amq_bloom *b, void *buf, size_t cap, size_t *written,
                             amq_errinfo *err);

#ifdef __cplusplus
}
#endif

#include "amq/compat.h" /* the old names, until 0.4 */

#endif /* AMQ_GUAVA_H */
