/*
 * fuzz_rdb_amq.c - RDB loading of the module's AMQ.* values (amqfilter):
 * redis/amqtype.c's amqt_rdb_load on arbitrary bytes, through the stand-in
 * RDB reader of redis_io.h; see rdb.h for the properties.  The value's
 * chunks are an amq file's bytes, so this also runs the library's decoder
 * (amq_filter_peek, amq_filter_deserialize) on what the chunks say.
 */
#include "redis_io.h"

#include "../redis/rm.c"
#include "../redis/util.c"
#include "../redis/amqtype.c"

/* A loading value (no filter yet) answers nothing. */
static int fz_amq_contains(const void *value, const void *key, size_t len)
{
    const amqt_value *v = value;
    return v->f != NULL && amq_filter_contains(v->f, key, len);
}

#define FZ_RDB_LOAD amqt_rdb_load
#define FZ_RDB_SAVE amqt_rdb_save
#define FZ_RDB_FREE amqt_free
#define FZ_RDB_COPY amqt_copy
#define FZ_RDB_USAGE amqt_mem_usage
#define FZ_RDB_DIGEST amqt_digest
#define FZ_RDB_CONTAINS(v, k, n) fz_amq_contains(v, k, n)
#include "rdb.h"
