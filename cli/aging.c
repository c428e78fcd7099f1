/*
 * aging.c - the tool's options for aging filters: --window (a count of adds
 * or a duration), --rate (adds per unit of time) and --now (the time an
 * add or query happens, in ms since the Unix epoch; the wall clock when
 * absent).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* Milliseconds in a duration unit, 0 if s is not one. */
static double unit_ms(const char *s)
{
    static const struct { const char *name; double ms; } units[] = {
        {"ms", 1.0}, {"s", 1e3}, {"sec", 1e3}, {"min", 6e4}, {"h", 3.6e6}, {"d", 8.64e7},
    };
    size_t i;
    for (i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(s, units[i].name) == 0)
            return units[i].ms;
    return 0.0;
}

int cli_parse_window(const char *opt, const char *s, uint64_t *count, uint64_t *ms)
{
    char *end;
    double v, u;

    *count = 0;
    *ms = 0;
    if (s == NULL || !isdigit((unsigned char)s[0])) {
        cli_error("%s: expected a count of adds (10M) or a duration (90s, 1h), got '%s'", opt,
                  s ? s : "");
        return -1;
    }
    errno = 0;
    v = strtod(s, &end);
    u = unit_ms(end);
    if (u > 0.0) {
        v *= u;
        if (errno == ERANGE || !(v >= 1.0 && v < 1.8e19) || v != floor(v)) {
            cli_error("%s: '%s' is not a whole number of milliseconds of at least 1", opt, s);
            return -1;
        }
        *ms = (uint64_t)v;
        return 0;
    }
    if (strcmp(end, "m") == 0) {
        cli_error("%s: '%s' is ambiguous: write %.*sM for adds or %.*smin for minutes", opt, s,
                  (int)(end - s), s, (int)(end - s), s);
        return -1;
    }
    /* A suffix that is neither: the count parser's message named counts only. */
    if (*end != '\0' && strcmp(end, "k") != 0 && strcmp(end, "K") != 0 && strcmp(end, "M") != 0 &&
        strcmp(end, "G") != 0 && strcmp(end, "g") != 0 && strcmp(end, "T") != 0 &&
        strcmp(end, "t") != 0 && strcmp(end, "Ki") != 0 && strcmp(end, "Mi") != 0 &&
        strcmp(end, "Gi") != 0 && strcmp(end, "Ti") != 0) {
        cli_error("%s: '%s' is neither a count of adds (10M; suffixes k M G T Ki Mi Gi Ti) nor "
                  "a duration (90s; units ms s sec min h d)",
                  opt, s);
        return -1;
    }
    return cli_parse_count(opt, s, count);
}

int cli_parse_rate(const char *opt, const char *s, double *per_s)
{
    char num[64], *end;
    const char *slash = s != NULL ? strchr(s, '/') : NULL;
    size_t n = slash != NULL ? (size_t)(slash - s) : (s != NULL ? strlen(s) : 0);
    double v, mult = 1.0, u = 1e3;

    if (s == NULL || n == 0 || n >= sizeof num || !isdigit((unsigned char)s[0]))
        goto bad;
    memcpy(num, s, n);
    num[n] = '\0';
    errno = 0;
    v = strtod(num, &end);
    if (strcmp(end, "k") == 0 || strcmp(end, "K") == 0)
        mult = 1e3;
    else if (strcmp(end, "M") == 0)
        mult = 1e6;
    else if (strcmp(end, "G") == 0)
        mult = 1e9;
    else if (*end != '\0')
        goto bad;
    if (slash != NULL && (u = unit_ms(slash + 1)) == 0.0)
        goto bad;
    v = v * mult * 1e3 / u;
    if (errno == ERANGE || !(v > 0.0) || !isfinite(v))
        goto bad;
    *per_s = v;
    return 0;
bad:
    cli_error("%s: expected adds per unit of time (50k/s, 3000/min, 1M/h; a bare number is per"
              " second), got '%s'", opt, s ? s : "");
    return -1;
}

int cli_parse_now(const char *opt, const char *s, uint64_t *ms)
{
    return cli_parse_u64(opt, s, ms);
}

uint64_t cli_now_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec < 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int cli_aging_time_mode(const amq_filter *f)
{
    amq_aging_info in;
    return amq_aging_get_info(f, &in) == AMQ_OK && in.time_mode;
}
