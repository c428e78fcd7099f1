/*
 * test_save_iofail.c - amq_filter_save with each I/O call failing in turn.
 * This binary is linked with -Wl,--wrap= for the calls a save makes
 * (src/common/file.c's target, the Makefile); each wrapper counts its call,
 * and the nth call fails: EIO, ENOSPC for writes, syncs and closes, or a
 * short transfer for reads and writes (half the bytes).  A save over an
 * existing filter and one to a new name, for a plain kind, a partitioned
 * one (whose payload is placed out of order and read back) and two grown
 * ones; the new name also with renameat2 missing (its link + unlink
 * fallback).  A failed save must say so with an I/O status naming the file
 * and leave the old file byte for byte (or none); a successful one must
 * write the file a save with working I/O writes; neither may leave a
 * temporary file or a descriptor behind, or close one twice.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "amq.h"
#include "amq/advanced.h"
#include "test.h"

enum io_call {
    IO_OPEN, IO_FSTAT, IO_FLOCK, IO_PREAD, IO_PWRITE, IO_FCHMOD, IO_FSYNC, IO_CLOSE,
    IO_RENAME, IO_RENAMEAT2, IO_LINK, IO_UNLINK
};
enum io_fault { FAULT_EIO, FAULT_ENOSPC, FAULT_SHORT, FAULTS };

static const char *const call_names[] = {"open",   "fstat", "flock",  "pread",
                                         "pwrite", "fchmod", "fsync", "close",
                                         "rename", "renameat2", "link", "unlink"};
static const char *const fault_names[] = {"failing with EIO", "failing with ENOSPC",
                                          "moving half its bytes"};

static unsigned long io_calls, io_fail_at; /* 0: none fails */
static enum io_fault io_fault;
static int io_failed = -1;     /* the call that failed, -1 none */
static int no_renameat2;       /* renameat2 answers ENOSYS, uncounted: the fallback runs */
static int failed_close = -1;  /* the descriptor a failed close released, until reused */
static int closed_twice;       /* a descriptor closed again after its failed close */

int __real_open(const char *path, int flags, ...);
int __real_fstat(int fd, struct stat *st);
int __real_flock(int fd, int op);
ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
int __real_fchmod(int fd, mode_t mode);
int __real_fsync(int fd);
int __real_close(int fd);
int __real_rename(const char *from, const char *to);
int __real_renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags);
int __real_link(const char *from, const char *to);
int __real_unlink(const char *path);
int __wrap_open(const char *path, int flags, ...);
int __wrap_fstat(int fd, struct stat *st);
int __wrap_flock(int fd, int op);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);
int __wrap_fchmod(int fd, mode_t mode);
int __wrap_fsync(int fd);
int __wrap_close(int fd);
int __wrap_rename(const char *from, const char *to);
int __wrap_renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags);
int __wrap_link(const char *from, const char *to);
int __wrap_unlink(const char *path);

/* 1 when this call is the one to fail (it is then recorded). */
static int io_hit(enum io_call call)
{
    if (io_fail_at == 0 || ++io_calls != io_fail_at)
        return 0;
    io_failed = (int)call;
    return 1;
}

/* The failed call's return: -1 with the fault's errno. */
static int io_error(void)
{
    errno = io_fault == FAULT_ENOSPC ? ENOSPC : EIO;
    return -1;
}

int __wrap_open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    int fd;
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (io_hit(IO_OPEN))
        return io_error();
    fd = __real_open(path, flags, mode);
    if (fd >= 0 && fd == failed_close)
        failed_close = -1; /* the number is another file's now */
    return fd;
}

int __wrap_fstat(int fd, struct stat *st)
{
    return io_hit(IO_FSTAT) ? io_error() : __real_fstat(fd, st);
}

int __wrap_flock(int fd, int op)
{
    return io_hit(IO_FLOCK) ? io_error() : __real_flock(fd, op);
}

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
    if (io_hit(IO_PREAD))
        return io_fault == FAULT_SHORT && n > 1 ? __real_pread(fd, buf, n / 2, off) : io_error();
    return __real_pread(fd, buf, n, off);
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (io_hit(IO_PWRITE))
        return io_fault == FAULT_SHORT && n > 1 ? __real_pwrite(fd, buf, n / 2, off)
                                                : io_error();
    return __real_pwrite(fd, buf, n, off);
}

int __wrap_fchmod(int fd, mode_t mode)
{
    return io_hit(IO_FCHMOD) ? io_error() : __real_fchmod(fd, mode);
}

int __wrap_fsync(int fd)
{
    return io_hit(IO_FSYNC) ? io_error() : __real_fsync(fd);
}

/* A failed close has released the descriptor all the same (Linux): closing the number
 * again would close whatever another thread opened under it meanwhile. */
int __wrap_close(int fd)
{
    if (fd >= 0 && fd == failed_close)
        closed_twice = 1;
    if (io_hit(IO_CLOSE)) {
        (void)__real_close(fd);
        failed_close = fd;
        return io_error();
    }
    return __real_close(fd);
}

int __wrap_rename(const char *from, const char *to)
{
    return io_hit(IO_RENAME) ? io_error() : __real_rename(from, to);
}

int __wrap_renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags)
{
    if (no_renameat2) {
        errno = ENOSYS;
        return -1;
    }
    return io_hit(IO_RENAMEAT2) ? io_error() : __real_renameat2(fromfd, from, tofd, to, flags);
}

int __wrap_link(const char *from, const char *to)
{
    return io_hit(IO_LINK) ? io_error() : __real_link(from, to);
}

int __wrap_unlink(const char *path)
{
    return io_hit(IO_UNLINK) ? io_error() : __real_unlink(path);
}

/* Which faults apply to a call: ENOSPC to writes, syncs and closes (the last write-back),
 * a short transfer to reads and writes (EIO to all). */
static int fault_applies(int call, enum io_fault fault)
{
    if (fault == FAULT_ENOSPC)
        return call == IO_PWRITE || call == IO_FSYNC || call == IO_CLOSE;
    if (fault == FAULT_SHORT)
        return call == IO_PREAD || call == IO_PWRITE;
    return 1;
}

static void io_arm(unsigned long k, enum io_fault fault)
{
    io_calls = 0;
    io_failed = -1;
    failed_close = -1;
    closed_twice = 0;
    io_fault = fault;
    io_fail_at = k;
}

static void io_disarm(void)
{
    io_fail_at = 0;
}

/* ---- files -------------------------------------------------------------------------- */

/* Entries of dir but the one named keep (NULL: any): a temporary file left behind. */
static unsigned other_entries(const char *dir, const char *keep, char *first, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    unsigned n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            (keep != NULL && strcmp(e->d_name, keep) == 0))
            continue;
        if (n++ == 0)
            snprintf(first, cap, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

static unsigned open_descriptors(void)
{
    char name[8];
    return other_entries("/proc/self/fd", NULL, name, sizeof name);
}

/* ---- the sweep ---------------------------------------------------------------------- */

typedef struct sweep {
    const char *name;
    amq_filter *f;
    unsigned keys;
    char dir[64], path[160];
    int existing;             /* a filter at path before each save, else none */
    uint8_t *old, *want;      /* the file before the save; the file a working save writes */
    size_t old_len, want_len;
} sweep;

static void sweep_restore(const sweep *s)
{
    (void)__real_unlink(s->path);
    if (s->existing && test_write_file(s->path, s->old, s->old_len) != 0)
        FAIL_AT_("cannot restore %s", s->path);
}

static unsigned count_present(const amq_filter *f, unsigned n)
{
    unsigned i, got = 0;
    for (i = 0; i < n; i++)
        got += amq_filter_contains(f, &i, sizeof i) == 1;
    return got;
}

/* After a save that returned rc: what is at the path, and what is not beside it. */
static void check_after(const sweep *s, int rc, const amq_errinfo *err, const char *what)
{
    const char *base = strrchr(s->path, '/') + 1;
    uint8_t *now;
    size_t len = 0;
    char left[256];
    amq_filter *g;

    if (closed_twice)
        FAIL_AT_("%s: a descriptor was closed again after its failed close", what);
    if (other_entries(s->dir, base, left, sizeof left) != 0)
        FAIL_AT_("%s: %s left in the directory (status %d)", what, left, rc);
    now = test_read_file(s->path, &len);
    if (rc != AMQ_OK) {
        if (rc != AMQ_EIO && rc != AMQ_ENOSPC)
            FAIL_AT_("%s: status %d (%s), not an I/O one", what, rc, err->msg);
        if (strstr(err->msg, s->path) == NULL)
            FAIL_AT_("%s: the message does not name the file: \"%s\"", what, err->msg);
        if (s->existing && (now == NULL || len != s->old_len || memcmp(now, s->old, len) != 0))
            FAIL_AT_("%s: failed (%s), the old file is not there byte for byte", what,
                     err->msg);
        if (!s->existing && now != NULL)
            FAIL_AT_("%s: failed (%s), yet a file is at the new path", what, err->msg);
        free(now);
        return;
    }
    if (now == NULL || len != s->want_len || memcmp(now, s->want, len) != 0)
        FAIL_AT_("%s: succeeded, the file is not the one a working save writes", what);
    free(now);
    if (amq_filter_open(s->path, 0, NULL, &g, NULL) != AMQ_OK) {
        FAIL_AT_("%s: succeeded, the file does not open", what);
        return;
    }
    if (count_present(g, s->keys) != s->keys)
        FAIL_AT_("%s: the saved file answers %u of %u keys", what, count_present(g, s->keys),
                 s->keys);
    amq_filter_free(g);
}

/* One save with the kth I/O call failing by fault; 0 when the save made fewer than k calls. */
static int run_once(const sweep *s, unsigned long k, enum io_fault fault)
{
    char what[200];
    amq_errinfo err;
    unsigned fds;
    int rc;

    memset(&err, 0, sizeof err);
    sweep_restore(s);
    fds = open_descriptors();
    io_arm(k, fault);
    rc = amq_filter_save(s->f, s->path, 0, &err);
    io_disarm();
    if (io_failed < 0) {
        if (rc != AMQ_OK)
            FAIL_AT_("%s: save with working I/O fails (%d: %s)", s->name, rc, err.msg);
        return 0;
    }
    snprintf(what, sizeof what, "%s, %s%s, its I/O call %lu (%s) %s", s->name,
             s->existing ? "over a filter" : "to a new name",
             no_renameat2 ? " without renameat2" : "", k, call_names[io_failed],
             fault_names[fault]);
    if (rc != AMQ_OK && fault == FAULT_SHORT) /* a transfer short of its bytes is no error */
        FAIL_AT_("%s: status %d (%s)", what, rc, err.msg);
    check_after(s, rc, &err, what);
    if (open_descriptors() != fds)
        FAIL_AT_("%s: %u descriptors open before, %u after", what, fds, open_descriptors());
    return 1;
}

/* Every I/O call of the save failing in turn, by each fault that applies to it; the number
 * of calls. */
static unsigned long sweep_save(const sweep *s)
{
    unsigned long k;
    int fault, call, failed_before = test_failed;
    test_failed = 0;
    for (k = 1; k < 100000; k++) {
        if (!run_once(s, k, FAULT_EIO))
            break;
        call = io_failed; /* the same call each run: the directory is restored */
        for (fault = FAULT_ENOSPC; fault < FAULTS; fault++)
            if (fault_applies(call, (enum io_fault)fault))
                run_once(s, k, (enum io_fault)fault);
        if (test_failed)
            break; /* the first failure is the one to read */
    }
    test_failed |= failed_before;
    return k - 1;
}

/* The filter cfg makes (a partitioned one concurrent) with keys [0, keys) added, saved
 * over an older filter and to a new name with each I/O call failing in turn. */
static void sweep_kind(const char *name, const amq_config *cfg, unsigned keys, int concurrent)
{
    sweep s;
    amq_filter *older;
    unsigned i;
    unsigned long n;

    memset(&s, 0, sizeof s);
    s.name = name;
    s.keys = keys;
    /* memory-backed when there is one: hundreds of saves of a few fsyncs each */
    snprintf(s.dir, sizeof s.dir, "/dev/shm/amq-saveio-XXXXXX");
    if (mkdtemp(s.dir) == NULL)
        snprintf(s.dir, sizeof s.dir, "%s/saveio", test_tmpdir());
    (void)mkdir(s.dir, 0700);
    snprintf(s.path, sizeof s.path, "%s/%s.amq", s.dir, name);
    REQUIRE_OK(amq_filter_new(cfg, &s.f, NULL));
    if (concurrent) /* its partitions then placed out of order and read back for the sum */
        REQUIRE_OK(amq_partitioned_set_concurrent(amq_filter_partitioned(s.f), 1));
    for (i = 0; i < keys; i++)
        REQUIRE(amq_filter_add(s.f, &i, sizeof i) >= 0);
    /* the file a save with working I/O writes */
    REQUIRE_OK(amq_filter_save(s.f, s.path, 0, NULL));
    REQUIRE((s.want = test_read_file(s.path, &s.want_len)) != NULL);
    /* the file it replaces: the same kind with half the keys */
    REQUIRE_OK(amq_filter_new(cfg, &older, NULL));
    for (i = 0; i < keys / 2; i++)
        REQUIRE(amq_filter_add(older, &i, sizeof i) >= 0);
    (void)__real_unlink(s.path);
    REQUIRE_OK(amq_filter_save(older, s.path, 0, NULL));
    amq_filter_free(older);
    REQUIRE((s.old = test_read_file(s.path, &s.old_len)) != NULL);

    s.existing = 1;
    n = sweep_save(&s);
    if (!test_failed)
        CHECK_GE(n, 10); /* the lock's open, fstat, flock, read; the temporary's; the rename */
    s.existing = 0;
    n = sweep_save(&s);
    if (!test_failed)
        CHECK_GE(n, 6);
    no_renameat2 = 1;
    n = sweep_save(&s);
    no_renameat2 = 0;
    if (!test_failed)
        CHECK_GE(n, 7);

    (void)__real_unlink(s.path);
    (void)rmdir(s.dir);
    amq_filter_free(s.f);
    free(s.want);
    free(s.old);
}

TEST(save_plain_kind_with_each_io_call_failing)
{
    amq_config cfg;
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 2000;
    sweep_kind("bloom", &cfg, 200, 0);
    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.capacity = 2000;
    sweep_kind("blocked", &cfg, 200, 0);
}

/* Concurrent, its partitions are placed out of order and the payload read back for its
 * checksum. */
TEST(save_partitioned_with_each_io_call_failing)
{
    amq_config cfg;
    amq_config_init(&cfg, AMQ_KIND_PARTITIONED);
    cfg.capacity = 2000;
    cfg.partitions = 4;
    sweep_kind("partitioned", &cfg, 200, 0);
    sweep_kind("partitioned-concurrent", &cfg, 200, 1);
}

/* Started small and grown by the adds: several tables or segments to write. */
TEST(save_grown_kinds_with_each_io_call_failing)
{
    amq_config cfg;
    amq_config_init(&cfg, AMQ_KIND_QUOTIENT);
    cfg.capacity = 50;
    sweep_kind("quotient", &cfg, 2000, 0);
    amq_config_init(&cfg, AMQ_KIND_EXPANDABLE);
    cfg.capacity = 50;
    sweep_kind("expandable", &cfg, 2000, 0);
    amq_config_init(&cfg, AMQ_KIND_POCKET);
    cfg.capacity = 64;
    sweep_kind("pocket", &cfg, 2000, 0);
}

TEST_MAIN()
