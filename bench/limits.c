/* limits.c — the machine's own limits for `make bench`'s efficiency table:
 * FP32 FMA peak of one core and triad bandwidth within L2.  Built with the
 * same ordinary flags as the harness (only peer code gets -march=native):
 * the probes that need wide vectors carry GCC target attributes and are
 * chosen at run time for the widest the CPU has, as libaxrt chooses its
 * kernels. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "harness.h"

#if defined(__x86_64__)
/* Best of many short runs (about 1 ms each, so that some run is not
 * preempted on a shared machine) of CHAINS independent FMA dependency
 * chains, enough to cover latency x throughput on current cores. */
#define FMA_PEAK_BODY(VREG, LANES, CHAINS, VSET, VFMA)                          \
    {                                                                           \
        const long iters = 100000;                                              \
        double best = 0;                                                        \
        for (int trial = 0; trial < trials; trial++) {                          \
            VREG acc[CHAINS], m = VSET(0.9999f), a = VSET(1e-4f);               \
            for (int j = 0; j < CHAINS; j++) acc[j] = VSET((float)j);           \
            double t0 = bench_now_ns();                                         \
            for (long i = 0; i < iters; i++) {                                  \
                _Pragma("GCC unroll 16")                                        \
                for (int j = 0; j < CHAINS; j++) acc[j] = VFMA(acc[j], m, a);   \
            }                                                                   \
            double t = bench_now_ns() - t0;                                     \
            float lanes[LANES], sum = 0;                                        \
            for (int j = 0; j < CHAINS; j++) {                                  \
                memcpy(lanes, &acc[j], sizeof lanes);                           \
                for (int k = 0; k < LANES; k++) sum += lanes[k];                \
            }                                                                   \
            volatile float sink = sum;                                          \
            (void)sink;                                                         \
            double gflops = 2.0 * LANES * CHAINS * (double)iters / t;           \
            if (gflops > best) best = gflops;                                   \
        }                                                                       \
        return best;                                                            \
    }

__attribute__((target("avx512f"))) static double fma_peak_avx512(int trials)
FMA_PEAK_BODY(__m512, 16, 16, _mm512_set1_ps, _mm512_fmadd_ps)

/* 16 ymm registers: 12 chains and the 2 constants */
__attribute__((target("avx2,fma"))) static double fma_peak_avx2(int trials)
FMA_PEAK_BODY(__m256, 8, 12, _mm256_set1_ps, _mm256_fmadd_ps)
#endif

/* The peak of the widest FMA the CPU has, or of AVX2's where AXRT_ISA=avx2
 * makes libaxrt run its AVX2 table (axrt_cpu.h) on an AVX-512 machine, so
 * that the efficiency table rates the kernels against the instructions
 * they use: 2 FMA ports x 8 floats x 2 flops a cycle on current cores. */
double bench_fma_peak_trials_gflops(int trials)
{
#if defined(__x86_64__)
    const char *isa = getenv("AXRT_ISA");
    const int avx2_only = isa && !strcmp(isa, "avx2");
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && !avx2_only) return fma_peak_avx512(trials);
    if (__builtin_cpu_supports("fma")) return fma_peak_avx2(trials);
#endif
    (void)trials;
    return 0;
}

double bench_fma_peak_gflops(void) { return bench_fma_peak_trials_gflops(200); }

enum { TRIAD_N = 32768 };   /* floats per array: three 128 KiB arrays, inside L2 */

/* One clone per vector width, picked at load time (GCC target_clones); the
 * constant trip count and restrict let -O2's cheap vectoriser take it whole. */
#if defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
__attribute__((noinline)) static void triad(float *restrict a, const float *restrict b, const float *restrict c,
                                            float s)
{
    for (size_t i = 0; i < TRIAD_N; i++) a[i] = b[i] + s * c[i];
}

/* a = b + s c over three 128 KiB arrays (inside L2), 12 bytes per element
 * as STREAM counts them; best of many short trials (about 0.5 ms each, so
 * that some trial is not preempted on a shared machine). */
double bench_triad_gbps(void)
{
    enum { N = TRIAD_N, PASSES = 20 };
    float *a = bench_floats(N), *b = bench_floats(N), *c = bench_floats(N);
    for (size_t i = 0; i < N; i++) b[i] = (float)i, c[i] = 1.0f;
    double best = 0;
    for (int trial = 0; trial < 400; trial++) {
        double t0 = bench_now_ns();
        for (int p = 0; p < PASSES; p++) triad(a, b, c, 1.0f + (float)p * 1e-6f);
        double gbps = 12.0 * N * PASSES / (bench_now_ns() - t0);
        if (gbps > best) best = gbps;
    }
    volatile float sink = a[N / 2];
    (void)sink;
    free(a), free(b), free(c);
    return best;
}
