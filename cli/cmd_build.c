/*
 * cmd_build.c - amq build: a filter file sized for, and filled with, the
 * distinct keys of the INPUTs.
 *
 * Without --capacity the keys are counted first (a pass over the input;
 * pipes are copied to a temporary file to be read twice):
 *   - exactly, with a set of 64-bit hashes, up to EXACT_LIMIT distinct keys;
 *   - beyond, by HyperLogLog with 2^16 one-byte registers (standard error
 *     1.04 / 256 = 0.41 %), and the capacity is the estimate plus three
 *     standard errors (+1.22 %), so that the filter meets its false-positive
 *     target unless the estimate is off by more than 3 sigma (p < 0.0014).
 * Then the filter is created for that capacity and filled.  Threads: each
 * reads a batch in turn, hashes it and adds it; kinds that have a
 * concurrent mode (blocked Bloom, partitioned: atomic OR) are switched to
 * it and add in parallel, the others one batch at a time.  Cuckoo filters, which store a copy per add and support removal,
 * get each distinct key exactly once: keys are deduplicated by a set of
 * their whole 128-bit hashes (not by asking the filter, whose false
 * positives would leave keys out - and removing such a key later would
 * remove another key's fingerprint; nor by a 64-bit digest, whose
 * collisions would leave out keys the filter tells apart).  So do aging
 * filters, whose window (sized for the distinct keys) every add moves.
 */
#define AMQ_ADVANCED_API 1 /* kind predicates */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lineset.h"

#include "amq/guava.h"

static const char usage_text[] =
    "usage: amq build FILE [INPUT...] [--type TYPE] [--fpp P] [--capacity N]\n"
    "                 [--guava] [--redisbloom] [--hash ALGO] [--seed S] [--threads T]\n"
    "                 [--force] [--allow-overfill] [--stats [--json]] [--progress]\n"
    "                 [--quiet]\n"
    "\n"
    "Creates FILE holding a filter of the keys (lines) of the INPUTs (none or '-':\n"
    "standard input; " CLI_COMPRESSED " input is decompressed), sized for the\n"
    "number of distinct keys: counted exactly up to 1,000,000, estimated above\n"
    "(HyperLogLog, plus a margin of three standard errors, 1.2 %), unless --capacity\n"
    "is given.  A filter of fixed size that the keys take past its capacity (more\n"
    "keys than --capacity, or an input grown since it was counted) is refused, FILE\n"
    "not written, unless --allow-overfill.  The kinds that keep copies (cuckoo,\n"
    "expandable, ...: 'amq add --help') and aging filters get each distinct key\n"
    "once (an aging filter's window is the distinct keys: a repeat would move it).\n"
    "FILE '-' (or /dev/stdout, /dev/fd/N: an open descriptor) writes the filter\n"
    "to it.\n"
    "\n";

/* After the --type line, which lists the kinds built in. */
static const char usage_options[] =
    "                   fuse or ribbon: a static filter near the space bound, built\n"
    "                   from the keys it gets (no counting pass; hashes beyond 256 MiB\n"
    "                   are spilled to $TMPDIR, 8 bytes per key); fuse has 8-bit\n"
    "                   fingerprints (fpp 1/256) unless --fpp is below 1/256 (16 bits,\n"
    "                   1.53e-05; a lower --fpp is refused)\n"
    "  --fpp P          target false-positive rate (default 0.01; scalable-cuckoo:\n"
    "                   its fingerprints' rate a link, 1.23e-4 (RedisBloom's 0.0156);\n"
    "                   a lower P is refused)\n"
    "  --capacity N     size for N keys instead of counting them (one pass)\n"
    "  --allow-overfill save a filter that is past its capacity (its false-positive\n"
    "                   rate then exceeds the one it was created for); without it,\n"
    "                   such a build fails and FILE is not written\n"
    "  --guava          a classic Bloom filter in Guava's layout (sizing, murmur3\n"
    "                   probes), for 'amq export --to guava'\n"
    "  --redisbloom     scalable-bloom, scalable-cuckoo: RedisBloom's layout and\n"
    "                   hashing, for 'amq export --to redis'\n"
    ;

/* After the --hash line, which lists the library's hashes. */
static const char usage_options_tail[] =
    "  --seed S         hash seed (default 0)\n"
    "  --threads T      threads (default: one per idle core; kinds that cannot take\n"
    "                   concurrent adds still hash in parallel)\n"
    "  --force          replace FILE if it exists\n"
    "  --json           --stats as one JSON object (implies --stats)\n"
    "  --stats          print keys read, distinct keys, capacity and the filter on\n"
    "                   standard error\n"
    "  --progress       show progress on standard error even when not a terminal\n"
    "  -q, --quiet      no progress\n";

#define EXACT_LIMIT 1000000u

typedef struct build {
    /* counting */
    uint8_t hll[CLI_HLL_REGS];
    cand_set exact;
    int exact_on;
    uint64_t keys[CLI_BATCH];
    uint64_t nkeys;
    /* filling */
    atomic_uint_least64_t filled; /* lines read by the filling pass */
    int count_too;                /* --capacity --stats: the filling pass counts them */
    amq_filter *f;
    int unique;     /* kinds that keep copies: each distinct key once ... */
    hash_set added; /* ... by the 128-bit hashes added so far */
    const char *path;
} build;

/* ---- counting distinct keys ------------------------------------------------------ */

static void hash_for_count(void *ctx, const cli_line *lines, size_t n, amq_hash128 *out)
{
    size_t i;
    (void)ctx;
    for (i = 0; i < n; i++)
        out[i].h1 = amq_xxh3_64(lines[i].data, lines[i].key_len, 0);
}

static int count_batch(void *ctx, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    build *b = ctx;
    size_t i;

    (void)lines;
    for (i = 0; i < n; i++) {
        cli_hll_add(b->hll, h[i].h1);
        b->keys[i] = lineset_key(h[i].h1);
    }
    b->nkeys += n;
    if (b->exact_on) {
        if (cand_add_batch(&b->exact, b->keys, n) != 0 || b->exact.count > EXACT_LIMIT) {
            cand_free(&b->exact);
            b->exact_on = 0;
        }
    }
    return 0;
}

/* The distinct keys counted (exactly, or HyperLogLog's estimate plus
 * three standard errors into *distinct and the estimate into *estimate);
 * 1 if counted exactly. */
static int count_result(build *b, uint64_t *distinct, double *estimate)
{
    if (b->exact_on) {
        *distinct = b->exact.count;
        cand_free(&b->exact);
        b->exact_on = 0;
        return 1;
    }
    *estimate = cli_hll_estimate(b->hll);
    *distinct = (uint64_t)ceil(*estimate * (1.0 + 3.0 * CLI_HLL_ERROR));
    return 0;
}

/* ---- filling ----------------------------------------------------------------------- */

static void hash_for_filter(void *ctx, const cli_line *lines, size_t n, amq_hash128 *out)
{
    const amq_filter *f = ctx;
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = amq_filter_hash(f, lines[i].data, lines[i].key_len);
}

static int full_error(build *b, int rc)
{
    amq_stats st;
    amq_filter_stats(b->f, &st);
    if (rc == AMQ_EFULL)
        cli_error("build: %s: the filter is full after %llu keys (capacity %llu); give a "
                  "larger --capacity", b->path, (unsigned long long)st.items,
                  (unsigned long long)st.capacity);
    else
        cli_error("build: %s: %s", b->path, amq_strerror(rc));
    return EXIT_TROUBLE;
}

static int fill_batch(void *ctx, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    static amq_hash128 count_h[CLI_BATCH]; /* count_too: batches come one at a time */
    build *b = ctx;
    size_t i;
    int rc;

    atomic_fetch_add(&b->filled, (uint_least64_t)n);
    if (b->count_too) {
        hash_for_count(NULL, lines, n, count_h);
        count_batch(b, lines, count_h, n);
    }
    if (!b->unique) {
        rc = amq_filter_add_batch(b->f, h, n, NULL);
        return rc < 0 ? full_error(b, rc) : 0;
    }
    for (i = 0; i < n; i++) {
        rc = hash_set_add(&b->added, h[i].h1, h[i].h2);
        if (rc < 0) {
            cli_error("build: out of memory for the set of %llu distinct keys",
                      (unsigned long long)b->added.count);
            return EXIT_TROUBLE;
        }
        if (rc == 0)
            continue;
        rc = amq_filter_add_hash(b->f, h[i]);
        if (rc < 0)
            return full_error(b, rc);
    }
    return 0;
}

/* As add: a filter of fixed size the keys took past its capacity is an
 * error unless overfill (then a warning unless quiet); 1 if refused. */
static int overfilled(build *b, uint32_t kind, int counted, int overfill, int quiet)
{
    amq_stats st;

    memset(&st, 0, sizeof st);
    amq_filter_counts(b->f, &st.items, &st.capacity);
    if (!amq_kind_has_capacity(kind) || st.capacity == 0 || st.items <= st.capacity)
        return 0;
    amq_filter_stats(b->f, &st); /* the rates, for the message */
    if (!overfill) {
        cli_error("build: %s: %llu items from %llu lines read are over its capacity of %llu%s "
                  "(false-positive rate %.3g, target %.3g); nothing written: give a larger "
                  "--capacity%s, or --allow-overfill",
                  b->path, (unsigned long long)st.items, (unsigned long long)b->nkeys,
                  (unsigned long long)st.capacity,
                  counted ? ", the keys counted before the input grew" : "", st.fpp_now,
                  st.fpp_target, counted ? "" : " (or none: the keys are then counted)");
        return 1;
    }
    if (!quiet && st.fpp_now > st.fpp_target)
        cli_warn("%s holds %llu items, over its capacity of %llu: false-positive rate now "
                 "%.3g (target %.3g)",
                 b->path, (unsigned long long)st.items, (unsigned long long)st.capacity,
                 st.fpp_now, st.fpp_target);
    return 0;
}

/* ---- static kinds: every key into a builder, then one build ---------------------------- */

static void hash_for_static(void *ctx, const cli_line *lines, size_t n, amq_hash128 *out)
{
    const amq_config *cfg = ctx;
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = amq_hash_key(cfg->hash_algo, cfg->seed, lines[i].data, lines[i].key_len);
}

typedef struct static_fill {
    amq_builder *b;
    uint64_t keys;
} static_fill;

static int static_batch(void *ctx, const cli_line *lines, const amq_hash128 *h, size_t n)
{
    static_fill *sf = ctx;
    int rc;
    (void)lines;
    errno = 0;
    rc = amq_builder_add_batch(sf->b, h, n);
    if (rc == AMQ_EIO || rc == AMQ_ENOSPC) {
        /* The builder spills to $TMPDIR; its errno says why (a missing directory, a full disk). */
        int e = errno;
        const char *dir = getenv("TMPDIR");
        if (dir == NULL || *dir == '\0')
            dir = "/tmp";
        cli_error("build: after %llu keys: cannot write the keys' hashes to temporary files in "
                  "%s ($TMPDIR, default /tmp): %s",
                  (unsigned long long)sf->keys, dir, e != 0 ? strerror(e) : amq_strerror(rc));
        return EXIT_TROUBLE;
    }
    if (rc != AMQ_OK) {
        cli_error("build: after %llu keys: %s", (unsigned long long)sf->keys, amq_strerror(rc));
        return EXIT_TROUBLE;
    }
    sf->keys += n;
    return 0;
}

static int build_static(build *b, amq_config *cfg, cli_scan_opts *o, cli_progress *pg)
{
    static_fill sf;
    amq_errinfo err;
    int rc;

    memset(&err, 0, sizeof err);
    memset(&sf, 0, sizeof sf);
    rc = amq_builder_new(cfg, NULL, 0, &sf.b, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, "build");
        return -1;
    }
    o->hash = hash_for_static;
    o->hash_ctx = cfg;
    rc = cli_scan_parallel(o, 1, static_batch, &sf);
    if (rc == 0) {
        cli_progress_phase(pg, "build: building the filter", 0);
        rc = amq_builder_finish(sf.b, &b->f, &err);
        if (rc != AMQ_OK) {
            cli_lib_error(rc, &err, "build");
            rc = -1;
        }
    }
    b->nkeys = sf.keys;
    amq_builder_free(sf.b);
    return rc == 0 ? 0 : -1;
}

/* ---- the command ------------------------------------------------------------------------ */

/* counted: cfg->capacity is the keys counted, not a --capacity given. */
static int create_filter(build *b, const char *type, uint32_t kind, int guava,
                         amq_config *cfg, int counted)
{
    amq_bloom_params p;
    amq_bloom *bl;
    amq_errinfo err;
    int rc;

    memset(&err, 0, sizeof err);
    if (guava) {
        rc = amq_guava_params_for(cfg->capacity, cfg->fpp, &p);
        if (rc != AMQ_OK) {
            cli_error("build: Guava cannot size a filter for %llu keys at rate %g",
                      (unsigned long long)cfg->capacity, cfg->fpp);
            return -1;
        }
        rc = amq_bloom_new(&p, NULL, &bl);
        if (rc == AMQ_OK)
            rc = amq_filter_from_bloom(bl, &b->f);
        if (rc != AMQ_OK) {
            cli_error("build: %s", amq_strerror(rc));
            return -1;
        }
    } else {
        cfg->kind = kind;
        rc = amq_filter_new(cfg, &b->f, &err);
        if (rc == AMQ_ERANGE && counted && cli_kind_unsized(kind)) {
            /* a count is only where a kind that grows starts: one under the least start it
             * takes (pocket's 64 keys) starts it where the library does */
            amq_config start;
            amq_config_init(&start, kind);
            if (cfg->capacity < start.capacity) {
                cfg->capacity = start.capacity;
                memset(&err, 0, sizeof err);
                rc = amq_filter_new(cfg, &b->f, &err);
            }
        }
        if (rc != AMQ_OK) {
            cli_lib_error(rc, &err, "build");
            return -1;
        }
    }
    (void)type;
    /* An aging filter too: every add moves its window, sized for the distinct
     * keys, so a repeat would push the first keys out of it. */
    b->unique = amq_kind_keeps_copies(kind) || kind == AMQ_KIND_AGING;
    if (b->unique && hash_set_init(&b->added, cfg->capacity) != 0) {
        cli_error("build: out of memory for the set of distinct keys");
        return -1;
    }
    return 0;
}

int cmd_build(int argc, char **argv)
{
    enum { O_TYPE = 256, O_FPP, O_CAPACITY, O_GUAVA, O_HASH, O_SEED, O_THREADS, O_FORCE,
           O_STATS, O_PROGRESS, O_REDISBLOOM, O_OVERFILL };
    static const struct option opts[] = {
        {"type", required_argument, NULL, O_TYPE},
        {"fpp", required_argument, NULL, O_FPP},
        {"capacity", required_argument, NULL, O_CAPACITY},
        {"guava", no_argument, NULL, O_GUAVA},
        {"redisbloom", no_argument, NULL, O_REDISBLOOM},
        {"hash", required_argument, NULL, O_HASH},
        {"seed", required_argument, NULL, O_SEED},
        {"threads", required_argument, NULL, O_THREADS},
        {"force", no_argument, NULL, O_FORCE},
        {"allow-overfill", no_argument, NULL, O_OVERFILL},
        {"stats", no_argument, NULL, O_STATS},
        {"json", no_argument, NULL, 'J'},
        {"progress", no_argument, NULL, O_PROGRESS},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static build b;
    int json = 0;
    const char *type = "bloom";
    struct timespec t0, t1;
    amq_config cfg;
    amq_stats st;
    cli_scan_opts o;
    cli_progress *pg = NULL;
    cli_src *srcs = NULL;
    size_t nsrcs = 0;
    uint32_t kind;
    uint64_t v, distinct = 0, total;
    double estimate = 0.0;
    int opt, rc = EXIT_TROUBLE, guava = 0, force = 0, stats = 0, progress = 0, quiet = 0;
    int hash_given = 0, algo_given = 0, threads = 0, counted_exactly = 0, overfill = 0;
    int counted_at_all, fpp_given = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(&b, 0, sizeof b);
    atomic_init(&b.filled, 0);
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 0;
    while ((opt = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (opt) {
        case O_TYPE:
            type = optarg;
            break;
        case O_FPP:
            if (cli_parse_fpp("--fpp", optarg, &cfg.fpp) != 0)
                return EXIT_TROUBLE;
            fpp_given = 1;
            break;
        case O_CAPACITY:
            if (cli_parse_capacity("--capacity", optarg, &cfg.capacity) != 0)
                return EXIT_TROUBLE;
            break;
        case O_GUAVA:
            guava = 1;
            break;
        case O_HASH:
            if (cli_parse_hash_algo("--hash", optarg, &cfg.hash_algo) != 0)
                return EXIT_TROUBLE;
            hash_given = algo_given = 1;
            break;
        case O_SEED:
            if (cli_parse_u64("--seed", optarg, &cfg.seed) != 0)
                return EXIT_TROUBLE;
            hash_given = 1;
            break;
        case O_THREADS:
            if (cli_parse_uint("--threads", optarg, 1, 1024, &v) != 0)
                return EXIT_TROUBLE;
            threads = (int)v;
            break;
        case O_FORCE:
            force = 1;
            break;
        case O_OVERFILL:
            overfill = 1;
            break;
        case O_REDISBLOOM:
            cfg.redisbloom = 1;
            break;
        case O_STATS:
            stats = 1;
            break;
        case 'J':
            json = stats = 1; /* the stats as JSON: asking for it asks for them */
            break;
        case O_PROGRESS:
            progress = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            cli_help_kinds(stdout, "  --type TYPE      ", 0, ";");
            fputs(usage_options, stdout);
            cli_help_hashes(stdout, "  --hash ALGO      ");
            fputs(usage_options_tail, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (optind >= argc) {
        cli_error("build: missing FILE");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    b.path = argv[optind];
    if (amq_kind_from_name(type, &kind) != AMQ_OK) {
        cli_error("build: unknown --type '%s'", type);
        cli_help_kinds(cli_stderr(), "amq: kinds: ", 0, NULL);
        return EXIT_TROUBLE;
    }
    if (!algo_given)
        cfg.hash_algo = cli_default_hash(kind);
    if (guava && (kind != AMQ_KIND_BLOOM || hash_given)) {
        cli_error("build: --guava makes a classic Bloom filter hashed as Guava does; it "
                  "takes no --type other than bloom, no --hash or --seed");
        return EXIT_TROUBLE;
    }
    if (cfg.redisbloom && (!amq_kind_has_redisbloom_mode(kind) || hash_given)) {
        cli_error("build: --redisbloom makes a scalable filter in RedisBloom's layout, hashed "
                  "as RedisBloom does; it takes --type scalable-bloom or scalable-cuckoo, no "
                  "--hash or --seed");
        return EXIT_TROUBLE;
    }
    if (amq_hash_check(cfg.hash_algo, cfg.seed) != AMQ_OK) {
        cli_error("build: --hash %s cannot take --seed %llu", amq_hash_algo_name(cfg.hash_algo),
                  (unsigned long long)cfg.seed);
        return EXIT_TROUBLE;
    }
    /* Refuse early, before reading gigabytes. */
    if (cli_check_output(b.path, force) != 0)
        return EXIT_TROUBLE;
    cfg.kind = kind;
    if (fpp_given && cli_check_fpp_met("build", &cfg, 0) != 0)
        return EXIT_TROUBLE;
    if (amq_kind_is_static(kind) && cfg.capacity != 0) {
        cli_error("build: --capacity does not apply to --type %s: a static filter is sized "
                  "for the keys it is built from", type);
        return EXIT_TROUBLE;
    }
    srcs = cli_srcs_from_args(argv + optind + 1, argc - optind - 1, &nsrcs);
    if (srcs == NULL)
        return EXIT_TROUBLE;
    pg = cli_progress_start(cli_progress_mode(progress, quiet), "build", 0);
    memset(&o, 0, sizeof o);
    o.srcs = srcs;
    o.nsrcs = nsrcs;
    o.threads = cli_threads(threads);
    o.progress = pg;

    if (amq_kind_is_static(kind)) {
        cfg.kind = kind;
        cli_progress_phase(pg, "build: reading the keys", cli_srcs_bytes(srcs, nsrcs));
        if (build_static(&b, &cfg, &o, pg) != 0)
            goto done;
        /* The construction drops repeated hashes: its items are the distinct keys. */
        amq_filter_stats(b.f, &st);
        distinct = cfg.capacity = st.items;
        counted_exactly = 1;
        goto save;
    }
    counted_at_all = cfg.capacity == 0;
    if (cfg.capacity == 0) {
        if (cli_srcs_make_rereadable(srcs, nsrcs, pg) != 0)
            goto done;
        total = cli_srcs_bytes(srcs, nsrcs);
        if (cand_init(&b.exact, 65536) != 0) {
            cli_error("out of memory");
            goto done;
        }
        b.exact_on = 1;
        cli_progress_phase(pg, "build: counting distinct keys", total);
        o.hash = hash_for_count;
        if (cli_scan_parallel(&o, 1, count_batch, &b) != 0)
            goto done;
        counted_exactly = count_result(&b, &distinct, &estimate);
        cfg.capacity = distinct > 0 ? distinct : 1;
        cli_progress_phase(pg, "build: filling the filter", total);
    } else {
        cli_progress_phase(pg, "build", cli_srcs_bytes(srcs, nsrcs));
        if (stats) {
            /* The one pass counts too (one batch at a time), for --stats. */
            if (cand_init(&b.exact, 65536) != 0) {
                cli_error("out of memory");
                goto done;
            }
            b.exact_on = 1;
            b.count_too = 1;
        }
    }
    if (create_filter(&b, type, kind, guava, &cfg, counted_at_all) != 0)
        goto done;
    o.hash = hash_for_filter;
    o.hash_ctx = b.f;
    if (cli_scan_parallel(&o, b.unique || b.count_too || !cli_filter_concurrent_adds(b.f),
                          fill_batch, &b) != 0)
        goto done;
    b.nkeys = atomic_load(&b.filled);
    if (b.count_too)
        counted_exactly = count_result(&b, &distinct, &estimate);
    if (overfilled(&b, kind, counted_at_all, overfill, quiet))
        goto done;
    if (kind == AMQ_KIND_AGING && counted_at_all && b.added.count > cfg.capacity) {
        cli_error("build: %s: %llu distinct keys, more than the window of %llu counted (the "
                  "input grew between the counting and the filling pass): the first keys "
                  "would be forgotten; nothing written",
                  b.path, (unsigned long long)b.added.count, (unsigned long long)cfg.capacity);
        goto done;
    }
    /* An aging filter past its window forgets its first keys: the build would not hold the
     * keys it was built from (it was saved, most keys answering absent). */
    if (kind == AMQ_KIND_AGING && !counted_at_all && b.added.count > cfg.capacity) {
        if (!overfill) {
            cli_error("build: %s: %llu distinct keys, more than its window of %llu adds "
                      "(--capacity): the first %llu would be forgotten; nothing written: give a "
                      "larger --capacity (or none: the keys are then counted), or "
                      "--allow-overfill",
                      b.path, (unsigned long long)b.added.count, (unsigned long long)cfg.capacity,
                      (unsigned long long)(b.added.count - cfg.capacity));
            goto done;
        }
        if (!quiet)
            cli_warn("%s: %llu distinct keys in a window of %llu adds: up to the first %llu "
                     "answer as keys never added",
                     b.path, (unsigned long long)b.added.count, (unsigned long long)cfg.capacity,
                     (unsigned long long)(b.added.count - cfg.capacity));
    }
save:
    cli_progress_end(pg);
    pg = NULL;
    cli_settle(b.f, b.path, quiet); /* a --capacity under the keys: a growth may be under way */
    if (cli_save_filter(b.path, b.f, force ? CLI_TARGET_FORCE : 0) != 0)
        goto done;
    rc = 0;
    if (stats) {
        char human[32];
        amq_filter_stats(b.f, &st);
        cli_human_bytes(st.bytes, human, sizeof human);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (json) {
            fputs("{\"file\": ", stderr);
            cli_json_string(stderr, b.path);
            fprintf(stderr,
                    ", \"keys_read\": %llu, \"distinct_keys\": %llu, \"counted_exactly\": %s, "
                    "\"capacity\": %llu, \"kind\": \"%s\", \"bytes\": %llu, "
                    "\"fpp_target\": %.6g, \"items\": %llu, \"seconds\": %.3f}\n",
                    (unsigned long long)b.nkeys, (unsigned long long)distinct,
                    counted_exactly ? "true" : "false", (unsigned long long)cfg.capacity,
                    amq_kind_name(st.kind), (unsigned long long)st.bytes, st.fpp_target,
                    (unsigned long long)st.items,
                    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
        } else {
            if (b.nkeys > 0)
                fprintf(stderr, "keys read:        %llu\n", (unsigned long long)b.nkeys);
            if (counted_exactly)
                fprintf(stderr, "distinct keys:    %llu (counted exactly)\n",
                        (unsigned long long)distinct);
            else if (estimate > 0)
                fprintf(stderr, "distinct keys:    about %.0f (HyperLogLog; sized for %llu)\n",
                        estimate, (unsigned long long)distinct);
            fprintf(stderr, "capacity:         %llu\n", (unsigned long long)cfg.capacity);
            fprintf(stderr, "filter:           %s, %llu bytes (%s), fpp %g at capacity\n",
                    amq_kind_name(st.kind), (unsigned long long)st.bytes, human, st.fpp_target);
            fprintf(stderr, "items:            %llu\n", (unsigned long long)st.items);
            fprintf(stderr, "time:             %.2f s\n",
                    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
        }
    }
done:
    cli_progress_end(pg);
    amq_filter_free(b.f);
    cand_free(&b.exact);
    hash_set_free(&b.added);
    cli_srcs_release(srcs, nsrcs);
    free(srcs);
    return rc;
}
