/*
 * cuckoo_sizing.c - the cuckoo filter's sizing: which fingerprint width,
 * bucket size and bucket count hold n keys at a rate, the rate a load
 * gives, and the checks of a parameter set.  No filter here, only numbers.
 */
#include <math.h>
#include <string.h>

#include "cuckoo_impl.h"

static int valid_f(uint32_t f)
{
    return f >= AMQ_CUCKOO_MIN_FINGERPRINT && f <= AMQ_CUCKOO_MAX_FINGERPRINT;
}

static int valid_b(uint32_t b)
{
    return b == 1 || b == 2 || b == 4 || b == 8;
}

double amq_cuckoo_max_load(uint32_t b)
{
    /* Below the loads at which the first add fails with the default kicks
     * (docs/cuckoo.md measures them), with a margin; 4-slot buckets run
     * close to theirs, which costs longer eviction walks for the last few
     * per cent but fewer bits per key. */
    switch (b) {
    case 1:
        return 0.40;
    case 2:
        return 0.80;
    case 4:
        return 0.95;
    case 8:
        return 0.96;
    default:
        return 0.0;
    }
}

/* The load (f, b) is sized for: amq_cuckoo_max_load(b), lower for short
 * fingerprints, whose 2^f - 1 alternates per bucket jam large tables
 * early (measured: docs/cuckoo.md). */
/* 1 if n keys at load fit 1-slot buckets of f-bit fingerprints: their first refusal
 * falls as the slots outnumber the 2^f alternates of a bucket (`make
 * bench-cuckoo-one-slot`: 0.47 to 0.50 up to 2^(f + 11) slots for f >= 14, 0.24 for
 * 14 bits at 2^(f + 13)), so tables past 2^(f + 11) slots are no candidate. */
static int one_slot_fits(uint64_t n, double load, uint32_t f)
{
    return (double)n / load <= ldexp(1.0, (int)f + 11);
}

static double load_cap(uint32_t f, uint32_t b)
{
    double max = amq_cuckoo_max_load(b);
    /* One-slot buckets jam below any fixed load unless fingerprints are long for the
     * table (one_slot_fits): under 14 bits no capacity is promised (docs/cuckoo.md) */
    if (b == 1)
        return f >= 14 ? max : 0.0;
    if (f >= 8)
        return max;
    if (f >= 6)
        return b == 2 ? 0.70 : 0.90;
    return b == 2 ? 0.30 : 0.80;
}

double amq_cuckoo_fpp_theory(uint32_t f, uint32_t b, double load)
{
    double q;
    if (!valid_f(f) || !valid_b(b))
        return 1.0;
    q = 1.0 / (double)((UINT64_C(1) << f) - 1);
    return -expm1(2.0 * (double)b * load * log1p(-q));
}

/* The load at which (f, b) reaches rate t, capped at the maximum. */
static double load_for(uint32_t f, uint32_t b, double t)
{
    double q = 1.0 / (double)((UINT64_C(1) << f) - 1);
    double a = log1p(-t) / (2.0 * (double)b * log1p(-q));
    double max = load_cap(f, b);
    return a < max ? a : max;
}

int amq_cuckoo_params_for(uint64_t n, double p, uint32_t fbits, uint32_t bsize,
                          amq_cuckoo_params *params)
{
    static const uint32_t bs[4] = {1, 2, 4, 8};
    double best_bpi = INFINITY, best_load = 0.0, nbd;
    uint32_t best_f = 0, best_b = 0, f, j;

    memset(params, 0, sizeof *params);
    if (n == 0 || !(p > 0.0 && p < 1.0))
        return AMQ_ERANGE;
    if ((fbits != 0 && !valid_f(fbits)) || (bsize != 0 && !valid_b(bsize)))
        return AMQ_ERANGE;
    for (f = AMQ_CUCKOO_MIN_FINGERPRINT; f <= AMQ_CUCKOO_MAX_FINGERPRINT; f++) {
        for (j = 0; j < 4; j++) {
            uint32_t b = bs[j];
            double load, bpi;
            if ((fbits != 0 && f != fbits) || (bsize != 0 && b != bsize))
                continue;
            /* 8-slot buckets save under 3 % of the bits of 4-slot ones but
             * read twice the bits per bucket: only on request. */
            if (bsize == 0 && b == 8)
                continue;
            load = (fbits != 0 && bsize != 0) ? load_cap(f, b) : load_for(f, b, 0.95 * p);
            if (!(load > 0.0) || (b == 1 && !one_slot_fits(n, load, f)))
                continue;
            /* Below what the widest fingerprints reach, a lower rate only thins the
             * table (fpp 1e-12 would leave it 99.5 % empty: 2 GB for a million keys):
             * such a layout is no candidate, a Bloom kind being the tool.  Per layout,
             * not on the best one: a thin 2-slot layout refused the 1-slot one beside it
             * (5 bits at 1 % refused while 4 were taken). */
            if (load < 0.5 * load_cap(f, b))
                continue;
            /* Ties (equal bits per key) go to the wider fingerprint. */
            bpi = (double)f / load;
            if (bpi <= best_bpi * (1.0 + 1e-12)) {
                best_bpi = bpi < best_bpi ? bpi : best_bpi;
                best_load = load;
                best_f = f;
                best_b = b;
            }
        }
    }
    if (best_f == 0)
        return AMQ_ERANGE;
    /* Small tables fill less evenly (their first failure comes at a lower
     * load than a large table's): 2 sqrt(nb) spare buckets, a small share
     * of a large table, keep them from filling before n. */
    nbd = ceil((double)n / ((double)best_b * best_load));
    nbd += ceil(2.0 * sqrt(nbd));
    if (!(nbd >= 1.0 && nbd <= (double)AMQ_CUCKOO_MAX_BUCKETS))
        return AMQ_ERANGE;
    params->fingerprint_bits = best_f;
    params->bucket_size = best_b;
    params->buckets = (uint64_t)nbd;
    params->max_kicks = AMQ_CUCKOO_DEFAULT_KICKS;
    params->hash_algo = AMQ_HASH_MULMIX;
    params->seed = 0;
    params->capacity = n;
    params->fpp = amq_cuckoo_fpp_theory(best_f, best_b,
                                        (double)n / ((double)params->buckets * best_b));
    return AMQ_OK;
}

int amq_cuckoo_params_check(const amq_cuckoo_params *p)
{
    if (!valid_f(p->fingerprint_bits) || !valid_b(p->bucket_size))
        return AMQ_ERANGE;
    if (p->buckets == 0 || p->buckets > AMQ_CUCKOO_MAX_BUCKETS || p->max_kicks == 0 ||
        p->max_kicks > AMQ_CUCKOO_MAX_KICKS)
        return AMQ_ERANGE;
    if (!(p->fpp >= 0.0 && p->fpp <= 1.0))
        return AMQ_ERANGE;
    return amq_hash_check(p->hash_algo, p->seed);
}

size_t amq_cuckoo_data_size(const amq_cuckoo_params *p)
{
    return (size_t)ct_bytes(p->buckets * p->bucket_size, p->fingerprint_bits);
}

