/*
 * fuzz_rdb_bf.c - RDB loading of the module's BF values (MBbloom--, RDB
 * encodings 0..4): redis/bf.c's bf_rdb_load on arbitrary bytes, through the
 * stand-in RDB reader of redis_io.h; see rdb.h for the properties.
 */
#include "redis_io.h"

#include "../redis/rm.c"
#include "../redis/util.c"
#include "../redis/bf.c"
#include "../redis/defrag.c"

#define FZ_RDB_LOAD bf_rdb_load
#define FZ_RDB_SAVE bf_rdb_save
#define FZ_RDB_FREE bf_free
#define FZ_RDB_COPY bf_copy
#define FZ_RDB_USAGE bf_mem_usage
#define FZ_RDB_DIGEST bf_digest
#define FZ_RDB_CONTAINS(v, k, n) amq_sbloom_contains(v, k, n)
#include "rdb.h"
