/*
 * cmd_redis_amq.h - export and import of amq.so's own data type (AMQ.*: every kind, as the
 * amq file's bytes), reached from cmd_redis.c.
 */
#ifndef AMQ_CLI_CMD_REDIS_AMQ_H
#define AMQ_CLI_CMD_REDIS_AMQ_H

#include <stdint.h>
#include <stdio.h>

#include "amq/filter.h"

/* Writes AMQ.LOADCHUNK key <offset past the chunk> <chunk> commands for flt to f; 0, or -1
 * (a write error: the caller reports it, or a message already printed). */
int cli_redis_amq_export(FILE *f, const amq_filter *flt, const char *key, size_t keylen);

/* The bytes of a filter as they come in chunks (AMQ.LOADCHUNK, AMQ.SCANDUMP replies). */
typedef struct cli_amq_chunks {
    uint8_t *buf;
    uint64_t total, have, chunks;
    size_t cap; /* buf's size: grown with the bytes that came, never past total */
} cli_amq_chunks;

/* Adds a chunk whose iterator it is the offset just past it; the first must hold the whole
 * header, each must start where the bytes so far end.  0, or -1 with a message. */
int cli_amq_chunk_add(cli_amq_chunks *c, const char *name, uint64_t it, const uint8_t *data,
                      size_t len);
/* All there and a valid filter: *out (0), or -1 with a message. */
int cli_amq_chunks_filter(cli_amq_chunks *c, const char *name, amq_filter **out);
/* The same, saved to out (as every output, atomically); 0 or -1. */
int cli_amq_chunks_finish(cli_amq_chunks *c, const char *name, const char *out, int force);
void cli_amq_chunks_free(cli_amq_chunks *c);

/* A DUMP payload of an amqfilter key (p, n: all of it; a trailing newline, as
 * `redis-cli --raw DUMP` writes, is allowed): the filter in *out (0), or -1 with a message. */
int cli_redis_amq_decode_dump(const uint8_t *p, size_t n, const char *name, amq_filter **out);
/* The same, saved to the file out; 0 or -1. */
int cli_redis_amq_import_dump(const uint8_t *p, size_t n, const char *name, const char *out,
                              int force);

#endif /* AMQ_CLI_CMD_REDIS_AMQ_H */
