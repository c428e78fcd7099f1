/*
 * config.c - what newer servers offer beyond Redis 7.0's core: module configs, ACL categories,
 * the RedisBloom-style version.  Every server function used here is optional (looked up at load,
 * NULL when the server lacks it), and each feature is skipped cleanly without it.
 *
 * Module configs (RedisBloom's names and meanings):
 *   bf-error-rate bf-initial-size bf-expansion-factor
 *   cf-bucket-size cf-initial-size cf-max-iterations cf-expansion-factor cf-max-expansions
 * Redis 8 registers them unprefixed (REDISMODULE_CONFIG_UNPREFIXED).  Servers without that flag
 * (Redis 7.x, Valkey 8) only have prefixed names, "bf.bf-error-rate"; there a command filter
 * rewrites the unprefixed names in CONFIG GET / CONFIG SET to the prefixed ones, so
 * `CONFIG SET bf-error-rate 0.001` works the same everywhere (CONFIG GET answers with the
 * prefixed name there).  Their defaults are the module arguments' values, so ERROR_RATE etc.
 * keep working; a value from the config file or MODULE LOADEX CONFIG wins over both.
 */
#include "config.h"
#include "amqtype.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- numeric configs ------------------------------------------------------------------------ */

typedef enum {
    CFG_BF_INITIAL_SIZE,
    CFG_BF_EXPANSION,
    CFG_CF_BUCKET_SIZE,
    CFG_CF_INITIAL_SIZE,
    CFG_CF_MAX_ITERATIONS,
    CFG_CF_EXPANSION,
    CFG_CF_MAX_EXPANSIONS,
    CFG_COUNT
} cfg_id;

typedef struct cfg_numeric {
    const char *name;
    long long min, max;
} cfg_numeric;

/* Registration order matters for the bucket-size / initial-size check when the server applies
 * config-file values: the bucket size is set first. */
static const cfg_numeric numeric_cfgs[CFG_COUNT] = {
    [CFG_BF_INITIAL_SIZE] = {"bf-initial-size", 1, (long long)AMQ_RM_MAX_CAPACITY},
    [CFG_BF_EXPANSION] = {"bf-expansion-factor", 0, (long long)AMQ_RM_MAX_EXPANSION},
    [CFG_CF_BUCKET_SIZE] = {"cf-bucket-size", 1, 255},
    [CFG_CF_INITIAL_SIZE] = {"cf-initial-size", 2, (long long)AMQ_RM_MAX_CAPACITY},
    [CFG_CF_MAX_ITERATIONS] = {"cf-max-iterations", 1, 65535},
    [CFG_CF_EXPANSION] = {"cf-expansion-factor", 0, (long long)AMQ_RM_MAX_EXPANSION},
    [CFG_CF_MAX_EXPANSIONS] = {"cf-max-expansions", 1, 65535},
};

/* privdata carries the cfg_id (as an address into this array, so no int/pointer casts). */
static const cfg_id cfg_ids[CFG_COUNT] = {
    CFG_BF_INITIAL_SIZE, CFG_BF_EXPANSION,  CFG_CF_BUCKET_SIZE,    CFG_CF_INITIAL_SIZE,
    CFG_CF_MAX_ITERATIONS, CFG_CF_EXPANSION, CFG_CF_MAX_EXPANSIONS,
};

static long long cfg_get(cfg_id id)
{
    switch (id) {
    case CFG_BF_INITIAL_SIZE: return (long long)amq_rm_cfg.bf_initial_size;
    case CFG_BF_EXPANSION: return amq_rm_cfg.bf_expansion;
    case CFG_CF_BUCKET_SIZE: return amq_rm_cfg.cf_bucket_size;
    case CFG_CF_INITIAL_SIZE: return (long long)amq_rm_cfg.cf_initial_size;
    case CFG_CF_MAX_ITERATIONS: return amq_rm_cfg.cf_max_iterations;
    case CFG_CF_EXPANSION: return amq_rm_cfg.cf_expansion;
    case CFG_CF_MAX_EXPANSIONS: return amq_rm_cfg.cf_max_expansions;
    case CFG_COUNT: break;
    }
    return 0;
}

static void set_err(RedisModuleString **err, const char *msg)
{
    if (err != NULL && RedisModule_CreateString != NULL)
        *err = RedisModule_CreateString(NULL, msg, strlen(msg));
}

static long long numeric_get(const char *name, void *privdata)
{
    (void)name;
    return cfg_get(*(const cfg_id *)privdata);
}

static int numeric_set(const char *name, long long v, void *privdata, RedisModuleString **err)
{
    cfg_id id = *(const cfg_id *)privdata;

    (void)name;
    /* The server checked [min, max]; only the cross-field rule is left. */
    if (id == CFG_CF_INITIAL_SIZE && v < 2 * (long long)amq_rm_cfg.cf_bucket_size) {
        set_err(err, "cf-initial-size must be at least 2 * cf-bucket-size");
        return REDISMODULE_ERR;
    }
    if (id == CFG_CF_BUCKET_SIZE && (long long)amq_rm_cfg.cf_initial_size < 2 * v) {
        set_err(err, "cf-bucket-size must be at most cf-initial-size / 2");
        return REDISMODULE_ERR;
    }
    switch (id) {
    case CFG_BF_INITIAL_SIZE: amq_rm_cfg.bf_initial_size = (uint64_t)v; break;
    case CFG_BF_EXPANSION: amq_rm_cfg.bf_expansion = (uint32_t)v; break;
    case CFG_CF_BUCKET_SIZE: amq_rm_cfg.cf_bucket_size = (uint32_t)v; break;
    case CFG_CF_INITIAL_SIZE: amq_rm_cfg.cf_initial_size = (uint64_t)v; break;
    case CFG_CF_MAX_ITERATIONS: amq_rm_cfg.cf_max_iterations = (uint32_t)v; break;
    case CFG_CF_EXPANSION: amq_rm_cfg.cf_expansion = (uint32_t)v; break;
    case CFG_CF_MAX_EXPANSIONS: amq_rm_cfg.cf_max_expansions = (uint32_t)v; break;
    case CFG_COUNT: break;
    }
    return REDISMODULE_OK;
}

/* ---- bf-error-rate: a string config (numeric configs are integers) ----------------------------- */

/* The text CONFIG GET shows: the value as last set (the default is written shortest-exact). */
static RedisModuleString *error_rate_text;

static void format_double(double d, char *buf, size_t cap)
{
    int prec;

    /* The shortest %g text that reads back as the same double. */
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

static RedisModuleString *error_rate_get(const char *name, void *privdata)
{
    (void)name;
    (void)privdata;
    return error_rate_text;
}

/* 1 and *out when s is a finite number in (0, 1), with nothing else around it. */
static int parse_error_rate(const char *s, size_t len, double *out)
{
    char buf[64];
    char *end;
    double d;

    if (len == 0 || len >= sizeof buf || isspace((unsigned char)s[0]))
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    d = strtod(buf, &end);
    if (*end != '\0' || !(d > 0.0 && d < 1.0))
        return 0;
    *out = d;
    return 1;
}

static int error_rate_set(const char *name, RedisModuleString *val, void *privdata,
                          RedisModuleString **err)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(val, &len);
    double d;
    RedisModuleString *copy;

    (void)name;
    (void)privdata;
    if (!parse_error_rate(s, len, &d)) {
        set_err(err, "bf-error-rate must be a number in the range (0, 1)");
        return REDISMODULE_ERR;
    }
    copy = RedisModule_CreateString(NULL, s, len);
    if (error_rate_text != NULL)
        RedisModule_FreeString(NULL, error_rate_text);
    error_rate_text = copy;
    /* As the ERROR_RATE argument: a default above 0.25 is used as 0.25 (RedisBloom's cap). */
    amq_rm_cfg.bf_error_rate = d > 0.25 ? 0.25 : d;
    return REDISMODULE_OK;
}

/* ---- registration ------------------------------------------------------------------------------ */

static int cfg_prefixed; /* 1: the server has no unprefixed module configs */

/* ---- the AMQ.* type's configs: amq-max-key-bytes, amq-build-max-items -------------------------- */

static long long amqt_cfg_get(const char *name, void *privdata)
{
    (void)name;
    return (long long)*(uint64_t *)privdata;
}

static int amqt_cfg_set(const char *name, long long v, void *privdata, RedisModuleString **err)
{
    (void)name;
    (void)err;
    *(uint64_t *)privdata = (uint64_t)v; /* the server checked [min, max] */
    return REDISMODULE_OK;
}

static int register_amqt(RedisModuleCtx *ctx, unsigned int flags)
{
    if (RedisModule_RegisterNumericConfig(ctx, "amq-max-key-bytes",
                                          (long long)AMQT_DEFAULT_MAX_KEY_BYTES, flags, 1,
                                          (long long)1 << 50, amqt_cfg_get, amqt_cfg_set, NULL,
                                          &amqt_max_key_bytes) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return RedisModule_RegisterNumericConfig(ctx, "amq-build-max-items",
                                             (long long)AMQT_DEFAULT_BUILD_MAX_ITEMS, flags, 1,
                                             (long long)1 << 40, amqt_cfg_get, amqt_cfg_set,
                                             NULL, &amqt_build_max_items);
}

static int register_all(RedisModuleCtx *ctx, unsigned int flags)
{
    char def[64];
    int i;

    format_double(amq_rm_cfg.bf_error_rate, def, sizeof def);
    /* CONFIG GET may ask before the server applies the default through error_rate_set. */
    if (error_rate_text == NULL)
        error_rate_text = RedisModule_CreateString(NULL, def, strlen(def));
    if (RedisModule_RegisterStringConfig(ctx, "bf-error-rate", def, flags, error_rate_get,
                                         error_rate_set, NULL, NULL) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    for (i = 0; i < CFG_COUNT; i++) {
        const cfg_numeric *c = &numeric_cfgs[i];
        if (RedisModule_RegisterNumericConfig(ctx, c->name, cfg_get((cfg_id)i), flags, c->min,
                                              c->max, numeric_get, numeric_set, NULL,
                                              (void *)&cfg_ids[i]) != REDISMODULE_OK)
            return REDISMODULE_ERR;
    }
    return register_amqt(ctx, flags);
}

/* 1 when a CONFIG argument names one of our configs unprefixed (a pattern too: "bf-*"). */
static int ours_unprefixed(RedisModuleString *arg)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    return (len >= 3 && (strncasecmp(s, "bf-", 3) == 0 || strncasecmp(s, "cf-", 3) == 0)) ||
           (len >= 4 && strncasecmp(s, "amq-", 4) == 0);
}

static void prefix_arg(RedisModuleCommandFilterCtx *f, int pos)
{
    char buf[128];
    size_t len;
    const char *s = RedisModule_StringPtrLen(RedisModule_CommandFilterArgGet(f, pos), &len);
    RedisModuleString *n;

    if (len > sizeof buf - 4)
        return;
    memcpy(buf, AMQ_RM_MODULE_NAME ".", 3);
    memcpy(buf + 3, s, len);
    n = RedisModule_CreateString(NULL, buf, len + 3);
    /* The server owns n from here on. */
    if (n != NULL && RedisModule_CommandFilterArgReplace(f, pos, n) != REDISMODULE_OK)
        RedisModule_FreeString(NULL, n);
}

/* CONFIG GET name... / CONFIG SET name value ...: our unprefixed names become prefixed. */
static void config_filter(RedisModuleCommandFilterCtx *f)
{
    int argc = RedisModule_CommandFilterArgsCount(f);
    size_t len;
    const char *cmd, *sub;
    int i, step;

    if (argc < 3)
        return;
    cmd = RedisModule_StringPtrLen(RedisModule_CommandFilterArgGet(f, 0), &len);
    if (len != 6 || strncasecmp(cmd, "config", 6) != 0)
        return;
    sub = RedisModule_StringPtrLen(RedisModule_CommandFilterArgGet(f, 1), &len);
    if (len == 3 && strncasecmp(sub, "get", 3) == 0)
        step = 1;
    else if (len == 3 && strncasecmp(sub, "set", 3) == 0)
        step = 2;
    else
        return;
    for (i = 2; i < argc; i += step)
        if (ours_unprefixed(RedisModule_CommandFilterArgGet(f, i)))
            prefix_arg(f, i);
}

static int configs_register(RedisModuleCtx *ctx)
{
    if (RedisModule_RegisterNumericConfig == NULL || RedisModule_RegisterStringConfig == NULL ||
        RedisModule_LoadConfigs == NULL || RedisModule_CreateString == NULL ||
        RedisModule_FreeString == NULL) {
        RedisModule_Log(ctx, "notice", "amq: this server has no module configs");
        return REDISMODULE_OK;
    }
    if (register_all(ctx, REDISMODULE_CONFIG_DEFAULT | REDISMODULE_CONFIG_UNPREFIXED) !=
        REDISMODULE_OK) {
        /* The first registration failed on the unknown flag (nothing was registered), or a
         * name is taken by another module: use the server's prefixed names. */
        cfg_prefixed = 1;
        if (register_all(ctx, REDISMODULE_CONFIG_DEFAULT) != REDISMODULE_OK) {
            RedisModule_Log(ctx, "warning", "amq: could not register the module configs");
            return REDISMODULE_ERR;
        }
    }
    if (RedisModule_LoadConfigs(ctx) != REDISMODULE_OK) {
        RedisModule_Log(ctx, "warning", "amq: bad module config value (see the log above)");
        return REDISMODULE_ERR;
    }
    if (amq_rm_cfg.cf_initial_size < 2u * amq_rm_cfg.cf_bucket_size) {
        RedisModule_Log(ctx, "warning", "amq: cf-initial-size must be at least 2 * cf-bucket-size");
        return REDISMODULE_ERR;
    }
    if (cfg_prefixed && RedisModule_RegisterCommandFilter != NULL &&
        RedisModule_CommandFilterArgsCount != NULL && RedisModule_CommandFilterArgGet != NULL &&
        RedisModule_CommandFilterArgReplace != NULL) {
        if (RedisModule_RegisterCommandFilter(ctx, config_filter, 0) == NULL)
            RedisModule_Log(ctx, "warning", "amq: no CONFIG name filter; use bf.bf-* names");
    }
    return REDISMODULE_OK;
}

/* ---- ACL categories ------------------------------------------------------------------------------ */

/* BF.* and CF.*'s ACL categories, as RedisBloom declares them (recorded from RedisBloom on Redis 8
 * and Valkey 8: its family plus @read or @write, and @fast for a few), except CF.COMPACT: @write,
 * since it moves fingerprints (docs/redis.md lists this deviation).  AMQ.* and AF.* take @amq
 * and what their flags say where they are registered (rm_family's acl). */
typedef struct acl_entry {
    const char *name;
    const char *categories;
} acl_entry;

static const acl_entry acl_table[] = {
    {"bf.reserve", "write fast bloom"}, {"bf.add", "write bloom"},
    {"bf.madd", "write bloom"},         {"bf.insert", "write bloom"},
    {"bf.exists", "read bloom"},        {"bf.mexists", "read bloom"},
    {"bf.card", "read fast bloom"},     {"bf.info", "read fast bloom"},
    {"bf.debug", "read bloom"},         {"bf.scandump", "read bloom"},
    {"bf.loadchunk", "write bloom"},    {"cf.reserve", "write fast cuckoo"},
    {"cf.add", "write cuckoo"},         {"cf.addnx", "write cuckoo"},
    {"cf.insert", "write cuckoo"},      {"cf.insertnx", "write cuckoo"},
    {"cf.exists", "read cuckoo"},       {"cf.mexists", "read cuckoo"},
    {"cf.count", "read cuckoo"},        {"cf.del", "write cuckoo"},
    {"cf.compact", "write cuckoo"},     {"cf.info", "read fast cuckoo"},
    {"cf.debug", "read cuckoo"},        {"cf.scandump", "read cuckoo"},
    {"cf.loadchunk", "write cuckoo"},
};

static int acl_categories_add(RedisModuleCtx *ctx)
{
    static const char *const cats[] = {"bloom", "cuckoo", "amq"};
    size_t i;

    if (RedisModule_AddACLCategory == NULL || RedisModule_GetCommand == NULL ||
        RedisModule_SetCommandACLCategories == NULL)
        return REDISMODULE_OK; /* Redis 7.0: no module ACL categories */
    for (i = 0; i < sizeof cats / sizeof cats[0]; i++)
        /* Refused when the server has it already: a load that failed after adding it (a bad
         * MODULE LOADEX config) unloads the module but not its categories.  A category truly
         * missing fails the commands' SetCommandACLCategories, which stops the load. */
        if (RedisModule_AddACLCategory(ctx, cats[i]) != REDISMODULE_OK)
            RedisModule_Log(ctx, "notice", "amq: ACL category %s exists already", cats[i]);
    return REDISMODULE_OK;
}

/* ---- the hooks module.c calls ------------------------------------------------------------------- */

int amq_rm_servers_before_commands(RedisModuleCtx *ctx)
{
    if (configs_register(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return acl_categories_add(ctx);
}

int amq_rm_servers_after_commands(RedisModuleCtx *ctx)
{
    size_t i;

    if (RedisModule_AddACLCategory == NULL || RedisModule_GetCommand == NULL ||
        RedisModule_SetCommandACLCategories == NULL)
        return REDISMODULE_OK;
    for (i = 0; i < sizeof acl_table / sizeof acl_table[0]; i++) {
        /* Command lookup ignores case, whatever case the family registered. */
        RedisModuleCommand *cmd = RedisModule_GetCommand(ctx, acl_table[i].name);
        if (cmd == NULL)
            continue;
        if (RedisModule_SetCommandACLCategories(cmd, acl_table[i].categories) != REDISMODULE_OK) {
            RedisModule_Log(ctx, "warning", "amq: could not set the ACL categories of %s",
                            acl_table[i].name);
            return REDISMODULE_ERR;
        }
    }
    return REDISMODULE_OK;
}

const char *amq_rm_servers_summary(void)
{
    if (RedisModule_RegisterNumericConfig == NULL)
        return "no module configs";
    return cfg_prefixed ? "configs bf.bf-*/bf.cf-* (CONFIG names rewritten)"
                        : "configs bf-*/cf-* unprefixed";
}
