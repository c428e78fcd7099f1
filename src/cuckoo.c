/*
 * cuckoo.c - the cuckoo filter's one-key operations (amq/cuckoo.h): add,
 * query, remove, count; the evictions that make room (kick) and the victim
 * slot; and which leaf an 8-byte key takes (key8_modes), the scalar leaves
 * here, the vector ones in cuckoo_avx2.c.  What the files of the kind share
 * is in cuckoo_impl.h, which also says which file holds what.
 */
#include "amq/advanced.h"
#include "common/cpu.h"
#include "cuckoo_impl.h"
#include "cuckoo_internal.h"

/* The walk's "random" choices are a hash of where it stands (bucket, carried
 * fingerprint, step), not a generator the filter keeps: the bytes alone then
 * decide every add, so a replica, a reload or a copy evicts exactly as the
 * filter it came from and takes or refuses the same adds. */
static inline uint64_t walk_rand(uint64_t i, uint32_t fp, uint32_t k)
{
    uint64_t z = i * PHI + ((uint64_t)fp << 32 | k);
    return amq_ms_splitmix(&z);
}

/* The q8 entries by [whole bytes][CK_MS_*][alt_tab] (CK8_GRID). */
static const ck_q8_fn q8_scalar[2][3][2];
static int q8_any(const amq_cuckoo *c, const void *key);
static uint64_t q8n_bytes(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_bytes_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_bits(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_bits_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_bytes_mx(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_bits_mx(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static uint64_t q8n_any(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out);
static const ck_add8_fn add8_leaf[2][3][2];
static int add8_any(amq_cuckoo *c, const void *key);

/* The 8-byte-key entries that apply now: the fast ones assume no victim. */
void amq_ck_key8_modes(amq_cuckoo *c)
{
    uint32_t m = CK_KEY8_NONE;
    int tab = c->tab_unit != 0;
    if (c->fast && c->victim_fp == 0)
        m = c->bb % 8 == 0 ? CK_KEY8_BYTES : CK_KEY8_BITS;
    c->q8 = m == CK_KEY8_NONE ? q8_any : q8_scalar[m == CK_KEY8_BYTES][c->ms][tab];
    if (c->ms == CK_MS_MIX)
        c->q8n = m == CK_KEY8_BYTES ? q8n_bytes_mx : m == CK_KEY8_BITS ? q8n_bits_mx : q8n_any;
    else if (c->ms)
        c->q8n = m == CK_KEY8_BYTES ? q8n_bytes_ms : m == CK_KEY8_BITS ? q8n_bits_ms : q8n_any;
    else
        c->q8n = m == CK_KEY8_BYTES ? q8n_bytes : m == CK_KEY8_BITS ? q8n_bits : q8n_any;
#if defined(__x86_64__)
    if (m != CK_KEY8_NONE && !c->scalar_keys && amq_cpu_has(AMQ_CPU_AVX2 | AMQ_CPU_BMI2)) {
        c->q8 = amq_ck_q8_avx2(m == CK_KEY8_BYTES, c->ms, tab);
        if (m == CK_KEY8_BYTES)
            c->q8n = c->ms == CK_MS_MIX ? amq_ck_q8n_bytes_avx2_mx
                     : c->ms            ? amq_ck_q8n_bytes_avx2_ms
                                        : amq_ck_q8n_bytes_avx2;
    }
    /* Batches by gathers: one-word buckets, no victim, nb < 2^32. */
    c->batch_gather = 0;
    if (c->shape == CK_WORD64 && c->victim_fp == 0 && c->nb <= UINT32_MAX &&
        !c->scalar_keys) {
        if (amq_cpu_has(AMQ_CPU_AVX512_CORE))
            c->batch_gather = CK_GATHER_AVX512;
        else if (amq_cpu_has(AMQ_CPU_AVX2))
            c->batch_gather = CK_GATHER_AVX2;
    }
    c->q8n_gather = m != CK_KEY8_NONE && c->ms ? c->batch_gather : 0;
    if (c->q8n_gather)
        c->q8n = c->q8n_gather == CK_GATHER_AVX512 ? amq_ck_q8n_gather_avx512
                                                    : amq_ck_q8n_gather_avx2;
#endif
    if (!c->fast_add)
        m = CK_KEY8_NONE;
    c->q8_add = m == CK_KEY8_NONE ? add8_any : add8_leaf[m == CK_KEY8_BYTES][c->ms][tab];
}

void amq_cuckoo_scalar_keys(amq_cuckoo *c, int on)
{
    c->scalar_keys = on;
    amq_ck_key8_modes(c);
}

/* Every change of the victim goes through here, so that the entries above
 * stay in step. */
void amq_ck_set_victim(amq_cuckoo *c, uint32_t fp, uint64_t bucket)
{
    c->victim_fp = fp;
    c->victim_bucket = bucket;
    amq_ck_key8_modes(c);
}

/* Slot index of the first slot of bucket i holding fp, or -1. */
static int64_t bucket_find(const amq_cuckoo *c, uint64_t i, uint32_t fp)
{
    uint32_t j;
    for (j = 0; j < c->b; j++)
        if (ct_get(c->d, c->f, i * c->b + j) == fp)
            return (int64_t)(i * c->b + j);
    return -1;
}

static uint32_t bucket_count(const amq_cuckoo *c, uint64_t i, uint32_t fp)
{
    uint32_t j, n = 0;
    for (j = 0; j < c->b; j++)
        n += ct_get(c->d, c->f, i * c->b + j) == fp;
    return n;
}

/*
 * A free slot for fp, whose buckets i1 and i2 are full, at most two moves
 * away, searched breadth first: the alternate buckets of the 2b
 * fingerprints of i1 and i2 are computed and prefetched together (one
 * cache miss's time), and if one has room that fingerprint moves there and
 * fp takes its slot; else (buckets of up to 4 slots) the alternates of the
 * fingerprints of those 2b buckets, 2b^2 reads in flight together, for a
 * chain of two moves.  Near full load this places almost every add in two
 * round trips to memory, where a walk takes many dependent ones.  1 placed,
 * 0 not found (nothing moved).
 */
static int kick_bfs(amq_cuckoo *c, uint64_t i1, uint64_t i2, uint32_t fp)
{
    uint8_t *d = c->d;
    uint32_t f = c->f, b = c->b, bb = c->bb, n1 = 0, n2 = 0, k, j, m;
    uint64_t nb = c->nb, start[2], from[16], to[16], to2[32];
    uint32_t slot1[16], fp1[16], src2[32], slot2[32], fp2[32];
    int64_t s;

    start[0] = i1;
    start[1] = i2;
    for (k = 0; k < (i1 == i2 ? 1u : 2u); k++)
        for (j = 0; j < b; j++) {
            from[n1] = start[k];
            slot1[n1] = j;
            fp1[n1] = ct_get(d, f, start[k] * b + j);
            to[n1] = alt_bucket(start[k], fp1[n1], nb);
            __builtin_prefetch(d + to[n1] * bb / 8, 1);
            n1++;
        }
    for (k = 0; k < n1; k++)
        if ((s = bucket_empty(c, to[k])) >= 0) {
            ct_set(d, f, (uint64_t)s, fp1[k]);
            ct_set(d, f, from[k] * b + slot1[k], fp);
            return 1;
        }
    if (b > 4)
        return 0;
    /* Every bucket read so far is full, so a free slot found now is none
     * of theirs; a fingerprint whose alternate is its own bucket is no
     * first move (its slot would be used twice). */
    for (k = 0; k < n1; k++) {
        if (to[k] == from[k])
            continue;
        for (j = 0; j < b; j++) {
            src2[n2] = k;
            slot2[n2] = j;
            fp2[n2] = ct_get(d, f, to[k] * b + j);
            to2[n2] = alt_bucket(to[k], fp2[n2], nb);
            __builtin_prefetch(d + to2[n2] * bb / 8, 1);
            n2++;
        }
    }
    for (m = 0; m < n2; m++)
        if ((s = bucket_empty(c, to2[m])) >= 0) {
            k = src2[m];
            ct_set(d, f, (uint64_t)s, fp2[m]);
            ct_set(d, f, to[k] * b + slot2[m], fp1[k]);
            ct_set(d, f, from[k] * b + slot1[k], fp);
            return 1;
        }
    return 0;
}

/* The address of bucket i's first byte, for prefetches. */
static inline __attribute__((always_inline)) const uint8_t *bucket_at(const amq_cuckoo *c,
                                                                     uint64_t i, int bytes)
{
    return c->d + (bytes ? i * c->bbytes : i * c->bb / 8);
}

/* The first empty slot (absolute index) of a bucket whose word w is full
 * or not: z is w's zero-field test, nonzero. */
static inline uint64_t empty_slot(const amq_cuckoo *c, uint64_t i, uint64_t z)
{
    return i * c->b + ((uint32_t)__builtin_ctzll(z) + 1) / c->f - 1;
}

/* A bucket of a one-word layout prefetched: its first line, and on a
 * table out of cache (far) the line its word may spill into. */
static inline __attribute__((always_inline)) void prefetch_words(const amq_cuckoo *c, uint64_t i,
                                                                 int bytes, int far)
{
    if (far)
        prefetch_bucket(c, i);
    else
        __builtin_prefetch(bucket_at(c, i, bytes), 1);
}

/*
 * kick_bfs for one-word buckets, the same search in the same order: a
 * bucket's fingerprints come from one load by shifts, and whether a bucket
 * has room from one load and one test, so that the search's own work stays
 * small beside the memory round trips it waits for.
 */
static inline __attribute__((always_inline)) int kick_bfs_words(amq_cuckoo *c, uint64_t i1,
                                                               uint64_t i2, uint32_t fp,
                                                               int bytes, int far)
{
    uint8_t *d = c->d;
    uint32_t f = c->f, b = c->b, n1 = 0, n2 = 0, k, j, m;
    uint64_t fmax = c->fmax, ones = c->ones_lo, highs = c->highs_lo, w, z, s;
    uint64_t from[16], to[16], to2[32];
    uint32_t slot1[16], fp1[16], src2[32], slot2[32], fp2[32];

    for (k = 0; k < (i1 == i2 ? 1u : 2u); k++) {
        s = k ? i2 : i1;
        w = bucket_word(c, s, bytes);
        for (j = 0; j < b; j++, w >>= f) {
            from[n1] = s;
            slot1[n1] = j;
            fp1[n1] = (uint32_t)(w & fmax);
            to[n1] = alt8(c, s, fp1[n1]);
            prefetch_words(c, to[n1], bytes, far);
            n1++;
        }
    }
    for (k = 0; k < n1; k++)
        if ((z = zero64(bucket_word(c, to[k], bytes), ones, highs)) != 0) {
            ct_set(d, f, empty_slot(c, to[k], z), fp1[k]);
            ct_set(d, f, from[k] * b + slot1[k], fp);
            return 1;
        }
    if (b > 4)
        return 0;
    /* As in kick_bfs: every bucket read is full; a fingerprint whose
     * alternate is its own bucket is no first move. */
    for (k = 0; k < n1; k++) {
        if (to[k] == from[k])
            continue;
        w = bucket_word(c, to[k], bytes);
        for (j = 0; j < b; j++, w >>= f) {
            src2[n2] = k;
            slot2[n2] = j;
            fp2[n2] = (uint32_t)(w & fmax);
            to2[n2] = alt8(c, to[k], fp2[n2]);
            prefetch_words(c, to2[n2], bytes, far);
            n2++;
        }
    }
    for (m = 0; m < n2; m++)
        if ((z = zero64(bucket_word(c, to2[m], bytes), ones, highs)) != 0) {
            k = src2[m];
            ct_set(d, f, empty_slot(c, to2[m], z), fp2[m]);
            ct_set(d, f, to[k] * b + slot2[m], fp1[k]);
            ct_set(d, f, from[k] * b + slot1[k], fp);
            return 1;
        }
    return 0;
}

/*
 * Places fp, whose buckets i1 and i2 are full, by evicting.  1 when every
 * fingerprint found a slot; 0 when the last homeless one went to the victim
 * slot (the caller has checked that it was free).
 *
 * First the breadth-first search above; when it finds nothing (the filter
 * is all but full), a walk: each step looks one level ahead (the alternate
 * buckets of all b fingerprints of the full bucket, prefetched together),
 * and if one has room, that fingerprint moves there and fp takes its slot;
 * else a random slot is evicted and the walk goes on from its alternate
 * bucket.  At most max_kicks steps.
 */
__attribute__((noinline)) int amq_ck_kick(amq_cuckoo *c, uint64_t i1, uint64_t i2, uint32_t fp)
{
    uint8_t *d = c->d;
    uint32_t f = c->f, b = c->b, bb = c->bb, k, j, old, fps[8];
    uint64_t nb = c->nb, i, alt[8], w;
    int64_t s;
    int word = c->shape == CK_WORD64;

    if (!word                       ? kick_bfs(c, i1, i2, fp)
        : bb % 8 == 0 && c->pf_last ? kick_bfs_words(c, i1, i2, fp, 1, 1)
        : bb % 8 == 0               ? kick_bfs_words(c, i1, i2, fp, 1, 0)
        : c->pf_last                ? kick_bfs_words(c, i1, i2, fp, 0, 1)
                                    : kick_bfs_words(c, i1, i2, fp, 0, 0))
        return 1;
    i = (walk_rand(i1 ^ i2, fp, 0) & 1) ? i2 : i1;
    for (k = 0; k < c->p.max_kicks; k++) {
        /* One-word buckets: the b fingerprints from one load. */
        w = word ? word64(d, i, bb) : 0;
        for (j = 0; j < b; j++) {
            fps[j] = word ? (uint32_t)((w >> (j * f)) & c->fmax) : ct_get(d, f, i * b + j);
            alt[j] = alt_bucket(i, fps[j], nb);
            __builtin_prefetch(d + alt[j] * bb / 8, 1);
        }
        for (j = 0; j < b; j++) {
            s = bucket_empty(c, alt[j]);
            if (s >= 0) {
                ct_set(d, f, (uint64_t)s, fps[j]);
                ct_set(d, f, i * b + j, fp);
                return 1;
            }
        }
        j = (uint32_t)((walk_rand(i, fp, k + 1) >> 32) % b);
        old = fps[j];
        ct_set(d, f, i * b + j, fp);
        fp = old;
        i = alt[j];
    }
    amq_ck_set_victim(c, fp, i);
    return 0;
}

__attribute__((noinline)) int amq_ck_insert_other(amq_cuckoo *c, uint64_t i1, uint64_t i2,
                                               uint32_t fp)
{
    int64_t s = bucket_empty(c, i1);
    if (s < 0)
        s = bucket_empty(c, i2);
    if (s < 0)
        return amq_ck_kick(c, i1, i2, fp);
    ct_set(c->d, c->f, (uint64_t)s, fp);
    return 1;
}

/* ---- operations ---------------------------------------------------------------------- */

amq_hash128 amq_cuckoo_hash(const amq_cuckoo *c, const void *key, size_t len)
{
    return amq_hash_key(c->p.hash_algo, c->p.seed, key, len);
}

static inline __attribute__((always_inline)) int add_inline(amq_cuckoo *c, amq_hash128 h)
{
    uint32_t fp;
    uint64_t i1, i2;

    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    if (c->victim_fp != 0)
        return AMQ_EFULL;
    fp = fingerprint(h.h2, c->fmax);
    i1 = reduce64(h.h1, c->nb);
    i2 = alt_bucket(i1, fp, c->nb);
    (void)insert(c, i1, i2, fp);
    c->items++;
    return 1;
}

int amq_cuckoo_add_hash(amq_cuckoo *c, amq_hash128 h)
{
    return add_inline(c, h);
}

/* The slow paths of the one-key functions, out of line so that the fast
 * ones stay leaf functions (no registers to save, no frame). */
static __attribute__((noinline)) int add_any(amq_cuckoo *c, const void *key, size_t len)
{
    return add_inline(c, key_hash(c, key, len));
}

static __attribute__((noinline)) int query_any(const amq_cuckoo *c, const void *key, size_t len)
{
    return query(c, key_hash(c, key, len));
}

/*
 * 16-byte keys with XXH3 in a one-word layout (c->fast): XXH3's code for
 * that length flattened into the add or the query.  A full filter (a
 * victim) and a view take the general path.
 */
__attribute__((flatten)) static int add_fast16(amq_cuckoo *c, const void *key)
{
    amq_hash128 x = key_hash(c, key, 16);
    uint32_t fp = fingerprint(x.h2, c->fmax);
    uint64_t i1 = reduce64(x.h1, c->nb), i2 = alt_bucket(i1, fp, c->nb);
    (void)insert(c, i1, i2, fp);
    c->items++;
    return 1;
}

__attribute__((flatten)) static int query_fast16(const amq_cuckoo *c, const void *key)
{
    amq_hash128 x = key_hash(c, key, 16);
    uint32_t fp = fingerprint(x.h2, c->fmax);
    uint64_t i1 = reduce64(x.h1, c->nb), i2 = alt_bucket(i1, fp, c->nb);
    return test2(c, fp, i1, i2);
}

/* fp into the free field, whose top bit is z's lowest, of the bucket at
 * position p (bytes when bytes, else bits, as bucket_pair_at gives it): the
 * field is zero, so fp is ORed into the word that holds it (read again, in
 * L1 now, rather than kept in a register). */
static inline __attribute__((always_inline)) void put8(amq_cuckoo *c, uint64_t p, uint64_t z,
                                                      uint32_t fp, int bytes)
{
    uint64_t at = (uint64_t)__builtin_ctzll(z) + 1 - c->f;
    uint8_t *q;
    if (bytes) {
        q = c->d + p;
    } else {
        at += p;
        q = c->d + (at >> 3);
        at &= 7;
    }
    amq_store64(q, amq_load64(q) | ((uint64_t)fp << at));
}

/* The add's chosen bucket was full (both are, unless a removal left a
 * hole in the other): insert() decides again, by the same rule, from the
 * words now in cache - the other bucket, else the kick.  Out of line
 * (add8_full_bytes, _bits), reached by a tail call, so that add8 keeps no
 * frame; p1 is bucket i1's position. */
static inline __attribute__((always_inline)) int add8_full(amq_cuckoo *c, uint64_t p1, uint32_t fp,
                                                          int bytes)
{
    uint64_t i1 = p1 / (bytes ? c->bbytes : c->bb);
    (void)insert(c, i1, alt8(c, i1, fp), fp);
    return 1;
}

static __attribute__((noinline)) int add8_full_bytes(amq_cuckoo *c, uint64_t p1, uint32_t fp)
{
    return add8_full(c, p1, fp, 1);
}

static __attribute__((noinline)) int add8_full_bits(amq_cuckoo *c, uint64_t p1, uint32_t fp)
{
    return add8_full(c, p1, fp, 0);
}

/*
 * Both buckets' words loaded as the query loads them (bucket_pair_at), fp
 * into the emptier: slots fill from the lowest field, so the bucket whose
 * word is smaller holds fewer fingerprints (holes left by removals only
 * blur the choice, never its correctness): insert()'s rule.  Balancing
 * from the first add keeps the buckets even, so fewer adds near full load
 * find both full and kick; the choice is a compare and conditional moves,
 * not a branch that would go either way.
 */
static inline __attribute__((always_inline)) int add8(amq_cuckoo *c, const void *key, int bytes,
                                                     int ms, int tab)
{
    uint64_t top, h1 = x8_hash(c, key, &top, ms), bmask = c->bmask, p1, p2, w1, w2, p, z;
    uint32_t fp = (uint32_t)((top * c->fmax) >> 32) + 1;
    bucket_pair_at(c, reduce64(h1, c->nb), fp, bytes, tab, &p1, &p2);
    w1 = word_at(c, p1, bytes) & bmask;
    w2 = word_at(c, p2, bytes) & bmask;
    c->items++;
    p = w2 < w1 ? p2 : p1;
    z = zero64(w2 < w1 ? w2 : w1, c->ones_lo, c->highs_lo);
    if (__builtin_expect(z == 0, 0))
        return bytes ? add8_full_bytes(c, p1, fp) : add8_full_bits(c, p1, fp);
    put8(c, p, z, fp, bytes);
    return 1;
}

CK8_GRID(, ck_add8_fn, amq_cuckoo, add8_leaf, add8)

static int add8_any(amq_cuckoo *c, const void *key)
{
    return add_any(c, key, 8);
}

/* Keys of other lengths than 8, out of line so that the entries (add_key:
 * amq_cuckoo_add, the handle's op_add_key) keep no frame: an 8-byte key is
 * a jump to the filter's leaf. */
__attribute__((noinline)) int amq_ck_add_other(amq_cuckoo *c, const void *key, size_t len)
{
    if (len == 16 && c->fast_add && c->victim_fp == 0)
        return add_fast16(c, key);
    return add_any(c, key, len);
}

int amq_cuckoo_add(amq_cuckoo *c, const void *key, size_t len)
{
    return add_key(c, key, len);
}

int amq_cuckoo_contains_hash(const amq_cuckoo *c, amq_hash128 h)
{
    return query(c, h);
}

/* The q8 entries: query8 (or q8_vec) on whole-byte buckets or at any bit,
 * under XXH3, mulshift or mulmix, H(fp) computed or read from alt_tab. */
CK8_GRID(, ck_q8_fn, const amq_cuckoo, q8_scalar, query8)

static int q8_any(const amq_cuckoo *c, const void *key)
{
    return query_any(c, key, 8);
}

/* The q8 entries over n packed keys: each key's query (query8, or the
 * general path when any) inlined into one loop, the filter's fields read
 * once for all, where a call per key rereads them.  The answers' count. */
static inline __attribute__((always_inline)) uint64_t
q8n_loop(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out, int bytes, int ms,
         int any)
{
    uint64_t total = 0;
    size_t i;
    if (out == NULL) {
        for (i = 0; i < n; i++)
            total += (uint64_t)(any ? query_any(c, keys + i * 8, 8)
                                    : query8(c, keys + i * 8, bytes, ms, 0));
        return total;
    }
    for (i = 0; i < n; i++) {
        out[i] = (uint8_t)(any ? query_any(c, keys + i * 8, 8)
                               : query8(c, keys + i * 8, bytes, ms, 0));
        total += out[i];
    }
    return total;
}

static uint64_t q8n_bytes(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
{
    return q8n_loop(c, keys, n, out, 1, 0, 0);
}

static uint64_t q8n_bytes_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
{
    return q8n_loop(c, keys, n, out, 1, 1, 0);
}

static uint64_t q8n_bits(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
{
    return q8n_loop(c, keys, n, out, 0, 0, 0);
}

static uint64_t q8n_bits_ms(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
{
    return q8n_loop(c, keys, n, out, 0, 1, 0);
}

static uint64_t q8n_bytes_mx(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
{
    return q8n_loop(c, keys, n, out, 1, CK_MS_MIX, 0);
}

static uint64_t q8n_bits_mx(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
{
    return q8n_loop(c, keys, n, out, 0, CK_MS_MIX, 0);
}

static uint64_t q8n_any(const amq_cuckoo *c, const uint8_t *keys, size_t n, uint8_t *out)
{
    return q8n_loop(c, keys, n, out, 0, 0, 1);
}

__attribute__((noinline)) int amq_ck_contains_other(const amq_cuckoo *c, const void *key,
                                                 size_t len)
{
    if (len == 16 && c->fast && c->victim_fp == 0)
        return query_fast16(c, key);
    return query_any(c, key, len);
}

int amq_cuckoo_contains(const amq_cuckoo *c, const void *key, size_t len)
{
    return contains_key(c, key, len);
}

int amq_cuckoo_add_unique_hash(amq_cuckoo *c, amq_hash128 h)
{
    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    if (query(c, h))
        return 0;
    return add_inline(c, h);
}

int amq_cuckoo_add_unique(amq_cuckoo *c, const void *key, size_t len)
{
    return amq_cuckoo_add_unique_hash(c, key_hash(c, key, len));
}

/* After a slot was freed: the victim goes back into the table. */
static void reinsert_victim(amq_cuckoo *c)
{
    uint32_t fp = c->victim_fp;
    uint64_t i = c->victim_bucket;

    if (fp == 0)
        return;
    amq_ck_set_victim(c, 0, 0);
    (void)insert(c, i, alt_bucket(i, fp, c->nb), fp);
}

int amq_cuckoo_remove_hash(amq_cuckoo *c, amq_hash128 h)
{
    uint32_t fp;
    uint64_t i1, i2;
    int64_t s;

    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    fp = fingerprint(h.h2, c->fmax);
    i1 = reduce64(h.h1, c->nb);
    i2 = alt_bucket(i1, fp, c->nb);
    s = bucket_find(c, i1, fp);
    if (s < 0)
        s = bucket_find(c, i2, fp);
    if (s >= 0) {
        ct_set(c->d, c->f, (uint64_t)s, 0);
        c->items -= c->items > 0; /* never wraps, even on untrusted data */
        reinsert_victim(c);
        return 1;
    }
    if (c->victim_fp != 0 && victim_matches(c, fp, i1, i2)) {
        amq_ck_set_victim(c, 0, 0);
        c->items -= c->items > 0;
        return 1;
    }
    return 0;
}

int amq_cuckoo_remove(amq_cuckoo *c, const void *key, size_t len)
{
    return amq_cuckoo_remove_hash(c, key_hash(c, key, len));
}

static uint32_t count_copies(const amq_cuckoo *c, amq_hash128 h)
{
    uint32_t fp, n;
    uint64_t i1, i2;

    fp = fingerprint(h.h2, c->fmax);
    i1 = reduce64(h.h1, c->nb);
    i2 = alt_bucket(i1, fp, c->nb);
    n = bucket_count(c, i1, fp);
    if (i2 != i1)
        n += bucket_count(c, i2, fp);
    if (victim_matches(c, fp, i1, i2))
        n++;
    return n;
}

/* Do fp's copies fill both its buckets i1 and i2 (one bucket when they are
 * the same)? */
static int buckets_all(const amq_cuckoo *c, uint32_t fp, uint64_t i1, uint64_t i2)
{
    if (i2 == i1)
        return bucket_count(c, i1, fp) == c->b;
    return bucket_count(c, i1, fp) + bucket_count(c, i2, fp) == 2 * c->b;
}

/* Every add is refused while the victim slot is in use: the refusal is a
 * key's copies when the victim is one more copy of a fingerprint whose
 * buckets hold only its copies (no walk could place it), else a crowd. */
uint32_t amq_ck_refusal(const amq_cuckoo *c, amq_hash128 h)
{
    uint32_t fp = fingerprint(h.h2, c->fmax), vfp = c->victim_fp;
    uint64_t i1 = reduce64(h.h1, c->nb), i2 = alt_bucket(i1, fp, c->nb), vb = c->victim_bucket;

    if (vfp == 0)
        return AMQ_REFUSAL_FULL;
    if (victim_matches(c, fp, i1, i2) && buckets_all(c, fp, i1, i2))
        return AMQ_REFUSAL_COPIES;
    if (buckets_all(c, vfp, vb, alt_bucket(vb, vfp, c->nb)))
        return AMQ_REFUSAL_OTHER_COPIES;
    return AMQ_REFUSAL_FULL;
}

uint64_t amq_cuckoo_count_hash(const amq_cuckoo *c, amq_hash128 h)
{
    return count_copies(c, h);
}

uint64_t amq_cuckoo_count(const amq_cuckoo *c, const void *key, size_t len)
{
    return amq_cuckoo_count_hash(c, key_hash(c, key, len));
}

int amq_cuckoo_clear(amq_cuckoo *c)
{
    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    memset(c->data.data, 0, c->data.size);
    c->items = 0;
    amq_ck_set_victim(c, 0, 0);
    return AMQ_OK;
}

