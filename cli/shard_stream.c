/*
 * shard_stream.c - the chunks of a sharded filter's RESP stream, sorted by shard (see
 * shard_stream.h): a reader of outside bytes, kept apart from the files it leads to so that
 * fuzz/fuzz_shard_stream.c runs it alone.
 *
 * Every length is checked before it is allocated or read: a line is at most 63 bytes, an
 * array at most 16 elements, a bulk string at most 4 chunks of 16 MiB.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AMQ_ADVANCED_API 1 /* AMQ_SBLOOM_MAX_CHUNK */
#include "cli.h"
#include "shard_stream.h"

#include "amq/advanced.h"

/* Elements of one RESP array: bulk strings (or integers, kept as their digits). */
#define MAX_ELEMS 16
typedef struct cmd_in {
    char *arg[MAX_ELEMS];
    size_t len[MAX_ELEMS];
    int is_int[MAX_ELEMS];
    int n;
} cmd_in;

static void cmd_free(cmd_in *c)
{
    int i;
    for (i = 0; i < c->n; i++)
        free(c->arg[i]);
    c->n = 0;
}

static int read_line(FILE *f, const char *name, uint64_t *pos, char *buf, size_t cap, int *eof)
{
    size_t n = 0;
    int ch;

    while ((ch = getc(f)) != EOF) {
        (*pos)++;
        if (ch == '\n')
            break;
        if (n + 1 >= cap) {
            cli_error("%s: byte %" PRIu64 ": RESP line too long (not a RESP stream?)", name, *pos);
            return -1;
        }
        buf[n++] = (char)ch;
    }
    if (ch == EOF) {
        if (n == 0 && eof != NULL) {
            *eof = 1;
            return -1;
        }
        cli_error("%s: byte %" PRIu64 ": input ends inside a RESP command", name, *pos);
        return -1;
    }
    if (n == 0 || buf[n - 1] != '\r') {
        cli_error("%s: byte %" PRIu64 ": RESP line without CR LF", name, *pos);
        return -1;
    }
    buf[n - 1] = '\0';
    return 0;
}

static int parse_ll(const char *s, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' ? 0 : -1;
}

/* One RESP array into c; 1 at a clean end of input. */
static int read_cmd(FILE *f, const char *name, uint64_t *pos, cmd_in *c)
{
    char line[64];
    long long n, len;
    int i, eof = 0;

    c->n = 0;
    if (read_line(f, name, pos, line, sizeof line, &eof) != 0)
        return eof ? 1 : -1;
    if (line[0] != '*' || parse_ll(line + 1, &n) != 0 || n < 1 || n > MAX_ELEMS) {
        cli_error("%s: byte %" PRIu64 ": expected a RESP array of 1 to %d elements, got '%.20s'",
                  name, *pos, MAX_ELEMS, line);
        return -1;
    }
    for (i = 0; i < (int)n; i++) {
        if (read_line(f, name, pos, line, sizeof line, NULL) != 0)
            goto fail;
        c->is_int[i] = line[0] == ':';
        if (c->is_int[i]) {
            c->arg[i] = strdup(line + 1);
            c->len[i] = strlen(line + 1);
            if (c->arg[i] == NULL)
                goto oom;
            c->n = i + 1;
            continue;
        }
        /* A chunk is at most 16 MiB (amq, RedisBloom's SCANDUMP); headers are small. */
        if (line[0] != '$' || parse_ll(line + 1, &len) != 0 || len < 0 ||
            (unsigned long long)len > (unsigned long long)AMQ_SBLOOM_MAX_CHUNK * 4) {
            cli_error("%s: byte %" PRIu64 ": expected a RESP bulk string, got '%.20s'", name,
                      *pos, line);
            goto fail;
        }
        c->arg[i] = malloc((size_t)len + 3);
        if (c->arg[i] == NULL)
            goto oom;
        c->n = i + 1;
        c->len[i] = (size_t)len;
        if (fread(c->arg[i], 1, (size_t)len + 2, f) != (size_t)len + 2 ||
            c->arg[i][len] != '\r' || c->arg[i][len + 1] != '\n') {
            cli_error("%s: byte %" PRIu64 ": bulk string of %lld bytes is cut short or lacks "
                      "CR LF",
                      name, *pos, len);
            goto fail;
        }
        c->arg[i][len] = '\0';
        *pos += (uint64_t)len + 2;
    }
    return 0;
oom:
    cli_error("out of memory");
fail:
    cmd_free(c);
    return -1;
}

/* The shard of key "NAME:{i.j}" (-1 if it has no such tag); its NAME part's length. */
static long key_shard(const char *key, size_t len, size_t *prefix)
{
    const char *open = memchr(key, '{', len), *p;
    long i = 0;

    if (open == NULL || open == key || open[-1] != ':')
        return -1;
    *prefix = (size_t)(open - 1 - key);
    for (p = open + 1; p < key + len && *p >= '0' && *p <= '9'; p++) {
        i = i * 10 + (*p - '0');
        if (i > (long)CLI_MAX_SHARDS)
            return -1;
    }
    if (p == open + 1 || p >= key + len || *p != '.')
        return -1;
    return i;
}

static void write_cmd(FILE *f, const cmd_in *c)
{
    int i;

    fprintf(f, "*%d\r\n", c->n);
    for (i = 0; i < c->n; i++) {
        fprintf(f, "$%zu\r\n", c->len[i]);
        fwrite(c->arg[i], 1, c->len[i], f);
        fputs("\r\n", f);
    }
}

/* The value of field "key" in the JSON object js (written compact or spaced), or NULL: the
 * first occurrence of the quoted name followed by a colon (the metadata's fields are flat
 * but for params, whose names are not looked up here). */
static const char *json_field(const char *js, const char *key)
{
    const size_t kl = strlen(key);
    const char *p = js;

    while ((p = strchr(p, '"')) != NULL) {
        const char *q = p + 1;
        if (strncmp(q, key, kl) == 0 && q[kl] == '"') {
            q += kl + 1;
            q += strspn(q, " \t\r\n");
            if (*q == ':')
                return q + 1 + strspn(q + 1, " \t\r\n");
        }
        p++;
    }
    return NULL;
}

int cli_shard_demux(FILE *in, const char *name, unsigned n, FILE *spill, const char *spill_name,
                    cli_shard_demux_out *out)
{
    size_t cap = 0, pl = 0;
    uint64_t pos = 0;
    cmd_in c;
    long s, off;
    int r;

    memset(out, 0, sizeof *out);
    memset(&c, 0, sizeof c);
    out->chunks = calloc(n > 0 ? n : 1, sizeof *out->chunks);
    if (out->chunks == NULL) {
        cli_error("out of memory");
        return -1;
    }
    while ((r = read_cmd(in, name, &pos, &c)) == 0) {
        if (c.n == 2 && c.is_int[0]) {
            cli_error("%s: byte %" PRIu64 ": a SCANDUMP reply names no key: import each "
                      "shard's stream alone (amq import --from redis IN OUT)",
                      name, pos);
            goto fail;
        }
        if (c.n >= 3 && c.len[0] == 3 && strncasecmp(c.arg[0], "SET", 3) == 0) {
            /* The metadata: its shard count must be the one asked for. */
            const char *sh = json_field(c.arg[2], "shards"), *rt = json_field(c.arg[2], "routing");
            unsigned long m = sh != NULL ? strtoul(sh, NULL, 10) : n;
            if (m != n || (sh != NULL && (*sh < '0' || *sh > '9'))) {
                cli_error("%s: the metadata of '%.200s' says %lu shards, not %u", name, c.arg[1],
                          m, n);
                goto fail;
            }
            if (rt != NULL && strncmp(rt, "\"partition\"", 11) == 0)
                out->by_partition = 1;
        }
        if (c.n != 4 ||
            !((c.len[0] == 12 && (strncasecmp(c.arg[0], "BF.LOADCHUNK", 12) == 0 ||
                                  strncasecmp(c.arg[0], "CF.LOADCHUNK", 12) == 0)) ||
              (c.len[0] == 13 && strncasecmp(c.arg[0], "AMQ.LOADCHUNK", 13) == 0))) {
            cmd_free(&c); /* DEL, RENAME, SET...: not a chunk */
            continue;
        }
        s = key_shard(c.arg[1], c.len[1], &pl);
        if (s < 0 || (unsigned long)s >= n) {
            cli_error("%s: byte %" PRIu64 ": key '%.200s' is not a shard key NAME:{i.j} with "
                      "i < %u",
                      name, pos, c.arg[1], n);
            goto fail;
        }
        if (out->prefix == NULL) {
            out->prefix = malloc(pl + 1);
            if (out->prefix == NULL) {
                cli_error("out of memory");
                goto fail;
            }
            memcpy(out->prefix, c.arg[1], pl);
            out->prefix[pl] = '\0';
            out->prefix_len = pl;
        } else if (pl != out->prefix_len || memcmp(out->prefix, c.arg[1], pl) != 0) {
            cli_error("%s: byte %" PRIu64 ": key '%.200s' is not of filter '%s'", name, pos,
                      c.arg[1], out->prefix);
            goto fail;
        }
        if (out->nspans == cap) {
            cli_shard_span *ns;
            cap = cap ? 2 * cap : 64;
            ns = realloc(out->spans, cap * sizeof *ns);
            if (ns == NULL) {
                cli_error("out of memory");
                goto fail;
            }
            out->spans = ns;
        }
        off = ftell(spill);
        write_cmd(spill, &c);
        if (off < 0 || ferror(spill) || ftell(spill) < off) {
            cli_error("%s: %s", spill_name, strerror(errno));
            goto fail;
        }
        out->spans[out->nspans].shard = (unsigned)s;
        out->spans[out->nspans].off = off;
        out->spans[out->nspans].len = (size_t)(ftell(spill) - off);
        out->nspans++;
        out->chunks[s]++;
        cmd_free(&c);
    }
    if (r < 0)
        goto fail;
    return 0;
fail:
    cmd_free(&c);
    cli_shard_demux_free(out);
    return -1;
}

void cli_shard_demux_free(cli_shard_demux_out *out)
{
    free(out->spans);
    free(out->chunks);
    free(out->prefix);
    memset(out, 0, sizeof *out);
}
