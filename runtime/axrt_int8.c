/* axrt_int8.c — the int8 kernels of `axc --quantize=int8` (axrt.h, "int8";
 * docs/precision.md#int8-post-training-quantisation).  Activations arrive as float and are quantised at the
 * kernel's door (axrt_quantize_u8: asymmetric, per tensor, stored offset by
 * 128 as uint8), or arrive so from the int8 layer before (whose result the
 * kernel then stores as bytes, rq->flags AXRT_Q8_OUT_BYTES, not floats); an int8 max-pool works
 * on those bytes; weights are int8, symmetric per output channel; every dot
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
 * without VNNI on this CPU uses the avx2 dot.
 * The generated code calls the _packed kernels: dense and ungrouped conv as a
 * register-tiled GEMM on weights packed at compile time (axrt_q8.h; tiles in
 * axrt_x86_int8.c, a scalar/SMLAD tile here); grouped convs keep the plain
 * layout and the dot products above; depthwise convs sum channel blocks over
 * the taps (tap-major weights when packed).  Requantisation is one integer
 * formula (axrt_requantize, axrt_q8_arith.h) shared by all paths; the
 * scalar kernels that every table ends on are axrt_int8_scalar.c's.
 * Freestanding C99. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "axrt.h"
#include "axrt_cpu.h"
#include "axrt_q8.h"
#include "axrt_q8_arith.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

/* ---- quantise, requantise ------------------------------------------------ */

/* round_half_away(x / scale) + zp clamped to int8, + 128.  The quotient is
 * clamped to +-1024 first (the result is clamped to [-128, 127] anyway, and
 * NaN becomes -1024), so the truncation below is exact and the loop has no
 * library call: rounding half away is the truncation plus the sign where the
 * dropped fraction is at least one half (exact in float). */
static int32_t round_away_clamped(float r)
{
    r = r > 1024.0f ? 1024.0f : r >= -1024.0f ? r : -1024.0f;
    int32_t t = (int32_t)r;
    const float frac = r - (float)t;
    return t + (frac >= 0.5f ? 1 : frac <= -0.5f ? -1 : 0);
}

static void quantize_portable(const float *x, uint8_t *q, size_t n, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i++) {
        const int32_t v = round_away_clamped(x[i] / scale) + zp;
        q[i] = (uint8_t)((v < -128 ? -128 : v > 127 ? 127 : v) + 128);
    }
}

/* Element i of the kernel's output y (float, or uint8_t under AXRT_Q8_OUT_BYTES). */
static void *out_at(const axrt_requant *rq, void *y, size_t i)
{
    return (unsigned char *)y + i * ((rq->flags & AXRT_Q8_OUT_BYTES) ? 1 : sizeof(float));
}

/* ---- the dot products, one per instruction set ----------------------------- */

typedef int32_t dot_fn(const uint8_t *x, const int8_t *w, size_t n);
/* out[j] = dot(x, w + j * stride, n) for j < 4: one pass over x for four rows of w */
typedef void dot4_fn(const uint8_t *x, const int8_t *w, size_t stride, size_t n, int32_t *out);
typedef struct dot_impl {
    dot_fn *one;
    dot4_fn *four;
} dot_impl;

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

static void dot4_portable(const uint8_t *x, const int8_t *w, size_t stride, size_t n, int32_t *out)
{
    for (int j = 0; j < 4; j++)
        out[j] = dot_portable(x, w + (size_t)j * stride, n);
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

__attribute__((target("avx2"))) static void dot4_avx2(const uint8_t *x, const int8_t *w, size_t stride,
                                                      size_t n, int32_t *out)
{
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;   /* in registers, not an array */
    const int8_t *w1 = w + stride, *w2 = w1 + stride, *w3 = w2 + stride;
    size_t i = 0;
#define DOT4_AVX2_ROW(acc, row) \
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(xv, _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)((row) + i)))))
    for (; i + 16 <= n; i += 16) {
        const __m256i xv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(x + i)));
        DOT4_AVX2_ROW(a0, w);
        DOT4_AVX2_ROW(a1, w1);
        DOT4_AVX2_ROW(a2, w2);
        DOT4_AVX2_ROW(a3, w3);
    }
#undef DOT4_AVX2_ROW
    /* horizontal sums of the four at once */
    const __m256i s01 = _mm256_hadd_epi32(a0, a1), s23 = _mm256_hadd_epi32(a2, a3);
    const __m256i s = _mm256_hadd_epi32(s01, s23);
    const __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    _mm_storeu_si128((__m128i *)out, t);
    for (; i < n; i++)
        for (int j = 0; j < 4; j++)
            out[j] += (int32_t)x[i] * w[(size_t)j * stride + i];
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void dot4_vnni(const uint8_t *x, const int8_t *w,
                                                                            size_t stride, size_t n, int32_t *out)
{
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;   /* in registers, not an array */
    const int8_t *w1 = w + stride, *w2 = w1 + stride, *w3 = w2 + stride;
    for (size_t i = 0; i < n; i += 64) {
        const __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        const __m512i xv = _mm512_maskz_loadu_epi8(m, x + i);
        a0 = _mm512_dpbusd_epi32(a0, xv, _mm512_maskz_loadu_epi8(m, w + i));
        a1 = _mm512_dpbusd_epi32(a1, xv, _mm512_maskz_loadu_epi8(m, w1 + i));
        a2 = _mm512_dpbusd_epi32(a2, xv, _mm512_maskz_loadu_epi8(m, w2 + i));
        a3 = _mm512_dpbusd_epi32(a3, xv, _mm512_maskz_loadu_epi8(m, w3 + i));
    }
    out[0] = _mm512_reduce_add_epi32(a0);
    out[1] = _mm512_reduce_add_epi32(a1);
    out[2] = _mm512_reduce_add_epi32(a2);
    out[3] = _mm512_reduce_add_epi32(a3);
}

static dot_impl pick_dot(void)
{
    const char *isa = axrt_vector_isa(axrt_isa_name());
    if (!strcmp(isa, "avx512") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
        return (dot_impl){dot_vnni, dot4_vnni};
    if (!strcmp(isa, "avx512") || !strcmp(isa, "avx2"))
        return (dot_impl){dot_avx2, dot4_avx2};
    return (dot_impl){dot_portable, dot4_portable};
}
/* quantize_portable, sixteen lanes at a time: the same float operations. */
__attribute__((target("avx512f"))) static void quantize_avx512(const float *x, uint8_t *q, size_t n, float scale,
                                                            int32_t zp)
{
    const __m512 s = _mm512_set1_ps(scale), hi = _mm512_set1_ps(1024.0f), lo = _mm512_set1_ps(-1024.0f);
    const __m512 half = _mm512_set1_ps(0.5f), mhalf = _mm512_set1_ps(-0.5f);
    const __m512i z = _mm512_set1_epi32(zp + 128), one = _mm512_set1_epi32(1);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 r = _mm512_div_ps(_mm512_loadu_ps(x + i), s);
        r = _mm512_min_ps(r, hi);
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r, lo, _CMP_GE_OQ), lo, r);   /* NaN -> -1024 */
        __m512i t = _mm512_cvttps_epi32(r);
        const __m512 frac = _mm512_sub_ps(r, _mm512_cvtepi32_ps(t));
        t = _mm512_mask_add_epi32(t, _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ), t, one);
        t = _mm512_mask_sub_epi32(t, _mm512_cmp_ps_mask(frac, mhalf, _CMP_LE_OQ), t, one);
        t = _mm512_add_epi32(t, z);
        t = _mm512_min_epi32(_mm512_max_epi32(t, _mm512_setzero_si512()), _mm512_set1_epi32(255));
        _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtepi32_epi8(t));
    }
    quantize_portable(x + i, q + i, n - i, scale, zp);
}

static bool quantize_wide(void)
{
    return !strcmp(axrt_vector_isa(axrt_isa_name()), "avx512");
}
#else
static dot_impl pick_dot(void) { return (dot_impl){dot_portable, dot4_portable}; }
#endif

void axrt_quantize_u8(const float *x, uint8_t *q, size_t n, float scale, int32_t zp)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
    if (quantize_wide()) {
        quantize_avx512(x, q, n, scale, zp);
        return;
    }
#endif
    quantize_portable(x, q, n, scale, zp);
}

const char *axrt_q8_isa_name(void)
{
    dot_fn *dot = pick_dot().one;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
    if (dot == dot_vnni) return "avx512vnni";
    if (dot == dot_avx2) return "avx2";
#endif
    return dot == dot_portable ? "portable" : "?";
}

/* y[o] for o in [0, count): rows of w k apart, four at a time. */
static void dot_rows(dot_impl d, const uint8_t *x, const int8_t *w, size_t k, size_t first, size_t count,
                     const axrt_requant *rq, void *y)
{
    size_t o = first;
    int32_t acc[4];
    for (; o + 4 <= first + count; o += 4) {
        d.four(x, w + o * k, k, k, acc);
        for (size_t j = 0; j < 4; j++)
            axrt_q8_finish_one(rq, rq->bias[o + j] + acc[j], o + j, y, o + j);
    }
    for (; o < first + count; o++)
        axrt_q8_finish_one(rq, rq->bias[o] + d.one(x, w + o * k, k), o, y, o);
}

/* ---- dense and conv ------------------------------------------------------------ */

void axrt_dense_q8(const uint8_t *x, const int8_t *w, const axrt_requant *rq, void *y, size_t rows,
                   size_t in, size_t out)
{
    const dot_impl d = pick_dot();
    for (size_t r = 0; r < rows; r++)
        dot_rows(d, x + r * in, w, in, 0, out, rq, out_at(rq, y, r * out));
}

/* Gathers the receptive field of output pixel (n, oy, ox) for group g into
 * patch [kh, kw, cig], padding at the zero point x_zp. */
static void gather_patch(const uint8_t *x, uint8_t x_zp, const axrt_conv2d_params *p, int n, int oy, int ox,
                         size_t g, uint8_t *patch)
{
    const size_t cig = (size_t)(p->c / p->groups);
    for (int ky = 0; ky < p->kh; ky++)
        for (int kx = 0; kx < p->kw; kx++, patch += cig) {
            const int iy = oy * p->stride_h - p->pad_top + ky * p->dilation_h;
            const int ix = ox * p->stride_w - p->pad_left + kx * p->dilation_w;
            if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w)
                memset(patch, x_zp, cig);
            else
                memcpy(patch, x + (((size_t)n * (size_t)p->h + (size_t)iy) * (size_t)p->w + (size_t)ix) * (size_t)p->c + g * cig, cig);
        }
}

size_t axrt_conv2d_q8_scratch(const axrt_conv2d_params *p)
{
    return (size_t)p->kh * (size_t)p->kw * (size_t)(p->c / p->groups);
}

/* Depthwise (one input channel per group, one output channel per input
 * channel): per output pixel, every tap adds x * w to 64 channels' int32 sums
 * at once (the padding reads x_zp), the same exact sums as the dot products,
 * without a receptive-field copy.  Weight (channel k, tap t) is
 * w[k * taps + t] (plain: a scalar loop) or, tap_major (packed),
 * w[t * c + k]: the instruction set's dw_sum (axrt_q8.h) when the taps are
 * at most Q8_TAPS_MAX. */
#define Q8_DW_BLOCK AXRT_Q8_DW_BLOCK
#define Q8_TAPS_MAX 64
static const axrt_q8_gemm_ops *pick_gemm(void);

static bool is_depthwise(const axrt_conv2d_params *p)
{
    return p->groups > 1 && p->groups == p->c && p->oc == p->c;
}

void axrt_q8_dw_sum_portable(const uint8_t *const *x, const int8_t *w, size_t ldw, size_t taps, size_t nc,
                             int32_t *acc)
{
    for (size_t k = 0; k < nc; k++)
        acc[k] = 0;
    for (size_t t = 0; t < taps; t++)
        for (size_t k = 0; k < nc; k++)
            acc[k] += (int32_t)x[t][k] * w[t * ldw + k];
}

/* The tap-major depthwise conv through the instruction set's dw_sum: per
 * output pixel the taps' input pixels (zp_row outside the image), then the
 * channel blocks' sums and the epilogue. */
static void depthwise_q8_taps(const uint8_t *x, int32_t x_zp, const int8_t *w, const axrt_requant *rq, void *y,
                              const axrt_conv2d_params *p)
{
    const axrt_q8_gemm_ops *g = pick_gemm();
    const size_t c = (size_t)p->c, taps = (size_t)p->kh * (size_t)p->kw;
    uint8_t zp_row[Q8_DW_BLOCK];
    const uint8_t *rows[Q8_TAPS_MAX], *at[Q8_TAPS_MAX];
    int32_t acc[Q8_DW_BLOCK];
    size_t pix = 0;
    memset(zp_row, x_zp, sizeof zp_row);
    for (int n = 0; n < p->n; n++)
        for (int oy = 0; oy < p->oh; oy++)
            for (int ox = 0; ox < p->ow; ox++, pix++) {
                size_t t = 0;
                for (int ky = 0; ky < p->kh; ky++) {
                    const int iy = oy * p->stride_h - p->pad_top + ky * p->dilation_h;
                    const bool inside = iy >= 0 && iy < p->h;
                    const uint8_t *line = inside ? x + ((size_t)n * (size_t)p->h + (size_t)iy) * (size_t)p->w * c : NULL;
                    for (int kx = 0; kx < p->kw; kx++, t++) {
                        const int ix = ox * p->stride_w - p->pad_left + kx * p->dilation_w;
                        rows[t] = !inside || ix < 0 || ix >= p->w ? NULL : line + (size_t)ix * c;
                    }
                }
                for (size_t c0 = 0; c0 < c; c0 += Q8_DW_BLOCK) {
                    const size_t nc = c - c0 < Q8_DW_BLOCK ? c - c0 : Q8_DW_BLOCK;
                    for (t = 0; t < taps; t++)
                        at[t] = rows[t] ? rows[t] + c0 : zp_row;
                    g->dw_sum(at, w + c0, c, taps, nc, acc);
                    g->finish(rq, acc, c0, nc, out_at(rq, y, pix * c + c0));
                }
            }
}

static void depthwise_q8(const uint8_t *x, int32_t x_zp, const int8_t *w, bool tap_major, const axrt_requant *rq,
                         void *y, const axrt_conv2d_params *p)
{
    const size_t c = (size_t)p->c, taps = (size_t)p->kh * (size_t)p->kw;
    if (tap_major && taps <= Q8_TAPS_MAX) {
        depthwise_q8_taps(x, x_zp, w, rq, y, p);
        return;
    }
    const size_t kstep = tap_major ? 1 : taps, tstep = tap_major ? c : 1;
    axrt_q8_finish_fn *const fin = pick_gemm()->finish;   /* the instruction set's requantisation */
    int32_t acc[Q8_DW_BLOCK];
    for (size_t pix = 0; pix < (size_t)p->n * (size_t)p->oh * (size_t)p->ow; pix++) {
        const int ox = (int)(pix % (size_t)p->ow), oy = (int)(pix / (size_t)p->ow % (size_t)p->oh);
        const size_t n = pix / ((size_t)p->ow * (size_t)p->oh);
        for (size_t c0 = 0; c0 < c; c0 += Q8_DW_BLOCK) {
            const size_t nc = c - c0 < Q8_DW_BLOCK ? c - c0 : Q8_DW_BLOCK;
            memset(acc, 0, sizeof acc);
            for (int ky = 0; ky < p->kh; ky++)
                for (int kx = 0; kx < p->kw; kx++) {
                    const int iy = oy * p->stride_h - p->pad_top + ky * p->dilation_h;
                    const int ix = ox * p->stride_w - p->pad_left + kx * p->dilation_w;
                    const int8_t *wt = w + c0 * kstep + (size_t)(ky * p->kw + kx) * tstep;
                    if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) {
                        for (size_t k = 0; k < nc; k++)
                            acc[k] += x_zp * wt[k * kstep];
                        continue;
                    }
                    const uint8_t *xp = x + ((n * (size_t)p->h + (size_t)iy) * (size_t)p->w + (size_t)ix) * c + c0;
                    if (tap_major)
                        for (size_t k = 0; k < nc; k++)
                            acc[k] += (int32_t)xp[k] * wt[k];
                    else
                        for (size_t k = 0; k < nc; k++)
                            acc[k] += (int32_t)xp[k] * wt[k * kstep];
                }
            fin(rq, acc, c0, nc, out_at(rq, y, pix * c + c0));
        }
    }
}

void axrt_conv2d_q8(const uint8_t *x, int32_t x_zp, const int8_t *w, const axrt_requant *rq, void *y,
                    uint8_t *patch, const axrt_conv2d_params *p)
{
    if (is_depthwise(p)) {
        depthwise_q8(x, x_zp, w, false, rq, y, p);
        return;
    }
    const dot_impl d = pick_dot();
    const size_t k = axrt_conv2d_q8_scratch(p), ocg = (size_t)(p->oc / p->groups);
    for (int n = 0; n < p->n; n++)
        for (int oy = 0; oy < p->oh; oy++)
            for (int ox = 0; ox < p->ow; ox++) {
                void *out = out_at(rq, y, (((size_t)n * (size_t)p->oh + (size_t)oy) * (size_t)p->ow + (size_t)ox) * (size_t)p->oc);
                for (size_t g = 0; g < (size_t)p->groups; g++) {
                    gather_patch(x, (uint8_t)x_zp, p, n, oy, ox, g, patch);
                    dot_rows(d, patch, w, k, g * ocg, ocg, rq, out);
                }
            }
}

/* ---- the packed GEMM (axrt_q8.h) ------------------------------------------------ */

/* One channel of one row over the packed layout: w is the channel's first
 * four bytes, step the distance between its groups. */
static int32_t packed_dot(const axrt_q8_tile *t, size_t r, const int8_t *w, size_t step)
{
    int32_t acc = 0;
    for (size_t s = 0; s < t->nseg; s++) {
        const uint8_t *x = t->rows[s * t->mr + r];
        size_t k = 0;
        for (; k + 4 <= t->seg_len; k += 4, w += step) {
#if defined(__ARM_FEATURE_DSP)
            uint32_t xb, wb;
            memcpy(&xb, x + k, 4);
            memcpy(&wb, w, 4);
            acc = __smlad(__uxtb16(xb), __sxtb16(wb), acc);
            acc = __smlad(__uxtb16(xb >> 8), __sxtb16(wb >> 8), acc);   /* bytes 1 and 3 */
#else
            acc += (int32_t)x[k] * w[0] + (int32_t)x[k + 1] * w[1] + (int32_t)x[k + 2] * w[2] +
                   (int32_t)x[k + 3] * w[3];
#endif
        }
        if (k < t->seg_len) {
            for (size_t i = 0; k + i < t->seg_len; i++)
                acc += (int32_t)x[k + i] * w[i];
            w += step;
        }
    }
    return acc;
}

static void tile_portable(const axrt_q8_tile *t)
{
    const size_t kp = t->nseg * axrt_q8_round4(t->seg_len);
    for (size_t j = 0; j < t->nc; j++) {
        const size_t col = t->c0 + j, first = col - col % AXRT_Q8_BLOCK;
        const size_t wb = t->out - first < AXRT_Q8_BLOCK ? t->out - first : AXRT_Q8_BLOCK;
        const int8_t *w = t->packed + first * kp + (col - first) * 4;
        for (size_t r = 0; r < t->mr; r++)
            t->acc[r * t->ldacc + j] = packed_dot(t, r, w, wb * 4);
    }
}

static const axrt_q8_gemm_ops gemm_portable = {"portable", 1, 16, tile_portable, axrt_q8_finish_portable,
                                                axrt_q8_dw_sum_portable, axrt_q8_add_portable,
                                                axrt_q8_rescale_portable};

/* The GEMM of the instruction set pick_dot chooses. */
static const axrt_q8_gemm_ops *pick_gemm(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
    const char *isa = axrt_vector_isa(axrt_isa_name());
    const axrt_q8_gemm_ops *g;
    if (!strcmp(isa, "avx512") && (g = axrt_q8_gemm_vnni()) != NULL)
        return g;
    if ((!strcmp(isa, "avx512") || !strcmp(isa, "avx2")) && (g = axrt_q8_gemm_avx2()) != NULL)
        return g;
#endif
    return &gemm_portable;
}

void axrt_q8_pack(const int8_t *w, size_t out, size_t nseg, size_t seg_len, int8_t *packed)
{
    const size_t padded = axrt_q8_round4(seg_len), kp = nseg * padded;
    for (size_t first = 0; first < out; first += AXRT_Q8_BLOCK) {
        const size_t wb = out - first < AXRT_Q8_BLOCK ? out - first : AXRT_Q8_BLOCK;
        int8_t *block = packed + first * kp;
        for (size_t j = 0; j < wb; j++)
            for (size_t s = 0; s < nseg; s++)
                for (size_t k = 0; k < padded; k++) {
                    const size_t kk = s * padded + k;
                    block[(kk / 4 * wb + j) * 4 + kk % 4] =
                        k < seg_len ? w[(first + j) * nseg * seg_len + s * seg_len + k] : 0;
                }
    }
}

size_t axrt_dense_q8_pack(const int8_t *w, size_t in, size_t out, int8_t *packed)
{
    if (packed)
        axrt_q8_pack(w, out, 1, in, packed);
    return out * axrt_q8_round4(in);
}

/* How conv p's packed K splits: one segment per tap, read in place, when the
 * taps are few and either c % 4 == 0 or there is one tap; else one segment,
 * the gathered receptive field.  nseg 0: grouped, not packed. */
static void conv_segments(const axrt_conv2d_params *p, size_t *nseg, size_t *seg_len)
{
    const size_t taps = (size_t)p->kh * (size_t)p->kw, c = (size_t)p->c;
    if (p->groups != 1)
        *nseg = 0, *seg_len = 0;
    else if (taps <= Q8_TAPS_MAX && (c % 4 == 0 || taps == 1))
        *nseg = taps, *seg_len = c;
    else
        *nseg = 1, *seg_len = taps * c;
}

size_t axrt_conv2d_q8_pack(const int8_t *w, const axrt_conv2d_params *p, int8_t *packed)
{
    size_t nseg, seg_len;
    conv_segments(p, &nseg, &seg_len);
    if (!nseg) {   /* grouped: the plain layout; depthwise: tap-major, [kh, kw, c] */
        const size_t bytes = (size_t)p->oc * axrt_conv2d_q8_scratch(p), taps = (size_t)p->kh * (size_t)p->kw;
        if (packed && is_depthwise(p))
            for (size_t i = 0; i < bytes; i++)
                packed[i % taps * (size_t)p->c + i / taps] = w[i];
        else if (packed)
            memcpy(packed, w, bytes);
        return bytes;
    }
    if (packed)
        axrt_q8_pack(w, (size_t)p->oc, nseg, seg_len, packed);
    return (size_t)p->oc * nseg * axrt_q8_round4(seg_len);
}

/* y[r * ldy + o] for r < mr, o < out: rows[s * mr + r] is row r's segment s. */
static void gemm_rows(const axrt_q8_gemm_ops *g, const uint8_t *const *rows, size_t mr, size_t nseg,
                      size_t seg_len, const int8_t *packed, size_t out, const axrt_requant *rq, void *y,
                      size_t ldy)
{
    int32_t acc[AXRT_Q8_MR_MAX * AXRT_Q8_NC_MAX];
    for (size_t c0 = 0; c0 < out; c0 += g->nc) {
        const size_t nc = out - c0 < g->nc ? out - c0 : g->nc;
        const axrt_q8_tile t = {rows, mr, nseg, seg_len, packed, out, c0, nc, acc, g->nc};
        g->tile(&t);
        for (size_t r = 0; r < mr; r++)
            g->finish(rq, acc + r * g->nc, c0, nc, out_at(rq, y, r * ldy + c0));
    }
}

void axrt_dense_q8_packed(const uint8_t *x, const int8_t *packed, const axrt_requant *rq, void *y, size_t rows,
                          size_t in, size_t out)
{
    const axrt_q8_gemm_ops *g = pick_gemm();
    const uint8_t *ptr[AXRT_Q8_MR_MAX];
    for (size_t r0 = 0; r0 < rows; r0 += g->mr) {
        const size_t mr = rows - r0 < g->mr ? rows - r0 : g->mr;
        for (size_t r = 0; r < mr; r++)
            ptr[r] = x + (r0 + r) * in;
        gemm_rows(g, ptr, mr, 1, in, packed, out, rq, out_at(rq, y, r0 * out), out);
    }
}

/* rows[t * mr + i] for output pixels first + i (flat n, oy, ox) and taps t:
 * the input pixel the tap reads, or zp_row outside the image. */
static void tap_rows(const uint8_t *x, const uint8_t *zp_row, const axrt_conv2d_params *p, size_t first,
                     size_t mr, const uint8_t **rows)
{
    for (size_t i = 0; i < mr; i++) {
        const size_t pix = first + i, ox = pix % (size_t)p->ow, oy = pix / (size_t)p->ow % (size_t)p->oh;
        const size_t n = pix / ((size_t)p->ow * (size_t)p->oh);
        for (int ky = 0; ky < p->kh; ky++)
            for (int kx = 0; kx < p->kw; kx++) {
                const int iy = (int)oy * p->stride_h - p->pad_top + ky * p->dilation_h;
                const int ix = (int)ox * p->stride_w - p->pad_left + kx * p->dilation_w;
                const size_t tap = (size_t)(ky * p->kw + kx);
                rows[tap * mr + i] = iy < 0 || iy >= p->h || ix < 0 || ix >= p->w ? zp_row
                    : x + ((n * (size_t)p->h + (size_t)iy) * (size_t)p->w + (size_t)ix) * (size_t)p->c;
            }
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
/* A gathered conv (a small receptive field: the first conv's 3x3x3, say) on
 * a tile of several rows: up to mr pixels' receptive fields gathered into a
 * buffer on the stack (x86 only: the portable tile has one row and gathers
 * into the caller's patch, no stack for a Cortex-M), then one tile for them
 * all. */
#define Q8_GATHER_MAX 256
static void gathered_rows(const axrt_q8_gemm_ops *g, const uint8_t *x, int32_t x_zp, const int8_t *packed,
                          const axrt_requant *rq, void *y, const axrt_conv2d_params *p, size_t seg_len)
{
    uint8_t fields[AXRT_Q8_MR_MAX][Q8_GATHER_MAX];
    const uint8_t *rows[AXRT_Q8_MR_MAX];
    const size_t pixels = (size_t)p->n * (size_t)p->oh * (size_t)p->ow, oc = (size_t)p->oc;
    for (size_t first = 0; first < pixels; first += g->mr) {
        const size_t mr = pixels - first < g->mr ? pixels - first : g->mr;
        for (size_t r = 0; r < mr; r++) {
            const size_t pix = first + r;
            const int ox = (int)(pix % (size_t)p->ow), oy = (int)(pix / (size_t)p->ow % (size_t)p->oh);
            gather_patch(x, (uint8_t)x_zp, p, (int)(pix / ((size_t)p->ow * (size_t)p->oh)), oy, ox, 0, fields[r]);
            rows[r] = fields[r];
        }
        gemm_rows(g, rows, mr, 1, seg_len, packed, oc, rq, out_at(rq, y, first * oc), oc);
    }
}
#endif

void axrt_conv2d_q8_packed(const uint8_t *x, int32_t x_zp, const int8_t *packed, const axrt_requant *rq,
                           void *y, uint8_t *patch, const axrt_conv2d_params *p)
{
    size_t nseg, seg_len;
    conv_segments(p, &nseg, &seg_len);
    if (!nseg) {
        if (is_depthwise(p))
            depthwise_q8(x, x_zp, packed, true, rq, y, p);
        else
            axrt_conv2d_q8(x, x_zp, packed, rq, y, patch, p);
        return;
    }
    const axrt_q8_gemm_ops *g = pick_gemm();
    const size_t pixels = (size_t)p->n * (size_t)p->oh * (size_t)p->ow, oc = (size_t)p->oc;
    const uint8_t *rows[Q8_TAPS_MAX * AXRT_Q8_MR_MAX];
#if defined(__x86_64__) && defined(__GNUC__) && !defined(AXRT_NO_SIMD)
    if (nseg == 1 && seg_len != (size_t)p->c && g->mr > 1 && seg_len <= Q8_GATHER_MAX) {
        gathered_rows(g, x, x_zp, packed, rq, y, p, seg_len);
        return;
    }
#endif
    if (nseg == 1 && seg_len != (size_t)p->c) {   /* gathered, one pixel at a time */
        rows[0] = patch;
        for (size_t pix = 0; pix < pixels; pix++) {
            const int ox = (int)(pix % (size_t)p->ow), oy = (int)(pix / (size_t)p->ow % (size_t)p->oh);
            gather_patch(x, (uint8_t)x_zp, p, (int)(pix / ((size_t)p->ow * (size_t)p->oh)), oy, ox, 0, patch);
            gemm_rows(g, rows, 1, 1, seg_len, packed, oc, rq, out_at(rq, y, pix * oc), oc);
        }
        return;
    }
    memset(patch, x_zp, (size_t)p->c);   /* the padding's input pixel */
    for (size_t first = 0; first < pixels; first += g->mr) {
        const size_t mr = pixels - first < g->mr ? pixels - first : g->mr;
        tap_rows(x, patch, p, first, mr, rows);
        gemm_rows(g, rows, mr, nseg, seg_len, packed, oc, rq, out_at(rq, y, first * oc), oc);
    }
}

/* ---- max-pool -------------------------------------------------------------------- */

void axrt_maxpool_u8(const uint8_t *x, uint8_t *y, const axrt_pool2d_params *p)
{
    const size_t c = (size_t)p->c;
    for (int n = 0; n < p->n; n++)
        for (int oy = 0; oy < p->oh; oy++)
            for (int ox = 0; ox < p->ow; ox++) {
                uint8_t *out = y + (((size_t)n * (size_t)p->oh + (size_t)oy) * (size_t)p->ow + (size_t)ox) * c;
                const int y0 = oy * p->stride_h - p->pad_top, x0 = ox * p->stride_w - p->pad_left;
                memset(out, 0, c);   /* the smallest int8, -128: what a window of padding only gives */
                for (int iy = y0 < 0 ? 0 : y0; iy < y0 + p->kh && iy < p->h; iy++)
                    for (int ix = x0 < 0 ? 0 : x0; ix < x0 + p->kw && ix < p->w; ix++) {
                        const uint8_t *in = x + (((size_t)n * (size_t)p->h + (size_t)iy) * (size_t)p->w + (size_t)ix) * c;
                        for (size_t k = 0; k < c; k++)
                            out[k] = in[k] > out[k] ? in[k] : out[k];
                    }
            }
}

/* ---- elementwise: add, a concat's part, ReLU (axrt.h axrt_ew_q8) ---------------- */

void axrt_add_q8(const uint8_t *a, const uint8_t *b, void *y, size_t n, const axrt_ew_q8 *p)
{
    pick_gemm()->add(a, b, y, n, p);
}

void axrt_rescale_q8(const uint8_t *x, void *y, size_t outer, size_t row, size_t ld, size_t offset,
                     const axrt_ew_q8 *p)
{
    pick_gemm()->rescale(x, y, outer, row, ld, offset, p);
}

/* ---- TFLite's LOGISTIC, TANH and SOFTMAX: tables the compiler computed ---------- */

void axrt_lookup_q8(const uint8_t *x, void *y, size_t n, const int32_t *table, const axrt_ew_q8 *p)
{
    for (size_t i = 0; i < n; i++)
        axrt_q8_ew_store(p, table[x[i]], y, i);
}

void axrt_softmax_q8(const uint8_t *x, void *y, size_t rows, size_t len, const float *exp_table,
                     const axrt_ew_q8 *p)
{
    for (size_t r = 0; r < rows; r++) {
        const uint8_t *xr = x + r * len;
        uint8_t m = 0;
        for (size_t j = 0; j < len; j++)
            m = xr[j] > m ? xr[j] : m;
        const float *e = exp_table + 255 - m;   /* e[b] = expf(-s_in beta (m - b)) */
        float sum = 0.0f;
        for (size_t j = 0; j < len; j++)
            sum += e[xr[j]];
        const float inverse = 1.0f / (sum * p->scale);
        for (size_t j = 0; j < len; j++) {
            const int64_t q = (int64_t)round_away_clamped(e[xr[j]] * inverse) + p->out_zp;
            axrt_q8_ew_store(p, axrt_q8_clamp(q, p->lo, p->hi), y, r * len + j);
        }
    }
}

/* ---- mean pooling and mean ------------------------------------------------------- */

void axrt_mean_q8(const uint8_t *x, void *y, size_t outer, size_t axis, size_t inner, const axrt_ew_q8 *p)
{
    int32_t sum[Q8_DW_BLOCK];
    const int32_t centre = (int32_t)axis * (128 + p->zp[0]);   /* axis times the zero point's byte */
    for (size_t b = 0; b < outer; b++)
        for (size_t c0 = 0; c0 < inner; c0 += Q8_DW_BLOCK) {
            const size_t nc = inner - c0 < Q8_DW_BLOCK ? inner - c0 : Q8_DW_BLOCK;
            const uint8_t *xb = x + b * axis * inner + c0;
            memset(sum, 0, sizeof sum);
            for (size_t i = 0; i < axis; i++)
                for (size_t k = 0; k < nc; k++)
                    sum[k] += xb[i * inner + k];
            for (size_t k = 0; k < nc; k++) {
                const int32_t r = axrt_q8_requantize_as(p->flags, sum[k] - centre, p->mult[0], p->shift[0]);
                axrt_q8_ew_store(p, axrt_q8_clamp((int64_t)p->out_zp + r, p->lo, p->hi), y, b * inner + c0 + k);
            }
        }
}

/* The rows (or columns) a window starting at y0 covers for the divisor: the
 * float kernels' axrt_meanpool_counted rule along one axis. */
static int window_span(int y0, int k, int size, int div_pad_after, int count_pad)
{
    const int lim = count_pad ? size + div_pad_after : size;
    const int start = count_pad || y0 > 0 ? y0 : 0;
    const int end = y0 + k < lim ? y0 + k : lim;
    return end - start;
}

int axrt_meanpool_divisor(const axrt_pool2d_params *p, int oy, int ox, int div_pad_bottom, int div_pad_right,
                          int count_pad)
{
    return window_span(oy * p->stride_h - p->pad_top, p->kh, p->h, div_pad_bottom, count_pad) *
           window_span(ox * p->stride_w - p->pad_left, p->kw, p->w, div_pad_right, count_pad);
}

/* A windowed mean's result q from the sum of its read bytes (q + 128):
 * out_zp + axrt_requantize(S, rescale), S the sum of (q - zp) (the
 * padding's values are the zero point's: 0); or, AXRT_Q8_TFLITE (input and
 * output parameters equal), TFLite's integer AveragePool: the sum of the
 * read q divided by their count, rounded half away from zero. */
static int32_t meanpool_result(const axrt_ew_q8 *e, int32_t bytes, int32_t read, const int32_t *rescale)
{
    if (e->flags & AXRT_Q8_TFLITE) {
        const int32_t acc = bytes - read * 128;
        const int32_t q = read == 0 ? 0 : acc > 0 ? (acc + read / 2) / read : (acc - read / 2) / read;
        return axrt_q8_clamp(q, e->lo, e->hi);
    }
    const int32_t r = axrt_q8_requantize(bytes - read * (128 + e->zp[0]), rescale[0], rescale[1]);
    return axrt_q8_clamp((int64_t)e->out_zp + r, e->lo, e->hi);
}

void axrt_meanpool_q8(const uint8_t *x, void *y, const axrt_pool2d_params *p, const int32_t *window,
                      const axrt_ew_q8 *e)
{
    const size_t c = (size_t)p->c;
    int32_t sum[Q8_DW_BLOCK];
    size_t at = 0;
    for (int n = 0; n < p->n; n++)
        for (int oy = 0; oy < p->oh; oy++)
            for (int ox = 0; ox < p->ow; ox++, at += c) {
                const int y0 = oy * p->stride_h - p->pad_top, x0 = ox * p->stride_w - p->pad_left;
                const int ys = y0 < 0 ? 0 : y0, xs = x0 < 0 ? 0 : x0;
                const int ye = y0 + p->kh < p->h ? y0 + p->kh : p->h, xe = x0 + p->kw < p->w ? x0 + p->kw : p->w;
                const int32_t read = (ye > ys ? ye - ys : 0) * (xe > xs ? xe - xs : 0);
                const int32_t d = axrt_meanpool_divisor(p, oy, ox, window[0], window[1], window[2]);
                const int32_t *rescale = window + 5 + 2 * (d - window[3]);
                for (size_t c0 = 0; c0 < c; c0 += Q8_DW_BLOCK) {
                    const size_t nc = c - c0 < Q8_DW_BLOCK ? c - c0 : Q8_DW_BLOCK;
                    memset(sum, 0, sizeof sum);
                    for (int iy = ys; iy < ye; iy++)
                        for (int ix = xs; ix < xe; ix++) {
                            const uint8_t *in = x + (((size_t)n * (size_t)p->h + (size_t)iy) * (size_t)p->w +
                                                     (size_t)ix) * c + c0;
                            for (size_t k = 0; k < nc; k++)
                                sum[k] += in[k];
                        }
                    for (size_t k = 0; k < nc; k++)
                        axrt_q8_ew_store(e, meanpool_result(e, sum[k], read, rescale), y, at + c0 + k);
                }
            }
}

/* ---- broadcasting add, byte gather ------------------------------------------------ */

/* Element i of an elementwise kernel's output y (float, or q + 128 when AXRT_Q8_OUT_BYTES). */
static void *ew_out_at(const axrt_ew_q8 *p, void *y, size_t i)
{
    return (unsigned char *)y + i * ((p->flags & AXRT_Q8_OUT_BYTES) ? 1 : sizeof(float));
}

/* One row of a broadcasting add: len elements, a and b strides sa and sb
 * (0: broadcast), through the byte tables ta, tb (NULL: computed). */
static void add_row(const uint8_t *a, ptrdiff_t sa, const uint8_t *b, ptrdiff_t sb, void *y, size_t len,
                    const axrt_ew_q8 *p, const int32_t *ta, const int32_t *tb)
{
    for (size_t j = 0; j < len; j++)
        axrt_q8_ew_store(p, axrt_q8_ew_binary(p, a[(ptrdiff_t)j * sa], b[(ptrdiff_t)j * sb], ta, tb), y, j);
}

void axrt_add_bcast_q8(const uint8_t *a, const int64_t *a_strides, const uint8_t *b, const int64_t *b_strides,
                       void *y, const int64_t *shape, int rank, const axrt_ew_q8 *p)
{
    const axrt_q8_gemm_ops *g = pick_gemm();
    int64_t index[AXRT_MAX_RANK] = {0}, oa = 0, ob = 0, total = 1;
    const size_t len = rank > 0 ? (size_t)shape[rank - 1] : 1;
    const ptrdiff_t sa = rank > 0 ? (ptrdiff_t)a_strides[rank - 1] : 0, sb = rank > 0 ? (ptrdiff_t)b_strides[rank - 1] : 0;
    int32_t ta[256], tb[256];
    for (int d = 0; d < rank; d++) total *= shape[d];
    const bool rows = sa == 1 && sb == 1, table = !rows && total >= AXRT_Q8_EW_TABLE_MIN && !(p->flags & AXRT_Q8_MUL);
    if (table) {
        axrt_q8_ew_table(p, 0, ta);
        axrt_q8_ew_table(p, 1, tb);
    }
    for (size_t at = 0;; at += len) {
        if (rows)   /* both contiguous along the last dim: the instruction set's add */
            g->add(a + oa, b + ob, ew_out_at(p, y, at), len, p);
        else
            add_row(a + oa, sa, b + ob, sb, ew_out_at(p, y, at), len, p, table ? ta : NULL, table ? tb : NULL);
        int d = rank - 2;
        for (; d >= 0; d--) {
            oa += a_strides[d];
            ob += b_strides[d];
            if (++index[d] < shape[d]) break;
            oa -= a_strides[d] * shape[d];
            ob -= b_strides[d] * shape[d];
            index[d] = 0;
        }
        if (d < 0) return;
    }
}

void axrt_gather_u8(const uint8_t *x, uint8_t *y, const int64_t *y_shape, const int64_t *strides, int64_t offset,
                    int rank)
{
    int64_t index[AXRT_MAX_RANK] = {0};
    if (rank == 0) {
        y[0] = x[offset];
        return;
    }
    for (;;) {
        for (int64_t j = 0; j < y_shape[rank - 1]; j++) *y++ = x[offset + j * strides[rank - 1]];
        int d = rank - 2;
        for (; d >= 0; d--) {
            offset += strides[d];
            if (++index[d] < y_shape[d]) break;
            offset -= strides[d] * y_shape[d];
            index[d] = 0;
        }
        if (d < 0) return;
    }
}
