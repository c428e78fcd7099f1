/*
 * expandable-stall.c - the worst single add of an expandable filter grown
 * from its default start: each amq_filter_add is timed alone, in the
 * thread's CPU time (what the add did, page faults included; a shared
 * machine's preemptions excluded) and in wall time, and at every checkpoint
 * (1e6, 1e7, then every 5e7 up to N) the worst add so far, the key count
 * where it happened and how many adds took over 1 ms are printed.
 * A doubling that copies the whole table shows here as one add of many
 * milliseconds; a doubling spread over the adds does not.
 *
 *   expandable-stall [--max N] [--no-thp] [--kind expandable|quotient|pocket]
 *
 * (default 5e7 keys, the expandable kind from its default start; the quotient
 * and pocket kinds start at 1,000 keys, as expandable-bench grows them)
 *
 * Tables of 1 MiB and more are mapped with MADV_HUGEPAGE, so the add that
 * first writes a 2 MiB page waits for the kernel to zero it; --no-thp
 * (prctl PR_SET_THP_DISABLE, Linux) takes 4 KiB pages instead, leaving the
 * library's own work.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "amq.h"

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    uint64_t max = 50000000, i, t0, c0, dt, dc, worst = 0, worst_at = 0, over_ms = 0;
    uint64_t next = 1000000, cworst = 0, cworst_at = 0, cover_ms = 0;
    amq_config cfg;
    amq_filter *f = NULL;
    uint32_t kind = AMQ_KIND_EXPANDABLE;
    double l1 = 0, l5 = 0, l15 = 0;
    FILE *la;
    int rc;

    for (rc = 1; rc < argc; rc++) {
        if (strcmp(argv[rc], "--max") == 0 && rc + 1 < argc) {
            max = (uint64_t)strtod(argv[++rc], NULL);
        } else if (strcmp(argv[rc], "--no-thp") == 0) {
#if defined(__linux__) && defined(PR_SET_THP_DISABLE)
            if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
                perror("expandable-stall: prctl");
            printf("Transparent huge pages off for this process\n");
#endif
        } else if (strcmp(argv[rc], "--kind") == 0 && rc + 1 < argc &&
                   (strcmp(argv[rc + 1], "expandable") == 0 ||
                    strcmp(argv[rc + 1], "quotient") == 0 || strcmp(argv[rc + 1], "pocket") == 0)) {
            rc++;
            kind = strcmp(argv[rc], "pocket") == 0     ? AMQ_KIND_POCKET
                   : strcmp(argv[rc], "quotient") == 0 ? AMQ_KIND_QUOTIENT
                                                       : AMQ_KIND_EXPANDABLE;
        } else {
            fprintf(stderr, "usage: expandable-stall [--max N] [--no-thp] "
                            "[--kind expandable|quotient|pocket]\n");
            return 2;
        }
    }
    amq_config_init(&cfg, kind);
    cfg.fpp = 0.01;
    if (kind != AMQ_KIND_EXPANDABLE)
        cfg.capacity = 1000;
    printf("Kind %s, grown from %s\n", amq_kind_name(kind),
           kind == AMQ_KIND_EXPANDABLE ? "its default start" : "1,000 keys");
    if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK) {
        fprintf(stderr, "expandable-stall: cannot create the filter\n");
        return 1;
    }
    la = fopen("/proc/loadavg", "r");
    if (la != NULL && fscanf(la, "%lf %lf %lf", &l1, &l5, &l15) == 3)
        printf("Load average at the start: %.2f %.2f %.2f\n", l1, l5, l15);
    if (la != NULL)
        fclose(la);
    printf("| keys | worst add, CPU time (ms) | at key | adds over 1 ms | worst add, wall (ms) |"
           " at key | adds over 1 ms |\n|---|---|---|---|---|---|---|\n");
    for (i = 0; i < max; i++) {
        uint64_t k = mix(i);
        t0 = now_ns(CLOCK_MONOTONIC);
        c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        rc = amq_filter_add(f, &k, sizeof k);
        dc = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        dt = now_ns(CLOCK_MONOTONIC) - t0;
        if (rc < 0) {
            fprintf(stderr, "expandable-stall: add %llu: %s\n", (unsigned long long)i,
                    amq_strerror(rc));
            amq_filter_free(f);
            return 1;
        }
        if (dt > worst) {
            worst = dt;
            worst_at = i + 1;
        }
        over_ms += dt > 1000000u;
        if (dc > cworst) {
            cworst = dc;
            cworst_at = i + 1;
        }
        cover_ms += dc > 1000000u;
        if (i + 1 == next || i + 1 == max) {
            printf("| %llu | %.3f | %llu | %llu | %.3f | %llu | %llu |\n",
                   (unsigned long long)(i + 1), (double)cworst / 1e6,
                   (unsigned long long)cworst_at, (unsigned long long)cover_ms,
                   (double)worst / 1e6, (unsigned long long)worst_at,
                   (unsigned long long)over_ms);
            fflush(stdout);
            next = next < 10000000 ? next * 10 : next + 50000000;
        }
    }
    amq_filter_free(f);
    return 0;
}
