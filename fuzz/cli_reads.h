/*
 * cli_reads.h - the tool's input layer (cli/input.c) with its reads cut
 * short, for the CLI targets that read INPUTs (fuzz_cli_gzip,
 * fuzz_cli_lines): every read(2) of the layer (cli_read_hook) returns at
 * most fz_read_max bytes (0: no limit), a fuzz-chosen amount, so that
 * gzip members, headers and lines straddle reads.
 *
 * A target includes this after "../cli/util.c" (which declares the hook)
 * and sets fz_read_max for each input; it gives the target its
 * LLVMFuzzerInitialize.
 */
#ifndef AMQ_FUZZ_CLI_READS_H
#define AMQ_FUZZ_CLI_READS_H

#include <unistd.h>

#include "cli_capture.h"

static size_t fz_read_max;

static ssize_t fz_read(int fd, void *buf, size_t cap)
{
    if (fz_read_max != 0 && cap > fz_read_max)
        cap = fz_read_max;
    return read(fd, buf, cap);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_cli_init();
    cli_read_hook = fz_read;
    return 0;
}

#endif /* AMQ_FUZZ_CLI_READS_H */
