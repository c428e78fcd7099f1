/*
 * scandump.h - what the SCANDUMP targets (fuzz_scandump_bf, fuzz_scandump_cf)
 * share: the front of their input, its chunk records given to LOADCHUNK, and
 * a filter's SCANDUMP loaded back chunk by chunk.  A target file names its
 * filter type and functions, then includes this:
 *
 *     #define FZ_SD_FILTER amq_sbloom
 *     #define FZ_SD_CHUNK amq_sbloom_chunk        (SCANDUMP: it, max, &data, &len, &next)
 *     #define FZ_SD_APPLY amq_sbloom_chunk_apply  (LOADCHUNK: it, data, len)
 *     #define FZ_SD_WHAT "bits"                   (what fz_sd_sum sums, for messages)
 *
 * and defines static uint64_t fz_sd_sum(const FZ_SD_FILTER *f), a hash of
 * the filter's arrays.
 *
 * Input: u16 header length H, H header bytes, then chunk records (u64
 * iterator, u16 length, bytes) up to one with iterator 0, then what the
 * target reads after them.  A dump has no checksum: extreme.h's mutator
 * writes into the header and the first chunk records, nothing is signed.
 */
#ifndef AMQ_FUZZ_SCANDUMP_H
#define AMQ_FUZZ_SCANDUMP_H

#define FZ_NO_CHECKSUM
#include "extreme.h"

static uint64_t fz_sd_sum(const FZ_SD_FILTER *f);

/* The checking allocator: 4 MiB a block.  A header may declare hundreds of
 * MiB in small blocks (the module checks such sizes against the server's
 * memory); 64 MiB in all here. */
static amq_allocator fz_sd_allocator(fz_alloc *a)
{
    amq_allocator al = fz_allocator(a, (size_t)4 << 20);
    a->total_cap = (size_t)64 << 20;
    return al;
}

/* The header: its bytes (*hdr) and length, taken from the input. */
static size_t fz_sd_header(fz_in *in, const uint8_t **hdr)
{
    size_t hlen = fz_u16(in);
    if (hlen > in->n)
        hlen = in->n;
    *hdr = in->p;
    in->p += hlen;
    in->n -= hlen;
    return hlen;
}

/* The chunk records, as LOADCHUNK it data: a refused chunk is a status
 * and leaves the arrays as they were. */
static void fz_sd_load_chunks(FZ_SD_FILTER *f, fz_in *in)
{
    int rc;

    while (in->n >= 10) {
        uint64_t it = fz_u64(in), before;
        size_t len = fz_u16(in);
        if (it == 0)
            break;
        if (len > in->n)
            len = in->n;
        before = fz_sd_sum(f);
        rc = FZ_SD_APPLY(f, it, in->p, len);
        FZ_CHECK(rc == AMQ_OK || rc == AMQ_ERANGE || rc == AMQ_EOVERFLOW, "chunk_apply: %d", rc);
        if (rc != AMQ_OK)
            FZ_CHECK(fz_sd_sum(f) == before, "a refused chunk changed the " FZ_SD_WHAT);
        in->p += len;
        in->n -= len;
    }
}

/* SCANDUMP of f (total: its arrays' bytes), each chunk LOADCHUNKed into d
 * (made from f's header), gives d the same arrays.  Chunks of at most
 * max_chunk bytes, but at most about 1024 of them: a 1-byte chunk size over
 * megabytes of arrays would only make the target slow (timeouts), not find
 * more. */
static void fz_sd_reload(const FZ_SD_FILTER *f, FZ_SD_FILTER *d, size_t max_chunk, uint64_t total)
{
    const uint8_t *data;
    size_t len;
    uint64_t it, next;
    int rc;

    if (max_chunk < total / 1024)
        max_chunk = (size_t)(total / 1024) + 1;
    for (it = 1;; it = next) {
        rc = FZ_SD_CHUNK(f, it, max_chunk, &data, &len, &next);
        FZ_CHECK(rc == AMQ_OK, "chunk %llu: %d", (unsigned long long)it, rc);
        if (len == 0)
            break;
        FZ_CHECK(len <= max_chunk && next == it + len, "chunk %llu: %zu bytes, next %llu",
                 (unsigned long long)it, len, (unsigned long long)next);
        rc = FZ_SD_APPLY(d, next, data, len);
        FZ_CHECK(rc == AMQ_OK, "reloading chunk %llu: %d", (unsigned long long)next, rc);
    }
    FZ_CHECK(fz_sd_sum(f) == fz_sd_sum(d), "SCANDUMP/LOADCHUNK changed the " FZ_SD_WHAT);
}

/* extreme.h: the header's fields, then the first chunks' iterators and
 * lengths. */
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

#endif /* AMQ_FUZZ_SCANDUMP_H */
