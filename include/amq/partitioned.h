/*
 * amq/partitioned.h - a filter split into independent partitions.
 *
 * The key's hash picks one of P partitions; each partition is a blocked
 * Bloom filter (amq/blocked_bloom.h) with its own number of blocks and
 * probes.  A top-level index - each partition's offset, geometry, item
 * count and checksum - precedes the partitions in the file (layout in
 * docs/file-format.md), so a query needs the index and one partition:
 * opened by mmap with AMQ_OPEN_TRUST, a query into a cold file reads only
 * the pages of its partition, and a filter larger than RAM answers with
 * one partition read.  A build from known hashes sizes each partition for
 * the keys it actually receives and fills partitions on several threads at
 * once, each thread owning whole partitions (no atomics).
 *
 * From the key's amq_hash128:
 *   partition = ((h2 >> 32) * P) >> 32
 *   then the blocked filter's rule inside that partition (block from h1,
 *   probes from the low 32 bits of h2).
 *
 * What is verified when (files and bytes, amq_filter_open/_deserialize):
 *  - always: the container header and parameter block (header checksum),
 *    and the index (its checksum is in the parameter block), at open;
 *  - without AMQ_OPEN_TRUST: the whole payload (the container's checksum)
 *    and every partition's own checksum, at open (AMQ_ECHECKSUM if one
 *    fails);
 *  - with AMQ_OPEN_TRUST: each partition's own checksum, the first time an
 *    add or a query touches that partition (one thread verifies, others
 *    touching it wait).  A partition that fails makes single queries and
 *    adds into it return AMQ_ECHECKSUM, batched queries answer 1 ("may be
 *    present") for its keys, and amq_partitioned_status() return
 *    AMQ_ECHECKSUM from then on.
 *
 * The filter is made by amq_filter_new (AMQ_KIND_PARTITIONED) or, from
 * known hashes on several threads, by amq_partitioned_build +
 * amq_filter_from_partitioned, and used through amq_filter_*; this header
 * adds the partitions' details and their verification.  The typed handle
 * (amq_partitioned_add, ...) is in <amq/advanced.h>.
 *
 * Thread safety: as the blocked filter - any number of concurrent queries;
 * adds exclusive unless amq_filter_set_concurrent(f, 1), then adds,
 * queries and saves may run concurrently.  A save (or serialization) in
 * concurrent mode writes each partition from a copy taken 64 KiB at a
 * time (a buffer from the filter's allocator: refused, the save fails with
 * AMQ_ENOMEM and leaves the old file) and records the checksum of that
 * copy, then the index; the file's payload checksum is taken over the
 * bytes as written, read back.  So
 * adds racing a save are in the file or not, but never break it, and
 * every key whose add returned before the save began is in it.  The
 * bytes are those of exclusive mode when no add runs.
 * amq_filter_serialize_range writes in order and needs no add running.
 */
#ifndef AMQ_PARTITIONED_H
#define AMQ_PARTITIONED_H

#include "amq/common.h"
#include "amq/blocked_bloom.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amq_partitioned amq_partitioned;

/* 1 .. 65536 partitions. */
#define AMQ_PARTITIONED_MAX_PARTITIONS 65536u

/* When the number of partitions is left to the library: partitions of
 * about this many bytes.  A query into a cold trusted mapping reads (and
 * verifies) one whole partition, so smaller partitions start faster
 * (docs/benchmarks.md, cold start). */
#define AMQ_PARTITIONED_TARGET_BYTES (64u * 1024u)

typedef struct amq_partitioned_params {
    uint32_t partitions; /* P; 0 = about one per AMQ_PARTITIONED_TARGET_BYTES */
    uint32_t hash_algo;  /* amq_hash_algo */
    uint64_t seed;
    uint64_t capacity;   /* keys the whole filter is sized for */
    double fpp;          /* target rate (used when bits_per_key is 0) */
    double bits_per_key; /* > 0: size by bits per key instead */
} amq_partitioned_params;

/*
 * Builds a filter holding the n keys whose hashes are given (capacity is
 * taken to be n; params->capacity is ignored).  Partition i is sized for
 * the c_i keys it receives, at params->fpp (or bits_per_key), so every
 * partition meets the rate.  threads: workers to fill partitions (0 = the
 * online CPUs); each worker owns a range of partitions and writes only
 * those, with plain stores.  The hashes are read by every worker
 * (sequentially); no copy of them is made.  Its scratch (the workers'
 * counts, 8 bytes a partition each, and the thread handles) comes from
 * alloc too.  O(n k / threads + n threads).
 * AMQ_OK; AMQ_ERANGE (fpp, bits_per_key, partitions or a partition over
 * AMQ_BLOCKED_MAX_BLOCKS), AMQ_EHASH, AMQ_ENOMEM.
 */
AMQ_API int amq_partitioned_build(const amq_partitioned_params *params, const amq_hash128 *h,
                                  size_t n, unsigned threads, const amq_allocator *alloc,
                                  amq_partitioned **out);

/* Releases the filter; NULL is a no-op. */
AMQ_API void amq_partitioned_free(amq_partitioned *f);

/* Number of partitions, and which one a hash goes to (in a slice, docs/file-format.md: its
 * index in the slice, the count or more for a key of another slice). */
AMQ_API uint32_t amq_partitioned_partitions(const amq_partitioned *f);
AMQ_API uint32_t amq_partitioned_partition_of(const amq_partitioned *f, amq_hash128 h);

typedef struct amq_partition_info {
    uint64_t offset; /* bytes from the start of the partition data */
    uint64_t blocks;
    uint32_t k;
    uint64_t items;
    uint64_t capacity; /* keys it was sized for */
    int verified;      /* 1 checked or not needed, 0 not yet, -1 failed */
} amq_partition_info;

/* Describes partition i (AMQ_ERANGE if i >= count). */
AMQ_API int amq_partitioned_partition_info(const amq_partitioned *f, uint32_t i,
                                      amq_partition_info *info);

/* Verifies every partition not yet verified (see the top of this header);
 * AMQ_ECHECKSUM with *bad (when not NULL) the first failing partition. */
AMQ_API int amq_partitioned_verify(const amq_partitioned *f, uint32_t *bad);

/* AMQ_ECHECKSUM once any partition has failed verification, else AMQ_OK. */
AMQ_API int amq_partitioned_status(const amq_partitioned *f);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_PARTITIONED_H */
