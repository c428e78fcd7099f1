/*
 * quotient_base.c - the quotient kind's table for the x86-64 baseline (SSE2,
 * no BMI2): quotient_impl.h compiled as it is.
 */
#include <stdlib.h>

#define QF_ISA_TABLE amq_qf_isa_base
#include "quotient_impl.h"
