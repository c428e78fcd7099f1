/*
 * progress.c - a progress line on standard error for long work.
 *
 * Shown only once the work has run for CLI_PROGRESS_DELAY seconds (short
 * commands print nothing), and by default only when standard error is a
 * terminal: there the line is redrawn in place five times a second; with
 * --progress on a pipe or file it is one line per second.  --quiet turns it
 * off.  The line gives the phase, bytes done (of the total when known, with
 * the percentage and the time left), the rate and the lines so far.  On a
 * terminal it is kept narrower than the terminal (TIOCGWINSZ, read at each
 * redraw so that a resize is followed): a line that wraps would scroll a
 * new line at each redraw.  Less important parts go first, then the tail.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define CLI_PROGRESS_DELAY 2.0

struct cli_progress {
    int tty;
    char what[64];
    uint64_t total;
    double t_start;  /* of the whole work: the delay counts from there */
    double t_phase;  /* of the phase: rates count from there */
    double t_last;   /* last line drawn */
    uint64_t lines;
    int drawn;       /* a line is on the terminal */
    double delay;
};

static cli_progress *active; /* the one cli_error must clear first */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cli_progress_mode(int progress_flag, int quiet_flag)
{
    if (quiet_flag)
        return CLI_PROGRESS_OFF;
    return progress_flag ? CLI_PROGRESS_ON : CLI_PROGRESS_AUTO;
}

cli_progress *cli_progress_start(int mode, const char *what, uint64_t total)
{
    cli_progress *p;
    const char *env;
    int tty = isatty(STDERR_FILENO);

    if (mode == CLI_PROGRESS_OFF || (mode == CLI_PROGRESS_AUTO && !tty))
        return NULL;
    p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->tty = tty;
    p->t_start = now();
    /* Tests shorten the delay (AMQ_PROGRESS_DELAY=0) to see the line. */
    env = getenv("AMQ_PROGRESS_DELAY");
    p->delay = env != NULL ? atof(env) : CLI_PROGRESS_DELAY;
    cli_progress_phase(p, what, total);
    active = p;
    cli_before_message = cli_progress_clear;
    return p;
}

void cli_progress_set_total(cli_progress *p, uint64_t total)
{
    if (p != NULL)
        p->total = total;
}

void cli_progress_phase(cli_progress *p, const char *what, uint64_t total)
{
    if (p == NULL)
        return;
    snprintf(p->what, sizeof p->what, "%s", what);
    p->total = total;
    p->t_phase = now();
    p->lines = 0;
}

static void fmt_duration(double s, char *buf, size_t cap)
{
    unsigned long t = (unsigned long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, cap, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, cap, "%lu:%02lu", t / 60, t % 60);
}

static void fmt_count(uint64_t n, char *buf, size_t cap)
{
    if (n >= 1000000000)
        snprintf(buf, cap, "%.2fG", (double)n / 1e9);
    else if (n >= 1000000)
        snprintf(buf, cap, "%.1fM", (double)n / 1e6);
    else if (n >= 10000)
        snprintf(buf, cap, "%.0fk", (double)n / 1e3);
    else
        snprintf(buf, cap, "%llu", (unsigned long long)n);
}

/* Columns of the terminal on standard error; 80 when unknown. */
static size_t term_width(void)
{
    struct winsize ws;
    const char *env;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    env = getenv("COLUMNS");
    if (env != NULL && atoi(env) > 0)
        return (size_t)atoi(env);
    return 80;
}

void cli_progress_update(cli_progress *p, uint64_t pos, size_t lines)
{
    char line[512], done[32], total[32], rate[32], count[32], eta[32], lines_part[48];
    char pct[16], rate_part[48], eta_part[48];
    double t, el, bps;
    size_t width, len;
    int form;

    if (p == NULL)
        return;
    p->lines += lines;
    t = now();
    if (t - p->t_start < p->delay || t - p->t_last < (p->tty ? 0.2 : 1.0))
        return;
    p->t_last = t;
    el = t - p->t_phase;
    bps = el > 0 ? (double)pos / el : 0.0;
    cli_human_bytes(pos, done, sizeof done);
    cli_human_bytes((uint64_t)bps, rate, sizeof rate);
    fmt_count(p->lines, count, sizeof count);
    lines_part[0] = pct[0] = eta_part[0] = total[0] = '\0';
    if (p->lines > 0)
        snprintf(lines_part, sizeof lines_part, ", %s lines", count);
    snprintf(rate_part, sizeof rate_part, ", %s/s", rate);
    if (p->total > 0 && pos <= p->total) {
        cli_human_bytes(p->total, total, sizeof total);
        snprintf(pct, sizeof pct, " (%.0f%%)", 100.0 * (double)pos / (double)p->total);
        if (bps > 0)
            fmt_duration((double)(p->total - pos) / bps, eta, sizeof eta);
        else
            snprintf(eta, sizeof eta, "?");
        snprintf(eta_part, sizeof eta_part, ", %s left", eta);
    }
    /* Forms from the fullest to the barest; the first that fits is drawn. */
    width = p->tty ? term_width() : sizeof line;
    for (form = 0; form < 4; form++) {
        snprintf(line, sizeof line, "amq: %s: %s%s%s%s%s%s%s", p->what, done,
                 total[0] ? " of " : "", total, pct, form <= 1 ? rate_part : "",
                 form == 0 ? lines_part : "", form <= 2 ? eta_part : "");
        if (strlen(line) < width)
            break;
    }
    len = strlen(line);
    /* Never reach the last column: some terminals wrap there. */
    if (width > 1 && len > width - 1)
        line[width - 1] = '\0';
    fflush(stdout);
    if (p->tty)
        fprintf(cli_stderr(), "\r%s\033[K", line);
    else
        fprintf(cli_stderr(), "%s\n", line);
    p->drawn = p->tty;
}

void cli_progress_clear(void)
{
    if (active != NULL && active->drawn) {
        fputs("\r\033[K", cli_stderr());
        active->drawn = 0;
    }
}

void cli_progress_end(cli_progress *p)
{
    if (p == NULL)
        return;
    if (active == p) {
        cli_progress_clear();
        active = NULL;
        cli_before_message = NULL;
    }
    free(p);
}
