/*
 * amq/cuckoo.h - the cuckoo filter: approximate membership with deletion.
 *
 * A table of nb buckets of b slots (b = 1, 2, 4 or 8), each slot holding
 * an f-bit fingerprint (4 <= f <= 32, packed: 10-bit slots four per five
 * bytes, 12-bit two per three) or 0 for empty.  A key's hash (amq_hash128) gives
 * its fingerprint fp (from h2, never 0) and its first bucket
 * i1 = h1 reduced to [0, nb) by multiply-shift; its second bucket is
 *   i2 = alt(i1, fp) = (H(fp) - i1) mod nb,   H(fp) = fp * phi reduced to [0, nb),
 * an involution (alt(alt(i, fp), fp) = i) for every nb, so the bucket count
 * need not be a power of two and capacity grows in steps of one bucket.
 *
 * Inserting puts fp in a free slot of i1 or i2, else evicts a pseudo-random
 * slot's fingerprint (a hash of the bucket, fp and the step: a deserialized
 * copy evicts alike) to its own alternate bucket, at most max_kicks times.  When
 * that fails, the last homeless fingerprint goes to a one-entry victim
 * slot: the insert still succeeds, and the filter is then full - every
 * later add returns AMQ_EFULL and changes nothing - until a remove frees a
 * slot (the victim is then re-inserted).  No stored item is ever dropped.
 *
 * False positives: a query compares fp with at most 2b slots (+ victim),
 * so the rate at load a (fraction of slots used) is about
 * 1 - (1 - 1/(2^f - 1))^(2 b a); amq_cuckoo_fpp_theory computes it.
 *
 * Removing a key that was never added is undefined (it may remove another
 * key's fingerprint, causing a false negative for that key), as in every
 * cuckoo filter.  Removing a key that was added never causes a false
 * negative for any other added key.  A key added t times must be removed
 * t times; at most 2b + 1 copies of one key fit.
 *
 * The filter is made and used through the generic handle (amq/filter.h,
 * AMQ_KIND_CUCKOO; amq_config's fingerprint_bits, bucket_size,
 * max_kicks); this header adds the rate and load of a geometry.  The typed
 * handle, with what only a cuckoo table does (amq_cuckoo_add_unique,
 * amq_cuckoo_count), is in <amq/advanced.h>.
 *
 * Thread safety: any number of threads may call the const functions at the
 * same time; add, remove and clear need exclusive access (a writer also
 * moves other keys' fingerprints).
 */
#ifndef AMQ_CUCKOO_H
#define AMQ_CUCKOO_H

#include "amq/common.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amq_cuckoo amq_cuckoo;

/* Limits and defaults. */
#define AMQ_CUCKOO_MAX_BUCKETS (UINT64_C(1) << 40)
#define AMQ_CUCKOO_MIN_FINGERPRINT 4u
#define AMQ_CUCKOO_MAX_FINGERPRINT 32u
#define AMQ_CUCKOO_DEFAULT_KICKS 500u
/* At most this many evictions per insert (as the scalable kind and the
 * tool): a file asking for billions would make one add run for minutes. */
#define AMQ_CUCKOO_MAX_KICKS 65535u

typedef struct amq_cuckoo_params {
    uint32_t fingerprint_bits; /* f: 4 to 32 */
    uint32_t bucket_size;      /* b: 1, 2, 4 or 8 */
    uint64_t buckets;          /* nb in [1, AMQ_CUCKOO_MAX_BUCKETS] */
    uint32_t max_kicks;        /* evictions per insert before "full", in
                                  [1, AMQ_CUCKOO_MAX_KICKS] */
    uint32_t hash_algo;        /* amq_hash_algo */
    uint64_t seed;             /* hash seed */
    uint64_t capacity;         /* informational: items it was sized for */
    double fpp;                /* informational: expected rate at capacity */
} amq_cuckoo_params;

/*
 * The highest load (fraction of slots) a filter of b-slot buckets is sized
 * for: a margin below the load where the first insert fails with
 * AMQ_CUCKOO_DEFAULT_KICKS (measured: docs/cuckoo.md).  0 for a bad b.
 */
AMQ_API double amq_cuckoo_max_load(uint32_t bucket_size);

/* Expected false-positive rate of f-bit fingerprints in b-slot buckets at
 * load a in [0, 1]: 1 - (1 - 1/(2^f - 1))^(2 b a). */
AMQ_API double amq_cuckoo_fpp_theory(uint32_t fingerprint_bits, uint32_t bucket_size,
                                     double load);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_CUCKOO_H */
