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
} commands[] = {
    {"create", cmd_create, "create an empty filter file"},
    {"add", cmd_add, "add keys (lines) to a filter file"},
    {"remove", cmd_remove, "remove keys (lines) from a cuckoo filter file"},
    {"query", cmd_query, "print the lines that may be in a filter (grep-like)"},
    {"info", cmd_info, "describe a filter file"},
    {"build", cmd_build, "create a filter sized for and filled with a key set"},
    {"merge", cmd_merge, "write the union of compatible filters"},
    {"dedup", cmd_dedup, "print each distinct line once (exact, at Bloom-filter cost)"},
    {"import", cmd_import, "read a filter in another format (Guava)"},
    {"export", cmd_export, "write a filter in another format (Guava)"},
    {"hash", cmd_hash, "print hashes of strings or lines"},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static char prog_name[] = "amq";

static void usage(FILE *out)
{
    size_t i;
    fprintf(out, "usage: amq [--version] [--help] <command> [<args>]\n\n"
                 "amq builds and queries approximate-membership filters (Bloom, blocked Bloom,\n"
                 "cuckoo, ...) stored in files.  Keys are lines; INPUT '-' or none is stdin;\n"
                 "gzip input is decompressed.\n\n"
                 "commands:\n");
    for (i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-7s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'amq <command> --help' describes a command; 'man amq' has the details.\n"
                 "Exit status: 0 success (query: a line selected), 1 query selected nothing,\n"
                 "2 error.  Long commands show progress on a terminal (--progress: always,\n"
                 "--quiet: never).\n");
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
                    return commands[i].fn(2, hargv);
            cli_error("'%s' is not an amq command (see 'amq --help')", argv[2]);
            return EXIT_TROUBLE;
        }
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("amq %s (libamq %s)\n", AMQ_VERSION_STRING, amq_version_string());
        return 0;
    }
    for (i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, argv[1]) == 0) {
            int j;
            /* --version anywhere before "--", as GNU tools answer it. */
            for (j = 2; j < argc && strcmp(argv[j], "--") != 0; j++) {
                if (strcmp(argv[j], "--version") == 0) {
                    printf("amq %s (libamq %s)\n", AMQ_VERSION_STRING, amq_version_string());
                    return 0;
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
