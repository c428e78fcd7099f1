/*
 * target.c - the files the tool writes, written so that a mistake or an
 * interruption loses nothing (issue 19):
 *
 *   - every temporary file is registered, and SIGINT, SIGTERM, SIGHUP,
 *     SIGQUIT and SIGPIPE remove the registered ones before the signal's
 *     default action ends the process;
 *   - an existing file is replaced only when it is what the command makes
 *     (an amq filter for filter outputs, anything but an amq filter for
 *     dedup's text): swapped arguments and --force never eat a text file;
 *   - a symlink is followed: the file it points to is replaced, the link
 *     stays; the replaced file's mode and owner are kept (or the save
 *     fails); a file with other hard links, or with no write permission
 *     (even for root), is refused rather than split or silently changed;
 *   - the existing file is locked (flock, exclusive) from before it is
 *     read until it is replaced, so that two `amq add` on one file
 *     serialize instead of one losing the other's keys.  A replaced file
 *     is a new inode: a writer that waited on the old one sees that the
 *     name moved on, and locks again.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "amq/inplace.h"
#include "cli.h"

/* ---- temporary files removed on a signal -------------------------------------------------- */

#define TMP_SLOTS 4

static char tmp_paths[TMP_SLOTS][PATH_MAX + 64];
static volatile sig_atomic_t tmp_used[TMP_SLOTS];

static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

static void on_fatal_signal(int sig)
{
    int i, e = errno;
    for (i = 0; i < TMP_SLOTS; i++)
        if (tmp_used[i])
            (void)unlink(tmp_paths[i]); /* async-signal-safe */
    signal(sig, SIG_DFL);
    errno = e;
    raise(sig);
}

void cli_signals_init(void)
{
    struct sigaction sa;
    size_t i;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        sigaddset(&sa.sa_mask, fatal_signals[i]);
    for (i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        struct sigaction old;
        /* A signal ignored by whoever started us (nohup) stays ignored. */
        if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

/* The slot is written with the signals blocked, so that the handler never
 * sees half a path. */
static void block_fatal(sigset_t *old)
{
    sigset_t set;
    size_t i;
    sigemptyset(&set);
    for (i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        sigaddset(&set, fatal_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

static sigset_t held_mask;
static int held;

void cli_signals_hold(void)
{
    if (!held)
        block_fatal(&held_mask);
    held = 1;
}

void cli_signals_release(void)
{
    if (held)
        pthread_sigmask(SIG_SETMASK, &held_mask, NULL);
    held = 0;
}

int cli_tmp_register(const char *path)
{
    sigset_t old;
    int i, slot = -1;

    if (strlen(path) >= sizeof tmp_paths[0])
        return -1;
    block_fatal(&old);
    for (i = 0; i < TMP_SLOTS && slot < 0; i++)
        if (!tmp_used[i])
            slot = i;
    if (slot >= 0) {
        strcpy(tmp_paths[slot], path);
        tmp_used[slot] = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return slot;
}

void cli_tmp_unregister(int slot)
{
    sigset_t old;
    if (slot < 0 || slot >= TMP_SLOTS)
        return;
    block_fatal(&old);
    tmp_used[slot] = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Creates an empty temporary file "DIR/.BASE.XXXXXX.amqtmp" next to path,
 * registered for removal on a signal.  The fd, or -1 (reported). */
int cli_tmp_create(const char *path, char *tmp, size_t cap, int *slot)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash != NULL ? slash + 1 : path;
    int dirlen = slash != NULL ? (int)(slash - path) + 1 : 0;
    unsigned long long r;
    int fd = -1, attempt;
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    r = (unsigned long long)getpid() * 2654435761ull ^ (unsigned long long)ts.tv_nsec;
    for (attempt = 0; attempt < 100; attempt++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        if (snprintf(tmp, cap, "%.*s.%s.%06llx.amqtmp", dirlen, path, base,
                     (r >> 40) & 0xffffffull) >= (int)cap) {
            cli_error("%s: path too long", path);
            return -1;
        }
        /* Registered before it exists: a signal between open and register
         * would otherwise leave it. */
        *slot = cli_tmp_register(tmp);
        fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        cli_tmp_unregister(*slot);
        *slot = -1;
        if (errno != EEXIST)
            break;
    }
    cli_error("%s: cannot create a file in its directory: %s", path, strerror(errno));
    return -1;
}

/* ---- the target --------------------------------------------------------------------------- */

static const uint8_t amq_magic[8] = {0x89, 'A', 'M', 'Q', '\r', '\n', 0x1a, '\n'};

int cli_fd_is_amq(int fd)
{
    uint8_t b[8];
    ssize_t n = pread(fd, b, sizeof b, 0);
    return n == (ssize_t)sizeof b && memcmp(b, amq_magic, sizeof b) == 0;
}

/* Follows symlinks to the file they name (which may not exist yet: a
 * dangling link is followed to create its target).  malloc'd, or NULL. */
static char *resolve(const char *path)
{
    char buf[PATH_MAX], *cur, *res;
    struct stat st;
    int hops;
    ssize_t n;

    res = realpath(path, NULL);
    if (res != NULL)
        return res;
    cur = strdup(path);
    for (hops = 0; cur != NULL && hops < 40; hops++) {
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur;
        n = readlink(cur, buf, sizeof buf - 1);
        if (n < 0)
            return cur;
        buf[n] = '\0';
        if (buf[0] == '/' || strrchr(cur, '/') == NULL) {
            free(cur);
            cur = strdup(buf);
        } else {
            size_t dl = (size_t)(strrchr(cur, '/') - cur) + 1;
            res = malloc(dl + (size_t)n + 1);
            if (res != NULL) {
                memcpy(res, cur, dl);
                memcpy(res + dl, buf, (size_t)n + 1);
            }
            free(cur);
            cur = res;
        }
    }
    return cur;
}

/* No NUL byte in the first 4 KiB (as grep and diff decide "binary"). */
static int looks_like_text(int fd)
{
    uint8_t b[4096];
    ssize_t n = pread(fd, b, sizeof b, 0);
    return n >= 0 && memchr(b, 0, (size_t)n) == NULL;
}

void cli_target_release(cli_target *t)
{
    if (t->fd >= 0)
        close(t->fd); /* and the lock with it */
    t->fd = -1;
    free(t->real);
    t->real = NULL;
}

static int check_existing(cli_target *t, unsigned flags)
{
    const char *p = t->path;

    if (S_ISDIR(t->st.st_mode)) {
        cli_error("%s: is a directory", p);
        return -1;
    }
    if (!S_ISREG(t->st.st_mode)) {
        if (flags & CLI_TARGET_UPDATE) {
            cli_error("%s: not a regular file", p);
            return -1;
        }
        return 0; /* /dev/null and the like: written through, not replaced */
    }
    if (!(flags & (CLI_TARGET_UPDATE | CLI_TARGET_FORCE | CLI_TARGET_TEXT))) {
        cli_error("%s: file exists (use --force to replace it)", p);
        return -1;
    }
    if ((flags & CLI_TARGET_TEXT) && cli_fd_is_amq(t->fd)) {
        cli_error("%s: is an amq filter; refusing to replace it with text", p);
        return -1;
    }
    if ((flags & CLI_TARGET_ANY) && !cli_fd_is_amq(t->fd) && looks_like_text(t->fd)) {
        cli_error("%s: exists and holds text; --force replaces only binary files", p);
        return -1;
    }
    if (!(flags & (CLI_TARGET_TEXT | CLI_TARGET_ANY)) && !cli_fd_is_amq(t->fd)) {
        cli_error("%s: exists and is not an amq filter; %s", p,
                  (flags & CLI_TARGET_UPDATE) ? "nothing changed"
                                              : "--force replaces only amq filters");
        return -1;
    }
    if ((t->st.st_mode & 0222) == 0 || access(t->real, W_OK) != 0) {
        cli_error("%s: is read-only (mode %04o); nothing changed", p,
                  (unsigned)(t->st.st_mode & 07777));
        return -1;
    }
    if (t->st.st_nlink > 1) {
        cli_error("%s: has %llu hard links; replacing it would leave the other names on the "
                  "old data (copy it first); nothing changed",
                  p, (unsigned long long)t->st.st_nlink);
        return -1;
    }
    return 0;
}

int cli_target_open(cli_target *t, const char *path, unsigned flags)
{
    struct stat now;
    int tries;

    memset(t, 0, sizeof *t);
    t->fd = -1;
    t->path = path;
    t->flags = flags;
    if (strcmp(path, "-") == 0) {
        t->real = strdup("(standard output)");
        t->exists = 1;
        t->stdout_ = 1;
        return t->real != NULL ? 0 : -1;
    }
    t->real = resolve(path);
    if (t->real == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (tries = 0; tries < 100; tries++) {
        t->fd = open(t->real, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (t->fd < 0) {
            if (errno == ENOENT && !(flags & CLI_TARGET_UPDATE)) {
                t->exists = 0;
                return 0;
            }
            cli_error("%s: %s", path, strerror(errno));
            goto fail;
        }
        if (fstat(t->fd, &t->st) != 0) {
            cli_error("%s: %s", path, strerror(errno));
            goto fail;
        }
        t->exists = 1;
        if (!S_ISREG(t->st.st_mode))
            break;
        if (flock(t->fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK) {
                cli_error("%s: cannot lock: %s", path, strerror(errno));
                goto fail;
            }
            cli_warn("%s: waiting for another amq writing it", path);
            while (flock(t->fd, LOCK_EX) != 0) {
                if (errno != EINTR) {
                    cli_error("%s: cannot lock: %s", path, strerror(errno));
                    goto fail;
                }
            }
        }
        /* The other writer may have replaced the file meanwhile: lock the
         * file the name now refers to. */
        if (stat(t->real, &now) == 0 && now.st_dev == t->st.st_dev &&
            now.st_ino == t->st.st_ino) {
            t->st = now;
            break;
        }
        close(t->fd);
        t->fd = -1;
    }
    if (t->fd < 0) {
        cli_error("%s: keeps changing under us", path);
        goto fail;
    }
    if (check_existing(t, flags) != 0)
        goto fail;
    if (S_ISREG(t->st.st_mode) && cli_fd_is_amq(t->fd)) {
        /* A journal of an in-place add cut short is applied before the
         * file is read or replaced (a stale one must never meet a new file). */
        amq_errinfo err;
        memset(&err, 0, sizeof err);
        if (amq_inplace_recover(t->real, &err) != AMQ_OK) {
            cli_lib_error(AMQ_EIO, &err, NULL);
            goto fail;
        }
    }
    return 0;
fail:
    cli_target_release(t);
    return -1;
}

/* Gives the temporary file the replaced file's mode and owner. */
static int adopt_attributes(cli_target *t, int fd)
{
    mode_t mask;

    if (!t->exists) {
        mask = umask(0);
        umask(mask);
        if (fchmod(fd, 0666 & ~mask) != 0) {
            cli_error("%s: cannot set permissions: %s", t->path, strerror(errno));
            return -1;
        }
        return 0;
    }
    if ((t->st.st_uid != geteuid() || t->st.st_gid != getegid()) &&
        fchown(fd, t->st.st_uid, t->st.st_gid) != 0) {
        cli_error("%s: cannot keep its owner %lu:%lu (%s); nothing changed", t->path,
                  (unsigned long)t->st.st_uid, (unsigned long)t->st.st_gid, strerror(errno));
        return -1;
    }
    if (fchmod(fd, t->st.st_mode & 07777) != 0) {
        cli_error("%s: cannot set permissions: %s", t->path, strerror(errno));
        return -1;
    }
    return 0;
}

int cli_target_begin(cli_target *t)
{
    if (t->stdout_) {
        t->tmp_fd = dup(STDOUT_FILENO);
        if (t->tmp_fd < 0)
            cli_error("standard output: %s", strerror(errno));
        t->direct = 1;
        t->tmp_slot = -1;
        return t->tmp_fd;
    }
    if (t->exists && !S_ISREG(t->st.st_mode)) {
        /* A device or pipe (/dev/null, /dev/stdout): written straight. */
        t->tmp_fd = open(t->real, O_WRONLY | O_CLOEXEC);
        if (t->tmp_fd < 0)
            cli_error("%s: %s", t->path, strerror(errno));
        t->direct = 1;
        t->tmp_slot = -1;
        return t->tmp_fd;
    }
    t->tmp_fd = cli_tmp_create(t->real, t->tmp, sizeof t->tmp, &t->tmp_slot);
    if (t->tmp_fd < 0)
        return -1;
    if (adopt_attributes(t, t->tmp_fd) != 0) {
        cli_target_abort(t);
        return -1;
    }
    return t->tmp_fd;
}

void cli_target_abort(cli_target *t)
{
    if (t->tmp_fd >= 0)
        close(t->tmp_fd);
    t->tmp_fd = -1;
    if (!t->direct && t->tmp[0] != '\0')
        unlink(t->tmp);
    t->tmp[0] = '\0';
    cli_tmp_unregister(t->tmp_slot);
    t->tmp_slot = -1;
}

int cli_target_commit(cli_target *t)
{
    char dir[PATH_MAX + 2];
    const char *slash;
    int dfd;

    if (t->direct) {
        if (close(t->tmp_fd) != 0) {
            cli_error("%s: %s", t->path, strerror(errno));
            t->tmp_fd = -1;
            return -1;
        }
        t->tmp_fd = -1;
        return 0;
    }
    /* Tests only: hold the complete temporary file for a while, so that
     * a signal or a second writer can be sent at this moment for sure. */
    if (getenv("AMQ_TEST_SAVE_DELAY") != NULL)
        usleep((useconds_t)(atof(getenv("AMQ_TEST_SAVE_DELAY")) * 1e6));
    if (fsync(t->tmp_fd) != 0 || close(t->tmp_fd) != 0) {
        cli_error("%s: %s; nothing changed", t->path, strerror(errno));
        cli_target_abort(t);
        return -1;
    }
    t->tmp_fd = -1;
    if (t->exists) {
        if (rename(t->tmp, t->real) != 0) {
            cli_error("%s: cannot replace it: %s; nothing changed", t->path, strerror(errno));
            cli_target_abort(t);
            return -1;
        }
    } else if (link(t->tmp, t->real) != 0) {
        /* link, not rename: a file that appeared meanwhile is not replaced. */
        cli_error("%s: %s", t->path,
                  errno == EEXIST ? "file exists (created meanwhile by someone else)"
                                  : strerror(errno));
        cli_target_abort(t);
        return -1;
    } else {
        unlink(t->tmp);
    }
    t->tmp[0] = '\0';
    cli_tmp_unregister(t->tmp_slot);
    t->tmp_slot = -1;
    slash = strrchr(t->real, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == t->real ? 1 : (int)(slash - t->real),
                 t->real);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* ---- whole contents --------------------------------------------------------------------------- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
    ssize_t w;
    while (n > 0) {
        w = write(fd, p, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int cli_target_write_bytes(cli_target *t, const void *data, size_t len)
{
    int fd = cli_target_begin(t);
    if (fd < 0)
        return -1;
    if (write_all(fd, data, len) != 0) {
        cli_error("%s: write error: %s; nothing changed", t->path, strerror(errno));
        cli_target_abort(t);
        return -1;
    }
    return cli_target_commit(t);
}

/*
 * A filter is serialized straight into the mapped temporary file: no second
 * copy in memory.  Its blocks are reserved first (posix_fallocate) so that
 * a full disk is an error here, not a SIGBUS while the map is written.
 */
int cli_target_write_filter(cli_target *t, const amq_filter *f)
{
    uint64_t size;
    size_t written;
    void *map;
    int fd, rc;

    if (amq_filter_serialized_size(f, &size) != AMQ_OK || size > SIZE_MAX) {
        cli_error("%s: filter too large to save", t->path);
        return -1;
    }
    fd = cli_target_begin(t);
    if (fd < 0)
        return -1;
    if (t->direct) {
        void *buf = malloc((size_t)size);
        if (buf == NULL) {
            cli_error("%s: out of memory", t->path);
            cli_target_abort(t);
            return -1;
        }
        rc = amq_filter_serialize(f, buf, (size_t)size, &written);
        if (rc != AMQ_OK || write_all(fd, buf, (size_t)size) != 0) {
            cli_error("%s: %s", t->path, rc != AMQ_OK ? amq_strerror(rc) : strerror(errno));
            free(buf);
            cli_target_abort(t);
            return -1;
        }
        free(buf);
        return cli_target_commit(t);
    }
    rc = posix_fallocate(fd, 0, (off_t)size);
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
        cli_error("%s: %s; nothing changed", t->path, strerror(rc));
        cli_target_abort(t);
        return -1;
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        cli_error("%s: %s; nothing changed", t->path, strerror(errno));
        cli_target_abort(t);
        return -1;
    }
    map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        cli_error("%s: cannot map the new file: %s; nothing changed", t->path, strerror(errno));
        cli_target_abort(t);
        return -1;
    }
    rc = amq_filter_serialize(f, map, (size_t)size, &written);
    if (rc == AMQ_OK && msync(map, (size_t)size, MS_SYNC) != 0)
        rc = AMQ_EIO;
    munmap(map, (size_t)size);
    if (rc != AMQ_OK) {
        cli_error("%s: %s; nothing changed", t->path, amq_strerror(rc));
        cli_target_abort(t);
        return -1;
    }
    return cli_target_commit(t);
}

int cli_check_output(const char *path, int force)
{
    cli_target t;
    if (cli_target_open(&t, path, force ? CLI_TARGET_FORCE : 0) != 0)
        return -1;
    cli_target_release(&t);
    return 0;
}

int cli_save_filter(const char *path, const amq_filter *f, unsigned flags)
{
    cli_target t;
    int rc;
    if (cli_target_open(&t, path, flags) != 0)
        return -1;
    rc = cli_target_write_filter(&t, f);
    cli_target_release(&t);
    return rc;
}
