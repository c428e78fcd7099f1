/*
 * shard_stream.h - the chunks of a sharded filter's RESP stream, sorted by shard
 * (shard_stream.c): what `amq import --from redis --shards N` reads first.
 */
#ifndef AMQ_CLI_SHARD_STREAM_H
#define AMQ_CLI_SHARD_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Shards of one sharded filter at most (docs/cluster.md). */
#define CLI_MAX_SHARDS 1024u

typedef struct cli_shard_span {
    unsigned shard;
    long off;   /* where the command starts in the spill file */
    size_t len; /* its bytes there */
} cli_shard_span;

typedef struct cli_shard_demux_out {
    cli_shard_span *spans; /* every LOADCHUNK command, in input order */
    size_t nspans;
    uint64_t *chunks;  /* per shard: how many spans are its own (n entries) */
    char *prefix;      /* NAME, from the first chunk's key (NULL: no chunk) */
    size_t prefix_len; /* its bytes (a key may hold a NUL byte) */
    int by_partition;  /* the metadata says "routing": "partition" (shards are slices) */
} cli_shard_demux_out;

/*
 * Reads RESP arrays from in (named name in messages) until its end and writes each
 * BF.LOADCHUNK / CF.LOADCHUNK / AMQ.LOADCHUNK command of a key NAME:{i.j} (i < n, every key of one
 * NAME) to spill, recording where; other commands are skipped, except that a SET whose value has
 * "shards": M with M != n, and a SCANDUMP reply (which names no key), are errors.  Returns 0,
 * or -1 after printing what and where (out's arrays are then freed).  out is freed with
 * cli_shard_demux_free either way.
 */
int cli_shard_demux(FILE *in, const char *name, unsigned n, FILE *spill, const char *spill_name,
                    cli_shard_demux_out *out);
void cli_shard_demux_free(cli_shard_demux_out *out);

#endif /* AMQ_CLI_SHARD_STREAM_H */
