/*
 * fields.h - one describe field, or a list of them, handed to a callback
 * (amq_filter_describe's amq_field_fn).
 */
#ifndef AMQ_COMMON_FIELDS_H
#define AMQ_COMMON_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "amq/filter.h"

/* Helpers for describe functions: one field, or a list of them -
 * AMQ_FIELDS(fn, ctx, AMQ_U64("bits", m), AMQ_STR("probe", name), ...)
 * calls fn for each in order and returns its first non-zero value (else
 * 0).  Every value of the list is computed before the first call. */
int amq_field_u64(amq_field_fn fn, void *ctx, const char *name, uint64_t v);
int amq_field_f64(amq_field_fn fn, void *ctx, const char *name, double v);
int amq_field_str(amq_field_fn fn, void *ctx, const char *name, const char *v);
int amq_fields(amq_field_fn fn, void *ctx, const amq_field *fields, size_t n);
#define AMQ_U64(NAME, V)                                                                           \
    {                                                                                              \
        .name = (NAME), .type = AMQ_FIELD_U64, .u64 = (uint64_t)(V)                                \
    }
#define AMQ_F64(NAME, V)                                                                           \
    {                                                                                              \
        .name = (NAME), .type = AMQ_FIELD_F64, .f64 = (V)                                          \
    }
#define AMQ_STR(NAME, V)                                                                           \
    {                                                                                              \
        .name = (NAME), .type = AMQ_FIELD_STR, .str = (V)                                          \
    }
#define AMQ_FIELDS(FN, CTX, ...)                                                                   \
    amq_fields((FN), (CTX), (const amq_field[]){__VA_ARGS__},                                      \
               sizeof((const amq_field[]){__VA_ARGS__}) / sizeof(amq_field))

#endif /* AMQ_COMMON_FIELDS_H */
