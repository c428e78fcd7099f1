/*
 * guava.c - Guava's BloomFilter byte format (writeTo / readFrom).
 *
 * Guava's long[] words hold bit i at 1L << (i & 63) of word i >> 6, which
 * is exactly amq_bloom's layout once the words are little-endian bytes; the
 * codec only swaps each word between big-endian (the stream) and
 * little-endian (the filter).  Sizing follows BloomFilter.create in Guava
 * 31: numBits = (long)(-n * log(p) / (log(2) * log(2))), numHashFunctions =
 * max(1, round(numBits / n * log(2))), and LockFreeBitArray rounds numBits up
 * to whole words (the modulus Guava probes with is 64 * words).
 */
#include <math.h>
#include <string.h>

#include "amq/guava.h"
#include "common/endian.h"
#include "common/error.h"

#define GUAVA_MAX_WORDS ((uint64_t)INT32_MAX)

int amq_guava_params_for(uint64_t n, double p, amq_bloom_params *params)
{
    double ln2 = log(2.0), bits_d, k_d;
    uint64_t bits, words;

    if (!(p > 0.0 && p < 1.0))
        return AMQ_ERANGE;
    if (n == 0)
        n = 1; /* as Guava: "expectedInsertions == 0" becomes 1 */
    bits_d = -(double)n * log(p) / (ln2 * ln2);
    if (!(bits_d >= 1.0 && bits_d < (double)(GUAVA_MAX_WORDS * 64)))
        return AMQ_ERANGE; /* Guava: "data length is zero" / checkedCast */
    bits = (uint64_t)bits_d; /* Java's (long) truncates */
    words = (bits + 63) / 64;
    k_d = round((double)bits / (double)n * ln2);
    if (k_d < 1.0)
        k_d = 1.0;
    if (k_d > 255.0)
        return AMQ_ERANGE; /* Guava: numHashFunctions <= 255 */
    memset(params, 0, sizeof *params);
    params->bits = words * 64;
    params->k = (uint32_t)k_d;
    params->probe = AMQ_BLOOM_PROBE_GUAVA;
    params->hash_algo = AMQ_HASH_MURMUR3;
    params->seed = 0;
    params->capacity = n;
    params->fpp = p;
    return AMQ_OK;
}

int amq_guava_deserialize(const void *buf, size_t len, const amq_allocator *alloc,
                     amq_bloom **out, amq_errinfo *err)
{
    const uint8_t *in = buf;
    amq_bloom_params p;
    amq_bloom *b = NULL;
    uint8_t *data;
    uint32_t ordinal, k;
    int32_t nwords;
    uint64_t words, i, need;
    double est;
    int rc;

    *out = NULL;
    if (in == NULL && len > 0)
        return amq_err(err, AMQ_EINVAL, "no buffer");
    if (len < AMQ_GUAVA_HEADER_BYTES)
        return amq_err(err, AMQ_ETRUNC,
                       "truncated Guava filter: %zu bytes, the header alone is %u", len,
                       AMQ_GUAVA_HEADER_BYTES);
    ordinal = in[0];
    k = in[1];
    nwords = (int32_t)amq_load32be(in + 2);
    if (ordinal == 0)
        return amq_err(err, AMQ_EUNSUPPORTED,
                       "Guava strategy MURMUR128_MITZ_32 (ordinal 0) is not supported; only "
                       "MURMUR128_MITZ_64 (ordinal 1)");
    if (ordinal != AMQ_GUAVA_MITZ_64)
        return amq_err(err, AMQ_ECORRUPT,
                       "not a Guava Bloom filter: unknown strategy ordinal %u (expected 1, "
                       "MURMUR128_MITZ_64)", ordinal);
    if (k == 0)
        return amq_err(err, AMQ_ECORRUPT, "corrupt Guava filter: 0 hash functions");
    if (nwords <= 0)
        return amq_err(err, AMQ_ECORRUPT, "corrupt Guava filter: %ld data words",
                       (long)nwords);
    words = (uint64_t)nwords;
    /* words <= 2^31 - 1, so need fits 64 bits and the size check is exact. */
    need = AMQ_GUAVA_HEADER_BYTES + words * 8;
    if ((uint64_t)len < need)
        return amq_err(err, AMQ_ETRUNC,
                       "truncated Guava filter: %zu bytes, %llu data words need %llu", len,
                       (unsigned long long)words, (unsigned long long)need);
    if ((uint64_t)len > need)
        return amq_err(err, AMQ_ECORRUPT,
                       "corrupt Guava filter: %llu bytes after its last data word",
                       (unsigned long long)((uint64_t)len - need));

    memset(&p, 0, sizeof p);
    p.bits = words * 64;
    p.k = k;
    p.probe = AMQ_BLOOM_PROBE_GUAVA;
    p.hash_algo = AMQ_HASH_MURMUR3;
    p.seed = 0;
    rc = amq_bloom_new(&p, alloc, &b);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "cannot create a Bloom filter of %llu bits: %s",
                       (unsigned long long)p.bits, amq_strerror(rc));
    data = amq_bloom_data_mut(b);
    for (i = 0; i < words; i++)
        amq_store64(data + i * 8, amq_load64be(in + AMQ_GUAVA_HEADER_BYTES + i * 8));
    /* Guava's approximateElementCount: -ln(1 - X/m) m / k. */
    est = amq_bloom_estimate_items(b);
    amq_bloom_set_items(b, est < (double)p.bits ? (uint64_t)llround(est) : p.bits);
    *out = b;
    return AMQ_OK;
}

int amq_guava_check(const amq_bloom *b, amq_errinfo *err)
{
    amq_bloom_params p;

    amq_bloom_get_params(b, &p);
    if (p.probe != AMQ_BLOOM_PROBE_GUAVA)
        return amq_err(err, AMQ_EINCOMPAT,
                       "the filter uses the %s probe scheme; Guava's format needs Guava's "
                       "(a filter imported from Guava or built with --guava)",
                       p.probe == AMQ_BLOOM_PROBE_REDISBLOOM ? "RedisBloom" : "native");
    if (p.hash_algo != AMQ_HASH_MURMUR3 || p.seed != 0)
        return amq_err(err, AMQ_EINCOMPAT,
                       "the filter hashes with %s seed %llu; Guava's format needs murmur3 "
                       "seed 0", amq_hash_algo_name(p.hash_algo) ? amq_hash_algo_name(p.hash_algo)
                                                                 : "an unknown hash",
                       (unsigned long long)p.seed);
    if (p.bits % 64 != 0 || p.bits / 64 > GUAVA_MAX_WORDS)
        return amq_err(err, AMQ_EINCOMPAT,
                       "the filter has %llu bits; Guava's format needs a whole number of "
                       "64-bit words, at most 2^31 - 1", (unsigned long long)p.bits);
    if (p.k > 255)
        return amq_err(err, AMQ_EINCOMPAT, "the filter has %u probes; Guava allows 255",
                       p.k);
    return AMQ_OK;
}

int amq_guava_serialized_size(const amq_bloom *b, size_t *size, amq_errinfo *err)
{
    amq_bloom_params p;
    int rc = amq_guava_check(b, err);

    if (rc != AMQ_OK)
        return rc;
    amq_bloom_get_params(b, &p);
    /* At most 6 + 8 (2^31 - 1) bytes: fits a 64-bit size_t; check for
     * 32-bit hosts. */
    if (p.bits / 64 > (SIZE_MAX - AMQ_GUAVA_HEADER_BYTES) / 8)
        return amq_err(err, AMQ_EOVERFLOW, "the filter is too large for this host");
    *size = AMQ_GUAVA_HEADER_BYTES + (size_t)(p.bits / 64) * 8;
    return AMQ_OK;
}

int amq_guava_serialize(const amq_bloom *b, void *buf, size_t cap, size_t *written,
                     amq_errinfo *err)
{
    amq_bloom_params p;
    const uint8_t *data;
    uint8_t *o = buf;
    size_t size, i, words;
    int rc;

    rc = amq_guava_serialized_size(b, &size, err);
    if (rc != AMQ_OK)
        return rc;
    if (o == NULL || cap < size)
        return amq_err(err, AMQ_EINVAL, "buffer of %zu bytes is too small for %zu", cap, size);
    amq_bloom_get_params(b, &p);
    words = (size_t)(p.bits / 64);
    data = amq_bloom_data(b);
    o[0] = (uint8_t)AMQ_GUAVA_MITZ_64;
    o[1] = (uint8_t)p.k;
    amq_store32be(o + 2, (uint32_t)words);
    for (i = 0; i < words; i++)
        amq_store64be(o + AMQ_GUAVA_HEADER_BYTES + i * 8, amq_load64(data + i * 8));
    if (written != NULL)
        *written = size;
    return AMQ_OK;
}
