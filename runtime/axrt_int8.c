/* axrt_int8.c — the int8 kernels of `axc --quantize=int8` (axrt.h, "int8";
 * interface.md §7).  Activations arrive as float and are quantised at the
 * kernel's door (axrt_quantize_u8: asymmetric, per tensor, stored offset by
 * 128 as uint8); weights are int8, symmetric per output channel; every dot
 * product accumulates exactly in int32, so every instruction set below
 * produces the same integers:
 *   portable C     4 products per step through the DSP extension's SMLAD
 *                  (ACLE __smlad/__sxtb16/__uxtb16) when __ARM_FEATURE_DSP
 *                  (Cortex-M4/M7/M33), plain C elsewhere;
 *   avx2           bytes widened to int16, pairs summed by vpmaddwd (exact:
 *                  vpmaddubsw would saturate 255 * 127 * 2 in int16);
 *   avx512 + VNNI  vpdpbusd, four u8 x s8 products into each int32 lane.
 * The x86 paths are compiled with __attribute__((target)) and follow the float
 * kernels' choice (axrt_isa_name: AXRT_ISA / axrt_set_isa force it); "avx512"
 * without VNNI on this CPU uses the avx2 dot.  Requantisation is one integer
 * formula (axrt_requantize) shared by all paths.  Freestanding C99. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "axrt.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

/* ---- quantise, requantise ------------------------------------------------ */

static int32_t clamp_i32(int64_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : (int32_t)v;
}

void axrt_quantize_u8(const float *x, uint8_t *q, size_t n, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i++) {
        const float r = roundf(x[i] / scale);   /* half away from zero, exact */
        const int64_t v = r >= 2147483647.0f ? INT32_MAX : r <= -2147483648.0f ? INT32_MIN : (int64_t)r;
        q[i] = (uint8_t)(clamp_i32(v + zp, -128, 127) + 128);
    }
}

int32_t axrt_requantize(int32_t acc, int32_t mult, int shift)
{
    const int64_t p = (int64_t)acc * mult;
    const uint64_t mag = p < 0 ? (uint64_t)0 - (uint64_t)p : (uint64_t)p;
    const int64_t r = (int64_t)((mag + ((uint64_t)1 << (shift - 1))) >> shift);
    return (int32_t)(p < 0 ? -r : r);
}

/* Output channel o of accumulator acc as float: requantised, clamped and
 * dequantised, or (rq->mult NULL) scaled to float directly. */
static float finish(const axrt_requant *rq, int32_t acc, size_t o)
{
    if (!rq->mult)
        return (float)acc * rq->fscale[o];
    const int64_t q = (int64_t)rq->zp + axrt_requantize(acc, rq->mult[o], rq->shift[o]);
    return (float)(clamp_i32(q, rq->lo, rq->hi) - rq->zp) * rq->scale;
}

/* ---- the dot products, one per instruction set ----------------------------- */

typedef int32_t dot_fn(const uint8_t *x, const int8_t *w, size_t n);

static int32_t dot_portable(const uint8_t *x, const int8_t *w, size_t n)
{
    int32_t acc = 0;
    size_t i = 0;
#if defined(__ARM_FEATURE_DSP)
    for (; i + 4 <= n; i += 4) {
        uint32_t xb, wb;
        memcpy(&xb, x + i, 4);
        memcpy(&wb, w + i, 4);
        acc = __smlad(__uxtb16(xb), __sxtb16(wb), acc);
        acc = __smlad(__uxtb16(xb >> 8), __sxtb16(wb >> 8), acc);   /* bytes 1 and 3 */
    }
#endif
    for (; i < n; i++)
        acc += (int32_t)x[i] * w[i];
    return acc;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
#include <immintrin.h>

__attribute__((target("avx2"))) static int32_t dot_avx2(const uint8_t *x, const int8_t *w, size_t n)
{
    __m256i acc = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i xv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(x + i)));
        const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + i)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(xv, wv));
    }
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    int32_t total = _mm_cvtsi128_si32(s);
    for (; i < n; i++)
        total += (int32_t)x[i] * w[i];
    return total;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int32_t dot_vnni(const uint8_t *x,
                                                                               const int8_t *w, size_t n)
{
    __m512i acc = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(x + i), _mm512_loadu_si512(w + i));
    if (i < n) {
        const __mmask64 m = ((__mmask64)1 << (n - i)) - 1; /* n - i < 64 */
        acc = _mm512_dpbusd_epi32(acc, _mm512_maskz_loadu_epi8(m, x + i), _mm512_maskz_loadu_epi8(m, w + i));
    }
    return _mm512_reduce_add_epi32(acc);
}

static dot_fn *pick_dot(void)
{
    const char *isa = axrt_isa_name();
    if (!strcmp(isa, "avx512") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
        return dot_vnni;
    if (!strcmp(isa, "avx512") || !strcmp(isa, "avx2"))
        return dot_avx2;
    return dot_portable;
}
#else
static dot_fn *pick_dot(void) { return dot_portable; }
#endif

const char *axrt_q8_isa_name(void)
{
    dot_fn *dot = pick_dot();
#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
    if (dot == dot_vnni) return "avx512vnni";
    if (dot == dot_avx2) return "avx2";
#endif
    return dot == dot_portable ? "portable" : "?";
}

/* ---- dense and conv ------------------------------------------------------------ */

void axrt_dense_q8(const uint8_t *x, const int8_t *w, const axrt_requant *rq, float *y, size_t rows,
                   size_t in, size_t out)
{
    dot_fn *dot = pick_dot();
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++)
            y[r * out + o] = finish(rq, rq->bias[o] + dot(x + r * in, w + o * in, in), o);
}

/* Sum of the cig weights of one tap: what a padding pixel (every channel at
 * the zero point x_zp) contributes is x_zp times it. */
static int32_t tap_sum(const int8_t *w, size_t cig)
{
    int32_t s = 0;
    for (size_t i = 0; i < cig; i++)
        s += w[i];
    return s;
}

/* One output pixel (n, oy, ox), every output channel. */
static void conv_pixel(dot_fn *dot, const uint8_t *x, int32_t x_zp, const int8_t *w, const axrt_requant *rq,
                       float *y, const axrt_conv2d_params *p, int n, int oy, int ox)
{
    const size_t cig = (size_t)(p->c / p->groups), ocg = (size_t)(p->oc / p->groups);
    for (size_t oc = 0; oc < (size_t)p->oc; oc++) {
        const size_t g = oc / ocg;
        int32_t acc = rq->bias[oc];
        for (int ky = 0; ky < p->kh; ky++)
            for (int kx = 0; kx < p->kw; kx++) {
                const int iy = oy * p->stride_h - p->pad_top + ky * p->dilation_h;
                const int ix = ox * p->stride_w - p->pad_left + kx * p->dilation_w;
                const int8_t *wt = w + ((oc * (size_t)p->kh + (size_t)ky) * (size_t)p->kw + (size_t)kx) * cig;
                if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) {
                    acc += x_zp * tap_sum(wt, cig);
                    continue;
                }
                const uint8_t *xp = x + (((size_t)n * (size_t)p->h + (size_t)iy) * (size_t)p->w + (size_t)ix) * (size_t)p->c + g * cig;
                acc += cig == 1 ? (int32_t)xp[0] * wt[0] : dot(xp, wt, cig);
            }
        y[(((size_t)n * (size_t)p->oh + (size_t)oy) * (size_t)p->ow + (size_t)ox) * (size_t)p->oc + oc] = finish(rq, acc, oc);
    }
}

void axrt_conv2d_q8(const uint8_t *x, int32_t x_zp, const int8_t *w, const axrt_requant *rq, float *y,
                    const axrt_conv2d_params *p)
{
    dot_fn *dot = pick_dot();
    for (int n = 0; n < p->n; n++)
        for (int oy = 0; oy < p->oh; oy++)
            for (int ox = 0; ox < p->ow; ox++)
                conv_pixel(dot, x, x_zp, w, rq, y, p, n, oy, ox);
}
