/*
 * rm.c - the Redis module API function pointers, filled at load time
 * through the lookup function the server puts first in the context.
 */
#include "rm.h"

#include <string.h>

#define AMQ_RM_DEFINE_(ret, name, params, required) ret(*RedisModule_##name) params = NULL;
AMQ_RM_API(AMQ_RM_DEFINE_)
AMQ_RM_API_NEWER(AMQ_RM_DEFINE_)
#undef AMQ_RM_DEFINE_

typedef int (*rm_getapi_fn)(const char *name, void *out);

int rm_init(RedisModuleCtx *ctx, const char **missing)
{
    rm_getapi_fn getapi;
    void *first;

    *missing = NULL;
    if (ctx == NULL)
        return REDISMODULE_ERR;
    /* The context is opaque except for its first field, the lookup
     * function; memcpy keeps the function/object pointer conversion
     * well-defined. */
    memcpy(&first, ctx, sizeof first);
    if (first == NULL)
        return REDISMODULE_ERR;
    memcpy(&getapi, &first, sizeof getapi);

#define AMQ_RM_FETCH_(ret, name, params, required)                                  \
    if (getapi("RedisModule_" #name, (void *)&RedisModule_##name) != REDISMODULE_OK) { \
        RedisModule_##name = NULL;                                                   \
        if (required) {                                                              \
            *missing = "RedisModule_" #name;                                         \
            return REDISMODULE_ERR;                                                  \
        }                                                                            \
    }
    AMQ_RM_API(AMQ_RM_FETCH_)
    AMQ_RM_API_NEWER(AMQ_RM_FETCH_)
#undef AMQ_RM_FETCH_
    return REDISMODULE_OK;
}
