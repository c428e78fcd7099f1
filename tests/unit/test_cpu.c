/*
 * test_cpu.c - the one CPU module (src/common/cpu.c): AMQ_SIMD caps every
 * feature the kinds ask for, and the blocked kind's public paths agree.
 *
 * The module caches its answer for the process, so each setting runs in a
 * fresh copy of this program (re-executed with AMQ_TEST_CPU_CHILD set).
 */
#include <sys/wait.h>
#include <unistd.h>

#include "amq.h"
#include "amq/advanced.h"
#include "common/cpu.h"
#include "test.h"

static uint32_t cpu_probe_direct(void)
{
    uint32_t f = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    f |= __builtin_cpu_supports("avx2") ? AMQ_CPU_AVX2 : 0u;
    f |= __builtin_cpu_supports("bmi2") ? AMQ_CPU_BMI2 : 0u;
    f |= __builtin_cpu_supports("avx512f") ? AMQ_CPU_AVX512F : 0u;
    f |= __builtin_cpu_supports("avx512dq") ? AMQ_CPU_AVX512DQ : 0u;
    f |= __builtin_cpu_supports("avx512bw") ? AMQ_CPU_AVX512BW : 0u;
    f |= __builtin_cpu_supports("avx512vl") ? AMQ_CPU_AVX512VL : 0u;
    f |= __builtin_cpu_supports("avx512vpopcntdq") ? AMQ_CPU_AVX512VPOPCNTDQ : 0u;
    f |= __builtin_cpu_supports("avx512vbmi2") ? AMQ_CPU_AVX512VBMI2 : 0u;
    f |= __builtin_cpu_supports("avx512cd") ? AMQ_CPU_AVX512CD : 0u;
#endif
    return f;
}

/* In the child: exit 0 if the features obey the cap the parent set. */
__attribute__((constructor)) static void cpu_child(void)
{
    const char *mode = getenv("AMQ_TEST_CPU_CHILD");
    uint32_t all, got,
        avx512 = AMQ_CPU_AVX512_CORE | AMQ_CPU_AVX512VPOPCNTDQ | AMQ_CPU_AVX512VBMI2 |
                 AMQ_CPU_AVX512CD;
    int ok;
    if (mode == NULL)
        return;
    all = cpu_probe_direct();
    got = amq_cpu_features();
    if (strcmp(mode, "scalar") == 0)
        ok = got == 0 && !amq_simd_supported(AMQ_SIMD_AVX2) &&
             strcmp(amq_simd_name(AMQ_SIMD_AUTO), "scalar") == 0;
    else if (strcmp(mode, "avx2") == 0)
        ok = got == (all & ~avx512) && !amq_simd_supported(AMQ_SIMD_AVX512) &&
             amq_simd_supported(AMQ_SIMD_AVX2) == !!(all & AMQ_CPU_AVX2);
    else
        ok = got == all && amq_simd_supported(AMQ_SIMD_AVX2) == !!(all & AMQ_CPU_AVX2);
    if (!ok)
        fprintf(stderr, "  expected cap %s: features 0x%x, CPU 0x%x\n", mode, got, all);
    _exit(ok ? 0 : 1);
}

/* Runs a copy with AMQ_SIMD=simd (NULL: unset) expecting the cap named by want. */
static int run_child(const char *simd, const char *want)
{
    pid_t pid = fork();
    int st = 0;
    if (pid == 0) {
        if (simd != NULL)
            setenv("AMQ_SIMD", simd, 1);
        else
            unsetenv("AMQ_SIMD");
        setenv("AMQ_TEST_CPU_CHILD", want, 1);
        execl("/proc/self/exe", "test_cpu", (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(amq_simd_caps_every_feature)
{
    CHECK_EQ(run_child(NULL, "all"), 0);
    CHECK_EQ(run_child("", "all"), 0);
    CHECK_EQ(run_child("auto", "all"), 0);
    CHECK_EQ(run_child("avx512", "all"), 0);
    CHECK_EQ(run_child("avx2", "avx2"), 0);
    CHECK_EQ(run_child("scalar", "scalar"), 0);
    CHECK_EQ(run_child("sse2", "scalar"), 0); /* any other value means scalar */
}

TEST(scalar_cap_reported)
{
    uint32_t all = cpu_probe_direct();
    if (all == 0)
        printf("  SKIPPED: this CPU has no vector feature, the caps are not exercised\n");
    CHECK((amq_cpu_features() & ~all) == 0);
}

TEST_MAIN()
