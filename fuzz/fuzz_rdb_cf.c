/*
 * fuzz_rdb_cf.c - RDB loading of the module's CF values (MBbloomCF, RDB
 * encodings 0..4): redis/cf.c's cf_rdb_load on arbitrary bytes, through the
 * stand-in RDB reader of redis_io.h; see rdb.h for the properties.
 */
#include "redis_io.h"

#include "../redis/rm.c"
#include "../redis/util.c"
#include "../redis/cf.c"
#include "../redis/defrag.c"

#define FZ_RDB_LOAD cf_rdb_load
#define FZ_RDB_SAVE cf_rdb_save
#define FZ_RDB_FREE cf_free
#define FZ_RDB_COPY cf_copy
#define FZ_RDB_USAGE cf_mem_usage
#define FZ_RDB_DIGEST cf_digest
#define FZ_RDB_CONTAINS(v, k, n) amq_scuckoo_contains(v, k, n)
#include "rdb.h"
