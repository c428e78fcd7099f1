/*
 * amqtype.c - the AMQ.* commands and the amqfilter data type: one key holds
 * a filter of any amq kind (classic, blocked, partitioned, cuckoo, the
 * scalable kinds, aging, expandable, quotient, pocket, and the static fuse
 * and ribbon), a thin layer over the generic handle of amq/filter.h.
 * docs/redis.md documents the commands.
 *
 * The value's bytes are the amq file's bytes (docs/file-format.md): the RDB
 * value, the AOF rewrite, AMQ.SCANDUMP and AMQ.LOADCHUNK carry the serialized
 * filter (amq_filter_serialize_range) in chunks of at most 16 MiB, and a
 * file written by `amq` loads as it is.  A key being loaded by AMQ.LOADCHUNK
 * holds the bytes received so far ("loading"), persisted as such, until the
 * last chunk turns them into a filter; other commands refuse it meanwhile.
 *
 * Memory: each value has its own allocator (over the module's, so the
 * memory guard applies) that counts what the library holds for it: MEMORY
 * USAGE is that count, and the per-key size cap (amq-max-key-bytes, or a
 * key's MAXSIZE) refuses a growth past it in client commands, with the
 * filter unchanged.  Loading and replication are never refused for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h" /* first: it asks for AMQ_ADVANCED_API */

#include "amq/aging.h"
#include "amq/filter.h"
#include "amq/static.h"
#include "amqtype.h"

static RedisModuleType *amqt_type;

/* Module configs (config.c registers them; docs/redis.md). */
uint64_t amqt_max_key_bytes = AMQT_DEFAULT_MAX_KEY_BYTES;
uint64_t amqt_build_max_items = AMQT_DEFAULT_BUILD_MAX_ITEMS;

#define AMQT_CHUNK AMQ_RM_MAX_CHUNK
/* The key name in the type's name: exactly 9 characters (Redis' rule). */
#define AMQT_TYPE_NAME "amqfilter"
/* The fewest keys a pocket filter starts with (amq/filter.h: 64 at least). */
#define AMQT_POCKET_MIN_START 64u

#define E_NOT_FOUND "ERR not found"
#define E_EXISTS "ERR item exists"
#define E_SYNTAX "ERR syntax error"
#define E_NOMEM "ERR Insufficient memory"
#define E_LOADING "ERR amq: key is still loading: send the rest of its AMQ.LOADCHUNK chunks"

/* ---- values -------------------------------------------------------------------------------- */

typedef struct amqt_value {
    amq_filter *f;          /* NULL while loading */
    uint8_t *stage;         /* loading: the bytes so far; a static kind: the bytes f views */
    void *stage_block;      /* the allocation stage is in (stage is 64-byte aligned in it) */
    uint64_t total, filled; /* the file's size, and how many of its bytes are there */
    uint64_t room;          /* bytes allocated at stage: total, or filled for a loading
                             * value read back (RDB, RESTORE, COPY) until its next chunk */
    uint64_t maxsize;       /* this key's size cap in bytes; 0: amq-max-key-bytes */
    uint64_t bytes;         /* what the library holds for f (the allocator's count) */
    int capped;             /* the last refusal of the allocator was the cap */
    amq_allocator alloc;    /* counts into bytes; opaque = this value */
} amqt_value;

static uint64_t cap_of(const amqt_value *v)
{
    return v->maxsize != 0 ? v->maxsize : amqt_max_key_bytes;
}

static void *v_alloc(void *opaque, size_t size)
{
    amqt_value *v = opaque;
    void *p;
    /* the cap binds client commands only (the guard's rule): what loads or
     * comes from the primary was accepted once */
    if (rm_guard_active() && (size > cap_of(v) || v->bytes > cap_of(v) - size)) {
        v->capped = 1;
        return NULL;
    }
    p = amq_rm_allocator.alloc(NULL, size);
    if (p != NULL)
        v->bytes += size;
    return p;
}

static void *v_zalloc(void *opaque, size_t size)
{
    amqt_value *v = opaque;
    void *p;
    if (rm_guard_active() && (size > cap_of(v) || v->bytes > cap_of(v) - size)) {
        v->capped = 1;
        return NULL;
    }
    p = amq_rm_allocator.zalloc(NULL, size);
    if (p != NULL)
        v->bytes += size;
    return p;
}

static void v_free(void *opaque, void *ptr, size_t size)
{
    amqt_value *v = opaque;
    v->bytes -= size < v->bytes ? size : v->bytes;
    amq_rm_allocator.free(NULL, ptr, size);
}

static amqt_value *value_new(void)
{
    amqt_value *v = RedisModule_Alloc(sizeof *v);
    memset(v, 0, sizeof *v);
    v->alloc.alloc = v_alloc;
    v->alloc.zalloc = v_zalloc;
    v->alloc.free = v_free;
    v->alloc.opaque = v;
    return v;
}

static void stage_free(amqt_value *v)
{
    if (v->stage_block != NULL)
        RedisModule_Free(v->stage_block);
    v->stage_block = NULL;
    v->stage = NULL;
}

static void value_free(amqt_value *v)
{
    if (v == NULL)
        return;
    amq_filter_free(v->f); /* first: a static filter may view stage */
    stage_free(v);
    RedisModule_Free(v);
}

/* A staging area of room bytes for a file of total, 64-byte aligned (a static
 * filter queries it in place); 0 when refused (guard) or out of memory. */
static int stage_alloc_room(amqt_value *v, uint64_t total, uint64_t room)
{
    void *block;
    if (room > SIZE_MAX - 64)
        return 0;
    block = amq_rm_allocator.alloc(NULL, (size_t)room + 64);
    if (block == NULL)
        return 0;
    v->stage_block = block;
    v->stage = (uint8_t *)(((uintptr_t)block + 63) & ~(uintptr_t)63);
    v->total = total;
    v->room = room;
    v->filled = 0;
    return 1;
}

static int stage_alloc(amqt_value *v, uint64_t total)
{
    return stage_alloc_room(v, total, total);
}

/* A loading value read back holds only its bytes so far (the size its header claims is
 * no more than a claim: a crafted payload of a few hundred bytes claimed gigabytes); the
 * next chunk moves them into the whole file's room.  0 when out of memory (v unchanged). */
static int stage_grow(amqt_value *v)
{
    void *old = v->stage_block;
    const uint8_t *from = v->stage;
    uint64_t filled = v->filled;

    if (v->room >= v->total)
        return 1;
    if (!stage_alloc(v, v->total)) /* assigns nothing when it fails */
        return 0;
    memcpy(v->stage, from, (size_t)filled);
    v->filled = filled;
    RedisModule_Free(old);
    return 1;
}

/*
 * The bytes are all there: make the filter.  A static kind (read-only
 * anyway) views the bytes in place; the others copy them and the staging
 * area goes.  AMQ_OK, or the library's status with err filled (v unchanged).
 */
static int stage_finish(amqt_value *v, amq_errinfo *err)
{
    uint32_t kind = 0;
    uint64_t size;
    amq_filter *f = NULL;
    int rc;

    rc = amq_filter_peek(v->stage, (size_t)v->total, &size, &kind, err);
    if (rc != AMQ_OK)
        return rc;
    if (amq_kind_is_static(kind)) {
        rc = amq_filter_deserialize(v->stage, (size_t)v->total, AMQ_OPEN_MMAP, &v->alloc, &f,
                                    err);
        if (rc != AMQ_OK)
            return rc;
        v->f = f;
        return AMQ_OK;
    }
    rc = amq_filter_deserialize(v->stage, (size_t)v->total, 0, &v->alloc, &f, err);
    if (rc != AMQ_OK)
        return rc;
    v->f = f;
    stage_free(v);
    v->total = v->filled = v->room = 0;
    return AMQ_OK;
}

/* Serialized size of a complete value, or of what a loading one has. */
static uint64_t value_size(const amqt_value *v)
{
    uint64_t size = 0;
    if (v->f == NULL)
        return v->filled;
    (void)amq_filter_serialized_size(v->f, &size);
    return size;
}

/* Bytes [off, off + cap) of the value's serialized form (a loading value:
 * of what it has), into buf; the number written. */
static size_t value_range(const amqt_value *v, uint64_t off, uint8_t *buf, size_t cap)
{
    size_t n = 0;
    if (v->f == NULL) {
        if (off >= v->filled)
            return 0;
        n = v->filled - off < cap ? (size_t)(v->filled - off) : cap;
        memcpy(buf, v->stage + off, n);
        return n;
    }
    if (v->stage != NULL && v->total == value_size(v)) {
        /* a static filter: its file's bytes are right there */
        if (off >= v->total)
            return 0;
        n = v->total - off < cap ? (size_t)(v->total - off) : cap;
        memcpy(buf, v->stage + off, n);
        return n;
    }
    if (amq_filter_serialize_range(v->f, off, buf, cap, &n) != AMQ_OK)
        return 0;
    return n;
}

/* ---- errors ------------------------------------------------------------------------------- */

/* Replies "ERR amq: <what>: <library message>". */
static int reply_lib_error(RedisModuleCtx *ctx, const char *what, int rc, const amq_errinfo *err)
{
    char msg[400];
    const char *detail = err != NULL && err->msg[0] != '\0' ? err->msg : amq_strerror(rc);
    size_t i;
    snprintf(msg, sizeof msg, "ERR amq: %s: %s", what, detail);
    /* an error reply is one line */
    for (i = 0; msg[i] != '\0'; i++)
        if (msg[i] == '\r' || msg[i] == '\n')
            msg[i] = ' ';
    return RedisModule_ReplyWithError(ctx, msg);
}

static int reply_cap_error(RedisModuleCtx *ctx, const amqt_value *v, uint64_t need)
{
    char msg[300];
    if (need != 0)
        snprintf(msg, sizeof msg,
                 "ERR amq: the filter needs %llu bytes, over the key size cap of %llu "
                 "(MAXSIZE, or CONFIG SET amq-max-key-bytes)",
                 (unsigned long long)need, (unsigned long long)cap_of(v));
    else
        snprintf(msg, sizeof msg,
                 "ERR amq: the filter would take more than the key size cap of %llu bytes "
                 "(MAXSIZE, or CONFIG SET amq-max-key-bytes)",
                 (unsigned long long)cap_of(v));
    return RedisModule_ReplyWithError(ctx, msg);
}

/* The names of the kinds built in (pred NULL) or of those pred says yes to,
 * from the library's table (ids are small and pinned: every id up to 255
 * asked), joined by ", " - the last by last_sep - into buf. */
static void kind_names(char *buf, size_t cap, int (*pred)(uint32_t kind), const char *last_sep)
{
    const char *names[64];
    size_t n = 0, i, used = 0;
    uint32_t id;

    for (id = 1; id <= 255 && n < 64; id++)
        if (amq_kind_name(id) != NULL && (pred == NULL || pred(id)))
            names[n++] = amq_kind_name(id);
    buf[0] = '\0';
    for (i = 0; i < n && used < cap; i++) {
        const char *sep = i == 0 ? "" : ", ";
        if (i > 0 && i + 1 == n)
            sep = last_sep;
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", sep, names[i]);
    }
}

/* The kinds that grow from a start of their own while their expected rate
 * stays at or under their target, and refuse an add (AMQ_ELIMIT) once another
 * growth would pass it (amq/filter.h). */
static int grows_to_its_rate(uint32_t kind)
{
    return kind == AMQ_KIND_EXPANDABLE || kind == AMQ_KIND_QUOTIENT || kind == AMQ_KIND_POCKET;
}

static int reply_kind_error(RedisModuleCtx *ctx, const amq_filter *f, const char *what)
{
    char msg[400];
    snprintf(msg, sizeof msg, "ERR amq: %s filters %s", amq_kind_name(amq_filter_kind(f)), what);
    return RedisModule_ReplyWithError(ctx, msg);
}

/* ---- keys ---------------------------------------------------------------------------------- */

enum { OPEN_MISSING_OK = 1 };

/*
 * Opens a key holding a complete filter; replies the error and returns NULL
 * otherwise (a missing key: *missing set and no reply when missing_ok).
 * The key stays open in *key either way.
 */
static amqt_value *open_filter(RedisModuleCtx *ctx, RedisModuleString *name, int mode,
                               RedisModuleKey **key, int missing_ok, int *missing)
{
    void *value;
    int st = rm_open(ctx, name, mode, amqt_type, key, &value);
    if (missing != NULL)
        *missing = 0;
    if (st == RM_KEY_WRONGTYPE) {
        RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
        return NULL;
    }
    if (st == RM_KEY_EMPTY) {
        if (missing != NULL)
            *missing = 1;
        if (!missing_ok)
            RedisModule_ReplyWithError(ctx, E_NOT_FOUND);
        return NULL;
    }
    if (((amqt_value *)value)->f == NULL) {
        RedisModule_ReplyWithError(ctx, E_LOADING);
        return NULL;
    }
    return value;
}

static int arg_u64(RedisModuleString *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    long long v;
    if (!rm_arg_ll(s, &v) || v < 0 || (uint64_t)v < lo || (uint64_t)v > hi)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* A 64-bit seed: 0 to 2^64 - 1 in decimal (the files' and the tool's range; a negative one was
 * taken as 2^64 + it). */
static int arg_seed(RedisModuleString *s, uint64_t *out)
{
    size_t len, i;
    const char *p = RedisModule_StringPtrLen(s, &len);
    uint64_t v = 0;
    if (len == 0 || len > 20)
        return 0;
    for (i = 0; i < len; i++) {
        const uint64_t d = (uint64_t)(p[i] - '0');
        if (p[i] < '0' || p[i] > '9' || v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

/* ---- AMQ.CREATE key kind capacity error_rate [options] ----------------------------------------- */

/* Options shared by CREATE and BUILD; 0 and a reply on a bad one. */
typedef struct create_opts {
    amq_config cfg;
    uint64_t maxsize;
} create_opts;

/* Each option's name in amq_config (amq_option_kinds' table), for those some kinds only read. */
static const struct {
    const char *arg, *option;
} opt_names[] = {
    {"NONSCALING", "nonscaling"}, {"FPBITS", "fingerprint_bits"}, {"BUCKETSIZE", "bucket_size"},
    {"EXPANSION", "expansion"},   {"PARTITIONS", "partitions"},     {"BITS", "bits"},
    {"HASHES", "hashes"},         {"BITSPERKEY", "bits_per_key"},
};

/* An option o's kind does not read is refused (the library would ignore it): 0 and a reply. */
static int opt_applies(RedisModuleCtx *ctx, RedisModuleString *a, const create_opts *o)
{
    size_t i;
    for (i = 0; i < sizeof opt_names / sizeof opt_names[0]; i++)
        if (rm_arg_is(a, opt_names[i].arg) &&
            !amq_option_applies(opt_names[i].option, o->cfg.kind)) {
            const char *kinds = amq_option_kinds(opt_names[i].option);
            char msg[200];
            snprintf(msg, sizeof msg, "ERR amq: %s does not apply to kind %s (it does to:%.*s)",
                     opt_names[i].arg, amq_kind_name(o->cfg.kind), (int)strlen(kinds) - 1, kinds);
            return RedisModule_ReplyWithError(ctx, msg), 0;
        }
    return 1;
}

static int parse_opts(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int i,
                      create_opts *o)
{
    uint64_t v;
    while (i < argc) {
        RedisModuleString *a = argv[i];
        int has = i + 1 < argc;
        if (!opt_applies(ctx, a, o))
            return 0;
        if (rm_arg_is(a, "NONSCALING")) {
            o->cfg.nonscaling = 1;
            i++;
            continue;
        }
        if (!has)
            return RedisModule_ReplyWithError(ctx, E_SYNTAX), 0;
        if (rm_arg_is(a, "MAXSIZE")) {
            if (!arg_u64(argv[i + 1], 1, UINT64_MAX >> 1, &o->maxsize))
                return RedisModule_ReplyWithError(ctx, "ERR amq: MAXSIZE must be a positive "
                                                       "number of bytes"), 0;
        } else if (rm_arg_is(a, "SEED")) {
            if (!arg_seed(argv[i + 1], &o->cfg.seed))
                return RedisModule_ReplyWithError(ctx, "ERR amq: SEED must be an integer in "
                                                       "[0, 18446744073709551615]"), 0;
        } else if (rm_arg_is(a, "FPBITS")) {
            if (!arg_u64(argv[i + 1], 1, 64, &v))
                return RedisModule_ReplyWithError(ctx, "ERR amq: FPBITS must be an integer in "
                                                       "[1, 64]"), 0;
            o->cfg.fingerprint_bits = (uint32_t)v;
        } else if (rm_arg_is(a, "BUCKETSIZE")) {
            if (!arg_u64(argv[i + 1], 1, 255, &v))
                return RedisModule_ReplyWithError(ctx, "ERR amq: BUCKETSIZE must be an integer "
                                                       "in [1, 255]"), 0;
            o->cfg.bucket_size = (uint32_t)v;
        } else if (rm_arg_is(a, "EXPANSION")) {
            if (!arg_u64(argv[i + 1], 1, AMQ_RM_MAX_EXPANSION, &v))
                return RedisModule_ReplyWithError(ctx, "ERR amq: EXPANSION must be an integer "
                                                       "in [1, 32768]"), 0;
            o->cfg.expansion = (uint32_t)v;
        } else if (rm_arg_is(a, "PARTITIONS")) {
            if (!arg_u64(argv[i + 1], 1, 1u << 20, &v))
                return RedisModule_ReplyWithError(ctx, "ERR amq: PARTITIONS must be an integer "
                                                       "in [1, 1048576]"), 0;
            o->cfg.partitions = (uint32_t)v;
        } else if (rm_arg_is(a, "BITS")) {
            if (!arg_u64(argv[i + 1], 1, UINT64_MAX >> 1, &o->cfg.bits))
                return RedisModule_ReplyWithError(ctx, "ERR amq: BITS must be a positive "
                                                       "integer"), 0;
        } else if (rm_arg_is(a, "HASHES")) {
            if (!arg_u64(argv[i + 1], 1, 64, &v))
                return RedisModule_ReplyWithError(ctx, "ERR amq: HASHES must be an integer in "
                                                       "[1, 64]"), 0;
            o->cfg.k = (uint32_t)v;
        } else if (rm_arg_is(a, "BITSPERKEY")) {
            if (!rm_arg_double(argv[i + 1], &o->cfg.bits_per_key))
                return RedisModule_ReplyWithError(ctx, "ERR amq: BITSPERKEY must be a number"),
                       0;
        } else {
            return RedisModule_ReplyWithError(ctx, E_SYNTAX), 0;
        }
        i += 2;
    }
    return 1;
}

/* "kind" and "error_rate" arguments: 0 and a reply when bad. */
static int parse_kind_rate(RedisModuleCtx *ctx, RedisModuleString *kname, RedisModuleString *rate,
                           create_opts *o)
{
    char name[32];
    size_t len, i;
    const char *s = RedisModule_StringPtrLen(kname, &len);
    uint32_t kind;
    double fpp;

    if (len >= sizeof name)
        len = sizeof name - 1;
    for (i = 0; i < len; i++)
        name[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    name[len] = '\0';
    if (amq_kind_from_name(name, &kind) != AMQ_OK) {
        char names[300], msg[400];
        kind_names(names, sizeof names, NULL, ", ");
        snprintf(msg, sizeof msg, "ERR amq: unknown kind (%s)", names);
        return RedisModule_ReplyWithError(ctx, msg), 0;
    }
    if (!rm_arg_double(rate, &fpp) || !(fpp > 0.0 && fpp < 1.0))
        return RedisModule_ReplyWithError(ctx, "ERR amq: error rate must be in (0, 1)"), 0;
    memset(o, 0, sizeof *o);
    amq_config_init(&o->cfg, kind);
    o->cfg.fpp = fpp;
    o->cfg.threads = 1; /* the server's thread: no builder threads */
    return 1;
}

/* Makes v's filter from o->cfg (a new, empty one); replies the error and
 * returns 0 on failure. */
static int create_filter(RedisModuleCtx *ctx, amqt_value *v, create_opts *o)
{
    amq_errinfo err;
    int rc;

    err.msg[0] = '\0';
    o->cfg.alloc = &v->alloc;
    v->maxsize = o->maxsize;
    v->capped = 0;
    rc = amq_filter_new(&o->cfg, &v->f, &err);
    if (rc != AMQ_OK) {
        if (v->capped)
            return reply_cap_error(ctx, v, 0), 0;
        if (rc == AMQ_ENOMEM)
            return RedisModule_ReplyWithError(ctx, E_NOMEM), 0;
        return reply_lib_error(ctx, "cannot create the filter", rc, &err), 0;
    }
    /* the cap binds client commands only: a replica or the AOF applies
     * what the primary accepted, whatever its own setting */
    if (rm_guard_active() && v->bytes > cap_of(v)) {
        uint64_t need = v->bytes;
        amq_filter_free(v->f);
        v->f = NULL;
        return reply_cap_error(ctx, v, need), 0;
    }
    return 1;
}

static int amqt_create(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    create_opts o;
    RedisModuleKey *key;
    amqt_value *v;
    void *value;
    int st;

    if (argc < 5)
        return RedisModule_WrongArity(ctx);
    if (!parse_kind_rate(ctx, argv[2], argv[4], &o))
        return REDISMODULE_OK;
    if (!arg_u64(argv[3], 1, UINT64_MAX >> 1, &o.cfg.capacity))
        return RedisModule_ReplyWithError(ctx, "ERR amq: capacity must be a positive integer");
    if (!parse_opts(ctx, argv, argc, 5, &o))
        return REDISMODULE_OK;
    if (amq_kind_is_static(o.cfg.kind))
        return RedisModule_ReplyWithError(
            ctx, "ERR amq: fuse and ribbon filters are static: made from their keys by "
                 "AMQ.BUILD or loaded by AMQ.LOADCHUNK, not created empty");
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, amqt_type, &key, &value);
    if (st != RM_KEY_EMPTY) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, st == RM_KEY_WRONGTYPE
                                                   ? REDISMODULE_ERRORMSG_WRONGTYPE
                                                   : E_EXISTS);
    }
    v = value_new();
    if (!create_filter(ctx, v, &o)) {
        value_free(v);
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    RedisModule_ModuleTypeSetValue(key, amqt_type, v);
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- adds, deletes ----------------------------------------------------------------------------- */

/* The reply to a failed add of one item. */
static int reply_add_error(RedisModuleCtx *ctx, amqt_value *v, int rc, const char *item,
                           size_t len)
{
    const uint32_t kind = amq_filter_kind(v->f);
    if (v->capped)
        return reply_cap_error(ctx, v, 0);
    /* a cuckoo kind's refusal read from its buckets; the expandable kind's reply names both
     * causes, as it always did */
    if (rc == AMQ_EFULL && (kind == AMQ_KIND_CUCKOO || kind == AMQ_KIND_SCALABLE_CUCKOO)) {
        uint32_t why;
        const char *limit = kind == AMQ_KIND_CUCKOO
                                ? "a cuckoo filter keeps 2b + 1 of one item, b its bucket size"
                                : "a scalable cuckoo filter keeps one item's copies in its two "
                                  "buckets of the newest link, and grows for no item's copies";
        char msg[300];
        if (amq_filter_refusal(v->f, item, len, &why) == AMQ_OK &&
            (why == AMQ_REFUSAL_COPIES || why == AMQ_REFUSAL_OTHER_COPIES)) {
            snprintf(msg, sizeof msg,
                     why == AMQ_REFUSAL_COPIES
                         ? "ERR amq: the item is stored too many times already (each add keeps "
                           "a copy, AMQ.DEL takes one back; %s); nothing added"
                         : "ERR amq: another item is stored too many times already: no add "
                           "fits until AMQ.DEL takes a copy of it back (%s); nothing added",
                     limit);
            return RedisModule_ReplyWithError(ctx, msg);
        }
    }
    /* an expandable filter grows: its AMQ_EFULL is one item's copies, or items crowded
     * into its bucket (a query cannot tell which: a crowded item may answer present) */
    if (rc == AMQ_EFULL && amq_filter_kind(v->f) == AMQ_KIND_EXPANDABLE)
        return RedisModule_ReplyWithError(
            ctx, "ERR amq: the item is in this expandable filter 32 times, the most one item "
                 "may be, or its bucket holds 256 stashed items, the most a bucket may (items "
                 "crowded by a weak hash or chosen against the seed); nothing added");
    /* a pocket filter grows too: its AMQ_EFULL is one item's copies, or items crowded into
     * one bucket, past what its spare keeps for a bucket */
    if (rc == AMQ_EFULL && amq_filter_kind(v->f) == AMQ_KIND_POCKET)
        return RedisModule_ReplyWithError(
            ctx, "ERR amq: the item's bucket of this pocket filter is full: the item was added "
                 "too many times, or items crowded into its bucket (chosen against the seed); "
                 "nothing added");
    if (rc == AMQ_EFULL)
        return RedisModule_ReplyWithError(ctx, "ERR amq: the filter is full");
    if (rc == AMQ_ENOMEM)
        return RedisModule_ReplyWithError(ctx, E_NOMEM);
    if (rc == AMQ_ELIMIT && grows_to_its_rate(amq_filter_kind(v->f))) {
        char msg[300];
        amq_stats st;
        amq_filter_stats(v->f, &st);
        snprintf(msg, sizeof msg,
                 "ERR amq: the filter is at its growth limit: another growth would take its "
                 "expected false-positive rate past its target of %g (nothing added; a key "
                 "created with a higher error_rate grows further)",
                 st.fpp_target);
        return RedisModule_ReplyWithError(ctx, msg);
    }
    if (rc == AMQ_ELIMIT)
        return RedisModule_ReplyWithError(ctx, "ERR amq: the filter is at its growth limit");
    if (rc == AMQ_ERANGE && amq_filter_kind(v->f) == AMQ_KIND_PARTITIONED)
        return RedisModule_ReplyWithError(ctx, "ERR amq: the item's partition is not in this "
                                               "slice of a partitioned filter (a filter sharded "
                                               "by partition: it belongs to another shard)");
    return reply_lib_error(ctx, "add failed", rc, NULL);
}

static int add_items(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int multi)
{
    RedisModuleKey *key;
    amqt_value *v;
    rm_items rep = {NULL, 0};
    int i, rc, changed = 0, pause;

    v = open_filter(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, 0, NULL);
    if (v == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    if (amq_kind_is_static(amq_filter_kind(v->f)) || amq_filter_is_readonly(v->f)) {
        RedisModule_CloseKey(key);
        return reply_kind_error(ctx, v->f, "are static: they take no adds (AMQ.BUILD makes a "
                                           "new one)");
    }
    if (amq_filter_kind(v->f) == AMQ_KIND_AGING) {
        amq_aging_info in;
        /* its clock is the primary's, replicated by AF.ADDAT: AF.* keeps it */
        if (amq_aging_get_info(v->f, &in) == AMQ_OK && in.time_mode) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, "ERR amq: this aging filter ages by time: "
                                                   "keep it in an AF.* key (AF.RESERVE ... "
                                                   "TIME), whose adds follow the clock");
        }
    }
    /* a kind that puts off a growth it finds no memory for and keeps the key (pocket):
     * refused on the primary alone, the growth would part its bytes from the replica's */
    pause = amq_kind_puts_off_growth(amq_filter_kind(v->f));
    if (multi)
        RedisModule_ReplyWithArray(ctx, argc - 2);
    for (i = 2; i < argc; i++) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(argv[i], &len);
        v->capped = 0;
        if (pause && rm_guard_active()) {
            /* the cap and maxmemory asked before the add, which then takes what it needs
             * (its growth included), as the replica will (module.h, rm_guard_pause) */
            if (v->bytes > cap_of(v)) {
                v->capped = 1;
                rc = AMQ_ENOMEM;
            } else if (!rm_memory_allows(ctx, 0)) {
                rc = AMQ_ENOMEM;
            } else {
                rm_guard_pause();
                rc = amq_filter_add(v->f, item, len);
                rm_guard_resume();
            }
        } else {
            rc = amq_filter_add(v->f, item, len);
        }
        if (rc >= 0) {
            rm_reply_bool(ctx, rc > 0);
            changed = 1;
        } else {
            reply_add_error(ctx, v, rc, item, len);
        }
        rm_items_note(&rep, argv, argc, i, rc >= 0);
    }
    RedisModule_CloseKey(key);
    rm_items_replicate(ctx, &rep, argv, changed);
    return REDISMODULE_OK;
}

static int amqt_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    return add_items(ctx, argv, argc, 0);
}

static int amqt_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    return add_items(ctx, argv, argc, 1);
}

static int amqt_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amqt_value *v;
    size_t len;
    const char *item;
    int rc;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    v = open_filter(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, 0, NULL);
    if (v == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    item = RedisModule_StringPtrLen(argv[2], &len);
    rc = amq_filter_remove(v->f, item, len);
    RedisModule_CloseKey(key);
    if (rc == AMQ_EUNSUPPORTED || rc == AMQ_EREADONLY) {
        char names[200], what[300];
        kind_names(names, sizeof names, amq_kind_can_remove, " and ");
        snprintf(what, sizeof what, "cannot delete items (%s filters can)", names);
        return reply_kind_error(ctx, v->f, what);
    }
    if (rc < 0)
        return reply_lib_error(ctx, "delete failed", rc, NULL);
    if (rc > 0)
        RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithLongLong(ctx, rc > 0);
}

/* ---- queries --------------------------------------------------------------------------------- */

/* Hashes per round of AMQ.MEXISTS: every item is hashed first, then one
 * batched query keeps many memory reads in flight. */
#define QUERY_BATCH 1024

static int query_items(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int multi)
{
    RedisModuleKey *key;
    amqt_value *v;
    amq_hash128 h[QUERY_BATCH];
    uint8_t out[QUERY_BATCH];
    int i, j, n, missing;

    v = open_filter(ctx, argv[1], REDISMODULE_READ, &key, OPEN_MISSING_OK, &missing);
    if (v == NULL) {
        RedisModule_CloseKey(key);
        if (!missing)
            return REDISMODULE_OK;
        /* a missing key has nothing: as BF.EXISTS */
        if (multi)
            RedisModule_ReplyWithArray(ctx, argc - 2);
        for (i = 2; i < argc; i++)
            rm_reply_bool(ctx, 0);
        return REDISMODULE_OK;
    }
    if (multi)
        RedisModule_ReplyWithArray(ctx, argc - 2);
    for (i = 2; i < argc; i += n) {
        n = argc - i < QUERY_BATCH ? argc - i : QUERY_BATCH;
        for (j = 0; j < n; j++) {
            size_t len;
            const char *item = RedisModule_StringPtrLen(argv[i + j], &len);
            h[j] = amq_filter_hash(v->f, item, len);
        }
        (void)amq_filter_contains_batch(v->f, h, (size_t)n, out);
        for (j = 0; j < n; j++)
            rm_reply_bool(ctx, out[j]);
    }
    RedisModule_CloseKey(key);
    return REDISMODULE_OK;
}

static int amqt_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    return query_items(ctx, argv, argc, 0);
}

static int amqt_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    return query_items(ctx, argv, argc, 1);
}

static int amqt_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amqt_value *v;
    uint64_t items, capacity;
    int missing;

    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    v = open_filter(ctx, argv[1], REDISMODULE_READ, &key, OPEN_MISSING_OK, &missing);
    RedisModule_CloseKey(key);
    if (v == NULL)
        return missing ? RedisModule_ReplyWithLongLong(ctx, 0) : REDISMODULE_OK;
    /* the count alone: the stats of a Bloom kind count its bits set, a pass
     * over the whole array that holds the server */
    amq_filter_counts(v->f, &items, &capacity);
    return RedisModule_ReplyWithLongLong(ctx, (long long)items);
}

/* ---- AMQ.INFO key: the fields of `amq info --json` ------------------------------------------------ */

static void reply_double(RedisModuleCtx *ctx, double d)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", d);
    rm_reply_cstr(ctx, buf);
}

static int info_field(void *arg, const amq_field *fld)
{
    RedisModuleCtx *ctx = arg;
    rm_reply_cstr(ctx, fld->name);
    if (fld->type == AMQ_FIELD_U64)
        RedisModule_ReplyWithLongLong(ctx, (long long)fld->u64);
    else if (fld->type == AMQ_FIELD_F64)
        reply_double(ctx, fld->f64);
    else
        rm_reply_cstr(ctx, fld->str != NULL ? fld->str : "");
    return 0;
}

static int count_field(void *arg, const amq_field *fld)
{
    (void)fld;
    (*(long *)arg)++;
    return 0;
}

static int amqt_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amqt_value *v;
    void *value;
    amq_stats st;
    long pairs = 0;
    int state;

    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    state = rm_open(ctx, argv[1], REDISMODULE_READ, amqt_type, &key, &value);
    if (state != RM_KEY_OK) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, state == RM_KEY_WRONGTYPE
                                                   ? REDISMODULE_ERRORMSG_WRONGTYPE
                                                   : E_NOT_FOUND);
    }
    v = value;
    if (v->f == NULL) {
        /* a loading key says how far it is */
        rm_reply_map(ctx, 3);
        rm_reply_cstr(ctx, "loading");
        RedisModule_ReplyWithLongLong(ctx, 1);
        rm_reply_cstr(ctx, "bytes_loaded");
        RedisModule_ReplyWithLongLong(ctx, (long long)v->filled);
        rm_reply_cstr(ctx, "bytes_total");
        RedisModule_ReplyWithLongLong(ctx, (long long)v->total);
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    amq_filter_stats(v->f, &st);
    (void)amq_filter_describe(v->f, count_field, &pairs);
    rm_reply_map(ctx, 13 + pairs);
    rm_reply_cstr(ctx, "kind");
    rm_reply_cstr(ctx, amq_kind_name(st.kind));
    rm_reply_cstr(ctx, "hash");
    rm_reply_cstr(ctx, amq_hash_algo_name(st.hash_algo));
    rm_reply_cstr(ctx, "seed");
    if (st.seed <= (uint64_t)INT64_MAX) {
        RedisModule_ReplyWithLongLong(ctx, (long long)st.seed);
    } else { /* past a RESP integer: its decimal digits (it said a negative number) */
        char digits[24];
        snprintf(digits, sizeof digits, "%llu", (unsigned long long)st.seed);
        rm_reply_cstr(ctx, digits);
    }
    rm_reply_cstr(ctx, "capacity");
    RedisModule_ReplyWithLongLong(ctx, (long long)st.capacity);
    rm_reply_cstr(ctx, "fpp_target");
    reply_double(ctx, st.fpp_target);
    rm_reply_cstr(ctx, "items");
    RedisModule_ReplyWithLongLong(ctx, (long long)st.items);
    rm_reply_cstr(ctx, "bytes");
    RedisModule_ReplyWithLongLong(ctx, (long long)st.bytes);
    rm_reply_cstr(ctx, "bits_per_item");
    reply_double(ctx, st.bits_per_item);
    rm_reply_cstr(ctx, "fill_ratio");
    reply_double(ctx, st.fill);
    rm_reply_cstr(ctx, "fpp_now");
    reply_double(ctx, st.fpp_now);
    rm_reply_cstr(ctx, "over_capacity");
    /* as amq info's: a kind sized for its capacity, past it, and past its rate (a kind
     * that grows passes its "capacity", where its next growth starts, at every growth) */
    rm_reply_bool(ctx, amq_kind_has_capacity(amq_filter_kind(v->f)) && st.capacity > 0 &&
                           st.items > st.capacity && st.fpp_now > st.fpp_target);
    rm_reply_cstr(ctx, "serialized_bytes");
    RedisModule_ReplyWithLongLong(ctx, (long long)value_size(v));
    rm_reply_cstr(ctx, "max_size");
    RedisModule_ReplyWithLongLong(ctx, (long long)cap_of(v));
    (void)amq_filter_describe(v->f, info_field, ctx);
    RedisModule_CloseKey(key);
    return REDISMODULE_OK;
}

/* ---- chunks: AMQ.SCANDUMP key iterator, AMQ.LOADCHUNK key iterator data ------------------------------
 * As BF.SCANDUMP: iterator 0 starts; each reply is [next, data] where next
 * is the offset just past data in the serialized bytes; [0, ""] ends.
 * AMQ.LOADCHUNK key next data puts data at next - len(data), which must be
 * exactly where the bytes so far end (no gap, no repeat). */

static int amqt_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amqt_value *v;
    uint64_t it, size;
    uint8_t *buf;
    size_t n;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    if (!arg_u64(argv[2], 0, UINT64_MAX >> 1, &it))
        return RedisModule_ReplyWithError(ctx, "ERR amq: invalid iterator");
    v = open_filter(ctx, argv[1], REDISMODULE_READ, &key, 0, NULL);
    if (v == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    size = value_size(v);
    if (it >= size) {
        RedisModule_CloseKey(key);
        RedisModule_ReplyWithArray(ctx, 2);
        RedisModule_ReplyWithLongLong(ctx, 0);
        return RedisModule_ReplyWithStringBuffer(ctx, "", 0);
    }
    n = size - it < AMQT_CHUNK ? (size_t)(size - it) : AMQT_CHUNK;
    buf = RedisModule_Alloc(n);
    n = value_range(v, it, buf, n);
    RedisModule_CloseKey(key);
    RedisModule_ReplyWithArray(ctx, 2);
    RedisModule_ReplyWithLongLong(ctx, (long long)(it + n));
    RedisModule_ReplyWithStringBuffer(ctx, (const char *)buf, n);
    RedisModule_Free(buf);
    return REDISMODULE_OK;
}

static int chunk_error(RedisModuleCtx *ctx, const char *fmt, uint64_t a, uint64_t b)
{
    char msg[300];
    snprintf(msg, sizeof msg, fmt, (unsigned long long)a, (unsigned long long)b);
    return RedisModule_ReplyWithError(ctx, msg);
}

static int amqt_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amqt_value *v;
    void *value;
    uint64_t it, pos, maxsize = 0;
    const uint8_t *data;
    size_t len;
    int st, rc;
    amq_errinfo err;

    if (argc != 4 && argc != 6)
        return RedisModule_WrongArity(ctx);
    if (!arg_u64(argv[2], 1, UINT64_MAX >> 1, &it))
        return RedisModule_ReplyWithError(ctx, "ERR amq: invalid iterator");
    if (argc == 6 && (!rm_arg_is(argv[4], "MAXSIZE") ||
                      !arg_u64(argv[5], 1, UINT64_MAX >> 1, &maxsize)))
        return RedisModule_ReplyWithError(ctx, E_SYNTAX);
    data = (const uint8_t *)RedisModule_StringPtrLen(argv[3], &len);
    if (len == 0 || len > it)
        return RedisModule_ReplyWithError(ctx, "ERR amq: invalid chunk: the iterator is the "
                                               "offset just past the chunk's bytes");
    pos = it - len;
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, amqt_type, &key, &value);
    if (st == RM_KEY_WRONGTYPE) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    }
    err.msg[0] = '\0';
    if (pos == 0) {
        uint64_t total;
        if (st != RM_KEY_EMPTY) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, "ERR amq: the first chunk needs a new key: "
                                                   "this one exists");
        }
        rc = amq_filter_peek(data, len, &total, NULL, &err);
        if (rc == AMQ_ETRUNC) {
            RedisModule_CloseKey(key);
            return chunk_error(ctx, "ERR amq: the first chunk must hold the whole header (%llu "
                                    "bytes), it has %llu", total, len);
        }
        if (rc != AMQ_OK) {
            RedisModule_CloseKey(key);
            return reply_lib_error(ctx, "not an amq filter", rc, &err);
        }
        if (len > total) {
            RedisModule_CloseKey(key);
            return chunk_error(ctx, "ERR amq: the chunk runs past the end of the filter "
                                    "(%llu bytes, the header says %llu)", len, total);
        }
        v = value_new();
        v->maxsize = maxsize;
        /* the cap and the guard (client commands only; a replica or the AOF
         * applies what the primary accepted) */
        if (rm_guard_active() && total > cap_of(v)) {
            RedisModule_CloseKey(key);
            reply_cap_error(ctx, v, total);
            value_free(v);
            return REDISMODULE_OK;
        }
        if (!rm_memory_allows(ctx, total) || !stage_alloc(v, total)) {
            RedisModule_CloseKey(key);
            value_free(v);
            return RedisModule_ReplyWithError(ctx, E_NOMEM);
        }
        memcpy(v->stage, data, len);
        v->filled = len;
        if (v->filled == v->total && (rc = stage_finish(v, &err)) != AMQ_OK) {
            RedisModule_CloseKey(key);
            value_free(v);
            return reply_lib_error(ctx, "the filter's bytes are bad, nothing was stored", rc,
                                   &err);
        }
        RedisModule_ModuleTypeSetValue(key, amqt_type, v);
        RedisModule_CloseKey(key);
        RedisModule_ReplicateVerbatim(ctx);
        return rm_reply_ok(ctx);
    }
    if (st == RM_KEY_EMPTY) {
        RedisModule_CloseKey(key);
        return chunk_error(ctx, "ERR amq: chunk at byte %llu of a key that is not loading: "
                                "the first chunk (at byte 0) comes first%.0llu", pos, 0);
    }
    v = value;
    if (v->f != NULL || pos != v->filled) {
        RedisModule_CloseKey(key);
        if (v->f != NULL)
            return RedisModule_ReplyWithError(ctx, "ERR amq: the key is loaded already");
        return chunk_error(ctx, "ERR amq: chunk out of order: it starts at byte %llu, the key "
                                "has %llu bytes (no gaps, no repeats)", pos, v->filled);
    }
    if (len > v->total - v->filled) {
        RedisModule_CloseKey(key);
        return chunk_error(ctx, "ERR amq: the chunk runs past the end of the filter (%llu "
                                "bytes more, %llu expected)", len, v->total - v->filled);
    }
    if (v->room < v->total) {
        /* read back with its bytes so far only: the whole file's room now, under the
         * cap and the guard as the first chunk was */
        if (rm_guard_active() && v->total > cap_of(v)) {
            RedisModule_CloseKey(key);
            return reply_cap_error(ctx, v, v->total);
        }
        if (!rm_memory_allows(ctx, v->total) || !stage_grow(v)) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, E_NOMEM);
        }
    }
    memcpy(v->stage + v->filled, data, len);
    v->filled += len;
    if (v->filled == v->total && (rc = stage_finish(v, &err)) != AMQ_OK) {
        /* the bytes are complete and bad: the load failed as a whole, and
         * the half-loaded key goes (replicas drop it too) */
        RedisModule_DeleteKey(key);
        RedisModule_CloseKey(key);
        RedisModule_Replicate(ctx, "DEL", "s", argv[1]);
        return reply_lib_error(ctx, "the filter's bytes are bad, the loading key was removed",
                               rc, &err);
    }
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- AMQ.MERGE dst src [src ...] ---------------------------------------------------------------------
 * The union goes into a copy of dst, swapped in only when every source
 * merged: a refused merge changes nothing.  A missing dst starts as a copy
 * of the first source. */

static int amqt_merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *dkey, *skey;
    amqt_value *dv, *nv;
    amq_errinfo err;
    int i, missing, rc;

    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    dv = open_filter(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &dkey, OPEN_MISSING_OK,
                     &missing);
    if (dv == NULL && !missing) {
        RedisModule_CloseKey(dkey);
        return REDISMODULE_OK;
    }
    nv = value_new();
    nv->maxsize = dv != NULL ? dv->maxsize : 0;
    for (i = dv != NULL ? 1 : 2; i < argc; i++) {
        amqt_value *sv;
        const amqt_value *from;
        if (i == 1) {
            from = dv;
        } else {
            sv = open_filter(ctx, argv[i], REDISMODULE_READ, &skey, 0, NULL);
            if (sv == NULL) {
                RedisModule_CloseKey(skey);
                goto fail;
            }
            from = sv;
        }
        err.msg[0] = '\0';
        if (nv->f == NULL) {
            rc = amq_filter_clone(from->f, &nv->alloc, &nv->f);
            if (rc != AMQ_OK) {
                if (i != 1)
                    RedisModule_CloseKey(skey);
                RedisModule_ReplyWithError(ctx, E_NOMEM);
                goto fail;
            }
        } else {
            rc = amq_filter_merge(nv->f, from->f, &err);
            if (rc != AMQ_OK) {
                char what[200];
                size_t klen;
                const char *kname = RedisModule_StringPtrLen(argv[i], &klen);
                snprintf(what, sizeof what, "cannot merge '%.*s', nothing changed",
                         (int)(klen < 100 ? klen : 100), kname);
                if (i != 1)
                    RedisModule_CloseKey(skey);
                reply_lib_error(ctx, what, rc, &err);
                goto fail;
            }
        }
        if (i != 1)
            RedisModule_CloseKey(skey);
    }
    if (amq_kind_is_static(amq_filter_kind(nv->f))) {
        RedisModule_ReplyWithError(ctx, "ERR amq: static filters cannot be merged");
        goto fail;
    }
    RedisModule_ModuleTypeSetValue(dkey, amqt_type, nv); /* frees the old value */
    RedisModule_CloseKey(dkey);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
fail:
    value_free(nv);
    RedisModule_CloseKey(dkey);
    return REDISMODULE_OK;
}

/* ---- AMQ.BUILD dst kind error_rate FROM src [options] ----------------------------------------------
 * The members of a SET, ZSET, HASH (fields) or LIST, at most
 * amq-build-max-items of them (the bound on the command's time), hashed and
 * built in one call.  The result is replicated as its bytes (AMQ.LOADCHUNK),
 * so a replica holds exactly the primary's filter. */

static void replicate_bytes(RedisModuleCtx *ctx, RedisModuleString *name, const amqt_value *v)
{
    uint64_t size = value_size(v), off;
    uint8_t *buf = RedisModule_Alloc(size < AMQT_CHUNK ? (size_t)size : AMQT_CHUNK);
    size_t n;

    for (off = 0; off < size; off += n) {
        n = value_range(v, off, buf, AMQT_CHUNK);
        if (n == 0)
            break;
        if (off == 0 && v->maxsize != 0)
            RedisModule_Replicate(ctx, "AMQ.LOADCHUNK", "slbcl", name, (long long)(off + n),
                                  (const char *)buf, n, "MAXSIZE", (long long)v->maxsize);
        else
            RedisModule_Replicate(ctx, "AMQ.LOADCHUNK", "slb", name, (long long)(off + n),
                                  (const char *)buf, n);
    }
    RedisModule_Free(buf);
}

static int by_hash(const void *a, const void *b)
{
    const amq_hash128 *x = a, *y = b;
    if (x->h1 != y->h1)
        return x->h1 < y->h1 ? -1 : 1;
    return x->h2 < y->h2 ? -1 : x->h2 > y->h2;
}

/* A LIST's repeated elements once (the others' members are distinct): a kind that keeps
 * copies would store each (a cuckoo filter refuses the 2b + 1-th) and size for them. */
static size_t distinct_hashes(amq_hash128 *h, size_t n)
{
    size_t i, w = 0;
    qsort(h, n, sizeof *h, by_hash);
    for (i = 0; i < n; i++)
        if (w == 0 || h[i].h1 != h[w - 1].h1 || h[i].h2 != h[w - 1].h2)
            h[w++] = h[i];
    return w;
}

static const char *const member_cmds[][2] = {
    {"SCARD", "SMEMBERS"}, {"ZCARD", "ZRANGE"}, {"HLEN", "HKEYS"}, {"LLEN", "LRANGE"}};

static int amqt_build(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    create_opts o;
    RedisModuleKey *key, *src;
    RedisModuleCallReply *r = NULL;
    amqt_value *v;
    amq_hash128 *h = NULL;
    amq_errinfo err;
    void *value;
    long long count;
    size_t n, i, read;
    int st, which, rc;

    if (argc < 6)
        return RedisModule_WrongArity(ctx);
    if (!rm_arg_is(argv[4], "FROM"))
        return RedisModule_ReplyWithError(ctx, E_SYNTAX);
    if (!parse_kind_rate(ctx, argv[2], argv[3], &o))
        return REDISMODULE_OK;
    if (!parse_opts(ctx, argv, argc, 6, &o))
        return REDISMODULE_OK;
    if (RedisModule_Call == NULL || RedisModule_CallReplyType == NULL)
        return RedisModule_ReplyWithError(ctx, "ERR amq: this server cannot run AMQ.BUILD");
    src = RedisModule_OpenKey(ctx, argv[5], REDISMODULE_READ);
    switch (RedisModule_KeyType(src)) {
    case REDISMODULE_KEYTYPE_SET: which = 0; break;
    case REDISMODULE_KEYTYPE_ZSET: which = 1; break;
    case REDISMODULE_KEYTYPE_HASH: which = 2; break;
    case REDISMODULE_KEYTYPE_LIST: which = 3; break;
    case REDISMODULE_KEYTYPE_EMPTY: which = -1; break;
    default: which = -2; break;
    }
    RedisModule_CloseKey(src);
    if (which == -2)
        return RedisModule_ReplyWithError(ctx, "ERR amq: the source must be a SET, ZSET, HASH or "
                                               "LIST");
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, amqt_type, &key, &value);
    if (st != RM_KEY_EMPTY) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, st == RM_KEY_WRONGTYPE
                                                   ? REDISMODULE_ERRORMSG_WRONGTYPE
                                                   : E_EXISTS);
    }
    n = 0;
    if (which >= 0) {
        /* the count first: a source too large is refused before it is read */
        r = RedisModule_Call(ctx, member_cmds[which][0], "s", argv[5]);
        count = r != NULL && RedisModule_CallReplyType(r) == REDISMODULE_REPLY_INTEGER
                    ? RedisModule_CallReplyInteger(r)
                    : -1;
        if (r != NULL)
            RedisModule_FreeCallReply(r);
        r = NULL;
        if (count < 0) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, "ERR amq: cannot read the source");
        }
        if ((unsigned long long)count > amqt_build_max_items)
            n = (size_t)count;
    }
    if (n == 0 && which >= 0) {
        if (which == 0 || which == 2)
            r = RedisModule_Call(ctx, member_cmds[which][1], "s", argv[5]);
        else
            r = RedisModule_Call(ctx, member_cmds[which][1], "scc", argv[5], "0", "-1");
        if (r == NULL || RedisModule_CallReplyType(r) != REDISMODULE_REPLY_ARRAY) {
            if (r != NULL)
                RedisModule_FreeCallReply(r);
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, "ERR amq: cannot read the source");
        }
        n = RedisModule_CallReplyLength(r);
    }
    if (n > amqt_build_max_items) {
        char msg[300];
        if (r != NULL)
            RedisModule_FreeCallReply(r);
        RedisModule_CloseKey(key);
        snprintf(msg, sizeof msg,
                 "ERR amq: the source has %zu members, over amq-build-max-items (%llu): build "
                 "the filter with the amq tool and load it (amq export --to redis)",
                 n, (unsigned long long)amqt_build_max_items);
        return RedisModule_ReplyWithError(ctx, msg);
    }
    v = value_new();
    v->maxsize = o.maxsize;
    o.cfg.alloc = &v->alloc;
    h = n > 0 ? RedisModule_Alloc(n * sizeof *h) : NULL;
    for (i = 0; i < n; i++) {
        size_t len;
        const char *m = RedisModule_CallReplyStringPtr(RedisModule_CallReplyArrayElement(r, i),
                                                       &len);
        h[i] = amq_hash_key(o.cfg.hash_algo, o.cfg.seed, m != NULL ? m : "", m != NULL ? len : 0);
    }
    if (r != NULL)
        RedisModule_FreeCallReply(r);
    read = n;
    if (which == 3 && n > 1)
        n = distinct_hashes(h, n);
    o.cfg.capacity = n > 0 ? n : 1;
    /* a pocket filter grows from any start: a smaller source starts it at its fewest */
    if (o.cfg.kind == AMQ_KIND_POCKET && o.cfg.capacity < AMQT_POCKET_MIN_START)
        o.cfg.capacity = AMQT_POCKET_MIN_START;
    err.msg[0] = '\0';
    if (amq_kind_is_static(o.cfg.kind)) {
        rc = amq_filter_build(&o.cfg, h, n, &v->f, &err);
    } else {
        rc = amq_filter_new(&o.cfg, &v->f, &err);
        if (rc == AMQ_OK && n > 0)
            rc = amq_filter_add_batch(v->f, h, n, NULL);
    }
    if (h != NULL)
        RedisModule_Free(h);
    if (rc != AMQ_OK || (rm_guard_active() && v->bytes > cap_of(v))) {
        RedisModule_CloseKey(key);
        if (v->capped || rc == AMQ_OK)
            reply_cap_error(ctx, v, rc == AMQ_OK ? v->bytes : 0);
        else if (rc == AMQ_ENOMEM)
            RedisModule_ReplyWithError(ctx, E_NOMEM);
        else
            reply_lib_error(ctx, "cannot build the filter", rc, &err);
        value_free(v);
        return REDISMODULE_OK;
    }
    RedisModule_ModuleTypeSetValue(key, amqt_type, v);
    RedisModule_CloseKey(key);
    replicate_bytes(ctx, argv[1], v);
    return RedisModule_ReplyWithLongLong(ctx, (long long)read);
}

/* ---- data type ----------------------------------------------------------------------------------------
 * RDB (encoding AMQ_RM_ENCVER): unsigned state (0 a filter, 1 loading),
 * maxsize, total, filled, chunk count, then the serialized bytes [0, filled)
 * as strings of at most 16 MiB: the amq file's bytes, cut. */

static void amqt_rdb_save(RedisModuleIO *io, void *value)
{
    amqt_value *v = value;
    uint64_t size = value_size(v), off;
    uint8_t *buf = RedisModule_Alloc(size < AMQT_CHUNK ? (size_t)size + 1 : AMQT_CHUNK);
    size_t n;

    RedisModule_SaveUnsigned(io, v->f == NULL);
    RedisModule_SaveUnsigned(io, v->maxsize);
    RedisModule_SaveUnsigned(io, v->f == NULL ? v->total : size);
    RedisModule_SaveUnsigned(io, size);
    RedisModule_SaveUnsigned(io, (size + AMQT_CHUNK - 1) / AMQT_CHUNK);
    for (off = 0; off < size; off += n) {
        n = value_range(v, off, buf, AMQT_CHUNK);
        if (n == 0) { /* cannot happen: value_range covers [0, size) */
            n = size - off < AMQT_CHUNK ? (size_t)(size - off) : AMQT_CHUNK;
            memset(buf, 0, n);
        }
        RedisModule_SaveStringBuffer(io, (const char *)buf, n);
    }
    RedisModule_Free(buf);
}

static void *amqt_rdb_load(RedisModuleIO *io, int encver)
{
    amqt_value *v = NULL;
    uint64_t state, maxsize, total, filled, chunks, i, hsize;
    char *chunk = NULL;
    size_t clen;
    amq_errinfo err;
    int rc;

    if (encver != AMQ_RM_ENCVER) {
        RedisModule_LogIOError(io, "warning", "amq: amqfilter encoding %d is not %d", encver,
                               AMQ_RM_ENCVER);
        return NULL;
    }
    state = RedisModule_LoadUnsigned(io);
    maxsize = RedisModule_LoadUnsigned(io);
    total = RedisModule_LoadUnsigned(io);
    filled = RedisModule_LoadUnsigned(io);
    chunks = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io))
        return NULL;
    /* every size checked before it is believed: a loading value has at
     * least the header (the first chunk held it), a complete one all */
    if (state > 1 || maxsize > (UINT64_MAX >> 1) || filled > total || filled == 0 ||
        (state == 0 && filled != total) || chunks != (filled + AMQT_CHUNK - 1) / AMQT_CHUNK)
        goto corrupt;
    v = value_new();
    v->maxsize = maxsize;
    for (i = 0; i < chunks; i++) {
        chunk = RedisModule_LoadStringBuffer(io, &clen);
        if (RedisModule_IsIOError(io) || chunk == NULL)
            goto fail;
        if (i == 0) {
            /* the header says the size, under its checksum; it must be
             * the size recorded, and the machine must hold it */
            err.msg[0] = '\0';
            rc = amq_filter_peek(chunk, clen, &hsize, NULL, &err);
            /* room for the bytes present only: a loading value's total is the
             * header's claim, allocated when its next chunk comes */
            if (rc != AMQ_OK || hsize != total ||
                !rm_memory_plausible(RedisModule_GetContextFromIO(io), filled) ||
                !stage_alloc_room(v, total, filled))
                goto corrupt_chunk;
        }
        if (clen == 0 || clen > AMQT_CHUNK || clen > filled - v->filled)
            goto corrupt_chunk;
        memcpy(v->stage + v->filled, chunk, clen);
        v->filled += clen;
        RedisModule_Free(chunk);
        chunk = NULL;
    }
    if (v->filled != filled)
        goto corrupt;
    if (state == 0) {
        err.msg[0] = '\0';
        rc = stage_finish(v, &err);
        if (rc != AMQ_OK) {
            RedisModule_LogIOError(io, "warning", "amq: corrupt amqfilter value: %s", err.msg);
            goto fail;
        }
    }
    return v;
corrupt_chunk:
    RedisModule_Free(chunk);
corrupt:
    RedisModule_LogIOError(io, "warning", "amq: corrupt amqfilter value");
fail:
    value_free(v);
    return NULL;
}

static void amqt_aof_rewrite(RedisModuleIO *aof, RedisModuleString *name, void *value)
{
    amqt_value *v = value;
    uint64_t size = value_size(v), off;
    uint8_t *buf = RedisModule_Alloc(size < AMQT_CHUNK ? (size_t)size + 1 : AMQT_CHUNK);
    size_t n;

    for (off = 0; off < size; off += n) {
        n = value_range(v, off, buf, AMQT_CHUNK);
        if (n == 0)
            break;
        if (off == 0 && v->maxsize != 0)
            RedisModule_EmitAOF(aof, "AMQ.LOADCHUNK", "slbcl", name, (long long)(off + n),
                                (const char *)buf, n, "MAXSIZE", (long long)v->maxsize);
        else
            RedisModule_EmitAOF(aof, "AMQ.LOADCHUNK", "slb", name, (long long)(off + n),
                                (const char *)buf, n);
    }
    RedisModule_Free(buf);
}

/* Exact: the value, what the library holds for the filter, the staging
 * area (a static filter's bytes, or a loading key's). */
static size_t amqt_mem_usage(const void *value)
{
    const amqt_value *v = value;
    return sizeof *v + (size_t)v->bytes + (v->stage_block != NULL ? (size_t)v->room + 64 : 0);
}

static void amqt_digest(RedisModuleDigest *md, void *value)
{
    amqt_value *v = value;
    uint64_t size = value_size(v), off;
    uint8_t *buf = RedisModule_Alloc(size < AMQT_CHUNK ? (size_t)size + 1 : AMQT_CHUNK);
    size_t n;

    RedisModule_DigestAddLongLong(md, v->f == NULL);
    RedisModule_DigestAddLongLong(md, (long long)v->maxsize);
    for (off = 0; off < size; off += n) {
        n = value_range(v, off, buf, AMQT_CHUNK);
        if (n == 0)
            break;
        RedisModule_DigestAddStringBuffer(md, (const char *)buf, n);
    }
    RedisModule_DigestEndSequence(md);
    RedisModule_Free(buf);
}

static void *amqt_copy(RedisModuleString *from, RedisModuleString *to, const void *value)
{
    const amqt_value *v = value;
    amqt_value *c = value_new();
    amq_errinfo err;
    (void)from;
    (void)to;
    c->maxsize = v->maxsize;
    if (v->f == NULL || (v->stage != NULL && v->total == value_size(v))) {
        /* loading (its bytes so far), or a static filter viewing its bytes: copy the bytes */
        if (!stage_alloc_room(c, v->total, v->filled)) {
            value_free(c);
            return NULL;
        }
        memcpy(c->stage, v->stage, (size_t)v->filled);
        c->filled = v->filled;
        if (v->f != NULL && stage_finish(c, &err) != AMQ_OK) {
            value_free(c);
            return NULL;
        }
        return c;
    }
    if (amq_filter_clone(v->f, &c->alloc, &c->f) != AMQ_OK) {
        value_free(c);
        return NULL;
    }
    return c;
}

static void amqt_free(void *value)
{
    value_free(value);
}

/* Filters up to this size are copied by defrag (defrag.c says why). */
#define AMQT_DEFRAG_MAX ((uint64_t)256 << 10)

static int amqt_defrag(RedisModuleDefragCtx *ctx, RedisModuleString *key, void **value)
{
    amqt_value *v = *value;
    amq_filter *copy = NULL;
    (void)ctx;
    (void)key;
    if (v->f == NULL || v->stage != NULL || v->bytes > AMQT_DEFRAG_MAX)
        return 0;
    if (amq_filter_clone(v->f, &v->alloc, &copy) != AMQ_OK)
        return 0;
    amq_filter_free(v->f);
    v->f = copy;
    return 0;
}

/* ---- registration -------------------------------------------------------------------------------------- */

static RedisModuleCommandArg a_create_opts[] = {
    RM_ARG_TOKEN("nonscaling", "NONSCALING", RM_OPT),
    {.name = "maxsize", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1,
     .token = "MAXSIZE", .flags = RM_OPT},
    {.name = "seed", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1, .token = "SEED",
     .flags = RM_OPT},
    {.name = "fpbits", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1,
     .token = "FPBITS", .flags = RM_OPT},
    {.name = "bucketsize", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1,
     .token = "BUCKETSIZE", .flags = RM_OPT},
    {.name = "expansion", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1,
     .token = "EXPANSION", .flags = RM_OPT},
    {.name = "partitions", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1,
     .token = "PARTITIONS", .flags = RM_OPT},
    {.name = "bits", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1, .token = "BITS",
     .flags = RM_OPT},
    {.name = "hashes", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1,
     .token = "HASHES", .flags = RM_OPT},
    {.name = "bitsperkey", .type = REDISMODULE_ARG_TYPE_DOUBLE, .key_spec_index = -1,
     .token = "BITSPERKEY", .flags = RM_OPT},
    RM_ARG_END};
static RedisModuleCommandArg a_create[] = {
    RM_ARG_KEY, RM_ARG("kind", STRING, 0), RM_ARG("capacity", INTEGER, 0),
    RM_ARG("error_rate", DOUBLE, 0),
    {.name = "options", .type = REDISMODULE_ARG_TYPE_BLOCK, .key_spec_index = -1,
     .flags = RM_OPT, .subargs = a_create_opts},
    RM_ARG_END};
static RedisModuleCommandArg a_item[] = {RM_ARG_KEY, RM_ARG("item", STRING, 0), RM_ARG_END};
static RedisModuleCommandArg a_items[] = {RM_ARG_KEY, RM_ARG("item", STRING, RM_MULTI),
                                          RM_ARG_END};
static RedisModuleCommandArg a_key[] = {RM_ARG_KEY, RM_ARG_END};
static RedisModuleCommandArg a_scandump[] = {RM_ARG_KEY, RM_ARG("iterator", INTEGER, 0),
                                             RM_ARG_END};
static RedisModuleCommandArg a_loadchunk[] = {
    RM_ARG_KEY, RM_ARG("iterator", INTEGER, 0), RM_ARG("data", STRING, 0),
    {.name = "maxsize", .type = REDISMODULE_ARG_TYPE_INTEGER, .key_spec_index = -1,
     .token = "MAXSIZE", .flags = RM_OPT},
    RM_ARG_END};
static RedisModuleCommandArg a_merge[] = {
    {.name = "destkey", .type = REDISMODULE_ARG_TYPE_KEY, .key_spec_index = 0},
    {.name = "sourcekey", .type = REDISMODULE_ARG_TYPE_KEY, .key_spec_index = 1,
     .flags = RM_MULTI},
    RM_ARG_END};
static RedisModuleCommandArg a_build[] = {
    {.name = "destkey", .type = REDISMODULE_ARG_TYPE_KEY, .key_spec_index = 0},
    RM_ARG("kind", STRING, 0), RM_ARG("error_rate", DOUBLE, 0),
    {.name = "sourcekey", .type = REDISMODULE_ARG_TYPE_KEY, .key_spec_index = 1,
     .token = "FROM"},
    {.name = "options", .type = REDISMODULE_ARG_TYPE_BLOCK, .key_spec_index = -1,
     .flags = RM_OPT, .subargs = a_create_opts},
    RM_ARG_END};

#define RW REDISMODULE_CMD_KEY_RW
#define RO REDISMODULE_CMD_KEY_RO
/* dst (read-write, updated), then the sources (read) from argument 2 on */
static RedisModuleCommandKeySpec ks_merge[] = {
    {.flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_UPDATE,
     .begin_search_type = REDISMODULE_KSPEC_BS_INDEX, .bs.index.pos = 1,
     .find_keys_type = REDISMODULE_KSPEC_FK_RANGE, .fk.range = {0, 1, 0}},
    {.flags = REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS,
     .begin_search_type = REDISMODULE_KSPEC_BS_INDEX, .bs.index.pos = 2,
     .find_keys_type = REDISMODULE_KSPEC_FK_RANGE, .fk.range = {-1, 1, 0}},
    {0}};
/* dst (overwritten: created), then the source after FROM */
static RedisModuleCommandKeySpec ks_build[] = {
    {.flags = REDISMODULE_CMD_KEY_OW | REDISMODULE_CMD_KEY_INSERT,
     .begin_search_type = REDISMODULE_KSPEC_BS_INDEX, .bs.index.pos = 1,
     .find_keys_type = REDISMODULE_KSPEC_FK_RANGE, .fk.range = {0, 1, 0}},
    {.flags = REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS,
     .begin_search_type = REDISMODULE_KSPEC_BS_INDEX, .bs.index.pos = 5,
     .find_keys_type = REDISMODULE_KSPEC_FK_RANGE, .fk.range = {0, 1, 0}},
    {0}};

static const rm_command amqt_cmds[] = {
    {"amq.create", amqt_create, "write deny-oom", -5, RW,
     "Creates an empty filter of any amq kind", "0.2.0", "O(size)", NULL, a_create},
    {"amq.add", amqt_add, "write deny-oom", 3, RW, "Adds an item", "0.2.0", "O(1)", NULL, a_item},
    {"amq.madd", amqt_madd, "write deny-oom", -3, RW, "Adds items", "0.2.0", "O(n) for n items",
     NULL, a_items},
    {"amq.exists", amqt_exists, "readonly fast", 3, RO, "Checks whether an item may be present",
     "0.2.0", "O(1)", NULL, a_item},
    {"amq.mexists", amqt_mexists, "readonly fast", -3, RO,
     "Checks whether items may be present (hashed first, queried in one batch)", "0.2.0",
     "O(n) for n items", NULL, a_items},
    {"amq.del", amqt_del, "write fast", 3, RW, "Deletes an item (cuckoo kinds, expandable)",
     "0.2.0", "O(1)", NULL, a_item},
    {"amq.card", amqt_card, "readonly fast", 2, RO, "Returns the number of items", "0.2.0",
     "O(1)", NULL, a_key},
    {"amq.info", amqt_info, "readonly", 2, RO,
     "Returns what `amq info --json` says of the filter", "0.2.0", "O(size) for some kinds",
     "dont_cache", a_key},
    {"amq.scandump", amqt_scandump, "readonly", 3, RO,
     "Returns the next chunk of the filter's bytes (its amq file)", "0.2.0",
     "O(n) for n bytes", NULL, a_scandump},
    {"amq.loadchunk", amqt_loadchunk, "write deny-oom", -4, RW,
     "Loads a chunk of a filter's bytes (from AMQ.SCANDUMP, or an amq file)", "0.2.0",
     "O(n) for n bytes", NULL, a_loadchunk},
};
static const rm_command amqt_multi_cmds[] = {
    {"amq.merge", amqt_merge, "write deny-oom", -3, RW,
     "Merges filters into the first (their union)", "0.2.0", "O(size) per source", NULL, a_merge},
    {"amq.build", amqt_build, "write deny-oom", -6, RW,
     "Builds a filter from the members of a SET, ZSET, HASH or LIST", "0.2.0",
     "O(n) for n members", NULL, a_build},
};
#undef RW
#undef RO

int amqt_register(RedisModuleCtx *ctx)
{
    static const rm_family family = {AMQT_TYPE_NAME, &amqt_type, amqt_rdb_load, amqt_rdb_save,
                                     amqt_aof_rewrite, amqt_mem_usage, amqt_digest, amqt_free,
                                     amqt_copy, amqt_defrag, amqt_cmds,
                                     sizeof amqt_cmds / sizeof amqt_cmds[0], "amq"};

    if (rm_register_family(ctx, &family) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    /* MERGE: keys 1..last; BUILD: keys 1 and 5 (after FROM) */
    if (rm_register_command_keys(ctx, &amqt_multi_cmds[0], ks_merge, 1, -1, 1, "amq") !=
        REDISMODULE_OK)
        return REDISMODULE_ERR;
    return rm_register_command_keys(ctx, &amqt_multi_cmds[1], ks_build, 1, 5, 4, "amq");
}
