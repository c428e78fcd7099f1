/*
 * test_filter.c - the generic handle and the file container: byte layout,
 * round trips through files and memory, atomic saves, and every kind of
 * damage a file can suffer.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amq.h"
#include "test.h"

static amq_filter *small_bloom(uint64_t n, int keys)
{
    amq_config cfg;
    amq_filter *f = NULL;
    char key[32];
    int i, len;

    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = n;
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    for (i = 0; i < keys; i++) {
        len = snprintf(key, sizeof key, "key-%d", i);
        amq_filter_add(f, key, (size_t)len);
    }
    return f;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

/* The byte layout of docs/file-format.md, field by field. */
TEST(container_layout)
{
    amq_filter *f = small_bloom(100, 10);
    uint8_t *buf;
    uint64_t size;
    size_t written;
    uint32_t plen;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, &written));
    CHECK_EQ(written, size);
    CHECK(memcmp(buf, "\x89" "AMQ\r\n\x1a\n", 8) == 0);
    CHECK_EQ(buf[8] | (buf[9] << 8), 1);              /* version */
    CHECK_EQ(buf[10] | (buf[11] << 8), AMQ_KIND_BLOOM);
    CHECK_EQ(buf[12] | (buf[13] << 8), AMQ_HASH_XXH3);
    CHECK_EQ(buf[14] | (buf[15] << 8), 0);            /* flags */
    CHECK_EQ_U64(le64(buf + 16), 0);                  /* seed */
    CHECK_EQ_U64(le64(buf + 24), 10);                 /* items */
    plen = le32(buf + 32);
    CHECK_EQ(plen, 32);                               /* bloom parameter block */
    CHECK_EQ(le32(buf + 36), 0);
    CHECK_EQ_U64(le64(buf + 40), 128);                /* (64 + 32 + 8) rounded to 64 */
    CHECK_EQ_U64(le64(buf + 48), size - 128);
    CHECK_EQ_U64(le64(buf + 56), amq_xxh3_64(buf + 128, (size_t)(size - 128), 0));
    CHECK_EQ_U64(le64(buf + 64), 958);                /* bits for 100 at 1 % */
    CHECK_EQ(le32(buf + 72), 7);                      /* probes */
    CHECK_EQ(le32(buf + 76), 0);                      /* native probing */
    CHECK_EQ_U64(le64(buf + 80), 100);                /* capacity */
    CHECK_EQ_U64(le64(buf + 96), amq_xxh3_64(buf, 96, 0)); /* header checksum */
    CHECK_EQ_U64(le64(buf + 104), 0);                 /* padding */
    CHECK_EQ_U64(size - 128, 120);                    /* 958 bits -> 15 words */
    free(buf);
    amq_filter_free(f);
}

TEST(memory_round_trip_copy_and_borrow)
{
    amq_filter *f = small_bloom(1000, 500), *g, *v;
    uint8_t *buf;
    uint64_t size;
    char key[32];
    int i, len;
    amq_stats a, b;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, NULL));
    CHECK_STATUS(amq_filter_serialize(f, buf, (size_t)size - 1, NULL), AMQ_EINVAL);
    REQUIRE_OK(amq_filter_deserialize(buf, (size_t)size, 0, NULL, &g, NULL));
    REQUIRE_OK(amq_filter_deserialize(buf, (size_t)size, AMQ_OPEN_MMAP, NULL, &v, NULL));
    CHECK(!amq_filter_is_readonly(g));
    CHECK(amq_filter_is_readonly(v));
    for (i = 0; i < 2000; i++) {
        len = snprintf(key, sizeof key, "key-%d", i);
        CHECK_EQ(amq_filter_contains(g, key, (size_t)len), amq_filter_contains(f, key, (size_t)len));
        CHECK_EQ(amq_filter_contains(v, key, (size_t)len), amq_filter_contains(f, key, (size_t)len));
    }
    amq_filter_stats(f, &a);
    amq_filter_stats(g, &b);
    CHECK_EQ(a.items, b.items);
    CHECK_EQ(a.bits, b.bits);
    CHECK_EQ_DBL(a.fill, b.fill);
    CHECK_STATUS(amq_filter_add(v, "x", 1), AMQ_EREADONLY);
    CHECK_EQ(amq_filter_add(g, "new key", 7), 1);
    amq_filter_free(v);
    amq_filter_free(g);
    free(buf);
    amq_filter_free(f);
}

TEST(file_round_trip_and_mmap)
{
    amq_filter *f = small_bloom(10000, 5000), *g;
    amq_errinfo err;
    char key[32];
    int i, len, flags;
    const char *path = test_path("round.amq");

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_save(f, path, AMQ_SAVE_EXCL, &err));
    CHECK_STATUS(amq_filter_save(f, path, AMQ_SAVE_EXCL, &err), AMQ_EEXIST);
    for (flags = 0; flags < 4; flags++) {
        REQUIRE_OK(amq_filter_open(path, (unsigned)flags, NULL, &g, &err));
        CHECK_EQ(amq_filter_is_readonly(g), ((unsigned)flags & AMQ_OPEN_MMAP) != 0);
        for (i = 0; i < 6000; i++) {
            len = snprintf(key, sizeof key, "key-%d", i);
            CHECK_EQ(amq_filter_contains(g, key, (size_t)len),
                     amq_filter_contains(f, key, (size_t)len));
        }
        amq_filter_free(g);
    }
    amq_filter_free(f);
}

/* The tool's rules (cli/target.c) in the library's writer: never a text
 * file replaced, a symlink followed, a hard-linked file refused. */
TEST(save_replaces_only_amq_files_through_links)
{
    amq_filter *f = small_bloom(100, 1);
    amq_errinfo err;
    struct stat st;
    char text[600], link_path[600], other[600], buf[16];
    FILE *fp;

    REQUIRE(f != NULL);
    snprintf(text, sizeof text, "%s", test_path("notes.txt"));
    fp = fopen(text, "w");
    REQUIRE(fp != NULL);
    fputs("precious\n", fp);
    fclose(fp);
    CHECK_STATUS(amq_filter_save(f, text, 0, &err), AMQ_EEXIST);
    CHECK(strstr(err.msg, "not an amq filter") != NULL);
    fp = fopen(text, "r");
    REQUIRE(fp != NULL);
    CHECK(fgets(buf, sizeof buf, fp) != NULL && strcmp(buf, "precious\n") == 0);
    fclose(fp);
    /* a link to a filter: the filter is replaced, the link stays a link */
    snprintf(other, sizeof other, "%s", test_path("target.amq"));
    snprintf(link_path, sizeof link_path, "%s", test_path("link.amq"));
    REQUIRE_OK(amq_filter_save(f, other, 0, &err));
    REQUIRE(symlink("target.amq", link_path) == 0);
    REQUIRE_OK(amq_filter_save(f, link_path, 0, &err));
    REQUIRE(lstat(link_path, &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
    /* a second name on the file: refused, both names keep the data */
    unlink(link_path);
    REQUIRE(link(other, link_path) == 0);
    CHECK_STATUS(amq_filter_save(f, other, 0, &err), AMQ_EIO);
    CHECK_EQ(err.sys_errno, EMLINK);
    unlink(link_path);
    REQUIRE_OK(amq_filter_save(f, other, 0, &err));
    amq_filter_free(f);
}

TEST(save_keeps_permissions_and_leaves_no_temporaries)
{
    amq_filter *f = small_bloom(100, 1);
    amq_errinfo err;
    struct stat st;
    const char *path = test_path("perm.amq");
    char cmd[600];
    FILE *p;
    int count = -1;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_save(f, path, 0, &err));
    REQUIRE(chmod(path, 0640) == 0);
    REQUIRE_OK(amq_filter_save(f, path, 0, &err));
    REQUIRE(stat(path, &st) == 0);
    CHECK_EQ(st.st_mode & 0777, 0640);
    /* A save into a missing directory fails cleanly. */
    CHECK_STATUS(amq_filter_save(f, test_path("no/such/dir/x.amq"), 0, &err), AMQ_EIO);
    CHECK(strstr(err.msg, "no/such/dir") != NULL);
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c amqtmp", test_tmpdir());
    p = popen(cmd, "r");
    REQUIRE(p != NULL);
    REQUIRE(fscanf(p, "%d", &count) == 1);
    pclose(p);
    CHECK_EQ(count, 0);
    amq_filter_free(f);
}

static int write_file(const char *path, const uint8_t *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (fp == NULL)
        return -1;
    if (len > 0 && fwrite(data, 1, len, fp) != len) {
        fclose(fp);
        return -1;
    }
    return fclose(fp);
}

/* Every truncation of a valid file is refused, through memory and files,
 * copied and mapped, checked and trusted. */
TEST(every_truncation_is_refused)
{
    amq_filter *f = small_bloom(500, 100), *g;
    amq_errinfo err;
    uint8_t *buf;
    uint64_t size;
    size_t cut;
    const char *path = test_path("trunc.amq");

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, NULL));
    for (cut = 0; cut < size; cut++) {
        uint8_t *copy = malloc(cut + 1); /* exact size: ASan sees any over-read */
        memcpy(copy, buf, cut);
        g = (amq_filter *)1;
        CHECK_STATUS(amq_filter_deserialize(copy, cut, AMQ_OPEN_TRUST, NULL, &g, &err) < 0, 1);
        CHECK(g == NULL);
        CHECK_STATUS(amq_filter_deserialize(copy, cut, AMQ_OPEN_MMAP, NULL, &g, &err) < 0, 1);
        free(copy);
        if (cut % 7 == 0) {
            REQUIRE(write_file(path, buf, cut) == 0);
            CHECK_STATUS(amq_filter_open(path, AMQ_OPEN_MMAP | AMQ_OPEN_TRUST, NULL, &g, &err) < 0,
                         1);
            CHECK(strstr(err.msg, path) != NULL);
        }
    }
    REQUIRE(write_file(path, buf, 10) == 0);
    CHECK_STATUS(amq_filter_open(path, 0, NULL, &g, &err), AMQ_ETRUNC);
    REQUIRE(write_file(path, buf, (size_t)size - 1) == 0);
    CHECK_STATUS(amq_filter_open(path, 0, NULL, &g, &err), AMQ_ETRUNC);
    CHECK(strstr(err.msg, "truncated") != NULL);
    free(buf);
    amq_filter_free(f);
}

/* Any single flipped byte is detected when the checksums are checked; with
 * --trust a flip in the payload goes unseen, but nothing crashes. */
TEST(every_byte_flip_is_detected)
{
    amq_filter *f = small_bloom(300, 100), *g;
    amq_errinfo err;
    uint8_t *buf, *copy;
    uint64_t size;
    size_t pos;
    int bit, rc;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    copy = malloc((size_t)size);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, NULL));
    for (pos = 0; pos < size; pos++) {
        for (bit = 0; bit < 8; bit += 3) {
            memcpy(copy, buf, (size_t)size);
            copy[pos] ^= (uint8_t)(1u << bit);
            rc = amq_filter_deserialize(copy, (size_t)size, 0, NULL, &g, &err);
            if (rc == AMQ_OK) {
                FAIL_AT_("flip of bit %d at byte %zu went undetected", bit, pos);
                amq_filter_free(g);
            }
            rc = amq_filter_deserialize(copy, (size_t)size, AMQ_OPEN_TRUST | AMQ_OPEN_MMAP, NULL,
                                        &g, &err);
            if (rc == AMQ_OK) {
                CHECK_GE(pos, 128); /* only payload damage can pass unchecked */
                (void)amq_filter_contains(g, "x", 1);
                amq_filter_free(g);
            }
        }
    }
    free(copy);
    free(buf);
    amq_filter_free(f);
}

/* Random damage, several bytes at once. */
TEST(random_damage_never_crashes)
{
    amq_filter *f = small_bloom(2000, 500), *g;
    amq_errinfo err;
    uint8_t *buf, *copy;
    uint64_t size, st = 1234;
    int round, j;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    copy = malloc((size_t)size);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, NULL));
    for (round = 0; round < 3000; round++) {
        memcpy(copy, buf, (size_t)size);
        for (j = 0; j < 1 + round % 5; j++)
            copy[test_rand(&st) % size] = (uint8_t)test_rand(&st);
        if (amq_filter_deserialize(copy, (size_t)size, AMQ_OPEN_TRUST, NULL, &g, &err) == AMQ_OK) {
            (void)amq_filter_contains(g, "x", 1);
            amq_filter_free(g);
        }
    }
    free(copy);
    free(buf);
    amq_filter_free(f);
}

/* Headers with a valid checksum but impossible fields. */
static void forge(uint8_t *buf, size_t header_len)
{
    uint64_t sum = amq_xxh3_64(buf, header_len, 0);
    int i;
    for (i = 0; i < 8; i++)
        buf[header_len + (size_t)i] = (uint8_t)(sum >> (8 * i));
}

/* A small bloom filter (100 keys) serialized into buf; its size in *size. */
static int small_bloom_bytes(uint8_t *buf, size_t cap, uint64_t *size)
{
    amq_filter *f = small_bloom(100, 1);
    int ok = f != NULL && amq_filter_serialized_size(f, size) == AMQ_OK && *size <= cap &&
             amq_filter_serialize(f, buf, cap, NULL) == AMQ_OK;
    amq_filter_free(f);
    return ok;
}

/* The small bloom filter's bytes with n bytes at `at` replaced and the
 * header's checksum made valid again, deserialized with flags: the status
 * (a filter that loads is freed), or FORGE_UNBUILT - no status, so that no
 * check passes - when the filter could not be made. */
#define FORGE_UNBUILT 1000
static int forged(size_t at, const uint8_t *bytes, size_t n, unsigned flags, amq_errinfo *err)
{
    amq_filter *g = NULL;
    uint8_t buf[512];
    uint64_t size;
    int rc;
    memset(err, 0, sizeof *err); /* a message to read (empty) when nothing was deserialized */
    if (!small_bloom_bytes(buf, sizeof buf, &size))
        return FORGE_UNBUILT;
    memcpy(buf + at, bytes, n);
    forge(buf, 96);
    rc = amq_filter_deserialize(buf, (size_t)size, flags, NULL, &g, err);
    if (rc == AMQ_OK)
        amq_filter_free(g);
    return rc;
}

TEST(forged_header_version_2_refused_naming_the_version)
{
    amq_errinfo err;
    CHECK_STATUS(forged(8, (const uint8_t[]){2}, 1, 0, &err), AMQ_EVERSION); /* version 2 */
    CHECK(strstr(err.msg, "version 2") != NULL);
}

TEST(forged_header_unknown_kind_refused)
{
    amq_errinfo err;
    CHECK_STATUS(forged(10, (const uint8_t[]){99}, 1, 0, &err), AMQ_EKIND); /* unknown kind */
}

TEST(forged_header_unknown_hash_refused)
{
    amq_errinfo err;
    CHECK_STATUS(forged(12, (const uint8_t[]){77}, 1, 0, &err), AMQ_ECORRUPT); /* unknown hash */
}

TEST(forged_header_bit_count_not_matching_the_payload_refused_even_trusted)
{
    amq_errinfo err;
    /* bits 958 -> 768: the payload's size no longer matches */
    CHECK_STATUS(forged(64, (const uint8_t[]){0, 3}, 2, AMQ_OPEN_TRUST, &err), AMQ_ECORRUPT);
}

TEST(forged_header_zero_probes_refused_even_trusted)
{
    amq_errinfo err;
    /* zero probes */
    CHECK_STATUS(forged(72, (const uint8_t[]){0}, 1, AMQ_OPEN_TRUST, &err), AMQ_ECORRUPT);
}

TEST(forged_header_parameter_length_beyond_the_file_refused)
{
    amq_errinfo err;
    CHECK(forged(32, (const uint8_t[]){0xff, 0xff}, 2, 0, &err) < 0); /* parameter length */
}

TEST(forged_header_payload_length_beyond_the_file_refused)
{
    amq_errinfo err;
    /* the payload length 0xff000000000000ff */
    CHECK(forged(48, (const uint8_t[]){0xff, 0, 0, 0, 0, 0, 0, 0xff}, 8, 0, &err) < 0);
}

TEST(bloom_bits_set_past_m_refused_even_trusted)
{
    amq_filter *g;
    amq_errinfo err;
    uint8_t buf[512];
    uint64_t size;

    REQUIRE(small_bloom_bytes(buf, sizeof buf, &size));
    buf[size - 1] |= 0x80; /* a bit past m in the last word */
    CHECK_STATUS(amq_filter_deserialize(buf, (size_t)size, AMQ_OPEN_TRUST, NULL, &g, &err),
                 AMQ_ECORRUPT);
}

TEST(non_filter_bytes_refused_as_bad_magic)
{
    amq_filter *g;
    amq_errinfo err;

    CHECK_STATUS(amq_filter_deserialize("hello world, not a filter", 25, 0, NULL, &g, &err),
                 AMQ_EMAGIC);
}

TEST(open_errors_name_the_file)
{
    amq_filter *g;
    amq_errinfo err;
    const char *path = test_path("missing.amq");

    CHECK_STATUS(amq_filter_open(path, 0, NULL, &g, &err), AMQ_EIO);
    CHECK(strstr(err.msg, path) != NULL);
    CHECK_EQ(err.sys_errno, ENOENT);
    CHECK_STATUS(amq_filter_open(test_tmpdir(), 0, NULL, &g, &err), AMQ_EIO);
    REQUIRE(write_file(path, (const uint8_t *)"", 0) == 0);
    CHECK_STATUS(amq_filter_open(path, 0, NULL, &g, &err), AMQ_ETRUNC);
    CHECK(strstr(err.msg, path) != NULL);
}

TEST(merge_and_kind_checks)
{
    amq_filter *a = small_bloom(1000, 10), *b = small_bloom(1000, 0), *c = small_bloom(2000, 0);
    amq_errinfo err;
    uint32_t kind;

    REQUIRE(a && b && c);
    CHECK_EQ(amq_filter_add(b, "only-b", 6), 1);
    REQUIRE_OK(amq_filter_merge(a, b, &err));
    CHECK_EQ(amq_filter_contains(a, "only-b", 6), 1);
    CHECK_EQ(amq_filter_contains(a, "key-3", 5), 1);
    CHECK_STATUS(amq_filter_merge(a, c, &err), AMQ_EINCOMPAT);
    CHECK(strstr(err.msg, "bits") != NULL);
    CHECK_STATUS(amq_filter_remove(a, "key-3", 5), AMQ_EUNSUPPORTED);
    CHECK_STR(amq_kind_name(AMQ_KIND_BLOOM), "bloom");
    REQUIRE_OK(amq_kind_from_name("bloom", &kind));
    CHECK_EQ(kind, AMQ_KIND_BLOOM);
    CHECK_STATUS(amq_kind_from_name("nope", &kind), AMQ_EKIND);
    CHECK(amq_filter_bloom(a) != NULL);
    REQUIRE_OK(amq_filter_clear(a));
    CHECK_EQ(amq_filter_contains(a, "key-3", 5), 0);
    amq_filter_free(a);
    amq_filter_free(b);
    amq_filter_free(c);
}

TEST(bad_configs_are_refused)
{
    amq_config cfg;
    amq_filter *f;
    amq_errinfo err;

    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 0;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    CHECK(strstr(err.msg, "capacity") != NULL);
    cfg.capacity = 10;
    cfg.fpp = 1.5;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.fpp = NAN;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.fpp = 0.01;
    cfg.hash_algo = AMQ_HASH_MURMUR3;
    cfg.seed = UINT64_C(1) << 40;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_ERANGE);
    cfg.kind = 77;
    CHECK_STATUS(amq_filter_new(&cfg, &f, &err), AMQ_EKIND);
}

/* Allocation through the caller's hooks, and failure of each allocation. */
typedef struct counting {
    int calls, fail_at, live;
} counting;

static void *c_alloc(void *opaque, size_t size)
{
    counting *c = opaque;
    if (++c->calls == c->fail_at)
        return NULL;
    c->live++;
    return malloc(size);
}

static void c_free(void *opaque, void *ptr, size_t size)
{
    counting *c = opaque;
    (void)size;
    c->live--;
    free(ptr);
}

TEST(allocator_hooks_and_failures)
{
    counting c = {0, 0, 0};
    amq_allocator a = {c_alloc, c_free, &c, NULL};
    amq_config cfg;
    amq_filter *f;
    int n, rc;

    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 100000; /* big enough for the region path */
    cfg.alloc = &a;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    CHECK_GT(c.calls, 1);
    CHECK_EQ(amq_filter_add(f, "k", 1), 1);
    amq_filter_free(f);
    CHECK_EQ(c.live, 0);
    for (n = 1; n < 10; n++) {
        c.calls = 0;
        c.fail_at = n;
        rc = amq_filter_new(&cfg, &f, NULL);
        if (rc == AMQ_OK) {
            amq_filter_free(f);
            break;
        }
        CHECK_STATUS(rc, AMQ_ENOMEM);
        CHECK_EQ(c.live, 0);
    }
}

/* Only the kinds with a concurrent mode take it; a read-only filter refuses. */
TEST(set_concurrent_by_kind)
{
    static const uint32_t kinds[] = {AMQ_KIND_BLOOM, AMQ_KIND_BLOCKED, AMQ_KIND_PARTITIONED,
                                     AMQ_KIND_CUCKOO, AMQ_KIND_SCALABLE_BLOOM,
                                     AMQ_KIND_SCALABLE_CUCKOO, AMQ_KIND_QUOTIENT,
                                     AMQ_KIND_POCKET};
    static const int want[] = {AMQ_EUNSUPPORTED, AMQ_OK, AMQ_OK,
                               AMQ_EUNSUPPORTED, AMQ_EUNSUPPORTED, AMQ_EUNSUPPORTED,
                               AMQ_EUNSUPPORTED, AMQ_EUNSUPPORTED};
    amq_config cfg;
    amq_filter *f, *ro;
    uint8_t buf[1 << 16];
    uint64_t size;
    size_t i, written;

    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        amq_config_init(&cfg, kinds[i]);
        cfg.capacity = 1000;
        REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
        CHECK_STATUS(amq_filter_set_concurrent(f, 1), want[i]);
        if (want[i] == AMQ_OK) {
            CHECK_EQ(amq_filter_add(f, "k", 1), 1);
            CHECK_EQ(amq_filter_contains(f, "k", 1), 1);
            if (kinds[i] == AMQ_KIND_BLOCKED)
                CHECK_EQ(amq_blocked_is_concurrent(amq_filter_blocked(f)), 1);
            REQUIRE_OK(amq_filter_set_concurrent(f, 0));
            if (kinds[i] == AMQ_KIND_BLOCKED)
                CHECK_EQ(amq_blocked_is_concurrent(amq_filter_blocked(f)), 0);
        }
        REQUIRE_OK(amq_filter_serialized_size(f, &size));
        REQUIRE(size <= sizeof buf);
        REQUIRE_OK(amq_filter_serialize(f, buf, sizeof buf, &written));
        REQUIRE_OK(amq_filter_deserialize(buf, written, AMQ_OPEN_MMAP, NULL, &ro, NULL));
        CHECK_EQ(amq_filter_is_readonly(ro), 1);
        CHECK_STATUS(amq_filter_set_concurrent(ro, 1), AMQ_EREADONLY);
        amq_filter_free(ro);
        amq_filter_free(f);
    }
}

/* The Bloom kinds refuse mulshift (and vmulshift, mulmix) for a new filter,
 * up front (a builder too, before any key), saying why; the kinds that take
 * mulshift and mulmix keep the rate with counting keys, the keys a
 * universal hash is weakest on, and under mulmix with keys counting by
 * 8192 too. */
TEST(mulshift_refused_by_bloom_kinds_kept_by_the_others)
{
    static const uint32_t refused[] = {AMQ_KIND_BLOOM, AMQ_KIND_SCALABLE_BLOOM};
    static const uint32_t taken[] = {AMQ_KIND_BLOCKED, AMQ_KIND_PARTITIONED, AMQ_KIND_CUCKOO,
                                     AMQ_KIND_SCALABLE_CUCKOO, AMQ_KIND_AGING, AMQ_KIND_QUOTIENT,
                                     AMQ_KIND_POCKET};
    enum { N = 100000, Q = 400000 };
    amq_config c;
    amq_filter *f;
    amq_builder *b;
    amq_errinfo err;
    uint64_t k, i, fp;
    size_t j;

    for (j = 0; j < sizeof refused / sizeof refused[0]; j++) {
        amq_config_init(&c, refused[j]);
        c.hash_algo = AMQ_HASH_VMULSHIFT;
        CHECK_STATUS(amq_filter_new(&c, &f, &err), AMQ_EINVAL);
        CHECK(strstr(err.msg, "hash vmulshift") != NULL);
        c.hash_algo = AMQ_HASH_MULMIX;
        CHECK_STATUS(amq_filter_new(&c, &f, &err), AMQ_EINVAL);
        CHECK(strstr(err.msg, "hash mulmix") != NULL);
        c.hash_algo = AMQ_HASH_MULSHIFT;
        CHECK_STATUS(amq_filter_new(&c, &f, &err), AMQ_EINVAL);
        CHECK(strstr(err.msg, "hash mulshift") != NULL);
        if (refused[j] == AMQ_KIND_BLOOM) /* the builder makes no scalable kind */
            CHECK_STATUS(amq_builder_new(&c, NULL, 0, &b, &err), AMQ_EINVAL);
        c.hash_algo = AMQ_HASH_XXH3;
        REQUIRE_OK(amq_filter_new(&c, &f, NULL));
        amq_filter_free(f);
    }
    for (j = 0; j < 3 * (sizeof taken / sizeof taken[0]); j++) {
        /* mulshift counting by 1, mulmix by 1 and by 8192 */
        const uint64_t stride = j % 3 == 2 ? 8192 : 1;
        amq_config_init(&c, taken[j / 3]);
        c.hash_algo = j % 3 == 0 ? AMQ_HASH_MULSHIFT : AMQ_HASH_MULMIX;
        c.capacity = N;
        REQUIRE_OK(amq_filter_new(&c, &f, NULL));
        for (i = 0; i < N; i++) {
            k = i * stride;
            REQUIRE(amq_filter_add(f, &k, 8) >= 0);
        }
        for (i = 0; i < N; i++) {
            k = i * stride;
            CHECK_EQ(amq_filter_contains(f, &k, 8), 1);
        }
        for (i = 0, fp = 0; i < Q; i++) {
            k = (N + i) * stride;
            fp += (uint64_t)amq_filter_contains(f, &k, 8);
        }
        if (!((double)fp / Q <= c.fpp * 1.15))
            FAIL_AT_("kind %u, hash %u, stride %" PRIu64 ": rate %g over %g", c.kind, c.hash_algo,
                     stride, (double)fp / Q, c.fpp * 1.15);
        amq_filter_free(f);
    }
}

/* Which kinds the tool and Python refuse to fill past capacity. */
TEST(kind_has_capacity_only_for_sized_kinds)
{
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_BLOOM), 1);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_BLOCKED), 1);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_PARTITIONED), 1);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_CUCKOO), 1);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_SCALABLE_BLOOM), 0);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_SCALABLE_CUCKOO), 0);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_AGING), 0);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_EXPANDABLE), 0);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_QUOTIENT), 0);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_POCKET), 0);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_FUSE), 0);
    CHECK_EQ(amq_kind_has_capacity(AMQ_KIND_RIBBON), 0);
    CHECK_EQ(amq_kind_has_capacity(0), 0);
}

TEST(kind_predicates)
{
    uint32_t id;
    for (id = 0; id <= 14; id++) {
        int copies = id == AMQ_KIND_CUCKOO || id == AMQ_KIND_SCALABLE_CUCKOO ||
                     id == AMQ_KIND_EXPANDABLE;
        CHECK_EQ(amq_kind_keeps_copies(id),
                 copies || id == AMQ_KIND_QUOTIENT || id == AMQ_KIND_POCKET);
        CHECK_EQ(amq_kind_can_remove(id), copies);
        CHECK_EQ(amq_kind_updates_in_place(id), id == AMQ_KIND_BLOOM || id == AMQ_KIND_BLOCKED);
        CHECK_EQ(amq_kind_has_redisbloom_mode(id),
                 id == AMQ_KIND_SCALABLE_BLOOM || id == AMQ_KIND_SCALABLE_CUCKOO);
        CHECK_EQ(amq_kind_is_bit_array(id),
                 id == AMQ_KIND_BLOOM || id == AMQ_KIND_BLOCKED || id == AMQ_KIND_PARTITIONED);
        CHECK_EQ(amq_kind_puts_off_growth(id), id == AMQ_KIND_POCKET);
    }
}

/* The counts that read no bit array say what the stats say, for every kind that takes
 * adds; the set add stores a key once in a kind that keeps copies. */
TEST(counts_and_set_adds_on_the_handle)
{
    uint32_t id;
    int kinds = 0;

    for (id = 1; id <= 255; id++) {
        amq_config cfg;
        amq_filter *f = NULL;
        amq_stats st;
        uint64_t items, capacity;
        char key[32];
        int i, n, rc;

        if (amq_kind_name(id) == NULL || amq_kind_is_static(id))
            continue;
        amq_config_init(&cfg, id);
        cfg.capacity = 4000;
        REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
        kinds++;
        for (i = 0; i < 1000; i++) {
            n = snprintf(key, sizeof key, "k%d", i);
            REQUIRE(amq_filter_add(f, key, (size_t)n) >= 0);
        }
        amq_filter_counts(f, &items, &capacity);
        amq_filter_stats(f, &st);
        CHECK_EQ(items, st.items);
        CHECK_EQ(capacity, st.capacity);
        /* a key already in: stored again only by the plain add of a kind keeping copies */
        rc = amq_filter_add_unique(f, "k7", 2);
        if (amq_kind_keeps_copies(id))
            CHECK_EQ(rc, 0);
        else
            CHECK(rc >= 0);
        amq_filter_counts(f, &items, &capacity);
        if (amq_kind_keeps_copies(id)) {
            CHECK_EQ(items, 1000);
            CHECK_EQ(amq_filter_add_unique(f, "new key", 7), 1);
            CHECK_EQ(amq_filter_add_unique(f, "new key", 7), 0);
            CHECK_EQ(amq_filter_add_unique_hash(f, amq_filter_hash(f, "new key", 7)), 0);
            if (amq_kind_can_remove(id)) {
                CHECK_EQ(amq_filter_remove(f, "new key", 7), 1);
                CHECK_EQ(amq_filter_contains(f, "new key", 7), 0);
            }
        }
        amq_filter_free(f);
    }
    CHECK_EQ(kinds, 10); /* bloom, blocked, partitioned, cuckoo, scalable x2, aging, expandable,
                          * quotient, pocket */
}

/* Equality ignores counts and the order of adds; the subset test compares the
 * bits of two filters of one bit-array kind and geometry and refuses others. */
TEST(equal_and_subset_on_the_handle)
{
    static const uint32_t bit_kinds[] = {AMQ_KIND_BLOOM, AMQ_KIND_BLOCKED, AMQ_KIND_PARTITIONED};
    amq_errinfo err;
    size_t j;

    for (j = 0; j < sizeof bit_kinds / sizeof bit_kinds[0]; j++) {
        amq_config cfg;
        amq_filter *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        uint64_t items, capacity;
        char key[32];
        int i, n;

        amq_config_init(&cfg, bit_kinds[j]);
        cfg.capacity = 20000;
        REQUIRE_OK(amq_filter_new(&cfg, &a, NULL));
        REQUIRE_OK(amq_filter_new(&cfg, &b, NULL));
        /* the same 5,000 keys in opposite orders */
        for (i = 0; i < 5000; i++) {
            n = snprintf(key, sizeof key, "k%d", i);
            REQUIRE(amq_filter_add(a, key, (size_t)n) >= 0);
            n = snprintf(key, sizeof key, "k%d", 4999 - i);
            REQUIRE(amq_filter_add(b, key, (size_t)n) >= 0);
        }
        CHECK_EQ(amq_filter_equal(a, b), 1);
        CHECK_EQ(amq_filter_is_subset(a, b, NULL), 1);
        /* the same bits under another count (a union's count is an estimate) */
        REQUIRE_OK(amq_filter_new(&cfg, &c, NULL));
        REQUIRE_OK(amq_filter_new(&cfg, &d, NULL));
        for (i = 0; i < 5000; i++) {
            n = snprintf(key, sizeof key, "k%d", i);
            REQUIRE(amq_filter_add(i < 2500 ? c : d, key, (size_t)n) >= 0);
        }
        REQUIRE_OK(amq_filter_merge(c, d, NULL));
        amq_filter_free(d);
        amq_filter_counts(c, &items, &capacity);
        CHECK(items != 5000);
        CHECK_EQ(amq_filter_equal(a, c), 1);
        amq_filter_free(c);
        CHECK_EQ(amq_filter_add(b, "one more", 8) >= 0, 1);
        CHECK_EQ(amq_filter_equal(a, b), 0);
        CHECK_EQ(amq_filter_is_subset(a, b, NULL), 1);
        CHECK_EQ(amq_filter_is_subset(b, a, NULL), 0);
        CHECK_EQ(amq_filter_is_subset(a, a, NULL), 1);
        /* another geometry: refused, not answered */
        cfg.capacity = 40000;
        REQUIRE_OK(amq_filter_new(&cfg, &c, NULL));
        memset(&err, 0, sizeof err);
        CHECK_EQ(amq_filter_is_subset(c, a, &err), AMQ_EINCOMPAT);
        CHECK(strstr(err.msg, "geometry") != NULL);
        CHECK_EQ(amq_filter_equal(c, a), 0);
        /* another seed */
        cfg.capacity = 20000;
        cfg.seed = 7;
        REQUIRE_OK(amq_filter_new(&cfg, &d, NULL));
        CHECK_EQ(amq_filter_is_subset(d, a, NULL), AMQ_EINCOMPAT);
        amq_filter_free(c);
        amq_filter_free(d);
        /* another kind */
        amq_config_init(&cfg, AMQ_KIND_CUCKOO);
        cfg.capacity = 20000;
        REQUIRE_OK(amq_filter_new(&cfg, &c, NULL));
        memset(&err, 0, sizeof err);
        CHECK_EQ(amq_filter_is_subset(a, c, &err), AMQ_EINCOMPAT);
        CHECK_EQ(amq_filter_is_subset(c, a, &err), AMQ_EUNSUPPORTED);
        CHECK(strstr(err.msg, "cuckoo") != NULL);
        CHECK_EQ(amq_filter_equal(a, c), 0);
        amq_filter_free(c);
        amq_filter_free(a);
        amq_filter_free(b);
    }
}

TEST_MAIN()
