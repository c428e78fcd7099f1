/*
 * cmd_guava.c - amq import / amq export: filters in other programs'
 * formats.  The table of formats (formats[]) dispatches both commands and
 * gives every list of formats a user sees; Guava's BloomFilter.writeTo
 * bytes (amq/guava.h) are read and written here, RedisBloom's chunk
 * streams in cmd_redis.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AMQ_ADVANCED_API 1 /* the bit array of a Guava filter */
#include "cli.h"
#include "cmd_redis.h"

#include "amq/guava.h"

static const char import_usage[] =
    "usage: amq import --from guava IN OUT [--capacity N --fpp P] [--force]\n"
    "\n"
    "Reads IN, a filter written by Guava's BloomFilter.writeTo (strategy\n"
    "MURMUR128_MITZ_64; keys hashed as Funnels.stringFunnel(UTF_8) does: their\n"
    "UTF-8 bytes), and writes it to OUT as an amq filter file that answers every\n"
    "query exactly as Guava's mightContain.  IN '-' is standard input.\n"
    "\n"
    "  --from guava     the format of IN\n"
    "  --capacity N     record the capacity the Java side created it for\n"
    "  --fpp P          ... and its target false-positive rate (both are not in\n"
    "                   Guava's bytes; they only inform 'amq info')\n"
    "  --force          replace OUT if it exists\n";

static const char export_usage[] =
    "usage: amq export --to guava IN OUT [--force]\n"
    "\n"
    "Writes the filter in IN in Guava's BloomFilter format to OUT ('-': standard\n"
    "output), for BloomFilter.readFrom(in, Funnels.stringFunnel(UTF_8)).  IN must\n"
    "be a classic Bloom filter in Guava's layout: imported from Guava, or built\n"
    "with 'amq build --guava'; '-': standard input.  OUT is written atomically.\n"
    "\n"
    "  --to guava   the format of OUT\n"
    "  --force      replace OUT if it exists\n";

/* Reads a whole file (or stdin) into memory. */
/*
 * How far a Guava stream is worth reading, from its 6-byte header
 * (strategy, hash count, int32 big-endian count of 64-bit words): the
 * declared size plus one byte (so that trailing bytes are still reported),
 * or just the header when it is invalid (the decoder then says why).
 * /dev/zero or a wrong file is thus never read "until memory runs out".
 */
static uint64_t guava_need(const uint8_t *b, size_t used)
{
    uint32_t words;
    if (used < 6)
        return 6;
    words = (uint32_t)b[2] << 24 | (uint32_t)b[3] << 16 | (uint32_t)b[4] << 8 | b[5];
    if (b[0] > 1 || b[1] == 0 || words == 0 || words > INT32_MAX)
        return used;
    return 6 + (uint64_t)words * 8 + 1;
}

static uint64_t machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : UINT64_MAX;
}

static uint8_t *read_whole(const char *path, size_t *len)
{
    struct stat st;
    uint8_t *buf = NULL, *nb;
    size_t cap = 0, used = 0;
    uint64_t need;
    ssize_t got;
    int fd;

    fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error("%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error("%s: is a directory", path);
        goto fail;
    }
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        cap = (size_t)st.st_size + 1;
    for (;;) {
        if (buf == NULL || used == cap) {
            if (cap > SIZE_MAX / 2) {
                cli_error("%s: too large", path);
                goto fail;
            }
            if (buf != NULL || cap == 0)
                cap = cap < 65536 ? 65536 : cap * 2;
            nb = realloc(buf, cap);
            if (nb == NULL) {
                cli_error("%s: out of memory", path);
                goto fail;
            }
            buf = nb;
        }
        /* Never past what the header allows (a regular file's size is
         * known; a stream's is not). */
        need = guava_need(buf, used);
        got = read(fd, buf + used, need - used < cap - used ? (size_t)(need - used) : cap - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            cli_error("%s: read error: %s", path, strerror(errno));
            goto fail;
        }
        if (got == 0)
            break;
        used += (size_t)got;
        need = guava_need(buf, used);
        if (need > machine_memory()) {
            cli_error("%s: the Guava header declares %llu bytes, more than this machine's "
                      "memory", path, (unsigned long long)need);
            goto fail;
        }
        if (used >= need)
            break;
    }
    if (fd != STDIN_FILENO)
        close(fd);
    *len = used;
    return buf != NULL ? buf : malloc(1);
fail:
    if (fd != STDIN_FILENO)
        close(fd);
    free(buf);
    return NULL;
}

static void format_list(char *buf, size_t cap);

/* Reached without a format too (after the options are parsed, so that a bad
 * option is reported as such first). */
static int check_format(const char *opt, const char *fmt)
{
    char list[128];
    if (fmt == NULL || strcmp(fmt, "guava") != 0) {
        format_list(list, sizeof list);
        cli_error("%s FORMAT is required (%s)", opt, list);
        return -1;
    }
    return 0;
}

static int import_guava(int argc, char **argv)
{
    enum { O_FROM = 256, O_CAPACITY, O_FPP, O_FORCE };
    static const struct option opts[] = {
        {"from", required_argument, NULL, O_FROM},
        {"capacity", required_argument, NULL, O_CAPACITY},
        {"fpp", required_argument, NULL, O_FPP},
        {"force", no_argument, NULL, O_FORCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *from = NULL, *in, *out;
    amq_bloom_params p;
    amq_bloom *b = NULL, *withcap;
    amq_filter *f = NULL;
    amq_errinfo err;
    uint64_t capacity = 0;
    double fpp = 0.0;
    uint8_t *buf;
    size_t len;
    int opt, rc, force = 0;

    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case O_FROM:
            from = optarg;
            break;
        case O_CAPACITY:
            if (cli_parse_count("--capacity", optarg, &capacity) != 0)
                return EXIT_TROUBLE;
            break;
        case O_FPP:
            if (cli_parse_fpp("--fpp", optarg, &fpp) != 0)
                return EXIT_TROUBLE;
            break;
        case O_FORCE:
            force = 1;
            break;
        case 'h':
            fputs(import_usage, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (check_format("--from", from) != 0)
        return EXIT_TROUBLE;
    if (argc - optind != 2) {
        cli_error("import: expected IN and OUT");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    in = argv[optind];
    out = argv[optind + 1];
    if (cli_check_output(out, force) != 0)
        return EXIT_TROUBLE;
    buf = read_whole(in, &len);
    if (buf == NULL)
        return EXIT_TROUBLE;
    memset(&err, 0, sizeof err);
    rc = amq_guava_deserialize(buf, len, NULL, &b, &err);
    free(buf);
    if (rc != AMQ_OK) {
        cli_error("%s: %s", in, err.msg[0] ? err.msg : amq_strerror(rc));
        return EXIT_TROUBLE;
    }
    if (capacity > 0 || fpp > 0.0) {
        /* The same bits in a filter that records what it was made for. */
        amq_bloom_get_params(b, &p);
        p.capacity = capacity;
        p.fpp = fpp;
        rc = amq_bloom_new(&p, NULL, &withcap);
        if (rc != AMQ_OK) {
            cli_error("import: %s", amq_strerror(rc));
            amq_bloom_free(b);
            return EXIT_TROUBLE;
        }
        memcpy(amq_bloom_data_mut(withcap), amq_bloom_data(b), amq_bloom_data_size(&p));
        amq_bloom_set_items(withcap, amq_bloom_items(b));
        amq_bloom_free(b);
        b = withcap;
    }
    rc = amq_filter_from_bloom(b, &f);
    if (rc != AMQ_OK) {
        cli_error("import: %s", amq_strerror(rc));
        return EXIT_TROUBLE;
    }
    rc = cli_save_filter(out, f, force ? CLI_TARGET_FORCE : 0);
    amq_filter_free(f);
    if (rc != 0)
        return EXIT_TROUBLE;
    return 0;
}

static int export_guava(int argc, char **argv)
{
    enum { O_TO = 256, O_FORCE };
    static const struct option opts[] = {
        {"to", required_argument, NULL, O_TO},
        {"force", no_argument, NULL, O_FORCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *to = NULL, *in, *out;
    amq_filter *f = NULL;
    amq_bloom *b;
    amq_errinfo err;
    uint8_t *buf;
    size_t size;
    int opt, rc, force = 0;

    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case O_TO:
            to = optarg;
            break;
        case O_FORCE:
            force = 1;
            break;
        case 'h':
            fputs(export_usage, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (check_format("--to", to) != 0)
        return EXIT_TROUBLE;
    if (argc - optind != 2) {
        cli_error("export: expected IN and OUT");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    in = argv[optind];
    out = argv[optind + 1];
    if (cli_filter_open(in, AMQ_OPEN_MMAP, &f) != 0)
        return EXIT_TROUBLE;
    b = amq_filter_bloom(f);
    if (b == NULL) {
        const char *kind = amq_kind_name(amq_filter_kind(f));
        cli_error("%s: %s %s filter cannot be written in Guava's format (only a classic Bloom "
                  "filter in Guava's layout: imported from Guava, or built with 'amq build "
                  "--guava')",
                  in, cli_a(kind), kind);
        amq_filter_free(f);
        return EXIT_TROUBLE;
    }
    memset(&err, 0, sizeof err);
    rc = amq_guava_serialized_size(b, &size, &err);
    if (rc != AMQ_OK) {
        cli_error("%s: cannot be written in Guava's format: %s", in,
                  err.msg[0] ? err.msg : amq_strerror(rc));
        amq_filter_free(f);
        return EXIT_TROUBLE;
    }
    buf = malloc(size);
    if (buf == NULL) {
        cli_error("out of memory");
        amq_filter_free(f);
        return EXIT_TROUBLE;
    }
    rc = amq_guava_serialize(b, buf, size, NULL, &err);
    amq_filter_free(f);
    if (rc != AMQ_OK) {
        cli_error("%s: %s", in, err.msg[0] ? err.msg : amq_strerror(rc));
        free(buf);
        return EXIT_TROUBLE;
    }
    if (force && cli_force_same_format(out, cli_is_guava, "a Guava filter") != 0) {
        free(buf);
        return EXIT_TROUBLE;
    }
    rc = cli_save_bytes(out, buf, size, force);
    free(buf);
    return rc == 0 ? 0 : EXIT_TROUBLE;
}

/* ---- the formats ------------------------------------------------------------------------- */

static const struct format {
    const char *name;
    int (*import_fn)(int argc, char **argv);
    int (*export_fn)(int argc, char **argv);
} formats[] = {
    {"guava", import_guava, export_guava},
    {"redis", cmd_import_redis, cmd_export_redis},
};

#define NFORMATS (sizeof formats / sizeof formats[0])

size_t cli_format_names(const char **out, size_t cap)
{
    size_t i;
    for (i = 0; i < NFORMATS && i < cap; i++)
        out[i] = formats[i].name;
    return NFORMATS;
}

/* "guava, redis" */
static void format_list(char *buf, size_t cap)
{
    size_t i, used = 0;
    buf[0] = '\0';
    for (i = 0; i < NFORMATS && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i > 0 ? ", " : "",
                                 formats[i].name);
}

/* The value of the last `OPT F` or `OPT=F` before "--" (getopt keeps the last), or NULL. */
static const char *format_arg(int argc, char **argv, const char *opt)
{
    size_t n = strlen(opt);
    const char *v = NULL;
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], opt) == 0 && i + 1 < argc)
            v = argv[++i];
        else if (strncmp(argv[i], opt, n) == 0 && argv[i][n] == '=')
            v = argv[i] + n + 1;
    }
    return v;
}

static int wants_help(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

/* amq import / amq export: the format named by opt, or every format's help. */
static int dispatch(int argc, char **argv, const char *cmd, const char *opt, int import)
{
    const char *names[NFORMATS], *fmt = format_arg(argc, argv, opt);
    char list[128];
    size_t i;

    cli_format_names(names, NFORMATS);
    if (fmt == NULL && wants_help(argc, argv)) {
        printf("usage: amq %s %s FORMAT ...\n\n", cmd, opt);
        cli_help_names(stdout, "FORMAT is one of: ", names, NFORMATS, NULL, ".");
        printf("'amq %s %s FORMAT --help' shows one of these:\n", cmd, opt);
        for (i = 0; i < NFORMATS; i++) {
            char help[] = "--help";
            char *hargv[] = {argv[0], help, NULL};
            fputs("\n", stdout);
            optind = 1;
            (void)(import ? formats[i].import_fn : formats[i].export_fn)(2, hargv);
        }
        return 0;
    }
    /* No format: the first parses the options (a bad one is reported as
     * such), then asks for one. */
    for (i = 0; i < NFORMATS; i++)
        if (fmt == NULL || strcmp(formats[i].name, fmt) == 0)
            return (import ? formats[i].import_fn : formats[i].export_fn)(argc, argv);
    format_list(list, sizeof list);
    cli_error("%s %s: unknown format '%s' (known: %s)", cmd, opt, fmt, list);
    cli_usage_hint();
    return EXIT_TROUBLE;
}

int cmd_import(int argc, char **argv)
{
    return dispatch(argc, argv, "import", "--from", 1);
}

int cmd_export(int argc, char **argv)
{
    return dispatch(argc, argv, "export", "--to", 0);
}
