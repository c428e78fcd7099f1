/*
 * cpu.h - the one place the library decides which instruction sets it uses.
 *
 * The CPU is probed once (cpuid through the compiler's builtins, which also
 * check that the OS saves the wider registers) and the result is capped by
 * the environment variable AMQ_SIMD, read once:
 *
 *   AMQ_SIMD unset, empty, "auto" or "avx512"   everything the CPU has
 *   AMQ_SIMD=avx2                               no AVX-512 feature
 *   AMQ_SIMD=scalar (or any other value)        no vector feature at all
 *
 * Every kind asks here, so one setting moves every kind to the same paths
 * (tests compare the paths' answers; a bug report can name one setting).
 */
#ifndef AMQ_COMMON_CPU_H
#define AMQ_COMMON_CPU_H

#include <stdint.h>

/* Feature bits; a path needs all the bits it names. */
enum {
    AMQ_CPU_AVX2 = 1u << 0,
    AMQ_CPU_BMI2 = 1u << 1,
    AMQ_CPU_AVX512F = 1u << 2,
    AMQ_CPU_AVX512DQ = 1u << 3,
    AMQ_CPU_AVX512BW = 1u << 4,
    AMQ_CPU_AVX512VL = 1u << 5,
    AMQ_CPU_AVX512VPOPCNTDQ = 1u << 6,
    AMQ_CPU_AVX512VBMI2 = 1u << 7,
    AMQ_CPU_AVX512CD = 1u << 8
};

/* The AVX-512 subset the cuckoo kind's gathers use. */
#define AMQ_CPU_AVX512_CORE (AMQ_CPU_AVX512F | AMQ_CPU_AVX512DQ | AMQ_CPU_AVX512BW | AMQ_CPU_AVX512VL)

/* The feature bits this CPU has, after the AMQ_SIMD cap.  Thread-safe. */
uint32_t amq_cpu_features(void);

/* 1 if every bit of need is usable (CPU and cap), else 0. */
static inline int amq_cpu_has(uint32_t need)
{
    return (amq_cpu_features() & need) == need;
}

#endif /* AMQ_COMMON_CPU_H */
