/*
 * fuzz_shard_stream.c - the reader of `amq import --from redis --shards N` (cli/shard_stream.c),
 * which sorts the chunks of a sharded filter's RESP stream by shard before each shard's stream
 * goes through the one-key import.
 *
 * Input: u8 (N - 1, mod 8), then the stream.
 * Properties: the reader returns 0 or -1, -1 always with a message; on 0 every recorded span
 * is, read back from the spill file, exactly one BF.LOADCHUNK / CF.LOADCHUNK command of 4
 * elements whose key is NAME:{i.j} with i the span's shard (< N) and NAME the recorded one;
 * the spans tile the spill file in order, and the per-shard counts add up to the spans; on -1
 * the output is empty; nothing leaks (ASan).
 */
#include "cli_capture.h"

#include "../cli/util.c"
#include "../cli/shard_stream.c"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_cli_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cli_shard_demux_out d;
    unsigned n, i;
    FILE *in, *spill;
    uint64_t sum = 0, pos = 0;
    long end = 0;
    size_t k, pl;
    cmd_in c;
    int rc;

    if (size < 1)
        return 0;
    n = 1u + data[0] % 8u;
    in = fmemopen((void *)(uintptr_t)(data + 1), size - 1 > 0 ? size - 1 : 1, "rb");
    FZ_CHECK(in != NULL, "fmemopen");
    if (size == 1)
        fgetc(in); /* fmemopen needs a size of at least 1: an empty stream is that byte read */
    spill = tmpfile();
    FZ_CHECK(spill != NULL, "tmpfile");
    fz_err_reset();
    rc = cli_shard_demux(in, "input", n, spill, "spill", &d);
    FZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
    if (rc != 0) {
        FZ_CHECK(fz_err_text()[0] != '\0', "an error without a message");
        FZ_CHECK(d.spans == NULL && d.nspans == 0 && d.chunks == NULL && d.prefix == NULL,
                 "output left after an error");
    } else {
        memset(&c, 0, sizeof c);
        for (k = 0; k < d.nspans; k++) {
            FZ_CHECK(d.spans[k].shard < n, "span %zu: shard %u of %u", k, d.spans[k].shard, n);
            FZ_CHECK(d.spans[k].off == end, "span %zu starts at %ld, not %ld", k,
                     d.spans[k].off, end);
            end += (long)d.spans[k].len;
            FZ_CHECK(fseek(spill, d.spans[k].off, SEEK_SET) == 0, "fseek");
            FZ_CHECK(read_cmd(spill, "spill", &pos, &c) == 0, "span %zu does not re-read", k);
            FZ_CHECK(ftell(spill) == end, "span %zu: its command is %ld bytes, not %zu", k,
                     ftell(spill) - d.spans[k].off, d.spans[k].len);
            FZ_CHECK(c.n == 4 && ((c.len[0] == 12 &&
                                   (strncasecmp(c.arg[0], "BF.LOADCHUNK", 12) == 0 ||
                                    strncasecmp(c.arg[0], "CF.LOADCHUNK", 12) == 0)) ||
                                  (c.len[0] == 13 &&
                                   strncasecmp(c.arg[0], "AMQ.LOADCHUNK", 13) == 0)),
                     "span %zu is not a LOADCHUNK", k);
            FZ_CHECK(key_shard(c.arg[1], c.len[1], &pl) == (long)d.spans[k].shard,
                     "span %zu: key of another shard", k);
            FZ_CHECK(d.prefix != NULL && pl == d.prefix_len &&
                         memcmp(c.arg[1], d.prefix, pl) == 0,
                     "span %zu: key of another filter", k);
            cmd_free(&c);
        }
        FZ_CHECK(fseek(spill, 0, SEEK_END) == 0 && ftell(spill) == end,
                 "spill holds %ld bytes, the spans %ld", ftell(spill), end);
        for (i = 0; i < n; i++)
            sum += d.chunks[i];
        FZ_CHECK(sum == d.nspans, "%llu chunks counted, %zu spans", (unsigned long long)sum,
                 d.nspans);
        FZ_CHECK((d.nspans == 0) == (d.prefix == NULL), "a NAME without chunks or back");
    }
    cli_shard_demux_free(&d);
    fclose(spill);
    fclose(in);
    return 0;
}
