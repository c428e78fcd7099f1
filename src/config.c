/*
 * config.c - a filter's default configuration, apart from filter.c: the
 * kinds below the handle (static_filter.c's codec) check a loaded variant
 * against the defaults too.
 */
#include <string.h>

#include "amq.h"
#include "amq/filter.h"

void amq_config_init(amq_config *cfg, uint32_t kind)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    /* The cuckoo and fuse filters' one-key paths are shortest with mulshift
     * (the cuckoo filter's with its mix, which integer progressions need;
     * the fuse filter's 16-byte keys with its vector form). */
    cfg->hash_algo = kind == AMQ_KIND_CUCKOO ? AMQ_HASH_MULMIX
                     : kind == AMQ_KIND_FUSE ? AMQ_HASH_VMULSHIFT
                                             : AMQ_HASH_XXH3;
    /* an expandable filter starts small and grows: its capacity is where it starts */
    cfg->capacity = kind == AMQ_KIND_EXPANDABLE || kind == AMQ_KIND_QUOTIENT ||
                            kind == AMQ_KIND_POCKET
                        ? 4096
                        : 1000000;
    cfg->fpp = 0.01;
}
