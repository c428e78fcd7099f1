/*
 * cf.c - the CF.* commands and the MBbloomCF data type: RedisBloom's
 * scalable cuckoo filter, a thin layer over amq/scalable_cuckoo.h (parse,
 * call the library, reply).  Replies, errors and formats follow
 * RedisBloom's (documented and observed); docs/redis.md lists what differs.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "amq/scalable_cuckoo.h"
#include "config.h"
#include "module.h"

static RedisModuleType *cf_type;

#define CF_ERR_NOT_FOUND "ERR not found"
#define CF_ERR_EXISTS "ERR item exists"
#define CF_ERR_CAPACITY "Bad capacity"
#define CF_ERR_CAPACITY_RANGE "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
#define CF_ERR_BUCKETSIZE "BUCKETSIZE: value must be in the range [1, 255]"
#define CF_ERR_MAXITER "MAXITERATIONS: value must be in the range [1, 65535]"
#define CF_ERR_EXPANSION "EXPANSION: value must be in the range [0, 32768]"
#define CF_ERR_FULL "Filter is full"
#define CF_ERR_LIMIT "Maximum expansions reached"
#define CF_ERR_NOMEM "ERR Insufficient memory to create filter"
#define CF_ERR_CREATE "Couldn't create filter!"
#define CF_ERR_POSITION "Invalid position"
#define CF_ERR_HEADER "Invalid header"
#define CF_ERR_CHUNK "Couldn't load chunk!"
#define CF_ERR_DEL_MISSING "Not found"
#define CF_ERR_COMPACT_MISSING "Cuckoo filter was not found"
#define CF_ERR_INS_CAPACITY_RANGE "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"
#define CF_ERR_INS_UNKNOWN "Unknown argument received"
#define CF_ERR_PARSE_BUCKETSIZE "Couldn't parse BUCKETSIZE"
#define CF_ERR_PARSE_MAXITER "Couldn't parse MAXITERATIONS"
#define CF_ERR_PARSE_EXPANSION "Couldn't parse EXPANSION"

/* ---- creation ------------------------------------------------------------------ */

typedef struct cf_opts {
    uint64_t capacity;
    uint32_t bucket_size;
    uint32_t max_iterations;
    uint32_t expansion;
} cf_opts;

static void cf_defaults(cf_opts *o)
{
    o->capacity = amq_rm_cfg.cf_initial_size;
    o->bucket_size = amq_rm_cfg.cf_bucket_size;
    o->max_iterations = amq_rm_cfg.cf_max_iterations;
    o->expansion = amq_rm_cfg.cf_expansion;
}

/*
 * RedisBloom checks the link limit once, when an adding command
 * starts: a filter at the limit refuses the command (even an item it
 * holds), one below it may grow past it within the command.  The library
 * limit is kept out of the way (cf_unlimit) and this check stands for it.
 */
static int cf_at_limit(RedisModuleCtx *ctx, const amq_scuckoo *c)
{
    /* not for what the primary or the AOF sends: the primary took it (its own limit, which
     * CONFIG SET may have raised, and its own links), so a replica or a restart refusing it
     * would answer absent for items the primary holds */
    if (RedisModule_GetContextFlags(ctx) &
        (REDISMODULE_CTX_FLAGS_LOADING | REDISMODULE_CTX_FLAGS_REPLICATED))
        return 0;
    return amq_scuckoo_at_limit(c, amq_rm_cfg.cf_max_expansions);
}

/* A filter the command has just made is at the link limit (cf-max-expansions 1): as
 * RedisBloom, the key stays, empty, and the items are refused; the replicas make the same
 * empty filter. */
static int cf_refuse_new(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *name,
                         const cf_opts *o)
{
    RedisModule_CloseKey(key);
    RedisModule_Replicate(ctx, "CF.RESERVE", "slclclcl", name, (long long)o->capacity,
                          "BUCKETSIZE", (long long)o->bucket_size, "MAXITERATIONS",
                          (long long)o->max_iterations, "EXPANSION", (long long)o->expansion);
    return RedisModule_ReplyWithError(ctx, CF_ERR_LIMIT);
}

static void cf_unlimit(amq_scuckoo *c)
{
    amq_scuckoo_set_max_links(c, AMQ_SCUCKOO_MAX_LINKS);
}

/* Creates a filter; on failure replies the error and returns NULL. */
static amq_scuckoo *cf_create(RedisModuleCtx *ctx, const cf_opts *o)
{
    amq_scuckoo_params p;
    amq_scuckoo *c = NULL;
    int rc;

    amq_scuckoo_params_init(&p, 1);
    p.capacity = o->capacity;
    p.bucket_size = o->bucket_size;
    p.max_kicks = o->max_iterations;
    p.expansion = o->expansion;
    p.max_links = amq_rm_cfg.cf_max_expansions;
    rc = amq_scuckoo_new(&p, &amq_rm_allocator, &c);
    if (rc != AMQ_OK) {
        RedisModule_ReplyWithError(ctx, rc == AMQ_ENOMEM ? CF_ERR_NOMEM : CF_ERR_CREATE);
        return NULL;
    }
    cf_unlimit(c);
    return c;
}

static int reply_key_status(RedisModuleCtx *ctx, int st, const char *missing)
{
    if (st == RM_KEY_WRONGTYPE)
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return RedisModule_ReplyWithError(ctx, missing);
}

static const char *cf_add_error(int rc)
{
    switch (rc) {
    case AMQ_EFULL:
        return CF_ERR_FULL;
    case AMQ_ELIMIT:
        return CF_ERR_LIMIT;
    case AMQ_ENOMEM:
        return CF_ERR_NOMEM;
    default:
        return CF_ERR_FULL;
    }
}

/* ---- CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e] --------- */

/*
 * One option of CF.RESERVE, found as RedisBloom finds it: the first
 * argument equal to the keyword anywhere in the command (the key
 * included), its value the next argument, in [lo, hi].  1 when absent or
 * set (*out), else the error replied.  A keyword with nothing after it is
 * a value that does not parse (RedisBloom reads past its arguments there,
 * and may crash).
 */
static int reserve_opt(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, const char *kw,
                       long long lo, long long hi, const char *parse_err, const char *range_err,
                       uint32_t *out)
{
    long long v;
    int i = rm_arg_index(argv, argc, kw);
    if (i < 0)
        return 1;
    if (i + 1 >= argc || !rm_arg_ll(argv[i + 1], &v)) {
        RedisModule_ReplyWithError(ctx, parse_err);
        return 0;
    }
    if (v < lo || v > hi) {
        RedisModule_ReplyWithError(ctx, range_err);
        return 0;
    }
    *out = (uint32_t)v;
    return 1;
}

static int cf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    amq_scuckoo *c;
    cf_opts o;
    long long cap;
    int st;

    if (argc < 3 || argc % 2 != 1)
        return RedisModule_WrongArity(ctx);
    cf_defaults(&o);
    if (!rm_arg_ll(argv[2], &cap))
        return RedisModule_ReplyWithError(ctx, CF_ERR_CAPACITY);
    /* RedisBloom's order: MAXITERATIONS, BUCKETSIZE, EXPANSION, each parsed
     * then checked, then the capacity's range. */
    if (!reserve_opt(ctx, argv, argc, "MAXITERATIONS", 1, 65535, CF_ERR_PARSE_MAXITER,
                     CF_ERR_MAXITER, &o.max_iterations) ||
        !reserve_opt(ctx, argv, argc, "BUCKETSIZE", 1, 255, CF_ERR_PARSE_BUCKETSIZE,
                     CF_ERR_BUCKETSIZE, &o.bucket_size) ||
        !reserve_opt(ctx, argv, argc, "EXPANSION", 0, (long long)AMQ_RM_MAX_EXPANSION,
                     CF_ERR_PARSE_EXPANSION, CF_ERR_EXPANSION, &o.expansion))
        return REDISMODULE_OK;
    if (cap < 2LL * o.bucket_size || cap > (long long)AMQ_RM_MAX_CAPACITY)
        return RedisModule_ReplyWithError(ctx, CF_ERR_CAPACITY_RANGE);
    o.capacity = (uint64_t)cap;

    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, cf_type, &key, &value);
    if (st != RM_KEY_EMPTY) {
        RedisModule_CloseKey(key);
        return reply_key_status(ctx, st, CF_ERR_EXISTS);
    }
    c = cf_create(ctx, &o);
    if (c == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    RedisModule_ModuleTypeSetValue(key, cf_type, c);
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- CF.ADD / CF.ADDNX key item ----------------------------------------------------------- */

static int cf_add_common(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int nx)
{
    RedisModuleKey *key;
    void *value;
    amq_scuckoo *c;
    const char *item;
    size_t len;
    int st, rc, changed = 0;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, cf_type, &key, &value);
    if (st == RM_KEY_WRONGTYPE) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    }
    c = value;
    if (st == RM_KEY_EMPTY) {
        cf_opts o;
        cf_defaults(&o);
        c = cf_create(ctx, &o);
        if (c == NULL) {
            RedisModule_CloseKey(key);
            return REDISMODULE_OK;
        }
        RedisModule_ModuleTypeSetValue(key, cf_type, c);
        if (cf_at_limit(ctx, c))
            return cf_refuse_new(ctx, key, argv[1], &o);
        changed = 1;
    } else if (cf_at_limit(ctx, c)) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, CF_ERR_LIMIT);
    }
    item = RedisModule_StringPtrLen(argv[2], &len);
    rc = nx ? amq_scuckoo_add_unique(c, item, len) : amq_scuckoo_add(c, item, len);
    RedisModule_CloseKey(key);
    if (rc == 1)
        changed = 1;
    if (changed)
        RedisModule_ReplicateVerbatim(ctx);
    if (rc < 0)
        return RedisModule_ReplyWithError(ctx, cf_add_error(rc));
    return rm_reply_bool(ctx, rc);
}

static int cf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return cf_add_common(ctx, argv, argc, 0);
}

static int cf_addnx(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return cf_add_common(ctx, argv, argc, 1);
}

/* ---- CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item... ------------------- */

static int cf_insert_common(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int nx)
{
    RedisModuleKey *key;
    void *value;
    amq_scuckoo *c;
    cf_opts o;
    rm_items r = {NULL, 0};
    int i, st, items = -1, nocreate = 0, changed = 0, resp3;

    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    cf_defaults(&o);
    /* Options by their first letter, as RedisBloom reads them: c...
     * CAPACITY, i... ITEMS, n... NOCREATE. */
    for (i = 2; i < argc && items < 0; i++) {
        size_t alen;
        const char *arg = RedisModule_StringPtrLen(argv[i], &alen);
        int c0 = alen > 0 ? tolower((unsigned char)arg[0]) : 0;
        if (c0 == 'i') {
            items = i + 1;
        } else if (c0 == 'n') {
            nocreate = 1;
        } else if (c0 == 'c') {
            long long cap;
            if (i + 1 >= argc)
                return RedisModule_WrongArity(ctx);
            if (!rm_arg_ll(argv[++i], &cap))
                return RedisModule_ReplyWithError(ctx, CF_ERR_CAPACITY);
            if (cap < 2LL * o.bucket_size || cap > (long long)AMQ_RM_MAX_CAPACITY)
                return RedisModule_ReplyWithError(ctx, CF_ERR_INS_CAPACITY_RANGE);
            o.capacity = (uint64_t)cap;
        } else {
            return RedisModule_ReplyWithError(ctx, CF_ERR_INS_UNKNOWN);
        }
    }
    if (items < 0 || items >= argc)
        return RedisModule_WrongArity(ctx);

    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, cf_type, &key, &value);
    if (st == RM_KEY_WRONGTYPE || (st == RM_KEY_EMPTY && nocreate)) {
        RedisModule_CloseKey(key);
        return reply_key_status(ctx, st, CF_ERR_NOT_FOUND);
    }
    c = value;
    if (st == RM_KEY_EMPTY) {
        c = cf_create(ctx, &o);
        if (c == NULL) {
            RedisModule_CloseKey(key);
            return REDISMODULE_OK;
        }
        RedisModule_ModuleTypeSetValue(key, cf_type, c);
        if (cf_at_limit(ctx, c))
            return cf_refuse_new(ctx, key, argv[1], &o);
        changed = 1;
    } else if (cf_at_limit(ctx, c)) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, CF_ERR_LIMIT);
    }
    resp3 = rm_resp3(ctx);
    RedisModule_ReplyWithArray(ctx, argc - items);
    for (i = items; i < argc; i++) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(argv[i], &len);
        int rc = nx ? amq_scuckoo_add_unique(c, item, len) : amq_scuckoo_add(c, item, len);
        if (rc == 1)
            changed = 1;
        rm_items_note(&r, argv, argc, i, rc >= 0);
        if (nx || !resp3)
            RedisModule_ReplyWithLongLong(ctx, rc < 0 ? -1 : rc);
        else
            rm_reply_bool(ctx, rc == 1);
    }
    RedisModule_CloseKey(key);
    /* Items that failed (a growth refused for memory) are not replicated. */
    rm_items_replicate(ctx, &r, argv, changed);
    return REDISMODULE_OK;
}

static int cf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return cf_insert_common(ctx, argv, argc, 0);
}

static int cf_insertnx(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return cf_insert_common(ctx, argv, argc, 1);
}

/* ---- CF.EXISTS / CF.MEXISTS / CF.COUNT --------------------------------------------------- */

static int cf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    size_t len;
    const char *item;
    int st;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    st = rm_open(ctx, argv[1], REDISMODULE_READ, cf_type, &key, &value);
    RedisModule_CloseKey(key);
    if (st == RM_KEY_WRONGTYPE)
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    if (st == RM_KEY_EMPTY)
        return rm_reply_bool(ctx, 0);
    item = RedisModule_StringPtrLen(argv[2], &len);
    return rm_reply_bool(ctx, amq_scuckoo_contains(value, item, len));
}

static int cf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    int st, i;

    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    st = rm_open(ctx, argv[1], REDISMODULE_READ, cf_type, &key, &value);
    RedisModule_CloseKey(key);
    if (st == RM_KEY_WRONGTYPE)
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    RedisModule_ReplyWithArray(ctx, argc - 2);
    for (i = 2; i < argc; i++) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(argv[i], &len);
        rm_reply_bool(ctx, value != NULL && amq_scuckoo_contains(value, item, len));
    }
    return REDISMODULE_OK;
}

static int cf_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    size_t len;
    uint64_t count = 0;
    const char *item;
    int st;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    st = rm_open(ctx, argv[1], REDISMODULE_READ, cf_type, &key, &value);
    RedisModule_CloseKey(key);
    if (st == RM_KEY_WRONGTYPE)
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    if (st == RM_KEY_EMPTY)
        return RedisModule_ReplyWithLongLong(ctx, 0);
    item = RedisModule_StringPtrLen(argv[2], &len);
    count = amq_scuckoo_count(value, item, len);
    return RedisModule_ReplyWithLongLong(ctx, (long long)count);
}

/* ---- CF.DEL / CF.COMPACT ----------------------------------------------------------------- */

static int cf_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    size_t len;
    const char *item;
    int st, rc;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, cf_type, &key, &value);
    if (st != RM_KEY_OK) {
        RedisModule_CloseKey(key);
        return reply_key_status(ctx, st, CF_ERR_DEL_MISSING);
    }
    item = RedisModule_StringPtrLen(argv[2], &len);
    rc = amq_scuckoo_remove(value, item, len);
    RedisModule_CloseKey(key);
    if (rc == 1)
        RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_bool(ctx, rc == 1);
}

static int cf_compact(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    int st;

    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, cf_type, &key, &value);
    if (st != RM_KEY_OK) {
        RedisModule_CloseKey(key);
        return reply_key_status(ctx, st, CF_ERR_COMPACT_MISSING);
    }
    amq_scuckoo_compact(value, 1);
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- CF.INFO / CF.DEBUG ---------------------------------------------------------------------- */

/* Opens a key for reading and replies the error when it is not a filter. */
static amq_scuckoo *cf_get(RedisModuleCtx *ctx, RedisModuleString *name, const char *missing)
{
    RedisModuleKey *key;
    void *value;
    int st = rm_open(ctx, name, REDISMODULE_READ, cf_type, &key, &value);
    RedisModule_CloseKey(key);
    if (st != RM_KEY_OK) {
        reply_key_status(ctx, st, missing);
        return NULL;
    }
    return value;
}

static int cf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_scuckoo *c;
    amq_scuckoo_info in;

    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    c = cf_get(ctx, argv[1], CF_ERR_NOT_FOUND);
    if (c == NULL)
        return REDISMODULE_OK;
    amq_scuckoo_get_info(c, &in);
    rm_reply_map(ctx, 8);
    RedisModule_ReplyWithSimpleString(ctx, "Size");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.info_bytes);
    RedisModule_ReplyWithSimpleString(ctx, "Number of buckets");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.num_buckets);
    RedisModule_ReplyWithSimpleString(ctx, "Number of filters");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.links);
    RedisModule_ReplyWithSimpleString(ctx, "Number of items inserted");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.items);
    RedisModule_ReplyWithSimpleString(ctx, "Number of items deleted");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.deletes);
    RedisModule_ReplyWithSimpleString(ctx, "Bucket size");
    RedisModule_ReplyWithLongLong(ctx, in.bucket_size);
    RedisModule_ReplyWithSimpleString(ctx, "Expansion rate");
    RedisModule_ReplyWithLongLong(ctx, in.expansion);
    RedisModule_ReplyWithSimpleString(ctx, "Max iterations");
    RedisModule_ReplyWithLongLong(ctx, in.max_kicks);
    return REDISMODULE_OK;
}

static int cf_debug(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_scuckoo *c;
    amq_scuckoo_info in;
    char buf[256];

    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    c = cf_get(ctx, argv[1], CF_ERR_NOT_FOUND);
    if (c == NULL)
        return REDISMODULE_OK;
    amq_scuckoo_get_info(c, &in);
    snprintf(buf, sizeof buf,
             "bktsize:%u buckets:%llu items:%llu deletes:%llu filters:%llu max_iterations:%u "
             "expansion:%u",
             in.bucket_size, (unsigned long long)in.num_buckets, (unsigned long long)in.items,
             (unsigned long long)in.deletes, (unsigned long long)in.links,
             in.max_kicks, in.expansion);
    return rm_reply_cstr(ctx, buf);
}

/* ---- CF.SCANDUMP / CF.LOADCHUNK ---------------------------------------------------------------- */

/*
 * A data chunk as RedisBloom cuts them: the whole link holding byte
 * it - 1 of the concatenated arrays, whatever the offset inside it, and the
 * next iterator it + its size.  Links over the chunk limit are cut
 * into slices by the library.  0 when it is past the end.
 */
static size_t cf_chunk(const amq_scuckoo *c, uint64_t it, const uint8_t **data, uint64_t *next)
{
    uint64_t within, nb;
    uint32_t j;
    size_t bytes, len;

    /* O(1) in the chain's length: restoring a long chain chunk by chunk
     * stays linear. */
    if (amq_scuckoo_locate(c, it - 1, &j, &within) != AMQ_OK)
        return 0;
    amq_scuckoo_link(c, j, &nb, data, &bytes);
    if (bytes > AMQ_RM_MAX_CHUNK) {
        amq_scuckoo_chunk(c, it, AMQ_RM_MAX_CHUNK, data, &len, next);
        return len;
    }
    *next = it + bytes;
    return bytes;
}

static int cf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_scuckoo *c;
    amq_scuckoo_info in;
    long long it;
    uint64_t next = 0;
    const uint8_t *data = NULL;
    size_t len;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    /* RedisBloom reads the iterator before it looks at the key. */
    if (!rm_arg_ll(argv[2], &it) || it < 0)
        return RedisModule_ReplyWithError(ctx, CF_ERR_POSITION);
    c = cf_get(ctx, argv[1], CF_ERR_NOT_FOUND);
    if (c == NULL)
        return REDISMODULE_OK;
    amq_scuckoo_get_info(c, &in);
    RedisModule_ReplyWithArray(ctx, 2);
    /* RedisBloom dumps nothing of a filter holding no items. */
    if (in.items == 0)
        len = 0;
    else if (it == 0) {
        uint8_t hdr[AMQ_SCUCKOO_HEADER_SIZE];
        amq_scuckoo_header_serialize(c, hdr, sizeof hdr);
        RedisModule_ReplyWithLongLong(ctx, 1);
        return RedisModule_ReplyWithStringBuffer(ctx, (const char *)hdr, sizeof hdr);
    } else {
        len = cf_chunk(c, (uint64_t)it, &data, &next);
    }
    if (len == 0) {
        RedisModule_ReplyWithLongLong(ctx, 0);
        return RedisModule_ReplyWithNull(ctx);
    }
    RedisModule_ReplyWithLongLong(ctx, (long long)next);
    return RedisModule_ReplyWithStringBuffer(ctx, (const char *)data, len);
}

/*
 * Builds the zeroed chain a header (LOADCHUNK or RDB) describes.  The
 * shape is validated by the library; the item and delete counts are
 * restored as given, unchecked: they are bookkeeping, and a filter whose
 * counts went wrong (a LOADCHUNK header with a bad count, then adds and
 * deletes) must stay loadable after SAVE or an AOF rewrite.
 */
static int cf_from_header(const amq_scuckoo_header *h, amq_scuckoo **out)
{
    amq_scuckoo_header shape = *h;
    int rc;
    shape.num_items = 0;
    shape.num_deletes = 0;
    rc = amq_scuckoo_from_header(&shape, NULL, &amq_rm_allocator, out);
    if (rc == AMQ_OK) {
        amq_scuckoo_set_counts(*out, h->num_items, h->num_deletes);
        cf_unlimit(*out);
    }
    return rc;
}

static int cf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    long long it;
    const char *buf;
    size_t len;
    int st, rc;

    if (argc != 4)
        return RedisModule_WrongArity(ctx);
    if (!rm_arg_ll(argv[2], &it) || it == 0)
        return RedisModule_ReplyWithError(ctx, CF_ERR_POSITION);
    buf = RedisModule_StringPtrLen(argv[3], &len);
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, cf_type, &key, &value);
    if (st == RM_KEY_WRONGTYPE) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    }
    if (st == RM_KEY_EMPTY) {
        amq_scuckoo_header h;
        amq_scuckoo *c;
        if (it != 1) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, CF_ERR_NOT_FOUND);
        }
        if (amq_scuckoo_header_decode((const uint8_t *)buf, len, &h) != AMQ_OK) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, CF_ERR_HEADER);
        }
        rc = cf_from_header(&h, &c);
        if (rc != AMQ_OK) {
            RedisModule_CloseKey(key);
            /* Refused by the memory guard: beyond the machine's memory the
             * header is nonsense (RedisBloom: cannot create); within it,
             * memory is what is short. */
            return RedisModule_ReplyWithError(
                ctx, rc == AMQ_ENOMEM && rm_memory_plausible(ctx, amq_scuckoo_header_bytes(&h))
                         ? CF_ERR_NOMEM
                         : CF_ERR_CREATE);
        }
        RedisModule_ModuleTypeSetValue(key, cf_type, c);
    } else {
        /* A header for an existing key is refused, as in RedisBloom. */
        if (it == 1) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, CF_ERR_EXISTS);
        }
        rc = it < 0 || len == 0
                 ? AMQ_ERANGE
                 : amq_scuckoo_chunk_apply(value, (uint64_t)it, (const uint8_t *)buf, len);
        if (rc != AMQ_OK) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, CF_ERR_CHUNK);
        }
    }
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- data type ------------------------------------------------------------------------------------ */

/*
 * RDB, encoding 4: numFilters, numBuckets (first link), numItems,
 * numDeletes, bucketSize, maxIterations, expansion; per link its
 * numBuckets and its array as a string buffer.  Encodings 0..3: numFilters,
 * numBuckets, numItems, numDeletes, then per link the array; bucket
 * size 2, 20 iterations, expansion 1.
 */
static void cf_rdb_save(RedisModuleIO *io, void *value)
{
    const amq_scuckoo *c = value;
    amq_scuckoo_info in;
    uint32_t j;

    amq_scuckoo_get_info(c, &in);
    RedisModule_SaveUnsigned(io, in.links);
    RedisModule_SaveUnsigned(io, in.num_buckets);
    RedisModule_SaveUnsigned(io, in.items);
    RedisModule_SaveUnsigned(io, in.deletes);
    RedisModule_SaveUnsigned(io, in.bucket_size);
    RedisModule_SaveUnsigned(io, in.max_kicks);
    RedisModule_SaveUnsigned(io, in.expansion);
    for (j = 0; j < in.links; j++) {
        uint64_t nb;
        const uint8_t *data;
        size_t bytes;
        amq_scuckoo_link(c, j, &nb, &data, &bytes);
        RedisModule_SaveUnsigned(io, nb);
        RedisModule_SaveStringBuffer(io, (const char *)data, bytes);
    }
}

static void *cf_rdb_load(RedisModuleIO *io, int encver)
{
    amq_scuckoo_header h, shape;
    amq_scuckoo *c = NULL;
    void **tables = NULL;
    size_t *lens = NULL, nf = 0, j;
    int rc;

    if (encver < 0 || encver > AMQ_RM_ENCVER) {
        RedisModule_LogIOError(io, "warning", "amq: CF encoding version %d is newer than 4",
                               encver);
        return NULL;
    }
    memset(&h, 0, sizeof h);
    h.links = RedisModule_LoadUnsigned(io);
    h.num_buckets = RedisModule_LoadUnsigned(io);
    h.num_items = RedisModule_LoadUnsigned(io);
    h.num_deletes = RedisModule_LoadUnsigned(io);
    if (encver >= 4) {
        uint64_t bs = RedisModule_LoadUnsigned(io);
        uint64_t iters = RedisModule_LoadUnsigned(io);
        uint64_t e = RedisModule_LoadUnsigned(io);
        if (bs > 255 || iters > 65535 || e > AMQ_RM_MAX_EXPANSION)
            goto corrupt;
        h.bucket_size = (uint32_t)bs;
        h.max_kicks = (uint32_t)iters;
        h.expansion = (uint32_t)e;
    } else {
        h.bucket_size = 2;
        h.max_kicks = 20;
        h.expansion = 1;
    }
    if (RedisModule_IsIOError(io))
        goto fail;
    if (h.links == 0 || h.links > AMQ_SCUCKOO_MAX_LINKS ||
        !rm_memory_plausible(RedisModule_GetContextFromIO(io), amq_scuckoo_header_bytes(&h)))
        goto corrupt;
    /* Every link's table is read first, then the chain adopts the
     * loaded buffers (RedisModule_LoadStringBuffer's memory, freed by the
     * allocator's RedisModule_Free): a large filter is not held twice while
     * it loads.  The library checks each size against the header's chain. */
    nf = (size_t)h.links;
    tables = RedisModule_Alloc(nf * sizeof *tables);
    lens = RedisModule_Alloc(nf * sizeof *lens);
    for (j = 0; j < nf; j++) {
        tables[j] = NULL;
        lens[j] = 0;
    }
    for (j = 0; j < nf; j++) {
        if (encver >= 4) {
            uint64_t nb = RedisModule_LoadUnsigned(io);
            if (RedisModule_IsIOError(io))
                goto fail;
            if (nb != amq_scuckoo_header_buckets(&h, j))
                goto corrupt;
        }
        tables[j] = RedisModule_LoadStringBuffer(io, &lens[j]);
        if (RedisModule_IsIOError(io) || tables[j] == NULL)
            goto fail;
    }
    shape = h;
    shape.num_items = 0;
    shape.num_deletes = 0;
    rc = amq_scuckoo_from_header_owning(&shape, tables, lens, &amq_rm_allocator, &c);
    for (j = 0; j < nf; j++)
        tables[j] = NULL; /* taken, whatever the outcome */
    if (rc != AMQ_OK)
        goto corrupt;
    amq_scuckoo_set_counts(c, h.num_items, h.num_deletes);
    cf_unlimit(c);
    goto done;

corrupt:
    RedisModule_LogIOError(io, "warning", "amq: corrupt cuckoo filter data");
fail:
    amq_scuckoo_free(c);
    c = NULL;
done:
    if (tables != NULL) {
        for (j = 0; j < nf; j++)
            if (tables[j] != NULL)
                RedisModule_Free(tables[j]);
        RedisModule_Free(tables);
    }
    if (lens != NULL)
        RedisModule_Free(lens);
    return c;
}

static void cf_aof_rewrite(RedisModuleIO *aof, RedisModuleString *name, void *value)
{
    const amq_scuckoo *c = value;
    uint8_t hdr[AMQ_SCUCKOO_HEADER_SIZE];
    const uint8_t *data;
    size_t len;
    uint64_t it = 1, next;

    amq_scuckoo_header_serialize(c, hdr, sizeof hdr);
    RedisModule_EmitAOF(aof, "CF.LOADCHUNK", "slb", name, 1LL, (const char *)hdr, sizeof hdr);
    for (;;) {
        amq_scuckoo_chunk(c, it, AMQ_RM_MAX_CHUNK, &data, &len, &next);
        if (len == 0)
            break;
        RedisModule_EmitAOF(aof, "CF.LOADCHUNK", "slb", name, (long long)next,
                            (const char *)data, len);
        it = next;
    }
}

static size_t cf_mem_usage(const void *value)
{
    amq_scuckoo_info in;
    amq_scuckoo_get_info(value, &in);
    return (size_t)in.info_bytes;
}

static void cf_digest(RedisModuleDigest *md, void *value)
{
    const amq_scuckoo *c = value;
    uint8_t hdr[AMQ_SCUCKOO_HEADER_SIZE];
    amq_scuckoo_info in;
    uint32_t j;

    amq_scuckoo_header_serialize(c, hdr, sizeof hdr);
    RedisModule_DigestAddStringBuffer(md, (const char *)hdr, sizeof hdr);
    amq_scuckoo_get_info(c, &in);
    for (j = 0; j < in.links; j++) {
        uint64_t nb;
        const uint8_t *data;
        size_t bytes;
        amq_scuckoo_link(c, j, &nb, &data, &bytes);
        RedisModule_DigestAddStringBuffer(md, (const char *)data, bytes);
    }
    RedisModule_DigestEndSequence(md);
}

static void *cf_copy(RedisModuleString *from, RedisModuleString *to, const void *value)
{
    amq_scuckoo *c = NULL;
    (void)from;
    (void)to;
    if (amq_scuckoo_clone(value, &amq_rm_allocator, &c) != AMQ_OK)
        return NULL;
    return c;
}

static void cf_free(void *value)
{
    amq_scuckoo_free(value);
}

/* ---- registration ---------------------------------------------------------------------------------- */

/* What COMMAND DOCS shows, as RedisBloom documents its commands. */
#define CF_K_I "O(k + i), where k is the number of sub-filters and i is maxIterations"
#define CF_K "O(k), where k is the number of sub-filters"
#define CF_N_K_I \
    "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations"

static RedisModuleCommandArg cf_args_key[] = {RM_ARG_KEY, RM_ARG_END};
static RedisModuleCommandArg cf_args_item[] = {RM_ARG_KEY, RM_ARG("item", STRING, 0), RM_ARG_END};
static RedisModuleCommandArg cf_args_items[] = {RM_ARG_KEY, RM_ARG("item", STRING, RM_MULTI),
                                                RM_ARG_END};
static RedisModuleCommandArg cf_args_scandump[] = {RM_ARG_KEY, RM_ARG("iterator", INTEGER, 0),
                                                   RM_ARG_END};
static RedisModuleCommandArg cf_args_loadchunk[] = {RM_ARG_KEY, RM_ARG("iterator", INTEGER, 0),
                                                    RM_ARG("data", STRING, 0), RM_ARG_END};
static RedisModuleCommandArg cf_arg_capacity[] = {RM_ARG_TOKEN("capacity", "CAPACITY", 0),
                                                  RM_ARG("capacity", INTEGER, 0), RM_ARG_END};
static RedisModuleCommandArg cf_args_insert[] = {
    RM_ARG_KEY,
    {.name = "capacity", .type = REDISMODULE_ARG_TYPE_BLOCK, .key_spec_index = -1,
     .flags = RM_OPT, .subargs = cf_arg_capacity},
    RM_ARG_TOKEN("nocreate", "NOCREATE", RM_OPT),
    RM_ARG_TOKEN("items", "ITEMS", 0),
    RM_ARG("item", STRING, RM_MULTI),
    RM_ARG_END};
static RedisModuleCommandArg cf_arg_bucketsize[] = {RM_ARG("bucketsize", INTEGER, 0), RM_ARG_END};
static RedisModuleCommandArg cf_arg_maxiter[] = {RM_ARG("maxiterations", INTEGER, 0), RM_ARG_END};
static RedisModuleCommandArg cf_arg_expansion[] = {RM_ARG("expansion", INTEGER, 0), RM_ARG_END};
static RedisModuleCommandArg cf_args_reserve[] = {
    RM_ARG_KEY,
    RM_ARG("capacity", INTEGER, 0),
    RM_ARG_BLOCK("bucketsize", "BUCKETSIZE", RM_OPT, cf_arg_bucketsize),
    RM_ARG_BLOCK("maxiterations", "MAXITERATIONS", RM_OPT, cf_arg_maxiter),
    RM_ARG_BLOCK("expansion", "EXPANSION", RM_OPT, cf_arg_expansion),
    RM_ARG_END};

#define RW REDISMODULE_CMD_KEY_RW
#define RO REDISMODULE_CMD_KEY_RO
static const rm_command cf_cmds[] = {
    {"cf.reserve", cf_reserve, "write deny-oom", -3, RW, "Creates a new Cuckoo Filter", "1.0.0",
     "O(1)", NULL, cf_args_reserve},
    {"cf.add", cf_add, "write deny-oom", 3, RW, "Adds an item to a Cuckoo Filter", "1.0.0",
     CF_K_I, NULL, cf_args_item},
    {"cf.addnx", cf_addnx, "write deny-oom", 3, RW,
     "Adds an item to a Cuckoo Filter if the item did not exist previously.", "1.0.0", CF_K_I,
     NULL, cf_args_item},
    {"cf.insert", cf_insert, "write deny-oom", -4, RW,
     "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
     "1.0.0", CF_N_K_I, NULL, cf_args_insert},
    {"cf.insertnx", cf_insertnx, "write deny-oom", -4, RW,
     "Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter "
     "will be created if it does not exist",
     "1.0.0", CF_N_K_I, NULL, cf_args_insert},
    {"cf.exists", cf_exists, "readonly fast", 3, RO,
     "Checks whether one or more items exist in a Cuckoo Filter", "1.0.0", CF_K, NULL,
     cf_args_item},
    {"cf.mexists", cf_mexists, "readonly fast", -3, RO,
     "Checks whether one or more items exist in a Cuckoo Filter", "1.0.0",
     "O(k * n), where k is the number of sub-filters and n is the number of items", NULL,
     cf_args_items},
    {"cf.count", cf_count, "readonly fast", 3, RO,
     "Return the number of times an item might be in a Cuckoo Filter", "1.0.0", CF_K, NULL,
     cf_args_item},
    {"cf.del", cf_del, "write fast", 3, RW, "Deletes an item from a Cuckoo Filter", "1.0.0", CF_K,
     NULL, cf_args_item},
    /* RedisBloom flags CF.COMPACT "readonly fast" although it moves
     * fingerprints between links: amq says "write" (docs/redis.md,
     * deviations), so that replicas, read-only scripts and paused or
     * refused writes treat it as one.  Arity, key spec and (absent) docs
     * are RedisBloom's. */
    {"cf.compact", cf_compact, "write", -1,
     REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_ACCESS | REDISMODULE_CMD_KEY_UPDATE, NULL, NULL,
     NULL, NULL, NULL},
    {"cf.info", cf_info, "readonly fast", 2, RO, "Returns information about a Cuckoo Filter",
     "1.0.0", "O(1)", "dont_cache", cf_args_key},
    {"cf.debug", cf_debug, "readonly fast", 2, RO,
     "Returns internal debug information about a Cuckoo Filter", "1.0.0", "O(1)", "dont_cache",
     cf_args_key},
    {"cf.scandump", cf_scandump, "readonly fast", 3, RW,
     "Begins an incremental save of the bloom filter", "1.0.0", "O(n), where n is the capacity",
     "dont_cache", cf_args_scandump},
    {"cf.loadchunk", cf_loadchunk, "write deny-oom", 4, RW,
     "Restores a filter previously saved using SCANDUMP", "1.0.0",
     "O(n), where n is the capacity", NULL, cf_args_loadchunk},
};
#undef RW
#undef RO

int cf_register(RedisModuleCtx *ctx)
{
    static const rm_family family = {"MBbloomCF", &cf_type, cf_rdb_load, cf_rdb_save,
                                     cf_aof_rewrite, cf_mem_usage, cf_digest, cf_free, cf_copy,
                                     amq_rm_cf_defrag, cf_cmds, sizeof cf_cmds / sizeof cf_cmds[0],
                                     NULL /* RedisBloom's categories: config.c */};

    return rm_register_family(ctx, &family);
}
