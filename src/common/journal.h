/*
 * journal.h - the in-place add's journal (format in journal.c): read by the
 * file reader (file.c), written by src/inplace.c.
 */
#ifndef AMQ_COMMON_JOURNAL_H
#define AMQ_COMMON_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "amq.h"

#define AMQ_JOURNAL_MAGIC "AMQJRNL1"
#define AMQ_JOURNAL_HEAD 40
#define AMQ_JOURNAL_RECORD_HEAD 16

/* "DIR/.NAME.amqjournal" for path: 0, or -1 if it does not fit. */
int amq_journal_path(const char *path, char *out, size_t cap);
/* Reads the journal of a file of file_size bytes: 1 and a valid journal
 * in *buf (*len bytes from a, NULL: the default), 0 (none, torn, or for
 * another size), AMQ_ENOMEM (a refused the bytes) or AMQ_EIO (errno set: it
 * could not be opened or read).  Either error: the journal may be good, so
 * it must be neither ignored nor removed. */
int amq_journal_load(const char *path, uint64_t file_size, uint64_t ino, const amq_allocator *a,
                     uint8_t **buf, size_t *len);
/* 1 if the file whose first avail bytes are head is the one the journal
 * was written for (its header area the old or the new one). */
int amq_journal_matches(const uint8_t *j, const uint8_t *head, size_t avail);
/* Applies a valid journal to the file's bytes in memory. */
void amq_journal_apply_mem(const uint8_t *j, size_t jlen, uint8_t *file);

#endif /* AMQ_COMMON_JOURNAL_H */
