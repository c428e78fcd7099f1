/*
 * bf.c - the BF.* commands and the MBbloom-- data type (to come: waits for
 * the library's scalable Bloom filter).
 */
#include "module.h"

int bf_register(RedisModuleCtx *ctx)
{
    (void)ctx;
    return REDISMODULE_OK;
}
