/* test_alloc_zalloc.c - the optional zalloc hook of amq_allocator: filter
 * arrays come from it, zeroed, and are released through free. */
#include <stdlib.h>
#include <string.h>

#include "amq.h"
#include "test.h"

typedef struct zcount {
    int allocs, zallocs, live;
} zcount;

static void *z_alloc(void *opaque, size_t size)
{
    zcount *c = opaque;
    void *p = malloc(size);
    c->allocs++;
    c->live++;
    if (p != NULL)
        memset(p, 0xA5, size); /* garbage: the library must not rely on it */
    return p;
}

static void *z_zalloc(void *opaque, size_t size)
{
    zcount *c = opaque;
    c->zallocs++;
    c->live++;
    return calloc(1, size);
}

static void z_free(void *opaque, void *ptr, size_t size)
{
    zcount *c = opaque;
    (void)size;
    c->live--;
    free(ptr);
}

TEST(zalloc_used_for_arrays)
{
    zcount c = {0, 0, 0};
    amq_allocator a = {z_alloc, z_free, &c, z_zalloc};
    amq_bloom_params p;
    amq_bloom *b;
    const uint8_t *d;
    size_t i, n;

    REQUIRE_OK(amq_bloom_params_for(100000, 0.01, &p));
    REQUIRE_OK(amq_bloom_new(&p, &a, &b));
    CHECK_GE(c.zallocs, 1);
    d = amq_bloom_data(b);
    n = amq_bloom_data_size(&p);
    for (i = 0; i < n && d[i] == 0; i++)
        ;
    CHECK_EQ(i, n);
    CHECK_EQ(amq_bloom_contains(b, "k", 1), 0);
    CHECK_EQ(amq_bloom_add(b, "k", 1), 1);
    amq_bloom_free(b);
    CHECK_EQ(c.live, 0);
}

TEST(alloc_without_zalloc_still_zeroes)
{
    zcount c = {0, 0, 0};
    amq_allocator a = {z_alloc, z_free, &c, NULL};
    amq_bloom_params p;
    amq_bloom *b;
    const uint8_t *d;
    size_t i, n;

    REQUIRE_OK(amq_bloom_params_for(100000, 0.01, &p));
    REQUIRE_OK(amq_bloom_new(&p, &a, &b));
    CHECK_EQ(c.zallocs, 0);
    d = amq_bloom_data(b);
    n = amq_bloom_data_size(&p);
    for (i = 0; i < n && d[i] == 0; i++)
        ;
    CHECK_EQ(i, n);
    amq_bloom_free(b);
    CHECK_EQ(c.live, 0);
}

TEST_MAIN()
