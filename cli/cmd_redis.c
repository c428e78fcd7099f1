/*
 * cmd_redis.c - amq export --to redis / amq import --from redis: filters to and from a Redis
 * server running RedisBloom or amq.so, as RedisBloom's chunk stream (BF.SCANDUMP /
 * BF.LOADCHUNK, CF.SCANDUMP / CF.LOADCHUNK).
 *
 * export writes RESP commands for `redis-cli --pipe`: the chunks are loaded into a staging key
 * in KEY's hash slot, which is then renamed to KEY (RENAMENX: an existing KEY is left alone
 * unless --replace), so a failed or partial load never touches KEY.
 *
 * import reads a stream of RESP arrays, each either
 *   - a LOADCHUNK command: [BF.LOADCHUNK|CF.LOADCHUNK, key, iterator, data] (export's output),
 *   - or a SCANDUMP reply: [iterator, data], as the server sends them for SCANDUMP key 0,
 *     SCANDUMP key <iterator>, ... (the reply with iterator 0 ends the dump);
 * other commands (DEL, RENAME, ...) are skipped.  The first chunk is the header; its length
 * tells a Cuckoo header (38 bytes) from a Bloom one (20 + 53 per link).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define AMQ_ADVANCED_API 1 /* RedisBloom links built from raw fields, a classic bit array */
#include "cli.h"
#include "cmd_redis.h"
#include "cmd_redis_amq.h"

#include "amq/advanced.h"
#include "amq/bloom.h"
#include "amq/scalable_bloom.h"
#include "amq/scalable_cuckoo.h"

/* Chunk size of the export: well under Redis' 512 MB bulk limit and its query buffer limits. */
#define EXPORT_CHUNK ((size_t)1 << 20)
/* Suffix of the staging key. */
#define STAGE_SUFFIX ".amq-load"

static const char export_usage[] =
    "usage: amq export --to redis KEY IN [OUT] [--replace] [--amq] [--force]\n"
    "\n"
    "Writes the filter file IN ('-': standard input) as Redis commands that load it\n"
    "into KEY on a server with RedisBloom or amq.so: pipe them to 'redis-cli --pipe'\n"
    "(OUT, default '-': standard output).\n"
    "  amq export --to redis mykey filter.amq | redis-cli --pipe\n"
    "A scalable-bloom or scalable-cuckoo filter in RedisBloom's layout (amq build\n"
    "--type scalable-bloom --redisbloom ...), or a classic Bloom filter with\n"
    "RedisBloom's hashing and probes, becomes a BF/CF key (BF.LOADCHUNK, CF.LOADCHUNK);\n"
    "every other filter, or any with --amq, an AMQ.* key of amq.so (AMQ.LOADCHUNK of\n"
    "the file's bytes; RedisBloom cannot load those).  The chunks go to a staging key in KEY's\n"
    "hash slot, renamed to KEY at the end: RENAMENX leaves an existing KEY as it was\n"
    "(the staging key is deleted), --replace replaces it.\n"
    "  --replace        replace KEY if it exists\n"
    "  --amq            an AMQ.* key even for a filter with a RedisBloom form\n"
    "  --force          replace OUT if it exists\n"
    "One filter sharded over N keys of a cluster: amq export --to redis --shards N --help.\n";

static const char import_usage[] =
    "usage: amq import --from redis IN OUT [--force]\n"
    "\n"
    "Reads a RedisBloom chunk stream (IN, '-': standard input) into the filter file\n"
    "OUT: RESP arrays, either the LOADCHUNK commands 'amq export --to redis' writes\n"
    "or the replies of SCANDUMP key 0, SCANDUMP key <iterator>, ... as the server\n"
    "sent them (see docs/redis.md).  BF chunks give a scalable-bloom file, CF chunks\n"
    "a scalable-cuckoo file, both in RedisBloom's layout.  The chunks must tile the\n"
    "filter in the order a dump gives them: a repeated, missing or misplaced chunk,\n"
    "a stream cut short, or a CF header whose item count is not the fingerprints'\n"
    "is an error, and nothing is written.  AMQ.LOADCHUNK commands or AMQ.SCANDUMP\n"
    "replies give the file of any kind they hold.  IN may also be the DUMP payload\n"
    "of an AMQ.* key, as 'redis-cli --raw DUMP KEY > IN' saves it (the quoted\n"
    "text redis-cli prints without --raw is refused).\n"
    "  --force          replace OUT if it exists\n"
    "A sharded filter's stream: amq import --from redis --shards N --help.\n";

/* ---- export --------------------------------------------------------------------------------- */

typedef struct resp_out {
    FILE *f;
    int failed;
} resp_out;

static void out_bulk(resp_out *o, const void *data, size_t len)
{
    if (fprintf(o->f, "$%zu\r\n", len) < 0 || (len > 0 && fwrite(data, 1, len, o->f) != len) ||
        fputs("\r\n", o->f) == EOF)
        o->failed = 1;
}

static void out_cmd(resp_out *o, int n, const char *const *args, const size_t *lens)
{
    int i;

    if (fprintf(o->f, "*%d\r\n", n) < 0)
        o->failed = 1;
    for (i = 0; i < n; i++)
        out_bulk(o, args[i], lens[i]);
}

static void out_loadchunk(resp_out *o, const char *cmd, const char *key, size_t keylen,
                          uint64_t it, const uint8_t *data, size_t len)
{
    char num[24];
    const char *args[4];
    size_t lens[4];

    snprintf(num, sizeof num, "%" PRIu64, it);
    args[0] = cmd;
    lens[0] = strlen(cmd);
    args[1] = key;
    lens[1] = keylen;
    args[2] = num;
    lens[2] = strlen(num);
    args[3] = (const char *)data;
    lens[3] = len;
    out_cmd(o, 4, args, lens);
}

static void out_key_cmd(resp_out *o, const char *cmd, const char *k1, size_t l1, const char *k2,
                        size_t l2)
{
    const char *args[3] = {cmd, k1, k2};
    size_t lens[3] = {strlen(cmd), l1, l2};
    out_cmd(o, k2 != NULL ? 3 : 2, args, lens);
}

/*
 * The staging key: in KEY's cluster hash slot, which is computed from the first {tag} with a
 * non-empty tag, else from the whole key.  NULL when no such name can be formed (KEY has a '}'
 * but no tag): then the chunks go straight to KEY.
 */
static char *stage_key(const char *key, size_t len, size_t *outlen)
{
    const char *open = memchr(key, '{', len);
    const char *close = open != NULL ? memchr(open + 1, '}', len - (size_t)(open + 1 - key)) : NULL;
    size_t sl = strlen(STAGE_SUFFIX);
    char *s;

    if (open != NULL && close != NULL && close > open + 1) {
        /* KEY has a tag: anything appended keeps it. */
        s = malloc(len + sl + 1);
        if (s == NULL)
            return NULL;
        memcpy(s, key, len);
        memcpy(s + len, STAGE_SUFFIX, sl + 1);
        *outlen = len + sl;
        return s;
    }
    if (memchr(key, '}', len) != NULL)
        return NULL;
    /* No tag: "{KEY}.amq-load" hashes KEY, as KEY itself does. */
    s = malloc(len + sl + 3);
    if (s == NULL)
        return NULL;
    s[0] = '{';
    memcpy(s + 1, key, len);
    s[len + 1] = '}';
    memcpy(s + len + 2, STAGE_SUFFIX, sl + 1);
    *outlen = len + sl + 2;
    return s;
}

/* The RedisBloom form of a classic filter (the library's conversion). */
static int bloom_as_sbloom(const char *in, const amq_bloom *b, amq_sbloom **out)
{
    int rc = amq_sbloom_from_bloom(b, NULL, out);
    if (rc == AMQ_EINCOMPAT)
        cli_error("%s: this classic Bloom filter hashes or probes differently from RedisBloom "
                  "(its bits cannot be reused); build the keys again with 'amq build --type "
                  "scalable-bloom --redisbloom'",
                  in);
    else if (rc != AMQ_OK)
        cli_error("%s: cannot be written as a RedisBloom filter: %s", in, amq_strerror(rc));
    return rc == AMQ_OK ? 0 : -1;
}

static void export_sbloom(resp_out *o, const amq_sbloom *s, const char *key, size_t keylen,
                          const uint8_t *hdr, size_t hlen)
{
    const uint8_t *data;
    size_t len;
    uint64_t it = 1, next;

    out_loadchunk(o, "BF.LOADCHUNK", key, keylen, 1, hdr, hlen);
    while (!o->failed && amq_sbloom_chunk(s, it, EXPORT_CHUNK, &data, &len, &next) == AMQ_OK &&
           len > 0) {
        out_loadchunk(o, "BF.LOADCHUNK", key, keylen, next, data, len);
        it = next;
    }
}

static void export_scuckoo(resp_out *o, const amq_scuckoo *c, const char *key, size_t keylen,
                           const uint8_t *hdr)
{
    const uint8_t *data;
    size_t len;
    uint64_t it = 1, next;

    out_loadchunk(o, "CF.LOADCHUNK", key, keylen, 1, hdr, AMQ_SCUCKOO_HEADER_SIZE);
    while (!o->failed && amq_scuckoo_chunk(c, it, EXPORT_CHUNK, &data, &len, &next) == AMQ_OK &&
           len > 0) {
        out_loadchunk(o, "CF.LOADCHUNK", key, keylen, next, data, len);
        it = next;
    }
}

/* 1 when f has a RedisBloom form (a BF or CF key): a scalable kind in RedisBloom's layout, or
 * a classic Bloom filter hashed and probed as RedisBloom does. */
int cli_redisbloom_form(amq_filter *f)
{
    const amq_sbloom *s = amq_filter_sbloom(f);
    const amq_scuckoo *c = amq_filter_scuckoo(f);
    amq_bloom *b = amq_filter_bloom(f);
    uint8_t ch[AMQ_SCUCKOO_HEADER_SIZE];
    int ok = 0;

    if (s != NULL) {
        size_t hlen = amq_sbloom_header_serialized_size(s);
        uint8_t *h = malloc(hlen);
        ok = h != NULL && amq_sbloom_header_serialize(s, h, hlen) == AMQ_OK;
        free(h);
    } else if (c != NULL) {
        ok = amq_scuckoo_header_serialize(c, ch, sizeof ch) == AMQ_OK;
    } else if (b != NULL) {
        ok = amq_sbloom_from_bloom_ok(b);
    }
    return ok;
}

int cmd_export_redis(int argc, char **argv)
{
    enum { O_TO = 256, O_FORCE, O_REPLACE, O_AMQ, O_SHARDS };
    static const struct option opts[] = {
        {"to", required_argument, NULL, O_TO},
        {"shards", required_argument, NULL, O_SHARDS},
        {"force", no_argument, NULL, O_FORCE},
        {"replace", no_argument, NULL, O_REPLACE},
        {"amq", no_argument, NULL, O_AMQ},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *key, *in, *outpath = "-";
    amq_filter *f = NULL;
    amq_sbloom *own = NULL;
    const amq_sbloom *s;
    const amq_scuckoo *c;
    uint8_t *hdr = NULL;
    size_t hlen = 0, keylen, stagelen = 0;
    char *stage = NULL;
    resp_out o = {NULL, 0};
    cli_target t;
    int opt, force = 0, replace = 0, rc = EXIT_TROUBLE, target_open = 0, fd, dfd, amqtype = 0;

    if (cli_redis_sharded(argc, argv))
        return cmd_export_redis_sharded(argc, argv);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case O_TO:
            break;
        case O_FORCE:
            force = 1;
            break;
        case O_REPLACE:
            replace = 1;
            break;
        case O_AMQ:
            amqtype = 1;
            break;
        case O_SHARDS: /* an abbreviation (--shard): the sharded parser reads it all again */
            optind = 1;
            return cmd_export_redis_sharded(argc, argv);
        case 'h':
            fputs(export_usage, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (argc - optind != 2 && argc - optind != 3) {
        cli_error("export: expected KEY IN [OUT]");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    key = argv[optind];
    in = argv[optind + 1];
    if (argc - optind == 3)
        outpath = argv[optind + 2];
    keylen = strlen(key);
    if (keylen == 0) {
        cli_error("export: KEY is empty");
        return EXIT_TROUBLE;
    }
    if (cli_filter_open(in, 0, &f) != 0)
        return EXIT_TROUBLE;
    rc = EXIT_TROUBLE;
    s = amq_filter_sbloom(f);
    c = amq_filter_scuckoo(f);
    /* Every filter without a RedisBloom form goes to amq.so's own type. */
    amqtype = amqtype || !cli_redisbloom_form(f);
    if (amqtype) {
        s = NULL;
        c = NULL;
    } else if (s == NULL && c == NULL) {
        amq_bloom *b = amq_filter_bloom(f);
        if (b == NULL) {
            const char *kind = amq_kind_name(amq_filter_kind(f));
            cli_error("%s: %s %s filter has no RedisBloom form (scalable-bloom, scalable-cuckoo "
                      "or a classic Bloom filter with RedisBloom's hashing can be exported)",
                      in, cli_a(kind), kind);
            goto done;
        }
        if (bloom_as_sbloom(in, b, &own) != 0)
            goto done;
        s = own;
    }
    if (amqtype) {
        /* the file's bytes as they are: no header of RedisBloom's */
    } else if (s != NULL) {
        hlen = amq_sbloom_header_serialized_size(s);
        hdr = malloc(hlen);
        if (hdr == NULL) {
            cli_error("out of memory");
            goto done;
        }
        if (amq_sbloom_header_serialize(s, hdr, hlen) != AMQ_OK) {
            cli_error("%s: a native-mode scalable Bloom filter has no RedisBloom form (create "
                      "or build it with --redisbloom)",
                      in);
            goto done;
        }
    } else {
        hdr = malloc(AMQ_SCUCKOO_HEADER_SIZE);
        if (hdr == NULL) {
            cli_error("out of memory");
            goto done;
        }
        if (amq_scuckoo_header_serialize(c, hdr, AMQ_SCUCKOO_HEADER_SIZE) != AMQ_OK) {
            cli_error("%s: a native-mode scalable cuckoo filter has no RedisBloom form (create "
                      "or build it with --redisbloom)",
                      in);
            goto done;
        }
    }
    /* As every output of the tool: a temporary file renamed into place when complete (removed
     * on a signal); an existing OUT only with --force. */
    if ((force && cli_force_same_format(outpath, cli_is_resp, "a stream of Redis commands") != 0) ||
        cli_target_open(&t, outpath, force ? CLI_TARGET_FORCE | CLI_TARGET_ANY : 0) != 0)
        goto done;
    target_open = 1;
    fd = cli_target_begin(&t);
    dfd = fd >= 0 ? dup(fd) : -1;
    o.f = dfd >= 0 ? fdopen(dfd, "wb") : NULL;
    if (o.f == NULL) {
        if (fd >= 0)
            cli_error("%s: %s", outpath, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        cli_target_abort(&t);
        goto done;
    }
    stage = stage_key(key, keylen, &stagelen);
    if (stage != NULL) {
        /* A leftover of an interrupted load must not take the chunks. */
        out_key_cmd(&o, "DEL", stage, stagelen, NULL, 0);
        if (amqtype) {
            if (cli_redis_amq_export(o.f, f, stage, stagelen) != 0)
                o.failed = 1;
        } else if (s != NULL)
            export_sbloom(&o, s, stage, stagelen, hdr, hlen);
        else
            export_scuckoo(&o, c, stage, stagelen, hdr);
        out_key_cmd(&o, replace ? "RENAME" : "RENAMENX", stage, stagelen, key, keylen);
        out_key_cmd(&o, "DEL", stage, stagelen, NULL, 0);
    } else {
        if (replace)
            out_key_cmd(&o, "DEL", key, keylen, NULL, 0);
        if (amqtype) {
            if (cli_redis_amq_export(o.f, f, key, keylen) != 0)
                o.failed = 1;
        } else if (s != NULL)
            export_sbloom(&o, s, key, keylen, hdr, hlen);
        else
            export_scuckoo(&o, c, key, keylen, hdr);
    }
    if (fflush(o.f) != 0 || ferror(o.f))
        o.failed = 1;
    if (fclose(o.f) != 0)
        o.failed = 1;
    if (o.failed) {
        cli_error("%s: write failed: %s", strcmp(outpath, "-") == 0 ? "standard output" : outpath,
                  strerror(errno));
        cli_target_abort(&t);
        goto done;
    }
    if (cli_target_commit(&t) != 0)
        goto done;
    rc = 0;
done:
    if (target_open)
        cli_target_release(&t);
    free(stage);
    free(hdr);
    amq_sbloom_free(own);
    amq_filter_free(f);
    return rc;
}

/* ---- import ----------------------------------------------------------------------------------- */

typedef struct resp_in {
    FILE *f;
    const char *name;
    uint64_t pos; /* bytes consumed, for messages */
    int eof;      /* clean end of input before an element */
} resp_in;

/* Reads a CRLF-terminated line (type byte included) into buf; 0 on success. */
static int in_line(resp_in *r, char *buf, size_t cap)
{
    size_t n = 0;
    int ch;

    for (;;) {
        ch = getc(r->f);
        if (ch == EOF) {
            if (n == 0)
                r->eof = 1;
            else
                cli_error("%s: byte %" PRIu64 ": input ends inside a RESP line", r->name, r->pos);
            return -1;
        }
        r->pos++;
        if (ch == '\n')
            break;
        if (n + 1 >= cap) {
            cli_error("%s: byte %" PRIu64 ": RESP line too long (not a RESP stream?)", r->name,
                      r->pos);
            return -1;
        }
        buf[n++] = (char)ch;
    }
    if (n == 0 || buf[n - 1] != '\r') {
        cli_error("%s: byte %" PRIu64 ": RESP line without CR LF", r->name, r->pos);
        return -1;
    }
    buf[n - 1] = '\0';
    return 0;
}

static int parse_num(const char *s, long long *out)
{
    char *end;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' ? 0 : -1;
}

/* One element: a bulk string (*data malloc'd, *len) or an integer (*data NULL, *num). */
typedef struct resp_item {
    uint8_t *data;
    size_t len;
    long long num;
    int is_num;
} resp_item;

static int in_item(resp_in *r, resp_item *it)
{
    char line[64];
    long long n;

    memset(it, 0, sizeof *it);
    if (in_line(r, line, sizeof line) != 0) {
        if (r->eof)
            cli_error("%s: byte %" PRIu64 ": input ends inside a RESP array", r->name, r->pos);
        return -1;
    }
    if (line[0] == ':' || line[0] == '+') {
        if (parse_num(line + 1, &n) != 0) {
            if (line[0] == '+') {
                /* A simple string that is not a number: treated as text. */
                it->len = strlen(line + 1);
                it->data = (uint8_t *)strdup(line + 1);
                return it->data != NULL ? 0 : -1;
            }
            cli_error("%s: byte %" PRIu64 ": bad RESP integer '%s'", r->name, r->pos, line + 1);
            return -1;
        }
        it->num = n;
        it->is_num = 1;
        return 0;
    }
    if (line[0] != '$' || parse_num(line + 1, &n) != 0 || n < -1) {
        cli_error("%s: byte %" PRIu64 ": expected a RESP bulk string or integer, got '%.20s'",
                  r->name, r->pos, line);
        return -1;
    }
    if (n == -1) { /* nil: an empty chunk */
        it->data = malloc(1);
        return it->data != NULL ? 0 : -1;
    }
    if ((unsigned long long)n > (unsigned long long)AMQ_SBLOOM_MAX_CHUNK * 64) {
        cli_error("%s: byte %" PRIu64 ": bulk string of %lld bytes is larger than any chunk",
                  r->name, r->pos, n);
        return -1;
    }
    it->len = (size_t)n;
    it->data = malloc(it->len + 2);
    if (it->data == NULL) {
        cli_error("out of memory");
        return -1;
    }
    if (fread(it->data, 1, it->len + 2, r->f) != it->len + 2 || it->data[it->len] != '\r' ||
        it->data[it->len + 1] != '\n') {
        cli_error("%s: byte %" PRIu64 ": bulk string of %zu bytes is cut short or lacks CR LF",
                  r->name, r->pos, it->len);
        free(it->data);
        it->data = NULL;
        return -1;
    }
    r->pos += it->len + 2;
    return 0;
}

/* The (iterator, data) of a chunk from a bulk or integer element holding a number. */
static int item_number(const resp_item *it, long long *out)
{
    char buf[32];

    if (it->is_num) {
        *out = it->num;
        return 0;
    }
    if (it->len == 0 || it->len >= sizeof buf)
        return -1;
    memcpy(buf, it->data, it->len);
    buf[it->len] = '\0';
    return parse_num(buf, out);
}

enum { KIND_UNKNOWN, KIND_BF, KIND_CF, KIND_AMQ };

typedef struct import_state {
    int kind;
    cli_amq_chunks amq; /* KIND_AMQ: the amq file's bytes (cmd_redis_amq.c) */
    amq_sbloom *s;
    amq_scuckoo *c;
    uint64_t chunks;
    uint64_t data_bytes; /* bytes of the data chunks applied: where the next one must start */
    int done;            /* SCANDUMP's final [0, ...] reply seen */
} import_state;

static int apply_chunk(import_state *st, resp_in *r, int kind, uint64_t it, const uint8_t *data,
                       size_t len)
{
    int rc;

    /* amq.so's own type: chunks of the amq file (its magic starts the first) */
    if (kind == KIND_AMQ || st->kind == KIND_AMQ ||
        (st->kind == KIND_UNKNOWN && len >= 4 && memcmp(data, "\x89" "AMQ", 4) == 0)) {
        if (st->kind != KIND_UNKNOWN && st->kind != KIND_AMQ) {
            cli_error("%s: byte %" PRIu64 ": an AMQ chunk in a %s stream", r->name, r->pos,
                      st->kind == KIND_BF ? "BF" : "CF");
            return -1;
        }
        if (kind != KIND_UNKNOWN && kind != KIND_AMQ) {
            cli_error("%s: byte %" PRIu64 ": a %s chunk in an AMQ stream", r->name, r->pos,
                      kind == KIND_BF ? "BF" : "CF");
            return -1;
        }
        st->kind = KIND_AMQ;
        return cli_amq_chunk_add(&st->amq, r->name, it, data, len);
    }
    if (st->kind == KIND_UNKNOWN) {
        /* The first chunk is the header. */
        if (it != 1) {
            cli_error("%s: byte %" PRIu64 ": the first chunk has iterator %" PRIu64
                      ", not 1 (the header)",
                      r->name, r->pos, it);
            return -1;
        }
        if (kind == KIND_UNKNOWN)
            kind = len == AMQ_SCUCKOO_HEADER_SIZE ? KIND_CF : KIND_BF;
        st->kind = kind;
        if (kind == KIND_BF) {
            rc = amq_sbloom_header_deserialize(data, len, NULL, &st->s);
        } else {
            amq_scuckoo_header h;
            rc = amq_scuckoo_header_decode(data, len, &h);
            if (rc == AMQ_OK)
                rc = amq_scuckoo_from_header(&h, NULL, NULL, &st->c);
        }
        if (rc != AMQ_OK) {
            cli_error("%s: byte %" PRIu64 ": bad %s header chunk (%zu bytes): %s", r->name,
                      r->pos, kind == KIND_BF ? "Bloom" : "Cuckoo", len, amq_strerror(rc));
            return -1;
        }
        st->chunks++;
        return 0;
    }
    if (kind != KIND_UNKNOWN && kind != st->kind) {
        cli_error("%s: byte %" PRIu64 ": a %s chunk in a %s stream", r->name, r->pos,
                  kind == KIND_BF ? "BF" : "CF", st->kind == KIND_BF ? "BF" : "CF");
        return -1;
    }
    if (len == 0)
        return 0;
    /* The iterator names where the chunk ends (it - 1 = its start + len): the chunks of a dump
     * tile the filter in order, so a repeated chunk (or one in place of another of the same
     * length) starts elsewhere than where the last one ended, though the byte total holds. */
    if (it > (uint64_t)len && it - len - 1 != st->data_bytes) {
        uint64_t start = it - len - 1;
        cli_error("%s: byte %" PRIu64 ": chunk at iterator %" PRIu64 " (%zu bytes) holds bytes "
                  "%" PRIu64 "..%" PRIu64 " of the filter, but the next chunk of a dump starts at "
                  "byte %" PRIu64 ": %s; nothing written",
                  r->name, r->pos, it, len, start, start + len - 1, st->data_bytes,
                  start < st->data_bytes ? "a chunk repeated, or chunks out of order"
                                         : "a chunk missing, or chunks out of order");
        return -1;
    }
    rc = st->kind == KIND_BF ? amq_sbloom_chunk_apply(st->s, it, data, len)
                             : amq_scuckoo_chunk_apply(st->c, it, data, len);
    if (rc != AMQ_OK) {
        cli_error("%s: byte %" PRIu64 ": chunk at iterator %" PRIu64 " (%zu bytes) does not fit "
                  "the filter: %s",
                  r->name, r->pos, it, len,
                  rc == AMQ_ERANGE ? "no link at that offset" : "runs past its link");
        return -1;
    }
    st->chunks++;
    st->data_bytes += len;
    return 0;
}

static void free_items(resp_item *items, long long n)
{
    long long i;
    for (i = 0; i < n; i++)
        free(items[i].data);
}

/* Reads one top-level element and applies it; 1 at a clean end of input. */
static int import_one(import_state *st, resp_in *r)
{
    char line[64];
    resp_item items[4];
    long long n, i, itv;
    int rc = -1, kind = KIND_UNKNOWN;
    size_t cl;
    const char *cmd;

    if (in_line(r, line, sizeof line) != 0)
        return r->eof ? 1 : -1;
    if (line[0] != '*' || parse_num(line + 1, &n) != 0) {
        cli_error("%s: byte %" PRIu64 ": expected a RESP array, got '%.20s'", r->name, r->pos,
                  line);
        return -1;
    }
    if (n < 2 || n > 4) {
        /* Another command (DEL, RENAME, ...) of at most a few arguments: skipped. */
        if (n < 0 || n > 16) {
            cli_error("%s: byte %" PRIu64 ": unexpected RESP array of %lld elements", r->name,
                      r->pos, n);
            return -1;
        }
        for (i = 0; i < n; i++) {
            if (in_item(r, &items[0]) != 0)
                return -1;
            free(items[0].data);
        }
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (in_item(r, &items[i]) != 0) {
            free_items(items, i);
            return -1;
        }
    }
    if (n == 2 && !items[0].is_num && item_number(&items[0], &itv) != 0) {
        rc = 0; /* a command of one argument (DEL key): skipped */
        goto out;
    }
    if (n == 2) {
        /* A SCANDUMP reply: [next iterator, data]; iterator 0 ends the dump. */
        if (item_number(&items[0], &itv) != 0 || itv < 0 || items[1].is_num) {
            cli_error("%s: byte %" PRIu64 ": a 2-element array that is not a SCANDUMP reply "
                      "[iterator, data]",
                      r->name, r->pos);
            goto out;
        }
        if (itv == 0)
            st->done = 1;
        rc = itv == 0 ? 0 : apply_chunk(st, r, kind, (uint64_t)itv, items[1].data, items[1].len);
        goto out;
    }
    cmd = items[0].is_num ? "" : (const char *)items[0].data;
    cl = items[0].is_num ? 0 : items[0].len;
    if (n == 4 && cl == 13 && strncasecmp(cmd, "AMQ.LOADCHUNK", 13) == 0)
        kind = KIND_AMQ;
    else if (n == 4 && cl == 12 && strncasecmp(cmd, "BF.LOADCHUNK", 12) == 0)
        kind = KIND_BF;
    else if (n == 4 && cl == 12 && strncasecmp(cmd, "CF.LOADCHUNK", 12) == 0)
        kind = KIND_CF;
    else {
        rc = 0; /* another command: skipped */
        goto out;
    }
    if (item_number(&items[2], &itv) != 0 || itv < 1 || items[3].is_num) {
        cli_error("%s: byte %" PRIu64 ": LOADCHUNK with a bad iterator", r->name, r->pos);
        goto out;
    }
    rc = apply_chunk(st, r, kind, (uint64_t)itv, items[3].data, items[3].len);
out:
    free_items(items, n);
    return rc;
}

/* The whole input (a DUMP payload) into memory, then cmd_redis_amq.c decodes it. */
static int import_dump(resp_in *r, const char *out, int force)
{
    uint8_t *buf = NULL, *nb;
    size_t len = 0, cap = 0, got;
    int rc;

    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : (size_t)1 << 16;
            if ((nb = realloc(buf, cap)) == NULL) {
                free(buf);
                cli_error("out of memory");
                return EXIT_TROUBLE;
            }
            buf = nb;
        }
        got = fread(buf + len, 1, cap - len, r->f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(r->f)) {
        free(buf);
        cli_error("%s: %s", r->name, strerror(errno));
        return EXIT_TROUBLE;
    }
    rc = cli_redis_amq_import_dump(buf, len, r->name, out, force);
    free(buf);
    return rc == 0 ? 0 : EXIT_TROUBLE;
}

int cmd_import_redis(int argc, char **argv)
{
    enum { O_FROM = 256, O_FORCE, O_SHARDS };
    static const struct option opts[] = {
        {"from", required_argument, NULL, O_FROM},
        {"shards", required_argument, NULL, O_SHARDS},
        {"force", no_argument, NULL, O_FORCE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *in, *out;
    import_state st;
    resp_in r;
    amq_filter *f = NULL;
    int opt, force = 0, rc;

    if (cli_redis_sharded(argc, argv))
        return cmd_import_redis_sharded(argc, argv);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case O_FROM:
            break;
        case O_FORCE:
            force = 1;
            break;
        case O_SHARDS: /* an abbreviation (--shard): the sharded parser reads it all again */
            optind = 1;
            return cmd_import_redis_sharded(argc, argv);
        case 'h':
            fputs(import_usage, stdout);
            return 0;
        default:
            cli_usage_hint();
            return EXIT_TROUBLE;
        }
    }
    if (argc - optind != 2) {
        cli_error("import: expected IN and OUT");
        cli_usage_hint();
        return EXIT_TROUBLE;
    }
    in = argv[optind];
    out = argv[optind + 1];
    if (cli_check_output(out, force) != 0)
        return EXIT_TROUBLE;
    memset(&r, 0, sizeof r);
    memset(&st, 0, sizeof st);
    r.name = strcmp(in, "-") == 0 ? "standard input" : in;
    r.f = strcmp(in, "-") == 0 ? stdin : fopen(in, "rb");
    if (r.f == NULL) {
        cli_error("%s: %s", in, strerror(errno));
        return EXIT_TROUBLE;
    }
    {
        /* A DUMP payload of an AMQ.* key (a module value: type byte 7), not a RESP stream. */
        int first = getc(r.f);
        if (first != EOF)
            ungetc(first, r.f);
        if (first == 7) {
            rc = import_dump(&r, out, force);
            if (r.f != stdin)
                fclose(r.f);
            return rc;
        }
        /* redis-cli prints a bulk string quoted and escaped ("\x07...") unless --raw */
        if (first == '"') {
            cli_error("%s: byte 1: a quoted string, not a RESP stream or a DUMP payload: "
                      "redis-cli prints a DUMP quoted unless --raw; save it with "
                      "'redis-cli --raw DUMP KEY > FILE'", r.name);
            if (r.f != stdin)
                fclose(r.f);
            return EXIT_TROUBLE;
        }
    }
    while (!st.done && (rc = import_one(&st, &r)) == 0)
        ;
    if (r.f != stdin)
        fclose(r.f);
    if (!st.done && rc < 0)
        goto fail;
    if (st.kind == KIND_AMQ) {
        rc = cli_amq_chunks_finish(&st.amq, r.name, out, force);
        cli_amq_chunks_free(&st.amq);
        return rc == 0 ? 0 : EXIT_TROUBLE;
    }
    if (st.kind == KIND_UNKNOWN) {
        cli_error("%s: no LOADCHUNK command or SCANDUMP reply in the input", r.name);
        goto fail;
    }
    {
        /* A stream cut at a chunk boundary parses cleanly: only the byte count tells that
         * part of the filter is missing (it would answer "no" for keys it holds). */
        uint64_t want;
        if (st.kind == KIND_BF) {
            amq_sbloom_info bi;
            amq_sbloom_get_info(st.s, &bi);
            want = bi.bytes;
        } else {
            amq_scuckoo_info ci;
            amq_scuckoo_get_info(st.c, &ci);
            want = ci.bytes;
        }
        if (st.data_bytes != want) {
            cli_error("%s: the chunks hold %" PRIu64 " bytes of the filter's %" PRIu64
                      " (a stream cut short); nothing written",
                      r.name, st.data_bytes, want);
            goto fail;
        }
    }
    if (st.kind == KIND_CF && amq_scuckoo_check(st.c) != AMQ_OK) {
        /* The rule of every amq file reader: a count that is not the fingerprints' is a
         * damaged filter (a server would load it, and answer CF.INFO and deletes wrongly). */
        amq_scuckoo_info ci;
        amq_scuckoo_get_info(st.c, &ci);
        cli_error("%s: the header records %" PRIu64 " items but the chunks hold another number "
                  "of fingerprints (a damaged dump); nothing written",
                  r.name, ci.items);
        goto fail;
    }
    rc = st.kind == KIND_BF ? amq_filter_from_sbloom(st.s, &f) : amq_filter_from_scuckoo(st.c, &f);
    st.s = NULL;
    st.c = NULL;
    if (rc != AMQ_OK) {
        cli_error("import: %s", amq_strerror(rc));
        return EXIT_TROUBLE;
    }
    rc = cli_save_filter(out, f, force ? CLI_TARGET_FORCE : 0);
    amq_filter_free(f);
    return rc == 0 ? 0 : EXIT_TROUBLE;
fail:
    amq_sbloom_free(st.s);
    amq_scuckoo_free(st.c);
    cli_amq_chunks_free(&st.amq);
    return EXIT_TROUBLE;
}
