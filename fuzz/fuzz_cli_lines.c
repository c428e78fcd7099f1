/*
 * fuzz_cli_lines.c - the amq tool's input layer: cli/input.c (plain reads,
 * gzip through zlib) and cli/scan.c (LF splitting in 64-byte blocks,
 * batches in a ring of slots, a reading thread, unordered parallel scans),
 * which turn untrusted files, pipes and gzip streams into keys.
 *
 * The fuzzer's text is cut into 1 to 3 INPUTs, each stored as a regular
 * file (a memfd, opened by path or read from an offset of an open
 * descriptor, as the tool's spilled standard input is), a pipe, or gzip
 * data (one or two members, any level) in a file or a pipe, or gzip bytes
 * read raw (as is plain text that begins with magic bytes the reader
 * decodes or refuses).  Every read(2) of the reader returns at most a
 * fuzz-chosen number of bytes, batches hold at most CLI_BATCH = 7 lines and
 * slots start at 64 bytes, so lines straddle reads, batches and slots, and
 * long lines grow slots, within small inputs.
 *
 * Properties (the tool's documented rules: README.md "Keys are lines"):
 *  - ordered scan (cli_scan, with or without the reading thread): the
 *    lines are exactly each INPUT's text split at LF - the last line may
 *    lack its LF, an empty INPUT has no lines - so the lines joined with
 *    their LFs give back every INPUT byte for byte; a line's key is the
 *    line minus one trailing CR; no batch mixes two INPUTs; batches hold
 *    1 to CLI_BATCH lines;
 *  - unordered scan (cli_scan_parallel): the same multiset of lines;
 *  - no error and no message on valid input;
 *  - cli_srcs_estimate_lines is exact for these small files (it promises
 *    exactness below 1 MiB); cli_srcs_bytes adds up the files' sizes.
 *
 * Input: u8 flags (bits 0-1: INPUTs - 1, at most 3; bit 2: a reading
 * thread / two workers; bit 3: unordered parallel scan; bit 4: scalar LF
 * search (AMQ_SIMD=scalar); bit 5: the parallel scan serializes calls;
 * bit 6: a hash function runs in the scan, in the reading thread),
 * u8 largest read (0: no limit), then per INPUT u8 type and u16 length,
 * then the text.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli_capture.h"

#define CLI_BATCH 7
#define SCAN_BUF ((size_t)64)

#include "../cli/util.c"
#include "../cli/progress.c"
#include "cli_reads.h"
#include "../cli/input.c"
#include "../cli/sources.c"
#include "../cli/scan.c"

#define FZ_MAX_TEXT 60000 /* gzip of it fits a pipe's buffer: no writer thread */
#define MAX_SRCS 3

/* ---- making INPUTs ------------------------------------------------------------ */

enum { T_FILE, T_PIPE, T_GZ_FILE, T_GZ_PIPE, T_GZ_RAW, T_FILE_FD, NTYPES };

static size_t gzip_into(const uint8_t *p, size_t n, int level, uint8_t *out, size_t cap)
{
    z_stream zs;
    size_t len;

    memset(&zs, 0, sizeof zs);
    FZ_CHECK(deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
             "deflateInit2");
    zs.next_in = (Bytef *)(uintptr_t)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    FZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END, "deflate did not finish");
    len = cap - zs.avail_out;
    deflateEnd(&zs);
    return len;
}

/* The stored bytes of an INPUT of text p[0..n): gzip members if asked. */
static uint8_t *stored_bytes(const uint8_t *p, size_t n, unsigned type, unsigned opts,
                             size_t *len)
{
    size_t cap = 2 * n + 256, half;
    uint8_t *out = malloc(cap);
    int level = (int)(opts % 10u);

    FZ_CHECK(out != NULL, "out of memory");
    if (type != T_GZ_FILE && type != T_GZ_PIPE && type != T_GZ_RAW) {
        if (n != 0)
            memcpy(out, p, n);
        *len = n;
        return out;
    }
    if (opts & 0x10) { /* two members, as `cat a.gz b.gz` */
        half = n / 2;
        *len = gzip_into(p, half, level, out, cap);
        *len += gzip_into(p + half, n - half, level, out + *len, cap - *len);
    } else {
        *len = gzip_into(p, n, level, out, cap);
    }
    return out;
}

typedef struct fz_src {
    cli_src src;
    char path[64];
    int fd;          /* ours to close */
    const uint8_t *text; /* the bytes the reader must give */
    size_t text_len;
    uint8_t *stored;
    int regular;
} fz_src;

static void make_src(fz_src *s, const uint8_t *p, size_t n, unsigned type, unsigned opts)
{
    size_t len, prefix = 0;
    int pfd[2];

    memset(s, 0, sizeof *s);
    s->stored = stored_bytes(p, n, type, opts, &len);
    s->text = type == T_GZ_RAW ? s->stored : p;
    s->text_len = type == T_GZ_RAW ? len : n;
    s->src.fd = -1;
    s->src.raw = type == T_GZ_RAW;
    /* Text that begins with magic bytes the reader decodes or refuses
     * (gzip, zstd, xz, bzip2, an amq file) is not plain text to the tool:
     * such an INPUT is read raw, as its bytes. */
    if (type == T_FILE || type == T_PIPE || type == T_FILE_FD)
        s->src.raw = input_format(p, n < SNIFF ? n : SNIFF) != CODEC_PLAIN;
    if (type == T_PIPE || type == T_GZ_PIPE) {
        FZ_CHECK(pipe(pfd) == 0, "pipe failed");
        FZ_CHECK(len == 0 || write(pfd[1], s->stored, len) == (ssize_t)len, "pipe write");
        close(pfd[1]);
        s->fd = pfd[0];
    } else {
        s->fd = memfd_create("fuzz-lines", MFD_CLOEXEC);
        FZ_CHECK(s->fd >= 0, "memfd_create failed");
        if (type == T_FILE_FD) { /* bytes before the offset are not read */
            prefix = 1 + opts % 7u;
            FZ_CHECK(write(s->fd, "junk\n\r\n", prefix) == (ssize_t)prefix, "write");
            s->src.fd = s->fd;
            s->src.offset = (int64_t)prefix;
        }
        FZ_CHECK(len == 0 || write(s->fd, s->stored, len) == (ssize_t)len, "write failed");
        s->regular = 1;
    }
    snprintf(s->path, sizeof s->path, "/proc/self/fd/%d", s->fd);
    s->src.path = s->path;
    s->src.name = s->path;
}

static void free_src(fz_src *s)
{
    close(s->fd);
    free(s->stored);
}

/* ---- the reference split ---------------------------------------------------------- */

typedef struct ref_line {
    const uint8_t *p;
    size_t len;
    size_t src;
} ref_line;

typedef struct expect {
    ref_line *lines;
    size_t n, next;  /* ordered: the next line expected */
    size_t batch_src;
    uint64_t sum, got_sum; /* unordered: sums of line hashes */
    size_t got;
    pthread_mutex_t mu;
} expect;

static size_t split(const fz_src *srcs, size_t nsrcs, ref_line *out)
{
    size_t s, pos, n = 0;
    for (s = 0; s < nsrcs; s++) {
        const uint8_t *t = srcs[s].text;
        size_t len = srcs[s].text_len;
        for (pos = 0; pos < len;) {
            const uint8_t *lf = memchr(t + pos, '\n', len - pos);
            size_t l = lf != NULL ? (size_t)(lf - (t + pos)) : len - pos;
            if (out != NULL) {
                out[n].p = t + pos;
                out[n].len = l;
                out[n].src = s;
            }
            n++;
            pos += l + 1;
        }
    }
    return n;
}

static uint64_t line_hash(const uint8_t *p, size_t len)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ len;
    size_t i;
    for (i = 0; i < len; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h * UINT64_C(0x9e3779b97f4a7c15);
}

static void check_line(const cli_line *l)
{
    size_t key = (l->len > 0 && l->data[l->len - 1] == '\r') ? l->len - 1 : l->len;
    FZ_CHECK(l->key_len == key, "a line of %zu bytes has a key of %zu (expected %zu)", l->len,
             l->key_len, key);
    FZ_CHECK(l->len == 0 || memchr(l->data, '\n', l->len) == NULL, "a line holds an LF");
}

static int ordered_fn(void *ctx, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    expect *e = ctx;
    size_t i;

    (void)h;
    FZ_CHECK(n >= 1 && n <= CLI_BATCH, "a batch of %zu lines", n);
    for (i = 0; i < n; i++, e->next++) {
        const ref_line *r;
        FZ_CHECK(e->next < e->n, "line %zu is past the %zu lines of the input", e->next, e->n);
        r = &e->lines[e->next];
        check_line(&lines[i]);
        FZ_CHECK(lines[i].len == r->len &&
                     (r->len == 0 || memcmp(lines[i].data, r->p, r->len) == 0),
                 "line %zu (input %zu) is %zu bytes, expected %zu, or other bytes", e->next,
                 r->src, lines[i].len, r->len);
        if (i == 0)
            e->batch_src = r->src;
        FZ_CHECK(r->src == e->batch_src, "a batch mixes inputs %zu and %zu", e->batch_src,
                 r->src);
    }
    return 0;
}

static int unordered_fn(void *ctx, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    expect *e = ctx;
    uint64_t sum = 0;
    size_t i;

    (void)h;
    FZ_CHECK(n >= 1 && n <= CLI_BATCH, "a batch of %zu lines", n);
    for (i = 0; i < n; i++) {
        check_line(&lines[i]);
        sum += line_hash(lines[i].data, lines[i].len);
    }
    pthread_mutex_lock(&e->mu);
    e->got += n;
    e->got_sum += sum;
    pthread_mutex_unlock(&e->mu);
    return 0;
}

/* The scan's hash hook runs in the reading thread: it sees each batch too. */
static void hash_fn(void *ctx, const cli_line *lines, size_t n, amq_hash128 *out)
{
    size_t i;
    (void)ctx;
    for (i = 0; i < n; i++) {
        out[i].h1 = lines[i].len;
        out[i].h2 = lines[i].key_len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    unsigned flags = fz_u8(&in);
    size_t nsrcs = 1 + (flags & 3u), i, lens[MAX_SRCS], total = 0;
    unsigned types[MAX_SRCS], opts[MAX_SRCS];
    fz_src srcs[MAX_SRCS];
    cli_src cs[MAX_SRCS];
    cli_scan_opts o;
    expect e;
    uint64_t est = 0, bytes = 0;
    int rc;

    if (nsrcs > MAX_SRCS)
        nsrcs = MAX_SRCS;
    fz_read_max = fz_u8(&in);
    for (i = 0; i < nsrcs; i++) {
        opts[i] = fz_u8(&in);
        types[i] = opts[i] % NTYPES;
        opts[i] /= NTYPES;
        lens[i] = fz_u16(&in);
    }
    if (in.n > FZ_MAX_TEXT)
        in.n = FZ_MAX_TEXT;
    for (i = 0; i < nsrcs; i++) {
        size_t len = i + 1 == nsrcs ? in.n - total : lens[i];
        if (len > in.n - total)
            len = in.n - total;
        make_src(&srcs[i], in.p + total, len, types[i], opts[i]);
        total += len;
        cs[i] = srcs[i].src;
    }
    if (flags & 0x10)
        setenv("AMQ_SIMD", "scalar", 1);
    else
        unsetenv("AMQ_SIMD");

    memset(&e, 0, sizeof e);
    pthread_mutex_init(&e.mu, NULL);
    e.n = split(srcs, nsrcs, NULL);
    e.lines = calloc(e.n + 1, sizeof *e.lines);
    FZ_CHECK(e.lines != NULL, "out of memory");
    split(srcs, nsrcs, e.lines);
    for (i = 0; i < e.n; i++)
        e.sum += line_hash(e.lines[i].p, e.lines[i].len);

    /* What the tool asks before a scan (files only: pipes are not read). */
    fz_err_reset();
    FZ_CHECK(cli_srcs_estimate_lines(cs, nsrcs, &est) == 0, "estimate: %s", fz_err_text());
    {
        uint64_t want_lines = 0, want_bytes = 0;
        struct stat st;
        ref_line *l;
        for (i = 0; i < nsrcs; i++) {
            if (!srcs[i].regular)
                continue;
            for (l = e.lines; l < e.lines + e.n; l++)
                want_lines += l->src == i;
            FZ_CHECK(fstat(srcs[i].fd, &st) == 0, "fstat failed");
            want_bytes += (uint64_t)st.st_size - (uint64_t)cs[i].offset;
        }
        FZ_CHECK(est == want_lines, "estimated %llu lines, the files have %llu",
                 (unsigned long long)est, (unsigned long long)want_lines);
        bytes = cli_srcs_bytes(cs, nsrcs);
        FZ_CHECK(bytes == want_bytes, "cli_srcs_bytes %llu, files hold %llu",
                 (unsigned long long)bytes, (unsigned long long)want_bytes);
    }

    memset(&o, 0, sizeof o);
    o.srcs = cs;
    o.nsrcs = nsrcs;
    o.threads = (flags & 4) ? 2 : 1;
    o.hash = (flags & 0x40) ? hash_fn : NULL;
    fz_err_reset();
    if (flags & 8)
        rc = cli_scan_parallel(&o, (flags >> 5) & 1, unordered_fn, &e);
    else
        rc = cli_scan(&o, ordered_fn, &e);
    FZ_CHECK(rc == 0, "scan returned %d: %s", rc, fz_err_text());
    FZ_CHECK(fz_err_text()[0] == '\0', "a valid input printed: %s", fz_err_text());
    if (flags & 8) {
        FZ_CHECK(e.got == e.n && e.got_sum == e.sum,
                 "the parallel scan gave %zu lines (sum %llx), the input has %zu (%llx)", e.got,
                 (unsigned long long)e.got_sum, e.n, (unsigned long long)e.sum);
    } else {
        FZ_CHECK(e.next == e.n, "the scan gave %zu of %zu lines", e.next, e.n);
    }

    pthread_mutex_destroy(&e.mu);
    free(e.lines);
    for (i = 0; i < nsrcs; i++)
        free_src(&srcs[i]);
    return 0;
}
