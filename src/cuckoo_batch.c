/*
 * cuckoo_batch.c - the cuckoo filter's batched adds and queries, over
 * hashes and over packed keys: adds in a prefetching pipeline, queries a
 * block of keys at a time with their buckets prefetched, or by gathers
 * (cuckoo_avx2.c, cuckoo_avx512.c) where key8_modes chose them.  Same
 * answers, and for adds the same bytes, as the one-key calls in order.
 */
#include "cuckoo_impl.h"

/*
 * The kick's first step, prefetched ahead of the add that may need it
 * (add_pipeline's middle stage): when both buckets of a key are full, its
 * breadth-first search (kick_bfs_words) reads first the alternates of
 * their 2b fingerprints, so those are fetched now and the search finds
 * them in cache.  The buckets may change before the key's turn: this only
 * fetches lines.  (Fetching the search's second level too, a stage later,
 * measured slower: most of those lines go unread.)
 */
static inline __attribute__((always_inline)) void prefetch_kick(const amq_cuckoo *c, uint64_t i1,
                                                                uint64_t i2)
{
    uint64_t w1 = word64(c->d, i1, c->bb), w2 = word64(c->d, i2, c->bb), w;
    uint32_t j;
    if ((zero64(w1, c->ones_lo, c->highs_lo) | zero64(w2, c->ones_lo, c->highs_lo)) != 0)
        return;
    for (j = 0, w = w1; j < c->b; j++, w >>= c->f)
        prefetch_bucket(c, alt8(c, i1, (uint32_t)(w & c->fmax)));
    for (j = 0, w = w2; j < c->b; j++, w >>= c->f)
        prefetch_bucket(c, alt8(c, i2, (uint32_t)(w & c->fmax)));
}

/*
 * A pipeline of three stages over the keys, in order: key j has its two
 * buckets prefetched; key j - ahead, whose buckets have arrived, has the
 * first step of its kick prefetched if both are full (one-word layouts
 * out of cache, from peek_items on); key j - 2 ahead is inserted.  Out of
 * cache an add then mostly finds what it reads in cache, the kicks near
 * full load included.  Same results, byte for byte, as n single adds: the
 * adds themselves run in order.  A table in cache needs a short lead only
 * (a longer one measured slower there).
 */
#define ADD_AHEAD 32
#define ADD_AHEAD_NEAR 4

/* The keys come as hashes (h), or packed (keys, key_len each: hashed in
 * the first stage, so a long batch is one pipeline); far: the table is out
 * of cache, pf_last != 0 (a copy each way, so that a table in cache runs a
 * loop with nothing of the rest). */
static inline __attribute__((always_inline)) int add_pipeline(amq_cuckoo *c, const amq_hash128 *h,
                                                             const uint8_t *keys, size_t key_len,
                                                             size_t n, uint8_t *added,
                                                             const int far)
{
    enum { RING = 2 * ADD_AHEAD };
    uint32_t fp[RING];
    uint64_t nb = c->nb, i1[RING], i2[RING];
    int peek = far && c->shape == CK_WORD64;
    const size_t ring = far ? RING : 2 * ADD_AHEAD_NEAR; /* a power of two */
    size_t lag = ring, half, j, k, m;
    amq_hash128 x;

    if (amq_region_is_borrowed(&c->data))
        return AMQ_EREADONLY;
    lag = lag < n ? lag : n;
    half = lag / 2;
    for (j = 0; j < n + lag; j++) {
        if (j >= lag) {
            m = j - lag;
            k = m % ring;
            if (c->victim_fp != 0)
                return AMQ_EFULL;
            (void)insert(c, i1[k], i2[k], fp[k]);
            c->items++;
            if (added != NULL)
                added[m] = 1;
        }
        if (peek && c->items >= c->peek_items && j >= half && j - half < n) {
            k = (j - half) % ring;
            prefetch_kick(c, i1[k], i2[k]);
        }
        if (j < n) {
            k = j % ring;
            x = h != NULL ? h[j] : key_hash(c, keys + j * key_len, key_len);
            fp[k] = fingerprint(x.h2, c->fmax);
            i1[k] = reduce64(x.h1, nb);
            i2[k] = alt_bucket(i1[k], fp[k], nb);
            if (far) {
                prefetch_bucket(c, i1[k]);
                prefetch_bucket(c, i2[k]);
            } else {
                __builtin_prefetch(c->d + i1[k] * c->bb / 8, 1);
                __builtin_prefetch(c->d + i2[k] * c->bb / 8, 1);
            }
        }
    }
    return AMQ_OK;
}

static int add_batch(amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return c->pf_last != 0 ? add_pipeline(c, h, NULL, 0, n, added, 1)
                           : add_pipeline(c, h, NULL, 0, n, added, 0);
}

/* Packed keys, the length known to the compiler for 8 and 16 bytes. */
static int add_batch_packed(amq_cuckoo *c, const uint8_t *k, size_t key_len, size_t n,
                            uint8_t *added)
{
    if (c->pf_last != 0)
        return key_len == 8    ? add_pipeline(c, NULL, k, 8, n, added, 1)
               : key_len == 16 ? add_pipeline(c, NULL, k, 16, n, added, 1)
                               : add_pipeline(c, NULL, k, key_len, n, added, 1);
    return key_len == 8    ? add_pipeline(c, NULL, k, 8, n, added, 0)
           : key_len == 16 ? add_pipeline(c, NULL, k, 16, n, added, 0)
                           : add_pipeline(c, NULL, k, key_len, n, added, 0);
}

int amq_cuckoo_add_batch(amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *added,
                         uint64_t *count)
{
    uint64_t before = c->items;
    int rc = add_batch(c, h, n, added);
    if (count != NULL)
        *count = c->items - before;
    return rc;
}

int amq_cuckoo_add_batch_fixed(amq_cuckoo *c, const void *keys, size_t key_len, size_t n,
                               uint8_t *added, uint64_t *count)
{
    uint64_t before = c->items;
    int rc = add_batch_packed(c, keys, key_len, n, added);
    if (count != NULL)
        *count = c->items - before;
    return rc;
}

#define BATCH 16

/* Bucket indexes of a block of keys first, with both buckets prefetched,
 * then the tests: up to 2 * BATCH cache misses in flight. */
static void contains_batch_any(const amq_cuckoo *c, const amq_hash128 *h, size_t n,
                               uint8_t *out)
{
    const uint8_t *d = c->d;
    uint64_t nb = c->nb, i1[BATCH], i2[BATCH];
    uint32_t fp[BATCH], bb = c->bb;
    size_t base, j, m;

    for (base = 0; base < n; base += BATCH) {
        m = n - base < BATCH ? n - base : BATCH;
        for (j = 0; j < m; j++) {
            fp[j] = fingerprint(h[base + j].h2, c->fmax);
            i1[j] = reduce64(h[base + j].h1, nb);
            i2[j] = alt_bucket(i1[j], fp[j], nb);
            __builtin_prefetch(d + i1[j] * bb / 8);
            __builtin_prefetch(d + i2[j] * bb / 8);
        }
        for (j = 0; j < m; j++)
            out[base + j] = (uint8_t)(test2(c, fp[j], i1[j], i2[j]) |
                                      victim_matches(c, fp[j], i1[j], i2[j]));
    }
}

/* contains_batch_any for one-word buckets and no victim, with the one-key
 * path's steps (buckets on whole bytes read with no shift, the two answers
 * combined without a branch, no victim test). */
static inline __attribute__((always_inline)) void
contains_batch_words(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out, int bytes)
{
    const uint8_t *d = c->d;
    uint64_t nb = c->nb, ones = c->ones_lo, highs = c->highs_lo, i1[BATCH], i2[BATCH];
    uint32_t fp[BATCH], bb = c->bb, by = c->bbytes;
    size_t base, j, m;
    const uint8_t *p1, *p2;

    for (base = 0; base < n; base += BATCH) {
        m = n - base < BATCH ? n - base : BATCH;
        for (j = 0; j < m; j++) {
            fp[j] = fingerprint(h[base + j].h2, c->fmax);
            i1[j] = reduce64(h[base + j].h1, nb);
            i2[j] = alt8(c, i1[j], fp[j]);
            p1 = d + (bytes ? i1[j] * by : i1[j] * bb / 8);
            p2 = d + (bytes ? i2[j] * by : i2[j] * bb / 8);
            __builtin_prefetch(p1);
            __builtin_prefetch(p2);
            if (c->pf_last != 0) {
                __builtin_prefetch(p1 + c->pf_last);
                __builtin_prefetch(p2 + c->pf_last);
            }
        }
        for (j = 0; j < m; j++) {
            uint64_t x = (uint64_t)fp[j] * ones;
            uint64_t y1 = bucket_word(c, i1[j], bytes) ^ x, y2 = bucket_word(c, i2[j], bytes) ^ x;
            out[base + j] = ((((y1 - ones) & ~y1) | ((y2 - ones) & ~y2)) & highs) != 0;
        }
    }
}

static void contains_batch(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out)
{
#if defined(__x86_64__)
    if (c->batch_gather) {
        if (c->batch_gather == CK_GATHER_AVX512)
            amq_ck_contains_batch_avx512(c, h, n, out);
        else
            amq_ck_contains_batch_avx2(c, h, n, out);
        return;
    }
#endif
    if (c->shape == CK_WORD64 && c->victim_fp == 0) {
        if (c->bb % 8 == 0)
            contains_batch_words(c, h, n, out, 1);
        else
            contains_batch_words(c, h, n, out, 0);
        return;
    }
    contains_batch_any(c, h, n, out);
}

int amq_cuckoo_contains_batch(const amq_cuckoo *c, const amq_hash128 *h, size_t n, uint8_t *out,
                              uint64_t *maybe)
{
    uint8_t tmp[256];
    uint64_t m = 0;
    size_t at, i, len;

    if (maybe == NULL) {
        if (out != NULL)
            contains_batch(c, h, n, out);
        return AMQ_OK;
    }
    /* Counting needs the answers: into out, or a chunk at a time on the stack. */
    for (at = 0; at < n; at += len) {
        uint8_t *o = out != NULL ? out + at : tmp;
        len = out != NULL ? n : (n - at < sizeof tmp ? n - at : sizeof tmp);
        contains_batch(c, h + at, len, o);
        for (i = 0; i < len; i++)
            m += o[i];
    }
    *maybe = m;
    return AMQ_OK;
}

/*
 * Packed keys (n keys of key_len bytes, back to back): hashed here a chunk
 * at a time with the one-key paths' inline hash - 8- and 16-byte keys with
 * the length known to the compiler - then the hash forms above, so the
 * results are those of n one-key calls.
 */
#define FIXED_CHUNK 256

static inline __attribute__((always_inline)) void
hash_fixed(const amq_cuckoo *c, const uint8_t *keys, size_t key_len, size_t m, amq_hash128 *h)
{
    size_t i;
    if (key_len == 8)
        for (i = 0; i < m; i++)
            h[i] = key_hash(c, keys + i * 8, 8);
    else if (key_len == 16)
        for (i = 0; i < m; i++)
            h[i] = key_hash(c, keys + i * 16, 16);
    else
        for (i = 0; i < m; i++)
            h[i] = key_hash(c, keys + i * key_len, key_len);
}

int amq_cuckoo_contains_batch_fixed(const amq_cuckoo *c, const void *keys, size_t key_len,
                                    size_t n, uint8_t *out, uint64_t *count)
{
    amq_hash128 h[FIXED_CHUNK];
    uint64_t total = 0, got;
    size_t at, m;

    if (key_len == 8 && (c->pf_last == 0 || c->q8n_gather)) {
        total = c->q8n(c, keys, n, out);
        if (count != NULL)
            *count = total;
        return AMQ_OK;
    }
    for (at = 0; at < n; at += m) {
        m = n - at < FIXED_CHUNK ? n - at : FIXED_CHUNK;
        hash_fixed(c, (const uint8_t *)keys + at * key_len, key_len, m, h);
        got = 0;
        (void)amq_cuckoo_contains_batch(c, h, m, out != NULL ? out + at : NULL,
                                        count != NULL ? &got : NULL);
        total += got;
    }
    if (count != NULL)
        *count = total;
    return AMQ_OK;
}
