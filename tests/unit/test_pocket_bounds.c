/*
 * test_pocket_bounds.c - the pocket kind (13) under one key added again and again, keys
 * crowded into one bucket, and a ring emptied by a settle (each failed at c9c9413).
 *
 * 1. copies_of_one_key_bounded: one key added 1,000 times (or 400 distinct keys crowded into
 *    one bucket) under an allocator capped at 64 MiB.  At c9c9413 the ~301st add grows the
 *    segment's spare by 1.25x again and again (amq_pk_sp_insert: a bucket's copies all have
 *    one home, so no spare size puts more than spd of them within reach) until the
 *    allocator refuses: AMQ_ENOMEM, the filter left holding ~all of the cap, and the key
 *    stuck in the ring, so every later add of ANY key fails too.
 * 2. settled_ring_reopens: a filter whose ring was emptied by amq_filter_settle (the tool
 *    settles before each save) with a next cell other than 0 is refused by its own loader
 *    ("pocket pending keys: cells 0x0, next 10"): `amq build --type pocket` and `amq add`
 *    write files no reader opens.
 */
#include "amq.h"
#include "test.h"

static size_t held, cap_bytes;

static void *cap_alloc(void *o, size_t n)
{
    (void)o;
    if (n > cap_bytes - held)
        return NULL;
    held += n;
    return malloc(n);
}

static void *cap_zalloc(void *o, size_t n)
{
    (void)o;
    if (n > cap_bytes - held)
        return NULL;
    held += n;
    return calloc(1, n);
}

static void cap_free(void *o, void *p, size_t n)
{
    (void)o;
    held -= n;
    free(p);
}

static void copies_case(int distinct)
{
    amq_allocator al = {cap_alloc, cap_free, NULL, cap_zalloc};
    amq_config cfg;
    amq_filter *f = NULL;
    amq_stats st;
    unsigned i, found = 0;
    int rc, refused = 0;
    char key[32];

    held = 0;
    cap_bytes = (size_t)64 << 20;
    amq_config_init(&cfg, AMQ_KIND_POCKET);
    cfg.capacity = 1000;
    cfg.alloc = &al;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    for (i = 0; i < 1000; i++) {
        size_t len;
        if (distinct) { /* keys whose h1 falls in bucket 0 of the 1,216 (38 bins) */
            for (;;) {
                len = (size_t)snprintf(key, sizeof key, "c-%u", found++);
                if (amq_hash_key(cfg.hash_algo, cfg.seed, key, len).h1 < UINT64_MAX / 1216u)
                    break;
            }
        } else {
            len = (size_t)snprintf(key, sizeof key, "x");
        }
        rc = amq_filter_add(f, key, len);
        if (rc < 0) {
            /* a refusal of one key's copies is fine; it must not cost the cap */
            CHECK_EQ(rc, AMQ_EFULL);
            refused++;
            break;
        }
    }
    amq_filter_stats(f, &st);
    CHECK_LT(held, (size_t)1 << 20); /* a 1,000-key filter: tens of KB, not the 64 MiB cap */
    /* other keys still go in (but for one of the crowded bucket, refused as the crowd is) */
    for (i = 0; i < 100; i++) {
        const size_t len = (size_t)snprintf(key, sizeof key, "other-%u", i);
        if (distinct && amq_hash_key(cfg.hash_algo, cfg.seed, key, len).h1 < UINT64_MAX / 1216u)
            CHECK(amq_filter_add(f, key, len) == AMQ_EFULL || amq_filter_contains(f, key, len));
        else
            CHECK_EQ(amq_filter_add(f, key, len), 1);
    }
    (void)refused;
    amq_filter_free(f);
}

TEST(copies_of_one_key_bounded)
{
    copies_case(0);
}

TEST(crowded_bucket_bounded)
{
    copies_case(1);
}

/* Keys crowded into a band of adjacent buckets (hashes chosen against the seed) while the
 * filter grows from 1,000 keys past the size where segments grow in place: each add of the
 * band is taken or refused (AMQ_EFULL), and every key taken, of the band and not, answers
 * present at the end (a growth's spare no size places goes to the deep ranges,
 * test_pocket_spill.c). */
TEST(crowded_band_through_growths_in_place)
{
    const uint64_t keys = SMALL_RUN ? 1500000u : 3000000u, band = UINT64_C(1) << 50;
    const uint64_t band_lo = UINT64_C(0x5a5a) << 48;
    amq_config cfg;
    amq_filter *f = NULL;
    amq_hash128 *h = malloc(keys * sizeof *h);
    uint64_t i, n = 0, taken = 0, refused = 0, others_refused = 0, missing = 0;
    uint64_t rs = 0x9e3779b97f4a7c15u;
    REQUIRE(h != NULL);
    amq_config_init(&cfg, AMQ_KIND_POCKET);
    cfg.capacity = 1000;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    for (i = 0; i < keys; i++) {
        int rc;
        rs = rs * 6364136223846793005u + 1442695040888963407u;
        h[n].h1 = (i % 4u == 3u) ? band_lo + (rs >> 14) % band
                                 : rs ^ (rs >> 29) * 0xbf58476d1ce4e5b9u;
        h[n].h2 = rs;
        rc = amq_filter_add_hash(f, h[n]);
        if (rc == AMQ_EFULL) {
            if (i % 4u == 3u)
                refused++;
            else
                others_refused++;
            continue;
        }
        REQUIRE(rc >= 0);
        taken += i % 4u == 3u;
        n++;
    }
    for (i = 0; i < n; i++)
        missing += (uint64_t)!amq_filter_contains_hash(f, h[i]);
    CHECK_EQ(missing, 0);
    i = (uint64_t)(int64_t)amq_filter_settle(f); /* (a crowded key may stay pending: EFULL) */
    CHECK(i == (uint64_t)AMQ_OK || i == (uint64_t)(int64_t)AMQ_EFULL);
    for (i = 0; i < n; i++)
        missing += (uint64_t)!amq_filter_contains_hash(f, h[i]);
    CHECK_EQ(missing, 0);
    CHECK(taken > 1000u && refused > 1000u); /* both, or the band was no crowd */
    /* other keys refused only where the crowd fills their bucket or their segment's spare
     * (142 of 2.25M at 3M adds): a crowd costs its neighbours, not the filter */
    CHECK_LT(others_refused, keys / 1000u);
    if (getenv("AMQ_TEST_VERBOSE") != NULL)
        printf("  band: %llu taken, %llu refused; others refused %llu\n",
               (unsigned long long)taken, (unsigned long long)refused,
               (unsigned long long)others_refused);
    free(h);
    amq_filter_free(f);
}

TEST(settled_ring_reopens)
{
    amq_config cfg;
    amq_filter *f = NULL, *g = NULL;
    amq_errinfo err;
    uint8_t *bytes;
    size_t len;
    unsigned i;
    char key[16];

    amq_config_init(&cfg, AMQ_KIND_POCKET);
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    for (i = 0; i < 10; i++)
        CHECK_EQ(amq_filter_add(f, key, (size_t)snprintf(key, sizeof key, "k%u", i)), 1);
    REQUIRE_OK(amq_filter_settle(f));
    bytes = test_serialized(f, &len);
    REQUIRE(bytes != NULL);
    err.msg[0] = '\0';
    CHECK_STATUS(amq_filter_deserialize(bytes, len, 0, NULL, &g, &err), AMQ_OK);
    if (g != NULL) {
        for (i = 0; i < 10; i++)
            CHECK_EQ(amq_filter_contains(g, key, (size_t)snprintf(key, sizeof key, "k%u", i)),
                     1);
        amq_filter_free(g);
    } else {
        printf("  load refused: %s\n", err.msg);
    }
    free(bytes);
    amq_filter_free(f);
}

TEST_MAIN()
