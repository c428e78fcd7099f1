/*
 * util.c - errors, number parsing and output for the amq tool.
 */
#define AMQ_ADVANCED_API 1 /* amq_hash_algo_names */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char *cli_prog = "amq";
const char *cli_cmd = "";
void (*cli_before_message)(void);
FILE *cli_err_stream;

FILE *cli_stderr(void)
{
    return cli_err_stream != NULL ? cli_err_stream : stderr;
}

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
    FILE *err = cli_stderr();
    fflush(stdout);
    if (cli_before_message != NULL)
        cli_before_message();
    fprintf(err, "%s: %s", cli_prog, prefix);
    vfprintf(err, fmt, ap);
    fputc('\n', err);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
}

void cli_usage_hint(void)
{
    if (cli_cmd[0] != '\0')
        cli_error("try 'amq %s --help'", cli_cmd);
    else
        cli_error("try 'amq --help'");
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

void cli_lib_error(int status, const amq_errinfo *err, const char *context)
{
    const char *msg = (err != NULL && err->msg[0] != '\0') ? err->msg : amq_strerror(status);
    if (context != NULL && context[0] != '\0')
        cli_error("%s: %s", context, msg);
    else
        cli_error("%s", msg);
}

void cli_json_string(FILE *out, const char *s)
{
    putc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            putc(ch, out);
    }
    putc('"', out);
}

/* ---- numbers ---------------------------------------------------------------- */

/* strtoull and strtod skip leading white space and accept a sign, so that
 * "\t-5" would become 2^64 - 5: unsigned values must start with a digit
 * (or a '.', "0x", "inf"... which the callers check further). */
static int bad_unsigned_start(const char *s)
{
    return s == NULL || *s == '\0' || *s == '-' || *s == '+' || isspace((unsigned char)*s);
}

int cli_parse_count(const char *opt, const char *s, uint64_t *out)
{
    char *end;
    double v, mult = 1.0;
    unsigned long long u;

    if (bad_unsigned_start(s)) {
        cli_error("%s: expected a count, got '%s'", opt, s ? s : "");
        return -1;
    }
    /* Plain integers exactly, without a detour through double. */
    errno = 0;
    u = strtoull(s, &end, 10);
    if (*end == '\0') {
        if (errno == ERANGE) {
            cli_error("%s: '%s' is too large", opt, s);
            return -1;
        }
        *out = (uint64_t)u;
        return 0;
    }
    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v)) {
        cli_error("%s: expected a count, got '%s'", opt, s);
        return -1;
    }
    if (*end != '\0') {
        if (strcmp(end, "k") == 0 || strcmp(end, "K") == 0)
            mult = 1e3;
        else if (strcmp(end, "M") == 0 || strcmp(end, "m") == 0)
            mult = 1e6;
        else if (strcmp(end, "G") == 0 || strcmp(end, "g") == 0)
            mult = 1e9;
        else if (strcmp(end, "T") == 0 || strcmp(end, "t") == 0)
            mult = 1e12;
        else if (strcmp(end, "Ki") == 0)
            mult = 1024.0;
        else if (strcmp(end, "Mi") == 0)
            mult = 1048576.0;
        else if (strcmp(end, "Gi") == 0)
            mult = 1073741824.0;
        else if (strcmp(end, "Ti") == 0)
            mult = 1099511627776.0;
        else {
            cli_error("%s: '%s' is not a count (use digits, 1e6, or suffixes k M G T Ki Mi Gi Ti)",
                      opt, s);
            return -1;
        }
    }
    v *= mult;
    if (v < 0 || v != floor(v)) {
        cli_error("%s: '%s' is not a whole number", opt, s);
        return -1;
    }
    if (v >= 18446744073709551616.0) {
        cli_error("%s: '%s' is too large", opt, s);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int cli_parse_real(const char *opt, const char *s, double *out)
{
    char *end;
    double v;

    if (s == NULL || *s == '\0') {
        cli_error("%s: expected a number", opt);
        return -1;
    }
    errno = 0;
    v = strtod(s, &end);
    if (end == s || !isfinite(v) || errno == ERANGE) {
        cli_error("%s: expected a number, got '%s'", opt, s);
        return -1;
    }
    if (strcmp(end, "%") == 0)
        v /= 100.0;
    else if (*end != '\0') {
        cli_error("%s: expected a number, got '%s'", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_uint(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v;
    if (cli_parse_count(opt, s, &v) != 0)
        return -1;
    if (v < lo || v > hi) {
        cli_error("%s: %llu is out of range [%llu, %llu]", opt, (unsigned long long)v,
                  (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_fpp(const char *opt, const char *s, double *out)
{
    if (cli_parse_real(opt, s, out) != 0)
        return -1;
    if (!(*out > 0.0 && *out < 1.0)) {
        cli_error("%s must be between 0 and 1 (exclusive), got '%s'", opt, s);
        return -1;
    }
    return 0;
}

int cli_parse_capacity(const char *opt, const char *s, uint64_t *out)
{
    if (cli_parse_count(opt, s, out) != 0)
        return -1;
    if (*out == 0) {
        cli_error("%s must be at least 1", opt);
        return -1;
    }
    return 0;
}

uint32_t cli_default_hash(uint32_t kind)
{
    amq_config c;
    amq_config_init(&c, kind);
    return c.hash_algo;
}

int cli_parse_hash_algo(const char *opt, const char *s, uint32_t *out)
{
    if (amq_hash_algo_from_name(s, out) != AMQ_OK) {
        char list[256];
        amq_hash_algo_names(list, sizeof list);
        cli_error("%s: unknown algorithm '%s' (%s)", opt, s, list);
        return -1;
    }
    return 0;
}

int cli_parse_u64(const char *opt, const char *s, uint64_t *out)
{
    const char *digits = s;
    char *end;
    unsigned long long u;
    int base = 10;

    /* Decimal, or hexadecimal after 0x; never octal (strtoull's base 0
     * would read "010" as 8). */
    if (s != NULL && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        digits = s + 2;
        base = 16;
    }
    if (bad_unsigned_start(digits)) {
        cli_error("%s: expected a non-negative integer, got '%s'", opt, s ? s : "");
        return -1;
    }
    errno = 0;
    u = strtoull(digits, &end, base);
    if (end == digits || *end != '\0' || errno == ERANGE) {
        cli_error("%s: expected an integer (decimal or 0x hex) below 2^64, got '%s'", opt, s);
        return -1;
    }
    *out = (uint64_t)u;
    return 0;
}

void cli_human_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, cap, "%.1f %s", v, units[u]);
}

/* ---- output ----------------------------------------------------------------------- */

static char out_buf[1 << 20];

void cli_out_init(void)
{
    setvbuf(stdout, out_buf, _IOFBF, sizeof out_buf);
}

int cli_out_close(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (errno != EPIPE)
            cli_error("write error on standard output: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/*
 * One thread per idle core: the online CPUs minus the 1-minute load average
 * (rounded), at least 1.  On a machine busy with other work, extra threads
 * only wait for a core and pay their handoffs, as make -l reasons.  AMQ_THREADS or --threads choose explicitly.
 */
int cli_threads(int requested)
{
    const char *env = getenv("AMQ_THREADS");
    double load[1];
    long n, busy;

    if (requested > 0)
        return requested;
    if (env != NULL && atoi(env) > 0 && atoi(env) <= 1024)
        return atoi(env);
    n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0 || n >= 1024)
        n = 1;
    if (getloadavg(load, 1) == 1 && load[0] >= 0.0 && load[0] < 1e6) {
        busy = (long)(load[0] + 0.5);
        n = n - busy >= 1 ? n - busy : 1;
    }
    return (int)n;
}

int cli_list_options;

int cli_getopt_long(int argc, char *const *argv, const char *shortopts,
                    const struct option *longopts, int *longindex)
{
    const struct option *o;
    const char *s;

    if (!cli_list_options)
        return (getopt_long)(argc, argv, shortopts, longopts, longindex); /* the real one */
    for (o = longopts; o->name != NULL; o++)
        printf("--%s%s\n", o->name, o->has_arg == required_argument ? " ARG" : "");
    for (s = shortopts; *s != '\0'; s++)
        if (*s != ':')
            printf("-%c%s\n", *s, s[1] == ':' ? " ARG" : "");
    exit(cli_out_close() == 0 ? 0 : EXIT_TROUBLE);
}
