/*
 * test_fuse_view.c - amq/fuse_view.h: the inline XXH3 of 8- and 16-byte
 * keys against libxxhash (through amq_hash_key), and the view's answers
 * against amq_filter_contains for every shape a fuse filter takes: one
 * partition taking x = h1, several, partitions that mix (a derivation-0
 * file), other hashes and seeds, 8-, 16- and other-length keys.
 */
#include <stdlib.h>
#include <string.h>

#include "amq.h"
#include "test.h"

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static int retries_field(void *ctx, const amq_field *fl)
{
    if (strcmp(fl->name, "retries") == 0)
        *(uint64_t *)ctx = fl->u64;
    return 0;
}

/* Constructions that failed before the filter's partitions were built. */
static uint64_t retries(const amq_filter *f)
{
    uint64_t r = UINT64_MAX;
    amq_filter_describe(f, retries_field, &r);
    return r;
}

TEST(fuse_view_xxh3_matches_libxxhash)
{
    uint64_t seed = 41, w[2];
    size_t i, bad8 = 0, bad16 = 0;
    for (i = 0; i < 200000; i++) {
        w[0] = splitmix(&seed);
        w[1] = i % 3 == 0 ? 0 : splitmix(&seed); /* some all-zero halves */
        bad8 += amq_fuse_view_xxh3_8(w) != amq_hash_key(AMQ_HASH_XXH3, 0, w, 8).h1;
        bad16 += amq_fuse_view_xxh3_16(w) != amq_hash_key(AMQ_HASH_XXH3, 0, w, 16).h1;
    }
    CHECK_EQ(bad8, 0);
    CHECK_EQ(bad16, 0);
    /* a vector: XXH3-128 of 8 and 16 zero bytes, seed 0, low half */
    memset(w, 0, sizeof w);
    CHECK_EQ_U64(amq_fuse_view_xxh3_8(w), amq_hash_key(AMQ_HASH_XXH3, 0, w, 8).h1);
    CHECK_EQ_U64(amq_fuse_view_xxh3_16(w), amq_hash_key(AMQ_HASH_XXH3, 0, w, 16).h1);
}

/* mulshift and vmulshift seed 0 (the fuse kind's defaults, before and
 * now): the inline h1 of 8- and 16-byte keys is amq_hash_key's, and
 * mulshift's inner XXH3-64 libxxhash's. */
TEST(fuse_view_mulshift_matches_the_library)
{
    uint64_t seed = 44, w[2];
    size_t i, bad8 = 0, bad16 = 0, bad64 = 0;
    for (i = 0; i < 200000; i++) {
        w[0] = i % 5 == 0 ? i : splitmix(&seed); /* small integers too */
        w[1] = i % 3 == 0 ? 0 : splitmix(&seed);
        bad8 += amq_fuse_view_ms0_8(w) != amq_hash_key(AMQ_HASH_MULSHIFT, 0, w, 8).h1;
        bad16 += amq_fuse_view_ms0_16(w) != amq_hash_key(AMQ_HASH_MULSHIFT, 0, w, 16).h1;
        bad16 += amq_fuse_view_vms0_16(w) != amq_hash_key(AMQ_HASH_VMULSHIFT, 0, w, 16).h1;
        bad8 += amq_fuse_view_ms0_8(w) != amq_hash_key(AMQ_HASH_VMULSHIFT, 0, w, 8).h1;
        bad64 += amq_fuse_view_xxh3_64_16(w) != amq_xxh3_64(w, 16, 0);
    }
    CHECK_EQ(bad8, 0);
    CHECK_EQ(bad16, 0);
    CHECK_EQ(bad64, 0);
    /* vectors: the key 0 gives b's high word; XXH3-64 of 16 zero bytes, seed 0, as
     * libxxhash 0.8 gives it */
    memset(w, 0, sizeof w);
    CHECK_EQ_U64(amq_fuse_view_ms0_8(w), UINT64_C(0x06c45d188009454f));
    CHECK_EQ_U64(amq_fuse_view_xxh3_64_16(w), UINT64_C(0xd0a66a65c7528968));
    CHECK_EQ_U64(amq_fuse_view_vms0_16(w), UINT64_C(0x06c45d188009454f));
    memcpy(w, "sixteen byte key", 16); /* test_hash.c's vector */
    CHECK_EQ_U64(amq_fuse_view_vms0_16(w), UINT64_C(0x6950c098ba268f54));
}

/* The query with constants, as a caller's switch outside its loop has it. */
#define AS_LEN(B, A, P)                                                                           \
    (len == 8    ? amq_fuse_view_contains_as(v, key, 8, B, A, P)                                  \
     : len == 16 ? amq_fuse_view_contains_as(v, key, 16, B, A, P)                                 \
                 : amq_fuse_view_contains_as(v, key, len, B, A, P))
#define AS_PLAIN(B, A)                                                                            \
    (v->plain && v->vms0      ? AS_LEN(B, A, AMQ_FUSE_VIEW_PLAIN | AMQ_FUSE_VIEW_VMS)           \
     : v->plain && v->ms0     ? AS_LEN(B, A, AMQ_FUSE_VIEW_PLAIN | AMQ_FUSE_VIEW_MS)            \
     : v->plain               ? AS_LEN(B, A, AMQ_FUSE_VIEW_PLAIN)                               \
     : v->strided && v->vms0 ? AS_LEN(B, A, AMQ_FUSE_VIEW_STRIDED | AMQ_FUSE_VIEW_VMS)         \
     : v->strided && v->ms0  ? AS_LEN(B, A, AMQ_FUSE_VIEW_STRIDED | AMQ_FUSE_VIEW_MS)          \
     : v->strided            ? AS_LEN(B, A, AMQ_FUSE_VIEW_STRIDED)                              \
                             : AS_LEN(B, A, AMQ_FUSE_VIEW_TABLE))

static int view_as(const amq_fuse_view *v, const void *key, size_t len)
{
    if (v->bits == 8)
        return v->arity == 3 ? AS_PLAIN(8, 3) : AS_PLAIN(8, 4);
    return v->arity == 3 ? AS_PLAIN(16, 3) : AS_PLAIN(16, 4);
}

/* Every form of the view's query answers as amq_filter_contains for n keys
 * of len bytes from seed (present) and as many others (absent). */
static void check_view(const amq_filter *f, size_t n, size_t len, uint64_t seed)
{
    amq_fuse_view v;
    uint8_t key[64];
    size_t i, j, miss = 0, differ = 0, pos = 0;
    int want;

    REQUIRE_OK(amq_fuse_view_get(f, &v));
    for (i = 0; i < 2 * n; i++) {
        for (j = 0; j < len; j++)
            key[j] = (uint8_t)splitmix(&seed);
        want = amq_filter_contains(f, key, len);
        if (i < n)
            miss += want != 1;
        else
            pos += (size_t)want;
        differ += amq_fuse_view_contains(&v, key, len) != want;
        differ += amq_fuse_view_contains_h1(&v, amq_filter_hash(f, key, len).h1) != want;
        differ += view_as(&v, key, len) != want;
        differ += amq_fuse_view_h1(&v, key, len) != amq_filter_hash(f, key, len).h1;
    }
    if (miss != 0 || differ != 0)
        FAIL_AT_("%zu keys of %zu bytes (bits %u, arity %u, pbits %u, plain %u): %zu false "
                 "negatives, %zu answers differ", n, len, v.bits, v.arity, v.pbits, v.plain, miss,
                 differ);
    CHECK(pos < n / 100 + 20); /* at most 2^-8 of the absent keys, and room */
}

static amq_filter *build_keys(unsigned bits, unsigned arity, uint32_t hash, uint64_t hseed,
                              uint32_t partitions, size_t n, size_t len, uint64_t seed)
{
    amq_config cfg;
    amq_builder *b;
    amq_filter *f = NULL;
    uint8_t key[64];
    size_t i, j;

    amq_config_init(&cfg, AMQ_KIND_FUSE);
    cfg.fingerprint_bits = bits;
    cfg.arity = arity;
    cfg.hash_algo = hash;
    cfg.seed = hseed;
    cfg.partitions = partitions;
    if (amq_builder_new(&cfg, NULL, SIZE_MAX, &b, NULL) != AMQ_OK)
        return NULL;
    for (i = 0; i < n; i++) {
        for (j = 0; j < len; j++)
            key[j] = (uint8_t)splitmix(&seed);
        if (amq_builder_add(b, key, len) != AMQ_OK)
            goto done;
    }
    if (amq_builder_finish(b, &f, NULL) != AMQ_OK)
        f = NULL;
done:
    amq_builder_free(b);
    return f;
}

TEST(fuse_view_answers_as_the_handle)
{
    static const size_t lens[] = {8, 16, 5, 20};
    static const struct { uint32_t hash; uint64_t seed; uint32_t parts; } shapes[] = {
        {AMQ_HASH_XXH3, 0, 0},     /* one partition, x = h1: plain */
        {AMQ_HASH_XXH3, 0, 8},     /* eight partitions, x = h1 below their bits */
        {AMQ_HASH_XXH3, 7, 0},     /* another seed: h1 through amq_filter_hash */
        {AMQ_HASH_MURMUR3, 0, 4},  /* another hash: every partition mixes */
        {AMQ_HASH_MULSHIFT, 0, 0}, /* the default before: plain, mulshift inline */
        {AMQ_HASH_MULSHIFT, 0, 8}, /* strided */
        {AMQ_HASH_MULSHIFT, 9, 0}, /* another seed */
        {AMQ_HASH_VMULSHIFT, 0, 0}, /* the default: plain, vmulshift inline */
        {AMQ_HASH_VMULSHIFT, 0, 8}, /* strided */
        {AMQ_HASH_VMULSHIFT, 9, 0}, /* another seed */
    };
    unsigned bits, arity, strided = 0;
    size_t s, l, n = 20000;
    for (bits = 8; bits <= 16; bits += 8)
        for (arity = 3; arity <= 4; arity++)
            for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                    uint64_t seed = 1000 * s + 10 * l + bits + arity;
                    amq_filter *f = build_keys(bits, arity, shapes[s].hash, shapes[s].seed,
                                               shapes[s].parts, n, lens[l], seed);
                    amq_fuse_view v;
                    REQUIRE(f != NULL);
                    REQUIRE_OK(amq_fuse_view_get(f, &v));
                    CHECK_EQ(v.plain, s == 0 || s == 4 || s == 7);
                    CHECK_EQ(v.ms0, s == 4 || s == 5);
                    CHECK_EQ(v.vms0, s == 7 || s == 8);
                    /* eight partitions sized alike and gathered: strided,
                     * unless one's first construction failed (it mixes) */
                    CHECK_EQ(v.strided, (s == 1 || s == 5 || s == 8) && retries(f) == 0);
                    CHECK_EQ_U64(v.stride,
                                 v.strided ? (uint64_t)(v.parts[1].data - v.parts[0].data) : 0);
                    strided += v.strided;
                    CHECK_EQ(v.pbits, s == 1 || s == 5 || s == 8 ? 3 : s == 3 ? 2 : 0);
                    check_view(f, n, lens[l], seed);
                    amq_filter_free(f);
                }
    CHECK(strided >= 24); /* of 48: the strided query was tested */
}

/* Another kind has no view (the partition that mixes, of a derivation-0
 * file, is in test_static.c beside that file). */
TEST(fuse_view_refuses_other_kinds)
{
    amq_config cfg;
    amq_filter *f;
    amq_fuse_view v;

    amq_config_init(&cfg, AMQ_KIND_BLOCKED);
    cfg.capacity = 100;
    REQUIRE_OK(amq_filter_new(&cfg, &f, NULL));
    memset(&v, 0xab, sizeof v);
    CHECK_EQ(amq_fuse_view_get(f, &v), AMQ_EKIND);
    CHECK_EQ(v.bits, 0xabababab); /* untouched */
    amq_filter_free(f);
}

TEST_MAIN()
