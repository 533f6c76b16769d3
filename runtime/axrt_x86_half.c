/* axrt_x86_half.c — the x86-64 dense kernels of the half types (axrt_cpu.h
 * axrt_half_ops), compiled with __attribute__((target)) so no special flags
 * are needed:
 *   avx2+f16c     binary16 widened 8 at a time by F16C's vcvtph2ps, bfloat16
 *                 by a 16-bit shift; FMA into float lanes
 *   avx512+f16c   the same 16 at a time (AVX-512F's vcvtph2ps)
 *   avx512+bf16   bfloat16 pairs multiplied and accumulated into float lanes
 *                 by AVX-512 BF16's vdpbf16ps, 32 elements per instruction
 * Each output is one dot product accumulated in float over four outputs at
 * a time (sharing the loads of x), plus bias, rounded once to the storage
 * type.  Empty (but for a declaration) off x86-64, under -DAXRT_NO_SIMD or
 * without GCC/clang. */
#include <stddef.h>
#include <stdint.h>

#include "axrt_cpu.h"

#ifdef AXRT_X86_SIMD
#include <immintrin.h>

#define AVX2_FN static __attribute__((target("avx2,fma,f16c")))
#define AVX512_FN static __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))
#define AVX512BF16_FN static __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* Outputs computed together (the kernels below name their four
 * accumulators). */
#define GROUP 4

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

#define DENSE_AVX2(NAME, LOAD8, WIDEN, BF16)                                          \
    AVX2_FN void NAME(const uint16_t *x, const uint16_t *w, const uint16_t *bias,    \
                      uint16_t *y, size_t rows, size_t in, size_t out)               \
    {                                                                                \
        size_t r, o, k;                                                              \
        for (r = 0; r < rows; r++) {                                                 \
            const uint16_t *xr = x + r * in;                                         \
            for (o = 0; o < out; o += GROUP) {                                       \
                const uint16_t *wr[GROUP];                                           \
                const size_t nb = group_rows(w, in, o, out, wr);                     \
                __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;         \
                float sums[GROUP];                                                   \
                for (k = 0; k + 8 <= in; k += 8) {                                   \
                    const __m256 xv = LOAD8(xr + k);                                 \
                    a0 = _mm256_fmadd_ps(xv, LOAD8(wr[0] + k), a0);                  \
                    a1 = _mm256_fmadd_ps(xv, LOAD8(wr[1] + k), a1);                  \
                    a2 = _mm256_fmadd_ps(xv, LOAD8(wr[2] + k), a2);                  \
                    a3 = _mm256_fmadd_ps(xv, LOAD8(wr[3] + k), a3);                  \
                }                                                                    \
                sums[0] = hsum8(a0), sums[1] = hsum8(a1);                            \
                sums[2] = hsum8(a2), sums[3] = hsum8(a3);                            \
                finish_group(sums, xr, wr, k, in, bias, o, nb, y + r * out, WIDEN, BF16); \
            }                                                                        \
        }                                                                            \
    }

DENSE_AVX2(dense_f16_avx2, load8_f16, widen_f16, 0)
DENSE_AVX2(dense_bf16_avx2, load8_bf16, widen_bf16, 1)

static const axrt_half_ops avx2_ops = {"avx2+f16c", dense_f16_avx2, dense_bf16_avx2};

const axrt_half_ops *axrt_half_ops_avx2(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                   __builtin_cpu_supports("f16c")
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

#define DENSE_AVX512(NAME, LOAD16, WIDEN, BF16)                                       \
    AVX512_FN void NAME(const uint16_t *x, const uint16_t *w, const uint16_t *bias,  \
                        uint16_t *y, size_t rows, size_t in, size_t out)             \
    {                                                                                \
        size_t r, o, k;                                                              \
        for (r = 0; r < rows; r++) {                                                 \
            const uint16_t *xr = x + r * in;                                         \
            for (o = 0; o < out; o += GROUP) {                                       \
                const uint16_t *wr[GROUP];                                           \
                const size_t nb = group_rows(w, in, o, out, wr);                     \
                __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;         \
                float sums[GROUP];                                                   \
                for (k = 0; k + 16 <= in; k += 16) {                                 \
                    const __m512 xv = LOAD16(xr + k);                                \
                    a0 = _mm512_fmadd_ps(xv, LOAD16(wr[0] + k), a0);                 \
                    a1 = _mm512_fmadd_ps(xv, LOAD16(wr[1] + k), a1);                 \
                    a2 = _mm512_fmadd_ps(xv, LOAD16(wr[2] + k), a2);                 \
                    a3 = _mm512_fmadd_ps(xv, LOAD16(wr[3] + k), a3);                 \
                }                                                                    \
                sums[0] = _mm512_reduce_add_ps(a0), sums[1] = _mm512_reduce_add_ps(a1); \
                sums[2] = _mm512_reduce_add_ps(a2), sums[3] = _mm512_reduce_add_ps(a3); \
                finish_group(sums, xr, wr, k, in, bias, o, nb, y + r * out, WIDEN, BF16); \
            }                                                                        \
        }                                                                            \
    }

DENSE_AVX512(dense_f16_avx512, load16_f16, widen_f16, 0)
DENSE_AVX512(dense_bf16_avx512, load16_bf16, widen_bf16, 1)

/* vdpbf16ps: lane i += x[2i] * w[2i] + x[2i+1] * w[2i+1], products exact in
 * float; the tail is a zero-masked load, so no scalar remainder. */
AVX512BF16_FN void dense_bf16_dpbf16(const uint16_t *x, const uint16_t *w, const uint16_t *bias,
                                     uint16_t *y, size_t rows, size_t in, size_t out)
{
    size_t r, o, k;
    for (r = 0; r < rows; r++) {
        const uint16_t *xr = x + r * in;
        for (o = 0; o < out; o += GROUP) {
            const uint16_t *wr[GROUP];
            const size_t nb = group_rows(w, in, o, out, wr);
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            float sums[GROUP];
            for (k = 0; k < in; k += 32) {
                const __mmask32 m = in - k >= 32 ? (__mmask32)0xffffffffu
                                                 : (__mmask32)((1u << (in - k)) - 1u);
                const __m512bh xv = (__m512bh)_mm512_maskz_loadu_epi16(m, xr + k);
                a0 = _mm512_dpbf16_ps(a0, xv, (__m512bh)_mm512_maskz_loadu_epi16(m, wr[0] + k));
                a1 = _mm512_dpbf16_ps(a1, xv, (__m512bh)_mm512_maskz_loadu_epi16(m, wr[1] + k));
                a2 = _mm512_dpbf16_ps(a2, xv, (__m512bh)_mm512_maskz_loadu_epi16(m, wr[2] + k));
                a3 = _mm512_dpbf16_ps(a3, xv, (__m512bh)_mm512_maskz_loadu_epi16(m, wr[3] + k));
            }
            sums[0] = _mm512_reduce_add_ps(a0), sums[1] = _mm512_reduce_add_ps(a1);
            sums[2] = _mm512_reduce_add_ps(a2), sums[3] = _mm512_reduce_add_ps(a3);
            finish_group(sums, xr, wr, in, in, bias, o, nb, y + r * out, widen_bf16, 1);
        }
    }
}

static const axrt_half_ops avx512_ops = {"avx512+f16c", dense_f16_avx512, dense_bf16_avx512};
static const axrt_half_ops avx512_bf16_ops = {"avx512+bf16", dense_f16_avx512, dense_bf16_dpbf16};

const axrt_half_ops *axrt_half_ops_avx512(void)
{
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("f16c"))
        return NULL;
    return __builtin_cpu_supports("avx512bf16") ? &avx512_bf16_ops : &avx512_ops;
}

#else
typedef int axrt_x86_half_unused; /* ISO C forbids an empty translation unit */
#endif
