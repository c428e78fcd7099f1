/*
 * bench.h - what the benchmark driver (bench/bench.c) measures.
 *
 * A subject is one filter implementation - an amq kind or a peer library -
 * behind a uniform set of functions.  Subjects register themselves with
 * BENCH_SUBJECT (a constructor), one file each under bench/, so adding a
 * row never edits a shared list.  The driver generates the keys (random
 * 64-bit integers from a fixed seed), times insert / query-present /
 * query-absent for every subject on the same keys in the same run, and
 * prints ns per key, measured false-positive rate, bits per key, and the
 * ratios between rows.
 */
#ifndef AMQ_BENCH_H
#define AMQ_BENCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_subject {
    const char *name;   /* row label, e.g. "amq blocked, batched" */
    const char *family; /* "bloom", "blocked", "partitioned", "cuckoo", ... */
    int peer;           /* 1: another library, measured for comparison */
    /* An empty filter sized for n keys at false-positive rate fpp; NULL
     * when it cannot be built (too large, unsupported rate). */
    void *(*create)(uint64_t n, double fpp);
    void (*destroy)(void *f);
    /* Inserts keys[0..n); returns how many inserts failed (filter full). */
    uint64_t (*insert)(void *f, const uint64_t *keys, size_t n);
    /* How many of keys[0..n) the filter reports as possibly present. */
    uint64_t (*query)(void *f, const uint64_t *keys, size_t n);
    /* Bytes of filter data (for bits per key). */
    uint64_t (*bytes)(const void *f);
    /* Optional (NULL: not offered): an empty filter for n keys at a given
     * size in bits per key, for the fpp-versus-size sweep.  Subjects
     * without it are swept over target rates with create. */
    void *(*create_bpk)(uint64_t n, double bits_per_key);
    /* Optional: 1 when insert uses threads (the row says so). */
    int threads;
    /* Optional: 1 when the filter is another row's (only the loops differ):
     * left out of the fpp sweep. */
    int no_sweep;
} bench_subject;

void bench_register(const bench_subject *s);

/* Rows through the generic handle (handle.c): a filter of an amq_kind for
 * (capacity, rate) or NULL, its release, its bytes, and a batch of packed
 * 8-byte keys queried (how many answered present). */
void *bench_handle_new(uint32_t kind, uint64_t capacity, double fpp);
void bench_handle_free(void *f);
uint64_t bench_handle_bytes(const void *f);
uint64_t bench_handle_query_packed(void *f, const uint64_t *keys, size_t n);

/* A peer's rows left out because its code is not under AMQ_PEERS (path:
 * where it was looked for, relative to it): printed at the start of the run
 * and in the report's header. */
void bench_skipped(const char *rows, const char *path);

/* The false-positive rate of FastLocalBloom's algorithm (subject_models.c)
 * at bits_per_key, holding keys[0..n) hashed with `seed`, over q absent
 * keys; its probe count in *k.  -1 if it cannot be built. */
double bench_flb_fpp(const uint64_t *keys, size_t n, const uint64_t *absent, size_t q,
                     double bits_per_key, uint64_t seed, uint32_t *k);

/* The FastLocalBloom rows the targets compare with: the real RocksDB
 * (subject_rocksdb.c) when librocksdb-dev is installed, else the model of
 * its algorithm (subject_models.c). */
#ifdef AMQB_HAVE_ROCKSDB
#define BENCH_FLB_ONE "RocksDB FastLocalBloom"
#define BENCH_FLB_BATCH "RocksDB FastLocalBloom, batch of 32"
#else
#define BENCH_FLB_ONE "model: RocksDB FastLocalBloom"
#define BENCH_FLB_BATCH "model: RocksDB FastLocalBloom, batch of 16"
#endif

/* The buckets efficient/cuckoofilter takes for n keys (4 slots each): the
 * power of two at or above max(1, n / 4), doubled when the load would pass
 * 0.96.  Its model and amq's "the reference's table size" row share it. */
static inline uint64_t bench_cuckoo_ref_buckets(uint64_t n)
{
    uint64_t nb = 1;
    while (nb < (n / 4 > 1 ? n / 4 : 1))
        nb <<= 1;
    if ((double)n / (double)nb / 4.0 > 0.96)
        nb <<= 1;
    return nb;
}

/* The 16-byte subjects' keys: {key, key * BENCH_KEY16_MUL}. */
#define BENCH_KEY16_MUL UINT64_C(0x9e3779b97f4a7c15)

#define BENCH_SUBJECT(var)                                              \
    static const bench_subject var;                                     \
    __attribute__((constructor)) static void bench_register_##var(void) \
    {                                                                   \
        bench_register(&var);                                           \
    }                                                                   \
    static const bench_subject var

#endif /* AMQ_BENCH_H */
