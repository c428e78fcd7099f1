/*
 * prefetch-wait - what a software prefetch of a line not in cache costs the
 * instructions behind it (the pocket kind's add: docs/expandable-log.md, "An
 * add's fetches issued together").
 *
 *   prefetch-wait [--mib M] [--iters N] [--rounds R]
 *
 * A table of M MiB (default 276, the pocket kind's tables at 1e8 keys), on
 * small pages and then on huge ones (MADV_HUGEPAGE: as the kernel gives
 * them).  Each iteration draws a random line and runs a chain of W steps of
 * integer work that does not depend on it, for W = 0, 25, 50, 100, 200; it
 * prints ns an iteration for the work alone, with a prefetch of the random
 * line before it, with a prefetch of one line always cached (the
 * instruction's own price), and with a load of the random line whose value
 * is never used: the best of R rounds (default 3), each round every cell in
 * turn (this VM's phases move a cell's time by half).  Where a prefetch
 * retired at once, its column would read as the work alone once the work
 * outlasts the table's lines' throughput.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__x86_64__)
#define PREFETCH(p) __asm__ volatile("prefetcht0 %0" : : "m"(*(p)))
#else
#define PREFETCH(p) __builtin_prefetch(p)
#endif

enum { WORK_ONLY, PREFETCH_RANDOM, PREFETCH_CACHED, LOAD_UNUSED, MODES };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ns an iteration of mode over n lines of t. */
static double run(const uint8_t *t, uint64_t lines, uint64_t iters, int mode, int work)
{
    uint64_t s = UINT64_C(0x9E3779B97F4A7C15), acc = 1, i;
    int k;
    const double t0 = now_s();
    for (i = 0; i < iters; i++) {
        const uint8_t *p;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p = t + (uint64_t)(((unsigned __int128)s * lines) >> 64) * 64u;
        if (mode == PREFETCH_RANDOM)
            PREFETCH(p);
        else if (mode == PREFETCH_CACHED)
            PREFETCH(t);
        else if (mode == LOAD_UNUSED) {
            const uint8_t v = *(const volatile uint8_t *)p;
            __asm__ volatile("" : : "r"(v));
        }
        for (k = 0; k < work; k++) { /* (kept a chain: the compiler may not fold it) */
            __asm__("" : "+r"(acc));
            acc = acc * 3u + (uint64_t)k;
        }
    }
    return (now_s() - t0) * 1e9 / (double)iters + (acc == 42 ? 1e-9 : 0.0);
}

static double count(const char *opt, const char *s)
{
    char *end;
    const double v = strtod(s, &end);
    if (*end != '\0' || !(v >= 1.0) || v > 1e12) {
        fprintf(stderr, "prefetch-wait: %s: a number from 1, not %s\n", opt, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    static const int works[5] = {0, 25, 50, 100, 200};
    static const char *const names[MODES] = {"work alone", "prefetch, random line",
                                             "prefetch, cached line", "load never used"};
    uint64_t mib = 276, iters = 3000000;
    int i, huge, m, r, rounds = 3;
    double best[5][MODES];
    for (i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "usage: prefetch-wait [--mib M] [--iters N] [--rounds R]\n");
            return 2;
        }
        if (strcmp(argv[i], "--mib") == 0)
            mib = (uint64_t)count(argv[i], argv[i + 1]);
        else if (strcmp(argv[i], "--iters") == 0)
            iters = (uint64_t)count(argv[i], argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0) {
            const double v = count(argv[i], argv[i + 1]);
            if (v > 100) {
                fprintf(stderr, "prefetch-wait: --rounds: at most 100\n");
                return 2;
            }
            rounds = (int)v;
        }
        else {
            fprintf(stderr, "prefetch-wait: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (mib > (UINT64_C(1) << 20)) {
        fprintf(stderr, "prefetch-wait: --mib: at most 1048576\n");
        return 2;
    }
    printf("A table of %llu MiB, %llu iterations a cell, ns an iteration (best of %d rounds)\n\n",
           (unsigned long long)mib, (unsigned long long)iters, rounds);
    printf("| pages | work steps |");
    for (m = 0; m < MODES; m++)
        printf(" %s |", names[m]);
    printf("\n|---|---|---|---|---|---|\n");
    for (huge = 0; huge < 2; huge++) {
        const size_t bytes = (size_t)mib << 20;
        uint8_t *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        size_t at;
        if (t == MAP_FAILED) {
            fprintf(stderr, "prefetch-wait: no memory for %llu MiB\n", (unsigned long long)mib);
            return 1;
        }
        (void)madvise(t, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        for (at = 0; at < bytes; at += 4096u) /* every page there before the timing */
            t[at] = 1;
        for (r = 0; r < rounds; r++)
            for (i = 0; i < 5; i++)
                for (m = 0; m < MODES; m++) {
                    const double ns = run(t, bytes / 64u, iters, m, works[i]);
                    best[i][m] = r == 0 || ns < best[i][m] ? ns : best[i][m];
                }
        for (i = 0; i < 5; i++) {
            printf("| %s | %d |", huge ? "huge (advised)" : "small", works[i]);
            for (m = 0; m < MODES; m++)
                printf(" %.1f |", best[i][m]);
            printf("\n");
        }
        munmap(t, bytes);
    }
    return 0;
}
