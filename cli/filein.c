/*
 * filein.c - the filter a command reads: a file, or "-" for standard input.
 *
 * A pipe cannot be mapped, so a filter on standard input (`cat f.amq | amq
 * info -`) is read into memory and loaded from there; only as far as its
 * header says it goes, so that `amq info - </dev/zero` stops at once
 * instead of reading forever.
 */
#define AMQ_ADVANCED_API 1 /* amq_filter_peek: the size a header declares */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amq/advanced.h"
#include "cli.h"

/* Standard input is read once: a second "-" would find it empty. */
static int stdin_taken;

/* A borrowed filter views these bytes until the process ends (one at most);
 * freed at exit, after the command freed its filter (and kept reachable:
 * a static written and never read is dropped by the compiler, a leak). */
static uint8_t *stdin_bytes;

static void stdin_bytes_free(void)
{
    free(stdin_bytes);
    stdin_bytes = NULL;
}

int cli_is_stdin_path(const char *path)
{
    return strcmp(path, "-") == 0;
}

static uint64_t physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : UINT64_MAX;
}

/* Grows *buf to cap bytes; -1 with a message when that fails. */
static int grow(uint8_t **buf, size_t cap)
{
    uint8_t *nb = realloc(*buf, cap);
    if (nb == NULL) {
        cli_error("standard input: out of memory for a %zu-byte filter", cap);
        return -1;
    }
    *buf = nb;
    return 0;
}

/* 1 (after a message) if standard input goes on past the filter: the
 * load refuses bytes after it, and this read stops at its end. */
static int more_follows(void)
{
    char c;
    ssize_t got;

    do
        got = read(STDIN_FILENO, &c, 1);
    while (got < 0 && errno == EINTR);
    if (got <= 0)
        return 0; /* the end, or an error the filter's bytes do not need */
    cli_error("standard input: more bytes follow the filter its header declares "
              "(one filter file per '-')");
    return 1;
}

/* The bytes of standard input up to the end of the filter its header
 * declares (or to its end, or to the first bytes that are no header: the
 * load then says what is wrong with them).  NULL after a message. */
static uint8_t *read_stdin(size_t *len)
{
    size_t cap = 65536, used = 0, want = 0, size;
    uint8_t *buf = NULL;
    amq_errinfo err;
    ssize_t got;
    int rc;

    if (grow(&buf, cap) != 0)
        return NULL;
    for (;;) {
        if (used == cap) {
            if (cap > SIZE_MAX / 2) {
                cli_error("standard input: too large");
                goto fail;
            }
            cap *= 2;
            if (grow(&buf, cap) != 0)
                goto fail;
        }
        got = read(STDIN_FILENO, buf + used, (want != 0 ? want : cap) - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            cli_error("standard input: read error: %s", strerror(errno));
            goto fail;
        }
        if (got == 0)
            break;
        used += (size_t)got;
        if (want != 0) {
            if (used == want && more_follows())
                goto fail;
            if (used == want)
                break;
            continue;
        }
        memset(&err, 0, sizeof err);
        rc = amq_filter_peek(buf, used, &size, NULL, &err);
        if (rc == AMQ_ETRUNC)
            continue; /* the header area is not all there yet */
        if (rc != AMQ_OK)
            break; /* not a filter: the load reports why */
        if ((uint64_t)size > physical_memory()) {
            cli_error("standard input: the header declares a %zu-byte filter, more than this "
                      "machine's memory (a filter on standard input is read into memory)",
                      size);
            goto fail;
        }
        if (used > size)
            break; /* the load refuses the bytes past it */
        if (used == size && more_follows())
            goto fail;
        if (used == size)
            break;
        want = size;
        if (cap < want) {
            cap = want;
            if (grow(&buf, cap) != 0)
                goto fail;
        }
    }
    *len = used;
    return buf;
fail:
    free(buf);
    return NULL;
}

int cli_filter_open(const char *path, unsigned flags, amq_filter **out)
{
    amq_errinfo err;
    uint8_t *buf;
    size_t len = 0;
    int rc;

    *out = NULL;
    memset(&err, 0, sizeof err);
    if (!cli_is_stdin_path(path)) {
        rc = amq_filter_open(path, flags, NULL, out, &err);
        if (rc != AMQ_OK)
            cli_lib_error(rc, &err, NULL);
        return rc == AMQ_OK ? 0 : -1;
    }
    if (stdin_taken) {
        cli_error("standard input ('-') is given twice: it holds one filter");
        return -1;
    }
    stdin_taken = 1;
    if (isatty(STDIN_FILENO)) {
        cli_error("standard input ('-') is a terminal: pipe or redirect a filter file into it");
        return -1;
    }
    buf = read_stdin(&len);
    if (buf == NULL)
        return -1;
    /* AMQ_OPEN_MMAP asks for a read-only view: of these bytes, kept
     * (a copy would double the memory a large filter takes). */
    rc = amq_filter_deserialize(buf, len, flags, NULL, out, &err);
    if (rc != AMQ_OK) {
        cli_error("standard input: %s", err.msg[0] ? err.msg : amq_strerror(rc));
        free(buf);
        return -1;
    }
    if (flags & AMQ_OPEN_MMAP) {
        stdin_bytes = buf;
        (void)atexit(stdin_bytes_free);
    } else
        free(buf);
    return 0;
}
