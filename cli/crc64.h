/*
 * crc64.h - the CRC-64 that Redis ends a DUMP payload with (Jones polynomial,
 * reflected, no final xor): the tool checks it on import, the fuzz seeds write it.
 */
#ifndef AMQ_CLI_CRC64_H
#define AMQ_CLI_CRC64_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t cli_crc64_jones(const uint8_t *p, size_t n)
{
    uint64_t crc = 0;
    size_t i;
    int b;
    for (i = 0; i < n; i++) {
        crc ^= p[i];
        for (b = 0; b < 8; b++)
            crc = crc & 1 ? (crc >> 1) ^ UINT64_C(0x95AC9329AC4BC9B5) : crc >> 1;
    }
    return crc;
}

#endif /* AMQ_CLI_CRC64_H */
