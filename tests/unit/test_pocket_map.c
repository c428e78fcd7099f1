/*
 * test_pocket_map.c - the mappings a pocket segment grows in place over (src/pocket_core.h):
 * a table made huge pages and then grown past its reservation keeps its bytes, where it is
 * or moved to a 2 MiB boundary.
 *
 * At 1457900 a table's whole 2 MiB pages were advised huge (MADV_HUGEPAGE), which splits
 * the reservation into two mappings; growing past the reservation (8 times the table, so a
 * segment past 16 MiB: a filter of ~4e8 keys) remapped the whole of it, which the kernel
 * refuses across two mappings (EFAULT): the growth failed, the segment took keys on past its
 * load and the adds crawled into its spare (grown to 6e8 keys, it had not passed 5e8 after
 * 12 minutes).  The pages are now collapsed (MADV_COLLAPSE), which leaves one mapping.
 */
#include "pocket_core.h"
#include "test.h"

#define MIB ((size_t)1 << 20)

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    size_t i;
    for (i = 0; i < n; i += 4096)
        p[i] = (uint8_t)(i / 4096 * 131u + seed);
    p[n - 1] = (uint8_t)seed;
}

static int same(const uint8_t *p, size_t n, uint32_t seed)
{
    size_t i;
    for (i = 0; i < n; i += 4096)
        if (p[i] != (uint8_t)(i / 4096 * 131u + seed))
            return 0;
    return p[n - 1] == (uint8_t)seed;
}

/* A table of `used` bytes in a reservation of len, made huge, then grown to want: where it
 * is if the addresses past it are free, else moved (blocked: surely moved). */
static void grow_once(size_t len, size_t used, size_t want, int blocked)
{
    uint8_t *p = map_huge_aligned(len), *q, *wall = NULL;
    REQUIRE(p != NULL);
    CHECK_EQ((uintptr_t)p % (2 * MIB), 0);
    fill(p, used, 7);
    collapse_huge(p, used);
    if (blocked) { /* a mapping right past it: the reservation cannot grow where it is */
        wall = mmap(p + len, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                    -1, 0);
        REQUIRE(wall == p + len);
    }
    q = remap_huge_aligned(p, len, want);
    REQUIRE(q != NULL);
    if (blocked)
        CHECK(q != p);
    CHECK_EQ((uintptr_t)q % (2 * MIB), 0);
    CHECK(same(q, used, 7));
    fill(q, want, 9); /* all of it usable */
    collapse_huge(q, want);
    CHECK(same(q, want, 9));
    (void)munmap(q, want);
    if (wall != NULL)
        (void)munmap(wall, 4096);
}

TEST(huge_table_grows_past_its_reservation)
{
    /* two whole pages and a tail of 1.9 MiB (a huge page too), and one of 0.5 MiB */
    grow_once(16 * MIB, 4 * MIB - 100 * 1024, 128 * MIB, 0);
    grow_once(16 * MIB, 4 * MIB + MIB / 2, 128 * MIB, 0);
    grow_once(16 * MIB, 6 * MIB, 128 * MIB, 1);
}

TEST(huge_range_whole_pages_and_a_full_tail)
{
    uintptr_t a, e;
    uint8_t *base = (uint8_t *)(uintptr_t)(64 * MIB);
    CHECK(!huge_range(base, MIB, &a, &e));
    CHECK(huge_range(base, 2 * MIB, &a, &e) && a == (uintptr_t)base && e == a + 2 * MIB);
    /* a tail of 1.5 MiB stays on small pages; one of 1.75 goes on a huge page */
    CHECK(huge_range(base, 3 * MIB + MIB / 2, &a, &e) && e == a + 2 * MIB);
    CHECK(huge_range(base, 3 * MIB + 3 * MIB / 4, &a, &e) && e == a + 4 * MIB);
    /* from an unaligned start: whole pages only from the first boundary */
    CHECK(huge_range(base + 4096, 4 * MIB, &a, &e) && a == (uintptr_t)base + 2 * MIB &&
          e == (uintptr_t)base + 4 * MIB);
}

TEST_MAIN()
