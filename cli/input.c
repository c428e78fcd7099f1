/*
 * input.c - the bytes of one INPUT: a file, standard input or an open
 * descriptor, transparently decompressed when it starts with gzip's magic
 * bytes (1f 8b).
 *
 * Plain data is read with large read() calls straight into the caller's
 * buffer: on a file in the page cache that runs at memory-copy speed and,
 * unlike mmap, costs no page faults and keeps the resident size bounded
 * (see docs/benchmarks-tool.md).  Gzip data goes through zlib's inflate;
 * concatenated members (`cat a.gz b.gz`) are one stream, as gzip -d sees
 * them; a stream cut short, bytes after the last member that are not
 * another member, and corrupt data are errors that name the input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"

#define GZ_IN_BLOCK ((size_t)1 << 18)

struct cli_input {
    char *name;
    int fd, own_fd;
    int regular;
    uint64_t size;     /* file size, 0 if unknown */
    uint64_t consumed; /* bytes of the file read so far */
    /* bytes read while sniffing for the magic, handed out first */
    uint8_t peek[2];
    size_t npeek, peek_off;
    int eof;
    /* gzip */
    int gzip;
    z_stream zs;
    int zs_init;
    uint8_t *zbuf;
    int member_done; /* between two members: look for another one */
};

static ssize_t read_fd(cli_input *in, void *buf, size_t cap)
{
    ssize_t got;

    for (;;) {
        got = read(in->fd, buf, cap);
        if (got < 0 && errno == EINTR)
            continue;
        break;
    }
    if (got < 0) {
        cli_error("%s: read error: %s", in->name, strerror(errno));
        return -1;
    }
    in->consumed += (uint64_t)got;
    return got;
}

static int start_gzip(cli_input *in)
{
    memset(&in->zs, 0, sizeof in->zs);
    /* 15 + 16: a gzip wrapper (not zlib's, not raw deflate). */
    if (inflateInit2(&in->zs, 15 + 16) != Z_OK) {
        cli_error("%s: cannot start gzip decompression", in->name);
        return -1;
    }
    in->zs_init = 1;
    in->zbuf = malloc(GZ_IN_BLOCK);
    if (in->zbuf == NULL) {
        cli_error("out of memory");
        return -1;
    }
    memcpy(in->zbuf, in->peek, in->npeek);
    in->zs.next_in = in->zbuf;
    in->zs.avail_in = (uInt)in->npeek;
    in->npeek = 0;
    in->gzip = 1;
    return 0;
}

/* Reads the first two bytes (or fewer at end of input) and decides. */
static int sniff(cli_input *in, int raw)
{
    ssize_t got;

    while (in->npeek < 2) {
        got = read_fd(in, in->peek + in->npeek, 2 - in->npeek);
        if (got < 0)
            return -1;
        if (got == 0) {
            in->eof = 1;
            break;
        }
        in->npeek += (size_t)got;
    }
    if (!raw && in->npeek == 2 && in->peek[0] == 0x1f && in->peek[1] == 0x8b)
        return start_gzip(in);
    return 0;
}

cli_input *cli_input_open_fd(int fd, const char *name, int raw, int own_fd)
{
    cli_input *in = calloc(1, sizeof *in);
    struct stat st;

    if (in == NULL || (in->name = strdup(name)) == NULL) {
        free(in);
        cli_error("out of memory");
        if (own_fd)
            close(fd);
        return NULL;
    }
    in->fd = fd;
    in->own_fd = own_fd;
    if (fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            cli_error("%s: is a directory", name);
            cli_input_close(in);
            return NULL;
        }
        if (S_ISREG(st.st_mode)) {
            in->regular = 1;
            in->size = (uint64_t)st.st_size;
            in->consumed = (uint64_t)lseek(fd, 0, SEEK_CUR);
            if (in->consumed > in->size)
                in->consumed = in->size;
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        }
    }
    if (sniff(in, raw) != 0) {
        cli_input_close(in);
        return NULL;
    }
    return in;
}

cli_input *cli_input_open(const char *path, int raw)
{
    int fd;

    if (strcmp(path, "-") == 0)
        return cli_input_open_fd(STDIN_FILENO, "(standard input)", raw, 0);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error("%s: %s", path, strerror(errno));
        return NULL;
    }
    return cli_input_open_fd(fd, path, raw, 1);
}

void cli_input_close(cli_input *in)
{
    if (in == NULL)
        return;
    if (in->zs_init)
        inflateEnd(&in->zs);
    free(in->zbuf);
    if (in->own_fd && in->fd >= 0)
        close(in->fd);
    free(in->name);
    free(in);
}

const char *cli_input_name(const cli_input *in)
{
    return in->name;
}

int cli_input_is_regular(const cli_input *in)
{
    return in->regular;
}

int cli_input_is_gzip(const cli_input *in)
{
    return in->gzip;
}

uint64_t cli_input_size(const cli_input *in)
{
    return in->size;
}

uint64_t cli_input_pos(const cli_input *in)
{
    /* Bytes read ahead but not yet decoded or handed out do not count. */
    uint64_t ahead = in->gzip ? in->zs.avail_in : in->npeek - in->peek_off;
    return in->consumed - ahead;
}

static ssize_t read_gzip(cli_input *in, uint8_t *buf, size_t cap)
{
    ssize_t got;
    int zrc;

    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    in->zs.next_out = buf;
    in->zs.avail_out = (uInt)cap;
    while (in->zs.avail_out == cap) {
        if (in->zs.avail_in == 0 && !in->eof) {
            got = read_fd(in, in->zbuf, GZ_IN_BLOCK);
            if (got < 0)
                return -1;
            if (got == 0)
                in->eof = 1;
            in->zs.next_in = in->zbuf;
            in->zs.avail_in = (uInt)got;
        }
        if (in->member_done) {
            /* After a member: end of input, another member, or garbage. */
            if (in->zs.avail_in == 0 && in->eof)
                return 0;
            if (in->zs.avail_in == 0)
                continue;
            if (in->zs.next_in[0] != 0x1f ||
                (in->zs.avail_in > 1 && in->zs.next_in[1] != 0x8b)) {
                cli_error("%s: trailing bytes after the gzip data", in->name);
                return -1;
            }
            if (inflateReset(&in->zs) != Z_OK) {
                cli_error("%s: gzip error", in->name);
                return -1;
            }
            in->member_done = 0;
        }
        if (in->zs.avail_in == 0 && in->eof) {
            cli_error("%s: truncated gzip data (unexpected end of file)", in->name);
            return -1;
        }
        zrc = inflate(&in->zs, Z_NO_FLUSH);
        if (zrc == Z_STREAM_END) {
            in->member_done = 1;
        } else if (zrc == Z_BUF_ERROR) {
            /* No progress possible: more input is needed (read above). */
            if (in->zs.avail_in != 0) {
                cli_error("%s: gzip error", in->name);
                return -1;
            }
        } else if (zrc != Z_OK) {
            cli_error("%s: corrupt gzip data: %s", in->name,
                      zrc == Z_MEM_ERROR ? "out of memory"
                                         : (in->zs.msg != NULL ? in->zs.msg : "inflate failed"));
            return -1;
        }
    }
    return (ssize_t)(cap - in->zs.avail_out);
}

ssize_t cli_input_read(cli_input *in, void *buf, size_t cap)
{
    uint8_t *out = buf;
    size_t n;

    if (cap == 0)
        return 0;
    if (in->gzip)
        return read_gzip(in, out, cap);
    if (in->peek_off < in->npeek) {
        n = in->npeek - in->peek_off;
        if (n > cap)
            n = cap;
        memcpy(out, in->peek + in->peek_off, n);
        in->peek_off += n;
        return (ssize_t)n;
    }
    if (in->eof)
        return 0;
    if (cap > ((size_t)1 << 30))
        cap = (size_t)1 << 30;
    return read_fd(in, out, cap);
}
