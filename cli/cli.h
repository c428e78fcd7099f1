/*
 * cli.h - what the amq tool's subcommands share: errors, number parsing,
 * buffered output, the line reader and the batched key loop.
 *
 * The tool uses only libamq's public API.
 */
#ifndef AMQ_CLI_H
#define AMQ_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "amq.h"

/* Exit statuses, as grep: 0 selected / success, 1 nothing selected, 2 error. */
#define EXIT_SELECTED 0
#define EXIT_NONE 1
#define EXIT_TROUBLE 2

extern const char *cli_prog; /* "amq" */

/* "amq: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The error of a library call that filled an amq_errinfo (falls back on
 * amq_strerror(status) when err has no message), prefixed by context. */
void cli_lib_error(int status, const amq_errinfo *err, const char *context);

/*
 * Counts: plain integers, decimal suffixes k M G T (1e3..1e12), binary Ki
 * Mi Gi Ti, scientific forms like 1e6 or 2.5M (must come out integral).
 * Returns 0 and sets *out, or -1 (with a message naming opt) on bad input.
 */
int cli_parse_count(const char *opt, const char *s, uint64_t *out);
/* A real number; a trailing % divides by 100.  NaN and infinities refused. */
int cli_parse_real(const char *opt, const char *s, double *out);
/* An unsigned integer in [lo, hi]. */
int cli_parse_uint(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* A 64-bit value in decimal or 0x-prefixed hexadecimal, exactly. */
int cli_parse_u64(const char *opt, const char *s, uint64_t *out);

/* Number formatting for humans: "1.2 MiB", "3.4 M". */
void cli_human_bytes(uint64_t bytes, char *buf, size_t cap);

/* ---- output --------------------------------------------------------------- */
/* stdout with a large buffer; cli_out_close flushes and reports write errors
 * (EPIPE included) as a failure. */
void cli_out_init(void);
int cli_out_close(void);

/* ---- line reading ------------------------------------------------------------ */
typedef struct cli_line {
    const uint8_t *data; /* the line's bytes, without the LF */
    size_t len;          /* length without the LF */
    size_t key_len;      /* len, minus one if the line ends in CR */
} cli_line;

typedef struct cli_reader cli_reader;

/* Opens path ("-" = stdin) for line reading.  NULL with a message on error. */
cli_reader *cli_reader_open(const char *path);
void cli_reader_close(cli_reader *r);
/*
 * Fills lines[0..*n) with up to max complete lines, all valid until the next
 * call.  *n == 0 means end of input.  Returns 0, or -1 on a read error
 * (reported).
 */
int cli_reader_next(cli_reader *r, cli_line *lines, size_t max, size_t *n);
/* Bytes consumed so far and total size (0 if unknown). */
uint64_t cli_reader_pos(const cli_reader *r);
uint64_t cli_reader_size(const cli_reader *r);

/* ---- the batched key loop -------------------------------------------------------- */
#define CLI_BATCH 4096

/*
 * For each INPUT (none or "-" = stdin), reads lines in batches, hashes each
 * key with f's hash, and calls fn with the batch.  fn returns 0 to go on,
 * non-zero to stop with that value.  Returns 0, fn's value, or EXIT_TROUBLE.
 */
typedef int (*cli_batch_fn)(void *ctx, const cli_line *lines, const amq_hash128 *hashes,
                            size_t n);
int cli_for_each_batch(const amq_filter *f, char **inputs, int ninputs, cli_batch_fn fn,
                       void *ctx);

/* ---- subcommands --------------------------------------------------------------------- */
int cmd_hash(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_info(int argc, char **argv);

#endif /* AMQ_CLI_H */
