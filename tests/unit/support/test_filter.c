/*
 * test_filter.c - what many tests need of a filter (see test.h).
 */
#include <stdlib.h>

#include "amq.h"
#include "test.h"

uint8_t *test_serialized(const amq_filter *f, size_t *len)
{
    uint64_t size;
    uint8_t *buf;
    size_t got;
    if (amq_filter_serialized_size(f, &size) != AMQ_OK || (buf = malloc((size_t)size)) == NULL)
        return NULL;
    if (amq_filter_serialize(f, buf, (size_t)size, &got) != AMQ_OK) {
        free(buf);
        return NULL;
    }
    if (len != NULL)
        *len = got;
    return buf;
}
