/*
 * lines.c - reading keys as lines, fast: regular files are mapped and
 * scanned with memchr; pipes are read in large blocks into a buffer that
 * grows for long lines.  No allocation per line; a batch of lines points
 * straight into the mapping or the buffer.
 *
 * A key is a line without its LF; one trailing CR is not part of the key
 * (CRLF files give the same keys as LF files); the empty line is a key; a
 * last line without LF is a line.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define READ_BLOCK ((size_t)1 << 20)

struct cli_reader {
    const char *name;
    int fd;
    /* mapped mode */
    const uint8_t *map;
    size_t map_len;
    size_t pos;
    /* stream mode */
    uint8_t *buf;
    size_t cap, start, end, scan;
    int eof;
    uint64_t consumed;
    uint64_t size;
};

cli_reader *cli_reader_open(const char *path)
{
    cli_reader *r = calloc(1, sizeof *r);
    struct stat st;
    void *p;

    if (r == NULL) {
        cli_error("out of memory");
        return NULL;
    }
    r->name = strcmp(path, "-") == 0 ? "(standard input)" : path;
    if (strcmp(path, "-") == 0) {
        r->fd = STDIN_FILENO;
    } else {
        r->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (r->fd < 0) {
            cli_error("%s: %s", path, strerror(errno));
            free(r);
            return NULL;
        }
    }
    if (fstat(r->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error("%s: is a directory", r->name);
        cli_reader_close(r);
        return NULL;
    }
    if (fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= SIZE_MAX) {
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, r->fd, 0);
        if (p != MAP_FAILED) {
            (void)madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
            r->map = p;
            r->map_len = (size_t)st.st_size;
            r->size = (uint64_t)st.st_size;
            return r;
        }
    }
    if (fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode))
        r->size = (uint64_t)st.st_size;
    r->cap = READ_BLOCK;
    r->buf = malloc(r->cap);
    if (r->buf == NULL) {
        cli_error("out of memory");
        cli_reader_close(r);
        return NULL;
    }
    return r;
}

void cli_reader_close(cli_reader *r)
{
    if (r == NULL)
        return;
    if (r->map != NULL)
        munmap((void *)(uintptr_t)r->map, r->map_len);
    if (r->fd != STDIN_FILENO && r->fd >= 0)
        close(r->fd);
    free(r->buf);
    free(r);
}

uint64_t cli_reader_pos(const cli_reader *r)
{
    return r->map != NULL ? (uint64_t)r->pos : r->consumed;
}

uint64_t cli_reader_size(const cli_reader *r)
{
    return r->size;
}

static void set_line(cli_line *l, const uint8_t *p, size_t len)
{
    l->data = p;
    l->len = len;
    l->key_len = (len > 0 && p[len - 1] == '\r') ? len - 1 : len;
}

static int next_mapped(cli_reader *r, cli_line *lines, size_t max, size_t *n)
{
    const uint8_t *base = r->map, *p, *lf;
    size_t count = 0;

    while (count < max && r->pos < r->map_len) {
        p = base + r->pos;
        lf = memchr(p, '\n', r->map_len - r->pos);
        if (lf == NULL) {
            set_line(&lines[count++], p, r->map_len - r->pos);
            r->pos = r->map_len;
            break;
        }
        set_line(&lines[count++], p, (size_t)(lf - p));
        r->pos = (size_t)(lf - base) + 1;
    }
    *n = count;
    return 0;
}

static int refill(cli_reader *r)
{
    ssize_t got;
    uint8_t *nb;

    /* Keep the unfinished line, at the front. */
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->scan -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap) {
        if (r->cap > SIZE_MAX / 2) {
            cli_error("%s: line too long", r->name);
            return -1;
        }
        nb = realloc(r->buf, r->cap * 2);
        if (nb == NULL) {
            cli_error("%s: out of memory for a line of %zu bytes", r->name, r->end);
            return -1;
        }
        r->buf = nb;
        r->cap *= 2;
    }
    for (;;) {
        got = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (got < 0 && errno == EINTR)
            continue;
        break;
    }
    if (got < 0) {
        cli_error("%s: read error: %s", r->name, strerror(errno));
        return -1;
    }
    if (got == 0)
        r->eof = 1;
    r->end += (size_t)got;
    return 0;
}

static int next_stream(cli_reader *r, cli_line *lines, size_t max, size_t *n)
{
    size_t count = 0;
    uint8_t *lf;

    for (;;) {
        while (count < max) {
            lf = memchr(r->buf + r->scan, '\n', r->end - r->scan);
            if (lf == NULL) {
                r->scan = r->end;
                break;
            }
            set_line(&lines[count++], r->buf + r->start, (size_t)(lf - (r->buf + r->start)));
            r->consumed += (uint64_t)(lf - (r->buf + r->start)) + 1;
            r->start = (size_t)(lf - r->buf) + 1;
            r->scan = r->start;
        }
        if (count > 0)
            break;
        if (r->eof) {
            if (r->start < r->end) {
                set_line(&lines[count++], r->buf + r->start, r->end - r->start);
                r->consumed += r->end - r->start;
                r->start = r->scan = r->end;
            }
            break;
        }
        if (refill(r) != 0)
            return -1;
    }
    *n = count;
    return 0;
}

int cli_reader_next(cli_reader *r, cli_line *lines, size_t max, size_t *n)
{
    if (r->map != NULL)
        return next_mapped(r, lines, max, n);
    return next_stream(r, lines, max, n);
}

/* ---- the batched key loop ------------------------------------------------------------- */

int cli_for_each_batch(const amq_filter *f, char **inputs, int ninputs, cli_batch_fn fn,
                       void *ctx)
{
    static char dash[] = "-";
    static char *stdin_only[] = {dash};
    static cli_line lines[CLI_BATCH];
    static amq_hash128 hashes[CLI_BATCH];
    cli_reader *r;
    size_t n, i;
    int k, rc = 0;

    if (ninputs == 0) {
        inputs = stdin_only;
        ninputs = 1;
    }
    for (k = 0; k < ninputs && rc == 0; k++) {
        r = cli_reader_open(inputs[k]);
        if (r == NULL)
            return EXIT_TROUBLE;
        for (;;) {
            if (cli_reader_next(r, lines, CLI_BATCH, &n) != 0) {
                rc = EXIT_TROUBLE;
                break;
            }
            if (n == 0)
                break;
            for (i = 0; i < n; i++)
                hashes[i] = amq_filter_hash(f, lines[i].data, lines[i].key_len);
            rc = fn(ctx, lines, hashes, n);
            if (rc != 0)
                break;
        }
        cli_reader_close(r);
    }
    return rc;
}
