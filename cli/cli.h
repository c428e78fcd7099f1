/*
 * cli.h - what the amq tool's subcommands share: errors, number parsing,
 * buffered output, the line reader and the batched key loop.
 *
 * The tool uses only libamq's public API.
 */
#ifndef AMQ_CLI_H
#define AMQ_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "amq.h"

/* Exit statuses, as grep: 0 selected / success, 1 nothing selected, 2 error. */
#define EXIT_SELECTED 0
#define EXIT_NONE 1
#define EXIT_TROUBLE 2

/*
 * Every command parses its options through cli_getopt_long (the macro below): under
 * 'amq CMD [ARGS...] --list-options' (main.c sets cli_list_options) its first call prints the
 * table it was given - the options the parser that runs for ARGS accepts, "--name" or
 * "--name ARG" (and "-x" or "-x ARG" for the short ones), one a line - and exits 0, so that
 * shell completion and the tests take them from the parser itself.
 */
extern int cli_list_options;
int cli_getopt_long(int argc, char *const *argv, const char *shortopts,
                    const struct option *longopts, int *longindex);
#define getopt_long(argc, argv, shortopts, longopts, longindex)                                    \
    cli_getopt_long(argc, argv, shortopts, longopts, longindex)

extern const char *cli_prog; /* "amq" */
extern const char *cli_cmd;  /* the subcommand running, for messages */
/* "amq: try 'amq CMD --help'" after a usage error (no usage dump). */
void cli_usage_hint(void);
/* Called before a message is printed (set while a progress line is shown,
 * to erase it); NULL otherwise.  util.c stands alone without it. */
extern void (*cli_before_message)(void);

/* Where messages and progress lines go: stderr, or cli_err_stream when a
 * test harness sets it (the fuzz targets capture messages in memory). */
extern FILE *cli_err_stream;
FILE *cli_stderr(void);
/* The read(2) of the input layer, or a harness's replacement when set
 * (the fuzz targets cut reads short); NULL: read(2). */
extern ssize_t (*cli_read_hook)(int fd, void *buf, size_t cap);

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
/* A false-positive rate: a real number strictly between 0 and 1. */
int cli_parse_fpp(const char *opt, const char *s, double *out);
/* A capacity: a count of at least 1. */
int cli_parse_capacity(const char *opt, const char *s, uint64_t *out);
/* An unsigned integer in [lo, hi]. */
int cli_parse_uint(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* A 64-bit value in decimal or 0x-prefixed hexadecimal, exactly. */
int cli_parse_u64(const char *opt, const char *s, uint64_t *out);

/* Aging filters (aging.c): --window is a count of adds (10M) or a duration
 * (90s, 1h: sets *ms); --rate is adds per unit of time (50k/s); --now is ms
 * since the Unix epoch, the wall clock (cli_now_ms) when not given. */
int cli_parse_window(const char *opt, const char *s, uint64_t *count, uint64_t *ms);
int cli_parse_rate(const char *opt, const char *s, double *per_s);
int cli_parse_now(const char *opt, const char *s, uint64_t *ms);
uint64_t cli_now_ms(void);
/* 1 if f is an aging filter that ages by time. */
int cli_aging_time_mode(const amq_filter *f);

/* A filter's hash algorithm by name (--hash): the library's names
 * (amq_hash_algo_name; 'amq help hashes' lists them). */
int cli_parse_hash_algo(const char *opt, const char *s, uint32_t *out);

/* The hash a new filter of this kind takes when --hash is not given (the
 * library's default for the kind). */
uint32_t cli_default_hash(uint32_t kind);

/* s as a JSON string (quoted, escaped). */
void cli_json_string(FILE *out, const char *s);

/* Number formatting for humans: "1.2 MiB", "3.4 M". */
void cli_human_bytes(uint64_t bytes, char *buf, size_t cap);

/* ---- output --------------------------------------------------------------- */
/* stdout with a large buffer; cli_out_close flushes and reports write errors
 * (EPIPE included) as a failure. */
void cli_out_init(void);
int cli_out_close(void);

/* ---- inputs ------------------------------------------------------------------ */
/* The compressed formats an INPUT is recognized in and decompressed from (input.c's magic
 * numbers), in every help text that says so: one wording from one place. */
#define CLI_COMPRESSED "gzip, zstd, xz and bzip2"

/*
 * The bytes of one INPUT (input.c): a file, "-" for standard input, or an
 * open descriptor; gzip data (magic 1f 8b) is decompressed unless raw.
 * Errors are reported (naming the input) and return NULL / -1.
 */
typedef struct cli_input cli_input;

cli_input *cli_input_open(const char *path, int raw);
/* name is copied; own_fd: close fd on cli_input_close. */
cli_input *cli_input_open_fd(int fd, const char *name, int raw, int own_fd);
void cli_input_close(cli_input *in);
/* Up to cap bytes of data: the count, 0 at the end, -1 on error. */
ssize_t cli_input_read(cli_input *in, void *buf, size_t cap);
const char *cli_input_name(const cli_input *in);
int cli_input_is_regular(const cli_input *in);
int cli_input_is_gzip(const cli_input *in);
/* Size of the file (compressed size for gzip), 0 if unknown; bytes of the
 * file read so far. */
uint64_t cli_input_size(const cli_input *in);
uint64_t cli_input_pos(const cli_input *in);

/* ---- progress ------------------------------------------------------------------ */
enum { CLI_PROGRESS_AUTO = 0, CLI_PROGRESS_ON = 1, CLI_PROGRESS_OFF = 2 };
typedef struct cli_progress cli_progress;

/* --progress / --quiet to a mode. */
int cli_progress_mode(int progress_flag, int quiet_flag);
/* NULL when nothing is to be shown (every function takes NULL).  total: bytes
 * of the work, 0 if unknown. */
cli_progress *cli_progress_start(int mode, const char *what, uint64_t total);
void cli_progress_phase(cli_progress *p, const char *what, uint64_t total);
void cli_progress_set_total(cli_progress *p, uint64_t total);
/* pos: bytes done in this phase; lines: lines done since the last call. */
void cli_progress_update(cli_progress *p, uint64_t pos, size_t lines);
/* Erases a progress line from the terminal (before a message). */
void cli_progress_clear(void);
void cli_progress_end(cli_progress *p);

/* ---- lines in batches ------------------------------------------------------------- */
typedef struct cli_line {
    const uint8_t *data; /* the line's bytes, without the LF */
    size_t len;          /* length without the LF */
    size_t key_len;      /* len, minus one if the line ends in CR */
} cli_line;

#ifndef CLI_BATCH /* the fuzz target of the reader makes batches small */
#define CLI_BATCH 16384
#endif

/* One INPUT to scan: a path ("-" = stdin), or an open descriptor (fd >= 0;
 * read from offset `offset`, not closed).  raw: no gzip detection. */
typedef struct cli_src {
    const char *path;
    const char *name; /* for messages */
    int fd;
    int raw;
    int64_t offset;
} cli_src;

/* The INPUT arguments (none = stdin) as sources; free() the array. */
cli_src *cli_srcs_from_args(char **inputs, int ninputs, size_t *nsrcs);

/*
 * Makes every source readable twice (sources.c): standard input and other
 * pipes are copied (decompressed) to an unlinked temporary file in $TMPDIR
 * (or /tmp), which the source then reads raw; files are read again as they
 * are (standard input redirected from a file is rewound to where it was).
 * 0, or -1 on error (reported).  cli_srcs_release closes the copies.
 */
int cli_srcs_make_rereadable(cli_src *srcs, size_t n, cli_progress *progress);
void cli_srcs_release(cli_src *srcs, size_t n);
/* 1 if the source is a regular file (it can be read again). */
int cli_src_is_rereadable(const cli_src *s);
/* Sum of the sources' sizes in bytes (0 for those of unknown size). */
uint64_t cli_srcs_bytes(const cli_src *srcs, size_t n);
/*
 * Estimates the number of lines of the sources from their first MiB
 * (exact for smaller ones; gzip sources by their compression ratio so
 * far).  Sources that are not regular files are not read and count as 0.
 * 0, or -1 on a read error.
 */
int cli_srcs_estimate_lines(const cli_src *srcs, size_t n, uint64_t *lines);

typedef int (*cli_batch_fn)(void *ctx, const cli_line *lines, const amq_hash128 *hashes,
                            size_t n);
typedef void (*cli_hash_fn)(void *ctx, const cli_line *lines, size_t n, amq_hash128 *out);

typedef struct cli_scan_opts {
    const cli_src *srcs;
    size_t nsrcs;
    cli_hash_fn hash; /* NULL: hashes are not computed */
    void *hash_ctx;
    int threads;      /* >= 2: read, split and hash in a second thread */
    cli_progress *progress;
    /* Non-NULL: an input that cannot be opened or read is reported,
     * counted here, and the scan goes on with the next one (as grep);
     * NULL: the scan stops with EXIT_TROUBLE. */
    int *failed;
} cli_scan_opts;

/*
 * Reads every source in order and calls fn with batches of up to CLI_BATCH
 * lines (and their hashes), in input order; lines are valid during the
 * call.  A last line without LF is a line; a source's lines never share a
 * batch with the next source's.  fn returns 0 to go on, non-zero to stop
 * with that value.  Returns 0, fn's value, or EXIT_TROUBLE (input error,
 * reported).
 */
int cli_scan(const cli_scan_opts *o, cli_batch_fn fn, void *ctx);

/*
 * The same with batches processed in no particular order by o->threads
 * threads at once (each reads its batch in turn, then hashes it and calls
 * fn).  serialize: fn is never called by two threads at the same time.
 * For work whose result does not depend on the order (filling a filter).
 */
int cli_scan_parallel(const cli_scan_opts *o, int serialize, cli_batch_fn fn, void *ctx);

/*
 * For each INPUT (none or "-" = stdin): keys (lines without a trailing CR)
 * hashed with f's hash, in batches, as cli_scan.
 */
int cli_for_each_batch(const amq_filter *f, char **inputs, int ninputs, cli_batch_fn fn,
                       void *ctx);
int cli_for_each_batch_ex(const amq_filter *f, char **inputs, int ninputs,
                          cli_progress *progress, cli_batch_fn fn, void *ctx);
/* The same, going on past inputs that fail (counted in *failed). */
int cli_for_each_batch_failed(const amq_filter *f, char **inputs, int ninputs,
                              cli_progress *progress, cli_batch_fn fn, void *ctx, int *failed);

/* Threads to use: requested if > 0, else AMQ_THREADS if set, else one per
 * idle core (online CPUs minus the rounded 1-minute load average, >= 1). */
int cli_threads(int requested);

/* ---- counting distinct keys (hll.c) ------------------------------------------------------ */
/* HyperLogLog over 64-bit hashes: CLI_HLL_REGS one-byte registers, zeroed to start; the
 * estimate's standard error is CLI_HLL_ERROR (relative). */
#define CLI_HLL_BITS 16
#define CLI_HLL_REGS (1u << CLI_HLL_BITS)
#define CLI_HLL_ERROR (1.04 / 256.0)
void cli_hll_add(uint8_t *reg, uint64_t x);
double cli_hll_estimate(const uint8_t *reg);

/* ---- filters read ---------------------------------------------------------------------- */
/* 1 if path is "-": standard input where a filter is read. */
int cli_is_stdin_path(const char *path);
/* amq_filter_open's filter (flags as for it), or for "-" the one filter
 * standard input holds, read into memory up to the end its header declares
 * (more bytes after it, a terminal, or a second "-" are refused); 0, or -1
 * after a message naming what is wrong (filein.c). */
int cli_filter_open(const char *path, unsigned flags, amq_filter **out);

/* ---- kinds ------------------------------------------------------------------------------ */
/* Switches f to a mode where several threads may add at once, if its kind
 * has one (blocked Bloom, partitioned); 1 if so, 0 if adds need one writer. */
int cli_filter_concurrent_adds(amq_filter *f);
/* 1 when f does not scale and is past its capacity by its item count and
 * its false-positive rate is above its target (a count alone can be an
 * estimate, as after a merge); st (may be NULL) then holds its stats. */
int cli_over_capacity(amq_filter *f, amq_stats *st);
/* Warns on standard error when f (read from path) is over capacity
 * (cli_over_capacity); 1 if it did. */
int cli_warn_saturated(const char *path, amq_filter *f);

/* The kinds built in (the library's table), in id order: their names into
 * out[0..cap), the count returned; creatable: only those `create` makes
 * (not static). */
size_t cli_kind_names(const char **out, size_t cap, int creatable);
/* The same for the kinds built in for which pred(kind) is non-zero. */
size_t cli_kind_names_if(const char **out, size_t cap, int (*pred)(uint32_t kind));
/* 1 for a kind that needs no capacity: created at the library's default
 * start (or --capacity START), it grows as keys come while its expected
 * false-positive rate stays at or under its target (expandable, quotient,
 * pocket).  Expandable and quotient refuse an add (AMQ_ELIMIT) once another
 * growth would pass it; pocket stays far under any target it takes and
 * refuses one only at its largest size (256 segments of 2^26 bins). */
int cli_kind_unsized(uint32_t kind);
/* "an" before a word (a kind's name) that starts with a vowel, else "a". */
const char *cli_a(const char *word);
/* Prints lead, then names joined by ", " and wrapped at 79 columns under
 * lead's width; dflt (may be NULL) is marked "(default)", tail (may be
 * NULL) follows the last name. */
void cli_help_names(FILE *out, const char *lead, const char *const *names, size_t n,
                    const char *dflt, const char *tail);
/* The --hash line of a help text: the library's hash names, each with the
 * kinds whose default it is. */
void cli_help_hashes(FILE *out, const char *lead);
/* The --type line of a help text: cli_help_names of the kinds. */
void cli_help_kinds(FILE *out, const char *lead, int creatable, const char *tail);

/* The formats of import --from and export --to (cmd_guava.c's table): their
 * names into out[0..cap), the count returned. */
size_t cli_format_names(const char **out, size_t cap);

/* The algorithms of `amq hash --algo` (cmd_hash.c's table): their names into
 * out[0..cap), the count returned. */
size_t cli_hash_algo_names(const char **out, size_t cap);

/* --fpp for a new filter of cfg->kind: a scalable-cuckoo filter's rate is its fingerprints' (a
 * link's), which --fpp does not size, so create and build refuse an --fpp they do not meet.
 * takes_bits: the command takes --fingerprint-bits (the message says so).  0, or -1 (reported). */
int cli_check_fpp_met(const char *cmd, const amq_config *cfg, int takes_bits);

/* For add and remove: when f is static (fuse, ribbon), says why it cannot
 * change and how to rebuild it, and returns 1; else 0. */
int cli_refuse_static(const amq_filter *f, const char *path, const char *what);

/* ---- output files ------------------------------------------------------------------------ */
/* Writes data to path atomically (temporary file, fsync, rename, directory
 * fsync); "-" writes to standard output.  Refuses to replace an existing
 * path unless force.  0, or -1 (reported). */
int cli_save_bytes(const char *path, const void *data, size_t len, int force);

/* With --force, an existing regular file at path is replaced only when it holds the format an
 * export writes (its first bytes and size pass is_format): 0, or -1 after the message naming
 * what the file should have been. */
int cli_force_same_format(const char *path, int (*is_format)(const unsigned char *, size_t,
                                                             uint64_t),
                          const char *what);
int cli_is_guava(const unsigned char *head, size_t n, uint64_t size); /* Guava's writeTo */
int cli_is_resp(const unsigned char *head, size_t n, uint64_t size);  /* RESP commands */

/* ---- files the tool writes (target.c) ------------------------------------------------------ */
/* Installs the handlers of SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE that
 * remove the library's registered temporary files (amq_temp_remove_all),
 * then die of the signal. */
void cli_signals_init(void);
/* Holds those signals back while a write that must not stop half-way runs
 * (an in-place commit: journal, file, journal removed), and lets a held one
 * act when it ends: the command finishes its write, then dies of it. */
void cli_signals_hold(void);
void cli_signals_release(void);

#define CLI_TARGET_UPDATE 1u /* read-modify-write of an existing amq filter (add) */
#define CLI_TARGET_FORCE 2u  /* may replace an existing amq filter */
#define CLI_TARGET_TEXT 4u   /* the output is text: replaces any file but a filter */
#define CLI_TARGET_ANY 8u    /* with FORCE: may replace a file of another format */
#define CLI_TARGET_QUIET 16u /* -q: no warning while it waits for another writer */

/*
 * A file to write: the library's writer (amq_target in <amq/advanced.h>:
 * symlinks followed, the existing file locked until released and refused
 * when it is not what the flags allow, read-only or hard-linked; the new
 * contents in a registered temporary file renamed into place), with the
 * tool's flags, messages and "-" for standard output.  Every function
 * reports its errors; -1 on failure.
 */
typedef struct cli_target {
    const char *path; /* as given, for messages */
    const char *real; /* the file written: symlinks followed */
    unsigned flags;
    struct amq_target *t;
} cli_target;

int cli_target_open(cli_target *t, const char *path, unsigned flags);
/* The descriptor to write the new contents to (owned by the target). */
int cli_target_begin(cli_target *t);
int cli_target_commit(cli_target *t);
void cli_target_abort(cli_target *t);
void cli_target_release(cli_target *t);
int cli_target_write_bytes(cli_target *t, const void *data, size_t len);
int cli_target_write_filter(cli_target *t, const amq_filter *f);
/* Refuses early (before reading gigabytes) an output the save would
 * refuse: an existing file without force, a file that is not a filter. */
int cli_check_output(const char *path, int force);
/* open + write_filter + release. */
int cli_save_filter(const char *path, const amq_filter *f, unsigned flags);
/* Before a save: a growth under way finished (amq_filter_settle), so that
 * a quotient filter's file holds one table; when it cannot finish, a
 * warning (unless quiet), and the filter is saved as it stands. */
void cli_settle(amq_filter *f, const char *path, int quiet);

/* ---- subcommands --------------------------------------------------------------------- */
int cmd_hash(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dedup(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);

#endif /* AMQ_CLI_H */
