/*
 * checked.h - size arithmetic on values a decoder read from outside bytes:
 * every product or sum of such fields goes through these in 64 bits, so a
 * forged field fails as AMQ_EOVERFLOW instead of wrapping into a small size
 * that passes the checks after it.
 */
#ifndef AMQ_COMMON_CHECKED_H
#define AMQ_COMMON_CHECKED_H

#include <stdint.h>

#include "amq.h"

/* *out = a + b, or AMQ_EOVERFLOW (*out untouched). */
static inline int amq_add64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a > UINT64_MAX - b)
        return AMQ_EOVERFLOW;
    *out = a + b;
    return AMQ_OK;
}

/* *out = a * b, or AMQ_EOVERFLOW (*out untouched). */
static inline int amq_mul64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (b != 0 && a > UINT64_MAX / b)
        return AMQ_EOVERFLOW;
    *out = a * b;
    return AMQ_OK;
}

/* *out = a * b * c, or AMQ_EOVERFLOW (*out untouched). */
static inline int amq_mul3_64(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t ab;
    if (amq_mul64(a, b, &ab) != AMQ_OK)
        return AMQ_EOVERFLOW;
    return amq_mul64(ab, c, out);
}

/* *out = a * b as a size_t (the size of an allocation), or AMQ_EOVERFLOW. */
static inline int amq_mul_size(size_t a, size_t b, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b)
        return AMQ_EOVERFLOW;
    *out = a * b;
    return AMQ_OK;
}

#endif /* AMQ_COMMON_CHECKED_H */
