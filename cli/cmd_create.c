/*
 * cmd_create.c - amq create: a new, empty filter file.
 */
#define AMQ_ADVANCED_API 1 /* amq_kind_updates_in_place */

#include <getopt.h>
#include <string.h>

#include "amq/inplace.h"
#include "cli.h"

/* The lines naming kinds come from the kinds built in (usage()). */
static const char usage_head[] =
    "usage: amq create FILE --capacity N [--type TYPE] [--fpp P] [options] [--force]\n"
    "       amq create FILE --type aging --window W [--rate R] [--fpp P]\n";

static const char usage_text[] =
    "\n"
    "Creates FILE holding an empty filter sized for N keys at false-positive rate P.\n"
    "Refuses to replace an existing FILE unless --force is given.  FILE '-' (or\n"
    "/dev/stdout, /dev/fd/N: an open descriptor) writes the filter to it.\n"
    "\n";

static const char usage_options[] =
    "  --fpp P              target false-positive rate at capacity (default 0.01; 1% works;\n"
    "                       scalable-cuckoo: its fingerprints' rate a link, refused if over P)\n"
    "  --bits-per-key B     size by bits per key instead of --fpp (Bloom kinds)\n"
    "  --bits M --hashes K  exact geometry: M bits, K probes (bloom; blocked: whole\n"
    "                       512-bit blocks; not with --bits-per-key or --fpp)\n"
    ;

/* After the --hash line, which lists the library's hashes. */
static const char usage_options_tail[] =
    "  --seed S             hash seed (default 0)\n";

/* After the lines of the options some kinds only read (kind_options). */
static const char usage_options_end[] =
    "  --window W           aging: remember the last W adds (10M) or a duration\n"
    "                       (90s, 30min, 1h, 7d; then --rate is required)\n"
    "  --rate R             aging by time: expected adds (50k/s, 3000/min, 1M/h)\n"
    "  --force              replace FILE if it exists\n";

/* The static kinds (those `build` makes and `create` cannot), from the table. */
static void static_kinds_line(void)
{
    const char *all[64], *st[64];
    size_t i, n = cli_kind_names(all, 64, 0), m = 0;
    uint32_t kind;

    for (i = 0; i < n && i < 64; i++)
        if (amq_kind_from_name(all[i], &kind) == AMQ_OK && amq_kind_is_static(kind))
            st[m++] = all[i];
    if (m > 0)
        cli_help_names(stdout, "                       (built from their keys by 'amq build': ",
                       st, m, NULL, ")");
}

/* Each option some kinds only read, with the kinds create makes that read it
 * (amq_option_kinds: the table the refusals use). */
static void kind_options(void)
{
    static const struct {
        const char *option, *name;
    } opts[] = {
        {"  --fingerprint-bits F ", "fingerprint_bits"},
        {"  --bucket-size B      ", "bucket_size"},
        {"  --max-kicks K        ", "max_kicks"},
        {"  --expansion E        ", "expansion"},
        {"  --nonscaling         ", "nonscaling"},
        {"  --redisbloom         ", "redisbloom"},
        {"  --partitions P       ", "partitions"},
    };
    const char *all[64], *readers[64];
    size_t i, j, n = cli_kind_names(all, 64, 1), m;
    uint32_t kind;

    for (i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        for (j = m = 0; j < n && j < 64; j++)
            if (amq_kind_from_name(all[j], &kind) == AMQ_OK &&
                amq_option_applies(opts[i].name, kind))
                readers[m++] = all[j];
        cli_help_names(stdout, opts[i].option, readers, m, NULL, NULL);
    }
}

/* "a|b" or "a, b" of the kinds that need no capacity (cli_kind_unsized). */
static void unsized_kinds(char *buf, size_t cap, const char *sep)
{
    const char *names[64];
    size_t i, n = cli_kind_names_if(names, 64, cli_kind_unsized), used = 0;

    buf[0] = '\0';
    for (i = 0; i < n && i < 64 && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i > 0 ? sep : "", names[i]);
}

static void usage(void)
{
    char names[256];
    amq_config start;

    amq_config_init(&start, AMQ_KIND_EXPANDABLE);
    fputs(usage_head, stdout);
    unsized_kinds(names, sizeof names, "|");
    printf("       amq create FILE --type %s\n"
           "                       [--capacity START] [--fpp P]\n", names);
    fputs(usage_text, stdout);
    cli_help_kinds(stdout, "  --type TYPE          ", 1, NULL);
    static_kinds_line();
    unsized_kinds(names, sizeof names, ", ");
    printf("  --capacity N         keys the filter is sized for (5000000, 5M, 1e6)\n"
           "                       %s: where it\n"
           "                       starts (default %llu); it grows as keys come\n",
           names, (unsigned long long)start.capacity);
    fputs(usage_options, stdout);
    cli_help_hashes(stdout, "  --hash ALGO          ");
    fputs(usage_options_tail, stdout);
    kind_options();
    fputs(usage_options_end, stdout);
}

/* An option some kinds only read, by its name in the library's table of them
 * (amq_option_kinds, which Python and the Redis module refuse by too). */
typedef struct opt_scope {
    const char *option;
    const char *name;
    int given;
} opt_scope;

int cmd_create(int argc, char **argv)
{
    enum {
        O_TYPE = 256, O_CAPACITY, O_FPP, O_BPK, O_BITS, O_HASHES, O_HASH, O_SEED, O_FPBITS,
        O_BUCKET, O_KICKS, O_EXPANSION, O_NONSCALING, O_REDISBLOOM, O_PARTITIONS, O_FORCE,
        O_WINDOW, O_RATE
    };
    static const struct option opts[] = {
        {"type", required_argument, NULL, O_TYPE},
        {"capacity", required_argument, NULL, O_CAPACITY},
        {"fpp", required_argument, NULL, O_FPP},
        {"bits-per-key", required_argument, NULL, O_BPK},
        {"bits", required_argument, NULL, O_BITS},
        {"hashes", required_argument, NULL, O_HASHES},
        {"hash", required_argument, NULL, O_HASH},
        {"seed", required_argument, NULL, O_SEED},
        {"fingerprint-bits", required_argument, NULL, O_FPBITS},
        {"bucket-size", required_argument, NULL, O_BUCKET},
        {"max-kicks", required_argument, NULL, O_KICKS},
        {"expansion", required_argument, NULL, O_EXPANSION},
        {"nonscaling", no_argument, NULL, O_NONSCALING},
        {"redisbloom", no_argument, NULL, O_REDISBLOOM},
        {"partitions", required_argument, NULL, O_PARTITIONS},
        {"force", no_argument, NULL, O_FORCE},
        {"window", required_argument, NULL, O_WINDOW},
        {"rate", required_argument, NULL, O_RATE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opt_scope scope[] = {
        {"--bits-per-key", "bits_per_key", 0},
        {"--bits", "bits", 0},
        {"--hashes", "hashes", 0},
        {"--fingerprint-bits", "fingerprint_bits", 0},
        {"--bucket-size", "bucket_size", 0},
        {"--max-kicks", "max_kicks", 0},
        {"--expansion", "expansion", 0},
        {"--nonscaling", "nonscaling", 0},
        {"--redisbloom", "redisbloom", 0},
        {"--partitions", "partitions", 0},
        {"--window", "window_ms", 0},
        {"--rate", "rate", 0},
    };
    const char *type = "bloom";
    amq_config cfg;
    amq_errinfo err;
    amq_filter *f = NULL;
    uint32_t kind;
    uint64_t v;
    int opt, force = 0, capacity_given = 0, fpp_given = 0, hash_given = 0, algo_given = 0, rc;
    size_t i;

    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case O_TYPE:
            type = optarg;
            break;
        case O_CAPACITY:
            if (scope[10].given) {
                cli_error("create: --capacity and --window cannot be combined");
                return EXIT_TROUBLE;
            }
            if (cli_parse_count("--capacity", optarg, &cfg.capacity) != 0)
                return EXIT_TROUBLE;
            capacity_given = 1;
            break;
        case O_FPP:
            if (cli_parse_real("--fpp", optarg, &cfg.fpp) != 0)
                return EXIT_TROUBLE;
            fpp_given = 1;
            break;
        case O_BPK:
            if (cli_parse_real("--bits-per-key", optarg, &cfg.bits_per_key) != 0)
                return EXIT_TROUBLE;
            if (!(cfg.bits_per_key > 0.0)) {
                cli_error("--bits-per-key must be positive");
                return EXIT_TROUBLE;
            }
            scope[0].given = 1;
            break;
        case O_BITS:
            /* 0 would mean "not given" to the library: size from
             * --capacity instead, ignoring --hashes. */
            if (cli_parse_uint("--bits", optarg, 1, UINT64_MAX, &cfg.bits) != 0)
                return EXIT_TROUBLE;
            scope[1].given = 1;
            break;
        case O_HASHES:
            if (cli_parse_uint("--hashes", optarg, 1, 255, &v) != 0)
                return EXIT_TROUBLE;
            cfg.k = (uint32_t)v;
            scope[2].given = 1;
            break;
        case O_HASH:
            if (cli_parse_hash_algo("--hash", optarg, &cfg.hash_algo) != 0)
                return EXIT_TROUBLE;
            hash_given = algo_given = 1;
            break;
        case O_SEED:
            if (cli_parse_u64("--seed", optarg, &cfg.seed) != 0)
                return EXIT_TROUBLE;
            hash_given = 1;
            break;
        case O_FPBITS:
            if (cli_parse_uint("--fingerprint-bits", optarg, 1, 64, &v) != 0)
                return EXIT_TROUBLE;
            cfg.fingerprint_bits = (uint32_t)v;
            scope[3].given = 1;
            break;
        case O_BUCKET:
            if (cli_parse_uint("--bucket-size", optarg, 1, 255, &v) != 0)
                return EXIT_TROUBLE;
            cfg.bucket_size = (uint32_t)v;
            scope[4].given = 1;
            break;
        case O_KICKS:
            if (cli_parse_uint("--max-kicks", optarg, 1, 65535, &v) != 0)
                return EXIT_TROUBLE;
            cfg.max_kicks = (uint32_t)v;
            scope[5].given = 1;
            break;
        case O_EXPANSION:
            if (cli_parse_uint("--expansion", optarg, 0, 32768, &v) != 0)
                return EXIT_TROUBLE;
            cfg.expansion = (uint32_t)v;
            scope[6].given = 1;
            break;
        case O_NONSCALING:
            cfg.nonscaling = 1;
            scope[7].given = 1;
            break;
        case O_REDISBLOOM:
            cfg.redisbloom = 1;
            scope[8].given = 1;
            break;
        case O_PARTITIONS:
            if (cli_parse_uint("--partitions", optarg, 1, AMQ_PARTITIONED_MAX_PARTITIONS, &v) != 0)
                return EXIT_TROUBLE;
            cfg.partitions = (uint32_t)v;
            scope[9].given = 1;
            break;
        case O_FORCE:
            force = 1;
            break;
        case O_WINDOW:
            if (capacity_given) {
                cli_error("create: --capacity and --window cannot be combined");
                return EXIT_TROUBLE;
            }
            if (cli_parse_window("--window", optarg, &cfg.capacity, &cfg.window_ms) != 0)
                return EXIT_TROUBLE;
            scope[10].given = 1;
            break;
        case O_RATE:
            if (cli_parse_rate("--rate", optarg, &cfg.rate) != 0)
                return EXIT_TROUBLE;
            scope[11].given = 1;
            break;
        case 'h':
            usage();
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (optind != argc - 1) {
        cli_error(optind == argc ? "create: missing FILE" : "create: expected one FILE, got %d",
                  argc - optind);
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    if (amq_kind_from_name(type, &kind) != AMQ_OK) {
        cli_error("create: unknown --type '%s'", type);
        cli_help_kinds(cli_stderr(), "amq: kinds: ", 0, NULL);
        return EXIT_TROUBLE;
    }
    if (!algo_given)
        cfg.hash_algo = cli_default_hash(kind);
    for (i = 0; i < sizeof scope / sizeof scope[0]; i++) {
        if (scope[i].given && !amq_option_applies(scope[i].name, kind)) {
            cli_error("create: %s does not apply to --type %s", scope[i].option, type);
            return EXIT_TROUBLE;
        }
    }
    if (scope[1].given != scope[2].given) {
        cli_error("create: --bits and --hashes go together");
        return EXIT_TROUBLE;
    }
    /* --bits M --hashes K fix the geometry: a --bits-per-key beside them was ignored. */
    if (scope[0].given && scope[1].given) {
        cli_error("create: --bits-per-key and --bits/--hashes both size the filter; give one "
                  "of them");
        return EXIT_TROUBLE;
    }
    if (strcmp(type, "aging") == 0 && (!scope[10].given || (cfg.window_ms != 0) != scope[11].given)) {
        cli_error(!scope[10].given ? "create: --type aging needs --window (adds, or a duration"
                                     " with --rate)"
                  : cfg.window_ms != 0 ? "create: a --window duration needs --rate (expected adds"
                                         " per unit of time)"
                                       : "create: --rate goes with a --window duration (90s, 1h)");
        return EXIT_TROUBLE;
    }
    if (strcmp(type, "aging") == 0)
        capacity_given = 1; /* --window sizes it */
    if (cli_kind_unsized(kind) && !capacity_given) {
        amq_config start;
        amq_config_init(&start, kind); /* it grows: start where the library does */
        cfg.capacity = start.capacity;
        capacity_given = 1;
    }
    if (!capacity_given && !scope[1].given) {
        cli_error("create: --capacity is required (how many keys the filter is for)");
        return EXIT_TROUBLE;
    }
    if (!capacity_given)
        cfg.capacity = 0; /* --bits --hashes alone: a geometry sized for no count of keys */
    if (cfg.redisbloom && hash_given) {
        cli_error("create: --redisbloom fixes the hash (RedisBloom's MurmurHash64A); "
                  "--hash and --seed cannot be combined with it");
        return EXIT_TROUBLE;
    }
    if (fpp_given && (scope[0].given || scope[1].given)) {
        cli_error("create: --fpp cannot be combined with --bits-per-key or --bits");
        return EXIT_TROUBLE;
    }
    cfg.kind = kind;
    if (fpp_given && cli_check_fpp_met("create", &cfg, 1) != 0)
        return EXIT_TROUBLE;
    memset(&err, 0, sizeof err);
    rc = amq_filter_new(&cfg, &f, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, "create");
        return EXIT_TROUBLE;
    }
    /* Chunked checksums: the first add to the file can be in place. */
    if (amq_kind_updates_in_place(amq_filter_kind(f)))
        amq_filter_set_chunked_checksum(f, 1);
    rc = cli_save_filter(argv[optind], f, force ? CLI_TARGET_FORCE : 0);
    amq_filter_free(f);
    if (rc != 0)
        return EXIT_TROUBLE;
    return 0;
}
