/*
 * input.c - the bytes of one INPUT: a file, standard input or an open
 * descriptor, transparently decompressed when it starts with the magic
 * bytes of gzip (1f 8b), zstd (28 b5 2f fd), xz (fd 37 7a 58 5a 00) or
 * bzip2 ("BZh1".."BZh9" and a block or end-of-stream magic), in the
 * reading thread.  An amq filter file (its magic) is refused: hashing its
 * bytes as lines is never what was meant (swapped arguments).
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
#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include "cli.h"

#define GZ_IN_BLOCK ((size_t)1 << 18)
#define SNIFF 10

/* CODEC_AMQ: an amq filter file's magic (refused as INPUT, never in use). */
enum { CODEC_PLAIN, CODEC_GZIP, CODEC_ZSTD, CODEC_XZ, CODEC_BZIP2, CODEC_AMQ };

struct cli_input {
    char *name;
    int fd, own_fd;
    int regular;
    uint64_t size;     /* file size, 0 if unknown */
    uint64_t consumed; /* bytes of the file read so far */
    /* bytes read while sniffing for the magic, handed out first */
    uint8_t peek[SNIFF];
    size_t npeek, peek_off;
    int eof;
    /* gzip */
    int gzip;
    z_stream zs;
    int zs_init;
    uint8_t *zbuf;
    int member_done; /* between two members: look for another one */
    /* zstd, xz, bzip2: the same input buffer (zbuf) and a decoder each */
    int codec;
    size_t in_pos, in_len; /* unconsumed input: zbuf[in_pos..in_len) */
    ZSTD_DStream *zstd;
    int zstd_mid;          /* inside a frame (ZSTD_decompressStream returned > 0) */
    lzma_stream xz;
    int xz_init;
    bz_stream bz;
    int bz_init, bz_done;
};

ssize_t (*cli_read_hook)(int fd, void *buf, size_t cap);

static ssize_t read_fd(cli_input *in, void *buf, size_t cap)
{
    ssize_t got;

    for (;;) {
        got = cli_read_hook != NULL ? cli_read_hook(in->fd, buf, cap) : read(in->fd, buf, cap);
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
    in->codec = CODEC_GZIP;
    return 0;
}

static const uint8_t amq_magic[8] = {0x89, 'A', 'M', 'Q', '\r', '\n', 0x1a, '\n'};

/* Moves the sniffed bytes into the compressed-input buffer. */
static int start_buffered(cli_input *in, int codec)
{
    in->zbuf = malloc(GZ_IN_BLOCK);
    if (in->zbuf == NULL) {
        cli_error("out of memory");
        return -1;
    }
    memcpy(in->zbuf, in->peek, in->npeek);
    in->in_pos = 0;
    in->in_len = in->npeek;
    in->npeek = 0;
    in->codec = codec;
    switch (codec) {
    case CODEC_ZSTD:
        in->zstd = ZSTD_createDStream();
        if (in->zstd == NULL || ZSTD_isError(ZSTD_initDStream(in->zstd))) {
            cli_error("%s: cannot start zstd decompression", in->name);
            return -1;
        }
        break;
    case CODEC_XZ: {
        lzma_stream init = LZMA_STREAM_INIT;
        in->xz = init;
        /* LZMA_CONCATENATED: `cat a.xz b.xz` is one input, as xz -d sees it. */
        if (lzma_stream_decoder(&in->xz, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
            cli_error("%s: cannot start xz decompression", in->name);
            return -1;
        }
        in->xz_init = 1;
        break;
    }
    case CODEC_BZIP2:
        memset(&in->bz, 0, sizeof in->bz);
        if (BZ2_bzDecompressInit(&in->bz, 0, 0) != BZ_OK) {
            cli_error("%s: cannot start bzip2 decompression", in->name);
            return -1;
        }
        in->bz_init = 1;
        break;
    default:
        break;
    }
    return 0;
}

static int is_bzip2(const uint8_t *p, size_t n)
{
    static const uint8_t block[6] = {0x31, 0x41, 0x59, 0x26, 0x53, 0x59};
    static const uint8_t eos[6] = {0x17, 0x72, 0x45, 0x38, 0x50, 0x90};
    return n >= 10 && p[0] == 'B' && p[1] == 'Z' && p[2] == 'h' && p[3] >= '1' &&
           p[3] <= '9' && (memcmp(p + 4, block, 6) == 0 || memcmp(p + 4, eos, 6) == 0);
}

/* What an INPUT whose first bytes are p[0..n) (n <= SNIFF) is read as, by
 * its magic bytes: a CODEC_*. */
static int input_format(const uint8_t *p, size_t n)
{
    static const uint8_t zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    static const uint8_t xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0x00};

    if (n >= 8 && memcmp(p, amq_magic, 8) == 0)
        return CODEC_AMQ;
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return CODEC_GZIP;
    if (n >= 4 && memcmp(p, zstd_magic, 4) == 0)
        return CODEC_ZSTD;
    if (n >= 6 && memcmp(p, xz_magic, 6) == 0)
        return CODEC_XZ;
    if (is_bzip2(p, n))
        return CODEC_BZIP2;
    return CODEC_PLAIN;
}

/* Reads the first SNIFF bytes (or fewer at end of input) and decides. */
static int sniff(cli_input *in, int raw)
{
    ssize_t got;
    int codec;

    while (in->npeek < SNIFF) {
        got = read_fd(in, in->peek + in->npeek, SNIFF - in->npeek);
        if (got < 0)
            return -1;
        if (got == 0) {
            in->eof = 1;
            break;
        }
        in->npeek += (size_t)got;
    }
    if (raw)
        return 0;
    codec = input_format(in->peek, in->npeek);
    if (codec == CODEC_AMQ) {
        cli_error("%s: is an amq filter file, not lines of keys (arguments swapped?)",
                  in->name);
        return -1;
    }
    if (codec == CODEC_GZIP)
        return start_gzip(in);
    return codec == CODEC_PLAIN ? 0 : start_buffered(in, codec);
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
    ZSTD_freeDStream(in->zstd);
    if (in->xz_init)
        lzma_end(&in->xz);
    if (in->bz_init)
        BZ2_bzDecompressEnd(&in->bz);
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
    return in->codec != CODEC_PLAIN;
}

uint64_t cli_input_size(const cli_input *in)
{
    return in->size;
}

uint64_t cli_input_pos(const cli_input *in)
{
    /* Bytes read ahead but not yet decoded or handed out do not count. */
    uint64_t ahead = in->gzip                     ? in->zs.avail_in
                     : in->codec != CODEC_PLAIN ? in->in_len - in->in_pos
                                                : in->npeek - in->peek_off;
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

/* More compressed input into zbuf when it is used up: 1 if there is some,
 * 0 at the end of the input, -1 on error. */
static int refill(cli_input *in)
{
    ssize_t got;
    if (in->in_pos < in->in_len)
        return 1;
    if (in->eof)
        return 0;
    got = read_fd(in, in->zbuf, GZ_IN_BLOCK);
    if (got < 0)
        return -1;
    in->in_pos = 0;
    in->in_len = (size_t)got;
    if (got == 0)
        in->eof = 1;
    return got > 0;
}

static ssize_t read_zstd(cli_input *in, uint8_t *buf, size_t cap)
{
    ZSTD_outBuffer out = {buf, cap, 0};
    ZSTD_inBuffer zin;
    size_t r;
    int more;

    while (out.pos == 0) {
        more = refill(in);
        if (more < 0)
            return -1;
        if (more == 0) {
            if (in->zstd_mid) {
                cli_error("%s: truncated zstd data (unexpected end of file)", in->name);
                return -1;
            }
            return 0;
        }
        zin.src = in->zbuf;
        zin.size = in->in_len;
        zin.pos = in->in_pos;
        r = ZSTD_decompressStream(in->zstd, &out, &zin);
        in->in_pos = zin.pos;
        if (ZSTD_isError(r)) {
            cli_error("%s: corrupt zstd data: %s", in->name, ZSTD_getErrorName(r));
            return -1;
        }
        in->zstd_mid = r != 0;
    }
    return (ssize_t)out.pos;
}

static ssize_t read_xz(cli_input *in, uint8_t *buf, size_t cap)
{
    lzma_ret r;
    int more;

    in->xz.next_out = buf;
    in->xz.avail_out = cap;
    while (in->xz.avail_out == cap) {
        more = refill(in);
        if (more < 0)
            return -1;
        in->xz.next_in = in->zbuf + in->in_pos;
        in->xz.avail_in = in->in_len - in->in_pos;
        r = lzma_code(&in->xz, more ? LZMA_RUN : LZMA_FINISH);
        in->in_pos = in->in_len - in->xz.avail_in;
        if (r == LZMA_STREAM_END)
            break;
        if (r == LZMA_BUF_ERROR && !more) {
            cli_error("%s: truncated xz data (unexpected end of file)", in->name);
            return -1;
        }
        if (r != LZMA_OK) {
            cli_error("%s: corrupt xz data (lzma error %d)", in->name, (int)r);
            return -1;
        }
    }
    return (ssize_t)(cap - in->xz.avail_out);
}

static ssize_t read_bzip2(cli_input *in, uint8_t *buf, size_t cap)
{
    int r, more;

    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    in->bz.next_out = (char *)buf;
    in->bz.avail_out = (unsigned)cap;
    while (in->bz.avail_out == cap) {
        more = refill(in);
        if (more < 0)
            return -1;
        if (in->bz_done) {
            /* After a stream: the end, or another stream (cat a.bz2 b.bz2). */
            if (!more)
                return 0;
            if (!is_bzip2(in->zbuf + in->in_pos, in->in_len - in->in_pos) &&
                in->in_len - in->in_pos >= 10) {
                cli_error("%s: trailing bytes after the bzip2 data", in->name);
                return -1;
            }
            BZ2_bzDecompressEnd(&in->bz);
            memset(&in->bz, 0, sizeof in->bz);
            if (BZ2_bzDecompressInit(&in->bz, 0, 0) != BZ_OK) {
                in->bz_init = 0;
                cli_error("%s: cannot restart bzip2 decompression", in->name);
                return -1;
            }
            in->bz.next_out = (char *)buf;
            in->bz.avail_out = (unsigned)cap;
            in->bz_done = 0;
        }
        if (!more) {
            cli_error("%s: truncated bzip2 data (unexpected end of file)", in->name);
            return -1;
        }
        in->bz.next_in = (char *)in->zbuf + in->in_pos;
        in->bz.avail_in = (unsigned)(in->in_len - in->in_pos);
        r = BZ2_bzDecompress(&in->bz);
        in->in_pos = in->in_len - in->bz.avail_in;
        if (r == BZ_STREAM_END)
            in->bz_done = 1;
        else if (r != BZ_OK) {
            cli_error("%s: corrupt bzip2 data (bzip2 error %d)", in->name, r);
            return -1;
        }
    }
    return (ssize_t)(cap - in->bz.avail_out);
}

ssize_t cli_input_read(cli_input *in, void *buf, size_t cap)
{
    uint8_t *out = buf;
    size_t n;

    if (cap == 0)
        return 0;
    if (in->gzip)
        return read_gzip(in, out, cap);
    if (cap > ((size_t)1 << 30))
        cap = (size_t)1 << 30;
    if (in->codec == CODEC_ZSTD)
        return read_zstd(in, out, cap);
    if (in->codec == CODEC_XZ)
        return read_xz(in, out, cap);
    if (in->codec == CODEC_BZIP2)
        return read_bzip2(in, out, cap);
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
