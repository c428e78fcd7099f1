/*
 * hll.c - HyperLogLog with 2^16 one-byte registers: the distinct keys of
 * build's counting pass and of dedup --approximate's input (standard error
 * 1.04 / 256 = 0.41 %; linear counting below 2.5 x 2^16).
 */
#include <math.h>

#include "cli.h"

void cli_hll_add(uint8_t *reg, uint64_t x)
{
    /* Register: the top bits; rank: 1 + leading zeros of the rest (a sentinel bit bounds it). */
    uint64_t w = (x << CLI_HLL_BITS) | (UINT64_C(1) << (CLI_HLL_BITS - 1));
    uint8_t rank = (uint8_t)(__builtin_clzll(w) + 1);
    if (reg[x >> (64 - CLI_HLL_BITS)] < rank)
        reg[x >> (64 - CLI_HLL_BITS)] = rank;
}

double cli_hll_estimate(const uint8_t *reg)
{
    double m = CLI_HLL_REGS, sum = 0.0, alpha = 0.7213 / (1.0 + 1.079 / m), e;
    unsigned zeros = 0, j;

    for (j = 0; j < CLI_HLL_REGS; j++) {
        sum += ldexp(1.0, -(int)reg[j]);
        zeros += reg[j] == 0;
    }
    e = alpha * m * m / sum;
    if (e <= 2.5 * m && zeros > 0)
        e = m * log(m / (double)zeros); /* linear counting */
    return e;
}
