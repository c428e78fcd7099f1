/*
 * aging.c - the age-partitioned Bloom filter (Shtul, Baquero, Almeida 2020)
 * with blocked slices and its parameter block; its table of operations for
 * the generic handle is aging_kind.c, the public functions on a handle are
 * aging_handle.c (both above this file).
 *
 * S = k + l slices form a circular buffer of generations: logical position
 * 0 is the newest slice, S - 1 the oldest; head is the physical index of
 * position 0.  A key is added to positions 0..k-1; a query looks for k
 * consecutive positions holding the key.  A new generation moves head back
 * by one and clears the slice it lands on (the oldest), so every key's run
 * of k slices moves one position older per generation and survives l
 * generations whole.
 *
 * Layout: the key picks one block of S 64-bit words, word j being physical
 * slice j's part of that block, and one bit in each word.  A key's every
 * probe, in every slice, lies in those S * 8 contiguous bytes (a few cache
 * lines, fetched together) instead of S lines far apart; the price is that
 * a block's words share the block's luck (more or fewer keys than average),
 * which the sizing model below charges for.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amq/aging.h"
#include "amq/filter.h"
#include "common/alloc.h"
#include "common/checked.h"
#include "common/cpu.h"
#include "common/endian.h"
#include "common/error.h"
#include "aging_internal.h"

#define MAX_K 63u
#define MAX_BYTES (UINT64_C(1) << 46)
#define MIN_FPP 1e-12
#define MAX_FPP 0.5


/* ---- the sizing model ----------------------------------------------------------------
 * A word holding x random keys has a given bit set with probability
 * 1 - (1 - 1/64)^x.  At the end of a generation (the worst moment: fills
 * only grow within one, and a new generation shifts every slice one older
 * and drops the fullest), position j holds min(j + 1, k) generations of
 * keys.  A key never added is a false positive when some run of k
 * consecutive positions all have its bit; the probability is bounded by the
 * union over the run's first position i of "position i - 1 unset and
 * positions i..i+k-1 set" (exact events, disjoint starts; only the
 * independence of distinct words' bits is assumed).
 *
 * Blocks: a block's keys per generation are Poisson(lambda), lambda =
 * gen_size / blocks.  The bound averages over the block's load with every
 * slice's load scaled by the same Poisson draw, which overstates the
 * variance of a run (its slices share only part of their generations), so
 * the result stays an upper bound.
 */

/* Union bound for fills fc[1..k] (fc[c]: a word with c generations). */
static double run_bound(const double *fc, uint32_t k, uint32_t l)
{
    double suffix[MAX_K + 1]; /* suffix[i] = prod fc[c] for c = i+1..k-1 */
    double full = fc[k], total, fullpow[MAX_K + 2];
    uint32_t i;

    suffix[k - 1] = 1.0;
    for (i = k - 1; i > 0; i--)
        suffix[i - 1] = suffix[i] * fc[i];
    fullpow[0] = 1.0;
    for (i = 1; i <= k + 1 && i <= MAX_K + 1; i++)
        fullpow[i] = fullpow[i - 1] * full;
    /* window i covers positions i..i+k-1: the partial ones i..k-2 (c = j+1)
     * and min(i + 1, k) full ones. */
    total = suffix[0] * fullpow[1];
    for (i = 1; i <= l && i < k; i++)
        total += (1.0 - fc[i]) * suffix[i] * fullpow[i + 1];
    if (l >= k)
        total += (double)(l - k + 1) * (1.0 - full) * fullpow[k];
    return total;
}

static void fills(double keys_per_gen, uint32_t k, double *fc)
{
    static const double ln_miss = -0.015748356968139112; /* log(1 - 1/64) */
    uint32_t c;
    for (c = 1; c <= k; c++)
        fc[c] = 1.0 - exp((double)c * keys_per_gen * ln_miss);
}

/* Without the block variance: the plan's search runs on this cheaper one. */
static double bound_mean(uint32_t k, uint32_t l, double lambda)
{
    double fc[MAX_K + 1];
    fills(lambda, k, fc);
    return run_bound(fc, k, l);
}

/* run_bound of a word holding x keys depends on (k, l, x) only, not on
 * lambda: a search over lambda for one (k, l) (max_lambda) computes each once
 * and keeps it here, direct-mapped by x, and pays per step only the Poisson
 * weights.  The sums are the same numbers in the same order: the plan is
 * bit for bit the one computed without it, and AF.RESERVE, which plans
 * twice, does not pay for the bound of each word again at every step. */
#define RB_SLOTS 2048u
typedef struct rb_cache {
    uint32_t tag[RB_SLOTS]; /* x + 1 of the value held, 0: none */
    double val[RB_SLOTS];
} rb_cache;

static double run_bound_of(rb_cache *c, uint32_t k, uint32_t l, uint64_t x)
{
    double fc[MAX_K + 1];
    size_t i = (size_t)(x % RB_SLOTS);
    if (c->tag[i] != (uint32_t)(x + 1)) {
        fills((double)x / (double)k, k, fc);
        c->val[i] = run_bound(fc, k, l);
        c->tag[i] = (uint32_t)(x + 1);
    }
    return c->val[i];
}

/* The bound averaged over a block's load; c: run_bound values of this (k, l). */
static double bound_blocked(uint32_t k, uint32_t l, double lambda, rb_cache *c)
{
    double mu, sd, total = 0.0, weight = 0.0, p, lmu;
    uint64_t x, lo, hi;

    mu = (double)k * lambda; /* keys in a full word */
    sd = sqrt(mu);
    lo = mu > 14.0 * sd ? (uint64_t)(mu - 14.0 * sd) : 0;
    hi = (uint64_t)(mu + 14.0 * sd + 16.0);
    lmu = log(mu);
    for (x = lo; x <= hi; x++) {
        p = exp((double)x * lmu - mu - lgamma((double)x + 1.0));
        total += p * run_bound_of(c, k, l, x);
        weight += p;
    }
    /* The tails left out are below 1e-40 of the mass; a bound they could
     * only raise is kept honest by counting them as certain positives. */
    total += weight < 1.0 ? 1.0 - weight : 0.0;
    return total > 1.0 ? 1.0 : total;
}

/* Whether bound_blocked(k, l, lambda) > fpp is already certain from the few
 * terms at the Poisson mode: every term of its sum is nonnegative, so a
 * part of the sum above fpp (with a margin far above the rounding of either
 * sum) decides the comparison as the whole sum would.  The first steps of a
 * search (lambda 128, 64, ...) sum thousands of terms each otherwise. */
static int bound_surely_above(uint32_t k, uint32_t l, double lambda, double fpp, rb_cache *c)
{
    double mu = (double)k * lambda, lmu = log(mu), part = 0.0;
    uint64_t mode = (uint64_t)mu, x;

    for (x = mode > 3 ? mode - 3 : 0; x <= mode + 3; x++)
        part += exp((double)x * lmu - mu - lgamma((double)x + 1.0)) * run_bound_of(c, k, l, x);
    return part > fpp * (1.0 + 1e-6);
}

double amq_aging_fpp_bound(uint32_t k, uint32_t l, double lambda)
{
    rb_cache c;

    if (k == 0 || k > MAX_K || l == 0 || (uint64_t)k + l > MAX_SLICES || !(lambda > 0.0))
        return 1.0;
    memset(c.tag, 0, sizeof c.tag);
    return bound_blocked(k, l, lambda, &c);
}

/* Largest lambda whose bound is at most fpp (bound grows with lambda). */
static double max_lambda(uint32_t k, uint32_t l, double fpp, int blocked)
{
    double lo = 1e-9, hi = 256.0, mid;
    rb_cache c;
    int i;

    if (blocked)
        memset(c.tag, 0, sizeof c.tag);
    for (i = 0; i < 60; i++) {
        mid = 0.5 * (lo + hi);
        if (blocked ? !bound_surely_above(k, l, mid, fpp, &c) &&
                          bound_blocked(k, l, mid, &c) <= fpp
                    : bound_mean(k, l, mid) <= fpp)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Bits per window item: slices * 64 bits per block, blocks = W / (l lambda). */
static double cost(uint32_t k, uint32_t l, double lambda)
{
    return (double)(k + l) * WORD_BITS / ((double)l * lambda);
}

/* The (k, l, lambda) of least memory for fpp with k + l <= cap slices, a
 * multiple of 8 (a block is then whole, aligned cache lines): for each k
 * the best l by the mean model, then that pair's lambda under the block
 * model.  Returns the bits per window item. */
static double choose_capped(double fpp, uint32_t cap, uint32_t *k_out, uint32_t *l_out,
                            double *lambda_out)
{
    uint32_t k, s, best_l;
    double c, best_c, lam, best_total = INFINITY;

    for (k = 1; k < cap && k <= MAX_K; k++) {
        best_c = INFINITY;
        best_l = 0;
        for (s = 8; s <= cap; s += 8) {
            if (s <= k)
                continue;
            c = cost(k, s - k, max_lambda(k, s - k, fpp, 0));
            if (c < best_c) {
                best_c = c;
                best_l = s - k;
            }
        }
        if (best_l == 0 || best_c > best_total)
            continue; /* the block model only adds to the mean model's cost */
        lam = max_lambda(k, best_l, fpp, 1);
        c = cost(k, best_l, lam);
        if (c < best_total) {
            best_total = c;
            *k_out = k;
            *l_out = best_l;
            *lambda_out = lam;
        }
    }
    return best_total;
}

/* Blocks of 32 slices (4 cache lines, what a query prefetches), and twice
 * as many while that saves more than 15 % memory (low rates need long
 * runs of slices). */
/* The last search's answer, per thread: the choice depends on fpp alone, and
 * a caller that plans before creating (AF.RESERVE checks the size first)
 * would otherwise search twice. */
static _Thread_local struct {
    int have;
    double fpp;
    uint32_t k, l;
    double lambda;
} last_choice;

static void choose(double fpp, uint32_t *k_out, uint32_t *l_out, double *lambda_out)
{
    uint32_t cap, k2 = 1, l2 = 1;
    double lam2 = 1.0, c, c2;

    if (last_choice.have && last_choice.fpp == fpp) {
        *k_out = last_choice.k;
        *l_out = last_choice.l;
        *lambda_out = last_choice.lambda;
        return;
    }

    c = choose_capped(fpp, 32, k_out, l_out, lambda_out);
    for (cap = 64; cap <= 128; cap *= 2) {
        c2 = choose_capped(fpp, cap, &k2, &l2, &lam2);
        if (!(c > 1.15 * c2))
            break;
        c = c2;
        *k_out = k2;
        *l_out = l2;
        *lambda_out = lam2;
    }
    last_choice.fpp = fpp;
    last_choice.k = *k_out;
    last_choice.l = *l_out;
    last_choice.lambda = *lambda_out;
    last_choice.have = 1;
}

static int plan_geometry(uint64_t window, double fpp, amq_aging_info *info)
{
    uint32_t k = 1, l = 1;
    double lambda = 1.0, blocks_d;
    uint64_t g, blocks;

    memset(info, 0, sizeof *info);
    if (window == 0 || window > (UINT64_C(1) << 48) || !(fpp >= MIN_FPP && fpp <= MAX_FPP))
        return AMQ_ERANGE;
    choose(fpp, &k, &l, &lambda);
    g = div_ceil(window, l);
    blocks_d = ceil((double)g / lambda);
    if (!(blocks_d * (double)(k + l) * 8.0 <= (double)MAX_BYTES))
        return AMQ_EOVERFLOW;
    blocks = blocks_d < 1.0 ? 1 : (uint64_t)blocks_d;
    info->k = k;
    info->l = l;
    info->blocks = blocks;
    info->gen_size = g;
    info->bytes = blocks * (k + l) * 8;
    info->window = g * l;
    info->horizon = g * (k + l);
    info->fpp_bound = amq_aging_fpp_bound(k, l, (double)g / (double)blocks);
    return AMQ_OK;
}

int amq_aging_info_for(uint64_t window, double fpp, amq_aging_info *info)
{
    return plan_geometry(window, fpp, info);
}

/* ---- the filter ------------------------------------------------------------------------ */

static const uint64_t *block_of(const amq_aging *a, amq_hash128 h)
{
    uint64_t b = (uint64_t)(((unsigned __int128)h.h1 * a->blocks) >> 64);
    return words(a) + b * a->slices;
}

/*
 * The key's bit in physical slice j: x = lo32(h2) + j * (hi32(h2) | 1),
 * mixed by a xorshift and a multiply, top 6 bits.  The mix matters: plain
 * double hashing gives two keys the same progression of indexes too often,
 * and keys sharing a block then collide on whole runs.  32-bit lanes, so
 * that AVX2 computes eight slices at once.
 */
static uint32_t step_of(amq_hash128 h)
{
    return (uint32_t)(h.h2 >> 32) | 1u;
}

static uint32_t index_of(uint32_t x)
{
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    return x >> 26;
}

static uint32_t phys_of(const amq_aging *a, uint32_t pos)
{
    uint32_t p = a->head + pos;
    return p >= a->slices ? p - a->slices : p;
}

/* Bit j set when physical slice j holds the key (slices <= 64). */
static uint64_t mask_scalar(const uint64_t *blk, amq_hash128 h, uint32_t slices)
{
    uint32_t j, x = (uint32_t)h.h2, step = step_of(h);
    uint64_t m = 0;
    for (j = 0; j < slices; j++, x += step)
        m |= ((blk[j] >> index_of(x)) & 1) << j;
    return m;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AGING_HAVE_AVX2 1

/* The same mask eight slices at a time (slices a multiple of 8). */
__attribute__((target("avx2"))) static uint64_t mask_avx2(const uint64_t *blk, amq_hash128 h,
                                                          uint32_t slices)
{
    const uint32_t step = step_of(h);
    const __m256i mul = _mm256_set1_epi32(0x2c1b3c6d);
    const __m256i step8 = _mm256_set1_epi32((int)(step * 8u));
    __m256i x = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)h.h2),
                                 _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                    _mm256_set1_epi32((int)step)));
    uint64_t m = 0;
    uint32_t j;

    for (j = 0; j < slices; j += 8) {
        __m256i y = _mm256_mullo_epi32(_mm256_xor_si256(x, _mm256_srli_epi32(x, 15)), mul);
        __m256i idx = _mm256_srli_epi32(y, 26);
        __m256i i0 = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(idx));
        __m256i i1 = _mm256_cvtepu32_epi64(_mm256_extracti128_si256(idx, 1));
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(blk + j));
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(blk + j + 4));
        /* the probed bit to the sign bit, then one bit per lane */
        __m256i b0 = _mm256_slli_epi64(_mm256_srlv_epi64(w0, i0), 63);
        __m256i b1 = _mm256_slli_epi64(_mm256_srlv_epi64(w1, i1), 63);
        uint64_t m0 = (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(b0));
        uint64_t m1 = (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(b1));
        m |= (m0 | m1 << 4) << j;
        x = _mm256_add_epi32(x, step8);
    }
    return m;
}
#endif

void amq_aging_impl_choose_mask(amq_aging *a)
{
    a->mask = mask_scalar;
#ifdef AGING_HAVE_AVX2
    if (a->slices % 8 == 0 && a->slices <= 64 && amq_cpu_has(AMQ_CPU_AVX2))
        a->mask = mask_avx2;
#endif
}

/* Is there a run of k consecutive set bits in the low `live` bits of m? */
static int has_run(uint64_t m, uint32_t k, uint32_t live)
{
    uint32_t len = 1, s;
    if (live < 64)
        m &= (UINT64_C(1) << live) - 1;
    while (len < k && m != 0) {
        s = len < k - len ? len : k - len;
        m &= m >> s;
        len += s;
    }
    return m != 0;
}

/*
 * Is there a run of k positions in [0, live) holding the key?  Up to 64
 * slices: one bit per slice into a mask without a branch per probe (a key
 * never added would mispredict about every other one), rotated from
 * physical to logical order, runs found by shift-and doubling.  More
 * slices: a scan checking a candidate run from its end backwards and
 * skipping past a miss.
 */
int amq_aging_impl_find_run(const amq_aging *a, amq_hash128 h, uint32_t live)
{
    const uint64_t *blk = block_of(a, h);
    uint32_t start = 0, seen = 0; /* positions [start, seen) are known set */
    uint32_t j, k = a->k, n = a->slices, x0 = (uint32_t)h.h2, step = step_of(h);
    uint64_t m;

    if (n <= 64) {
        m = a->mask(blk, h, n);
        if (a->head != 0)
            m = (m >> a->head | m << (n - a->head)) &
                (n == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1);
        return has_run(m, k, live);
    }
    while (start + k <= live) {
        j = start + k;
        while (j > seen) {
            uint32_t p = phys_of(a, j - 1);
            if (((blk[p] >> index_of(x0 + p * step)) & 1) == 0)
                break;
            j--;
        }
        if (j <= seen)
            return 1;
        seen = start + k;
        start = j;
    }
    return 0;
}

/* Slices still live at now_ms (time mode): those not dropped since. */
static uint32_t live_at(const amq_aging *a, uint64_t now_ms)
{
    uint64_t target;
    if (!a->time_mode)
        return a->slices;
    target = now_ms / a->gen_ms;
    if (target <= a->generation)
        return a->slices;
    if (target - a->generation >= a->slices)
        return 0;
    return a->slices - (uint32_t)(target - a->generation);
}

/* Inlined: gcc 12 dropped the calls of a function holding only prefetches (ipa-modref). */
static inline __attribute__((always_inline)) void prefetch_block(const amq_aging *a, amq_hash128 h)
{
    const uint8_t *p = (const uint8_t *)block_of(a, h);
    const uint8_t *end = p + (size_t)a->slices * 8 - 1;
    const uint8_t *line = (const uint8_t *)((uintptr_t)p & ~(uintptr_t)63);
    for (; line <= end; line += 64)
        __builtin_prefetch(line, 0, 3);
}

/* Prefetch distance: enough keys' blocks in flight to cover a memory
 * latency, few enough not to evict them before use. */
#define AHEAD 8

static void contains_batch(const amq_aging *a, const amq_hash128 *h, size_t n, uint8_t *out,
                           uint32_t live)
{
    size_t i;

    for (i = 0; i < n && i < AHEAD; i++)
        prefetch_block(a, h[i]);
    for (i = 0; i < n; i++) {
        if (i + AHEAD < n)
            prefetch_block(a, h[i + AHEAD]);
        out[i] = (uint8_t)amq_aging_impl_find_run(a, h[i], live);
    }
}

/* Clears physical slices head-1, head-2, ... (count of them, < slices) in
 * one pass over the blocks, moving head back. */
static void start_generations(amq_aging *a, uint32_t count)
{
    uint64_t *w = words(a);
    uint64_t b;
    uint32_t i, first;

    if (count >= a->slices) {
        memset(a->data.data, 0, a->data.size);
        a->head = 0;
        return;
    }
    first = (a->head + a->slices - count) % a->slices;
    for (b = 0; b < a->blocks; b++, w += a->slices)
        for (i = 0; i < count; i++) {
            uint32_t p = first + i;
            w[p >= a->slices ? p - a->slices : p] = 0;
        }
    a->head = first;
}

static void advance(amq_aging *a, uint64_t now_ms)
{
    uint64_t target = now_ms / a->gen_ms, d;

    if (target <= a->generation)
        return;
    d = target - a->generation;
    start_generations(a, d >= a->slices ? a->slices : (uint32_t)d);
    a->generation = target;
    a->in_gen = 0;
}

/* Count mode: a full generation gives way to a new one before the next add. */
static void before_add(amq_aging *a)
{
    if (!a->time_mode && a->in_gen >= a->gen_size) {
        start_generations(a, 1);
        a->generation++;
        a->in_gen = 0;
    }
}

int amq_aging_impl_add(amq_aging *a, amq_hash128 h)
{
    uint64_t *blk = (uint64_t *)(uintptr_t)block_of(a, h);
    uint64_t bit, changed = 0;
    uint32_t i, x0 = (uint32_t)h.h2, step = step_of(h);

    before_add(a);
    for (i = 0; i < a->k; i++) {
        uint32_t p = phys_of(a, i);
        bit = UINT64_C(1) << index_of(x0 + p * step);
        changed |= ~blk[p] & bit;
        blk[p] |= bit;
    }
    a->in_gen++;
    a->adds++;
    return changed != 0;
}

static int add_batch(amq_aging *a, const amq_hash128 *h, size_t n, uint8_t *added)
{
    size_t i;
    int r;

    for (i = 0; i < n && i < AHEAD; i++)
        prefetch_block(a, h[i]);
    for (i = 0; i < n; i++) {
        if (i + AHEAD < n)
            prefetch_block(a, h[i + AHEAD]);
        r = amq_aging_impl_add(a, h[i]);
        if (added != NULL)
            added[i] = (uint8_t)r;
    }
    return AMQ_OK;
}

static void get_info(const amq_aging *a, amq_aging_info *info)
{
    memset(info, 0, sizeof *info);
    info->time_mode = a->time_mode;
    info->k = a->k;
    info->l = a->l;
    info->blocks = a->blocks;
    info->bytes = a->data.size;
    info->gen_size = a->gen_size;
    info->gen_ms = a->gen_ms;
    info->window = a->gen_size * a->l;
    info->horizon = a->gen_size * a->slices;
    info->window_ms = a->gen_ms * a->l;
    info->horizon_ms = a->gen_ms * a->slices;
    info->generation = a->generation;
    info->in_generation = a->in_gen;
    info->adds = a->adds;
    info->fpp_bound = a->fpp;
}

static uint64_t popcount_slice(const amq_aging *a, uint32_t phys)
{
    const uint64_t *w = words(a);
    uint64_t b, n = 0;
    for (b = 0; b < a->blocks; b++)
        n += (uint64_t)__builtin_popcountll(w[b * a->slices + phys]);
    return n;
}

/* The bound with each position's measured fill in place of the model's. */
double amq_aging_impl_fpp_now(const amq_aging *a, double *fill)
{
    double f[MAX_SLICES], total, run, bits = (double)a->blocks * WORD_BITS, sum = 0.0;
    uint32_t i, j;

    for (i = 0; i < a->slices; i++) {
        f[i] = (double)popcount_slice(a, phys_of(a, i)) / bits;
        sum += f[i];
    }
    *fill = sum / (double)a->slices;
    total = 0.0;
    for (i = 0; i + a->k <= a->slices; i++) {
        run = i > 0 ? 1.0 - f[i - 1] : 1.0;
        for (j = i; j < i + a->k; j++)
            run *= f[j];
        total += run;
    }
    return total > 1.0 ? 1.0 : total;
}


/* ---- construction ---------------------------------------------------------------------- */

int amq_aging_impl_check(const amq_aging *a)
{
    /* k and l may come from a file: summed in 64 bits, a forged l near 2^32
     * cannot wrap k + l into a small (or zero) number of slices. */
    uint64_t slices = (uint64_t)a->k + a->l, bytes;
    if (a->k == 0 || a->k > MAX_K || a->l == 0 || slices > MAX_SLICES || a->slices != slices)
        return AMQ_ERANGE;
    if (a->blocks == 0 || amq_mul3_64(a->blocks, slices, 8, &bytes) != AMQ_OK)
        return AMQ_ERANGE;
    if (bytes > MAX_BYTES || a->gen_size == 0 || a->gen_size > (UINT64_C(1) << 48))
        return AMQ_ERANGE;
    if (a->time_mode > 1 || (a->time_mode && a->gen_ms == 0) ||
        (!a->time_mode && (a->gen_ms != 0 || a->window_ms != 0)))
        return AMQ_ERANGE;
    if (!(a->fpp > 0.0 && a->fpp <= 1.0))
        return AMQ_ERANGE;
    return AMQ_OK;
}

amq_aging *amq_aging_impl_shell(const amq_allocator *alloc)
{
    amq_allocator al;
    amq_aging *a;

    amq_alloc_init(&al, alloc);
    a = amq_calloc(&al, sizeof *a);
    if (a != NULL)
        a->alloc = al;
    return a;
}

void amq_aging_impl_free(amq_aging *a)
{
    amq_allocator al;
    if (a == NULL)
        return;
    al = a->alloc;
    amq_region_free(&a->data, &al);
    amq_free(&al, a, sizeof *a);
}

/* ---- the parameter block ---------------------------------------------------------------
 * 96 bytes (AMQ_AGING_PARAMS_SIZE) little-endian (docs/file-format.md), here because
 * the kind's codec (aging_kind.c) and the raw state of amq/advanced.h
 * (aging_handle.c, which must not need the adapter) share it:
 *   0 u32 k, 4 u32 l, 8 u64 blocks, 16 u32 mode (0 count, 1 time),
 *   20 u32 word bits (64), 24 u64 gen_size, 32 u64 gen_ms, 40 u64 capacity,
 *   48 u64 window_ms, 56 f64 fpp bound, 64 u64 generation, 72 u32 head,
 *   76 u32 reserved (0), 80 u64 in_generation, 88 u64 adds.
 * The payload is blocks * (k + l) u64 words, little-endian, block-major.
 */
void amq_aging_impl_params(const amq_aging *a, uint8_t out[AMQ_AGING_PARAMS_SIZE])
{
    amq_store32(out, a->k);
    amq_store32(out + 4, a->l);
    amq_store64(out + 8, a->blocks);
    amq_store32(out + 16, a->time_mode);
    amq_store32(out + 20, WORD_BITS);
    amq_store64(out + 24, a->gen_size);
    amq_store64(out + 32, a->gen_ms);
    amq_store64(out + 40, a->capacity);
    amq_store64(out + 48, a->window_ms);
    amq_storef64(out + 56, a->fpp);
    amq_store64(out + 64, a->generation);
    amq_store32(out + 72, a->head);
    amq_store32(out + 76, 0);
    amq_store64(out + 80, a->in_gen);
    amq_store64(out + 88, a->adds);
}

static int little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

int amq_aging_impl_parse(const uint8_t *p, size_t len, uint32_t hash_algo, uint64_t seed,
                         const amq_allocator *alloc, amq_aging **out, amq_errinfo *err)
{
    amq_aging *a;
    uint32_t word_bits, reserved;
    int rc;

    if (len != AMQ_AGING_PARAMS_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "aging parameter block is %zu bytes, expected %d", len,
                       AMQ_AGING_PARAMS_SIZE);
    word_bits = amq_load32(p + 20);
    if (word_bits != WORD_BITS)
        return amq_err(err, AMQ_EVERSION, "aging filter with %u-bit words is not supported",
                       word_bits);
    a = amq_aging_impl_shell(alloc);
    if (a == NULL)
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    a->k = amq_load32(p);
    a->l = amq_load32(p + 4);
    a->blocks = amq_load64(p + 8);
    a->time_mode = amq_load32(p + 16);
    a->gen_size = amq_load64(p + 24);
    a->gen_ms = amq_load64(p + 32);
    a->capacity = amq_load64(p + 40);
    a->window_ms = amq_load64(p + 48);
    a->fpp = amq_loadf64(p + 56);
    a->generation = amq_load64(p + 64);
    a->head = amq_load32(p + 72);
    reserved = amq_load32(p + 76);
    a->in_gen = amq_load64(p + 80);
    a->adds = amq_load64(p + 88);
    a->hash_algo = hash_algo;
    a->seed = seed;
    a->slices = a->k + a->l; /* both checked below before any use */
    amq_aging_impl_choose_mask(a);
    rc = amq_aging_impl_check(a);
    if (rc != AMQ_OK || reserved != 0 || a->head >= a->slices ||
        (!a->time_mode && a->in_gen > a->gen_size)) {
        amq_err(err, AMQ_ECORRUPT,
                "invalid aging parameters (k %u, l %u, blocks %llu, mode %u, generation size"
                " %llu, head %u)",
                a->k, a->l, (unsigned long long)a->blocks, a->time_mode,
                (unsigned long long)a->gen_size, a->head);
        amq_aging_impl_free(a);
        return AMQ_ECORRUPT;
    }
    *out = a;
    return AMQ_OK;
}

/* ---- for the adapter (aging_kind.c) and aging_handle.c ------------------------------------ */

int amq_aging_impl_add_batch(amq_aging *a, const amq_hash128 *h, size_t n, uint8_t *added)
{
    return add_batch(a, h, n, added);
}

void amq_aging_impl_contains_batch(const amq_aging *a, const amq_hash128 *h, size_t n,
                                   uint8_t *out)
{
    contains_batch(a, h, n, out, a->slices);
}

void amq_aging_impl_info(const amq_aging *a, amq_aging_info *info)
{
    get_info(a, info);
}

int amq_aging_impl_timed(const amq_aging *a)
{
    return a->time_mode != 0;
}

void amq_aging_impl_advance(amq_aging *a, uint64_t now_ms)
{
    advance(a, now_ms);
}

int amq_aging_impl_contains_at(const amq_aging *a, amq_hash128 h, uint64_t now_ms)
{
    return amq_aging_impl_find_run(a, h, live_at(a, now_ms));
}

void amq_aging_impl_contains_batch_at(const amq_aging *a, const amq_hash128 *h, size_t n,
                                      uint8_t *out, uint64_t now_ms)
{
    contains_batch(a, h, n, out, live_at(a, now_ms));
}

int amq_aging_impl_raw_ok(void)
{
    return little_endian();
}

void amq_aging_impl_data(const amq_aging *a, uint8_t **data, size_t *len)
{
    *data = a->data.data;
    *len = a->data.size;
}

int amq_aging_impl_deserialize(const uint8_t *params, size_t params_len, uint32_t hash_algo,
                          uint64_t seed, const amq_allocator *alloc, amq_aging **out,
                          amq_errinfo *err)
{
    amq_aging *a;
    int rc;

    *out = NULL;
    rc = amq_aging_impl_parse(params, params_len, hash_algo, seed, alloc, &a, err);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_region_alloc(&a->data, &a->alloc, data_size(a));
    if (rc != AMQ_OK) {
        amq_aging_impl_free(a);
        return amq_err(err, AMQ_ENOMEM, "out of memory");
    }
    *out = a;
    return AMQ_OK;
}

int amq_aging_params_bytes(const uint8_t *params, size_t params_len, uint64_t *bytes)
{
    uint64_t slices, blocks;

    *bytes = UINT64_MAX;
    if (params == NULL || params_len != AMQ_AGING_PARAMS_SIZE)
        return AMQ_ECORRUPT;
    /* k + l in 64 bits: two u32 fields near 2^32 must not wrap to a small count */
    slices = (uint64_t)amq_load32(params) + amq_load32(params + 4);
    blocks = amq_load64(params + 8);
    if (slices != 0 && blocks > UINT64_MAX / 8 / slices)
        return AMQ_EOVERFLOW;
    *bytes = blocks * slices * 8;
    return AMQ_OK;
}

void amq_aging_impl_masks(const amq_aging *a, amq_hash128 h, uint64_t *scalar, uint64_t *chosen)
{
    const uint64_t *blk;
    *scalar = *chosen = 0;
    if (a->slices > 64)
        return;
    blk = block_of(a, h);
    *scalar = mask_scalar(blk, h, a->slices);
    *chosen = a->mask(blk, h, a->slices);
}
