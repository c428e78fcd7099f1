/*
 * file.c - file mapping and atomic replacement.
 *
 * Atomic save: the new file is written under a temporary name in the same
 * directory (same file system, so rename is atomic), fsync'd, renamed over
 * the old name, and the directory is fsync'd so the rename itself is
 * durable.  Whatever moment a crash hits, the name refers to the old
 * complete file or the new complete file.  The temporary name starts with
 * a dot and ends in ".amqtmp" so that leftovers of a crash are recognizable.
 * What may be replaced, and how (symlinks followed, owner and mode kept,
 * only amq filters, no hard-linked files, flock), follows the tool's writer
 * (cli/target.c), so that a save from the library, Python or the tool
 * obeys one rule.
 */
#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/container.h"
#include "common/error.h"
#include "common/journal.h"

static int io_status(int e)
{
    if (e == ENOSPC || e == EDQUOT || e == EFBIG)
        return AMQ_ENOSPC;
    if (e == ENOMEM)
        return AMQ_ENOMEM;
    return AMQ_EIO;
}

/* Physical memory: a stream larger than that cannot be read into it. */
uint64_t amq_machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0)
        return AMQ_MAX_STREAM_FILE;
    return (uint64_t)pages * (uint64_t)size;
}

/*
 * A pipe or device is read into memory, but only as far as a filter file
 * can go (amq_container_stream_need): a wrong magic or header stops the
 * read at once, a valid header bounds it by the size it declares.  Reading
 * to the end of whatever came - `amq info /dev/zero` - ran out of memory.
 */
static int read_stream(int fd, const char *path, amq_mapped *m, amq_errinfo *err)
{
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap), *nb;
    uint64_t need = 0;
    ssize_t r;

    if (buf == NULL)
        return amq_err(err, AMQ_ENOMEM, "%s: out of memory", path);
    for (;;) {
        if (len == cap) {
            if ((uint64_t)cap * 2 > AMQ_MAX_STREAM_FILE) {
                free(buf);
                return amq_err(err, AMQ_ECORRUPT, "%s: stream too large", path);
            }
            nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                return amq_err(err, AMQ_ENOMEM, "%s: out of memory", path);
            }
            buf = nb;
            cap *= 2;
        }
        r = read(fd, buf + len, cap - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            return amq_err_sys(err, AMQ_EIO, e, "%s: read failed", path);
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (!amq_container_stream_need(buf, len, &need) || need > AMQ_MAX_STREAM_FILE)
            break;
        if (need > amq_machine_memory()) {
            /* A valid header may still declare more than could ever be
             * held: say so now, not after reading toward it. */
            free(buf);
            return amq_err(err, AMQ_ENOMEM,
                           "%s: the header declares a %llu-byte filter, more than this "
                           "machine's memory (%llu bytes); a stream is read into memory",
                           path, (unsigned long long)need,
                           (unsigned long long)amq_machine_memory());
        }
    }
    m->heap = buf;
    m->data = buf;
    m->size = len;
    return AMQ_OK;
}

/* The file's header area against the journal's old and new ones. */
static int journal_for_this_file(int fd, const uint8_t *journal)
{
    uint8_t head[4096];
    ssize_t n = pread(fd, head, sizeof head, 0);
    return n > 0 && amq_journal_matches(journal, head, (size_t)n);
}

int amq_file_map(const char *path, amq_mapped *m, amq_errinfo *err)
{
    struct stat st;
    int fd, rc = AMQ_OK;
    void *p;
    uint8_t *journal = NULL;
    size_t jlen;

    memset(m, 0, sizeof *m);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot open", path);
    if (fstat(fd, &st) != 0) {
        rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot stat", path);
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = amq_err(err, AMQ_EIO, "%s: is a directory", path);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = read_stream(fd, path, m, err);
        goto done;
    }
    if (st.st_size == 0) {
        static const uint8_t empty[1] = {0};
        m->data = empty;
        m->size = 0;
        goto done;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        rc = amq_err(err, AMQ_ENOMEM, "%s: too large to map", path);
        goto done;
    }
    if (amq_journal_load(path, (uint64_t)st.st_size, (uint64_t)st.st_ino, &journal, &jlen) &&
        !journal_for_this_file(fd, journal)) {
        free(journal);
        journal = NULL;
    }
    if (journal != NULL) {
        /* An in-place add was cut short (amq/inplace.h): the file is read
         * as the journal completes it, in a private copy of the pages it
         * names; the next writer applies it to the file itself. */
        p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            amq_journal_apply_mem(journal, jlen, p);
            (void)mprotect(p, (size_t)st.st_size, PROT_READ);
        }
        free(journal);
    } else {
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    }
    if (p == MAP_FAILED) {
        rc = amq_err_sys(err, io_status(errno), errno, "%s: cannot map", path);
        goto done;
    }
    m->map = p;
    m->map_len = (size_t)st.st_size;
    m->data = p;
    m->size = (uint64_t)st.st_size;
done:
    close(fd);
    return rc;
}

void amq_file_unmap(amq_mapped *m)
{
    if (m->map != NULL)
        munmap(m->map, m->map_len);
    free(m->heap);
    memset(m, 0, sizeof *m);
}

void amq_file_advise_random(const amq_mapped *m)
{
    if (m->map != NULL)
        (void)madvise(m->map, m->map_len, MADV_RANDOM);
}

/* ---- atomic replacement ------------------------------------------------------ */

static void split_dir(const char *path, char *dir, size_t cap, const char **base)
{
    const char *slash = strrchr(path, '/');
    size_t n;

    if (slash == NULL) {
        snprintf(dir, cap, ".");
        *base = path;
        return;
    }
    n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* "/name" */
    if (n >= cap)
        n = cap - 1;
    memcpy(dir, path, n);
    dir[n] = '\0';
    *base = slash + 1;
}

/* Follows symlinks from path to the file they name, which may not exist
 * yet (a dangling link is followed to create its target), into out. */
static int resolve_links(const char *path, char *out, size_t cap)
{
    char link[4096], next[8192];
    struct stat st;
    ssize_t n;
    int hops;

    if (snprintf(out, cap, "%s", path) >= (int)cap)
        return -1;
    for (hops = 0; hops < 40; hops++) {
        if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode))
            return 0;
        n = readlink(out, link, sizeof link - 1);
        if (n < 0)
            return 0;
        link[n] = '\0';
        if (link[0] == '/' || strrchr(out, '/') == NULL)
            snprintf(next, sizeof next, "%s", link);
        else
            snprintf(next, sizeof next, "%.*s/%s", (int)(strrchr(out, '/') - out), out, link);
        if (snprintf(out, cap, "%s", next) >= (int)cap)
            return -1;
    }
    return 0; /* a loop: the open below reports it */
}

static const uint8_t file_magic[8] = {0x89, 'A', 'M', 'Q', '\r', '\n', 0x1a, '\n'};

/* Opens and locks the existing file a->path names (waiting for another
 * writer; the name re-checked after), and applies the replacement rules.
 * *st receives its attributes.  AMQ_OK with a->lock_fd set, or an error. */
static int lock_existing(amq_atomic *a, struct stat *st, amq_errinfo *err)
{
    struct stat now;
    uint8_t head[8];
    int tries;

    for (tries = 0; tries < 100; tries++) {
        a->lock_fd = open(a->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (a->lock_fd < 0)
            return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot open", a->path);
        if (fstat(a->lock_fd, st) != 0)
            return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot stat", a->path);
        if (!S_ISREG(st->st_mode))
            return amq_err(err, S_ISDIR(st->st_mode) ? AMQ_EIO : AMQ_EEXIST,
                           S_ISDIR(st->st_mode) ? "%s: is a directory"
                                                : "%s: exists and is not a regular file; "
                                                  "nothing changed",
                           a->path);
        while (flock(a->lock_fd, LOCK_EX) != 0)
            if (errno != EINTR)
                return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot lock", a->path);
        /* Another writer may have replaced the file meanwhile: lock the one
         * the name now refers to. */
        if (stat(a->path, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino)
            break;
        close(a->lock_fd);
        a->lock_fd = -1;
    }
    if (a->lock_fd < 0)
        return amq_err(err, AMQ_EIO, "%s: keeps changing under us", a->path);
    if (pread(a->lock_fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        memcmp(head, file_magic, sizeof head) != 0)
        return amq_err(err, AMQ_EEXIST, "%s: exists and is not an amq filter; nothing changed",
                       a->path);
    if ((st->st_mode & 0222) == 0 || access(a->path, W_OK) != 0)
        return amq_err_sys(err, AMQ_EIO, EACCES, "%s: is read-only (mode %04o); nothing changed",
                           a->path, (unsigned)(st->st_mode & 07777));
    if (st->st_nlink > 1)
        return amq_err_sys(err, AMQ_EIO, EMLINK,
                           "%s: has %llu hard links; replacing it would leave the other names "
                           "on the old data (copy it first); nothing changed",
                           a->path, (unsigned long long)st->st_nlink);
    return AMQ_OK;
}

int amq_atomic_begin(amq_atomic *a, const char *path, int excl, amq_errinfo *err)
{
    char dir[4096];
    const char *base;
    struct stat st;
    mode_t mode = 0666;
    int keep = 0, attempt, rc, e;
    unsigned long long r;

    memset(a, 0, sizeof *a);
    a->fd = -1;
    a->lock_fd = -1;
    a->excl = excl;
    if (strlen(path) >= sizeof a->path - 32 || path[0] == '\0')
        return amq_err(err, AMQ_EINVAL, "%s: invalid path", path);
    if (resolve_links(path, a->path, sizeof a->path - 32) != 0)
        return amq_err(err, AMQ_EINVAL, "%s: path too long", path);
    split_dir(a->path, dir, sizeof dir, &base);
    if (base[0] == '\0')
        return amq_err(err, AMQ_EINVAL, "%s: path names a directory", path);
    if (stat(a->path, &st) == 0) {
        if (excl)
            return amq_err(err, AMQ_EEXIST, "%s: file exists", path);
        rc = lock_existing(a, &st, err);
        if (rc != AMQ_OK) {
            amq_atomic_abort(a);
            return rc;
        }
        mode = st.st_mode & 07777;
        keep = 1;
    }
    r = (unsigned long long)getpid() * 2654435761ull ^ (unsigned long long)time(NULL);
    for (attempt = 0; attempt < 100; attempt++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        if (snprintf(a->tmp, sizeof a->tmp, "%s/.%s.%06llx.amqtmp", dir, base,
                     (r >> 40) & 0xffffffull) >= (int)sizeof a->tmp) {
            a->tmp[0] = '\0';
            amq_atomic_abort(a);
            return amq_err(err, AMQ_EINVAL, "%s: path too long", path);
        }
        a->fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, keep ? 0600 : mode);
        if (a->fd >= 0 || errno != EEXIST)
            break;
    }
    if (a->fd < 0) {
        e = errno;
        a->tmp[0] = '\0';
        amq_atomic_abort(a);
        return amq_err_sys(err, io_status(e), e, "%s: cannot create a temporary file in %s",
                           path, dir);
    }
    if (keep && (st.st_uid != geteuid() || st.st_gid != getegid()) &&
        fchown(a->fd, st.st_uid, st.st_gid) != 0) {
        e = errno;
        amq_atomic_abort(a);
        return amq_err_sys(err, AMQ_EIO, e, "%s: cannot keep its owner %lu:%lu; nothing changed",
                           path, (unsigned long)st.st_uid, (unsigned long)st.st_gid);
    }
    if (keep && fchmod(a->fd, mode) != 0) {
        e = errno;
        amq_atomic_abort(a);
        return amq_err_sys(err, AMQ_EIO, e, "%s: cannot set permissions", path);
    }
    return AMQ_OK;
}

int amq_atomic_pwrite(amq_atomic *a, const void *data, size_t len, uint64_t offset,
                      amq_errinfo *err)
{
    const uint8_t *p = data;
    ssize_t w;

    while (len > 0) {
        size_t chunk = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
        w = pwrite(a->fd, p, chunk, (off_t)offset);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return amq_err_sys(err, io_status(errno), errno, "%s: write failed", a->path);
        }
        if (w == 0)
            return amq_err(err, AMQ_ENOSPC, "%s: write made no progress", a->path);
        p += w;
        len -= (size_t)w;
        offset += (uint64_t)w;
    }
    return AMQ_OK;
}

/* Moves tmp to path unless path exists.  renameat2(RENAME_NOREPLACE) does it
 * in one step; link + unlink (file systems without it) leaves the file with
 * two names for a moment, which a concurrent writer would take for a hard
 * link it must not break. */
static int rename_noreplace(const char *tmp, const char *path)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    if (link(tmp, path) != 0)
        return -1;
    unlink(tmp);
    return 0;
}

int amq_atomic_commit(amq_atomic *a, amq_errinfo *err)
{
    char dir[4096];
    const char *base;
    int dfd, e, linked;

    if (fsync(a->fd) != 0) {
        e = errno;
        amq_atomic_abort(a);
        return amq_err_sys(err, io_status(e), e, "%s: fsync failed", a->path);
    }
    if (close(a->fd) != 0) {
        e = errno;
        a->fd = -1;
        amq_atomic_abort(a);
        return amq_err_sys(err, io_status(e), e, "%s: close failed", a->path);
    }
    a->fd = -1;
    linked = 0;
    if (a->excl || a->lock_fd < 0) {
        /* A new name: link fails if it exists, so a file that appeared
         * meanwhile is not silently replaced - with excl never, else only
         * under the rules for a file that was there. */
        if (rename_noreplace(a->tmp, a->path) == 0) {
            linked = 1;
        } else {
            struct stat st;
            e = errno;
            if (a->excl || e != EEXIST) {
                amq_atomic_abort(a);
                if (e == EEXIST)
                    return amq_err(err, AMQ_EEXIST, "%s: file exists", a->path);
                return amq_err_sys(err, io_status(e), e, "%s: cannot create", a->path);
            }
            e = lock_existing(a, &st, err);
            if (e != AMQ_OK) {
                amq_atomic_abort(a);
                return e;
            }
        }
    }
    if (!linked && rename(a->tmp, a->path) != 0) {
        e = errno;
        amq_atomic_abort(a);
        return amq_err_sys(err, io_status(e), e, "%s: cannot replace", a->path);
    }
    a->tmp[0] = '\0';
    if (a->lock_fd >= 0) {
        close(a->lock_fd); /* and the lock with it: the name is the new file's now */
        a->lock_fd = -1;
    }
    split_dir(a->path, dir, sizeof dir, &base);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        /* The new file is in place; a failed directory fsync only weakens
         * durability across a power cut, so it is not reported as a failed
         * save (the data already replaced the old file). */
        (void)fsync(dfd);
        close(dfd);
    }
    return AMQ_OK;
}

void amq_atomic_abort(amq_atomic *a)
{
    if (a->fd >= 0) {
        close(a->fd);
        a->fd = -1;
    }
    if (a->tmp[0] != '\0') {
        unlink(a->tmp);
        a->tmp[0] = '\0';
    }
    if (a->lock_fd >= 0) {
        close(a->lock_fd);
        a->lock_fd = -1;
    }
}
