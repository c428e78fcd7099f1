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

/* amq_hash_check with the reason in err, the algorithm by name: AMQ_OK, or status (0: the
 * check's own AMQ_EHASH / AMQ_ERANGE; a decoder passes AMQ_ECORRUPT). */
int amq_hash_check_err(uint32_t algo, uint64_t seed, int status, amq_errinfo *err);

/* The same with the errno of a failed system call appended as text. */
int amq_err_sys(amq_errinfo *err, int status, int sys_errno, const char *fmt, ...)
    AMQ_PRINTF(4, 5);

#endif /* AMQ_COMMON_ERROR_H */
