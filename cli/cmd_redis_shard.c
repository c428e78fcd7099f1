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
 * per shard, and exported together - except a partitioned filter, whose partitions are chosen
 * by its own hash: --routing partition cuts one into N slices of P/N partitions, and an
 * item's shard is then its partition over P/N (metadata version 2).
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
#include "amq/partitioned.h"
#include "amq/scalable_bloom.h"
#include "amq/scalable_cuckoo.h"

#define SLOTS 16384u
#define MAX_SHARDS CLI_MAX_SHARDS

static const char export_usage[] =
    "usage: amq export --to redis --shards N NAME IN_0 ... IN_N-1 [OUT] [--amq]\n"
    "                  [--replace] [--force]\n"
    "       amq export --to redis --shards N --routing partition NAME IN [OUT] ...\n"
    "\n"
    "Writes the N filter files IN_0 ... IN_N-1 (shard i's filter in IN_i) as the Redis\n"
    "commands that load them as one sharded filter NAME (docs/cluster.md): shard i\n"
    "goes to the key NAME:{tag_i}, whose hash tag places it on the i-th N-th of the\n"
    "cluster's slots, and the metadata key NAME is set last.  The files are of one\n"
    "family: BF.* (scalable-bloom in RedisBloom's layout, or a classic Bloom filter\n"
    "with RedisBloom's hashing), CF.* (scalable-cuckoo in RedisBloom's layout), or\n"
    "amq.so's AMQ.* type (every other kind - blocked, cuckoo, partitioned, fuse,\n"
    "ribbon, aging... - all of one kind).  Build shard i from the keys whose shard\n"
    "is i ('python3 -m amq.redis split').\n"
    "With --routing partition, IN is one partitioned filter of P partitions (N must\n"
    "divide P), cut into N AMQ.* shards of P/N partitions each, no key split: an\n"
    "item's shard is then its partition in the filter (metadata version 2); that IN\n"
    "may be '-' (standard input), an IN_i may not (each is read twice).\n"
    "A cluster does not take 'redis-cli --pipe' (it follows no redirection): load\n"
    "with 'python3 -m amq.redis load --cluster OUT', or pipe to a single server.\n"
    "  --amq            AMQ.* shards even for files with a RedisBloom form\n"
    "  --routing R      hash (default: the protocol's item hash, one file per shard)\n"
    "                   or partition (one partitioned file cut)\n"
    "  --replace        replace the shard keys and NAME if they exist (else each is\n"
    "                   only created when absent)\n"
    "  --force          replace OUT if it exists\n";

static const char import_usage[] =
    "usage: amq import --from redis --shards N IN OUT_0 ... OUT_N-1 [--force]\n"
    "       amq import --from redis --shards N IN OUT [--force]\n"
    "\n"
    "Reads the commands of a sharded filter (IN, '-': standard input) - what\n"
    "'amq export --to redis --shards N' writes, or ShardedFilter.dump_resp in\n"
    "Python - and writes shard i's filter to OUT_i (BF, CF or AMQ.* chunks).  The\n"
    "chunks of key NAME:{i.j} are shard i's; every shard must be there.  No file is\n"
    "written unless all are.  With one OUT (N > 1), the shards must be the slices of\n"
    "a filter sharded by partition: they are joined into the partitioned file they\n"
    "were cut from, byte for byte.\n"
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

/* A new temporary file's path, malloc'd into paths[i] (its slot in slots[i]). */
static int temp_file_name(char **paths, int *slots, unsigned i)
{
    char buf[4200];

    if (temp_file(buf, sizeof buf, &slots[i]) != 0)
        return -1;
    paths[i] = strdup(buf);
    if (paths[i] == NULL) {
        temp_remove(buf, slots[i]);
        cli_error("out of memory");
        return -1;
    }
    return 0;
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

/* The families of shard: 'b' BF.*, 'c' CF.*, 'a' amq.so's AMQ.* (any kind). */
static const char *family_name(int fam)
{
    return fam == 'b' ? "bf" : fam == 'c' ? "cf" : "amq";
}

/* The shard's family and its parameters as a JSON object into f; *kind: the amq kind. A file
 * without a RedisBloom form (or any, with amq_type) is an AMQ.* shard. */
static int shard_params(const char *in, int amq_type, FILE *f, int *family, uint64_t *capacity,
                        uint32_t *kind)
{
    amq_filter *flt = NULL;
    amq_errinfo err;
    const amq_sbloom *s;
    const amq_scuckoo *c;
    amq_stats st;
    amq_bloom *b;
    int rc;

    memset(&err, 0, sizeof err);
    rc = amq_filter_open(in, 0, NULL, &flt, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, NULL);
        return -1;
    }
    amq_filter_stats(flt, &st);
    *kind = st.kind;
    if (amq_type || !cli_redisbloom_form(flt)) {
        *family = 'a';
        *capacity = st.capacity;
        fprintf(f, "{\"capacity\": %" PRIu64 ", \"error_rate\": %.17g, \"kind\": \"%s\"",
                st.capacity, st.fpp_target, amq_kind_name(st.kind));
        if (amq_filter_partitioned(flt) != NULL)
            fprintf(f, ", \"partitions\": %" PRIu32,
                    amq_partitioned_partitions(amq_filter_partitioned(flt)));
        fputc('}', f);
        amq_filter_free(flt);
        return 0;
    }
    s = amq_filter_sbloom(flt);
    c = amq_filter_scuckoo(flt);
    b = s == NULL && c == NULL ? amq_filter_bloom(flt) : NULL;
    if (s != NULL) {
        amq_sbloom_info si;
        amq_sbloom_link_info li;
        amq_stats chain;
        const uint8_t *data;
        amq_sbloom_get_info(s, &si);
        amq_filter_stats(flt, &chain);
        if (amq_sbloom_link(s, 0, &li, &data) != AMQ_OK)
            memset(&li, 0, sizeof li);
        *family = 'b';
        *capacity = li.entries;
        /* what BF.RESERVE was given: the chain's rate (its first link's is tighter) */
        fprintf(f, "{\"capacity\": %" PRIu64 ", \"error_rate\": %.17g, ", li.entries,
                chain.fpp_target);
        if (si.options & AMQ_SBLOOM_NO_SCALING)
            fputs("\"nonscaling\": true}", f);
        else
            fprintf(f, "\"expansion\": %u}", si.expansion);
    } else if (c != NULL) {
        amq_scuckoo_info ci;
        amq_scuckoo_get_info(c, &ci);
        *family = 'c';
        *capacity = ci.num_buckets * ci.bucket_size;
        fprintf(f,
                "{\"bucket_size\": %u, \"capacity\": %" PRIu64 ", \"expansion\": %u, "
                "\"max_iterations\": %u}",
                ci.bucket_size, *capacity, ci.expansion, ci.max_kicks);
    } else {
        amq_bloom_params p;
        amq_bloom_get_params(b, &p);
        *family = 'b';
        *capacity = p.capacity;
        fprintf(f, "{\"capacity\": %" PRIu64 ", \"error_rate\": %.17g, \"nonscaling\": true}",
                p.capacity, p.fpp);
    }
    amq_filter_free(flt);
    return 0;
}

/* Routing by partition: IN (a whole partitioned filter of P partitions) cut into n slices of
 * P/n partitions, saved as n temporary files (paths[i]); the metadata's params and routing
 * fields into pf, the whole capacity into *capacity. */
static int cut_partitioned(const char *in, unsigned n, char **paths, int *slots, FILE *pf,
                           FILE *routing, uint64_t *capacity)
{
    amq_filter *flt = NULL, *sf = NULL;
    amq_partitioned *pt, *sl = NULL;
    amq_errinfo err;
    amq_stats st;
    uint32_t parts, total, first, q;
    unsigned i;
    int rc = -1, s;

    if (cli_filter_open(in, 0, &flt) != 0)
        return -1;
    pt = amq_filter_partitioned(flt);
    if (pt == NULL) {
        const char *kind = amq_kind_name(amq_filter_kind(flt));
        cli_error("%s: --routing partition cuts a partitioned filter, not %s %s filter (build "
                  "one with 'amq build --type partitioned --partitions P', P a multiple of N)",
                  in, cli_a(kind), kind);
        goto done;
    }
    parts = amq_partitioned_partitions(pt);
    amq_partitioned_slice_info(pt, &total, &first);
    if (total != parts) {
        cli_error("%s: already a slice (partitions %u..%u of %u): cut the whole filter", in,
                  first, first + parts - 1, total);
        goto done;
    }
    if (parts % n != 0) {
        cli_error("%s: %u partitions cannot be cut into %u shards of equal runs: the number of "
                  "shards must divide the number of partitions (an uneven cut would give the "
                  "shards different loads and a client a rule with a table)",
                  in, parts, n);
        goto done;
    }
    q = parts / n;
    amq_filter_stats(flt, &st);
    *capacity = st.capacity;
    for (i = 0; i < n; i++) {
        const amq_filter *save = flt;
        uint64_t share;
        if (n > 1) {
            s = amq_partitioned_slice(pt, i * q, q, NULL, &sl);
            if (s == AMQ_OK) {
                s = amq_filter_from_partitioned(sl, &sf);
                if (s != AMQ_OK)
                    amq_partitioned_free(sl);
            }
            sl = NULL;
            if (s != AMQ_OK) {
                cli_lib_error(s, NULL, in);
                goto done;
            }
            save = sf;
        }
        if (temp_file_name(paths, slots, i) != 0)
            goto done;
        memset(&err, 0, sizeof err);
        unlink(paths[i]); /* the save makes it: an empty file is not a filter it replaces */
        s = amq_filter_save(save, paths[i], 0, &err);
        if (s != AMQ_OK) {
            cli_lib_error(s, &err, paths[i]);
            goto done;
        }
        amq_filter_stats(save, &st);
        share = st.capacity;
        fprintf(pf,
                "%s{\"capacity\": %" PRIu64 ", \"error_rate\": %.17g, \"first_partition\": %u, "
                "\"kind\": \"partitioned\", \"of_partitions\": %u, \"partitions\": %u}",
                i == 0 ? "[" : ", ", share, st.fpp_target, i * q, parts, q);
        amq_filter_free(sf);
        sf = NULL;
    }
    fputc(']', pf);
    amq_filter_stats(flt, &st);
    fprintf(routing,
            "\"partitions\": %u, \"routing\": \"partition\", \"shard_hash\": \"amq:%s\", "
            "\"shard_reduce\": \"partition\", \"shard_seed\": \"0x%016" PRIx64 "\", ",
            parts, amq_hash_algo_name(st.hash_algo), st.seed);
    rc = 0;
done:
    amq_filter_free(sf);
    amq_filter_free(flt);
    return rc;
}

int cmd_export_redis_sharded(int argc, char **argv)
{
    enum { O_TO = 256, O_SHARDS, O_FORCE, O_REPLACE, O_AMQ, O_ROUTING };
    static const struct option opts[] = {
        {"to", required_argument, NULL, O_TO},
        {"shards", required_argument, NULL, O_SHARDS},
        {"force", no_argument, NULL, O_FORCE},
        {"replace", no_argument, NULL, O_REPLACE},
        {"amq", no_argument, NULL, O_AMQ},
        {"routing", required_argument, NULL, O_ROUTING},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned n = 0, i;
    int opt, force = 0, replace = 0, amq_type = 0, by_partition = 0, rc = EXIT_TROUBLE;
    int target_open = 0, fd, dfd, family = 0, fam = 0, slot = -1, npos, have_tmp = 0;
    uint32_t kind0 = 0, kind = 0;
    const char *name, *outpath = "-";
    char **keys = NULL, **cut = NULL, tmp[4200];
    int *cut_slots = NULL;
    char *params = NULL, *routing = NULL;
    size_t params_len = 0, routing_len = 0;
    FILE *pf = NULL, *rf = NULL, *o = NULL;
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
        case O_AMQ:
            amq_type = 1;
            break;
        case O_ROUTING:
            if (strcmp(optarg, "partition") == 0)
                by_partition = 1;
            else if (strcmp(optarg, "hash") != 0) {
                cli_error("--routing: '%s' is not 'hash' (the protocol's item hash, one file "
                          "per shard) or 'partition' (one partitioned file cut)",
                          optarg);
                return EXIT_TROUBLE;
            }
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
    if (by_partition) {
        if (npos != 2 && npos != 3) {
            cli_error("export --shards %u --routing partition: expected NAME, one partitioned "
                      "filter file and an optional OUT (got %d arguments)",
                      n, npos);
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
        if (npos == 3)
            outpath = argv[2];
    } else if (npos != (int)n + 1 && npos != (int)n + 2) {
        cli_error("export --shards %u: expected NAME, %u filter files and an optional OUT "
                  "(got %d arguments%s)",
                  n, n, npos,
                  npos == 2 || npos == 3 ? "; one partitioned file is cut into the shards with "
                                           "--routing partition"
                                         : "");
        cli_usage_hint();
        return EXIT_TROUBLE;
    } else if (npos == (int)n + 2)
        outpath = argv[1 + (int)n];
    name = argv[0];
    if (*name == '\0' || strpbrk(name, "{}") != NULL) {
        cli_error("export: NAME '%s' must be non-empty without '{' or '}' (the shards' hash "
                  "tags follow it: a tag in NAME would put every shard on one slot)",
                  name);
        return EXIT_TROUBLE;
    }
    for (i = 0; !by_partition && i < n; i++) {
        if (cli_is_stdin_path(argv[1 + (int)i])) {
            /* each file is read twice: its family checked, then its shard written */
            cli_error("export --shards %u: IN_%u is '-', but each shard's file is read twice "
                      "(checked, then written) and standard input cannot be: give a file",
                      n, i);
            return EXIT_TROUBLE;
        }
    }
    keys = calloc(n, sizeof *keys);
    cut = calloc(n, sizeof *cut);
    cut_slots = calloc(n, sizeof *cut_slots);
    pf = open_memstream(&params, &params_len);
    rf = open_memstream(&routing, &routing_len);
    if (keys == NULL || cut == NULL || cut_slots == NULL || pf == NULL || rf == NULL) {
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
    if (by_partition) {
        /* One file cut: shard i is partitions [i P/n, (i+1) P/n), an AMQ.* slice. */
        if (cut_partitioned(argv[1], n, cut, cut_slots, pf, rf, &total) != 0)
            goto done;
        family = 'a';
    } else {
        /* Every file first: one of another family or kind stops the export before anything
         * is written. */
        fputs("\"routing\": \"hash\", \"shard_hash\": \"xxh3_64\", \"shard_reduce\": "
              "\"multiply-shift\", \"shard_seed\": \"0x616d712e73686172\", ",
              rf);
        for (i = 0; i < n; i++) {
            const char *in = argv[1 + (int)i];
            fputs(i == 0 ? "[" : ", ", pf);
            if (shard_params(in, amq_type, pf, &fam, &cap, &kind) != 0)
                goto done;
            if (family != 0 && fam != family) {
                cli_error("%s: shard %u is a %s shard, shard 0 a %s shard: the shards must be "
                          "of one family (BF, CF or AMQ.*)",
                          in, i, family_name(fam), family_name(family));
                goto done;
            }
            if (family == 'a' && kind != kind0) {
                cli_error("%s: shard %u is %s %s filter, shard 0 %s %s filter: the shards of "
                          "one filter must be of one kind",
                          in, i, cli_a(amq_kind_name(kind)), amq_kind_name(kind),
                          cli_a(amq_kind_name(kind0)), amq_kind_name(kind0));
                goto done;
            }
            family = fam;
            kind0 = kind;
            total += cap;
        }
        fputc(']', pf);
    }
    if (fclose(pf) != 0 || fclose(rf) != 0) {
        pf = rf = NULL;
        cli_error("out of memory");
        goto done;
    }
    pf = rf = NULL;
    if ((force && cli_force_same_format(outpath, cli_is_resp, "a stream of Redis commands") != 0) ||
        cli_target_open(&t, outpath, force ? CLI_TARGET_FORCE | CLI_TARGET_ANY : 0) != 0)
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
        const char *in = by_partition ? cut[i] : argv[1 + (int)i];
        const char *args[10] = {"export", "--to", "redis", "--force", keys[i], in, tmp};
        int na = 7;
        if (replace)
            args[na++] = "--replace";
        if (family == 'a')
            args[na++] = "--amq";
        unlink(tmp); /* the export creates it: an existing text file would be refused */
        if (run_sub(cmd_export_redis, args, na) != 0) {
            cli_error("%s: shard %u (key %s) not exported", by_partition ? argv[1] : in, i,
                      keys[i]);
            goto abort;
        }
        if (copy_into(o, tmp) != 0)
            goto write_failed;
    }
    {
        /* The metadata key, last: the keys, routing and parameters a client opens NAME with.
         * Routing by partition is version 2: a version-1 client refuses it rather than send
         * items to shards by a hash that is not the filter's. */
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
                family_name(family), total);
        for (i = 0; i < n; i++) {
            if (i > 0)
                fputs(", ", mf);
            cli_json_string(mf, keys[i]);
        }
        fputs("], \"name\": ", mf);
        cli_json_string(mf, name);
        fprintf(mf, ", \"params\": %s, %s\"shards\": %u, \"version\": %d}", params, routing, n,
                by_partition ? 2 : 1);
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
    if (cut != NULL)
        for (i = 0; i < n; i++)
            if (cut[i] != NULL) {
                temp_remove(cut[i], cut_slots[i]);
                free(cut[i]);
            }
    temp_dir_remove();
    if (pf != NULL)
        fclose(pf);
    if (rf != NULL)
        fclose(rf);
    free(params);
    free(routing);
    if (keys != NULL)
        for (i = 0; i < n; i++)
            free(keys[i]);
    free(keys);
    free(cut);
    free(cut_slots);
    return rc;
}

/* ---- import ------------------------------------------------------------------------------- */

/* The n shards of a filter sharded by partition (slices, in shard order) joined back into
 * the partitioned file they were cut from, saved to out. */
static int join_slices(const char *name, amq_filter **flts, unsigned n, const char *out,
                       int force)
{
    const amq_partitioned **sl = calloc(n, sizeof *sl);
    amq_partitioned *whole = NULL;
    amq_filter *f = NULL;
    amq_errinfo err;
    unsigned i;
    int s, rc = -1;

    if (sl == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < n; i++) {
        sl[i] = amq_filter_partitioned(flts[i]);
        if (sl[i] == NULL) {
            const char *kind = amq_kind_name(amq_filter_kind(flts[i]));
            cli_error("%s: shard %u is %s %s filter, not a slice of a partitioned filter: one "
                      "OUT joins a filter sharded by partition; give %u OUT files",
                      name, i, cli_a(kind), kind, n);
            goto done;
        }
    }
    memset(&err, 0, sizeof err);
    s = amq_partitioned_join(sl, n, NULL, &whole, &err);
    if (s != AMQ_OK) {
        cli_error("%s: the shards do not join into one partitioned filter: %s", name,
                  err.msg[0] ? err.msg : amq_strerror(s));
        goto done;
    }
    s = amq_filter_from_partitioned(whole, &f);
    if (s != AMQ_OK) {
        amq_partitioned_free(whole);
        cli_lib_error(s, NULL, name);
        goto done;
    }
    rc = cli_save_filter(out, f, force ? CLI_TARGET_FORCE : 0) == 0 ? 0 : -1;
done:
    amq_filter_free(f);
    free(sl);
    return rc;
}

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
    int opt, force = 0, rc = EXIT_TROUBLE, have_all = 0, have_one = 0, join;
    amq_filter **flts = NULL;
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
    /* IN OUT with n > 1: the shards are slices of one partitioned filter, joined into OUT */
    join = n > 1 && argc - optind == 2;
    if (argc - optind != (int)n + 1 && !join) {
        cli_error("import --shards %u: expected IN and %u output files, or one for a filter "
                  "sharded by partition (got %d arguments)",
                  n, n, argc - optind);
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    argv += optind; /* the one-key import run per shard below moves optind */
    in = argv[0];
    for (i = 0; i < (join ? 1u : n); i++)
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
    flts = calloc(n, sizeof *flts);
    if (flts == NULL) {
        cli_error("out of memory");
        goto out;
    }
    for (i = 0; i < n; i++) {
        amq_errinfo err;
        int s;
        memset(&err, 0, sizeof err);
        s = amq_filter_open(done[i], 0, NULL, &flts[i], &err);
        if (s != AMQ_OK) {
            cli_lib_error(s, &err, NULL);
            goto out;
        }
    }
    if (join) {
        if (join_slices(name, flts, n, argv[1], force) != 0)
            goto out;
    } else {
        if (d.by_partition)
            cli_warn("%s: the filter is sharded by partition: its %u shards are written as "
                     "slices (give one OUT to join them into the whole filter)",
                     name, n);
        for (i = 0; i < n; i++)
            if (cli_save_filter(argv[1 + (int)i], flts[i], force ? CLI_TARGET_FORCE : 0) != 0)
                goto out;
    }
    rc = 0;
out:
    if (flts != NULL)
        for (i = 0; i < n; i++)
            amq_filter_free(flts[i]);
    free(flts);
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
