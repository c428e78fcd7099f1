/*
 * taffy_shim.c - jbapple/libfilter's taffy cuckoo filter behind three
 * functions, compiled only when the peer's tree is given at bench time
 * (make bench-expandable LIBFILTER=...); never part of the library.
 */
#include <stdint.h>

#include "filter/taffy-cuckoo.h"
#include "taffy_shim.h"

void *taffy_new(uint64_t bytes)
{
    static libfilter_taffy_cuckoo t;
    libfilter_taffy_cuckoo_init(bytes, &t);
    return &t;
}

int taffy_add(void *t, uint64_t h)
{
    return libfilter_taffy_cuckoo_add_hash(t, h);
}

int taffy_find(const void *t, uint64_t h)
{
    return libfilter_taffy_cuckoo_find_hash(t, h);
}

uint64_t taffy_bytes(const void *t)
{
    return libfilter_taffy_cuckoo_size_in_bytes(t);
}

void taffy_free(void *t)
{
    libfilter_taffy_cuckoo_destruct(t);
}
