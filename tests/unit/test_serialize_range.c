/*
 * test_serialize_range.c - a filter's serialized bytes piece by piece
 * (amq_filter_serialize_range) and a header read before the rest
 * (amq_filter_peek): what the Redis module's RDB, AOF, SCANDUMP and
 * LOADCHUNK are made of.
 */
#include <string.h>

#include "amq.h"
#include "test.h"

static amq_filter *make(uint32_t kind)
{
    amq_config cfg;
    amq_filter *f = NULL;
    char key[32];
    int i, len;

    amq_config_init(&cfg, kind);
    cfg.capacity = 3000;
    if (amq_kind_is_static(kind)) {
        amq_hash128 h[2000];
        for (i = 0; i < 2000; i++) {
            len = snprintf(key, sizeof key, "key-%d", i);
            h[i] = amq_hash_key(cfg.hash_algo, cfg.seed, key, (size_t)len);
        }
        if (amq_filter_build(&cfg, h, 2000, &f, NULL) != AMQ_OK)
            return NULL;
        return f;
    }
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
        return NULL;
    for (i = 0; i < 2000; i++) {
        len = snprintf(key, sizeof key, "key-%d", i);
        amq_filter_add(f, key, (size_t)len);
    }
    return f;
}

static const uint32_t kinds[] = {AMQ_KIND_BLOOM,           AMQ_KIND_BLOCKED,
                                 AMQ_KIND_PARTITIONED,     AMQ_KIND_CUCKOO,
                                 AMQ_KIND_SCALABLE_BLOOM,  AMQ_KIND_SCALABLE_CUCKOO,
                                 AMQ_KIND_FUSE,            AMQ_KIND_RIBBON,
                                 AMQ_KIND_AGING,           AMQ_KIND_EXPANDABLE,
                                 AMQ_KIND_QUOTIENT,        AMQ_KIND_POCKET};

/* Pieces of any size, concatenated, are the serialized bytes exactly. */
TEST(ranges_concatenate_to_the_serialized_bytes_for_every_kind)
{
    static const size_t steps[] = {1, 7, 64, 100, 4096, 65537, 1 << 20};
    size_t i, j;

    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        amq_filter *f = make(kinds[i]);
        uint8_t *want, *got;
        uint64_t size, off;
        size_t n;

        REQUIRE(f != NULL);
        REQUIRE_OK(amq_filter_serialized_size(f, &size));
        want = malloc((size_t)size);
        got = malloc((size_t)size + 1);
        REQUIRE(want != NULL && got != NULL);
        REQUIRE_OK(amq_filter_serialize(f, want, (size_t)size, NULL));
        for (j = 0; j < sizeof steps / sizeof steps[0]; j++) {
            memset(got, 0xA5, (size_t)size + 1);
            for (off = 0; off < size; off += n) {
                REQUIRE_OK(amq_filter_serialize_range(f, off, got + off, steps[j], &n));
                REQUIRE(n > 0);
                CHECK_LE(n, steps[j]);
            }
            CHECK_EQ_U64(off, size);
            CHECK(memcmp(want, got, (size_t)size) == 0);
            CHECK_EQ(got[size], 0xA5); /* nothing past the end */
        }
        /* at the end: nothing; past it: an error */
        REQUIRE_OK(amq_filter_serialize_range(f, size, got, 10, &n));
        CHECK_EQ(n, 0);
        CHECK_STATUS(amq_filter_serialize_range(f, size + 1, got, 10, &n), AMQ_ERANGE);
        free(want);
        free(got);
        amq_filter_free(f);
    }
}

/* The header is known from its own bytes; short, forged or foreign ones are
 * refused before the size they declare is believed. */
TEST(peek_reads_the_size_from_the_header_alone)
{
    amq_filter *f = make(AMQ_KIND_CUCKOO), *g = NULL;
    amq_errinfo err;
    uint8_t *buf;
    uint64_t size, got, hdr;
    uint32_t kind = 0;

    REQUIRE(f != NULL);
    REQUIRE_OK(amq_filter_serialized_size(f, &size));
    buf = malloc((size_t)size);
    REQUIRE(buf != NULL);
    REQUIRE_OK(amq_filter_serialize(f, buf, (size_t)size, NULL));
    REQUIRE_OK(amq_filter_peek(buf, (size_t)size, &got, &kind, &err));
    CHECK_EQ_U64(got, size);
    CHECK_EQ(kind, AMQ_KIND_CUCKOO);
    /* the header area alone is enough */
    hdr = buf[40] | (uint64_t)buf[41] << 8;
    REQUIRE_OK(amq_filter_peek(buf, (size_t)hdr, &got, NULL, &err));
    CHECK_EQ_U64(got, size);
    /* short: the header area's length */
    CHECK_STATUS(amq_filter_peek(buf, (size_t)hdr - 1, &got, NULL, &err), AMQ_ETRUNC);
    CHECK_EQ_U64(got, hdr);
    CHECK_STATUS(amq_filter_peek(buf, 10, &got, NULL, &err), AMQ_ETRUNC);
    CHECK_EQ_U64(got, 64);
    CHECK_STATUS(amq_filter_peek("\x89" "AMX", 4, &got, NULL, &err), AMQ_EMAGIC);
    /* a forged payload length: the header checksum catches it */
    buf[55] ^= 0x40;
    CHECK_STATUS(amq_filter_peek(buf, (size_t)size, &got, NULL, &err), AMQ_ECHECKSUM);
    CHECK(strstr(err.msg, "checksum") != NULL);
    buf[55] ^= 0x40;
    /* the payload is not peek's business */
    buf[size - 1] ^= 1;
    REQUIRE_OK(amq_filter_peek(buf, (size_t)size, &got, NULL, &err));
    CHECK_STATUS(amq_filter_deserialize(buf, (size_t)size, 0, NULL, &g, &err), AMQ_ECHECKSUM);
    CHECK(g == NULL);
    free(buf);
    amq_filter_free(f);
}

TEST_MAIN()
