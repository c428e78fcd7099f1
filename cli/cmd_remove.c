/*
 * cmd_remove.c - amq remove: remove keys from a filter file (the kinds
 * amq_kind_can_remove names: cuckoo kinds, expandable).
 *
 * As amq add: the filter is read into memory, the keys are removed in
 * batches, and the file is replaced atomically; on any error it is left
 * exactly as it was.
 */
#define AMQ_ADVANCED_API 1 /* amq_kind_can_remove */

#include <getopt.h>

#include "cli.h"

/* The kinds that remove keys come between the two (removing_kinds). */
static const char usage_head[] =
    "usage: amq remove FILE [INPUT...] [--stats [--json]] [--progress] [-q]\n"
    "\n"
    "Removes one copy of each line of the INPUTs (none or '-': standard input;\n"
    CLI_COMPRESSED " input is decompressed) from the filter in FILE and\n"
    "saves it atomically.\n"
    "Only %s filters can remove keys.\n"
    "Remove only keys that were added: removing a key that was never added may\n"
    "remove another key's fingerprint.\n"
    "\n";

static const char usage_text[] =
    "  --stats      print keys read, removed and not found on standard error\n"
    "  --json       --stats as one JSON object (implies --stats)\n"
    "  --progress   show progress on standard error even when it is not a terminal\n"
    "  -q, --quiet  no progress\n";

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

/* "a, b and c": the kinds that remove keys, from the library's predicate. */
static void removing_kinds(char *buf, size_t cap)
{
    const char *names[64];
    size_t n = 0, i, used = 0;
    uint32_t id;

    for (id = 1; id <= 255 && n < 64; id++)
        if (amq_kind_name(id) != NULL && amq_kind_can_remove(id))
            names[n++] = amq_kind_name(id);
    buf[0] = '\0';
    for (i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", names[i],
                                 i + 2 < n ? ", " : i + 2 == n ? " and " : "");
}

int cmd_remove(int argc, char **argv)
{
    static const struct option opts[] = {
        {"stats", no_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"progress", no_argument, NULL, 'p'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    amq_errinfo err;
    remove_ctx c = {0};
    cli_target t;
    cli_progress *pg;
    int opt, rc, stats = 0, json = 0, progress = 0, quiet = 0;

    while ((opt = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (opt) {
        case 's':
            stats = 1;
            break;
        case 'j':
            json = stats = 1; /* the stats as JSON: asking for it asks for them */
            break;
        case 'p':
            progress = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h': {
            char kinds[256];
            removing_kinds(kinds, sizeof kinds);
            printf(usage_head, kinds);
            fputs(usage_text, stdout);
            return 0;
        }
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (optind >= argc) {
        cli_error("remove: missing FILE");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    c.path = argv[optind];
    if (cli_target_open(&t, c.path, CLI_TARGET_UPDATE) != 0)
        return EXIT_TROUBLE;
    rc = amq_filter_open(t.real, 0, NULL, &c.f, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, NULL);
        cli_target_release(&t);
        return EXIT_TROUBLE;
    }
    if (cli_refuse_static(c.f, c.path, "remove")) {
        amq_filter_free(c.f);
        cli_target_release(&t);
        return EXIT_TROUBLE;
    }
    if (!amq_kind_can_remove(amq_filter_kind(c.f))) {
        char kinds[256];
        const char *kind = amq_kind_name(amq_filter_kind(c.f));
        removing_kinds(kinds, sizeof kinds);
        cli_error("%s: %s %s filter cannot remove keys (only %s filters can); the file is left "
                  "unchanged",
                  c.path, cli_a(kind), kind, kinds);
        amq_filter_free(c.f);
        cli_target_release(&t);
        return EXIT_TROUBLE;
    }
    pg = cli_progress_start(cli_progress_mode(progress, quiet), "remove", 0);
    rc = cli_for_each_batch_ex(c.f, argv + optind + 1, argc - optind - 1, pg, remove_batch,
                               &c);
    cli_progress_end(pg);
    if (rc == 0 && cli_target_write_filter(&t, c.f) != 0)
        rc = EXIT_TROUBLE;
    cli_target_release(&t);
    if (rc == 0 && stats && json) {
        fputs("{\"file\": ", stderr);
        cli_json_string(stderr, c.path);
        fprintf(stderr, ", \"keys_read\": %llu, \"removed\": %llu, \"not_found\": %llu}\n",
                (unsigned long long)c.keys, (unsigned long long)c.removed,
                (unsigned long long)(c.keys - c.removed));
    } else if (rc == 0 && stats) {
        fprintf(stderr, "%s: %llu keys read, %llu removed, %llu not found\n", c.path,
                (unsigned long long)c.keys, (unsigned long long)c.removed,
                (unsigned long long)(c.keys - c.removed));
    }
    amq_filter_free(c.f);
    return rc == 0 ? 0 : EXIT_TROUBLE;
}
