/*
 * one-slot.c - where a cuckoo filter of 1-slot buckets first refuses an add,
 * by fingerprint width and table size: the record behind the sizing's rule
 * that 1-slot buckets take 14-bit fingerprints or wider (src/cuckoo_sizing.c,
 * docs/cuckoo.md).  The table is made from explicit parameters (the sizing
 * refuses narrower widths with bucket size 1), and random 8-byte keys hashed
 * by XXH3 are added until the first refusal.
 *
 *   cuckoo-one-slot [--widths F,F,...] [--slots N,N,...] [--seed S]
 */
#define AMQ_ADVANCED_API 1
#include <amq.h>
#include <amq/advanced.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* The numbers of a comma-separated list (1e7 and 10000000 alike) into out[0..cap). */
static size_t list_of(const char *s, uint64_t *out, size_t cap)
{
    size_t n = 0;
    while (*s != '\0' && n < cap) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || !(v >= 1.0 && v < 1e12)) {
            fprintf(stderr, "cuckoo-one-slot: not a count list: %s\n", s);
            exit(2);
        }
        out[n++] = (uint64_t)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    uint64_t widths[16] = {10, 12, 14, 16}, slots[16] = {2500000, 10000000}, seed = 1;
    size_t nw = 4, ns = 2, i, j;
    int a;
    for (a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--widths") == 0)
            nw = list_of(argv[a + 1], widths, 16);
        else if (strcmp(argv[a], "--slots") == 0)
            ns = list_of(argv[a + 1], slots, 16);
        else if (strcmp(argv[a], "--seed") == 0)
            seed = strtoull(argv[a + 1], NULL, 0);
        else
            break;
    }
    if (a < argc) {
        fprintf(stderr, "usage: cuckoo-one-slot [--widths F,...] [--slots N,...] [--seed S]\n");
        return 2;
    }
    printf("| fingerprint bits | slots | first refusal at load |\n|---:|---:|---:|\n");
    for (j = 0; j < ns; j++)
        for (i = 0; i < nw; i++) {
            amq_cuckoo_params p;
            amq_cuckoo *c = NULL;
            uint64_t st = seed + 1000003 * widths[i] + slots[j], n = 0, key;
            memset(&p, 0, sizeof p);
            p.fingerprint_bits = (uint32_t)widths[i];
            p.bucket_size = 1;
            p.buckets = slots[j];
            p.max_kicks = AMQ_CUCKOO_DEFAULT_KICKS;
            p.hash_algo = AMQ_HASH_XXH3;
            if (amq_cuckoo_new(&p, NULL, &c) != AMQ_OK) {
                fprintf(stderr, "cuckoo-one-slot: cannot make %" PRIu64 "-bit, %" PRIu64
                                " slots\n", widths[i], slots[j]);
                return 2;
            }
            do {
                key = splitmix(&st);
                n++;
            } while (n <= slots[j] && amq_cuckoo_add_hash(c, amq_hash_key(AMQ_HASH_XXH3, 0,
                                                                          &key, 8)) == 1);
            printf("| %" PRIu64 " | %" PRIu64 " | %.3f |\n", widths[i], slots[j],
                   (double)amq_cuckoo_items(c) / (double)slots[j]);
            fflush(stdout);
            amq_cuckoo_free(c);
        }
    return 0;
}
