/*
 * scan.c - lines of the INPUTs in batches, fast, optionally read and hashed
 * in a second thread.
 *
 * A batch is up to CLI_BATCH lines whose bytes lie in one slot buffer;
 * slots form a ring, so a producer (reading, splitting, hashing) can run
 * ahead of the consumer (the subcommand's callback) by up to SCAN_SLOTS - 1
 * batches.  Splitting finds every LF of a 64-byte block at once (a bit mask
 * from AVX2 compares, or an 8-byte SWAR step on other CPUs) instead of one
 * memchr call per line, whose fixed cost dominates for short lines.
 *
 * The bytes of a line never move while its batch is in use; the partial
 * line at the end of a slot is copied to the start of the next one.  No
 * allocation per line; a slot grows only for a line longer than itself.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AMQ_ADVANCED_API 1 /* amq_simd_supported: the AMQ_SIMD cap */
#include "cli.h"

#define SCAN_SLOTS 4
#ifndef SCAN_BUF /* fuzz/fuzz_cli_lines.c makes slots small */
#define SCAN_BUF ((size_t)1 << 19)
#endif

/* ---- finding line ends ------------------------------------------------------ */

/*
 * Records the offsets of up to max LFs in p[start, end) into ends[];
 * returns their count.  Stops early when max is reached.
 */
typedef size_t (*lf_scan_fn)(const uint8_t *p, size_t start, size_t end, size_t *ends,
                             size_t max);

static size_t scan_tail(const uint8_t *p, size_t i, size_t end, size_t *ends, size_t c,
                        size_t max)
{
    for (; i < end && c < max; i++)
        if (p[i] == '\n')
            ends[c++] = i;
    return c;
}

static size_t lf_scan_swar(const uint8_t *p, size_t start, size_t end, size_t *ends,
                           size_t max)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), high = UINT64_C(0x8080808080808080);
    const uint64_t lfs = ones * '\n';
    size_t i = start, c = 0;
    uint64_t w, m;

    for (; i + 8 <= end; i += 8) {
        memcpy(&w, p + i, 8);
        w ^= lfs;
        /* A zero byte of w (an LF of p) sets its high bit; a borrow may also
         * mark the byte after a zero byte, so each candidate is checked. */
        m = (w - ones) & ~w & high;
        while (m != 0) {
            size_t j = i + ((size_t)__builtin_ctzll(m) >> 3);
            if (p[j] == '\n') {
                if (c == max)
                    return c;
                ends[c++] = j;
            }
            m &= m - 1;
        }
    }
    return scan_tail(p, i, end, ends, c, max);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_SCAN 1

__attribute__((target("avx2"))) static size_t lf_scan_avx2(const uint8_t *p, size_t start,
                                                           size_t end, size_t *ends,
                                                           size_t max)
{
    const __m256i lf = _mm256_set1_epi8('\n');
    size_t i = start, c = 0;
    uint64_t m;

    for (; i + 64 <= end; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + i + 32));
        m = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, lf)) |
            (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, lf)) << 32;
        while (m != 0) {
            if (c == max)
                return c;
            ends[c++] = i + (size_t)__builtin_ctzll(m);
            m &= m - 1;
        }
    }
    return scan_tail(p, i, end, ends, c, max);
}
#endif

static lf_scan_fn pick_scanner(void)
{
#ifdef HAVE_AVX2_SCAN
    /* The library's answer: this CPU, capped by AMQ_SIMD as it reads it. */
    if (amq_simd_supported(AMQ_SIMD_AVX2))
        return lf_scan_avx2;
#endif
    return lf_scan_swar;
}

/* ---- slots -------------------------------------------------------------------- */

typedef struct scan_slot {
    uint8_t *buf;
    size_t cap;
    cli_line lines[CLI_BATCH];
    amq_hash128 hashes[CLI_BATCH];
    size_t n;
    uint64_t pos;  /* progress: input bytes consumed after this batch */
    int status;    /* 0 lines, 1 end of all input, -1 error */
} scan_slot;

typedef struct scan_state {
    const cli_scan_opts *o;
    lf_scan_fn lf_scan;
    scan_slot *slots;
    size_t nslots;
    size_t ends[CLI_BATCH];
    /* producer */
    size_t src;          /* index of the current input */
    cli_input *in;       /* open input, NULL between inputs */
    int in_eof;
    uint64_t done_bytes; /* sizes of the inputs read completely */
    const uint8_t *carry; /* bytes of the next line(s) left in the last slot */
    size_t carry_len;
    uint64_t bytes_seen, lines_seen;
    double avg_line;     /* bytes per line so far, to size reads */
    /* ring */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t produced, consumed;
    int stop;
} scan_state;

static int slot_reserve(scan_slot *s, size_t need)
{
    size_t cap = s->cap != 0 ? s->cap : SCAN_BUF;
    uint8_t *nb;

    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    if (cap == s->cap)
        return 0;
    nb = realloc(s->buf, cap);
    if (nb == NULL)
        return -1;
    s->buf = nb;
    s->cap = cap;
    return 0;
}

static void set_line(cli_line *l, const uint8_t *p, size_t len)
{
    l->data = p;
    l->len = len;
    l->key_len = (len > 0 && p[len - 1] == '\r') ? len - 1 : len;
}

/* Opens input number src; 0, or -1 on error (reported). */
static int open_next_src(scan_state *st)
{
    const cli_src *s = &st->o->srcs[st->src];

    if (s->fd >= 0) {
        if (lseek(s->fd, (off_t)s->offset, SEEK_SET) != (off_t)s->offset) {
            cli_error("%s: cannot rewind", s->name);
            return -1;
        }
        st->in = cli_input_open_fd(s->fd, s->name, s->raw, 0);
    } else {
        st->in = cli_input_open(s->path, s->raw);
    }
    st->in_eof = 0;
    return st->in != NULL ? 0 : -1;
}

/*
 * Fills slot s with the next batch: lines from the current input (never
 * from two inputs: a missing final LF ends a line at the end of a file).
 */
static void produce(scan_state *st, scan_slot *s)
{
    size_t used = 0, scanned = 0, n = 0, k, start, want;
    int interactive;
    ssize_t got;

    s->n = 0;
    s->status = 0;
    for (;;) {
        if (st->in == NULL) {
            if (st->src >= st->o->nsrcs) {
                s->status = 1;
                return;
            }
            if (open_next_src(st) != 0) {
                if (st->o->failed != NULL) {
                    /* As grep: reported (by open_next_src), then the next one. */
                    (*st->o->failed)++;
                    st->src++;
                    continue;
                }
                s->status = -1;
                return;
            }
        }
        interactive = !cli_input_is_regular(st->in);
        /* Take over the carried bytes. */
        if (slot_reserve(s, st->carry_len + 4096) != 0) {
            cli_error("%s: out of memory for a line of %zu bytes", cli_input_name(st->in),
                      st->carry_len);
            s->status = -1;
            return;
        }
        if (st->carry_len > 0)
            memmove(s->buf, st->carry, st->carry_len);
        used = st->carry_len;
        st->carry_len = 0;
        scanned = 0;
        n = 0;
        for (;;) {
            /* Split what is there. */
            k = st->lf_scan(s->buf, scanned, used, st->ends + n, CLI_BATCH - n);
            start = n == 0 ? 0 : (size_t)(s->lines[n - 1].data - s->buf) + s->lines[n - 1].len + 1;
            for (size_t j = 0; j < k; j++) {
                set_line(&s->lines[n + j], s->buf + start, st->ends[n + j] - start);
                start = st->ends[n + j] + 1;
            }
            n += k;
            scanned = n == CLI_BATCH ? start : used;
            if (n == CLI_BATCH)
                break;
            if (st->in_eof) {
                if (start < used)
                    set_line(&s->lines[n++], s->buf + start, used - start);
                start = used;
                break;
            }
            if (n > 0 && (interactive || used == s->cap))
                break;
            if (used == s->cap && slot_reserve(s, s->cap + 1) != 0) {
                cli_error("%s: out of memory for a line of %zu bytes",
                          cli_input_name(st->in), used);
                s->status = -1;
                return;
            }
            /* Read about what the rest of the batch needs, so that little
             * is left over to copy into the next slot. */
            want = (size_t)(st->avg_line * (double)(CLI_BATCH - n)) + 4096;
            if (want > s->cap - used)
                want = s->cap - used;
            got = cli_input_read(st->in, s->buf + used, want);
            if (got < 0 && st->o->failed != NULL) {
                /* The input ends here; its unfinished last line is dropped. */
                (*st->o->failed)++;
                used = start;
                got = 0;
            }
            if (got < 0) {
                s->status = -1;
                return;
            }
            if (got == 0)
                st->in_eof = 1;
            used += (size_t)got;
        }
        /* Bytes after the last line go to the next slot. */
        st->carry = s->buf + start;
        st->carry_len = used - start;
        s->n = n;
        s->pos = st->done_bytes + cli_input_pos(st->in);
        if (n > 0) {
            st->bytes_seen += start;
            st->lines_seen += n;
            st->avg_line = (double)st->bytes_seen / (double)st->lines_seen;
        }
        if (st->in_eof && st->carry_len == 0) {
            st->done_bytes += cli_input_pos(st->in);
            cli_input_close(st->in);
            st->in = NULL;
            st->src++;
        }
        if (n > 0)
            break;
    }
}

static void hash_slot(scan_state *st, scan_slot *s)
{
    if (s->status == 0 && st->o->hash != NULL)
        st->o->hash(st->o->hash_ctx, s->lines, s->n, s->hashes);
}

/* ---- the ring -------------------------------------------------------------------- */

static void *producer_main(void *arg)
{
    scan_state *st = arg;
    scan_slot *s;
    int last = 0;

    while (!last) {
        pthread_mutex_lock(&st->mu);
        while (!st->stop && st->produced - st->consumed >= SCAN_SLOTS)
            pthread_cond_wait(&st->cv, &st->mu);
        if (st->stop) {
            pthread_mutex_unlock(&st->mu);
            break;
        }
        s = &st->slots[st->produced % SCAN_SLOTS];
        pthread_mutex_unlock(&st->mu);

        produce(st, s);
        hash_slot(st, s);
        last = s->status != 0;

        pthread_mutex_lock(&st->mu);
        st->produced++;
        pthread_cond_broadcast(&st->cv);
        pthread_mutex_unlock(&st->mu);
    }
    return NULL;
}

static int consume(scan_state *st, scan_slot *s, cli_batch_fn fn, void *ctx)
{
    if (s->status < 0)
        return EXIT_TROUBLE;
    if (s->status > 0)
        return -1; /* end */
    if (st->o->progress != NULL)
        cli_progress_update(st->o->progress, s->pos, s->n);
    return fn(ctx, s->lines, s->hashes, s->n);
}

static scan_state *scan_new(const cli_scan_opts *o, size_t nslots)
{
    scan_state *st = calloc(1, sizeof *st);

    if (st != NULL)
        st->slots = calloc(nslots, sizeof *st->slots);
    if (st == NULL || st->slots == NULL) {
        free(st);
        cli_error("out of memory");
        return NULL;
    }
    st->nslots = nslots;
    st->o = o;
    st->lf_scan = pick_scanner();
    st->avg_line = 64.0;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    return st;
}

static void scan_free(scan_state *st)
{
    size_t i;

    if (st->in != NULL)
        cli_input_close(st->in);
    for (i = 0; i < st->nslots; i++)
        free(st->slots[i].buf);
    free(st->slots);
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    free(st);
}


int cli_scan(const cli_scan_opts *o, cli_batch_fn fn, void *ctx)
{
    scan_state *st;
    pthread_t thread;
    scan_slot *s;
    int rc = 0, threaded = o->threads >= 2;
    size_t i;

    st = scan_new(o, SCAN_SLOTS);
    if (st == NULL)
        return EXIT_TROUBLE;
    /* A producer blocked in read() on a pipe or a terminal could not be told
     * to stop early (query -q), so only files are read ahead. */
    for (i = 0; threaded && i < o->nsrcs; i++)
        if (!cli_src_is_rereadable(&o->srcs[i]))
            threaded = 0;
    if (threaded && pthread_create(&thread, NULL, producer_main, st) != 0)
        threaded = 0;
    for (;;) {
        if (threaded) {
            pthread_mutex_lock(&st->mu);
            while (st->produced == st->consumed)
                pthread_cond_wait(&st->cv, &st->mu);
            s = &st->slots[st->consumed % SCAN_SLOTS];
            pthread_mutex_unlock(&st->mu);
        } else {
            /* Two slots in turn: the carried bytes of one are copied into
             * the other. */
            s = &st->slots[st->consumed++ % 2];
            produce(st, s);
            hash_slot(st, s);
        }
        rc = consume(st, s, fn, ctx);
        if (threaded) {
            pthread_mutex_lock(&st->mu);
            st->consumed++;
            if (rc != 0)
                st->stop = 1;
            pthread_cond_broadcast(&st->cv);
            pthread_mutex_unlock(&st->mu);
        }
        if (rc != 0)
            break;
    }
    if (rc == -1)
        rc = 0;
    if (threaded)
        pthread_join(thread, NULL);
    scan_free(st);
    return rc;
}

/* ---- inputs from the command line ---------------------------------------------------- */

cli_src *cli_srcs_from_args(char **inputs, int ninputs, size_t *nsrcs)
{
    static char dash[] = "-";
    cli_src *s;
    int i, n = ninputs > 0 ? ninputs : 1;

    s = calloc((size_t)n, sizeof *s);
    if (s == NULL) {
        cli_error("out of memory");
        return NULL;
    }
    for (i = 0; i < n; i++) {
        s[i].path = ninputs > 0 ? inputs[i] : dash;
        s[i].name = strcmp(s[i].path, "-") == 0 ? "(standard input)" : s[i].path;
        s[i].fd = -1;
        s[i].raw = 0;
        s[i].offset = 0;
    }
    *nsrcs = (size_t)n;
    return s;
}

/* ---- the batched key loop of add and query ------------------------------------------------ */

static void hash_keys(void *ctx, const cli_line *lines, size_t n, amq_hash128 *out)
{
    const amq_filter *f = ctx;
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = amq_filter_hash(f, lines[i].data, lines[i].key_len);
}

int cli_for_each_batch(const amq_filter *f, char **inputs, int ninputs, cli_batch_fn fn,
                       void *ctx)
{
    return cli_for_each_batch_ex(f, inputs, ninputs, NULL, fn, ctx);
}

int cli_for_each_batch_ex(const amq_filter *f, char **inputs, int ninputs,
                          cli_progress *progress, cli_batch_fn fn, void *ctx)
{
    return cli_for_each_batch_failed(f, inputs, ninputs, progress, fn, ctx, NULL);
}

int cli_for_each_batch_failed(const amq_filter *f, char **inputs, int ninputs,
                              cli_progress *progress, cli_batch_fn fn, void *ctx, int *failed)
{
    cli_scan_opts o;
    size_t n;
    int rc;

    memset(&o, 0, sizeof o);
    o.srcs = cli_srcs_from_args(inputs, ninputs, &n);
    if (o.srcs == NULL)
        return EXIT_TROUBLE;
    o.nsrcs = n;
    cli_progress_set_total(progress, cli_srcs_bytes(o.srcs, n));
    o.hash = hash_keys;
    o.hash_ctx = (void *)(uintptr_t)f;
    o.threads = cli_threads(0);
    o.progress = progress;
    o.failed = failed;
    rc = cli_scan(&o, fn, ctx);
    free((void *)o.srcs);
    return rc;
}

/* ---- unordered, in parallel ------------------------------------------------------------ */
/*
 * Each worker takes turns at reading and splitting the next batch (under
 * the scan lock, which keeps the input in order and the carried bytes
 * right), then hashes it and calls fn on its own: batches are processed in
 * no particular order, by several threads at once.  A worker alternates
 * between two slots of its own, so the slot it fills is never the one the
 * last batch's carried bytes lie in.
 */

typedef struct scan_worker {
    scan_state *st;
    size_t id;
    cli_batch_fn fn;
    void *ctx;
    int serialize;
    pthread_mutex_t *fn_mu;
    int *rc;
    pthread_t thread;
} scan_worker;

static void *worker_main(void *arg)
{
    scan_worker *w = arg;
    scan_state *st = w->st;
    scan_slot *s;
    unsigned turn = 0;
    int rc;

    for (;;) {
        s = &st->slots[w->id * 2 + (turn++ & 1)];
        pthread_mutex_lock(&st->mu);
        if (st->stop) {
            pthread_mutex_unlock(&st->mu);
            break;
        }
        produce(st, s);
        if (s->status != 0) {
            st->stop = 1;
            if (s->status < 0 && *w->rc == 0)
                *w->rc = EXIT_TROUBLE;
            pthread_mutex_unlock(&st->mu);
            break;
        }
        if (st->o->progress != NULL)
            cli_progress_update(st->o->progress, s->pos, s->n);
        pthread_mutex_unlock(&st->mu);

        hash_slot(st, s);
        if (w->serialize)
            pthread_mutex_lock(w->fn_mu);
        rc = w->fn(w->ctx, s->lines, s->hashes, s->n);
        if (w->serialize)
            pthread_mutex_unlock(w->fn_mu);
        if (rc != 0) {
            pthread_mutex_lock(&st->mu);
            st->stop = 1;
            if (*w->rc == 0)
                *w->rc = rc;
            pthread_mutex_unlock(&st->mu);
            break;
        }
    }
    return NULL;
}

int cli_scan_parallel(const cli_scan_opts *o, int serialize, cli_batch_fn fn, void *ctx)
{
    scan_state *st;
    scan_worker *w;
    pthread_mutex_t fn_mu;
    size_t i, nw = o->threads > 1 ? (size_t)o->threads : 1, started;
    int rc = 0;

    for (i = 0; nw > 1 && i < o->nsrcs; i++)
        if (!cli_src_is_rereadable(&o->srcs[i]))
            nw = 1; /* see cli_scan */
    st = scan_new(o, 2 * nw);
    w = calloc(nw, sizeof *w);
    if (st == NULL || w == NULL) {
        if (st != NULL)
            scan_free(st);
        free(w);
        if (st != NULL)
            cli_error("out of memory");
        return EXIT_TROUBLE;
    }
    pthread_mutex_init(&fn_mu, NULL);
    for (i = 0; i < nw; i++) {
        w[i].st = st;
        w[i].id = i;
        w[i].fn = fn;
        w[i].ctx = ctx;
        w[i].serialize = serialize;
        w[i].fn_mu = &fn_mu;
        w[i].rc = &rc;
    }
    for (started = 1; started < nw; started++)
        if (pthread_create(&w[started].thread, NULL, worker_main, &w[started]) != 0)
            break;
    worker_main(&w[0]);
    for (i = 1; i < started; i++)
        pthread_join(w[i].thread, NULL);
    pthread_mutex_destroy(&fn_mu);
    free(w);
    scan_free(st);
    return rc;
}
