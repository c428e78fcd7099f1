/*
 * fuzz_guava.c - Guava's BloomFilter format (amq/guava.h): the decoder on
 * arbitrary bytes, and encode -> decode round trips.
 *
 * Input: u8 mode.  Even: the rest is Guava bytes for amq_guava_deserialize (a
 * misaligned, exactly sized copy).  Odd: a round trip - u16 n, u16 rate,
 * u8 variant (which parameters differ from Guava's: none, the probe scheme,
 * the seed, a bit count that is not whole words), then keys as u8 length +
 * bytes.
 *
 * Properties of decode:
 *  - the status is exactly the one the format's rules give (amq/guava.h:
 *    AMQ_ETRUNC under 6 bytes or fewer bytes than the words need,
 *    AMQ_EUNSUPPORTED for strategy 0, AMQ_ECORRUPT for another strategy,
 *    k = 0, N <= 0 or bytes after the last word), or AMQ_ENOMEM above the
 *    allocator's cap; every error has a message and leaves nothing
 *    allocated and *out NULL;
 *  - an accepted filter encodes back to the very same bytes, and answers
 *    every probe as an independent reading of the bytes by Guava's rule
 *    (bit (h1 + i h2 & INT64_MAX) mod 64 N of the big-endian words, h1 and
 *    h2 MurmurHash3_x64_128 seed 0) does; keys added to it are found.
 * Properties of the round trip: a filter from amq_guava_params_for encodes
 * to 6 + 8 N bytes (a buffer one byte short is refused and not written
 * past) that decode to the same bit array, and every key added is found,
 * by the decoded filter and by the independent reading; filters Guava
 * cannot represent are refused with AMQ_EINCOMPAT by check, size and
 * encode alike.
 */
#include "amq/guava.h"
#define FZ_NO_CHECKSUM /* Guava's bytes have none */
#include "extreme.h"

#define FZ_GUAVA_CAP ((size_t)64 << 20)
#define MAX_KEYS 256

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Guava's mightContain, read straight off the serialized bytes. */
static int guava_might_contain(const uint8_t *bytes, size_t len, const void *key, size_t klen)
{
    uint32_t k = bytes[1], i;
    uint64_t words = (len - 6) / 8, m = words * 64, x, y, bit;
    amq_hash128 h = amq_hash_key(AMQ_HASH_MURMUR3, 0, key, klen);

    x = h.h1;
    y = h.h2;
    for (i = 0; i < k; i++, x += y) {
        bit = (x & (uint64_t)INT64_MAX) % m;
        if (((be64(bytes + 6 + (bit >> 6) * 8) >> (bit & 63)) & 1) == 0)
            return 0;
    }
    return 1;
}

/* The status the format's rules give for (p, len), before allocation. */
static int expected_status(const uint8_t *p, size_t len)
{
    int32_t n;
    uint64_t need;

    if (len < 6)
        return AMQ_ETRUNC;
    if (p[0] == 0)
        return AMQ_EUNSUPPORTED;
    if (p[0] != 1 || p[1] == 0)
        return AMQ_ECORRUPT;
    n = (int32_t)(((uint32_t)p[2] << 24) | ((uint32_t)p[3] << 16) | ((uint32_t)p[4] << 8) | p[5]);
    if (n <= 0)
        return AMQ_ECORRUPT;
    need = 6 + (uint64_t)n * 8;
    if ((uint64_t)len < need)
        return AMQ_ETRUNC;
    if ((uint64_t)len > need)
        return AMQ_ECORRUPT;
    return AMQ_OK;
}

static void decode_bytes(const uint8_t *data, size_t size)
{
    static const char *probes[] = {"", "a", "key-0", "key-1", "hello", "0123456789abcdef"};
    amq_allocator al;
    fz_alloc a;
    amq_errinfo err;
    amq_bloom *b = (amq_bloom *)&a; /* must be overwritten */
    uint8_t *copy, *out;
    void *base;
    size_t written = 0, esize = 0, i;
    int rc, want = expected_status(data, size);

    al = fz_allocator(&a, FZ_GUAVA_CAP);
    copy = fz_copy_at(data, size, 1, &base);
    memset(&err, 0, sizeof err);
    rc = amq_guava_deserialize(copy, size, &al, &b, &err);
    if (rc != AMQ_OK) {
        FZ_CHECK(rc == want || (want == AMQ_OK && rc == AMQ_ENOMEM),
                 "decode of %zu bytes: %s, the rules give %s", size, amq_status_name(rc),
                 amq_status_name(want));
        FZ_CHECK(b == NULL, "a refusal left *out set");
        FZ_CHECK(err.status == rc && err.msg[0] != '\0', "%s without a message",
                 amq_status_name(rc));
        FZ_CHECK_NO_LEAK(&a);
        free(base);
        return;
    }
    FZ_CHECK(want == AMQ_OK, "accepted %zu bytes that the rules refuse (%s)", size,
             amq_status_name(want));
    FZ_CHECK(memcmp(copy, data, size) == 0, "decode wrote to its input");

    /* Back to the same bytes. */
    FZ_CHECK(amq_guava_check(b, NULL) == AMQ_OK, "a decoded filter is not Guava's");
    FZ_CHECK(amq_guava_serialized_size(b, &esize, NULL) == AMQ_OK && esize == size,
             "encoded size %zu of a %zu-byte input", esize, size);
    out = malloc(size);
    FZ_CHECK(out != NULL, "out of memory");
    rc = amq_guava_serialize(b, out, size, &written, &err);
    FZ_CHECK(rc == AMQ_OK && written == size && memcmp(out, data, size) == 0,
             "decode -> encode is not the identity (%d, %zu bytes)", rc, written);

    /* Same answers as Guava's rule on the bytes; then adds are found. */
    for (i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        size_t kl = strlen(probes[i]);
        FZ_CHECK(amq_bloom_contains(b, probes[i], kl) == guava_might_contain(data, size,
                                                                           probes[i], kl),
                 "probe '%s' answers differently from Guava's rule", probes[i]);
    }
    for (i = 0; i + 8 <= size && i < 256; i += 8) {
        FZ_CHECK(amq_bloom_contains(b, data + i, 8) == guava_might_contain(data, size, data + i,
                                                                            8),
                 "key at %zu answers differently from Guava's rule", i);
    }
    /* Adds only after every comparison: the rule reads the original bytes. */
    for (i = 0; i + 8 <= size && i < 256; i += 8) {
        (void)amq_bloom_add(b, data + i, 8);
        FZ_CHECK(amq_bloom_contains(b, data + i, 8) == 1, "key at %zu added, not found", i);
    }
    rc = amq_guava_serialize(b, out, size, &written, &err);
    FZ_CHECK(rc == AMQ_OK, "encode after adds: %d", rc);
    for (i = 0; i + 8 <= size && i < 256; i += 8)
        FZ_CHECK(guava_might_contain(out, size, data + i, 8) == 1,
                 "key at %zu is not in the encoded bytes", i);
    free(out);
    amq_bloom_free(b);
    FZ_CHECK_NO_LEAK(&a);
    free(base);
}

static void round_trip(fz_in *in)
{
    amq_bloom_params p;
    amq_allocator al;
    fz_alloc a;
    amq_bloom *b, *d = NULL;
    amq_errinfo err;
    const uint8_t *key[MAX_KEYS];
    size_t klen[MAX_KEYS], nkeys = 0, size = 0, written = 0, i;
    uint64_t n = fz_u16(in);
    double rate = ((double)fz_u16(in) + 1.0) / 65537.0;
    unsigned variant = fz_u8(in) % 4u;
    uint8_t *buf;
    int rc;

    al = fz_allocator(&a, FZ_GUAVA_CAP);
    rc = amq_guava_params_for(n, rate, &p);
    if (rc != AMQ_OK) {
        FZ_CHECK(rc == AMQ_ERANGE, "params_for(%llu, %g): %d", (unsigned long long)n, rate, rc);
        return;
    }
    FZ_CHECK(p.bits % 64 == 0 && p.k >= 1 && p.k <= 255, "params_for gave %llu bits, k %u",
             (unsigned long long)p.bits, p.k);
    if (variant == 1)
        p.probe = AMQ_BLOOM_PROBE_NATIVE;
    else if (variant == 2)
        p.seed = 1;
    else if (variant == 3)
        p.bits -= 1;
    rc = amq_bloom_new(&p, &al, &b);
    FZ_CHECK(rc == AMQ_OK, "amq_bloom_new(Guava's parameters): %d", rc);
    while (in->n > 0 && nkeys < MAX_KEYS) {
        klen[nkeys] = fz_bytes(in, 64, &key[nkeys]);
        FZ_CHECK(amq_bloom_add(b, key[nkeys], klen[nkeys]) >= 0, "add");
        nkeys++;
    }
    if (variant != 0) {
        FZ_CHECK(amq_guava_check(b, &err) == AMQ_EINCOMPAT && err.msg[0] != '\0',
                 "variant %u passes the Guava check", variant);
        FZ_CHECK(amq_guava_serialized_size(b, &size, NULL) == AMQ_EINCOMPAT, "size of variant %u",
                 variant);
        FZ_CHECK(amq_guava_serialize(b, NULL, 0, &written, NULL) == AMQ_EINCOMPAT,
                 "encode of variant %u", variant);
        amq_bloom_free(b);
        FZ_CHECK_NO_LEAK(&a);
        return;
    }
    FZ_CHECK(amq_guava_serialized_size(b, &size, NULL) == AMQ_OK && size == 6 + p.bits / 8,
             "encoded size %zu for %llu bits", size, (unsigned long long)p.bits);
    buf = malloc(size);
    FZ_CHECK(buf != NULL, "out of memory");
    rc = amq_guava_serialize(b, buf, size - 1, &written, NULL);
    FZ_CHECK(rc == AMQ_EINVAL, "a buffer one byte short: %d", rc);
    rc = amq_guava_serialize(b, buf, size, &written, NULL);
    FZ_CHECK(rc == AMQ_OK && written == size, "encode: %d, %zu of %zu bytes", rc, written, size);
    FZ_CHECK(buf[0] == 1 && buf[1] == p.k, "header %u %u", buf[0], buf[1]);
    rc = amq_guava_deserialize(buf, size, &al, &d, &err);
    FZ_CHECK(rc == AMQ_OK, "decoding what encode wrote: %s", err.msg);
    FZ_CHECK(memcmp(amq_bloom_data(b), amq_bloom_data(d), (size_t)(p.bits / 8)) == 0,
             "the decoded bit array differs");
    for (i = 0; i < nkeys; i++) {
        FZ_CHECK(amq_bloom_contains(d, key[i], klen[i]) == 1, "key %zu lost", i);
        FZ_CHECK(guava_might_contain(buf, size, key[i], klen[i]) == 1,
                 "key %zu is not in the bytes by Guava's rule", i);
    }
    free(buf);
    amq_bloom_free(d);
    amq_bloom_free(b);
    FZ_CHECK_NO_LEAK(&a);
}

/* extreme.h: Guava's header (strategy, k, the big-endian word count) and the
 * first words; the round trip's counts in odd mode.  No checksum. */
static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max)
{
    (void)data;
    if (size < 2 || max < 1)
        return 0;
    spans[0] = (fz_span){1, size - 1 < 32 ? size - 1 : 32, 1, (data[0] & 1) ? 0 : 1};
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t mode = fz_u8(&in);

    if (mode & 1)
        round_trip(&in);
    else
        decode_bytes(in.p, in.n);
    return 0;
}
