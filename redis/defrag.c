/*
 * defrag.c - active-defrag callbacks of the BF and CF data types.
 *
 * A filter's blocks are private to the library, so a filter is defragmented by copying it: the
 * copy's blocks are fresh allocations (where the allocator now packs them densely), then the old
 * filter is freed and the key points at the copy.  Only small filters are copied: their blocks
 * live in the allocator's small-size slabs, where fragmentation happens; a large filter is made
 * of page runs that defrag would not move, and copying it would double its memory for a moment.
 */
#include "amq/scalable_bloom.h"
#include "amq/scalable_cuckoo.h"
#include "config.h"

/* Filters up to this size are copied. */
#define AMQ_RM_DEFRAG_MAX ((uint64_t)256 << 10)

int amq_rm_bf_defrag(RedisModuleDefragCtx *ctx, RedisModuleString *key, void **value)
{
    amq_sbloom_info in;
    amq_sbloom *copy = NULL;

    (void)ctx;
    (void)key;
    amq_sbloom_get_info(*value, &in);
    if (in.info_bytes > AMQ_RM_DEFRAG_MAX)
        return 0;
    /* Out of memory: the filter stays where it is. */
    if (amq_sbloom_clone(*value, &amq_rm_allocator, &copy) != AMQ_OK)
        return 0;
    amq_sbloom_free(*value);
    *value = copy;
    return 0; /* done with this key */
}

int amq_rm_cf_defrag(RedisModuleDefragCtx *ctx, RedisModuleString *key, void **value)
{
    amq_scuckoo_info in;
    amq_scuckoo *copy = NULL;

    (void)ctx;
    (void)key;
    amq_scuckoo_get_info(*value, &in);
    if (in.info_bytes > AMQ_RM_DEFRAG_MAX)
        return 0;
    if (amq_scuckoo_clone(*value, &amq_rm_allocator, &copy) != AMQ_OK)
        return 0;
    amq_scuckoo_free(*value);
    *value = copy;
    return 0;
}
