/*
 * gen-lines.c - test data for the tool benchmarks (bench/tool/tool-bench.sh),
 * written to standard output, deterministic for a given seed.
 *
 *   gen-lines dups N DUP SEED
 *       N lines of 16 hex digits (IDs) of which a fraction DUP are
 *       repeats: N (1 - DUP) distinct IDs, each repeat a uniformly chosen
 *       earlier ID, repeats spread at random through the file.
 *   gen-lines names N SEED
 *       N "First|Last" names: first names from a list of 5,000 and last
 *       names from a list of 100,000, each drawn with a Zipf law (exponent
 *       1.0 for first names, 0.9 for last names: a few very common names,
 *       a long tail), like real name frequencies.  The lists are made of
 *       syllables (no name data is shipped).
 *   gen-lines keys N OFFSET SEED
 *       N distinct lines "key-<number>" for numbers OFFSET.. in a scrambled
 *       order (amq add/query against dcso's bloom).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static uint64_t rng_state;

static uint64_t next64(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double uniform(void)
{
    return (double)(next64() >> 11) * (1.0 / 9007199254740992.0);
}

/* A bijection of 64-bit values, so that IDs look random but are distinct. */
static uint64_t scramble(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

static char outbuf[1 << 20];

static int gen_dups(uint64_t n, double dup)
{
    uint64_t distinct = (uint64_t)((double)n * (1.0 - dup)), made = 0, i, id;

    for (i = 0; i < n; i++) {
        /* A new ID with the probability that keeps exactly `distinct`. */
        if (made == 0 || (double)(distinct - made) > uniform() * (double)(n - i))
            id = made++;
        else
            id = next64() % made;
        printf("%016llx\n", (unsigned long long)scramble(id + 0x5eed));
    }
    return 0;
}

/* ---- names ----------------------------------------------------------------------- */

static const char *const onsets[] = {"", "b", "br", "c", "ch", "d", "dr", "f", "g", "gr",
                                     "h", "j", "k", "l", "m", "n", "p", "r", "s", "sh",
                                     "st", "t", "th", "v", "w", "z"};
static const char *const vowels[] = {"a", "e", "i", "o", "u", "ai", "ea", "ie", "ou", "y"};
static const char *const codas[] = {"", "", "n", "r", "l", "s", "th", "nd", "rt", "m", "x",
                                    "ck"};
#define NO (sizeof onsets / sizeof onsets[0])
#define NV (sizeof vowels / sizeof vowels[0])
#define NC (sizeof codas / sizeof codas[0])
#define NSYL (NO * NV * NC)

static void syllable(uint64_t s, char *out)
{
    strcat(out, onsets[s % NO]);
    strcat(out, vowels[s / NO % NV]);
    strcat(out, codas[s / (NO * NV) % NC]);
}

typedef struct name_list {
    char **names;
    double *cdf;
    size_t n;
} name_list;

static int make_list(name_list *l, size_t n, double s, uint64_t salt)
{
    double sum = 0.0;
    size_t i;
    char buf[64];

    l->n = n;
    l->names = calloc(n, sizeof *l->names);
    l->cdf = calloc(n, sizeof *l->cdf);
    if (l->names == NULL || l->cdf == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        /* Two syllables, three for the rarer half; capitalized. */
        uint64_t x = scramble(i * 2 + salt);
        buf[0] = '\0';
        syllable(x % NSYL, buf);
        syllable(x / NSYL % NSYL, buf);
        if (i >= n / 2)
            syllable(x / NSYL / NSYL % NSYL, buf);
        if (buf[0] >= 'a' && buf[0] <= 'z')
            buf[0] = (char)(buf[0] - 'a' + 'A');
        l->names[i] = strdup(buf);
        if (l->names[i] == NULL)
            return -1;
        sum += 1.0 / pow((double)(i + 1), s);
        l->cdf[i] = sum;
    }
    for (i = 0; i < n; i++)
        l->cdf[i] /= sum;
    return 0;
}

static const char *draw(const name_list *l)
{
    double u = uniform();
    size_t lo = 0, hi = l->n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return l->names[lo];
}

static int gen_names(uint64_t n)
{
    name_list first, last;
    uint64_t i;

    if (make_list(&first, 5000, 1.0, 1) != 0 || make_list(&last, 100000, 0.9, 2) != 0) {
        fprintf(stderr, "gen-lines: out of memory\n");
        return 1;
    }
    for (i = 0; i < n; i++) {
        fputs(draw(&first), stdout);
        putchar('|');
        fputs(draw(&last), stdout);
        putchar('\n');
    }
    return 0;
}

static int gen_keys(uint64_t n, uint64_t offset)
{
    uint64_t i;
    /* A scrambled order of offset .. offset + n - 1: i -> (a i + c) mod n with
     * a odd and coprime to n would do; the simplest bijection on [0, n) is a
     * multiplication by a number coprime to n. */
    uint64_t a = 0x9e3779b97f4a7c15 % (n > 1 ? n : 1), g, x, y;
    for (;;) {
        if (a == 0)
            a = 1;
        x = a;
        y = n;
        while (y != 0) {
            g = x % y;
            x = y;
            y = g;
        }
        if (x == 1)
            break;
        a++;
    }
    for (i = 0; i < n; i++)
        printf("key-%llu\n", (unsigned long long)(offset + (unsigned __int128)i * a % n));
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    if (argc == 5 && strcmp(argv[1], "dups") == 0) {
        rng_state = strtoull(argv[4], NULL, 10);
        return gen_dups(strtoull(argv[2], NULL, 10), atof(argv[3]));
    }
    if (argc == 4 && strcmp(argv[1], "names") == 0) {
        rng_state = strtoull(argv[3], NULL, 10);
        return gen_names(strtoull(argv[2], NULL, 10));
    }
    if (argc == 5 && strcmp(argv[1], "keys") == 0) {
        rng_state = strtoull(argv[4], NULL, 10);
        return gen_keys(strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
    }
    fprintf(stderr, "usage: gen-lines dups N DUP SEED | names N SEED | keys N OFFSET SEED\n");
    return 2;
}
