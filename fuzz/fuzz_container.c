/*
 * fuzz_container.c - a whole filter file, as bytes, through
 * amq_filter_deserialize: the container header, its checksums, and every
 * kind's parameter block and payload behind it.
 *
 * Each input is loaded four ways - copied or borrowed (AMQ_OPEN_MMAP),
 * verified or trusted (AMQ_OPEN_TRUST) - from an aligned and a misaligned
 * buffer.  Any input must give a filter or an error: an error sets a status
 * and a message and leaks nothing; a filter passes fz_check_filter; a
 * borrowed buffer is never written to.  Loading verified and trusted must
 * agree unless the verified load found a checksum mismatch.
 *
 * Seeds: valid files of every kind (fuzz/seeds.c).
 */
#include "common/container.h"
#define FZ_INPUT_IS_FILE /* extreme.h: the fields and checksums of the whole input */
#include "extreme_file.h"
#include "filter_checks.h"

/* The stream reader's stopping rule agrees with the decoder: a valid file
 * is wanted whole (and one byte more, to see trailing garbage), every
 * prefix of it keeps the reader reading. */
static void check_stream_need(const uint8_t *data, size_t size)
{
    static const size_t cuts[] = {1, 7, 8, 63, 64, 71, 72, 127, 128};
    uint64_t need = 0;
    size_t i;
    int more = amq_container_stream_need(data, size, &need);

    FZ_CHECK(more == 1 && need == (uint64_t)size + 1,
             "a valid %zu-byte file: stream_need says %d, %llu", size, more,
             (unsigned long long)need);
    for (i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        if (cuts[i] < size)
            FZ_CHECK(amq_container_stream_need(data, cuts[i], &need) == 1,
                     "a %zu-byte prefix of a valid file stops the reader", cuts[i]);
    FZ_CHECK(amq_container_stream_need(data, size / 2 + 1, &need) == 1,
             "half a valid file stops the reader");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned modes[] = {0, AMQ_OPEN_MMAP, AMQ_OPEN_TRUST,
                                     AMQ_OPEN_MMAP | AMQ_OPEN_TRUST};
    int rc[4];
    size_t m, misalign;

    for (misalign = 0; misalign < 2; misalign++) {
        for (m = 0; m < 4; m++)
            rc[m] = fz_load_bytes(data, size, modes[m], misalign);
        if (misalign == 0 && rc[0] == AMQ_OK)
            check_stream_need(data, size);
        /* Copy and borrow decode alike. */
        FZ_CHECK(rc[0] == rc[1] && rc[2] == rc[3],
                 "copy and borrow disagree: %d/%d, trusted %d/%d", rc[0], rc[1], rc[2], rc[3]);
        /* Trusting only skips the payload checksum and whole-payload
         * consistency checks. */
        FZ_CHECK(fz_trust_agrees(rc[0], rc[2]), "verified %d, trusted %d", rc[0], rc[2]);
    }
    return 0;
}
