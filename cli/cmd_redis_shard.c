/*
 * cmd_redis_shard.c - amq export --to redis --shards N / amq import --from redis --shards N:
 * one logical filter NAME over N shard keys of a Redis Cluster (docs/cluster.md).
 *
 * export writes, for shard i, the chunk stream `amq export --to redis` writes for one key
 * (staging key in the shard's slot, then RENAMENX/RENAME), to the key NAME:{tag_i}, and last
 * the metadata key NAME (SET NAME <json> NX, or SET with --replace), so that a client never
 * opens a filter whose shards are not all loaded.
 *
 * import reads such a stream (or the one amq.redis.ShardedFilter.dump_resp writes) and turns
 * each shard's chunks into its own file, through the one-key import.
 *
 * A filter's bits cannot be cut by an item hash they do not depend on: the shards are built
 * apart (the keys split by the protocol's shard hash, `python3 -m amq.redis split`), one file
 * per shard, and exported together.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define AMQ_ADVANCED_API 1 /* link 0's capacity and error rate for the metadata */
#include "cli.h"
#include "cmd_redis.h"
#include "shard_stream.h"

#include "amq/advanced.h"
#include "amq/bloom.h"
#include "amq/scalable_bloom.h"
#include "amq/scalable_cuckoo.h"

#define SLOTS 16384u
#define MAX_SHARDS CLI_MAX_SHARDS

static const char export_usage[] =
    "usage: amq export --to redis --shards N NAME IN_0 ... IN_N-1 [OUT] [--replace] [--force]\n"
    "\n"
    "Writes the N filter files IN_0 ... IN_N-1 (shard i's filter in IN_i) as the Redis\n"
    "commands that load them as one sharded filter NAME (docs/cluster.md): shard i\n"
    "goes to the key NAME:{tag_i}, whose hash tag places it on the i-th N-th of the\n"
    "cluster's slots, and the metadata key NAME is set last.  Each IN_i is a file\n"
    "'amq export --to redis' takes (scalable-bloom or scalable-cuckoo in RedisBloom's\n"
    "layout, or a classic Bloom filter with RedisBloom's hashing), all of one family.\n"
    "Build shard i from the keys whose shard is i ('python3 -m amq.redis split').\n"
    "A cluster does not take 'redis-cli --pipe' (it follows no redirection): load\n"
    "with 'python3 -m amq.redis load --cluster OUT', or pipe to a single server.\n"
    "  --replace        replace the shard keys and NAME if they exist (else each is\n"
    "                   only created when absent)\n"
    "  --force          replace OUT if it exists\n";

static const char import_usage[] =
    "usage: amq import --from redis --shards N IN OUT_0 ... OUT_N-1 [--force]\n"
    "\n"
    "Reads the commands of a sharded filter (IN, '-': standard input) - what\n"
    "'amq export --to redis --shards N' writes, or ShardedFilter.dump_resp in\n"
    "Python - and writes shard i's filter to OUT_i.  The chunks of key NAME:{i.j}\n"
    "are shard i's; every shard must be there.  No file is written unless all are.\n"
    "  --force          replace the OUTs if they exist\n";

int cli_redis_sharded(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--shards") == 0 || strncmp(argv[i], "--shards=", 9) == 0)
            return 1;
    }
    return 0;
}

/* ---- the protocol: hash tags (docs/cluster.md, "Placement") ----------------------------- */

/* CRC16-XMODEM (polynomial 0x1021, initial 0), as Redis Cluster's key slots. */
static uint16_t crc16(const char *s, size_t len)
{
    uint16_t crc = 0;
    size_t i;
    int b;

    for (i = 0; i < len; i++) {
        crc = (uint16_t)(crc ^ ((uint16_t)(unsigned char)s[i] << 8));
        for (b = 0; b < 8; b++)
            crc = (uint16_t)((crc & 0x8000u) ? ((unsigned)crc << 1) ^ 0x1021u : (unsigned)crc << 1);
    }
    return crc;
}

/* Shard i's tag "i.j": the least j whose slot lies in the middle half of the i-th n-th of
 * the slots, away from the edges where clusters' slot ranges may begin or end. */
static void shard_tag(unsigned i, unsigned n, char *out, size_t cap)
{
    unsigned lo = i * SLOTS / n, hi = (i + 1) * SLOTS / n, w = hi - lo;
    unsigned band_lo = lo + w / 4, band_w = w / 2 > 0 ? w / 2 : 1, slot;
    unsigned long j;
    int len;

    for (j = 0;; j++) {
        len = snprintf(out, cap, "%u.%lu", i, j);
        slot = crc16(out, (size_t)len) & (SLOTS - 1);
        if (slot >= band_lo && slot < band_lo + band_w)
            return;
    }
}

static int parse_shards(const char *s, unsigned *n)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (*s < '0' || *s > '9' || errno != 0 || *end != '\0' || v < 1 || v > MAX_SHARDS) {
        cli_error("--shards: '%s' is not a number of shards in [1, %u]", s, MAX_SHARDS);
        return -1;
    }
    *n = (unsigned)v;
    return 0;
}

/* Runs a subcommand on an argv built here (getopt permutes it: a copy of the pointers). */
static int run_sub(int (*fn)(int, char **), const char **args, int n)
{
    char *argv[16];
    int i;

    for (i = 0; i < n && i < 15; i++)
        argv[i] = (char *)args[i];
    argv[i] = NULL;
    return fn(i, argv);
}

/* This command's temporary files live in a private directory (mode 0700), made at the first
 * one: a file the one-key commands recreate by name cannot be raced there. */
static char temp_dir_path[4096];

static void temp_dir_remove(void)
{
    if (temp_dir_path[0] != '\0')
        rmdir(temp_dir_path);
    temp_dir_path[0] = '\0';
}

/* A new empty temporary file: its path in buf, registered for removal on a signal. */
static int temp_file(char *buf, size_t cap, int *slot)
{
    const char *dir = getenv("TMPDIR");
    int fd;

    if (temp_dir_path[0] == '\0') {
        snprintf(temp_dir_path, sizeof temp_dir_path, "%s/amq-shards.XXXXXX",
                 dir != NULL && *dir != '\0' ? dir : "/tmp");
        if (mkdtemp(temp_dir_path) == NULL) {
            cli_error("%s: %s", temp_dir_path, strerror(errno));
            temp_dir_path[0] = '\0';
            return -1;
        }
    }
    snprintf(buf, cap, "%s/XXXXXX", temp_dir_path);
    fd = mkstemp(buf);
    if (fd < 0) {
        cli_error("%s: %s", buf, strerror(errno));
        return -1;
    }
    *slot = amq_temp_register(buf);
    close(fd);
    return 0;
}

static void temp_remove(const char *path, int slot)
{
    unlink(path);
    if (slot >= 0)
        amq_temp_unregister(slot);
}

/* The bytes [off, off + len) of in appended to out. */
static int copy_range(FILE *out, FILE *in, long off, size_t len)
{
    char buf[1 << 16];
    size_t n;

    if (fseek(in, off, SEEK_SET) != 0)
        return -1;
    while (len > 0) {
        n = fread(buf, 1, len < sizeof buf ? len : sizeof buf, in);
        if (n == 0 || fwrite(buf, 1, n, out) != n)
            return -1;
        len -= n;
    }
    return 0;
}

static int copy_into(FILE *out, const char *path)
{
    char buf[1 << 16];
    size_t n;
    FILE *in = fopen(path, "rb");
    int rc = 0;

    if (in == NULL) {
        cli_error("%s: %s", path, strerror(errno));
        return -1;
    }
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) {
            rc = -1;
            break;
        }
    if (ferror(in))
        rc = -1;
    fclose(in);
    return rc;
}

/* ---- export ------------------------------------------------------------------------------- */

/* The shard's family ('b' BF, 'c' CF) and its parameters as a JSON object into f. */
static int shard_params(const char *in, FILE *f, int *family, uint64_t *capacity)
{
    amq_filter *flt = NULL;
    amq_errinfo err;
    const amq_sbloom *s;
    const amq_scuckoo *c;
    amq_bloom *b;
    int rc;

    memset(&err, 0, sizeof err);
    rc = amq_filter_open(in, 0, NULL, &flt, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, NULL);
        return -1;
    }
    s = amq_filter_sbloom(flt);
    c = amq_filter_scuckoo(flt);
    b = s == NULL && c == NULL ? amq_filter_bloom(flt) : NULL;
    rc = 0;
    if (s != NULL) {
        amq_sbloom_info si;
        amq_sbloom_link_info li;
        const uint8_t *data;
        amq_sbloom_get_info(s, &si);
        if (amq_sbloom_link(s, 0, &li, &data) != AMQ_OK)
            memset(&li, 0, sizeof li);
        *family = 'b';
        *capacity = li.entries;
        fprintf(f, "{\"capacity\": %" PRIu64 ", \"error_rate\": %.17g, ", li.entries, li.error);
        if (si.options & AMQ_SBLOOM_NO_SCALING)
            fputs("\"nonscaling\": true}", f);
        else
            fprintf(f, "\"expansion\": %u}", si.growth);
    } else if (c != NULL) {
        amq_scuckoo_info ci;
        amq_scuckoo_get_info(c, &ci);
        *family = 'c';
        *capacity = ci.num_buckets * ci.bucket_size;
        fprintf(f,
                "{\"bucket_size\": %u, \"capacity\": %" PRIu64 ", \"expansion\": %u, "
                "\"max_iterations\": %u}",
                ci.bucket_size, *capacity, ci.expansion, ci.max_iterations);
    } else if (b != NULL) {
        amq_bloom_params p;
        amq_bloom_get_params(b, &p);
        *family = 'b';
        *capacity = p.capacity;
        fprintf(f, "{\"capacity\": %" PRIu64 ", \"error_rate\": %.17g, \"nonscaling\": true}",
                p.capacity, p.fpp);
    } else {
        rc = -1; /* the one-key export says why, with the file's kind */
        *family = 0;
    }
    amq_filter_free(flt);
    return rc;
}

int cmd_export_redis_sharded(int argc, char **argv)
{
    enum { O_TO = 256, O_SHARDS, O_FORCE, O_REPLACE };
    static const struct option opts[] = {
        {"to", required_argument, NULL, O_TO},
        {"shards", required_argument, NULL, O_SHARDS},
        {"force", no_argument, NULL, O_FORCE},
        {"replace", no_argument, NULL, O_REPLACE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned n = 0, i;
    int opt, force = 0, replace = 0, rc = EXIT_TROUBLE, target_open = 0, fd, dfd;
    int family = 0, fam = 0, slot = -1, npos, have_tmp = 0;
    const char *name, *outpath = "-";
    char **keys = NULL, tmp[4200];
    char *params = NULL;
    size_t params_len = 0;
    FILE *pf = NULL, *o = NULL;
    uint64_t total = 0, cap;
    cli_target t;

    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case O_TO:
            break;
        case O_SHARDS:
            if (parse_shards(optarg, &n) != 0)
                return EXIT_TROUBLE;
            break;
        case O_FORCE:
            force = 1;
            break;
        case O_REPLACE:
            replace = 1;
            break;
        case 'h':
            fputs(export_usage, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    /* The one-key export run per shard below moves optind: the positions are kept here. */
    argv += optind;
    npos = argc - optind;
    if (npos != (int)n + 1 && npos != (int)n + 2) {
        cli_error("export --shards %u: expected NAME, %u filter files and an optional OUT "
                  "(got %d arguments)",
                  n, n, npos);
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    name = argv[0];
    if (npos == (int)n + 2)
        outpath = argv[1 + (int)n];
    if (*name == '\0' || strpbrk(name, "{}") != NULL) {
        cli_error("export: NAME '%s' must be non-empty without '{' or '}' (the shards' hash "
                  "tags follow it: a tag in NAME would put every shard on one slot)",
                  name);
        return EXIT_TROUBLE;
    }
    keys = calloc(n, sizeof *keys);
    pf = open_memstream(&params, &params_len);
    if (keys == NULL || pf == NULL) {
        cli_error("out of memory");
        goto done;
    }
    for (i = 0; i < n; i++) {
        char tag[32];
        size_t kl;
        shard_tag(i, n, tag, sizeof tag);
        kl = strlen(name) + strlen(tag) + 4;
        keys[i] = malloc(kl);
        if (keys[i] == NULL) {
            cli_error("out of memory");
            goto done;
        }
        snprintf(keys[i], kl, "%s:{%s}", name, tag);
    }
    /* Every file first: one of another family, or one without a RedisBloom form, stops the
     * export before anything is written. */
    for (i = 0; i < n; i++) {
        const char *in = argv[1 + (int)i];
        fputs(i == 0 ? "[" : ", ", pf);
        if (shard_params(in, pf, &fam, &cap) != 0) {
            if (fam == 0) {
                cli_error("%s: shard %u: a filter with no RedisBloom form (scalable-bloom, "
                          "scalable-cuckoo or a classic Bloom filter with RedisBloom's "
                          "hashing can be exported)",
                          in, i);
            }
            goto done;
        }
        if (family != 0 && fam != family) {
            cli_error("%s: shard %u is a %s filter, shard 0 a %s filter: the shards must be of "
                      "one family",
                      in, i, fam == 'b' ? "Bloom" : "cuckoo", family == 'b' ? "Bloom" : "cuckoo");
            goto done;
        }
        family = fam;
        total += cap;
    }
    fputc(']', pf);
    if (fclose(pf) != 0) {
        pf = NULL;
        cli_error("out of memory");
        goto done;
    }
    pf = NULL;
    if (cli_target_open(&t, outpath, force ? CLI_TARGET_FORCE | CLI_TARGET_ANY : 0) != 0)
        goto done;
    target_open = 1;
    fd = cli_target_begin(&t);
    dfd = fd >= 0 ? dup(fd) : -1;
    o = dfd >= 0 ? fdopen(dfd, "wb") : NULL;
    if (o == NULL) {
        if (fd >= 0)
            cli_error("%s: %s", outpath, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        cli_target_abort(&t);
        goto done;
    }
    /* Each shard through the one-key export (its checks, staging key and rename), into a
     * temporary file appended to OUT. */
    if (temp_file(tmp, sizeof tmp, &slot) != 0)
        goto abort;
    have_tmp = 1;
    for (i = 0; i < n; i++) {
        const char *args[] = {"export", "--to", "redis", "--force", keys[i],
                              argv[1 + (int)i], tmp, "--replace"};
        unlink(tmp); /* the export creates it: an existing text file would be refused */
        if (run_sub(cmd_export_redis, args, replace ? 8 : 7) != 0) {
            cli_error("%s: shard %u (key %s) not exported", argv[1 + (int)i], i,
                      keys[i]);
            goto abort;
        }
        if (copy_into(o, tmp) != 0)
            goto write_failed;
    }
    {
        /* The metadata key, last: the keys, hash and parameters a client opens NAME with. */
        char *meta = NULL;
        size_t ml = 0;
        FILE *mf = open_memstream(&meta, &ml);
        const char *set[5];
        size_t lens[5];
        int k, na;

        if (mf == NULL) {
            cli_error("out of memory");
            goto abort;
        }
        fprintf(mf, "{\"backend\": \"%s\", \"capacity\": %" PRIu64 ", \"format\": "
                    "\"amq-sharded-filter\", \"keys\": [",
                family == 'b' ? "bf" : "cf", total);
        for (i = 0; i < n; i++) {
            if (i > 0)
                fputs(", ", mf);
            cli_json_string(mf, keys[i]);
        }
        fputs("], \"name\": ", mf);
        cli_json_string(mf, name);
        fprintf(mf,
                ", \"params\": %s, \"shard_hash\": \"xxh3_64\", \"shard_reduce\": "
                "\"multiply-shift\", \"shard_seed\": \"0x616d712e73686172\", \"shards\": %u, "
                "\"version\": 1}",
                params, n);
        if (fclose(mf) != 0) {
            free(meta);
            cli_error("out of memory");
            goto abort;
        }
        set[0] = "SET";
        set[1] = name;
        set[2] = meta;
        set[3] = "NX";
        na = replace ? 3 : 4;
        for (k = 0; k < na; k++)
            lens[k] = strlen(set[k]);
        fprintf(o, "*%d\r\n", na);
        for (k = 0; k < na; k++) {
            fprintf(o, "$%zu\r\n", lens[k]);
            fwrite(set[k], 1, lens[k], o);
            fputs("\r\n", o);
        }
        free(meta);
    }
    if (fflush(o) != 0 || ferror(o))
        goto write_failed;
    if (fclose(o) != 0) {
        o = NULL;
        goto write_failed;
    }
    o = NULL;
    if (cli_target_commit(&t) != 0)
        goto done;
    rc = 0;
    goto done;
write_failed:
    cli_error("%s: write failed: %s", strcmp(outpath, "-") == 0 ? "standard output" : outpath,
              strerror(errno));
abort:
    if (o != NULL)
        fclose(o);
    o = NULL;
    cli_target_abort(&t);
done:
    if (target_open)
        cli_target_release(&t);
    if (have_tmp)
        temp_remove(tmp, slot);
    temp_dir_remove();
    if (pf != NULL)
        fclose(pf);
    free(params);
    if (keys != NULL)
        for (i = 0; i < n; i++)
            free(keys[i]);
    free(keys);
    return rc;
}

/* ---- import ------------------------------------------------------------------------------- */

int cmd_import_redis_sharded(int argc, char **argv)
{
    enum { O_FROM = 256, O_SHARDS, O_FORCE };
    static const struct option opts[] = {
        {"from", required_argument, NULL, O_FROM},
        {"shards", required_argument, NULL, O_SHARDS},
        {"force", no_argument, NULL, O_FORCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned n = 0, i;
    int opt, force = 0, rc = EXIT_TROUBLE, have_all = 0, have_one = 0;
    const char *in, *name;
    char all[4200], one[4200];
    char **done = NULL;
    int all_slot = -1, one_slot = -1, *done_slot = NULL;
    size_t k;
    cli_shard_demux_out d;
    FILE *f = NULL, *tmp = NULL, *sub = NULL;

    memset(&d, 0, sizeof d);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case O_FROM:
            break;
        case O_SHARDS:
            if (parse_shards(optarg, &n) != 0)
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
    if (argc - optind != (int)n + 1) {
        cli_error("import --shards %u: expected IN and %u output files (got %d arguments)", n, n,
                  argc - optind);
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    argv += optind; /* the one-key import run per shard below moves optind */
    in = argv[0];
    for (i = 0; i < n; i++)
        if (cli_check_output(argv[1 + (int)i], force) != 0)
            return EXIT_TROUBLE;
    name = strcmp(in, "-") == 0 ? "standard input" : in;
    f = strcmp(in, "-") == 0 ? stdin : fopen(in, "rb");
    done = calloc(n, sizeof *done);
    done_slot = calloc(n, sizeof *done_slot);
    if (f == NULL) {
        cli_error("%s: %s", in, strerror(errno));
        goto out;
    }
    if (done == NULL || done_slot == NULL) {
        cli_error("out of memory");
        goto out;
    }
    /* Pass 1: every shard's LOADCHUNK commands into one temporary file, with where each is. */
    if (temp_file(all, sizeof all, &all_slot) != 0)
        goto out;
    have_all = 1;
    tmp = fopen(all, "w+b");
    if (tmp == NULL) {
        cli_error("%s: %s", all, strerror(errno));
        goto out;
    }
    if (cli_shard_demux(f, name, n, tmp, all, &d) != 0)
        goto out;
    for (i = 0; i < n; i++)
        if (d.chunks[i] == 0) {
            cli_error("%s: no chunk of shard %u (key %s:{%u.*}): the stream is not a whole "
                      "sharded filter",
                      name, i, d.prefix != NULL ? d.prefix : "NAME", i);
            goto out;
        }
    if (fflush(tmp) != 0) {
        cli_error("%s: %s", all, strerror(errno));
        goto out;
    }
    /* Pass 2: each shard's stream through the one-key import (its checks), into a temporary
     * file; pass 3 saves them all once every one has been read. */
    for (i = 0; i < n; i++) {
        char outtmp[4200];
        const char *args[7];
        int na = 0;

        if (temp_file(one, sizeof one, &one_slot) != 0)
            goto out;
        have_one = 1;
        sub = fopen(one, "wb");
        if (sub == NULL) {
            cli_error("%s: %s", one, strerror(errno));
            goto out;
        }
        for (k = 0; k < d.nspans; k++)
            if (d.spans[k].shard == i &&
                copy_range(sub, tmp, d.spans[k].off, d.spans[k].len) != 0) {
                cli_error("%s: %s", one, strerror(errno));
                goto out;
            }
        if (fclose(sub) != 0) {
            sub = NULL;
            cli_error("%s: %s", one, strerror(errno));
            goto out;
        }
        sub = NULL;
        if (temp_file(outtmp, sizeof outtmp, &done_slot[i]) != 0)
            goto out;
        done[i] = strdup(outtmp);
        if (done[i] == NULL) {
            temp_remove(outtmp, done_slot[i]);
            cli_error("out of memory");
            goto out;
        }
        args[na++] = "import";
        args[na++] = "--from";
        args[na++] = "redis";
        args[na++] = "--force";
        args[na++] = one;
        args[na++] = done[i];
        unlink(done[i]); /* the import creates it */
        if (run_sub(cmd_import_redis, args, na) != 0) {
            cli_error("%s: shard %u (key %s:{%u.*}) could not be read (the message above names "
                      "its extracted stream)",
                      name, i, d.prefix, i);
            goto out;
        }
        temp_remove(one, one_slot);
        have_one = 0;
    }
    for (i = 0; i < n; i++) {
        amq_filter *flt = NULL;
        amq_errinfo err;
        int s;
        memset(&err, 0, sizeof err);
        s = amq_filter_open(done[i], 0, NULL, &flt, &err);
        if (s != AMQ_OK) {
            cli_lib_error(s, &err, NULL);
            goto out;
        }
        s = cli_save_filter(argv[1 + (int)i], flt, force ? CLI_TARGET_FORCE : 0);
        amq_filter_free(flt);
        if (s != 0)
            goto out;
    }
    rc = 0;
out:
    cli_shard_demux_free(&d);
    if (sub != NULL)
        fclose(sub);
    if (have_one)
        temp_remove(one, one_slot);
    if (tmp != NULL)
        fclose(tmp);
    if (have_all)
        temp_remove(all, all_slot);
    if (done != NULL)
        for (i = 0; i < n; i++)
            if (done[i] != NULL) {
                temp_remove(done[i], done_slot[i]);
                free(done[i]);
            }
    temp_dir_remove();
    if (f != NULL && f != stdin)
        fclose(f);
    free(done);
    free(done_slot);
    return rc;
}
