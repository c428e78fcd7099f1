/*
 * target.c - the files the tool writes go through the library's one
 * writer (amq_target, <amq/advanced.h>), which amq_filter_save and so
 * Python use too: a symlink followed, only what the command makes
 * replaced (an amq filter for filter outputs, anything but an amq filter
 * for dedup's text), mode and owner kept, hard-linked and read-only files
 * refused, the file locked from before it is read until it is replaced,
 * and the new contents in a temporary file renamed into place (issue 19).
 * What is the tool's own: the signal handlers that remove the temporary
 * files before the signal's default action ends the process, "-" for
 * standard output, the --force wording, and a journal of an in-place add
 * applied before the file is read.
 */
#define AMQ_ADVANCED_API 1 /* amq_target: the library's writer */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amq/inplace.h"
#include "cli.h"

/* ---- temporary files removed on a signal -------------------------------------------------- */

static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

static void on_fatal_signal(int sig)
{
    int e = errno;
    amq_temp_remove_all(); /* async-signal-safe */
    signal(sig, SIG_DFL);
    errno = e;
    raise(sig);
}

void cli_signals_init(void)
{
    struct sigaction sa;
    size_t i;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        sigaddset(&sa.sa_mask, fatal_signals[i]);
    for (i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        struct sigaction old;
        /* A signal ignored by whoever started us (nohup) stays ignored. */
        if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

static sigset_t held_mask;
static int held;

void cli_signals_hold(void)
{
    sigset_t set;
    size_t i;

    if (held)
        return;
    sigemptyset(&set);
    for (i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        sigaddset(&set, fatal_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, &held_mask);
    held = 1;
}

void cli_signals_release(void)
{
    if (held)
        pthread_sigmask(SIG_SETMASK, &held_mask, NULL);
    held = 0;
}

/* ---- the target --------------------------------------------------------------------------- */

static unsigned library_flags(unsigned flags)
{
    unsigned lf = AMQ_TARGET_NOWAIT;
    if (flags & CLI_TARGET_UPDATE)
        lf |= AMQ_TARGET_UPDATE; /* "-" is a file's name here: standard output is no filter */
    else
        lf |= AMQ_TARGET_STDOUT;
    if (flags & CLI_TARGET_TEXT)
        lf |= AMQ_TARGET_TEXT;
    else if (!(flags & (CLI_TARGET_UPDATE | CLI_TARGET_FORCE)))
        lf |= AMQ_TARGET_EXCL;
    else if ((flags & CLI_TARGET_FORCE) && (flags & CLI_TARGET_ANY))
        lf |= AMQ_TARGET_BINARY;
    return lf;
}

/* The library's message, or the tool's wording where the tool's options
 * are the way out. */
static void report(const cli_target *t, int rc, const amq_errinfo *err)
{
    if (rc == AMQ_EEXIST && !(t->flags & (CLI_TARGET_UPDATE | CLI_TARGET_FORCE | CLI_TARGET_TEXT)))
        cli_error("%s: file exists (use --force to replace it)", t->path);
    else
        cli_lib_error(rc, err, NULL);
}

void cli_target_release(cli_target *t)
{
    amq_target_close(t->t);
    t->t = NULL;
    t->real = NULL;
}

int cli_target_open(cli_target *t, const char *path, unsigned flags)
{
    unsigned lf = library_flags(flags);
    amq_errinfo err;
    int rc;

    memset(t, 0, sizeof *t);
    t->path = path;
    t->flags = flags;
    memset(&err, 0, sizeof err);
    rc = amq_target_open(path, lf, &t->t, &err);
    if (rc == AMQ_EIO && err.sys_errno == EWOULDBLOCK) {
        if (!(flags & CLI_TARGET_QUIET))
            cli_warn("%s: waiting for another amq writing it", path);
        memset(&err, 0, sizeof err);
        rc = amq_target_open(path, lf & ~AMQ_TARGET_NOWAIT, &t->t, &err);
    }
    if (rc != AMQ_OK) {
        report(t, rc, &err);
        return -1;
    }
    t->real = amq_target_path(t->t);
    if (strcmp(t->real, "-") != 0 && amq_target_exists(t->t)) {
        /* A journal of an in-place add cut short is applied before the
         * file is read or replaced (a stale one must never meet a new file). */
        memset(&err, 0, sizeof err);
        rc = amq_inplace_recover(t->real, &err);
        if (rc != AMQ_OK) {
            cli_lib_error(rc, &err, NULL);
            cli_target_release(t);
            return -1;
        }
    }
    if (strcmp(t->real, "-") == 0)
        t->real = "(standard output)";
    return 0;
}

int cli_target_begin(cli_target *t)
{
    amq_errinfo err;
    int fd, rc;

    memset(&err, 0, sizeof err);
    rc = amq_target_begin(t->t, &fd, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, NULL);
        return -1;
    }
    return fd;
}

void cli_target_abort(cli_target *t)
{
    amq_target_abort(t->t);
}

int cli_target_commit(cli_target *t)
{
    amq_errinfo err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = amq_target_commit(t->t, &err);
    if (rc != AMQ_OK) {
        report(t, rc, &err);
        return -1;
    }
    return 0;
}

int cli_target_write_bytes(cli_target *t, const void *data, size_t len)
{
    amq_errinfo err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = amq_target_write(t->t, data, len, &err);
    if (rc != AMQ_OK) {
        cli_lib_error(rc, &err, NULL);
        amq_target_abort(t->t);
        return -1;
    }
    return cli_target_commit(t);
}

int cli_target_write_filter(cli_target *t, const amq_filter *f)
{
    amq_errinfo err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = amq_target_save_filter(t->t, f, &err);
    if (rc != AMQ_OK) {
        report(t, rc, &err);
        return -1;
    }
    return 0;
}

int cli_check_output(const char *path, int force)
{
    cli_target t;
    if (cli_target_open(&t, path, force ? CLI_TARGET_FORCE : 0) != 0)
        return -1;
    cli_target_release(&t);
    return 0;
}

void cli_settle(amq_filter *f, const char *path, int quiet)
{
    const int rc = amq_filter_settle(f);
    if (rc != AMQ_OK && rc != AMQ_EREADONLY && !quiet)
        cli_warn("%s: the growth under way could not finish (%s): saved as it stands", path,
                 amq_strerror(rc));
}

int cli_save_filter(const char *path, const amq_filter *f, unsigned flags)
{
    cli_target t;
    int rc;
    if (cli_target_open(&t, path, flags) != 0)
        return -1;
    rc = cli_target_write_filter(&t, f);
    cli_target_release(&t);
    return rc;
}
