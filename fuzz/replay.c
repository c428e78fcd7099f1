/*
 * replay.c - runs a fuzz target without libFuzzer: each file named on the
 * command line (directories: each regular file in them, sorted) is read
 * and fed once to LLVMFuzzerTestOneInput.  Built with ASan + UBSan by
 * `make test`, which replays the generated seed corpora and the checked-in
 * regression inputs (fuzz/regressions/<target>/) through every target.
 *
 * Usage: replay_<target> [-q] PATH...   (-q: print only failures)
 * Exit status 0 when every input ran; a failing input aborts the process
 * (the sanitizer or FZ_CHECK says why, or the 60-second limit per input)
 * after its name is printed.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_HAVE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FZ_HAVE_ASAN 1
#endif
#ifdef FZ_HAVE_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* Targets may define LLVMFuzzerInitialize; this default is used otherwise. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static const char *current;
static unsigned long ran;

static FZ_UNUSED void say_current(void)
{
    if (current != NULL)
        fprintf(stderr, "replay: failing input: %s\n", current);
}

/* An input that runs this long is a failure (a hang found by the fuzzer as
 * a "timeout-" artifact must not come back as a hang of make test). */
#define REPLAY_TIMEOUT 60

/* FZ_CHECK aborts: name the input, then die of the signal as before. */
static void on_fatal_signal(int sig)
{
    if (sig == SIGALRM) {
        static const char msg[] = "replay: input ran over the time limit\n";
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        sig = SIGABRT;
    }
    static const char msg[] = "replay: failing input: ";
    if (current != NULL) {
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)!write(STDERR_FILENO, current, strlen(current));
        (void)!write(STDERR_FILENO, "\n", 1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static int run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, r;

    if (fp == NULL) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (len == cap) {
            uint8_t *nb;
            cap = cap ? cap * 2 : 4096;
            nb = realloc(buf, cap);
            if (nb == NULL) {
                fprintf(stderr, "replay: out of memory\n");
                exit(2);
            }
            buf = nb;
        }
        r = fread(buf + len, 1, cap - len, fp);
        len += r;
        if (r == 0)
            break;
    }
    fclose(fp);
    current = path;
    /* An exactly sized copy, so that reads past the end are caught. */
    {
        uint8_t *exact = malloc(len ? len : 1);
        if (exact == NULL)
            exit(2);
        if (len)
            memcpy(exact, buf, len);
        alarm(REPLAY_TIMEOUT);
        LLVMFuzzerTestOneInput(exact, len);
        alarm(0);
        free(exact);
    }
    current = NULL;
    ran++;
    free(buf);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    int status = 0;

    if (d == NULL) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (names == NULL)
                exit(2);
        }
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (names[n] == NULL)
            exit(2);
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && run_file(names[i]) != 0)
            status = -1;
        free(names[i]);
    }
    free(names);
    return status;
}

int main(int argc, char **argv)
{
    struct stat st;
    int i, quiet = 0, status = 0;

    signal(SIGABRT, on_fatal_signal);
    signal(SIGALRM, on_fatal_signal);
#ifdef FZ_HAVE_ASAN
    __sanitizer_set_death_callback(say_current);
#endif
    LLVMFuzzerInitialize(&argc, &argv);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0) {
            quiet = 1;
            continue;
        }
        if (stat(argv[i], &st) != 0) {
            /* A corpus directory that does not exist (no regressions yet)
             * is not an error. */
            continue;
        }
        if ((S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i])) != 0)
            status = 1;
    }
    if (!quiet || status != 0)
        fprintf(stderr, "%s: %lu inputs replayed%s\n", argv[0], ran, status ? ", with errors" : "");
    return status;
}
