/*
 * rocksdb_shim.h - a small C interface to the real RocksDB filters (Debian's
 * librocksdb-dev), so that C benchmark subjects can measure them beside amq
 * on the same keys in the same run.  Implemented in bench/rocksdb_shim.cc
 * (C++, built only when the RocksDB headers are installed: the Makefile
 * defines AMQB_HAVE_ROCKSDB then).
 *
 * A filter is built the way RocksDB builds a table's filter block: keys are
 * added one at a time (FilterBitsBuilder::AddKey), the filter is laid out
 * by finish (FilterBitsBuilder::Finish), and queried through the reader
 * that the policy makes from the finished bytes (FilterBitsReader::MayMatch,
 * one key or a batch).  Not thread-safe; one handle per thread.
 */
#ifndef AMQ_BENCH_ROCKSDB_SHIM_H
#define AMQ_BENCH_ROCKSDB_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amqb_rocks amqb_rocks;

/* The most keys one amqb_rocks_may_match_batch call hands to RocksDB at
 * once (MultiGet's batch: the readers' stack arrays hold that many). */
#define AMQB_ROCKS_MAX_BATCH 32

/* A builder for policy "bloom" (NewBloomFilterPolicy under
 * format_version 5: FastLocalBloom) or "ribbon" (NewRibbonFilterPolicy:
 * Standard128Ribbon; bits_per_key is then the Bloom-equivalent size, as
 * RocksDB takes it).  NULL on an unknown policy or an error. */
amqb_rocks *amqb_rocks_new(const char *policy, double bits_per_key);

/* Adds one key (before finish). */
void amqb_rocks_add(amqb_rocks *r, const void *key, size_t len);

/* Lays the filter out and opens its reader.  0 on success; -1 when RocksDB
 * fails or did not build the implementation asked for (then the handle
 * answers no query). */
int amqb_rocks_finish(amqb_rocks *r);

/* 1 when the key may be present, 0 when it is not (after finish). */
int amqb_rocks_may_match(amqb_rocks *r, const void *key, size_t len);

/* Queries n keys of len bytes each, stored back to back, in batches of
 * AMQB_ROCKS_MAX_BATCH; out[i] (optional) gets key i's answer.  Returns how
 * many may be present. */
uint64_t amqb_rocks_may_match_batch(amqb_rocks *r, const void *keys, size_t len, size_t n,
                                    uint8_t *out);

/* Bytes of the finished filter (with RocksDB's 5-byte trailer); 0 before. */
size_t amqb_rocks_bytes(const amqb_rocks *r);

/* What RocksDB built, read from the filter's trailer: "FastLocalBloom",
 * "Standard128Ribbon", or "other" (and "none" before finish). */
const char *amqb_rocks_impl(const amqb_rocks *r);

void amqb_rocks_free(amqb_rocks *r);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_BENCH_ROCKSDB_SHIM_H */
