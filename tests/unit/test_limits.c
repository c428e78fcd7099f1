/*
 * test_limits.c - absurd parameters at every library surface: each is
 * refused with the documented status (and, where the function fills an
 * amq_errinfo, a message), nothing is allocated, no output pointer is left
 * dangling.  One table per surface; a row is (name, inputs, expected
 * status).  The command-line side is tests/cli/test_limits.sh.
 *
 * A new kind adds its rows to kind_rows[] (amq_filter_new is the surface
 * every kind shares; the table has the kind-specific options) and, for its
 * own header's functions, a table of its own here.  Options that do not
 * apply to a kind are ignored by it (amq/filter.h), so they are not rows.
 */
#include <float.h>

#include "amq.h"
#include "batch.h"
#include "test.h"

#define U64MAX UINT64_MAX
#define P63 (UINT64_C(1) << 63)
#define BMAX AMQ_BLOOM_MAX_BITS


/* ---- Bloom sizing: amq_bloom_bits_for, _size_bpk, _params_for ---------------------- */

static const struct sizing_row {
    const char *name;
    uint64_t n;
    double x; /* p or bits per key */
    int want_fpp, want_bpk;
} sizing_rows[] = {
    {"n 0", 0, 0.01, AMQ_ERANGE, AMQ_ERANGE},
    {"n 1", 1, 0.01, AMQ_OK, AMQ_ERANGE}, /* 0.01 bits per key is fine... */
    {"p/bpk 0", 1000, 0.0, AMQ_ERANGE, AMQ_ERANGE},
    {"p/bpk -0", 1000, -0.0, AMQ_ERANGE, AMQ_ERANGE},
    {"p/bpk negative", 1000, -0.5, AMQ_ERANGE, AMQ_ERANGE},
    {"p/bpk 1", 1000, 1.0, AMQ_ERANGE, AMQ_OK},
    {"p/bpk NaN", 1000, NAN, AMQ_ERANGE, AMQ_ERANGE},
    {"p/bpk +inf", 1000, INFINITY, AMQ_ERANGE, AMQ_ERANGE},
    {"p/bpk -inf", 1000, -INFINITY, AMQ_ERANGE, AMQ_ERANGE},
    {"p/bpk denormal", 1000, 4.9e-324, AMQ_ERANGE, AMQ_OK}, /* k > 255 / 64 bits */
    {"p/bpk 1.5", 1000, 1.5, AMQ_ERANGE, AMQ_OK},
    {"bpk 1000", 1000, 1000.0, AMQ_ERANGE, AMQ_OK},
    {"bpk 1000.5", 1000, 1000.5, AMQ_ERANGE, AMQ_ERANGE},
    {"bpk huge", 1000, 1e300, AMQ_ERANGE, AMQ_ERANGE},
    {"p just below 1", 1000, 1.0 - DBL_EPSILON, AMQ_OK, AMQ_OK},
    {"p 1e-300 (k > 255)", 1000, 1e-300, AMQ_ERANGE, AMQ_OK}, /* bpk: 64 bits */
    {"n 2^63", P63, 0.01, AMQ_ERANGE, AMQ_ERANGE},
    {"n 2^64-1", U64MAX, 0.5, AMQ_ERANGE, AMQ_ERANGE},
    {"n 2^64-1 tiny bpk", U64MAX, 1e-9, AMQ_ERANGE, AMQ_OK}, /* 18 Gbit */
    {"m just under 2^43", UINT64_C(917000000000), 0.01, AMQ_OK, AMQ_OK},
    {"m just over 2^43", UINT64_C(918000000000), 0.01, AMQ_ERANGE, AMQ_OK},
};

TEST(limits_bloom_sizing)
{
    size_t i;
    uint64_t bits;
    uint32_t k;
    amq_bloom_params p;
    int rc;

    for (i = 0; i < sizeof sizing_rows / sizeof sizing_rows[0]; i++) {
        const struct sizing_row *r = &sizing_rows[i];
        /* The n 1 row is fine for fpp; for bits per key 0.01 is fine too. */
        double bpk = (r->n == 1) ? 0.01 : r->x;
        int want_bpk = (r->n == 1) ? AMQ_OK : r->want_bpk;

        bits = 12345;
        k = 99;
        rc = amq_bloom_bits_for(r->n, r->x, &bits, &k);
        if (rc != r->want_fpp)
            FAIL_AT_("%s: size_fpp(%llu, %g) = %d, want %d", r->name, (unsigned long long)r->n,
                     r->x, rc, r->want_fpp);
        if (rc == AMQ_OK && !(bits >= 1 && bits <= BMAX && k >= 1 && k <= AMQ_BLOOM_MAX_K))
            FAIL_AT_("%s: size_fpp gave %llu bits, k %u", r->name, (unsigned long long)bits, k);
        rc = amq_bloom_params_for(r->n, r->x, &p);
        if (rc != r->want_fpp)
            FAIL_AT_("%s: params_for = %d, want %d", r->name, rc, r->want_fpp);

        rc = amq_bloom_bits_for_bpk(r->n, bpk, &bits, &k);
        if (rc != want_bpk)
            FAIL_AT_("%s: size_bpk(%llu, %g) = %d, want %d", r->name, (unsigned long long)r->n,
                     bpk, rc, want_bpk);
        if (rc == AMQ_OK && !(bits >= 64 && bits <= BMAX && k >= 1 && k <= 30))
            FAIL_AT_("%s: size_bpk gave %llu bits, k %u", r->name, (unsigned long long)bits, k);
    }
}

/* ---- amq_bloom_new / amq_bloom_view ------------------------------------------------------- */

static const struct params_row {
    const char *name;
    uint64_t bits;
    uint32_t k, probe, hash;
    uint64_t seed;
    double fpp;
    int want;
} params_rows[] = {
    {"valid", 1000, 7, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_OK},
    {"bits 1", 1, 1, 0, AMQ_HASH_XXH3, 0, 0.0, AMQ_OK},
    {"bits 0", 0, 7, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_ERANGE},
    {"bits 2^43+1", BMAX + 1, 7, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_ERANGE},
    {"bits 2^63", P63, 7, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_ERANGE},
    {"bits 2^64-1 (+63 wraps)", U64MAX, 7, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_ERANGE},
    {"k 0", 1000, 0, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_ERANGE},
    {"k 255", 1000, 255, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_OK},
    {"k 256", 1000, 256, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_ERANGE},
    {"k 2^32-1", 1000, UINT32_MAX, 0, AMQ_HASH_XXH3, 0, 0.01, AMQ_ERANGE},
    {"probe 3", 1000, 7, 3, AMQ_HASH_XXH3, 0, 0.01, AMQ_EINVAL},
    {"probe 2^32-1", 1000, 7, UINT32_MAX, AMQ_HASH_XXH3, 0, 0.01, AMQ_EINVAL},
    {"hash 0", 1000, 7, 0, 0, 0, 0.01, AMQ_EHASH},
    {"hash 8", 1000, 7, 0, 8, 0, 0.01, AMQ_EHASH},
    {"hash 2^32-1", 1000, 7, 0, UINT32_MAX, 0, 0.01, AMQ_EHASH},
    {"murmur3 seed 2^32", 1000, 7, 0, AMQ_HASH_MURMUR3, UINT64_C(1) << 32, 0.01, AMQ_ERANGE},
    {"murmur3 seed 2^32-1", 1000, 7, 0, AMQ_HASH_MURMUR3, UINT32_MAX, 0.01, AMQ_OK},
    {"redisbloom seed 1", 1000, 7, 0, AMQ_HASH_REDISBLOOM, 1, 0.01, AMQ_ERANGE},
    {"xxh3 seed 2^64-1", 1000, 7, 0, AMQ_HASH_XXH3, U64MAX, 0.01, AMQ_OK},
    {"fpp NaN", 1000, 7, 0, AMQ_HASH_XXH3, 0, NAN, AMQ_ERANGE},
    {"fpp 1", 1000, 7, 0, AMQ_HASH_XXH3, 0, 1.0, AMQ_ERANGE},
    {"fpp -0.1", 1000, 7, 0, AMQ_HASH_XXH3, 0, -0.1, AMQ_ERANGE},
    {"fpp inf", 1000, 7, 0, AMQ_HASH_XXH3, 0, INFINITY, AMQ_ERANGE},
};

TEST(limits_bloom_new_and_view)
{
    static const uint8_t data[128];
    amq_bloom_params p;
    amq_bloom *b;
    size_t i;
    int rc;

    for (i = 0; i < sizeof params_rows / sizeof params_rows[0]; i++) {
        const struct params_row *r = &params_rows[i];
        memset(&p, 0, sizeof p);
        p.bits = r->bits;
        p.k = r->k;
        p.probe = r->probe;
        p.hash_algo = r->hash;
        p.seed = r->seed;
        p.fpp = r->fpp;
        b = (amq_bloom *)&p; /* must be overwritten */
        rc = amq_bloom_new(&p, NULL, &b);
        if (rc != r->want)
            FAIL_AT_("%s: amq_bloom_new = %d (%s), want %d", r->name, rc, amq_strerror(rc),
                     r->want);
        if (rc != AMQ_OK && b != NULL)
            FAIL_AT_("%s: amq_bloom_new failed but left *out set", r->name);
        amq_bloom_free(rc == AMQ_OK ? b : NULL);
        if (r->bits <= 1000) {
            rc = amq_bloom_view(&p, data, amq_bloom_data_size(&p), 0, NULL, &b);
            if (rc != r->want)
                FAIL_AT_("%s: amq_bloom_view = %d, want %d", r->name, rc, r->want);
            amq_bloom_free(rc == AMQ_OK ? b : NULL);
        }
    }
    /* A view whose length does not match its bits. */
    memset(&p, 0, sizeof p);
    p.bits = 1000;
    p.k = 3;
    p.hash_algo = AMQ_HASH_XXH3;
    CHECK_STATUS(amq_bloom_view(&p, data, 120, 0, NULL, &b), AMQ_EINVAL);
    CHECK_STATUS(amq_bloom_view(&p, data, 129, 0, NULL, &b), AMQ_EINVAL);
    CHECK_STATUS(amq_bloom_view(&p, data, 0, 0, NULL, &b), AMQ_EINVAL);
}

/* ---- amq_filter_new: the surface every kind shares ------------------------------------------ */

static const struct config_row {
    const char *name;
    uint32_t kind, hash;
    uint64_t seed, capacity;
    double fpp, bpk;
    uint64_t bits;
    uint32_t k;
    int want;
} config_rows[] = {
    /* name                  kind             hash seed  capacity  fpp   bpk  bits  k  want */
    {"defaults", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 0, 0, AMQ_OK},
    {"kind 0", 0, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 0, 0, AMQ_EKIND},
    {"kind 999", 999, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 0, 0, AMQ_EKIND},
    {"kind 2^32-1", UINT32_MAX, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 0, 0, AMQ_EKIND},
    {"hash 0", AMQ_KIND_BLOOM, 0, 0, 1000, 0.01, 0, 0, 0, AMQ_EHASH},
    {"hash 77", AMQ_KIND_BLOOM, 77, 0, 1000, 0.01, 0, 0, 0, AMQ_EHASH},
    {"murmur3 seed 2^32", AMQ_KIND_BLOOM, AMQ_HASH_MURMUR3, UINT64_C(1) << 32, 1000, 0.01, 0,
     0, 0, AMQ_ERANGE},
    {"redisbloom seed 5", AMQ_KIND_BLOOM, AMQ_HASH_REDISBLOOM, 5, 1000, 0.01, 0, 0, 0,
     AMQ_ERANGE},
    {"capacity 0", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 0, 0.01, 0, 0, 0, AMQ_ERANGE},
    {"capacity 2^63", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, P63, 0.01, 0, 0, 0, AMQ_ERANGE},
    {"capacity 2^64-1", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, U64MAX, 0.99, 0, 0, 0, AMQ_ERANGE},
    {"capacity -1 (as unsigned)", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, (uint64_t)-1, 0.01, 0, 0,
     0, AMQ_ERANGE},
    {"fpp 0", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.0, 0, 0, 0, AMQ_ERANGE},
    {"fpp 1", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 1.0, 0, 0, 0, AMQ_ERANGE},
    {"fpp 2", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 2.0, 0, 0, 0, AMQ_ERANGE},
    {"fpp -0.01", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, -0.01, 0, 0, 0, AMQ_ERANGE},
    {"fpp NaN", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, NAN, 0, 0, 0, AMQ_ERANGE},
    {"fpp inf", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, INFINITY, 0, 0, 0, AMQ_ERANGE},
    {"fpp -inf", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, -INFINITY, 0, 0, 0, AMQ_ERANGE},
    {"bpk 10", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 10, 0, 0, AMQ_OK},
    {"bpk negative", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, -10, 0, 0, AMQ_ERANGE},
    {"bpk NaN", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, NAN, 0, 0, AMQ_ERANGE},
    {"bpk inf", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, INFINITY, 0, 0, AMQ_ERANGE},
    {"bpk -inf", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, -INFINITY, 0, 0, AMQ_ERANGE},
    {"bpk 1001", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 1001, 0, 0, AMQ_ERANGE},
    {"bpk x capacity overflows", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, U64MAX, 0.01, 1000, 0, 0,
     AMQ_ERANGE},
    {"bits + k", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 0, NAN, 0, 1000, 3, AMQ_OK},
    {"bits without k", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 1000, 0, AMQ_ERANGE},
    {"k without bits", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 0, 3, AMQ_EINVAL},
    {"bits 2^43+1", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, BMAX + 1, 3, AMQ_ERANGE},
    {"bits 2^64-1", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, U64MAX, 3, AMQ_ERANGE},
    {"k 256", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 1000, 256, AMQ_ERANGE},
    {"k 2^32-1", AMQ_KIND_BLOOM, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 1000, UINT32_MAX,
     AMQ_ERANGE},
    {"blocked valid", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 0, 0, AMQ_OK},
    {"blocked bpk 10", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, 0.01, 10, 0, 0, AMQ_OK},
    {"blocked capacity 0", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 0, 0.01, 0, 0, 0, AMQ_ERANGE},
    {"blocked capacity 2^63", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, P63, 0.01, 0, 0, 0, AMQ_ERANGE},
    {"blocked capacity 2^64-1", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, U64MAX, 0.99, 0, 0, 0,
     AMQ_ERANGE},
    {"blocked fpp 0", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, 0.0, 0, 0, 0, AMQ_ERANGE},
    {"blocked fpp 1", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, 1.0, 0, 0, 0, AMQ_ERANGE},
    {"blocked fpp NaN", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, NAN, 0, 0, 0, AMQ_ERANGE},
    {"blocked fpp -inf", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, -INFINITY, 0, 0, 0, AMQ_ERANGE},
    {"blocked bpk negative", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, 0.01, -10, 0, 0, AMQ_ERANGE},
    {"blocked bpk NaN", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, 0.01, NAN, 0, 0, AMQ_ERANGE},
    {"blocked bpk 1001", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, 1000, 0.01, 1001, 0, 0, AMQ_ERANGE},
    {"blocked bpk x capacity overflows", AMQ_KIND_BLOCKED, AMQ_HASH_XXH3, 0, U64MAX, 0.01, 1000, 0,
     0, AMQ_ERANGE},
    {"blocked hash 77", AMQ_KIND_BLOCKED, 77, 0, 1000, 0.01, 0, 0, 0, AMQ_EHASH},
    {"partitioned valid", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, 0.01, 0, 0, 0, AMQ_OK},
    {"partitioned bpk 10", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, 0.01, 10, 0, 0, AMQ_OK},
    {"partitioned capacity 0", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 0, 0.01, 0, 0, 0, AMQ_ERANGE},
    {"partitioned capacity 2^63", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, P63, 0.01, 0, 0, 0, AMQ_ERANGE},
    {"partitioned capacity 2^64-1", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, U64MAX, 0.99, 0, 0, 0,
     AMQ_ERANGE},
    {"partitioned fpp 0", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, 0.0, 0, 0, 0, AMQ_ERANGE},
    {"partitioned fpp 1", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, 1.0, 0, 0, 0, AMQ_ERANGE},
    {"partitioned fpp NaN", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, NAN, 0, 0, 0, AMQ_ERANGE},
    {"partitioned fpp -inf", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, -INFINITY, 0, 0, 0, AMQ_ERANGE},
    {"partitioned bpk negative", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, 0.01, -10, 0, 0, AMQ_ERANGE},
    {"partitioned bpk NaN", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, 0.01, NAN, 0, 0, AMQ_ERANGE},
    {"partitioned bpk 1001", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, 1000, 0.01, 1001, 0, 0, AMQ_ERANGE},
    {"partitioned bpk x capacity overflows", AMQ_KIND_PARTITIONED, AMQ_HASH_XXH3, 0, U64MAX, 0.01, 1000, 0,
     0, AMQ_ERANGE},
    {"partitioned hash 77", AMQ_KIND_PARTITIONED, 77, 0, 1000, 0.01, 0, 0, 0, AMQ_EHASH},
};

TEST(limits_filter_new)
{
    amq_config cfg;
    amq_filter *f;
    amq_errinfo err;
    size_t i;
    int rc;

    for (i = 0; i < sizeof config_rows / sizeof config_rows[0]; i++) {
        const struct config_row *r = &config_rows[i];
        amq_config_init(&cfg, r->kind);
        cfg.hash_algo = r->hash;
        cfg.seed = r->seed;
        cfg.capacity = r->capacity;
        cfg.fpp = r->fpp;
        cfg.bits_per_key = r->bpk;
        cfg.bits = r->bits;
        cfg.k = r->k;
        memset(&err, 0, sizeof err);
        f = (amq_filter *)&cfg; /* must be overwritten */
        rc = amq_filter_new(&cfg, &f, &err);
        if (rc != r->want)
            FAIL_AT_("%s: amq_filter_new = %d (%s: %s), want %d (%s)", r->name, rc,
                     amq_strerror(rc), err.msg, r->want, amq_strerror(r->want));
        if (rc != AMQ_OK && (f != NULL || err.msg[0] == '\0' || err.status != rc))
            FAIL_AT_("%s: a refusal must clear *out and explain itself (msg '%s')", r->name,
                     err.msg);
        amq_filter_free(rc == AMQ_OK ? f : NULL);
        /* Without an errinfo the status is the same. */
        if (amq_filter_new(&cfg, &f, NULL) != r->want)
            FAIL_AT_("%s: a different status without errinfo", r->name);
        else if (r->want == AMQ_OK)
            amq_filter_free(f);
    }
}

/* ---- cuckoo: amq_cuckoo_params_check and amq_filter_new ------------------------------------ */

static const struct cuckoo_row {
    const char *name;
    uint32_t f, b;
    uint64_t nb;
    uint32_t kicks;
    double fpp;
    int want;
} cuckoo_rows[] = {
    {"valid", 8, 4, 1000, 500, 0.01, AMQ_OK},
    {"f 0", 0, 4, 1000, 500, 0.01, AMQ_ERANGE},
    {"f 3", 3, 4, 1000, 500, 0.01, AMQ_ERANGE},
    {"f 4", 4, 4, 1000, 500, 0.01, AMQ_OK},
    {"f 7", 7, 4, 1000, 500, 0.01, AMQ_OK},
    {"f 32", 32, 8, 1000, 500, 0.01, AMQ_OK},
    {"f 33", 33, 4, 1000, 500, 0.01, AMQ_ERANGE},
    {"b 0", 8, 0, 1000, 500, 0.01, AMQ_ERANGE},
    {"b 3", 8, 3, 1000, 500, 0.01, AMQ_ERANGE},
    {"b 16", 8, 16, 1000, 500, 0.01, AMQ_ERANGE},
    {"nb 0", 8, 4, 0, 500, 0.01, AMQ_ERANGE},
    {"nb 2^40+1", 8, 4, (UINT64_C(1) << 40) + 1, 500, 0.01, AMQ_ERANGE},
    {"nb 2^64-1", 8, 4, U64MAX, 500, 0.01, AMQ_ERANGE},
    {"kicks 0", 8, 4, 1000, 0, 0.01, AMQ_ERANGE},
    {"kicks 65535", 8, 4, 1000, 65535, 0.01, AMQ_OK},
    /* A file or config asking for billions of evictions per insert would
     * make one add into a full table run for minutes. */
    {"kicks 65536", 8, 4, 1000, 65536, 0.01, AMQ_ERANGE},
    {"kicks 2^32-1", 8, 4, 1000, UINT32_MAX, 0.01, AMQ_ERANGE},
    {"fpp NaN", 8, 4, 1000, 500, NAN, AMQ_ERANGE},
    {"fpp -1", 8, 4, 1000, 500, -1.0, AMQ_ERANGE},
};

TEST(limits_cuckoo)
{
    amq_cuckoo_params p;
    amq_config cfg;
    amq_filter *f;
    amq_errinfo err;
    size_t i;
    int rc;

    for (i = 0; i < sizeof cuckoo_rows / sizeof cuckoo_rows[0]; i++) {
        const struct cuckoo_row *r = &cuckoo_rows[i];
        memset(&p, 0, sizeof p);
        p.fingerprint_bits = r->f;
        p.bucket_size = r->b;
        p.buckets = r->nb;
        p.max_kicks = r->kicks;
        p.fpp = r->fpp;
        p.hash_algo = AMQ_HASH_XXH3;
        rc = amq_cuckoo_params_check(&p);
        if (rc != r->want)
            FAIL_AT_("%s: amq_cuckoo_params_check = %d, want %d", r->name, rc, r->want);
    }
    /* Through the generic handle: options a cuckoo config may carry. */
    amq_config_init(&cfg, AMQ_KIND_CUCKOO);
    cfg.capacity = 1000;
    cfg.max_kicks = 65536;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.max_kicks = 0;
    cfg.fingerprint_bits = 33;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.fingerprint_bits = 0;
    cfg.bucket_size = 3;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.bucket_size = 0;
    cfg.capacity = 0;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.capacity = U64MAX;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.capacity = 1000;
    cfg.fpp = NAN;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
}

/* ---- amq_filter_new with the options of the cuckoo, scalable, quotient, pocket kinds --- */

static const struct kind_row {
    const char *name;
    uint32_t kind;
    uint64_t capacity;
    double fpp;
    uint32_t fbits, bsize, kicks, expansion, redisbloom;
    int want;
} kind_rows[] = {
    /* name                 kind                       capacity  fpp  f   b  kicks exp rb */
    {"cuckoo valid", AMQ_KIND_CUCKOO, 1000, 0.01, 0, 0, 0, 0, 0, AMQ_OK},
    {"cuckoo capacity 0", AMQ_KIND_CUCKOO, 0, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo capacity 2^63", AMQ_KIND_CUCKOO, P63, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo capacity 2^64-1", AMQ_KIND_CUCKOO, U64MAX, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo fpp 0", AMQ_KIND_CUCKOO, 1000, 0.0, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo fpp 1", AMQ_KIND_CUCKOO, 1000, 1.0, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo fpp NaN", AMQ_KIND_CUCKOO, 1000, NAN, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo fpp -inf", AMQ_KIND_CUCKOO, 1000, -INFINITY, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo 3-bit fingerprints", AMQ_KIND_CUCKOO, 1000, 0.01, 3, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo 9-bit fingerprints", AMQ_KIND_CUCKOO, 1000, 0.01, 9, 0, 0, 0, 0, AMQ_OK},
    {"cuckoo 33-bit fingerprints", AMQ_KIND_CUCKOO, 1000, 0.01, 33, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo 64-bit fingerprints", AMQ_KIND_CUCKOO, 1000, 0.01, 64, 0, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo bucket size 3", AMQ_KIND_CUCKOO, 1000, 0.01, 0, 3, 0, 0, 0, AMQ_ERANGE},
    {"cuckoo bucket size 2^32-1", AMQ_KIND_CUCKOO, 1000, 0.01, 0, UINT32_MAX, 0, 0, 0,
     AMQ_ERANGE},
    {"cuckoo kicks 65536", AMQ_KIND_CUCKOO, 1000, 0.01, 0, 0, 65536, 0, 0, AMQ_ERANGE},
    {"sbloom valid", AMQ_KIND_SCALABLE_BLOOM, 1000, 0.01, 0, 0, 0, 0, 0, AMQ_OK},
    {"sbloom capacity 0", AMQ_KIND_SCALABLE_BLOOM, 0, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"sbloom capacity 2^63", AMQ_KIND_SCALABLE_BLOOM, P63, 0.01, 0, 0, 0, 0, 0, AMQ_ELIMIT},
    {"sbloom capacity 2^64-1", AMQ_KIND_SCALABLE_BLOOM, U64MAX, 0.01, 0, 0, 0, 0, 0,
     AMQ_ELIMIT},
    {"sbloom fpp 0", AMQ_KIND_SCALABLE_BLOOM, 1000, 0.0, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"sbloom fpp 1", AMQ_KIND_SCALABLE_BLOOM, 1000, 1.0, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"sbloom fpp NaN", AMQ_KIND_SCALABLE_BLOOM, 1000, NAN, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"sbloom fpp -inf", AMQ_KIND_SCALABLE_BLOOM, 1000, -INFINITY, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"sbloom fpp 1e-300", AMQ_KIND_SCALABLE_BLOOM, 1000, 1e-300, 0, 0, 0, 0, 0, AMQ_ELIMIT},
    {"sbloom expansion 32769", AMQ_KIND_SCALABLE_BLOOM, 1000, 0.01, 0, 0, 0, 32769, 0,
     AMQ_ERANGE},
    {"sbloom expansion 2^32-1", AMQ_KIND_SCALABLE_BLOOM, 1000, 0.01, 0, 0, 0, UINT32_MAX, 0,
     AMQ_ERANGE},
    {"sbloom redisbloom capacity 0", AMQ_KIND_SCALABLE_BLOOM, 0, 0.01, 0, 0, 0, 0, 1,
     AMQ_ERANGE},
    {"scuckoo valid", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 0, 0, 0, 0, 0, AMQ_OK},
    {"scuckoo capacity 0", AMQ_KIND_SCALABLE_CUCKOO, 0, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"scuckoo capacity 2^63", AMQ_KIND_SCALABLE_CUCKOO, P63, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"scuckoo capacity 2^64-1", AMQ_KIND_SCALABLE_CUCKOO, U64MAX, 0.01, 0, 0, 0, 0, 0,
     AMQ_ERANGE},
    {"scuckoo 9-bit fingerprints", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 9, 0, 0, 0, 0,
     AMQ_OK},
    {"scuckoo 3-bit fingerprints", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 3, 0, 0, 0, 0,
     AMQ_ERANGE},
    {"scuckoo 33-bit fingerprints", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 33, 0, 0, 0, 0,
     AMQ_ERANGE},
    {"scuckoo redisbloom 12-bit", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 12, 0, 0, 0, 1,
     AMQ_ERANGE},
    {"scuckoo bucket size 256", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 0, 256, 0, 0, 0,
     AMQ_ERANGE},
    {"scuckoo kicks 65536", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 0, 0, 65536, 0, 0,
     AMQ_ERANGE},
    {"scuckoo expansion 32769", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 0, 0, 0, 32769, 0,
     AMQ_ERANGE},
    {"scuckoo expansion 2^32-1", AMQ_KIND_SCALABLE_CUCKOO, 1000, 0.01, 0, 0, 0, UINT32_MAX, 0,
     AMQ_ERANGE},
    {"quotient valid", AMQ_KIND_QUOTIENT, 1000, 0.01, 0, 0, 0, 0, 0, AMQ_OK},
    {"quotient capacity 1", AMQ_KIND_QUOTIENT, 1, 0.01, 0, 0, 0, 0, 0, AMQ_OK},
    {"quotient capacity 0", AMQ_KIND_QUOTIENT, 0, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"quotient capacity 2^40+1", AMQ_KIND_QUOTIENT, (UINT64_C(1) << 40) + 1, 0.01, 0, 0, 0, 0, 0,
     AMQ_ERANGE},
    {"quotient capacity 2^63", AMQ_KIND_QUOTIENT, P63, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"quotient capacity 2^64-1", AMQ_KIND_QUOTIENT, U64MAX, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"quotient fpp 0.0001", AMQ_KIND_QUOTIENT, 1000, 0.0001, 0, 0, 0, 0, 0, AMQ_OK},
    {"quotient fpp 0.5", AMQ_KIND_QUOTIENT, 1000, 0.5, 0, 0, 0, 0, 0, AMQ_OK},
    {"quotient fpp 0.00009", AMQ_KIND_QUOTIENT, 1000, 0.00009, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"quotient fpp 0.51", AMQ_KIND_QUOTIENT, 1000, 0.51, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"quotient fpp 0", AMQ_KIND_QUOTIENT, 1000, 0.0, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"quotient fpp NaN", AMQ_KIND_QUOTIENT, 1000, NAN, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"quotient fpp -inf", AMQ_KIND_QUOTIENT, 1000, -INFINITY, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"pocket valid", AMQ_KIND_POCKET, 1000, 0.01, 0, 0, 0, 0, 0, AMQ_OK},
    {"pocket capacity 64", AMQ_KIND_POCKET, 64, 0.01, 0, 0, 0, 0, 0, AMQ_OK},
    {"pocket capacity 0", AMQ_KIND_POCKET, 0, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"pocket capacity 0", AMQ_KIND_POCKET, 0, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"pocket capacity 2^30+1", AMQ_KIND_POCKET, (UINT64_C(1) << 30) + 1, 0.01, 0, 0, 0, 0, 0,
     AMQ_ERANGE},
    {"pocket capacity 2^64-1", AMQ_KIND_POCKET, U64MAX, 0.01, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"pocket fpp 0.001", AMQ_KIND_POCKET, 1000, 0.001, 0, 0, 0, 0, 0, AMQ_OK},
    {"pocket fpp 0.5", AMQ_KIND_POCKET, 1000, 0.5, 0, 0, 0, 0, 0, AMQ_OK},
    {"pocket fpp 0.0009", AMQ_KIND_POCKET, 1000, 0.0009, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"pocket fpp 0.51", AMQ_KIND_POCKET, 1000, 0.51, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"pocket fpp NaN", AMQ_KIND_POCKET, 1000, NAN, 0, 0, 0, 0, 0, AMQ_ERANGE},
    {"pocket 5-bit entries", AMQ_KIND_POCKET, 1000, 0.01, 5, 0, 0, 0, 0, AMQ_OK},
    {"pocket 15-bit entries", AMQ_KIND_POCKET, 1000, 0.01, 15, 0, 0, 0, 0, AMQ_OK},
    {"pocket 4-bit entries", AMQ_KIND_POCKET, 1000, 0.01, 4, 0, 0, 0, 0, AMQ_ERANGE},
    {"pocket 16-bit entries", AMQ_KIND_POCKET, 1000, 0.01, 16, 0, 0, 0, 0, AMQ_ERANGE},
};

TEST(limits_filter_new_kind_options)
{
    amq_config cfg;
    amq_filter *f;
    amq_errinfo err;
    size_t i;
    int rc;

    for (i = 0; i < sizeof kind_rows / sizeof kind_rows[0]; i++) {
        const struct kind_row *r = &kind_rows[i];
        amq_config_init(&cfg, r->kind);
        cfg.capacity = r->capacity;
        cfg.fpp = r->fpp;
        cfg.fingerprint_bits = r->fbits;
        cfg.bucket_size = r->bsize;
        cfg.max_kicks = r->kicks;
        cfg.expansion = r->expansion;
        cfg.redisbloom = r->redisbloom;
        memset(&err, 0, sizeof err);
        f = NULL;
        rc = amq_filter_new(&cfg, &f, &err);
        if (rc != r->want)
            FAIL_AT_("%s: amq_filter_new = %d (%s: %s), want %d", r->name, rc, amq_strerror(rc),
                     err.msg, r->want);
        if (rc != AMQ_OK && (f != NULL || err.msg[0] == '\0'))
            FAIL_AT_("%s: a refusal must clear *out and explain itself", r->name);
        amq_filter_free(rc == AMQ_OK ? f : NULL);
    }
}

/* amq_config.threads: no creation or build reads it, so a count over 1 is
 * refused at every entry that takes a config rather than silently ignored
 * (Python's threads= went nowhere); 0 and 1 keep working. */
TEST(limits_config_threads)
{
    static const uint32_t kinds[] = {AMQ_KIND_BLOOM, AMQ_KIND_BLOCKED, AMQ_KIND_PARTITIONED,
                                     AMQ_KIND_CUCKOO, AMQ_KIND_SCALABLE_BLOOM, AMQ_KIND_AGING};
    static const uint32_t static_kinds[] = {AMQ_KIND_FUSE, AMQ_KIND_RIBBON};
    amq_hash128 h[3] = {{1, 2}, {3, 4}, {5, 6}};
    amq_config cfg;
    amq_filter *f;
    amq_builder *b;
    amq_errinfo err;
    uint32_t t;
    size_t i;

    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        for (t = 0; t <= 4; t++) {
            amq_config_init(&cfg, kinds[i]);
            cfg.capacity = 1000;
            cfg.threads = t == 4 ? UINT32_MAX : t;
            memset(&err, 0, sizeof err);
            f = NULL;
            CHECK_STATUS(amq_filter_new(&cfg, &f, &err), t <= 1 ? AMQ_OK : AMQ_EINVAL);
            if (t > 1) {
                CHECK(f == NULL);
                CHECK(strstr(err.msg, "no filter's creation or build uses threads (give 0 or 1)") !=
                      NULL);
            }
            amq_filter_free(f);
        }
    }
    for (i = 0; i < sizeof static_kinds / sizeof static_kinds[0]; i++) {
        for (t = 0; t <= 2; t++) {
            amq_config_init(&cfg, static_kinds[i]);
            cfg.threads = t;
            memset(&err, 0, sizeof err);
            f = NULL;
            CHECK_STATUS(amq_filter_build(&cfg, h, 3, &f, &err), t <= 1 ? AMQ_OK : AMQ_EINVAL);
            if (t > 1)
                CHECK(strstr(err.msg, "threads 2: no filter's creation or build") != NULL);
            amq_filter_free(f);
            b = NULL;
            CHECK_STATUS(amq_builder_new(&cfg, NULL, 0, &b, &err), t <= 1 ? AMQ_OK : AMQ_EINVAL);
            amq_builder_free(b);
        }
    }
    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.capacity = 1000;
    cfg.threads = 8;
    b = NULL;
    CHECK_STATUS(amq_builder_new(&cfg, NULL, 0, &b, &err), AMQ_EINVAL);
    CHECK(b == NULL);
    CHECK_STATUS(amq_builder_new_sized(&cfg, &b, &err), AMQ_EINVAL);
    CHECK(b == NULL);
    CHECK_STATUS(amq_filter_build(&cfg, h, 3, &f, &err), AMQ_EINVAL);
}

/* ---- the policy blob ------------------------------------------------------------------------------ */

static const struct policy_row {
    const char *name;
    uint32_t encoding;
    size_t n;
    double bpk;
    int want;
} policy_rows[] = {
    {"valid", AMQ_POLICY_LEVELDB, 100, 10, AMQ_OK},
    {"no keys", AMQ_POLICY_LEVELDB, 0, 10, AMQ_OK},
    {"blocked", AMQ_POLICY_BLOCKED, 100, 10, AMQ_OK},
    {"encoding 99", 99, 100, 10, AMQ_EINVAL},
    {"blocked, bpk 0", AMQ_POLICY_BLOCKED, 100, 0, AMQ_ERANGE},
    {"blocked, bpk NaN", AMQ_POLICY_BLOCKED, 100, NAN, AMQ_ERANGE},
    {"blocked, n x bpk overflows", AMQ_POLICY_BLOCKED, SIZE_MAX, 10, AMQ_ERANGE},
    {"encoding 2^32-1", UINT32_MAX, 100, 10, AMQ_EINVAL},
    {"bpk 0", AMQ_POLICY_LEVELDB, 100, 0, AMQ_ERANGE},
    {"bpk -1", AMQ_POLICY_LEVELDB, 100, -1, AMQ_ERANGE},
    {"bpk NaN", AMQ_POLICY_LEVELDB, 100, NAN, AMQ_ERANGE},
    {"bpk inf", AMQ_POLICY_LEVELDB, 100, INFINITY, AMQ_ERANGE},
    {"bpk 1001", AMQ_POLICY_LEVELDB, 100, 1001, AMQ_ERANGE},
    {"n x bpk over 2^32 bits", AMQ_POLICY_LEVELDB, SIZE_MAX, 10, AMQ_ERANGE},
    {"n 2^32, bpk 1", AMQ_POLICY_LEVELDB, (size_t)1 << 32, 1, AMQ_ERANGE},
};

TEST(limits_policy)
{
    uint8_t blob[256];
    size_t i, size, written;
    int rc;

    for (i = 0; i < sizeof policy_rows / sizeof policy_rows[0]; i++) {
        const struct policy_row *r = &policy_rows[i];
        size = 0;
        rc = amq_policy_blob_size(r->encoding, r->n, r->bpk, &size);
        if (rc != r->want)
            FAIL_AT_("%s: blob_size = %d, want %d", r->name, rc, r->want);
        if (r->n <= 100) {
            /* No keys are read for a refused size: a NULL array is fine. */
            amq_slice keys[100];
            memset(keys, 0, sizeof keys);
            rc = amq_policy_build(r->encoding, keys, r->n, r->bpk, blob, sizeof blob, &written);
            if (rc != r->want)
                FAIL_AT_("%s: build = %d, want %d", r->name, rc, r->want);
            if (rc == AMQ_OK && (written != size || written > sizeof blob))
                FAIL_AT_("%s: wrote %zu bytes, blob_size said %zu", r->name, written, size);
        }
    }
    /* A buffer one byte short. */
    REQUIRE_OK(amq_policy_blob_size(AMQ_POLICY_LEVELDB, 100, 10, &size));
    CHECK_STATUS(amq_policy_build(AMQ_POLICY_LEVELDB, NULL, 0, 10, blob, 8, &written), AMQ_EINVAL);
    CHECK_STATUS(t_policy_contains(blob, 0, "k", 1), AMQ_ETRUNC);
    CHECK_STATUS(t_policy_contains(blob, 1, "k", 1), AMQ_ETRUNC);
}

/* ---- names and small buffers -------------------------------------------------------------------- */

TEST(limits_names_and_buffers)
{
    uint32_t v = 12345;
    amq_filter *f;
    amq_config cfg;
    uint64_t size;
    uint8_t buf[256];
    size_t written = 777;

    CHECK_STATUS(amq_kind_from_name("", &v), AMQ_EKIND);
    CHECK_STATUS(amq_kind_from_name("Bloom", &v), AMQ_EKIND);
    CHECK_STATUS(amq_kind_from_name("bloom ", &v), AMQ_EKIND);
    CHECK_EQ(v, 12345);
    CHECK(amq_kind_name(0) == NULL);
    CHECK(amq_kind_name(UINT32_MAX) == NULL);
    CHECK_STATUS(amq_hash_algo_from_name("", &v), AMQ_EHASH);
    CHECK(amq_hash_algo_name(0) == NULL);
    CHECK_STR(amq_strerror(-9999), "unknown error");
    CHECK_STR(amq_strerror(1), "unknown error");
    CHECK(amq_status_name(-9999) == NULL);

    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 100;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    REQUIRE(size <= sizeof buf);
    CHECK_STATUS(amq_filter_serialize(f, buf, 0, &written), AMQ_EINVAL);
    CHECK_STATUS(amq_filter_serialize(f, buf, (size_t)size - 1, &written), AMQ_EINVAL);
    CHECK_EQ(written, 777);
    amq_filter_free(f);
    amq_filter_free(NULL);
    amq_bloom_free(NULL);
}

TEST_MAIN()
