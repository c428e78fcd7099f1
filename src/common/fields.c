/*
 * fields.c - the describe callbacks' helpers (fields.h): below every kind, so
 * that a kind's describe needs nothing from the generic handle.
 */
#include "common/fields.h"

int amq_field_u64(amq_field_fn fn, void *ctx, const char *name, uint64_t v)
{
    amq_field f = {name, AMQ_FIELD_U64, v, 0.0, NULL};
    return fn(ctx, &f);
}

int amq_field_f64(amq_field_fn fn, void *ctx, const char *name, double v)
{
    amq_field f = {name, AMQ_FIELD_F64, 0, v, NULL};
    return fn(ctx, &f);
}

int amq_field_str(amq_field_fn fn, void *ctx, const char *name, const char *v)
{
    amq_field f = {name, AMQ_FIELD_STR, 0, 0.0, v};
    return fn(ctx, &f);
}

int amq_fields(amq_field_fn fn, void *ctx, const amq_field *fields, size_t n)
{
    size_t i;
    int rc = 0;
    for (i = 0; i < n && rc == 0; i++)
        rc = fn(ctx, &fields[i]);
    return rc;
}
