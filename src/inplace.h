/*
 * inplace.h - what the in-place update (inplace.c) and the file reader
 * (common/file.c) share with the generic handle (filter.c).
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

/* "DIR/.NAME.amqjournal" for path: 0, or -1 if it does not fit. */
int amq_journal_path(const char *path, char *out, size_t cap);
/* Reads the journal of a file of file_size bytes: 1 and a malloc'd valid
 * journal in *buf, or 0 (none, torn, or for another size). */
int amq_journal_load(const char *path, uint64_t file_size, uint64_t ino, uint8_t **buf,
                     size_t *len);
/* 1 if the file whose first avail bytes are head is the one the journal
 * was written for (its header area the old or the new one). */
int amq_journal_matches(const uint8_t *j, const uint8_t *head, size_t avail);
/* Applies a valid journal to the file's bytes in memory. */
void amq_journal_apply_mem(const uint8_t *j, size_t jlen, uint8_t *file);

#endif /* AMQ_SRC_INPLACE_H */
