/*
 * amq/filter.h - one handle for every kind of filter, and filter files.
 *
 * An amq_filter wraps a filter of any kind behind one table of operations:
 * create from an amq_config, add / query / remove keys, merge, describe,
 * and save to or open from the single file container of docs/file-format.md.
 * The command-line tool uses only this interface; the family headers
 * (amq/bloom.h, ...) give the kind-specific functions.
 *
 * A key is hashed once, by the algorithm and seed the filter records
 * (amq_filter_hash); the *_hash functions take that hash directly, which
 * is how batched callers hash ahead.
 *
 * Thread safety, function by function (tests/unit/test_concurrent.c runs
 * the readers under ThreadSanitizer):
 *  - readers of f: any number of threads may call them on one filter at
 *    the same time - amq_filter_kind, _is_readonly, _hash, _contains,
 *    _contains_hash, _contains_batch, _stats, _describe, _serialized_size,
 *    _serialize, _save (several saves to one path also: the file is then
 *    one of them, complete), _clone (of f), and the src of _merge and
 *    _intersect;
 *  - writers of f: _add, _add_hash, _add_batch, _remove, _remove_hash,
 *    _clear, the dst of _merge and _intersect, and _free need exclusive
 *    access: no other call on f may run at the same time, unless the
 *    kind's header allows more (the blocked and partitioned kinds allow
 *    concurrent adds, queries and saves once switched to concurrent mode:
 *    amq_filter_set_concurrent; a _save or _serialize while adds run
 *    writes a file whose checksums hold and that holds every key whose
 *    add returned before the save began - adds racing it may be in or
 *    not; amq_filter_serialize_range, piece by piece, needs no add
 *    running between its calls);
 *  - everything else touches no shared state: amq_config_init,
 *    amq_kind_name, amq_kind_from_name, amq_filter_new, _open,
 *    _deserialize (which reads buf only; a borrowed buf must not change
 *    while the filter lives), _from_bloom, on distinct objects from any
 *    thread.
 * A read-only (mmap'd or borrowed) filter has only readers: its writers
 * return AMQ_EREADONLY without touching it.
 */
#ifndef AMQ_FILTER_H
#define AMQ_FILTER_H

#include "amq/common.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of filter.  Values are stored in files and pinned. */
typedef enum amq_kind {
    AMQ_KIND_BLOOM = 1,
    AMQ_KIND_BLOCKED = 2,
    AMQ_KIND_PARTITIONED = 3,
    AMQ_KIND_CUCKOO = 4,
    AMQ_KIND_SCALABLE_BLOOM = 5,
    AMQ_KIND_SCALABLE_CUCKOO = 6,
    AMQ_KIND_FUSE = 8,  /* static: binary fuse (amq/static.h) */
    AMQ_KIND_RIBBON = 9, /* static: standard Ribbon (amq/static.h) */
    AMQ_KIND_AGING = 10, /* sliding window (amq/aging.h) */
    AMQ_KIND_EXPANDABLE = 11, /* grows without a capacity (see below) */
    AMQ_KIND_QUOTIENT = 12, /* grows without a capacity, memory following the keys (below) */
    AMQ_KIND_POCKET = 13 /* grows without a capacity in 64-byte bins (below) */
} amq_kind;

/* "bloom", "blocked", ... or NULL; and back (AMQ_EKIND if unknown or not
 * built into this library). */
AMQ_API const char *amq_kind_name(uint32_t kind);
AMQ_API int amq_kind_from_name(const char *name, uint32_t *kind);

/* 1 if a filter of this kind is sized for a capacity its adds should not
 * pass (bloom, blocked, partitioned, cuckoo: past it the rate climbs), 0
 * for kinds that grow (scalable, expandable), hold a window (aging) or take
 * no adds (static).  The tool and Python refuse an add past capacity by it. */
AMQ_API int amq_kind_has_capacity(uint32_t kind);

/*
 * What to create.  amq_config_init fills the defaults; set what you need.
 * A kind reads the fields that apply to it and ignores the others.
 */
typedef struct amq_config {
    uint32_t kind;
    uint32_t hash_algo;      /* amq_hash_algo, default AMQ_HASH_XXH3 (cuckoo: MULMIX) */
    uint64_t seed;           /* default 0 */
    uint64_t capacity;       /* items the filter is sized for */
    double fpp;              /* target false-positive rate at capacity */
    double bits_per_key;     /* != 0: size by bits per key instead of fpp */
    uint64_t bits;           /* > 0 (bloom): exact number of bits ... */
    uint32_t k;              /* ... and of probes (non-zero k alone: EINVAL) */
    uint32_t fingerprint_bits; /* cuckoo kinds: 4 to 32 (RedisBloom layout: 8); fuse: 8 or 16 (0 = choose) */
    uint32_t bucket_size;      /* cuckoo kinds: slots per bucket (0 = choose) */
    uint32_t max_kicks;        /* cuckoo kinds: kick-out bound (0 = default) */
    uint32_t expansion;        /* scalable kinds: growth factor (0 = default) */
    uint32_t nonscaling;       /* scalable kinds: 1 = never grow */
    uint32_t redisbloom;       /* scalable kinds: RedisBloom-compatible layout */
    uint32_t partitions;       /* partitioned: number of partitions (0 = choose); static
                                  kinds: at least this many, a power of two (0 = by size) */
    uint32_t threads;          /* reserved: 0 or 1; no creation or build uses threads, and
                                  other values are refused (AMQ_EINVAL) rather than ignored
                                  (amq_partitioned_build takes a thread count of its own) */
    uint32_t arity;            /* fuse: 3 or 4 positions per key (0 = 3) */
    uint64_t window_ms;        /* aging: != 0 ages by time, a window of this many ms ... */
    double rate;               /* ... at this many adds per second (capacity: by count) */
    const amq_allocator *alloc; /* NULL = default */
} amq_config;

/* Defaults for kind: XXH3 seed 0 (the cuckoo kind: AMQ_HASH_MULMIX), capacity
 * 1,000,000 (the expandable kind: 4,096, where it starts), fpp 0.01.
 *
 * The expandable kind ("expandable", docs/expandable.md) needs no capacity:
 * it starts with room for cfg.capacity keys and doubles in place whenever it
 * is 80 % full, keeping its expected false-positive rate at or under
 * cfg.fpp (0.00114 to 0.5: under that its first doubling would pass the
 * target, so it could never grow); a query reads one 64-byte bucket (and,
 * for a few buckets, a small stash) whatever the size.  Adds return AMQ_ELIMIT once
 * another doubling would take the rate past cfg.fpp (from 4,096 keys at 1 %:
 * after about 23 doublings, about 5e10 keys).  Keys may be removed (only keys
 * that were added: as for the cuckoo kind).  An add returns AMQ_EFULL, nothing
 * changed, for a key in 32 entries already, and for a key whose bucket holds
 * 256 entries in the stash past its 31 lanes (keys crowded into one bucket by
 * a weak hash or chosen against the seed: random keys never come near).
 *
 * The quotient kind ("quotient", docs/expandable.md) needs no capacity
 * either: it starts with room for cfg.capacity keys and grows by 10 % once
 * 95 % of its slots are used, so that its memory follows its keys (about 20
 * bits a key); a query reads one 64-byte line (rarely two).  Its expected
 * rate is kept at or under cfg.fpp (0.0001 to 0.5; its 16-bit entries give
 * about 3e-5 per doubling of the keys): adds return AMQ_ELIMIT once another
 * growth would pass it.  Keys cannot be removed.
 *
 * The pocket kind ("pocket", docs/expandable.md) needs no capacity either:
 * it starts with room for cfg.capacity keys (1 to 2^30; 64 at least) in 64-byte bins of
 * 28 entries and grows in up to 256 segments, each by 15 % at 95 % load, so
 * that its memory follows its keys (about 22 bits a key); a query reads one
 * bin (and, for about 3 % of the keys, a spare's slots).  Its rate, about
 * 0.02 % at 1e6 keys and 0.05 % at 1e8 grown from 1,000, stays far under any
 * target from 0.001 to 0.5 (cfg.fpp is recorded; cfg.fingerprint_bits, 5 to
 * 15, default 15, shortens the entries: for tests).  An add waits in a ring of
 * 16 keys while its bin is fetched (queries read the ring too).  Keys cannot
 * be removed. */
AMQ_API void amq_config_init(amq_config *cfg, uint32_t kind);

typedef struct amq_filter amq_filter;

/* Creates an empty filter.  AMQ_OK; AMQ_EKIND (an unknown kind),
 * AMQ_ERANGE (bad sizes: capacity 0, fpp outside (0, 1), a bits_per_key
 * that is NaN, negative or above 1000, a size over the kind's limit, ...),
 * AMQ_EINVAL (fields that contradict each other, e.g. k without bits;
 * threads other than 0 or 1),
 * AMQ_EHASH (an algorithm or seed amq_hash_check refuses), AMQ_EUNSUPPORTED
 * (a static kind: amq_filter_build makes those), AMQ_ELIMIT (a scalable
 * Bloom filter whose first link cannot exist), AMQ_EOVERFLOW (an aging
 * filter over 2^46 bytes), AMQ_ENOMEM.  err may be NULL; when it is not,
 * every error leaves a message in it. */
AMQ_API int amq_filter_new(const amq_config *cfg, amq_filter **out, amq_errinfo *err);
/* Releases the filter (and unmaps its file); NULL is a no-op. */
AMQ_API void amq_filter_free(amq_filter *f);

/* The filter's amq_kind; 1 if it is read-only (mapped or borrowed: its
 * writers return AMQ_EREADONLY), else 0. */
AMQ_API uint32_t amq_filter_kind(const amq_filter *f);
AMQ_API int amq_filter_is_readonly(const amq_filter *f);

/* The hash of a key, by the filter's algorithm and seed. */
AMQ_API amq_hash128 amq_filter_hash(const amq_filter *f, const void *key, size_t len);

/*
 * add: 1 if the key was added as new, 0 if the filter reports it may
 * already be present (Bloom kinds: no bit changed; it is still "in"),
 * negative on error: AMQ_EFULL (a full fixed-size filter; nothing changed),
 * AMQ_EREADONLY (an mmap'd filter), AMQ_ENOMEM and AMQ_ELIMIT (a growing
 * filter that cannot grow: out of memory, or at its limit of links;
 * nothing changed), AMQ_ECHECKSUM (a partitioned filter's partition that
 * failed its lazy verification), AMQ_EUNSUPPORTED (a static kind),
 * AMQ_ERANGE (a slice of a partitioned filter given a key of another
 * slice, amq/partitioned.h; nothing changed).
 * contains: 1 may be present, 0 certainly absent.
 * remove: 1 removed, 0 not found, AMQ_EUNSUPPORTED for Bloom and static
 *   kinds, AMQ_EREADONLY for a read-only filter.
 *   Removing a key that was never added is undefined: it may remove another
 *   key's fingerprint.
 */
AMQ_API int amq_filter_add(amq_filter *f, const void *key, size_t len);
AMQ_API int amq_filter_contains(const amq_filter *f, const void *key, size_t len);
AMQ_API int amq_filter_remove(amq_filter *f, const void *key, size_t len);
AMQ_API int amq_filter_add_hash(amq_filter *f, amq_hash128 h);
AMQ_API int amq_filter_contains_hash(const amq_filter *f, amq_hash128 h);
AMQ_API int amq_filter_remove_hash(amq_filter *f, amq_hash128 h);

/*
 * Batched forms over n hashes, for kinds that keep memory reads in flight.
 * add_batch stores each add's result (1 or 0) in added[i] when added is not
 * NULL and stops at the first error, which it returns (items before it are
 * added); AMQ_OK otherwise.  contains_batch stores 1 or 0 in out[i] and
 * returns AMQ_OK.
 */
AMQ_API int amq_filter_add_batch(amq_filter *f, const amq_hash128 *h, size_t n,
                                 uint8_t *added);
AMQ_API int amq_filter_contains_batch(const amq_filter *f, const amq_hash128 *h, size_t n,
                                      uint8_t *out);

/*
 * Concurrency mode of adds, for the kinds that have one (blocked,
 * partitioned: the modes are described in amq/blocked_bloom.h): on = 1 lets any number of
 * threads add and query at once.  AMQ_OK, AMQ_EREADONLY for a read-only
 * filter, AMQ_EUNSUPPORTED for kinds whose adds always need exclusive
 * access.  Needs exclusive access itself: switch before sharing f.
 */
AMQ_API int amq_filter_set_concurrent(amq_filter *f, int on);

/* Union (dst gains every key of src) and intersection, for filters of the
 * same kind and geometry: AMQ_OK; AMQ_EINCOMPAT with err->msg saying what
 * differs, AMQ_EUNSUPPORTED for kinds that cannot, AMQ_EREADONLY for a
 * read-only dst.  The item count afterwards is an
 * estimate from the bits (Swamidass-Baldi), so that a key of both counts
 * once: for a union, within [the larger count, the sum], and the larger
 * count when src adds no bit (a filter merged with itself keeps its count).
 * O(size of the arrays). */
AMQ_API int amq_filter_merge(amq_filter *dst, const amq_filter *src, amq_errinfo *err);
AMQ_API int amq_filter_intersect(amq_filter *dst, const amq_filter *src, amq_errinfo *err);

/* Empties the filter (keeps its geometry).  AMQ_OK; AMQ_EREADONLY (a
 * read-only filter), AMQ_EUNSUPPORTED (a static kind), AMQ_ENOMEM (the
 * expandable kind, which goes back to its starting size). */
AMQ_API int amq_filter_clear(amq_filter *f);

/* A writable deep copy (also of an mmap'd filter).  AMQ_OK; AMQ_ENOMEM,
 * AMQ_ECHECKSUM (a partitioned filter opened with AMQ_OPEN_TRUST whose
 * partition fails its checksum: verified before copying). */
AMQ_API int amq_filter_clone(const amq_filter *f, const amq_allocator *alloc,
                             amq_filter **out);

/* Numbers every kind has.  0 where a number does not apply. */
typedef struct amq_stats {
    uint32_t kind;
    uint32_t hash_algo;
    uint64_t seed;
    uint64_t items;        /* items added (minus removed) */
    uint64_t capacity;     /* items it was sized for (scalable: current total) */
    uint64_t bytes;        /* bytes of filter data */
    uint64_t bits;         /* Bloom kinds: bits of the array */
    uint32_t hashes;       /* Bloom kinds: probes per key */
    double fpp_target;     /* false-positive rate at capacity */
    double fpp_now;        /* expected false-positive rate now */
    double fill;           /* fraction of bits set / slots used */
    double bits_per_item;  /* bytes * 8 / items (0 when empty) */
} amq_stats;

/* Fills st. */
AMQ_API void amq_filter_stats(const amq_filter *f, amq_stats *st);

/*
 * Kind-specific description: calls fn once per field (name, value) in a
 * fixed order - "bits", "hashes", "probe", ... - for `amq info`.  Stops and
 * returns fn's value when it is non-zero; else AMQ_OK.  AMQ_EINVAL if f or
 * fn is NULL.
 */
typedef enum amq_field_type {
    AMQ_FIELD_U64 = 1,
    AMQ_FIELD_F64 = 2,
    AMQ_FIELD_STR = 3
} amq_field_type;

typedef struct amq_field {
    const char *name;
    uint32_t type;
    uint64_t u64;
    double f64;
    const char *str;
} amq_field;

typedef int (*amq_field_fn)(void *ctx, const amq_field *field);
/* AMQ_OK, AMQ_EINVAL (f or fn NULL), or fn's first non-zero value. */
AMQ_API int amq_filter_describe(const amq_filter *f, amq_field_fn fn, void *ctx);

/* ---- files and bytes ---------------------------------------------------- */

/* amq_filter_open flags. */
#define AMQ_OPEN_MMAP 1u  /* map read-only and query in place (no copy) */
#define AMQ_OPEN_TRUST 2u /* skip the payload checksum (the header's is always
                             checked); a query then reads only what it needs */

/*
 * Opens a filter file.  Without AMQ_OPEN_MMAP the filter is copied into
 * memory and is writable; with it, the filter is read-only: a view of the
 * mapping, valid until amq_filter_free (kinds that cannot be queried in
 * place - the scalable kinds - and files that cannot be mapped - pipes -
 * are copied, and read-only all the same; a pipe's bytes, and the journal
 * of an in-place add cut short (amq/inplace.h), are read into memory from
 * alloc first; a journal that cannot be read fails the open with AMQ_EIO,
 * as the file read without it may be half written); another program truncating the
 * file meanwhile makes its queries fault (SIGBUS), as for any mapping.  A payload checksum mismatch is
 * read once more after taking the file's lock shared: an add in place (the
 * tool's, amq_filter_save's) holds it while it writes, so the open waits
 * for that writer rather than report its writes as damage.  AMQ_OK; every error names what is
 * wrong in err->msg: AMQ_EIO (with sys_errno), AMQ_EMAGIC, AMQ_EVERSION,
 * AMQ_EKIND, AMQ_ETRUNC, AMQ_ECORRUPT, AMQ_ECHECKSUM, AMQ_EOVERFLOW,
 * AMQ_ENOMEM.
 */
AMQ_API int amq_filter_open(const char *path, unsigned flags, const amq_allocator *alloc,
                            amq_filter **out, amq_errinfo *err);

/* amq_filter_save flags. */
#define AMQ_SAVE_EXCL 1u /* fail with AMQ_EEXIST if path exists */

/*
 * Saves atomically: writes a temporary file in path's directory, fsyncs it,
 * renames it over path and fsyncs the directory.  A crash at any moment
 * leaves the old file or the new one; a failure (AMQ_EIO, AMQ_ENOSPC,
 * AMQ_ENOMEM) leaves the old file untouched and removes the temporary one.
 * The rules of the amq tool: a symlink is followed (its target replaced);
 * an existing file is replaced only if it is an amq filter (AMQ_EEXIST
 * otherwise: a text file is never lost to a swapped argument; AMQ_EIO when
 * it cannot be read), writable
 * (AMQ_EIO, sys_errno EACCES) and without other hard links (AMQ_EIO,
 * EMLINK); it is locked (flock) until replaced, so that saves and `amq add`
 * on one file serialize; its permission bits and owner are kept; a device
 * (/dev/null) is written straight.  This is the tool's writer too
 * (amq_target in <amq/advanced.h>).  Its memory - the target's paths
 * (about 12 KiB) and scratch (about 64 KiB; a partitioned filter's index
 * and, in concurrent mode, a 64 KiB copy more; to a device, the whole file,
 * made in memory first) - comes from the filter's allocator.
 */
AMQ_API int amq_filter_save(const amq_filter *f, const char *path, unsigned flags,
                            amq_errinfo *err);

/* Size of the serialized form (the file's bytes: AMQ_OK, AMQ_EOVERFLOW
 * when it would not fit a size_t) and serialization into a caller buffer
 * (AMQ_OK; AMQ_EINVAL if cap is too small, AMQ_ENOMEM if the filter's
 * allocator cannot give the scratch (amq_filter_save) - buf is then undefined -,
 * AMQ_EOVERFLOW as the size). */
AMQ_API int amq_filter_serialized_size(const amq_filter *f, size_t *size);
AMQ_API int amq_filter_serialize(const amq_filter *f, void *buf, size_t cap,
                                 size_t *written);

/*
 * Reads a filter from bytes.  flags: AMQ_OPEN_TRUST as for files;
 * AMQ_OPEN_MMAP here means "borrow": the filter is a read-only view of buf,
 * which must outlive it (a kind that cannot borrow copies, and the filter
 * is read-only all the same).  Validates everything: any bytes give an error or
 * a filter, never a crash.  AMQ_OK; AMQ_EMAGIC, AMQ_EVERSION, AMQ_EKIND,
 * AMQ_ETRUNC, AMQ_ECORRUPT, AMQ_ECHECKSUM, AMQ_EOVERFLOW (a size this
 * host cannot hold), AMQ_ENOMEM, each with err->msg.
 */
AMQ_API int amq_filter_deserialize(const void *buf, size_t len, unsigned flags,
                                   const amq_allocator *alloc, amq_filter **out,
                                   amq_errinfo *err);

/* The kind's own handle behind the generic one - the filter's object when
 * it is of that kind, else NULL; owned by f - for what only the family
 * header says (amq/blocked_bloom.h: concurrency details; amq/partitioned.h:
 * partition details and verification; amq/bloom.h: Guava export). */
struct amq_bloom;
struct amq_blocked;
struct amq_partitioned;
AMQ_API struct amq_bloom *amq_filter_bloom(amq_filter *f);
AMQ_API struct amq_blocked *amq_filter_blocked(amq_filter *f);
AMQ_API struct amq_partitioned *amq_filter_partitioned(amq_filter *f);

/* Wraps a classic filter (ownership passes to the new handle, also on
 * failure).  AMQ_ENOMEM. */
AMQ_API int amq_filter_from_bloom(struct amq_bloom *b, amq_filter **out);

/* Wraps a partitioned filter (from amq_partitioned_build; ownership passes
 * to the new handle, also on failure).  AMQ_ENOMEM. */
AMQ_API int amq_filter_from_partitioned(struct amq_partitioned *p, amq_filter **out);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_FILTER_H */
