/*
 * cmd_merge.c - amq merge: the union of filter files.
 */
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage_text[] =
    "usage: amq merge OUT IN... [--force]\n"
    "\n"
    "Writes to OUT the union of the filters in the IN files: a key that may be in\n"
    "any of them may be in OUT.  The filters must be of the same kind, geometry\n"
    "(bits, hash count, ...) and hash; anything else is refused with what differs.\n"
    "OUT is written atomically; an existing OUT is replaced only with --force (OUT\n"
    "may be one of the INs).  OUT is locked from before the INs are read until it\n"
    "is replaced, so an add to OUT meanwhile waits, and no key is lost.  OUT's\n"
    "item count is estimated from its bits: a key in several INs counts once.  OUT\n"
    "'-' (or /dev/stdout, /dev/fd/N: an open descriptor) writes the union to it;\n"
    "one IN may be '-', the filter on standard input (read into memory).\n"
    "A union past a fixed-size filter's capacity is written, with a warning.\n"
    "\n"
    "  --force   replace OUT if it exists\n";

int cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    amq_filter *dst = NULL, *src;
    amq_errinfo err;
    cli_target t;
    const char *out;
    int opt, i, rc, force = 0;

    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'f':
            force = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (argc - optind < 2) {
        cli_error(argc == optind ? "merge: missing OUT and IN" : "merge: missing IN");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    out = argv[optind];
    /* OUT locked (as add locks it) before any IN is read, until it is
     * replaced: an add to OUT between the read and the save was lost. */
    if (cli_target_open(&t, out, force ? CLI_TARGET_FORCE : 0) != 0)
        return EXIT_TROUBLE;
    if (cli_filter_open(argv[optind + 1], 0, &dst) != 0) {
        cli_target_release(&t);
        return EXIT_TROUBLE;
    }
    for (i = optind + 2; i < argc; i++) {
        if (cli_filter_open(argv[i], AMQ_OPEN_MMAP, &src) != 0) {
            amq_filter_free(dst);
            cli_target_release(&t);
            return EXIT_TROUBLE;
        }
        memset(&err, 0, sizeof err);
        rc = amq_filter_merge(dst, src, &err);
        amq_filter_free(src);
        if (rc != AMQ_OK) {
            cli_error("merge: %s and %s: %s", argv[optind + 1], argv[i],
                      err.msg[0] ? err.msg : amq_strerror(rc));
            amq_filter_free(dst);
            cli_target_release(&t);
            return EXIT_TROUBLE;
        }
    }
    rc = cli_target_write_filter(&t, dst);
    cli_target_release(&t);
    /* Written all the same (as add --allow-overfill), but its rate is past the one asked for. */
    if (rc == 0)
        cli_warn_saturated(out, dst);
    amq_filter_free(dst);
    if (rc != 0)
        return EXIT_TROUBLE;
    return 0;
}
