/*
 * main.c - the amq tool: subcommands in git's style.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    int formats; /* the summary ends with the list of formats */
} commands[] = {
    {"create", cmd_create, "create an empty filter file", 0},
    {"add", cmd_add, "add keys (lines) to a filter file", 0},
    {"remove", cmd_remove, "remove keys (lines) from a cuckoo or expandable filter file", 0},
    {"query", cmd_query, "print the lines that may be in a filter (grep-like)", 0},
    {"info", cmd_info, "describe a filter file", 0},
    {"build", cmd_build, "create a filter sized for and filled with a key set", 0},
    {"merge", cmd_merge, "write the union of compatible filters", 0},
    {"dedup", cmd_dedup, "print each distinct line once (exact, at Bloom-filter cost)", 0},
    {"import", cmd_import, "read a filter in another format:", 1},
    {"export", cmd_export, "write a filter in another format:", 1},
    {"hash", cmd_hash, "print hashes of strings or lines", 0},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static char prog_name[] = "amq";

/* amq help kinds [create]|formats|hashes|algos: the names from the tables the code uses
 * (for scripts and shell completion).  1 if topic is one of them. */
static int list_names(const char *topic, const char *cmd)
{
    const char *names[256];
    size_t i, n = 0;
    uint32_t id;

    if (strcmp(topic, "kinds") == 0) {
        /* 'amq help kinds create': those --type of create takes (not the static ones) */
        n = cli_kind_names(names, 256, cmd != NULL && strcmp(cmd, "create") == 0);
    } else if (strcmp(topic, "formats") == 0) {
        n = cli_format_names(names, 256);
    } else if (strcmp(topic, "algos") == 0) {
        n = cli_hash_algo_names(names, 256);
    } else if (strcmp(topic, "hashes") == 0) {
        /* hash ids, as kind ids, are small and never reused */
        for (id = 1; id < 256; id++)
            if (amq_hash_algo_name(id) != NULL)
                names[n++] = amq_hash_algo_name(id);
    } else {
        return 0;
    }
    for (i = 0; i < n && i < 256; i++)
        printf("%s\n", names[i]);
    return 1;
}

static void usage(FILE *out)
{
    size_t i;
    fprintf(out, "usage: amq [--version] [--help] <command> [<args>]\n\n"
                 "amq builds and queries approximate-membership filters (Bloom, blocked Bloom,\n"
                 "cuckoo, ...) stored in files.  Keys are lines; INPUT '-' or none is stdin;\n"
                 CLI_COMPRESSED " input is decompressed.  A filter FILE '-' to read\n"
                 "(info, query, merge's IN, export) is stdin too.\n\n"
                 "commands:\n");
    for (i = 0; i < NCOMMANDS; i++) {
        fprintf(out, "  %-7s %s", commands[i].name, commands[i].summary);
        if (commands[i].formats) {
            const char *names[16];
            size_t j, n = cli_format_names(names, 16);
            for (j = 0; j < n && j < 16; j++)
                fprintf(out, "%s %s", j > 0 ? "," : "", names[j]);
        }
        fputc('\n', out);
    }
    fprintf(out, "\n'amq <command> --help' describes a command; 'man amq' has the details.\n"
                 "'amq help kinds [create]', 'amq help formats', 'amq help hashes', 'amq help\n"
                 "algos' list the names --type, --from/--to, --hash and hash --algo take, one a\n"
                 "line.\n"
                 "Exit status: 0 success (query: a line selected), 1 query selected nothing,\n"
                 "2 error.  Long commands show progress on a terminal (--progress: always,\n"
                 "--quiet: never).\n");
}

/* rc, or EXIT_TROUBLE when what was printed on standard output could not
 * be written (reported), as every command's output. */
static int stdout_status(int rc)
{
    return cli_out_close() != 0 ? EXIT_TROUBLE : rc;
}

int main(int argc, char **argv)
{
    size_t i;
    int rc;

    /* A full disk (or RLIMIT_FSIZE) must surface as a write error, not kill
     * the process half-way through a save. */
    signal(SIGXFSZ, SIG_IGN);
    /* Ctrl-C or a kill during a save removes the temporary files. */
    cli_signals_init();
    if (argc < 2) {
        usage(stderr);
        return EXIT_TROUBLE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            char help[] = "--help";
            char *hargv[] = {argv[2], help, NULL};
            for (i = 0; i < NCOMMANDS; i++)
                if (strcmp(commands[i].name, argv[2]) == 0)
                    return stdout_status(commands[i].fn(2, hargv));
            if (list_names(argv[2], argc > 3 ? argv[3] : NULL))
                return stdout_status(0);
            cli_error("help: '%s' is neither a command (see 'amq --help') nor a list (kinds, "
                      "formats, hashes, algos)",
                      argv[2]);
            return EXIT_TROUBLE;
        }
        usage(stdout);
        return stdout_status(0);
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("amq %s (libamq %s)\n", AMQ_VERSION_STRING, amq_version_string());
        return stdout_status(0);
    }
    for (i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, argv[1]) == 0) {
            int j;
            /* --version anywhere before "--", as GNU tools answer it. */
            for (j = 2; j < argc && strcmp(argv[j], "--") != 0; j++) {
                if (strcmp(argv[j], "--version") == 0) {
                    printf("amq %s (libamq %s)\n", AMQ_VERSION_STRING, amq_version_string());
                    return stdout_status(0);
                }
            }
            /* --list-options (hidden, for completion) anywhere before "--": out of argv. */
            for (j = 2; j < argc && strcmp(argv[j], "--") != 0; j++) {
                if (strcmp(argv[j], "--list-options") == 0) {
                    cli_list_options = 1;
                    memmove(argv + j, argv + j + 1, (size_t)(argc - j) * sizeof *argv);
                    argc--;
                    break;
                }
            }
            cli_cmd = commands[i].name;
            /* getopt names argv[0] in its messages: "amq: unrecognized option". */
            argv[1] = prog_name;
            cli_out_init();
            rc = commands[i].fn(argc - 1, argv + 1);
            if (cli_out_close() != 0 && rc != EXIT_TROUBLE)
                rc = EXIT_TROUBLE;
            return rc;
        }
    }
    cli_error("'%s' is not an amq command (see 'amq --help')", argv[1]);
    return EXIT_TROUBLE;
}
