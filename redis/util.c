/*
 * util.c - replies that follow the client's protocol, strict argument
 * parsing, key lookup, the memory guard and the allocator of the module.
 */
#include "module.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- allocator -------------------------------------------------------------- */

/* Blocks from this size on are checked against the machine's memory. */
#define RM_BIG_BLOCK ((size_t)64 << 20)

static void *rm_alloc(void *opaque, size_t size)
{
    (void)opaque;
    if (size >= RM_BIG_BLOCK && !rm_memory_plausible(NULL, size))
        return NULL;
    /* TryAlloc returns NULL where Alloc would abort the server. */
    if (RedisModule_TryAlloc != NULL)
        return RedisModule_TryAlloc(size);
    return RedisModule_Alloc(size);
}

/*
 * Zeroed blocks (filter arrays) from RedisModule_Calloc: jemalloc hands out
 * fresh, already-zero pages for a large block without writing them, so a
 * 1 GiB BF.RESERVE does not fault in 1 GiB at once.  There is no "try"
 * form of Calloc in Redis 7.0; the machine-memory check stands in for it.
 */
static void *rm_zalloc(void *opaque, size_t size)
{
    (void)opaque;
    if (size >= RM_BIG_BLOCK && !rm_memory_plausible(NULL, size))
        return NULL;
    return RedisModule_Calloc(1, size);
}

static void rm_free(void *opaque, void *ptr, size_t size)
{
    (void)opaque;
    (void)size;
    RedisModule_Free(ptr);
}

const amq_allocator amq_rm_allocator = {rm_alloc, rm_free, NULL, rm_zalloc};

/* ---- replies ------------------------------------------------------------------ */

int rm_resp3(RedisModuleCtx *ctx)
{
    return (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_RESP3) != 0;
}

int rm_reply_bool(RedisModuleCtx *ctx, int b)
{
    if (RedisModule_ReplyWithBool != NULL && rm_resp3(ctx))
        return RedisModule_ReplyWithBool(ctx, b != 0);
    return RedisModule_ReplyWithLongLong(ctx, b != 0);
}

int rm_reply_map(RedisModuleCtx *ctx, long pairs)
{
    if (RedisModule_ReplyWithMap != NULL && rm_resp3(ctx))
        return RedisModule_ReplyWithMap(ctx, pairs);
    return RedisModule_ReplyWithArray(ctx, pairs * 2);
}

int rm_reply_ok(RedisModuleCtx *ctx)
{
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int rm_reply_cstr(RedisModuleCtx *ctx, const char *s)
{
    return RedisModule_ReplyWithStringBuffer(ctx, s, strlen(s));
}

/* ---- arguments ------------------------------------------------------------------ */

int rm_arg_is(RedisModuleString *arg, const char *keyword)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    return len == strlen(keyword) && strncasecmp(s, keyword, len) == 0;
}

int rm_arg_index(RedisModuleString **argv, int argc, const char *keyword)
{
    int i;
    for (i = 0; i < argc; i++)
        if (rm_arg_is(argv[i], keyword))
            return i;
    return -1;
}

/* The server's own parsers: RedisBloom reads its numbers with them, so the
 * same strings are accepted on every server ("0100" and "+5" are not
 * integers, "inf" is a double, "nan" is not). */
int rm_arg_ll(RedisModuleString *arg, long long *out)
{
    return RedisModule_StringToLongLong(arg, out) == REDISMODULE_OK;
}

int rm_arg_double(RedisModuleString *arg, double *out)
{
    return RedisModule_StringToDouble(arg, out) == REDISMODULE_OK;
}

/* ---- keys ------------------------------------------------------------------------ */

int rm_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleType *type,
            RedisModuleKey **key, void **value)
{
    RedisModuleKey *k = RedisModule_OpenKey(ctx, name, mode);
    *key = k;
    *value = NULL;
    if (RedisModule_KeyType(k) == REDISMODULE_KEYTYPE_EMPTY)
        return RM_KEY_EMPTY;
    if (RedisModule_ModuleTypeGetType(k) != type)
        return RM_KEY_WRONGTYPE;
    *value = RedisModule_ModuleTypeGetValue(k);
    return RM_KEY_OK;
}

/* ---- memory ----------------------------------------------------------------------- */

typedef struct rm_meminfo {
    unsigned long long maxmemory, used, total; /* 0 when unknown */
    int evicts; /* maxmemory-policy is not noeviction */
} rm_meminfo;

static void rm_meminfo_get(RedisModuleCtx *ctx, rm_meminfo *m)
{
    RedisModuleServerInfoData *info;
    int err = 0;

    memset(m, 0, sizeof *m);
    info = RedisModule_GetServerInfo(ctx, "memory");
    if (info == NULL)
        return;
    m->maxmemory = RedisModule_ServerInfoGetFieldUnsigned(info, "maxmemory", &err);
    if (err)
        m->maxmemory = 0;
    m->used = RedisModule_ServerInfoGetFieldUnsigned(info, "used_memory", &err);
    if (err)
        m->used = 0;
    m->total = RedisModule_ServerInfoGetFieldUnsigned(info, "total_system_memory", &err);
    if (err)
        m->total = 0;
    if (RedisModule_ServerInfoGetFieldC != NULL) {
        const char *policy = RedisModule_ServerInfoGetFieldC(info, "maxmemory_policy");
        m->evicts = policy != NULL && strcmp(policy, "noeviction") != 0;
    }
    RedisModule_FreeServerInfo(ctx, info);
}

static int fits(unsigned long long limit, unsigned long long used, uint64_t bytes)
{
    return limit == 0 || (used <= limit && bytes <= limit - used);
}

int rm_memory_allows(RedisModuleCtx *ctx, uint64_t bytes)
{
    rm_meminfo m;
    rm_meminfo_get(ctx, &m);
    /* With an evicting policy the server keeps used_memory at maxmemory by
     * evicting before each write: a filter that fits in maxmemory at all is
     * made room for, as any other key (refusing it whenever memory is full
     * made every new key fail in a cache that is full by design). */
    if (m.evicts)
        return fits(m.maxmemory, 0, bytes) && fits(m.total, m.used, bytes);
    return fits(m.maxmemory, m.used, bytes) && fits(m.total, m.used, bytes);
}

int rm_memory_plausible(RedisModuleCtx *ctx, uint64_t bytes)
{
    rm_meminfo m;
    if (bytes < RM_BIG_BLOCK)
        return 1;
    rm_meminfo_get(ctx, &m);
    return fits(m.total, m.used, bytes);
}

/* ---- families ---------------------------------------------------------------------------- */

/* The layout of RedisModuleCommandInfo this module fills (version 1). */
static const RedisModuleCommandInfoVersion rm_cmdinfo_version = {
    1, sizeof(RedisModuleCommandHistoryEntry), sizeof(RedisModuleCommandKeySpec),
    sizeof(RedisModuleCommandArg)};

static int rm_set_info(RedisModuleCtx *ctx, const rm_command *c)
{
    RedisModuleCommandKeySpec keys[2];
    RedisModuleCommandInfo info;
    RedisModuleCommand *cmd;

    /* Servers before 7.0 have no command information: the handlers check
     * the arity themselves. */
    if (RedisModule_GetCommand == NULL || RedisModule_SetCommandInfo == NULL)
        return REDISMODULE_OK;
    cmd = RedisModule_GetCommand(ctx, c->name);
    if (cmd == NULL)
        return REDISMODULE_ERR;
    memset(keys, 0, sizeof keys);
    keys[0].flags = c->key_flags;
    keys[0].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
    keys[0].bs.index.pos = 1;
    keys[0].find_keys_type = REDISMODULE_KSPEC_FK_RANGE;
    keys[0].fk.range.lastkey = 0;
    keys[0].fk.range.keystep = 1;
    keys[0].fk.range.limit = 0;
    memset(&info, 0, sizeof info);
    info.version = &rm_cmdinfo_version;
    info.summary = c->summary;
    info.since = c->since;
    info.complexity = c->complexity;
    info.tips = c->tips;
    info.arity = c->arity;
    info.key_specs = keys;
    info.args = c->args;
    if (RedisModule_SetCommandInfo(cmd, &info) != REDISMODULE_OK) {
        RedisModule_Log(ctx, "warning", "amq: the server refused the command info of %s",
                        c->name);
        return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

int rm_register_family(RedisModuleCtx *ctx, const char *type_name, RedisModuleTypeMethods *tm,
                       RedisModuleType **type, const rm_command *cmds, size_t n)
{
    size_t i;

    tm->version = AMQ_RM_TYPE_METHOD_VERSION;
    *type = RedisModule_CreateDataType(ctx, type_name, AMQ_RM_ENCVER, tm);
    if (*type == NULL)
        return REDISMODULE_ERR;
    for (i = 0; i < n; i++) {
        if (RedisModule_CreateCommand(ctx, cmds[i].name, cmds[i].fn, cmds[i].flags, 1, 1, 1) !=
            REDISMODULE_OK)
            return REDISMODULE_ERR;
        if (rm_set_info(ctx, &cmds[i]) != REDISMODULE_OK)
            return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}
