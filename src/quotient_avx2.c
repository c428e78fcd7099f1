/*
 * quotient_avx2.c - the quotient kind's table with AVX2 and BMI2 (the
 * Makefile compiles this file with -mavx2 -mbmi2): the shift of an add by
 * 32-byte moves, empty lanes by 32-byte compares, select by PDEP.  Reached
 * only through quotient.c, which picks it when amq_cpu_has() says so.
 */
#include <stdlib.h>

#if defined(__x86_64__) && defined(__AVX2__) && defined(__BMI2__)
#define QF_ISA_TABLE amq_qf_isa_avx2
#include "quotient_impl.h"
#endif
