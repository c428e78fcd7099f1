/*
 * test_refusal.c - amq_filter_refusal: why an add was refused with
 * AMQ_EFULL, for each kind whose add can refuse: one key's copies, another
 * key's copies (the cuckoo kind's victim slot), or a full or crowded table.
 */
#include <string.h>

#include "amq.h"
#include "test.h"

static amq_filter *make(uint32_t kind, uint64_t capacity, uint32_t bucket_size, int nonscaling)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_config_init(&cfg, kind);
    cfg.capacity = capacity;
    cfg.bucket_size = bucket_size;
    cfg.nonscaling = (uint32_t)nonscaling;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    return f;
}

/* Adds key-<from>.. until one is refused: the number added, or -1 when
 * an add fails otherwise or none is refused within limit. */
static int64_t add_distinct(amq_filter *f, int from, int limit, char *refused, size_t cap)
{
    int i, len, rc;
    for (i = from; i < from + limit; i++) {
        len = snprintf(refused, cap, "key-%d", i);
        rc = amq_filter_add(f, refused, (size_t)len);
        if (rc == AMQ_EFULL)
            return i - from;
        if (rc < 0)
            return -1;
    }
    return -1;
}

/* Adds key until it is refused: the copies taken, or -1. */
static int64_t add_copies(amq_filter *f, const char *key, int limit)
{
    int i, rc;
    for (i = 0; i < limit; i++) {
        rc = amq_filter_add(f, key, strlen(key));
        if (rc == AMQ_EFULL)
            return i;
        if (rc < 0)
            return -1;
    }
    return -1;
}

/* The refusal of key, or -1 when the call fails. */
static int64_t refusal(const amq_filter *f, const char *key)
{
    uint32_t why;
    return amq_filter_refusal(f, key, strlen(key), &why) == AMQ_OK ? (int64_t)why : -1;
}

static int64_t refusal_hash(const amq_filter *f, amq_hash128 h)
{
    uint32_t why;
    return amq_filter_refusal_hash(f, h, &why) == AMQ_OK ? (int64_t)why : -1;
}

TEST(cuckoo_copies_of_a_key_in_a_filter_far_from_full)
{
    amq_filter *f = make(AMQ_KIND_CUCKOO, 1000, 4, 0);
    REQUIRE(f != NULL);
    CHECK_EQ(add_copies(f, "x", 100), 9); /* 2b + 1: its two buckets and the victim slot */
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_COPIES);
    /* every add is refused now: for another key's copies */
    CHECK_STATUS(amq_filter_add(f, "y", 1), AMQ_EFULL);
    CHECK_EQ(refusal(f, "y"), AMQ_REFUSAL_OTHER_COPIES);
    CHECK_EQ(refusal_hash(f, amq_filter_hash(f, "x", 1)), AMQ_REFUSAL_COPIES);
    /* a removal makes room: the victim goes back, the next copy refused again */
    CHECK_EQ(amq_filter_remove(f, "x", 1), 1);
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_FULL);
    CHECK_EQ(add_copies(f, "x", 100), 1);
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_COPIES);
    amq_filter_free(f);
}

TEST(cuckoo_copies_of_a_key_in_a_filter_past_half_full)
{
    /* the tool and Python guessed "full" from the load past half the capacity */
    char key[32];
    amq_stats st;
    amq_filter *f = make(AMQ_KIND_CUCKOO, 1000, 4, 0);
    REQUIRE(f != NULL);
    CHECK_EQ(add_distinct(f, 0, 700, key, sizeof key), -1); /* all 700 taken */
    amq_filter_stats(f, &st);
    CHECK_GE(st.items, st.capacity / 2);
    CHECK_EQ(add_copies(f, "x", 100), 9);
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_COPIES);
    amq_filter_free(f);
}

TEST(cuckoo_full_of_distinct_keys)
{
    char key[32];
    amq_filter *f = make(AMQ_KIND_CUCKOO, 1000, 4, 0);
    REQUIRE(f != NULL);
    CHECK_GT(add_distinct(f, 0, 100000, key, sizeof key), 900);
    CHECK_EQ(refusal(f, key), AMQ_REFUSAL_FULL);
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_FULL);
    amq_filter_free(f);
}

TEST(scalable_cuckoo_copies_and_a_full_nonscaling_table)
{
    char key[32];
    amq_filter *f = make(AMQ_KIND_SCALABLE_CUCKOO, 1000, 4, 0);
    REQUIRE(f != NULL);
    CHECK_EQ(add_copies(f, "x", 100), 8); /* its two buckets of the newest link */
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_COPIES);
    CHECK_EQ(refusal(f, "y"), AMQ_REFUSAL_FULL); /* y is taken */
    CHECK_EQ(amq_filter_add(f, "y", 1), 1);
    amq_filter_free(f);

    f = make(AMQ_KIND_SCALABLE_CUCKOO, 1000, 4, 1);
    REQUIRE(f != NULL);
    CHECK_GT(add_distinct(f, 0, 100000, key, sizeof key), 900);
    CHECK_EQ(refusal(f, key), AMQ_REFUSAL_FULL);
    amq_filter_free(f);
}

/* A hash whose h1 has its top 16 bits 0: bucket 0 of an expandable table
 * of up to 2^16 buckets (keys crowded as by a weak hash). */
static amq_hash128 crowded(uint64_t i)
{
    amq_hash128 h;
    h.h1 = (i * UINT64_C(0x9e3779b97f4a7c15)) >> 16;
    h.h2 = i;
    return h;
}

TEST(expandable_copies_and_a_crowded_bucket)
{
    uint64_t i, items;
    int rc = 0;
    amq_stats st;
    amq_filter *f = make(AMQ_KIND_EXPANDABLE, 4096, 0, 0);
    REQUIRE(f != NULL);
    CHECK_EQ(add_copies(f, "x", 100), 32);
    amq_filter_stats(f, &st);
    items = st.items;
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_COPIES);
    /* counted on a copy: the filter keeps its 32 */
    amq_filter_stats(f, &st);
    CHECK_EQ_U64(st.items, items);
    CHECK_STATUS(amq_filter_add(f, "x", 1), AMQ_EFULL);
    CHECK_EQ(refusal(f, "y"), AMQ_REFUSAL_FULL);
    CHECK_EQ(amq_filter_remove(f, "x", 1), 1);
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_FULL);
    amq_filter_free(f);

    f = make(AMQ_KIND_EXPANDABLE, 4096, 0, 0);
    REQUIRE(f != NULL);
    for (i = 1; i < 1000 && (rc = amq_filter_add_hash(f, crowded(i))) == 1; i++)
        ;
    CHECK_STATUS(rc, AMQ_EFULL);
    CHECK_GT(i, 256);
    CHECK_EQ(refusal_hash(f, crowded(i)), AMQ_REFUSAL_FULL);
    amq_filter_free(f);
}

TEST(kinds_that_refuse_for_no_key_s_copies)
{
    char key[32];
    amq_filter *f = make(AMQ_KIND_SCALABLE_BLOOM, 100, 0, 1);
    REQUIRE(f != NULL);
    CHECK_GT(add_distinct(f, 0, 100000, key, sizeof key), 90);
    CHECK_EQ(refusal(f, key), AMQ_REFUSAL_FULL);
    amq_filter_free(f);

    f = make(AMQ_KIND_BLOOM, 100, 0, 0);
    REQUIRE(f != NULL);
    CHECK_EQ(refusal(f, "x"), AMQ_REFUSAL_FULL);
    amq_filter_free(f);
}

TEST_MAIN()
