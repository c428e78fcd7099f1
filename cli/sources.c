/*
 * sources.c - what the two-pass commands (dedup, build) need of their
 * INPUTs: reading them twice, their total size, an estimate of their lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define SPILL_BLOCK ((size_t)1 << 20)
#define SAMPLE_BYTES ((size_t)1 << 20)

/* Where the temporary copies go: $TMPDIR, else /tmp. */
static const char *tmp_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir != NULL && *dir != '\0' ? dir : "/tmp";
}

static int tmp_file(void)
{
    const char *dir = tmp_dir();
    char path[4096];
    int fd;

    if (snprintf(path, sizeof path, "%s/amq-spill-XXXXXX", dir) >= (int)sizeof path) {
        cli_error("TMPDIR is too long");
        return -1;
    }
    fd = mkstemp(path);
    if (fd < 0) {
        cli_error("cannot create a temporary file in %s: %s", dir, strerror(errno));
        return -1;
    }
    /* Unlinked at once: nothing is left behind, whatever happens. */
    unlink(path);
    return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    ssize_t w;
    while (n > 0) {
        w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Copies src to a temporary file; its descriptor, or -1. */
static int spill(const cli_src *src, cli_progress *progress)
{
    cli_input *in;
    uint8_t *buf;
    uint64_t total = 0;
    ssize_t got;
    int fd, rc = 0;

    in = cli_input_open(src->path, src->raw);
    if (in == NULL)
        return -1;
    buf = malloc(SPILL_BLOCK);
    fd = buf != NULL ? tmp_file() : -1;
    if (buf == NULL)
        cli_error("out of memory");
    if (fd < 0) {
        free(buf);
        cli_input_close(in);
        return -1;
    }
    cli_progress_phase(progress, "copying standard input to a temporary file", 0);
    for (;;) {
        got = cli_input_read(in, buf, SPILL_BLOCK);
        if (got <= 0) {
            rc = (int)got;
            break;
        }
        if (write_all(fd, buf, (size_t)got) != 0) {
            /* Name the directory: a full disk there is the user's to free or change. */
            cli_error("cannot write the temporary copy of %s in %s ($TMPDIR, default /tmp): %s",
                      src->name, tmp_dir(), strerror(errno));
            rc = -1;
            break;
        }
        total += (uint64_t)got;
        cli_progress_update(progress, total, 0);
    }
    free(buf);
    cli_input_close(in);
    if (rc != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int cli_srcs_make_rereadable(cli_src *srcs, size_t n, cli_progress *progress)
{
    struct stat st;
    off_t here;
    size_t i;
    int fd;

    for (i = 0; i < n; i++) {
        if (srcs[i].fd >= 0)
            continue;
        if (strcmp(srcs[i].path, "-") == 0) {
            if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
                (here = lseek(STDIN_FILENO, 0, SEEK_CUR)) >= 0) {
                srcs[i].fd = STDIN_FILENO;
                srcs[i].offset = (int64_t)here;
                continue;
            }
        } else if (stat(srcs[i].path, &st) == 0 && S_ISREG(st.st_mode)) {
            continue;
        }
        fd = spill(&srcs[i], progress);
        if (fd < 0)
            return -1;
        srcs[i].fd = fd;
        srcs[i].raw = 1;
        srcs[i].offset = 0;
        srcs[i].path = NULL;
    }
    return 0;
}

void cli_srcs_release(cli_src *srcs, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (srcs[i].fd > STDIN_FILENO)
            close(srcs[i].fd);
        srcs[i].fd = -1;
    }
}

static cli_input *open_src(const cli_src *s)
{
    if (s->fd >= 0) {
        if (lseek(s->fd, (off_t)s->offset, SEEK_SET) != (off_t)s->offset) {
            cli_error("%s: cannot rewind", s->name);
            return NULL;
        }
        return cli_input_open_fd(s->fd, s->name, s->raw, 0);
    }
    return cli_input_open(s->path, s->raw);
}

uint64_t cli_srcs_bytes(const cli_src *srcs, size_t n)
{
    struct stat st;
    uint64_t total = 0;
    size_t i;
    int ok;

    for (i = 0; i < n; i++) {
        if (srcs[i].fd >= 0)
            ok = fstat(srcs[i].fd, &st) == 0;
        else
            ok = strcmp(srcs[i].path, "-") != 0 && stat(srcs[i].path, &st) == 0;
        if (ok && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= (uint64_t)srcs[i].offset)
            total += (uint64_t)st.st_size - (uint64_t)srcs[i].offset;
    }
    return total;
}

int cli_src_is_rereadable(const cli_src *s)
{
    struct stat st;
    if (s->fd >= 0)
        return fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode);
    return strcmp(s->path, "-") != 0 && stat(s->path, &st) == 0 && S_ISREG(st.st_mode);
}

int cli_srcs_estimate_lines(const cli_src *srcs, size_t n, uint64_t *lines)
{
    uint8_t *buf;
    cli_input *in;
    uint64_t total = 0, size, pos, count;
    size_t used, i, j;
    ssize_t got;
    int eof;

    buf = malloc(SAMPLE_BYTES);
    if (buf == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < n; i++) {
        /* Reading a pipe here would take its first MiB from the real pass. */
        if (!cli_src_is_rereadable(&srcs[i]))
            continue;
        in = open_src(&srcs[i]);
        if (in == NULL) {
            free(buf);
            return -1;
        }
        used = 0;
        eof = 0;
        while (used < SAMPLE_BYTES) {
            got = cli_input_read(in, buf + used, SAMPLE_BYTES - used);
            if (got < 0) {
                cli_input_close(in);
                free(buf);
                return -1;
            }
            if (got == 0) {
                eof = 1;
                break;
            }
            used += (size_t)got;
        }
        count = 0;
        for (j = 0; j < used; j++)
            count += buf[j] == '\n';
        if (eof) {
            total += count + (used > 0 && buf[used - 1] != '\n');
        } else {
            size = cli_input_size(in);
            pos = cli_input_pos(in) - (uint64_t)srcs[i].offset;
            if (size > (uint64_t)srcs[i].offset)
                size -= (uint64_t)srcs[i].offset;
            if (count == 0)
                count = 1;
            if (size > 0 && pos > 0)
                total += (uint64_t)((double)count * ((double)size / (double)pos)) + 1;
        }
        cli_input_close(in);
    }
    free(buf);
    *lines = total;
    return 0;
}
