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
 * Inserting puts fp in a free slot of i1 or i2, else evicts a random slot's
 * fingerprint to its own alternate bucket, at most max_kicks times.  When
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

/*
 * Sizing for n items at false-positive rate p.  fingerprint_bits and
 * bucket_size may be 0 ("choose") or a fixed value (b = 8 is never chosen,
 * only taken on request: it saves little and is slower).  Among the allowed
 * (f, b) - f from 4 to 32 - picks the pair of fewest bits per item, where
 * each pair runs at the highest load <= amq_cuckoo_max_load(b) (lower for
 * f < 8, whose few alternates jam large tables earlier; docs/cuckoo.md)
 * whose amq_cuckoo_fpp_theory is at most 0.95 p (a 5 % margin so that the
 * measured rate meets p): 1 % gets f = 10, b = 4 at 95 % load (10.6 bits
 * per item), 0.1 % f = 13, b = 4 (13.7);
 * nb0 = ceil(n / (b * load)), nb = nb0 + ceil(2 sqrt(nb0)) (spare buckets
 * for small tables, which fill less evenly).  When both f and b are fixed, the load is
 * the design maximum for (f, b) whatever p (fpp then records the rate reached).
 * Fills every field (XXH3 seed 0, max_kicks AMQ_CUCKOO_DEFAULT_KICKS).
 * AMQ_ERANGE for n = 0, p outside (0, 1), a bad f or b, or a table over
 * AMQ_CUCKOO_MAX_BUCKETS.  O(1).
 */
AMQ_API int amq_cuckoo_params_for(uint64_t n, double p, uint32_t fingerprint_bits,
                                  uint32_t bucket_size, amq_cuckoo_params *params);

/* Checks params: AMQ_OK, AMQ_ERANGE (f, b, nb or max_kicks), AMQ_EHASH. */
AMQ_API int amq_cuckoo_check_params(const amq_cuckoo_params *params);

/* Creates an empty filter.  alloc may be NULL.  AMQ_ERANGE, AMQ_EHASH,
 * AMQ_ENOMEM.  O(table size) (zeroed memory). */
AMQ_API int amq_cuckoo_new(const amq_cuckoo_params *params, const amq_allocator *alloc,
                           amq_cuckoo **out);

/* A deep, writable copy (also of a view).  AMQ_ENOMEM. */
AMQ_API int amq_cuckoo_clone(const amq_cuckoo *c, const amq_allocator *alloc,
                             amq_cuckoo **out);

/* Releases the filter; NULL is a no-op. */
AMQ_API void amq_cuckoo_free(amq_cuckoo *c);

/* The hash of a key as this filter computes it. */
AMQ_API amq_hash128 amq_cuckoo_hash(const amq_cuckoo *c, const void *key, size_t len);

/*
 * Adds a key (another copy if it is already in).  1 on success;
 * AMQ_EFULL when the filter is full (nothing changed); AMQ_EREADONLY for a
 * view.  O(1) expected, O(max_kicks) worst case.
 */
AMQ_API int amq_cuckoo_add(amq_cuckoo *c, const void *key, size_t len);
AMQ_API int amq_cuckoo_add_hash(amq_cuckoo *c, amq_hash128 h);

/* Adds n keys by their hashes, as n calls of amq_cuckoo_add_hash, with the
 * next keys' buckets prefetched while one is inserted.  added[i] = 1 for
 * each key added (added may be NULL); *count (count may be NULL) the
 * number added.  AMQ_OK, or the first error (AMQ_EFULL: the keys before
 * it were added, none after), AMQ_EREADONLY (nothing added). */
AMQ_API int amq_cuckoo_add_batch(amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                 uint8_t *added, uint64_t *count);

/* Adds a key unless it may already be in: 1 added, 0 may exist (nothing
 * changed), AMQ_EFULL, AMQ_EREADONLY. */
AMQ_API int amq_cuckoo_add_unique(amq_cuckoo *c, const void *key, size_t len);
AMQ_API int amq_cuckoo_add_unique_hash(amq_cuckoo *c, amq_hash128 h);

/* 1 if the key may be in the set, 0 if it certainly is not.  Reads at most
 * two buckets.  O(1). */
AMQ_API int amq_cuckoo_contains(const amq_cuckoo *c, const void *key, size_t len);
AMQ_API int amq_cuckoo_contains_hash(const amq_cuckoo *c, amq_hash128 h);

/* out[i] = contains(h[i]) for n hashes (out may be NULL), *count (may be
 * NULL) the number of 1 answers; computes bucket indexes ahead and
 * prefetches, which pays on tables larger than the caches.  AMQ_OK. */
AMQ_API int amq_cuckoo_contains_batch(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                                      uint8_t *out, uint64_t *count);

/*
 * Removes one copy of the key's fingerprint: 1 removed, 0 not found,
 * AMQ_EREADONLY.  If the filter was full, the victim is re-inserted.
 * See the header comment for keys never added.  O(1) expected.
 */
AMQ_API int amq_cuckoo_remove(amq_cuckoo *c, const void *key, size_t len);
AMQ_API int amq_cuckoo_remove_hash(amq_cuckoo *c, amq_hash128 h);

/* *count = copies of the key's fingerprint in its buckets (and the
 * victim), i.e. how many times it was added, plus colliding keys.  AMQ_OK.
 * O(b). */
AMQ_API int amq_cuckoo_count(const amq_cuckoo *c, const void *key, size_t len, uint64_t *count);
AMQ_API int amq_cuckoo_count_hash(const amq_cuckoo *c, amq_hash128 h, uint64_t *count);

/* Empties the table and the victim.  AMQ_EREADONLY for a view. */
AMQ_API int amq_cuckoo_clear(amq_cuckoo *c);

/* The filter's parameters. */
AMQ_API void amq_cuckoo_get_params(const amq_cuckoo *c, amq_cuckoo_params *out);
/* Stored fingerprints (victim included). */
AMQ_API uint64_t amq_cuckoo_items(const amq_cuckoo *c);
/* nb * b. */
AMQ_API uint64_t amq_cuckoo_slots(const amq_cuckoo *c);
/* Bytes of the table. */
AMQ_API size_t amq_cuckoo_bytes(const amq_cuckoo *c);
/* items / slots. */
AMQ_API double amq_cuckoo_load(const amq_cuckoo *c);
/* 1 when the victim slot is in use (the next add fails with AMQ_EFULL). */
AMQ_API int amq_cuckoo_is_full(const amq_cuckoo *c);
/* 1 for a view over caller or mapped bytes (changes return
 * AMQ_EREADONLY), else 0. */
AMQ_API int amq_cuckoo_is_readonly(const amq_cuckoo *c);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_CUCKOO_H */
