/*
 * config.h - the module's parts for newer servers (config.c, defrag.c): module configs, ACL
 * categories, defrag callbacks.  Each one is skipped when the server lacks its functions.
 */
#ifndef AMQ_REDIS_CONFIG_H
#define AMQ_REDIS_CONFIG_H

#include "module.h"

/* Registers the module configs (after the module arguments are parsed: their values are the
 * configs' defaults) and the ACL categories; REDISMODULE_ERR fails the load. */
int amq_rm_servers_before_commands(RedisModuleCtx *ctx);
/* Puts the registered BF.* / CF.* commands in the ACL categories bloom / cuckoo. */
int amq_rm_servers_after_commands(RedisModuleCtx *ctx);
/* One phrase for the load log line: which config names the server got. */
const char *amq_rm_servers_summary(void);

/* Defrag callbacks of the two data types (RedisModuleTypeMethods.defrag). */
int amq_rm_bf_defrag(RedisModuleDefragCtx *ctx, RedisModuleString *key, void **value);
int amq_rm_cf_defrag(RedisModuleDefragCtx *ctx, RedisModuleString *key, void **value);

#endif /* AMQ_REDIS_CONFIG_H */
