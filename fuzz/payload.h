/*
 * payload.h - the body of a per-kind payload target.  A target file is
 *
 *     #define FZ_KIND AMQ_KIND_BLOOM
 *     #include "payload.h"
 *
 * The fuzzer's bytes are a kind's parameter block and payload plus the
 * header fields a kind sees (hash algorithm, seed, item count); the target
 * frames them in a valid container - correct offsets, padding and both
 * checksums - so that every mutation reaches the kind's load function
 * instead of dying at the header checksum.  Then as fuzz_container: four
 * load modes, two alignments, fz_check_filter on success, no leak on error.
 *
 * Input layout: u8 hash algorithm (1..4 after mod; 0 keeps a raw u16 for
 * the invalid cases), u64 seed, u64 items, u16 parameter-block length P,
 * P bytes of parameters, then the payload (the rest).  extreme.h's mutator
 * writes extreme integers into the items, parameters and payload ends.
 */
#ifndef FZ_KIND
#error "define FZ_KIND before including payload.h"
#endif

#include "common/container.h"
#define FZ_NO_CHECKSUM
#include "extreme.h"
#include "filter_checks.h"

/* extreme.h: the item count, the parameter block, the payload's first 128
 * and last 256 bytes (where the partitioned and static kinds keep their
 * indexes).  The target frames and signs every input itself. */
static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max)
{
    size_t at = data[0] == 0 ? 3 : 1, plen, rest, n = 0;

    if (size == 0 || size < at + 18 || max < 4)
        return 0;
    spans[n++] = (fz_span){at + 8, 8, 8, 0};
    plen = (size_t)data[at + 16] | (size_t)data[at + 17] << 8;
    at += 18;
    rest = size - at;
    if (plen > rest)
        plen = rest;
    if (plen > 0)
        spans[n++] = (fz_span){at, plen, 4, 0};
    at += plen;
    rest -= plen;
    if (rest > 0)
        spans[n++] = (fz_span){at, rest < 128 ? rest : 128, 4, 0};
    if (rest > 128)
        spans[n++] = (fz_span){size - (rest < 384 ? rest - 128 : 256),
                               rest < 384 ? rest - 128 : 256, 4, 0};
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned modes[] = {0, AMQ_OPEN_MMAP, AMQ_OPEN_TRUST,
                                     AMQ_OPEN_MMAP | AMQ_OPEN_TRUST};
    fz_in in = {data, size};
    amq_container c;
    uint8_t *file;
    uint64_t off;
    size_t plen, total, m, misalign;
    uint8_t algo;
    int rc[4];

    memset(&c, 0, sizeof c);
    algo = fz_u8(&in);
    c.hash_algo = algo == 0 ? fz_u16(&in) : 1u + (algo - 1u) % 4u;
    c.seed = fz_u64(&in);
    c.items = fz_u64(&in);
    plen = fz_u16(&in);
    if (plen > in.n)
        plen = in.n;
    c.version = AMQ_FILE_VERSION;
    c.kind = FZ_KIND;
    c.params = in.p;
    c.params_len = (uint32_t)plen;
    c.payload_len = in.n - plen;
    c.payload_sum = amq_checksum(in.p + plen, in.n - plen);
    off = amq_container_payload_offset((uint32_t)plen);
    total = (size_t)off + (in.n - plen);
    file = malloc(total);
    FZ_CHECK(file != NULL, "out of memory");
    amq_container_write_header(&c, file);
    memcpy(file + off, in.p + plen, in.n - plen);

    for (misalign = 0; misalign < 2; misalign++) {
        for (m = 0; m < 4; m++)
            rc[m] = fz_load_bytes(file, total, modes[m], misalign);
        FZ_CHECK(rc[0] == rc[1] && rc[2] == rc[3] && fz_trust_agrees(rc[0], rc[2]),
                 "modes disagree on a framed payload: %d %d %d %d", rc[0], rc[1], rc[2], rc[3]);
    }
    free(file);
    return 0;
}
