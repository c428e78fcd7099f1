/*
 * cli_capture.h - compile pieces of the amq tool into a fuzz target with
 * their standard error captured in memory.
 *
 * A CLI target includes this header, then the tool sources it exercises,
 * e.g.  #include "../cli/util.c".  fz_cli_init points the tool's message
 * stream (cli_err_stream, the hook of cli/util.c) at an in-memory stream,
 * so a target can check that every refusal printed a message (and the
 * fuzzer's output stays readable).  Standard output and input are
 * /dev/null (LLVMFuzzerInitialize calls fz_cli_init).
 */
#ifndef AMQ_FUZZ_CLI_CAPTURE_H
#define AMQ_FUZZ_CLI_CAPTURE_H

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

/* The tool's message stream (cli/util.c); declared here rather than by
 * including cli.h, so that a target can set the tool's compile-time
 * parameters (CLI_BATCH, ...) before it includes the tool's sources. */
extern FILE *cli_err_stream;

static char fz_err_buf[8192];
static FILE *fz_err_stream;

static FZ_UNUSED void fz_cli_init(void)
{
    fz_err_stream = fmemopen(fz_err_buf, sizeof fz_err_buf, "w");
    FZ_CHECK(fz_err_stream != NULL, "fmemopen failed");
    cli_err_stream = fz_err_stream;
    if (freopen("/dev/null", "w", stdout) == NULL || freopen("/dev/null", "r", stdin) == NULL)
        abort();
    opterr = 0; /* getopt's own messages would go to the real stderr */
}

/* Empties the captured stream. */
static FZ_UNUSED void fz_err_reset(void)
{
    rewind(fz_err_stream);
    memset(fz_err_buf, 0, sizeof fz_err_buf);
}

/* What was written since the last reset. */
static FZ_UNUSED const char *fz_err_text(void)
{
    fflush(fz_err_stream);
    fz_err_buf[sizeof fz_err_buf - 1] = '\0';
    return fz_err_buf;
}

#endif /* AMQ_FUZZ_CLI_CAPTURE_H */
