/*
 * rdb.h - the body of an RDB-value target: the module's rdb_load on
 * fuzzer bytes through the stand-in reader of redis_io.h.  A target file
 * defines the family's functions and includes this:
 *
 *     #define FZ_RDB_LOAD bf_rdb_load     (static functions of the family
 *     #define FZ_RDB_SAVE bf_rdb_save      file, compiled into the target)
 *     #define FZ_RDB_FREE bf_free
 *     #define FZ_RDB_COPY bf_copy
 *     #define FZ_RDB_USAGE bf_mem_usage
 *     #define FZ_RDB_DIGEST bf_digest
 *     #define FZ_RDB_CONTAINS(v, k, n) amq_sbloom_contains(v, k, n)
 *
 * Input: u8 encoding version (value % 6: 0..4 exist, 5 must be refused),
 * then the value's bytes.  Properties: rdb_load returns NULL or a value,
 * never reads past the bytes, leaks nothing on either path; a loaded value
 * survives digest, mem_usage and copy, saves, and loads back (encoding 4)
 * into a value that answers the same and saves to the same bytes.
 * extreme.h's mutator writes extreme integers into the stream's fields.
 */
#define FZ_RDB_NPROBES 32

#define FZ_NO_CHECKSUM
#include "extreme.h"

/* extreme.h: the stream's first 512 bytes at any offset (its unsigneds are
 * 8 bytes little-endian, after strings of any length); no checksum. */
static size_t fz_fields(const uint8_t *data, size_t size, fz_span *spans, size_t max)
{
    (void)data;
    if (size < 2 || max < 1)
        return 0;
    spans[0] = (fz_span){1, size - 1 < 512 ? size - 1 : 512, 1, 0};
    return 1;
}

static void fz_rdb_answers(const void *v, const uint8_t *data, size_t size, uint8_t *out)
{
    char key[16];
    size_t i;
    for (i = 0; i < FZ_RDB_NPROBES; i++) {
        size_t n;
        if (i < 16 && size > 0) {
            size_t at = (i * 7) % size;
            n = 1 + i % 8;
            if (n > size - at) /* keys are slices of the input, never past its end */
                n = size - at;
            out[i] = (uint8_t)FZ_RDB_CONTAINS(v, data + at, n);
        } else {
            n = (size_t)snprintf(key, sizeof key, "k%zu", i);
            out[i] = (uint8_t)FZ_RDB_CONTAINS(v, key, n);
        }
        FZ_CHECK(out[i] <= 1, "contains returned %u", out[i]);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_redis_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    RedisModuleIO in, out, out2;
    uint8_t a[FZ_RDB_NPROBES], b[FZ_RDB_NPROBES];
    void *v, *w, *copy;
    int encver;

    if (size == 0)
        return 0;
    encver = data[0] % 6;
    in = fz_reader(data + 1, size - 1);
    v = FZ_RDB_LOAD(&in, encver);
    if (encver > AMQ_RM_ENCVER)
        FZ_CHECK(v == NULL, "encoding version %d accepted", encver);
    if (v == NULL) {
        FZ_CHECK(fz_redis_live == 0, "a refused value leaked %zu blocks", fz_redis_live);
        return 0;
    }
    fz_rdb_answers(v, data, size, a);
    (void)FZ_RDB_USAGE(v);
    FZ_RDB_DIGEST(NULL, v);

    copy = FZ_RDB_COPY(NULL, NULL, v);
    if (copy != NULL) {
        fz_rdb_answers(copy, data, size, b);
        FZ_CHECK(memcmp(a, b, sizeof a) == 0, "a copy answers differently");
        FZ_RDB_FREE(copy);
    }

    out = fz_writer();
    FZ_RDB_SAVE(&out, v);
    in = fz_reader(out.out, out.len);
    w = FZ_RDB_LOAD(&in, AMQ_RM_ENCVER);
    FZ_CHECK(w != NULL, "a saved value (%zu bytes) does not load back", out.len);
    FZ_CHECK(in.n == 0, "loading a saved value left %zu bytes", in.n);
    fz_rdb_answers(w, data, size, b);
    FZ_CHECK(memcmp(a, b, sizeof a) == 0, "the reloaded value answers differently");
    out2 = fz_writer();
    FZ_RDB_SAVE(&out2, w);
    FZ_CHECK(out2.len == out.len && memcmp(out2.out, out.out, out.len) == 0,
             "saving the reloaded value gives other bytes (%zu vs %zu)", out2.len, out.len);

    FZ_RDB_FREE(w);
    FZ_RDB_FREE(v);
    free(out.out);
    free(out2.out);
    FZ_CHECK(fz_redis_live == 0, "%zu blocks leaked", fz_redis_live);
    return 0;
}
