/*
 * inplace.c - adds to a filter file at the cost of the pages they change
 * (include/amq/inplace.h; docs/reliability.md, "In-place adds").
 *
 * The journal's format and reader are in common/journal.c; this file writes
 * it and applies it to the file.
 */
#include "amq/inplace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/container.h"
#include "common/endian.h"
#include "common/error.h"
#include "common/file.h"
#include "common/journal.h"
#include "inplace.h"

#define INPLACE_VERIFY_MAX ((uint64_t)64 << 20)
#define LINE 64

struct amq_inplace {
    int fd;
    uint8_t *map;
    size_t size;
    uint64_t payload_off, payload_len, payload_sum, ino, head_sum;
    char path[4096];
};

/* 0, or -1 (errno set; EIO for a write of no byte, which would repeat). */
static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
    ssize_t w;
    while (n > 0) {
        w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) { /* no progress and no errno: said as EIO, not what a call before left */
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int apply_fd(const uint8_t *j, int fd)
{
    uint64_t n = amq_load64(j + 16), i;
    size_t pos = AMQ_JOURNAL_HEAD;
    for (i = 0; i < n; i++) {
        uint64_t off = amq_load64(j + pos);
        uint32_t rlen = amq_load32(j + pos + 8);
        if (pwrite_all(fd, j + pos + AMQ_JOURNAL_RECORD_HEAD, rlen, off) != 0)
            return -1;
        pos += AMQ_JOURNAL_RECORD_HEAD + rlen;
    }
    return fdatasync(fd);
}

/* -1 (errno set) when the directory cannot be opened (its entries' durability
 * unknown) or its fsync failed; a file system that syncs no directory (fsync's
 * EINVAL) is taken as synced, as it has nothing more to do. */
static int fsync_dir_of(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    int dfd, rc = 0, e;
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    if (fsync(dfd) != 0 && errno != EINVAL)
        rc = -1;
    e = errno;
    close(dfd);
    errno = e;
    return rc;
}

/* Before a writer reads the file: a complete journal is applied for good,
 * a torn one removed (the file was not touched while it was written). */
static int recover(const char *path, int fd, uint64_t size, uint64_t ino, amq_errinfo *err)
{
    char jpath[4200];
    uint8_t *j;
    size_t jlen;
    int loaded;

    if (amq_journal_path(path, jpath, sizeof jpath) != 0)
        return amq_err(err, AMQ_EINVAL, "%s: path too long", path);
    loaded = amq_journal_load(path, size, ino, NULL, &j, &jlen);
    /* not read: kept for a later open to apply */
    if (loaded == AMQ_EIO)
        return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot read its journal", path);
    if (loaded < 0)
        return amq_err(err, AMQ_ENOMEM, "%s: out of memory for its journal", path);
    if (loaded) {
        const uint32_t hl = amq_load32(j + AMQ_JOURNAL_HEAD + 8);
        uint8_t *head = malloc((size_t)hl + 1u);
        int rc, e;
        /* out of memory, or the file unreadable: the journal is kept for a later open (removed
         * unapplied, the keys it holds would be lost) */
        if (head == NULL) {
            free(j);
            return amq_err(err, AMQ_ENOMEM, "%s: out of memory for its journal", path);
        }
        if (amq_pread_all(fd, head, hl, 0) != 0) { /* whole, or the journal is kept */
            e = errno;
            free(head);
            free(j);
            return amq_err_sys(err, AMQ_EIO, e, "%s: cannot read it to apply its journal", path);
        }
        rc = !amq_journal_matches(j, head, hl) ? 0 /* not this file's: only removed */
                                               : apply_fd(j, fd);
        e = errno;
        free(head);
        free(j);
        if (rc != 0)
            return amq_err_sys(err, AMQ_EIO, e, "%s: cannot apply its journal", path);
    }
    /* best effort: a journal back after a crash applies again, its bytes the file's already */
    if (unlink(jpath) == 0)
        (void)fsync_dir_of(path);
    return AMQ_OK;
}

/* ---- open, commit, close -------------------------------------------------------------- */

int amq_inplace_open(const char *path, amq_filter **f, amq_inplace **ipp, amq_errinfo *err)
{
    amq_inplace *ip;
    amq_container c;
    struct stat st;
    void *m;
    int rc;
    uint32_t kind;

    *f = NULL;
    *ipp = NULL;
    ip = calloc(1, sizeof *ip);
    if (ip == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    ip->fd = -1;
    snprintf(ip->path, sizeof ip->path, "%s", path);
    ip->fd = open(path, O_RDWR | O_CLOEXEC);
    if (ip->fd < 0) {
        rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot open for writing", path);
        goto fail;
    }
    if (fstat(ip->fd, &st) != 0) { /* an I/O error: "unsupported" has the caller save it whole */
        rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot stat", path);
        goto fail;
    }
    if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > SIZE_MAX) {
        rc = amq_err(err, AMQ_EUNSUPPORTED, "%s: not a regular, non-empty file", path);
        goto fail;
    }
    {
        /* A file size limit below the file (ulimit -f) would fail the
         * writes after the journal: saved whole instead, which fails
         * cleanly with EFBIG before anything is replaced. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            (uint64_t)rl.rlim_cur < (uint64_t)st.st_size) {
            rc = amq_err(err, AMQ_EUNSUPPORTED, "%s: larger than the file size limit", path);
            goto fail;
        }
    }
    rc = recover(path, ip->fd, (uint64_t)st.st_size, (uint64_t)st.st_ino, err);
    ip->ino = (uint64_t)st.st_ino;
    if (rc != AMQ_OK)
        goto fail;
    ip->size = (size_t)st.st_size;
    m = mmap(NULL, ip->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, ip->fd, 0);
    if (m == MAP_FAILED) {
        rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot map", path);
        goto fail;
    }
    ip->map = m;
    /* Keys land at random: no read-ahead, no mapping of neighbours (the
     * pages an add never touches are neither read nor counted as ours). */
    (void)madvise(m, ip->size, MADV_RANDOM);
    rc = amq_container_parse(ip->map, ip->size, ip->size, &c, err);
    if (rc != AMQ_OK)
        goto fail;
    kind = c.kind;
    /* Partitioned filters keep per-partition counts and checksums in an
     * index the adds rewrite whole: not updated in place. */
    if (!(c.flags & AMQ_FLAG_CHUNKSUM) || (kind != AMQ_KIND_BLOOM && kind != AMQ_KIND_BLOCKED)) {
        rc = amq_err(err, AMQ_EUNSUPPORTED, "%s: not updatable in place", path);
        goto fail;
    }
    ip->payload_off = c.payload_off;
    ip->payload_len = c.payload_len;
    ip->payload_sum = c.payload_sum;
    ip->head_sum = amq_checksum(ip->map, (size_t)c.payload_off);
    /* A small payload is verified whole (a few milliseconds at most); a
     * large one is not read at all - the commit keeps its checksum exact
     * relative to what was there, so damage stays detectable by any
     * verified open. */
    if (c.payload_len <= INPLACE_VERIFY_MAX &&
        amq_chunked_checksum(ip->map + c.payload_off, c.payload_len) != c.payload_sum) {
        rc = amq_err(err, AMQ_ECHECKSUM, "%s: payload checksum mismatch: the data is corrupt",
                     path);
        goto fail;
    }
    rc = amq_filter_deserialize(ip->map, ip->size,
                                AMQ_OPEN_MMAP | AMQ_OPEN_TRUST | AMQ_OPEN_INPLACE_, NULL, f, err);
    if (rc != AMQ_OK)
        goto fail;
    if (amq_filter_is_readonly(*f)) {
        /* The kind copied instead of viewing: adds would not reach the map. */
        amq_filter_free(*f);
        *f = NULL;
        rc = amq_err(err, AMQ_EUNSUPPORTED, "%s: not updatable in place", path);
        goto fail;
    }
    *ipp = ip;
    return AMQ_OK;
fail:
    amq_inplace_close(ip);
    return rc;
}

/* Pages of the private mapping written since it was made: present and no
 * longer the file's page (copied on write), from /proc/self/pagemap (bit
 * 63 present, 62 swapped, 61 file page). */
static int dirty_pages(const amq_inplace *ip, uint8_t **dirty, size_t *npages, size_t *psize)
{
    long ps = sysconf(_SC_PAGESIZE);
    size_t n, i, done = 0;
    uint64_t *ent;
    uint8_t *d;
    ssize_t r;
    int fd;

    if (ps <= 0)
        return -1;
    n = (ip->size + (size_t)ps - 1) / (size_t)ps;
    fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ent = malloc(n * sizeof *ent);
    d = calloc(n, 1);
    if (ent == NULL || d == NULL)
        goto fail;
    while (done < n * sizeof *ent) {
        r = pread(fd, (uint8_t *)ent + done, n * sizeof *ent - done,
                  (off_t)((uintptr_t)ip->map / (uintptr_t)ps * sizeof *ent + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            goto fail;
        done += (size_t)r;
    }
    close(fd);
    for (i = 0; i < n; i++) {
        uint64_t e = ent[i];
        d[i] = ((e >> 63) & 1 && !((e >> 61) & 1)) || ((e >> 62) & 1);
    }
    free(ent);
    *dirty = d;
    *npages = n;
    *psize = (size_t)ps;
    return 0;
fail:
    close(fd);
    free(ent);
    free(d);
    return -1;
}

int amq_inplace_commit(amq_inplace *ip, const amq_filter *f, size_t *bytes, amq_errinfo *err)
{
    uint8_t *dirty = NULL, *chunks = NULL, *j = NULL, *old = NULL, *header = NULL;
    size_t npages, psize, nchunks, i, jlen, jcap, hlen, header_cap;
    uint64_t sum = ip->payload_sum, p0, p1, c, nrec = 0, written = 0;
    char jpath[4200];
    int rc = AMQ_OK, jfd;

    if (dirty_pages(ip, &dirty, &npages, &psize) != 0)
        return amq_err(err, AMQ_EUNSUPPORTED, "%s: cannot tell which pages changed (no pagemap)",
                       ip->path);
    nchunks = (size_t)((ip->payload_len + AMQ_CHUNK - 1) / AMQ_CHUNK);
    chunks = calloc(nchunks + 1, 1);
    old = malloc(AMQ_CHUNK);
    header_cap = (size_t)ip->payload_off;
    header = malloc(header_cap);
    if (chunks == NULL || old == NULL || header == NULL) {
        rc = amq_err(err, AMQ_ENOMEM, "out of memory");
        goto done;
    }
    /* Pages to the payload chunks they overlap. */
    for (i = 0; i < npages; i++) {
        if (!dirty[i])
            continue;
        p0 = (uint64_t)i * psize;
        p1 = p0 + psize;
        if (p1 <= ip->payload_off || p0 >= ip->payload_off + ip->payload_len)
            continue;
        p0 = p0 < ip->payload_off ? 0 : p0 - ip->payload_off;
        p1 = p1 - ip->payload_off > ip->payload_len ? ip->payload_len : p1 - ip->payload_off;
        for (c = p0 / AMQ_CHUNK; c * AMQ_CHUNK < p1; c++)
            chunks[c] = 1;
    }
    /* The journal: the header, then every chunk that differs from the file. */
    jcap = AMQ_JOURNAL_HEAD + AMQ_JOURNAL_RECORD_HEAD + header_cap + 8;
    for (c = 0; c < nchunks; c++)
        jcap += chunks[c] ? (AMQ_CHUNK / LINE) * (AMQ_JOURNAL_RECORD_HEAD + LINE) : 0;
    j = malloc(jcap);
    if (j == NULL) {
        rc = amq_err(err, AMQ_ENOMEM, "out of memory");
        goto done;
    }
    jlen = AMQ_JOURNAL_HEAD + AMQ_JOURNAL_RECORD_HEAD + header_cap; /* header record filled last */
    for (c = 0; c < nchunks; c++) {
        uint64_t off = ip->payload_off + c * AMQ_CHUNK;
        size_t clen = (size_t)(ip->payload_len - c * AMQ_CHUNK < AMQ_CHUNK
                                   ? ip->payload_len - c * AMQ_CHUNK
                                   : AMQ_CHUNK);
        if (!chunks[c])
            continue;
        if (amq_pread_all(ip->fd, old, clen, off) != 0) {
            rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot read; the file is unchanged",
                             ip->path);
            goto done;
        }
        if (memcmp(old, ip->map + off, clen) == 0)
            continue;
        sum += amq_chunk_hash(ip->map + off, clen, c) - amq_chunk_hash(old, clen, c);
        /* Only the changed 64-byte lines (runs of them) go to the journal
         * and the file: a Bloom key changes a few lines of a chunk. */
        for (size_t a = 0; a < clen;) {
            size_t b;
            if (memcmp(old + a, ip->map + off + a, clen - a < LINE ? clen - a : LINE) == 0) {
                a += LINE;
                continue;
            }
            for (b = a + LINE; b < clen && memcmp(old + b, ip->map + off + b,
                                                  clen - b < LINE ? clen - b : LINE) != 0;
                 b += LINE)
                ;
            if (b > clen)
                b = clen;
            amq_store64(j + jlen, off + a);
            amq_store32(j + jlen + 8, (uint32_t)(b - a));
            amq_store32(j + jlen + 12, 0);
            memcpy(j + jlen + AMQ_JOURNAL_RECORD_HEAD, ip->map + off + a, b - a);
            jlen += AMQ_JOURNAL_RECORD_HEAD + (b - a);
            nrec++;
            a = b;
        }
    }
    rc = amq_filter_header_area(f, sum, header, header_cap, &hlen);
    if (rc != AMQ_OK || hlen != header_cap) {
        rc = amq_err(err, rc != AMQ_OK ? rc : AMQ_EINCOMPAT, "%s: the filter changed shape",
                     ip->path);
        goto done;
    }
    memcpy(j, AMQ_JOURNAL_MAGIC, 8);
    amq_store64(j + 8, ip->size);
    amq_store64(j + 16, nrec + 1);
    amq_store64(j + 24, ip->ino);
    amq_store64(j + 32, ip->head_sum);
    amq_store64(j + AMQ_JOURNAL_HEAD, 0);
    amq_store32(j + AMQ_JOURNAL_HEAD + 8, (uint32_t)hlen);
    amq_store32(j + AMQ_JOURNAL_HEAD + 12, 0);
    memcpy(j + AMQ_JOURNAL_HEAD + AMQ_JOURNAL_RECORD_HEAD, header, hlen);
    amq_store64(j + jlen, amq_checksum(j, jlen));
    jlen += 8;

    if (amq_journal_path(ip->path, jpath, sizeof jpath) != 0) {
        rc = amq_err(err, AMQ_EINVAL, "%s: path too long", ip->path);
        goto done;
    }
    /* 1. the journal, durable (its name too) before the file is touched */
    jfd = open(jpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (jfd < 0) {
        rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot create its journal", ip->path);
        goto done;
    }
    /* its name too: a crash while the file is written must find the journal (a directory
     * that cannot be opened leaves that unknown: the file is not touched) */
    {
        const char *what = NULL;
        if (pwrite_all(jfd, j, jlen, 0) != 0 || fsync(jfd) != 0)
            what = "cannot write its journal";
        else if (fsync_dir_of(ip->path) != 0)
            what = "cannot sync its directory for its journal";
        if (what != NULL) {
            int e = errno;
            close(jfd);
            unlink(jpath);
            rc = amq_err_sys(err, e == ENOSPC ? AMQ_ENOSPC : AMQ_EIO, e,
                             "%s: %s; the file is unchanged", ip->path, what);
            goto done;
        }
    }
    close(jfd);
    if (getenv("AMQ_TEST_JOURNAL_DELAY") != NULL) /* tests: a kill lands here */
        usleep((useconds_t)(atof(getenv("AMQ_TEST_JOURNAL_DELAY")) * 1e6));
    /* 2. the file; 3. the journal goes */
    if (apply_fd(j, ip->fd) != 0) {
        rc = amq_err_sys(err, AMQ_EIO, errno,
                         "%s: write failed; its journal completes it at the next open",
                         ip->path);
        goto done;
    }
    /* best effort: a journal back after a crash applies again, its bytes the file's already */
    if (unlink(jpath) == 0)
        (void)fsync_dir_of(ip->path);
    ip->payload_sum = sum;
    ip->head_sum = amq_checksum(header, hlen);
    written = jlen - AMQ_JOURNAL_HEAD - 8 - (nrec + 1) * AMQ_JOURNAL_RECORD_HEAD;
done:
    if (bytes != NULL)
        *bytes = (size_t)written;
    free(dirty);
    free(chunks);
    free(old);
    free(header);
    free(j);
    return rc;
}

int amq_inplace_recover(const char *path, amq_errinfo *err)
{
    struct stat st;
    int fd, rc;

    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? AMQ_OK : amq_err_sys(err, AMQ_EIO, errno, "%s: cannot open", path);
    if (fstat(fd, &st) != 0) { /* its journal unread: kept, not taken as none */
        rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot stat", path);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) { /* a device or pipe: no journal is written for one */
        close(fd);
        return AMQ_OK;
    }
    rc = recover(path, fd, (uint64_t)st.st_size, (uint64_t)st.st_ino, err);
    close(fd);
    return rc;
}

void amq_inplace_close(amq_inplace *ip)
{
    if (ip == NULL)
        return;
    if (ip->map != NULL)
        munmap(ip->map, ip->size);
    if (ip->fd >= 0)
        close(ip->fd);
    free(ip);
}
