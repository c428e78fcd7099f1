/*
 * container.c - encoding and decoding of the file header.
 *
 * Fixed header, little-endian (docs/file-format.md has the full table):
 *    0  8  magic 89 41 4d 51 0d 0a 1a 0a ("\x89AMQ\r\n\x1a\n", PNG-style:
 *          catches text-mode and 7-bit transfers)
 *    8  2  format version (1)      10  2  kind      12  2  hash algorithm
 *   14  2  flags (0, or 1: chunked  16  8  hash seed 24  8  item count
 *          payload checksum)
 *   32  4  parameter block length P                 36  4  reserved (0)
 *   40  8  payload offset          48  8  payload length
 *   56  8  payload checksum (XXH3-64 of the payload)
 *   64  P  parameter block
 * 64+P  8  header checksum (XXH3-64 of bytes 0 .. 64+P)
 *          zero padding to the payload offset (next multiple of 64)
 */
#include <string.h>
#include <xxhash.h>

#include "common/container.h"
#include "common/endian.h"
#include "common/error.h"

uint64_t amq_checksum(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

uint64_t amq_chunk_hash(const void *data, size_t len, uint64_t index)
{
    return XXH3_64bits_withSeed(data, len, index);
}

uint64_t amq_chunked_checksum(const uint8_t *data, uint64_t len)
{
    uint64_t sum = 0, i, off;
    for (i = 0, off = 0; off < len; i++, off += AMQ_CHUNK)
        sum += amq_chunk_hash(data + off, (size_t)(len - off < AMQ_CHUNK ? len - off : AMQ_CHUNK),
                              i);
    return sum;
}

uint64_t amq_container_payload_offset(uint32_t params_len)
{
    uint64_t end = (uint64_t)AMQ_FILE_FIXED + params_len + 8;
    return (end + AMQ_FILE_ALIGN - 1) / AMQ_FILE_ALIGN * AMQ_FILE_ALIGN;
}

void amq_container_write_header(const amq_container *c, uint8_t *out)
{
    uint64_t off = amq_container_payload_offset(c->params_len);
    size_t hlen = AMQ_FILE_FIXED + (size_t)c->params_len;

    memset(out, 0, (size_t)off);
    memcpy(out, AMQ_FILE_MAGIC, AMQ_FILE_MAGIC_LEN);
    amq_store16(out + 8, (uint16_t)c->version);
    amq_store16(out + 10, (uint16_t)c->kind);
    amq_store16(out + 12, (uint16_t)c->hash_algo);
    amq_store16(out + 14, (uint16_t)c->flags);
    amq_store64(out + 16, c->seed);
    amq_store64(out + 24, c->items);
    amq_store32(out + 32, c->params_len);
    amq_store32(out + 36, 0);
    amq_store64(out + 40, off);
    amq_store64(out + 48, c->payload_len);
    amq_store64(out + 56, c->payload_sum);
    if (c->params_len != 0)
        memcpy(out + AMQ_FILE_FIXED, c->params, c->params_len);
    amq_store64(out + hlen, amq_checksum(out, hlen));
}

/* The checks after the checksum that need only the header's own bytes (a
 * field under a good checksum can still be wrong: written so, or forged);
 * amq_container_parse and amq_container_stream_need both make them. */
static int header_fields(const uint8_t *buf, uint32_t flags, uint32_t params_len, uint64_t off,
                         uint64_t payload_len, amq_errinfo *err)
{
    if ((flags & ~AMQ_FLAG_CHUNKSUM) != 0)
        return amq_err(err, AMQ_EVERSION, "unknown header flags 0x%x", flags);
    if (amq_load32(buf + 36) != 0)
        return amq_err(err, AMQ_ECORRUPT, "reserved header field is not zero");
    if (off != amq_container_payload_offset(params_len))
        return amq_err(err, AMQ_ECORRUPT, "payload offset %llu, expected %llu",
                       (unsigned long long)off,
                       (unsigned long long)amq_container_payload_offset(params_len));
    if (payload_len > UINT64_MAX - off)
        return amq_err(err, AMQ_ECORRUPT, "payload length %llu overflows",
                       (unsigned long long)payload_len);
    return AMQ_OK;
}

int amq_container_parse(const uint8_t *buf, size_t len, uint64_t file_size,
                        amq_container *c, amq_errinfo *err)
{
    int rc;
    uint64_t off, end, i;
    size_t hlen, avail = len < file_size ? len : (size_t)file_size;

    memset(c, 0, sizeof *c);
    if (avail < AMQ_FILE_MAGIC_LEN) {
        if (memcmp(buf, AMQ_FILE_MAGIC, avail) == 0)
            return amq_err(err, AMQ_ETRUNC, "file is %llu bytes, shorter than the %d-byte header",
                           (unsigned long long)file_size, AMQ_FILE_FIXED);
        return amq_err(err, AMQ_EMAGIC, "not an amq filter file (bad magic bytes)");
    }
    if (memcmp(buf, AMQ_FILE_MAGIC, AMQ_FILE_MAGIC_LEN) != 0)
        return amq_err(err, AMQ_EMAGIC, "not an amq filter file (bad magic bytes)");
    if (avail < AMQ_FILE_FIXED)
        return amq_err(err, AMQ_ETRUNC, "file is %llu bytes, shorter than the %d-byte header",
                       (unsigned long long)file_size, AMQ_FILE_FIXED);

    c->version = amq_load16(buf + 8);
    c->kind = amq_load16(buf + 10);
    c->hash_algo = amq_load16(buf + 12);
    c->flags = amq_load16(buf + 14);
    c->seed = amq_load64(buf + 16);
    c->items = amq_load64(buf + 24);
    c->params_len = amq_load32(buf + 32);
    off = amq_load64(buf + 40);
    c->payload_len = amq_load64(buf + 48);
    c->payload_sum = amq_load64(buf + 56);

    if (c->version != AMQ_FILE_VERSION)
        return amq_err(err, AMQ_EVERSION,
                       "file format version %u is not supported (this library reads version %d)",
                       c->version, AMQ_FILE_VERSION);
    if (c->params_len > AMQ_FILE_MAX_PARAMS)
        return amq_err(err, AMQ_ECORRUPT, "parameter block of %u bytes is implausibly large",
                       c->params_len);
    hlen = AMQ_FILE_FIXED + (size_t)c->params_len;
    if (file_size < hlen + 8 || avail < hlen + 8)
        return amq_err(err, AMQ_ETRUNC,
                       "file is %llu bytes, its header and parameters need %zu",
                       (unsigned long long)file_size, hlen + 8);
    if (amq_load64(buf + hlen) != amq_checksum(buf, hlen))
        return amq_err(err, AMQ_ECHECKSUM, "header checksum mismatch: the header is corrupt");
    /* The checksum held: from here on a bad field was written so (or forged). */
    rc = header_fields(buf, c->flags, c->params_len, off, c->payload_len, err);
    if (rc != AMQ_OK)
        return rc;
    end = off + c->payload_len;
    if (file_size < end)
        return amq_err(err, AMQ_ETRUNC, "file is %llu bytes, its header says %llu: truncated",
                       (unsigned long long)file_size, (unsigned long long)end);
    if (file_size > end)
        return amq_err(err, AMQ_ECORRUPT, "%llu unexpected bytes after the payload",
                       (unsigned long long)(file_size - end));
    for (i = hlen + 8; i < off && i < avail; i++)
        if (buf[i] != 0)
            return amq_err(err, AMQ_ECORRUPT, "header padding is not zero");
    c->params = buf + AMQ_FILE_FIXED;
    c->payload_off = off;
    return AMQ_OK;
}

int amq_container_stream_need(const uint8_t *buf, size_t len, uint64_t *need)
{
    size_t n = len < AMQ_FILE_MAGIC_LEN ? len : AMQ_FILE_MAGIC_LEN;
    uint64_t off, payload;
    uint32_t plen;
    size_t hlen;

    if (memcmp(buf, AMQ_FILE_MAGIC, n) != 0)
        return 0;
    if (len < AMQ_FILE_FIXED) {
        *need = AMQ_FILE_FIXED;
        return 1;
    }
    /* Every check amq_container_parse makes of the header alone stops the
     * read as it would stop the parse, so that a stream fails as the same
     * bytes in memory do, and before a size the header declares is believed. */
    if (amq_load16(buf + 8) != AMQ_FILE_VERSION)
        return 0;
    plen = amq_load32(buf + 32);
    if (plen > AMQ_FILE_MAX_PARAMS)
        return 0;
    hlen = AMQ_FILE_FIXED + (size_t)plen;
    if (len < hlen + 8) {
        *need = hlen + 8;
        return 1;
    }
    if (amq_load64(buf + hlen) != amq_checksum(buf, hlen))
        return 0;
    off = amq_load64(buf + 40);
    payload = amq_load64(buf + 48);
    if (header_fields(buf, amq_load16(buf + 14), plen, off, payload, NULL) != AMQ_OK)
        return 0;
    if (off > UINT64_MAX / 2 || payload > UINT64_MAX / 2)
        return 0;
    *need = off + payload + 1;
    return len < *need;
}
