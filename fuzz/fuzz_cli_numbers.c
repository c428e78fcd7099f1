/*
 * fuzz_cli_numbers.c - the amq tool's number parsers (cli/util.c):
 * cli_parse_count, cli_parse_real, cli_parse_uint, cli_parse_u64.
 *
 * Input: u8 selector, u64 lo, u64 hi (for cli_parse_uint), then the string
 * (up to the first NUL).  Properties: a refusal prints one message naming
 * the option; an acceptance prints nothing and
 *  - count / u64: the string has no sign and no leading space (a negative
 *    number never becomes a huge count); digits alone parse exactly as
 *    the decimal number they spell (no octal surprise for 010);
 *  - real: the value is finite;
 *  - uint: the value is within [lo, hi].
 */
#include <ctype.h>

#include "cli_capture.h"

#include "../cli/util.c"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_cli_init();
    return 0;
}

static int all_digits(const char *s)
{
    if (*s == '\0')
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static void check_message(int rc, const char *opt)
{
    const char *msg = fz_err_text();
    if (rc == 0) {
        FZ_CHECK(msg[0] == '\0', "accepted, yet printed: %s", msg);
    } else {
        FZ_CHECK(rc == -1, "returned %d", rc);
        FZ_CHECK(strncmp(msg, "amq: ", 5) == 0 && strstr(msg, opt) != NULL,
                 "a refusal without a message naming %s: '%s'", opt, msg);
    }
}

static void check_unsigned_syntax(const char *s)
{
    FZ_CHECK(s[0] != '-' && s[0] != '+' && !isspace((unsigned char)s[0]),
             "accepted '%s' (leading sign or space)", s);
}

/* count / u64: s parsed by the option opt gave rc and v. */
static void check_count(int rc, const char *opt, const char *s, uint64_t v)
{
    check_message(rc, opt);
    if (rc == 0) {
        check_unsigned_syntax(s);
        if (all_digits(s))
            FZ_CHECK(v == strtoull(s, NULL, 10), "'%s' gave %llu", s, (unsigned long long)v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    unsigned sel = fz_u8(&in) % 4u;
    uint64_t lo = fz_u64(&in), hi = fz_u64(&in), v = 0;
    double d = 0.0;
    char *s;
    int rc;

    s = malloc(in.n + 1);
    FZ_CHECK(s != NULL, "out of memory");
    memcpy(s, in.p, in.n);
    s[in.n] = '\0';
    fz_err_reset();
    switch (sel) {
    case 0:
        rc = cli_parse_count("--capacity", s, &v);
        check_count(rc, "--capacity", s, v);
        break;
    case 1:
        rc = cli_parse_real("--fpp", s, &d);
        check_message(rc, "--fpp");
        if (rc == 0)
            FZ_CHECK(isfinite(d), "'%s' gave %g", s, d);
        break;
    case 2:
        rc = cli_parse_uint("--hashes", s, lo, hi, &v);
        check_message(rc, "--hashes");
        if (rc == 0) {
            check_unsigned_syntax(s);
            FZ_CHECK(v >= lo && v <= hi, "'%s' gave %llu outside [%llu, %llu]", s,
                     (unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
        }
        break;
    default:
        rc = cli_parse_u64("--seed", s, &v);
        check_count(rc, "--seed", s, v);
        break;
    }
    free(s);
    return 0;
}
