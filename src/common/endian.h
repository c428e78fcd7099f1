/*
 * endian.h - little-endian loads and stores, byte by byte.
 *
 * Every fixed-width field on disk or on the wire goes through these; the
 * compiler turns them into single moves on little-endian hosts.  Nothing
 * casts a uint8_t * to a wider pointer type.
 */
#ifndef AMQ_COMMON_ENDIAN_H
#define AMQ_COMMON_ENDIAN_H

#include <stdint.h>
#include <string.h>

static inline uint16_t amq_load16(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint16_t)(b[0] | (b[1] << 8));
}

static inline uint32_t amq_load32(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
           ((uint32_t)b[3] << 24);
}

static inline uint64_t amq_load64(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint64_t)amq_load32(b) | ((uint64_t)amq_load32(b + 4) << 32);
}

static inline void amq_store16(void *p, uint16_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}

static inline void amq_store32(void *p, uint32_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16);
    b[3] = (uint8_t)(v >> 24);
}

static inline void amq_store64(void *p, uint64_t v)
{
    amq_store32(p, (uint32_t)v);
    amq_store32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/* IEEE-754 doubles travel as their 64-bit pattern, little-endian. */
static inline double amq_loadf64(const void *p)
{
    uint64_t u = amq_load64(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline void amq_storef64(void *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    amq_store64(p, u);
}

/* Big-endian, for formats that fix it (Guava's writeTo). */
static inline uint32_t amq_load32be(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) |
           (uint32_t)b[3];
}

static inline uint64_t amq_load64be(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return ((uint64_t)amq_load32be(b) << 32) | (uint64_t)amq_load32be(b + 4);
}

static inline void amq_store32be(void *p, uint32_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}

static inline void amq_store64be(void *p, uint64_t v)
{
    amq_store32be(p, (uint32_t)(v >> 32));
    amq_store32be((uint8_t *)p + 4, (uint32_t)v);
}

#endif /* AMQ_COMMON_ENDIAN_H */
