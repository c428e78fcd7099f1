/*
 * fuzz_cli_gzip.c - the amq tool's gzip input (cli/input.c) on arbitrary
 * bytes: INPUT files and pipes whose first two bytes are gzip's magic are
 * decompressed, an amq filter file's magic is refused at open, zstd, xz and
 * bzip2 (their own libraries; only how they end is checked here) are
 * decoded, and everything else is passed through.
 *
 * The bytes are stored in a regular file (memfd) or a pipe and read with
 * cli_input_read in fuzz-chosen amounts, every read(2) of the input layer
 * returning at most a fuzz-chosen number of bytes (members, headers and
 * trailers straddle reads).  The answer is compared with a reference
 * decoder that sees the whole buffer at once and applies the documented
 * rules (cli/input.c): concatenated members are one stream; a stream cut
 * short, bytes after the last member that are not another member, and
 * corrupt data are errors.
 *  - not gzip (or read raw): the bytes come back unchanged, no error;
 *  - valid gzip: exactly the decompressed bytes, then the end; the
 *    position ends at the file's size;
 *  - invalid gzip: what came before the error is a prefix of what the
 *    reference decoded, then -1 with one message naming the input;
 *  - nothing is printed on success; nothing leaks (LeakSanitizer).
 * Output is capped at 256 KiB (a small input may expand a thousandfold).
 *
 * Input: u8 flags (bit 0: a pipe; bit 1: raw; bits 2-7: the largest
 * cli_input_read is 1 + value * 37), u8 largest read(2) (0: no limit),
 * then the bytes.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli_capture.h"

#include "../cli/util.c"
#include "cli_reads.h"
#include "../cli/input.c"

#define FZ_MAX_BYTES 60000 /* fits a pipe's buffer: no writer thread */
#define FZ_MAX_OUT ((size_t)1 << 18)

/*
 * The reference: decodes p[0..n) as the documented gzip INPUT, whole.
 * Returns 0 (valid: *outlen bytes), -1 (invalid: the bytes decoded before
 * the error), or 1 (stopped at cap bytes of output: undecided).
 */
static int reference(const uint8_t *p, size_t n, uint8_t *out, size_t cap, size_t *outlen)
{
    z_stream zs;
    int zrc, status = -1;

    *outlen = 0;
    memset(&zs, 0, sizeof zs);
    FZ_CHECK(inflateInit2(&zs, 15 + 16) == Z_OK, "inflateInit2");
    zs.next_in = (Bytef *)(uintptr_t)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    for (;;) {
        zrc = inflate(&zs, Z_NO_FLUSH);
        if (zrc == Z_STREAM_END) {
            if (zs.avail_in == 0) {
                status = 0;
                break;
            }
            /* Another member must follow. */
            if (zs.next_in[0] != 0x1f || (zs.avail_in > 1 && zs.next_in[1] != 0x8b))
                break;
            FZ_CHECK(inflateReset(&zs) == Z_OK, "inflateReset");
            continue;
        }
        if (zrc == Z_OK && zs.avail_out == 0) {
            status = 1;
            break;
        }
        if (zrc == Z_OK)
            continue;
        /* Z_BUF_ERROR with all input used: cut short.  Anything else:
         * corrupt. */
        break;
    }
    *outlen = cap - zs.avail_out;
    inflateEnd(&zs);
    return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    unsigned flags = fz_u8(&in);
    int is_pipe = flags & 1, raw = (flags >> 1) & 1;
    size_t chunk = 1 + (size_t)(flags >> 2) * 37, got_len = 0, ref_len = 0, n;
    uint8_t *got, *ref;
    char path[64];
    cli_input *input;
    ssize_t r = 0;
    int fds[2], fd, want, gzip, fmt, other;

    fz_read_max = fz_u8(&in);
    n = in.n > FZ_MAX_BYTES ? FZ_MAX_BYTES : in.n;
    gzip = !raw && n >= 2 && in.p[0] == 0x1f && in.p[1] == 0x8b;
    ref = malloc(FZ_MAX_OUT);
    got = malloc(FZ_MAX_OUT + 1);
    FZ_CHECK(ref != NULL && got != NULL, "out of memory");
    if (gzip) {
        want = reference(in.p, n, ref, FZ_MAX_OUT, &ref_len);
    } else {
        want = 0;
        ref_len = n;
        if (n != 0)
            memcpy(ref, in.p, n);
    }

    if (is_pipe) {
        FZ_CHECK(pipe(fds) == 0, "pipe failed");
        FZ_CHECK(n == 0 || write(fds[1], in.p, n) == (ssize_t)n, "pipe write failed");
        close(fds[1]);
        fd = fds[0];
    } else {
        fd = memfd_create("fuzz-gzip", MFD_CLOEXEC);
        FZ_CHECK(fd >= 0, "memfd_create failed");
        FZ_CHECK(n == 0 || write(fd, in.p, n) == (ssize_t)n, "write failed");
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    fz_err_reset();
    input = cli_input_open(path, raw);
    /* Opening reads the first SNIFF bytes: it fails only on an amq filter
     * file's magic, with a message naming the input. */
    fmt = raw ? CODEC_PLAIN : input_format(in.p, n < SNIFF ? n : SNIFF);
    if (fmt == CODEC_AMQ) {
        FZ_CHECK(input == NULL && strstr(fz_err_text(), path) != NULL &&
                     strstr(fz_err_text(), "amq filter file") != NULL,
                 "an amq filter file as INPUT: opened %d, '%s'", input != NULL, fz_err_text());
        close(fd);
        free(ref);
        free(got);
        return 0;
    }
    FZ_CHECK(input != NULL, "open: %s", fz_err_text());
    /* cli_input_is_gzip: decompressed, by any codec. */
    other = fmt == CODEC_ZSTD || fmt == CODEC_XZ || fmt == CODEC_BZIP2;
    FZ_CHECK(cli_input_is_gzip(input) == (gzip || other), "compressed %d, expected %d",
             cli_input_is_gzip(input), gzip || other);
    FZ_CHECK(cli_input_is_regular(input) == !is_pipe, "regular %d for a %s",
             cli_input_is_regular(input), is_pipe ? "pipe" : "file");
    while (got_len < FZ_MAX_OUT) {
        size_t ask = chunk < FZ_MAX_OUT - got_len ? chunk : FZ_MAX_OUT - got_len;
        r = cli_input_read(input, got + got_len, ask);
        if (r <= 0)
            break;
        FZ_CHECK((size_t)r <= ask, "read %zd bytes, asked for %zu", r, ask);
        got_len += (size_t)r;
    }

    if (other) {
        /* Decoded by its own library, not this target's reference: only
         * how it ends is checked. */
        FZ_CHECK(r >= -1, "read returned %zd", r);
        FZ_CHECK(r != -1 || (strncmp(fz_err_text(), "amq: ", 5) == 0 &&
                             strstr(fz_err_text(), path) != NULL),
                 "an error without a message naming the input: '%s'", fz_err_text());
    } else {
        FZ_CHECK(got_len <= ref_len && (got_len == 0 || memcmp(got, ref, got_len) == 0),
                 "the %zu bytes read are not a prefix of the reference's %zu", got_len,
                 ref_len);
        if (want == 0) {
            FZ_CHECK(r == 0 && got_len == ref_len, "valid data: read %zd, %zu of %zu bytes (%s)",
                     r, got_len, ref_len, fz_err_text());
            FZ_CHECK(cli_input_read(input, got, 1) == 0, "a second end of input is not the end");
            FZ_CHECK(fz_err_text()[0] == '\0', "valid data, yet printed: %s", fz_err_text());
            if (!is_pipe)
                FZ_CHECK(cli_input_pos(input) == n && cli_input_size(input) == n,
                         "at the end the position is %llu of %llu, the file %zu",
                         (unsigned long long)cli_input_pos(input),
                         (unsigned long long)cli_input_size(input), n);
        } else if (want < 0) {
            FZ_CHECK(r == -1, "invalid gzip data read to the end without an error (%zu bytes)",
                     got_len);
            FZ_CHECK(strncmp(fz_err_text(), "amq: ", 5) == 0 && strstr(fz_err_text(), path) != NULL,
                     "an error without a message naming the input: '%s'", fz_err_text());
        }
    }
    FZ_CHECK(cli_input_pos(input) <= (is_pipe ? n : cli_input_size(input)),
             "position %llu past the input", (unsigned long long)cli_input_pos(input));
    cli_input_close(input);
    close(fd);
    free(ref);
    free(got);
    return 0;
}
