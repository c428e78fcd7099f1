/*
 * cmd_dedup.c - amq dedup: print each distinct line once, at its first
 * occurrence, in input order - exactly as `awk '!seen[$0]++'` - at the
 * memory cost of a Bloom filter plus the lines that occur more than once.
 *
 * Exact mode, two passes over the input (DESIGN.md, "exact dedup at Bloom
 * cost"):
 *   pass 1  adds every line's hash to a Bloom filter; a line whose hash the
 *           filter had "maybe seen" (a true duplicate, or a false positive
 *           at rate about fpp) is flagged: its 64-bit key goes to a set.
 *   pass 2  a line whose key is not in that set occurred exactly once:
 *           printed.  A flagged key's lines are checked exactly, byte for
 *           byte, against the flagged lines kept so far: printed the first
 *           time, dropped after.
 * The filter is freed before pass 2.  Memory: the filter, then the flagged
 * keys and the distinct flagged lines; never the whole input.  Input that
 * cannot be read twice (a pipe) is first copied to a temporary file.
 *
 * A line is everything between two LFs, CR included (as awk's $0); a last
 * line without LF is printed with one.
 *
 * --approximate reads once and drops every line the filter had maybe seen:
 * no second pass and no exact set, but about fpp of the distinct lines are
 * lost; the expected number is printed on standard error.
 *
 * The filter kind is "blocked" (one cache line per key) when the library
 * has it, else the classic "bloom"; both are chosen by name at run time.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lineset.h"

static const char usage_text[] =
    "usage: amq dedup [INPUT...] [-o OUT] [--approximate] [--fpp P] [--capacity N]\n"
    "                 [--threads T] [--stats [--json]] [--progress] [--quiet]\n"
    "\n"
    "Prints each distinct line of the INPUTs (none or '-': standard input;\n"
    CLI_COMPRESSED " input is decompressed) once, at its first occurrence,\n"
    "in input order: the output of awk '!seen[$0]++', with the memory of a Bloom\n"
    "filter plus the lines that occur more than once.  Input read from a pipe is\n"
    "first copied to a temporary file in $TMPDIR (or /tmp): the exact mode reads\n"
    "its input twice.\n"
    "\n"
    "  -o, --output OUT   write to OUT (replaced when done) instead of standard output;\n"
    "                     /dev/stdout, /dev/fd/N: written to that open descriptor\n"
    "  --approximate      one pass, no exact check: a line is dropped when the filter\n"
    "                     says it was seen; about P of the distinct lines are lost\n"
    "                     (the expected number is printed on standard error)\n"
    "  --fpp P            the filter's false-positive rate (default 0.01; 0.001 with\n"
    "                     --approximate)\n"
    "  --capacity N       distinct lines to size the filter for (default: the number\n"
    "                     of lines, estimated from the input's size; with\n"
    "                     --approximate on a pipe, a filter that grows as needed)\n"
    "  --threads T        threads (default: one per idle core; 1: no reading thread,\n"
    "                     no partitions)\n"
    "  --stats            print lines in, distinct out, duplicates, flagged lines\n"
    "                     (--approximate: distinct lines in, estimated, and expected\n"
    "                     false drops), filter size and peak memory on standard error\n"
    "  --json             --stats as one JSON object (implies --stats), alone on\n"
    "                     standard error: warnings are its \"warnings\" list\n"
    "  --progress         show progress on standard error even when it is not a\n"
    "                     terminal\n"
    "  -q, --quiet        no progress, no warnings (no expected-loss note)\n";

/*
 * The exact passes run in NPART-way partitions of the key space (the key's
 * low bits): all the lines of one key - a line and its duplicates - fall in
 * one partition, so each partition has its own flagged-key set and line set
 * and is worked by one thread, in input order within it, while the other
 * partitions are worked at the same time.  Pass 1: the main thread adds the
 * batch to the filter (one writer: no kind needs to take concurrent adds,
 * and the adds are the cheap part), then every partition records its
 * flagged keys.  Pass 2: every partition gives its lines' verdicts, and the
 * main thread prints the batch in order.
 */
#define MAX_PARTS 16

typedef struct part {
    cand_set cand;
    line_set lset;
    uint64_t flagged;
    size_t n;                    /* lines of the current batch in this part */
    uint32_t idx[CLI_BATCH];     /* their positions in the batch */
    uint64_t keys[CLI_BATCH];
    uint64_t slots[CLI_BATCH];
    uint8_t verdict[CLI_BATCH]; /* pass 2: 1 = print (own array: no false sharing) */
    int rc;
} part;

typedef struct dedup dedup;

typedef struct worker {
    dedup *d;
    int id;
    pthread_t thread;
} worker;

struct dedup {
    /* options */
    int approximate, stats, json, threads, progress_mode, quiet;
    uint64_t capacity;
    double fpp;
    const char *out_path;
    /* state */
    amq_filter *f;
    FILE *out;
    part *parts;
    int nparts;
    uint64_t lines_in, lines_out, flagged, candidates;
    uint8_t added[CLI_BATCH];  /* pass 1: 0 = the filter had maybe seen it */
    uint8_t verdict[CLI_BATCH]; /* pass 2: 1 = print */
    /* the current batch and the workers that share it */
    const cli_line *b_lines;
    const amq_hash128 *b_h;
    size_t b_n;
    int phase; /* 1 or 2 */
    worker workers[MAX_PARTS];
    int nworkers; /* helper threads started (parts 1..) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen, done;
    int quit;
    /* --approximate: expected false drops, integrated between checkpoints over the distinct
     * lines offered (a HyperLogLog count of them: dropped lines hold repeats too) */
    uint64_t new_lines, next_check;
    unsigned check_shift; /* the next sample after lines_in >> check_shift more lines */
    double last_n, last_fpp, expected_loss, distinct_in;
    uint8_t hll[CLI_HLL_REGS];
    uint64_t filter_bytes;
    char kind_name[32];
    amq_config cfg;
    uint64_t key_mask; /* all ones; fewer bits in tests, to force collisions */
    double t_pass1, t_between, t_pass2; /* seconds, for --stats */
};

/* ---- output ------------------------------------------------------------------- */

static inline void emit(dedup *d, const cli_line *l)
{
    fwrite_unlocked(l->data, 1, l->len, d->out);
    putc_unlocked('\n', d->out);
    d->lines_out++;
}

typedef struct out_file {
    cli_target t;
    int open;
} out_file;

static char out_buf[1 << 20];

/* The output goes to a registered temporary file beside OUT (removed on
 * Ctrl-C) and replaces OUT only when complete; OUT is never an amq filter
 * (swapped arguments) and never a hard-linked or read-only file. */
static FILE *open_output(const char *path, out_file *of)
{
    FILE *f;
    int fd, dfd;

    if (cli_target_open(&of->t, path, CLI_TARGET_TEXT) != 0)
        return NULL;
    of->open = 1;
    fd = cli_target_begin(&of->t);
    if (fd < 0)
        goto fail;
    /* The FILE owns a copy of the descriptor: the commit closes its own. */
    dfd = dup(fd);
    f = dfd >= 0 ? fdopen(dfd, "w") : NULL;
    if (f == NULL) {
        cli_error("%s: %s", path, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        cli_target_abort(&of->t);
        goto fail;
    }
    setvbuf(f, out_buf, _IOFBF, sizeof out_buf);
    return f;
fail:
    cli_target_release(&of->t);
    of->open = 0;
    return NULL;
}

/* Closes the output; on success renames it into place. */
static int close_output(dedup *d, out_file *of, int ok)
{
    if (d->out == stdout)
        return ok ? 0 : -1;
    if (fflush(d->out) != 0 || ferror(d->out)) {
        if (ok)
            cli_error("%s: write error: %s", of->t.path, strerror(errno));
        ok = 0;
    }
    if (fclose(d->out) != 0 && ok) {
        cli_error("%s: write error: %s", of->t.path, strerror(errno));
        ok = 0;
    }
    if (ok && cli_target_commit(&of->t) != 0)
        ok = 0;
    if (!ok)
        cli_target_abort(&of->t);
    cli_target_release(&of->t);
    of->open = 0;
    return ok ? 0 : -1;
}

static double elapsed_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* ---- hashing ------------------------------------------------------------------- */

/*
 * Whole lines, CR included: "a\r" and "a" are different lines for awk.
 * Hashed by the filter's algorithm and seed (the defaults it was created
 * with), so that both passes hash alike once the filter is gone.
 */
static void hash_lines(void *ctx, const cli_line *lines, size_t n, amq_hash128 *out)
{
    const amq_config *cfg = ctx;
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = amq_hash_key(cfg->hash_algo, cfg->seed, lines[i].data, lines[i].len);
}

/* ---- the passes, one partition --------------------------------------------------- */

static inline uint64_t key_of(const dedup *d, amq_hash128 h)
{
    return lineset_key(h.h2 & d->key_mask);
}

/* Partition of a key: from its low 32 bits (the tables index by the high
 * ones), by multiply-shift - no division per line. */
static inline int part_of(const dedup *d, uint64_t key)
{
    return (int)(((key & 0xffffffffu) * (uint64_t)d->nparts) >> 32);
}

static int pass1_part(dedup *d, part *p)
{
    size_t j, nf = 0;

    /* p->keys[] is rewritten in place with the flagged keys (nf <= j). */
    for (j = 0; j < p->n; j++)
        if (!d->added[p->idx[j]])
            p->keys[nf++] = p->keys[j];
    p->flagged += nf;
    if (cand_add_batch(&p->cand, p->keys, nf) != 0) {
        cli_error("dedup: out of memory for %llu flagged lines",
                  (unsigned long long)p->cand.count);
        return EXIT_TROUBLE;
    }
    return 0;
}

/* Lines are looked up and checked in groups small enough that the slots
 * found are still in the cache when they are checked. */
#define PASS2_GROUP 256

static int pass2_group(dedup *d, part *p, size_t from, size_t n)
{
    const uint32_t *idx = p->idx + from;
    const uint64_t *keys = p->keys + from;
    uint64_t *slots = p->slots + from;
    const cli_line *l;
    size_t i;
    int rc;

    line_set_find_batch(&p->lset, keys, n, slots);
    for (i = 0; i < n; i++)
        if (slots[i] != LINESET_ABSENT)
            line_set_prefetch(&p->lset, slots[i]);
    for (i = 0; i < n; i++) {
        if (slots[i] == LINESET_ABSENT) {
            p->verdict[from + i] = 1; /* never flagged: it occurs once */
            continue;
        }
        l = &d->b_lines[idx[i]];
        rc = line_set_check(&p->lset, slots[i], keys[i], l->data, l->len);
        if (rc < 0) {
            cli_error("dedup: out of memory for the flagged lines (%llu kept)",
                      (unsigned long long)p->lset.count);
            return EXIT_TROUBLE;
        }
        p->verdict[from + i] = rc > 0;
        if (rc == 2 && i + 1 < n) /* the table moved: find the rest again */
            line_set_find_batch(&p->lset, keys + i + 1, n - i - 1, slots + i + 1);
    }
    return 0;
}

static int pass2_part(dedup *d, part *p)
{
    size_t j, g;
    int rc;

    for (j = 0; j < p->n; j += g) {
        g = p->n - j < PASS2_GROUP ? p->n - j : PASS2_GROUP;
        rc = pass2_group(d, p, j, g);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Turns a partition's flagged keys into its line set (between the passes). */
static int convert_part(part *p)
{
    uint64_t count = p->cand.count;
    if (line_set_from_cand(&p->lset, &p->cand) != 0) {
        cli_error("dedup: out of memory for %llu flagged lines", (unsigned long long)count);
        return EXIT_TROUBLE;
    }
    return 0;
}

/* Runs the phase on this partition: its lines of the batch in passes 1
 * and 2, its conversion in phase 3. */
static int run_part(dedup *d, int id)
{
    part *p = &d->parts[id];
    if (d->phase == 3)
        return convert_part(p);
    return d->phase == 1 ? pass1_part(d, p) : pass2_part(d, p);
}

/* Deals the batch's lines to the partitions (in the main thread: one pass
 * over the hashes instead of one per partition). */
static void deal(dedup *d, const amq_hash128 *h, size_t n)
{
    size_t i;
    uint64_t key;
    part *p;
    int k;

    for (k = 0; k < d->nparts; k++)
        d->parts[k].n = 0;
    for (i = 0; i < n; i++) {
        key = key_of(d, h[i]);
        p = &d->parts[d->nparts == 1 ? 0 : part_of(d, key)];
        p->keys[p->n] = key;
        p->idx[p->n++] = (uint32_t)i;
    }
}

/* ---- the workers ------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
    worker *w = arg;
    dedup *d = w->d;
    uint64_t seen = 0;

    for (;;) {
        pthread_mutex_lock(&d->mu);
        while (!d->quit && d->gen == seen)
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->quit) {
            pthread_mutex_unlock(&d->mu);
            break;
        }
        seen = d->gen;
        pthread_mutex_unlock(&d->mu);

        d->parts[w->id].rc = run_part(d, w->id);

        pthread_mutex_lock(&d->mu);
        d->done++;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
    }
    return NULL;
}

static int start_workers(dedup *d)
{
    int i;

    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    for (i = 1; i < d->nparts; i++) {
        d->workers[i].d = d;
        d->workers[i].id = i;
        if (pthread_create(&d->workers[i].thread, NULL, worker_main, &d->workers[i]) != 0) {
            cli_error("dedup: cannot start a thread");
            return -1;
        }
        d->nworkers = i;
    }
    return 0;
}

static void stop_workers(dedup *d)
{
    int i;

    pthread_mutex_lock(&d->mu);
    d->quit = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (i = 1; i <= d->nworkers; i++)
        pthread_join(d->workers[i].thread, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
}

/* Runs the phase on a batch in every partition at once. */
static int run_batch(dedup *d, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    int i, rc = 0;

    d->b_lines = lines;
    d->b_h = h;
    d->b_n = n;
    if (d->phase != 3)
        deal(d, h, n);
    if (d->nparts > 1) {
        pthread_mutex_lock(&d->mu);
        d->done = 0;
        d->gen++;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
    }
    d->parts[0].rc = run_part(d, 0);
    if (d->nparts > 1) {
        pthread_mutex_lock(&d->mu);
        while (d->done < (uint64_t)(d->nparts - 1))
            pthread_cond_wait(&d->cv, &d->mu);
        pthread_mutex_unlock(&d->mu);
    }
    for (i = 0; i < d->nparts; i++)
        if (d->parts[i].rc != 0)
            rc = d->parts[i].rc;
    return rc;
}

static int pass1_batch(void *ctx, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    dedup *d = ctx;
    int rc;

    rc = amq_filter_add_batch(d->f, h, n, d->added);
    if (rc < 0) {
        cli_error("dedup: filter: %s", amq_strerror(rc));
        return EXIT_TROUBLE;
    }
    d->phase = 1;
    d->lines_in += n;
    return run_batch(d, lines, h, n);
}

static int pass2_batch(void *ctx, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    dedup *d = ctx;
    size_t i;
    int rc, k;

    d->phase = 2;
    rc = run_batch(d, lines, h, n);
    if (rc != 0)
        return rc;
    for (k = 0; k < d->nparts; k++)
        for (i = 0; i < d->parts[k].n; i++)
            d->verdict[d->parts[k].idx[i]] = d->parts[k].verdict[i];
    for (i = 0; i < n; i++)
        if (d->verdict[i])
            emit(d, &lines[i]);
    return 0;
}

/* ---- approximate mode --------------------------------------------------------------- */

/*
 * The expected number of lines wrongly dropped is the sum, over the first
 * occurrences of distinct lines offered (kept or dropped), of the filter's
 * false-positive rate at that moment.  Those lines are counted by
 * HyperLogLog (the dropped ones hold repeats too), and the rate is sampled
 * (amq_filter_stats) each time the lines read double, and integrated
 * between samples as a power law n^a through both ends - Bloom rates grow
 * as a power of the fill.  A scalable filter's rate stops at its full
 * link's while the next link fills: a power law over a doubling across
 * that knee counted a third too few, so it is sampled every eighth more.
 */
static void loss_checkpoint(dedup *d)
{
    amq_stats st;
    double n0 = d->last_n, n1, f0 = d->last_fpp, f1, a, r;

    /* Never fewer than the lines kept, each a distinct line. */
    n1 = cli_hll_estimate(d->hll);
    if (n1 < (double)d->new_lines)
        n1 = (double)d->new_lines;
    d->distinct_in = n1;
    if (n1 <= n0)
        return;
    amq_filter_stats(d->f, &st);
    f1 = st.fpp_now;
    if (n0 == 0 || f0 <= 0 || f1 <= f0) {
        /* From 0 (or a flat stretch): a linear ramp is an upper bound. */
        d->expected_loss += (n1 - n0) * (f0 + f1) / 2.0;
    } else {
        a = log(f1 / f0) / log(n1 / n0);
        r = n1 / n0;
        d->expected_loss += f0 * n0 / (a + 1.0) * (pow(r, a + 1.0) - 1.0);
    }
    d->last_n = n1;
    d->last_fpp = f1;
}

/*
 * At the end: every distinct line offered and not kept was wrongly dropped,
 * so the count of them less the lines kept measures the loss too, within
 * HyperLogLog's error.  The integral is the finer estimate while the filter
 * keeps up; when the count shows more lost than it by over three standard
 * errors (a filter saturated between two samples), the count is taken.
 */
static void loss_final(dedup *d)
{
    double counted;

    loss_checkpoint(d);
    counted = d->distinct_in - (double)d->new_lines;
    if (counted - d->expected_loss > 3.0 * CLI_HLL_ERROR * d->distinct_in)
        d->expected_loss = counted;
}

static int approx_batch(void *ctx, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    dedup *d = ctx;
    size_t i;
    int rc;

    rc = amq_filter_add_batch(d->f, h, n, d->added);
    if (rc < 0) {
        cli_error("dedup: filter: %s", amq_strerror(rc));
        return EXIT_TROUBLE;
    }
    for (i = 0; i < n; i++) {
        cli_hll_add(d->hll, h[i].h1);
        if (d->added[i]) {
            emit(d, &lines[i]);
            d->new_lines++;
        } else {
            d->flagged++;
        }
    }
    d->lines_in += n;
    /* By the lines read, not kept: a saturated filter keeps none but loses them. */
    if (d->lines_in >= d->next_check) {
        loss_checkpoint(d);
        d->next_check = d->lines_in + (d->lines_in >> d->check_shift);
    }
    return 0;
}

/* The first link of the growing filter of --approximate on a pipe. */
#define PIPE_FIRST_CAPACITY 1000000

/* ---- the filter ------------------------------------------------------------------------- */

static int make_filter(dedup *d, int scaling)
{
    amq_config *cfg = &d->cfg;
    amq_errinfo err;
    amq_stats st;
    uint32_t kind;
    const char *name = scaling ? "scalable-bloom" : "blocked";
    int rc;

    if (amq_kind_from_name(name, &kind) != AMQ_OK) {
        name = "bloom";
        if (amq_kind_from_name(name, &kind) != AMQ_OK) {
            cli_error("dedup: this libamq has no Bloom filter");
            return -1;
        }
    }
    snprintf(d->kind_name, sizeof d->kind_name, "%s", name);
    amq_config_init(cfg, kind);
    cfg->capacity = d->capacity;
    /* a scalable Bloom filter's target is its chain's: the library gives the first link a
     * fifth of it and tightens each next by 0.8 (a fifth here too made it 25 times tighter) */
    cfg->fpp = d->fpp;
    memset(&err, 0, sizeof err);
    rc = amq_filter_new(cfg, &d->f, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, "dedup");
        return -1;
    }
    amq_filter_stats(d->f, &st);
    d->filter_bytes = st.bytes;
    return 0;
}

/* ---- statistics ---------------------------------------------------------------------------- */

/* warning: the over-capacity warning, or "": with --json it is a field of
 * the object, so that standard error holds that object alone. */
static void print_stats_json(const dedup *d, double seconds, const struct rusage *ru,
                             const char *warning)
{
    fprintf(stderr,
            "{\"lines_in\": %llu, \"distinct_out\": %llu, \"duplicates\": %llu, "
            "\"approximate\": %s, ",
            (unsigned long long)d->lines_in, (unsigned long long)d->lines_out,
            (unsigned long long)(d->lines_in - d->lines_out), d->approximate ? "true" : "false");
    if (d->approximate)
        fprintf(stderr, "\"distinct_in_estimate\": %.0f, \"expected_false_drops\": %.6g, ",
                d->distinct_in, d->expected_loss);
    else
        fprintf(stderr, "\"flagged\": %llu, \"candidates\": %llu, ",
                (unsigned long long)d->flagged, (unsigned long long)d->candidates);
    fprintf(stderr,
            "\"filter_kind\": \"%s\", \"filter_bytes\": %llu, \"capacity\": %llu, "
            "\"fpp\": %.6g, \"peak_memory_bytes\": %llu, \"seconds\": %.3f, \"warnings\": [",
            d->kind_name, (unsigned long long)d->filter_bytes, (unsigned long long)d->capacity,
            d->fpp, (unsigned long long)ru->ru_maxrss * 1024, seconds);
    if (warning[0] != '\0')
        fprintf(stderr, "\"%s\"", warning); /* no quote or backslash in it */
    fputs("]}\n", stderr);
}

static void print_stats(const dedup *d, double seconds, const char *warning)
{
    struct rusage ru;
    char fb[32], mem[32];

    getrusage(RUSAGE_SELF, &ru);
    if (d->json) {
        print_stats_json(d, seconds, &ru, warning);
        return;
    }
    cli_human_bytes(d->filter_bytes, fb, sizeof fb);
    cli_human_bytes((uint64_t)ru.ru_maxrss * 1024, mem, sizeof mem);
    fprintf(stderr, "lines in:         %llu\n", (unsigned long long)d->lines_in);
    fprintf(stderr, "distinct out:     %llu\n", (unsigned long long)d->lines_out);
    fprintf(stderr, "duplicates:       %llu%s\n",
            (unsigned long long)(d->lines_in - d->lines_out),
            d->approximate ? " (dropped: duplicates and false positives)" : "");
    if (d->approximate) {
        fprintf(stderr, "distinct in:      about %.0f (HyperLogLog)\n", d->distinct_in);
        fprintf(stderr, "expected false:   %.3g lines wrongly dropped\n", d->expected_loss);
    } else {
        fprintf(stderr, "flagged:          %llu lines the filter had maybe seen (%llu false "
                        "positives)\n",
                (unsigned long long)d->flagged,
                (unsigned long long)(d->flagged - (d->lines_in - d->lines_out)));
        fprintf(stderr, "candidates:       %llu distinct flagged lines checked exactly\n",
                (unsigned long long)d->candidates);
    }
    fprintf(stderr, "filter:           %s, %llu bytes (%s), capacity %llu, fpp %g\n",
            d->kind_name, (unsigned long long)d->filter_bytes, fb,
            (unsigned long long)d->capacity, d->fpp);
    fprintf(stderr, "peak memory:      %llu bytes (%s, getrusage maxrss)\n",
            (unsigned long long)ru.ru_maxrss * 1024, mem);
    if (d->approximate)
        fprintf(stderr, "time:             %.2f s\n", seconds);
    else
        fprintf(stderr, "time:             %.2f s (pass 1 %.2f s, between %.2f s, pass 2 %.2f s)\n",
                seconds, d->t_pass1, d->t_between, d->t_pass2);
}

/* ---- the command ------------------------------------------------------------------------------ */

static int run(dedup *d, cli_src *srcs, size_t nsrcs)
{
    cli_scan_opts o;
    cli_progress *pg;
    struct timespec t0;
    uint64_t total, est;
    int rc, all_files = 1, scaling;
    size_t i;

    pg = cli_progress_start(d->progress_mode, "dedup", 0);
    if (!d->approximate) {
        if (cli_srcs_make_rereadable(srcs, nsrcs, pg) != 0) {
            cli_progress_end(pg);
            return EXIT_TROUBLE;
        }
    } else {
        for (i = 0; i < nsrcs; i++)
            if (!cli_src_is_rereadable(&srcs[i]))
                all_files = 0;
    }
    total = cli_srcs_bytes(srcs, nsrcs);
    /* --approximate on a pipe: its length is unknown and it is read once,
     * so the filter grows with it instead of being sized by a guess (a
     * guess too small drops unique lines as false positives). */
    scaling = d->approximate && !all_files && d->capacity == 0;
    if (scaling)
        d->capacity = PIPE_FIRST_CAPACITY;
    if (d->capacity == 0) {
        if (cli_srcs_estimate_lines(srcs, nsrcs, &est) != 0) {
            cli_progress_end(pg);
            return EXIT_TROUBLE;
        }
        /* A margin over the estimate from the first MiB. */
        d->capacity = est + est / 10 + 1000;
    }
    if (make_filter(d, scaling) != 0) {
        cli_progress_end(pg);
        return EXIT_TROUBLE;
    }
    memset(&o, 0, sizeof o);
    o.srcs = srcs;
    o.nsrcs = nsrcs;
    o.hash = hash_lines;
    o.hash_ctx = &d->cfg;
    o.threads = d->threads;
    o.progress = pg;

    if (d->approximate) {
        cli_progress_phase(pg, "dedup", total);
        d->next_check = CLI_BATCH;
        d->check_shift = scaling ? 3 : 0;
        rc = cli_scan(&o, approx_batch, d);
        if (rc == 0)
            loss_final(d);
        if (scaling) {
            amq_stats st;
            amq_filter_stats(d->f, &st);
            d->filter_bytes = st.bytes; /* what it grew to */
            d->capacity = st.capacity;
        }
        cli_progress_end(pg);
        return rc;
    }

    d->nparts = d->threads < 1 ? 1 : (d->threads > MAX_PARTS ? MAX_PARTS : d->threads);
    d->parts = calloc((size_t)d->nparts, sizeof *d->parts);
    if (d->parts == NULL) {
        cli_error("dedup: out of memory");
        cli_progress_end(pg);
        return EXIT_TROUBLE;
    }
    for (i = 0; i < (size_t)d->nparts; i++) {
        if (cand_init(&d->parts[i].cand, d->capacity / 64 / (uint64_t)d->nparts) != 0) {
            cli_error("dedup: out of memory");
            cli_progress_end(pg);
            return EXIT_TROUBLE;
        }
    }
    if (start_workers(d) != 0) {
        cli_progress_end(pg);
        return EXIT_TROUBLE;
    }
    cli_progress_phase(pg, "dedup pass 1 of 2", total);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = cli_scan(&o, pass1_batch, d);
    d->t_pass1 = elapsed_since(&t0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* The filter's work is done: its memory goes before pass 2's. */
    if (rc == 0) {
        amq_filter_free(d->f);
        d->f = NULL;
        for (i = 0; i < (size_t)d->nparts; i++) {
            d->candidates += d->parts[i].cand.count;
            d->flagged += d->parts[i].flagged;
        }
        d->phase = 3;
        rc = run_batch(d, NULL, NULL, 0);
    }
    d->t_between = elapsed_since(&t0);
    if (rc == 0) {
        cli_progress_phase(pg, "dedup pass 2 of 2", total);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = cli_scan(&o, pass2_batch, d);
        d->t_pass2 = elapsed_since(&t0);
    }
    stop_workers(d);
    cli_progress_end(pg);
    return rc;
}

int cmd_dedup(int argc, char **argv)
{
    enum { O_APPROX = 256, O_FPP, O_CAPACITY, O_THREADS, O_STATS, O_PROGRESS };
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"approximate", no_argument, NULL, O_APPROX},
        {"fpp", required_argument, NULL, O_FPP},
        {"capacity", required_argument, NULL, O_CAPACITY},
        {"threads", required_argument, NULL, O_THREADS},
        {"stats", no_argument, NULL, O_STATS},
        {"json", no_argument, NULL, 'J'},
        {"progress", no_argument, NULL, O_PROGRESS},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static dedup d;
    struct timespec t0;
    static out_file of;
    cli_src *srcs;
    size_t nsrcs;
    uint64_t v;
    int opt, rc, fpp_given = 0, progress = 0, i;
    char over[512];

    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(&d, 0, sizeof d);
    d.fpp = 0.01;
    while ((opt = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (opt) {
        case 'o':
            d.out_path = optarg;
            break;
        case O_APPROX:
            d.approximate = 1;
            break;
        case O_FPP:
            if (cli_parse_fpp("--fpp", optarg, &d.fpp) != 0)
                return EXIT_TROUBLE;
            fpp_given = 1;
            break;
        case O_CAPACITY:
            if (cli_parse_capacity("--capacity", optarg, &d.capacity) != 0)
                return EXIT_TROUBLE;
            break;
        case O_THREADS:
            if (cli_parse_uint("--threads", optarg, 1, 1024, &v) != 0)
                return EXIT_TROUBLE;
            d.threads = (int)v;
            break;
        case O_STATS:
            d.stats = 1;
            break;
        case 'J':
            d.json = d.stats = 1; /* the stats as JSON: asking for it asks for them */
            break;
        case O_PROGRESS:
            progress = 1;
            break;
        case 'q':
            d.quiet = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (d.approximate && !fpp_given)
        d.fpp = 0.001;
    /* AMQ_DEDUP_KEY_BITS=8 (tests only) keeps 8 bits of each line's key, so
     * that different flagged lines share keys and the byte-by-byte check
     * and its collision path are exercised. */
    d.key_mask = UINT64_MAX;
    if (getenv("AMQ_DEDUP_KEY_BITS") != NULL) {
        unsigned bits = (unsigned)atoi(getenv("AMQ_DEDUP_KEY_BITS"));
        if (bits >= 1 && bits < 64)
            d.key_mask = (UINT64_C(1) << bits) - 1;
    }
    d.threads = cli_threads(d.threads);
    d.progress_mode = cli_progress_mode(progress, d.quiet);
    srcs = cli_srcs_from_args(argv + optind, argc - optind, &nsrcs);
    if (srcs == NULL)
        return EXIT_TROUBLE;
    if (d.out_path != NULL) {
        d.out = open_output(d.out_path, &of);
        if (d.out == NULL) {
            free(srcs);
            return EXIT_TROUBLE;
        }
    } else {
        d.out = stdout;
    }

    rc = run(&d, srcs, nsrcs);

    if (close_output(&d, &of, rc == 0) != 0 && rc == 0)
        rc = EXIT_TROUBLE;
    over[0] = '\0';
    if (rc == 0 && d.approximate && d.distinct_in > (double)d.capacity &&
        strcmp(d.kind_name, "scalable-bloom") != 0)
        snprintf(over, sizeof over,
                 "dedup: about %.0f distinct lines in (a HyperLogLog estimate; %llu kept), over "
                 "the filter's capacity of %llu; give --capacity for fewer losses",
                 d.distinct_in, (unsigned long long)d.new_lines, (unsigned long long)d.capacity);
    /* --json: the expected loss and the warning are the object's fields, nothing else */
    if (rc == 0 && d.approximate && !d.quiet && !d.json)
        cli_warn("dedup --approximate: %llu lines dropped; expected number of distinct lines "
                 "among them wrongly dropped (false positives): %.3g",
                 (unsigned long long)d.flagged, d.expected_loss);
    if (over[0] != '\0' && !d.quiet && !d.json)
        cli_warn("%s", over);
    if (d.stats && rc == 0)
        print_stats(&d, elapsed_since(&t0), over);
    amq_filter_free(d.f);
    if (d.parts != NULL) {
        for (i = 0; i < d.nparts; i++) {
            cand_free(&d.parts[i].cand);
            line_set_free(&d.parts[i].lset);
        }
        free(d.parts);
    }
    cli_srcs_release(srcs, nsrcs);
    free(srcs);
    return rc == 0 ? 0 : EXIT_TROUBLE;
}
