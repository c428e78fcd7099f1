/*
 * container.h - the one file format of every kind of filter
 * (docs/file-format.md): a 64-byte fixed header, the kind's parameter
 * block, a header checksum, zero padding to a 64-byte boundary, the payload.
 */
#ifndef AMQ_COMMON_CONTAINER_H
#define AMQ_COMMON_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include "amq.h"

#define AMQ_FILE_MAGIC "\x89" "AMQ\r\n\x1a\n"
#define AMQ_FILE_MAGIC_LEN 8
#define AMQ_FILE_VERSION 1
#define AMQ_FILE_FIXED 64
#define AMQ_FILE_ALIGN 64
#define AMQ_FILE_MAX_PARAMS (1u << 20)

/* Header flag: the payload checksum is the sum (mod 2^64) of the XXH3-64 of
 * each 4 KiB chunk seeded with the chunk's index, so that an in-place
 * update of a few chunks can update it without reading the rest. */
#define AMQ_FLAG_CHUNKSUM 1u
#define AMQ_CHUNK 4096u

typedef struct amq_container {
    uint32_t version;
    uint32_t kind;
    uint32_t hash_algo;
    uint32_t flags;
    uint64_t seed;
    uint64_t items;
    const uint8_t *params;
    uint32_t params_len;
    uint64_t payload_off;
    uint64_t payload_len;
    uint64_t payload_sum;
} amq_container;

/* XXH3-64, seed 0: the checksum of the format. */
uint64_t amq_checksum(const void *data, size_t len);

/* The checksum of one chunk (index i) and of a whole chunked payload. */
uint64_t amq_chunk_hash(const void *data, size_t len, uint64_t index);
uint64_t amq_chunked_checksum(const uint8_t *data, uint64_t len);

/* Offset of the payload for a parameter block of params_len bytes. */
uint64_t amq_container_payload_offset(uint32_t params_len);

/* Writes the header area (amq_container_payload_offset bytes) into out,
 * from every field of c (payload_off is recomputed). */
void amq_container_write_header(const amq_container *c, uint8_t *out);

/*
 * Parses and verifies the header of a file of file_size bytes whose first
 * len bytes are at buf (len must cover the header area; the whole file is
 * fine).  Checks magic, version, flags, sizes against file_size and the
 * header checksum; not the payload checksum and not the kind.  c->params
 * points into buf.
 */
int amq_container_parse(const uint8_t *buf, size_t len, uint64_t file_size,
                        amq_container *c, amq_errinfo *err);

/*
 * For reading a file of unknown size (a pipe): given its first len bytes,
 * returns 1 and the total number of bytes worth reading in *need while
 * more may help, 0 when what is there already decides (a bad magic, a
 * header that amq_container_parse rejects from its own bytes - version,
 * checksum, flags, reserved field, offset -, an absurd size, or the
 * declared end plus one byte - so that trailing garbage is still
 * reported).  Sizes are believed only once the header passes, so an
 * endless stream is read no further than the header's 1 MiB limit or the
 * size a valid header declares.
 */
int amq_container_stream_need(const uint8_t *buf, size_t len, uint64_t *need);

#endif /* AMQ_COMMON_CONTAINER_H */
