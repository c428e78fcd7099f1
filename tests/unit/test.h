/*
 * test.h - a small test harness.
 *
 * TEST(name) defines a test; main() comes from TEST_MAIN().  CHECK* macros
 * print both operands and the location on failure and mark the test
 * failed; REQUIRE* also return from the test.  Side effects never go inside
 * assert(): the expressions are evaluated exactly once.
 *
 * Environment: AMQ_TEST_FILTER=substring runs matching tests only;
 * AMQ_SLOW_TESTS=0 skips tests marked slow (the sanitizer run does);
 * AMQ_TEST_SMALL=1 takes the sanitizer run's sizes (SMALL_RUN below).
 */
#ifndef AMQ_TEST_H
#define AMQ_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 in an AddressSanitizer build (gcc's macro, clang's feature): tests whose
 * sizes only cost time run smaller there, at their full sizes in the plain run. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_SAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_SAN 1
#endif
#endif
#ifndef UNDER_SAN
#define UNDER_SAN 0
#endif

/* 1 where tests whose sizes only cost time run small: under the sanitizers, and in make
 * test-unit's reruns of a program on a path other than the CPU's best (AMQ_TEST_SMALL=1),
 * which prove that path at the sanitizer run's sizes; the plain run takes the full ones. */
int test_small(void);
#define SMALL_RUN (UNDER_SAN || test_small())

typedef struct test_case {
    const char *name;
    void (*fn)(void);
    int slow;
} test_case;

extern int test_failed;
void test_register(const char *name, void (*fn)(void), int slow);
int test_main(int argc, char **argv);
int test_slow_enabled(void);
/* Records and prints that a part of the current test did not run here (a SIMD path
 * this CPU lacks, say); the summary line counts them. */
void test_skip(const char *what);
/* A temporary directory for this test program, created on first use. */
const char *test_tmpdir(void);
/* Path inside test_tmpdir (static buffer rotation of 8). */
const char *test_path(const char *name);
/* A filter's serialized bytes (malloc'd; *len their length when len is not NULL), or NULL. */
struct amq_filter;
uint8_t *test_serialized(const struct amq_filter *f, size_t *len);
/* An in-place add to the file at path, by add(f, from, to) in a child killed after it wrote
 * and fsync'd its journal at jpath and before it touched the file (AMQ_TEST_JOURNAL_DELAY):
 * 0, or -1 when that state was not reached. */
int test_cut_short_inplace_add(const char *path, const char *jpath,
                               void (*add)(struct amq_filter *, unsigned, unsigned),
                               unsigned from, unsigned to);

/* A file's bytes (malloc'd, *len their length), or NULL when it cannot be read or is empty. */
uint8_t *test_read_file(const char *path, size_t *len);
/* Writes path's bytes (over the same inode when it exists): 0, or -1. */
int test_write_file(const char *path, const uint8_t *buf, size_t len);
/* Keys i = from .. to - 1, each its 4 bytes: added (stopping at the first refusal), or the
 * count of those present. */
void test_add_u32_keys(struct amq_filter *f, unsigned from, unsigned to);
unsigned test_count_u32_keys(const struct amq_filter *f, unsigned from, unsigned to);
/* Streams of 8-byte random keys: key i of stream seed, its hash under f; keys [from, to)
 * added by hash (the first add that does not return 1, or 1); those f answers absent by hash
 * or by key (0: no false negative); how many of the first n f answers present. */
uint64_t test_stream_key(uint64_t i, uint64_t seed);
struct amq_hash128 test_stream_hash(const struct amq_filter *f, uint64_t i, uint64_t seed);
int test_stream_add(struct amq_filter *f, uint64_t from, uint64_t to, uint64_t seed);
uint64_t test_stream_missing(const struct amq_filter *f, uint64_t from, uint64_t to,
                             uint64_t seed);
uint64_t test_stream_hits(const struct amq_filter *f, uint64_t n, uint64_t seed);
/* A field of amq_filter_describe: UINT64_MAX / NaN when the filter does not list it once. */
uint64_t test_field_u64(const struct amq_filter *f, const char *name);
double test_field_f64(const struct amq_filter *f, const char *name);

#define TEST_(name, slow)                                                   \
    static void test_##name(void);                                          \
    __attribute__((constructor)) static void test_register_##name(void)     \
    {                                                                       \
        test_register(#name, test_##name, slow);                            \
    }                                                                       \
    static void test_##name(void)

#define TEST(name) TEST_(name, 0)
#define SLOW_TEST(name) TEST_(name, 1)
#define TEST_MAIN() \
    int main(int argc, char **argv) { return test_main(argc, argv); }

#define FAIL_AT_(...)                                            \
    do {                                                         \
        fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__);   \
        fprintf(stderr, __VA_ARGS__);                            \
        fputc('\n', stderr);                                     \
        test_failed = 1;                                         \
    } while (0)

#define CHECK(cond)                                    \
    do {                                               \
        if (!(cond))                                   \
            FAIL_AT_("CHECK(%s) is false", #cond);     \
    } while (0)

#define REQUIRE(cond)                                  \
    do {                                               \
        if (!(cond)) {                                 \
            FAIL_AT_("REQUIRE(%s) is false", #cond);   \
            return;                                    \
        }                                              \
    } while (0)

#define CHECK_OP_(a, op, b, fmt, type, ret)                                      \
    do {                                                                         \
        type a_ = (type)(a), b_ = (type)(b);                                     \
        if (!(a_ op b_)) {                                                       \
            FAIL_AT_("%s %s %s: " fmt " vs " fmt, #a, #op, #b, a_, b_);          \
            if (ret)                                                             \
                return;                                                          \
        }                                                                        \
    } while (0)

#define CHECK_EQ(a, b) CHECK_OP_(a, ==, b, "%" PRId64, int64_t, 0)
#define CHECK_NE(a, b) CHECK_OP_(a, !=, b, "%" PRId64, int64_t, 0)
#define CHECK_LT(a, b) CHECK_OP_(a, <, b, "%" PRId64, int64_t, 0)
#define CHECK_LE(a, b) CHECK_OP_(a, <=, b, "%" PRId64, int64_t, 0)
#define CHECK_GE(a, b) CHECK_OP_(a, >=, b, "%" PRId64, int64_t, 0)
#define CHECK_GT(a, b) CHECK_OP_(a, >, b, "%" PRId64, int64_t, 0)
#define CHECK_EQ_U64(a, b) CHECK_OP_(a, ==, b, "0x%016" PRIx64, uint64_t, 0)
#define CHECK_EQ_U32(a, b) CHECK_OP_(a, ==, b, "0x%08" PRIx32, uint32_t, 0)
#define CHECK_EQ_DBL(a, b) CHECK_OP_(a, ==, b, "%.17g", double, 0)
#define CHECK_LE_DBL(a, b) CHECK_OP_(a, <=, b, "%.17g", double, 0)
#define CHECK_GE_DBL(a, b) CHECK_OP_(a, >=, b, "%.17g", double, 0)
#define REQUIRE_EQ(a, b) CHECK_OP_(a, ==, b, "%" PRId64, int64_t, 1)
/* A status is AMQ_OK; prints its name otherwise. */
#define REQUIRE_OK(expr)                                                       \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != 0) {                                                        \
            FAIL_AT_("%s returned %d (%s)", #expr, rc_, amq_strerror(rc_));    \
            return;                                                            \
        }                                                                      \
    } while (0)
#define CHECK_STATUS(expr, want)                                                \
    do {                                                                        \
        int rc_ = (expr), want_ = (want);                                       \
        if (rc_ != want_)                                                       \
            FAIL_AT_("%s returned %d (%s), expected %d (%s)", #expr, rc_,       \
                     amq_strerror(rc_), want_, amq_strerror(want_));            \
    } while (0)
#define CHECK_STR(a, b)                                                        \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                   \
            FAIL_AT_("%s == %s: \"%s\" vs \"%s\"", #a, #b, a_ ? a_ : "(null)", \
                     b_ ? b_ : "(null)");                                      \
    } while (0)
/* |a - b| <= tol * |b| */
#define CHECK_NEAR_REL(a, b, tol)                                                  \
    do {                                                                           \
        double a_ = (a), b_ = (b), t_ = (tol);                                     \
        if (!(fabs(a_ - b_) <= t_ * fabs(b_)))                                     \
            FAIL_AT_("%s ~ %s within %g: %.6g vs %.6g", #a, #b, t_, a_, b_);        \
    } while (0)

/* splitmix64: the tests' fixed-seed PRNG. */
static inline uint64_t test_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

#endif /* AMQ_TEST_H */
