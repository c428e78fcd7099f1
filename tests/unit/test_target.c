/*
 * test_target.c - the library's one writer (amq_target, <amq/advanced.h>):
 * what each flag lets it replace, the lock, streamed contents, devices and
 * standard output, and the registry a signal handler empties.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amq.h"
#include "test.h"

static amq_filter *small_filter(void)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 100;
    cfg.fpp = 0.01;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    (void)amq_filter_add(f, "k", 1);
    return f;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    REQUIRE(fp != NULL);
    CHECK_EQ(fwrite(data, 1, len, fp), len);
    fclose(fp);
}

/* The file's bytes (at most cap), or -1. */
static long read_file(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    size_t n;
    if (fp == NULL)
        return -1;
    n = fread(buf, 1, cap, fp);
    fclose(fp);
    return (long)n;
}

static int temporaries_in_tmpdir(void)
{
    char cmd[700];
    FILE *p;
    int n = -1;
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c 'amqtmp$'", test_tmpdir());
    p = popen(cmd, "r");
    if (p != NULL) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

TEST(flags_say_what_may_be_replaced)
{
    amq_filter *f = small_filter();
    amq_target *t = NULL;
    amq_errinfo err;
    char text[600], bin[600], flt[600], buf[64];
    static const char binary[4] = {'x', 0, 'y', 0};

    REQUIRE(f != NULL);
    snprintf(text, sizeof text, "%s", test_path("t.txt"));
    snprintf(bin, sizeof bin, "%s", test_path("t.bin"));
    snprintf(flt, sizeof flt, "%s", test_path("t.amq"));
    write_file(text, "precious\n", 9);
    write_file(bin, binary, sizeof binary);
    REQUIRE_OK(amq_filter_save(f, flt, 0, &err));

    /* default: only an amq filter */
    CHECK_STATUS(amq_target_open(text, 0, &t, &err), AMQ_EEXIST);
    CHECK(t == NULL);
    CHECK_STATUS(amq_target_open(bin, 0, &t, &err), AMQ_EEXIST);
    CHECK_STATUS(amq_target_open(flt, AMQ_TARGET_EXCL, &t, &err), AMQ_EEXIST);
    CHECK(strstr(err.msg, "file exists") != NULL);
    /* TEXT: anything but a filter */
    CHECK_STATUS(amq_target_open(flt, AMQ_TARGET_TEXT, &t, &err), AMQ_EEXIST);
    CHECK(strstr(err.msg, "is an amq filter") != NULL);
    REQUIRE_OK(amq_target_open(text, AMQ_TARGET_TEXT, &t, &err));
    REQUIRE_OK(amq_target_write(t, "new\n", 4, &err));
    REQUIRE_OK(amq_target_commit(t, &err));
    amq_target_close(t);
    CHECK_EQ(read_file(text, buf, sizeof buf), 4);
    CHECK(memcmp(buf, "new\n", 4) == 0);
    /* BINARY: a filter or a file that is not text */
    CHECK_STATUS(amq_target_open(text, AMQ_TARGET_BINARY, &t, &err), AMQ_EEXIST);
    CHECK(strstr(err.msg, "holds text") != NULL);
    REQUIRE_OK(amq_target_open(bin, AMQ_TARGET_BINARY, &t, &err));
    amq_target_close(t);
    REQUIRE_OK(amq_target_open(flt, AMQ_TARGET_BINARY, &t, &err));
    amq_target_close(t);
    /* UPDATE: an existing filter only */
    CHECK_STATUS(amq_target_open(test_path("none.amq"), AMQ_TARGET_UPDATE, &t, &err), AMQ_EIO);
    CHECK_EQ(err.sys_errno, ENOENT);
    CHECK_STATUS(amq_target_open(bin, AMQ_TARGET_UPDATE, &t, &err), AMQ_EEXIST);
    REQUIRE_OK(amq_target_open(flt, AMQ_TARGET_UPDATE, &t, &err));
    CHECK(amq_target_exists(t));
    CHECK(strcmp(amq_target_path(t), flt) == 0);
    amq_target_close(t);
    CHECK_EQ(temporaries_in_tmpdir(), 0);
    amq_filter_free(f);
}

/* From open to close the file is locked: another writer waits, or with
 * NOWAIT hears EWOULDBLOCK. */
TEST(an_open_target_holds_the_lock)
{
    amq_filter *f = small_filter();
    amq_target *t = NULL, *u = NULL;
    amq_errinfo err;
    const char *path = test_path("lock.amq");
    int fd;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_save(f, path, 0, &err));
    REQUIRE_OK(amq_target_open(path, 0, &t, &err));
    fd = open(path, O_RDONLY);
    REQUIRE(fd >= 0);
    CHECK_EQ(flock(fd, LOCK_EX | LOCK_NB), -1);
    CHECK_EQ(errno, EWOULDBLOCK);
    CHECK_STATUS(amq_target_open(path, AMQ_TARGET_NOWAIT, &u, &err), AMQ_EIO);
    CHECK_EQ(err.sys_errno, EWOULDBLOCK);
    CHECK(u == NULL);
    amq_target_close(t);
    CHECK_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
    /* and the other way round: a lock held elsewhere stops a NOWAIT save */
    CHECK_STATUS(amq_target_open(path, AMQ_TARGET_NOWAIT, &u, &err), AMQ_EIO);
    close(fd);
    amq_filter_free(f);
}

/* The registry empties on a signal: a save caught half-way leaves nothing,
 * and the old file stays whole. */
TEST(remove_all_takes_the_temporary_file_of_a_save_in_progress)
{
    amq_filter *f = small_filter();
    amq_target *t = NULL;
    amq_errinfo err;
    const char *path = test_path("sig.amq");
    char before[4096], after[4096];
    long n;
    int fd = -1;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_save(f, path, 0, &err));
    n = read_file(path, before, sizeof before);
    REQUIRE(n > 0);
    REQUIRE_OK(amq_target_open(path, 0, &t, &err));
    REQUIRE_OK(amq_target_begin(t, &fd, &err));
    CHECK(fd >= 0);
    REQUIRE_OK(amq_target_write(t, "partial", 7, &err));
    CHECK_EQ(temporaries_in_tmpdir(), 1);
    amq_temp_remove_all();
    CHECK_EQ(temporaries_in_tmpdir(), 0);
    CHECK(amq_target_commit(t, &err) != AMQ_OK);
    amq_target_close(t);
    CHECK_EQ(read_file(path, after, sizeof after), n);
    CHECK(memcmp(before, after, (size_t)n) == 0);
    amq_filter_free(f);
}

TEST(temp_registry_slots_are_claimed_and_freed)
{
    int slots[40], i, taken = 0;

    for (i = 0; i < 40; i++) {
        slots[i] = amq_temp_register(test_path("never-created"));
        taken += slots[i] >= 0;
    }
    CHECK_EQ(taken, 32);
    for (i = 0; i < 40; i++)
        amq_temp_unregister(slots[i]);
    i = amq_temp_register("x");
    CHECK(i >= 0);
    amq_temp_unregister(i);
}

/* A device is written straight (no temporary beside /dev/null), and "-"
 * is standard output only when asked. */
TEST(devices_and_standard_output_are_written_straight)
{
    amq_filter *f = small_filter();
    amq_target *t = NULL;
    amq_errinfo err;
    const char *out = test_path("stdout.bin");
    char buf[4096];
    int saved, fd;
    long n;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_save(f, "/dev/null", 0, &err));
    fflush(stdout);
    saved = dup(STDOUT_FILENO);
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(saved >= 0 && fd >= 0);
    REQUIRE(dup2(fd, STDOUT_FILENO) == STDOUT_FILENO);
    close(fd);
    REQUIRE_OK(amq_target_open("-", AMQ_TARGET_STDOUT, &t, &err));
    REQUIRE_OK(amq_target_save_filter(t, f, &err));
    amq_target_close(t);
    REQUIRE(dup2(saved, STDOUT_FILENO) == STDOUT_FILENO);
    close(saved);
    n = read_file(out, buf, sizeof buf);
    CHECK(n > 8);
    CHECK(memcmp(buf, "\x89" "AMQ", 4) == 0);
    amq_filter_free(f);
}

TEST(streamed_contents_replace_the_file_whole)
{
    amq_target *t = NULL;
    amq_errinfo err;
    const char *path = test_path("stream.txt");
    char buf[64];
    int fd = -1;

    write_file(path, "old contents\n", 13);
    REQUIRE_OK(amq_target_open(path, AMQ_TARGET_TEXT, &t, &err));
    REQUIRE_OK(amq_target_begin(t, &fd, &err));
    CHECK_EQ(write(fd, "a\n", 2), 2);
    REQUIRE_OK(amq_target_write(t, "b\n", 2, &err));
    /* not yet: the name still has the old file */
    CHECK_EQ(read_file(path, buf, sizeof buf), 13);
    REQUIRE_OK(amq_target_commit(t, &err));
    amq_target_close(t);
    CHECK_EQ(read_file(path, buf, sizeof buf), 4);
    CHECK(memcmp(buf, "a\nb\n", 4) == 0);
    /* an aborted one changes nothing */
    REQUIRE_OK(amq_target_open(path, AMQ_TARGET_TEXT, &t, &err));
    REQUIRE_OK(amq_target_write(t, "zzz", 3, &err));
    CHECK_EQ(temporaries_in_tmpdir(), 1);
    amq_target_abort(t);
    CHECK_EQ(temporaries_in_tmpdir(), 0);
    amq_target_close(t);
    CHECK_EQ(read_file(path, buf, sizeof buf), 4);
    CHECK_EQ(temporaries_in_tmpdir(), 0);
}

TEST_MAIN()
