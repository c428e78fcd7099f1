/*
 * extreme_file.h - extreme.h's spans and signing for targets whose input is
 * a whole filter file (fuzz_container, fuzz_file_open, and fuzz_header after
 * its control byte): the header's fields, the parameter block, the start
 * and the end of the payload (indexes live there), then both checksums
 * made to hold (docs/file-format.md).  A target whose whole input is the
 * file defines FZ_INPUT_IS_FILE before including this, which then gives it
 * fz_fields and fz_resign.
 */
#ifndef AMQ_FUZZ_EXTREME_FILE_H
#define AMQ_FUZZ_EXTREME_FILE_H

#include "common/container.h"
#include "common/endian.h"
#include "extreme.h"

static FZ_UNUSED size_t fz_file_fields(const uint8_t *f, size_t size, size_t base, fz_span *spans,
                             size_t max)
{
    uint64_t plen, off, len;
    size_t n = 0;

    if (size < AMQ_FILE_FIXED || max < 4)
        return 0;
    spans[n++] = (fz_span){base + 16, 40, 8, 0}; /* seed .. payload length */
    plen = amq_load32(f + 32);
    if (plen > size - AMQ_FILE_FIXED)
        return n;
    spans[n++] = (fz_span){base + AMQ_FILE_FIXED, (size_t)plen, 4, 0};
    off = amq_load64(f + 40);
    len = amq_load64(f + 48);
    if (off > size || len > size - off || len == 0)
        return n;
    spans[n++] = (fz_span){base + (size_t)off, len < 128 ? (size_t)len : 128, 4, 0};
    if (len > 128)
        spans[n++] = (fz_span){base + (size_t)(off + len - (len < 384 ? len - 128 : 256)),
                               len < 384 ? (size_t)len - 128 : 256, 4, 0};
    return n;
}

/* The payload checksum (plain or chunked, as the flags say), then the
 * header's; fields that point outside the file are left as they are. */
static FZ_UNUSED void fz_file_resign(uint8_t *f, size_t size)
{
    uint64_t plen, off, len;

    if (size < AMQ_FILE_FIXED + 8)
        return;
    plen = amq_load32(f + 32);
    if (plen > size - AMQ_FILE_FIXED - 8)
        return;
    off = amq_load64(f + 40);
    len = amq_load64(f + 48);
    if (off <= size && len <= size - off)
        amq_store64(f + 56, (amq_load16(f + 14) & AMQ_FLAG_CHUNKSUM)
                                ? amq_chunked_checksum(f + off, len)
                                : amq_checksum(f + off, (size_t)len));
    amq_store64(f + AMQ_FILE_FIXED + plen, amq_checksum(f, AMQ_FILE_FIXED + (size_t)plen));
}

#ifdef FZ_INPUT_IS_FILE
static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max)
{
    return fz_file_fields(data, size, 0, spans, max);
}

static void fz_resign(uint8_t *data, size_t size)
{
    fz_file_resign(data, size);
}
#endif

#endif /* AMQ_FUZZ_EXTREME_FILE_H */
