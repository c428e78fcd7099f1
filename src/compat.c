/*
 * compat.c - the stable functions renamed in 0.3, exported under their old
 * names until 0.4 (amq/compat.h): each is its new name.
 */
#include "amq/compat.h"
#include "amq/guava.h"

int amq_guava_decode(const void *buf, size_t len, const amq_allocator *alloc, amq_bloom **out,
                     amq_errinfo *err)
{
    return amq_guava_deserialize(buf, len, alloc, out, err);
}

int amq_guava_encode(const amq_bloom *b, void *buf, size_t cap, size_t *written,
                     amq_errinfo *err)
{
    return amq_guava_serialize(b, buf, cap, written, err);
}

int amq_guava_encoded_size(const amq_bloom *b, size_t *size, amq_errinfo *err)
{
    return amq_guava_serialized_size(b, size, err);
}

int amq_aging_plan(uint64_t window, double fpp, amq_aging_info *info)
{
    return amq_aging_info_for(window, fpp, info);
}
