/*
 * cmd_remove.c - amq remove: remove keys from a filter file (cuckoo kinds).
 *
 * As amq add: the filter is read into memory, the keys are removed in
 * batches, and the file is replaced atomically; on any error it is left
 * exactly as it was.
 */
#include <getopt.h>

#include "cli.h"

static const char usage_text[] =
    "usage: amq remove FILE [INPUT...] [--stats]\n"
    "\n"
    "Removes one copy of each line of the INPUTs (none or '-': standard input)\n"
    "from the filter in FILE and saves it atomically.  Only cuckoo and\n"
    "scalable-cuckoo filters can remove keys.  Remove only keys that were added:\n"
    "removing a key that was never added may remove another key's fingerprint.\n"
    "\n"
    "  --stats   print keys read, removed and not found on standard error\n";

typedef struct remove_ctx {
    amq_filter *f;
    uint64_t keys, removed;
    const char *path;
} remove_ctx;

static int remove_batch(void *vctx, const cli_line *lines, const amq_hash128 *hashes, size_t n)
{
    remove_ctx *c = vctx;
    size_t i;
    int rc;

    (void)lines;
    for (i = 0; i < n; i++) {
        rc = amq_filter_remove_hash(c->f, hashes[i]);
        if (rc < 0) {
            cli_error("%s: %s (key %llu of this run); the file is left unchanged", c->path,
                      amq_strerror(rc), (unsigned long long)(c->keys + i + 1));
            return EXIT_TROUBLE;
        }
        c->removed += (uint64_t)rc;
    }
    c->keys += n;
    return 0;
}

static int can_remove(uint32_t kind)
{
    return kind == AMQ_KIND_CUCKOO || kind == AMQ_KIND_SCALABLE_CUCKOO;
}

int cmd_remove(int argc, char **argv)
{
    static const struct option opts[] = {
        {"stats", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    amq_errinfo err;
    remove_ctx c = {0};
    int opt, rc, stats = 0;

    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 's':
            stats = 1;
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
        cli_error("remove: missing FILE");
        fputs(usage_text, stderr);
        return EXIT_TROUBLE;
    }
    c.path = argv[optind];
    rc = amq_filter_open(c.path, 0, NULL, &c.f, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, NULL);
        return EXIT_TROUBLE;
    }
    if (cli_refuse_static(c.f, c.path, "remove")) {
        amq_filter_free(c.f);
        return EXIT_TROUBLE;
    }
    if (!can_remove(amq_filter_kind(c.f))) {
        cli_error("%s: a %s filter cannot remove keys (only cuckoo and scalable-cuckoo "
                  "filters can); the file is left unchanged",
                  c.path, amq_kind_name(amq_filter_kind(c.f)));
        amq_filter_free(c.f);
        return EXIT_TROUBLE;
    }
    rc = cli_for_each_batch(c.f, argv + optind + 1, argc - optind - 1, remove_batch, &c);
    if (rc == 0) {
        rc = amq_filter_save(c.f, c.path, 0, &err);
        if (rc != AMQ_OK) {
            cli_lib_error(rc, &err, NULL);
            rc = EXIT_TROUBLE;
        }
    }
    if (rc == 0 && stats)
        fprintf(stderr, "%s: %llu keys read, %llu removed, %llu not found\n", c.path,
                (unsigned long long)c.keys, (unsigned long long)c.removed,
                (unsigned long long)(c.keys - c.removed));
    amq_filter_free(c.f);
    return rc == 0 ? 0 : EXIT_TROUBLE;
}
