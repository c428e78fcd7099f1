/*
 * fuzz_scandump_bf.c - the RedisBloom BF dump decoders, as BF.LOADCHUNK
 * drives them: amq_sbloom_header_deserialize, then data chunks through
 * amq_sbloom_chunk_apply, then adds and queries on the result.
 *
 * Input: u16 header length H, H header bytes, then chunk records (u64
 * iterator, u16 length, bytes) up to one with iterator 0, then keys to add
 * (u8 length + bytes).  Properties: every refusal is a status with nothing
 * allocated or changed (a refused chunk leaves the bits as they were); a
 * loaded header re-encodes to the same bytes; whatever bits were loaded,
 * adds never crash and every key whose add succeeded is found; SCANDUMP
 * of the result loads back to the same bits; nothing leaks.
 */
#include "amq/scalable_bloom.h"
#define FZ_NO_CHECKSUM /* a dump has none */
#include "extreme.h"

#define CAP ((size_t)4 << 20)
#define MAX_KEYS 128

static uint64_t bits_sum(const amq_sbloom *s)
{
    amq_sbloom_info in;
    amq_sbloom_link_info l;
    const uint8_t *data;
    uint64_t sum = 0;
    uint32_t i;

    amq_sbloom_get_info(s, &in);
    for (i = 0; i < in.links; i++)
        if (amq_sbloom_link(s, i, &l, &data) == AMQ_OK)
            sum = sum * 31 + amq_xxh3_64(data, (size_t)l.bytes, i);
    return sum;
}

static void dump_and_reload(const amq_sbloom *s, const amq_allocator *al, size_t max_chunk)
{
    size_t hlen = amq_sbloom_header_serialized_size(s), len;
    uint8_t *hdr = malloc(hlen);
    amq_sbloom *d;
    const uint8_t *data;
    uint64_t it, next;
    int rc;

    FZ_CHECK(hdr != NULL, "out of memory");
    FZ_CHECK(amq_sbloom_header_serialize(s, hdr, hlen) == AMQ_OK, "header_encode failed");
    rc = amq_sbloom_header_deserialize(hdr, hlen, al, &d);
    free(hdr);
    if (rc == AMQ_ENOMEM)
        return;
    FZ_CHECK(rc == AMQ_OK, "an encoded header does not load: %d", rc);
    /* At most about 1024 chunks: a 1-byte chunk size over megabytes of
     * arrays would only make the target slow (timeouts), not find more. */
    {
        amq_sbloom_info info;
        amq_sbloom_link_info l;
        uint64_t total = 0;
        uint32_t j;
        amq_sbloom_get_info(s, &info);
        for (j = 0; j < info.links; j++) {
            amq_sbloom_link(s, j, &l, &data);
            total += l.bytes;
        }
        if (max_chunk < total / 1024)
            max_chunk = (size_t)(total / 1024) + 1;
    }
    for (it = 1;; it = next) {
        rc = amq_sbloom_chunk(s, it, max_chunk, &data, &len, &next);
        FZ_CHECK(rc == AMQ_OK, "chunk %llu: %d", (unsigned long long)it, rc);
        if (len == 0)
            break;
        FZ_CHECK(len <= max_chunk && next == it + len, "chunk %llu: %zu bytes, next %llu",
                 (unsigned long long)it, len, (unsigned long long)next);
        rc = amq_sbloom_chunk_apply(d, next, data, len);
        FZ_CHECK(rc == AMQ_OK, "reloading chunk %llu: %d", (unsigned long long)next, rc);
    }
    FZ_CHECK(bits_sum(s) == bits_sum(d), "SCANDUMP/LOADCHUNK changed the bits");
    amq_sbloom_free(d);
}

/* extreme.h: the header's fields, then the first chunks' iterators and
 * lengths (no checksum: nothing to sign). */
static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max)
{
    size_t hlen, n = 0;

    if (size < 2 || max < 2)
        return 0;
    hlen = (size_t)data[0] | (size_t)data[1] << 8;
    if (hlen > size - 2)
        hlen = size - 2;
    if (hlen > 0)
        spans[n++] = (fz_span){2, hlen, 4, 0};
    if (size - 2 - hlen > 0)
        spans[n++] = (fz_span){2 + hlen, size - 2 - hlen < 64 ? size - 2 - hlen : 64, 1, 0};
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    amq_sbloom *s = NULL;
    amq_allocator al;
    fz_alloc a;
    const uint8_t *key[MAX_KEYS], *hdr;
    size_t klen[MAX_KEYS], n = 0, hlen, i;
    uint8_t *again;
    int rc;

    al = fz_allocator(&a, CAP);
    /* A header may declare hundreds of MiB in small blocks (the module
     * checks such sizes against the server's memory); 64 MiB in all here. */
    a.total_cap = (size_t)64 << 20;
    hlen = fz_u16(&in);
    if (hlen > in.n)
        hlen = in.n;
    hdr = in.p;
    rc = amq_sbloom_header_deserialize(hdr, hlen, &al, &s);
    in.p += hlen;
    in.n -= hlen;
    if (rc != AMQ_OK) {
        FZ_CHECK(rc == AMQ_ETRUNC || rc == AMQ_ECORRUPT || rc == AMQ_EUNSUPPORTED ||
                     rc == AMQ_ENOMEM,
                 "header_load: %d", rc);
        FZ_CHECK(s == NULL, "header_load failed but left a filter");
        FZ_CHECK_NO_LEAK(&a);
        return 0;
    }
    /* The header it was built from is the header it writes. */
    FZ_CHECK(amq_sbloom_header_serialized_size(s) == hlen, "header of %zu bytes re-encodes to %zu", hlen,
             amq_sbloom_header_serialized_size(s));
    again = malloc(hlen);
    FZ_CHECK(again != NULL && amq_sbloom_header_serialize(s, again, hlen) == AMQ_OK,
             "header_encode failed");
    FZ_CHECK(memcmp(again, hdr, hlen) == 0, "a loaded header re-encodes to other bytes");
    free(again);

    while (in.n >= 10) {
        uint64_t it = fz_u64(&in), before;
        size_t len = fz_u16(&in);
        if (it == 0)
            break;
        if (len > in.n)
            len = in.n;
        before = bits_sum(s);
        rc = amq_sbloom_chunk_apply(s, it, in.p, len);
        FZ_CHECK(rc == AMQ_OK || rc == AMQ_ERANGE || rc == AMQ_EOVERFLOW, "chunk_apply: %d", rc);
        if (rc != AMQ_OK)
            FZ_CHECK(bits_sum(s) == before, "a refused chunk changed the bits");
        in.p += len;
        in.n -= len;
    }
    dump_and_reload(s, &al, 1 + (size % 300));

    while (in.n > 0 && n < MAX_KEYS) {
        klen[n] = fz_bytes(&in, 32, &key[n]);
        rc = amq_sbloom_add(s, key[n], klen[n]);
        FZ_CHECK(rc == 0 || rc == 1 || rc == AMQ_EFULL || rc == AMQ_ELIMIT || rc == AMQ_ENOMEM,
                 "add: %d", rc);
        if (rc >= 0)
            n++;
        for (i = 0; i < n; i++)
            FZ_CHECK(amq_sbloom_contains(s, key[i], klen[i]) == 1, "added key %zu missing", i);
    }
    amq_sbloom_free(s);
    FZ_CHECK_NO_LEAK(&a);
    return 0;
}
