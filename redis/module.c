/*
 * module.c - RedisModule_OnLoad: API lookup, module options, load-time
 * arguments (the defaults of keys created without options), then the two
 * families register their data types and commands.
 *
 * Load-time arguments come in NAME VALUE pairs, names case-insensitive:
 *   ERROR_RATE e          BF default error rate, (0, 1); above 0.25 -> 0.25
 *   INITIAL_SIZE n        BF default capacity, [1, 2^30]
 *   EXPANSION n           BF default expansion, [0, 32768] (0: non-scaling)
 *   CF_INITIAL_SIZE n     CF default capacity, [2 * CF_BUCKET_SIZE, 2^30]
 *   CF_BUCKET_SIZE n      CF default bucket size, [1, 255]
 *   CF_MAX_ITERATIONS n   CF default max iterations, [1, 65535]
 *   CF_EXPANSION n        CF default expansion, [0, 32768]
 *   CF_MAX_EXPANSIONS n   CF link limit of every filter, [1, 65535]
 * An unknown name or a bad value makes the load fail (logged).
 */
#include "module.h"
#include "config.h"

#include <string.h>
#include <strings.h>

amq_rm_config amq_rm_cfg = {
    .bf_error_rate = 0.01,
    .bf_initial_size = 100,
    .bf_expansion = 2,
    .cf_initial_size = 1024,
    .cf_bucket_size = 2,
    .cf_max_iterations = 20,
    .cf_expansion = 1,
    .cf_max_expansions = 32,
};

static int arg_u32(RedisModuleString *s, long long lo, long long hi, uint32_t *out)
{
    long long v;
    if (!rm_arg_ll(s, &v) || v < lo || v > hi)
        return 0;
    *out = (uint32_t)v;
    return 1;
}

static int arg_u64(RedisModuleString *s, long long lo, long long hi, uint64_t *out)
{
    long long v;
    if (!rm_arg_ll(s, &v) || v < lo || v > hi)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

static int parse_config(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    amq_rm_config c = amq_rm_cfg;
    const long long maxcap = (long long)AMQ_RM_MAX_CAPACITY;
    const long long maxexp = (long long)AMQ_RM_MAX_EXPANSION;
    int i;

    for (i = 0; i < argc; i += 2) {
        const char *name = RedisModule_StringPtrLen(argv[i], NULL);
        RedisModuleString *v;
        int ok;

        if (i + 1 >= argc) {
            RedisModule_Log(ctx, "warning", "amq: module argument %s has no value", name);
            return REDISMODULE_ERR;
        }
        v = argv[i + 1];
        if (rm_arg_is(argv[i], "ERROR_RATE")) {
            ok = rm_arg_double(v, &c.bf_error_rate) && c.bf_error_rate > 0.0 &&
                 c.bf_error_rate < 1.0;
            if (ok && c.bf_error_rate > 0.25)
                c.bf_error_rate = 0.25;
        } else if (rm_arg_is(argv[i], "INITIAL_SIZE")) {
            ok = arg_u64(v, 1, maxcap, &c.bf_initial_size);
        } else if (rm_arg_is(argv[i], "EXPANSION")) {
            ok = arg_u32(v, 0, maxexp, &c.bf_expansion);
        } else if (rm_arg_is(argv[i], "CF_INITIAL_SIZE")) {
            ok = arg_u64(v, 1, maxcap, &c.cf_initial_size);
        } else if (rm_arg_is(argv[i], "CF_BUCKET_SIZE")) {
            ok = arg_u32(v, 1, 255, &c.cf_bucket_size);
        } else if (rm_arg_is(argv[i], "CF_MAX_ITERATIONS")) {
            ok = arg_u32(v, 1, 65535, &c.cf_max_iterations);
        } else if (rm_arg_is(argv[i], "CF_EXPANSION")) {
            ok = arg_u32(v, 0, maxexp, &c.cf_expansion);
        } else if (rm_arg_is(argv[i], "CF_MAX_EXPANSIONS")) {
            ok = arg_u32(v, 1, 65535, &c.cf_max_expansions);
        } else {
            RedisModule_Log(ctx, "warning", "amq: unknown module argument %s", name);
            return REDISMODULE_ERR;
        }
        if (!ok) {
            RedisModule_Log(ctx, "warning", "amq: bad value %s for module argument %s",
                            RedisModule_StringPtrLen(v, NULL), name);
            return REDISMODULE_ERR;
        }
    }
    if (c.cf_initial_size < 2u * c.cf_bucket_size) {
        RedisModule_Log(ctx, "warning", "amq: CF_INITIAL_SIZE must be at least 2 * CF_BUCKET_SIZE");
        return REDISMODULE_ERR;
    }
    amq_rm_cfg = c;
    return REDISMODULE_OK;
}

__attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx *ctx,
                                                              RedisModuleString **argv,
                                                              int argc);

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    const char *missing = NULL;

    if (rm_init(ctx, &missing) != REDISMODULE_OK) {
        /* Without the API there is no way to log; the server reports the
         * failed load. */
        return REDISMODULE_ERR;
    }
    if (RedisModule_IsModuleNameBusy != NULL && RedisModule_IsModuleNameBusy(AMQ_RM_MODULE_NAME))
        return REDISMODULE_ERR;
    RedisModule_SetModuleAttribs(ctx, AMQ_RM_MODULE_NAME, AMQ_RM_MODULE_VERSION,
                                 REDISMODULE_APIVER_1);
    RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS);
    if (parse_config(ctx, argv, argc) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    if (amq_rm_servers_before_commands(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    if (bf_register(ctx) != REDISMODULE_OK || cf_register(ctx) != REDISMODULE_OK ||
        af_register(ctx) != REDISMODULE_OK || amqt_register(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    if (amq_rm_servers_after_commands(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    RedisModule_Log(ctx, "notice",
                    "amq %s: BF error_rate=%g initial_size=%llu expansion=%u; CF "
                    "initial_size=%llu bucket_size=%u max_iterations=%u expansion=%u "
                    "max_expansions=%u; %s%s",
                    amq_version_string(), amq_rm_cfg.bf_error_rate,
                    (unsigned long long)amq_rm_cfg.bf_initial_size, amq_rm_cfg.bf_expansion,
                    (unsigned long long)amq_rm_cfg.cf_initial_size, amq_rm_cfg.cf_bucket_size,
                    amq_rm_cfg.cf_max_iterations, amq_rm_cfg.cf_expansion,
                    amq_rm_cfg.cf_max_expansions, amq_rm_servers_summary(),
                    RedisModule_TryAlloc == NULL ? " (no RedisModule_TryAlloc)" : "");
    return REDISMODULE_OK;
}
