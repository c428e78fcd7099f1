/*
 * quotient_avx512.c - the quotient kind's table with AVX-512BW and BMI2 (the
 * Makefile compiles this file with -mavx512f -mavx512bw -mavx512vl -mavx2
 * -mbmi2): quotient_impl.h's AVX2 paths, and a query that compares a line's
 * 28 lanes in one register.  Reached only through quotient.c, which picks it
 * when amq_cpu_has() says so.
 */
#include <stdlib.h>

#if defined(__x86_64__) && defined(__AVX512BW__) && defined(__AVX2__) && defined(__BMI2__)
#include "quotient_impl.h"

const amq_qf_isa amq_qf_isa_avx512 = {
    .add = isa_add,
    .contains = isa_contains,
    .add_batch = isa_add_batch,
    .contains_batch = isa_contains_batch,
    .contains_fixed = isa_contains_fixed,
    .add_key = isa_add_key,
    .contains_key = isa_contains_key,
};
#endif
