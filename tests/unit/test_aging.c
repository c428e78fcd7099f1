/*
 * test_aging.c - the aging (sliding-window) kind: the window guarantee (no
 * key of the last W adds is ever missing), the false-positive bound, old
 * keys forgotten down to the false-positive rate, time mode by explicit
 * clocks, the parameter block byte by byte and bad bytes refused.
 *
 * The long stream: AMQ_AGING_STREAM=<adds> (e.g. 100000000, `make
 * test-aging-long`) runs stream_window_long over that many adds; without
 * it the slow test runs 20M and the quick one 2M.
 */
#include "amq.h"
#include "common/container.h"
#include "common/endian.h"
#include "test.h"

/* Key i of a stream: 8 bytes, its index mixed by a fixed seed. */
static amq_hash128 key_hash(const amq_filter *f, uint64_t i, uint64_t seed)
{
    uint64_t st = seed << 40 ^ i, v = test_rand(&st);
    return amq_filter_hash(f, &v, sizeof v);
}

static amq_filter *make_count(uint64_t window, double fpp)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_config_init(&cfg, AMQ_KIND_AGING);
    cfg.capacity = window;
    cfg.fpp = fpp;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    return f;
}

TEST(aging_plan_meets_the_bound)
{
    static const double rates[] = {0.1, 0.01, 0.001, 1e-4, 1e-6};
    amq_aging_info in;
    size_t i;

    for (i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        REQUIRE_OK(amq_aging_info_for(1000000, rates[i], &in));
        CHECK_LE_DBL(in.fpp_bound, rates[i]);
        CHECK_GE(in.window, 1000000);
        CHECK_LT(in.window, 1000000 + in.l);
        CHECK_EQ(in.horizon, in.gen_size * (in.k + in.l));
        CHECK_EQ(in.bytes, in.blocks * (in.k + in.l) * 8);
        /* About the memory of the rotated pair at the same rate, counted
         * generously as two classic (not blocked) filters of W keys at
         * rate/2 each. */
        CHECK_LE_DBL((double)in.bytes * 8.0 / 1e6, 1.05 * 2.0 * 1.44 * log2(2.0 / rates[i]));
    }
    CHECK_STATUS(amq_aging_info_for(0, 0.01, &in), AMQ_ERANGE);
    CHECK_STATUS(amq_aging_info_for(1000, 0.0, &in), AMQ_ERANGE);
    CHECK_STATUS(amq_aging_info_for(1000, 0.6, &in), AMQ_ERANGE);
    CHECK_STATUS(amq_aging_info_for(1000, NAN, &in), AMQ_ERANGE);
    CHECK_STATUS(amq_aging_info_for(UINT64_C(1) << 47, 1e-9, &in), AMQ_EOVERFLOW);
    /* The model: the bound grows with the load and shrinks with k. */
    CHECK(amq_aging_fpp_bound(10, 40, 2.0) < amq_aging_fpp_bound(10, 40, 3.0));
    CHECK(amq_aging_fpp_bound(12, 40, 2.0) < amq_aging_fpp_bound(10, 40, 2.0));
    CHECK_EQ_DBL(amq_aging_fpp_bound(0, 40, 2.0), 1.0);
}

/*
 * Adds n stream keys; after each add, the key added W adds ago (counting
 * itself: the oldest of the last W) must answer present.  A key only loses
 * bits when a slice is dropped, so present at its oldest age means present
 * at every younger one.  Returns the number of misses (must be 0).
 */
static uint64_t stream_misses(amq_filter *f, uint64_t window, uint64_t n, uint64_t seed,
                              int batched)
{
    enum { B = 256 };
    amq_hash128 h[B], old[B];
    uint8_t out[B];
    uint64_t i, misses = 0;
    size_t j, m;

    for (i = 0; i < n; i += m) {
        m = n - i < B ? (size_t)(n - i) : B;
        for (j = 0; j < m; j++)
            h[j] = key_hash(f, i + j, seed);
        if (!batched) {
            for (j = 0; j < m; j++) {
                (void)amq_filter_add_hash(f, h[j]);
                if (i + j + 1 >= window &&
                    amq_filter_contains_hash(f, key_hash(f, i + j + 1 - window, seed)) != 1)
                    misses++;
            }
            continue;
        }
        /* Batched: the oldest key of the window after the whole batch is
         * checked for each position (they are the batch's m oldest). */
        if (amq_filter_add_batch(f, h, m, NULL) != AMQ_OK)
            return UINT64_MAX;
        if (i + m < window)
            continue;
        for (j = 0; j < m; j++)
            old[j] = key_hash(f, i + m - window + j, seed);
        amq_filter_contains_batch(f, old, m, out);
        for (j = 0; j < m; j++)
            misses += out[j] != 1;
    }
    return misses;
}

TEST(aging_window_no_false_negative)
{
    amq_filter *f = make_count(10000, 0.01);
    amq_aging_info in;
    REQUIRE(f != NULL);
    REQUIRE_OK(amq_aging_get_info(f, &in));
    CHECK_EQ(stream_misses(f, 10000, 300000, 1, 0), 0);
    /* The guarantee holds up to l * gen_size, not only W. */
    CHECK_EQ(stream_misses(f, in.window, 200000, 2, 0), 0);
    amq_filter_free(f);
    f = make_count(10000, 0.001);
    REQUIRE(f != NULL);
    CHECK_EQ(stream_misses(f, 10000, 200000, 3, 1), 0);
    amq_filter_free(f);
    /* Tiny windows: generations of one key. */
    f = make_count(3, 0.01);
    REQUIRE(f != NULL);
    CHECK_EQ(stream_misses(f, 3, 10000, 4, 0), 0);
    amq_filter_free(f);
}

static void window_run(uint64_t window, uint64_t n)
{
    amq_filter *f = make_count(window, 0.01);
    uint64_t misses;
    REQUIRE(f != NULL);
    misses = stream_misses(f, window, n, 0x5eed, 1);
    if (misses != 0)
        FAIL_AT_("window %llu, %llu adds, seed 0x5eed: %llu keys of the window missing",
                 (unsigned long long)window, (unsigned long long)n,
                 (unsigned long long)misses);
    amq_filter_free(f);
}

TEST(aging_stream_window_2m)
{
    window_run(100000, 2000000);
}

SLOW_TEST(aging_stream_window_20m)
{
    window_run(1000000, 20000000);
}

SLOW_TEST(aging_stream_window_long)
{
    const char *s = getenv("AMQ_AGING_STREAM");
    uint64_t n = s != NULL ? strtoull(s, NULL, 10) : 0;
    if (n == 0)
        return; /* the 20M test above covers make test */
    fprintf(stderr, "  aging stream: %llu adds, window 10M, seed 0x5eed\n",
            (unsigned long long)n);
    window_run(10000000, n);
}

/* The observed false-positive rate at the worst moment (the end of a
 * generation, after many generations) stays within the bound; keys older
 * than the horizon answer at the same rate as keys never added. */
TEST(aging_fpp_and_forgetting)
{
    static const double rates[] = {0.01, 0.001};
    amq_aging_info in;
    uint64_t i, n, q = 400000, fp, old_fp, pos;
    size_t r;

    for (r = 0; r < 2; r++) {
        amq_filter *f = make_count(20000, rates[r]);
        double bound, sd, p_new, p_old;
        REQUIRE(f != NULL);
        REQUIRE_OK(amq_aging_get_info(f, &in));
        /* fill to the end of a generation, after 3 horizons */
        n = in.horizon * 3 + in.gen_size * 3 - 0;
        n -= n % in.gen_size;
        for (i = 0; i < n; i++)
            (void)amq_filter_add_hash(f, key_hash(f, i, 7));
        REQUIRE_OK(amq_aging_get_info(f, &in));
        CHECK_EQ(in.in_generation, in.gen_size);
        for (fp = 0, i = 0; i < q; i++)
            fp += (uint64_t)amq_filter_contains_hash(f, key_hash(f, i, 8));
        /* keys aged a horizon or more: the first n - horizon adds */
        for (old_fp = 0, pos = 0, i = 0; i < q; i++)
            old_fp += (uint64_t)amq_filter_contains_hash(f, key_hash(f, i % (n - in.horizon), 7));
        bound = in.fpp_bound;
        p_new = (double)fp / (double)q;
        p_old = (double)old_fp / (double)q;
        sd = sqrt(bound / (double)q);
        fprintf(stderr, "  rate %g: k %u l %u bound %.5f, never added %.5f, older than"
                        " the horizon %.5f\n", rates[r], in.k, in.l, bound, p_new, p_old);
        CHECK_LE_DBL(p_new, bound + 4 * sd);
        CHECK_LE_DBL(p_old, bound + 4 * sd);
        /* about the same rate: the bound is not loose by more than 3x */
        CHECK_GE_DBL(p_new, bound / 3.0);
        CHECK_LE_DBL(fabs(p_old - p_new), 6 * sd);
        (void)pos;
        amq_filter_free(f);
    }
}

/* Between l and k + l generations old a key fades: present at age window,
 * at about the false-positive rate past the horizon. */
TEST(aging_forgets_gradually)
{
    amq_filter *f = make_count(5000, 0.01);
    amq_aging_info in;
    uint64_t i, present_at_horizon = 0, n;
    REQUIRE(f != NULL);
    REQUIRE_OK(amq_aging_get_info(f, &in));
    n = 2000;
    for (i = 0; i < n; i++)
        (void)amq_filter_add_hash(f, key_hash(f, i, 11));
    for (i = n; i < n + in.horizon; i++)
        (void)amq_filter_add_hash(f, key_hash(f, i, 12));
    for (i = 0; i < n; i++)
        present_at_horizon += (uint64_t)amq_filter_contains_hash(f, key_hash(f, i, 11));
    CHECK_LE(present_at_horizon, (uint64_t)((double)n * in.fpp_bound * 3 + 10));
    amq_filter_free(f);
}

/* A time-mode filter: a window of 1 minute at 100 adds per second, 1 %. */
#define STREAM_T0 UINT64_C(1700000000000)
static amq_filter *make_minute(void)
{
    amq_config cfg;
    amq_filter *f;
    amq_config_init(&cfg, AMQ_KIND_AGING);
    cfg.window_ms = 60000;
    cfg.rate = 100.0;
    cfg.fpp = 0.01;
    return amq_filter_new(&cfg, &f, NULL) == AMQ_OK ? f : NULL;
}

/* Streams one key every 10 ms for 10 minutes into a make_minute filter
 * (key i at STREAM_T0 + 10 i); *misses counts the keys not found when
 * checked at their age of 60 s; returns the time of the last add. */
static uint64_t stream_minute(amq_filter *f, uint64_t *misses)
{
    uint64_t t, i;
    *misses = 0;
    for (i = 0, t = STREAM_T0; i < 60000; i++, t += 10) {
        if (amq_aging_advance(f, t) != AMQ_OK || amq_filter_add_hash(f, key_hash(f, i, 21)) < 0)
            *misses += 1;
        if (t >= STREAM_T0 + 60000) {
            uint64_t j = (t - 60000 - STREAM_T0) / 10; /* added exactly 60 s ago */
            *misses += amq_aging_contains_at(f, key_hash(f, j, 21), t) != 1;
        }
    }
    return t - 10;
}

/* A read-only copy of f (borrowing *buf, which the caller frees). */
static amq_filter *readonly_copy(const amq_filter *f, uint8_t **buf)
{
    uint64_t size;
    size_t len;
    amq_filter *g;
    *buf = NULL;
    if (amq_filter_serialized_size(f, &size) != AMQ_OK || (*buf = malloc((size_t)size)) == NULL ||
        amq_filter_serialize(f, *buf, (size_t)size, &len) != AMQ_OK ||
        amq_filter_deserialize(*buf, len, AMQ_OPEN_MMAP, NULL, &g, NULL) != AMQ_OK)
        return NULL;
    return g;
}

TEST(aging_time_mode_geometry)
{
    amq_filter *f = make_minute();
    amq_aging_info in;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_aging_get_info(f, &in));
    CHECK_EQ(in.time_mode, 1);
    CHECK_GE(in.window_ms, 60000);
    CHECK_EQ(in.gen_ms * in.l, in.window_ms);
    CHECK_GE(in.gen_size * 1000, 100 * in.gen_ms);
    amq_filter_free(f);
}

TEST(aging_time_mode_keeps_every_key_for_its_window)
{
    amq_filter *f = make_minute();
    uint64_t misses;

    REQUIRE(f != NULL);
    stream_minute(f, &misses);
    CHECK_EQ(misses, 0);
    amq_filter_free(f);
}

/* A read-only query as of a later time drops what advancing would: answers
 * equal those of a copy advanced to that time; the copy cannot advance. */
TEST(aging_time_mode_query_at_a_later_time_equals_advancing)
{
    amq_filter *f = make_minute(), *g;
    uint64_t misses, t, i, late = 0;
    uint8_t *buf;

    REQUIRE(f != NULL);
    t = stream_minute(f, &misses) + 10;
    g = readonly_copy(f, &buf);
    REQUIRE(g != NULL);
    CHECK_STATUS(amq_aging_advance(g, t + 1000), AMQ_EREADONLY);
    REQUIRE_OK(amq_aging_advance(f, t + 30000));
    for (i = 59000; i < 60000; i++) {
        int a = amq_aging_contains_at(g, key_hash(f, i, 21), t + 30000);
        int b = amq_filter_contains_hash(f, key_hash(f, i, 21));
        if (a != b)
            late++;
    }
    CHECK_EQ(late, 0);
    amq_filter_free(g);
    free(buf);
    amq_filter_free(f);
}

TEST(aging_time_mode_forgets_the_stream_past_the_horizon)
{
    amq_filter *f = make_minute(), *g;
    amq_aging_info in;
    uint64_t misses, t, i, late = 0;
    uint8_t *buf;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_aging_get_info(f, &in));
    t = stream_minute(f, &misses) + 10;
    g = readonly_copy(f, &buf);
    REQUIRE(g != NULL);
    for (i = 50000; i < 60000; i++)
        late += (uint64_t)amq_aging_contains_at(g, key_hash(f, i, 21), t + in.horizon_ms + 1);
    CHECK_EQ(late, 0);
    amq_filter_free(g);
    free(buf);
    amq_filter_free(f);
}

TEST(aging_time_mode_clock_never_goes_back)
{
    amq_filter *f = make_minute();
    amq_aging_info in;
    uint64_t misses, t;

    REQUIRE(f != NULL);
    t = stream_minute(f, &misses) + 10;
    REQUIRE_OK(amq_aging_advance(f, t + 30000));
    REQUIRE_OK(amq_aging_advance(f, STREAM_T0));
    REQUIRE_OK(amq_aging_get_info(f, &in));
    CHECK_EQ(in.generation, (t + 30000) / in.gen_ms);
    amq_filter_free(f);
}

TEST(aging_clock_refused_by_count_mode_and_other_kinds)
{
    amq_config cfg;
    amq_aging_info in;
    amq_filter *f = make_count(100, 0.01);

    REQUIRE(f != NULL);
    CHECK_STATUS(amq_aging_advance(f, 5), AMQ_EUNSUPPORTED);
    amq_filter_free(f);
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    CHECK_STATUS(amq_aging_get_info(f, &in), AMQ_EKIND);
    CHECK_STATUS(amq_aging_advance(f, 5), AMQ_EKIND);
    amq_filter_free(f);
}

TEST(aging_config_errors)
{
    amq_config cfg;
    amq_filter *f;
    amq_errinfo err;

    amq_config_init(&cfg, AMQ_KIND_AGING);
    cfg.capacity = 0;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    amq_config_init(&cfg, AMQ_KIND_AGING);
    cfg.rate = 5.0;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_EINVAL);
    cfg.window_ms = 1000;
    cfg.rate = 0.0;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.rate = -1.0;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.rate = 1.0;
    cfg.window_ms = 10; /* 0.01 adds per window */
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.window_ms = 1000;
    cfg.fpp = 0.9;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
}

/* The parameter block, byte by byte, for a fixed filter; bad bytes refused. */
/* A count-mode filter for (1000, 1 %) that took 1500 keys, serialized:
 * *f the filter, *len bytes at the returned buffer; NULL on failure.  The
 * container puts the parameter block at byte 64 (file-format.md). */
#define AGING_PARAMS_AT 64
static uint8_t *aging_serialized(amq_filter **f, size_t *len)
{
    uint64_t size, i;
    uint8_t *buf;
    *f = make_count(1000, 0.01);
    if (*f == NULL)
        return NULL;
    for (i = 0; i < 1500; i++)
        (void)amq_filter_add_hash(*f, key_hash(*f, i, 31));
    if (amq_filter_serialized_size(*f, &size) != AMQ_OK || (buf = malloc((size_t)size)) == NULL)
        goto fail;
    if (amq_filter_serialize(*f, buf, (size_t)size, len) == AMQ_OK && *len == size)
        return buf;
    free(buf);
fail:
    amq_filter_free(*f);
    *f = NULL;
    return NULL;
}

TEST(aging_params_block_layout)
{
    amq_filter *f;
    amq_aging_info in;
    size_t len;
    uint8_t *buf = aging_serialized(&f, &len);
    const uint8_t *p;

    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_aging_get_info(f, &in));
    p = buf + AGING_PARAMS_AT;
    CHECK_EQ(p[0] | p[1] << 8, in.k);
    CHECK_EQ(p[4] | p[5] << 8, in.l);
    CHECK_EQ(p[20], 64);
    CHECK_EQ(p[16], 0);
    CHECK_EQ(p[24] | p[25] << 8, in.gen_size);
    CHECK_EQ(p[40] | p[41] << 8, 1000);
    CHECK_EQ(p[88] | p[89] << 8, 1500);
    CHECK_EQ(p[80] | p[81] << 8, in.in_generation);
    free(buf);
    amq_filter_free(f);
}

TEST(aging_geometry_pinned_for_1000_at_1_percent)
{
    amq_filter *f = make_count(1000, 0.01);
    amq_aging_info in;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_aging_get_info(f, &in));
    CHECK_EQ(in.k, 9);
    CHECK_EQ(in.l, 23);
    CHECK_EQ(in.gen_size, 44);
    CHECK_EQ(in.blocks, 11);
    amq_filter_free(f);
}

/* A round trip answers alike and adds continue identically. */
TEST(aging_round_trip_same_answers_and_adds)
{
    amq_filter *f, *g;
    amq_errinfo err;
    size_t len;
    uint8_t *buf = aging_serialized(&f, &len), a1[64], a2[64];
    uint64_t i;

    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_deserialize(buf, len, 0, NULL, &g, &err));
    for (i = 0; i < 64; i++) {
        a1[i] = (uint8_t)amq_filter_add_hash(f, key_hash(f, 5000 + i, 32));
        a2[i] = (uint8_t)amq_filter_add_hash(g, key_hash(f, 5000 + i, 32));
    }
    CHECK(memcmp(a1, a2, sizeof a1) == 0);
    for (i = 0; i < 3000; i++)
        CHECK_EQ(amq_filter_contains_hash(f, key_hash(f, i, 31)),
                 amq_filter_contains_hash(g, key_hash(f, i, 31)));
    amq_filter_free(g);
    free(buf);
    amq_filter_free(f);
}

/* Single-field corruptions of the parameter block (checksum fixed) that
 * must be refused. */
TEST(aging_corrupt_params_refused)
{
    static const struct { unsigned at; uint8_t v; int want; } cases[] = {
        {0, 0, AMQ_ECORRUPT},    /* k = 0 */
        {0, 65, AMQ_ECORRUPT},   /* k > 64 */
        {4, 0, AMQ_ECORRUPT},    /* l = 0 */
        {5, 1, AMQ_ECORRUPT},    /* k + l > 255 */
        {8, 0, AMQ_ECORRUPT},    /* blocks = 0 */
        {16, 2, AMQ_ECORRUPT},   /* mode 2 */
        {20, 32, AMQ_EVERSION},  /* 32-bit words */
        {24, 0, AMQ_ECORRUPT},   /* gen_size 0 */
        {72, 200, AMQ_ECORRUPT}, /* head past the slices */
        {76, 1, AMQ_ECORRUPT},   /* reserved */
        {32, 1, AMQ_ECORRUPT},   /* gen_ms in count mode */
    };
    const size_t off = AGING_PARAMS_AT;
    amq_filter *f, *g;
    amq_errinfo err;
    size_t len, c;
    uint8_t *buf = aging_serialized(&f, &len), *bad;

    REQUIRE(buf != NULL);
    bad = malloc(len);
    REQUIRE(bad != NULL);
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int rc;
        memcpy(bad, buf, len);
        bad[off + cases[c].at] = cases[c].v;
        amq_store64(bad + off + 96, amq_checksum(bad, off + 96));
        rc = amq_filter_deserialize(bad, len, AMQ_OPEN_TRUST, NULL, &g, &err);
        if (rc != cases[c].want)
            FAIL_AT_("byte %u = %u: status %d, expected %d", cases[c].at, cases[c].v, rc,
                     cases[c].want);
        if (rc == AMQ_OK)
            amq_filter_free(g);
    }
    free(bad);
    free(buf);
    amq_filter_free(f);
}

TEST(aging_batch_matches_scalar_and_clear)
{
    amq_filter *f = make_count(5000, 0.01), *g = make_count(5000, 0.01);
    amq_hash128 h[1000];
    uint8_t out[1000], added[1000];
    size_t i;
    amq_stats st;

    REQUIRE(f != NULL && g != NULL);
    for (i = 0; i < 1000; i++)
        h[i] = key_hash(f, i, 41);
    for (i = 0; i < 20; i++)
        REQUIRE_OK(amq_filter_add_batch(f, h, 1000, added));
    for (i = 0; i < 20000; i++)
        (void)amq_filter_add_hash(g, h[i % 1000]);
    for (i = 0; i < 1000; i++)
        h[i] = key_hash(f, i, i % 2 ? 41 : 42);
    amq_filter_contains_batch(f, h, 1000, out);
    for (i = 0; i < 1000; i++) {
        CHECK_EQ(out[i], amq_filter_contains_hash(f, h[i]));
        CHECK_EQ(out[i], amq_filter_contains_hash(g, h[i]));
    }
    amq_filter_stats(f, &st);
    CHECK_EQ(st.items, 20000);
    CHECK_LE_DBL(st.fpp_now, st.fpp_target * 1.5);
    REQUIRE_OK(amq_filter_clear(f));
    for (i = 0; i < 1000; i += 2)
        CHECK_EQ(amq_filter_contains_hash(f, h[i + 1]), 0);
    amq_filter_stats(f, &st);
    CHECK_EQ(st.items, 0);
    CHECK_EQ_DBL(st.fpp_now, 0.0);
    amq_filter_free(f);
    amq_filter_free(g);
}

/* Raw state out and back in (the Redis module's RDB and AOF path): the
 * same file bytes; a bad parameter block refused. */
TEST(aging_export_import)
{
    amq_filter *f = make_count(3000, 0.001), *g;
    uint8_t params[AMQ_AGING_PARAMS_SIZE], *dst, *b1, *b2;
    const uint8_t *src;
    size_t len, dlen, w1, w2;
    uint64_t i, size;
    amq_stats st;

    REQUIRE(f != NULL);
    for (i = 0; i < 5000; i++)
        (void)amq_filter_add_hash(f, key_hash(f, i, 51));
    REQUIRE_OK(amq_aging_serialize_raw(f, params, &src, &len));
    REQUIRE_OK(amq_aging_deserialize_raw(params, sizeof params, AMQ_HASH_XXH3, 0, NULL, &g, NULL));
    REQUIRE_OK(amq_aging_data_mut(g, &dst, &dlen));
    REQUIRE_EQ(dlen, len);
    memcpy(dst, src, len);
    amq_filter_stats(g, &st);
    CHECK_EQ(st.items, 5000);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    b1 = malloc((size_t)size);
    b2 = malloc((size_t)size);
    REQUIRE(b1 != NULL && b2 != NULL);
    REQUIRE_OK(amq_filter_serialize(f, b1, (size_t)size, &w1));
    REQUIRE_OK(amq_filter_serialize(g, b2, (size_t)size, &w2));
    CHECK(w1 == w2 && memcmp(b1, b2, w1) == 0);
    free(b1);
    free(b2);
    amq_filter_free(g);
    params[72] = 200; /* head past the slices */
    CHECK_STATUS(amq_aging_deserialize_raw(params, sizeof params, AMQ_HASH_XXH3, 0, NULL, &g, NULL),
                 AMQ_ECORRUPT);
    CHECK_STATUS(amq_aging_deserialize_raw(params, 95, AMQ_HASH_XXH3, 0, NULL, &g, NULL), AMQ_ECORRUPT);
    CHECK_STATUS(amq_aging_deserialize_raw(params, sizeof params, 999, 0, NULL, &g, NULL), AMQ_ECORRUPT);
    amq_filter_free(f);
}

/* The AF.LOADCHUNK header (parameter block, hash algorithm, seed) and the
 * bytes a block declares, as the Redis module reads them. */
TEST(aging_header_and_declared_bytes)
{
    amq_filter *f = make_count(3000, 0.001), *g;
    uint8_t hdr[AMQ_AGING_HEADER_SIZE], hdr2[AMQ_AGING_HEADER_SIZE];
    const uint8_t *src, *src2;
    uint64_t bytes;
    size_t len, len2;
    amq_stats st;
    int i;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_aging_export_header(f, hdr, &src, &len));
    amq_filter_stats(f, &st);
    CHECK_EQ(hdr[AMQ_AGING_PARAMS_SIZE], st.hash_algo);
    for (i = 0; i < 8; i++)
        CHECK_EQ(hdr[AMQ_AGING_PARAMS_SIZE + 4 + i], (uint8_t)(st.seed >> (8 * i)));
    REQUIRE_OK(amq_aging_params_bytes(hdr, AMQ_AGING_PARAMS_SIZE, &bytes));
    CHECK_EQ(bytes, len);
    REQUIRE_OK(amq_aging_import_header(hdr, sizeof hdr, NULL, &g, NULL));
    REQUIRE_OK(amq_aging_export_header(g, hdr2, &src2, &len2));
    CHECK(memcmp(hdr, hdr2, sizeof hdr) == 0);
    CHECK_EQ(len2, len);
    amq_filter_free(g);
    CHECK_STATUS(amq_aging_import_header(hdr, sizeof hdr - 1, NULL, &g, NULL), AMQ_ECORRUPT);
    CHECK_STATUS(amq_aging_params_bytes(hdr, 95, &bytes), AMQ_ECORRUPT);
    CHECK_EQ(bytes, UINT64_MAX);
    /* k and l near 2^32 with many blocks: the product passes 64 bits */
    memset(hdr, 0xff, 16);
    CHECK_STATUS(amq_aging_params_bytes(hdr, AMQ_AGING_PARAMS_SIZE, &bytes), AMQ_EOVERFLOW);
    CHECK_EQ(bytes, UINT64_MAX);
    /* 3 + 5 slices of 2^20 blocks: 64 MiB */
    memset(hdr, 0, 16);
    hdr[0] = 3;
    hdr[4] = 5;
    hdr[10] = 0x10;
    REQUIRE_OK(amq_aging_params_bytes(hdr, AMQ_AGING_PARAMS_SIZE, &bytes));
    CHECK_EQ(bytes, UINT64_C(64) << 20);
    amq_filter_free(f);
}

void amq_aging_masks(const amq_filter *f, amq_hash128 h, uint64_t *scalar, uint64_t *chosen);

/* The SIMD path (when the CPU has it) finds exactly the scalar path's
 * slices, on a filter several generations in (random-looking words). */
TEST(aging_query_paths_agree)
{
    amq_filter *f = make_count(20000, 0.01);
    uint64_t i, a, b, differ = 0;
    REQUIRE(f != NULL);
    for (i = 0; i < 100000; i++)
        (void)amq_filter_add_hash(f, key_hash(f, i, 61));
    for (i = 0; i < 200000; i++) {
        amq_aging_masks(f, key_hash(f, i, i % 3 ? 61 : 62), &a, &b);
        differ += a != b;
    }
    CHECK_EQ(differ, 0);
    amq_filter_free(f);
}

TEST_MAIN()
