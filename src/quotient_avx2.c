/*
 * quotient_avx2.c - the quotient kind's table with AVX2 and BMI2 (the
 * Makefile compiles this file with -mavx2 -mbmi2): the shift of an add by
 * 32-byte moves, empty lanes by 32-byte compares, select by PDEP.  Reached
 * only through quotient.c, which picks it when amq_cpu_has() says so.
 */
#include <stdlib.h>

#if defined(__x86_64__) && defined(__AVX2__) && defined(__BMI2__)
#include "quotient_impl.h"

const amq_qf_isa amq_qf_isa_avx2 = {
    .add = isa_add,
    .contains = isa_contains,
    .add_batch = isa_add_batch,
    .contains_batch = isa_contains_batch,
    .contains_fixed = isa_contains_fixed,
    .add_key = isa_add_key,
    .contains_key = isa_contains_key,
};
#endif
