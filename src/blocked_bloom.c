/*
 * blocked_bloom.c - the cache-local Bloom filter: sizing, life cycle, adds,
 * the choice of query path.  The query loops live in blocked_query.h,
 * instantiated per instruction set by blocked_bloom_scalar.c, _avx2.c and
 * _avx512.c; the kind's table for the generic handle (adapter and codec) is
 * blocked_bloom_kind.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blocked_bloom_internal.h"
#include "common/cpu.h"
#include "kind.h" /* amq_union_items */

/* ---- theory and sizing ---------------------------------------------------------
 * Keys land in blocks as balls in bins: a block holds j keys with
 * probability Poisson(j; lambda = n / blocks).  A block holding j keys has
 * received b = j k probe bits, each uniform over its m = 512 bits.  A
 * foreign key's k probes land on exactly d distinct bits with probability
 * P_d = S(k, d) m (m-1) ... (m-d+1) / m^k (S: Stirling numbers of the second
 * kind), and it is a false positive when those d bits are all set:
 * probability Q(d, b), which obeys
 *     Q(0, b) = 1,  Q(d, 0) = 0 (d > 0),
 *     Q(d, b) = (d/m) Q(d-1, b-1) + (1 - d/m) Q(d, b-1)
 * (the b-th probe bit either lands on one of the d bits or not).  Every
 * term is positive, so the sum is accurate to double precision at any rate.
 * The familiar (1 - e^(-kj/m))^k replaces the distribution of set bits by
 * its mean and underestimates the rate of a 512-bit block by about 1 %
 * (0.957 % instead of 0.968 % at 10 bits per key, k = 7); sizing through
 * the exact form is what makes a filter sized for p measure p.
 * Uneven block loads make the rate higher than a classic filter's at the
 * same size (0.97 % against 0.82 % at 10 bits per key).
 */

#define BLOCK_M ((double)AMQ_BLOCKED_BLOCK_BITS)

/* Above this load (fewer than 1/8 bit per key) the rate is within 1e-9 of
 * 1 and the exact sum would be slow: use the mean-fill approximation. */
#define LAMBDA_EXACT_MAX 4096.0

static double fpp_mean_fill(double lambda, uint32_t k)
{
    /* sum_j Poisson(j) (1 - r^j)^k with r = (1 - 1/m)^k, expanded by the
     * binomial theorem and summed in closed form (the Poisson generating
     * function): sum_t C(k,t) (-1)^t exp(-lambda (1 - r^t)). */
    double r = pow(1.0 - 1.0 / BLOCK_M, (double)k), sum = 0.0, c = 1.0;
    uint32_t t;
    for (t = 0; t <= k; t++) {
        sum += ((t & 1) ? -c : c) * exp(-lambda * (1.0 - pow(r, (double)t)));
        c = c * (double)(k - t) / (double)(t + 1);
    }
    return sum < 0.0 ? 0.0 : (sum > 1.0 ? 1.0 : sum);
}

double amq_blk_fpp_lambda(double lambda, uint32_t k)
{
    double sd, pmf = 0.0, sum = 0.0, stir[AMQ_BLOCKED_MAX_K + 1], pd[AMQ_BLOCKED_MAX_K + 1],
               q[AMQ_BLOCKED_MAX_K + 1], fall;
    uint64_t j, lo, hi, b, bmax;
    uint32_t d, i;

    if (!(lambda > 0.0))
        return 0.0;
    if (k == 0 || k > AMQ_BLOCKED_MAX_K)
        return 1.0;
    if (lambda > LAMBDA_EXACT_MAX)
        return fpp_mean_fill(lambda, k);

    /* P_d from the Stirling numbers S(k, d) (exact in doubles for k <= 16). */
    memset(stir, 0, sizeof stir);
    stir[0] = 1.0;
    for (i = 1; i <= k; i++) {
        for (d = i; d >= 1; d--)
            stir[d] = (double)d * stir[d] + stir[d - 1];
        stir[0] = 0.0; /* S(i, 0) = 0 for i > 0 */
    }
    fall = 1.0;
    for (d = 1; d <= k; d++) {
        fall *= (BLOCK_M - (double)(d - 1)) / BLOCK_M;
        pd[d] = stir[d] * fall / pow(BLOCK_M, (double)(k - d));
    }

    /* The Poisson mass outside mode +- (14 sd + 40) is below 1e-40. */
    sd = sqrt(lambda);
    lo = lambda > 14.0 * sd + 40.0 ? (uint64_t)(lambda - 14.0 * sd - 40.0) : 0;
    hi = (uint64_t)(lambda + 14.0 * sd + 40.0);
    bmax = hi * k;

    q[0] = 1.0;
    for (d = 1; d <= k; d++)
        q[d] = 0.0;
    for (b = 0, j = 0; b <= bmax; b++) {
        if (b > 0)
            for (d = k; d >= 1; d--)
                q[d] = ((double)d * q[d - 1] + (BLOCK_M - (double)d) * q[d]) / BLOCK_M;
        if (b != j * k)
            continue;
        if (j == lo) {
            /* log(lo!) summed here: lgamma() writes the global signgam,
             * a data race between threads asking for stats. */
            double logfact = 0.0;
            uint64_t f2;
            for (f2 = 2; f2 <= lo; f2++)
                logfact += log((double)f2);
            pmf = exp(-lambda + (double)lo * log(lambda) - logfact);
        }
        if (j >= lo) {
            double f = 0.0;
            for (d = 1; d <= k; d++)
                f += pd[d] * q[d];
            sum += pmf * f;
            pmf *= lambda / (double)(j + 1);
        }
        j++;
    }
    return sum > 1.0 ? 1.0 : sum;
}

double amq_blocked_fpp_theory(uint64_t blocks, uint32_t k, uint64_t n)
{
    if (n == 0)
        return 0.0;
    if (blocks == 0)
        return 1.0;
    return amq_blk_fpp_lambda((double)n / (double)blocks, k);
}

uint32_t amq_blk_best_k_lambda(double lambda, double *fpp)
{
    uint32_t k, best = 1;
    double f, bf = amq_blk_fpp_lambda(lambda, 1);

    for (k = 2; k <= AMQ_BLOCKED_MAX_K; k++) {
        f = amq_blk_fpp_lambda(lambda, k);
        if (!(f < bf))
            break;
        bf = f;
        best = k;
    }
    *fpp = bf;
    return best;
}

int amq_blk_max_lambda(double p, double *lambda, uint32_t *k)
{
    /* The rate rises with the load: bisect on lambda between 512 / 1000
     * (1000 bits per key) and 512 / 0.5. */
    double lo = AMQ_BLOCKED_BLOCK_BITS / 1000.0, hi = AMQ_BLOCKED_BLOCK_BITS * 2.0, mid, f;
    int i;

    if (!(p > 0.0 && p < 1.0))
        return AMQ_ERANGE;
    (void)amq_blk_best_k_lambda(lo, &f);
    if (f > p)
        return AMQ_ERANGE;
    for (i = 0; i < 60; i++) {
        mid = 0.5 * (lo + hi);
        (void)amq_blk_best_k_lambda(mid, &f);
        if (f <= p)
            lo = mid;
        else
            hi = mid;
    }
    *lambda = lo;
    *k = amq_blk_best_k_lambda(lo, &f);
    return AMQ_OK;
}

/* The best k for a size, and its rate.  The rate is unimodal in k: scan
 * up from 1 and stop at the first increase. */
uint32_t amq_blk_best_k(uint64_t blocks, uint64_t n, double *fpp)
{
    uint32_t k, best = 1;
    double f, bf = amq_blocked_fpp_theory(blocks, 1, n);

    for (k = 2; k <= AMQ_BLOCKED_MAX_K; k++) {
        f = amq_blocked_fpp_theory(blocks, k, n);
        if (!(f < bf))
            break;
        bf = f;
        best = k;
    }
    *fpp = bf;
    return best;
}

/* Whether some k gives a rate of at most p at this size: the predicate the
 * search below bisects on, which amq_blk_best_k answers after every k up to the
 * best.  Unimodal in k, the rate's local minimum is its minimum: walk
 * downhill from *hint (the k best at the size tried last, near this one's)
 * and stop at the first rate at most p - two or three rates per size, the
 * same answer. */
static int fits(uint64_t blocks, uint64_t n, double p, uint32_t *hint)
{
    uint32_t k = *hint;
    double f = amq_blocked_fpp_theory(blocks, k, n), g;
    int dir = 0;

    if (k > 1 && !(f <= p) && (g = amq_blocked_fpp_theory(blocks, k - 1, n)) < f) {
        dir = -1;
        k--;
        f = g;
    } else if (k < AMQ_BLOCKED_MAX_K && !(f <= p)) {
        dir = 1;
    }
    while (!(f <= p) && dir != 0 && (dir < 0 ? k > 1 : k < AMQ_BLOCKED_MAX_K)) {
        g = amq_blocked_fpp_theory(blocks, dir < 0 ? k - 1 : k + 1, n);
        if (!(g < f))
            break;
        k = dir < 0 ? k - 1 : k + 1;
        f = g;
    }
    *hint = k;
    return f <= p;
}

#define MAX_BITS_PER_KEY 1000.0

int amq_blocked_blocks_for(uint64_t n, double p, uint64_t *blocks, uint32_t *k)
{
    uint64_t lo, hi, mid, cap;
    uint32_t hint;
    double f, capd;

    if (n == 0 || !(p > 0.0 && p < 1.0))
        return AMQ_ERANGE;
    capd = ceil((double)n * MAX_BITS_PER_KEY / AMQ_BLOCKED_BLOCK_BITS);
    cap = capd >= (double)AMQ_BLOCKED_MAX_BLOCKS ? AMQ_BLOCKED_MAX_BLOCKS : (uint64_t)capd;
    if (cap < 1)
        cap = 1;
    /* Exponential search from the classic filter's size, then bisection on
     * the number of blocks (the best rate falls as blocks grow). */
    hi = (uint64_t)ceil(-(double)n * log(p) / (0.6931471805599453 * 0.6931471805599453) /
                        AMQ_BLOCKED_BLOCK_BITS);
    if (hi < 1)
        hi = 1;
    if (hi > cap)
        hi = cap;
    lo = 0; /* invariant: rate(lo) > p (0 blocks: rate 1) */
    hint = (uint32_t)fmin(fmax(floor(-log2(p) + 0.5), 1.0), (double)AMQ_BLOCKED_MAX_K);
    for (;;) {
        if (fits(hi, n, p, &hint))
            break;
        if (hi == cap)
            return AMQ_ERANGE;
        lo = hi;
        hi = hi > cap / 2 ? cap : hi * 2;
    }
    while (hi - lo > 1) {
        mid = lo + (hi - lo) / 2;
        if (fits(mid, n, p, &hint))
            hi = mid;
        else
            lo = mid;
    }
    *blocks = hi;
    *k = amq_blk_best_k(hi, n, &f);
    return AMQ_OK;
}

int amq_blocked_blocks_for_bpk(uint64_t n, double bits_per_key, uint64_t *blocks, uint32_t *k)
{
    double b;
    double f;

    if (n == 0 || !(bits_per_key > 0.0 && bits_per_key <= MAX_BITS_PER_KEY))
        return AMQ_ERANGE;
    b = ceil((double)n * bits_per_key / AMQ_BLOCKED_BLOCK_BITS);
    if (b < 1.0)
        b = 1.0;
    if (b > (double)AMQ_BLOCKED_MAX_BLOCKS)
        return AMQ_ERANGE;
    *blocks = (uint64_t)b;
    *k = amq_blk_best_k(*blocks, n, &f);
    return AMQ_OK;
}

int amq_blocked_params_for(uint64_t n, double p, amq_blocked_params *params)
{
    int rc;

    memset(params, 0, sizeof *params);
    rc = amq_blocked_blocks_for(n, p, &params->blocks, &params->k);
    if (rc != AMQ_OK)
        return rc;
    params->hash_algo = AMQ_HASH_XXH3;
    params->capacity = n;
    params->fpp = p;
    return AMQ_OK;
}

size_t amq_blocked_data_size(const amq_blocked_params *params)
{
    return (size_t)(params->blocks * AMQ_BLOCKED_BLOCK_BYTES);
}

int amq_blk_check_params(const amq_blocked_params *p)
{
    if (p->blocks == 0 || p->blocks > AMQ_BLOCKED_MAX_BLOCKS)
        return AMQ_ERANGE;
    if (p->blocks > SIZE_MAX / AMQ_BLOCKED_BLOCK_BYTES)
        return AMQ_EOVERFLOW;
    if (p->k == 0 || p->k > AMQ_BLOCKED_MAX_K)
        return AMQ_ERANGE;
    if (!(p->fpp >= 0.0 && p->fpp < 1.0))
        return AMQ_ERANGE;
    return amq_hash_check(p->hash_algo, p->seed);
}

/* ---- query paths ------------------------------------------------------------------
 * Chosen once: the best path the CPU supports, capped by AMQ_SIMD (common/cpu.h).  The
 * result is cached in an atomic (computing it twice is harmless).
 */

static int cpu_has(uint32_t simd)
{
    if (simd == AMQ_SIMD_AVX2)
        return amq_blk_ops_avx2 != NULL && amq_cpu_has(AMQ_CPU_AVX2);
    if (simd == AMQ_SIMD_AVX512)
        return amq_blk_ops_avx512 != NULL && amq_cpu_has(AMQ_CPU_AVX512F);
    return simd == AMQ_SIMD_SCALAR;
}

/* Bit s set: path s usable.  0 until computed. */
static _Atomic uint32_t simd_usable;

static uint32_t usable_paths(void)
{
    uint32_t u = atomic_load_explicit(&simd_usable, memory_order_relaxed);
    uint32_t s;

    if (u != 0)
        return u;
    u = 1u << AMQ_SIMD_SCALAR;
    for (s = AMQ_SIMD_AVX2; s <= AMQ_SIMD_AVX512; s++)
        if (cpu_has(s))
            u |= 1u << s;
    atomic_store_explicit(&simd_usable, u, memory_order_relaxed);
    return u;
}

static const amq_blk_simd_ops *ops_of(uint32_t simd)
{
    switch (simd) {
    case AMQ_SIMD_AVX2:
        return amq_blk_ops_avx2;
    case AMQ_SIMD_AVX512:
        return amq_blk_ops_avx512;
    default:
        return amq_blk_ops_scalar;
    }
}

const amq_blk_simd_ops *amq_blk_simd_select(uint32_t simd)
{
    uint32_t u = usable_paths();

    if (simd == AMQ_SIMD_AUTO) {
        for (simd = AMQ_SIMD_AVX512; simd > AMQ_SIMD_SCALAR; simd--)
            if (u & (1u << simd))
                break;
    }
    if (simd > AMQ_SIMD_AVX512 || !(u & (1u << simd)))
        return NULL;
    return ops_of(simd);
}

int amq_simd_supported(uint32_t simd)
{
    return amq_blk_simd_select(simd) != NULL;
}

const char *amq_simd_name(uint32_t simd)
{
    const amq_blk_simd_ops *o;
    if (simd == AMQ_SIMD_AUTO) {
        o = amq_blk_simd_select(AMQ_SIMD_AUTO);
        return o->name;
    }
    switch (simd) {
    case AMQ_SIMD_SCALAR:
        return "scalar";
    case AMQ_SIMD_AVX2:
        return "avx2";
    case AMQ_SIMD_AVX512:
        return "avx512";
    default:
        return NULL;
    }
}

/* A view's one-key add: it refuses, so that the writable filters' adds
 * test nothing. */
static int add_readonly(amq_blk_one *o, const void *key, size_t len)
{
    (void)o;
    (void)key;
    (void)len;
    return AMQ_EREADONLY;
}

/* The one-key add of b's path and mode (exclusive or concurrent) for b's
 * hash: chosen here, once, not per key. */
static void pick_key_add(amq_blocked *b)
{
    const amq_blk_simd_ops *o = b->concurrent ? amq_blk_ops_concurrent : b->simd;
    if (amq_region_is_borrowed(&b->data))
        b->key_add = add_readonly;
    else if (b->one.g.hash_algo != AMQ_HASH_XXH3)
        b->key_add = o->add_key;
    else if (b->one.g.k <= 8)
        b->key_add =
            b->one.g.seed == 0 ? o->add_xxh3_seed0_k[b->one.g.k] : o->add_xxh3_k[b->one.g.k];
    else
        b->key_add = b->one.g.seed == 0 ? o->add_xxh3_seed0 : o->add_xxh3;
}

/* Path o for b, and o's one-key query and add for b's hash. */
static void use_path(amq_blocked *b, const amq_blk_simd_ops *o)
{
    b->simd = o;
    if (b->one.g.hash_algo != AMQ_HASH_XXH3)
        b->key_query = o->contains_key;
    else
        b->key_query = b->one.g.seed == 0 ? o->contains_xxh3_seed0 : o->contains_xxh3;
    pick_key_add(b);
}

int amq_blocked_set_simd(amq_blocked *b, uint32_t simd)
{
    const amq_blk_simd_ops *o;
    if (simd > AMQ_SIMD_AVX512)
        return AMQ_EINVAL;
    o = amq_blk_simd_select(simd);
    if (o == NULL)
        return AMQ_EUNSUPPORTED;
    use_path(b, o);
    return AMQ_OK;
}

uint32_t amq_blocked_simd(const amq_blocked *b)
{
    return b->simd->simd;
}

/* ---- life cycle ------------------------------------------------------------------ */

static amq_blocked *shell(const amq_blocked_params *params, const amq_allocator *alloc)
{
    amq_allocator a;
    amq_blocked *b;

    amq_alloc_init(&a, alloc);
    b = amq_calloc(&a, sizeof *b);
    if (b == NULL)
        return NULL;
    b->p = *params;
    b->one.g.blocks = params->blocks;
    b->one.g.k = params->k;
    b->one.g.hash_algo = params->hash_algo;
    b->one.g.seed = params->seed;
    b->alloc = a;
    atomic_init(&b->one.items, 0);
    use_path(b, amq_blk_simd_select(AMQ_SIMD_AUTO));
    return b;
}

int amq_blocked_new(const amq_blocked_params *params, const amq_allocator *alloc, amq_blocked **out)
{
    amq_blocked *b;
    int rc;

    *out = NULL;
    rc = amq_blk_check_params(params);
    if (rc != AMQ_OK)
        return rc;
    b = shell(params, alloc);
    if (b == NULL)
        return AMQ_ENOMEM;
    rc = amq_region_alloc(&b->data, &b->alloc, amq_blocked_data_size(params));
    if (rc != AMQ_OK) {
        amq_blocked_free(b);
        return rc == AMQ_EOVERFLOW ? AMQ_ENOMEM : rc;
    }
    b->one.g.data = b->data.data;
    *out = b;
    return AMQ_OK;
}

int amq_blocked_view(const amq_blocked_params *params, const void *data, size_t len, uint64_t items,
                     const amq_allocator *alloc, amq_blocked **out)
{
    amq_blocked *b;
    int rc;

    *out = NULL;
    rc = amq_blk_check_params(params);
    if (rc != AMQ_OK)
        return rc;
    if (len != amq_blocked_data_size(params) || ((uintptr_t)data & 63) != 0)
        return AMQ_EINVAL;
    b = shell(params, alloc);
    if (b == NULL)
        return AMQ_ENOMEM;
    amq_region_borrow(&b->data, data, len);
    b->one.g.data = b->data.data;
    pick_key_add(b);
    atomic_store_explicit(&b->one.items, items, memory_order_relaxed);
    *out = b;
    return AMQ_OK;
}

/* Copies words with relaxed atomic loads (adds may run on src). */
void amq_blk_copy_words(uint8_t *dst, const uint8_t *src, size_t bytes)
{
    size_t i;
    uint64_t w;
    for (i = 0; i < bytes; i += 8) {
        w = amq_blk_word(src + i, 0);
        memcpy(dst + i, &w, 8);
    }
}

int amq_blocked_clone(const amq_blocked *src, const amq_allocator *alloc, amq_blocked **out)
{
    amq_blocked *b;
    int rc;

    *out = NULL;
    rc = amq_blocked_new(&src->p, alloc, &b);
    if (rc != AMQ_OK)
        return rc;
    amq_blk_copy_words(b->data.data, src->data.data, src->data.size);
    atomic_store_explicit(&b->one.items, amq_blocked_items(src), memory_order_relaxed);
    b->concurrent = src->concurrent;
    use_path(b, src->simd);
    *out = b;
    return AMQ_OK;
}

void amq_blocked_free(amq_blocked *b)
{
    amq_allocator a;
    if (b == NULL)
        return;
    a = b->alloc;
    amq_region_free(&b->data, &a);
    amq_free(&a, b, sizeof *b);
}

/* ---- adds ---------------------------------------------------------------------------
 * The loops are blocked_query.h's: in exclusive mode the path's own, which
 * write a block back with as few stores as the instruction set allows; in
 * concurrent mode those of blocked_bloom_concurrent.c, over the atomic
 * form of blocked_impl.h.  Both prefetch each block (for writing) W keys
 * ahead, as the queries do.
 */

/* The table whose adds this filter's mode uses. */
static const amq_blk_simd_ops *adds_of(const amq_blocked *b)
{
    return b->concurrent ? amq_blk_ops_concurrent : b->simd;
}

/* Adds `added` new keys to the item count; returns it. */
static int64_t count_items(amq_blocked *b, uint64_t added)
{
    if (added == 0)
        return 0;
    if (b->concurrent)
        atomic_fetch_add_explicit(&b->one.items, added, memory_order_relaxed);
    else
        atomic_store_explicit(&b->one.items,
                              atomic_load_explicit(&b->one.items, memory_order_relaxed) + added,
                              memory_order_relaxed);
    return (int64_t)added;
}

int amq_blocked_set_concurrent(amq_blocked *b, int on)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    b->concurrent = on != 0;
    pick_key_add(b);
    return AMQ_OK;
}

int amq_blocked_is_concurrent(const amq_blocked *b)
{
    return b->concurrent;
}

/* The batched adds' common end: counts what was added, hands the count out. */
static int added_out(amq_blocked *b, uint64_t added, uint64_t *count)
{
    count_items(b, added);
    if (count != NULL)
        *count = added;
    return AMQ_OK;
}

int amq_blocked_add_batch(amq_blocked *b, const amq_hash128 *h, size_t n, uint8_t *added,
                          uint64_t *count)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    return added_out(b, adds_of(b)->add_hashes(&b->one.g, h, n, added), count);
}

int amq_blocked_add_batch64(amq_blocked *b, const uint64_t *h, size_t n, uint8_t *added,
                            uint64_t *count)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    return added_out(b, adds_of(b)->add_hashes64(&b->one.g, h, n, added), count);
}

int amq_blocked_add_batch_keys(amq_blocked *b, const amq_slice *keys, size_t n, uint8_t *added,
                               uint64_t *count)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    return added_out(b, adds_of(b)->add_keys(&b->one.g, keys, n, added), count);
}

int amq_blocked_add_batch_fixed(amq_blocked *b, const void *keys, size_t key_len, size_t n,
                                uint8_t *added, uint64_t *count)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    return added_out(b, adds_of(b)->add_fixed(&b->one.g, keys, key_len, n, added), count);
}

int amq_blocked_add_split(amq_blocked *b, const uint64_t *h1, const uint32_t *u, size_t n)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    count_items(b, adds_of(b)->add_split(&b->one.g, h1, u, n));
    return AMQ_OK;
}

int amq_blocked_add_raw8(amq_blocked *b, const void *keys, size_t n)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    if (b->p.hash_algo != AMQ_HASH_XXH3)
        return AMQ_EINVAL;
    count_items(b, adds_of(b)->add_raw8(&b->one.g, keys, n));
    return AMQ_OK;
}

amq_hash128 amq_blocked_hash(const amq_blocked *b, const void *key, size_t len)
{
    return amq_hash_key(b->p.hash_algo, b->p.seed, key, len);
}

int amq_blocked_add_hash(amq_blocked *b, amq_hash128 h)
{
    int r;
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    uint8_t *blk = b->data.data + amq_blk_index(h.h1, b->p.blocks) * 64;
    r = adds_of(b)->add(blk, amq_blk_u(h), b->p.k);
    count_items(b, (uint64_t)r);
    return r;
}

/* A jump to the entry chosen for the filter (pick_key_add): it refuses for
 * a view, and counts what it adds. */
int amq_blocked_add(amq_blocked *b, const void *key, size_t len)
{
    return b->key_add(&b->one, key, len);
}

/* ---- queries ------------------------------------------------------------------------- */

int amq_blocked_contains_hash(const amq_blocked *b, amq_hash128 h)
{
    return b->simd->contains(&b->one.g, h);
}

int amq_blocked_contains(const amq_blocked *b, const void *key, size_t len)
{
    return b->key_query(&b->one.g, key, len);
}

/* The batched queries' common end: hands the count of "maybe" answers out. */
static int maybe_out(uint64_t maybe, uint64_t *count)
{
    if (count != NULL)
        *count = maybe;
    return AMQ_OK;
}

int amq_blocked_contains_batch(const amq_blocked *b, const amq_hash128 *h, size_t n, uint8_t *out,
                               uint64_t *count)
{
    return maybe_out(b->simd->contains_hashes(&b->one.g, h, n, out), count);
}

int amq_blocked_contains_batch64(const amq_blocked *b, const uint64_t *h, size_t n, uint8_t *out,
                                 uint64_t *count)
{
    return maybe_out(b->simd->contains_hashes64(&b->one.g, h, n, out), count);
}

int amq_blocked_contains_batch_keys(const amq_blocked *b, const amq_slice *keys, size_t n,
                                    uint8_t *out, uint64_t *count)
{
    return maybe_out(b->simd->contains_keys(&b->one.g, keys, n, out), count);
}

int amq_blocked_contains_batch_fixed(const amq_blocked *b, const void *keys, size_t key_len,
                                     size_t n, uint8_t *out, uint64_t *count)
{
    return maybe_out(b->simd->contains_fixed(&b->one.g, keys, key_len, n, out), count);
}

/* ---- whole-filter operations -------------------------------------------------------------- */

int amq_blocked_clear(amq_blocked *b)
{
    if (amq_region_is_borrowed(&b->data))
        return AMQ_EREADONLY;
    memset(b->data.data, 0, b->data.size);
    atomic_store_explicit(&b->one.items, 0, memory_order_relaxed);
    return AMQ_OK;
}

const char *amq_blk_geometry_difference(const amq_blocked *a, const amq_blocked *b)
{
    if (a->p.blocks != b->p.blocks)
        return "different numbers of blocks";
    if (a->p.k != b->p.k)
        return "different numbers of probes";
    if (a->p.hash_algo != b->p.hash_algo || a->p.seed != b->p.seed)
        return "different hash algorithms or seeds";
    return NULL;
}

int amq_blocked_merge(amq_blocked *dst, const amq_blocked *src)
{
    size_t i;
    uint64_t a, c, si, di, changed = 0;

    if (amq_blk_geometry_difference(dst, src) != NULL)
        return AMQ_EINCOMPAT;
    if (amq_region_is_borrowed(&dst->data))
        return AMQ_EREADONLY;
    for (i = 0; i < dst->data.size; i += 8) {
        a = amq_blk_word(dst->data.data + i, 0);
        c = amq_blk_word(src->data.data + i, 0);
        changed |= c & ~a;
        atomic_store_explicit(amq_blk_word_ptr(dst->data.data + i, 0), a | c, memory_order_relaxed);
    }
    si = amq_blocked_items(src);
    di = amq_blocked_items(dst);
    atomic_store_explicit(&dst->one.items,
                          amq_union_items(di, si,
                                          amq_blk_estimate_items(dst->data.data, dst->p.blocks,
                                                                 dst->p.k),
                                          changed != 0),
                          memory_order_relaxed);
    return AMQ_OK;
}

/* Swamidass-Baldi: items that set x of m bits with k probes (0 for a full array's
 * share, which no count can be read from). */
static double items_from_bits(uint64_t x, uint64_t m, uint32_t k)
{
    if (m == 0 || k == 0 || x >= m)
        return 0.0;
    return -((double)m / (double)k) * log1p(-(double)x / (double)m);
}

/* ANDs src's blocks into dst's (same geometry).  The bits of *xa, *xc, *xu
 * (dst, src, their union) are counted for the item estimate. */
static void and_words(uint8_t *dst, const uint8_t *src, size_t bytes, uint64_t *xa,
                      uint64_t *xc, uint64_t *xu)
{
    size_t i;
    uint64_t a, c;
    for (i = 0; i < bytes; i += 8) {
        a = amq_blk_word(dst + i, 0);
        c = amq_blk_word(src + i, 0);
        *xa += (uint64_t)__builtin_popcountll(a);
        *xc += (uint64_t)__builtin_popcountll(c);
        *xu += (uint64_t)__builtin_popcountll(a | c);
        atomic_store_explicit(amq_blk_word_ptr(dst + i, 0), a & c, memory_order_relaxed);
    }
}

/* Keeps what both filters may hold: the AND of the blocks.  The item count
 * becomes |A| + |B| - |A u B|, each estimated from its bits (the AND
 * alone over-counts: bits set by different keys of A and B coincide). */
int amq_blk_intersect(amq_blocked *dst, const amq_blocked *src)
{
    uint64_t xa = 0, xc = 0, xu = 0, m = dst->p.blocks * 512, lim;
    double est;

    if (amq_blk_geometry_difference(dst, src) != NULL)
        return AMQ_EINCOMPAT;
    if (amq_region_is_borrowed(&dst->data))
        return AMQ_EREADONLY;
    and_words(dst->data.data, src->data.data, dst->data.size, &xa, &xc, &xu);
    est = items_from_bits(xa, m, dst->p.k) + items_from_bits(xc, m, dst->p.k) -
          items_from_bits(xu, m, dst->p.k);
    lim = amq_blocked_items(dst) < amq_blocked_items(src) ? amq_blocked_items(dst)
                                                           : amq_blocked_items(src);
    est = est < 0.0 ? 0.0 : floor(est + 0.5);
    atomic_store_explicit(&dst->one.items, est < (double)lim ? (uint64_t)est : lim,
                          memory_order_relaxed);
    return AMQ_OK;
}

void amq_blocked_get_params(const amq_blocked *b, amq_blocked_params *out)
{
    *out = b->p;
}

uint64_t amq_blocked_items(const amq_blocked *b)
{
    return atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)&b->one.items, memory_order_relaxed);
}

void amq_blocked_set_items(amq_blocked *b, uint64_t items)
{
    atomic_store_explicit(&b->one.items, items, memory_order_relaxed);
}

int amq_blocked_is_readonly(const amq_blocked *b)
{
    return amq_region_is_borrowed(&b->data);
}

static unsigned block_popcount(const uint8_t *blk)
{
    unsigned w, c = 0;
    for (w = 0; w < 8; w++)
        c += (unsigned)__builtin_popcountll(amq_blk_word(blk, w));
    return c;
}

double amq_blk_estimate_items(const uint8_t *d, uint64_t blocks, uint32_t k)
{
    double table[AMQ_BLOCKED_BLOCK_BITS + 1], sum = 0.0, per = log1p(-1.0 / AMQ_BLOCKED_BLOCK_BITS);
    uint64_t i;
    unsigned c;

    /* A full block says only "at least this many": counted as 1/2 bit short. */
    for (c = 0; c <= AMQ_BLOCKED_BLOCK_BITS; c++)
        table[c] = log1p(-((c < AMQ_BLOCKED_BLOCK_BITS ? (double)c : c - 0.5) /
                           AMQ_BLOCKED_BLOCK_BITS)) /
                   ((double)k * per);
    for (i = 0; i < blocks; i++)
        sum += table[block_popcount(d + i * 64)];
    return sum;
}

uint64_t amq_blocked_bits_set(const amq_blocked *b)
{
    uint64_t i, n = 0;
    for (i = 0; i < b->p.blocks; i++)
        n += block_popcount(b->data.data + i * 64);
    return n;
}

double amq_blocked_fpp_now(const amq_blocked *b)
{
    double table[AMQ_BLOCKED_BLOCK_BITS + 1], sum = 0.0;
    uint64_t i;
    unsigned c;

    for (c = 0; c <= AMQ_BLOCKED_BLOCK_BITS; c++)
        table[c] = pow((double)c / AMQ_BLOCKED_BLOCK_BITS, (double)b->p.k);
    for (i = 0; i < b->p.blocks; i++)
        sum += table[block_popcount(b->data.data + i * 64)];
    return sum / (double)b->p.blocks;
}

const uint8_t *amq_blocked_data(const amq_blocked *b)
{
    return b->data.data;
}
