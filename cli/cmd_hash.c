/*
 * cmd_hash.c - amq hash: print the hash of each string or line.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_head[] =
    "usage: amq hash [--algo ALGO] [--seed S] [STRING...]\n"
    "\n"
    "Prints one line per STRING, or per line of standard input when no STRING is\n"
    "given (a trailing CR is not part of a line), in lowercase hex: 8 digits for\n"
    "32-bit hashes, 16 for 64-bit ones, and for murmur3_128 the halves h1 and h2,\n"
    "16 digits each, separated by a space.\n"
    "\n";
static const char usage_tail[] = "  --seed S     seed, decimal or 0x hex (default 0; 32 bits for murmur3_*;\n"
                                 "               FNV-1a takes none)\n";

enum algo { A_M3_32, A_M3_128, A_M64A, A_FNV32, A_FNV64, A_XXH3 };

static const struct {
    const char *name;
    enum algo algo;
} algos[] = {
    {"murmur3_32", A_M3_32}, {"murmur3_128", A_M3_128}, {"murmur64a", A_M64A},
    {"fnv1a32", A_FNV32},    {"fnv1a64", A_FNV64},      {"xxh3", A_XXH3},
};

#define NALGOS (sizeof algos / sizeof algos[0])

size_t cli_hash_algo_names(const char **out, size_t cap)
{
    size_t i;
    for (i = 0; i < NALGOS && i < cap; i++)
        out[i] = algos[i].name;
    return NALGOS;
}

typedef struct hash_ctx {
    enum algo algo;
    uint64_t seed;
} hash_ctx;

static void print_hash(const hash_ctx *c, const void *data, size_t len)
{
    uint64_t out[2];

    switch (c->algo) {
    case A_M3_32:
        printf("%08" PRIx32 "\n", amq_murmur3_32(data, len, (uint32_t)c->seed));
        break;
    case A_M3_128:
        amq_murmur3_x64_128(data, len, (uint32_t)c->seed, out);
        printf("%016" PRIx64 " %016" PRIx64 "\n", out[0], out[1]);
        break;
    case A_M64A:
        printf("%016" PRIx64 "\n", amq_murmur64a(data, len, c->seed));
        break;
    case A_FNV32:
        printf("%08" PRIx32 "\n", amq_fnv1a_32(data, len));
        break;
    case A_FNV64:
        printf("%016" PRIx64 "\n", amq_fnv1a_64(data, len));
        break;
    case A_XXH3:
        printf("%016" PRIx64 "\n", amq_xxh3_64(data, len, c->seed));
        break;
    }
}

static int hash_batch(void *ctx, const cli_line *lines, const amq_hash128 *hashes, size_t n)
{
    size_t i;
    (void)hashes;
    for (i = 0; i < n; i++)
        print_hash(ctx, lines[i].data, lines[i].key_len);
    return 0;
}

static int hash_lines(hash_ctx *c)
{
    cli_scan_opts o;
    size_t n;
    int rc;

    memset(&o, 0, sizeof o);
    o.srcs = cli_srcs_from_args(NULL, 0, &n);
    if (o.srcs == NULL)
        return EXIT_TROUBLE;
    o.nsrcs = n;
    o.threads = 1;
    rc = cli_scan(&o, hash_batch, c);
    free((void *)o.srcs);
    return rc;
}

int cmd_hash(int argc, char **argv)
{
    static const struct option opts[] = {
        {"algo", required_argument, NULL, 'a'},
        {"seed", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    hash_ctx c = {A_M3_128, 0};
    int opt, i, seed_given = 0;
    size_t k;

    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            for (k = 0; k < NALGOS; k++)
                if (strcmp(optarg, algos[k].name) == 0)
                    break;
            if (k == NALGOS) {
                char known[128] = "";
                for (k = 0; k < NALGOS; k++)
                    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                             k > 0 ? ", " : "", algos[k].name);
                cli_error("hash: unknown algorithm '%s' (%s)", optarg, known);
                return EXIT_TROUBLE;
            }
            c.algo = algos[k].algo;
            break;
        case 's':
            if (cli_parse_u64("--seed", optarg, &c.seed) != 0)
                return EXIT_TROUBLE;
            seed_given = 1;
            break;
        case 'h':
        {
            const char *names[NALGOS];
            fputs(usage_head, stdout);
            cli_help_names(stdout, "  --algo ALGO  ", names, cli_hash_algo_names(names, NALGOS),
                           "murmur3_128", NULL);
            fputs(usage_tail, stdout);
            return 0;
        }
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if ((c.algo == A_M3_32 || c.algo == A_M3_128) && c.seed > UINT32_MAX) {
        cli_error("hash: --seed %llu does not fit the 32-bit seed of MurmurHash3",
                  (unsigned long long)c.seed);
        return EXIT_TROUBLE;
    }
    if ((c.algo == A_FNV32 || c.algo == A_FNV64) && seed_given) {
        cli_error("hash: FNV-1a takes no seed");
        return EXIT_TROUBLE;
    }
    if (optind == argc)
        return hash_lines(&c);
    for (i = optind; i < argc; i++)
        print_hash(&c, argv[i], strlen(argv[i]));
    return 0;
}
