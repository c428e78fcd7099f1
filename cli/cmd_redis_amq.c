/*
 * cmd_redis_amq.c - amq export --to redis / amq import --from redis for amq.so's own data type
 * (AMQ.*, docs/redis.md): every kind, as the amq file's bytes.
 *
 * export writes AMQ.LOADCHUNK key <offset past the chunk> <chunk> commands; import takes
 * those, the replies of AMQ.SCANDUMP key 0, AMQ.SCANDUMP key <next>, ... (cmd_redis.c reads
 * the RESP stream and hands the chunks here), or a DUMP payload of an amqfilter key.  The
 * bytes go together in order (no gap, no repeat) and are written only when they make a valid
 * filter (amq_filter_deserialize checks everything, the payload checksum included).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define AMQ_ADVANCED_API 1 /* amq_filter_serialize_range, amq_filter_peek */
#include "cli.h"
#include "cmd_redis_amq.h"
#include "crc64.h"

#include "amq/advanced.h"

/* Chunk size of the export: as cmd_redis.c's, well under Redis' bulk and query limits. */
#define AMQ_EXPORT_CHUNK ((size_t)1 << 20)

/* ---- export ----------------------------------------------------------------------------- */

static int put_bulk(FILE *f, const void *data, size_t len)
{
    return fprintf(f, "$%zu\r\n", len) < 0 || (len != 0 && fwrite(data, 1, len, f) != len) ||
           fputs("\r\n", f) == EOF;
}

int cli_redis_amq_export(FILE *f, const amq_filter *flt, const char *key, size_t keylen)
{
    uint64_t size, off;
    uint8_t *buf;
    size_t n;
    char it[24];

    if (amq_filter_serialized_size(flt, &size) != AMQ_OK)
        return -1;
    buf = malloc(AMQ_EXPORT_CHUNK);
    if (buf == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (off = 0; off < size; off += n) {
        if (amq_filter_serialize_range(flt, off, buf, AMQ_EXPORT_CHUNK, &n) != AMQ_OK || n == 0) {
            cli_error("cannot serialize the filter");
            free(buf);
            return -1;
        }
        snprintf(it, sizeof it, "%" PRIu64, off + n);
        if (fputs("*4\r\n", f) == EOF || put_bulk(f, "AMQ.LOADCHUNK", 13) ||
            put_bulk(f, key, keylen) || put_bulk(f, it, strlen(it)) || put_bulk(f, buf, n)) {
            free(buf);
            return -1;
        }
    }
    free(buf);
    return 0;
}

/* ---- chunks in ---------------------------------------------------------------------------- */

int cli_amq_chunk_add(cli_amq_chunks *c, const char *name, uint64_t it, const uint8_t *data,
                      size_t len)
{
    amq_errinfo err;
    uint64_t pos;

    if (len == 0 || it < len) {
        cli_error("%s: chunk %" PRIu64 ": the iterator is the offset just past the chunk's %zu "
                  "bytes",
                  name, c->chunks + 1, len);
        return -1;
    }
    pos = it - len;
    if (c->buf == NULL) {
        uint64_t total;
        int rc;
        if (pos != 0) {
            cli_error("%s: the first amq chunk starts at byte %" PRIu64 ", not 0", name, pos);
            return -1;
        }
        memset(&err, 0, sizeof err);
        rc = amq_filter_peek(data, len, &total, NULL, &err);
        if (rc == AMQ_ETRUNC) {
            cli_error("%s: the first chunk must hold the whole header (%" PRIu64 " bytes), it "
                      "has %zu",
                      name, total, len);
            return -1;
        }
        if (rc != AMQ_OK) {
            cli_error("%s: not an amq filter: %s", name, err.msg);
            return -1;
        }
        if (total > SIZE_MAX) {
            cli_error("%s: out of memory for a %" PRIu64 "-byte filter", name, total);
            return -1;
        }
        c->total = total;
    }
    if (pos != c->have) {
        cli_error("%s: chunk out of order: it starts at byte %" PRIu64 ", %" PRIu64
                  " bytes came before it (no gaps, no repeats)",
                  name, pos, c->have);
        return -1;
    }
    if (len > c->total - c->have) {
        cli_error("%s: a chunk runs past the filter's end (%" PRIu64 " bytes)", name, c->total);
        return -1;
    }
    if (c->have + len > c->cap || c->buf == NULL) {
        /* the buffer follows the bytes that came (doubled, at most the filter's size): a
         * header that claims a huge filter costs no memory until its bytes come */
        size_t cap = c->cap > 0 ? c->cap : 1u << 20;
        uint8_t *nb;
        while (cap < c->have + len)
            cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
        if (cap > c->total)
            cap = (size_t)c->total;
        if ((nb = realloc(c->buf, cap)) == NULL) {
            cli_error("%s: out of memory for a %" PRIu64 "-byte filter", name, c->total);
            return -1;
        }
        c->buf = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->have, data, len);
    c->have += len;
    c->chunks++;
    return 0;
}

int cli_amq_chunks_filter(cli_amq_chunks *c, const char *name, amq_filter **out)
{
    amq_errinfo err;
    int rc;

    *out = NULL;
    if (c->buf == NULL) {
        cli_error("%s: no amq chunk", name);
        return -1;
    }
    if (c->have != c->total) {
        cli_error("%s: the chunks hold %" PRIu64 " bytes of the filter's %" PRIu64
                  " (a stream cut short); nothing written",
                  name, c->have, c->total);
        return -1;
    }
    memset(&err, 0, sizeof err);
    rc = amq_filter_deserialize(c->buf, (size_t)c->total, 0, NULL, out, &err);
    if (rc != AMQ_OK) {
        cli_error("%s: %s; nothing written", name, err.msg[0] ? err.msg : amq_strerror(rc));
        return -1;
    }
    return 0;
}

int cli_amq_chunks_finish(cli_amq_chunks *c, const char *name, const char *out, int force)
{
    amq_filter *f = NULL;
    int rc;

    if (cli_amq_chunks_filter(c, name, &f) != 0)
        return -1;
    rc = cli_save_filter(out, f, force ? CLI_TARGET_FORCE : 0);
    amq_filter_free(f);
    return rc == 0 ? 0 : -1;
}

void cli_amq_chunks_free(cli_amq_chunks *c)
{
    free(c->buf);
    memset(c, 0, sizeof *c);
}

/* ---- a DUMP payload ----------------------------------------------------------------------------
 * RDB_TYPE_MODULE_2 (7), the module id (a 64-bit length: 0x81 + 8 bytes big-endian; the type's
 * 9-character name in 6-bit symbols, then the 10-bit encoding version), the values saved, each
 * after its opcode (2: an unsigned, 5: a string, possibly LZF-compressed), opcode 0 (EOF), then
 * the RDB version (2 bytes) and the CRC-64 (Jones) of everything before it, little-endian. */

/* The longest string an amqfilter value holds (redis/amqtype.c's chunks: 16 MiB). */
#define DUMP_MAX_STRING ((uint64_t)16 << 20)

typedef struct rd {
    const uint8_t *p;
    size_t n;
    int bad;
} rd;

static uint64_t rd_len(rd *r, int *encoded)
{
    uint64_t v = 0;
    uint8_t b;
    int i;

    *encoded = 0;
    if (r->n < 1)
        return r->bad = 1, 0;
    b = r->p[0];
    r->p++, r->n--;
    switch (b >> 6) {
    case 0:
        return b & 0x3F;
    case 1:
        if (r->n < 1)
            return r->bad = 1, 0;
        v = (uint64_t)(b & 0x3F) << 8 | r->p[0];
        r->p++, r->n--;
        return v;
    case 3:
        *encoded = 1;
        return b & 0x3F;
    default:
        break;
    }
    if (b == 0x80) {
        if (r->n < 4)
            return r->bad = 1, 0;
        for (i = 0; i < 4; i++)
            v = v << 8 | r->p[i];
        r->p += 4, r->n -= 4;
        return v;
    }
    if (b == 0x81) {
        if (r->n < 8)
            return r->bad = 1, 0;
        for (i = 0; i < 8; i++)
            v = v << 8 | r->p[i];
        r->p += 8, r->n -= 8;
        return v;
    }
    return r->bad = 1, 0;
}

static uint64_t rd_unsigned(rd *r)
{
    int enc;
    if (rd_len(r, &enc) != 2 || enc)
        return r->bad = 1, 0;
    return rd_len(r, &enc);
}

/* LZF decompression (the RDB's compressed strings): 0 on success. */
static int lzf_expand(const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen)
{
    size_t i = 0, o = 0;
    while (i < inlen) {
        unsigned ctrl = in[i++];
        if (ctrl < 32) { /* a literal run of ctrl + 1 bytes */
            size_t run = ctrl + 1u;
            if (run > inlen - i || run > outlen - o)
                return -1;
            memcpy(out + o, in + i, run);
            i += run;
            o += run;
        } else { /* a back reference */
            size_t len = ctrl >> 5, back;
            if (len == 7) {
                if (i >= inlen)
                    return -1;
                len += in[i++];
            }
            len += 2;
            if (i >= inlen)
                return -1;
            back = ((size_t)(ctrl & 0x1F) << 8) + in[i++] + 1;
            if (back > o || len > outlen - o)
                return -1;
            for (; len > 0; len--, o++)
                out[o] = out[o - back];
        }
    }
    return o == outlen ? 0 : -1;
}

/* A string (opcode 5 first); *len, a malloc'd copy, NULL when bad. */
static uint8_t *rd_string(rd *r, size_t *len)
{
    uint64_t n, clen, ulen;
    uint8_t *s;
    int enc;

    if (rd_len(r, &enc) != 5 || enc)
        return r->bad = 1, NULL;
    n = rd_len(r, &enc);
    if (r->bad)
        return NULL;
    if (enc) {
        if (n != 3) /* only LZF; integer encodings do not occur for module strings */
            return r->bad = 1, NULL;
        clen = rd_len(r, &enc);
        ulen = rd_len(r, &enc);
        /* the module's strings are chunks of at most 16 MiB: a larger size is forged */
        if (r->bad || clen > r->n || ulen > DUMP_MAX_STRING ||
            (s = malloc(ulen > 0 ? (size_t)ulen : 1)) == NULL)
            return r->bad = 1, NULL;
        if (lzf_expand(r->p, (size_t)clen, s, (size_t)ulen) != 0) {
            free(s);
            return r->bad = 1, NULL;
        }
        r->p += clen, r->n -= clen;
        *len = (size_t)ulen;
        return s;
    }
    if (n > r->n || n > DUMP_MAX_STRING || (s = malloc(n > 0 ? (size_t)n : 1)) == NULL)
        return r->bad = 1, NULL;
    memcpy(s, r->p, (size_t)n);
    r->p += n, r->n -= n;
    *len = (size_t)n;
    return s;
}

/* The last 8 bytes are the CRC-64 of the others. */
static int dump_crc_ok(const uint8_t *p, size_t n)
{
    uint64_t crc = 0;
    size_t i;
    for (i = 0; i < 8; i++)
        crc |= (uint64_t)p[n - 8 + i] << (8 * i);
    return cli_crc64_jones(p, n - 8) == crc;
}

/* The module id of amqfilter, encoding version 4 (redis/amqtype.c). */
static uint64_t amqfilter_id(void)
{
    static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *name = "amqfilter";
    uint64_t id = 0;
    int i;
    for (i = 0; i < 9; i++)
        id = id << 6 | (uint64_t)(strchr(set, name[i]) - set);
    return id << 10 | 4;
}

int cli_redis_amq_decode_dump(const uint8_t *p, size_t n, const char *name, amq_filter **out)
{
    rd r;
    uint64_t state, total, filled, chunks, i;
    cli_amq_chunks c;
    int enc, rc = -1;

    *out = NULL;
    memset(&c, 0, sizeof c);
    if (n < 11 || p[0] != 7) {
        cli_error("%s: not a DUMP payload of a module value", name);
        return -1;
    }
    /* `redis-cli --raw DUMP key > file` ends the payload with a newline */
    if (p[n - 1] == '\n' && dump_crc_ok(p, n - 1) && !dump_crc_ok(p, n))
        n--;
    if (!dump_crc_ok(p, n)) {
        cli_error("%s: the DUMP payload's CRC-64 does not match: damaged", name);
        return -1;
    }
    r.p = p + 1;
    r.n = n - 11;
    r.bad = 0;
    if (rd_len(&r, &enc) != amqfilter_id() || r.bad) {
        cli_error("%s: the DUMP payload is not an amqfilter value (AMQ.*) of encoding 4; "
                  "for BF/CF keys use BF.SCANDUMP / CF.SCANDUMP replies",
                  name);
        return -1;
    }
    state = rd_unsigned(&r);
    (void)rd_unsigned(&r); /* the key's MAXSIZE: a server setting, not the filter's */
    total = rd_unsigned(&r);
    filled = rd_unsigned(&r);
    chunks = rd_unsigned(&r);
    if (r.bad || state != 0 || filled != total || chunks > r.n) {
        cli_error("%s: %s", name,
                  r.bad ? "a damaged DUMP payload"
                        : state != 0 ? "the key was still loading (AMQ.LOADCHUNK incomplete)"
                                     : "a damaged DUMP payload");
        return -1;
    }
    for (i = 0; i < chunks; i++) {
        size_t len;
        uint8_t *s = rd_string(&r, &len);
        if (s == NULL) {
            cli_error("%s: a damaged DUMP payload (chunk %" PRIu64 ")", name, i + 1);
            goto done;
        }
        if (cli_amq_chunk_add(&c, name, c.have + len, s, len) != 0) {
            free(s);
            goto done;
        }
        free(s);
    }
    if (rd_len(&r, &enc) != 0 || r.bad || r.n != 0) {
        cli_error("%s: a damaged DUMP payload (no end after the chunks)", name);
        goto done;
    }
    if (c.total != total) {
        cli_error("%s: the value records %" PRIu64 " bytes, its header %" PRIu64, name, total,
                  c.total);
        goto done;
    }
    rc = cli_amq_chunks_filter(&c, name, out);
done:
    cli_amq_chunks_free(&c);
    return rc;
}

int cli_redis_amq_import_dump(const uint8_t *p, size_t n, const char *name, const char *out,
                              int force)
{
    amq_filter *f = NULL;
    int rc;

    if (cli_redis_amq_decode_dump(p, n, name, &f) != 0)
        return -1;
    rc = cli_save_filter(out, f, force ? CLI_TARGET_FORCE : 0);
    amq_filter_free(f);
    return rc == 0 ? 0 : -1;
}
