/*
 * util.c - replies that follow the client's protocol, strict argument
 * parsing, key lookup, the memory guard and the allocator of the module.
 */
#include "module.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- allocator -------------------------------------------------------------- */

/* Blocks from this size on are checked against the machine's memory when no
 * client command is being guarded (loading, replication). */
#define RM_BIG_BLOCK ((size_t)64 << 20)

static void *rm_alloc(void *opaque, size_t size)
{
    (void)opaque;
    if (!rm_guard_grant(size))
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
 * form of Calloc in Redis 7.0; the guard stands in for it.
 */
static void *rm_zalloc(void *opaque, size_t size)
{
    (void)opaque;
    if (!rm_guard_grant(size))
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

/*
 * The guard of the command running now.  Commands run one at a time on the
 * server's main thread, so one static state is enough; rm_run arms it
 * around every deny-oom command and disarms it after, so allocations
 * elsewhere (loading, replicated commands, COPY, DEL) are never refused
 * for maxmemory.
 */
static struct {
    RedisModuleCtx *ctx; /* the client command being guarded, or NULL */
    int have_info;       /* m filled (fetched at the first allocation) */
    rm_meminfo m;
    uint64_t granted;    /* bytes granted since rm_guard_begin */
    int paused;          /* rm_guard_pause: granted, counted, never refused */
} guard;

void rm_guard_begin(RedisModuleCtx *ctx)
{
    int flags = RedisModule_GetContextFlags(ctx);
    memset(&guard, 0, sizeof guard);
    /* Redis applies maxmemory to client commands only: what the AOF or
     * the primary replays was accepted once and must be applied as is. */
    if (flags & (REDISMODULE_CTX_FLAGS_LOADING | REDISMODULE_CTX_FLAGS_REPLICATED))
        return;
    guard.ctx = ctx;
}

void rm_guard_end(void)
{
    memset(&guard, 0, sizeof guard);
}

int rm_guard_active(void)
{
    return guard.ctx != NULL && !guard.paused;
}

void rm_guard_pause(void)
{
    guard.paused = 1;
}

void rm_guard_resume(void)
{
    guard.paused = 0;
}

/* The guard's rule for bytes more, without counting them as granted. */
static int guard_fits(uint64_t bytes)
{
    uint64_t used;

    if (!guard.have_info) {
        rm_meminfo_get(guard.ctx, &guard.m);
        guard.have_info = 1;
    }
    if (bytes > UINT64_MAX - guard.granted)
        return 0;
    used = guard.m.used + guard.granted;
    /* With an evicting policy the server keeps used_memory at maxmemory by
     * evicting before each write: a filter that fits in maxmemory at all is
     * made room for, as any other key (refusing it whenever memory is full
     * made every new key fail in a cache that is full by design). */
    return fits(guard.m.maxmemory, guard.m.evicts ? guard.granted : used, bytes) &&
           fits(guard.m.total, used, bytes);
}

int rm_memory_allows(RedisModuleCtx *ctx, uint64_t bytes)
{
    if (guard.ctx == NULL)
        return rm_memory_plausible(ctx, bytes);
    return guard_fits(bytes);
}

int rm_guard_grant(uint64_t bytes)
{
    if (guard.ctx == NULL)
        return rm_memory_plausible(NULL, bytes);
    if (guard.paused) { /* as a replica would: only the machine's memory refuses */
        if (!rm_memory_plausible(NULL, bytes))
            return 0;
        guard.granted += bytes < UINT64_MAX - guard.granted ? bytes : UINT64_MAX - guard.granted;
        return 1;
    }
    if (!guard_fits(bytes))
        return 0;
    guard.granted += bytes;
    return 1;
}

int rm_memory_plausible(RedisModuleCtx *ctx, uint64_t bytes)
{
    rm_meminfo m;
    if (bytes < RM_BIG_BLOCK)
        return 1;
    rm_meminfo_get(ctx, &m);
    return fits(m.total, m.used, bytes);
}

/* ---- replication of multi-item commands ------------------------------------- */

void rm_items_note(rm_items *r, RedisModuleString **argv, int argc, int i, int ok)
{
    if (r->v == NULL) {
        if (ok)
            return;
        /* The first failure: the options and the items before it. */
        r->v = RedisModule_Alloc((size_t)(argc - 1) * sizeof *r->v);
        memcpy(r->v, argv + 1, (size_t)(i - 1) * sizeof *r->v);
        r->n = (size_t)(i - 1);
        return;
    }
    if (ok)
        r->v[r->n++] = argv[i];
}

void rm_items_replicate(RedisModuleCtx *ctx, rm_items *r, RedisModuleString **argv, int changed)
{
    if (changed) {
        if (r->v == NULL)
            RedisModule_ReplicateVerbatim(ctx);
        else
            RedisModule_Replicate(ctx, RedisModule_StringPtrLen(argv[0], NULL), "v", r->v, r->n);
    }
    if (r->v != NULL)
        RedisModule_Free(r->v);
    r->v = NULL;
    r->n = 0;
}

/* ---- families ---------------------------------------------------------------------------- */

/*
 * Every command runs through rm_run, which arms the memory guard around the
 * deny-oom ones: Redis has no per-command user data, so each registered
 * command gets its own thunk (rm_thunk_<slot>) calling rm_run with its slot.
 */
#define RM_MAX_COMMANDS 64

static struct {
    RedisModuleCmdFunc fn;
    int guarded;
} rm_cmds[RM_MAX_COMMANDS];
static size_t rm_ncmds;

static int rm_run(size_t slot, RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    int rc;
    if (!rm_cmds[slot].guarded)
        return rm_cmds[slot].fn(ctx, argv, argc);
    rm_guard_begin(ctx);
    rc = rm_cmds[slot].fn(ctx, argv, argc);
    rm_guard_end();
    return rc;
}

#define RM_THUNK(n)                                                                 \
    static int rm_thunk_##n(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) \
    {                                                                               \
        return rm_run(n, ctx, argv, argc);                                          \
    }
#define RM_THUNK_REF(n) rm_thunk_##n,
#define RM_SLOTS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) \
    X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) \
    X(29) X(30) X(31) X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) \
    X(44) X(45) X(46) X(47) X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55) X(56) X(57) X(58) \
    X(59) X(60) X(61) X(62) X(63)
RM_SLOTS(RM_THUNK)
static const RedisModuleCmdFunc rm_thunks[RM_MAX_COMMANDS] = {RM_SLOTS(RM_THUNK_REF)};

/* A word of a command's flag string ("write deny-oom"). */
static int has_flag(const char *flags, const char *word)
{
    size_t n = strlen(word);
    const char *p = flags;
    while ((p = strstr(p, word)) != NULL) {
        if ((p == flags || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return 1;
        p += n;
    }
    return 0;
}

static int create_command(RedisModuleCtx *ctx, const char *name, RedisModuleCmdFunc fn,
                          const char *flags, int firstkey, int lastkey, int keystep)
{
    size_t slot = rm_ncmds;
    if (slot >= RM_MAX_COMMANDS)
        return REDISMODULE_ERR;
    rm_cmds[slot].fn = fn;
    rm_cmds[slot].guarded = has_flag(flags, "deny-oom");
    if (RedisModule_CreateCommand(ctx, name, rm_thunks[slot], flags, firstkey, lastkey, keystep) !=
        REDISMODULE_OK)
        return REDISMODULE_ERR;
    rm_ncmds++;
    return REDISMODULE_OK;
}

int rm_create_command(RedisModuleCtx *ctx, const char *name, RedisModuleCmdFunc fn,
                      const char *flags)
{
    return create_command(ctx, name, fn, flags, 1, 1, 1);
}

/* The layout of RedisModuleCommandInfo this module fills (version 1). */
static const RedisModuleCommandInfoVersion rm_cmdinfo_version = {
    1, sizeof(RedisModuleCommandHistoryEntry), sizeof(RedisModuleCommandKeySpec),
    sizeof(RedisModuleCommandArg)};

static int rm_set_info(RedisModuleCtx *ctx, const rm_command *c,
                       RedisModuleCommandKeySpec *key_specs)
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
    info.key_specs = key_specs != NULL ? key_specs : keys;
    info.args = c->args;
    if (RedisModule_SetCommandInfo(cmd, &info) != REDISMODULE_OK) {
        RedisModule_Log(ctx, "warning", "amq: the server refused the command info of %s",
                        c->name);
        return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

/* c's ACL categories: the family's, and @write / @read / @fast from its flags (servers
 * without module ACL categories, Redis 7.0: none). */
static int rm_set_acl(RedisModuleCtx *ctx, const rm_command *c, const char *acl)
{
    char cats[128];
    RedisModuleCommand *cmd;

    if (acl == NULL || RedisModule_AddACLCategory == NULL || RedisModule_GetCommand == NULL ||
        RedisModule_SetCommandACLCategories == NULL)
        return REDISMODULE_OK;
    snprintf(cats, sizeof cats, "%s%s%s",
             has_flag(c->flags, "write") ? "write " : has_flag(c->flags, "readonly") ? "read " : "",
             has_flag(c->flags, "fast") ? "fast " : "", acl);
    cmd = RedisModule_GetCommand(ctx, c->name);
    if (cmd == NULL || RedisModule_SetCommandACLCategories(cmd, cats) != REDISMODULE_OK) {
        RedisModule_Log(ctx, "warning", "amq: could not set the ACL categories of %s", c->name);
        return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

int rm_register_family(RedisModuleCtx *ctx, const rm_family *f)
{
    RedisModuleTypeMethods tm;
    size_t i;

    memset(&tm, 0, sizeof tm);
    tm.version = AMQ_RM_TYPE_METHOD_VERSION;
    tm.rdb_load = f->rdb_load;
    tm.rdb_save = f->rdb_save;
    tm.aof_rewrite = f->aof_rewrite;
    tm.mem_usage = f->mem_usage;
    tm.digest = f->digest;
    tm.free = f->free;
    tm.copy = f->copy;
    tm.defrag = f->defrag;
    *f->type = RedisModule_CreateDataType(ctx, f->type_name, AMQ_RM_ENCVER, &tm);
    if (*f->type == NULL)
        return REDISMODULE_ERR;
    for (i = 0; i < f->ncmds; i++) {
        if (rm_create_command(ctx, f->cmds[i].name, f->cmds[i].fn, f->cmds[i].flags) !=
            REDISMODULE_OK)
            return REDISMODULE_ERR;
        if (rm_set_info(ctx, &f->cmds[i], NULL) != REDISMODULE_OK ||
            rm_set_acl(ctx, &f->cmds[i], f->acl) != REDISMODULE_OK)
            return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

int rm_register_command_keys(RedisModuleCtx *ctx, const rm_command *c,
                             RedisModuleCommandKeySpec *key_specs, int firstkey, int lastkey,
                             int keystep, const char *acl)
{
    if (create_command(ctx, c->name, c->fn, c->flags, firstkey, lastkey, keystep) !=
            REDISMODULE_OK ||
        rm_set_info(ctx, c, key_specs) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return rm_set_acl(ctx, c, acl);
}
