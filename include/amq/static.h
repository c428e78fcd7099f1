/*
 * amq/static.h - building static filters: every key known up front.
 *
 * Two kinds near the space bound log2(1/fpp) bits per key, queried through
 * the generic handle (amq/filter.h) like any other once built:
 *  - AMQ_KIND_FUSE: binary fuse filters (Graf & Lemire 2022), 8- or 16-bit
 *    fingerprints (amq_config.fingerprint_bits; 0 = 8 when fpp >= 1/256),
 *    3-wise or 4-wise (amq_config.arity; 0 = 3): fpp 2^-bits at about
 *    1.13 (3-wise) or 1.08 (4-wise) times bits per key;
 *  - AMQ_KIND_RIBBON: standard Ribbon filters (Dillinger & Walzer 2021)
 *    for any amq_config.fpp in [2^-32, 1): about 1.04 times the bound.
 * Both hold their keys in partitions chosen by the top bits of the hash's
 * h1 (docs/file-format.md); a query reads one partition.  Adds, removes,
 * merges and clears of a built filter return AMQ_EUNSUPPORTED, and
 * amq_filter_new of a static kind returns AMQ_EUNSUPPORTED (with a
 * message saying how to build one).
 *
 * A build never fails on a valid key set: duplicates are removed, a
 * partition whose construction fails is retried with another seed, then
 * with a larger size.  Memory: 8 bytes per key held until `memory` bytes,
 * then the keys' hashes go to 256 temporary files (8 bytes per key on
 * disk) and the build reads them back a group at a time, so the builder's
 * own memory stays near `memory` plus one partition's construction (about
 * 40 bytes per key of the largest partition, a few million keys at most)
 * plus the filter it returns.
 */
#ifndef AMQ_STATIC_H
#define AMQ_STATIC_H

#include "amq/common.h"
#include "amq/hash.h"
#include "amq/filter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 for the static kinds (fuse, ribbon), 0 for others. */
AMQ_API int amq_kind_is_static(uint32_t kind);

/*
 * Builds a static filter of cfg->kind holding the n keys whose hashes are
 * given (hashed with cfg->hash_algo and cfg->seed: amq_hash_key).  The
 * hashes are copied; duplicates are allowed.  AMQ_EKIND (not a static
 * kind), AMQ_ERANGE (fpp, fingerprint bits, arity), AMQ_EHASH, AMQ_ENOMEM.
 * O(n) expected time.
 */
AMQ_API int amq_filter_build(const amq_config *cfg, const amq_hash128 *h, size_t n,
                             amq_filter **out, amq_errinfo *err);

/* A build fed in pieces, for key sets larger than memory. */
typedef struct amq_builder amq_builder;

/*
 * A builder for cfg (as amq_filter_build).  tmpdir: where hashes are
 * spilled once more than `memory` bytes of them are held (NULL: $TMPDIR,
 * else /tmp; memory 0: 256 MiB).  The temporary files are unlinked as
 * soon as they are created.  One thread at a time per builder.
 */
AMQ_API int amq_builder_new(const amq_config *cfg, const char *tmpdir, size_t memory,
                            amq_builder **out, amq_errinfo *err);
AMQ_API void amq_builder_free(amq_builder *b);

/* Adds keys (hashed by the builder) or their hashes.  AMQ_ENOMEM,
 * AMQ_EIO / AMQ_ENOSPC (spill files; every later call then fails too). */
AMQ_API int amq_builder_add(amq_builder *b, const void *key, size_t len);
AMQ_API int amq_builder_add_batch(amq_builder *b, const amq_hash128 *h, size_t n);

/* Keys added so far, duplicates included. */
AMQ_API uint64_t amq_builder_count(const amq_builder *b);

/* Builds the filter of every key added (call once; then free the
 * builder).  The filter is writable in the sense of the handle (it can be
 * saved) but takes no adds. */
AMQ_API int amq_builder_finish(amq_builder *b, amq_filter **out, amq_errinfo *err);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_STATIC_H */
