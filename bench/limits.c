/* limits.c — the machine's own limits for `make bench`'s efficiency table:
 * FP32 FMA peak of one core and triad bandwidth within L2.  Built with
 * -march=native (the probe must use the widest vectors the core has), unlike
 * harness.c, which touches axc's side and is built with ordinary flags. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

#include "harness.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- machine limits ---------------------------------------------------- */

#if defined(__AVX512F__)
typedef __m512 vreg;
enum { LANES = 16, CHAINS = 16 };
#define VSET _mm512_set1_ps
#define VFMA _mm512_fmadd_ps
#elif defined(__FMA__)
typedef __m256 vreg;
enum { LANES = 8, CHAINS = 12 }; /* 16 ymm registers: chains + 2 constants */
#define VSET _mm256_set1_ps
#define VFMA _mm256_fmadd_ps
#endif

/* Best of many short runs (about 1 ms each, so that some run is not
 * preempted on a shared machine) of CHAINS independent FMA dependency chains,
 * enough to cover latency x throughput on current cores; 0 without FMA. */
double bench_fma_peak_gflops(void)
{
#if defined(VFMA)
    const long iters = 100000;
    double best = 0;
    for (int trial = 0; trial < 200; trial++) {
        vreg acc[CHAINS], m = VSET(0.9999f), a = VSET(1e-4f);
        for (int j = 0; j < CHAINS; j++) acc[j] = VSET((float)j);
        double t0 = now_ns();
        for (long i = 0; i < iters; i++) {
#pragma GCC unroll 16
            for (int j = 0; j < CHAINS; j++) acc[j] = VFMA(acc[j], m, a);
        }
        double t = now_ns() - t0;
        float lanes[LANES], sum = 0;
        for (int j = 0; j < CHAINS; j++) {
            memcpy(lanes, &acc[j], sizeof lanes);
            for (int k = 0; k < LANES; k++) sum += lanes[k];
        }
        volatile float sink = sum;
        (void)sink;
        double gflops = 2.0 * LANES * CHAINS * (double)iters / t;
        if (gflops > best) best = gflops;
    }
    return best;
#else
    return 0;
#endif
}

__attribute__((noinline)) static void triad(float *a, const float *b, const float *c, float s, size_t n)
{
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

/* a = b + s c over three 128 KiB arrays (inside L2), 12 bytes per element
 * as STREAM counts them; best of many short trials (about 0.5 ms each, so
 * that some trial is not preempted on a shared machine). */
double bench_triad_gbps(void)
{
    enum { N = 32768, PASSES = 20 };
    float *a = bench_floats(N), *b = bench_floats(N), *c = bench_floats(N);
    for (size_t i = 0; i < N; i++) b[i] = (float)i, c[i] = 1.0f;
    double best = 0;
    for (int trial = 0; trial < 400; trial++) {
        double t0 = now_ns();
        for (int p = 0; p < PASSES; p++) triad(a, b, c, 1.0f + (float)p * 1e-6f, N);
        double gbps = 12.0 * N * PASSES / (now_ns() - t0);
        if (gbps > best) best = gbps;
    }
    volatile float sink = a[N / 2];
    (void)sink;
    free(a), free(b), free(c);
    return best;
}
