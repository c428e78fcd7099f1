/*
 * quotient_avx512.c - the quotient kind's table with AVX-512BW and BMI2 (the
 * Makefile compiles this file with -mavx512f -mavx512bw -mavx512vl -mavx2
 * -mbmi2): quotient_impl.h's AVX2 paths, and a query that compares a line's
 * 28 lanes in one register.  Reached only through quotient.c, which picks it
 * when amq_cpu_has() says so.
 */
#include <stdlib.h>

#if defined(__x86_64__) && defined(__AVX512BW__) && defined(__AVX2__) && defined(__BMI2__)
#define QF_ISA_TABLE amq_qf_isa_avx512
#include "quotient_impl.h"
#endif
