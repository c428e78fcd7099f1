/*
 * fuzz_cli_redis_amq.c - the amq tool's import of amq.so's AMQ.* values (cli/cmd_redis_amq.c)
 * on arbitrary bytes: the DUMP payload decoder (RDB lengths, LZF strings, the CRC-64, the
 * value's fields) and the chunk assembler of AMQ.LOADCHUNK / AMQ.SCANDUMP streams (header
 * first, no gap, no repeat), both ending in the library's decoder.
 *
 * Input: u8 mode.  Mode even: the rest is a DUMP payload (with its CRC-64 recomputed when mode
 * bit 1 is set, so that the fuzzer gets past the checksum).  Mode odd: the rest is a sequence
 * of chunks (u32 iterator, u16 length, bytes).  Properties: never a crash or a read past the
 * input; a refusal prints one message; a filter that comes out answers queries and
 * serializes; nothing leaks.  extreme.h's mutator writes extreme integers into the first 512
 * bytes after the mode (the RDB lengths and value fields, the chunks' iterators and lengths);
 * mode bit 1 makes the target sign a DUMP payload again, so no re-signing is needed here.
 */
#include "cli_capture.h"
#define FZ_NO_CHECKSUM /* mode bit 1 signs a DUMP payload (above) */
#include "extreme.h"

#include "../cli/util.c"
#include "../cli/cmd_redis_amq.c"

/* cmd_redis_amq.c saves through cli/target.c, which the decoders here never reach. */
int cli_save_filter(const char *path, const amq_filter *f, unsigned flags)
{
    (void)path;
    (void)f;
    (void)flags;
    abort();
}

static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max)
{
    (void)data;
    if (size < 2 || max < 1)
        return 0;
    spans[0] = (fz_span){1, size - 1 < 512 ? size - 1 : 512, 1, -1};
    return 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_cli_init();
    return 0;
}

static void use(amq_filter *f)
{
    uint64_t size;
    uint8_t buf[64];
    size_t n;
    int i;
    for (i = 0; i < 16; i++)
        FZ_CHECK(amq_filter_contains(f, &i, sizeof i) <= 1, "contains");
    FZ_CHECK(amq_filter_serialized_size(f, &size) == AMQ_OK, "size");
    FZ_CHECK(amq_filter_serialize_range(f, 0, buf, sizeof buf, &n) == AMQ_OK, "range");
    amq_filter_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    amq_filter *f = NULL;
    int rc;

    if (size < 1)
        return 0;
    fz_err_reset();
    if ((data[0] & 1) == 0) {
        uint8_t *p = malloc(size);
        size_t n = size - 1;
        FZ_CHECK(p != NULL, "malloc");
        memcpy(p, data + 1, n);
        if ((data[0] & 2) && n >= 8) {
            uint64_t crc = cli_crc64_jones(p, n - 8);
            int i;
            for (i = 0; i < 8; i++)
                p[n - 8 + (size_t)i] = (uint8_t)(crc >> (8 * i));
        }
        rc = cli_redis_amq_decode_dump(p, n, "fuzz", &f);
        free(p);
    } else {
        cli_amq_chunks c;
        size_t at = 1;
        memset(&c, 0, sizeof c);
        rc = 0;
        while (rc == 0 && size - at >= 6) {
            uint32_t it = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 |
                          (uint32_t)data[at + 2] << 16 | (uint32_t)data[at + 3] << 24;
            size_t len = (size_t)data[at + 4] | (size_t)data[at + 5] << 8;
            at += 6;
            if (len > size - at)
                len = size - at;
            rc = cli_amq_chunk_add(&c, "fuzz", it, data + at, len);
            at += len;
        }
        if (rc == 0)
            rc = cli_amq_chunks_filter(&c, "fuzz", &f);
        cli_amq_chunks_free(&c);
    }
    if (rc == 0) {
        FZ_CHECK(f != NULL, "success without a filter");
        use(f);
    } else {
        FZ_CHECK(f == NULL, "a refusal left a filter");
        FZ_CHECK(fz_err_text()[0] != '\0', "a refusal printed nothing");
    }
    return 0;
}
