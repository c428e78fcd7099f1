/*
 * af.c - the AF.* commands and the amq-aging data type: aging (sliding
 * window) filters, a thin layer over amq/aging.h.  docs/redis.md documents
 * the commands.
 *
 * Time: a filter that ages by time takes its clock from the primary only.
 * AF.ADD and AF.MADD read the primary's clock once and are replicated (and
 * appended to the AOF) as AF.ADDAT key <that time> items..., so a replica
 * or an AOF replay advances the filter to exactly the same generation and
 * holds the same bytes.  Reads (AF.EXISTS, AF.MEXISTS) change nothing; each
 * server answers them as of its own clock, or of the time given to
 * AF.EXISTSAT.
 */
#include <stdio.h>
#include <string.h>

#include "module.h" /* first: it asks for AMQ_ADVANCED_API (raw state) */

#include "amq/aging.h"
#include "amq/filter.h"

static RedisModuleType *af_type;

#define AF_ERR_NOT_FOUND "ERR not found"
#define AF_ERR_EXISTS "ERR item exists"
#define AF_ERR_RATE "ERR error rate must be in the range [1e-12, 0.5]"
#define AF_ERR_WINDOW "ERR window must be an integer in the range [1, 281474976710656]"
#define AF_ERR_TIME "ERR TIME must be a number of milliseconds in the range [1, 2^48]"
#define AF_ERR_MS "ERR bad time: expected milliseconds since the Unix epoch"
#define AF_ERR_AHEAD "ERR time is ahead of the server's clock by more than the window"
#define AF_ERR_COUNT_MODE "ERR this filter ages by count: it takes no time"
#define AF_ERR_NOMEM "ERR Insufficient memory to create filter"
#define AF_ERR_TOO_LARGE "ERR filter too large"
#define AF_ERR_BAD_DATA "ERR received bad data"
#define AF_ERR_CHUNK "ERR invalid chunk"
#define AF_ERR_SYNTAX "ERR syntax error"

#define AF_MAX_WINDOW (UINT64_C(1) << 48)
/* Header of AF.LOADCHUNK 0 (the library's amq_aging_export_header). */
#define AF_HEADER_SIZE AMQ_AGING_HEADER_SIZE

/* ---- helpers ------------------------------------------------------------------------ */

static int af_time_mode(const amq_filter *f)
{
    amq_aging_info in;
    return amq_aging_get_info(f, &in) == AMQ_OK && in.time_mode;
}

static int af_arg_ms(RedisModuleString *arg, uint64_t *ms)
{
    long long v;
    if (!rm_arg_ll(arg, &v) || v < 0)
        return 0;
    *ms = (uint64_t)v;
    return 1;
}

/* Opens a key and replies the error when it is not an aging filter;
 * returns the filter or NULL (the key stays open in *key either way). */
static amq_filter *af_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode,
                           RedisModuleKey **key)
{
    void *value;
    int st = rm_open(ctx, name, mode, af_type, key, &value);
    if (st == RM_KEY_WRONGTYPE) {
        RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
        return NULL;
    }
    if (st == RM_KEY_EMPTY) {
        RedisModule_ReplyWithError(ctx, AF_ERR_NOT_FOUND);
        return NULL;
    }
    return value;
}

/* ---- AF.RESERVE key error_rate window [COUNT | TIME ms] --------------------------------- */

static int af_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_config cfg;
    amq_aging_info plan;
    amq_filter *f;
    RedisModuleKey *key;
    void *value;
    long long window, ms = 0;
    double rate;
    int st, rc;

    if (argc != 4 && argc != 5 && argc != 6)
        return RedisModule_WrongArity(ctx);
    if (!rm_arg_double(argv[2], &rate) || !(rate >= 1e-12 && rate <= 0.5))
        return RedisModule_ReplyWithError(ctx, AF_ERR_RATE);
    if (!rm_arg_ll(argv[3], &window) || window < 1 || (uint64_t)window > AF_MAX_WINDOW)
        return RedisModule_ReplyWithError(ctx, AF_ERR_WINDOW);
    if (argc == 5 && !rm_arg_is(argv[4], "COUNT"))
        return RedisModule_ReplyWithError(ctx, AF_ERR_SYNTAX);
    if (argc == 6) {
        if (!rm_arg_is(argv[4], "TIME"))
            return RedisModule_ReplyWithError(ctx, AF_ERR_SYNTAX);
        if (!rm_arg_ll(argv[5], &ms) || ms < 1 || (uint64_t)ms > AF_MAX_WINDOW)
            return RedisModule_ReplyWithError(ctx, AF_ERR_TIME);
    }
    amq_config_init(&cfg, AMQ_KIND_AGING);
    cfg.capacity = (uint64_t)window;
    cfg.fpp = rate;
    cfg.alloc = &amq_rm_allocator;
    if (ms > 0) {
        cfg.window_ms = (uint64_t)ms;
        cfg.rate = (double)window * 1000.0 / (double)ms;
    }
    rc = amq_aging_info_for((uint64_t)window, rate, &plan);
    if (rc != AMQ_OK)
        return RedisModule_ReplyWithError(ctx, AF_ERR_TOO_LARGE);
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, af_type, &key, &value);
    if (st != RM_KEY_EMPTY) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, st == RM_KEY_WRONGTYPE
                                                   ? REDISMODULE_ERRORMSG_WRONGTYPE
                                                   : AF_ERR_EXISTS);
    }
    /* the guard (clients only: never replication or loading, module.h);
     * the time mode's geometry is the count mode's within a generation's
     * rounding: a little margin */
    if (!rm_memory_allows(ctx, plan.bytes + plan.bytes / 8)) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, AF_ERR_NOMEM);
    }
    rc = amq_filter_new(&cfg, &f, NULL);
    if (rc != AMQ_OK) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, rc == AMQ_ENOMEM ? AF_ERR_NOMEM : AF_ERR_TOO_LARGE);
    }
    RedisModule_ModuleTypeSetValue(key, af_type, f);
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- adds ------------------------------------------------------------------------------------ */

/*
 * Adds argv[first..argc) at time `now` (time mode; has_time: given by the
 * client, else the primary's clock).  Replies one integer (multi 0) or an
 * array; replicates the adds with the time they used.
 */
static int af_add_items(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int first,
                        int has_time, uint64_t now, int multi)
{
    RedisModuleKey *key;
    amq_filter *f;
    int i, rc, timed;

    f = af_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key);
    if (f == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    timed = af_time_mode(f);
    if (has_time && !timed) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, AF_ERR_COUNT_MODE);
    }
    if (timed) {
        long long t = RedisModule_Milliseconds();
        const uint64_t clock = t > 0 ? (uint64_t)t : 0;
        amq_aging_info in;
        /* A client's time past the clock by more than the window would drop the window's
         * items early and hold every later add in one generation until the clock caught up;
         * the primary's and the AOF's times were accepted once and are applied as is. */
        if (has_time && !(RedisModule_GetContextFlags(ctx) &
                          (REDISMODULE_CTX_FLAGS_LOADING | REDISMODULE_CTX_FLAGS_REPLICATED)) &&
            amq_aging_get_info(f, &in) == AMQ_OK && now > clock && now - clock > in.window_ms) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, AF_ERR_AHEAD);
        }
        if (!has_time)
            now = clock;
        (void)amq_aging_advance(f, now);
    }
    if (multi)
        RedisModule_ReplyWithArray(ctx, argc - first);
    for (i = first; i < argc; i++) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(argv[i], &len);
        rc = amq_filter_add(f, item, len);
        RedisModule_ReplyWithLongLong(ctx, rc > 0 ? 1 : 0);
    }
    RedisModule_CloseKey(key);
    if (timed)
        RedisModule_Replicate(ctx, "AF.ADDAT", "slv", argv[1], (long long)now, argv + first,
                              (size_t)(argc - first));
    else
        RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

static int af_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    return af_add_items(ctx, argv, argc, 2, 0, 0, 0);
}

static int af_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    return af_add_items(ctx, argv, argc, 2, 0, 0, 1);
}

/* AF.ADDAT key ms item [item ...]: adds at an explicit time. */
static int af_addat(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    uint64_t now;
    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    if (!af_arg_ms(argv[2], &now))
        return RedisModule_ReplyWithError(ctx, AF_ERR_MS);
    return af_add_items(ctx, argv, argc, 3, 1, now, 1);
}

/* ---- queries --------------------------------------------------------------------------------- */

static int af_query_items(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int first,
                          int has_time, uint64_t now, int multi)
{
    RedisModuleKey *key;
    amq_filter *f;
    int i, timed;

    f = af_open(ctx, argv[1], REDISMODULE_READ, &key);
    if (f == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    timed = af_time_mode(f);
    if (has_time && !timed) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, AF_ERR_COUNT_MODE);
    }
    if (timed && !has_time) {
        long long t = RedisModule_Milliseconds();
        now = t > 0 ? (uint64_t)t : 0;
    }
    if (multi)
        RedisModule_ReplyWithArray(ctx, argc - first);
    for (i = first; i < argc; i++) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(argv[i], &len);
        rm_reply_bool(ctx, amq_aging_contains_at(f, amq_filter_hash(f, item, len), now));
    }
    RedisModule_CloseKey(key);
    return REDISMODULE_OK;
}

static int af_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    return af_query_items(ctx, argv, argc, 2, 0, 0, 0);
}

static int af_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    return af_query_items(ctx, argv, argc, 2, 0, 0, 1);
}

/* AF.EXISTSAT key ms item [item ...]: answers as of an explicit time. */
static int af_existsat(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    uint64_t now;
    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    if (!af_arg_ms(argv[2], &now))
        return RedisModule_ReplyWithError(ctx, AF_ERR_MS);
    return af_query_items(ctx, argv, argc, 3, 1, now, 1);
}

/* ---- AF.INFO key ------------------------------------------------------------------------------ */

static int af_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    amq_filter *f;
    amq_aging_info in;
    char rate[32];

    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    f = af_open(ctx, argv[1], REDISMODULE_READ, &key);
    if (f == NULL) {
        RedisModule_CloseKey(key);
        return REDISMODULE_OK;
    }
    (void)amq_aging_get_info(f, &in);
    snprintf(rate, sizeof rate, "%.6g", in.fpp_bound);
    rm_reply_map(ctx, in.time_mode ? 13 : 10);
    rm_reply_cstr(ctx, "Aging by");
    rm_reply_cstr(ctx, in.time_mode ? "time" : "count");
    rm_reply_cstr(ctx, "Error rate");
    rm_reply_cstr(ctx, rate);
    rm_reply_cstr(ctx, "Window");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.window);
    rm_reply_cstr(ctx, "Horizon");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.horizon);
    if (in.time_mode) {
        rm_reply_cstr(ctx, "Window ms");
        RedisModule_ReplyWithLongLong(ctx, (long long)in.window_ms);
        rm_reply_cstr(ctx, "Horizon ms");
        RedisModule_ReplyWithLongLong(ctx, (long long)in.horizon_ms);
        rm_reply_cstr(ctx, "Generation ms");
        RedisModule_ReplyWithLongLong(ctx, (long long)in.gen_ms);
    }
    rm_reply_cstr(ctx, "Generation size");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.gen_size);
    rm_reply_cstr(ctx, "Generation");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.generation);
    rm_reply_cstr(ctx, "Slices");
    RedisModule_ReplyWithLongLong(ctx, (long long)(in.k + in.l));
    rm_reply_cstr(ctx, "Hashes");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.k);
    rm_reply_cstr(ctx, "Items added");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.adds);
    rm_reply_cstr(ctx, "Size");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.bytes);
    RedisModule_CloseKey(key);
    return REDISMODULE_OK;
}

/* ---- AF.LOADCHUNK key iter data (what the AOF rewrite emits) ------------------------------------
 * iter 0: the header (parameter block, hash algorithm, seed) creates an
 * empty filter; iter n > 0: data goes to payload offset n - 1. */

/* The bytes a parameter block's geometry declares, asked of the memory guard
 * before the library validates the block (UINT64_MAX when it overflows). */
static uint64_t af_declared_bytes(const uint8_t *params)
{
    uint64_t bytes;
    (void)amq_aging_params_bytes(params, AMQ_AGING_PARAMS_SIZE, &bytes);
    return bytes;
}

static int af_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModuleKey *key;
    void *value;
    long long it;
    const uint8_t *buf;
    size_t len;
    int st, rc;

    if (argc != 4)
        return RedisModule_WrongArity(ctx);
    if (!rm_arg_ll(argv[2], &it) || it < 0)
        return RedisModule_ReplyWithError(ctx, AF_ERR_CHUNK);
    buf = (const uint8_t *)RedisModule_StringPtrLen(argv[3], &len);
    st = rm_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, af_type, &key, &value);
    if (st == RM_KEY_WRONGTYPE) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    }
    if (it == 0) {
        amq_filter *f;
        if (st != RM_KEY_EMPTY) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, AF_ERR_EXISTS);
        }
        if (len != AF_HEADER_SIZE) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, AF_ERR_BAD_DATA);
        }
        if (!rm_memory_allows(ctx, af_declared_bytes(buf))) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, AF_ERR_NOMEM);
        }
        rc = amq_aging_import_header(buf, len, &amq_rm_allocator, &f, NULL);
        if (rc != AMQ_OK) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, rc == AMQ_ENOMEM ? AF_ERR_NOMEM
                                                                    : AF_ERR_BAD_DATA);
        }
        RedisModule_ModuleTypeSetValue(key, af_type, f);
    } else {
        uint8_t *data;
        size_t dlen;
        uint64_t off = (uint64_t)it - 1;
        if (st == RM_KEY_EMPTY) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, AF_ERR_NOT_FOUND);
        }
        if (amq_aging_data_mut(value, &data, &dlen) != AMQ_OK || off > dlen ||
            len > dlen - off) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, AF_ERR_CHUNK);
        }
        memcpy(data + off, buf, len);
    }
    RedisModule_CloseKey(key);
    RedisModule_ReplicateVerbatim(ctx);
    return rm_reply_ok(ctx);
}

/* ---- data type ------------------------------------------------------------------------------------
 * RDB (encoding AMQ_RM_ENCVER): the parameter block (string), hash
 * algorithm, seed, chunk count (unsigned), then the payload in chunks of at
 * most AMQ_RM_MAX_CHUNK bytes (strings), so that loading never holds a
 * second copy of a large filter. */

static void af_header(const amq_filter *f, uint8_t *hdr, const uint8_t **payload, size_t *len)
{
    (void)amq_aging_export_header(f, hdr, payload, len);
}

static void af_rdb_save(RedisModuleIO *io, void *value)
{
    uint8_t params[AMQ_AGING_PARAMS_SIZE];
    const uint8_t *payload;
    size_t len, off, n;
    amq_stats st;

    (void)amq_aging_serialize_raw(value, params, &payload, &len);
    amq_filter_stats(value, &st);
    RedisModule_SaveStringBuffer(io, (const char *)params, AMQ_AGING_PARAMS_SIZE);
    RedisModule_SaveUnsigned(io, st.hash_algo);
    RedisModule_SaveUnsigned(io, st.seed);
    RedisModule_SaveUnsigned(io, (len + AMQ_RM_MAX_CHUNK - 1) / AMQ_RM_MAX_CHUNK);
    for (off = 0; off < len; off += n) {
        n = len - off < AMQ_RM_MAX_CHUNK ? len - off : AMQ_RM_MAX_CHUNK;
        RedisModule_SaveStringBuffer(io, (const char *)payload + off, n);
    }
}

static void *af_rdb_load(RedisModuleIO *io, int encver)
{
    amq_filter *f = NULL;
    char *params, *chunk;
    size_t plen, clen, off = 0, dlen;
    uint64_t algo, seed, chunks, i;
    uint8_t *data;
    int rc;

    if (encver != AMQ_RM_ENCVER) {
        RedisModule_LogIOError(io, "warning", "amq: aging filter encoding %d is not %d", encver,
                               AMQ_RM_ENCVER);
        return NULL;
    }
    params = RedisModule_LoadStringBuffer(io, &plen);
    algo = RedisModule_LoadUnsigned(io);
    seed = RedisModule_LoadUnsigned(io);
    chunks = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io) || params == NULL) {
        if (params != NULL)
            RedisModule_Free(params);
        return NULL;
    }
    if (plen == AMQ_AGING_PARAMS_SIZE && algo <= UINT32_MAX &&
        rm_memory_plausible(RedisModule_GetContextFromIO(io),
                            af_declared_bytes((const uint8_t *)params)))
        rc = amq_aging_deserialize_raw((const uint8_t *)params, plen, (uint32_t)algo, seed,
                              &amq_rm_allocator, &f, NULL);
    else
        rc = AMQ_ECORRUPT;
    RedisModule_Free(params);
    if (rc != AMQ_OK || amq_aging_data_mut(f, &data, &dlen) != AMQ_OK ||
        chunks != (dlen + AMQ_RM_MAX_CHUNK - 1) / AMQ_RM_MAX_CHUNK)
        goto corrupt;
    for (i = 0; i < chunks; i++) {
        chunk = RedisModule_LoadStringBuffer(io, &clen);
        if (RedisModule_IsIOError(io) || chunk == NULL)
            goto fail;
        if (clen > dlen - off) {
            RedisModule_Free(chunk);
            goto corrupt;
        }
        memcpy(data + off, chunk, clen);
        off += clen;
        RedisModule_Free(chunk);
    }
    if (off != dlen)
        goto corrupt;
    return f;
corrupt:
    RedisModule_LogIOError(io, "warning", "amq: corrupt aging filter data");
fail:
    amq_filter_free(f);
    return NULL;
}

static void af_aof_rewrite(RedisModuleIO *aof, RedisModuleString *name, void *value)
{
    uint8_t hdr[AF_HEADER_SIZE];
    const uint8_t *payload;
    size_t len, off, n;

    af_header(value, hdr, &payload, &len);
    RedisModule_EmitAOF(aof, "AF.LOADCHUNK", "slb", name, 0LL, (const char *)hdr, sizeof hdr);
    for (off = 0; off < len; off += n) {
        n = len - off < AMQ_RM_MAX_CHUNK ? len - off : AMQ_RM_MAX_CHUNK;
        RedisModule_EmitAOF(aof, "AF.LOADCHUNK", "slb", name, (long long)(off + 1),
                            (const char *)payload + off, n);
    }
}

static size_t af_mem_usage(const void *value)
{
    amq_stats st;
    amq_filter_stats(value, &st);
    return (size_t)st.bytes + 256;
}

static void af_digest(RedisModuleDigest *md, void *value)
{
    uint8_t hdr[AF_HEADER_SIZE];
    const uint8_t *payload;
    size_t len;

    af_header(value, hdr, &payload, &len);
    RedisModule_DigestAddStringBuffer(md, (const char *)hdr, sizeof hdr);
    RedisModule_DigestAddStringBuffer(md, (const char *)payload, len);
    RedisModule_DigestEndSequence(md);
}

static void *af_copy(RedisModuleString *from, RedisModuleString *to, const void *value)
{
    amq_filter *f = NULL;
    (void)from;
    (void)to;
    if (amq_filter_clone(value, &amq_rm_allocator, &f) != AMQ_OK)
        return NULL;
    return f;
}

static void af_free(void *value)
{
    amq_filter_free(value);
}

/* ---- registration ---------------------------------------------------------------------------------- */

static RedisModuleCommandArg af_arg_time[] = {RM_ARG("ms", INTEGER, 0), RM_ARG_END};
static RedisModuleCommandArg af_mode[] = {
    RM_ARG_TOKEN("count", "COUNT", 0),
    RM_ARG_BLOCK("time", "TIME", 0, af_arg_time),
    RM_ARG_END};
static RedisModuleCommandArg af_args_reserve[] = {
    RM_ARG_KEY,
    RM_ARG("error_rate", DOUBLE, 0),
    RM_ARG("window", INTEGER, 0),
    {.name = "mode", .type = REDISMODULE_ARG_TYPE_ONEOF, .key_spec_index = -1, .flags = RM_OPT,
     .subargs = af_mode},
    RM_ARG_END};
static RedisModuleCommandArg af_args_item[] = {RM_ARG_KEY, RM_ARG("item", STRING, 0), RM_ARG_END};
static RedisModuleCommandArg af_args_items[] = {RM_ARG_KEY, RM_ARG("item", STRING, RM_MULTI),
                                                RM_ARG_END};
static RedisModuleCommandArg af_args_at[] = {RM_ARG_KEY, RM_ARG("ms", INTEGER, 0),
                                             RM_ARG("item", STRING, RM_MULTI), RM_ARG_END};
static RedisModuleCommandArg af_args_key[] = {RM_ARG_KEY, RM_ARG_END};
static RedisModuleCommandArg af_args_loadchunk[] = {
    RM_ARG_KEY, RM_ARG("iterator", INTEGER, 0), RM_ARG("data", STRING, 0), RM_ARG_END};

#define RW REDISMODULE_CMD_KEY_RW
#define RO REDISMODULE_CMD_KEY_RO
static const rm_command af_cmds[] = {
    {"af.reserve", af_reserve, "write deny-oom", -4, RW,
     "Creates an aging (sliding-window) filter", "0.1.0", "O(size)", NULL, af_args_reserve},
    {"af.add", af_add, "write fast", 3, RW, "Adds an item to an aging filter", "0.1.0", "O(1)",
     NULL, af_args_item},
    {"af.madd", af_madd, "write fast", -3, RW, "Adds items to an aging filter", "0.1.0",
     "O(n) for n items", NULL, af_args_items},
    {"af.addat", af_addat, "write fast", -4, RW,
     "Adds items to an aging filter at a given time (ms)", "0.1.0", "O(n) for n items", NULL,
     af_args_at},
    {"af.exists", af_exists, "readonly fast", 3, RO,
     "Checks whether an item was added within the window", "0.1.0", "O(1)", NULL, af_args_item},
    {"af.mexists", af_mexists, "readonly fast", -3, RO,
     "Checks whether items were added within the window", "0.1.0", "O(n) for n items", NULL,
     af_args_items},
    {"af.existsat", af_existsat, "readonly fast", -4, RO,
     "Checks items as of a given time (ms)", "0.1.0", "O(n) for n items", NULL, af_args_at},
    {"af.info", af_info, "readonly fast", 2, RO, "Returns information about an aging filter",
     "0.1.0", "O(1)", "dont_cache", af_args_key},
    {"af.loadchunk", af_loadchunk, "write deny-oom", 4, RW,
     "Restores an aging filter from its AOF chunks", "0.1.0", "O(n) for n bytes", NULL,
     af_args_loadchunk},
};
#undef RW
#undef RO

int af_register(RedisModuleCtx *ctx)
{
    static const rm_family family = {"amq-aging", &af_type, af_rdb_load, af_rdb_save,
                                     af_aof_rewrite, af_mem_usage, af_digest, af_free, af_copy,
                                     NULL, af_cmds, sizeof af_cmds / sizeof af_cmds[0], "amq"};

    return rm_register_family(ctx, &family);
}
