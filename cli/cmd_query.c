/*
 * cmd_query.c - amq query: grep-like membership queries.
 *
 * The filter file is mapped and queried in place; its checksum is verified
 * first unless --trust is given, in which case only the pages the queries
 * touch are read.
 */
#include <getopt.h>

#include "cli.h"

static const char usage_text[] =
    "usage: amq query FILE [INPUT...] [-v] [-c] [-q] [--trust] [--progress] [--now MS]\n"
    "\n"
    "Prints the lines of the INPUTs (none or '-': standard input) that may be in\n"
    "the filter in FILE (" CLI_COMPRESSED " INPUTs are decompressed).\n"
    "FILE '-' reads the filter from standard input (into memory); the INPUTs must\n"
    "then be files.\n"
    "Exit status: 0 if a line was selected, 1 if none, 2 on error.\n"
    "\n"
    "  -v, --invert   select the lines certainly not in the filter\n"
    "  -c, --count    print only the number of selected lines\n"
    "  -q, --quiet    print nothing (no progress either); the exit status tells\n"
    "  --progress     show progress on standard error even when it is not a terminal\n"
    "  --trust        skip the data checksum (the header's is always checked):\n"
    "                 a large file is then read only where queries land\n"
    "  --now MS       aging filters by time: answer as of this time (ms since the\n"
    "                 Unix epoch; default: the clock); the file is not changed\n";

typedef struct query_ctx {
    const amq_filter *f;
    int invert, count_only, quiet;
    uint64_t selected;
    uint64_t now; /* aging filters by time */
} query_ctx;

static int query_batch(void *vctx, const cli_line *lines, const amq_hash128 *hashes, size_t n)
{
    static uint8_t found[CLI_BATCH];
    query_ctx *c = vctx;
    size_t i;

    amq_aging_contains_batch_at(c->f, hashes, n, found, c->now);
    for (i = 0; i < n; i++) {
        if ((found[i] != 0) == (c->invert == 0)) {
            c->selected++;
            if (!c->count_only && !c->quiet) {
                fwrite_unlocked(lines[i].data, 1, lines[i].len, stdout);
                putc_unlocked('\n', stdout);
            }
        }
    }
    if (c->quiet && c->selected > 0)
        return -1; /* stop early: the answer is known */
    return 0;
}

/* 1 if the INPUTs (none is standard input) read standard input. */
static int reads_stdin(char **inputs, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (cli_is_stdin_path(inputs[i]))
            return 1;
    return n == 0;
}

int cmd_query(int argc, char **argv)
{
    static const struct option opts[] = {
        {"invert", no_argument, NULL, 'v'},
        {"count", no_argument, NULL, 'c'},
        {"quiet", no_argument, NULL, 'q'},
        {"trust", no_argument, NULL, 't'},
        {"progress", no_argument, NULL, 'p'},
        {"now", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    amq_filter *f;
    query_ctx c = {0};
    unsigned flags = AMQ_OPEN_MMAP;
    cli_progress *pg;
    int opt, rc, progress = 0, failed = 0, now_given = 0;

    while ((opt = getopt_long(argc, argv, "vcqh", opts, NULL)) != -1) {
        switch (opt) {
        case 'v':
            c.invert = 1;
            break;
        case 'c':
            c.count_only = 1;
            break;
        case 'q':
            c.quiet = 1;
            break;
        case 't':
            flags |= AMQ_OPEN_TRUST;
            break;
        case 'p':
            progress = 1;
            break;
        case 'n':
            if (cli_parse_now("--now", optarg, &c.now) != 0)
                return EXIT_TROUBLE;
            now_given = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (optind >= argc) {
        cli_error("query: missing FILE");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    if (cli_is_stdin_path(argv[optind]) && reads_stdin(argv + optind + 1, argc - optind - 1)) {
        cli_error("query: FILE '-' is standard input: the keys must come from INPUT files "
                  "(none or '-' is standard input too)");
        return EXIT_TROUBLE;
    }
    if (cli_filter_open(argv[optind], flags, &f) != 0)
        return EXIT_TROUBLE;
    c.f = f;
    if (cli_aging_time_mode(f)) {
        if (!now_given)
            c.now = cli_now_ms();
    } else if (now_given) {
        cli_error("query: --now applies to aging filters that age by time; %s does not",
                  argv[optind]);
        amq_filter_free(f);
        return EXIT_TROUBLE;
    }
    if (!c.quiet)
        cli_warn_saturated(argv[optind], f);
    pg = cli_progress_start(cli_progress_mode(progress, c.quiet), "query", 0);
    rc = cli_for_each_batch_failed(f, argv + optind + 1, argc - optind - 1, pg, query_batch, &c,
                                   &failed);
    cli_progress_end(pg);
    amq_filter_free(f);
    /* grep: a count is printed whatever happened to some inputs; an input
     * that failed makes the status 2, unless -q already found a line. */
    if (c.count_only && !c.quiet && rc <= 0)
        printf("%llu\n", (unsigned long long)c.selected);
    if (c.quiet && c.selected > 0)
        return EXIT_SELECTED;
    if (rc > 0 || failed > 0)
        return EXIT_TROUBLE;
    return c.selected > 0 ? EXIT_SELECTED : EXIT_NONE;
}
