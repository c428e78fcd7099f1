/*
 * test_inplace_iofail.c - the in-place add and its journal's recovery with
 * each I/O call failing in turn.  This binary is linked with -Wl,--wrap= for
 * the calls src/inplace.c and src/common/journal.c and file.c's journal
 * reading make (the Makefile); each wrapper counts its call, and the nth
 * call of an operation fails: EIO, ENOSPC for writes and fsyncs, a short
 * transfer for reads and writes (half the bytes), or a write of no byte.  After each, with I/O
 * working again, a later open must answer every key the file and its
 * journal held before the operation (and those of an add that returned
 * success); a failed operation must say so, naming the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "amq/inplace.h"
#include "test.h"

#define NKEYS 16u

enum io_call {
    IO_OPEN,
    IO_FSTAT,
    IO_READ,
    IO_PREAD,
    IO_PWRITE,
    IO_WRITE,
    IO_FSYNC,
    IO_FDATASYNC,
    IO_UNLINK
};
enum io_fault { FAULT_EIO, FAULT_ENOSPC, FAULT_SHORT, FAULT_ZERO, FAULTS };

static const char *const call_names[] = {"open",  "fstat", "read",      "pread", "pwrite",
                                         "write", "fsync", "fdatasync", "unlink"};
static const char *const fault_names[] = {"failing with EIO", "failing with ENOSPC",
                                          "moving half its bytes", "writing no byte"};

static unsigned long io_calls, io_fail_at; /* 0: none fails */
static enum io_fault io_fault;
static int io_failed = -1; /* the call that failed, -1 none */
static ino_t watch_ino;    /* the filter file's inode: its writes are counted */
static unsigned long file_writes, file_writes_at_fail;

int __real_open(const char *path, int flags, ...);
int __real_fstat(int fd, struct stat *st);
ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __real_unlink(const char *path);
int __wrap_open(const char *path, int flags, ...);
int __wrap_fstat(int fd, struct stat *st);
ssize_t __wrap_read(int fd, void *buf, size_t n);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int __wrap_fsync(int fd);
int __wrap_fdatasync(int fd);
int __wrap_unlink(const char *path);

/* 1 when this call is the one to fail (it is then recorded). */
static int io_hit(enum io_call call)
{
    if (io_fail_at == 0 || ++io_calls != io_fail_at)
        return 0;
    io_failed = (int)call;
    file_writes_at_fail = file_writes;
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
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (io_hit(IO_OPEN))
        return io_error();
    return __real_open(path, flags, mode);
}

int __wrap_fstat(int fd, struct stat *st)
{
    return io_hit(IO_FSTAT) ? io_error() : __real_fstat(fd, st);
}

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
    if (io_hit(IO_READ))
        return io_fault == FAULT_SHORT && n > 1 ? __real_read(fd, buf, n / 2) : io_error();
    return __real_read(fd, buf, n);
}

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
    if (io_hit(IO_PREAD))
        return io_fault == FAULT_SHORT && n > 1 ? __real_pread(fd, buf, n / 2, off) : io_error();
    return __real_pread(fd, buf, n, off);
}

static void count_file_write(int fd)
{
    struct stat st;
    if (watch_ino != 0 && __real_fstat(fd, &st) == 0 && st.st_ino == watch_ino)
        file_writes++;
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (io_hit(IO_PWRITE)) {
        if (io_fault == FAULT_ZERO)
            return 0; /* errno untouched, as a call that did not fail leaves it */
        if (io_fault != FAULT_SHORT || n <= 1)
            return io_error();
        n /= 2;
    }
    count_file_write(fd);
    return __real_pwrite(fd, buf, n, off);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    if (io_hit(IO_WRITE)) {
        if (io_fault == FAULT_ZERO)
            return 0;
        if (io_fault != FAULT_SHORT || n <= 1)
            return io_error();
        n /= 2;
    }
    count_file_write(fd);
    return __real_write(fd, buf, n);
}

int __wrap_fsync(int fd)
{
    return io_hit(IO_FSYNC) ? io_error() : __real_fsync(fd);
}

int __wrap_fdatasync(int fd)
{
    return io_hit(IO_FDATASYNC) ? io_error() : __real_fdatasync(fd);
}

int __wrap_unlink(const char *path)
{
    return io_hit(IO_UNLINK) ? io_error() : __real_unlink(path);
}

/* Which faults apply to a call: ENOSPC to writes and syncs, a short transfer to reads and
 * writes, no byte written to writes (EIO to all). */
static int fault_applies(int call, enum io_fault fault)
{
    if (fault == FAULT_ZERO)
        return call == IO_PWRITE || call == IO_WRITE;
    if (fault == FAULT_ENOSPC)
        return call == IO_PWRITE || call == IO_WRITE || call == IO_FSYNC ||
               call == IO_FDATASYNC;
    if (fault == FAULT_SHORT)
        return call == IO_READ || call == IO_PREAD || call == IO_PWRITE || call == IO_WRITE;
    return 1;
}

static void io_arm(unsigned long k, enum io_fault fault)
{
    io_calls = 0;
    io_failed = -1;
    file_writes = file_writes_at_fail = 0;
    io_fault = fault;
    io_fail_at = k;
}

static void io_disarm(void)
{
    io_fail_at = 0;
}

typedef struct sweep {
    char path[4096], jpath[4200];
    uint8_t *fbytes, *jbytes; /* the file and its journal (NULL: none) before each run */
    size_t flen, jlen;
    unsigned before, after; /* keys [0, before) held before; [before, after) added by the run */
} sweep;

static void sweep_restore(const sweep *s)
{
    struct stat st;
    if (test_write_file(s->path, s->fbytes, s->flen) != 0)
        FAIL_AT_("cannot restore %s", s->path);
    (void)__real_unlink(s->jpath);
    if (s->jbytes != NULL && test_write_file(s->jpath, s->jbytes, s->jlen) != 0)
        FAIL_AT_("cannot restore %s", s->jpath);
    watch_ino = stat(s->path, &st) == 0 ? st.st_ino : 0;
}

/* With I/O working: an open answers want keys from 0, and so does the file alone once a
 * writer's open has applied (and removed) the journal; the file verifies. */
static void check_later_open(const sweep *s, unsigned want, const char *what)
{
    amq_filter *f;
    amq_inplace *ip;
    amq_errinfo err;
    struct stat st;
    int rc;

    memset(&err, 0, sizeof err);
    rc = amq_filter_open(s->path, 0, NULL, &f, &err);
    if (rc != AMQ_OK) {
        FAIL_AT_("%s: a later open fails (%d: %s)", what, rc, err.msg);
        return;
    }
    if (test_count_u32_keys(f, 0, want) != want)
        FAIL_AT_("%s: a later open answers %u of %u keys", what,
                 test_count_u32_keys(f, 0, want), want);
    amq_filter_free(f);
    rc = amq_inplace_open(s->path, &f, &ip, &err);
    if (rc != AMQ_OK) {
        FAIL_AT_("%s: a later in-place open fails (%d: %s)", what, rc, err.msg);
        return;
    }
    amq_filter_free(f);
    amq_inplace_close(ip);
    if (stat(s->jpath, &st) == 0)
        FAIL_AT_("%s: the journal outlived a writer's open", what);
    rc = amq_filter_open(s->path, 0, NULL, &f, &err);
    if (rc != AMQ_OK) {
        FAIL_AT_("%s: the file alone fails to open (%d: %s)", what, rc, err.msg);
        return;
    }
    if (test_count_u32_keys(f, 0, want) != want)
        FAIL_AT_("%s: the file alone answers %u of %u keys", what,
                 test_count_u32_keys(f, 0, want), want);
    amq_filter_free(f);
}

/* A failed operation's status and message: an I/O status, the file named. */
static void check_failure(const sweep *s, int rc, const amq_errinfo *err, const char *what)
{
    /* a commit that cannot find its pages (the pagemap unreadable) wrote nothing: the caller
     * saves the file whole */
    if (rc == AMQ_EUNSUPPORTED && file_writes_at_fail == 0 && s->jbytes == NULL)
        rc = AMQ_EIO;
    if (rc != AMQ_EIO && rc != AMQ_ENOSPC)
        FAIL_AT_("%s: status %d (%s), not an I/O one", what, rc, err->msg);
    if (strstr(err->msg, s->path) == NULL)
        FAIL_AT_("%s: the message does not name the file: \"%s\"", what, err->msg);
}

enum op { OP_INPLACE_OPEN, OP_RECOVER, OP_FILTER_OPEN, OP_COMMIT };
static const char *const op_names[] = {"amq_inplace_open", "amq_inplace_recover",
                                       "amq_filter_open", "amq_inplace_commit"};

/* One run of op with the kth I/O call failing by fault; 0 when op made fewer than k calls. */
static int run_once(const sweep *s, enum op op, unsigned long k, enum io_fault fault)
{
    char what[160];
    amq_filter *f = NULL;
    amq_inplace *ip = NULL;
    amq_errinfo err;
    struct stat st;
    int rc, journal_left;

    memset(&err, 0, sizeof err);
    sweep_restore(s);
    if (op == OP_COMMIT) { /* the add itself with I/O working, then its commit */
        if (amq_inplace_open(s->path, &f, &ip, NULL) != AMQ_OK) {
            FAIL_AT_("cannot open %s in place", s->path);
            return 0;
        }
        test_add_u32_keys(f, s->before, s->after);
    }
    io_arm(k, fault);
    switch (op) {
    case OP_INPLACE_OPEN:
        rc = amq_inplace_open(s->path, &f, &ip, &err);
        break;
    case OP_RECOVER:
        rc = amq_inplace_recover(s->path, &err);
        break;
    case OP_FILTER_OPEN:
        rc = amq_filter_open(s->path, 0, NULL, &f, &err);
        break;
    default:
        rc = amq_inplace_commit(ip, f, NULL, &err);
        break;
    }
    io_disarm();
    if (io_failed < 0) { /* fewer than k calls: every one has failed once */
        amq_filter_free(f);
        amq_inplace_close(ip);
        return 0;
    }
    snprintf(what, sizeof what, "%s, its I/O call %lu (%s) %s", op_names[op], k,
             call_names[io_failed], fault_names[fault]);
    if (op == OP_FILTER_OPEN && rc == AMQ_OK && test_count_u32_keys(f, 0, s->after) != s->after)
        FAIL_AT_("%s: the open answers %u of %u keys", what,
                 test_count_u32_keys(f, 0, s->after), s->after);
    amq_filter_free(f);
    amq_inplace_close(ip);
    if (rc != AMQ_OK && fault == FAULT_SHORT) /* a transfer short of its bytes is no error */
        FAIL_AT_("%s: status %d (%s)", what, rc, err.msg);
    else if (rc != AMQ_OK)
        check_failure(s, rc, &err, what);
    /* no byte written is an I/O error of its own, not the errno an earlier call left */
    if (rc != AMQ_OK && fault == FAULT_ZERO && (rc != AMQ_EIO || err.sys_errno != EIO))
        FAIL_AT_("%s: status %d, errno %d (%s), not EIO", what, rc, err.sys_errno, err.msg);
    journal_left = stat(s->jpath, &st) == 0;
    /* a writer's open or recovery that succeeded applied its journal and removed it (only the
     * removal may fail: what it holds is the file's by then) */
    if ((op == OP_INPLACE_OPEN || op == OP_RECOVER) && rc == AMQ_OK && journal_left &&
        io_failed != IO_UNLINK)
        FAIL_AT_("%s: succeeded with the journal still beside the file", what);
    /* a failed write or sync before the file's first write, or an open (its directory's, to
     * sync the journal's name): the journal may not survive a crash */
    if (op == OP_COMMIT && rc == AMQ_OK && file_writes_at_fail == 0 &&
        (io_failed == IO_FSYNC || io_failed == IO_FDATASYNC || io_failed == IO_WRITE ||
         io_failed == IO_OPEN || (io_failed == IO_PWRITE && fault != FAULT_SHORT)))
        FAIL_AT_("%s: the commit went on to the file and succeeded", what);
    /* The keys a run may not lose: those before it, and all when a journal holds them or the
     * run succeeded (a cut-short add's journal already held them). */
    check_later_open(s, rc == AMQ_OK || journal_left || s->jbytes != NULL ? s->after : s->before,
                     what);
    return 1;
}

/* Every I/O call of op failing in turn, by each fault that applies to it. */
static unsigned long sweep_op(const sweep *s, enum op op)
{
    unsigned long k;
    int fault, call, failed_before = test_failed;
    test_failed = 0;
    for (k = 1; k < 100000; k++) {
        if (!run_once(s, op, k, FAULT_EIO))
            break;
        call = io_failed; /* the same call each run: the file and journal are restored */
        for (fault = FAULT_ENOSPC; fault < FAULTS; fault++)
            if (fault_applies(call, (enum io_fault)fault))
                run_once(s, op, k, (enum io_fault)fault);
        if (test_failed)
            break; /* the first failure is the one to read */
    }
    test_failed |= failed_before;
    return k - 1;
}

static char sweep_dir[64];

static void sweep_setup(sweep *s, const char *name)
{
    amq_config cfg;
    amq_filter *f;
    const char *dir;

    memset(s, 0, sizeof *s);
    /* memory-backed when there is one: hundreds of runs of a few fsyncs each, on a disk
     * shared with other jobs, would take seconds */
    snprintf(sweep_dir, sizeof sweep_dir, "/dev/shm/amq-iofail-XXXXXX");
    dir = mkdtemp(sweep_dir) != NULL ? sweep_dir : test_tmpdir();
    snprintf(s->path, sizeof s->path, "%s/%s", dir, name);
    snprintf(s->jpath, sizeof s->jpath, "%s/.%s.amqjournal", dir, name);
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 8000;
    cfg.fpp = 0.001;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    test_add_u32_keys(f, 0, NKEYS);
    REQUIRE_OK(amq_filter_set_chunked_checksum(f, 1));
    REQUIRE_OK(amq_filter_save(f, s->path, 0, NULL));
    amq_filter_free(f);
    s->before = NKEYS;
    s->after = 2 * NKEYS;
}

static void sweep_free(sweep *s)
{
    free(s->fbytes);
    free(s->jbytes);
    (void)__real_unlink(s->jpath);
    (void)__real_unlink(s->path);
    if (strncmp(s->path, "/dev/shm/", 9) == 0)
        (void)rmdir(sweep_dir);
}

/* (1) An in-place add cut short between its journal and the file: each I/O call of the
 * opens that meet its journal fails in turn. */
TEST(inplace_recovery_with_each_io_call_failing)
{
    sweep s;
    unsigned long n;

    sweep_setup(&s, "recover.amq");
    REQUIRE(test_cut_short_inplace_add(s.path, s.jpath, test_add_u32_keys, s.before, s.after) == 0);
    REQUIRE((s.fbytes = test_read_file(s.path, &s.flen)) != NULL);
    REQUIRE((s.jbytes = test_read_file(s.jpath, &s.jlen)) != NULL);
    n = sweep_op(&s, OP_INPLACE_OPEN);
    if (!test_failed)
        CHECK_GE(n, 10); /* the journal's open and read, the head's read, its records' writes */
    n = sweep_op(&s, OP_RECOVER);
    if (!test_failed)
        CHECK_GE(n, 10);
    n = sweep_op(&s, OP_FILTER_OPEN);
    if (!test_failed)
        CHECK_GE(n, 3);
    sweep_free(&s);
}

/* (2) An in-place add's commit with each of its I/O calls failing in turn; and the open
 * before it (no journal). */
TEST(inplace_commit_with_each_io_call_failing)
{
    sweep s;
    unsigned long n;

    sweep_setup(&s, "commit.amq");
    REQUIRE((s.fbytes = test_read_file(s.path, &s.flen)) != NULL);
    n = sweep_op(&s, OP_COMMIT);
    if (!test_failed)
        CHECK_GE(n, 10); /* the pagemap, the old chunks, the journal, the file, their syncs */
    s.after = s.before; /* an open adds nothing */
    n = sweep_op(&s, OP_INPLACE_OPEN);
    if (!test_failed)
        CHECK_GE(n, 1);
    sweep_free(&s);
}

TEST_MAIN()
