/*
 * journal.c - the in-place add's journal: its format and its reader, below
 * the file reader (file.c applies a journal a crash left); the writer is
 * src/inplace.c.
 *
 * The journal ("DIR/.NAME.amqjournal"), little-endian:
 *    0  8  magic "AMQJRNL1"
 *    8  8  size of the file it applies to
 *   16  8  number of records
 *   24  8  inode number of the file it applies to
 *   32  8  XXH3-64 of the file's header area before the commit
 *   40     records: 8 offset, 4 length, 4 zero, then the bytes; the first
 *          is the new header area
 * A journal applies only to the file it was written for: same size, same
 * inode, and a header area that is the old one or the new one - a file
 * replaced since, by any tool, is never touched by a stale journal.
 *   end 8  XXH3-64 of every byte before
 * A record holds the new bytes of a range of the file (the header area, a
 * run of changed 64-byte lines of a payload chunk).  Applying a journal twice gives the same
 * file, so a crash while one is being applied is recovered by applying it
 * again; a journal whose checksum fails was never complete, and the file
 * was not touched before it was (the commit fsyncs it first).
 */
#include "common/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/container.h"
#include "common/endian.h"

/* ---- the journal ---------------------------------------------------------------------- */

int amq_journal_path(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    int dirlen = slash != NULL ? (int)(slash - path) + 1 : 0;
    int n = snprintf(out, cap, "%.*s.%s.amqjournal", dirlen, path,
                     slash != NULL ? slash + 1 : path);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static int journal_valid(const uint8_t *j, size_t len, uint64_t file_size, uint64_t ino)
{
    uint64_t n, i, off, rlen;
    size_t pos = AMQ_JOURNAL_HEAD;

    if (len < AMQ_JOURNAL_HEAD + 8 || memcmp(j, AMQ_JOURNAL_MAGIC, 8) != 0 ||
        amq_load64(j + 8) != file_size || amq_load64(j + 24) != ino ||
        amq_load64(j + len - 8) != amq_checksum(j, len - 8))
        return 0;
    n = amq_load64(j + 16);
    for (i = 0; i < n; i++) {
        if (len - 8 - pos < AMQ_JOURNAL_RECORD_HEAD)
            return 0;
        off = amq_load64(j + pos);
        rlen = amq_load32(j + pos + 8);
        pos += AMQ_JOURNAL_RECORD_HEAD;
        if (rlen > len - 8 - pos || off > file_size || rlen > file_size - off)
            return 0;
        pos += (size_t)rlen;
    }
    /* at least the first record, the file's head (offset 0), whose length readers take */
    return pos == len - 8 && n > 0 && amq_load64(j + AMQ_JOURNAL_HEAD) == 0;
}

int amq_journal_load(const char *path, uint64_t file_size, uint64_t ino, const amq_allocator *a,
                     uint8_t **buf, size_t *len)
{
    char jpath[4200];
    struct stat st;
    uint8_t *j = NULL;
    size_t got = 0;
    ssize_t r;
    int fd, e;

    *buf = NULL;
    if (amq_journal_path(path, jpath, sizeof jpath) != 0)
        return 0;
    fd = open(jpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) /* none (a name too long for one: the writer could not have made it) */
        return errno == ENOENT || errno == ENAMETOOLONG || errno == ENOTDIR ? 0 : AMQ_EIO;
    if (fstat(fd, &st) != 0)
        goto io_error;
    /* A journal never holds more than the file plus its record heads. */
    if (!S_ISREG(st.st_mode) || st.st_size < AMQ_JOURNAL_HEAD + 8 ||
        (uint64_t)st.st_size > file_size * 2 + (1u << 20)) {
        close(fd);
        return 0;
    }
    j = amq_malloc(a, (size_t)st.st_size);
    if (j == NULL) {
        close(fd);
        return AMQ_ENOMEM;
    }
    while (got < (size_t)st.st_size) {
        r = read(fd, j + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto io_error;
        if (r == 0) /* shorter than it was: torn under a writer's O_TRUNC, checked below */
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != (size_t)st.st_size || !journal_valid(j, got, file_size, ino)) {
        amq_free(a, j, (size_t)st.st_size);
        return 0;
    }
    *buf = j;
    *len = got;
    return 1;
io_error:
    e = errno;
    if (j != NULL)
        amq_free(a, j, (size_t)st.st_size);
    close(fd);
    errno = e;
    return AMQ_EIO;
}

int amq_journal_matches(const uint8_t *j, const uint8_t *head, size_t avail)
{
    uint32_t hlen;
    uint64_t h;
    if (amq_load64(j + 16) == 0 || amq_load64(j + AMQ_JOURNAL_HEAD) != 0)
        return 0;
    hlen = amq_load32(j + AMQ_JOURNAL_HEAD + 8); /* the first record's: there is one */
    if (hlen > avail)
        return 0;
    h = amq_checksum(head, hlen);
    return h == amq_load64(j + 32) ||
           h == amq_checksum(j + AMQ_JOURNAL_HEAD + AMQ_JOURNAL_RECORD_HEAD, hlen);
}

void amq_journal_apply_mem(const uint8_t *j, size_t jlen, uint8_t *file)
{
    uint64_t n = amq_load64(j + 16), i;
    size_t pos = AMQ_JOURNAL_HEAD;
    (void)jlen;
    for (i = 0; i < n; i++) {
        uint64_t off = amq_load64(j + pos);
        uint32_t rlen = amq_load32(j + pos + 8);
        memcpy(file + off, j + pos + AMQ_JOURNAL_RECORD_HEAD, rlen);
        pos += AMQ_JOURNAL_RECORD_HEAD + rlen;
    }
}
