/*
 * cmd_add.c - amq add: add keys to a filter file.
 *
 * The filter is read into memory, the keys are added in batches, and the
 * file is replaced atomically.  If anything fails (a full fixed-size
 * filter, a read error) the file is left exactly as it was.
 */
#include <getopt.h>

#include "cli.h"

static const char usage_text[] =
    "usage: amq add FILE [INPUT...] [--now MS] [--stats] [--progress] [--quiet]\n"
    "\n"
    "Adds each line of the INPUTs (none or '-': standard input) to the filter in\n"
    "FILE and saves it atomically.  A trailing CR is not part of a key; the empty\n"
    "line is a key; gzip INPUTs are decompressed.  On any error FILE is left\n"
    "unchanged.\n"
    "\n"
    "  --stats      print keys read and keys new to the filter on standard error\n"
    "  --progress   show progress on standard error even when it is not a terminal\n"
    "  --quiet      no progress\n"
    "  --now MS     aging filters by time: add at this time (ms since the Unix epoch;\n"
    "               default: the clock)\n";

typedef struct add_ctx {
    amq_filter *f;
    uint64_t keys, added;
    int status;
    const char *path;
} add_ctx;

static int add_batch(void *vctx, const cli_line *lines, const amq_hash128 *hashes, size_t n)
{
    static uint8_t added[CLI_BATCH];
    add_ctx *c = vctx;
    size_t i;
    int rc;

    rc = amq_filter_add_batch(c->f, hashes, n, added);
    (void)lines;
    if (rc < 0) {
        c->status = rc;
        cli_error("%s: %s (within keys %llu..%llu of this run); the file is left unchanged",
                  c->path, amq_strerror(rc), (unsigned long long)c->keys + 1,
                  (unsigned long long)(c->keys + n));
        return EXIT_TROUBLE;
    }
    for (i = 0; i < n; i++)
        c->added += added[i];
    c->keys += n;
    return 0;
}

int cmd_add(int argc, char **argv)
{
    static const struct option opts[] = {
        {"stats", no_argument, NULL, 's'},
        {"progress", no_argument, NULL, 'p'},
        {"quiet", no_argument, NULL, 'q'},
        {"now", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    amq_errinfo err;
    amq_stats st;
    add_ctx c = {0};
    cli_progress *pg;
    int opt, rc, stats = 0, progress = 0, quiet = 0, now_given = 0;
    uint64_t now = 0;

    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 's':
            stats = 1;
            break;
        case 'p':
            progress = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'n':
            if (cli_parse_now("--now", optarg, &now) != 0)
                return EXIT_TROUBLE;
            now_given = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            fputs(usage_text, stderr);
            return EXIT_TROUBLE;
        }
    }
    if (optind >= argc) {
        cli_error("add: missing FILE");
        fputs(usage_text, stderr);
        return EXIT_TROUBLE;
    }
    c.path = argv[optind];
    rc = amq_filter_open(c.path, 0, NULL, &c.f, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, NULL);
        return EXIT_TROUBLE;
    }
    if (cli_aging_time_mode(c.f)) {
        rc = amq_aging_advance(c.f, now_given ? now : cli_now_ms());
        if (rc != AMQ_OK) {
            cli_error("%s: %s", c.path, amq_strerror(rc));
            amq_filter_free(c.f);
            return EXIT_TROUBLE;
        }
    } else if (now_given) {
        cli_error("add: --now applies to aging filters that age by time; %s does not",
                  c.path);
        amq_filter_free(c.f);
        return EXIT_TROUBLE;
    }
    pg = cli_progress_start(cli_progress_mode(progress, quiet), "add", 0);
    rc = cli_for_each_batch_ex(c.f, argv + optind + 1, argc - optind - 1, pg, add_batch, &c);
    cli_progress_end(pg);
    if (rc == 0) {
        rc = amq_filter_save(c.f, c.path, 0, &err);
        if (rc != AMQ_OK) {
            cli_lib_error(rc, &err, NULL);
            rc = EXIT_TROUBLE;
        }
    }
    if (rc == 0) {
        amq_filter_stats(c.f, &st);
        if (stats)
            fprintf(stderr, "%s: %llu keys read, %llu new; %llu items\n", c.path,
                    (unsigned long long)c.keys, (unsigned long long)c.added,
                    (unsigned long long)st.items);
        if (st.capacity > 0 && st.items > st.capacity && amq_filter_kind(c.f) != AMQ_KIND_AGING)
            cli_warn("%s holds %llu items, over its capacity of %llu: false-positive rate now "
                     "%.3g (target %.3g)",
                     c.path, (unsigned long long)st.items, (unsigned long long)st.capacity,
                     st.fpp_now, st.fpp_target);
    }
    amq_filter_free(c.f);
    return rc == 0 ? 0 : EXIT_TROUBLE;
}
