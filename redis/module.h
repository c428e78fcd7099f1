/*
 * module.h - what the files of the Redis module share: the configuration
 * taken at load time, the allocator that routes library memory to
 * RedisModule_Alloc, reply and argument helpers, and the entry points of
 * the two families (bf.c, cf.c).
 */
#ifndef AMQ_REDIS_MODULE_H
#define AMQ_REDIS_MODULE_H

#include <stddef.h>
#include <stdint.h>

#define AMQ_ADVANCED_API 1 /* the BF/CF dump internals and raw arrays */
#include "amq.h"
#include "rm.h"

/* The module registers under RedisBloom's name, so that the two cannot be
 * loaded together (their data types would clash anyway) and clients that
 * look for "bf" in MODULE LIST find it.  Its version is in RedisBloom's
 * MMmmpp scheme and names the RedisBloom release line whose BF/CF commands,
 * configs and formats amq.so answers like (8.0.0: the one Redis 8.0 ships),
 * since clients compare it with RedisBloom's versions; amq's own version is
 * in the server log at load. */
#define AMQ_RM_MODULE_NAME "bf"
#define AMQ_RM_MODULE_VERSION 80000
#define AMQ_RM_ENCVER 4             /* encoding version of both data types */

/* Capacity limit of both families (RedisBloom's). */
#define AMQ_RM_MAX_CAPACITY (UINT64_C(1) << 30)
/* Expansion limit of both families. */
#define AMQ_RM_MAX_EXPANSION 32768u
/* Largest chunk SCANDUMP and the AOF rewrite emit. */
#define AMQ_RM_MAX_CHUNK ((size_t)16 << 20)

/* Defaults for keys created without options; set by module arguments. */
typedef struct amq_rm_config {
    double bf_error_rate;       /* ERROR_RATE, default 0.01 (capped at 0.25) */
    uint64_t bf_initial_size;   /* INITIAL_SIZE, default 100 */
    uint32_t bf_expansion;      /* EXPANSION, default 2 (0: non-scaling) */
    uint64_t cf_initial_size;   /* CF_INITIAL_SIZE, default 1024 */
    uint32_t cf_bucket_size;    /* CF_BUCKET_SIZE, default 2 */
    uint32_t cf_max_iterations; /* CF_MAX_ITERATIONS, default 20 */
    uint32_t cf_expansion;      /* CF_EXPANSION, default 1 */
    uint32_t cf_max_expansions; /* CF_MAX_EXPANSIONS: link limit, default 32 */
} amq_rm_config;

extern amq_rm_config amq_rm_cfg;

/* Library allocations of every filter go through RedisModule_TryAlloc (or
 * RedisModule_Alloc on servers without it) and RedisModule_Free, so Redis
 * counts them in used_memory and maxmemory applies. */
extern const amq_allocator amq_rm_allocator;

/* ---- replies ---------------------------------------------------------------- */
int rm_resp3(RedisModuleCtx *ctx);
/* Boolean in RESP3, integer 1/0 in RESP2. */
int rm_reply_bool(RedisModuleCtx *ctx, int b);
/* A map of n pairs in RESP3, a flat array of 2n elements in RESP2. */
int rm_reply_map(RedisModuleCtx *ctx, long pairs);
int rm_reply_ok(RedisModuleCtx *ctx);
int rm_reply_cstr(RedisModuleCtx *ctx, const char *s);

/* ---- arguments ------------------------------------------------------------------ */
/* Case-insensitive comparison of an argument with a keyword. */
int rm_arg_is(RedisModuleString *arg, const char *keyword);
/* Index of the first of argv[0..argc) equal to keyword (any case), -1 if
 * none. */
int rm_arg_index(RedisModuleString **argv, int argc, const char *keyword);
/* An integer as the server reads one (RedisModule_StringToLongLong). */
int rm_arg_ll(RedisModuleString *arg, long long *out);
/* A double as the server reads one (RedisModule_StringToDouble): "inf" is
 * one, "nan" is not. */
int rm_arg_double(RedisModuleString *arg, double *out);

/* ---- keys -------------------------------------------------------------------------- */
enum { RM_KEY_EMPTY = 0, RM_KEY_OK = 1, RM_KEY_WRONGTYPE = 2 };
/*
 * Opens a key (mode REDISMODULE_READ or READ|WRITE) and classifies it:
 * RM_KEY_EMPTY (*value NULL), RM_KEY_OK (*value the filter), or
 * RM_KEY_WRONGTYPE.  The key stays open in *key (close it with CloseKey).
 */
int rm_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleType *type,
            RedisModuleKey **key, void **value);

/* ---- memory -------------------------------------------------------------------------- */
/*
 * The memory guard: the one check every filter allocation passes (the
 * module's allocator calls it with the exact size the library asks for).
 *
 * While a client runs a deny-oom command (armed by rm_guard_begin, which
 * rm_create_command's dispatcher calls), an allocation is granted when
 * used_memory + what this command was already granted + bytes stays within
 * maxmemory (with an evicting maxmemory-policy: within maxmemory itself, as
 * the server evicts to make room) and within the machine's memory.  A
 * refusal makes the library return AMQ_ENOMEM with the filter unchanged.
 *
 * Outside a guarded command - loading an RDB or replaying the AOF
 * (REDISMODULE_CTX_FLAGS_LOADING), commands from the primary
 * (REDISMODULE_CTX_FLAGS_REPLICATED), RESTORE's value loading, COPY,
 * CF.DEL's compaction - maxmemory never refuses anything, as in Redis;
 * only a block the machine cannot hold at all is refused
 * (rm_memory_plausible), so a hostile size fails instead of the server
 * being killed by the kernel.
 *
 * New commands get the guard by registering through rm_create_command (or
 * rm_register_family) with "deny-oom" in their flags; docs/reliability.md
 * states the rules.
 */
void rm_guard_begin(RedisModuleCtx *ctx);
void rm_guard_end(void);
/* 1 while a client command is guarded (not loading, not replicated) and not paused. */
int rm_guard_active(void);
/*
 * An add whose filter does not undo a step it cannot get memory for (the
 * pocket kind puts off a growth and keeps the key): the guard is asked once
 * before it (rm_memory_allows), then paused while it runs, so that it takes
 * what a replica or the AOF replaying it takes (only a block the machine
 * cannot hold is refused), the bytes still counted as granted for the next
 * check.  Refused on the primary and not on the replica, such a step would
 * part their bytes and, at the rate's limit, their refusals.
 */
void rm_guard_pause(void);
void rm_guard_resume(void);
/* 1 when `bytes` more may be allocated now (and counts them as granted). */
int rm_guard_grant(uint64_t bytes);
/*
 * The same rule as a pre-check that takes nothing (for an estimate made
 * before allocating, as AF.RESERVE's): in a guarded command, 1 when
 * `bytes` more would be granted now; elsewhere rm_memory_plausible.
 */
int rm_memory_allows(RedisModuleCtx *ctx, uint64_t bytes);
/*
 * 1 when `bytes` more fit in the machine's memory (used_memory + bytes <=
 * total_system_memory); maxmemory is not considered.  Blocks under 64 MiB
 * always pass.  ctx may be NULL.
 */
int rm_memory_plausible(RedisModuleCtx *ctx, uint64_t bytes);

/* ---- replication of multi-item commands ------------------------------------- */
/*
 * A command adding items argv[first..argc) whose items can fail one by one
 * (a growth refused for memory) replicates only the items that did not
 * fail: the replica never refuses, and must hold what the primary holds.
 * rm_items_note(r, argv, argc, i, ok) for each item processed, in order;
 * then rm_items_replicate: verbatim when no item failed, else the same
 * command with the failed items left out (nothing when !changed).
 */
typedef struct rm_items {
    RedisModuleString **v; /* after a failure: the arguments to replicate */
    size_t n;
} rm_items;

void rm_items_note(rm_items *r, RedisModuleString **argv, int argc, int i, int ok);
void rm_items_replicate(RedisModuleCtx *ctx, rm_items *r, RedisModuleString **argv, int changed);

/* ---- families ---------------------------------------------------------------------------- */

/*
 * One command of a family, registered as RedisBloom registers it: its
 * lower-case name (COMMAND, INFO commandstats and error texts show it), its
 * flags, and what COMMAND INFO / COMMAND DOCS report (arity, which the
 * server checks before calling the handler; the key's access flags; the
 * documentation).  The key is always the first argument.
 */
typedef struct rm_command {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
    int arity;
    uint64_t key_flags; /* REDISMODULE_CMD_KEY_* of the key spec */
    const char *summary, *since, *complexity, *tips;
    RedisModuleCommandArg *args; /* ends with a zeroed entry; NULL: none */
} rm_command;

/* Argument descriptions for COMMAND DOCS. */
#define RM_ARG_KEY {.name = "key", .type = REDISMODULE_ARG_TYPE_KEY, .key_spec_index = 0}
#define RM_ARG(n, t, f) {.name = (n), .type = REDISMODULE_ARG_TYPE_##t, .key_spec_index = -1, .flags = (f)}
#define RM_ARG_TOKEN(n, tok, f)                                                              \
    {.name = (n), .type = REDISMODULE_ARG_TYPE_PURE_TOKEN, .key_spec_index = -1, .token = (tok), \
     .flags = (f)}
#define RM_ARG_BLOCK(n, tok, f, sub)                                                      \
    {.name = (n), .type = REDISMODULE_ARG_TYPE_BLOCK, .key_spec_index = -1, .token = (tok), \
     .flags = (f), .subargs = (sub)}
#define RM_ARG_END {0}
#define RM_OPT REDISMODULE_CMD_ARG_OPTIONAL
#define RM_MULTI REDISMODULE_CMD_ARG_MULTIPLE

/*
 * Creates the data type `type_name` with the methods in tm (its version is
 * set here) and the n commands with their command information (on servers
 * that have RedisModule_SetCommandInfo); REDISMODULE_ERR if Redis refuses
 * any of it.
 */
/*
 * Registers one command (key at argument 1) running through the module's
 * dispatcher: deny-oom commands run with the memory guard armed.
 */
int rm_create_command(RedisModuleCtx *ctx, const char *name, RedisModuleCmdFunc fn,
                      const char *flags);

/* One command of several keys (AMQ.MERGE, AMQ.BUILD): the legacy key range
 * (firstkey, lastkey, keystep) and the key specs (ending with a zeroed
 * entry) given; c->key_flags is not used; acl as rm_family's. */
int rm_register_command_keys(RedisModuleCtx *ctx, const rm_command *c,
                             RedisModuleCommandKeySpec *key_specs, int firstkey, int lastkey,
                             int keystep, const char *acl);

/* A data type and its commands: the type's name, where its handle goes, the
 * callbacks it has (NULL: none) and its command table. */
typedef struct rm_family {
    const char *type_name;
    RedisModuleType **type;
    RedisModuleTypeLoadFunc rdb_load;
    RedisModuleTypeSaveFunc rdb_save;
    RedisModuleTypeRewriteFunc aof_rewrite;
    RedisModuleTypeMemUsageFunc mem_usage;
    RedisModuleTypeDigestFunc digest;
    RedisModuleTypeFreeFunc free;
    RedisModuleTypeCopyFunc copy;
    RedisModuleTypeDefragFunc defrag;
    const rm_command *cmds;
    size_t ncmds;
    /* the family's own ACL category: each command gets it with @write / @read / @fast as its
     * flags say; NULL: config.c's table (RedisBloom's categories, recorded) */
    const char *acl;
} rm_family;

/* Creates f's data type and registers its commands with their info. */
int rm_register_family(RedisModuleCtx *ctx, const rm_family *f);

int bf_register(RedisModuleCtx *ctx);
int cf_register(RedisModuleCtx *ctx);
int af_register(RedisModuleCtx *ctx); /* af.c: aging filters, AF.* */
int amqt_register(RedisModuleCtx *ctx); /* amqtype.c: every amq kind, AMQ.* */

#endif /* AMQ_REDIS_MODULE_H */
