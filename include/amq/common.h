/*
 * amq/common.h - what every libamq header shares: version macros, the
 * export macro, the status codes, the allocation hooks, error details and
 * amq_slice.  Included by every other header; <amq.h> includes them all.
 *
 * Conventions of the whole API (the glossary of docs/api.md):
 *  - a function that can fail returns an int status: AMQ_OK (0) or a
 *    negative AMQ_E* code; amq_strerror() turns it into text; its comment
 *    lists every status it returns (scripts/check-errors.py checks that
 *    each one has such a list);
 *  - bytes, items and slots are three words: a byte size is a size_t, a
 *    count of keys (items) or of cuckoo slots a uint64_t; a function that
 *    cannot fail returns the size or count itself (amq_cuckoo_count,
 *    amq_bloom_items), one that can fail returns a status and hands it out
 *    through a size_t * or uint64_t * (amq_filter_serialized_size); struct
 *    fields are fixed-width (uint64_t) on every host;
 *  - a membership predicate (*_contains) returns 1 ("may be present") or 0
 *    ("certainly absent") and nothing else; a query that can fail on its
 *    input (amq_policy_contains) returns a status and the answer through an
 *    int * out-parameter, so that no error reads as "may be present";
 *  - one verb per idea across families: _new/_free, _add/_contains/_remove
 *    (a key) and _add_hash/_contains_hash/_remove_hash (its amq_hash128),
 *    _add_batch/_contains_batch (n hashes), _merge, _clear, _is_readonly;
 *    _serialize/_deserialize (a filter to bytes and back: the bytes of a
 *    whole filter, or of a part such as a RedisBloom header chunk, and a
 *    new filter from them), _serialized_size (their byte size),
 *    _decode (bytes into a caller's struct); <result>_for (sizing: the
 *    geometry for n items at a rate - amq_bloom_params_for,
 *    amq_aging_info_for), _init (defaults into a caller's struct); _build
 *    (a filter from all its keys at once); _check (is it valid), _verify
 *    (checksums);
 *    _get_params, _get_info, amq_filter_stats, amq_filter_describe
 *    (introspection); _data, _data_mut, _data_size, _view (raw arrays);
 *  - fpp (not "error"), expansion (not "growth"), max_kicks (not
 *    "max_iterations"), link (one filter of a scalable chain, not
 *    "sub-filter");
 *  - handles are opaque, created by amq_<family>_new() and released by
 *    amq_<family>_free(); free(NULL) is a no-op;
 *  - the library never prints, exits or aborts on anything a caller
 *    controls.
 * Format internals and raw access (RedisBloom dump fields, writable
 * arrays, views over caller bytes, query-path selection) are in
 * <amq/advanced.h>, which may change between minor versions.
 */
#ifndef AMQ_COMMON_H
#define AMQ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ------------------------------------------------------------ */
#define AMQ_VERSION_MAJOR 0
#define AMQ_VERSION_MINOR 3
#define AMQ_VERSION_PATCH 0
#define AMQ_VERSION_NUMBER \
    (AMQ_VERSION_MAJOR * 10000 + AMQ_VERSION_MINOR * 100 + AMQ_VERSION_PATCH)
#define AMQ_STRINGIFY_(x) #x
#define AMQ_STRINGIFY(x) AMQ_STRINGIFY_(x)
#define AMQ_VERSION_STRING            \
    AMQ_STRINGIFY(AMQ_VERSION_MAJOR)  \
    "." AMQ_STRINGIFY(AMQ_VERSION_MINOR) "." AMQ_STRINGIFY(AMQ_VERSION_PATCH)

/* ---- export macro ------------------------------------------------------- */
/* The library is built with -fvisibility=hidden; only AMQ_API symbols are
 * exported from libamq.so. */
#if defined(AMQ_BUILDING_LIBRARY) && (defined(__GNUC__) || defined(__clang__))
#define AMQ_API __attribute__((visibility("default")))
#else
#define AMQ_API
#endif

/* ---- deprecation -------------------------------------------------------- */
/* Marks a name kept for one minor version after a rename (amq/compat.h). */
#if defined(__GNUC__) || defined(__clang__)
#define AMQ_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define AMQ_DEPRECATED(msg)
#endif
/* A struct field renamed in 0.3: the new name and, until 0.4, the old one as
 * a deprecated alias of the same storage (a C11 anonymous union). */
#define AMQ_RENAMED_FIELD(type, name, old) \
    union {                                \
        type name;                         \
        type old AMQ_DEPRECATED("renamed " #name " (docs/api.md)"); \
    }

/* ---- status codes ------------------------------------------------------- */
/* One table generates the enum and the strings.  Values are pinned: a
 * released value never changes meaning; new codes are appended. */
#define AMQ_STATUS_MAP(X)                                                   \
    X(OK, 0, "success")                                                     \
    X(EINVAL, -1, "invalid argument")                                       \
    X(ENOMEM, -2, "out of memory")                                          \
    X(EFULL, -3, "filter is full")                                          \
    X(ECORRUPT, -4, "corrupt data")                                         \
    X(ETRUNC, -5, "truncated data")                                         \
    X(EVERSION, -6, "unsupported format version")                           \
    X(EKIND, -7, "wrong or unknown filter kind")                            \
    X(EIO, -8, "input/output error")                                        \
    X(EINCOMPAT, -9, "incompatible filters")                                \
    X(ENOTFOUND, -10, "item not found")                                     \
    X(ERANGE, -11, "parameter out of range")                                \
    X(EOVERFLOW, -12, "size overflows")                                     \
    X(ECHECKSUM, -13, "checksum mismatch")                                  \
    X(EUNSUPPORTED, -14, "operation not supported by this kind of filter")  \
    X(EREADONLY, -15, "filter is read-only")                                \
    X(EMAGIC, -16, "not an amq filter file")                                \
    X(EEXIST, -17, "file exists")                                           \
    X(ENOSPC, -18, "no space left on device")                               \
    X(EHASH, -19, "unknown hash algorithm")                                 \
    X(ELIMIT, -20, "limit reached")

typedef enum amq_status {
#define AMQ_STATUS_ENUM_(name, value, text) AMQ_##name = (value),
    AMQ_STATUS_MAP(AMQ_STATUS_ENUM_)
#undef AMQ_STATUS_ENUM_
} amq_status;

/* Text of a status code; never NULL (unknown codes give "unknown error").
 * This and the three functions below return constant data: any thread. */
AMQ_API const char *amq_strerror(int status);

/* Name of a status code without the AMQ_ prefix ("ENOMEM"), or NULL. */
AMQ_API const char *amq_status_name(int status);

/* "0.3.0" for this build of the library (may differ from the header's
 * AMQ_VERSION_STRING when a program runs against a newer libamq.so). */
AMQ_API const char *amq_version_string(void);
AMQ_API unsigned amq_version_number(void);

/* ---- allocation hooks --------------------------------------------------- */
/*
 * Every object takes an optional allocator at creation (NULL = the default,
 * malloc/free, with large zeroed buffers taken from mmap and advised to use
 * transparent huge pages).  A host such as the Redis module routes memory
 * through its own allocator this way; the library keeps the allocator in
 * the object and uses it for everything that object allocates.
 *
 *  alloc(opaque, size)       returns size bytes (not necessarily zeroed),
 *                            or NULL on failure; never called with size 0;
 *  free(opaque, ptr, size)   releases a block from alloc, size as requested;
 *  zalloc(opaque, size)      optional (may be NULL): returns size zeroed
 *                            bytes, released by free.  Filter arrays are
 *                            taken from it instead of alloc + memset, so a
 *                            host whose allocator hands out fresh zero
 *                            pages for large blocks (calloc) does not touch
 *                            every page of a large filter up front.
 *
 * The library aligns large buffers itself (it over-allocates), so alloc need
 * only return malloc-aligned memory.  Functions are called from the thread
 * that calls into the library - from several threads at once when several
 * threads use objects sharing one allocator, or read one filter at the
 * same time (amq_filter_save and _serialize take scratch memory from the
 * filter's allocator): hooks shared that way must be thread-safe.
 */
typedef struct amq_allocator {
    void *(*alloc)(void *opaque, size_t size);
    void (*free)(void *opaque, void *ptr, size_t size);
    void *opaque;
    void *(*zalloc)(void *opaque, size_t size);
} amq_allocator;

/* ---- error details -------------------------------------------------------- */
/*
 * Functions that read files or decode untrusted bytes also take an optional
 * amq_errinfo to say what exactly was wrong ("payload checksum mismatch",
 * "file is 1000 bytes, header says 2048").  msg is always NUL-terminated;
 * sys_errno is the errno of a failed system call, else 0.
 */
typedef struct amq_errinfo {
    int status;
    int sys_errno;
    char msg[256];
} amq_errinfo;

/* ---- keys ------------------------------------------------------------------ */
/* A key as (data, len): the batched key forms and the filter policy take
 * arrays of them.  The library only reads data. */
typedef struct amq_slice {
    const void *data;
    size_t len;
} amq_slice;

#ifdef __cplusplus
}
#endif

#endif /* AMQ_COMMON_H */
