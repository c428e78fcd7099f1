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
#include <stdatomic.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/container.h"
#include "common/endian.h"
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
static int read_stream(int fd, const char *path, const amq_allocator *a, amq_mapped *m,
                       amq_errinfo *err)
{
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = amq_malloc(a, cap), *nb;
    uint64_t need = 0;
    ssize_t r;

    if (buf == NULL)
        return amq_err(err, AMQ_ENOMEM, "%s: out of memory", path);
    for (;;) {
        if (len == cap) {
            if ((uint64_t)cap * 2 > AMQ_MAX_STREAM_FILE) {
                amq_free(a, buf, cap);
                return amq_err(err, AMQ_ECORRUPT, "%s: stream too large", path);
            }
            nb = amq_realloc(a, buf, cap, cap * 2);
            if (nb == NULL) {
                amq_free(a, buf, cap);
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
            amq_free(a, buf, cap);
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
            amq_free(a, buf, cap);
            return amq_err(err, AMQ_ENOMEM,
                           "%s: the header declares a %llu-byte filter, more than this "
                           "machine's memory (%llu bytes); a stream is read into memory",
                           path, (unsigned long long)need,
                           (unsigned long long)amq_machine_memory());
        }
    }
    m->heap = buf;
    m->heap_cap = cap;
    amq_alloc_init(&m->heap_alloc, a);
    m->data = buf;
    m->size = len;
    return AMQ_OK;
}

/* The file's header area against the journal's old and new ones: 1 they
 * match, 0 not, AMQ_EIO (errno set) the file could not be read, AMQ_ENOMEM
 * a refused the copy of a head record over 4 KiB. */
static int journal_for_this_file(int fd, const uint8_t *journal, const amq_allocator *a)
{
    uint8_t stack[4096], *head = stack;
    /* the head record's length, at most the file's (amq_journal_load checks it) */
    uint32_t hl = amq_load32(journal + AMQ_JOURNAL_HEAD + 8);
    int mine, e;
    /* a longer one is read whole too: the in-place open applies it, so a reader that skipped
     * it would see the file it leaves half applied */
    if (hl > sizeof stack && (head = amq_malloc(a, hl)) == NULL)
        return AMQ_ENOMEM;
    /* the whole head or nothing: a short read taken as "not this file's" would drop the
     * journal */
    mine = amq_pread_all(fd, head, hl, 0) != 0 ? AMQ_EIO : amq_journal_matches(journal, head, hl);
    e = errno;
    if (head != stack)
        amq_free(a, head, hl);
    errno = e;
    return mine;
}

int amq_file_map(const char *path, const amq_allocator *alloc, amq_mapped *m, amq_errinfo *err)
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
        rc = read_stream(fd, path, alloc, m, err);
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
    /* the journal's copy from alloc too (the filter's allocator, which a host counts); refused,
     * the open fails: read without it, the file may be half written */
    rc = amq_journal_load(path, (uint64_t)st.st_size, (uint64_t)st.st_ino, alloc, &journal, &jlen);
    if (rc == AMQ_EIO) {
        rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot read its journal", path);
        goto done;
    }
    if (rc < 0) {
        rc = amq_err(err, rc, "%s: out of memory for its journal", path);
        goto done;
    }
    rc = AMQ_OK;
    if (journal != NULL) {
        int mine = journal_for_this_file(fd, journal, alloc);
        if (mine == AMQ_EIO) /* read without it, the file may be half written */
            rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot read it to apply its journal",
                             path);
        else if (mine < 0)
            rc = amq_err(err, AMQ_ENOMEM, "%s: out of memory for its journal", path);
        if (mine <= 0) {
            amq_free(alloc, journal, jlen);
            journal = NULL;
        }
        if (rc != AMQ_OK)
            goto done;
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
        amq_free(alloc, journal, jlen);
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
    amq_free(&m->heap_alloc, m->heap, m->heap_cap);
    memset(m, 0, sizeof *m);
}

/* ---- the files this process's targets hold locked ----------------------------- */

/* A thread that holds a target's exclusive lock and reads that file (add
 * reads the filter it replaces; merge's OUT may be an IN) must not wait
 * for a shared lock on it: flock locks of two descriptors conflict even
 * within one process, and the read waited forever on itself. */
enum { HELD_SLOTS = 64 };

static struct {
    dev_t dev;
    ino_t ino;
    pthread_t owner;
    int used;
} held_locks[HELD_SLOTS];
static pthread_mutex_t held_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The slot recording that this thread holds (dev, ino), or -1 when the
 * table is full (the reader then waits as before). */
static int held_add(dev_t dev, ino_t ino)
{
    int i, slot = -1;

    pthread_mutex_lock(&held_mutex);
    for (i = 0; i < HELD_SLOTS; i++)
        if (!held_locks[i].used) {
            held_locks[i].dev = dev;
            held_locks[i].ino = ino;
            held_locks[i].owner = pthread_self();
            held_locks[i].used = 1;
            slot = i;
            break;
        }
    pthread_mutex_unlock(&held_mutex);
    return slot;
}

static void held_remove(int slot)
{
    if (slot < 0 || slot >= HELD_SLOTS)
        return;
    pthread_mutex_lock(&held_mutex);
    held_locks[slot].used = 0;
    pthread_mutex_unlock(&held_mutex);
}

static int held_by_this_thread(dev_t dev, ino_t ino)
{
    int i, found = 0;

    pthread_mutex_lock(&held_mutex);
    for (i = 0; i < HELD_SLOTS && !found; i++)
        found = held_locks[i].used && held_locks[i].dev == dev && held_locks[i].ino == ino &&
                pthread_equal(held_locks[i].owner, pthread_self());
    pthread_mutex_unlock(&held_mutex);
    return found;
}

int amq_file_lock_shared(const char *path)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;

    if (fd < 0)
        return fd;
    /* This thread's own target holds it: no writer but us, nothing to wait for. */
    if (fstat(fd, &st) == 0 && held_by_this_thread(st.st_dev, st.st_ino))
        return fd;
    while (flock(fd, LOCK_SH) != 0 && errno == EINTR)
        ;
    return fd;
}

void amq_file_advise_random(const amq_mapped *m)
{
    if (m->map != NULL)
        (void)madvise(m->map, m->map_len, MADV_RANDOM);
}

/* ---- temporary files removed on a fatal signal ---------------------------- */

/* A slot is claimed (FREE -> FILLING) by compare-and-swap, filled, then made
 * LIVE: a signal handler reads only LIVE slots, so it never sees half a
 * path (atomic_int is lock-free on every target amq builds for, which makes
 * these loads async-signal-safe). */
enum { TEMP_SLOTS = 32, TEMP_FREE = 0, TEMP_FILLING = 1, TEMP_LIVE = 2 };

static char temp_paths[TEMP_SLOTS][AMQ_PATH_CAP];
static atomic_int temp_state[TEMP_SLOTS];

int amq_temp_register(const char *path)
{
    size_t n = strlen(path);
    int i, expect;

    if (n >= sizeof temp_paths[0])
        return -1;
    for (i = 0; i < TEMP_SLOTS; i++) {
        expect = TEMP_FREE;
        if (atomic_compare_exchange_strong(&temp_state[i], &expect, TEMP_FILLING)) {
            memcpy(temp_paths[i], path, n + 1);
            atomic_store(&temp_state[i], TEMP_LIVE);
            return i;
        }
    }
    return -1;
}

void amq_temp_unregister(int slot)
{
    if (slot >= 0 && slot < TEMP_SLOTS)
        atomic_store(&temp_state[slot], TEMP_FREE);
}

void amq_temp_remove_all(void)
{
    int i;
    for (i = 0; i < TEMP_SLOTS; i++)
        if (atomic_load(&temp_state[i]) == TEMP_LIVE)
            (void)unlink(temp_paths[i]); /* async-signal-safe */
}

static void target_release(amq_target *t);

/* ---- the target: what may be replaced ------------------------------------- */

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

/* The descriptor a path names (/dev/stdout, /dev/stderr, /dev/stdin,
 * /dev/fd/N, /proc/self/fd/N, /proc/PID/fd/N of this process), or -1. */
static int names_descriptor(const char *path)
{
    static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/",
                                           "/proc/thread-self/fd/"};
    char own[64];
    const char *num = NULL;
    char *end;
    unsigned long n;
    size_t i;

    if (strcmp(path, "/dev/stdin") == 0)
        return 0;
    if (strcmp(path, "/dev/stdout") == 0)
        return 1;
    if (strcmp(path, "/dev/stderr") == 0)
        return 2;
    for (i = 0; i < sizeof prefixes / sizeof prefixes[0] && num == NULL; i++)
        if (strncmp(path, prefixes[i], strlen(prefixes[i])) == 0)
            num = path + strlen(prefixes[i]);
    snprintf(own, sizeof own, "/proc/%ld/fd/", (long)getpid());
    if (num == NULL && strncmp(path, own, strlen(own)) == 0)
        num = path + strlen(own);
    if (num == NULL || *num < '0' || *num > '9')
        return -1;
    errno = 0;
    n = strtoul(num, &end, 10);
    if (*end != '\0' || errno != 0 || n > INT_MAX)
        return -1;
    return (int)n;
}

/* Follows symlinks from path to the file they name, which may not exist
 * yet (a dangling link is followed to create its target), into out.  A
 * name of an open descriptor (/dev/stdout...) is not followed to the file
 * behind it, which a rename would replace (">> log" lost the log): *fd is
 * then that descriptor, else -1 (fd NULL: every link is followed). */
static int resolve_links(const char *path, char *out, size_t cap, int *fd)
{
    char link[AMQ_PATH_CAP], next[2 * AMQ_PATH_CAP];
    struct stat st;
    ssize_t n;
    int hops;

    if (fd != NULL)
        *fd = -1;
    if (snprintf(out, cap, "%s", path) >= (int)cap)
        return -1;
    for (hops = 0; hops < 40; hops++) {
        if (fd != NULL && (*fd = names_descriptor(out)) >= 0)
            return 0;
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
    return 0; /* a loop: the open reports it */
}

static const uint8_t file_magic[8] = {0x89, 'A', 'M', 'Q', '\r', '\n', 0x1a, '\n'};

ssize_t amq_pread_most(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    ssize_t r;

    while (got < n) {
        r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int amq_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    ssize_t r = amq_pread_most(fd, buf, n, off);
    if (r < 0)
        return -1;
    if ((size_t)r < n) {
        errno = EIO;
        return -1;
    }
    return 0;
}

/* 1 the file starts as an amq filter, 0 not, -1 (errno set) it could not be read. */
static int fd_is_amq(int fd)
{
    uint8_t head[8];
    ssize_t n = amq_pread_most(fd, head, sizeof head, 0);
    if (n < 0)
        return -1;
    return n == (ssize_t)sizeof head && memcmp(head, file_magic, sizeof head) == 0;
}

/* No NUL byte in the first 4 KiB (as grep and diff decide "binary"): 1, 0, or -1 (errno
 * set) it could not be read. */
static int fd_is_text(int fd)
{
    uint8_t b[4096];
    ssize_t n = amq_pread_most(fd, b, sizeof b, 0);
    if (n < 0)
        return -1;
    return memchr(b, 0, (size_t)n) == NULL;
}

/* An existing regular file against the flags: what it holds, then whether
 * it can be replaced without loss. */
static int check_existing(const amq_target *t, const struct stat *st, amq_errinfo *err)
{
    const char *p = t->given;
    int amq, text;

    if (t->flags & AMQ_TARGET_EXCL)
        return amq_err(err, AMQ_EEXIST, "%s: file exists", p);
    /* unread, the file is not taken for something else (a failed read refused it as "not
     * an amq filter") */
    amq = fd_is_amq(t->lock_fd);
    text = amq == 0 && (t->flags & AMQ_TARGET_BINARY) ? fd_is_text(t->lock_fd) : 0;
    if (amq < 0 || text < 0)
        return amq_err_sys(err, io_status(errno), errno, "%s: cannot read it; nothing changed",
                           p);
    if ((t->flags & AMQ_TARGET_UPDATE) && !amq)
        return amq_err(err, AMQ_EEXIST, "%s: exists and is not an amq filter; nothing changed",
                       p);
    if ((t->flags & AMQ_TARGET_TEXT) && amq)
        return amq_err(err, AMQ_EEXIST, "%s: is an amq filter; refusing to replace it with text",
                       p);
    if ((t->flags & AMQ_TARGET_BINARY) && !amq && text)
        return amq_err(err, AMQ_EEXIST,
                       "%s: exists and holds text; only binary files are replaced", p);
    if (!(t->flags & (AMQ_TARGET_TEXT | AMQ_TARGET_BINARY)) && !amq)
        return amq_err(err, AMQ_EEXIST,
                       "%s: exists and is not an amq filter (only an amq filter is replaced); "
                       "nothing changed",
                       p);
    if ((st->st_mode & 0222) == 0 || access(t->path, W_OK) != 0)
        return amq_err_sys(err, AMQ_EIO, EACCES, "%s: is read-only (mode %04o); nothing changed",
                           p, (unsigned)(st->st_mode & 07777));
    if (st->st_nlink > 1)
        return amq_err_sys(err, AMQ_EIO, EMLINK,
                           "%s: has %llu hard links; replacing it would leave the other names "
                           "on the old data (copy it first); nothing changed",
                           p, (unsigned long long)st->st_nlink);
    return AMQ_OK;
}

/* Opens and locks the file t->path names (waiting for another writer
 * unless NOWAIT; the name checked again once locked), and applies the
 * rules.  AMQ_OK with t->exists 0 when there is no file (and one may be
 * created). */
static int lock_existing(amq_target *t, amq_errinfo *err)
{
    struct stat st, now;
    int tries;

    for (tries = 0; tries < 100; tries++) {
        /* O_NONBLOCK: opening a FIFO with no writer must not hang. */
        t->lock_fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (t->lock_fd < 0) {
            if (errno == ENOENT && !(t->flags & AMQ_TARGET_UPDATE)) {
                t->exists = 0;
                return AMQ_OK;
            }
            return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot open", t->given);
        }
        if (fstat(t->lock_fd, &st) != 0)
            return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot stat", t->given);
        t->exists = 1;
        if (S_ISDIR(st.st_mode))
            return amq_err(err, AMQ_EIO, "%s: is a directory", t->given);
        if (!S_ISREG(st.st_mode)) {
            if (t->flags & AMQ_TARGET_UPDATE)
                return amq_err(err, AMQ_EIO, "%s: not a regular file", t->given);
            t->direct = 1; /* a device or a pipe: written through, not replaced */
            return AMQ_OK;
        }
        if (flock(t->lock_fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK)
                return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot lock", t->given);
            if (t->flags & AMQ_TARGET_NOWAIT)
                return amq_err_sys(err, AMQ_EIO, EWOULDBLOCK,
                                   "%s: another writer holds it", t->given);
            while (flock(t->lock_fd, LOCK_EX) != 0)
                if (errno != EINTR)
                    return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot lock", t->given);
        }
        /* Another writer may have replaced the file meanwhile: lock the one
         * the name now refers to. */
        if (stat(t->path, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
            break;
        close(t->lock_fd);
        t->lock_fd = -1;
    }
    if (t->lock_fd < 0)
        return amq_err(err, AMQ_EIO, "%s: keeps changing under us", t->given);
    t->held = held_add(now.st_dev, now.st_ino);
    t->mode = (unsigned)(now.st_mode & 07777);
    t->uid = (unsigned)now.st_uid;
    t->gid = (unsigned)now.st_gid;
    return check_existing(t, &now, err);
}

static int target_init(amq_target *t, const char *path, unsigned flags, amq_errinfo *err)
{
    char dir[AMQ_PATH_CAP];
    const char *base;
    int rc, fd = -1;

    memset(t, 0, offsetof(amq_target, given));
    t->given[0] = t->path[0] = t->tmp[0] = '\0';
    t->fd = -1;
    t->lock_fd = -1;
    t->slot = -1;
    t->held = -1;
    t->desc = -1;
    t->flags = flags;
    if (path == NULL || path[0] == '\0')
        return amq_err(err, AMQ_EINVAL, "invalid path: empty");
    if (strlen(path) >= sizeof t->path - 32)
        return amq_err(err, AMQ_EINVAL, "%.64s...: path too long", path);
    snprintf(t->given, sizeof t->given, "%s", path);
    if ((flags & AMQ_TARGET_STDOUT) && strcmp(path, "-") == 0) {
        snprintf(t->path, sizeof t->path, "-");
        t->exists = 1;
        t->direct = 1;
        return AMQ_OK;
    }
    /* A read-modify-write (add) reads and replaces the file behind. */
    if (resolve_links(path, t->path, sizeof t->path - 32,
                      flags & AMQ_TARGET_UPDATE ? NULL : &fd) != 0)
        return amq_err(err, AMQ_EINVAL, "%s: path too long", path);
    if (fd >= 0) {
        /* Written to that descriptor, as "-" to standard output. */
        if (fcntl(fd, F_GETFD) < 0)
            return amq_err_sys(err, AMQ_EIO, EBADF, "%s: names descriptor %d", path, fd);
        snprintf(t->path, sizeof t->path, "%s", path);
        t->desc = fd;
        t->exists = 1;
        t->direct = 1;
        return AMQ_OK;
    }
    split_dir(t->path, dir, sizeof dir, &base);
    if (base[0] == '\0')
        return amq_err(err, AMQ_EINVAL, "%s: path names a directory", path);
    rc = lock_existing(t, err);
    if (rc != AMQ_OK)
        target_release(t);
    return rc;
}

/* ---- the target: writing and replacing ------------------------------------ */

/* The temporary file beside t->path, registered before it exists (a signal
 * between the open and the registration would leave it), with the replaced
 * file's owner and mode, or 0666 & ~umask for a new one. */
static int create_temp(amq_target *t, amq_errinfo *err)
{
    char dir[AMQ_PATH_CAP];
    const char *base;
    struct timespec ts;
    unsigned long long r;
    int attempt, e;

    split_dir(t->path, dir, sizeof dir, &base);
    clock_gettime(CLOCK_REALTIME, &ts);
    r = (unsigned long long)getpid() * 2654435761ull ^ (unsigned long long)ts.tv_nsec;
    for (attempt = 0; attempt < 100; attempt++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        if (snprintf(t->tmp, sizeof t->tmp, "%s/.%s.%06llx.amqtmp", dir, base,
                     (r >> 40) & 0xffffffull) >= (int)sizeof t->tmp) {
            t->tmp[0] = '\0';
            return amq_err(err, AMQ_EINVAL, "%s: path too long", t->given);
        }
        t->slot = amq_temp_register(t->tmp);
        t->fd = open(t->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                     t->exists ? 0600 : 0666);
        if (t->fd >= 0)
            break;
        e = errno;
        amq_temp_unregister(t->slot);
        t->slot = -1;
        if (e != EEXIST) {
            t->tmp[0] = '\0';
            return amq_err_sys(err, io_status(e), e, "%s: cannot create a file in %s",
                               t->given, dir);
        }
    }
    if (t->fd < 0) {
        t->tmp[0] = '\0';
        return amq_err(err, AMQ_EIO, "%s: no free temporary name in %s", t->given, dir);
    }
    if (!t->exists)
        return AMQ_OK; /* the umask applied at creation */
    if ((t->uid != (unsigned)geteuid() || t->gid != (unsigned)getegid()) &&
        fchown(t->fd, (uid_t)t->uid, (gid_t)t->gid) != 0)
        return amq_err_sys(err, AMQ_EIO, errno,
                           "%s: cannot keep its owner %u:%u; nothing changed", t->given, t->uid,
                           t->gid);
    if (fchmod(t->fd, (mode_t)t->mode) != 0)
        return amq_err_sys(err, AMQ_EIO, errno, "%s: cannot set permissions", t->given);
    return AMQ_OK;
}

int amq_target_begin(amq_target *t, int *fd, amq_errinfo *err)
{
    int rc = AMQ_OK;

    if (t->fd < 0) {
        if (t->direct && strcmp(t->path, "-") == 0 && (t->flags & AMQ_TARGET_STDOUT)) {
            t->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
            if (t->fd < 0)
                rc = amq_err_sys(err, AMQ_EIO, errno, "standard output");
        } else if (t->direct && t->desc >= 0) {
            t->fd = fcntl(t->desc, F_DUPFD_CLOEXEC, 0);
            if (t->fd < 0)
                rc = amq_err_sys(err, AMQ_EIO, errno, "%s", t->given);
        } else if (t->direct) {
            t->fd = open(t->path, O_WRONLY | O_CLOEXEC);
            if (t->fd < 0)
                rc = amq_err_sys(err, AMQ_EIO, errno, "%s: cannot open", t->given);
        } else {
            rc = create_temp(t, err);
        }
        if (rc != AMQ_OK) {
            amq_target_abort(t);
            return rc;
        }
    }
    if (fd != NULL)
        *fd = t->fd;
    return AMQ_OK;
}

int amq_target_pwrite(amq_target *t, const void *data, size_t len, uint64_t offset,
                      amq_errinfo *err)
{
    const uint8_t *p = data;
    ssize_t w;

    while (len > 0) {
        size_t chunk = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
        w = pwrite(t->fd, p, chunk, (off_t)offset);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return amq_err_sys(err, io_status(errno), errno, "%s: write failed", t->given);
        }
        if (w == 0)
            return amq_err(err, AMQ_ENOSPC, "%s: write made no progress", t->given);
        p += w;
        len -= (size_t)w;
        offset += (uint64_t)w;
    }
    return AMQ_OK;
}

int amq_target_pread(amq_target *t, void *data, size_t len, uint64_t offset, amq_errinfo *err)
{
    uint8_t *p = data;
    ssize_t r;

    while (len > 0) {
        r = pread(t->fd, p, len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len, (off_t)offset);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return amq_err_sys(err, io_status(errno), errno,
                               "%s: cannot read back what was written", t->given);
        }
        if (r == 0)
            return amq_err(err, AMQ_EIO, "%s: shorter than what was written", t->given);
        p += r;
        len -= (size_t)r;
        offset += (uint64_t)r;
    }
    return AMQ_OK;
}

int amq_target_write(amq_target *t, const void *data, size_t len, amq_errinfo *err)
{
    const uint8_t *p = data;
    ssize_t w;
    int rc = amq_target_begin(t, NULL, err);

    while (rc == AMQ_OK && len > 0) {
        w = write(t->fd, p, len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return amq_err_sys(err, io_status(errno), errno, "%s: write failed", t->given);
        if (w == 0)
            return amq_err(err, AMQ_ENOSPC, "%s: write made no progress", t->given);
        p += w;
        len -= (size_t)w;
    }
    return rc;
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
    if (unlink(tmp) != 0) {
        /* Kept, the temporary would stay beside the file as its second name (and the
         * next save refuse a file with two links): the new name is taken back instead,
         * a failed save with nothing changed. */
        int e = errno;
        (void)unlink(path);
        errno = e;
        return -1;
    }
    return 0;
}

static int commit_direct(amq_target *t, amq_errinfo *err)
{
    int fd = t->fd;
    t->fd = -1;
    if (close(fd) != 0)
        return amq_err_sys(err, io_status(errno), errno, "%s: write failed",
                           strcmp(t->path, "-") == 0 ? "standard output" : t->given);
    return AMQ_OK;
}

int amq_target_commit(amq_target *t, amq_errinfo *err)
{
    char dir[AMQ_PATH_CAP];
    const char *base, *delay;
    int dfd, fd, e, moved = 0;

    if (t->fd < 0 && amq_target_begin(t, NULL, err) != AMQ_OK)
        return err != NULL ? err->status : AMQ_EIO;
    if (t->direct)
        return commit_direct(t, err);
    /* Tests only: the complete temporary file is held for a while, so that
     * a signal or a second writer can be sent at this moment for sure. */
    delay = getenv("AMQ_TEST_SAVE_DELAY");
    if (delay != NULL)
        usleep((useconds_t)(atof(delay) * 1e6));
    fd = t->fd;
    if (fsync(fd) != 0) {
        e = errno;
        amq_target_abort(t);
        return amq_err_sys(err, io_status(e), e, "%s: cannot write; nothing changed", t->given);
    }
    /* a failed close released the descriptor all the same: the abort must not close the
     * number again (another thread's file by then) */
    t->fd = -1;
    if (close(fd) != 0) {
        e = errno;
        amq_target_abort(t);
        return amq_err_sys(err, io_status(e), e, "%s: cannot write; nothing changed", t->given);
    }
    if (t->lock_fd < 0) {
        /* A new name: a file that appeared meanwhile is not replaced unseen -
         * with EXCL never, else only under the rules for a file that was
         * there (it is locked and checked now). */
        if (rename_noreplace(t->tmp, t->path) == 0) {
            moved = 1;
        } else {
            e = errno;
            if ((t->flags & AMQ_TARGET_EXCL) || e != EEXIST) {
                amq_target_abort(t);
                if (e == EEXIST)
                    return amq_err(err, AMQ_EEXIST,
                                   "%s: file exists (created meanwhile by another writer)",
                                   t->given);
                return amq_err_sys(err, io_status(e), e, "%s: cannot create", t->given);
            }
            e = lock_existing(t, err);
            if (e == AMQ_OK && t->direct)
                e = amq_err(err, AMQ_EEXIST, "%s: created meanwhile as a device", t->given);
            if (e != AMQ_OK) {
                amq_target_abort(t);
                return e;
            }
        }
    }
    if (!moved && rename(t->tmp, t->path) != 0) {
        e = errno;
        amq_target_abort(t);
        return amq_err_sys(err, io_status(e), e, "%s: cannot replace it; nothing changed",
                           t->given);
    }
    t->tmp[0] = '\0';
    amq_temp_unregister(t->slot);
    t->slot = -1;
    split_dir(t->path, dir, sizeof dir, &base);
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

void amq_target_abort(amq_target *t)
{
    if (t == NULL)
        return;
    if (t->fd >= 0) {
        close(t->fd);
        t->fd = -1;
    }
    if (t->tmp[0] != '\0') {
        unlink(t->tmp);
        t->tmp[0] = '\0';
    }
    amq_temp_unregister(t->slot);
    t->slot = -1;
}

static void target_release(amq_target *t)
{
    amq_target_abort(t);
    held_remove(t->held);
    t->held = -1;
    if (t->lock_fd >= 0) {
        close(t->lock_fd); /* and the lock with it */
        t->lock_fd = -1;
    }
}

int amq_target_open_alloc(const char *path, unsigned flags, const amq_allocator *a,
                          amq_target **out, amq_errinfo *err)
{
    amq_target *t;
    int rc;

    *out = NULL;
    t = amq_malloc(a, sizeof *t);
    if (t == NULL)
        return amq_err(err, AMQ_ENOMEM, "%s: out of memory", path != NULL ? path : "(no path)");
    rc = target_init(t, path, flags, err);
    if (rc != AMQ_OK) {
        amq_free(a, t, sizeof *t);
        return rc;
    }
    *out = t;
    return AMQ_OK;
}

int amq_target_open(const char *path, unsigned flags, amq_target **out, amq_errinfo *err)
{
    return amq_target_open_alloc(path, flags, NULL, out, err);
}

void amq_target_close_alloc(amq_target *t, const amq_allocator *a)
{
    if (t == NULL)
        return;
    target_release(t);
    amq_free(a, t, sizeof *t);
}

void amq_target_close(amq_target *t)
{
    amq_target_close_alloc(t, NULL);
}

const char *amq_target_path(const amq_target *t)
{
    return t->path;
}

int amq_target_exists(const amq_target *t)
{
    return t->exists;
}
