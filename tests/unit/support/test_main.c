/*
 * test_main.c - registration and running of tests (see test.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define MAX_TESTS 512

int test_failed;
/* Parts of tests not run on this machine (test_skip), reported at the end. */
static int parts_skipped;
static const char *current_test;

void test_skip(const char *what)
{
    parts_skipped++;
    printf("  SKIPPED in %s: %s\n", current_test != NULL ? current_test : "?", what);
}
static test_case tests[MAX_TESTS];
static int ntests;
static char tmpdir[256];

void test_register(const char *name, void (*fn)(void), int slow)
{
    if (ntests < MAX_TESTS) {
        tests[ntests].name = name;
        tests[ntests].fn = fn;
        tests[ntests].slow = slow;
        ntests++;
    }
}

int test_slow_enabled(void)
{
    const char *s = getenv("AMQ_SLOW_TESTS");
    return s == NULL || strcmp(s, "0") != 0;
}

int test_small(void)
{
    const char *s = getenv("AMQ_TEST_SMALL");
    return s != NULL && strcmp(s, "0") != 0;
}

const char *test_tmpdir(void)
{
    if (tmpdir[0] == '\0') {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/amq-test-XXXXXX", base ? base : "/tmp");
        if (mkdtemp(tmpdir) == NULL) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return tmpdir;
}

const char *test_path(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ & 7];
    snprintf(b, 512, "%s/%s", test_tmpdir(), name);
    return b;
}

static void remove_tmpdir(void)
{
    char cmd[300];
    if (tmpdir[0] == '\0')
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", tmpdir);
}

int test_main(int argc, char **argv)
{
    const char *filter = getenv("AMQ_TEST_FILTER");
    int i, failed = 0, ran = 0, skipped = 0;
    struct timespec t0, t1;

    if (argc > 1)
        filter = argv[1];
    for (i = 0; i < ntests; i++) {
        if (filter != NULL && strstr(tests[i].name, filter) == NULL)
            continue;
        if (tests[i].slow && !test_slow_enabled()) {
            skipped++;
            continue;
        }
        test_failed = 0;
        current_test = tests[i].name;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tests[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ran++;
        if (test_failed) {
            failed++;
            fprintf(stderr, "FAIL %s\n", tests[i].name);
        } else if (getenv("AMQ_TEST_VERBOSE") != NULL) {
            fprintf(stderr, "ok   %s (%.2f s)\n", tests[i].name,
                    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
        }
    }
    remove_tmpdir();
    printf("%s: %d tests, %d failed%s", argv[0], ran, failed,
           skipped ? " (slow tests skipped)" : "");
    if (parts_skipped)
        printf(", %d parts SKIPPED (a path this CPU or AMQ_SIMD rules out)", parts_skipped);
    printf("\n");
    return failed ? 1 : 0;
}
