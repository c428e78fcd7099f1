/*
 * amq/scalable_bloom.h - the scalable Bloom filter: a chain of classic
 * Bloom filters ("links") that grows as items arrive.
 *
 * In RedisBloom mode it is RedisBloom's BF data type (the compatibility
 * spec), byte for byte:
 *  - keys hash with AMQ_HASH_REDISBLOOM (a = MurmurHash64A(key,
 *    0xc6a4a7935bd1e995), b = MurmurHash64A(key, a)); every link is an
 *    amq_bloom with AMQ_BLOOM_PROBE_REDISBLOOM: probe i sets bit
 *    ((a + i b) mod 2^64) mod bits;
 *  - a link for (entries n, error e): bpe = -ln(e) / 0.480453013918201,
 *    bits = floor(n bpe) (at least 1) rounded up to a multiple of 64,
 *    bytes = bits / 8, hashes = ceil(0.693147180559945 bpe);
 *  - the first link has error e / 2 (e when non-scaling) and capacity n;
 *    each new link halves the error and multiplies the capacity by the
 *    growth factor (default 2);
 *  - add: 0 if any link (newest first) may contain the key; else, if the
 *    newest link holds as many items as its capacity, a new link (a
 *    non-scaling filter answers AMQ_EFULL); the key's bits are set in the
 *    newest link and it counts (1) only if a bit changed.
 * Native mode keeps the chain with the library's better choices: any
 * amq_hash_algo (XXH3 by default), the native probe scheme
 * (multiply-shift ranges, enhanced double hashing), links sized as
 * amq_bloom_size_fpp does (no rounding to 64 bits), and a tightening ratio
 * of 0.8 instead of 0.5 (first link e * 0.2, then x 0.8: the rates still
 * sum to at most e, and the many large late links pay ~0.3 bit per item
 * less per level than with halving).
 *
 * Statuses: AMQ_EFULL ("non scaling filter is full"), AMQ_ELIMIT (the next
 * link cannot exist: its capacity overflows, its error underflows, it
 * would need more than AMQ_BLOOM_MAX_K_REDISBLOOM probes (RedisBloom
 * mode; 255 otherwise) or 2^43 bits - RedisBloom's "ERR problem
 * inserting into filter"), AMQ_ENOMEM.
 *
 * Thread safety: any number of threads may call the const functions at the
 * same time; everything else needs exclusive access.
 */
#ifndef AMQ_SCALABLE_BLOOM_H
#define AMQ_SCALABLE_BLOOM_H

#include "amq.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct amq_sbloom amq_sbloom;

/* RedisBloom's option bits. */
#define AMQ_SBLOOM_NOROUND 1u      /* bit counts not rounded to powers of two */
#define AMQ_SBLOOM_ENTS_IS_BITS 2u /* entries given in bits (never by new filters) */
#define AMQ_SBLOOM_FORCE64 4u      /* 64-bit hashing (every filter since 2018) */
#define AMQ_SBLOOM_NO_SCALING 8u   /* never add a link */
#define AMQ_SBLOOM_OPTIONS_MASK 15u

/* At most this many links are ever loaded or made (RedisBloom's chains end
 * where the halved error rate underflows, by ~1075 links). */
#define AMQ_SBLOOM_MAX_LINKS 2048u
/* RedisBloom's sizing constants. */
#define AMQ_SBLOOM_LN2_SQUARED 0.480453013918201
#define AMQ_SBLOOM_LN2 0.693147180559945

typedef struct amq_sbloom_params {
    uint64_t capacity;  /* items of the first link, >= 1 */
    double error;       /* target rate in (0, 1) */
    uint32_t growth;    /* capacity factor per new link, >= 1 (ignored when non-scaling) */
    uint32_t options;   /* AMQ_SBLOOM_* (RedisBloom mode: NOROUND | FORCE64 [| NO_SCALING]) */
    uint32_t redisbloom; /* 1: RedisBloom mode */
    uint32_t hash_algo; /* native mode: amq_hash_algo */
    uint64_t seed;      /* native mode: hash seed */
} amq_sbloom_params;

/* Defaults: capacity 100, error 0.01, growth 2, options NOROUND | FORCE64;
 * RedisBloom hashing, or XXH3 seed 0 in native mode. */
AMQ_API void amq_sbloom_params_init(amq_sbloom_params *p, int redisbloom);

/* One link, as BF.DEBUG and the RDB and SCANDUMP formats describe it. */
typedef struct amq_sbloom_link_info {
    uint64_t entries; /* capacity */
    double error;
    double bpe;       /* bits per entry */
    uint64_t bits;
    uint64_t bytes;
    uint32_t hashes;
    uint32_t n2;      /* log2(bits) for power-of-two links, else 0 */
    uint64_t items;   /* "size": adds that set a bit */
} amq_sbloom_link_info;

/*
 * RedisBloom's sizing of a link for (entries, error), computed without
 * allocating (fills every field but items).  AMQ_ERANGE for entries 0,
 * error outside (0, 1) or options with ENTS_IS_BITS; AMQ_ELIMIT when the
 * link would need more than AMQ_BLOOM_MAX_K_REDISBLOOM hashes or 2^43 bits.  O(1).
 * (1e-6 / 300,000,000 scaling: error 5e-7 -> 1132420136 bytes.)
 */
AMQ_API int amq_sbloom_link_sizing(uint64_t entries, double error, uint32_t options,
                                   amq_sbloom_link_info *out);

/* Creates a filter with its first link.  AMQ_ERANGE (bad capacity, error,
 * growth 0 when scaling, unknown options, RedisBloom mode without
 * FORCE64 | NOROUND), AMQ_ELIMIT, AMQ_EHASH, AMQ_ENOMEM. */
AMQ_API int amq_sbloom_new(const amq_sbloom_params *p, const amq_allocator *alloc,
                           amq_sbloom **out);
AMQ_API int amq_sbloom_clone(const amq_sbloom *s, const amq_allocator *alloc,
                             amq_sbloom **out);
AMQ_API void amq_sbloom_free(amq_sbloom *s);

AMQ_API amq_hash128 amq_sbloom_hash(const amq_sbloom *s, const void *key, size_t len);

/* BF.ADD: 1 added (a bit changed), 0 may already exist, AMQ_EFULL,
 * AMQ_ELIMIT, AMQ_ENOMEM (nothing changed on error).  O(links * k). */
AMQ_API int amq_sbloom_add(amq_sbloom *s, const void *key, size_t len);
AMQ_API int amq_sbloom_add_hash(amq_sbloom *s, amq_hash128 h);
/* BF.EXISTS: 1 may exist, 0 certainly not.  O(links * k). */
AMQ_API int amq_sbloom_contains(const amq_sbloom *s, const void *key, size_t len);
AMQ_API int amq_sbloom_contains_hash(const amq_sbloom *s, amq_hash128 h);

/* ---- information (BF.INFO, BF.DEBUG, BF.CARD) ------------------------------ */

typedef struct amq_sbloom_info {
    uint64_t size;      /* BF.INFO Size: 32 + 64 * links + sum of link bytes */
    uint64_t capacity;  /* sum of link entries */
    uint64_t items;     /* sum of link sizes (BF.CARD) */
    uint64_t num_filters;
    uint64_t bytes;     /* sum of link bytes */
    uint32_t growth;    /* expansion rate (nil for non-scaling in BF.INFO) */
    uint32_t options;
    uint32_t redisbloom;
} amq_sbloom_info;

AMQ_API void amq_sbloom_get_info(const amq_sbloom *s, amq_sbloom_info *out);
AMQ_API void amq_sbloom_get_params(const amq_sbloom *s, amq_sbloom_params *out);

/* Link i (0 = oldest) and its bit array (info.bytes bytes).
 * AMQ_ERANGE for i >= links. */
AMQ_API int amq_sbloom_link(const amq_sbloom *s, uint32_t i, amq_sbloom_link_info *out,
                            const uint8_t **data);
/* Its writable bit array: how an RDB loader fills a filter built by
 * amq_sbloom_from_raw. */
AMQ_API int amq_sbloom_link_data_mut(amq_sbloom *s, uint32_t i, uint8_t **data, size_t *len);

/* ---- construction from raw fields (RDB load, LOADCHUNK header) --------------- */

typedef struct amq_sbloom_header {
    uint64_t size;     /* items, the sum of the links' items */
    uint32_t nfilters;
    uint32_t options;
    uint32_t growth;
} amq_sbloom_header;

/*
 * A RedisBloom-mode filter with zeroed links from raw fields (links[0..
 * nfilters)).  Validates everything before allocating: 1 <= nfilters <=
 * AMQ_SBLOOM_MAX_LINKS; no unknown option bits; FORCE64 set (older 32-bit
 * hashing is not supported: AMQ_EUNSUPPORTED); growth <= 32768 and >= 1
 * unless NO_SCALING; per link: entries >= 1, error in (0, 1), bpe finite
 * and > 0, hashes in [1, AMQ_BLOOM_MAX_K_REDISBLOOM] (RedisBloom mode;
 * 255 otherwise), bits a nonzero multiple of 64 up to 2^43,
 * bytes = bits / 8, n2 = 0 or bits = 2^n2, items <= entries; the items
 * summing (without overflow) to size.  AMQ_ECORRUPT for bad fields.
 */
AMQ_API int amq_sbloom_from_raw(const amq_sbloom_header *h, const amq_sbloom_link_info *links,
                                const amq_allocator *alloc, amq_sbloom **out);

/* ---- RedisBloom dump format (BF.SCANDUMP / BF.LOADCHUNK) -------------------- */
/*
 * Header chunk (iterator 0 answers [1, header]), little-endian, packed:
 * u64 size, u32 nfilters, u32 options, u32 growth, then per link 53 bytes:
 * u64 bytes, u64 bits, u64 size, f64 error, f64 bpe, u32 hashes,
 * u64 entries, u8 n2.
 * Data chunks: the link bit arrays concatenated; iterator it >= 1 answers
 * the bytes from offset it - 1 to the end of the link holding it, at most
 * max_chunk of them, next iterator it + len; past the end len 0, next 0
 * (RedisBloom answers [0, ""]).  LOADCHUNK it data writes at offset
 * it - len - 1, inside one link.  Native-mode filters have no such form.
 */
/*
 * amq_sbloom_from_raw whose links adopt arrays[i] (links[i].bytes bytes
 * each, taken from alloc, any alignment) instead of new zeroed arrays: a
 * host that has read the bit arrays (a Redis RDB load) hands them over
 * rather than holding every link twice.  Every array is taken whatever
 * the outcome: owned by the filter on AMQ_OK, freed through alloc on an
 * error.  Errors as amq_sbloom_from_raw.
 */
AMQ_API int amq_sbloom_from_raw_owning(const amq_sbloom_header *h,
                                       const amq_sbloom_link_info *links, void **arrays,
                                       const amq_allocator *alloc, amq_sbloom **out);

#define AMQ_SBLOOM_HEADER_FIXED 20
#define AMQ_SBLOOM_HEADER_LINK 53
#define AMQ_SBLOOM_MAX_CHUNK ((size_t)16 << 20)

/* Bytes of the header chunk: 20 + 53 * links. */
AMQ_API size_t amq_sbloom_header_size(const amq_sbloom *s);
/* Writes it.  AMQ_EINVAL for cap too small, AMQ_EUNSUPPORTED (native). */
AMQ_API int amq_sbloom_header_encode(const amq_sbloom *s, uint8_t *buf, size_t cap);
/* LOADCHUNK 1: parses a header chunk (len must be exactly 20 + 53 n) and
 * builds the zeroed filter by amq_sbloom_from_raw.  AMQ_ETRUNC,
 * AMQ_ECORRUPT, AMQ_EUNSUPPORTED, AMQ_ENOMEM. */
AMQ_API int amq_sbloom_header_load(const uint8_t *buf, size_t len, const amq_allocator *alloc,
                                   amq_sbloom **out);
/* Data chunk at iterator it >= 1 (AMQ_ERANGE for 0); max_chunk 0 means
 * AMQ_SBLOOM_MAX_CHUNK.  *data points into the filter. */
AMQ_API int amq_sbloom_chunk(const amq_sbloom *s, uint64_t it, size_t max_chunk,
                             const uint8_t **data, size_t *len, uint64_t *next);
/* LOADCHUNK of a data chunk: AMQ_ERANGE when offset it - len - 1 is in no
 * link ("invalid offset - no link found"), AMQ_EOVERFLOW when the chunk
 * runs past its link's end ("invalid chunk - Too big for current
 * filter").  Nothing is written on error. */
AMQ_API int amq_sbloom_chunk_apply(amq_sbloom *s, uint64_t it, const uint8_t *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* AMQ_SCALABLE_BLOOM_H */
