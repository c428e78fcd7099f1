/*
 * pocket_base.c - the pocket kind's bins for the x86-64 baseline (no BMI2,
 * no AVX-512): pocket_impl.h compiled as it is.
 */
#define PK_ISA_TABLE amq_pk_isa_base
#include "pocket_impl.h"
