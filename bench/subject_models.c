/*
 * subject_models.c - the published algorithms of the peers that Debian does
 * not package, re-implemented here (from their descriptions; no code of
 * theirs) so that the RocksDB and libfilter figures have a
 * counterpart measured on the same keys, on the same machine, in the same
 * run:
 *
 *  - RocksDB's FastLocalBloom: the key hashed to 64 bits (XXH3); the cache
 *    line is fastrange32(low 32 bits, lines); probe i is the top 9 bits of
 *    h2 * 0x9e3779b9^i (h2 = the high 32 bits); k from RocksDB's table of
 *    millibits per key.  Adds prefetch 8 hashes ahead (as its builder);
 *    the single-key query is a call through a pointer per key (RocksDB's
 *    virtual MayMatch) that hashes, then tests; the batched query hashes
 *    and prefetches 16 keys, then tests them (RocksDB's batch of 16).
 *    The test is AVX2 for k <= 8, as RocksDB's.
 *  - libfilter's (and Parquet's) split block Bloom filter: 256-bit buckets
 *    of eight 32-bit words, the bucket by fastrange32 of the high 32 bits
 *    of a 64-bit hash, one bit per word: (low32 * SALT[i]) >> 27.  The key
 *    is its own hash, as in libfilter's benchmark; one key at a time, AVX2.
 *
 * What these rows measure is the algorithm on this machine, not the other
 * project's build of it: the false-positive rate is exactly the
 * algorithm's; the times are what a plain, careful implementation gets.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define AMQ_ADVANCED_API 1 /* the typed handles (amq/advanced.h), called directly */
#include "amq.h"
#include "bench.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define MODEL_X86 1
#endif

/* Zeroed, 64-byte aligned (page aligned), huge pages advised from 1 MiB:
 * the allocation amq's own filters get. */
static void *model_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= ((size_t)1 << 20))
        (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static uint32_t fastrange32(uint32_t h, uint32_t range)
{
    return (uint32_t)(((uint64_t)h * range) >> 32);
}

static int have_avx2(void)
{
#ifdef MODEL_X86
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

/* ---- FastLocalBloom ------------------------------------------------------------------ */

typedef struct flb flb;
struct flb {
    uint8_t *data;
    size_t bytes;
    uint32_t lines, k;
    uint64_t seed;
    int avx2;
    uint32_t phi_pow[8]; /* 0x9e3779b9^i: lane i's multiplier in the AVX2 test */
    /* The one-key query, called through a pointer as RocksDB calls its
     * filter reader's MayMatch (a virtual function) for every key. */
    int (*may_match)(const flb *f, uint64_t key);
};

/* RocksDB's choice of probes for a size in millibits per key. */
static uint32_t flb_probes(double bits_per_key)
{
    long mb = lround(bits_per_key * 1000.0);
    static const long top[] = {2080, 3580, 5100, 6640, 8300, 10070, 11720, 14001, 16050, 18300,
                               22001, 25501};
    uint32_t i;
    for (i = 0; i < sizeof top / sizeof top[0]; i++)
        if (mb <= top[i])
            return i + 1;
    return mb > 50000 ? 24 : (uint32_t)((mb - 1) / 2000 - 1);
}

static int flb_may_match(const flb *f, uint64_t key);

static flb *flb_new(uint64_t n, uint64_t lines, uint64_t seed)
{
    flb *f;
    uint32_t i;
    if (lines == 0 || lines > UINT32_MAX)
        return NULL;
    f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->lines = (uint32_t)lines;
    f->bytes = (size_t)lines * 64;
    f->k = flb_probes((double)lines * 512.0 / (double)n);
    f->seed = seed;
    f->avx2 = have_avx2();
    f->may_match = flb_may_match;
    f->phi_pow[0] = 1;
    for (i = 1; i < 8; i++)
        f->phi_pow[i] = f->phi_pow[i - 1] * 0x9e3779b9u;
    f->data = model_alloc(f->bytes);
    if (f->data == NULL) {
        free(f);
        return NULL;
    }
    return f;
}

static void flb_free(void *p)
{
    flb *f = p;
    munmap(f->data, f->bytes);
    free(f);
}

static uint64_t flb_hash(const flb *f, uint64_t key)
{
    return XXH3_64bits_withSeed(&key, 8, f->seed);
}

static uint8_t *flb_line(const flb *f, uint64_t h)
{
    return f->data + (size_t)fastrange32((uint32_t)h, f->lines) * 64;
}

static void flb_set(uint8_t *line, uint32_t h, uint32_t k)
{
    uint32_t i, b;
    for (i = 0; i < k; i++, h *= 0x9e3779b9u) {
        b = h >> 23;
        line[b >> 3] |= (uint8_t)(1u << (b & 7));
    }
}

static int flb_test_scalar(const uint8_t *line, uint32_t h, uint32_t k)
{
    uint32_t i, b, miss = 0;
    for (i = 0; i < k; i++, h *= 0x9e3779b9u) {
        b = h >> 23;
        miss |= ~(uint32_t)line[b >> 3] & (1u << (b & 7));
    }
    return miss == 0;
}

#ifdef MODEL_X86
/* Eight probes at once: lane i holds h * phi^i; its top 4 bits pick the
 * 32-bit word (from the line's low or high half), the next 5 the bit. */
__attribute__((target("avx2"))) static int flb_test_avx2(const flb *f, const uint8_t *line,
                                                         uint32_t h)
{
    const uint32_t k = f->k;
    const __m256i pw = _mm256_loadu_si256((const __m256i *)(const void *)f->phi_pow);
    const __m256i lanes =
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i lo = _mm256_load_si256((const __m256i *)(const void *)line);
    const __m256i hi = _mm256_load_si256((const __m256i *)(const void *)(line + 32));
    const __m256i p = _mm256_mullo_epi32(_mm256_set1_epi32((int)h), pw);
    const __m256i word = _mm256_srli_epi32(p, 28);
    const __m256i w = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(lo, word)),
                         _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(hi, word)),
                         _mm256_castsi256_ps(p)));
    const __m256i bit = _mm256_and_si256(
        _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32(_mm256_slli_epi32(p, 4), 27)),
        lanes);
    return _mm256_testc_si256(w, bit);
}
#endif

static int flb_test(const flb *f, const uint8_t *line, uint32_t h)
{
#ifdef MODEL_X86
    if (f->avx2 && f->k <= 8)
        return flb_test_avx2(f, line, h);
#endif
    return flb_test_scalar(line, h, f->k);
}

static uint64_t flb_insert(void *p, const uint64_t *keys, size_t n)
{
    flb *f = p;
    uint64_t ring[8];
    size_t i;
    for (i = 0; i < n + 8; i++) {
        if (i >= 8)
            flb_set(flb_line(f, ring[i & 7]), (uint32_t)(ring[i & 7] >> 32), f->k);
        if (i < n) {
            ring[i & 7] = flb_hash(f, keys[i]);
            __builtin_prefetch(flb_line(f, ring[i & 7]), 1, 3);
        }
    }
    return 0;
}

static int flb_may_match(const flb *f, uint64_t key)
{
    uint64_t h = flb_hash(f, key);
    return flb_test(f, flb_line(f, h), (uint32_t)(h >> 32));
}

#ifndef AMQB_HAVE_ROCKSDB
static uint64_t flb_query(void *p, const uint64_t *keys, size_t n)
{
    const flb *f = p;
    uint64_t c = 0;
    size_t i;
    for (i = 0; i < n; i++)
        c += (uint64_t)f->may_match(f, keys[i]);
    return c;
}
#endif

static uint64_t flb_query16(void *p, const uint64_t *keys, size_t n)
{
    const flb *f = p;
    uint64_t c = 0, h[16];
    const uint8_t *line[16];
    size_t i, j, m;
    for (i = 0; i < n; i += m) {
        m = n - i < 16 ? n - i : 16;
        for (j = 0; j < m; j++) {
            h[j] = flb_hash(f, keys[i + j]);
            line[j] = flb_line(f, h[j]);
            __builtin_prefetch(line[j], 0, 3);
        }
        for (j = 0; j < m; j++)
            c += (uint64_t)flb_test(f, line[j], (uint32_t)(h[j] >> 32));
    }
    return c;
}

#ifndef AMQB_HAVE_ROCKSDB
/* As many lines as amq's blocked filter takes for (n, fpp): equal size. */
static void *flb_create(uint64_t n, double fpp)
{
    uint64_t blocks;
    uint32_t k;
    if (amq_blocked_blocks_for(n, fpp, &blocks, &k) != AMQ_OK)
        return NULL;
    return flb_new(n, blocks, 0);
}

static void *flb_create_bpk(uint64_t n, double bpk)
{
    return flb_new(n, (uint64_t)ceil((double)n * bpk / 512.0), 0);
}

static uint64_t flb_bytes(const void *p)
{
    return ((const flb *)p)->bytes;
}
#endif

double bench_flb_fpp(const uint64_t *keys, size_t n, const uint64_t *absent, size_t q,
                     double bits_per_key, uint64_t seed, uint32_t *k)
{
    flb *f = flb_new(n, (uint64_t)ceil((double)n * bits_per_key / 512.0), seed);
    double r;
    if (f == NULL)
        return -1.0;
    flb_insert(f, keys, n);
    r = (double)flb_query16(f, absent, q) / (double)q;
    *k = f->k;
    flb_free(f);
    return r;
}

/* Replaced by the real library's rows (subject_rocksdb.c) where it is
 * installed; the algorithm stays for bench_flb_fpp's seeded filters. */
#ifndef AMQB_HAVE_ROCKSDB
BENCH_SUBJECT(subject_flb) = {
    .name = "model: RocksDB FastLocalBloom",
    .family = "model",
    .peer = 1,
    .create = flb_create,
    .destroy = flb_free,
    .insert = flb_insert,
    .query = flb_query,
    .bytes = flb_bytes,
    .create_bpk = flb_create_bpk,
};

BENCH_SUBJECT(subject_flb16) = {
    .name = "model: RocksDB FastLocalBloom, batch of 16",
    .family = "model",
    .peer = 1,
    .create = flb_create,
    .destroy = flb_free,
    .insert = flb_insert,
    .query = flb_query16,
    .bytes = flb_bytes,
    .no_sweep = 1,
};
#endif

/* ---- split block Bloom filter (libfilter, Parquet) ------------------------------------ */

typedef struct sbbf {
    uint32_t *words; /* buckets * 8 */
    size_t bytes;
    uint32_t buckets;
    int avx2;
} sbbf;

static const uint32_t sbbf_salt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                      0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};

/* The layout's rate at lambda keys per bucket: a bucket holding j keys
 * has j uniform bits in each word, and a foreign key needs its bit in all
 * eight words. */
static double sbbf_fpp_lambda(double lambda)
{
    double pmf = exp(-lambda), sum = 0.0;
    uint64_t j, hi = (uint64_t)(lambda + 14.0 * sqrt(lambda) + 40.0);
    for (j = 0; j <= hi; j++) {
        sum += pmf * pow(1.0 - pow(31.0 / 32.0, (double)j), 8.0);
        pmf *= lambda / (double)(j + 1);
    }
    return sum;
}

static void *sbbf_new(uint64_t buckets)
{
    sbbf *f;
    if (buckets == 0 || buckets > UINT32_MAX)
        return NULL;
    f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->buckets = (uint32_t)buckets;
    f->bytes = (size_t)buckets * 32;
    f->avx2 = have_avx2();
    f->words = model_alloc(f->bytes);
    if (f->words == NULL) {
        free(f);
        return NULL;
    }
    return f;
}

/* The fewest buckets whose layout rate at n keys is at most fpp. */
static void *sbbf_create(uint64_t n, double fpp)
{
    uint64_t lo = 0, hi = n / 4 + 1, mid;
    while (sbbf_fpp_lambda((double)n / (double)hi) > fpp) {
        lo = hi;
        hi *= 2;
        if (hi > UINT32_MAX)
            return NULL;
    }
    while (hi - lo > 1) {
        mid = lo + (hi - lo) / 2;
        if (sbbf_fpp_lambda((double)n / (double)mid) <= fpp)
            hi = mid;
        else
            lo = mid;
    }
    return sbbf_new(hi);
}

static void *sbbf_create_bpk(uint64_t n, double bpk)
{
    return sbbf_new((uint64_t)ceil((double)n * bpk / 256.0));
}

static void sbbf_free(void *p)
{
    sbbf *f = p;
    munmap(f->words, f->bytes);
    free(f);
}

static uint64_t sbbf_bytes(const void *p)
{
    return ((const sbbf *)p)->bytes;
}

#ifdef MODEL_X86
__attribute__((target("avx2"))) static inline __m256i sbbf_mask(uint32_t key)
{
    const __m256i salt = _mm256_loadu_si256((const __m256i *)(const void *)sbbf_salt);
    const __m256i p = _mm256_mullo_epi32(_mm256_set1_epi32((int)key), salt);
    return _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32(p, 27));
}

__attribute__((target("avx2"))) static uint64_t sbbf_insert_avx2(sbbf *f, const uint64_t *keys,
                                                                 size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        __m256i *b =
            (__m256i *)(void *)(f->words + (size_t)fastrange32((uint32_t)(keys[i] >> 32),
                                                               f->buckets) * 8);
        _mm256_store_si256(b, _mm256_or_si256(_mm256_load_si256(b), sbbf_mask((uint32_t)keys[i])));
    }
    return 0;
}

__attribute__((target("avx2"))) static uint64_t sbbf_query_avx2(const sbbf *f,
                                                                const uint64_t *keys, size_t n)
{
    uint64_t c = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        const __m256i *b =
            (const __m256i *)(const void *)(f->words +
                                            (size_t)fastrange32((uint32_t)(keys[i] >> 32),
                                                                f->buckets) * 8);
        c += (uint64_t)_mm256_testc_si256(_mm256_load_si256(b), sbbf_mask((uint32_t)keys[i]));
    }
    return c;
}
#endif

static uint64_t sbbf_insert(void *p, const uint64_t *keys, size_t n)
{
    sbbf *f = p;
    size_t i;
    uint32_t w, *b;
#ifdef MODEL_X86
    if (f->avx2)
        return sbbf_insert_avx2(f, keys, n);
#endif
    for (i = 0; i < n; i++) {
        b = f->words + (size_t)fastrange32((uint32_t)(keys[i] >> 32), f->buckets) * 8;
        for (w = 0; w < 8; w++)
            b[w] |= 1u << (((uint32_t)keys[i] * sbbf_salt[w]) >> 27);
    }
    return 0;
}

static uint64_t sbbf_query(void *p, const uint64_t *keys, size_t n)
{
    const sbbf *f = p;
    uint64_t c = 0;
    size_t i;
    uint32_t w, miss;
    const uint32_t *b;
#ifdef MODEL_X86
    if (f->avx2)
        return sbbf_query_avx2(f, keys, n);
#endif
    for (i = 0; i < n; i++) {
        b = f->words + (size_t)fastrange32((uint32_t)(keys[i] >> 32), f->buckets) * 8;
        miss = 0;
        for (w = 0; w < 8; w++)
            miss |= ~b[w] & (1u << (((uint32_t)keys[i] * sbbf_salt[w]) >> 27));
        c += miss == 0;
    }
    return c;
}

BENCH_SUBJECT(subject_sbbf) = {
    .name = "model: libfilter block, key as hash",
    .family = "model",
    .peer = 1,
    .create = sbbf_create,
    .destroy = sbbf_free,
    .insert = sbbf_insert,
    .query = sbbf_query,
    .bytes = sbbf_bytes,
    .create_bpk = sbbf_create_bpk,
};
