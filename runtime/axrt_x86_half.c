/* axrt_x86_half.c — the x86-64 dense kernels of the half types (axrt_cpu.h
 * axrt_half_ops), compiled with __attribute__((target)) so no special flags
 * are needed:
 *   avx2+f16c     binary16 widened 8 at a time by F16C's vcvtph2ps, bfloat16
 *                 by a 16-bit shift; FMA into float lanes
 *   avx512+f16c   the same 16 at a time (AVX-512F's vcvtph2ps)
 *   avx512+bf16   bfloat16 pairs multiplied and accumulated into float lanes
 *                 by AVX-512 BF16's vdpbf16ps, 32 elements per instruction
 * Each output is one dot product accumulated in float, in register blocks
 * of rows x four outputs (each widened weight vector serves every row of
 * the block), plus bias, rounded once to the storage type.  Empty (but for a declaration) off x86-64, under -DAXRT_NO_SIMD or
 * without GCC/clang. */
#include <stddef.h>
#include <stdint.h>

#include "axrt_cpu.h"

#ifdef AXRT_X86_SIMD
#include <cpuid.h>
#include <immintrin.h>

/* F16C (CPUID leaf 1, ECX bit 29): clang's __builtin_cpu_supports lacks it. */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}

#define AVX2_FN static __attribute__((target("avx2,fma,f16c")))
#define AVX512_FN static __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))
#define AVX512BF16_FN static __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* Outputs computed together. */
#define GROUP 4
/* Fully unrolled constant loops, so that the accumulator blocks live in
   registers (GCC and clang both read GCC's spelling). */
#define UNROLL _Pragma("GCC unroll 16")

typedef float widen_fn(uint16_t v);

/* Finishes a group: y[o + j] = round(bias + lane sum + the scalar tail). */
static void finish_group(const float *sums, const uint16_t *xr, const uint16_t *const *wr,
                         size_t k, size_t in, const uint16_t *bias, size_t o, size_t nb,
                         uint16_t *y, widen_fn *widen, int bf16)
{
    size_t j, p;
    for (j = 0; j < nb; j++) {
        float s = sums[j];
        for (p = k; p < in; p++) s += widen(xr[p]) * widen(wr[j][p]);
        if (bias) s = widen(bias[o + j]) + s;
        y[o + j] = bf16 ? axrt_float_to_bf16(s) : axrt_float_to_half(s);
    }
}

/* The rows of w of outputs o .. o+GROUP-1, repeating the last real one past
 * out (computed and dropped) so that the inner loops have a fixed width. */
static size_t group_rows(const uint16_t *w, size_t in, size_t o, size_t out, const uint16_t **wr)
{
    const size_t nb = out - o < GROUP ? out - o : GROUP;
    size_t j;
    for (j = 0; j < GROUP; j++) wr[j] = w + (o + (j < nb ? j : nb - 1)) * in;
    return nb;
}

static float widen_f16(uint16_t v) { return axrt_half_to_float(v); }
static float widen_bf16(uint16_t v) { return axrt_bf16_to_float(v); }

/* ---- AVX2 + F16C ---------------------------------------------------------- */

AVX2_FN float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

AVX2_FN __m256 load8_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

AVX2_FN __m256 load8_bf16(const uint16_t *p)
{
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

/* y[r, o] for a block of RB rows times GROUP outputs: the GROUP weight
 * vectors of each step are widened once and used for all RB rows (rows past
 * the end repeat the last one; computed and dropped). */
#define DENSE_BLOCKED(NAME, ATTR, VEC, VW, ZERO, FMA, HSUM, LOADV, WIDEN, BF16, RB)        \
    ATTR void NAME(const uint16_t *x, const uint16_t *w, const uint16_t *bias, uint16_t *y, \
                   size_t rows, size_t in, size_t out)                                   \
    {                                                                                    \
        size_t r0, o, k, i, j;                                                           \
        for (r0 = 0; r0 < rows; r0 += RB) {                                              \
            const size_t nr = rows - r0 < RB ? rows - r0 : RB;                           \
            const uint16_t *xr[RB];                                                      \
            for (i = 0; i < RB; i++) xr[i] = x + (r0 + (i < nr ? i : nr - 1)) * in;      \
            for (o = 0; o < out; o += GROUP) {                                           \
                const uint16_t *wr[GROUP];                                               \
                const size_t nb = group_rows(w, in, o, out, wr);                         \
                VEC acc[RB][GROUP];                                                      \
                float sums[GROUP];                                                       \
                UNROLL for (i = 0; i < RB; i++)                                          \
                    UNROLL for (j = 0; j < GROUP; j++) acc[i][j] = ZERO();               \
                for (k = 0; k + VW <= in; k += VW) {                                     \
                    VEC wv[GROUP];                                                       \
                    UNROLL for (j = 0; j < GROUP; j++) wv[j] = LOADV(wr[j] + k);         \
                    UNROLL for (i = 0; i < RB; i++) {                                    \
                        const VEC xv = LOADV(xr[i] + k);                                 \
                        UNROLL for (j = 0; j < GROUP; j++)                               \
                            acc[i][j] = FMA(xv, wv[j], acc[i][j]);                       \
                    }                                                                    \
                }                                                                        \
                UNROLL for (i = 0; i < RB; i++) { /* constant bounds: acc stays in registers */ \
                    if (i >= nr) break;                                                  \
                    UNROLL for (j = 0; j < GROUP; j++) sums[j] = HSUM(acc[i][j]);        \
                    finish_group(sums, xr[i], wr, k, in, bias, o, nb, y + (r0 + i) * out, \
                                 WIDEN, BF16);                                           \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }

/* 2 rows x 4 outputs: 8 accumulators, 4 weight vectors and x in 16 ymm registers */
DENSE_BLOCKED(dense_f16_avx2, AVX2_FN, __m256, 8, _mm256_setzero_ps, _mm256_fmadd_ps, hsum8,
              load8_f16, widen_f16, 0, 2)
DENSE_BLOCKED(dense_bf16_avx2, AVX2_FN, __m256, 8, _mm256_setzero_ps, _mm256_fmadd_ps, hsum8,
              load8_bf16, widen_bf16, 1, 2)
static const axrt_half_ops avx2_ops = {"avx2+f16c", dense_f16_avx2, dense_bf16_avx2};

const axrt_half_ops *axrt_half_ops_avx2(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c()
               ? &avx2_ops
               : NULL;
}

/* ---- AVX-512 ---------------------------------------------------------------- */

AVX512_FN __m512 load16_f16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
}

AVX512_FN __m512 load16_bf16(const uint16_t *p)
{
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

AVX512_FN float hsum16(__m512 v) { return _mm512_reduce_add_ps(v); }

/* 4 rows x 4 outputs: 16 accumulators, 4 weight vectors and x in 32 zmm registers */
DENSE_BLOCKED(dense_f16_avx512, AVX512_FN, __m512, 16, _mm512_setzero_ps, _mm512_fmadd_ps, hsum16,
              load16_f16, widen_f16, 0, 4)
DENSE_BLOCKED(dense_bf16_avx512, AVX512_FN, __m512, 16, _mm512_setzero_ps, _mm512_fmadd_ps, hsum16,
              load16_bf16, widen_bf16, 1, 4)

/* vdpbf16ps: lane i += x[2i] * w[2i] + x[2i+1] * w[2i+1], products exact in
 * float; the tail is a zero-masked load, so no scalar remainder. */
AVX512BF16_FN __m512 dpbf16(__m512i x, __m512i w, __m512 acc)
{
    return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
}

/* The tail is a zero-masked load, so no scalar remainder: the blocked
 * kernel's step with VW 32 over in rounded up. */
AVX512BF16_FN void dense_bf16_dpbf16(const uint16_t *x, const uint16_t *w, const uint16_t *bias,
                                     uint16_t *y, size_t rows, size_t in, size_t out)
{
    enum { RB = 4 };
    size_t r0, o, k, i, j;
    for (r0 = 0; r0 < rows; r0 += RB) {
        const size_t nr = rows - r0 < RB ? rows - r0 : RB;
        const uint16_t *xr[RB];
        for (i = 0; i < RB; i++) xr[i] = x + (r0 + (i < nr ? i : nr - 1)) * in;
        for (o = 0; o < out; o += GROUP) {
            const uint16_t *wr[GROUP];
            const size_t nb = group_rows(w, in, o, out, wr);
            __m512 acc[RB][GROUP];
            float sums[GROUP];
            UNROLL for (i = 0; i < RB; i++)
                UNROLL for (j = 0; j < GROUP; j++) acc[i][j] = _mm512_setzero_ps();
            for (k = 0; k < in; k += 32) {
                const __mmask32 m = in - k >= 32 ? (__mmask32)0xffffffffu
                                                 : (__mmask32)((1u << (in - k)) - 1u);
                __m512i wv[GROUP];
                UNROLL for (j = 0; j < GROUP; j++) wv[j] = _mm512_maskz_loadu_epi16(m, wr[j] + k);
                UNROLL for (i = 0; i < RB; i++) {
                    const __m512i xv = _mm512_maskz_loadu_epi16(m, xr[i] + k);
                    UNROLL for (j = 0; j < GROUP; j++) acc[i][j] = dpbf16(xv, wv[j], acc[i][j]);
                }
            }
            UNROLL for (i = 0; i < RB; i++) { /* constant bounds: acc stays in registers */
                if (i >= nr) break;
                UNROLL for (j = 0; j < GROUP; j++) sums[j] = _mm512_reduce_add_ps(acc[i][j]);
                finish_group(sums, xr[i], wr, in, in, bias, o, nb, y + (r0 + i) * out, widen_bf16, 1);
            }
        }
    }
}

static const axrt_half_ops avx512_ops = {"avx512+f16c", dense_f16_avx512, dense_bf16_avx512};
static const axrt_half_ops avx512_bf16_ops = {"avx512+bf16", dense_f16_avx512, dense_bf16_dpbf16};

const axrt_half_ops *axrt_half_ops_avx512(void)
{
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !has_f16c())
        return NULL;
    return __builtin_cpu_supports("avx512bf16") ? &avx512_bf16_ops : &avx512_ops;
}

#else
typedef int axrt_x86_half_unused; /* ISO C forbids an empty translation unit */
#endif
