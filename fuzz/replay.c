/*
 * replay.c - runs a fuzz target without libFuzzer: each file named on the
 * command line (directories: each regular file in them, sorted) is read
 * and fed once to LLVMFuzzerTestOneInput.  Built with ASan + UBSan by
 * `make test`, which replays the generated seed corpora and the checked-in
 * regression inputs (fuzz/regressions/<target>/) through every target.
 *
 * Usage: replay_<target> [-q] [-M N] PATH...   (-q: print only failures)
 * Exit status 0 when every input ran; a failing input aborts the process
 * (the sanitizer or FZ_CHECK says why, or the 60-second limit per input)
 * after its name is printed.
 *
 * A target with extreme.h's mutator also runs N fixed mutants of each input
 * of up to 64 KiB (-M N, default 256; 0: none): extreme integers written into
 * its fields, checksums signed again.  A failing mutant is named by its
 * number and written to ./replay-failing-mutant, ready for
 * fuzz/regressions/<target>/.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
static unsigned long ran, mutants_ran;
static long current_mutant = -1;
static const uint8_t *mutant_buf;
static size_t mutant_len;

/* extreme.h's mutator, when the target has it. */
__attribute__((weak)) size_t fz_replay_mutant(uint8_t *data, size_t size, uint64_t n);

#define REPLAY_MUTANT_MAX (64u << 10)
static unsigned long mutants_per_input = 256;

/* Async-signal-safe: the failing mutant's bytes, for a regression file. */
static void save_mutant(void)
{
    static const char msg[] = "replay: the failing mutant is in ./replay-failing-mutant\n";
    int fd;
    if (mutant_buf == NULL)
        return;
    fd = open("replay-failing-mutant", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    (void)!write(fd, mutant_buf, mutant_len);
    close(fd);
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}

static FZ_UNUSED void say_current(void)
{
    if (current != NULL && current_mutant >= 0)
        fprintf(stderr, "replay: failing input: %s, extreme mutant %ld\n", current,
                current_mutant);
    else if (current != NULL)
        fprintf(stderr, "replay: failing input: %s\n", current);
    save_mutant();
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
        if (current_mutant >= 0)
            (void)!write(STDERR_FILENO, " (an extreme mutant)", 20);
        (void)!write(STDERR_FILENO, "\n", 1);
    }
    save_mutant();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The fixed extreme mutants of one input: numbered from a hash of its bytes,
 * so that each input gets its own and a run is repeatable. */
static void run_mutants(const uint8_t *orig, uint8_t *m, size_t len)
{
    uint64_t base = UINT64_C(0xcbf29ce484222325);
    unsigned long i;
    size_t j;

    for (j = 0; j < len; j++)
        base = (base ^ orig[j]) * UINT64_C(0x100000001b3);
    mutant_buf = m;
    mutant_len = len;
    for (i = 0; i < mutants_per_input; i++) {
        memcpy(m, orig, len);
        current_mutant = (long)i;
        (void)fz_replay_mutant(m, len, base + i);
        alarm(REPLAY_TIMEOUT);
        LLVMFuzzerTestOneInput(m, len);
        alarm(0);
        mutants_ran++;
    }
    current_mutant = -1;
    mutant_buf = NULL;
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
        if (fz_replay_mutant != NULL && len > 0 && len <= REPLAY_MUTANT_MAX)
            run_mutants(buf, exact, len);
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
        if (strcmp(argv[i], "-M") == 0 && i + 1 < argc) {
            mutants_per_input = strtoul(argv[++i], NULL, 10);
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
        fprintf(stderr, "%s: %lu inputs replayed, %lu extreme mutants%s\n", argv[0], ran,
                mutants_ran, status ? ", with errors" : "");
    return status;
}
