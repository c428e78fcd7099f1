/*
 * config.c - a filter's default configuration, apart from filter.c: the
 * kinds below the handle (static_filter.c's codec) check a loaded variant
 * against the defaults too.
 */
#include <string.h>

#define AMQ_ADVANCED_API 1
#include "amq.h"
#include "amq/advanced.h"
#include "amq/filter.h"

/* Which kinds read each option (docs: amq_option_kinds). */
static const struct {
    const char *name;
    const char *kinds;
} option_kinds[] = {
    {"bits_per_key", " bloom blocked partitioned "},
    {"bits", " bloom blocked "},
    {"hashes", " bloom blocked "},
    {"fingerprint_bits", " cuckoo scalable-cuckoo fuse "},
    {"bucket_size", " cuckoo scalable-cuckoo "},
    {"max_kicks", " cuckoo scalable-cuckoo "},
    {"expansion", " scalable-bloom scalable-cuckoo "},
    {"nonscaling", " scalable-bloom scalable-cuckoo "},
    {"redisbloom", " scalable-bloom scalable-cuckoo "},
    {"partitions", " partitioned fuse ribbon "},
    {"arity", " fuse "},
    {"guava", " bloom "},
    {"window_ms", " aging "},
    {"rate", " aging "},
};

const char *amq_option_kinds(const char *name)
{
    size_t i;
    if (name == NULL)
        return NULL;
    for (i = 0; i < sizeof option_kinds / sizeof option_kinds[0]; i++)
        if (strcmp(option_kinds[i].name, name) == 0)
            return option_kinds[i].kinds;
    return NULL;
}

int amq_option_applies(const char *name, uint32_t kind)
{
    const char *kinds = amq_option_kinds(name), *k = amq_kind_name(kind), *p;
    size_t n;
    if (kinds == NULL)
        return 1;
    if (k == NULL)
        return 0;
    n = strlen(k);
    for (p = strstr(kinds, k); p != NULL; p = strstr(p + 1, k))
        if (p[-1] == ' ' && p[n] == ' ')
            return 1;
    return 0;
}

void amq_config_init(amq_config *cfg, uint32_t kind)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    /* The cuckoo and fuse filters' one-key paths are shortest with mulshift
     * (the fuse filter's 16-byte keys with its vector form). */
    cfg->hash_algo = kind == AMQ_KIND_CUCKOO ? AMQ_HASH_MULSHIFT
                     : kind == AMQ_KIND_FUSE ? AMQ_HASH_VMULSHIFT
                                             : AMQ_HASH_XXH3;
    /* an expandable filter starts small and grows: its capacity is where it starts */
    cfg->capacity = kind == AMQ_KIND_EXPANDABLE || kind == AMQ_KIND_QUOTIENT ? 4096 : 1000000;
    cfg->fpp = 0.01;
}
