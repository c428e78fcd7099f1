/*
 * test_inplace.c - the chunked payload checksum (header flag 1) and the
 * in-place update of amq/inplace.h: saved and verified, damage detected,
 * adds committed in place read back by a verified open, kinds that cannot
 * be updated in place refused with AMQ_EUNSUPPORTED.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amq.h"
#include "amq/filter.h"
#include "amq/inplace.h"
#include "common/container.h"
#include "common/endian.h"
#include "test.h"

static amq_filter *make(uint32_t kind, uint64_t capacity)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_config_init(&cfg, kind);
    cfg.capacity = capacity;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    return f;
}

static void add_range(amq_filter *f, uint64_t lo, uint64_t hi)
{
    uint64_t i;
    for (i = lo; i < hi; i++)
        (void)amq_filter_add(f, &i, sizeof i);
}

static uint64_t count_present(const amq_filter *f, uint64_t lo, uint64_t hi)
{
    uint64_t i, n = 0;
    for (i = lo; i < hi; i++)
        n += amq_filter_contains(f, &i, sizeof i) == 1;
    return n;
}

TEST(chunked_checksum_round_trip_and_damage)
{
    amq_filter *f = make(AMQ_KIND_BLOOM, 100000), *g = NULL;
    const char *p = test_path("chunked.amq");
    struct stat st;
    int fd;

    REQUIRE(f != NULL);
    add_range(f, 0, 5000);
    REQUIRE_OK(amq_filter_set_chunked_checksum(f, 1));
    REQUIRE_OK(amq_filter_save(f, p, 0, NULL));
    REQUIRE_OK(amq_filter_open(p, 0, NULL, &g, NULL));
    CHECK_EQ_U64(count_present(g, 0, 5000), 5000);
    amq_filter_free(g);
    g = NULL;
    /* One byte changed in the last, partial chunk of the payload. */
    REQUIRE(stat(p, &st) == 0);
    fd = open(p, O_WRONLY);
    REQUIRE(fd >= 0);
    CHECK(pwrite(fd, "\xff", 1, st.st_size - 1) == 1);
    close(fd);
    CHECK_STATUS(amq_filter_open(p, 0, NULL, &g, NULL), AMQ_ECHECKSUM);
    CHECK_STATUS(amq_filter_set_chunked_checksum(NULL, 1), AMQ_EINVAL);
    amq_filter_free(f);
}

static void in_place(uint32_t kind)
{
    amq_filter *f = make(kind, 10000000), *v = NULL, *g = NULL;
    const char *p = test_path("inplace.amq");
    amq_inplace *ip = NULL;
    struct stat before, after;
    uint64_t written = 0;

    REQUIRE(f != NULL);
    add_range(f, 0, 1000);
    REQUIRE_OK(amq_filter_set_chunked_checksum(f, 1));
    unlink(p);
    REQUIRE_OK(amq_filter_save(f, p, 0, NULL));
    REQUIRE(stat(p, &before) == 0);
    REQUIRE_OK(amq_inplace_open(p, &v, &ip, NULL));
    CHECK_EQ(amq_filter_is_readonly(v), 0);
    add_range(v, 1000, 1100);
    REQUIRE_OK(amq_inplace_commit(ip, v, &written, NULL));
    /* 100 keys: a few of the file's chunks, not the whole file. */
    CHECK_GT(written, 0);
    CHECK_LT(written, (uint64_t)before.st_size);
    amq_filter_free(v);
    amq_inplace_close(ip);
    REQUIRE(stat(p, &after) == 0);
    CHECK_EQ_U64(after.st_ino, before.st_ino);
    REQUIRE_OK(amq_filter_open(p, 0, NULL, &g, NULL)); /* verified */
    CHECK_EQ_U64(count_present(g, 0, 1100), 1100);
    /* The same as the filter added to in memory and saved whole. */
    add_range(f, 1000, 1100);
    {
        amq_stats a, b;
        amq_filter_stats(f, &a);
        amq_filter_stats(g, &b);
        CHECK_EQ_U64(a.items, b.items);
    }
    amq_filter_free(g);
    amq_filter_free(f);
}

TEST(bloom_in_place)
{
    in_place(AMQ_KIND_BLOOM);
}

TEST(blocked_in_place)
{
    in_place(AMQ_KIND_BLOCKED);
}

TEST(in_place_refused_where_it_cannot_be)
{
    const char *p = test_path("refused.amq");
    amq_filter *f = make(AMQ_KIND_CUCKOO, 10000), *v = NULL;
    amq_inplace *ip = NULL;

    REQUIRE(f != NULL);
    unlink(p);
    REQUIRE_OK(amq_filter_save(f, p, 0, NULL));
    CHECK_STATUS(amq_inplace_open(p, &v, &ip, NULL), AMQ_EUNSUPPORTED);
    CHECK(v == NULL && ip == NULL);
    amq_filter_free(f);
    /* A Bloom filter saved without chunked checksums. */
    f = make(AMQ_KIND_BLOOM, 10000);
    REQUIRE(f != NULL);
    unlink(p);
    REQUIRE_OK(amq_filter_save(f, p, 0, NULL));
    CHECK_STATUS(amq_inplace_open(p, &v, &ip, NULL), AMQ_EUNSUPPORTED);
    amq_filter_free(f);
    amq_inplace_close(NULL);
}

/* A journal of no record (a crafted one: the writer's first record is always the
 * file's head) beside a file: not this file's, ignored by both opens.  Before, its
 * readers took the first record's length from past its end (ASan: a heap overflow). */
TEST(journal_without_records_is_ignored)
{
    const char *p = test_path("norecords.amq");
    char jp[4200];
    uint8_t j[48];
    amq_filter *f = make(AMQ_KIND_BLOOM, 10000), *v = NULL;
    amq_inplace *ip = NULL;
    struct stat st;
    int fd;

    REQUIRE(f != NULL);
    add_range(f, 0, 1000);
    REQUIRE_OK(amq_filter_set_chunked_checksum(f, 1));
    unlink(p);
    REQUIRE_OK(amq_filter_save(f, p, 0, NULL));
    REQUIRE(stat(p, &st) == 0);
    snprintf(jp, sizeof jp, "%s/.norecords.amq.amqjournal", test_tmpdir());
    memset(j, 0, sizeof j);
    memcpy(j, "AMQJRNL1", 8);
    amq_store64(j + 8, (uint64_t)st.st_size);
    amq_store64(j + 16, 0); /* no record */
    amq_store64(j + 24, (uint64_t)st.st_ino);
    amq_store64(j + 40, amq_checksum(j, 40));
    fd = open(jp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, j, sizeof j) == (ssize_t)sizeof j);
    close(fd);
    REQUIRE_OK(amq_filter_open(p, 0, NULL, &v, NULL));
    CHECK_EQ(count_present(v, 0, 1000), 1000);
    amq_filter_free(v);
    REQUIRE_OK(amq_inplace_open(p, &v, &ip, NULL));
    CHECK_EQ(count_present(v, 0, 1000), 1000);
    amq_filter_free(v);
    amq_inplace_close(ip);
    amq_filter_free(f);
    unlink(jp);
    unlink(p);
}

/* A journal whose head record runs past 4 KiB (a crafted one: the writer's is the header area,
 * 128 bytes for these kinds) beside a file a writer was applying it to when it stopped: the
 * head written, the rest not.  amq_inplace_open applies it; amq_filter_open must too (it took
 * any head record over 4 KiB as not this file's and read the half-applied file: a payload
 * checksum mismatch, or keys absent unverified). */
TEST(journal_with_a_long_head_record_is_applied_by_readers)
{
    const char *p = test_path("longhead.amq");
    char jp[4200];
    const size_t hl = 4096 + 64;
    uint8_t *old, *neu, *j, *now;
    size_t len, nlen, jlen, pos;
    amq_filter *f = make(AMQ_KIND_BLOOM, 10000), *v = NULL;
    amq_inplace *ip = NULL;
    struct stat st;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_set_chunked_checksum(f, 1));
    add_range(f, 0, 1000);
    unlink(p);
    REQUIRE_OK(amq_filter_save(f, p, 0, NULL));
    REQUIRE((old = test_read_file(p, &len)) != NULL);
    add_range(f, 1000, 2000);
    REQUIRE_OK(amq_filter_save(f, p, 0, NULL));
    REQUIRE((neu = test_read_file(p, &nlen)) != NULL);
    REQUIRE(nlen == len && len > 2 * hl);
    /* the file as the writer left it: the new head, the old rest */
    memcpy(old, neu, hl);
    REQUIRE(test_write_file(p, old, len) == 0);
    REQUIRE(stat(p, &st) == 0);
    jlen = 40 + 2 * 16 + len + 8;
    REQUIRE((j = calloc(1, jlen)) != NULL);
    memcpy(j, "AMQJRNL1", 8);
    amq_store64(j + 8, (uint64_t)len);
    amq_store64(j + 16, 2);
    amq_store64(j + 24, (uint64_t)st.st_ino);
    amq_store64(j + 32, 0); /* the old head's hash: the file holds the new one */
    pos = 40;
    amq_store64(j + pos, 0);
    amq_store32(j + pos + 8, (uint32_t)hl);
    memcpy(j + pos + 16, neu, hl);
    pos += 16 + hl;
    amq_store64(j + pos, (uint64_t)hl);
    amq_store32(j + pos + 8, (uint32_t)(len - hl));
    memcpy(j + pos + 16, neu + hl, len - hl);
    pos += 16 + len - hl;
    amq_store64(j + pos, amq_checksum(j, pos));
    snprintf(jp, sizeof jp, "%s/.longhead.amq.amqjournal", test_tmpdir());
    REQUIRE(test_write_file(jp, j, jlen) == 0);

    REQUIRE_OK(amq_filter_open(p, 0, NULL, &v, NULL));
    CHECK_EQ(count_present(v, 0, 2000), 2000);
    amq_filter_free(v);
    /* the writer agrees: it applies the same journal to the file */
    REQUIRE_OK(amq_inplace_open(p, &v, &ip, NULL));
    CHECK_EQ(count_present(v, 0, 2000), 2000);
    amq_filter_free(v);
    amq_inplace_close(ip);
    CHECK(stat(jp, &st) != 0);
    REQUIRE((now = test_read_file(p, &nlen)) != NULL);
    CHECK(nlen == len && memcmp(now, neu, len) == 0);
    free(now);
    free(j);
    free(neu);
    free(old);
    amq_filter_free(f);
    unlink(jp);
    unlink(p);
}

TEST_MAIN()
