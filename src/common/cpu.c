/*
 * cpu.c - instruction sets probed once, capped by AMQ_SIMD (cpu.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "amq.h"
#include "amq/advanced.h"
#include "common/cpu.h"

/* Bit 31 marks "computed" so that a CPU without any feature is cached too. */
#define CPU_DONE (1u << 31)

static _Atomic uint32_t cpu_bits;

/* The highest amq_simd level AMQ_SIMD allows. */
static uint32_t simd_cap(void)
{
    const char *s = getenv("AMQ_SIMD");
    if (s == NULL || *s == '\0' || strcmp(s, "auto") == 0 || strcmp(s, "avx512") == 0)
        return AMQ_SIMD_AVX512;
    if (strcmp(s, "avx2") == 0)
        return AMQ_SIMD_AVX2;
    return AMQ_SIMD_SCALAR;
}

static uint32_t probe(void)
{
    uint32_t f = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        f |= AMQ_CPU_AVX2;
    if (__builtin_cpu_supports("bmi2"))
        f |= AMQ_CPU_BMI2;
    if (__builtin_cpu_supports("avx512f"))
        f |= AMQ_CPU_AVX512F;
    if (__builtin_cpu_supports("avx512dq"))
        f |= AMQ_CPU_AVX512DQ;
    if (__builtin_cpu_supports("avx512bw"))
        f |= AMQ_CPU_AVX512BW;
    if (__builtin_cpu_supports("avx512vl"))
        f |= AMQ_CPU_AVX512VL;
    if (__builtin_cpu_supports("avx512vpopcntdq"))
        f |= AMQ_CPU_AVX512VPOPCNTDQ;
    if (__builtin_cpu_supports("avx512vbmi2"))
        f |= AMQ_CPU_AVX512VBMI2;
    if (__builtin_cpu_supports("avx512cd"))
        f |= AMQ_CPU_AVX512CD;
#endif
    return f;
}

static uint32_t capped(uint32_t f, uint32_t cap)
{
    if (cap < AMQ_SIMD_AVX512)
        f &= ~(uint32_t)(AMQ_CPU_AVX512_CORE | AMQ_CPU_AVX512VPOPCNTDQ | AMQ_CPU_AVX512VBMI2 |
                          AMQ_CPU_AVX512CD);
    if (cap < AMQ_SIMD_AVX2)
        f = 0; /* BMI2 goes too: scalar means the portable code, nothing else */
    return f;
}

uint32_t amq_cpu_features(void)
{
    uint32_t f = atomic_load_explicit(&cpu_bits, memory_order_relaxed);
    if (f & CPU_DONE)
        return f & ~CPU_DONE;
    f = capped(probe(), simd_cap());
    atomic_store_explicit(&cpu_bits, f | CPU_DONE, memory_order_relaxed);
    return f;
}
