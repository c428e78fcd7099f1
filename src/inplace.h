/*
 * inplace.h - what the in-place update (inplace.c) shares with the generic
 * handle (filter.c).
 */
#ifndef AMQ_SRC_INPLACE_H
#define AMQ_SRC_INPLACE_H

#include <stddef.h>
#include <stdint.h>

#include "amq/filter.h"

/* Open flag (internal): a borrowed view that writes into the buffer. */
#define AMQ_OPEN_INPLACE_ 0x100u

/* The header area (payload offset bytes) f would be saved with, given its
 * payload checksum.  *len: bytes written to out. */
int amq_filter_header_area(const amq_filter *f, uint64_t payload_sum, uint8_t *out, size_t cap,
                           size_t *len);

#endif /* AMQ_SRC_INPLACE_H */
