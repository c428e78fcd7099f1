/*
 * test_pocket_spill.c - a growth's spare that no size places (src/pocket_core.h,
 * sp_build_spilling): the crowded buckets' entries become exact deep ranges, every key an
 * entry answered is answered after, and no other key of the crowd's bucket is.
 *
 * Until this test, a growth in place (the bins already moved) whose spare did not fit the
 * mapping reserved for it fell back to the allocator's block, grown without bound for a
 * crowd no size spreads, and ignored its failure: the segment kept no spare, and every key
 * whose entry was there answered absent.
 */
#include "pocket_core.h"
#include "test.h"

#define NB 1024u         /* bins: 32,768 buckets, level 15 */
#define CROWD 5000u      /* entries of one bucket: more than PK_SP_DMAX, so no size places them */
#define CROWD_G 12345u
#define SPREAD 6000u     /* others, one a bucket at most */

static uint64_t rnd_state = 0x2545f4914f6cdd1du;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static int ent_less(const void *a, const void *b)
{
    const pk_ent *p = a, *q = b;
    return p->g != q->g ? (p->g < q->g ? -1 : 1) : (p->v > q->v) - (p->v < q->v);
}

/* Does the segment answer key hs of bucket g, by its spare or its deep ranges? */
static int answers(const pk_seg *s, uint64_t hs, uint64_t g)
{
    return pk_sp_has(s, g, hs) || (s->ndeep != 0 && pk_deep_has(s, hs));
}

/* A key hs of bucket g that entry v answers (r: its ranges, i: which, at: 0 first, 1 last,
 * 2 middle). */
static uint64_t key_of(const uint64_t r[2][2], uint32_t i, int at)
{
    return at == 0 ? r[i][0] : at == 1 ? r[i][1] : r[i][0] + (r[i][1] - r[i][0]) / 2u;
}

static void spill_case(int mapped)
{
    amq_pk x;
    pk_seg s;
    pk_tab t;
    pk_ent *e = calloc(CROWD + SPREAD, sizeof *e), *orig = calloc(CROWD + SPREAD, sizeof *orig);
    const size_t map_len = (size_t)1 << 22;
    uint32_t *map = mapped ? map_bytes(map_len) : NULL;
    uint64_t n = 0, i, missing = 0, wrong = 0, crowd_asked = 0;
    REQUIRE(e != NULL && orig != NULL);
    REQUIRE(!mapped || map != NULL);
    memset(&x, 0, sizeof x);
    amq_alloc_init(&x.alloc, NULL);
    memset(&s, 0, sizeof s);
    pk_set_bins(&s, NB);
    memset(&t, 0, sizeof t);
    tab_geometry(&t, NB);
    /* the crowd: 15-bit entries of one bucket, every other value; and one entry in each of
     * SPREAD random buckets */
    for (i = 0; i < CROWD; i++) {
        e[n].g = CROWD_G;
        e[n++].v = (uint16_t)((1u << 15) | (2u * i));
    }
    for (i = 0; i < SPREAD; i++) {
        e[n].g = rnd() % s.m;
        e[n++].v = (uint16_t)((1u << 15) | (rnd() & 0x7fffu));
    }
    qsort(e, n, sizeof *e, ent_less);
    memcpy(orig, e, n * sizeof *e);
    t.sp = e;
    t.nsp = n;
    t.capsp = n;
    t.capdeep = 2u * n;
    t.deep = calloc(t.capdeep, sizeof *t.deep);
    REQUIRE(t.deep != NULL);
    t.fixed = 1;
    t.alloc = &x.alloc;

    REQUIRE_OK(sp_build_spilling(&x, &s, &t, map, map_len));
    CHECK(!t.failed);
    /* the crowd went deep, the others stayed in the spare */
    CHECK(t.ndeep >= CROWD);
    CHECK(s.spn >= SPREAD / 2u);
    CHECK_EQ(s.spn + t.ndeep, n);
    qsort(t.deep, t.ndeep, sizeof *t.deep, deep_cmp);
    s.deep = t.deep;
    s.ndeep = t.ndeep;
    s.deep_width = t.deep_width;

    /* every key an entry answered is answered: its range's ends and middle */
    for (i = 0; i < n; i++) {
        const uint64_t lo = (uint64_t)bucket_lo(orig[i].g, s.m);
        const uint64_t hi1 = (uint64_t)(bucket_lo(orig[i].g + 1u, s.m) - 1u);
        uint64_t r[2][2];
        uint32_t p, j, nr = pk_entry_ranges(lo, hi1, s.k, orig[i].v, r, &p);
        int at;
        for (j = 0; j < nr; j++)
            for (at = 0; at < 3; at++) {
                const uint64_t hs = key_of(r, j, at);
                CHECK_EQ(pk_mulhi(hs, s.m), orig[i].g);
                missing += (uint64_t)!answers(&s, hs, orig[i].g);
            }
    }
    CHECK_EQ(missing, 0);
    /* and no other key of the crowd's bucket: the odd values were never added */
    for (i = 0; i < 2000u; i++) {
        const uint64_t lo = (uint64_t)bucket_lo(CROWD_G, s.m);
        const uint64_t hi1 = (uint64_t)(bucket_lo(CROWD_G + 1u, s.m) - 1u);
        uint64_t r[2][2];
        uint32_t p, nr;
        const uint16_t v = (uint16_t)((1u << 15) | (2u * (rnd() % 16384u) + 1u));
        uint32_t k;
        int other = 0;
        nr = pk_entry_ranges(lo, hi1, s.k, v, r, &p);
        if (nr == 0)
            continue;
        for (k = 0; k < n; k++) /* unless a spread entry of the bucket has that value */
            other |= orig[k].g == CROWD_G && orig[k].v == v;
        if (other)
            continue;
        crowd_asked++;
        wrong += (uint64_t)answers(&s, key_of(r, 0, 2), CROWD_G);
    }
    CHECK(crowd_asked > 1000u);
    CHECK_EQ(wrong, 0);

    free_spare(&x, &s);
    free(t.deep);
    free(e);
    free(orig);
}

/* pk_div_m (the spare's homes by the reciprocal) equals the division: random buckets of
 * random tables, and each table's edges (0, a multiple of m, one under it, the largest x). */
TEST(reciprocal_division_is_exact)
{
    uint64_t i, wrong = 0;
    for (i = 0; i < 200000u; i++) {
        pk_seg s;
        uint64_t x, e;
        pk_set_bins(&s, 2u + rnd() % (PK_MAX_BINS - 1u));
        x = (rnd() % s.m) * (rnd() % (UINT64_C(1) << 31));
        wrong += pk_div_m(&s, x) != x / s.m;
        e = (rnd() % (UINT64_MAX / 2u / s.m)) * s.m;
        wrong += pk_div_m(&s, e) != e / s.m;
        wrong += e > 0 && pk_div_m(&s, e - 1u) != (e - 1u) / s.m;
        wrong += pk_div_m(&s, 0) != 0;
        wrong += pk_div_m(&s, INT64_MAX) != (uint64_t)INT64_MAX / s.m;
    }
    CHECK_EQ(wrong, 0);
}

/* pk_deep_has (a guess from hs's share of the list, then doubling steps and bisection)
 * answers as a scan of every range: lists of 1 to 3,000 ranges spread evenly, crowded into a
 * few places (the guess far off: the steps must reach the whole list), or nested and
 * touching; probes at, next to and between the ranges' ends, and anywhere. */
TEST(deep_search_answers_as_a_scan)
{
    uint64_t round, wrong = 0, hits = 0;
    for (round = 0; round < 360u; round++) {
        const uint64_t n = 1u + rnd() % (round < 300u ? 40u : 3000u);
        const uint32_t shape = (uint32_t)(round % 3u);
        uint64_t(*d)[2] = calloc(n, sizeof *d);
        pk_seg s;
        uint64_t i, p;
        REQUIRE(d != NULL);
        memset(&s, 0, sizeof s);
        for (i = 0; i < n; i++) {
            const uint64_t lo = shape == 0   ? rnd()
                                : shape == 1 ? (rnd() % 4u) << 62 | rnd() % 100000u
                                             : rnd() % (8u * n);
            d[i][0] = lo;
            d[i][1] = lo + (shape == 2 ? rnd() % 16u : rnd() % 1000u);
            if (d[i][1] < lo)
                d[i][1] = UINT64_MAX;
        }
        qsort(d, n, sizeof *d, deep_cmp);
        s.deep = d;
        s.ndeep = n;
        for (i = 0; i < n; i++)
            if (d[i][1] - d[i][0] > s.deep_width)
                s.deep_width = d[i][1] - d[i][0];
        for (p = 0; p < 2u * n + 64u; p++) {
            const uint64_t r = d[rnd() % n][rnd() % 2u];
            const uint64_t hs = p % 4u == 0   ? rnd()
                                : p % 4u == 1 ? r
                                : p % 4u == 2 ? r + 1u
                                              : r - 1u;
            int want = 0;
            for (i = 0; i < n && !want; i++)
                want = d[i][0] <= hs && hs <= d[i][1];
            wrong += pk_deep_has(&s, hs) != want;
            hits += (uint64_t)want;
        }
        free(d);
    }
    CHECK_EQ(wrong, 0);
    CHECK(hits > 50000u); /* (the probes at the ends find ranges) */
}

TEST(crowd_no_spare_places_goes_deep_in_a_mapping)
{
    spill_case(1);
}

TEST(crowd_no_spare_places_goes_deep_from_the_allocator)
{
    spill_case(0);
}

TEST_MAIN()
