/*
 * peers.h - the peers' own code, built by the bench from their sources when
 * present (AMQ_PEERS, default ../shared/peers; never copied into the repo).
 * Each shim (bench/peers/) includes the peer's headers when the
 * Makefile found them (AMQB_HAVE_<PEER>), and otherwise answers "absent":
 * the rows are then skipped with a line saying where the code was looked
 * for (amqb_peers_dir).
 *
 * Keys are given as the bench holds them: 8-byte keys as 64-bit integers
 * (the peers that take integers get the key as it lies in memory), 16-byte
 * keys as pairs, given to those peers as their XXH3-64 computed in the timed
 * loop, as amq hashes its own keys.
 */
#ifndef AMQB_PEERS_H
#define AMQB_PEERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the Makefile looked for the peers' code. */
const char *amqb_peers_dir(void);

/* ---- xor_singleheader: binary_fuse8 / binary_fuse16 (3-wise) ---- */
typedef struct amqb_xfuse amqb_xfuse;
int amqb_xfuse_available(void);
/* Builds over n keys of key_bytes (8 or 16) each: allocate + populate (the
 * 16-byte keys hashed first).  NULL on failure or when absent. */
amqb_xfuse *amqb_xfuse_build(unsigned bits, const void *keys, size_t key_bytes, size_t n);
/* How many of the n keys binary_fuse{8,16}_contain reports, one by one. */
uint64_t amqb_xfuse_query(const amqb_xfuse *f, const void *keys, size_t key_bytes, size_t n);
/* The same query as a call per key, as a library would export it: one key of
 * key_bytes (any length, as amq_filter_contains takes) to the returned
 * function, with arg the filter. */
typedef int (*amqb_xfuse_fn)(const void *arg, const void *key, size_t key_bytes);
amqb_xfuse_fn amqb_xfuse_call(const amqb_xfuse *f);
uint64_t amqb_xfuse_bytes(const amqb_xfuse *f);
void amqb_xfuse_free(amqb_xfuse *f);

/* ---- efficient/cuckoofilter: CuckooFilter<uint64_t, 12> (its default
 * table and hash, TwoIndependentMultiplyShift) ---- */
typedef struct amqb_cref amqb_cref;
int amqb_cref_available(void);
amqb_cref *amqb_cref_new(size_t n); /* the filter its constructor sizes for n keys */
/* Add of each key; returns how many failed (not enough space). */
uint64_t amqb_cref_add(amqb_cref *c, const uint64_t *keys, size_t n);
/* How many of the keys Contain reports. */
uint64_t amqb_cref_query(const amqb_cref *c, const uint64_t *keys, size_t n);
uint64_t amqb_cref_bytes(const amqb_cref *c);
void amqb_cref_free(amqb_cref *c);

/* ---- jbapple/libfilter: the block (split block) filter, libfilter_block_* ---- */
typedef struct amqb_lblock amqb_lblock;
int amqb_lblock_available(void);
/* libfilter_block_bytes_needed(n, fpp), libfilter_block_init. */
amqb_lblock *amqb_lblock_new(size_t n, double fpp);
/* The key used as its hash (libfilter's own benchmarks do so). */
void amqb_lblock_add(amqb_lblock *b, const uint64_t *keys, size_t n);
uint64_t amqb_lblock_query(const amqb_lblock *b, const uint64_t *keys, size_t n);
uint64_t amqb_lblock_bytes(const amqb_lblock *b);
void amqb_lblock_free(amqb_lblock *b);

#ifdef __cplusplus
}
#endif

#endif /* AMQB_PEERS_H */
