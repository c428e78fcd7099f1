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

#define FZ_SD_FILTER amq_sbloom
#define FZ_SD_CHUNK amq_sbloom_chunk
#define FZ_SD_APPLY amq_sbloom_chunk_apply
#define FZ_SD_WHAT "bits"
#include "scandump.h"

#define MAX_KEYS 128

static uint64_t fz_sd_sum(const amq_sbloom *s)
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

/* SCANDUMP of s, loaded back by LOADCHUNK, gives the same bits. */
static void dump_and_reload(const amq_sbloom *s, const amq_allocator *al, size_t max_chunk)
{
    size_t hlen = amq_sbloom_header_serialized_size(s);
    uint8_t *hdr = malloc(hlen);
    amq_sbloom *d;
    amq_sbloom_info info;
    amq_sbloom_link_info l;
    const uint8_t *data;
    uint64_t total = 0;
    uint32_t j;
    int rc;

    FZ_CHECK(hdr != NULL, "out of memory");
    FZ_CHECK(amq_sbloom_header_serialize(s, hdr, hlen) == AMQ_OK, "header_encode failed");
    rc = amq_sbloom_header_deserialize(hdr, hlen, al, &d);
    free(hdr);
    if (rc == AMQ_ENOMEM)
        return;
    FZ_CHECK(rc == AMQ_OK, "an encoded header does not load: %d", rc);
    amq_sbloom_get_info(s, &info);
    for (j = 0; j < info.links; j++) {
        amq_sbloom_link(s, j, &l, &data);
        total += l.bytes;
    }
    fz_sd_reload(s, d, max_chunk, total);
    amq_sbloom_free(d);
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

    al = fz_sd_allocator(&a);
    hlen = fz_sd_header(&in, &hdr);
    rc = amq_sbloom_header_deserialize(hdr, hlen, &al, &s);
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

    fz_sd_load_chunks(s, &in);
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
