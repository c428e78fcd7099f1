/*
 * fuzz_header.c - forged container headers: every field is the fuzzer's,
 * but the checksums are made to hold, so that the checks behind them (the
 * version, flags, reserved field, payload offset and length against the
 * size, padding, kind, hash, then the kind's own) see arbitrary values
 * that a random byte string would never carry past the header checksum.
 *
 * Input: u8 control, then a file.  Control bit 1: store the right payload
 * checksum (XXH3 of [offset, offset + length) when inside the file);
 * bit 0: then store the right header checksum.  Then as fuzz_container:
 * four load modes, fz_check_filter on success, no leak, the stream
 * reader's stopping rule agrees.
 */
#include "common/container.h"
#include "extreme_file.h"
#include "common/endian.h"
#include "filter_checks.h"

static int load(const uint8_t *file, size_t size, unsigned flags)
{
    fz_load l;
    int rc;

    fz_load_begin(&l);
    rc = amq_filter_deserialize(file, size, flags, &l.al, &l.f, &l.err);
    fz_load_end(&l, rc, file, size, flags);
    FZ_CHECK(rc == AMQ_OK || (l.err.status == rc && l.err.msg[0] != '\0'),
             "error %d without a message", rc);
    return rc;
}

/* extreme.h: the file's header fields, parameters and payload ends; the
 * control byte then asks the target to sign both checksums. */
static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max)
{
    return size == 0 ? 0 : fz_file_fields(data + 1, size - 1, 1, spans, max);
}

static void fz_resign(uint8_t *data, size_t size)
{
    if (size > 0)
        data[0] |= 3;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned modes[] = {0, AMQ_OPEN_MMAP, AMQ_OPEN_TRUST,
                                     AMQ_OPEN_MMAP | AMQ_OPEN_TRUST};
    uint8_t control, *file;
    uint64_t off, len, need;
    uint32_t plen;
    size_t m;
    int rc[4];

    if (size == 0)
        return 0;
    control = data[0];
    size--;
    file = malloc(size + 1);
    FZ_CHECK(file != NULL, "out of memory");
    memcpy(file, data + 1, size);
    if (size >= AMQ_FILE_FIXED) {
        plen = amq_load32(file + 32);
        off = amq_load64(file + 40);
        len = amq_load64(file + 48);
        if ((control & 2) && off <= size && len <= size - off)
            amq_store64(file + 56, amq_checksum(file + off, (size_t)len));
        if ((control & 1) && plen <= AMQ_FILE_MAX_PARAMS && AMQ_FILE_FIXED + plen + 8 <= size)
            amq_store64(file + AMQ_FILE_FIXED + plen,
                        amq_checksum(file, AMQ_FILE_FIXED + plen));
    }
    for (m = 0; m < 4; m++)
        rc[m] = load(file, size, modes[m]);
    FZ_CHECK(rc[0] == rc[1] && rc[2] == rc[3], "copy and borrow disagree: %d/%d, %d/%d", rc[0],
             rc[1], rc[2], rc[3]);
    FZ_CHECK(fz_trust_agrees(rc[0], rc[2]), "verified %d, trusted %d", rc[0], rc[2]);
    if (rc[0] == AMQ_OK)
        FZ_CHECK(amq_container_stream_need(file, size, &need) == 1 && need == size + 1,
                 "a valid file: the stream reader would stop early");
    free(file);
    return 0;
}
