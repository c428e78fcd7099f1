/*
 * static_filter.h - what the static kinds (fuse, ribbon) share: the object,
 * its partitions, and the table through which the shared code (builder,
 * codec, generic adapter: static_filter.c) calls a kind's algorithm.
 * Internal: not installed.
 *
 * A static filter holds P = 2^pbits partitions; a key's partition is the
 * top pbits of h1, and inside it every position and fingerprint derive
 * from x = amq_mix64(h1 ^ seed * GOLDEN), seed being the partition's own
 * (a failed construction retries with the next seed).  Only h1 is used,
 * so a build spills 8 bytes per key.
 */
#ifndef AMQ_STATIC_FILTER_H
#define AMQ_STATIC_FILTER_H

#include "amq.h"
#include "amq/filter.h"
#include "amq/fuse_view.h"
#include "common/alloc.h"
#include "kind.h"

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#define AMQ_STATIC_GOLDEN UINT64_C(0x9e3779b97f4a7c15)
#define AMQ_STATIC_MAX_PBITS 20u
/* An unsorted build's answer: sort and dedup the keys, then try again
 * (internal; not a status of the API). */
#define AMQ_STATIC_RESORT 1

/* One partition, decoded from the index with its query constants. */
typedef struct amq_static_part {
    /* what a query reads first */
    const uint8_t *data; /* its bytes (64-byte aligned) */
    uint64_t mulseed;    /* seed * AMQ_STATIC_GOLDEN */
    uint64_t span;       /* fuse: segment_count * segment_length; ribbon: starts */
    uint32_t nomix;      /* fuse: x is h1 itself (amq_static_fuse_x) */
    uint32_t hshift;     /* fuse: h0 from x << hshift (pbits when nomix, else 0) */
    uint32_t mask;       /* fuse: segment_length - 1 */
    uint32_t seglen;     /* fuse: segment_length */
    uint32_t upper;      /* ribbon: blocks whose starts use r + 1 columns */
    uint32_t hiblocks;   /* ribbon: blocks that store r + 1 columns */
    uint64_t bytes;
    uint64_t items;      /* distinct keys built into it */
    uint64_t slots;      /* positions (from prepare): no partition holds more keys */
    uint32_t seed;
    uint32_t g[3];       /* geometry as stored (meaning per kind) */
} amq_static_part;

typedef struct amq_static amq_static;

typedef struct amq_static_algo {
    uint32_t kind;
    const char *name;
    unsigned target_log2; /* keys per partition aimed at when choosing P */
    /* the same for a build whose keys all stayed in memory (0: target_log2) */
    unsigned target_log2_held;
    /* Checks and completes the variant from a config (fuse: fingerprint
     * bits, arity; ribbon: fpp -> r, alpha). */
    int (*variant)(amq_static *s, const amq_config *cfg, amq_errinfo *err);
    /* Geometry for n distinct keys at attempt a (0 first; later ones are
     * larger): fills p->g. */
    void (*size)(const amq_static *s, uint64_t n, unsigned attempt, amq_static_part *p);
    /* Bytes of a partition of geometry p->g holding p->items keys, after
     * validation; 0 with an invalid geometry.  Fills the query constants. */
    uint64_t (*prepare)(const amq_static *s, amq_static_part *p);
    /* Builds from n distinct sorted x values into out (p->bytes, zeroed):
     * AMQ_OK, AMQ_EFULL (retry with another seed or size), AMQ_ENOMEM.
     * With algo->unsorted, x may be in any order and hold duplicates: the
     * build then returns AMQ_STATIC_RESORT instead of AMQ_EFULL when it met
     * a duplicate or could not peel (the caller sorts and dedups, and tries
     * the same seed again). */
    int (*build)(const amq_static *s, const amq_static_part *p, const uint64_t *x, size_t n,
                 uint8_t *out);
    /* 1: build takes x unsorted (fuse: the order of its construction does
     * not change its bytes, and it orders the keys by segment itself). */
    int unsorted;
    int (*contains)(const amq_static *s, uint64_t h1);
    void (*contains_batch)(const amq_static *s, const amq_hash128 *h, size_t n, uint8_t *out);
    /* Optional: the query path this CPU takes (kept in amq_static.simd). */
    unsigned (*simd)(void);
    int (*describe)(const amq_static *s, amq_field_fn fn, void *ctx);
} amq_static_algo;

struct amq_static {
    const amq_static_algo *algo;
    uint32_t hash_algo;
    uint64_t seed;
    /* variant: stored in the parameter block */
    uint32_t v1;  /* fuse: fingerprint bits; ribbon: r (lower column count) */
    uint32_t v2;  /* fuse: arity; ribbon: 0 */
    double fpp;   /* the target (fuse: 2^-bits) */
    double alpha; /* ribbon: fraction of starts that use r + 1 columns */
    uint32_t derive; /* fuse: how x derives from h1 (parameter block, offset 12) */
    uint32_t pbits;
    uint32_t nparts;
    uint64_t items;
    /* fuse, while building: the count every partition is sized for (0:
     * each its own) */
    uint64_t size_n;
    /* fuse: bytes from one partition's data to the next when all take x =
     * h1, share one geometry and lie at that fixed stride (a query then
     * finds its partition by arithmetic); 0 otherwise */
    uint64_t stride;
    amq_static_part *parts;
    /* fuse: the partitions' query constants as amq_fuse_view reads them
     * (in parts' allocation; filled once the data is placed) */
    amq_fuse_view_part *vparts;
    amq_region *owned;  /* built: one region per partition */
    amq_region payload; /* loaded: the payload (owned copy or borrowed) */
    int view;
    unsigned simd; /* the query path (algo->simd) */
    amq_allocator alloc;
};

static inline const amq_static_part *amq_static_part_of(const amq_static *s, uint64_t h1)
{
    /* Two shifts: pbits == 0 gives partition 0 without a shift by 64. */
    return &s->parts[h1 >> (63 - s->pbits) >> 1];
}

static inline uint64_t amq_static_x(const amq_static_part *p, uint64_t h1)
{
    return amq_mix64(h1 ^ p->mulseed);
}

/* Fuse files of derivation 1 (docs/file-format.md) take x = h1 in every
 * partition built on its first seed, and the segment from the bits of h1
 * below the partition's (h1 << pbits): XXH3's and mulshift's h1 are
 * uniform in every bit already, and a second mix only costs every query
 * time.  A retried seed needs a new hypergraph: that partition mixes as
 * ribbon does. */
#define AMQ_FUSE_DERIVE_MIX 0u   /* x = amq_mix64(h1 ^ seed * GOLDEN) always */
#define AMQ_FUSE_DERIVE_PLAIN 1u /* ... except x = h1 as above */

/* The hashes whose fuse filters are written with derivation 1 (and the
 * only ones a reader accepts it with). */
static inline int amq_fuse_derive_plain_hash(uint32_t hash_algo)
{
    return hash_algo == AMQ_HASH_XXH3 || hash_algo == AMQ_HASH_MULSHIFT ||
           hash_algo == AMQ_HASH_VMULSHIFT;
}

static inline uint64_t amq_static_fuse_x(const amq_static_part *p, uint64_t h1)
{
    return p->nomix ? h1 : amq_static_x(p, h1);
}

/* A partition's query constants as amq_fuse_view takes them. */
static inline void amq_static_fuse_view_part(const amq_static_part *p, amq_fuse_view_part *v)
{
    v->data = p->data;
    v->span = p->span;
    v->mulseed = p->mulseed;
    v->seglen = p->seglen;
    v->hshift = p->hshift;
    v->mix = !p->nomix;
    v->reserved = 0;
}

/* Whether a partition of s built on seed takes x = h1. */
static inline uint32_t amq_static_nomix(const amq_static *s, uint32_t seed)
{
    return s->derive == AMQ_FUSE_DERIVE_PLAIN && seed == 0;
}

static inline uint64_t amq_static_mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* The key's h1 as amq_filter_hash gives it, XXH3 inlined: the one-key
 * entries (contains_key) skip the handle's call through amq_hash_key. */
static inline uint64_t amq_static_key_h1(const amq_static *s, const void *key, size_t len)
{
    if (s->hash_algo == AMQ_HASH_XXH3)
        return XXH3_128bits_withSeed(key, len, s->seed).low64;
    return amq_hash_key(s->hash_algo, s->seed, key, len).h1;
}

/* Fuse's batched query over n packed keys of key_len bytes, hashed in its
 * pipeline: out[i] (when not NULL) 1 or 0; returns the count of 1. */
uint64_t amq_fuse_contains_fixed(const amq_static *s, const void *keys, size_t key_len, size_t n,
                                 uint8_t *out);

/* The kinds' ops tables (static_kind.c) share everything but the algorithm. */
extern const amq_static_algo amq_fuse_algo;
extern const amq_static_algo amq_ribbon_algo;

/* The handle's query entries of each kind, straight to the variant's code
 * (fuse.c, ribbon.c), for their tables in static_kind.c; amq_fuse_key_entry
 * picks a fuse filter's one-key entry when the handle is made. */
int amq_fuse_ops_contains(const void *impl, amq_hash128 h);
int amq_fuse_ops_contains_key(const void *impl, const void *key, size_t len);
void amq_fuse_ops_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out);
amq_contains_key_fn amq_fuse_key_entry(const void *impl, const void **arg);
int amq_rib_ops_contains(const void *impl, amq_hash128 h);
int amq_rib_ops_contains_key(const void *impl, const void *key, size_t len);
void amq_rib_ops_contains_batch(const void *impl, const amq_hash128 *h, size_t n, uint8_t *out);

static inline uint64_t amq_static_align64(uint64_t v)
{
    return (v + 63) & ~(uint64_t)63;
}

/* The object's life cycle (static_filter.c), for the codec (static_kind.c):
 * free (NULL: nothing), a shell of 2^pbits zeroed partitions (AMQ_OK,
 * AMQ_ENOMEM), a fuse filter's view entries filled once the partitions'
 * data is placed, and the partitions' bytes, each padded to 64. */
void amq_static_free(amq_static *s);
int amq_static_shell(const amq_static_algo *algo, const amq_allocator *alloc, uint32_t pbits,
                     amq_static **out);
void amq_static_fill_views(amq_static *s);
uint64_t amq_static_data_size(const amq_static *s);

/* Copies the directory for a builder's temporary files into dir: tmpdir,
 * else $TMPDIR, else /tmp.  AMQ_EINVAL if it does not fit with room for the
 * files' names. */
int amq_builder_tmpdir(const char *tmpdir, char *dir, size_t cap);

/* The static kinds' part of amq_builder (builder.c): the keys' h1 held in
 * memory or spilled to 256 files by their top bits, then the partitions
 * built one at a time.  new refuses kinds that are not static (AMQ_EKIND).
 * new and finish (static_handle.c) pick the kind's algorithm and wrap the
 * built filter into a handle; start and build (static_filter.c) do the rest. */
typedef struct amq_static_builder amq_static_builder;
int amq_static_builder_new(const amq_config *cfg, const char *tmpdir, size_t memory,
                           amq_static_builder **out, amq_errinfo *err);
int amq_static_builder_start(const amq_static_algo *algo, const amq_config *cfg,
                             const char *tmpdir, size_t memory, amq_static_builder **out,
                             amq_errinfo *err);
void amq_static_builder_free(amq_static_builder *b);
int amq_static_builder_add_batch(amq_static_builder *b, const amq_hash128 *h, size_t n);
/* One key's h1 (amq_builder_add): an append while the held array has room. */
int amq_static_builder_add_h1(amq_static_builder *b, uint64_t h1);
/* Where amq_builder_add may write h1 values itself: the next free slot of
 * the held array and *room slots, the array first grown (within the memory
 * budget) when fewer than want are free; NULL when there is none
 * (spilled, broken, at the memory budget, out of memory: add_h1 then says
 * why).  commit records m of them written; any other call on b first. */
uint64_t *amq_static_builder_room(amq_static_builder *b, size_t want, size_t *room);
void amq_static_builder_commit(amq_static_builder *b, size_t m);
int amq_static_builder_finish(amq_static_builder *b, amq_filter **out, amq_errinfo *err);
/* The built filter, the caller's (its allocator is the builder's). */
int amq_static_builder_build(amq_static_builder *b, amq_static **out, amq_errinfo *err);

/* Builds' temporary files: one created in dir and unlinked at once (-1 on
 * failure); whole writes (AMQ_ENOSPC, AMQ_EIO) and reads at an offset
 * (AMQ_EIO, also for a short file). */
int amq_spill_open(const char *dir);
int amq_spill_write(int fd, const void *data, size_t len);
int amq_spill_read(int fd, void *data, size_t len, uint64_t off);

/* Filter-policy blobs of the static kinds (policy.c dispatches here, with
 * the algorithm of the blob's encoding). */
int amq_static_blob_size(const amq_static_algo *algo, size_t n, double bpk, size_t *size);
int amq_static_blob_build(const amq_static_algo *algo, uint32_t encoding, const amq_slice *keys,
                          size_t n, double bpk, uint8_t *out, size_t cap, size_t *written);
int amq_static_blob_match(const amq_static_algo *algo, const uint8_t *blob, size_t len,
                          const void *key, size_t key_len);

#endif /* AMQ_STATIC_FILTER_H */
