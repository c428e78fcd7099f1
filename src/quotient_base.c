/*
 * quotient_base.c - the quotient kind's table for the x86-64 baseline (SSE2,
 * no BMI2): quotient_impl.h compiled as it is.
 */
#include <stdlib.h>

#include "quotient_impl.h"

const amq_qf_isa amq_qf_isa_base = {isa_add,        isa_contains,       isa_add_batch,
                                    isa_contains_batch, isa_contains_fixed, isa_finish};
