/*
 * amq/static.h - building a filter from all its keys at once: the static
 * kinds, which can only be built so, and a builder for every kind that
 * takes adds too.
 *
 * Static kinds: two kinds near the space bound log2(1/fpp) bits per key,
 * queried through the generic handle (amq/filter.h) like any other once
 * built:
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
 * A static build never fails on a valid key set: duplicates are removed, a
 * partition whose construction fails is retried with another seed, then
 * with a larger size.  Memory: 8 bytes per key held until `memory` bytes,
 * then the keys' hashes go to 256 temporary files (8 bytes per key on
 * disk) and the build reads them back a group at a time, so the builder's
 * own memory stays near `memory` plus one partition's construction (about
 * 40 bytes per key of the largest partition, a few million keys at most)
 * plus the filter it returns.
 *
 * The other kinds a builder makes - AMQ_KIND_BLOCKED, AMQ_KIND_BLOOM,
 * AMQ_KIND_PARTITIONED, AMQ_KIND_CUCKOO - are built as RocksDB builds its
 * filters: amq_builder_add hashes the key (cfg's hash_algo and seed) and
 * appends what the kind needs of the hash - the blocked kind 12 bytes (h1
 * and the probes' 32 bits; an XXH3 blocked builder keeps 8-byte keys as
 * they are, hashed at finish, until a key of another length, hashes given
 * or the memory budget make it hash them), the others the 16-byte hash -
 * and nothing else: no filter exists yet, so no block is read and there is
 * no "new or not" answer per key.  amq_builder_finish makes the filter amq_filter_new
 * makes for cfg with capacity = the keys added (duplicates included, as
 * RocksDB counts them; 1 for an empty build; cfg's fpp, bits_per_key or
 * bits as for amq_filter_new) and adds every hash, in the order given,
 * through the kind's batched add (prefetched).  The filter's bytes and its
 * item count are exactly those of amq_filter_new with that capacity
 * followed by amq_filter_add of the same keys one by one, also for a build
 * spilled past `memory` (read back in the order written).  A cuckoo
 * build can fail at finish with AMQ_EFULL, as the same adds would.  The
 * growing and aging kinds (scalable Bloom, scalable cuckoo, aging) have no
 * builder: their size follows the keys as they come (AMQ_EKIND).
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
 * Builds a filter of cfg->kind (a static kind, or one a builder makes:
 * above) holding the n keys whose hashes are given (hashed with
 * cfg->hash_algo and cfg->seed: amq_hash_key).  The hashes are copied;
 * duplicates are allowed.  AMQ_EKIND (a kind no builder makes), AMQ_ERANGE
 * (fpp, fingerprint bits, arity, sizes), AMQ_EINVAL (cfg->threads other
 * than 0 or 1: builds use one thread), AMQ_EHASH, AMQ_ENOMEM, AMQ_EFULL
 * (cuckoo).  O(n) expected time.
 */
AMQ_API int amq_filter_build(const amq_config *cfg, const amq_hash128 *h, size_t n,
                             amq_filter **out, amq_errinfo *err);

/* A build fed in pieces: keys one at a time at the cost of hashing them,
 * and key sets larger than memory. */
typedef struct amq_builder amq_builder;

/*
 * A builder for cfg (as amq_filter_build; a dynamic kind's sizing fields
 * are checked here, by making the filter for one key).  tmpdir: where
 * hashes are spilled once more than `memory` bytes of them are held (NULL:
 * $TMPDIR, else /tmp; memory 0: 256 MiB; SIZE_MAX: never).  The temporary
 * files are unlinked as soon as they are created.  One thread at a time per
 * builder.  AMQ_EKIND with a message for a kind no builder makes; AMQ_EINVAL
 * for cfg->threads over 1, as amq_filter_build.
 */
AMQ_API int amq_builder_new(const amq_config *cfg, const char *tmpdir, size_t memory,
                            amq_builder **out, amq_errinfo *err);
AMQ_API void amq_builder_free(amq_builder *b);

/*
 * A builder of a dynamic kind (blocked, bloom, partitioned, cuckoo) that
 * makes its filter at once, sized for cfg->capacity as amq_filter_new
 * does, and adds the keys 1024 at a time, through the batched
 * add, as they come: nothing is held but that buffer, and an add does not
 * wait for its cache line (amq_filter_add must: it answers whether the key
 * was new).  For when the number of keys is known; amq_builder_new sizes
 * for the keys added.  Adds, count and finish as for amq_builder_new; the
 * bytes and item count are those of one-by-one amq_filter_add in the same
 * order.  A cuckoo filter that fills up fails the add that flushed (or
 * finish) with AMQ_EFULL, and every later call with it.  AMQ_EKIND for a
 * static kind, otherwise amq_filter_new's statuses.
 */
AMQ_API int amq_builder_new_sized(const amq_config *cfg, amq_builder **out, amq_errinfo *err);

/* Adds keys (hashed by the builder) or their hashes.  AMQ_ENOMEM,
 * AMQ_EIO / AMQ_ENOSPC (spill files; every later call then fails too),
 * AMQ_EINVAL after amq_builder_finish.  amq_builder_add of a dynamic kind
 * is the key's hash (8- and 16-byte XXH3 keys inlined) and an append. */
AMQ_API int amq_builder_add(amq_builder *b, const void *key, size_t len);
AMQ_API int amq_builder_add_batch(amq_builder *b, const amq_hash128 *h, size_t n);

/* Keys added so far, duplicates included (also after finish). */
AMQ_API uint64_t amq_builder_count(const amq_builder *b);

/* Builds the filter of every key added (call once - a second call is
 * AMQ_EINVAL, "the builder has finished already: free it" - then free the
 * builder; the held hashes are released here).  A static filter is
 * writable in the sense of the handle (it can be saved) but takes no adds;
 * a dynamic kind's takes adds like any filter of its kind.  O(n). */
AMQ_API int amq_builder_finish(amq_builder *b, amq_filter **out, amq_errinfo *err);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_STATIC_H */
