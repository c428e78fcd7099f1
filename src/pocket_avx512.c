/*
 * pocket_avx512.c - the pocket kind's bins with AVX-512 (F, BW, VL, DQ, CD,
 * VBMI2) and BMI2 (the Makefile compiles this file with those flags): a
 * bucket's entries found by one byte compress of the map and compared at
 * once, the add's shift in registers, the rewrite 8 entries at a time.
 * Reached only through pocket.c, which picks it when amq_cpu_has() says so.
 */
#if defined(__x86_64__) && defined(__AVX512BW__) && defined(__AVX512VBMI2__) && \
    defined(__AVX512CD__) && defined(__BMI2__)
#define PK_ISA_TABLE amq_pk_isa_avx512
#include "pocket_impl.h"
#endif
