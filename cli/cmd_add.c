/*
 * cmd_add.c - amq add: add keys to a filter file.
 *
 * The file is locked (target.c).  Bloom-family filters saved with chunked
 * checksums are updated in place (amq/inplace.h): mapped, added to, and
 * only the changed 4 KiB chunks written, through a journal - the cost of
 * the keys, not of the file.  Other filters are read into memory, added
 * to, and the file is replaced atomically (saved with chunked checksums
 * when their kind allows, so that the next add is in place).  If anything
 * fails (a full fixed-size filter, a read error, a filter pushed past its
 * capacity without --allow-overfill) the file is left exactly as it was.
 */
#define AMQ_ADVANCED_API 1 /* kind predicates, set adds, counts that read no bit array */

#include <getopt.h>
#include <string.h>

#include "amq/inplace.h"
#include "cli.h"
#include "lineset.h"

/* The kinds that keep copies come between the two (usage()). */
static const char usage_head[] =
    "usage: amq add FILE [INPUT...] [--stats [--json]] [--allow-overfill]\n"
    "               [--duplicates | --skip-maybe-present] [--rewrite] [--progress] [-q]\n"
    "               [--now MS]\n"
    "\n"
    "Adds each line of the INPUTs (none or '-': standard input) to the filter in\n"
    "FILE and saves it atomically.  A trailing CR is not part of a key; the empty\n"
    "line is a key; " CLI_COMPRESSED " INPUTs are decompressed.  On any\n"
    "error FILE is left unchanged.  Concurrent adds to one FILE wait for each other.\n"
    "A quotient filter's growth under way is finished before the save, so that\n"
    "FILE holds one table, not both.\n"
    "The kinds that keep copies (a key added in two runs is stored twice):\n";

static const char usage_text[] =
    "\n"
    "  --stats            print keys read and keys new to the filter on standard error\n"
    "  --json             --stats as one JSON object (implies --stats)\n"
    "  --allow-overfill   save a filter that is past its capacity (its false-positive\n"
    "                     rate then exceeds the one it was created for); without it,\n"
    "                     such an add fails and FILE is left unchanged\n"
    "  --duplicates       kinds that keep copies: store a copy for every line, even a\n"
    "                     line repeated in this run's input (by default a repeat\n"
    "                     within the run, same 128-bit hash, is stored once; every\n"
    "                     other key is stored, whether or not the filter answers\n"
    "                     present)\n"
    "  --skip-maybe-present\n"
    "                     kinds that keep copies (the others store a key once\n"
    "                     anyway): skip a key the filter already answers\n"
    "                     'maybe present' for (RedisBloom's CF.ADDNX).  Hazard: a\n"
    "                     new key that is only a false positive is not stored, and\n"
    "                     removing the key it collided with makes it answer absent\n"
    "  --rewrite          save the whole file even when it could be updated in place\n"
    "  --progress         show progress on standard error even when it is not a terminal\n"
    "  -q, --quiet        no progress, no warnings\n"
    "  --now MS           aging filters by time: add at this time (ms since the Unix\n"
    "                     epoch; default: the clock)\n";

static void usage(void)
{
    const char *names[64];
    size_t n = cli_kind_names_if(names, 64, amq_kind_keeps_copies);

    fputs(usage_head, stdout);
    cli_help_names(stdout, "  ", names, n < 64 ? n : 64, NULL, NULL);
    fputs(usage_text, stdout);
}

typedef struct add_ctx {
    amq_filter *f;
    uint64_t keys, added, repeated, maybe;
    int status;
    int unique;     /* kinds that keep copies, without --duplicates: each distinct hash once, */
    hash_set seen;  /* by the exact hashes added in this run */
    int skip_maybe; /* --skip-maybe-present (kinds that keep copies) */
    int refused_known; /* a kind that keeps copies refused the key of hash refused */
    amq_hash128 refused;
    const char *path;
} add_ctx;

/* --skip-maybe-present: the library's set add (CF.ADDNX), one key at a
 * time so that a key twice in one batch is found the second time.  The
 * first error, or 0. */
static int add_skipping_maybe(add_ctx *c, const amq_hash128 *hashes, size_t n)
{
    size_t i;
    int rc;

    for (i = 0; i < n; i++) {
        rc = amq_filter_add_unique_hash(c->f, hashes[i]);
        if (rc < 0) {
            c->refused = hashes[i];
            c->refused_known = 1;
            return rc;
        }
        if (rc == 0)
            c->maybe++;
        else
            c->added++;
    }
    return 0;
}

/* The hashes of the batch not seen before in this run (exact 128-bit hash)
 * into out: their count, or -1 when out of memory. */
static ptrdiff_t drop_repeats(add_ctx *c, const amq_hash128 *hashes, size_t n, amq_hash128 *out)
{
    size_t i, m = 0;

    for (i = 0; i < n; i++) {
        switch (hash_set_add(&c->seen, hashes[i].h1, hashes[i].h2)) {
        case 1:
            out[m++] = hashes[i];
            break;
        case 0:
            c->repeated++;
            break;
        default:
            return -1;
        }
    }
    return (ptrdiff_t)m;
}

static int add_batch(void *vctx, const cli_line *lines, const amq_hash128 *hashes, size_t n)
{
    static uint8_t added[CLI_BATCH];
    static amq_hash128 fresh[CLI_BATCH];
    add_ctx *c = vctx;
    size_t i, m = n;
    int rc = 0;

    (void)lines;
    if (c->skip_maybe) {
        rc = add_skipping_maybe(c, hashes, n);
    } else {
        if (c->unique) {
            ptrdiff_t k = drop_repeats(c, hashes, n, fresh);
            if (k < 0) {
                cli_error("%s: out of memory for the set of %llu distinct keys of this run; "
                          "the file is left unchanged",
                          c->path, (unsigned long long)c->seen.count);
                c->status = AMQ_ENOMEM;
                return EXIT_TROUBLE;
            }
            m = (size_t)k;
            hashes = fresh;
        }
        if (m > 0) {
            uint64_t before, after, cap;
            amq_filter_counts(c->f, &before, &cap);
            rc = amq_filter_add_batch(c->f, hashes, m, added);
            /* a kind that keeps copies counts every key it takes: the refused
             * one comes next */
            amq_filter_counts(c->f, &after, &cap);
            if (rc == AMQ_EFULL && amq_kind_keeps_copies(amq_filter_kind(c->f)) &&
                after >= before && after - before < m) {
                c->refused = hashes[after - before];
                c->refused_known = 1;
            }
        }
        if (rc >= 0)
            for (i = 0; i < m; i++)
                c->added += added[i];
    }
    if (rc < 0) {
        c->status = rc;
        if (rc == AMQ_ELIMIT && cli_kind_unsized(amq_filter_kind(c->f))) {
            amq_stats st;
            amq_filter_stats(c->f, &st);
            cli_error("%s: the filter cannot grow further without its expected "
                      "false-positive rate passing its target of %g (at %llu items; one "
                      "created with a higher --fpp holds more) (within keys %llu..%llu of "
                      "this run); the file is left unchanged",
                      c->path, st.fpp_target, (unsigned long long)st.items,
                      (unsigned long long)c->keys + 1, (unsigned long long)(c->keys + n));
            return EXIT_TROUBLE;
        }
        if (rc == AMQ_ELIMIT && amq_filter_scuckoo(c->f) != NULL) {
            /* It said only "limit reached": which limit, and what reaches it. */
            amq_scuckoo_info in;
            amq_scuckoo_get_info(amq_filter_scuckoo(c->f), &in);
            cli_error("%s: the scalable cuckoo filter is at its limit of %llu links and a key of "
                      "this run found no room in them (its copies fill their buckets in every "
                      "link, or the links are full: create it with a larger --capacity or "
                      "--expansion) (within keys %llu..%llu of this run, %llu items); the file "
                      "is left unchanged",
                      c->path, (unsigned long long)in.max_links, (unsigned long long)c->keys + 1,
                      (unsigned long long)(c->keys + n), (unsigned long long)in.items);
            return EXIT_TROUBLE;
        }
        if (rc == AMQ_ERANGE && amq_filter_partitioned(c->f) != NULL) {
            const amq_partitioned *p = amq_filter_partitioned(c->f);
            uint32_t total, first, np = amq_partitioned_partitions(p);
            amq_partitioned_slice_info(p, &total, &first);
            if (total != np) {
                cli_error("%s: a key of this run is not in this slice's partitions (%u to %u "
                          "of %u): add it to its own slice, or to the joined filter (amq "
                          "import --from redis --shards N IN OUT) (within keys %llu..%llu of "
                          "this run); the file is left unchanged",
                          c->path, first, first + np - 1, total,
                          (unsigned long long)c->keys + 1, (unsigned long long)(c->keys + n));
                return EXIT_TROUBLE;
            }
        }
        if (rc == AMQ_EFULL && c->refused_known) {
            const uint32_t kind = amq_filter_kind(c->f);
            uint32_t why = AMQ_REFUSAL_FULL;
            const char *limit = kind == AMQ_KIND_EXPANDABLE
                                    ? "an expandable filter keeps 32 of one key"
                                : kind == AMQ_KIND_CUCKOO
                                    ? "a cuckoo filter keeps 2b + 1 of one key, b its bucket size"
                                    : "a scalable cuckoo filter keeps one key's copies in its two "
                                      "buckets of the newest link, and grows for no key's copies";
            amq_stats st;
            (void)amq_filter_refusal_hash(c->f, c->refused, &why); /* AMQ_ENOMEM: "full" */
            amq_filter_stats(c->f, &st);
            if (why == AMQ_REFUSAL_COPIES || why == AMQ_REFUSAL_OTHER_COPIES) {
                /* a cuckoo filter's victim may be a copy of a key of an earlier run */
                cli_error("%s: a key %sis stored too many times already (each add keeps a copy; "
                          "%s) (within keys %llu..%llu of this run, %llu items); the file is "
                          "left unchanged",
                          c->path, why == AMQ_REFUSAL_COPIES ? "of this run " : "", limit,
                          (unsigned long long)c->keys + 1, (unsigned long long)(c->keys + n),
                          (unsigned long long)st.items);
                return EXIT_TROUBLE;
            }
            if (why == AMQ_REFUSAL_FULL && kind == AMQ_KIND_EXPANDABLE) {
                /* it grows: what refuses a key is its bucket crowded */
                cli_error("%s: too many keys fall in the bucket of a key of this run (an "
                          "expandable filter keeps 256 stashed entries of a full bucket: keys "
                          "crowded by a weak hash or chosen against the seed) (within keys "
                          "%llu..%llu of this run, %llu items); the file is left unchanged",
                          c->path, (unsigned long long)c->keys + 1,
                          (unsigned long long)(c->keys + n), (unsigned long long)st.items);
                return EXIT_TROUBLE;
            }
        }
        cli_error("%s: %s (within keys %llu..%llu of this run); the file is left unchanged",
                  c->path, amq_strerror(rc), (unsigned long long)c->keys + 1,
                  (unsigned long long)(c->keys + n));
        return EXIT_TROUBLE;
    }
    c->keys += n;
    return 0;
}

int cmd_add(int argc, char **argv)
{
    enum { O_STATS = 256, O_PROGRESS, O_OVERFILL, O_DUPS, O_MAYBE, O_JSON, O_NOW };
    static const struct option opts[] = {
        {"stats", no_argument, NULL, O_STATS},
        {"json", no_argument, NULL, O_JSON},
        {"allow-overfill", no_argument, NULL, O_OVERFILL},
        {"duplicates", no_argument, NULL, O_DUPS},
        {"skip-maybe-present", no_argument, NULL, O_MAYBE},
        {"rewrite", no_argument, NULL, 'R'},
        {"progress", no_argument, NULL, O_PROGRESS},
        {"quiet", no_argument, NULL, 'q'},
        {"now", required_argument, NULL, O_NOW},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    amq_errinfo err;
    amq_stats st;
    add_ctx c;
    cli_target t;
    cli_progress *pg;
    int opt, rc, stats = 0, json = 0, progress = 0, quiet = 0, overfill = 0, dups = 0;
    int rewrite = 0, now_given = 0;
    amq_inplace *ip = NULL;
    uint64_t written = 0, now = 0;

    memset(&c, 0, sizeof c);
    while ((opt = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (opt) {
        case O_STATS:
            stats = 1;
            break;
        case O_JSON:
            json = stats = 1; /* the stats as JSON: asking for it asks for them */
            break;
        case O_OVERFILL:
            overfill = 1;
            break;
        case O_DUPS:
            dups = 1;
            break;
        case O_MAYBE:
            c.skip_maybe = 1;
            break;
        case 'R':
            rewrite = 1;
            break;
        case O_PROGRESS:
            progress = 1;
            break;
        case O_NOW:
            if (cli_parse_now("--now", optarg, &now) != 0)
                return EXIT_TROUBLE;
            now_given = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            usage();
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (dups && c.skip_maybe) {
        cli_error("add: --duplicates stores every copy, --skip-maybe-present skips keys that "
                  "may be in: give one of them");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    if (optind >= argc) {
        cli_error("add: missing FILE");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    c.path = argv[optind];
    if (cli_target_open(&t, c.path, CLI_TARGET_UPDATE | (quiet ? CLI_TARGET_QUIET : 0u)) != 0)
        return EXIT_TROUBLE;
    rc = rewrite ? AMQ_EUNSUPPORTED : amq_inplace_open(t.real, &c.f, &ip, &err);
    if (rc == AMQ_EUNSUPPORTED) {
        rc = amq_filter_open(t.real, 0, NULL, &c.f, &err);
        if (rc == AMQ_OK && amq_kind_updates_in_place(amq_filter_kind(c.f)))
            amq_filter_set_chunked_checksum(c.f, 1);
    }
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, NULL);
        cli_target_release(&t);
        return EXIT_TROUBLE;
    }
    if (cli_refuse_static(c.f, c.path, "add")) {
        amq_filter_free(c.f);
        amq_inplace_close(ip);
        cli_target_release(&t);
        return EXIT_TROUBLE;
    }
    if (cli_aging_time_mode(c.f)) {
        rc = amq_aging_advance(c.f, now_given ? now : cli_now_ms());
    } else if (now_given) {
        cli_error("add: --now applies to aging filters that age by time; %s does not", c.path);
        rc = AMQ_EUNSUPPORTED;
    }
    if (rc != AMQ_OK) {
        if (!now_given || cli_aging_time_mode(c.f))
            cli_error("%s: %s", c.path, amq_strerror(rc));
        amq_filter_free(c.f);
        amq_inplace_close(ip);
        cli_target_release(&t);
        return EXIT_TROUBLE;
    }
    if (!amq_kind_keeps_copies(amq_filter_kind(c.f)))
        c.skip_maybe = 0; /* only kinds that keep copies (an aging add must refresh its key) */
    c.unique = amq_kind_keeps_copies(amq_filter_kind(c.f)) && !dups && !c.skip_maybe;
    if (c.unique && hash_set_init(&c.seen, 0) != 0) {
        cli_error("add: out of memory");
        amq_filter_free(c.f);
        amq_inplace_close(ip);
        cli_target_release(&t);
        return EXIT_TROUBLE;
    }
    pg = cli_progress_start(cli_progress_mode(progress, quiet), "add", 0);
    rc = cli_for_each_batch_ex(c.f, argv + optind + 1, argc - optind - 1, pg, add_batch, &c);
    cli_progress_end(pg);
    memset(&st, 0, sizeof st);
    amq_filter_counts(c.f, &st.items, &st.capacity);
    if (rc == 0 && st.capacity > 0 && st.items > st.capacity &&
        amq_kind_has_capacity(amq_filter_kind(c.f))) {
        amq_filter_stats(c.f, &st); /* the rates, for the message */
        if (!overfill) {
            cli_error("%s: %llu items would be over its capacity of %llu (false-positive rate "
                      "%.3g, created for %.3g); nothing changed: use a larger filter, or "
                      "--allow-overfill",
                      c.path, (unsigned long long)st.items, (unsigned long long)st.capacity,
                      st.fpp_now, st.fpp_target);
            rc = EXIT_TROUBLE;
        } else if (!quiet && st.fpp_now > st.fpp_target) {
            cli_warn("%s holds %llu items, over its capacity of %llu: false-positive rate now "
                     "%.3g (target %.3g)",
                     c.path, (unsigned long long)st.items, (unsigned long long)st.capacity,
                     st.fpp_now, st.fpp_target);
        }
    }
    if (rc == 0 && ip == NULL)
        cli_settle(c.f, c.path, quiet); /* else saved, a growth would hold both tables */
    if (rc == 0 && ip != NULL) {
        /* A Ctrl-C here would leave the journal beside the file: the commit
         * finishes (and removes it), then the signal acts. */
        int irc;
        cli_signals_hold();
        irc = amq_inplace_commit(ip, c.f, &written, &err);
        cli_signals_release();
        if (irc == AMQ_EUNSUPPORTED) {
            /* Saved whole from the view (the map is unmapped at the end). */
            if (cli_target_write_filter(&t, c.f) != 0)
                rc = EXIT_TROUBLE;
        } else if (irc != AMQ_OK) {
            cli_lib_error(irc, &err, NULL);
            rc = EXIT_TROUBLE;
        }
    } else if (rc == 0 && cli_target_write_filter(&t, c.f) != 0) {
        rc = EXIT_TROUBLE;
    }
    cli_target_release(&t);
    if (rc == 0 && stats) {
        if (json) {
            amq_filter_stats(c.f, &st); /* fpp_now: counts the bits set */
            fputs("{\"file\": ", stderr);
            cli_json_string(stderr, c.path);
            fprintf(stderr,
                    ", \"keys_read\": %llu, \"keys_new\": %llu, "
                    "\"keys_skipped\": %llu, \"keys_repeated\": %llu, "
                    "\"keys_maybe_present\": %llu, \"items\": %llu, \"capacity\": %llu, "
                    "\"fpp_now\": %.6g}\n",
                    (unsigned long long)c.keys, (unsigned long long)c.added,
                    (unsigned long long)(c.repeated + c.maybe), (unsigned long long)c.repeated,
                    (unsigned long long)c.maybe, (unsigned long long)st.items,
                    (unsigned long long)st.capacity, st.fpp_now);
        } else if (c.repeated > 0)
            fprintf(stderr, "%s: %llu keys read, %llu new, %llu repeated in the input; %llu "
                    "items\n", c.path, (unsigned long long)c.keys, (unsigned long long)c.added,
                    (unsigned long long)c.repeated, (unsigned long long)st.items);
        else if (c.maybe > 0)
            fprintf(stderr, "%s: %llu keys read, %llu new, %llu skipped as maybe present; %llu "
                    "items\n", c.path, (unsigned long long)c.keys, (unsigned long long)c.added,
                    (unsigned long long)c.maybe, (unsigned long long)st.items);
        else
            fprintf(stderr, "%s: %llu keys read, %llu new; %llu items\n", c.path,
                    (unsigned long long)c.keys, (unsigned long long)c.added,
                    (unsigned long long)st.items);
    }
    hash_set_free(&c.seen);
    amq_filter_free(c.f);
    amq_inplace_close(ip);
    return rc == 0 ? 0 : EXIT_TROUBLE;
}
