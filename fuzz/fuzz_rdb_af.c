/*
 * fuzz_rdb_af.c - RDB loading of the module's aging values (amq-aging,
 * encoding 4): redis/af.c's af_rdb_load on arbitrary bytes, through the
 * stand-in RDB reader of redis_io.h; see rdb.h for the properties.
 */
#include "redis_io.h"

#include "../redis/rm.c"
#include "../redis/util.c"
#include "../redis/af.c"

#define FZ_RDB_LOAD af_rdb_load
#define FZ_RDB_SAVE af_rdb_save
#define FZ_RDB_FREE af_free
#define FZ_RDB_COPY af_copy
#define FZ_RDB_USAGE af_mem_usage
#define FZ_RDB_DIGEST af_digest
#define FZ_RDB_CONTAINS(v, k, n) amq_filter_contains(v, k, n)
#include "rdb.h"
