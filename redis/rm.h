/*
 * rm.h - the part of the Redis module API that amq.so uses, declared from
 * the documented API (https://redis.io/docs/latest/develop/reference/modules/
 * modules-api-ref/).  Not a copy of redismodule.h: only what the module
 * calls, in our own words.
 *
 * How a module reaches the server: the server calls RedisModule_OnLoad(ctx,
 * argv, argc); the first field of the opaque context is a pointer to the
 * server's lookup function, int (*)(const char *name, void *out), which
 * writes the address of the API function "RedisModule_<Name>" to *out and
 * returns REDISMODULE_OK, or returns REDISMODULE_ERR when the server does
 * not have that function.  rm_init() fills every function pointer below
 * that way.  Pointers marked optional may stay NULL on older servers.
 *
 * ABI facts (Redis 7.0; checked by loading into redis-server 7.0.15):
 *  - RedisModuleTypeMethods is the struct below, field for field; its
 *    version field says how far the server may read it (4 in 7.0: up to
 *    copy2; 3 in 6.2: up to defrag; 5 in 7.2 adds aux_save2).
 *  - the encoding version of a data type is 0..1023, its name 9 characters.
 */
#ifndef AMQ_REDIS_RM_H
#define AMQ_REDIS_RM_H

#include <stddef.h>
#include <stdint.h>

/* ---- opaque server objects ------------------------------------------- */
typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleType RedisModuleType;
typedef struct RedisModuleIO RedisModuleIO;
typedef struct RedisModuleDigest RedisModuleDigest;
typedef struct RedisModuleServerInfoData RedisModuleServerInfoData;
typedef struct RedisModuleDefragCtx RedisModuleDefragCtx;
typedef struct RedisModuleKeyOptCtx RedisModuleKeyOptCtx;
typedef struct RedisModuleCommand RedisModuleCommand;

/* ---- constants ---------------------------------------------------------- */
#define REDISMODULE_OK 0
#define REDISMODULE_ERR 1
#define REDISMODULE_APIVER_1 1

/* OpenKey modes. */
#define REDISMODULE_READ (1 << 0)
#define REDISMODULE_WRITE (1 << 1)

/* KeyType results. */
#define REDISMODULE_KEYTYPE_EMPTY 0
#define REDISMODULE_KEYTYPE_MODULE 6

/* ReplyWithArray/ReplyWithMap length given later by ReplySetArrayLength. */
#define REDISMODULE_POSTPONED_LEN (-1L)

/* SetModuleOptions: rdb_load may see I/O errors (bad RESTORE payloads)
 * and must check IsIOError instead of the server aborting. */
#define REDISMODULE_OPTIONS_HANDLE_IO_ERRORS (1 << 0)

/* GetContextFlags bits. */
#define REDISMODULE_CTX_FLAGS_MAXMEMORY (1 << 8)
#define REDISMODULE_CTX_FLAGS_REPLICATED (1 << 12) /* sent by the primary */
#define REDISMODULE_CTX_FLAGS_LOADING (1 << 13)
#define REDISMODULE_CTX_FLAGS_RESP3 (1 << 22)

#define REDISMODULE_ERRORMSG_WRONGTYPE \
    "WRONGTYPE Operation against a key holding the wrong kind of value"

/* ---- command information (RedisModule_SetCommandInfo, Redis 7.0+) -------------
 * What COMMAND INFO and COMMAND DOCS report for a module command, and the
 * arity the server checks before calling it.  The server reads the arrays
 * through the sizes in the version record, so a module built against this
 * layout stays readable by later servers. */

/* Key-spec flags. */
#define REDISMODULE_CMD_KEY_RO (1ULL << 0)
#define REDISMODULE_CMD_KEY_RW (1ULL << 1)
#define REDISMODULE_CMD_KEY_OW (1ULL << 2)
#define REDISMODULE_CMD_KEY_RM (1ULL << 3)
#define REDISMODULE_CMD_KEY_ACCESS (1ULL << 4)
#define REDISMODULE_CMD_KEY_UPDATE (1ULL << 5)
#define REDISMODULE_CMD_KEY_INSERT (1ULL << 6)
#define REDISMODULE_CMD_KEY_DELETE (1ULL << 7)

/* Argument flags. */
#define REDISMODULE_CMD_ARG_NONE 0
#define REDISMODULE_CMD_ARG_OPTIONAL (1 << 0)
#define REDISMODULE_CMD_ARG_MULTIPLE (1 << 1)
#define REDISMODULE_CMD_ARG_MULTIPLE_TOKEN (1 << 2)

typedef enum {
    REDISMODULE_ARG_TYPE_STRING,
    REDISMODULE_ARG_TYPE_INTEGER,
    REDISMODULE_ARG_TYPE_DOUBLE,
    REDISMODULE_ARG_TYPE_KEY,
    REDISMODULE_ARG_TYPE_PATTERN,
    REDISMODULE_ARG_TYPE_UNIX_TIME,
    REDISMODULE_ARG_TYPE_PURE_TOKEN,
    REDISMODULE_ARG_TYPE_ONEOF,
    REDISMODULE_ARG_TYPE_BLOCK
} RedisModuleCommandArgType;

typedef enum {
    REDISMODULE_KSPEC_BS_INVALID,
    REDISMODULE_KSPEC_BS_UNKNOWN,
    REDISMODULE_KSPEC_BS_INDEX,
    REDISMODULE_KSPEC_BS_KEYWORD
} RedisModuleKeySpecBeginSearchType;

typedef enum {
    REDISMODULE_KSPEC_FK_OMIT,
    REDISMODULE_KSPEC_FK_UNKNOWN,
    REDISMODULE_KSPEC_FK_RANGE,
    REDISMODULE_KSPEC_FK_KEYNUM
} RedisModuleKeySpecFindKeysType;

typedef struct RedisModuleCommandHistoryEntry {
    const char *since;
    const char *changes;
} RedisModuleCommandHistoryEntry;

/* Where a command's keys are: begin search (an index or a keyword), then
 * find keys (a range or a key count). */
typedef struct RedisModuleCommandKeySpec {
    const char *notes;
    uint64_t flags;
    RedisModuleKeySpecBeginSearchType begin_search_type;
    union {
        struct {
            int pos;
        } index;
        struct {
            const char *keyword;
            int startfrom;
        } keyword;
    } bs;
    RedisModuleKeySpecFindKeysType find_keys_type;
    union {
        struct {
            int lastkey;
            int keystep;
            int limit;
        } range;
        struct {
            int keynumidx;
            int firstkey;
            int keystep;
        } keynum;
    } fk;
} RedisModuleCommandKeySpec;

typedef struct RedisModuleCommandArg {
    const char *name;
    RedisModuleCommandArgType type;
    int key_spec_index; /* for a KEY argument; -1 otherwise */
    const char *token;
    const char *summary;
    const char *since;
    int flags;
    const char *deprecated_since;
    struct RedisModuleCommandArg *subargs; /* ONEOF/BLOCK: ends with a zeroed entry */
    const char *display_text;
} RedisModuleCommandArg;

typedef struct RedisModuleCommandInfoVersion {
    int version;
    size_t sizeof_historyentry;
    size_t sizeof_keyspec;
    size_t sizeof_arg;
} RedisModuleCommandInfoVersion;

typedef struct RedisModuleCommandInfo {
    const RedisModuleCommandInfoVersion *version;
    const char *summary;
    const char *complexity;
    const char *since;
    RedisModuleCommandHistoryEntry *history; /* arrays end with a zeroed entry */
    const char *tips;                        /* space-separated */
    int arity;                               /* 0: left as CreateCommand set it */
    RedisModuleCommandKeySpec *key_specs;
    RedisModuleCommandArg *args;
} RedisModuleCommandInfo;

/* ---- data-type callbacks ------------------------------------------------ */
typedef int (*RedisModuleCmdFunc)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
typedef void *(*RedisModuleTypeLoadFunc)(RedisModuleIO *rdb, int encver);
typedef void (*RedisModuleTypeSaveFunc)(RedisModuleIO *rdb, void *value);
typedef void (*RedisModuleTypeRewriteFunc)(RedisModuleIO *aof, RedisModuleString *key,
                                           void *value);
typedef size_t (*RedisModuleTypeMemUsageFunc)(const void *value);
typedef void (*RedisModuleTypeDigestFunc)(RedisModuleDigest *digest, void *value);
typedef void (*RedisModuleTypeFreeFunc)(void *value);
typedef int (*RedisModuleTypeAuxLoadFunc)(RedisModuleIO *rdb, int encver, int when);
typedef void (*RedisModuleTypeAuxSaveFunc)(RedisModuleIO *rdb, int when);
typedef size_t (*RedisModuleTypeFreeEffortFunc)(RedisModuleString *key, const void *value);
typedef void (*RedisModuleTypeUnlinkFunc)(RedisModuleString *key, const void *value);
typedef void *(*RedisModuleTypeCopyFunc)(RedisModuleString *fromkey, RedisModuleString *tokey,
                                         const void *value);
typedef int (*RedisModuleTypeDefragFunc)(RedisModuleDefragCtx *ctx, RedisModuleString *key,
                                         void **value);
typedef size_t (*RedisModuleTypeMemUsageFunc2)(RedisModuleKeyOptCtx *ctx, const void *value,
                                               size_t sample_size);
typedef size_t (*RedisModuleTypeFreeEffortFunc2)(RedisModuleKeyOptCtx *ctx, const void *value);
typedef void (*RedisModuleTypeUnlinkFunc2)(RedisModuleKeyOptCtx *ctx, const void *value);
typedef void *(*RedisModuleTypeCopyFunc2)(RedisModuleKeyOptCtx *ctx, const void *value);

/* The layout of Redis 7.0 (method version 4). */
#define AMQ_RM_TYPE_METHOD_VERSION 4
typedef struct RedisModuleTypeMethods {
    uint64_t version;
    RedisModuleTypeLoadFunc rdb_load;
    RedisModuleTypeSaveFunc rdb_save;
    RedisModuleTypeRewriteFunc aof_rewrite;
    RedisModuleTypeMemUsageFunc mem_usage;
    RedisModuleTypeDigestFunc digest;
    RedisModuleTypeFreeFunc free;
    RedisModuleTypeAuxLoadFunc aux_load;
    RedisModuleTypeAuxSaveFunc aux_save;
    int aux_save_triggers;
    RedisModuleTypeFreeEffortFunc free_effort;
    RedisModuleTypeUnlinkFunc unlink;
    RedisModuleTypeCopyFunc copy;
    RedisModuleTypeDefragFunc defrag;
    RedisModuleTypeMemUsageFunc2 mem_usage2;
    RedisModuleTypeFreeEffortFunc2 free_effort2;
    RedisModuleTypeUnlinkFunc2 unlink2;
    RedisModuleTypeCopyFunc2 copy2;
} RedisModuleTypeMethods;

/* ---- API functions -----------------------------------------------------------
 * X(return type, name without the RedisModule_ prefix, parameters, required)
 */
#define AMQ_RM_API(X)                                                                          \
    X(void, SetModuleAttribs, (RedisModuleCtx * ctx, const char *name, int ver, int apiver), 1) \
    X(int, IsModuleNameBusy, (const char *name), 0)                                            \
    X(int, CreateCommand,                                                                      \
      (RedisModuleCtx * ctx, const char *name, RedisModuleCmdFunc cmdfunc,                     \
       const char *strflags, int firstkey, int lastkey, int keystep),                          \
      1)                                                                                       \
    X(RedisModuleCommand *, GetCommand, (RedisModuleCtx * ctx, const char *name), 0)           \
    X(int, SetCommandInfo, (RedisModuleCommand * command, const RedisModuleCommandInfo *info), 0) \
    X(RedisModuleType *, CreateDataType,                                                       \
      (RedisModuleCtx * ctx, const char *name, int encver, RedisModuleTypeMethods *methods), 1) \
    X(void, SetModuleOptions, (RedisModuleCtx * ctx, int options), 1)                          \
    X(int, GetContextFlags, (RedisModuleCtx * ctx), 1)                                         \
    X(RedisModuleKey *, OpenKey, (RedisModuleCtx * ctx, RedisModuleString * keyname, int mode), \
      1)                                                                                       \
    X(void, CloseKey, (RedisModuleKey * key), 1)                                               \
    X(int, KeyType, (RedisModuleKey * key), 1)                                                 \
    X(RedisModuleType *, ModuleTypeGetType, (RedisModuleKey * key), 1)                         \
    X(void *, ModuleTypeGetValue, (RedisModuleKey * key), 1)                                   \
    X(int, ModuleTypeSetValue, (RedisModuleKey * key, RedisModuleType * mt, void *value), 1)   \
    X(int, ReplyWithError, (RedisModuleCtx * ctx, const char *err), 1)                         \
    X(int, ReplyWithSimpleString, (RedisModuleCtx * ctx, const char *msg), 1)                  \
    X(int, ReplyWithLongLong, (RedisModuleCtx * ctx, long long ll), 1)                         \
    X(int, ReplyWithArray, (RedisModuleCtx * ctx, long len), 1)                                \
    X(void, ReplySetArrayLength, (RedisModuleCtx * ctx, long len), 1)                          \
    X(int, ReplyWithStringBuffer, (RedisModuleCtx * ctx, const char *buf, size_t len), 1)      \
    X(int, ReplyWithNull, (RedisModuleCtx * ctx), 1)                                           \
    X(int, ReplyWithMap, (RedisModuleCtx * ctx, long len), 0)                                  \
    X(int, ReplyWithBool, (RedisModuleCtx * ctx, int b), 0)                                    \
    X(int, WrongArity, (RedisModuleCtx * ctx), 1)                                              \
    X(const char *, StringPtrLen, (const RedisModuleString *str, size_t *len), 1)              \
    X(int, StringToLongLong, (const RedisModuleString *str, long long *ll), 1)                 \
    X(int, StringToDouble, (const RedisModuleString *str, double *d), 1)                       \
    X(int, ReplicateVerbatim, (RedisModuleCtx * ctx), 1)                                       \
    X(int, Replicate, (RedisModuleCtx * ctx, const char *cmdname, const char *fmt, ...), 1)    \
    X(long long, Milliseconds, (void), 1)                                                      \
    X(void *, Alloc, (size_t bytes), 1)                                                        \
    X(void *, TryAlloc, (size_t bytes), 0)                                                     \
    X(void *, Calloc, (size_t nmemb, size_t size), 1)                                          \
    X(void, Free, (void *ptr), 1)                                                              \
    X(void, SaveUnsigned, (RedisModuleIO * io, uint64_t value), 1)                             \
    X(uint64_t, LoadUnsigned, (RedisModuleIO * io), 1)                                         \
    X(void, SaveDouble, (RedisModuleIO * io, double value), 1)                                 \
    X(double, LoadDouble, (RedisModuleIO * io), 1)                                             \
    X(void, SaveStringBuffer, (RedisModuleIO * io, const char *str, size_t len), 1)            \
    X(char *, LoadStringBuffer, (RedisModuleIO * io, size_t *lenptr), 1)                       \
    X(int, IsIOError, (RedisModuleIO * io), 1)                                                 \
    X(RedisModuleCtx *, GetContextFromIO, (RedisModuleIO * io), 1)                             \
    X(void, EmitAOF, (RedisModuleIO * io, const char *cmdname, const char *fmt, ...), 1)       \
    X(void, DigestAddStringBuffer, (RedisModuleDigest * md, const char *ele, size_t len), 1)   \
    X(void, DigestAddLongLong, (RedisModuleDigest * md, long long ele), 1)                     \
    X(void, DigestEndSequence, (RedisModuleDigest * md), 1)                                    \
    X(void, Log, (RedisModuleCtx * ctx, const char *level, const char *fmt, ...), 1)           \
    X(void, LogIOError, (RedisModuleIO * io, const char *level, const char *fmt, ...), 1)      \
    X(RedisModuleServerInfoData *, GetServerInfo, (RedisModuleCtx * ctx, const char *section), \
      1)                                                                                       \
    X(void, FreeServerInfo, (RedisModuleCtx * ctx, RedisModuleServerInfoData * data), 1)       \
    X(unsigned long long, ServerInfoGetFieldUnsigned,                                          \
      (RedisModuleServerInfoData * data, const char *field, int *out_err), 1)                   \
    X(const char *, ServerInfoGetFieldC, (RedisModuleServerInfoData * data, const char *field), \
      0)

/* ---- newer servers: configs, ACL categories, defrag, command filters ----------------------
 * All optional: Redis 7.0 has the configs and filters but no ACL-category functions;
 * redis/config.c checks each pointer before use.
 */
typedef struct RedisModuleCommandFilter RedisModuleCommandFilter;
typedef struct RedisModuleCommandFilterCtx RedisModuleCommandFilterCtx;

/* Config flags (RegisterNumericConfig / RegisterStringConfig). */
#define REDISMODULE_CONFIG_DEFAULT 0
/* The name is used as given, without "<module name>." in front (Redis 8.0 and later; older
 * servers refuse the unknown flag). */
#define REDISMODULE_CONFIG_UNPREFIXED (1u << 9)

typedef long long (*RedisModuleConfigGetNumericFunc)(const char *name, void *privdata);
typedef int (*RedisModuleConfigSetNumericFunc)(const char *name, long long val, void *privdata,
                                               RedisModuleString **err);
typedef RedisModuleString *(*RedisModuleConfigGetStringFunc)(const char *name, void *privdata);
typedef int (*RedisModuleConfigSetStringFunc)(const char *name, RedisModuleString *val,
                                              void *privdata, RedisModuleString **err);
typedef int (*RedisModuleConfigApplyFunc)(RedisModuleCtx *ctx, void *privdata,
                                          RedisModuleString **err);
typedef void (*RedisModuleCommandFilterFunc)(RedisModuleCommandFilterCtx *filter);

#define AMQ_RM_API_NEWER(X)                                                                    \
    X(int, RegisterNumericConfig,                                                              \
      (RedisModuleCtx * ctx, const char *name, long long default_val, unsigned int flags,      \
       long long min, long long max, RedisModuleConfigGetNumericFunc getfn,                    \
       RedisModuleConfigSetNumericFunc setfn, RedisModuleConfigApplyFunc applyfn,              \
       void *privdata),                                                                        \
      0)                                                                                       \
    X(int, RegisterStringConfig,                                                               \
      (RedisModuleCtx * ctx, const char *name, const char *default_val, unsigned int flags,    \
       RedisModuleConfigGetStringFunc getfn, RedisModuleConfigSetStringFunc setfn,             \
       RedisModuleConfigApplyFunc applyfn, void *privdata),                                    \
      0)                                                                                       \
    X(int, LoadConfigs, (RedisModuleCtx * ctx), 0)                                             \
    X(RedisModuleString *, CreateString, (RedisModuleCtx * ctx, const char *ptr, size_t len), \
      0)                                                                                       \
    X(void, FreeString, (RedisModuleCtx * ctx, RedisModuleString * str), 0)                    \
    X(int, AddACLCategory, (RedisModuleCtx * ctx, const char *name), 0)                        \
    X(int, SetCommandACLCategories, (RedisModuleCommand * command, const char *aclflags), 0)   \
    X(RedisModuleCommandFilter *, RegisterCommandFilter,                                       \
      (RedisModuleCtx * ctx, RedisModuleCommandFilterFunc cb, int flags), 0)                   \
    X(int, CommandFilterArgsCount, (RedisModuleCommandFilterCtx * fctx), 0)                    \
    X(RedisModuleString *, CommandFilterArgGet, (RedisModuleCommandFilterCtx * fctx, int pos), \
      0)                                                                                       \
    X(int, CommandFilterArgReplace,                                                            \
      (RedisModuleCommandFilterCtx * fctx, int pos, RedisModuleString *arg), 0)                \
    AMQ_RM_API_CALLS(X)

/* ---- calling server commands, deleting keys (redis/amqtype.c: AMQ.BUILD reads a SET, ...) -- */
typedef struct RedisModuleCallReply RedisModuleCallReply;

/* KeyType results beyond EMPTY and MODULE. */
#define REDISMODULE_KEYTYPE_LIST 2
#define REDISMODULE_KEYTYPE_HASH 3
#define REDISMODULE_KEYTYPE_SET 4
#define REDISMODULE_KEYTYPE_ZSET 5

/* CallReplyType results. */
#define REDISMODULE_REPLY_STRING 0
#define REDISMODULE_REPLY_ERROR 1
#define REDISMODULE_REPLY_INTEGER 2
#define REDISMODULE_REPLY_ARRAY 3

#define AMQ_RM_API_CALLS(X)                                                                    \
    X(RedisModuleCallReply *, Call,                                                            \
      (RedisModuleCtx * ctx, const char *cmdname, const char *fmt, ...), 0)                    \
    X(int, CallReplyType, (RedisModuleCallReply * reply), 0)                                   \
    X(size_t, CallReplyLength, (RedisModuleCallReply * reply), 0)                              \
    X(long long, CallReplyInteger, (RedisModuleCallReply * reply), 0)                          \
    X(RedisModuleCallReply *, CallReplyArrayElement, (RedisModuleCallReply * reply, size_t i), \
      0)                                                                                       \
    X(const char *, CallReplyStringPtr, (RedisModuleCallReply * reply, size_t *len), 0)        \
    X(void, FreeCallReply, (RedisModuleCallReply * reply), 0)                                  \
    X(int, DeleteKey, (RedisModuleKey * key), 0)

#define AMQ_RM_DECLARE_(ret, name, params, required) extern ret(*RedisModule_##name) params;
AMQ_RM_API(AMQ_RM_DECLARE_)
AMQ_RM_API_NEWER(AMQ_RM_DECLARE_)
#undef AMQ_RM_DECLARE_

/*
 * Fills the function pointers from ctx (the context given to OnLoad).
 * REDISMODULE_ERR when a required function is missing (*missing names it)
 * or the server does not give a lookup function.
 */
int rm_init(RedisModuleCtx *ctx, const char **missing);

#endif /* AMQ_REDIS_RM_H */
