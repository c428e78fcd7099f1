/*
 * read-lines.c - how fast can lines be found in a file in the page cache?
 * The ways amq could read its INPUTs, timed on one file:
 *
 *   mmap+memchr   map the file, memchr for each line end (amq before issue 6)
 *   read+memchr   1 MiB read() calls into one buffer, memchr per line
 *   read+mask     1 MiB read() calls, every LF of a 64-byte block found by
 *                 two AVX2 compares and a bit mask (what cli/scan.c does)
 *   read only     the read() calls alone: the memory-copy bound
 *
 * usage: read-lines FILE [REPS]; prints GB/s and ns per line (best of REPS).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BLOCK ((size_t)1 << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t count_memchr(const uint8_t *p, size_t n)
{
    const uint8_t *e = p + n, *lf;
    size_t c = 0;
    while (p < e && (lf = memchr(p, '\n', (size_t)(e - p))) != NULL) {
        c++;
        p = lf + 1;
    }
    return c;
}

__attribute__((target("avx2"))) static size_t count_mask(const uint8_t *p, size_t n)
{
    const __m256i lf = _mm256_set1_epi8('\n');
    size_t i = 0, c = 0;
    for (; i + 64 <= n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + i + 32));
        uint64_t m = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, lf)) |
                     (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, lf)) << 32;
        /* Each set bit is a line end, at i + ctz(m), as the scanner records. */
        c += (size_t)__builtin_popcountll(m);
    }
    for (; i < n; i++)
        c += p[i] == '\n';
    return c;
}

static double run(const char *path, int mode, size_t *lines)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    uint8_t *buf;
    ssize_t got;
    double t;

    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        exit(2);
    }
    *lines = 0;
    t = now();
    if (mode == 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            perror("mmap");
            exit(2);
        }
        madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
        *lines = count_memchr(m, (size_t)st.st_size);
        munmap(m, (size_t)st.st_size);
    } else {
        buf = aligned_alloc(64, BLOCK);
        /* Lines split by a block boundary are counted once: only LFs are
         * counted, which is what matters for the speed. */
        while ((got = read(fd, buf, BLOCK)) > 0) {
            if (mode == 1)
                *lines += count_memchr(buf, (size_t)got);
            else if (mode == 2)
                *lines += count_mask(buf, (size_t)got);
            else
                *lines += (size_t)got;
        }
        free(buf);
    }
    t = now() - t;
    close(fd);
    return t;
}

int main(int argc, char **argv)
{
    static const char *names[] = {"mmap+memchr", "read+memchr", "read+mask", "read only"};
    int reps = argc > 2 ? atoi(argv[2]) : 3, mode, r;
    size_t lines = 0;
    struct stat st;
    double best, t;

    if (argc < 2 || stat(argv[1], &st) != 0) {
        fprintf(stderr, "usage: read-lines FILE [REPS]\n");
        return 2;
    }
    run(argv[1], 3, &lines); /* into the page cache */
    for (mode = 0; mode < 4; mode++) {
        best = 1e30;
        for (r = 0; r < reps; r++) {
            t = run(argv[1], mode, &lines);
            if (t < best)
                best = t;
        }
        printf("%-12s %6.2f GB/s", names[mode], (double)st.st_size / best / 1e9);
        if (mode < 3)
            printf("  %5.2f ns/line", best / (double)(lines ? lines : 1) * 1e9);
        printf("\n");
    }
    return 0;
}
