/*
 * error.h - filling amq_errinfo.
 */
#ifndef AMQ_COMMON_ERROR_H
#define AMQ_COMMON_ERROR_H

#include "amq.h"

#if defined(__GNUC__) || defined(__clang__)
#define AMQ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define AMQ_PRINTF(f, a)
#endif

/* Records status and a formatted message in err (when not NULL) and returns
 * status, so that callers write `return amq_err(err, AMQ_ETRUNC, "...")`. */
int amq_err(amq_errinfo *err, int status, const char *fmt, ...) AMQ_PRINTF(3, 4);

/* The same with the errno of a failed system call appended as text. */
int amq_err_sys(amq_errinfo *err, int status, int sys_errno, const char *fmt, ...)
    AMQ_PRINTF(4, 5);

#endif /* AMQ_COMMON_ERROR_H */
