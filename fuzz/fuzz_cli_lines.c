/*
 * fuzz_cli_lines.c - the amq tool's line reader (cli/lines.c), which turns
 * untrusted input files and pipes into keys.
 *
 * The input is read twice, as a regular file (the mapped path: a memfd)
 * and as a pipe on standard input (the stream path), in batches of a
 * fuzz-chosen size, and compared with a reference split: lines end at LF,
 * the last line may lack it, an empty input has no lines, a key is its
 * line minus one trailing CR; the reader's position ends at the input's
 * size.  The reader's block is 64 bytes here (1 MiB in the tool) so that
 * lines straddle reads and long lines grow the buffer.  Input: u8 batch
 * size (1 + value % 16), then the text.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli_capture.h"

/* Small reads, so that lines straddle reads and the buffer grows for long
 * lines - the stream path's hard cases - within a small input. */
#define READ_BLOCK ((size_t)64)

#include "../cli/util.c"
#include "../cli/lines.c"

#define MAX_INPUT 60000 /* under the default pipe buffer: no writer thread */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_cli_init();
    return 0;
}

static void compare(cli_reader *r, const uint8_t *text, size_t size, size_t batch,
                    const char *how)
{
    cli_line lines[16];
    size_t n, i, pos = 0, nlines = 0;

    for (;;) {
        FZ_CHECK(cli_reader_next(r, lines, batch, &n) == 0, "%s: read error", how);
        FZ_CHECK(n <= batch, "%s: %zu lines in a batch of %zu", how, n, batch);
        if (n == 0)
            break;
        for (i = 0; i < n; i++, nlines++) {
            const uint8_t *lf;
            size_t len, key;
            FZ_CHECK(pos < size, "%s: line %zu past the end", how, nlines);
            lf = memchr(text + pos, '\n', size - pos);
            len = lf != NULL ? (size_t)(lf - (text + pos)) : size - pos;
            key = (len > 0 && text[pos + len - 1] == '\r') ? len - 1 : len;
            FZ_CHECK(lines[i].len == len && lines[i].key_len == key,
                     "%s: line %zu is %zu bytes (key %zu), expected %zu (%zu)", how, nlines,
                     lines[i].len, lines[i].key_len, len, key);
            FZ_CHECK(len == 0 || memcmp(lines[i].data, text + pos, len) == 0,
                     "%s: line %zu has other bytes", how, nlines);
            pos += len + (lf != NULL);
        }
    }
    FZ_CHECK(pos == size, "%s: lines cover %zu of %zu bytes", how, pos, size);
    FZ_CHECK(cli_reader_pos(r) == size, "%s: position %llu, size %zu", how,
             (unsigned long long)cli_reader_pos(r), size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    size_t batch = 1 + fz_u8(&in) % 16u;
    char path[64];
    cli_reader *r;
    int fd, p[2], saved;

    if (in.n > MAX_INPUT)
        in.n = MAX_INPUT;

    /* A regular file. */
    fd = memfd_create("fuzz-lines", MFD_CLOEXEC);
    FZ_CHECK(fd >= 0, "memfd_create failed");
    FZ_CHECK(in.n == 0 || write(fd, in.p, in.n) == (ssize_t)in.n, "write failed");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    r = cli_reader_open(path);
    FZ_CHECK(r != NULL, "open %s: %s", path, fz_err_text());
    compare(r, in.p, in.n, batch, "file");
    cli_reader_close(r);
    close(fd);

    /* A pipe on standard input. */
    FZ_CHECK(pipe(p) == 0, "pipe failed");
    FZ_CHECK(in.n == 0 || write(p[1], in.p, in.n) == (ssize_t)in.n, "pipe write failed");
    close(p[1]);
    saved = dup(STDIN_FILENO);
    FZ_CHECK(saved >= 0 && dup2(p[0], STDIN_FILENO) == STDIN_FILENO, "dup2 failed");
    close(p[0]);
    r = cli_reader_open("-");
    FZ_CHECK(r != NULL, "open stdin: %s", fz_err_text());
    compare(r, in.p, in.n, batch, "pipe");
    cli_reader_close(r);
    FZ_CHECK(dup2(saved, STDIN_FILENO) == STDIN_FILENO, "dup2 back failed");
    close(saved);
    return 0;
}
