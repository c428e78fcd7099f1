/*
 * bf.c - the BF.* commands and the MBbloom-- data type: RedisBloom's
 * scalable Bloom filter, a thin layer over amq/scalable_bloom.h (parse,
 * call the library, reply).  Replies, errors and formats follow
 * RedisBloom's (documented and observed); docs/redis.md lists what differs.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "amq/scalable_bloom.h"
#include "config.h"
#include "module.h"

static RedisModuleType *bf_type;

#define BF_ERR_EXISTS "ERR item exists"
#define BF_ERR_RATE "ERR bad error rate"
#define BF_ERR_RATE_RANGE "ERR error rate must be in the range (0.000000, 1.000000)"
#define BF_ERR_CAPACITY "ERR bad capacity"
#define BF_ERR_CAPACITY_RANGE "ERR capacity must be in the range [1, 1073741824]"
#define BF_ERR_EXPANSION "ERR bad expansion"
#define BF_ERR_EXPANSION_RANGE "ERR expansion must be in the range [0, 32768]"
#define BF_ERR_NONSCALING_EXPAND "Nonscaling filters cannot expand"
#define BF_ERR_FULL "ERR non scaling filter is full"
#define BF_ERR_LIMIT "ERR problem inserting into filter"
#define BF_ERR_NOT_FOUND "ERR not found"
#define BF_ERR_NOMEM "ERR Insufficient memory to create filter"
#define BF_ERR_BAD_DATA "ERR received bad data"
#define BF_ERR_OFFSET "ERR invalid offset - no link found"
#define BF_ERR_CHUNK "ERR invalid chunk - Too big for current filter"
#define BF_ERR_INFO "Invalid information value"
#define BF_ERR_NO_EXPANSION "ERR no expansion"
/* BF.INSERT's option errors (RedisBloom's texts, without the ERR prefix). */
#define BF_ERR_INS_CAPACITY "Bad capacity"
#define BF_ERR_INS_RATE "Bad error rate"
#define BF_ERR_INS_EXPANSION "Bad expansion"
#define BF_ERR_INS_UNKNOWN "Unknown argument received"
#define BF_ERR_NUMERIC "Second argument must be numeric"
#define BF_ERR_LOAD_NUMERIC "ERR Second argument must be numeric"

/* RedisBloom caps every requested error rate above this. */
#define BF_MAX_ERROR_RATE 0.25

/* ---- creation --------------------------------------------------------------------- */

typedef struct bf_opts {
    double error;
    uint64_t capacity;
    uint32_t growth;
    int nonscaling;
} bf_opts;

static void bf_defaults(bf_opts *o)
{
    o->error = amq_rm_cfg.bf_error_rate;
    o->capacity = amq_rm_cfg.bf_initial_size;
    o->growth = amq_rm_cfg.bf_expansion;
    o->nonscaling = amq_rm_cfg.bf_expansion == 0;
}

/* Creates a filter; on failure replies the error and returns NULL. */
static amq_sbloom *bf_create(RedisModuleCtx *ctx, const bf_opts *o)
{
    amq_sbloom_params p;
    amq_sbloom_link_info first;
    amq_sbloom *s = NULL;
    int rc;

    amq_sbloom_params_init(&p, 1);
    p.capacity = o->capacity;
    p.fpp = o->error;
    p.expansion = o->growth; /* kept (and dumped) even when non-scaling, as RedisBloom */
    p.options = AMQ_SBLOOM_NOROUND | AMQ_SBLOOM_FORCE64 | (o->nonscaling ? AMQ_SBLOOM_NO_SCALING : 0);
    rc = amq_sbloom_link_info_for(p.capacity, o->nonscaling ? p.fpp : p.fpp / 2, p.options,
                                &first);
    if (rc != AMQ_OK) {
        RedisModule_ReplyWithError(ctx, rc == AMQ_ELIMIT ? BF_ERR_RATE : BF_ERR_RATE_RANGE);
        return NULL;
    }
    rc = amq_sbloom_new(&p, &amq_rm_allocator, &s);
    if (rc != AMQ_OK) {
        RedisModule_ReplyWithError(ctx, rc == AMQ_ENOMEM ? BF_ERR_NOMEM : BF_ERR_RATE);
        return NULL;
    }
    return s;
}

static int reply_key_status(RedisModuleCtx *ctx, int st, const char *missing)
{
    if (st == RM_KEY_WRONGTYPE)
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return RedisModule_ReplyWithError(ctx, missing);
}

static const char *bf_add_error(int rc)
{
    switch (rc) {
    case AMQ_EFULL:
        return BF_ERR_FULL;
    case AMQ_ELIMIT:
        return BF_ERR_LIMIT;
    default:
        return BF_ERR_NOMEM;
    }
}

/* ---- option values ---------------------------------------------------------------------- */

static const char *parse_error_rate(RedisModuleString *s, double *out)
{
    if (!rm_arg_double(s, out))
        return BF_ERR_RATE;
    if (!(*out > 0.0 && *out < 1.0))
        return BF_ERR_RATE_RANGE;
    return NULL;
}

static const char *parse_capacity(RedisModuleString *s, uint64_t *out)
{
    long long v;
    if (!rm_arg_ll(s, &v))
        return BF_ERR_CAPACITY;
    if (v < 1 || v > (long long)AMQ_RM_MAX_CAPACITY)
        return BF_ERR_CAPACITY_RANGE;
    *out = (uint64_t)v;
    return NULL;
}

/* ---- BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] ------------------------ */

static int bf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    amq_sbloom *s;
    bf_opts o;
    const char *err;
    int st, ex, nonscaling;

    if (argc < 4 || argc > 7)
        return RedisModule_WrongArity(ctx);
    bf_defaults(&o);
    if ((err = parse_error_rate(argv[2], &o.error)) != NULL ||
        (err = parse_capacity(argv[3], &o.capacity)) != NULL)
        return RedisModule_ReplyWithError(ctx, err);
    if (o.error > BF_MAX_ERROR_RATE)
        o.error = BF_MAX_ERROR_RATE;
    /* Keywords are looked for anywhere in the command, the key and the
     * values included, as RedisBloom does. */
    ex = rm_arg_index(argv, argc, "EXPANSION");
    nonscaling = rm_arg_index(argv, argc, "NONSCALING") >= 0;
    if (ex >= 0) {
        long long v;
        if (ex + 1 >= argc)
            return RedisModule_ReplyWithError(ctx, BF_ERR_NO_EXPANSION);
        /* RedisBloom's order: a number, then not with NONSCALING unless 0,
         * then the range. */
        if (!rm_arg_ll(argv[ex + 1], &v))
            return RedisModule_ReplyWithError(ctx, BF_ERR_EXPANSION);
        if (nonscaling && v != 0)
            return RedisModule_ReplyWithError(ctx, BF_ERR_NONSCALING_EXPAND);
        if (v < 0 || v > (long long)AMQ_RM_MAX_EXPANSION)
            return RedisModule_ReplyWithError(ctx, BF_ERR_EXPANSION_RANGE);
        o.growth = (uint32_t)v;
    }
    o.nonscaling = nonscaling || o.growth == 0;

    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, bf_type, &key, &value);
    if (st != RM_KEY_EMPTY) {
        RedisModule_CloseKey(key);
        return reply_key_status(ctx, st, BF_ERR_EXISTS);
    }
    s = bf_create(ctx, &o);
    if (s == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    RedisModule_ModuleTypeSetValue(key, bf_type, s);
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- adding: BF.ADD, BF.MADD, BF.INSERT ----------------------------------------------------- */

/*
 * Opens key for writing, creating it with o when missing (unless
 * nocreate).  Replies the error and returns NULL on failure; *created
 * tells whether the key was made.
 */
static amq_sbloom *bf_open_for_add(RedisModuleCtx *ctx, RedisModuleString *name, const bf_opts *o,
                                   int nocreate, RedisModuleKey **key, int *created)
{
    void *value;
    amq_sbloom *s;
    int st = rm_open(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE, bf_type, key, &value);

    *created = 0;
    if (st == RM_KEY_OK)
        return value;
    if (st == RM_KEY_WRONGTYPE || nocreate) {
        reply_key_status(ctx, st, BF_ERR_NOT_FOUND);
        return NULL;
    }
    s = bf_create(ctx, o);
    if (s == NULL)
        return NULL;
    RedisModule_ModuleTypeSetValue(*key, bf_type, s);
    *created = 1;
    return s;
}

/* Adds argv[first..argc) and replies an array of results (an error element
 * for an item that failed); records what to replicate in *r. */
static int bf_add_items(RedisModuleCtx *ctx, amq_sbloom *s, RedisModuleString **argv, int first,
                        int argc, int *changed, rm_items *r)
{
    long n = 0;
    int i;

    RedisModule_ReplyWithArray(ctx, REDISMODULE_POSTPONED_LEN);
    for (i = first; i < argc; i++) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(argv[i], &len);
        int rc = amq_sbloom_add(s, item, len);
        n++;
        rm_items_note(r, argv, argc, i, rc >= 0);
        if (rc < 0) {
            RedisModule_ReplyWithError(ctx, bf_add_error(rc));
            /* A full non-scaling filter ends the reply; a link that cannot
             * be added fails only this item (RedisBloom goes on). */
            if (rc == AMQ_EFULL)
                break;
            continue;
        }
        if (rc == 1)
            *changed = 1;
        rm_reply_bool(ctx, rc);
    }
    RedisModule_ReplySetArrayLength(ctx, n);
    return REDISMODULE_OK;
}

static int bf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amq_sbloom *s;
    bf_opts o;
    const char *item;
    size_t len;
    int rc, created;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    bf_defaults(&o);
    s = bf_open_for_add(ctx, argv[1], &o, 0, &key, &created);
    if (s == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    item = RedisModule_StringPtrLen(argv[2], &len);
    rc = amq_sbloom_add(s, item, len);
    RedisModule_CloseKey(key);
    if (created || rc == 1)
        RedisModule_ReplicateVerbatim(ctx);
    if (rc < 0)
        return RedisModule_ReplyWithError(ctx, bf_add_error(rc));
    return rm_reply_bool(ctx, rc);
}

static int bf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amq_sbloom *s;
    bf_opts o;
    rm_items r = {NULL, 0};
    int created, changed = 0;

    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    bf_defaults(&o);
    s = bf_open_for_add(ctx, argv[1], &o, 0, &key, &created);
    if (s == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    bf_add_items(ctx, s, argv, 2, argc, &changed, &r);
    RedisModule_CloseKey(key);
    rm_items_replicate(ctx, &r, argv, created || changed);
    return REDISMODULE_OK;
}

/* BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING] ITEMS item... */
/*
 * BF.INSERT reads its options as RedisBloom does, by their leading letters:
 * c... CAPACITY, er... ERROR, other e... EXPANSION, i... ITEMS, n?c...
 * NOCREATE, other n... NONSCALING; anything else is refused.  Every option
 * is checked even when the key exists (and then ignored).
 */
static int bf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amq_sbloom *s;
    bf_opts o;
    rm_items r = {NULL, 0};
    int i, items = -1, nocreate = 0, nonscaling = 0, created, changed = 0;

    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    bf_defaults(&o);
    for (i = 2; i < argc && items < 0; i++) {
        size_t len;
        const char *a = RedisModule_StringPtrLen(argv[i], &len);
        int c0 = len > 0 ? tolower((unsigned char)a[0]) : 0;
        long long v;
        double e;

        if (c0 == 'i') {
            items = i + 1;
        } else if (c0 == 'n') {
            if (len >= 3 && tolower((unsigned char)a[2]) == 'c')
                nocreate = 1;
            else
                nonscaling = 1;
        } else if (c0 == 'c' || c0 == 'e') {
            if (i + 1 >= argc)
                return RedisModule_WrongArity(ctx);
            i++;
            if (c0 == 'c') {
                if (!rm_arg_ll(argv[i], &v) || v < 1 || v > (long long)AMQ_RM_MAX_CAPACITY)
                    return RedisModule_ReplyWithError(ctx, BF_ERR_INS_CAPACITY);
                o.capacity = (uint64_t)v;
            } else if (len > 1 && tolower((unsigned char)a[1]) == 'r') {
                if (!rm_arg_double(argv[i], &e) || !(e > 0.0 && e < 1.0))
                    return RedisModule_ReplyWithError(ctx, BF_ERR_INS_RATE);
                o.error = e > BF_MAX_ERROR_RATE ? BF_MAX_ERROR_RATE : e;
            } else {
                if (!rm_arg_ll(argv[i], &v) || v < 0 || v > (long long)AMQ_RM_MAX_EXPANSION)
                    return RedisModule_ReplyWithError(ctx, BF_ERR_INS_EXPANSION);
                o.growth = (uint32_t)v;
            }
        } else {
            return RedisModule_ReplyWithError(ctx, BF_ERR_INS_UNKNOWN);
        }
    }
    if (items < 0 || items >= argc)
        return RedisModule_WrongArity(ctx);
    /* NONSCALING with an EXPANSION is accepted here (not in BF.RESERVE);
     * the growth is kept in the filter as given. */
    o.nonscaling = nonscaling || o.growth == 0;

    s = bf_open_for_add(ctx, argv[1], &o, nocreate, &key, &created);
    if (s == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    bf_add_items(ctx, s, argv, items, argc, &changed, &r);
    RedisModule_CloseKey(key);
    rm_items_replicate(ctx, &r, argv, created || changed);
    return REDISMODULE_OK;
}

/* ---- queries: BF.EXISTS, BF.MEXISTS, BF.CARD ---------------------------------------------------- */

/* Opens key for reading: RM_KEY_* (a wrong type is replied). */
static int bf_lookup(RedisModuleCtx *ctx, RedisModuleString *name, amq_sbloom **out)
{
    RedisModuleKey *key;
    void *value;
    int st = rm_open(ctx, name, REDISMODULE_READ, bf_type, &key, &value);
    RedisModule_CloseKey(key);
    *out = value;
    if (st == RM_KEY_WRONGTYPE)
        RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return st;
}

static int bf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_sbloom *s;
    const char *item;
    size_t len;
    int st;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    st = bf_lookup(ctx, argv[1], &s);
    if (st == RM_KEY_WRONGTYPE)
        return REDISMODULE_OK;
    if (st == RM_KEY_EMPTY)
        return rm_reply_bool(ctx, 0);
    item = RedisModule_StringPtrLen(argv[2], &len);
    return rm_reply_bool(ctx, amq_sbloom_contains(s, item, len));
}

static int bf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_sbloom *s;
    int i, st;

    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    st = bf_lookup(ctx, argv[1], &s);
    if (st == RM_KEY_WRONGTYPE)
        return REDISMODULE_OK;
    RedisModule_ReplyWithArray(ctx, argc - 2);
    for (i = 2; i < argc; i++) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(argv[i], &len);
        rm_reply_bool(ctx, s != NULL && amq_sbloom_contains(s, item, len));
    }
    return REDISMODULE_OK;
}

static int bf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_sbloom *s;
    amq_sbloom_info in;
    int st;

    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    st = bf_lookup(ctx, argv[1], &s);
    if (st == RM_KEY_WRONGTYPE)
        return REDISMODULE_OK;
    if (st == RM_KEY_EMPTY)
        return RedisModule_ReplyWithLongLong(ctx, 0);
    amq_sbloom_get_info(s, &in);
    return RedisModule_ReplyWithLongLong(ctx, (long long)in.items);
}

/* ---- BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION], BF.DEBUG key ------------------------ */

enum { INFO_CAPACITY, INFO_SIZE, INFO_FILTERS, INFO_ITEMS, INFO_EXPANSION, INFO_FIELDS };

static const char *const info_names[INFO_FIELDS] = {
    "Capacity", "Size", "Number of filters", "Number of items inserted", "Expansion rate"};
static const char *const info_keywords[INFO_FIELDS] = {"CAPACITY", "SIZE", "FILTERS", "ITEMS",
                                                       "EXPANSION"};

static void info_value(RedisModuleCtx *ctx, const amq_sbloom_info *in, int field)
{
    switch (field) {
    case INFO_CAPACITY:
        RedisModule_ReplyWithLongLong(ctx, (long long)in->capacity);
        break;
    case INFO_SIZE:
        RedisModule_ReplyWithLongLong(ctx, (long long)in->info_bytes);
        break;
    case INFO_FILTERS:
        RedisModule_ReplyWithLongLong(ctx, (long long)in->links);
        break;
    case INFO_ITEMS:
        RedisModule_ReplyWithLongLong(ctx, (long long)in->items);
        break;
    default:
        if (in->options & AMQ_SBLOOM_NO_SCALING)
            RedisModule_ReplyWithNull(ctx);
        else
            RedisModule_ReplyWithLongLong(ctx, in->expansion);
        break;
    }
}

static int bf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_sbloom *s;
    amq_sbloom_info in;
    int st, f, field = -1;

    if (argc != 2 && argc != 3)
        return RedisModule_WrongArity(ctx);
    st = bf_lookup(ctx, argv[1], &s);
    if (st == RM_KEY_WRONGTYPE)
        return REDISMODULE_OK;
    if (st == RM_KEY_EMPTY)
        return RedisModule_ReplyWithError(ctx, BF_ERR_NOT_FOUND);
    if (argc == 3) {
        for (f = 0; f < INFO_FIELDS && field < 0; f++)
            if (rm_arg_is(argv[2], info_keywords[f]))
                field = f;
        if (field < 0)
            return RedisModule_ReplyWithError(ctx, BF_ERR_INFO);
    }
    amq_sbloom_get_info(s, &in);
    if (field >= 0) {
        if (rm_resp3(ctx)) {
            rm_reply_map(ctx, 1);
            RedisModule_ReplyWithSimpleString(ctx, info_names[field]);
        } else {
            RedisModule_ReplyWithArray(ctx, 1);
        }
        info_value(ctx, &in, field);
        return REDISMODULE_OK;
    }
    rm_reply_map(ctx, INFO_FIELDS);
    for (f = 0; f < INFO_FIELDS; f++) {
        RedisModule_ReplyWithSimpleString(ctx, info_names[f]);
        info_value(ctx, &in, f);
    }
    return REDISMODULE_OK;
}

static int bf_debug(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_sbloom *s;
    amq_sbloom_info in;
    char buf[512];
    uint32_t i;
    int st;

    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    st = bf_lookup(ctx, argv[1], &s);
    if (st == RM_KEY_WRONGTYPE)
        return REDISMODULE_OK;
    if (st == RM_KEY_EMPTY)
        return RedisModule_ReplyWithError(ctx, BF_ERR_NOT_FOUND);
    amq_sbloom_get_info(s, &in);
    RedisModule_ReplyWithArray(ctx, (long)in.links + 1);
    snprintf(buf, sizeof buf, "size:%llu", (unsigned long long)in.items);
    rm_reply_cstr(ctx, buf);
    for (i = 0; i < in.links; i++) {
        amq_sbloom_link_info l;
        const uint8_t *data;
        amq_sbloom_link(s, i, &l, &data);
        snprintf(buf, sizeof buf,
                 "bytes:%llu bits:%llu hashes:%u hashwidth:64 capacity:%llu size:%llu ratio:%g",
                 (unsigned long long)l.bytes, (unsigned long long)l.bits, l.hashes,
                 (unsigned long long)l.entries, (unsigned long long)l.items, l.fpp);
        rm_reply_cstr(ctx, buf);
    }
    return REDISMODULE_OK;
}

/* ---- BF.SCANDUMP / BF.LOADCHUNK ----------------------------------------------------------------- */

static int bf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_sbloom *s;
    uint64_t it, next;
    long long sit;
    const uint8_t *data;
    size_t len;
    int st;

    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    st = bf_lookup(ctx, argv[1], &s);
    if (st == RM_KEY_WRONGTYPE)
        return REDISMODULE_OK;
    if (st == RM_KEY_EMPTY)
        return RedisModule_ReplyWithError(ctx, BF_ERR_NOT_FOUND);
    if (!rm_arg_ll(argv[2], &sit))
        return RedisModule_ReplyWithError(ctx, BF_ERR_NUMERIC);
    /* A negative iterator is past the end, as in RedisBloom. */
    it = sit < 0 ? UINT64_MAX : (uint64_t)sit;
    if (it == 0) {
        size_t hlen = amq_sbloom_header_serialized_size(s);
        uint8_t *hdr = RedisModule_Alloc(hlen);
        amq_sbloom_header_serialize(s, hdr, hlen);
        RedisModule_ReplyWithArray(ctx, 2);
        RedisModule_ReplyWithLongLong(ctx, 1);
        RedisModule_ReplyWithStringBuffer(ctx, (const char *)hdr, hlen);
        RedisModule_Free(hdr);
        return REDISMODULE_OK;
    }
    amq_sbloom_chunk(s, it, AMQ_RM_MAX_CHUNK, &data, &len, &next);
    RedisModule_ReplyWithArray(ctx, 2);
    if (len == 0) {
        RedisModule_ReplyWithLongLong(ctx, 0);
        return RedisModule_ReplyWithStringBuffer(ctx, "", 0);
    }
    RedisModule_ReplyWithLongLong(ctx, (long long)next);
    return RedisModule_ReplyWithStringBuffer(ctx, (const char *)data, len);
}

static int bf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    uint64_t it;
    long long sit;
    const char *buf;
    size_t len;
    int st, rc;

    if (argc != 4)
        return RedisModule_WrongArity(ctx);
    if (!rm_arg_ll(argv[2], &sit))
        return RedisModule_ReplyWithError(ctx, BF_ERR_LOAD_NUMERIC);
    it = sit < 1 ? 0 : (uint64_t)sit;
    buf = RedisModule_StringPtrLen(argv[3], &len);
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, bf_type, &key, &value);
    if (st == RM_KEY_WRONGTYPE) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    }
    if (st == RM_KEY_EMPTY) {
        amq_sbloom *s;
        if (sit != 1) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, BF_ERR_NOT_FOUND);
        }
        rc = amq_sbloom_header_deserialize((const uint8_t *)buf, len, &amq_rm_allocator, &s);
        if (rc != AMQ_OK) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, rc == AMQ_ENOMEM ? BF_ERR_NOMEM : BF_ERR_BAD_DATA);
        }
        RedisModule_ModuleTypeSetValue(key, bf_type, s);
    } else {
        /* A data chunk ends at byte it - 1: one that would start before the
         * first byte is bad data (RedisBloom's test and text). */
        if (sit <= 0 || (uint64_t)sit < len) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, BF_ERR_BAD_DATA);
        }
        rc = amq_sbloom_chunk_apply(value, it, (const uint8_t *)buf, len);
        if (rc != AMQ_OK) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, rc == AMQ_EOVERFLOW ? BF_ERR_CHUNK : BF_ERR_OFFSET);
        }
    }
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- data type ------------------------------------------------------------------------------------ */

/*
 * RDB, encoding 4 (integers SaveUnsigned, doubles SaveDouble): size,
 * nfilters, options, growth; per link: entries, error, hashes, bpe, bits,
 * n2, the bit array (string buffer), link size.  Encoding 0 lacks options
 * (0), growth (2), bits (entries * bpe) and n2; 1 adds bits and n2; 2 and 3
 * add options; 4 adds growth.
 */
static void bf_rdb_save(RedisModuleIO *io, void *value)
{
    const amq_sbloom *s = value;
    amq_sbloom_info in;
    uint32_t i;

    amq_sbloom_get_info(s, &in);
    RedisModule_SaveUnsigned(io, in.items);
    RedisModule_SaveUnsigned(io, in.links);
    RedisModule_SaveUnsigned(io, in.options);
    RedisModule_SaveUnsigned(io, in.expansion);
    for (i = 0; i < in.links; i++) {
        amq_sbloom_link_info l;
        const uint8_t *data;
        amq_sbloom_link(s, i, &l, &data);
        RedisModule_SaveUnsigned(io, l.entries);
        RedisModule_SaveDouble(io, l.fpp);
        RedisModule_SaveUnsigned(io, l.hashes);
        RedisModule_SaveDouble(io, l.bpe);
        RedisModule_SaveUnsigned(io, l.bits);
        RedisModule_SaveUnsigned(io, l.n2);
        RedisModule_SaveStringBuffer(io, (const char *)data, (size_t)l.bytes);
        RedisModule_SaveUnsigned(io, l.items);
    }
}

/* One link's fields and bit array, as read from the RDB. */
typedef struct bf_loaded_link {
    amq_sbloom_link_info info;
    char *data;
    size_t len;
} bf_loaded_link;

static void *bf_rdb_load(RedisModuleIO *io, int encver)
{
    amq_sbloom_header h;
    amq_sbloom_link_info *infos = NULL;
    bf_loaded_link *links = NULL;
    void **arrays;
    amq_sbloom *s = NULL;
    uint64_t size, nfilters, options = 0, growth = 2, i, total = 0;
    int rc;

    if (encver < 0 || encver > AMQ_RM_ENCVER) {
        RedisModule_LogIOError(io, "warning", "amq: BF encoding version %d is newer than 4",
                               encver);
        return NULL;
    }
    size = RedisModule_LoadUnsigned(io);
    nfilters = RedisModule_LoadUnsigned(io);
    if (encver >= 2)
        options = RedisModule_LoadUnsigned(io);
    if (encver >= 4)
        growth = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io))
        goto fail;
    if (nfilters == 0 || nfilters > AMQ_SBLOOM_MAX_LINKS || options > AMQ_SBLOOM_OPTIONS_MASK ||
        growth > AMQ_RM_MAX_EXPANSION)
        goto corrupt;
    links = RedisModule_Alloc(nfilters * sizeof *links);
    infos = RedisModule_Alloc(nfilters * sizeof *infos);
    memset(links, 0, nfilters * sizeof *links);
    for (i = 0; i < nfilters; i++) {
        amq_sbloom_link_info *l = &links[i].info;
        l->entries = RedisModule_LoadUnsigned(io);
        l->fpp = RedisModule_LoadDouble(io);
        uint64_t hashes = RedisModule_LoadUnsigned(io);
        l->bpe = RedisModule_LoadDouble(io);
        if (encver >= 1) {
            uint64_t n2;
            l->bits = RedisModule_LoadUnsigned(io);
            n2 = RedisModule_LoadUnsigned(io);
            if (n2 > 64)
                goto corrupt;
            l->n2 = (uint32_t)n2;
        } else {
            double b = (double)l->entries * l->bpe;
            l->bits = b > 0.0 && b < 1e19 ? (uint64_t)b : 0;
        }
        if (RedisModule_IsIOError(io))
            goto fail;
        if (hashes > AMQ_BLOOM_MAX_K_REDISBLOOM)
            goto corrupt;
        l->hashes = (uint32_t)hashes;
        links[i].data = RedisModule_LoadStringBuffer(io, &links[i].len);
        if (RedisModule_IsIOError(io) || links[i].data == NULL)
            goto fail;
        l->bytes = links[i].len;
        l->items = RedisModule_LoadUnsigned(io);
        if (RedisModule_IsIOError(io))
            goto fail;
        total += links[i].len;
        infos[i] = *l;
    }
    h.items = size;
    h.links = (uint32_t)nfilters;
    h.options = (uint32_t)options;
    h.expansion = (uint32_t)growth;
    if (!rm_memory_plausible(RedisModule_GetContextFromIO(io), total))
        goto corrupt;
    /* The links adopt the loaded buffers (RedisModule_LoadStringBuffer's
     * memory, freed by the allocator's RedisModule_Free): a large filter
     * is not held twice while it loads.  The buffers are taken whatever
     * the outcome. */
    arrays = RedisModule_Alloc(nfilters * sizeof *arrays);
    for (i = 0; i < nfilters; i++) {
        arrays[i] = links[i].data;
        links[i].data = NULL;
    }
    rc = amq_sbloom_from_header_owning(&h, infos, arrays, &amq_rm_allocator, &s);
    RedisModule_Free(arrays);
    if (rc != AMQ_OK) {
        RedisModule_LogIOError(io, "warning", "amq: Bloom filter data refused (%s)%s",
                               amq_strerror(rc),
                               rc == AMQ_EUNSUPPORTED
                                   ? ": filters without FORCE64 (32-bit hashing) are not supported"
                                   : "");
        goto fail;
    }
    goto done;

corrupt:
    RedisModule_LogIOError(io, "warning", "amq: corrupt Bloom filter data");
fail:
    s = NULL;
done:
    if (links != NULL) {
        for (i = 0; i < nfilters; i++)
            if (links[i].data != NULL)
                RedisModule_Free(links[i].data);
        RedisModule_Free(links);
    }
    if (infos != NULL)
        RedisModule_Free(infos);
    return s;
}

static void bf_aof_rewrite(RedisModuleIO *aof, RedisModuleString *name, void *value)
{
    const amq_sbloom *s = value;
    size_t hlen = amq_sbloom_header_serialized_size(s), len;
    uint8_t *hdr = RedisModule_Alloc(hlen);
    const uint8_t *data;
    uint64_t it = 1, next;

    amq_sbloom_header_serialize(s, hdr, hlen);
    RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", name, 1LL, (const char *)hdr, hlen);
    RedisModule_Free(hdr);
    for (;;) {
        amq_sbloom_chunk(s, it, AMQ_RM_MAX_CHUNK, &data, &len, &next);
        if (len == 0)
            break;
        RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", name, (long long)next,
                            (const char *)data, len);
        it = next;
    }
}

static size_t bf_mem_usage(const void *value)
{
    amq_sbloom_info in;
    amq_sbloom_get_info(value, &in);
    return (size_t)in.info_bytes;
}

static void bf_digest(RedisModuleDigest *md, void *value)
{
    const amq_sbloom *s = value;
    size_t hlen = amq_sbloom_header_serialized_size(s);
    uint8_t *hdr = RedisModule_Alloc(hlen);
    amq_sbloom_info in;
    uint32_t i;

    amq_sbloom_header_serialize(s, hdr, hlen);
    RedisModule_DigestAddStringBuffer(md, (const char *)hdr, hlen);
    RedisModule_Free(hdr);
    amq_sbloom_get_info(s, &in);
    for (i = 0; i < in.links; i++) {
        amq_sbloom_link_info l;
        const uint8_t *data;
        amq_sbloom_link(s, i, &l, &data);
        RedisModule_DigestAddStringBuffer(md, (const char *)data, (size_t)l.bytes);
    }
    RedisModule_DigestEndSequence(md);
}

static void *bf_copy(RedisModuleString *from, RedisModuleString *to, const void *value)
{
    amq_sbloom *s = NULL;
    (void)from;
    (void)to;
    if (amq_sbloom_clone(value, &amq_rm_allocator, &s) != AMQ_OK)
        return NULL;
    return s;
}

static void bf_free(void *value)
{
    amq_sbloom_free(value);
}

/* ---- registration ---------------------------------------------------------------------------------- */

/* What COMMAND DOCS shows, as RedisBloom documents its commands (its
 * texts, its argument names, "capcaity" included: clients compare them). */
#define BF_K_ONE "O(k), where k is the number of hash functions used by the last sub-filter"
#define BF_K_N "O(k * n), where k is the number of hash functions and n is the number of items"
#define BF_ADD_MANY "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist"

static RedisModuleCommandArg bf_args_key[] = {RM_ARG_KEY, RM_ARG_END};
static RedisModuleCommandArg bf_args_item[] = {RM_ARG_KEY, RM_ARG("item", STRING, 0), RM_ARG_END};
static RedisModuleCommandArg bf_args_items[] = {RM_ARG_KEY, RM_ARG("item", STRING, RM_MULTI),
                                                RM_ARG_END};
static RedisModuleCommandArg bf_args_scandump[] = {RM_ARG_KEY, RM_ARG("iterator", INTEGER, 0),
                                                   RM_ARG_END};
static RedisModuleCommandArg bf_args_loadchunk[] = {RM_ARG_KEY, RM_ARG("iterator", INTEGER, 0),
                                                    RM_ARG("data", STRING, 0), RM_ARG_END};
static RedisModuleCommandArg bf_info_fields[] = {
    RM_ARG_TOKEN("capcaity", "CAPACITY", 0), RM_ARG_TOKEN("SIZE", "SIZE", 0),
    RM_ARG_TOKEN("FILTERS", "FILTERS", 0),   RM_ARG_TOKEN("ITEMS", "ITEMS", 0),
    RM_ARG_TOKEN("EXPANSION", "EXPANSION", 0), RM_ARG_END};
static RedisModuleCommandArg bf_args_info[] = {
    RM_ARG_KEY,
    {.name = "single_value", .type = REDISMODULE_ARG_TYPE_ONEOF, .key_spec_index = -1,
     .flags = RM_OPT, .subargs = bf_info_fields},
    RM_ARG_END};
static RedisModuleCommandArg bf_arg_capacity[] = {RM_ARG("capacity", INTEGER, 0), RM_ARG_END};
static RedisModuleCommandArg bf_arg_error[] = {RM_ARG("error", DOUBLE, 0), RM_ARG_END};
static RedisModuleCommandArg bf_arg_expansion[] = {RM_ARG("expansion", INTEGER, 0), RM_ARG_END};
static RedisModuleCommandArg bf_args_insert[] = {
    RM_ARG_KEY,
    RM_ARG_BLOCK("capacity", "CAPACITY", RM_OPT, bf_arg_capacity),
    RM_ARG_BLOCK("error", "ERROR", RM_OPT, bf_arg_error),
    RM_ARG_BLOCK("expansion", "EXPANSION", RM_OPT, bf_arg_expansion),
    RM_ARG_TOKEN("nocreate", "NOCREATE", RM_OPT),
    RM_ARG_TOKEN("nonscaling", "NONSCALING", RM_OPT),
    RM_ARG_TOKEN("items", "ITEMS", 0),
    RM_ARG("item", STRING, RM_MULTI),
    RM_ARG_END};
static RedisModuleCommandArg bf_args_reserve[] = {
    RM_ARG_KEY,
    RM_ARG("error_rate", DOUBLE, 0),
    RM_ARG("capacity", INTEGER, 0),
    RM_ARG_BLOCK("expansion", "EXPANSION", RM_OPT, bf_arg_expansion),
    RM_ARG_TOKEN("nonscaling", "NONSCALING", RM_OPT),
    RM_ARG_END};

#define RW REDISMODULE_CMD_KEY_RW
#define RO REDISMODULE_CMD_KEY_RO
static const rm_command bf_cmds[] = {
    {"bf.reserve", bf_reserve, "write deny-oom", -4, RW, "Creates a new Bloom Filter", "1.0.0",
     "O(1)", NULL, bf_args_reserve},
    {"bf.add", bf_add, "write deny-oom", 3, RW, "Adds an item to a Bloom Filter", "1.0.0",
     BF_K_ONE, NULL, bf_args_item},
    {"bf.madd", bf_madd, "write deny-oom", -3, RW, BF_ADD_MANY, "1.0.0", BF_K_N, NULL,
     bf_args_items},
    {"bf.insert", bf_insert, "write deny-oom", -4, RW, BF_ADD_MANY, "1.0.0", BF_K_N, NULL,
     bf_args_insert},
    {"bf.exists", bf_exists, "readonly fast", 3, RO,
     "Checks whether an item exists in a Bloom Filter", "1.0.0", BF_K_ONE, NULL, bf_args_item},
    {"bf.mexists", bf_mexists, "readonly fast", -3, RO,
     "Checks whether one or more items exist in a Bloom Filter", "1.0.0", BF_K_N, NULL,
     bf_args_items},
    {"bf.card", bf_card, "readonly fast", 2, RO, "Returns the cardinality of a Bloom filter",
     "2.4.4", "O(1)", NULL, bf_args_key},
    {"bf.info", bf_info, "readonly fast", -2, RO, "Returns information about a Bloom Filter",
     "1.0.0", "O(1)", "dont_cache", bf_args_info},
    {"bf.debug", bf_debug, "readonly fast", 2, RO,
     "Returns internal debug information about a Bloom Filter", "1.0.0",
     "O(n), where n is the number of sub-filters", "dont_cache", bf_args_key},
    /* RW as in RedisBloom's key spec, although SCANDUMP only reads. */
    {"bf.scandump", bf_scandump, "readonly fast", 3, RW,
     "Begins an incremental save of the bloom filter", "1.0.0", "O(n), where n is the capacity",
     "dont_cache", bf_args_scandump},
    {"bf.loadchunk", bf_loadchunk, "write deny-oom", 4, RW,
     "Restores a filter previously saved using SCANDUMP", "1.0.0",
     "O(n), where n is the capacity", NULL, bf_args_loadchunk},
};
#undef RW
#undef RO

int bf_register(RedisModuleCtx *ctx)
{
    static const rm_family family = {"MBbloom--", &bf_type, bf_rdb_load, bf_rdb_save,
                                     bf_aof_rewrite, bf_mem_usage, bf_digest, bf_free, bf_copy,
                                     amq_rm_bf_defrag, bf_cmds, sizeof bf_cmds / sizeof bf_cmds[0],
                                     NULL /* RedisBloom's categories: config.c */};

    return rm_register_family(ctx, &family);
}
