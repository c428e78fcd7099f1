/*
 * cmd_info.c - amq info: describe a filter file.
 */
#include <getopt.h>
#include <math.h>
#include <string.h>

#include "cli.h"

/* The kinds that need no capacity come between the two (usage()). */
static const char usage_head[] =
    "usage: amq info FILE [--json]\n"
    "\n"
    "Verifies FILE's checksums and describes the filter: kind, parameters (bits,\n"
    "hash count, ...), capacity (for a kind that grows: where its next growth\n"
    "starts), bytes, items added, bits per item, fill ratio, and the expected\n"
    "false-positive rate now and at capacity (for scalable-bloom: the chain's\n"
    "target, with its first link's rate and the factor each next link's is\n"
    "tightened by - x0.5 in RedisBloom's layout, x0.8 natively; for\n"
    "scalable-cuckoo: the rate of one full link; for the kinds that need no\n"
    "capacity, the target they hold at every size).  FILE '-' is standard input\n"
    "(the filter is read into memory).\n";

static const char usage_text[] =
    "\n"
    "  --json   print one JSON object instead\n";

static void usage(void)
{
    const char *names[64];
    size_t n = cli_kind_names_if(names, 64, cli_kind_unsized);

    fputs(usage_head, stdout);
    cli_help_names(stdout, "The kinds that need no capacity: ", names, n < 64 ? n : 64, NULL,
                   NULL);
    fputs(usage_text, stdout);
}

/* A scalable Bloom filter's chain as the library describes it. */
typedef struct sbloom_chain {
    double first, tightening;
    int scaling;
} sbloom_chain;

static int chain_field(void *ctx, const amq_field *fld)
{
    sbloom_chain *c = ctx;
    if (strcmp(fld->name, "first_link_error") == 0 && fld->type == AMQ_FIELD_F64)
        c->first = fld->f64;
    else if (strcmp(fld->name, "tightening") == 0 && fld->type == AMQ_FIELD_F64)
        c->tightening = fld->f64;
    else if (strcmp(fld->name, "scaling") == 0 && fld->type == AMQ_FIELD_STR)
        c->scaling = fld->str != NULL && strcmp(fld->str, "yes") == 0;
    return 0;
}

/* The rate now and what the kind holds it to: a sized kind's rate at
 * capacity; the unsized kinds' target at every size; a scalable Bloom
 * filter's target for the whole chain, with its first link's rate and the
 * factor of each next link's (from the file: RedisBloom's layout halves,
 * the native one tightens by 0.8); a scalable cuckoo filter's full link
 * (cuckoo links keep their rate each, so that the whole's grows with them). */
static void fpp_line(const amq_filter *f, const amq_stats *st)
{
    if (st->kind == AMQ_KIND_SCALABLE_BLOOM) {
        sbloom_chain c = {st->fpp_target, 0.0, 0};
        amq_filter_describe(f, chain_field, &c);
        if (c.scaling)
            printf("%-17s %.3g now, target %.3g for the chain (its links' rates: %.3g the "
                   "first, each next x%g)\n",
                   "false positives:", st->fpp_now, st->fpp_target, c.first, c.tightening);
        else
            printf("%-17s %.3g now, %.3g at capacity (one link, not scaling)\n",
                   "false positives:", st->fpp_now, c.first);
    } else if (st->kind == AMQ_KIND_SCALABLE_CUCKOO)
        printf("%-17s %.3g now, %.3g a full link (the rate adds up over links)\n",
               "false positives:", st->fpp_now, st->fpp_target);
    else if (cli_kind_unsized(st->kind))
        printf("%-17s %.3g now, target %.3g at every size\n", "false positives:", st->fpp_now,
               st->fpp_target);
    else if (st->capacity > 0)
        printf("%-17s %.3g now, %.3g at capacity\n", "false positives:", st->fpp_now,
               st->fpp_target);
    else
        printf("%-17s %.3g now\n", "false positives:", st->fpp_now);
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void json_double(double v)
{
    if (isfinite(v))
        printf("%.17g", v);
    else
        fputs("null", stdout);
}

static int field_json(void *ctx, const amq_field *fld)
{
    (void)ctx;
    printf(", ");
    json_string(fld->name);
    printf(": ");
    if (fld->type == AMQ_FIELD_U64)
        printf("%llu", (unsigned long long)fld->u64);
    else if (fld->type == AMQ_FIELD_F64)
        json_double(fld->f64);
    else
        json_string(fld->str ? fld->str : "");
    return 0;
}

static int field_text(void *ctx, const amq_field *fld)
{
    char label[64];
    size_t i;
    (void)ctx;
    snprintf(label, sizeof label, "%s:", fld->name);
    for (i = 0; label[i]; i++)
        if (label[i] == '_')
            label[i] = ' ';
    if (fld->type == AMQ_FIELD_U64)
        printf("%-17s %llu\n", label, (unsigned long long)fld->u64);
    else if (fld->type == AMQ_FIELD_F64)
        printf("%-17s %.6g\n", label, fld->f64);
    else
        printf("%-17s %s\n", label, fld->str ? fld->str : "");
    return 0;
}

static void fill_bar(double fill, char *buf, size_t width)
{
    size_t i, full = (size_t)(fill * (double)width + 0.5);
    if (full > width)
        full = width;
    for (i = 0; i < width; i++)
        buf[i] = i < full ? '#' : '.';
    buf[width] = '\0';
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    amq_filter *f;
    amq_stats st;
    char human[32], bar[41];
    int opt, json = 0, over;
    const char *path;

    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'j':
            json = 1;
            break;
        case 'h':
            usage();
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (optind != argc - 1) {
        cli_error(optind == argc ? "info: missing FILE" : "info: expected one FILE");
        return EXIT_TROUBLE;
    }
    path = argv[optind];
    if (cli_filter_open(path, AMQ_OPEN_MMAP, &f) != 0)
        return EXIT_TROUBLE;
    amq_filter_stats(f, &st);
    over = cli_warn_saturated(path, f); /* once, on standard error */
    if (json) {
        printf("{\"file\": ");
        json_string(path);
        printf(", \"kind\": ");
        json_string(amq_kind_name(st.kind));
        printf(", \"hash\": ");
        json_string(amq_hash_algo_name(st.hash_algo));
        printf(", \"seed\": %llu, \"capacity\": %llu, \"fpp_target\": ",
               (unsigned long long)st.seed, (unsigned long long)st.capacity);
        json_double(st.fpp_target);
        printf(", \"items\": %llu, \"bytes\": %llu, \"bits_per_item\": ",
               (unsigned long long)st.items, (unsigned long long)st.bytes);
        json_double(st.bits_per_item);
        printf(", \"fill_ratio\": ");
        json_double(st.fill);
        printf(", \"fpp_now\": ");
        json_double(st.fpp_now);
        printf(", \"over_capacity\": %s", over ? "true" : "false");
        amq_filter_describe(f, field_json, NULL);
        printf("}\n");
    } else {
        cli_human_bytes(st.bytes, human, sizeof human);
        fill_bar(st.fill, bar, 40);
        printf("%-17s %s\n", "file:", path);
        printf("%-17s %s\n", "kind:", amq_kind_name(st.kind));
        printf("%-17s %s, seed %llu\n", "hash:", amq_hash_algo_name(st.hash_algo),
               (unsigned long long)st.seed);
        if (st.capacity > 0)
            printf("%-17s %llu items\n", "capacity:", (unsigned long long)st.capacity);
        printf("%-17s %llu\n", "items:", (unsigned long long)st.items);
        printf("%-17s %llu (%s)\n", "bytes:", (unsigned long long)st.bytes, human);
        if (amq_kind_is_static(st.kind)) {
            /* Static kinds are judged by their distance to the space bound. */
            double bound = log2(1.0 / st.fpp_target);
            printf("%-17s %.2f (bound log2(1/fpp) = %.2f: %+.1f %%)\n", "bits per item:",
                   st.bits_per_item, bound, (st.bits_per_item / bound - 1.0) * 100.0);
            /* As --json says it: sized for exactly its keys, a static filter is full. */
            printf("%-17s %.4f [%s] (static: built for exactly its keys)\n", "fill ratio:",
                   st.fill, bar);
        } else {
            printf("%-17s %.2f\n", "bits per item:", st.bits_per_item);
            printf("%-17s %.4f [%s]\n", "fill ratio:", st.fill, bar);
        }
        fpp_line(f, &st);
        amq_filter_describe(f, field_text, NULL);
    }
    amq_filter_free(f);
    return 0;
}
