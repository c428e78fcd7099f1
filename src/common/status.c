/*
 * status.c - status strings, error details and the version.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "amq.h"
#include "common/error.h"

const char *amq_strerror(int status)
{
    switch (status) {
#define AMQ_STATUS_TEXT_(name, value, text) \
    case value:                             \
        return text;
        AMQ_STATUS_MAP(AMQ_STATUS_TEXT_)
#undef AMQ_STATUS_TEXT_
    default:
        return "unknown error";
    }
}

const char *amq_status_name(int status)
{
    switch (status) {
#define AMQ_STATUS_NAME_(name, value, text) \
    case value:                             \
        return #name;
        AMQ_STATUS_MAP(AMQ_STATUS_NAME_)
#undef AMQ_STATUS_NAME_
    default:
        return NULL;
    }
}

const char *amq_version_string(void)
{
    return AMQ_VERSION_STRING;
}

unsigned amq_version_number(void)
{
    return AMQ_VERSION_NUMBER;
}

static void err_vset(amq_errinfo *err, int status, int sys_errno, const char *fmt, va_list ap)
{
    size_t used;

    err->status = status;
    err->sys_errno = sys_errno;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    if (sys_errno != 0) {
        used = strlen(err->msg);
        snprintf(err->msg + used, sizeof err->msg - used, ": %s", strerror(sys_errno));
    }
}

int amq_err(amq_errinfo *err, int status, const char *fmt, ...)
{
    va_list ap;
    if (err != NULL) {
        va_start(ap, fmt);
        err_vset(err, status, 0, fmt, ap);
        va_end(ap);
    }
    return status;
}

int amq_err_sys(amq_errinfo *err, int status, int sys_errno, const char *fmt, ...)
{
    va_list ap;
    if (err != NULL) {
        va_start(ap, fmt);
        err_vset(err, status, sys_errno, fmt, ap);
        va_end(ap);
    }
    return status;
}
